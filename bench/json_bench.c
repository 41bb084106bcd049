/*
 * json_bench.c: the tokenizer benchmark. toolstream's ts_json_tok against yajl, json-c,
 * jsmn and simdjson, side by side on the same bytes, in one run.
 *
 * What is measured. A model streams tool-call arguments a few bytes at a time, so
 * what matters is the cost of parsing a document that arrives in small deltas: every
 * parser is fed the same generated documents in deltas of 4, 16 and 64 bytes and
 * whole, the way each of them is meant to be used incrementally:
 *   toolstream  ts_json_tok_feed per delta, ts_json_tok_finish at the end;
 *   yajl        yajl_parse per delta, yajl_complete_parse at the end;
 *   json-c      json_tokener_parse_ex per delta until it returns the object;
 *   jsmn        append the delta to a buffer and call jsmn_parse again, resuming the
 *               same parser (it rewinds to the start of an unfinished token); built
 *               with JSMN_STRICT and JSMN_PARENT_LINKS, as stream/json_view.c does;
 *   simdjson    its DOM parser, whole documents only (it has no incremental interface);
 *               one dom::parser reused, the input padded (json_bench_simdjson.cpp);
 *   memcpy      one memcpy per delta into a buffer: the floor no parser can beat.
 * Every parser starts fresh on each document (a new yajl handle, json_tokener, jsmn
 * parser or ts_json_tok) and does a little real work per token (a count and a sum),
 * so that nothing can be optimised away. A correctness pass comes first: every parser
 * must accept every document and report the number of tokens a simple reference
 * scanner counted in it, or its cell says FAIL.
 *
 * The workloads are generated here from a fixed seed, so every run and every machine
 * sees the same bytes:
 *   W1  one write_file arguments object of about 64 KiB whose "content" is C source
 *       with newlines, quotes, backslashes, \u escapes and raw UTF-8;
 *   W2  10,000 small (about 150 B) arguments objects, each parsed by a fresh parser;
 *   W3  a 1 MiB document of nested records, nesting up to 20 containers deep.
 *
 * Timing. A measurement is the best of several repetitions (CLOCK_MONOTONIC; nothing
 * pinned), after one warm-up pass that also verifies. The whole matrix is measured in
 * several rounds and each cell keeps its best, so that a burst of load from another
 * process spoils one round of a cell rather than the cell. Some peers are quadratic on
 * some workloads (they re-lex a token that straddles deltas from its first byte), and
 * a full pass could take minutes: a pass is stopped after --cap seconds and the rate
 * is computed from the bytes it got through. Such cells are marked '~'; the rate of a
 * quadratic parser only falls as the document grows, so for them the printed rate is
 * an upper bound and the ratio a lower bound.
 *
 * `--only W D PARSER` runs one pass of one cell inside bench_pass() and prints the
 * bytes and feed calls, for valgrind --tool=callgrind --toggle-collect=bench_pass
 * (bench/run.sh turns that into instructions per byte).
 */
#include <float.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <yajl/yajl_parse.h>
#include <yajl/yajl_version.h>

/* jsmn as toolstream itself builds it (stream/json_view.c): strict, with parent links
 * (without them closing a container scans back over every earlier token, which makes
 * W3 quadratic). Static, so it cannot clash with the copy inside ts_stream. */
#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#include <jsmn.h>

#include "base/error.h"
#include "json_bench_simdjson.h"
#include "stream/json_tok.h"

#ifndef TS_BENCH_CFLAGS
#define TS_BENCH_CFLAGS "?"
#endif
#ifndef TS_BENCH_CC
#define TS_BENCH_CC "?"
#endif

/* ---- small helpers ---------------------------------------------------------------- */

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("json_bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory (%zu bytes)", n);
  return p;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* splitmix64: a fixed seed gives the same workloads everywhere. */
static uint64_t rng_state = 0x746f6f6c73747265u; /* "toolstre" */
static uint64_t rnd(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}
static unsigned rnd_below(unsigned n) { return (unsigned)(rnd() % n); }
static int chance(unsigned percent) { return rnd_below(100) < percent; }

typedef struct {
  char *p;
  size_t len, cap;
} sbuf;

static void sb_reserve(sbuf *b, size_t more) {
  if (b->len + more <= b->cap) return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) die("out of memory");
  b->p = p;
  b->cap = cap;
}
static void sb_put(sbuf *b, const char *s, size_t n) {
  sb_reserve(b, n);
  memcpy(b->p + b->len, s, n);
  b->len += n;
}
static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_printf(sbuf *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof tmp) die("sb_printf: line too long");
  sb_put(b, tmp, (size_t)n);
}

/* Appends raw UTF-8 text as the body of a JSON string: quotes, backslashes and control
 * bytes escaped, and `u_pct` percent of the non-ASCII characters (and of '<', '>', '&',
 * which some providers escape) written as \uXXXX (a surrogate pair above U+FFFF). */
static void sb_json_text(sbuf *b, const char *raw, unsigned u_pct) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)raw;
  while (*s) {
    unsigned c = *s;
    if (c < 0x80) {
      s++;
      switch (c) {
      case '"': sb_puts(b, "\\\""); break;
      case '\\': sb_puts(b, "\\\\"); break;
      case '\n': sb_puts(b, "\\n"); break;
      case '\t': sb_puts(b, "\\t"); break;
      case '\r': sb_puts(b, "\\r"); break;
      case '<': case '>': case '&':
        if (chance(u_pct)) sb_printf(b, "\\u%04X", c);
        else sb_put(b, (const char *)s - 1, 1);
        break;
      default:
        if (c < 0x20) sb_printf(b, "\\u%04x", c);
        else sb_put(b, (const char *)s - 1, 1);
      }
      continue;
    }
    size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    uint32_t cp = n == 4 ? c & 0x07 : n == 3 ? c & 0x0f : c & 0x1f;
    for (size_t i = 1; i < n; i++) cp = cp << 6 | (s[i] & 0x3f);
    if (chance(u_pct)) {
      if (cp >= 0x10000) {
        uint32_t v = cp - 0x10000;
        sb_printf(b, "\\u%04x\\u%04X", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
      } else {
        char e[7] = {'\\', 'u', hex[cp >> 12], hex[(cp >> 8) & 15], hex[(cp >> 4) & 15],
                     hex[cp & 15], 0};
        sb_puts(b, e);
      }
    } else {
      sb_put(b, (const char *)s, n);
    }
    s += n;
  }
}

static const char *const words[] = {
    "buffer", "token", "stream", "parser", "value", "index",  "count",  "delta",
    "frame",  "event", "chunk",  "state",  "offset", "length", "result", "cursor",
    "header", "record", "schema", "field", "queue",  "limit",  "table",  "reader"};
static const char *const uwords[] = {"café", "naïve", "Grüße", "übersicht", "señal",
                                     "→",    "—",     "…",     "✓",         "😀",
                                     "🚀",   "日本語", "Ελληνικά", "straße", "€"};
