/*
** test_rank.c -- rankings (METHODS §6): hand-computed win rates and a hand-computed Elo
** sequence, Elo's zero-sum invariant over many permutations, Bradley-Terry recovering known
** strengths from simulated battles, anchoring, the bootstrap (reproducible for a seed; the
** multinomial per-pair-count bootstrap against resampling battles), the length-controlled win
** rate and style control, the Elo trend, the selection of reviewers, edge cases (no battles,
** ties only, a model that never wins), and the text and JSON renderings.
*/
#include "internal.h"
#include "rank.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

static void assert_close(double got, double want, double tol)
{
    if (isnan(got) || fabs(got - want) > tol)
        fail_msg("got %.15g, want %.15g (tolerance %g)", got, want, tol);
}

static void assert_undefined(double got)
{
    if (!isnan(got)) fail_msg("got %.15g, want NAN", got);
}

/* Adds one battle: s = -1 i better, 0 tie, +1 j better; strong marks a strong win (A>>B). */
static void add_battle(arb_battles *b, const char *q, const char *i, const char *j,
                       const char *rev, int s, int strong)
{
    arb_battle x = arb_battle_init();
    x.question = q;
    x.model_i = i;
    x.model_j = j;
    x.reviewer = rev;
    x.s = s;
    x.strong = strong;
    assert_int_equal(arb_battles_add(b, &x), ARB_OK);
}

static void add(arb_battles *b, const char *q, const char *i, const char *j, const char *rev,
                int s)
{
    add_battle(b, q, i, j, rev, s, 0);
}

/* Adds a battle with answer lengths (style covariates: length only, or all four). */
static void add_styled(arb_battles *b, const char *q, const char *i, const char *j, int s,
                       const double *style_i, const double *style_j, int n_style)
{
    arb_battle x = arb_battle_init();
    x.question = q;
    x.model_i = i;
    x.model_j = j;
    x.reviewer = "judge";
    x.s = s;
    for (int k = 0; k < n_style; k++) {
        x.style_i[k] = style_i[k];
        x.style_j[k] = style_j[k];
    }
    assert_int_equal(arb_battles_add(b, &x), ARB_OK);
}

static arb_rank *rank_of(const arb_battles *b, const arb_rank_params *p)
{
    arb_rank *r = NULL;
    char *err = NULL;
    arb_status st = arb_rank_compute(b, p, &r, &err);
    if (st != ARB_OK) fail_msg("arb_rank_compute: %s: %s", arb_strerror(st), err ? err : "");
    assert_non_null(r);
    assert_null(err);
    return r;
}

/* The entry of a model, failing when absent. */
static const arb_rank_entry *entry_of(const arb_rank *r, const char *model, size_t *index)
{
    for (size_t k = 0; k < arb_rank_count(r); k++) {
        const arb_rank_entry *e = arb_rank_entry_at(r, k);
        if (!strcmp(e->model, model)) {
            if (index) *index = k;
            return e;
        }
    }
    fail_msg("model %s not ranked", model);
    return NULL;
}

/* Simulated battles among models with known Elo-scale ratings: uniform random ordered pairs,
** P(i beats j) = 1/(1 + 10^((R_j - R_i)/400)); with tie_share > 0 that share are ties. */
static arb_battles *simulate(const double *rating, const char *const *names, size_t n_models,
                             size_t n, double tie_share, unsigned long seed)
{
    arb_battles *b = arb_battles_create();
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    char q[32];
    for (size_t t = 0; t < n; t++) {
        size_t i = gsl_rng_uniform_int(rng, n_models), j = gsl_rng_uniform_int(rng, n_models - 1);
        if (j >= i) j++;
        double p = 1.0 / (1.0 + pow(10.0, (rating[j] - rating[i]) / 400.0));
        int s = gsl_rng_uniform(rng) < tie_share ? 0 : gsl_rng_uniform(rng) < p ? -1 : 1;
        snprintf(q, sizeof q, "q%zu", t % 100);
        add(b, q, names[i], names[j], "judge", s);
    }
    gsl_rng_free(rng);
    return b;
}

/* ---- parameters and edge cases ------------------------------------------------------------ */

static void default_params(void **state)
{
    (void)state;
    arb_rank_params p = arb_rank_default_params();
    assert_int_equal(p.method, ARB_RANK_WINRATE);
    assert_close(p.elo_k, 32, 0);
    assert_close(p.elo_initial, 1000, 0);
    assert_int_equal(p.elo_permutations, 1000);
    assert_null(p.anchor);
    assert_int_equal(p.bootstrap, 0);
    assert_int_equal(p.seed, 1);
    assert_close(p.ci_level, 0.95, 0);
    assert_int_equal(p.max_iterations, 1000);
    assert_close(p.tolerance, 1e-9, 0);
    assert_int_equal(p.trend_every, 0);
    assert_string_equal(p.human_prefix, "human");
    assert_int_equal(p.strong_weight, 1);
}

static void no_battles(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    for (int method = ARB_RANK_WINRATE; method <= ARB_RANK_BT; method++) {
        arb_rank_params p = arb_rank_default_params();
        p.method = (arb_rank_method)method;
        p.bootstrap = 50;
        p.trend_every = 3;
        p.length_control = p.style_control = 1;
        arb_rank *r = rank_of(b, &p);
        assert_int_equal(arb_rank_count(r), 0);
        assert_null(arb_rank_entry_at(r, 0));
        assert_undefined(arb_rank_pairwise(r, 0, 0));
        char *text = arb_rank_to_text(r);
        assert_non_null(strstr(text, "no battles to rank"));
        arb_free(text);
        char *json = arb_rank_to_json(r);
        json_t *root = json_loads(json, 0, NULL);
        assert_non_null(root);
        assert_int_equal(json_array_size(json_object_get(root, "models")), 0);
        assert_int_equal(json_integer_value(json_object_get(root, "n_battles")), 0);
        assert_true(json_is_null(json_object_get(root, "trend")));
        json_decref(root);
        arb_free(json);
        arb_rank_destroy(r);
    }
    arb_battles_destroy(b);
}

