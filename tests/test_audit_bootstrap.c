/*
** test_audit_bootstrap.c -- the audit's bootstrap intervals (audit_bootstrap.c): the pattern
** path (one multinomial draw of the item patterns per round) gives intervals with the same law
** as resampling items one by one and recomputing every metric, on random designs with several
** comparisons, tasks, repetitions, missing runs, E verdicts and expert labels; the block path
** gives exactly those of laying the drawn blocks end to end and sorting (same seed, same
** draws); and a hand-computed case with a known multinomial law.
*/
#include "internal.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

enum { MAX_PAIRS = 512 };

typedef struct design {
    arb__sbs_pair pairs[MAX_PAIRS];
    arb__pair_ref refs[MAX_PAIRS];
    size_t n;
} design;

/* A small deterministic generator, so a failing design can be rebuilt from its seed. */
static uint32_t next_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*state >> 33);
}

static char random_verdict(uint64_t *state)
{
    static const char v[] = "AAABBBCDE"; /* E and missing rarer than A/B */
    uint32_t r = next_random(state) % 20;
    return r == 0 ? 0 : v[r % 9];
}

/* n_items items, each in one or both of two comparisons, one or two repetitions, a task of
** three, and for some items an expert label (a..d, or 'T' for tied annotators). */
static void random_design(design *d, uint64_t seed, size_t n_items)
{
    uint64_t st = seed;
    static const char labels[] = "abcdT\0\0";
    d->n = 0;
    for (uint32_t item = 0; item < n_items; item++) {
        uint32_t task = next_random(&st) % 3;
        int cmps = 1 + (int)(next_random(&st) % 3); /* 1: cmp 0, 2: cmp 1, 3: both */
        int reps = 1 + (int)(next_random(&st) % 2);
        char expert = labels[next_random(&st) % 7];
        for (uint32_t c = 0; c < 2; c++) {
            if (!(cmps & (1 << c))) continue;
            for (int r = 0; r < reps && d->n < MAX_PAIRS; r++) {
                arb__sbs_pair *p = &d->pairs[d->n];
                memset(p, 0, sizeof *p);
                p->cmp = c;
                p->item = item;
                p->seq = (long long)item;
                p->task = task;
                p->rep = r;
                p->p0 = random_verdict(&st);
                p->p1 = random_verdict(&st);
                if (!p->p0 && !p->p1) p->p0 = 'A';
                p->expert = expert;
                for (int k = 0; k < ARB_LEN__COUNT; k++) p->len[k] = NAN;
                d->n++;
            }
        }
    }
    for (size_t i = 0; i < d->n; i++) {
        d->refs[i].p = &d->pairs[i];
        d->refs[i].copy = 0;
    }
    qsort(d->refs, d->n, sizeof *d->refs, arb__audit_ref_order_cmp);
}

/* ---- the brute-force bootstraps, as the audit computed them before the pattern path -------- */

typedef struct brute {
    const arb__pair_ref *by_unit;
    size_t unit_start[MAX_PAIRS + 1];
    arb__pair_ref scratch[MAX_PAIRS * 8];
    const arb_audit_params *params;
    int blocks;
} brute;

static int cmp_block_order(const void *x, const void *y)
{
    const arb__pair_ref *a = x, *b = y;
    if (a->p->cmp != b->p->cmp) return a->p->cmp < b->p->cmp ? -1 : 1;
    if (a->copy != b->copy) return a->copy < b->copy ? -1 : 1;
    if (a->p->seq != b->p->seq) return a->p->seq < b->p->seq ? -1 : 1;
    return (a->p->rep > b->p->rep) - (a->p->rep < b->p->rep);
}

/* Every drawn unit's pairs as copy i, sorted, every metric recomputed from the pairs. */
static int brute_replicate(void *ud, const size_t *indices, size_t n, double *out)
{
    brute *b = ud;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = b->unit_start[indices[i]]; j < b->unit_start[indices[i] + 1]; j++) {
            if (k == sizeof b->scratch / sizeof *b->scratch) return 1;
            b->scratch[k].p = b->by_unit[j].p;
            b->scratch[k++].copy = (uint32_t)i;
        }
    qsort(b->scratch, k, sizeof *b->scratch, b->blocks ? cmp_block_order : arb__audit_ref_order_cmp);
    arb_audit_metrics m;
    memset(&m, 0, sizeof m);
    if (b->blocks ? arb__audit_window_metrics(b->scratch, k, b->params, &m)
                  : arb__audit_metrics(b->scratch, k, b->params, &m))
        return 1;
    memcpy(out, m.value, sizeof m.value);
    return 0;
}

