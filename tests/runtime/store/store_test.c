/*
 * store_test.c: the durable store (runtime/store.c): where it lives and how it is
 * created, messages and their seqs, the atomic tool-result commit, calls caught by a
 * crash (a child that SIGKILLs itself, and one killed from outside at random moments),
 * events for replay, reopening, schema migration and refusal, bad inputs.
 * Every test works in a fresh directory of its own (support/tempdir.h).
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "store/store.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"

/* ---- helpers ------------------------------------------------------------------------ */

static char tmp[256];

static void setup(void) {
  ts_test_tempdir(tmp, sizeof tmp, "store-test");
  unsetenv("TOOLSTREAM_DATA_DIR");
  unsetenv("XDG_DATA_HOME");
}

static void teardown(void) { ts_test_rm_rf(tmp); }

static const char *sub(const char *rel) {
  static char p[2][512];
  static int k;
  k ^= 1;
  snprintf(p[k], sizeof p[k], "%s/%s", tmp, rel);
  return p[k];
}

static ts_store *open_ok(const char *dir) {
  ts_store *s = NULL;
  char why[512];
  int r = ts_store_open(dir, &s, why, sizeof why);
  ck_assert_msg(r == 0, "open %s: %s (%s)", dir ? dir : "(default)", why, ts_err_name(r));
  ck_assert_ptr_nonnull(s);
  ck_assert_str_eq(ts_store_errmsg(s), "");
  return s;
}

typedef struct {
  int n;
  ts_store_message m[16];
  char content[16][64];
  size_t content_len[16];
  char call_id[16][32];
  char tool[16][32];
} msgs;

static int collect_msg(void *user, const ts_store_message *m) {
  msgs *c = user;
  if (c->n < 16) {
    c->m[c->n] = *m;
    size_t n = m->content_len < 63 ? m->content_len : 63;
    memcpy(c->content[c->n], m->content, n);
    c->content[c->n][n] = '\0';
    c->content_len[c->n] = m->content_len;
    snprintf(c->call_id[c->n], 32, "%s", m->tool_call_id ? m->tool_call_id : "(null)");
    snprintf(c->tool[c->n], 32, "%s", m->tool_name ? m->tool_name : "(null)");
  }
  c->n++;
  return 0;
}

typedef struct {
  int n;
  ts_store_call c[8];
  char call_id[8][32], tool[8][32], args[8][64];
} calls;

static int collect_call(void *user, const ts_store_call *c) {
  calls *k = user;
  if (k->n < 8) {
    k->c[k->n] = *c;
    snprintf(k->call_id[k->n], 32, "%s", c->call_id);
    snprintf(k->tool[k->n], 32, "%s", c->tool);
    snprintf(k->args[k->n], 64, "%.*s", (int)c->args_len, c->args);
  }
  k->n++;
  return 0;
}

typedef struct {
  int n;
  uint64_t seq[64];
  char json[64][48];
} evs;

static int collect_ev(void *user, uint64_t seq, const char *json, size_t len) {
  evs *e = user;
  if (e->n < 64) {
    e->seq[e->n] = seq;
    snprintf(e->json[e->n], 48, "%.*s", (int)len, json);
  }
  e->n++;
  return 0;
}

static int count_msgs(ts_store *s, const char *thread) {
  msgs c = {0};
  int n = ts_store_messages(s, thread, 0, collect_msg, &c);
  ck_assert_int_eq(n, c.n);
  return n;
}

static int count_unfinished(ts_store *s, const char *thread, calls *k) {
  memset(k, 0, sizeof *k);
  int n = ts_store_unfinished_calls(s, thread, collect_call, k);
  ck_assert_int_eq(n, k->n);
  return n;
}

/* ---- where the store lives ------------------------------------------------------------- */

