/*
 * http_client.h: one streaming HTTP(S) POST to a model backend, blocking from the
 * caller's point of view.
 *
 * The model backends (OpenAI-compatible Chat Completions, Anthropic Messages) are
 * plain HTTP/1.1 POSTs whose response body is a server-sent-event stream. This module
 * sends the request and hands the body to the caller *as it arrives*, one callback per
 * piece of bytes read from the socket; it knows nothing about SSE or JSON bodies (the
 * stream layer judges the bytes). It is the one module of runtime/ that includes
 * libevent (and OpenSSL): each call runs its own private event_base, so calls from
 * different threads never share state.
 *
 * What a call does
 *   1. Parses `url` (http:// or https://; no user:password@; IPv6 literals in brackets).
 *   2. Connects (TLS for https, see below), sends `body` with the caller's headers plus
 *      Host, Content-Type: application/json (unless the caller set one) and
 *      Content-Length.
 *   3. Skips informational responses (100 Continue, 103 Early Hints: any 1xx but 101)
 *      before the real one. On a 2xx status, calls on_chunk for every piece of the body as
 *      it is read, until the body is complete (the terminating chunk of a chunked body,
 *      Content-Length, or the server's close for a body with neither). Returns TS_E_OK.
 *      Redirects are not followed: a 3xx is a status like any other (step 4).
 *   4. On any other status, reads the first TS_HTTP_ERROR_BODY_MAX bytes of the body (and
 *      no more), never hands them to on_chunk, and fails with TS_E_HTTP_STATUS and
 *      `HTTP <status>: <message>` in `why`, where the message is error.message of a JSON
 *      body ({"error":{"message":...}}, OpenAI and Anthropic alike), a string `error`,
 *      or else the first line of the body as text (control bytes become spaces).
 *
 * Retries. A failed attempt is retried, up to `max_retries` times, when it failed by
 * connection failure, connect or idle timeout, a connection closed before the body
 * began, a 429 or a 5xx status, AND no byte of the body has been handed to on_chunk:
 * once the caller has seen bytes, every error is final (a retried stream would repeat
 * them). TLS failures, malformed URLs, other 4xx statuses and cancellation are never
 * retried. The delay before retry n (0-based) is retry_base_ms * 2^n, capped at
 * TS_HTTP_BACKOFF_CAP_MS; a `Retry-After: <seconds>` header on the failed response
 * replaces it (capped at TS_HTTP_RETRY_AFTER_CAP_MS; HTTP dates are ignored). The
 * cancel flag is watched during the delay too.
 *
 * Timeouts (milliseconds; 0 in the request means the default):
 *   connect_timeout_ms  TCP connect plus TLS handshake (default 10000);
 *   idle_timeout_ms     once connected, no byte for this long (default 60000); the
 *                       head counts only once complete, so a head trickled a byte at a
 *                       time is silence. Checked every TS_HTTP_TICK_MS.
 * Limits: a response head over TS_HTTP_HEAD_MAX, or more than TS_HTTP_PENDING_MAX bytes
 * of a chunk still incomplete, fail with TS_E_HTTP_PROTOCOL, as a malformed response does;
 * none of these is retried.
 * Cancellation: when `*cancel` becomes nonzero (a signal handler may set it) the
 * request is abandoned within about TS_HTTP_TICK_MS and the call returns
 * TS_E_HTTP_CANCELLED; when on_chunk returns nonzero, no further chunk is delivered and
 * the call returns TS_E_ABORTED. Either way the connection is closed, nothing leaks.
 *
 * TLS: certificates are always verified (there is no insecure mode): against the
 * system store (SSL_CTX_set_default_verify_paths), or only against `ca_file` when it
 * is set; the certificate must name the URL's host (DNS name, or IP address for an IP
 * literal); SNI is sent for names. TLS 1.2 at least.
 *
 * Secrets: header values (the API key travels in one) are never written into `why`,
 * logged or kept after the call; `why` mentions the host, status and server message
 * only.
 *
 * Results: `info` (may be NULL) is filled on every return: the last status seen (0 if
 * none), the number of attempts, the body bytes handed to on_chunk, and the response's
 * Content-Type (truncated to fit). Status and Content-Type are already set when on_chunk
 * is first called (a caller may read them there to judge the body). `why` (may be NULL; why_cap bytes) receives a
 * one-line human explanation on error and "" on success.
 */
