// expect: ["Rex barks","Animal"]
class Animal {
  constructor(name) { this.name = name; }
  speak() { return `${this.name} makes a sound`; }
  static kind() { return 'Animal'; }
}
class Dog extends Animal {
  speak() { return `${this.name} barks`; }
}
[new Dog('Rex').speak(), Dog.kind()]
