/*
** test_discussion_stats.c -- what stored discussions and debates show (discussion_stats.c,
** METHODS §7, §2.5): dialogues and turns are written with plain SQL, labels imported from a
** file, and every number checked against hand arithmetic: counts, PDA with a reversed-
** orientation label, a draw label, an annotator tie and an unlabelled item; each reviewer's
** initial accuracy; opinion altering / holding as leader and follower, per discussion and per
** turn, for a script where r1 always holds and r2 always yields and for one where the two
** counts differ; the first-position share before and after; the
** agreement-turn histogram; the PDA interval; debate agree rates; the empty store; errors.
**
** Each test gets a fresh store with items q1..q6. Run one test alone with ARB_TEST=<name>.
*/
#include "test_sql.h"
#include "testutil.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define EPS 1e-12

typedef struct fixture {
    char dir[128];
    arb_store *store;
    int n_keys; /* dialogues written, for unique keys */
} fixture;

static const char items_jsonl[] = "{\"id\":\"q1\",\"question\":\"one?\"}\n"
                                  "{\"id\":\"q2\",\"question\":\"two?\"}\n"
                                  "{\"id\":\"q3\",\"question\":\"three?\"}\n"
                                  "{\"id\":\"q4\",\"question\":\"four?\"}\n"
                                  "{\"id\":\"q5\",\"question\":\"five?\"}\n"
                                  "{\"id\":\"q6\",\"question\":\"six?\"}\n";

/* The main discussion set-up of the scripted store. */
static const char config_d[] =
    "{\"initial_template\":\"discuss-initial\",\"leader\":\"random\",\"max_turns\":4,"
    "\"reviewers\":[\"r1\",\"r2\"],\"stop_on_agreement\":true,\"turn_template\":\"discuss-turn\"}";
/* A self-discussion with a reviewer name that holds an escape sequence (JSON-escaped here). */
static const char config_self[] =
    "{\"initial_template\":\"discuss-initial\",\"leader\":\"first\",\"max_turns\":2,"
    "\"reviewers\":[\"m\\u001b[31m@0.2\",\"m@0.8\"],\"stop_on_agreement\":false,"
    "\"turn_template\":\"discuss-turn\"}";
static const char config_soft[] = "{\"agent2_template\":\"debate-soft\"}";
static const char config_hard[] = "{\"agent2_template\":\"debate-hard\"}";

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f; /* teardown frees what setup made, even when setup fails */
    if (arb_test_store_with_items("test_dstats", items_jsonl, f->dir, sizeof f->dir, &f->store))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f) return 0;
    arb_store_close(f->store);
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

/* Runs SQL built with sqlite3's printf (%Q quotes a string or writes NULL). */
#define exec_sql(f, ...) assert_int_equal(arb_test_exec_sql((f)->store, __VA_ARGS__), 0)

static long long put_dialogue(fixture *f, const char *kind, const char *config,
                              const char *item, const char *answer1, const char *answer2,
                              const char *participants, const char *status, const char *final)
{
    exec_sql(f,
             "INSERT INTO dialogues(key, kind, item_id, answer1, answer2, participants, config,"
             " status, final_verdict) VALUES ('k%d', %Q, %Q, %Q, %Q, %Q, %Q, %Q, %Q)",
             f->n_keys++, kind, item, answer1, answer2, participants, config, status, final);
    return sqlite3_last_insert_rowid(arb__store_conn(f->store));
}

static void put_turn(fixture *f, long long id, int turn, const char *speaker, const char *role,
                     char verdict)
{
    exec_sql(f,
             "INSERT INTO dialogue_turns(dialogue_id, turn, speaker, role, verdict)"
             " VALUES (%lld, %d, %Q, %Q, '%c')",
             id, turn, speaker, role, verdict);
}

/* A discussion as the protocol stores it: verdicts[k] is turn k's verdict, turn k spoken by
** the leader when k is even, its role 'initial' for k < 2, then 'leader' / 'follower'. */
static void put_discussion(fixture *f, const char *kind, const char *config, const char *item,
                           const char *answer1, const char *answer2, const char *leader,
                           const char *follower, const char *status, const char *final,
                           const char *verdicts)
{
    char participants[128];
    snprintf(participants, sizeof participants, "[\"%s\",\"%s\"]", leader, follower);
    long long id = put_dialogue(f, kind, config, item, answer1, answer2, participants, status,
                                final);
    for (int k = 0; verdicts[k]; k++)
        put_turn(f, id, k, k % 2 ? follower : leader,
                 k < 2 ? "initial" : k % 2 ? "follower" : "leader", verdicts[k]);
}

/* A debate between a1 and a2 judged by j: verdicts of agent 1, agent 2, the judge. */
static void put_debate(fixture *f, const char *kind, const char *config, const char *status,
                       const char *final, const char *verdicts)
{
    static const char *const speakers[3] = {"a1", "a2", "j"};
    static const char *const roles[3] = {"agent1", "agent2", "judge"};
    long long id = put_dialogue(f, kind, config, "q1", "mA", "mB", "[\"a1\",\"a2\",\"j\"]",
                                status, final);
    for (int k = 0; verdicts[k]; k++) put_turn(f, id, k, speakers[k], roles[k], verdicts[k]);
}

#define LABEL(item, cand, base, verdict, ann)                                                  \
    "{\"item\":\"" item "\",\"candidate\":\"" cand "\",\"baseline\":\"" base                   \
    "\",\"verdict\":\"" verdict "\",\"annotator\":\"" ann "\"}\n"

