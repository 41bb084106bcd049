/*
 * json_tok.c: the incremental JSON tokenizer (contract in json_tok.h).
 *
 * The design in one paragraph. All state lives in a small struct: a grammar state
 * (what may come next: a value, a key, a colon, a comma or a close), a lexer state for
 * the token in progress (inside a string, after a backslash, k of 4 \u digits, a
 * pending high surrogate, n UTF-8 continuation bytes still due, which part of a number,
 * how many letters of a literal), the nesting depth and one bit per open container
 * (object or array). feed() loads that state into locals, jumps (one `switch`) to the
 * label that resumes exactly where the last chunk stopped, and stores it back. Each
 * grammar point is a label and the common transitions (key, colon, value, comma) jump
 * straight to the next one without going back through the switch. Nothing is buffered: a
 * string or number that is still open when the chunk ends is reported as a fragment
 * (a view into the chunk) and the next chunk continues it. Nothing rewinds: every byte
 * is looked at once by the lexer, and the byte that ends a number is looked at a
 * second time by the grammar.
 *
 * The hot path is a string body (a file's content inside a write_file call). It is
 * scanned 16 bytes at a time with SSE2 for the only bytes that need attention: `"`,
 * `\`, control bytes and non-ASCII bytes (one signed compare catches the last two).
 * Escapes and UTF-8 sequences are then checked byte by byte by a small state machine
 * and the fast scan resumes. Elsewhere a word-at-a-time scan does the same job, and it
 * also covers the last bytes of a short chunk (two overlapping words), so a 4-byte delta
 * inside a string costs one word test rather than a loop over a table.
 *
 * Per-call cost matters as much as per-byte cost (deltas of a few bytes). feed itself
 * is a frameless test: a chunk that is all plain string body goes to a small function
 * that reports it as one fragment; everything else goes to the state machine. The
 * error and finished conditions are states too (S_ERROR, S_FINISHED), so the healthy
 * path tests only `state`.
 *
 * Errors record the code and the absolute offset of the offending byte and become
 * sticky; no token is reported from that byte on.
 */
#include "stream/json_tok.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Grammar and lexer states. The order matters only for the range tests below. */
enum {
  S_VALUE = 0,      /* a value must come (start, after ':', after ',' in an array) */
  S_VALUE_OR_AEND,  /* after '[': a value or ']' */
  S_KEY_OR_OEND,    /* after '{': a key or '}' */
  S_KEY,            /* after ',' in an object: a key */
  S_COLON,          /* after a key */
  S_AFTER,          /* after a value inside a container: ',' or the close */
  S_DONE,           /* after the top-level value: whitespace only */
  S_STR,            /* inside a string or key body, between characters */
  S_STR_SUB,        /* inside a string, within an escape or a UTF-8 character (t->sub) */
  S_NUM_MINUS,      /* number: after '-' */
  S_NUM_ZERO,       /* number: after a leading 0 */
  S_NUM_INT,        /* number: in the integer digits */
  S_NUM_DOT,        /* number: after '.' */
  S_NUM_FRAC,       /* number: in the fraction digits */
  S_NUM_E,          /* number: after 'e' / 'E' */
  S_NUM_ESIGN,      /* number: after the exponent's sign */
  S_NUM_EXP,        /* number: in the exponent digits */
  S_LIT,            /* true / false / null: t->sub letters matched of literal t->lit */
  S_FINISHED,       /* finish succeeded (the value was complete: done() holds) */
  S_ERROR,          /* t->err is set; nothing more is reported */
};

/* Sub-states inside a string body. */
enum {
  STR_PLAIN = 0,
  STR_ESC,     /* after a backslash */
  STR_U,       /* in \u digits: t->uacc holds them, t->lit counts them */
  STR_SURR_BS, /* a high surrogate was read: a backslash must follow */
  STR_SURR_U,  /* ... then 'u' */
  STR_UTF8,    /* t->utf8_need continuation bytes still due */
};

static const char *const lit_text[3] = {"true", "false", "null"};
static const uint8_t lit_len[3] = {4, 5, 4};
static const uint8_t lit_kind[3] = {TS_JSON_TRUE, TS_JSON_FALSE, TS_JSON_NULL};

