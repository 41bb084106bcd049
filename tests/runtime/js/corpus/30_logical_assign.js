// expect: [5,"set",0]
let a = null; a ??= 5;
let b = ''; b ||= 'set';
let c = 1; c &&= 0;
[a, b, c]
