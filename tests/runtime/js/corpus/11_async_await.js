// expect: "done after 2 steps"
const step = (n) => new Promise(r => setTimeout(() => r(n), 1));
async function run() {
  const a = await step(1);
  const b = await step(a + 1);
  return `done after ${b} steps`;
}
await run()
