// expect: [1,2,3]
const order = [];
const work = async (n) => { await new Promise(r => setTimeout(r, 3 - n)); order.push(n); };
for (const n of [1, 2, 3]) await work(n);
order