static void import_labels(fixture *f, const char *jsonl)
{
    char path[256];
    snprintf(path, sizeof path, "%s/labels.jsonl", f->dir);
    assert_int_equal(arb_test_write_file(path, jsonl, strlen(jsonl)), 0);
    if (arb_labels_import(f->store, path, NULL, NULL) != ARB_OK)
        fail_msg("labels: %s", arb_store_errmsg(f->store));
}

/* The scripted store. Expert labels (all on candidate mA, baseline mB):
**   q1: a, a -> a;  q2: a;  q3: c, c -> c (a draw);  q4: a, b -> annotators tied;  q5: a;
**   q6: none.
** Discussion set-up "discussion" (config_d), reviewers r1 and r2; r1 always holds its view, r2
** always yields. verdicts: turn 0, 1, ... (leader speaks the even turns):
**   D1 q1 mA|mB  lead r1  done   final 1  "11"      label '1' (direct a)      agree at turn 0
**   D2 q2 mB|mA  lead r2  done   final 2  "1222"    label '2' (reversed a)    agree at turn 1
**   D3 q3 mA|mB  lead r1  done   final 1  "1211"    draw                      agree at turn 2
**   D4 q4 mA|mB  lead r2  done   final 1  "21E111"  annotator tie            agree at turn 3
**   D5 q5 mA|mB  lead r1  done   final 2  "2122"    label '1' (direct a)      agree at turn 2
**   D6 q1 mB|mA  lead r1  done   final 2  "21EE"    label '2' (reversed a)    never
**   D7 q2 mA|mB  lead r1  failed final E  "1222"    (not in the metrics)
**   D8 q3 mB|mA  lead r2  open           "1"       (not in the metrics)
**   D9 q6 mA|mB  lead r2  done   final 1  "11"      unlabelled                agree at turn 0
** A self-discussion set-up with one open dialogue; debates (participants a1, a2, j):
**   soft: B1 done A A A final A; B2 done A B B final B; B3 done B E A final A;
**         B4 failed A A final E
**   hard: H1 done A B B final B; H2 done C D C final C; H3 open A */
static void script(fixture *f)
{
    import_labels(f, LABEL("q1", "mA", "mB", "a", "x") LABEL("q1", "mA", "mB", "a", "y")
                     LABEL("q2", "mA", "mB", "a", "x")
                     LABEL("q3", "mA", "mB", "c", "x") LABEL("q3", "mA", "mB", "c", "y")
                     LABEL("q4", "mA", "mB", "a", "x") LABEL("q4", "mA", "mB", "b", "y")
                     LABEL("q5", "mA", "mB", "a", "x"));
    const char *k = "discussion";
    put_discussion(f, k, config_d, "q1", "mA", "mB", "r1", "r2", "done", "1", "11");
    put_discussion(f, k, config_d, "q2", "mB", "mA", "r2", "r1", "done", "2", "1222");
    put_discussion(f, k, config_d, "q3", "mA", "mB", "r1", "r2", "done", "1", "1211");
    put_discussion(f, k, config_d, "q4", "mA", "mB", "r2", "r1", "done", "1", "21E111");
    put_discussion(f, k, config_d, "q5", "mA", "mB", "r1", "r2", "done", "2", "2122");
    put_discussion(f, k, config_d, "q1", "mB", "mA", "r1", "r2", "done", "2", "21EE");
    put_discussion(f, k, config_d, "q2", "mA", "mB", "r1", "r2", "failed", "E", "1222");
    put_discussion(f, k, config_d, "q3", "mB", "mA", "r2", "r1", "open", NULL, "1");
    put_discussion(f, k, config_d, "q6", "mA", "mB", "r2", "r1", "done", "1", "11");
    /* the self-discussion's participants name the reviewer with an escape character (JSON
    ** escaped, as the store holds JSON) */
    put_discussion(f, "self-discussion", config_self, "q1", "mA", "mB", "m\\u001b[31m@0.2",
                   "m@0.8", "open", NULL, "1");
    put_debate(f, "soft", config_soft, "done", "A", "AAA");
    put_debate(f, "soft", config_soft, "done", "B", "ABB");
    put_debate(f, "soft", config_soft, "done", "A", "BEA");
    put_debate(f, "soft", config_soft, "failed", "E", "AA");
    put_debate(f, "hard", config_hard, "done", "B", "ABB");
    put_debate(f, "hard", config_hard, "done", "C", "CDC");
    put_debate(f, "hard", config_hard, "open", NULL, "A");
}

static arb_discussion_stats *compute(fixture *f, const arb_discussion_stats_params *p)
{
    arb_discussion_stats *st = NULL;
    if (arb_discussion_stats_compute(f->store, p, &st) != ARB_OK)
        fail_msg("compute: %s", arb_store_errmsg(f->store));
    assert_non_null(st);
    return st;
}

static json_t *as_json(const arb_discussion_stats *st)
{
    char *text = arb_discussion_stats_to_json(st);
    assert_non_null(text);
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    if (!root) fail_msg("JSON does not parse: %s\n%s", err.text, text);
    arb_free(text);
    return root;
}

static void assert_near(const json_t *v, double want)
{
    if (!json_is_number(v)) fail_msg("want %.15g, got a %s", want, arb__json_kind(v));
    double got = json_number_value(v);
    if (fabs(got - want) > EPS) fail_msg("got %.15g, want %.15g", got, want);
}

static long long jint(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) fail_msg("\"%s\" is a %s, not an integer", key, arb__json_kind(v));
    return (long long)json_integer_value(v);
}

