/*
 * subagents_test.c: the lifecycle tools (agent/subagents.h) driven by recorded turns.
 *
 * A coordinator thread `p` whose side relates to a blocking `research` agent and a
 * non-blocking `write` agent. Its turns, in order:
 *   1. subagent_create research "alpha" with /attachments/brief.txt (blocking: the call
 *      returns alpha's outcome, whose reply names the copied file: copied back as
 *      brief-2.txt, the parent having a brief.txt of its own);
 *   2. subagent_create write "beta" (non-blocking: returns at once, beta runs beside);
 *   3. subagent_message to alpha (blocking: returns alpha's next outcome), and one to a
 *      thread that is not a child (an error result);
 *   4. subagents (the list), and subagent_create with an attachment outside the
 *      filesystem (an error result, no instance);
 *   5.. text: the model is done, the loop waits for beta, whose outcome arrives as a
 *      message naming the instance, and the model answers it.
 * Then the store, the files and the events are checked, and a resume of the finished
 * parent runs nothing and creates nothing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/replay_model.h"
#include "agent/run.h"
#include "agent/compose.h"
#include "agent/subagents.h"
#include "base/strbuf.h"
#include "store/store.h"
#include "support/park_stop.h"
#include "support/runner.h"
#include "support/sse_text.h"
#include "support/tempdir.h"
#include "support/test_support.h"
#include "tools/registry.h"
#include "tools/variables.h"
#include <fcntl.h>

static char dir[64], data[128], session[128], pws[160];

/* The children's model: the recorded turns of their agent. */
typedef struct {
  ts_replay_model rm[2];
  char dirs[2][200];
} models;

static models mods;

static int run_child(void *user, const ts_agent_config *child, char *why, size_t cap) {
  models *m = user;
  ts_agent_config cc = *child;
  int k = !strcmp(child->agent, "writer");
  cc.model = ts_replay_model_backend(&m->rm[k]);
  return ts_agent_run(&cc, NULL, why, cap);
}

static ts_defs_subagent rels[2] = {
    {.agent = "researcher", .name = "research", .description = "finds things", .blocking = 1},
    {.agent = "writer", .name = "write", .blocking = 0},
};
static ts_defs_side side = {.prompt = "coord", .subagents = rels, .n_subagents = 2};
static ts_defs_agent agent = {.name = "coordinator"};

static park_greet greet_tool; /* support/park_stop.h */

static int run_parent_c(int resume, const char *prompt, const volatile sig_atomic_t *cancel,
                        char *why, size_t cap);

static int run_parent(int resume, const char *prompt, char *why, size_t cap) {
  return run_parent_c(resume, prompt, NULL, why, cap);
}

static int run_parent_c(int resume, const char *prompt, const volatile sig_atomic_t *cancel,
                        char *why, size_t cap) {
  ts_store *s = NULL, *ds = NULL;
  ck_assert_int_eq(ts_store_open(data, &s, why, cap), 0);
  ck_assert_int_eq(ts_store_open(data, &ds, why, cap), 0);
  ts_registry *reg = ts_registry_new();
  ck_assert_int_eq(park_greet_add(reg, &greet_tool, dir), 0);
  char pdir[200];
  snprintf(pdir, sizeof pdir, "%s/coord", session);
  ts_replay_model rm = {pdir, 0};
  ts_agent_config ac = {.store = s, .dispatch_store = ds, .reg = reg, .thread = "p",
                        .resume = resume, .prompt = prompt,
                        .model = ts_replay_model_backend(&rm), .workspace = pws,
                        .sink = {.who = "subagents_test", .no_time = 1}, .cancel = cancel};
  ts_subagents_runner runner = {run_child, &mods};
  int rc = ts_subagents_add_tools(reg, NULL, &agent, &side, &ac, &runner, why, cap);
  ck_assert_msg(rc == 0, "%s", why);
  rc = ts_agent_run(&ac, NULL, why, cap);
  ts_registry_free(reg);
  ts_store_close(s);
  ts_store_close(ds);
  return rc;
}

typedef struct {
  ts_buf all;
  int outcome_msgs, results;
  char res[8][4096];
  int res_err[8];
} seen;

