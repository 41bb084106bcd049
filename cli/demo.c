/*
 * demo.c: `toolstream demo`: what toolstream is for, in a few seconds.
 *
 * A small team, defined as prompts and agents (docs/composition.md) and run by `toolstream
 * run --prompts DIR --agent lead` on recorded turns (one directory per prompt, replayed
 * paced like a model, agent/replay_model.h), in a fresh directory:
 *
 *   1. the coordinator writes a brief through write_file: kilobytes of content, its label
 *      (`description`) first, so the live view shows what the call does while the content
 *      still streams;
 *   2. it calls the `researcher` prompt as a tool (a sub-prompt, tools-spec §4), handing
 *      it the brief as an attachment (initAttachmentsProperty): the researcher runs in a
 *      child thread with its own filesystem, the brief copied into it;
 *   3. it creates a `writer` subagent (subagent_create, tools-spec §5) with the brief
 *      attached; the writer's reply names a file of its own filesystem, which is copied
 *      back into the coordinator's (§6);
 *   4. it reads that copy and ends its turn.
 *
 * The tree of threads (the coordinator, its sub-prompt's child, its subagent) is in the
 * live view as it runs and in the store afterwards (`toolstream threads`).
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/strbuf.h"
#include "cli/cli.h"

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
    "run a small team of prompts and agents on recorded turns, paced like a model",
    "Runs `toolstream run --prompts DIR --agent lead` on a bundled session (recorded SSE,\n"
    "one directory per prompt, replayed paced like a model): a coordinator writes a brief\n"
    "(its label shows while kilobytes of content stream), calls a researcher prompt as a\n"
    "tool with the brief attached, creates a writer subagent with the brief attached,\n"
    "gets the writer's file back, and reads it. Each runs in its own thread with its own\n"
    "filesystem; the live view shows the tree. Everything goes to a fresh directory under\n"
    "$TMPDIR (default /tmp): definitions, session, workspace, store; it is removed when\n"
    "the demo ends, however it ends, unless --keep is given.",
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

/* ---- the team ------------------------------------------------------------------------- */

/* The definitions, as a user would write them (docs/composition.md). */
static const char team_json[] =
    "[\n"
    "  {\"kind\": \"prompt\", \"name\": \"coordinator\",\n"
    "   \"prompt\": \"You coordinate a small team that builds a web page.\",\n"
    "   \"tools\": [\"write_file\", \"read_file\",\n"
    "             {\"name\": \"researcher\", \"includeToolCalls\": false,\n"
    "              \"initUserMessageProperty\": \"question\", \"initAttachmentsProperty\": \"files\"}]},\n"
    "  {\"kind\": \"prompt\", \"name\": \"researcher\",\n"
    "   \"toolDescription\": \"Answers one question about the files it is given\",\n"
    "   \"prompt\": \"You research. Answer from the attached files.\",\n"
    "   \"requiredSchema\": {\"type\": \"object\",\n"
    "     \"properties\": {\"question\": {\"type\": \"string\"},\n"
    "                    \"files\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}},\n"
    "     \"required\": [\"question\"]}},\n"
    "  {\"kind\": \"prompt\", \"name\": \"writer\",\n"
    "   \"prompt\": \"You write pages from briefs and hand back what you wrote.\",\n"
    "   \"tools\": [\"read_file\", \"write_file\"]},\n"
    "  {\"kind\": \"agent\", \"name\": \"lead\", \"description\": \"Builds a page with help\",\n"
    "   \"sideA\": {\"prompt\": \"coordinator\",\n"
    "             \"subagents\": [{\"agent\": \"page_writer\", \"name\": \"writer\",\n"
    "                             \"description\": \"Writes a page from a brief\"}]}},\n"
    "  {\"kind\": \"agent\", \"name\": \"page_writer\", \"sideA\": {\"prompt\": \"writer\"}}\n"
    "]\n";

/* One chat chunk carrying an argument fragment for call `index` (its first names it). */
static void chunk_args(ts_buf *out, int index, const char *id, const char *tool, const char *frag,
                       size_t n) {
  ts_buf_puts(out, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                   "\"delta\":{\"tool_calls\":[{\"index\":");
  ts_buf_append_u64(out, (uint64_t)index);
  if (id) {
    ts_buf_puts(out, ",\"id\":\"");
    ts_buf_puts(out, id);
    ts_buf_puts(out, "\",\"type\":\"function\",\"function\":{\"name\":\"");
    ts_buf_puts(out, tool);
    ts_buf_puts(out, "\",\"arguments\":");
  } else {
    ts_buf_puts(out, ",\"function\":{\"arguments\":");
  }
  ts_buf_append_json_string(out, frag, n);
  ts_buf_puts(out, "}}]},\"finish_reason\":null}]}\n\n");
}

