/*
 * origin_test.c: the browser rules of base/origin.h, row by row: which Origin a listener
 * serves (ts_origin_allowed) and which Host it answers (ts_host_allowed, the DNS
 * rebinding guard). The endpoint's use of both is tested over HTTP in tests/ui
 * (clients.mjs) and the bus's in tests/events/bus_test.c.
 */
#include <check.h>
#include <stddef.h>

#include "base/origin.h"
#include "support/runner.h"

static const char *const allow[] = {"https://ui.example.com", "http://Team.Example:8080"};
#define NALLOW (sizeof allow / sizeof allow[0])

typedef struct {
  int line;
  const char *label;
  const char *value; /* NULL: no header */
  int want;
} row;

static const row host_rows[] = {
    {__LINE__, "no Host (HTTP/1.0)", NULL, 1},
    {__LINE__, "IPv4 loopback with a port", "127.0.0.1:8788", 1},
    {__LINE__, "IPv4 loopback without a port", "127.0.0.1", 1},
    {__LINE__, "another IPv4 literal (a LAN listener)", "192.0.2.7:80", 1},
    {__LINE__, "IPv6 loopback", "[::1]:8788", 1},
    {__LINE__, "IPv6 without a port", "[::1]", 1},
    {__LINE__, "IPv6 with an IPv4 tail", "[::ffff:127.0.0.1]:1", 1},
    {__LINE__, "localhost", "localhost:8788", 1},
    {__LINE__, "localhost in capitals", "LOCALHOST", 1},
    {__LINE__, "localhost with a trailing dot", "localhost.:8788", 1},
    {__LINE__, "a name under .localhost", "app.localhost:3000", 1},
    {__LINE__, "an allowed origin's host (any case)", "UI.example.com", 1},
    {__LINE__, "an allowed origin's host and port", "team.example:8080", 1},
    {__LINE__, "a rebinding name with the listener's port", "evil.example:8788", 0},
    {__LINE__, "a rebinding name without a port", "evil.example", 0},
    {__LINE__, "an allowed host on another port", "team.example:8081", 0},
    {__LINE__, "an allowed host without its port", "team.example", 0},
    {__LINE__, "a name starting like an IPv4 literal", "127.0.0.1.evil.example", 0},
    {__LINE__, "a name starting like localhost", "localhost.evil.example:8788", 0},
    {__LINE__, "localhost inside a name", "notlocalhost", 0},
    {__LINE__, ".localhost alone", ".localhost", 0},
    {__LINE__, "a name ending in -localhost", "evil-localhost", 0},
    {__LINE__, "a name under .localhost with a space", "a b.localhost", 0},
    {__LINE__, "a name under .localhost with a slash", "evil.example/.localhost", 0},
    {__LINE__, "a name under .localhost with a control byte", "a\x01.localhost:80", 0},
    {__LINE__, "a name under .localhost with a non-ASCII byte", "caf\xc3\xa9.localhost", 0},
    {__LINE__, "a name under .localhost with '-' and '_'", "my-app_1.dev.localhost", 1},
    {__LINE__, "IPv4 with five parts", "1.2.3.4.5", 0},
    {__LINE__, "IPv4 with three parts", "127.0.1", 0},
    {__LINE__, "IPv4 part over 255", "127.0.0.256", 0},
    {__LINE__, "IPv4 with a leading zero (not a browser's form)", "127.0.0.01", 0},
    {__LINE__, "a hex number (not a browser's form)", "0x7f000001", 0},
    {__LINE__, "a decimal number (not a browser's form)", "2130706433", 0},
    {__LINE__, "empty", "", 0},
    {__LINE__, "a port alone", ":8788", 0},
    {__LINE__, "an empty port", "127.0.0.1:", 0},
    {__LINE__, "a port over 65535", "127.0.0.1:65536", 0},
    {__LINE__, "port 65535", "127.0.0.1:65535", 1},
    {__LINE__, "a port of six digits", "127.0.0.1:008788", 0},
    {__LINE__, "a port with a letter", "127.0.0.1:87a8", 0},
    {__LINE__, "two ports", "127.0.0.1:1:2", 0},
    {__LINE__, "a bracketed name", "[evil.example]:8788", 0},
    {__LINE__, "brackets without a colon inside", "[1234]", 0},
    {__LINE__, "an unclosed bracket", "[::1:8788", 0},
    {__LINE__, "junk after the bracket", "[::1]x", 0},
    {__LINE__, "a user part", "evil@127.0.0.1", 0},
};

static const row origin_rows[] = {
    {__LINE__, "no Origin (not a browser)", NULL, 1},
    {__LINE__, "the listener itself", "http://127.0.0.1:8788", 1},
    {__LINE__, "a loopback page on another port", "http://localhost:3000", 1},
    {__LINE__, "IPv6 loopback over https", "https://[::1]:9", 1},
    {__LINE__, "an allowed origin", "https://ui.example.com", 1},
    {__LINE__, "a foreign origin", "http://evil.example", 0},
    {__LINE__, "a foreign origin named like loopback", "http://localhost.evil.example", 0},
    {__LINE__, "an allowed origin's scheme changed", "http://ui.example.com", 0},
    {__LINE__, "the opaque origin", "null", 0},
};

START_TEST(test_host_rows) {
  const row *r = &host_rows[_i];
  ck_assert_msg(ts_host_allowed(r->value, allow, NALLOW) == r->want, "line %d (%s): want %d",
                r->line, r->label, r->want);
}
END_TEST

START_TEST(test_origin_rows) {
  const row *r = &origin_rows[_i];
  ck_assert_msg(ts_origin_allowed(r->value, "127.0.0.1:8788", allow, NALLOW) == r->want,
                "line %d (%s): want %d", r->line, r->label, r->want);
}
END_TEST

/* Without an allow-list only IP literals and localhost names pass; a NULL entry in the
 * list (never set) matches nothing. */
START_TEST(test_no_allow_list) {
  static const char *const holes[] = {NULL};
  ck_assert_int_eq(ts_host_allowed("ui.example.com", NULL, 0), 0);
  ck_assert_int_eq(ts_host_allowed("ui.example.com", holes, 1), 0);
  ck_assert_int_eq(ts_host_allowed("127.0.0.1:1", NULL, 0), 1);
  ck_assert_int_eq(ts_origin_allowed("https://ui.example.com", "127.0.0.1:1", holes, 1), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("origin");
  TCase *tc = tcase_create("rules");
  tcase_add_loop_test(tc, test_host_rows, 0, (int)(sizeof host_rows / sizeof host_rows[0]));
  tcase_add_loop_test(tc, test_origin_rows, 0, (int)(sizeof origin_rows / sizeof origin_rows[0]));
  tcase_add_test(tc, test_no_allow_list);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
