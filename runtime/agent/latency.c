/*
 * latency.c: latency figures from event timestamps (latency.h).
 *
 * A request is built from observations, one per event, in the order they happened. The
 * rules are few because the events already say what happened: the tap fires
 * tool_call_started at the name for a tool without a progress argument and at the label
 * for one with it, tool_call_ready when the arguments close (stream/tap.h). So a call
 * keeps the first time of each kind and its offsets, and every metric is a difference of
 * two of them, computed only when both are known: a missing figure stays NAN, so that a
 * median is never pulled down by zeros that mean "not measured". (The old summary line of
 * `run` divided a sum over the ready calls by every call, labelled or not; lead_of below
 * counts the labelled calls only.)
 *
 * Stored events are read with the one top-level member walker (stream/json_members.h):
 * an event's `arguments` may be megabytes, and only their length is wanted.
 *
 * Statistics: quantiles interpolate linearly between closest ranks (the usual "type 7"
 * definition, which numpy and R use by default), so p50 of an even count is the mean of
 * the two middle values. The bootstrap draws from splitmix64 seeded by the caller, so
 * `--compare` prints the same interval every time it is run on the same files.
 */
#include "agent/latency.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "events/event.h"
#include "stream/json_members.h"

/* ---- the metric table ------------------------------------------------------------------ */

static const struct {
  const char *key, *unit, *what;
  int per_call;
} metrics[] = {
#define TS_LAT_X(id, key, per_call, unit, what) {key, unit, what, per_call},
    TS_LAT_METRICS(TS_LAT_X)
#undef TS_LAT_X
};

const char *ts_lat_metric_key(int m) { return m >= 0 && m < TS_LAT_NMETRICS ? metrics[m].key : NULL; }
const char *ts_lat_metric_unit(int m) { return m >= 0 && m < TS_LAT_NMETRICS ? metrics[m].unit : NULL; }
const char *ts_lat_metric_what(int m) { return m >= 0 && m < TS_LAT_NMETRICS ? metrics[m].what : NULL; }
int ts_lat_metric_per_call(int m) { return m >= 0 && m < TS_LAT_NMETRICS && metrics[m].per_call; }

int ts_lat_metric_find(const char *key, size_t len) {
  for (int m = 0; m < TS_LAT_NMETRICS; m++)
    if (strlen(metrics[m].key) == len && !memcmp(metrics[m].key, key, len)) return m;
  return -1;
}

/* b - a in ms, when both are known and in order (a clock read twice never goes back, but a
 * stored event may have been edited). */
static double span_ms(uint64_t a, uint64_t b) {
  if (!a || !b || b < a) return NAN;
  return (double)(b - a) / 1e3;
}

double ts_lat_request_value(const ts_lat_request *r, int m) {
  switch (m) {
    case TS_LAT_TTFB: return span_ms(r->sent_us, r->first_byte_us);
    case TS_LAT_FIRST_TOKEN: return span_ms(r->sent_us, r->first_token_us);
    case TS_LAT_TOTAL: return span_ms(r->sent_us, r->end_us ? r->end_us : r->stream_end_us);
    case TS_LAT_OUT_TPS: {
      if (!r->has_tokens) return NAN;
      double s = span_ms(r->first_token_us, r->stream_end_us ? r->stream_end_us : r->end_us) / 1e3;
      return s > 0 ? (double)r->out_tokens / s : NAN;
    }
    default: return NAN;
  }
}

double ts_lat_call_value(const ts_lat_request *r, const ts_lat_call *c, int m) {
  switch (m) {
    case TS_LAT_NAME: return span_ms(r->sent_us, c->name_us);
    case TS_LAT_LABEL: return c->has_label ? span_ms(r->sent_us, c->label_us) : NAN;
    case TS_LAT_ARGS: return c->ready ? span_ms(r->sent_us, c->args_us) : NAN;
    case TS_LAT_RESULT: return span_ms(r->sent_us, c->result_us);
    case TS_LAT_LEAD_MS: return c->has_label && c->ready ? span_ms(c->label_us, c->args_us) : NAN;
    case TS_LAT_LEAD_BYTES:
      return c->has_label && c->ready && c->label_counted && c->arg_seen >= c->label_arg
                 ? (double)(c->arg_seen - c->label_arg)
                 : NAN;
    case TS_LAT_LEAD_STREAM_BYTES:
      return c->has_label && c->ready && c->args_off >= c->label_off
                 ? (double)(c->args_off - c->label_off)
                 : NAN;
    case TS_LAT_ARG_BPS: {
      if (!c->ready) return NAN;
      double s = span_ms(c->name_us ? c->name_us : c->first_us, c->args_us) / 1e3;
      return s > 0 ? (double)c->arg_bytes / s : NAN;
    }
    default: return NAN;
  }
}