static int see(void *user, const ts_store_message *m) {
  seen *v = user;
  ts_buf_puts(&v->all, ts_store_role_name(m->role));
  ts_buf_putc(&v->all, '=');
  ts_buf_append(&v->all, m->content, m->content_len);
  ts_buf_puts(&v->all, "\n");
  if (m->role == TS_STORE_USER && strstr(m->content, "\"id\":\"p/t2c0\"")) v->outcome_msgs++;
  if (m->role == TS_STORE_TOOL && v->results < 8) {
    snprintf(v->res[v->results], sizeof v->res[0], "%s", m->content);
    v->res_err[v->results++] = m->is_error;
  }
  return 0;
}

static int see_tags(void *user, const ts_store_thread *t) {
  snprintf(user, 256, "%s|%s|%s", t->parent ? t->parent : "-", t->tags, t->state);
  return 0;
}

typedef struct {
  ts_buf b;
} evs;

static int see_event(void *user, uint64_t seq, const char *json, size_t len) {
  (void)seq;
  evs *e = user;
  ts_buf_append(&e->b, json, len);
  ts_buf_putc(&e->b, '\n');
  return 0;
}

/* A test's temporary directory `name` with the store's, the recorded turns' and the
 * parent's workspace directories in it. */
static void make_dirs(const char *name) {
  ts_test_tempdir(dir, sizeof dir, name);
  snprintf(data, sizeof data, "%s/data", dir);
  snprintf(session, sizeof session, "%s/session", dir);
  snprintf(pws, sizeof pws, "%s/pws", dir);
  mkdir(session, 0755);
  mkdir(pws, 0755);
}

