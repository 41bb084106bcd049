/*
 * run_cli_test.c: `toolstream run` on the replay backend, and `toolstream demo`, as a user
 * runs them: files written in the workspace (and nowhere else), messages in the store,
 * exit statuses, resume.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "support/proc.h"
#include "store/store.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"

#define BINARY TS_BINARY_DIR "/toolstream"

static char base[64];

#define put(name, text) ts_test_put(ts_test_at(base, (name)), (text))

/* A chat chunk with one whole call. args is JSON text, escaped here for the string. */
static void call_turn(const char *name, const char *tool, const char *args_escaped) {
  char buf[4096];
  snprintf(buf, sizeof buf,
           "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\","
           "\"type\":\"function\",\"function\":{\"name\":\"%s\",\"arguments\":\"%s\"}}]}}]}\n\n"
           "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
           "data: [DONE]\n\n",
           tool, args_escaped);
  put(name, buf);
}

static const char *stop_turn =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

static void setup(void) {
  ts_test_tempdir(base, sizeof base, "run-test");
  char p[256];
  snprintf(p, sizeof p, "%s/session", base);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/ws", base);
  mkdir(p, 0755);
}

/* After each test (in its own process): its directory goes. */
static void remove_base(void) {
  if (base[0]) ts_test_rm_rf(base);
}

static result run_in(const char *thread, int resume, const char *extra) {
  char session[128], ws[128], data[128];
  snprintf(session, sizeof session, "%s/session", base);
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  const char *argv[16] = {"toolstream", "run", "--model-replay", session, "--workspace", ws,
                          "--data-dir", data, "--rate", "10000", "--thread", thread, "--json"};
  int n = 13;
  if (resume) argv[n++] = "--resume";
  if (extra) argv[n++] = extra;
  argv[n] = NULL;
  return run_bin(BINARY, argv, NULL, 0);
}

typedef struct {
  char roles[64];
  char tool_results[2048];
} convo;

static int grab(void *user, const ts_store_message *m) {
  convo *c = user;
  size_t n = strlen(c->roles);
  if (n + 1 < sizeof c->roles) c->roles[n] = "suat"[m->role], c->roles[n + 1] = '\0';
  if (m->role == TS_STORE_TOOL) {
    strncat(c->tool_results, m->is_error ? "!" : "+", sizeof c->tool_results - strlen(c->tool_results) - 1);
    strncat(c->tool_results, m->content, sizeof c->tool_results - strlen(c->tool_results) - 1);
    strncat(c->tool_results, "\n", sizeof c->tool_results - strlen(c->tool_results) - 1);
  }
  return 0;
}

static convo conversation(const char *thread) {
  char data[128];
  snprintf(data, sizeof data, "%s/data", base);
  ts_store *s;
  char why[256];
  ck_assert_msg(ts_store_open(data, &s, why, sizeof why) == TS_E_OK, "%s", why);
  convo c;
  memset(&c, 0, sizeof c);
  ts_store_messages(s, thread, 0, grab, &c);
  ts_store_close(s);
  return c;
}

START_TEST(test_turns_files_and_store) {
  setup();
  call_turn("session/turn-1.sse", "write_file",
            "{\\\"description\\\":\\\"writing a\\\",\\\"path\\\":\\\"dir/a.txt\\\",\\\"content\\\":\\\"hello\\\\nworld\\\"}");
  call_turn("session/turn-2.sse", "read_file", "{\\\"path\\\":\\\"dir/a.txt\\\"}");
  put("session/turn-3.sse", stop_turn);
  result r = run_in("t1", 0, "make a file");
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  /* the file, in the workspace */
  char p[256];
  snprintf(p, sizeof p, "%s/ws/dir/a.txt", base);
  size_t len;
  char *text = ts_test_read_file(p, &len);
  ck_assert_str_eq(text, "hello\nworld");
  free(text);
  /* events: started (with its label) before ready, executions and results in order */
  const char *out = sb_str(&r.out);
  const char *started = strstr(out, "\"progress\":\"writing a\"");
  const char *ready = strstr(out, "\"type\":\"tool_call_ready\"");
  const char *result1 = strstr(out, "\"type\":\"tool_result\"");
  ck_assert(started && ready && result1 && started < ready && ready < result1);
  ck_assert_ptr_nonnull(strstr(out, "\"result\":\"hello\\nworld\"")); /* read_file's answer */
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "3 turns, 2 tool calls"));
  /* the store, in commit order: the user's prompt; per turn the tool results (committed
   * while the turn streams, pipelined) and then the assistant message that lists them */
  convo c = conversation("t1");
  ck_assert_msg(!strcmp(c.roles, "utataa"), "roles %s", c.roles);
  ck_assert_msg(strstr(c.tool_results, "+{\"path\":\"dir/a.txt\",\"bytes\":11}") != NULL, "%s",
                c.tool_results);
  result_free(&r);

  /* the same thread again without --resume is refused; with it, the next turn file is
   * used (none left: a clear error) */
  r = run_in("t1", 0, NULL);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "--resume"));
  result_free(&r);
  /* with it, a finished thread (its last turn called no tool) is left as it is: exit 0,
   * no turn run, nothing stored */
  r = run_in("t1", 1, NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "0 turns, 0 tool calls"));
  ck_assert_ptr_null(strstr(sb_str(&r.out), "\"type\""));
  result_free(&r);
  c = conversation("t1");
  ck_assert_msg(!strcmp(c.roles, "utataa"), "roles %s", c.roles);
}
END_TEST

