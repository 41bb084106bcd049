/*
 * dotenv_test.c: the --env-file format (runtime/tools/dotenv.c), table-driven: what each
 * line gives, and the line and reason of each error (never the value).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/dotenv.h"
#include "support/runner.h"

typedef struct {
  char out[1024];
} seen;

static int put(void *user, const char *name, const char *value, size_t len) {
  seen *s = user;
  char line[300];
  snprintf(line, sizeof line, "%s=[%.*s];", name, (int)len, value);
  strncat(s->out, line, sizeof s->out - strlen(s->out) - 1);
  return 0;
}

static const struct {
  int line;
  const char *label, *in, *want;
  int rc;      /* entries, or the error */
  size_t at;   /* the error's line */
  const char *why;
} rows[] = {
    {__LINE__, "empty", "", "", 0, 0, NULL},
    {__LINE__, "comments and blanks", "# c\n\n  # d\n", "", 0, 0, NULL},
    {__LINE__, "plain", "A=1\nB=two words\n", "A=[1];B=[two words];", 2, 0, NULL},
    {__LINE__, "no final newline, CRLF", "A=1\r\nB=2", "A=[1];B=[2];", 2, 0, NULL},
    {__LINE__, "export and spaces", "export  A = x  \n", "A=[x];", 1, 0, NULL},
    {__LINE__, "inline comment", "A=x # note\nB=x#y\n", "A=[x];B=[x#y];", 2, 0, NULL},
    {__LINE__, "empty value", "A=\nB=''\n", "A=[];B=[];", 2, 0, NULL},
    {__LINE__, "single quotes literal", "A='$x \\n # y'\n", "A=[$x \\n # y];", 1, 0, NULL},
    {__LINE__, "double quote escapes", "A=\"a\\nb\\t\\\"q\\\" \\\\ \\$\" # c\n",
     "A=[a\nb\t\"q\" \\ $];", 1, 0, NULL},
    {__LINE__, "equals in value", "URL=http://h/?a=b\n", "URL=[http://h/?a=b];", 1, 0, NULL},
    {__LINE__, "dotted and dashed names", "a.b-c_1=v\n", "a.b-c_1=[v];", 1, 0, NULL},
    {__LINE__, "not an assignment", "A=1\nJUST A LINE\n", "A=[1];", TS_E_INVAL, 2, "expected NAME=VALUE"},
    {__LINE__, "bad name", "1A=x\n", "", TS_E_INVAL, 1, "is not a variable name"},
    {__LINE__, "unclosed quote", "A=\"open\n", "", TS_E_INVAL, 1, "no closing"},
    {__LINE__, "text after quote", "A='x' y\n", "", TS_E_INVAL, 1, "after the closing quote"},
    {__LINE__, "unknown escape", "A=\"\\q\"\n", "", TS_E_INVAL, 1, "unknown escape"},
};

START_TEST(test_rows) {
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    size_t n = strlen(rows[i].in);
    char *buf = malloc(n + 1);
    memcpy(buf, rows[i].in, n);
    seen s = {""};
    size_t line = 0;
    char why[200] = "";
    int rc = ts_dotenv_parse(buf, n, put, &s, &line, why, sizeof why);
    ck_assert_msg(rc == rows[i].rc, "line %d (%s): rc %d", rows[i].line, rows[i].label, rc);
    ck_assert_msg(!strcmp(s.out, rows[i].want), "line %d (%s): %s", rows[i].line, rows[i].label,
                  s.out);
    if (rows[i].why) {
      ck_assert_msg(line == rows[i].at, "line %d (%s): at %zu", rows[i].line, rows[i].label, line);
      ck_assert_msg(strstr(why, rows[i].why), "line %d (%s): %s", rows[i].line, rows[i].label, why);
    }
    free(buf);
  }
}
END_TEST

START_TEST(test_limits) {
  size_t n = TS_DOTENV_VALUE_MAX + 16;
  char *buf = malloc(n + 1);
  memcpy(buf, "A=", 2);
  memset(buf + 2, 'x', n - 2);
  char why[200] = "";
  ck_assert_int_eq(ts_dotenv_parse(buf, n, put, &(seen){""}, NULL, why, sizeof why), TS_E_LIMIT);
  ck_assert_ptr_null(strstr(why, "xxxx")); /* never the value */
  free(buf);
  ck_assert_int_eq(ts_dotenv_parse(NULL, 0, put, NULL, NULL, why, sizeof why), TS_E_INVAL);
}
END_TEST

/* Bytes a strlen-based row cannot hold (NUL), and bytes a reason must not carry raw (a
 * terminal escape, a bell): the reason shows them as \xNN, and a NUL never cuts a value
 * short in silence. */
static const struct {
  int line;
  const char *label, *in;
  size_t len;
  const char *want, *why;
  size_t at;
} hostile[] = {
#define B(s) s, sizeof s - 1 /* the bytes and their length, NULs included */
    {__LINE__, "NUL inside a value", B("A=1\nB=se\0cret\n"), "A=[1];", "NUL byte", 2},
    {__LINE__, "NUL inside a quoted value", B("A='se\0cret'\n"), "", "NUL byte", 1},
    {__LINE__, "NUL in a comment", B("# a\0b\nA=1\n"), "", "NUL byte", 1},
    {__LINE__, "escape sequence in a name", B("\x1b[2J=x\n"), "", "\\x1b[2J", 1},
    {__LINE__, "bell as an escape", B("A=\"\\\a\"\n"), "", "unknown escape \\\\x07", 1},
#undef B
};

START_TEST(test_hostile_bytes) {
  for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
    char *buf = malloc(hostile[i].len + 1);
    memcpy(buf, hostile[i].in, hostile[i].len);
    seen s = {""};
    size_t line = 0;
    char why[200] = "";
    int rc = ts_dotenv_parse(buf, hostile[i].len, put, &s, &line, why, sizeof why);
    ck_assert_msg(rc == TS_E_INVAL, "line %d (%s): rc %d", hostile[i].line, hostile[i].label, rc);
    ck_assert_msg(!strcmp(s.out, hostile[i].want), "line %d (%s): %s", hostile[i].line,
                  hostile[i].label, s.out);
    ck_assert_msg(line == hostile[i].at, "line %d (%s): at %zu", hostile[i].line,
                  hostile[i].label, line);
    ck_assert_msg(strstr(why, hostile[i].why), "line %d (%s): %s", hostile[i].line,
                  hostile[i].label, why);
    for (const char *w = why; *w; w++)
      ck_assert_msg((unsigned char)*w >= 0x20 && *w != 0x7f, "line %d (%s): raw byte %02x",
                    hostile[i].line, hostile[i].label, (unsigned char)*w);
    free(buf);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *su = suite_create("dotenv");
  TCase *tc = tcase_create("dotenv");
  tcase_add_test(tc, test_rows);
  tcase_add_test(tc, test_limits);
  tcase_add_test(tc, test_hostile_bytes);
  suite_add_tcase(su, tc);
  return su;
}

int main(void) {
  return ts_test_run(suite(), 0);
}
