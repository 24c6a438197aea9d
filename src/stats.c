/*
** stats.c -- the general statistics of METHODS §10: correlations (Pearson, Spearman with
** average ranks, Kendall tau-b), agreement coefficients (Cohen's kappa, Fleiss' kappa,
** Krippendorff's alpha, nominal and ordinal), tests (chi-squared test of independence with
** Cramer's V, paired and Welch t-tests), the Holm correction of a family of p-values, and
** percentile bootstrap intervals with a documented seed.
**
** Invariants: every function is total. Undefined results (empty input, n < 2, zero variance,
** a zero denominator, malformed counts) are NAN, never 0 and never inf. Where two series are
** paired, a pair with a non-finite value (NAN = missing; inf is treated as missing too, so no
** result can become inf) in either series is left out first. Inputs are borrowed and never
** modified. Functions returning a bare double have no status to report exhaustion with: they
** return NAN when a scratch allocation fails (the bootstrap returns ARB_NOMEM).
**
** Numerical work that GSL does well (correlation, ranks, sorting, quantiles, the chi-squared
** and t distributions, MT19937) is GSL's; we check inputs so that GSL is never asked something
** it would report as an error (its default handler aborts), and we do not install a
** process-wide GSL error handler, which a library must not do (it is global, not thread-safe).
**
** Not here: which series are compared (audit.c, agreement code), JSON or text rendering (a
** caller maps NAN to null / "n/a"), which tests form a family (the caller's choice).
*/
#include "internal.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

/* Copies the pairs (x[i], y[i]) with both values finite into cx, cy; returns their number. */
static size_t stat_compact_pairs(const double *x, const double *y, size_t n, double *cx,
                                 double *cy)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) continue;
        cx[m] = x[i];
        cy[m] = y[i];
        m++;
    }
    return m;
}

/* 1 when all n values are equal (zero variance), else 0. n >= 1. */
static int stat_constant(const double *v, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (v[i] != v[0]) return 0;
    return 1;
}

/* Clamps a correlation into [-1, 1] against rounding (e.g. 1.0000000000000002). */
static double stat_clamp_unit(double r)
{
    if (isnan(r)) return NAN;
    return r > 1.0 ? 1.0 : r < -1.0 ? -1.0 : r;
}

/* Allocates count doubles, NULL on overflow or exhaustion. */
static double *stat_alloc_doubles(size_t count)
{
    if (count == 0) count = 1;
    if (count > SIZE_MAX / sizeof(double)) return NULL;
    return malloc(count * sizeof(double));
}

/* Pearson's r (§10) of the pairs left after dropping non-finite ones. NAN for fewer than two
** pairs, a constant series, or when memory runs out. */
double arb_stat_pearson(const double *x, const double *y, size_t n)
{
    if (n < 2 || !x || !y || n > SIZE_MAX / 2) return NAN;
    double *buf = stat_alloc_doubles(2 * n);
    if (!buf) return NAN;
    double *cx = buf, *cy = buf + n;
    size_t m = stat_compact_pairs(x, y, n, cx, cy);
    double r = NAN;
    if (m >= 2 && !stat_constant(cx, m) && !stat_constant(cy, m))
        r = stat_clamp_unit(gsl_stats_correlation(cx, 1, cy, 1, m));
    free(buf);
    return r;
}

/* Spearman's rho (§10): Pearson's r of the ranks, tied values getting the average of their
** ranks (gsl_stats_spearman does exactly this: it ranks with averages for ties, then
** correlates). NAN as for Pearson; a series whose values are all tied is constant. */
double arb_stat_spearman(const double *x, const double *y, size_t n)
{
    if (n < 2 || !x || !y || n > SIZE_MAX / 4) return NAN;
    double *buf = stat_alloc_doubles(4 * n); /* compacted x, y, then GSL's 2n work array */
    if (!buf) return NAN;
    double *cx = buf, *cy = buf + n, *work = buf + 2 * n;
    size_t m = stat_compact_pairs(x, y, n, cx, cy);
    double r = NAN;
    if (m >= 2 && !stat_constant(cx, m) && !stat_constant(cy, m))
        r = stat_clamp_unit(gsl_stats_spearman(cx, 1, cy, 1, m, work));
    free(buf);
    return r;
}

