// expect: ["x",3,[2,3]]
const { a: { b: [first, ...others] }, c = 'x' } = { a: { b: [1, 2, 3] } };
[c, first + 2, others]
