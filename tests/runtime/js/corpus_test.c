/*
 * corpus_test.c: model-style snippets (tests/runtime/js/corpus/, JavaScript and
 * TypeScript) run through runCode as a model's tool call would run them, each against
 * the result written on its first line:
 *
 *   // expect: JSON            the value, exactly as the sandbox prints it
 *   // expect-error: TEXT      status error, and the error starts with TEXT
 *
 * The language follows the extension (.ts: TypeScript; .js: auto). Adding a case is
 * adding a file. Each snippet also runs a second time, from the parent's transpile
 * cache, with the same result.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "js/sandbox.h"
#include "support/runner.h"
#include "support/test_support.h"

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_one(const char *name, const char *src, size_t len) {
  const char *nl = strchr(src, '\n');
  ck_assert_msg(nl, "%s: no first line", name);
  int want_error = !strncmp(src, "// expect-error: ", 17);
  ck_assert_msg(want_error || !strncmp(src, "// expect: ", 11), "%s: no expectation line", name);
  const char *w = src + (want_error ? 17 : 11);
  size_t wl = (size_t)(nl - w);
  size_t n = strlen(name);
  ts_sandbox_opts o = {.timeout_ms = 5000};
  o.language = n > 3 && !strcmp(name + n - 3, ".ts") ? TS_SANDBOX_LANG_TS : TS_SANDBOX_LANG_AUTO;
  for (int pass = 0; pass < 2; pass++) {
    ts_sandbox_result r;
    ts_sandbox_run(src, len, &o, &r);
    if (want_error) {
      ck_assert_msg(r.status == TS_SANDBOX_ERROR && r.error && !strncmp(r.error, w, wl),
                    "%s (pass %d): status %s, error %s; want %.*s", name, pass,
                    ts_sandbox_status_name(r.status), r.error ? r.error : "-", (int)wl, w);
    } else {
      ck_assert_msg(r.status == TS_SANDBOX_OK, "%s (pass %d): %s", name, pass, r.error ? r.error : "?");
      ck_assert_msg(r.value_len == wl && !memcmp(r.value_json, w, wl), "%s (pass %d): got %s, want %.*s",
                    name, pass, r.value_json, (int)wl, w);
    }
    ts_sandbox_result_fini(&r);
  }
}

START_TEST(test_corpus) {
  const char *dir = ts_test_path("tests/runtime/js/corpus");
  char path[512];
  snprintf(path, sizeof path, "%s", dir);
  DIR *d = opendir(path);
  ck_assert_msg(d, "cannot open %s", path);
  char *names[512];
  size_t count = 0;
  struct dirent *e;
  while ((e = readdir(d)) && count < 512) {
    size_t n = strlen(e->d_name);
    if (n > 3 && (!strcmp(e->d_name + n - 3, ".js") || !strcmp(e->d_name + n - 3, ".ts")))
      names[count++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, count, sizeof *names, by_name);
  ck_assert_msg(count >= 50, "only %zu snippets", count);
  size_t ts = 0;
  for (size_t i = 0; i < count; i++) {
    char rel[600];
    snprintf(rel, sizeof rel, "tests/runtime/js/corpus/%s", names[i]);
    size_t len;
    char *src = ts_test_read_file(ts_test_path(rel), &len);
    check_one(names[i], src, len);
    if (strstr(names[i], ".ts")) ts++;
    free(src);
    free(names[i]);
  }
  ck_assert_msg(ts >= 10, "only %zu TypeScript snippets", ts);
}
END_TEST

/* The same snippet's console, checked whole. */
START_TEST(test_console_of_snippet) {
  size_t len;
  char *src = ts_test_read_file(ts_test_path("tests/runtime/js/corpus/27_console_output.js"), &len);
  ts_sandbox_result r;
  ts_sandbox_run(src, len, NULL, &r);
  ck_assert_str_eq(r.console_json, "[\"starting\",\"answer is 42\"]");
  ts_sandbox_result_fini(&r);
  free(src);
}
END_TEST

int main(void) {
  Suite *s = suite_create("corpus");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, test_corpus);
  tcase_add_test(tc, test_console_of_snippet);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