START_TEST(test_default_dir) {
  char buf[512];
  setenv("HOME", "/home/u", 1);
  ck_assert_int_eq(ts_store_default_dir(buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "/home/u/.local/share/toolstream");

  setenv("XDG_DATA_HOME", "/xdg/data", 1);
  ck_assert_int_eq(ts_store_default_dir(buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "/xdg/data/toolstream");

  setenv("XDG_DATA_HOME", "/xdg/data/", 1); /* trailing slash */
  ck_assert_int_eq(ts_store_default_dir(buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "/xdg/data/toolstream");

  setenv("XDG_DATA_HOME", "relative/data", 1); /* ignored, as XDG says */
  ck_assert_int_eq(ts_store_default_dir(buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "/home/u/.local/share/toolstream");

  setenv("TOOLSTREAM_DATA_DIR", "/explicit/here", 1); /* beats both */
  setenv("XDG_DATA_HOME", "/xdg/data", 1);
  ck_assert_int_eq(ts_store_default_dir(buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "/explicit/here");

  setenv("TOOLSTREAM_DATA_DIR", "", 1); /* empty = unset */
  ck_assert_int_eq(ts_store_default_dir(buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "/xdg/data/toolstream");

  ck_assert_int_eq(ts_store_default_dir(buf, 8), TS_E_LIMIT);
  ck_assert_str_eq(buf, "");
  ck_assert_int_eq(ts_store_default_dir(NULL, 8), TS_E_INVAL);

  unsetenv("TOOLSTREAM_DATA_DIR");
  unsetenv("XDG_DATA_HOME");
  unsetenv("HOME");
  ck_assert_int_eq(ts_store_default_dir(buf, sizeof buf), TS_E_STORE_NO_DIR);
  ts_store *s = NULL;
  char why[256];
  ck_assert_int_eq(ts_store_open(NULL, &s, why, sizeof why), TS_E_STORE_NO_DIR);
  ck_assert_ptr_null(s);
  ck_assert_ptr_nonnull(strstr(why, "TOOLSTREAM_DATA_DIR"));
}
END_TEST

START_TEST(test_open_creates_private_dirs) {
  const char *dir = sub("a/b/c");
  ts_store *s = open_ok(dir);
  struct stat sb;
  const char *levels[] = {"a", "a/b", "a/b/c"};
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(stat(sub(levels[i]), &sb), 0);
    ck_assert_msg(S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700, "%s mode %o",
                  levels[i], (unsigned)(sb.st_mode & 0777));
  }
  ck_assert_int_eq(stat(sub("a/b/c/toolstream.db"), &sb), 0);
  ck_assert_int_eq(sb.st_mode & 0777, 0600);
  ck_assert_str_eq(ts_store_path(s), sub("a/b/c/toolstream.db"));
  ck_assert_int_eq(ts_store_schema_version(s), TS_STORE_SCHEMA_VERSION);
  ts_store_close(s);

  /* NULL dir: the environment variable, then XDG_DATA_HOME. */
  setenv("TOOLSTREAM_DATA_DIR", sub("env"), 1);
  s = open_ok(NULL);
  ck_assert_str_eq(ts_store_path(s), sub("env/toolstream.db"));
  ts_store_close(s);
  unsetenv("TOOLSTREAM_DATA_DIR");
  setenv("XDG_DATA_HOME", sub("xdg"), 1);
  s = open_ok(NULL);
  ck_assert_str_eq(ts_store_path(s), sub("xdg/toolstream/toolstream.db"));
  ck_assert_int_eq(stat(sub("xdg/toolstream"), &sb), 0);
  ck_assert_int_eq(sb.st_mode & 0777, 0700);
  ts_store_close(s);
  unsetenv("XDG_DATA_HOME");
  setenv("HOME", sub("home"), 1);
  s = open_ok(NULL);
  ck_assert_str_eq(ts_store_path(s), sub("home/.local/share/toolstream/toolstream.db"));
  ts_store_close(s);

  /* A directory path that is a file. */
  int fd = open(sub("file"), O_CREAT | O_WRONLY, 0600);
  ck_assert_int_ge(fd, 0);
  close(fd);
  char why[512];
  s = NULL;
  ck_assert_int_eq(ts_store_open(sub("file"), &s, why, sizeof why), TS_E_STORE_OPEN);
  ck_assert_ptr_null(s);
  ck_assert_ptr_nonnull(strstr(why, "file"));
  ck_assert_int_eq(ts_store_open(sub("file/x"), &s, why, sizeof why), TS_E_STORE_OPEN);
}
END_TEST

/* ---- messages ------------------------------------------------------------------------- */

START_TEST(test_messages) {
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_thread_exists(s, "t1"), 0);
  ck_assert_int_eq(ts_store_thread_create(s, "t1", "{\"model\":\"m\"}"), 0);
  ck_assert_int_eq(ts_store_thread_exists(s, "t1"), 1);
  ck_assert_int_eq(ts_store_thread_create(s, "t1", NULL), TS_E_STORE_THREAD_EXISTS);
  ck_assert_ptr_nonnull(strstr(ts_store_errmsg(s), "t1"));
  ck_assert_int_eq(ts_store_thread_create(s, "t2", "{not json"), TS_E_INVAL);
  ck_assert_int_eq(ts_store_thread_exists(s, "t2"), 0);
  ck_assert_int_eq(ts_store_thread_create(s, "t2", NULL), 0);

  uint64_t seq = 0;
  ck_assert_int_eq(ts_store_append_message(s, "t1", TS_STORE_SYSTEM, "be brief", 8, NULL,
                                           NULL, 0, &seq), 0);
  ck_assert_uint_eq(seq, 1);
  ck_assert_int_eq(ts_store_append_message(s, "t1", TS_STORE_USER, "hi", 2, NULL, NULL, 0,
                                           &seq), 0);
  ck_assert_uint_eq(seq, 2);
  ck_assert_int_eq(ts_store_append_message(s, "t2", TS_STORE_USER, "other", 5, NULL, NULL,
                                           0, &seq), 0);
  ck_assert_uint_eq(seq, 1); /* per thread */
  ck_assert_int_eq(ts_store_append_message(s, "t1", TS_STORE_ASSISTANT,
                                           "{\"tool_calls\":[]}", 17, NULL, NULL, 0, &seq), 0);
  ck_assert_uint_eq(seq, 3);
  ck_assert_int_eq(ts_store_append_message(s, "t1", TS_STORE_TOOL, "a\0b", 3, "call_1", "grep",
                                           7 /* non-zero = error */, &seq), 0);
  ck_assert_uint_eq(seq, 4);
  ck_assert_int_eq(ts_store_append_message(s, "t1", TS_STORE_USER, NULL, 0, NULL, NULL, 0,
                                           NULL), 0); /* empty content */

  msgs c = {0};
  ck_assert_int_eq(ts_store_messages(s, "t1", 0, collect_msg, &c), 5);
  for (int i = 0; i < 5; i++) ck_assert_uint_eq(c.m[i].seq, (uint64_t)i + 1);
  ck_assert_int_eq(c.m[0].role, TS_STORE_SYSTEM);
  ck_assert_str_eq(c.content[0], "be brief");
  ck_assert_str_eq(c.call_id[0], "(null)");
  ck_assert_int_eq(c.m[2].role, TS_STORE_ASSISTANT);
  ck_assert_int_eq(c.m[3].role, TS_STORE_TOOL);
  ck_assert_uint_eq(c.content_len[3], 3);
  ck_assert_int_eq(memcmp(c.content[3], "a\0b", 3), 0);
  ck_assert_str_eq(c.call_id[3], "call_1");
  ck_assert_str_eq(c.tool[3], "grep");
  ck_assert_int_eq(c.m[3].is_error, 1);
  ck_assert_int_eq(c.m[1].is_error, 0);
  ck_assert_uint_eq(c.content_len[4], 0);
  ck_assert_int_gt(c.m[0].created_at_ms, 1600000000000LL);

  memset(&c, 0, sizeof c);
  ck_assert_int_eq(ts_store_messages(s, "t1", 3, collect_msg, &c), 2);
  ck_assert_uint_eq(c.m[0].seq, 4);
  ck_assert_int_eq(ts_store_messages(s, "nobody", 0, collect_msg, &c), 0);

  /* A thread that was never created. */
  ck_assert_int_eq(ts_store_append_message(s, "t9", TS_STORE_USER, "x", 1, NULL, NULL, 0,
                                           &seq), TS_E_STORE_NO_THREAD);
  ck_assert_ptr_nonnull(strstr(ts_store_errmsg(s), "\"t9\""));
  ck_assert_int_eq(count_msgs(s, "t9"), 0);
  ts_store_close(s);
}
END_TEST

/* ---- tool calls -------------------------------------------------------------------------- */

START_TEST(test_call_lifecycle) {
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  uint64_t seq = 0;
  ck_assert_int_eq(ts_store_append_message(s, "t", TS_STORE_USER, "go", 2, NULL, NULL, 0,
                                           &seq), 0);
  uint32_t attempt = 0;
  const char *args = "{\"q\":\"x\"}";
  ck_assert_int_eq(ts_store_call_started(s, "t", 1, 0, "call_a", "search", args,
                                         strlen(args), &attempt), 0);
  ck_assert_uint_eq(attempt, 1);
  /* Gemini gives no ids: a second call with "" in the same turn is its own record. */
  ck_assert_int_eq(ts_store_call_started(s, "t", 1, 1, "", "fetch", "{}", 2, NULL), 0);
  calls k;
  ck_assert_int_eq(count_unfinished(s, "t", &k), 2);
  ck_assert_str_eq(k.call_id[0], "call_a");
  ck_assert_str_eq(k.tool[0], "search");
  ck_assert_str_eq(k.args[0], args);
  ck_assert_uint_eq(k.c[1].idx, 1);
  ck_assert_str_eq(k.call_id[1], "");

  ck_assert_int_eq(ts_store_call_finished(s, "t", 1, 0, "found 3", 7, 0, &seq), 0);
  ck_assert_uint_eq(seq, 2);
  ck_assert_int_eq(count_unfinished(s, "t", &k), 1);
  ck_assert_uint_eq(k.c[0].idx, 1);

  /* A result is committed once. */
  ck_assert_int_eq(ts_store_call_finished(s, "t", 1, 0, "again", 5, 0, &seq),
                   TS_E_STORE_CALL_FINISHED);
  ck_assert_uint_eq(seq, 2);
  ck_assert_ptr_nonnull(strstr(ts_store_errmsg(s), "already finished"));
  ck_assert_int_eq(ts_store_call_started(s, "t", 1, 0, "call_a", "search", args,
                                         strlen(args), NULL), TS_E_STORE_CALL_FINISHED);
  ck_assert_int_eq(ts_store_call_finished(s, "t", 7, 7, "x", 1, 0, NULL), TS_E_STORE_NO_CALL);
  ck_assert_int_eq(count_msgs(s, "t"), 2);

  /* Re-running an unfinished call counts the attempt; a different call there is refused. */
  ck_assert_int_eq(ts_store_call_started(s, "t", 1, 1, "", "fetch", "{}", 2, &attempt), 0);
  ck_assert_uint_eq(attempt, 2);
  ck_assert_int_eq(ts_store_call_started(s, "t", 1, 1, "other", "fetch", "{}", 2, &attempt),
                   TS_E_INVAL);
  ck_assert_int_eq(count_unfinished(s, "t", &k), 1);
  ck_assert_uint_eq(k.c[0].attempts, 2);

  /* Arguments must be JSON; the thread must exist. */
  ck_assert_int_eq(ts_store_call_started(s, "t", 2, 0, "c", "x", "{oops", 5, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_call_started(s, "t0", 2, 0, "c", "x", "{}", 2, NULL),
                   TS_E_STORE_NO_THREAD);

  ck_assert_int_eq(ts_store_call_finished(s, "t", 1, 1, "interrupted", 11, 1, &seq), 0);
  ck_assert_uint_eq(seq, 3);
  ck_assert_int_eq(count_unfinished(s, "t", &k), 0);

  msgs c = {0};
  ck_assert_int_eq(ts_store_messages(s, "t", 1, collect_msg, &c), 2);
  ck_assert_int_eq(c.m[0].role, TS_STORE_TOOL);
  ck_assert_str_eq(c.content[0], "found 3");
  ck_assert_str_eq(c.call_id[0], "call_a"); /* copied from the start record */
  ck_assert_str_eq(c.tool[0], "search");
  ck_assert_int_eq(c.m[0].is_error, 0);
  ck_assert_str_eq(c.call_id[1], "");
  ck_assert_str_eq(c.tool[1], "fetch");
  ck_assert_int_eq(c.m[1].is_error, 1);
  ts_store_close(s);
}
END_TEST

/* The child starts a call and SIGKILLs itself before finishing it. */
START_TEST(test_crash_between_start_and_finish) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    ts_store *s = NULL;
    if (ts_store_open(tmp, &s, NULL, 0) || ts_store_thread_create(s, "t", NULL) ||
        ts_store_call_started(s, "t", 0, 0, "c0", "echo", "{\"n\":0}", 7, NULL) ||
        ts_store_call_finished(s, "t", 0, 0, "r0", 2, 0, NULL) ||
        ts_store_call_started(s, "t", 0, 1, "c1", "rm", "{\"n\":1}", 7, NULL))
      _exit(3);
    kill(getpid(), SIGKILL);
    _exit(4);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %d", status);

  ts_store *s = open_ok(tmp);
  calls k;
  ck_assert_int_eq(count_unfinished(s, "t", &k), 1);
  ck_assert_uint_eq(k.c[0].turn, 0);
  ck_assert_uint_eq(k.c[0].idx, 1);
  ck_assert_str_eq(k.call_id[0], "c1");
  ck_assert_str_eq(k.tool[0], "rm");
  ck_assert_str_eq(k.args[0], "{\"n\":1}");
  msgs c = {0};
  ck_assert_int_eq(ts_store_messages(s, "t", 0, collect_msg, &c), 1);
  ck_assert_str_eq(c.content[0], "r0");
  /* Resume: settle it as interrupted. */
  uint64_t seq;
  ck_assert_int_eq(ts_store_call_finished(s, "t", 0, 1, "interrupted", 11, 1, &seq), 0);
  ck_assert_uint_eq(seq, 2);
  ck_assert_int_eq(count_unfinished(s, "t", &k), 0);
  ts_store_close(s);
}
END_TEST

/* Processes that open a store that does not exist yet all at once (two `run`s started
 * together on a fresh data directory): each must get it, none may take the file being
 * created for another program's ("not a toolstream database": the header's
 * application_id read before another process's first migration committed, user_version
 * after). Each round releases its children together from one pipe. */
START_TEST(test_fresh_store_opened_together) {
  enum { ROUNDS = 40, PROCS = 6 };
  int bad = 0;
  for (int round = 0; round < ROUNDS; round++) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/fresh-%d", tmp, round);
    int gate[2];
    ck_assert_int_eq(pipe(gate), 0);
    pid_t kids[PROCS];
    for (int i = 0; i < PROCS; i++) {
      kids[i] = fork();
      ck_assert_int_ge(kids[i], 0);
      if (kids[i] == 0) {
        close(gate[1]);
        char b;
        if (read(gate[0], &b, 1) != 0) _exit(5); /* released by the close */
        ts_store *s = NULL;
        char why[256] = "";
        int r = ts_store_open(dir, &s, why, sizeof why);
        if (r) {
          fprintf(stderr, "round %d process %d: %s\n", round, i, why);
          _exit(3);
        }
        ts_store_close(s);
        _exit(0);
      }
    }
    close(gate[0]);
    close(gate[1]);
    for (int i = 0; i < PROCS; i++) {
      int status;
      ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
      if (!WIFEXITED(status) || WEXITSTATUS(status)) bad++;
    }
  }
  ck_assert_msg(bad == 0, "%d of %d opens of a fresh store failed", bad, ROUNDS * PROCS);
}
END_TEST

/* A child runs calls back to back (start, finish, start, ...) and is SIGKILLed from
 * outside at a random moment; afterwards the dispatcher's invariants hold. */
/* One round of a kill test: a fresh store in `dir` with thread "t", a child process that
 * opens it, says it is ready and runs `work` on it until killed; the parent kills it a
 * random 0..max_us after ready and reaps it. Returns the child's wait status. */
static int kill_round(const char *dir, void (*work)(ts_store *s), long max_us) {
  ts_store *s = open_ok(dir);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  ts_store_close(s);
  int pfd[2];
  ck_assert_int_eq(pipe(pfd), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(pfd[0]);
    if (ts_store_open(dir, &s, NULL, 0)) _exit(3);
    if (write(pfd[1], "r", 1) != 1) _exit(3);
    work(s);
    _exit(0);
  }
  close(pfd[1]);
  char b;
  ck_assert_int_eq(read(pfd[0], &b, 1), 1);
  close(pfd[0]);
  long us = rand() % max_us;
  struct timespec d = {us / 1000000L, (us % 1000000L) * 1000L};
  nanosleep(&d, NULL);
  kill(pid, SIGKILL);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  return status;
}

static void calls_forever(ts_store *s) {
  for (uint32_t i = 0;; i++) {
    char res[32];
    int n = snprintf(res, sizeof res, "result %u", (unsigned)i);
    if (ts_store_call_started(s, "t", i, 0, "c", "tool", "{}", 2, NULL) ||
        ts_store_call_finished(s, "t", i, 0, res, (size_t)n, 0, NULL))
      _exit(5);
    ts_store_append_event(s, "t", i + 1, "{\"v\":1}", 7);
  }
}

START_TEST(test_killed_at_random_points) {
  srand((unsigned)time(NULL) ^ (unsigned)getpid());
  int results = 0, in_flight = 0;
  for (int round = 0; round < 6; round++) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/r%d", tmp, round);
    int status = kill_round(dir, calls_forever, 40000); /* 0..40 ms */
    ck_assert_msg(WIFSIGNALED(status), "child exited with %d", WEXITSTATUS(status));

    ts_store *s = open_ok(dir);
    msgs c = {0};
    int n = ts_store_messages(s, "t", 0, collect_msg, &c);
    ck_assert_int_ge(n, 0);
    for (int i = 0; i < n && i < 16; i++) { /* every committed result intact */
      char want[32];
      snprintf(want, sizeof want, "result %d", i);
      ck_assert_str_eq(c.content[i], want);
      ck_assert_uint_eq(c.m[i].seq, (uint64_t)i + 1);
    }
    calls k;
    int open_calls = count_unfinished(s, "t", &k);
    results += n;
    in_flight += open_calls;
    ck_assert_int_le(open_calls, 1); /* at most the one in flight */
    if (open_calls) ck_assert_uint_eq(k.c[0].turn, (uint32_t)n); /* the next one */
    /* Every call but the one in flight has its result: finish it and check the count. */
    if (open_calls) ck_assert_int_eq(ts_store_call_finished(s, "t", (uint32_t)n, 0, "x", 1,
                                                            1, NULL), 0);
    ck_assert_int_eq(count_msgs(s, "t"), n + open_calls);
    uint64_t last;
    ck_assert_int_eq(ts_store_last_event_seq(s, "t", &last), 0);
    ck_assert_uint_le(last, (uint64_t)n);
    ck_assert_uint_ge(last + 1, (uint64_t)n);
    ts_store_close(s);
  }
  fprintf(stderr, "store: 6 kills: %d results intact, %d calls caught in flight\n", results,
          in_flight);
}
END_TEST

/* ---- events --------------------------------------------------------------------------------- */

static int stop_at_2(void *user, uint64_t seq, const char *json, size_t len) {
  (void)json;
  (void)len;
  *(int *)user += 1;
  return seq == 2;
}

static ts_store *reentry_store;
static int reentry_result;
static int reenter(void *user, uint64_t seq, const char *json, size_t len) {
  (void)user;
  (void)seq;
  (void)json;
  (void)len;
  uint64_t last;
  reentry_result = ts_store_last_event_seq(reentry_store, "t", &last);
  ts_store_close(reentry_store); /* refused: must not free under the iteration */
  return 0;
}

START_TEST(test_events) {
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  uint64_t last = 99;
  ck_assert_int_eq(ts_store_last_event_seq(s, "t", &last), 0);
  ck_assert_uint_eq(last, 0);
  for (int i = 1; i <= 10; i++) {
    char j[32];
    int n = snprintf(j, sizeof j, "{\"seq\":%d}", i);
    ck_assert_int_eq(ts_store_append_event(s, "t", (uint64_t)i, j, (size_t)n), 0);
  }
  ck_assert_int_eq(ts_store_append_event(s, "t", 10, "{}", 2), TS_E_STORE_SEQ);
  ck_assert_int_eq(ts_store_append_event(s, "t", 5, "{}", 2), TS_E_STORE_SEQ);
  ck_assert_int_eq(ts_store_append_event(s, "t", 0, "{}", 2), TS_E_INVAL);
  ck_assert_int_eq(ts_store_append_event(s, "t", 11, "{\"a\":", 5), TS_E_INVAL);
  ck_assert_int_eq(ts_store_append_event(s, "none", 1, "{}", 2), TS_E_STORE_NO_THREAD);
  ck_assert_int_eq(ts_store_append_event(s, "t", 20, "{\"gap\":1}", 9), 0); /* gaps allowed */
  ck_assert_int_eq(ts_store_last_event_seq(s, "t", &last), 0);
  ck_assert_uint_eq(last, 20);
  ck_assert_int_eq(ts_store_last_event_seq(s, "none", &last), 0);
  ck_assert_uint_eq(last, 0);

  evs e = {0};
  ck_assert_int_eq(ts_store_events_after(s, "t", 3, 4, collect_ev, &e), 4);
  for (int i = 0; i < 4; i++) ck_assert_uint_eq(e.seq[i], (uint64_t)i + 4);
  ck_assert_str_eq(e.json[0], "{\"seq\":4}");
  memset(&e, 0, sizeof e);
  ck_assert_int_eq(ts_store_events_after(s, "t", 0, 0, collect_ev, &e), 11);
  ck_assert_uint_eq(e.seq[10], 20);
  memset(&e, 0, sizeof e);
  ck_assert_int_eq(ts_store_events_after(s, "t", 20, 0, collect_ev, &e), 0);
  ck_assert_int_eq(ts_store_events_after(s, "t", UINT64_MAX, 5, collect_ev, &e), 0);

  int calls_n = 0;
  ck_assert_int_eq(ts_store_events_after(s, "t", 0, 0, stop_at_2, &calls_n), TS_E_ABORTED);
  ck_assert_int_eq(calls_n, 2);
  /* The cached statement was reset: the next query works. */
  memset(&e, 0, sizeof e);
  ck_assert_int_eq(ts_store_events_after(s, "t", 8, 0, collect_ev, &e), 3);

  reentry_store = s;
  ck_assert_int_eq(ts_store_events_after(s, "t", 9, 1, reenter, NULL), 1);
  ck_assert_int_eq(reentry_result, TS_E_STORE_REENTRANT);
  ck_assert_int_eq(ts_store_last_event_seq(s, "t", &last), 0); /* usable again */
  ts_store_close(s);
}
END_TEST

/* ---- durability across opens, migrations ----------------------------------------------------- */

START_TEST(test_reopen_keeps_everything) {
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_thread_create(s, "t", "{\"a\":1}"), 0);
  ck_assert_int_eq(ts_store_append_message(s, "t", TS_STORE_USER, "u", 1, NULL, NULL, 0, NULL), 0);
  ck_assert_int_eq(ts_store_call_started(s, "t", 0, 0, "c", "x", "{}", 2, NULL), 0);
  ck_assert_int_eq(ts_store_call_finished(s, "t", 0, 0, "r", 1, 0, NULL), 0);
  ck_assert_int_eq(ts_store_call_started(s, "t", 0, 1, "d", "y", "[]", 2, NULL), 0);
  ck_assert_int_eq(ts_store_append_event(s, "t", 1, "{}", 2), 0);
  ts_store_close(s);

  s = open_ok(tmp);
  ck_assert_int_eq(ts_store_schema_version(s), TS_STORE_SCHEMA_VERSION);
  ck_assert_int_eq(ts_store_thread_exists(s, "t"), 1);
  ck_assert_int_eq(count_msgs(s, "t"), 2);
  calls k;
  ck_assert_int_eq(count_unfinished(s, "t", &k), 1);
  ck_assert_str_eq(k.call_id[0], "d");
  uint64_t last, seq;
  ck_assert_int_eq(ts_store_last_event_seq(s, "t", &last), 0);
  ck_assert_uint_eq(last, 1);
  ck_assert_int_eq(ts_store_append_message(s, "t", TS_STORE_USER, "v", 1, NULL, NULL, 0, &seq), 0);
  ck_assert_uint_eq(seq, 3); /* seqs continue */
  /* Two stores on one file (two processes, or two threads). */
  ts_store *s2 = open_ok(tmp);
  ck_assert_int_eq(ts_store_append_message(s2, "t", TS_STORE_USER, "w", 1, NULL, NULL, 0, &seq), 0);
  ck_assert_uint_eq(seq, 4);
  ck_assert_int_eq(count_msgs(s, "t"), 4);
  ts_store_close(s2);
  ts_store_close(s);
}
END_TEST

static void patch_header(const char *path, long off, uint32_t v) {
  unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 8), (unsigned char)v};
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fseek(f, off, SEEK_SET), 0);
  ck_assert_uint_eq(fwrite(b, 1, 4, f), 4);
  fclose(f);
}

