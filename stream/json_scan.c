/*
 * json_scan.c: the one-pass scanner of json_scan.h.
 *
 * A small pull machine: `state` says what the next byte may start (the root value, the
 * first item of a container just opened, or what follows a value), and each call reads
 * exactly one item. The open containers are a stack of their first bytes (for the raw
 * text of a container handed out at its end) and one bit each saying array or object.
 *
 * Where the time goes on a provider's payload: string bodies (ids, names, models, the
 * argument fragment) are most of the bytes, so the string scan looks at 16 bytes at a
 * time (SSE2 on x86-64, which every x86-64 has; a plain loop elsewhere) for the three
 * bytes that matter inside a string: the closing quote, a backslash and NUL. Everything
 * else costs a few instructions per item.
 */
#include "stream/json_scan.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum {
  ST_ROOT = 0,
  ST_FIRST = TS__JSON_SCAN_FIRST,
  ST_AFTER = TS__JSON_SCAN_AFTER,
  ST_DONE,
  ST_ERR,
  ST_ERR_LIMIT
};

void ts_json_scan_init(ts_json_scan *s, const char *text, size_t len) {
  s->p = text;
  s->end = text + len;
  s->arrays = 0;
  s->depth = 0;
  s->in_array = 0;
  s->state = ST_ROOT;
}

static const char *skip_ws_slow(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  return p;
}

/* Payloads from providers are compact: the common case is one comparison. */
static inline const char *skip_ws(const char *p, const char *end) {
  return p < end && (unsigned char)*p <= ' ' ? skip_ws_slow(p, end) : p;
}

static inline int is_hex(char c) {
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* p is just after an opening quote: returns the closing quote, or NULL when the string
 * is malformed or unterminated. *escaped becomes 1 when a backslash is seen. */
static inline __attribute__((always_inline)) const char *scan_string(const char *p,
                                                                     const char *end,
                                                                     int *escaped) {
  for (;;) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                  zero = _mm_setzero_si128();
    while (end - p >= 16) {
      __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
      __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                 _mm_cmpeq_epi8(v, zero));
      unsigned m = (unsigned)_mm_movemask_epi8(hit);
      if (m) {
        p += __builtin_ctz(m);
        goto special;
      }
      p += 16;
    }
#endif
    while (p < end && *p != '"' && *p != '\\' && *p != '\0') p++;
#if defined(__SSE2__)
  special:
#endif
    if (p >= end || *p == '\0') return NULL;
    if (*p == '"') return p;
    /* a backslash: one escape */
    *escaped = 1;
    if (end - p < 2) return NULL;
    switch (p[1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
      p += 2;
      break;
    case 'u':
      if (end - p < 6 || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]) || !is_hex(p[5]))
        return NULL;
      p += 6;
      break;
    default:
      return NULL;
    }
  }
}

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

/* RFC 8259 number at p: returns its end, or NULL. */
static const char *scan_number(const char *p, const char *end) {
  if (*p == '-') p++;
  if (p >= end) return NULL;
  if (*p == '0') {
    p++;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end && is_digit(*p)) p++;
  } else {
    return NULL;
  }
  if (p < end && *p == '.') {
    const char *d = ++p;
    while (p < end && is_digit(*p)) p++;
    if (p == d) return NULL;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    const char *d = p;
    while (p < end && is_digit(*p)) p++;
    if (p == d) return NULL;
  }
  return p;
}

/* A literal or number at p (not a string or container): returns its end, or NULL. */
static const char *scan_scalar(const char *p, const char *end) {
  switch (*p) {
  case 't':
    return end - p >= 4 && memcmp(p, "true", 4) == 0 ? p + 4 : NULL;
  case 'f':
    return end - p >= 5 && memcmp(p, "false", 5) == 0 ? p + 5 : NULL;
  case 'n':
    return end - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
  default:
    return (*p == '-' || is_digit(*p)) ? scan_number(p, end) : NULL;
  }
}

static int fail(ts_json_scan *s, int code) {
  s->state = code == TS_E_LIMIT ? ST_ERR_LIMIT : ST_ERR;
  return code;
}