static void bad_params(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    add(b, "q1", "A", "B", "judge", -1);
    arb_rank_params p = arb_rank_default_params();
    arb_rank *r = (arb_rank *)&p; /* must be reset to NULL */
    char *err = NULL;

    p.elo_k = 0;
    assert_int_equal(arb_rank_compute(b, &p, &r, &err), ARB_INVALID);
    assert_null(r);
    assert_non_null(strstr(err, "elo_k"));
    arb_free(err);

    p = arb_rank_default_params();
    p.ci_level = 1;
    assert_int_equal(arb_rank_compute(b, &p, &r, &err), ARB_INVALID);
    arb_free(err);

    p = arb_rank_default_params();
    p.elo_permutations = 0;
    assert_int_equal(arb_rank_compute(b, &p, &r, &err), ARB_INVALID);
    arb_free(err);

    p = arb_rank_default_params();
    p.method = ARB_RANK_BT;
    p.anchor = "nobody\x1b[2J";
    assert_int_equal(arb_rank_compute(b, &p, &r, &err), ARB_INVALID);
    assert_non_null(strstr(err, "anchor model \"nobody?[2J\" has no battle"));
    arb_free(err);

    const char *who[] = {"ghost"};
    p = arb_rank_default_params();
    p.reviewers = who;
    p.n_reviewers = 1;
    assert_int_equal(arb_rank_compute(b, &p, &r, &err), ARB_INVALID);
    assert_non_null(strstr(err, "reviewer \"ghost\" reviewed no battle"));
    arb_free(err);

    p = arb_rank_default_params();
    p.strong_weight = 0;
    assert_int_equal(arb_rank_compute(b, &p, &r, &err), ARB_INVALID);
    assert_non_null(strstr(err, "strong_weight must be from 1 to 1000"));
    arb_free(err);
    p.strong_weight = 1001;
    assert_int_equal(arb_rank_compute(b, &p, &r, &err), ARB_INVALID);
    arb_free(err);

    assert_int_equal(arb_rank_compute(NULL, &p, &r, NULL), ARB_INVALID);
    arb_battles_destroy(b);
}

/* ---- win rate ----------------------------------------------------------------------------- */

/* A beats B, A ties B (B shown first), C beats B, A beats C, A beats D:
**   A: 4 battles, 3 wins, 1 tie  -> 3.5/4 = 0.875
**   B: 3 battles, 0 wins, 1 tie  -> 0.5/3
**   C: 2 battles, 1 win          -> 0.5
**   D: 1 battle, 0 wins          -> 0
** pairwise A over B: (1 + ½)/2 = 0.75; B over C 0; A over C 1; B and D never met. */
static arb_battles *hand_battles(void)
{
    arb_battles *b = arb_battles_create();
    add(b, "q1", "A", "B", "judge", -1);
    add(b, "q2", "B", "A", "judge", 0);
    add(b, "q3", "B", "C", "judge", 1);
    add(b, "q4", "A", "C", "judge", -1);
    add(b, "q5", "D", "A", "judge", 1);
    return b;
}

static void winrate_hand(void **state)
{
    (void)state;
    arb_battles *b = hand_battles();
    arb_rank_params p = arb_rank_default_params();
    arb_rank *r = rank_of(b, &p);
    assert_int_equal(arb_rank_count(r), 4);
    const char *order[] = {"A", "C", "B", "D"};
    const double want[] = {3.5 / 4, 0.5, 0.5 / 3, 0};
    for (size_t k = 0; k < 4; k++) {
        const arb_rank_entry *e = arb_rank_entry_at(r, k);
        assert_string_equal(e->model, order[k]);
        assert_close(e->score, want[k], 1e-15);
        assert_undefined(e->ci_lo);
        assert_undefined(e->sd);
        assert_undefined(e->lc_win_rate);
        assert_undefined(e->style_rating);
    }
    const arb_rank_entry *a = arb_rank_entry_at(r, 0);
    assert_int_equal(a->battles, 4);
    assert_int_equal(a->wins, 3);
    assert_int_equal(a->ties, 1);
    assert_int_equal(a->losses, 0);
    const arb_rank_entry *bb = arb_rank_entry_at(r, 2);
    assert_int_equal(bb->battles, 3);
    assert_int_equal(bb->wins, 0);
    assert_int_equal(bb->ties, 1);
    assert_int_equal(bb->losses, 2);
    /* entries: 0 A, 1 C, 2 B, 3 D */
    assert_close(arb_rank_pairwise(r, 0, 2), 0.75, 1e-15);
    assert_close(arb_rank_pairwise(r, 2, 0), 0.25, 1e-15);
    assert_close(arb_rank_pairwise(r, 2, 1), 0.0, 0);
    assert_close(arb_rank_pairwise(r, 1, 2), 1.0, 0);
    assert_close(arb_rank_pairwise(r, 0, 1), 1.0, 0);
    assert_close(arb_rank_pairwise(r, 0, 3), 1.0, 0);
    assert_undefined(arb_rank_pairwise(r, 2, 3)); /* B and D never met */
    assert_undefined(arb_rank_pairwise(r, 1, 1));
    assert_undefined(arb_rank_pairwise(r, 9, 0));
    assert_int_equal(arb_rank_reviewer_count(r), 0);
    int converged = -1;
    assert_int_equal(arb_rank_iterations(r, &converged), 0);
    arb_rank_destroy(r);

    /* arb__win_rate with reviewer weights: weight 3 for a second reviewer who says B beat A */
    add(b, "q6", "A", "B", "other", 1);
    double w[2] = {1, 3}, out[4];
    uint8_t use[6] = {1, 1, 1, 1, 1, 1};
    assert_int_equal(b->reviewers.n, 2);
    arb__win_rate(b, use, w, out);
    uint32_t ia = arb__strtab_find(&b->models, "A"), ib = arb__strtab_find(&b->models, "B");
    assert_close(out[ia], 3.5 / 7, 1e-15);       /* (3 + ½) / (4 + 3) */
    assert_close(out[ib], (0.5 + 3) / 6, 1e-15); /* (½ + 3) / (3 + 3) */
    use[5] = 0;
    arb__win_rate(b, use, w, out);
    assert_close(out[ia], 3.5 / 4, 1e-15);
    arb_battles_destroy(b);
}

/* ---- strong verdicts (Arena-Hard A>>B) ----------------------------------------------------- */

/* Adds a battle of "judge" marked strong (a win stated with strength 2). */
static void add_strong(arb_battles *b, const char *q, const char *i, const char *j, int s)
{
    add_battle(b, q, i, j, "judge", s, 1);
}

/* q1 A>>B (strong), q2 B beats A, q3 B ties A, q4 A>>C (strong, C shown first), q5 B beats C.
** strong_weight 3, each strong battle counted 3 times:
**   A: 3 + 1 + 1 + 3 = 8 battles, wins 3 + 3 = 6, 1 tie, 1 loss -> 6.5/8 = 0.8125
**   B: 3 + 1 + 1 + 1 = 6 battles, wins 2, 1 tie, 3 losses       -> 2.5/6
**   C: 3 + 1 = 4 battles, no win                                 -> 0
**   A over B: (3 + ½)/5 = 0.7; 5 battles, 2 strong, 9 counted.
** strong_weight 1: A 2.5/4, B 2.5/4, C 0/2 (the flag changes nothing). */
static arb_battles *strong_battles(int repeat_by_hand)
{
    arb_battles *b = arb_battles_create();
    for (int c = 0; c < (repeat_by_hand ? 3 : 1); c++) add_strong(b, "q1", "A", "B", -1);
    add(b, "q2", "A", "B", "judge", 1);
    add(b, "q3", "B", "A", "judge", 0);
    for (int c = 0; c < (repeat_by_hand ? 3 : 1); c++) add_strong(b, "q4", "C", "A", 1);
    add(b, "q5", "B", "C", "judge", -1);
    return b;
}

