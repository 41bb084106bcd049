// expect: [6,"HI"]
type Op = (a: number, b: number) => number;
const mul: Op = (a, b) => a * b;
const shout = (s: string): string => s.toUpperCase();
[mul(2, 3), shout('hi')]
