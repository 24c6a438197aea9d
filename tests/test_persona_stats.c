/*
** test_persona_stats.c -- the persona bias analysis (persona_stats.c, METHODS §9) and its store
** reader (arb__store_each_persona_score): personas, calls and scores are written with plain
** SQL as the persona protocol stores them, and every number is checked against hand
** arithmetic: means, difference matrices (row minus column), combined scores, chi-squared
** statistics, p-values and Holm's correction on tiny stores; phase-2 win rates and the
** position effect, kept apart (a pure position bias leaves the win rates at 50%); a store with
** a large injected identity effect is flagged and one without is not; E counts; JSON keys and
** nulls; the category filter; bad parameters; the empty store.
**
** Each test gets a fresh store with scenarios s1..s10. Run one test alone with ARB_TEST=<name>.
*/
#include "internal.h"
#include "testutil.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define EPS 1e-9

typedef struct fixture {
    char dir[128];
    arb_store *store;
    int n_calls; /* calls written, for unique keys */
} fixture;

static const char items_jsonl[] =
    "{\"id\":\"s1\",\"question\":\"one\",\"category\":\"clinic\",\"variant\":\"nurse\"}\n"
    "{\"id\":\"s2\",\"question\":\"two\",\"category\":\"clinic\",\"variant\":\"surgeon\"}\n"
    "{\"id\":\"s3\",\"question\":\"three\",\"category\":\"bank\"}\n"
    "{\"id\":\"s4\",\"question\":\"four\"}\n"
    "{\"id\":\"s5\",\"question\":\"five\"}\n"
    "{\"id\":\"s6\",\"question\":\"six\"}\n"
    "{\"id\":\"s7\",\"question\":\"seven\"}\n"
    "{\"id\":\"s8\",\"question\":\"eight\"}\n"
    "{\"id\":\"s9\",\"question\":\"nine\"}\n"
    "{\"id\":\"s10\",\"question\":\"ten\"}\n";

enum { FEMALE = 1, MALE = 2, MUSLIM = 3, ATHEIST = 4 };

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f; /* teardown frees what setup made, even when setup fails */
    if (arb_test_store_with_items("test_persona", items_jsonl, f->dir, sizeof f->dir, &f->store))
        return -1;
    return arb_test_exec_sql(f->store,
                             "INSERT INTO personas (id, category, identity) VALUES "
                             "(1, 'gender', 'female'), (2, 'gender', 'male'), "
                             "(3, 'religion', 'Muslim'), (4, 'religion', 'Atheist')");
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

#define exec_sql(f, ...) assert_int_equal(arb_test_exec_sql((f)->store, __VA_ARGS__), 0)

/* A call of judge with repetition rep; returns its id. */
static long long put_call(fixture *f, const char *judge, int rep)
{
    exec_sql(f,
             "INSERT INTO calls (key, judge_name, model, request, rep, ok, content) "
             "VALUES ('k%d', %Q, %Q, '{}', %d, 1, '{}')",
             ++f->n_calls, judge, judge, rep);
    return arb_test_query_int(f->store, "SELECT max(id) FROM calls");
}

/* One score row; value NAN is stored as NULL (E). */
static void put_score(fixture *f, const char *protocol, const char *judge, const char *item,
                      const char *subject, int persona, int position, const char *metric,
                      double value, long long call)
{
    char v[32];
    if (isnan(value)) snprintf(v, sizeof v, "NULL");
    else snprintf(v, sizeof v, "%.17g", value);
    exec_sql(f,
             "INSERT INTO scores (protocol, judge_name, item_id, subject, persona_id, position, "
             "metric, value, call_id) VALUES (%Q, %Q, %Q, %Q, %d, %d, %Q, %s, %lld)",
             protocol, judge, item, subject, persona, position, metric, v, call);
}

/* Phase 1: response scored under persona: accuracy acc, creativity cre (NAN: E). */
static long long phase1(fixture *f, const char *judge, const char *item, const char *response,
                        int persona, double acc, double cre, int rep)
{
    long long call = put_call(f, judge, rep);
    exec_sql(f,
             "INSERT INTO persona_attributions (call_id, position, persona_id, item_id, response) "
             "VALUES (%lld, 0, %d, %Q, %Q)",
             call, persona, item, response);
    put_score(f, "persona1", judge, item, response, persona, 0, "accuracy", acc, call);
    put_score(f, "persona1", judge, item, response, persona, 0, "creativity", cre, call);
    return call;
}

/* Phase 2: first shown attributed to p1 with scores (a1, c1), second to p2 with (a2, c2);
** preferred 0 first, 1 second, -1 E (every value NULL). */
static void phase2(fixture *f, const char *judge, const char *item, int p1, double a1, double c1,
                   int p2, double a2, double c2, int preferred)
{
    long long call = put_call(f, judge, 0);
    int pe = preferred < 0;
    exec_sql(f,
             "INSERT INTO persona_attributions (call_id, position, persona_id, item_id, response) "
             "VALUES (%lld, 0, %d, %Q, 'response1'), (%lld, 1, %d, %Q, 'response2')",
             call, p1, item, call, p2, item);
    put_score(f, "persona2", judge, item, "response1", p1, 0, "accuracy", pe ? NAN : a1, call);
    put_score(f, "persona2", judge, item, "response1", p1, 0, "creativity", pe ? NAN : c1, call);
    put_score(f, "persona2", judge, item, "response1", p1, 0, "preferred",
              pe ? NAN : preferred == 0, call);
    put_score(f, "persona2", judge, item, "response2", p2, 1, "accuracy", pe ? NAN : a2, call);
    put_score(f, "persona2", judge, item, "response2", p2, 1, "creativity", pe ? NAN : c2, call);
    put_score(f, "persona2", judge, item, "response2", p2, 1, "preferred",
              pe ? NAN : preferred == 1, call);
}