static void strong_weight_winrate_hand(void **state)
{
    (void)state;
    arb_battles *b = strong_battles(0);
    arb_rank_params p = arb_rank_default_params();
    arb_rank *r = rank_of(b, &p);
    assert_close(entry_of(r, "A", NULL)->score, 2.5 / 4, 1e-15);
    assert_close(entry_of(r, "B", NULL)->score, 2.5 / 4, 1e-15);
    assert_int_equal(r->n_battles_used, 5);
    assert_int_equal(r->n_strong, 2);
    assert_int_equal(r->n_counted, 5);
    arb_rank_destroy(r);

    p.strong_weight = 3;
    r = rank_of(b, &p);
    size_t ia, ib;
    const arb_rank_entry *a = entry_of(r, "A", &ia), *bb = entry_of(r, "B", &ib);
    const arb_rank_entry *c = entry_of(r, "C", NULL);
    assert_close(a->score, 6.5 / 8, 1e-15);
    assert_close(bb->score, 2.5 / 6, 1e-15);
    assert_close(c->score, 0, 0);
    assert_int_equal(a->battles, 8);
    assert_int_equal(a->wins, 6);
    assert_int_equal(a->ties, 1);
    assert_int_equal(a->losses, 1);
    assert_int_equal(bb->battles, 6);
    assert_int_equal(bb->losses, 3);
    assert_int_equal(c->battles, 4);
    assert_close(arb_rank_pairwise(r, ia, ib), 0.7, 1e-15);
    assert_int_equal(r->n_battles_used, 5);
    assert_int_equal(r->n_strong, 2);
    assert_int_equal(r->n_counted, 9);

    char *text = arb_rank_to_text(r);
    assert_non_null(strstr(text, "5 battles, 3 models; 2 strong (A>>B) battles, each counted 3 "
                                 "times (--strong-weight):\n9 battles in every count"));
    arb_free(text);
    char *json = arb_rank_to_json(r);
    json_t *root = json_loads(json, 0, NULL);
    assert_non_null(root);
    assert_int_equal(json_integer_value(json_object_get(root, "strong_weight")), 3);
    assert_int_equal(json_integer_value(json_object_get(root, "n_strong")), 2);
    assert_int_equal(json_integer_value(json_object_get(root, "n_counted")), 9);
    assert_int_equal(json_integer_value(json_object_get(root, "n_battles")), 5);
    json_decref(root);
    arb_free(json);
    arb_rank_destroy(r);

    /* Bradley-Terry of two models: A>>B once and B>A once at weight 3 is 3 wins in 4, so the
    ** ratings differ by 400·log10(3) around the mean 1000 */
    arb_battles *two = arb_battles_create();
    add_strong(two, "q1", "A", "B", -1);
    add(two, "q2", "B", "A", "judge", -1);
    p.method = ARB_RANK_BT;
    r = rank_of(two, &p);
    assert_close(entry_of(r, "A", NULL)->score, 1000 + 200 * log10(3.0), 1e-3);
    assert_close(entry_of(r, "B", NULL)->score, 1000 - 200 * log10(3.0), 1e-3);
    arb_rank_destroy(r);
    arb_battles_destroy(two);
    arb_battles_destroy(b);
}

/* Weight K is the battle repeated K times (Arena-Hard-Auto's show_result.py): every method,
** with its bootstrap, the Elo permutations, the trend and peer rank, gives exactly what the
** same battles written out K times give. */
static void strong_weight_is_repetition(void **state)
{
    (void)state;
    arb_battles *flagged = strong_battles(0), *by_hand = strong_battles(1);
    const arb_rank_method methods[] = {ARB_RANK_WINRATE, ARB_RANK_ELO, ARB_RANK_BT};
    for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
        arb_rank_params p = arb_rank_default_params();
        p.method = methods[m];
        p.bootstrap = 40;
        p.elo_permutations = 20;
        p.trend_every = 2;
        arb_rank_params ph = p;
        p.strong_weight = 3;
        arb_rank *r = rank_of(flagged, &p), *h = rank_of(by_hand, &ph);
        assert_int_equal(arb_rank_count(r), arb_rank_count(h));
        for (size_t k = 0; k < arb_rank_count(r); k++) {
            const arb_rank_entry *x = arb_rank_entry_at(r, k), *y = arb_rank_entry_at(h, k);
            assert_string_equal(x->model, y->model);
            assert_true(x->score == y->score);
            assert_true(isnan(y->ci_lo) ? isnan(x->ci_lo) : x->ci_lo == y->ci_lo);
            assert_true(isnan(y->ci_hi) ? isnan(x->ci_hi) : x->ci_hi == y->ci_hi);
            assert_true(isnan(y->sd) ? isnan(x->sd) : x->sd == y->sd);
            assert_int_equal(x->battles, y->battles);
            assert_int_equal(x->wins, y->wins);
        }
        assert_true(methods[m] != ARB_RANK_BT || isfinite(arb_rank_entry_at(r, 0)->ci_lo));
        assert_int_equal(r->n_trend, h->n_trend);
        for (size_t t = 0; t < r->n_trend * r->n_entries; t++)
            assert_true(r->trend[t] == h->trend[t]);
        arb_rank_destroy(r);
        arb_rank_destroy(h);
    }
    arb_battles_destroy(flagged);
    arb_battles_destroy(by_hand);
}

/* ---- Elo ---------------------------------------------------------------------------------- */

/* K = 32, start 1000, the given order:
**   A beats B: E_A = ½, A +16, B −16                            -> A 1016, B 984
**   B ties A:  E_B = 1/(1 + 10^(32/400)) = 0.454078077219516,
**              B +32·(½ − E_B) = +1.469501528975478           -> A 1014.530498471025
**   A vs C, C better: E_A = 1/(1 + 10^(−14.530498471025/400)) = 0.520898884969236,
**              A −32·E_A = −16.668764319015548                 -> A 997.861734152009,
**                                                                C 1016.668764319016 */
static void elo_hand(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    add(b, "q1", "A", "B", "judge", -1);
    add(b, "q2", "B", "A", "judge", 0);
    add(b, "q3", "A", "C", "judge", 1);
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_ELO;
    p.elo_permutations = 1;
    arb_rank *r = rank_of(b, &p);
    assert_string_equal(arb_rank_entry_at(r, 0)->model, "C");
    assert_close(entry_of(r, "C", NULL)->score, 1016.668764319016, 1e-9);
    assert_close(entry_of(r, "A", NULL)->score, 997.861734152009, 1e-9);
    assert_close(entry_of(r, "B", NULL)->score, 985.469501528975, 1e-9);
    assert_undefined(entry_of(r, "A", NULL)->sd); /* one order: no spread */
    arb_rank_destroy(r);

    /* anchored: the same differences, A held at 1000 */
    p.anchor = "A";
    r = rank_of(b, &p);
    assert_close(entry_of(r, "A", NULL)->score, 1000, 1e-9);
    assert_close(entry_of(r, "C", NULL)->score, 1016.668764319016 - 997.861734152009 + 1000,
                 1e-9);
    arb_rank_destroy(r);

    /* arb__elo with weights: reviewer weight 2 doubles the first move */
    double w[1] = {2}, mean[3], sd[3];
    uint8_t use[3] = {1, 0, 0};
    assert_int_equal(arb__elo(b, use, w, &p, mean, sd), 0);
    assert_close(mean[arb__strtab_find(&b->models, "A")], 1032, 1e-12);
    assert_close(mean[arb__strtab_find(&b->models, "B")], 968, 1e-12);
    assert_close(mean[arb__strtab_find(&b->models, "C")], 1000, 0);
    arb_battles_destroy(b);
}

