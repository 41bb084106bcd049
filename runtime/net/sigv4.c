/*
 * sigv4.c: AWS Signature Version 4 (sigv4.h).
 *
 * The algorithm is four strings, each a hash of the one before:
 *
 *   canonical request  METHOD \n canonical path \n canonical query \n
 *                      "name:value\n" per signed header \n signed names ";"-joined \n
 *                      hex(SHA-256(body))
 *   string to sign     "AWS4-HMAC-SHA256" \n X-Amz-Date \n scope \n hex(SHA-256(creq))
 *                      where scope = date/region/service/aws4_request
 *   signing key        HMAC chain from "AWS4" + secret over date, region, service,
 *                      "aws4_request"
 *   signature          hex(HMAC(signing key, string to sign))
 *
 * The parts that go wrong in practice are all in the canonical request, and each is
 * written down in sigv4.h: the path encoded a second time (Bedrock's model ids carry
 * ':' and sometimes '/' as %2F), the query re-encoded and sorted, header values
 * trimmed. OpenSSL gives SHA-256 and HMAC (the one-shot calls, which OpenSSL 3 keeps);
 * the derived keys are wiped with OPENSSL_cleanse, which the compiler cannot drop.
 *
 * The canonical request is built in a ts_buf: the body is only hashed, so its size is
 * the path, the query and the headers, bounded by CREQ_MAX.
 */
#include "net/sigv4.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/strbuf.h"

/* The path, query and headers of one request: URLs and headers are a few KiB at most. */
#define CREQ_MAX (256 * 1024)

static const char hexd[] = "0123456789abcdef";

static void to_hex(const uint8_t *in, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = hexd[in[i] >> 4];
    out[2 * i + 1] = hexd[in[i] & 15];
  }
  out[2 * n] = '\0';
}

static int sha256_hex(const void *p, size_t n, char out[65]) {
  uint8_t md[32];
  unsigned len = 0;
  if (EVP_Digest(n ? p : "", n, md, &len, EVP_sha256(), NULL) != 1 || len != 32) return TS_E_NOMEM;
  to_hex(md, 32, out);
  return TS_E_OK;
}

static int hmac(const uint8_t *key, size_t klen, const char *msg, size_t n, uint8_t out[32]) {
  unsigned len = 0;
  if (!HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, n, out, &len) || len != 32)
    return TS_E_NOMEM;
  return TS_E_OK;
}

int ts_sigv4_signing_key(const char *secret, const char *date, const char *region,
                         const char *service, uint8_t out[32]) {
  if (!secret || !date || !region || !service || !out) return TS_E_INVAL;
  size_t sl = strlen(secret);
  uint8_t *k0 = malloc(sl + 4);
  if (!k0) return TS_E_NOMEM;
  memcpy(k0, "AWS4", 4);
  memcpy(k0 + 4, secret, sl);
  uint8_t a[32], b[32];
  int rc = hmac(k0, sl + 4, date, strlen(date), a);
  if (!rc) rc = hmac(a, 32, region, strlen(region), b);
  if (!rc) rc = hmac(b, 32, service, strlen(service), a);
  if (!rc) rc = hmac(a, 32, "aws4_request", 12, out);
  OPENSSL_cleanse(k0, sl + 4);
  OPENSSL_cleanse(a, sizeof a);
  OPENSSL_cleanse(b, sizeof b);
  free(k0);
  return rc;
}

/* ---- the canonical request ------------------------------------------------------------ */

static int unreserved(unsigned char c) {
  return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
}

/* Appends s[0..n) percent-encoded (uppercase hex), keeping '/' when keep_slash. */
static void encode(ts_buf *b, const char *s, size_t n, int keep_slash) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (unreserved(c) || (keep_slash && c == '/')) {
      ts_buf_putc(b, (char)c);
    } else {
      char e[3] = {'%', "0123456789ABCDEF"[c >> 4], "0123456789ABCDEF"[c & 15]};
      ts_buf_append(b, e, 3);
    }
  }
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Appends the percent-decoding of s[0..n), strictly re-encoded. A '%' that starts no
 * escape stands for itself (and is encoded as %25). */
static void reencode(ts_buf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int h = c == '%' && i + 1 < n ? hexval(s[i + 1]) : -1;
    int l = h >= 0 && i + 2 < n ? hexval(s[i + 2]) : -1;
    if (l >= 0) {
      c = (char)(h * 16 + l);
      i += 2;
    }
    encode(b, &c, 1, 0);
  }
}