static const char *const cities[] = {"Zürich", "São Paulo", "Kraków",    "München", "Reykjavík",
                                     "Tokyo",  "Montréal",  "Malmö",     "Oslo",    "Αθήνα",
                                     "Nice",   "İstanbul",  "Ciudad de México"};
#define NWORDS (sizeof words / sizeof words[0])
#define NUWORDS (sizeof uwords / sizeof uwords[0])
#define NCITIES (sizeof cities / sizeof cities[0])

/* ---- workloads ---------------------------------------------------------------------- */

typedef struct {
  const char *name;
  char desc[160];
  char *buf;          /* all documents back to back */
  size_t len;         /* bytes in buf */
  size_t *doc_off;    /* document i is buf[doc_off[i] .. doc_off[i + 1]) */
  size_t ndocs;
  size_t max_doc;     /* longest document */
  uint64_t tokens;    /* reference count over all documents: containers twice (begin,
                         end), keys, strings, numbers and literals once */
  uint64_t containers;
  size_t max_doc_jsmn; /* most jsmn tokens in one document (tokens - containers) */
  unsigned max_depth;
} workload;

/* The reference scanner: counts tokens in valid JSON without checking it. */
static void ref_count(const char *p, size_t n, uint64_t *tokens, uint64_t *containers,
                      unsigned *max_depth) {
  uint64_t t = 0, c = 0;
  unsigned d = 0, md = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = p[i];
    if (ch == '{' || ch == '[') {
      c++;
      if (++d > md) md = d;
    } else if (ch == '}' || ch == ']') {
      d--;
    } else if (ch == '"') {
      t++;
      for (i++; p[i] != '"'; i++)
        if (p[i] == '\\') i++;
    } else if (ch == '-' || (ch >= '0' && ch <= '9') || ch == 't' || ch == 'f' || ch == 'n') {
      t++;
      while (i + 1 < n && strchr(",]} \t\r\n", p[i + 1]) == NULL) i++;
    }
  }
  *tokens = t + 2 * c;
  *containers = c;
  if (md > *max_depth) *max_depth = md;
}

static void wl_finish(workload *wl, sbuf *b, size_t *offs, size_t ndocs) {
  /* simdjson reads up to its padding past a document's end (the next document, or
   * these zero bytes after the last) */
  size_t pad = ts_bench_sj_padding();
  sb_reserve(b, pad);
  memset(b->p + b->len, 0, pad);
  wl->buf = b->p;
  wl->len = b->len;
  wl->doc_off = offs;
  wl->ndocs = ndocs;
  wl->tokens = wl->containers = 0;
  wl->max_doc = wl->max_doc_jsmn = 0;
  wl->max_depth = 0;
  for (size_t i = 0; i < ndocs; i++) {
    uint64_t t, c;
    size_t len = offs[i + 1] - offs[i];
    ref_count(wl->buf + offs[i], len, &t, &c, &wl->max_depth);
    wl->tokens += t;
    wl->containers += c;
    if (len > wl->max_doc) wl->max_doc = len;
    if (t - c > wl->max_doc_jsmn) wl->max_doc_jsmn = (size_t)(t - c);
  }
}

/* C leaves the order in which a call's arguments are evaluated unspecified, so a
 * template never draws random values inside its argument list: it draws them all, in
 * order, into a `draws` first. That keeps the bytes the same with every compiler. */
typedef struct {
  const char *w[7];    /* ASCII words */
  const char *u[3];    /* non-ASCII words */
  const char *city[2];
  unsigned n[6];       /* n[i] < 1,000,000 */
  int b[4];            /* coin flips */
} draws;

static void draw(draws *d) {
  for (size_t i = 0; i < 7; i++) d->w[i] = words[rnd_below(NWORDS)];
  for (size_t i = 0; i < 3; i++) d->u[i] = uwords[rnd_below(NUWORDS)];
  for (size_t i = 0; i < 2; i++) d->city[i] = cities[rnd_below(NCITIES)];
  for (size_t i = 0; i < 6; i++) d->n[i] = rnd_below(1000000);
  for (size_t i = 0; i < 4; i++) d->b[i] = chance(50);
}

/* One line of C-like source, raw (to be JSON-escaped). */
static void source_line(char *out, size_t cap) {
  unsigned kind = rnd_below(14);
  draws d;
  draw(&d);
  const char *const *w = d.w, *const *u = d.u;
  switch (kind) {
  case 0: snprintf(out, cap, "#include <%s.h>", w[0]); break;
  case 1: snprintf(out, cap, "#include \"%s/%s_%s.h\"", w[0], w[1], w[2]); break;
  case 2: snprintf(out, cap, "static int %s_%s(const char *s, size_t n) {", w[0], w[1]); break;
  case 3: snprintf(out, cap, "\tfor (size_t i = 0; i < n; i++) {"); break;
  case 4:
    snprintf(out, cap, "\t\tif (s[i] == '\\\\' || s[i] == '\"') return -1; /* %s */", w[0]);
    break;
  case 5: snprintf(out, cap, "\tprintf(\"%s: %%zu bytes\\n\", n);", w[0]); break;
  case 6:
    snprintf(out, cap, "\t/* %s %s %s see \"%s\" %s %s */", w[0], u[0], w[1], w[2], u[1], u[2]);
    break;
  case 7: snprintf(out, cap, "\treturn %s + %u;", w[0], d.n[0] % 1000); break;
  case 8: snprintf(out, cap, "}"); break;
  case 9: out[0] = 0; break;
  case 10:
    snprintf(out, cap, "\tconst char *msg = \"%s, \\\"%s\\\"\\t%s\";", u[0], w[0], u[1]);
    break;
  case 11:
    snprintf(out, cap, "// TODO(%s): handle %s %s <%s> & more", w[0], u[0], w[1], w[2]);
    break;
  case 12:
    snprintf(out, cap, "\tif (%s > 0x%x && %s <= %u) { %s = %s / 2; }", w[0], d.n[0] % 65536,
             w[1], d.n[1] % 100000, w[2], w[3]);
    break;
  default:
    snprintf(out, cap, "\t%s->%s[%u] = (%s_t){ .%s = %s, .%s = NULL };", w[0], w[1],
             d.n[0] % 64, w[2], w[3], w[4], w[5]);
  }
}

static void gen_w1(workload *wl) {
  sbuf b = {0};
  char line[400];
  draws d;
  draw(&d);
  sb_printf(&b, "{\"path\":\"src/%s/%s_%s.c\",\"content\":\"", d.w[0], d.w[1], d.w[2]);
  const char *tail = "\",\"mode\":\"overwrite\",\"create_dirs\":true,\"expected_sha\":null}";
  size_t target = 64 * 1024 - strlen(tail);
  while (b.len < target) {
    source_line(line, sizeof line);
    strcat(line, "\n");
    sb_json_text(&b, line, 25);
  }
  sb_puts(&b, tail);
  size_t *offs = xmalloc(2 * sizeof *offs);
  offs[0] = 0;
  offs[1] = b.len;
  wl->name = "W1";
  wl_finish(wl, &b, offs, 1);
  snprintf(wl->desc, sizeof wl->desc,
           "one write_file arguments object, %zu B, content: C source with escapes and UTF-8",
           wl->len);
}

