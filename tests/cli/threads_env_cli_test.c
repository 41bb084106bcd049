/*
 * threads_env_cli_test.c: the thread tree and variables as a user meets them, through
 * the binary: `run` parks a call for a required variable and `env set` from another
 * process wakes it; a run SIGKILLed while parked completes on `--resume`; a secret never
 * appears in the store file, the events, stdout/stderr, `threads show`, `--json` or the
 * request bodies the model server received (nor in base64); `--check-env` reports every
 * missing variable before any model request; `threads` lists the tree and child events
 * carry their parent; `env set/list/unset`; a wrong key file is refused.
 *
 * No test waits on a fixed delay: each waits (with a generous bound) for the output it
 * expects, so a loaded machine only makes it slower.
 */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "store/store.h"
#include "support/model_server.h"
#include "support/proc.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"

#define BINARY TS_BINARY_DIR "/toolstream"

static char base[128];

static const char *at(const char *rel) {
  static char p[32][256]; /* an argv may hold many at once */
  static int k;
  k = (k + 1) % 32;
  snprintf(p[k], sizeof p[k], "%s/%s", base, rel);
  return p[k];
}

static void put(const char *rel, const char *text) {
  FILE *f = fopen(at(rel), "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static void setup(void) {
  ts_test_tempdir(base, sizeof base, "threads-env");
  mkdir(at("session"), 0755);
  mkdir(at("ws"), 0755);
  unsetenv("TOOLSTREAM_SECRET_KEY");
  unsetenv("TOOLSTREAM_DATA_DIR");
}

/* OpenAI Chat turn files. */
static void call_turn(const char *rel, const char *calls) {
  char buf[8192];
  snprintf(buf, sizeof buf,
           "%sdata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
           "data: [DONE]\n\n",
           calls);
  put(rel, buf);
}

static const char *call(int index, const char *id, const char *tool, const char *args) {
  static char buf[4][1024];
  snprintf(buf[index], sizeof buf[index],
           "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"id\":\"%s\","
           "\"type\":\"function\",\"function\":{\"name\":\"%s\",\"arguments\":\"%s\"}}]}}]}\n\n",
           index, id, tool, args);
  return buf[index];
}

static const char *stop_turn =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/* A JavaScript tool needing variable NAME (type TYPE): returns it verbatim and in base64. */
static void js_tool(const char *rel, const char *tool, const char *name, const char *type) {
  char buf[4096];
  snprintf(buf, sizeof buf,
           "function b64(s) { var t = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';\n"
           "  var o = '', i = 0; while (i < s.length) { var a = s.charCodeAt(i++), b = s.charCodeAt(i++),\n"
           "  c = s.charCodeAt(i++); var n = (a << 16) | ((b || 0) << 8) | (c || 0);\n"
           "  o += t[(n >> 18) & 63] + t[(n >> 12) & 63] + (isNaN(b) ? '=' : t[(n >> 6) & 63]) +\n"
           "  (isNaN(c) ? '=' : t[n & 63]); } return o; }\n"
           "defineTool({ name: '%s', description: 'uses %s', args: z.object({}),\n"
           "  variables: [{ name: '%s', type: '%s', required: true, description: 'the %s' }],\n"
           "  execute: function (state, args) { var v = state.env('%s');\n"
           "    return { status: 'success', result: { got: v, b64: b64(v) } }; } });\n",
           tool, name, name, type, name, name);
  put(rel, buf);
}

static result toolstream(const char *const *args, const char *input) {
  const char *argv[40] = {"toolstream"};
  int n = 1;
  for (; args[n - 1]; n++) argv[n] = args[n - 1];
  argv[n] = NULL;
  return run_bin(BINARY, argv, input, input ? strlen(input) : 0);
}

/* Pumps a running child until `needle` shows on its stdout (5 minutes at most). */
static void wait_out(child *c, result *r, const char *needle) {
  double end = now_ms() + 300000;
  while (!strstr(sb_str(&r->out), needle) && now_ms() < end)
    if (pump(c, r, 50) == 0) break;
  ck_assert_msg(strstr(sb_str(&r->out), needle), "never saw %s; out %s err %s", needle,
                sb_str(&r->out), sb_str(&r->err));
}

static child spawn_run(const char *const *args) {
  const char *argv[40] = {"toolstream"};
  int n = 1;
  for (; args[n - 1]; n++) argv[n] = args[n - 1];
  argv[n] = NULL;
  return spawn_bin(BINARY, argv, 0);
}

static int file_has(const char *path, const char *needle) {
  if (access(path, F_OK) != 0) return 0;
  size_t len;
  char *b = ts_test_read_file(path, &len);
  size_t nl = strlen(needle);
  int found = 0;
  for (size_t i = 0; !found && i + nl <= len; i++) found = !memcmp(b + i, needle, nl);
  free(b);
  return found;
}

/* Any file under dir (recursively) holding needle. */
static int tree_has(const char *dir, const char *needle) {
  DIR *d = opendir(dir);
  if (!d) return file_has(dir, needle);
  struct dirent *e;
  int found = 0;
  while (!found && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    found = tree_has(p, needle);
  }
  closedir(d);
  return found;
}

typedef struct {
  char text[8192];
} convo;

static int grab(void *user, const ts_store_message *m) {
  convo *c = user;
  char line[1024];
  snprintf(line, sizeof line, "%c%s=%.*s\n", m->is_error ? '!' : '+',
           m->tool_call_id ? m->tool_call_id : ts_store_role_name(m->role),
           (int)(m->content_len > 300 ? 300 : m->content_len), m->content);
  strncat(c->text, line, sizeof c->text - strlen(c->text) - 1);
  return 0;
}

static convo conversation(const char *thread) {
  ts_store *s;
  char why[256];
  ck_assert_msg(ts_store_open(at("data"), &s, why, sizeof why) == TS_E_OK, "%s", why);
  convo c;
  memset(&c, 0, sizeof c);
  ts_store_messages(s, thread, 0, grab, &c);
  ts_store_close(s);
  return c;
}

/* The model server on session/ (its turns written first: it lists them at start). */
static void start_server(ts_test_server *server, char *url, size_t cap) {
  ts_test_server_start(server, at("session"), NULL, NULL);
  snprintf(url, cap, "http://127.0.0.1:%d/v1", server->port);
}

/* ---- a secret over HTTP: parked, set from another process, never shown -------------- */

START_TEST(test_secret_parked_woken_never_leaks) {
  static const char secret[] = "sk-test-9fQ2mZ81xLpW";
  static const char secret_b64[] = "c2stdGVzdC05ZlEybVo4MXhMcFc=";
  setup();
  call_turn("session/turn-1.sse", call(0, "c1", "search", "{}"));
  put("session/turn-2.sse", stop_turn);
  js_tool("search.js", "search", "API_KEY", "secret");
  ts_test_server server;
  char url[64];
  start_server(&server, url, sizeof url);

  /* a secret is never taken from the command line */
  const char *bad[] = {"run", "--model-url", url, "--model", "m", "--data-dir", at("data"),
                       "--workspace", at("ws"), "--tools", at("search.js"), "--var",
                       "API_KEY=sk-test-9fQ2mZ81xLpW", "--thread", "x0", "hi", NULL};
  result r = toolstream(bad, NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "secret"));
  ck_assert_ptr_null(strstr(sb_str(&r.err), secret));
  result_free(&r);

  const char *args[] = {"run", "--model-url", url, "--model", "m", "--data-dir", at("data"),
                        "--workspace", at("ws"), "--tools", at("search.js"), "--thread", "s1",
                        "--json", "find it", NULL};
  child run = spawn_run(args);
  result rr;
  memset(&rr, 0, sizeof rr);
  wait_out(&run, &rr, "\"type\":\"variable_required\"");
  ck_assert_ptr_nonnull(strstr(sb_str(&rr.out), "\"name\":\"API_KEY\",\"description\":\"the "
                                                "API_KEY\",\"var_type\":\"secret\""));
  ck_assert_ptr_null(strstr(sb_str(&rr.out), "\"type\":\"tool_execution_started\""));
  /* threads and env list see it waiting */
  const char *ls[] = {"threads", "--data-dir", at("data"), NULL};
  result l = toolstream(ls, NULL);
  ck_assert_int_eq(l.status, 0);
  ck_assert_ptr_nonnull(strstr(sb_str(&l.out), "waiting_for_variable"));
  result_free(&l);
  const char *el[] = {"env", "list", "s1", "--data-dir", at("data"), NULL};
  l = toolstream(el, NULL);
  ck_assert_ptr_nonnull(strstr(sb_str(&l.out), "missing: a call waits for it"));
  result_free(&l);
  /* another process sets it, from standard input; the run wakes and finishes */
  const char *set[] = {"env", "set", "s1", "API_KEY", "--data-dir", at("data"), NULL};
  result e = toolstream(set, "sk-test-9fQ2mZ81xLpW\n");
  ck_assert_msg(e.status == 0, "%s", sb_str(&e.err));
  ck_assert_ptr_nonnull(strstr(sb_str(&e.err), "secret, sealed"));
  finish_child(&run, &rr);
  ck_assert_msg(rr.status == 0, "exit %d: %s", rr.status, sb_str(&rr.err));
  ck_assert_msg(strstr(sb_str(&rr.out), "\"result\":{\"got\":\"[redacted]\",\"b64\":\"[redacted]\"}"), "%s", sb_str(&rr.out));
  /* the key file */
  struct stat key;
  ck_assert_int_eq(stat(at("data/secret.key"), &key), 0);
  ck_assert_uint_eq(key.st_mode & 0777, 0600);
  /* everything a user or the model could see */
  const char *show[] = {"threads", "show", "s1", "--data-dir", at("data"), NULL};
  const char *showj[] = {"threads", "show", "s1", "--json", "--data-dir", at("data"), NULL};
  const char *listj[] = {"threads", "--json", "--data-dir", at("data"), NULL};
  const char *envj[] = {"env", "list", "s1", "--json", "--data-dir", at("data"), NULL};
  result o1 = toolstream(show, NULL), o2 = toolstream(showj, NULL), o3 = toolstream(listj, NULL),
         o4 = toolstream(envj, NULL), o5 = toolstream(el, NULL);
  ck_assert_ptr_nonnull(strstr(sb_str(&o1.out), "[redacted]"));
  ck_assert_ptr_nonnull(strstr(sb_str(&o5.out), "••••"));
  ck_assert_ptr_nonnull(strstr(sb_str(&o5.out), "this thread"));
  result *outs[] = {&rr, &e, &o1, &o2, &o3, &o4, &o5};
  const char *needles[] = {secret, secret_b64, "c2stdGVzdC05ZlEybVo4MXhMcFc"};
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
    for (int k = 0; k < 3; k++) {
      ck_assert_msg(!strstr(sb_str(&outs[i]->out), needles[k]), "stdout %zu: %s", i, needles[k]);
      ck_assert_msg(!strstr(sb_str(&outs[i]->err), needles[k]), "stderr %zu: %s", i, needles[k]);
    }
  /* the store (closed: checkpointed into the file) and what the model server received */
  ck_assert_int_eq(access(at("session/requests/2.json"), F_OK), 0); /* the second turn asked */
  for (int k = 0; k < 3; k++) {
    ck_assert_msg(!tree_has(at("data"), needles[k]), "store holds %s", needles[k]);
    ck_assert_msg(!tree_has(at("session/requests"), needles[k]), "a request holds %s", needles[k]);
  }
  ck_assert(file_has(at("session/requests/2.json"), "[redacted]"));
  result_free(&rr);
  result_free(&e);
  result_free(&o1);
  result_free(&o2);
  result_free(&o3);
  result_free(&o4);
  result_free(&o5);
  ts_test_server_stop(&server);
}
END_TEST