START_TEST(test_migrations) {
  /* An empty file is an empty database: migrated to the current schema. */
  int fd = open(sub("toolstream.db"), O_CREAT | O_WRONLY, 0600);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_schema_version(s), TS_STORE_SCHEMA_VERSION);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  ts_store_close(s);
  s = open_ok(tmp); /* already current: nothing to do */
  ck_assert_int_eq(ts_store_thread_exists(s, "t"), 1);
  ts_store_close(s);

  /* A newer toolstream wrote it (user_version is at byte 60 of the header). */
  struct stat sb;
  ck_assert_int_ne(stat(sub("toolstream.db-wal"), &sb), 0); /* checkpointed on close */
  patch_header(sub("toolstream.db"), 60, TS_STORE_SCHEMA_VERSION + 1);
  char why[512];
  s = NULL;
  ck_assert_int_eq(ts_store_open(tmp, &s, why, sizeof why), TS_E_STORE_VERSION);
  ck_assert_ptr_null(s);
  ck_assert_ptr_nonnull(strstr(why, "newer"));

  /* Another program's SQLite file (application_id, byte 68). */
  patch_header(sub("toolstream.db"), 60, TS_STORE_SCHEMA_VERSION);
  patch_header(sub("toolstream.db"), 68, 0x12345678);
  ck_assert_int_eq(ts_store_open(tmp, &s, why, sizeof why), TS_E_STORE_CORRUPT);
  ck_assert_ptr_nonnull(strstr(why, "not a toolstream database"));

  /* Not a database at all. */
  FILE *f = fopen(sub("toolstream.db"), "wb");
  ck_assert_ptr_nonnull(f);
  for (int i = 0; i < 4096; i++) fputc('x', f);
  fclose(f);
  ck_assert_int_eq(ts_store_open(tmp, &s, why, sizeof why), TS_E_STORE_CORRUPT);
  ck_assert_ptr_null(s);
  ck_assert_int_eq(ts_store_open(tmp, &s, NULL, 0), TS_E_STORE_CORRUPT); /* no why */
}
END_TEST

