/*
 * clock.h: the process's monotonic clock and a sleep, for latencies, pacing and
 * timeouts (never for wall-clock time: it does not jump when the system clock is set).
 */
#ifndef TS_CLOCK_H
#define TS_CLOCK_H

#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC (an arbitrary origin; only differences mean anything). */
double ts_clock_ms(void);

/* Microseconds on CLOCK_MONOTONIC: since boot, the same clock for every process on the
 * machine (so two processes' stamps can be subtracted), never set back. */
uint64_t ts_clock_mono_us(void);

/* Microseconds since the Unix epoch on CLOCK_REALTIME: wall-clock time, for people and
 * for joining with other systems' logs; it may jump when the system clock is set. */
uint64_t ts_clock_wall_us(void);

/* Sleeps `ms` milliseconds (nothing for ms <= 0); a signal may end it early, which is
 * what callers that watch a cancel flag want. */
void ts_clock_sleep_ms(double ms);

#endif /* TS_CLOCK_H */
