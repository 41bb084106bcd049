/*
 * thread_id_test.c: the one thread-id rule and fresh ids (base/thread_id.h).
 *
 * Fresh ids: unique across threads, no system call per id (this executable defines
 * getrandom, a plain system call that counts itself, which thread_id.c's calls resolve
 * to), and a forked child never hands out an id its parent does.
 */
#define _GNU_SOURCE /* syscall */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "base/thread_id.h"
#include "support/runner.h"

typedef struct {
  int line;
  const char *label;
  const char *id;
  size_t len; /* 0: strlen(id) */
  int want;
} row;

static char at_limit[TS_THREAD_ID_MAX + 2];

static const row rows[] = {
    {__LINE__, "one byte", "t", 0, 1},
    {__LINE__, "a generated shape", "th_0123456789abcdef", 0, 1},
    {__LINE__, "punctuation and slashes", "org/team:run-7.a_b", 0, 1},
    {__LINE__, "UTF-8 bytes are allowed", "caf\xc3\xa9", 0, 1},
    {__LINE__, "empty", "", 0, 0},
    {__LINE__, "a space (ends the id on the bus)", "a b", 0, 0},
    {__LINE__, "a leading space", " a", 0, 0},
    {__LINE__, "a tab", "a\tb", 0, 0},
    {__LINE__, "a newline", "a\n", 0, 0},
    {__LINE__, "a NUL inside", "a\0b", 3, 0},
    {__LINE__, "control 0x1f", "a\x1f", 0, 0},
    {__LINE__, "DEL", "a\x7f", 0, 0},
};

START_TEST(test_rows) {
  const row *r = &rows[_i];
  size_t len = r->len ? r->len : strlen(r->id);
  ck_assert_msg(ts_thread_id_valid(r->id, len) == r->want, "line %d (%s): want %d", r->line,
                r->label, r->want);
}
END_TEST

START_TEST(test_limit) {
  memset(at_limit, 'x', sizeof at_limit);
  ck_assert_int_eq(ts_thread_id_valid(at_limit, TS_THREAD_ID_MAX), 1);
  ck_assert_int_eq(ts_thread_id_valid(at_limit, TS_THREAD_ID_MAX + 1), 0);
  ck_assert_int_eq(ts_thread_id_valid(NULL, 3), 0);
}
END_TEST

START_TEST(test_new) {
  char a[TS_THREAD_ID_GEN_LEN + 1], b[TS_THREAD_ID_GEN_LEN + 1];
  ck_assert_int_eq(ts_thread_id_new(a, sizeof a), TS_E_OK);
  ck_assert_int_eq(ts_thread_id_new(b, sizeof b), TS_E_OK);
  ck_assert_uint_eq(strlen(a), TS_THREAD_ID_GEN_LEN);
  ck_assert(!strncmp(a, "th_", 3));
  for (size_t i = 3; i < TS_THREAD_ID_GEN_LEN; i++)
    ck_assert_msg(strchr("0123456789abcdef", a[i]), "%s: not lowercase hex", a);
  ck_assert_int_eq(ts_thread_id_valid(a, strlen(a)), 1);
  ck_assert_str_ne(a, b); /* 64 random bits: equal only by a broken source */
  char small[TS_THREAD_ID_GEN_LEN];
  memset(small, '#', sizeof small);
  ck_assert_int_eq(ts_thread_id_new(small, sizeof small), TS_E_INVAL);
  ck_assert_int_eq(small[0], '#'); /* nothing written */
  ck_assert_int_eq(ts_thread_id_new(NULL, 64), TS_E_INVAL);
}
END_TEST

static unsigned getrandom_calls;

ssize_t getrandom(void *buf, size_t n, unsigned flags) {
  __atomic_add_fetch(&getrandom_calls, 1, __ATOMIC_RELAXED);
  return (ssize_t)syscall(SYS_getrandom, buf, n, flags);
}

#define IDS 1000
typedef char id_t_[TS_THREAD_ID_GEN_LEN + 1];

static int cmp_id(const void *a, const void *b) { return memcmp(a, b, sizeof(id_t_)); }

