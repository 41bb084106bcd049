/*
 * model_http.h: the HTTP model backend of `toolstream run` (agent/run.h's ts_agent_model).
 *
 * Each turn: the stored conversation as the provider's streaming request
 * (agent/conversation.h), POSTed with the HTTP client (net/http_client.h), the reply fed
 * to the tap chunk by chunk as it arrives. It lives in cli/ because it is the one place
 * that sees both rooms it joins: the agent (conversation) and the network (HTTP).
 *
 * The API key is read from the environment variable `key_env` at each request, sent in
 * the provider's header and wiped from memory afterwards; it never appears in an event,
 * a URL or an error line (the run's sink redacts it, events/sink.h). A provider that signs
 * (Bedrock: its row's `sigv4_service`) with no key in `key_env` is signed with AWS
 * Signature Version 4 (net/sigv4.h) from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN and the region (the one the endpoint's host names, else AWS_REGION or
 * AWS_DEFAULT_REGION; none is an error of the turn); without those credentials the
 * request goes unsigned (a local server).
 */
#ifndef TS_CLI_MODEL_HTTP_H
#define TS_CLI_MODEL_HTTP_H

#include "agent/conversation.h"
#include "agent/run.h"

typedef struct {
  const char *url, *model, *key_env, *ca_file;
  const ts_provider *provider; /* a row of the provider table that writes requests */
  unsigned max_tokens;
} ts_http_model;

/* The backend for ts_agent_config.model; `m` must outlive the run. */
ts_agent_model ts_http_model_backend(ts_http_model *m);

#endif
