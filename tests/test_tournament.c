/*
** test_tournament.c -- the tournament protocol (tournament.c, METHODS §6) over real HTTP against
** the in-process simulated judge server: the plan (items x pairs x 2 orders x reviewers x
** reps, pairs without both answers left out), checks before any request, the orientation of
** stored judgments and battles (a judge that always picks the first answer gives s = -1 on
** every battle, one that always picks the second s = +1), reruns that send nothing and keep
** one battle per judgment, verdict E giving no battle but a count per judge and pair, exclude_self, random_k (count per
** comparison, and a draw that depends only on seed, item and pair), style covariates,
** model names kept out of the prompts, and an indexed dataset (arb_dataset_load_indexed) read
** slice by slice giving the same rows and messages as a whole one.
**
** Data: items q1..q3; models MODEL-ALPHA, MODEL-BETA, MODEL-GAMMA; MODEL-GAMMA did not answer
** q3, so q1 and q2 have 3 pairs and q3 one pair: 7 (item, pair) comparisons per reviewer.
** Run one test alone with ARB_TEST=<name>.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "testutil.h"

#define N_CMP 7 /* (item, pair) comparisons with both answers */

static const char items_jsonl[] =
    "{\"id\":\"q1\",\"question\":\"What is 2+2?\",\"reference\":\"4\"}\n"
    "{\"id\":\"q2\",\"question\":\"Capital of France?\"}\n"
    "{\"id\":\"q3\",\"question\":\"Name a prime.\",\"reference\":\"7\"}\n";
static const char answers_jsonl[] =
    "{\"item\":\"q1\",\"model\":\"MODEL-ALPHA\",\"answer\":\"four\",\"quality\":0.9}\n"
    "{\"item\":\"q1\",\"model\":\"MODEL-BETA\",\"answer\":\"five\",\"quality\":0.2}\n"
    "{\"item\":\"q1\",\"model\":\"MODEL-GAMMA\",\"answer\":\"**Four**, as\\n- 2+2 = 4\\n# Done\","
    "\"quality\":0.5}\n"
    "{\"item\":\"q2\",\"model\":\"MODEL-ALPHA\",\"answer\":\"Paris\",\"quality\":0.9}\n"
    "{\"item\":\"q2\",\"model\":\"MODEL-BETA\",\"answer\":\"Lyon\",\"quality\":0.2}\n"
    "{\"item\":\"q2\",\"model\":\"MODEL-GAMMA\",\"answer\":\"Paris, France\",\"quality\":0.6}\n"
    "{\"item\":\"q3\",\"model\":\"MODEL-ALPHA\",\"answer\":\"7\",\"quality\":0.9}\n"
    "{\"item\":\"q3\",\"model\":\"MODEL-BETA\",\"answer\":\"9\",\"quality\":0.1}\n";

