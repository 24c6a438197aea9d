/*
** audit_metrics.c -- the formulas of the judge audit on one group of side-by-side judgment
** pairs: verdict shares (METHODS §2.2), PBias@AB, Con@ABCD, PCon@AB and the window series
** (§3, §3.1), agreement with expert labels (§4), repetition stability, position consistency,
** preference fairness, win rate, quality gap and length factors (§5).
**
** Invariants: a metric with a zero denominator is NAN, never a guess; E (no valid verdict) never
** equals anything; every function here is pure (no store, no globals), so the bootstrap can call
** it on resampled groups.
**
** Not here: reading the store and forming groups (audit.c), rendering (audit_render.c).
*/
#include "internal.h"

#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- verdict shares and the §3 metrics of a list of pairs --------------------------------- */

static arb_verdict_shares shares_of(const size_t counts[5], size_t total)
{
    arb_verdict_shares s;
    if (total == 0) {
        s.a = s.b = s.c = s.d = s.e = NAN;
        return s;
    }
    s.a = (double)counts[0] / (double)total;
    s.b = (double)counts[1] / (double)total;
    s.c = (double)counts[2] / (double)total;
    s.d = (double)counts[3] / (double)total;
    s.e = (double)counts[4] / (double)total;
    return s;
}

/* Mean of the two runs' shares (§2.2: "averaged over the two runs"); a run without judgments
** (all NAN) does not pull the mean to NAN, the other run stands alone. */
static double mean_share(double x0, double x1)
{
    if (isnan(x0)) return x1;
    if (isnan(x1)) return x0;
    return (x0 + x1) / 2.0;
}

/* Index 0..4 of a model verdict a..e. */
static int verdict_index(char model_verdict)
{
    return (model_verdict >= 'a' && model_verdict <= 'd') ? model_verdict - 'a' : 4;
}

typedef arb__sbs_tally sbs_tally;

static void sbs_tally_add(sbs_tally *t, char p0, char p1)
{
    char p[2] = {p0, p1};
    char j[2] = {0, 0};
    for (int r = 0; r < 2; r++) {
        if (p[r] == 0) continue;
        j[r] = arb_verdict_to_model(p[r], r); /* §2.2 */
        t->counts[r][verdict_index(j[r])]++;
        t->present[r]++;
        if (j[r] == 'e') t->n_errors++;
    }
    if (p[0] == 0 || p[1] == 0) return;
    t->bm++;
    for (int r = 0; r < 2; r++) {
        if (p[r] == 'A') t->first[r]++;
        if (p[r] == 'A' || p[r] == 'B') t->ab[r]++;
    }
    /* §3 Con@ABCD: E never equals anything, not even another E. */
    if (j[0] == j[1] && j[0] != 'e') t->same++;
    /* §3 PCon@AB */
    int ab0 = j[0] == 'a' || j[0] == 'b';
    int ab1 = j[1] == 'a' || j[1] == 'b';
    if (ab0 || ab1) t->either_ab++;
    if (ab0 && j[0] == j[1]) t->same_ab++;
}

/* PBias@AB, Con@ABCD, PCon@AB and the error rate of a tally into value[] (ARB_M_ ids). */
static void sbs_values(const sbs_tally *t, double *value)
{
    /* §3 PBias@AB = Σ_r #(P_r = A)/#(P_r ∈ {A,B}) − 1. Departure from the letter of §3, which
    ** counts each run over all its judgments: we count over BM, so both runs cover the same
    ** items and a run with extra items cannot fake a bias. */
    if (t->ab[0] == 0 || t->ab[1] == 0)
        value[ARB_M_PBIAS_AB] = NAN;
    else
        value[ARB_M_PBIAS_AB] = (double)t->first[0] / (double)t->ab[0] +
                                (double)t->first[1] / (double)t->ab[1] - 1.0;
    /* §3 Con@ABCD = #(J0 = J1) / |BM| */
    value[ARB_M_CON_ABCD] = t->bm ? (double)t->same / (double)t->bm : NAN;
    /* §3 PCon@AB = #(J0 = J1 ∈ {a,b}) / #(J0 ∈ {a,b} or J1 ∈ {a,b}) */
    value[ARB_M_PCON_AB] = t->either_ab ? (double)t->same_ab / (double)t->either_ab : NAN;
    /* §5 error rate = #E / all judgments (both runs, with or without their partner) */
    size_t judgments = t->present[0] + t->present[1];
    value[ARB_M_ERROR_RATE] = judgments ? (double)t->n_errors / (double)judgments : NAN;
}