START_TEST(test_tree_of_subagents) {
  make_dirs("subagents");
  mkdir(ts_test_at(pws, "attachments"), 0755);
  ts_test_put(ts_test_at(pws, "attachments/brief.txt"), "the brief");
  const char *t1[] = {"subagent_create",
                      "{\"agent\":\"research\",\"name\":\"alpha\",\"message\":\"look into it\","
                      "\"attachments\":[\"/attachments/brief.txt\"]}"};
  const char *t2[] = {"subagent_create",
                      "{\"agent\":\"write\",\"name\":\"beta\",\"message\":\"write it up\"}"};
  const char *t3[] = {"subagent_message", "{\"id\":\"p/t1c0\",\"message\":\"anything more?\"}",
                      "subagent_message", "{\"id\":\"elsewhere\",\"message\":\"hi\"}"};
  const char *t4[] = {"subagents", "{}", "subagent_create",
                      "{\"agent\":\"research\",\"name\":\"gamma\",\"message\":\"x\","
                      "\"attachments\":[\"/../../etc/passwd\"]}"};
  ts_test_chat_turn(session, "coord", 1, t1, 1, NULL);
  ts_test_chat_turn(session, "coord", 2, t2, 1, NULL);
  ts_test_chat_turn(session, "coord", 3, t3, 2, NULL);
  ts_test_chat_turn(session, "coord", 4, t4, 2, NULL);
  for (int n = 5; n <= 8; n++) ts_test_chat_turn(session, "coord", n, NULL, 0, "noted");
  ts_test_chat_turn(session, "researcher", 1, NULL, 0, "found it: see /attachments/brief.txt.");
  ts_test_chat_turn(session, "researcher", 2, NULL, 0, "nothing more");
  ts_test_chat_turn(session, "writer", 1, NULL, 0, "written");
  snprintf(mods.dirs[0], sizeof mods.dirs[0], "%s/researcher", session);
  snprintf(mods.dirs[1], sizeof mods.dirs[1], "%s/writer", session);
  mods.rm[0] = (ts_replay_model){mods.dirs[0], 0};
  mods.rm[1] = (ts_replay_model){mods.dirs[1], 0};

  char why[1024] = "";
  int rc = run_parent(0, "coordinate", why, sizeof why);
  ck_assert_msg(rc == TS_E_OK, "run: %d %s", rc, why);

  ts_store *s;
  ck_assert_int_eq(ts_store_open(data, &s, why, sizeof why), 0);
  seen v;
  memset(&v, 0, sizeof v);
  ts_buf_init(&v.all, 1 << 22);
  ck_assert_int_ge(ts_store_messages(s, "p", 0, see, &v), 10);
  ck_assert_msg(v.results == 6, "%d results:\n%s", v.results, v.all.p);
  /* 1: alpha's outcome, the file copied back under a name of its own */
  ck_assert_msg(!v.res_err[0] && strstr(v.res[0], "\"id\":\"p/t1c0\"") &&
                    strstr(v.res[0], "\"status\":\"done\"") &&
                    strstr(v.res[0], "\"text\":\"found it: see /attachments/brief-2.txt.\"") &&
                    strstr(v.res[0], "\"attachments\":[\"/attachments/brief-2.txt\"]"),
                "result 1: %s", v.res[0]);
  size_t n;
  char *body = ts_test_read_file(ts_test_at(pws, "attachments/brief-2.txt"), &n);
  ck_assert_str_eq(body, "the brief");
  free(body);
  /* 2: beta running */
  ck_assert_msg(!v.res_err[1] && strstr(v.res[1], "\"id\":\"p/t2c0\"") &&
                    strstr(v.res[1], "\"status\":\"running\"") &&
                    strstr(v.res[1], "\"blocking\":false"),
                "result 2: %s", v.res[1]);
  /* 3: alpha's second outcome; a message to a thread that is no child is refused */
  ck_assert_msg(!v.res_err[2] && strstr(v.res[2], "\"text\":\"nothing more\""), "result 3: %s",
                v.res[2]);
  ck_assert_msg(v.res_err[3] && strstr(v.res[3], "not a subagent of this thread"), "result 4: %s",
                v.res[3]);
  /* 4: the list; an attachment outside the filesystem creates nothing */
  ck_assert_msg(strstr(v.res[4], "\"name\":\"alpha\"") && strstr(v.res[4], "\"name\":\"beta\"") &&
                    strstr(v.res[4], "\"agent\":\"researcher\"") &&
                    strstr(v.res[4], "\"relationship\":\"write\""),
                "result 5: %s", v.res[4]);
  ck_assert_msg(v.res_err[5] && strstr(v.res[5], "attach_path") == NULL &&
                    strstr(v.res[5], "attachment \""),
                "result 6: %s", v.res[5]);
  ck_assert_int_eq(ts_store_thread_exists(s, "p/t4c1"), 0);
  /* beta's outcome reached the parent once, as a message naming the instance, and the
   * model answered it: the last message is the assistant's */
  ck_assert_msg(v.outcome_msgs == 1, "%d outcome messages:\n%s", v.outcome_msgs, v.all.p);
  ck_assert_ptr_nonnull(strstr(v.all.p, "\"name\":\"beta\""));
  ck_assert_ptr_nonnull(strstr(v.all.p, "\"text\":\"written\""));
  const char *last = v.all.p + v.all.len - 1;
  while (last > v.all.p && last[-1] != '\n') last--;
  ck_assert_msg(!strncmp(last, "assistant=", 10), "last: %s", last);

  /* the children: tags, parent, states, first messages with child-local attachments */
  char row[256];
  ck_assert_int_eq(ts_store_thread_get(s, "p/t1c0", see_tags, row), 1);
  ck_assert_str_eq(row, "p|[\"name:alpha\"]|done");
  ck_assert_int_eq(ts_store_thread_get(s, "p/t2c0", see_tags, row), 1);
  ck_assert_str_eq(row, "p|[\"name:beta\"]|done");
  seen a;
  memset(&a, 0, sizeof a);
  ts_buf_init(&a.all, 1 << 20);
  ts_store_messages(s, "p/t1c0", 0, see, &a);
  ck_assert_msg(strstr(a.all.p, "user=look into it\n\nAttachments:\n/attachments/brief.txt\n") &&
                    strstr(a.all.p, "user=anything more?"),
                "alpha:\n%s", a.all.p);
  ts_buf_fini(&a.all);
  char ws1[256];
  snprintf(ws1, sizeof ws1, "%s/threads/t1c0/attachments/brief.txt", pws);
  body = ts_test_read_file(ws1, &n);
  ck_assert_str_eq(body, "the brief");
  free(body);

  /* the events: creation and end on the children's streams, deliveries on each */
  evs e;
  ts_buf_init(&e.b, 1 << 22);
  ts_store_events_after(s, "p/t2c0", 0, 0, see_event, &e);
  ck_assert_msg(strstr(e.b.p, "{\"v\":1,\"type\":\"thread_created\",\"thread\":\"p/t2c0\","
                              "\"parent\":\"p\",\"seq\":1,\"offset\":0,\"agent\":\"writer\","
                              "\"name\":\"beta\",\"relationship\":\"write\",\"blocking\":false}\n"
                              "{\"v\":1,\"type\":\"subagent_message\",\"thread\":\"p/t2c0\","
                              "\"parent\":\"p\",\"seq\":2,\"offset\":0,\"from\":\"p\","
                              "\"inbox_seq\":1,\"message\":\"write it up\"}") == e.b.p,
                "beta's events:\n%s", e.b.p);
  ck_assert_ptr_nonnull(strstr(e.b.p, "\"type\":\"thread_finished\",\"thread\":\"p/t2c0\","
                                      "\"parent\":\"p\""));
  ts_buf_reset(&e.b);
  ts_store_events_after(s, "p", 0, 0, see_event, &e);
  ck_assert_msg(strstr(e.b.p, "\"type\":\"subagent_message\",\"thread\":\"p\",") &&
                    strstr(e.b.p, "\"from\":\"p/t2c0\""),
                "p's events:\n%s", e.b.p);
  ts_buf_fini(&e.b);
  ts_store_close(s);

  /* a finished parent resumed: nothing runs, no child is made or started */
  rc = run_parent(1, NULL, why, sizeof why);
  ck_assert_msg(rc == TS_E_OK, "resume: %d %s", rc, why);
  ck_assert_int_eq(ts_store_open(data, &s, why, sizeof why), 0);
  seen w;
  memset(&w, 0, sizeof w);
  ts_buf_init(&w.all, 1 << 22);
  ts_store_messages(s, "p", 0, see, &w);
  ck_assert_str_eq(w.all.p, v.all.p);
  ts_buf_fini(&w.all);
  /* the parent comes back with a new prompt and messages beta, which has finished: beta
   * runs again, and its second outcome reaches the parent as a message */
  int turns = 0;
  for (const char *q = v.all.p; (q = strstr(q, "assistant=")); q++) turns++;
  ts_store_close(s);
  const char *tm[] = {"subagent_message", "{\"id\":\"p/t2c0\",\"message\":\"ping\"}"};
  ts_test_chat_turn(session, "coord", turns + 1, tm, 1, NULL);
  for (int k = turns + 2; k <= 9; k++) /* the replay takes files in name order: one digit */
    ts_test_chat_turn(session, "coord", k, NULL, 0, "ok");
  ts_test_chat_turn(session, "writer", 2, NULL, 0, "second answer");
  rc = run_parent(1, "again", why, sizeof why);
  ck_assert_msg(rc == TS_E_OK, "resume with a prompt: %d %s", rc, why);
  ck_assert_int_eq(ts_store_open(data, &s, why, sizeof why), 0);
  memset(&w, 0, sizeof w);
  ts_buf_init(&w.all, 1 << 22);
  ts_store_messages(s, "p", 0, see, &w);
  ck_assert_msg(w.outcome_msgs == 2 && strstr(w.all.p, "\"text\":\"second answer\""), "%s",
                w.all.p);
  ck_assert_msg(strstr(w.res[6], "\"queued\":true") && strstr(w.res[6], "\"status\":\"started\""),
                "%s", w.res[6]);
  ts_buf_fini(&w.all);
  memset(&w, 0, sizeof w);
  ts_buf_init(&w.all, 1 << 20);
  ts_store_messages(s, "p/t2c0", 0, see, &w);
  ck_assert_msg(strstr(w.all.p, "user=write it up\n") && strstr(w.all.p, "user=ping\n") &&
                    strstr(w.all.p, "second answer"),
                "%s", w.all.p);
  ts_buf_fini(&w.all);
  ts_store_close(s);
  ts_buf_fini(&v.all);
  ts_test_rm_rf(dir);
}
END_TEST