/* One small tool-call arguments object (about 100-200 bytes). */
static void gen_small(sbuf *b) {
  unsigned kind = rnd_below(5);
  char t[200];
  draws d;
  draw(&d);
  const char *const *w = d.w, *const *u = d.u;
  const unsigned *n = d.n;
  switch (kind) {
  case 0:
    sb_puts(b, "{\"location\":\"");
    snprintf(t, sizeof t, "%s, %s", d.city[0], d.city[1]);
    sb_json_text(b, t, 20);
    sb_printf(b, "\",\"unit\":\"%s\",\"days\":%u,\"include_hourly\":%s,\"lat\":%s%u.%04u,"
                 "\"lon\":%s%u.%04u,\"source\":\"%s\"}",
              d.b[0] ? "celsius" : "fahrenheit", 1 + n[0] % 14, d.b[1] ? "true" : "false",
              d.b[2] ? "-" : "", n[1] % 90, n[2] % 10000, d.b[3] ? "-" : "", n[3] % 180,
              n[4] % 10000, w[0]);
    break;
  case 1:
    sb_puts(b, "{\"query\":\"");
    snprintf(t, sizeof t, "%s %s \"%s\" %s %s", w[0], u[0], w[1], w[2], u[1]);
    sb_json_text(b, t, 20);
    sb_printf(b, "\",\"max_results\":%u,\"safe_search\":%s,\"filters\":{\"lang\":\"en\","
                 "\"after\":\"2024-%02u-%02u\",\"sites\":[\"docs.rs\",\"github.com\"]}}",
              1 + n[0] % 50, d.b[0] ? "true" : "false", 1 + n[1] % 12, 1 + n[2] % 28);
    break;
  case 2:
    sb_printf(b, "{\"path\":\"/work/src/%s/%s_%s.c\",\"offset\":%u,\"limit\":%u,"
                 "\"encoding\":null,\"reason\":\"",
              w[0], w[1], w[2], n[0] % 100000, 1 + n[1] % 2000);
    snprintf(t, sizeof t, "check \"%s\" handling\tof %s %s", w[3], u[0], w[4]);
    sb_json_text(b, t, 20);
    sb_puts(b, "\"}");
    break;
  case 3:
    sb_printf(b, "{\"argv\":[\"git\",\"diff\",\"--stat\",\"%s/%s\"],\"timeout_ms\":%u,"
                 "\"env\":{\"LANG\":\"C.UTF-8\",\"PAGER\":\"cat\"},\"cwd\":\"/work/%s\","
                 "\"shell\":false}",
              w[0], w[1], 100 * (1 + n[0] % 600), w[2]);
    break;
  default:
    sb_printf(b, "{\"to\":[\"%s@example.com\"],\"subject\":\"", w[0]);
    snprintf(t, sizeof t, "Re: %s %s", w[1], u[0]);
    sb_json_text(b, t, 20);
    sb_puts(b, "\",\"body\":\"");
    snprintf(t, sizeof t, "Hi %s,\nsee \"%s\" %s\n", w[2], w[3], u[1]);
    sb_json_text(b, t, 20);
    sb_printf(b, "\",\"priority\":-%u.%03ue-2}", n[0] % 10, n[1] % 1000);
  }
}

static void gen_w2(workload *wl) {
  enum { N = 10000 };
  sbuf b = {0};
  size_t *offs = xmalloc((N + 1) * sizeof *offs);
  for (size_t i = 0; i < N; i++) {
    offs[i] = b.len;
    gen_small(&b);
  }
  offs[N] = b.len;
  wl->name = "W2";
  wl_finish(wl, &b, offs, N);
  snprintf(wl->desc, sizeof wl->desc,
           "%d small arguments objects, %zu B in all (mean %zu B, longest %zu B), a fresh "
           "parser each",
           N, wl->len, wl->len / N, wl->max_doc);
}

/* Appends a value enclosed by `depth` containers; no token is enclosed by more than
 * W3_MAX_DEPTH. A `deep` value is a container one of whose children is deep again,
 * so the chain reaches the deepest level. Keys are unique within an object (json-c
 * would merge duplicates and count fewer tokens). */
#define W3_MAX_DEPTH 20u
static void gen_value(sbuf *b, unsigned depth, int deep) {
  if (depth < W3_MAX_DEPTH && (deep || chance(depth <= 6 ? 28 : 20))) {
    unsigned n = deep ? 1 + rnd_below(3) : 1 + rnd_below(5);
    unsigned deep_at = deep ? rnd_below(n) : n;
    int obj = chance(55);
    sb_put(b, obj ? "{" : "[", 1);
    for (unsigned i = 0; i < n; i++) {
      if (i) sb_put(b, ",", 1);
      if (obj) sb_printf(b, "\"%s_%u\":", words[rnd_below(NWORDS)], i);
      gen_value(b, depth + 1, deep && i == deep_at && depth + 1 < W3_MAX_DEPTH);
    }
    sb_put(b, obj ? "}" : "]", 1);
    return;
  }
  unsigned kind = rnd_below(100), form = rnd_below(4);
  draws d;
  draw(&d);
  const char *const *w = d.w;
  if (kind < 30) {
    char t[120];
    switch (form) {
    case 0: snprintf(t, sizeof t, "%s", w[0]); break;
    case 1: snprintf(t, sizeof t, "%s %s", w[0], w[1]); break;
    case 2: snprintf(t, sizeof t, "%s \"%s\" %s", w[0], d.u[0], w[1]); break;
    default: snprintf(t, sizeof t, "%s/%s\\%s\n", w[0], d.u[0], w[1]);
    }
    sb_put(b, "\"", 1);
    sb_json_text(b, t, 20);
    sb_put(b, "\"", 1);
  } else if (kind < 65) {
    uint64_t big = rnd();
    sb_printf(b, "%s%" PRIu64, d.b[0] ? "-" : "", form ? (uint64_t)(d.n[0] % 1000) : big >> 34);
  } else if (kind < 80) {
    if (d.b[1])
      sb_printf(b, "%s%u.%u", d.b[0] ? "-" : "", d.n[0] % 1000, d.n[1]);
    else
      sb_printf(b, "%u.%u%s%d", 1 + d.n[0] % 9, d.n[1] % 1000, d.b[2] ? "e" : "E",
                (int)(d.n[2] % 60) - 30);
  } else {
    static const char *const lits[] = {"true", "false", "null"};
    sb_puts(b, lits[d.n[0] % 3]);
  }
}