/* ---- building requests ----------------------------------------------------------------- */

void ts_lat_request_init(ts_lat_request *r, const char *source) {
  memset(r, 0, sizeof *r);
  if (source) snprintf(r->source, sizeof r->source, "%s", source);
}

void ts_lat_request_fini(ts_lat_request *r) {
  free(r->calls);
  r->calls = NULL;
  r->ncalls = r->cap = 0;
}

static void keep(char *dst, size_t cap, ts_view v) {
  size_t n = v.len < cap - 1 ? v.len : cap - 1;
  if (n) memcpy(dst, v.p, n);
  dst[n] = '\0';
}

/* The call at `index`, made when new; NULL when out of memory or past the limit. */
static ts_lat_call *call_at(ts_lat_request *r, uint32_t index, ts_view id, ts_view tool,
                            int *oom) {
  for (size_t i = 0; i < r->ncalls; i++)
    if (r->calls[i].index == index) return &r->calls[i];
  if (r->ncalls == TS_LAT_MAX_CALLS) {
    r->dropped_calls++;
    return NULL;
  }
  if (r->ncalls == r->cap) {
    size_t nc = r->cap ? r->cap * 2 : 4;
    ts_lat_call *p = realloc(r->calls, nc * sizeof *p);
    if (!p) {
      *oom = 1;
      return NULL;
    }
    r->calls = p;
    r->cap = nc;
  }
  ts_lat_call *c = &r->calls[r->ncalls++];
  memset(c, 0, sizeof *c);
  c->index = index;
  keep(c->call_id, sizeof c->call_id, id);
  keep(c->tool, sizeof c->tool, tool);
  return c;
}

static void first_of(uint64_t *slot, uint64_t t) {
  if (t && !*slot) *slot = t;
}

static void note_error(ts_lat_request *r, ts_view msg) {
  r->errors++;
  if (!r->error[0]) keep(r->error, sizeof r->error, msg.len ? msg : (ts_view){"error", 5});
}

void ts_lat_request_fail(ts_lat_request *r, const char *message) {
  note_error(r, (ts_view){message ? message : "", message ? strlen(message) : 0});
}

int ts_lat_usage_tokens(ts_view usage, uint64_t *out) {
  static const char *const names[] = {"completion_tokens", "output_tokens", "eval_count",
                                      "outputTokens", "candidatesTokenCount"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    ts_json_members it;
    ts_json_members_init(&it, usage.p, usage.len);
    ts_view key, val;
    while (usage.len && ts_json_members_next(&it, &key, &val) == 1) {
      if (key.len != strlen(names[k]) || memcmp(key.p, names[k], key.len)) continue;
      uint64_t v = 0;
      size_t i = 0;
      for (; i < val.len && val.p[i] >= '0' && val.p[i] <= '9' && v < UINT64_MAX / 10; i++)
        v = v * 10 + (uint64_t)(val.p[i] - '0');
      if (i && i == val.len) {
        *out = v;
        return 1;
      }
    }
  }
  return 0;
}

int ts_lat_request_name(ts_lat_request *r, uint32_t index, ts_view call_id, ts_view tool,
                        uint64_t t_us) {
  int oom = 0;
  ts_lat_call *c = call_at(r, index, call_id, tool, &oom);
  if (oom) return TS_E_NOMEM;
  first_of(&r->first_token_us, t_us);
  first_of(&r->first_event_us, t_us);
  if (c) {
    first_of(&c->name_us, t_us);
    first_of(&c->first_us, t_us);
  }
  return TS_E_OK;
}

