/*
** test_stats.c -- the statistics of METHODS §10 against hand-computed values and textbook
** examples (Wikipedia's Fleiss' kappa table, Krippendorff's 2011 reliability data, Cohen's
** kappa 2 x 2 example), with the edge cases first: empty input, n = 1, n = 2, zero variance,
** all ties, missing values dropped, perfect agreement, p_e = 1. p-values are checked where the
** distribution has a closed form (chi-squared with 2 df: p = exp(-x/2); with 1 df:
** p = erfc(sqrt(x/2)); with 3 df: p = erfc(sqrt(x/2)) + sqrt(2x/pi) exp(-x/2); with 6 df:
** p = exp(-x/2) (1 + x/2 + (x/2)^2/2); Student t with 1 df: two-sided p = 1 - (2/pi) atan|t|;
** with 2 df: two-sided p = 1 - |t|/sqrt(t^2 + 2)), never from the GSL functions under test.
*/
#include "arbiter.h"
#include "internal.h" /* arb__stat_bootstrap_kinds */

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define EPS 1e-12

static void assert_near_eps(double got, double want, double eps)
{
    if (isnan(got) || fabs(got - want) > eps) fail_msg("got %.15g, want %.15g", got, want);
}

static void assert_near(double got, double want)
{
    assert_near_eps(got, want, EPS);
}

static void assert_undefined(double got)
{
    if (!isnan(got)) fail_msg("got %.15g, want NAN", got);
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- correlations ------------------------------------------------------------------------ */

static void correlation_empty_and_short(void **state)
{
    (void)state;
    double x[] = {1, 2}, y[] = {3, 1};
    assert_undefined(arb_stat_pearson(NULL, NULL, 0));
    assert_undefined(arb_stat_spearman(NULL, NULL, 0));
    assert_undefined(arb_stat_kendall_tau_b(NULL, NULL, 0));
    assert_undefined(arb_stat_pearson(x, y, 1));
    assert_undefined(arb_stat_spearman(x, y, 1));
    assert_undefined(arb_stat_kendall_tau_b(x, y, 1));
    /* n = 2: two distinct points lie on a line, here a falling one. */
    assert_near(arb_stat_pearson(x, y, 2), -1);
    assert_near(arb_stat_spearman(x, y, 2), -1);
    assert_near(arb_stat_kendall_tau_b(x, y, 2), -1);
    /* Two pairs, one with a NAN: one pair left, undefined. */
    double xn[] = {1, NAN}, yn[] = {3, 1};
    assert_undefined(arb_stat_pearson(xn, yn, 2));
    assert_undefined(arb_stat_spearman(xn, yn, 2));
    assert_undefined(arb_stat_kendall_tau_b(xn, yn, 2));
}

static void correlation_zero_variance(void **state)
{
    (void)state;
    double x[] = {1, 2, 3, 4}, flat[] = {5, 5, 5, 5};
    assert_undefined(arb_stat_pearson(x, flat, 4));
    assert_undefined(arb_stat_pearson(flat, x, 4));
    assert_undefined(arb_stat_spearman(x, flat, 4)); /* all ties: ranks all 2.5 */
    assert_undefined(arb_stat_kendall_tau_b(flat, x, 4));
    assert_undefined(arb_stat_kendall_tau_b(flat, flat, 4));
    /* Constant once the NAN pair is dropped. */
    double xv[] = {1, 2, 3}, yv[] = {4, 4, NAN};
    assert_undefined(arb_stat_pearson(xv, yv, 3));
    assert_undefined(arb_stat_kendall_tau_b(xv, yv, 3));
}

/* x = 1..5, y = 2 4 5 4 5 (ties in y).
** Pearson: means 3 and 4; dx = -2 -1 0 1 2, dy = -2 0 1 0 1; sum dx dy = 4 + 2 = 6,
** sum dx^2 = 10, sum dy^2 = 6; r = 6 / sqrt(60) = 0.774596669241483.
** Spearman: ranks of y with averages: 2 -> 1, 4 4 -> 2.5, 5 5 -> 4.5, so ry = 1 2.5 4.5 2.5 4.5
** (mean 3): dry = -2 -0.5 1.5 -0.5 1.5; sum dx dry = 4 + 0.5 + 0 - 0.5 + 3 = 7,
** sum dry^2 = 4 + 0.25 + 2.25 + 0.25 + 2.25 = 9; rho = 7 / sqrt(90) = 0.737864787372622
** (the no-ties shortcut 1 - 6 sum d^2 / (n(n^2 - 1)) would give 0.75: ties matter).
** Kendall: of the 10 pairs, (2,4) and (3,5) are tied in y, (3,4) is discordant (5 > 4), the
** other 7 concordant; n0 = 10, n1 = 0, n2 = 2: tau_b = (7 - 1) / sqrt(10 * 8) = 0.670820393. */
static void correlation_with_ties(void **state)
{
    (void)state;
    double x[] = {1, 2, 3, 4, 5}, y[] = {2, 4, 5, 4, 5};
    assert_near(arb_stat_pearson(x, y, 5), 6 / sqrt(60));
    assert_near(arb_stat_spearman(x, y, 5), 7 / sqrt(90));
    assert_near(arb_stat_kendall_tau_b(x, y, 5), 6 / sqrt(80));
    /* Symmetric in its arguments. */
    assert_near(arb_stat_pearson(y, x, 5), 6 / sqrt(60));
    assert_near(arb_stat_spearman(y, x, 5), 7 / sqrt(90));
    assert_near(arb_stat_kendall_tau_b(y, x, 5), 6 / sqrt(80));
}

/* Pairs with a NAN (or inf) anywhere are dropped first: same values as correlation_with_ties. */
static void correlation_drops_missing(void **state)
{
    (void)state;
    double x[] = {NAN, 1, 2, 7, 3, 4, INFINITY, 5}, y[] = {100, 2, 4, NAN, 5, 4, 1, 5};
    assert_near(arb_stat_pearson(x, y, 8), 6 / sqrt(60));
    assert_near(arb_stat_spearman(x, y, 8), 7 / sqrt(90));
    assert_near(arb_stat_kendall_tau_b(x, y, 8), 6 / sqrt(80));
}

/* Ties in both variables. x = 1 1 2 3, y = 1 2 2 3. Pairs: (1,2) tied in x, (2,3) tied in y,
** the other 4 concordant, none discordant; n0 = 6, n1 = 1, n2 = 1:
** tau_b = 4 / sqrt(5 * 5) = 0.8. Spearman: rx = 1.5 1.5 3 4, ry = 1 2.5 2.5 4 (means 2.5):
** drx = -1 -1 .5 1.5, dry = -1.5 0 0 1.5; sum = 1.5 + 0 + 0 + 2.25 = 3.75; sum drx^2 = 4.5,
** sum dry^2 = 4.5; rho = 3.75 / 4.5 = 0.8333. Perfect monotone data give 1 for all three. */
static void correlation_ties_both(void **state)
{
    (void)state;
    double x[] = {1, 1, 2, 3}, y[] = {1, 2, 2, 3};
    assert_near(arb_stat_kendall_tau_b(x, y, 4), 0.8);
    assert_near(arb_stat_spearman(x, y, 4), 3.75 / 4.5);
    double a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 4, 9, 16, 25, 36}, c[] = {6, 5, 4, 3, 2, 1};
    assert_near(arb_stat_spearman(a, b, 6), 1);
    assert_near(arb_stat_kendall_tau_b(a, b, 6), 1);
    assert_near(arb_stat_pearson(a, c, 6), -1);
    assert_near(arb_stat_kendall_tau_b(a, c, 6), -1);
    double r = arb_stat_pearson(a, b, 6); /* not a line: below 1 */
    assert_true(r > 0.9 && r < 1);
}