/* Fills every field of out except n_items, which only the caller can know (pairs do not carry
** item ids). pairs is borrowed. */
void arb_sbs_metrics_compute(const arb_sbs_pair *pairs, size_t n, arb_sbs_metrics *out)
{
    sbs_tally t;
    memset(&t, 0, sizeof t);
    for (size_t i = 0; i < n; i++) sbs_tally_add(&t, pairs[i].p0, pairs[i].p1);
    double value[ARB_M__COUNT];
    sbs_values(&t, value);

    out->n_pairs = t.bm;
    out->n_judgments = t.present[0] + t.present[1];
    out->run0 = shares_of(t.counts[0], t.present[0]);
    out->run1 = shares_of(t.counts[1], t.present[1]);
    out->mean.a = mean_share(out->run0.a, out->run1.a);
    out->mean.b = mean_share(out->run0.b, out->run1.b);
    out->mean.c = mean_share(out->run0.c, out->run1.c);
    out->mean.d = mean_share(out->run0.d, out->run1.d);
    out->mean.e = mean_share(out->run0.e, out->run1.e);
    out->pbias_ab = value[ARB_M_PBIAS_AB];
    out->con_abcd = value[ARB_M_CON_ABCD];
    out->pcon_ab = value[ARB_M_PCON_AB];
    out->error_rate = value[ARB_M_ERROR_RATE];
}

/* ---- §5 on one pair ----------------------------------------------------------------------- */

/* A pair is valid for §5 when it has both runs and neither is E. */
static int pair_valid(const arb__sbs_pair *p)
{
    return p->p0 && p->p1 && p->p0 != 'E' && p->p1 != 'E';
}

/* §5 consistent position verdicts: (A,B), (B,A), (C,C), (D,D). */
static int pair_consistent(const arb__sbs_pair *p)
{
    return (p->p0 == 'A' && p->p1 == 'B') || (p->p0 == 'B' && p->p1 == 'A') ||
           (p->p0 == 'C' && p->p1 == 'C') || (p->p0 == 'D' && p->p1 == 'D');
}

/* §5 lean of a pair: +1 for A, −1 for B, 0 for C or D, summed over the two orders. */
static int pair_lean(const arb__sbs_pair *p)
{
    int v = 0;
    v += p->p0 == 'A' ? 1 : p->p0 == 'B' ? -1 : 0;
    v += p->p1 == 'A' ? 1 : p->p1 == 'B' ? -1 : 0;
    return v;
}

typedef arb__pair_tally pair_tally;

/* Adds pair p to the §5 tally t. */
void arb__audit_pair_tally_add(pair_tally *t, const arb__sbs_pair *p)
{
    if (!pair_valid(p)) return;
    t->valid++;
    if (pair_consistent(p)) {
        t->consistent++;
        if (p->p0 == 'A') t->wins++;      /* (A,B): the candidate both times */
        else if (p->p0 != 'B') t->ties++; /* (C,C) or (D,D) */
        return;
    }
    int lean = pair_lean(p);
    if (lean > 0) t->pcn++;
    else if (lean < 0) t->rcn++;
    else t->neutral++;
}

static double tally_pc(const pair_tally *t)
{
    return t->valid ? (double)t->consistent / (double)t->valid : NAN;
}

/* §5 PF = (rcn·irr − pcn·ipr) / n over the n valid pairs. */
static double tally_pf(const pair_tally *t)
{
    if (!t->valid) return NAN;
    size_t leaning = t->pcn + t->rcn;
    if (leaning == 0) return 0.0; /* ipr = irr = 0 by §5 */
    double ipr = (double)t->pcn / (double)leaning, irr = (double)t->rcn / (double)leaning;
    return ((double)t->rcn * irr - (double)t->pcn * ipr) / (double)t->valid;
}

/* §5 owr = (C_w + ½(C_t + C_I)) / n. Departure: n counts the valid pairs only; a pair with E
** has no direction to count, and §5 excludes such pairs from PC in the same way. */
static double tally_owr(const pair_tally *t)
{
    if (!t->valid) return NAN;
    size_t inconsistent = t->valid - t->consistent;
    return ((double)t->wins + 0.5 * (double)(t->ties + inconsistent)) / (double)t->valid;
}

/* Adds `times` times src to dst. */
void arb__audit_pair_tally_add_times(pair_tally *dst, const pair_tally *src, size_t times)
{
    dst->valid += times * src->valid;
    dst->consistent += times * src->consistent;
    dst->pcn += times * src->pcn;
    dst->rcn += times * src->rcn;
    dst->neutral += times * src->neutral;
    dst->wins += times * src->wins;
    dst->ties += times * src->ties;
}

/* ---- §3.1 window series ------------------------------------------------------------------- */

typedef arb__verdict_counts item_counts;

static void count_model_verdict(item_counts *ic, char model_verdict)
{
    if (model_verdict == 'a') ic->a += 1;
    else if (model_verdict == 'b') ic->b += 1;
    else if (model_verdict == 'c') ic->c += 1;
}

