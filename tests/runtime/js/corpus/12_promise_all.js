// expect: [2,4,6]
const double = async (x) => x * 2;
await Promise.all([1, 2, 3].map(double))