/* Who wins a phase-2 call of the design. */
typedef enum { FIRST_WINS, FEMALE_WINS } winner_rule;

/* The four calls of one pairing {female, male} on item (labels exchanged, positions swapped):
** female candidates score (8, 6), male ones (6, 6). */
static void pairing(fixture *f, const char *judge, const char *item, winner_rule rule)
{
    static const int order[4][2] = {{FEMALE, MALE}, {MALE, FEMALE}, {MALE, FEMALE}, {FEMALE, MALE}};
    for (int k = 0; k < 4; k++) {
        int p1 = order[k][0], p2 = order[k][1];
        int preferred = rule == FIRST_WINS ? 0 : p1 == FEMALE ? 0 : 1;
        phase2(f, judge, item, p1, p1 == FEMALE ? 8 : 6, 6, p2, p2 == FEMALE ? 8 : 6, 6,
               preferred);
    }
}

static arb_persona_stats *compute(fixture *f, size_t bootstrap, const char *category)
{
    arb_persona_stats_params p = arb_persona_stats_default_params();
    p.bootstrap = bootstrap;
    p.category = category;
    arb_persona_stats *ps = NULL;
    arb_status st = arb_persona_stats_compute(f->store, &p, &ps);
    if (st) fprintf(stderr, "compute: %s\n", arb_store_errmsg(f->store));
    assert_int_equal(st, ARB_OK);
    assert_non_null(ps);
    return ps;
}

static size_t find_identity(const arb_persona_row *r, const char *name)
{
    for (size_t i = 0; i < r->n_identities; i++)
        if (!strcmp(r->identities[i], name)) return i;
    fail_msg("identity %s missing", name);
    return 0;
}

/* ---- panel before/after ------------------------------------------------------------------- */

/* A phase-1 call of protocol (persona1 or panel1) in round: female and male both scored. */
static void panel_scores(fixture *f, const char *protocol, const char *judge, int round,
                         double fa, double fc, double ma, double mc)
{
    const int who[2] = {FEMALE, MALE};
    const double acc[2] = {fa, ma}, cre[2] = {fc, mc};
    for (int k = 0; k < 2; k++) {
        long long call = put_call(f, judge, round);
        exec_sql(f,
                 "INSERT INTO persona_attributions (call_id, position, persona_id, item_id, "
                 "response) VALUES (%lld, 0, %d, 's1', 'response1')",
                 call, who[k]);
        put_score(f, protocol, judge, "s1", "response1", who[k], 0, "accuracy", acc[k], call);
        put_score(f, protocol, judge, "s1", "response1", who[k], 0, "creativity", cre[k], call);
        exec_sql(f, "UPDATE scores SET round = %d WHERE call_id = %lld", round, call);
    }
}

/* Sets agent b's round-2 male scores of metric (LIKE pattern) to value, then checks round 2's
** spread and the direction. */
static void rescore_b_male(fixture *f, const char *metric, double value, double spread,
                           const char *direction)
{
    exec_sql(f, "UPDATE scores SET value = %g WHERE protocol = 'panel1' AND judge_name = 'b' AND "
                "round = 2 AND persona_id = %d AND metric LIKE %Q",
             value, MALE, metric);
    arb_persona_stats *ps = compute(f, 0, NULL);
    const arb_persona_panel *pp = arb_persona_stats_panel_at(ps, 0);
    assert_float_equal(pp->rounds[2].identity_spread, spread, 1e-12);
    assert_string_equal(pp->direction, direction);
    arb_persona_stats_destroy(ps);
}

