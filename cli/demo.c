/*
 * demo.c: `toolstream demo`: what toolstream is for, in a few seconds.
 *
 * It records a three-turn OpenAI Chat Completions session in which a model calls
 * `write_file` (each call's `description` first, then kilobytes of content; two calls in
 * parallel in the first turn), and runs `toolstream run` on it with the replay backend,
 * paced like a model, in a fresh directory: the live view shows each call's label while
 * its content streams, the dispatcher writes the files in order, and the summary says how
 * much earlier tool_call_started came than each call's complete arguments.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "base/strbuf.h"

enum { O_RATE = 1, O_JSON, O_KEEP };

static const ts_cli_opt demo_opts[] = {
    {"rate", 0, TS_CLI_NUMBER, O_RATE, 1, 10000000, "N",
     "replay pace in SSE events per second (default 2000)", NULL},
    {"json", 0, TS_CLI_FLAG, O_JSON, 0, 0, NULL, "JSON events instead of the live view", NULL},
    {"keep", 0, TS_CLI_FLAG, O_KEEP, 0, 0, NULL,
     "keep the temporary directory (default: removed at exit)", NULL},
};
static const ts_cli_group demo_group = {"demo", NULL, demo_opts,
                                        sizeof demo_opts / sizeof demo_opts[0], NULL};
static const ts_cli_group *const demo_groups[] = {&demo_group, NULL};

const ts_cli_command ts_cli_cmd_demo = {
    "demo",
    "[options]",
    "stream a sample session of write_file calls through run, paced like a model",
    "Runs `toolstream run` on a bundled three-turn session (recorded SSE, replayed paced\n"
    "like a model): the model writes three files through write_file, two of them as\n"
    "parallel calls. Everything goes to a fresh directory under $TMPDIR (default /tmp):\n"
    "session, workspace, store; it is removed when the demo ends, however it ends,\n"
    "unless --keep is given.",
    demo_groups,
    "Exit status: as for run (0 when the session completed).",
    ts_cli_demo,
};

typedef struct {
  uint64_t rate;
  int json, keep;
} demo_args;

static int demo_set(void *user, const ts_cli_opt *o, const char *val, uint64_t n) {
  demo_args *a = user;
  if (!o) {
    fprintf(stderr, "toolstream demo: unexpected argument '%s' (try --help)\n", val);
    return 2;
  }
  if (o->id == O_RATE) a->rate = n;
  else if (o->id == O_JSON) a->json = 1;
  else a->keep = 1;
  return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path) ? -1 : 0;
}

/* Removes the demo's directory tree (never following a link out of it). */
static void remove_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* One chat chunk carrying an argument fragment for call `index`. */
static void chunk_args(ts_buf *out, int index, const char *id, const char *frag, size_t n) {
  ts_buf_puts(out, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                   "\"delta\":{\"tool_calls\":[{\"index\":");
  ts_buf_append_u64(out, (uint64_t)index);
  if (id) {
    ts_buf_puts(out, ",\"id\":\"");
    ts_buf_puts(out, id);
    ts_buf_puts(out, "\",\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":");
  } else {
    ts_buf_puts(out, ",\"function\":{\"arguments\":");
  }
  ts_buf_append_json_string(out, frag, n);
  ts_buf_puts(out, "}}]},\"finish_reason\":null}]}\n\n");
}

/* The arguments JSON of one write_file call with `lines` lines of generated content. */
static void make_args(ts_buf *a, const char *desc, const char *path, int lines) {
  ts_buf content;
  ts_buf_init(&content, 1 << 22);
  for (int i = 0; i < lines; i++) {
    char line[128];
    snprintf(line, sizeof line, "  <p class=\"row-%d\">Caf\xC3\xA9 item %d: \\o/ \"fresh\"</p>\n", i, i);
    ts_buf_puts(&content, line);
  }
  ts_buf_puts(a, "{\"description\":");
  ts_buf_append_json_string(a, desc, strlen(desc));
  ts_buf_puts(a, ",\"path\":");
  ts_buf_append_json_string(a, path, strlen(path));
  ts_buf_puts(a, ",\"content\":");
  ts_buf_append_json_string(a, content.p, content.len);
  ts_buf_puts(a, "}");
  ts_buf_fini(&content);
}

/* Writes `sse` to dir/name. */
static int write_turn(const char *dir, const char *name, const ts_buf *sse) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t n = fwrite(sse->p, 1, sse->len, f);
  return (fclose(f) != 0 || n != sse->len) ? -1 : 0;
}

/* One turn: `ncalls` write_file calls streamed in 12-byte deltas, calls interleaved two
 * at a time (parallel calls), then finish_reason tool_calls and [DONE]. */
