/*
** test_factors.c -- the factor analysis of METHODS §5: the stepwise AIC engine on synthetic
** data whose answers are known (a regression small enough to do by hand, an exact linear
** relation with an irrelevant variable, a categorical block, a variable added and later
** removed, rank deficiency, constant variables, bad input), then the analysis over
** (judge, candidate, task) groups with its text and JSON, and finally through a store.
**
** Reference numbers not derivable in one line were computed by an independent implementation
** (normal equations solved by Gauss–Jordan in plain Python, with the same AIC and floor); the
** data are small integers so anyone can repeat it.
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

static void assert_close(double got, double want, double tol)
{
    if (isnan(got) || fabs(got - want) > tol) fail_msg("got %.15g, want %.15g", got, want);
}
#define assert_near(got, want) assert_close((got), (want), 1e-9)

static double aic_of(double rss, double n, double k)
{
    return 2.0 * k + n * (log(2.0 * M_PI * rss / n) + 1.0);
}

static arb__factor_var numeric(const char *name, const double *x)
{
    arb__factor_var v;
    memset(&v, 0, sizeof v);
    v.name = name;
    v.x = x;
    return v;
}

static arb__factor_var categorical(const char *name, const size_t *level, size_t n_levels)
{
    arb__factor_var v;
    memset(&v, 0, sizeof v);
    v.name = name;
    v.level = level;
    v.n_levels = n_levels;
    return v;
}

/* ---- the engine --------------------------------------------------------------------------- */

/* n = 4, x = 0 1 2 3, y = 1 3 2 5, by hand:
**   x̄ = 1.5, ȳ = 2.75, Sxx = 5, Sxy = 5.5 -> slope 1.1, intercept 2.75 − 1.65 = 1.1
**   fitted 1.1 2.2 3.3 4.4, residuals −.1 .8 −1.3 .6, RSS = 2.7; TSS = 8.75; R² = 1 − 2.7/8.75
**   AIC(intercept only) = 2·2 + 4(ln(2π·8.75/4) + 1) = 18.48254562...
**   AIC(x)              = 2·3 + 4(ln(2π·2.7/4) + 1)  = 15.77933791... (lower: x is added)
**   s² = 2.7/2 = 1.35; SE(slope) = √(1.35/5) = √.27; SE(intercept) = √(1.35(1/4 + 2.25/5))
**   t = 1.1/√.27; with 2 df the t distribution has P(|T| > t) = 1 − t/√(2 + t²). */
static void stepwise_by_hand(void **state)
{
    const double x[] = {0, 1, 2, 3}, y[] = {1, 3, 2, 5};
    arb__factor_var vars[] = {numeric("x", x)};
    arb__stepwise_result r;
    assert_int_equal(arb__stepwise_fit(y, 4, vars, 1, &r), ARB_OK);
    double aic0 = aic_of(8.75, 4, 2), aic1 = aic_of(2.7, 4, 3);
    assert_near(aic0, 18.48254562263591);
    assert_near(aic1, 15.779337913198953);
    assert_near(r.aic_null, aic0);
    assert_near(r.aic, aic1);
    assert_int_equal(r.n_steps, 1);
    assert_int_equal(r.steps[0].add, 1);
    assert_int_equal(r.steps[0].var, 0);
    assert_near(r.steps[0].aic, aic1);
    assert_int_equal(r.in_model[0], 1);
    assert_near(r.delta_aic[0], aic0 - aic1);
    assert_near(r.rss, 2.7);
    assert_near(r.r_squared, 1.0 - 2.7 / 8.75);
    assert_int_equal(r.rank, 2);
    assert_int_equal(r.df_residual, 2);
    assert_int_equal(r.n_coefs, 2);
    assert_true(r.coefs[0].var == SIZE_MAX);
    assert_near(r.coefs[0].estimate, 1.1);
    assert_near(r.coefs[0].std_error, sqrt(1.35 * (0.25 + 2.25 / 5.0)));
    assert_int_equal(r.coefs[1].var, 0);
    assert_false(r.coefs[1].aliased);
    assert_near(r.coefs[1].estimate, 1.1);
    assert_near(r.coefs[1].std_error, sqrt(0.27));
    double t = 1.1 / sqrt(0.27);
    assert_near(r.coefs[1].t, t);
    assert_near(r.coefs[1].p_value, 1.0 - t / sqrt(2.0 + t * t));
    arb__stepwise_result_free(&r);
}

/* y = 2 + 3·x1 exactly, x2 irrelevant (not collinear with x1). The fit with x1 is perfect, so
** σ̂² sits at the floor (1e-9·max|y|)² = (2e-8)², and adding x2 could only add 2: x1 kept,
** x2 not. */
static void stepwise_exact_linear_irrelevant(void **state)
{
    const double x1[] = {1, 2, 3, 4, 5, 6}, x2[] = {1, -1, -1, 1, 1, -1};
    double y[6];
    for (int i = 0; i < 6; i++) y[i] = 2.0 + 3.0 * x1[i];
    arb__factor_var vars[] = {numeric("x1", x1), numeric("x2", x2)};
    arb__stepwise_result r;
    assert_int_equal(arb__stepwise_fit(y, 6, vars, 2, &r), ARB_OK);
    assert_int_equal(r.n_steps, 1);
    assert_int_equal(r.steps[0].var, 0);
    assert_int_equal(r.in_model[0], 1);
    assert_int_equal(r.in_model[1], 0);
    assert_true(isnan(r.delta_aic[1]));
    /* TSS = 9·17.5 = 157.5 */
    assert_near(r.aic_null, aic_of(157.5, 6, 2));
    double floor_aic = 2.0 * 3 + 6.0 * (log(2.0 * M_PI * 2e-8 * 2e-8) + 1.0);
    assert_near(r.aic, floor_aic);
    assert_close(r.aic, -189.70314036225295, 1e-6);
    assert_close(r.coefs[0].estimate, 2.0, 1e-9);
    assert_close(r.coefs[1].estimate, 3.0, 1e-9);
    assert_close(r.r_squared, 1.0, 1e-12);
    arb__stepwise_result_free(&r);
}

