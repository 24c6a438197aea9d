/*
** test_audit_metrics.c -- the formulas of the audit on hand-built judgment pairs: position
** consistency, primacy/recency, preference fairness, win rate and quality gap, repetition
** stability (METHODS §5), the window series and MPCC-Consistency (§3, §3.1), agreement with
** expert labels (§4), length factors, quality-gap bins; plus properties: an always-A judge,
** exchanging the roles of candidate and baseline, and edge cases (no pairs, all E, one item).
*/
#include "internal.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define EPS 1e-12

static void assert_near(double got, double want)
{
    if (isnan(got) || fabs(got - want) > EPS) fail_msg("got %.15g, want %.15g", got, want);
}

static void assert_undefined(double got)
{
    if (!isnan(got)) fail_msg("got %.15g, want NAN", got);
}

/* Pairs written as "AB AA .E" ('.' = run missing); every pair its own item in benchmark order,
** comparison 0, repetition 0, task 0, no label, no lengths. */
typedef struct pair_set {
    arb__sbs_pair pairs[256];
    arb__pair_ref refs[256];
    size_t n;
} pair_set;

static void add_pair(pair_set *s, uint32_t item, int rep, char p0, char p1)
{
    arb__sbs_pair *p = &s->pairs[s->n];
    memset(p, 0, sizeof *p);
    p->item_id = "q";
    p->item = item;
    p->seq = item;
    p->rep = rep;
    p->p0 = p0;
    p->p1 = p1;
    for (int f = 0; f < ARB_LEN__COUNT; f++) p->len[f] = NAN;
    s->refs[s->n].p = p;
    s->refs[s->n].copy = 0;
    s->n++;
}

static void parse_pairs(pair_set *s, const char *spec)
{
    memset(s, 0, sizeof *s);
    uint32_t item = 0;
    for (const char *c = spec; *c;) {
        if (*c == ' ') {
            c++;
            continue;
        }
        add_pair(s, item++, 0, c[0] == '.' ? 0 : c[0], c[1] == '.' ? 0 : c[1]);
        c += 2;
    }
}

static arb_audit_metrics measure(const pair_set *s)
{
    arb_audit_params p = arb_audit_default_params();
    arb_audit_metrics m;
    memset(&m, 0, sizeof m);
    assert_int_equal(arb__audit_metrics(s->refs, s->n, &p, &m), 0);
    return m;
}

/* ---- §5 position consistency and fairness ------------------------------------------------- */

/* valid: AB BA CC AA AA BB AC CD (8); EB has E, .A lacks run 0.
** consistent AB BA CC -> PC 3/8. Inconsistent: AA +2, AA +2, AC +1 primacy (pcn 3), BB −2
** recency (rcn 1), CD 0 neutral. ipr 3/4, irr 1/4, PF = (1·¼ − 3·¾)/8 = −2/8.
** owr: one consistent win (AB), one consistent tie (CC), 5 inconsistent: (1 + ½·6)/8 = ½. */
static void consistency_and_fairness(void **state)
{
    (void)state;
    pair_set s;
    parse_pairs(&s, "AB BA CC AA AA BB AC CD EB .A");
    arb_audit_metrics m = measure(&s);
    assert_int_equal(m.n_valid_pairs, 8);
    assert_int_equal(m.n_consistent, 3);
    assert_int_equal(m.pcn, 3);
    assert_int_equal(m.rcn, 1);
    assert_int_equal(m.n_neutral, 1);
    assert_near(m.value[ARB_M_PC], 3.0 / 8.0);
    assert_near(m.value[ARB_M_IPR], 0.75);
    assert_near(m.value[ARB_M_IRR], 0.25);
    assert_near(m.value[ARB_M_PF], -0.25);
    assert_near(m.value[ARB_M_OWR], 0.5);
    assert_near(m.value[ARB_M_QUALITY_GAP], 0.0);
    /* 19 judgments, one E */
    assert_int_equal(m.n_judgments, 19);
    assert_near(m.value[ARB_M_ERROR_RATE], 1.0 / 19.0);
    assert_int_equal(m.n_items, 10);
}

