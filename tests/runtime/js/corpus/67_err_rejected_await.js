// expect-error: Error: rejected on purpose
const p = new Promise((_, reject) => setTimeout(() => reject(new Error("rejected on purpose")), 1));
await p;