/* Spreads by hand (combined = mean of accuracy and creativity):
** round 0: a female 7 male 6 -> 1; b female 9 male 5 -> 4; mean 2.5
** round 1: a 7 vs 6 -> 1; b 7 vs 5 -> 2; mean 1.5
** round 2: a 6 vs 6 -> 0; b 6 vs 5 -> 1; mean 0.5
** consensus: female 6, male 5.5 -> 0.5; 0.5 < 2.5: toward parity. */
static void panel_before_after(void **state)
{
    fixture *f = *state;
    arb_persona_stats *ps = compute(f, 0, NULL);
    assert_int_equal(arb_persona_stats_n_panels(ps), 0); /* no panel: no view */
    assert_null(arb_persona_stats_panel_at(ps, 0));
    arb_persona_stats_destroy(ps);
    panel_scores(f, "persona1", "a", 0, 8, 6, 6, 6);
    panel_scores(f, "persona1", "b", 0, 9, 9, 5, 5);
    panel_scores(f, "panel1", "a", 1, 7, 7, 6, 6);
    panel_scores(f, "panel1", "b", 1, 7, 7, 5, 5);
    panel_scores(f, "panel1", "a", 2, 6, 6, 6, 6);
    panel_scores(f, "panel1", "b", 2, 7, 5, 5, 5);
    panel_scores(f, "persona1", "panel(a,b)", 0, 6, 6, 6, 5);
    ps = compute(f, 0, NULL);
    assert_int_equal(arb_persona_stats_count(ps), 3); /* a, b, panel(a,b): rounds not entries */
    assert_int_equal(arb_persona_stats_n_panels(ps), 1);
    const arb_persona_panel *pp = arb_persona_stats_panel_at(ps, 0);
    assert_string_equal(pp->panel, "panel(a,b)");
    assert_int_equal(pp->n_members, 2);
    assert_string_equal(pp->members[0], "a");
    assert_string_equal(pp->members[1], "b");
    assert_string_equal(pp->category, "gender");
    assert_int_equal(pp->phase, 1);
    assert_int_equal(pp->n_rounds, 3);
    const double want[3] = {2.5, 1.5, 0.5};
    for (int r = 0; r < 3; r++) {
        assert_int_equal(pp->rounds[r].round, r);
        assert_float_equal(pp->rounds[r].identity_spread, want[r], 1e-12);
        assert_true(isnan(pp->rounds[r].win_rate_spread));
    }
    assert_float_equal(pp->consensus_spread, 0.5, 1e-12);
    assert_string_equal(pp->direction, "toward parity");
    char *json = arb_persona_stats_to_json(ps), *text = arb_persona_stats_to_text(ps);
    assert_non_null(strstr(json, "\"panels\""));
    assert_non_null(strstr(json, "\"identity_spread\": 1.5"));
    assert_non_null(strstr(json, "\"direction\": \"toward parity\""));
    assert_non_null(strstr(text, "panel(a,b) \xc2\xb7 gender \xc2\xb7 phase 1 \xc2\xb7 identity "
                                 "spread: round 0   2.50, round 1   1.50, round 2   0.50, "
                                 "consensus   0.50 -> toward parity"));
    arb_free(json);
    arb_free(text);
    arb_persona_stats_destroy(ps);
    /* agent b's last round: male 1 -> spreads 0 and 6 - 1 = 5, mean 2.5 = round 0 */
    rescore_b_male(f, "%", 1, 2.5, "unchanged");
    /* male accuracy 0: male 0.5, spread 5.5, mean 2.75 > 2.5 */
    rescore_b_male(f, "accuracy", 0, 2.75, "away from parity");
    /* without its rounds the panel has round 0 only and no direction */
    exec_sql(f, "DELETE FROM scores WHERE protocol = 'panel1'");
    ps = compute(f, 0, NULL);
    pp = arb_persona_stats_panel_at(ps, 0);
    assert_int_equal(pp->n_rounds, 1);
    assert_float_equal(pp->rounds[0].identity_spread, 2.5, 1e-12);
    assert_null(pp->direction);
    arb_persona_stats_destroy(ps);
}

/* ---- the store reader --------------------------------------------------------------------- */

typedef struct seen_rows {
    int n;
    char text[8][160];
} seen_rows;

static int collect(void *ud, const arb__persona_score_row *r)
{
    seen_rows *s = ud;
    if (s->n < 8)
        snprintf(s->text[s->n], sizeof s->text[0], "%s|%s|%s|%s|%s|%s|%d|%d|%s|%g|%d|%s|%s|%s",
                 r->protocol, r->judge_name, r->item_id, r->subject, r->category, r->identity,
                 r->position, r->round, r->metric, r->value, r->rep, r->base, r->variant,
                 r->reason ? r->reason : "(null)");
    s->n++;
    return 0;
}

static int stop_at_first(void *ud, const arb__persona_score_row *r)
{
    (void)r;
    ++*(int *)ud;
    return 1;
}

/* Rows come joined with their identity, repetition, base and variant, in the declared order
** (judge, protocol, category, call, position, metric); a NULL value is NAN; reason is NULL
** unless an E's reason was stored. */
static void reader_rows(void **state)
{
    fixture *f = *state;
    seen_rows s = {0};
    assert_int_equal(arb__store_each_persona_score(f->store, collect, &s), ARB_OK);
    assert_int_equal(s.n, 0);
    phase1(f, "j2", "s3", "response1", MUSLIM, 5, NAN, 0);
    phase1(f, "j1", "s2", "response2", MALE, 7, 3, 2);
    phase1(f, "j1", "s1", "response1", FEMALE, 9, 4, 0);
    assert_int_equal(arb__store_each_persona_score(f->store, collect, &s), ARB_OK);
    assert_int_equal(s.n, 6);
    assert_string_equal(s.text[0], "persona1|j1|s2|response2|gender|male|0|0|accuracy|7|2|clinic|surgeon|(null)");
    assert_string_equal(s.text[1], "persona1|j1|s2|response2|gender|male|0|0|creativity|3|2|clinic|surgeon|(null)");
    assert_string_equal(s.text[2], "persona1|j1|s1|response1|gender|female|0|0|accuracy|9|0|clinic|nurse|(null)");
    assert_string_equal(s.text[4], "persona1|j2|s3|response1|religion|Muslim|0|0|accuracy|5|0|bank||(null)");
    assert_string_equal(s.text[5], "persona1|j2|s3|response1|religion|Muslim|0|0|creativity|nan|0|bank||(null)");
    exec_sql(f, "UPDATE scores SET reason = 'missing metric' WHERE value IS NULL");
    s.n = 0;
    assert_int_equal(arb__store_each_persona_score(f->store, collect, &s), ARB_OK);
    assert_string_equal(s.text[5], "persona1|j2|s3|response1|religion|Muslim|0|0|creativity|nan|0|bank||missing metric");
    assert_string_equal(s.text[4], "persona1|j2|s3|response1|religion|Muslim|0|0|accuracy|5|0|bank||(null)");
    int calls = 0; /* a nonzero return stops */
    assert_int_equal(arb__store_each_persona_score(f->store, stop_at_first, &calls), ARB_OK);
    assert_int_equal(calls, 1);
    assert_int_equal(arb__store_each_persona_score(f->store, NULL, NULL), ARB_INVALID);
}