/* Kendall's tau-b (§10) = (n_c - n_d) / sqrt((n0 - n1)(n0 - n2)), where n0 - n1 is the number
** of pairs not tied in x and n0 - n2 the number not tied in y; a pair tied in one variable is
** neither concordant nor discordant. O(n^2) comparisons (fine up to a few thousand pairs);
** no allocation. NAN for fewer than two pairs or when either series is all ties. */
double arb_stat_kendall_tau_b(const double *x, const double *y, size_t n)
{
    if (n < 2 || !x || !y) return NAN;
    double s = 0, untied_x = 0, untied_y = 0; /* exact integers below 2^53 */
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) continue;
        for (size_t j = i + 1; j < n; j++) {
            if (!isfinite(x[j]) || !isfinite(y[j])) continue;
            int sx = (x[i] > x[j]) - (x[i] < x[j]);
            int sy = (y[i] > y[j]) - (y[i] < y[j]);
            if (sx) untied_x += 1;
            if (sy) untied_y += 1;
            s += sx * sy;
        }
    }
    if (untied_x == 0 || untied_y == 0) return NAN;
    return stat_clamp_unit(s / sqrt(untied_x * untied_y));
}

/* 1 when all count values are finite and >= 0. */
static int stat_counts_ok(const double *v, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!isfinite(v[i]) || v[i] < 0) return 0;
    return 1;
}

/* Cohen's kappa (§4, §10) = (p_o - p_e) / (1 - p_e) from a k x k table (rater 1 in rows).
** NAN for k == 0, a total of 0, negative or non-finite counts, or p_e == 1 (both raters used
** a single category: agreement by chance is certain, kappa is undefined). */
double arb_stat_cohen_kappa(const double *table, size_t k)
{
    if (k == 0 || !table || k > SIZE_MAX / k || !stat_counts_ok(table, k * k)) return NAN;
    double total = 0, diag = 0;
    for (size_t i = 0; i < k; i++) {
        for (size_t j = 0; j < k; j++) total += table[i * k + j];
        diag += table[i * k + i];
    }
    if (!(total > 0)) return NAN;
    double pe = 0;
    for (size_t c = 0; c < k; c++) {
        double row = 0, col = 0;
        for (size_t j = 0; j < k; j++) {
            row += table[c * k + j];
            col += table[j * k + c];
        }
        pe += (row / total) * (col / total);
    }
    double po = diag / total;
    if (!(1.0 - pe > 0)) return NAN;
    return (po - pe) / (1.0 - pe);
}

/* Fleiss' kappa (§10): with m raters per item, P_i = (sum_j n_ij^2 - m) / (m(m - 1)),
** P_bar = mean P_i, p_j = sum_i n_ij / (N m), P_e = sum_j p_j^2, kappa = (P_bar - P_e) /
** (1 - P_e). NAN when there is no item or category, the items do not all have the same
** number m >= 2 of raters, a count is negative or non-finite, or P_e == 1. */
double arb_stat_fleiss_kappa(const double *counts, size_t n_items, size_t k)
{
    if (n_items == 0 || k == 0 || !counts || n_items > SIZE_MAX / k ||
        !stat_counts_ok(counts, n_items * k))
        return NAN;
    double m = 0;
    for (size_t j = 0; j < k; j++) m += counts[j];
    if (!(m >= 2)) return NAN;
    double *pj = stat_alloc_doubles(k);
    if (!pj) return NAN;
    memset(pj, 0, k * sizeof *pj);
    double p_sum = 0, kappa = NAN;
    for (size_t i = 0; i < n_items; i++) {
        const double *row = counts + i * k;
        double raters = 0, sq = 0;
        for (size_t j = 0; j < k; j++) {
            raters += row[j];
            sq += row[j] * row[j];
            pj[j] += row[j];
        }
        /* Counts are whole numbers, so sums are exact; a small tolerance still lets through
        ** counts that went through a decimal conversion. */
        if (fabs(raters - m) > 1e-9 * m) goto done;
        p_sum += (sq - m) / (m * (m - 1));
    }
    double p_bar = p_sum / (double)n_items, pe = 0;
    for (size_t j = 0; j < k; j++) {
        double p = pj[j] / ((double)n_items * m);
        pe += p * p;
    }
    if (1.0 - pe > 0) kappa = (p_bar - pe) / (1.0 - pe);
done:
    free(pj);
    return kappa;
}