/* The container at the top of the stack closes at p (its closing bracket). */
static int close_container(ts_json_scan *s, const char *p, ts_json_item *it) {
  s->depth--;
  s->in_array = s->depth && ((s->arrays >> (s->depth - 1)) & 1);
  it->type = TS_JSON_SCAN_END;
  it->depth = s->depth;
  it->key = (ts_view){NULL, 0};
  it->raw = (ts_view){s->open[s->depth], (size_t)(p + 1 - s->open[s->depth])};
  it->escaped = it->key_escaped = 0;
  s->p = p + 1;
  s->state = ST_AFTER;
  return 1;
}

/* One item; inside an object, a member whose key's bit (TS_JSON_KEY_BIT) is not in
 * `want` is read, checked and passed over, and the next member is tried. */
static inline __attribute__((always_inline)) int scan_next(ts_json_scan *s, ts_json_item *it,
                                                           uint64_t want) {
  const char *end, *p;
  unsigned depth;
  int in_array;
again:
  end = s->end;
  p = skip_ws(s->p, end);
  depth = s->depth;
  in_array = s->in_array;
  if (s->state == ST_AFTER) {
    if (p < end && *p == ',' && depth) {
      p = skip_ws(p + 1, end);
    } else if (depth == 0) {
      if (p != end) return fail(s, TS_E_JV_BAD_JSON);
      s->state = ST_DONE;
      return 0;
    } else if (p < end && *p == (in_array ? ']' : '}')) {
      return close_container(s, p, it);
    } else {
      return fail(s, TS_E_JV_BAD_JSON);
    }
  } else if (s->state == ST_FIRST) {
    if (p < end && *p == (in_array ? ']' : '}')) return close_container(s, p, it);
  } else if (s->state != ST_ROOT) {
    return s->state == ST_DONE ? 0 : s->state == ST_ERR_LIMIT ? TS_E_LIMIT : TS_E_JV_BAD_JSON;
  }

  it->escaped = 0;
  if (depth && !in_array) { /* a member: key, colon */
    if (p >= end || *p != '"') return fail(s, TS_E_JV_BAD_JSON);
    int kesc = 0;
    const char *q = scan_string(p + 1, end, &kesc);
    if (!q) return fail(s, TS_E_JV_BAD_JSON);
    it->key_escaped = kesc;
    it->key = (ts_view){p + 1, (size_t)(q - p - 1)};
    p = skip_ws(q + 1, end);
    if (p >= end || *p != ':') return fail(s, TS_E_JV_BAD_JSON);
    p = skip_ws(p + 1, end);
    if (want != UINT64_MAX && !(want & ts__json_key_bit(it->key.p, it->key.len))) {
      if (p >= end) return fail(s, TS_E_JV_BAD_JSON);
      /* not wanted: pass over the value (a container through skip) and go on */
      switch (*p) {
      case '"': {
        int esc = 0;
        q = scan_string(p + 1, end, &esc);
        if (!q) return fail(s, TS_E_JV_BAD_JSON);
        s->p = q + 1;
        break;
      }
      case '{':
      case '[':
        if (depth >= TS_JSON_SCAN_MAX_DEPTH) return fail(s, TS_E_LIMIT);
        s->open[depth] = p;
        if (*p == '[')
          s->arrays |= UINT64_C(1) << depth;
        else
          s->arrays &= ~(UINT64_C(1) << depth);
        s->depth = depth + 1;
        s->in_array = *p == '[';
        s->p = p + 1;
        s->state = ST_FIRST;
        {
          int rc = ts__json_scan_skip(s, NULL);
          if (rc != 1) return rc;
        }
        goto again;
      default:
        q = scan_scalar(p, end);
        if (!q) return fail(s, TS_E_JV_BAD_JSON);
        s->p = q;
        break;
      }
      s->state = ST_AFTER;
      goto again;
    }
  } else {
    it->key = (ts_view){NULL, 0};
    it->key_escaped = 0;
  }
  if (p >= end) return fail(s, TS_E_JV_BAD_JSON);
  it->depth = depth;
  const char *q;
  switch (*p) {
  case '"': {
    int esc = 0;
    q = scan_string(p + 1, end, &esc);
    if (!q) return fail(s, TS_E_JV_BAD_JSON);
    it->escaped = esc;
    it->type = TS_JSON_SCAN_STRING;
    it->raw = (ts_view){p + 1, (size_t)(q - p - 1)};
    p = q + 1;
    break;
  }
  case '{':
  case '[':
    if (depth >= TS_JSON_SCAN_MAX_DEPTH) return fail(s, TS_E_LIMIT);
    s->open[depth] = p;
    if (*p == '[')
      s->arrays |= UINT64_C(1) << depth;
    else
      s->arrays &= ~(UINT64_C(1) << depth);
    s->depth = depth + 1;
    s->in_array = *p == '[';
    it->type = *p == '[' ? TS_JSON_SCAN_ARRAY : TS_JSON_SCAN_OBJECT;
    it->raw = (ts_view){p, 1};
    s->p = p + 1;
    s->state = ST_FIRST;
    return 1;
  case 't':
    if (end - p < 4 || memcmp(p, "true", 4) != 0) return fail(s, TS_E_JV_BAD_JSON);
    it->type = TS_JSON_SCAN_TRUE;
    it->raw = (ts_view){p, 4};
    p += 4;
    break;
  case 'f':
    if (end - p < 5 || memcmp(p, "false", 5) != 0) return fail(s, TS_E_JV_BAD_JSON);
    it->type = TS_JSON_SCAN_FALSE;
    it->raw = (ts_view){p, 5};
    p += 5;
    break;
  case 'n':
    if (end - p < 4 || memcmp(p, "null", 4) != 0) return fail(s, TS_E_JV_BAD_JSON);
    it->type = TS_JSON_SCAN_NULL;
    it->raw = (ts_view){p, 4};
    p += 4;
    break;
  default:
    q = (*p == '-' || is_digit(*p)) ? scan_number(p, end) : NULL;
    if (!q) return fail(s, TS_E_JV_BAD_JSON);
    it->type = TS_JSON_SCAN_NUMBER;
    it->raw = (ts_view){p, (size_t)(q - p)};
    p = q;
    break;
  }
  s->p = p;
  s->state = ST_AFTER;
  return 1;
}

