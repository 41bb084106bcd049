/*
 * gw_metrics.c: see gw_metrics.h. Every counter has its HELP and TYPE lines; the
 * histogram's buckets are cumulative, as the format wants.
 */
#include "net/gw_metrics.h"

#include <stdarg.h>
#include <stdio.h>

#include "base/error.h"

/* The upstream latency histogram's bounds, in seconds (time to the response headers). */
static const double lat_bounds[TS_GW_LAT_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025,
                                                     0.05,  0.1,    0.25,  0.5,  1,
                                                     2.5,   5,      10,    30};

void ts_gw_metrics_latency(ts_gw_metrics *m, double lat) {
  size_t b = 0;
  while (b < TS_GW_LAT_BUCKETS && lat > lat_bounds[b]) b++;
  __atomic_store_n(&m->lat_count[b], m->lat_count[b] + 1, __ATOMIC_RELAXED);
  double sum = m->lat_sum + lat;
  __atomic_store(&m->lat_sum, &sum, __ATOMIC_RELAXED);
  __atomic_store_n(&m->lat_n, m->lat_n + 1, __ATOMIC_RELAXED);
}

void ts_gw_metrics_sum(ts_gw_metrics *sum, const ts_gw_metrics *m) {
  /* ts_gw_stats is uint64_t fields only (gw_metrics.h): summed as an array */
  const uint64_t *src = (const uint64_t *)&m->st;
  uint64_t *dst = (uint64_t *)&sum->st;
  for (size_t i = 0; i < sizeof m->st / sizeof(uint64_t); i++)
    dst[i] += __atomic_load_n(&src[i], __ATOMIC_RELAXED);
  for (size_t i = 0; i <= TS_GW_LAT_BUCKETS; i++)
    sum->lat_count[i] += __atomic_load_n(&m->lat_count[i], __ATOMIC_RELAXED);
  double d;
  __atomic_load(&m->lat_sum, &d, __ATOMIC_RELAXED);
  sum->lat_sum += d;
  sum->lat_n += __atomic_load_n(&m->lat_n, __ATOMIC_RELAXED);
}

static void put(ts_buf *b, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > 0) ts_buf_append(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void counter(ts_buf *b, const char *name, const char *type, const char *help,
                    uint64_t v) {
  put(b, "# HELP toolstream_gateway_%s %s\n# TYPE toolstream_gateway_%s %s\n"
         "toolstream_gateway_%s %llu\n",
      name, help, name, type, name, (unsigned long long)v);
}

int ts_gw_metrics_render(const ts_gw_metrics *m, ts_buf *b) {
  const ts_gw_stats *s = &m->st;
  counter(b, "streams_open", "gauge", "Proxied requests in progress.", s->streams_open);
  counter(b, "streams_total", "counter", "Proxied requests started.", s->streams_total);
  counter(b, "requests_total", "counter", "Requests received, built-in endpoints included.",
          s->requests_total);
  put(b, "# HELP toolstream_gateway_bytes_total Body bytes forwarded, by direction.\n"
         "# TYPE toolstream_gateway_bytes_total counter\n"
         "toolstream_gateway_bytes_total{direction=\"upstream\"} %llu\n"
         "toolstream_gateway_bytes_total{direction=\"client\"} %llu\n",
      (unsigned long long)s->bytes_up, (unsigned long long)s->bytes_down);
  counter(b, "events_published_total", "counter", "Thread events published on the bus.",
          s->events_published);
  counter(b, "tap_errors_total", "counter", "tool_call_error and stream_error events of the tap.",
          s->tap_errors);
  counter(b, "upstream_errors_total", "counter",
          "Upstreams unreachable, broken, timed out or answering an error status.",
          s->upstream_errors);
  counter(b, "client_aborts_total", "counter", "Clients that left before the end of the reply.",
          s->client_aborts);
  counter(b, "connections_open", "gauge", "Client connections open.", s->connections_open);
  counter(b, "connections_refused_total", "counter",
          "Client connections refused with 503 (over the connection caps).",
          s->connections_refused);
  counter(b, "requests_refused_total", "counter",
          "Requests refused by the gateway itself (malformed, ambiguous framing, limits).",
          s->requests_refused);
  counter(b, "head_timeouts_total", "counter",
          "Connections closed because a request head did not arrive in time.",
          s->head_timeouts);
  counter(b, "accept_errors_total", "counter",
          "Failed accepts (out of file descriptors); accepting backs off.", s->accept_errors);
  counter(b, "upstream_connections_total", "counter", "Upstream connections opened.",
          s->upstream_connects);
  counter(b, "upstream_reused_total", "counter",
          "Requests sent on a kept-alive upstream connection from the pool.", s->upstream_reused);
  counter(b, "taps_open", "gauge",
          "Replies being tapped now (a tap is made at a reply's first body byte).",
          s->taps_open);
  put(b, "# HELP toolstream_gateway_upstream_latency_seconds Time from the request to the "
         "upstream's response headers.\n"
         "# TYPE toolstream_gateway_upstream_latency_seconds histogram\n");
  uint64_t cum = 0;
  for (size_t i = 0; i < TS_GW_LAT_BUCKETS; i++) {
    cum += m->lat_count[i];
    put(b, "toolstream_gateway_upstream_latency_seconds_bucket{le=\"%g\"} %llu\n", lat_bounds[i],
        (unsigned long long)cum);
  }
  put(b, "toolstream_gateway_upstream_latency_seconds_bucket{le=\"+Inf\"} %llu\n"
         "toolstream_gateway_upstream_latency_seconds_sum %.6f\n"
         "toolstream_gateway_upstream_latency_seconds_count %llu\n",
      (unsigned long long)m->lat_n, m->lat_sum, (unsigned long long)m->lat_n);
  return b->err ? TS_E_NOMEM : 0;
}

int ts_gw_metrics_render_workers(const ts_gw_metrics *w, size_t n, ts_buf *b) {
  put(b, "# HELP toolstream_gateway_worker_connections_open Client connections open, by event "
         "loop (--workers).\n"
         "# TYPE toolstream_gateway_worker_connections_open gauge\n");
  for (size_t i = 0; i < n; i++)
    put(b, "toolstream_gateway_worker_connections_open{worker=\"%zu\"} %llu\n", i,
        (unsigned long long)w[i].st.connections_open);
  return b->err ? TS_E_NOMEM : 0;
}
