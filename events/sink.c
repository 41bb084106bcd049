/*
 * sink.c: the one "number, encode, store, write, publish" of toolstream (sink.h).
 *
 * Before the sink, `tap`, `run` and the gateway each had a copy of this sequence with
 * its own error handling: run ignored a failed write, tap stopped publishing silently
 * after one failure but run never checked, and nothing redacted a provider message that
 * echoed the API key. The policy now lives here, once, and is documented in the header.
 *
 * The mutex covers the whole of one emit. That serialises the destinations too, which
 * is what the bus needs (a thread's events in seq order) and what the store needs (seq
 * above the last stored one); the work under it is one encode, one SQLite insert and
 * one non-blocking send, the same as before the sink, when run held its own mutex.
 *
 * Redaction runs on the encoded line rather than on the event's fields, so that every
 * field (including ones added later) is covered by construction; see redact_json for
 * why matching only at escape-unit starts inside strings keeps the JSON valid.
 */
#define _GNU_SOURCE /* memmem */
#include "events/sink.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"

typedef struct {
  char *raw;  /* the secret as given */
  size_t raw_len;
  char *enc;  /* as it appears inside an encoded JSON string (no quotes) */
  size_t enc_len;
} secret;

struct ts_sink {
  pthread_mutex_t mu;
  char thread[TS_THREAD_ID_MAX + 1];
  size_t thread_len;
  char parent[TS_THREAD_ID_MAX + 1]; /* "" for a root thread */
  size_t parent_len;
  uint64_t seq;
  int no_time; /* the config's: leave ts and mono_us out */
  char who[64];
  FILE *out;
  ts_sink_view_fn view;
  void *view_user;
  ts_pub *pub;
  ts_sink_emitted_fn emitted;
  void *emitted_user;
  ts_sink_store_fn store;
  void *store_user;
  secret secrets[TS_SINK_MAX_SECRETS];
  size_t n_secrets;
  ts_buf line;     /* the encoded event */
  ts_buf redacted; /* the line with secrets replaced, when one occurs */
  int store_err;   /* sticky */
  int enc_err;     /* sticky: an event did not encode */
  size_t max;      /* the line cap */
  int out_failed;
  int pub_failed;
};

static void free_secrets(ts_sink *s) {
  for (size_t i = 0; i < s->n_secrets; i++) {
    if (s->secrets[i].raw) memset(s->secrets[i].raw, 0, s->secrets[i].raw_len);
    if (s->secrets[i].enc) memset(s->secrets[i].enc, 0, s->secrets[i].enc_len);
    free(s->secrets[i].raw);
    free(s->secrets[i].enc);
  }
  s->n_secrets = 0;
}

int ts_sink_new(const ts_sink_config *cfg, ts_sink **out) {
  if (!cfg || !cfg->thread || !ts_thread_id_valid(cfg->thread, strlen(cfg->thread)) ||
      cfg->n_secrets > TS_SINK_MAX_SECRETS)
    return TS_E_INVAL;
  for (size_t i = 0; i < cfg->n_secrets; i++)
    if (cfg->secrets[i] && strlen(cfg->secrets[i]) < TS_SINK_SECRET_MIN) return TS_E_INVAL;
  ts_sink *s = calloc(1, sizeof *s);
  if (!s) return TS_E_NOMEM;
  s->thread_len = strlen(cfg->thread);
  memcpy(s->thread, cfg->thread, s->thread_len + 1);
  if (cfg->parent && ts_thread_id_valid(cfg->parent, strlen(cfg->parent))) {
    s->parent_len = strlen(cfg->parent);
    memcpy(s->parent, cfg->parent, s->parent_len + 1);
  }
  s->seq = cfg->last_seq;
  s->no_time = cfg->no_time;
  snprintf(s->who, sizeof s->who, "%s", cfg->who ? cfg->who : "toolstream");
  s->out = cfg->out;
  s->view = cfg->view;
  s->view_user = cfg->view_user;
  s->pub = cfg->pub;
  s->emitted = cfg->emitted;
  s->emitted_user = cfg->emitted_user;
  s->store = cfg->store;
  s->store_user = cfg->store_user;
  size_t max = cfg->max_event_bytes ? cfg->max_event_bytes : TS_SINK_MAX_EVENT_BYTES;
  s->max = max;
  ts_buf_init(&s->line, max);
  ts_buf_init(&s->redacted, max);
  int rc = TS_E_OK;
  for (size_t i = 0; i < cfg->n_secrets && !rc; i++) {
    if (!cfg->secrets[i]) continue;
    secret *k = &s->secrets[s->n_secrets++];
    k->raw_len = strlen(cfg->secrets[i]);
    k->raw = strdup(cfg->secrets[i]);
    ts_buf e;
    ts_buf_init(&e, 1 << 20);
    if (!k->raw || ts_buf_append_json_string(&e, cfg->secrets[i], k->raw_len)) {
      rc = TS_E_NOMEM;
    } else { /* without its quotes */
      k->enc_len = e.len - 2;
      k->enc = strndup(e.p + 1, k->enc_len);
      if (!k->enc) rc = TS_E_NOMEM;
    }
    ts_buf_fini(&e);
  }
  if (rc || pthread_mutex_init(&s->mu, NULL)) {
    free_secrets(s);
    ts_buf_fini(&s->line);
    ts_buf_fini(&s->redacted);
    free(s);
    return rc ? rc : TS_E_NOMEM;
  }
  *out = s;
  return TS_E_OK;
}

