/*
 * json_tok.c: the incremental JSON tokenizer (contract in json_tok.h).
 *
 * The design in one paragraph. All state lives in a small struct: a grammar state
 * (what may come next: a value, a key, a colon, a comma or a close), a lexer state for
 * the token in progress (inside a string, after a backslash, k of 4 \u digits, a
 * pending high surrogate, n UTF-8 continuation bytes still due, which part of a number,
 * how many letters of a literal), the nesting depth and one bit per open container
 * (object or array). feed() loads that state into locals, runs a `switch` that resumes
 * exactly where the last chunk stopped, and stores it back. Nothing is buffered: a
 * string or number that is still open when the chunk ends is reported as a fragment
 * (a view into the chunk) and the next chunk continues it. Nothing rewinds: every byte
 * is looked at once by the lexer, and the byte that ends a number is looked at a
 * second time by the grammar.
 *
 * The hot path is a string body (a file's content inside a write_file call). It is
 * scanned 16 bytes at a time with SSE2 for the only bytes that need attention: `"`,
 * `\`, control bytes and non-ASCII bytes (one signed compare catches the last two).
 * Escapes and UTF-8 sequences are then checked byte by byte by a small state machine
 * and the fast scan resumes. Elsewhere a word-at-a-time scan does the same job.
 *
 * Errors record the code and the absolute offset of the offending byte and become
 * sticky; no token is reported from that byte on.
 */
#include "json_tok.h"

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

/* Returns the first byte in [p, end) that a string body must stop at, or end. */
static inline const char *scan_string(const char *p, const char *end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i bslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  while (end - p >= 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    /* signed compare: bytes 0x80-0xff are negative, so "< 0x20" also catches them */
    __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                             _mm_cmplt_epi8(v, space));
    unsigned mask = (unsigned)_mm_movemask_epi8(m);
    if (mask) return p + __builtin_ctz(mask);
    p += 16;
  }
#else
  /* Word at a time: a byte is interesting if it is '"', '\\', < 0x20 or >= 0x80. The
   * lowest flagged byte is exact; we confirm with the table anyway. */
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  while (end - p >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    uint64_t hit = ((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w;
    hit &= highs;
    if (hit) break;
    p += 8;
  }
#endif
  while (p < end && !str_stop[(uint8_t)*p]) p++;
  return p;
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
    return TS_E_INVAL;
  }
  t->cb = cb;
  t->user = user;
  t->max_depth = max_depth ? max_depth : TS_JSON_DEFAULT_MAX_DEPTH;
  t->state = S_VALUE;
  return TS_E_OK;
}

int ts_json_tok_done(const ts_json_tok *t) { return t->state == S_DONE && !t->err; }

