/*
 * sse_test.c: tests for stream/sse.c.
 *
 * Every input is fed whole, byte by byte, in chunks of every size 1..31 and split in
 * two at every position (the split harness, support/split.h), and must give the same
 * items (names, data, ids, end offsets, errors and their offsets) every time. Chunks
 * are copied into exact-size heap blocks that are freed right after feed returns, so ASan catches a read past a chunk or a
 * view kept after its chunk is gone; the data buffer is an exact-size block too. The
 * recording callback overwrites every payload after copying it (as in-place JSON
 * decoding would), so a framer that re-read dispatched bytes would be caught.
 * A whole-input reference framer, written for clarity, is compared with the framer on
 * random inputs built from SSE fragments.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/sse.h"
#include "support/sb.h"
#include "support/split.h"
#include "support/test_support.h"

/* ---- recording, without allocating ------------------------------------------------ */

enum { K_RETRY = 3 }; /* pseudo item: the final retry value, when one was set */

typedef struct {
  int kind, code;
  size_t name, name_len, data, data_len, id, id_len; /* offsets into the arena */
  uint64_t off;
  int view;      /* data pointed into the chunk being fed */
  int name_view; /* the name did (a whole event, read in one step) */
} rec_item;

#define REC_ITEMS 1024
#define REC_ARENA (1u << 20)

typedef struct {
  rec_item it[REC_ITEMS];
  size_t n;
  char arena[REC_ARENA];
  size_t used;
  int overflow;
  uintptr_t lo, hi;  /* the chunk being fed */
  size_t abort_at;   /* return nonzero at this item (1-based); 0: never */
  int no_scribble;
} recorder;

static recorder rec;

static void rec_reset(recorder *r) {
  r->n = 0;
  r->used = 0;
  r->overflow = 0;
  r->lo = r->hi = 0;
  r->abort_at = 0;
  r->no_scribble = 0;
}

static size_t stash(recorder *r, const char *p, size_t n) {
  if (n > REC_ARENA - r->used) {
    r->overflow = 1;
    return 0;
  }
  size_t at = r->used;
  if (n) memcpy(r->arena + at, p, n);
  r->used += n;
  return at;
}

static int rec_cb(void *user, const ts_sse_event *ev) {
  recorder *r = user;
  if (ev->name == NULL || ev->data == NULL || ev->id == NULL) r->overflow = 2; /* never NULL */
  if (r->n == REC_ITEMS) {
    r->overflow = 1;
    return 0;
  }
  rec_item *it = &r->it[r->n++];
  it->kind = ev->kind;
  it->code = ev->code;
  it->off = ev->kind == TS_SSE_DISPATCH ? ev->end_offset : ev->err_offset;
  it->name = stash(r, ev->name, ev->name_len);
  it->name_len = ev->name_len;
  it->data = stash(r, ev->data, ev->data_len);
  it->data_len = ev->data_len;
  it->id = stash(r, ev->id, ev->id_len);
  it->id_len = ev->id_len;
  it->view = ev->data_len > 0 && (uintptr_t)ev->data >= r->lo && (uintptr_t)ev->data < r->hi;
  it->name_view = ev->name_len > 0 && (uintptr_t)ev->name >= r->lo && (uintptr_t)ev->name < r->hi;
  if (!r->no_scribble) memset(ev->data, '#', ev->data_len); /* as in-place decoding would */
  return r->abort_at != 0 && r->n >= r->abort_at;
}

/* ---- canonical text of an item list ----------------------------------------------- */

/* Items render into the tests' string builder (support/sb.h). */

static void sb_fmt_u64(sb *b, const char *pre, uint64_t v) {
  char tmp[64];
  snprintf(tmp, sizeof tmp, "%s%llu", pre, (unsigned long long)v);
  sb_puts(b, tmp);
}

static void sb_quoted(sb *b, const char *s, size_t n) {
  sb_add(b, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char tmp[8];
    if (c == '\n') sb_puts(b, "\\n");
    else if (c == '\r') sb_puts(b, "\\r");
    else if (c == '"' || c == '\\') {
      tmp[0] = '\\';
      tmp[1] = (char)c;
      sb_add(b, tmp, 2);
    } else if (c < 0x20 || c >= 0x7f) {
      snprintf(tmp, sizeof tmp, "\\x%02x", c);
      sb_puts(b, tmp);
    } else {
      sb_add(b, (const char *)&c, 1);
    }
  }
  sb_add(b, "\"", 1);
}

static void sb_event(sb *b, const char *name, size_t nl, const char *data, size_t dl,
                     const char *id, size_t il, uint64_t end) {
  sb_puts(b, "dispatch name=");
  sb_quoted(b, name, nl);
  sb_puts(b, " data=");
  sb_quoted(b, data, dl);
  sb_puts(b, " id=");
  sb_quoted(b, id, il);
  sb_fmt_u64(b, " end=", end);
  sb_puts(b, "\n");
}

static void sb_error(sb *b, int code, uint64_t at) {
  sb_puts(b, "error ");
  sb_puts(b, ts_err_name(code));
  sb_fmt_u64(b, " at=", at);
  sb_puts(b, "\n");
}

static void sb_retry(sb *b, int64_t retry) {
  if (retry >= 0) {
    sb_fmt_u64(b, "retry=", (uint64_t)retry);
    sb_puts(b, "\n");
  }
}

static void sb_rec(sb *b, const recorder *r) {
  for (size_t i = 0; i < r->n; i++) {
    const rec_item *it = &r->it[i];
    if (it->kind == TS_SSE_DISPATCH)
      sb_event(b, r->arena + it->name, it->name_len, r->arena + it->data, it->data_len,
               r->arena + it->id, it->id_len, it->off);
    else if (it->kind == TS_SSE_ERROR)
      sb_error(b, it->code, it->off);
    else
      sb_puts(b, "bad item kind\n");
  }
  if (r->overflow) sb_puts(b, "recorder overflow or NULL view\n");
}

/* ---- feeding in chunks (support/split.h) ----------------------------------------- */

/* How one run reads the input: reads of `chunk` bytes (0: whole), or two reads cut at
 * `split`, or (rng nonzero) random reads of 1..40 bytes. */
typedef struct {
  size_t chunk;
  size_t split;
  uint64_t rng;
} sched;

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

typedef struct {
  size_t cap, max_line;
  size_t *views; /* may be NULL */
} sse_runner;

/* ---- a data buffer grown on demand (ts_sse_set_grow) -------------------------------- */

/* The tests' grow hook: `exact` grows to exactly `need` (an exact-size heap block at every
 * step, so ASan catches a write past the room the framer asked for), else doubles from 16;
 * `max` (0: none) refuses any growth past it. */
typedef struct {
  int exact;
  size_t max;
  unsigned calls, refused;
  int bad;  /* a call against the contract */
  char *buf; /* the buffer now (the caller frees it) */
  size_t size;
} grow_ctl;

static char *test_grow(void *user, char *buf, size_t need, size_t *size) {
  grow_ctl *g = user;
  g->calls++;
  if (need <= *size || buf != g->buf || *size != g->size || (buf == NULL) != (*size == 0)) g->bad = 1;
  size_t n = g->exact ? need : (*size ? *size * 2 : 16);
  while (n < need) n *= 2;
  if (g->max && n > g->max) n = g->max;
  if (n < need) {
    g->refused++;
    return NULL;
  }
  char *b = realloc(buf, n);
  if (!b) return NULL;
  g->buf = b;
  g->size = *size = n;
  return b;
}

/* 1: the framers of sse_run start with no buffer and grow it exactly (test_grow). */
static int use_grow = 0;

/* The line-end scan every run uses: 1, the CPU's choice (AVX2 where it has it); 0, the
 * baseline (ts__sse_set_simd). The table and the random streams run under both. */
static int use_simd = 1;

/* The framer as a split-harness runner: the canonical text of the items, with any
 * nonzero return code of feed or finish appended. */
static void sse_run(void *user, ts_split *feed, sb *items) {
  const sse_runner *sr = user;
  grow_ctl g = {.exact = 1};
  char none = 0;
  char *dbuf = use_grow ? &none : malloc(sr->cap ? sr->cap : 1);
  ck_assert_ptr_nonnull(dbuf);
  ts_sse s;
  ck_assert_int_eq(ts_sse_init(&s, dbuf, sr->cap, sr->max_line, rec_cb, &rec), TS_E_OK);
  if (use_grow) ck_assert_int_eq(ts_sse_set_grow(&s, 0, test_grow, &g), TS_E_OK);
  ts__sse_set_simd(&s, use_simd);
  rec_reset(&rec);
  sb out = {0};
  char *c;
  size_t n;
  while (ts_split_next(feed, &c, &n)) {
    size_t at = ts_split_offset(feed) - n;
    rec.lo = (uintptr_t)c;
    rec.hi = (uintptr_t)(c + n);
    int rc = ts_sse_feed(&s, c, n);
    rec.lo = rec.hi = 0;
    if (rc) sb_error(&out, rc, at);
  }
  size_t len = ts_split_offset(feed);
  ck_assert_uint_eq(ts_sse_offset(&s), len);
  int rc = ts_sse_finish(&s);
  if (rc) sb_error(&out, rc, len);
  sb_rec(items, &rec);
  sb_retry(items, ts_sse_retry(&s));
  sb_puts(items, sb_str(&out));
  sb_free(&out);
  if (sr->views) {
    *sr->views = 0;
    for (size_t i = 0; i < rec.n; i++) *sr->views += (size_t)rec.it[i].view;
  }
  if (use_grow) {
    ck_assert_int_eq(g.bad, 0);
    free(g.buf);
  } else {
    free(dbuf);
  }
}

/* One run of `in` as `sc` reads it; returns the canonical text (malloc'd). */
static char *feed_run(const char *in, size_t len, size_t cap, size_t max_line, sched sc, size_t *views) {
  sse_runner sr = {cap, max_line, views};
  sb out = {0};
  if (sc.rng)
    ts_split_run_random(in, len, sc.rng, sse_run, &sr, &out);
  else if (sc.chunk)
    ts_split_run_once(in, len, sc.chunk >= len ? 0 : sc.chunk, sse_run, &sr, &out);
  else
    ts_split_run_cut(in, len, sc.split, sse_run, &sr, &out);
  return out.p;
}

/* ---- the reference: whole input, line by line ------------------------------------- */

enum { RF_NONE, RF_DATA, RF_EVENT, RF_ID, RF_RETRY };

static int ref_field(const char *p, size_t n) {
  if (n == 4 && memcmp(p, "data", 4) == 0) return RF_DATA;
  if (n == 5 && memcmp(p, "event", 5) == 0) return RF_EVENT;
  if (n == 2 && memcmp(p, "id", 2) == 0) return RF_ID;
  if (n == 5 && memcmp(p, "retry", 5) == 0) return RF_RETRY;
  return RF_NONE;
}