/* A judge that always says A when the answers differ: PBias@AB = 1, PC = 0, every pair
** primacy, PF = −1; always B mirrors it: PBias −1, PF +1. */
static void always_first_and_always_second(void **state)
{
    (void)state;
    pair_set s;
    parse_pairs(&s, "AA AA AA AA AA");
    arb_audit_metrics m = measure(&s);
    assert_near(m.value[ARB_M_PBIAS_AB], 1.0);
    assert_near(m.value[ARB_M_PC], 0.0);
    assert_near(m.value[ARB_M_PF], -1.0);
    assert_near(m.value[ARB_M_IPR], 1.0);
    assert_near(m.value[ARB_M_IRR], 0.0);
    assert_near(m.value[ARB_M_OWR], 0.5); /* every pair inconsistent: a tie */

    parse_pairs(&s, "BB BB BB");
    m = measure(&s);
    assert_near(m.value[ARB_M_PBIAS_AB], -1.0);
    assert_near(m.value[ARB_M_PC], 0.0);
    assert_near(m.value[ARB_M_PF], 1.0);
    assert_int_equal(m.rcn, 3);
}

/* A consistent judge that prefers the candidate: PC 1, no lean (ipr = irr = 0 by §5, PF 0),
** owr 1, quality gap 0.5. */
static void consistent_winner(void **state)
{
    (void)state;
    pair_set s;
    parse_pairs(&s, "AB AB AB AB");
    arb_audit_metrics m = measure(&s);
    assert_near(m.value[ARB_M_PC], 1.0);
    assert_near(m.value[ARB_M_PF], 0.0);
    assert_near(m.value[ARB_M_IPR], 0.0);
    assert_near(m.value[ARB_M_IRR], 0.0);
    assert_near(m.value[ARB_M_OWR], 1.0);
    assert_near(m.value[ARB_M_QUALITY_GAP], 0.5);
    /* its one (comparison, task) unit has δq 0.5: the last bin */
    assert_int_equal(m.gap_bins[4].n_units, 1);
    assert_int_equal(m.gap_bins[4].n_pairs, 4);
    assert_near(m.gap_bins[4].pc, 1.0);
    assert_int_equal(m.gap_bins[0].n_units, 0);
    assert_undefined(m.gap_bins[0].pc);
}

/* Edge cases: no pairs at all; every judgment E; one item. */
static void edge_cases(void **state)
{
    (void)state;
    pair_set s;
    parse_pairs(&s, "");
    arb_audit_metrics m = measure(&s);
    for (int k = 0; k < ARB_M__COUNT; k++)
        if (!isnan(m.value[k])) fail_msg("%s defined on no pairs", arb_audit_metric_key(k));
    assert_int_equal(m.n_items, 0);

    parse_pairs(&s, "EE EE E.");
    m = measure(&s);
    assert_near(m.value[ARB_M_ERROR_RATE], 1.0);
    assert_undefined(m.value[ARB_M_PC]);
    assert_undefined(m.value[ARB_M_PF]);
    assert_undefined(m.value[ARB_M_IPR]);
    assert_undefined(m.value[ARB_M_OWR]);
    assert_undefined(m.value[ARB_M_QUALITY_GAP]);
    assert_near(m.value[ARB_M_CON_ABCD], 0.0); /* E equals nothing */
    assert_int_equal(m.n_valid_pairs, 0);

    parse_pairs(&s, "BA");
    m = measure(&s);
    assert_near(m.value[ARB_M_PC], 1.0);
    assert_near(m.value[ARB_M_OWR], 0.0);
    assert_near(m.value[ARB_M_QUALITY_GAP], 0.5);
    assert_undefined(m.value[ARB_M_RS]);               /* nothing repeated */
    assert_undefined(m.value[ARB_M_MPCC_CONSISTENCY]); /* one window */
    assert_undefined(m.value[ARB_M_APCC]);             /* no labels */
    assert_undefined(m.value[ARB_M_ACCURACY]);
    assert_int_equal(m.n_labelled_items, 0);
}

/* Exchanging candidate and baseline swaps the orders of every pair (run 0 now shows the old
** baseline first, which was run 1): PBias, PC and PF stay, owr becomes 1 − owr, the shares of
** a and b trade places. */
static void swapping_roles(void **state)
{
    (void)state;
    const char *spec = "AB BA CC AA BB AC CD AB AB BA DA CB";
    pair_set s, t;
    parse_pairs(&s, spec);
    parse_pairs(&t, spec);
    for (size_t i = 0; i < t.n; i++) {
        char x = t.pairs[i].p0;
        t.pairs[i].p0 = t.pairs[i].p1;
        t.pairs[i].p1 = x;
    }
    arb_audit_metrics m = measure(&s), w = measure(&t);
    assert_near(w.value[ARB_M_PBIAS_AB], m.value[ARB_M_PBIAS_AB]);
    assert_near(w.value[ARB_M_PC], m.value[ARB_M_PC]);
    assert_near(w.value[ARB_M_PF], m.value[ARB_M_PF]);
    assert_near(w.value[ARB_M_OWR], 1.0 - m.value[ARB_M_OWR]);
    assert_near(w.value[ARB_M_QUALITY_GAP], m.value[ARB_M_QUALITY_GAP]);
    assert_near(w.mean.a, m.mean.b);
    assert_near(w.mean.b, m.mean.a);
    assert_true(m.value[ARB_M_OWR] != 0.5); /* the property is not vacuous */
}