int ts_json_scan_next(ts_json_scan *s, ts_json_item *it) { return scan_next(s, it, UINT64_MAX); }

int ts_json_scan_next_in(ts_json_scan *s, ts_json_item *it, uint64_t want) {
  return scan_next(s, it, want);
}

int ts__json_scan_skip(ts_json_scan *s, ts_view *raw) {
  if (s->state != TS__JSON_SCAN_FIRST) /* the last item was no container's start */
    return s->state == ST_ERR ? TS_E_JV_BAD_JSON : s->state == ST_ERR_LIMIT ? TS_E_LIMIT : 1;
  unsigned depth = s->depth - 1; /* the container's own depth */
  ts_json_item it;
  for (;;) {
    int rc = ts_json_scan_next(s, &it);
    if (rc != 1) return rc < 0 ? rc : fail(s, TS_E_JV_BAD_JSON);
    if (it.type == TS_JSON_SCAN_END && it.depth == depth) break;
  }
  if (raw) *raw = it.raw;
  return 1;
}

int ts_json_scan_int(ts_view raw, int64_t *out) {
  const char *p = raw.p, *e = raw.p + raw.len;
  int neg = 0;
  if (p < e && *p == '-') {
    neg = 1;
    p++;
  }
  if (p == e) return -1;
  uint64_t acc = 0;
  for (; p < e; p++) {
    if (!is_digit(*p)) return -1;
    if (acc > (UINT64_C(1) << 63) / 10) return -1;
    acc = acc * 10 + (unsigned)(*p - '0');
  }
  if (acc > (uint64_t)INT64_MAX + (uint64_t)neg) return -1;
  *out = neg ? (acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc) : (int64_t)acc;
  return 0;
}
