/*
 * http_head.c: see http_head.h. One pass per line over a head that has fully arrived
 * (the gateway waits for the blank line, within its header limit, before parsing), so
 * there is no partial state beyond ts_http_head_end's resume offset.
 */
#include "net/http_head.h"

#include <string.h>
#include <strings.h>

#include "base/error.h"

/* tchar of RFC 9110 5.6.2 */
static int is_tchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return 1;
  return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

size_t ts_http_head_end(const char *p, size_t n, size_t *resume) {
  /* *resume is the start of the line being read. An empty line (LF or CR LF alone)
   * that follows at least one non-empty line ends the head; empty lines before the
   * first line are skipped. */
  size_t i = *resume;
  while (i < n) {
    const char *nl = memchr(p + i, '\n', n - i);
    if (!nl) break;
    size_t end = (size_t)(nl - p) + 1, len = end - i;
    int empty = len == 1 || (len == 2 && p[i] == '\r');
    if (empty) {
      /* a blank line ends the head unless nothing but blank lines came before it */
      int only_blank = 1;
      for (size_t k = 0; k < i; k++)
        if (p[k] != '\r' && p[k] != '\n') {
          only_blank = 0;
          break;
        }
      if (!only_blank) {
        *resume = end;
        return end;
      }
    }
    i = end;
  }
  *resume = i;
  return 0;
}

/* The next line of [*pos, n): its view without the line end. 0 at the end of input;
 * -1 for a CR that is not right before the LF. */
static int next_line(const char *p, size_t n, size_t *pos, ts_view *line) {
  if (*pos >= n) return 0;
  const char *s = p + *pos, *nl = memchr(s, '\n', n - *pos);
  if (!nl) return 0;
  size_t len = (size_t)(nl - s);
  *pos += len + 1;
  if (len && s[len - 1] == '\r') len--;
  if (memchr(s, '\r', len)) return -1;
  line->p = s;
  line->len = len;
  return 1;
}

static int parse_fields(const char *p, size_t n, size_t pos, ts_http_head *h, int *status,
                        const char **why) {
  ts_view line;
  int r;
  while ((r = next_line(p, n, &pos, &line)) > 0) {
    if (!line.len) return 0; /* the blank line */
    if (line.p[0] == ' ' || line.p[0] == '\t') {
      *why = "obsolete line folding in a header field";
      return -1;
    }
    size_t i = 0;
    while (i < line.len && is_tchar((unsigned char)line.p[i])) i++;
    if (!i || i >= line.len || line.p[i] != ':') {
      *why = i < line.len && (line.p[i] == ' ' || line.p[i] == '\t')
                 ? "whitespace between a header field name and its colon"
                 : "malformed header field name";
      return -1;
    }
    if (h->nfields == TS_HTTP_MAX_FIELDS) {
      *status = 431;
      *why = "too many header fields";
      return -1;
    }
    size_t a = i + 1, b = line.len;
    while (a < b && (line.p[a] == ' ' || line.p[a] == '\t')) a++;
    while (b > a && (line.p[b - 1] == ' ' || line.p[b - 1] == '\t')) b--;
    for (size_t k = a; k < b; k++) {
      unsigned char c = (unsigned char)line.p[k];
      if ((c < 0x20 && c != '\t') || c == 0x7f) {
        *why = "control byte in a header field value";
        return -1;
      }
    }
    ts_http_field *f = &h->fields[h->nfields++];
    f->name = (ts_view){line.p, i};
    f->value = (ts_view){line.p + a, b - a};
  }
  *why = r < 0 ? "CR not followed by LF in the head" : "the head has no blank line";
  return -1;
}

static int parse_version(ts_view v, int *minor) {
  if (v.len != 8 || memcmp(v.p, "HTTP/1.", 7) || (v.p[7] != '0' && v.p[7] != '1')) return -1;
  *minor = v.p[7] - '0';
  return 0;
}

static size_t skip_blank_lines(const char *p, size_t n) {
  size_t pos = 0;
  while (pos < n && (p[pos] == '\r' || p[pos] == '\n')) pos++;
  return pos;
}

