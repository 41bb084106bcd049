/*
 * tap_streams.c: writes the provider streams that the `tap` benchmark replays.
 *
 * One tool call, `write_file`, whose arguments are a JSON object of exactly
 * TAP_ARGS_BYTES (64 KiB) of text:
 *
 *   {"description":"writing index.html","path":"index.html","content":"<an HTML page>"}
 *
 * The page is generated line by line (markup, CSS, a script with regular expressions,
 * string literals with quotes and backslashes, tabs, and prose in French, German,
 * Japanese and emoji). Its JSON encoding has everything a real model emits: `\n`,
 * `\t`, `\"`, `\\`, and non-ASCII characters written either as raw UTF-8 or as `\uXXXX`
 * (a surrogate pair above U+FFFF), chosen per character the way models mix the two.
 *
 * The argument text is then cut into deltas of 4 to 16 bytes (a token or two, as
 * models stream it), never inside a UTF-8 sequence (a provider's JSON payload cannot
 * split one) but freely inside `\uXXXX` and after a backslash, and each delta is sent
 * in its own SSE event in the real wire shape of each provider (see tests/corpus/):
 *
 *   openai-chat.sse       Chat Completions chunks: role chunk, the call's first chunk
 *                         with id and name, argument chunks, finish chunk, usage chunk
 *                         (`choices: []`), `data: [DONE]`; each with `obfuscation`.
 *   openai-responses.sse  Responses events: response.created, response.in_progress,
 *                         output_item.added, function_call_arguments.delta (with
 *                         sequence_number and obfuscation), function_call_arguments.done,
 *                         output_item.done and response.completed (these three repeat
 *                         the whole arguments, as the API does).
 *   anthropic.sse         Messages events: message_start, content_block_start tool_use,
 *                         ping, input_json_delta (the first one empty),
 *                         content_block_stop, message_delta, message_stop.
 *   bedrock.bin           Amazon Bedrock ConverseStream: AWS event stream frames (prelude,
 *                         `:event-type` / `:content-type` / `:message-type` headers, JSON
 *                         payload, CRC32s): messageStart, contentBlockStart toolUse,
 *                         contentBlockDelta toolUse.input (the same deltas as above),
 *                         contentBlockStop, messageStop, metadata; each payload with the
 *                         `p` padding the service adds.
 *   vertex.sse            Vertex AI streamed function-call arguments (Gemini `alt=sse`
 *                         chunks): a functionCall with the name and `willContinue`, then
 *                         one `partialArgs` piece per chunk: each argument's decoded
 *                         string value cut into pieces of 4 to 16 bytes, sent as
 *                         `stringValue` with `willContinue` while the value goes on; an
 *                         empty functionCall with finishReason and usageMetadata ends it.
 *   args.json             the arguments text itself, to check every reader's result.
 *   args-vertex.json      the same arguments as Vertex's are rebuilt (tap.h: the reader
 *                         writes the values it is sent as JSON with the fewest escapes:
 *                         `\"`, `\\`, `\n`, `\t`, `\r`, `\u00XX` for other controls,
 *                         everything else as raw UTF-8), for the vertex stream.
 *   description.txt       the decoded `description` value.
 *
 * The first three are written first, so adding the last two changed none of their bytes.
 *
 * Everything comes from a fixed seed: every run and every machine gets the same bytes.
 *
 * usage: tap_streams OUTDIR
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAP_ARGS_BYTES 65536
#define TAP_DESCRIPTION "writing index.html"

/* ---- a growable byte buffer (exits on out of memory: this is a generator) ---- */

typedef struct {
  char *p;
  size_t len, cap;
} gbuf;

static void gb_need(gbuf *b, size_t n) {
  if (b->len + n + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + n + 1) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    fputs("tap_streams: out of memory\n", stderr);
    exit(1);
  }
  b->p = p;
  b->cap = cap;
}

