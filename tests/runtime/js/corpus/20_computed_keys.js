// expect: {"key_1":1,"key_2":2}
const obj = {};
for (const i of [1, 2]) Object.assign(obj, { [`key_${i}`]: i });
obj
