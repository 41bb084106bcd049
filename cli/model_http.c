/*
 * model_http.c: the HTTP model backend of `toolstream run` (model_http.h).
 *
 * The provider's URL path and auth header are chosen here from `provider`; the request
 * body is the conversation module's. Authentication is the key in the provider's header
 * (Bearer, x-api-key, x-goog-api-key: the provider table says which), or for Bedrock
 * without a Bedrock API key, AWS Signature Version 4 over the finished request
 * (net/sigv4.h) from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and
 * AWS_REGION: the body, the path with the model id and the headers are signed as sent,
 * once per turn (a retry resends the same signed request well inside the 15 minutes AWS
 * accepts). A transport failure before or during the reply is
 * reported as a stream_error event (so a subscriber sees why the turn ended) and as the
 * turn's `why` (the run's one error line).
 */
#include "cli/model_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/strbuf.h"
#include "net/http_client.h"
#include "net/sigv4.h"
#include "net/upstream.h"
#include "tools/variables.h"

typedef struct {
  ts_tap *tap;
  char *scratch;
  size_t cap;
  const volatile sig_atomic_t *cancel;
  const ts_http_response_info *info; /* the reply's head, read before its first chunk */
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
  if (!ts_tap_offset(f->tap)) /* the first bytes: the tap reads them by the content type */
    ts_tap_content_type(f->tap, f->info->content_type, strlen(f->info->content_type));
  ts_tap_feed(f->tap, f->scratch, len);
  /* A stream in error has already failed the turn (agent/run.h); what a server sends after
   * it (an endless line past the event cap) is not waited for. */
  return (f->cancel && *f->cancel) || ts_tap_failed(f->tap);
}

/* The region Bedrock requests are signed for: the one an AWS endpoint names in its host
 * (bedrock-runtime[-fips].<region>.amazonaws.com: a signature for another region is
 * refused there anyway), else AWS_REGION, else AWS_DEFAULT_REGION (as the AWS CLI reads
 * them, for endpoints that name none: a proxy, a VPC endpoint). "" when none says. */
static void aws_region(const ts_upstream *u, char *out, size_t cap) {
  if (ts_sigv4_region_of_host(u->host, "bedrock-runtime", out, cap)) return;
  const char *r = getenv("AWS_REGION");
  if (!r || !*r) r = getenv("AWS_DEFAULT_REGION");
  if (r && *r) snprintf(out, cap, "%s", r);
}

/* The request's headers, `h` (room for HEADERS_MAX): the content type, what the reply
 * should be, the provider's fixed headers, and the key in the provider's header; or, for
 * a provider that signs (SigV4) and no key in key_env, the signature over the finished
 * request from the AWS_* credentials of the environment. With neither (a local server)
 * the request goes without. `as` holds the values the headers point to.
 * Returns the number of headers, or -1 with `why` filled. */
#define HEADERS_MAX 16
typedef struct {
  char auth[4096], region[64];
  ts_upstream url; /* the Host value */
  ts_sigv4_result sig;
} auth_space;

static int request_headers(const ts_http_model *m, const char *url, const char *body,
                           size_t body_len, ts_http_header *h, auth_space *as, char *why,
                           size_t why_cap) {
  const ts_provider *p = m->provider;
  size_t nh = 0;
  int accept = 0;
  for (const ts_provider_header *x = p->headers; x && x->name; x++)
    accept |= !strcasecmp(x->name, "Accept");
  h[nh++] = (ts_http_header){"Content-Type", "application/json"};
  if (!accept) h[nh++] = (ts_http_header){"Accept", "text/event-stream"};
  for (const ts_provider_header *x = p->headers; x && x->name && nh < HEADERS_MAX - 5; x++)
    h[nh++] = (ts_http_header){x->name, x->value};
  const char *key = m->key_env ? getenv(m->key_env) : NULL;
  if (key && *key) {
    snprintf(as->auth, sizeof as->auth, "%s%s", p->auth_prefix, key);
    h[nh++] = (ts_http_header){p->auth_header, as->auth};
    return (int)nh;
  }
  const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
  if (!p->sigv4_service || !id || !*id || !secret || !*secret) return (int)nh;
  ts_upstream *u = &as->url;
  if (ts_upstream_parse(url, u, NULL, 0) != TS_E_OK) {
    snprintf(why, why_cap, "the model URL is malformed");
    return -1;
  }
  aws_region(u, as->region, sizeof as->region);
  if (!as->region[0]) {
    snprintf(why, why_cap, "no AWS region to sign for: set AWS_REGION");
    return -1;
  }
  /* Host is sent as signed (the client adds none of its own when one is given) */
  h[nh++] = (ts_http_header){"Host", u->host_hdr};
  ts_sigv4_header sh[HEADERS_MAX];
  for (size_t i = 0; i < nh; i++) sh[i] = (ts_sigv4_header){h[i].name, h[i].value};
  const char *token = getenv("AWS_SESSION_TOKEN");
  ts_sigv4_key k = {id, secret, token, as->region, p->sigv4_service};
  ts_sigv4_request r = {"POST", u->path, u->query, sh, nh, body, body_len};
  int rc = ts_sigv4_sign(&k, &r, time(NULL), &as->sig);
  if (rc != TS_E_OK) {
    snprintf(why, why_cap, "cannot sign it (AWS SigV4): %s", ts_err_message(rc));
    return -1;
  }
  h[nh++] = (ts_http_header){"X-Amz-Date", as->sig.amz_date};
  if (token && *token) h[nh++] = (ts_http_header){"X-Amz-Security-Token", token};
  h[nh++] = (ts_http_header){"Authorization", as->sig.authorization};
  return (int)nh;
}

