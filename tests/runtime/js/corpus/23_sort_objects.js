// expect: ["bob","carol","alice"]
const people = [{ n: 'alice', age: 40 }, { n: 'bob', age: 25 }, { n: 'carol', age: 31 }];
[...people].sort((a, b) => a.age - b.age).map(p => p.n)