/* ---- phase 1 ------------------------------------------------------------------------------- */

/* The phase-1 store of the hand computation: s1, s2 scored under female and male, plus an E.
**   female: accuracy 8, 8 -> 8;    creativity 6, 7 -> 6.5;  combined 7.25
**   male:   accuracy 6, 7 -> 6.5;  creativity 6, 5 -> 5.5;  combined 6
** accuracy table (levels 6 7 8): female 0 0 2, male 1 1 0; every expected count 0.5 or 1:
**   chi2 = 4 (0.25/0.5) + 2 (1/1) = 4, df 2, p = e^-2, V = sqrt(4 / 4) = 1
** creativity table (levels 5 6 7): female 0 1 1, male 1 1 0: chi2 = 4 (0.25/0.5) = 2, df 2,
**   p = e^-1, V = sqrt(2 / 4)
** Holm over the 2 tests: 2 e^-2 = 0.2707 and max(0.2707, e^-1) = e^-1. */
static void phase1_store(fixture *f)
{
    phase1(f, "j1", "s1", "response1", FEMALE, 8, 6, 0);
    phase1(f, "j1", "s1", "response1", MALE, 6, 6, 0);
    phase1(f, "j1", "s2", "response1", FEMALE, 8, 7, 0);
    phase1(f, "j1", "s2", "response1", MALE, 7, 5, 0);
    phase1(f, "j1", "s1", "response2", FEMALE, NAN, NAN, 0); /* E */
}

static void phase1_numbers(void **state)
{
    fixture *f = *state;
    phase1_store(f);
    arb_persona_stats *ps = compute(f, 0, NULL);
    assert_int_equal(arb_persona_stats_count(ps), 1);
    const arb_persona_row *r = arb_persona_stats_row_at(ps, 0);
    assert_null(arb_persona_stats_row_at(ps, 1));
    assert_string_equal(r->judge, "j1");
    assert_string_equal(r->category, "gender");
    assert_int_equal(r->phase, 1);
    assert_int_equal(r->n_identities, 2);
    assert_string_equal(r->identities[0], "female");
    assert_string_equal(r->identities[1], "male");
    assert_int_equal(r->n_metrics, 2);
    assert_string_equal(r->metrics[0], "accuracy");
    assert_string_equal(r->metrics[1], "creativity");
    assert_int_equal(r->n_calls, 5);
    assert_int_equal(r->n_errors, 1);
    assert_int_equal(r->n_scenarios, 2);
    /* means, identity x metric */
    assert_true(fabs(r->mean[0] - 8.0) < EPS && fabs(r->mean[1] - 6.5) < EPS);
    assert_true(fabs(r->mean[2] - 6.5) < EPS && fabs(r->mean[3] - 5.5) < EPS);
    assert_int_equal(r->n_scores[0], 2);
    assert_true(fabs(r->combined[0] - 7.25) < EPS && fabs(r->combined[1] - 6.0) < EPS);
    /* difference matrices, row minus column */
    assert_true(fabs(r->diff[0 * 4 + 0 * 2 + 1] - 1.5) < EPS);  /* accuracy female - male */
    assert_true(fabs(r->diff[0 * 4 + 1 * 2 + 0] + 1.5) < EPS);  /* accuracy male - female */
    assert_true(fabs(r->diff[0 * 4 + 0 * 2 + 0]) < EPS);
    assert_true(fabs(r->diff[1 * 4 + 0 * 2 + 1] - 1.0) < EPS);  /* creativity */
    assert_true(fabs(r->combined_diff[1] - 1.25) < EPS && fabs(r->combined_diff[2] + 1.25) < EPS);
    /* no intervals without a bootstrap; nothing of phase 2 */
    assert_true(isnan(r->mean_ci[0]) && isnan(r->combined_ci[1]));
    assert_null(r->win_rate);
    assert_true(isnan(r->first_shown_rate));
    /* chi-squared and Holm */
    assert_int_equal(r->n_chi2, 2);
    const arb_persona_chi2 *a = &r->chi2[0], *c = &r->chi2[1];
    assert_string_equal(a->metric, "accuracy");
    assert_int_equal(a->n, 4);
    assert_int_equal(a->n_levels, 3);
    assert_true(fabs(a->test.statistic - 4.0) < EPS && a->test.df == 2.0);
    assert_true(fabs(a->test.p_value - exp(-2.0)) < 1e-9);
    assert_true(fabs(a->test.cramers_v - 1.0) < EPS);
    assert_int_equal(a->test.n_expected_below_5, 6);
    assert_true(fabs(c->test.statistic - 2.0) < EPS && fabs(c->test.p_value - exp(-1.0)) < 1e-9);
    assert_true(fabs(c->test.cramers_v - sqrt(0.5)) < EPS);
    assert_true(fabs(a->p_holm - 2.0 * exp(-2.0)) < 1e-9);
    assert_true(fabs(c->p_holm - exp(-1.0)) < 1e-9);
    assert_int_equal(a->significant, 0);
    assert_int_equal(c->significant, 0);
    assert_int_equal(arb_persona_stats_n_tests(ps), 2);
    assert_int_equal(arb_persona_stats_n_significant(ps), 0);
    arb_persona_stats_destroy(ps);
}