/* 1 for the bytes a string body must stop at: control bytes, '"', '\\' and every
 * non-ASCII byte (validated as UTF-8). Rows of 32 bytes: 0x00, 0x20, ... 0xE0. */
static const uint8_t str_stop[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TS_SWAR 1
/* Word-at-a-time stop test: a byte is flagged (its top bit set) if it is '"', '\\',
 * below 0x20 or from 0x80. The lowest flagged byte is exact; a byte above it may be
 * flagged falsely (a borrow), which never matters because we want the first. */
static inline uint64_t stop_bits64(uint64_t w) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
  return (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & highs;
}
static inline uint32_t stop_bits32(uint32_t w) {
  const uint32_t ones = 0x01010101u, highs = 0x80808080u;
  uint32_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
  return (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & highs;
}
#endif

/* The first stop byte in [p, end), or end, for end - p < 16: two overlapping words
 * cover the range (the bytes of the second word that the first already cleared hold
 * no stop byte, so they cannot flag anything above them). */
static inline const char *scan_short(const char *p, const char *end) {
#if defined(TS_SWAR)
  size_t r = (size_t)(end - p);
  if (r >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t h = stop_bits64(w);
    if (h) return p + (__builtin_ctzll(h) >> 3);
    if (r == 8) return end;
    memcpy(&w, end - 8, 8);
    h = stop_bits64(w) & (~0ull << (8 * (16 - r)));
    if (h) return end - 8 + (__builtin_ctzll(h) >> 3);
    return end;
  }
  if (r >= 4) {
    uint32_t w;
    memcpy(&w, p, 4);
    uint32_t h = stop_bits32(w);
    if (h) return p + (__builtin_ctz(h) >> 3);
    if (r == 4) return end;
    memcpy(&w, end - 4, 4);
    h = stop_bits32(w) & (~0u << (8 * (8 - r)));
    if (h) return end - 4 + (__builtin_ctz(h) >> 3);
    return end;
  }
#endif
  while (p < end && !str_stop[(uint8_t)*p]) p++;
  return p;
}

/* Returns the first byte in [p, end) that a string body must stop at, or end. `buf`
 * is the start of the chunk: bytes in [buf, p) may be read again (never past end). */
static inline const char *scan_string(const char *p, const char *end, const char *buf) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i bslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
#define STOP_MASK(v)                                                                       \
  ((unsigned)_mm_movemask_epi8(_mm_or_si128(                                               \
      _mm_or_si128(_mm_cmpeq_epi8((v), quote), _mm_cmpeq_epi8((v), bslash)),               \
      _mm_cmplt_epi8((v), space))))
  while (end - p >= 16) {
    /* signed compare: bytes 0x80-0xff are negative, so "< 0x20" also catches them */
    unsigned mask = STOP_MASK(_mm_loadu_si128((const __m128i *)(const void *)p));
    if (mask) return p + __builtin_ctz(mask);
    p += 16;
  }
  if (p == end) return end;
  if (end - buf >= 16) {
    /* The last 16 bytes of the chunk, ignoring those before p. */
    size_t r = (size_t)(end - p);
    unsigned mask = STOP_MASK(_mm_loadu_si128((const __m128i *)(const void *)(end - 16))) >>
                    (16 - r);
    return mask ? p + __builtin_ctz(mask) : end;
  }
#undef STOP_MASK
#elif defined(TS_SWAR)
  (void)buf;
  while (end - p >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t h = stop_bits64(w);
    if (h) return p + (__builtin_ctzll(h) >> 3);
    p += 8;
  }
#else
  (void)buf;
#endif
  return scan_short(p, end);
}

static inline int is_ws(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

static inline int hexval(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  c |= 0x20;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

int ts_json_tok_init(ts_json_tok *t, uint32_t max_depth, ts_json_tok_cb cb, void *user) {
  if (!t) return TS_E_INVAL;
  memset(t, 0, offsetof(ts_json_tok, stack));
  if (!cb || max_depth > TS_JSON_MAX_DEPTH_CAP) {
    t->err = TS_E_INVAL;
    t->state = S_ERROR;
    return TS_E_INVAL;
  }
  t->cb = cb;
  t->user = user;
  t->max_depth = max_depth ? max_depth : TS_JSON_DEFAULT_MAX_DEPTH;
  t->state = S_VALUE;
  return TS_E_OK;
}

int ts_json_tok_done(const ts_json_tok *t) {
  return (t->state == S_DONE || t->state == S_FINISHED) && !t->err;
}

/* ---- string bodies ---------------------------------------------------------------------
 * One lexer for string bodies serves both the machine and feed's string fast path. The
 * plain part is inline: scan to the next stop byte, step over a one-character escape.
 * Everything else goes out of line: str_special accepts a \u escape (or a surrogate
 * pair) or a UTF-8 character held whole in the chunk with a few tests, and hands
 * anything cut by the chunk's end or wrong to str_sub_run, the byte-at-a-time machine
 * that keeps its place in t->sub (and t->uacc, t->lit, t->utf8_*) between chunks and
 * finds an error at the same byte whatever the chunking. */

static inline int hex4(const char *p) {
  int a = hexval((uint8_t)p[0]), b = hexval((uint8_t)p[1]), c = hexval((uint8_t)p[2]),
      d = hexval((uint8_t)p[3]);
  return (a | b | c | d) < 0 ? -1 : (a << 12) | (b << 8) | (c << 4) | d;
}

/* 1 for the characters of a one-character escape (after the backslash). */
static const uint8_t esc_simple[256] = {
    ['"'] = 1, ['\\'] = 1, ['/'] = 1, ['b'] = 1, ['f'] = 1, ['n'] = 1, ['r'] = 1, ['t'] = 1,
};

/* Continues the string body at p, one byte at a time, from sub-state t->sub (which may
 * be STR_PLAIN with p at a backslash, a control byte or a non-ASCII byte). Returns the
 * byte after the escape or character once t->sub is back to STR_PLAIN, or end (t->sub
 * says where the next chunk resumes), or, with *err set, the offending byte. */
__attribute__((noinline)) static const char *str_sub_run(ts_json_tok *t, const char *p,
                                                         const char *end, int *err) {
  unsigned sub = t->sub;
  while (p < end) {
    const uint8_t c = (uint8_t)*p;
    switch (sub) {
      case STR_PLAIN:
        if (c == '\\') {
          sub = STR_ESC;
          break;
        }
        if (c < 0x20) {
          *err = TS_E_JSON_CTRL;
          goto stop;
        }
        /* UTF-8 lead byte: how many continuation bytes follow and the range of the
         * first one (which excludes overlong forms, encoded surrogates and code points
         * above U+10FFFF) */
        t->utf8_lo = 0x80, t->utf8_hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
          t->utf8_need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
          t->utf8_need = 2;
          if (c == 0xE0) t->utf8_lo = 0xA0;
          if (c == 0xED) t->utf8_hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
          t->utf8_need = 3;
          if (c == 0xF0) t->utf8_lo = 0x90;
          if (c == 0xF4) t->utf8_hi = 0x8F;
        } else {
          *err = TS_E_JSON_UTF8;
          goto stop;
        }
        sub = STR_UTF8;
        break;
      case STR_UTF8:
        if (c < t->utf8_lo || c > t->utf8_hi) {
          *err = TS_E_JSON_UTF8;
          goto stop;
        }
        t->utf8_lo = 0x80, t->utf8_hi = 0xBF;
        if (--t->utf8_need == 0) sub = STR_PLAIN;
        break;
      case STR_ESC:
        if (c == 'u') {
          sub = STR_U;
          t->uacc = 0;
          t->lit = 0; /* digits seen (lit is free inside strings) */
        } else if (esc_simple[c]) {
          sub = STR_PLAIN;
        } else {
          *err = TS_E_JSON_ESCAPE;
          goto stop;
        }
        break;
      case STR_U: {
        int h = hexval(c);
        if (h < 0) {
          *err = TS_E_JSON_ESCAPE;
          goto stop;
        }
        t->uacc = (uint16_t)((t->uacc << 4) | (unsigned)h);
        if (++t->lit < 4) break;
        uint16_t u = t->uacc;
        if (t->hi_surrogate) {
          if (u < 0xDC00 || u > 0xDFFF) {
            *err = TS_E_JSON_SURROGATE;
            goto stop;
          }
          t->hi_surrogate = 0;
          sub = STR_PLAIN;
        } else if (u >= 0xD800 && u <= 0xDBFF) {
          t->hi_surrogate = u;
          sub = STR_SURR_BS;
        } else if (u >= 0xDC00 && u <= 0xDFFF) {
          *err = TS_E_JSON_SURROGATE;
          goto stop;
        } else {
          sub = STR_PLAIN;
        }
        break;
      }
      case STR_SURR_BS:
        if (c != '\\') {
          *err = TS_E_JSON_SURROGATE;
          goto stop;
        }
        sub = STR_SURR_U;
        break;
      case STR_SURR_U:
        if (c != 'u') {
          *err = TS_E_JSON_SURROGATE;
          goto stop;
        }
        sub = STR_U;
        t->uacc = 0;
        t->lit = 0;
        break;
    }
    p++;
    if (sub == STR_PLAIN) break;
  }
stop:
  t->sub = (uint8_t)sub;
  return p;
}

/* p is at a stop byte other than the quote and a one-character escape, with t->sub ==
 * STR_PLAIN. Accepts a \u escape, a surrogate pair or a UTF-8 character held whole in
 * [p, end) and returns the byte after it; anything else goes to str_sub_run. */
__attribute__((noinline)) static const char *str_special(ts_json_tok *t, const char *p,
                                                         const char *end, int *err) {
  const unsigned c = (uint8_t)*p;
  if (c == '\\') {
    if (end - p >= 6 && p[1] == 'u') {
      const int u = hex4(p + 2);
      if (u >= 0 && (u < 0xD800 || u > 0xDFFF)) return p + 6;
      if (u >= 0xD800 && u <= 0xDBFF && end - p >= 12 && p[6] == '\\' && p[7] == 'u') {
        const int lo = hex4(p + 8);
        if (lo >= 0xDC00 && lo <= 0xDFFF) return p + 12;
      }
    }
  } else if (c >= 0xC2 && c <= 0xF4) {
    const unsigned need = c < 0xE0 ? 1u : c < 0xF0 ? 2u : 3u;
    if ((size_t)(end - p) > need) {
      const unsigned d = (uint8_t)p[1];
      const unsigned lo = c == 0xE0 ? 0xA0u : c == 0xF0 ? 0x90u : 0x80u;
      const unsigned hi = c == 0xED ? 0x9Fu : c == 0xF4 ? 0x8Fu : 0xBFu;
      if (d >= lo && d <= hi && (need < 2 || ((uint8_t)p[2] & 0xC0) == 0x80) &&
          (need < 3 || ((uint8_t)p[3] & 0xC0) == 0x80))
        return p + need + 1;
    }
  }
  return str_sub_run(t, p, end, err);
}

/* Lexes a string body from p (t->sub says where it stands). Returns the closing quote,
 * or end (the chunk ended inside the string; t->sub says where), or, with *err set, the
 * offending byte. `buf` is the chunk's start (see scan_string). */
static inline __attribute__((always_inline)) const char *
str_body(ts_json_tok *t, const char *p, const char *end, const char *buf, int *err) {
  if (__builtin_expect(t->sub != STR_PLAIN, 0)) goto special;
  for (;;) {
    p = scan_string(p, end, buf);
    if (p == end) return p;
    if (*p == '"') return p;
    if (*p == '\\' && end - p >= 2 && esc_simple[(uint8_t)p[1]]) {
      p += 2;
      continue;
    }
    if (t->sub == STR_PLAIN) {
      p = str_special(t, p, end, err);
    } else {
    special:
      p = str_sub_run(t, p, end, err);
    }
    if (*err || t->sub != STR_PLAIN) return p;
  }
}

/* The state machine. `sp`, if not NULL, says that the chunk begins inside a plain
 * string body whose scan already stopped at sp. Grammar points are labels; the common
 * transitions jump straight to the next one, and each label saves its own state when
 * the chunk runs out. Locals mirror the hot fields of *t and are stored back at `out`
 * (the callback sees t->pos and t->depth as they were when feed was called). */
__attribute__((noinline)) static int feed_machine(ts_json_tok *t, const char *buf, size_t len,
                                                  const char *sp) {
  unsigned state = t->state;
  if (state >= S_FINISHED) {
    /* still counted: ts_json_tok_offset is the bytes fed, however they were chunked */
    t->pos += len;
    return state == S_ERROR ? t->err : TS_E_JSON_FINISHED;
  }
  if (len == 0) return TS_E_OK;

  const char *p = buf;
  const char *const end = buf + len;
  const uint64_t base = t->pos;
  const uint64_t bias = base - (uint64_t)(uintptr_t)buf;
  uint32_t depth = t->depth;
  unsigned obj = t->in_obj;     /* the innermost container is an object */
  unsigned first = t->tok.flags; /* TS_JSON_FIRST until the open token reports a fragment */
  unsigned skind = t->tok.kind;  /* TS_JSON_KEY or TS_JSON_STRING, inside a string */
  const char *frag = buf; /* start of the key/string/number text in this chunk */
  int err = 0;
  uint8_t c;
  ts_json_token tok;

#define OFF(ptr) ((uint64_t)(uintptr_t)(ptr) + bias)
#define FAIL(code) \
  do {             \
    err = (code);  \
    goto fail;     \
  } while (0)
#define EMIT(k, txt, n, off, d, fl)               \
  do {                                            \
    tok.text = (txt);                             \
    tok.len = (n);                                \
    tok.offset = (off);                           \
    tok.depth = (d);                              \
    tok.kind = (uint8_t)(k);                      \
    tok.flags = (uint8_t)(fl);                    \
    if (t->cb(t->user, &tok)) FAIL(TS_E_ABORTED); \
  } while (0)
/* Report [frag, q) as a fragment of the current key/string/number. */
#define EMIT_FRAG(k, q, last)                                                             \
  do {                                                                                    \
    EMIT((k), frag, (size_t)((q)-frag), OFF(frag), depth, first | ((last) ? TS_JSON_LAST : 0u)); \
    first = 0;                                                                            \
  } while (0)
/* Whitespace: anything above ' ' is not, so one compare settles the common case. */
#define SKIP_WS(label)                  \
  if (c <= ' ' && is_ws(c)) {           \
    p++;                                \
    goto label;                         \
  }

  if (sp) {
    p = sp; /* a string's closing quote */
    goto str_quote;
  }
  switch (state) {
    case S_VALUE: goto g_value;
    case S_VALUE_OR_AEND: goto g_value_or_aend;
    case S_KEY_OR_OEND: goto g_key_or_oend;
    case S_KEY: goto g_key;
    case S_COLON: goto g_colon;
    case S_AFTER: goto g_after;
    case S_DONE: goto g_done;
    case S_STR:
    case S_STR_SUB: goto str_resume;
    case S_NUM_MINUS: goto n_minus;
    case S_NUM_ZERO: goto n_zero;
    case S_NUM_INT: goto n_int;
    case S_NUM_DOT: goto n_dot;
    case S_NUM_FRAC: goto n_frac;
    case S_NUM_E: goto n_e;
    case S_NUM_ESIGN: goto n_esign;
    case S_NUM_EXP: goto n_exp;
    default: goto lit_resume;
  }

  /* ---- grammar ---- */
g_value: /* a value must come */
  if (p == end) {
    state = S_VALUE;
    goto out;
  }
  c = (uint8_t)*p;
value_c:
  if (c == '"') {
    skind = TS_JSON_STRING;
    goto str_open;
  }
  if ((uint8_t)(c - '0') <= 9 || c == '-') goto num_open;
  if (c == '{' || c == '[') goto open;
  if (c == 't' || c == 'f' || c == 'n') goto lit_open;
  SKIP_WS(g_value);
  FAIL(TS_E_JSON_SYNTAX);

g_value_or_aend: /* after '[' */
  if (p == end) {
    state = S_VALUE_OR_AEND;
    goto out;
  }
  c = (uint8_t)*p;
  if (c == ']') goto close_array;
  SKIP_WS(g_value_or_aend);
  goto value_c;

g_key_or_oend: /* after '{' */
  if (p == end) {
    state = S_KEY_OR_OEND;
    goto out;
  }
  c = (uint8_t)*p;
  if (c == '"') {
    skind = TS_JSON_KEY;
    goto str_open;
  }
  if (c == '}') goto close_object;
  SKIP_WS(g_key_or_oend);
  FAIL(TS_E_JSON_SYNTAX);

g_key: /* after ',' in an object */
  if (p == end) {
    state = S_KEY;
    goto out;
  }
  c = (uint8_t)*p;
  if (c == '"') {
    skind = TS_JSON_KEY;
    goto str_open;
  }
  SKIP_WS(g_key);
  FAIL(TS_E_JSON_SYNTAX);

g_colon: /* after a key */
  if (p == end) {
    state = S_COLON;
    goto out;
  }
  c = (uint8_t)*p;
  if (c == ':') {
    p++;
    goto g_value;
  }
  SKIP_WS(g_colon);
  FAIL(TS_E_JSON_SYNTAX);

after_value: /* a value just completed; p is at the byte after it */
  if (!depth) goto g_done;
g_after: /* after a value inside a container */
  if (p == end) {
    state = S_AFTER;
    goto out;
  }
  c = (uint8_t)*p;
  if (c == ',') {
    p++;
    if (obj) goto g_key;
    goto g_value;
  }
  if (c == '}' && obj) goto close_object;
  if (c == ']' && !obj) goto close_array;
  SKIP_WS(g_after);
  FAIL(TS_E_JSON_SYNTAX);

g_done: /* after the top-level value */
  if (p == end) {
    state = S_DONE;
    goto out;
  }
  c = (uint8_t)*p;
  SKIP_WS(g_done);
  FAIL(TS_E_JSON_TRAILING);

open:
  if (depth >= t->max_depth) FAIL(TS_E_JSON_DEPTH);
  obj = c == '{';
  EMIT(obj ? TS_JSON_OBJECT_BEGIN : TS_JSON_ARRAY_BEGIN, p, 1, OFF(p), depth,
       TS_JSON_FIRST | TS_JSON_LAST);
  if (obj)
    t->stack[depth >> 3] |= (uint8_t)(1u << (depth & 7));
  else
    t->stack[depth >> 3] &= (uint8_t) ~(1u << (depth & 7));
  depth++;
  p++;
  if (obj) goto g_key_or_oend;
  goto g_value_or_aend;

close_object:
  depth--;
  EMIT(TS_JSON_OBJECT_END, p, 1, OFF(p), depth, TS_JSON_FIRST | TS_JSON_LAST);
  goto closed;
close_array:
  depth--;
  EMIT(TS_JSON_ARRAY_END, p, 1, OFF(p), depth, TS_JSON_FIRST | TS_JSON_LAST);
closed:
  p++;
  if (!depth) goto g_done;
  obj = (t->stack[(depth - 1) >> 3] >> ((depth - 1) & 7)) & 1;
  goto g_after;

  /* ---- strings ---- */
str_open:
  p++;
  frag = p;
  first = TS_JSON_FIRST;
  t->sub = STR_PLAIN;
str_resume:
  p = str_body(t, p, end, buf, &err);
  if (err) goto fail;
  if (p == end) goto str_chunk_end;
str_quote:
  EMIT_FRAG(skind, p, 1);
  p++;
  if (skind == TS_JSON_KEY) goto g_colon;
  goto after_value;

str_chunk_end:
  state = t->sub == STR_PLAIN ? S_STR : S_STR_SUB;
  if (p != frag) EMIT_FRAG(skind, p, 0);
  goto out;

  /* ---- numbers ---- */
num_open:
  frag = p;
  first = TS_JSON_FIRST;
  p++;
  if (c == '-') goto n_minus;
  if (c == '0') goto n_zero;
  goto n_int;
n_minus:
  if (p == end) {
    state = S_NUM_MINUS;
    goto num_chunk_end;
  }
  if (*p == '0') {
    p++;
    goto n_zero;
  }
  if (*p >= '1' && *p <= '9') {
    p++;
    goto n_int;
  }
  FAIL(TS_E_JSON_NUMBER);
n_zero:
  if (p == end) {
    state = S_NUM_ZERO;
    goto num_chunk_end;
  }
  if ((uint8_t)(*p - '0') <= 9) FAIL(TS_E_JSON_NUMBER);
  goto n_after_int;
n_int:
  while (p < end && (uint8_t)(*p - '0') <= 9) p++;
  if (p == end) {
    state = S_NUM_INT;
    goto num_chunk_end;
  }
n_after_int:
  if (*p == '.') {
    p++;
    goto n_dot;
  }
  if ((*p | 0x20) == 'e') {
    p++;
    goto n_e;
  }
  goto num_end;
n_dot:
  if (p == end) {
    state = S_NUM_DOT;
    goto num_chunk_end;
  }
  if ((uint8_t)(*p - '0') > 9) FAIL(TS_E_JSON_NUMBER);
  p++;
n_frac:
  while (p < end && (uint8_t)(*p - '0') <= 9) p++;
  if (p == end) {
    state = S_NUM_FRAC;
    goto num_chunk_end;
  }
  if ((*p | 0x20) == 'e') {
    p++;
    goto n_e;
  }
  goto num_end;
n_e:
  if (p == end) {
    state = S_NUM_E;
    goto num_chunk_end;
  }
  if (*p == '+' || *p == '-') {
    p++;
    goto n_esign;
  }
  if ((uint8_t)(*p - '0') > 9) FAIL(TS_E_JSON_NUMBER);
  p++;
  goto n_exp;
n_esign:
  if (p == end) {
    state = S_NUM_ESIGN;
    goto num_chunk_end;
  }
  if ((uint8_t)(*p - '0') > 9) FAIL(TS_E_JSON_NUMBER);
  p++;
n_exp:
  while (p < end && (uint8_t)(*p - '0') <= 9) p++;
  if (p == end) {
    state = S_NUM_EXP;
    goto num_chunk_end;
  }
num_end:
  /* *p ends the number; the grammar looks at it next. */
  EMIT_FRAG(TS_JSON_NUMBER, p, 1);
  goto after_value;
num_chunk_end:
  if (p != frag) EMIT_FRAG(TS_JSON_NUMBER, p, 0);
  goto out;

  /* ---- literals ---- */
lit_open:
  t->lit = c == 't' ? 0 : c == 'f' ? 1 : 2;
  t->sub = 0;
  t->tok_start = OFF(p);
lit_resume: {
  const unsigned lit = t->lit;
  const char *want = lit_text[lit];
  const unsigned n = lit_len[lit];
  unsigned k = t->sub;
  while (p < end && k < n) {
    if (*p != want[k]) FAIL(TS_E_JSON_LITERAL);
    k++;
    p++;
  }
  if (k < n) {
    t->sub = (uint8_t)k;
    state = S_LIT;
    goto out;
  }
  EMIT(lit_kind[lit], want, n, t->tok_start, depth, TS_JSON_FIRST | TS_JSON_LAST);
  goto after_value;
}

out:
  t->state = (uint8_t)state;
  t->depth = depth;
  t->in_obj = (uint8_t)obj;
  /* the open token, for the next call (kind matters only inside a string) */
  t->tok.flags = (uint8_t)first;
  t->tok.kind = (uint8_t)skind;
  t->tok.depth = depth;
  t->pos = base + len;
  return TS_E_OK;

fail:
  t->state = S_ERROR;
  t->depth = depth;
  t->err = err;
  t->err_offset = OFF(p);
  t->pos = base + len;
  return err;
#undef OFF
#undef FAIL
#undef EMIT
#undef EMIT_FRAG
#undef SKIP_WS
}

/* ---- the string fast path ------------------------------------------------------------
 * A long string arriving in small deltas is the common case (a file's content inside a
 * write_file call), and there the cost of a call matters more than the cost of a byte.
 * A chunk that continues a string goes through the three functions below and never
 * through the machine: the token in progress lives in t->tok (kind, depth, first-ness),
 * so reporting the chunk writes only its view. Escapes and UTF-8 characters held whole
 * in the chunk are checked here too; anything else (the closing quote, an escape or a
 * character cut by the chunk's end, a surrogate pair, a byte in error) hands the rest
 * of the chunk to the machine at the byte that needs it, with nothing reported yet. */

/* The callback stopped the tokenizer during a fast-path fragment. Cold. */
__attribute__((noinline, cold)) static int fast_aborted(ts_json_tok *t, size_t len) {
  t->state = S_ERROR;
  t->err = TS_E_ABORTED;
  t->err_offset = t->pos + len;
  t->pos += len;
  return TS_E_ABORTED;
}

/* Reports the whole chunk [buf, buf + len) as the next fragment of the open string. */
static inline int str_fragment(ts_json_tok *t, const char *buf, size_t len) {
  t->tok.text = buf;
  t->tok.len = len;
  t->tok.offset = t->pos;
  if (__builtin_expect(t->cb(t->user, &t->tok) != 0, 0)) return fast_aborted(t, len);
  t->tok.flags = 0;
  t->pos += t->tok.len; /* the callback cannot change it; no need to keep len alive */
  return TS_E_OK;
}

/* 1 if [buf, buf + len), 0 < len <= 16, holds a byte a string body must stop at. */
static inline int short_has_stop(const char *buf, size_t len) {
#if defined(__SSE2__)
  const char *const end = buf + len;
  __m128i v;
  unsigned keep = 0xFFFF;
  if (len >= 8) {
    /* two overlapping words cover the chunk */
    v = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(const void *)buf),
                           _mm_loadl_epi64((const __m128i *)(const void *)(end - 8)));
  } else if (len >= 4) {
    uint32_t a, b;
    memcpy(&a, buf, 4);
    memcpy(&b, end - 4, 4);
    v = _mm_cvtsi64_si128((long long)(a | (uint64_t)b << 32));
    keep = 0xFF; /* the upper lanes are zero, which would count as control bytes */
  } else {
    return scan_short(buf, end) != end;
  }
  const __m128i stop =
      _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                   _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
  return ((unsigned)_mm_movemask_epi8(stop) & keep) != 0;
#else
  return scan_short(buf, buf + len) != buf + len;
#endif
}

