/*
 * adapter_test.c: tests for the provider adapters (stream/adapter.c and the
 * provider modules openai_chat.c, openai_responses.c, anthropic.c, gemini.c).
 *
 * Method: an SSE stream (a corpus file, or a row of the tables below) is cut into
 * events by a small test-only splitter, fed event by event, finished, and everything
 * the adapter reports is rendered into one compact trace that must equal the gold
 * trace of the row. Each row runs twice: with its format named, and with TS_FORMAT_AUTO
 * (same trace expected, unless the row says detection differs).
 *
 * Trace rendering (events joined with " | "):
 *   X 'text'           TEXT_DELTA
 *   B<i> <id> <name>   CALL_BEGIN (an empty id or name shows as -)
 *   A<i> 'fragment'    CALL_ARGS
 *   E<i>               CALL_END
 *   T stop=<s> usage=<u>   TURN_END (usage= left out when empty)
 *   !<code>[/T] ['msg']    ERROR; /T when terminal; the message only when it is not
 *                          the error table's own message for the code
 * Quoted text is shown raw, except bytes below 0x20 (\n, \r, \t, \xNN).
 *
 * Readability: in the tables, a backtick stands for a double quote; both the stream
 * and the gold trace go through tick() before use, so `a` is "a" and \\` is \".
 *
 * Every run also checks, without a ck_assert inside the measured window (check
 * allocates when it records an assert): no allocation between the first feed and the
 * end of finish; each feed and finish return the first error they reported (or
 * TS_E_OK); per call CALL_BEGIN, CALL_ARGS*, CALL_END in order with dense indexes;
 * TURN_END once, after every CALL_END; nothing after a terminal event; the views of
 * text, fragments, ids and names point into the payload that was fed (decoded in
 * place), never elsewhere.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_view.h"
#include "stream/adapter.h"
#include "support/runner.h"
#include "support/sb.h"
#include "support/test_support.h"

/* ---- the recorder ----------------------------------------------------------------- */

#define TRACE_MAX (1u << 17)
#define ARGS_CALLS 8
#define ARGS_MAX 8192
#define MAX_INDEX 600

typedef struct {
  char trace[TRACE_MAX];
  size_t len;
  int overflow;
  char args[ARGS_CALLS][ARGS_MAX];
  size_t args_len[ARGS_CALLS];
  uint8_t state[MAX_INDEX]; /* 0 none, 1 begun, 2 ended */
  uint32_t next_index;
  int turn_ended, terminal_seen;
  char bad[512]; /* first invariant violation */
  int first_err; /* first ERROR code of the current feed / finish */
  long abort_at; /* return nonzero from the n-th event (1-based); 0 never */
  long nevents;
  int aborted;
  const char *lo, *hi; /* the payload being fed */
  uint64_t allocs;
  ts_format format;
  int done;
  int general; /* read every payload the general way (ts_adapter_set_general) */
  int no_memo; /* the one-pass readers without their shape memo (ts_adapter_set_memo) */
  uint64_t memo_hits; /* payloads the last run read from the memo */
  int via_fn;  /* CALL_ARGS through ts_adapter_set_args_fn (rec_args), not the callback */
  int in_fn;
  int direct;  /* each event offered to ts_adapter_feed_fragment first, as the tap does
                * (its match with AVX2 where the CPU has it on odd events, without on even ones) */
  uint64_t direct_hits; /* events ts_adapter_feed_fragment took in the last run */
  uint64_t direct_tries;
} rec;

static rec R;

static void put(rec *r, const char *s, size_t n) {
  if (r->len + n >= TRACE_MAX) {
    r->overflow = 1;
    return;
  }
  memcpy(r->trace + r->len, s, n);
  r->len += n;
  r->trace[r->len] = 0;
}

static void puts_(rec *r, const char *s) { put(r, s, strlen(s)); }

static void put_quoted(rec *r, ts_view v) {
  put(r, "'", 1);
  for (size_t i = 0; i < v.len; i++) {
    unsigned char c = (unsigned char)v.p[i];
    char tmp[8];
    if (c == '\n') puts_(r, "\\n");
    else if (c == '\r') puts_(r, "\\r");
    else if (c == '\t') puts_(r, "\\t");
    else if (c < 0x20) {
      snprintf(tmp, sizeof tmp, "\\x%02x", c);
      puts_(r, tmp);
    } else put(r, (const char *)&c, 1);
  }
  put(r, "'", 1);
}

static void put_word(rec *r, ts_view v) {
  if (v.len == 0) puts_(r, "-");
  else put(r, v.p, v.len);
}

static void violation(rec *r, const char *what, long ev) {
  if (!r->bad[0]) snprintf(r->bad, sizeof r->bad, "event %ld: %s", ev, what);
}

static void check_inside(rec *r, ts_view v, const char *what) {
  if (v.len == 0) return;
  if (!r->lo || v.p < r->lo || v.p + v.len > r->hi) violation(r, what, r->nevents);
}

static int rec_cb(void *user, const ts_adapter_event *ev) {
  rec *r = user;
  char tmp[64];
  r->nevents++;
  if (r->aborted) violation(r, "event after the callback stopped the adapter", r->nevents);
  if (r->turn_ended || r->terminal_seen) violation(r, "event after the end", r->nevents);
  if (r->len) puts_(r, " | ");
  uint32_t i = ev->index;
  if (r->via_fn && ev->kind == TS_ADAPTER_CALL_ARGS && !r->in_fn)
    violation(r, "CALL_ARGS through the callback although an args_fn is set", r->nevents);
  switch (ev->kind) {
  case TS_ADAPTER_TEXT_DELTA:
    puts_(r, "X ");
    put_quoted(r, ev->text);
    if (ev->text.len == 0) violation(r, "empty text", r->nevents);
    check_inside(r, ev->text, "text outside the payload");
    break;
  case TS_ADAPTER_CALL_BEGIN:
    snprintf(tmp, sizeof tmp, "B%u ", i);
    puts_(r, tmp);
    put_word(r, ev->id);
    puts_(r, " ");
    put_word(r, ev->name);
    if (i != r->next_index || i >= MAX_INDEX) violation(r, "index not dense", r->nevents);
    else r->state[r->next_index++] = 1;
    check_inside(r, ev->id, "id outside the payload");
    check_inside(r, ev->name, "name outside the payload");
    break;
  case TS_ADAPTER_CALL_ARGS:
    snprintf(tmp, sizeof tmp, "A%u ", i);
    puts_(r, tmp);
    put_quoted(r, ev->text);
    if (i >= MAX_INDEX || r->state[i] != 1) violation(r, "args outside begin..end", r->nevents);
    if (ev->text.len == 0) violation(r, "empty fragment", r->nevents);
    /* zero-copy, except the pieces an adapter writes itself (rebuilt Vertex arguments,
     * wrapped free-form input): short, from its own buffer of 512 bytes */
    if (ev->text.len > 512) check_inside(r, ev->text, "fragment outside the payload");
    if (i < ARGS_CALLS && r->args_len[i] + ev->text.len < ARGS_MAX) {
      memcpy(r->args[i] + r->args_len[i], ev->text.p, ev->text.len);
      r->args_len[i] += ev->text.len;
    }
    break;
  case TS_ADAPTER_CALL_END:
    snprintf(tmp, sizeof tmp, "E%u", i);
    puts_(r, tmp);
    if (i >= MAX_INDEX || r->state[i] != 1) violation(r, "end without an open call", r->nevents);
    else r->state[i] = 2;
    break;
  case TS_ADAPTER_TURN_END:
    puts_(r, "T stop=");
    put(r, ev->stop_reason.p, ev->stop_reason.len);
    if (ev->usage.len) {
      puts_(r, " usage=");
      put(r, ev->usage.p, ev->usage.len);
    }
    for (uint32_t k = 0; k < r->next_index; k++)
      if (r->state[k] == 1) violation(r, "turn end with an open call", r->nevents);
    r->turn_ended = 1;
    break;
  case TS_ADAPTER_ERROR:
    puts_(r, "!");
    puts_(r, ts_err_name(ev->code));
    if (ev->terminal) puts_(r, "/T");
    if (ev->error.len != strlen(ts_err_message(ev->code)) ||
        memcmp(ev->error.p, ts_err_message(ev->code), ev->error.len) != 0) {
      puts_(r, " ");
      put_quoted(r, ev->error);
    }
    if (ev->code >= 0) violation(r, "error code not negative", r->nevents);
    if (!r->first_err) r->first_err = ev->code;
    if (ev->terminal) r->terminal_seen = 1;
    break;
  default:
    violation(r, "unknown kind", r->nevents);
  }
  if (r->abort_at && r->nevents >= r->abort_at) {
    r->aborted = 1;
    return 1;
  }
  return 0;
}

/* The fragment path (ts_adapter_set_args_fn): recorded as the CALL_ARGS it stands for. */
static int rec_args(void *user, uint32_t index, ts_view text) {
  rec *r = user;
  ts_adapter_event ev = {0};
  ev.kind = TS_ADAPTER_CALL_ARGS;
  ev.index = index;
  ev.text = text;
  r->in_fn = 1;
  int rc = rec_cb(r, &ev);
  r->in_fn = 0;
  return rc;
}

/* ---- a test-only SSE splitter --------------------------------------------------------- */

typedef struct {
  char *name;
  size_t name_len;
  char *data; /* mutable: the adapter decodes in place */
  size_t data_len;
} tev;

#define MAX_EVENTS 4096

/* Lines end at \n, \r\n or \r; `:` lines are comments; `data:` lines join with \n; an
 * event is dispatched at a blank line when it has data; an unterminated last event is
 * dropped. One space after the colon is dropped. Enough for test streams. */
static size_t sse_split(const char *in, size_t n, tev *out, size_t max) {
  size_t nev = 0, i = 0;
  char *data = malloc(n + 1), *name = malloc(n + 1);
  size_t dlen = 0, nlen = 0;
  int has_data = 0;
  ck_assert(data && name);
  while (i < n) {
    size_t s = i;
    while (i < n && in[i] != '\n' && in[i] != '\r') i++;
    if (i >= n) break; /* a line without its end: the stream was cut here */
    size_t e = i;
    if (in[i] == '\r' && i + 1 < n && in[i + 1] == '\n') i++;
    i++;
    if (e == s) { /* blank line: dispatch */
      if (has_data) {
        ck_assert_uint_lt(nev, max);
        if (dlen && data[dlen - 1] == '\n') dlen--;
        out[nev].data = malloc(dlen + 1);
        out[nev].name = malloc(nlen + 1);
        ck_assert(out[nev].data && out[nev].name);
        memcpy(out[nev].data, data, dlen);
        out[nev].data[dlen] = 0;
        out[nev].data_len = dlen;
        memcpy(out[nev].name, name, nlen);
        out[nev].name[nlen] = 0;
        out[nev].name_len = nlen;
        nev++;
      }
      dlen = nlen = 0;
      has_data = 0;
      continue;
    }
    if (in[s] == ':') continue;
    size_t c = s;
    while (c < e && in[c] != ':') c++;
    size_t v = c < e ? c + 1 : e;
    if (v < e && in[v] == ' ') v++;
    if (c - s == 4 && memcmp(in + s, "data", 4) == 0) {
      memcpy(data + dlen, in + v, e - v);
      dlen += e - v;
      data[dlen++] = '\n';
      has_data = 1;
    } else if (c - s == 5 && memcmp(in + s, "event", 5) == 0) {
      memcpy(name, in + v, e - v);
      nlen = e - v;
    }
  }
  free(data);
  free(name);
  return nev;
}

static void free_events(tev *evs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(evs[i].data);
    free(evs[i].name);
  }
}

/* A backtick stands for a double quote in the tables. Returns a malloc'd copy. */
static char *tick(const char *s) {
  size_t n = strlen(s);
  char *t = malloc(n + 1);
  ck_assert(t);
  for (size_t i = 0; i <= n; i++) t[i] = s[i] == '`' ? '"' : s[i];
  return t;
}

/* ---- running a stream ------------------------------------------------------------------ */

static tev EVS[MAX_EVENTS];

/* An adapter that must be made. */
static ts_adapter *new_adapter(ts_format fmt, ts_adapter_cb cb, void *user) {
  ts_adapter *a = NULL;
  ck_assert_int_eq(ts_adapter_new(&a, fmt, cb, user), TS_E_OK);
  return a;
}

/* The tap's way with a format whose fragments it may take (ts_adapter_feed_fragment): the
 * fragment handed back is given to the args function here, and a stop asked there is
 * passed on (ts_adapter_abort). 1 when the event was taken; *rc then as feed would return. */
static int feed_direct(ts_adapter *a, rec *r, const tev *e, int *rc) {
  ts_adapter_fragment fr;
  /* by turns: the match without and with AVX2, through ts_adapter_feed_fragment and
   * through the function ts_adapter_fragment_reader gives (the tap's way) */
  unsigned k = (unsigned)(r->direct_tries++ & 3);
  ts__adapter_set_simd(a, (int)(k & 1));
  ts_adapter_fragment_fn fn = k & 2 ? ts_adapter_fragment_reader(a) : ts_adapter_feed_fragment;
  if (!fn) violation(r, "no fragment reader", -1);
  if (!ts_adapter_fragments(a) || !fn(a, e->name, e->name_len, e->data, e->data_len, &fr))
    return 0;
  r->direct_hits++;
  if (fr.text.len == 0) violation(r, "an empty fragment handed back", -1);
  if (!(fr.text.p >= e->data && fr.text.p + fr.text.len <= e->data + e->data_len) &&
      !(fr.text.p >= fr.value.buf && fr.text.p + fr.text.len <= fr.value.buf + sizeof fr.value.buf))
    violation(r, "a fragment handed back from neither the payload nor its buffer", -1);
  if (rec_args(r, fr.index, fr.text)) ts_adapter_abort(a);
  *rc = r->aborted ? TS_E_ABORTED : TS_E_OK;
  return 1;
}

static void run_events(ts_format fmt, tev *evs, size_t nev, rec *r) {
  long abort_at = r->abort_at;
  int general = r->general, no_memo = r->no_memo, via_fn = r->via_fn, direct = r->direct;
  memset(r, 0, sizeof *r);
  r->abort_at = abort_at;
  r->general = general;
  r->no_memo = no_memo;
  r->via_fn = via_fn;
  r->direct = direct;
  ts_adapter *a = new_adapter(fmt, rec_cb, r);
  ck_assert_ptr_nonnull(a);
  ts_adapter_set_general(a, general);
  if (no_memo) ts_adapter_set_memo(a, 0);
  if (via_fn || direct) ts_adapter_set_args_fn(a, rec_args);
  char msg[128];
  uint64_t before = ts_test_alloc_count();
  for (size_t k = 0; k < nev; k++) {
    r->first_err = 0;
    r->lo = evs[k].data;
    r->hi = evs[k].data + evs[k].data_len;
    int rc;
    if (!direct || !feed_direct(a, r, &evs[k], &rc))
      rc = ts_adapter_feed_event(a, evs[k].name, evs[k].name_len, evs[k].data, evs[k].data_len);
    int want = r->aborted ? TS_E_ABORTED : r->first_err;
    if (rc != want) {
      snprintf(msg, sizeof msg, "feed returned %s, first error reported %s", ts_err_name(rc),
               ts_err_name(want));
      violation(r, msg, (long)k);
    }
  }
  r->first_err = 0;
  r->lo = r->hi = NULL;
  int rc = ts_adapter_finish(a);
  int want = r->aborted ? TS_E_ABORTED : r->first_err;
  if (rc != want) violation(r, "finish returned something else than it reported", -1);
  if (ts_adapter_finish(a) != rc) violation(r, "second finish returned another result", -1);
  r->allocs = ts_test_alloc_count() - before;
  r->format = ts_adapter_format_of(a);
  r->done = ts_adapter_done(a);
  r->memo_hits = ts_adapter_memo_hits(a);
  ts_adapter_free(a);
}

/* Splits `sse` (backticks already replaced), runs it, and frees the events. */
static void run_text(ts_format fmt, const char *sse, size_t len, rec *r) {
  size_t nev = sse_split(sse, len, EVS, MAX_EVENTS);
  run_events(fmt, EVS, nev, r);
  free_events(EVS, nev);
}

/* The same with every event fed twice in a row (each copy its own bytes, since payloads
 * are decoded in place): the second copy of every payload of the simple kind is read from
 * the shape memo (json_shape.h) that the first one left. */
static void run_text_twice(ts_format fmt, const char *sse, size_t len, rec *r) {
  size_t nev = sse_split(sse, len, EVS, MAX_EVENTS / 2);
  static tev twice[MAX_EVENTS];
  for (size_t k = 0; k < nev; k++) {
    for (int c = 0; c < 2; c++) {
      tev *t = &twice[2 * k + (size_t)c];
      *t = EVS[k];
      t->data = malloc(EVS[k].data_len + 1);
      t->name = malloc(EVS[k].name_len + 1);
      ck_assert(t->data && t->name);
      memcpy(t->data, EVS[k].data, EVS[k].data_len + 1);
      memcpy(t->name, EVS[k].name, EVS[k].name_len + 1);
    }
  }
  free_events(EVS, nev);
  run_events(fmt, twice, 2 * nev, r);
  free_events(twice, 2 * nev);
}

static void expect_trace(int line, const char *label, const char *mode, const rec *r,
                         const char *want) {
  ck_assert_msg(!r->overflow, "line %d (%s, %s): trace overflow", line, label, mode);
  ck_assert_msg(strcmp(r->trace, want) == 0, "line %d (%s, %s):\n got: %s\nwant: %s", line, label,
                mode, r->trace, want);
  ck_assert_msg(!r->bad[0], "line %d (%s, %s): %s", line, label, mode, r->bad);
  ck_assert_msg(r->allocs <= TS_ADAPTER_FEED_ALLOCS, "line %d (%s, %s): %llu allocations while feeding",
                line, label, mode, (unsigned long long)r->allocs);
}

/* ---- rows ------------------------------------------------------------------------------ */

#define SAME_AUTO 0
#define NO_AUTO 1 /* detection sees something else first: skip the TS_FORMAT_AUTO run */

typedef struct {
  int line;
  const char *label;
  ts_format fmt;
  const char *sse;
  const char *want;
  int flags;
} row;

/* run_text (or run_text_twice) in one mode (general: no one-pass reader; no_memo: no
 * shape memo; via_fn: CALL_ARGS through ts_adapter_set_args_fn), R back to the default. */
static void run_mode(ts_format fmt, const char *sse, size_t n, int twice, int general, int no_memo, int via_fn) {
  R.abort_at = 0;
  R.general = general, R.no_memo = no_memo, R.via_fn = via_fn & 1, R.direct = via_fn >> 1;
  (twice ? run_text_twice : run_text)(fmt, sse, n, &R);
  R.general = R.no_memo = R.via_fn = R.direct = 0;
}
#define VIA_DIRECT 2 /* run_mode's via_fn: ts_adapter_feed_fragment first (feed_direct) */

static void run_row(const row *w) {
  char *sse = tick(w->sse), *want = tick(w->want);
  size_t n = strlen(sse);
  run_mode(w->fmt, sse, n, 0, 0, 0, 0);
  expect_trace(w->line, w->label, ts_format_name(w->fmt), &R, want);
  ck_assert_msg(R.format == w->fmt, "line %d: format %s", w->line, ts_format_name(R.format));
  /* the general way (no one-pass reader), the one pass without its shape memo, and the
   * fragments through the fragment path report the same */
  static const struct { const char *name; int general, no_memo, via_fn; } once[] = {
      {"general", 1, 0, 0}, {"no memo", 0, 1, 0}, {"args_fn", 0, 0, 1}, {"direct", 0, 0, VIA_DIRECT}};
  for (size_t k = 0; k < sizeof once / sizeof once[0]; k++) {
    run_mode(w->fmt, sse, n, 0, once[k].general, once[k].no_memo, once[k].via_fn);
    expect_trace(w->line, w->label, once[k].name, &R, want);
  }
  /* every payload twice: the memo warmed by each payload before its copy comes; the
   * general way, the memo (also with the fragment path) and no memo agree on what that
   * stream means */
  run_mode(w->fmt, sse, n, 1, 1, 0, 0);
  char *general = strdup(R.trace);
  ck_assert(general);
  ck_assert_msg(!R.overflow, "line %d: trace overflow", w->line);
  static const struct { const char *name; int no_memo, via_fn; } twice[] = {
      {"twice, no memo", 1, 0}, {"twice, memo", 0, 0}, {"twice, memo, args_fn", 0, 1},
      {"twice, memo, direct", 0, VIA_DIRECT}};
  for (size_t k = 0; k < sizeof twice / sizeof twice[0]; k++) {
    run_mode(w->fmt, sse, n, 1, 0, twice[k].no_memo, twice[k].via_fn);
    expect_trace(w->line, w->label, twice[k].name, &R, general);
  }
  free(general);
  if (!(w->flags & NO_AUTO)) {
    run_mode(TS_FORMAT_AUTO, sse, n, 0, 0, 0, 0);
    expect_trace(w->line, w->label, "auto", &R, want);
  }
  free(sse);
  free(want);
}

/* stream-building shorthands */
#define D(json) "data: " json "\n\n"
#define EV(name, json) "event: " name "\ndata: " json "\n\n"
#define CHUNK(choice) D("{`object`:`chat.completion.chunk`,`choices`:[{`index`:0," choice "}]}")
#define TC(calls) CHUNK("`delta`:{`tool_calls`:[" calls "]}")
#define FIN(reason) CHUNK("`delta`:{},`finish_reason`:`" reason "`")
#define DONE D("[DONE]")