static void assert_null_key(const json_t *o, const char *key)
{
    if (!json_is_null(json_object_get(o, key)))
        fail_msg("\"%s\" is a %s, want null", key, arb__json_kind(json_object_get(o, key)));
}

static const char *jstr(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    if (!s) fail_msg("\"%s\" is not a string", key);
    return s;
}

/* One role's OA / OH per discussion (NAN rate: null). */
static void assert_role(const json_t *o, long long n, long long oa, long long oh,
                        long long neither, double rate)
{
    assert_int_equal(jint(o, "discussions"), n);
    assert_int_equal(jint(o, "oa_discussions"), oa);
    assert_int_equal(jint(o, "oh_discussions"), oh);
    assert_int_equal(jint(o, "neither_discussions"), neither);
    if (isnan(rate)) assert_null_key(o, "oa_discussion_rate");
    else assert_near(json_object_get(o, "oa_discussion_rate"), rate);
}

/* ---- tests --------------------------------------------------------------------------------- */

/* Nothing stored: no set-up, and both renderings still work. */
static void empty_store(void **state)
{
    fixture *f = *state;
    arb_discussion_stats *st = compute(f, NULL);
    assert_int_equal(arb_discussion_stats_count(st), 0);
    char *text = arb_discussion_stats_to_text(st);
    assert_non_null(text);
    assert_non_null(strstr(text, "no discussions or debates"));
    arb_free(text);
    json_t *root = as_json(st);
    assert_true(json_is_array(json_object_get(root, "discussions")));
    assert_int_equal(json_array_size(json_object_get(root, "discussions")), 0);
    assert_int_equal(json_array_size(json_object_get(root, "debates")), 0);
    json_decref(root);
    arb_discussion_stats_destroy(st);
    /* NULL is accepted where the API says so */
    arb_discussion_stats_destroy(NULL);
    assert_int_equal(arb_discussion_stats_count(NULL), 0);
    assert_null(arb_discussion_stats_to_text(NULL));
    assert_null(arb_discussion_stats_to_json(NULL));
}

