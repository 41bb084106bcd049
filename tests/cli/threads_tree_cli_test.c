/*
 * threads_tree_cli_test.c: `toolstream threads` and `threads show` draw a tree of subagent
 * instances (agent/subagents.h) as the store records it: names from the "name:" tags,
 * each child under its parent at any depth, what a thread is as a subagent (agent,
 * relationship, blocking, outcome), and the messages queued to it; the same in --json.
 * The store is written through its API (the records a run of subagents leaves).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "store/store.h"
#include "support/proc.h"
#include "support/runner.h"
#include "support/tempdir.h"
#include "support/test_support.h"

#define BINARY TS_BINARY_DIR "/toolstream"

static char dir[64], data[128];

static result toolstream(const char *const *args) {
  const char *argv[16] = {"toolstream"};
  int n = 1;
  for (; args[n - 1]; n++) argv[n] = args[n - 1];
  argv[n] = NULL;
  return run_bin(BINARY, argv, NULL, 0);
}

static void make_tree(void) {
  ts_store *s;
  char why[256];
  ck_assert_int_eq(ts_store_open(data, &s, why, sizeof why), 0);
  ck_assert_int_eq(ts_store_thread_create_child(s, "coord", NULL, "/w/coord", NULL), 0);
  ts_store_subagent_new a = {.thread = "coord/t1c0", .parent = "coord",
                             .workspace = "/w/coord/threads/t1c0", .agent = "researcher",
                             .relationship = "research", .name = "alpha", .blocking = 1,
                             .turn = 1, .idx = 0, .message = "look", .message_len = 4};
  ck_assert_int_eq(ts_store_subagent_create(s, &a, NULL), 0);
  ts_store_subagent_new b = a;
  b.thread = "coord/t2c0", b.name = "beta", b.agent = "writer", b.relationship = "write";
  b.blocking = 0, b.turn = 2;
  ck_assert_int_eq(ts_store_subagent_create(s, &b, NULL), 0);
  ts_store_subagent_new g = a;
  g.thread = "coord/t1c0/t1c0", g.parent = "coord/t1c0", g.name = "gamma";
  ck_assert_int_eq(ts_store_subagent_create(s, &g, NULL), 0);
  ck_assert_int_eq(ts_store_thread_create(s, "other", NULL), 0);
  ck_assert_int_eq(ts_store_inbox_deliver(s, "coord/t1c0", NULL, NULL), 1);
  ck_assert_int_eq(ts_store_thread_set_state(s, "coord/t1c0", "done"), 0);
  const char *oa = "{\"status\":\"done\",\"text\":\"found\"}";
  const char *ob = "{\"status\":\"done\",\"text\":\"written\"}";
  ck_assert_int_eq(ts_store_subagent_report(s, "coord/t1c0", oa, strlen(oa), 0, NULL), 0);
  ck_assert_int_eq(ts_store_subagent_report(s, "coord/t2c0", ob, strlen(ob), 1, NULL), 0);
  ts_store_close(s);
}

START_TEST(test_tree) {
  ts_test_tempdir(dir, sizeof dir, "threads-tree");
  snprintf(data, sizeof data, "%s/data", dir);
  make_tree();
  const char *ls[] = {"threads", "--data-dir", data, NULL};
  result r = toolstream(ls);
  ck_assert_msg(r.status == 0, "%s", sb_str(&r.err));
  const char *out = sb_str(&r.out);
  const char *pc = strstr(out, "\ncoord "), *pa = strstr(out, "\n  coord/t1c0 (alpha) "),
             *pg = strstr(out, "\n    coord/t1c0/t1c0 (gamma) "),
             *pb = strstr(out, "\n  coord/t2c0 (beta) "), *po = strstr(out, "\nother ");
  ck_assert_msg(pc && pa && pg && pb && po && pc < pa && pa < pg && pg < pb && pb < po, "%s", out);
  ck_assert_ptr_nonnull(strstr(pa, " coord "));
  ck_assert_ptr_nonnull(strstr(pa, "done"));
  result_free(&r);

  const char *lj[] = {"threads", "--json", "--data-dir", data, NULL};
  r = toolstream(lj);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "{\"id\":\"coord/t2c0\",\"parent\":\"coord\","
                                               "\"workspace\":\"/w/coord/threads/t1c0\","
                                               "\"state\":\"idle\",\"tags\":[\"name:beta\"]"));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"state\":\"idle\",\"tags\":[],"));
  result_free(&r);

  /* show the coordinator: the outcome queued to it, the whole subtree */
  const char *show[] = {"threads", "show", "coord", "--data-dir", data, NULL};
  r = toolstream(show);
  out = sb_str(&r.out);
  ck_assert_msg(r.status == 0, "%s", sb_str(&r.err));
  ck_assert_msg(strstr(out, "queued messages (delivered between turns):\n     1 ") &&
                    strstr(out, " from coord/t2c0: {\"status\":\"done\",\"text\":\"written\"}"),
                "%s", out);
  ck_assert_msg(strstr(out, "children:\n  coord/t1c0 (alpha)  0 turns, 0 calls, done\n"
                            "    coord/t1c0/t1c0 (gamma)  0 turns, 0 calls, idle\n"
                            "  coord/t2c0 (beta)  0 turns, 0 calls, idle\n"),
                "%s", out);
  result_free(&r);
  /* show a subagent: what it is, its outcome */
  const char *showa[] = {"threads", "show", "coord/t1c0", "--data-dir", data, NULL};
  r = toolstream(showa);
  out = sb_str(&r.out);
  ck_assert_msg(strstr(out, "  tags: [\"name:alpha\"]\n") &&
                    strstr(out, "  subagent: alpha of agent researcher (relationship research, "
                                "blocking), created by call 1/0 of coord, 1 outcome reported\n") &&
                    strstr(out, "user      look"),
                "%s", out);
  result_free(&r);
  const char *showj[] = {"threads", "show", "coord/t1c0", "--json", "--data-dir", data, NULL};
  r = toolstream(showj);
  ck_assert_msg(strstr(sb_str(&r.out), "\"subagent\":{\"agent\":\"researcher\",\"relationship\":"
                                       "\"research\",\"name\":\"alpha\",\"blocking\":true,"
                                       "\"created_by_turn\":1,\"created_by_index\":0,\"reports\":1,"
                                       "\"outcome\":{\"status\":\"done\",\"text\":\"found\"}}"),
                "%s", sb_str(&r.out));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"inbox\":[]"));
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"children\":[{\"id\":\"coord/t1c0/t1c0\""));
  /* depths as the listing gives them: the shown thread's in its tree, its children's below */
  ck_assert_msg(strstr(sb_str(&r.out), "\"children\":1,\"depth\":1},\"subagent\"") &&
                    strstr(sb_str(&r.out), "\"children\":0,\"depth\":2}]"),
                "%s", sb_str(&r.out));
  result_free(&r);
  const char *showc[] = {"threads", "show", "coord", "--json", "--data-dir", data, NULL};
  r = toolstream(showc);
  ck_assert_ptr_nonnull(strstr(sb_str(&r.out), "\"inbox\":[{\"seq\":1,\"from\":\"coord/t2c0\","));
  ck_assert_ptr_null(strstr(sb_str(&r.out), "\"subagent\":")); /* a root is none */
  ck_assert_msg(strstr(sb_str(&r.out), "\"depth\":0},\"messages\"") &&
                    strstr(sb_str(&r.out), "\"id\":\"coord/t2c0\"") &&
                    !strstr(strstr(sb_str(&r.out), "\"children\":["), "\"depth\":0"),
                "%s", sb_str(&r.out));
  result_free(&r);
  ts_test_rm_rf(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("threads_tree_cli");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_tree);
  suite_add_tcase(s, tc);
  return ts_test_run(s, 0);
}