static size_t gcd_size(size_t a, size_t b)
{
    while (b) {
        size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* §3.1 value of one window whose counts a, b, c are hi[0..3) - lo[0..3). The counts are
** integers, so these doubles are exactly the sums of the window's items. */
static double window_value(const uint64_t *lo, const uint64_t *hi)
{
    double a = (double)(hi[0] - lo[0]), b = (double)(hi[1] - lo[1]), c = (double)(hi[2] - lo[2]);
    double denom = a + b + 2.0 * c;
    return denom > 0 ? (a + c) / denom : 0.5; /* §3.1 */
}

/* Pearson of the x and y window series of one series (§3.1) laid from pieces (see
** arb__audit_series_metrics): windows of `window` entries starting every `stride` entries; a
** window cut short by the end is kept only when it has at least `stride` entries (§3.1 says 5
** for its window 10 and stride 5; with those it is always kept once there are 5 entries). A
** window's counts are the difference of the running counts at its ends, and windows start and
** end at multiples of g = gcd(window, stride) or at the end, so a round records the running
** counts only there: O(pieces + entries / g), not O(entries x window / stride). The windows are
** added to *info. NAN when too short; -2 (not a correlation) when out of memory. */
static double series_pearson(const arb__series_piece *table, size_t table_stride,
                             const size_t *draws, size_t n_draws, const arb_audit_params *p,
                             arb__series_work *w, arb_window_info *info)
{
    size_t window = p->window, stride = p->stride, n = 0;
    if (window == 0 || stride == 0) return NAN;
    for (size_t i = 0; i < n_draws; i++) n += table[draws[i] * table_stride].n;
    size_t g = gcd_size(window, stride);
    if (n / g + 1 > w->cap_marks) {
        size_t cap = w->cap_marks;
        if (arb__grow(&w->marks, &cap, n / g + 1, sizeof *w->marks)) return -2;
        w->cap_marks = cap;
    }
    if (n / stride + 1 > w->cap_windows) {
        size_t cap = w->cap_windows;
        if (arb__grow(&w->sx, &cap, n / stride + 1, sizeof *w->sx)) return -2;
        cap = w->cap_windows;
        if (arb__grow(&w->sy, &cap, n / stride + 1, sizeof *w->sy)) return -2;
        w->cap_windows = cap;
    }
    uint64_t total[6] = {0, 0, 0, 0, 0, 0};
    size_t pos = 0, next = 0; /* next mark: entry next * g */
    for (size_t i = 0; i < n_draws; i++) {
        const arb__series_piece *pc = &table[draws[i] * table_stride];
        /* the drawn blocks lie anywhere in memory: ask for a later draw's counts early */
        if (i + 8 < n_draws) {
            const arb__series_piece *ahead = &table[draws[i + 8] * table_stride];
            if (ahead->n) __builtin_prefetch(ahead->cum);
            if (i + 16 < n_draws) __builtin_prefetch(&table[draws[i + 16] * table_stride]);
        }
        for (; next * g < pos + pc->n; next++) {
            size_t off = next * g - pos; /* entries of this piece before the mark */
            uint64_t *mk = w->marks[next];
            if (off == 0) {
                memcpy(mk, total, sizeof total);
                continue;
            }
            const arb__series_cum *c = &pc->cum[off - 1];
            for (int k = 0; k < 3; k++) {
                mk[k] = total[k] + c->x[k];
                mk[3 + k] = total[3 + k] + c->y[k];
            }
        }
        if (pc->n) {
            const arb__series_cum *c = &pc->cum[pc->n - 1];
            for (int k = 0; k < 3; k++) {
                total[k] += c->x[k];
                total[3 + k] += c->y[k];
            }
        }
        pos += pc->n;
    }
    size_t k = 0;
    int short_kept = 0;
    for (size_t start = 0; start < n; start += stride) {
        size_t end = start + window < n ? start + window : n;
        if (end - start < window && end - start < stride) break;
        short_kept = end - start < window;
        const uint64_t *lo = w->marks[start / g], *hi = end == n ? total : w->marks[end / g];
        w->sx[k] = window_value(lo, hi);
        w->sy[k++] = window_value(lo + 3, hi + 3);
    }
    info->n_windows += k;
    if (k) info->n_series++;
    if (short_kept) info->n_short_kept++;
    return arb_stat_pearson(w->sx, w->sy, k);
}

/* Mean of the defined values among n; NAN when none is. */
static double mean_defined(const double *v, size_t n)
{
    double sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(v[i])) {
            sum += v[i];
            k++;
        }
    return k ? sum / (double)k : NAN;
}

/* Walks refs[0..n) of one comparison in series order and writes one entry per (item, copy): a
** bootstrap copy of an item is a separate item of the series. Returns the number of entries
** (at most n). */
size_t arb__audit_series_items(const arb__pair_ref *refs, size_t n, arb__series_item *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; k++) {
        size_t j = i;
        arb__series_item *it = &out[k];
        memset(it, 0, sizeof *it);
        it->expert = refs[i].p->expert;
        while (j < n && refs[j].p->item == refs[i].p->item && refs[j].copy == refs[i].copy) {
            const arb__sbs_pair *q = refs[j].p;
            if (q->p0) {
                count_model_verdict(&it->run[0], arb_verdict_to_model(q->p0, 0));
                it->has[0] = 1;
            }
            if (q->p1) {
                count_model_verdict(&it->run[1], arb_verdict_to_model(q->p1, 1));
                it->has[1] = 1;
            }
            if (q->p0 && q->p1) it->both = 1;
            j++;
        }
        i = j;
    }
    return k;
}

