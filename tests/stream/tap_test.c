/*
 * tap_test.c: a black-box test of the contract in stream/tap.h (progress detection,
 * tools-spec §7, and the tap's event stream).
 *
 * Method
 *   Streams are written as provider-neutral scripts of steps, one SSE event each, and
 *   rendered for every provider format a row names (OpenAI Chat, OpenAI Responses,
 *   Anthropic, Gemini), or given as bare argument bytes for `raw`:
 *     b I ID NAME        call with provider key I begins (no arguments yet)
 *     a I TEXT           the next fragment TEXT of call I's argument text (TEXT is the
 *                        argument JSON text itself; the renderer escapes it for the wire)
 *     w I ID NAME TEXT   a whole call in one event (Anthropic/Gemini embed TEXT as JSON)
 *     e I / E I          the provider ends call I (Chat has no such event: a comment)
 *     t TEXT             assistant text
 *     f REASON           the stop reason (Chat finish_reason, Anthropic message_delta,
 *                        Gemini finishReason; Responses: a comment, REASON becomes the
 *                        status of the response.completed that `z` renders)
 *     z                  the provider's terminal event ([DONE], message_stop,
 *                        response.completed; Gemini has none: a comment)
 *     k                  a keep-alive comment
 *     r TEXT             TEXT verbatim (any SSE, or for raw rows the argument bytes)
 *   Every step except `r` renders exactly one blank-line-terminated block, so "the
 *   event of step k" is block k. Gold traces name offsets symbolically: `@k` is the end
 *   of the k-th block of the input (after its blank line), `@end` the input's length,
 *   `@k+n` n bytes further; for raw rows `@k` is the number of bytes in steps 1..k.
 *   This is how "the event fires at the exact input event" is asserted.
 *
 *   Each event renders as one canonical line:
 *     started #I ID TOOL @off ['progress'] [cut]     ('' for an empty call id)
 *     delta #I @off 'text'      (consecutive deltas of one call at one offset merge)
 *     beat #I @off BYTES        ready #I @off ARGS        error #I @off CODE
 *     text @off 'text'          finished @off 'stop' [usage=JSON]
 *     stream_error @off CODE ['provider message']
 *   Quoted text shows bytes below 0x20 and 0x7F as \xHH, everything else as is.
 *
 *   Every row runs, per format: as rendered, and with its line endings rewritten to
 *   CRLF and to CR; with the format given and with auto-detection; fed whole, byte by
 *   byte, and in chunks of every size 1..31 (the split harness, support/split.h: each
 *   chunk in its own exact-size heap block, so that ASan sees any read past a chunk). All runs must give the identical
 *   trace, offsets included (raw input with deltas excepted: there deltas follow the
 *   reads, tap.h). Each base run is repeated with deltas switched on: with the delta
 *   lines removed the trace must not change, and the deltas must concatenate to the
 *   call's argument text.
 *
 *   While recording, a checker enforces what holds for every stream: per call, STARTED
 *   first and once, then nothing after READY/ERROR, exactly one of those by the end;
 *   indexes 0, 1, 2 ... in order of first appearance; call id and tool constant;
 *   offsets never beyond the bytes fed and never decreasing; labels valid UTF-8, free
 *   of control characters and within progress_max; READY arguments valid compact JSON
 *   objects equal to the argument text with its insignificant whitespace removed;
 *   heartbeats increasing; ts_tap_failed() exactly when a STREAM_ERROR was emitted.
 *
 * Besides the rows, the progress value is cut into two deltas at every position (and
 * into three at every pair of positions), labels that stress decoding, stripping and
 * the cap are split at every position in SSE and raw input, random argument objects in
 * random fragments are checked against a reference of the rules, every capture of
 * tests/corpus is run under the checker (its events are pinned by the gold traces,
 * tests/events/gold_test.c), and the tap is stopped by its callback at every event and
 * refused every allocation in turn. Allocation is per call, never per fragment or read.
 *
 * Conventions assumed where tap.h leaves room:
 *   - a call still open at the end of input (after truncation or a terminal provider
 *     error) gets its TOOL_CALL_ERROR (tap_incomplete) stamped with the end of input;
 *   - an SSE framing error is stamped with the framer's err_offset (the byte at which
 *     the limit was crossed), not with the end of an event that never ended;
 *   - in raw input a malformed argument text fails at the byte after the offending one
 *     ("the byte after the one that completed it"), whatever the reads;
 *   - arguments that are only whitespace are tap_incomplete; empty raw input is
 *     json_empty;
 *   - the C1 controls U+0080..U+009F are control characters (Unicode category Cc) and
 *     are stripped from labels like C0 and DEL.
 */
#include <check.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/tap.h"
#include "support/gold.h"
#include "support/json_check.h"
#include "support/sb.h"
#include "support/split.h"
#include "support/sse_text.h"
#include "support/test_support.h"

/* Asserts only on failure. check's ck_assert_* records the location on every PASS (a
 * write to the runner, and an allocation, which the allocation tests would count, and
 * the runner's unpacking of those records is quadratic); this test checks millions of
 * times, so it uses ck_abort_msg only when something is wrong. */
#define REQUIRE(cond, ...)                   \
  do {                                       \
    if (!(cond)) ck_abort_msg(__VA_ARGS__);  \
  } while (0)
#define REQUIRE_EQ(a, b) \
  REQUIRE((a) == (b), "%s == %s: %lld != %lld", #a, #b, (long long)(a), (long long)(b))

/* Quoted for a trace line: bytes below 0x20 and 0x7F as \xHH, the C1 controls
 * (U+0080..U+009F, C2 80..C2 9F) as \uXXXX, everything else as is. */
static void sb_quoted_body(sb *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c == 0x7F) {
      sb_printf(b, "\\x%02x", c);
    } else if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
               (unsigned char)s[i + 1] <= 0x9F) {
      sb_printf(b, "\\u%04x", (unsigned char)s[++i]);
    } else {
      sb_putc(b, (char)c);
    }
  }
}

/* ---- recording the tap's events ------------------------------------------------------ */

#define MAXCALLS 64

typedef struct {
  int seen, started, done, ready;
  char id[TS_ADAPTER_MAX_ID + 1];
  size_t idlen;
  char tool[TS_ADAPTER_MAX_ID + 1];
  size_t toollen;
  uint64_t last_beat;
  uint64_t args_hash, label_hash; /* READY's arguments, STARTED's label (FNV-1a) */
  int has_label, label_cut;
  sb deltas;
  sb args; /* READY's arguments */
} rcall;

typedef struct {
  int raw;         /* raw input: deltas are stamped with reads */
  size_t pmax;     /* the progress cap in effect */
  int no_alloc;    /* the callback must not allocate: check and count only */
  sb trace;
  sb msgs;         /* the error text of every TOOL_CALL_ERROR and STREAM_ERROR, in order */
  char viol[600];  /* the first contract violation seen */
  uint64_t fed;    /* bytes handed to ts_tap_feed so far, the current call included */
  uint64_t last_off;
  int ncalls;
  rcall calls[MAXCALLS];
  int nstream_err;
  long nevents;
  long abort_at;   /* return nonzero from this event on (1-based); 0: never */
  int last_delta;  /* index of the call whose delta ended the trace, -1 if none */
  uint64_t last_delta_off;
} rec;

#define VIOL(r, ...)                                                         \
  do {                                                                       \
    if (!(r)->viol[0]) snprintf((r)->viol, sizeof(r)->viol, __VA_ARGS__); \
  } while (0)

static rec *rec_new(int raw, size_t pmax) {
  rec *r = calloc(1, sizeof *r);
  if (!r) abort();
  r->raw = raw;
  r->pmax = pmax;
  r->last_delta = -1;
  return r;
}

static void rec_free(rec *r) {
  if (!r) return;
  for (int i = 0; i < MAXCALLS; i++) {
    sb_free(&r->calls[i].deltas);
    sb_free(&r->calls[i].args);
  }
  sb_free(&r->trace);
  sb_free(&r->msgs);
  free(r);
}

static uint64_t fnv(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
  return h;
}

static int is_call_type(int type) {
  return type >= TS_TAP_TOOL_CALL_STARTED && type <= TS_TAP_TOOL_CALL_ERROR;
}

/* C0 controls, DEL, and the C1 controls U+0080..U+009F (UTF-8 C2 80..C2 9F). */
static int has_ctrl(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c == 0x7F) return 1;
    if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] <= 0x9F &&
        (unsigned char)s[i + 1] >= 0x80)
      return 1;
  }
  return 0;
}

static void check_event(rec *r, const ts_tap_event *e) {
  int type = e->type;
  if (type < TS_TAP_TOOL_CALL_STARTED || type > TS_TAP_STREAM_ERROR) {
    VIOL(r, "event %ld: bad type %d", r->nevents, type);
    return;
  }
  if (e->offset > r->fed)
    VIOL(r, "event %ld (%s): offset %" PRIu64 " beyond the %" PRIu64 " bytes fed", r->nevents,
         ts_tap_type_name(type), e->offset, r->fed);
  int raw_delta = r->raw && type == TS_TAP_TOOL_CALL_DELTA;
  if (!raw_delta) {
    if (e->offset < r->last_off)
      VIOL(r, "event %ld (%s): offset %" PRIu64 " before the previous %" PRIu64, r->nevents,
           ts_tap_type_name(type), e->offset, r->last_off);
    r->last_off = e->offset;
  }
  if (!!e->is_call != is_call_type(type))
    VIOL(r, "event %ld (%s): is_call %d", r->nevents, ts_tap_type_name(type), e->is_call);
  if (type != TS_TAP_TOOL_CALL_STARTED && (e->has_progress || e->progress_truncated))
    VIOL(r, "event %ld (%s) has progress", r->nevents, ts_tap_type_name(type));
  if (!is_call_type(type)) {
    if (type == TS_TAP_STREAM_ERROR) {
      r->nstream_err++;
      if (e->code >= 0 || !strcmp(ts_err_name(e->code), "unknown") || e->error.len == 0)
        VIOL(r, "stream_error with code %d and message of %zu bytes", (int)e->code, e->error.len);
    }
    return;
  }
  if (e->index >= MAXCALLS) {
    VIOL(r, "event %ld (%s): index %u", r->nevents, ts_tap_type_name(type), e->index);
    return;
  }
  rcall *c = &r->calls[e->index];
  if (!c->seen) { /* a new call */
    c->seen = 1;
    if ((int)e->index >= r->ncalls) r->ncalls = (int)e->index + 1;
    if (type != TS_TAP_TOOL_CALL_STARTED)
      VIOL(r, "call #%u: first event is %s, not started", e->index, ts_tap_type_name(type));
    c->idlen = e->call_id.len < TS_ADAPTER_MAX_ID ? e->call_id.len : TS_ADAPTER_MAX_ID;
    memcpy(c->id, e->call_id.p, c->idlen);
    c->toollen = e->tool.len < TS_ADAPTER_MAX_ID ? e->tool.len : TS_ADAPTER_MAX_ID;
    memcpy(c->tool, e->tool.p, c->toollen);
  } else if (e->call_id.len != c->idlen || memcmp(e->call_id.p, c->id, c->idlen) ||
             e->tool.len != c->toollen || memcmp(e->tool.p, c->tool, c->toollen)) {
    VIOL(r, "call #%u: %s with another call id or tool", e->index, ts_tap_type_name(type));
  }
  if (c->done)
    VIOL(r, "call #%u: %s after its ready/error", e->index, ts_tap_type_name(type));
  switch (type) {
    case TS_TAP_TOOL_CALL_STARTED:
      if (c->started) VIOL(r, "call #%u: started twice", e->index);
      c->started = 1;
      if (e->progress_truncated && !e->has_progress)
        VIOL(r, "call #%u: truncated without progress", e->index);
      c->has_label = e->has_progress;
      c->label_cut = e->progress_truncated;
      c->label_hash = fnv(e->progress.p, e->progress.len);
      if (e->has_progress) {
        if (e->progress.len > r->pmax)
          VIOL(r, "call #%u: label of %zu bytes over the cap %zu", e->index, e->progress.len,
               r->pmax);
        if (!ts_test_utf8_valid(e->progress.p, e->progress.len))
          VIOL(r, "call #%u: label is not valid UTF-8", e->index);
        if (has_ctrl(e->progress.p, e->progress.len))
          VIOL(r, "call #%u: label has a control character", e->index);
      }
      break;
    case TS_TAP_TOOL_CALL_DELTA:
      if (!r->no_alloc) sb_add(&c->deltas, e->delta.p, e->delta.len);
      if (e->delta.len == 0) VIOL(r, "call #%u: empty delta", e->index);
      break;
    case TS_TAP_TOOL_CALL_HEARTBEAT:
      if (e->bytes <= c->last_beat)
        VIOL(r, "call #%u: heartbeat %" PRIu64 " after %" PRIu64, e->index, e->bytes, c->last_beat);
      c->last_beat = e->bytes;
      break;
    case TS_TAP_TOOL_CALL_READY:
      c->done = c->ready = 1;
      c->args_hash = fnv(e->arguments.p, e->arguments.len);
      if (!ts_test_json_compact_object(e->arguments.p, e->arguments.len))
        VIOL(r, "call #%u: ready arguments are not a compact JSON object: %.*s", e->index,
             (int)(e->arguments.len > 200 ? 200 : e->arguments.len), e->arguments.p);
      if (!r->no_alloc) sb_add(&c->args, e->arguments.p, e->arguments.len);
      break;
    case TS_TAP_TOOL_CALL_ERROR:
      c->done = 1;
      if (e->code >= 0 || !strcmp(ts_err_name(e->code), "unknown") || e->error.len == 0)
        VIOL(r, "call #%u: error with code %d and message of %zu bytes", e->index, (int)e->code,
             e->error.len);
      break;
  }
}

static void render_event(rec *r, const ts_tap_event *e) {
  sb *o = &r->trace;
  if (e->type == TS_TAP_TOOL_CALL_DELTA && r->last_delta == (int)e->index &&
      r->last_delta_off == e->offset && o->len >= 2) {
    o->len -= 2; /* merge with the previous delta: drop its "'\n" */
    sb_quoted_body(o, e->delta.p, e->delta.len);
    sb_puts(o, "'\n");
    return;
  }
  r->last_delta = -1;
  switch (e->type) {
    case TS_TAP_TOOL_CALL_STARTED:
      sb_printf(o, "started #%u ", e->index);
      if (e->call_id.len)
        sb_add(o, e->call_id.p, e->call_id.len);
      else
        sb_puts(o, "''");
      sb_putc(o, ' ');
      sb_add(o, e->tool.p, e->tool.len);
      sb_printf(o, " +%" PRIu64, e->offset);
      if (e->has_progress) {
        sb_puts(o, " '");
        sb_quoted_body(o, e->progress.p, e->progress.len);
        sb_putc(o, '\'');
      }
      if (e->progress_truncated) sb_puts(o, " cut");
      break;
    case TS_TAP_TOOL_CALL_DELTA:
      sb_printf(o, "delta #%u +%" PRIu64 " '", e->index, e->offset);
      sb_quoted_body(o, e->delta.p, e->delta.len);
      sb_putc(o, '\'');
      r->last_delta = (int)e->index;
      r->last_delta_off = e->offset;
      break;
    case TS_TAP_TOOL_CALL_HEARTBEAT:
      sb_printf(o, "beat #%u +%" PRIu64 " %" PRIu64, e->index, e->offset, e->bytes);
      break;
    case TS_TAP_TOOL_CALL_READY:
      sb_printf(o, "ready #%u +%" PRIu64 " ", e->index, e->offset);
      sb_quoted_body(o, e->arguments.p, e->arguments.len);
      break;
    case TS_TAP_TOOL_CALL_ERROR:
      sb_printf(o, "error #%u +%" PRIu64 " %s", e->index, e->offset, ts_err_name(e->code));
      break;
    case TS_TAP_TEXT_DELTA:
      sb_printf(o, "text +%" PRIu64 " '", e->offset);
      sb_quoted_body(o, e->text.p, e->text.len);
      sb_putc(o, '\'');
      break;
    case TS_TAP_TURN_FINISHED:
      sb_printf(o, "finished +%" PRIu64 " '", e->offset);
      sb_quoted_body(o, e->stop_reason.p, e->stop_reason.len);
      sb_putc(o, '\'');
      if (e->usage.len) {
        sb_puts(o, " usage=");
        sb_quoted_body(o, e->usage.p, e->usage.len);
      }
      break;
    case TS_TAP_STREAM_ERROR:
      sb_printf(o, "stream_error +%" PRIu64 " %s", e->offset, ts_err_name(e->code));
      if (e->code == TS_E_MS_PROVIDER) {
        sb_puts(o, " '");
        sb_quoted_body(o, e->error.p, e->error.len);
        sb_putc(o, '\'');
      }
      break;
    default:
      sb_printf(o, "type%d", e->type);
  }
  sb_putc(o, '\n');
}

static int rec_cb(void *user, const ts_tap_event *e) {
  rec *r = user;
  r->nevents++;
  check_event(r, e);
  if (!r->no_alloc) render_event(r, e);
  if (!r->no_alloc && (e->type == TS_TAP_TOOL_CALL_ERROR || e->type == TS_TAP_STREAM_ERROR)) {
    sb_add(&r->msgs, e->error.p, e->error.len);
    sb_putc(&r->msgs, '\n');
  }
  return r->abort_at && r->nevents >= r->abort_at;
}

