/*
 * model_server.h: starting and stopping the local model server (tests/model_server.c)
 * from a test.
 *
 * The server serves DIR's *.sse files to POST requests over real HTTP (HTTPS with a
 * certificate), records each request under DIR/requests/, and prints its port on its
 * first line. Starting waits for that line, not for a guessed delay, so it holds on a
 * loaded machine; only a server that prints nothing for 30 s fails the test. Stopping
 * closes its standard input (its signal to exit) and reaps it.
 */
#ifndef TS_TEST_MODEL_SERVER_H
#define TS_TEST_MODEL_SERVER_H

#include "support/proc.h"

typedef struct {
  child proc;
  result out; /* what it printed (stdout: the port line; stderr: diagnostics) */
  int port;   /* 0 when not running */
} ts_test_server;

/* Starts the server on `dir`; with tls_cert and tls_key (PEM files) it speaks HTTPS.
 * Fails the test (check) when it does not start. */
void ts_test_server_start(ts_test_server *s, const char *dir, const char *tls_cert,
                          const char *tls_key);

/* Stops a started server (a stopped or never started one is a no-op). */
void ts_test_server_stop(ts_test_server *s);

/* The value of header `name` (case-insensitive) in a recorded request head (the text of
 * DIR/requests/N.txt), copied NUL-terminated into out. 1, or 0 when the head has no such
 * header or its value does not fit in cap. */
int ts_test_head_value(const char *head, const char *name, char *out, size_t cap);

/* The URI of a recorded request head ("POST /v1/x?y=1" gives "/v1/x?y=1"), into out as
 * ts_test_head_value. */
int ts_test_head_uri(const char *head, char *out, size_t cap);

#endif