/* Appends one entry, x and y counts, to a series whose running counts are sum. */
static void series_append(arb__series_cum *out, size_t *len, arb__series_cum *sum,
                          const item_counts *x, const item_counts *y)
{
    sum->x[0] += (uint32_t)x->a;
    sum->x[1] += (uint32_t)x->b;
    sum->x[2] += (uint32_t)x->c;
    sum->y[0] += (uint32_t)y->a;
    sum->y[1] += (uint32_t)y->b;
    sum->y[2] += (uint32_t)y->c;
    out[(*len)++] = *sum;
}

/* See internal.h. MPCC-Consistency walks the items that have both runs (BM); MPCC per run the
** items with an expert majority label and that run, against a one-hot count of the label. */
void arb__audit_series_cumulate(const arb__series_item *items, size_t n,
                                arb__series_cum *const out[ARB__N_SERIES],
                                arb__series_piece pieces[ARB__N_SERIES])
{
    arb__series_cum sum[ARB__N_SERIES];
    size_t len[ARB__N_SERIES] = {0, 0, 0};
    memset(sum, 0, sizeof sum);
    for (size_t i = 0; i < n; i++) {
        const arb__series_item *it = &items[i];
        if (it->both) series_append(out[0], &len[0], &sum[0], &it->run[0], &it->run[1]);
        char e = it->expert;
        if (!(e >= 'a' && e <= 'd')) continue;
        item_counts label = {0, 0, 0};
        count_model_verdict(&label, e);
        for (int r = 0; r < 2; r++)
            if (it->has[r]) series_append(out[1 + r], &len[1 + r], &sum[1 + r], &it->run[r], &label);
    }
    for (int s = 0; s < ARB__N_SERIES; s++) {
        pieces[s].cum = out[s];
        pieces[s].n = len[s];
    }
}

/* Frees the work space's arrays. */
void arb__series_work_free(arb__series_work *w)
{
    free(w->marks);
    free(w->sx);
    free(w->sy);
    memset(w, 0, sizeof *w);
}

/* See internal.h: MPCC-Consistency (§3) into out[0], MPCC of run 0 and run 1 (§4) into out[1],
** out[2]. */
int arb__audit_series_metrics(const arb__series_piece *table, size_t table_stride,
                              const size_t *draws, size_t n_draws, const arb_audit_params *p,
                              arb__series_work *w, double out[3], arb_audit_metrics *m)
{
    arb_window_info *info[ARB__N_SERIES] = {&m->windows, &m->mpcc_windows[0],
                                            &m->mpcc_windows[1]};
    for (int s = 0; s < ARB__N_SERIES; s++) {
        out[s] = series_pearson(table + s, table_stride, draws, n_draws, p, w, info[s]);
        if (out[s] == -2) return -1;
    }
    return 0;
}

/* Sets the window-series figures of m from per_cmp[0..n_cmp) (arb__audit_series_metrics' out
** of each comparison): a pooled row averages one series per comparison. */
void arb__audit_window_values(const double (*per_cmp)[3], size_t n_cmp, double *scratch,
                              arb_audit_metrics *m)
{
    double *col[3] = {scratch, scratch + n_cmp, scratch + 2 * n_cmp};
    for (size_t c = 0; c < n_cmp; c++)
        for (int k = 0; k < 3; k++) col[k][c] = per_cmp[c][k];
    m->value[ARB_M_MPCC_CONSISTENCY] = mean_defined(col[0], n_cmp);
    m->mpcc_run[0] = mean_defined(col[1], n_cmp);
    m->mpcc_run[1] = mean_defined(col[2], n_cmp);
    m->value[ARB_M_MPCC] = mean_defined(m->mpcc_run, 2);
    /* §3 MPCC-Δ needs both runs */
    m->value[ARB_M_MPCC_DELTA] = fabs(m->mpcc_run[0] - m->mpcc_run[1]);
}

/* ---- the whole group ---------------------------------------------------------------------- */

typedef struct unit_gap {
    uint32_t cmp, task;
    const arb__sbs_pair *p;
} unit_gap;

