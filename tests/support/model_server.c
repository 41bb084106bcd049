/*
 * model_server.c (support): see model_server.h. The program itself is
 * tests/model_server.c, built beside the tests as TS_BINARY_DIR/model_server.
 */
#include "support/model_server.h"

#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void ts_test_server_start(ts_test_server *s, const char *dir, const char *tls_cert,
                          const char *tls_key) {
  memset(s, 0, sizeof *s);
  signal(SIGPIPE, SIG_IGN);
  const char *argv[] = {"model_server", dir, "--tls", tls_cert, tls_key, NULL};
  if (!tls_cert || !tls_key) argv[2] = NULL;
  s->proc = spawn_bin(TS_BINARY_DIR "/model_server", argv, 1);
  double t0 = now_ms();
  while (!strchr(sb_str(&s->out.out), '\n')) {
    if (now_ms() - t0 > 30000 || pump(&s->proc, &s->out, 100) == 0) {
      finish_child(&s->proc, &s->out);
      ck_abort_msg("model_server did not start (exit %d): %s", s->out.status,
                   sb_str(&s->out.err));
    }
  }
  s->port = atoi(sb_str(&s->out.out));
  if (s->port <= 0) ck_abort_msg("model_server printed no port: %s", sb_str(&s->out.out));
}

void ts_test_server_stop(ts_test_server *s) {
  if (!s->port) return;
  finish_child(&s->proc, &s->out);
  result_free(&s->out);
  s->port = 0;
}

int ts_test_head_value(const char *head, const char *name, char *out, size_t cap) {
  size_t nl = strlen(name);
  for (const char *l = head; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (!strncasecmp(l, name, nl) && l[nl] == ':' && l[nl + 1] == ' ') {
      const char *v = l + nl + 2, *e = strchr(v, '\n');
      size_t n = e ? (size_t)(e - v) : strlen(v);
      if (n >= cap) return 0;
      memcpy(out, v, n);
      out[n] = '\0';
      return 1;
    }
  }
  return 0;
}

int ts_test_head_uri(const char *head, char *out, size_t cap) {
  const char *sp = head ? strchr(head, ' ') : NULL;
  if (!sp) return 0;
  const char *e = strchr(sp + 1, '\n');
  size_t n = e ? (size_t)(e - sp - 1) : strlen(sp + 1);
  if (n >= cap) return 0;
  memcpy(out, sp + 1, n);
  out[n] = '\0';
  return 1;
}