static const row chat_rows[] = {
    {__LINE__, "one call in pieces keyed by index", TS_FORMAT_OPENAI_CHAT,
     CHUNK("`delta`:{`role`:`assistant`,`content`:null},`finish_reason`:null")
     TC("{`index`:0,`id`:`call_a`,`type`:`function`,`function`:{`name`:`f`,`arguments`:``}}")
     TC("{`index`:0,`function`:{`arguments`:`{\\`x\\`:`}}")
     TC("{`index`:0,`function`:{`arguments`:`1}`}}")
     FIN("tool_calls") DONE,
     "B0 call_a f | A0 '{`x`:' | A0 '1}' | E0 | T stop=tool_calls", SAME_AUTO},
    {__LINE__, "two calls interleaved", TS_FORMAT_OPENAI_CHAT,
     TC("{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:``}}")
     TC("{`index`:1,`id`:`b`,`function`:{`name`:`g`,`arguments`:``}}")
     TC("{`index`:0,`function`:{`arguments`:`{\\`a\\``}}")
     TC("{`index`:1,`function`:{`arguments`:`{\\`b\\``}}")
     TC("{`index`:0,`function`:{`arguments`:`:1}`}}")
     TC("{`index`:1,`function`:{`arguments`:`:2}`}}")
     FIN("tool_calls") DONE,
     "B0 a f | B1 b g | A0 '{`a`' | A1 '{`b`' | A0 ':1}' | A1 ':2}' | E0 | E1 | T stop=tool_calls",
     SAME_AUTO},
    {__LINE__, "two whole calls and finish_reason in one chunk", TS_FORMAT_OPENAI_CHAT,
     CHUNK("`delta`:{`tool_calls`:[{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:`{}`}},"
           "{`index`:1,`id`:`b`,`function`:{`name`:`g`,`arguments`:`{\\`k\\`:[1]}`}}]},"
           "`finish_reason`:`tool_calls`")
     DONE,
     "B0 a f | A0 '{}' | B1 b g | A1 '{`k`:[1]}' | E0 | E1 | T stop=tool_calls", SAME_AUTO},
    {__LINE__, "index reused with new ids: new calls", TS_FORMAT_OPENAI_CHAT,
     TC("{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:`{}`}}")
     TC("{`index`:0,`id`:`b`,`function`:{`name`:`g`,`arguments`:`{\\`q\\``}}")
     TC("{`index`:0,`function`:{`arguments`:`:1}`}}")
     TC("{`index`:0,`id`:`c`,`function`:{`name`:`h`,`arguments`:`{}`}}")
     FIN("tool_calls") DONE,
     "B0 a f | A0 '{}' | B1 b g | A1 '{`q`' | A1 ':1}' | B2 c h | A2 '{}' | E0 | E1 | E2 | "
     "T stop=tool_calls",
     SAME_AUTO},
    {__LINE__, "no index: matched by id; neither continues the latest", TS_FORMAT_OPENAI_CHAT,
     TC("{`id`:`a`,`function`:{`name`:`f`,`arguments`:`{`}}")
     TC("{`id`:`b`,`function`:{`name`:`g`,`arguments`:`{`}}")
     TC("{`id`:`a`,`function`:{`arguments`:`}`}}")
     TC("{`id`:`b`,`function`:{`arguments`:`\\`z\\``}}")
     TC("{`function`:{`arguments`:`:0}`}}")
     FIN("tool_calls") DONE,
     "B0 a f | A0 '{' | B1 b g | A1 '{' | A0 '}' | A1 '`z`' | A1 ':0}' | E0 | E1 | T stop=tool_calls",
     SAME_AUTO},
    {__LINE__, "id arriving later and sent again replaces, never a new call", TS_FORMAT_OPENAI_CHAT,
     TC("{`index`:0,`type`:`function`,`function`:{`name`:`f`,`arguments`:``}}")
     TC("{`index`:0,`id`:`a`,`function`:{`arguments`:`{`}}")
     TC("{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:`}`}}")
     FIN("tool_calls") DONE,
     "B0 - f | A0 '{' | A0 '}' | E0 | T stop=tool_calls", SAME_AUTO},
    {__LINE__, "neither index nor id as the first entry begins a call", TS_FORMAT_OPENAI_CHAT,
     TC("{`function`:{`name`:`f`,`arguments`:`{}`}}") FIN("tool_calls") DONE,
     "B0 - f | A0 '{}' | E0 | T stop=tool_calls", SAME_AUTO},
    {__LINE__, "text before and after a call, usage chunk", TS_FORMAT_OPENAI_CHAT,
     CHUNK("`delta`:{`role`:`assistant`,`content`:``}")
     CHUNK("`delta`:{`content`:`Hello `}")
     TC("{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:`{}`}}")
     CHUNK("`delta`:{`content`:`bye`}")
     FIN("tool_calls")
     D("{`choices`:[],`usage`:{`prompt_tokens`:1}}") DONE,
     "X 'Hello ' | B0 a f | A0 '{}' | X 'bye' | E0 | T stop=tool_calls usage={`prompt_tokens`:1}",
     SAME_AUTO},
    {__LINE__, "escapes decoded in place", TS_FORMAT_OPENAI_CHAT,
     CHUNK("`delta`:{`content`:`caf\\u00e9\\n\\`q\\`\\t\\u0001`}")
     TC("{`index`:0,`id`:`c\\u0061ll`,`function`:{`name`:`f\\u0031`,"
        "`arguments`:`{\\`d\\`:\\`Caf\\\\u00e9 \\\\\\`s\\\\\\`\\`}`}}")
     FIN("stop") DONE,
     "X 'caf\xc3\xa9\\n`q`\\t\\x01' | B0 call f1 | A0 '{`d`:`Caf\\u00e9 \\`s\\``}' | E0 | T stop=stop",
     SAME_AUTO},
    {__LINE__, "finish_reason and usage but no [DONE]: the turn ends at EOF", TS_FORMAT_OPENAI_CHAT,
     TC("{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:`{}`}}")
     FIN("tool_calls") D("{`choices`:[],`usage`:{`total_tokens`:3}}"),
     "B0 a f | A0 '{}' | E0 | T stop=tool_calls usage={`total_tokens`:3}", SAME_AUTO},
    {__LINE__, "truncated: no finish_reason, no [DONE]", TS_FORMAT_OPENAI_CHAT,
     TC("{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:`{\\`x`}}"),
     "B0 a f | A0 '{`x' | !ms_truncated/T", SAME_AUTO},
    {__LINE__, "[DONE] without finish_reason ends the open calls", TS_FORMAT_OPENAI_CHAT,
     TC("{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:`{}`}}") DONE,
     "B0 a f | A0 '{}' | E0 | T stop=", SAME_AUTO},
    {__LINE__, "finish_reason length keeps incomplete arguments", TS_FORMAT_OPENAI_CHAT,
     TC("{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:`{\\`x\\`:\\`ab`}}")
     FIN("length") DONE,
     "B0 a f | A0 '{`x`:`ab' | E0 | T stop=length", SAME_AUTO},
    {__LINE__, "error object: terminal, later events ignored", TS_FORMAT_OPENAI_CHAT,
     CHUNK("`delta`:{`content`:`hi`}")
     D("{`error`:{`message`:`Rate limit reached`,`type`:`rate_limit_error`,`code`:null}}")
     CHUNK("`delta`:{`content`:`ignored`}") DONE,
     "X 'hi' | !ms_provider/T 'Rate limit reached'", SAME_AUTO},
    {__LINE__, "error string", TS_FORMAT_OPENAI_CHAT, D("{`error`:`upstream timeout`}"),
     "!ms_provider/T 'upstream timeout'", SAME_AUTO},
    {__LINE__, "error without a message: its JSON", TS_FORMAT_OPENAI_CHAT, D("{`error`:{`code`:500}}"),
     "!ms_provider/T '{`code`:500}'", SAME_AUTO},
    {__LINE__, "error with an escaped message", TS_FORMAT_OPENAI_CHAT,
     D("{`error`:{`message`:`bad \\`x\\` \\u2014 no`}}"), "!ms_provider/T 'bad `x` \xe2\x80\x94 no'",
     SAME_AUTO},
    {__LINE__, "malformed payloads are errors for that event only", TS_FORMAT_OPENAI_CHAT,
     D("{`choices`:[") D("not json") CHUNK("`delta`:{`content`:`ok`}") D("{} {}") D("`str`")
     D("{`choices`:[{`delta`:{`content`:`a`}}]} x") DONE,
     "!ms_bad_json | !ms_bad_json | X 'ok' | !ms_bad_json | !ms_bad_shape | !ms_bad_json | T stop=",
     SAME_AUTO},
    {__LINE__, "a bad escape in a fragment is an error for that event", TS_FORMAT_OPENAI_CHAT,
     TC("{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:``}}")
     TC("{`index`:0,`function`:{`arguments`:`\\ud800`}}")
     TC("{`index`:0,`function`:{`arguments`:`{}`}}") FIN("tool_calls") DONE,
     "B0 a f | !json_surrogate | A0 '{}' | E0 | T stop=tool_calls", SAME_AUTO},
    {__LINE__, "wrong types are shape errors", TS_FORMAT_OPENAI_CHAT,
     CHUNK("`delta`:{`content`:5}") CHUNK("`delta`:{`tool_calls`:{}}") TC("7") DONE,
     "!ms_bad_shape | !ms_bad_shape | !ms_bad_shape | T stop=", SAME_AUTO},
    {__LINE__, "a call after finish_reason is a new call", TS_FORMAT_OPENAI_CHAT,
     TC("{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:`{}`}}") FIN("tool_calls")
     TC("{`index`:0,`id`:`a`,`function`:{`arguments`:`{}`}}") DONE,
     "B0 a f | A0 '{}' | E0 | B1 a - | A1 '{}' | E1 | T stop=tool_calls", SAME_AUTO},
    {__LINE__, "only choice 0 is read", TS_FORMAT_OPENAI_CHAT,
     D("{`choices`:[{`index`:1,`delta`:{`content`:`other`}},{`index`:0,`delta`:{`content`:`mine`}}]}")
     DONE,
     "X 'mine' | T stop=", SAME_AUTO},
    {__LINE__, "arguments sent as an object", TS_FORMAT_OPENAI_CHAT,
     TC("{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:{`x`:[1,{`y`:null}]}}}")
     FIN("tool_calls") DONE,
     "B0 a f | A0 '{`x`:[1,{`y`:null}]}' | E0 | T stop=tool_calls", SAME_AUTO},
    {__LINE__, "legacy function_call delta", TS_FORMAT_OPENAI_CHAT,
     CHUNK("`delta`:{`function_call`:{`name`:`f`,`arguments`:``}}")
     CHUNK("`delta`:{`function_call`:{`arguments`:`{\\`a\\``}}")
     CHUNK("`delta`:{`function_call`:{`arguments`:`:1}`}}") FIN("function_call") DONE,
     "B0 - f | A0 '{`a`' | A0 ':1}' | E0 | T stop=function_call", SAME_AUTO},
    {__LINE__, "usage in the finish chunk; usage null later is ignored", TS_FORMAT_OPENAI_CHAT,
     CHUNK("`delta`:{`content`:`x`}")
     D("{`choices`:[{`index`:0,`delta`:{},`finish_reason`:`stop`}],`usage`:{`total_tokens`:3}}")
     D("{`choices`:[],`usage`:null}") DONE,
     "X 'x' | T stop=stop usage={`total_tokens`:3}", SAME_AUTO},
    {__LINE__, "comments and empty events are ignored", TS_FORMAT_OPENAI_CHAT,
     ": keep-alive\n\n" "event: ping\ndata:\n\n" "data:   \n\n" CHUNK("`delta`:{`content`:`x`}")
     DONE,
     "X 'x' | T stop=", SAME_AUTO},
    {__LINE__, "Groq: the usage under x_groq; a chunk's own usage wins", TS_FORMAT_OPENAI_CHAT,
     D("{`object`:`chat.completion.chunk`,`choices`:[{`index`:0,`delta`:{`role`:`assistant`}}],"
       "`x_groq`:{`id`:`req_1`}}")
     TC("{`id`:`call_1`,`type`:`function`,`function`:{`name`:`f`,`arguments`:`{}`},`index`:0}")
     D("{`object`:`chat.completion.chunk`,`choices`:[{`index`:0,`delta`:{},`finish_reason`:`tool_calls`}],"
       "`x_groq`:{`id`:`req_1`,`usage`:{`prompt_tokens`:5,`total_tokens`:7}}}")
     DONE,
     "B0 call_1 f | A0 '{}' | E0 | T stop=tool_calls usage={`prompt_tokens`:5,`total_tokens`:7}", SAME_AUTO},
    {__LINE__, "Groq: usage beside x_groq is the usage", TS_FORMAT_OPENAI_CHAT,
     D("{`choices`:[{`index`:0,`delta`:{},`finish_reason`:`stop`}],`usage`:{`total_tokens`:3},"
       "`x_groq`:{`usage`:{`total_tokens`:9}}}") DONE,
     "T stop=stop usage={`total_tokens`:3}", SAME_AUTO},
    {__LINE__, "Gemini's OpenAI endpoint: whole calls with id \"\" and no index", TS_FORMAT_OPENAI_CHAT,
     CHUNK("`delta`:{`role`:`assistant`,`tool_calls`:[{`function`:{`arguments`:`{\\`l\\`:1}`,`name`:`f`},"
           "`id`:``,`type`:`function`},{`function`:{`arguments`:`{\\`l\\`:2}`,`name`:`f`},`id`:``,"
           "`type`:`function`,`index`:null}]}")
     TC("{`function`:{`arguments`:`{`,`name`:`g`},`id`:``}")
     TC("{`function`:{`arguments`:`}`,`name`:``},`id`:``}")
     FIN("stop") DONE,
     "B0 - f | A0 '{`l`:1}' | B1 - f | A1 '{`l`:2}' | B2 - g | A2 '{' | A2 '}' | E0 | E1 | E2 | T stop=stop",
     SAME_AUTO},
};

#define RE(type, json) EV(type, "{`type`:`" type "`," json "}")
#define ADDED(item, call, name, args)                                                            \
  RE("response.output_item.added", "`output_index`:0,`item`:{`id`:`" item                         \
                                   "`,`type`:`function_call`,`status`:`in_progress`,`arguments`:`" \
                                   args "`,`call_id`:`" call "`,`name`:`" name "`}")
#define DELTA(item, text) RE("response.function_call_arguments.delta", "`item_id`:`" item "`,`delta`:`" text "`")
#define ARGS_DONE(item, args) RE("response.function_call_arguments.done", "`item_id`:`" item "`,`arguments`:`" args "`")
#define ITEM_DONE(item, args)                                                                    \
  RE("response.output_item.done", "`item`:{`id`:`" item "`,`type`:`function_call`,`arguments`:`" \
                                  args "`}")
#define COMPLETED(resp) RE("response.completed", "`response`:{" resp "}")

