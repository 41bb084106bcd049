/*
 * attachments_test.c: paths across thread filesystems (agent/attachments.h), table-driven,
 * attacks included: `..`, links planted in the sender's filesystem (to a host file, to a
 * directory outside, as a directory on the way), absolute host paths, NUL and newline in
 * names, FIFOs, directories, files over the limits, a receiver whose attachments/ is a link.
 * Every refused path leaves nothing in the receiver's attachments/ directory.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/attachments.h"
#include "base/error.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"

static char dir[64], A[128], B[128], outside[128];

/* The sender A: files, a directory, links planted by a tool; `outside` is a directory
 * beside the roots holding a secret. */
static void setup(void) {
  ts_test_tempdir(dir, sizeof dir, "attach");
  snprintf(A, sizeof A, "%s/a", dir);
  snprintf(B, sizeof B, "%s/b", dir);
  snprintf(outside, sizeof outside, "%s/outside", dir);
  ck_assert_int_eq(mkdir(A, 0755), 0);
  ck_assert_int_eq(mkdir(B, 0755), 0);
  ck_assert_int_eq(mkdir(outside, 0755), 0);
  ck_assert_int_eq(mkdir(ts_test_at(A, "attachments"), 0755), 0);
  ck_assert_int_eq(mkdir(ts_test_at(A, "docs"), 0755), 0);
  ts_test_put(ts_test_at(outside, "secret.txt"), "the outside secret");
  ts_test_put(ts_test_at(A, "attachments/report.md"), "# report\n");
  ts_test_put(ts_test_at(A, "docs/notes.txt"), "notes");
  ts_test_put(ts_test_at(A, "top.txt"), "top");
  ts_test_put(ts_test_at(A, "weird name!.txt"), "weird");
  ts_test_put(ts_test_at(A, ".hidden"), "hidden");
  ts_test_write_file(ts_test_at(A, "big.bin"), "", 0);
  FILE *f = fopen(ts_test_at(A, "big.bin"), "wb");
  for (int i = 0; i < 3000; i++) fputc('x', f);
  fclose(f);
  ck_assert_int_eq(symlink("/etc/passwd", ts_test_at(A, "attachments/passwd")), 0);
  ck_assert_int_eq(symlink(ts_test_at(outside, "secret.txt"), ts_test_at(A, "link.txt")), 0);
  ck_assert_int_eq(symlink(outside, ts_test_at(A, "outdir")), 0);
  ck_assert_int_eq(symlink("docs", ts_test_at(A, "docs-link")), 0);
  ck_assert_int_eq(mkfifo(ts_test_at(A, "fifo"), 0644), 0);
}

/* Names in B/attachments, sorted, joined by ' ' (".tmp-*" included: there must be none). */
static void listing(const char *root, char *out, size_t cap) {
  char names[64][256];
  int n = 0;
  DIR *d = opendir(ts_test_at(root, "attachments"));
  out[0] = '\0';
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) && n < 64)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      snprintf(names[n++], sizeof names[0], "%s", e->d_name);
  closedir(d);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (strcmp(names[j], names[i]) < 0) {
        char t[256];
        memcpy(t, names[i], sizeof t);
        memcpy(names[i], names[j], sizeof t);
        memcpy(names[j], t, sizeof t);
      }
  size_t o = 0;
  for (int i = 0; i < n; i++) o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? " " : "", names[i]);
}

typedef struct {
  int line;
  const char *label;
  const char *path;
  size_t len; /* 0: strlen(path) */
  int want;   /* 0 or a TS_E_ATTACH_* / TS_E_LIMIT */
  const char *want_ref;  /* the receiver-local path on success */
  const char *want_body; /* its content */
} row;