START_TEST(test_confined_to_workspace) {
  setup();
  call_turn("session/turn-1.sse", "write_file",
            "{\\\"path\\\":\\\"../escape.txt\\\",\\\"content\\\":\\\"x\\\"}");
  call_turn("session/turn-2.sse", "write_file",
            "{\\\"path\\\":\\\"/tmp/abs-escape.txt\\\",\\\"content\\\":\\\"x\\\"}");
  char link[256], target[256];
  snprintf(link, sizeof link, "%s/ws/out", base);
  snprintf(target, sizeof target, "%s", base);
  ck_assert_int_eq(symlink(target, link), 0); /* a link inside the workspace that leaves it */
  call_turn("session/turn-3.sse", "write_file",
            "{\\\"path\\\":\\\"out/via-link.txt\\\",\\\"content\\\":\\\"x\\\"}");
  call_turn("session/turn-4.sse", "read_file", "{\\\"path\\\":\\\"out/session/turn-1.sse\\\"}");
  put("session/turn-5.sse", stop_turn);
  result r = run_in("c1", 0, NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  char p[256];
  snprintf(p, sizeof p, "%s/escape.txt", base);
  ck_assert_int_ne(access(p, F_OK), 0);
  ck_assert_int_ne(access("/tmp/abs-escape.txt", F_OK), 0);
  snprintf(p, sizeof p, "%s/via-link.txt", base);
  ck_assert_int_ne(access(p, F_OK), 0);
  convo c = conversation("c1");
  ck_assert_msg(strstr(c.tool_results, "!../escape.txt: paths may not contain") != NULL, "%s",
                c.tool_results);
  ck_assert_msg(strstr(c.tool_results, "!/tmp/abs-escape.txt: absolute paths are not allowed") !=
                    NULL, "%s", c.tool_results);
  ck_assert_msg(strstr(c.tool_results, "!out/via-link.txt: the path leads outside") != NULL, "%s",
                c.tool_results);
  ck_assert_msg(strstr(c.tool_results, "!out/session/turn-1.sse: the path leads outside") != NULL,
                "%s", c.tool_results);
  result_free(&r);
}
END_TEST

START_TEST(test_usage_and_demo) {
  const char *a1[] = {"toolstream", "run", "hello", NULL};
  result r = run_bin(BINARY, a1, NULL, 0);
  ck_assert_int_eq(r.status, 2);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "--model-replay"));
  result_free(&r);
  const char *a2[] = {"toolstream", "run", "--model-replay", "/nonexistent", "--resume", NULL};
  r = run_bin(BINARY, a2, NULL, 0);
  ck_assert_int_eq(r.status, 2);
  result_free(&r);
  const char *a3[] = {"toolstream", "run", "--help", NULL};
  r = run_bin(BINARY, a3, NULL, 0);
  ck_assert_int_eq(r.status, 0);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "--max-turns"));
  result_free(&r);
  /* the demo: a coordinator's five turns and four calls (a sub-prompt, a subagent), the
   * page the subagent wrote read back by the coordinator, the tree of threads */
  const char *a4[] = {"toolstream", "demo", "--rate", "20000", NULL};
  r = run_bin(BINARY, a4, NULL, 0);
  ck_assert_msg(r.status == 0, "demo exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_msg(strstr(sb_str(&r.err), "5 turns, 4 tool calls") != NULL, "%s", sb_str(&r.err));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "attachments/page.html"));
  ck_assert_msg(strstr(sb_str(&r.out), "(page writer)") || strstr(sb_str(&r.err), "(page writer)"),
                "no tree of threads: %s", sb_str(&r.err));
  result_free(&r);
}
END_TEST


