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
  S_STR,            /* inside a string or key body (sub-state in t->sub) */
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
  unsigned first = t->first;    /* TS_JSON_FIRST until the open token reports a fragment */
  unsigned skind = t->str_kind; /* TS_JSON_KEY or TS_JSON_STRING */
  unsigned sub = STR_PLAIN;
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
    p = sp;
    goto str_stop;
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
      sub = t->sub;
      if (sub == STR_PLAIN) goto str_plain;
      goto str_sub;
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
str_plain:
  p = scan_string(p, end, buf);
  if (p == end) {
    sub = STR_PLAIN;
    goto str_chunk_end;
  }
str_stop:
  c = (uint8_t)*p;
  if (c == '"') {
    EMIT_FRAG(skind, p, 1);
    p++;
    if (skind == TS_JSON_KEY) goto g_colon;
    goto after_value;
  }
  if (c == '\\') {
    p++;
    sub = STR_ESC;
    if (p == end) goto str_chunk_end;
    c = (uint8_t)*p;
    if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' ||
        c == 't') {
      p++;
      goto str_plain;
    }
    goto str_sub_c;
  }
  if (c < 0x20) FAIL(TS_E_JSON_CTRL);
  {
    /* UTF-8 lead byte: how many continuation bytes follow and the range of the first
     * one (which excludes overlong forms, encoded surrogates and code points above
     * U+10FFFF). */
    unsigned need, lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      FAIL(TS_E_JSON_UTF8);
    }
    p++;
    for (;;) {
      if (p == end) {
        t->utf8_need = (uint8_t)need, t->utf8_lo = (uint8_t)lo, t->utf8_hi = (uint8_t)hi;
        sub = STR_UTF8;
        goto str_chunk_end;
      }
      uint8_t d = (uint8_t)*p;
      if (d < lo || d > hi) FAIL(TS_E_JSON_UTF8);
      lo = 0x80, hi = 0xBF;
      p++;
      if (--need == 0) goto str_plain;
    }
  }

str_sub: /* inside an escape or a UTF-8 character: one byte at a time */
  if (p == end) goto str_chunk_end;
  c = (uint8_t)*p;
str_sub_c:
  switch (sub) {
    case STR_UTF8:
      if (c < t->utf8_lo || c > t->utf8_hi) FAIL(TS_E_JSON_UTF8);
      t->utf8_lo = 0x80, t->utf8_hi = 0xBF;
      if (--t->utf8_need == 0) sub = STR_PLAIN;
      break;
    case STR_ESC:
      if (c == 'u') {
        sub = STR_U;
        t->uacc = 0;
        t->lit = 0; /* digits seen (lit is free inside strings) */
      } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
                 c == 'r' || c == 't') {
        sub = STR_PLAIN;
      } else {
        FAIL(TS_E_JSON_ESCAPE);
      }
      break;
    case STR_U: {
      int h = hexval(c);
      if (h < 0) FAIL(TS_E_JSON_ESCAPE);
      t->uacc = (uint16_t)((t->uacc << 4) | (unsigned)h);
      if (++t->lit < 4) break;
      uint16_t u = t->uacc;
      if (t->hi_surrogate) {
        if (u < 0xDC00 || u > 0xDFFF) FAIL(TS_E_JSON_SURROGATE);
        t->hi_surrogate = 0;
        sub = STR_PLAIN;
      } else if (u >= 0xD800 && u <= 0xDBFF) {
        t->hi_surrogate = u;
        sub = STR_SURR_BS;
      } else if (u >= 0xDC00 && u <= 0xDFFF) {
        FAIL(TS_E_JSON_SURROGATE);
      } else {
        sub = STR_PLAIN;
      }
      break;
    }
    case STR_SURR_BS:
      if (c != '\\') FAIL(TS_E_JSON_SURROGATE);
      sub = STR_SURR_U;
      break;
    case STR_SURR_U:
      if (c != 'u') FAIL(TS_E_JSON_SURROGATE);
      sub = STR_U;
      t->uacc = 0;
      t->lit = 0;
      break;
  }
  p++;
  if (sub == STR_PLAIN) goto str_plain;
  goto str_sub;

str_chunk_end:
  t->sub = (uint8_t)sub;
  state = S_STR;
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
  t->first = (uint8_t)first;
  t->str_kind = (uint8_t)skind;
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

/* The fast path's one fragment: the whole chunk [buf, buf + len) is string body. Out of
 * line so that feed itself needs no stack frame. */
__attribute__((noinline)) static int feed_whole_fragment(ts_json_tok *t, const char *buf,
                                                         size_t len) {
  const uint64_t pos = t->pos;
  ts_json_token ft;
  ft.text = buf;
  ft.len = len;
  ft.offset = pos;
  ft.depth = t->depth;
  ft.kind = t->str_kind;
  ft.flags = t->first;
  t->first = 0;
  if (t->cb(t->user, &ft)) {
    t->state = S_ERROR;
    t->err = TS_E_ABORTED;
    t->err_offset = pos + len;
    t->pos = pos + len;
    return TS_E_ABORTED;
  }
  t->pos = pos + len;
  return TS_E_OK;
}

int ts_json_tok_feed(ts_json_tok *t, const char *buf, size_t len) {
  /* Fast path for the common case of a long string arriving in small deltas: the
   * whole chunk is plain string body. One scan, one fragment, no state change. The
   * state test also excludes the error and finished states. */
  if (t->state == S_STR && t->sub == STR_PLAIN && len) {
    const char *const end = buf + len;
    const char *s = scan_string(buf, end, buf);
    if (s == end) return feed_whole_fragment(t, buf, len);
    return feed_machine(t, buf, len, s);
  }
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
                           .flags = (uint8_t)(t->first | TS_JSON_LAST)};
      t->first = 0;
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