/* Plain (and weighted) Elo is zero-sum: after any order the ratings average the initial
** rating, so the mean over permutations does too. */
static void elo_zero_sum(void **state)
{
    (void)state;
    const double rating[] = {1200, 1100, 1000, 950, 800};
    const char *names[] = {"m0", "m1", "m2", "m3", "m4"};
    arb_battles *b = simulate(rating, names, 5, 400, 0.2, 11);
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_ELO;
    p.elo_permutations = 300;
    p.elo_initial = 1500;
    arb_rank *r = rank_of(b, &p);
    double sum = 0;
    for (size_t k = 0; k < arb_rank_count(r); k++) {
        const arb_rank_entry *e = arb_rank_entry_at(r, k);
        sum += e->score;
        assert_true(e->sd > 0 && isfinite(e->sd)); /* orders differ */
    }
    assert_close(sum / 5, 1500, 1e-9);
    assert_string_equal(arb_rank_entry_at(r, 0)->model, "m0");
    double first = arb_rank_entry_at(r, 0)->score;
    arb_rank_destroy(r);

    /* the same seed gives the same means; another seed other means, still zero-sum */
    r = rank_of(b, &p);
    assert_close(arb_rank_entry_at(r, 0)->score, first, 0);
    arb_rank_destroy(r);
    p.seed = 99;
    r = rank_of(b, &p);
    assert_true(arb_rank_entry_at(r, 0)->score != first);
    sum = 0;
    for (size_t k = 0; k < arb_rank_count(r); k++) sum += arb_rank_entry_at(r, k)->score;
    assert_close(sum / 5, 1500, 1e-9);
    arb_rank_destroy(r);

    /* weighted Elo too */
    double w[1] = {0.37}, mean[5];
    uint8_t *use = malloc(b->n);
    memset(use, 1, b->n);
    assert_int_equal(arb__elo(b, use, w, &p, mean, NULL), 0);
    sum = 0;
    for (size_t k = 0; k < 5; k++) sum += mean[k];
    assert_close(sum / 5, 1500, 1e-9);
    free(use);
    arb_battles_destroy(b);
}

/* Elo bootstrap: arena style, reproducible for a seed, intervals around the ratings. */
static void elo_bootstrap(void **state)
{
    (void)state;
    const double rating[] = {1100, 1000, 900};
    const char *names[] = {"a", "b", "c"};
    arb_battles *b = simulate(rating, names, 3, 600, 0, 5);
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_ELO;
    p.elo_permutations = 50;
    p.bootstrap = 200;
    arb_rank *r1 = rank_of(b, &p), *r2 = rank_of(b, &p);
    for (size_t k = 0; k < 3; k++) {
        const arb_rank_entry *e1 = arb_rank_entry_at(r1, k), *e2 = arb_rank_entry_at(r2, k);
        assert_true(e1->ci_lo < e1->score && e1->score < e1->ci_hi);
        assert_close(e2->ci_lo, e1->ci_lo, 0);
        assert_close(e2->ci_hi, e1->ci_hi, 0);
    }
    arb_rank_destroy(r1);
    arb_rank_destroy(r2);
    arb_battles_destroy(b);
}

/* The Elo interval belongs to the Elo printed (§6, issue 12): the printed rating is the mean
** over the permutations, so a bootstrap round must resample the battles and recompute that
** mean. Brute force here: resample the battles with replacement, rank each resample with the
** same parameters and no bootstrap, take the percentiles of the printed scores. The widths
** agree within sampling noise (two 300-round percentile widths: ~10%); the old interval, one
** pass per round, carried the order noise of a single pass and came out about twice as wide. */
static void elo_bootstrap_belongs_to_printed_estimator(void **state)
{
    (void)state;
    const double rating[] = {1100, 1000, 900};
    const char *names[] = {"a", "b", "c"};
    const size_t n = 600, rounds = 300;
    arb_battles *b = simulate(rating, names, 3, n, 0.1, 31);
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_ELO;
    p.elo_permutations = 100;
    p.bootstrap = rounds;
    arb_rank *fast = rank_of(b, &p);

    double *reps = malloc(3 * rounds * sizeof *reps);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 777);
    arb_rank_params single = p;
    single.bootstrap = 0;
    for (size_t round = 0; round < rounds; round++) {
        arb_battles *rs = arb_battles_create();
        for (size_t t = 0; t < n; t++) {
            arb_battle x = arb_battles_at(b, gsl_rng_uniform_int(rng, n));
            assert_int_equal(arb_battles_add(rs, &x), ARB_OK);
        }
        single.seed = round + 1; /* fresh orders per round, as the library's rounds have */
        arb_rank *r = rank_of(rs, &single);
        for (size_t k = 0; k < 3; k++)
            reps[k * rounds + round] = entry_of(r, names[k], NULL)->score;
        arb_rank_destroy(r);
        arb_battles_destroy(rs);
    }
    for (size_t k = 0; k < 3; k++) {
        double *v = reps + k * rounds;
        gsl_sort(v, 1, rounds);
        double lo = gsl_stats_quantile_from_sorted_data(v, 1, rounds, 0.025);
        double hi = gsl_stats_quantile_from_sorted_data(v, 1, rounds, 0.975);
        const arb_rank_entry *e = entry_of(fast, names[k], NULL);
        double width = hi - lo, fast_width = e->ci_hi - e->ci_lo;
        print_message("elo interval %s: library [%.1f, %.1f] width %.1f, brute force [%.1f, "
                      "%.1f] width %.1f\n", names[k], e->ci_lo, e->ci_hi, fast_width, lo, hi,
                      width);
        assert_true(width > 20);
        assert_true(fast_width > 0.8 * width && fast_width < 1.25 * width);
        assert_true(e->ci_lo < e->score && e->score < e->ci_hi);
    }
    gsl_rng_free(rng);
    free(reps);
    arb_rank_destroy(fast);
    arb_battles_destroy(b);
}