/* ---- agreement --------------------------------------------------------------------------- */

/* Wikipedia's Cohen's kappa example: 50 proposals, both yes 20, A yes / B no 5, A no / B yes
** 10, both no 15. p_o = 35/50 = 0.7; A says yes 25/50, B 30/50: p_e = 0.5 * 0.6 + 0.5 * 0.4 =
** 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4. 3 x 3: total 20, diagonal 15 (p_o = 0.75), rows 6 7 7,
** columns 7 6 7: p_e = (42 + 42 + 49) / 400 = 0.3325; kappa = 0.4175 / 0.6675. */
static void cohen_kappa_examples(void **state)
{
    (void)state;
    double t2[] = {20, 5, 10, 15};
    assert_near(arb_stat_cohen_kappa(t2, 2), 0.4);
    double t3[] = {5, 1, 0, 2, 4, 1, 0, 1, 6};
    assert_near(arb_stat_cohen_kappa(t3, 3), 0.4175 / 0.6675);
    double perfect[] = {5, 0, 0, 5}, opposite[] = {0, 5, 5, 0};
    assert_near(arb_stat_cohen_kappa(perfect, 2), 1);
    assert_near(arb_stat_cohen_kappa(opposite, 2), -1); /* p_o = 0, p_e = 0.5 */
}

static void cohen_kappa_undefined(void **state)
{
    (void)state;
    double zeros[] = {0, 0, 0, 0}, one_category[] = {10, 0, 0, 0}, negative[] = {5, -1, 0, 5};
    double with_nan[] = {5, NAN, 0, 5};
    assert_undefined(arb_stat_cohen_kappa(NULL, 0));
    assert_undefined(arb_stat_cohen_kappa(zeros, 2));
    /* Both raters always chose category 0: p_o = p_e = 1, kappa undefined (not 0, not 1). */
    assert_undefined(arb_stat_cohen_kappa(one_category, 2));
    assert_undefined(arb_stat_cohen_kappa(negative, 2));
    assert_undefined(arb_stat_cohen_kappa(with_nan, 2));
    double single[] = {7};
    assert_undefined(arb_stat_cohen_kappa(single, 1)); /* p_e = 1 */
}

/* Wikipedia's Fleiss' kappa example (10 items, 14 raters, 5 categories): P_bar = 172/455 =
** 0.378022, P_e = 417/1960 = 0.212755, kappa = (P_bar - P_e) / (1 - P_e) = 4211/20059 =
** 0.209931 (computed with exact fractions). */
static void fleiss_kappa_wikipedia(void **state)
{
    (void)state;
    double counts[] = {
        0, 0, 0, 0, 14, /**/ 0, 2, 6, 4, 2, /**/ 0, 0, 3, 5, 6, /**/ 0, 3, 9, 2, 0,
        2, 2, 8, 1, 1,  /**/ 7, 7, 0, 0, 0, /**/ 3, 2, 6, 3, 0, /**/ 2, 5, 3, 2, 2,
        6, 5, 2, 1, 0,  /**/ 0, 2, 2, 3, 7,
    };
    assert_near(arb_stat_fleiss_kappa(counts, 10, 5), 4211.0 / 20059.0);
    assert_near_eps(arb_stat_fleiss_kappa(counts, 10, 5), 0.210, 0.0005);
}

/* Two items, three raters each, unanimous in different categories: P_i = (9 - 3)/6 = 1,
** P_bar = 1, p = (0.5, 0.5), P_e = 0.5, kappa = 1. Three items with 2 raters, one split:
** P = 1, 0, 1 -> P_bar = 2/3; p = (3/6, 3/6) -> P_e = 0.5; kappa = (2/3 - 1/2)/(1/2) = 1/3. */
static void fleiss_kappa_small(void **state)
{
    (void)state;
    double unanimous[] = {3, 0, 0, 3};
    assert_near(arb_stat_fleiss_kappa(unanimous, 2, 2), 1);
    double split[] = {2, 0, 1, 1, 0, 2};
    assert_near(arb_stat_fleiss_kappa(split, 3, 2), 1.0 / 3.0);
}

static void fleiss_kappa_undefined(void **state)
{
    (void)state;
    double unequal[] = {3, 0, 1, 1}; /* 3 raters, then 2 */
    double one_rater[] = {1, 0, 0, 1};
    double one_category[] = {4, 0, 4, 0}; /* P_e = 1 */
    double negative[] = {3, -1, 1, 1};
    assert_undefined(arb_stat_fleiss_kappa(NULL, 0, 2));
    assert_undefined(arb_stat_fleiss_kappa(unequal, 0, 2));
    assert_undefined(arb_stat_fleiss_kappa(unequal, 2, 0));
    assert_undefined(arb_stat_fleiss_kappa(unequal, 2, 2));
    assert_undefined(arb_stat_fleiss_kappa(one_rater, 2, 2));
    assert_undefined(arb_stat_fleiss_kappa(one_category, 2, 2));
    assert_undefined(arb_stat_fleiss_kappa(negative, 2, 2));
}

/* Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the example with
** missing values (also on Wikipedia): 4 coders x 12 units, values 1..5. Published nominal
** alpha 0.743; ordinal 0.815 (as R's irr::kripp.alpha reports). Exact fractions from the
** coincidence matrix: nominal 113/152, ordinal 108577/133160. Unit 12 has one value and is
** dropped. Rows are units here. */
static void krippendorff_published_example(void **state)
{
    (void)state;
    const double M = NAN;
    double v[] = {
        /* A  B  C  D */
        1, 1, M, 1, /* unit 1 */
        2, 2, 3, 2, /* 2 */
        3, 3, 3, 3, /* 3 */
        3, 3, 3, 3, /* 4 */
        2, 2, 2, 2, /* 5 */
        1, 2, 3, 4, /* 6 */
        4, 4, 4, 4, /* 7 */
        1, 1, 2, 1, /* 8 */
        2, 2, 2, 2, /* 9 */
        M, 5, 5, 5, /* 10 */
        M, M, 1, 1, /* 11 */
        M, 3, M, M, /* 12 */
    };
    assert_near(arb_stat_krippendorff_alpha(v, 12, 4, 0), 113.0 / 152.0);
    assert_near_eps(arb_stat_krippendorff_alpha(v, 12, 4, 0), 0.743, 0.0005);
    assert_near(arb_stat_krippendorff_alpha(v, 12, 4, 1), 108577.0 / 133160.0);
    assert_near_eps(arb_stat_krippendorff_alpha(v, 12, 4, 1), 0.815, 0.0005);
}

/* Two coders, units (1,1) (1,2) (2,3) (3,3): n = 8, n_1 = 3, n_2 = 2, n_3 = 3.
** Nominal: each disagreeing unit adds 2 ordered pairs / (m_u - 1 = 1): sum o delta = 4;
** sum_{c != k} n_c n_k = 64 - (9 + 4 + 9) = 42; alpha = 1 - 7 * 4 / 42 = 1/3.
** Ordinal: delta(1,2) = (n_1 + n_2 - (n_1 + n_2)/2)^2 = 2.5^2 = 6.25, delta(2,3) = (5 - 2.5)^2 =
** 6.25, delta(1,3) = (8 - 3)^2 = 25. Observed 2 * 6.25 + 2 * 6.25 = 25; expected
** 2 (6 * 6.25 + 6 * 6.25 + 9 * 25) = 600; alpha = 1 - 7 * 25 / 600 = 0.708333.
** Ordinal alpha depends on the order only: 1 2 3 -> 10 20 1000 gives the same value. A unit
** with a single value (3, missing) is not pairable and changes nothing. */
static void krippendorff_small(void **state)
{
    (void)state;
    double v[] = {1, 1, 1, 2, 2, 3, 3, 3, 3, NAN};
    assert_near(arb_stat_krippendorff_alpha(v, 4, 2, 0), 1.0 / 3.0);
    assert_near(arb_stat_krippendorff_alpha(v, 4, 2, 1), 1.0 - 175.0 / 600.0);
    assert_near(arb_stat_krippendorff_alpha(v, 5, 2, 1), 1.0 - 175.0 / 600.0);
    double w[] = {10, 10, 10, 20, 20, 1000, 1000, 1000};
    assert_near(arb_stat_krippendorff_alpha(w, 4, 2, 1), 1.0 - 175.0 / 600.0);
    /* Two values only: (1,1) (1,2) (2,2): nominal 1 - 5 * 2 / 18 = 4/9; ordinal scales
    ** observed and expected by the same delta, so also 4/9. */
    double two[] = {1, 1, 1, 2, 2, 2};
    assert_near(arb_stat_krippendorff_alpha(two, 3, 2, 0), 4.0 / 9.0);
    assert_near(arb_stat_krippendorff_alpha(two, 3, 2, 1), 4.0 / 9.0);
    double perfect[] = {1, 1, 2, 2, 3, 3};
    assert_near(arb_stat_krippendorff_alpha(perfect, 3, 2, 0), 1);
    assert_near(arb_stat_krippendorff_alpha(perfect, 3, 2, 1), 1);
}

static void krippendorff_undefined(void **state)
{
    (void)state;
    double same[] = {2, 2, 2, 2, 2, 2};           /* one value overall: D_e = 0 */
    double lonely[] = {1, NAN, NAN, 2, 3, NAN};   /* no unit has two values */
    assert_undefined(arb_stat_krippendorff_alpha(NULL, 0, 2, 0));
    assert_undefined(arb_stat_krippendorff_alpha(same, 3, 2, 0));
    assert_undefined(arb_stat_krippendorff_alpha(same, 3, 2, 1));
    assert_undefined(arb_stat_krippendorff_alpha(lonely, 3, 2, 0));
    assert_undefined(arb_stat_krippendorff_alpha(same, 6, 1, 0)); /* one rater */
}

/* ---- tests ------------------------------------------------------------------------------- */

/* statistic and df to EPS, the p-value to p_eps (a closed form's own rounding). */
static void assert_test(arb_test_result r, double statistic, double df, double p, double p_eps)
{
    assert_near(r.statistic, statistic);
    assert_near(r.df, df);
    assert_near_eps(r.p_value, p, p_eps);
}

/* 2 x 3 table 10 20 30 / 30 20 10: rows 60 60, columns 40 40 40, N 120, every E = 20;
** chi2 = (100 + 0 + 100 + 100 + 0 + 100) / 20 = 20, df = 2, p = exp(-20/2) = 4.54e-5.
** The same table inside a 3 x 4 with a zero row and a zero column gives the same result. */
static void chisq_two_df(void **state)
{
    (void)state;
    double t[] = {10, 20, 30, 30, 20, 10};
    arb_test_result r = arb_stat_chisq_independence(t, 2, 3);
    assert_test(r, 20, 2, exp(-10.0), 1e-15);
    double padded[] = {10, 0, 20, 30, 0, 0, 0, 0, 30, 0, 20, 10};
    r = arb_stat_chisq_independence(padded, 3, 4);
    assert_test(r, 20, 2, exp(-10.0), 1e-15);
}

/* 2 x 2 table 20 5 / 10 15: rows 25 25, columns 30 20, N 50; E = 15 10 / 15 10;
** chi2 = 25/15 + 25/10 + 25/15 + 25/10 = 8.3333 (no continuity correction), df = 1,
** p = erfc(sqrt(chi2 / 2)) = 0.00389242. Independent table 10 20 / 20 40: chi2 0, p 1. */
static void chisq_one_df(void **state)
{
    (void)state;
    double t[] = {20, 5, 10, 15};
    arb_test_result r = arb_stat_chisq_independence(t, 2, 2);
    assert_test(r, 25.0 / 15 * 2 + 5, 1, erfc(sqrt((25.0 / 15 * 2 + 5) / 2)), 1e-12);
    double independent[] = {10, 20, 20, 40};
    r = arb_stat_chisq_independence(independent, 2, 2);
    assert_near(r.statistic, 0);
    assert_near(r.p_value, 1);
}

