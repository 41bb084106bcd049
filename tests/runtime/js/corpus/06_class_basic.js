// expect: "Point(1, 2)"
class Point {
  constructor(x, y) { this.x = x; this.y = y; }
  toString() { return `Point(${this.x}, ${this.y})`; }
}
String(new Point(1, 2))