static int stat_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Index of v in the sorted distinct values, which contain it. */
static size_t stat_value_index(const double *values, size_t n_values, double v)
{
    size_t lo = 0, hi = n_values;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (values[mid] <= v)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Krippendorff's squared difference between the a-th and b-th distinct values (sorted):
** nominal 0 or 1; ordinal (sum_{g=a..b} n_g - (n_a + n_b) / 2)^2 with cum[] the cumulative
** margins, i.e. (cum[b] - cum[a] + (n_a - n_b) / 2)^2 for a <= b. */
static double stat_delta2(int ordinal, const double *margin, const double *cum, size_t a,
                          size_t b)
{
    if (a == b) return 0;
    if (!ordinal) return 1;
    if (a > b) {
        size_t t = a;
        a = b;
        b = t;
    }
    double d = cum[b] - cum[a] + (margin[a] - margin[b]) / 2.0;
    return d * d;
}

/* Krippendorff's alpha (§10; Krippendorff 2011, "Computing Krippendorff's alpha-reliability")
** through the coincidence matrix: a unit with m_u >= 2 values adds 1/(m_u - 1) to o_ck for
** every ordered pair of its values (c, k) from different coders; units with fewer than two
** values are not pairable and are dropped. With n_c = sum_k o_ck and n = sum_c n_c,
**   alpha = 1 - (n - 1) * sum_{c,k} o_ck delta2_ck / sum_{c,k} n_c n_k delta2_ck.
** Nominal: delta2 = 1 when c != k. Ordinal (values ordered, only their order matters):
** delta2_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2 over the ordered observed values.
** The matrix is never stored: the observed part is summed per unit (O(m_u^2)), the expected
** part from the margins n_c (O(V) nominal, O(V^2) ordinal for V distinct values). NAN when no
** unit is pairable or the expected disagreement is 0 (a single value overall). */
double arb_stat_krippendorff_alpha(const double *values, size_t n_units, size_t n_raters,
                                   int ordinal)
{
    if (n_units == 0 || n_raters < 2 || !values || n_units > SIZE_MAX / n_raters) return NAN;
    size_t cells = n_units * n_raters;
    /* distinct[] holds the pairable values, then the sorted distinct ones; margin[] n_c;
    ** cum[] the cumulative margins (ordinal). One block, 3 * cells doubles at most. */
    if (cells > SIZE_MAX / 3) return NAN;
    double *block = stat_alloc_doubles(3 * cells);
    if (!block) return NAN;
    double *distinct = block, *margin = block + cells, *cum = block + 2 * cells;
    double alpha = NAN;

    size_t n_vals = 0;
    for (size_t u = 0; u < n_units; u++) {
        const double *row = values + u * n_raters;
        size_t m_u = 0;
        for (size_t r = 0; r < n_raters; r++) m_u += isfinite(row[r]) ? 1 : 0;
        if (m_u < 2) continue;
        for (size_t r = 0; r < n_raters; r++)
            if (isfinite(row[r])) distinct[n_vals++] = row[r];
    }
    if (n_vals < 2) goto done;
    qsort(distinct, n_vals, sizeof *distinct, stat_cmp_double);
    size_t n_distinct = 0;
    for (size_t i = 0; i < n_vals; i++)
        if (n_distinct == 0 || distinct[i] != distinct[n_distinct - 1])
            distinct[n_distinct++] = distinct[i];
    memset(margin, 0, n_distinct * sizeof *margin);

    /* Margins first: a value in a unit with m_u values has m_u - 1 partners, each weighted
    ** 1/(m_u - 1), so it adds exactly 1 to n_c; n is the number of pairable values. */
    for (size_t u = 0; u < n_units; u++) {
        const double *row = values + u * n_raters;
        size_t m_u = 0;
        for (size_t r = 0; r < n_raters; r++) m_u += isfinite(row[r]) ? 1 : 0;
        if (m_u < 2) continue;
        for (size_t r = 0; r < n_raters; r++)
            if (isfinite(row[r])) margin[stat_value_index(distinct, n_distinct, row[r])] += 1;
    }
    double n = (double)n_vals, acc = 0;
    for (size_t c = 0; c < n_distinct; c++) {
        acc += margin[c];
        cum[c] = acc; /* cum[c] = sum_{g <= c} n_g */
    }

    double observed = 0;
    for (size_t u = 0; u < n_units; u++) {
        const double *row = values + u * n_raters;
        size_t m_u = 0;
        for (size_t r = 0; r < n_raters; r++) m_u += isfinite(row[r]) ? 1 : 0;
        if (m_u < 2) continue;
        double unit_sum = 0;
        for (size_t r = 0; r < n_raters; r++) {
            if (!isfinite(row[r])) continue;
            size_t a = stat_value_index(distinct, n_distinct, row[r]);
            for (size_t s = r + 1; s < n_raters; s++) {
                if (!isfinite(row[s])) continue;
                size_t b = stat_value_index(distinct, n_distinct, row[s]);
                unit_sum += 2.0 * stat_delta2(ordinal, margin, cum, a, b); /* (r, s) and (s, r) */
            }
        }
        observed += unit_sum / (double)(m_u - 1);
    }

    double expected = 0;
    if (ordinal) {
        for (size_t c = 0; c < n_distinct; c++)
            for (size_t k = c + 1; k < n_distinct; k++)
                expected += 2.0 * margin[c] * margin[k] * stat_delta2(ordinal, margin, cum, c, k);
    } else {
        double sq = 0;
        for (size_t c = 0; c < n_distinct; c++) sq += margin[c] * margin[c];
        expected = n * n - sq; /* sum over c != k of n_c n_k */
    }
    if (expected > 0) alpha = 1.0 - (n - 1.0) * observed / expected;
done:
    free(block);
    return alpha;
}

/* A test result with nothing defined: every number NAN, no cells. */
static arb_test_result stat_test_undefined(void)
{
    arb_test_result res = {NAN, NAN, NAN, NAN, NAN, 0, 0};
    return res;
}

/* Chi-squared test of independence (§10) on a rows x cols table of counts: rows and columns
** that are all zero are dropped (they carry no information and would put empty cells in the
** expected table), then with E_ij = R_i C_j / N the statistic is sum (O_ij - E_ij)^2 / E_ij on
** df = (r - 1)(c - 1) of the r x c table left, and the p-value is the upper tail
** gsl_cdf_chisq_Q. No continuity correction. Cramer's V = sqrt(chi2 / (N (min(r, c) - 1))),
** an effect size that does not grow with N. Cells with E < 5 are counted, not refused: the
** caller decides whether to warn (the chi-squared approximation weakens there).
** With r < 2 or c < 2 (also an empty or all-zero table) there is nothing to test: df 0,
** statistic, p and V NAN. Everything NAN for a NULL table or a negative / non-finite count;
** statistic NAN too when an expected count underflows to 0 (tiny non-integer counts). */
arb_test_result arb_stat_chisq_independence(const double *table, size_t rows, size_t cols)
{
    arb_test_result res = stat_test_undefined();
    if (rows == 0 || cols == 0) {
        res.df = 0;
        return res;
    }
    if (!table || rows > SIZE_MAX / cols || !stat_counts_ok(table, rows * cols) ||
        rows > SIZE_MAX - cols)
        return res;
    double *margins = stat_alloc_doubles(rows + cols);
    if (!margins) return res;
    double *row_sum = margins, *col_sum = margins + rows, total = 0;
    memset(margins, 0, (rows + cols) * sizeof *margins);
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            row_sum[i] += table[i * cols + j];
            col_sum[j] += table[i * cols + j];
            total += table[i * cols + j];
        }
    size_t r_kept = 0, c_kept = 0;
    for (size_t i = 0; i < rows; i++) r_kept += row_sum[i] > 0;
    for (size_t j = 0; j < cols; j++) c_kept += col_sum[j] > 0;
    res.df = 0;
    if (r_kept < 2 || c_kept < 2) goto done; /* total > 0 follows from here on */
    res.df = (double)(r_kept - 1) * (double)(c_kept - 1);
    res.n_cells = r_kept * c_kept;
    double stat = 0;
    int zero_expected = 0;
    for (size_t i = 0; i < rows; i++) {
        if (!(row_sum[i] > 0)) continue;
        for (size_t j = 0; j < cols; j++) {
            if (!(col_sum[j] > 0)) continue;
            double expected = row_sum[i] * col_sum[j] / total;
            if (expected < 5) res.n_expected_below_5++;
            if (!(expected > 0)) { /* underflow of tiny counts only */
                zero_expected = 1;
                continue;
            }
            double diff = table[i * cols + j] - expected;
            stat += diff * diff / expected;
        }
    }
    if (zero_expected || !isfinite(stat)) goto done;
    res.statistic = stat;
    res.p_value = gsl_cdf_chisq_Q(stat, res.df);
    double k_minus_1 = (double)((r_kept < c_kept ? r_kept : c_kept) - 1);
    double v = sqrt(stat / (total * k_minus_1));
    res.cramers_v = v > 1.0 ? 1.0 : v; /* rounding only: chi2 <= N (min(r, c) - 1) */
done:
    free(margins);
    return res;
}

