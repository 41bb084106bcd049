// expect: ["meow",2]
abstract class Pet {
  abstract sound(): string;
  legs(): number { return 4; }
}
class Cat extends Pet { sound() { return 'meow'; } }
class Bird extends Pet { sound() { return 'tweet'; } legs() { return 2; } }
[new Cat().sound(), new Bird().legs()]
