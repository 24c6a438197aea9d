/*
** test_multiagent.c -- debate (debate.c) and discussion (discuss.c) plans at scale: each
** judgment's or discussion's calls depend only on each other, so the executor runs the plan in
** slices of whole judgments or discussions (arb__exec_params.group) and holds one slice's nodes
** at a time instead of the whole plan's (about 220 bytes a call: 660 MB for a debate of
** 1,000,000 judgments). Over real HTTP against the in-process simulator, with slices far
** smaller than the plan: every judgment and discussion is stored complete, every later turn
** was sent after the turns it shows, and a rerun sends nothing. From an indexed dataset
** (arb_dataset_load_indexed, texts read again per slice) both store the rows a whole dataset
** gives, and refuse bad input with the same messages. The protocols' own behaviour is
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

static uint64_t whole_limit_default; /* arb__dataset_whole_limit as built; tests lower it */

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
    arb__dataset_whole_limit = whole_limit_default;
    arb__plan_quick_rerun = 1;
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
    /* the rerun that checks every call sends nothing and holds one slice too */
    arb__plan_quick_rerun = 0;
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
    arb__plan_quick_rerun = 0;
    arb__exec_largest_slice = 0;
    if (arb_discuss_run(f->store, f->ds, &p, &st) != ARB_OK)
        fail_msg("discuss rerun: %s", arb_store_errmsg(f->store));
    assert_int_equal(arb__exec_largest_slice, 8);
    assert_int_equal(st.sent, 0);
    assert_int_equal(arb_sim_server_requests(f->srv), 40);
    assert_int_equal(q(f, "SELECT count(*) FROM dialogue_turns"), 40);
}

/* ---- indexed datasets (arb_dataset_load_indexed): texts read again slice by slice ---------- */

/* Six items (a blank line between the first two, so lines and records differ) answered by
** three models, the answers in another order than the items. */
static const char index_items[] =
    "{\"id\":\"q0\",\"question\":\"Which is larger, 3 or 5?\",\"reference\":\"5\"}\n"
    "\n"
    "{\"id\":\"q1\",\"question\":\"Capital of France?\",\"reference\":\"Paris\"}\n"
    "{\"id\":\"q2\",\"question\":\"2 + 2?\",\"reference\":\"4\"}\n"
    "{\"id\":\"q3\",\"question\":\"Colour of the sky?\",\"reference\":\"blue\"}\n"
    "{\"id\":\"q4\",\"question\":\"Boiling point of water in C?\",\"reference\":\"100\"}\n"
    "{\"id\":\"q5\",\"question\":\"Author of Hamlet?\",\"reference\":\"Shakespeare\"}\n";
static const char index_answers[] =
    "{\"item\":\"q3\",\"model\":\"base\",\"answer\":\"Green.\"}\n"
    "{\"item\":\"q0\",\"model\":\"cand\",\"answer\":\"5 is larger.\"}\n"
    "{\"item\":\"q0\",\"model\":\"base\",\"answer\":\"3 is larger.\"}\n"
    "{\"item\":\"q0\",\"model\":\"third\",\"answer\":\"They are equal.\"}\n"
    "{\"item\":\"q1\",\"model\":\"third\",\"answer\":\"Lyon.\"}\n"
    "{\"item\":\"q1\",\"model\":\"cand\",\"answer\":\"Paris.\"}\n"
    "{\"item\":\"q1\",\"model\":\"base\",\"answer\":\"Paris, on the Seine.\"}\n"
    "{\"item\":\"q2\",\"model\":\"base\",\"answer\":\"4\"}\n"
    "{\"item\":\"q2\",\"model\":\"cand\",\"answer\":\"Four.\"}\n"
    "{\"item\":\"q2\",\"model\":\"third\",\"answer\":\"22\"}\n"
    "{\"item\":\"q3\",\"model\":\"cand\",\"answer\":\"Blue, by Rayleigh scattering.\"}\n"
    "{\"item\":\"q3\",\"model\":\"third\",\"answer\":\"Blue.\"}\n"
    "{\"item\":\"q5\",\"model\":\"third\",\"answer\":\"Marlowe.\"}\n"
    "{\"item\":\"q4\",\"model\":\"cand\",\"answer\":\"100 degrees.\"}\n"
    "{\"item\":\"q4\",\"model\":\"base\",\"answer\":\"90 degrees.\"}\n"
    "{\"item\":\"q4\",\"model\":\"third\",\"answer\":\"100.\"}\n"
    "{\"item\":\"q5\",\"model\":\"base\",\"answer\":\"Shakespeare.\"}\n"
    "{\"item\":\"q5\",\"model\":\"cand\",\"answer\":\"William Shakespeare.\"}\n";

