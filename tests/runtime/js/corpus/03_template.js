// expect: "Hello, Ada! You are 36."
const user = { name: 'Ada', age: 36 };
`Hello, ${user.name}! You are ${user.age}.`
