/*
 * json_check.c: see json_check.h. A recursive descent over RFC 8259's grammar; the
 * recursion is bounded by TS_TEST_JSON_DEPTH, and every read checks the end first, so
 * a cut document is "invalid", never a read past the bytes.
 */
#include "support/json_check.h"

#include <string.h>

typedef struct {
  const char *p, *e;
  int depth;
  int ws; /* whitespace between tokens allowed */
} jp;

size_t ts_test_utf8_seq(const unsigned char *s, size_t n) {
  if (!n) return 0;
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) len = 2;
  else if (c == 0xE0) len = 3, lo = 0xA0;      /* no overlong 3-byte forms */
  else if (c >= 0xE1 && c <= 0xEC) len = 3;
  else if (c == 0xED) len = 3, hi = 0x9F;      /* no surrogates */
  else if (c >= 0xEE && c <= 0xEF) len = 3;
  else if (c == 0xF0) len = 4, lo = 0x90;      /* no overlong 4-byte forms */
  else if (c >= 0xF1 && c <= 0xF3) len = 4;
  else if (c == 0xF4) len = 4, hi = 0x8F;      /* nothing above U+10FFFF */
  else return 0;
  if (n < len || s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  return len;
}

int ts_test_utf8_valid(const char *p, size_t n) {
  const unsigned char *s = (const unsigned char *)p;
  for (size_t i = 0; i < n;) {
    size_t k = ts_test_utf8_seq(s + i, n - i);
    if (!k) return 0;
    i += k;
  }
  return 1;
}

static void skip_ws(jp *j) {
  if (!j->ws) return;
  while (j->p < j->e && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static int is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int jp_string(jp *j) {
  if (j->p >= j->e || *j->p != '"') return 0;
  j->p++;
  while (j->p < j->e) {
    unsigned char c = (unsigned char)*j->p;
    if (c == '"') {
      j->p++;
      return 1;
    }
    if (c < 0x20) return 0;
    if (c == '\\') {
      if (++j->p >= j->e) return 0;
      char x = *j->p++;
      if (x == 'u') {
        for (int i = 0; i < 4; i++, j->p++)
          if (j->p >= j->e || !is_hex(*j->p)) return 0;
      } else if (!x || !strchr("\"\\/bfnrt", x)) {
        return 0;
      }
      continue;
    }
    size_t k = ts_test_utf8_seq((const unsigned char *)j->p, (size_t)(j->e - j->p));
    if (!k) return 0;
    j->p += k;
  }
  return 0;
}

static int jp_digits(jp *j) {
  const char *s = j->p;
  while (j->p < j->e && *j->p >= '0' && *j->p <= '9') j->p++;
  return j->p > s;
}

static int jp_number(jp *j) {
  if (j->p < j->e && *j->p == '-') j->p++;
  if (j->p < j->e && *j->p == '0') j->p++;
  else if (!jp_digits(j)) return 0;
  if (j->p < j->e && *j->p == '.') {
    j->p++;
    if (!jp_digits(j)) return 0;
  }
  if (j->p < j->e && (*j->p == 'e' || *j->p == 'E')) {
    j->p++;
    if (j->p < j->e && (*j->p == '+' || *j->p == '-')) j->p++;
    if (!jp_digits(j)) return 0;
  }
  return 1;
}

static int jp_value(jp *j) {
  skip_ws(j);
  if (j->p >= j->e || ++j->depth > TS_TEST_JSON_DEPTH) return 0;
  int ok = 1;
  char c = *j->p;
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    j->p++;
    skip_ws(j);
    if (j->p < j->e && *j->p == close) {
      j->p++;
    } else {
      for (;;) {
        if (c == '{') {
          skip_ws(j);
          if (!jp_string(j)) return 0;
          skip_ws(j);
          if (j->p >= j->e || *j->p++ != ':') return 0;
        }
        if (!jp_value(j)) return 0;
        skip_ws(j);
        if (j->p < j->e && *j->p == ',') {
          j->p++;
          continue;
        }
        if (j->p < j->e && *j->p == close) {
          j->p++;
          break;
        }
        return 0;
      }
    }
  } else if (c == '"') {
    ok = jp_string(j);
  } else if (c == 't' || c == 'f' || c == 'n') {
    const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
    size_t n = strlen(w);
    ok = (size_t)(j->e - j->p) >= n && !memcmp(j->p, w, n);
    if (ok) j->p += n;
  } else {
    ok = jp_number(j);
  }
  j->depth--;
  return ok;
}

int ts_test_json_valid(const char *p, size_t n) {
  jp j = {p, p + n, 0, 1};
  if (!jp_value(&j)) return 0;
  skip_ws(&j);
  return j.p == j.e;
}

int ts_test_json_compact_object(const char *p, size_t n) {
  jp j = {p, p + n, 0, 0};
  return n && *p == '{' && jp_value(&j) && j.p == j.e;
}

int ts_test_json_members(const char *s, size_t n, ts_test_json_member *m, int max) {
  if (!ts_test_json_compact_object(s, n)) return -1;
  jp j = {s + 1, s + n, 0, 0};
  int k = 0;
  if (*j.p == '}') return 0;
  for (;;) { /* the whole object is valid: only the member boundaries are found here */
    const char *ks = j.p;
    jp_string(&j);
    const char *ke = j.p;
    j.p++; /* ':' */
    const char *vs = j.p;
    jp_value(&j);
    if (k < max) m[k] = (ts_test_json_member){ks + 1, vs, (size_t)(ke - ks - 2), (size_t)(j.p - vs)};
    k++;
    if (*j.p++ == '}') return k;
  }
}

int ts_test_json_key_is(const ts_test_json_member *m, const char *key) {
  return m->klen == strlen(key) && !memcmp(m->k, key, m->klen);
}

void ts_test_json_compact(sb *out, const char *s, size_t n) {
  int in_str = 0, esc = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (in_str) {
      if (esc) esc = 0;
      else if (c == '\\') esc = 1;
      else if (c == '"') in_str = 0;
      sb_putc(out, c);
    } else if (c == '"') {
      in_str = 1;
      sb_putc(out, c);
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      sb_putc(out, c);
    }
  }
  if (!out->p) sb_puts(out, "");
}
