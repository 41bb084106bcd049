// expect: "recovered"
let r;
try { JSON.parse('{bad'); } catch { r = 'recovered'; }
r