static const row responses_rows[] = {
    {__LINE__, "calls sent only as their output_item.done: each begins and ends there", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.output_item.done", "`item`:{`id`:`rs_1`,`type`:`reasoning`,`summary`:[]}")
     RE("response.output_item.done", "`output_index`:1,`item`:{`id`:`fc_1`,`type`:`function_call`,`status`:"
        "`completed`,`arguments`:`{\\`a\\`:1}`,`call_id`:`call_1`,`name`:`f`}")
     RE("response.output_item.done", "`output_index`:2,`item`:{`type`:`function_call`,`id`:`fc_\\u0032`,"
        "`call_id`:`call_2`,`name`:`g`,`arguments`:`{}`}")
     COMPLETED("`status`:`completed`"),
     "B0 call_1 f | A0 '{`a`:1}' | E0 | B1 call_2 g | A1 '{}' | E1 | T stop=completed",
     SAME_AUTO},
    {__LINE__, "text, then a call in deltas; both done events end it once", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.created", "`response`:{`status`:`in_progress`}")
     RE("response.output_item.added", "`item`:{`id`:`msg_1`,`type`:`message`}")
     RE("response.output_text.delta", "`item_id`:`msg_1`,`delta`:`Hi`")
     ADDED("fc_1", "call_1", "f", "") DELTA("fc_1", "{\\`a\\`") DELTA("fc_1", ":1}")
     ARGS_DONE("fc_1", "{\\`a\\`:1}") ITEM_DONE("fc_1", "{\\`a\\`:1}")
     COMPLETED("`status`:`completed`,`usage`:{`input_tokens`:5}"),
     "X 'Hi' | B0 call_1 f | A0 '{`a`' | A0 ':1}' | E0 | T stop=completed usage={`input_tokens`:5}",
     SAME_AUTO},
    {__LINE__, "two calls interleaved by item_id", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") ADDED("fc_2", "call_2", "g", "") DELTA("fc_2", "{}")
     DELTA("fc_1", "{") DELTA("fc_1", "}") ARGS_DONE("fc_1", "{}") ARGS_DONE("fc_2", "{}")
     ITEM_DONE("fc_2", "{}") ITEM_DONE("fc_1", "{}") COMPLETED("`status`:`completed`"),
     "B0 call_1 f | B1 call_2 g | A1 '{}' | A0 '{' | A0 '}' | E0 | E1 | T stop=completed", SAME_AUTO},
    {__LINE__, "whole calls: arguments only in added or in the done events", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") ARGS_DONE("fc_1", "{\\`w\\`:true}")
     ADDED("fc_2", "call_2", "g", "{\\`v\\`:2}") ITEM_DONE("fc_2", "{\\`v\\`:2}")
     ADDED("fc_3", "call_3", "h", "") ITEM_DONE("fc_3", "{}") COMPLETED(""),
     "B0 call_1 f | A0 '{`w`:true}' | E0 | B1 call_2 g | A1 '{`v`:2}' | E1 | B2 call_3 h | A2 '{}' | "
     "E2 | T stop=completed",
     SAME_AUTO},
    {__LINE__, "incomplete: the reason is the stop reason; open calls end", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") DELTA("fc_1", "{\\`a\\`:\\`x")
     RE("response.incomplete", "`response`:{`status`:`incomplete`,`incomplete_details`:{`reason`:"
                               "`max_output_tokens`},`usage`:{`output_tokens`:9}}"),
     "B0 call_1 f | A0 '{`a`:`x' | E0 | T stop=max_output_tokens usage={`output_tokens`:9}",
     SAME_AUTO},
    {__LINE__, "incomplete without details: the status", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.incomplete", "`response`:{`status`:`incomplete`,`incomplete_details`:null}"),
     "T stop=incomplete", SAME_AUTO},
    {__LINE__, "completed without a status", TS_FORMAT_OPENAI_RESPONSES, RE("response.completed", "`x`:1"),
     "T stop=completed", SAME_AUTO},
    {__LINE__, "failed: terminal error with the response's message", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") DELTA("fc_1", "{")
     RE("response.failed", "`response`:{`status`:`failed`,`error`:{`code`:`server_error`,"
                           "`message`:`The model crashed`}}")
     COMPLETED(""),
     "B0 call_1 f | A0 '{' | !ms_provider/T 'The model crashed'", SAME_AUTO},
    {__LINE__, "failed without an error object", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.failed", "`response`:{`status`:`failed`,`error`:null}"),
     "!ms_provider/T 'response failed'", SAME_AUTO},
    {__LINE__, "error event, flat", TS_FORMAT_OPENAI_RESPONSES,
     EV("error", "{`type`:`error`,`code`:`rate_limit_exceeded`,`message`:`Slow down`,`param`:null}"),
     "!ms_provider/T 'Slow down'", SAME_AUTO},
    {__LINE__, "error event, nested", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "")
     EV("error", "{`type`:`error`,`error`:{`type`:`invalid_request_error`,`code`:`x`,`message`:`Bad input`}}"),
     "B0 call_1 f | !ms_provider/T 'Bad input'", SAME_AUTO},
    {__LINE__, "deltas for an unknown item are dropped", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") DELTA("fc_x", "zzz") ARGS_DONE("fc_x", "{}") DELTA("fc_1", "{}")
     COMPLETED("`status`:`completed`"),
     "B0 call_1 f | A0 '{}' | E0 | T stop=completed", SAME_AUTO},
    {__LINE__, "truncated before response.completed", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") DELTA("fc_1", "{"),
     "B0 call_1 f | A0 '{' | !ms_truncated/T", SAME_AUTO},
    {__LINE__, "the event name stands in for a missing type", TS_FORMAT_OPENAI_RESPONSES,
     EV("response.output_text.delta", "{`delta`:`hey`}") COMPLETED(""),
     "X 'hey' | T stop=completed", SAME_AUTO},
    {__LINE__, "response.created is skipped unparsed", TS_FORMAT_OPENAI_RESPONSES,
     EV("response.created", "not json: never parsed") EV("response.in_progress", "{") COMPLETED(""),
     "T stop=completed", SAME_AUTO},
    {__LINE__, "other item types and events are ignored", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.output_item.added", "`item`:{`id`:`rs_1`,`type`:`reasoning`,`summary`:[]}")
     RE("response.reasoning_summary_text.delta", "`item_id`:`rs_1`,`delta`:`thinking`")
     RE("response.output_item.done", "`item`:{`id`:`rs_1`,`type`:`reasoning`}")
     RE("response.content_part.added", "`part`:{`type`:`output_text`,`text`:``}")
     RE("response.output_text.done", "`text`:`whole`") COMPLETED(""),
     "T stop=completed", SAME_AUTO},
    {__LINE__, "[DONE] is not a Responses event", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.output_text.delta", "`delta`:`a`") DONE COMPLETED(""), "X 'a' | T stop=completed",
     SAME_AUTO},
    /* the terminal event in the one pass: the output items (a call's whole arguments)
     * passed over, status, reason and usage read as the general way reads them */
    {__LINE__, "completed: output items skipped, status and usage read", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") DELTA("fc_1", "{\\`a\\`:\\`x\\n\\u00e9\\`}")
     COMPLETED("`id`:`resp_1`,`output`:[{`id`:`fc_1`,`type`:`function_call`,`arguments`:`{\\`a\\`:\\`x\\n\\u00e9\\`}`}],"
               "`status`:`completed`,`tools`:[{`type`:`function`}],`usage`:{`input_tokens`:5,`d`:{`x`:[1]}},`user`:null"),
     "B0 call_1 f | A0 '{`a`:`x\\n\xc3\xa9`}' | E0 | T stop=completed usage={`input_tokens`:5,`d`:{`x`:[1]}}", SAME_AUTO},
    {__LINE__, "completed: an escaped status is decoded, usage not an object is none", TS_FORMAT_OPENAI_RESPONSES,
     COMPLETED("`status`:`don\\u0065`,`usage`:null"), "T stop=done", SAME_AUTO},
    {__LINE__, "completed: a status that is no string is the default", TS_FORMAT_OPENAI_RESPONSES,
     COMPLETED("`status`:7,`incomplete_details`:{`reason`:`x`}"), "T stop=completed", SAME_AUTO},
    {__LINE__, "completed: a duplicate status (the general way reads the first)", TS_FORMAT_OPENAI_RESPONSES,
     COMPLETED("`status`:`a`,`status`:`b`"), "T stop=a", SAME_AUTO},
    {__LINE__, "completed: a bad escape in the status", TS_FORMAT_OPENAI_RESPONSES,
     COMPLETED("`status`:`\\ud800`,`usage`:{`n`:1}"), "!json_surrogate | T stop=completed usage={`n`:1}", SAME_AUTO},
    {__LINE__, "completed: response not an object, or missing", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.completed", "`response`:[1]"), "T stop=completed", SAME_AUTO},
    {__LINE__, "completed: cut JSON is the general way's error", TS_FORMAT_OPENAI_RESPONSES,
     EV("response.completed", "{`type`:`response.completed`,`response`:{`output`:[`x]}}")
     COMPLETED("`status`:`completed`"),
     "!ms_bad_json | T stop=completed", SAME_AUTO},
    {__LINE__, "incomplete: the reason, not the status", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.incomplete", "`response`:{`status`:`incomplete`,`output`:[],`incomplete_details`:{`x`:[{}],`reason`:`max_output_tokens`},`usage`:{`o`:2}}"),
     "T stop=max_output_tokens usage={`o`:2}", SAME_AUTO},
    {__LINE__, "incomplete: no reason: the status; a duplicate reason hands back", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.incomplete", "`response`:{`status`:`incomplete`,`incomplete_details`:null}"),
     "T stop=incomplete", SAME_AUTO},
    {__LINE__, "incomplete: a duplicate reason (the general way reads the first)", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.incomplete", "`response`:{`incomplete_details`:{`reason`:`r1`,`reason`:`r2`}}"),
     "T stop=r1", SAME_AUTO},
    /* the .done events repeat the arguments: the deltas' text is what is reported */
    {__LINE__, ".done agreeing with the deltas", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") DELTA("fc_1", "{}") ARGS_DONE("fc_1", "{}") ITEM_DONE("fc_1", "{}") COMPLETED(""),
     "B0 call_1 f | A0 '{}' | E0 | T stop=completed", SAME_AUTO},
    {__LINE__, ".done disagreeing with the deltas: the deltas stand, as before", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") DELTA("fc_1", "{}") ARGS_DONE("fc_1", "{\\`other\\`:1}")
     ITEM_DONE("fc_1", "{\\`other\\`:2}") COMPLETED(""),
     "B0 call_1 f | A0 '{}' | E0 | T stop=completed", SAME_AUTO},
    {__LINE__, "a request echo's name skips its payload, whatever type the payload names", TS_FORMAT_OPENAI_RESPONSES,
     EV("response.created", "{`type`:`response.output_text.delta`,`delta`:`x`}")
     EV("response.in_progress", "{`delta`:`y`,`type`:`response.output_text.delta`}")
     EV("response.queued", "{`type`:`response.output_text.delta`,`delta`:`q`}")
     RE("response.output_text.delta", "`delta`:`z`") COMPLETED(""),
     "X 'z' | T stop=completed", SAME_AUTO},
    {__LINE__, ".done without deltas: its arguments are the call's", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") ITEM_DONE("fc_1", "{\\`w\\`:\\`\\u00e9\\`}") COMPLETED(""),
     "B0 call_1 f | A0 '{`w`:`\xc3\xa9`}' | E0 | T stop=completed", SAME_AUTO},
};

#define AE(type, json) EV(type, "{`type`:`" type "`" json "}")
#define MSG_START AE("message_start", ",`message`:{`id`:`msg_1`,`content`:[],`usage`:{`input_tokens`:10,`output_tokens`:1}}")
#define TOOL_START(i, id, name, input) \
  AE("content_block_start", ",`index`:" #i ",`content_block`:{`type`:`tool_use`,`id`:`" id "`,`name`:`" name "`,`input`:" input "}")
#define JSON_DELTA(i, text) AE("content_block_delta", ",`index`:" #i ",`delta`:{`type`:`input_json_delta`,`partial_json`:`" text "`}")
#define TEXT_START(i) AE("content_block_start", ",`index`:" #i ",`content_block`:{`type`:`text`,`text`:``}")
#define TEXT_DELTA(i, text) AE("content_block_delta", ",`index`:" #i ",`delta`:{`type`:`text_delta`,`text`:`" text "`}")
#define BLOCK_STOP(i) AE("content_block_stop", ",`index`:" #i)
#define MSG_DELTA(stop, usage) AE("message_delta", ",`delta`:{`stop_reason`:" stop ",`stop_sequence`:null}" usage)
#define MSG_STOP AE("message_stop", "")
#define PING EV("ping", "{`type`: `ping`}")

static const row anthropic_rows[] = {
    {__LINE__, "text, then two tool_use blocks", TS_FORMAT_ANTHROPIC,
     MSG_START TEXT_START(0) PING TEXT_DELTA(0, "Hi") BLOCK_STOP(0) TOOL_START(1, "toolu_1", "f", "{}")
     JSON_DELTA(1, "") JSON_DELTA(1, "{\\`a\\`:") JSON_DELTA(1, "1}") BLOCK_STOP(1)
     TOOL_START(2, "toolu_2", "g", "{}") JSON_DELTA(2, "{}") BLOCK_STOP(2)
     MSG_DELTA("`tool_use`", ",`usage`:{`output_tokens`:7}") MSG_STOP,
     "X 'Hi' | B0 toolu_1 f | A0 '{`a`:' | A0 '1}' | E0 | B1 toolu_2 g | A1 '{}' | E1 | "
     "T stop=tool_use usage={`input_tokens`:10,`output_tokens`:7}",
     SAME_AUTO},
    {__LINE__, "no content_block_stop: message_stop ends the call", TS_FORMAT_ANTHROPIC,
     MSG_START TOOL_START(0, "toolu_1", "f", "{}") JSON_DELTA(0, "{\\`a\\`:\\`b")
     MSG_DELTA("`max_tokens`", ",`usage`:{`output_tokens`:3}") MSG_STOP,
     "B0 toolu_1 f | A0 '{`a`:`b' | E0 | T stop=max_tokens usage={`input_tokens`:10,`output_tokens`:3}", SAME_AUTO},
    {__LINE__, "a non-empty input is the first fragment", TS_FORMAT_ANTHROPIC,
     MSG_START TOOL_START(0, "t", "f", "{`x`:{`y`:[1,2]}}") BLOCK_STOP(0) MSG_DELTA("`tool_use`", "")
     MSG_STOP,
     "B0 t f | A0 '{`x`:{`y`:[1,2]}}' | E0 | T stop=tool_use usage={`input_tokens`:10,`output_tokens`:1}",
     SAME_AUTO},
    {__LINE__, "message_start's usage stands when message_delta has none", TS_FORMAT_ANTHROPIC,
     MSG_START TEXT_START(0) TEXT_DELTA(0, "ok") BLOCK_STOP(0) MSG_DELTA("`end_turn`", "") MSG_STOP,
     "X 'ok' | T stop=end_turn usage={`input_tokens`:10,`output_tokens`:1}", SAME_AUTO},
    {__LINE__, "a whole message in message_start (programmatic tool calling)", TS_FORMAT_ANTHROPIC,
     AE("message_start", ",`message`:{`id`:`m`,`content`:[{`type`:`text`,`text`:`Hi`},"
                         "{`type`:`tool_use`,`id`:`t1`,`name`:`f`,`input`:{`a`:1},`caller`:{`type`:`x`}},"
                         "{`type`:`server_tool_use`,`id`:`s1`,`name`:`code`,`input`:{}},"
                         "{`type`:`tool_use`,`id`:`t2`,`name`:`g`,`input`:{}}],"
                         "`stop_reason`:`tool_use`,`usage`:{`input_tokens`:5,`output_tokens`:9}}")
     MSG_STOP,
     "X 'Hi' | B0 t1 f | A0 '{`a`:1}' | E0 | B1 t2 g | E1 | T stop=tool_use "
     "usage={`input_tokens`:5,`output_tokens`:9}",
     SAME_AUTO},
    {__LINE__, "usage: message_delta's values merged into message_start's", TS_FORMAT_ANTHROPIC,
     AE("message_start", ",`message`:{`content`:[],`usage`:{`input_tokens`:10,`cache_read_input_tokens`:4,"
                         "`output_tokens`:1,`cache_creation`:{`e`:0}}}")
     MSG_DELTA("`end_turn`", ",`usage`:{`output_tokens`:7,`input_tokens`:null,`server_tool_use`:{`n`:1}}")
     MSG_STOP,
     "T stop=end_turn usage={`input_tokens`:10,`cache_read_input_tokens`:4,`output_tokens`:7,"
     "`cache_creation`:{`e`:0},`server_tool_use`:{`n`:1}}",
     SAME_AUTO},
    {__LINE__, "error event: terminal; later events ignored", TS_FORMAT_ANTHROPIC,
     MSG_START TOOL_START(0, "t", "f", "{}") JSON_DELTA(0, "{")
     EV("error", "{`type`:`error`,`error`:{`type`:`overloaded_error`,`message`:`Overloaded`}}")
     MSG_STOP,
     "B0 t f | A0 '{' | !ms_provider/T 'Overloaded'", SAME_AUTO},
    {__LINE__, "event: error without data", TS_FORMAT_ANTHROPIC, MSG_START "event: error\ndata:\n\n" MSG_STOP,
     "!ms_provider/T", SAME_AUTO},
    {__LINE__, "thinking and server tools are not calls", TS_FORMAT_ANTHROPIC,
     MSG_START AE("content_block_start", ",`index`:0,`content_block`:{`type`:`thinking`,`thinking`:``}")
     AE("content_block_delta", ",`index`:0,`delta`:{`type`:`thinking_delta`,`thinking`:`hmm`}")
     AE("content_block_delta", ",`index`:0,`delta`:{`type`:`signature_delta`,`signature`:`abc`}")
     BLOCK_STOP(0)
     AE("content_block_start", ",`index`:1,`content_block`:{`type`:`server_tool_use`,`id`:`srvtoolu_1`,"
                               "`name`:`web_search`,`input`:{}}")
     JSON_DELTA(1, "{\\`query\\`:\\`x\\`}") BLOCK_STOP(1) MSG_DELTA("`end_turn`", "") MSG_STOP,
     "T stop=end_turn usage={`input_tokens`:10,`output_tokens`:1}", SAME_AUTO},
    {__LINE__, "truncated: no message_stop", TS_FORMAT_ANTHROPIC,
     MSG_START TOOL_START(0, "t", "f", "{}") JSON_DELTA(0, "{"), "B0 t f | A0 '{' | !ms_truncated/T",
     SAME_AUTO},
    {__LINE__, "deltas after the block stopped are dropped", TS_FORMAT_ANTHROPIC,
     MSG_START TOOL_START(0, "t", "f", "{}") JSON_DELTA(0, "{}") BLOCK_STOP(0) JSON_DELTA(0, "junk")
     BLOCK_STOP(0) MSG_STOP,
     "B0 t f | A0 '{}' | E0 | T stop= usage={`input_tokens`:10,`output_tokens`:1}", SAME_AUTO},
    {__LINE__, "blocks told apart by index even when interleaved", TS_FORMAT_ANTHROPIC,
     MSG_START TOOL_START(0, "t0", "f", "{}") TOOL_START(1, "t1", "g", "{}") JSON_DELTA(1, "{}")
     JSON_DELTA(0, "{}") BLOCK_STOP(1) BLOCK_STOP(0) MSG_STOP,
     "B0 t0 f | B1 t1 g | A1 '{}' | A0 '{}' | E1 | E0 | T stop= usage={`input_tokens`:10,`output_tokens`:1}",
     SAME_AUTO},
    {__LINE__, "tool_use without an index is a shape error", TS_FORMAT_ANTHROPIC,
     MSG_START AE("content_block_start", ",`content_block`:{`type`:`tool_use`,`id`:`t`,`name`:`f`,`input`:{}}")
     MSG_STOP,
     "!ms_bad_shape | T stop= usage={`input_tokens`:10,`output_tokens`:1}", SAME_AUTO},
    {__LINE__, "type from the event name when the payload has none; padded JSON", TS_FORMAT_ANTHROPIC,
     MSG_START EV("content_block_start", "{ `index` : 0 , `content_block` : { `type` : `text` , `text` : `T` } }")
     EV("message_stop", "{}"),
     "X 'T' | T stop= usage={`input_tokens`:10,`output_tokens`:1}", SAME_AUTO},
    {__LINE__, "escapes in text, ids and fragments", TS_FORMAT_ANTHROPIC,
     MSG_START TEXT_START(0) TEXT_DELTA(0, "\\u00e9\\\\") BLOCK_STOP(0)
     TOOL_START(1, "t\\u005f1", "n\\/a", "{}") JSON_DELTA(1, "{\\`d\\`:\\`\\\\u00e9\\\\\\`\\`}")
     BLOCK_STOP(1) MSG_STOP,
     "X '\xc3\xa9\\' | B0 t_1 n/a | A0 '{`d`:`\\u00e9\\``}' | E0 | T stop= usage={`input_tokens`:10,`output_tokens`:1}",
     SAME_AUTO},
    {__LINE__, "events after message_stop are ignored", TS_FORMAT_ANTHROPIC,
     MSG_START MSG_STOP TEXT_DELTA(0, "late") EV("error", "{`type`:`error`,`error`:{`message`:`x`}}"),
     "T stop= usage={`input_tokens`:10,`output_tokens`:1}", SAME_AUTO},
};

#define GC(parts, extra) D("{`candidates`:[{`content`:{`parts`:[" parts "],`role`:`model`},`index`:0" extra "}]}")

#define X100 "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyzAB"
#define X600 X100 X100 X100 X100 X100 X100 /* longer than adapter.c's escaper buffer */
static const row gemini_rows[] = {
    {__LINE__, "text, two whole calls in one chunk, finishReason, usage; EOF ends", TS_FORMAT_GEMINI,
     GC("{`text`:`Hi`}", "")
     GC("{`functionCall`:{`name`:`f`,`args`:{`a`:1,`s`:`x\\u00e9`}},`thoughtSignature`:`sig`},"
        "{`functionCall`:{`id`:`fc-2`,`name`:`g`,`args`:{}}}",
        "")
     D("{`candidates`:[{`content`:{`parts`:[{`text`:``}],`role`:`model`},`finishReason`:`STOP`,`index`:0}],"
       "`usageMetadata`:{`totalTokenCount`:9}}"),
     "X 'Hi' | B0 - f | A0 '{`a`:1,`s`:`x\\u00e9`}' | E0 | B1 fc-2 g | A1 '{}' | E1 | "
     "T stop=STOP usage={`totalTokenCount`:9}",
     SAME_AUTO},
    {__LINE__, "a functionCall without args", TS_FORMAT_GEMINI, GC("{`functionCall`:{`name`:`ping`}}", ""),
     "B0 - ping | E0 | T stop=", SAME_AUTO},
    {__LINE__, "thought parts are skipped", TS_FORMAT_GEMINI,
     GC("{`text`:`thinking`,`thought`:true},{`text`:`answer`}", ",`finishReason`:`STOP`"),
     "X 'answer' | T stop=STOP", SAME_AUTO},
    {__LINE__, "error body: terminal", TS_FORMAT_GEMINI,
     GC("{`text`:`a`}", "")
     D("{`error`:{`code`:429,`message`:`Resource exhausted`,`status`:`RESOURCE_EXHAUSTED`}}")
     GC("{`text`:`b`}", ""),
     "X 'a' | !ms_provider/T 'Resource exhausted'", SAME_AUTO},
    {__LINE__, "error body in an array, as the first event", TS_FORMAT_GEMINI,
     D("[{`error`:{`code`:400,`message`:`Bad`,`status`:`INVALID_ARGUMENT`}}]"),
     "!ms_provider/T 'Bad'", SAME_AUTO},
    {__LINE__, "an array of chunks", TS_FORMAT_GEMINI,
     D("[{`candidates`:[{`content`:{`parts`:[{`text`:`a`}]}}]},{`candidates`:[{`content`:{`parts`:[{`text`:`b`}]},"
       "`finishReason`:`MAX_TOKENS`}]}]"),
     "X 'a' | X 'b' | T stop=MAX_TOKENS", SAME_AUTO},
    {__LINE__, "a blocked prompt: blockReason is the stop reason", TS_FORMAT_GEMINI,
     D("{`promptFeedback`:{`blockReason`:`SAFETY`},`usageMetadata`:{`promptTokenCount`:3}}"),
     "T stop=SAFETY usage={`promptTokenCount`:3}", SAME_AUTO},
    {__LINE__, "Vertex partialArgs: the arguments rebuilt in order", TS_FORMAT_GEMINI,
     GC("{`functionCall`:{`name`:`f`,`partialArgs`:[{`jsonPath`:`$.a`,`stringValue`:`x`,`willContinue`:true}],"
        "`willContinue`:true}}",
        "")
     GC("{`functionCall`:{`partialArgs`:[{`jsonPath`:`$.a`,`stringValue`:`y`}],`willContinue`:true}}", "")
     GC("{`functionCall`:{`name`:`f`}}", "") GC("{`functionCall`:{}}", ",`finishReason`:`STOP`"),
     "B0 - f | A0 '{' | A0 '`' | A0 'a' | A0 '`:' | A0 '`' | A0 'x' | A0 'y' | A0 '`' | A0 '}' | E0 | "
     "B1 - f | E1 | T stop=STOP",
     SAME_AUTO},
    {__LINE__, "Vertex partialArgs: nested containers, a quoted name, numbers and literals", TS_FORMAT_GEMINI,
     GC("{`functionCall`:{`name`:`g`,`willContinue`:true}}", "")
     GC("{`functionCall`:{`partialArgs`:[{`jsonPath`:`$.o[0].p`,`numberValue`:1.5},"
        "{`jsonPath`:`$.o[1]`,`boolValue`:false},{`jsonPath`:`$['k\\`']`,`nullValue`:null}],"
        "`willContinue`:true}}", "")
     GC("{`functionCall`:{}}", ""),
     "B0 - g | A0 '{' | A0 '`' | A0 'o' | A0 '`:' | A0 '[' | A0 '{' | A0 '`' | A0 'p' | A0 '`:' | "
     "A0 '1.5' | A0 '}' | A0 ',' | A0 'false' | A0 ']' | A0 ',' | A0 '`' | A0 'k\\`' | A0 '`:' | "
     "A0 'null' | A0 '}' | E0 | T stop=",
     SAME_AUTO},
    {__LINE__, "Vertex partialArgs: an index that goes back is a shape error, never a guess",
     TS_FORMAT_GEMINI,
     GC("{`functionCall`:{`name`:`g`,`willContinue`:true}}", "")
     GC("{`functionCall`:{`partialArgs`:[{`jsonPath`:`$.o[1]`,`numberValue`:1}],`willContinue`:true}}", "")
     GC("{`functionCall`:{}}", ""),
     "B0 - g | A0 '{' | A0 '`' | A0 'o' | A0 '`:' | A0 '[' | "
     "!ms_bad_shape 'Vertex partialArgs: a path that cannot be rebuilt in order' | E0 | T stop=",
     SAME_AUTO},
    {__LINE__, "Vertex partialArgs: every part repeats the call's id and name", TS_FORMAT_GEMINI,
     GC("{`functionCall`:{`id`:`c1`,`name`:`f`,`partialArgs`:[{`jsonPath`:`$.n`,`numberValue`:5}],"
        "`willContinue`:true}}", "")
     GC("{`functionCall`:{`id`:`c1`,`name`:`f`,`partialArgs`:[{`jsonPath`:`$.s`,`stringValue`:`wa`,"
        "`willContinue`:true}],`willContinue`:true}}", "")
     GC("{`functionCall`:{`id`:`c1`,`name`:`f`,`partialArgs`:[{`jsonPath`:`$.s`,`stringValue`:`rm`}],"
        "`willContinue`:false}}", ",`finishReason`:`STOP`"),
     "B0 c1 f | A0 '{' | A0 '`' | A0 'n' | A0 '`:' | A0 '5' | A0 ',' | A0 '`' | A0 's' | A0 '`:' | "
     "A0 '`' | A0 'wa' | A0 'rm' | A0 '`' | A0 '}' | E0 | T stop=STOP",
     SAME_AUTO},
    {__LINE__, "Vertex partialArgs: the name again with pieces continues; another id is a new call",
     TS_FORMAT_GEMINI,
     GC("{`functionCall`:{`name`:`f`,`willContinue`:true}}", "")
     GC("{`functionCall`:{`name`:`f`,`partialArgs`:[{`jsonPath`:`$.a`,`numberValue`:1}],`willContinue`:true}}", "")
     GC("{`functionCall`:{`name`:`g`,`partialArgs`:[{`jsonPath`:`$.b`,`numberValue`:2}],`willContinue`:true}}", "")
     GC("{`functionCall`:{`id`:`x`,`name`:`g`,`partialArgs`:[{`jsonPath`:`$.c`,`numberValue`:3}]}}", ""),
     "B0 - f | A0 '{' | A0 '`' | A0 'a' | A0 '`:' | A0 '1' | A0 '}' | E0 | B1 - g | A1 '{' | A1 '`' | "
     "A1 'b' | A1 '`:' | A1 '2' | A1 '}' | E1 | B2 x g | A2 '{' | A2 '`' | A2 'c' | A2 '`:' | A2 '3' | "
     "A2 '}' | E2 | T stop=",
     SAME_AUTO},
    {__LINE__, "a functionCall naming nothing is skipped", TS_FORMAT_GEMINI,
     GC("{`functionCall`:{}},{`functionCall`:{`id`:`x`}}", ""), "T stop=", SAME_AUTO},
    {__LINE__, "malformed chunk in the middle", TS_FORMAT_GEMINI,
     GC("{`text`:`a`}", "") D("{`candidates`:[{") GC("{`text`:`b`}", ""),
     "X 'a' | !ms_bad_json | X 'b' | T stop=", SAME_AUTO},
    {__LINE__, "[DONE] is not a Gemini event", TS_FORMAT_GEMINI, GC("{`text`:`a`}", "") DONE,
     "X 'a' | T stop=", SAME_AUTO},
    /* the shapes around Vertex's pieces that the one-pass reader leaves to the general way
     * (usage beside them, a thought part, two parts, a duplicate member) or reads itself
     * (a second candidate, an escaped value, a piece's members in any order): the same */
    {__LINE__, "Vertex partialArgs: the envelope around the pieces", TS_FORMAT_GEMINI,
     GC("{`functionCall`:{`name`:`g`,`willContinue`:true}}", "")
     D("{`candidates`:[{`content`:{`parts`:[{`functionCall`:{`willContinue`:true,`partialArgs`:["
       "{`willContinue`:true,`stringValue`:`x\\u00e9`,`jsonPath`:`$.a`}]}}]}},{`content`:{`parts`:[{`text`:`no`}]}}],"
       "`modelVersion`:`v`}")
     D("{`candidates`:[{`content`:{`parts`:[{`functionCall`:{`partialArgs`:[{`jsonPath`:`$.a`,"
       "`stringValue`:`y`}],`willContinue`:true}}]}}],`usageMetadata`:{`promptTokenCount`:1}}")
     GC("{`functionCall`:{`partialArgs`:[{`jsonPath`:`$.b`,`boolValue`:true}],`willContinue`:true}},{`text`:`t`}", "")
     GC("{`text`:`hm`,`thought`:true,`functionCall`:{`partialArgs`:[{`jsonPath`:`$.c`,`nullValue`:null}],"
        "`willContinue`:true}}", "")
     GC("{`functionCall`:{`partialArgs`:[{`jsonPath`:`$.d`,`jsonPath`:`$.e`,`numberValue`:2}],`willContinue`:true}}", "")
     GC("{`functionCall`:{}}", ",`finishReason`:`STOP`"),
     "B0 - g | A0 '{' | A0 '`' | A0 'a' | A0 '`:' | A0 '`' | A0 'x\xc3\xa9' | A0 'y' | A0 '`' | A0 ',' | "
     "A0 '`' | A0 'b' | A0 '`:' | A0 'true' | X 't' | A0 ',' | A0 '`' | A0 'd' | A0 '`:' | A0 '2' | A0 '}' | E0 | "
     "T stop=STOP usage={`promptTokenCount`:1}",
     SAME_AUTO},
    {__LINE__, "vertex: every byte a string value escapes; runs longer than the escaper's buffer", TS_FORMAT_GEMINI,
     GC("{`functionCall`:{`name`:`f`,`willContinue`:true}}", "")
     GC("{`functionCall`:{`partialArgs`:[{`jsonPath`:`$.a`,`stringValue`:"
        "`q\\`b\\\\n\\nt\\tr\\rb\\bf\\fu\\u0001\\u001f\\u007f\\u00e9z`,`willContinue`:true}],`willContinue`:true}}", "")
     GC("{`functionCall`:{`partialArgs`:[{`jsonPath`:`$.a`,`stringValue`:`" X600 "\\ny`,`willContinue`:true}],"
        "`willContinue`:true}}", "")
     GC("{`functionCall`:{`partialArgs`:[{`jsonPath`:`$.a`,`stringValue`:`" X600 "`}],`willContinue`:true}}", "")
     GC("{`functionCall`:{}}", ",`finishReason`:`STOP`"),
     "B0 - f | A0 '{' | A0 '`' | A0 'a' | A0 '`:' | A0 '`' | "
     "A0 'q\\`b\\\\n\\nt\\tr\\rb\\u0008f\\u000cu\\u0001\\u001f\x7f\xc3\xa9z' | A0 '" X600 "' | A0 '\\ny' | "
     "A0 '" X600 "' | A0 '`' | A0 '}' | E0 | T stop=STOP",
     SAME_AUTO},
};

/* Bedrock ConverseStream: each message's :event-type is the event name. */
static const row bedrock_rows[] = {
    {__LINE__, "text, a toolUse call in fragments, stop, metadata", TS_FORMAT_BEDROCK,
     EV("messageStart", "{`role`:`assistant`,`p`:`abc`}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`text`:`Hi`},`p`:`ab`}")
     EV("contentBlockStop", "{`contentBlockIndex`:0}")
     EV("contentBlockStart", "{`contentBlockIndex`:1,`start`:{`toolUse`:{`toolUseId`:`t1`,`name`:`f`}}}")
     EV("contentBlockDelta", "{`contentBlockIndex`:1,`delta`:{`toolUse`:{`input`:`{\\`a\\`:`}},`p`:`abcd`}")
     EV("contentBlockDelta", "{`delta`:{`toolUse`:{`input`:`1`}},`contentBlockIndex`:1}")
     EV("contentBlockDelta", "{`contentBlockIndex`:1,`delta`:{`toolUse`:{`input`:``}}}")
     EV("contentBlockDelta", "{`contentBlockIndex`:7,`delta`:{`toolUse`:{`input`:`lost`}}}")
     EV("contentBlockDelta", "{`contentBlockIndex`:1,`delta`:{`toolUse`:{`input`:null}}}")
     EV("contentBlockDelta", "{`contentBlockIndex`:1,`contentBlockIndex`:1,`delta`:{`toolUse`:{`input`:`}`}}}")
     EV("contentBlockStop", "{`contentBlockIndex`:1}")
     EV("messageStop", "{`stopReason`:`tool_use`}")
     EV("metadata", "{`usage`:{`inputTokens`:3,`outputTokens`:4},`metrics`:{`latencyMs`:5}}"),
     "X 'Hi' | B0 t1 f | A0 '{`a`:' | A0 '1' | A0 '}' | E0 | T stop=tool_use "
     "usage={`inputTokens`:3,`outputTokens`:4}",
     SAME_AUTO},
    {__LINE__, "a fragment that is not a string is the general way's shape error", TS_FORMAT_BEDROCK,
     EV("contentBlockStart", "{`contentBlockIndex`:0,`start`:{`toolUse`:{`toolUseId`:`t1`,`name`:`f`}}}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`toolUse`:{`input`:{`a`:1}}}}")
     EV("throttlingException", "{`message`:`Too many requests`}"),
     "B0 t1 f | !ms_bad_shape | !ms_provider/T 'Too many requests'", SAME_AUTO},
};

/* Rows about the adapter whatever the provider: detection while feeding. */
static const row auto_rows[] = {
    {__LINE__, "events that do not tell are ignored until one does", TS_FORMAT_ANTHROPIC,
     D("{`type`:`ping`}") MSG_START TEXT_START(0) TEXT_DELTA(0, "x") MSG_STOP,
     "X 'x' | T stop= usage={`input_tokens`:10,`output_tokens`:1}", SAME_AUTO},
    {__LINE__, "Anthropic detected from the payload type alone", TS_FORMAT_ANTHROPIC,
     D("{`type`:`message_start`,`message`:{}}") D("{`type`:`message_stop`}"), "T stop=", SAME_AUTO},
    {__LINE__, "Responses detected from the payload type alone", TS_FORMAT_OPENAI_RESPONSES,
     D("{`type`:`response.output_text.delta`,`delta`:`d`}") D("{`type`:`response.completed`}"),
     "X 'd' | T stop=completed", SAME_AUTO},
    {__LINE__, "Chat detected from [DONE] alone", TS_FORMAT_OPENAI_CHAT, DONE, "T stop=", SAME_AUTO},
};

START_TEST(test_chat_rows) { run_row(&chat_rows[_i]); }
END_TEST
START_TEST(test_responses_rows) { run_row(&responses_rows[_i]); }
END_TEST
START_TEST(test_anthropic_rows) { run_row(&anthropic_rows[_i]); }
END_TEST
START_TEST(test_gemini_rows) { run_row(&gemini_rows[_i]); }
END_TEST
START_TEST(test_bedrock_rows) { run_row(&bedrock_rows[_i]); }
END_TEST
START_TEST(test_auto_rows) { run_row(&auto_rows[_i]); }
END_TEST

#define NROWS(t) ((int)(sizeof(t) / sizeof((t)[0])))

/* ---- the corpus ---------------------------------------------------------------------------- */

typedef struct {
  int line;
  const char *file;
  ts_format fmt;
  const char *want;            /* gold trace, backticks for quotes */
  const char *args[3];         /* each call's concatenated arguments (NULL: not checked) */
  const char *description[3];  /* its decoded "description" (NULL: the arguments do not parse) */
} corpus_row;

static const corpus_row corpus[] = {
    {__LINE__, "openai-chat-two-parallel-calls.sse", TS_FORMAT_OPENAI_CHAT,
     "B0 call_W1w2iSIVgFh6DbbY4MN96QVL create_ticket | A0 '{`ti' | A0 'tle`:`Espresso machine' | "
     "A0 ' leaks`,`descr' | A0 'iption`:`Caf\\' | A0 'u00e9 counter unit drips when \\' | "
     "A0 '`steam\\` is on`,`pri' | A0 'ority`:2}' | B1 call_sHgK0WcRpW76QnTEUcvg5bSl notify_team | "
     "A1 '{`team`:`facil' | A1 'ities`,`desc' | A1 'ription`:`Leak near the espresso bar \\u20' | "
     "A1 '14 please check' | A1 ' today`}' | E0 | E1 | T stop=tool_calls "
     "usage={`prompt_tokens`:212,`completion_tokens`:71,`total_tokens`:283,`prompt_tokens_details`:"
     "{`cached_tokens`:0,`audio_tokens`:0},`completion_tokens_details`:{`reasoning_tokens`:0,"
     "`audio_tokens`:0,`accepted_prediction_tokens`:0,`rejected_prediction_tokens`:0}}",
     {"{`title`:`Espresso machine leaks`,`description`:`Caf\\u00e9 counter unit drips when \\`steam\\` "
      "is on`,`priority`:2}",
      "{`team`:`facilities`,`description`:`Leak near the espresso bar \\u2014 please check today`}"},
     {"Caf\xc3\xa9 counter unit drips when `steam` is on",
      "Leak near the espresso bar \xe2\x80\x94 please check today"}},
    {__LINE__, "openai-responses-one-call.sse", TS_FORMAT_OPENAI_RESPONSES,
     "B0 call_0esmlFtjfwVPOMHN6lgrILkG write_note | A0 '{`' | A0 'path`:`notes/cafe.md`,`de' | "
     "A0 'scription' | A0 '`:`Menu for Caf\\' | A0 'u00e9 \\`Le' | A0 ' Nord\\` \\u2014' | "
     "A0 ' weekend`,`overwrite`:' | A0 'false}' | E0 | T stop=completed "
     "usage={`input_tokens`:118,`input_tokens_details`:{`cached_tokens`:0},`output_tokens`:86,"
     "`output_tokens_details`:{`reasoning_tokens`:48},`total_tokens`:204}",
     {"{`path`:`notes/cafe.md`,`description`:`Menu for Caf\\u00e9 \\`Le Nord\\` \\u2014 weekend`,"
      "`overwrite`:false}"},
     {"Menu for Caf\xc3\xa9 `Le Nord` \xe2\x80\x94 weekend"}},
    {__LINE__, "anthropic-text-then-tool.sse", TS_FORMAT_ANTHROPIC,
     "X 'I'll look up the' | X ' terrace forecast for you.' | "
     "B0 toolu_01nZuo3XvQfykP1670hmSCVf get_forecast | A0 '{`location`: `Montr\\u00e9al`' | "
     "A0 ', `descri' | A0 'ption`: `Caf\\' | A0 'u00e9 terrace forecast for \\`bru' | "
     "A0 'nch\\` hours`, `units`: `me' | A0 'tric`}' | E0 | T stop=tool_use "
     "usage={`input_tokens`:612,`cache_creation_input_tokens`:0,`cache_read_input_tokens`:0,"
     "`cache_creation`:{`ephemeral_5m_input_tokens`:0,`ephemeral_1h_input_tokens`:0},"
     "`output_tokens`:97,`service_tier`:`standard`}",
     {"{`location`: `Montr\\u00e9al`, `description`: `Caf\\u00e9 terrace forecast for \\`brunch\\` "
      "hours`, `units`: `metric`}"},
     {"Caf\xc3\xa9 terrace forecast for `brunch` hours"}},
    {__LINE__, "anthropic-fine-grained-max-tokens.sse", TS_FORMAT_ANTHROPIC,
     "B0 toolu_018TeYXoT9SJtPBCISKs5dT6 make_file | A0 '{`filename`: `cafe-notes.md`, `descr' | "
     "A0 'iption`: `Caf\\' | A0 'u00e9 opening checklist: unlock doors, \\`warm up\\` the grinder, "
     "check the pastry' | E0 | T stop=max_tokens usage={`input_tokens`:455,"
     "`cache_creation_input_tokens`:0,`cache_read_input_tokens`:0,`output_tokens`:48,"
     "`service_tier`:`standard`}",
     {"{`filename`: `cafe-notes.md`, `description`: `Caf\\u00e9 opening checklist: unlock doors, "
      "\\`warm up\\` the grinder, check the pastry"},
     {NULL}},
    {__LINE__, "gemini-sse-two-function-calls.sse", TS_FORMAT_GEMINI,
     "X 'Filing the ticket and notifying the team.' | B0 - create_ticket | "
     "A0 '{`title`:`Espresso machine leaks`,`description`:`Caf\\u00e9 counter unit drips when "
     "\\`steam\\` is on`,`priority`:2}' | E0 | B1 - notify_team | "
     "A1 '{`team`:`facilities`,`description`:`Leak near the espresso bar \\u2014 please check today`}' | "
     "E1 | T stop=STOP usage={`promptTokenCount`:188,`candidatesTokenCount`:61,`totalTokenCount`:249,"
     "`promptTokensDetails`:[{`modality`:`TEXT`,`tokenCount`:188}]}",
     {"{`title`:`Espresso machine leaks`,`description`:`Caf\\u00e9 counter unit drips when \\`steam\\` "
      "is on`,`priority`:2}",
      "{`team`:`facilities`,`description`:`Leak near the espresso bar \\u2014 please check today`}"},
     {"Caf\xc3\xa9 counter unit drips when `steam` is on",
      "Leak near the espresso bar \xe2\x80\x94 please check today"}},
    {__LINE__, "ollama-openai-compat-whole-args.sse", TS_FORMAT_OPENAI_CHAT,
     "B0 call_szc7mat6 create_ticket | A0 '{`title`:`Espresso machine leaks`,`description`:`Caf\xc3\xa9 "
     "counter unit drips when \\`steam\\` \\u0026 milk are on`,`priority`:2}' | B1 call_2g6eum7f "
     "notify_team | A1 '{`team`:`facilities`,`description`:`Leak near the espresso bar \xe2\x80\x94 please "
     "check today`}' | E0 | E1 | T stop=tool_calls",
     {"{`title`:`Espresso machine leaks`,`description`:`Caf\xc3\xa9 counter unit drips when \\`steam\\` "
      "\\u0026 milk are on`,`priority`:2}",
      "{`team`:`facilities`,`description`:`Leak near the espresso bar \xe2\x80\x94 please check today`}"},
     {"Caf\xc3\xa9 counter unit drips when `steam` & milk are on",
      "Leak near the espresso bar \xe2\x80\x94 please check today"}},
};

static void check_corpus(const corpus_row *c, ts_format fmt) {
  char rel[256];
  snprintf(rel, sizeof rel, "tests/corpus/%s", c->file);
  size_t len;
  char *text = ts_test_read_file(ts_test_path(rel), &len);
  R.abort_at = 0;
  run_text(fmt, text, len, &R);
  free(text);
  char *want = tick(c->want);
  expect_trace(c->line, c->file, ts_format_name(fmt), &R, want);
  free(want);
  ck_assert_int_eq(R.format, c->fmt);
  ck_assert(R.done);
  for (int k = 0; k < 3 && c->args[k]; k++) {
    char *args = tick(c->args[k]);
    ck_assert_msg(R.args_len[k] == strlen(args) && memcmp(R.args[k], args, R.args_len[k]) == 0,
                  "%s call %d arguments:\n got: %.*s\nwant: %s", c->file, k, (int)R.args_len[k],
                  R.args[k], args);
    free(args);
    /* the description, as the argument tokenizer downstream would decode it */
    ts_jv jv;
    ck_assert_int_eq(ts_jv_init(&jv, 64), TS_E_OK);
    int rc = ts_jv_parse(&jv, R.args[k], R.args_len[k]);
    if (!c->description[k]) {
      ck_assert_int_eq(rc, TS_E_JV_BAD_JSON); /* incomplete: the call never completed */
    } else {
      char *d = tick(c->description[k]);
      ck_assert_int_eq(rc, TS_E_OK);
      ts_view v;
      ck_assert_int_eq(ts_jv_str(&jv, ts_jv_get(&jv, 0, "description"), &v), TS_E_OK);
      ck_assert_msg(v.len == strlen(d) && memcmp(v.p, d, v.len) == 0, "%s call %d description: %.*s",
                    c->file, k, (int)v.len, v.p);
      free(d);
    }
    ts_jv_fini(&jv);
  }
}

START_TEST(test_corpus) {
  check_corpus(&corpus[_i], corpus[_i].fmt);
  check_corpus(&corpus[_i], TS_FORMAT_AUTO);
}
END_TEST

/* The shape memo on the captured streams: every delta-heavy capture must be read partly
 * from the memo (a memo that never hits fails here), with the same trace as without it
 * and the general way. */
static const struct {
  const char *file;
  ts_format fmt;
} memo_corpus[] = {
    {"openai-chat-two-parallel-calls.sse", TS_FORMAT_OPENAI_CHAT},
    {"openai-responses-one-call.sse", TS_FORMAT_OPENAI_RESPONSES},
    {"anthropic-text-then-tool.sse", TS_FORMAT_ANTHROPIC},
    {"anthropic-fine-grained-max-tokens.sse", TS_FORMAT_ANTHROPIC},
};

START_TEST(test_memo_corpus) {
  char rel[256];
  snprintf(rel, sizeof rel, "tests/corpus/%s", memo_corpus[_i].file);
  size_t len;
  char *text = ts_test_read_file(ts_test_path(rel), &len);
  R.abort_at = 0;
  R.general = 1;
  run_text(memo_corpus[_i].fmt, text, len, &R);
  R.general = 0;
  char *general = strdup(R.trace);
  ck_assert(general && !R.overflow);
  R.no_memo = 1;
  run_text(memo_corpus[_i].fmt, text, len, &R);
  R.no_memo = 0;
  expect_trace(__LINE__, memo_corpus[_i].file, "no memo", &R, general);
  ck_assert(R.memo_hits == 0);
  run_text(memo_corpus[_i].fmt, text, len, &R);
  expect_trace(__LINE__, memo_corpus[_i].file, "memo", &R, general);
  ck_assert_msg(R.memo_hits > 0, "%s: no payload read from the memo", memo_corpus[_i].file);
  free(general);
  free(text);
}
END_TEST

/* ---- limits -------------------------------------------------------------------------------- */

/* Builds a stream into a growing heap buffer. */
/* Streams are built in the string builder of support/sb.h. */
static void run_sb(ts_format fmt, sb *b) {
  char *t = tick(b->p);
  R.abort_at = 0;
  run_text(fmt, t, strlen(t), &R);
  free(t);
  free(b->p);
  memset(b, 0, sizeof *b);
  ck_assert_msg(!R.bad[0], "%s", R.bad);
  ck_assert_msg(R.allocs <= TS_ADAPTER_FEED_ALLOCS, "%llu allocations while feeding",
                (unsigned long long)R.allocs);
  ck_assert(!R.overflow);
}

START_TEST(test_too_many_tokens) {
  /* one payload over the token limit: an error for that event; the stream goes on */
  sb b = {0};
  sb_puts(&b, "data: {`choices`:[{`index`:0,`delta`:{`content`:`a`}}],`x`:[0");
  for (int i = 0; i < TS_ADAPTER_MAX_TOKENS; i++) sb_puts(&b, ",0");
  sb_puts(&b, "]}\n\n");
  sb_puts(&b, D("{`choices`:[{`index`:0,`delta`:{`content`:`b`}}]}") DONE);
  char *t = tick(b.p);
  free(b.p);
  R.abort_at = 0;
  /* the one-pass reader (provider.h, fast_event) has no token array: it reads it whole */
  run_text(TS_FORMAT_OPENAI_CHAT, t, strlen(t), &R);
  expect_trace(__LINE__, "too many tokens, one pass", "chat", &R, "X 'a' | X 'b' | T stop=");
  /* the general way, through the token array */
  R.general = 1;
  run_text(TS_FORMAT_OPENAI_CHAT, t, strlen(t), &R);
  R.general = 0;
  expect_trace(__LINE__, "too many tokens", "chat", &R, "!ms_too_many_tokens | X 'b' | T stop=");
  /* exactly at the limit it parses: TS_ADAPTER_MAX_TOKENS - 5 elements, 2 keys, 2 arrays, 1 object */
  sb c = {0};
  sb_puts(&c, "data: {`x`:[0");
  for (int i = 1; i < TS_ADAPTER_MAX_TOKENS - 5; i++) sb_puts(&c, ",0");
  sb_puts(&c, "],`choices`:[]}\n\n");
  sb_puts(&c, DONE);
  free(t);
  t = tick(c.p);
  free(c.p);
  run_text(TS_FORMAT_OPENAI_CHAT, t, strlen(t), &R);
  free(t);
  expect_trace(__LINE__, "exactly the token limit", "chat", &R, "T stop=");
}
END_TEST

START_TEST(test_too_many_tokens_responses) {
  /* a delta carrying more tokens than the token array holds: the one-pass reader
   * (provider.h, fast_event) reads it whole, the general way refuses it */
  sb b = {0};
  sb_puts(&b, "event: response.output_item.added\ndata: {`type`:`response.output_item.added`,"
             "`item`:{`id`:`fc_1`,`type`:`function_call`,`call_id`:`c1`,`name`:`f`}}\n\n");
  sb_puts(&b, "event: response.function_call_arguments.delta\ndata: {`type`:"
             "`response.function_call_arguments.delta`,`item_id`:`fc_1`,`delta`:`{}`,`x`:[0");
  for (int i = 0; i < TS_ADAPTER_MAX_TOKENS; i++) sb_puts(&b, ",0");
  sb_puts(&b, "]}\n\nevent: response.completed\ndata: {`type`:`response.completed`}\n\n");
  char *t = tick(b.p);
  free(b.p);
  run_mode(TS_FORMAT_OPENAI_RESPONSES, t, strlen(t), 0, 0, 0, 0);
  expect_trace(__LINE__, "too many tokens, one pass", "responses", &R,
               "B0 c1 f | A0 '{}' | E0 | T stop=completed");
  run_mode(TS_FORMAT_OPENAI_RESPONSES, t, strlen(t), 0, 1, 0, 0);
  expect_trace(__LINE__, "too many tokens", "responses", &R,
               "B0 c1 f | !ms_too_many_tokens | E0 | T stop=completed");
  free(t);
}
END_TEST

START_TEST(test_responses_huge_terminal) {
  /* response.completed echoing more than the token array holds still ends the turn */
  sb b = {0};
  sb_puts(&b, "event: response.output_item.added\ndata: {`type`:`response.output_item.added`,"
             "`output_index`:0,`item`:{`id`:`fc_1`,`type`:`function_call`,`call_id`:`c1`,"
             "`name`:`f`,`arguments`:``}}\n\n");
  sb_puts(&b, "event: response.function_call_arguments.delta\ndata: {`type`:"
             "`response.function_call_arguments.delta`,`item_id`:`fc_1`,`delta`:`{}`}\n\n");
  sb_puts(&b, "event: response.completed\ndata: {`type`:`response.completed`,`response`:"
             "{`status`:`completed`,`tools`:[0");
  for (int i = 0; i < TS_ADAPTER_MAX_TOKENS; i++) sb_puts(&b, ",0");
  sb_puts(&b, "],`usage`:{`total_tokens`:9}}}\n\n");
  char *t = tick(b.p);
  free(b.p);
  /* the one pass reads it whole, usage and all (no token array); the general way ends
   * the turn by the event's name alone */
  run_mode(TS_FORMAT_OPENAI_RESPONSES, t, strlen(t), 0, 0, 0, 0);
  expect_trace(__LINE__, "huge terminal, one pass", "responses", &R,
               "B0 c1 f | A0 '{}' | E0 | T stop=completed usage={\"total_tokens\":9}");
  run_mode(TS_FORMAT_OPENAI_RESPONSES, t, strlen(t), 0, 1, 0, 0);
  free(t);
  expect_trace(__LINE__, "huge terminal", "general", &R, "B0 c1 f | A0 '{}' | E0 | T stop=completed");
}
END_TEST

START_TEST(test_too_many_calls_chat) {
  /* TS_ADAPTER_MAX_CALLS + 2 calls, whole, in one chunk: the last two are refused */
  sb b = {0};
  sb_puts(&b, "data: {`choices`:[{`index`:0,`delta`:{`tool_calls`:[");
  for (int i = 0; i < TS_ADAPTER_MAX_CALLS + 2; i++) {
    if (i) sb_puts(&b, ",");
    sb_printf(&b, "{`index`:%d,`id`:`c%d`,`function`:{`name`:`f`,`arguments`:`{}`}}", i, i);
  }
  sb_puts(&b, "]}}]}\n\n");
  /* later pieces of the refused calls, by index and without any key: dropped quietly,
   * never pinned on call 255 */
  sb_puts(&b, TC("{`index`:256,`function`:{`arguments`:`x`}}") TC("{`function`:{`arguments`:`y`}}")
                 FIN("tool_calls") DONE);
  run_sb(TS_FORMAT_OPENAI_CHAT, &b);
  ck_assert_ptr_nonnull(strstr(R.trace, "B255 c255 f | A255 '{}' | !ms_too_many_calls | E0 | E1 |"));
  ck_assert_ptr_null(strstr(R.trace, "B256"));
  ck_assert_ptr_null(strstr(R.trace, "'x'"));
  ck_assert_ptr_null(strstr(R.trace, "'y'"));
  ck_assert_ptr_nonnull(strstr(R.trace, "E255 | T stop=tool_calls"));
}
END_TEST

START_TEST(test_too_many_calls_anthropic) {
  sb b = {0};
  sb_puts(&b, MSG_START);
  for (int i = 0; i <= TS_ADAPTER_MAX_CALLS; i++) {
    sb_printf(&b, "event: content_block_start\ndata: {`type`:`content_block_start`,`index`:%d,"
                "`content_block`:{`type`:`tool_use`,`id`:`t%d`,`name`:`f`,`input`:{}}}\n\n",
            i, i);
    sb_printf(&b, "event: content_block_delta\ndata: {`type`:`content_block_delta`,`index`:%d,"
                "`delta`:{`type`:`input_json_delta`,`partial_json`:`{}`}}\n\n",
            i);
    sb_printf(&b, "event: content_block_stop\ndata: {`type`:`content_block_stop`,`index`:%d}\n\n", i);
  }
  sb_puts(&b, MSG_STOP);
  run_sb(TS_FORMAT_ANTHROPIC, &b);
  ck_assert_ptr_nonnull(strstr(R.trace, "B255 t255 f | A255 '{}' | E255 | !ms_too_many_calls | T stop="));
}
END_TEST

START_TEST(test_id_limits) {
  char id[TS_ADAPTER_MAX_ID + 2];
  memset(id, 'x', sizeof id - 1);
  id[sizeof id - 1] = 0;
  id[TS_ADAPTER_MAX_ID] = 0; /* exactly the limit: fits, and matching by it works */
  sb b = {0};
  sb_puts(&b, "data: {`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`id`:`");
  sb_puts(&b, id);
  sb_puts(&b, "`,`function`:{`name`:`f`,`arguments`:`{`}}]}}]}\n\n");
  sb_puts(&b, "data: {`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`id`:`");
  sb_puts(&b, id);
  sb_puts(&b, "`,`function`:{`arguments`:`}`}}]}}]}\n\n" FIN("tool_calls") DONE);
  run_sb(TS_FORMAT_OPENAI_CHAT, &b);
  ck_assert_uint_eq(strlen(R.trace), strlen("B0  f | A0 '{' | A0 '}' | E0 | T stop=tool_calls") + TS_ADAPTER_MAX_ID);
  ck_assert_ptr_nonnull(strstr(R.trace, "x f | A0 '{' | A0 '}' | E0 | T stop=tool_calls"));

  /* one byte more: refused; its pieces (by index, or continuing it) are dropped; the next
   * call is index 0 */
  id[TS_ADAPTER_MAX_ID] = 'x';
  sb_puts(&b, "data: {`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`index`:0,`id`:`");
  sb_puts(&b, id);
  sb_puts(&b, "`,`function`:{`name`:`f`,`arguments`:`{`}}]}}]}\n\n");
  sb_puts(&b, TC("{`index`:0,`function`:{`arguments`:`}`}}") TC("{`function`:{`arguments`:`}`}}")
                 TC("{`index`:1,`id`:`b`,`function`:{`name`:`g`,`arguments`:`{}`}}") FIN("tool_calls")
                     DONE);
  run_sb(TS_FORMAT_OPENAI_CHAT, &b);
  ck_assert_str_eq(R.trace, "!ms_id_too_long | B0 b g | A0 '{}' | E0 | T stop=tool_calls");

  /* a Responses item id over the limit: refused with its deltas */
  sb_puts(&b, "event: response.output_item.added\ndata: {`type`:`response.output_item.added`,"
             "`item`:{`type`:`function_call`,`call_id`:`call_1`,`name`:`f`,`id`:`");
  sb_puts(&b, id);
  sb_puts(&b, "`}}\n\nevent: response.function_call_arguments.delta\ndata: "
             "{`type`:`response.function_call_arguments.delta`,`delta`:`{}`,`item_id`:`");
  sb_puts(&b, id);
  sb_puts(&b, "`}\n\n" ADDED("fc_2", "call_2", "g", "") COMPLETED(""));
  run_sb(TS_FORMAT_OPENAI_RESPONSES, &b);
  ck_assert_str_eq(R.trace, "!ms_id_too_long | B0 call_2 g | E0 | T stop=completed");
}
END_TEST

START_TEST(test_name_too_long) {
  char name[TS_ADAPTER_MAX_ID + 2];
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = 0;
  sb b = {0};
  sb_puts(&b, MSG_START);
  sb_puts(&b, "event: content_block_start\ndata: {`type`:`content_block_start`,`index`:0,"
             "`content_block`:{`type`:`tool_use`,`id`:`t0`,`name`:`");
  sb_puts(&b, name);
  sb_puts(&b, "`,`input`:{}}}\n\n");
  sb_puts(&b, JSON_DELTA(0, "{}") BLOCK_STOP(0) TOOL_START(1, "t1", "g", "{}") JSON_DELTA(1, "{}")
                 BLOCK_STOP(1) MSG_STOP);
  run_sb(TS_FORMAT_ANTHROPIC, &b);
  char *want = tick("!ms_id_too_long | B0 t1 g | A0 '{}' | E0 | T stop= "
                    "usage={`input_tokens`:10,`output_tokens`:1}");
  ck_assert_str_eq(R.trace, want);
  free(want);
}
END_TEST

START_TEST(test_field_too_long) {
  char big[TS_ADAPTER_MAX_USAGE + 16];
  memset(big, 'u', sizeof big - 1);
  big[sizeof big - 1] = 0;
  /* usage over the limit: an error, and the turn ends without usage */
  sb b = {0};
  sb_puts(&b, "data: {`choices`:[],`usage`:{`note`:`");
  sb_puts(&b, big);
  sb_puts(&b, "`}}\n\n" DONE);
  run_sb(TS_FORMAT_OPENAI_CHAT, &b);
  ck_assert_str_eq(R.trace, "!ms_field_too_long | T stop=");
  /* a stop reason over TS_ADAPTER_MAX_ID: an error, an empty stop reason, still a finish */
  big[TS_ADAPTER_MAX_ID + 1] = 0;
  sb_puts(&b, "data: {`choices`:[{`index`:0,`delta`:{},`finish_reason`:`");
  sb_puts(&b, big);
  sb_puts(&b, "`}]}\n\n");
  run_sb(TS_FORMAT_OPENAI_CHAT, &b);
  ck_assert_str_eq(R.trace, "!ms_field_too_long | T stop=");
  /* exactly TS_ADAPTER_MAX_ID bytes of stop reason fit */
  big[TS_ADAPTER_MAX_ID] = 0;
  sb_puts(&b, "data: {`choices`:[{`index`:0,`delta`:{},`finish_reason`:`");
  sb_puts(&b, big);
  sb_puts(&b, "`}]}\n\n");
  run_sb(TS_FORMAT_OPENAI_CHAT, &b);
  ck_assert_uint_eq(strlen(R.trace), strlen("T stop=") + TS_ADAPTER_MAX_ID);
  ck_assert_int_eq(R.first_err, 0);
}
END_TEST

/* ---- the API ------------------------------------------------------------------------------- */

START_TEST(test_format_names) {
  static const struct {
    ts_format f;
    const char *name;
  } names[] = {
      {TS_FORMAT_AUTO, "auto"},           {TS_FORMAT_OPENAI_CHAT, "openai-chat"},
      {TS_FORMAT_OPENAI_RESPONSES, "openai-responses"}, {TS_FORMAT_ANTHROPIC, "anthropic"},
      {TS_FORMAT_GEMINI, "gemini"},       {TS_FORMAT_RAW, "raw"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    ck_assert_str_eq(ts_format_name(names[i].f), names[i].name);
    ck_assert_int_eq(ts_format_parse(names[i].name), (int)names[i].f);
  }
  ck_assert_int_eq(ts_format_parse("openai"), -1);
  ck_assert_int_eq(ts_format_parse(""), -1);
  ck_assert_int_eq(ts_format_parse(NULL), -1);
  ck_assert_str_eq(ts_format_name((ts_format)99), "unknown");
}
END_TEST

static const struct {
  int line;
  const char *label;
  const char *event;
  const char *data;
  ts_format want;
} detect_rows[] = {
    {__LINE__, "responses by name", "response.created", "", TS_FORMAT_OPENAI_RESPONSES},
    {__LINE__, "responses by name, junk data", "response.output_text.delta", "junk", TS_FORMAT_OPENAI_RESPONSES},
    {__LINE__, "anthropic by name", "message_start", "{}", TS_FORMAT_ANTHROPIC},
    {__LINE__, "anthropic block by name", "content_block_delta", "", TS_FORMAT_ANTHROPIC},
    {__LINE__, "ping tells nothing", "ping", "{`type`: `ping`}", TS_FORMAT_AUTO},
    {__LINE__, "error event tells nothing", "error", "{`type`:`error`,`error`:{`message`:`x`}}", TS_FORMAT_AUTO},
    {__LINE__, "[DONE]", "", "[DONE]", TS_FORMAT_OPENAI_CHAT},
    {__LINE__, "[DONE] padded", NULL, " [DONE]\n", TS_FORMAT_OPENAI_CHAT},
    {__LINE__, "chat by choices", "", "{`id`:`x`,`choices`:[]}", TS_FORMAT_OPENAI_CHAT},
    {__LINE__, "chat by object", "", "{`object`:`chat.completion.chunk`}", TS_FORMAT_OPENAI_CHAT},
    {__LINE__, "anthropic by payload type", "", "{`type`:`content_block_start`,`index`:0}", TS_FORMAT_ANTHROPIC},
    {__LINE__, "responses by payload type", "", "{`type`:`response.completed`}", TS_FORMAT_OPENAI_RESPONSES},
    {__LINE__, "gemini by candidates", "", "{`candidates`:[]}", TS_FORMAT_GEMINI},
    {__LINE__, "gemini by usageMetadata", "", "{`usageMetadata`:{}}", TS_FORMAT_GEMINI},
    {__LINE__, "gemini by promptFeedback", "", "{`promptFeedback`:{}}", TS_FORMAT_GEMINI},
    {__LINE__, "gemini array", "", "[{`candidates`:[]}]", TS_FORMAT_GEMINI},
    {__LINE__, "an error body tells nothing", "", "{`error`:{`message`:`x`}}", TS_FORMAT_AUTO},
    {__LINE__, "not JSON", "", "choices", TS_FORMAT_AUTO},
    {__LINE__, "empty", "", "", TS_FORMAT_AUTO},
    {__LINE__, "a key inside a string is not a key", "", "{`x`:`\\`choices\\`:[]`}", TS_FORMAT_AUTO},
    {__LINE__, "a nested key is not a top-level key", "", "{`x`:{`candidates`:[]}}", TS_FORMAT_AUTO},
    {__LINE__, "a type that is not a string", "", "{`type`:{`message_start`:1}}", TS_FORMAT_AUTO},
    {__LINE__, "unknown type", "", "{`type`:`something`}", TS_FORMAT_AUTO},
    {__LINE__, "truncated payload", "", "{`choices`:[", TS_FORMAT_AUTO},
};

START_TEST(test_detect) {
  for (size_t i = 0; i < sizeof detect_rows / sizeof detect_rows[0]; i++) {
    char *data = tick(detect_rows[i].data);
    const char *ev = detect_rows[i].event;
    ts_format got = ts_adapter_detect(ev, ev ? strlen(ev) : 0, data, strlen(data));
    ck_assert_msg(got == detect_rows[i].want, "line %d (%s): got %s", detect_rows[i].line,
                  detect_rows[i].label, ts_format_name(got));
    free(data);
  }
  ck_assert_int_eq(ts_adapter_detect(NULL, 0, NULL, 0), TS_FORMAT_AUTO);
}
END_TEST

START_TEST(test_detect_out_of_memory) {
  ts_test_alloc_fail_after(1);
  ts_format f = ts_adapter_detect("", 0, "{\"choices\":[]}", 14);
  ts_test_alloc_fail_after(-1);
  ck_assert_int_eq(f, TS_FORMAT_AUTO);
}
END_TEST

static int noop_cb(void *user, const ts_adapter_event *ev) {
  (void)user;
  (void)ev;
  return 0;
}

/* Responses' keep question, name by name: the names it cuts or bounds and, of the same
 * lengths, names one byte off them (answered "all"), with no call open and with a call
 * open that has no arguments yet (the .done events kept then). Before any call an item's
 * `.done` is kept too: it may be a call sent only so. */
START_TEST(test_keep_responses) {
  static const struct {
    const char *name;
    size_t none, open; /* the answer with no call, with a call open without arguments */
  } want[] = {
      {"response.created", 0, 0},
      {"response.in_progress", 0, 0},
      {"response.queued", 0, 0},
      {"response.function_call_arguments.done", 0, SIZE_MAX},
      {"response.output_item.done", SIZE_MAX, SIZE_MAX},
      {"response.completed", (size_t)1 << 20, (size_t)1 << 20},
      {"response.incomplete", (size_t)1 << 20, (size_t)1 << 20},
      {"response.function_call_arguments.delta", SIZE_MAX, SIZE_MAX},
      {"response.output_text.delta", SIZE_MAX, SIZE_MAX},
      {"response.failed", SIZE_MAX, SIZE_MAX},
      {"", SIZE_MAX, SIZE_MAX},
  };
  ts_adapter *u = new_adapter(TS_FORMAT_AUTO, noop_cb, NULL);
  ck_assert(ts_adapter_keep_whole_lengths(u) == 0); /* undecided: nothing promised */
  ts_adapter_free(u);
  for (int open = 0; open < 2; open++) {
    ts_adapter *a = new_adapter(TS_FORMAT_OPENAI_RESPONSES, noop_cb, NULL);
    uint64_t whole = ts_adapter_keep_whole_lengths(a);
    ck_assert(whole >> 38 & 1); /* the argument delta's name: never asked */
    if (open) {
      char ev[] = "{\"type\":\"response.output_item.added\",\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\","
                  "\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"\"}}";
      ck_assert_int_eq(ts_adapter_feed_event(a, "response.output_item.added", 26, ev, strlen(ev)), TS_E_OK);
    }
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
      size_t n = strlen(want[i].name), k = open ? want[i].open : want[i].none;
      ck_assert_msg(ts_adapter_keep(a, want[i].name, n) == k, "%s (call open: %d)", want[i].name, open);
      if (n < 64 && (whole >> n & 1)) /* the promise: a length kept whole has no other answer */
        ck_assert_msg(k == SIZE_MAX, "%s: its length is promised whole (call open: %d)", want[i].name, open);
      char off[64];
      memcpy(off, want[i].name, n);
      for (size_t j = 0; j < n; j++) { /* one byte off: not the name, "all" */
        off[j] ^= 0x20;
        ck_assert_msg(ts_adapter_keep(a, off, n) == SIZE_MAX, "%s with byte %zu changed", want[i].name, j);
        off[j] ^= 0x20;
      }
    }
    ts_adapter_free(a);
  }
  /* after a call that came in deltas and is done, an item's `.done` repeats what came;
   * after a call that came only as its `.done`, every `.done` is read */
  for (int only = 0; only < 2; only++) {
    ts_adapter *a = new_adapter(TS_FORMAT_OPENAI_RESPONSES, noop_cb, NULL);
    char added[] = "{\"type\":\"response.output_item.added\",\"item\":{\"id\":\"fc_1\",\"type\":"
                   "\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"\"}}";
    char delta[] = "{\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"delta\":\"{}\"}";
    char done[] = "{\"type\":\"response.output_item.done\",\"item\":{\"id\":\"fc_1\",\"type\":"
                  "\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"{}\"}}";
    if (!only) {
      ck_assert_int_eq(ts_adapter_feed_event(a, "response.output_item.added", 26, added, strlen(added)), TS_E_OK);
      ck_assert_int_eq(ts_adapter_feed_event(a, "response.function_call_arguments.delta", 38, delta,
                                             strlen(delta)), TS_E_OK);
    }
    ck_assert_int_eq(ts_adapter_feed_event(a, "response.output_item.done", 25, done, strlen(done)), TS_E_OK);
    ck_assert(ts_adapter_keep(a, "response.output_item.done", 25) == (only ? SIZE_MAX : 0));
    ts_adapter_free(a);
  }
}
END_TEST

/* ts_adapter_keeps: whether ts_adapter_keep may yet answer anything but SIZE_MAX (the
 * tap stops asking the SSE framer's keep question when it says no). */
START_TEST(test_keeps) {
  ts_adapter *a = new_adapter(TS_FORMAT_AUTO, noop_cb, NULL);
  ck_assert_int_eq(ts_adapter_keeps(a), 1); /* undetected: Responses may yet read it */
  char ev[] = "{\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}";
  ck_assert_int_eq(ts_adapter_feed_event(a, "message_start", 13, ev, strlen(ev)), TS_E_OK);
  ck_assert_int_eq(ts_adapter_format_of(a), TS_FORMAT_ANTHROPIC);
  ck_assert_int_eq(ts_adapter_keeps(a), 0); /* Anthropic keeps every event whole */
  ck_assert_uint_eq(ts_adapter_keep(a, "content_block_delta", 19), SIZE_MAX);
  ts_adapter_free(a);
  a = new_adapter(TS_FORMAT_OPENAI_RESPONSES, noop_cb, NULL);
  ck_assert_int_eq(ts_adapter_keeps(a), 1);
  ck_assert_uint_eq(ts_adapter_keep(a, "response.created", 16), 0);
  ck_assert_int_eq(ts_adapter_finish(a), TS_E_MS_TRUNCATED);
  ck_assert_int_eq(ts_adapter_keeps(a), 0); /* finished: it reads no more */
  ts_adapter_free(a);
  ck_assert_int_eq(ts_adapter_keeps(NULL), 0);
}
END_TEST

START_TEST(test_new_and_free) {
  /* a bad config is TS_E_INVAL and *out stays as it was */
  ts_adapter *a = (ts_adapter *)&R;
  ck_assert_int_eq(ts_adapter_new(&a, TS_FORMAT_RAW, noop_cb, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_adapter_new(&a, (ts_format)42, noop_cb, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_adapter_new(&a, TS_FORMAT_AUTO, NULL, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_adapter_new(NULL, TS_FORMAT_AUTO, noop_cb, NULL), TS_E_INVAL);
  ck_assert_ptr_eq(a, (ts_adapter *)&R);
  ts_adapter_free(NULL);
  /* out of memory at every allocation ts_adapter_new makes: TS_E_NOMEM (not INVAL), *out
   * untouched, and nothing leaks (ASan) */
  int made = 0;
  for (long n = 1; n < 10 && !made; n++) {
    a = NULL;
    ts_test_alloc_fail_after(n);
    int rc = ts_adapter_new(&a, TS_FORMAT_GEMINI, noop_cb, NULL);
    ts_test_alloc_fail_after(-1);
    if (rc == TS_E_OK) {
      made = 1;
      ck_assert_int_eq(n, 2); /* the adapter alone: the rest comes with its first use */
      ck_assert_ptr_nonnull(a);
      ts_adapter_free(a);
    } else {
      ck_assert_int_eq(rc, TS_E_NOMEM);
      ck_assert_ptr_null(a);
    }
  }
  ck_assert(made);
  a = new_adapter(TS_FORMAT_ANTHROPIC, noop_cb, NULL);
  ck_assert_int_eq(ts_adapter_format_of(a), TS_FORMAT_ANTHROPIC);
  ck_assert_int_eq(ts_adapter_feed_event(a, "", 0, NULL, 3), TS_E_INVAL);
  ck_assert_int_eq(ts_adapter_feed_event(a, NULL, 0, NULL, 0), TS_E_OK);
  ck_assert_int_eq(ts_adapter_feed_event(NULL, NULL, 0, NULL, 0), TS_E_INVAL);
  ck_assert_int_eq(ts_adapter_finish(NULL), TS_E_INVAL);
  ts_adapter_free(a);
}
END_TEST

/* ---- memory: what a turn holds comes with its first use ---------------------------------- */

static int count_begins(void *user, const ts_adapter_event *ev) {
  if (ev->kind == TS_ADAPTER_CALL_BEGIN) ++*(int *)user;
  return 0;
}

/* Feeds one payload (backticks for quotes) from a writable copy; returns what feed did
 * and, in *allocs, how many allocations it made. */
static int feed_counted(ts_adapter *a, const char *name, const char *json, uint64_t *allocs) {
  char *p = tick(json);
  uint64_t before = ts_test_alloc_count();
  int rc = ts_adapter_feed_event(a, name, name ? strlen(name) : 0, p, strlen(p));
  *allocs = ts_test_alloc_count() - before;
  free(p);
  return rc;
}

/* The same with the feed's first allocation failing. */
static int feed_failing(ts_adapter *a, const char *json) {
  char *p = tick(json);
  ts_test_alloc_fail_after(1);
  int rc = ts_adapter_feed_event(a, NULL, 0, p, strlen(p));
  ts_test_alloc_fail_after(-1);
  free(p);
  return rc;
}

/* A gateway holds an adapter per tapped stream: one that has seen text and a call holds
 * the call table sized to its calls and no token array (OpenAI Chat is read in one pass);
 * the table grows by doubling, at a call's begin only; jsmn's tokens come with the first
 * payload read the general way, once; a failed first use is that event's TS_E_NOMEM and
 * the adapter goes on. */
START_TEST(test_memory_first_use) {
  int begins = 0;
  ts_adapter *a = new_adapter(TS_FORMAT_OPENAI_CHAT, count_begins, &begins);
  uint64_t n;
  static const char text[] = "{`choices`:[{`index`:0,`delta`:{`content`:`hello`}}]}";
  ck_assert_int_eq(feed_counted(a, NULL, text, &n), TS_E_OK);
  ck_assert_msg(n == 0, "text allocated %llu times (no call table, no tokens yet)", (unsigned long long)n);
  char call[256], frag[256];
  for (int i = 0; i < 9; i++) {
    snprintf(call, sizeof call,
             "{`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`index`:%d,`id`:`c%d`,`function`:"
             "{`name`:`f`,`arguments`:``}}]}}]}", i, i);
    ck_assert_int_eq(feed_counted(a, NULL, call, &n), TS_E_OK);
    /* the table: 4 slots at the first call, 8 at the fifth, 16 at the ninth */
    uint64_t want = i == 0 || i == 4 || i == 8 ? 1 : 0;
    ck_assert_msg(n == want, "call %d: %llu allocations, want %llu", i, (unsigned long long)n,
                  (unsigned long long)want);
    for (int k = 0; k < 20; k++) {
      snprintf(frag, sizeof frag,
               "{`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`index`:%d,`function`:{`arguments`:`ab`}}]}}]}", i);
      ck_assert_int_eq(feed_counted(a, NULL, frag, &n), TS_E_OK);
      ck_assert_msg(n == 0, "a fragment allocated (%llu)", (unsigned long long)n);
    }
  }
  ck_assert_int_eq(begins, 9);
  ts_adapter_free(a);

  /* the general way (jsmn): the tokens once, at the first payload */
  a = new_adapter(TS_FORMAT_OPENAI_CHAT, noop_cb, NULL);
  ts_adapter_set_general(a, 1);
  ck_assert_int_eq(feed_counted(a, NULL, text, &n), TS_E_OK);
  ck_assert_uint_eq(n, 1);
  ck_assert_int_eq(feed_counted(a, NULL, text, &n), TS_E_OK);
  ck_assert_uint_eq(n, 0);
  ts_adapter_free(a);

  /* out of memory at a first use: that event's error, the next one works */
  begins = 0;
  a = new_adapter(TS_FORMAT_OPENAI_CHAT, count_begins, &begins);
  snprintf(call, sizeof call,
           "{`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`index`:0,`id`:`c0`,`function`:{`name`:`f`}}]}}]}");
  ck_assert_int_eq(feed_failing(a, call), TS_E_NOMEM);
  ck_assert_int_eq(begins, 0);
  snprintf(call, sizeof call,
           "{`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`index`:1,`id`:`c1`,`function`:{`name`:`f`}}]}}]}");
  ck_assert_int_eq(feed_counted(a, NULL, call, &n), TS_E_OK);
  ck_assert_int_eq(begins, 1);
  ts_adapter_free(a);
  a = new_adapter(TS_FORMAT_OPENAI_CHAT, noop_cb, NULL);
  ts_adapter_set_general(a, 1);
  ck_assert_int_eq(feed_failing(a, text), TS_E_NOMEM);
  ck_assert_int_eq(feed_counted(a, NULL, text, &n), TS_E_OK);
  ts_adapter_free(a);
}
END_TEST

START_TEST(test_abort) {
  /* the callback stops the adapter at its second event: nothing more is reported, and every
   * call from then on returns TS_E_ABORTED */
  char *sse = tick(TC("{`index`:0,`id`:`a`,`function`:{`name`:`f`,`arguments`:`{}`}}")
                       CHUNK("`delta`:{`content`:`x`}") FIN("stop") DONE);
  R.abort_at = 2;
  run_text(TS_FORMAT_OPENAI_CHAT, sse, strlen(sse), &R);
  ck_assert_msg(!R.bad[0], "%s", R.bad);
  ck_assert_str_eq(R.trace, "B0 a f | A0 '{}'");
  ck_assert(!R.done);
  /* the same stop from the fragment path (ts_adapter_set_args_fn) */
  R.abort_at = 2;
  R.via_fn = 1;
  run_text(TS_FORMAT_OPENAI_CHAT, sse, strlen(sse), &R);
  R.via_fn = 0;
  R.abort_at = 0;
  free(sse);
  ck_assert_msg(!R.bad[0], "%s", R.bad);
  ck_assert_str_eq(R.trace, "B0 a f | A0 '{}'");
  ck_assert(!R.done);
}
END_TEST

START_TEST(test_done_and_finish) {
  /* Gemini is done only at finish; a truncated stream is never done; after the terminal
   * event feed is ignored and finish reports nothing */
  ts_adapter *a = new_adapter(TS_FORMAT_GEMINI, rec_cb, &R);
  memset(&R, 0, sizeof R);
  char p1[] = "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}";
  R.lo = p1;
  R.hi = p1 + sizeof p1 - 1;
  ck_assert_int_eq(ts_adapter_feed_event(a, NULL, 0, p1, sizeof p1 - 1), TS_E_OK);
  ck_assert(!ts_adapter_done(a));
  ck_assert_int_eq(ts_adapter_finish(a), TS_E_OK);
  ck_assert(ts_adapter_done(a));
  char p2[] = "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"b\"}]}}]}";
  ck_assert_int_eq(ts_adapter_feed_event(a, NULL, 0, p2, sizeof p2 - 1), TS_E_OK);
  ck_assert_int_eq(ts_adapter_finish(a), TS_E_OK);
  ck_assert_str_eq(R.trace, "X 'a' | T stop=");
  ts_adapter_free(a);

  memset(&R, 0, sizeof R);
  a = new_adapter(TS_FORMAT_ANTHROPIC, rec_cb, &R);
  ck_assert_int_eq(ts_adapter_finish(a), TS_E_MS_TRUNCATED);
  ck_assert_int_eq(ts_adapter_finish(a), TS_E_MS_TRUNCATED);
  ck_assert(!ts_adapter_done(a));
  ck_assert_str_eq(R.trace, "!ms_truncated/T");
  char p3[] = "{\"type\":\"message_stop\"}";
  ck_assert_int_eq(ts_adapter_feed_event(a, "message_stop", 12, p3, sizeof p3 - 1), TS_E_OK);
  ck_assert_str_eq(R.trace, "!ms_truncated/T");
  ts_adapter_free(a);

  memset(&R, 0, sizeof R);
  a = new_adapter(TS_FORMAT_AUTO, rec_cb, &R);
  ck_assert_int_eq(ts_adapter_finish(a), TS_E_MS_UNKNOWN_FORMAT);
  ck_assert_str_eq(R.trace, "!ms_unknown_format/T");
  ck_assert_int_eq(ts_adapter_format_of(a), TS_FORMAT_AUTO);
  ts_adapter_free(a);

  /* the framing's own provider error (an event stream `error` message): terminal, its
   * text or the table's; after it nothing, finish included */
  memset(&R, 0, sizeof R);
  a = new_adapter(TS_FORMAT_BEDROCK, rec_cb, &R);
  char p5[] = "{\"contentBlockIndex\":0,\"start\":{\"toolUse\":{\"toolUseId\":\"t1\",\"name\":\"f\"}}}";
  R.lo = p5;
  R.hi = p5 + sizeof p5 - 1;
  ck_assert_int_eq(ts_adapter_feed_event(a, "contentBlockStart", 17, p5, sizeof p5 - 1), TS_E_OK);
  ck_assert_int_eq(ts_adapter_feed_error(a, "Internal failure", 16), TS_E_MS_PROVIDER);
  ck_assert(ts_adapter_done(a));
  ck_assert_int_eq(ts_adapter_feed_error(a, "again", 5), TS_E_OK);
  ck_assert_int_eq(ts_adapter_finish(a), TS_E_OK);
  ck_assert_str_eq(R.trace, "B0 t1 f | !ms_provider/T 'Internal failure'");
  ts_adapter_free(a);
  memset(&R, 0, sizeof R);
  a = new_adapter(TS_FORMAT_BEDROCK, rec_cb, &R);
  ck_assert_int_eq(ts_adapter_feed_error(a, NULL, 0), TS_E_MS_PROVIDER);
  ck_assert_int_eq(ts_adapter_finish(a), TS_E_OK);
  ts_adapter_free(a);

  memset(&R, 0, sizeof R);
  a = new_adapter(TS_FORMAT_AUTO, rec_cb, &R);
  char p4[] = "{\"foo\":1}";
  ck_assert_int_eq(ts_adapter_feed_event(a, NULL, 0, p4, sizeof p4 - 1), TS_E_OK);
  ck_assert_int_eq(ts_adapter_finish(a), TS_E_MS_UNKNOWN_FORMAT);
  ck_assert_str_eq(R.trace, "!ms_unknown_format/T");
  ts_adapter_free(a);
}
END_TEST

/* The one-pass readers (provider.h, fast_event) at their edges: what they hand back to
 * the general way (more calls than they hold, nesting deeper than the scanner goes, the
 * legacy function_call, an error payload, a duplicate member) must come out exactly as
 * the general way alone reads it. */
typedef struct {
  int line;
  const char *label;
  ts_format fmt;
  const char *sse; /* backticks for quotes; NULL: built in the test */
  const char *want;
} edge_row;

static const edge_row edge_rows[] = {
    {__LINE__, "a duplicate member: the first counts", TS_FORMAT_OPENAI_CHAT,
     CHUNK("`delta`:{`content`:`a`,`content`:`b`}") DONE, "X 'a' | T stop="},
    {__LINE__, "the legacy function_call", TS_FORMAT_OPENAI_CHAT,
     CHUNK("`delta`:{`function_call`:{`name`:`f`,`arguments`:`{}`}}") FIN("function_call") DONE,
     "B0 - f | A0 '{}' | E0 | T stop=function_call"},
    {__LINE__, "an error payload", TS_FORMAT_OPENAI_CHAT,
     D("{`error`:{`message`:`boom`,`type`:`server_error`}}"), "!ms_provider/T 'boom'"},
    {__LINE__, "a null error is no error", TS_FORMAT_OPENAI_CHAT,
     D("{`error`:null,`choices`:[{`index`:0,`delta`:{`content`:`a`}}]}") DONE, "X 'a' | T stop="},
    {__LINE__, "an escaped key is another key", TS_FORMAT_OPENAI_CHAT,
     D("{`choi\\u0063es`:[{`index`:0,`delta`:{`content`:`a`}}]}") DONE, "T stop="},
    {__LINE__, "choice 1 is not read, choice 0 is", TS_FORMAT_OPENAI_CHAT,
     D("{`choices`:[{`index`:1,`delta`:{`content`:`no`}},{`index`:0,`delta`:{`content`:`yes`}}]}") DONE,
     "X 'yes' | T stop="},
    {__LINE__, "usage that is not an object is ignored", TS_FORMAT_OPENAI_CHAT,
     D("{`choices`:[],`usage`:[1]}") DONE, "T stop="},
    {__LINE__, "a fraction as index counts as none", TS_FORMAT_OPENAI_CHAT,
     TC("{`index`:0.5,`id`:`a`,`function`:{`name`:`f`,`arguments`:`{}`}}") FIN("tool_calls") DONE,
     "B0 a f | A0 '{}' | E0 | T stop=tool_calls"},
    {__LINE__, "responses: deltas with members in any order and the type from the name", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "")
     EV("response.function_call_arguments.delta", "{`delta`:`{\\`a`,`sequence_number`:3,`item_id`:`fc_1`,`obfuscation`:`zz`}")
     EV("response.function_call_arguments.delta", "{`output_index`:0,`item_id`:`fc_1`,`delta`:`\\`:[1,2]}`,`extra`:{`x`:[null,true]}}")
     DELTA("fc_9", "lost") DELTA("fc_1", "") COMPLETED(""),
     "B0 call_1 f | A0 '{`a' | A0 '`:[1,2]}' | E0 | T stop=completed"},
    {__LINE__, "responses: a delta without item_id, or with a null one, is nothing", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "")
     RE("response.function_call_arguments.delta", "`delta`:`x`")
     RE("response.function_call_arguments.delta", "`item_id`:null,`delta`:`x`")
     RE("response.function_call_arguments.delta", "`item_id`:`fc_1`,`delta`:null") COMPLETED(""),
     "B0 call_1 f | E0 | T stop=completed"},
    {__LINE__, "responses: members of the wrong type are the general way's errors", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "")
     RE("response.function_call_arguments.delta", "`item_id`:7,`delta`:`x`")
     RE("response.function_call_arguments.delta", "`item_id`:`fc_1`,`delta`:[`x`]")
     RE("response.output_text.delta", "`delta`:{}") COMPLETED(""),
     "B0 call_1 f | !ms_bad_shape | !ms_bad_shape | !ms_bad_shape | E0 | T stop=completed"},
    {__LINE__, "responses: a duplicate member, an escaped type, a type that is not a string", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "")
     RE("response.function_call_arguments.delta", "`item_id`:`fc_1`,`delta`:`a`,`delta`:`b`")
     EV("response.function_call_arguments.delta", "{`type`:`response.function_call_arguments.delt\\u0061`,`item_id`:`fc_1`,`delta`:`c`}")
     EV("response.function_call_arguments.delta", "{`type`:1,`item_id`:`fc_1`,`delta`:`d`}")
     EV("response.function_call_arguments.delta", "{`type`:`response.function_call_arguments.delta`,`type`:`x`,`item_id`:`fc_1`,`delta`:`e`}")
     COMPLETED(""),
     "B0 call_1 f | A0 'a' | A0 'd' | A0 'e' | E0 | T stop=completed"},
    {__LINE__, "responses: items that are not function calls, and items without a type", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.output_item.added", "`item`:{`id`:`ct_1`,`type`:`custom_tool_call`,`call_id`:`c1`,`name`:`patch`}")
     RE("response.custom_tool_call_input.delta", "`item_id`:`ct_1`,`delta`:`a\\`b`")
     RE("response.output_item.done", "`item`:{`id`:`ct_1`,`type`:`custom_tool_call`,`input`:`a\\`b`}")
     RE("response.output_item.added", "`item`:{`id`:`x_1`,`call_id`:`c2`,`name`:`g`}")
     RE("response.output_item.added", "`item`:[1]")
     RE("response.output_item.added", "`item`:{`id`:`fc_1`,`type`:`function\\u005fcall`,`call_id`:`c3`,`name`:`h`}")
     COMPLETED(""),
     "B0 c1 patch | A0 '{`input`:`' | A0 'a\\`b' | A0 '`}' | E0 | T stop=completed"},
    {__LINE__, "responses: an added item with arguments, ended by output_item.done; bad escapes", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.output_item.added", "`item`:{`name`:`f`,`call_id`:`call_1`,`arguments`:`{\\`k\\`:1}`,`type`:`function_call`,`id`:`fc_1`,`status`:`in_progress`}")
     RE("response.output_item.done", "`item`:{`type`:`function_call`,`id`:`fc_1`,`arguments`:`\\ud800`}")
     RE("response.output_item.added", "`item`:{`type`:`function_call`,`id`:`fc_2`,`call_id`:`call_2`,`name`:`g\\ud800`}")
     RE("response.output_item.added", "`item`:{`type`:`function_call`,`id`:`fc_3`,`call_id`:`call_3`,`name`:`h`}")
     RE("response.function_call_arguments.done", "`item_id`:`fc_3`,`arguments`:`\\ud800`")
     COMPLETED(""),
     "B0 call_1 f | A0 '{`k`:1}' | E0 | !json_surrogate | B1 call_3 h | !json_surrogate | E1 | T stop=completed"},
    {__LINE__, "anthropic: a text delta and a call's deltas", TS_FORMAT_ANTHROPIC,
     EV("content_block_start", "{`type`:`content_block_start`,`index`:0,`content_block`:{`type`:`tool_use`,`id`:`t`,`name`:`f`,`input`:{}}}")
     EV("content_block_delta", "{`type`:`content_block_delta`,`index`:0,`delta`:{`type`:`input_json_delta`,`partial_json`:`{\\`a\\``}}")
     EV("content_block_delta", "{`index`:0,`delta`:{`partial_json`:`:1}`,`type`:`input_json_delta`},`type`:`content_block_delta`}")
     EV("content_block_delta", "{`type`:`content_block_delta`,`index`:9,`delta`:{`type`:`input_json_delta`,`partial_json`:`x`}}")
     EV("content_block_stop", "{`type`:`content_block_stop`,`index`:0}")
     EV("message_stop", "{`type`:`message_stop`}"),
     "B0 t f | A0 '{`a`' | A0 ':1}' | E0 | T stop="},
    {__LINE__, "anthropic: the type from the event name alone", TS_FORMAT_ANTHROPIC,
     EV("content_block_start", "{`type`:`content_block_start`,`index`:0,`content_block`:{`type`:`tool_use`,`id`:`t`,`name`:`f`,`input`:{}}}")
     EV("content_block_delta", "{`index`:0,`delta`:{`type`:`input_json_delta`,`partial_json`:`{}`}}")
     EV("content_block_stop", "{`index`:0}")
     EV("message_stop", "{`type`:`message_stop`}"),
     "B0 t f | A0 '{}' | E0 | T stop="},
    {__LINE__, "anthropic: a lone surrogate in a fragment", TS_FORMAT_ANTHROPIC,
     EV("content_block_start", "{`type`:`content_block_start`,`index`:0,`content_block`:{`type`:`tool_use`,`id`:`t`,`name`:`f`,`input`:{}}}")
     EV("content_block_delta", "{`type`:`content_block_delta`,`index`:0,`delta`:{`type`:`input_json_delta`,`partial_json`:`\\ud800`}}")
     EV("message_stop", "{`type`:`message_stop`}"),
     "B0 t f | !json_surrogate | E0 | T stop="},
};

START_TEST(test_one_pass_edges) {
  const edge_row *w = &edge_rows[_i];
  char *sse = tick(w->sse), *want = tick(w->want);
  for (int general = 0; general < 2; general++) {
    run_mode(w->fmt, sse, strlen(sse), 0, general, 0, 0);
    expect_trace(w->line, w->label, general ? "general" : "one pass", &R, want);
  }
  free(sse);
  free(want);
}
END_TEST

/* Built streams: more calls in one chunk than the one-pass reader holds, and a member
 * nested deeper than the scanner goes; both ways must agree. */
START_TEST(test_one_pass_built) {
  sb b = {0};
  sb_puts(&b, "data: {`choices`:[{`index`:0,`delta`:{`tool_calls`:[");
  for (int i = 0; i < 40; i++)
    sb_printf(&b, "%s{`index`:%d,`id`:`c%d`,`function`:{`name`:`f`,`arguments`:`{}`}}", i ? "," : "", i, i);
  sb_puts(&b, "]}}],`deep`:");
  for (int i = 0; i < 100; i++) sb_puts(&b, "[");
  for (int i = 0; i < 100; i++) sb_puts(&b, "]");
  sb_puts(&b, "}\n\n" "data: {`choices`:[{`index`:0,`delta`:{},`finish_reason`:`tool_calls`}],`x`:");
  for (int i = 0; i < 100; i++) sb_puts(&b, "{`a`:");
  sb_puts(&b, "1");
  for (int i = 0; i < 100; i++) sb_puts(&b, "}");
  sb_puts(&b, "}\n\n" DONE);
  char *t = tick(b.p);
  free(b.p);
  run_mode(TS_FORMAT_OPENAI_CHAT, t, strlen(t), 0, 1, 0, 0);
  char general[TRACE_MAX];
  memcpy(general, R.trace, sizeof general);
  ck_assert(strstr(general, "B39 c39 f | A39 '{}'") != NULL);
  ck_assert(strstr(general, "T stop=tool_calls") != NULL);
  run_mode(TS_FORMAT_OPENAI_CHAT, t, strlen(t), 0, 0, 0, 0);
  ck_assert_str_eq(R.trace, general);
  free(t);
}
END_TEST

/* The shape memo (stream/json_shape.h) at its edges. Each row is read with the memo,
 * without it and the general way: the three traces must be the row's, and the memo must
 * have read exactly `hits` payloads (so a memo that never hits, or hits where a byte
 * outside its spans differs, fails). */
typedef struct {
  int line;
  const char *label;
  ts_format fmt;
  const char *sse;
  const char *want;
  uint64_t hits;
  int spans; /* Anthropic: the memo holds more spans than the fragment, so that
              * ts_adapter_feed_fragment (one span only) takes none of the hits */
} memo_row;

/* Chat: a call's first chunk, then deltas of the regular shape with their obfuscation. */
#define C_BEGIN(i, id) TC("{`index`:" #i ",`id`:`" id "`,`type`:`function`,`function`:{`name`:`f`,`arguments`:``}}")
#define C_PRE(i) "{`id`:`chatcmpl-1`,`object`:`chat.completion.chunk`,`created`:1755868211,`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`index`:" #i ",`function`:{`arguments`:`"
#define C_POST "`}}]},`logprobs`:null,`finish_reason`:null}],`obfuscation`:`"
#define C_DELTA(i, args, ob) D(C_PRE(i) args C_POST ob "`}")
#define C_END FIN("tool_calls") DONE
/* Chat from a server that stamps every chunk (a counter, a time): members nobody reads. */
#define CS_DELTA(seq, t, args)                                                                   \
  D("{`id`:`chatcmpl-1`,`object`:`chat.completion.chunk`,`seq`:" seq ",`t`:`" t "`,`choices`:[{" \
    "`index`:0,`delta`:{`tool_calls`:[{`index`:0,`function`:{`arguments`:`" args "`}}]},"         \
    "`finish_reason`:null}]}")
/* Responses: deltas with sequence_number and obfuscation. */
#define R_DELTA(seq, item, text, ob)                                                              \
  EV("response.function_call_arguments.delta",                                                   \
     "{`type`:`response.function_call_arguments.delta`,`sequence_number`:" seq ",`item_id`:`" item \
     "`,`output_index`:0,`delta`:`" text "`,`obfuscation`:`" ob "`}")
#define R_END ITEM_DONE("fc_1", "") COMPLETED("")
/* The same from a proxy that stamps every event (a counter, a time): members never read. */
#define RS_DELTA(seq, t, text)                                                                    \
  EV("response.function_call_arguments.delta",                                                   \
     "{`type`:`response.function_call_arguments.delta`,`sequence_number`:" seq ",`item_id`:`fc_1`," \
     "`output_index`:0,`delta`:`" text "`,`obfuscation`:`o`,`via`:`edge-1`,`at`:`" t "`,`n`:" seq "}")
#define AS_DELTA(seq, t, text)                                                                            \
  EV("content_block_delta", "{`type`:`content_block_delta`,`index`:0,`delta`:{`type`:`input_json_delta`," \
                            "`partial_json`:`" text "`},`seq`:" seq ",`at`:`" t "`}")
#define BS_DELTA(seq, t, text) \
  EV("contentBlockDelta", "{`contentBlockIndex`:0,`seq`:" seq ",`delta`:{`toolUse`:{`input`:`" text "`}},`at`:`" t "`,`p`:`pad`}")
/* Bedrock: toolUse deltas with the padding. */
#define B_START(i) EV("contentBlockStart", "{`contentBlockIndex`:" #i ",`start`:{`toolUse`:{`toolUseId`:`t" #i "`,`name`:`f`}}}")
#define B_DELTA(i, text, pad) EV("contentBlockDelta", "{`contentBlockIndex`:" #i ",`delta`:{`toolUse`:{`input`:`" text "`}},`p`:`" pad "`}")
#define B_END(i) EV("contentBlockStop", "{`contentBlockIndex`:" #i "}") EV("messageStop", "{`stopReason`:`tool_use`}")
/* Vertex: a call's first chunk, chunks of one piece in the usual envelope (`more`: the
 * piece's willContinue member or nothing; `cmore`: the functionCall's), the last chunk. */
#define VX_BEGIN(name) GC("{`functionCall`:{`name`:`" name "`,`willContinue`:true}}", "")
#define VX_CHUNK(piece, cmore)                                                                          \
  D("{`candidates`:[{`content`:{`role`:`model`,`parts`:[{`functionCall`:{`partialArgs`:[" piece "]" cmore \
    "}}]},`index`:0}],`modelVersion`:`gemini-2.5-pro`,`createTime`:`2026-11-30T09:12:44.518203Z`,"         \
    "`responseId`:`vDpLaZ2fH8`}")
#define VX_MORE ",`willContinue`:true"
#define VX_S(path, value, more) VX_CHUNK("{`jsonPath`:`" path "`,`stringValue`:`" value "`" more "}", VX_MORE)
#define VX_END GC("{`functionCall`:{}}", ",`finishReason`:`STOP`")

/* ts_adapter_feed_fragment's edges: after `a` (read whole, the memo kept), `b`, the 64-byte
 * fragment, the escaped one, `d\``, `e` (another event name: the type is the payload's) and
 * `i` are taken by the short way (6); the empty fragment, the 65-byte one, the refused
 * surrogate, the payload with spaces around it and the delta after the block's stop are
 * memo hits the general way reads (5 more); the bad ones are no hits; after message_stop
 * nothing is read. */
#define DIRECT_EDGES \
     TOOL_START(0, "t0", "f", "{}") JSON_DELTA(0, "a") JSON_DELTA(0, "b") JSON_DELTA(0, "") \
     JSON_DELTA(0, "0123456789012345678901234567890123456789012345678901234567890123") \
     JSON_DELTA(0, "0123456789012345678901234567890123456789012345678901234567890123x") \
     JSON_DELTA(0, "\\`\\\\\\n\\u00e9\\ud83d\\ude00\\/") JSON_DELTA(0, "\\ud800x") JSON_DELTA(0, "\\x") \
     JSON_DELTA(0, "c\\") JSON_DELTA(0, "\\u12") JSON_DELTA(0, "d\\`") \
     EV("message_delta", "{`type`:`content_block_delta`,`index`:0,`delta`:{`type`:`input_json_delta`,`partial_json`:`e`}}") \
     EV("content_block_delta", " {`type`:`content_block_delta`,`index`:0,`delta`:{`type`:`input_json_delta`,`partial_json`:`f`}} ") \
     JSON_DELTA(0, "g`h") JSON_DELTA(0, "i") BLOCK_STOP(0) JSON_DELTA(0, "j") MSG_STOP JSON_DELTA(0, "k")

static const memo_row memo_rows[] = {
    {__LINE__, "chat: a fragment without escapes, one with \\u and a pair, decoded by the match", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") C_DELTA(0, "{\\`k", "o") C_DELTA(0, "plain text, no escapes at all here", "oo")
     C_DELTA(0, "\\u00e9\\u20ac\\ud83d\\ude00\\/", "o") C_DELTA(0, "\\`:1}", "o") C_END,
     "B0 c0 f | A0 '{`k' | A0 'plain text, no escapes at all here' | A0 '\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/' | A0 '`:1}' | E0 | T stop=tool_calls", 3, 0},
    {__LINE__, "chat: a lone surrogate in a memo hit is the decoder's error, as without the memo", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") C_DELTA(0, "{", "o") C_DELTA(0, "\\ud800x", "o") C_DELTA(0, "\\udc00", "o")
     C_DELTA(0, "\\ud800\\u0041", "o") C_DELTA(0, "}", "o") C_END,
     "B0 c0 f | A0 '{' | !json_surrogate | !json_surrogate | !json_surrogate | A0 '}' | E0 | T stop=tool_calls", 4, 0},
    {__LINE__, "anthropic: fragments near the payload's end (the last block) and short ones", TS_FORMAT_ANTHROPIC,
     TOOL_START(0, "t", "f", "{}") JSON_DELTA(0, "{") JSON_DELTA(0, "\\`") JSON_DELTA(0, "a\\`:\\`\\\\n\\t")
     JSON_DELTA(0, "0123456789abcdefghij\\`") JSON_DELTA(0, "}") MSG_STOP,
     "B0 t f | A0 '{' | A0 '`' | A0 'a`:`\\n\\t' | A0 '0123456789abcdefghij`' | A0 '}' | E0 | T stop=", 4, 0},

    {__LINE__, "chat: deltas after the first from the memo, obfuscation of any length", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") C_DELTA(0, "{\\`a", "x") C_DELTA(0, "\\`:", "yyyyyyyyyyyyyyyyyyyyy") C_DELTA(0, "1}", "") C_END,
     "B0 c0 f | A0 '{`a' | A0 '`:' | A0 '1}' | E0 | T stop=tool_calls", 2, 0},
    {__LINE__, "chat: escapes in and around the fragment (\\`, \\\\, \\u)", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") C_DELTA(0, "ab", "o") C_DELTA(0, "\\\\\\`", "o") C_DELTA(0, "\\\\\\\\", "o")
     C_DELTA(0, "\\u00e9\\u2014", "o") C_DELTA(0, "\\`", "o\\`") C_DELTA(0, "", "o") C_END,
     "B0 c0 f | A0 'ab' | A0 '\\`' | A0 '\\\\' | A0 '\xc3\xa9\xe2\x80\x94' | A0 '`' | E0 | T stop=tool_calls", 5, 0},
    {__LINE__, "chat: a bad escape in the fragment is the general way's error", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") C_DELTA(0, "ab", "o") C_DELTA(0, "\\x", "o") C_DELTA(0, "\\ud800", "o") C_DELTA(0, "c", "o") C_END,
     "B0 c0 f | A0 'ab' | !ms_bad_json | !json_surrogate | A0 'c' | E0 | T stop=tool_calls", 2, 0},
    {__LINE__, "chat: the same prefix, another suffix (the finish reason)", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") C_DELTA(0, "a", "o") C_DELTA(0, "b", "o")
     D(C_PRE(0) "c`}}]},`logprobs`:null,`finish_reason`:`tool_calls`}],`obfuscation`:`o`}") DONE,
     "B0 c0 f | A0 'a' | A0 'b' | A0 'c' | E0 | T stop=tool_calls", 1, 0},
    {__LINE__, "chat: a counter and a time stamp in every chunk, members never read: spans after one miss", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") CS_DELTA("1", "13:00:00.9Z", "{\\`a") CS_DELTA("2", "13:00:01Z", "\\`:")
     CS_DELTA("10", "13:00:01.25Z", "[1,") CS_DELTA("11", "13:00:01.5Z", "2") CS_DELTA("100", "13:00:02Z", "]")
     CS_DELTA("-1e3", "13:00:02.125\\u005a", "}") C_END,
     "B0 c0 f | A0 '{`a' | A0 '`:' | A0 '[1,' | A0 '2' | A0 ']' | A0 '}' | E0 | T stop=tool_calls", 4, 0},
    {__LINE__, "responses: a counter and a time stamp in every event, members never read: spans after one miss",
     TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") RS_DELTA("3", "13:00:00.9Z", "{\\`a") RS_DELTA("4", "13:00:01Z", "\\`:")
     RS_DELTA("10", "13:00:01.25Z", "[1,") RS_DELTA("11", "13:00:01.5Z", "2") RS_DELTA("100", "13:00:02Z", "]")
     RS_DELTA("-1e3", "13:00:02.125\\u005a", "}") R_END,
     "B0 call_1 f | A0 '{`a' | A0 '`:' | A0 '[1,' | A0 '2' | A0 ']' | A0 '}' | E0 | T stop=completed", 4, 0},
    {__LINE__, "anthropic: a counter and a time stamp in every event: spans after one miss", TS_FORMAT_ANTHROPIC,
     TOOL_START(0, "t", "f", "{}") AS_DELTA("1", "13:00:00.9Z", "{\\`a") AS_DELTA("2", "13:00:01Z", "\\`:")
     AS_DELTA("10", "13:00:01.25Z", "[1,") AS_DELTA("11", "13:00:01.5Z", "2") AS_DELTA("100", "13:00:02Z", "]")
     AS_DELTA("-1e3", "13:00:02.125\\u005a", "}") MSG_STOP,
     "B0 t f | A0 '{`a' | A0 '`:' | A0 '[1,' | A0 '2' | A0 ']' | A0 '}' | E0 | T stop=", 4, 1},
    {__LINE__, "bedrock: a counter and a time stamp in every event, and the padding: spans after one miss",
     TS_FORMAT_BEDROCK,
     B_START(0) BS_DELTA("1", "13:00:00.9Z", "{\\`a") BS_DELTA("2", "13:00:01Z", "\\`:")
     BS_DELTA("10", "13:00:01.25Z", "[1,") BS_DELTA("11", "13:00:01.5Z", "2") BS_DELTA("100", "13:00:02Z", "]")
     BS_DELTA("-1e3", "13:00:02.125\\u005a", "}") B_END(0),
     "B0 t0 f | A0 '{`a' | A0 '`:' | A0 '[1,' | A0 '2' | A0 ']' | A0 '}' | E0 | T stop=tool_use", 4, 0},
    {__LINE__, "chat: a difference inside a key", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") C_DELTA(0, "a", "o")
     D("{`id`:`chatcmpl-1`,`object`:`chat.completion.chunk`,`created`:1755868211,`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`index`:0,`function`:{`argumentz`:`b`}}]},`logprobs`:null,`finish_reason`:null}],`obfuscation`:`o`}")
     D("{`id`:`chatcmpl-1`,`object`:`chat.completion.chunk`,`created`:1755868211,`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`index`:0,`function`:{`arguments`:`c`}}]},`logprobs`:null,`finish_reason`:null}],`obfuscatioN`:`o`}")
     C_DELTA(0, "d", "o") C_END,
     "B0 c0 f | A0 'a' | A0 'c' | A0 'd' | E0 | T stop=tool_calls", 0, 0},
    {__LINE__, "chat: a span whose type changes (string to null, to number, to object)", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") C_DELTA(0, "a", "o")
     D(C_PRE(0) "`}}]},`logprobs`:null,`finish_reason`:null}],`obfuscation`:null}")
     D("{`id`:`chatcmpl-1`,`object`:`chat.completion.chunk`,`created`:1755868211,`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`index`:0,`function`:{`arguments`:null}}]},`logprobs`:null,`finish_reason`:null}],`obfuscation`:`o`}")
     D("{`id`:`chatcmpl-1`,`object`:`chat.completion.chunk`,`created`:1755868211,`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`index`:0,`function`:{`arguments`:5}}]},`logprobs`:null,`finish_reason`:null}],`obfuscation`:`o`}")
     D("{`id`:`chatcmpl-1`,`object`:`chat.completion.chunk`,`created`:1755868211,`choices`:[{`index`:0,`delta`:{`tool_calls`:[{`index`:0,`function`:{`arguments`:{`x`:1}}}]},`logprobs`:null,`finish_reason`:null}],`obfuscation`:`o`}")
     C_DELTA(0, "b", "o") D(C_PRE(0) "c" C_POST "o`,`obfuscation`:7}") C_END,
     "B0 c0 f | A0 'a' | !ms_bad_shape | A0 '{`x`:1}' | A0 'b' | A0 'c' | E0 | T stop=tool_calls", 0, 0},
    {__LINE__, "chat: payloads shorter and longer (cut, whitespace, an extra member)", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") C_DELTA(0, "a", "o")
     D(C_PRE(0) "b" C_POST "o`")
     D(C_PRE(0) "c" C_POST "o` } ")
     C_DELTA(0, "d", "o")
     D(C_PRE(0) "e" C_POST "o`,`x`:1}")
     C_DELTA(0, "f", "o") C_DELTA(0, "g", "o") C_END,
     "B0 c0 f | A0 'a' | !ms_bad_json | A0 'c' | A0 'd' | A0 'e' | A0 'f' | A0 'g' | E0 | T stop=tool_calls", 1, 0},
    {__LINE__, "chat: a duplicate choices or delta after the span", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") C_DELTA(0, "a", "o")
     D(C_PRE(0) "b" C_POST "o`,`choices`:[{`index`:0,`delta`:{`content`:`no`}}]}")
     D(C_PRE(0) "c`}}]},`delta`:{`content`:`no`},`logprobs`:null,`finish_reason`:null}],`obfuscation`:`o`}")
     C_DELTA(0, "d", "o") C_END,
     "B0 c0 f | A0 'a' | A0 'b' | A0 'c' | A0 'd' | E0 | T stop=tool_calls", 1, 0},
    {__LINE__, "chat: a payload over the memo's size is not kept", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0")
     C_DELTA(0, "a", "oooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooo")
     C_DELTA(0, "b", "o") C_DELTA(0, "c", "o") C_END,
     "B0 c0 f | A0 'a' | A0 'b' | A0 'c' | E0 | T stop=tool_calls", 1, 0},
    {__LINE__, "chat: a memo from the previous call (another index, then index 0 reused with a new id)", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") C_DELTA(0, "a", "o") C_DELTA(0, "b", "o")
     C_BEGIN(1, "c1") C_DELTA(1, "c", "o") C_DELTA(1, "d", "o")
     C_BEGIN(0, "c2") C_DELTA(0, "e", "o") C_DELTA(0, "f", "o") C_END,
     "B0 c0 f | A0 'a' | A0 'b' | B1 c1 f | A1 'c' | A1 'd' | B2 c2 f | A2 'e' | A2 'f' | E0 | E1 | E2 | T stop=tool_calls", 3, 0},
    {__LINE__, "chat: a memo from the previous turn's last delta, in a stream read again", TS_FORMAT_OPENAI_CHAT,
     C_BEGIN(0, "c0") C_DELTA(0, "a", "o") C_END C_BEGIN(0, "c0") C_DELTA(0, "a", "o") C_END,
     "B0 c0 f | A0 'a' | E0 | T stop=tool_calls", 0, 0},
    {__LINE__, "responses: deltas with their sequence numbers and obfuscation", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") R_DELTA("3", "fc_1", "{\\`a", "xx") R_DELTA("4", "fc_1", "\\`:1", "y")
     R_DELTA("12345678901", "fc_1", "}", "zzzzzzzzzzzzzzz") R_DELTA("-1.5e3", "fc_1", "", "") R_END,
     "B0 call_1 f | A0 '{`a' | A0 '`:1' | A0 '}' | E0 | T stop=completed", 3, 0},
    {__LINE__, "responses: a sequence number that turns into a string; another item", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") R_DELTA("3", "fc_1", "a", "o")
     EV("response.function_call_arguments.delta", "{`type`:`response.function_call_arguments.delta`,`sequence_number`:`4`,`item_id`:`fc_1`,`output_index`:0,`delta`:`b`,`obfuscation`:`o`}")
     R_DELTA("5", "fc_2", "lost", "o") R_DELTA("6", "fc_1", "c", "o") R_DELTA("7", "fc_1", "d", "o") R_END,
     "B0 call_1 f | A0 'a' | A0 'b' | A0 'c' | A0 'd' | E0 | T stop=completed", 1, 0},
    {__LINE__, "responses: the item id reused by a call that the general way begins between two memo hits",
     TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_1", "call_1", "f", "") R_DELTA("3", "fc_1", "a", "o") R_DELTA("4", "fc_1", "b", "o")
     RE("response.output_item.added", "`item`:{`id`:`fc_1`,`type`:`custom_tool_call`,`call_id`:`c2`,`name`:`g`}")
     R_DELTA("5", "fc_1", "c", "o") R_DELTA("6", "fc_1", "d", "o") R_END,
     "B0 call_1 f | A0 'a' | A0 'b' | B1 c2 g | A1 '{`input`:`' | A1 'c' | A1 'd' | E1 | E0 | T stop=completed", 3, 0},
    {__LINE__, "anthropic: the block index reused by a block that begins between two memo hits", TS_FORMAT_ANTHROPIC,
     TOOL_START(0, "toolu_1", "f", "{}") JSON_DELTA(0, "a") JSON_DELTA(0, "b")
     TOOL_START(0, "toolu_2", "g", "{}") JSON_DELTA(0, "c") JSON_DELTA(0, "d") BLOCK_STOP(0)
     MSG_DELTA("`tool_use`", "") MSG_STOP,
     "B0 toolu_1 f | A0 'a' | A0 'b' | B1 toolu_2 g | A1 'c' | A1 'd' | E1 | E0 | T stop=tool_use", 3, 0},
    {__LINE__, "responses: an escaped item id is not kept", TS_FORMAT_OPENAI_RESPONSES,
     ADDED("fc_\\u0031", "call_1", "f", "") R_DELTA("3", "fc_\\u0031", "a", "o") R_DELTA("4", "fc_\\u0031", "b", "o") R_END,
     "B0 call_1 f | A0 'a' | A0 'b' | E0 | T stop=completed", 0, 0},
    {__LINE__, "responses: text deltas", TS_FORMAT_OPENAI_RESPONSES,
     RE("response.output_text.delta", "`sequence_number`:1,`delta`:`Hel`") RE("response.output_text.delta", "`sequence_number`:2,`delta`:`lo`")
     COMPLETED(""),
     "X 'Hel' | X 'lo' | T stop=completed", 1, 0},
    {__LINE__, "anthropic: fragments from the memo; another block; a text delta; the event name", TS_FORMAT_ANTHROPIC,
     MSG_START TOOL_START(0, "t0", "f", "{}") JSON_DELTA(0, "{\\`a") JSON_DELTA(0, "\\`:1}") JSON_DELTA(0, "")
     BLOCK_STOP(0) TOOL_START(1, "t1", "g", "{}") JSON_DELTA(1, "[") JSON_DELTA(1, "]") TEXT_DELTA(1, "hm")
     EV("content_block_delta", "{`index`:1,`delta`:{`type`:`input_json_delta`,`partial_json`:`x`}}")
     EV("content_block_delta", "{`index`:1,`delta`:{`type`:`input_json_delta`,`partial_json`:`y`}}")
     EV("content_block_stop", "{`index`:1,`delta`:{`type`:`input_json_delta`,`partial_json`:`z`}}")
     BLOCK_STOP(1) MSG_STOP,
     "B0 t0 f | A0 '{`a' | A0 '`:1}' | E0 | B1 t1 g | A1 '[' | A1 ']' | X 'hm' | A1 'x' | A1 'y' | E1 | T stop= "
     "usage={`input_tokens`:10,`output_tokens`:1}", 4, 0},
    /* ts_adapter_feed_fragment's edges (the "direct" mode of test_memo): each one left to
     * the general way where the short way must not answer, with the same events */
    {__LINE__, "anthropic direct: empty, long, escaped, refused and bad fragments; another name; spaces",
     TS_FORMAT_ANTHROPIC,
     DIRECT_EDGES,
     "B0 t0 f | A0 'a' | A0 'b' | A0 '0123456789012345678901234567890123456789012345678901234567890123' | "
     "A0 '0123456789012345678901234567890123456789012345678901234567890123x' | "
     "A0 '`\\\\n\xc3\xa9\xf0\x9f\x98\x80/' | !json_surrogate | !ms_bad_json | !ms_bad_json | !ms_bad_json | "
     "A0 'd`' | A0 'e' | A0 'f' | !ms_bad_json | A0 'i' | E0 | T stop=", 11, 0},
    {__LINE__, "anthropic direct: a block unknown, then the known one again", TS_FORMAT_ANTHROPIC,
     TOOL_START(0, "t0", "f", "{}") JSON_DELTA(0, "a") JSON_DELTA(0, "b") JSON_DELTA(3, "x") JSON_DELTA(3, "y")
     JSON_DELTA(0, "c") JSON_DELTA(0, "d") MSG_STOP,
     "B0 t0 f | A0 'a' | A0 'b' | A0 'c' | A0 'd' | E0 | T stop=", 3, 0},
    {__LINE__, "bedrock: fragments with their padding from the memo", TS_FORMAT_BEDROCK,
     B_START(0) B_DELTA(0, "{\\`a", "abc") B_DELTA(0, "\\`:", "abcdefghijklmnopqrstuvwxyz") B_DELTA(0, "1}", "")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`toolUse`:{`input`:`x`}},`p`:7}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`text`:`x`},`p`:`a`}") B_END(0),
     "B0 t0 f | A0 '{`a' | A0 '`:' | A0 '1}' | A0 'x' | X 'x' | E0 | T stop=tool_use", 2, 0},
    {__LINE__, "bedrock: the padding read as cut off where it is the last member, else read whole", TS_FORMAT_BEDROCK,
     B_START(0) B_DELTA(0, "a", "") B_DELTA(0, "b", "x") B_DELTA(0, "c", "0123456789abcdef")
     B_DELTA(0, "d", "0123456789abcdef0123456789abcdef0123456789abcdef")   /* 48: the most cut off */
     B_DELTA(0, "e", "0123456789abcdef0123456789abcdef0123456789abcdefg")  /* 49: read whole */
     B_DELTA(0, "f", "ab\\u0041cd") B_DELTA(0, "g", "ab\\`cd") B_DELTA(0, "h", "Ã©tÃ©")
     B_DELTA(0, "i", "a b\x7f~")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`toolUse`:{`input`:`j`}},`p`:`pad`,`q`:1}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`toolUse`:{`input`:`k`}},`x`:[1],`p`:`pad`}")
     EV("contentBlockDelta", "{`delta`:{`toolUse`:{`input`:`l`}},`contentBlockIndex`:0,`p`:`padding`}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`toolUse`:{`input`:`m`}},`x`:true,`p`:`padding`}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`toolUse`:{`input`:`n`}},`x`:null,`p`:`padding`}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`toolUse`:{`input`:`o`}},`x`:`s`,`p`:`padding`}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`toolUse`:{`input`:`p`}}, `p`:`padding`}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`toolUse`:{`input`:`q`}},`p` :`padding`}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`text`:`r`},`p`:`padding...`}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`toolUse`:{`input`:`s`}},`p`:`pad`}  ")
     EV("contentBlockDelta", "{,`p`:`padding padding`}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`toolUse`:{`input`:`t`,`p`:`padding`}")
     EV("contentBlockDelta", "{`contentBlockIndex`:0,`delta`:{`toolUse`:{`input`:`u\\`,`p`:`padding`}") B_END(0),
     "B0 t0 f | A0 'a' | A0 'b' | A0 'c' | A0 'd' | A0 'e' | A0 'f' | A0 'g' | A0 'h' | A0 'i' | A0 'j' | A0 'k' | "
     "A0 'l' | A0 'm' | A0 'n' | A0 'o' | A0 'p' | A0 'q' | X 'r' | A0 's' | !ms_bad_json | !ms_bad_json | E0 | "
     "T stop=tool_use", 7, 0},
    {__LINE__, "vertex: a string's pieces from the memo, an escaped value; the last piece; another path", TS_FORMAT_GEMINI,
     VX_BEGIN("f") VX_S("$.a", "ab", VX_MORE) VX_S("$.a", "cd", VX_MORE) VX_S("$.a", "e\\u00e9\\`", VX_MORE)
     VX_S("$.a", "f", "") VX_S("$.b", "g", VX_MORE) VX_S("$.b", "h", VX_MORE) VX_S("$.b", "i", "")
     VX_S("$.c", "j", VX_MORE) VX_END,
     "B0 - f | A0 '{' | A0 '`' | A0 'a' | A0 '`:' | A0 '`' | A0 'ab' | A0 'cd' | A0 'e\xc3\xa9\\`' | A0 'f' | "
     "A0 '`' | A0 ',' | A0 '`' | A0 'b' | A0 '`:' | A0 '`' | A0 'g' | A0 'h' | A0 'i' | A0 '`' | A0 ',' | A0 '`' | "
     "A0 'c' | A0 '`:' | A0 '`' | A0 'j' | A0 '`' | A0 '}' | E0 | T stop=STOP", 3, 0},
    {__LINE__, "vertex: memo hits that continue their string, then another path the general way writes between two hits",
     TS_FORMAT_GEMINI,
     VX_BEGIN("f") VX_S("$.a", "ab", VX_MORE) VX_S("$.a", "cd", VX_MORE) VX_S("$.a", "ef", VX_MORE)
     D("{`candidates`:[{`content`:{`role`:`model`,`parts`:[{`thought`:false,`functionCall`:{`partialArgs`:[{`jsonPath`:`$.b`,`stringValue`:`gh`,`willContinue`:true}],`willContinue`:true}}]},`index`:0}]}")
     VX_S("$.a", "ij", VX_MORE) VX_S("$.a", "kl", "") VX_END,
     "B0 - f | A0 '{' | A0 '`' | A0 'a' | A0 '`:' | A0 '`' | A0 'ab' | A0 'cd' | A0 'ef' | A0 '`' | A0 ',' | A0 '`' | "
     "A0 'b' | A0 '`:' | A0 '`' | A0 'gh' | A0 '`' | A0 ',' | A0 '`' | A0 'a' | A0 '`:' | A0 '`' | A0 'ij' | A0 'kl' | "
     "A0 '`' | A0 '}' | E0 | T stop=STOP", 3, 0},
    {__LINE__, "vertex: raw control bytes in values without escapes, from the memo too: escaped as the general way does",
     TS_FORMAT_GEMINI,
     VX_BEGIN("f") VX_S("$.a", "a\x01" "b", VX_MORE) VX_S("$.a", "c\x13" "d", VX_MORE) VX_S("$.a", "\x1f", VX_MORE)
     VX_S("$.a", "e", "") VX_END,
     "B0 - f | A0 '{' | A0 '`' | A0 'a' | A0 '`:' | A0 '`' | A0 'a\\u0001b' | A0 'c\\u0013d' | A0 '\\u001f' | A0 'e' | "
     "A0 '`' | A0 '}' | E0 | T stop=STOP", 2, 0},
    {__LINE__, "vertex: a call that ends in a chunk from the memo (no willContinue on the functionCall)", TS_FORMAT_GEMINI,
     VX_BEGIN("f") VX_CHUNK("{`jsonPath`:`$.a`,`stringValue`:`x`}", "")
     VX_BEGIN("g") VX_CHUNK("{`jsonPath`:`$.a`,`stringValue`:`y`}", "")
     VX_S("$.a", "lost", VX_MORE) VX_END,
     "B0 - f | A0 '{' | A0 '`' | A0 'a' | A0 '`:' | A0 '`' | A0 'x' | A0 '`' | A0 '}' | E0 | "
     "B1 - g | A1 '{' | A1 '`' | A1 'a' | A1 '`:' | A1 '`' | A1 'y' | A1 '`' | A1 '}' | E1 | T stop=STOP", 1, 0},
    {__LINE__, "vertex: a bad escape in a value from the memo, where the general way reports it", TS_FORMAT_GEMINI,
     VX_BEGIN("f") VX_S("$.a", "x", VX_MORE) VX_S("$.a", "\\ud800", VX_MORE) VX_S("$.a", "z", "") VX_END,
     "B0 - f | A0 '{' | A0 '`' | A0 'a' | A0 '`:' | A0 '`' | A0 'x' | !json_surrogate | A0 'z' | A0 '`' | A0 '}' | E0 | "
     "T stop=STOP", 1, 0},
    {__LINE__, "vertex: not kept: an escaped path, a number, two pieces, another envelope", TS_FORMAT_GEMINI,
     VX_BEGIN("f") VX_S("$.\\u0061", "x", VX_MORE) VX_S("$.\\u0061", "y", "")
     VX_CHUNK("{`jsonPath`:`$.n`,`numberValue`:1}", VX_MORE) VX_CHUNK("{`jsonPath`:`$.m`,`numberValue`:2}", VX_MORE)
     VX_CHUNK("{`jsonPath`:`$.p`,`stringValue`:`u`},{`jsonPath`:`$.q`,`stringValue`:`v`}", VX_MORE)
     VX_CHUNK("{`jsonPath`:`$.r`,`stringValue`:`u`},{`jsonPath`:`$.s`,`stringValue`:`v`}", VX_MORE)
     VX_S("$.t", "a", VX_MORE)
     GC("{`functionCall`:{`partialArgs`:[{`jsonPath`:`$.t`,`stringValue`:`b`,`willContinue`:true}],`willContinue`:true}}", "")
     VX_END,
     "B0 - f | A0 '{' | A0 '`' | A0 'a' | A0 '`:' | A0 '`' | A0 'x' | A0 'y' | A0 '`' | A0 ',' | A0 '`' | A0 'n' | "
     "A0 '`:' | A0 '1' | A0 ',' | A0 '`' | A0 'm' | A0 '`:' | A0 '2' | A0 ',' | A0 '`' | A0 'p' | A0 '`:' | A0 '`' | "
     "A0 'u' | A0 '`' | A0 ',' | A0 '`' | A0 'q' | A0 '`:' | A0 '`' | A0 'v' | A0 '`' | A0 ',' | A0 '`' | A0 'r' | "
     "A0 '`:' | A0 '`' | A0 'u' | A0 '`' | A0 ',' | A0 '`' | A0 's' | A0 '`:' | A0 '`' | A0 'v' | A0 '`' | A0 ',' | "
     "A0 '`' | A0 't' | A0 '`:' | A0 '`' | A0 'a' | A0 'b' | A0 '`' | A0 '}' | E0 | T stop=STOP", 0, 0},
};

