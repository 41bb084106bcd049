// expect: ["a","b"]
type Scores = Record<'a' | 'b', number>;
const scores: Scores = { a: 1, b: 2 };
const keys = Object.keys(scores) as (keyof Scores)[];
keys
