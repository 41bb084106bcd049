// expect: 15
const nums = [1, 2, 3, 4, 5];
nums.reduce((a, b) => a + b, 0)