/* Generated content, as the JSON string's escaped text: the brief (`page` 0) or the page
 * (1), `lines` lines each. */
static void content(ts_buf *c, int page, int lines) {
  ts_buf_puts(c, page ? "<h1>Caf\xC3\xA9</h1>\\n" : "# Brief: the caf\xC3\xA9 page\\n\\n");
  for (int i = 0; i < lines; i++) {
    char line[160];
    if (page)
      snprintf(line, sizeof line, "<p class=\\\"row-%d\\\">%s item %d: \\\"fresh\\\"</p>\\n", i,
               i % 3 == 0 ? "Menu" : i % 3 == 1 ? "Hours" : "Contact", i);
    else
      snprintf(line, sizeof line, "- item %d: \\\"fresh\\\" caf\xC3\xA9 special \\\\o/\\n", i);
    ts_buf_puts(c, line);
  }
}

typedef struct {
  const char *tool, *args; /* args: JSON text; "@BRIEF" / "@PAGE" inside: generated content */
} demo_call;

/* One turn: optional text, then the calls streamed in 12-byte deltas, then the finish. */
static void make_turn(ts_buf *sse, const char *prefix, int turn, const char *text,
                      const demo_call *calls, int ncalls) {
  if (text) {
    ts_buf_puts(sse, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                     "\"delta\":{\"role\":\"assistant\",\"content\":");
    ts_buf_append_json_string(sse, text, strlen(text));
    ts_buf_puts(sse, "},\"finish_reason\":null}]}\n\n");
  }
  for (int c = 0; c < ncalls; c++) {
    ts_buf args;
    ts_buf_init(&args, 1 << 22);
    const char *at = strstr(calls[c].args, "@BRIEF"), *pg = strstr(calls[c].args, "@PAGE");
    if (at || pg) {
      const char *m = at ? at : pg;
      ts_buf_append(&args, calls[c].args, (size_t)(m - calls[c].args));
      content(&args, pg != NULL, at ? 300 : 200);
      ts_buf_puts(&args, m + (at ? 6 : 5));
    } else {
      ts_buf_puts(&args, calls[c].args);
    }
    char id[64];
    snprintf(id, sizeof id, "call_%s_%d_%d", prefix, turn, c);
    for (size_t p = 0; p < args.len;) {
      size_t k = args.len - p < 12 ? args.len - p : 12;
      while (p + k < args.len && ((unsigned char)args.p[p + k] & 0xC0) == 0x80) k++;
      chunk_args(sse, c, p == 0 ? id : NULL, calls[c].tool, args.p + p, k);
      p += k;
    }
    ts_buf_fini(&args);
  }
  ts_buf_puts(sse, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                   "\"delta\":{},\"finish_reason\":\"");
  ts_buf_puts(sse, ncalls ? "tool_calls" : "stop");
  ts_buf_puts(sse, "\"}]}\n\ndata: [DONE]\n\n");
}

/* Writes `len` bytes to path. */
static int write_text(const char *path, const char *p, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t n = fwrite(p, 1, len, f);
  return (fclose(f) != 0 || n != len) ? -1 : 0;
}

/* A prompt's recorded turns: session/<prompt>/turn-N.sse. */
static int write_turns(const char *session, const char *prompt, int nturns,
                       const char *const *texts, const demo_call *const *calls,
                       const int *ncalls) {
  char dir[700], path[760];
  snprintf(dir, sizeof dir, "%s/%s", session, prompt);
  if (mkdir(dir, 0755) && errno != EEXIST) return -1;
  int bad = 0;
  for (int t = 0; t < nturns && !bad; t++) {
    ts_buf sse;
    ts_buf_init(&sse, 1 << 24);
    make_turn(&sse, prompt, t + 1, texts[t], calls[t], ncalls[t]);
    snprintf(path, sizeof path, "%s/turn-%d.sse", dir, t + 1);
    bad = sse.err || write_text(path, sse.p, sse.len);
    ts_buf_fini(&sse);
  }
  return bad ? -1 : 0;
}

