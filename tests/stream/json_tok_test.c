/*
 * json_tok_test.c: a black-box test of the contract in stream/json_tok.h.
 *
 * Method (after yajl's test suite and picohttpparser's): every document is fed whole,
 * one byte at a time (with empty feeds in between), and in chunks of every size 1..31,
 * and must give the same tokens (kind, depth, absolute offset, concatenated text), the
 * same error and the same error offset. While feeding, a recorder checks the fragment
 * discipline on every callback: exactly one FIRST and one LAST per token, in order;
 * fragments of a token contiguous in the stream; each fragment's text pointing into the
 * chunk of the current feed call at exactly its offset (zero-copy); nothing at or past
 * an error; no allocation between the first feed and finish.
 *
 * Gold traces render completed tokens compactly: `{ } [ ]` for containers, K"raw key",
 * S"raw string" (escapes not decoded, bytes outside printable ASCII as \xHH), N<number>,
 * T F Z for true false null; the depth of each token is a parallel string of digits.
 * Tokens reported before an error stand and are part of the trace; a token still open
 * at an error (some fragments, no LAST) is not, because how many of its fragments were
 * reported depends on chunking.
 *
 * A second, independent reference (a recursive-descent validator over the whole
 * buffer, below) must agree with every table row, and is then compared against the
 * tokenizer on thousands of random documents, valid and mutated, split at random.
 *
 * Conventions the tables assume where json_tok.h leaves room (see the report):
 *   - an error is detected at the first byte that cannot continue a valid document,
 *     except that a \u escape is judged when its 4th hex digit is read (so a lone low
 *     surrogate fails at its last digit, a high one followed by \u0041 at the 1);
 *   - UTF-8 is checked byte by byte with the Unicode ranges (E0 A0..BF, ED 80..9F,
 *     F0 90..BF, F4 80..8F), so an overlong or surrogate form fails at its 2nd byte;
 *   - after a high surrogate anything but `\u` is JSON_SURROGATE (even `\x`);
 *   - a digit after a leading zero is JSON_NUMBER; otherwise a byte that cannot extend
 *     a complete number ends it (the number is reported) and is then judged as the byte
 *     after a value: JSON_TRAILING at top level, JSON_SYNTAX inside a container;
 *   - a number inside a container is not completed by finish (finish completes only a
 *     top-level number), so `[1` reports `[` only, then JSON_TRUNCATED.
 */
#include <check.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_tok.h"
#include "stream/json_unescape.h"
#include "support/sb.h"
#include "support/split.h"
#include "support/test_support.h"

/* check's ck_assert_* report every passing assertion to the parent process (a pipe
 * write each); the hot paths below run hundreds of thousands of times, so they call
 * into check only on failure. */
#define CHECK(cond, ...) \
  do { \
    if (!(cond)) ck_abort_msg(__VA_ARGS__); \
  } while (0)

/* ---- recorded tokens ---------------------------------------------------------------- */

typedef struct {
  uint8_t kind;
  uint32_t depth;
  uint64_t off;   /* offset of the first fragment */
  size_t tstart;  /* text in the pool */
  size_t tlen;
} tok_t;

typedef struct {
  tok_t *toks;
  size_t ntoks, cap;
  char *pool;
  size_t plen, pcap;
  int err;
  uint64_t erroff;
  /* recorder state */
  int open;             /* a token has had its FIRST fragment but not its LAST */
  uint64_t open_next;   /* expected offset of the open token's next fragment */
  const char *chunk;    /* the chunk of the current feed call */
  size_t chunk_len;
  uint64_t chunk_start;
  int in_finish;
  uint64_t ncb;         /* callbacks so far */
  uint64_t abort_at;    /* return nonzero on this callback (1-based); 0 = never */
  uint64_t max_end;     /* the largest offset + len of any fragment */
  char viol[320];       /* the first contract violation seen by the recorder */
} run_t;

static void run_init(run_t *r, size_t doclen) {
  memset(r, 0, sizeof *r);
  r->cap = doclen + 4;
  r->toks = malloc(r->cap * sizeof *r->toks);
  r->pcap = 5 * doclen + 16;
  r->pool = malloc(r->pcap);
  CHECK(r->toks, "out of memory");
  CHECK(r->pool, "out of memory");
}

static void run_free(run_t *r) {
  free(r->toks);
  free(r->pool);
  r->toks = NULL;
  r->pool = NULL;
}

#define VIOL(r, ...) \
  do { \
    if (!(r)->viol[0]) snprintf((r)->viol, sizeof (r)->viol, __VA_ARGS__); \
  } while (0)

static const char *lit_text(int kind) {
  return kind == TS_JSON_TRUE ? "true" : kind == TS_JSON_FALSE ? "false" : "null";
}

static int is_fragmented(int kind) {
  return kind == TS_JSON_KEY || kind == TS_JSON_STRING || kind == TS_JSON_NUMBER;
}

/* The callback: checks the fragment discipline and records completed tokens. Never
 * allocates and never calls check's assertions (both would disturb the allocation
 * count); violations are kept as a message and asserted after the run. */
static int record(void *user, const ts_json_token *t) {
  run_t *r = user;
  r->ncb++;
  int kind = t->kind;
  if (kind < TS_JSON_OBJECT_BEGIN || kind > TS_JSON_NULL) {
    VIOL(r, "callback %" PRIu64 ": bad kind %d", r->ncb, kind);
    return 0;
  }
  if (t->flags & ~(TS_JSON_FIRST | TS_JSON_LAST)) VIOL(r, "bad flags %u", (unsigned)t->flags);
  if (t->len && !t->text) VIOL(r, "NULL text with len %zu", t->len);
  int literal = kind == TS_JSON_TRUE || kind == TS_JSON_FALSE || kind == TS_JSON_NULL;
  uint64_t span = literal ? strlen(lit_text(kind)) : t->len;
  if (t->offset + span > r->max_end) r->max_end = t->offset + span;

  /* Zero-copy: a non-literal fragment is a view into this call's chunk, at exactly its
   * stream offset (an empty one may sit at the chunk's end). At finish there is no
   * chunk; only the offset is checked then. */
  if (!r->in_finish && !r->chunk) {
    VIOL(r, "callback at %" PRIu64 " during an empty feed", t->offset);
  } else if (!literal && !r->in_finish) {
    if (t->offset < r->chunk_start || t->offset + t->len > r->chunk_start + r->chunk_len)
      VIOL(r, "fragment at %" PRIu64 "+%zu outside the chunk [%" PRIu64 ", %" PRIu64 ")",
           t->offset, t->len, r->chunk_start, r->chunk_start + r->chunk_len);
    else if (t->text != r->chunk + (t->offset - r->chunk_start))
      VIOL(r, "fragment at %" PRIu64 " does not point into the chunk at its offset", t->offset);
  }
  if (literal && (t->len != span || !t->text || memcmp(t->text, lit_text(kind), span) != 0))
    VIOL(r, "literal kind %d has text of len %zu, want \"%s\"", kind, t->len, lit_text(kind));
  if (!is_fragmented(kind)) {
    if (t->flags != (TS_JSON_FIRST | TS_JSON_LAST))
      VIOL(r, "single token kind %d without FIRST|LAST (flags %u)", kind, (unsigned)t->flags);
    if (!literal && t->len != 1) VIOL(r, "punctuation kind %d with len %zu", kind, t->len);
  }
  if (r->in_finish && (kind != TS_JSON_NUMBER || t->len != 0 || !(t->flags & TS_JSON_LAST)))
    VIOL(r, "finish reported something other than a number's empty LAST fragment");

  if (t->flags & TS_JSON_FIRST) {
    if (r->open) VIOL(r, "FIRST of kind %d at %" PRIu64 " while a token is open", kind, t->offset);
    if (r->ntoks >= r->cap) {
      VIOL(r, "too many tokens");
      return 0;
    }
    tok_t *n = &r->toks[r->ntoks++];
    n->kind = (uint8_t)kind;
    n->depth = t->depth;
    n->off = t->offset;
    n->tstart = r->plen;
    n->tlen = 0;
    r->open = 1;
    r->open_next = t->offset;
  } else if (!r->open) {
    VIOL(r, "fragment of kind %d at %" PRIu64 " without FIRST", kind, t->offset);
    return 0;
  }
  tok_t *cur = &r->toks[r->ntoks - 1];
  if (cur->kind != kind || cur->depth != t->depth)
    VIOL(r, "fragment kind/depth %d/%u differs from its token's %d/%u", kind, t->depth, cur->kind,
         cur->depth);
  if (!literal) {
    if (t->offset != r->open_next)
      VIOL(r, "fragment at %" PRIu64 ", want it contiguous at %" PRIu64, t->offset, r->open_next);
    r->open_next = t->offset + t->len;
  }
  if (r->plen + t->len > r->pcap) {
    VIOL(r, "text pool overflow");
    return 0;
  }
  if (t->len) memcpy(r->pool + r->plen, t->text, t->len);
  r->plen += t->len;
  cur->tlen += t->len;
  if (t->flags & TS_JSON_LAST) r->open = 0;
  return r->abort_at && r->ncb == r->abort_at;
}

/* ---- rendering ------------------------------------------------------------------------ */

/* Appends to a bounded buffer; output past the end is dropped. */
static void app(char *out, size_t cap, size_t *o, const char *s) {
  size_t n = strlen(s);
  if (*o + n >= cap) n = *o + 1 < cap ? cap - *o - 1 : 0;
  memcpy(out + *o, s, n);
  *o += n;
  out[*o] = 0;
}

static void render(const run_t *r, char *out, size_t cap, char *depths, size_t dcap) {
  size_t o = 0, d = 0;
  out[0] = depths[0] = 0;
  for (size_t i = 0; i < r->ntoks; i++) {
    const tok_t *t = &r->toks[i];
    char tmp[16];
    const char *pre = "";
    switch (t->kind) {
    case TS_JSON_OBJECT_BEGIN: pre = "{"; break;
    case TS_JSON_OBJECT_END: pre = "}"; break;
    case TS_JSON_ARRAY_BEGIN: pre = "["; break;
    case TS_JSON_ARRAY_END: pre = "]"; break;
    case TS_JSON_KEY: pre = "K\""; break;
    case TS_JSON_STRING: pre = "S\""; break;
    case TS_JSON_NUMBER: pre = "N"; break;
    case TS_JSON_TRUE: pre = "T"; break;
    case TS_JSON_FALSE: pre = "F"; break;
    case TS_JSON_NULL: pre = "Z"; break;
    }
    if (i) app(out, cap, &o, " ");
    app(out, cap, &o, pre);
    if (is_fragmented(t->kind)) {
      for (size_t k = 0; k < t->tlen; k++) {
        unsigned char c = (unsigned char)r->pool[t->tstart + k];
        if (c >= 0x20 && c < 0x7F) snprintf(tmp, sizeof tmp, "%c", c);
        else snprintf(tmp, sizeof tmp, "\\x%02X", c);
        app(out, cap, &o, tmp);
      }
      if (t->kind != TS_JSON_NUMBER) app(out, cap, &o, "\"");
    }
    if (d + 1 < dcap) {
      uint32_t v = t->depth;
      depths[d++] = (char)(v < 10 ? '0' + v : v < 36 ? 'a' + v - 10 : '*');
      depths[d] = 0;
    }
  }
}

/* ---- feeding -------------------------------------------------------------------------- */

/* Feeds doc cut at cuts[0..ncuts) (increasing, inside (0, len)); each chunk is an
 * exact-size heap copy so ASan sees any read outside it. empty_feeds adds a (NULL, 0)
 * feed before every chunk. Records into r (initialised here). Asserts the per-run
 * contract: no allocation, stickiness, finish and done semantics. */
static void run_doc(const char *doc, size_t len, uint32_t max_depth, const size_t *cuts,
                    size_t ncuts, int empty_feeds, run_t *r, const char *what) {
  run_init(r, len);
  size_t nch = ncuts + 1;
  char **chunks = malloc(nch * sizeof *chunks);
  size_t *starts = malloc((nch + 1) * sizeof *starts);
  CHECK(chunks, "out of memory");
  CHECK(starts, "out of memory");
  starts[0] = 0;
  for (size_t i = 0; i < ncuts; i++) starts[i + 1] = cuts[i];
  starts[nch] = len;
  for (size_t i = 0; i < nch; i++) {
    size_t n = starts[i + 1] - starts[i];
    chunks[i] = malloc(n ? n : 1);
    CHECK(chunks[i], "out of memory");
    if (n) memcpy(chunks[i], doc + starts[i], n);
  }
  ts_json_tok t;
  /* init must write every field a call reads before writing it (it no longer clears
   * the whole struct): start from garbage */
  memset(&t, 0xA5, sizeof t);
  CHECK(ts_json_tok_init(&t, max_depth, record, r) == TS_E_OK, "%s: init failed", what);
  int done0 = ts_json_tok_done(&t);

  uint64_t a0 = ts_test_alloc_count();
  int rc = TS_E_OK, late_rc_bad = 0, late_cb = 0;
  uint64_t ncb_at_err = 0;
  for (size_t i = 0; i < nch; i++) {
    size_t n = starts[i + 1] - starts[i];
    if (empty_feeds) {
      r->chunk = NULL, r->chunk_len = 0, r->chunk_start = starts[i];
      int e = ts_json_tok_feed(&t, NULL, 0);
      if (rc == TS_E_OK) rc = e, ncb_at_err = r->ncb;
      else if (e != rc) late_rc_bad = 1;
    }
    r->chunk = chunks[i], r->chunk_len = n, r->chunk_start = starts[i];
    int e = ts_json_tok_feed(&t, chunks[i], n);
    if (rc == TS_E_OK) rc = e, ncb_at_err = r->ncb;
    else if (e != rc) late_rc_bad = 1;
    if (rc != TS_E_OK && r->ncb != ncb_at_err) late_cb = 1;
  }
  int done_before = ts_json_tok_done(&t);
  uint64_t pos_before = ts_json_tok_offset(&t);
  r->in_finish = 1;
  int fin = ts_json_tok_finish(&t);
  r->in_finish = 0;
  uint64_t a1 = ts_test_alloc_count();

  if (rc != TS_E_OK && fin != rc) late_rc_bad = 1;
  if (rc != TS_E_OK && r->ncb != ncb_at_err) late_cb = 1;
  r->err = rc != TS_E_OK ? rc : fin;
  r->erroff = ts_json_tok_error_offset(&t);

  CHECK(!r->viol[0], "%s: callback contract: %s", what, r->viol);
  CHECK(a1 == a0, "%s: %" PRIu64 " allocations while feeding", what, a1 - a0);
  CHECK(!late_rc_bad, "%s: the error %d (%s) is not sticky", what, r->err,
                ts_err_name(r->err));
  CHECK(!late_cb, "%s: callback after the error %s", what, ts_err_name(r->err));
  CHECK(done0 == 0, "%s: done before any byte", what);
  /* "Bytes fed so far", errors or not: the same at every split (issue 18 item 10). */
  CHECK(pos_before == len, "%s: offset() %" PRIu64 " after feeding %zu bytes", what, pos_before,
        len);
  CHECK(ts_json_tok_error(&t) == r->err, "%s: error() %d, feed/finish said %d", what,
                ts_json_tok_error(&t), r->err);
  if (r->err) {
    CHECK(r->max_end <= r->erroff,
                  "%s: a fragment reaches %" PRIu64 ", past the error at %" PRIu64, what,
                  r->max_end, r->erroff);
    /* Every later call says the same and reports nothing. */
    uint64_t ncb = r->ncb;
    r->chunk = "x", r->chunk_len = 1, r->chunk_start = len;
    CHECK(ts_json_tok_feed(&t, "x", 1) == r->err, "%s: feed after the error is not sticky", what);
    CHECK(ts_json_tok_finish(&t) == r->err, "%s: finish after the error is not sticky", what);
    CHECK(r->ncb == ncb, "%s: callback after the error", what);
    CHECK(ts_json_tok_error_offset(&t) == r->erroff, "%s: error offset moved", what);
    CHECK(ts_json_tok_offset(&t) == len + 1, "%s: offset() %" PRIu64 " after the error and one "
          "more byte, want %zu", what, ts_json_tok_offset(&t), len + 1);
    /* The open token, if any, is dropped from the trace (its fragment count varies). */
    if (r->open) r->ntoks--, r->open = 0;
  } else {
    CHECK(!r->open, "%s: a token is still open after a clean finish", what);
    CHECK(ts_json_tok_done(&t) == 1, "%s: done() is 0 after a clean finish", what);
    CHECK(ts_json_tok_depth(&t) == 0, "%s: depth() %u after a clean finish", what,
                  ts_json_tok_depth(&t));
    /* done() before finish: 1 unless the document ends inside a top-level number. */
    int ends_in_number = r->ntoks == 1 && r->toks[0].kind == TS_JSON_NUMBER &&
                         r->toks[0].off + r->toks[0].tlen == len;
    CHECK(done_before == !ends_in_number, "%s: done() before finish is %d", what,
                  done_before);
    CHECK(ts_json_tok_finish(&t) == TS_E_OK, "%s: a second finish is not OK", what);
    uint64_t ncb = r->ncb;
    r->chunk = " ", r->chunk_len = 1, r->chunk_start = len;
    CHECK(ts_json_tok_feed(&t, " ", 1) == TS_E_JSON_FINISHED, "%s: feed after finish", what);
    CHECK(ts_json_tok_feed(&t, "1", 1) == TS_E_JSON_FINISHED, "%s: 2nd feed after finish", what);
    CHECK(r->ncb == ncb, "%s: callback after finish", what);
    CHECK(ts_json_tok_offset(&t) == len + 2, "%s: offset() %" PRIu64 " after two bytes fed "
          "after finish", what, ts_json_tok_offset(&t));
  }
  for (size_t i = 0; i < nch; i++) free(chunks[i]);
  free(chunks);
  free(starts);
}