int ts_lat_request_observe(ts_lat_request *r, const ts_lat_obs *o) {
  ts_lat_call *c = NULL;
  if (o->is_call) {
    int oom = 0;
    c = call_at(r, o->index, o->call_id, o->tool, &oom);
    if (oom) return TS_E_NOMEM;
  }
  uint64_t t = o->t_us;
  first_of(&r->first_event_us, t);
  if (t && t > r->last_event_us) r->last_event_us = t;
  if (c) first_of(&c->first_us, t);
  switch (o->type) {
    case TS_EVENT_TOOL_CALL_STARTED:
      if (!c) break;
      if (o->has_progress) {
        c->has_label = 1;
        c->label_pending = 1;
        first_of(&c->label_us, t);
        c->label_off = o->offset;
      } else {
        first_of(&c->name_us, t);
        first_of(&r->first_token_us, t);
      }
      break;
    case TS_EVENT_TOOL_CALL_DELTA:
      if (c) {
        c->arg_seen += o->delta_bytes;
        if (c->label_pending) c->label_arg = c->arg_seen, c->label_pending = 0, c->label_counted = 1;
      }
      first_of(&r->first_token_us, t);
      break;
    case TS_EVENT_TEXT_DELTA: first_of(&r->first_token_us, t); break;
    case TS_EVENT_TOOL_CALL_READY:
      if (!c) break;
      c->ready = 1;
      first_of(&c->args_us, t);
      c->args_off = o->offset;
      c->arg_bytes = o->arg_bytes;
      break;
    case TS_EVENT_TOOL_CALL_ERROR:
      if (c) c->error = 1;
      note_error(r, o->error);
      break;
    case TS_EVENT_TOOL_RESULT:
      if (c) first_of(&c->result_us, t);
      break;
    case TS_EVENT_TURN_FINISHED:
      first_of(&r->stream_end_us, t);
      if (ts_lat_usage_tokens(o->usage, &r->out_tokens)) r->has_tokens = 1;
      break;
    case TS_EVENT_STREAM_ERROR:
      first_of(&r->stream_end_us, t);
      note_error(r, o->error);
      break;
    default: break;
  }
  return TS_E_OK;
}

/* ---- sets and stored events ------------------------------------------------------------ */

int ts_lat_set_add(ts_lat_set *s, const char *source, ts_lat_request **out) {
  if (s->n >= TS_LAT_MAX_REQUESTS) return TS_E_LIMIT;
  if (s->n == s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 16;
    ts_lat_request *p = realloc(s->v, nc * sizeof *p);
    if (!p) return TS_E_NOMEM;
    s->v = p;
    s->cap = nc;
  }
  ts_lat_request *r = &s->v[s->n];
  ts_lat_request_init(r, source);
  r->seq = (uint32_t)s->n++;
  *out = r;
  return TS_E_OK;
}

void ts_lat_set_fini(ts_lat_set *s) {
  for (size_t i = 0; i < s->n; i++) ts_lat_request_fini(&s->v[i]);
  free(s->v);
  memset(s, 0, sizeof *s);
}

void ts_lat_reader_init(ts_lat_reader *rd, ts_lat_set *set, const char *thread) {
  memset(rd, 0, sizeof *rd);
  rd->set = set;
  rd->first = set->n;
  snprintf(rd->thread, sizeof rd->thread, "%s", thread ? thread : "");
}

/* The request of this thread's turn `turn`, made when new (with the send time of turn N > 1
 * taken as the previous turn's last event: the loop sends the next request as soon as the
 * turn's last result is committed; docs/bench.md). */
static int turn_request(ts_lat_reader *rd, uint32_t turn, ts_lat_request **out) {
  ts_lat_set *s = rd->set;
  for (size_t i = rd->first; i < s->n; i++)
    if (s->v[i].turn == turn) {
      *out = &s->v[i];
      return TS_E_OK;
    }
  uint64_t prev_last = 0;
  for (size_t i = rd->first; i < s->n; i++)
    if (s->v[i].turn + 1 == turn) prev_last = s->v[i].last_event_us;
  int rc = ts_lat_set_add(s, rd->thread, out);
  if (rc) return rc;
  (*out)->turn = turn;
  (*out)->sent_us = prev_last;
  return TS_E_OK;
}

static uint64_t raw_u64(ts_view v) {
  uint64_t x = 0;
  for (size_t i = 0; i < v.len && v.p[i] >= '0' && v.p[i] <= '9' && x < UINT64_MAX / 10; i++)
    x = x * 10 + (uint64_t)(v.p[i] - '0');
  return x;
}

static ts_view unquote(ts_view v) {
  if (v.len >= 2 && v.p[0] == '"') return (ts_view){v.p + 1, v.len - 2};
  return v;
}

/* The length of a JSON string's text once decoded (v without its quotes): an escape is one
 * byte, a \\u escape the UTF-8 length of its code point (a surrogate pair: 4 for both). */
