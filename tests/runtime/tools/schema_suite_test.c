/*
 * schema_suite_test.c: the official JSON Schema Test Suite (draft 7) against
 * runtime/tools/schema.c.
 *
 * Debian's json-schema-test-suite package installs the suite under
 * /usr/share/json-schema-test-suite/tests/ (scripts/install-deps.sh installs it;
 * TS_SCHEMA_SUITE_DIR overrides the folder). Every file of draft7/ is a list of groups
 * {description, schema, tests: [{description, data, valid}]}: the schema is compiled
 * (in draft 7 mode) and each test's data validated, and the result must be TS_E_OK for
 * valid data and TS_E_SCHEMA_MISMATCH for invalid data. Any required case that fails
 * fails this test, with its file, group and description.
 *
 * Excluded, with why:
 *   - refRemote.json: every group resolves $ref against http://localhost:1234/..., a
 *     remote document; the validator does no I/O and refuses remote references.
 *   - the groups that $ref the draft-07 meta-schema by its URL (definitions.json:
 *     "valid definition", "invalid definition"; ref.json: "remote ref, containing refs
 *     itself"): a remote reference too. Their schemas must fail to compile with the
 *     "remote reference" message, so the exclusion cannot hide anything else.
 *   - optional/ (bignum, content, ecmascript-regex, zeroTerminatedFloats, format/):
 *     the suite marks these as not required. They run here for information only, and
 *     the counts are printed: format and content are annotations in this validator
 *     (draft 7 makes asserting them optional), numbers are doubles (bignum), and
 *     patterns are PCRE2 rather than a JavaScript engine (regex.h lists the
 *     differences).
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/json_view.h"
#include "support/runner.h"
#include "support/test_support.h"
#include "tools/schema.h"

static const char *suite_dir(void) {
  const char *d = getenv("TS_SCHEMA_SUITE_DIR");
  return d && *d ? d : "/usr/share/json-schema-test-suite/tests/draft7";
}

static const struct {
  const char *file, *group;
} remote_groups[] = {
    {"definitions.json", "valid definition"},
    {"definitions.json", "invalid definition"},
    {"ref.json", "remote ref, containing refs itself"},
};

typedef struct {
  int files, groups, cases, passed, failed, excluded;
} tally;

static int is_remote_group(const char *file, ts_view group) {
  for (size_t i = 0; i < sizeof remote_groups / sizeof remote_groups[0]; i++)
    if (strcmp(file, remote_groups[i].file) == 0 && group.len == strlen(remote_groups[i].group) &&
        memcmp(group.p, remote_groups[i].group, group.len) == 0)
      return 1;
  return 0;
}

static ts_view str_member(ts_jv *v, int obj, const char *key) {
  ts_view s = {"", 0};
  int t = ts_jv_get(v, obj, key);
  if (t < 0 || ts_jv_str(v, t, &s) != TS_E_OK) s = (ts_view){"?", 1};
  return s;
}

/* Runs one file; failures are printed (and counted) but not asserted here, so that one
 * run lists every failing case. */