/* ---- the thread tree, environments, parked calls (schema 2) ------------------------------- */

typedef struct {
  int n;
  char id[16][32], parent[16][32], state[16][32], ws[16][64];
  uint32_t depth[16], turns[16], calls[16], children[16];
  int64_t created[16], last[16];
} threads_seen;

static int see_thread(void *user, const ts_store_thread *t) {
  threads_seen *v = user;
  if (v->n == 16) return 1;
  int i = v->n++;
  snprintf(v->id[i], sizeof v->id[i], "%s", t->id);
  snprintf(v->parent[i], sizeof v->parent[i], "%s", t->parent ? t->parent : "-");
  snprintf(v->ws[i], sizeof v->ws[i], "%s", t->workspace ? t->workspace : "-");
  snprintf(v->state[i], sizeof v->state[i], "%s", t->state);
  v->depth[i] = t->depth;
  v->turns[i] = t->turns;
  v->calls[i] = t->calls;
  v->children[i] = t->children;
  v->created[i] = t->created_at_ms;
  v->last[i] = t->last_activity_ms;
  return 0;
}

static void copy_file(const char *from, const char *to) {
  size_t len;
  char *b = ts_test_read_file(from, &len);
  FILE *f = fopen(to, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, len, f), len);
  fclose(f);
  free(b);
}

typedef struct {
  int n;
  char text[8][256];
  int finished[8], is_error[8];
} records;

static int see_record(void *user, const ts_store_call_record *c) {
  records *r = user;
  if (r->n == 8) return 1;
  snprintf(r->text[r->n], sizeof r->text[0], "%u/%u %s %s %s", c->start.turn, c->start.idx,
           c->start.tool, c->start.args, c->result ? c->result : "(none)");
  r->finished[r->n] = c->finished;
  r->is_error[r->n] = c->result_is_error;
  r->n++;
  return 0;
}

START_TEST(test_migration_from_release) {
  /* A store written by the release before the tree (schema 1): everything in it stays,
   * the new columns and tables appear, and the old thread is a root that is idle. */
  copy_file(ts_test_path("tests/runtime/store/fixtures/v1-release.db"), sub("toolstream.db"));
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_schema_version(s), TS_STORE_SCHEMA_VERSION);
  ck_assert_int_eq(ts_store_thread_exists(s, "fx1"), 1);
  ck_assert_int_eq(count_msgs(s, "fx1"), 4);
  uint64_t last = 0;
  ck_assert_int_eq(ts_store_last_event_seq(s, "fx1", &last), 0);
  ck_assert_uint_eq(last, 7);
  threads_seen v;
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(ts_store_threads(s, see_thread, &v), 1);
  ck_assert_str_eq(v.id[0], "fx1");
  ck_assert_str_eq(v.parent[0], "-");
  ck_assert_str_eq(v.ws[0], "-");
  ck_assert_str_eq(v.state[0], "idle");
  ck_assert_uint_eq(v.turns[0], 2);
  ck_assert_uint_eq(v.calls[0], 1);
  ck_assert_int_ge(v.last[0], v.created[0]);
  /* the finished call with its result, from the old rows */
  records r;
  memset(&r, 0, sizeof r);
  ck_assert_int_eq(ts_store_calls(s, "fx1", see_record, &r), 1);
  ck_assert_str_eq(r.text[0], "1/0 write_file {\"description\":\"writing a\",\"path\":\"a.txt\","
                              "\"content\":\"hello\"} {\"path\":\"a.txt\",\"bytes\":5}");
  ck_assert_int_eq(r.finished[0], 1);
  /* the new schema works on the old data: a child of the old thread, a value */
  ck_assert_int_eq(ts_store_thread_create_child(s, "fx1.c", "fx1", "/w/c", NULL), 0);
  ck_assert_int_eq(ts_store_env_set(s, "fx1", "A", TS_STORE_TEXT, "1", 1, "test"), 0);
  uint64_t seq;
  ck_assert_int_eq(ts_store_append_message(s, "fx1", TS_STORE_USER, "again", 5, NULL, NULL, 0,
                                           &seq), 0);
  ck_assert_uint_eq(seq, 5);
  ts_store_close(s);
  s = open_ok(tmp); /* reopened: current, nothing to migrate */
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(ts_store_threads(s, see_thread, &v), 2);
  ck_assert_str_eq(v.parent[1], "fx1");
  ts_store_close(s);
}
END_TEST

