/*
 * split.c: see split.h. A ts_split is a read plan (fixed size, one cut, or random sizes)
 * plus a cursor over the input; the block of the current read is the only copy the
 * component ever sees.
 */
#include "support/split.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PLAN_SIZE, PLAN_CUT, PLAN_RANDOM };

struct ts_split {
  const char *in;
  size_t len, at;
  int plan;
  size_t size; /* PLAN_SIZE: bytes per read (0: whole) */
  size_t cut;  /* PLAN_CUT: the first read ends here */
  uint64_t rng;
  char *block; /* the current read's copy */
};

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

int ts_split_next(ts_split *s, char **p, size_t *n) {
  free(s->block);
  s->block = NULL;
  size_t left = s->len - s->at;
  if (!left) return 0;
  size_t k;
  switch (s->plan) {
    case PLAN_CUT:
      k = s->at < s->cut ? s->cut - s->at : left;
      break;
    case PLAN_RANDOM:
      k = (size_t)(xorshift(&s->rng) % 40) + 1;
      break;
    default:
      k = s->size ? s->size : left;
  }
  if (k > left) k = left;
  s->block = malloc(k);
  if (!s->block) abort();
  memcpy(s->block, s->in + s->at, k);
  s->at += k;
  *p = s->block;
  *n = k;
  return 1;
}

size_t ts_split_offset(const ts_split *s) { return s->at; }

size_t ts_split_size(const ts_split *s) { return s->plan == PLAN_SIZE ? s->size : 0; }

static void run_plan(ts_split *s, ts_split_run run, void *user, sb *out) {
  sb_puts(out, "");
  run(user, s, out);
  free(s->block); /* a runner that stopped early (the component refused more input) */
  s->block = NULL;
}

void ts_split_run_once(const char *in, size_t len, size_t size, ts_split_run run, void *user,
                       sb *out) {
  ts_split s = {in, len, 0, PLAN_SIZE, size, 0, 0, NULL};
  run_plan(&s, run, user, out);
}

void ts_split_run_cut(const char *in, size_t len, size_t cut, ts_split_run run, void *user,
                      sb *out) {
  ts_split s = {in, len, 0, PLAN_CUT, 0, cut, 0, NULL};
  run_plan(&s, run, user, out);
}

void ts_split_run_random(const char *in, size_t len, uint64_t seed, ts_split_run run, void *user,
                         sb *out) {
  ts_split s = {in, len, 0, PLAN_RANDOM, 0, 0, seed ? seed : 1, NULL};
  run_plan(&s, run, user, out);
}

static void compare(const char *ctx, const char *how, const char *whole, const char *got,
                    const ts_split_opts *o, void *user) {
  if (o && o->normalize) {
    sb a = {0}, b = {0};
    o->normalize(user, whole, &a);
    o->normalize(user, got, &b);
    int same = !strcmp(sb_str(&a), sb_str(&b));
    if (!same)
      ck_abort_msg("%s: %s differs from the whole feed\n--- whole\n%s--- %s\n%s", ctx, how,
                   sb_clip(sb_str(&a)), how, sb_clip(sb_str(&b)));
    sb_free(&a);
    sb_free(&b);
    return;
  }
  if (strcmp(whole, got))
    ck_abort_msg("%s: %s differs from the whole feed\n--- whole\n%s--- %s\n%s", ctx, how,
                 sb_clip(whole), how, sb_clip(got));
}

static void whole_run(const char *ctx, const char *in, size_t len, ts_split_run run, void *user,
                      const char *want, sb *whole) {
  ts_split_run_once(in, len, 0, run, user, whole);
  if (want && strcmp(sb_str(whole), want))
    ck_abort_msg("%s, fed whole:\n--- want\n%s--- got\n%s", ctx, sb_clip(want),
                 sb_clip(sb_str(whole)));
}

void ts_split_check_opts(const char *ctx, const char *in, size_t len, ts_split_run run,
                         void *user, const char *want, const ts_split_opts *opts) {
  sb whole = {0};
  whole_run(ctx, in, len, run, user, want, &whole);
  size_t n = opts && opts->sizes ? opts->nsizes : 31;
  for (size_t i = 0; i < n; i++) {
    size_t size = opts && opts->sizes ? opts->sizes[i] : i + 1;
    if (!size || (size >= len && len)) continue;
    sb got = {0};
    ts_split_run_once(in, len, size, run, user, &got);
    char how[64];
    snprintf(how, sizeof how, size == 1 ? "byte by byte" : "reads of %zu", size);
    compare(ctx, how, sb_str(&whole), sb_str(&got), opts, user);
    sb_free(&got);
  }
  sb_free(&whole);
}

void ts_split_check(const char *ctx, const char *in, size_t len, ts_split_run run, void *user,
                    const char *want) {
  ts_split_check_opts(ctx, in, len, run, user, want, NULL);
}

void ts_split_check_cuts(const char *ctx, const char *in, size_t len, ts_split_run run,
                         void *user, const char *want) {
  ts_split_check_cuts_opts(ctx, in, len, run, user, want, NULL);
}

void ts_split_check_cuts_opts(const char *ctx, const char *in, size_t len, ts_split_run run,
                              void *user, const char *want, const ts_split_opts *opts) {
  sb whole = {0};
  whole_run(ctx, in, len, run, user, want, &whole);
  for (size_t cut = 0; cut <= len; cut++) {
    sb got = {0};
    ts_split_run_cut(in, len, cut, run, user, &got);
    char how[64];
    snprintf(how, sizeof how, "cut at %zu", cut);
    compare(ctx, how, sb_str(&whole), sb_str(&got), opts, user);
    sb_free(&got);
  }
  sb_free(&whole);
}

void ts_split_check_random(const char *ctx, const char *in, size_t len, ts_split_run run,
                           void *user, const char *want, uint64_t seed, int rounds) {
  sb whole = {0};
  whole_run(ctx, in, len, run, user, want, &whole);
  uint64_t rng = seed ? seed : 0x9E3779B97F4A7C15ull;
  for (int r = 0; r < rounds; r++) {
    sb got = {0};
    ts_split_run_random(in, len, rng + (uint64_t)r * 0x2545F4914F6CDD1Dull, run, user, &got);
    char how[64];
    snprintf(how, sizeof how, "random reads (round %d)", r);
    compare(ctx, how, sb_str(&whole), sb_str(&got), NULL, user);
    sb_free(&got);
  }
  sb_free(&whole);
}