/* After finish: every call that started ended exactly once; the failed flag agrees. */
static void rec_end(rec *r, ts_tap *t, int deltas) {
  for (int i = 0; i < r->ncalls; i++) {
    rcall *c = &r->calls[i];
    if (!c->seen) VIOL(r, "call index %d never used, but %d is", i, r->ncalls - 1);
    if (!c->done) VIOL(r, "call #%d: neither ready nor error by the end", i);
    if (deltas && c->ready && !r->no_alloc) {
      sb cd = {0};
      ts_test_json_compact(&cd, sb_str(&c->deltas), c->deltas.len);
      if (!c->deltas.len) sb_puts(&cd, "{}"); /* no argument bytes at all: ready with {} */
      if (strcmp(sb_str(&cd), sb_str(&c->args)))
        VIOL(r, "call #%d: deltas '%s' do not make the ready arguments '%s'", i, sb_str(&c->deltas),
             sb_str(&c->args));
      sb_free(&cd);
    }
  }
  if (!!ts_tap_failed(t) != (r->nstream_err > 0))
    VIOL(r, "ts_tap_failed() = %d with %d stream errors", ts_tap_failed(t), r->nstream_err);
}

/* ---- running the tap ------------------------------------------------------------------ */

typedef struct {
  ts_tap_config cfg;
  int np;
  char ptool[8][64]; /* "*": every tool */
  char parg[8][64];
  char raw_tool[64];
} setup;

static const char *lookup_progress(void *user, const char *tool, size_t len, size_t *arg_len) {
  const setup *s = user;
  for (int i = 0; i < s->np; i++) {
    if (!strcmp(s->ptool[i], "*") ||
        (strlen(s->ptool[i]) == len && !memcmp(s->ptool[i], tool, len))) {
      *arg_len = strlen(s->parg[i]);
      return s->parg[i];
    }
  }
  return NULL;
}

enum { OPT_NOAUTO = 1, OPT_NOEOL = 2 };

/* Options, space-separated: p=ARG (every tool), pt=TOOL:ARG, tool=NAME (raw), deltas,
 * text, hb=N, pmax=N, margs=N, mev=N, noauto, noeol. The event cap is 64 KiB unless
 * mev says otherwise. */
static int setup_init(setup *s, ts_format fmt, const char *opts) {
  memset(s, 0, sizeof *s);
  s->cfg.format = fmt;
  s->cfg.progress_arg = lookup_progress;
  s->cfg.progress_user = s;
  s->cfg.max_event_bytes = 64 * 1024;
  strcpy(s->raw_tool, "write_file");
  int flags = 0;
  const char *p = opts ? opts : "";
  while (*p) {
    char w[160];
    size_t n = 0;
    while (*p && *p != ' ') {
      if (n + 1 < sizeof w) w[n++] = *p;
      p++;
    }
    w[n] = '\0';
    while (*p == ' ') p++;
    if (!n) continue;
    if (!strncmp(w, "p=", 2)) {
      snprintf(s->ptool[s->np], sizeof s->ptool[0], "*");
      snprintf(s->parg[s->np++], sizeof s->parg[0], "%.63s", w + 2);
    } else if (!strncmp(w, "pt=", 3)) {
      char *colon = strchr(w + 3, ':');
      REQUIRE((colon) != NULL, "unexpected NULL");
      *colon = '\0';
      snprintf(s->ptool[s->np], sizeof s->ptool[0], "%.63s", w + 3);
      snprintf(s->parg[s->np++], sizeof s->parg[0], "%.63s", colon + 1);
    } else if (!strncmp(w, "tool=", 5)) {
      snprintf(s->raw_tool, sizeof s->raw_tool, "%.63s", w + 5);
    } else if (!strcmp(w, "deltas")) {
      s->cfg.deltas = 1;
    } else if (!strcmp(w, "text")) {
      s->cfg.text = 1;
    } else if (!strncmp(w, "hb=", 3)) {
      s->cfg.heartbeat_bytes = strtoull(w + 3, NULL, 10);
    } else if (!strncmp(w, "pmax=", 5)) {
      s->cfg.progress_max = strtoull(w + 5, NULL, 10);
    } else if (!strncmp(w, "margs=", 6)) {
      s->cfg.max_args_bytes = strtoull(w + 6, NULL, 10);
    } else if (!strncmp(w, "mev=", 4)) {
      s->cfg.max_event_bytes = strtoull(w + 4, NULL, 10);
    } else if (!strcmp(w, "noauto")) {
      flags |= OPT_NOAUTO;
    } else if (!strcmp(w, "noeol")) {
      flags |= OPT_NOEOL;
    } else {
      ck_abort_msg("unknown option '%s'", w);
    }
  }
  if (fmt == TS_FORMAT_RAW) s->cfg.raw_tool = s->raw_tool;
  return flags;
}

static size_t setup_pmax(const setup *s) {
  return s->cfg.progress_max ? s->cfg.progress_max : TS_TAP_PROGRESS_MAX;
}

/* A tap that must be made (NULL, for the REQUIRE that follows, if it was not). */
static ts_tap *tap_new(const ts_tap_config *cfg, ts_tap_cb cb, void *user) {
  ts_tap *t = NULL;
  int rc = ts_tap_new(&t, cfg, cb, user);
  return rc == TS_E_OK ? t : NULL;
}

/* The tap as a split-harness runner (support/split.h): records one run, checks it
 * against the contract (when ctx is set) and renders its trace. */
typedef struct {
  const setup *su;
  const char *ctx; /* NULL: the caller looks at the recording's violations */
  rec *keep;       /* with want_rec: the last run's recording (the caller frees it) */
  int want_rec;
  int with_msgs;   /* render the error texts too */
} tap_runner;

static void tap_run(void *user, ts_split *feed, sb *out) {
  tap_runner *tr = user;
  rec *r = rec_new(tr->su->cfg.format == TS_FORMAT_RAW, setup_pmax(tr->su));
  ts_tap *t = tap_new(&tr->su->cfg, rec_cb, r);
  REQUIRE(t != NULL, "ts_tap_new failed");
  char *p;
  size_t n;
  while (ts_split_next(feed, &p, &n)) {
    r->fed = ts_split_offset(feed);
    REQUIRE_EQ(ts_tap_feed(t, p, n), TS_E_OK);
  }
  REQUIRE_EQ(ts_tap_finish(t), TS_E_OK);
  REQUIRE_EQ(ts_tap_offset(t), ts_split_offset(feed));
  rec_end(r, t, tr->su->cfg.deltas);
  ts_tap_free(t);
  if (tr->ctx)
    REQUIRE(!r->viol[0], "%s, reads of %zu (0: whole): %s\ntrace:\n%s", tr->ctx,
            ts_split_size(feed), r->viol, sb_clip(sb_str(&r->trace)));
  sb_puts(out, sb_str(&r->trace));
  if (tr->with_msgs) {
    sb_puts(out, "messages:\n");
    sb_puts(out, sb_str(&r->msgs));
  }
  if (tr->want_rec) {
    rec_free(tr->keep);
    tr->keep = r;
  } else {
    rec_free(r);
  }
}

/* Feeds `in` in reads of `chunk` bytes (0: whole), each in its own heap block. Returns
 * the recording; the caller checks r->viol and frees it. */
static rec *run_tap(const setup *su, const char *in, size_t len, size_t chunk) {
  tap_runner tr = {su, NULL, NULL, 1, 0};
  sb trace = {0};
  ts_split_run_once(in, len, chunk, tap_run, &tr, &trace);
  sb_free(&trace);
  return tr.keep;
}

/* Feeds `in` in two reads, [0, p) and [p, len). */
static rec *run_tap_split(const setup *su, const char *in, size_t len, size_t p) {
  rec *r = rec_new(su->cfg.format == TS_FORMAT_RAW, setup_pmax(su));
  ts_tap *t = tap_new(&su->cfg, rec_cb, r);
  REQUIRE(t != NULL, "ts_tap_new failed");
  char *b = malloc(len + 1);
  REQUIRE(b != NULL, "malloc");
  memcpy(b, in, len);
  r->fed = p;
  REQUIRE_EQ(ts_tap_feed(t, b, p), TS_E_OK);
  r->fed = len;
  REQUIRE_EQ(ts_tap_feed(t, b + p, len - p), TS_E_OK);
  REQUIRE_EQ(ts_tap_finish(t), TS_E_OK);
  rec_end(r, t, su->cfg.deltas);
  ts_tap_free(t);
  free(b);
  return r;
}

/* The trace without its delta lines. */
static void strip_deltas(sb *out, const char *trace) {
  while (*trace) {
    const char *nl = strchr(trace, '\n');
    size_t n = nl ? (size_t)(nl - trace) + 1 : strlen(trace);
    if (strncmp(trace, "delta ", 6)) sb_add(out, trace, n);
    trace += n;
  }
  if (!out->p) sb_puts(out, "");
}

/* strip_deltas as the harness's normalizer: raw input's deltas follow the reads. */
static void strip_deltas_norm(void *user, const char *trace, sb *out) {
  (void)user;
  strip_deltas(out, trace);
}

/* ---- rendering scripts into provider streams ----------------------------------------- */

enum { F_CHAT, F_RESP, F_ANTH, F_GEM, F_RAW, NFMT };
#define CH (1u << F_CHAT)
#define RS (1u << F_RESP)
#define AN (1u << F_ANTH)
#define GM (1u << F_GEM)
#define RW (1u << F_RAW)
#define SSE3 (CH | RS | AN)
#define ALL4 (CH | RS | AN | GM)

static const char *const fmt_names[NFMT] = {"openai-chat", "openai-responses", "anthropic",
                                            "gemini", "raw"};
static const ts_format fmt_codes[NFMT] = {TS_FORMAT_OPENAI_CHAT, TS_FORMAT_OPENAI_RESPONSES,
                                             TS_FORMAT_ANTHROPIC, TS_FORMAT_GEMINI, TS_FORMAT_RAW};

#define MAXSTEPS 40

typedef struct {
  int used;
  char id[128], name[128];
  sb acc; /* the call's argument text as sent */
} scall;

typedef struct {
  int fmt;
  sb out;
  char stop[64];
  int has_raw;           /* an `r` step: the argument texts are not known */
  uint64_t ends[MAXSTEPS]; /* raw: bytes after step k */
  size_t nsteps;
  scall calls[16];
} script;

static void script_free(script *s) {
  sb_free(&s->out);
  for (int i = 0; i < 16; i++) sb_free(&s->calls[i].acc);
}

static const char *word(const char *s, char *out, size_t cap) {
  size_t n = 0;
  while (*s && *s != ' ') {
    if (n + 1 < cap) out[n++] = *s;
    s++;
  }
  out[n] = '\0';
  if (*s == ' ') s++;
  return s;
}

static void block(sb *o, const char *event, const sb *data) {
  if (event) sb_printf(o, "event: %s\n", event);
  sb_puts(o, "data: ");
  sb_add(o, data->p, data->len);
  sb_puts(o, "\n\n");
}

static void comment(sb *o, const char *what) { sb_printf(o, ": %s\n\n", what); }