/* ---- §5 repetition stability -------------------------------------------------------------- */

/* item 0: run 0 over three repetitions A A B (2/3), run 1 B B B (1); item 1 judged once (left
** out). RS = (2/3 + 1)/2 over 2 repeated prompts. */
static void repetition_stability(void **state)
{
    (void)state;
    pair_set s;
    memset(&s, 0, sizeof s);
    add_pair(&s, 0, 0, 'A', 'B');
    add_pair(&s, 0, 1, 'A', 'B');
    add_pair(&s, 0, 2, 'B', 'B');
    add_pair(&s, 1, 0, 'C', 'C');
    arb_audit_metrics m = measure(&s);
    assert_int_equal(m.n_rep_queries, 2);
    assert_near(m.value[ARB_M_RS], (2.0 / 3.0 + 1.0) / 2.0);
    assert_int_equal(m.n_items, 2);
    assert_int_equal(m.n_pairs, 4);

    /* E counts as an option: E E A -> 2/3 */
    memset(&s, 0, sizeof s);
    add_pair(&s, 0, 0, 'E', 0);
    add_pair(&s, 0, 1, 'E', 0);
    add_pair(&s, 0, 2, 'A', 0);
    m = measure(&s);
    assert_int_equal(m.n_rep_queries, 1);
    assert_near(m.value[ARB_M_RS], 2.0 / 3.0);
}

/* ---- §3.1 window series, §3 MPCC-Consistency, §4 agreement with experts ------------------- */

/* 15 items, windows of 10 every 5: [0,10) [5,15) [10,15) (5 items: kept).
** run 0 model verdicts: items 0-4 a, 5-9 b, 10-14 a -> m = .5, .5, 1
** run 1: 0-4 a, 5-9 a, 10-14 c -> m = 1, (5+5)/(5+10) = 2/3, 5/10 = .5
** Pearson of the two series = −2/√7. The experts say what run 0 says: MPCC run 0 = 1, run 1 =
** −2/√7. APCC: run 0 counts (10,5,0,0) = experts; run 1 (10,0,5,0) vs (10,5,0,0): 43.75/68.75.
** Accuracy: run 0 15/15, run 1 5/15 -> 20/30. κ: p_o 2/3, judge a 20 b 5 c 5, experts a 20
** b 10 -> p_e = (400 + 50)/900 = 1/2, κ = 1/3. */
static void windows_and_experts(void **state)
{
    (void)state;
    pair_set s;
    memset(&s, 0, sizeof s);
    for (uint32_t i = 0; i < 15; i++) {
        char j0 = i < 5 ? 'a' : i < 10 ? 'b' : 'a';
        char j1 = i < 10 ? 'a' : 'c';
        /* run 0 shows the candidate first: a = A; run 1 shows it second: a = B */
        char p0 = j0 == 'a' ? 'A' : 'B';
        char p1 = j1 == 'a' ? 'B' : 'C';
        add_pair(&s, i, 0, p0, p1);
        s.pairs[s.n - 1].expert = j0;
    }
    arb_audit_metrics m = measure(&s);
    const double r = -2.0 / sqrt(7.0);
    if (fabs(m.value[ARB_M_MPCC_CONSISTENCY] - r) > 1e-9)
        fail_msg("MPCC-Consistency %.15g, want %.15g", m.value[ARB_M_MPCC_CONSISTENCY], r);
    assert_true(fabs(m.mpcc_run[0] - 1.0) < 1e-9);
    assert_true(fabs(m.mpcc_run[1] - r) < 1e-9);
    assert_true(fabs(m.value[ARB_M_MPCC] - (1.0 + r) / 2.0) < 1e-9);
    assert_true(fabs(m.value[ARB_M_MPCC_DELTA] - (1.0 - r)) < 1e-9);
    assert_true(fabs(m.apcc_run[0] - 1.0) < 1e-9);
    assert_true(fabs(m.apcc_run[1] - 43.75 / 68.75) < 1e-9);
    assert_true(fabs(m.value[ARB_M_APCC] - (1.0 + 43.75 / 68.75) / 2.0) < 1e-9);
    assert_near(m.value[ARB_M_ACCURACY], 20.0 / 30.0);
    assert_true(fabs(m.value[ARB_M_COHEN_KAPPA] - 1.0 / 3.0) < 1e-9);
    assert_int_equal(m.n_labelled_items, 15);
    assert_int_equal(m.n_labelled_judgments, 30);
    assert_int_equal(m.confusion[0][0], 15); /* judge a, experts a */
    assert_int_equal(m.confusion[0][1], 5);  /* judge a, experts b */
    assert_int_equal(m.confusion[1][1], 5);
    assert_int_equal(m.confusion[2][0], 5);  /* judge c, experts a */
    assert_int_equal(m.confusion[4][0], 0);
    /* the windows behind the series: 3, the last [10,15) short and kept, in every series */
    assert_int_equal(m.windows.n_windows, 3);
    assert_int_equal(m.windows.n_series, 1);
    assert_int_equal(m.windows.n_short_kept, 1);
    for (int run = 0; run < 2; run++) {
        assert_int_equal(m.mpcc_windows[run].n_windows, 3);
        assert_int_equal(m.mpcc_windows[run].n_short_kept, 1);
    }
    /* accuracy per run: 15/15 and 5/15, Accuracy-Δ = 2/3 */
    assert_near(m.accuracy_run[0], 1.0);
    assert_near(m.accuracy_run[1], 1.0 / 3.0);
    assert_near(m.value[ARB_M_ACCURACY_DELTA], 2.0 / 3.0);
    assert_int_equal(m.apcc_n_dropped, 0);
}

