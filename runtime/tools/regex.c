/*
 * regex.c: PCRE2 set up to behave like ECMA-262 (see regex.h for what differs).
 *
 * Each compiled pattern carries its own general context (our malloc and free, so the
 * test suite's failing allocator reaches PCRE2's allocations too) and its own match
 * context holding the backtracking limits. The match context is only read by
 * pcre2_match, so concurrent searches may share it; the match data (ovector and
 * PCRE2's remembered backtracking frames) is per thread: the caller's scratch.
 *
 * No JIT: it would allocate executable memory and the patterns in tool schemas are
 * short; the interpreter with a step limit is fast enough and bounded.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tools/regex.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>

struct ts_regex {
  pcre2_general_context *gctx;
  pcre2_match_context *mctx;
  pcre2_code *code;
};

struct ts_regex_scratch {
  pcre2_match_data *md;
};

/* PCRE2's allocator hooks: plain malloc and free, called from this object so that
 * a wrapped malloc (the tests') sees them. */
static void *rx_malloc(PCRE2_SIZE n, void *data) {
  (void)data;
  return malloc(n);
}

static void rx_free(void *p, void *data) {
  (void)data;
  free(p);
}

void ts_regex_free(ts_regex *re) {
  if (!re) return;
  pcre2_code_free(re->code);
  pcre2_match_context_free(re->mctx);
  pcre2_general_context_free(re->gctx);
  free(re);
}

int ts_regex_compile(const char *pattern, size_t len, ts_regex **out, char *why,
                     size_t why_cap) {
  if (why_cap) why[0] = '\0';
  ts_regex *re = calloc(1, sizeof *re);
  if (!re) return TS_E_NOMEM;
  pcre2_compile_context *cctx = NULL;
  int rc = TS_E_NOMEM;
  re->gctx = pcre2_general_context_create(rx_malloc, rx_free, NULL);
  if (!re->gctx) goto out;
  re->mctx = pcre2_match_context_create(re->gctx);
  cctx = pcre2_compile_context_create(re->gctx);
  if (!re->mctx || !cctx) goto out;
  pcre2_set_match_limit(re->mctx, TS_REGEX_MATCH_LIMIT);
  pcre2_set_heap_limit(re->mctx, TS_REGEX_HEAP_LIMIT_KIB);
  pcre2_set_compile_extra_options(cctx, PCRE2_EXTRA_ALT_BSUX);
  int err = 0;
  PCRE2_SIZE at = 0;
  /* The pattern is a decoded JSON string, so its UTF-8 is already valid. */
  re->code = pcre2_compile((PCRE2_SPTR)(len ? pattern : ""), len,
                           PCRE2_UTF | PCRE2_NO_UTF_CHECK | PCRE2_DOLLAR_ENDONLY |
                               PCRE2_ALT_BSUX | PCRE2_ALLOW_EMPTY_CLASS,
                           &err, &at, cctx);
  if (!re->code) {
    if (err == PCRE2_ERROR_HEAP_FAILED) goto out;
    PCRE2_UCHAR msg[160];
    if (pcre2_get_error_message(err, msg, sizeof msg) < 0) msg[0] = '\0';
    if (why_cap) snprintf(why, why_cap, "%s at offset %zu", (const char *)msg, (size_t)at);
    rc = TS_E_INVAL;
    goto out;
  }
  rc = TS_E_OK;
out:
  pcre2_compile_context_free(cctx);
  if (rc == TS_E_OK) {
    *out = re;
  } else {
    ts_regex_free(re);
  }
  return rc;
}

int ts_regex_search(const ts_regex *re, const char *subject, size_t len,
                    ts_regex_scratch **scratch) {
  if (!*scratch) {
    ts_regex_scratch *s = calloc(1, sizeof *s);
    if (!s) return TS_E_NOMEM;
    /* one pair of offsets: only "did it match" matters */
    s->md = pcre2_match_data_create(1, re->gctx);
    if (!s->md) {
      free(s);
      return TS_E_NOMEM;
    }
    *scratch = s;
  }
  int rc = pcre2_match(re->code, (PCRE2_SPTR)(len ? subject : ""), len, 0, PCRE2_NO_UTF_CHECK,
                       (*scratch)->md, re->mctx);
  if (rc >= 0) return 1; /* 0: matched, the ovector was too small for the groups */
  if (rc == PCRE2_ERROR_NOMATCH) return 0;
  if (rc == PCRE2_ERROR_NOMEMORY) return TS_E_NOMEM;
  /* the match, depth or heap limit; any other error cannot happen with checked UTF-8
   * and is treated the same way: no answer within bounds */
  return TS_E_LIMIT;
}

void ts_regex_scratch_free(ts_regex_scratch *scratch) {
  if (!scratch) return;
  pcre2_match_data_free(scratch->md);
  free(scratch);
}