static void render_step(script *s, const char *step) {
  char op = step[0];
  const char *rest = step[1] == ' ' ? step + 2 : step + 1;
  char ibuf[16], id[128] = "", name[128] = "";
  int idx = 0;
  const char *text = "";
  if (op == 'b' || op == 'a' || op == 'w' || op == 'e' || op == 'E') {
    rest = word(rest, ibuf, sizeof ibuf);
    idx = atoi(ibuf);
    REQUIRE(idx >= 0 && idx < 16, "bad call key in step '%s'", step);
  }
  if (op == 'b' || op == 'w') {
    rest = word(rest, id, sizeof id);
    rest = word(rest, name, sizeof name);
    if (!strcmp(id, "-")) id[0] = '\0';
    scall *c = &s->calls[idx];
    c->used = 1;
    snprintf(c->id, sizeof c->id, "%s", id);
    snprintf(c->name, sizeof c->name, "%s", name);
  }
  if (op == 'a' || op == 'w' || op == 't' || op == 'f' || op == 'r') text = rest;
  if (op == 'a' || op == 'w') sb_puts(&s->calls[idx].acc, text);
  scall *c = &s->calls[idx];
  sb d = {0};
  sb *o = &s->out;
  switch (op) {
    case 'r':
      s->has_raw = 1;
      sb_puts(o, text);
      break;
    case 'k':
      comment(o, "keep-alive");
      break;
    default:
      break;
  }
  if (op == 'r' || op == 'k') {
    sb_free(&d);
    return;
  }
  switch (s->fmt) {
    case F_CHAT:
      if (op == 'e' || op == 'E') {
        comment(o, "end of call");
        break;
      }
      if (op == 'z') {
        sb_puts(o, "data: [DONE]\n\n");
        break;
      }
      sb_puts(&d, "{\"id\":\"chatcmpl-t\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,");
      if (op == 'b' || op == 'w') {
        sb_printf(&d, "\"delta\":{\"tool_calls\":[{\"index\":%d,\"id\":\"%s\",\"type\":\"function\","
                      "\"function\":{\"name\":\"%s\",\"arguments\":\"", idx, id, name);
        if (op == 'w') sb_json_body(&d, text, strlen(text));
        sb_puts(&d, "\"}}]},\"finish_reason\":null}]}");
      } else if (op == 'a') {
        sb_printf(&d, "\"delta\":{\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":\"", idx);
        sb_json_body(&d, text, strlen(text));
        sb_puts(&d, "\"}}]},\"finish_reason\":null}]}");
      } else if (op == 't') {
        sb_puts(&d, "\"delta\":{\"content\":\"");
        sb_json_body(&d, text, strlen(text));
        sb_puts(&d, "\"},\"finish_reason\":null}]}");
      } else if (op == 'f') {
        sb_printf(&d, "\"delta\":{},\"finish_reason\":\"%s\"}]}", text);
      } else {
        ck_abort_msg("step '%s' not renderable for chat", step);
      }
      block(o, NULL, &d);
      break;
    case F_RESP:
      if (op == 'b' || op == 'w') {
        sb_printf(&d, "{\"type\":\"response.output_item.added\",\"output_index\":%d,\"item\":{\"id\":"
                      "\"fc_%d\",\"type\":\"function_call\",\"status\":\"in_progress\",\"arguments\":\"",
                  idx, idx);
        if (op == 'w') sb_json_body(&d, text, strlen(text));
        sb_printf(&d, "\",\"call_id\":\"%s\",\"name\":\"%s\"}}", id, name);
        block(o, "response.output_item.added", &d);
      } else if (op == 'a') {
        sb_printf(&d, "{\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_%d\","
                      "\"output_index\":%d,\"delta\":\"", idx, idx);
        sb_json_body(&d, text, strlen(text));
        sb_puts(&d, "\"}");
        block(o, "response.function_call_arguments.delta", &d);
      } else if (op == 'E') {
        sb_printf(&d, "{\"type\":\"response.function_call_arguments.done\",\"item_id\":\"fc_%d\","
                      "\"output_index\":%d,\"arguments\":\"", idx, idx);
        sb_json_body(&d, sb_str(&c->acc), c->acc.len);
        sb_puts(&d, "\"}");
        block(o, "response.function_call_arguments.done", &d);
      } else if (op == 'e') {
        sb_printf(&d, "{\"type\":\"response.output_item.done\",\"output_index\":%d,\"item\":{\"id\":"
                      "\"fc_%d\",\"type\":\"function_call\",\"status\":\"completed\",\"arguments\":\"",
                  idx, idx);
        sb_json_body(&d, sb_str(&c->acc), c->acc.len);
        sb_printf(&d, "\",\"call_id\":\"%s\",\"name\":\"%s\"}}", c->id, c->name);
        block(o, "response.output_item.done", &d);
      } else if (op == 't') {
        sb_puts(&d, "{\"type\":\"response.output_text.delta\",\"item_id\":\"msg_t\",\"output_index\":0,"
                    "\"content_index\":0,\"delta\":\"");
        sb_json_body(&d, text, strlen(text));
        sb_puts(&d, "\"}");
        block(o, "response.output_text.delta", &d);
      } else if (op == 'f') {
        snprintf(s->stop, sizeof s->stop, "%s", text);
        comment(o, "finish");
      } else if (op == 'z') {
        sb_printf(&d, "{\"type\":\"response.completed\",\"response\":{\"id\":\"resp_t\",\"object\":"
                      "\"response\",\"status\":\"%s\",\"output\":[]}}",
                  s->stop[0] ? s->stop : "completed");
        block(o, "response.completed", &d);
      } else {
        ck_abort_msg("step '%s' not renderable for responses", step);
      }
      break;
    case F_ANTH:
      if (op == 'b' || op == 'w') {
        sb_printf(&d, "{\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":"
                      "\"tool_use\",\"id\":\"%s\",\"name\":\"%s\",\"input\":%s}}",
                  idx, id, name, op == 'w' && *text ? text : "{}");
        block(o, "content_block_start", &d);
      } else if (op == 'a') {
        sb_printf(&d, "{\"type\":\"content_block_delta\",\"index\":%d,\"delta\":{\"type\":"
                      "\"input_json_delta\",\"partial_json\":\"", idx);
        sb_json_body(&d, text, strlen(text));
        sb_puts(&d, "\"}}");
        block(o, "content_block_delta", &d);
      } else if (op == 'e' || op == 'E') {
        sb_printf(&d, "{\"type\":\"content_block_stop\",\"index\":%d}", idx);
        block(o, "content_block_stop", &d);
      } else if (op == 't') {
        sb_puts(&d, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
                    "\"text\":\"");
        sb_json_body(&d, text, strlen(text));
        sb_puts(&d, "\"}}");
        block(o, "content_block_delta", &d);
      } else if (op == 'f') {
        sb_printf(&d, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"%s\","
                      "\"stop_sequence\":null}}", text);
        block(o, "message_delta", &d);
      } else if (op == 'z') {
        sb_puts(&d, "{\"type\":\"message_stop\"}");
        block(o, "message_stop", &d);
      } else {
        ck_abort_msg("step '%s' not renderable for anthropic", step);
      }
      break;
    case F_GEM:
      if (op == 'w') {
        sb_puts(&d, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{");
        if (*id) sb_printf(&d, "\"id\":\"%s\",", id);
        sb_printf(&d, "\"name\":\"%s\"", name);
        if (*text) sb_printf(&d, ",\"args\":%s", text);
        sb_puts(&d, "}}],\"role\":\"model\"},\"index\":0}]}");
        block(o, NULL, &d);
      } else if (op == 't') {
        sb_puts(&d, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"");
        sb_json_body(&d, text, strlen(text));
        sb_puts(&d, "\"}],\"role\":\"model\"},\"index\":0}]}");
        block(o, NULL, &d);
      } else if (op == 'f') {
        sb_printf(&d, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},"
                      "\"finishReason\":\"%s\",\"index\":0}]}", text);
        block(o, NULL, &d);
      } else if (op == 'z') {
        comment(o, "end");
      } else {
        ck_abort_msg("step '%s' not renderable for gemini", step);
      }
      break;
    case F_RAW:
      ck_abort_msg("raw rows take only r steps, not '%s'", step);
  }
  sb_free(&d);
}

static void render(script *s, int fmt, const char *const *steps) {
  memset(s, 0, sizeof *s);
  s->fmt = fmt;
  sb_puts(&s->out, "");
  for (size_t k = 0; k < MAXSTEPS && steps[k]; k++) {
    render_step(s, steps[k]);
    s->ends[k] = s->out.len;
    s->nsteps = k + 1;
  }
}

/* Expands @k, @end and @k+n in a gold trace into +offset. */
static void expand(sb *out, const char *want, const uint64_t *ends, size_t nends, uint64_t total) {
  sb_puts(out, "");
  for (const char *p = want; *p;) {
    if (*p == '@' && (p == want || p[-1] == ' ')) {
      uint64_t v;
      p++;
      if (!strncmp(p, "end", 3)) {
        v = total;
        p += 3;
      } else {
        char *e;
        unsigned long k = strtoul(p, &e, 10);
        REQUIRE(e != p, "bad @ in gold trace: %s", want);
        REQUIRE(k <= nends, "gold trace names block @%lu of %zu", k, nends);
        v = k ? ends[k - 1] : 0;
        p = e;
      }
      if (*p == '+' && p[1] >= '0' && p[1] <= '9') {
        char *e;
        v += strtoull(p + 1, &e, 10);
        p = e;
      }
      sb_printf(out, "+%" PRIu64, v);
    } else {
      sb_putc(out, *p++);
    }
  }
}

/* ---- running one case in every chunking ---------------------------------------------- */

/* Argument texts known from the script: every READY equals its call's text compacted,
 * and with deltas on the deltas concatenate to exactly that text. */
static void differential(const rec *r, const script *sc, int deltas, const char *ctx) {
  if (!sc || sc->has_raw) return;
  for (int i = 0; i < r->ncalls; i++) {
    const rcall *c = &r->calls[i];
    if (!c->ready) continue;
    const scall *found = NULL;
    int matches = 0;
    for (int k = 0; k < 16; k++) {
      const scall *s = &sc->calls[k];
      if (s->used && strlen(s->id) == c->idlen && !memcmp(s->id, c->id, c->idlen)) {
        found = s;
        matches++;
      }
    }
    if (matches != 1) continue;
    sb want = {0};
    ts_test_json_compact(&want, sb_str(&found->acc), found->acc.len);
    if (!found->acc.len) sb_puts(&want, "{}");
    /* Equal; or, when the model sent bytes after the complete object (a stream_error the
     * gold trace pins down), the compact text begins with the ready arguments. */
    size_t al = strlen(sb_str(&c->args));
    REQUIRE(!strcmp(sb_str(&want), sb_str(&c->args)) ||
                (strlen(sb_str(&want)) > al && !strncmp(sb_str(&want), sb_str(&c->args), al) &&
                 sb_str(&c->args)[0] == '{' && sb_str(&want)[al - 1] == '}'),
                  "%s: call #%d ready with '%s', but its arguments were '%s'", ctx, i,
                  sb_str(&c->args), sb_str(&found->acc));
    /* The deltas are the argument text up to the end of the arguments object: what follows
     * it (whitespace, or bytes reported as a stream_error) is not a delta of the call. */
    size_t dl = strlen(sb_str(&c->deltas));
    if (deltas)
      REQUIRE(!strcmp(sb_str(&found->acc), sb_str(&c->deltas)) ||
                  (found->acc.len > dl && !strncmp(sb_str(&found->acc), sb_str(&c->deltas), dl) &&
                   dl && sb_str(&c->deltas)[dl - 1] == '}'),
                    "%s: call #%d deltas '%s' differ from its argument text '%s'", ctx, i,
                    sb_str(&c->deltas), sb_str(&found->acc));
    sb_free(&want);
  }
}

/* Runs one input whole, then in chunks (every size 1..31 when `all_sizes`, else a few),
 * and compares every trace with the whole run's and the whole run's with `want` (when
 * given). With `all_sizes` it also reruns with deltas toggled. */
static void check_case(const char *ctx, const char *opts, ts_format fmt, const char *in,
                       size_t len, const char *want, int all_sizes, const script *sc) {
  setup su;
  setup_init(&su, fmt, opts);
  rec *whole = run_tap(&su, in, len, 0);
  REQUIRE(!whole->viol[0], "%s, fed whole: %s\ntrace:\n%s", ctx, whole->viol,
                sb_clip(sb_str(&whole->trace)));
  if (want)
    REQUIRE(!strcmp(sb_str(&whole->trace), want), "%s, fed whole:\nwant:\n%sgot:\n%s", ctx,
                  sb_clip(want), sb_clip(sb_str(&whole->trace)));
  differential(whole, sc, su.cfg.deltas, ctx);
  /* Every other reading gives the whole run's trace (support/split.h); raw input's
   * deltas follow the reads, so there they are left out of the comparison. */
  static const size_t few[] = {1, 2, 7, 16};
  ts_split_opts so = {all_sizes ? NULL : few, all_sizes ? 0 : sizeof few / sizeof few[0],
                      fmt == TS_FORMAT_RAW && su.cfg.deltas ? strip_deltas_norm : NULL};
  tap_runner tr = {&su, ctx, NULL, 0, 0};
  ts_split_check_opts(ctx, in, len, tap_run, &tr, sb_str(&whole->trace), &so);
  if (all_sizes) { /* deltas on or off changes nothing but the delta lines */
    setup su2 = su;
    su2.cfg.progress_user = &su2;
    su2.cfg.deltas = !su.cfg.deltas;
    rec *r = run_tap(&su2, in, len, 0);
    REQUIRE(!r->viol[0], "%s, deltas %s: %s\ntrace:\n%s", ctx, su2.cfg.deltas ? "on" : "off",
                  r->viol, sb_clip(sb_str(&r->trace)));
    sb a = {0}, b = {0};
    strip_deltas(&a, sb_str(&whole->trace));
    strip_deltas(&b, sb_str(&r->trace));
    REQUIRE(!strcmp(sb_str(&a), sb_str(&b)),
                  "%s: switching deltas %s changes other events\nbefore:\n%safter:\n%s", ctx,
                  su2.cfg.deltas ? "on" : "off", sb_clip(sb_str(&a)), sb_clip(sb_str(&b)));
    differential(r, sc, su2.cfg.deltas, ctx);
    sb_free(&a);
    sb_free(&b);
    rec_free(r);
  }
  rec_free(whole);
}

static const char *const eol_names[] = {"", " crlf", " cr"};

/* One script in one format: every line-ending variant, given and detected format. */
static void check_script(int line, const char *label, int f, const char *opts,
                         const char *const *steps, const char *want_tpl) {
  script sc;
  render(&sc, f, steps);
  setup probe;
  int flags = setup_init(&probe, fmt_codes[f], opts);
  int neol = (f == F_RAW || (flags & OPT_NOEOL)) ? 1 : 3;
  for (int eol = 0; eol < neol; eol++) {
    sb in = {0};
    if (f == F_RAW)
      sb_add(&in, sc.out.p, sc.out.len);
    else
      ts_test_rewrite_eol(&in, sc.out.p, sc.out.len, eol);
    uint64_t ends[512];
    size_t nends;
    if (f == F_RAW) {
      memcpy(ends, sc.ends, sc.nsteps * sizeof ends[0]);
      nends = sc.nsteps;
    } else {
      nends = ts_test_event_ends(in.p, in.len, ends, 512);
    }
    sb want = {0};
    expand(&want, want_tpl, ends, nends, in.len);
    for (int mode = 0; mode < 2; mode++) {
      if (mode == 1 && (f == F_RAW || (flags & OPT_NOAUTO))) continue;
      char ctx[300];
      snprintf(ctx, sizeof ctx, "line %d '%s' [%s%s%s]", line, label, fmt_names[f],
               mode ? " auto" : "", eol_names[eol]);
      check_case(ctx, opts, mode ? TS_FORMAT_AUTO : fmt_codes[f], in.p, in.len, want.p,
                 eol == 0 && mode == 0, &sc);
    }
    sb_free(&want);
    sb_free(&in);
  }
  script_free(&sc);
}

/* ---- the table ------------------------------------------------------------------------- */

typedef struct {
  int line;
  const char *label;
  unsigned fmts;
  const char *opts;
  const char *steps[MAXSTEPS];
  const char *want;
} row;

#define B0 "b 0 call_1 write_file"
#define A0(x) "a 0 " x
#define END3 "e 0", "f tool_calls", "z"
#define S0 "started #0 call_1 write_file "
#define FIN(k) "finished @" #k " 'tool_calls'\n"
#define X10 "xxxxxxxxxx"
#define X100 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10
#define X200 X100 X100
#define NL10 "\\n\\n\\n\\n\\n\\n\\n\\n\\n\\n"
#define TAB10 "\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t"
/* A Chat chunk with the given delta, and a tool_calls delta. */
#define CHUNK(delta) "r data: {\"choices\":[{\"index\":0,\"delta\":" delta "}]}\n\n"
#define TC(calls) "{\"tool_calls\":[" calls "]}"
#define ANTH_EV(name, json) "r event: " name "\ndata: " json "\n\n"

static const row rows[] = {
    /* ---- rule 1 and rule 6: set, started in the event that completes the value ---- */
    {__LINE__, "1: a string completes in the event of its closing quote", SSE3, "p=description",
     {B0, A0("{\"description\":\"fix index.html\""), A0(",\"content\":\"<html>\"}"), END3},
     S0 "@2 'fix index.html'\n"
        "ready #0 @3 {\"description\":\"fix index.html\",\"content\":\"<html>\"}\n" FIN(6)},
    {__LINE__, "1: the closing quote alone in the next event", SSE3, "p=description",
     {B0, A0("{\"description\":\"fix index.html"), A0("\""), A0(",\"content\":\"x\"}"), END3},
     S0 "@3 'fix index.html'\n"
        "ready #0 @4 {\"description\":\"fix index.html\",\"content\":\"x\"}\n" FIN(7)},
    {__LINE__, "1: key and value spread over many events", SSE3, "p=description",
     {B0, A0("{\"de"), A0("scri"), A0("ption"), A0("\":\"fi"), A0("x"), A0(" it\""), A0("}"), END3},
     S0 "@7 'fix it'\n"
        "ready #0 @8 {\"description\":\"fix it\"}\n" FIN(11)},
    {__LINE__, "1: the last key, completed in the same event as the object", SSE3, "p=description",
     {B0, A0("{\"path\":\"a.txt\",\"content\":\"x\","), A0("\"description\":\"late\"}"), END3},
     S0 "@3 'late'\n"
        "ready #0 @3 {\"path\":\"a.txt\",\"content\":\"x\",\"description\":\"late\"}\n" FIN(6)},
    {__LINE__, "6: a number completes at the comma in the next event", SSE3, "p=description",
     {B0, A0("{\"description\":42"), A0(",\"x\":1}"), END3},
     S0 "@3 '42'\n"
        "ready #0 @3 {\"description\":42,\"x\":1}\n" FIN(6)},
    {__LINE__, "6: a number completes at the closing brace", SSE3, "p=description",
     {B0, A0("{\"description\":-1.5e3"), A0("}"), END3},
     S0 "@3 '-1.5e3'\n"
        "ready #0 @3 {\"description\":-1.5e3}\n" FIN(6)},
    {__LINE__, "6: a number completes at the whitespace after it", SSE3, "p=description",
     {B0, A0("{\"description\":7 "), A0("}"), END3},
     S0 "@2 '7'\n"
        "ready #0 @3 {\"description\":7}\n" FIN(6)},
    {__LINE__, "6: a literal completes at its last letter", SSE3, "p=description",
     {B0, A0("{\"description\":tr"), A0("ue"), A0("}"), END3},
     S0 "@3 'true'\n"
        "ready #0 @4 {\"description\":true}\n" FIN(7)},
    {__LINE__, "6: null", SSE3, "p=description",
     {B0, A0("{\"description\":null}"), END3},
     S0 "@2 'null'\n"
        "ready #0 @2 {\"description\":null}\n" FIN(5)},
    {__LINE__, "6: false, with whitespace everywhere", SSE3, "p=description",
     {B0, A0("{ \"description\" : false , \"x\" : [ ] }"), END3},
     S0 "@2 'false'\n"
        "ready #0 @2 {\"description\":false,\"x\":[]}\n" FIN(5)},
    {__LINE__, "6: an object completes at its matching close; label is compact JSON", SSE3,
     "p=description",
     {B0, A0("{\"description\":{\"a\": [1, 2],"), A0(" \"b\":\"c\""), A0("}"), A0(",\"x\":1}"), END3},
     S0 "@4 '{\"a\":[1,2],\"b\":\"c\"}'\n"
        "ready #0 @5 {\"description\":{\"a\":[1,2],\"b\":\"c\"},\"x\":1}\n" FIN(8)},
    {__LINE__, "6: an array completes at its matching close", SSE3, "p=description",
     {B0, A0("{\"description\":[\"x\","), A0("{\"y\":null}]"), A0("}"), END3},
     S0 "@3 '[\"x\",{\"y\":null}]'\n"
        "ready #0 @4 {\"description\":[\"x\",{\"y\":null}]}\n" FIN(7)},
    {__LINE__, "1: an empty string is a progress value", SSE3, "p=description",
     {B0, A0("{\"description\":\"\"}"), END3},
     S0 "@2 ''\n"
        "ready #0 @2 {\"description\":\"\"}\n" FIN(5)},
    {__LINE__, "1: escapes decoded in the label, kept in the arguments", SSE3, "p=description",
     {B0, A0("{\"description\":\"tab\\there \\u00e9\\u4e2d\\ud83d\\ude00 \\\\ \\/ \\\"q\\\"\"}"), END3},
     S0 "@2 'tab here é中😀 \\ / \"q\"'\n"
        "ready #0 @2 {\"description\":\"tab\\there \\u00e9\\u4e2d\\ud83d\\ude00 \\\\ \\/ \\\"q\\\"\"}\n"
        FIN(5)},
    {__LINE__, "7: control characters: a run inside is one space, at the ends none", SSE3,
     "p=description",
     {B0, A0("{\"description\":\"\\u0000\\u0001\\tx\\n\\ny\\u001f\"}"), END3},
     S0 "@2 'x y'\n"
        "ready #0 @2 {\"description\":\"\\u0000\\u0001\\tx\\n\\ny\\u001f\"}\n" FIN(5)},
    {__LINE__, "7: DEL is a control character; spaces are not", SSE3, "p=description",
     {B0, A0("{\"description\":\" a\\u007fb \"}"), END3},
     S0 "@2 ' a b '\n"
        "ready #0 @2 {\"description\":\" a\\u007fb \"}\n" FIN(5)},
    {__LINE__, "7: C1 control characters (U+0085, U+009B CSI) are stripped too", SSE3,
     "p=description",
     {B0, A0("{\"description\":\"a\\u0085b\\u009b[31mc\"}"), END3},
     S0 "@2 'a b [31mc'\n"
        "ready #0 @2 {\"description\":\"a\\u0085b\\u009b[31mc\"}\n" FIN(5)},
    /* ---- rule 5: top-level keys only, decoded, first completed wins ---- */
    {__LINE__, "5: duplicate keys: the first completed value wins", SSE3, "p=description",
     {B0, A0("{\"description\":\"first\","), A0("\"description\":\"second\"}"), END3},
     S0 "@2 'first'\n"
        "ready #0 @3 {\"description\":\"first\",\"description\":\"second\"}\n" FIN(6)},
    {__LINE__, "5: the same name nested deeper does not count", SSE3, "p=description",
     {B0, A0("{\"meta\":{\"description\":\"inner\"},"), A0("\"items\":[{\"description\":\"deep\"}],"),
      A0("\"description\":\"outer\""), A0("}"), END3},
     S0 "@4 'outer'\n"
        "ready #0 @5 {\"meta\":{\"description\":\"inner\"},\"items\":[{\"description\":\"deep\"}],"
        "\"description\":\"outer\"}\n" FIN(8)},
    {__LINE__, "5+3: only nested: started at the closing brace, no progress", SSE3, "p=description",
     {B0, A0("{\"meta\":{\"description\":\"inner\"}"), A0("}"), END3},
     S0 "@3\n"
        "ready #0 @3 {\"meta\":{\"description\":\"inner\"}}\n" FIN(6)},
    {__LINE__, "5: keys compare after decoding escapes", SSE3, "p=description",
     {B0, A0("{\"descr\\u0069ption\":\"esc key\"}"), END3},
     S0 "@2 'esc key'\n"
        "ready #0 @2 {\"descr\\u0069ption\":\"esc key\"}\n" FIN(5)},
    {__LINE__, "5: a non-ASCII argument name, escaped in the key", SSE3, "p=café",
     {B0, A0("{\"cafe\":\"no\",\"caf\\u00e9\":\"yes\"}"), END3},
     S0 "@2 'yes'\n"
        "ready #0 @2 {\"cafe\":\"no\",\"caf\\u00e9\":\"yes\"}\n" FIN(5)},
    {__LINE__, "5: a non-ASCII argument name, raw in the key", SSE3, "p=café",
     {B0, A0("{\"café\":\"raw\"}"), END3},
     S0 "@2 'raw'\n"
        "ready #0 @2 {\"café\":\"raw\"}\n" FIN(5)},
    {__LINE__, "5: near misses do not match", SSE3, "p=description",
     {B0,
      A0("{\"descriptions\":\"1\",\"descriptio\":\"2\",\"Description\":\"3\","
         "\"description\\u0000\":\"4\","),
      A0("\"description\":\"yes\"}"), END3},
     S0 "@3 'yes'\n"
        "ready #0 @3 {\"descriptions\":\"1\",\"descriptio\":\"2\",\"Description\":\"3\","
        "\"description\\u0000\":\"4\",\"description\":\"yes\"}\n" FIN(6)},
    {__LINE__, "5: the name as a value is not a key", SSE3, "p=description",
     {B0, A0("{\"x\":\"description\""), A0(",\"description\":\"v\""), A0("}"), END3},
     S0 "@3 'v'\n"
        "ready #0 @4 {\"x\":\"description\",\"description\":\"v\"}\n" FIN(7)},
    /* ---- rule 2: unset, started when the call appears ---- */
    {__LINE__, "2: no progress argument: started with the call's first event", SSE3, "",
     {B0, A0("{\"description\":\"x\"}"), END3},
     S0 "@1\n"
        "ready #0 @2 {\"description\":\"x\"}\n" FIN(5)},
    {__LINE__, "2: a progress argument for another tool only", SSE3, "pt=other:description",
     {B0, A0("{\"description\":\"x\"}"), END3},
     S0 "@1\n"
        "ready #0 @2 {\"description\":\"x\"}\n" FIN(5)},
    {__LINE__, "2: a whole call in one event", ALL4, "",
     {"w 0 call_1 write_file {\"path\":\"a\"}", "f stop", "z"},
     S0 "@1\n"
        "ready #0 @1 {\"path\":\"a\"}\n"
        "finished @3 'stop'\n"},
    {__LINE__, "1: a whole call in one event, with padding", ALL4, "p=description",
     {"w 0 call_1 write_file { \"description\": \"d\", \"path\": \"a\" }", "f stop", "z"},
     S0 "@1 'd'\n"
        "ready #0 @1 {\"description\":\"d\",\"path\":\"a\"}\n"
        "finished @3 'stop'\n"},
    {__LINE__, "2+1: a call without progress starts first", SSE3, "pt=write_file:description",
     {B0, "b 1 call_2 list_dir", A0("{\"description\":\"w\"}"), "a 1 {\"path\":\"/\"}", "e 0", "e 1",
      "f tool_calls", "z"},
     "started #1 call_2 list_dir @2\n" S0 "@3 'w'\n"
     "ready #0 @3 {\"description\":\"w\"}\n"
     "ready #1 @4 {\"path\":\"/\"}\n" FIN(8)},
    /* ---- rule 3: set but never sent ---- */
    {__LINE__, "3: never sent: started at the closing brace", SSE3, "p=description",
     {B0, A0("{\"path\":\"a\""), A0(",\"content\":\"b\"}"), END3},
     S0 "@3\n"
        "ready #0 @3 {\"path\":\"a\",\"content\":\"b\"}\n" FIN(6)},
    {__LINE__, "3: the provider ends the call first", RS | AN, "p=description",
     {B0, A0("{\"path\":\"a\""), "e 0", "f stop", "z"},
     S0 "@3\n"
        "error #0 @3 tap_incomplete\n"
        "finished @5 'stop'\n"},
    {__LINE__, "3: the provider ends the call first (Chat: finish_reason length)", CH,
     "p=description",
     {B0, A0("{\"path\":\"a\""), "f length", "z"},
     S0 "@3\n"
        "error #0 @3 tap_incomplete\n"
        "finished @4 'length'\n"},
    {__LINE__, "3: a call without arguments is ready with {} when it ends", RS | AN,
     "p=description", {B0, "e 0", "f stop", "z"},
     S0 "@2\n"
        "ready #0 @2 {}\n"
        "finished @4 'stop'\n"},
    {__LINE__, "3: a call without arguments (Chat)", CH, "p=description",
     {B0, "f tool_calls", "z"},
     S0 "@2\n"
        "ready #0 @2 {}\n" FIN(3)},
    {__LINE__, "3: a Gemini call without args", GM, "p=description",
     {"w 0 - ping", "f STOP", "z"},
     "started #0 ts_1_0 ping @1\n"
     "ready #0 @1 {}\n"
     "finished @3 'STOP'\n"},
    {__LINE__, "8: whitespace is not an arguments object", RS | AN, "p=description",
     {B0, A0("  "), "e 0", "f stop", "z"},
     S0 "@3\n"
        "error #0 @3 tap_incomplete\n"
        "finished @5 'stop'\n"},
    {__LINE__, "3: an explicit empty object", SSE3, "p=description",
     {B0, A0("{}"), END3},
     S0 "@2\n"
        "ready #0 @2 {}\n" FIN(5)},
    /* ---- rule 4: once, first; held-back deltas ---- */
    {__LINE__, "4: deltas before started are handed over right after it", SSE3,
     "p=description deltas",
     {B0, A0("{\"content\":\"xx"), A0("\",\"description\":\"d\""), A0("}"), END3},
     S0 "@3 'd'\n"
        "delta #0 @3 '{\"content\":\"xx\",\"description\":\"d\"'\n"
        "delta #0 @4 '}'\n"
        "ready #0 @4 {\"content\":\"xx\",\"description\":\"d\"}\n" FIN(7)},
    {__LINE__, "4: deltas follow the fragments", SSE3, "deltas",
     {B0, A0("{\"a\":"), A0("1}"), END3},
     S0 "@1\n"
        "delta #0 @2 '{\"a\":'\n"
        "delta #0 @3 '1}'\n"
        "ready #0 @3 {\"a\":1}\n" FIN(6)},
    {__LINE__, "4: deltas are argument text, escapes not decoded", SSE3, "deltas p=description",
     {B0, A0("{\"description\":\"Caf\\u00e9"), A0("\"}"), END3},
     S0 "@3 'Café'\n"
        "delta #0 @3 '{\"description\":\"Caf\\u00e9\"}'\n"
        "ready #0 @3 {\"description\":\"Caf\\u00e9\"}\n" FIN(6)},
    /* ---- rule 8: strict arguments; errors per call ---- */
    {__LINE__, "8: malformed after the label", SSE3, "p=description",
     {B0, A0("{\"description\":\"ok\","), A0("\"x\":tru}"), END3},
     S0 "@2 'ok'\n"
        "error #0 @3 json_literal\n" FIN(6)},
    {__LINE__, "8: other calls go on", SSE3, "p=description",
     {B0, "b 1 call_2 write_file", A0("{\"description\":\"a\",,"), "a 1 {\"description\":\"b\"}", "e 0",
      "e 1", "f tool_calls", "z"},
     S0 "@3 'a'\n"
        "error #0 @3 json_syntax\n"
        "started #1 call_2 write_file @4 'b'\n"
        "ready #1 @4 {\"description\":\"b\"}\n" FIN(8)},
    {__LINE__, "8: a trailing comma", SSE3, "p=description",
     {B0, A0("{\"a\":1,}"), END3},
     S0 "@2\n"
        "error #0 @2 json_syntax\n" FIN(5)},
    {__LINE__, "8: data after complete arguments: a stream error, the call stays ready", SSE3,
     "p=description",
     {B0, A0("{\"description\":\"d\"}"), A0(" x"), END3},
     S0 "@2 'd'\n"
        "ready #0 @2 {\"description\":\"d\"}\n"
        "stream_error @3 json_trailing\n" FIN(6)},
    {__LINE__, "8: whitespace after complete arguments is fine", SSE3, "p=description",
     {B0, A0("{\"description\":\"d\"}"), A0("   "), END3},
     S0 "@2 'd'\n"
        "ready #0 @2 {\"description\":\"d\"}\n" FIN(6)},
    {__LINE__, "8: an array is not an arguments object", SSE3, "p=description",
     {B0, A0("[1,2]"), END3},
     S0 "@2\n"
        "error #0 @2 tap_not_object\n" FIN(5)},
    {__LINE__, "8: a string is not an arguments object", SSE3, "p=description",
     {B0, A0("\"desc\""), END3},
     S0 "@2\n"
        "error #0 @2 tap_not_object\n" FIN(5)},
    {__LINE__, "8: a bad escape", SSE3, "p=description",
     {B0, A0("{\"description\":\"bad \\x\"}"), END3},
     S0 "@2\n"
        "error #0 @2 json_escape\n" FIN(5)},
    {__LINE__, "8: truncated: EOF inside the arguments", SSE3, "p=description",
     {B0, A0("{\"description\":\"x\"")},
     S0 "@2 'x'\n"
        "stream_error @end ms_truncated\n"
        "error #0 @end tap_incomplete\n"},
    {__LINE__, "EOF without the terminal event after a complete call", SSE3, "p=description",
     {B0, A0("{\"description\":\"x\"}")},
     S0 "@2 'x'\n"
        "ready #0 @2 {\"description\":\"x\"}\n"
        "stream_error @end ms_truncated\n"},
    {__LINE__, "8: the arguments limit crossed inside a string's middle piece", SSE3,
     "margs=24 p=content",
     {B0, A0("{\"content\":\"abcdefgh"), A0("ijklmnop"), A0("qrst\"}"), "e 0", "f tool_calls", "z"},
     S0 "@3\n"
        "error #0 @3 limit\n" FIN(7)},
    {__LINE__, "8: middle pieces up to the limit exactly, then past it", SSE3,
     "margs=28",
     {B0, A0("{\"content\":\"abcdefgh"), A0("ijklmnop"), A0("0123456789abcdef"), A0("q\"}"), "e 0", "f tool_calls", "z"},
     S0 "@1\n"
        "error #0 @4 limit\n" FIN(8)},
    {__LINE__, "8: the arguments limit fails one call; the others go on", SSE3,
     "margs=24 p=description",
     {B0, "b 1 call_2 write_file", A0("{\"description\":\"short\","), A0("\"content\":\"0123456789\"}"),
      "a 1 {\"a\":1}", "e 0", "e 1", "f tool_calls", "z"},
     S0 "@3 'short'\n"
        "error #0 @4 limit\n"
        "started #1 call_2 write_file @5\n"
        "ready #1 @5 {\"a\":1}\n" FIN(9)},
    {__LINE__, "missing end event, complete arguments", SSE3, "p=description",
     {B0, A0("{\"description\":\"d\"}"), "f tool_use", "z"},
     S0 "@2 'd'\n"
        "ready #0 @2 {\"description\":\"d\"}\n"
        "finished @4 'tool_use'\n"},
    {__LINE__, "missing content_block_stop, truncated arguments", RS | AN, "p=description",
     {B0, A0("{\"description\":\"d\""), "f max_tokens", "z"},
     S0 "@2 'd'\n"
        "error #0 @4 tap_incomplete\n"
        "finished @4 'max_tokens'\n"},
    {__LINE__, "truncated arguments, Chat finish_reason length", CH, "p=description",
     {B0, A0("{\"description\":\"d\""), "f length", "z"},
     S0 "@2 'd'\n"
        "error #0 @3 tap_incomplete\n"
        "finished @4 'length'\n"},
    /* ---- text ---- */
    {__LINE__, "text before and after a call", SSE3, "text p=description",
     {"t Let me write that.", B0, A0("{\"description\":\"d\"}"), "e 0", "t  Done.", "f stop", "z"},
     "text @1 'Let me write that.'\n" S0 "@3 'd'\n"
     "ready #0 @3 {\"description\":\"d\"}\n"
     "text @5 ' Done.'\n"
     "finished @7 'stop'\n"},
    {__LINE__, "no text events without the text option", SSE3, "p=description",
     {"t Let me write that.", B0, A0("{\"description\":\"d\"}"), "e 0", "t  Done.", "f stop", "z"},
     S0 "@3 'd'\n"
        "ready #0 @3 {\"description\":\"d\"}\n"
        "finished @7 'stop'\n"},
    {__LINE__, "text before and after a call (Gemini)", GM, "text p=description",
     {"t Let me write that.", "w 0 - write_file {\"description\":\"d\"}", "t  Done.", "f STOP", "z"},
     "text @1 'Let me write that.'\n"
     "started #0 ts_1_0 write_file @2 'd'\n"
     "ready #0 @2 {\"description\":\"d\"}\n"
     "text @3 ' Done.'\n"
     "finished @5 'STOP'\n"},
    /* ---- stream errors ---- */
    {__LINE__, "provider error (OpenAI style) mid-call", CH, "p=description",
     {B0, A0("{\"description\":\"x\""),
      "r data: {\"error\":{\"message\":\"Overloaded\",\"type\":\"server_error\",\"code\":null}}\n\n"},
     S0 "@2 'x'\n"
        "stream_error @3 ms_provider 'Overloaded'\n"
        "error #0 @end tap_incomplete\n"},
    {__LINE__, "provider error (Anthropic event: error) mid-call", AN, "p=description",
     {B0, A0("{\"description\":\"x\""),
      ANTH_EV("error", "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
                       "\"Overloaded\"}}")},
     S0 "@2 'x'\n"
        "stream_error @3 ms_provider 'Overloaded'\n"
        "error #0 @end tap_incomplete\n"},
    {__LINE__, "provider error (Responses, flat) mid-call", RS, "p=description",
     {B0, A0("{\"description\":\"x\""),
      "r event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"Overloaded\","
      "\"param\":null}\n\n"},
     S0 "@2 'x'\n"
        "stream_error @3 ms_provider 'Overloaded'\n"
        "error #0 @end tap_incomplete\n"},
    {__LINE__, "provider error (Responses, nested) mid-call", RS, "p=description",
     {B0, A0("{\"description\":\"x\""),
      "r event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"server_error\",\"message\":"
      "\"Overloaded\"}}\n\n"},
     S0 "@2 'x'\n"
        "stream_error @3 ms_provider 'Overloaded'\n"
        "error #0 @end tap_incomplete\n"},
    {__LINE__, "provider error (response.failed) mid-call", RS, "p=description",
     {B0, A0("{\"description\":\"x\""),
      "r event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_t\","
      "\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"Overloaded\"}}}\n\n"},
     S0 "@2 'x'\n"
        "stream_error @3 ms_provider 'Overloaded'\n"
        "error #0 @end tap_incomplete\n"},
    {__LINE__, "provider error (Gemini error body) after a call", GM, "p=description",
     {"w 0 - write_file {\"description\":\"d\"}",
      "r data: {\"error\":{\"code\":429,\"message\":\"Overloaded\",\"status\":\"RESOURCE_EXHAUSTED\"}}\n\n"},
     "started #0 ts_1_0 write_file @1 'd'\n"
     "ready #0 @1 {\"description\":\"d\"}\n"
     "stream_error @2 ms_provider 'Overloaded'\n"},
    {__LINE__, "a payload that is not JSON: a stream error; the stream goes on", CH,
     "p=description",
     {B0,
      "r data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
      "{\"arguments\":\"{\\\"a\\\"\"}}\n\n",
      A0("{\"description\":\"ok\"}"), "f tool_calls", "z"},
     "stream_error @2 ms_bad_json\n" S0 "@3 'ok'\n"
     "ready #0 @3 {\"description\":\"ok\"}\n" FIN(5)},
    {__LINE__, "a payload that is not JSON (Anthropic)", AN, "p=description",
     {B0, ANTH_EV("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,"),
      A0("{\"description\":\"ok\"}"), "e 0", "f tool_use", "z"},
     "stream_error @2 ms_bad_json\n" S0 "@3 'ok'\n"
     "ready #0 @3 {\"description\":\"ok\"}\n"
     "finished @6 'tool_use'\n"},
    {__LINE__, "an oversized SSE event: a stream error at the byte past the cap", CH,
     "mev=256 p=description",
     {B0, "r data: " X200 X100 "\n\n", A0("{\"description\":\"ok\"}"), "f tool_calls", "z"},
     "stream_error @1+262 sse_event_too_large\n" S0 "@3 'ok'\n"
     "ready #0 @3 {\"description\":\"ok\"}\n" FIN(5)},
    {__LINE__, "an oversized SSE line (a comment): a stream error", CH, "mev=256 p=description",
     {B0, "r : " X200 X200 X200 X200 "\n\n", A0("{\"description\":\"ok\"}"), "f tool_calls", "z"},
     "stream_error @1+768 sse_line_too_long\n" S0 "@3 'ok'\n"
     "ready #0 @3 {\"description\":\"ok\"}\n" FIN(5)},
    {__LINE__, "Chat: finish_reason but no [DONE] ends normally at EOF", CH, "p=description",
     {B0, A0("{\"description\":\"x\"}"), "f stop"},
     S0 "@2 'x'\n"
        "ready #0 @2 {\"description\":\"x\"}\n"
        "finished @end 'stop'\n"},
    {__LINE__, "message_stop without its blank line is dropped: truncated", AN, "p=description",
     {B0, A0("{\"description\":\"x\"}"), "e 0", "f end_turn",
      "r event: message_stop\ndata: {\"type\":\"message_stop\"}\n"},
     S0 "@2 'x'\n"
        "ready #0 @2 {\"description\":\"x\"}\n"
        "stream_error @end ms_truncated\n"},
    /* ---- framing ---- */
    {__LINE__, "keep-alives between every event", SSE3, "p=description",
     {"k", B0, "k", A0("{\"description\":"), "k", A0("\"x\"}"), "k", "e 0", "f tool_calls", "k", "z"},
     S0 "@6 'x'\n"
        "ready #0 @6 {\"description\":\"x\"}\n" FIN(11)},
    {__LINE__, "events after the terminal event are ignored", SSE3, "text p=description",
     {B0, A0("{\"description\":\"x\"}"), "f tool_calls", "z", "a 1 {\"more\":1}", "t late",
      "b 1 call_9 other"},
     S0 "@2 'x'\n"
        "ready #0 @2 {\"description\":\"x\"}\n" FIN(4)},
    {__LINE__, "BOM, id and retry lines, a payload over two data lines", CH, "p=description",
     {"r \xEF\xBB\xBF", B0,
      "r id: 7\nretry: 1000\ndata: {\"choices\":[{\"index\":0,\n"
      "data: \"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
      "\"{\\\"description\\\":\\\"m\\\"}\"}}]}}]}\n\n",
      "f tool_calls", "z"},
     S0 "@2 'm'\n"
        "ready #0 @2 {\"description\":\"m\"}\n" FIN(4)},
    /* ---- several calls ---- */
    {__LINE__, "parallel calls one after the other", SSE3, "p=description",
     {B0, A0("{\"description\":\"one\"}"), "e 0", "b 1 call_2 write_file", "a 1 {\"description\":\"two\"}",
      "e 1", "f tool_calls", "z"},
     S0 "@2 'one'\n"
        "ready #0 @2 {\"description\":\"one\"}\n"
        "started #1 call_2 write_file @5 'two'\n"
        "ready #1 @5 {\"description\":\"two\"}\n" FIN(8)},
    {__LINE__, "interleaved calls", SSE3, "p=description",
     {B0, "b 1 call_2 read_file", A0("{\"description\":\"fir"), "a 1 {\"description\":\"sec",
      "a 1 ond\"}", A0("st\"}"), "e 0", "e 1", "f tool_calls", "z"},
     "started #1 call_2 read_file @5 'second'\n"
     "ready #1 @5 {\"description\":\"second\"}\n" S0 "@6 'first'\n"
     "ready #0 @6 {\"description\":\"first\"}\n" FIN(10)},
    {__LINE__, "Chat: two whole calls and the finish in one chunk", CH, "p=description",
     {"r data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\","
      "\"type\":\"function\",\"function\":{\"name\":\"f1\",\"arguments\":\"{\\\"description\\\":"
      "\\\"A\\\"}\"}},{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":"
      "\"f2\",\"arguments\":\"{\\\"description\\\":\\\"B\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}"
      "\n\n",
      "z"},
     "started #0 call_a f1 @1 'A'\n"
     "ready #0 @1 {\"description\":\"A\"}\n"
     "started #1 call_b f2 @1 'B'\n"
     "ready #1 @1 {\"description\":\"B\"}\n" FIN(2)},
    {__LINE__, "Chat: an index reused with a new id is a new call", CH, "p=description",
     {CHUNK(TC("{\"index\":0,\"id\":\"call_a\",\"function\":{\"name\":\"f1\",\"arguments\":"
               "\"{\\\"description\\\":\\\"A\\\"}\"}}")),
      CHUNK(TC("{\"index\":0,\"id\":\"call_b\",\"function\":{\"name\":\"f2\",\"arguments\":"
               "\"{\\\"description\\\":\\\"B\\\"}\"}}")),
      "f tool_calls", "z"},
     "started #0 call_a f1 @1 'A'\n"
     "ready #0 @1 {\"description\":\"A\"}\n"
     "started #1 call_b f2 @2 'B'\n"
     "ready #1 @2 {\"description\":\"B\"}\n" FIN(4)},
    {__LINE__, "Chat: the same id sent again continues the call", CH, "p=description",
     {CHUNK(TC("{\"index\":0,\"id\":\"call_a\",\"function\":{\"name\":\"f1\",\"arguments\":"
               "\"{\\\"descr\"}}")),
      CHUNK(TC("{\"index\":0,\"id\":\"call_a\",\"function\":{\"arguments\":"
               "\"iption\\\":\\\"A\\\"}\"}}")),
      "f tool_calls", "z"},
     "started #0 call_a f1 @2 'A'\n"
     "ready #0 @2 {\"description\":\"A\"}\n" FIN(4)},
    {__LINE__, "Chat: entries without index matched by id", CH, "p=description",
     {CHUNK(TC("{\"id\":\"call_a\",\"function\":{\"name\":\"f1\",\"arguments\":\"{\\\"descr\"}}")),
      CHUNK(TC("{\"id\":\"call_b\",\"function\":{\"name\":\"f2\",\"arguments\":"
               "\"{\\\"description\\\":\\\"B\\\"}\"}}")),
      CHUNK(TC("{\"id\":\"call_a\",\"function\":{\"arguments\":\"iption\\\":\\\"A\\\"}\"}}")),
      "f tool_calls", "z"},
     "started #1 call_b f2 @2 'B'\n"
     "ready #1 @2 {\"description\":\"B\"}\n"
     "started #0 call_a f1 @3 'A'\n"
     "ready #0 @3 {\"description\":\"A\"}\n" FIN(5)},
    {__LINE__, "Chat: the legacy function_call delta", CH, "p=description",
     {CHUNK("{\"function_call\":{\"name\":\"f1\",\"arguments\":\"{\\\"descr\"}}"),
      CHUNK("{\"function_call\":{\"arguments\":\"iption\\\":\\\"L\\\"}\"}}"), "f stop", "z"},
     "started #0 ts_1_0 f1 @2 'L'\n"
     "ready #0 @2 {\"description\":\"L\"}\n"
     "finished @4 'stop'\n"},
    {__LINE__, "Anthropic: a text block, then a tool_use block at index 1 is call #0", AN,
     "text p=description",
     {ANTH_EV("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,"
                                     "\"content_block\":{\"type\":\"text\",\"text\":\"Hi\"}}"),
      ANTH_EV("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}"),
      "b 1 toolu_1 write_file", "a 1 {\"description\":\"d\"}", "e 1", "f tool_use", "z"},
     "text @1 'Hi'\n"
     "started #0 toolu_1 write_file @4 'd'\n"
     "ready #0 @4 {\"description\":\"d\"}\n"
     "finished @7 'tool_use'\n"},
    {__LINE__, "Anthropic: a server tool block is not a call", AN, "p=description",
     {ANTH_EV("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,"
                                     "\"content_block\":{\"type\":\"server_tool_use\",\"id\":"
                                     "\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}"),
      "a 0 {\"description\":\"no\"}", "e 0", "b 1 toolu_1 write_file", "a 1 {\"description\":\"d\"}",
      "e 1", "f tool_use", "z"},
     "started #0 toolu_1 write_file @5 'd'\n"
     "ready #0 @5 {\"description\":\"d\"}\n"
     "finished @8 'tool_use'\n"},
    {__LINE__, "Responses: a reasoning item first; the .done events repeat the arguments", RS,
     "p=description",
     {"r event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
      "\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[]}}\n\n",
      B0, A0("{\"description\":"), A0("\"d\"}"), "E 0", "e 0", "z"},
     S0 "@4 'd'\n"
        "ready #0 @4 {\"description\":\"d\"}\n"
        "finished @7 'completed'\n"},
    {__LINE__, "Responses: arguments only in function_call_arguments.done", RS, "p=description",
     {B0,
      "r event: response.function_call_arguments.done\ndata: {\"type\":"
      "\"response.function_call_arguments.done\",\"item_id\":\"fc_0\",\"output_index\":0,"
      "\"arguments\":\"{\\\"description\\\":\\\"late\\\"}\"}\n\n",
      "e 0", "z"},
     S0 "@2 'late'\n"
        "ready #0 @2 {\"description\":\"late\"}\n"
        "finished @4 'completed'\n"},
    {__LINE__, "Gemini: two calls in one chunk, a thought part skipped, usage", GM,
     "text p=description",
     {"r data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hmm\",\"thought\":true},"
      "{\"text\":\"Filing.\"},{\"functionCall\":{\"name\":\"a\",\"args\":{\"description\":\"one\"}}},"
      "{\"functionCall\":{\"name\":\"b\",\"args\":{\"n\":1,\"description\":\"two\"}}}],\"role\":"
      "\"model\"},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"totalTokenCount\":9}}"
      "\n\n"},
     "text @1 'Filing.'\n"
     "started #0 ts_1_0 a @1 'one'\n"
     "ready #0 @1 {\"description\":\"one\"}\n"
     "started #1 ts_1_1 b @1 'two'\n"
     "ready #1 @1 {\"n\":1,\"description\":\"two\"}\n"
     "finished @end 'STOP' usage={\"totalTokenCount\":9}\n"},
    /* ---- heartbeats ---- */
    {__LINE__, "heartbeat each interval of argument bytes", SSE3, "hb=16",
     {B0, A0("{\"content\":\""), A0("0123456789"), A0("0123456789"), A0("\"}"), END3},
     S0 "@1\n"
        "beat #0 @3 22\n"
        "beat #0 @4 32\n"
        "ready #0 @5 {\"content\":\"01234567890123456789\"}\n" FIN(8)},
    /* ---- rule 7: the cap ---- */
    {__LINE__, "7: cut at the cap", SSE3, "pmax=10 p=description",
     {B0, A0("{\"description\":\"abcdefghijk\"}"), END3},
     S0 "@2 'abcdefghij' cut\n"
        "ready #0 @2 {\"description\":\"abcdefghijk\"}\n" FIN(5)},
    {__LINE__, "7: exactly the cap is not cut", SSE3, "pmax=10 p=description",
     {B0, A0("{\"description\":\"abcdefghij\"}"), END3},
     S0 "@2 'abcdefghij'\n"
        "ready #0 @2 {\"description\":\"abcdefghij\"}\n" FIN(5)},
    {__LINE__, "7: cut on a UTF-8 boundary (2-byte characters)", SSE3, "pmax=10 p=description",
     {B0, A0("{\"description\":\"aéééééé\"}"), END3},
     S0 "@2 'aéééé' cut\n"
        "ready #0 @2 {\"description\":\"aéééééé\"}\n" FIN(5)},
    {__LINE__, "7: cut on a UTF-8 boundary (an escaped 4-byte character)", SSE3,
     "pmax=10 p=description",
     {B0, A0("{\"description\":\"abcdefgh\\ud83d\\ude00x\"}"), END3},
     S0 "@2 'abcdefgh' cut\n"
        "ready #0 @2 {\"description\":\"abcdefgh\\ud83d\\ude00x\"}\n" FIN(5)},
    {__LINE__, "7: the default cap is 200 bytes", SSE3, "p=description",
     {B0, A0("{\"description\":\"" X200 "y\"}"), END3},
     S0 "@2 '" X200 "' cut\n"
        "ready #0 @2 {\"description\":\"" X200 "y\"}\n" FIN(5)},
    {__LINE__, "7: a long label in one fragment is cut at the cap, and says so", SSE3,
     "p=description",
     {B0, A0("{\"description\":\"" X200 X100 "\"}"), END3},
     S0 "@2 '" X200 "' cut\n"
        "ready #0 @2 {\"description\":\"" X200 X100 "\"}\n" FIN(5)},
    {__LINE__, "7: 200 bytes are not cut", SSE3, "p=description",
     {B0, A0("{\"description\":\"" X200 "\"}"), END3},
     S0 "@2 '" X200 "'\n"
        "ready #0 @2 {\"description\":\"" X200 "\"}\n" FIN(5)},
    {__LINE__, "7: the cap applies to the label after stripping (leading controls)", SSE3,
     "pmax=10 p=description",
     {B0, A0("{\"description\":\"" NL10 NL10 "hello\"}"), END3},
     S0 "@2 'hello'\n"
        "ready #0 @2 {\"description\":\"" NL10 NL10 "hello\"}\n" FIN(5)},
    {__LINE__, "7: the cap applies to the label after stripping (a long inner run)", SSE3,
     "pmax=10 p=description",
     {B0, A0("{\"description\":\"a" TAB10 TAB10 TAB10 "b\"}"), END3},
     S0 "@2 'a b'\n"
        "ready #0 @2 {\"description\":\"a" TAB10 TAB10 TAB10 "b\"}\n" FIN(5)},
    {__LINE__, "7: trailing controls past the cap do not make a cut", SSE3, "pmax=10 p=description",
     {B0, A0("{\"description\":\"abcdefghij\\n\\n\\n\\n\\n\\n\\n\\n"), A0("\\n\"}"), END3},
     S0 "@3 'abcdefghij'\n"
        "ready #0 @3 {\"description\":\"abcdefghij\\n\\n\\n\\n\\n\\n\\n\\n\\n\"}\n" FIN(6)},
    {__LINE__, "7: a non-string label is cut too", SSE3, "pmax=5 p=description",
     {B0, A0("{\"description\":[1,2,3,4,5,6]}"), END3},
     S0 "@2 '[1,2,' cut\n"
        "ready #0 @2 {\"description\":[1,2,3,4,5,6]}\n" FIN(5)},
    {__LINE__, "7: a non-string label with a long string inside is cut at the cap", SSE3,
     "pmax=10 p=description",
     {B0, A0("{\"description\":[\"abc\",\"0123456789012345678901234567\"]}"), END3},
     S0 "@2 '[\"abc\",\"01' cut\n"
        "ready #0 @2 {\"description\":[\"abc\",\"0123456789012345678901234567\"]}\n" FIN(5)},
    {__LINE__, "7: an escaped character straddling the cap", SSE3, "pmax=10 p=description",
     {B0, A0("{\"description\":\"abcdefghi\\u00e9\"}"), END3},
     S0 "@2 'abcdefghi' cut\n"
        "ready #0 @2 {\"description\":\"abcdefghi\\u00e9\"}\n" FIN(5)},
    /* ---- raw input: offsets are the byte after the completing one ---- */
    {__LINE__, "raw: a string completes at its closing quote", RW, "p=description",
     {"r {\"description\":\"hi\"", "r ,\"x\":1}"},
     "started #0 ts_1_0 write_file @1 'hi'\n"
     "ready #0 @2 {\"description\":\"hi\",\"x\":1}\n"},
    {__LINE__, "raw: a number completes at the delimiter", RW, "p=description",
     {"r {\"description\":12", "r ,\"x\":1}"},
     "started #0 ts_1_0 write_file @1+1 '12'\n"
     "ready #0 @2 {\"description\":12,\"x\":1}\n"},
    {__LINE__, "raw: a number completes at whitespace", RW, "p=description",
     {"r {\"description\":12", "r  }"},
     "started #0 ts_1_0 write_file @1+1 '12'\n"
     "ready #0 @2 {\"description\":12}\n"},
    {__LINE__, "raw: a literal completes at its last letter", RW, "p=description",
     {"r {\"description\":nul", "r l", "r }"},
     "started #0 ts_1_0 write_file @2 'null'\n"
     "ready #0 @3 {\"description\":null}\n"},
    {__LINE__, "raw: an object completes at its close", RW, "p=description",
     {"r {\"description\":{\"a\":1}", "r }"},
     "started #0 ts_1_0 write_file @1 '{\"a\":1}'\n"
     "ready #0 @2 {\"description\":{\"a\":1}}\n"},
    {__LINE__, "raw: no progress argument: started before any byte", RW, "tool=ls",
     {"r {\"x\":1}"},
     "started #0 ts_1_0 ls @0\n"
     "ready #0 @1 {\"x\":1}\n"},
    {__LINE__, "raw: never sent: started at the closing brace", RW, "p=description",
     {"r {\"x\":1}"},
     "started #0 ts_1_0 write_file @1\n"
     "ready #0 @1 {\"x\":1}\n"},
    {__LINE__, "raw: whitespace after the object", RW, "p=description",
     {"r {\"description\":\"a\"", "r }", "r  \n "},
     "started #0 ts_1_0 write_file @1 'a'\n"
     "ready #0 @2 {\"description\":\"a\"}\n"},
    {__LINE__, "raw: truncated", RW, "p=description",
     {"r {\"description\":\"a\""},
     "started #0 ts_1_0 write_file @1 'a'\n"
     "error #0 @1 tap_incomplete\n"},
    {__LINE__, "raw: empty input", RW, "p=description",
     {NULL},
     "started #0 ts_1_0 write_file @0\n"
     "error #0 @0 json_empty\n"},
    {__LINE__, "raw: malformed: the error at the byte after the bad one", RW, "p=description",
     {"r {\"description\":\"a\"", "r ,x}"},
     "started #0 ts_1_0 write_file @1 'a'\n"
     "error #0 @1+2 json_syntax\n"},
    {__LINE__, "raw: not an object", RW, "p=description",
     {"r [1]"},
     "started #0 ts_1_0 write_file @0+1\n"
     "error #0 @0+1 tap_not_object\n"},
    {__LINE__, "raw: heartbeats at exact multiples", RW, "tool=w hb=8",
     {"r {\"c\":\"0123456789abcdefghij\"}"},
     "started #0 ts_1_0 w @0\n"
     "beat #0 @0+8 8\n"
     "beat #0 @0+16 16\n"
     "beat #0 @0+24 24\n"
     "ready #0 @1 {\"c\":\"0123456789abcdefghij\"}\n"},
    {__LINE__, "raw: deltas (whole feed; chunked runs compare without deltas)", RW,
     "tool=w deltas",
     {"r {\"a\":", "r 1}"},
     "started #0 ts_1_0 w @0\n"
     "delta #0 @2 '{\"a\":1}'\n"
     "ready #0 @2 {\"a\":1}\n"},
    /* issue 18 item 10: what used to change with the reads */
    {__LINE__, "raw: a number first is not an object, also as 0|0", RW, "p=description",
     {"r 00"},
     "started #0 ts_1_0 write_file @0+1\n"
     "error #0 @0+1 tap_not_object\n"},
    {__LINE__, "raw: not an object after whitespace", RW, "p=description",
     {"r  \n 7"},
     "started #0 ts_1_0 write_file @0+4\n"
     "error #0 @0+4 tap_not_object\n"},
    {__LINE__, "raw: a brace after the object: ready, then a stream error", RW, "p=description",
     {"r {}}"},
     "started #0 ts_1_0 write_file @0+2\n"
     "ready #0 @0+2 {}\n"
     "stream_error @0+3 json_trailing\n"},
    {__LINE__, "raw: trailing data after whitespace", RW, "tool=w",
     {"r {\"a\":1}  \n x"},
     "started #0 ts_1_0 w @0\n"
     "ready #0 @0+7 {\"a\":1}\n"
     "stream_error @0+12 json_trailing\n"},
    {__LINE__, "raw: no heartbeat after ready, offsets forward", RW, "tool=w hb=4",
     {"r {\"a\":1} "},
     "started #0 ts_1_0 w @0\n"
     "beat #0 @0+4 4\n"
     "ready #0 @0+7 {\"a\":1}\n"},
    {__LINE__, "raw: a heartbeat at the closing brace", RW, "tool=w hb=7",
     {"r {\"a\":1}   "},
     "started #0 ts_1_0 w @0\n"
     "beat #0 @0+7 7\n"
     "ready #0 @0+7 {\"a\":1}\n"},
    {__LINE__, "raw: max-args-bytes at the byte that crosses it", RW, "tool=w margs=10",
     {"r {\"a\":\"0123456789\"}"},
     "started #0 ts_1_0 w @0\n"
     "error #0 @0+11 limit\n"},
    {__LINE__, "raw: exactly max-args-bytes is fine, whitespace after it too", RW,
     "tool=w margs=10",
     {"r {\"a\":\"01\"}   "},
     "started #0 ts_1_0 w @0\n"
     "ready #0 @0+10 {\"a\":\"01\"}\n"},
    {__LINE__, "raw: cut label", RW, "pmax=10 p=description",
     {"r {\"description\":\"abcdefghijk\"", "r }"},
     "started #0 ts_1_0 write_file @1 'abcdefghij' cut\n"
     "ready #0 @2 {\"description\":\"abcdefghijk\"}\n"},
};

START_TEST(test_rows) {
  const row *rw = &rows[_i];
  for (int f = 0; f < NFMT; f++)
    if (rw->fmts & (1u << f)) check_script(rw->line, rw->label, f, rw->opts, rw->steps, rw->want);
}
END_TEST

/* ---- the progress value split at every position -------------------------------------- */

static void push_step(char (*bufs)[512], const char **steps, int *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(bufs[*n], 512, fmt, ap);
  va_end(ap);
  steps[*n] = bufs[*n];
  (*n)++;
  steps[*n] = NULL;
}

/* The arguments cut into two deltas at every position p, in each streaming format:
 * started fires in the event that holds the closing quote, always with the same label. */
START_TEST(test_split_every_position) {
  static const char args[] = "{\"description\":\"Caf\\u00e9 \\\"x\\\" ok\",\"content\":\"hello world\"}";
  const size_t n = strlen(args);
  const size_t q = (size_t)(strstr(args, "ok\"") - args) + 2; /* the closing quote */
  static const int fmts[] = {F_CHAT, F_RESP, F_ANTH};
  for (size_t fi = 0; fi < 3; fi++) {
    for (size_t p = 1; p < n; p++) {
      char bufs[8][512];
      const char *steps[9];
      int k = 0;
      push_step(bufs, steps, &k, "%s", B0);
      push_step(bufs, steps, &k, "a 0 %.*s", (int)p, args);
      push_step(bufs, steps, &k, "a 0 %s", args + p);
      push_step(bufs, steps, &k, "e 0");
      push_step(bufs, steps, &k, "f tool_calls");
      push_step(bufs, steps, &k, "z");
      char want[1024];
      snprintf(want, sizeof want,
               S0 "@%d 'Café \"x\" ok'\n"
                  "ready #0 @3 %s\n" FIN(6),
               p <= q ? 3 : 2, args);
      char label[64];
      snprintf(label, sizeof label, "split at %zu", p);
      script sc;
      render(&sc, fmts[fi], steps);
      uint64_t ends[16];
      size_t nends = ts_test_event_ends(sc.out.p, sc.out.len, ends, 16);
      sb w = {0};
      expand(&w, want, ends, nends, sc.out.len);
      char ctx[200];
      snprintf(ctx, sizeof ctx, "%s [%s]", label, fmt_names[fmts[fi]]);
      check_case(ctx, "p=description", fmt_codes[fmts[fi]], sc.out.p, sc.out.len, w.p, 0, &sc);
      sb_free(&w);
      script_free(&sc);
    }
  }
}
END_TEST

/* Three deltas, cut at every pair of positions (Anthropic, fed whole). */
START_TEST(test_split_every_pair) {
  static const char args[] = "{\"description\":\"Caf\\u00e9 \\\"x\\\" ok\",\"n\":1}";
  const size_t n = strlen(args);
  const size_t q = (size_t)(strstr(args, "ok\"") - args) + 2;
  setup su;
  setup_init(&su, TS_FORMAT_ANTHROPIC, "p=description");
  for (size_t p1 = 1; p1 < n; p1++) {
    for (size_t p2 = p1 + 1; p2 < n; p2++) {
      char bufs[8][512];
      const char *steps[9];
      int k = 0;
      push_step(bufs, steps, &k, "%s", B0);
      push_step(bufs, steps, &k, "a 0 %.*s", (int)p1, args);
      push_step(bufs, steps, &k, "a 0 %.*s", (int)(p2 - p1), args + p1);
      push_step(bufs, steps, &k, "a 0 %s", args + p2);
      push_step(bufs, steps, &k, "e 0");
      push_step(bufs, steps, &k, "f tool_use");
      push_step(bufs, steps, &k, "z");
      script sc;
      render(&sc, F_ANTH, steps);
      uint64_t ends[16];
      size_t nends = ts_test_event_ends(sc.out.p, sc.out.len, ends, 16);
      int at = q < p1 ? 2 : q < p2 ? 3 : 4;
      char want[1024];
      snprintf(want, sizeof want,
               S0 "@%d 'Café \"x\" ok'\n"
                  "ready #0 @4 %s\n"
                  "finished @7 'tool_use'\n",
               at, args);
      sb w = {0};
      expand(&w, want, ends, nends, sc.out.len);
      rec *r = run_tap(&su, sc.out.p, sc.out.len, 0);
      REQUIRE(!r->viol[0], "split at %zu, %zu: %s", p1, p2, r->viol);
      REQUIRE(!strcmp(sb_str(&r->trace), w.p), "split at %zu, %zu:\nwant:\n%sgot:\n%s", p1, p2,
                    w.p, sb_str(&r->trace));
      rec_free(r);
      sb_free(&w);
      script_free(&sc);
    }
  }
}
END_TEST

/* Labels that stress decoding, stripping and the cap, each at every split position of
 * the arguments: in Anthropic deltas (started in the event holding the value's last
 * byte) and in raw input fed in two pieces (started at the byte after it). */
static const struct {
  int line;
  const char *opts;
  const char *value; /* JSON text; its last byte completes it */
  const char *label;
  int cut;
} labels[] = {
    {__LINE__, "", "\"Caf\\u00e9 \\\"x\\\" ok\"", "Café \"x\" ok", 0},
    {__LINE__, "", "\"\\ud83d\\ude00 smile \\u4e2d\"", "😀 smile 中", 0},
    {__LINE__, "", "\"raw UTF-8: é中😀\"", "raw UTF-8: é中😀", 0},
    {__LINE__, "pmax=10", "\"abcdefghi\\u00e9xyz\"", "abcdefghi", 1},
    {__LINE__, "pmax=10", "\"aéééééé\"", "aéééé", 1},
    {__LINE__, "pmax=6", "{\"k\": [1, 2]}", "{\"k\":[", 1},
    {__LINE__, "", "[true, null , \"a\\\"b\"]", "[true,null,\"a\\\"b\"]", 0},
    {__LINE__, "pmax=10", "\"abcdefghij\\n\\n\\n\\n\\n\\n\\n\\n\\n\"", "abcdefghij", 0},
    {__LINE__, "pmax=10", "\"" NL10 NL10 "hello\"", "hello", 0},
    {__LINE__, "pmax=10", "\"a" TAB10 TAB10 TAB10 "b\"", "a b", 0},
};

START_TEST(test_labels_every_split) {
  const char *v = labels[_i].value;
  char args[512];
  snprintf(args, sizeof args, "{\"x\":1,\"description\":%s,\"content\":\"z\"}", v);
  const size_t n = strlen(args);
  const size_t q = (size_t)(strstr(args, v) - args) + strlen(v) - 1; /* the completing byte */
  char opts[64];
  snprintf(opts, sizeof opts, "p=description %s", labels[_i].opts);
  sb cargs = {0};
  ts_test_json_compact(&cargs, args, n);
  for (size_t p = 0; p <= n; p++) {
    char ctx[128];
    /* Anthropic, two deltas (p = 0 and p = n: one delta and an empty one) */
    char bufs[8][512];
    const char *steps[9];
    int k = 0;
    push_step(bufs, steps, &k, "%s", B0);
    push_step(bufs, steps, &k, "a 0 %.*s", (int)p, args);
    push_step(bufs, steps, &k, "a 0 %s", args + p);
    push_step(bufs, steps, &k, "e 0");
    push_step(bufs, steps, &k, "f tool_use");
    push_step(bufs, steps, &k, "z");
    script sc;
    render(&sc, F_ANTH, steps);
    uint64_t ends[16];
    size_t nends = ts_test_event_ends(sc.out.p, sc.out.len, ends, 16);
    sb want = {0}, w = {0};
    sb_printf(&want, S0 "@%d '%s'%s\n", p <= q ? 3 : 2, labels[_i].label, labels[_i].cut ? " cut" : "");
    sb_printf(&want, "ready #0 @%d ", p < n ? 3 : 2);
    sb_puts(&want, cargs.p);
    sb_puts(&want, "\nfinished @6 'tool_use'\n");
    expand(&w, want.p, ends, nends, sc.out.len);
    snprintf(ctx, sizeof ctx, "line %d, split at %zu [anthropic]", labels[_i].line, p);
    check_case(ctx, opts, TS_FORMAT_ANTHROPIC, sc.out.p, sc.out.len, w.p, 0, NULL);
    sb_free(&want);
    sb_free(&w);
    script_free(&sc);

    /* raw, two reads */
    setup su;
    setup_init(&su, TS_FORMAT_RAW, opts);
    rec *r = run_tap_split(&su, args, n, p);
    sb rw = {0};
    sb_printf(&rw, "started #0 ts_1_0 write_file +%zu '%s'%s\n", q + 1, labels[_i].label,
              labels[_i].cut ? " cut" : "");
    sb_printf(&rw, "ready #0 +%zu %s\n", n, cargs.p);
    REQUIRE(!r->viol[0], "line %d, raw split at %zu: %s", labels[_i].line, p, r->viol);
    REQUIRE(!strcmp(sb_str(&r->trace), rw.p), "line %d, raw split at %zu:\nwant:\n%sgot:\n%s",
                  labels[_i].line, p, rw.p, sb_str(&r->trace));
    sb_free(&rw);
    rec_free(r);
  }
  sb_free(&cargs);
}
END_TEST

/* ---- a differential test on random arguments ---------------------------------------------- */

/* Random argument objects, random fragmentation, a random streaming format. The
 * generator knows, for the first top-level key that decodes to "description", the byte
 * that completes its value and the label it must give (decoded and stripped for a
 * string, compact JSON text otherwise); started must fire in the event holding that
 * byte, with that label, or (no such key) in the event holding the closing brace. */

typedef struct {
  uint64_t s;
} rng;

static uint32_t rnd(rng *r, uint32_t n) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return (uint32_t)(r->s % n);
}