/* Two runs agree on everything that must not depend on chunking. */
static void same_runs(const run_t *a, const run_t *b, const char *what) {
  char ta[2048], tb[2048], da[512], db[512];
  int same = a->err == b->err && a->erroff == b->erroff && a->ntoks == b->ntoks;
  for (size_t i = 0; same && i < a->ntoks; i++) {
    const tok_t *x = &a->toks[i], *y = &b->toks[i];
    same = x->kind == y->kind && x->depth == y->depth && x->off == y->off && x->tlen == y->tlen &&
           memcmp(a->pool + x->tstart, b->pool + y->tstart, x->tlen) == 0;
  }
  if (same) return;
  render(a, ta, sizeof ta, da, sizeof da);
  render(b, tb, sizeof tb, db, sizeof db);
  size_t i = 0;
  while (i < a->ntoks && i < b->ntoks && a->toks[i].off == b->toks[i].off) i++;
  ck_abort_msg("%s:\n  want %s @%" PRIu64 " [%s] depths %s\n  got  %s @%" PRIu64
               " [%s] depths %s\n  (first token offset difference at token %zu)",
               what, ts_err_name(a->err), a->erroff, ta, da, ts_err_name(b->err), b->erroff, tb,
               db, i);
}

/* ---- the reference: recursive descent over the whole buffer --------------------------- */

typedef struct {
  const unsigned char *s;
  size_t n, i;
  uint32_t max_depth;
  run_t *r;
} ref_t;

static int ref_fail(ref_t *p, int err, size_t off) {
  if (!p->r->err) p->r->err = err, p->r->erroff = off;
  return -1;
}

static void ref_emit(ref_t *p, int kind, uint32_t depth, size_t off, size_t len) {
  run_t *r = p->r;
  tok_t *t = &r->toks[r->ntoks++];
  t->kind = (uint8_t)kind;
  t->depth = depth;
  t->off = off;
  t->tstart = r->plen;
  int literal = kind == TS_JSON_TRUE || kind == TS_JSON_FALSE || kind == TS_JSON_NULL;
  const char *src = literal ? lit_text(kind) : (const char *)p->s + off;
  size_t n = literal ? strlen(src) : is_fragmented(kind) ? len : 1;
  memcpy(r->pool + r->plen, src, n);
  r->plen += n;
  t->tlen = n;
}

static int ref_end(ref_t *p) { return p->i >= p->n; }
static void ref_ws(ref_t *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
                         p->s[p->i] == '\r'))
    p->i++;
}
static int hexval(unsigned c) {
  return c >= '0' && c <= '9' ? (int)(c - '0')
         : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (int)((c | 0x20) - 'a' + 10)
                                                 : -1;
}

/* Reads 4 hex digits at p->i into *unit; returns the offset of the last one. */
static int ref_hex4(ref_t *p, unsigned *unit, size_t *last) {
  *unit = 0;
  for (int k = 0; k < 4; k++) {
    if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
    int v = hexval(p->s[p->i]);
    if (v < 0) return ref_fail(p, TS_E_JSON_ESCAPE, p->i);
    *unit = *unit << 4 | (unsigned)v;
    *last = p->i++;
  }
  return 0;
}

static int ref_string(ref_t *p, int kind, uint32_t depth) {
  size_t body = ++p->i;
  for (;;) {
    if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
    unsigned c = p->s[p->i];
    if (c == '"') {
      ref_emit(p, kind, depth, body, p->i - body);
      p->i++;
      return 0;
    }
    if (c == '\\') {
      p->i++;
      if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
      c = p->s[p->i];
      if (c && strchr("\"\\/bfnrt", (int)c)) {
        p->i++;
        continue;
      }
      if (c != 'u') return ref_fail(p, TS_E_JSON_ESCAPE, p->i);
      p->i++;
      unsigned unit;
      size_t last;
      if (ref_hex4(p, &unit, &last)) return -1;
      if (unit >= 0xDC00 && unit <= 0xDFFF) return ref_fail(p, TS_E_JSON_SURROGATE, last);
      if (unit >= 0xD800 && unit <= 0xDBFF) {
        if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
        if (p->s[p->i] != '\\') return ref_fail(p, TS_E_JSON_SURROGATE, p->i);
        p->i++;
        if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
        if (p->s[p->i] != 'u') return ref_fail(p, TS_E_JSON_SURROGATE, p->i);
        p->i++;
        if (ref_hex4(p, &unit, &last)) return -1;
        if (unit < 0xDC00 || unit > 0xDFFF) return ref_fail(p, TS_E_JSON_SURROGATE, last);
      }
      continue;
    }
    if (c < 0x20) return ref_fail(p, TS_E_JSON_CTRL, p->i);
    if (c < 0x80) {
      p->i++;
      continue;
    }
    int need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c == 0xE0) need = 2, lo = 0xA0;
    else if (c == 0xED) need = 2, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) need = 2;
    else if (c == 0xF0) need = 3, lo = 0x90;
    else if (c == 0xF4) need = 3, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3) need = 3;
    else return ref_fail(p, TS_E_JSON_UTF8, p->i);
    p->i++;
    for (int k = 0; k < need; k++, lo = 0x80, hi = 0xBF) {
      if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
      unsigned b = p->s[p->i];
      if (b < lo || b > hi) return ref_fail(p, TS_E_JSON_UTF8, p->i);
      p->i++;
    }
  }
}

static int isdig(ref_t *p) { return !ref_end(p) && p->s[p->i] >= '0' && p->s[p->i] <= '9'; }