/* Two-sided p-value of t on df degrees of freedom (df > 0, t finite). */
static double stat_t_two_sided(double t, double df)
{
    double p = 2.0 * gsl_cdf_tdist_Q(fabs(t), df);
    return p > 1.0 ? 1.0 : p;
}

/* Paired t-test (§10): on the differences d_i = x_i - y_i of the pairs left after dropping
** non-finite ones, t = mean(d) / (sd(d) / sqrt(n)), df = n - 1, two-sided p; mean_diff =
** mean(d) once one pair is left. Statistic, df and p NAN for fewer than two pairs; statistic
** and p NAN when the differences have zero variance. */
arb_test_result arb_stat_t_paired(const double *x, const double *y, size_t n)
{
    arb_test_result res = stat_test_undefined();
    if (n == 0 || !x || !y) return res;
    double *d = stat_alloc_doubles(n);
    if (!d) return res;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) d[m++] = x[i] - y[i];
    if (m == 0) goto done;
    double mean = gsl_stats_mean(d, 1, m);
    res.mean_diff = mean;
    if (m < 2) goto done;
    res.df = (double)(m - 1);
    if (stat_constant(d, m)) goto done;
    double sd = gsl_stats_sd_m(d, 1, m, mean);
    if (!(sd > 0)) goto done;
    double t = mean / (sd / sqrt((double)m));
    if (!isfinite(t)) goto done;
    res.statistic = t;
    res.p_value = stat_t_two_sided(t, res.df);