/* The chunk [buf, buf + len) continues a string (t->state is S_STR or S_STR_SUB).
 * If it holds no closing quote and no error, it is one fragment; otherwise the machine
 * takes over at the quote, or the error is recorded here. */
__attribute__((noinline)) static int str_more(ts_json_tok *t, const char *buf, size_t len) {
  const char *const end = buf + len;
  int err = 0;
  const char *p = str_body(t, buf, end, buf, &err);
  if (__builtin_expect(err != 0, 0)) {
    t->state = S_ERROR;
    t->err = err;
    t->err_offset = t->pos + (uint64_t)(p - buf);
    t->pos += len;
    return err;
  }
  if (p == end) {
    t->state = t->sub == STR_PLAIN ? S_STR : S_STR_SUB;
    return str_fragment(t, buf, len);
  }
  return feed_machine(t, buf, len, p);
}

int ts_json_tok_feed(ts_json_tok *t, const char *buf, size_t len) {
  /* Inside a string between characters (which also excludes the error and finished
   * states): scan the chunk; all string body is one fragment, no state changes. */
  const unsigned state = t->state;
  if (state == S_STR && len && len <= 16 && !short_has_stop(buf, len))
    return str_fragment(t, buf, len);
  if ((state == S_STR || state == S_STR_SUB) && len) return str_more(t, buf, len);
  return feed_machine(t, buf, len, NULL);
}

