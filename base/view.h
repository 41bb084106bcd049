/*
 * view.h: a view of bytes someone else owns (pointer + length), the currency of every
 * parser in toolstream. A view is never NUL-terminated by contract and never owns its
 * bytes: it is valid only as long as the buffer it points into, which each API that
 * hands one out states (usually "until the callback returns").
 */
#ifndef TS_VIEW_H
#define TS_VIEW_H

#include <stddef.h>

typedef struct {
  const char *p;
  size_t len;
} ts_view;

#endif /* TS_VIEW_H */