/* Which sides get the three tools, and what their schemas offer. */
START_TEST(test_tools_injected) {
  ts_test_tempdir(dir, sizeof dir, "subagents-tools");
  snprintf(data, sizeof data, "%s/data", dir);
  ts_store *s;
  char why[512];
  ck_assert_int_eq(ts_store_open(data, &s, why, sizeof why), 0);
  ts_agent_config ac = {.store = s, .thread = "t"};
  ts_defs_subagent two[2] = {{.agent = "a1", .name = "first", .blocking = 1},
                             {.agent = "a2", .name = "second", .hidden = 1}};
  struct {
    int line;
    ts_defs_side side;
    size_t want_tools;
    const char *in_schema, *not_in_schema;
  } rows[] = {
      {__LINE__, {.prompt = "p", .subagents = rels, .n_subagents = 2}, 3,
       "\"enum\":[\"research\",\"write\"]", NULL},
      {__LINE__, {.prompt = "p", .subagents = rels, .n_subagents = 2}, 3,
       "\"required\":[\"agent\",\"name\",\"message\"]", NULL},
      {__LINE__, {.prompt = "p", .subagents = two, .n_subagents = 2}, 3,
       "\"required\":[\"name\",\"message\"]", "second"},
      {__LINE__, {.prompt = NULL, .subagents = rels, .n_subagents = 2}, 0, NULL, NULL}, /* human */
      {__LINE__, {.prompt = "p", .subagents = two + 1, .n_subagents = 1}, 0, NULL, NULL}, /* hidden */
      {__LINE__, {.prompt = "p", .subagents = NULL, .n_subagents = 0}, 0, NULL, NULL},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    ts_registry *reg = ts_registry_new();
    int rc = ts__compose_lifecycle_tools(reg, NULL, &agent, &rows[i].side, &ac, why, sizeof why);
    ck_assert_msg(rc == 0, "line %d: %s", rows[i].line, why);
    ck_assert_msg(ts_registry_count(reg) == rows[i].want_tools, "line %d: %zu tools",
                  rows[i].line, ts_registry_count(reg));
    if (rows[i].want_tools) {
      const ts_tool *c = ts_registry_find(reg, "subagent_create", 15);
      ck_assert_ptr_nonnull(c);
      ck_assert_ptr_nonnull(ts_registry_find(reg, "subagents", 9));
      ck_assert_ptr_nonnull(ts_registry_find(reg, "subagent_message", 16));
      ck_assert_int_eq(ts_tool_idempotent(c), 1); /* a re-run finds its instance */
      const char *sc = ts_tool_args_schema(c);
      if (rows[i].in_schema)
        ck_assert_msg(strstr(sc, rows[i].in_schema), "line %d: %s", rows[i].line, sc);
      if (rows[i].not_in_schema)
        ck_assert_msg(!strstr(sc, rows[i].not_in_schema) &&
                          !strstr(ts_tool_description(c), rows[i].not_in_schema),
                      "line %d: a hidden relationship shows: %s", rows[i].line, sc);
      const char *d = ts_tool_description(c);
      ck_assert_msg(strstr(d, "- research (blocking") || strstr(d, "- first (blocking"),
                    "line %d: %s", rows[i].line, d);
      /* valid and invalid arguments, as the dispatcher checks them */
      ck_assert_int_eq(ts_tool_validate(c, "{\"name\":\"\",\"message\":\"m\"}", 26, why, sizeof why) != 0, 1);
      ck_assert_int_eq(ts_tool_validate(ts_registry_find(reg, "subagents", 9), "{\"x\":1}", 7, why,
                                        sizeof why) != 0, 1);
    }
    ts_registry_free(reg);
  }
  /* a user tool still cannot take the names */
  ts_registry *reg = ts_registry_new();
  ts_tool_spec sp = {.name = "subagent_create"};
  ck_assert_int_eq(ts_registry_add(reg, &sp, why, sizeof why), TS_E_INVAL);
  ts_registry_free(reg);
  ts_store_close(s);
  ts_test_rm_rf(dir);
}
END_TEST