static void gen_w3(workload *wl) {
  sbuf b = {0};
  sb_puts(&b, "{\"version\":3,\"generator\":\"json_bench\",\"items\":[");
  for (unsigned rec = 0; b.len < 1024 * 1024 - 64; rec++) {
    /* A record is an object of 3-8 members at depth 2 (inside the top object and the
     * items array); one record in 16 carries a chain down to the deepest level. */
    unsigned n = 3 + rnd_below(6);
    unsigned deep_at = rec % 16 == 0 ? rnd_below(n) : n;
    if (rec) sb_put(&b, ",", 1);
    sb_printf(&b, "{\"id\":%u", rec);
    for (unsigned i = 0; i < n; i++) {
      sb_printf(&b, ",\"%s_%u\":", words[rnd_below(NWORDS)], i);
      gen_value(&b, 3, i == deep_at);
    }
    sb_put(&b, "}", 1);
  }
  sb_puts(&b, "]}");
  size_t *offs = xmalloc(2 * sizeof *offs);
  offs[0] = 0;
  offs[1] = b.len;
  wl->name = "W3";
  wl_finish(wl, &b, offs, 1);
  snprintf(wl->desc, sizeof wl->desc,
           "one document of nested records, %zu B, %" PRIu64 " tokens, nesting up to %u",
           wl->len, wl->tokens, wl->max_depth);
}

/* ---- parsers ------------------------------------------------------------------------
 * Each parser's state starts with `common`; the driver resets and reads it. */

typedef struct {
  uint64_t count; /* tokens completed (the reference scanner's unit, see workload) */
  uint64_t sum;   /* bytes of token text seen: the callbacks' "real work" */
  int verify;     /* the correctness pass: json-c walks its tree to count */
  char why[160];  /* what went wrong */
} common;

/* toolstream */
typedef struct {
  common c;
  ts_json_tok t;
} ts_state;

static int ts_cb(void *user, const ts_json_token *tok) {
  common *c = user;
  c->sum += tok->len;
  c->count += (tok->flags & TS_JSON_LAST) != 0;
  return 0;
}
static int ts_begin(void *st) {
  ts_state *s = st;
  int e = ts_json_tok_init(&s->t, 0, ts_cb, s);
  if (e) snprintf(s->c.why, sizeof s->c.why, "init: %s", ts_err_name(e));
  return e != 0;
}
static int ts_feed(void *st, const char *p, size_t n) {
  ts_state *s = st;
  int e = ts_json_tok_feed(&s->t, p, n);
  if (e)
    snprintf(s->c.why, sizeof s->c.why, "%s at stream offset %" PRIu64, ts_err_name(e),
             ts_json_tok_error_offset(&s->t));
  return e != 0;
}
static int ts_end(void *st) {
  ts_state *s = st;
  int e = ts_json_tok_finish(&s->t);
  if (e) snprintf(s->c.why, sizeof s->c.why, "finish: %s", ts_err_name(e));
  else if (!ts_json_tok_done(&s->t)) snprintf(s->c.why, sizeof s->c.why, "finish: not done");
  else return 0;
  return 1;
}
static void ts_drop(void *st) { (void)st; }

/* yajl: every callback counts one token, as the reference scanner does. */
typedef struct {
  common c;
  yajl_handle h;
} yajl_state;

static int y_one(void *ctx) {
  ((common *)ctx)->count++;
  return 1;
}
static int y_bool(void *ctx, int v) {
  ((common *)ctx)->count++;
  ((common *)ctx)->sum += (unsigned)v;
  return 1;
}
static int y_text(void *ctx, const char *s, size_t n) {
  (void)s;
  ((common *)ctx)->count++;
  ((common *)ctx)->sum += n;
  return 1;
}
static int y_utext(void *ctx, const unsigned char *s, size_t n) {
  (void)s;
  ((common *)ctx)->count++;
  ((common *)ctx)->sum += n;
  return 1;
}
/* yajl_number (the raw text) is set, so yajl converts no number. */
static const yajl_callbacks yajl_cbs = {y_one,   y_bool,  NULL,  NULL,  y_text, y_utext,
                                        y_one,   y_utext, y_one, y_one, y_one};

static void y_why(yajl_state *s, const char *what, const char *p, size_t n) {
  unsigned char *e = yajl_get_error(s->h, 0, (const unsigned char *)p, n);
  snprintf(s->c.why, sizeof s->c.why, "%s: %s", what, e ? (const char *)e : "?");
  if (e) yajl_free_error(s->h, e);
}
static int y_begin(void *st) {
  yajl_state *s = st;
  s->h = yajl_alloc(&yajl_cbs, NULL, s);
  if (!s->h) snprintf(s->c.why, sizeof s->c.why, "yajl_alloc failed");
  return s->h == NULL;
}
static int y_feed(void *st, const char *p, size_t n) {
  yajl_state *s = st;
  if (yajl_parse(s->h, (const unsigned char *)p, n) == yajl_status_ok) return 0;
  y_why(s, "yajl_parse", p, n);
  return 1;
}
static int y_end(void *st) {
  yajl_state *s = st;
  int bad = yajl_complete_parse(s->h) != yajl_status_ok;
  if (bad) y_why(s, "yajl_complete_parse", "", 0);
  yajl_free(s->h);
  s->h = NULL;
  return bad;
}
static void y_drop(void *st) {
  yajl_state *s = st;
  if (s->h) yajl_free(s->h);
  s->h = NULL;
}

/* json-c: builds a tree; the timed passes just free it, the correctness pass counts it
 * (an object or array counts 2, a key 1, a scalar 1, as the reference scanner does). */
typedef struct {
  common c;
  struct json_tokener *tok;
  struct json_object *obj;
  size_t last_n;
} jsonc_state;

static uint64_t jc_count(struct json_object *o) {
  uint64_t n = 2;
  switch (json_object_get_type(o)) {
  case json_type_object: {
    json_object_object_foreach(o, key, val) {
      (void)key;
      n += 1 + jc_count(val);
    }
    return n;
  }
  case json_type_array:
    for (size_t i = 0, len = json_object_array_length(o); i < len; i++)
      n += jc_count(json_object_array_get_idx(o, i));
    return n;
  default: return 1;
  }
}
static int jc_begin(void *st) {
  jsonc_state *s = st;
  s->obj = NULL;
  s->tok = json_tokener_new();
  if (!s->tok) snprintf(s->c.why, sizeof s->c.why, "json_tokener_new failed");
  return s->tok == NULL;
}
static int jc_feed(void *st, const char *p, size_t n) {
  jsonc_state *s = st;
  if (s->obj) {
    snprintf(s->c.why, sizeof s->c.why, "bytes after the complete value");
    return 1;
  }
  s->obj = json_tokener_parse_ex(s->tok, p, (int)n);
  if (s->obj) {
    if (json_tokener_get_parse_end(s->tok) == n) return 0;
    snprintf(s->c.why, sizeof s->c.why, "value ended before the input");
    return 1;
  }
  enum json_tokener_error e = json_tokener_get_error(s->tok);
  if (e == json_tokener_continue) return 0;
  snprintf(s->c.why, sizeof s->c.why, "json_tokener_parse_ex: %s", json_tokener_error_desc(e));
  return 1;
}
static int jc_end(void *st) {
  jsonc_state *s = st;
  int bad = s->obj == NULL;
  if (bad) snprintf(s->c.why, sizeof s->c.why, "input ended without a complete value");
  else if (s->c.verify) s->c.count += jc_count(s->obj);
  json_object_put(s->obj);
  json_tokener_free(s->tok);
  s->obj = NULL;
  s->tok = NULL;
  return bad;
}
static void jc_drop(void *st) {
  jsonc_state *s = st;
  if (s->obj) json_object_put(s->obj);
  if (s->tok) json_tokener_free(s->tok);
  s->obj = NULL;
  s->tok = NULL;
}

