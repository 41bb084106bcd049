/*
 * sse.c: the SSE framer of sse.h.
 *
 * The framer is a line machine that can stop after any byte and pick up again in the
 * next chunk without looking back. Its position within a line is one of:
 *
 *   S_BOM         stream start, matching a byte-order mark (bom_n bytes so far)
 *   S_LINE_START  no byte of the current line seen yet
 *   S_NAME        reading a field name (kept only when it could be a known one)
 *   S_SPACE       just after the colon: a space here is dropped
 *   S_VALUE       reading the value of `field` (F_NONE for comments, unknown fields)
 *   S_SKIP_LINE   discarding the rest of a line (after an error, while resyncing)
 *   S_DONE        stopped by the callback, or finished: nothing more is read (so that
 *                 ts_sse_feed's one test of the state also rules these out)
 *
 * Inside a line, the work goes by segments rather than bytes: memchr finds the next
 * CR and the next LF, and the bytes up to the nearer one (or to the line limit, or to
 * the end of the chunk) are handed to the state in one piece: a memchr for the colon
 * in S_NAME, one memcpy (or, zero-copy, nothing at all) for a data value. The CR and
 * LF search results are kept for the whole chunk, so a chunk full of short CR-only
 * lines does not rescan the rest of the chunk for an LF at every line.
 *
 * Whole events first: at the start of an event, the common shape (`event:`, `data:`, a
 * blank line) lying whole in the chunk is dispatched in one step (whole_event), its name
 * and data views into the chunk; on a provider's stream that is every event. A chunk
 * that starts between events (the way a provider's reads come) goes straight from
 * ts_sse_feed to a small loop of such events (feed_events), compiled twice: for any CPU
 * (SSE2 on x86-64) and for AVX2, picked per framer from the CPU at ts_sse_init
 * (ts_sse.simd; ts__sse_set_simd lets the tests and the fuzzer take either). The loop
 * has its registers to itself, apart from the machine, which only sees what is left.
 * Per event that is: a field name as a word compared with an immediate, the `event:`
 * line's end two masks of 32 bytes at most (a name is at most 64), the data line's end a
 * scan that tests 128 bytes at a time for any byte <= CR (a JSON payload has none but its
 * line end; a false hit is located exactly and passed over) and ends with the 64-byte
 * block that ends the chunk, a look at the blank line, the callback. A chunk that is one
 * whole event (a provider flushes each event: most reads are one) is dispatched in a
 * frame that keeps only the framer across the callback (feed_events; anything more goes
 * on in feed_more), and when it ends with two LFs its data line is one test for any byte
 * <= CR up to them, its end then known (clean_run). Measured per event on the benchmark
 * streams: docs/performance.md, "The SSE framer per event (session 6)" and "The tap on
 * Anthropic (session 9, branch anth10)".
 *
 * Whole lines next: at a line's start, a `data:` or `event:` line whose ending lies in
 * the chunk (and within the line limit) is read in one step: one scan for CR and LF
 * together (64 bytes a test; 128 on AVX2), then the same calls the machine makes (begin_field,
 * add_value, the ending), so the result is the machine's to the byte; everything else
 * (other fields, comments, a line cut by the chunk's end, an over-long line) goes
 * through the machine. A provider's event is two or three such lines, and the machine's
 * per-segment steps and two memchr set-ups were most of the framer's cost.
 *
 * Line endings: a CR is an ending on its own; an LF right after it belongs to the
 * same ending. When the CR is the last byte of a chunk, `after_cr` remembers to
 * swallow an LF at the start of the next chunk, and a blank line ending that way
 * keeps its dispatch `pending` until that byte is seen, so that end_offset counts the
 * LF whatever the chunking (sse.h, "Offsets").
 *
 * Data: the joined payload lives either in the caller's buffer or, while it is a
 * single value lying in the chunk being fed, as a view into that chunk (`view`). A
 * view is copied into the buffer when a second data line starts and, at the latest,
 * when feed returns: a view never outlives its chunk.
 *
 * The buffer: with a grow hook (ts_sse_set_grow) it may hold fewer than cap bytes
 * (`room`). Bytes reach it in three places only, each of which asks for room first
 * (room_for): a data value appended to a copy (add_value), the "\n" joining a second data
 * line and the view moved in before it (begin_field), and a view moved in at the end of a
 * feed (keep_view). The whole-event loops never write it, so they do not look at room.
 *
 * Limits: every check compares a segment's length with the room left, so an error
 * offset is exact whatever the chunking. The line limit cuts the segment at the line's
 * last allowed byte; only when the bytes before it are processed without error is a
 * further byte on the line reported as TS_E_SSE_LINE_TOO_LONG.
 *
 * A stream that starts with part of a BOM and then something else: the matched
 * bytes came (perhaps) in earlier chunks that are gone, but they are known constants,
 * so they are replayed from a small local array before the chunk is read.
 */
#include "stream/sse.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TS_SSE_AVX2 1 /* line ends of long lines scanned with AVX2 where the CPU has it */
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { S_BOM = 0, S_LINE_START, S_NAME, S_SPACE, S_VALUE, S_SKIP_LINE, S_DONE };
enum { F_NONE = 0, F_DATA, F_EVENT, F_ID, F_RETRY };
enum { D_NONE = 0, D_BUF, D_VIEW };

/* Longest field name we care about ("event", "retry"); a longer name is unknown. */
#define FNAME_MAX 5u

static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};

/* The bytes being run through the machine, and the line-end search cache. */
typedef struct {
  char *start;
  char *end;
  uint64_t base; /* absolute offset of start */
  char *lf;      /* first LF at or after the last search point, `end` if none; NULL: no search yet */
  char *cr;      /* same for CR */
} run_ctx;

static uint64_t off(const run_ctx *r, const char *x) { return r->base + (uint64_t)(x - r->start); }

/* The nearer of the next CR and LF at or after p, or r->end. Each search result stays
 * valid until p passes it, so each byte is searched at most once per character. */