int ts_http_parse_request(const char *p, size_t n, ts_http_head *h, int *status,
                          const char **why) {
  memset(h, 0, sizeof *h);
  *status = 400;
  size_t pos = skip_blank_lines(p, n);
  ts_view line;
  int r = next_line(p, n, &pos, &line);
  if (r <= 0) {
    *why = r < 0 ? "CR not followed by LF in the request line" : "no request line";
    return TS_E_GW_REQUEST;
  }
  /* method SP target SP version, single spaces */
  const char *sp1 = memchr(line.p, ' ', line.len);
  const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', line.len - (size_t)(sp1 + 1 - line.p)) : NULL;
  if (!sp1 || !sp2 || sp1 == line.p || sp2 == sp1 + 1) {
    *why = "malformed request line";
    return TS_E_GW_REQUEST;
  }
  h->method = (ts_view){line.p, (size_t)(sp1 - line.p)};
  h->target = (ts_view){sp1 + 1, (size_t)(sp2 - sp1 - 1)};
  ts_view ver = {sp2 + 1, line.len - (size_t)(sp2 + 1 - line.p)};
  for (size_t i = 0; i < h->method.len; i++)
    if (!is_tchar((unsigned char)h->method.p[i])) {
      *why = "malformed request method";
      return TS_E_GW_REQUEST;
    }
  for (size_t i = 0; i < h->target.len; i++) {
    unsigned char c = (unsigned char)h->target.p[i];
    if (c <= 0x20 || c >= 0x7f) {
      *why = "malformed request target";
      return TS_E_GW_REQUEST;
    }
  }
  if (parse_version(ver, &h->minor)) {
    int http = ver.len >= 5 && !memcmp(ver.p, "HTTP/", 5);
    *status = http ? 505 : 400;
    *why = http ? "only HTTP/1.0 and HTTP/1.1" : "malformed request line";
    return TS_E_GW_REQUEST;
  }
  if (parse_fields(p, n, pos, h, status, why)) return TS_E_GW_REQUEST;
  return 0;
}

int ts_http_parse_response(const char *p, size_t n, ts_http_head *h, const char **why) {
  memset(h, 0, sizeof *h);
  size_t pos = 0;
  ts_view line;
  int status = 502;
  if (next_line(p, n, &pos, &line) <= 0 || line.len < 12 || line.p[8] != ' ') {
    *why = "malformed status line";
    return TS_E_GW_RESPONSE;
  }
  if (parse_version((ts_view){line.p, 8}, &h->minor)) {
    *why = "the upstream does not speak HTTP/1.0 or HTTP/1.1";
    return TS_E_GW_RESPONSE;
  }
  const char *d = line.p + 9;
  if (d[0] < '1' || d[0] > '9' || d[1] < '0' || d[1] > '9' || d[2] < '0' || d[2] > '9' ||
      (line.len > 12 && d[3] != ' ')) {
    *why = "malformed status code";
    return TS_E_GW_RESPONSE;
  }
  h->status = (d[0] - '0') * 100 + (d[1] - '0') * 10 + (d[2] - '0');
  h->reason = line.len > 13 ? (ts_view){d + 4, line.len - 13} : (ts_view){d + 3, 0};
  for (size_t i = 0; i < h->reason.len; i++) {
    unsigned char c = (unsigned char)h->reason.p[i];
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      *why = "control byte in the reason phrase";
      return TS_E_GW_RESPONSE;
    }
  }
  if (parse_fields(p, n, pos, h, &status, why)) return TS_E_GW_RESPONSE;
  return 0;
}

static int name_is(ts_view v, const char *name) {
  size_t l = strlen(name);
  return v.len == l && !strncasecmp(v.p, name, l);
}

size_t ts_http_field_get(const ts_http_head *h, const char *name, ts_view *v) {
  size_t count = 0;
  for (size_t i = 0; i < h->nfields; i++)
    if (name_is(h->fields[i].name, name)) {
      if (!count) *v = h->fields[i].value;
      count++;
    }
  return count;
}

/* Calls each comma-separated element of v (trimmed, empty ones skipped) until fn says
 * stop (returns nonzero, which is returned). */
static int each_elem(ts_view v, int (*fn)(ts_view e, void *u), void *u) {
  size_t i = 0;
  while (i <= v.len) {
    size_t j = i;
    while (j < v.len && v.p[j] != ',') j++;
    size_t a = i, b = j;
    while (a < b && (v.p[a] == ' ' || v.p[a] == '\t')) a++;
    while (b > a && (v.p[b - 1] == ' ' || v.p[b - 1] == '\t')) b--;
    if (b > a) {
      int r = fn((ts_view){v.p + a, b - a}, u);
      if (r) return r;
    }
    i = j + 1;
  }
  return 0;
}

static int elem_is(ts_view e, void *u) { return name_is(e, u); }

int ts_http_list_has(ts_view v, const char *token) {
  return each_elem(v, elem_is, (void *)token);
}

/* Content-Length: every field, every list element, one value of 1..18 digits. */
typedef struct {
  int seen, bad;
  uint64_t value;
} cl_acc;