static uint64_t decoded_len(ts_view v) {
  uint64_t n = 0;
  for (size_t i = 0; i < v.len; i++) {
    if (v.p[i] != '\\' || i + 1 >= v.len) {
      n++;
      continue;
    }
    if (v.p[i + 1] != 'u' || i + 5 >= v.len) {
      n++, i++;
      continue;
    }
    unsigned cp = (unsigned)strtoul((char[5]){v.p[i + 2], v.p[i + 3], v.p[i + 4], v.p[i + 5], 0},
                                    NULL, 16);
    i += 5;
    n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : (cp >= 0xD800 && cp < 0xDC00) ? 4
       : (cp >= 0xDC00 && cp < 0xE000) ? 0 : 3;
  }
  return n;
}

static int type_of(ts_view name) {
  for (int t = TS_EVENT_TOOL_CALL_STARTED; t <= TS_EVENT_VARIABLE_REQUIRED; t++) {
    const char *n = ts_event_type_name(t);
    if (strlen(n) == name.len && !memcmp(n, name.p, name.len)) return t;
  }
  return 0;
}

int ts_lat_reader_event(ts_lat_reader *rd, const char *json, size_t len) {
  ts_lat_obs o;
  memset(&o, 0, sizeof o);
  ts_json_members it;
  ts_json_members_init(&it, json, len);
  ts_view k, v;
  int rc, has_turn = 0;
  uint32_t turn = 0;
  while ((rc = ts_json_members_next(&it, &k, &v)) == 1) {
#define IS(lit) (k.len == sizeof lit - 1 && !memcmp(k.p, lit, k.len))
    if (IS("type")) o.type = type_of(unquote(v));
    else if (IS("mono_us")) o.t_us = raw_u64(v);
    else if (IS("offset")) o.offset = raw_u64(v);
    else if (IS("call_id")) o.call_id = unquote(v), o.is_call = 1;
    else if (IS("tool")) o.tool = unquote(v);
    else if (IS("index")) o.index = (uint32_t)raw_u64(v);
    else if (IS("turn")) turn = (uint32_t)raw_u64(v), has_turn = 1;
    else if (IS("progress")) o.has_progress = 1;
    else if (IS("arguments")) o.arg_bytes = v.len;
    else if (IS("delta")) o.delta_bytes = decoded_len(unquote(v));
    else if (IS("usage")) o.usage = v;
    else if (IS("error")) o.error = unquote(v);
#undef IS
  }
  if (rc < 0 || !o.type) return TS_E_INVAL;
  int stream_event = o.type <= TS_EVENT_STREAM_ERROR;
  if (o.is_call && has_turn && turn) {
    /* a call event names its turn; one of the stream moves the streamed turn on */
    if (stream_event && turn > rd->stream_turn) rd->stream_turn = turn, rd->after_end = 0;
  } else {
    if (!rd->stream_turn || rd->after_end) rd->stream_turn++, rd->after_end = 0;
    turn = rd->stream_turn;
  }
  ts_lat_request *r;
  if ((rc = turn_request(rd, turn, &r))) return rc;
  if ((rc = ts_lat_request_observe(r, &o))) return rc;
  if (o.type == TS_EVENT_TURN_FINISHED || o.type == TS_EVENT_STREAM_ERROR) rd->after_end = 1;
  return TS_E_OK;
}

/* ---- statistics ------------------------------------------------------------------------ */