static int cmp_unit_gap(const void *x, const void *y)
{
    const unit_gap *a = x, *b = y;
    if (a->cmp != b->cmp) return a->cmp < b->cmp ? -1 : 1;
    return (a->task > b->task) - (a->task < b->task);
}

/* Mean and sample standard deviation (n − 1) of v[0..k) into m's value[mean_id], value[sd_id];
** NAN where undefined (no unit; one unit for the sd). */
static void unit_mean_sd(const double *v, size_t k, double *value, arb_audit_metric mean_id,
                         arb_audit_metric sd_id)
{
    double mean = k ? gsl_stats_mean(v, 1, k) : NAN;
    value[mean_id] = mean;
    value[sd_id] = k >= 2 ? gsl_stats_sd_m(v, 1, k, mean) : NAN;
}

/* Sets the unit figures of value[] from units[0..n) in (comparison, task) order; scratch holds
** 2n doubles. Returns the number of units with valid pairs (what the figures average). */
size_t arb__audit_unit_values(const pair_tally *units, size_t n, double *scratch, double *value)
{
    double *unit_pc = scratch, *unit_pf = scratch + n;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!units[i].valid) continue;
        unit_pc[k] = tally_pc(&units[i]);
        unit_pf[k] = tally_pf(&units[i]);
        k++;
    }
    unit_mean_sd(unit_pc, k, value, ARB_M_PC_UNIT_MEAN, ARB_M_PC_UNIT_SD);
    unit_mean_sd(unit_pf, k, value, ARB_M_PF_UNIT_MEAN, ARB_M_PF_UNIT_SD);
    return k;
}

/* The group's (comparison, task) units (§5), each measured on its own pairs:
** - PC and PF per quality-gap bin: a unit gets its own δq and goes into the bin of that δq;
** - the mean ± sd of PC and of PF over the units with valid pairs, as the position-bias study
**   prints a judge's figures beside the pooled ones. Its unit is (candidate, task) with one
**   baseline, template and option mode; ours is the comparison's, which is the same there and
**   never mixes set-ups elsewhere.
** Returns 0, -1 when out of memory. */
static int unit_figures(const arb__pair_ref *refs, size_t n, arb_audit_metrics *m)
{
    arb_gap_bin *bins = m->gap_bins;
    pair_tally bin_tally[ARB_GAP_BINS];
    memset(bin_tally, 0, sizeof bin_tally);
    for (int b = 0; b < ARB_GAP_BINS; b++) {
        bins[b].lo = 0.1 * b;
        bins[b].hi = 0.1 * (b + 1);
        bins[b].n_units = bins[b].n_pairs = 0;
    }
    unit_gap *u = malloc((n ? n : 1) * sizeof *u);
    pair_tally *units = malloc((n ? n : 1) * sizeof *units);
    double *scratch = malloc((n ? 2 * n : 1) * sizeof *scratch);
    if (!u || !units || !scratch) {
        free(u);
        free(units);
        free(scratch);
        return -1;
    }
    size_t n_units = 0; /* (comparison, task) units, valid pairs or not */
    for (size_t i = 0; i < n; i++) {
        u[i].cmp = refs[i].p->cmp;
        u[i].task = refs[i].p->task;
        u[i].p = refs[i].p;
    }
    qsort(u, n, sizeof *u, cmp_unit_gap);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        pair_tally t;
        memset(&t, 0, sizeof t);
        while (j < n && u[j].cmp == u[i].cmp && u[j].task == u[i].task)
            arb__audit_pair_tally_add(&t, u[j++].p);
        units[n_units++] = t;
        double gap = fabs(tally_owr(&t) - 0.5);
        if (!isnan(gap)) {
            int b = (int)(gap * 10.0);
            if (b >= ARB_GAP_BINS) b = ARB_GAP_BINS - 1; /* δq = 0.5 joins the last bin */
            bins[b].n_units++;
            bin_tally[b].valid += t.valid;
            bin_tally[b].consistent += t.consistent;
            bin_tally[b].pcn += t.pcn;
            bin_tally[b].rcn += t.rcn;
        }
        i = j;
    }
    for (int b = 0; b < ARB_GAP_BINS; b++) {
        bins[b].n_pairs = bin_tally[b].valid;
        bins[b].pc = tally_pc(&bin_tally[b]);
        bins[b].pf = tally_pf(&bin_tally[b]);
    }
    m->n_units = arb__audit_unit_values(units, n_units, scratch, m->value);
    free(u);
    free(units);
    free(scratch);
    return 0;
}

