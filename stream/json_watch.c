/*
 * json_watch.c: see json_watch.h.
 *
 * States: SCAN (waiting for a depth-1 key), KEY (inside a depth-1 key, comparing its
 * decoded bytes with the name as they arrive), WANT_VALUE (the key matched; the next
 * depth-1 token starts its value), VALUE (inside the value: every token until the one
 * that completes it at depth 1), DONE (a value completed; everything else is outside).
 *
 * Key comparison decodes each key fragment through a small scratch buffer in slices,
 * so a long key costs no memory, and stops decoding as soon as the key cannot match.
 */
#include "stream/json_watch.h"

#include <string.h>

enum { W_SCAN = 0, W_KEY, W_WANT_VALUE, W_VALUE, W_DONE };

/* Decode slice size: a fragment is decoded at most this many input bytes at a time. */
#define SLICE 64

void ts_json_watch_init(ts_json_watch *w, const char *name, size_t len) {
  memset(w, 0, sizeof *w);
  w->name = name;
  w->name_len = len;
  w->state = W_SCAN;
}

int ts_json_watch_done(const ts_json_watch *w) { return w->state == W_DONE; }

/* Compares the next decoded bytes of the current key against the name. */
static void match_key_fragment(ts_json_watch *w, const char *p, size_t n) {
  char out[SLICE + TS_JSON_UNESCAPE_SLACK];
  while (n && w->key_ok) {
    size_t k = n < SLICE ? n : SLICE;
    ssize_t got = ts_json_unescape_feed(&w->dec, p, k, out);
    if (got < 0 || w->matched + (size_t)got > w->name_len ||
        memcmp(w->name + w->matched, out, (size_t)got) != 0) {
      w->key_ok = 0;
      return;
    }
    w->matched += (size_t)got;
    p += k;
    n -= k;
  }
}

static int completes(const ts_json_token *tok) {
  if (tok->depth != 1) return 0;
  switch (tok->kind) {
    case TS_JSON_OBJECT_BEGIN:
    case TS_JSON_ARRAY_BEGIN:
    case TS_JSON_KEY:
      return 0;
    default:
      return (tok->flags & TS_JSON_LAST) != 0;
  }
}

int ts_json_watch_token(ts_json_watch *w, const ts_json_token *tok) {
  switch (w->state) {
    case W_SCAN:
      if (tok->kind != TS_JSON_KEY || tok->depth != 1) return TS_JSON_WATCH_OUTSIDE;
      w->state = W_KEY;
      w->matched = 0;
      w->key_ok = 1;
      ts_json_unescape_init(&w->dec);
      /* fall through: this token is the key's first fragment */
      /* FALLTHROUGH */
    case W_KEY:
      match_key_fragment(w, tok->text, tok->len);
      if (tok->flags & TS_JSON_LAST) {
        int ok = w->key_ok && ts_json_unescape_end(&w->dec) == TS_E_OK &&
                 w->matched == w->name_len;
        w->state = ok ? W_WANT_VALUE : W_SCAN;
      }
      return TS_JSON_WATCH_OUTSIDE;
    case W_WANT_VALUE:
      w->state = W_VALUE;
      /* FALLTHROUGH */
    case W_VALUE:
      if (completes(tok)) {
        w->state = W_DONE;
        return TS_JSON_WATCH_COMPLETE;
      }
      return TS_JSON_WATCH_IN;
    default:
      return TS_JSON_WATCH_OUTSIDE;
  }
}