/* jsmn: the caller's buffer grows by each delta and jsmn_parse resumes over it. Its
 * count is tokens - containers (it has no end tokens). */
typedef struct {
  common c;
  jsmn_parser p;
  char *acc;
  size_t fill;
  jsmntok_t *toks;
  unsigned ntoks;
  int r;
} jsmn_state;

static int jm_begin(void *st) {
  jsmn_state *s = st;
  jsmn_init(&s->p);
  s->fill = 0;
  s->r = JSMN_ERROR_PART;
  return 0;
}
static int jm_feed(void *st, const char *p, size_t n) {
  jsmn_state *s = st;
  memcpy(s->acc + s->fill, p, n);
  s->fill += n;
  s->r = jsmn_parse(&s->p, s->acc, s->fill, s->toks, s->ntoks);
  if (s->r >= 0 || s->r == JSMN_ERROR_PART) return 0;
  snprintf(s->c.why, sizeof s->c.why, "jsmn_parse: %s",
           s->r == JSMN_ERROR_NOMEM ? "out of tokens" : "invalid");
  return 1;
}
static int jm_end(void *st) {
  jsmn_state *s = st;
  if (s->r >= 0) {
    s->c.count += (unsigned)s->r;
    return 0;
  }
  snprintf(s->c.why, sizeof s->c.why, "input ended with jsmn still asking for more");
  return 1;
}
static void jm_drop(void *st) { (void)st; }

/* simdjson: the DOM parser, fed whole documents only (json_bench_simdjson.cpp). */
typedef struct {
  common c;
  ts_bench_sj *h;
} sj_state;

static int sj_begin(void *st) {
  (void)st;
  return 0;
}
static int sj_feed(void *st, const char *p, size_t n) {
  sj_state *s = st;
  return ts_bench_sj_parse(s->h, p, n, s->c.verify, &s->c.count, s->c.why, sizeof s->c.why);
}
static int sj_end(void *st) {
  (void)st;
  return 0;
}
static void sj_drop(void *st) { (void)st; }

/* memcpy: the floor. */
typedef struct {
  common c;
  char *dst;
  size_t fill;
} copy_state;

static int cp_begin(void *st) {
  ((copy_state *)st)->fill = 0;
  return 0;
}
static int cp_feed(void *st, const char *p, size_t n) {
  copy_state *s = st;
  memcpy(s->dst + s->fill, p, n);
  s->fill += n;
  return 0;
}
static int cp_end(void *st) {
  copy_state *s = st;
  s->c.sum += (unsigned char)s->dst[s->fill - 1];
  return 0;
}
static void cp_drop(void *st) { (void)st; }

/* ---- the driver ----------------------------------------------------------------------
 * One pass feeds every document of a workload in deltas of `delta` bytes (0: whole).
 * It is written once and inlined into each parser's pass function, where the calls
 * through the function pointers become direct calls. Every CHECK_BYTES or so it looks
 * at the clock and gives up after `deadline` (0: never). */

typedef struct {
  uint64_t bytes; /* bytes fed (all of them if complete) */
  uint64_t feeds; /* feed calls */
  uint64_t count; /* tokens counted by the parser */
  int complete;   /* every document parsed */
  int failed;     /* a parser error; why says which */
  char why[240];
} pass_result;

#define CHECK_BYTES 4096u

static inline __attribute__((always_inline)) void
drive(const workload *wl, size_t delta, double deadline, void *st, int (*begin)(void *),
      int (*feed)(void *, const char *, size_t), int (*end)(void *), void (*drop)(void *),
      pass_result *r) {
  common *c = st;
  uint64_t done = 0, feeds = 0;
  size_t since = 0;
  c->count = c->sum = 0;
  r->complete = r->failed = 0;
  r->why[0] = 0;
  for (size_t i = 0; i < wl->ndocs; i++) {
    const char *p = wl->buf + wl->doc_off[i];
    size_t len = wl->doc_off[i + 1] - wl->doc_off[i];
    size_t step = delta && delta < len ? delta : len;
    size_t off = 0;
    if (begin(st)) goto failed;
    while (off < len) {
      size_t stop = len - off > CHECK_BYTES ? off + CHECK_BYTES : len;
      size_t from = off;
      do {
        size_t n = len - off < step ? len - off : step;
        if (feed(st, p + off, n)) {
          drop(st);
          goto failed;
        }
        off += n;
        feeds++;
      } while (off < stop);
      since += off - from;
      if (deadline > 0 && since >= CHECK_BYTES) {
        since = 0;
        if (now() > deadline) {
          drop(st);
          r->bytes = done + off;
          r->feeds = feeds;
          return;
        }
      }
    }
    if (end(st)) goto failed;
    done += len;
    continue;
  failed:
    r->failed = 1;
    r->bytes = done + off;
    r->feeds = feeds;
    snprintf(r->why, sizeof r->why, "document %zu, delta at byte %zu: %s", i, off, c->why);
    return;
  }
  r->bytes = done;
  r->feeds = feeds;
  r->count = c->count;
  r->complete = 1;
}

typedef void (*pass_fn)(void *st, const workload *wl, size_t delta, double deadline,
                        pass_result *r);

static void pass_ts(void *st, const workload *wl, size_t d, double dl, pass_result *r) {
  drive(wl, d, dl, st, ts_begin, ts_feed, ts_end, ts_drop, r);
}
static void pass_yajl(void *st, const workload *wl, size_t d, double dl, pass_result *r) {
  drive(wl, d, dl, st, y_begin, y_feed, y_end, y_drop, r);
}
static void pass_jsonc(void *st, const workload *wl, size_t d, double dl, pass_result *r) {
  drive(wl, d, dl, st, jc_begin, jc_feed, jc_end, jc_drop, r);
}
static void pass_jsmn(void *st, const workload *wl, size_t d, double dl, pass_result *r) {
  drive(wl, d, dl, st, jm_begin, jm_feed, jm_end, jm_drop, r);
}
static void pass_simdjson(void *st, const workload *wl, size_t d, double dl, pass_result *r) {
  drive(wl, d, dl, st, sj_begin, sj_feed, sj_end, sj_drop, r);
}
static void pass_copy(void *st, const workload *wl, size_t d, double dl, pass_result *r) {
  drive(wl, d, dl, st, cp_begin, cp_feed, cp_end, cp_drop, r);
}