static char *ref_run(const char *in, size_t len, size_t cap, size_t max_line) {
  static const char bomb[3] = {'\xEF', '\xBB', '\xBF'};
  sb out = {0};
  sb_puts(&out, "");
  if (max_line == 0) max_line = cap + TS_SSE_LINE_SLACK;
  if (len < 3 && memcmp(in, bomb, len) == 0) return out.p; /* only (part of) a BOM */
  size_t i = (len >= 3 && memcmp(in, bomb, 3) == 0) ? 3 : 0;
  char *data = malloc(cap + 1);
  char name[TS_SSE_MAX_NAME], id[TS_SSE_MAX_ID];
  size_t dlen = 0, nlen = 0, idlen = 0;
  int have = 0, skipping = 0;
  int64_t retry = -1;
  while (i < len) {
    size_t j = i;
    while (j < len && in[j] != '\r' && in[j] != '\n') j++;
    int term = j < len;
    size_t after = j;
    if (term) {
      after = j + 1;
      if (in[j] == '\r' && after < len && in[after] == '\n') after++;
    }
    if (j == i && term) { /* blank line */
      if (!skipping && have) sb_event(&out, name, nlen, data, dlen, id, idlen, after);
      skipping = 0;
      have = 0;
      dlen = nlen = 0;
      i = after;
      continue;
    }
    if (skipping) {
      i = after;
      continue;
    }
    const char *c = memchr(in + i, ':', j - i);
    size_t colon = c ? (size_t)(c - in) : j;
    int field = ref_field(in + i, colon - i);
    int classified = c != NULL || term;
    size_t v = c ? colon + 1 : j;
    if (c && v < j && in[v] == ' ') v++;
    size_t vlen = j - v;
    int code = 0;
    uint64_t at = 0;
    if (field == RF_DATA && classified) {
      if (have && dlen >= cap) {
        code = TS_E_SSE_EVENT_TOO_LARGE;
        at = colon;
      } else {
        size_t room = cap - dlen - (have ? 1 : 0);
        if (vlen > room) {
          code = TS_E_SSE_EVENT_TOO_LARGE;
          at = v + room;
        }
      }
    } else if (field == RF_EVENT && vlen > TS_SSE_MAX_NAME) {
      code = TS_E_SSE_NAME_TOO_LONG;
      at = v + TS_SSE_MAX_NAME;
    } else if (field == RF_ID && vlen > TS_SSE_MAX_ID) {
      code = TS_E_SSE_ID_TOO_LONG;
      at = v + TS_SSE_MAX_ID;
    }
    if (j - i > max_line && (code == 0 || i + max_line <= at)) {
      code = TS_E_SSE_LINE_TOO_LONG;
      at = i + max_line;
    }
    if (code) {
      sb_error(&out, code, at);
      skipping = 1;
      have = 0;
      dlen = nlen = 0;
      i = after;
      continue;
    }
    if (!term) break; /* unterminated last line: no effect */
    switch (field) {
    case RF_DATA:
      if (have) data[dlen++] = '\n';
      memcpy(data + dlen, in + v, vlen);
      dlen += vlen;
      have = 1;
      break;
    case RF_EVENT:
      memcpy(name, in + v, vlen);
      nlen = vlen;
      break;
    case RF_ID:
      if (memchr(in + v, '\0', vlen) == NULL) {
        memcpy(id, in + v, vlen);
        idlen = vlen;
      }
      break;
    case RF_RETRY: {
      uint64_t acc = 0;
      size_t k = 0;
      for (; k < vlen && in[v + k] >= '0' && in[v + k] <= '9'; k++) {
        uint64_t d = (uint64_t)(in[v + k] - '0');
        acc = acc > (TS_SSE_RETRY_MAX - d) / 10 ? TS_SSE_RETRY_MAX : acc * 10 + d;
      }
      if (vlen > 0 && k == vlen) retry = (int64_t)acc;
      break;
    }
    default:
      break;
    }
    i = after;
  }
  sb_retry(&out, retry);
  free(data);
  return out.p;
}

/* ---- split invariance ------------------------------------------------------------- */

/* Feeds `in` whole, byte by byte, in every chunk size 2..31 and split in two at every
 * position (the split harness); every run must give `want`. `ctx` names the case in
 * failure messages. */
static void check_splits(const char *ctx, const char *in, size_t len, ts_split_run run, void *user, const char *want) {
  ts_split_check(ctx, in, len, run, user, want);
  ts_split_check_cuts(ctx, in, len, run, user, want);
}

/* The framer's own runner: every split with the CPU's line-end scan, and the two-read
 * cuts (the whole read among them) with the baseline scan too. The one-step path, where
 * the two scans differ, reads only events that lie whole in a read, and every event of a
 * row does in some cut; the reads of 1..31 bytes mostly go the line machine, the same
 * for both (so running them twice would double ASan's time for nothing). */
static void check_all_splits(const char *ctx, const char *in, size_t len, size_t cap, size_t max_line,
                             const char *want) {
  sse_runner sr = {cap, max_line, NULL};
  check_splits(ctx, in, len, sse_run, &sr, want);
  use_simd = 0;
  ts_split_check_cuts(ctx, in, len, sse_run, &sr, want);
  use_simd = 1;
  /* and with no buffer at the start, grown to exactly what each event needs: the same
   * items at every split (a refused growth aside, the buffer's size changes nothing) */
  use_grow = 1;
  check_splits(ctx, in, len, sse_run, &sr, want);
  use_grow = 0;
}

/* ---- the table -------------------------------------------------------------------- */

typedef struct {
  int kind;
  const char *name, *data, *id;
  uint64_t off; /* end offset, error offset, or the retry value */
  int code;
} want_item;

#define EV(n, d, i, o) {TS_SSE_DISPATCH, n, d, i, o, 0}
#define ERR(c, o) {TS_SSE_ERROR, NULL, NULL, NULL, o, TS_E_SSE_##c}
#define RETRY(v) {K_RETRY, NULL, NULL, NULL, v, 0}

#define BIG 4096 /* a data buffer no table row fills */

typedef struct {
  int line;
  const char *label;
  const char *in;
  size_t in_len;   /* 0: strlen(in) */
  size_t cap;      /* data buffer */
  size_t max_line; /* 0: the default */
  want_item want[8];
} sse_case;

#define X10 "xxxxxxxxxx"
#define X64 X10 X10 X10 X10 X10 X10 "xxxx"
#define X256 X64 X64 X64 X64

