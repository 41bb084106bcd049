/*
 * json_members.c: see json_members.h. A value is skipped by counting brackets outside
 * strings; inside a string a backslash takes the next byte with it, which is all a
 * skip needs to know of escapes (the strict parse that made the text checked the rest).
 */
#include "stream/json_members.h"

#include <string.h>

#include "base/error.h"

static const char *ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

/* p at an opening quote: returns the byte after the closing quote, or NULL. */
static const char *skip_string(const char *p, const char *end) {
  for (p++; p < end; p++) {
    if (*p == '\\') {
      if (++p >= end) return NULL;
    } else if (*p == '"') {
      return p + 1;
    }
  }
  return NULL;
}

/* p at the first byte of a value: returns the byte after it, or NULL. Iterative: depth
 * is a counter, the brackets' kinds are checked only for the outermost pair (a strict
 * parser checked the rest). */
static const char *skip_value(const char *p, const char *end) {
  if (p >= end) return NULL;
  if (*p == '"') return skip_string(p, end);
  if (*p == '{' || *p == '[') {
    size_t depth = 0;
    while (p < end) {
      char c = *p;
      if (c == '"') {
        if (!(p = skip_string(p, end))) return NULL;
        continue;
      }
      if (c == '{' || c == '[') depth++;
      else if ((c == '}' || c == ']') && --depth == 0) return p + 1;
      p++;
    }
    return NULL;
  }
  /* a number or literal: up to the next delimiter */
  const char *s = p;
  while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' && *p != '\n' &&
         *p != '\r')
    p++;
  return p > s ? p : NULL;
}

void ts_json_members_init(ts_json_members *it, const char *json, size_t len) {
  it->p = json;
  it->end = json + len;
  it->state = 0;
}

static int fail(ts_json_members *it) {
  it->state = 2;
  return TS_E_INVAL;
}

int ts_json_members_next(ts_json_members *it, ts_view *key, ts_view *value) {
  if (it->state == 2) return 0;
  const char *p = ws(it->p, it->end), *end = it->end;
  if (it->state == 0) {
    if (p >= end || *p != '{') return fail(it);
    p = ws(p + 1, end);
    if (p < end && *p == '}') {
      it->state = 2;
      return 0;
    }
    it->state = 1;
  } else {
    if (p < end && *p == '}') {
      it->state = 2;
      return 0;
    }
    if (p >= end || *p != ',') return fail(it);
    p = ws(p + 1, end);
  }
  if (p >= end || *p != '"') return fail(it);
  const char *k = p + 1, *ke = skip_string(p, end);
  if (!ke) return fail(it);
  p = ws(ke, end);
  if (p >= end || *p != ':') return fail(it);
  p = ws(p + 1, end);
  const char *v = p, *ve = skip_value(p, end);
  if (!ve) return fail(it);
  *key = (ts_view){k, (size_t)(ke - 1 - k)};
  *value = (ts_view){v, (size_t)(ve - v)};
  it->p = ve;
  return 1;
}

ts_view ts_json_member(const char *json, size_t len, const char *key) {
  ts_json_members it;
  ts_view k, v;
  size_t kl = strlen(key);
  ts_json_members_init(&it, json, len);
  while (ts_json_members_next(&it, &k, &v) == 1)
    if (k.len == kl && !memcmp(k.p, key, kl)) return v;
  return (ts_view){NULL, 0};
}