typedef struct fixture {
    char dir[64];
    char db[128];
    arb_store *store;
    arb_dataset *ds;
    arb_sim_server *srv;
    arb_sim_judge judges[4];
    char url[64];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_int_equal(arb_test_make_dir("tournament", f->dir, sizeof f->dir), 0);
    snprintf(f->db, sizeof f->db, "%s/t.db", f->dir);
    f->ds = arb_dataset_create();
    assert_int_equal(arb_dataset_add_items_jsonl(f->ds, "items.jsonl", items_jsonl,
                                                 strlen(items_jsonl)), ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(f->ds, "answers.jsonl", answers_jsonl,
                                                   strlen(answers_jsonl)), ARB_OK);
    /* first: always A; second: always B; fair: judges by quality; mute: never a verdict. */
    const char *specs[] = {"sim-first:skill=0,bias=100,tie=0,latency=0",
                           "sim-second:skill=0,bias=-100,tie=0,latency=0",
                           "sim-fair:skill=4,bias=0,tie=0.3,latency=0",
                           "sim-mute:invalid=1,latency=0"};
    for (int i = 0; i < 4; i++)
        assert_int_equal(arb_sim_judge_parse(specs[i], &f->judges[i], NULL), ARB_OK);
    arb_sim_params sp = arb_sim_default_params();
    sp.seed = 3;
    sp.judges = f->judges;
    sp.n_judges = 4;
    sp.answers_oracle = f->ds;
    assert_int_equal(arb_sim_server_start(&sp, &f->srv, NULL), ARB_OK);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d/v1", arb_sim_server_port(f->srv));
    assert_int_equal(arb_store_open(f->db, &f->store), ARB_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    arb_store_close(f->store);
    arb_sim_server_stop(f->srv);
    arb_dataset_destroy(f->ds);
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

/* Writes a judges file with the given judges, "name:sim-model[:contestant]" each, and loads
** it. */
static arb_judges_file *judges(fixture *f, const char *const *specs, size_t n)
{
    char path[160];
    snprintf(path, sizeof path, "%s/judges.yaml", f->dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("judges:\n", fp);
    for (size_t i = 0; i < n; i++) {
        char name[64], model[64], own[64] = "";
        assert_true(sscanf(specs[i], "%63[^:]:%63[^:]:%63s", name, model, own) >= 2);
        fprintf(fp, "  - name: %s\n    url: %s\n    model: %s\n", name, f->url, model);
        if (*own) fprintf(fp, "    contestant: %s\n", own);
    }
    fclose(fp);
    arb_judges_file *jf = NULL;
    char *msg = NULL;
    if (arb_judges_file_load(path, &jf, &msg)) fail_msg("judges file: %s", msg);
    return jf;
}

static arb_tournament_params params(const arb_judges_file *jf)
{
    arb_tournament_params p = arb_tournament_default_params();
    p.judges = jf;
    p.template_name = "II";
    p.progress = 0;
    return p;
}

static void run_ok(fixture *f, const arb_tournament_params *p, arb_run_stats *st)
{
    if (arb_tournament_run(f->store, f->ds, p, st) != ARB_OK)
        fail_msg("tournament: %s", arb_store_errmsg(f->store));
}

static long long q(fixture *f, const char *sql) { return arb_test_query_int(f->store, sql); }

static void defaults(void **state)
{
    (void)state;
    arb_tournament_params p = arb_tournament_default_params();
    assert_null(p.models);
    assert_null(p.judges);
    assert_string_equal(p.template_name, "II-reason");
    assert_int_equal(p.reps, 1);
    assert_int_equal(p.random_k, 0);
    assert_int_equal(p.exclude_self, 0);
    assert_int_equal(p.seed, 1);
    assert_int_equal(p.progress, -1);
    assert_int_equal(p.client.jobs, arb_client_default_params().jobs);
}

static void dry_run_plans_every_call(void **state)
{
    fixture *f = *state;
    const char *specs[] = {"first:sim-first", "second:sim-second"};
    arb_judges_file *jf = judges(f, specs, 2);
    arb_tournament_params p = params(jf);
    p.reps = 2;
    p.dry_run = 1;
    arb_run_stats st;
    run_ok(f, &p, &st);
    assert_int_equal(st.planned, N_CMP * 2 * 2 * 2);
    assert_int_equal(st.cached, 0);
    assert_int_equal(st.sent, 0);
    assert_true(st.est_prompt_tokens > 0);
    assert_int_equal(arb_sim_server_requests(f->srv), 0);
    assert_int_equal(q(f, "select count(*) from pairwise"), 0);
    assert_int_equal(q(f, "select count(*) from battles"), 0);
    assert_int_equal(q(f, "select count(*) from runs"), 0);
    /* Two of the three models: q1, q2, q3 all have ALPHA and BETA. */
    const char *two[] = {"MODEL-BETA", "MODEL-ALPHA"};
    p.models = two;
    p.n_models = 2;
    run_ok(f, &p, &st);
    assert_int_equal(st.planned, 3 * 2 * 2 * 2);
    arb_judges_file_destroy(jf);
}

static void checks_before_any_request(void **state)
{
    fixture *f = *state;
    const char *specs[] = {"first:sim-first:MODEL-ALPHA"};
    arb_judges_file *jf = judges(f, specs, 1);
    arb_tournament_params p = params(jf);
    arb_run_stats st;
    const char *one[] = {"MODEL-ALPHA"};
    p.models = one;
    p.n_models = 1;
    assert_int_equal(arb_tournament_run(f->store, f->ds, &p, &st), ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store), "a tournament needs at least two models, got 1");
    const char *typo[] = {"MODEL-ALPHA", "MODEL-DELTA"};
    p.models = typo;
    p.n_models = 2;
    assert_int_equal(arb_tournament_run(f->store, f->ds, &p, &st), ARB_PARSE);
    assert_string_equal(arb_store_errmsg(f->store),
                        "no answers from model \"MODEL-DELTA\" in the answers file");
    const char *twice[] = {"MODEL-ALPHA", "MODEL-BETA", "MODEL-ALPHA"};
    p.models = twice;
    p.n_models = 3;
    assert_int_equal(arb_tournament_run(f->store, f->ds, &p, &st), ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store), "model \"MODEL-ALPHA\" is listed twice");
    p = params(jf);
    p.template_name = "II-fact"; /* needs a reference; q2 has none */
    assert_int_equal(arb_tournament_run(f->store, f->ds, &p, &st), ARB_PARSE);
    assert_string_equal(arb_store_errmsg(f->store),
                        "items.jsonl:2: item \"q2\" has no \"reference\", which template II-fact needs");
    p = params(jf);
    p.reps = 0;
    assert_int_equal(arb_tournament_run(f->store, f->ds, &p, &st), ARB_INVALID);
    p = params(NULL);
    assert_int_equal(arb_tournament_run(f->store, f->ds, &p, &st), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "no judges"));
    p = params(jf);
    p.template_name = "no-such-template";
    assert_int_not_equal(arb_tournament_run(f->store, f->ds, &p, &st), ARB_OK);
    /* exclude_self with ALPHA's own judge and only ALPHA and BETA: nothing left to judge. */
    p = params(jf);
    p.exclude_self = 1;
    const char *ab[] = {"MODEL-ALPHA", "MODEL-BETA"};
    p.models = ab;
    p.n_models = 2;
    assert_int_equal(arb_tournament_run(f->store, f->ds, &p, &st), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "nothing to judge"));
    assert_int_equal(arb_sim_server_requests(f->srv), 0);
    assert_int_equal(q(f, "select count(*) from pairwise"), 0);
    arb_judges_file_destroy(jf);
}

