/*
 * gw_metrics.h: the gateway's counters and its upstream latency histogram, and their
 * rendering in the Prometheus text format (version 0.0.4) for GET /metrics.
 *
 * Pure bookkeeping: the gateway bumps the counters where things happen; rendering
 * writes into a ts_buf and does no I/O. The metric names are documented in
 * docs/gateway.md; they are an interface (dashboards read them): rename none.
 */
#ifndef TS_NET_GW_METRICS_H
#define TS_NET_GW_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"

/* uint64_t fields only (ts_gw_metrics_sum adds them as an array). */
typedef struct {
  uint64_t streams_open, streams_total, requests_total;
  uint64_t bytes_up, bytes_down; /* request bodies sent up; response bodies sent down */
  uint64_t events_published, tap_errors, upstream_errors, client_aborts;
  uint64_t connections_open;    /* client connections now */
  uint64_t connections_refused; /* over --max-connections or --max-per-client: 503 */
  uint64_t requests_refused;    /* malformed, ambiguous or over a limit: 4xx from us */
  uint64_t head_timeouts;       /* request heads not complete within the deadline */
  uint64_t accept_errors;       /* accept() failures (the fd limit) */
  uint64_t upstream_connects;   /* upstream connections opened */
  uint64_t upstream_reused;     /* requests sent on a kept-alive upstream connection */
  uint64_t taps_open;           /* replies being tapped now (a tap exists from the first
                                 * body byte of a tapped reply to its end) */
} ts_gw_stats;

/* The upstream latency histogram's bucket count (bounds in gw_metrics.c, in seconds:
 * 1 ms .. 30 s); one more bucket holds +Inf. */
#define TS_GW_LAT_BUCKETS 14

typedef struct {
  ts_gw_stats st;
  uint64_t lat_count[TS_GW_LAT_BUCKETS + 1];
  double lat_sum;
  uint64_t lat_n;
} ts_gw_metrics;

/* Threads. A ts_gw_metrics has one writer, the event loop (gateway worker) that owns it;
 * other threads read it only through ts_gw_metrics_sum. The writer changes a field with
 * TS_GW_STAT_ADD (a relaxed atomic store of its own plain read: no lock, no bus-locked
 * add, and a concurrent reader sees the old or the new value, never a torn one). */
#define TS_GW_STAT_ADD(m, field, n) \
  __atomic_store_n(&(m)->st.field, (m)->st.field + (uint64_t)(n), __ATOMIC_RELAXED)

/* Records one time from a request's start to the upstream's response headers (the
 * writer's call, as above). */
void ts_gw_metrics_latency(ts_gw_metrics *m, double seconds);

/* Adds what m holds to *sum (relaxed atomic loads: safe while m's writer runs on another
 * thread). The gateway's /metrics is the sum over its workers. */
void ts_gw_metrics_sum(ts_gw_metrics *sum, const ts_gw_metrics *m);

/* Appends the whole /metrics document to *out. Returns 0 or TS_E_NOMEM (the buffer's
 * sticky error: the document is then incomplete). */
int ts_gw_metrics_render(const ts_gw_metrics *m, ts_buf *out);

/* Appends toolstream_gateway_worker_connections_open{worker="I"}, the client connections
 * each event loop holds, from w[0 .. n-1], each loop's metrics as ts_gw_metrics_sum copied
 * them (the gateway adds it with several workers). Returns 0 or TS_E_NOMEM, as above. */
int ts_gw_metrics_render_workers(const ts_gw_metrics *w, size_t n, ts_buf *out);

#endif /* TS_NET_GW_METRICS_H */