static void gen_ws(rng *r, sb *o) {
  if (rnd(r, 4)) return;
  for (uint32_t k = rnd(r, 3) + 1; k; k--) sb_putc(o, " \t\n\r"[rnd(r, 4)]);
}

/* A string: raw text to o, decoded bytes to dec. */
static void gen_string(rng *r, sb *o, sb *dec) {
  static const struct {
    const char *raw, *dec;
  } pieces[] = {
      {"abc", "abc"},           {" ", " "},
      {"word", "word"},         {"\\n", "\n"},
      {"\\t", "\t"},            {"\\u0001", "\x01"},
      {"\\u00e9", "\xc3\xa9"},  {"\\\"", "\""},
      {"\\\\", "\\"},           {"\\/", "/"},
      {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"}, {"\\ud83d\\ude00", "\xf0\x9f\x98\x80"},
      {"\\u4E2D", "\xe4\xb8\xad"}, {"caf\xc3\xa9", "caf\xc3\xa9"},
      {"\\r\\n", "\r\n"},       {"\\u007f", "\x7f"},
  };
  sb_putc(o, '"');
  for (uint32_t k = rnd(r, 7); k; k--) {
    uint32_t i = rnd(r, sizeof pieces / sizeof pieces[0]);
    sb_puts(o, pieces[i].raw);
    sb_puts(dec, pieces[i].dec);
  }
  sb_putc(o, '"');
}

static void gen_value(rng *r, sb *o, int depth);

static void gen_key(rng *r, sb *o, int *matches) {
  static const char *const keys[] = {"description", "descr\\u0069ption", "Description",
                                     "descriptions", "descriptio", "path", "content", "meta",
                                     "n", "description"};
  uint32_t i = rnd(r, sizeof keys / sizeof keys[0]);
  sb_printf(o, "\"%s\"", keys[i]);
  if (matches) *matches = i == 0 || i == 1 || i == 9;
}

static void gen_value(rng *r, sb *o, int depth) {
  static const char *const scalars[] = {"0", "42", "-7", "3.25", "-0.5e+3", "1E2", "true", "false",
                                        "null"};
  uint32_t kind = rnd(r, depth > 2 ? 2 : 4);
  if (kind == 0) {
    sb dec = {0};
    gen_string(r, o, &dec);
    sb_free(&dec);
  } else if (kind == 1) {
    sb_puts(o, scalars[rnd(r, sizeof scalars / sizeof scalars[0])]);
  } else {
    int obj = kind == 2;
    sb_putc(o, obj ? '{' : '[');
    uint32_t n = rnd(r, 4);
    for (uint32_t i = 0; i < n; i++) {
      if (i) sb_putc(o, ',');
      gen_ws(r, o);
      if (obj) {
        gen_key(r, o, NULL);
        gen_ws(r, o);
        sb_putc(o, ':');
        gen_ws(r, o);
      }
      gen_value(r, o, depth + 1);
      gen_ws(r, o);
    }
    sb_putc(o, obj ? '}' : ']');
  }
}

/* The label rule for a decoded string: control runs inside become one space, at the
 * ends they go. */
static void strip_label(sb *out, const char *s, size_t n) {
  int gap = 0;
  sb_puts(out, "");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c == 0x7F) {
      gap = 1;
      continue;
    }
    if (gap && out->len) sb_putc(out, ' ');
    gap = 0;
    sb_putc(out, (char)c);
  }
}

