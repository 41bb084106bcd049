/*
 * live.h: the terminal live view of thread events, shared by `sub`, `run` and `demo`.
 *
 * The screen is a log in event order: the model's text, one line per tool call, a line
 * per finished turn and per stream error. A call's line shows a spinner while its
 * arguments stream, its progress label, the byte count from heartbeats, then its state
 * (ready, error, running, done, failed) and, when it arrives, its result or error.
 * Lines are final once nothing more can change them and every line before them is final;
 * the final ones scroll up and stay, the rest (the open calls and what follows them) are
 * redrawn in place with ANSI cursor movement, so a turn's line always sits after its calls
 * and before the next turn's. Colours unless NO_COLOR is set.
 *
 * The thread tree: events of a child thread carry `parent`, so the view knows each
 * thread's depth; every line of a child is indented two spaces per level and starts with
 * the child's name (its subagent instance name from `thread_created`, else its id), and
 * `thread_created`, `subagent_message` and `thread_finished` are lines of their own, so one
 * screen shows a whole tree at work.
 *
 * Feed it each event's JSON (ts_live_event); call ts_live_tick every ~100 ms to turn the
 * spinners. Not thread-safe: callers that feed and tick from two threads hold a lock.
 */
#ifndef TS_LIVE_H
#define TS_LIVE_H

#include <stddef.h>

#include "base/thread_id.h"
#include "stream/json_view.h"

#define TS_LIVE_MAX_ITEMS 64 /* lines kept for redrawing; past it the oldest is made final */
#define TS_LIVE_TEXT 160
#define TS_LIVE_MAX_THREADS 64 /* threads whose depth and name are remembered */
#define TS_LIVE_LABEL 48

typedef enum {
  TS_LIVE_CALL = 1,
  TS_LIVE_NOTE, /* a finished turn, a stream error, the model's text */
} ts_live_kind;

typedef struct {
  int kind;
  char thread[TS_THREAD_ID_MAX + 1];
  long index;
  long turn;
  char call_id[96];
  char tool[64];
  char progress[TS_LIVE_TEXT]; /* CALL: the label; NOTE: the text */
  char detail[TS_LIVE_TEXT];
  char result[TS_LIVE_TEXT];
  const char *color; /* NOTE */
  int state; /* CALL: 0 streaming, 1 ready, 2 error, 3 running, 4 done, 5 failed */
  int sticky; /* CALL: ready is final only when no result will follow (no dispatcher) */
  int depth;  /* the thread's depth in the tree (0: a root) */
  char label[TS_LIVE_LABEL]; /* a child thread's name (empty for a root) */
} ts_live_item;

typedef struct {
  char id[TS_THREAD_ID_MAX + 1];
  char name[TS_LIVE_LABEL];
  int depth;
} ts_live_thread;

typedef struct {
  int color;
  ts_live_item items[TS_LIVE_MAX_ITEMS];
  int n;
  int drawn; /* lines drawn last time (to move back over them) */
  unsigned frame;
  int executes; /* calls get results (set by run; learnt from tool_execution_started) */
  char text[TS_LIVE_TEXT]; /* the model's text since the last line */
  char text_thread[TS_THREAD_ID_MAX + 1];
  ts_live_thread threads[TS_LIVE_MAX_THREADS];
  int nthreads;
  int cur; /* the thread of the event being fed (an index of threads), -1: none */
  ts_jv jv;
  char *scratch;
  size_t scratch_cap;
} ts_live;

/* Returns 0, or nonzero on out of memory. */
int ts_live_init(ts_live *w);
void ts_live_event(ts_live *w, const char *json, size_t len);
void ts_live_tick(ts_live *w);
/* Makes every line final (the end of the output). */
void ts_live_fini(ts_live *w);

#endif
