// page.mjs: the live page in a real browser (Debian's chromium, driven by playwright-core).
//   - a paced replay: the label is on the page before the call's last argument byte has
//     been sent (the run printed tool_call_ready later than the page showed the label);
//   - the endpoint is killed and restarted mid-stream: the page (EventSource, resuming
//     with Last-Event-ID) ends with every event exactly once, in order;
//   - the result and the lead are shown; keyboard focus reaches the calls; an aria-live
//     region announces them; at 360 px nothing scrolls sideways;
//   - screenshots in BINARY_DIR (ui-page.png, ui-page-360.png).
// Skips, saying so, only when /usr/bin/chromium is missing (scripts/install-deps.sh
// installs it). Usage: node tests/ui/page.mjs BINARY_DIR
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { check, failures, makeSession, serve, tmp } from './common.mjs';

const bin = process.argv[2];
const exe = '/usr/bin/chromium';
if (!existsSync(exe)) {
  console.log('SKIP page tests: /usr/bin/chromium is not installed (apt-get install chromium)');
  process.exit(0);
}
const dir = tmp('ts-page-');
makeSession(join(dir, 'session'), 160);
let srv = await serve(bin, dir);
const port = Number(srv.url.split(':').at(-1));
const browser = await chromium.launch({
  executablePath: exe,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let run;
try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
  await page.goto(`${srv.url}/?thread=ui2`);
  await page.waitForFunction(() => document.getElementById('status').textContent === 'Live.', null, { timeout: 60000 });

  // The run starts only once the page listens, so the label has to beat the arguments' end
  // on its own merit: the content streams for several seconds after the label.
  const seen = {};
  const events = [];
  run = spawn(join(bin, 'toolstream'), ['run', '--model-replay', join(dir, 'session'), '--workspace', join(dir, 'ws'),
    '--data-dir', join(dir, 'data'), '--thread', 'ui2', '--rate', '25', '--json'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let buf = '';
  run.stdout.setEncoding('utf8');
  run.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!line.startsWith('{')) continue;
      const ev = JSON.parse(line);
      if (!ev.seq) continue;
      events.push(ev);
      if (!(ev.type in seen)) seen[ev.type] = Date.now();
    }
  });
  const runDone = new Promise((resolve) => run.on('exit', resolve));
  await page.waitForSelector('.call .label:has-text("writing index.html")', { timeout: 120000 });
  const labelAt = Date.now();
  check(!('tool_call_ready' in seen) || seen.tool_call_ready > labelAt,
    'the label is on the page before the last argument byte was sent',
    `label at ${labelAt}, ready at ${seen.tool_call_ready}`);
  check((await page.locator('.call .spinner').count()) === 1, 'a spinner turns for the streaming call');

  // Kill the endpoint mid-stream (the call is still streaming) and start it again.
  srv.child.kill('SIGKILL');
  await new Promise((r) => srv.child.on('exit', r));
  check(!('tool_call_ready' in seen), 'the endpoint was killed while the call was still streaming');
  for (let tries = 0; ; tries++) {
    try {
      srv = await serve(bin, dir, [], port);
      break;
    } catch (e) {
      if (tries > 50) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const code = await runDone;
  check(code === 0, 'the run finished', code);
  const last = events.at(-1).seq;
  await page.waitForFunction((n) => window.__toolstream.events.length >= n, last, { timeout: 60000 });
  const got = await page.evaluate(() => window.__toolstream.events.map((e) => e.seq));
  check(got.length === last && got.every((s, i) => s === i + 1), 'after the restart the page has every event once, in order',
    got.join(','));
  const shown = await page.evaluate(() => window.__toolstream.events);
  check(JSON.stringify(shown) === JSON.stringify(events), 'the page received the same events run printed');

  await page.waitForSelector('.call[data-state="done"]', { timeout: 120000 });
  const meta = await page.locator('.call .meta').first().textContent();
  check(/label .* before the arguments/.test(meta) && /ran /.test(meta), 'the lead and the duration are shown', meta);
  check((await page.locator('.call .result').first().textContent()).includes('index.html'), 'the result is shown');
  check((await page.locator('[aria-live]').count()) === 1, 'an aria-live region announces calls');
  let focused = '';
  for (let i = 0; i < 8 && focused !== 'SUMMARY'; i++) {
    await page.keyboard.press('Tab');
    focused = await page.evaluate(() => document.activeElement.tagName);
  }
  check(focused === 'SUMMARY', 'the keyboard reaches a call', focused);
  await page.keyboard.press('Enter');
  check(await page.locator('details.call[open]').count() === 1, 'Enter opens the call');
  await page.screenshot({ path: join(bin, 'ui-page.png'), fullPage: true });
  await page.setViewportSize({ width: 360, height: 740 });
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  check(wide <= 360, 'readable at 360 px (no sideways scroll)', wide);
  await page.screenshot({ path: join(bin, 'ui-page-360.png'), fullPage: true });
  const reduced = await browser.newPage({ reducedMotion: 'reduce' });
  await reduced.goto(`${srv.url}/?thread=ui2`);
  await reduced.waitForSelector('.call');
  const anim = await reduced.evaluate(() => getComputedStyle(document.querySelector('.spinner')).animationName);
  check(anim === 'none', 'prefers-reduced-motion stops the spinner', anim);
} catch (e) {
  check(false, 'the page test ran to its end', e.stack);
} finally {
  if (run && run.exitCode === null) run.kill();
  srv.child.kill();
  await browser.close();
}
if (failures) {
  console.error(`${failures} check(s) failed`);
  process.exit(1);
}
console.log('all page checks passed');
