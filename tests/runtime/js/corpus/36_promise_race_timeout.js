// expect: "fast"
const timeout = (ms, v) => new Promise(r => setTimeout(() => r(v), ms));
await Promise.race([timeout(50, 'slow'), timeout(5, 'fast')])