/* Brute-force intervals: units are items (blocks = 0) or blocks of `window` items in benchmark
** order (blocks = 1); the design's pairs are one item per seq. */
static void brute_intervals(const design *d, const arb_audit_params *p, int blocks, double *lo,
                            double *hi)
{
    static brute b;
    b.by_unit = d->refs; /* by comparison then item: regroup by item below */
    static arb__pair_ref by_item[MAX_PAIRS];
    memcpy(by_item, d->refs, d->n * sizeof *by_item);
    /* the design's items are numbered in benchmark order, so by item = by seq */
    for (size_t i = 1; i < d->n; i++) /* insertion sort by item, stable */
        for (size_t j = i; j > 0 && by_item[j - 1].p->item > by_item[j].p->item; j--) {
            arb__pair_ref t = by_item[j];
            by_item[j] = by_item[j - 1];
            by_item[j - 1] = t;
        }
    b.by_unit = by_item;
    size_t units = 0, items = 0;
    for (size_t i = 0; i < d->n; i++) {
        if (i > 0 && by_item[i].p->item == by_item[i - 1].p->item) continue;
        if (!blocks || items % p->window == 0) b.unit_start[units++] = i;
        items++;
    }
    b.unit_start[units] = d->n;
    b.params = p;
    b.blocks = blocks;
    assert_int_equal(arb_stat_bootstrap(units, ARB_M__COUNT, brute_replicate, &b, p->bootstrap,
                                        p->seed, p->ci_level, lo, hi),
                     ARB_OK);
}

static int is_window_metric(int k)
{
    return k == ARB_M_MPCC_CONSISTENCY || k == ARB_M_MPCC || k == ARB_M_MPCC_DELTA;
}

static void assert_same(double got, double want, int k, const char *end, uint64_t seed)
{
    if (isnan(got) && isnan(want)) return;
    if (isnan(got) || isnan(want) || fabs(got - want) > 1e-12)
        fail_msg("seed %llu, %s %s: fast %.17g, item by item %.17g", (unsigned long long)seed,
                 arb_audit_metric_key((arb_audit_metric)k), end, got, want);
}

/* Over many random designs, seeds and window shapes (the stride dividing the window or not, a
** stride longer than the window), every window-series interval of the block path equals the
** brute-force one: same draws, the series rebuilt from the pairs. */
static void blocks_equal_block_by_block(void **state)
{
    (void)state;
    static const size_t shapes[][2] = {{4, 2}, {5, 2}, {3, 3}, {10, 5}, {3, 5}, {6, 4}};
    arb_audit_params p = arb_audit_default_params();
    p.bootstrap = 200;
    static design d;
    double lo[ARB_M__COUNT], hi[ARB_M__COUNT];
    size_t defined = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        random_design(&d, seed, 20 + 5 * seed);
        p.window = shapes[seed % 6][0];
        p.stride = shapes[seed % 6][1];
        p.seed = seed * 7919;
        p.ci_level = seed % 2 ? 0.95 : 0.8;
        arb_audit_metrics m;
        memset(&m, 0, sizeof m);
        assert_int_equal(arb__audit_metrics(d.refs, d.n, &p, &m), 0);
        assert_int_equal(arb__audit_bootstrap(d.refs, d.n, &p, &m), ARB_OK);
        brute_intervals(&d, &p, 1, lo, hi);
        for (int k = 0; k < ARB_M__COUNT; k++) {
            if (!is_window_metric(k)) continue;
            assert_same(m.ci_lo[k], lo[k], k, "lo", seed);
            assert_same(m.ci_hi[k], hi[k], k, "hi", seed);
            if (!isnan(lo[k]) && lo[k] < hi[k]) defined++;
        }
    }
    assert_true(defined > 12 * 3 / 2); /* most are proper intervals */
}

