// expect: [true,1,2]
const orig = { a: { n: 1 }, list: [1, 2] };
const copy = structuredClone(orig);
copy.a.n = 99;
[copy !== orig, orig.a.n, copy.list.length]