static int ref_number(ref_t *p, uint32_t depth) {
  size_t start = p->i;
  if (p->s[p->i] == '-') p->i++;
  if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
  if (p->s[p->i] == '0') {
    p->i++;
    if (isdig(p)) return ref_fail(p, TS_E_JSON_NUMBER, p->i);
  } else if (isdig(p)) {
    while (isdig(p)) p->i++;
  } else {
    return ref_fail(p, TS_E_JSON_NUMBER, p->i);
  }
  if (!ref_end(p) && p->s[p->i] == '.') {
    p->i++;
    if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
    if (!isdig(p)) return ref_fail(p, TS_E_JSON_NUMBER, p->i);
    while (isdig(p)) p->i++;
  }
  if (!ref_end(p) && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
    p->i++;
    if (!ref_end(p) && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
    if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
    if (!isdig(p)) return ref_fail(p, TS_E_JSON_NUMBER, p->i);
    while (isdig(p)) p->i++;
  }
  /* Only a top-level number is completed by the end of input. */
  if (ref_end(p) && depth > 0) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
  ref_emit(p, TS_JSON_NUMBER, depth, start, p->i - start);
  return 0;
}

static int ref_value(ref_t *p, uint32_t depth);

static int ref_container(ref_t *p, uint32_t depth, int obj) {
  if (depth + 1 > p->max_depth) return ref_fail(p, TS_E_JSON_DEPTH, p->i);
  int close = obj ? '}' : ']';
  ref_emit(p, obj ? TS_JSON_OBJECT_BEGIN : TS_JSON_ARRAY_BEGIN, depth, p->i, 1);
  p->i++;
  ref_ws(p);
  if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
  if (p->s[p->i] == close) {
    ref_emit(p, obj ? TS_JSON_OBJECT_END : TS_JSON_ARRAY_END, depth, p->i, 1);
    p->i++;
    return 0;
  }
  for (;;) {
    if (obj) {
      if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
      if (p->s[p->i] != '"') return ref_fail(p, TS_E_JSON_SYNTAX, p->i);
      if (ref_string(p, TS_JSON_KEY, depth + 1)) return -1;
      ref_ws(p);
      if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
      if (p->s[p->i] != ':') return ref_fail(p, TS_E_JSON_SYNTAX, p->i);
      p->i++;
      ref_ws(p);
    }
    if (ref_value(p, depth + 1)) return -1;
    ref_ws(p);
    if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
    if (p->s[p->i] == close) {
      ref_emit(p, obj ? TS_JSON_OBJECT_END : TS_JSON_ARRAY_END, depth, p->i, 1);
      p->i++;
      return 0;
    }
    if (p->s[p->i] != ',') return ref_fail(p, TS_E_JSON_SYNTAX, p->i);
    p->i++;
    ref_ws(p);
  }
}

static int ref_literal(ref_t *p, uint32_t depth, int kind) {
  const char *lit = lit_text(kind);
  size_t start = p->i;
  for (size_t k = 0; lit[k]; k++) {
    if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
    if (p->s[p->i] != (unsigned char)lit[k]) return ref_fail(p, TS_E_JSON_LITERAL, p->i);
    p->i++;
  }
  ref_emit(p, kind, depth, start, 0);
  return 0;
}

static int ref_value(ref_t *p, uint32_t depth) {
  if (ref_end(p)) return ref_fail(p, TS_E_JSON_TRUNCATED, p->n);
  unsigned c = p->s[p->i];
  switch (c) {
  case '{': return ref_container(p, depth, 1);
  case '[': return ref_container(p, depth, 0);
  case '"': return ref_string(p, TS_JSON_STRING, depth);
  case 't': return ref_literal(p, depth, TS_JSON_TRUE);
  case 'f': return ref_literal(p, depth, TS_JSON_FALSE);
  case 'n': return ref_literal(p, depth, TS_JSON_NULL);
  default:
    if (c == '-' || (c >= '0' && c <= '9')) return ref_number(p, depth);
    return ref_fail(p, TS_E_JSON_SYNTAX, p->i);
  }
}

static void ref_parse(const char *doc, size_t len, uint32_t max_depth, run_t *r) {
  run_init(r, len);
  ref_t p = {(const unsigned char *)doc, len, 0, max_depth ? max_depth : TS_JSON_DEFAULT_MAX_DEPTH,
             r};
  ref_ws(&p);
  if (ref_end(&p)) {
    ref_fail(&p, TS_E_JSON_EMPTY, len);
    return;
  }
  if (ref_value(&p, 0)) return;
  ref_ws(&p);
  if (!ref_end(&p)) ref_fail(&p, TS_E_JSON_TRAILING, p.i);
}

/* ---- the split-invariance driver --------------------------------------------------------- */

/* Everything same_runs compares, as text: the error and its offset, then one line per
 * completed token (kind, depth, offset, text with bytes outside printable ASCII as
 * \xHH). */
static void trace_of(const run_t *r, sb *o) {
  sb_printf(o, "%s @%" PRIu64 "\n", ts_err_name(r->err), r->erroff);
  for (size_t i = 0; i < r->ntoks; i++) {
    const tok_t *t = &r->toks[i];
    sb_printf(o, "%d %u @%" PRIu64 " '", t->kind, t->depth, t->off);
    for (size_t k = 0; k < t->tlen; k++) {
      unsigned char c = (unsigned char)r->pool[t->tstart + k];
      if (c >= 0x20 && c < 0x7F && c != '\\') sb_putc(o, (char)c);
      else sb_printf(o, "\\x%02X", c);
    }
    sb_puts(o, "'\n");
  }
}

/* The tokenizer as a split-harness runner (support/split.h): the harness's reads become
 * the cuts of one run_doc (which copies each into its own block before feeding, so that
 * no allocation falls inside the fed span); byte by byte also feeds empty reads. */
typedef struct {
  uint32_t max_depth;
  const char *label;
} tok_runner;

static void tok_run(void *user, ts_split *feed, sb *out) {
  const tok_runner *tr = user;
  size_t cap = 64, n = 0, len = 0;
  size_t *cuts = malloc(cap * sizeof *cuts);
  char *doc = NULL;
  char *p;
  size_t k;
  CHECK(cuts, "out of memory");
  while (ts_split_next(feed, &p, &k)) {
    if (len) {
      if (n == cap) {
        cap *= 2;
        cuts = realloc(cuts, cap * sizeof *cuts);
        CHECK(cuts, "out of memory");
      }
      cuts[n++] = len;
    }
    doc = realloc(doc, len + k);
    CHECK(doc, "out of memory");
    memcpy(doc + len, p, k);
    len += k;
  }
  char what[240];
  snprintf(what, sizeof what, "%s, reads of %zu (0: whole)", tr->label, ts_split_size(feed));
  run_t r;
  run_doc(doc ? doc : "", len, tr->max_depth, cuts, n, ts_split_size(feed) == 1, &r, what);
  trace_of(&r, out);
  run_free(&r);
  free(cuts);
  free(doc);
}

/* Runs doc whole, byte by byte with empty feeds, and at every chunk size 2..31 (the
 * split harness); every run must equal `want` (the reference or the first run). */
static void check_all_splits(const char *doc, size_t len, uint32_t max_depth, const run_t *want,
                             const char *label) {
  sb w = {0};
  trace_of(want, &w);
  tok_runner tr = {max_depth, label};
  ts_split_check(label, doc, len, tok_run, &tr, sb_str(&w));
  sb_free(&w);
}

/* ---- the table ----------------------------------------------------------------------------- */

typedef struct {
  int line;
  const char *label;
  const char *in;
  size_t len;
  uint32_t max_depth;
  const char *trace;  /* completed tokens, rendered */
  const char *depths; /* one digit per token */
  int err;
  uint64_t off;       /* error offset */
} row;

#define A(label, in, trace, depths) {__LINE__, label, in, sizeof(in) - 1, 0, trace, depths, 0, 0}
#define AD(label, in, maxd, trace, depths) \
  {__LINE__, label, in, sizeof(in) - 1, maxd, trace, depths, 0, 0}
#define R(label, in, trace, depths, err, off) \
  {__LINE__, label, in, sizeof(in) - 1, 0, trace, depths, TS_E_##err, off}
#define RD(label, in, maxd, trace, depths, err, off) \
  {__LINE__, label, in, sizeof(in) - 1, maxd, trace, depths, TS_E_##err, off}

static const row rows[] = {
    /* every token kind */
    A("zero", "0", "N0", "0"),
    A("number with whitespace around", " \t\r\n12 \t\r\n", "N12", "0"),
    A("string", "\"abc\"", "S\"abc\"", "0"),
    A("empty string", "\"\"", "S\"\"", "0"),
    A("true", "true", "T", "0"),
    A("false", "false", "F", "0"),
    A("null", "null", "Z", "0"),
    A("empty array", "[]", "[ ]", "00"),
    A("empty object", "{}", "{ }", "00"),
    A("empty containers with whitespace", "[ \n{ } ,[\t]\r]", "[ { } [ ] ]", "011110"),
    A("object one member", "{\"a\":1}", "{ K\"a\" N1 }", "0110"),
    A("every kind nested", "{\"a\":[true,false,null],\"b\":{},\"c\":\"x\\n\",\"d\":-1.5e+10}",
      "{ K\"a\" [ T F Z ] K\"b\" { } K\"c\" S\"x\\n\" K\"d\" N-1.5e+10 }", "011222111111110"),
    A("nested arrays", "[[[]]]", "[ [ [ ] ] ]", "012210"),
    A("array of scalars", "[1,\"a\",true,false,null,{},[]]",
      "[ N1 S\"a\" T F Z { } [ ] ]", "01111111110"),
    A("whitespace everywhere", " { \"a\" : [ 1 , 2 ] , \"b\" : null } ",
      "{ K\"a\" [ N1 N2 ] K\"b\" Z }", "011221110"),
    A("empty key", "{\"\":\"\"}", "{ K\"\" S\"\" }", "0110"),
    A("duplicate keys are the caller's business", "{\"a\":1,\"a\":2}",
      "{ K\"a\" N1 K\"a\" N2 }", "011110"),
    A("string then trailing whitespace", "\"a\" \n", "S\"a\"", "0"),
    /* numbers */
    A("minus zero", "-0", "N-0", "0"),
    A("exponent", "1e5", "N1e5", "0"),
    A("exponent upper plus", "1E+5", "N1E+5", "0"),
    A("zero fraction zero exponent", "0.0e-0", "N0.0e-0", "0"),
    A("negative fraction exponent", "-12.5E-03", "N-12.5E-03", "0"),
    A("zero exponent", "0e0", "N0e0", "0"),
    A("long integer", "123456789012345678901234567890", "N123456789012345678901234567890", "0"),
    A("number then space", "7 ", "N7", "0"),
    A("numbers in array", "[0,-0,1e5,1E+5,0.0e-0,10,-10.01]",
      "[ N0 N-0 N1e5 N1E+5 N0.0e-0 N10 N-10.01 ]", "011111110"),
    A("number ends at brace", "{\"a\":-1}", "{ K\"a\" N-1 }", "0110"),
    A("number ends at comma and bracket", "[1,2]", "[ N1 N2 ]", "0110"),
    A("number ends at whitespace in array", "[1 ]", "[ N1 ]", "010"),
    /* escapes */
    A("all single escapes", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "S\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
      "0"),
    A("unicode escapes", "\"\\u0000\\u00e9\\uFFFF\\uD7FF\\uE000\"",
      "S\"\\u0000\\u00e9\\uFFFF\\uD7FF\\uE000\"", "0"),
    A("surrogate pair", "\"\\uD83D\\uDE00\"", "S\"\\uD83D\\uDE00\"", "0"),
    A("surrogate pair extremes", "[\"\\ud800\\udc00\",\"\\udbff\\udfff\"]",
      "[ S\"\\ud800\\udc00\" S\"\\udbff\\udfff\" ]", "0110"),
    A("escaped backslash before quote", "\"a\\\\\"", "S\"a\\\\\"", "0"),
    A("escaped quote in key", "{\"a\\\"b\":0}", "{ K\"a\\\"b\" N0 }", "0110"),
    /* UTF-8 */
    A("2-byte bounds", "\"\xC2\x80\xDF\xBF\"", "S\"\\xC2\\x80\\xDF\\xBF\"", "0"),
    A("3-byte bounds", "\"\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBF\"",
      "S\"\\xE0\\xA0\\x80\\xED\\x9F\\xBF\\xEE\\x80\\x80\\xEF\\xBF\\xBF\"", "0"),
    A("4-byte bounds", "\"\xF0\x90\x80\x80\xF4\x8F\xBF\xBF\xF3\xBF\xBF\xBF\"",
      "S\"\\xF0\\x90\\x80\\x80\\xF4\\x8F\\xBF\\xBF\\xF3\\xBF\\xBF\\xBF\"", "0"),
    A("DEL is not a control character", "\"\x7F\"", "S\"\\x7F\"", "0"),
    A("utf-8 key", "{\"caf\xC3\xA9\":\"\xE2\x82\xAC\"}",
      "{ K\"caf\\xC3\\xA9\" S\"\\xE2\\x82\\xAC\" }", "0110"),
    /* depth */
    AD("depth 3 of 3", "[[[1]]]", 3, "[ [ [ N1 ] ] ]", "0123210"),
    AD("depth 1 of 1", "{\"a\":1}", 1, "{ K\"a\" N1 }", "0110"),
    RD("depth 4 of 3 array", "[[[[]]]]", 3, "[ [ [", "012", JSON_DEPTH, 3),
    RD("depth 4 of 3 object", "{\"a\":{\"b\":{\"c\":{}}}}", 3, "{ K\"a\" { K\"b\" { K\"c\"",
       "011223", JSON_DEPTH, 15),
    RD("depth 2 of 1", "[[]]", 1, "[", "0", JSON_DEPTH, 1),
    RD("depth 2 of 1 after siblings", "[1,{}]", 1, "[ N1", "01", JSON_DEPTH, 3),
    /* empty */
    R("empty input", "", "", "", JSON_EMPTY, 0),
    R("whitespace only", " \t\r\n", "", "", JSON_EMPTY, 4),
    /* numbers rejected */
    R("leading zero", "01", "", "", JSON_NUMBER, 1),
    R("negative leading zero", "-01", "", "", JSON_NUMBER, 2),
    R("leading zero in array", "[01]", "[", "0", JSON_NUMBER, 2),
    R("leading zeros", "00", "", "", JSON_NUMBER, 1),
    R("dot at end top level", "1.", "", "", JSON_TRUNCATED, 2),
    R("dot then bracket", "[1.]", "[", "0", JSON_NUMBER, 3),
    R("dot then exponent", "1.e5", "", "", JSON_NUMBER, 2),
    R("bare leading dot", ".5", "", "", JSON_SYNTAX, 0),
    R("plus sign", "+1", "", "", JSON_SYNTAX, 0),
    R("plus sign in array", "[+1]", "[", "0", JSON_SYNTAX, 1),
    R("minus alone", "-", "", "", JSON_TRUNCATED, 1),
    R("minus then bracket", "[-]", "[", "0", JSON_NUMBER, 2),
    R("minus then letter", "-a", "", "", JSON_NUMBER, 1),
    R("double minus", "--1", "", "", JSON_NUMBER, 1),
    R("minus then dot", "-.5", "", "", JSON_NUMBER, 1),
    R("exponent without digits", "1e", "", "", JSON_TRUNCATED, 2),
    R("exponent sign without digits", "1e+", "", "", JSON_TRUNCATED, 3),
    R("exponent minus without digits", "1E-", "", "", JSON_TRUNCATED, 3),
    R("exponent then bracket", "[1e]", "[", "0", JSON_NUMBER, 3),
    R("exponent two signs", "1e+-5", "", "", JSON_NUMBER, 3),
    R("exponent then space", "1e 5", "", "", JSON_NUMBER, 2),
    R("number then letter", "1x", "N1", "0", JSON_TRAILING, 1),
    R("number then letter in array", "[1x]", "[ N1", "01", JSON_SYNTAX, 2),
    R("second dot", "1.5.3", "N1.5", "0", JSON_TRAILING, 3),
    R("hex", "0x10", "N0", "0", JSON_TRAILING, 1),
    R("number inside unclosed array", "[1", "[", "0", JSON_TRUNCATED, 2),
    R("number inside unclosed object", "{\"a\":12", "{ K\"a\"", "01", JSON_TRUNCATED, 7),
    R("Infinity", "Infinity", "", "", JSON_SYNTAX, 0),
    R("minus Infinity", "-Infinity", "", "", JSON_NUMBER, 1),
    R("NaN", "NaN", "", "", JSON_SYNTAX, 0),
    /* structure rejected */
    R("trailing comma in array", "[1,]", "[ N1", "01", JSON_SYNTAX, 3),
    R("trailing comma in object", "{\"a\":1,}", "{ K\"a\" N1", "011", JSON_SYNTAX, 7),
    R("missing colon", "{\"a\" 1}", "{ K\"a\"", "01", JSON_SYNTAX, 5),
    R("double colon", "{\"a\"::1}", "{ K\"a\"", "01", JSON_SYNTAX, 5),
    R("missing value", "{\"a\":}", "{ K\"a\"", "01", JSON_SYNTAX, 5),
    R("missing comma in array", "[1 2]", "[ N1", "01", JSON_SYNTAX, 3),
    R("missing comma in object", "{\"a\":1 \"b\":2}", "{ K\"a\" N1", "011", JSON_SYNTAX, 7),
    R("lone comma in object", "{,}", "{", "0", JSON_SYNTAX, 1),
    R("leading comma in array", "[,1]", "[", "0", JSON_SYNTAX, 1),
    R("double comma", "[1,,2]", "[ N1", "01", JSON_SYNTAX, 3),
    R("number key", "{1:2}", "{", "0", JSON_SYNTAX, 1),
    R("single-quoted key", "{'a':1}", "{", "0", JSON_SYNTAX, 1),
    R("array where key expected", "{[]:1}", "{", "0", JSON_SYNTAX, 1),
    R("mismatched [}", "[}", "[", "0", JSON_SYNTAX, 1),
    R("mismatched {]", "{]", "{", "0", JSON_SYNTAX, 1),
    R("mismatched after value", "[1}", "[ N1", "01", JSON_SYNTAX, 2),
    R("mismatched object close", "{\"a\":1]", "{ K\"a\" N1", "011", JSON_SYNTAX, 6),
    R("colon in array", "[1:2]", "[ N1", "01", JSON_SYNTAX, 2),
    R("lone close bracket", "]", "", "", JSON_SYNTAX, 0),
    R("lone colon", ":", "", "", JSON_SYNTAX, 0),
    R("lone comma", ",", "", "", JSON_SYNTAX, 0),
    R("single quotes", "'a'", "", "", JSON_SYNTAX, 0),
    R("BOM", "\xEF\xBB\xBF{}", "", "", JSON_SYNTAX, 0),
    R("form feed is not whitespace", "\f1", "", "", JSON_SYNTAX, 0),
    R("NUL before value", "\0" "1", "", "", JSON_SYNTAX, 0),
    R("raw utf-8 outside strings", "\xC3\xA9", "", "", JSON_SYNTAX, 0),
    R("high byte in array", "[\x80]", "[", "0", JSON_SYNTAX, 1),
    R("unclosed array", "[", "[", "0", JSON_TRUNCATED, 1),
    R("unclosed nested", "[[]", "[ [ ]", "011", JSON_TRUNCATED, 3),
    R("unclosed object after key", "{\"a\"", "{ K\"a\"", "01", JSON_TRUNCATED, 4),
    R("unclosed object after colon", "{\"a\": ", "{ K\"a\"", "01", JSON_TRUNCATED, 6),
    R("unclosed object after comma", "{\"a\":1,", "{ K\"a\" N1", "011", JSON_TRUNCATED, 7),
    R("unclosed object", "{\"a\":true", "{ K\"a\" T", "011", JSON_TRUNCATED, 9),
    R("unclosed array after comma", "[1, ", "[ N1", "01", JSON_TRUNCATED, 4),
    /* trailing */
    R("two numbers", "1 2", "N1", "0", JSON_TRAILING, 2),
    R("object then letter", "{}x", "{ }", "00", JSON_TRAILING, 2),
    R("extra close", "[]]", "[ ]", "00", JSON_TRAILING, 2),
    R("two strings", "\"a\"\"b\"", "S\"a\"", "0", JSON_TRAILING, 3),
    R("two objects", "{} {}", "{ }", "00", JSON_TRAILING, 3),
    R("NUL after value", "\"a\"\0", "S\"a\"", "0", JSON_TRAILING, 3),
    R("comma after value", "1,", "N1", "0", JSON_TRAILING, 1),
    /* literals */
    R("truncated true", "tru", "", "", JSON_TRUNCATED, 3),
    R("truncated t", "t", "", "", JSON_TRUNCATED, 1),
    R("truncated false", "fals", "", "", JSON_TRUNCATED, 4),
    R("null with digit", "nul1", "", "", JSON_LITERAL, 3),
    R("true then letter", "truex", "T", "0", JSON_TRAILING, 4),
    R("null doubled l", "nulll", "Z", "0", JSON_TRAILING, 4),
    R("false misspelt", "falze", "", "", JSON_LITERAL, 3),
    R("nan", "nan", "", "", JSON_LITERAL, 1),
    R("capital True", "True", "", "", JSON_SYNTAX, 0),
    R("truncated literal in array", "[tru]", "[", "0", JSON_LITERAL, 4),
    R("literals without comma", "[truefalse]", "[ T", "01", JSON_SYNTAX, 5),
    R("literal as key", "{true:1}", "{", "0", JSON_SYNTAX, 1),
    /* strings: control characters */
    R("raw control 0x01", "\"a\x01" "b\"", "", "", JSON_CTRL, 2),
    R("raw control 0x1F", "\"\x1F\"", "", "", JSON_CTRL, 1),
    R("raw newline", "\"a\nb\"", "", "", JSON_CTRL, 2),
    R("raw tab", "\"\t\"", "", "", JSON_CTRL, 1),
    R("raw NUL", "[\"\0\"]", "[", "0", JSON_CTRL, 2),
    R("raw control in key", "{\"\r\":1}", "{", "0", JSON_CTRL, 2),
    /* strings: escapes */
    R("unknown escape", "\"\\x\"", "", "", JSON_ESCAPE, 2),
    R("capital U escape", "\"\\U0041\"", "", "", JSON_ESCAPE, 2),
    R("escaped apostrophe", "\"\\'\"", "", "", JSON_ESCAPE, 2),
    R("escaped space", "\"\\ \"", "", "", JSON_ESCAPE, 2),
    R("escaped newline", "\"\\\n\"", "", "", JSON_ESCAPE, 2),
    R("bad hex digit", "\"\\u12G4\"", "", "", JSON_ESCAPE, 5),
    R("short u escape at quote", "\"\\u12\"", "", "", JSON_ESCAPE, 5),
    R("u escape at quote", "\"\\u\"", "", "", JSON_ESCAPE, 3),
    R("bad escape in key", "{\"\\a\":1}", "{", "0", JSON_ESCAPE, 3),
    R("truncated after backslash", "\"\\", "", "", JSON_TRUNCATED, 2),
    R("truncated in u escape", "\"\\u00", "", "", JSON_TRUNCATED, 5),
    R("truncated string", "\"abc", "", "", JSON_TRUNCATED, 4),
    R("truncated at open quote", "\"", "", "", JSON_TRUNCATED, 1),
    R("truncated key", "{\"ab", "{", "0", JSON_TRUNCATED, 4),
    /* strings: surrogates */
    R("lone high at quote", "\"\\ud800\"", "", "", JSON_SURROGATE, 7),
    R("lone low", "\"\\udc00\"", "", "", JSON_SURROGATE, 6),
    R("lone low upper", "\"\\uDFFF\"", "", "", JSON_SURROGATE, 6),
    R("high then BMP escape", "\"\\ud800\\u0041\"", "", "", JSON_SURROGATE, 12),
    R("high then raw letter", "\"\\ud800x\"", "", "", JSON_SURROGATE, 7),
    R("high then high", "\"\\ud800\\ud800\"", "", "", JSON_SURROGATE, 12),
    R("high then n escape", "\"\\ud800\\n\"", "", "", JSON_SURROGATE, 8),
    R("high then unknown escape", "\"\\ud800\\x\"", "", "", JSON_SURROGATE, 8),
    R("high then bad hex", "\"\\ud800\\uZ000\"", "", "", JSON_ESCAPE, 9),
    R("low then high", "\"\\udc00\\ud800\"", "", "", JSON_SURROGATE, 6),
    R("lone high in key", "{\"\\uDBFF\":1}", "{", "0", JSON_SURROGATE, 8),
    R("high truncated", "\"\\ud800", "", "", JSON_TRUNCATED, 7),
    R("high then backslash truncated", "\"\\ud800\\", "", "", JSON_TRUNCATED, 8),
    R("high then u truncated", "\"\\ud800\\udc", "", "", JSON_TRUNCATED, 11),
    /* strings: UTF-8 */
    R("overlong slash C0 AF", "\"\xC0\xAF\"", "", "", JSON_UTF8, 1),
    R("overlong C1 BF", "\"\xC1\xBF\"", "", "", JSON_UTF8, 1),
    R("overlong E0 80 AF", "\"\xE0\x80\xAF\"", "", "", JSON_UTF8, 2),
    R("overlong E0 9F BF", "\"\xE0\x9F\xBF\"", "", "", JSON_UTF8, 2),
    R("overlong F0 8F BF BF", "\"\xF0\x8F\xBF\xBF\"", "", "", JSON_UTF8, 2),
    R("encoded surrogate ED A0 80", "\"\xED\xA0\x80\"", "", "", JSON_UTF8, 2),
    R("encoded surrogate ED BF BF", "\"\xED\xBF\xBF\"", "", "", JSON_UTF8, 2),
    R("above U+10FFFF F4 90 80 80", "\"\xF4\x90\x80\x80\"", "", "", JSON_UTF8, 2),
    R("lead F5", "\"\xF5\x80\x80\x80\"", "", "", JSON_UTF8, 1),
    R("lead FF", "\"\xFF\"", "", "", JSON_UTF8, 1),
    R("lead F8", "\"\xF8\x88\x80\x80\x80\"", "", "", JSON_UTF8, 1),
    R("lead FB", "\"\xFB\"", "", "", JSON_UTF8, 1),
    R("lead FC", "\"\xFC\x84\x80\x80\x80\x80\"", "", "", JSON_UTF8, 1),
    R("lead FD", "\"\xFD\"", "", "", JSON_UTF8, 1),
    R("lead FE", "\"a\xFE\"", "", "", JSON_UTF8, 2),
    R("stray continuation", "\"\x80\"", "", "", JSON_UTF8, 1),
    R("stray continuation after ascii", "\"a\xBF\"", "", "", JSON_UTF8, 2),
    R("continuation after complete char", "\"\xC3\xA9\xA9\"", "", "", JSON_UTF8, 3),
    R("truncated 2-byte at quote", "\"\xC3\"", "", "", JSON_UTF8, 2),
    R("truncated 3-byte at quote", "\"\xE2\x82\"", "", "", JSON_UTF8, 3),
    R("truncated 4-byte at quote", "\"\xF0\x9F\x98\"", "", "", JSON_UTF8, 4),
    R("truncated 2-byte by ascii", "\"\xC3" "A\"", "", "", JSON_UTF8, 2),
    R("truncated 2-byte by backslash", "\"\xC3\\n\"", "", "", JSON_UTF8, 2),
    R("truncated 3-byte by control", "\"\xE2\x01\"", "", "", JSON_UTF8, 2),
    R("bad utf-8 in key", "{\"\xFF\":1}", "{", "0", JSON_UTF8, 2),
    R("truncated multibyte at end of input", "\"\xE2\x82", "", "", JSON_TRUNCATED, 3),
};

START_TEST(test_rows) {
  const row *t = &rows[_i];
  char label[160];
  snprintf(label, sizeof label, "line %d (%s)", t->line, t->label);
  run_t ref;
  ref_parse(t->in, t->len, t->max_depth, &ref);
  char trace[2048], depths[512];
  render(&ref, trace, sizeof trace, depths, sizeof depths);
  /* The table and the reference agree... */
  ck_assert_msg(ref.err == t->err && ref.erroff == t->off && !strcmp(trace, t->trace) &&
                    !strcmp(depths, t->depths),
                "%s: reference gives %s @%" PRIu64 " [%s] depths %s; table says %s @%" PRIu64
                " [%s] depths %s",
                label, ts_err_name(ref.err), ref.erroff, trace, depths, ts_err_name(t->err),
                t->off, t->trace, t->depths);
  /* ...and the tokenizer agrees with both (offsets included), however the input is cut. */
  check_all_splits(t->in, t->len, t->max_depth, &ref, label);
  run_free(&ref);
}
END_TEST

/* ---- programmatic cases ----------------------------------------------------------------- */

static char *nest(uint32_t n, size_t *len, int objects) {
  char *s = malloc(8 * (size_t)n + 8);
  ck_assert_ptr_nonnull(s);
  size_t k = 0;
  /* [[...[]...]] or {"k":{"k":...{}...}}: the i-th opener is at i or 5 * i. */
  for (uint32_t i = 0; i < n; i++) {
    if (objects && i) memcpy(s + k, "\"k\":", 4), k += 4;
    s[k++] = objects ? '{' : '[';
  }
  for (uint32_t i = 0; i < n; i++) s[k++] = objects ? '}' : ']';
  *len = k;
  return s;
}

/* Depth limits at and one past: the default, a small one, and the cap. */
START_TEST(test_depth_limits) {
  static const struct {
    uint32_t arg, limit;
  } lims[] = {{0, TS_JSON_DEFAULT_MAX_DEPTH},
              {1, 1},
              {7, 7},
              {TS_JSON_MAX_DEPTH_CAP, TS_JSON_MAX_DEPTH_CAP}};
  for (size_t l = 0; l < sizeof lims / sizeof lims[0]; l++) {
    for (int objects = 0; objects < 2; objects++) {
      for (uint32_t n = lims[l].limit; n <= lims[l].limit + 1; n++) {
        size_t len;
        char *doc = nest(n, &len, objects);
        char label[120];
        snprintf(label, sizeof label, "%s nested %u deep, limit %u (arg %u)",
                 objects ? "objects" : "arrays", n, lims[l].limit, lims[l].arg);
        run_t ref;
        ref_parse(doc, len, lims[l].arg, &ref);
        if (n == lims[l].limit) {
          ck_assert_msg(ref.err == 0, "%s: reference rejects", label);
        } else {
          /* The opener that goes one past the limit. */
          uint64_t off = objects ? (uint64_t)5 * lims[l].limit : lims[l].limit;
          ck_assert_msg(ref.err == TS_E_JSON_DEPTH && ref.erroff == off,
                        "%s: reference gives %s @%" PRIu64 ", want json_depth @%" PRIu64, label,
                        ts_err_name(ref.err), ref.erroff, off);
        }
        if (lims[l].limit > 200) {
          /* The cap: whole, byte by byte and a few chunk sizes (all 31 would be slow). */
          static const size_t ks[] = {0, 1, 3, 16, 31};
          for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
            size_t *cuts = malloc(len * sizeof *cuts), nc = 0;
            for (size_t c = ks[i]; ks[i] && c < len; c += ks[i]) cuts[nc++] = c;
            run_t r;
            char what[200];
            snprintf(what, sizeof what, "%s, chunks of %zu", label, ks[i]);
            run_doc(doc, len, lims[l].arg, cuts, nc, 0, &r, what);
            same_runs(&ref, &r, what);
            run_free(&r);
            free(cuts);
          }
        } else {
          check_all_splits(doc, len, lims[l].arg, &ref, label);
        }
        run_free(&ref);
        free(doc);
      }
    }
  }
}
END_TEST

START_TEST(test_init) {
  ts_json_tok t;
  run_t r;
  run_init(&r, 8);
  ck_assert_int_eq(ts_json_tok_init(&t, TS_JSON_MAX_DEPTH_CAP + 1, record, &r), TS_E_INVAL);
  ck_assert_int_eq(ts_json_tok_init(&t, UINT32_MAX, record, &r), TS_E_INVAL);
  ck_assert_int_eq(ts_json_tok_init(&t, 5, NULL, &r), TS_E_INVAL);
  ck_assert_int_eq(ts_json_tok_init(&t, 0, NULL, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_json_tok_init(&t, TS_JSON_MAX_DEPTH_CAP, record, &r), TS_E_OK);
  ck_assert_int_eq(ts_json_tok_init(&t, 1, record, &r), TS_E_OK);
  /* user may be NULL. A tokenizer can be re-initialised after use. */
  static const char deep[] = "[[", ok[] = "[[1]]";
  r.chunk = deep, r.chunk_len = 2, r.chunk_start = 0;
  ck_assert_int_eq(ts_json_tok_feed(&t, deep, 2), TS_E_JSON_DEPTH);
  ck_assert_uint_eq(ts_json_tok_error_offset(&t), 1);
  ck_assert_int_eq(ts_json_tok_init(&t, 0, record, &r), TS_E_OK);
  ck_assert_int_eq(ts_json_tok_error(&t), 0);
  ck_assert_uint_eq(ts_json_tok_offset(&t), 0);
  r.ntoks = 0, r.plen = 0, r.open = 0;
  r.chunk = ok, r.chunk_len = 5, r.chunk_start = 0;
  ck_assert_int_eq(ts_json_tok_feed(&t, ok, 5), TS_E_OK);
  r.in_finish = 1;
  ck_assert_int_eq(ts_json_tok_finish(&t), TS_E_OK);
  ck_assert_uint_eq(r.ntoks, 5);
  ck_assert_msg(!r.viol[0], "%s", r.viol);
  run_free(&r);
}
END_TEST

/* Aborting from the callback, at every callback of a document, in a few splits. */
START_TEST(test_abort) {
  /* "c" is long enough for small chunks to take feed's string fast path */
  static const char doc[] =
      "{\"a\":[1,\"xy\",true],\"b\":-2.5,\"c\":\"a long string: \\n \\u00e9 \xC3\xA9 and more\"}";
  static const size_t ks[] = {1, 2, 4, 5, 7, 8, 64};
  size_t len = sizeof doc - 1;
  int any = 1;
  for (uint64_t at = 1; any; at++) {
    any = 0;
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
      size_t k = ks[ki];
      run_t r;
      run_init(&r, len);
      r.abort_at = at;
      ts_json_tok t;
      ck_assert_int_eq(ts_json_tok_init(&t, 0, record, &r), TS_E_OK);
      int rc = TS_E_OK;
      for (size_t off = 0; off < len && rc == TS_E_OK; off += k) {
        size_t n = len - off < k ? len - off : k;
        r.chunk = doc + off, r.chunk_len = n, r.chunk_start = off;
        rc = ts_json_tok_feed(&t, doc + off, n);
      }
      if (rc == TS_E_OK) {
        r.in_finish = 1;
        rc = ts_json_tok_finish(&t);
        r.in_finish = 0;
      }
      ck_assert_msg(!r.viol[0], "abort at %" PRIu64 ": %s", at, r.viol);
      if (r.ncb < at) {
        /* This split has fewer callbacks than `at`: nothing to abort. */
        ck_assert_int_eq(rc, TS_E_OK);
        run_free(&r);
        continue;
      }
      any = 1;
      ck_assert_msg(rc == TS_E_ABORTED, "abort at %" PRIu64 ", chunks %zu: rc %d", at, k, rc);
      ck_assert_uint_eq(r.ncb, at);
      ck_assert_int_eq(ts_json_tok_error(&t), TS_E_ABORTED);
      ck_assert_int_eq(ts_json_tok_feed(&t, "1", 1), TS_E_ABORTED);
      ck_assert_int_eq(ts_json_tok_finish(&t), TS_E_ABORTED);
      ck_assert_int_eq(ts_json_tok_feed(&t, "1", 1), TS_E_ABORTED);
      ck_assert_uint_eq(r.ncb, at);
      run_free(&r);
    }
  }
}
END_TEST

/* A top-level number's LAST fragment comes from finish; aborting there too. */
START_TEST(test_finish_number) {
  run_t r;
  run_init(&r, 8);
  ts_json_tok t;
  ck_assert_int_eq(ts_json_tok_init(&t, 0, record, &r), TS_E_OK);
  static const char num[] = "-12", open[] = "[", pair[] = "[]";
  r.chunk = num, r.chunk_len = 3;
  ck_assert_int_eq(ts_json_tok_feed(&t, num, 3), TS_E_OK);
  ck_assert_int_eq(ts_json_tok_done(&t), 0);
  ck_assert_uint_eq(r.ntoks, 1);
  ck_assert_int_eq(r.open, 1);
  uint64_t before = r.ncb;
  r.in_finish = 1;
  r.abort_at = before + 1;
  ck_assert_int_eq(ts_json_tok_finish(&t), TS_E_ABORTED);
  ck_assert_uint_eq(r.ncb, before + 1);
  ck_assert_int_eq(r.open, 0);
  ck_assert_int_eq(ts_json_tok_finish(&t), TS_E_ABORTED);
  ck_assert_int_eq(ts_json_tok_feed(&t, " ", 1), TS_E_ABORTED);
  ck_assert_msg(!r.viol[0], "%s", r.viol);
  run_free(&r);

  /* finish twice after an error returns the first result; feed after it too. */
  run_init(&r, 8);
  ck_assert_int_eq(ts_json_tok_init(&t, 0, record, &r), TS_E_OK);
  r.chunk = open, r.chunk_len = 1;
  ck_assert_int_eq(ts_json_tok_feed(&t, open, 1), TS_E_OK);
  ck_assert_int_eq(ts_json_tok_finish(&t), TS_E_JSON_TRUNCATED);
  ck_assert_uint_eq(ts_json_tok_error_offset(&t), 1);
  ck_assert_int_eq(ts_json_tok_finish(&t), TS_E_JSON_TRUNCATED);
  ck_assert_int_eq(ts_json_tok_feed(&t, "]", 1), TS_E_JSON_TRUNCATED);
  run_free(&r);

  /* finish on a fresh tokenizer: empty. */
  run_init(&r, 8);
  ck_assert_int_eq(ts_json_tok_init(&t, 0, record, &r), TS_E_OK);
  ck_assert_int_eq(ts_json_tok_finish(&t), TS_E_JSON_EMPTY);
  ck_assert_uint_eq(ts_json_tok_error_offset(&t), 0);
  ck_assert_int_eq(ts_json_tok_finish(&t), TS_E_JSON_EMPTY);
  run_free(&r);

  /* A clean finish, twice, then feed is refused (also with len 0). */
  run_init(&r, 8);
  ck_assert_int_eq(ts_json_tok_init(&t, 0, record, &r), TS_E_OK);
  r.chunk = pair, r.chunk_len = 2;
  ck_assert_int_eq(ts_json_tok_feed(&t, pair, 2), TS_E_OK);
  ck_assert_int_eq(ts_json_tok_done(&t), 1);
  ck_assert_int_eq(ts_json_tok_finish(&t), TS_E_OK);
  ck_assert_int_eq(ts_json_tok_finish(&t), TS_E_OK);
  ck_assert_int_eq(ts_json_tok_feed(&t, "[", 1), TS_E_JSON_FINISHED);
  ck_assert_int_eq(ts_json_tok_feed(&t, NULL, 0), TS_E_JSON_FINISHED);
  ck_assert_uint_eq(r.ntoks, 2);
  run_free(&r);
}
END_TEST

/* ---- random documents ------------------------------------------------------------------- */

static uint64_t rng;
static uint32_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}
static uint32_t rn(uint32_t n) { return rnd() % n; }

/* Documents are built in the string builder of support/sb.h. */

static void gen_ws(sb *s) {
  if (rn(3)) return;
  for (uint32_t k = 1 + rn(3); k; k--) sb_putc(s, " \t\n\r"[rn(4)]);
}

static void put_utf8(sb *s, uint32_t cp) {
  char o[4];
  size_t n;
  if (cp < 0x80) o[0] = (char)cp, n = 1;
  else if (cp < 0x800) o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
  else if (cp < 0x10000)
    o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
    o[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
  else
    o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 0x3F)),
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
  sb_add(s, o, n);
}

