// clients.mjs: the event endpoint read by real clients, compared with the events `run`
// printed (the same events `tap` prints for the same streams):
//   - native SSE and NDJSON: the same events byte for byte, ids = seqs; resume after a
//     Last-Event-ID / ?after gives exactly the rest;
//   - AG-UI: @ag-ui/client's own HTTP event parser and verifier (verifyEvents) accept the
//     stream; TOOL_CALL_START carries the label; the arguments arrive as TOOL_CALL_ARGS
//     whose concatenation is the call's complete arguments, results as TOOL_CALL_RESULT;
//   - AI SDK: the `ai` package's chunk schema and readUIMessageStream build the assistant
//     message: a tool part with the label as its title, the input and the output, and the
//     text;
//   - HEAD on a following stream ends with its head (the connection's next request is
//     answered);
//   - security: a foreign Origin gets 403; so does a Host that is a name other than
//     localhost (DNS rebinding: a foreign page's requests name its own host); with
//     --token-file, no token gets 401.
// Usage: node tests/ui/clients.mjs BINARY_DIR
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { connect } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runHttpRequest, transformHttpEventStream, verifyEvents } from '@ag-ui/client';
import { readUIMessageStream, uiMessageChunkSchema } from 'ai';
import { parseJsonEventStream } from '@ai-sdk/provider-utils';
import { check, failures, makeSession, parseSSE, runThread, serve, tmp } from './common.mjs';

const bin = process.argv[2];
const dir = tmp('ts-ui-');
makeSession(join(dir, 'session'));
const events = runThread(bin, dir, 'ui1');
check(events.length > 5 && events.some((e) => e.type === 'tool_result'), 'run made a thread with a tool result');
const started = events.find((e) => e.type === 'tool_call_started');
const ready = events.find((e) => e.type === 'tool_call_ready');
const result = events.find((e) => e.type === 'tool_result');
writeFileSync(join(dir, 'token'), 's3cret-token\n', { mode: 0o600 });

