/*
 * proc.c: see proc.h.
 */
#include "support/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REQUIRE(cond, ...)                      \
  do {                                          \
    if (!(cond)) {                              \
      fprintf(stderr, "test support: ");        \
      fprintf(stderr, __VA_ARGS__);             \
      fputc('\n', stderr);                      \
      abort();                                  \
    }                                           \
  } while (0)


/* ---- running the binary ------------------------------------------------------------- */


void result_free(result *r) {
  sb_free(&r->out);
  sb_free(&r->err);
}

double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}


/* Starts the binary with argv (argv[0] is replaced by the binary's path). stdin_pipe:
 * give it a pipe for standard input (else /dev/null). */
child spawn_bin(const char *binary, const char *const *argv, int stdin_pipe) {
  int pin[2] = {-1, -1}, pout[2], perr[2];
  if (stdin_pipe) REQUIRE(pipe(pin) == 0, "pipe: %s", strerror(errno));
  REQUIRE(pipe(pout) == 0 && pipe(perr) == 0, "pipe: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    int fd = stdin_pipe ? pin[0] : open("/dev/null", O_RDONLY);
    dup2(fd, 0);
    dup2(pout[1], 1);
    dup2(perr[1], 2);
    if (stdin_pipe) {
      close(pin[0]);
      close(pin[1]);
    } else {
      close(fd);
    }
    close(pout[0]);
    close(pout[1]);
    close(perr[0]);
    close(perr[1]);
    char *args[64];
    int n = 0;
    args[n++] = (char *)binary;
    for (int i = 1; argv[i] && n < 63; i++) args[n++] = (char *)argv[i];
    args[n] = NULL;
    execv(binary, args);
    _exit(127);
  }
  child c = {pid, -1, pout[0], perr[0]};
  if (stdin_pipe) {
    close(pin[0]);
    c.in = pin[1];
  }
  close(pout[1]);
  close(perr[1]);
  return c;
}

/* Reads whatever is ready on the child's stdout/stderr within `ms` milliseconds.
 * Returns the number of fds still open. */
int pump(child *c, result *r, int ms) {
  struct pollfd pf[2];
  int n = 0;
  if (c->out >= 0) pf[n++] = (struct pollfd){c->out, POLLIN, 0};
  if (c->err >= 0) pf[n++] = (struct pollfd){c->err, POLLIN, 0};
  if (!n) return 0;
  int k = poll(pf, (nfds_t)n, ms);
  if (k <= 0) return n;
  for (int i = 0; i < n; i++) {
    if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char buf[65536];
    ssize_t got = read(pf[i].fd, buf, sizeof buf);
    if (got > 0) {
      sb_add(pf[i].fd == c->out ? &r->out : &r->err, buf, (size_t)got);
    } else if (got == 0 || errno != EINTR) {
      close(pf[i].fd);
      if (pf[i].fd == c->out) c->out = -1;
      else c->err = -1;
    }
  }
  return (c->out >= 0) + (c->err >= 0);
}

/* Writes all of `data` to the child's stdin, reading its output meanwhile. */
void feed_all(child *c, result *r, const char *data, size_t len) {
  size_t off = 0;
  while (off < len) {
    struct pollfd pf = {c->in, POLLOUT, 0};
    if (poll(&pf, 1, 10) > 0) {
      ssize_t w = write(c->in, data + off, len - off);
      if (w < 0 && errno == EPIPE) return; /* it stopped reading (a usage error) */
      REQUIRE(w > 0 || errno == EINTR || errno == EAGAIN, "write to the child: %s",
              strerror(errno));
      if (w > 0) off += (size_t)w;
    }
    pump(c, r, 0);
  }
}

/* Closes stdin, reads everything, waits (at most 60 s). */
void finish_child(child *c, result *r) {
  if (c->in >= 0) {
    close(c->in);
    c->in = -1;
  }
  double t0 = now_ms();
  while (pump(c, r, 100) > 0) {
    if (now_ms() - t0 > 60000) {
      kill(c->pid, SIGKILL);
      REQUIRE(0, "the child did not finish within 60 s");
    }
  }
  int st;
  REQUIRE(waitpid(c->pid, &st, 0) == c->pid, "waitpid: %s", strerror(errno));
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Runs the binary to the end; `input` (may be NULL) goes to its standard input. */
result run_bin(const char *binary, const char *const *argv, const char *input, size_t len) {
  result r;
  memset(&r, 0, sizeof r);
  sb_puts(&r.out, "");
  sb_puts(&r.err, "");
  signal(SIGPIPE, SIG_IGN);
  child c = spawn_bin(binary, argv, input != NULL);
  if (input) feed_all(&c, &r, input, len);
  finish_child(&c, &r);
  return r;
}