/* A categorical with three levels present that shifts y by 1, 3, 6, plus noise −.1 0 .1 in
** each level; an irrelevant numeric x = 1 −2 1 per level, orthogonal to both. Level 0 of the
** categorical never occurs, so the reference is level 1 ("a").
**   RSS(g) = 3·(.01 + .01) = .06, TSS = 3(1−10/3)² + 3(3−10/3)² + 3(6−10/3)² + .06 = 38.06
**   AIC(g) = 2·4 + 9(ln(2π·.06/9) + 1); the block enters in one step with both dummies
**   estimates 1 (intercept), 2 (b − a), 5 (c − a); s² = .06/6 = .01
**   SE(intercept) = √(.01/3), SE(dummy) = √(.01·(1/3 + 1/3)). x would lower RSS by 0. */
static void stepwise_categorical_block(void **state)
{
    const size_t g[] = {1, 1, 1, 2, 2, 2, 3, 3, 3};
    const char *const names[] = {"unused", "a", "b", "c"};
    const double x[] = {1, -2, 1, 1, -2, 1, 1, -2, 1};
    const double y[] = {0.9, 1, 1.1, 2.9, 3, 3.1, 5.9, 6, 6.1};
    arb__factor_var vars[] = {numeric("x", x), categorical("g", g, 4)};
    vars[1].level_names = names;
    arb__stepwise_result r;
    assert_int_equal(arb__stepwise_fit(y, 9, vars, 2, &r), ARB_OK);
    assert_int_equal(r.n_steps, 1);
    assert_int_equal(r.steps[0].var, 1);
    assert_int_equal(r.in_model[1], 1);
    assert_int_equal(r.in_model[0], 0);
    assert_int_equal(r.reference[1], 1);
    assert_true(r.reference[0] == SIZE_MAX);
    double aic_g = aic_of(0.06, 9, 4), aic0 = aic_of(38.06, 9, 2);
    assert_near(r.aic, aic_g);
    assert_close(r.aic, -11.554824049182209, 1e-9);
    assert_near(r.aic_null, aic0);
    assert_near(r.delta_aic[1], aic0 - aic_g);
    assert_near(r.r_squared, 1.0 - 0.06 / 38.06);
    assert_int_equal(r.rank, 3);
    assert_int_equal(r.n_coefs, 3);
    assert_near(r.coefs[0].estimate, 1.0);
    assert_near(r.coefs[0].std_error, sqrt(0.01 / 3.0));
    assert_int_equal(r.coefs[1].var, 1);
    assert_int_equal(r.coefs[1].level, 2);
    assert_near(r.coefs[1].estimate, 2.0);
    assert_near(r.coefs[1].std_error, sqrt(0.02 / 3.0));
    assert_int_equal(r.coefs[2].level, 3);
    assert_near(r.coefs[2].estimate, 5.0);
    /* p of a t of 5/√(.02/3) ≈ 61 with 6 df is tiny but defined */
    assert_true(r.coefs[2].p_value >= 0.0 && r.coefs[2].p_value < 1e-8);
    arb__stepwise_result_free(&r);
}

/* Bidirectional: y ≈ x1 + x2 and x3 = x1 + x2 + small error. x3 alone is the best single
** variable, then x2 and x1 join, and x3 is no longer worth its coefficient and leaves.
** AIC of every subset (independent implementation):
**   {}        51.752930551151984      {x1,x2}    16.31081928904654
**   {x1}      44.048389392773174      {x1,x3}    34.76221970351749
**   {x2}      46.478379677380254      {x2,x3}    29.57015767046032
**   {x3}      32.8454359798332        {x1,x2,x3} 17.547097063105
** trace: add x3 (32.85), add x2 (29.57), add x1 (17.55), remove x3 (16.31). */
static void stepwise_adds_then_removes(void **state)
{
    const double x1[] = {9, 4, 5, 8, 0, 7, 3, 0}, x2[] = {2, 1, 5, 7, 3, 6, 8, 1};
    const double x3[] = {13, 4, 8, 14, 4, 13, 10, 2};
    const double y[] = {10.5, 4.5, 9.5, 15.5, 3.5, 13.0, 10.5, 0.5};
    arb__factor_var vars[] = {numeric("x1", x1), numeric("x2", x2), numeric("x3", x3)};
    arb__stepwise_result r;
    assert_int_equal(arb__stepwise_fit(y, 8, vars, 3, &r), ARB_OK);
    assert_near(r.aic_null, 51.752930551151984);
    assert_int_equal(r.n_steps, 4);
    const int adds[] = {1, 1, 1, 0};
    const size_t which[] = {2, 1, 0, 2};
    const double aics[] = {32.8454359798332, 29.57015767046032, 17.547097063105,
                           16.31081928904654};
    for (int s = 0; s < 4; s++) {
        assert_int_equal(r.steps[s].add, adds[s]);
        assert_int_equal(r.steps[s].var, which[s]);
        assert_near(r.steps[s].aic, aics[s]);
    }
    assert_int_equal(r.in_model[0], 1);
    assert_int_equal(r.in_model[1], 1);
    assert_int_equal(r.in_model[2], 0);
    assert_near(r.aic, 16.31081928904654);
    assert_near(r.delta_aic[0], 46.478379677380254 - 16.31081928904654);
    assert_near(r.delta_aic[1], 44.048389392773174 - 16.31081928904654);
    assert_true(isnan(r.delta_aic[2]));
    assert_near(r.coefs[1].estimate, 0.9893053249904229);
    assert_near(r.coefs[2].estimate, 1.0549738219895284);
    arb__stepwise_result_free(&r);
}