/* ---- parked, SIGKILLed, value set, --resume --------------------------------------------- */

/* A run of `thread` whose turn 1 calls c0 (runs), c1 (waits for WHO) and c2, SIGKILLed while
 * c1 waits; then WHO is set from another process. `whole`: killed only once the turn's
 * assistant message is stored (the stream ended while c1 waits: run.h), else at once (the
 * stream may still be running: either way --resume must finish the turn). */
static void parked_killed_then_set(const char *thread, int whole) {
  setup();
  char calls[4096];
  snprintf(calls, sizeof calls, "%s%s%s",
           call(0, "c0", "write_file", "{\\\"description\\\":\\\"a\\\",\\\"path\\\":\\\"a.txt\\\",\\\"content\\\":\\\"A\\\"}"),
           call(1, "c1", "greet", "{}"),
           call(2, "c2", "write_file", "{\\\"description\\\":\\\"b\\\",\\\"path\\\":\\\"b.txt\\\",\\\"content\\\":\\\"B\\\"}"));
  call_turn("session/turn-1.sse", calls);
  put("session/turn-2.sse", stop_turn);
  js_tool("greet.js", "greet", "WHO", "text");
  unsetenv("WHO");
  const char *args[] = {"run", "--model-replay", at("session"), "--rate", "10000", "--data-dir",
                        at("data"), "--workspace", at("ws"), "--tools", at("greet.js"),
                        "--thread", thread, "--json", "go", NULL};
  child run = spawn_run(args);
  result rr;
  memset(&rr, 0, sizeof rr);
  wait_out(&run, &rr, "\"type\":\"variable_required\"");
  /* c0 ran, c1 waits, c2 has not run */
  ck_assert_ptr_nonnull(strstr(sb_str(&rr.out), "\"call_id\":\"c0\",\"tool\":\"write_file\",\"index\":0,\"turn\":1,\"is_error\":false"));
  ck_assert_int_ne(access(at("ws/b.txt"), F_OK), 0);
  for (int i = 0; whole; i++) { /* the message is stored once the stream is over */
    convo m = conversation(thread);
    if (strstr(m.text, "+assistant={\"turn\":1,")) break;
    ck_assert_msg(i < 6000, "no assistant message while c1 waits: %s", m.text);
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
  }
  kill(run.pid, SIGKILL);
  finish_child(&run, &rr);
  ck_assert_int_eq(rr.status, 128 + SIGKILL);
  result_free(&rr);
  /* still waiting, durably */
  const char *show[] = {"threads", "show", thread, "--data-dir", at("data"), NULL};
  result s = toolstream(show, NULL);
  ck_assert_ptr_nonnull(strstr(sb_str(&s.out), "greet waits for WHO"));
  result_free(&s);
  const char *set[] = {"env", "set", thread, "WHO", "--data-dir", at("data"), NULL};
  result e = toolstream(set, "world");
  ck_assert_msg(e.status == 0, "%s", sb_str(&e.err));
  result_free(&e);
}

