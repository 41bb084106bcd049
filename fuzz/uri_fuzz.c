/*
 * uri_fuzz.c: RFC 3986 reference resolution (runtime/tools/uri.h), which schemas' `$id` and
 * `$ref` drive. The input is a base and a reference, split at the first NUL (no NUL: a
 * reference against the empty base); each is an exact-size block, so ASan sees a read past
 * either. Any bytes must resolve, and the result must keep what 5.2.2 and 5.3 make of it:
 *   - at most base + reference + one '/' long, NUL-terminated at its length;
 *   - its fragment is the reference's (a '#' exactly when the reference has one);
 *   - the empty reference gives the base without its fragment, unchanged;
 *   - a reference with a scheme does not depend on the base.
 * ts_uri_strip_fragment gives the first '#', or the length.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tools/uri.h"

static char *copy(const uint8_t *p, size_t n) {
  char *s = malloc(n ? n : 1);
  if (n) memcpy(s, p, n);
  return s;
}

static size_t frag_at(const char *s, size_t n) {
  size_t k = ts_uri_strip_fragment(s, n);
  if (k > n || (k < n && s[k] != '#') || (k && memchr(s, '#', k))) abort();
  return k;
}

/* ref[0..n) starts with a scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
static int has_scheme(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && (((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z') ||
                   (i && ((s[i] >= '0' && s[i] <= '9') || s[i] == '+' || s[i] == '-' || s[i] == '.'))))
    i++;
  return i > 0 && i < n && s[i] == ':';
}

static void resolve(const char *b, size_t bn, const char *r, size_t rn, char **out, size_t *on) {
  *out = NULL;
  if (ts_uri_resolve(b, bn, r, rn, out, on) != TS_E_OK) abort(); /* nothing fails on content */
  if (!*out || *on > bn + rn + 1 || (*out)[*on] != '\0') abort();
}

static int same(const char *a, size_t an, const char *b, size_t bn) {
  return an == bn && (!an || !memcmp(a, b, an));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t bn = nul ? (size_t)(nul - data) : 0;
  const uint8_t *rp = nul ? nul + 1 : data;
  size_t rn = size - (size_t)(rp - data);
  char *base = copy(data, bn), *ref = copy(rp, rn);
  char *out, *again;
  size_t on, an;
  resolve(base, bn, ref, rn, &out, &on);
  size_t rf = frag_at(ref, rn), of = frag_at(out, on);
  if ((rf < rn) != (of < on) || !same(out + of, on - of, ref + rf, rn - rf)) abort();
  if (has_scheme(ref, rn)) {
    resolve("", 0, ref, rn, &again, &an);
    if (!same(out, on, again, an)) abort();
    free(again);
  }
  resolve(base, bn, "", 0, &again, &an);
  if (!same(again, an, base, frag_at(base, bn))) abort();
  free(again);
  free(out);
  free(base);
  free(ref);
  return 0;
}