/* Always-first gives s = -1 on every battle, always-second s = +1; both orders of every pair;
** candidate = the model first by name; a rerun sends nothing and keeps one battle each. */
static void orientation_and_rerun(void **state)
{
    fixture *f = *state;
    const char *specs[] = {"first:sim-first", "second:sim-second"};
    arb_judges_file *jf = judges(f, specs, 2);
    arb_tournament_params p = params(jf);
    p.reps = 2;
    arb_run_stats st;
    run_ok(f, &p, &st);
    size_t calls = N_CMP * 2 * 2 * 2;
    assert_int_equal(st.planned, calls);
    assert_int_equal(st.sent, calls);
    assert_int_equal(st.failed, 0);
    assert_int_equal(st.invalid, 0);
    assert_int_equal(arb_sim_server_requests(f->srv), calls);

    assert_int_equal(q(f, "select count(*) from pairwise where protocol = 'tournament'"), calls);
    assert_int_equal(q(f, "select count(*) from pairwise where candidate >= baseline"), 0);
    assert_int_equal(q(f, "select count(*) from pairwise where options <> 3"), 0);
    assert_int_equal(q(f, "select count(*) from pairwise where judge_name = 'first' and "
                          "(position_verdict <> 'A' or model_verdict <> "
                          "case ord when 0 then 'a' else 'b' end)"), 0);
    assert_int_equal(q(f, "select count(*) from pairwise where judge_name = 'second' and "
                          "position_verdict <> 'B'"), 0);
    /* Model names never reach a judge. */
    assert_int_equal(q(f, "select count(*) from calls where arb_request(request) like '%MODEL-%'"), 0);
    assert_int_equal(q(f, "select count(*) from runs where protocol = 'tournament' and "
                          "status = 'finished'"), 1);

    arb_battles *b = arb_battles_create();
    assert_int_equal(arb_store_get_battles(f->store, "tournament", b), ARB_OK);
    assert_int_equal(arb_battles_count(b), calls);
    size_t ab = 0, ba = 0;
    for (size_t k = 0; k < arb_battles_count(b); k++) {
        arb_battle x = arb_battles_at(b, k);
        if (!strcmp(x.reviewer, "first")) assert_int_equal(x.s, -1);
        else if (!strcmp(x.reviewer, "second")) assert_int_equal(x.s, 1);
        else fail_msg("unexpected reviewer %s", x.reviewer);
        ab += !strcmp(x.model_i, "MODEL-ALPHA") && !strcmp(x.model_j, "MODEL-BETA");
        ba += !strcmp(x.model_i, "MODEL-BETA") && !strcmp(x.model_j, "MODEL-ALPHA");
        assert_int_equal(x.both_bad, 0);
    }
    /* ALPHA vs BETA on 3 items, 2 reviewers, 2 reps, in each order. */
    assert_int_equal(ab, 3 * 2 * 2);
    assert_int_equal(ba, 3 * 2 * 2);
    arb_battles_destroy(b);

    /* Rerun: nothing sent, every judgment still one row (left as recorded, not rewritten: its
    ** judged_at stays) and one battle. */
    assert_int_equal(arb_test_exec_sql(f->store, "update pairwise set judged_at = 'then'"), 0);
    run_ok(f, &p, &st);
    assert_int_equal(st.cached, calls);
    assert_int_equal(st.sent, 0);
    assert_int_equal(q(f, "select count(*) from pairwise where judged_at = 'then'"), calls);
    assert_int_equal(arb_sim_server_requests(f->srv), calls);
    assert_int_equal(q(f, "select count(*) from pairwise"), calls);
    assert_int_equal(q(f, "select count(*) from battles where source = 'tournament'"), calls);
    assert_int_equal(q(f, "select count(*) from battles where reviewer = 'first' and s <> -1"), 0);
    arb_judges_file_destroy(jf);
}

/* A rerun that judges nothing (every judgment recorded) leaves the stored battles as they are
** instead of rebuilding all of them from the judgments (which holds every battle in memory):
** a battle row changed behind the run's back stays changed. When they are fewer than the
** judgments (a run killed before its rebuild, here rows deleted) the rerun rebuilds them, and
** arb_store_battles_summary counts them and reads the left-out records without the battles. */
static void rerun_keeps_battles_in_step(void **state)
{
    fixture *f = *state;
    const char *specs[] = {"first:sim-first", "mute:sim-mute"};
    arb_judges_file *jf = judges(f, specs, 2);
    arb_tournament_params p = params(jf);
    arb_run_stats st;
    run_ok(f, &p, &st);
    size_t calls = N_CMP * 2 * 2;
    assert_int_equal(q(f, "select count(*) from battles where source = 'tournament'"), calls / 2);
    assert_int_equal(arb_test_exec_sql(f->store, "update battles set s = 0 where seq = 0"), 0);
    run_ok(f, &p, &st);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.invalid, calls / 2);
    assert_int_equal(q(f, "select s from battles where source = 'tournament' and seq = 0"), 0);
    /* the mute judge's judgments are left out, counted per pair */
    size_t n = 0;
    arb_battles *left = arb_battles_create();
    assert_int_equal(arb_store_battles_summary(f->store, "tournament", &n, left), ARB_OK);
    assert_int_equal(n, calls / 2);
    assert_int_equal(arb_battles_count(left), 0);
    size_t total = 0;
    for (size_t k = 0; k < arb_battles_left_out_count(left); k++)
        total += arb_battles_left_out_at(left, k).n;
    assert_int_equal(total, calls / 2);
    arb_battles_destroy(left);
    /* fewer battles than judgments: rebuilt, the changed row with them */
    assert_int_equal(arb_test_exec_sql(f->store, "delete from battles where seq >= 3"), 0);
    run_ok(f, &p, &st);
    assert_int_equal(st.sent, 0);
    assert_int_equal(q(f, "select count(*) from battles where source = 'tournament'"), calls / 2);
    assert_int_equal(q(f, "select count(*) from battles where source = 'tournament' and s <> -1"),
                     0);
    assert_int_equal(arb_sim_server_requests(f->srv), calls);
    arb_judges_file_destroy(jf);
}