START_TEST(test_random_arguments) {
  rng r = {0x9E3779B97F4A7C15ull ^ (uint64_t)(_i + 1) * 0xD1B54A32D192ED03ull};
  static const int fmts[] = {F_CHAT, F_RESP, F_ANTH};
  for (int iter = 0; iter < 400; iter++) {
    sb args = {0}, label = {0};
    long done_at = -1; /* byte of args that completes the watched value */
    int has_label = 0;
    sb_putc(&args, '{');
    gen_ws(&r, &args);
    uint32_t nmem = rnd(&r, 6);
    for (uint32_t i = 0; i < nmem; i++) {
      if (i) {
        sb_putc(&args, ',');
        gen_ws(&r, &args);
      }
      int match;
      gen_key(&r, &args, &match);
      gen_ws(&r, &args);
      sb_putc(&args, ':');
      gen_ws(&r, &args);
      size_t vs = args.len;
      if (match && !has_label && rnd(&r, 2)) { /* a string label */
        sb dec = {0};
        gen_string(&r, &args, &dec);
        strip_label(&label, sb_str(&dec), dec.len);
        sb_free(&dec);
        done_at = (long)args.len - 1;
        has_label = 1;
      } else {
        sb v = {0};
        do { /* the watched value: anything but a string here */
          v.len = 0;
          gen_value(&r, &v, 1);
        } while (match && !has_label && v.p[0] == '"');
        sb_add(&args, v.p, v.len);
        sb_free(&v);
        if (match && !has_label) {
          ts_test_json_compact(&label, args.p + vs, args.len - vs);
          sb_puts(&label, "");
          char c = args.p[vs];
          int number = c == '-' || (c >= '0' && c <= '9');
          done_at = (long)args.len - (number ? 0 : 1); /* a number: the delimiter after it */
          has_label = 1;
        }
      }
      gen_ws(&r, &args);
    }
    sb_putc(&args, '}');
    if (!has_label) done_at = (long)args.len - 1;
    /* cut into 1..6 fragments */
    size_t cuts[8];
    int nfrag = (int)rnd(&r, 6) + 1;
    cuts[0] = 0;
    for (int k = 1; k < nfrag; k++) cuts[k] = rnd(&r, (uint32_t)args.len + 1);
    cuts[nfrag] = args.len;
    for (int a = 1; a < nfrag; a++) /* sort */
      for (int b = a; b > 0 && cuts[b] < cuts[b - 1]; b--) {
        size_t t = cuts[b];
        cuts[b] = cuts[b - 1];
        cuts[b - 1] = t;
      }
    const char *steps[MAXSTEPS] = {NULL};
    sb frags[8];
    memset(frags, 0, sizeof frags);
    int ns = 0, at = 0, ready_at = 0;
    steps[ns++] = B0;
    for (int k = 0; k < nfrag; k++) {
      sb_puts(&frags[k], "a 0 ");
      sb_add(&frags[k], args.p + cuts[k], cuts[k + 1] - cuts[k]);
      steps[ns++] = frags[k].p;
      if ((size_t)done_at >= cuts[k] && (size_t)done_at < cuts[k + 1]) at = ns;
      if (args.len - 1 >= cuts[k] && args.len - 1 < cuts[k + 1]) ready_at = ns;
    }
    steps[ns++] = "e 0";
    steps[ns++] = "f tool_calls";
    steps[ns++] = "z";
    int f = fmts[rnd(&r, 3)];
    script sc;
    render(&sc, f, steps);
    uint64_t ends[MAXSTEPS];
    size_t nends = ts_test_event_ends(sc.out.p, sc.out.len, ends, MAXSTEPS);
    REQUIRE(nends == (size_t)ns, "%zu blocks for %d steps", nends, ns);
    sb want = {0}, cargs = {0};
    ts_test_json_compact(&cargs, args.p, args.len);
    sb_printf(&want, S0 "+%" PRIu64, ends[at - 1]);
    if (has_label) {
      size_t w = label.len;
      if (w > TS_TAP_PROGRESS_MAX) { /* cut at the cap, on a character boundary */
        w = TS_TAP_PROGRESS_MAX;
        while (w && ((unsigned char)label.p[w] & 0xC0) == 0x80) w--;
      }
      sb_puts(&want, " '");
      sb_quoted_body(&want, sb_str(&label), w);
      sb_puts(&want, w < label.len ? "' cut" : "'");
    }
    sb_printf(&want, "\nready #0 +%" PRIu64 " ", ends[ready_at - 1]);
    sb_puts(&want, cargs.p);
    sb_putc(&want, '\n');
    setup su;
    setup_init(&su, fmt_codes[f], "p=description");
    size_t chunk = rnd(&r, 3) ? 0 : rnd(&r, 31) + 1;
    rec *rc = run_tap(&su, sc.out.p, sc.out.len, chunk);
    REQUIRE(!rc->viol[0], "seed %d iteration %d: %s\nargs: %s", _i, iter, rc->viol, args.p);
    REQUIRE(!strncmp(sb_str(&rc->trace), want.p, want.len),
            "seed %d iteration %d [%s, chunks of %zu], args in %d fragments:\n%s\nwant:\n%sgot:\n%s",
            _i, iter, fmt_names[f], chunk, nfrag, args.p, want.p, sb_str(&rc->trace));
    rec_free(rc);
    sb_free(&want);
    sb_free(&cargs);
    script_free(&sc);
    for (int k = 0; k < 8; k++) sb_free(&frags[k]);
    sb_free(&args);
    sb_free(&label);
  }
}
END_TEST