/* The body of feed. Locals mirror the hot fields of *t; SAVE() writes them back. */
int ts_json_tok_feed(ts_json_tok *t, const char *buf, size_t len) {
  if (t->err) return t->err;
  if (t->finished) return TS_E_JSON_FINISHED;
  if (len == 0) return TS_E_OK;

  /* Fast path for the common case of a long string arriving in small deltas: the
   * whole chunk is plain string body. One scan, one fragment, no state change. */
  if (t->state == S_STR && t->sub == STR_PLAIN && scan_string(buf, buf + len) == buf + len) {
    ts_json_token ft = {.text = buf,
                        .len = len,
                        .offset = t->pos,
                        .depth = t->depth,
                        .kind = (uint8_t)(t->in_key ? TS_JSON_KEY : TS_JSON_STRING),
                        .flags = (uint8_t)(t->emitted ? 0u : TS_JSON_FIRST)};
    t->emitted = 1;
    if (t->cb(t->user, &ft)) {
      t->err = TS_E_ABORTED;
      t->err_offset = t->pos + len;
      t->pos += len;
      return TS_E_ABORTED;
    }
    t->pos += len;
    return TS_E_OK;
  }

  const char *p = buf;
  const char *const end = buf + len;
  const uint64_t base = t->pos;
  unsigned state = t->state;
  uint32_t depth = t->depth;
  const char *frag = buf; /* start of the key/string/number text in this chunk */
  int err = 0;
  ts_json_token tok;

#define OFF(ptr) (base + (uint64_t)((ptr) - buf))
#define FAIL(code) \
  do {             \
    err = (code);  \
    goto fail;     \
  } while (0)
#define EMIT(k, txt, n, off, d, fl)              \
  do {                                           \
    tok.text = (txt);                            \
    tok.len = (n);                               \
    tok.offset = (off);                          \
    tok.depth = (d);                             \
    tok.kind = (uint8_t)(k);                     \
    tok.flags = (uint8_t)(fl);                   \
    if (t->cb(t->user, &tok)) FAIL(TS_E_ABORTED); \
  } while (0)
/* Report [frag, q) as a fragment of the current key/string/number. */
#define EMIT_FRAG(k, q, last)                                                              \
  do {                                                                                     \
    EMIT((k), frag, (size_t)((q)-frag), OFF(frag), depth,                                  \
         (t->emitted ? 0u : TS_JSON_FIRST) | ((last) ? TS_JSON_LAST : 0u));                 \
    t->emitted = 1;                                                                        \
  } while (0)
#define STR_KIND (t->in_key ? TS_JSON_KEY : TS_JSON_STRING)

  for (;;) {
    switch (state) {
      case S_VALUE:
      case S_VALUE_OR_AEND:
      case S_KEY_OR_OEND:
      case S_KEY: {
        while (p < end && is_ws((uint8_t)*p)) p++;
        if (p == end) goto out;
        uint8_t c = (uint8_t)*p;
        if (c == '"') {
          if (state == S_VALUE_OR_AEND || state == S_VALUE) {
            t->in_key = 0;
          } else {
            t->in_key = 1;
          }
          p++;
          frag = p;
          t->emitted = 0;
          t->sub = STR_PLAIN;
          state = S_STR;
          break;
        }
        if (state == S_KEY_OR_OEND || state == S_KEY) {
          if (c == '}' && state == S_KEY_OR_OEND) goto close_object;
          FAIL(TS_E_JSON_SYNTAX);
        }
        if (c == ']' && state == S_VALUE_OR_AEND) goto close_array;
        if (c == '{' || c == '[') {
          if (depth >= t->max_depth) FAIL(TS_E_JSON_DEPTH);
          int obj = c == '{';
          EMIT(obj ? TS_JSON_OBJECT_BEGIN : TS_JSON_ARRAY_BEGIN, p, 1, OFF(p), depth,
               TS_JSON_FIRST | TS_JSON_LAST);
          if (obj)
            t->stack[depth >> 3] |= (uint8_t)(1u << (depth & 7));
          else
            t->stack[depth >> 3] &= (uint8_t) ~(1u << (depth & 7));
          depth++;
          p++;
          state = obj ? S_KEY_OR_OEND : S_VALUE_OR_AEND;
          break;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
          frag = p;
          t->emitted = 0;
          state = c == '-' ? S_NUM_MINUS : c == '0' ? S_NUM_ZERO : S_NUM_INT;
          p++;
          break;
        }
        if (c == 't' || c == 'f' || c == 'n') {
          t->lit = c == 't' ? 0 : c == 'f' ? 1 : 2;
          t->sub = 1;
          t->tok_start = OFF(p);
          p++;
          state = S_LIT;
          break;
        }
        FAIL(TS_E_JSON_SYNTAX);
      }

      case S_COLON:
        while (p < end && is_ws((uint8_t)*p)) p++;
        if (p == end) goto out;
        if (*p != ':') FAIL(TS_E_JSON_SYNTAX);
        p++;
        state = S_VALUE;
        break;

      case S_AFTER: {
        while (p < end && is_ws((uint8_t)*p)) p++;
        if (p == end) goto out;
        uint8_t c = (uint8_t)*p;
        int obj = (t->stack[(depth - 1) >> 3] >> ((depth - 1) & 7)) & 1;
        if (c == ',') {
          p++;
          state = obj ? S_KEY : S_VALUE;
          break;
        }
        if (c == '}' && obj) goto close_object;
        if (c == ']' && !obj) goto close_array;
        FAIL(TS_E_JSON_SYNTAX);
      }

      close_object:
        depth--;
        EMIT(TS_JSON_OBJECT_END, p, 1, OFF(p), depth, TS_JSON_FIRST | TS_JSON_LAST);
        p++;
        state = depth ? S_AFTER : S_DONE;
        break;
      close_array:
        depth--;
        EMIT(TS_JSON_ARRAY_END, p, 1, OFF(p), depth, TS_JSON_FIRST | TS_JSON_LAST);
        p++;
        state = depth ? S_AFTER : S_DONE;
        break;

      case S_DONE:
        while (p < end && is_ws((uint8_t)*p)) p++;
        if (p == end) goto out;
        FAIL(TS_E_JSON_TRAILING);

      case S_STR:
        for (;;) {
          if (t->sub == STR_PLAIN) {
            p = scan_string(p, end);
            if (p == end) goto str_chunk_end;
            uint8_t c = (uint8_t)*p;
            if (c == '"') {
              EMIT_FRAG(STR_KIND, p, 1);
              p++;
              if (t->in_key) {
                state = S_COLON;
              } else {
                state = depth ? S_AFTER : S_DONE;
              }
              break;
            }
            if (c == '\\') {
              t->sub = STR_ESC;
              p++;
            } else if (c < 0x20) {
              FAIL(TS_E_JSON_CTRL);
            } else {
              /* UTF-8 lead byte: set how many continuation bytes follow and the
               * range of the first one (which excludes overlong forms, encoded
               * surrogates and code points above U+10FFFF). */
              if (c >= 0xC2 && c <= 0xDF) {
                t->utf8_need = 1, t->utf8_lo = 0x80, t->utf8_hi = 0xBF;
              } else if (c >= 0xE0 && c <= 0xEF) {
                t->utf8_need = 2;
                t->utf8_lo = c == 0xE0 ? 0xA0 : 0x80;
                t->utf8_hi = c == 0xED ? 0x9F : 0xBF;
              } else if (c >= 0xF0 && c <= 0xF4) {
                t->utf8_need = 3;
                t->utf8_lo = c == 0xF0 ? 0x90 : 0x80;
                t->utf8_hi = c == 0xF4 ? 0x8F : 0xBF;
              } else {
                FAIL(TS_E_JSON_UTF8);
              }
              t->sub = STR_UTF8;
              p++;
              /* Fast path: the whole character is in this chunk. */
              while (p < end && t->utf8_need) {
                uint8_t d = (uint8_t)*p;
                if (d < t->utf8_lo || d > t->utf8_hi) FAIL(TS_E_JSON_UTF8);
                t->utf8_lo = 0x80, t->utf8_hi = 0xBF;
                t->utf8_need--;
                p++;
              }
              if (!t->utf8_need) t->sub = STR_PLAIN;
            }
            if (p == end) goto str_chunk_end;
            continue;
          }
          /* Inside an escape or a UTF-8 character: one byte at a time. */
          if (p == end) goto str_chunk_end;
          uint8_t c = (uint8_t)*p;
          switch (t->sub) {
            case STR_UTF8:
              if (c < t->utf8_lo || c > t->utf8_hi) FAIL(TS_E_JSON_UTF8);
              t->utf8_lo = 0x80, t->utf8_hi = 0xBF;
              if (--t->utf8_need == 0) t->sub = STR_PLAIN;
              break;
            case STR_ESC:
              if (c == 'u') {
                t->sub = STR_U;
                t->uacc = 0;
                t->lit = 0; /* digits seen (lit is free inside strings) */
              } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
                         c == 'r' || c == 't') {
                t->sub = STR_PLAIN;
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
                t->sub = STR_PLAIN;
              } else if (u >= 0xD800 && u <= 0xDBFF) {
                t->hi_surrogate = u;
                t->sub = STR_SURR_BS;
              } else if (u >= 0xDC00 && u <= 0xDFFF) {
                FAIL(TS_E_JSON_SURROGATE);
              } else {
                t->sub = STR_PLAIN;
              }
              break;
            }
            case STR_SURR_BS:
              if (c != '\\') FAIL(TS_E_JSON_SURROGATE);
              t->sub = STR_SURR_U;
              break;
            case STR_SURR_U:
              if (c != 'u') FAIL(TS_E_JSON_SURROGATE);
              t->sub = STR_U;
              t->uacc = 0;
              t->lit = 0;
              break;
          }
          p++;
        }
        break;
      str_chunk_end:
        if (p != frag) EMIT_FRAG(STR_KIND, p, 0);
        goto out;

      case S_NUM_MINUS:
        if (p == end) goto num_chunk_end;
        if (*p == '0') {
          state = S_NUM_ZERO;
        } else if (*p >= '1' && *p <= '9') {
          state = S_NUM_INT;
        } else {
          FAIL(TS_E_JSON_NUMBER);
        }
        p++;
        break;
      case S_NUM_ZERO:
        if (p == end) goto num_chunk_end;
        if (*p >= '0' && *p <= '9') FAIL(TS_E_JSON_NUMBER);
        goto num_after_int;
      case S_NUM_INT:
        while (p < end && (uint8_t)(*p - '0') <= 9) p++;
        if (p == end) goto num_chunk_end;
      num_after_int:
        if (*p == '.') {
          state = S_NUM_DOT;
          p++;
          break;
        }
        if (*p == 'e' || *p == 'E') {
          state = S_NUM_E;
          p++;
          break;
        }
        goto num_end;
      case S_NUM_DOT:
        if (p == end) goto num_chunk_end;
        if ((uint8_t)(*p - '0') > 9) FAIL(TS_E_JSON_NUMBER);
        p++;
        state = S_NUM_FRAC;
        break;
      case S_NUM_FRAC:
        while (p < end && (uint8_t)(*p - '0') <= 9) p++;
        if (p == end) goto num_chunk_end;
        if (*p == 'e' || *p == 'E') {
          state = S_NUM_E;
          p++;
          break;
        }
        goto num_end;
      case S_NUM_E:
        if (p == end) goto num_chunk_end;
        if (*p == '+' || *p == '-') {
          state = S_NUM_ESIGN;
          p++;
          break;
        }
        if ((uint8_t)(*p - '0') > 9) FAIL(TS_E_JSON_NUMBER);
        p++;
        state = S_NUM_EXP;
        break;
      case S_NUM_ESIGN:
        if (p == end) goto num_chunk_end;
        if ((uint8_t)(*p - '0') > 9) FAIL(TS_E_JSON_NUMBER);
        p++;
        state = S_NUM_EXP;
        break;
      case S_NUM_EXP:
        while (p < end && (uint8_t)(*p - '0') <= 9) p++;
        if (p == end) goto num_chunk_end;
        goto num_end;
      num_end:
        /* *p ends the number; the grammar looks at it next. */
        EMIT_FRAG(TS_JSON_NUMBER, p, 1);
        state = depth ? S_AFTER : S_DONE;
        break;
      num_chunk_end:
        if (p != frag) EMIT_FRAG(TS_JSON_NUMBER, p, 0);
        goto out;

      case S_LIT: {
        const char *want = lit_text[t->lit];
        unsigned n = lit_len[t->lit];
        while (p < end && t->sub < n) {
          if (*p != want[t->sub]) FAIL(TS_E_JSON_LITERAL);
          t->sub++;
          p++;
        }
        if (t->sub < n) goto out;
        EMIT(lit_kind[t->lit], want, n, t->tok_start, depth, TS_JSON_FIRST | TS_JSON_LAST);
        state = depth ? S_AFTER : S_DONE;
        break;
      }
    }
  }

