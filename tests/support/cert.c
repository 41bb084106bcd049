/*
 * cert.c: see cert.h. The directory comes from the test (a ts_test_tempdir path), so the
 * command line holds no user input; it is quoted all the same.
 */
#include "support/cert.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

void ts_test_make_cert(const char *dir) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost "
           "-addext subjectAltName=DNS:localhost -keyout key.pem -out cert.pem >/dev/null 2>&1 "
           "&& cat cert.pem key.pem > both.pem",
           dir);
  ck_assert_msg(system(cmd) == 0, "openssl could not make a certificate in %s", dir);
}