/* The URL of a request for `model`: the provider's path for it on m's URL
 * (ts_provider_url). When m's URL already ends with the provider's path for m's own model
 * (--model-url given whole: .../models/big:streamGenerateContent?alt=sse), that path is
 * swapped for the one of `model` instead of a second one appended. */
static int model_url(const ts_http_model *m, const char *model, char *out, size_t cap) {
  const ts_provider *p = m->provider;
  if (!strcmp(model, m->model)) return ts_provider_url(p, m->url, model, out, cap);
  char own[1024], other[1024]; /* the provider's paths alone, for each model */
  int rc = ts_provider_url(p, "", m->model, own, sizeof own);
  if (rc == TS_E_OK) rc = ts_provider_url(p, "", model, other, sizeof other);
  if (rc != TS_E_OK) return rc;
  own[strcspn(own, "?")] = other[strcspn(other, "?")] = '\0';
  const char *q = strchr(m->url, '?');
  size_t bl = q ? (size_t)(q - m->url) : strlen(m->url), ol = strlen(own);
  if (!ol || bl < ol || memcmp(m->url + bl - ol, own, ol))
    return ts_provider_url(p, m->url, model, out, cap);
  int w = snprintf(out, cap, "%.*s%s%s", (int)(bl - ol), m->url, other, q ? q : "");
  return w >= 0 && (size_t)w < cap ? TS_E_OK : TS_E_LIMIT;
}

/* A server's message may echo a credential it was sent (`Incorrect API key provided:
 * Bearer sk-...`); `why` goes to bench's table and files, not only through run's sink, so
 * the key, the AWS secret and the session token are redacted from it here. */
static void redact_why(const ts_http_model *m, char *why, size_t why_cap) {
  const char *secrets[] = {m->key_env ? getenv(m->key_env) : NULL,
                           getenv("AWS_SECRET_ACCESS_KEY"), getenv("AWS_SESSION_TOKEN")};
  if (!why || !why_cap || !why[0]) return;
  size_t len = strlen(why);
  char *t = malloc(len + 1);
  if (!t) return;
  memcpy(t, why, len + 1);
  int hit = 0;
  for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++)
    if (secrets[i] && strlen(secrets[i]) >= 8 &&
        ts_vars_redact(&t, &len, secrets[i], strlen(secrets[i])) > 0)
      hit = 1;
  if (hit) snprintf(why, why_cap, "%.*s", (int)len, t);
  ts_vars_wipe(t, len);
  free(t);
}

/* ts_http_model_post for `model` (the request's own, in its body) on m's endpoint. */
static int post_as(const ts_http_model *m, const char *model, const char *body, size_t len,
                   int (*on_chunk)(void *user, const char *data, size_t len), void *user,
                   const volatile int *cancel, ts_http_response_info *info, char *why,
                   size_t why_cap) {
  if (info) memset(info, 0, sizeof *info);
  /* A base URL gets the provider's path; a query string stays at the end. */
  char url[2048];
  if (model_url(m, model, url, sizeof url) != TS_E_OK) {
    snprintf(why, why_cap, "the model URL is too long");
    return TS_E_INVAL;
  }
  ts_http_header h[HEADERS_MAX];
  auth_space *as = calloc(1, sizeof *as);
  if (!as) {
    snprintf(why, why_cap, "out of memory");
    return TS_E_INVAL;
  }
  int n = request_headers(m, url, body, len, h, as, why, why_cap);
  if (n < 0) {
    free(as);
    return TS_E_INVAL;
  }
  ts_http_request req = {.url = url, .headers = h, .n_headers = (size_t)n, .body = body,
                         .body_len = len, .ca_file = m->ca_file, .cancel = cancel};
  int rc = ts_http_post_stream(&req, on_chunk, user, info, why, why_cap);
  if (rc) redact_why(m, why, why_cap);
  memset(as, 0, sizeof *as); /* the key does not linger */
  free(as);
  return rc;
}

int ts_http_model_post(const ts_http_model *m, const char *body, size_t len,
                       int (*on_chunk)(void *user, const char *data, size_t len), void *user,
                       const volatile int *cancel, ts_http_response_info *info, char *why,
                       size_t why_cap) {
  return post_as(m, m->model, body, len, on_chunk, user, cancel, info, why, why_cap);
}