typedef arb_status (*run_fn)(arb_store *s, const arb_dataset *ds, const void *params,
                             arb_run_stats *stats);
static arb_status run_debate(arb_store *s, const arb_dataset *ds, const void *params,
                             arb_run_stats *stats)
{
    return arb_debate_run(s, ds, params, stats);
}
static arb_status run_discuss(arb_store *s, const arb_dataset *ds, const void *params,
                              arb_run_stats *stats)
{
    return arb_discuss_run(s, ds, params, stats);
}

/* The final verdicts and the dialogues' turns, each with its call (the key is the hash of the
** request sent). */
#define VERDICT_ROWS(db)                                                                         \
    "SELECT p.protocol, p.judge_name, p.item_id, p.candidate, p.baseline, p.template_name,"    \
    " p.options, p.ord, p.rep, p.position_verdict, p.model_verdict, c.key, c.content, c.ok"    \
    " FROM " db "pairwise p JOIN " db "calls c ON c.id = p.call_id"
#define DIALOGUE_ROWS(db)                                                                        \
    "SELECT key, kind, item_id, answer1, answer2, participants, config, rep, final_verdict,"   \
    " status FROM " db "dialogues"
#define TURN_ROWS(db)                                                                            \
    "SELECT d.key, t.turn, t.speaker, t.role, t.verdict, c.key, c.content, c.ok"               \
    " FROM " db "dialogue_turns t JOIN " db "dialogues d ON d.id = t.dialogue_id"              \
    " JOIN " db "calls c ON c.id = t.call_id"

/* Runs params on whole (in one slice) and on indexed (slices of at most slice nodes), each
** into a new store of its own (<name>-whole.db, <name>-indexed.db); expects planned calls,
** the same stored items, answers, verdicts, dialogues and turns with their calls, and turns
** turns in the indexed store (unless turns is -1). */
static void expect_same_runs(fixture *f, run_fn run, const void *params, arb_dataset *whole,
                             arb_dataset *indexed, const char *name, size_t planned,
                             size_t slice, long long turns)
{
    char db[2][256], file[64];
    arb_store *s[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        snprintf(file, sizeof file, "%s-%s.db", name, k ? "indexed" : "whole");
        assert_non_null(arb_test_scratch(f->dir, file, NULL, db[k], sizeof db[k]));
        assert_int_equal(arb_store_open(db[k], &s[k]), ARB_OK);
        arb__exec_plan_slice = k ? slice : 0;
        arb__exec_largest_slice = 0;
        arb_run_stats st;
        if (run(s[k], k ? indexed : whole, params, &st) != ARB_OK)
            fail_msg("%s %s: %s", name, k ? "indexed" : "whole", arb_store_errmsg(s[k]));
        assert_int_equal(st.planned, planned);
        assert_int_equal(st.sent + st.skipped, planned);
        assert_int_equal(st.failed, 0);
        if (k) assert_true(arb__exec_largest_slice <= slice); /* one slice's texts at a time */
    }
    arb__exec_plan_slice = 0;
    arb_store_close(s[1]);
    assert_int_equal(arb_test_exec_sql(s[0], "ATTACH %Q AS b", db[1]), 0);
    assert_int_equal(arb_test_rows_differ(s[0], "SELECT * FROM main.items",
                                          "SELECT * FROM b.items"), 0);
    assert_int_equal(arb_test_rows_differ(s[0], "SELECT * FROM main.answers",
                                          "SELECT * FROM b.answers"), 0);
    assert_int_equal(arb_test_rows_differ(s[0], VERDICT_ROWS("main."), VERDICT_ROWS("b.")), 0);
    assert_int_equal(arb_test_rows_differ(s[0], DIALOGUE_ROWS("main."), DIALOGUE_ROWS("b.")), 0);
    assert_int_equal(arb_test_rows_differ(s[0], TURN_ROWS("main."), TURN_ROWS("b.")), 0);
    if (turns >= 0)
        assert_int_equal(arb_test_query_int(s[0], "SELECT count(*) FROM b.dialogue_turns"),
                         turns);
    assert_int_equal(arb_test_query_int(s[0], "SELECT count(*) FROM b.items"), 6);
    assert_int_equal(arb_test_exec_sql(s[0], "DETACH b"), 0);
    arb_store_close(s[0]);
}