done:
    free(d);
    return res;
}

/* Welch's t-test (§10) of two independent samples, non-finite values dropped from each:
** t = (mean_x - mean_y) / sqrt(s_x^2/n_x + s_y^2/n_y), Welch-Satterthwaite
** df = (v_x + v_y)^2 / (v_x^2/(n_x - 1) + v_y^2/(n_y - 1)) with v = s^2/n, two-sided p;
** mean_diff = mean_x - mean_y once each sample has a value. Statistic, df and p NAN when
** either sample has fewer than two values or both have zero variance. */
arb_test_result arb_stat_t_welch(const double *x, size_t nx, const double *y, size_t ny)
{
    arb_test_result res = stat_test_undefined();
    if (nx == 0 || ny == 0 || !x || !y || nx > SIZE_MAX - ny) return res;
    double *buf = stat_alloc_doubles(nx + ny);
    if (!buf) return res;
    double *cx = buf, *cy = buf + nx;
    size_t mx = 0, my = 0;
    for (size_t i = 0; i < nx; i++)
        if (isfinite(x[i])) cx[mx++] = x[i];
    for (size_t i = 0; i < ny; i++)
        if (isfinite(y[i])) cy[my++] = y[i];
    if (mx == 0 || my == 0) goto done;
    double mean_x = gsl_stats_mean(cx, 1, mx), mean_y = gsl_stats_mean(cy, 1, my);
    res.mean_diff = mean_x - mean_y;
    if (mx < 2 || my < 2) goto done;
    /* A constant sample has variance exactly 0 (GSL's running mean can leave a rounding
    ** residue), which keeps df at n_other - 1 as the formula says. */
    double var_x = stat_constant(cx, mx) ? 0 : gsl_stats_variance_m(cx, 1, mx, mean_x);
    double var_y = stat_constant(cy, my) ? 0 : gsl_stats_variance_m(cy, 1, my, mean_y);
    double vx = var_x / (double)mx, vy = var_y / (double)my, se2 = vx + vy;
    if (!(se2 > 0)) goto done;
    double t = (mean_x - mean_y) / sqrt(se2);
    double df = se2 * se2 / (vx * vx / (double)(mx - 1) + vy * vy / (double)(my - 1));
    if (!isfinite(t) || !(df > 0) || !isfinite(df)) goto done;
    res.statistic = t;
    res.df = df;
    res.p_value = stat_t_two_sided(t, df);
done:
    free(buf);
    return res;
}

