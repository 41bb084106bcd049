/*
 * latency_probe.c: two taps over one reply, observed at the time each piece arrived
 * (latency_probe.h).
 *
 * The label tap is the measurement proper: its events are what `run` would emit, so its
 * label and ready times are the ones a user of toolstream sees. The name tap exists for
 * one figure each call, the moment its name was knowable, and for the first token; its
 * own errors and ready events are ignored (they repeat the label tap's). The pieces are
 * copied because each tap decodes JSON strings in place and must not see the other's
 * writes; the copy buffer is the probe's, one slice at a time, so a 50 MB reply costs
 * 64 KiB here.
 */
#include "agent/latency_probe.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

struct ts_lat_probe {
  ts_lat_request *r;
  ts_tap *label, *name;
  uint64_t now;
  int oom;
  char slice[TS_LAT_PROBE_SLICE];
};

static int on_label(void *user, const ts_tap_event *e) {
  ts_lat_probe *p = user;
  if (e->type == TS_TAP_TEXT_DELTA) return 0; /* the name tap's */
  ts_lat_obs o = {.type = e->type, .t_us = p->now, .offset = e->offset, .is_call = e->is_call,
                  .index = e->index, .call_id = e->call_id, .tool = e->tool,
                  .has_progress = e->has_progress, .arg_bytes = e->arguments.len,
                  .delta_bytes = e->delta.len,
                  .usage = e->usage, .error = e->error};
  if (ts_lat_request_observe(p->r, &o)) p->oom = 1;
  return 0;
}

static int on_name(void *user, const ts_tap_event *e) {
  ts_lat_probe *p = user;
  int rc = TS_E_OK;
  if (e->type == TS_TAP_TOOL_CALL_STARTED && e->is_call)
    rc = ts_lat_request_name(p->r, e->index, e->call_id, e->tool, p->now);
  else if (e->type == TS_TAP_TEXT_DELTA) {
    ts_lat_obs o = {.type = e->type, .t_us = p->now, .offset = e->offset};
    rc = ts_lat_request_observe(p->r, &o);
  }
  if (rc) p->oom = 1;
  return 0;
}

int ts_lat_probe_new(const ts_lat_probe_config *cfg, ts_lat_request *r, ts_lat_probe **out) {
  if (!cfg || !r || !out) return TS_E_INVAL;
  ts_lat_probe *p = calloc(1, sizeof *p);
  if (!p) return TS_E_NOMEM;
  p->r = r;
  ts_tap_config a = {.format = cfg->format, .progress_arg = cfg->progress_arg, .deltas = 1,
                     .progress_user = cfg->progress_user, .max_args_bytes = cfg->max_args_bytes};
  ts_tap_config b = {.format = cfg->format, .text = 1, .max_args_bytes = cfg->max_args_bytes};
  int rc = ts_tap_new(&p->label, &a, on_label, p);
  if (!rc) rc = ts_tap_new(&p->name, &b, on_name, p);
  if (rc) {
    ts_lat_probe_free(p);
    return rc;
  }
  *out = p;
  return TS_E_OK;
}

void ts_lat_probe_free(ts_lat_probe *p) {
  if (!p) return;
  ts_tap_free(p->label);
  ts_tap_free(p->name);
  free(p);
}

void ts_lat_probe_sent(ts_lat_probe *p, uint64_t t_us) { p->r->sent_us = t_us; }

int ts_lat_probe_content_type(ts_lat_probe *p, const char *ct, size_t len) {
  int rc = ts_tap_content_type(p->label, ct, len);
  return rc ? rc : ts_tap_content_type(p->name, ct, len);
}

int ts_lat_probe_feed(ts_lat_probe *p, const char *buf, size_t len, uint64_t t_us) {
  if (len && !p->r->first_byte_us) p->r->first_byte_us = t_us;
  p->now = t_us;
  while (len) {
    size_t n = len < sizeof p->slice ? len : sizeof p->slice;
    memcpy(p->slice, buf, n);
    ts_tap_feed(p->label, p->slice, n);
    memcpy(p->slice, buf, n);
    ts_tap_feed(p->name, p->slice, n);
    buf += n;
    len -= n;
  }
  return p->oom ? TS_E_NOMEM : TS_E_OK;
}

int ts_lat_probe_finish(ts_lat_probe *p, uint64_t t_us) {
  p->now = t_us;
  ts_tap_finish(p->label);
  ts_tap_finish(p->name);
  p->r->end_us = t_us;
  return p->oom ? TS_E_NOMEM : TS_E_OK;
}