START_TEST(test_memo) {
  const memo_row *w = &memo_rows[_i];
  char *sse = tick(w->sse), *want = tick(w->want);
  static const char *const modes[] = {"memo", "no memo", "general", "direct"};
  for (int m = 0; m < 4; m++) {
    run_mode(w->fmt, sse, strlen(sse), 0, m == 2, m == 1, m == 3 ? VIA_DIRECT : 0);
    expect_trace(w->line, w->label, modes[m], &R, want);
    uint64_t hits = R.memo_hits;
    if (m == 0 || m == 3)
      ck_assert_msg(hits == w->hits, "line %d (%s, %s): %llu payloads from the memo, want %llu", w->line, w->label,
                    modes[m], (unsigned long long)hits, (unsigned long long)w->hits);
    else
      ck_assert_msg(hits == 0, "line %d (%s, %s): the memo was used", w->line, w->label, modes[m]);
    /* the fragments taken by the short way: some for Anthropic's rows with hits, none else */
    if (m == 3 && (w->fmt != TS_FORMAT_ANTHROPIC || !w->hits || w->spans))
      ck_assert_msg(R.direct_hits == 0, "line %d (%s): %llu taken by ts_adapter_feed_fragment", w->line, w->label,
                    (unsigned long long)R.direct_hits);
    if (m == 3 && w->fmt == TS_FORMAT_ANTHROPIC && w->hits && !w->spans)
      ck_assert_msg(R.direct_hits > 0 && R.direct_hits <= w->hits, "line %d (%s): %llu taken by "
                    "ts_adapter_feed_fragment of %llu hits", w->line, w->label,
                    (unsigned long long)R.direct_hits, (unsigned long long)w->hits);
  }
  free(sse);
  free(want);
}
END_TEST