/* n ids, sorted; fails on a duplicate among them. */
static void make_ids(id_t_ *ids, size_t n) {
  for (size_t i = 0; i < n; i++) ck_assert_int_eq(ts_thread_id_new(ids[i], sizeof ids[i]), TS_E_OK);
  qsort(ids, n, sizeof ids[0], cmp_id);
  for (size_t i = 1; i < n; i++) ck_assert_msg(strcmp(ids[i - 1], ids[i]), "%s twice", ids[i]);
}

/* 1,000 ids take at most 3 getrandom calls (a pool of ~4 KiB, 8 bytes an id), not one
 * each; all distinct and well formed. */
START_TEST(test_no_system_call_per_id) {
  static id_t_ ids[IDS];
  unsigned before = __atomic_load_n(&getrandom_calls, __ATOMIC_RELAXED);
  make_ids(ids, IDS);
  unsigned calls = __atomic_load_n(&getrandom_calls, __ATOMIC_RELAXED) - before;
  ck_assert_msg(calls >= 1 && calls <= 3, "%u getrandom calls for %d ids", calls, IDS);
  for (size_t i = 0; i < IDS; i++) ck_assert_int_eq(ts_thread_id_valid(ids[i], strlen(ids[i])), 1);
}
END_TEST

static void *thread_ids(void *arg) {
  make_ids(arg, IDS);
  return NULL;
}

/* Four threads at once: no id twice among all of them. */
START_TEST(test_threads) {
  static id_t_ ids[4 * IDS];
  pthread_t th[4];
  for (int k = 0; k < 4; k++) ck_assert_int_eq(pthread_create(&th[k], NULL, thread_ids, ids + k * IDS), 0);
  for (int k = 0; k < 4; k++) pthread_join(th[k], NULL);
  qsort(ids, 4 * IDS, sizeof ids[0], cmp_id);
  for (size_t i = 1; i < 4 * IDS; i++) ck_assert_msg(strcmp(ids[i - 1], ids[i]), "%s twice", ids[i]);
}
END_TEST

/* After fork, parent and child each draw ids: none in common (a pool copied into the
 * child would give it exactly the parent's next ids), and the child refilled from the
 * kernel. */
START_TEST(test_fork) {
  enum { N = 100 };
  static id_t_ mine[N], theirs[N];
  id_t_ first;
  ck_assert_int_eq(ts_thread_id_new(first, sizeof first), TS_E_OK); /* the pool is full now */
  int fd[2];
  ck_assert_int_eq(pipe(fd), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(fd[0]);
    unsigned before = getrandom_calls;
    for (int i = 0; i < N; i++)
      if (ts_thread_id_new(theirs[i], sizeof theirs[i])) _exit(2);
    unsigned calls = getrandom_calls - before;
    if (write(fd[1], theirs, sizeof theirs) != (ssize_t)sizeof theirs) _exit(3);
    if (write(fd[1], &calls, sizeof calls) != (ssize_t)sizeof calls) _exit(3);
    _exit(0);
  }
  close(fd[1]);
  for (int i = 0; i < N; i++) ck_assert_int_eq(ts_thread_id_new(mine[i], sizeof mine[i]), TS_E_OK);
  unsigned calls = 0;
  size_t got = 0;
  char *dst = (char *)theirs;
  while (got < sizeof theirs) {
    ssize_t k = read(fd[0], dst + got, sizeof theirs - got);
    ck_assert_int_gt(k, 0);
    got += (size_t)k;
  }
  ck_assert_int_eq(read(fd[0], &calls, sizeof calls), (ssize_t)sizeof calls);
  close(fd[0]);
  int st;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
  ck_assert_msg(calls >= 1, "the child drew its ids without the kernel: a copy of the parent's pool");
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(ts_thread_id_valid(theirs[i], strnlen(theirs[i], sizeof theirs[i])), 1);
    ck_assert_msg(strcmp(theirs[i], first), "the child repeated the parent's %s", first);
    for (int j = 0; j < N; j++) ck_assert_msg(strcmp(theirs[i], mine[j]), "parent and child both drew %s", mine[j]);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("thread_id");
  TCase *tc = tcase_create("core");
  tcase_add_loop_test(tc, test_rows, 0, (int)(sizeof rows / sizeof rows[0]));
  tcase_add_test(tc, test_limit);
  tcase_add_test(tc, test_new);
  tcase_add_test(tc, test_no_system_call_per_id);
  tcase_add_test(tc, test_threads);
  tcase_add_test(tc, test_fork);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