static void gen_string(sb *s) {
  static const uint32_t edges[] = {0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF};
  sb_putc(s, '"');
  for (uint32_t k = rn(4) ? rn(6) : rn(40); k; k--) {
    char tmp[16];
    switch (rn(8)) {
    case 0: case 1: case 2: { /* a run of plain ASCII */
      for (uint32_t m = 1 + rn(rn(4) ? 6 : 40); m; m--) {
        char c = (char)(0x20 + rn(95));
        sb_putc(s, c == '"' || c == '\\' ? 'q' : c);
      }
      break;
    }
    case 3:
      tmp[0] = '\\', tmp[1] = "\"\\/bfnrt"[rn(8)];
      sb_add(s, tmp, 2);
      break;
    case 4: { /* \u, not a surrogate */
      uint32_t cp;
      do cp = rn(4) ? rn(0x10000) : rn(0x80); while (cp >= 0xD800 && cp <= 0xDFFF);
      snprintf(tmp, sizeof tmp, rn(2) ? "\\u%04x" : "\\u%04X", (unsigned)cp);
      sb_puts(s, tmp);
      break;
    }
    case 5: { /* surrogate pair */
      uint32_t cp = 0x10000 + rn(0x100000);
      unsigned hi = 0xD800 + ((cp - 0x10000) >> 10), lo = 0xDC00 + ((cp - 0x10000) & 0x3FF);
      snprintf(tmp, sizeof tmp, rn(2) ? "\\u%04x" : "\\u%04X", hi);
      sb_puts(s, tmp);
      snprintf(tmp, sizeof tmp, rn(2) ? "\\u%04x" : "\\u%04X", lo);
      sb_puts(s, tmp);
      break;
    }
    default: { /* raw UTF-8, often at a boundary */
      uint32_t cp;
      if (rn(2)) cp = edges[rn(8)] - rn(2);
      else do cp = 0x80 + rn(0x10FF80); while (cp >= 0xD800 && cp <= 0xDFFF);
      if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xD7FF;
      if (cp < 0x80) cp = 0x80;
      put_utf8(s, cp);
      break;
    }
    }
  }
  sb_putc(s, '"');
}