static int cl_elem(ts_view e, void *u) {
  cl_acc *a = u;
  uint64_t v = 0;
  if (!e.len || e.len > 18) return a->bad = 1;
  for (size_t i = 0; i < e.len; i++) {
    if (e.p[i] < '0' || e.p[i] > '9') return a->bad = 1;
    v = v * 10 + (uint64_t)(e.p[i] - '0');
  }
  if (a->seen && v != a->value) return a->bad = 2;
  a->seen = 1;
  a->value = v;
  return 0;
}

static int content_length(const ts_http_head *h, cl_acc *a) {
  memset(a, 0, sizeof *a);
  for (size_t i = 0; i < h->nfields && !a->bad; i++) {
    if (!name_is(h->fields[i].name, "Content-Length")) continue;
    ts_view v = h->fields[i].value;
    if (!v.len) a->bad = 1;
    else each_elem(v, cl_elem, a);
    if (!a->bad && !a->seen) a->bad = 1; /* only commas */
  }
  return a->bad;
}

/* Transfer-Encoding over every field: 1 when present; *chunked_last: chunked is the final
 * coding; *others: another coding appears. */
typedef struct {
  int n, last_chunked, others, chunked_twice;
} te_acc;

static int te_elem(ts_view e, void *u) {
  te_acc *a = u;
  int ch = name_is(e, "chunked");
  if (ch && a->last_chunked) a->chunked_twice = 1;
  if (!ch) a->others = 1;
  a->last_chunked = ch;
  a->n++;
  return 0;
}

static int transfer_encoding(const ts_http_head *h, te_acc *a) {
  memset(a, 0, sizeof *a);
  int present = 0;
  for (size_t i = 0; i < h->nfields; i++) {
    if (!name_is(h->fields[i].name, "Transfer-Encoding")) continue;
    present = 1;
    each_elem(h->fields[i].value, te_elem, a);
  }
  return present;
}

int ts_http_request_framing(const ts_http_head *h, ts_http_framing *f, int *status,
                            const char **why) {
  f->kind = TS_HTTP_BODY_NONE;
  f->length = 0;
  *status = 400;
  te_acc te;
  cl_acc cl;
  int has_te = transfer_encoding(h, &te);
  int cl_bad = content_length(h, &cl);
  if (has_te) {
    if (h->minor == 0) {
      *why = "Transfer-Encoding in an HTTP/1.0 request";
      return TS_E_GW_REQUEST;
    }
    if (cl.seen || cl_bad) {
      *why = "both Transfer-Encoding and Content-Length";
      return TS_E_GW_REQUEST;
    }
    if (!te.last_chunked || te.chunked_twice) {
      *why = "Transfer-Encoding whose final coding is not chunked (once)";
      return TS_E_GW_REQUEST;
    }
    if (te.others) {
      *status = 501;
      *why = "transfer codings other than chunked are not implemented";
      return TS_E_GW_REQUEST;
    }
    f->kind = TS_HTTP_BODY_CHUNKED;
    return 0;
  }
  if (cl_bad) {
    *why = cl_bad == 2 ? "different Content-Length values" : "malformed Content-Length";
    return TS_E_GW_REQUEST;
  }
  if (cl.seen && cl.value) {
    f->kind = TS_HTTP_BODY_LENGTH;
    f->length = cl.value;
  }
  return 0;
}

int ts_http_response_framing(const ts_http_head *h, int head_request, ts_http_framing *f,
                             const char **why) {
  f->kind = TS_HTTP_BODY_NONE;
  f->length = 0;
  if (head_request || h->status < 200 || h->status == 204 || h->status == 304) return 0;
  te_acc te;
  cl_acc cl;
  int has_te = transfer_encoding(h, &te);
  int cl_bad = content_length(h, &cl);
  if (has_te && (cl.seen || cl_bad)) {
    *why = "both Transfer-Encoding and Content-Length in the response";
    return TS_E_GW_RESPONSE;
  }
  if (has_te && h->minor == 1) {
    f->kind = te.last_chunked && !te.chunked_twice ? TS_HTTP_BODY_CHUNKED : TS_HTTP_BODY_CLOSE;
    return 0;
  }
  if (has_te) {
    f->kind = TS_HTTP_BODY_CLOSE;
    return 0;
  }
  if (cl_bad) {
    *why = cl_bad == 2 ? "different Content-Length values in the response"
                       : "malformed Content-Length in the response";
    return TS_E_GW_RESPONSE;
  }
  if (cl.seen) {
    f->kind = cl.value ? TS_HTTP_BODY_LENGTH : TS_HTTP_BODY_NONE;
    f->length = cl.value;
    return 0;
  }
  f->kind = TS_HTTP_BODY_CLOSE;
  return 0;
}
