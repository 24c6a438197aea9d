/*
** test_multiagent.c -- debate (debate.c) and discussion (discuss.c) plans at scale: each
** judgment's or discussion's calls depend only on each other, so the executor runs the plan in
** slices of whole judgments or discussions (arb__exec_params.group) and holds one slice's nodes
** at a time instead of the whole plan's (about 220 bytes a call: 660 MB for a debate of
** 1,000,000 judgments). Over real HTTP against the in-process simulator, with slices far
** smaller than the plan: every judgment and discussion is stored complete, every later turn
** was sent after the turns it shows, and a rerun sends nothing. The protocols' own behaviour is
** tested end to end in e2e_multiagent.sh. Run one test alone with ARB_TEST=<name>.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testutil.h"

#define N_ITEMS 5

typedef struct fixture {
    char dir[64];
    char db[128];
    arb_store *store;
    arb_dataset *ds;
    arb_sim_server *srv;
    arb_sim_judge judges[3];
    char url[64];
    arb_judge_config agents[3];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_int_equal(arb_test_make_dir("multiagent", f->dir, sizeof f->dir), 0);
    snprintf(f->db, sizeof f->db, "%s/m.db", f->dir);
    f->ds = arb_dataset_create();
    char items[1024] = "", answers[2048] = "";
    for (int i = 0; i < N_ITEMS; i++) {
        char line[256];
        snprintf(line, sizeof line, "{\"id\":\"q%d\",\"question\":\"Question %d?\"}\n", i, i);
        strcat(items, line);
        snprintf(line, sizeof line,
                 "{\"item\":\"q%d\",\"model\":\"cand\",\"answer\":\"answer %d of cand\"}\n"
                 "{\"item\":\"q%d\",\"model\":\"base\",\"answer\":\"answer %d of base\"}\n",
                 i, i, i, i);
        strcat(answers, line);
    }
    assert_int_equal(arb_dataset_add_items_jsonl(f->ds, "items.jsonl", items, strlen(items)),
                     ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(f->ds, "answers.jsonl", answers,
                                                   strlen(answers)), ARB_OK);
    const char *specs[] = {"sim-a:skill=2,latency=0", "sim-b:skill=2,latency=0,conformity=0.5",
                           "sim-c:skill=2,latency=0"};
    for (int i = 0; i < 3; i++)
        assert_int_equal(arb_sim_judge_parse(specs[i], &f->judges[i], NULL), ARB_OK);
    arb_sim_params sp = arb_sim_default_params();
    sp.seed = 5;
    sp.judges = f->judges;
    sp.n_judges = 3;
    assert_int_equal(arb_sim_server_start(&sp, &f->srv, NULL), ARB_OK);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d/v1", arb_sim_server_port(f->srv));
    static const char *const names[3] = {"a", "b", "c"}, *const models[3] = {"sim-a", "sim-b",
                                                                            "sim-c"};
    for (int i = 0; i < 3; i++)
        f->agents[i] = (arb_judge_config){.name = names[i], .base_url = f->url,
                                          .model = models[i], .sampling = arb_sampling_default()};
    assert_int_equal(arb_store_open(f->db, &f->store), ARB_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    arb__exec_plan_slice = 0;
    arb_store_close(f->store);
    arb_sim_server_stop(f->srv);
    arb_dataset_destroy(f->ds);
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

static long long q(fixture *f, const char *sql) { return arb_test_query_int(f->store, sql); }

/* Every turn from first_dependent on was stored after the turns before it (call ids grow in
** the order the writer stored them), so none was built before its dependencies were stored. */
static long long turns_out_of_order(fixture *f, int first_dependent)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM dialogue_turns t JOIN dialogue_turns e ON e.dialogue_id ="
             " t.dialogue_id AND e.turn < t.turn AND e.call_id >= t.call_id WHERE t.turn >= %d",
             first_dependent);
    return q(f, sql);
}

/* 5 items x 2 orders = 10 judgments of 3 calls: 30 nodes in slices of 7 asked, 6 given (two
** whole judgments). */
static void debate_in_slices(void **state)
{
    fixture *f = *state;
    arb_debate_params p = arb_debate_default_params();
    p.candidate = "cand";
    p.baseline = "base";
    for (int i = 0; i < 3; i++) p.agents[i] = f->agents[i];
    p.progress = 0;
    p.client.jobs = 8;
    arb__exec_plan_slice = 7;
    arb__exec_largest_slice = 0;
    arb_run_stats st;
    if (arb_debate_run(f->store, f->ds, &p, &st) != ARB_OK)
        fail_msg("debate: %s", arb_store_errmsg(f->store));
    assert_int_equal(arb__exec_largest_slice, 6);
    assert_int_equal(st.planned, 30);
    assert_int_equal(st.sent, 30);
    assert_int_equal(st.skipped, 0);
    assert_int_equal(arb_sim_server_requests(f->srv), 30);
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise WHERE protocol = 'soft'"), 10);
    assert_int_equal(q(f, "SELECT count(*) FROM dialogues WHERE status = 'done'"), 10);
    assert_int_equal(q(f, "SELECT count(*) FROM dialogue_turns"), 30);
    assert_int_equal(turns_out_of_order(f, 1), 0);
    /* the rerun sends nothing and holds one slice too */
    arb__exec_largest_slice = 0;
    if (arb_debate_run(f->store, f->ds, &p, &st) != ARB_OK)
        fail_msg("debate rerun: %s", arb_store_errmsg(f->store));
    assert_int_equal(arb__exec_largest_slice, 6);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.cached, 30);
    assert_int_equal(arb_sim_server_requests(f->srv), 30);
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise WHERE protocol = 'soft'"), 10);
}

/* 5 items x 2 orders = 10 discussions of 2 initial reviews + 2 turns: 40 nodes in slices of 10
** asked, 8 given (two whole discussions). */
static void discussion_in_slices(void **state)
{
    fixture *f = *state;
    static const arb_model_pair pair = {"cand", "base"};
    arb_discuss_params p = arb_discuss_default_params();
    p.reviewers[0] = f->agents[0];
    p.reviewers[1] = f->agents[1];
    p.pairs = &pair;
    p.n_pairs = 1;
    p.max_turns = 2;
    p.progress = 0;
    p.client.jobs = 8;
    arb__exec_plan_slice = 10;
    arb__exec_largest_slice = 0;
    arb_run_stats st;
    if (arb_discuss_run(f->store, f->ds, &p, &st) != ARB_OK)
        fail_msg("discuss: %s", arb_store_errmsg(f->store));
    assert_int_equal(arb__exec_largest_slice, 8);
    assert_int_equal(st.planned, 40);
    assert_int_equal(st.sent, 40);
    assert_int_equal(arb_sim_server_requests(f->srv), 40);
    assert_int_equal(q(f, "SELECT count(*) FROM dialogues WHERE status = 'done' AND"
                          " kind = 'discussion'"), 10);
    assert_int_equal(q(f, "SELECT count(*) FROM dialogue_turns"), 40);
    assert_int_equal(turns_out_of_order(f, 2), 0); /* the initial reviews depend on nothing */
    arb__exec_largest_slice = 0;
    if (arb_discuss_run(f->store, f->ds, &p, &st) != ARB_OK)
        fail_msg("discuss rerun: %s", arb_store_errmsg(f->store));
    assert_int_equal(arb__exec_largest_slice, 8);
    assert_int_equal(st.sent, 0);
    assert_int_equal(arb_sim_server_requests(f->srv), 40);
    assert_int_equal(q(f, "SELECT count(*) FROM dialogue_turns"), 40);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(debate_in_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(discussion_in_slices, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