static void run_file(const char *dir, const char *file, tally *t, int required) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  size_t len;
  char *text = ts_test_read_file(path, &len);
  ts_jv v;
  int cap = 1024, rc;
  for (;;) {
    ck_assert_int_eq(ts_jv_init(&v, cap), TS_E_OK);
    rc = ts_jv_parse(&v, text, len);
    if (rc != TS_E_JV_TOO_MANY_TOKENS) break;
    ts_jv_fini(&v);
    cap *= 2;
  }
  ck_assert_msg(rc == TS_E_OK && ts_jv_type_of(&v, 0) == TS_JV_ARRAY, "%s: not a suite file", path);
  t->files++;
  int g = ts_jv_first(&v, 0);
  for (int gi = 0; gi < ts_jv_size(&v, 0); gi++, g = ts_jv_skip(&v, g)) {
    int schema = ts_jv_get(&v, g, "schema"), tests = ts_jv_get(&v, g, "tests");
    ck_assert_msg(schema >= 0 && ts_jv_type_of(&v, tests) == TS_JV_ARRAY, "%s: group %d", path, gi);
    /* raw views first: decoding the descriptions rewrites only their own bytes */
    ts_view stext = ts_jv_raw(&v, schema);
    char why[512];
    ts_schema *s = NULL;
    int crc = ts_schema_compile(stext.p, stext.len, TS_SCHEMA_DRAFT7, &s, why, sizeof why);
    ts_view gname = str_member(&v, g, "description");
    int ntests = ts_jv_size(&v, tests);
    if (required && is_remote_group(file, gname)) {
      ck_assert_msg(crc == TS_E_SCHEMA_INVALID && strstr(why, "remote reference"),
                    "%s \"%.*s\": excluded as remote, but compiled as %s (%s)", file,
                    (int)gname.len, gname.p, ts_err_name(crc), why);
      t->excluded += ntests;
      continue;
    }
    t->groups++;
    int e = ts_jv_first(&v, tests);
    for (int ti = 0; ti < ntests; ti++, e = ts_jv_skip(&v, e)) {
      int data = ts_jv_get(&v, e, "data"), valid = ts_jv_get(&v, e, "valid");
      ck_assert_msg(data >= 0 && valid >= 0, "%s: group %d test %d", path, gi, ti);
      ts_view dtext = ts_jv_raw(&v, data);
      int want = ts_jv_is_true(&v, valid) ? TS_E_OK : TS_E_SCHEMA_MISMATCH;
      int got = crc;
      char vwhy[512] = "";
      if (crc == TS_E_OK) got = ts_schema_validate(s, dtext.p, dtext.len, vwhy, sizeof vwhy);
      t->cases++;
      if (got == want) {
        t->passed++;
        continue;
      }
      t->failed++;
      if (!required) continue; /* counted, not listed: see the essay above */
      ts_view tname = str_member(&v, e, "description");
      fprintf(stderr, "FAIL %s \"%.*s\" / \"%.*s\": want %s, got %s (%s)\n", file, (int)gname.len, gname.p,
              (int)tname.len, tname.p, ts_err_name(want), ts_err_name(got),
              crc == TS_E_OK ? vwhy : why);
    }
    ts_schema_free(s);
  }
  ts_jv_fini(&v);
  free(text);
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .json files of dir, sorted (readdir's order is the file system's). */
static size_t list_json(const char *dir, char ***out) {
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "cannot open %s (Debian package json-schema-test-suite)", dir);
  size_t n = 0, cap = 64;
  char **names = malloc(cap * sizeof *names);
  ck_assert_ptr_nonnull(names);
  for (struct dirent *de; (de = readdir(d));) {
    size_t l = strlen(de->d_name);
    if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0) continue;
    if (n == cap) {
      cap *= 2;
      names = realloc(names, cap * sizeof *names);
      ck_assert_ptr_nonnull(names);
    }
    names[n] = strdup(de->d_name);
    ck_assert_ptr_nonnull(names[n]);
    n++;
  }
  closedir(d);
  qsort(names, n, sizeof *names, name_cmp);
  *out = names;
  return n;
}

static void free_list(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

START_TEST(test_draft7_required) {
  const char *dir = suite_dir();
  char **names;
  size_t n = list_json(dir, &names);
  tally t = {0};
  for (size_t i = 0; i < n; i++) {
    if (strcmp(names[i], "refRemote.json") == 0) {
      fprintf(stderr, "excluded: refRemote.json (remote references)\n");
      continue;
    }
    run_file(dir, names[i], &t, 1);
  }
  free_list(names, n);
  fprintf(stderr,
          "JSON Schema Test Suite draft 7, required: %d files, %d groups, %d cases: %d pass, "
          "%d fail; %d cases excluded (remote references to the meta-schema)\n",
          t.files, t.groups, t.cases, t.passed, t.failed, t.excluded);
  /* the suite is all there (Debian's 2.0.0 has 34 required files, 423 cases) */
  ck_assert_int_ge(t.files, 34);
  ck_assert_int_ge(t.cases, 400);
  ck_assert_int_eq(t.excluded, 4);
  ck_assert_msg(t.failed == 0, "%d required draft-7 cases fail (listed above)", t.failed);
}
END_TEST

/* optional/: informational; the only assertion is that nothing crashes or leaks. */
START_TEST(test_draft7_optional) {
  char dir[1024];
  const char *subs[] = {"optional", "optional/format"};
  for (size_t k = 0; k < 2; k++) {
    snprintf(dir, sizeof dir, "%s/%s", suite_dir(), subs[k]);
    char **names;
    size_t n = list_json(dir, &names);
    tally t = {0};
    for (size_t i = 0; i < n; i++) run_file(dir, names[i], &t, 0);
    free_list(names, n);
    fprintf(stderr, "JSON Schema Test Suite draft 7, %s (not required): %d cases, %d agree, %d differ\n",
            subs[k], t.cases, t.passed, t.failed);
    ck_assert_int_gt(t.cases, 0);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("schema_suite");
  TCase *tc = tcase_create("draft7");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_draft7_required);
  tcase_add_test(tc, test_draft7_optional);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