/* Rank deficiency. Judges j1..j3 and candidates c1..c3 where j3 only ever meets c3 and c3
** only j3, so the dummy of c3 equals the dummy of j3: in the model {judge, candidate} the
** c3 column is aliased (no estimate, not counted in k). y = .1[j2] + .5[j3] + .2[c2] + noise.
** Independent implementation: candidate first (−24.81), then judge (−46.79); RSS .002,
** k = 4 independent coefficients + 1. */
static void stepwise_rank_deficient(void **state)
{
    const size_t judge[] = {0, 0, 1, 1, 2, 0, 0, 1, 1, 2};
    const size_t cand[] = {0, 1, 0, 1, 2, 0, 1, 0, 1, 2};
    const double y[] = {0.01, 0.19, 0.12, 0.30, 0.48, -0.01, 0.21, 0.08, 0.30, 0.52};
    arb__factor_var vars[] = {categorical("judge", judge, 3), categorical("candidate", cand, 3)};
    arb__stepwise_result r;
    assert_int_equal(arb__stepwise_fit(y, 10, vars, 2, &r), ARB_OK);
    assert_int_equal(r.n_steps, 2);
    assert_int_equal(r.steps[0].var, 1);
    assert_close(r.steps[0].aic, -24.814208522085202, 1e-9);
    assert_int_equal(r.steps[1].var, 0);
    assert_close(r.aic, -46.79316125006891, 1e-9);
    assert_near(r.aic, aic_of(0.002, 10, 5));
    assert_int_equal(r.rank, 4);
    assert_int_equal(r.df_residual, 6);
    assert_int_equal(r.n_coefs, 5);
    /* intercept, judge=j2, judge=j3, candidate=c2, candidate=c3 (aliased) */
    assert_close(r.coefs[1].estimate, 0.1, 1e-12);
    assert_close(r.coefs[2].estimate, 0.5, 1e-12);
    assert_close(r.coefs[3].estimate, 0.2, 1e-12);
    assert_int_equal(r.coefs[4].var, 1);
    assert_int_equal(r.coefs[4].level, 2);
    assert_true(r.coefs[4].aliased);
    assert_true(isnan(r.coefs[4].estimate));
    assert_true(isnan(r.coefs[4].std_error));
    for (int j = 0; j < 4; j++) assert_false(r.coefs[j].aliased);
    assert_true(r.coefs[1].std_error > 0.0 && isfinite(r.coefs[1].std_error));
    arb__stepwise_result_free(&r);

    /* a numeric column that is an exact linear function of another: never both in the model
    ** (the second adds no independent column, so it cannot lower AIC) */
    const double x1[] = {1, 2, 3, 4, 5, 6, 7}, y2[] = {1.2, 1.9, 3.3, 3.8, 5.1, 6.2, 6.9};
    double x3[7];
    for (int i = 0; i < 7; i++) x3[i] = 2.0 * x1[i] + 1.0;
    arb__factor_var dup[] = {numeric("x1", x1), numeric("x3", x3)};
    assert_int_equal(arb__stepwise_fit(y2, 7, dup, 2, &r), ARB_OK);
    assert_int_equal(r.n_steps, 1);
    assert_int_equal(r.in_model[0] + r.in_model[1], 1);
    assert_int_equal(r.rank, 2);
    arb__stepwise_result_free(&r);

    /* saturated: one level per observation fits perfectly with no residual df; standard
    ** errors and p-values are undefined, nothing crashes */
    const size_t own[] = {0, 1, 2};
    const double y3[] = {0.2, 0.5, 0.9};
    arb__factor_var sat[] = {categorical("judge", own, 3)};
    assert_int_equal(arb__stepwise_fit(y3, 3, sat, 1, &r), ARB_OK);
    assert_int_equal(r.in_model[0], 1);
    assert_int_equal(r.df_residual, 0);
    assert_int_equal(r.rank, 3);
    for (size_t j = 0; j < r.n_coefs; j++) {
        assert_true(isnan(r.coefs[j].std_error));
        assert_true(isnan(r.coefs[j].p_value));
    }
    assert_close(r.coefs[2].estimate, 0.7, 1e-9);
    arb__stepwise_result_free(&r);
}

/* Variables that cannot vary are not candidates; a constant y stays intercept-only with R²
** undefined. */
static void stepwise_constant_variables(void **state)
{
    const double flat[] = {5, 5, 5, 5}, x[] = {1, 2, 3, 5}, y[] = {0.7, 0.7, 0.7, 0.7};
    const size_t one[] = {2, 2, 2, 2};
    arb__factor_var vars[] = {numeric("flat", flat), categorical("task", one, 3),
                              numeric("x", x)};
    arb__stepwise_result r;
    assert_int_equal(arb__stepwise_fit(y, 4, vars, 3, &r), ARB_OK);
    assert_int_equal(r.unusable[0], ARB__FACTOR_NO_VARIATION);
    assert_int_equal(r.unusable[1], ARB__FACTOR_ONE_LEVEL);
    assert_int_equal(r.unusable[2], ARB__FACTOR_USABLE);
    assert_int_equal(r.reference[1], 2);
    assert_int_equal(r.n_steps, 0);
    assert_int_equal(r.in_model[2], 0);
    assert_true(isnan(r.r_squared));
    assert_int_equal(r.n_coefs, 1);
    assert_close(r.coefs[0].estimate, 0.7, 1e-12);
    assert_near(r.aic, r.aic_null);
    arb__stepwise_result_free(&r);
}

