/*
 * dotenv.c: see dotenv.h. Line by line, linear code: a dotenv file is small and each
 * line stands alone, so there is no state to carry between lines except the line count.
 */
#include "tools/dotenv.h"

#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "store/store.h"

static int blank(char c) { return c == ' ' || c == '\t'; }

int ts_dotenv_parse(char *text, size_t len, ts_dotenv_cb cb, void *user, size_t *line,
                    char *why, size_t why_cap) {
  size_t dummy;
  if (!line) line = &dummy;
  *line = 0;
  if (!text || !cb) return TS_E_INVAL;
  if (len > TS_DOTENV_MAX) {
    snprintf(why, why_cap, "file larger than %zu bytes", TS_DOTENV_MAX);
    return TS_E_LIMIT;
  }
  text[len] = '\0';
  int n = 0;
  char *p = text, *end = text + len;
  while (p < end) {
    ++*line;
    char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    char *next = eol < end ? eol + 1 : end;
    if (eol > p && eol[-1] == '\r') eol--;
    if (memchr(p, '\0', (size_t)(eol - p))) { /* it would end the line's text unseen */
      snprintf(why, why_cap, "a NUL byte in the line");
      return TS_E_INVAL;
    }
    *eol = '\0';
    while (blank(*p)) p++;
    if (!*p || *p == '#') {
      p = next;
      continue;
    }
    if (!strncmp(p, "export", 6) && blank(p[6])) {
      p += 6;
      while (blank(*p)) p++;
    }
    char *name = p;
    while (*p && *p != '=' && !blank(*p)) p++;
    char *name_end = p;
    while (blank(*p)) p++;
    if (*p != '=') {
      snprintf(why, why_cap, "expected NAME=VALUE");
      return TS_E_INVAL;
    }
    *name_end = '\0';
    p++;
    if (!ts_store_var_name_valid(name)) {
      char q[32 * 4 + 1]; /* 32 bytes of the name, each at most \xNN */
      snprintf(why, why_cap, "\"%s\" is not a variable name",
               ts_str_quote(q, sizeof q, name, strlen(name), 32));
      return TS_E_INVAL;
    }
    while (blank(*p)) p++;
    char *val = p, *w = p;
    if (*p == '\'' || *p == '"') {
      char q = *p++;
      for (;;) {
        if (!*p) {
          snprintf(why, why_cap, "%s has no closing %c", name, q);
          return TS_E_INVAL;
        }
        if (*p == q) break;
        if (q == '"' && *p == '\\' && p[1]) {
          p++;
          char c = *p == 'n' ? '\n' : *p == 'r' ? '\r' : *p == 't' ? '\t' : *p;
          if (c == *p && c != '"' && c != '\\' && c != '$') {
            char e[8];
            snprintf(why, why_cap, "%s: unknown escape \\%s", name, ts_str_quote(e, sizeof e, p, 1, 1));
            return TS_E_INVAL;
          }
          *w++ = c;
          p++;
          continue;
        }
        *w++ = *p++;
      }
      p++;
      while (blank(*p)) p++;
      if (*p && *p != '#') {
        snprintf(why, why_cap, "%s: text after the closing quote", name);
        return TS_E_INVAL;
      }
    } else {
      while (*p && !(*p == '#' && p > val && blank(p[-1]))) p++;
      w = p;
      while (w > val && blank(w[-1])) w--;
    }
    size_t vl = (size_t)(w - val);
    if (vl > TS_DOTENV_VALUE_MAX) {
      snprintf(why, why_cap, "%s: value longer than %zu bytes", name, TS_DOTENV_VALUE_MAX);
      return TS_E_LIMIT;
    }
    *w = '\0';
    if (cb(user, name, val, vl)) return TS_E_ABORTED;
    n++;
    p = next;
  }
  return n;
}
