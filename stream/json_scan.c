/*
 * json_scan.c: the one-pass scanner of json_scan.h.
 *
 * A small pull machine: `state` says what the next byte may start (the root value, the
 * first item of a container just opened, or what follows a value), and each call reads
 * exactly one item. The open containers are a stack of their first bytes (for the raw
 * text of a container handed out at its end) and one bit each saying array or object.
 *
 * The machine itself lives in json_scan_impl.h, so that the readers of the hottest
 * payloads can have it inline; this file holds the out-of-line entry points.
 *
 * Where the time goes on a provider's payload: string bodies (ids, names, models, the
 * argument fragment) are most of the bytes, so the string scan looks at 16 bytes at a
 * time (SSE2 on x86-64, which every x86-64 has; a plain loop elsewhere) for the three
 * bytes that matter inside a string: the closing quote, a backslash and NUL. An escape
 * found in a block is checked there and the search goes on in the same block (argument
 * fragments are full of `\"`), and a string's last bytes, fewer than 16, are searched
 * in the block that ends at the text's end (never a byte past it; the text's start is
 * kept in open[0] for that test). Integers, the other common value, go eight digits a
 * step. Everything else costs a few instructions per item; at about 27 items per Chat
 * payload the items, not the bytes, are most of the cost (docs/performance.md).
 */
#include "stream/json_scan.h"

#include "stream/json_scan_impl.h"

void ts_json_scan_init(ts_json_scan *s, const char *text, size_t len) {
  s->p = text;
  s->end = text + len;
  s->arrays = 0;
  s->depth = 0;
  s->in_array = 0;
  s->state = ST_ROOT;
  s->open[0] = text; /* until the root opens: the text's start, for scan_string's `lo` */
}

int ts_json_scan_next(ts_json_scan *s, ts_json_item *it) { return scan_next(s, it); }

int ts__json_scan_skip(ts_json_scan *s, ts_view *raw) {
  if (s->state != TS__JSON_SCAN_FIRST) /* the last item was no container's start */
    return s->state == ST_ERR ? TS_E_JV_BAD_JSON : s->state == ST_ERR_LIMIT ? TS_E_LIMIT : 1;
  unsigned depth = s->depth - 1; /* the container's own depth */
  ts_json_item it;
  for (;;) {
    int rc = ts_json_scan_next(s, &it);
    if (rc != 1) return rc < 0 ? rc : scan_fail(s, TS_E_JV_BAD_JSON);
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
    if (!scan_is_digit(*p)) return -1;
    if (acc > (UINT64_C(1) << 63) / 10) return -1;
    acc = acc * 10 + (unsigned)(*p - '0');
  }
  if (acc > (uint64_t)INT64_MAX + (uint64_t)neg) return -1;
  *out = neg ? (acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc) : (int64_t)acc;
  return 0;
}