static void gb_put(gbuf *b, const void *s, size_t n) {
  gb_need(b, n);
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void gb_puts(gbuf *b, const char *s) { gb_put(b, s, strlen(s)); }

static void gb_printf(gbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  gb_need(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* ---- fixed-seed randomness ---------------------------------------------------- */

static uint64_t rng_state = 0x7461705f62656e63ull; /* "tap_benc" */

static uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 11);
}

static uint32_t rnd_below(uint32_t n) { return rnd() % n; }

static const char *pick(const char *const *list, size_t n) { return list[rnd_below((uint32_t)n)]; }
#define PICK(list) pick(list, sizeof list / sizeof list[0])

static void rnd_alnum(gbuf *b, size_t n) {
  static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (size_t i = 0; i < n; i++) gb_put(b, &set[rnd_below(sizeof set - 1)], 1);
}

static void rnd_hex(gbuf *b, size_t n) {
  static const char set[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) gb_put(b, &set[rnd_below(16)], 1);
}

/* ---- the page --------------------------------------------------------------------- */

static const char *const words[] = {
    "menu", "order", "table", "guest", "coffee", "pastry", "receipt", "total",
    "price", "item", "count", "label", "button", "panel", "list", "row"};
static const char *const prose[] = {
    "Café crème", "naïve façade", "Größe für Bäcker", "déjà vu", "Straße",
    "日本語のメニュー", "東京", "☕ fresh", "🚀 launch", "— today only —",
    "“quoted”", "naïveté", "smörgåsbord", "Ελληνικά", "✓ done"};

static void page_line(gbuf *line) {
  const char *a = PICK(words), *b = PICK(words), *c = PICK(prose);
  unsigned n = rnd_below(1000);
  switch (rnd_below(10)) {
    case 0:
      gb_printf(line, "  <div class=\"%s-%s\" data-id=\"%u\">%s</div>", a, b, n, c);
      break;
    case 1:
      gb_printf(line, "  <p title=\"%s\">%s &amp; %s: %u</p>", c, a, b, n);
      break;
    case 2:
      gb_printf(line, "    .%s-%s { margin: %upx; content: \"\\201C\"; font-family: \"%s\"; }",
                a, b, n % 40, c);
      break;
    case 3:
      gb_printf(line, "\tconst %s_re = /^\\s*(\\d+)\\.(\\d{2})\\s*\\\\%s$/u;", a, b);
      break;
    case 4:
      gb_printf(line, "\tel.innerHTML = \"<span class=\\\"%s\\\">\" + %s + \"</span>\";", a, b);
      break;
    case 5:
      gb_printf(line, "\tconsole.log('%s\\t%s', \"%s\", %u);", a, b, c, n);
      break;
    case 6:
      gb_printf(line, "\tconst path = \"C:\\\\Users\\\\%s\\\\%s.json\"; // %s", a, b, c);
      break;
    case 7:
      gb_printf(line, "\tif (%s.%s > %u && !%s) { %s.push({ name: '%s', note: \"%s\" }); }", a,
                b, n, b, a, a, c);
      break;
    case 8:
      gb_printf(line, "\t\t%s: \"%s\", // %u", a, c, n);
      break;
    default:
      gb_puts(line, "");
      break;
  }
  gb_puts(line, "\n");
}

/* Decodes one UTF-8 sequence at s (the generator only writes valid UTF-8). */
static uint32_t utf8_at(const unsigned char *s, size_t *len) {
  if (s[0] < 0xE0) {
    *len = 2;
    return (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
  }
  if (s[0] < 0xF0) {
    *len = 3;
    return (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
  }
  *len = 4;
  return (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
         (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
}

/* Appends `s` as the inside of a JSON string, the way a model writes it: non-ASCII
 * characters as raw UTF-8 or (one in three) as \u escapes. */
static void json_text(gbuf *b, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    unsigned char ch = u[i];
    if (ch == '"' || ch == '\\') {
      gb_put(b, "\\", 1);
      gb_put(b, &s[i++], 1);
    } else if (ch == '\n') {
      gb_puts(b, "\\n"), i++;
    } else if (ch == '\t') {
      gb_puts(b, "\\t"), i++;
    } else if (ch < 0x20) {
      gb_printf(b, "\\u%04x", ch), i++;
    } else if (ch < 0x80) {
      gb_put(b, &s[i++], 1);
    } else {
      size_t len;
      uint32_t cp = utf8_at(u + i, &len);
      if (rnd_below(3) == 0) {
        if (cp >= 0x10000) {
          cp -= 0x10000;
          gb_printf(b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
        } else {
          gb_printf(b, "\\u%04x", cp);
        }
      } else {
        gb_put(b, s + i, len);
      }
      i += len;
    }
  }
}

/* The arguments object, exactly TAP_ARGS_BYTES long; `content` gets the decoded value of
 * its `content` member (no randomness is drawn for it). */
static void make_args(gbuf *args, gbuf *content) {
  gbuf line = {0}, enc = {0};
  const char *head = "{\"description\":\"" TAP_DESCRIPTION "\",\"path\":\"index.html\",\"content\":\"";
  const char *tail = "\"}";
  size_t room = TAP_ARGS_BYTES - strlen(head) - strlen(tail);
  gb_puts(args, head);
  static const char top[] = "<!doctype html>\n<html lang=\"fr\">\n<head>\n<meta charset=\"utf-8\">\n"
                            "<title>Café menu</title>\n<style>\n";
  json_text(args, top, sizeof top - 1);
  gb_put(content, top, sizeof top - 1);
  for (;;) {
    line.len = 0;
    enc.len = 0;
    page_line(&line);
    json_text(&enc, line.p, line.len);
    if (args->len - strlen(head) + enc.len > room) break;
    gb_put(args, enc.p, enc.len);
    gb_put(content, line.p, line.len);
  }
  while (args->len - strlen(head) < room) { /* pad to the exact size */
    gb_put(args, " ", 1);
    gb_put(content, " ", 1);
  }
  gb_puts(args, tail);
  free(line.p);
  free(enc.p);
}

/* The cut points: deltas of 4 to 16 bytes, never inside a UTF-8 sequence. */
static size_t make_cuts(const gbuf *args, size_t **out) {
  size_t n = 0, cap = args->len / 4 + 2, at = 0;
  size_t *cuts = malloc(cap * sizeof *cuts);
  if (!cuts) exit(1);
  cuts[n++] = 0;
  while (at < args->len) {
    at += 4 + rnd_below(13);
    while (at < args->len && ((unsigned char)args->p[at] & 0xC0) == 0x80) at++;
    if (at > args->len) at = args->len;
    cuts[n++] = at;
  }
  *out = cuts;
  return n - 1; /* deltas */
}

/* ---- the OpenAI and Anthropic wire formats ---------------------------------------------------------- */

static const char chat_head[] =
    "\"object\":\"chat.completion.chunk\",\"created\":1755868211,\"model\":\"gpt-4.1-2025-04-14\","
    "\"service_tier\":\"default\",\"system_fingerprint\":\"fp_a380c0a156\",";

static void chat_event(gbuf *o, const char *id, const char *choices) {
  gb_printf(o, "data: {\"id\":\"%s\",%s\"choices\":%s,\"obfuscation\":\"", id, chat_head, choices);
  rnd_alnum(o, 1 + rnd_below(15));
  gb_puts(o, "\"}\n\n");
}

static void write_chat(gbuf *o, const gbuf *args, const size_t *cuts, size_t nd) {
  gbuf id = {0}, call = {0}, ch = {0};
  gb_puts(&id, "chatcmpl-");
  rnd_alnum(&id, 29);
  gb_puts(&call, "call_");
  rnd_alnum(&call, 24);
  chat_event(o, id.p,
             "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"refusal\":null},"
             "\"logprobs\":null,\"finish_reason\":null}]");
  gb_printf(&ch,
            "[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"%s\",\"type\":"
            "\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":\"\"}}]},"
            "\"logprobs\":null,\"finish_reason\":null}]",
            call.p);
  chat_event(o, id.p, ch.p);
  for (size_t i = 0; i < nd; i++) {
    ch.len = 0;
    gb_puts(&ch, "[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"");
    json_text(&ch, args->p + cuts[i], cuts[i + 1] - cuts[i]);
    gb_puts(&ch, "\"}}]},\"logprobs\":null,\"finish_reason\":null}]");
    chat_event(o, id.p, ch.p);
  }
  chat_event(o, id.p, "[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}]");
  gb_printf(o,
            "data: {\"id\":\"%s\",%s\"choices\":[],\"usage\":{\"prompt_tokens\":412,"
            "\"completion_tokens\":%zu,\"total_tokens\":%zu,\"prompt_tokens_details\":"
            "{\"cached_tokens\":0,\"audio_tokens\":0},\"completion_tokens_details\":"
            "{\"reasoning_tokens\":0,\"audio_tokens\":0,\"accepted_prediction_tokens\":0,"
            "\"rejected_prediction_tokens\":0}},\"obfuscation\":\"Iu8wcu\"}\n\n",
            id.p, chat_head, nd, nd + 412);
  gb_puts(o, "data: [DONE]\n\n");
  free(id.p);
  free(call.p);
  free(ch.p);
}

static const char resp_tools[] =
    "\"tools\":[{\"type\":\"function\",\"name\":\"write_file\",\"description\":\"Write a file\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"description\":{\"type\":\"string\"},"
    "\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"}},\"required\":"
    "[\"description\",\"path\",\"content\"],\"additionalProperties\":false},\"strict\":true}]";

static void resp_body(gbuf *o, const char *id, const char *status, const char *output,
                      const char *usage) {
  gb_printf(o,
            "{\"id\":\"%s\",\"object\":\"response\",\"created_at\":1755868302,\"status\":\"%s\","
            "\"background\":false,\"error\":null,\"incomplete_details\":null,\"instructions\":"
            "null,\"max_output_tokens\":null,\"model\":\"gpt-5-2025-08-07\",\"output\":%s,"
            "\"parallel_tool_calls\":true,\"previous_response_id\":null,\"reasoning\":"
            "{\"effort\":\"low\",\"summary\":null},\"store\":true,\"temperature\":1.0,\"text\":"
            "{\"format\":{\"type\":\"text\"}},\"tool_choice\":\"auto\",%s,\"top_p\":1.0,"
            "\"truncation\":\"disabled\",\"usage\":%s,\"user\":null,\"metadata\":{}}",
            id, status, output, resp_tools, usage);
}

static void write_responses(gbuf *o, const gbuf *args, const size_t *cuts, size_t nd) {
  gbuf rid = {0}, item = {0}, call = {0}, enc = {0}, done_item = {0}, out = {0}, usage = {0};
  unsigned seq = 0;
  gb_puts(&rid, "resp_");
  rnd_hex(&rid, 48);
  gb_puts(&item, "fc_");
  rnd_hex(&item, 48);
  gb_puts(&call, "call_");
  rnd_alnum(&call, 24);
  json_text(&enc, args->p, args->len);

  gb_printf(o, "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":%u,"
               "\"response\":", seq++);
  resp_body(o, rid.p, "in_progress", "[]", "null");
  gb_printf(o, "}\n\nevent: response.in_progress\ndata: {\"type\":\"response.in_progress\","
               "\"sequence_number\":%u,\"response\":", seq++);
  resp_body(o, rid.p, "in_progress", "[]", "null");
  gb_printf(o,
            "}\n\nevent: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
            "\"sequence_number\":%u,\"output_index\":0,\"item\":{\"id\":\"%s\",\"type\":"
            "\"function_call\",\"status\":\"in_progress\",\"arguments\":\"\",\"call_id\":\"%s\","
            "\"name\":\"write_file\"}}\n\n",
            seq++, item.p, call.p);
  for (size_t i = 0; i < nd; i++) {
    gb_printf(o,
              "event: response.function_call_arguments.delta\ndata: {\"type\":"
              "\"response.function_call_arguments.delta\",\"sequence_number\":%u,\"item_id\":"
              "\"%s\",\"output_index\":0,\"delta\":\"",
              seq++, item.p);
    json_text(o, args->p + cuts[i], cuts[i + 1] - cuts[i]);
    gb_puts(o, "\",\"obfuscation\":\"");
    rnd_alnum(o, 1 + rnd_below(15));
    gb_puts(o, "\"}\n\n");
  }
  gb_printf(o,
            "event: response.function_call_arguments.done\ndata: {\"type\":"
            "\"response.function_call_arguments.done\",\"sequence_number\":%u,\"item_id\":\"%s\","
            "\"name\":\"write_file\",\"output_index\":0,\"arguments\":\"%s\"}\n\n",
            seq++, item.p, enc.p);
  gb_printf(&done_item,
            "{\"id\":\"%s\",\"type\":\"function_call\",\"status\":\"completed\",\"arguments\":"
            "\"%s\",\"call_id\":\"%s\",\"name\":\"write_file\"}",
            item.p, enc.p, call.p);
  gb_printf(o,
            "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\","
            "\"sequence_number\":%u,\"output_index\":0,\"item\":%s}\n\n",
            seq++, done_item.p);
  gb_printf(&out, "[%s]", done_item.p);
  gb_printf(&usage,
            "{\"input_tokens\":412,\"input_tokens_details\":{\"cached_tokens\":0},"
            "\"output_tokens\":%zu,\"output_tokens_details\":{\"reasoning_tokens\":0},"
            "\"total_tokens\":%zu}",
            nd, nd + 412);
  gb_printf(o, "event: response.completed\ndata: {\"type\":\"response.completed\","
               "\"sequence_number\":%u,\"response\":", seq++);
  resp_body(o, rid.p, "completed", out.p, usage.p);
  gb_puts(o, "}\n\n");
  free(rid.p), free(item.p), free(call.p), free(enc.p), free(done_item.p), free(out.p),
      free(usage.p);
}

static void anthropic_delta(gbuf *o, const char *s, size_t n) {
  gb_puts(o, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
             "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"");
  json_text(o, s, n);
  gb_puts(o, "\"}}\n\n");
}

static void write_anthropic(gbuf *o, const gbuf *args, const size_t *cuts, size_t nd) {
  gbuf mid = {0}, tid = {0};
  gb_puts(&mid, "msg_01");
  rnd_alnum(&mid, 22);
  gb_puts(&tid, "toolu_01");
  rnd_alnum(&tid, 22);
  gb_printf(o,
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"%s\","
            "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5-20250929\","
            "\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":"
            "412,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"cache_creation\":"
            "{\"ephemeral_5m_input_tokens\":0,\"ephemeral_1h_input_tokens\":0},\"output_tokens\":1,"
            "\"service_tier\":\"standard\"}}}\n\n",
            mid.p);
  gb_printf(o,
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
            "\"content_block\":{\"type\":\"tool_use\",\"id\":\"%s\",\"name\":\"write_file\","
            "\"input\":{}}}\n\n",
            tid.p);
  gb_puts(o, "event: ping\ndata: {\"type\": \"ping\"}\n\n");
  anthropic_delta(o, "", 0);
  for (size_t i = 0; i < nd; i++) anthropic_delta(o, args->p + cuts[i], cuts[i + 1] - cuts[i]);
  gb_puts(o, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n");
  gb_printf(o,
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
            "\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":%zu}}\n\n",
            nd);
  gb_puts(o, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
  free(mid.p);
  free(tid.p);
}

/* ---- Amazon Bedrock ConverseStream (AWS event stream frames) -------------------------- */

/* CRC32 (IEEE, reflected), bitwise: an implementation of its own, independent of the
 * framer's table in stream/eventstream.c. */
static uint32_t crc32_bits(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}

static void put_be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

/* A string header: name length, name, type 7, value length (2 bytes), value. */
static void evs_header(gbuf *h, const char *name, const char *value) {
  unsigned char nl = (unsigned char)strlen(name), t = 7;
  size_t vl = strlen(value);
  unsigned char len[2] = {(unsigned char)(vl >> 8), (unsigned char)vl};
  gb_put(h, &nl, 1);
  gb_put(h, name, nl);
  gb_put(h, &t, 1);
  gb_put(h, len, 2);
  gb_put(h, value, vl);
}

/* One event message: prelude (total, headers length, CRC), headers, payload, CRC. */
static void evs_frame(gbuf *o, const char *event_type, const gbuf *payload) {
  gbuf h = {0};
  evs_header(&h, ":event-type", event_type);
  evs_header(&h, ":content-type", "application/json");
  evs_header(&h, ":message-type", "event");
  size_t total = 12 + h.len + payload->len + 4, start = o->len;
  unsigned char pre[12];
  put_be32(pre, (uint32_t)total);
  put_be32(pre + 4, (uint32_t)h.len);
  put_be32(pre + 8, crc32_bits(pre, 8));
  gb_put(o, pre, 12);
  gb_put(o, h.p, h.len);
  gb_put(o, payload->p, payload->len);
  unsigned char crc[4];
  put_be32(crc, crc32_bits((const unsigned char *)o->p + start, total - 4));
  gb_put(o, crc, 4);
  free(h.p);
}

/* The `p` member Bedrock pads each payload with (a length-hiding filler of letters). */
static void bedrock_pad(gbuf *pl) {
  gb_puts(pl, ",\"p\":\"");
  rnd_alnum(pl, 1 + rnd_below(20));
  gb_puts(pl, "\"}");
}

static void write_bedrock(gbuf *o, const gbuf *args, const size_t *cuts, size_t nd) {
  gbuf pl = {0}, tid = {0};
  gb_puts(&tid, "tooluse_");
  rnd_alnum(&tid, 22);
  gb_puts(&pl, "{\"role\":\"assistant\"");
  bedrock_pad(&pl);
  evs_frame(o, "messageStart", &pl);
  pl.len = 0;
  gb_printf(&pl, "{\"contentBlockIndex\":0,\"start\":{\"toolUse\":{\"toolUseId\":\"%s\","
                 "\"name\":\"write_file\"}}", tid.p);
  bedrock_pad(&pl);
  evs_frame(o, "contentBlockStart", &pl);
  for (size_t i = 0; i < nd; i++) {
    pl.len = 0;
    gb_puts(&pl, "{\"contentBlockIndex\":0,\"delta\":{\"toolUse\":{\"input\":\"");
    json_text(&pl, args->p + cuts[i], cuts[i + 1] - cuts[i]);
    gb_puts(&pl, "\"}}");
    bedrock_pad(&pl);
    evs_frame(o, "contentBlockDelta", &pl);
  }
  pl.len = 0;
  gb_puts(&pl, "{\"contentBlockIndex\":0");
  bedrock_pad(&pl);
  evs_frame(o, "contentBlockStop", &pl);
  pl.len = 0;
  gb_puts(&pl, "{\"stopReason\":\"tool_use\"");
  bedrock_pad(&pl);
  evs_frame(o, "messageStop", &pl);
  pl.len = 0;
  gb_printf(&pl, "{\"metrics\":{\"latencyMs\":%u},\"usage\":{\"inputTokens\":412,"
                 "\"outputTokens\":%zu,\"totalTokens\":%zu}", 9000 + rnd_below(4000), nd, nd + 412);
  bedrock_pad(&pl);
  evs_frame(o, "metadata", &pl);
  free(pl.p);
  free(tid.p);
}

/* Messages in an event stream: walk the frames by their total lengths. */
static size_t count_frames(const gbuf *o) {
  size_t n = 0;
  for (size_t at = 0; at + 12 <= o->len; n++) {
    const unsigned char *p = (const unsigned char *)o->p + at;
    at += (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
  }
  return n;
}

/* ---- Vertex AI streamed function-call arguments (Gemini SSE with partialArgs) ---------- */

/* `s` as the inside of a JSON string with the fewest escapes (the way the Vertex reader
 * rebuilds argument text: see args-vertex.json above). */
static void json_min(gbuf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\') {
      gb_put(b, "\\", 1);
      gb_put(b, &s[i], 1);
    } else if (ch == '\n') {
      gb_puts(b, "\\n");
    } else if (ch == '\t') {
      gb_puts(b, "\\t");
    } else if (ch == '\r') {
      gb_puts(b, "\\r");
    } else if (ch < 0x20) {
      gb_printf(b, "\\u%04x", ch);
    } else {
      gb_put(b, &s[i], 1);
    }
  }
}

static const char vertex_tail[] =
    "\"modelVersion\":\"gemini-2.5-pro\",\"createTime\":\"2026-11-30T09:12:44.518203Z\","
    "\"responseId\":\"vDpLaZ2fH8-mz7IPq5vSgAw\"}\n\n";

static void vertex_chunk(gbuf *o, const char *fc, const char *extra) {
  gb_printf(o, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":"
               "%s}]}%s}],", fc, extra);
  gb_puts(o, vertex_tail);
}

/* One member's decoded string value, cut into pieces of 4 to 16 bytes (never inside a
 * UTF-8 sequence), one partialArgs piece per chunk, `willContinue` on all but the last. */
static size_t vertex_value(gbuf *o, const char *path, const char *s, size_t n) {
  gbuf fc = {0};
  size_t at = 0, pieces = 0;
  while (at < n) {
    size_t end = at + 4 + rnd_below(13);
    while (end < n && ((unsigned char)s[end] & 0xC0) == 0x80) end++;
    if (end > n) end = n;
    fc.len = 0;
    gb_printf(&fc, "{\"partialArgs\":[{\"jsonPath\":\"%s\",\"stringValue\":\"", path);
    json_text(&fc, s + at, end - at);
    gb_printf(&fc, "\"%s}],\"willContinue\":true}", end < n ? ",\"willContinue\":true" : "");
    vertex_chunk(o, fc.p, ",\"index\":0");
    at = end;
    pieces++;
  }
  free(fc.p);
  return pieces;
}

static void write_vertex(gbuf *o, const gbuf *content) {
  static const char path[] = "index.html";
  vertex_chunk(o, "{\"name\":\"write_file\",\"willContinue\":true}", ",\"index\":0");
  size_t n = vertex_value(o, "$.description", TAP_DESCRIPTION, strlen(TAP_DESCRIPTION));
  n += vertex_value(o, "$.path", path, strlen(path));
  n += vertex_value(o, "$.content", content->p, content->len);
  /* the last chunk: an empty functionCall ends the call; the usage sits beside candidates */
  gb_printf(o, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":"
               "{}}]},\"index\":0,\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":"
               "412,\"candidatesTokenCount\":%zu,\"totalTokenCount\":%zu,\"trafficType\":"
               "\"ON_DEMAND\"},", n, n + 412);
  gb_puts(o, vertex_tail);
}

/* The arguments as the Vertex reader rebuilds them. */
static void vertex_args(gbuf *out, const gbuf *content) {
  gb_puts(out, "{\"description\":\"");
  json_min(out, TAP_DESCRIPTION, strlen(TAP_DESCRIPTION));
  gb_puts(out, "\",\"path\":\"index.html\",\"content\":\"");
  json_min(out, content->p, content->len);
  gb_puts(out, "\"}");
}

/* ---- main ------------------------------------------------------------------------------- */

static size_t count_events(const gbuf *o) {
  size_t n = 0;
  for (size_t i = 0; i + 1 < o->len; i++)
    if (o->p[i] == '\n' && o->p[i + 1] == '\n') n++;
  return n;
}

static int save(const char *dir, const char *name, const gbuf *b) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(b->p, 1, b->len, f) != b->len || fclose(f) != 0) {
    perror(path);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fputs("usage: tap_streams OUTDIR\n", stderr);
    return 2;
  }
  gbuf args = {0}, desc = {0}, content = {0}, vargs = {0};
  size_t *cuts;
  make_args(&args, &content);
  size_t nd = make_cuts(&args, &cuts);
  gb_puts(&desc, TAP_DESCRIPTION);
  vertex_args(&vargs, &content);

  static const char *const names[5] = {"openai-chat.sse", "openai-responses.sse", "anthropic.sse",
                                       "bedrock.bin", "vertex.sse"};
  int rc = save(argv[1], "args.json", &args) | save(argv[1], "description.txt", &desc) |
           save(argv[1], "args-vertex.json", &vargs);
  for (int f = 0; f < 5 && !rc; f++) {
    gbuf o = {0};
    if (f == 0) write_chat(&o, &args, cuts, nd);
    else if (f == 1) write_responses(&o, &args, cuts, nd);
    else if (f == 2) write_anthropic(&o, &args, cuts, nd);
    else if (f == 3) write_bedrock(&o, &args, cuts, nd);
    else write_vertex(&o, &content);
    rc |= save(argv[1], names[f], &o);
    if (f == 3)
      printf("%-22s %9zu B  %5zu frames      %zu argument deltas of 4-16 B\n", names[f], o.len,
             count_frames(&o), nd);
    else if (f == 4)
      printf("%-22s %9zu B  %5zu SSE events  value pieces of 4-16 B\n", names[f], o.len,
             count_events(&o));
    else
      printf("%-22s %9zu B  %5zu SSE events  %zu argument deltas of 4-16 B\n", names[f], o.len,
             count_events(&o), nd);
    free(o.p);
  }
  free(args.p);
  free(desc.p);
  free(content.p);
  free(vargs.p);
  free(cuts);
  return rc;
}
