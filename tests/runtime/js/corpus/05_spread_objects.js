// expect: {"a":1,"b":3,"c":4}
const base = { a: 1, b: 2 };
const next = { ...base, b: 3, c: 4 };
next
