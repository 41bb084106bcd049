/*
 * json_seq.c: see json_seq.h.
 *
 * The framer is a small resumable state machine in the manner of sse.c: between values it
 * expects whitespace, a value's first bracket, or (array mode) the array's punctuation;
 * inside a value it copies bytes into the caller's buffer and counts brackets, with two
 * bits of string state (inside a string, after a backslash) so that a bracket or a quote
 * inside a string never counts, whichever chunk boundary falls in between. Nothing is
 * rewound and nothing re-scanned: each byte is looked at once.
 *
 * A value ends at the bracket that closes its first one; its bytes go to the callback at
 * once. The mismatch of `{` with `]` is not the framer's to judge: the parse of the value
 * downstream rejects it.
 */
#include "stream/json_seq.h"

#include <string.h>

enum {
  S_TOP = 0,  /* values mode: between values */
  S_OPEN,     /* array mode: before '[' */
  S_FIRST,    /* array mode: after '[': an element or ']' */
  S_AFTER,    /* array mode: after an element: ',' or ']' */
  S_NEXT,     /* array mode: after ',': an element */
  S_CLOSED,   /* array mode: after ']': only whitespace */
  S_VALUE,    /* inside a value */
  S_DEAD,     /* a sticky error: ignore the rest */
};

static int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int ts_json_seq_init(ts_json_seq *s, int array, char *buf, size_t cap, ts_json_seq_cb cb,
                     void *user) {
  if (!s || !buf || cap < 2 || !cb) return TS_E_INVAL;
  memset(s, 0, sizeof *s);
  s->array = array ? 1 : 0;
  s->state = array ? S_OPEN : S_TOP;
  s->buf = buf;
  s->cap = cap;
  s->cb = cb;
  s->user = user;
  s->room = cap;
  return TS_E_OK;
}

int ts_json_seq_set_grow(ts_json_seq *s, size_t size, ts_json_seq_grow_fn grow, void *user) {
  if (!s || !grow || size > s->cap || s->pos) return TS_E_INVAL;
  s->room = size;
  s->grow = grow;
  s->grow_user = user;
  return TS_E_OK;
}

/* Room for one more byte of the value (s->len == s->room < s->cap): 0, or -1 when the
 * hook refused (the buffer as it was). */
static __attribute__((noinline)) int grow_buf(ts_json_seq *s) {
  return ts_grow_to(s->grow, s->grow_user, &s->buf, &s->room, s->cap, s->len + 1);
}

static void report(ts_json_seq *s, ts_json_seq_item *it) {
  if (s->aborted) return;
  if (s->cb(s->user, it)) s->aborted = 1;
}

/* The value cannot be stored: reported (TS_E_JSEQ_TOO_LARGE or TS_E_NOMEM at `at`) and
 * skipped; framing goes on after it. */
static void skip_value(ts_json_seq *s, int code, uint64_t at) {
  s->skipping = 1;
  ts_json_seq_item it = {0};
  it.kind = TS_JSON_SEQ_ERROR;
  it.code = code;
  it.err_offset = at;
  report(s, &it);
}

/* A sticky error at absolute offset `at`. */
static void fail(ts_json_seq *s, int code, uint64_t at) {
  s->err = code;
  s->state = S_DEAD;
  ts_json_seq_item it = {0};
  it.kind = TS_JSON_SEQ_ERROR;
  it.code = code;
  it.err_offset = at;
  report(s, &it);
}

/* The value being framed closed at absolute offset `at` (its last byte). */
static void value_done(ts_json_seq *s, uint64_t at) {
  s->state = s->array ? S_AFTER : S_TOP;
  if (s->skipping) { /* reported when it outgrew the buffer */
    s->skipping = 0;
    return;
  }
  ts_json_seq_item it = {0};
  it.kind = TS_JSON_SEQ_VALUE;
  it.data = s->buf;
  it.len = s->len;
  it.end_offset = at + 1;
  report(s, &it);
}

int ts_json_seq_feed(ts_json_seq *s, const char *buf, size_t len) {
  if (!s || (!buf && len)) return TS_E_INVAL;
  if (s->aborted) return TS_E_ABORTED;
  for (size_t i = 0; i < len && !s->aborted; i++) {
    unsigned char c = (unsigned char)buf[i];
    uint64_t at = s->pos + i;
    switch (s->state) {
      case S_DEAD:
        i = len; /* ignore the rest */
        break;
      case S_VALUE:
        if (!s->skipping) {
          if (s->len == s->room && s->len == s->cap)
            skip_value(s, TS_E_JSEQ_TOO_LARGE, at);
          else if (s->len == s->room && grow_buf(s))
            skip_value(s, TS_E_NOMEM, at);
          else
            s->buf[s->len++] = (char)c;
        }
        if (s->in_str) {
          if (s->esc)
            s->esc = 0;
          else if (c == '\\')
            s->esc = 1;
          else if (c == '"')
            s->in_str = 0;
        } else if (c == '"') {
          s->in_str = 1;
        } else if (c == '{' || c == '[') {
          s->depth++;
        } else if (c == '}' || c == ']') {
          if (--s->depth == 0) value_done(s, at);
        }
        break;
      default:
        if (is_ws(c)) break;
        if (s->state == S_OPEN) {
          if (c == '[') s->state = S_FIRST;
          else fail(s, TS_E_JSEQ_SYNTAX, at);
        } else if (s->state == S_CLOSED) {
          fail(s, TS_E_JSEQ_TRAILING, at);
        } else if (s->state == S_AFTER && c == ',') {
          s->state = S_NEXT;
        } else if ((s->state == S_AFTER || s->state == S_FIRST) && c == ']') {
          s->state = S_CLOSED;
        } else if (s->state != S_AFTER && (c == '{' || c == '[')) {
          s->state = S_VALUE;
          s->depth = 1;
          s->in_str = s->esc = 0;
          s->len = 0;
          if (s->room == 0 && grow_buf(s)) {
            skip_value(s, TS_E_NOMEM, at);
          } else {
            s->buf[0] = (char)c;
            s->len = 1;
          }
        } else {
          fail(s, TS_E_JSEQ_SYNTAX, at);
        }
    }
  }
  s->pos += len;
  return s->aborted ? TS_E_ABORTED : TS_E_OK;
}

int ts_json_seq_cut(const ts_json_seq *s) {
  if (s->state == S_VALUE) return 1;
  return s->array && s->state != S_CLOSED && s->state != S_DEAD;
}