/* Holm-Bonferroni step-down adjustment (§10; Holm 1979) for a family of tests. The m defined
** p-values are ranked (gsl_sort_index; ties may come in any order, which does not change the
** result: tied values get the same adjusted value through the running maximum), the k-th
** smallest (k from 0) is multiplied by m - k and capped at 1, and a running maximum keeps the
** adjusted values in the order of the raw ones. Undefined tests (NAN) are not part of the
** family: they neither count in m nor get a value. The defined values are copied before
** anything is written, so adjusted may alias p_values. */
arb_status arb_stat_holm(const double *p_values, size_t n, double *adjusted)
{
    if (n == 0) return ARB_OK;
    if (!p_values || !adjusted) {
        for (size_t i = 0; adjusted && i < n; i++) adjusted[i] = NAN;
        return ARB_INVALID;
    }
    size_t m = 0;
    arb_status rc = ARB_OK;
    for (size_t i = 0; i < n; i++) {
        if (isnan(p_values[i])) continue;
        if (!(p_values[i] >= 0 && p_values[i] <= 1)) rc = ARB_INVALID;
        m++;
    }
    double *vals = NULL;
    size_t *where = NULL, *order = NULL;
    if (rc != ARB_OK) goto done;
    rc = ARB_NOMEM;
    if (m > SIZE_MAX / sizeof(size_t) / 2) goto done;
    vals = stat_alloc_doubles(m);
    where = malloc((m ? 2 * m : 1) * sizeof *where); /* original index, then the ranking */
    if (!vals || !where) goto done;
    order = where + m;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(p_values[i])) {
            vals[k] = p_values[i];
            where[k++] = i;
        }
    for (size_t i = 0; i < n; i++) adjusted[i] = NAN;
    if (m > 0) gsl_sort_index(order, vals, 1, m);
    double running = 0;
    for (k = 0; k < m; k++) {
        double p = vals[order[k]] * (double)(m - k);
        if (p > 1.0) p = 1.0;
        if (p > running) running = p;
        adjusted[where[order[k]]] = running;
    }
    rc = ARB_OK;
done:
    if (rc != ARB_OK)
        for (size_t i = 0; i < n; i++) adjusted[i] = NAN;
    free(where);
    free(vals);
    return rc;
}

/* Sets lo[s]/hi[s] to the (1 - level)/2 and (1 + level)/2 quantiles of statistic s's finite
** values among replicates[s * resamples .. + resamples) (reordered in place), by GSL's linear
** interpolation between order statistics; left as they are (NAN) when fewer than half are
** finite. */
static void percentile_intervals(double *replicates, size_t resamples, size_t n_stats,
                                 double level, double *lo, double *hi)
{
    for (size_t s = 0; s < n_stats; s++) {
        double *vals = replicates + s * resamples;
        size_t defined = 0;
        for (size_t b = 0; b < resamples; b++)
            if (isfinite(vals[b])) vals[defined++] = vals[b];
        if (defined == 0 || defined < resamples - resamples / 2) continue; /* < half */
        gsl_sort(vals, 1, defined);
        lo[s] = gsl_stats_quantile_from_sorted_data(vals, 1, defined, (1.0 - level) / 2.0);
        hi[s] = gsl_stats_quantile_from_sorted_data(vals, 1, defined, (1.0 + level) / 2.0);
    }
}

/* One round of a bootstrap: draws its resample with rng and writes its statistics to out
** (preset to NAN). 0, nonzero to abort. */
typedef int (*round_fn)(void *ctx, gsl_rng *rng, double *out);

/* The rounds of a percentile bootstrap and their intervals (percentile_intervals) into lo/hi:
** MT19937 seeded with seed ^ (seed >> 32) (32 bits), `resamples` rounds of n_stats statistics.
** ARB_OK, ARB_NOMEM, or ARB_INTERRUPTED when a round aborts. The caller checked the sizes. */
static arb_status bootstrap_rounds(round_fn round, void *ctx, size_t n_stats, size_t resamples,
                                   unsigned long long seed, double level, double *lo,
                                   double *hi)
{
    arb_status rc = ARB_NOMEM;
    double *replicates = stat_alloc_doubles(resamples * n_stats + n_stats);
    gsl_rng *rng = NULL;
    if (!replicates) goto done;
    double *out = replicates + resamples * n_stats; /* one replicate's statistics */
    rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng) goto done;
    gsl_rng_set(rng, (unsigned long)((seed ^ (seed >> 32)) & 0xFFFFFFFFull));
    for (size_t b = 0; b < resamples; b++) {
        for (size_t s = 0; s < n_stats; s++) out[s] = NAN;
        if (round(ctx, rng, out) != 0) {
            rc = ARB_INTERRUPTED;
            goto done;
        }
        for (size_t s = 0; s < n_stats; s++) replicates[s * resamples + b] = out[s];
    }
    percentile_intervals(replicates, resamples, n_stats, level, lo, hi);
    rc = ARB_OK;