/* ---- quick reruns (README "Resume and caching") ------------------------------------------- */

/* Every write to the tables a rerun could touch is counted in table writes (triggers). */
static void count_writes(fixture *f)
{
    static const char *const tables[] = {"dialogues", "dialogue_turns", "pairwise_judgments",
                                         "pairwise_setups", "calls", "items", "answers"};
    static const char *const events[] = {"INSERT", "UPDATE", "DELETE"};
    assert_int_equal(arb_test_exec_sql(f->store, "CREATE TABLE IF NOT EXISTS writes(t TEXT)"), 0);
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (size_t e = 0; e < 3; e++)
            assert_int_equal(arb_test_exec_sql(f->store,
                                               "CREATE TRIGGER IF NOT EXISTS w_%s_%s AFTER %s ON %s"
                                               " BEGIN INSERT INTO writes VALUES ('%s'); END",
                                               tables[t], events[e], events[e], tables[t],
                                               tables[t]),
                             0);
    assert_int_equal(arb_test_exec_sql(f->store, "DELETE FROM writes"), 0);
}

/* A copy of what the audit and the transcripts read, to compare after a rerun: every column
** but when a verdict was written (a rerun that checks every call writes it again). */
#define PAIRWISE_COLUMNS                                                                          \
    "SELECT protocol, judge_name, item_id, candidate, baseline, template_name, options, ord,"   \
    " rep, position_verdict, model_verdict, call_id, source, strength, extra FROM pairwise"
static void snapshot(fixture *f)
{
    assert_int_equal(arb_test_exec_sql(f->store,
                                       "DROP TABLE IF EXISTS snap_pw; DROP TABLE IF EXISTS snap_d;"
                                       " DROP TABLE IF EXISTS snap_t;"
                                       " CREATE TABLE snap_pw AS " PAIRWISE_COLUMNS ";"
                                       " CREATE TABLE snap_d AS SELECT * FROM dialogues;"
                                       " CREATE TABLE snap_t AS SELECT * FROM dialogue_turns"),
                     0);
}

static long long differs_from_snapshot(fixture *f)
{
    return arb_test_rows_differ(f->store, PAIRWISE_COLUMNS, "SELECT * FROM snap_pw") +
           arb_test_rows_differ(f->store, "SELECT * FROM dialogues", "SELECT * FROM snap_d") +
           arb_test_rows_differ(f->store, "SELECT * FROM dialogue_turns",
                                "SELECT * FROM snap_t");
}

/* The last judgment's final verdict as a kill before its commit leaves it: the judge's call,
** its turn and the pairwise row never written, the dialogue open. */
static void drop_last_verdict(fixture *f)
{
    assert_int_equal(arb_test_exec_sql(
                         f->store,
                         "CREATE TEMP TABLE gone AS SELECT dialogue_id AS d, call_id AS c FROM"
                         " dialogue_turns WHERE turn = 2 ORDER BY call_id DESC LIMIT 1;"
                         " DELETE FROM pairwise_judgments WHERE call_id = (SELECT c FROM gone);"
                         " DELETE FROM dialogue_turns WHERE call_id = (SELECT c FROM gone);"
                         " DELETE FROM calls WHERE id = (SELECT c FROM gone);"
                         " UPDATE dialogues SET status = 'open', final_verdict = NULL"
                         " WHERE id = (SELECT d FROM gone); DROP TABLE gone"),
                     0);
}

static arb_debate_params debate_params(fixture *f)
{
    arb_debate_params p = arb_debate_default_params();
    p.candidate = "cand";
    p.baseline = "base";
    for (int i = 0; i < 3; i++) p.agents[i] = f->agents[i];
    p.progress = 0;
    p.client.jobs = 8;
    return p;
}

