/*
** test_audit_bootstrap.c -- the audit's bootstrap intervals (audit_bootstrap.c): the pattern
** path gives exactly the intervals of resampling items one by one and recomputing every metric
** (same seed, same draws), on random designs with several comparisons, tasks, repetitions,
** missing runs, E verdicts and expert labels; the block path gives those of laying the drawn
** blocks end to end and sorting; and a hand-computed case with a known multinomial law.
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

/* Over many random designs and seeds, every interval of the pattern path (and of the block path)
** equals the brute-force one. */
static void fast_equals_item_by_item(void **state)
{
    (void)state;
    arb_audit_params p = arb_audit_default_params();
    p.bootstrap = 200;
    p.window = 4;
    p.stride = 2;
    static design d;
    double lo_items[ARB_M__COUNT], hi_items[ARB_M__COUNT];
    double lo_blocks[ARB_M__COUNT], hi_blocks[ARB_M__COUNT];
    size_t defined = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        random_design(&d, seed, 20 + 5 * seed);
        p.seed = seed * 7919;
        p.ci_level = seed % 2 ? 0.95 : 0.8;
        arb_audit_metrics m;
        memset(&m, 0, sizeof m);
        assert_int_equal(arb__audit_metrics(d.refs, d.n, &p, &m), 0);
        assert_int_equal(arb__audit_bootstrap(d.refs, d.n, &p, &m), ARB_OK);
        brute_intervals(&d, &p, 0, lo_items, hi_items);
        brute_intervals(&d, &p, 1, lo_blocks, hi_blocks);
        for (int k = 0; k < ARB_M__COUNT; k++) {
            const double *lo = is_window_metric(k) ? lo_blocks : lo_items;
            const double *hi = is_window_metric(k) ? hi_blocks : hi_items;
            assert_same(m.ci_lo[k], lo[k], k, "lo", seed);
            assert_same(m.ci_hi[k], hi[k], k, "hi", seed);
            if (!isnan(lo[k]) && lo[k] < hi[k]) defined++;
        }
    }
    /* the designs exercise the metrics: most intervals are proper ones */
    assert_true(defined > 12 * ARB_M__COUNT / 2);
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
        cmocka_unit_test(fast_equals_item_by_item),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