/* Intervals resample scenarios: female's accuracy is 8 in both, so its interval is [8, 8];
** male's lies within [6, 7]; the same seed gives the same intervals, another seed may not. */
static void phase1_intervals(void **state)
{
    fixture *f = *state;
    phase1_store(f);
    arb_persona_stats *ps = compute(f, 400, NULL), *again = compute(f, 400, NULL);
    const arb_persona_row *r = arb_persona_stats_row_at(ps, 0);
    const arb_persona_row *q = arb_persona_stats_row_at(again, 0);
    assert_true(r->mean_ci[0] == 8.0 && r->mean_ci[1] == 8.0);
    assert_true(r->mean_ci[4] >= 6.0 && r->mean_ci[4] < 6.5 && r->mean_ci[5] > 6.5 &&
                r->mean_ci[5] <= 7.0);
    assert_true(r->combined_ci[2] >= 5.5 && r->combined_ci[3] <= 6.5);
    for (int k = 0; k < 8; k++) assert_true(r->mean_ci[k] == q->mean_ci[k]);
    /* the point estimates do not depend on the bootstrap */
    assert_true(fabs(r->mean[2] - 6.5) < EPS);
    arb_persona_stats_destroy(ps);
    arb_persona_stats_destroy(again);
}

/* ---- phase 2 ------------------------------------------------------------------------------- */

/* s1: the first shown always wins (position); s2: female always wins (identity); one E call.
**   female wins 2 of 4 (s1) + 4 of 4 (s2) = 6 of 8 -> 75%, male 2 of 8 -> 25%;
**   first shown wins 4 of 4 (s1) + 2 of 4 (s2) = 6 of 8 -> 75%;
**   preferred table female 6 2, male 2 6: expected 4 each, chi2 = 4 (4/4) = 4, df 1,
**   p = erfc(sqrt 2) = 0.0455;
**   accuracy: female candidates all 8, male all 6: table 0 8 / 8 0, chi2 16, df 1,
**   p = erfc(sqrt 8); creativity: every candidate 6, one level: undefined.
**   Holm over the 2 defined tests: 2 erfc(sqrt 8); max(that, erfc(sqrt 2)) = erfc(sqrt 2). */
static void phase2_numbers(void **state)
{
    fixture *f = *state;
    pairing(f, "j1", "s1", FIRST_WINS);
    pairing(f, "j1", "s2", FEMALE_WINS);
    phase2(f, "j1", "s3", FEMALE, 0, 0, MALE, 0, 0, -1); /* E */
    arb_persona_stats *ps = compute(f, 0, NULL);
    assert_int_equal(arb_persona_stats_count(ps), 1);
    const arb_persona_row *r = arb_persona_stats_row_at(ps, 0);
    assert_int_equal(r->phase, 2);
    assert_int_equal(r->n_calls, 9);
    assert_int_equal(r->n_errors, 1);
    assert_int_equal(r->n_pairs, 8);
    assert_int_equal(r->n_scenarios, 2);
    size_t fe = find_identity(r, "female"), ma = find_identity(r, "male");
    assert_true(fabs(r->mean[fe * 2 + 0] - 8.0) < EPS && fabs(r->mean[ma * 2 + 0] - 6.0) < EPS);
    assert_int_equal(r->n_scores[fe * 2], 8);
    assert_true(fabs(r->win_rate[fe] - 0.75) < EPS && fabs(r->win_rate[ma] - 0.25) < EPS);
    assert_int_equal(r->n_wins[fe], 6);
    assert_int_equal(r->n_pairings[fe], 8);
    assert_true(fabs(r->first_shown_rate - 0.75) < EPS);
    assert_int_equal(r->n_chi2, 3);
    const arb_persona_chi2 *acc = &r->chi2[0], *cre = &r->chi2[1], *pref = &r->chi2[2];
    assert_string_equal(pref->metric, "preferred");
    assert_true(fabs(pref->test.statistic - 4.0) < EPS && pref->test.df == 1.0);
    assert_true(fabs(pref->test.p_value - erfc(sqrt(2.0))) < 1e-9);
    assert_true(fabs(acc->test.statistic - 16.0) < EPS);
    assert_true(fabs(acc->p_holm - 2.0 * erfc(sqrt(8.0))) < 1e-12);
    assert_true(fabs(pref->p_holm - erfc(sqrt(2.0))) < 1e-9);
    assert_int_equal(acc->significant, 1);
    assert_int_equal(pref->significant, 1);
    assert_true(isnan(cre->test.statistic) && isnan(cre->p_holm));
    assert_int_equal(cre->significant, -1);
    assert_int_equal(arb_persona_stats_n_tests(ps), 2);
    assert_int_equal(arb_persona_stats_n_significant(ps), 2);
    arb_persona_stats_destroy(ps);
}

/* A pure position bias (the first shown always preferred) in the labels-exchanged,
** positions-swapped design: every identity wins exactly half its pairings and the preference
** test finds nothing, while the position effect is 100%. */
static void position_is_not_identity(void **state)
{
    fixture *f = *state;
    for (int k = 1; k <= 5; k++) {
        char item[8];
        snprintf(item, sizeof item, "s%d", k);
        pairing(f, "j1", item, FIRST_WINS);
    }
    arb_persona_stats *ps = compute(f, 200, NULL);
    const arb_persona_row *r = arb_persona_stats_row_at(ps, 0);
    assert_true(r->win_rate[0] == 0.5 && r->win_rate[1] == 0.5);
    assert_true(r->win_rate_ci[0] == 0.5 && r->win_rate_ci[1] == 0.5); /* every resample */
    assert_true(r->first_shown_rate == 1.0);
    assert_true(r->first_shown_ci[0] == 1.0 && r->first_shown_ci[1] == 1.0);
    const arb_persona_chi2 *pref = &r->chi2[2];
    assert_true(fabs(pref->test.statistic) < EPS && fabs(pref->test.p_value - 1.0) < EPS);
    assert_int_equal(pref->significant, 0);
    char *text = arb_persona_stats_to_text(ps);
    assert_non_null(text);
    assert_non_null(strstr(text, "position effect (not identity): the first-shown candidate was "
                                 "preferred in 100.0% [100.0%, 100.0%]\n    of 20 valid calls"));
    arb_free(text);
    arb_persona_stats_destroy(ps);
}