/* The trend: one pass in the given order, rows after every k battles and at the end; the
** last row is the single-order Elo. */
static void elo_trend(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    add(b, "q1", "A", "B", "judge", -1);
    add(b, "q2", "B", "A", "judge", 0);
    add(b, "q3", "A", "C", "judge", 1);
    add(b, "q4", "C", "B", "judge", -1);
    add(b, "q5", "B", "A", "judge", 1);
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_ELO;
    p.elo_permutations = 1;
    p.trend_every = 2;
    arb_rank *r = rank_of(b, &p);
    assert_int_equal(r->n_trend, 3); /* after 2, 4, 5 */
    size_t ia = 0, ic = 0;
    entry_of(r, "A", &ia);
    entry_of(r, "C", &ic);
    size_t n = arb_rank_count(r);
    assert_close(r->trend[0 * n + ia], 1014.530498471025, 1e-9);
    assert_close(r->trend[0 * n + ic], 1000, 0);
    for (size_t k = 0; k < n; k++)
        assert_close(r->trend[2 * n + k], arb_rank_entry_at(r, k)->score, 1e-9);
    char *json = arb_rank_to_json(r);
    json_t *root = json_loads(json, 0, NULL);
    json_t *trend = json_object_get(root, "trend");
    assert_int_equal(json_array_size(trend), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(trend, 0), "after")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(trend, 2), "after")), 5);
    json_t *ratings = json_object_get(json_array_get(trend, 0), "ratings");
    assert_close(json_real_value(json_object_get(ratings, "A")), 1014.530498471025, 1e-9);
    json_decref(root);
    arb_free(json);
    char *text = arb_rank_to_text(r);
    assert_non_null(strstr(text, "Elo trend"));
    arb_free(text);
    arb_rank_destroy(r);
    arb_battles_destroy(b);
}

/* ---- Bradley-Terry ------------------------------------------------------------------------ */

static void bt_recovers_strengths(void **state)
{
    (void)state;
    const double rating[] = {1200, 1100, 1000, 900, 800}; /* mean 1000 */
    const char *names[] = {"m0", "m1", "m2", "m3", "m4"};
    arb_battles *b = simulate(rating, names, 5, 200000, 0, 3);
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_BT;
    arb_rank *r = rank_of(b, &p);
    assert_int_equal(arb_rank_count(r), 5);
    assert_false(r->bt_ridge_bound);
    double sum = 0;
    for (size_t k = 0; k < 5; k++) {
        const arb_rank_entry *e = arb_rank_entry_at(r, k);
        assert_string_equal(e->model, names[k]);
        assert_close(e->score, rating[k], 8); /* sd about 1.5 points at this n */
        sum += e->score;
    }
    assert_close(sum / 5, 1000, 1e-6); /* anchored: the mean is the initial rating */
    double m0 = arb_rank_entry_at(r, 0)->score, m3 = arb_rank_entry_at(r, 3)->score;
    arb_rank_destroy(r);

    /* anchoring on m3 keeps every difference and puts m3 at 1000 */
    p.anchor = "m3";
    r = rank_of(b, &p);
    assert_close(entry_of(r, "m3", NULL)->score, 1000, 1e-9);
    assert_close(entry_of(r, "m0", NULL)->score - 1000, m0 - m3, 1e-6);
    arb_rank_destroy(r);
    p.anchor = NULL;
    p.elo_initial = 1500;
    r = rank_of(b, &p);
    assert_close(entry_of(r, "m0", NULL)->score, m0 + 500, 1e-6);
    arb_rank_destroy(r);
    arb_battles_destroy(b);
}

/* Ties count half a win each way: A-B with 3 wins, 2 losses and 2 ties is 4 : 3, so the
** rating difference is 400·log10(4/3), up to the ridge's pull (1e-6 against an information
** of 7·(4/7)·(3/7) = 1.7 battles: about 1e-5 points). */
static void bt_ties_as_half_wins(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    int s[] = {-1, -1, 1, 0, -1, 1, 0};
    for (size_t k = 0; k < sizeof s / sizeof *s; k++) add(b, "q", "A", "B", "judge", s[k]);
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_BT;
    arb_rank *r = rank_of(b, &p);
    double diff = entry_of(r, "A", NULL)->score - entry_of(r, "B", NULL)->score;
    assert_close(diff, 400 * log10(4.0 / 3.0), 1e-4);
    arb_rank_destroy(r);
    arb_battles_destroy(b);
}

static void bt_bootstrap_reproducible(void **state)
{
    (void)state;
    const double rating[] = {1100, 1000, 950, 900};
    const char *names[] = {"w", "x", "y", "z"};
    arb_battles *b = simulate(rating, names, 4, 2000, 0.1, 17);
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_BT;
    p.bootstrap = 1000;
    p.seed = 7;
    arb_rank *r1 = rank_of(b, &p), *r2 = rank_of(b, &p);
    p.seed = 8;
    arb_rank *r3 = rank_of(b, &p);
    int differ = 0;
    for (size_t k = 0; k < 4; k++) {
        const arb_rank_entry *e1 = arb_rank_entry_at(r1, k), *e2 = arb_rank_entry_at(r2, k);
        const arb_rank_entry *e3 = arb_rank_entry_at(r3, k);
        assert_true(e1->ci_lo < e1->score && e1->score < e1->ci_hi);
        assert_close(e2->ci_lo, e1->ci_lo, 0);
        assert_close(e2->ci_hi, e1->ci_hi, 0);
        differ |= e3->ci_lo != e1->ci_lo || e3->ci_hi != e1->ci_hi;
        assert_close(e3->ci_lo, e1->ci_lo, 0.2 * (e1->ci_hi - e1->ci_lo)); /* similar though */
    }
    assert_true(differ);
    arb_rank_destroy(r1);
    arb_rank_destroy(r2);
    arb_rank_destroy(r3);
    arb_battles_destroy(b);
}

/* The multinomial draw of per-pair outcome counts is the distribution of resampled battles
** (§6): intervals from resampling the battles themselves (done here, by brute force) agree. */
static void bt_bootstrap_matches_battle_resampling(void **state)
{
    (void)state;
    const double rating[] = {1080, 1000, 920};
    const char *names[] = {"p", "q", "r"};
    const size_t n = 600, rounds = 800;
    arb_battles *b = simulate(rating, names, 3, n, 0.15, 23);
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_BT;
    p.bootstrap = rounds;
    arb_rank *fast = rank_of(b, &p);

    double *reps = malloc(3 * rounds * sizeof *reps);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 4242);
    arb_rank_params single = arb_rank_default_params();
    single.method = ARB_RANK_BT;
    for (size_t round = 0; round < rounds; round++) {
        arb_battles *rs = arb_battles_create();
        for (size_t t = 0; t < n; t++) {
            arb_battle x = arb_battles_at(b, gsl_rng_uniform_int(rng, n));
            assert_int_equal(arb_battles_add(rs, &x), ARB_OK);
        }
        arb_rank *r = rank_of(rs, &single);
        for (size_t k = 0; k < 3; k++)
            reps[k * rounds + round] = arb_rank_count(r) == 3 ? entry_of(r, names[k], NULL)->score : NAN;
        arb_rank_destroy(r);
        arb_battles_destroy(rs);
    }
    for (size_t k = 0; k < 3; k++) {
        double *v = reps + k * rounds;
        gsl_sort(v, 1, rounds);
        double lo = gsl_stats_quantile_from_sorted_data(v, 1, rounds, 0.025);
        double hi = gsl_stats_quantile_from_sorted_data(v, 1, rounds, 0.975);
        const arb_rank_entry *e = entry_of(fast, names[k], NULL);
        double width = hi - lo, fast_width = e->ci_hi - e->ci_lo;
        assert_true(width > 20); /* a real interval: about ±25 points at n = 600 */
        assert_close(fast_width, width, 0.15 * width);
        assert_close(e->ci_lo, lo, 0.15 * width);
        assert_close(e->ci_hi, hi, 0.15 * width);
    }
    gsl_rng_free(rng);
    free(reps);
    arb_rank_destroy(fast);
    arb_battles_destroy(b);
}