#ifndef TS_HTTP_CLIENT_H
#define TS_HTTP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define TS_HTTP_CONNECT_TIMEOUT_MS 10000
#define TS_HTTP_IDLE_TIMEOUT_MS 60000
#define TS_HTTP_MAX_RETRIES 3
#define TS_HTTP_RETRY_BASE_MS 500
/* A backoff longer than this is a hang to a user watching a terminal. */
#define TS_HTTP_BACKOFF_CAP_MS 8000
/* A server may ask for longer; we wait at most this, then try (and fail) anyway. */
#define TS_HTTP_RETRY_AFTER_CAP_MS 30000
/* Error bodies are short JSON documents; anything past this is not read into memory. */
#define TS_HTTP_ERROR_BODY_MAX (64 * 1024)
/* A response head (status line and headers, with the 1xx heads before it, or a chunked
 * body's trailers) is a few KiB from every provider; a larger one fails with
 * TS_E_HTTP_PROTOCOL, never retried, so a server cannot make us hold an endless head. */
#define TS_HTTP_HEAD_MAX (256 * 1024)
/* Bytes of a chunked body read but not yet handed to on_chunk: libevent hands a chunk
 * over only once all of it has arrived, so one declared as ffffffffffffffff bytes would
 * be held without end. Servers flush an event or a few per chunk; a whole 16 MiB call in
 * one chunk still fits. Past this the call fails with TS_E_HTTP_PROTOCOL, never retried. */
#define TS_HTTP_PENDING_MAX (64 * 1024 * 1024)
/* How often the cancel flag and the timeouts are checked. */
#define TS_HTTP_TICK_MS 50
/* max_retries value that means "never retry" (0 means the default). */
#define TS_HTTP_NO_RETRY (-1)

typedef struct {
  const char *name;  /* e.g. "Authorization"; no CR, LF or ':' */
  const char *value; /* e.g. "Bearer sk-..." (never printed); no CR or LF */
} ts_http_header;

/* Zero-filled means defaults everywhere; url is required. All pointers are borrowed for
 * the duration of the call only. */
typedef struct {
  const char *url;               /* http://host[:port]/path[?query] or https://... */
  const ts_http_header *headers; /* n_headers extra request headers */
  size_t n_headers;
  const char *body; /* the JSON request body (may hold any bytes) */
  size_t body_len;
  int connect_timeout_ms; /* 0: TS_HTTP_CONNECT_TIMEOUT_MS */
  int idle_timeout_ms;    /* 0: TS_HTTP_IDLE_TIMEOUT_MS */
  int max_retries;        /* 0: TS_HTTP_MAX_RETRIES; TS_HTTP_NO_RETRY (<0): none */
  int retry_base_ms;      /* 0: TS_HTTP_RETRY_BASE_MS */
  const char *ca_file;    /* PEM file of trusted CAs instead of the system store */
  const volatile int *cancel; /* optional: nonzero = stop now */
} ts_http_request;

typedef struct {
  int status;          /* HTTP status of the last response, 0 when none arrived */
  int attempts;        /* requests sent (1 + retries) */
  uint64_t body_bytes; /* bytes handed to on_chunk */
  char content_type[128];
} ts_http_response_info;

/* Called with each piece of a 2xx body in arrival order; `data` is valid only during
 * the call. Return 0 to go on, nonzero to stop (the call then returns TS_E_ABORTED). */
typedef int (*ts_http_chunk_fn)(void *user, const char *data, size_t len);

/* Performs the POST described above. Returns TS_E_OK when a 2xx body was delivered
 * completely; otherwise a negative code: TS_E_INVAL (NULL url or on_chunk, a header
 * with CR/LF), TS_E_NOMEM, TS_E_HTTP_URL, TS_E_HTTP_CONNECT, TS_E_HTTP_TIMEOUT,
 * TS_E_HTTP_STATUS, TS_E_HTTP_TLS, TS_E_HTTP_CANCELLED, TS_E_HTTP_CLOSED (the connection
 * ended inside the body), TS_E_HTTP_PROTOCOL (a malformed response), TS_E_ABORTED
 * (on_chunk returned nonzero). After an error, on_chunk may already have received part
 * of the body (see info->body_bytes); it is never called after the function returns. */
int ts_http_post_stream(const ts_http_request *req, ts_http_chunk_fn on_chunk, void *user,
                        ts_http_response_info *info, char *why, size_t why_cap);

#endif /* TS_HTTP_CLIENT_H */