static void stepwise_bad_input(void **state)
{
    const double y[] = {1, 2, NAN}, x[] = {1, INFINITY, 3};
    const size_t lv[] = {0, 5, 1};
    arb__stepwise_result r;
    arb__factor_var none[] = {numeric("x", y)};
    assert_int_equal(arb__stepwise_fit(y, 0, none, 1, &r), ARB_INVALID);
    arb__stepwise_result_free(&r);
    assert_int_equal(arb__stepwise_fit(y, 3, NULL, 0, &r), ARB_INVALID); /* y has a NAN */
    arb__stepwise_result_free(&r);
    const double ok[] = {1, 2, 3};
    arb__factor_var bad_x[] = {numeric("x", x)};
    assert_int_equal(arb__stepwise_fit(ok, 3, bad_x, 1, &r), ARB_INVALID);
    arb__stepwise_result_free(&r);
    arb__factor_var bad_level[] = {categorical("g", lv, 2)};
    assert_int_equal(arb__stepwise_fit(ok, 3, bad_level, 1, &r), ARB_INVALID);
    arb__stepwise_result_free(&r);
    arb__factor_var both = numeric("x", ok);
    both.level = lv;
    assert_int_equal(arb__stepwise_fit(ok, 3, &both, 1, &r), ARB_INVALID);
    arb__stepwise_result_free(&r);
    assert_int_equal(arb__stepwise_fit(ok, 3, NULL, 0, NULL), ARB_INVALID);
    /* no variables at all is fine: the intercept-only model */
    assert_int_equal(arb__stepwise_fit(ok, 3, NULL, 0, &r), ARB_OK);
    assert_near(r.aic, aic_of(2.0, 3, 2));
    arb__stepwise_result_free(&r);
    arb__stepwise_result_free(NULL);
}

/* ---- the analysis over groups ------------------------------------------------------------- */

static arb__factor_group group(const char *judge, const char *cand, const char *task, double pc,
                               double pf, double gap, double qlen)
{
    arb__factor_group g;
    memset(&g, 0, sizeof g);
    g.judge = judge;
    g.candidate = cand;
    g.task = task;
    g.pc = pc;
    g.pf = pf;
    g.quality_gap = gap;
    g.length[ARB_LEN_QUESTION] = qlen;
    g.length[ARB_LEN_CANDIDATE] = 100;
    g.length[ARB_LEN_BASELINE] = 80;
    g.length[ARB_LEN_PROMPT] = 900;
    return g;
}

static json_t *parse(char *text)
{
    assert_non_null(text);
    for (const char *p = text; *p; p++) {
        assert_true(strncmp(p, "nan", 3) != 0 && strncmp(p, "NaN", 3) != 0);
        assert_true(strncmp(p, "inf", 3) != 0 && strncmp(p, "Infinity", 8) != 0);
    }
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    if (!root) fail_msg("JSON does not parse: %s\n%s", err.text, text);
    arb_free(text);
    return root;
}

/* Groups with an undefined target are dropped and counted; two left is too few. */
static void factors_too_few_groups(void **state)
{
    const arb__factor_group gs[] = {group("j1", "c1", "", 0.5, 0.1, 0.2, 10),
                                    group("j1", "c2", "", NAN, 0.1, 0.2, 10),
                                    group("j2", "c1", "", 0.7, NAN, 0.2, 10),
                                    group("j2", "c2", "", NAN, 0.2, 0.3, 10)};
    arb_factors *f = NULL;
    assert_int_equal(arb__factors_from_groups(gs, 4, "pc", &f), ARB_OK);
    char *text = arb_factors_to_text(f);
    assert_non_null(text);
    assert_non_null(strstr(text, "too few groups (2) for a regression"));
    assert_non_null(strstr(text, "groups: 2 used of 4 (2 with PC undefined"));
    arb_free(text);
    json_t *root = parse(arb_factors_to_json(f));
    assert_string_equal(json_string_value(json_object_get(root, "target")), "pc");
    assert_int_equal(json_integer_value(json_object_get(root, "n_groups")), 4);
    assert_int_equal(json_integer_value(json_object_get(root, "n_used")), 2);
    assert_int_equal(json_integer_value(json_object_get(root, "n_target_undefined")), 2);
    assert_string_equal(json_string_value(json_object_get(root, "message")),
                        "too few groups (2) for a regression");
    assert_true(json_is_null(json_object_get(root, "model")));
    assert_int_equal(json_array_size(json_object_get(root, "steps")), 0);
    json_decref(root);
    arb_factors_destroy(f);

    /* PF: three defined (one has an undefined length and is dropped for that) -> still 2 */
    arb__factor_group g2[4];
    memcpy(g2, gs, sizeof gs);
    g2[3].length[ARB_LEN_PROMPT] = NAN;
    assert_int_equal(arb__factors_from_groups(g2, 4, "pf", &f), ARB_OK);
    root = parse(arb_factors_to_json(f));
    assert_int_equal(json_integer_value(json_object_get(root, "n_used")), 2);
    assert_int_equal(json_integer_value(json_object_get(root, "n_target_undefined")), 1);
    assert_int_equal(json_integer_value(json_object_get(root, "n_predictor_undefined")), 1);
    json_decref(root);
    arb_factors_destroy(f);

    /* none at all */
    assert_int_equal(arb__factors_from_groups(NULL, 0, "pc", &f), ARB_OK);
    text = arb_factors_to_text(f);
    assert_non_null(strstr(text, "too few groups (0)"));
    arb_free(text);
    arb_factors_destroy(f);

    assert_int_equal(arb__factors_from_groups(gs, 4, "pq", &f), ARB_INVALID);
    assert_null(f);
    arb_factors_destroy(NULL);
    assert_null(arb_factors_to_text(NULL));
    assert_null(arb_factors_to_json(NULL));
}