/* State for one parser on one workload: buffers sized for its longest document. */
static void *setup(int parser, const workload *wl) {
  switch (parser) {
  case 0: {
    ts_state *s = xmalloc(sizeof *s);
    memset(s, 0, sizeof *s);
    return s;
  }
  case 1: {
    yajl_state *s = xmalloc(sizeof *s);
    memset(s, 0, sizeof *s);
    return s;
  }
  case 2: {
    jsonc_state *s = xmalloc(sizeof *s);
    memset(s, 0, sizeof *s);
    return s;
  }
  case 3: {
    jsmn_state *s = xmalloc(sizeof *s);
    memset(s, 0, sizeof *s);
    s->acc = xmalloc(wl->max_doc);
    s->ntoks = (unsigned)wl->max_doc_jsmn + 16;
    s->toks = xmalloc(s->ntoks * sizeof *s->toks);
    return s;
  }
  case 4: {
    sj_state *s = xmalloc(sizeof *s);
    memset(s, 0, sizeof *s);
    s->h = ts_bench_sj_new();
    if (!s->h) die("out of memory");
    return s;
  }
  default: {
    copy_state *s = xmalloc(sizeof *s);
    memset(s, 0, sizeof *s);
    s->dst = xmalloc(wl->max_doc);
    return s;
  }
  }
}
static void teardown(int parser, void *st) {
  if (parser == 3) {
    free(((jsmn_state *)st)->acc);
    free(((jsmn_state *)st)->toks);
  } else if (parser == 4) {
    ts_bench_sj_free(((sj_state *)st)->h);
  } else if (parser == 5) {
    free(((copy_state *)st)->dst);
  }
  free(st);
}

enum { P_TS, P_YAJL, P_JSONC, P_JSMN, P_SIMDJSON, P_COPY, NPARSERS };
static const char *const parser_name[NPARSERS] = {"toolstream", "yajl", "json-c", "jsmn",
                                                  "simdjson", "memcpy"};
static const pass_fn parser_pass[NPARSERS] = {pass_ts,   pass_yajl,     pass_jsonc,
                                              pass_jsmn, pass_simdjson, pass_copy};
/* simdjson parses whole documents only: its cells at a delta do not exist. */
static int cell_exists(int parser, size_t delta) { return parser != P_SIMDJSON || delta == 0; }

/* The token count a parser must report for a workload (memcpy counts nothing). */
static uint64_t expected_count(int parser, const workload *wl) {
  switch (parser) {
  case P_JSMN: return wl->tokens - wl->containers;
  case P_COPY: return 0;
  default: return wl->tokens;
  }
}

/* The one pass that --only measures under callgrind (--toggle-collect=bench_pass). */
__attribute__((noinline, noclone)) void bench_pass(int parser, void *st, const workload *wl,
                                                    size_t delta, pass_result *r);
__attribute__((noinline, noclone)) void bench_pass(int parser, void *st, const workload *wl,
                                                    size_t delta, pass_result *r) {
  parser_pass[parser](st, wl, delta, 0, r);
}

/* ---- measuring -------------------------------------------------------------------------- */

static double opt_budget = 0.8; /* seconds of repetitions per cell, over all rounds */
static int opt_rounds = 3;      /* the matrix is measured this many times, best kept */
static double opt_cap = 2.0;    /* seconds after which a pass is stopped */
static const char *opt_workload; /* measure only this workload (NULL: all) */
static const char *opt_parser;   /* ... only toolstream and this parser (NULL: all) */

typedef struct {
  double mbps;    /* MB/s (10^6 bytes per second) */
  int partial;    /* stopped by the cap: rate from a prefix */
  int failed;
  int skipped;    /* left out by --workload / --parser */
  int absent;     /* no such cell: simdjson at a delta */
  int samples;
  char why[240];
} cell;

static cell measure(int parser, const workload *wl, size_t delta, double budget) {
  cell out = {0};
  void *st = setup(parser, wl);
  common *c = st;
  pass_result r;
  /* The warm-up pass is also the correctness pass. */
  c->verify = 1;
  double t0 = now();
  parser_pass[parser](st, wl, delta, t0 + opt_cap, &r);
  double first = now() - t0;
  c->verify = 0;
  if (r.failed) {
    out.failed = 1;
    snprintf(out.why, sizeof out.why, "%s", r.why);
  } else if (!r.complete) {
    out.partial = 1;
    out.samples = 1;
    out.mbps = (double)r.bytes / first / 1e6;
  } else if (parser != P_COPY && r.count != expected_count(parser, wl)) {
    out.failed = 1;
    snprintf(out.why, sizeof out.why, "counted %" PRIu64 " tokens, the reference %" PRIu64,
             r.count, expected_count(parser, wl));
  } else {
    /* Repetitions of k passes each (k passes last at least ~2 ms), best per pass. */
    double best = first, spent = 0;
    unsigned k = first >= 2e-3 ? 1 : (unsigned)(2e-3 / first) + 1;
    int samples = 0;
    while (first < budget && samples < 40 && (samples < 3 || spent < budget)) {
      double s0 = now();
      for (unsigned i = 0; i < k; i++) parser_pass[parser](st, wl, delta, 0, &r);
      double t = now() - s0;
      if (r.failed || !r.complete) die("%s on %s failed on a repetition", parser_name[parser], wl->name);
      spent += t;
      if (t / k < best || samples == 0) best = t / k;
      samples++;
    }
    out.samples = samples ? samples : 1;
    out.mbps = (double)wl->len / best / 1e6;
  }
  teardown(parser, st);
  return out;
}

/* ---- the report ------------------------------------------------------------------------ */

#define NDELTAS 4
static const size_t deltas[NDELTAS] = {4, 16, 64, 0};
static const char *delta_name(size_t d) {
  static char buf[4][24];
  static int k;
  if (!d) return "whole";
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%zu", d);
  return buf[k];
}

/* "at 16-byte deltas" / "whole" */
static const char *delta_words(size_t d) {
  static char buf[4][40];
  static int k;
  if (!d) return "fed whole";
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "at %zu-byte deltas", d);
  return buf[k];
}

static void fmt_rate(char *out, size_t cap, double mbps) {
  if (mbps >= 100) snprintf(out, cap, "%.0f", mbps);
  else if (mbps >= 10) snprintf(out, cap, "%.1f", mbps);
  else snprintf(out, cap, "%.2f", mbps);
}
static void fmt_ratio(char *out, size_t cap, double x) {
  if (x >= 100) snprintf(out, cap, "%.0fx", x);
  else if (x >= 10) snprintf(out, cap, "%.1fx", x);
  else snprintf(out, cap, "%.2fx", x);
}

static cell results[3][NDELTAS][NPARSERS];
static workload wls[3];

/* Target lines: one per target, MET or NOT MET with the worst case and the gap. */
static int targets_unmet;
static void target_line(const char *what, int met, const char *detail) {
  printf("- %s: %s (%s)\n", what, met ? "MET" : "NOT MET", detail);
  if (!met) targets_unmet++;
}