START_TEST(test_copy_table) {
  setup();
  static const row rows[] = {
      {__LINE__, "convention path", "/attachments/report.md", 0, 0, "/attachments/report.md", "# report\n"},
      {__LINE__, "same name again: unique", "/attachments/report.md", 0, 0, "/attachments/report-2.md", "# report\n"},
      {__LINE__, "relative spelling", "attachments/report.md", 0, 0, "/attachments/report-3.md", "# report\n"},
      {__LINE__, "a file elsewhere in the filesystem", "/docs/notes.txt", 0, 0, "/attachments/notes.txt", "notes"},
      {__LINE__, "top level", "/top.txt", 0, 0, "/attachments/top.txt", "top"},
      {__LINE__, "odd bytes in the name", "/weird name!.txt", 0, 0, "/attachments/weird_name_.txt", "weird"},
      {__LINE__, "a leading dot is not kept", "/.hidden", 0, 0, "/attachments/_hidden", "hidden"},
      {__LINE__, "dot dot up", "/../outside/secret.txt", 0, TS_E_ATTACH_PATH, NULL, NULL},
      {__LINE__, "dot dot inside", "/attachments/../../outside/secret.txt", 0, TS_E_ATTACH_PATH, NULL, NULL},
      {__LINE__, "dot dot alone", "..", 0, TS_E_ATTACH_PATH, NULL, NULL},
      {__LINE__, "a dot component", "/./top.txt", 0, TS_E_ATTACH_PATH, NULL, NULL},
      {__LINE__, "an empty component", "/docs//notes.txt", 0, TS_E_ATTACH_PATH, NULL, NULL},
      {__LINE__, "two leading slashes", "//top.txt", 0, TS_E_ATTACH_PATH, NULL, NULL},
      {__LINE__, "a trailing slash", "/docs/", 0, TS_E_ATTACH_PATH, NULL, NULL},
      {__LINE__, "the root", "/", 0, TS_E_ATTACH_PATH, NULL, NULL},
      {__LINE__, "empty", "", 0, TS_E_ATTACH_PATH, NULL, NULL},
      {__LINE__, "a newline in the name", "/top.txt\n/etc/passwd", 0, TS_E_ATTACH_PATH, NULL, NULL},
      {__LINE__, "a NUL in the name", "/top.txt\0/etc/passwd", 20, TS_E_ATTACH_PATH, NULL, NULL},
      {__LINE__, "an absolute host path is the thread's", "/etc/passwd", 0, TS_E_ATTACH_MISSING, NULL, NULL},
      {__LINE__, "the outside secret by host path", NULL, 0, TS_E_ATTACH_MISSING, NULL, NULL},
      {__LINE__, "missing file", "/attachments/nope.txt", 0, TS_E_ATTACH_MISSING, NULL, NULL},
      {__LINE__, "missing directory", "/nodir/x.txt", 0, TS_E_ATTACH_MISSING, NULL, NULL},
      {__LINE__, "a file used as a directory", "/top.txt/x", 0, TS_E_ATTACH_MISSING, NULL, NULL},
      {__LINE__, "a link to a host file", "/attachments/passwd", 0, TS_E_ATTACH_ESCAPE, NULL, NULL},
      {__LINE__, "a link to a file outside", "/link.txt", 0, TS_E_ATTACH_ESCAPE, NULL, NULL},
      {__LINE__, "a linked directory outside", "/outdir/secret.txt", 0, TS_E_ATTACH_ESCAPE, NULL, NULL},
      {__LINE__, "a linked directory inside too", "/docs-link/notes.txt", 0, TS_E_ATTACH_ESCAPE, NULL, NULL},
      {__LINE__, "a directory", "/docs", 0, TS_E_ATTACH_NOT_FILE, NULL, NULL},
      {__LINE__, "a FIFO (never blocks)", "/fifo", 0, TS_E_ATTACH_NOT_FILE, NULL, NULL},
      {__LINE__, "over the file limit", "/big.bin", 0, TS_E_ATTACH_TOO_BIG, NULL, NULL},
  };
  char host[256];
  snprintf(host, sizeof host, "%s/secret.txt", outside); /* the row with path NULL */
  ts_attach_batch batch = {.limits = {.file_max = 2048, .total_max = 1 << 20, .files_max = 1000}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const row *r = &rows[i];
    const char *p = r->path ? r->path : host;
    size_t len = r->len ? r->len : strlen(p);
    char before[2048], after[2048], ref[TS_ATTACH_PATH_MAX], why[512] = "";
    listing(B, before, sizeof before);
    ts_attach_batch was = batch;
    int rc = ts_attach_copy(A, p, len, B, &batch, ref, sizeof ref, why, sizeof why);
    ck_assert_msg(rc == r->want, "line %d (%s): got %s, want %s: %s", r->line, r->label,
                  ts_err_name(rc), ts_err_name(r->want), why);
    listing(B, after, sizeof after);
    if (r->want) {
      ck_assert_msg(!strcmp(before, after), "line %d (%s): the receiver changed: %s -> %s",
                    r->line, r->label, before, after);
      ck_assert_msg(batch.files == was.files && batch.bytes == was.bytes, "line %d", r->line);
      ck_assert_msg(!strncmp(why, "attachment \"", 12) && !strchr(why, '\n'), "line %d: %s",
                    r->line, why);
      continue;
    }
    ck_assert_msg(!strcmp(ref, r->want_ref), "line %d (%s): ref %s, want %s", r->line, r->label,
                  ref, r->want_ref);
    size_t n;
    char *body = ts_test_read_file(ts_test_at(B, ref + 1), &n);
    ck_assert_msg(n == strlen(r->want_body) && !memcmp(body, r->want_body, n), "line %d", r->line);
    free(body);
    ck_assert_msg(!strstr(after, ".tmp-"), "line %d: a temporary file is left: %s", r->line, after);
    /* the reference resolves in the receiver's own filesystem */
    int fd = -1;
    ck_assert_int_eq(ts_attach_open(B, ref, strlen(ref), &fd, NULL, why, sizeof why), 0);
    close(fd);
  }
  ck_assert_uint_eq(batch.files, 7);
  ts_test_rm_rf(dir);
}
END_TEST