typedef struct {
  char *enc; /* the re-encoded "name=value" */
  size_t name_len;
} qparam;

static int cmp_param(const void *x, const void *y) {
  const qparam *a = x, *b = y;
  /* by name, then by value: compare the names first, then the whole pair */
  size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
  int c = memcmp(a->enc, b->enc, n);
  if (c) return c;
  if (a->name_len != b->name_len) return a->name_len < b->name_len ? -1 : 1;
  return strcmp(a->enc + a->name_len, b->enc + b->name_len);
}

/* The canonical query of `q` appended to b. */
static int put_query(ts_buf *b, const char *q) {
  if (!q || !*q) return TS_E_OK;
  size_t n = 1;
  for (const char *s = q; *s; s++) n += *s == '&';
  qparam *v = calloc(n, sizeof *v);
  if (!v) return TS_E_NOMEM;
  size_t k = 0;
  int rc = TS_E_OK;
  for (const char *s = q; rc == TS_E_OK;) {
    const char *e = strchr(s, '&');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (len) {
      const char *eq = memchr(s, '=', len);
      size_t nl = eq ? (size_t)(eq - s) : len;
      ts_buf t;
      ts_buf_init(&t, CREQ_MAX);
      reencode(&t, s, nl);
      size_t enl = t.len;
      ts_buf_putc(&t, '=');
      if (eq) reencode(&t, eq + 1, len - nl - 1);
      if (t.err) {
        rc = t.err;
        ts_buf_fini(&t);
        break;
      }
      v[k].enc = t.p; /* owned now: freed below */
      v[k++].name_len = enl;
    }
    if (!e) break;
    s = e + 1;
  }
  if (rc == TS_E_OK) {
    qsort(v, k, sizeof *v, cmp_param);
    for (size_t i = 0; i < k; i++) {
      if (i) ts_buf_putc(b, '&');
      ts_buf_puts(b, v[i].enc);
    }
  }
  for (size_t i = 0; i < k; i++) free(v[i].enc);
  free(v);
  return rc ? rc : b->err;
}

typedef struct {
  char *name;  /* lowercased */
  char *value; /* trimmed, inner runs of spaces folded */
} hdr;

static int cmp_hdr(const void *x, const void *y) {
  return strcmp(((const hdr *)x)->name, ((const hdr *)y)->name);
}

static char *lower_dup(const char *s) {
  char *d = strdup(s);
  for (char *p = d; p && *p; p++) *p = (char)tolower((unsigned char)*p);
  return d;
}

static char *trim_dup(const char *s) {
  char *d = malloc(strlen(s) + 1);
  if (!d) return NULL;
  size_t o = 0;
  while (*s == ' ' || *s == '\t') s++;
  for (; *s; s++) {
    int sp = *s == ' ' || *s == '\t';
    if (sp && (o == 0 || d[o - 1] == ' ')) continue;
    d[o++] = sp ? ' ' : *s;
  }
  while (o && d[o - 1] == ' ') o--;
  d[o] = '\0';
  return d;
}

int ts_sigv4_region_of_host(const char *host, const char *service, char *out, size_t cap) {
  if (!out || !cap) return 0;
  out[0] = '\0';
  if (!host || (service && strncmp(host, service, strlen(service)))) return 0;
  const char *dot = strchr(host, '.');
  const char *aws = strstr(host, ".amazonaws.com");
  size_t n = dot && aws > dot ? (size_t)(aws - dot - 1) : 0; /* between the two */
  if (!n || n >= cap || memchr(dot + 1, '.', n) || strcmp(aws, ".amazonaws.com")) return 0;
  memcpy(out, dot + 1, n);
  out[n] = '\0';
  return 1;
}

/* ---- signing ------------------------------------------------------------------------- */