START_TEST(test_child_ids) {
  char out[TS_THREAD_ID_MAX + 1], again[TS_THREAD_ID_MAX + 1];
  ts_compose_child_id("root", 3, 1, out);
  ck_assert_str_eq(out, "root/t3c1");
  char longid[TS_THREAD_ID_MAX + 1];
  memset(longid, 'x', TS_THREAD_ID_MAX);
  longid[TS_THREAD_ID_MAX] = '\0';
  ts_compose_child_id(longid, 3, 1, out);
  ts_compose_child_id(longid, 3, 1, again);
  ck_assert_str_eq(out, again);
  ck_assert_int_eq(strncmp(out, "th_", 3), 0);
  ts_compose_child_id(longid, 3, 2, again);
  ck_assert_str_ne(out, again);
}
END_TEST

/* subagent_create run again for the same call (the dispatcher re-runs an idempotent call
 * whose result a crash cut) after its non-blocking child has ended and reported: the
 * child is found, not started again, and its outcome reaches the parent once. Before,
 * the re-run started a job whose empty session reported the same outcome a second time
 * (subagents_crash_test saw it as two outcome messages under load). */
static int count_item(void *user, const ts_store_inbox_item *it) {
  (void)it;
  (*(int *)user)++;
  return 0;
}

START_TEST(test_create_run_again_reports_once) {
  make_dirs("subagents-again");
  ts_test_chat_turn(session, "writer", 1, NULL, 0, "written");
  ts_test_chat_turn(session, "writer", 2, NULL, 0, "written again"); /* must not be asked */
  snprintf(mods.dirs[1], sizeof mods.dirs[1], "%s/writer", session);
  mods.rm[1] = (ts_replay_model){mods.dirs[1], 0};
  char why[1024] = "";
  ts_store *s, *ds;
  ck_assert_int_eq(ts_store_open(data, &s, why, sizeof why), 0);
  ck_assert_int_eq(ts_store_open(data, &ds, why, sizeof why), 0);
  ck_assert_int_eq(ts_store_thread_create_child(s, "q", NULL, pws, NULL), 0);
  ts_registry *reg = ts_registry_new();
  ts_agent_config ac = {.store = s, .dispatch_store = ds, .reg = reg, .thread = "q",
                        .workspace = pws, .sink = {.who = "subagents_test", .no_time = 1}};
  ts_subagents_runner runner = {run_child, &mods};
  ck_assert_int_eq(ts_subagents_add_tools(reg, NULL, &agent, &side, &ac, &runner, why, sizeof why),
                   0);
  const ts_tool *create = ts_registry_find(reg, "subagent_create", 15);
  ck_assert_ptr_nonnull(create);
  static const char args[] = "{\"agent\":\"write\",\"name\":\"beta\",\"message\":\"b\"}";
  ts_call_info call = {.thread = "q", .turn = 2, .index = 0, .call_id = "q_2_0",
                       .tool = "subagent_create", .workspace = pws};
  const char *want[2] = {"\"status\":\"running\"", "\"status\":\"done\""};
  for (int run = 0; run < 2; run++) {
    ts_tool_result r = {0};
    ts_tool_execute(create, &call, args, sizeof args - 1, &r);
    ck_assert_msg(!r.is_error && strstr(r.text, "\"id\":\"q/t2c0\"") && strstr(r.text, want[run]),
                  "run %d: %s", run, r.text);
    ts_tool_result_free(&r);
    ts_subagents_join("q");
    int queued = 0;
    ck_assert_int_eq(ts_store_inbox(s, "q", 1, count_item, &queued), 1);
    ck_assert_msg(queued == 1, "run %d: %d outcomes queued to the parent", run, queued);
  }
  seen w;
  memset(&w, 0, sizeof w);
  ts_buf_init(&w.all, 1 << 20);
  ts_store_messages(s, "q/t2c0", 0, see, &w);
  ck_assert_str_eq(w.all.p, "user=b\nassistant={\"turn\":1,\"text\":\"written\",\"tool_calls\":[]}\n");
  ts_buf_fini(&w.all);
  evs e;
  ts_buf_init(&e.b, 1 << 20);
  ts_store_events_after(s, "q/t2c0", 0, 0, see_event, &e);
  const char *fin = strstr(e.b.p, "\"type\":\"thread_finished\"");
  ck_assert_msg(fin && !strstr(fin + 1, "\"type\":\"thread_finished\""), "%s", e.b.p);
  ts_buf_fini(&e.b);
  ts_registry_free(reg);
  ts_store_close(s);
  ts_store_close(ds);
  ts_test_rm_rf(dir);
}
END_TEST

