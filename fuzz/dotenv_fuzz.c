/*
 * dotenv_fuzz.c: the --env-file parser (runtime/tools/dotenv.h) on hostile text.
 *
 * The input is the file. It is parsed (in place, so each parse gets its own exact-size
 * copy: ASan sees a read or write past text[len]) and the parse must keep the header's
 * promises: only its documented return codes (the entry count, TS_E_ABORTED, TS_E_LIMIT,
 * TS_E_INVAL); every name handed over follows the variable-name rule (checked here
 * independently of ts_store_var_name_valid); names and values lie inside the text in
 * order, each NUL-terminated where its length says; the count returned is the entries
 * handed over; a failure names a line of the text, and its reason never carries eight
 * bytes of the failing line's value. A second parse of the same text gives the same
 * answers; a third, stopped by the callback halfway, gives TS_E_ABORTED after exactly the
 * same first entries.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "fuzz_split.h"
#include "store/store.h"
#include "tools/dotenv.h"

typedef struct {
  const char *text;
  size_t len;
  const char *last; /* the previous entry's name */
  int entries, stop_at; /* stop_at: the callback's non-zero return at that entry (0: never) */
  ts_buf trace;
} sink;

/* The name rule of store.h, written out again: 1..TS_STORE_VAR_NAME_MAX bytes, a letter or
 * '_', then letters, digits, '_', '.' or '-'. */
static int name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > TS_STORE_VAR_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int alpha = (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    if (!(alpha || c == '_' || (i && ((c >= '0' && c <= '9') || c == '.' || c == '-')))) return 0;
  }
  return 1;
}

static int on_entry(void *user, const char *name, const char *value, size_t len) {
  sink *s = user;
  const char *end = s->text + s->len;
  if (!name || !value || name < s->text || name >= end || value < s->text || value > end)
    abort();
  if (len > (size_t)(end - value) || value[len] != '\0' || len > TS_DOTENV_VALUE_MAX) abort();
  if (!name_ok(name) || name + strlen(name) > end) abort();
  if (s->last && name <= s->last) abort(); /* entries in the order of the text */
  s->last = name;
  ts_buf_puts(&s->trace, name);
  ts_buf_putc(&s->trace, '=');
  ts_fuzz_put_view(&s->trace, (ts_view){value, len});
  ts_buf_putc(&s->trace, '\n');
  return ++s->entries == s->stop_at;
}

/* Parses a fresh copy of in[0..n) and renders the outcome into *out. */
static int parse(const uint8_t *in, size_t n, int stop_at, size_t *line, char *why, size_t cap,
                 ts_buf *out, int *entries, size_t *entries_len) {
  char *text = malloc(n + 1); /* exact size: text[n] is the NUL the parser writes */
  if (n) memcpy(text, in, n);
  sink s = {.text = text, .len = n, .stop_at = stop_at};
  ts_buf_init(&s.trace, 64u << 20);
  int rc = ts_dotenv_parse(text, n, on_entry, &s, line, why, cap);
  if (text[n] != '\0') abort();
  *entries_len = s.trace.len;
  ts_buf_puts(&s.trace, "rc ");
  ts_buf_append_u64(&s.trace, (uint64_t)(int64_t)rc);
  if (rc < 0 && rc != TS_E_ABORTED) { /* the line and the reason of a failure */
    ts_buf_puts(&s.trace, " line ");
    ts_buf_append_u64(&s.trace, *line);
    ts_buf_putc(&s.trace, ' ');
    ts_buf_puts(&s.trace, why);
  }
  *out = s.trace;
  *entries = s.entries;
  free(text);
  return rc;
}

/* 1 when the 8 bytes at w occur in hay[0..n), at a place no `fixed` mark covers. */
static int has8(const char *hay, size_t n, const char *fixed, const uint8_t *w) {
  for (size_t i = 0; i + 8 <= n; i++)
    if (!memcmp(hay + i, w, 8) && (!fixed || !memchr(fixed + i, 1, 8))) return 1;
  return 0;
}

