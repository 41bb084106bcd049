// bench.mjs: the SVG of `toolstream bench --svg` opened in a real browser (Debian's
// chromium, driven by playwright-core): one timeline row per tool call (counted against the
// calls of the same run's --json), every row with its marks in order on the time axis, the
// lead's distribution drawn with its p50 and p90; a screenshot in BINARY_DIR (bench-svg.png).
// Fails when /usr/bin/chromium is missing (scripts/install-deps.sh installs it).
// Usage: node tests/ui/bench.mjs BINARY_DIR
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { check, failures, makeSession, tmp } from './common.mjs';

const bin = process.argv[2];
const exe = '/usr/bin/chromium';
if (!existsSync(exe)) {
  console.error('FAIL bench SVG test: /usr/bin/chromium is not installed (scripts/install-deps.sh)');
  process.exit(1);
}
const src = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = tmp('ts-bench-svg-');
// recordings: a write_file call with its label first (turn-1), a text reply (turn-2), and a
// real capture with two parallel calls
makeSession(join(dir, 'rec'), 20);
copyFileSync(join(src, 'tests/corpus/openai-chat-two-parallel-calls.sse'), join(dir, 'rec', 'turn-3.sse'));
writeFileSync(join(dir, 'tools.json'), JSON.stringify([
  { name: 'write_file', progressArgument: 'description' },
  { name: 'create_ticket', progressArgument: 'description' }]));
const svg = join(dir, 'bench.svg');
const r = spawnSync(join(bin, 'toolstream'), ['bench', '--replay', join(dir, 'rec'), '--pace', '400', '--runs', '2',
  '--tools', join(dir, 'tools.json'), '--svg', svg, '--json', join(dir, 'bench.json'), '--quiet'], { encoding: 'utf8' });
check(r.status === 0, 'toolstream bench --svg ran', r.stderr);
const result = JSON.parse(readFileSync(join(dir, 'bench.json'), 'utf8'));
const calls = result.requests.reduce((n, q) => n + q.calls.length, 0);
check(calls === 6, 'the run measured 6 calls (3 per run)', calls);
const labelled = result.requests.reduce((n, q) => n + q.calls.filter((c) => c.has_label).length, 0);

const browser = await chromium.launch({
  executablePath: exe,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
  await page.goto('file://' + svg);
  const rows = await page.locator('g.call').count();
  check(rows === calls, 'one timeline row per call', `${rows} rows, ${calls} calls`);
  const ids = await page.locator('g.call').evaluateAll((gs) => gs.map((g) => g.dataset.call));
  const want = result.requests.flatMap((q) => q.calls.map((c) => c.call_id));
  check(JSON.stringify(ids) === JSON.stringify(want), 'rows in request order, named by call id', ids.join(' '));
  // every row: its marks in time order left to right, the arguments after the label
  const order = await page.locator('g.call').evaluateAll((gs) => gs.map((g) => {
    const at = {};
    for (const c of g.querySelectorAll('circle.mark')) at[c.dataset.mark] = c.getBoundingClientRect().x;
    return at;
  }));
  check(order.every((m) => 'sent' in m && 'arguments complete' in m && m.sent <= m['arguments complete']),
    'every row has its send and complete-arguments marks in order', JSON.stringify(order[0]));
  check(order.filter((m) => 'label' in m).length === labelled, 'a label mark for each labelled call', labelled);
  check(order.every((m) => !('label' in m) || m.label <= m['arguments complete']), 'labels come before the arguments');
  const visible = await page.locator('g.call').first().isVisible();
  check(visible, 'the rows are drawn');
  const bins = await page.locator('g.lead-distribution rect.bin').count();
  check(bins === 20, 'the lead distribution has its 20 bins', bins);
  check(await page.locator('g.lead-distribution line.p50').count() === 1 &&
    await page.locator('g.lead-distribution line.p90').count() === 1, 'p50 and p90 are marked');
  const tip = await page.locator('g.call circle.mark title').first().textContent();
  check(/ at [0-9.]+ ms$/.test(tip), 'marks carry a tooltip with their time', tip);
  await page.screenshot({ path: join(bin, 'bench-svg.png'), timeout: 120000 });
} catch (e) {
  check(false, 'the SVG test ran to its end', e.stack);
} finally {
  await browser.close();
}
if (failures) {
  console.error(`${failures} check(s) failed`);
  process.exit(1);
}
console.log('all bench SVG checks passed');
