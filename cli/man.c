/*
 * man.c: man pages in roff, from the command tables (cli/opts.h).
 *
 * The tables already say everything a page needs: a command's name, its one-line
 * summary (the NAME line, as `toolstream --help` lists it), its synopsis and
 * description, its option groups with metavars and help, and a footer holding the exit
 * statuses and notes. This file only renders them, the way --help does in
 * ts_cli_print_help: the same order, the same groups under the same headings.
 *
 * Roff needs three things of plain text: a backslash is written \e, a hyphen that must
 * stay an ASCII minus (every option name, and prose that mentions one) is \-, and a
 * line may not begin with a '.' or a '\'' (it would be a request), so such a line gets a
 * zero-width \& in front. Text is otherwise left to roff to fill; a blank line in a
 * description or footer starts a new paragraph. A footer paragraph that begins
 * "Exit status:" becomes the EXIT STATUS section, the others NOTES.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/man.h"

/* Writes n bytes of plain text as roff: escapes as above; each '\n' stays a line break
 * in the source (roff fills it), leading blanks of a line are dropped. */
static void text(FILE *f, const char *s, size_t n) {
  int bol = 1;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (bol && (c == ' ' || c == '\t')) continue;
    if (bol && (c == '.' || c == '\'')) fputs("\\&", f);
    bol = 0;
    if (c == '\\') fputs("\\e", f);
    else if (c == '-') fputs("\\-", f);
    else if (c == '\n') {
      fputc('\n', f);
      bol = 1;
    } else fputc(c, f);
  }
  if (!bol) fputc('\n', f);
}

static void texts(FILE *f, const char *s) { text(f, s, strlen(s)); }

/* A word inside a line (an option's name, a metavar, a title): escapes, no newline. */
static void word(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '\\') fputs("\\e", f);
    else if (*s == '-') fputs("\\-", f);
    else fputc(*s, f);
  }
}

/* Paragraphs of s (blank-line separated) that do (want_exit) or do not begin with
 * "Exit status:"; the first one under `heading`, which is printed only if one matches. */
static void paragraphs(FILE *f, const char *s, int want_exit, const char *heading) {
  static const char exit_prefix[] = "Exit status:";
  int printed = 0;
  while (s && *s) {
    const char *end = strstr(s, "\n\n");
    size_t n = end ? (size_t)(end - s) : strlen(s);
    int is_exit = !strncmp(s, exit_prefix, sizeof exit_prefix - 1);
    if (is_exit == want_exit && n) {
      fprintf(f, printed ? ".PP\n" : ".SH %s\n", heading);
      printed = 1;
      const char *p = s;
      size_t m = n;
      if (is_exit) { /* the heading says it: "0 for a clean stream; 1 ..." */
        p += sizeof exit_prefix - 1;
        m -= sizeof exit_prefix - 1;
        while (m && *p == ' ') p++, m--;
      }
      text(f, p, m);
    }
    s = end ? end + 2 : s + n;
  }
}

static void option(FILE *f, const ts_cli_opt *o) {
  fputs(".TP\n", f);
  if (o->letter) fprintf(f, "\\fB\\-%c\\fR, ", o->letter);
  fputs("\\fB\\-\\-", f);
  word(f, o->name);
  fputs("\\fR", f);
  if (o->metavar) {
    fputs(" \\fI", f);
    word(f, o->metavar);
    fputs("\\fR", f);
  }
  fputc('\n', f);
  texts(f, o->help ? o->help : "");
}

static void group(FILE *f, const ts_cli_group *g) {
  for (size_t i = 0; i < g->n_opts; i++) option(f, &g->opts[i]);
}

static void upper(char *dst, size_t cap, const char *src) {
  size_t i = 0;
  for (; src[i] && i + 1 < cap; i++)
    dst[i] = (src[i] >= 'a' && src[i] <= 'z') ? (char)(src[i] - 'a' + 'A') : src[i];
  dst[i] = '\0';
}

/* .TH: NAME in capitals (hyphens escaped), section 1, date, source, manual. */
static void title(FILE *f, const char *page, const char *date) {
  char up[64];
  upper(up, sizeof up, page);
  fputs(".TH ", f);
  word(f, up);
  fprintf(f, " 1 \"%s\" \"toolstream %s\" \"toolstream manual\"\n", date, TS_VERSION);
}

/* SEE ALSO: every other page (the command's and toolstream-events(7)). */
static void see_also(FILE *f, const char *self) {
  size_t n;
  const ts_cli_command *const *cmds = ts_cli_commands(&n);
  fputs(".SH SEE ALSO\n", f);
  if (strcmp(self, "toolstream")) fputs(".BR toolstream (1),\n", f);
  for (size_t i = 0; i < n; i++)
    if (strcmp(self, cmds[i]->name)) fprintf(f, ".BR toolstream\\-%s (1),\n", cmds[i]->name);
  fputs(".BR toolstream\\-events (7)\n", f);
}