int ts_json_tok_finish(ts_json_tok *t) {
  unsigned state = t->state;
  if (state == S_ERROR) return t->err;
  if (state == S_FINISHED) return TS_E_OK;
  int err = TS_E_OK;
  if (state == S_NUM_ZERO || state == S_NUM_INT || state == S_NUM_FRAC || state == S_NUM_EXP) {
    if (t->depth == 0) {
      /* A top-level number ends at the end of input: report its (empty) last fragment. */
      ts_json_token tok = {.text = "",
                           .len = 0,
                           .offset = t->pos,
                           .depth = 0,
                           .kind = TS_JSON_NUMBER,
                           .flags = (uint8_t)(t->tok.flags | TS_JSON_LAST)};
      t->tok.flags = 0;
      if (t->cb(t->user, &tok)) {
        err = TS_E_ABORTED;
      } else {
        t->state = S_DONE;
        state = S_DONE;
      }
    }
  }
  if (!err && state != S_DONE)
    err = (state == S_VALUE && t->depth == 0) ? TS_E_JSON_EMPTY : TS_E_JSON_TRUNCATED;
  if (err) {
    t->state = S_ERROR;
    t->err = err;
    t->err_offset = t->pos;
    return err;
  }
  t->state = S_FINISHED;
  return TS_E_OK;
}
