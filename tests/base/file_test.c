/*
 * file_test.c: the directory listing of base/file.h (ts_file_list): kept names only, in
 * byte order whatever the order on disk, "." and ".." never, the limit, an unreadable
 * directory, and every allocation failing in turn; and ts_file_read of "/dev/stdin"
 * when standard input is a pipe, a socket (Node's child_process hands one) or a file.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/error.h"
#include "base/file.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"

static int json_only(const char *name) {
  size_t l = strlen(name);
  return l > 5 && !strcmp(name + l - 5, ".json");
}

static char dir[256];

static void fill(void) {
  ts_test_tempdir(dir, sizeof dir, "filelist");
  const char *names[] = {"b.json", "a.json", "B.json", "c.txt", "a10.json", "a9.json"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) ts_test_put(ts_test_at(dir, names[i]), "x");
}

START_TEST(test_list) {
  fill();
  char **v = NULL;
  size_t n = 0;
  ck_assert_int_eq(ts_file_list(dir, json_only, 100, &v, &n), TS_E_OK);
  ck_assert_uint_eq(n, 5);
  const char *want[] = {"B.json", "a.json", "a10.json", "a9.json", "b.json"}; /* bytes */
  for (size_t i = 0; i < n; i++) ck_assert_str_eq(v[i], want[i]);
  ts_file_names_free(v, n);
  ck_assert_int_eq(ts_file_list(dir, NULL, 100, &v, &n), TS_E_OK); /* everything */
  ck_assert_uint_eq(n, 6);
  for (size_t i = 0; i < n; i++) ck_assert(strcmp(v[i], ".") && strcmp(v[i], ".."));
  ts_file_names_free(v, n);
  v = NULL;
  ck_assert_int_eq(ts_file_list(dir, json_only, 4, &v, &n), TS_E_LIMIT);
  ck_assert_ptr_null(v);
  errno = 0;
  ck_assert_int_eq(ts_file_list(ts_test_at(dir, "none"), NULL, 100, &v, &n), TS_E_IO);
  ck_assert_int_eq(errno, ENOENT);
  ts_test_rm_rf(dir);
}
END_TEST

START_TEST(test_out_of_memory) {
  fill();
  for (long k = 1; k < 1000; k++) {
    char **v = NULL;
    size_t n = 0;
    ts_test_alloc_fail_after(k);
    int rc = ts_file_list(dir, json_only, 100, &v, &n);
    ts_test_alloc_fail_after(-1);
    ck_assert_msg(rc == TS_E_OK || rc == TS_E_NOMEM, "allocation %ld: %d", k, rc);
    if (rc == TS_E_OK) {
      ck_assert_uint_eq(n, 5);
      ts_file_names_free(v, n);
      ts_test_rm_rf(dir);
      return;
    }
  }
  ck_abort_msg("never succeeded");
}
END_TEST

/* Standard input of each kind, holding `text` and then its end. */
enum { IN_PIPE, IN_SOCKET, IN_FILE };
static int make_stdin(int kind, const char *text) {
  int fd[2];
  if (kind == IN_FILE) {
    ts_test_tempdir(dir, sizeof dir, "stdin");
    ts_test_put(ts_test_at(dir, "in"), text);
    fd[0] = open(ts_test_at(dir, "in"), O_RDONLY);
    return fd[0];
  }
  if (kind == IN_PIPE) ck_assert_int_eq(pipe(fd), 0);
  else ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0);
  ck_assert_int_eq(write(fd[1], text, strlen(text)), (int)strlen(text));
  close(fd[1]);
  return fd[0];
}

START_TEST(test_read_stdin) {
  static const struct {
    int line;
    const char *label;
    int kind;
    const char *text;
  } rows[] = {
      {__LINE__, "pipe", IN_PIPE, "1 + 1"},
      {__LINE__, "socket", IN_SOCKET, "const x = 2\nx * 3"},
      {__LINE__, "file", IN_FILE, "'file'"},
      {__LINE__, "empty socket", IN_SOCKET, ""},
  };
  int saved = dup(STDIN_FILENO);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    int in = make_stdin(rows[i].kind, rows[i].text);
    ck_assert_int_ge(in, 0);
    ck_assert_int_ge(dup2(in, STDIN_FILENO), 0);
    close(in);
    char *got = NULL;
    size_t len = 0;
    int rc = ts_file_read("/dev/stdin", 1 << 20, &got, &len);
    ck_assert_msg(rc == TS_E_OK, "line %d (%s): rc %d, %s", rows[i].line, rows[i].label, rc, strerror(errno));
    ck_assert_msg(len == strlen(rows[i].text) && !strcmp(got, rows[i].text), "line %d (%s): got %s",
                  rows[i].line, rows[i].label, got);
    free(got);
    if (rows[i].kind == IN_FILE) ts_test_rm_rf(dir);
  }
  dup2(saved, STDIN_FILENO);
  close(saved);
}
END_TEST

int main(void) {
  Suite *s = suite_create("file");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_list);
  tcase_add_test(tc, test_out_of_memory);
  tcase_add_test(tc, test_read_stdin);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
