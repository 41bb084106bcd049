// run.mjs: the official SDKs through `toolstream gateway`, as a user runs them.
//
// Starts tests/model_server (the provider) and the gateway in front of it, plus
// `toolstream sub` on the gateway's bus; then, for OpenAI Chat Completions, OpenAI
// Responses and Anthropic Messages, streams one reply with tools twice: directly from
// the model server, and through the gateway (only baseURL differs). Checks:
//   - each SDK gets exactly the same stream events and the same final result both ways;
//   - the subscriber sees tool_call_started with the right progress label (named by
//     "x-progress-argument" in the request's own tool schema), stamped by the gateway
//     (its mono_us, CLOCK_MONOTONIC) before the SDK's stream delivered the call's last
//     argument fragment (read on the same clock here). The event's own stamp, not the
//     moment the subscriber's line reached us: a loaded machine delays that line, not
//     the gateway's decision;
//   - the provider never sees "x-progress-argument" in what the gateway forwarded.
// Usage: node tests/sdk/run.mjs BINARY_DIR   (npm ci first; see CMakeLists.txt)
// Exit status 0 when every check passed; 1 otherwise, with the reasons on stderr.
import { spawn } from 'node:child_process';
import { mkdtempSync, copyFileSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const here = dirname(fileURLToPath(import.meta.url));
const corpus = join(here, '..', 'corpus');
const bin = process.argv[2];
if (!bin) {
  console.error('usage: node run.mjs BINARY_DIR');
  process.exit(2);
}

let failures = 0;
function check(ok, what) {
  if (ok) {
    console.log(`ok   ${what}`);
  } else {
    console.error(`FAIL ${what}`);
    failures++;
  }
}

// Spawns a program and resolves with its first stdout line; later lines go to onLine.
function start(cmd, args, onLine) {
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let buf = '';
    let first = null;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (first === null) {
          first = line;
          resolve({ child, first });
          if (onLine) onLine(line);
        } else if (onLine) {
          onLine(line);
        }
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (first === null) reject(new Error(`${cmd} exited ${code} before printing`));
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'ts-gw-sdk-'));
// The model server serves its files in order, one per request: each reply twice
// (directly, then through the gateway).
const plan = [
  'openai-chat-two-parallel-calls.sse',
  'openai-responses-one-call.sse',
  'anthropic-text-then-tool.sse',
];
let n = 1;
for (const f of plan) for (let k = 0; k < 2; k++) copyFileSync(join(corpus, f), join(dir, `${n++}.sse`));

const ms = await start(join(bin, 'model_server'), [dir]);
const direct = `http://127.0.0.1:${ms.first.trim()}`;
const id = `${process.pid}-${Date.now()}`;
const pubUrl = `ipc:///tmp/ts-gw-sdk-${id}.bus`;
const repUrl = `ipc:///tmp/ts-gw-sdk-${id}.rep`;
const gw = await start(join(bin, 'toolstream'), [
  'gateway', '--listen', '127.0.0.1:0', '--upstream', direct, '--pub', pubUrl, '--replay', repUrl,
]);
const gateway = gw.first.trim();

// Now on CLOCK_MONOTONIC in microseconds: libuv's hrtime is that clock, the one the
// events' mono_us stamps are on (docs/events.md), so the two compare across processes.
const monoUs = () => Number(process.hrtime.bigint() / 1000n);

// Every event the subscriber prints. It reads the replay history first (sub's default),
// so an event published before its dial completes still arrives: no wait for the dial.
const seen = [];
const subProc = spawn(join(bin, 'toolstream'), ['sub', pubUrl, '--replay', repUrl, '--json', '--wait'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
{
  let buf = '';
  subProc.stdout.setEncoding('utf8');
  subProc.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        seen.push({ ev: JSON.parse(line) });
      } catch {
        /* not JSON: ignore */
      }
    }
  });
}
// Paced like a model: 16 bytes every 10 ms (model_server query options).
const pace = { slow: '10', chunk: '16' };
const schema = (extra) => ({
  type: 'object',
  'x-progress-argument': 'description',
  properties: { description: { type: 'string' }, ...extra },
  required: ['description'],
});

function startedOf(thread, index) {
  return seen.find(
    (s) => s.ev.thread === thread && s.ev.type === 'tool_call_started' && s.ev.index === index,
  );
}

// Polls for the event; the deadline is only a backstop for a subscriber that hangs.
async function waitStarted(thread, index, ms = 120000) {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const s = startedOf(thread, index);
    if (s) return s;
    await new Promise((r) => setTimeout(r, 10));
  }
  return undefined;
}

