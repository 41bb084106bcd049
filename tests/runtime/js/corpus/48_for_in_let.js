// expect: ["a","b"]
const keys = [];
for (const k in { a: 1, b: 2 }) keys.push(k);
keys