/* A debate judged from an index, read again slice by slice (two repetitions: 12 calls an item,
** slices of 9, so an item's judgments fall in two slices at times), stores the same rows as
** from the whole dataset; a rerun from the index on the whole run's store sends nothing; a
** file changed under the index stops the run before any request. */
static void debate_indexed_in_slices(void **state)
{
    fixture *f = *state;
    char items[256], answers[256];
    arb_dataset *whole, *indexed;
    assert_int_equal(arb_test_load_both(f->dir, "", index_items, index_answers, items, answers,
                                        sizeof items, &whole, &indexed),
                     0);
    arb_debate_params p = debate_params(f);
    p.reps = 2;
    expect_same_runs(f, run_debate, &p, whole, indexed, "debate", 6 * 2 * 2 * 3, 10,
                     6 * 2 * 2 * 3);
    p.reps = 1;
    p.mode = ARB_DEBATE_HARD;
    expect_same_runs(f, run_debate, &p, whole, indexed, "hard", 6 * 2 * 3, 4, 6 * 2 * 3);

    arb_run_stats st;
    assert_int_equal(arb_debate_run(f->store, whole, &p, &st), ARB_OK);
    unsigned long sent = arb_sim_server_requests(f->srv);
    arb__exec_plan_slice = 7;
    assert_int_equal(arb_debate_run(f->store, indexed, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.cached, 36);
    assert_int_equal(arb_sim_server_requests(f->srv), sent);

    static const char changed[] = "{\"id\":\"other\",\"question\":\"Q\"}\n";
    assert_non_null(arb_test_scratch(f->dir, "items.jsonl", changed, items, sizeof items));
    p.reps = 3;
    assert_int_equal(arb_debate_run(f->store, indexed, &p, &st), ARB_IO);
    assert_non_null(strstr(arb_store_errmsg(f->store), "items.jsonl"));
    assert_int_equal(arb_sim_server_requests(f->srv), sent);
    arb__exec_plan_slice = 0;
    arb_dataset_destroy(whole);
    arb_dataset_destroy(indexed);
}

/* Discussions of two pairs, both orders, a random leader (drawn from the item's id) and an
** early stop, judged from an index in slices of 12 nodes (an item has 16), store the same rows
** as from the whole dataset. */
static void discussion_indexed_in_slices(void **state)
{
    fixture *f = *state;
    char items[256], answers[256];
    arb_dataset *whole, *indexed;
    assert_int_equal(arb_test_load_both(f->dir, "", index_items, index_answers, items, answers,
                                        sizeof items, &whole, &indexed),
                     0);
    static const arb_model_pair pairs[2] = {{"cand", "base"}, {"third", "cand"}};
    arb_discuss_params p = arb_discuss_default_params();
    p.reviewers[0] = f->agents[0];
    p.reviewers[1] = f->agents[1];
    p.pairs = pairs;
    p.n_pairs = 2;
    p.max_turns = 2;
    p.leader = ARB_LEADER_RANDOM;
    p.progress = 0;
    p.client.jobs = 8;
    expect_same_runs(f, run_discuss, &p, whole, indexed, "discuss", 6 * 2 * 2 * 4, 13,
                     6 * 2 * 2 * 4);
    p.stop_on_agreement = 1;
    p.both_orders = 0;
    p.max_turns = 3;
    expect_same_runs(f, run_discuss, &p, whole, indexed, "early", 6 * 2 * 5, 10, -1);
    arb_dataset_destroy(whole);
    arb_dataset_destroy(indexed);
}


/* Bad input judged from an index is refused as from a whole dataset, by debate and by discuss,
** with the same message (the item's file:line, counting blank lines) and nothing sent or
** recorded. */
static void indexed_dataset_errors_match(void **state)
{
    fixture *f = *state;
    /* a debate judge and a discussion's initial review that show the item's reference */
    static const char judge_tpl[] = "=== user ===\n{question}\n[ANSWER 1 START]\n{answer1}\n"
                                    "[ANSWER 1 END]\n[ANSWER 2 START]\n{answer2}\n[ANSWER 2 END]\n"
                                    "{agent1}\n{agent2}\nReference: {reference}\n{option_list}\n";
    static const char initial_tpl[] = "=== user ===\n{question}\n[ANSWER 1 START]\n{answer1}\n"
                                      "[ANSWER 1 END]\n[ANSWER 2 START]\n{answer2}\n"
                                      "[ANSWER 2 END]\nReference: {reference}\n";
    char judge_path[256], initial_path[256];
    assert_non_null(arb_test_scratch(f->dir, "tpl/judge.txt", judge_tpl, judge_path, 256));
    assert_non_null(arb_test_scratch(f->dir, "tpl/initial.txt", initial_tpl, initial_path, 256));
    static const char xy_answers[] = "{\"item\":\"x\",\"model\":\"cand\",\"answer\":\"A\"}\n"
                                     "{\"item\":\"y\",\"model\":\"base\",\"answer\":\"B\"}\n"
                                     "{\"item\":\"y\",\"model\":\"cand\",\"answer\":\"A\"}\n"
                                     "{\"item\":\"x\",\"model\":\"base\",\"answer\":\"B\"}\n";
    static const struct {
        const char *items, *answers, *expected; /* expected: the message after the directory */
        int reference;                          /* the templates that show the reference */
    } cases[] = {
        {"{\"id\":\"x\",\"question\":\"Q\"}\n\n{\"id\":\"y\",\"reference\":\"R\"}\n", xy_answers,
         "items.jsonl:3: missing field \"question\"", 0},
        {"{\"id\":\"x\",\"question\":\"Q\"}\n{\"id\":\"w\",\"question\":\"Q\"}\n"
         "{\"id\":\"y\",\"question\":\"Q\"}\n",
         "{\"item\":\"w\",\"model\":\"cand\",\"answer\":\"A\"}\n"
         "{\"item\":\"x\",\"model\":\"cand\",\"answer\":\"A\"}\n"
         "{\"item\":\"x\",\"model\":\"base\",\"answer\":\"B\"}\n"
         "{\"item\":\"y\",\"model\":\"cand\",\"answer\":\"A\"}\n"
         "{\"item\":\"y\",\"model\":\"base\",\"answer\":\"B\"}\n",
         "items.jsonl:2: model \"base\" has no answer to item \"w\"", 0},
        {"{\"id\":\"x\",\"question\":\"Q\"}\n{\"id\":\"y\",\"question\":\"Q\"}\n",
         "{\"item\":\"x\",\"model\":\"cand\",\"answer\":\"A\"}\n",
         "no answers from model \"base\" in the answers file", 0},
        {"{\"id\":\"x\",\"question\":\"Q\",\"reference\":\"R\"}\n{\"id\":\"y\",\"question\":\"Q\"}\n",
         xy_answers, "items.jsonl:2: item \"y\" has no \"reference\", which template ", 1},
        {"{\"id\":\"x\",\"question\":\"Q\",\"reference\":\"R\"}\n"
         "{\"id\":\"y\",\"question\":\"Q\",\"reference\":\"\"}\n",
         xy_answers, "items.jsonl:2: item \"y\" has no \"reference\", which template ", 1},
    };
    static const arb_model_pair pair = {"cand", "base"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char items[256], answers[256];
        arb_dataset *whole, *indexed;
        assert_int_equal(arb_test_load_both(f->dir, "bad/", cases[i].items, cases[i].answers, items, answers,
                                            sizeof items, &whole, &indexed),
                         0);
        arb_debate_params dp = debate_params(f);
        if (cases[i].reference) dp.judge_template = judge_path;
        arb_discuss_params cp = arb_discuss_default_params();
        cp.reviewers[0] = f->agents[0];
        cp.reviewers[1] = f->agents[1];
        cp.pairs = &pair;
        cp.n_pairs = 1;
        cp.progress = 0;
        if (cases[i].reference) cp.initial_template = initial_path;
        for (int protocol = 0; protocol < 2; protocol++) {
            run_fn run = protocol ? run_discuss : run_debate;
            const void *params = protocol ? (const void *)&cp : (const void *)&dp;
            arb_run_stats st;
            assert_int_equal(run(f->store, whole, params, &st), ARB_PARSE);
            char *expected = arb__strdup(arb_store_errmsg(f->store));
            assert_int_equal(run(f->store, indexed, params, &st), ARB_PARSE);
            assert_string_equal(arb_store_errmsg(f->store), expected);
            if (!strstr(expected, cases[i].expected))
                fail_msg("case %zu: \"%s\" lacks \"%s\"", i, expected, cases[i].expected);
            free(expected);
        }
        arb_dataset_destroy(whole);
        arb_dataset_destroy(indexed);
    }
    assert_int_equal(arb_sim_server_requests(f->srv), 0);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM runs"), 0);
}

/* The fixture's dataset with answer 2 of cand edited. */
static arb_dataset *edited_dataset(void)
{
    arb_dataset *ds = arb_dataset_create();
    char items[1024] = "", answers[2048] = "";
    for (int i = 0; i < N_ITEMS; i++) {
        char line[256];
        snprintf(line, sizeof line, "{\"id\":\"q%d\",\"question\":\"Question %d?\"}\n", i, i);
        strcat(items, line);
        snprintf(line, sizeof line,
                 "{\"item\":\"q%d\",\"model\":\"cand\",\"answer\":\"answer %d of cand%s\"}\n"
                 "{\"item\":\"q%d\",\"model\":\"base\",\"answer\":\"answer %d of base\"}\n",
                 i, i, i == 2 ? " (edited)" : "", i, i);
        strcat(answers, line);
    }
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "items.jsonl", items, strlen(items)), ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "answers.jsonl", answers, strlen(answers)),
                     ARB_OK);
    return ds;
}

