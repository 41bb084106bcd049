/*
 * sigv4_check.h: checks that a request the model server recorded (support/model_server.h)
 * carries an AWS SigV4 signature over exactly what arrived: the path and query of its
 * request line, its Host, Content-Type and Accept headers, its X-Amz-Date and its body.
 *
 * Header only, with static inline functions: it needs the network room (net/sigv4.h),
 * which not every test program links, so it cannot live in a support .c file (those go
 * into all).
 *
 * The signature is recomputed here from the recorded request and compared with the one
 * sent: a request whose URL changed after signing (another model's path) fails, because
 * the signature over the path that arrived is not the one that was sent.
 */
#ifndef TS_TEST_SIGV4_CHECK_H
#define TS_TEST_SIGV4_CHECK_H

/* strptime and timegm: the includer defines _GNU_SOURCE before its first include. */
#include <check.h>
#include <string.h>
#include <time.h>

#include "net/sigv4.h"
#include "support/model_server.h"

/* Fails the test unless `head` (DIR/requests/N.txt) and `body` (N.json, blen bytes) are
 * signed with `k`, as sent. */
static inline void ts_test_assert_signed_as_sent(const char *head, const char *body, size_t blen,
                                                 const ts_sigv4_key *k) {
  char auth[TS_SIGV4_AUTH_MAX], date[32], host[256], ctype[128], accept[128], uri[2048];
  ck_assert_msg(ts_test_head_value(head, "Authorization", auth, sizeof auth) &&
                    ts_test_head_value(head, "X-Amz-Date", date, sizeof date) &&
                    ts_test_head_value(head, "Host", host, sizeof host) &&
                    ts_test_head_value(head, "Content-Type", ctype, sizeof ctype) &&
                    ts_test_head_value(head, "Accept", accept, sizeof accept) &&
                    ts_test_head_uri(head, uri, sizeof uri),
                "not a signed request: %s", head);
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  ck_assert_ptr_nonnull(strptime(date, "%Y%m%dT%H%M%SZ", &tm));
  char *q = strchr(uri, '?');
  if (q) *q++ = '\0';
  const ts_sigv4_header sh[] = {{"Host", host}, {"Content-Type", ctype}, {"Accept", accept}};
  ts_sigv4_request r = {"POST", uri, q, sh, 3, body, blen};
  ts_sigv4_result want;
  ck_assert_int_eq(ts_sigv4_sign(k, &r, timegm(&tm), &want), TS_E_OK);
  ck_assert_msg(!strcmp(auth, want.authorization), "signed %s\nnot as sent: %s\nin %s", auth,
                want.authorization, head);
}

#endif