out:
  t->state = (uint8_t)state;
  t->depth = depth;
  t->pos = base + len;
  return TS_E_OK;

fail:
  t->state = (uint8_t)state;
  t->depth = depth;
  t->err = err;
  t->err_offset = OFF(p);
  t->pos = base + len;
  return err;
#undef OFF
#undef FAIL
#undef EMIT
#undef EMIT_FRAG
#undef STR_KIND
}

int ts_json_tok_finish(ts_json_tok *t) {
  if (t->err) return t->err;
  if (t->finished) return TS_E_OK;
  unsigned state = t->state;
  int err = TS_E_OK;
  if (state == S_NUM_ZERO || state == S_NUM_INT || state == S_NUM_FRAC || state == S_NUM_EXP) {
    if (t->depth == 0) {
      /* A top-level number ends at the end of input: report its (empty) last fragment. */
      ts_json_token tok = {.text = "",
                           .len = 0,
                           .offset = t->pos,
                           .depth = 0,
                           .kind = TS_JSON_NUMBER,
                           .flags = (uint8_t)((t->emitted ? 0u : TS_JSON_FIRST) | TS_JSON_LAST)};
      t->emitted = 1;
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
    t->err = err;
    t->err_offset = t->pos;
    return err;
  }
  t->finished = 1;
  return TS_E_OK;
}
