/*
 * clock.c: see clock.h.
 */
#include "base/clock.h"

#include <time.h>

double ts_clock_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t us_of(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t ts_clock_mono_us(void) { return us_of(CLOCK_MONOTONIC); }
uint64_t ts_clock_wall_us(void) { return us_of(CLOCK_REALTIME); }

void ts_clock_sleep_ms(double ms) {
  if (ms <= 0) return;
  time_t s = (time_t)(ms / 1e3);
  struct timespec ts = {s, (long)((ms - (double)s * 1e3) * 1e6)};
  nanosleep(&ts, NULL);
}