/* Twelve groups: judges j-a, j-b, j-c x candidates c1..c4, one task. PC is .9 for j-a, .6 for
** j-b, .3 for j-c, plus a small candidate-independent wobble; the question length varies but
** is irrelevant (orthogonal to everything by construction: +1 −1 −1 +1 per judge), the other
** lengths and the gap are constant. Expected: judge enters as a block with j-a as reference,
** estimates −.3 and −.6; task, the constant lengths and the gap are "not used". */
static void factors_from_groups(void **state)
{
    const char *judges[] = {"j-b", "j-a", "j-c"}; /* not sorted: levels are sorted anyway */
    const double base[] = {0.6, 0.9, 0.3};
    const double wobble[] = {0.01, -0.01, 0.01, -0.01}, qlen[] = {11, 9, 9, 11};
    arb__factor_group gs[12];
    const char *cands[] = {"c1", "c2", "c3", "c4"};
    for (int j = 0; j < 3; j++)
        for (int c = 0; c < 4; c++)
            gs[j * 4 + c] = group(judges[j], cands[c], "qa\x1b", base[j] + wobble[c], 0.0, 0.25,
                                  qlen[c]);
    /* wobble is +.01 −.01 +.01 −.01 by candidate, so candidate could explain it: make it
    ** alternate by judge too so candidate explains nothing: flip j-a's wobble */
    for (int c = 0; c < 4; c++) gs[4 + c].pc = base[1] - wobble[c];

    arb_factors *f = NULL;
    assert_int_equal(arb__factors_from_groups(gs, 12, "pc", &f), ARB_OK);
    char *text = arb_factors_to_text(f);
    assert_non_null(text);
    for (const char *p = text; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\n') fail_msg("control byte in\n%s", text);
    assert_non_null(strstr(text, "Factor analysis of position consistency (PC)"));
    assert_non_null(strstr(text, "groups: 12 used of 12"));
    assert_non_null(strstr(text, "not used: candidate_length (no variation), baseline_length (no "
                                 "variation), prompt_length (no variation), quality_gap (no "
                                 "variation), task (one level)"));
    assert_non_null(strstr(text, "add    judge"));
    assert_non_null(strstr(text, "(reference: j-a)"));
    assert_non_null(strstr(text, "judge = j-b\n"));
    assert_non_null(strstr(text, "judge = j-c\n"));
    assert_non_null(strstr(text, "(intercept)\n"));
    arb_free(text);

    json_t *root = parse(arb_factors_to_json(f));
    const char *keys[] = {"arbiter_version", "target", "n_groups", "n_used",
                          "n_target_undefined", "n_predictor_undefined", "message", "not_used",
                          "aic_intercept_only", "steps", "model"};
    void *it = json_object_iter(root);
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++, it = json_object_iter_next(root, it)) {
        assert_non_null(it);
        assert_string_equal(json_object_iter_key(it), keys[i]);
    }
    assert_true(json_is_null(json_object_get(root, "message")));
    json_t *not_used = json_object_get(root, "not_used");
    assert_int_equal(json_array_size(not_used), 5);
    json_t *last = json_array_get(not_used, 4);
    assert_string_equal(json_string_value(json_object_get(last, "variable")), "task");
    assert_string_equal(json_string_value(json_object_get(last, "reason")), "one level");
    json_t *steps = json_object_get(root, "steps");
    assert_true(json_array_size(steps) >= 1);
    json_t *s0 = json_array_get(steps, 0);
    assert_int_equal(json_integer_value(json_object_get(s0, "step")), 1);
    assert_string_equal(json_string_value(json_object_get(s0, "action")), "add");
    assert_string_equal(json_string_value(json_object_get(s0, "variable")), "judge");
    assert_true(json_is_real(json_object_get(s0, "aic")));

    json_t *model = json_object_get(root, "model");
    json_t *vars = json_object_get(model, "variables");
    assert_int_equal(json_array_size(vars), 1); /* question length and candidate do not help */
    json_t *v0 = json_array_get(vars, 0);
    assert_string_equal(json_string_value(json_object_get(v0, "variable")), "judge");
    assert_string_equal(json_string_value(json_object_get(v0, "kind")), "categorical");
    assert_string_equal(json_string_value(json_object_get(v0, "reference")), "j-a");
    assert_true(json_real_value(json_object_get(v0, "delta_aic")) > 0.0);
    json_t *coefs = json_object_get(model, "coefficients");
    assert_int_equal(json_array_size(coefs), 3);
    json_t *c0 = json_array_get(coefs, 0), *c1 = json_array_get(coefs, 1);
    json_t *c2 = json_array_get(coefs, 2);
    assert_string_equal(json_string_value(json_object_get(c0, "variable")), "(intercept)");
    assert_true(json_is_null(json_object_get(c0, "level")));
    assert_close(json_real_value(json_object_get(c0, "estimate")), 0.9, 1e-12);
    assert_string_equal(json_string_value(json_object_get(c1, "level")), "j-b");
    assert_close(json_real_value(json_object_get(c1, "estimate")), -0.3, 1e-12);
    assert_string_equal(json_string_value(json_object_get(c2, "level")), "j-c");
    assert_close(json_real_value(json_object_get(c2, "estimate")), -0.6, 1e-12);
    assert_true(json_is_false(json_object_get(c2, "aliased")));
    /* residuals ±.01 -> RSS = 12·1e-4, s² = .0012/9, SE(j-c − j-a) = √(s²/2) */
    assert_close(json_real_value(json_object_get(c2, "std_error")), sqrt(0.0012 / 9.0 / 2.0),
                 1e-12);
    assert_true(json_is_real(json_object_get(c2, "p_value")));
    assert_int_equal(json_integer_value(json_object_get(model, "k")), 4);
    assert_int_equal(json_integer_value(json_object_get(model, "df_residual")), 9);
    assert_close(json_real_value(json_object_get(model, "aic")), aic_of(0.0012, 12, 4), 1e-9);
    double tss = 4 * (0.3 * 0.3 + 0.0 + 0.3 * 0.3) + 0.0012; /* judge means .9 .6 .3 */
    assert_close(json_real_value(json_object_get(model, "r_squared")), 1.0 - 0.0012 / tss, 1e-12);
    json_decref(root);
    arb_factors_destroy(f);
}