/* The mono_us stamp (in ms) of the first event of `type` in JSON Lines `out`; 0: none. */
static double event_mono_ms(const char *out, const char *type) {
  char pat[96];
  snprintf(pat, sizeof pat, "\"type\":\"%s\"", type);
  const char *at = strstr(out, pat);
  if (!at) return 0;
  const char *eol = strchr(at, '\n');
  const char *bol = at;
  while (bol > out && bol[-1] != '\n') bol--;
  const char *m = strstr(bol, "\"mono_us\":");
  if (!m || (eol && m > eol)) return 0;
  return strtod(m + 10, NULL) / 1000.0;
}

/* The paced replay with --pub: a subscriber in another process sees tool_call_started for
 * a write_file call long before the call's content has finished streaming. */
START_TEST(test_started_reaches_subscriber_early) {
  setup();
  /* one write_file call whose content streams in ~300 events of 12 bytes */
  char *sse = malloc(1 << 20);
  size_t n = 0;
  const char *head = "{\\\"description\\\":\\\"writing big.txt\\\",\\\"path\\\":\\\"big.txt\\\",\\\"content\\\":\\\"";
  n += (size_t)sprintf(sse + n,
                       "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                       "\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"write_file\","
                       "\"arguments\":\"%s\"}}]}}]}\n\n",
                       head);
  for (int i = 0; i < 300; i++)
    n += (size_t)sprintf(sse + n,
                         "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                         "\"function\":{\"arguments\":\"line %04d...\"}}]}}]}\n\n",
                         i);
  n += (size_t)sprintf(sse + n,
                       "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                       "\"function\":{\"arguments\":\"\\\"}\"}}]}}]}\n\n"
                       "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}"
                       "\n\ndata: [DONE]\n\n");
  put("session/turn-1.sse", sse);
  free(sse);
  put("session/turn-2.sse", stop_turn);
  char pub[128], rep[128], session[128], ws[128], data[128];
  snprintf(pub, sizeof pub, "ipc://%s/bus", base);
  snprintf(rep, sizeof rep, "ipc://%s/bus-replay", base);
  snprintf(session, sizeof session, "%s/session", base);
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  /* No --idle-exit: on a loaded machine the run can take longer than any idle window to
   * send its first event after the subscriber connects (a 1.5 s window once ended the
   * subscriber before the call). The loop below stops it once it has seen the call. */
  const char *sub_argv[] = {"toolstream", "sub", pub, "--replay", rep, "--json", "--wait", NULL};
  result sr;
  memset(&sr, 0, sizeof sr);
  child sc = spawn_bin(BINARY, sub_argv, 0);
  const char *run_argv[] = {"toolstream", "run", "--model-replay", session, "--workspace", ws,
                            "--data-dir", data, "--rate", "200", "--pub", pub, "--replay", rep,
                            "--json", NULL};
  result rr;
  memset(&rr, 0, sizeof rr);
  child rc = spawn_bin(BINARY, run_argv, 0);
  /* the deadline only bounds a failure: success ends the loop as soon as ready arrives */
  double t_started = 0, t_ready = 0, end = now_ms() + 90000;
  while (now_ms() < end && !t_ready && pump(&sc, &sr, 10) > 0) {
    pump(&rc, &rr, 0);
    if (!t_started && strstr(sb_str(&sr.out), "\"type\":\"tool_call_started\"")) t_started = now_ms();
    if (!t_ready && strstr(sb_str(&sr.out), "\"type\":\"tool_call_ready\"")) t_ready = now_ms();
  }
  finish_child(&rc, &rr);
  kill(sc.pid, SIGTERM);
  finish_child(&sc, &sr);
  ck_assert_msg(rr.status == 0, "run exit %d: %s", rr.status, sb_str(&rr.err));
  ck_assert_msg(t_started && t_ready, "sub saw started=%d ready=%d (exit %d): %s\nout: %.2000s",
                t_started > 0, t_ready > 0, sr.status, sb_str(&sr.err), sb_str(&sr.out));
  /* 300 events at 200/s: the content streams for 1.5 s after the label. The run stamps
   * each event as it goes out (mono_us), and pacing only ever stretches under load, so
   * the stamps bound the lead from below whatever the machine does; the subscriber saw
   * the label first (its own clock only orders them: its delivery can lag on a loaded
   * machine). */
  ck_assert_msg(t_started <= t_ready, "the subscriber saw ready before started");
  double m_started = event_mono_ms(sb_str(&sr.out), "tool_call_started");
  double m_ready = event_mono_ms(sb_str(&sr.out), "tool_call_ready");
  ck_assert_msg(m_started > 0 && m_ready > 0, "no mono_us stamps: %s", sb_str(&sr.out));
  ck_assert_msg(m_ready - m_started > 800, "started only %.0f ms before ready (run's stamps)",
                m_ready - m_started);
  ck_assert_ptr_nonnull(strstr(sb_str(&sr.out), "\"progress\":\"writing big.txt\""));
  result_free(&rr);
  result_free(&sr);
}
END_TEST

