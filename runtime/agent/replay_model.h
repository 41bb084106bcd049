/*
 * replay_model.h: the recorded-turns model backend of the agent loop (agent/run.h).
 *
 * A directory of recorded SSE replies, one file per turn, taken in name order
 * (turn-1.sse, turn-2.sse, ...: plain byte order of the names, so number them with the
 * same width past 9): turn N of a thread plays the N-th file. Each file goes through the
 * tap one SSE event at a time, paced at `rate` events per second like a model (a stall
 * of the process is not made up with a burst of events), with
 * event boundaries found by the SSE framer (stream/sse.h: LF, CR LF and lone CR line
 * ends alike).
 *
 * Composition (agent/compose.h): a turn driven by a prompt plays DIR/<prompt>/ when that
 * directory exists, the N-th file there for the prompt's N-th turn in the thread (so a
 * sub-prompt's child thread, both sides of a dual_ai session and the agent a thread was
 * handed off to each have their own recording, and a whole tree runs with no network);
 * else DIR itself by the thread's turn. A child thread's prompt needs its directory.
 *
 * Limits: at most TS_REPLAY_MAX_FILES files are looked at; a file over
 * TS_REPLAY_MAX_FILE_BYTES is refused (the turn fails with a reason).
 */
#ifndef TS_AGENT_REPLAY_MODEL_H
#define TS_AGENT_REPLAY_MODEL_H

#include "agent/run.h"

#define TS_REPLAY_MAX_FILES 1024
#define TS_REPLAY_MAX_FILE_BYTES ((size_t)256 << 20)
#define TS_REPLAY_MAX_TIME_US (3600ull * 1000000) /* a recorded time past an hour is a typo */

typedef struct {
  const char *dir; /* the recorded turns (not copied: must outlive the model's use) */
  double rate;     /* SSE events per second; <= 0: as fast as possible */
} ts_replay_model;

/* Plays one recorded reply, `path`, into feed() piece by piece, paced like the backend
 * above: one SSE event per 1/rate s (rate <= 0: at once), or, with `times` (a file of
 * "MICROSECONDS END-OFFSET" lines, ascending: END-OFFSET bytes of the reply had arrived
 * MICROSECONDS after the request was sent, as `toolstream bench --record` writes them),
 * each piece at its recorded time after the start (at most TS_REPLAY_MAX_TIME_US). Stops early when feed returns
 * nonzero or `cancel` is set. Returns 0, or -1 with a one-line `why` (the file cannot be
 * read or is too large, a malformed times file, out of memory); feed is not called then. */
int ts_replay_play(const char *path, double rate, const char *times,
                   int (*feed)(void *user, char *buf, size_t len), void *user,
                   const volatile sig_atomic_t *cancel, char *why, size_t cap);

/* The backend for ts_agent_config.model; `r` must outlive the run. */
ts_agent_model ts_replay_model_backend(ts_replay_model *r);

#endif /* TS_AGENT_REPLAY_MODEL_H */