/* A run killed after it stored its judgments but before it rebuilt the battles (here: the
** rebuild refused by a trigger) leaves as many battles as judgments, but the battles of the
** judgments it replaced: MODEL-ALPHA's answer to q2 was edited, so its four calls were sent
** again and their judgments took the old rows' keys. The rerun judges nothing and must still
** rebuild the battles, or they keep the old answer's style covariates (and, had the verdicts
** changed, the old verdicts). */
static void rerun_rebuilds_battles_of_replaced_judgments(void **state)
{
    fixture *f = *state;
    const char *specs[] = {"first:sim-first"};
    arb_judges_file *jf = judges(f, specs, 1);
    arb_tournament_params p = params(jf);
    arb_run_stats st;
    run_ok(f, &p, &st);
    size_t calls = N_CMP * 2;
#define ALPHA_Q2_OF_LENGTH(n)                                                                  \
    "select count(*) from battles where q = 'q2' and (i = 'MODEL-ALPHA' and"                     \
    " json_extract(extra, '$.style_i.length') = " n " or j = 'MODEL-ALPHA' and"                 \
    " json_extract(extra, '$.style_j.length') = " n ")"
    assert_int_equal(q(f, ALPHA_Q2_OF_LENGTH("5")), 4); /* "Paris" */
    static const char was[] = "\"Paris\"", now[] = "\"Paris, the capital\"";
    const char *at = strstr(answers_jsonl, was);
    char *edited = arb__sprintf("%.*s%s%s", (int)(at - answers_jsonl), answers_jsonl, now,
                                at + strlen(was));
    arb_dataset *ds = arb_dataset_create();
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "items.jsonl", items_jsonl,
                                                 strlen(items_jsonl)), ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "answers.jsonl", edited, strlen(edited)),
                     ARB_OK);
    assert_int_equal(arb_test_exec_sql(f->store, "create trigger no_rebuild before delete on"
                                       " battles begin select raise(abort, 'killed'); end"), 0);
    assert_int_not_equal(arb_tournament_run(f->store, ds, &p, &st), ARB_OK);
    assert_int_equal(arb_test_exec_sql(f->store, "drop trigger no_rebuild"), 0);
    assert_int_equal(q(f, "select count(*) from pairwise"), calls);
    assert_int_equal(q(f, ALPHA_Q2_OF_LENGTH("5")), 4); /* the old battles */
    if (arb_tournament_run(f->store, ds, &p, &st) != ARB_OK)
        fail_msg("tournament: %s", arb_store_errmsg(f->store));
    assert_int_equal(st.sent, 0);
    assert_int_equal(q(f, "select count(*) from battles where source = 'tournament'"), calls);
    assert_int_equal(q(f, ALPHA_Q2_OF_LENGTH("18")), 4); /* "Paris, the capital" */
#undef ALPHA_Q2_OF_LENGTH
    assert_int_equal(arb_sim_server_requests(f->srv), calls + 4);
    arb_dataset_destroy(ds);
    free(edited);
    arb_judges_file_destroy(jf);
}

/* Style covariates of the battles come from the stored answers (METHODS §6 style control). */
static void battles_carry_style(void **state)
{
    fixture *f = *state;
    const char *specs[] = {"first:sim-first"};
    arb_judges_file *jf = judges(f, specs, 1);
    arb_tournament_params p = params(jf);
    const char *ag[] = {"MODEL-ALPHA", "MODEL-GAMMA"};
    p.models = ag;
    p.n_models = 2;
    arb_run_stats st;
    run_ok(f, &p, &st);
    assert_int_equal(st.sent, 2 * 2); /* q1, q2 in both orders */
    arb_battles *b = arb_battles_create();
    assert_int_equal(arb_store_get_battles(f->store, "tournament", b), ARB_OK);
    assert_int_equal(arb_battles_count(b), 4);
    int seen = 0;
    for (size_t k = 0; k < arb_battles_count(b); k++) {
        arb_battle x = arb_battles_at(b, k);
        if (strcmp(x.question, "q1")) continue;
        const double *gamma = !strcmp(x.model_i, "MODEL-GAMMA") ? x.style_i : x.style_j;
        const double *alpha = !strcmp(x.model_i, "MODEL-GAMMA") ? x.style_j : x.style_i;
        /* "**Four**, as\n- 2+2 = 4\n# Done": 29 code points, a header, a list item, bold. */
        assert_true(gamma[ARB_STYLE_LENGTH] == 29);
        assert_true(gamma[ARB_STYLE_HEADERS] == 1);
        assert_true(gamma[ARB_STYLE_LISTS] == 1);
        assert_true(gamma[ARB_STYLE_BOLD] == 1);
        assert_true(alpha[ARB_STYLE_LENGTH] == 4); /* "four" */
        assert_true(alpha[ARB_STYLE_HEADERS] == 0 && alpha[ARB_STYLE_LISTS] == 0 &&
                    alpha[ARB_STYLE_BOLD] == 0);
        seen++;
    }
    assert_int_equal(seen, 2);
    arb_battles_destroy(b);
    arb_judges_file_destroy(jf);
}