static const sse_case cases[] = {
    /* line endings */
    {__LINE__, "lf", "data: a\n\n", 0, BIG, 0, {EV("", "a", "", 9)}},
    {__LINE__, "cr", "data: a\r\r", 0, BIG, 0, {EV("", "a", "", 9)}},
    {__LINE__, "crlf", "data: a\r\n\r\n", 0, BIG, 0, {EV("", "a", "", 11)}},
    {__LINE__, "mixed endings in one event", "data: a\r\ndata: b\rdata: c\n\r\n", 0, BIG, 0,
     {EV("", "a\nb\nc", "", 27)}},
    {__LINE__, "each event its own ending", "data: 1\n\ndata: 2\r\rdata: 3\r\n\r\n", 0, BIG, 0,
     {EV("", "1", "", 9), EV("", "2", "", 18), EV("", "3", "", 29)}},
    {__LINE__, "cr lf is one ending, not a blank line", "data: a\r\ndata: b\r\n\r\n", 0, BIG, 0,
     {EV("", "a\nb", "", 20)}},
    {__LINE__, "lf cr is two endings", "data: a\n\rdata: b\n\n", 0, BIG, 0,
     {EV("", "a", "", 9), EV("", "b", "", 18)}},
    {__LINE__, "cr cr lf: blank line is the cr lf", "data: a\r\r\ndata: b\r\n\r\n", 0, BIG, 0,
     {EV("", "a", "", 10), EV("", "b", "", 21)}},
    {__LINE__, "final blank line is a lone cr: dispatched, end after the cr", "data: a\n\r", 0, BIG, 0,
     {EV("", "a", "", 9)}},
    {__LINE__, "final cr cr", "data: a\r\r", 0, BIG, 0, {EV("", "a", "", 9)}},
    {__LINE__, "blank lines only", "\n\r\n\r\r\n\n", 0, BIG, 0, {{0}}},
    {__LINE__, "empty input", "", 0, BIG, 0, {{0}}},

    /* byte-order mark */
    {__LINE__, "bom skipped", "\xEF\xBB\xBF" "data: a\n\n", 0, BIG, 0, {EV("", "a", "", 12)}},
    {__LINE__, "bom then field", "\xEF\xBB\xBF" "event: e\ndata: a\n\n", 0, BIG, 0,
     {EV("e", "a", "", 21)}},
    {__LINE__, "bom only at stream start", "data: a\n\n\xEF\xBB\xBF" "data: b\n\n", 0, BIG, 0,
     {EV("", "a", "", 9)}},
    {__LINE__, "two boms: the second is part of a field name", "\xEF\xBB\xBF\xEF\xBB\xBF" "data: a\n\n", 0,
     BIG, 0, {{0}}},
    {__LINE__, "bom prefix is ordinary bytes", "\xEF\xBB\ndata: a\n\n", 0, BIG, 0, {EV("", "a", "", 12)}},
    {__LINE__, "bom prefix counts towards the line", "\xEF\xBB" "123456789\n\ndata: a\n\n", 0, BIG, 8,
     {ERR(LINE_TOO_LONG, 8), EV("", "a", "", 22)}},
    {__LINE__, "one bom byte then a blank line", "\xEF\n\ndata: a\n\n", 0, BIG, 0, {EV("", "a", "", 12)}},
    {__LINE__, "bom bytes as data", "data: \xEF\xBB\xBF\n\n", 0, BIG, 0, {EV("", "\xEF\xBB\xBF", "", 11)}},
    {__LINE__, "only a bom", "\xEF\xBB\xBF", 0, BIG, 0, {{0}}},
    {__LINE__, "only part of a bom", "\xEF\xBB", 0, BIG, 0, {{0}}},
    {__LINE__, "line limit counted after the bom", "\xEF\xBB\xBF" "data: a\n\ndata: b\n\n", 0, BIG, 4,
     {ERR(LINE_TOO_LONG, 7), ERR(LINE_TOO_LONG, 16)}},

    /* comments and keep-alives */
    {__LINE__, "comments and keep-alives", ": ping\n\n:\ndata: a\n: c\n\n", 0, BIG, 0, {EV("", "a", "", 23)}},
    {__LINE__, "keep-alive between events", "data: a\n\n: keep-alive\n\ndata: b\n\n", 0, BIG, 0,
     {EV("", "a", "", 9), EV("", "b", "", 32)}},
    {__LINE__, "comment with crlf", ":x\r\ndata: a\r\n\r\n", 0, BIG, 0, {EV("", "a", "", 15)}},

    /* fields */
    {__LINE__, "multiple data lines", "data: a\ndata: b\ndata: c\n\n", 0, BIG, 0, {EV("", "a\nb\nc", "", 25)}},
    {__LINE__, "data with no space", "data:a\n\n", 0, BIG, 0, {EV("", "a", "", 8)}},
    {__LINE__, "only one space removed", "data:  a\n\n", 0, BIG, 0, {EV("", " a", "", 10)}},
    {__LINE__, "a tab is not removed", "data:\ta\n\n", 0, BIG, 0, {EV("", "\ta", "", 9)}},
    {__LINE__, "trailing space kept", "data: a \n\n", 0, BIG, 0, {EV("", "a ", "", 10)}},
    {__LINE__, "colon in the value", "data: a:b\n\n", 0, BIG, 0, {EV("", "a:b", "", 11)}},
    {__LINE__, "empty data line", "data:\n\n", 0, BIG, 0, {EV("", "", "", 7)}},
    {__LINE__, "two empty data lines", "data:\ndata:\n\n", 0, BIG, 0, {EV("", "\n", "", 13)}},
    {__LINE__, "empty data line in the middle", "data: a\ndata:\ndata: b\n\n", 0, BIG, 0,
     {EV("", "a\n\nb", "", 23)}},
    {__LINE__, "field without colon: data", "data\n\n", 0, BIG, 0, {EV("", "", "", 6)}},
    {__LINE__, "field without colon twice", "data\ndata\n\n", 0, BIG, 0, {EV("", "\n", "", 11)}},
    {__LINE__, "field without colon: event empties the name", "event: x\nevent\ndata: a\n\n", 0, BIG, 0,
     {EV("", "a", "", 24)}},
    {__LINE__, "event name", "event: delta\ndata: {}\n\n", 0, BIG, 0, {EV("delta", "{}", "", 23)}},
    {__LINE__, "event after data", "data: a\nevent: x\n\n", 0, BIG, 0, {EV("x", "a", "", 18)}},
    {__LINE__, "last event line wins", "event: a\nevent: b\ndata: 1\n\n", 0, BIG, 0, {EV("b", "1", "", 27)}},
    {__LINE__, "event name reset after dispatch", "event: e\ndata: 1\n\ndata: 2\n\n", 0, BIG, 0,
     {EV("e", "1", "", 18), EV("", "2", "", 27)}},
    {__LINE__, "no data: not dispatched, name reset", "event: e\n\ndata: 1\n\n", 0, BIG, 0,
     {EV("", "1", "", 19)}},
    {__LINE__, "event name of exactly the limit", "event: " X64 "\ndata: a\n\n", 0, BIG, 0,
     {EV(X64, "a", "", 81)}},
    {__LINE__, "id persists across events", "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", 0, BIG, 0,
     {EV("", "a", "7", 15), EV("", "b", "7", 24), EV("", "c", "", 36)}},
    {__LINE__, "id set without an event still counts", "id: 5\n\ndata: a\n\n", 0, BIG, 0,
     {EV("", "a", "5", 16)}},
    {__LINE__, "id with a NUL is ignored", "id: 1\ndata: a\n\nid: 2\0" "3\ndata: b\n\n", 32, BIG, 0,
     {EV("", "a", "1", 15), EV("", "b", "1", 32)}},
    {__LINE__, "id of exactly the limit", "id: " X256 "\ndata: a\n\n", 0, BIG, 0, {EV("", "a", X256, 270)}},
    {__LINE__, "retry", "retry: 1500\ndata: a\n\n", 0, BIG, 0, {EV("", "a", "", 21), RETRY(1500)}},
    {__LINE__, "retry: only all-digit values count",
     "retry: 1x\nretry: 20\nretry: x\nretry:\nretry: 3 \ndata: a\n\n", 0, BIG, 0,
     {EV("", "a", "", 55), RETRY(20)}},
    {__LINE__, "retry saturates", "retry: 99999999999999999999\n", 0, BIG, 0, {RETRY(TS_SSE_RETRY_MAX)}},
    {__LINE__, "unterminated retry line has no effect", "retry: 5", 0, BIG, 0, {{0}}},
    {__LINE__, "unknown fields ignored", "foo: bar\nDATA: x\ndata: a\nretryx: 1\n\n", 0, BIG, 0,
     {EV("", "a", "", 36)}},
    {__LINE__, "space before the colon: unknown field", "data : a\n\n", 0, BIG, 0, {{0}}},
    {__LINE__, "leading space: unknown field", " data: a\n\n", 0, BIG, 0, {{0}}},
    {__LINE__, "unknown field alone is no event", "foo\n\n", 0, BIG, 0, {{0}}},

    /* end of input */
    {__LINE__, "unterminated final event dropped", "data: a\n\ndata: b\n", 0, BIG, 0, {EV("", "a", "", 9)}},
    {__LINE__, "unterminated final line dropped", "data: a\n\ndata: b", 0, BIG, 0, {EV("", "a", "", 9)}},
    {__LINE__, "final crlf after data, no blank line", "data: a\r\n", 0, BIG, 0, {{0}}},

    /* limits */
    {__LINE__, "oversized line, next event arrives", "data: 0123456789\n\ndata: ok\n\n", 0, BIG, 10,
     {ERR(LINE_TOO_LONG, 10), EV("", "ok", "", 28)}},
    {__LINE__, "oversized line, then a short event", "data: 0123456789\n\ndata: k\n\n", 0, BIG, 8,
     {ERR(LINE_TOO_LONG, 8), EV("", "k", "", 27)}},
    {__LINE__, "line of exactly the limit", "data: a\n\n", 0, BIG, 7, {EV("", "a", "", 9)}},
    {__LINE__, "line one past the limit", "data: ab\n\ndata: c\n\n", 0, BIG, 7,
     {ERR(LINE_TOO_LONG, 7), EV("", "c", "", 19)}},
    {__LINE__, "oversized comment drops its event", ": 12345678\ndata: x\n\ndata: y\n\n", 0, BIG, 8,
     {ERR(LINE_TOO_LONG, 8), EV("", "y", "", 29)}},
    {__LINE__, "skipped lines are not checked", "data: 123\ndata: 123456789\n\ndata: a\n\n", 0, BIG, 8,
     {ERR(LINE_TOO_LONG, 8), EV("", "a", "", 36)}},
    {__LINE__, "limit at the colon", "datax:\n\ndata: a\n\n", 0, BIG, 5,
     {ERR(LINE_TOO_LONG, 5), ERR(LINE_TOO_LONG, 13)}},
    {__LINE__, "oversized line with crlf", "data: 0123456789\r\n\r\ndata: k\r\n\r\n", 0, BIG, 8,
     {ERR(LINE_TOO_LONG, 8), EV("", "k", "", 31)}},
    {__LINE__, "oversized data, next event arrives", "data: 12345\n\ndata: 1234\n\n", 0, 4, 0,
     {ERR(EVENT_TOO_LARGE, 10), EV("", "1234", "", 25)}},
    {__LINE__, "oversized data over several lines", "data: 12\ndata: 3\ndata: 4\n\ndata: x\n\n", 0, 4, 0,
     {ERR(EVENT_TOO_LARGE, 21), EV("", "x", "", 35)}},
    {__LINE__, "oversized data: joining newline of a bare data line", "data: a\ndata\n\ndata: b\n\n", 0, 1, 0,
     {ERR(EVENT_TOO_LARGE, 12), EV("", "b", "", 23)}},
    {__LINE__, "joined data of exactly the limit", "data: a\ndata: b\n\n", 0, 3, 0, {EV("", "a\nb", "", 17)}},
    {__LINE__, "zero capacity: only empty payloads", "data:\n\ndata: a\n\ndata\n\n", 0, 0, 0,
     {EV("", "", "", 7), ERR(EVENT_TOO_LARGE, 13), EV("", "", "", 22)}},
    {__LINE__, "data error before line error", "data: 12345\n\n", 0, 2, 9, {ERR(EVENT_TOO_LARGE, 8)}},
    {__LINE__, "line error before data error", "data: 12345\n\n", 0, 2, 6, {ERR(LINE_TOO_LONG, 6)}},
    {__LINE__, "error in an unterminated last line is reported", "data: a\n\ndata: 123456", 0, 4, 0,
     {EV("", "a", "", 9), ERR(EVENT_TOO_LARGE, 19)}},
    {__LINE__, "event name too long", "event: " X64 "x\ndata: a\n\ndata: b\n\n", 0, BIG, 0,
     {ERR(NAME_TOO_LONG, 71), EV("", "b", "", 91)}},
    {__LINE__, "id too long", "id: 1\n\nid: " X256 "x\ndata: a\n\ndata: b\n\n", 0, BIG, 0,
     {ERR(ID_TOO_LONG, 267), EV("", "b", "1", 287)}},
    {__LINE__, "error, then eof while skipping", "data: 12345\ndata: x\n", 0, 2, 0, {ERR(EVENT_TOO_LARGE, 8)}},
    {__LINE__, "resync ends at a cr blank line", "data: 12345\r\rdata: x\r\r", 0, 2, 0,
     {ERR(EVENT_TOO_LARGE, 8), EV("", "x", "", 22)}},
    /* whole events: the one-step path (whole_event) and each way out of it; fed whole,
     * it takes the path, fed in pieces the line machine reads the same bytes */
    {__LINE__, "whole: no spaces", "event:e\ndata:{}\n\n", 0, BIG, 0,
     {EV("e", "{}", "", 17)}},
    {__LINE__, "whole: crlf", "event: e\r\ndata: a\r\n\r\n", 0, BIG, 0,
     {EV("e", "a", "", 21)}},
    {__LINE__, "whole: cr only, then another", "event: e\rdata: a\r\rdata: b\n\n", 0, BIG, 0,
     {EV("e", "a", "", 18), EV("", "b", "", 27)}},
    {__LINE__, "whole: final blank line a lone cr", "event: e\ndata: a\n\r", 0, BIG, 0,
     {EV("e", "a", "", 18)}},
    {__LINE__, "whole: cut after the data line", "event: e\ndata: a\n", 0, BIG, 0,
     {{0}}},
    {__LINE__, "whole: cut inside the data line", "event: e\ndata: a", 0, BIG, 0,
     {{0}}},
    {__LINE__, "whole: cut after a cr data ending", "event: e\ndata: a\r", 0, BIG, 0,
     {{0}}},
    {__LINE__, "whole: cut inside the event line", "data: 1\n\nevent: e", 0, BIG, 0,
     {EV("", "1", "", 9)}},
    {__LINE__, "whole: two data lines", "event: e\ndata: a\ndata: b\n\n", 0, BIG, 0,
     {EV("e", "a\nb", "", 26)}},
    {__LINE__, "whole: an id line inside", "event: e\nid: 3\ndata: a\n\ndata: b\n\n", 0, BIG, 0,
     {EV("e", "a", "3", 24), EV("", "b", "3", 33)}},
    {__LINE__, "whole: a comment first", "event: e\n: c\ndata: a\n\n: c\nevent: f\ndata: b\n\n", 0, BIG, 0,
     {EV("e", "a", "", 22), EV("f", "b", "", 44)}},
    {__LINE__, "whole: an event line after the data", "event: e\ndata: a\nevent: f\n\n", 0, BIG, 0,
     {EV("f", "a", "", 27)}},
    {__LINE__, "whole: a retry line after the data", "event: e\ndata: a\nretry: 5\n\n", 0, BIG, 0,
     {EV("e", "a", "", 27), RETRY(5)}},
    {__LINE__, "whole: empty name", "event:\ndata: a\n\n", 0, BIG, 0,
     {EV("", "a", "", 16)}},
    {__LINE__, "whole: empty data", "event: e\ndata:\n\n", 0, BIG, 0,
     {EV("e", "", "", 16)}},
    {__LINE__, "whole: name of exactly the limit, no space", "event:" X64 "\ndata: a\n\n", 0, BIG, 0,
     {EV(X64, "a", "", 80)}},
    {__LINE__, "whole: name one past the limit, no space", "event:" X64 "x\ndata: a\n\nevent: f\ndata: b\n\n", 0, BIG, 0,
     {ERR(NAME_TOO_LONG, 70), EV("f", "b", "", 99)}},
    {__LINE__, "whole: data of exactly the cap", "event: e\ndata: 1234\n\n", 0, 4, 0,
     {EV("e", "1234", "", 21)}},
    {__LINE__, "whole: data one past the cap", "event: e\ndata: 12345\n\nevent: f\ndata: 1\n\n", 0, 4, 0,
     {ERR(EVENT_TOO_LARGE, 19), EV("f", "1", "", 40)}},
    {__LINE__, "whole: event line one past the line limit", "event: e\ndata: a\n\nevent: f\ndata: b\n\n", 0, BIG, 7,
     {ERR(LINE_TOO_LONG, 7), ERR(LINE_TOO_LONG, 25)}},
    {__LINE__, "whole: lines of exactly the line limit", "event: e\ndata: a\n\n", 0, BIG, 8,
     {EV("e", "a", "", 18)}},
    {__LINE__, "whole: data line one past the line limit", "event: e\ndata: abc\n\nevent: f\ndata: b\n\n", 0, BIG, 8,
     {ERR(LINE_TOO_LONG, 17), EV("f", "b", "", 38)}},
    {__LINE__, "whole: unknown field after the data", "event: e\ndata: a\nfoo: 1\n\n", 0, BIG, 0,
     {EV("e", "a", "", 25)}},
    {__LINE__, "whole: no data, only a look-alike", "event: e\ndatax: 1\n\ndata: b\n\n", 0, BIG, 0,
     {EV("", "b", "", 28)}},
    {__LINE__, "whole: look-alike event field", "eventx: e\ndata: a\n\n", 0, BIG, 0,
     {EV("", "a", "", 19)}},
    {__LINE__, "whole: long data with tabs and controls (not line ends)", "event: e\ndata: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\t0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\x0b\x0c\x01" "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n\n", 0, BIG, 0,
     {EV("e", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\t0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\x0b\x0c\x01" "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "", 261)}},
    {__LINE__, "whole: long lines, cr lf and cr endings past the first block", "event: nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn\ndata: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n\r\nevent: f\rdata: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\r", 0, BIG, 0,
     {EV("nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "", 218), EV("f", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "", 315)}},
    {__LINE__, "a cr ending a long line that is not the event's last", "data: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\rdata: x\n\n", 0, BIG, 0,
     {EV("", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\nx", "", 256)}},
    /* the one-step path of session 6: field names as words, line ends by blocks */
    {__LINE__, "whole: cr only, named events", "event: a\rdata: 1\r\revent: b\rdata: 22\r\r", 0, BIG, 0,
     {EV("a", "1", "", 18), EV("b", "22", "", 37)}},
    {__LINE__, "whole: crlf everywhere (split between cr and lf at every cut)",
     "event: e\r\ndata: x\r\n\r\nevent: f\r\ndata:y\r\n\r\n", 0, BIG, 0,
     {EV("e", "x", "", 21), EV("f", "y", "", 41)}},
    {__LINE__, "whole: the last event has no blank line", "data: a\n\ndata: b\n", 0, BIG, 0,
     {EV("", "a", "", 9)}},
    {__LINE__, "whole: the last event has no line end", "data: a\n\nevent: e\ndata: b", 0, BIG, 0,
     {EV("", "a", "", 9)}},
    {__LINE__, "whole: the last event ends with one cr", "data: a\n\nevent: e\ndata: b\r", 0, BIG, 0,
     {EV("", "a", "", 9)}},
    {__LINE__, "whole: the last blank line is a cr that ends the input", "data: a\n\ndata: b\n\r", 0, BIG, 0,
     {EV("", "a", "", 9), EV("", "b", "", 18)}},
    {__LINE__, "whole: events of 7 and 8 bytes", "data:\n\ndata:x\n\ndata: \n\n", 0, BIG, 0,
     {EV("", "", "", 7), EV("", "x", "", 15), EV("", "", "", 23)}},
    {__LINE__, "whole: a name line and too few bytes after it", "event: e\ndata\n\n", 0, BIG, 0,
     {EV("e", "", "", 15)}},
    {__LINE__, "whole: empty name", "event:\ndata: a\n\nevent: \ndata: b\n\n", 0, BIG, 0,
     {EV("", "a", "", 16), EV("", "b", "", 33)}},
    {__LINE__, "whole: name of exactly the limit, space, crlf", "event: " X64 "\r\ndata: a\r\n\r\n", 0, BIG, 0,
     {EV(X64, "a", "", 84)}},
    {__LINE__, "whole: field names that differ in their last byte", "evenx: e\ndatx: a\n\ndata; b\n\n", 0, BIG, 0,
     {{0}}},
    {__LINE__, "whole: a field name split by a NUL", "data\0: a\n\ndata: b\n\n", 19, BIG, 0,
     {EV("", "b", "", 19)}},
    {__LINE__, "whole: several in one chunk, blank lines between", "event: e\ndata: 1\n\n\n\r\nevent: f\ndata: 2\r\n\r\n", 0, BIG, 0,
     {EV("e", "1", "", 18), EV("f", "2", "", 41)}},
};

static char *want_text(const sse_case *c) {
  sb b = {0};
  sb_puts(&b, "");
  for (const want_item *w = c->want; w < c->want + 8 && w->kind; w++) {
    if (w->kind == TS_SSE_DISPATCH)
      sb_event(&b, w->name, strlen(w->name), w->data, strlen(w->data), w->id, strlen(w->id), w->off);
    else if (w->kind == TS_SSE_ERROR)
      sb_error(&b, w->code, w->off);
    else
      sb_retry(&b, (int64_t)w->off);
  }
  return b.p;
}

START_TEST(test_table) {
  const sse_case *c = &cases[_i];
  size_t len = c->in_len ? c->in_len : strlen(c->in);
  char ctx[160];
  snprintf(ctx, sizeof ctx, "line %d (%s)", c->line, c->label);
  char *want = want_text(c);
  char *ref = ref_run(c->in, len, c->cap, c->max_line);
  ck_assert_msg(strcmp(ref, want) == 0, "%s, reference:\n--- got\n%s--- want\n%s", ctx, ref, want);
  free(ref);
  check_all_splits(ctx, c->in, len, c->cap, c->max_line, want);
  free(want);
}
END_TEST

/* ---- the corpus ------------------------------------------------------------------- */

typedef struct {
  const char *file;
  size_t events;
  const char *first_name, *last_name;
  const char *last_data; /* NULL: not checked */
  const char *contains;  /* some event's data contains this */
} corpus_case;

static const corpus_case corpus[] = {
    {"anthropic-fine-grained-max-tokens.sse", 10, "message_start", "message_stop",
     "{\"type\":\"message_stop\"}", "warm up"},
    {"anthropic-text-then-tool.sse", 17, "message_start", "message_stop", "{\"type\":\"message_stop\"}",
     "{\"type\": \"ping\"}"},
    {"gemini-sse-two-function-calls.sse", 3, "", "", NULL, "\"description\":\"Caf\\u00e9 counter unit drips"},
    {"ollama-openai-compat-whole-args.sse", 4, "", "", "[DONE]", "\\\\u0026 milk are on"},
    {"openai-chat-two-parallel-calls.sse", 18, "", "", "[DONE]", "\"obfuscation\""},
    {"openai-responses-one-call.sse", 16, "response.created", "response.completed", NULL,
     "response.function_call_arguments.delta"},
};

static int rec_contains(const recorder *r, size_t i, const char *needle) {
  const rec_item *it = &r->it[i];
  size_t n = strlen(needle);
  for (size_t k = 0; k + n <= it->data_len; k++)
    if (memcmp(r->arena + it->data + k, needle, n) == 0) return 1;
  return 0;
}

static int rec_eq(const recorder *r, size_t off, size_t len, const char *s) {
  return len == strlen(s) && memcmp(r->arena + off, s, len) == 0;
}

START_TEST(test_corpus) {
  const corpus_case *c = &corpus[_i];
  char rel[256];
  snprintf(rel, sizeof rel, "tests/corpus/%s", c->file);
  size_t len;
  char *in = ts_test_read_file(ts_test_path(rel), &len);

  sched whole = {len, 0, 0};
  size_t views = 0;
  char *want = feed_run(in, len, 1u << 16, 0, whole, &views);
  /* every corpus event has one data line: fed whole, each is a zero-copy view */
  ck_assert_uint_eq(rec.n, c->events);
  ck_assert_uint_eq(views, c->events);
  for (size_t i = 0; i < rec.n; i++) {
    ck_assert_int_eq(rec.it[i].kind, TS_SSE_DISPATCH);
    ck_assert_uint_eq(rec.it[i].id_len, 0);
    if (i > 0) ck_assert_uint_gt(rec.it[i].off, rec.it[i - 1].off);
  }
  const rec_item *first = &rec.it[0], *last = &rec.it[rec.n - 1];
  ck_assert_msg(rec_eq(&rec, first->name, first->name_len, c->first_name), "%s: first name", c->file);
  ck_assert_msg(rec_eq(&rec, last->name, last->name_len, c->last_name), "%s: last name", c->file);
  if (c->last_data) ck_assert_msg(rec_eq(&rec, last->data, last->data_len, c->last_data), "%s: last data", c->file);
  ck_assert_uint_eq(last->off, len); /* every file ends with the last event's blank line */
  int found = 0;
  for (size_t i = 0; i < rec.n; i++) found |= rec_contains(&rec, i, c->contains);
  ck_assert_msg(found, "%s: no event contains %s", c->file, c->contains);

  char *ref = ref_run(in, len, 1u << 16, 0);
  ck_assert_msg(strcmp(ref, want) == 0, "%s: reference differs", c->file);
  free(ref);
  check_all_splits(c->file, in, len, 1u << 16, 0, want);
  free(want);
  free(in);
}
END_TEST

/* The gemini capture uses CRLF throughout: spot-check its offsets by hand. */
START_TEST(test_corpus_crlf_offsets) {
  size_t len;
  char *in = ts_test_read_file(ts_test_path("tests/corpus/gemini-sse-two-function-calls.sse"), &len);
  sched whole = {len, 0, 0};
  char *got = feed_run(in, len, 1u << 16, 0, whole, NULL);
  free(got);
  ck_assert_uint_eq(rec.n, 3);
  /* the first event ends right after the first "\r\n\r\n" */
  const char *sep = strstr(in, "\r\n\r\n");
  ck_assert_ptr_nonnull(sep);
  ck_assert_uint_eq(rec.it[0].off, (uint64_t)(sep - in) + 4);
  ck_assert_uint_eq(rec.it[0].data_len, (size_t)(sep - in) - 6); /* minus "data: " */
  free(in);
}
END_TEST

/* ---- no allocation while feeding -------------------------------------------------- */

static int count_cb(void *user, const ts_sse_event *ev) {
  size_t *n = user;
  n[0]++;
  n[1] += ev->data_len;
  return 0;
}

START_TEST(test_no_alloc) {
  static const char *files[] = {
      "anthropic-fine-grained-max-tokens.sse", "anthropic-text-then-tool.sse",
      "gemini-sse-two-function-calls.sse",     "ollama-openai-compat-whole-args.sse",
      "openai-chat-two-parallel-calls.sse",    "openai-responses-one-call.sse",
  };
  static char dbuf[1u << 16];
  static char work[1u << 16];
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    char rel[256];
    snprintf(rel, sizeof rel, "tests/corpus/%s", files[f]);
    size_t len;
    char *in = ts_test_read_file(ts_test_path(rel), &len);
    ck_assert_uint_le(len, sizeof work);
    /* No check assertion inside the counted window: check itself allocates there. */
    size_t counts[32][2];
    int bad = 0;
    memset(counts, 0, sizeof counts);
    uint64_t before = ts_test_alloc_count();
    for (size_t chunk = 1; chunk <= 32; chunk++) {
      size_t step = chunk == 32 ? len : chunk;
      ts_sse s;
      memcpy(work, in, len);
      bad |= ts_sse_init(&s, dbuf, sizeof dbuf, 0, count_cb, counts[chunk - 1]) != TS_E_OK;
      for (size_t at = 0; at < len; at += step)
        bad |= ts_sse_feed(&s, work + at, len - at < step ? len - at : step) != TS_E_OK;
      bad |= ts_sse_finish(&s) != TS_E_OK;
    }
    uint64_t after = ts_test_alloc_count();
    ck_assert_uint_eq(after, before);
    ck_assert_int_eq(bad, 0);
    size_t *first = counts[0];
    for (size_t k = 1; k < 32; k++) {
      ck_assert_uint_eq(counts[k][0], first[0]);
      ck_assert_uint_eq(counts[k][1], first[1]);
    }
    ck_assert_uint_gt(first[0], 0);
    free(in);
  }
}
END_TEST

/* ---- zero copy -------------------------------------------------------------------- */

START_TEST(test_zero_copy) {
  const char *in = "data: abc\n\nevent: e\ndata: xyz\n\ndata: a\ndata: b\n\n";
  size_t len = strlen(in), views;
  sched whole = {len, 0, 0};
  free(feed_run(in, len, 64, 0, whole, &views));
  ck_assert_uint_eq(rec.n, 3);
  ck_assert_uint_eq(views, 2); /* the joined one is copied */
  ck_assert_int_eq(rec.it[0].view, 1);
  ck_assert_int_eq(rec.it[1].view, 1);
  ck_assert_int_eq(rec.it[2].view, 0);
  sched bytes = {1, 0, 0};
  free(feed_run(in, len, 64, 0, bytes, &views));
  ck_assert_uint_eq(rec.n, 3);
  ck_assert_uint_eq(views, 0);
  /* the value may start in a later chunk than its field name and still be a view */
  sched cut = {0, 6, 0};
  free(feed_run(in, len, 64, 0, cut, &views));
  ck_assert_int_eq(rec.it[0].view, 1);
}
END_TEST

/* A whole event in one chunk is read in one step (whole_event): its name, too, is a view
 * into the chunk, and so is the data of each event of a chunk holding several. Split
 * anywhere inside, it goes through the line machine: the name is a copy. The items are
 * the same either way (test_table, every row at every split). */
START_TEST(test_whole_event_views) {
  const char *in = "event: content_block_delta\ndata: {\"a\":1}\n\nevent: e\r\ndata: x\r\n\r\n"
                   "event: f\ndata: 1\ndata: 2\n\n";
  size_t len = strlen(in), views;
  sched whole = {len, 0, 0};
  free(feed_run(in, len, 64, 0, whole, &views));
  ck_assert_uint_eq(rec.n, 3);
  ck_assert_int_eq(rec.it[0].name_view, 1);
  ck_assert_int_eq(rec.it[0].view, 1);
  ck_assert_int_eq(rec.it[1].name_view, 1);
  ck_assert_int_eq(rec.it[1].view, 1);
  ck_assert_int_eq(rec.it[2].name_view, 0); /* two data lines: the machine's */
  ck_assert_int_eq(rec.it[2].view, 0);
  for (size_t at = 1; at < 42; at++) { /* the first event (42 bytes) cut at each byte */
    sched cut = {0, at, 0};
    free(feed_run(in, len, 64, 0, cut, &views));
    ck_assert_uint_eq(rec.n, 3);
    ck_assert_int_eq(rec.it[0].name_view, 0);
    ck_assert_int_eq(rec.it[1].name_view, 1); /* the second lies whole in the second chunk */
  }
}
END_TEST

/* Every name length the one-step path takes (1..64 bytes: the `event:` line's end found
 * by the short scans, eol_name_avx2 and eol_short, in each of their blocks), ended by LF
 * and by CRLF, with a data line of 1 and of 100 bytes, read whole and after a first chunk,
 * under both scans: the event is read in one step (its name a view into the chunk) and its
 * item is the reference's. A name's end found wrong leaves the event to the machine, which
 * gives the same item: only the view says which way it went. */
START_TEST(test_whole_event_names) {
  char in[256];
  for (size_t nl = 1; nl <= TS_SSE_MAX_NAME; nl++)
    for (size_t dl = 1; dl <= 100; dl += 99)
      for (int crlf = 0; crlf < 2; crlf++) {
        size_t len = (size_t)snprintf(in, sizeof in, ":\nevent: ");
        for (size_t k = 0; k < nl; k++) in[len++] = (char)('a' + (k + nl) % 26);
        if (crlf) in[len++] = '\r';
        in[len++] = '\n';
        len += (size_t)snprintf(in + len, sizeof in - len, "data: ");
        for (size_t k = 0; k < dl; k++) in[len++] = (char)('A' + k % 26);
        in[len++] = '\n';
        in[len++] = '\n';
        char *want = ref_run(in, len, BIG, 0);
        for (use_simd = 1; use_simd >= 0; use_simd--)
          for (int after_first = 0; after_first < 2; after_first++) {
            sched sc = {after_first ? 0 : len, 2, 0};
            char *got = feed_run(in, len, BIG, 0, sc, NULL);
            ck_assert_msg(strcmp(got, want) == 0, "name %zu, data %zu, crlf %d, simd %d, split %d:\n%s\n%s", nl, dl,
                          crlf, use_simd, after_first, got, want);
            ck_assert_uint_eq(rec.n, 1);
            ck_assert_msg(rec.it[0].name_view, "name %zu, data %zu, crlf %d, simd %d, split %d: not one step", nl,
                          dl, crlf, use_simd, after_first);
            free(got);
          }
        use_simd = 1;
        free(want);
      }
}
END_TEST

/* The line-end scans at every position: a data line of every length 0..300 (so its end
 * falls at each byte of a 16-, 32-, 64- and 128-byte block and of the block that ends the
 * chunk), after nothing, after an `event:` line of 0..70 bytes of name, or after another
 * event (whose line ends lie in the last block the scan reads, before the line), with
 * each line ending and with or without a blank line; some with a tab or other byte <= CR
 * (not a line end) inside. Fed whole (the one-step path) and in two reads cut in the
 * data line, under both scans; every run must give the reference's items. */
START_TEST(test_line_end_positions) {
  static const char *const ends[] = {"\n\n", "\r\r", "\r\n\r\n", "\n", "\r\n\r", "\n\r\n"};
  static const char falsehits[] = {'\t', '\0', '\x0b', '\x0c', '\x01'};
  char in[512];
  for (size_t dl = 0; dl <= 300; dl++) {
    for (size_t pre = 0; pre < 4; pre++) {
      size_t len = 0;
      if (pre == 1) len = (size_t)snprintf(in, sizeof in, "event: e\n");
      if (pre == 2) len = (size_t)snprintf(in, sizeof in, "data: p\r\n\r\n");
      if (pre == 3) { /* a name of 0..70 bytes: the limit is 64 */
        size_t nl = dl % 71;
        len = (size_t)snprintf(in, sizeof in, "event: ");
        memset(in + len, 'n', nl);
        len += nl;
        in[len++] = dl & 1 ? '\r' : '\n';
      }
      memcpy(in + len, "data: ", 6);
      len += 6;
      for (size_t k = 0; k < dl; k++) in[len + k] = (char)('a' + k % 26);
      if (dl && dl % 3 == 0) in[len + (dl * 7) % dl] = falsehits[dl % sizeof falsehits];
      len += dl;
      const char *e = ends[(dl + pre) % (sizeof ends / sizeof ends[0])];
      memcpy(in + len, e, strlen(e));
      len += strlen(e);
      char *want = ref_run(in, len, BIG, 0);
      for (use_simd = 1; use_simd >= 0; use_simd--) {
        sched whole = {len, 0, 0};
        sched cut = {0, len - strlen(e) - dl / 2, 0};
        sched *all[] = {&whole, &cut};
        for (size_t k = 0; k < 2; k++) {
          char *got = feed_run(in, len, BIG, 0, *all[k], NULL);
          if (strcmp(got, want) != 0) {
            sb q = {0};
            sb_quoted(&q, in, len);
            ck_abort_msg("data %zu, prefix %zu, simd %d, run %zu: %s:\n--- got\n%s--- want\n%s", dl, pre,
                         use_simd, k, q.p, got, want);
          }
          free(got);
        }
      }
      use_simd = 1;
      free(want);
    }
  }
}
END_TEST

/* An event that is the rest of the chunk, read after a first chunk (":\n", so that the
 * framer is between events and the whole-event path knows the chunk ends with the
 * event: whole_event's `last`, the data line's end taken from the chunk's end when no
 * byte of the line is <= CR): a data line of every length 0..300, after nothing or an
 * `event:` line, with every ending (the two LFs the short way asks for, and what only
 * looks like them: one LF, CRLFs, a third LF, a second event after the blank line) and
 * with a byte <= CR at every position of the line (a line end, which the short way must
 * see, or another, which it may take for one); under both scans, against the reference. */
START_TEST(test_event_ends_chunk) {
  static const char *const ends[] = {"\n\n", "\n", "\r\n\r\n", "\n\r\n", "\n\n\n", "\n\ndata: q\n\n", "\r\n\n"};
  static const char low[] = {'\t', '\0', '\x0b', '\x0c', '\x01', '\x0e' /* just above CR */, '\n', '\r'};
  char in[512];
  for (size_t dl = 0; dl <= 300; dl++) {
    for (size_t e = 0; e < sizeof ends / sizeof ends[0]; e++) {
      /* a byte <= CR at every position (-1: none) for the two endings that end the line
       * the short way or nearly; the others without */
      long last_at = e < 2 ? (long)dl - 1 : -1;
      for (long at = -1; at <= last_at; at++) {
        size_t len = (size_t)snprintf(in, sizeof in, ":\n%s", (dl + (size_t)at) & 1 ? "event: e\n" : "");
        size_t head = 2; /* the first chunk: the comment line */
        memcpy(in + len, "data: ", 6);
        len += 6;
        for (size_t k = 0; k < dl; k++) in[len + k] = (char)('a' + k % 26);
        if (at >= 0) in[len + (size_t)at] = low[(size_t)at % sizeof low];
        len += dl;
        memcpy(in + len, ends[e], strlen(ends[e]));
        len += strlen(ends[e]);
        char *want = ref_run(in, len, BIG, 0);
        for (use_simd = 1; use_simd >= 0; use_simd--) {
          sched cut = {0, head, 0};
          char *got = feed_run(in, len, BIG, 0, cut, NULL);
          if (strcmp(got, want) != 0) {
            sb q = {0};
            sb_quoted(&q, in, len);
            ck_abort_msg("data %zu, ending %zu, byte at %ld, simd %d: %s:\n--- got\n%s--- want\n%s", dl, e, at,
                         use_simd, q.p, got, want);
          }
          free(got);
        }
        use_simd = 1;
        free(want);
      }
    }
  }
}
END_TEST

/* ts__sse_set_simd: AVX2 is used where the CPU has it, and only then; off is off. */
START_TEST(test_simd_choice) {
  char dbuf[8];
  ts_sse s;
  ck_assert_int_eq(ts_sse_init(&s, dbuf, sizeof dbuf, 0, count_cb, NULL), TS_E_OK);
#if defined(__x86_64__) && defined(__GNUC__)
  int has = __builtin_cpu_supports("avx2") != 0;
#else
  int has = 0;
#endif
  ck_assert_int_eq(ts__sse_set_simd(&s, 1), has);
  ck_assert_int_eq(ts__sse_set_simd(&s, 0), 0);
  ck_assert_int_eq(ts__sse_set_simd(&s, 1), has);
}
END_TEST

/* The callback may rewrite the payload in place, also when it is a view into the chunk;
 * the framer never reads those bytes again. */
static int shrink_cb(void *user, const ts_sse_event *ev) {
  recorder *r = user;
  if (ev->data_len >= 2) { /* like decoding "\\n" to one byte: shift left */
    memmove(ev->data, ev->data + 1, ev->data_len - 1);
    ev->data[ev->data_len - 1] = '\n';
  }
  r->n++;
  return 0;
}

START_TEST(test_in_place) {
  char in[] = "data: ab\n\ndata: cd\n\n";
  char dbuf[8];
  ts_sse s;
  rec_reset(&rec);
  ck_assert_int_eq(ts_sse_init(&s, dbuf, sizeof dbuf, 0, shrink_cb, &rec), TS_E_OK);
  ck_assert_int_eq(ts_sse_feed(&s, in, strlen(in)), TS_E_OK);
  ck_assert_int_eq(ts_sse_finish(&s), TS_E_OK);
  ck_assert_uint_eq(rec.n, 2);
  ck_assert_str_eq(in, "data: b\n\n\ndata: d\n\n\n"); /* only the data bytes changed */
}
END_TEST

/* ---- API contract ------------------------------------------------------------------ */

START_TEST(test_api) {
  char dbuf[16];
  ts_sse s;
  ck_assert_int_eq(ts_sse_init(NULL, dbuf, 16, 0, rec_cb, &rec), TS_E_INVAL);
  ck_assert_int_eq(ts_sse_init(&s, NULL, 16, 0, rec_cb, &rec), TS_E_INVAL);
  ck_assert_int_eq(ts_sse_init(&s, dbuf, 16, 0, NULL, &rec), TS_E_INVAL);

  rec_reset(&rec);
  ck_assert_int_eq(ts_sse_init(&s, dbuf, sizeof dbuf, 0, rec_cb, &rec), TS_E_OK);
  ck_assert_int_eq(ts_sse_retry(&s), -1);
  ck_assert_int_eq(ts_sse_feed(&s, NULL, 0), TS_E_OK);
  ck_assert_int_eq(ts_sse_feed(&s, NULL, 3), TS_E_INVAL);
  char a[] = "\xEF\xBB\xBF" "data: a\n\ndata: b";
  ck_assert_int_eq(ts_sse_feed(&s, a, strlen(a)), TS_E_OK);
  ck_assert_uint_eq(ts_sse_offset(&s), strlen(a));
  ck_assert_int_eq(ts_sse_finish(&s), TS_E_OK);
  ck_assert_uint_eq(rec.n, 1);
  ck_assert_int_eq(ts_sse_finish(&s), TS_E_OK);
  ck_assert_int_eq(ts_sse_feed(&s, a, 1), TS_E_SSE_FINISHED);
  ck_assert_int_eq(ts_sse_feed(&s, NULL, 0), TS_E_SSE_FINISHED);
  ck_assert_uint_eq(rec.n, 1);
  ck_assert_int_eq(ts_sse_error(&s), 0);
  ck_assert_int_eq(ts_sse_last_error(&s, NULL), 0);

  /* limit errors are items, counted, and feed goes on */
  rec_reset(&rec);
  ck_assert_int_eq(ts_sse_init(&s, dbuf, 2, 0, rec_cb, &rec), TS_E_OK);
  char b[] = "data: 123\n\ndata: 12\n\nevent: " X64 "x\n\n";
  ck_assert_int_eq(ts_sse_feed(&s, b, strlen(b)), TS_E_OK);
  ck_assert_int_eq(ts_sse_finish(&s), TS_E_OK);
  ck_assert_uint_eq(ts_sse_error_count(&s), 2);
  uint64_t at = 0;
  ck_assert_int_eq(ts_sse_last_error(&s, &at), TS_E_SSE_NAME_TOO_LONG);
  ck_assert_uint_eq(at, 21 + 7 + 64);
  ck_assert_int_eq(ts_sse_error(&s), 0);

  ck_assert_str_eq(ts_err_name(TS_E_SSE_NAME_TOO_LONG), "sse_name_too_long");
  ck_assert_str_eq(ts_err_name(TS_E_SSE_ID_TOO_LONG), "sse_id_too_long");
}
END_TEST

START_TEST(test_abort) {
  char dbuf[16];
  ts_sse s;
  /* at a dispatch */
  rec_reset(&rec);
  rec.abort_at = 1;
  ck_assert_int_eq(ts_sse_init(&s, dbuf, sizeof dbuf, 0, rec_cb, &rec), TS_E_OK);
  char a[] = "data: a\n\ndata: b\n\n";
  ck_assert_int_eq(ts_sse_feed(&s, a, strlen(a)), TS_E_ABORTED);
  ck_assert_uint_eq(rec.n, 1);
  ck_assert_int_eq(ts_sse_feed(&s, a, strlen(a)), TS_E_ABORTED);
  ck_assert_int_eq(ts_sse_finish(&s), TS_E_ABORTED);
  ck_assert_uint_eq(rec.n, 1);
  uint64_t at = 0;
  ck_assert_int_eq(ts_sse_error(&s), TS_E_ABORTED);
  ck_assert_int_eq(ts_sse_last_error(&s, &at), TS_E_ABORTED);
  ck_assert_uint_eq(at, 9);

  /* at an error item */
  rec_reset(&rec);
  rec.abort_at = 1;
  ck_assert_int_eq(ts_sse_init(&s, dbuf, 0, 0, rec_cb, &rec), TS_E_OK);
  char b[] = "data: a\n\ndata:\n\n";
  ck_assert_int_eq(ts_sse_feed(&s, b, strlen(b)), TS_E_ABORTED);
  ck_assert_uint_eq(rec.n, 1);
  ck_assert_int_eq(rec.it[0].kind, TS_SSE_ERROR);
  ck_assert_int_eq(ts_sse_last_error(&s, &at), TS_E_ABORTED);
  ck_assert_uint_eq(at, 6);

  /* at the dispatch finish makes (blank line ended by a CR, the last byte) */
  rec_reset(&rec);
  rec.abort_at = 1;
  ck_assert_int_eq(ts_sse_init(&s, dbuf, sizeof dbuf, 0, rec_cb, &rec), TS_E_OK);
  char c[] = "data: a\n\r";
  ck_assert_int_eq(ts_sse_feed(&s, c, strlen(c)), TS_E_OK);
  ck_assert_uint_eq(rec.n, 0); /* waiting: an LF may follow */
  ck_assert_int_eq(ts_sse_finish(&s), TS_E_ABORTED);
  ck_assert_uint_eq(rec.n, 1);
  ck_assert_uint_eq(rec.it[0].off, 9);

  /* while replaying a BOM prefix */
  rec_reset(&rec);
  rec.abort_at = 1;
  ck_assert_int_eq(ts_sse_init(&s, dbuf, sizeof dbuf, 1, rec_cb, &rec), TS_E_OK);
  char d1[] = "\xEF\xBB";
  char d2[] = "x\n";
  ck_assert_int_eq(ts_sse_feed(&s, d1, 2), TS_E_OK);
  ck_assert_uint_eq(ts_sse_offset(&s), 2);
  ck_assert_int_eq(ts_sse_feed(&s, d2, 2), TS_E_ABORTED);
  ck_assert_uint_eq(rec.n, 1);
  ck_assert_uint_eq(rec.it[0].off, 1);
  ck_assert_uint_eq(ts_sse_offset(&s), 4);
}
END_TEST

/* The CR of a dispatching blank line is the last byte of a chunk: the event waits for
 * the next byte, and its end offset counts the LF. */
START_TEST(test_cr_lf_split) {
  char dbuf[16];
  ts_sse s;
  rec_reset(&rec);
  ck_assert_int_eq(ts_sse_init(&s, dbuf, sizeof dbuf, 0, rec_cb, &rec), TS_E_OK);
  char a[] = "data: a\r\n\r";
  char b[] = "\ndata: b\r\n\r";
  char c[] = "data: c\r\n\r\n";
  ck_assert_int_eq(ts_sse_feed(&s, a, strlen(a)), TS_E_OK);
  ck_assert_uint_eq(rec.n, 0);
  ck_assert_int_eq(ts_sse_feed(&s, b, strlen(b)), TS_E_OK);
  ck_assert_uint_eq(rec.n, 1);
  ck_assert_uint_eq(rec.it[0].off, 11); /* after the LF that came in the second chunk */
  ck_assert_int_eq(ts_sse_feed(&s, c, strlen(c)), TS_E_OK);
  ck_assert_uint_eq(rec.n, 3);
  ck_assert_uint_eq(rec.it[1].off, 21); /* "data: b\r\n\r" then "d": no LF, end after the CR */
  ck_assert_uint_eq(rec.it[2].off, 32);
  ck_assert_int_eq(ts_sse_finish(&s), TS_E_OK);
  ck_assert_uint_eq(rec.n, 3);
}
END_TEST

/* ---- differential: random streams against the reference ---------------------------- */

static const char *const frags[] = {
    "data", "data:", "data: ", "data: x", "data:{\"a\":1}", ":", ": ping", " ", "  ", "event", "event:",
    "event: e", "event: " X10 X10 X10, "id", "id:", "id: 42", "id: " X64 X64, "retry", "retry:", "retry: 250",
    "retry: 9x", "foo", "foo: bar", "x", "abc", "\xC3\xA9", X10, X10 X10, "\r", "\n", "\r\n", "\n\n", "\r\r",
    "\r\n\r\n", "\n\r", "\xEF", "\xBB", "\xBF", "\xEF\xBB\xBF", "\t",
};

START_TEST(test_random_vs_reference) {
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  char in[2048];
  for (int iter = 0; iter < 3000; iter++) {
    size_t len = 0;
    if (xorshift(&seed) % 4 == 0) {
      memcpy(in, "\xEF\xBB\xBF", 3);
      len = 3 - (size_t)(xorshift(&seed) % 3 == 0 ? xorshift(&seed) % 3 : 0);
    }
    size_t nfr = (size_t)(xorshift(&seed) % 40);
    for (size_t k = 0; k < nfr; k++) {
      const char *f = frags[xorshift(&seed) % (sizeof frags / sizeof frags[0])];
      size_t fl = strlen(f);
      if (len + fl + 1 > sizeof in) break;
      memcpy(in + len, f, fl);
      len += fl;
      if (xorshift(&seed) % 64 == 0) in[len++] = '\0';
    }
    size_t cap = (size_t)(xorshift(&seed) % 24);
    size_t max_line = xorshift(&seed) % 3 == 0 ? 0 : (size_t)(xorshift(&seed) % 100) + 1;
    char ctx[64];
    snprintf(ctx, sizeof ctx, "random input %d", iter);
    char *want = ref_run(in, len, cap, max_line);
    sched whole = {len ? len : 1, 0, 0};
    sched bytes = {1, 0, 0};
    sched mixed = {0, 0, xorshift(&seed) | 1};
    sched sevens = {7, 0, 0};
    sched *all[] = {&whole, &bytes, &mixed, &sevens};
    for (size_t k = 0; k < 8; k++) {
      use_simd = k < 4 || k >= 6; /* the baseline scan: whole and in random reads (see check_all_splits) */
      use_grow = k >= 6;          /* a buffer grown on demand: byte by byte and random reads */
      char *got = feed_run(in, len, cap, max_line, *all[k < 4 ? k : k < 6 ? (k - 4) * 2 : (k - 6) + 1], NULL);
      if (strcmp(got, want) != 0) {
        sb q = {0};
        sb_quoted(&q, in, len);
        ck_abort_msg("%s (schedule %zu, cap %zu, max_line %zu) %s:\n--- got\n%s--- want (reference)\n%s", ctx,
                     k, cap, max_line, q.p, got, want);
      }
      free(got);
    }
    use_simd = 1;
    use_grow = 0;
    free(want);
  }
}
END_TEST

/* ---- growing the buffer on demand ---------------------------------------------------- */

/* A framer with no buffer at the start and a doubling hook (test_grow, not exact). */
static void grow_feed(const char *in, size_t len, size_t step, size_t cap, grow_ctl *g) {
  char none = 0;
  ts_sse s;
  ck_assert_int_eq(ts_sse_init(&s, &none, cap, 0, rec_cb, &rec), TS_E_OK);
  ck_assert_int_eq(ts_sse_set_grow(&s, 0, test_grow, g), TS_E_OK);
  rec_reset(&rec);
  for (size_t at = 0; at < len; at += step) {
    size_t n = len - at < step ? len - at : step;
    char *c = malloc(n);
    memcpy(c, in + at, n);
    ck_assert_int_eq(ts_sse_feed(&s, c, n), TS_E_OK);
    free(c);
  }
  ck_assert_int_eq(ts_sse_finish(&s), TS_E_OK);
  ck_assert_int_eq(g->bad, 0);
}

/* The buffer is only written for an event cut between feeds or of several data lines:
 * a provider's stream read whole or an event per read never grows it; read byte by byte
 * it grows by doubling to the largest event's data, in a few steps, never past it twice
 * over. The limit stays cap: a larger event is the usual too-large error. */
START_TEST(test_grow_on_demand) {
  size_t len;
  char *in = ts_test_read_file(ts_test_path("tests/corpus/openai-chat-two-parallel-calls.sse"), &len);
  grow_ctl whole = {0};
  grow_feed(in, len, len, 1u << 16, &whole);
  ck_assert_uint_eq(rec.n, 18);
  ck_assert_uint_eq(whole.calls, 0);
  ck_assert_ptr_null(whole.buf);
  size_t largest = 0;
  for (size_t i = 0; i < rec.n; i++)
    if (rec.it[i].data_len > largest) largest = rec.it[i].data_len;
  grow_ctl bytes = {0};
  grow_feed(in, len, 1, 1u << 16, &bytes);
  ck_assert_uint_eq(rec.n, 18);
  ck_assert_uint_ge(bytes.size, largest);
  ck_assert_uint_lt(bytes.size, 2 * largest);
  ck_assert_uint_le(bytes.calls, 8); /* 16, 32, ... doubling */
  free(bytes.buf);
  free(in);

  /* the joining "\n" of a second data line is written to the buffer too */
  static const char two[] = "data: a\ndata: b\n\n";
  grow_ctl j = {0};
  grow_feed(two, sizeof two - 1, sizeof two - 1, 64, &j);
  ck_assert_uint_eq(rec.n, 1);
  ck_assert(rec_eq(&rec, rec.it[0].data, rec.it[0].data_len, "a\nb"));
  ck_assert_uint_eq(j.calls, 1);
  free(j.buf);

  /* over cap: too large, as with a buffer of cap bytes, and the hook is not asked past it */
  static const char big[] = "data: 0123456789abcdefghij\n\ndata: ok\n\n";
  grow_ctl b = {0};
  grow_feed(big, sizeof big - 1, 1, 16, &b);
  ck_assert_uint_eq(rec.n, 2);
  ck_assert_int_eq(rec.it[0].kind, TS_SSE_ERROR);
  ck_assert_int_eq(rec.it[0].code, TS_E_SSE_EVENT_TOO_LARGE);
  ck_assert_uint_eq(rec.it[0].off, 6 + 16);
  ck_assert_uint_le(b.size, 16);
  ck_assert(rec_eq(&rec, rec.it[1].data, rec.it[1].data_len, "ok"));
  free(b.buf);

  /* set_grow's rules */
  ts_sse s;
  char one[4];
  ck_assert_int_eq(ts_sse_init(&s, one, 4, 0, rec_cb, &rec), TS_E_OK);
  ck_assert_int_eq(ts_sse_set_grow(&s, 0, NULL, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_sse_set_grow(&s, 5, test_grow, &b), TS_E_INVAL);
  ck_assert_int_eq(ts_sse_feed(&s, one, 0), TS_E_OK);
  char x[] = "data: 1\n\n";
  ck_assert_int_eq(ts_sse_feed(&s, x, 3), TS_E_OK);
  ck_assert_int_eq(ts_sse_set_grow(&s, 4, test_grow, &b), TS_E_INVAL); /* already fed */
}
END_TEST

/* A refused growth: the event that needed it is one ERROR item TS_E_NOMEM, at a byte of
 * that event (which one depends on the reads: a whole event needs no buffer at all), and
 * the events before and after it arrive as they would have, with their offsets: for
 * every read size 1..31 and every cut in two, for the ways an event's bytes reach the
 * buffer (a data line cut by a read, several data lines, a line ending or a CR blank line
 * as a read's last byte). */
typedef struct {
  const char *label, *in, *big_data;
  uint64_t big_start, big_end; /* the big event's bytes */
  int whole_ok;                 /* read whole, the big event arrives (a view) */
} refuse_case;

static void refuse_check(const refuse_case *c, size_t len, const char *how) {
  ck_assert_msg(rec.n == 3, "%s %s: %zu items", c->label, how, rec.n);
  ck_assert_msg(rec.it[0].kind == TS_SSE_DISPATCH && rec_eq(&rec, rec.it[0].data, rec.it[0].data_len, "a") &&
                    rec.it[0].off == 9,
                "%s %s: the event before", c->label, how);
  ck_assert_msg(rec.it[2].kind == TS_SSE_DISPATCH && rec_eq(&rec, rec.it[2].data, rec.it[2].data_len, "c") &&
                    rec.it[2].off == len,
                "%s %s: the event after", c->label, how);
  const rec_item *b = &rec.it[1];
  if (b->kind == TS_SSE_DISPATCH)
    ck_assert_msg(rec_eq(&rec, b->data, b->data_len, c->big_data) && b->off == c->big_end, "%s %s: big event",
                  c->label, how);
  else
    ck_assert_msg(b->code == TS_E_NOMEM && b->off >= c->big_start && b->off < c->big_end,
                  "%s %s: code %d at %llu", c->label, how, b->code, (unsigned long long)b->off);
}

static void refuse_run(void *user, ts_split *feed, sb *out) {
  (void)out;
  grow_ctl g = {.max = 8};
  char none = 0;
  ts_sse s;
  ck_assert_int_eq(ts_sse_init(&s, &none, 1024, 0, rec_cb, &rec), TS_E_OK);
  ck_assert_int_eq(ts_sse_set_grow(&s, 0, test_grow, &g), TS_E_OK);
  ts__sse_set_simd(&s, use_simd);
  rec_reset(&rec);
  char *c;
  size_t n;
  while (ts_split_next(feed, &c, &n)) ck_assert_int_eq(ts_sse_feed(&s, c, n), TS_E_OK);
  ck_assert_int_eq(ts_sse_finish(&s), TS_E_OK);
  ck_assert_int_eq(g.bad, 0);
  unsigned *refused = user;
  *refused += g.refused;
  free(g.buf);
}

START_TEST(test_grow_refused) {
  static const refuse_case cases_[] = {
      {"one data line", "data: a\n\ndata: 0123456789abcdef\n\ndata: c\n\n", "0123456789abcdef", 9, 33, 1},
      {"two data lines", "data: a\n\ndata: 01234\ndata: 56789abc\n\ndata: c\n\n", "01234\n56789abc", 9, 37, 0},
      {"CR endings", "data: a\n\ndata: 0123456789abcdef\r\rdata: c\n\n", "0123456789abcdef", 9, 33, 1},
      {"CR LF endings", "data: a\n\nevent: e\r\ndata: 0123456789abcdef\r\n\r\ndata: c\n\n", "0123456789abcdef",
       9, 45, 1},
  };
  for (size_t k = 0; k < sizeof cases_ / sizeof cases_[0]; k++) {
    const refuse_case *c = &cases_[k];
    size_t len = strlen(c->in);
    unsigned refused = 0;
    sb out = {0};
    char how[32];
    for (size_t size = 0; size <= 31; size++) {
      ts_split_run_once(c->in, len, size, refuse_run, &refused, &out);
      snprintf(how, sizeof how, "reads of %zu", size);
      refuse_check(c, len, how);
    }
    ts_split_run_once(c->in, len, 0, refuse_run, &refused, &out);
    ck_assert_msg((rec.it[1].kind == TS_SSE_DISPATCH) == c->whole_ok, "%s whole: %s", c->label,
                  c->whole_ok ? "a whole event needs no buffer" : "two data lines are joined in the buffer");
    for (size_t cut = 0; cut <= len; cut++) {
      ts_split_run_cut(c->in, len, cut, refuse_run, &refused, &out);
      snprintf(how, sizeof how, "cut at %zu", cut);
      refuse_check(c, len, how);
    }
    ck_assert_msg(refused > 0, "%s: never refused", c->label);
    sb_free(&out);
  }
}
END_TEST

/* Long lines, many chunks: the line-end search is reused, so this is linear. */
/* ---- keeping a head only (ts_sse_set_keep) ---------------------------------------- */

/* By name: "skip" keeps nothing, "head" 5 bytes, "big" 1 MiB (more than cap); any other
 * name everything. The names asked are recorded. */
static size_t keep_by_name(void *user, const char *name, size_t len) {
  sb *asked = user;
  sb_add(asked, name, len);
  sb_putc(asked, ' ');
  if (len == 4 && !memcmp(name, "skip", 4)) return 0;
  if (len == 4 && !memcmp(name, "head", 4)) return 5;
  if (len == 3 && !memcmp(name, "big", 3)) return (size_t)1 << 20;
  return TS_SSE_KEEP_ALL;
}

/* The framer's data buffer in keep_feed: an item whose data is empty points at it, as
 * the machine's dispatch does, on the one-step path too (a head of 0 bytes kept). */
static const char *keep_dbuf;

static int keep_cb(void *user, const ts_sse_event *ev) {
  sb *out = user;
  if (ev->kind == TS_SSE_DISPATCH && ev->data_len == 0) ck_assert_ptr_eq(ev->data, keep_dbuf);
  if (ev->kind == TS_SSE_ERROR)
    sb_printf(out, "error %d @%llu\n", ev->code, (unsigned long long)ev->err_offset);
  else
    sb_printf(out, "event '%.*s' '%.*s'%s @%llu\n", (int)ev->name_len, ev->name, (int)ev->data_len,
              ev->data, ev->cut ? " cut" : "", (unsigned long long)ev->end_offset);
  return 0;
}

/* One keep run: cap 16, line limit 24, keep_by_name asked; cb gets cb_user (s is the
 * framer, for a callback that changes it); the names asked go after the items. */
static void keep_feed(ts_sse *s, ts_split *feed, sb *out, ts_sse_cb cb, void *cb_user) {
  char dbuf[16];
  sb asked = {0};
  keep_dbuf = dbuf;
  ck_assert_int_eq(ts_sse_init(s, dbuf, sizeof dbuf, 24, cb, cb_user), TS_E_OK);
  ts__sse_set_simd(s, use_simd);
  ts_sse_set_keep(s, keep_by_name, &asked);
  char *c;
  size_t n;
  while (ts_split_next(feed, &c, &n)) ck_assert_int_eq(ts_sse_feed(s, c, n), TS_E_OK);
  ck_assert_int_eq(ts_sse_finish(s), TS_E_OK);
  sb_printf(out, "asked: %s\n", sb_str(&asked));
  sb_free(&asked);
}

static void keep_run(void *user, ts_split *feed, sb *out) {
  (void)user;
  ts_sse s;
  keep_feed(&s, feed, out, keep_cb, out);
}

/* Cap 16, line limit 24: an event that keeps a head is cut, not an error, however long
 * its data and its lines; the others keep every limit; the next event is whole again. */
START_TEST(test_keep_head) {
  static const struct {
    int line;
    const char *in, *want;
  } rows[] = {
      {__LINE__, "event: skip\ndata: 0123456789012345678901234567890123456789\n\ndata: ok\n\n",
       "event 'skip' '' cut @60\nevent '' 'ok' @70\nasked: skip \n"},
      {__LINE__, "event: head\ndata: abcdefgh\ndata: ijk\n\nevent: x\ndata: whole\n\n",
       "event 'head' 'abcde' cut @38\nevent 'x' 'whole' @60\nasked: head x \n"},
      {__LINE__, "event: head\ndata: abcd\ndata: e\n\n", /* the joining \n is past the head */
       "event 'head' 'abcd\n' cut @32\nasked: head \n"},
      {__LINE__, "event: head\ndata: abc\n\n", "event 'head' 'abc' @23\nasked: head \n"},
      {__LINE__, "event: big\ndata: 0123456789abcdefXYZ\n\nevent: skip\ndata:\n\n",
       /* the head is bounded by cap too; an empty value drops nothing */
       "event 'big' '0123456789abcdef' cut @38\nevent 'skip' '' @57\nasked: big skip \n"},
      {__LINE__, "event: other\ndata: 0123456789abcdefXYZ\n\ndata: ok\n\n",
       "error -201 @35\nevent '' 'ok' @50\nasked: other \n"},
      {__LINE__, "data: first\nevent: skip\n\n", /* named after its data: not asked */
       "event 'skip' 'first' @25\nasked: \n"},
      {__LINE__, "event: skip\r\ndata: " "0123456789012345678901234567890123456789" "\r\n\r\n",
       "event 'skip' '' cut @63\nasked: skip \n"},
      /* short enough to be read in one step (whole_event): the same answers */
      {__LINE__, "event: head\ndata: abcdefgh\n\nevent: skip\ndata: 0123\n\n",
       "event 'head' 'abcde' cut @28\nevent 'skip' '' cut @52\nasked: head skip \n"},
      {__LINE__, "event: head\ndata: abcde\n\nevent: big\ndata: 0123\n\nevent: skip\ndata:\n\n",
       "event 'head' 'abcde' @25\nevent 'big' '0123' @48\nevent 'skip' '' @67\n"
       "asked: head big skip \n"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char ctx[64];
    snprintf(ctx, sizeof ctx, "keep row at line %d", rows[i].line);
    check_splits(ctx, rows[i].in, strlen(rows[i].in), keep_run, NULL, rows[i].want);
    use_simd = 0; /* the baseline scan: the cuts, as check_all_splits */
    ts_split_check_cuts(ctx, rows[i].in, strlen(rows[i].in), keep_run, NULL, rows[i].want);
    use_simd = 1;
  }
}
END_TEST

/* ts_sse_set_keep from the callback (the tap stops asking once the format is known):
 * it applies from the next event on, on the one-step path and in the machine alike. */
typedef struct {
  ts_sse *s;
  sb *out;
} unkeep_ctx;

static int unkeep_cb(void *user, const ts_sse_event *ev) {
  unkeep_ctx *u = user;
  keep_cb(u->out, ev);
  ts_sse_set_keep(u->s, NULL, NULL);
  return 0;
}

static void unkeep_run(void *user, ts_split *feed, sb *out) {
  (void)user;
  ts_sse s;
  unkeep_ctx u = {&s, out};
  keep_feed(&s, feed, out, unkeep_cb, &u);
}

START_TEST(test_keep_cleared_in_callback) {
  const char *in = "event: skip\ndata: 12\n\nevent: skip\ndata: 34\n\nevent: head\ndata: 0123456\n\n";
  const char *want = "event 'skip' '' cut @22\nevent 'skip' '34' @44\nevent 'head' '0123456' @71\n"
                     "asked: skip \n";
  check_splits("keep cleared in the callback", in, strlen(in), unkeep_run, NULL, want);
}
END_TEST

/* ts_sse_set_cb from the callback (the tap takes a callback made for the format once it
 * is known): the item being reported is the old callback's, every later one the new
 * one's, on the one-step path and in the machine alike; NULL changes nothing. */
typedef struct {
  ts_sse *s;
  sb *out;
  int switched;
} recb_ctx;

static int second_cb(void *user, const ts_sse_event *ev) {
  recb_ctx *u = user;
  sb_puts(u->out, "2: ");
  return keep_cb(u->out, ev);
}

static int first_cb(void *user, const ts_sse_event *ev) {
  recb_ctx *u = user;
  sb_puts(u->out, "1: ");
  keep_cb(u->out, ev);
  ts_sse_set_cb(u->s, NULL, NULL); /* ignored */
  if (ev->kind == TS_SSE_DISPATCH && ev->name_len == 4 && !memcmp(ev->name, "swap", 4)) ts_sse_set_cb(u->s, second_cb, u);
  return 0;
}

static void recb_run(void *user, ts_split *feed, sb *out) {
  (void)user;
  ts_sse s;
  recb_ctx u = {&s, out, 0};
  keep_feed(&s, feed, out, first_cb, &u);
}

START_TEST(test_cb_replaced_in_callback) {
  const char *in = "event: a\ndata: 1\n\nevent: swap\ndata: 2\n\nevent: b\ndata: 3\n\n"
                   "data: 0123456789abcdefXYZ\n\nevent: c\ndata: 4\n\n";
  const char *want = "1: event 'a' '1' @18\n1: event 'swap' '2' @39\n2: event 'b' '3' @57\n"
                     "2: error -201 @79\n2: event 'c' '4' @102\nasked: a swap b c \n";
  check_splits("callback replaced in the callback", in, strlen(in), recb_run, NULL, want);
}
END_TEST

START_TEST(test_long_cr_only_stream) {
  size_t n = 200000;
  char *in = malloc(n);
  ck_assert_ptr_nonnull(in);
  size_t len = 0, events = 0;
  while (len + 12 < n) {
    memcpy(in + len, "data: 1234\r\r", 12);
    len += 12;
    events++;
  }
  static char dbuf[64];
  size_t counts[2] = {0, 0};
  ts_sse s;
  ck_assert_int_eq(ts_sse_init(&s, dbuf, sizeof dbuf, 0, count_cb, counts), TS_E_OK);
  ck_assert_int_eq(ts_sse_feed(&s, in, len), TS_E_OK);
  ck_assert_int_eq(ts_sse_finish(&s), TS_E_OK);
  ck_assert_uint_eq(counts[0], events);
  ck_assert_uint_eq(counts[1], events * 4);
  free(in);
}
END_TEST

static Suite *sse_suite(void) {
  Suite *s = suite_create("sse");
  TCase *tc = tcase_create("framer");
  tcase_set_timeout(tc, 240);
  tcase_add_loop_test(tc, test_table, 0, (int)(sizeof cases / sizeof cases[0]));
  tcase_add_loop_test(tc, test_corpus, 0, (int)(sizeof corpus / sizeof corpus[0]));
  tcase_add_test(tc, test_corpus_crlf_offsets);
  tcase_add_test(tc, test_no_alloc);
  tcase_add_test(tc, test_zero_copy);
  tcase_add_test(tc, test_whole_event_views);
  tcase_add_test(tc, test_line_end_positions);
  tcase_add_test(tc, test_whole_event_names);
  tcase_add_test(tc, test_event_ends_chunk);
  tcase_add_test(tc, test_simd_choice);
  tcase_add_test(tc, test_in_place);
  tcase_add_test(tc, test_api);
  tcase_add_test(tc, test_abort);
  tcase_add_test(tc, test_cr_lf_split);
  tcase_add_test(tc, test_random_vs_reference);
  tcase_add_test(tc, test_long_cr_only_stream);
  tcase_add_test(tc, test_keep_head);
  tcase_add_test(tc, test_keep_cleared_in_callback);
  tcase_add_test(tc, test_cb_replaced_in_callback);
  tcase_add_test(tc, test_grow_on_demand);
  tcase_add_test(tc, test_grow_refused);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(sse_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