/* ---- the corpus ------------------------------------------------------------------------ */

/* Every capture of tests/corpus under the contract checker, with and without progress
 * arguments (every tool's `description`) and text: the events they give are pinned by
 * the gold traces (tests/events/gold_test.c); here every capture must keep the rules
 * that hold for every stream, in every reading, with every line ending. */
static ts_test_gold *golds;
static size_t ngolds;

START_TEST(test_corpus) {
  const ts_test_gold *g = &golds[_i];
  if (strchr(g->name, '.')) return; /* a variant: its capture is checked under its NAME */
  size_t len;
  char *text = ts_test_read_file(g->capture, &len);
  static const char *const opts[] = {"p=description text", ""};
  for (int o = 0; o < 2; o++) {
    for (int eol = 0; eol < 3; eol++) {
      sb in = {0};
      if (eol == 0)
        sb_add(&in, text, len); /* as captured, byte for byte */
      else
        ts_test_rewrite_eol(&in, text, len, eol);
      char ctx[300];
      snprintf(ctx, sizeof ctx, "%s [%s]%s", g->name, opts[o], eol_names[eol]);
      check_case(ctx, opts[o], TS_FORMAT_AUTO, in.p, in.len, NULL, eol == 0, NULL);
      sb_free(&in);
    }
  }
  free(text);
}
END_TEST

