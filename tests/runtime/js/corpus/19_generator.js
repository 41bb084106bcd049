// expect: [1,2,3,5,8]
function* fib() { let [a, b] = [1, 2]; while (true) { yield a; [a, b] = [b, a + b]; } }
const out = [];
for (const v of fib()) { if (out.length === 5) break; out.push(v); }
out
