/*
 * thread_id.c: see thread_id.h. Randomness comes from getrandom(2), which blocks only
 * before the kernel's pool is first initialised (never on a running system) and needs
 * no file descriptor, so it also works at the fd limit.
 *
 * One getrandom per id was one system call per proxied request in the gateway (a fresh
 * thread id for every request without X-Toolstream-Thread). Ids are now cut from a pool
 * of kernel random bytes refilled by one getrandom of about 4 KiB (500 ids a call): the
 * bytes are still the kernel's, each is handed out once and wiped from the pool as it is,
 * so ids stay as unpredictable as before.
 *
 * Fork. A child must never hand out the ids its parent will (two processes writing the
 * same fresh thread), so the pool lives in a page of its own mapped with MADV_WIPEONFORK:
 * the kernel gives a child that page zero-filled, which reads as "empty, unlocked", and
 * the child's first id refills it from the kernel. That holds for any fork (fork(2),
 * clone without CLONE_VM, a library's own), which an atfork handler would not see. Where
 * the kernel lacks MADV_WIPEONFORK (before 4.14) or the page cannot be mapped, every id
 * is its own getrandom, as before.
 *
 * Threads. The pool is shared by every thread under a spin lock that lives in the same
 * page (so a fork while another thread held it leaves the child's lock free); it is held
 * for an 8-byte copy, or for the refill's one system call.
 */
#define _DEFAULT_SOURCE
#include "base/thread_id.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/error.h"

/* The pool: exactly one page (4 KiB; a bigger page leaves the rest unused). */
#define POOL_PAGE 4096u
typedef struct {
  uint32_t lock;   /* 0: free */
  uint32_t filled; /* 0: empty (so too in a child: the page is wiped at fork) */
  uint32_t used;   /* bytes of r handed out since the last refill */
  unsigned char r[POOL_PAGE - 3 * sizeof(uint32_t)];
} pool;

static pool *the_pool; /* NULL: no pool, one getrandom per id */
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_init(void) {
#ifdef MADV_WIPEONFORK
  long page = sysconf(_SC_PAGESIZE);
  size_t len = page > (long)sizeof(pool) ? (size_t)page : sizeof(pool);
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  if (madvise(p, len, MADV_WIPEONFORK) != 0) { /* a kernel without it: no pool */
    munmap(p, len);
    return;
  }
  the_pool = p;
#endif
}

/* n bytes from the kernel: 0, or TS_E_IO. */
static int kernel_random(unsigned char *out, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t k = getrandom(out + got, n - got, 0);
    if (k < 0) {
      if (errno == EINTR) continue;
      return TS_E_IO;
    }
    got += (size_t)k;
  }
  return 0;
}

static void pool_lock(pool *p) {
  while (__atomic_exchange_n(&p->lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}

static void pool_unlock(pool *p) { __atomic_store_n(&p->lock, 0, __ATOMIC_RELEASE); }

/* n (<= 8) random bytes, from the pool when there is one. */
static int draw(unsigned char *out, size_t n) {
  pthread_once(&pool_once, pool_init);
  pool *p = the_pool;
  if (!p) return kernel_random(out, n);
  int rc = 0;
  pool_lock(p);
  if (!p->filled || p->used + n > sizeof p->r) {
    rc = kernel_random(p->r, sizeof p->r);
    p->used = 0;
    p->filled = rc == 0;
  }
  if (rc == 0) {
    memcpy(out, p->r + p->used, n);
    memset(p->r + p->used, 0, n); /* handed out once: not kept */
    p->used += (uint32_t)n;
  }
  pool_unlock(p);
  return rc;
}

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
  if (draw(r, sizeof r)) return TS_E_IO;
  static const char hex[] = "0123456789abcdef";
  buf[0] = 't', buf[1] = 'h', buf[2] = '_';
  for (size_t i = 0; i < sizeof r; i++) {
    buf[3 + 2 * i] = hex[r[i] >> 4];
    buf[4 + 2 * i] = hex[r[i] & 15];
  }
  buf[TS_THREAD_ID_GEN_LEN] = '\0';
  return 0;
}
