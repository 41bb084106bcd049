// expect: 42
console.log('starting');
const answer = 6 * 7;
console.log(`answer is ${answer}`);
answer