/* 2 x 2 table 10 20 / 30 40: rows 30 70, columns 40 60, N 100; E = 12 18 / 28 42; every
** |O - E| = 2, chi2 = 4/12 + 4/18 + 4/28 + 4/42 = 1/3 + 2/9 + 1/7 + 2/21 = 50/63 = 0.793651,
** df 1, p = erfc(sqrt(25/63)) = 0.372998; V = sqrt(chi2 / (100 * 1)) = 0.0890871; no E < 5. */
static void chisq_two_by_two(void **state)
{
    (void)state;
    double t[] = {10, 20, 30, 40};
    arb_test_result r = arb_stat_chisq_independence(t, 2, 2);
    assert_test(r, 50.0 / 63.0, 1, erfc(sqrt(25.0 / 63.0)), 1e-12);
    assert_near_eps(r.p_value, 0.372998, 1e-6);
    assert_near(r.cramers_v, sqrt(50.0 / 63.0 / 100.0));
    assert_int_equal(r.n_cells, 4);
    assert_int_equal(r.n_expected_below_5, 0);
    assert_undefined(r.mean_diff); /* a t-test field */
}

/* 2 x 3 with small expected counts: 1 4 5 / 9 6 5, rows 10 20, columns 10 10 10, N 30;
** E = 10/3 in row 1 (three cells below 5), 20/3 in row 2. Row 1: (7/3)^2, (2/3)^2, (5/3)^2
** over 10/3 = 49/30 + 4/30 + 25/30 = 78/30; row 2 the same squares over 20/3 = 78/60;
** chi2 = 234/60 = 3.9, df 2, p = exp(-1.95) = 0.142274, V = sqrt(3.9 / 30) = sqrt(0.13). */
static void chisq_small_expected(void **state)
{
    (void)state;
    double t[] = {1, 4, 5, 9, 6, 5};
    arb_test_result r = arb_stat_chisq_independence(t, 2, 3);
    assert_test(r, 3.9, 2, exp(-1.95), 1e-12);
    assert_near(r.cramers_v, sqrt(0.13));
    assert_int_equal(r.n_cells, 6);
    assert_int_equal(r.n_expected_below_5, 3);
}

/* 4 x 3 (four identities x three score levels): 8 2 0 / 2 8 0 / 5 5 10 / 0 5 5, rows 10 10 20
** 10, columns 15 20 15, N 50; E = 3 4 3 in the rows of 10 (nine cells below 5), 6 8 6 in the
** row of 20. Terms: 25/3 + 1 + 3 | 1/3 + 4 + 3 | 1/6 + 9/8 + 8/3 | 3 + 1/4 + 4/3;
** thirds 38/3, whole 14, rest 1/6 + 9/8 + 1/4 = 37/24: chi2 = 677/24 = 28.208333, df 6,
** p = exp(-x/2)(1 + x/2 + x^2/8) = 8.58423e-5, V = sqrt(chi2 / (50 * 2)) = 0.531115.
** 2 x 4: 5 10 15 20 / 15 10 5 20, rows 50 50, columns 20 20 20 40, E = 10 10 10 20 per row;
** chi2 = 2 (25/10 + 0 + 25/10 + 0) = 10, df 3, p = erfc(sqrt 5) + sqrt(20/pi) exp(-5) =
** 0.0185661, V = sqrt(10 / 100). */
static void chisq_four_by_three_and_two_by_four(void **state)
{
    (void)state;
    double t[] = {8, 2, 0, 2, 8, 0, 5, 5, 10, 0, 5, 5};
    arb_test_result r = arb_stat_chisq_independence(t, 4, 3);
    double x = 677.0 / 24.0;
    assert_test(r, x, 6, exp(-x / 2) * (1 + x / 2 + x * x / 8), 1e-15);
    assert_near_eps(r.p_value, 8.58423e-5, 1e-10);
    assert_near(r.cramers_v, sqrt(x / 100));
    assert_int_equal(r.n_cells, 12);
    assert_int_equal(r.n_expected_below_5, 9);
    double u[] = {5, 10, 15, 20, 15, 10, 5, 20};
    r = arb_stat_chisq_independence(u, 2, 4);
    assert_test(r, 10, 3, erfc(sqrt(5.0)) + sqrt(20 / M_PI) * exp(-5.0), 1e-12);
    assert_near_eps(r.p_value, 0.0185661, 1e-7);
    assert_near(r.cramers_v, sqrt(0.1));
    assert_int_equal(r.n_expected_below_5, 0);
}

/* Perfect association: 10 0 / 0 10, E = 5 everywhere, chi2 = 4 * 25/5 = 20 = N, V = 1. */
static void chisq_cramers_v_bounds(void **state)
{
    (void)state;
    double t[] = {10, 0, 0, 10};
    arb_test_result r = arb_stat_chisq_independence(t, 2, 2);
    assert_near(r.statistic, 20);
    assert_near(r.cramers_v, 1);
    assert_int_equal(r.n_expected_below_5, 0); /* E = 5 is not below 5 */
    double independent[] = {10, 20, 20, 40};
    r = arb_stat_chisq_independence(independent, 2, 2);
    assert_near(r.cramers_v, 0);
}

static void chisq_undefined(void **state)
{
    (void)state;
    /* No table, an all-zero one, one row or one column left: df 0, nothing else. */
    arb_test_result r = arb_stat_chisq_independence(NULL, 0, 0);
    assert_near(r.df, 0);
    assert_undefined(r.statistic);
    assert_undefined(r.p_value);
    assert_undefined(r.cramers_v);
    assert_int_equal(r.n_cells, 0);
    double zeros[] = {0, 0, 0, 0};
    r = arb_stat_chisq_independence(zeros, 2, 2);
    assert_near(r.df, 0);
    assert_undefined(r.statistic);
    assert_undefined(r.p_value);
    double one_col[] = {5, 0, 7, 0}; /* the zero column dropped: 2 x 1 */
    r = arb_stat_chisq_independence(one_col, 2, 2);
    assert_near(r.df, 0);
    assert_undefined(r.statistic);
    assert_undefined(r.p_value);
    assert_undefined(r.cramers_v);
    assert_int_equal(r.n_cells, 0);
    double one_row[] = {0, 0, 0, 3, 4, 5}; /* the zero row dropped: 1 x 3 */
    r = arb_stat_chisq_independence(one_row, 2, 3);
    assert_near(r.df, 0);
    assert_undefined(r.statistic);
    assert_undefined(r.p_value);
    double single[] = {7};
    r = arb_stat_chisq_independence(single, 1, 1);
    assert_near(r.df, 0);
    assert_undefined(r.p_value);
    /* Bad input: everything NAN. */
    double negative[] = {5, -1, 7, 3};
    r = arb_stat_chisq_independence(negative, 2, 2);
    assert_undefined(r.statistic);
    assert_undefined(r.df);
    assert_undefined(r.p_value);
    double missing[] = {5, NAN, 7, 3};
    r = arb_stat_chisq_independence(missing, 2, 2);
    assert_undefined(r.df);
    assert_undefined(r.p_value);
    r = arb_stat_chisq_independence(NULL, 2, 2);
    assert_undefined(r.df);
    assert_undefined(r.p_value);
}