// ---- OpenAI Chat Completions ----------------------------------------------------------
async function chat(baseURL, thread) {
  const client = new OpenAI({
    apiKey: 'sk-test', baseURL: `${baseURL}/v1`, defaultQuery: pace, maxRetries: 0,
    defaultHeaders: { 'X-Toolstream-Thread': thread },
  });
  const stream = client.chat.completions.stream({
    model: 'gpt-test',
    messages: [{ role: 'user', content: 'file two tickets' }],
    tools: [
      { type: 'function', function: { name: 'create_ticket', parameters: schema({}) } },
      { type: 'function', function: { name: 'notify_team', parameters: schema({}) } },
    ],
  });
  const chunks = [];
  let lastArg0 = 0;
  for await (const c of stream) {
    chunks.push(c);
    for (const ch of c.choices ?? [])
      for (const tc of ch.delta?.tool_calls ?? [])
        if (tc.index === 0 && tc.function?.arguments) lastArg0 = monoUs();
  }
  return { chunks, final: await stream.finalChatCompletion(), lastArg0 };
}

// ---- OpenAI Responses -------------------------------------------------------------------
async function responses(baseURL, thread) {
  const client = new OpenAI({
    apiKey: 'sk-test', baseURL: `${baseURL}/v1`, defaultQuery: pace, maxRetries: 0,
    defaultHeaders: { 'X-Toolstream-Thread': thread },
  });
  const stream = await client.responses.create({
    model: 'gpt-test',
    input: 'write a note',
    stream: true,
    tools: [{ type: 'function', name: 'write_note', parameters: schema({ body: { type: 'string' } }), strict: false }],
  });
  const events = [];
  let lastArg0 = 0;
  for await (const e of stream) {
    events.push(e);
    if (e.type === 'response.function_call_arguments.delta') lastArg0 = monoUs();
  }
  return { chunks: events, final: events.at(-1), lastArg0 };
}

// ---- Anthropic Messages -----------------------------------------------------------------
async function messages(baseURL, thread) {
  const client = new Anthropic({
    apiKey: 'sk-ant-test', baseURL, defaultQuery: pace, maxRetries: 0,
    defaultHeaders: { 'X-Toolstream-Thread': thread },
  });
  const stream = client.messages.stream({
    model: 'claude-test',
    max_tokens: 1024,
    messages: [{ role: 'user', content: 'forecast' }],
    tools: [{ name: 'get_forecast', input_schema: schema({ city: { type: 'string' } }) }],
  });
  const events = [];
  let lastArg0 = 0;
  for await (const e of stream) {
    events.push(e);
    if (e.type === 'content_block_delta' && e.delta?.type === 'input_json_delta') lastArg0 = monoUs();
  }
  return { chunks: events, final: await stream.finalMessage(), lastArg0 };
}

const cases = [
  ['openai chat.completions', chat, 'Café counter unit drips when "steam" is on'],
  ['openai responses', responses, 'Menu for Café "Le Nord" — weekend'],
  ['anthropic messages', messages, 'Café terrace forecast for "brunch" hours'],
];

try {
  let k = 0;
  for (const [name, run, label] of cases) {
    k++;
    const thread = `th_sdk_${id.replace(/-/g, '_')}_${k}`;
    const a = await run(direct, `th_direct_${k}`);
    const b = await run(gateway, thread);
    check(a.chunks.length > 0, `${name}: the SDK streamed ${a.chunks.length} events directly`);
    check(isDeepStrictEqual(a.chunks, b.chunks), `${name}: same stream events through the gateway`);
    check(isDeepStrictEqual(a.final, b.final), `${name}: same final result through the gateway`);
    const s = await waitStarted(thread, 0);
    check(s !== undefined, `${name}: tool_call_started on the bus`);
    if (s) {
      check(s.ev.progress === label, `${name}: progress label ${JSON.stringify(s.ev.progress)}`);
      const at = s.ev.mono_us;
      check(typeof at === 'number' && at < b.lastArg0,
        `${name}: started ${((b.lastArg0 - at) / 1000).toFixed(1)} ms (gateway's stamp) before the SDK delivered the last argument fragment`);
    }
  }
  // What the provider received from the gateway (even-numbered requests).
  const reqs = readdirSync(join(dir, 'requests')).filter((f) => f.endsWith('.json')).sort();
  check(reqs.length === 6, `the model server recorded ${reqs.length} requests`);
  for (const f of reqs) {
    const nreq = parseInt(f, 10);
    const body = readFileSync(join(dir, 'requests', f), 'utf8');
    if (nreq % 2 === 0) check(!body.includes('x-progress-argument'), `request ${nreq}: x-progress-argument stripped`);
  }
} catch (e) {
  console.error(e);
  failures++;
} finally {
  subProc.kill('SIGTERM');
  gw.child.kill('SIGTERM');
  ms.child.stdin.end();
  rmSync(dir, { recursive: true, force: true });
}
console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exitCode = failures ? 1 : 0;
