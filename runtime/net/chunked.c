/*
 * chunked.c: see chunked.h. States follow the grammar
 *   chunk = size [ext] CRLF data CRLF ; last = "0" [ext] CRLF ; trailer* CRLF
 * Data runs are handed over as one callback per contiguous run within a feed.
 */
#include "net/chunked.h"

#include <string.h>

enum {
  S_SIZE0, /* first hex digit of a size */
  S_SIZE,  /* more digits, ';' or CR */
  S_EXT,   /* inside an extension, up to CR */
  S_SIZE_LF,
  S_DATA,
  S_DATA_CR,
  S_DATA_LF,
  S_TRAILER0, /* start of a trailer line (CR here ends the body) */
  S_TRAILER,  /* inside a trailer line */
  S_TRAILER_LF,
  S_END_LF,
  S_DONE,
  S_ERROR
};

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

long ts_chunked_feed(ts_chunked *c, const char *p, size_t n, ts_chunked_data_fn fn,
                     void *user, int *done, const char **why) {
  size_t i = 0;
  *done = c->_state == S_DONE;
  if (c->_state == S_ERROR) {
    *why = "malformed chunked body";
    return -1;
  }
  while (i < n && c->_state != S_DONE) {
    unsigned char ch = (unsigned char)p[i];
    switch (c->_state) {
    case S_SIZE0: {
      int v = hexval(ch);
      if (v < 0) goto bad_size;
      c->_left = (uint64_t)v;
      c->_digits = 1;
      c->_line = 1;
      c->_state = S_SIZE;
      i++;
      break;
    }
    case S_SIZE: {
      int v = hexval(ch);
      if (v >= 0) {
        if (++c->_digits > 15) goto bad_size;
        c->_left = c->_left * 16 + (uint64_t)v;
        c->_line++;
        i++;
      } else if (ch == ';') {
        c->_state = S_EXT;
        c->_line++;
        i++;
      } else if (ch == '\r') {
        c->_state = S_SIZE_LF;
        i++;
      } else {
        goto bad_size;
      }
      break;
    }
    case S_EXT: {
      /* extensions are skipped, bounded; no control bytes but HTAB. Both rules are
       * applied byte by byte, so the first fault and its offset do not depend on how the
       * line was split into reads (a run checked whole would report a long line at the
       * run's start, or a control byte past the limit before the limit). */
      const char *cr = memchr(p + i, '\r', n - i);
      size_t run = cr ? (size_t)(cr - (p + i)) : n - i;
      size_t room = TS_CHUNKED_MAX_LINE - c->_line, k = 0;
      for (; k < run && k < room; k++) {
        unsigned char e = (unsigned char)p[i + k];
        if ((e < 0x20 && e != '\t') || e == 0x7f) break;
      }
      c->_line += k;
      i += k;
      c->offset += k;
      if (k < run) {
        *why = k < room ? "control byte in a chunk extension" : "chunk extension too long";
        goto fail;
      }
      if (cr) {
        c->_state = S_SIZE_LF;
        i++;
        c->offset++;
      }
      continue; /* offset already counted */
    }
    case S_SIZE_LF:
      if (ch != '\n') {
        *why = "chunk size line does not end in CRLF";
        goto fail_here;
      }
      i++;
      c->_state = c->_left ? S_DATA : S_TRAILER0;
      c->_trailer = 0;
      break;
    case S_DATA: {
      size_t run = n - i;
      if ((uint64_t)run > c->_left) run = (size_t)c->_left;
      if (fn) fn(user, p + i, run);
      c->_left -= run;
      i += run;
      c->offset += run;
      if (!c->_left) c->_state = S_DATA_CR;
      continue;
    }
    case S_DATA_CR:
      if (ch != '\r') {
        *why = "chunk data not followed by CRLF";
        goto fail_here;
      }
      i++;
      c->_state = S_DATA_LF;
      break;
    case S_DATA_LF:
      if (ch != '\n') {
        *why = "chunk data not followed by CRLF";
        goto fail_here;
      }
      i++;
      c->_state = S_SIZE0;
      break;
    case S_TRAILER0:
      if (ch == '\r') {
        c->_state = S_END_LF;
        i++;
        break;
      }
      c->_line = 0;
      c->_state = S_TRAILER;
      /* fall through */
    case S_TRAILER:
      if (ch == '\r') {
        c->_state = S_TRAILER_LF;
      } else if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
        *why = "control byte in a trailer field";
        goto fail_here;
      }
      if (++c->_trailer > TS_CHUNKED_MAX_TRAILER) {
        *why = "trailer section too large";
        goto fail_here;
      }
      i++;
      break;
    case S_TRAILER_LF:
      if (ch != '\n') {
        *why = "trailer line does not end in CRLF";
        goto fail_here;
      }
      i++;
      c->_state = S_TRAILER0;
      break;
    case S_END_LF:
      if (ch != '\n') {
        *why = "chunked body does not end in CRLF";
        goto fail_here;
      }
      i++;
      c->_state = S_DONE;
      break;
    }
    c->offset++;
  }
  *done = c->_state == S_DONE;
  return (long)i;
bad_size:
  *why = "malformed chunk size";
fail_here:
fail:
  c->_state = S_ERROR;
  return -1;
}