/* A judge without a valid verdict: its judgments are stored as E, counted, and give no battle. */
static void verdict_e_gives_no_battle(void **state)
{
    fixture *f = *state;
    const char *specs[] = {"first:sim-first", "mute:sim-mute"};
    arb_judges_file *jf = judges(f, specs, 2);
    arb_tournament_params p = params(jf);
    arb_run_stats st;
    run_ok(f, &p, &st);
    assert_int_equal(st.sent, N_CMP * 2 * 2);
    assert_int_equal(st.invalid, N_CMP * 2);
    assert_int_equal(q(f, "select count(*) from pairwise where judge_name = 'mute' and "
                          "position_verdict = 'E' and model_verdict = 'e'"), N_CMP * 2);
    assert_int_equal(q(f, "select count(*) from battles"), N_CMP * 2);
    assert_int_equal(q(f, "select count(*) from battles where reviewer = 'mute'"), 0);

    /* Issue 12, metrics 4: the E judgments are stored per judge and pair, not dropped
    ** silently: ALPHA-BETA met on q1..q3 (3 items x 2 orders), the GAMMA pairs on q1, q2. */
    const char *count_sql = "select coalesce(sum(n), 0) from battles_left_out where source = "
                            "'tournament' and reviewer = 'mute'";
    assert_int_equal(q(f, count_sql), N_CMP * 2);
    assert_int_equal(q(f, "select n from battles_left_out where model_a = 'MODEL-ALPHA' and "
                          "model_b = 'MODEL-BETA'"), 6);
    assert_int_equal(q(f, "select n from battles_left_out where model_a = 'MODEL-BETA' and "
                          "model_b = 'MODEL-GAMMA'"), 4);
    run_ok(f, &p, &st); /* a rerun replaces the records: still one count per judgment */
    assert_int_equal(q(f, count_sql), N_CMP * 2);

    /* ... read back with the battles, and printed by the ranking */
    arb_battles *b = arb_battles_create();
    assert_int_equal(arb_store_get_battles(f->store, "tournament", b), ARB_OK);
    assert_int_equal(arb_battles_left_out_count(b), 3);
    arb_battle_left_out x = arb_battles_left_out_at(b, 0);
    assert_string_equal(x.model_a, "MODEL-ALPHA");
    assert_string_equal(x.model_b, "MODEL-BETA");
    assert_string_equal(x.reviewer, "mute");
    assert_int_equal(x.n, 6);
    arb_rank_params rp = arb_rank_default_params();
    arb_rank *rk = NULL;
    assert_int_equal(arb_rank_compute(b, &rp, &rk, NULL), ARB_OK);
    char *json = arb_rank_to_json(rk), *text = arb_rank_to_text(rk);
    json_t *root = json_loads(json, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(root, "n_left_out_e")), N_CMP * 2);
    json_t *first = json_array_get(json_object_get(root, "left_out_e"), 0);
    assert_string_equal(json_string_value(json_object_get(first, "model_a")), "MODEL-ALPHA");
    assert_int_equal(json_integer_value(json_object_get(first, "n")), 6);
    assert_non_null(strstr(text, "left out: 14 judgments with verdict E"));
    assert_non_null(strstr(text, "  MODEL-BETA vs MODEL-GAMMA: 4\n"));
    json_decref(root);
    arb_free(json);
    arb_free(text);
    arb_rank_destroy(rk);
    /* a ranking of the first judge only leaves none of the mute judge's out */
    const char *only[] = {"first"};
    rp.reviewers = only;
    rp.n_reviewers = 1;
    assert_int_equal(arb_rank_compute(b, &rp, &rk, NULL), ARB_OK);
    json = arb_rank_to_json(rk);
    root = json_loads(json, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(root, "n_left_out_e")), 0);
    json_decref(root);
    arb_free(json);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
    arb_judges_file_destroy(jf);
}

/* exclude_self: a judge never reviews a pair containing its contestant. */
static void exclude_self(void **state)
{
    fixture *f = *state;
    const char *specs[] = {"first:sim-first:MODEL-ALPHA", "second:sim-second:MODEL-BETA",
                           "fair:sim-fair"};
    arb_judges_file *jf = judges(f, specs, 3);
    arb_tournament_params p = params(jf);
    p.exclude_self = 1;
    arb_run_stats st;
    run_ok(f, &p, &st);
    /* first: BETA-GAMMA on q1, q2; second: ALPHA-GAMMA on q1, q2; fair: all 7. */
    assert_int_equal(st.planned, (2 + 2 + N_CMP) * 2);
    assert_int_equal(st.sent, st.planned);
    assert_int_equal(q(f, "select count(*) from pairwise where judge_name = 'first' and "
                          "(candidate = 'MODEL-ALPHA' or baseline = 'MODEL-ALPHA')"), 0);
    assert_int_equal(q(f, "select count(*) from pairwise where judge_name = 'second' and "
                          "(candidate = 'MODEL-BETA' or baseline = 'MODEL-BETA')"), 0);
    assert_int_equal(q(f, "select count(*) from pairwise where judge_name = 'first'"), 4);
    assert_int_equal(q(f, "select count(*) from pairwise where judge_name = 'fair'"), N_CMP * 2);
    assert_int_equal(q(f, "select json_extract(params, '$.exclude_self') from runs"), 1);
    /* Recorded without secrets, with each judge's contestant. */
    assert_int_equal(q(f, "select count(*) from runs, json_each(runs.params, '$.judges') j "
                          "where json_extract(j.value, '$.contestant') = 'MODEL-ALPHA'"), 1);
    /* Without contestants in the file exclude_self cannot work: refused. */
    const char *plain[] = {"fair:sim-fair"};
    arb_judges_file *jf2 = judges(f, plain, 1);
    p = params(jf2);
    p.exclude_self = 1;
    assert_int_equal(arb_tournament_run(f->store, f->ds, &p, &st), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "\"contestant\""));
    arb_judges_file_destroy(jf2);
    arb_judges_file_destroy(jf);
}

