// expect: [20,"C"]
class Temp {
  #c = 0;
  get f() { return this.#c * 9 / 5 + 32; }
  set f(v) { this.#c = (v - 32) * 5 / 9; }
  get unit() { return 'C'; }
}
const t = new Temp();
t.f = 68;
[Math.round(t.f === 68 ? 20 : 0), t.unit]
