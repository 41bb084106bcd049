/*
 * replay_model.c: recorded turns as a model (replay_model.h).
 *
 * Pacing needs the event boundaries before the tap sees the bytes, because the tap
 * decodes JSON strings in place and would change what a second look would find. So the
 * whole file is framed first (the framer only reports where each event ends, it does
 * not alter the bytes), then fed to the tap event by event with a sleep before each one
 * that keeps the pace (`rate` events per second on average, no catch-up burst after a
 * stall). Bytes after the last complete event (a truncated recording) go in
 * as a last piece, so the tap sees exactly the file and reports the truncation itself.
 */
#include "agent/replay_model.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/file.h"
#include "stream/sse.h"

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The n-th (0-based) *.sse file of dir in name order, into path; 0 if found. */
static int turn_file(const char *dir, uint32_t n, char *path, size_t cap) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  char *names[TS_REPLAY_MAX_FILES];
  size_t k = 0;
  struct dirent *e;
  while ((e = readdir(d)) && k < TS_REPLAY_MAX_FILES) {
    size_t l = strlen(e->d_name);
    if (l > 4 && !strcmp(e->d_name + l - 4, ".sse") && (names[k] = strdup(e->d_name))) k++;
  }
  closedir(d);
  qsort(names, k, sizeof names[0], cmp_name);
  int rc = -1;
  if (n < k && (size_t)snprintf(path, cap, "%s/%s", dir, names[n]) < cap) rc = 0;
  for (size_t i = 0; i < k; i++) free(names[i]);
  return rc;
}

/* Where the turn's recording is: DIR/<prompt>/ and the prompt's own turn count when a
 * prompt drives the turn and that directory exists; else DIR and the thread's turn. A
 * child thread (nested) has no DIR fallback: the caller's turns are not its own. */
static int turn_dir(const ts_replay_model *r, const ts_agent_turn *t, char *dir, size_t cap,
                    uint32_t *n) {
  struct stat st;
  if (t->prompt && (size_t)snprintf(dir, cap, "%s/%s", r->dir, t->prompt) < cap &&
      !stat(dir, &st) && S_ISDIR(st.st_mode)) {
    *n = t->prompt_turn;
    return 0;
  }
  if (t->nested) return -1;
  snprintf(dir, cap, "%s", r->dir);
  *n = t->turn;
  return 0;
}

static int find_turn(const ts_replay_model *r, const ts_agent_turn *t, char *path, size_t cap,
                     char *why, size_t why_cap) {
  char dir[4096];
  uint32_t n = 0;
  if (turn_dir(r, t, dir, sizeof dir, &n)) {
    snprintf(why, why_cap, "no recorded turns for prompt %s: no directory %s/%s", t->prompt,
             r->dir, t->prompt);
    return -1;
  }
  if (turn_file(dir, n, path, cap) == 0) return 0;
  snprintf(why, why_cap, "no recorded turn %u in %s", n + 1, dir);
  return -1;
}

static int has_turn(void *user, const ts_agent_turn *t, char *why, size_t cap) {
  char path[4096];
  return find_turn(user, t, path, sizeof path, why, cap);
}

typedef struct {
  uint64_t *ends;
  size_t n, cap;
  int oom;
} bounds;

static int on_sse(void *user, const ts_sse_event *ev) {
  bounds *b = user;
  if (ev->kind != TS_SSE_DISPATCH) return 0; /* an over-long event: goes with the next */
  if (b->n == b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 256;
    uint64_t *p = realloc(b->ends, nc * sizeof *p);
    if (!p) {
      b->oom = 1;
      return 1;
    }
    b->ends = p;
    b->cap = nc;
  }
  b->ends[b->n++] = ev->end_offset;
  return 0;
}

/* The recorded arrival of a reply: "T END" lines, END bytes had arrived T µs after the
 * request was sent (replay_model.h). Malformed, out of order or past the file: -1. */
