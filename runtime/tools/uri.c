/*
 * uri.c: RFC 3986 section 5.2, "Relative Resolution", as written there.
 *
 * A reference is split into its five parts (scheme, authority, path, query, fragment)
 * by the regular expression of appendix B, written out as a scan. Then 5.2.2 picks, part
 * by part, the reference's or the base's; 5.2.3 merges a relative path onto the base's
 * directory; 5.2.4 removes "." and ".." segments. The result is never longer than the
 * base plus the reference plus one "/", so one allocation holds it and the dot-segment
 * removal works in place in a second buffer of the same size.
 */
#include "tools/uri.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *p;
  size_t n;
  int has; /* the part is present (an empty query "?" differs from none) */
} part;

typedef struct {
  part scheme, auth, path, query, frag;
} parts;

static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Appendix B: ^(([^:/?#]+):)?(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))? */
static void split(const char *s, size_t n, parts *o) {
  memset(o, 0, sizeof *o);
  size_t i = 0;
  /* a scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) followed by ':' */
  if (n && is_alpha(s[0])) {
    size_t j = 1;
    while (j < n && (is_alpha(s[j]) || (s[j] >= '0' && s[j] <= '9') || s[j] == '+' ||
                     s[j] == '-' || s[j] == '.'))
      j++;
    if (j < n && s[j] == ':') {
      o->scheme = (part){s, j, 1};
      i = j + 1;
    }
  }
  if (n - i >= 2 && s[i] == '/' && s[i + 1] == '/') {
    size_t j = i + 2;
    while (j < n && s[j] != '/' && s[j] != '?' && s[j] != '#') j++;
    o->auth = (part){s + i + 2, j - i - 2, 1};
    i = j;
  }
  size_t j = i;
  while (j < n && s[j] != '?' && s[j] != '#') j++;
  o->path = (part){s + i, j - i, 1};
  i = j;
  if (i < n && s[i] == '?') {
    j = i + 1;
    while (j < n && s[j] != '#') j++;
    o->query = (part){s + i + 1, j - i - 1, 1};
    i = j;
  }
  if (i < n && s[i] == '#') o->frag = (part){s + i + 1, n - i - 1, 1};
}

typedef struct {
  char *p;
  size_t n;
} buf;

static void put(buf *b, const char *s, size_t n) {
  if (n) memcpy(b->p + b->n, s, n);
  b->n += n;
}

/* 5.2.4: removes dot segments from in[0..n), writing to out; returns the length. */
static size_t remove_dots(const char *in, size_t n, char *out) {
  size_t o = 0, i = 0;
  while (i < n) {
    size_t rest = n - i;
    const char *s = in + i;
    if (rest >= 3 && memcmp(s, "../", 3) == 0) {
      i += 3;
    } else if (rest >= 2 && memcmp(s, "./", 2) == 0) {
      i += 2;
    } else if (rest >= 3 && memcmp(s, "/./", 3) == 0) {
      i += 2;
    } else if (rest == 2 && memcmp(s, "/.", 2) == 0) {
      out[o++] = '/';
      i = n;
    } else if ((rest >= 4 && memcmp(s, "/../", 4) == 0) || (rest == 3 && memcmp(s, "/..", 3) == 0)) {
      /* drop the last output segment and its preceding '/' */
      while (o > 0 && out[o - 1] != '/') o--;
      if (o > 0) o--;
      if (rest == 3) {
        out[o++] = '/';
        i += 3;
      } else {
        i += 3; /* leave the '/' of "/../" as the start of the next segment */
      }
    } else if ((rest == 1 && s[0] == '.') || (rest == 2 && memcmp(s, "..", 2) == 0)) {
      i = n;
    } else {
      /* move the first segment (with its leading '/', if any) to the output */
      size_t j = i + (s[0] == '/');
      while (j < n && in[j] != '/') j++;
      memcpy(out + o, in + i, j - i);
      o += j - i;
      i = j;
    }
  }
  return o;
}

int ts_uri_resolve(const char *base, size_t blen, const char *ref, size_t rlen, char **out,
                   size_t *out_len) {
  parts b, r;
  split(base, blen, &b);
  split(ref, rlen, &r);
  size_t cap = blen + rlen + 8;
  char *res = malloc(cap), *path = malloc(cap), *merged = malloc(cap);
  if (!res || !path || !merged) {
    free(res);
    free(path);
    free(merged);
    return TS_E_NOMEM;
  }
  parts t;
  memset(&t, 0, sizeof t);
  /* 5.2.2 */
  size_t plen = 0;
  if (r.scheme.has) {
    t.scheme = r.scheme;
    t.auth = r.auth;
    plen = remove_dots(r.path.p, r.path.n, path);
    t.query = r.query;
  } else {
    t.scheme = b.scheme;
    if (r.auth.has) {
      t.auth = r.auth;
      plen = remove_dots(r.path.p, r.path.n, path);
      t.query = r.query;
    } else {
      t.auth = b.auth;
      if (r.path.n == 0) {
        memcpy(path, b.path.p, b.path.n);
        plen = b.path.n;
        t.query = r.query.has ? r.query : b.query;
      } else {
        if (r.path.p[0] == '/') {
          plen = remove_dots(r.path.p, r.path.n, path);
        } else {
          /* 5.2.3 merge: the base's path up to its last '/', then the reference's */
          buf m = {merged, 0};
          if (b.auth.has && b.path.n == 0) {
            put(&m, "/", 1);
          } else {
            size_t k = b.path.n;
            while (k > 0 && b.path.p[k - 1] != '/') k--;
            put(&m, b.path.p, k);
          }
          put(&m, r.path.p, r.path.n);
          plen = remove_dots(merged, m.n, path);
        }
        t.query = r.query;
      }
    }
  }
  t.frag = r.frag;
  /* 5.3 recomposition */
  buf o = {res, 0};
  if (t.scheme.has) {
    put(&o, t.scheme.p, t.scheme.n);
    put(&o, ":", 1);
  }
  if (t.auth.has) {
    put(&o, "//", 2);
    put(&o, t.auth.p, t.auth.n);
  }
  put(&o, path, plen);
  if (t.query.has) {
    put(&o, "?", 1);
    put(&o, t.query.p, t.query.n);
  }
  if (t.frag.has) {
    put(&o, "#", 1);
    put(&o, t.frag.p, t.frag.n);
  }
  res[o.n] = '\0';
  free(path);
  free(merged);
  *out = res;
  *out_len = o.n;
  return TS_E_OK;
}

size_t ts_uri_strip_fragment(const char *uri, size_t len) {
  const char *h = len ? memchr(uri, '#', len) : NULL;
  return h ? (size_t)(h - uri) : len;
}