/* Edge cases of both paths against the brute force: one item, two, a group smaller than a
** window, windows of one item, a stride longer than the window, every item of one pattern
** (all (A,B), all ties, all E). Blocks: the same draws, so the same intervals. Items: where
** every item has one pattern every resample is the sample, so both give the point value. */
static void tiny_and_uniform_groups(void **state)
{
    (void)state;
    static const size_t shapes[][2] = {{1, 1}, {2, 7}, {10, 5}, {3, 1}};
    static const char uniform[][2] = {{'A', 'B'}, {'C', 'C'}, {'E', 'E'}, {'A', 0}};
    static design d;
    double lo[ARB_M__COUNT], hi[ARB_M__COUNT];
    arb_audit_params p = arb_audit_default_params();
    p.bootstrap = 100;
    size_t constant = 0; /* cases checked against the point value */
    for (size_t n_items = 1; n_items <= 13; n_items += 3)
        for (size_t shape = 0; shape < 4; shape++)
            for (int u = -1; u < 4; u++) {
                uint64_t seed = n_items * 100 + shape * 10 + (uint64_t)(u + 1);
                random_design(&d, seed, n_items);
                if (u >= 0)
                    for (size_t i = 0; i < d.n; i++) {
                        d.pairs[i].cmp = 0;
                        d.pairs[i].task = 0;
                        d.pairs[i].p0 = uniform[u][0];
                        d.pairs[i].p1 = uniform[u][1];
                        d.pairs[i].expert = 'a';
                    }
                qsort(d.refs, d.n, sizeof *d.refs, arb__audit_ref_order_cmp);
                p.window = shapes[shape][0];
                p.stride = shapes[shape][1];
                p.seed = seed;
                arb_audit_metrics m;
                memset(&m, 0, sizeof m);
                assert_int_equal(arb__audit_metrics(d.refs, d.n, &p, &m), 0);
                assert_int_equal(arb__audit_bootstrap(d.refs, d.n, &p, &m), ARB_OK);
                brute_intervals(&d, &p, 1, lo, hi);
                for (int k = 0; k < ARB_M__COUNT; k++) {
                    if (!is_window_metric(k)) continue;
                    assert_same(m.ci_lo[k], lo[k], k, "lo", seed);
                    assert_same(m.ci_hi[k], hi[k], k, "hi", seed);
                }
                /* one pattern per comparison and repetition count: a constant resample */
                int one_pattern = n_items == 1;
                if (u >= 0) {
                    one_pattern = 1;
                    for (size_t i = 1; i < d.n; i++) /* same repetitions everywhere? */
                        if (d.pairs[i].item != d.pairs[i - 1].item && d.pairs[i].rep != 0)
                            one_pattern = 0;
                    size_t per_item[64] = {0};
                    for (size_t i = 0; i < d.n; i++) per_item[d.pairs[i].item]++;
                    for (size_t i = 1; i < n_items; i++)
                        if (per_item[i] != per_item[0]) one_pattern = 0;
                }
                if (!one_pattern) continue;
                constant++;
                brute_intervals(&d, &p, 0, lo, hi);
                for (int k = 0; k < ARB_M__COUNT; k++) {
                    if (is_window_metric(k)) continue;
                    assert_same(m.ci_lo[k], lo[k], k, "lo", seed);
                    assert_same(m.ci_hi[k], hi[k], k, "hi", seed);
                    if (!isnan(m.value[k])) {
                        assert_same(m.ci_lo[k], m.value[k], k, "lo = value", seed);
                        assert_same(m.ci_hi[k], m.value[k], k, "hi = value", seed);
                    }
                }
            }
    assert_true(constant >= 20);
}

/* §3.1 window series the plain way: every window summed entry by entry; Pearson of x and y. */
static double naive_series_pearson(const arb__verdict_counts *x, const arb__verdict_counts *y,
                                   size_t n, size_t window, size_t stride)
{
    static double sx[MAX_PAIRS], sy[MAX_PAIRS];
    size_t k = 0;
    for (size_t start = 0; start < n; start += stride) {
        size_t end = start + window < n ? start + window : n;
        if (end - start < window && end - start < stride) break;
        double v[2][3] = {{0, 0, 0}, {0, 0, 0}};
        for (size_t i = start; i < end; i++) {
            const arb__verdict_counts *c[2] = {&x[i], &y[i]};
            for (int s = 0; s < 2; s++) {
                v[s][0] += c[s]->a;
                v[s][1] += c[s]->b;
                v[s][2] += c[s]->c;
            }
        }
        double *out[2] = {&sx[k], &sy[k]};
        for (int s = 0; s < 2; s++) {
            double denom = v[s][0] + v[s][1] + 2.0 * v[s][2];
            *out[s] = denom > 0 ? (v[s][0] + v[s][2]) / denom : 0.5;
        }
        k++;
    }
    return arb_stat_pearson(sx, sy, k);
}

