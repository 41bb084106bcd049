// expect: [0,"",false,"dflt"]
const vals = [0, '', false, null];
vals.map(v => v ?? 'dflt')