/* A child whose run stops on an error tells its parent why: the outcome's "error" is the
 * run's reason (a required variable with no value, say), beside its status. Rows {line,
 * what the child's run returns, its reason, what the blocking call's result holds, what it
 * must not}. */
typedef struct {
  int rc;
  const char *why;
} canned;

static int run_canned(void *user, const ts_agent_config *child, char *why, size_t cap) {
  (void)child;
  const canned *c = user;
  snprintf(why, cap, "%s", c->why);
  return c->rc;
}

static const struct {
  int line;
  canned run;
  const char *want, *not;
} failing_rows[] = {
    {__LINE__, {TS_E_INVAL, "agent \"researcher\" requires the variable CHANNEL, which has no value"},
     "\"status\":\"failed\",\"text\":\"\",\"attachments\":[],\"error\":\"agent \\\"researcher\\\" "
     "requires the variable CHANNEL, which has no value\"}",
     NULL},
    {__LINE__, {TS_E_LIMIT, "stopped after 16 turns"},
     "\"status\":\"max_turns\",\"text\":\"\",\"attachments\":[],\"error\":\"stopped after 16 turns\"}",
     NULL},
    {__LINE__, {TS_E_OK, ""}, "\"status\":\"done\",\"text\":\"\",\"attachments\":[]}", "\"error\""},
};

/* ---- a child whose call waits for a variable ------------------------------------------------ */

static void set_var(const char *thread, const char *name, const char *value) {
  park_set_var(data, thread, name, value); /* support/park_stop.h */
}