static void check_ratio(const char *what, int w, const int *ds, int nds, int peer,
                        double want) {
  double worst = DBL_MAX;
  int worst_d = 0, ok = 1, fails = 0, skipped = 0;
  for (int i = 0; i < nds; i++) {
    cell *t = &results[w][ds[i]][P_TS], *p = &results[w][ds[i]][peer];
    if (t->skipped || p->skipped) {
      skipped++;
      continue;
    }
    if (t->failed || t->partial || p->failed) {
      fails++;
      continue;
    }
    double x = t->mbps / p->mbps;
    if (x < worst) {
      worst = x;
      worst_d = ds[i];
    }
  }
  char detail[200];
  if (skipped) {
    printf("- %s: not measured in this run\n", what);
    return;
  }
  if (fails) {
    snprintf(detail, sizeof detail, "%d cell(s) failed", fails);
    ok = 0;
  } else {
    ok = worst >= want;
    if (ok)
      snprintf(detail, sizeof detail, "lowest %.1fx, %s", worst, delta_words(deltas[worst_d]));
    else
      snprintf(detail, sizeof detail, "%.2fx %s: %.2fx short", worst,
               delta_words(deltas[worst_d]), want / worst);
  }
  target_line(what, ok, detail);
}

static void check_rate(const char *what, int w, int di, double want) {
  cell *t = &results[w][di][P_TS];
  char detail[200];
  if (t->skipped) {
    printf("- %s: not measured in this run\n", what);
    return;
  }
  int ok = !t->failed && t->mbps >= want;
  if (t->failed) snprintf(detail, sizeof detail, "failed");
  else if (ok) snprintf(detail, sizeof detail, "%.0f MB/s", t->mbps);
  else snprintf(detail, sizeof detail, "%.0f MB/s: %.2fx short", t->mbps, want / t->mbps);
  target_line(what, ok, detail);
}

static void report(void) {
  printf("\n| workload | delta | toolstream MB/s | yajl MB/s (ts/yajl) | json-c MB/s (ts/json-c) "
         "| jsmn MB/s (ts/jsmn) | simdjson MB/s (ts/simdjson) | memcpy MB/s (ts/memcpy) |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int w = 0; w < 3; w++) {
    for (int d = 0; d < NDELTAS; d++) {
      cell *t = &results[w][d][P_TS];
      char rate[32], ratio[32];
      fmt_rate(rate, sizeof rate, t->mbps);
      if (t->skipped) continue;
      printf("| %s | %s | %s%s |", wls[w].name, delta_name(deltas[d]), t->failed ? "FAIL" : rate,
             t->partial ? " ~" : "");
      for (int p = P_YAJL; p < NPARSERS; p++) {
        cell *c = &results[w][d][p];
        if (c->failed || c->skipped || c->absent) {
          printf(" %s |", c->failed ? "FAIL" : "-");
          continue;
        }
        fmt_rate(rate, sizeof rate, c->mbps);
        fmt_ratio(ratio, sizeof ratio, t->mbps / c->mbps);
        printf(" %s%s (%s%s) |", c->partial ? "~" : "", rate, c->partial ? ">" : "",
               t->failed ? "-" : ratio);
      }
      printf("\n");
    }
  }
  printf("\n'~' = the pass was stopped after %.1f s and the rate is that of the prefix it "
         "reached; for a\nparser that slows down as the document grows that is an upper "
         "bound, so the ratio ('>') is a lower bound.\n",
         opt_cap);

  int any_fail = 0;
  for (int w = 0; w < 3; w++)
    for (int d = 0; d < NDELTAS; d++)
      for (int p = 0; p < NPARSERS; p++)
        if (results[w][d][p].failed) {
          if (!any_fail) printf("\nFailures:\n");
          any_fail = 1;
          printf("- %s %s-byte deltas, %s: %s\n", wls[w].name, delta_name(deltas[d]),
                 parser_name[p], results[w][d][p].why);
        }
  printf("\nCorrectness: every cell not marked FAIL accepted every document and counted the "
         "reference number\nof tokens (cells marked '~' parsed their prefix without error).\n");

  printf("\nTargets:\n");
  /* No peer ahead of toolstream anywhere. */
  {
    double worst = DBL_MAX;
    int ww = 0, wd = 0, wp = 0, fails = 0;
    if (opt_workload || opt_parser) {
      printf("- no peer ahead of toolstream: not judged on a partial run\n");
      goto ratios;
    }
    for (int w = 0; w < 3; w++)
      for (int d = 0; d < NDELTAS; d++)
        for (int p = P_YAJL; p <= P_SIMDJSON; p++) {
          cell *t = &results[w][d][P_TS], *c = &results[w][d][p];
          if (t->skipped || c->skipped || c->absent) continue;
          if (t->failed || c->failed) {
            fails += t->failed;
            continue;
          }
          double x = t->mbps / c->mbps;
          if (x < worst) {
            worst = x;
            ww = w;
            wd = d;
            wp = p;
          }
        }
    char detail[200];
    if (fails) snprintf(detail, sizeof detail, "toolstream failed in %d cell(s)", fails);
    else if (worst >= 1)
      snprintf(detail, sizeof detail, "closest: %s on %s %s, toolstream %.2fx", parser_name[wp],
               wls[ww].name, delta_words(deltas[wd]), worst);
    else
      snprintf(detail, sizeof detail, "%s ahead on %s %s: toolstream %.2fx, %.2fx short",
               parser_name[wp], wls[ww].name, delta_words(deltas[wd]), worst, 1 / worst);
    target_line("no peer ahead of toolstream on any workload at any delta", !fails && worst >= 1,
                detail);
  }
ratios:;
  static const int small3[] = {0, 1, 2}, all4[] = {0, 1, 2, 3};
  check_ratio("W1 >= 10x json-c at 4-, 16- and 64-byte deltas", 0, small3, 3, P_JSONC, 10);
  check_rate("W1 >= 1000 MB/s at 16-byte deltas", 0, 1, 1000);
  check_rate("W1 >= 2500 MB/s at 64-byte deltas", 0, 2, 2500);
  check_ratio("W2 >= 2x yajl (every delta)", 1, all4, 4, P_YAJL, 2);
  check_ratio("W2 >= 5x json-c (every delta)", 1, all4, 4, P_JSONC, 5);
  check_ratio("W3 >= 2x yajl (every delta)", 2, all4, 4, P_YAJL, 2);
  check_ratio("W3 >= 5x json-c (every delta)", 2, all4, 4, P_JSONC, 5);
  check_rate("W1 >= 400 MB/s at 4-byte deltas", 0, 0, 400);
  check_rate("W2 >= 400 MB/s at 4-byte deltas", 1, 0, 400);
  check_rate("W3 >= 400 MB/s at 4-byte deltas", 2, 0, 400);
  if (opt_workload || opt_parser)
    printf("\nA partial run (--workload / --parser): targets need the full run.\n");
  else
    printf("\n%d target(s) not met.\n", targets_unmet);
}

/* ---- main ---------------------------------------------------------------------------- */

