/*
 * raw_server.h: a hostile HTTP server for client tests, one scripted answer.
 *
 * ts_raw_server_start forks a child that listens on 127.0.0.1 (a free port, returned) and
 * answers every connection the same way: it reads the request (its head and a
 * Content-Length body), writes `head`, then `fill` `reps` times (-1: until the client
 * goes), then closes. With `trickle_us` the head goes one byte per write, that many
 * microseconds apart, so that it arrives in many reads (or slowly). The bytes are raw: malformed heads, endless headers, chunk sizes and
 * bodies are the point. ts_raw_server_stop kills and reaps the child. The script is
 * borrowed (the child has its own copy of memory). Failures abort the test program.
 */
#ifndef TS_TEST_RAW_SERVER_H
#define TS_TEST_RAW_SERVER_H

#include <sys/types.h>

typedef struct {
  const char *head;
  const char *fill; /* NULL: none */
  long reps;
  int trickle_us; /* 0: the head in one write */
} ts_raw_script;

typedef struct {
  pid_t pid;
  int port;
} ts_raw_server;

void ts_raw_server_start(ts_raw_server *s, const ts_raw_script *sc);
void ts_raw_server_stop(ts_raw_server *s);

#endif
