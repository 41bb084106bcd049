// expect: {"found":3,"idx":1,"inc":true,"flat":[1,2,3,4],"fm":[1,1,2,2]}
const a = [1, 3, 5];
({ found: a.find(x => x > 1), idx: a.findIndex(x => x === 3), inc: a.includes(5), flat: [[1, 2], [3, [4]]].flat(2), fm: [1, 2].flatMap(x => [x, x]) })
