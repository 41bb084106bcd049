// expect: ["a","b",2]
const pair = ['a', 'b'] as const;
type P = typeof pair[number];
const [x, y]: readonly [string, string] = pair;
[x, y, pair.length]