static char *find_eol(run_ctx *r, char *p) {
  if (r->lf == NULL || r->lf < p) {
    r->lf = memchr(p, '\n', (size_t)(r->end - p));
    if (r->lf == NULL) r->lf = r->end;
  }
  if (r->cr == NULL || r->cr < p) {
    r->cr = memchr(p, '\r', (size_t)(r->end - p));
    if (r->cr == NULL) r->cr = r->end;
  }
  return r->lf < r->cr ? r->lf : r->cr;
}

int ts_sse_init(ts_sse *s, char *buf, size_t cap, size_t max_line, ts_sse_cb cb, void *user) {
  if (s == NULL) return TS_E_INVAL;
  memset(s, 0, sizeof *s);
  if (buf == NULL || cb == NULL) {
    s->err = TS_E_INVAL;
    return TS_E_INVAL;
  }
  s->buf = buf;
  s->cap = cap;
  if (max_line == 0) max_line = cap > SIZE_MAX - TS_SSE_LINE_SLACK ? SIZE_MAX : cap + TS_SSE_LINE_SLACK;
  s->max_line = max_line;
  s->short_line = cap < max_line ? cap : max_line;
  s->item.kind = TS_SSE_DISPATCH;
  s->cb = cb;
  s->user = user;
  s->retry = -1;
  s->limit = cap;
  s->keep_ask = TS_SSE_KEEP_ALL;
  s->room = cap;
  ts__sse_set_simd(s, 1);
  return TS_E_OK;
}

int ts_sse_set_grow(ts_sse *s, size_t size, ts_sse_grow_fn grow, void *user) {
  if (s == NULL || grow == NULL || size > s->cap || s->pos || s->bom_n || s->err || s->finished)
    return TS_E_INVAL;
  s->room = size;
  s->grow = grow;
  s->grow_user = user;
  return TS_E_OK;
}

/* Asks the hook for room for `need` bytes (room < need <= cap). 0, or -1 when refused
 * (the buffer as it was). */
static __attribute__((noinline)) int grow_buf(ts_sse *s, size_t need) {
  return ts_grow_to(s->grow, s->grow_user, &s->buf, &s->room, s->cap, need);
}

/* The buffer holds at least `need` bytes (need <= cap), or -1. */
static inline int room_for(ts_sse *s, size_t need) { return need <= s->room ? 0 : grow_buf(s, need); }

int ts__sse_set_simd(ts_sse *s, int on) {
#ifdef TS_SSE_AVX2
  s->simd = on && __builtin_cpu_supports("avx2");
#else
  (void)on;
  s->simd = 0;
#endif
  return s->simd;
}

void ts_sse_set_keep(ts_sse *s, ts_sse_keep_fn keep, void *user) {
  s->keep = keep;
  s->keep_user = user;
}

void ts_sse_set_cb(ts_sse *s, ts_sse_cb cb, void *user) {
  if (!cb) return;
  s->cb = cb;
  s->user = user;
}

/* The event keeps only a head: bytes past s->limit are dropped, not an error. */
static int keeps_head(const ts_sse *s) { return s->keep_ask != TS_SSE_KEEP_ALL; }

/* Forgets the event being built (name and data; the last event id is not part of it). */
static void reset_event(ts_sse *s) {
  s->cut = 0;
  s->limit = s->cap;
  s->keep_ask = TS_SSE_KEEP_ALL;
  s->name_len = 0;
  s->data_mode = D_NONE;
  s->data_len = 0;
  s->view = NULL;
}

static int stop(ts_sse *s, uint64_t at) {
  s->state = S_DONE;
  s->err = TS_E_ABORTED;
  s->last_err = TS_E_ABORTED;
  s->err_offset = at;
  return TS_E_ABORTED;
}

static void empty_views(const ts_sse *s, ts_sse_event *ev) {
  ev->name = s->name;
  ev->data = s->buf;
  ev->id = s->id;
}

/* Reports a limit error and starts resynchronising: drop the event, discard lines up
 * to the next blank line. */
static int fail(ts_sse *s, int code, uint64_t at) {
  ts_sse_event ev;
  memset(&ev, 0, sizeof ev);
  reset_event(s);
  s->state = S_SKIP_LINE;
  s->skipping = 1;
  s->last_err = code;
  s->err_offset = at;
  s->nerrors++;
  ev.kind = TS_SSE_ERROR;
  ev.code = code;
  ev.err_offset = at;
  empty_views(s, &ev);
  return s->cb(s->user, &ev) ? stop(s, at) : TS_E_OK;
}

static int dispatch(ts_sse *s, uint64_t end_offset) {
  ts_sse_event ev;
  memset(&ev, 0, sizeof ev);
  empty_views(s, &ev);
  ev.kind = TS_SSE_DISPATCH;
  ev.name_len = s->name_len;
  if (s->data_mode == D_VIEW) ev.data = s->view;
  ev.data_len = s->data_len;
  ev.cut = s->cut;
  ev.id_len = s->id_len;
  ev.end_offset = end_offset;
  reset_event(s);
  return s->cb(s->user, &ev) ? stop(s, end_offset) : TS_E_OK;
}

/* Moves a view's bytes into the caller's buffer. */
static void to_buf(ts_sse *s) {
  if (s->data_mode != D_VIEW) return;
  if (s->data_len) memmove(s->buf, s->view, s->data_len);
  s->data_mode = D_BUF;
  s->view = NULL;
}

/* Consumes the line ending at q (a CR or LF) and returns the byte after it. A CR that
 * ends the bytes being run may yet be followed by an LF: after_cr remembers it. */
static char *line_end(ts_sse *s, const run_ctx *r, char *q) {
  char *after = q + 1;
  if (*q == '\r') {
    if (after < r->end) {
      if (*after == '\n') after++;
    } else {
      s->after_cr = 1;
    }
  }
  s->state = S_LINE_START;
  return after;
}