static int write_session(const char *session) {
  /* the coordinator: write the brief, ask the researcher, create the writer, read what
   * came back, done */
  static const demo_call c1[] = {
      {"write_file", "{\"description\":\"writing brief.md\",\"path\":\"brief.md\",\"content\":\"@BRIEF\"}"}};
  static const demo_call c2[] = {
      {"researcher", "{\"question\":\"Which three sections should the page have?\",\"files\":[\"/brief.md\"]}"}};
  static const demo_call c3[] = {
      {"subagent_create", "{\"agent\":\"writer\",\"name\":\"page writer\",\"message\":\"Write the "
                          "page from the attached brief, with the sections Menu, Hours and "
                          "Contact.\",\"attachments\":[\"/brief.md\"]}"}};
  static const demo_call c4[] = {{"read_file", "{\"path\":\"attachments/page.html\"}"}};
  static const char *const ct[] = {"I'll write the brief first.", "Now a question for the researcher.",
                                   "The writer takes it from here.", "Let me read what came back.",
                                   "Done: the brief is written, the researcher chose the sections, "
                                   "and the writer's copy is back in my files."};
  static const demo_call *const cc[] = {c1, c2, c3, c4, NULL};
  static const int cn[] = {1, 1, 1, 1, 0};
  /* the researcher (a sub-prompt, in a child thread): one answer */
  static const char *const rt[] = {"Three sections: Menu, Hours and Contact (from the brief "
                                   "attached at /attachments/brief.md)."};
  static const demo_call *const rc[] = {NULL};
  static const int rn[] = {0};
  /* the writer (a subagent, in its own filesystem): reads its copy of the brief, writes
   * the page there, and names it in its reply, which brings the page to the coordinator */
  static const demo_call w1[] = {
      {"read_file", "{\"path\":\"attachments/brief.md\"}"},
      {"write_file", "{\"description\":\"writing page.html\",\"path\":\"attachments/page.html\","
                     "\"content\":\"@PAGE\"}"}};
  static const char *const wt[] = {"Reading the brief.", "The page is written: /attachments/page.html "
                                                         "(Menu, Hours and Contact)"};
  static const demo_call *const wc[] = {w1, NULL};
  static const int wn[] = {2, 0};
  if (write_turns(session, "coordinator", 5, ct, cc, cn) ||
      write_turns(session, "researcher", 1, rt, rc, rn) ||
      write_turns(session, "writer", 2, wt, wc, wn))
    return -1;
  return 0;
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
  char session[600], workspace[600], data[600], prompts[600], team[640];
  snprintf(session, sizeof session, "%s/session", base);
  snprintf(workspace, sizeof workspace, "%s/workspace", base);
  snprintf(data, sizeof data, "%s/data", base);
  snprintf(prompts, sizeof prompts, "%s/prompts", base);
  snprintf(team, sizeof team, "%s/team.json", prompts);
  int bad = mkdir(session, 0755) || mkdir(workspace, 0755) || mkdir(prompts, 0755) ||
            write_text(team, team_json, sizeof team_json - 1) || write_session(session);
  if (bad) {
    fprintf(stderr, "toolstream demo: cannot write the session into %s: %s\n", base,
            strerror(errno));
    if (!a.keep) remove_tree(base);
    return 1;
  }
  /* With --json, standard output holds JSON lines only: the words go to standard error. */
  FILE *say = json ? stderr : stdout;
  fprintf(say,
          "toolstream demo: a coordinator writes a brief, asks a researcher prompt about it\n"
          "(a sub-prompt in a child thread, the brief attached), and has a writer subagent\n"
          "make a page from it (the brief goes to the writer's filesystem, the page comes\n"
          "back to the coordinator's). Recorded\n"
          "in %s, streamed at %s SSE events/s through `toolstream run --prompts %s --agent\n"
          "lead`. Watch the brief's label appear while its content is still streaming.\n\n",
          session, rate, prompts);
  fflush(say);
  const char *args[] = {"run",       "--prompts",  prompts, "--agent", "lead",
                        "--model-replay", session, "--workspace", workspace, "--data-dir",
                        data,        "--rate",     rate,    "--thread", "demo",
                        "Build the cafe page.", json ? "--json" : NULL, NULL};
  int n = json ? 17 : 16;
  rc = ts_cli_run(n, (char **)args);
  if (rc == 0 && !json) { /* with --json, standard output holds events only */
    fprintf(say, "\nThe threads (each with its own filesystem; toolstream threads --data-dir %s):\n",
            data);
    fflush(say);
    const char *targs[] = {"threads", "--data-dir", data, NULL};
    ts_cli_threads(3, (char **)targs);
  }
  if (rc == 0) {
    if (!a.keep) fprintf(say, "(%s is removed now; --keep keeps it)\n", base);
    fflush(say);
  }
  if (!a.keep) remove_tree(base);
  return rc;
}