const srv = await serve(bin, dir);
const base = `${srv.url}/threads/ui1/events`;
try {
  // native SSE and NDJSON
  let r = await fetch(`${base}?follow=0`);
  check(r.headers.get('content-type') === 'text/event-stream', 'SSE content type');
  const sse = parseSSE(await r.text());
  check(sse.length === events.length, 'SSE: every event', `${sse.length} vs ${events.length}`);
  check(sse.every((f, i) => f.id === String(events[i].seq) && JSON.stringify(JSON.parse(f.data)) === JSON.stringify(events[i])),
    'SSE: the same events as run printed, id = seq');
  r = await fetch(`${base}?follow=0`, { headers: { Accept: 'application/x-ndjson' } });
  const nd = (await r.text()).trim().split('\n').map((l) => JSON.parse(l));
  check(JSON.stringify(nd) === JSON.stringify(events), 'NDJSON: the same events');
  r = await fetch(`${base}?follow=0`, { headers: { 'Last-Event-ID': '3' } });
  const rest = parseSSE(await r.text());
  check(rest.length === events.length - 3 && rest[0].id === '4', 'resume after Last-Event-ID 3', rest[0]?.id);

  // AG-UI, through the client's own parser and verifier
  const agui = [];
  await new Promise((resolve, reject) => {
    transformHttpEventStream(runHttpRequest(() => fetch(`${base}?follow=0&format=agui`)))
      .pipe(verifyEvents(false))
      .subscribe({ next: (e) => agui.push(e), error: reject, complete: resolve });
  }).then(() => check(true, 'AG-UI: @ag-ui/client parses and verifies the stream'),
    (e) => check(false, 'AG-UI: @ag-ui/client parses and verifies the stream', e.message));
  const start = agui.find((e) => e.type === 'TOOL_CALL_START');
  check(start && start.toolCallName === 'write_file' && start.metadata?.progress === started.progress,
    'AG-UI: TOOL_CALL_START carries the label', JSON.stringify(start));
  const args = agui.filter((e) => e.type === 'TOOL_CALL_ARGS' && e.toolCallId === start?.toolCallId).map((e) => e.delta).join('');
  check(args && JSON.stringify(JSON.parse(args)) === JSON.stringify(ready.arguments), 'AG-UI: TOOL_CALL_ARGS make the complete arguments');
  const res = agui.find((e) => e.type === 'TOOL_CALL_RESULT');
  check(res && JSON.stringify(JSON.parse(res.content)) === JSON.stringify(result.result), 'AG-UI: TOOL_CALL_RESULT');
  check(agui[0]?.type === 'RUN_STARTED' && agui.at(-1)?.type === 'RUN_FINISHED', 'AG-UI: runs open and close');
  const text = agui.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta).join('');
  const want = events.filter((e) => e.type === 'text_delta').map((e) => e.text).join('');
  check(want.length > 0 && text === want, 'AG-UI: the text', text);

  // AI SDK: the chunk schema and readUIMessageStream, as useChat's transport uses them
  r = await fetch(`${base}?follow=0&format=ai-sdk`);
  check(r.headers.get('x-vercel-ai-ui-message-stream') === 'v1', 'AI SDK: stream header');
  const chunks = parseJsonEventStream({ stream: r.body, schema: uiMessageChunkSchema }).pipeThrough(new TransformStream({
    transform(part, ctl) {
      if (!part.success) throw part.error;
      ctl.enqueue(part.value);
    },
  }));
  let last;
  try {
    for await (const m of readUIMessageStream({ stream: chunks })) last = m;
    check(true, 'AI SDK: readUIMessageStream reads the stream');
  } catch (e) {
    check(false, 'AI SDK: readUIMessageStream reads the stream', e.message);
  }
  const tool = last?.parts.find((p) => p.type === 'tool-write_file');
  check(tool && tool.title === started.progress && tool.state === 'output-available', 'AI SDK: a tool part with the label as title', JSON.stringify(tool)?.slice(0, 200));
  check(tool && JSON.stringify(tool.input) === JSON.stringify(ready.arguments) && JSON.stringify(tool.output) === JSON.stringify(result.result),
    'AI SDK: the tool part holds the input and the output');
  const textParts = last?.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  check(textParts === want, 'AI SDK: the text parts', textParts);

  // the thread list
  r = await fetch(`${srv.url}/threads`);
  const list = await r.json();
  const row = list.threads.find((t) => t.id === 'ui1');
  check(row && row.turns >= 1 && row.calls === 1 && !row.parent, 'GET /threads lists the thread', JSON.stringify(row));
  check(row && Array.isArray(row.tags) && row.tags.length === 0, 'GET /threads gives a thread\'s tags (none here)', JSON.stringify(row));

  // security
  r = await fetch(`${base}?follow=0`, { headers: { Origin: 'http://evil.example' } });
  check(r.status === 403, 'a foreign Origin is refused', r.status);
  r = await fetch(`${base}?follow=0`, { headers: { Origin: srv.url } });
  check(r.status === 200, 'the same origin is allowed', r.status);
  // DNS rebinding: a page of evil.example resolved to 127.0.0.1 is "the same origin" as
  // the listener, and its GETs carry no Origin; only the Host names it
  const port = new URL(srv.url).port;
  const status = (path, headers) => new Promise((resolve, reject) => {
    const q = request({ host: '127.0.0.1', port, path, headers, setHost: false }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    q.on('error', reject);
    q.end();
  });
  const events0 = new URL(`${base}?follow=0`).pathname + '?follow=0';
  for (const [host, origin, want] of [[`evil.example:${port}`, undefined, 403],
    [`evil.example:${port}`, `http://evil.example:${port}`, 403], ['evil.example', undefined, 403],
    [`localhost:${port}`, undefined, 200], [`127.0.0.1:${port}`, `http://127.0.0.1:${port}`, 200]]) {
    const headers = origin ? { Host: host, Origin: origin } : { Host: host };
    const got = await status(events0, headers);
    check(got === want, `Host ${host}${origin ? ` with Origin ${origin}` : ''}: ${want}`, got);
  }
  check(await status('/threads', { Host: `evil.example:${port}` }) === 403, 'a rebinding Host cannot list the threads');
  check(await status('/', { Host: `evil.example:${port}` }) === 403, 'nor load the page');
  // HEAD on a following stream: the GET's head and done, so the connection's next
  // request is answered (a stream held open for a HEAD never ended, and what came after
  // it on the connection waited forever)
  const eventsPath = new URL(base).pathname;
  const both = await new Promise((resolve) => {
    const sock = connect(Number(port), '127.0.0.1');
    let got = '';
    const give_up = setTimeout(() => { sock.destroy(); resolve(got); }, 20000);
    sock.setEncoding('utf8');
    sock.on('data', (d) => {
      got += d;
      if (got.includes('"threads":')) { clearTimeout(give_up); sock.destroy(); resolve(got); }
    });
    sock.on('error', () => { clearTimeout(give_up); resolve(got); });
    sock.write(`HEAD ${eventsPath} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n` +
      `GET /threads HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
  });
  const heads = both.split('\r\n\r\n')[0];
  check(/^HTTP\/1\.1 200 /.test(heads) && heads.includes('Content-Type: text/event-stream'),
    'HEAD on an event stream gets the stream\'s head', heads);
  check((both.match(/HTTP\/1\.1 200 /g) || []).length === 2 && both.includes('"threads":'),
    'and the next request on the connection is answered', both.slice(0, 400));
} finally {
  srv.child.kill();
}
// run --serve: the endpoint lives as long as the run; a reader following the thread gets
// every event live and the stream ends when the run does.
{
  const child = spawn(join(bin, 'toolstream'), ['run', '--model-replay', join(dir, 'session'), '--workspace',
    join(dir, 'ws3'), '--data-dir', join(dir, 'data'), '--thread', 'ui3', '--rate', '50', '--json',
    '--serve', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '', out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.setEncoding('utf8');
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/http:\/\/127\.0\.0\.1:(\d+)\//);
      if (m) resolve(`http://127.0.0.1:${m[1]}`);
    });
    child.on('exit', (code) => reject(new Error(`run --serve exited ${code} before serving: ${err}`)));
  });
  const r = await fetch(`${url}/threads/ui3/events`, { headers: { Accept: 'application/x-ndjson' } });
  const body = await r.text(); // ends when the run stops its endpoint
  await new Promise((resolve) => (child.exitCode === null ? child.on('exit', resolve) : resolve()));
  const got = body.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const printed = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((e) => e.seq);
  check(child.exitCode === 0 && got.length > 5 && JSON.stringify(got) === JSON.stringify(printed),
    'run --serve: a follower gets every event of the run, live', `${got.length} vs ${printed.length}`);
}