static int grab_state(void *user, const ts_store_thread *t) {
  snprintf(user, 64, "%s", t->state);
  return 0;
}

static void check_state(const char *thread, const char *want) {
  ts_store *s;
  char why[256], st[64] = "";
  ck_assert_int_eq(ts_store_open(data, &s, why, sizeof why), 0);
  ts_store_thread_get(s, thread, grab_state, st);
  ts_store_close(s);
  ck_assert_msg(!strcmp(st, want), "%s is %s, not %s", thread, st, want);
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
  return n;
}

/* The stored events of `thread`, and its messages (role=content lines) in *msgs. */
static void thread_record(const char *thread, evs *e, seen *msgs) {
  ts_store *s;
  char why[256];
  ck_assert_int_eq(ts_store_open(data, &s, why, sizeof why), 0);
  ts_buf_init(&e->b, 1 << 22);
  ts_store_events_after(s, thread, 0, 0, see_event, e);
  memset(msgs, 0, sizeof *msgs);
  ts_buf_init(&msgs->all, 1 << 22);
  ts_store_messages(s, thread, 0, see, msgs);
  ts_store_close(s);
}

/* A subagent (blocking: `blocking`; else non-blocking) whose call waits for WHO: stopped
 * there (Ctrl-C), the child says waiting_for_variable and its variable_required event
 * names it and its parent; the parent's create call has no result (blocking) or the parent
 * heard nothing (non-blocking); WHO set on the parent and --resume run the child's call
 * once, and its outcome reaches the parent once. */
static void child_parks(int blocking) {
  make_dirs(blocking ? "subagents-park-b" : "subagents-park-nb");
  unsetenv("WHO");
  const char *t1b[] = {"subagent_create",
                       "{\"agent\":\"research\",\"name\":\"alpha\",\"message\":\"find\"}"};
  const char *t1n[] = {"subagent_create",
                       "{\"agent\":\"write\",\"name\":\"beta\",\"message\":\"write\"}"};
  const char *greet[] = {"greet", "{}"};
  ts_test_chat_turn(session, "coord", 1, blocking ? t1b : t1n, 1, NULL);
  for (int n = 2; n <= 4; n++) ts_test_chat_turn(session, "coord", n, NULL, 0, "noted");
  const char *kid = blocking ? "researcher" : "writer";
  ts_test_chat_turn(session, kid, 1, greet, 1, NULL);
  ts_test_chat_turn(session, kid, 2, NULL, 0, "greeted");
  snprintf(mods.dirs[0], sizeof mods.dirs[0], "%s/researcher", session);
  snprintf(mods.dirs[1], sizeof mods.dirs[1], "%s/writer", session);
  mods.rm[0] = (ts_replay_model){mods.dirs[0], 0};
  mods.rm[1] = (ts_replay_model){mods.dirs[1], 0};
  const char *child = blocking ? "p/t1c0" : "p/t1c0";
  char why[1024] = "", path[200];
  park_stop w;
  park_stop_begin(&w, data, child);
  int rc = run_parent_c(0, "coordinate", &w.cancel, why, sizeof why);
  ck_assert(park_stop_end(&w));
  ck_assert_msg(rc == TS_E_ABORTED, "run: %d %s", rc, why);
  check_state(child, "waiting_for_variable");
  check_state("p", "interrupted");
  evs e;
  seen v;
  thread_record(child, &e, &v);
  ck_assert_msg(strstr(e.b.p, "\"type\":\"variable_required\",\"thread\":\"p/t1c0\","
                              "\"parent\":\"p\"") &&
                    strstr(e.b.p, "\"tool\":\"greet\"") && strstr(e.b.p, "\"name\":\"WHO\"") &&
                    !strstr(e.b.p, "thread_finished"),
                "child's events:\n%s", e.b.p);
  ts_buf_fini(&e.b);
  ts_buf_fini(&v.all);
  thread_record("p", &e, &v);
  ck_assert_msg(v.results == (blocking ? 0 : 1), "parent:\n%s", v.all.p); /* create waits */
  ck_assert_int_eq(count_of(v.all.p, "\"id\":\"p/t1c0\",\"name\""), 0);  /* no outcome yet */
  ts_buf_fini(&e.b);
  ts_buf_fini(&v.all);
  snprintf(path, sizeof path, "%s/greet.log", dir);
  ck_assert_int_ne(access(path, F_OK), 0);

  set_var("p", "WHO", "bob");
  rc = run_parent(1, NULL, why, sizeof why);
  ck_assert_msg(rc == TS_E_OK, "resume: %d %s", rc, why);
  size_t n;
  char *log = ts_test_read_file(path, &n);
  ck_assert_str_eq(log, "g"); /* greet ran once */
  free(log);
  check_state(child, "done");
  check_state("p", "done");
  thread_record(child, &e, &v);
  ck_assert_msg(v.results == 1 && strstr(v.res[0], "\"bob\""), "child:\n%s", v.all.p);
  ck_assert_int_eq(count_of(e.b.p, "\"type\":\"thread_finished\""), 1);
  ts_buf_fini(&e.b);
  ts_buf_fini(&v.all);
  thread_record("p", &e, &v);
  /* the outcome, once: the blocking call's one result, or one message to the parent */
  ck_assert_msg(count_of(v.all.p, "\"text\":\"greeted\"") == 1, "parent:\n%s", v.all.p);
  ck_assert_msg(v.results == 1, "parent:\n%s", v.all.p);
  if (blocking)
    ck_assert_msg(!v.res_err[0] && strstr(v.res[0], "\"status\":\"done\""), "%s", v.res[0]);
  const char *last = v.all.p + v.all.len - 1;
  while (last > v.all.p && last[-1] != '\n') last--;
  ck_assert_msg(!strncmp(last, "assistant=", 10), "last: %s", last);
  ts_buf_fini(&e.b);
  /* resuming again changes nothing */
  seen again;
  rc = run_parent(1, NULL, why, sizeof why);
  ck_assert_msg(rc == TS_E_OK, "resume again: %d %s", rc, why);
  thread_record("p", &e, &again);
  ck_assert_str_eq(again.all.p, v.all.p);
  ts_buf_fini(&e.b);
  ts_buf_fini(&again.all);
  ts_buf_fini(&v.all);
  ts_test_rm_rf(dir);
}