/* How many windows a series has and whether its last one is short (§3.1), n items of a
** consistent judge labelled by experts, window 10 stride 5 unless given:
** 3 items: none (3 < 5); 7: [0,7) short; 10: [0,10) [5,10) short; 12: [0,10) [5,12), [10,12)
** dropped; window = stride = 5 and 10 items: [0,5) [5,10), none short. */
static void window_counts(void **state)
{
    (void)state;
    static const struct {
        size_t items, window, stride, n_windows;
        int short_kept;
    } cases[] = {{3, 10, 5, 0, 0}, {7, 10, 5, 1, 1}, {10, 10, 5, 2, 1}, {12, 10, 5, 2, 1},
                 {10, 5, 5, 2, 0}, {0, 10, 5, 0, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        pair_set s;
        memset(&s, 0, sizeof s);
        for (uint32_t i = 0; i < cases[c].items; i++) {
            add_pair(&s, i, 0, 'A', 'B');
            s.pairs[s.n - 1].expert = 'a';
        }
        arb_audit_params p = arb_audit_default_params();
        p.window = cases[c].window;
        p.stride = cases[c].stride;
        arb_audit_metrics m;
        memset(&m, 0, sizeof m);
        assert_int_equal(arb__audit_metrics(s.refs, s.n, &p, &m), 0);
        const arb_window_info *all[3] = {&m.windows, &m.mpcc_windows[0], &m.mpcc_windows[1]};
        for (int k = 0; k < 3; k++) {
            if (all[k]->n_windows != cases[c].n_windows ||
                all[k]->n_series != (cases[c].n_windows > 0) ||
                all[k]->n_short_kept != (size_t)cases[c].short_kept)
                fail_msg("case %zu series %d: %zu windows in %zu series, %zu short", c, k,
                         all[k]->n_windows, all[k]->n_series, all[k]->n_short_kept);
        }
    }
}

/* APCC compares like with like (§4): a judgment E leaves its item out of the experts' vector
** too. Experts a a b c on items 0-3. Run 0 judge a E b c: (1,1,1,0) vs (1,1,1,0) once item 1 is
** out -> 1 (with it, (1,1,1,0) vs (2,1,1,0) = 0.816). Run 1 judge a b b E: (1,2,0,0) vs (2,1,0,0)
** once item 3 is out -> cov 1.75 / var 2.75 = 7/11. APCC = 9/11, 2 judgments dropped.
** Accuracy (E wrong): run 0 3/4, run 1 2/4, pooled 5/8, Accuracy-Δ 1/4. */
static void apcc_like_with_like(void **state)
{
    (void)state;
    pair_set s;
    /* position verdicts: run 0 a = A, b = B, c = C; run 1 a = B, b = A */
    parse_pairs(&s, "AB EA BA CE");
    const char experts[] = "aabc";
    for (size_t i = 0; i < s.n; i++) s.pairs[i].expert = experts[i];
    arb_audit_metrics m = measure(&s);
    assert_int_equal(m.apcc_n_dropped, 2);
    assert_near(m.apcc_run[0], 1.0);
    assert_true(fabs(m.apcc_run[1] - 7.0 / 11.0) < 1e-12);
    assert_true(fabs(m.value[ARB_M_APCC] - 9.0 / 11.0) < 1e-12);
    assert_near(m.accuracy_run[0], 0.75);
    assert_near(m.accuracy_run[1], 0.5);
    assert_near(m.value[ARB_M_ACCURACY], 5.0 / 8.0);
    assert_near(m.value[ARB_M_ACCURACY_DELTA], 0.25);
    /* E in both runs of every labelled item: nothing left, APCC undefined, not 0 */
    parse_pairs(&s, "EE EE");
    s.pairs[0].expert = 'a';
    s.pairs[1].expert = 'b';
    m = measure(&s);
    assert_int_equal(m.apcc_n_dropped, 4);
    assert_undefined(m.value[ARB_M_APCC]);
    assert_near(m.accuracy_run[0], 0.0);
    assert_near(m.value[ARB_M_ACCURACY_DELTA], 0.0);
    /* no labels: per-run accuracy and Δ undefined */
    parse_pairs(&s, "AB");
    m = measure(&s);
    assert_undefined(m.accuracy_run[0]);
    assert_undefined(m.accuracy_run[1]);
    assert_undefined(m.value[ARB_M_ACCURACY_DELTA]);
}

/* PC and PF per (comparison, task) unit, mean ± sample sd (§5, as the position-bias study prints
** a judge's figures). Units: cmp 0 task 0 "AB AA" PC 1/2, PF (0 − 1·1)/2 = −1/2; cmp 0 task 1
** "AB BA" PC 1, PF 0; cmp 1 task 0 "BB" PC 0, PF (1·1)/1 = 1; cmp 1 task 1 "EE" no valid pair,
** left out. PC: mean 1/2, sd √((0 + 1/4 + 1/4)/2) = 1/2. PF: mean 1/6, sd √((4/9 + 1/36 +
** 25/36)/2) = √(7/12). Pooled PC 3/5. */
static void unit_mean_and_sd(void **state)
{
    (void)state;
    pair_set s;
    parse_pairs(&s, "AB AA AB BA BB EE");
    const uint32_t cmp[] = {0, 0, 0, 0, 1, 1}, task[] = {0, 0, 1, 1, 0, 1};
    for (size_t i = 0; i < s.n; i++) {
        s.pairs[i].cmp = cmp[i];
        s.pairs[i].task = task[i];
    }
    arb_audit_metrics m = measure(&s);
    assert_int_equal(m.n_units, 3);
    assert_near(m.value[ARB_M_PC], 0.6);
    assert_near(m.value[ARB_M_PC_UNIT_MEAN], 0.5);
    assert_near(m.value[ARB_M_PC_UNIT_SD], 0.5);
    assert_true(fabs(m.value[ARB_M_PF_UNIT_MEAN] - 1.0 / 6.0) < 1e-12);
    assert_true(fabs(m.value[ARB_M_PF_UNIT_SD] - sqrt(7.0 / 12.0)) < 1e-12);
    /* one unit: a mean, no sd */
    parse_pairs(&s, "AB AA");
    m = measure(&s);
    assert_int_equal(m.n_units, 1);
    assert_near(m.value[ARB_M_PC_UNIT_MEAN], 0.5);
    assert_undefined(m.value[ARB_M_PC_UNIT_SD]);
    assert_near(m.value[ARB_M_PF_UNIT_MEAN], -0.5);
    assert_undefined(m.value[ARB_M_PF_UNIT_SD]);
    /* no valid pair: nothing */
    parse_pairs(&s, "EE A.");
    m = measure(&s);
    assert_int_equal(m.n_units, 0);
    assert_undefined(m.value[ARB_M_PC_UNIT_MEAN]);
    assert_undefined(m.value[ARB_M_PF_UNIT_MEAN]);
}

/* Window boundaries (§3.1): 12 items give windows [0,10) and [5,12); [10,12) has 2 < 5 items
** and is dropped. With a constant judge both series are constant: Pearson undefined (zero
** variance), never 0. Annotator ties are counted and skipped. */
static void windows_edge(void **state)
{
    (void)state;
    pair_set s;
    memset(&s, 0, sizeof s);
    for (uint32_t i = 0; i < 12; i++) {
        add_pair(&s, i, 0, 'A', 'B');
        s.pairs[s.n - 1].expert = i < 2 ? 'T' : 'a';
    }
    arb_audit_metrics m = measure(&s);
    assert_undefined(m.value[ARB_M_MPCC_CONSISTENCY]);
    assert_undefined(m.value[ARB_M_MPCC]);
    assert_undefined(m.value[ARB_M_MPCC_DELTA]);
    assert_int_equal(m.n_label_ties, 2);
    assert_int_equal(m.n_labelled_items, 10);
    assert_near(m.value[ARB_M_ACCURACY], 1.0);
    /* all judgments and all labels a: 1 − p_e = 0, κ undefined */
    assert_undefined(m.value[ARB_M_COHEN_KAPPA]);
    /* APCC of (20,0,0,0) with itself: Pearson of two identical non-constant vectors = 1 */
    assert_near(m.value[ARB_M_APCC], 1.0);
}

/* ---- §5 lengths --------------------------------------------------------------------------- */

/* Longer candidate answers go with inconsistent, primacy-leaning pairs here:
** lengths 10 20 30 40 with pairs AB AB AA AA: consistency 1 1 0 0 -> r = −2/√5·… computed:
** x = 10..40, y = 1 1 0 0: r = −0.894427190999916; lean −1 for AA: y' = 0 0 −1 −1, same r. */
static void length_factors(void **state)
{
    (void)state;
    pair_set s;
    parse_pairs(&s, "AB AB AA AA EE");
    for (size_t i = 0; i < s.n; i++) {
        s.pairs[i].len[ARB_LEN_CANDIDATE] = 10.0 * (double)(i + 1);
        s.pairs[i].len[ARB_LEN_QUESTION] = 7;
    }
    arb_audit_metrics m = measure(&s);
    assert_near(m.length[ARB_LEN_CANDIDATE].mean, 25.0); /* valid pairs only: EE left out */
    assert_true(fabs(m.length[ARB_LEN_CANDIDATE].r_pc - -0.894427190999916) < 1e-9);
    assert_true(fabs(m.length[ARB_LEN_CANDIDATE].r_pf - -0.894427190999916) < 1e-9);
    assert_near(m.length[ARB_LEN_QUESTION].mean, 7.0);
    assert_undefined(m.length[ARB_LEN_QUESTION].r_pc); /* zero variance */
    assert_undefined(m.length[ARB_LEN_PROMPT].mean);    /* unknown */
}

/* Quality-gap bins: two tasks of one comparison, one with δq 0 (AA: owr ½), one with δq 0.5
** (AB AB: owr 1). */
static void gap_bins_by_task(void **state)
{
    (void)state;
    pair_set s;
    parse_pairs(&s, "AA AB AB");
    s.pairs[1].task = 1;
    s.pairs[2].task = 1;
    arb_audit_metrics m = measure(&s);
    assert_int_equal(m.gap_bins[0].n_units, 1);
    assert_int_equal(m.gap_bins[0].n_pairs, 1);
    assert_near(m.gap_bins[0].pc, 0.0);
    assert_near(m.gap_bins[0].pf, -1.0);
    assert_int_equal(m.gap_bins[4].n_units, 1);
    assert_near(m.gap_bins[4].pc, 1.0);
    assert_near(m.gap_bins[4].pf, 0.0);
    assert_near(m.gap_bins[2].lo, 0.2);
    assert_near(m.gap_bins[2].hi, 0.3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(consistency_and_fairness),
        cmocka_unit_test(always_first_and_always_second),
        cmocka_unit_test(consistent_winner),
        cmocka_unit_test(edge_cases),
        cmocka_unit_test(swapping_roles),
        cmocka_unit_test(repetition_stability),
        cmocka_unit_test(windows_and_experts),
        cmocka_unit_test(windows_edge),
        cmocka_unit_test(window_counts),
        cmocka_unit_test(apcc_like_with_like),
        cmocka_unit_test(unit_mean_and_sd),
        cmocka_unit_test(length_factors),
        cmocka_unit_test(gap_bins_by_task),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
