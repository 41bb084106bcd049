// expect: [3,"c"]
function last<T>(xs: T[]): T | undefined { return xs[xs.length - 1]; }
const n = last<number>([1, 2, 3]);
const s = last(['a', 'b', 'c']);
[n, s]