START_TEST(test_blocking_child_parks_for_a_variable) { child_parks(1); }
END_TEST

START_TEST(test_nonblocking_child_parks_for_a_variable) { child_parks(0); }
END_TEST

START_TEST(test_a_failed_child_says_why) {
  for (size_t i = 0; i < sizeof failing_rows / sizeof failing_rows[0]; i++) {
    make_dirs("subagents-fail");
    char why[1024] = "";
    ts_store *s, *ds;
    ck_assert_int_eq(ts_store_open(data, &s, why, sizeof why), 0);
    ck_assert_int_eq(ts_store_open(data, &ds, why, sizeof why), 0);
    ck_assert_int_eq(ts_store_thread_create_child(s, "f", NULL, pws, NULL), 0);
    ts_registry *reg = ts_registry_new();
    ts_agent_config ac = {.store = s, .dispatch_store = ds, .reg = reg, .thread = "f",
                          .workspace = pws, .sink = {.who = "subagents_test", .no_time = 1}};
    ts_subagents_runner runner = {run_canned, (void *)&failing_rows[i].run};
    ck_assert_int_eq(
        ts_subagents_add_tools(reg, NULL, &agent, &side, &ac, &runner, why, sizeof why), 0);
    const ts_tool *create = ts_registry_find(reg, "subagent_create", 15);
    static const char args[] = "{\"agent\":\"research\",\"name\":\"alpha\",\"message\":\"go\"}";
    ts_call_info call = {.thread = "f", .turn = 1, .index = 0, .call_id = "f_1_0",
                         .tool = "subagent_create", .workspace = pws};
    ts_tool_result r = {0};
    ts_tool_execute(create, &call, args, sizeof args - 1, &r);
    ck_assert_msg(!r.is_error && strstr(r.text, failing_rows[i].want), "line %d: %s",
                  failing_rows[i].line, r.text);
    if (failing_rows[i].not)
      ck_assert_msg(!strstr(r.text, failing_rows[i].not), "line %d: %s", failing_rows[i].line,
                    r.text);
    ts_tool_result_free(&r);
    ts_registry_free(reg);
    ts_store_close(s);
    ts_store_close(ds);
    ts_test_rm_rf(dir);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("subagents");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_tree_of_subagents);
  tcase_add_test(tc, test_child_ids);
  tcase_add_test(tc, test_tools_injected);
  tcase_add_test(tc, test_create_run_again_reports_once);
  tcase_add_test(tc, test_a_failed_child_says_why);
  tcase_add_test(tc, test_blocking_child_parks_for_a_variable);
  tcase_add_test(tc, test_nonblocking_child_parks_for_a_variable);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