/* x = 5 7 9, y = 3 4 5: d = 2 3 4, mean 3, sd 1; t = 3 / (1 / sqrt 3) = 3 sqrt 3 = 5.196152;
** df = 2; p = 1 - t / sqrt(t^2 + 2) = 1 - 5.196152 / sqrt(29) = 0.0350987. Swapping x and y
** flips the sign of t and keeps p. The NAN pair is dropped. */
static void t_paired_example(void **state)
{
    (void)state;
    double x[] = {5, 7, NAN, 9}, y[] = {3, 4, 1, 5};
    arb_test_result r = arb_stat_t_paired(x, y, 4);
    double t = 3 * sqrt(3.0);
    assert_test(r, t, 2, 1 - t / sqrt(t * t + 2), 1e-12);
    assert_near(r.mean_diff, 3);
    assert_undefined(r.cramers_v); /* a chi-squared field */
    assert_int_equal(r.n_cells, 0);
    r = arb_stat_t_paired(y, x, 4);
    assert_near(r.statistic, -t);
    assert_near_eps(r.p_value, 1 - t / sqrt(t * t + 2), 1e-12);
    assert_near(r.mean_diff, -3);
    /* df 1 (Cauchy, two-sided p = 1 - (2/pi) atan|t|): x = 3 7, y = 1 1, d = 2 6, mean 4,
    ** sd sqrt(8), t = 4 / (sqrt 8 / sqrt 2) = 2, p = 1 - (2/pi) atan 2 = 0.295167. */
    double x1[] = {3, 7}, y1[] = {1, 1};
    r = arb_stat_t_paired(x1, y1, 2);
    assert_near(r.statistic, 2);
    assert_near(r.df, 1);
    assert_near(r.mean_diff, 4);
    assert_near_eps(r.p_value, 1 - 2 / M_PI * atan(2.0), 1e-12);
    assert_near_eps(r.p_value, 0.295167, 1e-6);
}

static void t_paired_undefined(void **state)
{
    (void)state;
    double x[] = {2, 3, 4}, y[] = {1, 2, 3}; /* d = 1 1 1: zero variance */
    arb_test_result r = arb_stat_t_paired(x, y, 3);
    assert_undefined(r.statistic);
    assert_undefined(r.p_value);
    assert_near(r.df, 2);
    assert_near(r.mean_diff, 1); /* the difference is defined, the test is not */
    r = arb_stat_t_paired(x, y, 1);
    assert_undefined(r.statistic);
    assert_undefined(r.df);
    assert_undefined(r.p_value);
    assert_near(r.mean_diff, 1);
    r = arb_stat_t_paired(NULL, NULL, 0);
    assert_undefined(r.statistic);
    assert_undefined(r.p_value);
    assert_undefined(r.mean_diff);
    double xn[] = {1, NAN, 3}, yn[] = {NAN, 2, 1}; /* one pair left: d = 2 */
    r = arb_stat_t_paired(xn, yn, 3);
    assert_undefined(r.statistic);
    assert_undefined(r.p_value);
    assert_near(r.mean_diff, 2);
    double xa[] = {1, NAN}, ya[] = {NAN, 2}; /* no pair left */
    r = arb_stat_t_paired(xa, ya, 2);
    assert_undefined(r.mean_diff);
    assert_undefined(r.df);
}

/* Equal variances: x = 1 3, y = 4 6: means 2 and 5, s^2 = 2 each, v = s^2/n = 1 each;
** t = -3 / sqrt(2) = -2.12132; df = (1 + 1)^2 / (1/1 + 1/1) = 2; p = 1 - |t|/sqrt(t^2 + 2) =
** 1 - 2.12132 / 2.54951 = 0.167950.
** Unequal: x = 1 2 3 (mean 2, s^2 1, v 1/3), y = 2 4 6 8 (mean 5, s^2 20/3, v 5/3): se^2 = 2,
** t = -3 / sqrt 2; df = 4 / ((1/9)/2 + (25/9)/3) = 4 / (53/54) = 216/53 = 4.0755; p = 0.0999129
** (Simpson integration of the t density with df 216/53, to 1e-9). */
static void t_welch_examples(void **state)
{
    (void)state;
    double x[] = {1, 3}, y[] = {4, 6};
    arb_test_result r = arb_stat_t_welch(x, 2, y, 2);
    double t = -3 / sqrt(2.0);
    assert_test(r, t, 2, 1 - fabs(t) / sqrt(t * t + 2), 1e-12);
    assert_near(r.mean_diff, -3);
    double a[] = {1, NAN, 2, 3}, b[] = {2, 4, 6, 8, INFINITY};
    r = arb_stat_t_welch(a, 4, b, 5);
    assert_test(r, t, 216.0 / 53.0, 0.0999128643, 1e-8);
    assert_near(r.mean_diff, -3);
    /* One constant sample: df = n_other - 1. x = 1 1 1, y = 2 4 6 (s^2 4, v 4/3):
    ** t = -3 / sqrt(4/3) = -2.598076, df = (4/3)^2 / ((16/9) / 2) = 2. */
    double c[] = {1, 1, 1}, d[] = {2, 4, 6};
    r = arb_stat_t_welch(c, 3, d, 3);
    assert_near(r.statistic, -3 / sqrt(4.0 / 3.0));
    assert_near(r.df, 2);
    /* df 1: x = 0 2 (s^2 2, v 1), y = 5 5 5 (v 0): t = (1 - 5) / 1 = -4,
    ** df = 1^2 / (1^2 / 1) = 1, p = 1 - (2/pi) atan 4 = 0.155958 (Cauchy). */
    double e[] = {0, 2}, f[] = {5, 5, 5};
    r = arb_stat_t_welch(e, 2, f, 3);
    assert_near(r.statistic, -4);
    assert_near(r.df, 1);
    assert_near(r.mean_diff, -4);
    assert_near_eps(r.p_value, 1 - 2 / M_PI * atan(4.0), 1e-12);
    assert_near_eps(r.p_value, 0.155958, 1e-6);
}

