/*
 * live.h: the terminal live view of thread events, shared by `sub` and `run`.
 *
 * One line per tool call: a spinner while its arguments stream, its progress label, then
 * its final state (ready, error, running, done, failed), redrawn in place with ANSI
 * cursor movement; stream errors and finished turns are printed above the list and stay.
 * Colours unless NO_COLOR is set. Feed it each event's JSON; call tick every ~100 ms to
 * turn the spinners.
 */
#ifndef TS_LIVE_H
#define TS_LIVE_H

#include <stddef.h>

#include "base/thread_id.h"
#include "stream/json_view.h"

#define TS_LIVE_MAX_CALLS 64 /* lines kept on screen; older calls scroll away */
#define TS_LIVE_TEXT 160

typedef struct {
  char thread[TS_THREAD_ID_MAX + 1];
  long index;
  char call_id[96]; /* with the index, tells calls of different turns apart */
  char tool[64];
  char progress[TS_LIVE_TEXT];
  char detail[TS_LIVE_TEXT];
  int state; /* 0 streaming, 1 ready, 2 error, 3 running, 4 done, 5 failed */
} ts_live_call;

typedef struct {
  int color;
  ts_live_call calls[TS_LIVE_MAX_CALLS];
  int n;
  int drawn; /* lines drawn last time (to move back over them) */
  unsigned frame;
  ts_jv jv;
  char *scratch;
  size_t scratch_cap;
} ts_live;

/* Returns 0, or nonzero on out of memory. */
int ts_live_init(ts_live *w);
void ts_live_event(ts_live *w, const char *json, size_t len);
void ts_live_tick(ts_live *w);
void ts_live_fini(ts_live *w);

#endif