/* One model turn over HTTP: the stored conversation as the request, the streamed reply
 * through the tap. Returns 0, or -1 (why filled; after emitting a stream_error event when
 * the request went out and failed). */
static int http_turn(void *user, const ts_agent_turn *t, ts_tap *tap, char *why,
                     size_t why_cap) {
  const ts_http_model *m = user;
  /* The driving prompt's model, when it names one (agent/compose.h), is this turn's model
   * wherever the provider names it: in the body (ts_conversation_request_turn takes
   * t->model over m->model) and in the URL, which for Gemini (models/MODEL:...) and
   * Bedrock (/model/MODEL/..., signed as sent) carries it too. One endpoint serves the
   * whole tree; only the model differs. */
  const char *model = t->model && *t->model ? t->model : m->model;
  ts_buf body;
  ts_buf_init(&body, (size_t)256 << 20);
  int rc = ts_conversation_request_turn(t, m->provider, model, m->max_tokens, &body);
  if (rc) {
    snprintf(why, why_cap, "the model request failed: cannot build the request: %s",
             ts_err_message(rc));
    ts_buf_fini(&body);
    return -1;
  }
  ts_http_response_info info;
  http_feed f = {tap, NULL, 0, t->cancel, &info};
  rc = post_as(m, model, body.p, body.len, on_http_chunk, &f, t->cancel, &info, why, why_cap);
  free(f.scratch);
  ts_buf_fini(&body);
  int cancelled = t->cancel && *t->cancel;
  if (rc == TS_E_ABORTED && ts_tap_failed(tap))
    return 0; /* the tap's stream_error is the turn's end and its reason */
  if (rc && !cancelled) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", why);
    if (rc != TS_E_INVAL) { /* it went out: the stream's own end, for subscribers too */
      ts_tap_event ev;
      memset(&ev, 0, sizeof ev);
      ev.type = TS_TAP_STREAM_ERROR;
      ev.code = rc;
      ev.offset = ts_tap_offset(tap);
      ev.error = (ts_view){msg, strlen(msg)};
      ts_sink_emit_tap(t->sink, &ev); /* the sink redacts the key if the message echoes it */
    }
    snprintf(why, why_cap, "the model request failed: %s", msg); /* the loop redacts it */
    return -1;
  }
  return 0;
}

int ts_http_model_resolve(ts_http_model *m, const ts_cli_common *c) {
  const char *p = c->provider, *who = c->who;
  m->url = c->model_url;
  m->model = c->model;
  m->key_env = c->key_env;
  m->max_tokens = c->max_tokens;
  m->ca_file = c->ca_file;
  if (!m->model) {
    fprintf(stderr, "%s: --model-url needs --model NAME\n", who);
    return 2;
  }
  m->provider = p ? ts_provider_find(p) : ts_provider_for_url(m->url);
  if (!p && !m->provider) m->provider = ts_provider_get(TS_FORMAT_OPENAI_CHAT);
  if (!m->provider || !m->provider->request) {
    /* the names requests can be written for, from the provider table */
    char names[256] = "";
    size_t nn = 0, k = 0, total = 0;
    for (size_t i = 0; i < ts_provider_count(); i++) total += ts_provider_at(i)->request != NULL;
    for (size_t i = 0; i < ts_provider_count(); i++) {
      const ts_provider *r = ts_provider_at(i);
      if (!r->request) continue;
      const char *sep = !k ? "" : ++k == total ? " or " : ", ";
      if (!k) k = 1;
      int w = snprintf(names + nn, sizeof names - nn, "%s%s", sep, r->alias ? r->alias : r->name);
      if (w > 0 && (size_t)w < sizeof names - nn) nn += (size_t)w;
    }
    fprintf(stderr, "%s: --provider is %s, not '%s'\n", who, names, p);
    return 2;
  }
  if (!m->key_env) m->key_env = m->provider->key_env;
  const char *key = getenv(m->key_env);
  int local = strstr(m->url, "://localhost") || strstr(m->url, "://127.") ||
              strstr(m->url, "://[::1]");
  const char *aid = getenv("AWS_ACCESS_KEY_ID"), *asecret = getenv("AWS_SECRET_ACCESS_KEY");
  int signs = m->provider->sigv4_service && aid && *aid && asecret && *asecret;
  if ((!key || !*key) && !signs && !local && m->provider->sigv4_service) {
    fprintf(stderr, "%s: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_REGION; "
                    "AWS_SESSION_TOKEN for temporary credentials) to sign Bedrock requests, or "
                    "%s to a Bedrock API key (read from the environment only)\n",
            who, m->key_env);
    return 2;
  }
  if ((!key || !*key) && !signs && !local) {
    fprintf(stderr, "%s: set %s to the API key (it is read from the environment only)\n", who,
            m->key_env);
    return 2;
  }
  return 0;
}

ts_agent_model ts_http_model_backend(ts_http_model *m) {
  ts_agent_model b = {NULL, http_turn, m};
  return b;
}