/* §5 length factors over the valid pairs: mean, and Pearson with consistency (1/0) and with the
** pair's lean as PF counts it (+1 recency, −1 primacy, 0 consistent or neutral). */
static int length_factors(const arb__pair_ref *refs, size_t n, arb_length_factor out[ARB_LEN__COUNT])
{
    double *len = malloc((n ? n : 1) * sizeof *len);
    double *cons = malloc((n ? n : 1) * sizeof *cons);
    double *lean = malloc((n ? n : 1) * sizeof *lean);
    if (!len || !cons || !lean) {
        free(len);
        free(cons);
        free(lean);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const arb__sbs_pair *p = refs[i].p;
        if (!pair_valid(p)) continue;
        int consistent = pair_consistent(p);
        int l = consistent ? 0 : pair_lean(p);
        cons[k] = consistent;
        lean[k] = l > 0 ? -1.0 : l < 0 ? 1.0 : 0.0;
        k++;
    }
    for (int f = 0; f < ARB_LEN__COUNT; f++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (pair_valid(refs[i].p)) len[m++] = refs[i].p->len[f];
        out[f].mean = mean_defined(len, m);
        out[f].r_pc = arb_stat_pearson(len, cons, m);
        out[f].r_pf = arb_stat_pearson(len, lean, m);
    }
    free(len);
    free(cons);
    free(lean);
    return 0;
}

/* §5 repetition stability: over the prompts judged at least twice (same comparison, item and
** order), the mean share of the most frequent verdict (E counts as a verdict). Prompts judged
** once say nothing about stability, so they are left out; RS is NAN when there are none.
** Adds the prompts' top shares to *sum_out and their number to *queries_out. */
static void repetition_stability_add(const arb__pair_ref *refs, size_t n, double *sum_out,
                                     size_t *queries_out)
{
    double sum = *sum_out;
    size_t queries = *queries_out;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        size_t counts[2][5] = {{0}}, trials[2] = {0, 0};
        while (j < n && refs[j].p->cmp == refs[i].p->cmp && refs[j].p->item == refs[i].p->item &&
               refs[j].copy == refs[i].copy) {
            const char v[2] = {refs[j].p->p0, refs[j].p->p1};
            for (int r = 0; r < 2; r++) {
                if (!v[r]) continue;
                counts[r][v[r] >= 'A' && v[r] <= 'D' ? v[r] - 'A' : 4]++;
                trials[r]++;
            }
            j++;
        }
        for (int r = 0; r < 2; r++) {
            if (trials[r] < 2) continue;
            size_t top = 0;
            for (int k = 0; k < 5; k++)
                if (counts[r][k] > top) top = counts[r][k];
            sum += (double)top / (double)trials[r];
            queries++;
        }
        i = j;
    }
    *sum_out = sum;
    *queries_out = queries;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* Distinct items; the copies of an item in a resample count as separate items. */
static int count_items(const arb__pair_ref *refs, size_t n, size_t *out)
{
    uint64_t *keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys) return -1;
    for (size_t i = 0; i < n; i++) keys[i] = (uint64_t)refs[i].p->item << 32 | refs[i].copy;
    qsort(keys, n, sizeof *keys, cmp_u64);
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || keys[i] != keys[i - 1]) distinct++;
    free(keys);
    *out = distinct;
    return 0;
}

/* §4: adds pair p's judgments against its expert majority label (none when unlabelled). */
static void label_tally_add(arb__label_tally *t, const arb__sbs_pair *p)
{
    if (!(p->expert >= 'a' && p->expert <= 'd')) return;
    int e = p->expert - 'a';
    const char v[2] = {p->p0, p->p1};
    for (int r = 0; r < 2; r++) {
        if (!v[r]) continue;
        char j = arb_verdict_to_model(v[r], r);
        int ji = verdict_index(j);
        t->kappa[ji * 5 + e] += 1;
        t->labelled_run[r]++;
        if (j == p->expert) t->correct_run[r]++;
        /* APCC (§4) compares the same items in both vectors: the experts' label counts once per
        ** judgment of the judge, and a judgment E, which has no place among the judge's four
        ** counts, takes its item out of the experts' vector too (counted by the caller). */
        if (ji == 4) continue;
        t->judge[r][ji] += 1;
        t->expert[r][e] += 1;
    }
}

/* §4 accuracy, Cohen's κ, Accuracy-Δ and APCC of a tally into value[]; the per-run accuracy
** and APCC into accuracy_run[] and apcc_run[]. */
static void label_values(const arb__label_tally *t, double *value, double accuracy_run[2],
                         double apcc_run[2])
{
    size_t labelled = t->labelled_run[0] + t->labelled_run[1];
    value[ARB_M_ACCURACY] = value[ARB_M_COHEN_KAPPA] = NAN;
    if (labelled) {
        value[ARB_M_ACCURACY] = (double)(t->correct_run[0] + t->correct_run[1]) / (double)labelled;
        value[ARB_M_COHEN_KAPPA] = arb_stat_cohen_kappa(t->kappa, 5);
    }
    /* §4 accuracy per run (E wrong, as pooled) and Accuracy-Δ, absolute like MPCC-Δ (§3): how
    ** much the judge's agreement with the experts depends on which answer it saw first */
    for (int r = 0; r < 2; r++)
        accuracy_run[r] = t->labelled_run[r]
                              ? (double)t->correct_run[r] / (double)t->labelled_run[r] : NAN;
    value[ARB_M_ACCURACY_DELTA] = fabs(accuracy_run[0] - accuracy_run[1]);
    for (int r = 0; r < 2; r++) {
        double total = 0;
        for (int k = 0; k < 4; k++) total += t->expert[r][k];
        apcc_run[r] = total > 0 ? arb_stat_pearson(t->judge[r], t->expert[r], 4) : NAN;
    }
    value[ARB_M_APCC] = mean_defined(apcc_run, 2);
}