// gateway --serve: the gateway's events (no store) go live to a follower of its endpoint.
{
  const ms = spawn(join(bin, 'model_server'), [join(dir, 'session')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const msPort = await new Promise((resolve) => {
    ms.stdout.setEncoding('utf8');
    ms.stdout.once('data', (d) => resolve(d.trim().split('\n')[0]));
  });
  const gw = spawn(join(bin, 'toolstream'), ['gateway', '--listen', '127.0.0.1:0', '--upstream',
    `http://127.0.0.1:${msPort}`, '--serve', '127.0.0.1:0', '--progress-arg', 'write_file=description'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let gout = '', gerr = '';
  gw.stdout.setEncoding('utf8');
  gw.stderr.setEncoding('utf8');
  const [gwUrl, epUrl] = await new Promise((resolve, reject) => {
    const tryBoth = () => {
      const a = gout.match(/http:\/\/127\.0\.0\.1:(\d+)/), b = gerr.match(/http:\/\/127\.0\.0\.1:(\d+)\//);
      if (a && b) resolve([`http://127.0.0.1:${a[1]}`, `http://127.0.0.1:${b[1]}`]);
    };
    gw.stdout.on('data', (d) => { gout += d; tryBoth(); });
    gw.stderr.on('data', (d) => { gerr += d; tryBoth(); });
    gw.on('exit', (code) => reject(new Error(`gateway exited ${code}: ${gerr}`)));
  });
  const ac = new AbortController();
  const follow = fetch(`${epUrl}/threads/gwt/events`, { headers: { Accept: 'application/x-ndjson' }, signal: ac.signal });
  const res = await follow;
  const reader = res.body.getReader();
  const r = await fetch(`${gwUrl}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Toolstream-Thread': 'gwt' },
    body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
  await r.text();
  let got = '';
  const until = Date.now() + 60000;
  while (!got.includes('"turn_finished"') && Date.now() < until) {
    const { value, done } = await reader.read();
    if (done) break;
    got += new TextDecoder().decode(value);
  }
  ac.abort();
  const evs = got.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  check(evs.some((e) => e.type === 'tool_call_started' && e.progress === 'writing index.html') &&
    evs.at(-1).type === 'turn_finished' && evs.every((e, i) => e.seq === i + 1 && e.thread === 'gwt'),
    'gateway --serve: the proxied reply\'s events reach a follower live', got.slice(0, 300));
  check(/127\.0\.0\.1 "POST \/v1\/chat\/completions" 200 thread=gwt [0-9.]+ ms/.test(gerr),
    'gateway: one access-log line per request on standard error', gerr.slice(0, 400));
  gw.kill();
  ms.stdin.end();
  ms.kill();
}

const secured = await serve(bin, dir, ['--token-file', join(dir, 'token')]);
try {
  let r = await fetch(`${secured.url}/threads/ui1/events?follow=0`);
  check(r.status === 401, 'with a token file, no token: 401', r.status);
  r = await fetch(`${secured.url}/threads/ui1/events?follow=0`, { headers: { Authorization: 'Bearer wrong' } });
  check(r.status === 401, 'a wrong token: 401', r.status);
  r = await fetch(`${secured.url}/threads/ui1/events?follow=0`, { headers: { Authorization: 'Bearer s3cret-token' } });
  check(r.status === 200, 'the token: 200', r.status);
  r = await fetch(`${secured.url}/threads/ui1/events?follow=0&token=s3cret-token`);
  check(r.status === 200, 'the token as ?token=: 200', r.status);
} finally {
  secured.child.kill();
}
if (failures) {
  console.error(`${failures} check(s) failed`);
  process.exit(1);
}
console.log('all UI client checks passed');
