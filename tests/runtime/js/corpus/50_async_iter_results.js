// expect: {"ok":2,"failed":1}
const jobs = [1, 2, 3].map(async (n) => { if (n === 2) throw new Error('x'); return n; });
const settled = await Promise.allSettled(jobs);
({ ok: settled.filter(s => s.status === 'fulfilled').length, failed: settled.filter(s => s.status === 'rejected').length })
