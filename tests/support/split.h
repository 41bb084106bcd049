/*
 * split.h: the one split-invariance harness (STYLE.md convention 12).
 *
 * An incremental component (the SSE framer, the tokenizer, an adapter, the tap) must
 * report the same things, errors and their offsets included, however its input is cut
 * into reads. A test writes one *runner*: it creates the component, feeds it every read
 * the harness hands out, finishes it, and renders everything it reported into text
 * (one line per event or error, offsets included). The harness calls the runner once
 * per way of cutting the input and compares the renderings:
 *
 *   - whole (one read);
 *   - byte by byte, and in reads of every size 2..31 (sizes not below the input's
 *     length are skipped: they are the whole run again);
 *   - ts_split_check_cuts: two reads cut at every position 0..len;
 *   - ts_split_check_random: reads of random sizes 1..40 from a given seed.
 *
 * Every read is copied into its own exact-size heap block that is freed when the next
 * read is asked for (or the feed ends), so ASan catches a component reading past a
 * read or keeping a pointer into one. A difference fails the check test with the case
 * name, the cut and both renderings; `want` (when not NULL) must equal the whole run's.
 */
#ifndef TS_TEST_SPLIT_H
#define TS_TEST_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "support/sb.h"

typedef struct ts_split ts_split;

/* The next read of the input: 1 with *p and *n set (n >= 1), or 0 when the input is all
 * handed out. The block is the runner's until the next call, which frees it: a component
 * that decodes in place may write to it. */
int ts_split_next(ts_split *s, char **p, size_t *n);

/* Bytes handed out so far (the offset just past the current read). */
size_t ts_split_offset(const ts_split *s);

/* The fixed read size of this run, 0 for the whole run and for cuts and random reads:
 * for a runner that reports what depends on the reads (and says so in its contract). */
size_t ts_split_size(const ts_split *s);

/* The runner: feeds the component every read of `feed` and appends its rendering of
 * what the component reported to `out`. */
typedef void (*ts_split_run)(void *user, ts_split *feed, sb *out);

/* Options (all zero: every size 1..31, compare renderings as they are). */
typedef struct {
  const size_t *sizes; /* read sizes to try instead of 1..31 */
  size_t nsizes;
  /* When set, runs other than the whole one are compared after both renderings went
   * through this (e.g. to drop lines the contract lets depend on the reads). */
  void (*normalize)(void *user, const char *rendering, sb *out);
} ts_split_opts;

/* Whole, byte by byte, every size 2..31: every rendering equals the whole run's, and the
 * whole run's equals `want` when given. `ctx` names the case in failure messages. */
void ts_split_check(const char *ctx, const char *in, size_t len, ts_split_run run, void *user,
                    const char *want);
void ts_split_check_opts(const char *ctx, const char *in, size_t len, ts_split_run run,
                         void *user, const char *want, const ts_split_opts *opts);

/* Two reads, cut at every position 0..len (a cut at 0 or len is one read); opts: only
 * `normalize` applies. */
void ts_split_check_cuts(const char *ctx, const char *in, size_t len, ts_split_run run,
                         void *user, const char *want);
void ts_split_check_cuts_opts(const char *ctx, const char *in, size_t len, ts_split_run run,
                              void *user, const char *want, const ts_split_opts *opts);

/* `rounds` runs with reads of random sizes 1..40 (xorshift from `seed`). */
void ts_split_check_random(const char *ctx, const char *in, size_t len, ts_split_run run,
                           void *user, const char *want, uint64_t seed, int rounds);

/* One run, its rendering appended to `out`: for tests that look at one reading. In reads
 * of `size` bytes (0: whole); in two reads cut at `cut`; in random reads from `seed`. */
void ts_split_run_once(const char *in, size_t len, size_t size, ts_split_run run, void *user,
                       sb *out);
void ts_split_run_cut(const char *in, size_t len, size_t cut, ts_split_run run, void *user,
                      sb *out);
void ts_split_run_random(const char *in, size_t len, uint64_t seed, ts_split_run run, void *user,
                         sb *out);

#endif