static void add_fname(ts_sse *s, const char *p, size_t n) {
  if (s->fname_len > FNAME_MAX) return;
  if (n > FNAME_MAX - s->fname_len) {
    s->fname_len = FNAME_MAX + 1;
    return;
  }
  memcpy(s->fname + s->fname_len, p, n);
  s->fname_len = (uint8_t)(s->fname_len + n);
}

static int name_is(const ts_sse *s, const char *lit, size_t n) {
  return s->fname_len == n && memcmp(s->fname, lit, n) == 0;
}

/* The field name is complete (at its colon, or at the line end): start its value.
 * `at` is the offset of that colon or line end. */
static inline __attribute__((always_inline)) int begin_field(ts_sse *s, uint64_t at) {
  if (name_is(s, "data", 4)) {
    s->field = F_DATA;
    if (s->data_mode == D_NONE) {
      s->data_mode = D_BUF; /* an event with data, so far empty */
      s->data_len = 0;
      if (s->keep && s->name_len) { /* how much of it to keep, by its name */
        s->keep_ask = s->keep(s->keep_user, s->name, s->name_len);
        s->limit = s->keep_ask < s->cap ? s->keep_ask : s->cap;
      }
    } else if (s->cut) {
      /* dropping: nothing more is kept */
    } else {
      if (s->data_len >= s->limit && keeps_head(s)) {
        s->cut = 1;
        return TS_E_OK;
      }
      if (s->data_len >= s->cap) return fail(s, TS_E_SSE_EVENT_TOO_LARGE, at);
      if (room_for(s, s->data_len + 1)) return fail(s, TS_E_NOMEM, at);
      to_buf(s);
      s->buf[s->data_len++] = '\n';
    }
  } else if (name_is(s, "event", 5)) {
    s->field = F_EVENT;
    s->name_len = 0;
  } else if (name_is(s, "id", 2)) {
    s->field = F_ID;
    s->id_pend_len = 0;
    s->id_nul = 0;
  } else if (name_is(s, "retry", 5)) {
    s->field = F_RETRY;
    s->retry_acc = 0;
    s->retry_any = 0;
    s->retry_bad = 0;
  } else {
    s->field = F_NONE;
  }
  return TS_E_OK;
}

/* Value bytes [p, p + n), none of them a line ending, all within the line limit. */
static inline __attribute__((always_inline)) int add_value(ts_sse *s, const run_ctx *r, char *p, size_t n) {
  switch (s->field) {
  case F_DATA:
    if (s->cut) break; /* keeping a head only, and it is full: drop */
    if (keeps_head(s) && n > s->limit - s->data_len) {
      n = s->limit - s->data_len; /* the head's end; the rest is dropped */
      s->cut = 1;
      if (n == 0) break;
    }
    if (n > s->cap - s->data_len) return fail(s, TS_E_SSE_EVENT_TOO_LARGE, off(r, p) + (s->cap - s->data_len));
    if (s->data_len == 0) { /* the payload so far is empty: these bytes can be it */
      s->data_mode = D_VIEW;
      s->view = p;
    } else if (s->data_mode == D_BUF) {
      if (room_for(s, s->data_len + n)) return fail(s, TS_E_NOMEM, off(r, p) + (s->room - s->data_len));
      memcpy(s->buf + s->data_len, p, n);
    } else {
      assert(s->view + s->data_len == p); /* a view only grows along one line */
    }
    s->data_len += n;
    break;
  case F_EVENT:
    if (n > TS_SSE_MAX_NAME - s->name_len)
      return fail(s, TS_E_SSE_NAME_TOO_LONG, off(r, p) + (TS_SSE_MAX_NAME - s->name_len));
    memcpy(s->name + s->name_len, p, n);
    s->name_len = (uint16_t)(s->name_len + n);
    break;
  case F_ID:
    if (n > TS_SSE_MAX_ID - s->id_pend_len)
      return fail(s, TS_E_SSE_ID_TOO_LONG, off(r, p) + (TS_SSE_MAX_ID - s->id_pend_len));
    if (memchr(p, '\0', n)) s->id_nul = 1;
    memcpy(s->id_pend + s->id_pend_len, p, n);
    s->id_pend_len = (uint16_t)(s->id_pend_len + n);
    break;
  case F_RETRY:
    for (size_t i = 0; i < n && !s->retry_bad; i++) {
      unsigned d = (unsigned char)p[i] - (unsigned)'0';
      if (d > 9) {
        s->retry_bad = 1;
        break;
      }
      s->retry_any = 1;
      s->retry_acc = s->retry_acc > (TS_SSE_RETRY_MAX - d) / 10 ? TS_SSE_RETRY_MAX : s->retry_acc * 10 + d;
    }
    break;
  default: /* comment or unknown field */
    break;
  }
  return TS_E_OK;
}

/* The line's bytes [*pp, seg): no line ending among them, all within the line limit.
 * Runs NAME -> SPACE -> VALUE as far as they go. On an error the state is SKIP_LINE. */
static int segment(ts_sse *s, const run_ctx *r, char **pp, char *seg) {
  char *p = *pp;
  int rc = TS_E_OK;
  if (s->state == S_NAME && p < seg) {
    char *colon = memchr(p, ':', (size_t)(seg - p));
    char *stop_at = colon ? colon : seg;
    add_fname(s, p, (size_t)(stop_at - p));
    p = stop_at;
    if (colon) {
      p++;
      s->state = S_SPACE;
      rc = begin_field(s, off(r, colon));
      if (rc || s->state != S_SPACE) goto done;
    }
  }
  if (s->state == S_SPACE && p < seg) {
    if (*p == ' ') p++;
    s->state = S_VALUE;
  }
  if (s->state == S_VALUE && p < seg) {
    rc = add_value(s, r, p, (size_t)(seg - p));
    p = seg;
  }
done:
  *pp = p;
  return rc;
}