void ts_sink_free(ts_sink *s) {
  if (!s) return;
  pthread_mutex_destroy(&s->mu);
  free_secrets(s);
  ts_buf_fini(&s->line);
  ts_buf_fini(&s->redacted);
  free(s);
}

/* Copies `line` into `out` with each secret replaced. Matching starts only inside a
 * string and only where an escape unit starts (a plain byte, `\x` or `\uXXXX`): the
 * secret's encoding is itself a run of whole units, so a match ends on a unit boundary
 * too and cannot cross a quote (a quote inside the secret is encoded `\"`). Replacing
 * whole units inside a string with plain text leaves a valid string. */
static int redact_json(const ts_sink *s, const char *line, size_t n, ts_buf *out) {
  ts_buf_reset(out);
  int in_str = 0;
  size_t i = 0;
  while (i < n) {
    char c = line[i];
    if (!in_str) {
      if (c == '"') in_str = 1;
      ts_buf_putc(out, c);
      i++;
      continue;
    }
    if (c == '"') {
      in_str = 0;
      ts_buf_putc(out, c);
      i++;
      continue;
    }
    size_t k;
    for (k = 0; k < s->n_secrets; k++) {
      const secret *x = &s->secrets[k];
      if (x->enc_len && n - i >= x->enc_len && !memcmp(line + i, x->enc, x->enc_len)) break;
    }
    if (k < s->n_secrets) {
      ts_buf_puts(out, TS_SINK_REDACTED);
      i += s->secrets[k].enc_len;
      continue;
    }
    size_t unit = c != '\\' ? 1 : (i + 1 < n && line[i + 1] == 'u') ? 6 : 2;
    if (unit > n - i) unit = n - i;
    ts_buf_append(out, line + i, unit);
    i += unit;
  }
  return out->err;
}

/* 1 when some secret's encoding occurs in the line at all (the common case is no). */
static int has_secret(const ts_sink *s, const char *line, size_t n) {
  for (size_t k = 0; k < s->n_secrets; k++)
    if (s->secrets[k].enc_len && memmem(line, n, s->secrets[k].enc, s->secrets[k].enc_len))
      return 1;
  return 0;
}

/* Encodes `ev` into s->line; or, with `args` (a READY's arguments buffer, taken from the
 * tap), around the arguments inside that buffer: the envelope is encoded with empty
 * arguments, the buffer grows by the envelope's size, the arguments move up and the
 * envelope goes in front. One copy of the arguments exists at any time (the move is in
 * place). On success *json / *len are the line (in s->line or in *args). */
static int encode(ts_sink *s, const ts_event *ev, ts_buf *args, const char **json, size_t *len) {
  ts_buf_reset(&s->line);
  int rc = ts_event_encode(ev, &s->line);
  *json = s->line.p;
  *len = s->line.len;
  if (rc || !args) return rc;
  size_t pre = s->line.len - 1, n = args->len; /* the line is PREFIX + "}" */
  if (pre + 1 > s->max || n > s->max - pre - 1) return TS_E_LIMIT;
  args->max = s->max;
  if ((rc = ts_buf_append(args, s->line.p, pre + 1))) return rc;
  memmove(args->p + pre, args->p, n);
  memcpy(args->p, s->line.p, pre);
  args->p[pre + n] = '}';
  *json = args->p;
  *len = args->len;
  return TS_E_OK;
}