/* random_k: K reviewers per (item, pair), the same K in both orders and every repetition; the
** draw depends only on the seed, the item and the pair. */
static void random_k(void **state)
{
    fixture *f = *state;
    const char *specs[] = {"first:sim-first", "second:sim-second", "fair:sim-fair"};
    arb_judges_file *jf = judges(f, specs, 3);
    arb_tournament_params p = params(jf);
    p.random_k = 2;
    p.seed = 5;
    p.reps = 2;
    arb_run_stats st;
    run_ok(f, &p, &st);
    assert_int_equal(st.planned, N_CMP * 2 * 2 * 2);
    assert_int_equal(st.sent, st.planned);
    assert_int_equal(q(f, "select count(*) from (select item_id, candidate, baseline from pairwise "
                          "group by 1, 2, 3 having count(distinct judge_name) = 2 and count(*) = 8)"),
                     N_CMP);
    /* The same seed plans the same calls: a rerun sends nothing... */
    run_ok(f, &p, &st);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.cached, N_CMP * 8);
    /* ...also with fewer models: (q, ALPHA, BETA) draws the same reviewers as before. */
    const char *ab[] = {"MODEL-ALPHA", "MODEL-BETA"};
    p.models = ab;
    p.n_models = 2;
    run_ok(f, &p, &st);
    assert_int_equal(st.planned, 3 * 8);
    assert_int_equal(st.sent, 0);
    /* K at least the number of reviewers: all of them. */
    p = params(jf);
    p.random_k = 3;
    p.dry_run = 1;
    run_ok(f, &p, &st);
    assert_int_equal(st.planned, N_CMP * 3 * 2);
    /* Another seed draws differently somewhere (fixed data: a fixed outcome). */
    p = params(jf);
    p.random_k = 2;
    p.reps = 2;
    p.seed = 6;
    p.dry_run = 1;
    run_ok(f, &p, &st);
    assert_int_equal(st.planned, N_CMP * 8);
    assert_true(st.cached < st.planned);
    /* random_k 1 with exclude_self-free judges: exactly one reviewer each. */
    p.random_k = 1;
    run_ok(f, &p, &st);
    assert_int_equal(st.planned, N_CMP * 2 * 2);
    arb_judges_file_destroy(jf);
}

/* ---- an indexed dataset (arb_dataset_load_indexed) read slice by slice ---------------------- */

static uint64_t whole_limit_default; /* arb__dataset_whole_limit as built; tests lower it */

/* arb_test_load_both, then larger files are loaded whole again (this file's fixture does not
** restore the limit). */
static void load_both(fixture *f, const char *sub, const char *items_text,
                      const char *answers_text, arb_dataset **whole, arb_dataset **indexed)
{
    char items[256], answers[256];
    assert_int_equal(arb_test_load_both(f->dir, sub, items_text, answers_text, items, answers,
                                        sizeof items, whole, indexed),
                     0);
    arb__dataset_whole_limit = whole_limit_default;
}

/* The judgments with their calls (the key is the hash of the request sent), and the battles
** with their style covariates. The stored request is compared through the export: a compact
** request names its template by a row id of its own store, given in the order the first calls
** came back, which differs between two runs (see export_sorted). */
#define TOURNAMENT_ROWS(db)                                                                      \
    "SELECT p.protocol, p.judge_name, p.item_id, p.candidate, p.baseline, p.template_name,"    \
    " p.options, p.rep, p.ord, p.position_verdict, p.model_verdict, c.key, c.content, c.ok"    \
    " FROM " db "pairwise p JOIN " db "calls c ON c.id = p.call_id"
#define BATTLE_ROWS(db) "SELECT source, seq, q, i, j, reviewer, s, extra FROM " db "battles"

static int compare_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The store's "jsonl" export (every judgment with the request as sent) without latency_ms,
** the one key two runs of the same plan give differently, as sorted lines (the export's order
** follows setup ids, given in the order the first judgments came back). Freed by the caller. */
static char *export_sorted(arb_store *s)
{
    char *buf = NULL, *lines[4096], *all = NULL;
    size_t len = 0, n = 0, total = 1;
    FILE *out = open_memstream(&buf, &len);
    assert_int_equal(arb_store_export(s, "jsonl", out), ARB_OK);
    fclose(out);
    for (const char *line = buf, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        json_t *row = json_loadb(line, (size_t)(nl - line), 0, NULL);
        assert_non_null(row);
        assert_int_equal(json_object_del(row, "latency_ms"), 0);
        assert_true(n < sizeof lines / sizeof *lines);
        lines[n] = json_dumps(row, JSON_COMPACT | JSON_SORT_KEYS);
        assert_non_null(lines[n]);
        total += strlen(lines[n++]) + 1;
        json_decref(row);
    }
    free(buf);
    qsort(lines, n, sizeof *lines, compare_lines);
    all = calloc(1, total);
    assert_non_null(all);
    for (size_t i = 0; i < n; i++) {
        strcat(strcat(all, lines[i]), "\n");
        free(lines[i]);
    }
    return all;
}