/* The store writes a dialogue only where it changes: found again as it is, it stays finished;
** a changed turn opens it again until its end is stored (what a kill then leaves); a failed
** one is open again as soon as a run takes it up. */
static void dialogue_written_only_when_changed(void **state)
{
    fixture *f = *state;
    assert_int_equal(arb__store_put_dataset(f->store, f->ds), ARB_OK);
    arb__dialogue_ref ref = {.kind = "soft", .item_id = "q1", .answer1 = "cand",
                             .answer2 = "base", .participants_json = "[\"a\",\"b\",\"c\"]",
                             .config_json = "{}", .rep = 0};
    long long id = 0, again = 0;
    assert_int_equal(arb__store_put_dialogue(f->store, &ref, &id), ARB_OK);
    assert_int_equal(arb__store_put_turn(f->store, id, 0, "a", "agent1", 0, "A"), ARB_OK);
    assert_int_equal(arb__store_end_dialogue(f->store, id, "A", "done", 0), ARB_OK);
    count_writes(f);
    assert_int_equal(arb__store_put_dialogue(f->store, &ref, &again), ARB_OK);
    assert_int_equal(again, id);
    assert_int_equal(arb__store_put_turn(f->store, id, 0, "a", "agent1", 0, "A"), ARB_OK);
    assert_int_equal(arb__store_end_dialogue(f->store, id, "A", "done", 0), ARB_OK);
    assert_int_equal(q(f, "SELECT count(*) FROM writes"), 0);
    assert_int_equal(q(f, "SELECT count(*) FROM dialogues WHERE status = 'done'"), 1);
    /* a changed turn: open until the end is stored again */
    assert_int_equal(arb__store_put_dialogue(f->store, &ref, &again), ARB_OK);
    assert_int_equal(arb__store_put_turn(f->store, id, 0, "a", "agent1", 0, "B"), ARB_OK);
    assert_int_equal(q(f, "SELECT count(*) FROM dialogues WHERE status = 'open' AND"
                          " final_verdict IS NULL"),
                     1);
    assert_int_equal(arb__store_end_dialogue(f->store, id, "E", "failed", 0), ARB_OK);
    /* a failed dialogue taken up again is open at once */
    assert_int_equal(arb__store_put_dialogue(f->store, &ref, &again), ARB_OK);
    assert_int_equal(again, id);
    assert_int_equal(q(f, "SELECT count(*) FROM dialogues WHERE status = 'open'"), 1);
}