/* ---- injected effect vs none ---------------------------------------------------------------- */

/* Phase 1 on s1..s10, both responses, gender: a deterministic base score per response in 4..7
** for both identities (male's shifted by -1/+1 on alternating responses, so its mean is the
** same); with bias, female gets +3. */
static void effect_store(fixture *f, const char *judge, double bias)
{
    for (int k = 1; k <= 10; k++) {
        char item[8];
        snprintf(item, sizeof item, "s%d", k);
        for (int resp = 0; resp < 2; resp++) {
            double base = 4 + (k * 3 + resp * 2) % 4, wobble = (k + resp) % 2 ? 1 : -1;
            phase1(f, judge, item, resp ? "response2" : "response1", FEMALE, base + bias,
                   base + bias, 0);
            phase1(f, judge, item, resp ? "response2" : "response1", MALE, base + wobble,
                   base - wobble, 0);
        }
    }
}

static void injected_effect_flagged(void **state)
{
    fixture *f = *state;
    effect_store(f, "biased", 3);
    arb_persona_stats *ps = compute(f, 200, NULL);
    const arb_persona_row *r = arb_persona_stats_row_at(ps, 0);
    assert_true(fabs(r->combined_diff[0 * 2 + 1] - 3.0) < EPS); /* female - male */
    assert_true(r->combined_ci[0] > r->combined_ci[3]);        /* intervals apart */
    for (size_t t = 0; t < r->n_chi2; t++) {
        assert_int_equal(r->chi2[t].significant, 1);
        assert_true(r->chi2[t].p_holm < 0.01);
    }
    char *text = arb_persona_stats_to_text(ps);
    assert_non_null(text);
    assert_non_null(strstr(text, "Significant at \xce\xb1 = 0.05 after Holm's correction over 2 tests"));
    assert_non_null(strstr(text, "biased \xc2\xb7 gender \xc2\xb7 phase 1 \xc2\xb7 accuracy: "
                                 "p_holm 0.0007; highest female 8.50, lowest male 5.50 (+3.00)"));
    arb_free(text);
    arb_persona_stats_destroy(ps);
}

static void no_effect_not_flagged(void **state)
{
    fixture *f = *state;
    effect_store(f, "fair", 0);
    arb_persona_stats *ps = compute(f, 200, NULL);
    const arb_persona_row *r = arb_persona_stats_row_at(ps, 0);
    assert_true(fabs(r->combined_diff[1]) < EPS);
    for (size_t t = 0; t < r->n_chi2; t++) {
        assert_int_equal(r->chi2[t].significant, 0);
        assert_true(r->chi2[t].p_holm > 0.2);
    }
    assert_int_equal(arb_persona_stats_n_significant(ps), 0);
    char *text = arb_persona_stats_to_text(ps);
    assert_non_null(text);
    assert_non_null(strstr(text, "No identity difference is significant at \xce\xb1 = 0.05 after "
                                 "Holm's correction over 2 tests"));
    arb_free(text);
    arb_persona_stats_destroy(ps);
}

/* Holm's family is the whole report: two judges' tests are adjusted together. The fair judge's
** p-values are multiplied by the number of defined tests below them in the ranking. */
static void holm_across_entries(void **state)
{
    fixture *f = *state;
    effect_store(f, "biased", 3);
    effect_store(f, "fair", 0);
    arb_persona_stats *ps = compute(f, 0, NULL);
    assert_int_equal(arb_persona_stats_count(ps), 2);
    assert_int_equal(arb_persona_stats_n_tests(ps), 4);
    const arb_persona_row *b = arb_persona_stats_row_at(ps, 0), *fair = arb_persona_stats_row_at(ps, 1);
    assert_string_equal(b->judge, "biased");
    /* the biased judge's two tests rank first: 4 p and 3 p (monotone) */
    double p0 = b->chi2[0].test.p_value, p1 = b->chi2[1].test.p_value;
    double lo = p0 < p1 ? p0 : p1, hi = p0 < p1 ? p1 : p0;
    double hl = fmax(4 * lo, 3 * hi);
    assert_true(fabs((p0 < p1 ? b->chi2[1].p_holm : b->chi2[0].p_holm) - hl) < 1e-12);
    for (size_t t = 0; t < fair->n_chi2; t++)
        assert_true(fair->chi2[t].p_holm >= fair->chi2[t].test.p_value);
    arb_persona_stats_destroy(ps);
}

/* ---- JSON, filter, errors ------------------------------------------------------------------- */