int ts_sigv4_sign(const ts_sigv4_key *k, const ts_sigv4_request *r, time_t now,
                  ts_sigv4_result *out) {
  if (!k || !r || !out || !r->method || !*r->method || !k->access_key_id || !*k->access_key_id ||
      !k->secret_access_key || !*k->secret_access_key || !k->region || !*k->region ||
      !k->service || !*k->service || (r->n_headers && !r->headers) || (r->body_len && !r->body))
    return TS_E_INVAL;
  int token = k->session_token && *k->session_token;
  size_t nh = r->n_headers + 1 + (size_t)token;
  if (nh > TS_SIGV4_MAX_HEADERS) return TS_E_LIMIT;

  struct tm tm;
  if (!gmtime_r(&now, &tm) || tm.tm_year + 1900 < 1970 || tm.tm_year + 1900 > 9999) return TS_E_INVAL;
  if (strftime(out->amz_date, sizeof out->amz_date, "%Y%m%dT%H%M%SZ", &tm) != 16) return TS_E_INVAL;
  char date[9];
  memcpy(date, out->amz_date, 8);
  date[8] = '\0';

  hdr h[TS_SIGV4_MAX_HEADERS];
  memset(h, 0, sizeof h);
  int rc = TS_E_OK;
  for (size_t i = 0; i < r->n_headers; i++) {
    if (!r->headers[i].name || !*r->headers[i].name || !r->headers[i].value) {
      rc = TS_E_INVAL;
      break;
    }
    h[i].name = lower_dup(r->headers[i].name);
    h[i].value = trim_dup(r->headers[i].value);
  }
  h[r->n_headers].name = strdup("x-amz-date");
  h[r->n_headers].value = strdup(out->amz_date);
  if (token) {
    h[r->n_headers + 1].name = strdup("x-amz-security-token");
    h[r->n_headers + 1].value = trim_dup(k->session_token);
  }
  for (size_t i = 0; rc == TS_E_OK && i < nh; i++)
    if (!h[i].name || !h[i].value) rc = TS_E_NOMEM;
  if (rc == TS_E_OK) {
    qsort(h, nh, sizeof *h, cmp_hdr);
    for (size_t i = 1; i < nh; i++)
      if (!strcmp(h[i - 1].name, h[i].name)) rc = TS_E_INVAL; /* one value per name */
  }

  ts_buf creq, names;
  ts_buf_init(&creq, CREQ_MAX);
  ts_buf_init(&names, TS_SIGV4_AUTH_MAX);
  char body_hash[65], creq_hash[65];
  if (rc == TS_E_OK) rc = sha256_hex(r->body, r->body_len, body_hash);
  if (rc == TS_E_OK) {
    ts_buf_puts(&creq, r->method);
    ts_buf_putc(&creq, '\n');
    const char *path = r->path && *r->path ? r->path : "/";
    encode(&creq, path, strlen(path), 1);
    ts_buf_putc(&creq, '\n');
    rc = put_query(&creq, r->query);
  }
  if (rc == TS_E_OK) {
    ts_buf_putc(&creq, '\n');
    for (size_t i = 0; i < nh; i++) {
      ts_buf_puts(&creq, h[i].name);
      ts_buf_putc(&creq, ':');
      ts_buf_puts(&creq, h[i].value);
      ts_buf_putc(&creq, '\n');
      if (i) ts_buf_putc(&names, ';');
      ts_buf_puts(&names, h[i].name);
    }
    ts_buf_putc(&creq, '\n');
    ts_buf_append(&creq, names.p ? names.p : "", names.len);
    ts_buf_putc(&creq, '\n');
    ts_buf_puts(&creq, body_hash);
    rc = creq.err ? creq.err : names.err;
  }
  if (rc == TS_E_OK) rc = sha256_hex(creq.p, creq.len, creq_hash);

  char sts[512];
  int sn = 0;
  if (rc == TS_E_OK) {
    sn = snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", out->amz_date,
                  date, k->region, k->service, creq_hash);
    if (sn < 0 || (size_t)sn >= sizeof sts) rc = TS_E_LIMIT;
  }
  uint8_t key[32], sig[32];
  if (rc == TS_E_OK) rc = ts_sigv4_signing_key(k->secret_access_key, date, k->region, k->service, key);
  if (rc == TS_E_OK) rc = hmac(key, 32, sts, (size_t)sn, sig);
  OPENSSL_cleanse(key, sizeof key);
  if (rc == TS_E_OK) {
    to_hex(sig, 32, out->signature);
    int w = snprintf(out->authorization, sizeof out->authorization,
                     "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, "
                     "Signature=%s",
                     k->access_key_id, date, k->region, k->service, names.p, out->signature);
    if (w < 0 || (size_t)w >= sizeof out->authorization) rc = TS_E_LIMIT;
  }
  for (size_t i = 0; i < nh; i++) {
    free(h[i].name);
    free(h[i].value);
  }
  ts_buf_fini(&creq);
  ts_buf_fini(&names);
  return rc;
}