static void gen_digits(sb *s, uint32_t max) {
  for (uint32_t k = 1 + rn(max); k; k--) sb_putc(s, (char)('0' + rn(10)));
}

static void gen_number(sb *s) {
  if (rn(3) == 0) sb_putc(s, '-');
  if (rn(3) == 0) sb_putc(s, '0');
  else sb_putc(s, (char)('1' + rn(9))), rn(2) ? gen_digits(s, 5) : (void)0;
  if (rn(3) == 0) sb_putc(s, '.'), gen_digits(s, 4);
  if (rn(3) == 0) {
    sb_putc(s, rn(2) ? 'e' : 'E');
    if (rn(2)) sb_putc(s, rn(2) ? '+' : '-');
    gen_digits(s, 3);
  }
}

static void gen_value(sb *s, int depth) {
  uint32_t c = depth >= 6 ? 4 + rn(6) : rn(10);
  switch (c) {
  case 0: case 1: case 2: {
    int obj = c == 0 || (c == 2 && rn(2));
    sb_putc(s, obj ? '{' : '[');
    gen_ws(s);
    for (uint32_t k = rn(5), i = 0; i < k; i++) {
      if (i) sb_putc(s, ','), gen_ws(s);
      if (obj) gen_string(s), gen_ws(s), sb_putc(s, ':'), gen_ws(s);
      gen_value(s, depth + 1);
      gen_ws(s);
    }
    sb_putc(s, obj ? '}' : ']');
    break;
  }
  case 3: case 4: case 5: gen_string(s); break;
  case 6: case 7: gen_number(s); break;
  default: sb_puts(s, (const char *[]){"true", "false", "null"}[rn(3)]); break;
  }
}

static void mutate(sb *s) {
  static const char interesting[] =
      "\"\\{}[],:0123456789-+.eEtrufalsnxu \t\n\r\x01\x1F\x7F\x80\xBF\xC0\xC2\xDF\xE0\xED\xEF"
      "\xF0\xF4\xF5\xFF";
  for (uint32_t m = 1 + rn(2); m; m--) {
    if (s->len == 0) {
      sb_putc(s, interesting[rn(sizeof interesting)]); /* may be the NUL */
      continue;
    }
    size_t at = rn((uint32_t)s->len);
    switch (rn(6)) {
    case 0: case 1: /* replace */
      s->p[at] = rn(4) ? interesting[rn(sizeof interesting)] : (char)rn(256);
      break;
    case 2: /* delete */
      memmove(s->p + at, s->p + at + 1, s->len - at - 1);
      s->len--;
      break;
    case 3: { /* insert */
      char c = interesting[rn(sizeof interesting)];
      sb_putc(s, 0);
      memmove(s->p + at + 1, s->p + at, s->len - at - 1);
      s->p[at] = c;
      break;
    }
    case 4: /* truncate */
      s->len = at;
      break;
    default: { /* insert a surrogate escape: lone, reversed, or a pair broken by chunking */
      const char *e = (const char *[]){"\\ud800", "\\udc00", "\\uDBFF\\uDFFF", "\\u"}[rn(4)];
      size_t el = strlen(e);
      for (size_t i = 0; i < el; i++) sb_putc(s, 0);
      memmove(s->p + at + el, s->p + at, s->len - at - el);
      memcpy(s->p + at, e, el);
      break;
    }
    }
  }
}

/* Compares the tokenizer against the reference for one document at random cuts. */
static void differential(const char *doc, size_t len, uint32_t max_depth, int iter, int variant) {
  run_t ref, r;
  ref_parse(doc, len, max_depth, &ref);
  size_t *cuts = malloc((len + 1) * sizeof *cuts), nc = 0;
  CHECK(cuts, "out of memory");
  if (len > 1 && rn(8) == 0) {
    for (size_t i = 1; i < len; i++) cuts[nc++] = i;
  } else if (len > 1) {
    uint32_t want = rn(8);
    size_t pos = 0;
    while (want-- && pos + 1 < len) {
      pos += 1 + rn((uint32_t)(len - pos - 1 < 24 ? len - pos - 1 : 24));
      if (pos < len) cuts[nc++] = pos;
    }
  }
  char what[120];
  snprintf(what, sizeof what, "random doc %d variant %d (max_depth %u, %zu cuts, len %zu)", iter,
           variant, max_depth, nc, len);
  run_doc(doc, len, max_depth, cuts, nc, rn(16) == 0, &r, what);
  same_runs(&ref, &r, what);
  /* Every string the tokenizer accepted decodes: its escapes were checked. */
  if (!r.err) {
    for (size_t i = 0; i < r.ntoks; i++) {
      if (r.toks[i].kind != TS_JSON_STRING && r.toks[i].kind != TS_JSON_KEY) continue;
      char *out = malloc(r.toks[i].tlen + TS_JSON_UNESCAPE_SLACK);
      ssize_t n = ts_json_unescape_all(r.pool + r.toks[i].tstart, r.toks[i].tlen, out);
      CHECK(n >= 0, "%s: token %zu does not decode (%s)", what, i, ts_err_name((int)n));
      free(out);
    }
  }
  run_free(&ref);
  run_free(&r);
  free(cuts);
}

START_TEST(test_random) {
  uint64_t seed = 0x5EEDC0FFEE123457ull;
  const char *env = getenv("TS_TEST_SEED");
  if (env) seed = strtoull(env, NULL, 0);
  printf("json_tok_test: random seed 0x%" PRIx64 " (set TS_TEST_SEED to change)\n", seed);
  fflush(stdout);
  rng = seed ? seed : 1;
  sb s = {0};
  int n_ok = 0, n_err = 0;
  for (int iter = 0; iter < 3000; iter++) {
    s.len = 0;
    gen_ws(&s);
    gen_value(&s, 0);
    gen_ws(&s);
    uint32_t max_depth = rn(4) ? 0 : 1 + rn(6);
    differential(s.p, s.len, max_depth, iter, 0);
    for (int v = 1; v <= 2; v++) {
      sb m = {0};
      sb_add(&m, s.p, s.len);
      mutate(&m);
      run_t ref;
      ref_parse(m.p, m.len, max_depth, &ref);
      ref.err ? n_err++ : n_ok++;
      run_free(&ref);
      differential(m.p, m.len, max_depth, iter, v);
      free(m.p);
    }
  }
  printf("json_tok_test: %d mutated documents valid, %d invalid\n", n_ok, n_err);
  free(s.p);
}
END_TEST

/* Long strings: every position of a special byte in bodies of many lengths, so a
 * many-bytes-at-a-time scan is exercised at every alignment and boundary. */
START_TEST(test_string_scan) {
  static const char *const specials[] = {"\x01", "\x1F", "\"", "\\n", "\\u00e9", "\xC3\xA9",
                                         "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\x80", "\xFF",
                                         "\x7F", "\xED\xA0\x80", "\\x"};
  rng = 42;
  sb s = {0};
  for (size_t sp = 0; sp < sizeof specials / sizeof specials[0]; sp++) {
    for (size_t L = 0; L <= 70; L++) {
      for (size_t p = 0; p <= L; p++) {
        s.len = 0;
        sb_putc(&s, '"');
        for (size_t i = 0; i < p; i++) sb_putc(&s, (char)('a' + i % 26));
        sb_puts(&s, specials[sp]);
        for (size_t i = p; i < L; i++) sb_putc(&s, (char)('A' + i % 26));
        sb_putc(&s, '"');
        run_t ref, r;
        ref_parse(s.p, s.len, 0, &ref);
        char what[120];
        snprintf(what, sizeof what, "string scan special %zu len %zu pos %zu", sp, L, p);
        /* whole, and cut once at every position around the special byte */
        run_doc(s.p, s.len, 0, NULL, 0, 0, &r, what);
        same_runs(&ref, &r, what);
        run_free(&r);
        size_t cut = 1 + rn((uint32_t)(s.len > 1 ? s.len - 1 : 1));
        if (cut < s.len) {
          run_doc(s.p, s.len, 0, &cut, 1, 0, &r, what);
          same_runs(&ref, &r, what);
          run_free(&r);
        }
        run_free(&ref);
      }
    }
  }
  free(s.p);
}
END_TEST

/* Clusters of escapes and characters for the string scans' tests: the first 16 are
 * valid, the rest each hold one error. */
/* In C source: "\\\\" is two backslashes (one escaped backslash), and so on. */
static const char *const clusters[] = {
    "\\\\", "\\\\\\\\", "\\\\\\\\\\\\", "\\\\\\\"", "\\\\\\\\\\\\\\\"", "\\\\\\\\\\\\\\\\\\\\\\\\",
    "\\\\\\\\\\\\\\\\\\\\\\n", "\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"",
    "\\n\\t\\r\\b\\f\\/\\\\\\\"", "\\\\\\\\\\\"\\\\",
    "\\\\\\u00e9\\\\", "\\u00e9\\n\\uD83D\\uDE00\\t",
    "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xDF\xBF\xEF\xBF\xBF\xF4\x8F\xBF\xBF",
    "\xE2\x82\xAC\\n\xC3\xA9\\\"\xF0\x9F\x98\x80\\\\",
    "\xED\x9F\xBF\xEE\x80\x80\xE0\xA0\x80\xF0\x90\x80\x80\xC2\x80",
    "\\uABCD\\uabcd\\u0000\\uD7FF\\uE000\\udbff\\udc00\\u00E9\\ud7ff\\uFFFF",
    /* bad (from the 17th on): each is found by the DFA at the byte it always finds it at */
    "\\n\\q", "\\\\\\\\\\x", "\\n\\\x01", "\xC3\xA9\xC3\x28", "\xE2\x82\xAC\xED\xA0\x80",
    "\xE0\x9F\xBF", "\xF0\x8F\xBF\xBF", "\xF4\x90\x80\x80", "\xC1\xBF", "\xC3\xA9\x80",
    "\xE2\x82", "\xF0\x9F\x98\\n", "\\n\x1F\\n", "\\u12G4", "\xFF\\n", "\\\\\\",
    "\\uDC00", "\\udfff", "\\u00e\\n", "\\uD800\\n", "\\u00G0",
};

#define NGOOD 16
#define NCLUSTERS (sizeof clusters / sizeof clusters[0])

/* The string scan's mask walk (json_tok.c, scan_string): inside each 16-byte block it
 * steps over one-character escapes and whole UTF-8 characters without leaving the
 * block, resolves runs of backslashes pair by pair, lets an escape or a character run
 * into the next block, and leaves \u escapes, bad bytes and anything the chunk cuts to
 * the DFA. So: clusters of escapes and characters (runs of 1 to 6 backslashes, escaped
 * quotes next to real ones, characters of every length back to back, and bad ones in
 * the middle of good ones), at every offset 0..33 of a string long enough for whole
 * blocks before and after them, fed whole, byte by byte and at every split 2..31: the
 * same tokens and errors, at the same offsets, as the reference. */
START_TEST(test_string_masks) {
  sb s = {0};
  for (size_t c = 0; c < NCLUSTERS; c++) {
    for (size_t at = 0; at <= 33; at++) {
      s.len = 0;
      sb_puts(&s, "[\"");
      for (size_t i = 0; i < at; i++) sb_putc(&s, (char)('a' + i % 26));
      sb_puts(&s, clusters[c]);
      for (size_t i = 0; i < 37; i++) sb_putc(&s, (char)('A' + i % 26));
      sb_puts(&s, "\",\"");
      sb_puts(&s, clusters[c]); /* at the very start of a string too */
      sb_puts(&s, "\"]");
      run_t ref;
      ref_parse(s.p, s.len, 0, &ref);
      CHECK((ref.err != 0) == (c >= NGOOD), "string masks cluster %zu: reference err %d", c, ref.err);
      char label[96];
      snprintf(label, sizeof label, "string masks cluster %zu at %zu", c, at);
      check_all_splits(s.p, s.len, 0, &ref, label);
      run_free(&ref);
    }
  }
  free(s.p);
}
END_TEST

/* A string that continues across many feeds, with every kind of escape and UTF-8
 * character in it (and, in the bad variants, every kind of error), cut at every pair of
 * places: so every escape and character is split at every byte, into two and three
 * feeds, and chunks of every length start and end inside and between them. Feeds of a
 * few bytes inside a string take json_tok.c's fast path (whole chunk through the DFA,
 * or one word test), longer ones the machine: both must agree with the reference. */
START_TEST(test_string_across_feeds) {
  static const char *const pieces[] = {
      "\\n", "\\\"", "\\\\", "\\/", "\\u00e9", "\\uD83D\\uDE00", "\xC3\xA9", "\xE2\x82\xAC",
      "\xF0\x9F\x98\x80", "\xED\x9F\xBF", "\xF4\x8F\xBF\xBF", "\\uFFFF",
  };
  static const char *const bad[] = {
      "\\uD83D\\u0041", "\\uDE00x", "\\uD83Dx", "\\x", "\\u12G4", "\xC3\x28", "\xED\xA0\x80",
      "\xE0\x80\x80", "\xF4\x90\x80\x80", "\x01", "\xC0\xAF", "\xFF",
  };
  sb s = {0};
  for (int variant = 0; variant < 2; variant++) {
    size_t n = variant ? sizeof bad / sizeof bad[0] : 1;
    for (size_t b = 0; b < n; b++) {
      s.len = 0;
      sb_puts(&s, "{\"k\":\"ab");
      for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        sb_puts(&s, pieces[i]);
        sb_putc(&s, (char)('c' + i % 20));
        if (variant && i == 5) sb_puts(&s, bad[b]);
      }
      sb_puts(&s, "yz\",\"n\":1}");
      run_t ref;
      ref_parse(s.p, s.len, 0, &ref);
      CHECK((ref.err != 0) == variant, "string across feeds %d/%zu: reference err %d", variant,
            b, ref.err);
      char label[96];
      snprintf(label, sizeof label, "string across feeds %d/%zu", variant, b);
      check_all_splits(s.p, s.len, 0, &ref, label);
      /* three feeds, cut at every pair of places */
      for (size_t i = 1; i < s.len; i++) {
        for (size_t j = i; j < s.len; j++) {
          size_t cuts[2] = {i, j};
          run_t r;
          char what[200];
          snprintf(what, sizeof what, "%s, cut at %zu and %zu", label, i, j);
          run_doc(s.p, s.len, 0, cuts, i == j ? 1 : 2, 0, &r, what);
          same_runs(&ref, &r, what);
          run_free(&r);
        }
      }
      run_free(&ref);
    }
  }
  free(s.p);
}
END_TEST