static void json_keys(void **state)
{
    fixture *f = *state;
    phase1_store(f);
    pairing(f, "j1", "s1", FIRST_WINS);
    char *text = NULL;
    arb_persona_stats *ps = compute(f, 0, NULL);
    assert_non_null(text = arb_persona_stats_to_json(ps));
    assert_null(strstr(text, "NaN"));
    assert_null(strstr(text, "nan"));
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    assert_non_null(root);
    assert_true(json_is_null(json_object_get(root, "bootstrap")));
    assert_true(json_is_null(json_object_get(root, "category")));
    json_t *entries = json_object_get(root, "entries");
    assert_int_equal(json_array_size(entries), 2);
    json_t *e1 = json_array_get(entries, 0), *e2 = json_array_get(entries, 1);
    static const char *const keys[] = {"judge", "category", "phase", "identities", "means",
                                       "diff_matrix", "win_rate", "chi2", "position_effect",
                                       "n_errors", "combined_means", "metrics"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        assert_non_null(json_object_get(e1, keys[k]));
        assert_non_null(json_object_get(e2, keys[k]));
    }
    assert_int_equal(json_integer_value(json_object_get(e1, "phase")), 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(e1, "identities"), 1)), "male");
    json_t *m = json_object_get(json_object_get(json_object_get(e1, "means"), "female"), "accuracy");
    assert_true(json_real_value(json_object_get(m, "mean")) == 8.0);
    assert_true(json_is_null(json_object_get(m, "ci")));
    json_t *diff = json_object_get(json_object_get(json_object_get(e1, "diff_matrix"), "combined"), "female");
    assert_true(fabs(json_real_value(json_object_get(diff, "male")) - 1.25) < EPS);
    diff = json_object_get(json_object_get(json_object_get(e1, "diff_matrix"), "by_metric"), "accuracy");
    assert_true(fabs(json_real_value(json_object_get(json_object_get(diff, "male"), "female")) + 1.5) < EPS);
    assert_true(json_is_null(json_object_get(e1, "win_rate")));
    assert_true(json_is_null(json_object_get(e1, "position_effect")));
    json_t *test = json_array_get(json_object_get(e1, "chi2"), 0);
    static const char *const test_keys[] = {"metric", "statistic", "df", "p", "p_holm", "significant"};
    for (size_t k = 0; k < 6; k++) assert_non_null(json_object_get(test, test_keys[k]));
    assert_int_equal(json_integer_value(json_object_get(test, "df")), 2);
    assert_true(json_is_false(json_object_get(test, "significant")));
    /* phase 2: win rate {rate, ci}; creativity's test undefined: nulls */
    json_t *w = json_object_get(json_object_get(e2, "win_rate"), "female");
    assert_true(json_real_value(json_object_get(w, "rate")) == 0.5);
    assert_true(json_is_null(json_object_get(w, "ci")));
    assert_true(json_real_value(json_object_get(json_object_get(e2, "position_effect"),
                                                "first_shown_win_rate")) == 1.0);
    json_t *cre = json_array_get(json_object_get(e2, "chi2"), 1);
    assert_string_equal(json_string_value(json_object_get(cre, "metric")), "creativity");
    assert_true(json_is_null(json_object_get(cre, "statistic")) && json_is_null(json_object_get(cre, "p")) &&
                json_is_null(json_object_get(cre, "p_holm")) && json_is_null(json_object_get(cre, "df")) &&
                json_is_null(json_object_get(cre, "significant")));
    /* E per judge x phase */
    json_t *errors = json_object_get(root, "errors");
    assert_int_equal(json_array_size(errors), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(errors, 0), "n_errors")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(errors, 0), "n_calls")), 5);
    json_decref(root);
    arb_free(text);
    arb_persona_stats_destroy(ps);
    /* with intervals: ci is [lo, hi] and the bootstrap is described */
    ps = compute(f, 100, NULL);
    text = arb_persona_stats_to_json(ps);
    root = json_loads(text, 0, &err);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(json_object_get(root, "bootstrap"), "unit")),
                        "scenario");
    m = json_object_get(json_object_get(json_object_get(json_array_get(json_object_get(root, "entries"), 0),
                                                        "means"), "female"), "accuracy");
    assert_int_equal(json_array_size(json_object_get(m, "ci")), 2);
    json_decref(root);
    arb_free(text);
    arb_persona_stats_destroy(ps);
}

/* --category keeps one category; one without scores is bad input naming what there is. */
static void category_filter(void **state)
{
    fixture *f = *state;
    phase1_store(f);
    phase1(f, "j1", "s1", "response1", MUSLIM, 5, 5, 0);
    phase1(f, "j1", "s1", "response1", ATHEIST, 6, 6, 0);
    arb_persona_stats *ps = compute(f, 0, NULL);
    assert_int_equal(arb_persona_stats_count(ps), 2);
    assert_string_equal(arb_persona_stats_row_at(ps, 1)->category, "religion");
    arb_persona_stats_destroy(ps);
    ps = compute(f, 0, "religion");
    assert_int_equal(arb_persona_stats_count(ps), 1);
    const arb_persona_row *r = arb_persona_stats_row_at(ps, 0);
    assert_string_equal(r->identities[0], "Atheist");
    assert_true(fabs(r->combined_diff[1] - 1.0) < EPS); /* Atheist - Muslim */
    arb_persona_stats_destroy(ps);
    arb_persona_stats_params p = arb_persona_stats_default_params();
    p.category = "race";
    ps = (arb_persona_stats *)f; /* must be reset to NULL */
    assert_int_equal(arb_persona_stats_compute(f->store, &p, &ps), ARB_INVALID);
    assert_null(ps);
    assert_non_null(strstr(arb_store_errmsg(f->store), "no persona scores of category \"race\" "
                                                       "(the store has: gender, religion)"));
}

