// peers.mjs: what applications run today to read a tool-call stream, on the same bytes
// as bench/tap_bench (the files bench/tap_streams writes). One peer and one format per
// node process:
//
//   node peers.mjs --peer openai|anthropic|ai --format FORMAT --dir DIR
//                  [--runs N] [--warmup N] [--budget SECONDS] [--tsv FILE]
//
// Peers (exact versions in package.json / package-lock.json):
//   openai     the official SDK's stream helpers, fed through a custom `fetch` that
//              answers with the SSE bytes (no network):
//                openai-chat       client.chat.completions.stream() (ChatCompletionStream)
//                                  with write_file declared `strict: true`, so that the
//                                  SDK itself parses the partial arguments after every
//                                  delta (parsed_arguments); read in the
//                                  tool_calls.function.arguments.delta event.
//                openai-responses  client.responses.stream() (ResponseStream); it only
//                                  accumulates the arguments text (event.snapshot), so
//                                  the snapshot goes through the SDK's own partial-JSON
//                                  parser (openai/_vendor/partial-json-parser, the one
//                                  the chat helper uses) after every delta.
//   anthropic  @anthropic-ai/sdk client.messages.stream() (MessageStream) with an
//              `inputJson` listener: the SDK parses the partial input after every
//              input_json_delta and hands the snapshot to the listener.
//   ai         the `ai` package's path for a streamed tool call: parseJsonEventStream
//              from @ai-sdk/provider-utils (TextDecoderStream + eventsource-parser +
//              JSON parse per event, as its provider packages read every stream;
//              here without the zod validation those packages add, so this peer is a
//              lower bound on their cost), the argument delta picked out of each
//              event, appended to the text so far, and parsePartialJson (exported by
//              `ai`) applied to the whole text after every delta, as useChat /
//              streamObject do to show partial tool input.
//
// One run: from before the request (stream helper created) until the final message
// object is ready (finalChatCompletion / finalResponse / finalMessage; for `ai`, the end
// of the event stream). The body is a ReadableStream that hands out one SSE event per
// read, as a live stream arrives. Measured per run: total process CPU
// (process.cpuUsage, user + system, so garbage collection on helper threads counts),
// wall time, and the wall time until the complete `description` value is first visible
// in the peer's parsed partial arguments: the first delta after which
// parsed.description === description.txt. Partial-JSON parsers expose a string while it
// is still open, so this can be one delta earlier than the closing quote (toolstream
// waits for it); it favours the peers. Each run is checked: the final arguments must
// be exactly args.json (the SDKs' accumulated text; for Anthropic, the parsed input
// deep-equal to it). Reported: the medians over the runs, after warm-up runs.
import { readFileSync, appendFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
};
const peer = opt('--peer');
const format = opt('--format');
const dir = opt('--dir');
const runs = Number(opt('--runs', '7'));
const warmup = Number(opt('--warmup', '2'));
const budget = Number(opt('--budget', '60')); // seconds for the measured runs, at least 3 runs
const tsv = opt('--tsv');
const FORMATS = ['openai-chat', 'openai-responses', 'anthropic'];
if (!['openai', 'anthropic', 'ai'].includes(peer) || !FORMATS.includes(format) || !dir ||
    (peer === 'openai' && format === 'anthropic') || (peer === 'anthropic' && format !== 'anthropic')) {
  console.error('usage: node peers.mjs --peer openai|anthropic|ai --format FORMAT --dir DIR ' +
                '[--runs N] [--warmup N] [--budget S] [--tsv FILE]');
  process.exit(2);
}

const version = (pkg) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url))).version;
const sse = readFileSync(`${dir}/${format}.sse`);
const ARGS = readFileSync(`${dir}/args.json`, 'utf8');
const DESC = readFileSync(`${dir}/description.txt`, 'utf8');
const ARGS_VALUE = JSON.parse(ARGS);

// The SSE events, each ending after its blank line: one per read of the body.
const chunks = [];
for (let at = 0; at < sse.length;) {
  const end = sse.indexOf('\n\n', at);
  const stop = end < 0 ? sse.length : end + 2;
  chunks.push(sse.subarray(at, stop));
  at = stop;
}

function fakeFetch() {
  let i = 0;
  const body = new ReadableStream({
    pull(c) {
      if (i < chunks.length) c.enqueue(chunks[i++]);
      else c.close();
    },
  });
  return Promise.resolve(new Response(body, {
    status: 200,
    headers: { 'content-type': 'text/event-stream', 'x-request-id': 'req_bench' },
  }));
}

const schema = {
  type: 'object',
  properties: {
    description: { type: 'string' },
    path: { type: 'string' },
    content: { type: 'string' },
  },
  required: ['description', 'path', 'content'],
  additionalProperties: false,
};
const PROMPT = 'Write index.html for the café menu.';

function check(ok, what) {
  if (!ok) throw new Error(`${peer} ${format}: ${what}`);
}