done:
    gsl_rng_free(rng);
    free(replicates);
    return rc;
}

/* The state of arb_stat_bootstrap's rounds. */
typedef struct item_rounds {
    size_t *indices;
    size_t n;
    arb_stat_resample_fn fn;
    void *ud;
} item_rounds;

/* round_fn: n units drawn one by one. */
static int item_round(void *ctx, gsl_rng *rng, double *out)
{
    item_rounds *r = ctx;
    for (size_t i = 0; i < r->n; i++)
        r->indices[i] = (size_t)gsl_rng_uniform_int(rng, (unsigned long)r->n);
    return r->fn(r->ud, r->indices, r->n, out);
}

/* Percentile bootstrap (§10). Each of the `resamples` replicates draws n indices uniformly
** with replacement (gsl_rng_uniform_int of an MT19937 generator) and asks fn for the n_stats
** statistics; replicate values are kept per statistic. For each statistic, its defined
** (finite) replicate values are sorted and lo/hi are their (1 - level)/2 and (1 + level)/2
** quantiles by GSL's linear interpolation between order statistics
** (gsl_stats_quantile_from_sorted_data); both NAN when fewer than half of the replicates are
** defined. Seeding: MT19937 uses 32 bits of its seed, so the 64-bit seed is folded as
** seed ^ (seed >> 32) (seeds below 2^32 are used as is; note GSL maps seed 0 to its default
** seed 4357). Returns ARB_INVALID for n == 0, n >= 2^32 (beyond the generator's range), a level
** outside (0, 1), resamples == 0, a NULL fn, or NULL lo/hi with n_stats > 0; ARB_NOMEM;
** ARB_INTERRUPTED when fn returns nonzero. On any error lo/hi (when given) are all NAN.
** Note: gsl_rng_alloc calls GSL's error handler when it runs out of memory, which by default
** aborts; we do not replace the process-wide handler from a library. */
arb_status arb_stat_bootstrap(size_t n, size_t n_stats, arb_stat_resample_fn fn, void *ud,
                              size_t resamples, unsigned long long seed, double level,
                              double *lo, double *hi)
{
    if (n_stats > 0 && (!lo || !hi)) return ARB_INVALID;
    for (size_t s = 0; s < n_stats; s++) lo[s] = hi[s] = NAN;
    if (n == 0 || !fn || resamples == 0 || !(level > 0 && level < 1)) return ARB_INVALID;
    if ((unsigned long long)n > 0xFFFFFFFFull) return ARB_INVALID; /* generator's range */
    if (n_stats == 0) return ARB_OK;
    if (n > SIZE_MAX / sizeof(size_t) || resamples > SIZE_MAX / n_stats ||
        resamples * n_stats > SIZE_MAX / sizeof(double) - n_stats)
        return ARB_NOMEM;

    size_t *indices = malloc(n * sizeof *indices);
    if (!indices) return ARB_NOMEM;
    item_rounds r = {indices, n, fn, ud};
    arb_status rc = bootstrap_rounds(item_round, &r, n_stats, resamples, seed, level, lo, hi);
    free(indices);
    return rc;
}

/* The state of arb__stat_bootstrap_kinds' rounds. */
typedef struct kind_rounds {
    const double *prob;  /* counts as weights */
    unsigned int *times; /* a round's draws per kind */
    size_t n_kinds;
    unsigned int n_units;
    arb__stat_kinds_fn fn;
    void *ud;
} kind_rounds;

/* round_fn: how often each kind is drawn, at once. */
static int kind_round(void *ctx, gsl_rng *rng, double *out)
{
    kind_rounds *r = ctx;
    gsl_ran_multinomial(rng, r->n_kinds, r->n_units, r->prob, r->times);
    return r->fn(r->ud, r->times, r->n_kinds, out);
}