/* Counts, PDA, label accounting, accuracy, OA/OH, first share and agreement turns of the
** scripted discussion set-up. */
static void discussion_numbers(void **state)
{
    fixture *f = *state;
    script(f);
    arb_discussion_stats *st = compute(f, NULL);
    /* 2 discussion set-ups (discussion, self-discussion) + 2 debate set-ups (soft, hard) */
    assert_int_equal(arb_discussion_stats_count(st), 4);
    json_t *root = as_json(st);
    json_t *ds = json_object_get(root, "discussions");
    assert_int_equal(json_array_size(ds), 2);
    json_t *d = json_array_get(ds, 0); /* "discussion" sorts before "self-discussion" */
    assert_string_equal(jstr(d, "kind"), "discussion");
    json_t *rv = json_object_get(d, "reviewers");
    assert_int_equal(json_array_size(rv), 2);
    assert_string_equal(json_string_value(json_array_get(rv, 0)), "r1");
    assert_string_equal(json_string_value(json_array_get(rv, 1)), "r2");
    assert_string_equal(jstr(d, "leader"), "random");
    assert_int_equal(jint(d, "max_turns"), 4);
    assert_true(json_is_true(json_object_get(d, "stop_on_agreement")));

    /* D1..D9: done D1-D6 and D9 = 7, failed D7, open D8 */
    assert_int_equal(jint(d, "dialogues"), 9);
    assert_int_equal(jint(d, "done"), 7);
    assert_int_equal(jint(d, "failed"), 1);
    assert_int_equal(jint(d, "open"), 1);
    /* turns numbered >= 2 in done dialogues: D2 2, D3 2, D4 4, D5 2, D6 2 = 12 over 7 */
    assert_near(json_object_get(d, "mean_turns"), 12.0 / 7.0);

    /* labelled: D1 ('1', final 1 right), D2 ('2' reversed, final 2 right), D5 ('1', final 2
    ** wrong), D6 ('2' reversed, final 2 right): PDA = 3/4. D3 draw, D4 tie, D9 none; the
    ** failed D7 (q2, label '1', final E) would make it 3/5 if it were counted. */
    assert_int_equal(jint(d, "n_labelled"), 4);
    assert_near(json_object_get(d, "pda"), 0.75);
    assert_int_equal(jint(d, "n_label_draws"), 1);
    assert_int_equal(jint(d, "n_label_ties"), 1);
    assert_int_equal(jint(d, "n_unlabelled"), 1);
    assert_int_equal(jint(d, "n_label_items"), 3); /* q1 (D1, D6), q2 (D2), q5 (D5) */

    /* initial reviews of done dialogues, '1' counted: D1 1 1, D2 1 2, D3 1 2, D4 2 1,
    ** D5 2 1, D6 2 1, D9 1 1 -> 9 of 14; finals D1 1, D2 2, D3 1, D4 1, D5 2, D6 2, D9 1 ->
    ** 4 of 7 */
    assert_near(json_object_get(d, "first_share_before"), 9.0 / 14.0);
    assert_int_equal(jint(d, "n_initial_valid"), 14);
    assert_near(json_object_get(d, "first_share_after"), 4.0 / 7.0);
    assert_int_equal(jint(d, "n_final_valid"), 7);

    /* agreement: D1 "11" at k=1 -> 0; D2 "1222" s1=s2 at k=2 -> 1; D3 "1211" k=3 -> 2;
    ** D4 "21E111" s3=s4 at k=4 -> 3 (E equals nothing); D5 "2122" k=3 -> 2; D6 "21EE" never;
    ** D9 "11" -> 0. Bins 0..max_turns (4). */
    json_t *at = json_object_get(d, "agreement_turns");
    assert_int_equal(json_object_size(at), 6);
    assert_int_equal(jint(at, "0"), 2);
    assert_int_equal(jint(at, "1"), 1);
    assert_int_equal(jint(at, "2"), 2);
    assert_int_equal(jint(at, "3"), 1);
    assert_int_equal(jint(at, "4"), 0);
    assert_int_equal(jint(at, "never"), 1);

    /* initial accuracy on the labelled D1, D2, D5, D6:
    **   r1: D1 turn 0 '1' vs '1' right, D2 turn 1 '2' vs '2' right, D5 turn 0 '2' vs '1'
    **       wrong, D6 turn 0 '2' vs '2' right -> 3/4
    **   r2: D1 turn 1 '1' right, D2 turn 0 '1' vs '2' wrong, D5 turn 1 '1' right, D6 turn 1
    **       '1' vs '2' wrong -> 2/4
    ** OA/OH (own, other = latest valid verdicts before the turn):
    **   D2 (r2 leads): t2 r2 own 1 other 2 says 2 -> r2 leader OA; t3 r1 own 2 other 2: equal
    **   D3 (r1 leads): t2 r1 own 1 other 2 says 1 -> r1 leader OH; t3 r2 own 2 other 1 says 1
    **                  -> r2 follower OA
    **   D4 (r2 leads): t2 r2 says E -> neither; t3 r1 own 1 other 2 (r2's E skipped) says 1 ->
    **                  r1 follower OH; t4 r2 own 2 other 1 says 1 -> r2 leader OA; t5 equal
    **   D5 (r1 leads): t2 r1 own 2 other 1 says 2 -> r1 leader OH; t3 r2 says 2 -> follower OA
    **   D6: t2, t3 E -> neither. D7 (failed): t2 r1 would be a leader OA -- not counted.
    **   r1: leader OA 0 OH 2, follower OA 0 OH 1; r2: leader OA 2 OH 0, follower OA 2 OH 0
    ** Per discussion (done dialogues in the role; OA = altered at least once, else OH = held
    ** at least once, else neither):
    **   r1 leads D1 (no turn), D3 (OH), D5 (OH), D6 (E only) -> 4: OA 0, OH 2, neither 2;
    **   r1 follows D2 (r2 yielded first: no disagreement met), D4 (OH), D9 -> 3: 0, 1, 2;
    **   r2 leads D2 (OA), D4 (E then OA), D9 -> 3: OA 2, OH 0, neither 1;
    **   r2 follows D1, D3 (OA), D5 (OA), D6 (E) -> 4: OA 2, OH 0, neither 2.
    ** Here every discussion has at most one altering or holding turn per reviewer, so the
    ** counts equal the per-turn ones; per_discussion_oa_oh has a script where they differ. */
    json_t *rs = json_object_get(d, "reviewer_stats");
    assert_int_equal(json_array_size(rs), 2);
    json_t *r1 = json_array_get(rs, 0), *r2 = json_array_get(rs, 1);
    assert_string_equal(jstr(r1, "reviewer"), "r1");
    assert_string_equal(jstr(r2, "reviewer"), "r2");
    assert_near(json_object_get(r1, "initial_accuracy"), 0.75);
    assert_int_equal(jint(r1, "n_initial_labelled"), 4);
    assert_near(json_object_get(r2, "initial_accuracy"), 0.5);
    assert_int_equal(jint(r2, "n_initial_labelled"), 4);
    json_t *r1l = json_object_get(r1, "leader"), *r1f = json_object_get(r1, "follower");
    json_t *r2l = json_object_get(r2, "leader"), *r2f = json_object_get(r2, "follower");
    assert_int_equal(jint(r1l, "oa"), 0);
    assert_int_equal(jint(r1l, "oh"), 2);
    assert_near(json_object_get(r1l, "oa_rate"), 0.0);
    assert_int_equal(jint(r1f, "oa"), 0);
    assert_int_equal(jint(r1f, "oh"), 1);
    assert_near(json_object_get(r1f, "oa_rate"), 0.0);
    assert_int_equal(jint(r2l, "oa"), 2);
    assert_int_equal(jint(r2l, "oh"), 0);
    assert_near(json_object_get(r2l, "oa_rate"), 1.0);
    assert_int_equal(jint(r2f, "oa"), 2);
    assert_int_equal(jint(r2f, "oh"), 0);
    assert_near(json_object_get(r2f, "oa_rate"), 1.0);
    assert_role(r1l, 4, 0, 2, 2, 0.0);
    assert_role(r1f, 3, 0, 1, 2, 0.0);
    assert_role(r2l, 3, 2, 0, 1, 1.0);
    assert_role(r2f, 4, 2, 0, 2, 1.0);

    /* the self-discussion: one open dialogue, so every share is undefined */
    json_t *s = json_array_get(ds, 1);
    assert_string_equal(jstr(s, "kind"), "self-discussion");
    assert_string_equal(json_string_value(json_array_get(json_object_get(s, "reviewers"), 0)),
                        "m\x1b[31m@0.2");
    assert_int_equal(jint(s, "dialogues"), 1);
    assert_int_equal(jint(s, "open"), 1);
    assert_int_equal(jint(s, "done"), 0);
    assert_false(json_is_true(json_object_get(s, "stop_on_agreement")));
    assert_true(json_is_false(json_object_get(s, "stop_on_agreement")));
    assert_null_key(s, "mean_turns");
    assert_null_key(s, "pda");
    assert_null_key(s, "pda_ci");
    assert_null_key(s, "first_share_before");
    assert_null_key(s, "first_share_after");
    assert_int_equal(jint(s, "n_labelled"), 0);
    json_t *sat = json_object_get(s, "agreement_turns");
    assert_int_equal(json_object_size(sat), 4); /* "0", "1", "2" (max_turns 2), "never" */
    assert_int_equal(jint(sat, "2"), 0);
    assert_int_equal(jint(sat, "never"), 0);
    json_t *sr = json_array_get(json_object_get(s, "reviewer_stats"), 0);
    assert_null_key(sr, "initial_accuracy");
    assert_null_key(json_object_get(sr, "leader"), "oa_rate");
    json_decref(root);
    arb_discussion_stats_destroy(st);
}

