/*
 * clock.h: the process's monotonic clock and a sleep, for latencies, pacing and
 * timeouts (never for wall-clock time: it does not jump when the system clock is set).
 */
#ifndef TS_CLOCK_H
#define TS_CLOCK_H

/* Milliseconds on CLOCK_MONOTONIC (an arbitrary origin; only differences mean anything). */
double ts_clock_ms(void);

/* Sleeps `ms` milliseconds (nothing for ms <= 0); a signal may end it early, which is
 * what callers that watch a cancel flag want. */
void ts_clock_sleep_ms(double ms);

#endif /* TS_CLOCK_H */