// Each returns a function that performs one run and resolves to the description time.
async function makeRunner() {
  if (peer === 'openai') {
    const { default: OpenAI } = await import('openai');
    const client = new OpenAI({
      apiKey: 'sk-bench', baseURL: 'http://127.0.0.1:9/v1', fetch: fakeFetch, maxRetries: 0,
    });
    if (format === 'openai-chat') {
      return {
        name: `openai ${version('openai')} chat.completions.stream`,
        async run(t0) {
          let tDesc = -1;
          const stream = client.chat.completions.stream({
            model: 'gpt-4.1-2025-04-14',
            messages: [{ role: 'user', content: PROMPT }],
            tools: [{ type: 'function', function: { name: 'write_file', description: 'Write a file', parameters: schema, strict: true } }],
          });
          stream.on('tool_calls.function.arguments.delta', (e) => {
            if (tDesc < 0 && e.parsed_arguments?.description === DESC) tDesc = performance.now() - t0;
          });
          const done = await stream.finalChatCompletion();
          check(done.choices[0].message.tool_calls[0].function.arguments === ARGS, 'arguments differ');
          return tDesc;
        },
      };
    }
    const { partialParse } = await import('openai/_vendor/partial-json-parser/parser');
    return {
      name: `openai ${version('openai')} responses.stream + partialParse`,
      async run(t0) {
        let tDesc = -1;
        const stream = client.responses.stream({
          model: 'gpt-5-2025-08-07',
          input: PROMPT,
          tools: [{ type: 'function', name: 'write_file', description: 'Write a file', parameters: schema, strict: true }],
        });
        stream.on('response.function_call_arguments.delta', (e) => {
          const v = partialParse(e.snapshot);
          if (tDesc < 0 && v?.description === DESC) tDesc = performance.now() - t0;
        });
        const done = await stream.finalResponse();
        check(done.output.find((o) => o.type === 'function_call').arguments === ARGS, 'arguments differ');
        return tDesc;
      },
    };
  }

  if (peer === 'anthropic') {
    const { default: Anthropic } = await import('@anthropic-ai/sdk');
    const client = new Anthropic({
      apiKey: 'sk-ant-bench', baseURL: 'http://127.0.0.1:9', fetch: fakeFetch, maxRetries: 0,
    });
    return {
      name: `@anthropic-ai/sdk ${version('@anthropic-ai/sdk')} messages.stream`,
      async run(t0) {
        let tDesc = -1;
        const stream = client.messages.stream({
          model: 'claude-sonnet-4-6', // one the SDK does not warn about
          max_tokens: 32000,
          messages: [{ role: 'user', content: PROMPT }],
          tools: [{ name: 'write_file', description: 'Write a file', input_schema: schema }],
        });
        stream.on('inputJson', (_delta, snapshot) => {
          if (tDesc < 0 && snapshot?.description === DESC) tDesc = performance.now() - t0;
        });
        const done = await stream.finalMessage();
        const input = done.content.find((b) => b.type === 'tool_use').input;
        check(input.content === ARGS_VALUE.content && input.description === DESC &&
              input.path === ARGS_VALUE.path, 'input differs');
        return tDesc;
      },
    };
  }

  const { parsePartialJson } = await import('ai');
  const { parseJsonEventStream } = await import('@ai-sdk/provider-utils');
  const pick = {
    'openai-chat': (v) => v.choices?.[0]?.delta?.tool_calls?.[0]?.function?.arguments,
    'openai-responses': (v) => (v.type === 'response.function_call_arguments.delta' ? v.delta : undefined),
    anthropic: (v) => (v.type === 'content_block_delta' && v.delta?.type === 'input_json_delta'
      ? v.delta.partial_json : undefined),
  }[format];
  return {
    name: `ai ${version('ai')} parsePartialJson per delta`,
    async run(t0) {
      let tDesc = -1;
      let text = '';
      const res = await fakeFetch();
      for await (const chunk of parseJsonEventStream({ stream: res.body })) {
        check(chunk.success, 'an SSE event is not JSON');
        const delta = pick(chunk.value);
        if (!delta) continue;
        text += delta;
        const { value } = await parsePartialJson(text);
        if (tDesc < 0 && value?.description === DESC) tDesc = performance.now() - t0;
      }
      check(text === ARGS, 'arguments differ');
      return tDesc;
    },
  };
}

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

const runner = await makeRunner();
const cpu = [], wall = [], desc = [];
let spent = 0;
for (let k = 0; k < warmup + runs; k++) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const d = await runner.run(t0);
  const w = performance.now() - t0;
  const c = process.cpuUsage(c0);
  check(d >= 0, 'the description never became visible');
  if (k < warmup) continue;
  cpu.push((c.user + c.system) / 1e3);
  wall.push(w);
  desc.push(d);
  spent += w / 1e3;
  if (cpu.length >= 3 && spent > budget) break;
}

const c = median(cpu), w = median(wall), d = median(desc);
const impl = runner.name;
console.log(`| ${format.padEnd(16)} | ${impl} | ${(sse.length / c / 1e3).toFixed(1)} MB/s | ` +
            `${(chunks.length / c * 1e3).toFixed(0)} events/s | CPU ${c.toFixed(1)} ms | ` +
            `wall ${w.toFixed(1)} ms | description ${d.toFixed(3)} ms | ${cpu.length} runs |`);
if (tsv) {
  appendFileSync(tsv, [format, impl, sse.length, chunks.length, c.toFixed(6), w.toFixed(6),
                       d.toFixed(3), cpu.length, Math.min(...cpu).toFixed(6)].join('\t') + '\n');
}
