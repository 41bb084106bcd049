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
 *
 * A turn driven by a prompt with its own `model` (agent/compose.h: ts_agent_turn.model)
 * asks that model on the same endpoint: in the body and, for the providers whose URL
 * names the model (Gemini, Bedrock), in the URL, which is what Bedrock signs. When `url`
 * already ends with the provider's path for `model` (the whole URL given), that path is
 * swapped for the turn model's.
 */
#ifndef TS_CLI_MODEL_HTTP_H
#define TS_CLI_MODEL_HTTP_H

#include "agent/conversation.h"
#include "agent/run.h"
#include "cli/opts.h"
#include "net/http_client.h"

typedef struct {
  const char *url, *model, *key_env, *ca_file;
  const ts_provider *provider; /* a row of the provider table that writes requests */
  unsigned max_tokens;
} ts_http_model;

/* Fills m from the model group's options (cli/opts.h: --model-url, which must be set, --model,
 * --provider, --api-key-env, --max-tokens) and --ca-file: --model is required; the provider
 * is --provider's (default: by the URL's host, else OpenAI Chat) and must write requests;
 * key_env defaults to the provider's; its variable must be set, or for a provider that
 * signs the AWS credentials, unless the URL is on this machine. Returns 0, or 2 after one
 * line on standard error prefixed with c->who. */
int ts_http_model_resolve(ts_http_model *m, const ts_cli_common *c);

/* POSTs `body` (a streaming request in m's provider's shape) to m's URL with the
 * provider's path, headers and authentication (the key read from `key_env` now, or the
 * SigV4 signature; wiped afterwards), handing the reply to on_chunk as it arrives:
 * ts_http_post_stream's contract (net/http_client.h). Failures before anything is sent
 * (the URL too long, no AWS region, signing, out of memory) return TS_E_INVAL with `why`
 * and `info` zeroed. Used by the backend below and by `toolstream bench`. */
int ts_http_model_post(const ts_http_model *m, const char *body, size_t len,
                       int (*on_chunk)(void *user, const char *data, size_t len), void *user,
                       const volatile int *cancel, ts_http_response_info *info, char *why,
                       size_t why_cap);

/* The backend for ts_agent_config.model; `m` must outlive the run. */
ts_agent_model ts_http_model_backend(ts_http_model *m);

#endif
