/*
 * proc.h: run the toolstream binary (or any program) from a test, with pipes.
 *
 * spawn() starts it with its stdout/stderr on pipes (and stdin on a pipe when asked);
 * pump() collects what it printed; feed_all() writes its input while collecting;
 * finish_child() closes stdin, drains and reaps it (60 s at most); run() does it all.
 * Failures of the machinery itself (pipe, fork) abort the test program.
 */
#ifndef TS_TEST_PROC_H
#define TS_TEST_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "support/sb.h"


typedef struct {
  int status; /* exit status, or 128 + signal */
  sb out, err;
} result;

void result_free(result *r);
double now_ms(void);

typedef struct {
  pid_t pid;
  int in, out, err; /* our ends; in = -1 when the child reads /dev/null */
} child;

/* Starts `binary` with argv[1..] (argv[0] is ignored). stdin_pipe: give it a pipe for
 * standard input (else /dev/null). */
child spawn_bin(const char *binary, const char *const *argv, int stdin_pipe);
/* Reads what is ready within `ms`; returns how many of stdout/stderr are still open. */
int pump(child *c, result *r, int ms);
void feed_all(child *c, result *r, const char *data, size_t len);
void finish_child(child *c, result *r);
result run_bin(const char *binary, const char *const *argv, const char *input, size_t len);

#endif
