/*
 * thread_id.c: see thread_id.h. Randomness comes from getrandom(2), which blocks only
 * before the kernel's pool is first initialised (never on a running system) and needs
 * no file descriptor, so it also works at the fd limit.
 */
#define _DEFAULT_SOURCE
#include "base/thread_id.h"

#include <errno.h>
#include <stdio.h>
#include <sys/random.h>

#include "base/error.h"

int ts_thread_id_valid(const char *t, size_t n) {
  if (!t || n == 0 || n > TS_THREAD_ID_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)t[i];
    if (c <= 0x20 || c == 0x7f) return 0;
  }
  return 1;
}

int ts_thread_id_new(char *buf, size_t cap) {
  if (!buf || cap < TS_THREAD_ID_GEN_LEN + 1) return TS_E_INVAL;
  unsigned char r[8];
  size_t got = 0;
  while (got < sizeof r) {
    ssize_t n = getrandom(r + got, sizeof r - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return TS_E_IO;
    }
    got += (size_t)n;
  }
  static const char hex[] = "0123456789abcdef";
  buf[0] = 't', buf[1] = 'h', buf[2] = '_';
  for (size_t i = 0; i < sizeof r; i++) {
    buf[3 + 2 * i] = hex[r[i] >> 4];
    buf[4 + 2 * i] = hex[r[i] & 15];
  }
  buf[TS_THREAD_ID_GEN_LEN] = '\0';
  return 0;
}