/* Ctrl-C: the run stops cleanly, what finished stays stored, --resume completes it. */
START_TEST(test_ctrl_c_then_resume) {
  setup();
  call_turn("session/turn-1.sse", "write_file",
            "{\\\"description\\\":\\\"first\\\",\\\"path\\\":\\\"one.txt\\\",\\\"content\\\":\\\"1\\\"}");
  /* turn 2 streams slowly: 400 events at 100/s */
  char *sse = malloc(1 << 20);
  size_t n = 0;
  n += (size_t)sprintf(sse + n, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}}]}\n\n");
  for (int i = 0; i < 400; i++)
    n += (size_t)sprintf(sse + n, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w%d \"}}]}\n\n", i);
  sprintf(sse + n, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                   "data: [DONE]\n\n");
  put("session/turn-2.sse", sse);
  free(sse);
  char session[128], ws[128], data[128];
  snprintf(session, sizeof session, "%s/session", base);
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  const char *argv[] = {"toolstream", "run", "--model-replay", session, "--workspace", ws,
                        "--data-dir", data, "--rate", "100", "--thread", "cc", "--json", NULL};
  result r;
  memset(&r, 0, sizeof r);
  child c = spawn_bin(BINARY, argv, 0);
  double end = now_ms() + 10000;
  while (!strstr(sb_str(&r.out), "\"type\":\"text_delta\"") && now_ms() < end) pump(&c, &r, 20);
  kill(c.pid, SIGINT);
  double t0 = now_ms();
  finish_child(&c, &r);
  ck_assert_msg(now_ms() - t0 < 3000, "took %.0f ms to stop", now_ms() - t0);
  ck_assert_int_eq(r.status, 1);
  ck_assert_msg(strstr(sb_str(&r.err), "--thread cc --resume") != NULL, "%s", sb_str(&r.err));
  result_free(&r);
  char p[256];
  snprintf(p, sizeof p, "%s/ws/one.txt", base);
  ck_assert_int_eq(access(p, F_OK), 0); /* turn 1's result is kept */
  convo cv = conversation("cc");
  ck_assert_str_eq(cv.roles, "ta"); /* turn 1 (result, message); the cut turn 2 is not done */
  /* resuming streams the cut turn again and finishes the thread */
  r = run_in("cc", 1, NULL);
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.err), "1 turn, 0 tool calls"));
  result_free(&r);
  cv = conversation("cc");
  ck_assert_str_eq(cv.roles, "taa");
  r = run_in("cc", 1, NULL); /* and then there is nothing left to do */
  ck_assert_msg(r.status == 0, "exit %d: %s", r.status, sb_str(&r.err));
  result_free(&r);
  ck_assert_str_eq(conversation("cc").roles, "taa");
}
END_TEST