/* Batch limits: files per message and bytes per message. */
START_TEST(test_batch_limits) {
  setup();
  char ref[TS_ATTACH_PATH_MAX], why[256];
  ts_attach_batch b = {.limits = {.files_max = 2}};
  ck_assert_int_eq(ts_attach_copy(A, "/top.txt", 8, B, &b, ref, sizeof ref, why, sizeof why), 0);
  ck_assert_int_eq(ts_attach_copy(A, "/top.txt", 8, B, &b, ref, sizeof ref, why, sizeof why), 0);
  ck_assert_int_eq(ts_attach_copy(A, "/top.txt", 8, B, &b, ref, sizeof ref, why, sizeof why),
                   TS_E_LIMIT);
  ts_attach_batch t = {.limits = {.total_max = 3000 + 3 - 1}};
  ck_assert_int_eq(ts_attach_copy(A, "/top.txt", 8, B, &t, ref, sizeof ref, why, sizeof why), 0);
  ck_assert_int_eq(ts_attach_copy(A, "/big.bin", 8, B, &t, ref, sizeof ref, why, sizeof why),
                   TS_E_LIMIT);
  ck_assert_uint_eq(t.bytes, 3);
  /* the default limits take a 3000-byte file */
  ck_assert_int_eq(ts_attach_copy(A, "/big.bin", 8, B, NULL, ref, sizeof ref, why, sizeof why), 0);
  ck_assert_str_eq(ref, "/attachments/big.bin");
  ts_test_rm_rf(dir);
}
END_TEST

/* A receiver whose attachments/ is a link (planted by one of its tools) gets nothing
 * written through it; a missing attachments/ is made. */
START_TEST(test_receiver_checks) {
  setup();
  char ref[TS_ATTACH_PATH_MAX], why[256];
  ck_assert_int_eq(symlink(outside, ts_test_at(B, "attachments")), 0);
  int rc = ts_attach_copy(A, "/top.txt", 8, B, NULL, ref, sizeof ref, why, sizeof why);
  ck_assert_int_eq(rc, TS_E_ATTACH_ESCAPE);
  struct stat st;
  ck_assert_int_ne(stat(ts_test_at(outside, "top.txt"), &st), 0);
  char C[160];
  snprintf(C, sizeof C, "%s/c", dir);
  ck_assert_int_eq(mkdir(C, 0755), 0);
  ck_assert_int_eq(ts_attach_copy(A, "/top.txt", 8, C, NULL, ref, sizeof ref, why, sizeof why), 0);
  ck_assert_int_eq(stat(ts_test_at(C, "attachments/top.txt"), &st), 0);
  /* back the other way: child -> parent keeps both names apart */
  ck_assert_int_eq(ts_attach_copy(C, "/attachments/top.txt", 20, A, NULL, ref, sizeof ref, why,
                                  sizeof why), 0);
  ck_assert_str_eq(ref, "/attachments/top.txt");
  ck_assert_int_eq(ts_attach_copy(C, "/attachments/top.txt", 20, A, NULL, ref, sizeof ref, why,
                                  sizeof why), 0);
  ck_assert_str_eq(ref, "/attachments/top-2.txt");
  ck_assert_int_eq(ts_attach_copy("/nonexistent-root", "/x", 2, A, NULL, ref, sizeof ref, why,
                                  sizeof why), TS_E_IO);
  ck_assert_int_eq(ts_attach_path_check("/attachments/a.txt", 18), 0);
  char longp[TS_ATTACH_PATH_MAX + 2];
  memset(longp, 'a', sizeof longp);
  ck_assert_int_eq(ts_attach_path_check(longp, sizeof longp), TS_E_ATTACH_PATH);
  ts_test_rm_rf(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("attachments");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_copy_table);
  tcase_add_test(tc, test_batch_limits);
  tcase_add_test(tc, test_receiver_checks);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
