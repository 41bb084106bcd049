// expect: "secret"
const priv = new WeakMap();
class Box { constructor(v) { priv.set(this, v); } get() { return priv.get(this); } }
new Box('secret').get()