static void usage(void) {
  fprintf(stderr,
          "usage: json_bench [--scan16] [--budget SECONDS] [--rounds N] [--cap SECONDS] [--workload W] [--parser P]\n"
          "       json_bench [--scan16] --only W1|W2|W3 4|16|64|whole toolstream|yajl|json-c|jsmn|simdjson|memcpy\n"
          "       json_bench --dump W1|W2|W3\n"
          "  --budget  time spent repeating each cell, over all rounds (default %.1f)\n"
          "  --rounds  measure the whole matrix N times, keep each cell's best (default %d)\n"
          "  --cap     a pass is stopped after this long (default %.1f)\n"
          "  --workload W, --parser P: measure only workload W, only toolstream and P\n"
          "  --only    one pass of one cell, for callgrind (--toggle-collect=bench_pass)\n"
          "  --dump    write the workload's documents to stdout, one per line\n"
          "  --scan16  toolstream's string bodies 16 bytes a step even where the CPU has AVX2\n"
          "            (as on one without it; before --only)\n",
          opt_budget, opt_rounds, opt_cap);
  exit(2);
}

static void generate(int w) {
  rng_state = 0x746f6f6c73747265u + (uint64_t)w; /* each workload from its own seed */
  if (w == 0) gen_w1(&wls[0]);
  else if (w == 1) gen_w2(&wls[1]);
  else gen_w3(&wls[2]);
}

static int workload_index(const char *name) {
  static const char *const names[3] = {"W1", "W2", "W3"};
  for (int i = 0; i < 3; i++)
    if (!strcmp(name, names[i])) return i;
  return -1;
}

static int parser_index(const char *name) {
  for (int i = 0; i < NPARSERS; i++)
    if (!strcmp(name, parser_name[i])) return i;
  return -1;
}

static int run_dump(const char *wname) {
  int w = workload_index(wname);
  if (w < 0) usage();
  generate(w);
  for (size_t i = 0; i < wls[w].ndocs; i++) {
    fwrite(wls[w].buf + wls[w].doc_off[i], 1, wls[w].doc_off[i + 1] - wls[w].doc_off[i], stdout);
    fputc('\n', stdout);
  }
  return 0;
}

static int run_only(const char *wname, const char *dname, const char *pname) {
  int w = workload_index(wname), p = parser_index(pname);
  size_t d;
  if (!strcmp(dname, "whole")) d = 0;
  else d = (size_t)strtoul(dname, NULL, 10);
  if (w < 0 || p < 0 || (d == 0 && strcmp(dname, "whole"))) usage();
  if (!cell_exists(p, d)) {
    fprintf(stderr, "json_bench: %s parses whole documents only (delta: whole)\n", pname);
    return 2;
  }
  generate(w);
  void *st = setup(p, &wls[w]);
  pass_result r;
  bench_pass(p, st, &wls[w], d, &r);
  if (r.failed || !r.complete) {
    fprintf(stderr, "json_bench: %s on %s failed: %s\n", pname, wname, r.why);
    return 1;
  }
  /* json-c and simdjson count only in the correctness pass (they walk their trees). */
  if (p != P_COPY && p != P_JSONC && p != P_SIMDJSON && r.count != expected_count(p, &wls[w])) {
    fprintf(stderr, "json_bench: %s on %s counted %" PRIu64 " tokens, reference %" PRIu64 "\n",
            pname, wname, r.count, expected_count(p, &wls[w]));
    return 1;
  }
  printf("bytes=%" PRIu64 " feeds=%" PRIu64 " docs=%zu\n", r.bytes, r.feeds, wls[w].ndocs);
  teardown(p, st);
  return 0;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--only") && argc - i > 3)
      return run_only(argv[i + 1], argv[i + 2], argv[i + 3]);
    else if (!strcmp(argv[i], "--dump") && argc - i > 1)
      return run_dump(argv[i + 1]);
    else if (!strcmp(argv[i], "--scan16")) ts__json_tok_wide(0);
    else if (!strcmp(argv[i], "--budget") && i + 1 < argc) opt_budget = atof(argv[++i]);
    else if (!strcmp(argv[i], "--cap") && i + 1 < argc) opt_cap = atof(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) opt_rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--workload") && i + 1 < argc) opt_workload = argv[++i];
    else if (!strcmp(argv[i], "--parser") && i + 1 < argc) opt_parser = argv[++i];
    else usage();
  }
  if (!(opt_budget >= 0) || !(opt_cap > 0) || opt_rounds < 1) usage();
  if (opt_workload && workload_index(opt_workload) < 0) usage();
  if (opt_parser && parser_index(opt_parser) < 0) usage();

  for (int w = 0; w < 3; w++) generate(w);
  printf("json_bench: JSON tokenizers fed in deltas (MB = 10^6 bytes; best of repetitions, "
         "%.1f s per cell over %d rounds)\n",
         opt_budget, opt_rounds);
  printf("built: %s, flags:%s\n", TS_BENCH_CC, TS_BENCH_CFLAGS);
  printf("toolstream string scan: %s\n",
         ts__json_tok_wide(-1) ? "32 bytes a step (AVX2, chosen at run time)" : "16 bytes a step");
  printf("peers: yajl %d.%d.%d, json-c %s (default flags), jsmn 1.1 (JSMN_STRICT, JSMN_PARENT_LINKS, resumed), "
         "%s (DOM, whole documents only, one parser reused)\n",
         yajl_version() / 10000, yajl_version() / 100 % 100, yajl_version() % 100,
         json_c_version(), ts_bench_sj_describe());
  for (int w = 0; w < 3; w++) printf("%s: %s\n", wls[w].name, wls[w].desc);
  fflush(stdout);

  double t0 = now();
  for (int round = 0; round < opt_rounds; round++)
    for (int w = 0; w < 3; w++)
      for (int d = 0; d < NDELTAS; d++)
        for (int p = 0; p < NPARSERS; p++) {
          cell *c = &results[w][d][p];
          if (!cell_exists(p, deltas[d])) {
            c->absent = 1;
            continue;
          }
          if ((opt_workload && w != workload_index(opt_workload)) ||
              (opt_parser && p != P_TS && p != parser_index(opt_parser))) {
            c->skipped = 1;
            continue;
          }
          /* A failed cell stays failed; a capped one is not worth repeating. */
          if (round > 0 && (c->failed || c->partial)) continue;
          cell m = measure(p, &wls[w], deltas[d], opt_budget / opt_rounds);
          if (round == 0 || m.failed || m.partial) *c = m;
          else if (m.mbps > c->mbps) c->mbps = m.mbps;
          if (isatty(2))
            fprintf(stderr, "\rround %d/%d: %s %-5s %-10s (%.0f s)    ", round + 1, opt_rounds,
                    wls[w].name, delta_name(deltas[d]), parser_name[p], now() - t0);
        }
  if (isatty(2)) fprintf(stderr, "\n");
  report();

  int failed = 0;
  for (int w = 0; w < 3; w++)
    for (int d = 0; d < NDELTAS; d++)
      for (int p = 0; p < NPARSERS; p++) failed |= results[w][d][p].failed;
  return failed ? 1 : 0;
}