/* The window series from running counts (windows as differences of two marks, which lie at
** multiples of gcd(window, stride)) equal the plain sums window by window, for window shapes
** where the stride divides the window, does not, or exceeds it, on one-comparison designs. */
static void running_counts_equal_plain_windows(void **state)
{
    (void)state;
    static const size_t shapes[][2] = {{10, 5}, {4, 2}, {5, 2}, {3, 3}, {3, 5}, {6, 4}, {1, 1}};
    static design d;
    static arb__series_item items[MAX_PAIRS];
    static arb__verdict_counts x[MAX_PAIRS], y[MAX_PAIRS];
    size_t defined = 0;
    for (uint64_t seed = 1; seed <= 14; seed++) {
        random_design(&d, seed, 30 + 7 * seed);
        size_t n0 = 0; /* comparison 0's pairs come first */
        while (n0 < d.n && d.refs[n0].p->cmp == 0) n0++;
        arb_audit_params p = arb_audit_default_params();
        p.window = shapes[seed % 7][0];
        p.stride = shapes[seed % 7][1];
        arb_audit_metrics m;
        memset(&m, 0, sizeof m);
        assert_int_equal(arb__audit_window_metrics(d.refs, n0, &p, &m), 0);
        size_t n_items = arb__audit_series_items(d.refs, n0, items);
        double want[3];
        size_t k = 0;
        for (size_t i = 0; i < n_items; i++)
            if (items[i].both) {
                x[k] = items[i].run[0];
                y[k++] = items[i].run[1];
            }
        want[0] = naive_series_pearson(x, y, k, p.window, p.stride);
        for (int r = 0; r < 2; r++) {
            k = 0;
            for (size_t i = 0; i < n_items; i++) {
                char e = items[i].expert;
                if (!(e >= 'a' && e <= 'd') || !items[i].has[r]) continue;
                x[k] = items[i].run[r];
                memset(&y[k], 0, sizeof y[k]);
                if (e == 'a') y[k].a = 1;
                if (e == 'b') y[k].b = 1;
                if (e == 'c') y[k].c = 1;
                k++;
            }
            want[1 + r] = naive_series_pearson(x, y, k, p.window, p.stride);
        }
        const double got[3] = {m.value[ARB_M_MPCC_CONSISTENCY], m.mpcc_run[0], m.mpcc_run[1]};
        for (int s = 0; s < 3; s++) {
            if (isnan(got[s]) && isnan(want[s])) continue;
            if (isnan(got[s]) || isnan(want[s]) || got[s] != want[s])
                fail_msg("seed %llu, window %zu stride %zu, series %d: running %.17g, plain %.17g",
                         (unsigned long long)seed, p.window, p.stride, s, got[s], want[s]);
            defined++;
        }
    }
    assert_true(defined > 14 * 3 / 2);
}

/* Mean and variance over the seeds of one interval end. */
typedef struct moments {
    double sum, sum2;
    size_t n;
} moments;

static void moments_add(moments *m, double x)
{
    if (isnan(x)) return;
    m->sum += x;
    m->sum2 += x * x;
    m->n++;
}

/* Fails when the mean over seeds of the fast path's interval ends differs from the item-by-item
** bootstrap's by more than 4 standard errors (plus a rounding slack). */
static void assert_same_law(const moments *fast, const moments *items, int k, const char *what,
                            uint64_t design_seed)
{
    if (fast->n != items->n)
        fail_msg("design %llu, %s %s: defined in %zu seeds fast, %zu item by item",
                 (unsigned long long)design_seed, arb_audit_metric_key((arb_audit_metric)k), what,
                 fast->n, items->n);
    if (fast->n < 2) return;
    double n = (double)fast->n;
    double mf = fast->sum / n, mi = items->sum / n;
    double vf = (fast->sum2 - n * mf * mf) / (n - 1), vi = (items->sum2 - n * mi * mi) / (n - 1);
    double se = sqrt((vf > 0 ? vf : 0) / n + (vi > 0 ? vi : 0) / n);
    if (fabs(mf - mi) > 4.0 * se + 1e-9)
        fail_msg("design %llu, %s %s: mean over seeds fast %.6f, item by item %.6f (se %.6f)",
                 (unsigned long long)design_seed, arb_audit_metric_key((arb_audit_metric)k),
                 what, mf, mi, se);
}