/* A debate under a budget runs in one pass even where slices are asked for: slices would
** finish whole debates first, where one pass starts every judgment's first turn first, so the
** budget would stop at other calls (found in review: 7 calls against 6, of them 4 later
** turns). The same calls sent, the same message, either way. */
static void debate_budget_one_pass(void **state)
{
    fixture *f = *state;
    arb_debate_params p = debate_params(f);
    p.client.budget_tokens = 4500;
    arb_run_stats whole, sliced;
    arb__exec_plan_slice = 0;
    assert_int_equal(arb_debate_run(f->store, f->ds, &p, &whole), ARB_BUDGET);
    char msg[256];
    snprintf(msg, sizeof msg, "%s", arb_store_errmsg(f->store));
    char db[160];
    snprintf(db, sizeof db, "%s/sliced.db", f->dir);
    arb_store *other = NULL;
    assert_int_equal(arb_store_open(db, &other), ARB_OK);
    arb__exec_plan_slice = 3;
    assert_int_equal(arb_debate_run(other, f->ds, &p, &sliced), ARB_BUDGET);
    assert_int_equal(sliced.sent, whole.sent);
    assert_int_equal(sliced.not_sent, whole.not_sent);
    assert_true(whole.sent > 0 && whole.not_sent > 0);
    assert_string_equal(arb_store_errmsg(other), msg);
    arb_store_close(other);
    arb__exec_plan_slice = 0;
}