/* Ties only: every method puts everyone level. */
static void ties_only(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    add(b, "q1", "A", "B", "judge", 0);
    add(b, "q2", "B", "C", "judge", 0);
    add(b, "q3", "C", "A", "judge", 0);
    add(b, "q4", "A", "B", "judge", 0);
    for (int method = ARB_RANK_WINRATE; method <= ARB_RANK_BT; method++) {
        arb_rank_params p = arb_rank_default_params();
        p.method = (arb_rank_method)method;
        p.elo_permutations = 20;
        p.bootstrap = 100;
        arb_rank *r = rank_of(b, &p);
        assert_int_equal(arb_rank_count(r), 3);
        for (size_t k = 0; k < 3; k++) {
            const arb_rank_entry *e = arb_rank_entry_at(r, k);
            assert_close(e->score, method == ARB_RANK_WINRATE ? 0.5 : 1000, 1e-9);
            assert_int_equal(e->ties, e->battles);
        }
        /* equal scores: ordered by name, and all share rank 1 */
        assert_string_equal(arb_rank_entry_at(r, 0)->model, "A");
        assert_string_equal(arb_rank_entry_at(r, 2)->model, "C");
        if (method == ARB_RANK_BT) assert_false(r->bt_ridge_bound);
        char *json = arb_rank_to_json(r);
        json_t *root = json_loads(json, 0, NULL);
        json_t *models = json_object_get(root, "models");
        assert_int_equal(json_integer_value(json_object_get(json_array_get(models, 2), "rank")), 1);
        json_decref(root);
        arb_free(json);
        arb_rank_destroy(r);
    }
    arb_battles_destroy(b);
}

/* A model that never wins: the BT MLE does not exist; the ridge keeps its rating finite and
** far below, the others stay where the data put them, and the output says so. */
static void never_wins(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    for (int k = 0; k < 30; k++) {
        add(b, "q", "A", "B", "judge", k % 3 == 0 ? 1 : -1); /* A 20 : 10 */
        add(b, "q", "L", k % 2 ? "A" : "B", "judge", 1);     /* L loses every time */
    }
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_BT;
    p.bootstrap = 200;
    arb_rank *r = rank_of(b, &p);
    assert_true(r->bt_ridge_bound);
    const arb_rank_entry *l = entry_of(r, "L", NULL);
    assert_true(isfinite(l->score));
    double a = entry_of(r, "A", NULL)->score, bb = entry_of(r, "B", NULL)->score;
    assert_true(l->score < bb - 1000);
    assert_close(a - bb, 400 * log10(2.0), 1.0); /* A-B unaffected by L's battles */
    assert_int_equal(l->wins, 0);
    char *text = arb_rank_to_text(r);
    assert_non_null(strstr(text, "maximum-likelihood ratings do not exist"));
    arb_free(text);
    char *json = arb_rank_to_json(r);
    json_t *root = json_loads(json, 0, NULL);
    assert_true(json_is_false(json_object_get(root, "bt_mle_exists")));
    json_decref(root);
    arb_free(json);
    arb_rank_destroy(r);

    p.method = ARB_RANK_WINRATE;
    r = rank_of(b, &p);
    assert_close(entry_of(r, "L", NULL)->score, 0, 0);
    assert_close(entry_of(r, "L", NULL)->ci_hi, 0, 0);
    arb_rank_destroy(r);
    arb_battles_destroy(b);
}

/* ---- length and style control --------------------------------------------------------------- */

/* Battles among four equally strong models whose answers vary in length; the verdict depends
** on the length difference with strength `length_effect` (0: not at all), plus a real
** strength difference for "strong". Model "long" writes longer answers on average. */
static arb_battles *length_battles(double length_effect, size_t n, unsigned long seed)
{
    const char *names[] = {"long", "plain", "other", "strong"};
    const double mean_len[] = {260, 150, 150, 150};
    const double strength[] = {0, 0, 0, 0.4};
    arb_battles *b = arb_battles_create();
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, seed);
    char q[32];
    for (size_t t = 0; t < n; t++) {
        size_t i = gsl_rng_uniform_int(rng, 4), j = gsl_rng_uniform_int(rng, 3);
        if (j >= i) j++;
        double si[ARB_STYLE__COUNT], sj[ARB_STYLE__COUNT];
        si[0] = mean_len[i] * (0.5 + gsl_rng_uniform(rng));
        sj[0] = mean_len[j] * (0.5 + gsl_rng_uniform(rng));
        for (int f = 1; f < ARB_STYLE__COUNT; f++) { /* markdown counts: no effect */
            si[f] = (double)gsl_rng_uniform_int(rng, 5);
            sj[f] = (double)gsl_rng_uniform_int(rng, 5);
        }
        double z = (si[0] - sj[0]) / (si[0] + sj[0]);
        double d = strength[i] - strength[j] + length_effect * z;
        int s = gsl_rng_uniform(rng) < 0.1 ? 0 : gsl_rng_uniform(rng) < 1 / (1 + exp(-d)) ? -1 : 1;
        snprintf(q, sizeof q, "q%zu", t);
        add_styled(b, q, names[i], names[j], s, si, sj, ARB_STYLE__COUNT);
    }
    gsl_rng_free(rng);
    return b;
}

static void lc_no_length_effect(void **state)
{
    (void)state;
    arb_battles *b = length_battles(0, 20000, 31);
    add(b, "q-no-style", "plain", "long", "judge", 0); /* no lengths: left out, counted */
    arb_rank_params p = arb_rank_default_params();
    p.length_control = 1;
    arb_rank *r = rank_of(b, &p);
    assert_int_equal(r->lc_rows, 20000);
    assert_int_equal(r->lc_left_out, 1);
    for (size_t k = 0; k < arb_rank_count(r); k++) {
        const arb_rank_entry *e = arb_rank_entry_at(r, k);
        assert_close(e->lc_win_rate, e->score, 0.01);
        assert_undefined(e->lc_ci_lo);
    }
    assert_close(r->lc_coef, 0, 15); /* Elo points per typical difference: about 0 */
    char *text = arb_rank_to_text(r);
    assert_non_null(strstr(text, "LC win"));
    assert_non_null(strstr(text, "(1 left out: length unknown)"));
    arb_free(text);
    arb_rank_destroy(r);
    arb_battles_destroy(b);
}