/* Issue 12: OA / OH counted per discussion (PRD's way) differ from the per-turn counts when a
** reviewer holds over several turns, holds and then yields, or meets no disagreement. */
static void per_discussion_oa_oh(void **state)
{
    fixture *f = *state;
    const char *k = "discussion";
    /* X1 r1 leads "121212": t2 r1 own 1 other 2 says 1 OH; t3 r2 own 2 other 1 says 2 OH;
    **    t4 r1 OH; t5 r2 OH. r1 leader: 2 OH turns, one OH discussion; r2 follower the same.
    ** X2 r1 leads "121221": t2 r1 OH; t3 r2 OH; t4 r1 own 1 other 2 says 2 OA; t5 r2 own 2
    **    other 2: agreed, nothing. r1 leader: OH 1 + OA 1 turns, an OA discussion (altered at
    **    least once); r2 follower: 1 OH turn, an OH discussion.
    ** X3 r2 leads "12E2": t2 r2 own 1 other 2 says E: neither; t3 r1 own 2 other 1 says 2 OH.
    **    r2 leader: a discussion with neither; r1 follower: OH.
    ** X4 r2 leads "1121": t2 r2 own 1 other 1 (no disagreement) says 2: nothing; t3 r1 own 1
    **    other 2 says 1 OH. r2 leader: neither (it changed, but not after disagreement);
    **    r1 follower: OH.
    ** X5 r1 leads, failed, "1222": not counted. */
    put_discussion(f, k, config_d, "q1", "mA", "mB", "r1", "r2", "done", "2", "121212");
    put_discussion(f, k, config_d, "q2", "mA", "mB", "r1", "r2", "done", "1", "121221");
    put_discussion(f, k, config_d, "q3", "mA", "mB", "r2", "r1", "done", "2", "12E2");
    put_discussion(f, k, config_d, "q4", "mA", "mB", "r2", "r1", "done", "1", "1121");
    put_discussion(f, k, config_d, "q5", "mA", "mB", "r1", "r2", "failed", "E", "1222");
    arb_discussion_stats *st = compute(f, NULL);
    json_t *root = as_json(st);
    json_t *d = json_array_get(json_object_get(root, "discussions"), 0);
    json_t *rs = json_object_get(d, "reviewer_stats");
    json_t *r1 = json_array_get(rs, 0), *r2 = json_array_get(rs, 1);
    assert_string_equal(jstr(r1, "reviewer"), "r1");
    /* per discussion:
    **   r1 leader X1 OH, X2 OA -> 2: OA 1, OH 1, neither 0, rate 1/2
    **   r1 follower X3 OH, X4 OH -> 2: OA 0, OH 2, neither 0, rate 0
    **   r2 leader X3, X4 -> 2: OA 0, OH 0, neither 2, rate undefined
    **   r2 follower X1 OH, X2 OH -> 2: OA 0, OH 2, neither 0, rate 0
    ** per turn:
    **   r1 leader OA 1 (X2 t4), OH 3 (X1 t2 t4, X2 t2), rate 1/4; r1 follower OA 0, OH 2;
    **   r2 leader 0, 0; r2 follower OA 0, OH 3 (X1 t3 t5, X2 t3) */
    json_t *r1l = json_object_get(r1, "leader"), *r1f = json_object_get(r1, "follower");
    json_t *r2l = json_object_get(r2, "leader"), *r2f = json_object_get(r2, "follower");
    assert_role(r1l, 2, 1, 1, 0, 0.5);
    assert_role(r1f, 2, 0, 2, 0, 0.0);
    assert_role(r2l, 2, 0, 0, 2, NAN);
    assert_role(r2f, 2, 0, 2, 0, 0.0);
    /* per turn: oa, oh, oa_rate */
    assert_int_equal(jint(r1l, "oa"), 1);
    assert_int_equal(jint(r1l, "oh"), 3);
    assert_near(json_object_get(r1l, "oa_rate"), 0.25);
    assert_int_equal(jint(r1f, "oa"), 0);
    assert_int_equal(jint(r1f, "oh"), 2);
    assert_int_equal(jint(r2l, "oa") + jint(r2l, "oh"), 0);
    assert_null_key(r2l, "oa_rate");
    assert_int_equal(jint(r2f, "oa"), 0);
    assert_int_equal(jint(r2f, "oh"), 3);
    json_decref(root);

    /* the text: per discussion first, per turn as the labelled second figure */
    char *text = arb_discussion_stats_to_text(st);
    assert_non_null(text);
    const char *row = strstr(text, "\n    r1 ");
    assert_non_null(row);
    long long n[10];
    double rate[2];
    assert_int_equal(sscanf(row, " r1 n/a 0 %lld %lld %lld %lld %lf%% %lld %lld %lld %lld %lf%%",
                            &n[0], &n[1], &n[2], &n[3], &rate[0], &n[4], &n[5], &n[6], &n[7],
                            &rate[1]),
                     10);
    assert_true(n[0] == 2 && n[1] == 1 && n[2] == 1 && n[3] == 0 && rate[0] == 50.0);
    assert_true(n[4] == 2 && n[5] == 0 && n[6] == 2 && n[7] == 0 && rate[1] == 0.0);
    const char *turns = strstr(text, "per turn ");
    assert_non_null(turns);
    row = strstr(turns, "\n    r1 ");
    assert_non_null(row);
    assert_int_equal(sscanf(row, " r1 %lld %lld %lf%% %lld %lld", &n[0], &n[1], &rate[0], &n[2],
                            &n[3]),
                     5);
    assert_true(n[0] == 1 && n[1] == 3 && rate[0] == 25.0 && n[2] == 0 && n[3] == 2);
    assert_non_null(strstr(text, "OA / OH per discussion"));
    assert_non_null(strstr(text, "per turn (second figure)"));
    arb_free(text);
    arb_discussion_stats_destroy(st);
}