/* Feeds of 1 to 9 bytes inside strings (json_tok.c, ts_json_tok_feed and the string
 * functions before it): 4 to 8 bytes between characters take one word test (str_short;
 * str_short_first when the string has reported nothing yet, t->mode MODE_FIRST: the
 * chunk before ended at its opening quote), 1 to 8 bytes anywhere else run through
 * the DFA in straight-line steps (str_tiny, and str_short after its first stop), and an
 * exit of the DFA hands the chunk to str_more. So every cluster of escapes and
 * characters (and every bad one), in a long string and as a whole short string and
 * key, is fed in chunks whose sizes run through an irregular cycle of 1 to 9 bytes,
 * from every starting point of the cycle and every lead of 0 to 8 bytes: every length
 * at every offset and DFA state, chunks that begin just after an opening quote, and
 * chunks that end at or just before a closing quote. The same tokens and errors, at
 * the same offsets, as the reference. */
START_TEST(test_short_feeds) {
  static const size_t cycle[] = {4, 1, 5, 8, 2, 6, 3, 7, 9, 4, 5, 4, 8, 6, 1, 7, 2, 3};
  const size_t ncycle = sizeof cycle / sizeof cycle[0];
  sb s = {0};
  for (size_t c = 0; c < NCLUSTERS; c++) {
    s.len = 0;
    sb_puts(&s, "{\"");
    sb_puts(&s, clusters[c]); /* a key that is the cluster */
    sb_puts(&s, "\":[\"ab");
    sb_puts(&s, clusters[c]);
    sb_puts(&s, "cdefghij\",\"");
    sb_puts(&s, clusters[c]); /* a string that is the cluster */
    sb_puts(&s, "\",\"\",\"x\",\"wxyz\",\"");
    for (int k = 0; k < 3; k++) {
      sb_puts(&s, clusters[c]);
      sb_puts(&s, "pq");
    }
    sb_puts(&s, "\",12,\"k\"],\"z\":\"");
    sb_puts(&s, clusters[c]);
    sb_puts(&s, "\"}");
    run_t ref;
    ref_parse(s.p, s.len, 0, &ref);
    CHECK((ref.err != 0) == (c >= NGOOD), "short feeds cluster %zu: reference err %d", c,
          ref.err);
    size_t *cuts = malloc(s.len * sizeof *cuts);
    CHECK(cuts, "out of memory");
    for (size_t start = 0; start < ncycle; start++) {
      for (size_t lead = 0; lead <= 8; lead++) {
        size_t n = 0, at = lead, k = start;
        if (lead) cuts[n++] = lead;
        for (;;) {
          at += cycle[k++ % ncycle];
          if (at >= s.len) break;
          cuts[n++] = at;
        }
        run_t r;
        char what[120];
        snprintf(what, sizeof what, "short feeds cluster %zu, cycle from %zu, lead %zu", c,
                 start, lead);
        run_doc(s.p, s.len, 0, cuts, n, 0, &r, what);
        same_runs(&ref, &r, what);
        run_free(&r);
      }
    }
    free(cuts);
    run_free(&ref);
  }
  free(s.p);
}
END_TEST

/* The grammar short path (json_tok.c, str_close and gram_run): a chunk of 4 to 8 bytes
 * that continues a string between characters (str_short), or one of 9 to 31 bytes
 * (str_more), and holds its closing quote reports the string's end and then takes,
 * without the machine, a ':' after a key, a ',' after a value, the close of the
 * container, an opening quote whose string the chunk ends inside without a stop byte,
 * a literal (whole or cut by the chunk's end), and a number the chunk ends inside or a
 * ',' '}' ']' ends (and more: see test_grammar_start); anything else goes to the
 * machine at that byte. Each document below puts
 * every one of those (and each way out of them: '.', 'e', '0', '-' at the end, a
 * stop byte in the new string, whitespace, bad bytes) after a closing quote, at
 * nesting depths that cross a byte of the container stack. Each is fed with a chunk of
 * every length 1 to 17 at every offset (the rest in pieces of that length, and whole),
 * so that every chunk end falls inside each step, plus whole, byte by byte and every
 * split 1..31; the same tokens, errors and offsets as the reference. */
static const char *const gram_docs[] = {
    "{\"abcdef\":\"ghijkl\",\"mnopqr\":12345,\"stuvw\":-678,\"x\":[1,\"yy\",-2],"
    "\"zz\":{\"a\":\"b\"},\"q\":\"r\"}",
    "{\"a\":{\"b\":[\"cdefgh\"]},\"i\":[[\"jklmno\"]],\"p\":[\"q\",[\"r\"],{\"s\":\"t\"}]}",
    "[[[[[[[[[[{\"abcdefgh\":\"ijkl\",\"m\":[\"nop\"]}]]]]]]]]],\"q\",{\"rs\":\"tu\"}]",
    "{\"abcd\":0,\"efgh\":-0,\"ijkl\":12.5,\"mnop\":1e5,\"qrst\":-9E+2,\"uv\":7,\"w\":-12}",
    "{\"abcd\":true,\"efgh\":false,\"ijkl\":null,\"mn\":\"\",\"op\":[],\"qr\":{},\"s\":[\"\"],"
    "\"t\":[\"u\",true,\"v\",false,\"w\",null],\"x\":{\"y\":true}}",
    "{\"abcd\":\"ef\\ngh\",\"ij\\\"kl\":\"m\\u00e9n\",\"o\xC3\xA9p\":\"q\",\"r\":\"\xE2\x82\xAC\"}",
    "[ \"abcd\" , \"efgh\" ,\"ij\"\t]",
    "{\"abcd\" : \"efgh\"  ,\"i\":1 ,\"j\" :2}",
    "\"abcdefgh\"",
    "\"abcdefgh\"  \n",
    "[\"abcdefgh\",\"ijklmnop\",123456789,\"qr\",-1]",
    /* bad input after a closing quote */
    "\"abcdefgh\",",
    "\"abcdefgh\"x",
    "{\"abcd\":-x}",
    "{\"abcd\":-}",
    "{\"abcd\":12x}",
    "{\"abcd\":12 x}",
    "{\"abcd\":1}}",
    "{\"abcd\":1]",
    "{\"abcd\"x",
    "{\"abcd\",1}",
    "[\"abcd\"}",
    "[\"abcd\":1]",
    "{\"abcd\":\"e\"]",
    "{\"abcd\":\"e\",}",
    "{\"abcd\":\"efgh\",1}",
    "[\"abcd\",]",
    "{\"abcd\":01}",
    "{\"abcd\":-01}",
    "{\"abcd\":1.}",
    "{\"abcd\":\"efgh\",\"ij\x01\"}",
    "{\"abcd\":\"efgh\",\"ij\xff\"}",
    "{\"abcd\":\"ef\",\"gh\\x\"}",
    "[\"abcd\",\"ef",
    "{\"abcd\":12",
    "{\"abcd\":\"ef\"",
    "{\"abcd\":\"ef\"}}",
    "{\"abcd\":tru}",
    "{\"abcd\":nul,",
    "[\"abcd\",fals]",
    "[\"abcd\",trueX]",
    "[\"abcd\",nulll]",
    "{\"abcd\":t",
};

/* `doc` with one chunk of every length 1 to 17 at every offset (the chunk before it
 * whole, the rest in pieces of that length or whole), and whole, byte by byte and every
 * split 1..31: the same tokens, errors and offsets as the reference. */
static void check_short_chunks(const char *doc, uint32_t max_depth, const char *label) {
  const size_t len = strlen(doc);
  run_t ref;
  ref_parse(doc, len, max_depth, &ref);
  char what[320];
  check_all_splits(doc, len, max_depth, &ref, label);
  size_t *cuts = malloc((len + 2) * sizeof *cuts);
  CHECK(cuts, "out of memory");
  for (size_t k = 1; k <= 17; k++) {
    for (size_t at = 0; at < len; at++) {
      for (int rest = 0; rest < 2; rest++) {
        /* [at, at + k) is one chunk; before it one chunk; after it pieces of k or
         * the rest whole */
        size_t n = 0;
        if (at) cuts[n++] = at;
        for (size_t c = at + k; c < len; c += rest ? len : k) cuts[n++] = c;
        run_t r;
        snprintf(what, sizeof what, "%s, chunk of %zu at %zu, rest %s", label, k, at,
                 rest ? "whole" : "in chunks");
        run_doc(doc, len, max_depth, cuts, n, 0, &r, what);
        same_runs(&ref, &r, what);
        run_free(&r);
      }
    }
  }
  free(cuts);
  run_free(&ref);
}

START_TEST(test_grammar_short) {
  for (size_t d = 0; d < sizeof gram_docs / sizeof gram_docs[0]; d++) {
    const char *doc = gram_docs[d];
    run_t ref;
    ref_parse(doc, strlen(doc), 0, &ref);
    CHECK((ref.err != 0) == (d >= 11), "grammar short doc %zu: reference err %d", d, ref.err);
    run_free(&ref);
    char what[160];
    snprintf(what, sizeof what, "grammar short doc %zu", d);
    check_short_chunks(doc, 0, what);
  }
}
END_TEST

/* A callback that stops the tokenizer at its `at`-th call, noting the token. */
typedef struct {
  uint64_t n, at;
  ts_json_token last;
} stop_at;
static int stop_cb(void *user, const ts_json_token *tok) {
  stop_at *s = user;
  s->last = *tok;
  return ++s->n == s->at;
}

/* Stopping the tokenizer from the callback at every token the grammar short path (or
 * the machine) reports, in chunks of 1 to 17 bytes: TS_E_ABORTED, sticky, recorded at
 * the end of the fragment being reported (a container's close: at its byte), and every
 * byte counted, as the machine does. */
static void check_aborts_upto(const char *doc, size_t d, size_t kmax) {
  const size_t len = strlen(doc);
  for (size_t j = 1; j <= kmax + 1; j++) {
    const size_t k = j <= kmax ? j : len; /* and whole */
    for (uint64_t at = 1;; at++) {
      stop_at s = {0, at, {0}};
      ts_json_tok t;
      ck_assert_int_eq(ts_json_tok_init(&t, 0, stop_cb, &s), TS_E_OK);
      int rc = TS_E_OK;
      size_t fed = 0;
      while (fed < len && rc == TS_E_OK) {
        const size_t n = len - fed < k ? len - fed : k;
        rc = ts_json_tok_feed(&t, doc + fed, n);
        fed += n;
      }
      if (rc == TS_E_OK) rc = ts_json_tok_finish(&t);
      if (s.n < at) {
        ck_assert_int_eq(rc, TS_E_OK);
        break;
      }
      const int single = s.last.kind != TS_JSON_KEY && s.last.kind != TS_JSON_STRING &&
                         s.last.kind != TS_JSON_NUMBER;
      const int bracket = single && s.last.kind <= TS_JSON_ARRAY_END;
      const uint64_t want = s.last.offset + (bracket ? 0 : s.last.len);
      CHECK(rc == TS_E_ABORTED && s.n == at,
            "doc %zu, chunks %zu, abort at %" PRIu64 ": rc %d after %" PRIu64 " calls", d, k,
            at, rc, s.n);
      if (fed < len || s.last.kind != TS_JSON_NUMBER || s.last.len != 0)
        CHECK(ts_json_tok_error_offset(&t) == want,
              "doc %zu, chunks %zu, abort at %" PRIu64 " (kind %u at %" PRIu64
              " len %zu): error offset %" PRIu64 ", want %" PRIu64,
              d, k, at, (unsigned)s.last.kind, s.last.offset, s.last.len,
              ts_json_tok_error_offset(&t), want);
      CHECK(ts_json_tok_offset(&t) == fed, "doc %zu: offset %" PRIu64 " after %zu fed", d,
            ts_json_tok_offset(&t), fed);
      ck_assert_int_eq(ts_json_tok_feed(&t, "1", 1), TS_E_ABORTED);
      ck_assert_int_eq(ts_json_tok_finish(&t), TS_E_ABORTED);
      ck_assert_uint_eq(s.n, at);
    }
  }
}
static void check_aborts(const char *doc, size_t d) { check_aborts_upto(doc, d, 17); }

START_TEST(test_grammar_short_abort) {
  for (size_t d = 0; d < 11; d++) check_aborts(gram_docs[d], d);
}
END_TEST

/* The grammar short path from a chunk's start (json_tok.c, gram_short): a chunk of 1 to
 * 8 bytes that starts outside a string runs gram_run from the state the last chunk left:
 * after a key (':'), after a value (',', the close), where a key or value must come
 * (after '{', '[', ':' or ','), inside an integer or a fraction (its digits go on, a ','
 * '}' or ']' ends it), inside a literal (its letters go on); and gram_run now also opens
 * containers (at depths that cross a byte of the container stack, and up to the depth
 * limit), takes a key or string the chunk holds whole with no stop byte, and a number's
 * fraction. The documents put each of those at every chunk start (each is fed with a
 * chunk of every length 1 to 17 at every offset), every way out of them to the machine
 * (an exponent after digits, a '0', a '-' or '.' at the chunk's end, whitespace, a stop
 * byte in a whole string, a wrong letter), top-level values of every kind, and bad input
 * at each step; the first GRAM_START_GOOD are good JSON. */
#define GRAM_START_GOOD 20
static const char *const gram_start_docs[] = {
    "{\"a\":1.5,\"bc\":-12.25,\"d\":[0.5,3.14159,-7.0,12,-345],\"e\":{\"f\":10.01},\"g\":9}",
    "[1.5,22.75,-3.125,[4.5],{\"g\":6.25},1234567.125,-98765,7]",
    "[[],{},[[]],[{}],{\"a\":[]},{\"b\":{}},[[[[[[[[[[1]]]]]]]]]],"
    "{\"c\":{\"d\":{\"e\":{\"f\":{\"g\":{\"h\":{\"i\":{\"j\":{\"k\":[{}]}}}}}}}}}]",
    "{\"id\":\"x\",\"ab\":\"\",\"\":\"cd\",\"e\":[\"f\",\"\",\"gh\",\"ijklmnopq\"],\"r\":{\"s\":\"t\"}}",
    "{\"a\":\"\\n\",\"b\":\"\xC3\xA9x\",\"\\\"\":1,\"c\":[\"\\u00e9\",\"\xE2\x82\xAC\"],\"d\":\"e\"}",
    "[true,false,null,[true],{\"t\":false},null,{\"n\":null},[false,true]]",
    "[12345.5,123456e2,1234567.25E-1,1.5e3,2E+2,-3e1,0,-0,0.25,-0.5,10]",
    "{ \"a\" : [ 1.5 , true ] , \"b\" : { } ,\"c\":[ ],\"d\":\t12 }",
    "12.5",
    "-1234567",
    "true",
    "\"abcdef\"",
    "[]",
    "{}",
    "[{\"abc\":[{\"de\":[1,[2.5,{\"f\":null}]]}]}]",
    "[1E-7,0e0,-0E+0,0.0e-0,-12.5e+34,0.125E-12,5e123,-7E9]",
    "{\"a\":-0.0e+12,\"b\":0,\"c\":-0,\"d\":[0],\"e\":{\"f\":-0.5}}",
    "-0.0e+12",
    "0",
    "1e5",
    /* bad input */
    "{\"a\":1.5.2}", "{\"a\":1.x}", "{\"a\":1.}", "[1.5x]", "[1.}", "[-]", "[-x]", "[12,]",
    "{\"a\":12}}", "[1}", "{\"a\":1]", "{]", "[}", "{\"a\"}", "{,}", "[,1]", "{\"a\":}", ":",
    "]", "}", ",", "1,", "1 2", "12]", "\"ab\"x", "\"ab\",", "[tru]", "[trux]", "[nul",
    "{\"a\":fals", "truee", "nulx", "[1.5", "{\"a\":[", "{\"a\":{", "[{\"a\":1.25]",
    "{\"a\":\"b\"x}", "{\"ab\":\"c\",}", "[\"\"x]", "[true false]", "{\"a\":1.5,\"b\":-}",
    "{\"a\x01\":1}", "[\"\xff\"]", "[1.5e]", "[0x1]", "[01]", "[-01]", "{\"a\":1}x",
    "[1.5]]", "[[1.25}]", "[1.25,]", "{\"a\":12.5,}", "{\"abc\":[true}", "[[[[[[[[[[}",
    "[null,nul]", "{\"a\":[1,2.5e+]}", "12.5x", "-12.", "1.5]", "tru", "[\"ab", "{\"ab\":",
    "{\"ab\"", "[\"abc\",", "{\"a\":1,\"b\"", "[{}x]", "[[]x]", "[1e]", "[1e+]",
    "[1e+x]", "[1ex]", "[-0x]", "[0.x]", "[1.5e5.5]", "[1e5e5]", "[-.5]", "[.5]", "[+1]",
    "[00]", "[-00.5]", "[1E]", "[1.5E-]", "{\"a\":-}", "{\"a\":1e5 x}", "0x", "-", "1.",
    "1e", "1e+", "[1.5e3", "{\"a\":0", "[-0.5E", "[0,", "01",
};