START_TEST(test_parked_survives_sigkill) {
  parked_killed_then_set("k1", 0);
  const char *show[] = {"threads", "show", "k1", "--data-dir", at("data"), NULL};
  result s;
  const char *resume[] = {"run", "--model-replay", at("session"), "--rate", "10000",
                          "--data-dir", at("data"), "--workspace", at("ws"), "--tools",
                          at("greet.js"), "--thread", "k1", "--resume", "--json", NULL};
  result r2 = toolstream(resume, NULL);
  ck_assert_msg(r2.status == 0, "exit %d: %s", r2.status, sb_str(&r2.err));
  /* c1 then c2, in order, each once; then the model's next turn */
  convo c = conversation("k1");
  const char *c0 = strstr(c.text, "+c0="), *c1 = strstr(c.text, "+c1={\"got\":\"world\"");
  const char *c2 = strstr(c.text, "+c2=");
  ck_assert_msg(c0 && c1 && c2 && c0 < c1 && c1 < c2, "%s", c.text);
  ck_assert_ptr_null(strstr(c2 + 1, "+c2="));
  ck_assert_ptr_null(strstr(c0 + 1, "+c0="));
  ck_assert_ptr_nonnull(strstr(c.text, "+assistant={\"turn\":2,\"text\":\"done\""));
  ck_assert_int_eq(access(at("ws/b.txt"), F_OK), 0);
  result_free(&r2);
  s = toolstream(show, NULL);
  ck_assert_ptr_nonnull(strstr(sb_str(&s.out), "state: done"));
  result_free(&s);
}
END_TEST

