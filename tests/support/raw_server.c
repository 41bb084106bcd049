/* raw_server.c: see raw_server.h. */
#define _GNU_SOURCE /* strcasestr */
#include "support/raw_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void answer(int c, const ts_raw_script *sc) {
  char buf[4096];
  size_t got = 0;
  while (got < sizeof buf - 1) { /* the request: its head and a short body are enough */
    ssize_t n = read(c, buf + got, sizeof buf - 1 - got);
    if (n <= 0) return;
    got += (size_t)n;
    buf[got] = '\0';
    char *end = strstr(buf, "\r\n\r\n");
    const char *cl = strcasestr(buf, "Content-Length:");
    if (end && (!cl || got >= (size_t)(end + 4 - buf) + strtoul(cl + 15, NULL, 10))) break;
  }
  size_t hl = strlen(sc->head);
  long us = sc->trickle_us;
  for (size_t i = 0; i < hl; i += us ? 1 : hl) {
    if (write(c, sc->head + i, us ? 1 : hl) <= 0) return;
    if (us) nanosleep(&(struct timespec){us / 1000000, us % 1000000 * 1000}, NULL);
  }
  size_t fl = sc->fill ? strlen(sc->fill) : 0;
  for (long r = 0; fl && (sc->reps < 0 || r < sc->reps); r++)
    if (write(c, sc->fill, fl) <= 0) return;
}

void ts_raw_server_start(ts_raw_server *s, const ts_raw_script *sc) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t l = sizeof a;
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 8) ||
      getsockname(lfd, (struct sockaddr *)&a, &l)) {
    perror("test support: raw server");
    abort();
  }
  fflush(NULL); /* nothing buffered is written twice */
  s->pid = fork();
  if (s->pid < 0) {
    perror("test support: fork");
    abort();
  }
  if (s->pid == 0) {
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
      int c = accept(lfd, NULL, NULL);
      if (c < 0) continue;
      answer(c, sc);
      close(c);
    }
  }
  close(lfd);
  s->port = ntohs(a.sin_port);
}

void ts_raw_server_stop(ts_raw_server *s) {
  if (s->pid > 0) {
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
  }
  s->pid = 0;
}