static void make_turn(ts_buf *sse, const char *text, int ncalls, const char *const *desc,
                      const char *const *path, const int *lines) {
  ts_buf_puts(sse, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                   "\"delta\":{\"role\":\"assistant\",\"content\":");
  ts_buf_append_json_string(sse, text, strlen(text));
  ts_buf_puts(sse, "},\"finish_reason\":null}]}\n\n");
  for (int c = 0; c < ncalls; c++) {
    ts_buf args;
    ts_buf_init(&args, 1 << 22);
    make_args(&args, desc[c], path[c], lines[c]);
    char id[32];
    snprintf(id, sizeof id, "call_%s", path[c]);
    for (size_t at = 0; at < args.len;) {
      size_t k = args.len - at < 12 ? args.len - at : 12;
      while (at + k < args.len && ((unsigned char)args.p[at + k] & 0xC0) == 0x80) k++;
      chunk_args(sse, c, at == 0 ? id : NULL, args.p + at, k);
      at += k;
    }
    ts_buf_fini(&args);
  }
  if (ncalls)
    ts_buf_puts(sse, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                     "\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
  else
    ts_buf_puts(sse, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                     "\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
}

int ts_cli_demo(int argc, char **argv) {
  demo_args a = {2000, 0, 0};
  ts_cli_common com;
  memset(&com, 0, sizeof com);
  int rc = ts_cli_parse(&ts_cli_cmd_demo, argc, argv, &com, demo_set, &a);
  if (rc >= 0) return rc;
  char rate[32];
  snprintf(rate, sizeof rate, "%llu", (unsigned long long)a.rate);
  int json = a.json;
  const char *tmp = getenv("TMPDIR");
  char base[512];
  if (!tmp || !*tmp || strlen(tmp) > 400) tmp = "/tmp";
  snprintf(base, sizeof base, "%s/toolstream-demo-XXXXXX", tmp);
  if (!mkdtemp(base)) {
    fprintf(stderr, "toolstream demo: cannot make a temporary directory: %s\n", strerror(errno));
    return 1;
  }
  char session[600], workspace[600], data[600];
  snprintf(session, sizeof session, "%s/session", base);
  snprintf(workspace, sizeof workspace, "%s/workspace", base);
  snprintf(data, sizeof data, "%s/data", base);
  mkdir(session, 0755);
  mkdir(workspace, 0755);

  /* The bundled session: two turns of write_file calls (the first with two parallel calls),
   * then a turn that ends without tool calls. */
  static const char *const d1[] = {"writing index.html", "writing menu.html"};
  static const char *const p1[] = {"index.html", "menu.html"};
  static const int l1[] = {400, 250};
  static const char *const d2[] = {"writing notes/README.md"};
  static const char *const p2[] = {"notes/README.md"};
  static const int l2[] = {200};
  ts_buf sse;
  ts_buf_init(&sse, 1 << 24);
  make_turn(&sse, "I'll create the two pages.", 2, d1, p1, l1);
  int bad = write_turn(session, "turn-1.sse", &sse);
  ts_buf_reset(&sse);
  make_turn(&sse, "Now the notes.", 1, d2, p2, l2);
  bad |= write_turn(session, "turn-2.sse", &sse);
  ts_buf_reset(&sse);
  make_turn(&sse, "Done: index.html, menu.html and notes/README.md are written.", 0, NULL, NULL,
            NULL);
  bad |= write_turn(session, "turn-3.sse", &sse);
  ts_buf_fini(&sse);
  if (bad) {
    fprintf(stderr, "toolstream demo: cannot write the session into %s\n", session);
    if (!a.keep) remove_tree(base);
    return 1;
  }
  /* With --json, standard output holds JSON lines only: the words go to standard error. */
  FILE *say = json ? stderr : stdout;
  fprintf(say,
          "toolstream demo: a model writes three files over three turns (recorded in %s),\n"
          "streamed at %s SSE events/s through `toolstream run`. Watch each call's label appear\n"
          "while its content is still streaming.\n\n",
          session, rate);
  fflush(say);
  const char *args[] = {"run", "--model-replay", session, "--workspace", workspace, "--data-dir",
                        data, "--rate", rate, json ? "--json" : NULL, NULL};
  int n = json ? 10 : 9;
  rc = ts_cli_run(n, (char **)args);
  if (rc == 0) {
    fprintf(say, "\nFiles written to %s:\n", workspace);
    fflush(say);
    const char *files[] = {"index.html", "menu.html", "notes/README.md"};
    for (int i = 0; i < 3; i++) {
      char p[700];
      struct stat stt;
      snprintf(p, sizeof p, "%s/%s", workspace, files[i]);
      if (stat(p, &stt) == 0) fprintf(say, "  %-16s %lld bytes\n", files[i], (long long)stt.st_size);
    }
    if (!a.keep) fprintf(say, "(%s is removed now; --keep keeps it)\n", base);
    fflush(say);
  }
  if (!a.keep) remove_tree(base);
  return rc;
}