/* A non-blank line ended at q: finish its field. */
static int finish_line(ts_sse *s, const run_ctx *r, char *q) {
  if (s->state == S_NAME) { /* no colon: the whole line names the field, value empty */
    int rc = begin_field(s, off(r, q));
    if (rc || s->state == S_SKIP_LINE) return rc;
  }
  switch (s->field) {
  case F_ID:
    if (!s->id_nul) {
      memcpy(s->id, s->id_pend, s->id_pend_len);
      s->id_len = s->id_pend_len;
    }
    break;
  case F_RETRY:
    if (s->retry_any && !s->retry_bad) s->retry = (int64_t)s->retry_acc;
    break;
  default:
    break;
  }
  return TS_E_OK;
}

#if defined(__SSE2__)
/* One bit per CR or LF among the 16 bytes of x. */
static inline unsigned eol_bits(__m128i x) {
  __m128i lf = _mm_cmpeq_epi8(x, _mm_set1_epi8('\n')), cr = _mm_cmpeq_epi8(x, _mm_set1_epi8('\r'));
  return (unsigned)_mm_movemask_epi8(_mm_or_si128(lf, cr));
}
static inline __m128i load16(const char *p) { return _mm_loadu_si128((const __m128i *)(const void *)p); }
#endif

/* The first CR or LF in [p, end), 16 bytes a step: for a line known to be short (an
 * `event:` line, the last bytes of a long one). [lo, end) may be read (lo <= p): the last
 * 1-15 bytes are tested as the 16-byte block that ends at `end` when it lies in them. */
static inline char *eol_short(char *p, char *end, const char *lo) {
#if defined(__SSE2__)
  for (; end - p >= 16; p += 16) {
    unsigned m = eol_bits(load16(p));
    if (m) return p + __builtin_ctz(m);
  }
  if (p < end && end - lo >= 16) {
    const char *block = end - 16;
    unsigned m = eol_bits(load16(block)) >> (p - block);
    return m ? p + __builtin_ctz(m) : NULL;
  }
#else
  (void)lo;
#endif
  for (; p < end; p++)
    if (*p == '\n' || *p == '\r') return p;
  return NULL;
}

/* The first CR or LF in [p, end), for a line that may be long (a payload): 64 bytes a
 * step, one test for any byte <= CR (three `pminub` and a compare; a JSON payload has no
 * such byte but its line end), the hit located 16 bytes at a time; a byte <= CR that is
 * neither (a tab, a control byte) is passed over and the scan goes on. The rest as
 * eol_short. */
static inline char *find_eol_once(char *p, char *end, const char *lo) {
#if defined(__SSE2__)
  const __m128i low = _mm_set1_epi8('\r');
  for (; end - p >= 64; p += 64) {
    __m128i a = load16(p), b = load16(p + 16), c = load16(p + 32), d = load16(p + 48);
    __m128i m = _mm_min_epu8(_mm_min_epu8(a, b), _mm_min_epu8(c, d));
    if (!_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(m, low), m))) continue;
    unsigned k;
    if ((k = eol_bits(a))) return p + __builtin_ctz(k);
    if ((k = eol_bits(b))) return p + 16 + __builtin_ctz(k);
    if ((k = eol_bits(c))) return p + 32 + __builtin_ctz(k);
    if ((k = eol_bits(d))) return p + 48 + __builtin_ctz(k);
  }
#endif
  return eol_short(p, end, lo);
}

/* 1 when [p, x) (at least 32 bytes) holds no byte <= CR (no line end, then), 0 when it
 * may: 64 bytes a test (three `pminub` and a compare, as find_eol_once), stopping at
 * the first test that finds one; the last 1-64 bytes as the block ending at x and up to
 * three blocks from p that lie before x, one test. For the data line of an event that ends the chunk,
 * whose end is then known (whole_event, `last`). */
static inline int clean_run(const char *p, const char *x) {
#if defined(__SSE2__)
  const __m128i low = _mm_set1_epi8('\r');
  for (; x - p > 64; p += 64) {
    __m128i m = _mm_min_epu8(_mm_min_epu8(load16(p), load16(p + 16)), _mm_min_epu8(load16(p + 32), load16(p + 48)));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(m, low), m))) return 0;
  }
  __m128i m = load16(x - 16);
  if (x - p > 16) m = _mm_min_epu8(m, load16(p));
  if (x - p > 32) m = _mm_min_epu8(m, load16(p + 16));
  if (x - p > 48) m = _mm_min_epu8(m, load16(p + 32));
  return !_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(m, low), m));
#else
  for (; p < x; p++)
    if ((unsigned char)*p <= '\r') return 0;
  return 1;
#endif
}

#ifdef TS_SSE_AVX2
#define AVX2_TARGET __attribute__((target("avx2")))
AVX2_TARGET static inline __m256i load32(const char *p) { return _mm256_loadu_si256((const __m256i *)(const void *)p); }
/* The two line-end bytes in every lane, loaded once per scan by an asm load: the
 * compiler, seeing the constants, would rather rebuild each (three instructions) at
 * every use. */
static const char lf32[32] __attribute__((aligned(32))) = "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n";
static const char cr32[32] __attribute__((aligned(32))) = "\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r\r";
AVX2_TARGET static inline void eol_consts(__m256i *lf, __m256i *cr) {
  __asm__("vmovdqa %1, %0" : "=x"(*lf) : "m"(lf32));
  __asm__("vmovdqa %1, %0" : "=x"(*cr) : "m"(cr32));
}
AVX2_TARGET static inline unsigned eol_bits32(__m256i x, __m256i lf, __m256i cr) {
  return (unsigned)_mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(x, lf), _mm256_cmpeq_epi8(x, cr)));
}
AVX2_TARGET static inline uint64_t eol_bits64(const char *p, __m256i lf, __m256i cr) {
  return (uint64_t)eol_bits32(load32(p), lf, cr) | (uint64_t)eol_bits32(load32(p + 32), lf, cr) << 32;
}

/* find_eol_once with 32-byte registers, on a CPU that has them (ts_sse.simd): 128 bytes
 * a test for any byte <= CR, a hit located 32 bytes at a time; the last 1-127 bytes as
 * one exact 64-byte mask and the 64-byte block that ends at `end` when it lies in [lo,
 * end) (so a short line costs two masks and no loop). Compiled for AVX2, called
 * only when the CPU has it. */
