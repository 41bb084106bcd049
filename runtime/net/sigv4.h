/*
 * sigv4.h: AWS Signature Version 4 for one HTTP request (the header form).
 *
 * Amazon Bedrock, like every AWS API, authenticates a request by an HMAC-SHA256
 * signature over a canonical form of the request, made with a key derived from the
 * secret access key, the date, the region and the service. This module computes that
 * signature and the headers that carry it (and reads the region out of an AWS endpoint's
 * host name), and nothing else: it opens no connection,
 * reads no environment and no clock (the caller passes the time), so the same inputs
 * give the same output and AWS's published test vectors can check it exactly.
 *
 * What is signed
 *   - the method;
 *   - the canonical path: `path` exactly as it will be sent (already percent-encoded),
 *     percent-encoded once more byte by byte except the unreserved characters and '/'
 *     (AWS encodes the path twice for every service but S3: a model id's ':' is sent as
 *     %3A and signed as %253A); an empty path is "/";
 *   - the canonical query: `query` (as sent, without '?') split at '&', each name and
 *     value percent-decoded and strictly re-encoded, sorted by name then value;
 *   - the caller's headers plus `x-amz-date` (from `now`) and, with a session token,
 *     `x-amz-security-token`: names lowercased, values trimmed with inner runs of
 *     spaces folded to one, sorted by name. The caller must send exactly these headers
 *     with these values (Host included: pass the Host header the request will carry);
 *   - the SHA-256 of the body.
 *
 * Secrets: the secret key and the keys derived from it live only on this call's stack
 * and are wiped before it returns; the outputs hold no secret (the signature is an
 * HMAC). The session token is copied to nothing: the caller sends its own string as
 * X-Amz-Security-Token.
 *
 * Limits: at most TS_SIGV4_MAX_HEADERS headers; the Authorization value must fit in
 * TS_SIGV4_AUTH_MAX bytes (a longer access key id, region or header list is TS_E_LIMIT).
 */
#ifndef TS_NET_SIGV4_H
#define TS_NET_SIGV4_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/error.h"

/* Headers a request signs: Bedrock's need four (host, content-type, x-amz-date, the
 * token), and a caller that signs more than this is signing something odd. */
#define TS_SIGV4_MAX_HEADERS 16
/* "AWS4-HMAC-SHA256 Credential=<id>/<date>/<region>/<service>/aws4_request,
 * SignedHeaders=<names>, Signature=<64 hex>": a few hundred bytes in practice. */
#define TS_SIGV4_AUTH_MAX 1024

typedef struct {
  const char *access_key_id;     /* AWS_ACCESS_KEY_ID */
  const char *secret_access_key; /* AWS_SECRET_ACCESS_KEY (never copied out) */
  const char *session_token;     /* AWS_SESSION_TOKEN, or NULL / "" for long-term keys */
  const char *region;            /* e.g. "us-east-1" */
  const char *service;           /* e.g. "bedrock" */
} ts_sigv4_key;

typedef struct {
  const char *name, *value;
} ts_sigv4_header;

typedef struct {
  const char *method;             /* "POST" */
  const char *path;               /* as sent: "/model/a%3A0/converse-stream"; "" or NULL = "/" */
  const char *query;              /* as sent, without '?'; NULL or "" when none */
  const ts_sigv4_header *headers; /* what the request sends and signs, Host among them */
  size_t n_headers;
  const void *body; /* may be NULL when body_len is 0 */
  size_t body_len;
} ts_sigv4_request;

typedef struct {
  char amz_date[17];                     /* the X-Amz-Date value: "20150830T123600Z" */
  char authorization[TS_SIGV4_AUTH_MAX]; /* the Authorization value */
  char signature[65];                    /* the signature alone, hex (also in authorization) */
} ts_sigv4_result;

/* Signs `r` with `k` at time `now` (seconds since the Unix epoch, UTC). On TS_E_OK `out`
 * holds the X-Amz-Date and Authorization values to send (with X-Amz-Security-Token:
 * k->session_token when one is set). Errors: TS_E_INVAL (a NULL or empty required
 * field, a header name that is empty or repeats one given, a time that does not fit a
 * calendar date), TS_E_LIMIT (more than TS_SIGV4_MAX_HEADERS headers counting the two
 * added, an Authorization value that does not fit), TS_E_NOMEM. `out` is unspecified on
 * error. */
int ts_sigv4_sign(const ts_sigv4_key *k, const ts_sigv4_request *r, time_t now,
                  ts_sigv4_result *out);

/* The region an AWS endpoint's host names: "<service>[-fips].<region>.amazonaws.com"
 * (bedrock-runtime.us-east-1.amazonaws.com: "us-east-1"), when the host begins with
 * `service` (NULL: any). Returns 1 with the region in out (cap bytes), else 0 and "" (a
 * proxy, a VPC endpoint, a host too odd or a region that does not fit). */
int ts_sigv4_region_of_host(const char *host, const char *service, char *out, size_t cap);

/* The signing key: HMAC-SHA256 chained over "AWS4" + secret, then `date` ("YYYYMMDD"),
 * region, service and "aws4_request". Exposed for the test vector AWS publishes for this
 * step alone; ts_sigv4_sign derives it itself. Returns TS_E_OK or TS_E_INVAL (NULL). */
int ts_sigv4_signing_key(const char *secret_access_key, const char *date, const char *region,
                         const char *service, uint8_t out[32]);

#endif /* TS_NET_SIGV4_H */
