// common.mjs: what the UI tests share: a recorded session made on the fly (a write_file
// call whose progress argument comes first and whose content streams in many small
// deltas, then a text turn), `toolstream run` over it, and `toolstream serve` on the
// store it wrote.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export let failures = 0;
export function check(ok, what, detail) {
  if (ok) console.log(`ok   ${what}`);
  else {
    console.error(`FAIL ${what}${detail !== undefined ? ': ' + detail : ''}`);
    failures++;
  }
}

function chunk(delta, finish) {
  return 'data: ' + JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish ?? null }] }) + '\n\n';
}

// turn-1: write_file {"description": ..., "path": ..., "content": <pieces>}; turn-2: text.
export function makeSession(dir, pieces = 60) {
  mkdirSync(dir, { recursive: true });
  const content = Array.from({ length: pieces }, (_, i) => `line ${i} of the page\n`).join('');
  const args = JSON.stringify({ description: 'writing index.html', path: 'index.html', content });
  let t1 = chunk({ role: 'assistant', content: 'Writing it now.' });
  const first = args.indexOf('"content"');
  const parts = [args.slice(0, first)];
  for (let i = first; i < args.length; i += 24) parts.push(args.slice(i, i + 24));
  parts.forEach((p, i) => {
    const call = { index: 0, function: { arguments: p } };
    if (i === 0) Object.assign(call, { id: 'call_ui_1', type: 'function', function: { name: 'write_file', arguments: p } });
    t1 += chunk({ tool_calls: [call] });
  });
  t1 += chunk({}, 'tool_calls') + 'data: [DONE]\n\n';
  writeFileSync(join(dir, 'turn-1.sse'), t1);
  writeFileSync(join(dir, 'turn-2.sse'), chunk({ content: 'Done: index.html is written.' }) + chunk({}, 'stop') + 'data: [DONE]\n\n');
  return { args, parts: parts.length };
}

// A fresh directory, removed when the process exits (pass or fail; TS_KEEP_TMP=1 keeps
// it to look at after a failure).
export function tmp(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (!process.env.TS_KEEP_TMP) process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// Runs a whole thread; returns its events (the JSON lines `run --json` prints).
export function runThread(bin, dir, thread, rate = 5000) {
  const r = spawnSync(join(bin, 'toolstream'), ['run', '--model-replay', join(dir, 'session'), '--workspace',
    join(dir, 'ws'), '--data-dir', join(dir, 'data'), '--thread', thread, '--rate', String(rate), '--json'],
    { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`toolstream run exited ${r.status}: ${r.stderr}`);
  return r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((e) => e.seq);
}

// Starts `toolstream serve` on the store; resolves with {child, url} once it listens.
export function serve(bin, dir, extra = [], port = 0) {
  const child = spawn(join(bin, 'toolstream'), ['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', join(dir, 'data'), ...extra],
    { stdio: ['ignore', 'inherit', 'pipe'] });
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/http:\/\/127\.0\.0\.1:(\d+)\//);
      if (m) resolve({ child, url: `http://127.0.0.1:${m[1]}` });
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

// Parses a text/event-stream body into [{id, data}] (data lines joined with \n).
export function parseSSE(text) {
  const out = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let id = null;
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith('id:')) id = line.slice(3).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length) out.push({ id, data: data.join('\n') });
  }
  return out;
}