/* A rerun of a finished debate decides "nothing to send" from the plan's note: no call checked,
** no row written, the same counts and rows as the first run; anything changed (an answer, an
** option, a stored reply, a stored call gone) takes the full path. */
static void debate_quick_rerun(void **state)
{
    fixture *f = *state;
    arb_debate_params p = debate_params(f);
    arb_run_stats first, st;
    if (arb_debate_run(f->store, f->ds, &p, &first) != ARB_OK)
        fail_msg("debate: %s", arb_store_errmsg(f->store));
    assert_int_equal(first.sent, 30);
    assert_int_equal(first.unchanged_since_run, 0);
    long long run1 = q(f, "SELECT max(id) FROM runs");
    snapshot(f);
    count_writes(f);
    if (arb_debate_run(f->store, f->ds, &p, &st) != ARB_OK)
        fail_msg("debate rerun: %s", arb_store_errmsg(f->store));
    assert_int_equal(st.unchanged_since_run, run1);
    assert_int_equal(st.planned, 30);
    assert_int_equal(st.cached, 30);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.skipped, 0);
    assert_int_equal(st.invalid, first.invalid);
    assert_int_equal(arb_sim_server_requests(f->srv), 30);
    assert_int_equal(q(f, "SELECT count(*) FROM writes"), 0);
    assert_int_equal(differs_from_snapshot(f), 0);
    assert_int_equal(q(f, "SELECT count(*) FROM runs WHERE status = 'finished'"), 2);

    /* the full check on the same store gives the same counts and rows, and writes them */
    arb__plan_quick_rerun = 0;
    arb_run_stats full;
    assert_int_equal(arb_debate_run(f->store, f->ds, &p, &full), ARB_OK);
    arb__plan_quick_rerun = 1;
    assert_int_equal(full.unchanged_since_run, 0);
    assert_int_equal(full.cached, st.cached);
    assert_int_equal(full.invalid, st.invalid);
    /* ... and rewrites no dialogue or turn that stays as it is (it rewrote each dialogue row
    ** three times a judgment); the pairwise rows it writes again (their judged_at) */
    assert_int_equal(q(f, "SELECT count(*) FROM writes WHERE t IN ('dialogues',"
                          " 'dialogue_turns')"),
                     0);
    assert_true(q(f, "SELECT count(*) FROM writes WHERE t = 'pairwise_judgments'") > 0);
    assert_int_equal(differs_from_snapshot(f), 0);

    /* a reply edited in the store: full path (its verdict is read again), nothing sent */
    assert_int_equal(arb_test_exec_sql(f->store,
                                       "UPDATE calls SET content = content || ' ' WHERE id ="
                                       " (SELECT max(call_id) FROM dialogue_turns)"),
                     0);
    assert_int_equal(arb_debate_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.unchanged_since_run, 0);
    assert_int_equal(st.sent, 0);
    assert_int_equal(arb_debate_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_true(st.unchanged_since_run > 0); /* that full check noted the plan again */

    /* a stored call gone (a judge's turn): full path, exactly that call sent */
    drop_last_verdict(f);
    assert_int_equal(arb_debate_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.unchanged_since_run, 0);
    assert_int_equal(st.sent, 1);
    assert_int_equal(arb_sim_server_requests(f->srv), 31);

    /* an answer edited: full path, that item's two judgments sent again (3 calls each) */
    arb_dataset *edited = edited_dataset();
    assert_int_equal(arb_debate_run(f->store, edited, &p, &st), ARB_OK);
    assert_int_equal(st.unchanged_since_run, 0);
    assert_int_equal(st.sent, 6);
    /* the changed turns were written again, and their dialogues ended again */
    assert_int_equal(q(f, "SELECT count(*) FROM dialogues WHERE status <> 'done'"), 0);
    assert_int_equal(q(f, "SELECT count(DISTINCT d.id) FROM dialogues d JOIN dialogue_turns t"
                          " ON t.dialogue_id = d.id JOIN calls c ON c.id = t.call_id"
                          " WHERE d.item_id = 'q2' AND c.id > (SELECT max(call_id) FROM snap_t)"),
                     2);
    assert_int_equal(arb_debate_run(f->store, edited, &p, &st), ARB_OK);
    assert_true(st.unchanged_since_run > 0);
    assert_int_equal(st.sent, 0);
    arb_dataset_destroy(edited);

    /* an option changed (repetitions): full path */
    p.reps = 2;
    assert_int_equal(arb_debate_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.unchanged_since_run, 0);
    assert_int_equal(st.planned, 60);
    assert_int_equal(st.sent, 30); /* repetition 0's calls are stored */
    assert_int_equal(arb_sim_server_requests(f->srv), 31 + 6 + 30);
}