/* Replies that are not SSE (JSON bodies, JSON arrays, NDJSON, HTML) are captures too:
 * their golds are tests/corpus/NAME.events like the streams', and test_corpus above puts
 * them under the checker. */

/* The default 4 MiB event cap and the default heartbeat (4 KiB): arguments of 10 KiB in
 * 1 KiB fragments give heartbeats in the fragments that cross 4096 and 8192. */
START_TEST(test_defaults) {
  char frag[1100];
  sb in = {0};
  script sc;
  const char *none[] = {B0, NULL};
  render(&sc, F_ANTH, none);
  sb_add(&in, sc.out.p, sc.out.len);
  script_free(&sc);
  for (int i = 0; i < 10; i++) {
    if (i == 0)
      snprintf(frag, sizeof frag, "a 0 {\"content\":\"%0*d", 1012, 0);
    else
      snprintf(frag, sizeof frag, "a 0 %0*d", 1024, 0);
    const char *one[] = {frag, NULL};
    render(&sc, F_ANTH, one);
    sb_add(&in, sc.out.p, sc.out.len);
    script_free(&sc);
  }
  const char *tail[] = {"a 0 \"}", "e 0", "f tool_use", "z", NULL};
  render(&sc, F_ANTH, tail);
  sb_add(&in, sc.out.p, sc.out.len);
  script_free(&sc);
  uint64_t ends[32];
  size_t nends = ts_test_event_ends(in.p, in.len, ends, 32);
  REQUIRE_EQ(nends, 15);
  setup su;
  setup_init(&su, TS_FORMAT_ANTHROPIC, ""); /* started at once: heartbeats come after it */
  su.cfg.max_event_bytes = 0;           /* the default */
  rec *r = run_tap(&su, in.p, in.len, 0);
  REQUIRE(!r->viol[0], "%s", r->viol);
  char want[512];
  snprintf(want, sizeof want,
           "beat #0 +%" PRIu64 " 4096\nbeat #0 +%" PRIu64 " 8192\n", ends[4], ends[8]);
  REQUIRE(strstr(sb_str(&r->trace), want), "want heartbeats\n%sin\n%s", want,
                sb_clip(sb_str(&r->trace)));
  char started[128];
  snprintf(started, sizeof started, S0 "+%" PRIu64 "\n", ends[0]);
  REQUIRE(!strncmp(sb_str(&r->trace), started, strlen(started)),
                "started with the call, want %sgot\n%s", started, sb_clip(sb_str(&r->trace)));
  rec_free(r);
  sb_free(&in);
}
END_TEST

/* Raw input with heartbeats where the progress value completes after the first
 * interval: the trace must not depend on the reads. */
START_TEST(test_raw_heartbeats_late_start) {
  static const char args[] = "{\"c\":\"0123456789\",\"description\":\"late\",\"d\":\"0123456789abcdef\"}";
  check_case("raw heartbeats, late start", "p=description hb=8", TS_FORMAT_RAW, args, strlen(args),
             NULL, 1, NULL);
}
END_TEST

/* Issue 18 item 10: raw input gives the same events, offsets and error texts (the
 * --max-args-bytes message included) fed whole, in two reads at every position, and in
 * chunks of every size 1..31. */
START_TEST(test_raw_messages_every_split) {
  static const struct {
    const char *opts, *in;
  } cases[] = {
      {"p=description", "00"},
      {"p=description", "  -1"},
      {"p=description", "{}}"},
      {"tool=w", "{\"a\":1} \t x"},
      {"tool=w hb=4", "{\"a\":1} "},
      {"tool=w hb=3 deltas", "{\"a\":[1,2,3]}\n\n"},
      {"tool=w margs=10", "{\"a\":\"0123456789\"}"},
      {"tool=w margs=12", "{\"a\":\"0123\"}  \n "},
      {"tool=w margs=16", "{\"a\": [1, 2, 3, 4, 5, 6]}"},
      {"p=description", "{\"description\":\"x\",,}"},
      {"p=description", "{\"description\":tru}"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    setup su;
    setup_init(&su, TS_FORMAT_RAW, cases[i].opts);
    size_t len = strlen(cases[i].in);
    rec *whole = run_tap(&su, cases[i].in, len, 0);
    REQUIRE(!whole->viol[0], "case %zu: %s", i, whole->viol);
    REQUIRE(whole->msgs.len || strstr(sb_str(&whole->trace), "ready"), "case %zu: no outcome", i);
    /* deltas follow the reads in raw input (tap.h): left out of the comparison */
    char ctx[200];
    snprintf(ctx, sizeof ctx, "case %zu '%s' (%s)", i, cases[i].in, cases[i].opts);
    tap_runner tr = {&su, ctx, NULL, 0, 1};
    ts_split_opts so = {NULL, 0, strip_deltas_norm};
    ts_split_check_opts(ctx, cases[i].in, len, tap_run, &tr, NULL, &so);
    ts_split_check_cuts_opts(ctx, cases[i].in, len, tap_run, &tr, NULL, &so);
    rec_free(whole);
  }
}
END_TEST

/* ---- unknown format, finish twice, the API's edges ---------------------------------------- */

START_TEST(test_unknown_format) {
  static const char in[] = ": nothing but comments\n\n: here\n\n";
  char want[128];
  snprintf(want, sizeof want, "stream_error +%zu ms_unknown_format\n", strlen(in));
  check_case("auto, comments only", "", TS_FORMAT_AUTO, in, strlen(in), want, 1, NULL);
  snprintf(want, sizeof want, "stream_error +%zu ms_truncated\n", strlen(in));
  check_case("chat, comments only", "", TS_FORMAT_OPENAI_CHAT, in, strlen(in), want, 1, NULL);
}
END_TEST

static int never_cb(void *user, const ts_tap_event *e) {
  (void)user;
  (void)e;
  return 0;
}

/* ---- call ids and turns (issue 12 item 9) ---------------------------------------------- */

typedef struct {
  char ids[8][64];  /* call_id per index, from STARTED */
  char pids[8][64]; /* provider_call_id per index */
  uint32_t turns[8];
  int n;
} id_rec;

static int id_cb(void *user, const ts_tap_event *e) {
  id_rec *r = user;
  if (!e->is_call) return 0;
  REQUIRE(e->call_id.len > 0, "an empty call_id");
  if (e->type != TS_TAP_TOOL_CALL_STARTED || e->index >= 8) return 0;
  snprintf(r->ids[e->index], 64, "%.*s", (int)e->call_id.len, e->call_id.p);
  snprintf(r->pids[e->index], 64, "%.*s", (int)e->provider_call_id.len,
           e->provider_call_id.p ? e->provider_call_id.p : "");
  r->turns[e->index] = e->turn;
  if ((int)e->index >= r->n) r->n = (int)e->index + 1;
  return 0;
}

static int taken_old(void *user, const char *id, size_t len) {
  (void)user;
  return len == 5 && !memcmp(id, "c_old", 5);
}

static void run_ids(const ts_tap_config *cfg, const char *in, id_rec *r) {
  memset(r, 0, sizeof *r);
  ts_tap *t = tap_new(cfg, id_cb, r);
  REQUIRE(t != NULL, "tap_new");
  size_t len = strlen(in);
  char *copy = malloc(len);
  memcpy(copy, in, len);
  ts_tap_feed(t, copy, len);
  ts_tap_finish(t);
  ts_tap_free(t);
  free(copy);
}

#define CHAT_CALL(i, id, name)                                                                 \
  "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":" #i ",\"id\":\"" id \
  "\",\"function\":{\"name\":\"" name "\",\"arguments\":\"{}\"}}]}}]}\n\n"

START_TEST(test_call_ids) {
  ts_tap_config cfg;
  memset(&cfg, 0, sizeof cfg);
  id_rec r;
  /* ids kept as the provider sent them; turn defaults to 1 */
  run_ids(&cfg, CHAT_CALL(0, "a", "f") CHAT_CALL(1, "b", "g") "data: [DONE]\n\n", &r);
  REQUIRE(r.n == 2, "%d calls", r.n);
  REQUIRE(!strcmp(r.ids[0], "a") && !strcmp(r.ids[1], "b") && !r.pids[0][0] && !r.pids[1][0],
          "%s %s", r.ids[0], r.ids[1]);
  REQUIRE(r.turns[0] == 1 && r.turns[1] == 1, "turn %u", r.turns[0]);
  /* an id used twice in one turn, an id an earlier turn used, and no id at all: each gets
   * ts_<turn>_<index>, the provider's id (when it sent one) in provider_call_id */
  cfg.turn = 3;
  cfg.id_taken = taken_old;
  run_ids(&cfg,
          CHAT_CALL(0, "a", "f") CHAT_CALL(1, "a", "g") CHAT_CALL(2, "c_old", "h")
              "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,"
              "\"function\":{\"name\":\"k\",\"arguments\":\"{}\"}}]}}]}\n\n"
              "data: [DONE]\n\n",
          &r);
  REQUIRE(r.n == 4, "%d calls", r.n);
  REQUIRE(!strcmp(r.ids[0], "a") && !r.pids[0][0], "0: %s", r.ids[0]);
  REQUIRE(!strcmp(r.ids[1], "ts_3_1") && !strcmp(r.pids[1], "a"), "1: %s %s", r.ids[1], r.pids[1]);
  REQUIRE(!strcmp(r.ids[2], "ts_3_2") && !strcmp(r.pids[2], "c_old"), "2: %s %s", r.ids[2],
          r.pids[2]);
  REQUIRE(!strcmp(r.ids[3], "ts_3_3") && !r.pids[3][0], "3: %s %s", r.ids[3], r.pids[3]);
  REQUIRE(r.turns[3] == 3, "turn %u", r.turns[3]);
  /* a provider id spelled like a synthesized one never makes two calls share an id */
  cfg.turn = 1;
  cfg.id_taken = NULL;
  run_ids(&cfg,
          "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
          "\"function\":{\"name\":\"k\",\"arguments\":\"{}\"}}]}}]}\n\n"
          CHAT_CALL(1, "ts_1_0", "f") CHAT_CALL(2, "ts_1_2", "g")
          "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,"
          "\"function\":{\"name\":\"k\",\"arguments\":\"{}\"}}]}}]}\n\n"
          "data: [DONE]\n\n",
          &r);
  REQUIRE(r.n == 4, "%d calls", r.n);
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++) REQUIRE(strcmp(r.ids[i], r.ids[j]), "%d and %d: %s", i, j, r.ids[i]);
  REQUIRE(!strcmp(r.ids[0], "ts_1_0") && !strcmp(r.ids[1], "ts_1_1") && !strcmp(r.pids[1], "ts_1_0"),
          "%s %s %s", r.ids[0], r.ids[1], r.pids[1]);
  /* raw input: the one call is ts_<turn>_0 */
  memset(&cfg, 0, sizeof cfg);
  cfg.format = TS_FORMAT_RAW;
  cfg.raw_tool = "f";
  cfg.turn = 7;
  run_ids(&cfg, "{}", &r);
  REQUIRE(r.n == 1 && !strcmp(r.ids[0], "ts_7_0") && r.turns[0] == 7, "%s", r.ids[0]);
}
END_TEST