/* The pattern path draws how often each item pattern comes up (one multinomial per round), not
** the items, so its intervals differ from the item-by-item bootstrap's seed by seed; they must
** have the same law. Over 60 seeds on random designs with several comparisons, tasks,
** repetitions, missing runs, E verdicts and expert labels, the mean lower end, upper end and
** width of every metric's interval agree within 4 standard errors between the two, and the
** same seeds leave the same intervals undefined. */
static void patterns_indistinguishable_from_items(void **state)
{
    (void)state;
    enum { SEEDS = 60 };
    arb_audit_params p = arb_audit_default_params();
    p.bootstrap = 200;
    p.window = 4;
    p.stride = 2;
    static design d;
    double lo_items[ARB_M__COUNT], hi_items[ARB_M__COUNT];
    size_t compared = 0;
    for (uint64_t design_seed = 1; design_seed <= 3; design_seed++) {
        random_design(&d, design_seed, 40 + 20 * design_seed);
        moments fast[3][ARB_M__COUNT], items[3][ARB_M__COUNT];
        memset(fast, 0, sizeof fast);
        memset(items, 0, sizeof items);
        for (uint64_t seed = 1; seed <= SEEDS; seed++) {
            p.seed = seed * 104729 + design_seed;
            arb_audit_metrics m;
            memset(&m, 0, sizeof m);
            assert_int_equal(arb__audit_metrics(d.refs, d.n, &p, &m), 0);
            assert_int_equal(arb__audit_bootstrap(d.refs, d.n, &p, &m), ARB_OK);
            brute_intervals(&d, &p, 0, lo_items, hi_items);
            for (int k = 0; k < ARB_M__COUNT; k++) {
                if (is_window_metric(k)) continue;
                moments_add(&fast[0][k], m.ci_lo[k]);
                moments_add(&fast[1][k], m.ci_hi[k]);
                moments_add(&fast[2][k], m.ci_hi[k] - m.ci_lo[k]);
                moments_add(&items[0][k], lo_items[k]);
                moments_add(&items[1][k], hi_items[k]);
                moments_add(&items[2][k], hi_items[k] - lo_items[k]);
            }
        }
        for (int k = 0; k < ARB_M__COUNT; k++) {
            if (is_window_metric(k)) continue;
            assert_same_law(&fast[0][k], &items[0][k], k, "lo", design_seed);
            assert_same_law(&fast[1][k], &items[1][k], k, "hi", design_seed);
            assert_same_law(&fast[2][k], &items[2][k], k, "width", design_seed);
            if (fast[2][k].n == SEEDS && fast[2][k].sum > 0) compared++;
        }
    }
    /* the designs exercise the metrics: most have proper intervals */
    assert_true(compared > 3 * (ARB_M__COUNT - 3) / 2);
}

/* Three items, two of them consistent (A,B) and one not (A,A): a round's PC is k/3 with
** k ~ Binomial(3, 2/3): P(0) = 1/27, P(1/3) = 6/27, P(2/3) = 12/27, P(1) = 8/27. The 10% and
** 90% quantiles of 2000 rounds are 1/3 and 1, the 2.5% quantile 0 (P(0) = 3.7% > 2.5%). */
static void known_multinomial(void **state)
{
    (void)state;
    static design d;
    const char v[3][2] = {{'A', 'B'}, {'B', 'A'}, {'A', 'A'}};
    d.n = 3;
    for (size_t i = 0; i < 3; i++) {
        arb__sbs_pair *p = &d.pairs[i];
        memset(p, 0, sizeof *p);
        p->item = (uint32_t)i;
        p->seq = (long long)i;
        p->p0 = v[i][0];
        p->p1 = v[i][1];
        d.refs[i].p = p;
        d.refs[i].copy = 0;
    }
    arb_audit_params p = arb_audit_default_params();
    p.bootstrap = 2000;
    p.ci_level = 0.8;
    arb_audit_metrics m;
    memset(&m, 0, sizeof m);
    assert_int_equal(arb__audit_metrics(d.refs, d.n, &p, &m), 0);
    assert_int_equal(arb__audit_bootstrap(d.refs, d.n, &p, &m), ARB_OK);
    assert_true(fabs(m.value[ARB_M_PC] - 2.0 / 3.0) < 1e-12);
    assert_true(fabs(m.ci_lo[ARB_M_PC] - 1.0 / 3.0) < 1e-12);
    assert_true(fabs(m.ci_hi[ARB_M_PC] - 1.0) < 1e-12);
    /* owr = (wins + ½ inconsistent)/n: the (A,B) item is a win, (B,A) a loss, (A,A) half */
    p.ci_level = 0.95;
    assert_int_equal(arb__audit_bootstrap(d.refs, d.n, &p, &m), ARB_OK);
    assert_true(fabs(m.ci_lo[ARB_M_PC] - 0.0) < 1e-12);
    assert_true(fabs(m.ci_hi[ARB_M_PC] - 1.0) < 1e-12);
    assert_true(fabs(m.ci_lo[ARB_M_OWR] - 0.0) < 1e-12);
    assert_true(fabs(m.ci_hi[ARB_M_OWR] - 1.0) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_multinomial),
        cmocka_unit_test(tiny_and_uniform_groups),
        cmocka_unit_test(running_counts_equal_plain_windows),
        cmocka_unit_test(blocks_equal_block_by_block),
        cmocka_unit_test(patterns_indistinguishable_from_items),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