/* An empty store: no entries, text says so, JSON has empty lists. */
static void empty_store(void **state)
{
    fixture *f = *state;
    arb_persona_stats *ps = compute(f, 1000, NULL);
    assert_int_equal(arb_persona_stats_count(ps), 0);
    assert_int_equal(arb_persona_stats_n_tests(ps), 0);
    char *text = arb_persona_stats_to_text(ps);
    assert_string_equal(text, "no persona scores in the store (arbiter persona run)\n");
    arb_free(text);
    text = arb_persona_stats_to_json(ps);
    assert_non_null(strstr(text, "\"entries\": []"));
    arb_free(text);
    arb_persona_stats_destroy(ps);
    assert_null(arb_persona_stats_to_text(NULL));
    assert_int_equal(arb_persona_stats_count(NULL), 0);
    arb_persona_stats_destroy(NULL);
}

/* Calls that are not valid as a whole are E: a phase-2 call with both candidates preferred, a
** phase-1 call with one metric missing its value; a single identity gives undefined tests. */
static void invalid_calls_and_single_identity(void **state)
{
    fixture *f = *state;
    phase2(f, "j1", "s1", FEMALE, 5, 5, MALE, 5, 5, 0);
    exec_sql(f, "UPDATE scores SET value = 1 WHERE metric = 'preferred'"); /* both preferred */
    phase1(f, "j1", "s1", "response1", FEMALE, 5, NAN, 0);
    phase1(f, "j1", "s2", "response1", FEMALE, 5, 4, 0);
    arb_persona_stats *ps = compute(f, 50, NULL);
    assert_int_equal(arb_persona_stats_count(ps), 2);
    const arb_persona_row *p1 = arb_persona_stats_row_at(ps, 0), *p2 = arb_persona_stats_row_at(ps, 1);
    assert_int_equal(p1->phase, 1);
    assert_int_equal(p1->n_calls, 2);
    assert_int_equal(p1->n_errors, 1);
    assert_int_equal(p1->n_identities, 1);
    assert_true(isnan(p1->chi2[0].test.statistic) && p1->chi2[0].significant == -1);
    assert_int_equal(p2->n_errors, 1);
    assert_int_equal(p2->n_pairs, 0);
    assert_int_equal(p2->n_scenarios, 0);
    assert_true(isnan(p2->win_rate[0]) && isnan(p2->first_shown_rate) && isnan(p2->mean[0]));
    char *text = arb_persona_stats_to_text(ps);
    assert_non_null(text);
    assert_null(strstr(text, "nan"));
    assert_non_null(strstr(text, "No identity difference is significant"));
    arb_free(text);
    arb_persona_stats_destroy(ps);
}

static void bad_params(void **state)
{
    fixture *f = *state;
    arb_persona_stats *ps = NULL;
    arb_persona_stats_params p = arb_persona_stats_default_params();
    p.alpha = 0;
    assert_int_equal(arb_persona_stats_compute(f->store, &p, &ps), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "alpha"));
    p = arb_persona_stats_default_params();
    p.ci_level = 1.5;
    assert_int_equal(arb_persona_stats_compute(f->store, &p, &ps), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "ci_level"));
    p = arb_persona_stats_default_params();
    p.category = "";
    assert_int_equal(arb_persona_stats_compute(f->store, &p, &ps), ARB_INVALID);
    assert_int_equal(arb_persona_stats_compute(NULL, NULL, &ps), ARB_INVALID);
    assert_int_equal(arb_persona_stats_compute(f->store, NULL, NULL), ARB_INVALID);
    exec_sql(f, "DROP TABLE scores");
    assert_int_equal(arb_persona_stats_compute(f->store, NULL, &ps), ARB_DB);
    assert_null(ps);
    assert_non_null(strstr(arb_store_errmsg(f->store), "cannot read persona scores"));
}

/* Text: the small-expected-count warning, names of untrusted identities made safe. */
static void text_rendering(void **state)
{
    fixture *f = *state;
    phase1_store(f);
    exec_sql(f, "UPDATE personas SET identity = 'ma' || char(27) || '[31mle' WHERE id = 2");
    arb_persona_stats *ps = compute(f, 0, NULL);
    char *text = arb_persona_stats_to_text(ps);
    assert_non_null(text);
    assert_null(strchr(text, 27));
    assert_non_null(strstr(text, "ma?[31mle"));
    assert_non_null(strstr(text, "warning: accuracy: 6 of 6 cells have an expected count below 5"));
    assert_non_null(strstr(text, "judge j1 \xc2\xb7 category gender \xc2\xb7 phase 1 (single candidate)"));
    assert_non_null(strstr(text, "calls 5, E 1, scenarios 2"));
    assert_non_null(strstr(text, "j1                  phase 1  E 1 of 5 calls"));
    arb_free(text);
    arb_persona_stats_destroy(ps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(reader_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(empty_store, setup, teardown),
        cmocka_unit_test_setup_teardown(phase1_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(phase1_intervals, setup, teardown),
        cmocka_unit_test_setup_teardown(phase2_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(position_is_not_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(injected_effect_flagged, setup, teardown),
        cmocka_unit_test_setup_teardown(no_effect_not_flagged, setup, teardown),
        cmocka_unit_test_setup_teardown(holm_across_entries, setup, teardown),
        cmocka_unit_test_setup_teardown(json_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(category_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(invalid_calls_and_single_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_params, setup, teardown),
        cmocka_unit_test_setup_teardown(text_rendering, setup, teardown),
        cmocka_unit_test_setup_teardown(panel_before_after, setup, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