static void t_welch_undefined(void **state)
{
    (void)state;
    double x[] = {1, 1, 1}, y[] = {2, 2, 2}, z[] = {1, 2, 3};
    arb_test_result r = arb_stat_t_welch(x, 3, y, 3); /* both constant */
    assert_undefined(r.statistic);
    assert_undefined(r.df);
    assert_undefined(r.p_value);
    assert_near(r.mean_diff, -1);
    r = arb_stat_t_welch(z, 1, z, 3); /* x = 1 against mean 2 */
    assert_undefined(r.statistic);
    assert_undefined(r.p_value);
    assert_near(r.mean_diff, -1);
    r = arb_stat_t_welch(NULL, 0, NULL, 0);
    assert_undefined(r.statistic);
    assert_undefined(r.mean_diff);
    double zn[] = {1, NAN, NAN};
    r = arb_stat_t_welch(zn, 3, z, 3); /* one value left in x */
    assert_undefined(r.statistic);
    assert_undefined(r.p_value);
    assert_near(r.mean_diff, -1);
    double none[] = {NAN, INFINITY};
    r = arb_stat_t_welch(none, 2, z, 3); /* nothing left in x */
    assert_undefined(r.mean_diff);
    assert_undefined(r.df);
}

/* ---- Holm -------------------------------------------------------------------------------- */

static void assert_holm(const double *got, const double *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (isnan(want[i])) {
            if (!isnan(got[i])) fail_msg("[%zu]: got %.15g, want NAN", i, got[i]);
        } else if (isnan(got[i]) || fabs(got[i] - want[i]) > 1e-15) {
            fail_msg("[%zu]: got %.15g, want %.15g", i, got[i], want[i]);
        }
    }
}

/* {0.01, 0.04, 0.03, 0.005}, m = 4, sorted 0.005 0.01 0.03 0.04 times 4 3 2 1 = 0.02 0.03
** 0.06 0.04; running maximum 0.02 0.03 0.06 0.06; back in input order 0.03 0.06 0.06 0.02.
** Cap: {0.5, 0.6} -> 0.5 * 2 = 1, max(1, 0.6) = 1. Ties: {0.01, 0.04, 0.01} -> 0.01 * 3 = 0.03,
** max(0.03, 0.01 * 2) = 0.03, max(0.03, 0.04) = 0.04, whichever 0.01 ranks first.
** Monotone: {0.04, 0.001} -> 0.002, max(0.002, 0.04) = 0.04. One test: unchanged. */
static void holm_examples(void **state)
{
    (void)state;
    double p[] = {0.01, 0.04, 0.03, 0.005}, adj[4];
    assert_int_equal(arb_stat_holm(p, 4, adj), ARB_OK);
    assert_holm(adj, (double[]){0.03, 0.06, 0.06, 0.02}, 4);
    double cap[] = {0.5, 0.6};
    assert_int_equal(arb_stat_holm(cap, 2, cap), ARB_OK); /* in place */
    assert_holm(cap, (double[]){1, 1}, 2);
    double ties[] = {0.01, 0.04, 0.01}, adj3[3];
    assert_int_equal(arb_stat_holm(ties, 3, adj3), ARB_OK);
    assert_holm(adj3, (double[]){0.03, 0.04, 0.03}, 3);
    double mono[] = {0.04, 0.001}, adj2[2];
    assert_int_equal(arb_stat_holm(mono, 2, adj2), ARB_OK);
    assert_holm(adj2, (double[]){0.04, 0.002}, 2);
    double one[] = {0.7}, adj1[1];
    assert_int_equal(arb_stat_holm(one, 1, adj1), ARB_OK);
    assert_holm(adj1, one, 1);
    double ends[] = {0, 1}; /* 0 * 2 = 0, max(0, 1) = 1 */
    assert_int_equal(arb_stat_holm(ends, 2, adj2), ARB_OK);
    assert_holm(adj2, (double[]){0, 1}, 2);
}

/* Undefined tests are not in the family: {0.02, NAN, 0.01} has m = 2, 0.01 * 2 = 0.02,
** max(0.02, 0.02 * 1) = 0.02 (with m = 3 it would be 0.03 and 0.04). */
static void holm_nan_not_counted(void **state)
{
    (void)state;
    double p[] = {0.02, NAN, 0.01}, adj[3] = {9, 9, 9};
    assert_int_equal(arb_stat_holm(p, 3, adj), ARB_OK);
    assert_holm(adj, (double[]){0.02, NAN, 0.02}, 3);
    double all_nan[] = {NAN, NAN}, adj2[2] = {9, 9};
    assert_int_equal(arb_stat_holm(all_nan, 2, adj2), ARB_OK);
    assert_holm(adj2, all_nan, 2);
    assert_int_equal(arb_stat_holm(NULL, 0, NULL), ARB_OK); /* an empty family */
}

static void holm_bad_input(void **state)
{
    (void)state;
    double adj[2] = {9, 9};
    double *bad[] = {(double[]){0.1, -0.01}, (double[]){1.5, 0.1}, (double[]){INFINITY, 0.1},
                     (double[]){0.1, -INFINITY}};
    for (size_t i = 0; i < N_OF(bad); i++) {
        adj[0] = adj[1] = 9;
        assert_int_equal(arb_stat_holm(bad[i], 2, adj), ARB_INVALID);
        assert_holm(adj, (double[]){NAN, NAN}, 2);
    }
    adj[0] = adj[1] = 9;
    assert_int_equal(arb_stat_holm(NULL, 2, adj), ARB_INVALID);
    assert_holm(adj, (double[]){NAN, NAN}, 2);
    assert_int_equal(arb_stat_holm((double[]){0.1, 0.2}, 2, NULL), ARB_INVALID);
}

/* ---- bootstrap --------------------------------------------------------------------------- */

typedef struct boot_data {
    const double *values;
    size_t n;
    size_t calls;     /* replicates seen so far */
    size_t defined;   /* replicates (the first ones) for which the counter statistic is defined */
    size_t abort_at;  /* abort on this call (SIZE_MAX = never) */
    int bad_index;    /* set when an index is out of range or n is wrong */
} boot_data;

/* Statistic 0: the mean of the resample; statistic 1: the constant 7. */
static int boot_mean(void *ud, const size_t *indices, size_t n, double *out)
{
    boot_data *d = ud;
    double sum = 0;
    if (n != d->n) d->bad_index = 1;
    for (size_t i = 0; i < n; i++) {
        if (indices[i] >= d->n) {
            d->bad_index = 1;
            return 1;
        }
        sum += d->values[indices[i]];
    }
    out[0] = sum / (double)n;
    out[1] = 7;
    d->calls++;
    return 0;
}