START_TEST(test_api) {
  ts_tap_config cfg;
  memset(&cfg, 0, sizeof cfg);
  /* a bad config is TS_E_INVAL, and *out is left as it was */
  ts_tap *bad = (ts_tap *)&cfg;
  REQUIRE_EQ(ts_tap_new(&bad, NULL, never_cb, NULL), TS_E_INVAL);
  REQUIRE_EQ(ts_tap_new(&bad, &cfg, NULL, NULL), TS_E_INVAL);
  REQUIRE_EQ(ts_tap_new(NULL, &cfg, never_cb, NULL), TS_E_INVAL);
  cfg.format = TS_FORMAT_RAW;
  REQUIRE_EQ(ts_tap_new(&bad, &cfg, never_cb, NULL), TS_E_INVAL); /* raw without raw_tool */
  cfg.format = (ts_format)99;
  REQUIRE_EQ(ts_tap_new(&bad, &cfg, never_cb, NULL), TS_E_INVAL); /* unknown format */
  cfg.format = TS_FORMAT_AUTO;
  cfg.progress_max = TS_TAP_PROGRESS_LIMIT + 1;
  REQUIRE_EQ(ts_tap_new(&bad, &cfg, never_cb, NULL), TS_E_INVAL);
  cfg.progress_max = 0;
  REQUIRE(bad == (ts_tap *)&cfg, "*out changed on error");
  /* out of memory at each allocation ts_tap_new makes is TS_E_NOMEM, never INVAL */
  for (int raw = 0; raw < 2; raw++) {
    cfg.format = raw ? TS_FORMAT_RAW : TS_FORMAT_AUTO;
    cfg.raw_tool = raw ? "f" : NULL;
    int made = 0;
    for (long n = 1; n < 20 && !made; n++) {
      ts_tap *t = NULL;
      ts_test_alloc_fail_after(n);
      int rc = ts_tap_new(&t, &cfg, never_cb, NULL);
      ts_test_alloc_fail_after(-1);
      if (rc == TS_E_OK) {
        made = 1;
        REQUIRE(n > 1, "made without allocating");
        ts_tap_free(t);
      } else {
        REQUIRE(rc == TS_E_NOMEM && t == NULL, "allocation %ld fails: %s", n, ts_err_name(rc));
      }
    }
    REQUIRE(made, "never made");
  }
  memset(&cfg, 0, sizeof cfg);
  ts_tap_free(NULL);
  REQUIRE(!strcmp(ts_tap_type_name(TS_TAP_TOOL_CALL_STARTED), "tool_call_started"), "%s != %s", ts_tap_type_name(TS_TAP_TOOL_CALL_STARTED), "tool_call_started");
  REQUIRE(!strcmp(ts_tap_type_name(TS_TAP_TOOL_CALL_DELTA), "tool_call_delta"), "%s != %s", ts_tap_type_name(TS_TAP_TOOL_CALL_DELTA), "tool_call_delta");
  REQUIRE(!strcmp(ts_tap_type_name(TS_TAP_TOOL_CALL_HEARTBEAT), "tool_call_heartbeat"), "%s != %s", ts_tap_type_name(TS_TAP_TOOL_CALL_HEARTBEAT), "tool_call_heartbeat");
  REQUIRE(!strcmp(ts_tap_type_name(TS_TAP_TOOL_CALL_READY), "tool_call_ready"), "%s != %s", ts_tap_type_name(TS_TAP_TOOL_CALL_READY), "tool_call_ready");
  REQUIRE(!strcmp(ts_tap_type_name(TS_TAP_TOOL_CALL_ERROR), "tool_call_error"), "%s != %s", ts_tap_type_name(TS_TAP_TOOL_CALL_ERROR), "tool_call_error");
  REQUIRE(!strcmp(ts_tap_type_name(TS_TAP_TEXT_DELTA), "text_delta"), "%s != %s", ts_tap_type_name(TS_TAP_TEXT_DELTA), "text_delta");
  REQUIRE(!strcmp(ts_tap_type_name(TS_TAP_TURN_FINISHED), "turn_finished"), "%s != %s", ts_tap_type_name(TS_TAP_TURN_FINISHED), "turn_finished");
  REQUIRE(!strcmp(ts_tap_type_name(TS_TAP_STREAM_ERROR), "stream_error"), "%s != %s", ts_tap_type_name(TS_TAP_STREAM_ERROR), "stream_error");

  /* Empty feeds change nothing; offset counts bytes; finish twice reports nothing more. */
  static const char part[] = "data: [DONE]\n\n";
  setup su;
  setup_init(&su, TS_FORMAT_OPENAI_CHAT, "");
  rec *r = rec_new(0, setup_pmax(&su));
  ts_tap *t = tap_new(&su.cfg, rec_cb, r);
  REQUIRE((t) != NULL, "unexpected NULL");
  char buf[32];
  REQUIRE_EQ(ts_tap_feed(t, buf, 0), TS_E_OK);
  memcpy(buf, part, sizeof part - 1);
  r->fed = 5;
  REQUIRE_EQ(ts_tap_feed(t, buf, 5), TS_E_OK);
  REQUIRE_EQ(ts_tap_offset(t), 5);
  memcpy(buf, part + 5, sizeof part - 6);
  r->fed = sizeof part - 1;
  REQUIRE_EQ(ts_tap_feed(t, buf, sizeof part - 6), TS_E_OK);
  REQUIRE_EQ(ts_tap_offset(t), sizeof part - 1);
  REQUIRE_EQ(ts_tap_finish(t), TS_E_OK);
  long n = r->nevents;
  REQUIRE_EQ(ts_tap_finish(t), TS_E_OK);
  REQUIRE_EQ(r->nevents, n);
  REQUIRE_EQ(ts_tap_failed(t), 0);
  REQUIRE(!r->viol[0], "%s", r->viol);
  REQUIRE(!strcmp(sb_str(&r->trace), "finished +14 ''\n"), "got %s", sb_str(&r->trace));
  ts_tap_free(t);
  rec_free(r);
}
END_TEST

/* ---- the callback stops the tap ------------------------------------------------------------ */

START_TEST(test_abort) {
  size_t len;
  char *text = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &len);
  setup su;
  setup_init(&su, TS_FORMAT_OPENAI_CHAT, "p=description deltas");
  rec *full = run_tap(&su, text, len, 0);
  long total = full->nevents;
  REQUIRE((total) > (5), "too small");
  rec_free(full);
  for (long k = 1; k <= total; k++) {
    for (int bytewise = 0; bytewise < 2; bytewise++) {
      rec *r = rec_new(0, setup_pmax(&su));
      r->abort_at = k;
      ts_tap *t = tap_new(&su.cfg, rec_cb, r);
      REQUIRE((t) != NULL, "unexpected NULL");
      char *copy = malloc(len);
      memcpy(copy, text, len);
      size_t step = bytewise ? 1 : len, off = 0;
      int rc = TS_E_OK;
      while (off < len && rc == TS_E_OK) {
        r->fed += step;
        rc = ts_tap_feed(t, copy + off, step);
        off += step;
      }
      REQUIRE(rc == TS_E_ABORTED, "stop at event %ld: feed returned %d", k, rc);
      REQUIRE_EQ(r->nevents, k);
      if (off < len) REQUIRE_EQ(ts_tap_feed(t, copy + off, len - off), TS_E_ABORTED);
      REQUIRE_EQ(ts_tap_finish(t), TS_E_ABORTED);
      REQUIRE_EQ(r->nevents, k); /* nothing after the stop */
      ts_tap_free(t);
      free(copy);
      rec_free(r);
    }
  }
  free(text);
}
END_TEST

/* ---- memory: per call, not per fragment; out of memory --------------------------------- */

/* One long call (thousands of fragments) plus three short ones: the allocations made
 * while feeding grow with the calls and the size of the arguments (a growing buffer
 * doubles), never with the number of fragments or reads. */
START_TEST(test_alloc_per_call) {
  enum { NFRAG = 3000 };
  sb in = {0};
  script sc;
  const char *head[] = {B0, "a 0 {\"description\":\"big file\",\"content\":\"", NULL};
  render(&sc, F_ANTH, head);
  sb_add(&in, sc.out.p, sc.out.len);
  script_free(&sc);
  const char *frag[] = {"a 0 0123456789abcdef\\n", NULL};
  render(&sc, F_ANTH, frag);
  for (int i = 0; i < NFRAG; i++) sb_add(&in, sc.out.p, sc.out.len);
  script_free(&sc);
  const char *tail[] = {"a 0 \"}", "e 0", "b 1 c2 t2", "a 1 {\"description\":\"x\"}", "e 1",
                        "b 2 c3 t3", "a 2 {\"a\":1}", "e 2", "b 3 c4 t4", "e 3",
                        "t some text", "f tool_use", "z", NULL};
  render(&sc, F_ANTH, tail);
  sb_add(&in, sc.out.p, sc.out.len);
  script_free(&sc);
  static const size_t chunks[] = {0, 1, 4096};
  for (int deltas = 0; deltas < 2; deltas++) {
    for (size_t ci = 0; ci < 3; ci++) {
      setup su;
      setup_init(&su, TS_FORMAT_ANTHROPIC, deltas ? "p=description text deltas" : "p=description text");
      rec *r = rec_new(0, setup_pmax(&su));
      r->no_alloc = 1;
      char *copy = malloc(in.len);
      memcpy(copy, in.p, in.len);
      ts_tap *t = tap_new(&su.cfg, rec_cb, r);
      REQUIRE((t) != NULL, "unexpected NULL");
      uint64_t before = ts_test_alloc_count();
      size_t step = chunks[ci] ? chunks[ci] : in.len;
      for (size_t off = 0; off < in.len; off += step) {
        size_t k = in.len - off < step ? in.len - off : step;
        r->fed += k;
        REQUIRE_EQ(ts_tap_feed(t, copy + off, k), TS_E_OK);
      }
      REQUIRE_EQ(ts_tap_finish(t), TS_E_OK);
      uint64_t allocs = ts_test_alloc_count() - before;
      REQUIRE(!r->viol[0], "%s", r->viol);
      REQUIRE_EQ(r->ncalls, 4);
      /* 4 calls; about 57 KB of arguments: a doubling buffer needs ~12 steps. */
      REQUIRE(allocs <= 80, "deltas %d, reads of %zu: %" PRIu64 " allocations for %d fragments",
                    deltas, chunks[ci], allocs, NFRAG);
      ts_tap_free(t);
      free(copy);
      rec_free(r);
    }
  }
  sb_free(&in);
}
END_TEST

/* ---- the framer's buffer, allocated on demand ------------------------------------------ */

typedef struct {
  int ready, stream_errors;
  size_t args_len;
} buf_tally;

static int buf_cb(void *user, const ts_tap_event *e) {
  buf_tally *b = user;
  if (e->type == TS_TAP_TOOL_CALL_READY) b->ready++, b->args_len += e->arguments.len;
  if (e->type == TS_TAP_STREAM_ERROR) b->stream_errors++;
  return 0;
}

/* Feeds in reads of `step` bytes (0: whole), each its own block; returns the buffer's
 * size at the end and its allocations in *grows. */
static size_t buf_feed(ts_format fmt, const char *in, size_t len, size_t step, buf_tally *b,
                       uint32_t *grows) {
  ts_tap_config cfg = {.format = fmt}; /* the default limits: a 17 MiB event cap */
  memset(b, 0, sizeof *b);
  ts_tap *t = tap_new(&cfg, buf_cb, b);
  REQUIRE(t != NULL, "tap_new");
  REQUIRE(ts__tap_buffer(t, grows) == 0 && *grows == 0, "a buffer before the first byte");
  if (!step) step = len;
  for (size_t at = 0; at < len; at += step) {
    size_t n = len - at < step ? len - at : step;
    char *c = malloc(n);
    memcpy(c, in + at, n);
    ts_tap_feed(t, c, n);
    free(c);
  }
  ts_tap_finish(t);
  size_t size = ts__tap_buffer(t, grows);
  ts_tap_free(t);
  return size;
}

/* The framer's buffer is not reserved at the event cap (17 MiB with the defaults: an
 * mmap and a munmap per tap): an SSE stream read whole, or an event per read, never
 * allocates it; read byte by byte, 4 KiB holds its events; a 200 KiB event cut into
 * 1,000-byte reads takes it to 256 KiB in 7 allocations; JSON framing (Gemini's array)
 * copies every value, so it allocates at the first. */
START_TEST(test_buffer_on_demand) {
  size_t len;
  char *text = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &len);
  buf_tally whole, bytes;
  uint32_t grows;
  REQUIRE_EQ(buf_feed(TS_FORMAT_OPENAI_CHAT, text, len, 0, &whole, &grows), 0);
  REQUIRE_EQ(grows, 0);
  REQUIRE(whole.ready == 2 && whole.stream_errors == 0, "ready %d, errors %d", whole.ready, whole.stream_errors);
  REQUIRE_EQ(buf_feed(TS_FORMAT_OPENAI_CHAT, text, len, 1, &bytes, &grows), 4096);
  REQUIRE_EQ(grows, 1);
  REQUIRE(bytes.ready == 2 && bytes.args_len == whole.args_len, "byte by byte: ready %d", bytes.ready);
  free(text);

  enum { BIG = 200 * 1024 };
  sb big = {0};
  sb_puts(&big, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\","
                "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\\\"");
  for (int i = 0; i < BIG; i++) sb_putc(&big, 'x');
  sb_puts(&big, "\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
  REQUIRE_EQ(buf_feed(TS_FORMAT_OPENAI_CHAT, big.p, big.len, 1000, &bytes, &grows), 256 * 1024);
  REQUIRE_EQ(grows, 7); /* 4, 8, ... 256 KiB */
  REQUIRE(bytes.ready == 1 && bytes.args_len == BIG + 8, "ready %d, %zu bytes", bytes.ready, bytes.args_len);
  REQUIRE_EQ(buf_feed(TS_FORMAT_OPENAI_CHAT, big.p, big.len, 0, &whole, &grows), 0);
  REQUIRE(whole.ready == 1 && whole.args_len == BIG + 8, "whole: ready %d", whole.ready);
  sb_free(&big);

  text = ts_test_read_file(ts_test_path("tests/corpus/gemini-array-two-function-calls.json"), &len);
  REQUIRE_EQ(buf_feed(TS_FORMAT_AUTO, text, len, 0, &whole, &grows), 4096);
  REQUIRE_EQ(grows, 1);
  REQUIRE(whole.ready == 2 && whole.stream_errors == 0, "gemini: ready %d", whole.ready);
  free(text);
}
END_TEST

/* Fail the n-th allocation, for every n: the tap is refused at creation or reports the
 * failure as events; it never crashes or leaks (ASan), every call that started ends,
 * and nothing it reports as ready or as a label differs from the unhindered run
 * (a label may be cut, if it says so). */
START_TEST(test_out_of_memory) {
  size_t len;
  char *text = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &len);
  setup su;
  setup_init(&su, TS_FORMAT_OPENAI_CHAT, "p=description deltas");
  rec *ref = rec_new(0, setup_pmax(&su));
  ref->no_alloc = 1;
  uint64_t a0 = ts_test_alloc_count();
  ts_tap *t = tap_new(&su.cfg, rec_cb, ref);
  char *copy = malloc(len);
  memcpy(copy, text, len);
  ref->fed = len;
  ts_tap_feed(t, copy, len);
  ts_tap_finish(t);
  ts_tap_free(t);
  uint64_t total = ts_test_alloc_count() - a0;
  REQUIRE(!ref->viol[0], "%s", ref->viol);
  for (long n = 1; n <= (long)total + 1; n++) {
    rec *r = rec_new(0, setup_pmax(&su));
    r->no_alloc = 1;
    memcpy(copy, text, len);
    ts_test_alloc_fail_after(n);
    t = NULL;
    int nrc = ts_tap_new(&t, &su.cfg, rec_cb, r);
    /* out of memory is told apart from a bad config: only NOMEM, and nothing made */
    REQUIRE(nrc == TS_E_OK || (nrc == TS_E_NOMEM && t == NULL), "allocation %ld fails: %s", n,
            ts_err_name(nrc));
    if (t) {
      r->fed = len;
      ts_tap_feed(t, copy, len);
      ts_tap_finish(t);
    }
    ts_test_alloc_fail_after(-1);
    if (t) {
      REQUIRE(!r->viol[0], "allocation %ld fails: %s", n, r->viol);
      for (int i = 0; i < r->ncalls && i < ref->ncalls; i++) {
        const rcall *c = &r->calls[i], *rc = &ref->calls[i];
        if (c->ready)
          REQUIRE(c->args_hash == rc->args_hash,
                        "allocation %ld fails: call #%d ready with other arguments", n, i);
        if (c->started && c->has_label)
          REQUIRE((c->label_hash == rc->label_hash && c->label_cut == rc->label_cut) ||
                            c->label_cut,
                        "allocation %ld fails: call #%d label differs and is not marked cut", n,
                        i);
      }
      ts_tap_free(t);
    }
    rec_free(r);
  }
  free(copy);
  rec_free(ref);
  free(text);
}
END_TEST

int main(void) {
  ngolds = ts_test_gold_list(&golds);
  Suite *s = suite_create("tap");
  TCase *tc = tcase_create("rows");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  suite_add_tcase(s, tc);
  TCase *ts = tcase_create("splits");
  tcase_set_timeout(ts, 120);
  tcase_add_test(ts, test_split_every_position);
  tcase_add_test(ts, test_split_every_pair);
  tcase_add_loop_test(ts, test_labels_every_split, 0, (int)(sizeof labels / sizeof labels[0]));
  tcase_add_test(ts, test_raw_heartbeats_late_start);
  tcase_add_test(ts, test_raw_messages_every_split);
  tcase_add_loop_test(ts, test_random_arguments, 0, 5);
  suite_add_tcase(s, ts);
  TCase *tk = tcase_create("corpus");
  tcase_set_timeout(tk, 120);
  tcase_add_loop_test(tk, test_corpus, 0, (int)ngolds);
  tcase_add_test(tk, test_defaults);
  suite_add_tcase(s, tk);
  TCase *ta = tcase_create("api");
  tcase_set_timeout(ta, 120);
  tcase_add_test(ta, test_unknown_format);
  tcase_add_test(ta, test_api);
  tcase_add_test(ta, test_call_ids);
  tcase_add_test(ta, test_abort);
  tcase_add_test(ta, test_alloc_per_call);
  tcase_add_test(ta, test_out_of_memory);
  tcase_add_test(ta, test_buffer_on_demand);
  suite_add_tcase(s, ta);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  ts_test_gold_free(golds, ngolds);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