/* §5 PC, PF, ipr, irr, owr and the quality gap of a tally into value[]. */
static void pair_values(const pair_tally *t, double *value)
{
    value[ARB_M_PC] = tally_pc(t);
    value[ARB_M_PF] = tally_pf(t);
    value[ARB_M_IPR] = value[ARB_M_IRR] = NAN;
    if (t->valid) {
        size_t leaning = t->pcn + t->rcn; /* §5: both 0 when pcn + rcn = 0 */
        value[ARB_M_IPR] = leaning ? (double)t->pcn / (double)leaning : 0.0;
        value[ARB_M_IRR] = leaning ? (double)t->rcn / (double)leaning : 0.0;
    }
    value[ARB_M_OWR] = tally_owr(t);
    value[ARB_M_QUALITY_GAP] = fabs(value[ARB_M_OWR] - 0.5);
}

/* Adds to t the pairs refs[0..n) of ONE item (one copy), sorted by comparison then repetition. */
void arb__audit_tally_item(arb__audit_tally *t, const arb__pair_ref *refs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sbs_tally_add(&t->sbs, refs[i].p->p0, refs[i].p->p1);
        arb__audit_pair_tally_add(&t->pairs, refs[i].p);
        label_tally_add(&t->labels, refs[i].p);
    }
    repetition_stability_add(refs, n, &t->rs_sum, &t->rs_queries);
}

static void add_sizes(size_t *dst, const size_t *src, size_t n, size_t times)
{
    for (size_t i = 0; i < n; i++) dst[i] += times * src[i];
}

static void add_doubles(double *dst, const double *src, size_t n, size_t times)
{
    for (size_t i = 0; i < n; i++) dst[i] += (double)times * src[i];
}

/* Adds `times` times src to dst. */
void arb__audit_tally_add(arb__audit_tally *dst, const arb__audit_tally *src, size_t times)
{
    arb__sbs_tally *d = &dst->sbs;
    const arb__sbs_tally *s = &src->sbs;
    add_sizes(d->counts[0], s->counts[0], 5, times);
    add_sizes(d->counts[1], s->counts[1], 5, times);
    add_sizes(d->present, s->present, 2, times);
    add_sizes(d->first, s->first, 2, times);
    add_sizes(d->ab, s->ab, 2, times);
    d->n_errors += times * s->n_errors;
    d->bm += times * s->bm;
    d->same += times * s->same;
    d->same_ab += times * s->same_ab;
    d->either_ab += times * s->either_ab;
    arb__audit_pair_tally_add_times(&dst->pairs, &src->pairs, times);
    dst->rs_sum += (double)times * src->rs_sum;
    dst->rs_queries += times * src->rs_queries;
    arb__label_tally *dl = &dst->labels;
    const arb__label_tally *sl = &src->labels;
    add_sizes(dl->correct_run, sl->correct_run, 2, times);
    add_sizes(dl->labelled_run, sl->labelled_run, 2, times);
    add_doubles(dl->kappa, sl->kappa, 25, times);
    for (int r = 0; r < 2; r++) {
        add_doubles(dl->judge[r], sl->judge[r], 4, times);
        add_doubles(dl->expert[r], sl->expert[r], 4, times);
    }
}

/* Sets value[] of every metric that is a function of the tally (all but the window series and
** the unit figures, left as they are). */
void arb__audit_tally_values(const arb__audit_tally *t, double *value)
{
    double accuracy_run[2], apcc_run[2];
    sbs_values(&t->sbs, value);
    pair_values(&t->pairs, value);
    value[ARB_M_RS] = t->rs_queries ? t->rs_sum / (double)t->rs_queries : NAN;
    label_values(&t->labels, value, accuracy_run, apcc_run);
}