/* ts_adapter_feed_fragment: exactly the fragments it may take (DIRECT_EDGES), and only for
 * a format whose reader says so, while the memo and the one pass are on. */
START_TEST(test_fragment_direct) {
  char *sse = tick(DIRECT_EDGES);
  run_mode(TS_FORMAT_ANTHROPIC, sse, strlen(sse), 0, 0, 0, VIA_DIRECT);
  ck_assert_msg(!R.bad[0], "%s", R.bad);
  ck_assert_int_eq(R.direct_hits, 6);
  ck_assert_int_eq(R.memo_hits, 11);
  /* every payload twice: each second copy of a fragment the short way takes is taken */
  run_mode(TS_FORMAT_ANTHROPIC, sse, strlen(sse), 1, 0, 0, VIA_DIRECT);
  ck_assert_msg(!R.bad[0], "%s", R.bad);
  ck_assert_int_eq(R.direct_hits, 13);
  free(sse);

  static const ts_format fmts[] = {TS_FORMAT_OPENAI_CHAT, TS_FORMAT_OPENAI_RESPONSES, TS_FORMAT_ANTHROPIC,
                                   TS_FORMAT_GEMINI, TS_FORMAT_BEDROCK, TS_FORMAT_AUTO};
  for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
    ts_adapter *a = new_adapter(fmts[k], noop_cb, NULL);
    ck_assert_int_eq(ts_adapter_fragments(a) != 0, fmts[k] == TS_FORMAT_ANTHROPIC);
    ts_adapter_set_general(a, 1);
    ck_assert_int_eq(ts_adapter_fragments(a), 0);
    ts_adapter_set_general(a, 0);
    ts_adapter_set_memo(a, 0);
    ck_assert_int_eq(ts_adapter_fragments(a), 0);
    ts_adapter_free(a);
  }
  ck_assert_int_eq(ts_adapter_fragments(NULL), 0);

  /* with the memo off or the general way on, the short way takes nothing (the events are
   * the same: run_row's modes) */
  char *s2 = tick(TOOL_START(0, "t0", "f", "{}") JSON_DELTA(0, "a") JSON_DELTA(0, "b") JSON_DELTA(0, "c") MSG_STOP);
  for (int m = 0; m < 2; m++) {
    run_mode(TS_FORMAT_ANTHROPIC, s2, strlen(s2), 0, m == 1, m == 0, VIA_DIRECT);
    ck_assert_msg(!R.bad[0], "%s", R.bad);
    ck_assert_str_eq(R.trace, "B0 t0 f | A0 'a' | A0 'b' | A0 'c' | E0 | T stop=");
    ck_assert_int_eq(R.direct_hits, 0);
  }
  free(s2);
}
END_TEST