/* See internal.h. The same generator, seeding and percentiles as arb_stat_bootstrap; a round is
** one gsl_ran_multinomial draw of n_units = sum of counts over the kinds, kind k with
** probability counts[k] / n_units: the law of how often each kind is drawn when n_units units
** are drawn with replacement (METHODS §6's remark on the Bradley-Terry bootstrap). */
arb_status arb__stat_bootstrap_kinds(const unsigned int *counts, size_t n_kinds, size_t n_stats,
                                     arb__stat_kinds_fn fn, void *ud, size_t resamples,
                                     unsigned long long seed, double level, double *lo,
                                     double *hi)
{
    if (n_stats > 0 && (!lo || !hi)) return ARB_INVALID;
    for (size_t s = 0; s < n_stats; s++) lo[s] = hi[s] = NAN;
    unsigned long long n_units = 0;
    for (size_t k = 0; k < n_kinds; k++) n_units += counts[k];
    if (n_units == 0 || !fn || resamples == 0 || !(level > 0 && level < 1)) return ARB_INVALID;
    if (n_units > UINT_MAX) return ARB_INVALID; /* gsl_ran_multinomial's range */
    if (n_stats == 0) return ARB_OK;
    if (n_kinds > SIZE_MAX / sizeof(double) || resamples > SIZE_MAX / n_stats ||
        resamples * n_stats > SIZE_MAX / sizeof(double) - n_stats)
        return ARB_NOMEM;

    unsigned int *times = malloc(n_kinds * sizeof *times);
    double *prob = stat_alloc_doubles(n_kinds);
    arb_status rc = ARB_NOMEM;
    if (times && prob) {
        for (size_t k = 0; k < n_kinds; k++) prob[k] = (double)counts[k];
        kind_rounds r = {prob, times, n_kinds, (unsigned int)n_units, fn, ud};
        rc = bootstrap_rounds(kind_round, &r, n_stats, resamples, seed, level, lo, hi);
    }
    free(prob);
    free(times);
    return rc;
}

/* ---- pooled ratios over resampled units ---------------------------------------------------- */

typedef struct pooled_ctx {
    const double *agg;
    size_t n_sums;
    const arb__ratio_stat *stats;
    size_t n_stats;
    double *sum; /* n_sums scratch */
} pooled_ctx;

/* sum[num] / sum[den], NAN when the denominator is not positive. */
static double pooled_ratio(const double *sum, size_t num, size_t den)
{
    return sum[den] > 0 ? sum[num] / sum[den] : NAN;
}

/* arb_stat_resample_fn: every statistic on the units picked. */
static int pooled_statistic(void *ud, const size_t *indices, size_t n, double *out)
{
    const pooled_ctx *c = ud;
    memset(c->sum, 0, c->n_sums * sizeof *c->sum);
    for (size_t x = 0; x < n; x++) {
        const double *row = c->agg + indices[x] * c->n_sums;
        for (size_t k = 0; k < c->n_sums; k++) c->sum[k] += row[k];
    }
    for (size_t s = 0; s < c->n_stats; s++) {
        const arb__ratio_stat *r = &c->stats[s];
        double v = pooled_ratio(c->sum, r->num, r->den);
        if (r->difference) v -= pooled_ratio(c->sum, r->num2, r->den2); /* NAN stays NAN */
        out[s] = v;
    }
    return 0;
}

/* See internal.h. */
arb_status arb__stat_pooled_ratios(const double *agg, size_t n_units, size_t n_sums,
                                   const arb__ratio_stat *stats, size_t n_stats,
                                   size_t resamples, unsigned long long seed, double level,
                                   double *est, double *lo, double *hi)
{
    for (size_t s = 0; s < n_stats; s++) est[s] = lo[s] = hi[s] = NAN;
    if (n_units == 0 || n_stats == 0) return ARB_OK;
    pooled_ctx c = {agg, n_sums, stats, n_stats, stat_alloc_doubles(n_sums ? n_sums : 1)};
    size_t *all = malloc(n_units * sizeof *all);
    arb_status st = ARB_NOMEM;
    if (!c.sum || !all) goto done;
    for (size_t x = 0; x < n_units; x++) all[x] = x;
    pooled_statistic(&c, all, n_units, est);
    st = resamples ? arb_stat_bootstrap(n_units, n_stats, pooled_statistic, &c, resamples, seed,
                                        level, lo, hi)
                   : ARB_OK;
    if (st == ARB_INVALID) st = ARB_OK; /* a bad level: the intervals stay NAN */
done:
    free(all);
    free(c.sum);
    return st;
}
