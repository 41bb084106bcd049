// expect: [3,"v1"]
class Registry {
  static items = [];
  static version = 'v1';
  static add(x) { Registry.items.push(x); return this; }
}
Registry.add(1).add(2).add(3);
[Registry.items.length, Registry.version]
