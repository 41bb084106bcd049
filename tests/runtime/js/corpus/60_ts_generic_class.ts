// expect: [3,2]
class Stack<T> {
  private items: T[] = [];
  push(x: T): void { this.items.push(x); }
  pop(): T | undefined { return this.items.pop(); }
  get size(): number { return this.items.length; }
}
const s = new Stack<number>();
[1, 2, 3].forEach(n => s.push(n));
const top = s.pop();
[top, s.size]