AVX2_TARGET static inline char *find_eol_avx2(char *p, char *end, const char *lo) {
  __m256i lf, cr;
  eol_consts(&lf, &cr);
  for (; end - p >= 128; p += 128) {
    __m256i a = load32(p), b = load32(p + 32), c = load32(p + 64), d = load32(p + 96);
    __m256i m = _mm256_min_epu8(_mm256_min_epu8(a, b), _mm256_min_epu8(c, d));
    if (!_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(m, cr), m))) continue;
    unsigned k;
    if ((k = eol_bits32(a, lf, cr))) return p + __builtin_ctz(k);
    if ((k = eol_bits32(b, lf, cr))) return p + 32 + __builtin_ctz(k);
    if ((k = eol_bits32(c, lf, cr))) return p + 64 + __builtin_ctz(k);
    if ((k = eol_bits32(d, lf, cr))) return p + 96 + __builtin_ctz(k);
  }
  if (end - p >= 64) {
    uint64_t k = eol_bits64(p, lf, cr);
    if (k) return p + __builtin_ctzll(k);
    p += 64;
  }
  if (p < end && end - lo >= 64) {
    const char *block = end - 64;
    uint64_t k = eol_bits64(block, lf, cr) >> (p - block);
    return k ? p + __builtin_ctzll(k) : NULL;
  }
  return eol_short(p, end, lo);
}

/* eol_short with 32-byte registers, for an `event:` line: [p, end) is at most 65 bytes
 * (a name within the limit and its line end), two exact 32-byte masks and the byte after
 * them, or the 64-byte block that ends at `end`. */
AVX2_TARGET static inline char *eol_name_avx2(char *p, char *end, const char *lo) {
  __m256i lf, cr;
  eol_consts(&lf, &cr);
  if (end - p >= 64) { /* 32 bytes, then 32 more: most names end in the first */
    unsigned k = eol_bits32(load32(p), lf, cr);
    if (k) return p + __builtin_ctz(k);
    if ((k = eol_bits32(load32(p + 32), lf, cr))) return p + 32 + __builtin_ctz(k);
    return end - p > 64 && (p[64] == '\n' || p[64] == '\r') ? p + 64 : eol_short(p + 64, end, lo);
  }
  if (end - lo >= 64) {
    const char *block = end - 64;
    uint64_t k = eol_bits64(block, lf, cr) >> (p - block);
    return k ? p + __builtin_ctzll(k) : NULL;
  }
  return eol_short(p, end, lo);
}
#endif

#ifdef TS_SSE_AVX2
/* clean_run with 32-byte registers, on a CPU that has them: 128 bytes a test, the last
 * 1-128 bytes as the block ending at x and up to three blocks from p that lie before x
 * ([p, x) is at least 32 bytes). */
AVX2_TARGET static inline int clean_run_avx2(const char *p, const char *x) {
  __m256i lf, cr;
  eol_consts(&lf, &cr);
  (void)lf;
  for (; x - p > 128; p += 128) {
    __m256i m = _mm256_min_epu8(_mm256_min_epu8(load32(p), load32(p + 32)),
                                _mm256_min_epu8(load32(p + 64), load32(p + 96)));
    if (_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(m, cr), m))) return 0;
  }
  __m256i m = load32(x - 32);
  if (x - p > 32) m = _mm256_min_epu8(m, load32(p));
  if (x - p > 64) m = _mm256_min_epu8(m, load32(p + 32));
  if (x - p > 96) m = _mm256_min_epu8(m, load32(p + 64));
  return !_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(m, cr), m));
}
#endif

/* The first CR or LF in [p, end) of a long line, the CPU's best way. */
static inline char *find_eol_long(const ts_sse *s, char *p, char *end, const char *lo) {
#ifdef TS_SSE_AVX2
  if (s->simd) return find_eol_avx2(p, end, lo);
#else
  (void)s;
#endif
  return find_eol_once(p, end, lo);
}

/* A whole `data:` or `event:` line at p (the state is S_LINE_START, not skipping, no CR
 * pending), its ending in this chunk: the same steps as the machine would take byte by
 * byte (begin_field at the colon, the space dropped, add_value, finish_line, the
 * ending), with one scan for the line's end. Returns the byte after the ending, or NULL
 * (nothing done) for any other line: the machine reads it. After an error (the state
 * is S_SKIP_LINE) returns the byte where the machine goes on. */
static char *whole_line(ts_sse *s, run_ctx *r, char *p, int *rc) {
  char *end = r->end, *q = find_eol_long(s, p, end, r->start), *v;
  if (!q || (size_t)(q - p) > s->max_line) return NULL; /* the machine says what is wrong */
  if (q - p >= 5 && memcmp(p, "data:", 5) == 0) {
    memcpy(s->fname, "data", 4);
    s->fname_len = 4;
    v = p + 5;
  } else if (q - p >= 6 && memcmp(p, "event:", 6) == 0) {
    memcpy(s->fname, "event", 5);
    s->fname_len = 5;
    v = p + 6;
  } else {
    return NULL;
  }
  s->line_start = off(r, p);
  s->state = S_SPACE;
  *rc = begin_field(s, off(r, v - 1));
  if (*rc || s->state != S_SPACE) return v;
  if (v < q && *v == ' ') v++;
  s->state = S_VALUE;
  if (v < q) {
    *rc = add_value(s, r, v, (size_t)(q - v));
    if (*rc || s->state == S_SKIP_LINE) return q; /* SKIP_LINE consumes the ending */
  }
  /* finish_line has nothing to do for these two fields */
  return line_end(s, r, q);
}

/* Field names as words: "data:" is the 4 bytes "data" and a colon, "event:" the 4
 * bytes "even" and the 2 bytes "t:", each word compared with an immediate (one compare
 * and a byte or half-word one, no constant to load). */
