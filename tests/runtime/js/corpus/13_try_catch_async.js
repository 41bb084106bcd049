// expect: "caught: boom"
async function fails() { throw new Error('boom'); }
let msg;
try { await fails(); } catch (e) { msg = `caught: ${e.message}`; }
msg