START_TEST(test_grammar_start) {
  const size_t ndocs = sizeof gram_start_docs / sizeof gram_start_docs[0];
  for (size_t d = 0; d < ndocs; d++) {
    const char *doc = gram_start_docs[d];
    run_t ref;
    ref_parse(doc, strlen(doc), 0, &ref);
    CHECK((ref.err != 0) == (d >= GRAM_START_GOOD), "grammar start doc %zu: reference err %d",
          d, ref.err);
    run_free(&ref);
    char what[160];
    snprintf(what, sizeof what, "grammar start doc %zu", d);
    check_short_chunks(doc, 0, what);
  }
  /* the depth limit met by a container the short path opens, and just not met */
  static const char *const deep[] = {
      "[[[1]]]", "{\"a\":{\"b\":{}}}", "[{\"a\":[]}]", "{\"a\":[[1.5]],\"b\":{\"c\":{\"d\":1}}}",
      "[[],[[]],[[[]]]]",
  };
  for (size_t d = 0; d < sizeof deep / sizeof deep[0]; d++) {
    for (uint32_t md = 1; md <= 4; md++) {
      char what[160];
      snprintf(what, sizeof what, "grammar start depth doc %zu, max depth %u", d, md);
      check_short_chunks(deep[d], md, what);
    }
  }
}
END_TEST

/* Stopping the tokenizer at every token of the documents above, as for the grammar
 * short path after a closing quote. */
START_TEST(test_grammar_start_abort) {
  for (size_t d = 0; d < GRAM_START_GOOD; d++) check_aborts(gram_start_docs[d], d);
}
END_TEST

/* Keys and strings whole in one 16-byte block (json_tok.c, the machine's key_open and
 * sval_open): where at least 19 bytes of the chunk follow an opening quote and the
 * first stop byte among the 16 after it is the closing quote (or there is none and the
 * 17th is the quote), the machine reports the token at once, and after a key takes the
 * colon right after it. Bodies of every length 0 to 18 (the block's ends), and with a
 * stop byte (escapes, \u, UTF-8, a control or bad byte) at every position 0 to 16, as
 * keys followed by ':' directly, by whitespace and by bad bytes, and as values in an
 * object, an array and at the top level followed by ',' '}' ']', whitespace and bad
 * bytes; each whole, byte by byte, every split 1..31 and cut in two at every offset
 * (every chunk end near each quote), with the same tokens, errors and offsets as the
 * reference; and stopped at every callback, whole and in chunks of 1 to 31. */
static void block_doc(sb *s, const char *body, int form) {
  static const char pad[] = "                    "; /* 20: the fast path's 19 bytes */
  s->len = 0;
  switch (form) {
    case 0: /* keys: ':' at once, after whitespace, after a value's string */
      sb_puts(s, "{\"");
      sb_puts(s, body);
      sb_puts(s, "\":1,\"");
      sb_puts(s, body);
      sb_puts(s, "\" :\"");
      sb_puts(s, body);
      sb_puts(s, "\",\"");
      sb_puts(s, body);
      sb_puts(s, "\"\t:{\"");
      sb_puts(s, body);
      sb_puts(s, "\":[\"");
      sb_puts(s, body);
      sb_puts(s, "\"]},\"abcdefghijklmnopqrst\":true}");
      break;
    case 1: /* values: in an array, then ',' ']' and whitespace */
      sb_puts(s, "[\"");
      sb_puts(s, body);
      sb_puts(s, "\",\"");
      sb_puts(s, body);
      sb_puts(s, "\" ,[\"");
      sb_puts(s, body);
      sb_puts(s, "\"],{\"k\":\"");
      sb_puts(s, body);
      sb_puts(s, "\"},\"");
      sb_puts(s, body);
      sb_puts(s, "\"\n,12345678901234567890]");
      break;
    case 2: /* the top-level value, then whitespace */
      sb_putc(s, '"');
      sb_puts(s, body);
      sb_putc(s, '"');
      sb_puts(s, pad);
      break;
    /* bad input right after the closing quote (padded so the fast path is taken) */
    case 3: sb_puts(s, "{\""); sb_puts(s, body); sb_puts(s, "\"x"); sb_puts(s, pad); break;
    case 4: sb_puts(s, "{\""); sb_puts(s, body); sb_puts(s, "\",1}"); sb_puts(s, pad); break;
    case 5: sb_puts(s, "{\""); sb_puts(s, body); sb_puts(s, "\"}"); sb_puts(s, pad); break;
    case 6: sb_puts(s, "[\""); sb_puts(s, body); sb_puts(s, "\":1]"); sb_puts(s, pad); break;
    case 7: sb_puts(s, "[\""); sb_puts(s, body); sb_puts(s, "\"}"); sb_puts(s, pad); break;
    case 8: sb_puts(s, "{\"a\":\""); sb_puts(s, body); sb_puts(s, "\"]"); sb_puts(s, pad); break;
    case 9: sb_putc(s, '"'); sb_puts(s, body); sb_puts(s, "\"x"); sb_puts(s, pad); break;
    default: sb_putc(s, '"'); sb_puts(s, body); sb_puts(s, "\","); sb_puts(s, pad); break;
  }
}
#define BLOCK_FORMS 11

/* `doc` whole, byte by byte, every split 1..31, and in two pieces cut at every offset
 * (so that a chunk ends at every distance from each quote): the reference's run. */
static void check_cuts(const char *doc, size_t len, const char *label) {
  run_t ref;
  ref_parse(doc, len, 0, &ref);
  check_all_splits(doc, len, 0, &ref, label);
  char what[240];
  for (size_t at = 1; at < len; at++) {
    run_t r;
    snprintf(what, sizeof what, "%s, cut at %zu", label, at);
    run_doc(doc, len, 0, &at, 1, 0, &r, what);
    same_runs(&ref, &r, what);
    run_free(&r);
  }
  run_free(&ref);
}
#define BLOCK_GOOD_FORMS 3

START_TEST(test_block_strings) {
  /* stop bytes: good ones (escapes, \u, UTF-8) and bad ones (a control byte, 0xFF, a
   * bad escape, a lone continuation byte) */
  static const char *const stops[] = {
      "\\n", "\\\"", "\\\\", "\\u00e9", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x9A\x80",
      "\x01", "\xff", "\\x", "\x80",
  };
  enum { NSTOPS = sizeof stops / sizeof stops[0], NSTOPS_GOOD = 7 };
  sb s = {0};
  char body[64], what[160];
  for (int form = 0; form < BLOCK_FORMS; form++) {
    for (int v = -1; v < NSTOPS; v++) {
      for (size_t n = 0; n <= 18; n++) {
        if (v >= 0 && n > 16) break;
        /* n plain letters, or a stop byte at position n among letters (16 bytes in all) */
        size_t o = 0;
        const size_t plain = v < 0 ? n : 16;
        for (size_t i = 0; i <= plain; i++) {
          if (v >= 0 && i == n) {
            memcpy(body + o, stops[v], strlen(stops[v]));
            o += strlen(stops[v]);
          }
          if (i < plain) body[o++] = (char)('a' + i % 26);
        }
        body[o] = 0;
        block_doc(&s, body, form);
        sb_putc(&s, 0);
        s.len--;
        const int bad = form >= BLOCK_GOOD_FORMS || v >= NSTOPS_GOOD;
        run_t ref;
        ref_parse(s.p, s.len, 0, &ref);
        CHECK((ref.err != 0) == bad, "block strings form %d stop %d at %zu: reference err %d",
              form, v, n, ref.err);
        run_free(&ref);
        snprintf(what, sizeof what, "block strings form %d stop %d at %zu", form, v, n);
        check_cuts(s.p, s.len, what);
        if (!bad) check_aborts_upto(s.p, (size_t)(form * 100 + v + 1), 31);
      }
    }
  }
  free(s.p);
}
END_TEST

/* The 32-byte scan (json_tok.c, scan_wide: AVX2, entered for a string its first 16-byte
 * block did not end, while more than 32 bytes are left in the chunk; lone one-character
 * escapes cleared by a nibble lookup before the walk). Each cluster at every offset
 * 0..100 of a long string, so every cluster byte falls at every position of a 32-byte
 * block, at a block's last byte (an escape whose letter is the next block's first
 * byte) and across the hand-back to the 16-byte scan near the chunk's end; lone
 * escapes beside runs of backslashes; fed whole and in chunks of 33 to 100 bytes (each
 * long enough for the 32-byte scan) at two phases. The same tokens and errors, at the
 * same offsets, as the reference. Run with the 32-byte scan on (where the CPU has AVX2)
 * and off, in the two test cases below. */
START_TEST(test_string_wide) {
  static const char *const extra[] = {
      "\\n\\n\\t\\\\\\n\\\"x\\/\\b\\f\\r", /* lone escapes beside a run */
      "a\\nb\\\\nc\\\\\\nd\\\\\\\\ne", /* 1..4 backslashes then n */
      "\\n\\u00e9\\n\\uD83D\\uDE00\\n\xC3\xA9\\n",
      "\\n\\a", "\\n\\\xC3\xA9", "\\n\\\x01", "x\\", /* bad; the last: an odd run */
  };
  static const size_t steps[] = {33, 40, 47, 64, 65, 96, 100};
  sb s = {0};
  const size_t n = NCLUSTERS + sizeof extra / sizeof extra[0];
  for (size_t c = 0; c < n; c++) {
    const char *cl = c < NCLUSTERS ? clusters[c] : extra[c - NCLUSTERS];
    const int bad = c < NCLUSTERS ? c >= NGOOD : c >= NCLUSTERS + 3;
    for (size_t at = 0; at <= 100; at++) {
      s.len = 0;
      sb_puts(&s, "{\"k\":\"");
      for (size_t i = 0; i < at; i++) sb_putc(&s, (char)('a' + i % 26));
      sb_puts(&s, cl);
      for (size_t i = 0; i < 70; i++) sb_putc(&s, (char)('A' + i % 26));
      sb_puts(&s, cl);
      sb_puts(&s, "\",\"n\":[1,\"");
      sb_puts(&s, cl); /* a short string too: it ends inside its first blocks */
      sb_puts(&s, "\"]}");
      run_t ref, r;
      ref_parse(s.p, s.len, 0, &ref);
      CHECK((ref.err != 0) == bad, "string wide cluster %zu: reference err %d", c, ref.err);
      char what[120];
      snprintf(what, sizeof what, "string wide cluster %zu at %zu, whole", c, at);
      run_doc(s.p, s.len, 0, NULL, 0, 0, &r, what);
      same_runs(&ref, &r, what);
      run_free(&r);
      for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        for (size_t phase = 0; phase < 2; phase++) {
          size_t cuts[64], nc = 0;
          for (size_t x = phase ? steps[k] / 2 : steps[k]; x < s.len && nc < 64; x += steps[k])
            cuts[nc++] = x;
          snprintf(what, sizeof what, "string wide cluster %zu at %zu, chunks of %zu phase %zu",
                   c, at, steps[k], phase);
          run_doc(s.p, s.len, 0, cuts, nc, 0, &r, what);
          same_runs(&ref, &r, what);
          run_free(&r);
        }
      }
      run_free(&ref);
    }
  }
  free(s.p);
}
END_TEST

/* Where the CPU has AVX2, the 32-byte scan is what feed uses unless a test turns it off. */
START_TEST(test_wide_chosen) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  ck_assert_int_eq(ts__json_tok_wide(-1), __builtin_cpu_supports("avx2") != 0);
#endif
  ck_assert_int_eq(ts__json_tok_wide(0), 0);
  ck_assert_int_eq(ts__json_tok_wide(-1), 0);
}
END_TEST

/* A string's end in a chunk of 4 to 8 bytes (json_tok.c, close_short and close_next):
 * where the rest of the chunk after the closing quote is nothing, a key's colon, or a
 * comma after a value in a container, then at most a key or string that the chunk ends
 * inside with no stop byte, or an integer it ends inside, the string's last fragment
 * (and the new token's first) is reported at once, the state stored first; anything
 * else goes to str_close. The documents put each of those at a chunk's end after
 * every closing quote (each is fed with a chunk of every length 1 to 17 at every
 * offset, so every 4 to 8-byte chunk that holds a closing quote is fed): a key's value
 * and an object's next key, an array's next string, an integer or negative integer
 * after a colon or an array's comma, empty strings, a stop byte in the new string,
 * the numbers and values the path leaves to str_close (0, -0, a fraction, an exponent,
 * literals, containers), whitespace, a top-level string; and bad input at each step (a
 * number where a key must come, a leading 0, a bad byte in the new string, bytes after
 * a top-level string, a truncated new string or number); the first CLOSE_SHORT_GOOD are
 * good JSON. */
#define CLOSE_SHORT_GOOD 11
static const char *const close_short_docs[] = {
    "{\"abcd\":\"efgh\",\"ijkl\":\"mnop\",\"qr\":\"st\",\"u\":\"v\",\"w\":\"xyz\",\"ab\":\"c\"}",
    "[\"abcd\",\"efgh\",\"ij\",\"k\",\"lmnop\",[\"qr\",\"s\"],\"t\",{\"u\":[\"vw\"]}]",
    "{\"abcd\":12345,\"efgh\":-678,\"ij\":9,\"k\":-1,\"l\":[10,-2,\"m\",3],\"n\":{\"o\":45}}",
    "[\"abcd\",123,\"efgh\",-45,\"ij\",6,\"k\",-7,\"lm\",-12345678]",
    "{\"abcd\":\"\",\"ef\":\"\",\"g\":[\"\"],\"h\":\"ij\",\"\":\"k\"}",
    "{\"abcd\":\"\\n\",\"ef\":\"\\u00e9g\",\"h\":\"\xC3\xA9\",\"i\\\\j\":\"k\",\"l\":\"m\\\"\"}",
    "{\"abcd\":0,\"ef\":-0,\"g\":1.5,\"h\":-2e3,\"i\":0.5,\"j\":10,\"k\":[0,-0.5,7E1]}",
    "{\"abcd\":true,\"ef\":null,\"g\":[false],\"h\":{\"i\":\"j\"},\"k\":[],\"l\":{}}",
    "\"abcdefgh\"",
    "{\"abcd\" :\"e\", \"f\"  :\"g\",\"h\":\"i\" ,\"j\":\t\"k\"}",
    "[ \"ab\" ,\"cd\",  \"ef\",\"g\"\n]",
    /* bad input */
    "{\"abcd\":\"ef\",12}", "{\"abcd\":\"ef\",-1}", "{\"abcd\":\"ef\",\"g\"}", "[\"abcd\",01]",
    "{\"abcd\":01}", "{\"abcd\":-01}", "[\"ab\",-0x]", "[\"abcd\",-]", "[\"abcd\",-x]",
    "{\"abcd\":1x}", "{\"abcd\":\"e\x01\"}", "{\"abcd\":\"ef\xff\"}", "{\"abcd\":\"e\\x\"}",
    "\"abcd\"x", "\"abcd\",", "\"abcd\":", "[\"abcd\":1]", "{\"abcd\",\"e\"}", "{\"abcd\"}",
    "[\"abcd\",\"ef", "[\"abcd\",12", "{\"abcd\":\"", "{\"abcd\":\"ef\",\"gh", "{\"abcd\":-",
    "{\"abcd\":\"ef\":\"g\"}", "[\"abcd\"\"ef\"]", "{\"abcd\"::1}", "[\"ab\",,1]",
};