/* The replicate number while fewer than `defined` replicates have been seen, else NAN. */
static int boot_counter(void *ud, const size_t *indices, size_t n, double *out)
{
    boot_data *d = ud;
    (void)indices;
    (void)n;
    if (d->calls == d->abort_at) return 1;
    out[0] = d->calls < d->defined ? (double)d->calls : NAN;
    d->calls++;
    return 0;
}

static int boot_never(void *ud, const size_t *indices, size_t n, double *out)
{
    (void)ud;
    (void)indices;
    (void)n;
    out[0] = NAN;
    return 0;
}

static const double boot_values[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4};

static void bootstrap_mean_interval(void **state)
{
    (void)state;
    size_t n = N_OF(boot_values);
    boot_data d = {boot_values, n, 0, 0, SIZE_MAX, 0};
    double lo[2], hi[2], lo2[2], hi2[2], lo3[2], hi3[2];
    assert_int_equal(arb_stat_bootstrap(n, 2, boot_mean, &d, 1000, 42, 0.95, lo, hi), ARB_OK);
    assert_int_equal(d.bad_index, 0);
    assert_int_equal(d.calls, 1000);
    double mean = 0;
    for (size_t i = 0; i < n; i++) mean += boot_values[i];
    mean /= (double)n; /* 4.85 */
    assert_true(lo[0] < mean && mean < hi[0]);
    assert_true(lo[0] > 1 && hi[0] < 9); /* inside the data's range */
    assert_near(lo[1], 7);
    assert_near(hi[1], 7);
    /* Same seed: the same intervals, to the bit. */
    boot_data d2 = {boot_values, n, 0, 0, SIZE_MAX, 0};
    assert_int_equal(arb_stat_bootstrap(n, 2, boot_mean, &d2, 1000, 42, 0.95, lo2, hi2), ARB_OK);
    assert_memory_equal(lo, lo2, sizeof lo);
    assert_memory_equal(hi, hi2, sizeof hi);
    /* Another seed: other resamples, so (almost surely) other quantiles. */
    boot_data d3 = {boot_values, n, 0, 0, SIZE_MAX, 0};
    assert_int_equal(arb_stat_bootstrap(n, 2, boot_mean, &d3, 1000, 43, 0.95, lo3, hi3), ARB_OK);
    assert_true(lo3[0] != lo[0] || hi3[0] != hi[0]);
    /* Seeds that differ only in the upper 32 bits give other intervals too. */
    boot_data d4 = {boot_values, n, 0, 0, SIZE_MAX, 0};
    unsigned long long high = 42ull | (1ull << 40);
    assert_int_equal(arb_stat_bootstrap(n, 2, boot_mean, &d4, 1000, high, 0.95, lo3, hi3),
                     ARB_OK);
    assert_true(lo3[0] != lo[0] || hi3[0] != hi[0]);
    /* A narrower level gives a nested interval. */
    boot_data d5 = {boot_values, n, 0, 0, SIZE_MAX, 0};
    assert_int_equal(arb_stat_bootstrap(n, 2, boot_mean, &d5, 1000, 42, 0.5, lo3, hi3), ARB_OK);
    assert_true(lo[0] <= lo3[0] && hi3[0] <= hi[0] && lo3[0] < hi3[0]);
}

/* The statistic is the replicate number 0..99, so the quantiles are known: GSL interpolates
** linearly between order statistics, the q quantile of 0..99 is 99 q: level 0.9 gives
** 0.05 * 99 = 4.95 and 0.95 * 99 = 94.05. With 50 of 100 replicates defined (exactly half) the
** interval is over 0..49: 0.05 * 49 = 2.45 and 0.95 * 49 = 46.55; with 49 it is NAN. With 101
** replicates, 51 defined give 0..50: 2.5 and 47.5. */
static void bootstrap_quantiles_and_half_rule(void **state)
{
    (void)state;
    double lo, hi;
    boot_data d = {NULL, 3, 0, 100, SIZE_MAX, 0};
    assert_int_equal(arb_stat_bootstrap(3, 1, boot_counter, &d, 100, 1, 0.9, &lo, &hi), ARB_OK);
    assert_near(lo, 4.95);
    assert_near(hi, 94.05);
    d = (boot_data){NULL, 3, 0, 50, SIZE_MAX, 0};
    assert_int_equal(arb_stat_bootstrap(3, 1, boot_counter, &d, 100, 1, 0.9, &lo, &hi), ARB_OK);
    assert_near(lo, 2.45);
    assert_near(hi, 46.55);
    d = (boot_data){NULL, 3, 0, 49, SIZE_MAX, 0};
    assert_int_equal(arb_stat_bootstrap(3, 1, boot_counter, &d, 100, 1, 0.9, &lo, &hi), ARB_OK);
    assert_undefined(lo);
    assert_undefined(hi);
    /* Odd count: 50 of 101 is fewer than half, 51 is not. */
    d = (boot_data){NULL, 3, 0, 50, SIZE_MAX, 0};
    assert_int_equal(arb_stat_bootstrap(3, 1, boot_counter, &d, 101, 1, 0.9, &lo, &hi), ARB_OK);
    assert_undefined(lo);
    d = (boot_data){NULL, 3, 0, 51, SIZE_MAX, 0};
    assert_int_equal(arb_stat_bootstrap(3, 1, boot_counter, &d, 101, 1, 0.9, &lo, &hi), ARB_OK);
    assert_near(lo, 2.5); /* 0.05 * 50 */
    assert_near(hi, 47.5);
    assert_int_equal(arb_stat_bootstrap(3, 1, boot_never, NULL, 100, 1, 0.9, &lo, &hi), ARB_OK);
    assert_undefined(lo);
    assert_undefined(hi);
    /* n = 1: every resample is the one unit. */
    boot_data one = {boot_values, 1, 0, 0, SIZE_MAX, 0};
    double l2[2], h2[2];
    assert_int_equal(arb_stat_bootstrap(1, 2, boot_mean, &one, 50, 9, 0.95, l2, h2), ARB_OK);
    assert_near(l2[0], 3);
    assert_near(h2[0], 3);
}