double ts_lat_quantile(const double *sorted, size_t n, double q) {
  if (!n) return NAN;
  if (q <= 0) return sorted[0];
  if (q >= 1) return sorted[n - 1];
  double pos = q * (double)(n - 1);
  size_t lo = (size_t)pos;
  double frac = pos - (double)lo;
  if (lo + 1 >= n) return sorted[n - 1];
  return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * frac;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void ts_lat_sort(double *v, size_t *n) {
  size_t k = 0;
  for (size_t i = 0; i < *n; i++)
    if (!isnan(v[i])) v[k++] = v[i];
  if (k) qsort(v, k, sizeof *v, cmp_double); /* v may be NULL when there is nothing */
  *n = k;
}

void ts_lat_summarize(double *v, size_t n, ts_lat_summary *out) {
  ts_lat_sort(v, &n);
  out->n = n;
  out->p50 = ts_lat_quantile(v, n, 0.50);
  out->p90 = ts_lat_quantile(v, n, 0.90);
  out->p99 = ts_lat_quantile(v, n, 0.99);
  out->max = n ? v[n - 1] : NAN;
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += v[i];
  out->mean = n ? sum / (double)n : NAN;
}

double *ts_lat_values(const ts_lat_set *s, int m, size_t *n) {
  size_t total = 0;
  for (size_t i = 0; i < s->n; i++) total += ts_lat_metric_per_call(m) ? s->v[i].ncalls : 1;
  *n = 0;
  if (!total) return NULL;
  double *v = malloc(total * sizeof *v);
  if (!v) return NULL;
  for (size_t i = 0; i < s->n; i++) {
    const ts_lat_request *r = &s->v[i];
    if (!ts_lat_metric_per_call(m)) {
      v[(*n)++] = ts_lat_request_value(r, m);
      continue;
    }
    for (size_t j = 0; j < r->ncalls; j++) v[(*n)++] = ts_lat_call_value(r, &r->calls[j], m);
  }
  return v;
}

/* splitmix64: small, fast, and the same sequence on every machine. */
static uint64_t next_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The median of a resample (with replacement) of sorted[0..n), using tmp[0..n). */
static double resample_median(const double *src, size_t n, double *tmp, uint64_t *state) {
  for (size_t i = 0; i < n; i++) tmp[i] = src[next_rand(state) % n];
  qsort(tmp, n, sizeof *tmp, cmp_double);
  return ts_lat_quantile(tmp, n, 0.5);
}

int ts_lat_bootstrap(double *a, size_t na, double *b, size_t nb, unsigned iters, uint64_t seed,
                     double level, ts_lat_diff *out) {
  memset(out, 0, sizeof *out);
  ts_lat_sort(a, &na);
  ts_lat_sort(b, &nb);
  out->na = na;
  out->nb = nb;
  out->a_median = ts_lat_quantile(a, na, 0.5);
  out->b_median = ts_lat_quantile(b, nb, 0.5);
  out->diff = out->b_median - out->a_median;
  out->lo = out->hi = NAN;
  if (!na || !nb || !iters) return TS_E_INVAL;
  double *tmp = malloc((na > nb ? na : nb) * sizeof *tmp);
  double *diffs = malloc(iters * sizeof *diffs);
  if (!tmp || !diffs) {
    free(tmp);
    free(diffs);
    return TS_E_NOMEM;
  }
  uint64_t state = seed;
  for (unsigned i = 0; i < iters; i++) {
    double ma = resample_median(a, na, tmp, &state);
    double mb = resample_median(b, nb, tmp, &state);
    diffs[i] = mb - ma;
  }
  qsort(diffs, iters, sizeof *diffs, cmp_double);
  double tail = (1 - level) / 2;
  out->lo = ts_lat_quantile(diffs, iters, tail);
  out->hi = ts_lat_quantile(diffs, iters, 1 - tail);
  out->significant = out->lo > 0 || out->hi < 0;
  free(tmp);
  free(diffs);
  return TS_E_OK;
}

int ts_lat_lead_of(const ts_lat_set *s, ts_lat_lead *out) {
  memset(out, 0, sizeof *out);
  out->ms_p50 = out->ms_p90 = out->bytes_p50 = out->bytes_p90 = NAN;
  out->stream_p50 = out->stream_p90 = NAN;
  size_t total = 0;
  for (size_t i = 0; i < s->n; i++) total += s->v[i].ncalls;
  out->calls = total;
  if (!total) return TS_E_OK;
  double *v = malloc(3 * total * sizeof *v);
  if (!v) return TS_E_NOMEM;
  double *ms = v, *bytes = v + total, *stream = v + 2 * total;
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++)
    for (size_t j = 0; j < s->v[i].ncalls; j++) {
      const ts_lat_call *c = &s->v[i].calls[j];
      if (!c->has_label || !c->ready) continue;
      ms[n] = ts_lat_call_value(&s->v[i], c, TS_LAT_LEAD_MS);
      bytes[n] = ts_lat_call_value(&s->v[i], c, TS_LAT_LEAD_BYTES);
      stream[n++] = ts_lat_call_value(&s->v[i], c, TS_LAT_LEAD_STREAM_BYTES);
    }
  out->labelled = n;
  size_t nm = n, nb = n, ns = n;
  ts_lat_sort(ms, &nm);
  ts_lat_sort(bytes, &nb);
  ts_lat_sort(stream, &ns);
  out->ms_p50 = ts_lat_quantile(ms, nm, 0.5);
  out->ms_p90 = ts_lat_quantile(ms, nm, 0.9);
  out->bytes_p50 = ts_lat_quantile(bytes, nb, 0.5);
  out->bytes_p90 = ts_lat_quantile(bytes, nb, 0.9);
  out->stream_p50 = ts_lat_quantile(stream, ns, 0.5);
  out->stream_p90 = ts_lat_quantile(stream, ns, 0.9);
  free(v);
  return TS_E_OK;
}