START_TEST(test_close_short) {
  const size_t ndocs = sizeof close_short_docs / sizeof close_short_docs[0];
  for (size_t d = 0; d < ndocs; d++) {
    const char *doc = close_short_docs[d];
    run_t ref;
    ref_parse(doc, strlen(doc), 0, &ref);
    CHECK((ref.err != 0) == (d >= CLOSE_SHORT_GOOD), "close short doc %zu: reference err %d",
          d, ref.err);
    run_free(&ref);
    char what[160];
    snprintf(what, sizeof what, "close short doc %zu", d);
    check_short_chunks(doc, 0, what);
  }
}
END_TEST

/* Stopping the tokenizer at every token of the documents above: at a string's last
 * fragment reported after the state was stored, and at the new token's first. */
START_TEST(test_close_short_abort) {
  for (size_t d = 0; d < CLOSE_SHORT_GOOD; d++) check_aborts(close_short_docs[d], d);
}
END_TEST

/* No fragment is empty but a token's last: a chunk that ends at a key's or string's
 * opening quote reports nothing of it (the next chunk gives its first fragment), which
 * the recorder above cannot tell from an empty first fragment. The documents of the
 * grammar short path and of close_short, fed with a chunk of every length 1 to 17 at
 * every offset and the rest in pieces of that length, and whole. */
static int empty_cb(void *user, const ts_json_token *tok) {
  uint64_t *bad = user;
  if (tok->len == 0 && !(tok->flags & TS_JSON_LAST)) ++*bad;
  return 0;
}
static void check_no_empty_open(const char *doc, const char *label) {
  const size_t len = strlen(doc);
  for (size_t k = 1; k <= 18; k++) {
    for (size_t at = 0; at < len; at++) {
      uint64_t bad = 0;
      ts_json_tok t;
      ck_assert_int_eq(ts_json_tok_init(&t, 0, empty_cb, &bad), TS_E_OK);
      /* [at, at + k) is one chunk (k 18: the rest whole), the chunk before it whole,
       * the rest in pieces of k */
      if (at) ts_json_tok_feed(&t, doc, at);
      for (size_t c = at; c < len;) {
        const size_t n = k <= 17 ? (len - c < k ? len - c : k) : len - c;
        ts_json_tok_feed(&t, doc + c, n);
        c += n;
      }
      ts_json_tok_finish(&t);
      CHECK(bad == 0, "%s: %" PRIu64 " empty fragments not LAST, chunks of %zu from %zu", label,
            bad, k, at);
    }
  }
}

START_TEST(test_no_empty_open) {
  char what[80];
  for (size_t d = 0; d < sizeof gram_docs / sizeof gram_docs[0]; d++) {
    snprintf(what, sizeof what, "grammar short doc %zu", d);
    check_no_empty_open(gram_docs[d], what);
  }
  for (size_t d = 0; d < sizeof close_short_docs / sizeof close_short_docs[0]; d++) {
    snprintf(what, sizeof what, "close short doc %zu", d);
    check_no_empty_open(close_short_docs[d], what);
  }
}
END_TEST

/* Literals in a document fed whole or in long chunks (json_tok.c, the machine's
 * lit_open: "true" and "null" compared as one 32-bit word where 4 bytes of the chunk
 * are left, "false" as 'f' and one word where 5 are; anything else letter by letter).
 * Each literal in every context (top level, an array's element before ',' and ']',
 * an object's value before ',' and '}', whitespace around it, the document's last
 * bytes), each letter replaced by a wrong byte (a neighbour letter, another literal's,
 * an upper-case one, '"', a digit, a space, 0x00, 0xFF), followed at once by a letter
 * or a digit, and every document truncated at every byte; each whole, byte by byte,
 * every split 1..31 and cut in two at every offset (the literal at every distance from
 * a chunk's end), against the reference; the good ones stopped at every callback. */
static void literal_doc(sb *s, const char *lit, size_t n, int form) {
  s->len = 0;
  switch (form) {
    case 0: sb_add(s, lit, n); break;
    case 1: sb_puts(s, " "); sb_add(s, lit, n); sb_puts(s, "\n"); break;
    case 2: sb_puts(s, "["); sb_add(s, lit, n); sb_puts(s, ","); sb_add(s, lit, n); sb_puts(s, "]"); break;
    case 3: sb_puts(s, "{\"a\":"); sb_add(s, lit, n); sb_puts(s, ",\"bc\":"); sb_add(s, lit, n);
      sb_puts(s, "}"); break;
    case 4: sb_puts(s, "[ "); sb_add(s, lit, n); sb_puts(s, " ,\t"); sb_add(s, lit, n);
      sb_puts(s, "\r\n]"); break;
    default: sb_puts(s, "[[{\"k\":["); sb_add(s, lit, n); sb_puts(s, "]},"); sb_add(s, lit, n);
      sb_puts(s, "],\"0123456789abcdef\","); sb_add(s, lit, n); sb_puts(s, "]"); break;
  }
}
#define LITERAL_FORMS 6

START_TEST(test_whole_literals) {
  static const char *const lits[] = {"true", "false", "null"};
  static const char wrong[] = {'r', 'l', 'u', 'x', 'T', 'N', '"', '1', ' ', 0, (char)0xFF};
  sb s = {0}, w = {0};
  char what[160];
  for (size_t l = 0; l < 3; l++) {
    const char *lit = lits[l];
    const size_t ln = strlen(lit);
    for (int form = 0; form < LITERAL_FORMS; form++) {
      /* variant 0: good; 1..ln * sizeof wrong: a letter replaced; then a letter, a
       * digit right after the literal; then the literal cut short (its prefixes) */
      const size_t nwrong = ln * sizeof wrong;
      for (size_t v = 0; v < 1 + nwrong + 2 + ln; v++) {
        w.len = 0;
        if (v == 0) {
          sb_add(&w, lit, ln);
        } else if (v <= nwrong) {
          const size_t k = (v - 1) / sizeof wrong;
          const char b = wrong[(v - 1) % sizeof wrong];
          if (b == lit[k]) continue;
          sb_add(&w, lit, ln);
          w.p[k] = b;
        } else if (v <= nwrong + 2) {
          sb_add(&w, lit, ln);
          sb_putc(&w, v == nwrong + 1 ? 'e' : '7');
        } else {
          sb_add(&w, lit, v - nwrong - 3); /* 0 .. ln - 1 letters */
        }
        literal_doc(&s, w.p, w.len, form);
        run_t ref;
        ref_parse(s.p, s.len, 0, &ref);
        const int bad = ref.err != 0;
        CHECK(bad == (v != 0), "literal %s form %d variant %zu: reference err %d", lit, form,
              v, ref.err);
        run_free(&ref);
        snprintf(what, sizeof what, "literal %s form %d variant %zu", lit, form, v);
        check_cuts(s.p, s.len, what);
        if (!bad) check_aborts_upto(sb_str(&s), (size_t)(l * 100 + (size_t)form), 31);
        /* every truncation (fed whole, and in every split) */
        if (v == 0)
          for (size_t n = 1; n < s.len; n++) {
            snprintf(what, sizeof what, "literal %s form %d cut to %zu bytes", lit, form, n);
            check_cuts(s.p, n, what);
          }
      }
    }
  }
  free(s.p);
  free(w.p);
}
END_TEST

/* Surrogate pairs (json_tok.c, pair_len: in the 32-byte scan a high surrogate's
 * \uD800-\uDBFF followed at once by a low one's \uDC00-\uDFFF is stepped over as one
 * 12-byte unit; anything else about a surrogate is the DFA's). Good pairs (upper and
 * lower case, the range's ends) and bad ones (a high one followed by a non-low \u, by
 * a second high one, by the string's end, a one-character escape, a letter, a short
 * or bad \u; a lone low one) at every offset 0..40 of a key's long value, again after
 * 70 letters and in a short string, so a pair falls at every position of a block and
 * across blocks; each whole, byte by byte, every split 1..31 and cut in two at every
 * offset, against the reference. Run with the 32-byte scan on and off. */
START_TEST(test_surrogate_pairs) {
  static const char *const pairs[] = {
      "\\uD83D\\uDE80", "\\ud800\\udc00", "\\uDBFF\\uDFFF", "\\uDbFf\\uDcAb", "x\\uD83D\\uDE00\\n",
      /* bad */
      "\\uD83D\\u0041", "\\uD83D\\uD83D", "\\uDE80", "\\uD83D", "\\uD83D\\n", "\\uD83Dx",
      "\\uD83D\\uDEZ0", "\\uD83D\\uDE8", "\\uD83D\\uE000", "\\uD83D\\", "\\uD83D\\x",
      "\\uD83D\\uDBFF",
  };
  enum { NPAIRS = sizeof pairs / sizeof pairs[0], NPAIRS_GOOD = 5 };
  sb s = {0};
  char what[120];
  for (size_t c = 0; c < NPAIRS; c++) {
    for (size_t at = 0; at <= 40; at++) {
      s.len = 0;
      sb_puts(&s, "{\"k\":\"");
      for (size_t i = 0; i < at; i++) sb_putc(&s, (char)('a' + i % 26));
      sb_puts(&s, pairs[c]);
      for (size_t i = 0; i < 70; i++) sb_putc(&s, (char)('A' + i % 26));
      sb_puts(&s, pairs[c]);
      sb_puts(&s, "\",\"n\":[\"");
      sb_puts(&s, pairs[c]);
      sb_puts(&s, "\"]}");
      run_t ref;
      ref_parse(s.p, s.len, 0, &ref);
      CHECK((ref.err != 0) == (c >= NPAIRS_GOOD), "surrogate %zu at %zu: reference err %d", c,
            at, ref.err);
      run_free(&ref);
      snprintf(what, sizeof what, "surrogate %zu at %zu", c, at);
      check_cuts(s.p, s.len, what);
    }
  }
  free(s.p);
}
END_TEST

/* Numbers in a document fed whole or in long chunks (the machine's number states):
 * digit runs of 1 to 70 digits in every part (integer, negative integer, fraction,
 * exponent with and without a sign), each at the top level (completed by finish) and
 * in an array and an object (ended by ',' ']' '}' and whitespace), and bad ones ("01",
 * "-01", "1.", "-", "1e", "1e+", "1.e5", "-a", "1.5.", "--1", "+1", ".5", "1ee", "00",
 * "0x1", "-0.", truncated in a container); each whole, byte by byte, every split
 * 1..31 and cut in two at every offset (a run's end at every distance from a chunk's
 * end), against the reference. */
static void number_doc(sb *s, const char *num, int form) {
  s->len = 0;
  if (form == 0) {
    sb_puts(s, num);
    return;
  }
  sb_puts(s, "{\"a\":[");
  sb_puts(s, num);
  sb_puts(s, ",");
  sb_puts(s, num);
  sb_puts(s, "],\"b\":");
  sb_puts(s, num);
  sb_puts(s, ",\"c\":[ ");
  sb_puts(s, num);
  sb_puts(s, " ],\"d\":");
  sb_puts(s, num);
  sb_puts(s, "}");
}

START_TEST(test_whole_numbers) {
  static const size_t runs[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                16, 17, 18, 19, 20, 23, 31, 32, 33, 47, 48, 49, 63, 64, 70};
  static const char *const shapes[] = {"%s", "-%s", "1.%s", "-0.%s", "%se7", "4.5E+%s",
                                       "-6e-%s", "%s.%sE%s"};
  static const char *const bad[] = {"01",  "-01", "1.",  "-",   "1e",  "1e+", "1.e5", "-a",
                                    "1.5.", "--1", "+1", ".5", "1ee", "00",  "0x1", "-0.",
                                    "1E",  "12.5e", "-0.5e-"};
  sb s = {0}, num = {0};
  char digits[80], what[160];
  for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
    const size_t n = runs[r];
    for (size_t i = 0; i < n; i++) digits[i] = (char)('1' + (i * 7 + 3) % 9);
    digits[n] = 0;
    if (n > 1) digits[n - 1] = '0'; /* a run that ends in 0 */
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
      num.len = 0;
      sb_printf(&num, shapes[sh], digits, digits, digits);
      for (int form = 0; form < 2; form++) {
        number_doc(&s, sb_str(&num), form);
        run_t ref;
        ref_parse(s.p, s.len, 0, &ref);
        CHECK(ref.err == 0, "number %s form %d: reference err %d", sb_str(&num), form, ref.err);
        run_free(&ref);
        snprintf(what, sizeof what, "number run %zu shape %zu form %d", n, sh, form);
        check_cuts(s.p, s.len, what);
      }
    }
  }
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
    for (int form = 0; form < 2; form++) {
      number_doc(&s, bad[b], form);
      run_t ref;
      ref_parse(s.p, s.len, 0, &ref);
      CHECK(ref.err != 0, "bad number %s form %d: the reference accepts it", bad[b], form);
      run_free(&ref);
      snprintf(what, sizeof what, "bad number %s form %d", bad[b], form);
      check_cuts(s.p, s.len, what);
    }
  }
  free(s.p);
  free(num.p);
}
END_TEST

static void wide_off(void) { ts__json_tok_wide(0); }

/* A long document in large chunks: many tokens, no allocation, the same as the reference. */
START_TEST(test_large) {
  rng = 7;
  sb s = {0};
  sb_putc(&s, '[');
  for (int i = 0; i < 3000; i++) {
    if (i) sb_putc(&s, ',');
    gen_value(&s, 3);
  }
  sb_putc(&s, ']');
  run_t ref, r;
  ref_parse(s.p, s.len, 0, &ref);
  ck_assert_int_eq(ref.err, 0);
  size_t cuts[64], nc = 0;
  for (size_t c = 4093; c < s.len && nc < 64; c += 4093) cuts[nc++] = c;
  run_doc(s.p, s.len, 0, cuts, nc, 0, &r, "large document");
  same_runs(&ref, &r, "large document");
  run_free(&r);
  run_doc(s.p, s.len, 0, NULL, 0, 0, &r, "large document whole");
  same_runs(&ref, &r, "large document whole");
  run_free(&r);
  run_free(&ref);
  free(s.p);
}
END_TEST

int main(void) {
  Suite *s = suite_create("json_tok");
  TCase *tc = tcase_create("contract");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_depth_limits);
  tcase_add_test(tc, test_init);
  tcase_add_test(tc, test_abort);
  tcase_add_test(tc, test_finish_number);
  suite_add_tcase(s, tc);
  TCase *tr = tcase_create("differential");
  tcase_set_timeout(tr, 240);
  tcase_add_test(tr, test_random);
  tcase_add_test(tr, test_string_scan);
  tcase_add_test(tr, test_string_across_feeds);
  tcase_add_test(tr, test_short_feeds);
  tcase_add_test(tr, test_grammar_short);
  tcase_add_test(tr, test_grammar_short_abort);
  tcase_add_test(tr, test_grammar_start);
  tcase_add_test(tr, test_grammar_start_abort);
  tcase_add_test(tr, test_close_short);
  tcase_add_test(tr, test_close_short_abort);
  tcase_add_test(tr, test_no_empty_open);
  tcase_add_test(tr, test_block_strings);
  tcase_add_test(tr, test_whole_literals);
  tcase_add_test(tr, test_whole_numbers);
  tcase_add_test(tr, test_surrogate_pairs);
  tcase_add_test(tr, test_string_masks);
  tcase_add_test(tr, test_large);
  tcase_add_test(tr, test_string_wide);
  tcase_add_test(tr, test_wide_chosen);
  suite_add_tcase(s, tr);
  /* The string scans again with the 32-byte (AVX2) scan off: the 16-byte scan alone, as
   * on a CPU without AVX2 (unchecked fixture: it runs in each test's own process, and
   * again before each test when CK_FORK=no). */
  TCase *tn = tcase_create("16-byte scan");
  tcase_set_timeout(tn, 240);
  tcase_add_checked_fixture(tn, wide_off, NULL);
  tcase_add_test(tn, test_random);
  tcase_add_test(tn, test_string_scan);
  tcase_add_test(tn, test_string_masks);
  tcase_add_test(tn, test_short_feeds);
  tcase_add_test(tn, test_grammar_short);
  tcase_add_test(tn, test_grammar_start);
  tcase_add_test(tn, test_close_short);
  tcase_add_test(tn, test_block_strings);
  tcase_add_test(tn, test_string_wide);
  tcase_add_test(tn, test_surrogate_pairs);
  tcase_add_test(tn, test_large);
  suite_add_tcase(s, tn);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