static void lc_shrinks_length_advantage(void **state)
{
    (void)state;
    arb_battles *b = length_battles(3.0, 20000, 37);
    arb_rank_params p = arb_rank_default_params();
    p.length_control = 1;
    p.style_control = 1;
    p.bootstrap = 30;
    arb_rank *r = rank_of(b, &p);
    const arb_rank_entry *lg = entry_of(r, "long", NULL), *pl = entry_of(r, "plain", NULL);
    const arb_rank_entry *st = entry_of(r, "strong", NULL);
    assert_true(lg->score > 0.58);                  /* long wins by length alone */
    assert_close(lg->lc_win_rate, 0.5 - 0.03, 0.04); /* at equal length it is average */
    assert_true(fabs(lg->lc_win_rate - 0.5) < 0.5 * fabs(lg->score - 0.5));
    assert_true(st->lc_win_rate > 0.55);            /* a real strength survives */
    assert_true(lg->lc_ci_lo < lg->lc_win_rate && lg->lc_win_rate < lg->lc_ci_hi);
    assert_true(r->lc_coef > 100);
    /* style control: long's style rating close to plain's; length has the effect */
    assert_close(lg->style_rating, pl->style_rating, 30);
    assert_true(st->style_rating > pl->style_rating + 30);
    assert_true(r->style_coef[ARB_STYLE_LENGTH] > 100);
    assert_close(r->style_coef[ARB_STYLE_HEADERS], 0, 20);
    assert_true(lg->style_ci_lo < lg->style_rating && lg->style_rating < lg->style_ci_hi);
    char *json = arb_rank_to_json(r);
    json_t *root = json_loads(json, 0, NULL);
    json_t *m0 = json_array_get(json_object_get(root, "models"), 0);
    assert_true(json_is_real(json_object_get(m0, "lc_win_rate")));
    assert_int_equal(json_array_size(json_object_get(m0, "lc_ci")), 2);
    assert_true(json_is_real(json_object_get(m0, "style_rating")));
    json_t *sc = json_object_get(root, "style_control");
    assert_int_equal(json_integer_value(json_object_get(sc, "battles")), 20000);
    assert_true(json_is_real(json_object_get(json_object_get(sc, "coefficients"), "bold")));
    json_decref(root);
    arb_free(json);
    arb_rank_destroy(r);
    arb_battles_destroy(b);
}

/* ---- selection ---------------------------------------------------------------------------- */

static void selection_humans_and_self(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    add(b, "q1", "A", "B", "A", -1);      /* A reviews its own pair */
    add(b, "q1", "A", "B", "C", 1);
    add(b, "q2", "B", "C", "A", 0);
    add(b, "q1", "A", "B", "human-1", 1); /* humans: the reference, not ranked */
    arb_rank_params p = arb_rank_default_params();
    uint8_t use[4];
    uint32_t rm[3];
    char *err = NULL;
    assert_int_equal(arb__rank_select(b, &p, use, rm, NULL, &err), 0);
    assert_int_equal(use[0] + use[1] + use[2] + use[3], 3);
    assert_int_equal(use[3], 0);
    assert_int_equal(rm[arb__strtab_find(&b->reviewers, "A")], arb__strtab_find(&b->models, "A"));
    assert_int_equal(rm[arb__strtab_find(&b->reviewers, "human-1")], UINT32_MAX);
    p.exclude_self = 1;
    assert_int_equal(arb__rank_select(b, &p, use, rm, NULL, &err), 0);
    assert_int_equal(use[0], 0);
    assert_int_equal(use[1], 1);
    assert_int_equal(use[2], 1); /* A reviewing B vs C stays */
    /* reviewer_info: A is not a contestant after all */
    arb_reviewer_info info = {"A", NULL, NAN};
    p.reviewer_info = &info;
    p.n_reviewer_info = 1;
    assert_int_equal(arb__rank_select(b, &p, use, rm, NULL, &err), 0);
    assert_int_equal(use[0], 1);
    p = arb_rank_default_params();
    const char *only[] = {"human-1"};
    p.reviewers = only;
    p.n_reviewers = 1;
    assert_int_equal(arb__rank_select(b, &p, use, rm, NULL, &err), 0);
    assert_int_equal(use[0] + use[1] + use[2], 0);
    assert_int_equal(use[3], 1);

    /* through arb_rank_compute: humans left out of the ranking; self-enhancement computed
    ** for the reviewers that are contestants */
    p = arb_rank_default_params();
    arb_rank *r = rank_of(b, &p);
    assert_int_equal(r->n_battles_used, 3);
    assert_int_equal(entry_of(r, "A", NULL)->battles, 2);
    assert_true(arb_rank_reviewer_count(r) >= 1);
    arb_rank_destroy(r);
    arb_battles_destroy(b);

    /* only humans reviewed: they are the ranking's reviewers */
    b = arb_battles_create();
    add(b, "q1", "A", "B", "human-1", 1);
    add(b, "q1", "A", "B", "human-2", 1);
    r = rank_of(b, &p);
    assert_int_equal(r->n_battles_used, 2);
    assert_close(entry_of(r, "B", NULL)->score, 1, 0);
    arb_rank_destroy(r);
    arb_battles_destroy(b);
}

static void peer_dispatch(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    const char *m[] = {"A", "B", "C"};
    char q[16];
    for (int t = 0; t < 12; t++) {
        snprintf(q, sizeof q, "q%d", t);
        for (int r = 0; r < 3; r++) /* every contestant reviews: A > B > C mostly */
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    if (i != j) add(b, q, m[i], m[j], m[r], (t + r) % 4 == 0 ? 0 : i < j ? -1 : 1);
    }
    add(b, "q0", "A", "B", "human", -1);
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_PEER_WINRATE;
    arb_rank *r = rank_of(b, &p);
    assert_int_equal(arb_rank_count(r), 3);
    assert_string_equal(arb_rank_entry_at(r, 0)->model, "A");
    double sum = 0;
    for (size_t k = 0; k < arb_rank_reviewer_count(r); k++) {
        const arb_rank_reviewer *v = arb_rank_reviewer_at(r, k);
        if (v->model) sum += v->weight;
    }
    assert_close(sum, 1, 1e-12);
    assert_true(arb_rank_iterations(r, NULL) >= 1);
    assert_true(r->all_scores != NULL);
    assert_true(r->human.n_comparisons >= 1);
    assert_non_null(r->pairwise);
    assert_close(arb_rank_pairwise(r, 0, 1) + arb_rank_pairwise(r, 1, 0), 1, 1e-12);
    char *text = arb_rank_to_text(r);
    assert_non_null(strstr(text, "peer rank"));
    assert_non_null(strstr(text, "All (weighted)"));
    assert_non_null(strstr(text, "Fleiss"));
    arb_free(text);
    char *json = arb_rank_to_json(r);
    json_t *root = json_loads(json, 0, NULL);
    assert_non_null(root);
    assert_true(json_is_object(json_object_get(root, "peer")));
    assert_true(json_is_object(json_object_get(root, "human")));
    assert_true(json_array_size(json_object_get(root, "reviewers")) >= 3);
    assert_true(json_is_real(
        json_object_get(json_array_get(json_object_get(root, "models"), 0), "all_score")));
    json_decref(root);
    arb_free(json);
    arb_rank_destroy(r);
    arb_battles_destroy(b);
}