static inline uint32_t word4(const char *p) {
  uint32_t w;
  memcpy(&w, p, 4);
  return w;
}
static inline uint16_t word2(const char *p) {
  uint16_t w;
  memcpy(&w, p, 2);
  return w;
}
static inline int is_data_colon(const char *p) { return word4(p) == word4("data") && p[4] == ':'; }
static inline int is_event_colon(const char *p) { return word4(p) == word4("even") && word2(p + 4) == word2("t:"); }

/* The first byte of the line after the blank line at x (x < end), or NULL when x is no
 * blank line or the chunk cannot tell (a CR that is its last byte: an LF may follow). */
static inline char *after_blank(char *x, char *end) {
  if (*x == '\n') return x + 1;
  if (*x != '\r' || x + 1 >= end) return NULL;
  return x + 1 + (x[1] == '\n');
}

/* The keep question for the item whole_event built (a named event, a keep callback
 * set), out of line so that the loops and the one-event path keep no registers for it:
 * the data past what the callback keeps is cut, as begin_field does (data_len <= cap). */
static __attribute__((noinline)) void keep_item(ts_sse *s) {
  ts_sse_event *ev = &s->item;
  size_t keep = s->keep(s->keep_user, ev->name, ev->name_len);
  if (keep != TS_SSE_KEEP_ALL && ev->data_len > keep) {
    ev->data_len = keep;
    if (!keep) ev->data = s->buf;
    ev->cut = 1;
  }
}

/* A whole event at p, the shape every provider sends: an optional `event:` line, one
 * `data:` line, a blank line, all in this chunk (the state is S_LINE_START, not skipping,
 * no CR pending, no event begun). Its item is built in s->item straight from the chunk,
 * for the caller to dispatch (dispatch_item): the name and
 * the data are views into it, nothing is copied; each field name is a word compare
 * (is_data_colon, is_event_colon), the `event:` line's end a short scan (a name is at
 * most 64 bytes: one 64-byte mask on AVX2, 16 bytes a step else), the data line's end
 * one long scan (find_eol_avx2 or find_eol_once, `wide` choosing, a constant in each
 * compiled copy). Returns the byte after the blank line (the keep callback not asked
 * yet: dispatch_item asks it), or NULL with
 * nothing done for anything else: other fields, a
 * second data line, a limit crossed (the machine reports it), a line cut by the chunk's
 * end, a CR as the chunk's last byte, an event shorter than 8 bytes. What the callback
 * sees is what the machine would give it, to the byte (tests/stream/sse_test.c compares
 * the two at every split). */
static inline __attribute__((always_inline)) char *whole_event(ts_sse *s, const char *lo, char *p, char *end,
                                                              int wide, int last) {
  char *q, *v;
  const char *name = s->name;
  size_t name_len = 0;
  if (end - p < 8) return NULL;
  if (is_event_colon(p)) {
    v = p + 6 + (p[6] == ' ');
    /* a name longer than the limit is the machine's to report: look no further (the
     * bound as an offset from the chunk's start: gcc read the space twice for `end - v`) */
    size_t room = (size_t)(end - lo) - (size_t)(v - lo);
    char *stop_at = room > TS_SSE_MAX_NAME ? v + TS_SSE_MAX_NAME + 1 : end;
#ifdef TS_SSE_AVX2
    q = wide ? eol_name_avx2(v, stop_at, lo) : eol_short(v, stop_at, lo);
#else
    q = eol_short(v, stop_at, lo);
#endif
    if (!q || (size_t)(q - p) > s->max_line) return NULL;
    name = v;
    name_len = (size_t)(q - v);
    p = q + 1;
    if (*q == '\r') {
      if (p >= end) return NULL;
      p += *p == '\n';
    }
    if (end - p < 8) return NULL;
  }
  if (!is_data_colon(p)) return NULL;
  v = p + 5 + (p[5] == ' ');
  char *after;
  if (last && end - v >= 34 && end[-1] == '\n' && end[-2] == '\n' &&
#ifdef TS_SSE_AVX2
      (wide ? clean_run_avx2(v, end - 2) : clean_run(v, end - 2))
#else
      clean_run(v, end - 2)
#endif
  ) {
    /* the event ends the chunk (`last`: the chunk's first event, so that a chunk of many
     * is not searched to its end at every event): its data line ends at the first of the
     * two LFs, the blank line at the second */
    q = end - 2;
    after = end;
  } else {
#ifdef TS_SSE_AVX2
    q = wide ? find_eol_avx2(v, end, lo) : find_eol_once(v, end, lo);
#else
    (void)wide;
    q = find_eol_once(v, end, lo);
#endif
    if (!q) return NULL;
    char *blank = q + 1;
    if (*q == '\r') {
      if (blank >= end) return NULL;
      blank += *blank == '\n';
    }
    if (blank >= end || !(after = after_blank(blank, end))) return NULL;
  }
  size_t n = (size_t)(q - v);
  if ((size_t)(q - p) > s->short_line && ((size_t)(q - p) > s->max_line || n > s->cap)) return NULL;
  /* the item is the machine's dispatch() to the byte; kind, code and err_offset were set
   * by ts_sse_init and never change (a local would be zeroed and aligned per event) */
  ts_sse_event *ev = &s->item;
  ev->name = name;
  ev->name_len = name_len;
  ev->data = n ? v : s->buf;
  ev->data_len = n;
  ev->id = s->id;
  ev->id_len = s->id_len;
  ev->end_offset = s->pos + (uint64_t)(after - lo);
  ev->cut = 0;
  return after;
}

/* The whole event in s->item (whole_event's) to the callback, after the keep question
 * for a named event (begin_field's, with the same answer's effect): TS_E_OK, or the
 * framer stopped. */
static inline int dispatch_item(ts_sse *s) {
  if (s->keep && s->item.name_len) keep_item(s);
  return s->cb(s->user, &s->item) ? stop(s, s->item.end_offset) : TS_E_OK;
}

/* Whole events from p, one step each, while they come: the byte where the first that is
 * not one starts (or `end`, or, after the callback stopped the framer, the byte after
 * the event it stopped at, *rc then set). The bytes being run are [lo, end), lo at
 * offset s->pos. `wide`: the line-end scan of AVX2. */