/* The parked turn's message was stored early, so its results after it are its own calls'
 * (not a cut turn's): --resume with a prompt completes the turn from the parked call, stores
 * the prompt after its results and asks the model for the next turn once, not the cut
 * turn's re-stream (which would store the prompt after turn 2 and ask for a turn 3). */
START_TEST(test_parked_resume_with_prompt) {
  parked_killed_then_set("k2", 1);
  const char *resume[] = {"run", "--model-replay", at("session"), "--rate", "10000",
                          "--data-dir", at("data"), "--workspace", at("ws"), "--tools",
                          at("greet.js"), "--thread", "k2", "--resume", "--json", "and then?",
                          NULL};
  result r2 = toolstream(resume, NULL);
  ck_assert_msg(r2.status == 0, "exit %d: %s", r2.status, sb_str(&r2.err));
  convo c = conversation("k2");
  const char *a1 = strstr(c.text, "+assistant={\"turn\":1,");
  const char *c1 = strstr(c.text, "+c1={\"got\":\"world\""), *c2 = strstr(c.text, "+c2=");
  const char *u = strstr(c.text, "+user=and then?");
  const char *a2 = strstr(c.text, "+assistant={\"turn\":2,\"text\":\"done\"");
  ck_assert_msg(a1 && c1 && c2 && u && a2 && a1 < c1 && c1 < c2 && c2 < u && u < a2, "%s",
                c.text); /* the message before c1's result: it was stored early */
  ck_assert_ptr_null(strstr(c.text, "\"turn\":3"));
  ck_assert_ptr_null(strstr(c2 + 1, "+c2="));
  result_free(&r2);
}
END_TEST