static int emit(ts_sink *s, const ts_event *e, ts_buf *args) {
  pthread_mutex_lock(&s->mu);
  int rc = s->store_err ? s->store_err : s->enc_err;
  if (rc) goto done;
  ts_event ev = *e;
  ev.thread = (ts_view){s->thread, s->thread_len};
  ev.parent = (ts_view){s->parent, s->parent_len};
  ev.seq = s->seq + 1;
  size_t n_args = args ? args->len : 0;
  if (args) ev.body.arguments = (ts_view){"", 0};
  /* Stamped once, here, so that every destination sees the same bytes. */
  if (!s->no_time) {
    ev.ts_us = ts_clock_wall_us();
    ev.mono_us = ts_clock_mono_us();
  }
  const char *json;
  size_t len;
  rc = encode(s, &ev, args, &json, &len);
  if (!rc && s->n_secrets && has_secret(s, json, len)) {
    rc = redact_json(s, json, len, &s->redacted);
    json = s->redacted.p;
    len = s->redacted.len;
  }
  if (rc) {
    /* A hole in the record: nothing more goes out (sink.h, "Error policy"). */
    fprintf(stderr, "%s: cannot write a %s event: %s (the line cap is %zu bytes); no further "
            "event is written\n", s->who, ts_event_type_name(e->body.type), ts_err_message(rc),
            s->max);
    s->enc_err = rc;
    goto done;
  }
  s->seq = ev.seq;
  if (s->store) {
    int sr = s->store(s->store_user, s->thread, ev.seq, json, len);
    if (sr) {
      s->store_err = rc = sr;
      goto done;
    }
  }
  if (s->out && !s->out_failed) {
    if (fwrite(json, 1, len, s->out) != len || fputc('\n', s->out) == EOF || fflush(s->out)) {
      s->out_failed = 1;
      rc = TS_E_IO;
    }
  }
  if (s->view) s->view(s->view_user, json, len);
  if (s->pub && !s->pub_failed) {
    int pr = ts_pub_send(s->pub, s->thread, s->thread_len, ev.seq, json, len);
    if (pr) {
      fprintf(stderr, "%s: cannot publish: %s; publishing stops, the rest goes on\n", s->who,
              ts_err_message(pr));
      s->pub_failed = 1;
    }
  }
  if (s->emitted) {
    /* the arguments, as the tap gave them, are inside the line now (unless redacted) */
    if (args) ev.body.arguments = json == args->p ? (ts_view){json + len - 1 - n_args, n_args}
                                                  : (ts_view){"", 0};
    s->emitted(s->emitted_user, &ev, json, len);
  }
done:
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int ts_sink_emit(ts_sink *s, const ts_event *e) { return emit(s, e, NULL); }

int ts_sink_emit_tap(ts_sink *s, const ts_tap_event *e) {
  ts_event ev;
  memset(&ev, 0, sizeof ev);
  ev.body = *e;
  return ts_sink_emit(s, &ev);
}

int ts_sink_emit_tap_last(ts_sink *s, const ts_tap_event *e) {
  if (e->type != TS_TAP_TOOL_CALL_READY || !e->arguments_buf || !e->arguments_buf->p ||
      e->arguments.p != e->arguments_buf->p || e->arguments.len != e->arguments_buf->len)
    return ts_sink_emit_tap(s, e);
  ts_event ev;
  memset(&ev, 0, sizeof ev);
  ev.body = *e;
  ts_buf args = *e->arguments_buf; /* taken: the tap finds its buffer empty */
  ts_buf_init(e->arguments_buf, e->arguments_buf->max);
  int rc = emit(s, &ev, &args);
  ts_buf_fini(&args);
  return rc;
}

size_t ts_sink_cap_for_args(size_t max_args) {
  if (!max_args) max_args = TS_TAP_MAX_ARGS_BYTES;
  return max_args > SIZE_MAX - TS_SINK_ENVELOPE ? SIZE_MAX : max_args + TS_SINK_ENVELOPE;
}

const char *ts_sink_thread(const ts_sink *s) { return s->thread; }

uint64_t ts_sink_last_seq(ts_sink *s) {
  pthread_mutex_lock(&s->mu);
  uint64_t v = s->seq;
  pthread_mutex_unlock(&s->mu);
  return v;
}

#define FLAG_GETTER(name, field)         \
  int name(ts_sink *s) {                 \
    pthread_mutex_lock(&s->mu);          \
    int v = s->field;                    \
    pthread_mutex_unlock(&s->mu);        \
    return v;                            \
  }
FLAG_GETTER(ts_sink_store_error, store_err)
FLAG_GETTER(ts_sink_encode_failed, enc_err)
FLAG_GETTER(ts_sink_output_failed, out_failed)
FLAG_GETTER(ts_sink_publish_failed, pub_failed)

int ts_sink_error(ts_sink *s) {
  pthread_mutex_lock(&s->mu);
  int v = s->store_err ? s->store_err : s->enc_err;
  pthread_mutex_unlock(&s->mu);
  return v;
}

int ts_sink_redact(const ts_sink *s, const char *text, size_t n, ts_buf *out) {
  size_t i = 0;
  while (i < n) {
    size_t k;
    for (k = 0; k < s->n_secrets; k++) {
      const secret *x = &s->secrets[k];
      if (n - i >= x->raw_len && !memcmp(text + i, x->raw, x->raw_len)) break;
    }
    if (k < s->n_secrets) {
      ts_buf_puts(out, TS_SINK_REDACTED);
      i += s->secrets[k].raw_len;
    } else {
      ts_buf_putc(out, text[i++]);
    }
  }
  return out->err;
}
