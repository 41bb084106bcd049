/*
 * json_unescape.c: decode the escapes of a JSON string body into UTF-8, resumably.
 *
 * The tokenizer hands out string bodies as raw fragments that may split anywhere, so
 * this decoder is a tiny state machine in the pico idiom: it never looks back at an
 * earlier fragment, it keeps just enough state to finish an escape that the previous
 * call began (where in the escape we are, the \u digits seen so far, and a high
 * surrogate waiting for its low half), and it resumes exactly there.
 *
 * The common case is plain text with an occasional escape, so the plain state does not
 * walk byte by byte: memchr finds the next backslash and the run before it is copied
 * in one memmove (or not at all when decoding in place and nothing has shrunk yet).
 *
 * Why in place is safe: with nothing pending at the start of a call, every output byte
 * comes from at least one input byte of the same call (`\n` is 2 -> 1, `\u00e9` is
 * 6 -> 2, a surrogate pair is 12 -> 4), so the write position never passes the read
 * position. A call that begins in the middle of an escape may write more than it
 * reads (the last hex digit of a pair completes four bytes), which is what
 * TS_JSON_UNESCAPE_SLACK pays for.
 *
 * Surrogates: a high surrogate writes nothing until its low half arrives; then the
 * pair becomes one 4-byte character. Anything else after a high surrogate (a raw byte,
 * another escape letter, a \u that is not a low surrogate, the end of the string) is
 * TS_E_JSON_SURROGATE, as is a low surrogate with no high one before it. A bad hex digit
 * is TS_E_JSON_ESCAPE even after a high surrogate: the escape itself is broken.
 */
#include "stream/json_unescape.h"

#include <string.h>

enum {
  S_PLAIN = 0, /* copying raw bytes; no escape open */
  S_ESC,       /* read `\`, want the escape letter */
  S_HEX,       /* inside \uXXXX; `digits` seen so far */
  S_PAIR_BS,   /* a high surrogate is pending; want the `\` of its low half */
  S_PAIR_U,    /* a high surrogate is pending and `\` was read; want `u` */
};

void ts_json_unescape_init(ts_json_unescape *u) { memset(u, 0, sizeof *u); }

/* The byte a one-letter escape (the letter after the backslash) stands for, or -1. */
static inline int one_letter(char e) {
  switch (e) {
  case '"': return '"';
  case '\\': return '\\';
  case '/': return '/';
  case 'b': return '\b';
  case 'f': return '\f';
  case 'n': return '\n';
  case 'r': return '\r';
  case 't': return '\t';
  default: return -1;
  }
}

static int hex_value(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c |= 0x20; /* ASCII letters to lower case; digits were handled above */
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

static char *put_utf8(char *o, uint32_t cp) {
  if (cp < 0x80) {
    *o++ = (char)cp;
  } else if (cp < 0x800) {
    *o++ = (char)(0xC0 | (cp >> 6));
    *o++ = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *o++ = (char)(0xE0 | (cp >> 12));
    *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *o++ = (char)(0x80 | (cp & 0x3F));
  } else {
    *o++ = (char)(0xF0 | (cp >> 18));
    *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
    *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *o++ = (char)(0x80 | (cp & 0x3F));
  }
  return o;
}

static ssize_t fail(ts_json_unescape *u, int err) {
  u->err = (int16_t)err;
  return err;
}

ssize_t ts_json_unescape_feed(ts_json_unescape *u, const char *in, size_t len, char *out) {
  if (u->err) return u->err;
  const char *p = in, *end = in + len;
  char *o = out;
  while (p < end) {
    switch (u->state) {
    case S_PLAIN: {
      const char *bs = memchr(p, '\\', (size_t)(end - p));
      const char *stop = bs ? bs : end;
      size_t run = (size_t)(stop - p);
      if (o != p) memmove(o, p, run);
      o += run;
      p = stop;
      if (bs) {
        p++;
        u->state = S_ESC;
      }
      break;
    }
    case S_ESC: {
      char e = *p++;
      if (e == 'u') {
        u->state = S_HEX;
        u->digits = 0;
        u->unit = 0;
        continue;
      }
      int c = one_letter(e);
      if (c < 0) return fail(u, TS_E_JSON_ESCAPE);
      *o++ = (char)c;
      u->state = S_PLAIN;
      break;
    }
    case S_HEX: {
      int v = hex_value((unsigned char)*p++);
      if (v < 0) return fail(u, TS_E_JSON_ESCAPE);
      u->unit = (uint16_t)(u->unit << 4 | (unsigned)v);
      if (++u->digits < 4) break;
      uint32_t unit = u->unit;
      if (u->high) {
        if (unit < 0xDC00 || unit > 0xDFFF) return fail(u, TS_E_JSON_SURROGATE);
        o = put_utf8(o, 0x10000 + ((uint32_t)(u->high - 0xD800) << 10) + (unit - 0xDC00));
        u->high = 0;
        u->state = S_PLAIN;
      } else if (unit >= 0xD800 && unit <= 0xDBFF) {
        u->high = (uint16_t)unit;
        u->state = S_PAIR_BS;
      } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
        return fail(u, TS_E_JSON_SURROGATE);
      } else {
        o = put_utf8(o, unit);
        u->state = S_PLAIN;
      }
      break;
    }
    case S_PAIR_BS:
      if (*p++ != '\\') return fail(u, TS_E_JSON_SURROGATE);
      u->state = S_PAIR_U;
      break;
    case S_PAIR_U:
      if (*p++ != 'u') return fail(u, TS_E_JSON_SURROGATE);
      u->state = S_HEX;
      u->digits = 0;
      u->unit = 0;
      break;
    default:
      return fail(u, TS_E_INVAL); /* corrupted state: a caller bug */
    }
  }
  return o - out;
}

int ts_json_unescape_end(ts_json_unescape *u) {
  if (u->err) return u->err;
  switch (u->state) {
  case S_PLAIN:
    return TS_E_OK;
  case S_PAIR_BS:
    return fail(u, TS_E_JSON_SURROGATE); /* a high surrogate left alone */
  default:
    return fail(u, TS_E_JSON_ESCAPE); /* stopped inside an escape */
  }
}

/* A whole short string (a provider's argument fragment: a dozen bytes, a few `\"`) costs
 * less byte by byte than in memchr and memmove calls: the one-letter escapes are decoded
 * here, and at the first \u (or a bad escape) the machine takes over from that byte. */
#define SHORT_STRING 64

ssize_t ts_json_unescape_all(const char *in, size_t len, char *out) {
  ts_json_unescape u;
  ts_json_unescape_init(&u);
  const char *p = in, *end = in + len;
  char *o = out;
  if (len <= SHORT_STRING) {
    while (p < end) {
      char c = *p;
      if (c != '\\') {
        *o++ = c;
        p++;
        continue;
      }
      int d = end - p < 2 ? -1 : one_letter(p[1]);
      if (d < 0) break; /* \u, not an escape, or cut: the machine */
      *o++ = (char)d;
      p += 2;
    }
  }
  ssize_t n = ts_json_unescape_feed(&u, p, (size_t)(end - p), o);
  if (n >= 0) n += o - out;
  if (n < 0) return n;
  int rc = ts_json_unescape_end(&u);
  return rc < 0 ? rc : n;
}