/* A turn of several calls in one chunk: tools[i] with arguments args[i] (escaped). */
static void calls_turn(const char *name, int n, const char *const *tools,
                       const char *const *args) {
  char buf[8192];
  size_t k = (size_t)snprintf(buf, sizeof buf,
                              "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[");
  for (int i = 0; i < n; i++)
    k += (size_t)snprintf(buf + k, sizeof buf - k,
                          "%s{\"index\":%d,\"id\":\"k%d\",\"type\":\"function\",\"function\":"
                          "{\"name\":\"%s\",\"arguments\":\"%s\"}}",
                          i ? "," : "", i, i, tools[i], args[i]);
  snprintf(buf + k, sizeof buf - k,
           "]}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
           "\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
  put(name, buf);
}

/* Waits until the child printed every one of `want` (NULL-terminated); 0 on time out. */
static int wait_for(child *c, result *r, const char *const *want) {
  double end = now_ms() + 60000;
  for (;;) {
    int all = 1;
    for (size_t i = 0; want[i]; i++) all = all && strstr(sb_str(&r->out), want[i]);
    if (all) return 1;
    if (now_ms() > end || pump(c, r, 20) == 0) return 0;
  }
}

/* Ctrl-C (or SIGTERM) after the turn's stream has ended, while a tool runs: the tool is
 * stopped (a JavaScript tool that would spin until its 5 s limit: its result says
 * cancelled, not timed out), its error result is stored, the next call never starts, and
 * --resume finishes the turn with that call's result and the thread. */
static void stop_running_tool(int sig) {
  setup();
  put("spin.js", "defineTool({ description: 'spins', args: z.object({}),\n"
                 "  execute: function (state, args) { for (;;) {} } });\n");
  const char *tools[] = {"spin", "write_file"};
  const char *args[] = {"{}", "{\\\"path\\\":\\\"after.txt\\\",\\\"content\\\":\\\"x\\\"}"};
  calls_turn("session/turn-1.sse", 2, tools, args);
  put("session/turn-2.sse", stop_turn);
  char session[128], ws[128], data[128], tool[128], after[160];
  snprintf(session, sizeof session, "%s/session", base);
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  snprintf(tool, sizeof tool, "%s/spin.js", base);
  snprintf(after, sizeof after, "%s/ws/after.txt", base);
  const char *argv[] = {"toolstream", "run", "--model-replay", session, "--workspace", ws,
                        "--data-dir", data, "--rate", "10000", "--thread", "sp", "--json",
                        "--tools", tool, NULL};
  result r;
  memset(&r, 0, sizeof r);
  child c = spawn_bin(BINARY, argv, 0);
  /* the stream is over (turn_finished) and the spinning tool runs */
  const char *want[] = {"\"type\":\"turn_finished\"", "\"type\":\"tool_execution_started\"",
                        NULL};
  ck_assert_msg(wait_for(&c, &r, want), "never saw the tool run: %s %s", sb_str(&r.out),
                sb_str(&r.err));
  kill(c.pid, sig);
  finish_child(&c, &r);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_msg(strstr(sb_str(&r.err), "--thread sp --resume") != NULL, "%s", sb_str(&r.err));
  const char *out = sb_str(&r.out);
  const char *res = strstr(out, "\"type\":\"tool_result\"");
  ck_assert_msg(res && strstr(res, "cancelled: the call was cancelled"), "%s", out);
  /* nothing after the cancelled call started: one execution in all, no file */
  const char *ex = strstr(out, "\"type\":\"tool_execution_started\"");
  ck_assert_msg(ex && !strstr(ex + 1, "\"type\":\"tool_execution_started\""), "%s", out);
  ck_assert_int_ne(access(after, F_OK), 0);
  result_free(&r);
  convo cv = conversation("sp");
  ck_assert_str_eq(cv.roles, "t");
  ck_assert_str_eq(cv.tool_results, "!cancelled: the call was cancelled\n");
  /* --resume: the cancelled call keeps its one result, the next call runs, then turn 2 */
  const char *rargv[] = {"toolstream", "run", "--model-replay", session, "--workspace", ws,
                         "--data-dir", data, "--rate", "10000", "--thread", "sp", "--json",
                         "--tools", tool, "--resume", NULL};
  r = run_bin(BINARY, rargv, NULL, 0);
  ck_assert_msg(r.status == 0, "resume exit %d: %s", r.status, sb_str(&r.err));
  out = sb_str(&r.out);
  ex = strstr(out, "\"type\":\"tool_execution_started\"");
  ck_assert_msg(ex && strstr(ex, "\"tool\":\"write_file\"") &&
                    !strstr(ex + 1, "\"type\":\"tool_execution_started\""),
                "one execution, write_file's: %s", out);
  ck_assert_int_eq(access(after, F_OK), 0);
  result_free(&r);
  cv = conversation("sp");
  ck_assert_str_eq(cv.roles, "ttaa");
  ck_assert_msg(!strncmp(cv.tool_results, "!cancelled: the call was cancelled\n+{\"path\":\"after.txt\"",
                         48), "%s", cv.tool_results);
}

START_TEST(test_sigint_stops_running_tool) { stop_running_tool(SIGINT); }
END_TEST

START_TEST(test_sigterm_stops_running_tool) { stop_running_tool(SIGTERM); }
END_TEST

/* Ctrl-C while a call's arguments stream: that call never ran; --resume streams the turn
 * again, keeps the first call's result (it does not run again) and runs the cut one, so
 * its file is written and each call has one result, in order. */
START_TEST(test_ctrl_c_mid_streaming_call_then_resume) {
  setup();
  char *sse = malloc(1 << 20);
  size_t n = 0;
  n += (size_t)sprintf(sse + n,
                       "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                       "\"id\":\"a1\",\"type\":\"function\",\"function\":{\"name\":\"write_file\","
                       "\"arguments\":\"{\\\"path\\\":\\\"first.txt\\\",\\\"content\\\":\\\"1\\\"}\"}}]}}]}\n\n");
  n += (size_t)sprintf(sse + n,
                       "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,"
                       "\"id\":\"a2\",\"type\":\"function\",\"function\":{\"name\":\"write_file\","
                       "\"arguments\":\"{\\\"description\\\":\\\"second\\\",\\\"path\\\":"
                       "\\\"second.txt\\\",\\\"content\\\":\\\"\"}}]}}]}\n\n");
  for (int i = 0; i < 400; i++)
    n += (size_t)sprintf(sse + n,
                         "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,"
                         "\"function\":{\"arguments\":\"%03d \"}}]}}]}\n\n", i);
  sprintf(sse + n,
          "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,"
          "\"function\":{\"arguments\":\"\\\"}\"}}]}}]}\n\n"
          "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
          "data: [DONE]\n\n");
  put("session/turn-1.sse", sse);
  free(sse);
  put("session/turn-2.sse", stop_turn);
  char session[128], ws[128], data[128], second[160];
  snprintf(session, sizeof session, "%s/session", base);
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(data, sizeof data, "%s/data", base);
  snprintf(second, sizeof second, "%s/ws/second.txt", base);
  const char *argv[] = {"toolstream", "run", "--model-replay", session, "--workspace", ws,
                        "--data-dir", data, "--rate", "100", "--thread", "ms", "--json", NULL};
  result r;
  memset(&r, 0, sizeof r);
  child c = spawn_bin(BINARY, argv, 0);
  /* the first call's result is in and the second call's label has streamed */
  const char *want[] = {"\"type\":\"tool_result\"", "\"progress\":\"second\"", NULL};
  ck_assert_msg(wait_for(&c, &r, want), "%s %s", sb_str(&r.out), sb_str(&r.err));
  kill(c.pid, SIGINT);
  finish_child(&c, &r);
  ck_assert_msg(r.status == 1, "exit %d: %s", r.status, sb_str(&r.err));
  ck_assert_msg(!strstr(sb_str(&r.out), "\"type\":\"tool_call_ready\",\"index\":1") &&
                    access(second, F_OK) != 0, "the cut call ran: %s", sb_str(&r.out));
  result_free(&r);
  ck_assert_str_eq(conversation("ms").roles, "t");
  r = run_in("ms", 1, "go on"); /* a prompt waits until the cut turn is finished */
  ck_assert_msg(r.status == 0, "resume exit %d: %s", r.status, sb_str(&r.err));
  const char *out = sb_str(&r.out);
  const char *ex = strstr(out, "\"type\":\"tool_execution_started\"");
  ck_assert_msg(ex && !strstr(ex + 1, "\"type\":\"tool_execution_started\""),
                "the first call ran again: %s", out);
  result_free(&r);
  size_t len;
  char *text = ts_test_read_file(second, &len);
  ck_assert_ptr_nonnull(text);
  ck_assert_int_eq(len, 400 * 4);
  free(text);
  convo cv = conversation("ms");
  ck_assert_str_eq(cv.roles, "ttaua");
  ck_assert_msg(strstr(cv.tool_results, "+{\"path\":\"first.txt\",\"bytes\":1}\n+{\"path\":"
                                        "\"second.txt\",\"bytes\":1600}") != NULL,
                "%s", cv.tool_results);
}
END_TEST

int main(void) {
  Suite *s = suite_create("run_cli");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, NULL, remove_base);
  tcase_add_test(tc, test_turns_files_and_store);
  tcase_add_test(tc, test_confined_to_workspace);
  tcase_add_test(tc, test_usage_and_demo);
  tcase_add_test(tc, test_started_reaches_subscriber_early);
  tcase_add_test(tc, test_ctrl_c_then_resume);
  tcase_add_test(tc, test_sigint_stops_running_tool);
  tcase_add_test(tc, test_sigterm_stops_running_tool);
  tcase_add_test(tc, test_ctrl_c_mid_streaming_call_then_resume);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