/* ---- --check-env ------------------------------------------------------------------------- */

START_TEST(test_check_env_before_any_request) {
  setup();
  put("session/turn-1.sse", stop_turn);
  js_tool("a.js", "tool_a", "A_TOKEN", "secret");
  js_tool("b.js", "tool_b", "B_ID", "text");
  unsetenv("B_ID");
  ts_test_server server;
  char url[64];
  start_server(&server, url, sizeof url);
  const char *args[] = {"run", "--model-url", url, "--model", "m", "--data-dir", at("data"),
                        "--workspace", at("ws"), "--tools", at("a.js"), at("b.js"),
                        "--check-env", "--thread", "e1", "--json", "hi", NULL};
  result r = toolstream(args, NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "A_TOKEN (secret, required by tool tool_a"));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "B_ID (text, required by tool tool_b"));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "2 required variables without a value"));
  ck_assert_int_ne(access(at("session/requests/1.json"), F_OK), 0); /* nothing was asked */
  result_free(&r);
  /* with both from an env file (the secret sealed), it goes on to the model */
  put("vars.env", "# values\nexport A_TOKEN='tok-12345678'\nB_ID=b-1  # the id\n");
  const char *args2[] = {"run", "--model-url", url, "--model", "m", "--data-dir", at("data"),
                         "--workspace", at("ws"), "--tools", at("a.js"), at("b.js"),
                         "--env-file", at("vars.env"), "--check-env", "--thread", "e2",
                         "--json", "hi", NULL};
  r = toolstream(args2, NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_int_eq(access(at("session/requests/1.json"), F_OK), 0);
  result_free(&r);
  const char *el[] = {"env", "list", "e2", "--data-dir", at("data"), NULL};
  r = toolstream(el, NULL);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "A_TOKEN                   secret  ••••"));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "B_ID                      text    b-1"));
  ck_assert_ptr_null(strstr(sb_str(&r.out), "tok-12345678"));
  result_free(&r);
  ck_assert(!tree_has(at("data"), "tok-12345678"));
  /* a malformed env file names its line, not its values */
  put("bad.env", "OK=1\nNOT A LINE\n");
  const char *args3[] = {"run", "--model-url", url, "--model", "m", "--data-dir", at("data"),
                         "--workspace", at("ws"), "--env-file", at("bad.env"), "--thread", "e3",
                         "hi", NULL};
  r = toolstream(args3, NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "bad.env:2: expected NAME=VALUE"));
  result_free(&r);
  ts_test_server_stop(&server);
}
END_TEST

/* ---- the tree ----------------------------------------------------------------------------- */

static result run_thread(const char *thread, const char *parent, const char *tools) {
  const char *args[20] = {"run", "--model-replay", at("session"), "--rate", "10000",
                          "--data-dir", at("data"), "--thread", thread, "--json"};
  int n = 10;
  if (parent) args[n++] = "--parent", args[n++] = parent;
  if (tools) args[n++] = "--tools", args[n++] = tools;
  args[n++] = "hi";
  args[n] = NULL;
  return toolstream(args, NULL);
}

