// expect: [1,2,3]
class Acc {
  constructor() { this.items = []; }
  addAll(xs) { xs.forEach(x => this.items.push(x)); return this.items; }
}
new Acc().addAll([1, 2, 3])