/* The PDA interval: items resampled, so 3 units q1 (2 of 2 right), q2 (1 of 1), q5 (0 of 1).
** A resample of only q5 gives 0 with chance (1/3)^3 = 3.7% > 2.5%, and one without q5 gives 1
** with chance (2/3)^3 = 29.6% > 2.5%: with 1000 resamples the 95% interval is [0, 1], which
** brackets 0.75. The same seed gives the same interval; no resamples, no interval. */
static void pda_interval(void **state)
{
    fixture *f = *state;
    script(f);
    arb_discussion_stats_params p = arb_discussion_stats_default_params();
    assert_int_equal(p.bootstrap, 1000);
    assert_int_equal(p.use_labels, 1);
    arb_discussion_stats *st = compute(f, &p);
    json_t *root = as_json(st);
    json_t *d = json_array_get(json_object_get(root, "discussions"), 0);
    json_t *ci = json_object_get(d, "pda_ci");
    assert_int_equal(json_array_size(ci), 2);
    double lo = json_number_value(json_array_get(ci, 0));
    double hi = json_number_value(json_array_get(ci, 1));
    assert_true(lo <= 0.75 && 0.75 <= hi);
    assert_near(json_array_get(ci, 0), 0.0);
    assert_near(json_array_get(ci, 1), 1.0);
    json_decref(root);
    arb_discussion_stats_destroy(st);

    /* a second run with the same seed: identical text */
    arb_discussion_stats *a = compute(f, &p), *b = compute(f, &p);
    char *ta = arb_discussion_stats_to_json(a), *tb = arb_discussion_stats_to_json(b);
    assert_string_equal(ta, tb);
    arb_free(ta);
    arb_free(tb);
    arb_discussion_stats_destroy(a);
    arb_discussion_stats_destroy(b);

    p.bootstrap = 0;
    st = compute(f, &p);
    root = as_json(st);
    d = json_array_get(json_object_get(root, "discussions"), 0);
    assert_null_key(d, "pda_ci");
    assert_near(json_object_get(d, "pda"), 0.75);
    json_decref(root);
    arb_discussion_stats_destroy(st);
}

/* Without labels: every label metric is null, the rest is unchanged. */
static void without_labels(void **state)
{
    fixture *f = *state;
    script(f);
    arb_discussion_stats_params p = arb_discussion_stats_default_params();
    p.use_labels = 0;
    arb_discussion_stats *st = compute(f, &p);
    json_t *root = as_json(st);
    json_t *d = json_array_get(json_object_get(root, "discussions"), 0);
    const char *nulls[] = {"pda", "pda_ci", "n_labelled", "n_label_draws", "n_label_ties"};
    for (size_t i = 0; i < sizeof nulls / sizeof *nulls; i++) assert_null_key(d, nulls[i]);
    json_t *r1 = json_array_get(json_object_get(d, "reviewer_stats"), 0);
    assert_null_key(r1, "initial_accuracy");
    assert_null_key(r1, "n_initial_labelled");
    assert_int_equal(jint(json_object_get(r1, "leader"), "oh"), 2);
    assert_int_equal(jint(d, "done"), 7);
    json_decref(root);
    char *text = arb_discussion_stats_to_text(st);
    assert_non_null(strstr(text, "labels not used"));
    arb_free(text);
    arb_discussion_stats_destroy(st);
}

/* A label on both orientations: the one matching how the answers were shown wins. */
static void direct_label_wins(void **state)
{
    fixture *f = *state;
    /* (q1, mA, mB) = a and (q1, mB, mA) = a: for a dialogue showing mB first, the direct
    ** (q1, mB, mA) a gives '1'; the reversed one would give '2'. Final 1 -> PDA 1. */
    import_labels(f, LABEL("q1", "mA", "mB", "a", "x") LABEL("q1", "mB", "mA", "a", "x"));
    put_discussion(f, "discussion", config_d, "q1", "mB", "mA", "r1", "r2", "done", "1", "11");
    arb_discussion_stats_params p = arb_discussion_stats_default_params();
    p.bootstrap = 0;
    arb_discussion_stats *st = compute(f, &p);
    json_t *root = as_json(st);
    json_t *d = json_array_get(json_object_get(root, "discussions"), 0);
    assert_near(json_object_get(d, "pda"), 1.0);
    assert_int_equal(jint(d, "n_labelled"), 1);
    json_decref(root);
    arb_discussion_stats_destroy(st);
}