START_TEST(test_thread_tree) {
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_thread_create_child(s, "a", NULL, "/ws/a", NULL), 0);
  ck_assert_int_eq(ts_store_thread_create_child(s, "b", "a", "/ws/b", NULL), 0);
  ck_assert_int_eq(ts_store_thread_create(s, "z", NULL), 0);
  ck_assert_int_eq(ts_store_thread_create_child(s, "c", "b", NULL, NULL), 0);
  ck_assert_int_eq(ts_store_thread_create_child(s, "b2", "a", NULL, "{\"k\":1}"), 0);
  /* bad parents */
  ck_assert_int_eq(ts_store_thread_create_child(s, "d", "nope", NULL, NULL), TS_E_STORE_NO_THREAD);
  ck_assert_ptr_nonnull(strstr(ts_store_errmsg(s), "no parent thread \"nope\""));
  ck_assert_int_eq(ts_store_thread_exists(s, "d"), 0);
  ck_assert_int_eq(ts_store_thread_create_child(s, "d", "d", NULL, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_thread_create_child(s, "d", "a b", NULL, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_thread_create_child(s, "b", "z", NULL, NULL),
                   TS_E_STORE_THREAD_EXISTS); /* no re-parenting */
  /* depth first, children in creation order */
  threads_seen v;
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(ts_store_threads(s, see_thread, &v), 5);
  const char *order[] = {"a", "b", "c", "b2", "z"};
  const uint32_t depth[] = {0, 1, 2, 1, 0};
  for (int i = 0; i < 5; i++) {
    ck_assert_str_eq(v.id[i], order[i]);
    ck_assert_uint_eq(v.depth[i], depth[i]);
  }
  ck_assert_uint_eq(v.children[0], 2);
  ck_assert_str_eq(v.ws[1], "/ws/b");
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(ts_store_thread_children(s, "a", see_thread, &v), 2);
  ck_assert_str_eq(v.id[0], "b");
  ck_assert_str_eq(v.id[1], "b2");
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(ts_store_thread_get(s, "c", see_thread, &v), 1);
  ck_assert_str_eq(v.parent[0], "b");
  ck_assert_int_eq(ts_store_thread_get(s, "none", see_thread, &v), 0);
  /* state */
  ck_assert_int_eq(ts_store_thread_set_state(s, "c", "running"), 0);
  ck_assert_int_eq(ts_store_thread_set_state(s, "c", "asleep"), TS_E_INVAL);
  ck_assert_int_eq(ts_store_thread_set_state(s, "none", "done"), TS_E_STORE_NO_THREAD);
  memset(&v, 0, sizeof v);
  ts_store_thread_get(s, "c", see_thread, &v);
  ck_assert_str_eq(v.state[0], "running");
  /* counts: turns are assistant messages, calls are start records */
  ck_assert_int_eq(ts_store_append_message(s, "c", TS_STORE_ASSISTANT, "{}", 2, NULL, NULL, 0, NULL), 0);
  ck_assert_int_eq(ts_store_call_started(s, "c", 1, 0, "k0", "t", "{\"x\":1}", 7, NULL), 0);
  ck_assert_int_eq(ts_store_call_finished(s, "c", 1, 0, "\"ok\"", 4, 0, NULL), 0);
  ck_assert_int_eq(ts_store_call_started(s, "c", 1, 1, "k1", "u", "{}", 2, NULL), 0);
  memset(&v, 0, sizeof v);
  ts_store_thread_get(s, "c", see_thread, &v);
  ck_assert_uint_eq(v.turns[0], 1);
  ck_assert_uint_eq(v.calls[0], 2);
  records r;
  memset(&r, 0, sizeof r);
  ck_assert_int_eq(ts_store_calls(s, "c", see_record, &r), 2);
  ck_assert_str_eq(r.text[0], "1/0 t {\"x\":1} \"ok\"");
  ck_assert_int_eq(r.finished[0], 1);
  ck_assert_str_eq(r.text[1], "1/1 u {} (none)");
  ck_assert_int_eq(r.finished[1], 0);
  ts_store_close(s);
}
END_TEST

typedef struct {
  int n;
  char line[8][300];
} lines;

static int see_value(void *user, const ts_store_env_value *e) {
  lines *l = user;
  if (l->n == 8) return 1;
  snprintf(l->line[l->n++], sizeof l->line[0], "%s %s %s %.*s %s", e->thread, e->name,
           e->type == TS_STORE_SECRET ? "secret" : "text", (int)e->len, (const char *)e->value,
           e->origin);
  return 0;
}

static int see_decl(void *user, const ts_store_env_decl *d) {
  lines *l = user;
  if (l->n == 8) return 1;
  snprintf(l->line[l->n++], sizeof l->line[0], "%s %s %s r%d s%d %s / %s", d->thread, d->name,
           d->type == TS_STORE_SECRET ? "secret" : "text", d->required, d->scoped,
           d->description, d->declared_by);
  return 0;
}

static int see_parked(void *user, const ts_store_parked *p) {
  lines *l = user;
  if (l->n == 8) return 1;
  snprintf(l->line[l->n++], sizeof l->line[0], "%s %u/%u %s %s %s %s", p->thread, p->turn,
           p->idx, p->call_id, p->tool, p->args, p->variable);
  return 0;
}

START_TEST(test_environment) {
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  ck_assert_int_eq(ts_store_env_has_secrets(s), 0);
  ck_assert_int_eq(ts_store_env_set(s, "t", "B", TS_STORE_TEXT, "two", 3, "--var"), 0);
  ck_assert_int_eq(ts_store_env_set(s, "t", "A", TS_STORE_TEXT, "one", 3, "env set"), 0);
  ck_assert_int_eq(ts_store_env_set(s, "t", "A", TS_STORE_SECRET, "\x01\x00\x02", 3, "env set"), 0);
  ck_assert_int_eq(ts_store_env_has_secrets(s), 1);
  ck_assert_int_eq(ts_store_env_set(s, "nope", "A", TS_STORE_TEXT, "x", 1, "o"), TS_E_STORE_NO_THREAD);
  ck_assert_int_eq(ts_store_env_set(s, "t", "1A", TS_STORE_TEXT, "x", 1, "o"), TS_E_INVAL);
  ck_assert_int_eq(ts_store_env_set(s, "t", "A B", TS_STORE_TEXT, "x", 1, "o"), TS_E_INVAL);
  ck_assert_int_eq(ts_store_env_set(s, "t", "", TS_STORE_TEXT, "x", 1, "o"), TS_E_INVAL);
  char longname[TS_STORE_VAR_NAME_MAX + 2];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  ck_assert_int_eq(ts_store_env_set(s, "t", longname, TS_STORE_TEXT, "x", 1, "o"), TS_E_INVAL);
  longname[TS_STORE_VAR_NAME_MAX] = '\0';
  ck_assert_int_eq(ts_store_env_set(s, "t", longname, TS_STORE_TEXT, "x", 1, "o"), 0);
  ck_assert_int_eq(ts_store_env_unset(s, "t", longname), 1);
  ck_assert_int_eq(ts_store_env_unset(s, "t", longname), 0);
  ck_assert_int_eq(ts_store_env_set(s, "t", "E", TS_STORE_TEXT, NULL, 0, "o"), 0); /* empty */
  lines l;
  memset(&l, 0, sizeof l);
  ck_assert_int_eq(ts_store_env_list(s, "t", see_value, &l), 3);
  ck_assert_int_eq(memcmp(l.line[0], "t A secret \x01", 12), 0); /* bytes as given */
  ck_assert_str_eq(l.line[1], "t B text two --var");
  ck_assert_str_eq(l.line[2], "t E text  o");
  memset(&l, 0, sizeof l);
  ck_assert_int_eq(ts_store_env_get(s, "t", "B", see_value, &l), 1);
  ck_assert_int_eq(ts_store_env_get(s, "t", "C", see_value, &l), 0);
  ck_assert_int_eq(ts_store_env_get(s, "t", "B", NULL, NULL), TS_E_INVAL);
  /* declarations */
  ts_store_env_decl d = {"t", "KEY", TS_STORE_SECRET, 1, 1, "the API key", "tool search"};
  ck_assert_int_eq(ts_store_env_declare(s, &d), 0);
  d.description = "the key";
  ck_assert_int_eq(ts_store_env_declare(s, &d), 0); /* replaced */
  d.name = "bad name";
  ck_assert_int_eq(ts_store_env_declare(s, &d), TS_E_INVAL);
  memset(&l, 0, sizeof l);
  ck_assert_int_eq(ts_store_env_decls(s, "t", see_decl, &l), 1);
  ck_assert_str_eq(l.line[0], "t KEY secret r1 s1 the key / tool search");
  ck_assert_int_eq(ts_store_env_decl_get(s, "t", "KEY", see_decl, &l), 1);
  ck_assert_int_eq(ts_store_env_decl_get(s, "t", "NOPE", see_decl, &l), 0);
  /* settings */
  char buf[64];
  ck_assert_int_eq(ts_store_setting_get(s, "k", buf, sizeof buf), 0);
  ck_assert_int_eq(ts_store_setting_set(s, "k", "v1"), 0);
  ck_assert_int_eq(ts_store_setting_set(s, "k", "v2"), 0);
  ck_assert_int_eq(ts_store_setting_get(s, "k", buf, sizeof buf), 1);
  ck_assert_str_eq(buf, "v2");
  ck_assert_int_eq(ts_store_setting_get(s, "k", buf, 2), 1); /* cut, with its NUL */
  ck_assert_str_eq(buf, "v");
  /* another connection's commit changes the data version; our own does not */
  uint64_t v1, v2, v3;
  ck_assert_int_eq(ts_store_data_version(s, &v1), 0);
  ck_assert_int_eq(ts_store_env_set(s, "t", "B", TS_STORE_TEXT, "3", 1, "o"), 0);
  ck_assert_int_eq(ts_store_data_version(s, &v2), 0);
  ck_assert_uint_eq(v1, v2);
  ts_store *other = open_ok(tmp);
  ck_assert_int_eq(ts_store_env_set(other, "t", "B", TS_STORE_TEXT, "4", 1, "o"), 0);
  ts_store_close(other);
  ck_assert_int_eq(ts_store_data_version(s, &v3), 0);
  ck_assert_uint_ne(v2, v3);
  ts_store_close(s);
}
END_TEST

START_TEST(test_parked_calls) {
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  ck_assert_int_eq(ts_store_thread_create(s, "u", NULL), 0);
  ck_assert_int_eq(ts_store_call_park(s, "t", 2, 1, "c1", "search", "{\"q\":1}", 7, "KEY"), 0);
  ck_assert_int_eq(ts_store_call_park(s, "t", 2, 1, "c1", "search", "{\"q\":1}", 7, "ID"), 0);
  ck_assert_int_eq(ts_store_call_park(s, "u", 1, 0, "c0", "x", "{}", 2, "V"), 0);
  ck_assert_int_eq(ts_store_call_park(s, "t", 2, 2, "c2", "search", "{bad", 4, "KEY"), TS_E_INVAL);
  ck_assert_int_eq(ts_store_call_park(s, "nope", 2, 2, "c2", "s", "{}", 2, "KEY"),
                   TS_E_STORE_NO_THREAD);
  /* a parked call shows as waiting, whatever state was recorded */
  ck_assert_int_eq(ts_store_thread_set_state(s, "t", "running"), 0);
  threads_seen v;
  memset(&v, 0, sizeof v);
  ts_store_thread_get(s, "t", see_thread, &v);
  ck_assert_str_eq(v.state[0], "waiting_for_variable");
  lines l;
  memset(&l, 0, sizeof l);
  ck_assert_int_eq(ts_store_parked_calls(s, NULL, see_parked, &l), 2);
  ck_assert_str_eq(l.line[0], "t 2/1 c1 search {\"q\":1} ID");
  ck_assert_str_eq(l.line[1], "u 1/0 c0 x {} V");
  /* starting it unparks it, in the same transaction */
  ck_assert_int_eq(ts_store_call_started(s, "t", 2, 1, "c1", "search", "{\"q\":1}", 7, NULL), 0);
  memset(&l, 0, sizeof l);
  ck_assert_int_eq(ts_store_parked_calls(s, "t", see_parked, &l), 0);
  memset(&v, 0, sizeof v);
  ts_store_thread_get(s, "t", see_thread, &v);
  ck_assert_str_eq(v.state[0], "running");
  /* a started call cannot be parked */
  ck_assert_int_eq(ts_store_call_park(s, "t", 2, 1, "c1", "search", "{}", 2, "KEY"),
                   TS_E_STORE_CALL_FINISHED);
  ck_assert_int_eq(ts_store_parked_calls(s, "u", see_parked, &l), 1);
  ts_store_close(s);
}
END_TEST

/* ---- bad inputs --------------------------------------------------------------------------- */

START_TEST(test_bad_inputs) {
  char why[256];
  ck_assert_int_eq(ts_store_open(tmp, NULL, why, sizeof why), TS_E_INVAL);
  ts_store *s = NULL;
  ck_assert_int_eq(ts_store_open("", &s, why, sizeof why), TS_E_INVAL);
  char longdir[TS_STORE_PATH_MAX + 8];
  memset(longdir, 'a', sizeof longdir - 1);
  longdir[0] = '/';
  longdir[sizeof longdir - 1] = '\0';
  ck_assert_int_eq(ts_store_open(longdir, &s, why, sizeof why), TS_E_LIMIT);
  ck_assert_ptr_null(s);
  ts_store_close(NULL);
  ck_assert_str_eq(ts_store_role_name(TS_STORE_TOOL), "tool");
  ck_assert_ptr_null(ts_store_role_name((ts_store_role)9));

  uint64_t seq;
  ck_assert_int_eq(ts_store_thread_create(NULL, "t", NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_append_message(NULL, "t", TS_STORE_USER, "x", 1, NULL, NULL, 0,
                                           &seq), TS_E_INVAL);
  ck_assert_int_eq(ts_store_schema_version(NULL), TS_E_INVAL);

  s = open_ok(tmp);
  ck_assert_int_eq(ts_store_thread_create(s, NULL, NULL), TS_E_INVAL);
  ck_assert_ptr_nonnull(strstr(ts_store_errmsg(s), "NULL"));
  ck_assert_int_eq(ts_store_thread_create(s, "", NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_thread_create(s, "a b", NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_thread_create(s, "a\nb", NULL), TS_E_INVAL);
  char longid[300];
  memset(longid, 'x', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';
  ck_assert_int_eq(ts_store_thread_create(s, longid, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_thread_exists(s, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);

  ck_assert_int_eq(ts_store_append_message(s, "t", (ts_store_role)9, "x", 1, NULL, NULL, 0,
                                           &seq), TS_E_INVAL);
  ck_assert_int_eq(ts_store_append_message(s, "t", TS_STORE_USER, NULL, 3, NULL, NULL, 0,
                                           &seq), TS_E_INVAL);
  ck_assert_int_eq(ts_store_append_message(s, "t", TS_STORE_TOOL, "x", 1, NULL, NULL, 0,
                                           &seq), TS_E_INVAL);
  ck_assert_int_eq(ts_store_call_started(s, "t", 0, 0, NULL, "x", "{}", 2, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_call_started(s, "t", 0, 0, "c", NULL, "{}", 2, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_call_started(s, "t", 0, 0, "c", "x", NULL, 0, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_call_finished(s, "t", 0, 0, NULL, 4, 0, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_call_finished(s, NULL, 0, 0, "x", 1, 0, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_messages(s, "t", 0, NULL, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_unfinished_calls(s, "t", NULL, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_events_after(s, "t", 0, 0, NULL, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_append_event(s, "t", 1, NULL, 0), TS_E_INVAL);
  ck_assert_int_eq(ts_store_append_event(s, "t", UINT64_MAX, "{}", 2), TS_E_INVAL);
  ck_assert_int_eq(ts_store_last_event_seq(s, "t", NULL), TS_E_INVAL);
  ck_assert_int_eq(count_msgs(s, "t"), 0); /* nothing was written by any of these */
  ts_store_close(s);
}
END_TEST

START_TEST(test_out_of_memory) {
  ts_store *s = NULL;
  char why[128];
  ts_test_alloc_fail_after(1);
  int r = ts_store_open(tmp, &s, why, sizeof why);
  ts_test_alloc_fail_after(-1);
  ck_assert_int_eq(r, TS_E_NOMEM);
  ck_assert_ptr_null(s);
  s = open_ok(tmp);
  ts_store_close(s);
}
END_TEST

/* ---- cost (printed; the bench asserts the target) ------------------------------------------- */

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

START_TEST(test_commit_cost) {
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_thread_create(s, "t", NULL), 0);
  enum { N = 200 };
  static long long us[N];
  for (int i = 0; i < N; i++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    ck_assert_int_eq(ts_store_call_started(s, "t", (uint32_t)i, 0, "call", "tool",
                                           "{\"q\":\"some argument text\"}", 26, NULL), 0);
    ck_assert_int_eq(ts_store_call_finished(s, "t", (uint32_t)i, 0, "result text", 11, 0,
                                            NULL), 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    us[i] = (b.tv_sec - a.tv_sec) * 1000000LL + (b.tv_nsec - a.tv_nsec) / 1000;
  }
  qsort(us, N, sizeof us[0], cmp_ll);
#if defined(__SANITIZE_ADDRESS__)
  const char *build = "ASan build";
#else
  const char *build = "no sanitizer";
#endif
  fprintf(stderr, "store: call_started + call_finished (2 commits) p50 %lld us, p90 %lld us, "
          "p99 %lld us (%s, %s)\n", us[N / 2], us[N * 9 / 10], us[N * 99 / 100], build, tmp);
  ts_store_close(s);
}
END_TEST


/* ---- the inbox, subagent instances, tags (schema 3) ---------------------------------------- */

static int see_env_count(void *user, const ts_store_env_value *e) {
  (void)user;
  return strcmp(e->name, "REGION") || e->len != 2;
}

START_TEST(test_migration_from_v2) {
  /* A store written by the release with the thread tree (schema 2): the tree, the
   * environment and the messages stay; the inbox, instances and tags appear and work. */
  copy_file(ts_test_path("tests/runtime/store/fixtures/v2-release.db"), sub("toolstream.db"));
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_schema_version(s), 3);
  threads_seen v;
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(ts_store_threads(s, see_thread, &v), 2);
  ck_assert_str_eq(v.id[0], "fx2");
  ck_assert_str_eq(v.id[1], "fx2.kid");
  ck_assert_str_eq(v.parent[1], "fx2");
  ck_assert_str_eq(v.state[1], "done");
  ck_assert_int_eq(count_msgs(s, "fx2"), 4);
  ck_assert_int_eq(count_msgs(s, "fx2.kid"), 4);
  ck_assert_int_eq(ts_store_env_list(s, "fx2", see_env_count, NULL), 1);
  ck_assert_int_eq(ts_store_inbox_push(s, "fx2", "fx2.kid", "hi", 2, NULL), 0);
  ck_assert_int_eq(ts_store_inbox_deliver(s, "fx2", NULL, NULL), 1);
  ck_assert_int_eq(count_msgs(s, "fx2"), 5);
  ts_store_close(s);
}
END_TEST

typedef struct {
  int n;
  char text[8][128];
  uint64_t seq[8], delivered[8];
} inbox_seen;

typedef struct {
  int n, prefix_ok, queued_seen;
  uint64_t next_seq;
  char content[4096][16];
  uint64_t delivered[4096];
} inbox_all;

static int see_all_items(void *user, const ts_store_inbox_item *it) {
  inbox_all *v = user;
  if (v->n == 4096) return 1;
  if (it->seq != v->next_seq++) v->prefix_ok = 0; /* dense, in order */
  if (!it->delivered_seq) v->queued_seen = 1;
  else if (v->queued_seen) v->prefix_ok = 0; /* delivered after a queued one */
  snprintf(v->content[v->n], sizeof v->content[0], "%.*s", (int)it->content_len, it->content);
  v->delivered[v->n++] = it->delivered_seq;
  return 0;
}

static void inbox_work(ts_store *s) {
  for (unsigned i = 1; i < 4000; i++) {
    char m[16];
    int n = snprintf(m, sizeof m, "m%u", i);
    if (ts_store_inbox_push(s, "t", NULL, m, (size_t)n, NULL)) _exit(5);
    if (i % 2 == 0 && ts_store_inbox_deliver(s, "t", NULL, NULL) != 1) _exit(6);
  }
}

/* Killed while pushing and delivering: every item is queued or delivered once, the
 * delivered ones a prefix in order, each the message its delivered_seq names. */
START_TEST(test_inbox_killed_at_random_points) {
  srand((unsigned)time(NULL) ^ (unsigned)getpid());
  int delivered_total = 0;
  for (int round = 0; round < 6; round++) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/i%d", tmp, round);
    kill_round(dir, inbox_work, 200000); /* 0..200 ms: a few commits */
    ts_store *s = open_ok(dir);
    static inbox_all v;
    memset(&v, 0, sizeof v);
    v.prefix_ok = 1;
    v.next_seq = 1;
    int n = ts_store_inbox(s, "t", 0, see_all_items, &v);
    ck_assert_int_ge(n, 0);
    ck_assert_msg(v.prefix_ok, "round %d: the inbox is not dense, or delivery skipped", round);
    msgs c = {0};
    int nm = ts_store_messages(s, "t", 0, collect_msg, &c);
    int delivered = 0;
    for (int i = 0; i < v.n; i++) {
      char want[16];
      snprintf(want, sizeof want, "m%d", i + 1);
      ck_assert_str_eq(v.content[i], want);
      if (v.delivered[i]) {
        ck_assert_uint_eq(v.delivered[i], (uint64_t)delivered + 1); /* the k-th message */
        if (delivered < 16) ck_assert_str_eq(c.content[delivered], want);
        delivered++;
      }
    }
    ck_assert_int_eq(nm, delivered); /* no message without its item, none twice */
    delivered_total += delivered;
    /* what was left queued is delivered now, in order, after the rest */
    while (ts_store_inbox_deliver(s, "t", NULL, NULL) == 1) {
    }
    ck_assert_int_eq(count_msgs(s, "t"), v.n);
    ts_store_close(s);
  }
  printf("store: inbox kills: %d items delivered before the kills\n", delivered_total);
}
END_TEST

static int see_item(void *user, const ts_store_inbox_item *it) {
  inbox_seen *v = user;
  if (v->n == 8) return 1;
  snprintf(v->text[v->n], sizeof v->text[0], "%s:%s", it->sender ? it->sender : "-",
           it->content);
  v->seq[v->n] = it->seq;
  v->delivered[v->n] = it->delivered_seq;
  v->n++;
  return 0;
}

typedef struct {
  ts_buf b;
} msgs_text;

static int see_msg_text(void *user, const ts_store_message *m) {
  msgs_text *t = user;
  ts_buf_puts(&t->b, ts_store_role_name(m->role));
  ts_buf_putc(&t->b, '=');
  ts_buf_puts(&t->b, m->content);
  ts_buf_putc(&t->b, ';');
  return 0;
}

START_TEST(test_inbox) {
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_thread_create(s, "p", NULL), 0);
  ck_assert_int_eq(ts_store_thread_create_child(s, "c", "p", NULL, NULL), 0);
  uint64_t seq = 0;
  ck_assert_int_eq(ts_store_append_message(s, "p", TS_STORE_USER, "start", 5, NULL, NULL, 0, NULL), 0);
  /* a busy receiver: three items queue in order, nothing reaches the conversation */
  ck_assert_int_eq(ts_store_inbox_push(s, "p", "c", "one", 3, &seq), 0);
  ck_assert_uint_eq(seq, 1);
  ck_assert_int_eq(ts_store_inbox_push(s, "p", NULL, "two", 3, &seq), 0);
  ck_assert_uint_eq(seq, 2);
  ck_assert_int_eq(ts_store_inbox_push(s, "p", "c", "th\0ree", 6, &seq), 0);
  ck_assert_int_eq(count_msgs(s, "p"), 1);
  inbox_seen v;
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(ts_store_inbox(s, "p", 1, see_item, &v), 3);
  ck_assert_str_eq(v.text[0], "c:one");
  ck_assert_str_eq(v.text[1], "-:two");
  /* reopened (a crash): still queued */
  ts_store_close(s);
  s = open_ok(tmp);
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(ts_store_inbox_deliver(s, "p", see_item, &v), 1);
  ck_assert_int_eq(v.n, 1);
  ck_assert_str_eq(v.text[0], "c:one");
  ck_assert_uint_eq(v.delivered[0], 2); /* the thread's second message */
  ck_assert_int_eq(ts_store_inbox_deliver(s, "p", NULL, NULL), 1);
  ck_assert_int_eq(ts_store_inbox_deliver(s, "p", NULL, NULL), 1);
  ck_assert_int_eq(ts_store_inbox_deliver(s, "p", NULL, NULL), 0); /* empty */
  msgs_text t;
  ts_buf_init(&t.b, 1 << 16);
  ck_assert_int_eq(ts_store_messages(s, "p", 0, see_msg_text, &t), 4);
  ck_assert_str_eq(t.b.p, "user=start;user=one;user=two;user=th;");
  ts_buf_fini(&t.b);
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(ts_store_inbox(s, "p", 0, see_item, &v), 3);
  ck_assert_uint_eq(v.delivered[2], 4);
  ck_assert_int_eq(ts_store_inbox(s, "p", 1, see_item, &v), 0);
  /* bad input */
  ck_assert_int_eq(ts_store_inbox_push(s, "nope", NULL, "x", 1, NULL), TS_E_STORE_NO_THREAD);
  ck_assert_int_eq(ts_store_inbox_push(s, "p", "bad id", "x", 1, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_inbox_push(s, "p", NULL, NULL, 1, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_inbox_deliver(s, "nope", NULL, NULL), 0);
  ts_store_close(s);
}
END_TEST

typedef struct {
  int n;
  char text[8][256];
} subs_seen;

static int see_sub(void *user, const ts_store_subagent *a) {
  subs_seen *v = user;
  if (v->n == 8) return 1;
  snprintf(v->text[v->n++], sizeof v->text[0], "%s<%s %s/%s/%s b%d %u.%u %s q%u r%u %s",
           a->thread, a->parent, a->agent, a->relationship, a->name, a->blocking, a->turn,
           a->idx, a->state, a->queued, a->reports, a->outcome ? a->outcome : "-");
  return 0;
}

static int see_tags(void *user, const ts_store_thread *t) {
  snprintf(user, 128, "%s", t->tags);
  return 0;
}

START_TEST(test_subagent_instances) {
  ts_store *s = open_ok(tmp);
  ck_assert_int_eq(ts_store_thread_create(s, "p", NULL), 0);
  ts_store_subagent_new n = {.thread = "p.s1", .parent = "p", .workspace = "/w/s1",
                             .agent = "researcher", .relationship = "research", .name = "alpha",
                             .blocking = 1, .turn = 1, .idx = 0, .message = "go", .message_len = 2};
  uint64_t item = 0;
  ck_assert_int_eq(ts_store_subagent_create(s, &n, &item), 0);
  ck_assert_uint_eq(item, 1);
  /* the same call again: refused, nothing changes */
  n.thread = "p.s1b";
  ck_assert_int_eq(ts_store_subagent_create(s, &n, NULL), TS_E_STORE_THREAD_EXISTS);
  ck_assert_int_eq(ts_store_thread_exists(s, "p.s1b"), 0);
  n.thread = "p.s2", n.idx = 1, n.name = "beta", n.blocking = 0;
  ck_assert_int_eq(ts_store_subagent_create(s, &n, NULL), 0);
  /* an existing thread id, a missing parent, bad fields */
  n.idx = 2;
  ck_assert_int_eq(ts_store_subagent_create(s, &n, NULL), TS_E_STORE_THREAD_EXISTS);
  n.thread = "x", n.parent = "nope";
  ck_assert_int_eq(ts_store_subagent_create(s, &n, NULL), TS_E_STORE_NO_THREAD);
  n.parent = "p", n.name = "";
  ck_assert_int_eq(ts_store_subagent_create(s, &n, NULL), TS_E_INVAL);
  n.name = "x", n.parent = "x";
  ck_assert_int_eq(ts_store_subagent_create(s, &n, NULL), TS_E_INVAL);
  ck_assert_int_eq(ts_store_thread_exists(s, "x"), 0);

  subs_seen v;
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(ts_store_subagents(s, "p", see_sub, &v), 2);
  ck_assert_str_eq(v.text[0], "p.s1<p researcher/research/alpha b1 1.0 idle q1 r0 -");
  ck_assert_str_eq(v.text[1], "p.s2<p researcher/research/beta b0 1.1 idle q1 r0 -");
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(ts_store_subagent_by_call(s, "p", 1, 1, see_sub, &v), 1);
  ck_assert_int_eq(ts_store_subagent_by_call(s, "p", 1, 7, see_sub, &v), 0);
  ck_assert_int_eq(ts_store_subagent_get(s, "p", see_sub, &v), 0);
  char tags[128];
  ck_assert_int_eq(ts_store_thread_get(s, "p.s1", see_tags, tags), 1);
  ck_assert_str_eq(tags, "[\"name:alpha\"]");
  ck_assert_int_eq(ts_store_thread_tag(s, "p.s1", "ui:pinned"), 0);
  ck_assert_int_eq(ts_store_thread_tag(s, "p.s1", "ui:pinned"), 0);
  ck_assert_int_eq(ts_store_thread_get(s, "p.s1", see_tags, tags), 1);
  ck_assert_str_eq(tags, "[\"name:alpha\",\"ui:pinned\"]");
  ck_assert_int_eq(ts_store_thread_get(s, "p", see_tags, tags), 1);
  ck_assert_str_eq(tags, "[]");
  ck_assert_int_eq(ts_store_thread_tag(s, "p", ""), TS_E_INVAL);
  ck_assert_int_eq(ts_store_thread_tag(s, "nope", "a"), TS_E_STORE_NO_THREAD);

  /* the child takes its first message; a blocking outcome is recorded, not queued; a
   * non-blocking one is queued to the parent in the same transaction */
  ck_assert_int_eq(ts_store_inbox_deliver(s, "p.s1", NULL, NULL), 1);
  ck_assert_int_eq(ts_store_subagent_report(s, "p.s1", "{\"text\":\"a\"}", 12, 0, NULL), 0);
  ck_assert_int_eq(ts_store_subagent_report(s, "p.s2", "{\"text\":\"b\"}", 12, 1, &item), 0);
  ck_assert_uint_eq(item, 1);
  ck_assert_int_eq(ts_store_subagent_report(s, "p.s2", "not json", 8, 1, NULL), TS_E_INVAL);
  /* nothing new in the child since: a second report (a session run again after a crash)
   * records and queues nothing */
  ck_assert_int_eq(ts_store_subagent_report(s, "p.s2", "{\"text\":\"c\"}", 12, 1, &item), 1);
  ck_assert_int_eq(ts_store_subagent_report(s, "p", "{}", 2, 1, NULL), TS_E_STORE_NO_THREAD);
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(ts_store_subagents(s, "p", see_sub, &v), 2);
  ck_assert_str_eq(v.text[0], "p.s1<p researcher/research/alpha b1 1.0 idle q0 r1 {\"text\":\"a\"}");
  ck_assert_str_eq(v.text[1], "p.s2<p researcher/research/beta b0 1.1 idle q1 r1 {\"text\":\"b\"}");
  inbox_seen iv;
  memset(&iv, 0, sizeof iv);
  ck_assert_int_eq(ts_store_inbox(s, "p", 1, see_item, &iv), 1);
  ck_assert_str_eq(iv.text[0], "p.s2:{\"text\":\"b\"}");
  ts_store_close(s);
}
END_TEST

static Suite *suite(void) {
  Suite *su = suite_create("store");
  TCase *tc = tcase_create("store");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_default_dir);
  tcase_add_test(tc, test_open_creates_private_dirs);
  tcase_add_test(tc, test_messages);
  tcase_add_test(tc, test_call_lifecycle);
  tcase_add_test(tc, test_crash_between_start_and_finish);
  tcase_add_test(tc, test_fresh_store_opened_together);
  tcase_add_test(tc, test_killed_at_random_points);
  tcase_add_test(tc, test_events);
  tcase_add_test(tc, test_reopen_keeps_everything);
  tcase_add_test(tc, test_migrations);
  tcase_add_test(tc, test_migration_from_release);
  tcase_add_test(tc, test_thread_tree);
  tcase_add_test(tc, test_migration_from_v2);
  tcase_add_test(tc, test_inbox);
  tcase_add_test(tc, test_inbox_killed_at_random_points);
  tcase_add_test(tc, test_subagent_instances);
  tcase_add_test(tc, test_environment);
  tcase_add_test(tc, test_parked_calls);
  tcase_add_test(tc, test_bad_inputs);
  tcase_add_test(tc, test_out_of_memory);
  tcase_add_test(tc, test_commit_cost);
  suite_add_tcase(su, tc);
  return su;
}

int main(void) {
  return ts_test_run(suite(), 0);
}