/* A stop asked for a fragment the short way handed back (ts_adapter_abort): nothing more
 * is reported, finish returns TS_E_ABORTED (run_events checks both). */
START_TEST(test_fragment_abort) {
  char *sse = tick(TOOL_START(0, "t0", "f", "{}") JSON_DELTA(0, "a") JSON_DELTA(0, "b") JSON_DELTA(0, "c")
                       JSON_DELTA(0, "d") BLOCK_STOP(0) MSG_STOP);
  R.abort_at = 3; /* B0, A0 'a' (read whole), A0 'b' (the short way) */
  R.direct = 1;
  run_text(TS_FORMAT_ANTHROPIC, sse, strlen(sse), &R);
  R.direct = 0;
  R.abort_at = 0;
  free(sse);
  ck_assert_msg(!R.bad[0], "%s", R.bad);
  ck_assert_str_eq(R.trace, "B0 t0 f | A0 'a' | A0 'b'");
  ck_assert_int_eq(R.direct_hits, 1);
  ck_assert(!R.done);
}
END_TEST

/* A memo hit whose fragment decodes to more than the match's buffer holds (and one just
 * under): decoded in place after the match instead, the same events, still from the memo. */
START_TEST(test_memo_long_fragment) {
  static const size_t lens[] = {100, 480, 600, 2000};
  for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
    sb b = {0}, want = {0};
    sb_puts(&b, C_BEGIN(0, "c0") C_DELTA(0, "{\\`k\\`:\\`", "o"));
    sb_puts(&b, "data: " C_PRE(0));
    for (size_t i = 0; i < lens[k]; i++) sb_puts(&b, i % 3 ? "\\n" : "\\u00e9");
    sb_puts(&b, C_POST "oo`}\n\n" C_DELTA(0, "\\`}", "o") C_END);
    sb_puts(&want, "B0 c0 f | A0 '{`k`:`' | A0 '");
    for (size_t i = 0; i < lens[k]; i++) sb_puts(&want, i % 3 ? "\\n" : "\xc3\xa9");
    sb_puts(&want, "' | A0 '`}' | E0 | T stop=tool_calls");
    char *t = tick(b.p), *w = tick(want.p);
    free(b.p);
    free(want.p);
    for (int m = 0; m < 3; m++) {
      run_mode(TS_FORMAT_OPENAI_CHAT, t, strlen(t), 0, m == 2, m == 1, 0);
      expect_trace(__LINE__, "long fragment", m == 0 ? "memo" : m == 1 ? "no memo" : "general", &R, w);
      ck_assert_int_eq(R.memo_hits, m == 0 ? 2 : 0);
    }
    free(t);
    free(w);
  }
}
END_TEST