/* A length undefined in every group (judgments stored without their prompts) is left out and
** said so; it does not drop the groups. */
static void factors_length_undefined_everywhere(void **state)
{
    arb__factor_group gs[6];
    const double pc[] = {0.9, 0.8, 0.85, 0.5, 0.4, 0.45};
    for (int i = 0; i < 6; i++) {
        gs[i] = group(i < 3 ? "j1" : "j2", i % 2 ? "c1" : "c2", "t", pc[i], 0.0, 0.1 * i, 10 + i);
        gs[i].length[ARB_LEN_PROMPT] = NAN;
    }
    arb_factors *f = NULL;
    assert_int_equal(arb__factors_from_groups(gs, 6, "pc", &f), ARB_OK);
    char *text = arb_factors_to_text(f);
    assert_non_null(text);
    assert_non_null(strstr(text, "groups: 6 used of 6 (0 with PC undefined, 0 with an undefined"));
    assert_non_null(strstr(text, "prompt_length (undefined in every group)"));
    arb_free(text);
    json_t *root = parse(arb_factors_to_json(f));
    assert_int_equal(json_integer_value(json_object_get(root, "n_used")), 6);
    int found = 0;
    json_t *e;
    size_t i;
    json_array_foreach(json_object_get(root, "not_used"), i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "variable")), "prompt_length") == 0) {
            assert_string_equal(json_string_value(json_object_get(e, "reason")),
                                "undefined in every group");
            found = 1;
        }
    }
    assert_true(found);
    assert_non_null(json_object_get(root, "model"));
    assert_false(json_is_null(json_object_get(root, "model")));
    json_decref(root);
    arb_factors_destroy(f);
}

/* Judge families (§5): j1 is gpt, j2 qwen; candidates c1, c3 gpt, c2, c4 qwen. PC is .9 when
** the judge's family is the candidate's and .5 otherwise, plus a wobble of ±.01 orthogonal to
** judge, candidate and same_family (j1: + + - -, j2: - - + + over c1..c4). Judge and candidate
** means are all .7: only same_family helps. Expected: one step, add same_family; intercept .5,
** same_family +.4 exactly; RSS = 8e-4, k = 3; intercept only: TSS = 8 x .2^2 + 8e-4. */
static void factors_judge_family(void **state)
{
    (void)state;
    const char *judges[] = {"j1", "j2"}, *jfam[] = {"gpt", "qwen"};
    const char *cands[] = {"c1", "c2", "c3", "c4"}, *cfam[] = {"gpt", "qwen", "gpt", "qwen"};
    const double wobble[2][4] = {{0.01, 0.01, -0.01, -0.01}, {-0.01, -0.01, 0.01, 0.01}};
    arb__factor_group gs[8];
    for (int j = 0; j < 2; j++)
        for (int c = 0; c < 4; c++) {
            int same = strcmp(jfam[j], cfam[c]) == 0;
            gs[j * 4 + c] = group(judges[j], cands[c], "t", 0.5 + 0.4 * same + wobble[j][c], 0.0,
                                  0.25, 10);
            gs[j * 4 + c].judge_family = jfam[j];
            gs[j * 4 + c].candidate_family = cfam[c];
        }
    arb_factors *f = NULL;
    assert_int_equal(arb__factors_from_groups(gs, 8, "pc", &f), ARB_OK);
    char *text = arb_factors_to_text(f);
    assert_non_null(strstr(text, "judge families known: judge_family"));
    assert_non_null(strstr(text, "  1  add    same_family"));
    arb_free(text);
    json_t *root = parse(arb_factors_to_json(f));
    json_t *fv = json_object_get(root, "family_variables");
    assert_int_equal(json_array_size(fv), 2);
    assert_string_equal(json_string_value(json_array_get(fv, 0)), "judge_family");
    assert_string_equal(json_string_value(json_array_get(fv, 1)), "same_family");
    assert_close(json_real_value(json_object_get(root, "aic_intercept_only")),
                 aic_of(0.32 + 8e-4, 8, 2), 1e-9);
    json_t *steps = json_object_get(root, "steps");
    assert_int_equal(json_array_size(steps), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(steps, 0), "variable")),
                        "same_family");
    json_t *model = json_object_get(root, "model");
    json_t *v0 = json_array_get(json_object_get(model, "variables"), 0);
    assert_string_equal(json_string_value(json_object_get(v0, "kind")), "numeric");
    assert_close(json_real_value(json_object_get(v0, "delta_aic")),
                 aic_of(0.32 + 8e-4, 8, 2) - aic_of(8e-4, 8, 3), 1e-9);
    json_t *coefs = json_object_get(model, "coefficients");
    assert_int_equal(json_array_size(coefs), 2);
    assert_close(json_real_value(json_object_get(json_array_get(coefs, 0), "estimate")), 0.5,
                 1e-12);
    assert_close(json_real_value(json_object_get(json_array_get(coefs, 1), "estimate")), 0.4,
                 1e-12);
    assert_close(json_real_value(json_object_get(model, "aic")), aic_of(8e-4, 8, 3), 1e-9);
    json_decref(root);
    arb_factors_destroy(f);

    /* families of contestants only: judge_family has one level ("(none)"), same_family is 0 */
    for (int i = 0; i < 8; i++) gs[i].judge_family = NULL;
    assert_int_equal(arb__factors_from_groups(gs, 8, "pc", &f), ARB_OK);
    text = arb_factors_to_text(f);
    assert_non_null(strstr(text, "judge_family (one level), same_family (no variation)"));
    arb_free(text);
    arb_factors_destroy(f);
}

