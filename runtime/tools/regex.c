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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

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

/* ---- ECMA-262 to PCRE2 -------------------------------------------------------------- */

/* ECMA-262's \s: WhiteSpace and LineTerminator, as the body of a PCRE2 class (in
 * ALT_BSUX syntax: \xhh and \uhhhh, since \x{...} would be a literal x). */
#define ECMA_SPACE \
  "\\t\\n\\x0b\\f\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"

/* ECMA-262's `.`: anything but a LineTerminator. */
#define ECMA_DOT "[^\\n\\r\\u2028\\u2029]"

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

static int is_alnum(char ch) {
  return is_digit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* Rewrites an ECMA-262 pattern p[0..n) into `out` for PCRE2 where the two differ in
 * meaning (`.`, `\s`, `\S`, `\v`), and refuses the syntax that means something only
 * to PCRE2 (its letter escapes such as \A \Z \z \h \R \K \Q, group forms such as
 * (?i) (?> (?| (?R) (?P<, possessive quantifiers). Returns TS_E_OK, TS_E_INVAL with
 * the reason in why, or the buffer's TS_E_NOMEM. The pattern is valid UTF-8 (a
 * decoded JSON string), and nothing here looks inside a multi-byte character. */
static int ecma_translate(const char *p, size_t n, ts_buf *out, char *why, size_t why_cap) {
  int in_class = 0, quant = 0; /* quant: the last item was a quantifier */
  for (size_t i = 0; i < n; i++) {
    char ch = p[i];
    int was_quant = quant;
    quant = 0;
    if (ch == '\\') {
      if (i + 1 == n) break; /* PCRE2 reports the trailing backslash */
      char x = p[++i];
      if (x == 'v') {
        ts_buf_puts(out, "\\x0b");
      } else if (x == 's') {
        ts_buf_puts(out, in_class ? ECMA_SPACE : "[" ECMA_SPACE "]");
      } else if (x == 'S' && !in_class) {
        ts_buf_puts(out, "[^" ECMA_SPACE "]");
      } else if (is_alnum(x) && !is_digit(x) && !strchr("dDwWbBfnrtpPuxckS", x)) {
        if (why_cap) snprintf(why, why_cap, "\\%c is not an ECMA-262 escape at offset %zu", x, i - 1);
        return TS_E_INVAL;
      } else {
        ts_buf_putc(out, '\\');
        ts_buf_putc(out, x);
      }
      continue;
    }
    if (in_class) {
      if (ch == ']') in_class = 0;
      ts_buf_putc(out, ch);
      continue;
    }
    switch (ch) {
      case '[':
        in_class = 1;
        ts_buf_putc(out, ch);
        /* `]` right after `[` or `[^` closes the class (ECMA-262's empty class) */
        if (i + 1 < n && p[i + 1] == '^') ts_buf_putc(out, p[++i]);
        if (i + 1 < n && p[i + 1] == ']') {
          ts_buf_putc(out, p[++i]);
          in_class = 0;
        }
        break;
      case '.':
        ts_buf_puts(out, ECMA_DOT);
        break;
      case '(':
        ts_buf_putc(out, ch);
        if (i + 1 < n && p[i + 1] == '?') {
          char a = i + 2 < n ? p[i + 2] : '\0', b = i + 3 < n ? p[i + 3] : '\0';
          int ok = a == ':' || a == '=' || a == '!' ||
                   (a == '<' && (b == '=' || b == '!' || b == '_' || b == '$' ||
                                 (is_alnum(b) && !is_digit(b)) || (unsigned char)b >= 0x80));
          if (!ok) {
            if (why_cap) snprintf(why, why_cap, "(?%c is not ECMA-262 syntax at offset %zu", a ? a : ' ', i);
            return TS_E_INVAL;
          }
          ts_buf_putc(out, p[++i]);
        }
        break;
      case '*':
      case '?':
        ts_buf_putc(out, ch);
        quant = !was_quant || ch != '?'; /* `*?` is lazy: the `?` is no new quantifier */
        break;
      case '+':
        if (was_quant) {
          if (why_cap) snprintf(why, why_cap, "a possessive quantifier is not ECMA-262 syntax at offset %zu", i);
          return TS_E_INVAL;
        }
        ts_buf_putc(out, ch);
        quant = 1;
        break;
      case '{': {
        /* {n}, {n,}, {n,m}: a quantifier; anything else a literal brace */
        size_t j = i + 1;
        while (j < n && is_digit(p[j])) j++;
        int q = j > i + 1;
        if (q && j < n && p[j] == ',') {
          j++;
          while (j < n && is_digit(p[j])) j++;
        }
        q = q && j < n && p[j] == '}';
        if (q) {
          ts_buf_append(out, p + i, j + 1 - i);
          i = j;
          quant = 1;
        } else {
          ts_buf_putc(out, ch);
        }
        break;
      }
      default:
        ts_buf_putc(out, ch);
    }
  }
  return out->err;
}

int ts_regex_compile(const char *pattern, size_t len, ts_regex **out, char *why,
                     size_t why_cap) {
  if (why_cap) why[0] = '\0';
  /* the rewritten pattern: at most 80 bytes for each byte of the original */
  ts_buf pat;
  ts_buf_init(&pat, len > SIZE_MAX / 80 - 16 ? SIZE_MAX / 2 : len * 80 + 16);
  int rc = ecma_translate(pattern, len, &pat, why, why_cap);
  if (rc) {
    ts_buf_fini(&pat);
    return rc;
  }
  ts_regex *re = calloc(1, sizeof *re);
  if (!re) {
    ts_buf_fini(&pat);
    return TS_E_NOMEM;
  }
  pcre2_compile_context *cctx = NULL;
  rc = TS_E_NOMEM;
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
  re->code = pcre2_compile((PCRE2_SPTR)(pat.len ? pat.p : ""), pat.len,
                           PCRE2_UTF | PCRE2_NO_UTF_CHECK | PCRE2_DOLLAR_ENDONLY |
                               PCRE2_ALT_BSUX | PCRE2_ALLOW_EMPTY_CLASS,
                           &err, &at, cctx);
  if (!re->code) {
    if (err == PCRE2_ERROR_HEAP_FAILED) goto out;
    PCRE2_UCHAR msg[160];
    if (pcre2_get_error_message(err, msg, sizeof msg) < 0) msg[0] = '\0';
    /* the offset is PCRE2's, in the rewritten pattern: say it only when that is the
     * pattern as written */
    int same = pat.len == len && (len == 0 || memcmp(pat.p, pattern, len) == 0);
    if (why_cap && same)
      snprintf(why, why_cap, "%s at offset %zu", (const char *)msg, (size_t)at);
    else if (why_cap)
      snprintf(why, why_cap, "%s", (const char *)msg);
    rc = TS_E_INVAL;
    goto out;
  }
  rc = TS_E_OK;
out:
  pcre2_compile_context_free(cctx);
  ts_buf_fini(&pat);
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