static inline __attribute__((always_inline)) char *events(ts_sse *s, const char *lo, char *p, char *end, int *rc,
                                                         int wide) {
  for (char *after; p < end && (after = whole_event(s, lo, p, end, wide, 0)); p = after)
    if ((*rc = dispatch_item(s))) return after;
  return p;
}

static int run(ts_sse *s, char *start, char *end, char *tried);

/* The end of the bytes being run: a view into them is moved into the buffer (never keep
 * a pointer into the caller's chunk). When the buffer cannot grow to hold it, the event
 * is dropped with TS_E_NOMEM at its first byte that did not fit, and the framer goes on
 * as after any error, except where the event's lines are already behind it: after a
 * data line's ending it resynchronises at the next blank line as usual (it is in no
 * line to skip), and when the blank line itself was seen (pending) there is nothing
 * left to skip. */
static int keep_view(ts_sse *s, const run_ctx *r, int rc) {
  if (s->data_mode == D_VIEW && room_for(s, s->data_len)) {
    if (rc) { /* stopped: nothing more is read */
      reset_event(s);
      return rc;
    }
    uint8_t state = s->state, pending = s->pending;
    rc = fail(s, TS_E_NOMEM, off(r, s->view) + s->room);
    if (s->state == S_DONE) return rc;
    if (pending) {
      s->pending = 0;
      s->skipping = 0;
    }
    if (state == S_LINE_START) s->state = S_LINE_START;
    return rc;
  }
  to_buf(s);
  return rc;
}

/* feed_events for a chunk that is more than one whole event: the first one's item
 * (whole_event ended at `after`, or said no: NULL) dispatched, whole events after it,
 * then the machine for the rest, if any. */
static inline __attribute__((always_inline)) int feed_more(ts_sse *s, char *buf, size_t len, char *after,
                                                           int wide) {
  char *end = buf + len, *p = buf;
  int rc = TS_E_OK;
  if (after) {
    p = after;
    if (!(rc = dispatch_item(s))) p = events(s, buf, p, end, &rc, wide);
  }
  if (rc || p == end) {
    s->pos += len;
    return rc;
  }
  s->pos += (uint64_t)(p - buf);
  return run(s, p, end, p);
}

/* feed for a chunk that starts between events. A chunk that is one whole event (a
 * provider flushes each event: most reads are one) is dispatched in a frame that keeps
 * only the framer across the callback; its end offset is the chunk's end. Anything else
 * goes on in feed_more (`more`: its copy for this CPU, out of line, with the loop's
 * registers). */
static inline __attribute__((always_inline)) int feed_events(ts_sse *s, char *buf, size_t len, int wide,
                                                             int (*more)(ts_sse *, char *, size_t, char *)) {
  char *end = buf + len, *after = whole_event(s, buf, buf, end, wide, 1);
  if (after != end) return more(s, buf, len, after);
  int rc = dispatch_item(s);
  s->pos = s->item.end_offset; /* s->pos + len */
  return rc;
}

/* events() and feed_events() compiled twice, once for any CPU and once for AVX2, and
 * picked by ts_sse.simd: the loop is small enough to have its registers to itself. */
__attribute__((noinline)) static char *events_base(ts_sse *s, const char *lo, char *p, char *end, int *rc) {
  return events(s, lo, p, end, rc, 0);
}
__attribute__((noinline)) static int feed_more_base(ts_sse *s, char *buf, size_t len, char *after) {
  return feed_more(s, buf, len, after, 0);
}
__attribute__((noinline)) static int feed_events_base(ts_sse *s, char *buf, size_t len) {
  return feed_events(s, buf, len, 0, feed_more_base);
}
#ifdef TS_SSE_AVX2
AVX2_TARGET __attribute__((noinline)) static char *events_avx2(ts_sse *s, const char *lo, char *p, char *end,
                                                               int *rc) {
  return events(s, lo, p, end, rc, 1);
}
AVX2_TARGET __attribute__((noinline)) static int feed_more_avx2(ts_sse *s, char *buf, size_t len, char *after) {
  return feed_more(s, buf, len, after, 1);
}
AVX2_TARGET __attribute__((noinline)) static int feed_events_avx2(ts_sse *s, char *buf, size_t len) {
  return feed_events(s, buf, len, 1, feed_more_avx2);
}
#endif
static inline char *events_any(ts_sse *s, const char *lo, char *p, char *end, int *rc) {
#ifdef TS_SSE_AVX2
  if (s->simd) return events_avx2(s, lo, p, end, rc);
#endif
  return events_base(s, lo, p, end, rc);
}

/* At an event's start, nothing of it begun: whole_event may read from here. The four
 * byte fields lie in the 8 bytes from `state` (sse.h): on a little-endian machine they
 * are tested as one word, their bytes masked. */
#define SSE_BYTE_AT(f) (8 * (offsetof(ts_sse, f) - offsetof(ts_sse, state)))
_Static_assert(offsetof(ts_sse, skipping) - offsetof(ts_sse, state) < 8 &&
                   offsetof(ts_sse, after_cr) - offsetof(ts_sse, state) < 8 &&
                   offsetof(ts_sse, data_mode) - offsetof(ts_sse, state) < 8,
               "state, data_mode, after_cr and skipping within 8 bytes");
static inline int between_events(const ts_sse *s) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const uint64_t mask = (uint64_t)0xFF << SSE_BYTE_AT(state) | (uint64_t)0xFF << SSE_BYTE_AT(after_cr) |
                        (uint64_t)0xFF << SSE_BYTE_AT(skipping) | (uint64_t)0xFF << SSE_BYTE_AT(data_mode);
  const uint64_t want = (uint64_t)S_LINE_START << SSE_BYTE_AT(state) | (uint64_t)D_NONE << SSE_BYTE_AT(data_mode);
  uint64_t w;
  memcpy(&w, &s->state, 8);
  return (w & mask) == want && s->name_len == 0;