START_TEST(test_threads_tree_and_inheritance) {
  setup();
  call_turn("session/turn-1.sse", call(0, "c1", "greet", "{}"));
  put("session/turn-2.sse", stop_turn);
  js_tool("greet.js", "greet", "WHO", "text");
  unsetenv("WHO");
  /* the root gets the value (from an env file); two levels down a tool reads it */
  put("root.env", "WHO=grandparent\n");
  const char *root[] = {"run", "--model-replay", at("session"), "--rate", "10000", "--data-dir",
                        at("data"), "--thread", "r1", "--workspace", at("ws"), "--tools",
                        at("greet.js"), "--env-file", at("root.env"), "--json", "hi", NULL};
  result r = toolstream(root, NULL);
  ck_assert_msg(r.status == 0, "%s", sb_str(&r.err));
  ck_assert_ptr_null(strstr(sb_str(&r.out), "\"parent\":")); /* a root's events: none */
  result_free(&r);
  r = run_thread("c1", "r1", at("greet.js"));
  ck_assert_msg(r.status == 0, "%s", sb_str(&r.err));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"thread\":\"c1\",\"parent\":\"r1\",\"seq\":1"));
  result_free(&r);
  r = run_thread("g1", "c1", at("greet.js"));
  ck_assert_msg(r.status == 0, "%s", sb_str(&r.err));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"result\":{\"got\":\"grandparent\""));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"thread\":\"g1\",\"parent\":\"c1\""));
  result_free(&r);
  r = run_thread("r2", NULL, NULL);
  result_free(&r);
  /* a missing parent is refused */
  r = run_thread("x1", "nope", NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "no thread nope"));
  result_free(&r);
  /* the listing: depth first, children indented under their parent */
  const char *ls[] = {"threads", "--data-dir", at("data"), NULL};
  r = toolstream(ls, NULL);
  ck_assert_int_eq(r.status, 0);
  const char *out = sb_str(&r.out);
  const char *pr1 = strstr(out, "\nr1 "), *pc1 = strstr(out, "\n  c1 "),
             *pg1 = strstr(out, "\n    g1 "), *pr2 = strstr(out, "\nr2 ");
  ck_assert_msg(pr1 && pc1 && pg1 && pr2 && pr1 < pc1 && pc1 < pg1 && pg1 < pr2, "%s", out);
  ck_assert_ptr_nonnull(strstr(pg1, " c1 "));
  ck_assert_ptr_nonnull(strstr(pr1, "done"));
  result_free(&r);
  const char *lj[] = {"threads", "--json", "--data-dir", at("data"), NULL};
  r = toolstream(lj, NULL);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "{\"id\":\"g1\",\"parent\":\"c1\""));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"turns\":2,\"calls\":1,\"children\":0,\"depth\":2}"));
  result_free(&r);
  /* show: messages, calls with durations and results, children */
  const char *show[] = {"threads", "show", "c1", "--data-dir", at("data"), NULL};
  r = toolstream(show, NULL);
  out = sb_str(&r.out);
  ck_assert_ptr_nonnull(strstr(out, "parent: r1"));
  ck_assert_ptr_nonnull(strstr(out, "workspaces/c1")); /* a child's own workspace */
  ck_assert_ptr_nonnull(strstr(out, "1/0 c1 greet({}) "));
  ck_assert_ptr_nonnull(strstr(out, " ms, 1 attempt -> {\"got\":\"grandparent\""));
  ck_assert_ptr_nonnull(strstr(out, "children:\n  g1  2 turns, 1 calls, done"));
  result_free(&r);
  const char *showj[] = {"threads", "show", "c1", "--json", "--data-dir", at("data"), NULL};
  r = toolstream(showj, NULL);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"children\":[{\"id\":\"g1\""));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"tool\":\"greet\",\"arguments\":{},\"attempts\":1,"
                                               "\"state\":\"finished\""));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"duration_ms\":"));
  result_free(&r);
  const char *none[] = {"threads", "show", "zz", "--data-dir", at("data"), NULL};
  r = toolstream(none, NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "no thread zz"));
  result_free(&r);
  /* env list on the grandchild: inherited from the root */
  const char *el[] = {"env", "list", "g1", "--data-dir", at("data"), NULL};
  r = toolstream(el, NULL);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "WHO                       text    grandparent"));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "inherited from r1"));
  result_free(&r);
}
END_TEST

/* ---- env set / list / unset, usage, the key file --------------------------------------------- */