/* 1 when some 8 bytes of the failing line's value (after its first '=') are in `why`
 * outside the reasons' fixed words and are not in the part before it (a name the reason
 * may quote). */
static int leaks_value(const uint8_t *in, size_t n, size_t line, const char *why) {
  /* the reasons' words, with the one character a format puts after some (a quote, the
   * escape's letter) */
  static const struct {
    const char *w;
    size_t after;
  } words[] = {{"expected NAME=VALUE", 0}, {"\" is not a variable name", 0},
               {" has no closing ", 1},    {": unknown escape \\", 1},
               {": text after the closing quote", 0}, {": value longer than ", 0},
               {"a NUL byte in the line", 0}};
  char fixed[200] = {0}; /* 1 where why holds a fixed word */
  size_t wl = strlen(why);
  if (why[0] == '"') fixed[0] = 1; /* the quote opening a bad name */
  /* a quoted byte's \xNN (ts_str_quote): its text is the reason's, not the input's */
  for (size_t i = 0; i + 4 <= wl; i++)
    if (why[i] == '\\' && why[i + 1] == 'x' && isxdigit((unsigned char)why[i + 2]) &&
        isxdigit((unsigned char)why[i + 3]))
      memset(fixed + i, 1, 4);
  for (size_t f = 0; f < sizeof words / sizeof words[0]; f++)
    for (const char *h = strstr(why, words[f].w); h; h = strstr(h + 1, words[f].w)) {
      size_t k = strlen(words[f].w) + words[f].after, at = (size_t)(h - why);
      memset(fixed + at, 1, at + k <= wl ? k : wl - at);
    }
  size_t at = 0;
  for (size_t l = 1; l < line && at < n; at++)
    if (in[at] == '\n') l++;
  const uint8_t *eol = memchr(in + at, '\n', n - at);
  size_t end = eol ? (size_t)(eol - in) : n;
  const uint8_t *eq = memchr(in + at, '=', end - at);
  if (!eq) return 0;
  size_t head = (size_t)(eq - in) - at;
  for (size_t i = (size_t)(eq - in) + 1; i + 8 <= end; i++)
    if (has8(why, wl, fixed, in + i) && !has8((const char *)in + at, head, NULL, in + i)) return 1;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t lines = 0;
  for (size_t i = 0; i < size; i++) lines += data[i] == '\n';
  if (size && data[size - 1] != '\n') lines++;

  size_t line1 = 99, line2 = 98; /* the parser must set them */
  char why1[200] = "", why2[200] = "";
  ts_buf t1, t2;
  int n1, n2;
  size_t e1, e2;
  int rc1 = parse(data, size, 0, &line1, why1, sizeof why1, &t1, &n1, &e1);
  parse(data, size, 0, &line2, why2, sizeof why2, &t2, &n2, &e2);
  if (rc1 >= 0 ? rc1 != n1 : rc1 != TS_E_ABORTED && rc1 != TS_E_LIMIT && rc1 != TS_E_INVAL) abort();
  if (rc1 == TS_E_ABORTED) abort(); /* the callback never stopped it */
  ts_fuzz_same("dotenv", &t1, &t2); /* entries, code, line and reason */
  if (rc1 == TS_E_INVAL) {
    if (line1 < 1 || line1 > lines || !why1[0]) abort();
    if (leaks_value(data, size, line1, why1)) abort();
  }
  if (n1 > 0) { /* stopped at the middle entry: the same entries up to it */
    size_t line3;
    char why3[4] = "";
    ts_buf t3;
    size_t e3;
    int n3, stop = (n1 + 1) / 2;
    if (parse(data, size, stop, &line3, why3, sizeof why3, &t3, &n3, &e3) != TS_E_ABORTED || n3 != stop)
      abort();
    if (e3 > e1 || memcmp(t3.p, t1.p, e3)) abort();
    ts_buf_fini(&t3);
  }
  ts_buf_fini(&t1);
  ts_buf_fini(&t2);
  return 0;
}