START_TEST(test_feed_returns_first_error) {
  memset(&R, 0, sizeof R);
  ts_adapter *a = new_adapter(TS_FORMAT_OPENAI_CHAT, rec_cb, &R);
  char p[] = "{\"choices\":[{\"index\":0,\"delta\":{\"content\":5,\"tool_calls\":[{\"index\":0,"
             "\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"\\ud800\"}}]}}]}";
  R.lo = p;
  R.hi = p + sizeof p - 1;
  ck_assert_int_eq(ts_adapter_feed_event(a, NULL, 0, p, sizeof p - 1), TS_E_MS_BAD_SHAPE);
  ck_assert_str_eq(R.trace, "!ms_bad_shape | B0 a f | !json_surrogate");
  ts_adapter_free(a);
}
END_TEST

int main(void) {
  Suite *s = suite_create("adapter");
  TCase *tc;

  tc = ts_test_tcase(s, "openai-chat", 0);
  tcase_add_loop_test(tc, test_chat_rows, 0, NROWS(chat_rows));
  tcase_add_test(tc, test_too_many_tokens);
  tcase_add_test(tc, test_too_many_tokens_responses);
  tcase_add_test(tc, test_responses_huge_terminal);
  tcase_add_test(tc, test_too_many_calls_chat);
  tcase_add_test(tc, test_field_too_long);
  tcase_add_test(tc, test_id_limits);
  tcase_add_test(tc, test_feed_returns_first_error);
  tcase_add_test(tc, test_memo_long_fragment);
  tcase_add_test(tc, test_fragment_direct);
  tcase_add_test(tc, test_fragment_abort);
  tcase_add_loop_test(tc, test_one_pass_edges, 0, NROWS(edge_rows));
  tcase_add_test(tc, test_one_pass_built);
  tcase_add_loop_test(tc, test_memo, 0, NROWS(memo_rows));

  tc = ts_test_tcase(s, "openai-responses", 0);
  tcase_add_loop_test(tc, test_responses_rows, 0, NROWS(responses_rows));

  tc = ts_test_tcase(s, "anthropic", 0);
  tcase_add_loop_test(tc, test_anthropic_rows, 0, NROWS(anthropic_rows));
  tcase_add_test(tc, test_too_many_calls_anthropic);
  tcase_add_test(tc, test_name_too_long);

  tc = ts_test_tcase(s, "gemini", 0);
  tcase_add_loop_test(tc, test_gemini_rows, 0, NROWS(gemini_rows));
  tcase_add_loop_test(tc, test_bedrock_rows, 0, NROWS(bedrock_rows));

  tc = ts_test_tcase(s, "corpus", 0);
  tcase_add_loop_test(tc, test_corpus, 0, NROWS(corpus));
  tcase_add_loop_test(tc, test_memo_corpus, 0, NROWS(memo_corpus));

  tc = ts_test_tcase(s, "api", 0);
  tcase_add_loop_test(tc, test_auto_rows, 0, NROWS(auto_rows));
  tcase_add_test(tc, test_format_names);
  tcase_add_test(tc, test_detect);
  tcase_add_test(tc, test_detect_out_of_memory);
  tcase_add_test(tc, test_new_and_free);
  tcase_add_test(tc, test_memory_first_use);
  tcase_add_test(tc, test_keeps);
  tcase_add_test(tc, test_keep_responses);
  tcase_add_test(tc, test_abort);
  tcase_add_test(tc, test_done_and_finish);

  return ts_test_run(s, 0);
}