/* A config without reviewers falls back to the first dialogue's participants in byte order;
** a config without max_turns sizes the histogram by what was observed. */
static void config_fallbacks(void **state)
{
    fixture *f = *state;
    put_discussion(f, "discussion", "{}", "q1", "mA", "mB", "zed", "amy", "done", "2", "1222");
    arb_discussion_stats *st = compute(f, NULL);
    json_t *root = as_json(st);
    json_t *d = json_array_get(json_object_get(root, "discussions"), 0);
    json_t *rv = json_object_get(d, "reviewers");
    assert_string_equal(json_string_value(json_array_get(rv, 0)), "amy");
    assert_string_equal(json_string_value(json_array_get(rv, 1)), "zed");
    assert_null_key(d, "leader");
    assert_null_key(d, "max_turns");
    assert_null_key(d, "stop_on_agreement");
    /* "1222": agreement at k=2 -> turn 1: bins "0", "1" and "never" */
    json_t *at = json_object_get(d, "agreement_turns");
    assert_int_equal(json_object_size(at), 3);
    assert_int_equal(jint(at, "0"), 0);
    assert_int_equal(jint(at, "1"), 1);
    /* zed leads: turn 2 zed own 1 other 2 says 2 -> zed (reviewer 1) leader OA */
    json_t *zed = json_array_get(json_object_get(d, "reviewer_stats"), 1);
    assert_string_equal(jstr(zed, "reviewer"), "zed");
    assert_int_equal(jint(json_object_get(zed, "leader"), "oa"), 1);
    /* no labels in the store: nothing labelled, PDA undefined */
    assert_int_equal(jint(d, "n_unlabelled"), 1);
    assert_null_key(d, "pda");
    json_decref(root);
    arb_discussion_stats_destroy(st);
}

/* Debates: agree rate of agent 2 and the final's match with either agent, done only. */
static void debate_numbers(void **state)
{
    fixture *f = *state;
    script(f);
    arb_discussion_stats *st = compute(f, NULL);
    json_t *root = as_json(st);
    json_t *dbs = json_object_get(root, "debates");
    assert_int_equal(json_array_size(dbs), 2);
    /* hard (sorted first): H1 A B final B, H2 C D final C, H3 open.
    **   agent 2 agrees 0 of 2; final = agent 1: H2 -> 1/2; final = agent 2: H1 -> 1/2 */
    json_t *h = json_array_get(dbs, 0);
    assert_string_equal(jstr(h, "kind"), "hard");
    assert_string_equal(jstr(h, "agent1"), "a1");
    assert_string_equal(jstr(h, "agent2"), "a2");
    assert_string_equal(jstr(h, "judge"), "j");
    assert_int_equal(jint(h, "dialogues"), 3);
    assert_int_equal(jint(h, "done"), 2);
    assert_int_equal(jint(h, "failed"), 0);
    assert_near(json_object_get(h, "agent2_agrees"), 0.0);
    assert_near(json_object_get(h, "final_is_agent1"), 0.5);
    assert_near(json_object_get(h, "final_is_agent2"), 0.5);
    /* soft: B1 A A final A, B2 A B final B, B3 B E final A, B4 failed (A A, not counted).
    **   agent 2 valid in B1, B2: agrees in B1 -> 1/2 (B4 would make it 2/3);
    **   finals valid in B1-B3: = agent 1 in B1 -> 1/3; = agent 2 in B1, B2 -> 2/3 */
    json_t *s = json_array_get(dbs, 1);
    assert_string_equal(jstr(s, "kind"), "soft");
    assert_int_equal(jint(s, "dialogues"), 4);
    assert_int_equal(jint(s, "done"), 3);
    assert_int_equal(jint(s, "failed"), 1);
    assert_near(json_object_get(s, "agent2_agrees"), 0.5);
    assert_int_equal(jint(s, "n_agent2_valid"), 2);
    assert_near(json_object_get(s, "final_is_agent1"), 1.0 / 3.0);
    assert_near(json_object_get(s, "final_is_agent2"), 2.0 / 3.0);
    assert_int_equal(jint(s, "n_final_valid"), 3);
    json_decref(root);
    arb_discussion_stats_destroy(st);
}

/* Every documented key is present in the JSON. */
static void json_keys(void **state)
{
    fixture *f = *state;
    script(f);
    arb_discussion_stats *st = compute(f, NULL);
    json_t *root = as_json(st);
    static const char *const dkeys[] = {
        "kind", "reviewers", "leader", "max_turns", "stop_on_agreement", "dialogues", "done",
        "failed", "open", "mean_turns", "pda", "pda_ci", "n_labelled", "n_label_draws",
        "n_label_ties", "first_share_before", "first_share_after", "agreement_turns",
        "reviewer_stats"};
    static const char *const rkeys[] = {"reviewer", "initial_accuracy", "n_initial_labelled",
                                        "leader", "follower"};
    static const char *const bkeys[] = {"kind", "agent1", "agent2", "judge", "dialogues",
                                        "done", "failed", "agent2_agrees", "final_is_agent1",
                                        "final_is_agent2"};
    json_t *d = json_array_get(json_object_get(root, "discussions"), 0);
    for (size_t i = 0; i < sizeof dkeys / sizeof *dkeys; i++)
        if (!json_object_get(d, dkeys[i])) fail_msg("discussion key \"%s\" missing", dkeys[i]);
    json_t *r = json_array_get(json_object_get(d, "reviewer_stats"), 0);
    for (size_t i = 0; i < sizeof rkeys / sizeof *rkeys; i++)
        if (!json_object_get(r, rkeys[i])) fail_msg("reviewer key \"%s\" missing", rkeys[i]);
    for (const char *const *k =
             (const char *const[]){"discussions", "oa_discussions", "oh_discussions",
                                   "neither_discussions", "oa_discussion_rate", "oa", "oh",
                                   "oa_rate", NULL};
         *k; k++)
        if (!json_object_get(json_object_get(r, "leader"), *k)) fail_msg("leader.%s missing", *k);
    json_t *b = json_array_get(json_object_get(root, "debates"), 0);
    for (size_t i = 0; i < sizeof bkeys / sizeof *bkeys; i++)
        if (!json_object_get(b, bkeys[i])) fail_msg("debate key \"%s\" missing", bkeys[i]);
    json_decref(root);
    arb_discussion_stats_destroy(st);
}