/* Runs p on whole and on indexed (slices of 3 calls), each into a new store of its own
** (<name>-whole.db, <name>-indexed.db); expects the same stored items, answers, judgments,
** calls, battles and left-out counts. */
static void expect_same_runs(fixture *f, const arb_tournament_params *p, arb_dataset *whole,
                             arb_dataset *indexed, const char *name, size_t judgments)
{
    char db[2][256], file[64];
    arb_store *s[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        snprintf(file, sizeof file, "%s-%s.db", name, k ? "indexed" : "whole");
        assert_non_null(arb_test_scratch(f->dir, file, NULL, db[k], sizeof db[k]));
        assert_int_equal(arb_store_open(db[k], &s[k]), ARB_OK);
        /* 3 calls a slice: an item's calls (2 orders x reps x judges) fall in two slices */
        arb__sbs_plan_slice = k ? 3 : 0;
        arb_run_stats st;
        if (arb_tournament_run(s[k], k ? indexed : whole, p, &st) != ARB_OK)
            fail_msg("tournament: %s", arb_store_errmsg(s[k]));
        assert_int_equal(st.planned, judgments);
        assert_int_equal(st.sent, judgments);
    }
    arb__sbs_plan_slice = 0;
    char *exported[2] = {export_sorted(s[0]), export_sorted(s[1])};
    assert_true(strlen(exported[0]) > judgments);
    assert_string_equal(exported[0], exported[1]);
    free(exported[0]);
    free(exported[1]);
    arb_store_close(s[1]);
    assert_int_equal(arb_test_exec_sql(s[0], "ATTACH %Q AS b", db[1]), 0);
    assert_int_equal(arb_test_rows_differ(s[0], "SELECT * FROM main.items", "SELECT * FROM b.items"), 0);
    assert_int_equal(arb_test_rows_differ(s[0], "SELECT * FROM main.answers", "SELECT * FROM b.answers"), 0);
    assert_int_equal(arb_test_rows_differ(s[0], TOURNAMENT_ROWS("main."), TOURNAMENT_ROWS("b.")), 0);
    assert_int_equal(arb_test_query_int(s[0], "SELECT count(*) FROM b.pairwise"), (long long)judgments);
    assert_int_equal(arb_test_rows_differ(s[0], BATTLE_ROWS("main."), BATTLE_ROWS("b.")), 0);
    assert_true(arb_test_query_int(s[0], "SELECT count(*) FROM b.battles") > 0);
    assert_int_equal(arb_test_rows_differ(s[0], "SELECT * FROM main.battles_left_out",
                                          "SELECT * FROM b.battles_left_out"), 0);
    assert_int_equal(arb_test_exec_sql(s[0], "DETACH b"), 0);
    arb_store_close(s[0]);
}