/* Work big enough for two threads (rank.c splits rounds and permutations when the work
** passes 2e6 steps): results are the same on every run, and Elo stays zero-sum. */
static void threaded_runs_agree(void **state)
{
    (void)state;
    double rating[20];
    char names_buf[20][8];
    const char *names[20];
    for (int k = 0; k < 20; k++) {
        rating[k] = 1000 + 15.0 * k;
        snprintf(names_buf[k], sizeof names_buf[k], "n%02d", k);
        names[k] = names_buf[k];
    }
    arb_battles *b = simulate(rating, names, 20, 5000, 0.1, 101);
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_BT;
    p.bootstrap = 1000; /* 1000 rounds x 570 cells */
    arb_rank *r1 = rank_of(b, &p), *r2 = rank_of(b, &p);
    for (size_t k = 0; k < 20; k++) {
        const arb_rank_entry *e1 = arb_rank_entry_at(r1, k), *e2 = arb_rank_entry_at(r2, k);
        assert_string_equal(e1->model, e2->model);
        assert_close(e2->ci_lo, e1->ci_lo, 0);
        assert_close(e2->ci_hi, e1->ci_hi, 0);
        assert_true(e1->ci_lo < e1->score && e1->score < e1->ci_hi);
    }
    arb_rank_destroy(r1);
    arb_rank_destroy(r2);

    p.method = ARB_RANK_ELO;
    p.bootstrap = 0;
    p.elo_permutations = 500; /* 500 x 5000 battles */
    r1 = rank_of(b, &p);
    r2 = rank_of(b, &p);
    double sum = 0;
    for (size_t k = 0; k < 20; k++) {
        assert_close(arb_rank_entry_at(r2, k)->score, arb_rank_entry_at(r1, k)->score, 0);
        assert_close(arb_rank_entry_at(r2, k)->sd, arb_rank_entry_at(r1, k)->sd, 0);
        sum += arb_rank_entry_at(r1, k)->score;
    }
    assert_close(sum / 20, 1000, 1e-9);
    arb_rank_destroy(r1);
    arb_rank_destroy(r2);
    arb_battles_destroy(b);
}

/* ---- rendering ---------------------------------------------------------------------------- */

static void render_text_and_json(void **state)
{
    (void)state;
    arb_battles *b = hand_battles();
    add(b, "q9", "evil\x1b[31mmodel", "A", "judge", 1);
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_BT;
    p.bootstrap = 100;
    arb_rank *r = rank_of(b, &p);
    char *text = arb_rank_to_text(r);
    assert_non_null(strstr(text, "Bradley-Terry"));
    assert_non_null(strstr(text, "95% interval"));
    assert_non_null(strstr(text, "pairwise win rate"));
    assert_non_null(strstr(text, "evil?[31mmodel"));
    assert_null(strchr(text, '\x1b'));
    assert_null(strstr(text, "nan"));
    assert_non_null(strstr(text, "n/a")); /* B and D never met */
    arb_free(text);

    char *json = arb_rank_to_json(r);
    assert_null(strstr(json, "NaN"));
    json_error_t jerr;
    json_t *root = json_loads(json, 0, &jerr);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "method")), "bt");
    assert_string_equal(json_string_value(json_object_get(root, "arbiter_version")), ARB_VERSION);
    json_t *params = json_object_get(root, "params");
    assert_int_equal(json_integer_value(json_object_get(params, "bootstrap")), 100);
    assert_true(json_is_null(json_object_get(params, "anchor")));
    assert_int_equal(json_integer_value(json_object_get(root, "n_battles")), 6);
    json_t *models = json_object_get(root, "models");
    assert_int_equal(json_array_size(models), 5);
    json_t *m0 = json_array_get(models, 0);
    const char *keys[] = {"rank", "model", "score", "ci", "sd", "battles", "wins", "ties",
                          "losses", "lc_win_rate", "lc_ci", "style_rating", "style_ci",
                          "all_score"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        if (!json_object_get(m0, keys[k])) fail_msg("models[0] lacks %s", keys[k]);
    assert_int_equal(json_array_size(json_object_get(m0, "ci")), 2);
    assert_true(json_is_null(json_object_get(m0, "sd")));
    assert_true(json_is_null(json_object_get(m0, "lc_ci")));
    json_t *pw = json_object_get(root, "pairwise");
    assert_int_equal(json_array_size(json_object_get(pw, "models")), 5);
    json_t *row0 = json_array_get(json_object_get(pw, "win_rate"), 0);
    assert_true(json_is_null(json_array_get(row0, 0)));
    assert_true(json_is_null(json_object_get(root, "peer")));
    assert_true(json_is_null(json_object_get(root, "human")));
    assert_true(json_is_null(json_object_get(root, "trend")));
    assert_int_equal(json_array_size(json_object_get(root, "reviewers")), 0);
    int found = 0;
    for (size_t k = 0; k < json_array_size(models); k++)
        found |= !strcmp(json_string_value(json_object_get(json_array_get(models, k), "model")),
                         "evil\x1b[31mmodel");
    assert_true(found); /* JSON keeps the name (escaped by jansson) */
    json_decref(root);
    arb_free(json);
    arb_rank_destroy(r);

    /* Elo text shows the spread column */
    p.method = ARB_RANK_ELO;
    p.elo_permutations = 10;
    p.bootstrap = 0;
    r = rank_of(b, &p);
    text = arb_rank_to_text(r);
    assert_non_null(strstr(text, "online Elo"));
    assert_non_null(strstr(text, " sd"));
    arb_free(text);
    arb_rank_destroy(r);
    arb_battles_destroy(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_params),
        cmocka_unit_test(no_battles),
        cmocka_unit_test(bad_params),
        cmocka_unit_test(winrate_hand),
        cmocka_unit_test(strong_weight_winrate_hand),
        cmocka_unit_test(strong_weight_is_repetition),
        cmocka_unit_test(elo_hand),
        cmocka_unit_test(elo_zero_sum),
        cmocka_unit_test(elo_bootstrap),
        cmocka_unit_test(elo_bootstrap_belongs_to_printed_estimator),
        cmocka_unit_test(elo_trend),
        cmocka_unit_test(bt_recovers_strengths),
        cmocka_unit_test(bt_ties_as_half_wins),
        cmocka_unit_test(bt_bootstrap_reproducible),
        cmocka_unit_test(bt_bootstrap_matches_battle_resampling),
        cmocka_unit_test(ties_only),
        cmocka_unit_test(never_wins),
        cmocka_unit_test(lc_no_length_effect),
        cmocka_unit_test(lc_shrinks_length_advantage),
        cmocka_unit_test(selection_humans_and_self),
        cmocka_unit_test(peer_dispatch),
        cmocka_unit_test(threaded_runs_agree),
        cmocka_unit_test(render_text_and_json),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