/* The text: the numbers above as a person reads them, and no raw escape character. */
static void text_rendering(void **state)
{
    fixture *f = *state;
    script(f);
    arb_discussion_stats *st = compute(f, NULL);
    char *text = arb_discussion_stats_to_text(st);
    assert_non_null(text);
    const char *want[] = {
        "Peer discussions (METHODS 7): 2 set-ups",
        "[1] discussion: reviewers r1 and r2, leader random, at most 4 turns, stop on "
        "agreement yes",
        "dialogues 9: done 7, failed 1, open 1",
        "mean discussion turns      1.71", /* 12/7 */
        "PDA (final vs experts)     75.0%  [0.0%, 100.0%] (95% bootstrap over 3 items)",
        "labelled dialogues         4 (left out: draw label c/d 1, annotators tied 1, "
        "unlabelled 1)",
        "before 64.3% (of 14 valid initial reviews), after 57.1% (of 7 valid finals)",
        "turn 0 (initial reviews)          2  28.6%", /* 2 of 7 */
        "turn 3                            1  14.3%",
        "never                             1  14.3%",
        "[2] self-discussion: reviewers m?[31m@0.2 and m@0.8",
        "PDA (final vs experts)     n/a\n", /* the self-discussion: nothing done */
        "Debates (METHODS 2.5): 2 set-ups",
        "hard: agent 2 was told to disagree",
        "50.0% (of 2)",
        "33.3% (of 3)",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(text, want[i])) fail_msg("text lacks \"%s\":\n%s", want[i], text);
    assert_null(strchr(text, 0x1b));
    /* the reviewer table, per discussion: r1 75.0% of 4; as leader 4 discussions, OA 0 OH 2
    ** neither 2; as follower 3, OA 0 OH 1 neither 2 */
    const char *row = strstr(text, "\n    r1 ");
    assert_non_null(row);
    int n_acc, ln, loa, loh, lne, fn, foa, foh, fne;
    double acc, lrate, frate;
    assert_int_equal(sscanf(row, " r1 %lf%% %d %d %d %d %d %lf%% %d %d %d %d %lf%%", &acc,
                            &n_acc, &ln, &loa, &loh, &lne, &lrate, &fn, &foa, &foh, &fne,
                            &frate),
                     12);
    assert_true(acc == 75.0 && n_acc == 4 && ln == 4 && loa == 0 && loh == 2 && lne == 2 &&
                lrate == 0.0 && fn == 3 && foa == 0 && foh == 1 && fne == 2 && frate == 0.0);
    /* per turn, the second table: OA 0 OH 2 as leader, 0 1 as follower */
    row = strstr(strstr(text, "per turn "), "\n    r1 ");
    assert_non_null(row);
    assert_int_equal(sscanf(row, " r1 %d %d %lf%% %d %d %lf%%", &loa, &loh, &lrate, &foa, &foh,
                            &frate),
                     6);
    assert_true(loa == 0 && loh == 2 && lrate == 0.0 && foa == 0 && foh == 1 && frate == 0.0);
    arb_free(text);
    arb_discussion_stats_destroy(st);
}

/* Errors: a bad level, missing arguments, a store whose tables cannot be read. */
static void errors(void **state)
{
    fixture *f = *state;
    arb_discussion_stats *st = (arb_discussion_stats *)f; /* must be reset to NULL */
    arb_discussion_stats_params p = arb_discussion_stats_default_params();
    p.ci_level = 1.5;
    assert_int_equal(arb_discussion_stats_compute(f->store, &p, &st), ARB_INVALID);
    assert_null(st);
    assert_non_null(strstr(arb_store_errmsg(f->store), "ci_level"));
    assert_int_equal(arb_discussion_stats_compute(NULL, NULL, &st), ARB_INVALID);
    assert_int_equal(arb_discussion_stats_compute(f->store, NULL, NULL), ARB_INVALID);
    exec_sql(f, "DROP TABLE dialogue_turns");
    assert_int_equal(arb_discussion_stats_compute(f->store, NULL, &st), ARB_DB);
    assert_null(st);
    assert_non_null(strstr(arb_store_errmsg(f->store), "discussion stats: cannot read"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(empty_store, setup, teardown),
        cmocka_unit_test_setup_teardown(discussion_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(per_discussion_oa_oh, setup, teardown),
        cmocka_unit_test_setup_teardown(pda_interval, setup, teardown),
        cmocka_unit_test_setup_teardown(without_labels, setup, teardown),
        cmocka_unit_test_setup_teardown(direct_label_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(config_fallbacks, setup, teardown),
        cmocka_unit_test_setup_teardown(debate_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(json_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(text_rendering, setup, teardown),
        cmocka_unit_test_setup_teardown(errors, setup, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
