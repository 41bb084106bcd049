/*
 * model_http.c: the HTTP model backend of `toolstream run` (model_http.h).
 *
 * The provider's URL path and auth header are chosen here from `provider`; the request
 * body is the conversation module's. A transport failure before or during the reply is
 * reported as a stream_error event (so a subscriber sees why the turn ended) and as the
 * turn's `why` (the run's one error line).
 */
#include "cli/model_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "net/http_client.h"

typedef struct {
  ts_tap *tap;
  char *scratch;
  size_t cap;
  const volatile sig_atomic_t *cancel;
} http_feed;

/* Each chunk as it arrives: copied (the tap decodes JSON strings in place) and fed. */
static int on_http_chunk(void *user, const char *data, size_t len) {
  http_feed *f = user;
  if (len > f->cap) {
    char *p = realloc(f->scratch, len);
    if (!p) return 1;
    f->scratch = p;
    f->cap = len;
  }
  memcpy(f->scratch, data, len);
  ts_tap_feed(f->tap, f->scratch, len);
  return f->cancel && *f->cancel;
}

/* One model turn over HTTP: the stored conversation as the request, the streamed reply
 * through the tap. Returns 0, or -1 after emitting a stream_error event (why filled). */
static int http_turn(void *user, const ts_agent_turn *t, ts_tap *tap, char *why,
                     size_t why_cap) {
  const ts_http_model *m = user;
  ts_buf body;
  ts_buf_init(&body, (size_t)256 << 20);
  int rc = ts_conversation_request(t->store, t->thread, t->reg, m->provider, m->model,
                                   m->max_tokens, &body);
  if (rc) {
    snprintf(why, why_cap, "the model request failed: cannot build the request: %s",
             ts_err_message(rc));
    ts_buf_fini(&body);
    return -1;
  }
  /* A base URL gets the provider's path; a query string stays at the end. */
  char url[2048];
  if (ts_provider_url(m->provider, m->url, m->model, url, sizeof url) != TS_E_OK) {
    snprintf(why, why_cap, "the model request failed: the model URL is too long");
    ts_buf_fini(&body);
    return -1;
  }
  const char *key = getenv(m->key_env);
  char auth[4096] = "";
  ts_http_header h[8];
  size_t nh = 0;
  h[nh++] = (ts_http_header){"Content-Type", "application/json"};
  h[nh++] = (ts_http_header){"Accept", "text/event-stream"};
  if (key && *key) {
    snprintf(auth, sizeof auth, "%s%s", m->provider->auth_prefix, key);
    h[nh++] = (ts_http_header){m->provider->auth_header, auth};
  }
  for (const ts_provider_header *x = m->provider->headers; x && x->name && nh < 8; x++)
    h[nh++] = (ts_http_header){x->name, x->value};
  ts_http_request req = {.url = url, .headers = h, .n_headers = nh, .body = body.p,
                         .body_len = body.len, .ca_file = m->ca_file, .cancel = t->cancel};
  http_feed f = {tap, NULL, 0, t->cancel};
  ts_http_response_info info;
  rc = ts_http_post_stream(&req, on_http_chunk, &f, &info, why, why_cap);
  memset(auth, 0, sizeof auth); /* the key does not linger in this frame */
  free(f.scratch);
  ts_buf_fini(&body);
  int cancelled = t->cancel && *t->cancel;
  if (rc && !cancelled) {
    ts_tap_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = TS_TAP_STREAM_ERROR;
    ev.code = rc;
    ev.offset = ts_tap_offset(tap);
    ev.error = (ts_view){why, strlen(why)};
    ts_sink_emit_tap(t->sink, &ev); /* the sink redacts the key if the message echoes it */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", why);
    snprintf(why, why_cap, "the model request failed: %s", msg); /* the loop redacts it */
    return -1;
  }
  return 0;
}


ts_agent_model ts_http_model_backend(ts_http_model *m) {
  ts_agent_model b = {NULL, http_turn, m};
  return b;
}