static void bootstrap_errors(void **state)
{
    (void)state;
    double lo = 0, hi = 0;
    boot_data d = {NULL, 3, 0, 100, SIZE_MAX, 0};
    assert_int_equal(arb_stat_bootstrap(0, 1, boot_counter, &d, 100, 1, 0.9, &lo, &hi),
                     ARB_INVALID);
    assert_undefined(lo);
    assert_undefined(hi);
    assert_int_equal(arb_stat_bootstrap(3, 1, boot_counter, &d, 100, 1, 0, &lo, &hi),
                     ARB_INVALID);
    assert_int_equal(arb_stat_bootstrap(3, 1, boot_counter, &d, 100, 1, 1, &lo, &hi),
                     ARB_INVALID);
    assert_int_equal(arb_stat_bootstrap(3, 1, boot_counter, &d, 100, 1, NAN, &lo, &hi),
                     ARB_INVALID);
    assert_int_equal(arb_stat_bootstrap(3, 1, NULL, &d, 100, 1, 0.9, &lo, &hi), ARB_INVALID);
    assert_int_equal(arb_stat_bootstrap(3, 1, boot_counter, &d, 0, 1, 0.9, &lo, &hi),
                     ARB_INVALID);
    assert_int_equal(arb_stat_bootstrap(3, 1, boot_counter, &d, 100, 1, 0.9, NULL, NULL),
                     ARB_INVALID);
    assert_int_equal(d.calls, 0); /* fn never called on bad arguments */
    /* fn aborts on its 10th call: ARB_INTERRUPTED, intervals NAN. */
    d = (boot_data){NULL, 3, 0, 100, 10, 0};
    lo = hi = 0;
    assert_int_equal(arb_stat_bootstrap(3, 1, boot_counter, &d, 100, 1, 0.9, &lo, &hi),
                     ARB_INTERRUPTED);
    assert_int_equal(d.calls, 10);
    assert_undefined(lo);
    assert_undefined(hi);
}

/* arb__stat_kinds_fn: the share of kind 0 among the units drawn; aborts (nonzero) when a
** round's draws do not add up to the units, or when asked to by *ud. */
static int share_of_kind0(void *ud, const unsigned int *times, size_t n_kinds, double *out)
{
    const unsigned int *stop = ud;
    unsigned int total = 0;
    for (size_t k = 0; k < n_kinds; k++) total += times[k];
    if (total != 3 || (stop && *stop)) return 1;
    out[0] = times[0] / 3.0;
    return 0;
}

/* Three units, two of kind 0: a round's share k/3 has k ~ Binomial(3, 2/3), so P(0) = 1/27,
** P(1/3) = 6/27, P(2/3) = 12/27, P(1) = 8/27; over 2000 rounds the 10% and 90% quantiles are
** 1/3 and 1 (as item by item: test_audit_bootstrap's known_multinomial). The same seed gives the
** same interval; bad arguments and an aborting round leave NAN. */
static void bootstrap_kinds_known_law(void **state)
{
    (void)state;
    const unsigned int counts[2] = {2, 1}, none[2] = {0, 0};
    double lo, hi, lo2, hi2;
    assert_int_equal(arb__stat_bootstrap_kinds(counts, 2, 1, share_of_kind0, NULL, 2000, 5, 0.8,
                                               &lo, &hi),
                     ARB_OK);
    assert_true(fabs(lo - 1.0 / 3.0) < 1e-12);
    assert_true(fabs(hi - 1.0) < 1e-12);
    assert_int_equal(arb__stat_bootstrap_kinds(counts, 2, 1, share_of_kind0, NULL, 2000, 5, 0.95,
                                               &lo, &hi),
                     ARB_OK);
    assert_true(fabs(lo - 0.0) < 1e-12); /* P(0) = 3.7% > 2.5% */
    assert_true(fabs(hi - 1.0) < 1e-12);
    assert_int_equal(arb__stat_bootstrap_kinds(counts, 2, 1, share_of_kind0, NULL, 50, 9, 0.5,
                                               &lo, &hi),
                     ARB_OK);
    assert_int_equal(arb__stat_bootstrap_kinds(counts, 2, 1, share_of_kind0, NULL, 50, 9, 0.5,
                                               &lo2, &hi2),
                     ARB_OK);
    assert_memory_equal(&lo, &lo2, sizeof lo);
    assert_memory_equal(&hi, &hi2, sizeof hi);

    assert_int_equal(arb__stat_bootstrap_kinds(none, 2, 1, share_of_kind0, NULL, 10, 1, 0.9, &lo,
                                               &hi),
                     ARB_INVALID);
    assert_true(isnan(lo) && isnan(hi));
    assert_int_equal(arb__stat_bootstrap_kinds(counts, 2, 1, share_of_kind0, NULL, 0, 1, 0.9, &lo,
                                               &hi),
                     ARB_INVALID);
    assert_int_equal(arb__stat_bootstrap_kinds(counts, 2, 1, share_of_kind0, NULL, 10, 1, 1.0, &lo,
                                               &hi),
                     ARB_INVALID);
    const unsigned int stop = 1;
    assert_int_equal(arb__stat_bootstrap_kinds(counts, 2, 1, share_of_kind0, (void *)&stop, 10, 1,
                                               0.9, &lo, &hi),
                     ARB_INTERRUPTED);
    assert_true(isnan(lo) && isnan(hi));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(correlation_empty_and_short),
        cmocka_unit_test(correlation_zero_variance),
        cmocka_unit_test(correlation_with_ties),
        cmocka_unit_test(correlation_drops_missing),
        cmocka_unit_test(correlation_ties_both),
        cmocka_unit_test(cohen_kappa_examples),
        cmocka_unit_test(cohen_kappa_undefined),
        cmocka_unit_test(fleiss_kappa_wikipedia),
        cmocka_unit_test(fleiss_kappa_small),
        cmocka_unit_test(fleiss_kappa_undefined),
        cmocka_unit_test(krippendorff_published_example),
        cmocka_unit_test(krippendorff_small),
        cmocka_unit_test(krippendorff_undefined),
        cmocka_unit_test(chisq_two_df),
        cmocka_unit_test(chisq_one_df),
        cmocka_unit_test(chisq_two_by_two),
        cmocka_unit_test(chisq_small_expected),
        cmocka_unit_test(chisq_four_by_three_and_two_by_four),
        cmocka_unit_test(chisq_cramers_v_bounds),
        cmocka_unit_test(chisq_undefined),
        cmocka_unit_test(t_paired_example),
        cmocka_unit_test(t_paired_undefined),
        cmocka_unit_test(t_welch_examples),
        cmocka_unit_test(t_welch_undefined),
        cmocka_unit_test(holm_examples),
        cmocka_unit_test(holm_nan_not_counted),
        cmocka_unit_test(holm_bad_input),
        cmocka_unit_test(bootstrap_mean_interval),
        cmocka_unit_test(bootstrap_quantiles_and_half_rule),
        cmocka_unit_test(bootstrap_errors),
        cmocka_unit_test(bootstrap_kinds_known_law),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