/* A run that did not finish notes nothing: after a run interrupted by a failed call the rerun
** takes the full path and sends exactly the missing calls. */
static void debate_incomplete_run_no_note(void **state)
{
    fixture *f = *state;
    arb_debate_params p = debate_params(f);
    arb_run_stats st;
    assert_int_equal(arb_debate_run(f->store, f->ds, &p, &st), ARB_OK);
    /* as a kill -9 leaves it: the last judgment's judge call and rows never written, the run
    ** still 'running' */
    drop_last_verdict(f);
    assert_int_equal(arb_test_exec_sql(f->store, "UPDATE runs SET status = 'running',"
                                                 " stats = NULL, finished_at = NULL"),
                     0);
    assert_int_equal(arb_debate_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.unchanged_since_run, 0);
    assert_int_equal(st.sent, 1);
    assert_int_equal(arb_debate_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_true(st.unchanged_since_run > 0);
}

/* Discussions that end early (stop on agreement) skip calls: the quick rerun reports the same
** skipped and cached counts as the full check. */
static void discussion_quick_rerun(void **state)
{
    fixture *f = *state;
    static const arb_model_pair pair = {"cand", "base"};
    arb_discuss_params p = arb_discuss_default_params();
    p.reviewers[0] = f->agents[0];
    p.reviewers[1] = f->agents[1];
    p.pairs = &pair;
    p.n_pairs = 1;
    p.max_turns = 4;
    p.stop_on_agreement = 1;
    p.progress = 0;
    p.client.jobs = 8;
    arb_run_stats first, st, full;
    if (arb_discuss_run(f->store, f->ds, &p, &first) != ARB_OK)
        fail_msg("discuss: %s", arb_store_errmsg(f->store));
    assert_int_equal(first.planned, 60);
    assert_true(first.skipped > 0);
    snapshot(f);
    count_writes(f);
    long long sent = arb_sim_server_requests(f->srv);
    assert_int_equal(arb_discuss_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_true(st.unchanged_since_run > 0);
    assert_int_equal(st.sent, 0);
    assert_int_equal(q(f, "SELECT count(*) FROM writes"), 0);
    assert_int_equal(differs_from_snapshot(f), 0);
    arb__plan_quick_rerun = 0;
    assert_int_equal(arb_discuss_run(f->store, f->ds, &p, &full), ARB_OK);
    arb__plan_quick_rerun = 1;
    assert_int_equal(full.unchanged_since_run, 0);
    assert_int_equal(st.planned, full.planned);
    assert_int_equal(st.cached, full.cached);
    assert_int_equal(st.skipped, full.skipped);
    assert_int_equal(st.invalid, full.invalid);
    assert_int_equal(differs_from_snapshot(f), 0);
    assert_int_equal(arb_sim_server_requests(f->srv), sent);
    /* another number of turns: full path */
    p.max_turns = 3;
    assert_int_equal(arb_discuss_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.unchanged_since_run, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(debate_in_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(discussion_in_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(debate_indexed_in_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(discussion_indexed_in_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(indexed_dataset_errors_match, setup, teardown),
        cmocka_unit_test_setup_teardown(debate_budget_one_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(debate_quick_rerun, setup, teardown),
        cmocka_unit_test_setup_teardown(dialogue_written_only_when_changed, setup, teardown),
        cmocka_unit_test_setup_teardown(debate_incomplete_run_no_note, setup, teardown),
        cmocka_unit_test_setup_teardown(discussion_quick_rerun, setup, teardown),
    };
    whole_limit_default = arb__dataset_whole_limit;
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