START_TEST(test_env_commands) {
  setup();
  put("session/turn-1.sse", stop_turn);
  result r = run_thread("t1", NULL, NULL);
  ck_assert_msg(r.status == 0, "%s", sb_str(&r.err));
  result_free(&r);
  r = run_thread("t2", "t1", NULL);
  result_free(&r);
  const char *set[] = {"env", "set", "t1", "COLOR", "--data-dir", at("data"), NULL};
  r = toolstream(set, "blue\n");
  ck_assert_msg(r.status == 0, "%s", sb_str(&r.err));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "(text)"));
  result_free(&r);
  const char *sets[] = {"env", "set", "t2", "PW", "--secret", "--data-dir", at("data"), NULL};
  r = toolstream(sets, "hunter2hunter2");
  ck_assert_msg(r.status == 0, "%s", sb_str(&r.err));
  result_free(&r);
  const char *list[] = {"env", "list", "t2", "--data-dir", at("data"), NULL};
  r = toolstream(list, NULL);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "COLOR                     text    blue"));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "inherited from t1"));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "PW                        secret  ••••"));
  ck_assert_ptr_null(strstr(sb_str(&r.out), "hunter2"));
  result_free(&r);
  /* the child's own value shadows, unset uncovers */
  const char *set2[] = {"env", "set", "t2", "COLOR", "--data-dir", at("data"), NULL};
  r = toolstream(set2, "red");
  result_free(&r);
  const char *lj[] = {"env", "list", "t2", "--json", "--data-dir", at("data"), NULL};
  r = toolstream(lj, NULL);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "{\"name\":\"COLOR\",\"type\":\"text\",\"source\":"
                                               "\"thread\",\"thread\":\"t2\",\"value\":\"red\""));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "{\"name\":\"PW\",\"type\":\"secret\",\"source\":"
                                               "\"thread\",\"thread\":\"t2\",\"waiting\""));
  result_free(&r);
  const char *unset[] = {"env", "unset", "t2", "COLOR", "--data-dir", at("data"), NULL};
  r = toolstream(unset, NULL);
  ck_assert_int_eq(r.status, 0);
  result_free(&r);
  r = toolstream(unset, NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "has no value of COLOR"));
  result_free(&r);
  r = toolstream(list, NULL);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "blue"));
  result_free(&r);
  /* usage: a value on the command line, a bad name, no such thread */
  const char *onargv[] = {"env", "set", "t1", "COLOR", "green", "--data-dir", at("data"), NULL};
  r = toolstream(onargv, NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "standard input"));
  result_free(&r);
  const char *badname[] = {"env", "set", "t1", "9x", "--data-dir", at("data"), NULL};
  r = toolstream(badname, "v");
  ck_assert_int_eq(r.status, 2);
  result_free(&r);
  const char *nothread[] = {"env", "list", "nope", "--data-dir", at("data"), NULL};
  r = toolstream(nothread, NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "no thread nope"));
  result_free(&r);
  const char *help[] = {"env", "--help", NULL};
  r = toolstream(help, NULL);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "never taken from the command line"));
  result_free(&r);
  /* a wrong key file is refused with a clear error, by env set and by run */
  put("data/secret.key", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n");
  chmod(at("data/secret.key"), 0600);
  const char *sets3[] = {"env", "set", "t1", "PW2", "--secret", "--data-dir", at("data"), NULL};
  r = toolstream(sets3, "another-secret");
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "is not the one this store's secrets were sealed with"));
  result_free(&r);
  js_tool("pw.js", "pw", "PW", "secret");
  call_turn("session/turn-1.sse", call(0, "c1", "pw", "{}"));
  put("session/turn-2.sse", stop_turn);
  const char *chk[] = {"run", "--model-replay", at("session"), "--rate", "10000", "--data-dir",
                       at("data"), "--thread", "t3", "--parent", "t2", "--tools", at("pw.js"),
                       "--check-env", "hi", NULL};
  r = toolstream(chk, NULL);
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "secret.key"));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "is not the one"));
  result_free(&r);
  /* the key file readable by others */
  chmod(at("data/secret.key"), 0644);
  r = toolstream(sets3, "another-secret");
  ck_assert_int_eq(r.status, 1);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "readable by others"));
  result_free(&r);
}
END_TEST

static void teardown(void) {
  if (base[0]) ts_test_rm_rf(base);
}

static Suite *suite(void) {
  Suite *su = suite_create("threads_env_cli");
  TCase *tc = tcase_create("threads_env_cli");
  tcase_set_timeout(tc, 280); /* ctest allows 300 s per program */
  tcase_add_checked_fixture(tc, NULL, teardown); /* each test's directory goes with it */
  tcase_add_test(tc, test_secret_parked_woken_never_leaks);
  tcase_add_test(tc, test_parked_survives_sigkill);
  tcase_add_test(tc, test_parked_resume_with_prompt);
  tcase_add_test(tc, test_check_env_before_any_request);
  tcase_add_test(tc, test_threads_tree_and_inheritance);
  tcase_add_test(tc, test_env_commands);
  suite_add_tcase(su, tc);
  return su;
}

int main(void) {
  return ts_test_run(suite(), 0);
}
