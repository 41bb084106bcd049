// expect: ["sync","micro","timeout"]
const log = [];
setTimeout(() => log.push('timeout'), 0);
queueMicrotask(() => log.push('micro'));
log.push('sync');
await new Promise(r => setTimeout(r, 5));
log