/* The same judgments, calls, battles (with their style) and left-out counts whether the
** dataset is held whole or indexed and read again slice by slice (3 calls a slice), with
** every model, with two of them, with random_k; a rerun from the index on a store the whole
** dataset made sends nothing; a file changed under the index stops the run before any
** request. */
static void indexed_dataset_in_slices(void **state)
{
    fixture *f = *state;
    arb_dataset *whole, *indexed;
    load_both(f, "", items_jsonl, answers_jsonl, &whole, &indexed);
    /* judges whose replies depend on the request alone (sim-fair's draws follow the order
    ** requests arrive in) */
    const char *specs[] = {"first:sim-first", "mute:sim-mute", "second:sim-second"};
    arb_judges_file *jf = judges(f, specs, 3);
    arb_tournament_params p = params(jf);
    p.reps = 2;
    expect_same_runs(f, &p, whole, indexed, "all", N_CMP * 3 * 2 * 2);
    const char *ag[] = {"MODEL-GAMMA", "MODEL-ALPHA"}; /* q3 has no GAMMA answer */
    p.models = ag;
    p.n_models = 2;
    p.template_name = "II-reason";
    expect_same_runs(f, &p, whole, indexed, "two", 2 * 3 * 2 * 2);
    p = params(jf);
    p.random_k = 2;
    p.seed = 5;
    expect_same_runs(f, &p, whole, indexed, "random", N_CMP * 2 * 2);

    /* a store the whole dataset made, rerun from the index in slices: nothing to send */
    p = params(jf);
    p.reps = 2;
    arb_run_stats st;
    run_ok(f, &p, &st);
    unsigned long sent = arb_sim_server_requests(f->srv);
    arb__sbs_plan_slice = 3;
    assert_int_equal(arb_tournament_run(f->store, indexed, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.cached, N_CMP * 3 * 2 * 2);
    assert_int_equal(arb_sim_server_requests(f->srv), sent);

    /* a file changed under the index: the run stops with where, before sending anything */
    char items[256];
    static const char changed[] = "{\"id\":\"other\",\"question\":\"Q\"}\n";
    assert_non_null(arb_test_scratch(f->dir, "items.jsonl", changed, items, sizeof items));
    p.reps = 3;
    assert_int_equal(arb_tournament_run(f->store, indexed, &p, &st), ARB_IO);
    assert_non_null(strstr(arb_store_errmsg(f->store), "items.jsonl"));
    assert_int_equal(arb_sim_server_requests(f->srv), sent);
    arb__sbs_plan_slice = 0;
    arb_dataset_destroy(whole);
    arb_dataset_destroy(indexed);
    arb_judges_file_destroy(jf);
}

/* Bad input judged from an index is refused as from a whole dataset, with the same message
** (the item's file:line) and nothing sent. */
static void indexed_dataset_errors_match(void **state)
{
    fixture *f = *state;
    static const char two_models[] =
        "{\"item\":\"x\",\"model\":\"M-A\",\"answer\":\"a\"}\n"
        "{\"item\":\"x\",\"model\":\"M-B\",\"answer\":\"b\"}\n"
        "{\"item\":\"y\",\"model\":\"M-A\",\"answer\":\"a\"}\n"
        "{\"item\":\"y\",\"model\":\"M-B\",\"answer\":\"b\"}\n";
    static const struct {
        const char *items, *answers, *template_name, *model; /* model: one more to list */
        arb_status status;
        const char *expected; /* the message after the directory */
    } cases[] = {
        {"{\"id\":\"x\",\"question\":\"Q\"}\n\n{\"id\":\"y\",\"reference\":\"R\"}\n", two_models,
         "II", NULL, ARB_PARSE, "items.jsonl:3: missing field \"question\""},
        {"{\"id\":\"x\",\"question\":\"Q\",\"reference\":\"R\"}\n{\"id\":\"y\",\"question\":\"Q\"}\n",
         two_models, "II-fact", NULL, ARB_PARSE,
         "items.jsonl:2: item \"y\" has no \"reference\", which template II-fact needs"},
        {"{\"id\":\"x\",\"question\":\"Q\",\"reference\":\"R\"}\n"
         "{\"id\":\"y\",\"question\":\"Q\",\"reference\":\"\"}\n",
         two_models, "II-fact", NULL, ARB_PARSE,
         "items.jsonl:2: item \"y\" has no \"reference\", which template II-fact needs"},
        {"{\"id\":\"x\",\"question\":\"Q\"}\n{\"id\":\"y\",\"question\":\"Q\"}\n", two_models,
         "II", "M-C", ARB_PARSE, "no answers from model \"M-C\" in the answers file"},
        {"{\"id\":\"x\",\"question\":\"Q\"}\n{\"id\":\"y\",\"question\":\"Q\"}\n",
         "{\"item\":\"x\",\"model\":\"M-A\",\"answer\":\"a\"}\n", "II", NULL, ARB_INVALID,
         "a tournament needs at least two models, got 1 in the answers file"},
        {"{\"id\":\"x\",\"question\":\"Q\"}\n{\"id\":\"y\",\"question\":\"Q\"}\n",
         "{\"item\":\"x\",\"model\":\"M-A\",\"answer\":\"a\"}\n"
         "{\"item\":\"y\",\"model\":\"M-B\",\"answer\":\"b\"}\n",
         "II", NULL, ARB_INVALID, "nothing to judge: no item has answers from two of the models"},
    };
    const char *specs[] = {"first:sim-first"};
    arb_judges_file *jf = judges(f, specs, 1);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        arb_dataset *whole, *indexed;
        load_both(f, "bad/", cases[i].items, cases[i].answers, &whole, &indexed);
        arb_tournament_params p = params(jf);
        p.template_name = cases[i].template_name;
        const char *models[] = {"M-A", "M-B", cases[i].model};
        if (cases[i].model) {
            p.models = models;
            p.n_models = 3;
        }
        arb_run_stats st;
        assert_int_equal(arb_tournament_run(f->store, whole, &p, &st), cases[i].status);
        char *expected = arb__strdup(arb_store_errmsg(f->store));
        assert_int_equal(arb_tournament_run(f->store, indexed, &p, &st), cases[i].status);
        assert_string_equal(arb_store_errmsg(f->store), expected);
        if (!strstr(expected, cases[i].expected))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, expected, cases[i].expected);
        free(expected);
        arb_dataset_destroy(whole);
        arb_dataset_destroy(indexed);
    }
    assert_int_equal(arb_sim_server_requests(f->srv), 0);
    assert_int_equal(q(f, "select count(*) from runs"), 0);
    arb_judges_file_destroy(jf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults),
        cmocka_unit_test_setup_teardown(dry_run_plans_every_call, setup, teardown),
        cmocka_unit_test_setup_teardown(checks_before_any_request, setup, teardown),
        cmocka_unit_test_setup_teardown(orientation_and_rerun, setup, teardown),
        cmocka_unit_test_setup_teardown(rerun_keeps_battles_in_step, setup, teardown),
        cmocka_unit_test_setup_teardown(rerun_rebuilds_battles_of_replaced_judgments, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(battles_carry_style, setup, teardown),
        cmocka_unit_test_setup_teardown(verdict_e_gives_no_battle, setup, teardown),
        cmocka_unit_test_setup_teardown(exclude_self, setup, teardown),
        cmocka_unit_test_setup_teardown(random_k, setup, teardown),
        cmocka_unit_test_setup_teardown(indexed_dataset_in_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(indexed_dataset_errors_match, setup, teardown),
    };
    whole_limit_default = arb__dataset_whole_limit;
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