static int command_page(FILE *f, const ts_cli_command *c, const char *date) {
  char page[64];
  snprintf(page, sizeof page, "toolstream-%s", c->name);
  title(f, page, date);
  fprintf(f, ".SH NAME\ntoolstream\\-%s \\- ", c->name);
  texts(f, c->summary);
  fprintf(f, ".SH SYNOPSIS\n.B toolstream %s\n", c->name);
  texts(f, c->synopsis);
  fputs(".SH DESCRIPTION\n", f);
  const char *d = c->description;
  while (d && *d) { /* paragraphs */
    const char *end = strstr(d, "\n\n");
    size_t n = end ? (size_t)(end - d) : strlen(d);
    text(f, d, n);
    if (!end) break;
    fputs(".PP\n", f);
    d = end + 2;
  }
  fputs(".SH OPTIONS\n", f);
  for (const ts_cli_group *const *g = c->groups; g && *g; g++)
    if (!(*g)->heading) group(f, *g);
  group(f, &ts_cli_group_std);
  for (const ts_cli_group *const *g = c->groups; g && *g; g++) {
    if (!(*g)->heading) continue;
    char h[64];
    snprintf(h, sizeof h, "%s", (*g)->heading);
    if (h[0] >= 'a' && h[0] <= 'z') h[0] = (char)(h[0] - 'a' + 'A');
    fputs(".SS ", f);
    texts(f, h);
    group(f, *g);
  }
  paragraphs(f, c->footer, 1, "EXIT STATUS");
  paragraphs(f, c->footer, 0, "NOTES");
  see_also(f, c->name);
  return 0;
}

static int top_page(FILE *f, const char *date) {
  size_t n;
  const ts_cli_command *const *cmds = ts_cli_commands(&n);
  title(f, "toolstream", date);
  fputs(".SH NAME\ntoolstream \\- streaming event processor for model tool calls\n"
        ".SH SYNOPSIS\n.B toolstream\n.I command\n[\\fIoptions\\fR]\n.br\n"
        ".B toolstream\n\\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR\n"
        ".SH DESCRIPTION\n"
        "toolstream reads a model's streamed reply one byte at a time and tells the moment\n"
        "something about a tool call is knowable, above all \\fBtool_call_started\\fR with the\n"
        "tool's progress label, long before the call's arguments have finished streaming.\n"
        "Each command has its own page.\n"
        ".SH COMMANDS\n",
        f);
  for (size_t i = 0; i < n; i++) {
    fprintf(f, ".TP\n.BR toolstream\\-%s (1)\n", cmds[i]->name);
    texts(f, cmds[i]->summary);
  }
  fputs(".SH OPTIONS\n", f);
  group(f, &ts_cli_group_std);
  fputs(".SH EXIT STATUS\n"
        "Every command: 0 success; 1 the work failed (one line on standard error says why);\n"
        "2 a usage error. Each command's page gives the details.\n"
        ".SH ENVIRONMENT\n"
        ".TP\n.B OPENAI_API_KEY, ANTHROPIC_API_KEY\n"
        "The model provider's key for \\fBtoolstream run\\fR (\\fB\\-\\-api\\-key\\-env\\fR names\n"
        "another variable). Read from the environment only: never a flag, never printed or\n"
        "stored.\n"
        ".TP\n.B TOOLSTREAM_DATA_DIR, XDG_DATA_HOME\n"
        "Where the store lives when \\fB\\-\\-data\\-dir\\fR is not given:\n"
        "\\fI$TOOLSTREAM_DATA_DIR\\fR, else \\fI$XDG_DATA_HOME/toolstream\\fR, else\n"
        "\\fI~/.local/share/toolstream\\fR.\n",
        f);
  see_also(f, "toolstream");
  return 0;
}

/* The date of the pages: SOURCE_DATE_EPOCH (reproducible builds), else today, in UTC. */
static void page_date(char *buf, size_t cap) {
  time_t t = time(NULL);
  const char *sde = getenv("SOURCE_DATE_EPOCH");
  if (sde && *sde) {
    char *end;
    errno = 0;
    long long v = strtoll(sde, &end, 10);
    if (!errno && !*end && v >= 0) t = (time_t)v;
  }
  struct tm tm;
  if (!gmtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%d", &tm)) snprintf(buf, cap, "1970-01-01");
}

static int write_page(const char *dir, const char *page, const ts_cli_command *c, const char *date) {
  char path[4096];
  if ((size_t)snprintf(path, sizeof path, "%s/%s.1", dir, page) >= sizeof path) {
    fprintf(stderr, "toolstream --generate-man: %s: path too long\n", dir);
    return 1;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "toolstream --generate-man: cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  c ? command_page(f, c, date) : top_page(f, date);
  int bad = ferror(f);
  if (fclose(f) || bad) {
    fprintf(stderr, "toolstream --generate-man: cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  return 0;
}

int ts_cli_man(int argc, char **argv) {
  if (argc != 2 || argv[1][0] == '-') {
    fprintf(stderr, "usage: toolstream --generate-man DIR\n");
    return 2;
  }
  char date[32];
  page_date(date, sizeof date);
  if (write_page(argv[1], "toolstream", NULL, date)) return 1;
  size_t n;
  const ts_cli_command *const *cmds = ts_cli_commands(&n);
  for (size_t i = 0; i < n; i++) {
    char page[64];
    snprintf(page, sizeof page, "toolstream-%s", cmds[i]->name);
    if (write_page(argv[1], page, cmds[i], date)) return 1;
  }
  return 0;
}