static int read_times(const char *path, size_t len, bounds *b, uint64_t **at, char *why,
                      size_t cap) {
  char *text;
  size_t n;
  if (ts_file_read(path, TS_REPLAY_MAX_FILE_BYTES, &text, &n)) {
    snprintf(why, cap, "cannot read %s: %s", path, strerror(errno));
    return -1;
  }
  size_t line = 0;
  uint64_t last_t = 0, last_end = 0;
  int rc = 0;
  for (char *p = text, *e; p < text + n && !rc; p = e + 1) {
    e = memchr(p, '\n', (size_t)(text + n - p));
    if (!e) e = text + n;
    line++;
    if (e == p) continue;
    char *q;
    /* digits only (strtoull alone would take "-1" as a huge number), and no time past
     * TS_REPLAY_MAX_TIME_US: a typo must not become a sleep of years */
    unsigned long long t = *p >= '0' && *p <= '9' ? strtoull(p, &q, 10) : (q = p, 0), end = 0;
    int ok = q > p && *q == ' ' && t <= TS_REPLAY_MAX_TIME_US;
    if (ok) {
      char *r = q + 1;
      end = *r >= '0' && *r <= '9' ? strtoull(r, &q, 10) : (q = r, 0);
      ok = q > r && q == e && t >= last_t && end > last_end && end <= len;
    }
    if (!ok) {
      snprintf(why, cap, "%s:%zu: want \"MICROSECONDS END-OFFSET\" lines, ascending, within "
               "the recording", path, line);
      rc = -1;
      break;
    }
    if (b->n == b->cap) { /* grow both arrays */
      size_t nc = b->cap ? b->cap * 2 : 256;
      uint64_t *x = realloc(b->ends, nc * sizeof *x);
      if (x) b->ends = x;
      uint64_t *y = x ? realloc(*at, nc * sizeof *y) : NULL;
      if (y) *at = y;
      if (!x || !y) {
        snprintf(why, cap, "out of memory");
        rc = -1;
        break;
      }
      b->cap = nc;
    }
    b->ends[b->n] = end;
    (*at)[b->n++] = t;
    last_t = t;
    last_end = end;
  }
  free(text);
  return rc;
}

int ts_replay_play(const char *path, double rate, const char *times,
                   int (*feed)(void *user, char *buf, size_t len), void *user,
                   const volatile sig_atomic_t *cancel, char *why, size_t cap) {
  char *buf;
  size_t len;
  int rc = ts_file_read(path, TS_REPLAY_MAX_FILE_BYTES, &buf, &len);
  if (rc) {
    snprintf(why, cap, "cannot read %s: %s", path,
             rc == TS_E_LIMIT ? "the file is too large" : strerror(errno));
    return -1;
  }
  bounds b = {0};
  uint64_t *at = NULL;
  if (times) {
    if (read_times(times, len, &b, &at, why, cap)) {
      free(b.ends);
      free(at);
      free(buf);
      return -1;
    }
  } else {
    /* the event boundaries, found by the framer on the untouched bytes */
    ts_sse sse;
    size_t dcap = TS_TAP_MAX_EVENT_BYTES;
    char *data = malloc(dcap);
    if (!data || ts_sse_init(&sse, data, dcap, 0, on_sse, &b) || ts_sse_feed(&sse, buf, len) ||
        ts_sse_finish(&sse) || b.oom) {
      free(data);
      free(b.ends);
      free(buf);
      snprintf(why, cap, "out of memory");
      return -1;
    }
    free(data);
  }
  /* Event i is due one interval after event i-1 was due. Lateness up to REPLAY_SLACK_MS
   * (a sleep that overshot) is made up, so the average rate holds; a longer stall (a busy
   * machine, a slow tool) is not made up with a burst: the schedule restarts from the
   * late event. So a progress label still comes about as many intervals before the end
   * of its call as the recording says, however loaded the machine is. With recorded
   * times, each piece is due at its own time after the start (a late piece is not
   * rescheduled: the recording says when, not how far apart). */
  enum { REPLAY_SLACK_MS = 25 };
  double interval = rate > 0 ? 1e3 / rate : 0, t0 = ts_clock_ms(), next = t0;
  size_t at_off = 0;
  for (size_t i = 0; i <= b.n && at_off < len && !(cancel && *cancel); i++) {
    size_t end = i < b.n ? (size_t)b.ends[i] : len;
    if (end <= at_off) continue;
    double now = ts_clock_ms();
    if (at) {
      double due = t0 + (i < b.n ? (double)at[i] / 1e3 : (b.n ? (double)at[b.n - 1] / 1e3 : 0));
      if (due > now) ts_clock_sleep_ms(due - now);
    } else {
      if (next > now) ts_clock_sleep_ms(next - now);
      else if (now - next > REPLAY_SLACK_MS) next = now - REPLAY_SLACK_MS;
      next += interval;
    }
    if (feed(user, buf + at_off, end - at_off)) break; /* the reader stopped */
    at_off = end;
  }
  free(b.ends);
  free(at);
  free(buf);
  return 0;
}

static int feed_tap(void *user, char *buf, size_t len) { return ts_tap_feed(user, buf, len) != 0; }

static int play(void *user, const ts_agent_turn *t, ts_tap *tap, char *why, size_t cap) {
  const ts_replay_model *r = user;
  char path[4096];
  if (find_turn(r, t, path, sizeof path, why, cap)) return -1;
  return ts_replay_play(path, r->rate, NULL, feed_tap, tap, t->cancel, why, cap);
}

ts_agent_model ts_replay_model_backend(ts_replay_model *r) {
  ts_agent_model m = {has_turn, play, r};
  return m;
}