/* ---- through a store ---------------------------------------------------------------------- */

/* Stores one side-by-side judgment with its call (whose request carries the prompt, so the
** audit can measure the prompt length). */
static void put_judgment(arb_store *store, const char *judge, const char *item,
                         const char *cand, int order, char verdict, const char *prompt)
{
    char request[256];
    snprintf(request, sizeof request,
             "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}", judge,
             prompt);
    arb__pairwise_row row;
    memset(&row, 0, sizeof row);
    row.judge_name = judge;
    row.item_id = item;
    row.candidate = cand;
    row.baseline = "base";
    row.template_name = "II";
    row.options = 4;
    row.order = order;
    row.position_verdict = verdict;
    if (arb_test_put_sbs_judgment(store, &row, request)) fail();
}

/* The wiring: arb_factors_compute reads the audit grouped by (judge, candidate, task) and
** regresses the audit's PC (or PF). Checked against the audit itself: the same groups, and the
** intercept-only AIC of the PC (PF) values the audit reports. An empty store has no groups; a
** bad target is refused with a message. */
static void factors_compute_store(void **state)
{
    char dir[64], path[128];
    assert_int_equal(arb_test_make_dir("test_factors", dir, sizeof dir), 0);
    snprintf(path, sizeof path, "%s/arbiter.db", dir);
    arb_store *store = NULL;
    assert_int_equal(arb_store_open(path, &store), ARB_OK);
    arb_factors *f = NULL;
    arb_factors_params params = {"nope"};
    assert_int_equal(arb_factors_compute(store, &params, &f), ARB_INVALID);
    assert_null(f);
    assert_non_null(strstr(arb_store_errmsg(store), "\"pc\" or \"pf\""));
    assert_int_equal(arb_factors_compute(store, NULL, &f), ARB_OK);
    json_t *root = parse(arb_factors_to_json(f));
    assert_int_equal(json_integer_value(json_object_get(root, "n_groups")), 0);
    assert_string_equal(json_string_value(json_object_get(root, "message")),
                        "too few groups (0) for a regression");
    json_decref(root);
    arb_factors_destroy(f);
    assert_int_equal(arb_factors_compute(NULL, NULL, &f), ARB_INVALID);
    assert_int_equal(arb_factors_compute(store, NULL, NULL), ARB_INVALID);

    /* 2 judges x 2 candidates x 2 tasks (4 items), both orders: 8 groups of 2 pairs */
    static const char items[] =
        "{\"id\":\"q1\",\"question\":\"one plus one?\",\"category\":\"math\"}\n"
        "{\"id\":\"q2\",\"question\":\"square root of two, to ten places?\",\"category\":\"math\"}\n"
        "{\"id\":\"q3\",\"question\":\"reverse a list\",\"category\":\"code\"}\n"
        "{\"id\":\"q4\",\"question\":\"write a quicksort in C, please\",\"category\":\"code\"}\n";
    static const char answers[] =
        "{\"item\":\"q1\",\"model\":\"c1\",\"answer\":\"2\"}\n"
        "{\"item\":\"q1\",\"model\":\"c2\",\"answer\":\"two, of course\"}\n"
        "{\"item\":\"q1\",\"model\":\"base\",\"answer\":\"it is 2\"}\n"
        "{\"item\":\"q2\",\"model\":\"c1\",\"answer\":\"1.4142135623\"}\n"
        "{\"item\":\"q2\",\"model\":\"c2\",\"answer\":\"about 1.41\"}\n"
        "{\"item\":\"q2\",\"model\":\"base\",\"answer\":\"1.41421356237\"}\n"
        "{\"item\":\"q3\",\"model\":\"c1\",\"answer\":\"xs[::-1]\"}\n"
        "{\"item\":\"q3\",\"model\":\"c2\",\"answer\":\"list(reversed(xs))\"}\n"
        "{\"item\":\"q3\",\"model\":\"base\",\"answer\":\"xs.reverse()\"}\n"
        "{\"item\":\"q4\",\"model\":\"c1\",\"answer\":\"void qs(int *a, int n) { ... }\"}\n"
        "{\"item\":\"q4\",\"model\":\"c2\",\"answer\":\"use qsort()\"}\n"
        "{\"item\":\"q4\",\"model\":\"base\",\"answer\":\"a partition, then recursion\"}\n";
    arb_dataset *ds = arb_dataset_create();
    assert_non_null(ds);
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "items", items, strlen(items)), ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "answers", answers, strlen(answers)),
                     ARB_OK);
    assert_int_equal(arb__store_put_dataset(store, ds), ARB_OK);
    const char *judges[] = {"j1", "j2"}, *cands[] = {"c1", "c2"};
    const char *item_ids[] = {"q1", "q2", "q3", "q4"};
    const char *prompts[] = {"judge this", "judge this pair", "compare the two answers",
                             "compare the two answers below, carefully"};
    /* position verdicts (order 0, order 1) of q1..q4 per (judge, candidate); consistent
    ** pairs are AB, BA, CC, so PC per (math, code) is: 1 .5 | 0 .5 | .5 1 | 1 .5 */
    const char *verdicts[2][2] = {{"ABBAAACC", "AABBABCD"}, {"ABAABABA", "CCCCBBAB"}};
    for (int a = 0; a < 2; a++) {
        arb_judge_config jc;
        memset(&jc, 0, sizeof jc);
        jc.name = judges[a];
        jc.base_url = "http://127.0.0.1:9/v1";
        jc.model = judges[a];
        jc.sampling = arb_sampling_default();
        assert_int_equal(arb__store_put_judge(store, &jc), ARB_OK);
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++) {
                const char *pv = &verdicts[a][b][2 * i];
                for (int order = 0; order < 2; order++)
                    put_judgment(store, judges[a], item_ids[i], cands[b], order,
                                 pv[order], prompts[(i + order + a) % 4]);
            }
    }

    arb_audit_params ap = arb_audit_default_params();
    ap.by = ARB_BY_JUDGE | ARB_BY_CANDIDATE | ARB_BY_TASK;
    arb_audit *audit = NULL;
    if (arb_audit_compute(store, &ap, &audit) != ARB_OK)
        fail_msg("audit: %s", arb_store_errmsg(store));
    size_t n_rows = arb_audit_count(audit);
    assert_int_equal(n_rows, 8);
    for (int target = 0; target < 2; target++) {
        /* the intercept-only AIC of the audit's values, complete cases only */
        double sum = 0.0, sum2 = 0.0;
        size_t m = 0;
        for (size_t i = 0; i < n_rows; i++) {
            const arb_audit_row *r = arb_audit_row_at(audit, i);
            double t = r->m.value[target ? ARB_M_PF : ARB_M_PC];
            int ok = isfinite(t) && isfinite(r->m.value[ARB_M_QUALITY_GAP]);
            for (int l = 0; l < ARB_LEN__COUNT; l++) ok = ok && isfinite(r->m.length[l].mean);
            if (!ok) continue;
            sum += t;
            sum2 += t * t;
            m++;
        }
        assert_true(m >= 3);
        double tss = sum2 - sum * sum / (double)m;
        assert_true(tss > 1e-6); /* the targets vary, else this test checks nothing */
        arb_factors_params fp = {target ? "pf" : "pc"};
        assert_int_equal(arb_factors_compute(store, &fp, &f), ARB_OK);
        root = parse(arb_factors_to_json(f));
        assert_int_equal(json_integer_value(json_object_get(root, "n_groups")), 8);
        assert_int_equal(json_integer_value(json_object_get(root, "n_used")), m);
        assert_close(json_real_value(json_object_get(root, "aic_intercept_only")),
                     aic_of(tss, (double)m, 2), 1e-9);
        assert_false(json_is_null(json_object_get(root, "model")));
        json_decref(root);
        arb_factors_destroy(f);
    }
    /* no family in the store: no family line or key (the output of before) */
    assert_int_equal(arb_factors_compute(store, NULL, &f), ARB_OK);
    char *text = arb_factors_to_text(f);
    assert_null(strstr(text, "famil"));
    arb_free(text);
    text = arb_factors_to_json(f);
    assert_null(strstr(text, "famil"));
    arb_free(text);
    arb_factors_destroy(f);
    /* families from the store (as a judges file or an import writes them) */
    assert_int_equal(arb__store_put_family(store, "j1", "judge", "gpt", "test"), ARB_OK);
    assert_int_equal(arb__store_put_family(store, "c1", "model", "gpt", "test"), ARB_OK);
    assert_int_equal(arb_factors_compute(store, NULL, &f), ARB_OK);
    text = arb_factors_to_text(f);
    assert_non_null(strstr(text, "judge families known: judge_family"));
    arb_free(text);
    root = parse(arb_factors_to_json(f));
    assert_int_equal(json_array_size(json_object_get(root, "family_variables")), 2);
    json_decref(root);
    arb_factors_destroy(f);
    arb_audit_destroy(audit);
    arb_dataset_destroy(ds);
    arb_store_close(store);
    arb_test_remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stepwise_by_hand),
        cmocka_unit_test(stepwise_exact_linear_irrelevant),
        cmocka_unit_test(stepwise_categorical_block),
        cmocka_unit_test(stepwise_adds_then_removes),
        cmocka_unit_test(stepwise_rank_deficient),
        cmocka_unit_test(stepwise_constant_variables),
        cmocka_unit_test(stepwise_bad_input),
        cmocka_unit_test(factors_too_few_groups),
        cmocka_unit_test(factors_from_groups),
        cmocka_unit_test(factors_length_undefined_everywhere),
        cmocka_unit_test(factors_judge_family),
        cmocka_unit_test(factors_compute_store),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
