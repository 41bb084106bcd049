// expect: {"A":1,"B":2}
const o = { a: 1, b: 2 };
Object.fromEntries(Object.entries(o).map(([k, v]) => [k.toUpperCase(), v]))