/* Computes every metric of m except the intervals (left as they are) over refs[0..n), which
** must be sorted by comparison, benchmark order, item, copy and repetition. Returns 0, or -1
** when out of memory. */
int arb__audit_metrics(const arb__pair_ref *refs, size_t n, const arb_audit_params *params,
                       arb_audit_metrics *m)
{
    arb__audit_tally t;
    memset(&t, 0, sizeof t);
    for (int k = 0; k < ARB_M__COUNT; k++) m->value[k] = NAN;
    m->n_labelled_items = m->n_label_ties = 0;
    for (size_t i = 0, j; i < n; i = j) {
        /* one (comparison, item, copy) at a time, as RS groups its prompts */
        const arb__sbs_pair *p = refs[i].p;
        for (j = i + 1; j < n && refs[j].p->cmp == p->cmp && refs[j].p->item == p->item &&
                        refs[j].copy == refs[i].copy;
             j++)
            ;
        arb__audit_tally_item(&t, refs + i, j - i);
        if (p->expert == 'T') m->n_label_ties++;
        if (p->expert >= 'a' && p->expert <= 'd') m->n_labelled_items++;
    }
    arb__audit_tally_values(&t, m->value);
    label_values(&t.labels, m->value, m->accuracy_run, m->apcc_run);

    const sbs_tally *st = &t.sbs;
    m->n_pairs = st->bm;
    m->n_judgments = st->present[0] + st->present[1];
    m->run0 = shares_of(st->counts[0], st->present[0]);
    m->run1 = shares_of(st->counts[1], st->present[1]);
    m->mean.a = mean_share(m->run0.a, m->run1.a);
    m->mean.b = mean_share(m->run0.b, m->run1.b);
    m->mean.c = mean_share(m->run0.c, m->run1.c);
    m->mean.d = mean_share(m->run0.d, m->run1.d);
    m->mean.e = mean_share(m->run0.e, m->run1.e);

    /* distinct items (an item judged in several comparisons of the group counts once) */
    m->n_items = 0;
    if (count_items(refs, n, &m->n_items)) return -1;

    /* §5 consistency, fairness, win rate, repetition stability */
    m->n_valid_pairs = t.pairs.valid;
    m->n_consistent = t.pairs.consistent;
    m->pcn = t.pairs.pcn;
    m->rcn = t.pairs.rcn;
    m->n_neutral = t.pairs.neutral;
    m->n_rep_queries = t.rs_queries;

    /* §4: the confusion table is κ's table without its expert column e */
    m->n_labelled_judgments = t.labels.labelled_run[0] + t.labels.labelled_run[1];
    m->apcc_n_dropped = 0;
    for (int ji = 0; ji < 5; ji++)
        for (int e = 0; e < 4; e++) {
            m->confusion[ji][e] = (size_t)t.labels.kappa[ji * 5 + e];
            if (ji == 4) m->apcc_n_dropped += m->confusion[ji][e];
        }

    if (arb__audit_window_metrics(refs, n, params, m) || unit_figures(refs, n, m) ||
        length_factors(refs, n, m->length))
        return -1;
    return 0;
}

/* Fills the window-series figures of m: MPCC-Consistency (§3), MPCC per run and their mean
** (§4), MPCC-Δ (§3) and the windows behind them, over refs[0..n) sorted by comparison, then in
** series order with the refs of one (item, copy) together. A pooled row averages one series per
** comparison. Returns 0, or -1 when out of memory. */
int arb__audit_window_metrics(const arb__pair_ref *refs, size_t n, const arb_audit_params *params,
                              arb_audit_metrics *m)
{
    size_t n_cmp = 0;
    double (*per_cmp)[3] = malloc((n ? n : 1) * sizeof *per_cmp);
    double *scratch = malloc((n ? 3 * n : 1) * sizeof *scratch);
    arb__series_item *items = malloc((n ? n : 1) * sizeof *items);
    arb__series_cum *cum = malloc((n ? ARB__N_SERIES * n : 1) * sizeof *cum);
    arb__series_work w;
    memset(&w, 0, sizeof w);
    int rc = -1;
    memset(&m->windows, 0, sizeof m->windows);
    memset(m->mpcc_windows, 0, sizeof m->mpcc_windows);
    if (!per_cmp || !scratch || !items || !cum) goto done;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && refs[j].p->cmp == refs[i].p->cmp) j++;
        size_t n_items = arb__audit_series_items(refs + i, j - i, items);
        arb__series_cum *const out[ARB__N_SERIES] = {cum, cum + n_items, cum + 2 * n_items};
        arb__series_piece pieces[ARB__N_SERIES];
        arb__audit_series_cumulate(items, n_items, out, pieces);
        const size_t whole = 0;
        if (arb__audit_series_metrics(pieces, 0, &whole, 1, params, &w, per_cmp[n_cmp++], m))
            goto done;
        i = j;
    }
    arb__audit_window_values((const double (*)[3])per_cmp, n_cmp, scratch, m);
    rc = 0;
done:
    free(per_cmp);
    free(scratch);
    free(items);
    free(cum);
    arb__series_work_free(&w);
    return rc;
}