#else
  return s->state == S_LINE_START && !s->after_cr && !s->skipping && s->data_mode == D_NONE && s->name_len == 0;
#endif
}

/* Runs the bytes [start, end) through the machine; s->pos is the offset of start.
 * `tried`: a byte where whole_event said no already (or NULL). */
static int run(ts_sse *s, char *start, char *end, char *tried) {
  run_ctx r = {start, end, s->pos, NULL, NULL};
  char *p = start; /* tried: where whole_event last said no (NULL: nowhere yet) */
  int rc = TS_E_OK;

  if (p != tried && between_events(s)) {
  events:
    p = events_any(s, start, p, end, &rc);
    if (rc) goto out;
    tried = p;
  }
  while (p < end && rc == TS_E_OK) {
    if (s->state == S_LINE_START) {
      if (s->after_cr) { /* the previous chunk ended with a CR */
        s->after_cr = 0;
        if (*p == '\n') p++;
        if (s->pending) {
          s->pending = 0;
          rc = dispatch(s, off(&r, p));
        }
        continue;
      }
      s->line_start = off(&r, p);
      if (*p == '\n' || *p == '\r') { /* blank line */
        p = line_end(s, &r, p);
        if (s->skipping) {
          s->skipping = 0; /* resynchronised */
          reset_event(s);
        } else if (s->data_mode == D_NONE) {
          reset_event(s); /* no data: nothing to dispatch, but forget the name */
        } else if (s->after_cr) {
          s->pending = 1; /* an LF may follow in the next chunk */
        } else {
          rc = dispatch(s, off(&r, p));
        }
        continue;
      }
      if (!s->skipping && (*p == 'd' || *p == 'e')) {
        if (p != tried && s->data_mode == D_NONE && s->name_len == 0) goto events;
        char *after = whole_line(s, &r, p, &rc);
        if (after) {
          p = after;
          continue;
        }
      }
      if (s->skipping) {
        s->state = S_SKIP_LINE;
      } else if (*p == ':') {
        s->state = S_VALUE; /* comment */
        s->field = F_NONE;
      } else {
        s->state = S_NAME;
        s->fname_len = 0;
      }
      continue;
    }

    char *q = find_eol(&r, p);
    if (s->state == S_SKIP_LINE) {
      p = q < end ? line_end(s, &r, q) : end;
      continue;
    }

    /* Inside a line: cut the segment at the line limit; a data line of an event that
     * keeps a head only has none (its bytes past the head are not stored). */
    uint64_t used = off(&r, p) - s->line_start;
    uint64_t room = used >= s->max_line ? 0 : (uint64_t)s->max_line - used;
    if (s->state == S_VALUE && s->field == F_DATA && keeps_head(s)) room = UINT64_MAX;
    char *seg = q;
    int over = 0;
    if ((uint64_t)(q - p) > room) {
      seg = p + room;
      over = 1;
    }
    rc = segment(s, &r, &p, seg);
    if (rc || s->state == S_SKIP_LINE || p < seg) continue;
    if (over) {
      if (s->state == S_VALUE && s->field == F_DATA && keeps_head(s)) continue; /* see above */
      rc = fail(s, TS_E_SSE_LINE_TOO_LONG, off(&r, p));
      continue;
    }
    if (p == end) break; /* the line goes on in the next chunk */
    rc = finish_line(s, &r, p);
    if (rc || s->state == S_SKIP_LINE) continue; /* SKIP_LINE consumes the ending */
    p = line_end(s, &r, p);
  }

out:
  rc = keep_view(s, &r, rc);
  s->pos = r.base + (uint64_t)(end - start);
  return rc;
}

/* ts_sse_feed for every other chunk: after an error or finish, at stream start (BOM), in
 * the middle of an event. */
__attribute__((noinline)) static int feed_any(ts_sse *s, char *buf, size_t len);

int ts_sse_feed(ts_sse *s, char *buf, size_t len) {
  /* between_events() rules out an error and finish too: both leave the state S_DONE */
  if (len && buf && between_events(s)) { /* the way events come */
#ifdef TS_SSE_AVX2
    if (s->simd) return feed_events_avx2(s, buf, len);
#endif
    return feed_events_base(s, buf, len);
  }
  return feed_any(s, buf, len);
}

static int feed_any(ts_sse *s, char *buf, size_t len) {
  if (s->err) return s->err;
  if (s->finished) return TS_E_SSE_FINISHED;
  if (len == 0) return TS_E_OK;
  if (buf == NULL) return TS_E_INVAL;
  char *p = buf;
  char *end = buf + len;
  if (s->state == S_BOM) {
    while (p < end && s->bom_n < 3 && (unsigned char)*p == bom[s->bom_n]) {
      p++;
      s->bom_n++;
    }
    s->pos = s->bom_n;
    if (s->bom_n == 3) {
      s->state = S_LINE_START;
    } else if (p == end) {
      return TS_E_OK; /* still a BOM prefix: wait for more */
    } else {
      /* Not a BOM: the matched bytes (some perhaps from earlier chunks, gone now) are
       * ordinary stream bytes. They are known constants: replay them from a copy. */
      char replay[3];
      size_t n = s->bom_n;
      memcpy(replay, bom, n);
      s->state = S_LINE_START;
      s->pos = 0;
      if (n) {
        int rc = run(s, replay, replay + n, NULL);
        if (rc) {
          s->pos += (uint64_t)(end - p);
          return rc;
        }
      }
    }
  }
  return run(s, p, end, NULL);
}

int ts_sse_cut(const ts_sse *s) {
  return !s->finished && !s->pending && s->data_mode != D_NONE;
}

int ts_sse_finish(ts_sse *s) {
  if (s->err) return s->err;
  if (s->finished) return TS_E_OK;
  s->finished = 1;
  s->after_cr = 0;
  if (s->pending) {
    s->pending = 0;
    int rc = dispatch(s, s->pos);
    if (rc) return rc;
  }
  reset_event(s); /* an unterminated event is dropped */
  s->state = S_DONE;
  return TS_E_OK;
}
