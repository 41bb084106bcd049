// expect: [3,"calc"]
const x = 1, y = 2;
const calc = { x, y, sum() { return this.x + this.y; }, get label() { return 'calc'; } };
[calc.sum(), calc.label]
