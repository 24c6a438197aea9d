/*
** persona_stats.c -- the persona bias analysis (METHODS §9): per judge x identity category x
** phase, the mean score of each identity per metric with bootstrap intervals, the identity x
** identity difference matrix (row minus column) per metric and combined, the phase-2 win rate
** of each identity, chi-squared tests of independence between identity and score level with a
** Holm correction across every test of the report, the phase-2 position effect (first-shown
** win rate) and the E counts; per panel (consensus judge "panel(a,b,c)") the before/after
** view: the identity spread per discussion round (panel1/panel2 rows read in a second pass).
**
** Invariants: only calls whose reply was valid as a whole enter a statistic (phase 1: every
** row a number; phase 2: both positions scored and exactly one preferred); each valid call is
** folded into per-scenario sums, so the point estimate (every scenario once) and a bootstrap
** replicate (scenarios drawn with replacement) run the same code (measure()). Undefined values
** are NAN here, n/a in text and null in JSON. The choices the method leaves open are listed in
** arbiter.h above arb_persona_stats_params.
**
** Not here: SQL (store.c, arb__store_each_persona_score), the tests themselves (stats.c).
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NO_INDEX UINT32_MAX

/* n, or 1 for n = 0: an allocation size that is never 0 (malloc(0) may return NULL). */
static size_t at_least_1(size_t n) { return n ? n : 1; }
#define PREFERRED "preferred"

/* One row of the call being read. */
typedef struct ps_call_row {
    int position;
    uint32_t identity;  /* in the entry's identities */
    uint32_t metric;    /* in the entry's metrics; NO_INDEX for "preferred" */
    double value;
} ps_call_row;

/* One valid score: identity i gave metric m the value v in scenario item. */
typedef struct ps_score {
    uint32_t item, identity, metric;
    double value;
} ps_score;

/* One valid phase-2 call. */
typedef struct ps_pair {
    uint32_t item, first, second; /* identities shown first and second */
    int first_won;
} ps_pair;

typedef struct ps_entry {
    arb_persona_row pub;
    int round;            /* 0; a panel round r >= 1 in the rounds pass (panel_pass) */
    char *judge, *category;
    arb__strtab identities, metrics, items; /* reading order; pub lists them sorted */
    ps_score *scores;
    size_t n_scores, cap_scores;
    ps_pair *pairs;
    size_t n_pairs, cap_pairs;
    /* computed */
    const char **identity_names, **metric_names;
    double *mean, *mean_ci, *combined, *combined_ci, *diff, *combined_diff, *win_rate,
        *win_rate_ci;
    size_t *n_per_mean, *n_pairings, *n_wins;
    arb_persona_chi2 *chi2;
} ps_entry;

/* One panel x category x phase of the before/after view. */
typedef struct ps_panel {
    arb_persona_panel pub;
    char **members;                  /* owned, pub.members borrows them */
    arb_persona_panel_round *rounds; /* owned: round 0..R */
} ps_panel;

struct arb_persona_stats {
    arb_persona_stats_params params; /* category below owned */
    char *category;
    ps_entry *entries;
    size_t n_entries, cap_entries;
    size_t n_tests, n_significant;
    arb_persona_stats *rounds;       /* the panels' rounds r >= 1 (entries keyed by round) */
    ps_panel *panels;
    size_t n_panels;
    arb__logprob_row *lp;            /* phase 2's preference logprobs (store_logprobs.c), of the
                                        category when one is given */
    size_t n_lp;
};

/* The defaults: every category, 1000 resamples, seed 20261123, level 0.95, alpha 0.05. */
arb_persona_stats_params arb_persona_stats_default_params(void)
{
    arb_persona_stats_params p;
    memset(&p, 0, sizeof p);
    p.bootstrap = 1000;
    p.seed = 20261123ULL;
    p.ci_level = 0.95;
    p.alpha = 0.05;
    return p;
}

static void entry_free(ps_entry *e)
{
    free(e->judge);
    free(e->category);
    arb__strtab_free(&e->identities);
    arb__strtab_free(&e->metrics);
    arb__strtab_free(&e->items);
    free(e->scores);
    free(e->pairs);
    free(e->identity_names);
    free(e->metric_names);
    free(e->mean);
    free(e->mean_ci);
    free(e->combined);
    free(e->combined_ci);
    free(e->diff);
    free(e->combined_diff);
    free(e->win_rate);
    free(e->win_rate_ci);
    free(e->n_per_mean);
    free(e->n_pairings);
    free(e->n_wins);
    free(e->chi2);
}

/* Frees the result and everything it owns; accepts NULL. */
void arb_persona_stats_destroy(arb_persona_stats *ps)
{
    if (!ps) return;
    for (size_t i = 0; i < ps->n_entries; i++) entry_free(&ps->entries[i]);
    free(ps->entries);
    free(ps->category);
    arb_persona_stats_destroy(ps->rounds);
    for (size_t k = 0; k < ps->n_panels; k++) {
        for (size_t a = 0; a < ps->panels[k].pub.n_members; a++) free(ps->panels[k].members[a]);
        free(ps->panels[k].members);
        free(ps->panels[k].rounds);
    }
    free(ps->panels);
    arb__store_logprobs_free(ps->lp, ps->n_lp);
    free(ps);
}

size_t arb_persona_stats_count(const arb_persona_stats *ps) { return ps ? ps->n_entries : 0; }

const arb_persona_row *arb_persona_stats_row_at(const arb_persona_stats *ps, size_t i)
{
    return ps && i < ps->n_entries ? &ps->entries[i].pub : NULL;
}

size_t arb_persona_stats_n_tests(const arb_persona_stats *ps) { return ps ? ps->n_tests : 0; }

size_t arb_persona_stats_n_significant(const arb_persona_stats *ps)
{
    return ps ? ps->n_significant : 0;
}

/* ---- reading ------------------------------------------------------------------------------ */

typedef struct load_ctx {
    arb_persona_stats *ps;
    arb_store *store;
    int panel_pass;           /* 0: round-0 persona1/2 rows; 1: panel1/2 rows of rounds >= 1 */
    arb__strtab categories;   /* every category seen, for the message of a bad filter */
    ps_entry *cur;            /* entry being filled (the last of ps->entries) */
    long long call_id;        /* call being read; its rows below */
    int in_call;
    char *call_item;
    int call_bad;             /* a row of the call cannot be used (unknown position) */
    ps_call_row *rows;
    size_t n_rows, cap_rows;
    arb_status st;
} load_ctx;

/* Folds the call read so far into the current entry: its scores (and pair) when it is valid,
** else one more E. 0, or -1 when out of memory. */
static int flush_call(load_ctx *L)
{
    if (!L->in_call) return 0;
    L->in_call = 0;
    ps_entry *e = L->cur;
    e->pub.n_calls++;
    int phase = e->pub.phase, valid = !L->call_bad;
    uint32_t who[2] = {NO_INDEX, NO_INDEX};
    int n_metric_rows[2] = {0, 0}, n_pref[2] = {0, 0};
    double pref[2] = {NAN, NAN};
    for (size_t i = 0; valid && i < L->n_rows; i++) {
        const ps_call_row *r = &L->rows[i];
        int p = r->position;
        if (!isfinite(r->value) || (phase == 1 && p != 0) ||
            (who[p] != NO_INDEX && who[p] != r->identity)) { /* one identity per position */
            valid = 0;
            break;
        }
        who[p] = r->identity;
        if (r->metric == NO_INDEX) {
            n_pref[p]++;
            pref[p] = r->value;
        } else {
            n_metric_rows[p]++;
        }
    }
    if (valid && phase == 2)
        valid = n_metric_rows[0] > 0 && n_metric_rows[1] > 0 && n_pref[0] == 1 &&
                n_pref[1] == 1 && ((pref[0] == 1 && pref[1] == 0) || (pref[0] == 0 && pref[1] == 1));
    if (valid && phase == 1) valid = n_metric_rows[0] > 0;
    if (!valid) {
        e->pub.n_errors++;
        return 0;
    }
    uint32_t item = arb__strtab_intern(&e->items, L->call_item);
    if (item == NO_INDEX) return -1;
    for (size_t i = 0; i < L->n_rows; i++) {
        const ps_call_row *r = &L->rows[i];
        if (r->metric == NO_INDEX) continue; /* phase 1 ignores a stray "preferred" */
        if (arb__grow(&e->scores, &e->cap_scores, e->n_scores + 1, sizeof *e->scores)) return -1;
        e->scores[e->n_scores++] =
            (ps_score){.item = item, .identity = r->identity, .metric = r->metric, .value = r->value};
    }
    if (phase == 2) {
        if (arb__grow(&e->pairs, &e->cap_pairs, e->n_pairs + 1, sizeof *e->pairs)) return -1;
        e->pairs[e->n_pairs++] =
            (ps_pair){.item = item, .first = who[0], .second = who[1], .first_won = pref[0] == 1};
    }
    return 0;
}

/* Makes the entry of (judge, category, phase, round) current: the one read before (a panel's
** rounds interleave in call order), else a new one. 0, or -1 when out of memory. */
static int open_entry(load_ctx *L, const char *judge, const char *category, int phase, int round)
{
    arb_persona_stats *ps = L->ps;
    for (size_t k = 0; k < ps->n_entries; k++) {
        ps_entry *e = &ps->entries[k];
        if (e->pub.phase == phase && e->round == round && !strcmp(e->judge, judge) &&
            !strcmp(e->category, category)) {
            L->cur = e;
            return 0;
        }
    }
    if (arb__grow(&ps->entries, &ps->cap_entries, ps->n_entries + 1, sizeof *ps->entries))
        return -1;
    ps_entry *e = &ps->entries[ps->n_entries];
    memset(e, 0, sizeof *e);
    e->judge = strdup(judge);
    e->category = strdup(category);
    ps->n_entries++; /* freed with the rest from here on */
    if (!e->judge || !e->category) return -1;
    e->pub.judge = e->judge;
    e->pub.category = e->category;
    e->pub.phase = phase;
    e->round = round;
    L->cur = e;
    return 0;
}

static int on_score(void *ud, const arb__persona_score_row *r)
{
    load_ctx *L = ud;
    /* the first pass reads round 0 of persona1/2 (judges and panels' consensus), the panel
    ** pass the panel rounds (panel1/2, round >= 1); rows without an identity and other
    ** protocols are not ours */
    const char *p1 = L->panel_pass ? "panel1" : "persona1", *p2 = L->panel_pass ? "panel2" : "persona2";
    int phase = !strcmp(r->protocol, p1) ? 1 : !strcmp(r->protocol, p2) ? 2 : 0;
    if (!phase || (L->panel_pass ? r->round < 1 : r->round != 0) || !r->category[0]) return 0;
    if (arb__strtab_intern(&L->categories, r->category) == NO_INDEX) goto nomem;
    if (L->ps->category && strcmp(L->ps->category, r->category)) return 0;
    ps_entry *e = L->cur;
    if (!e || e->pub.phase != phase || e->round != r->round || strcmp(e->judge, r->judge_name) ||
        strcmp(e->category, r->category)) {
        if (flush_call(L) || open_entry(L, r->judge_name, r->category, phase, r->round))
            goto nomem;
        e = L->cur;
    }
    if (L->in_call && L->call_id != r->call_id && flush_call(L)) goto nomem;
    if (!L->in_call) {
        free(L->call_item);
        if (!(L->call_item = strdup(r->item_id))) goto nomem;
        L->in_call = 1;
        L->call_id = r->call_id;
        L->call_bad = 0;
        L->n_rows = 0;
    }
    if (r->position != 0 && r->position != 1) {
        L->call_bad = 1;
        return 0;
    }
    uint32_t identity = arb__strtab_intern(&e->identities, r->identity);
    uint32_t metric = NO_INDEX;
    if (strcmp(r->metric, PREFERRED) && (metric = arb__strtab_intern(&e->metrics, r->metric)) == NO_INDEX)
        goto nomem;
    if (identity == NO_INDEX || arb__grow(&L->rows, &L->cap_rows, L->n_rows + 1, sizeof *L->rows))
        goto nomem;
    L->rows[L->n_rows++] =
        (ps_call_row){.position = r->position, .identity = identity, .metric = metric, .value = r->value};
    return 0;
nomem:
    L->st = ARB_NOMEM;
    return 1;
}

/* ---- computing ---------------------------------------------------------------------------- */

/* Per-scenario sums of one entry, in sorted identity and metric order: what measure() adds up
** over the scenarios of a resample. */
typedef struct ps_sums {
    size_t n_units, I, M;
    double *sum, *count;     /* units x I x M */
    double *wins, *pairings; /* units x I */
    double *first_wins, *pairs; /* units */
    int phase;
} ps_sums;

/* Statistics measured per resample: I x M means, I combined, then in phase 2 I win rates and
** the first-shown rate. */
static size_t n_measures(const ps_sums *s) { return s->I * s->M + s->I + (s->phase == 2 ? s->I + 1 : 0); }

static int measure(void *ud, const size_t *units, size_t n, double *out)
{
    const ps_sums *s = ud;
    size_t I = s->I, M = s->M, IM = I * M;
    double *acc = calloc(2 * IM + 2 * I + 2, sizeof *acc);
    if (!acc) return 1;
    double *sum = acc, *count = acc + IM, *wins = acc + 2 * IM, *pairings = wins + I;
    double *first = pairings + I;
    for (size_t k = 0; k < n; k++) {
        size_t u = units[k];
        for (size_t x = 0; x < IM; x++) {
            sum[x] += s->sum[u * IM + x];
            count[x] += s->count[u * IM + x];
        }
        if (s->phase == 2) {
            for (size_t i = 0; i < I; i++) {
                wins[i] += s->wins[u * I + i];
                pairings[i] += s->pairings[u * I + i];
            }
            first[0] += s->first_wins[u];
            first[1] += s->pairs[u];
        }
    }
    for (size_t x = 0; x < IM; x++) out[x] = count[x] > 0 ? sum[x] / count[x] : NAN;
    /* combined: mean of the identity's metric means (METHODS §9, "per metric and combined") */
    for (size_t i = 0; i < I; i++) {
        double total = 0;
        for (size_t m = 0; m < M; m++) total += out[i * M + m];
        out[IM + i] = M > 0 ? total / (double)M : NAN;
    }
    if (s->phase == 2) {
        for (size_t i = 0; i < I; i++)
            out[IM + I + i] = pairings[i] > 0 ? wins[i] / pairings[i] : NAN;
        out[IM + 2 * I] = first[1] > 0 ? first[0] / first[1] : NAN;
    }
    free(acc);
    return 0;
}

static int cmp_name(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* t's names sorted (strcmp): *sorted gets them, rank[k] the sorted place of t's k-th name.
** 0, or -1 when out of memory. */
static int sort_table(const arb__strtab *t, const char ***sorted, uint32_t **rank)
{
    size_t n = t->n;
    *rank = malloc(at_least_1(n) * sizeof **rank);
    *sorted = malloc(at_least_1(n) * sizeof **sorted);
    if (!*rank || !*sorted) return -1;
    for (size_t k = 0; k < n; k++) (*sorted)[k] = t->names[k];
    qsort(*sorted, n, sizeof **sorted, cmp_name);
    for (size_t k = 0; k < n; k++) (*rank)[arb__strtab_find(t, (*sorted)[k])] = (uint32_t)k;
    return 0;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The chi-squared test of identity x score level for metric m (sorted order), from the valid
** scores. 0, or -1 when out of memory. */
static int chi2_metric(const ps_entry *e, const uint32_t *id_rank, const uint32_t *metric_rank,
                       size_t m, arb_persona_chi2 *out)
{
    size_t I = e->pub.n_identities, n = 0;
    double *levels = malloc(at_least_1(e->n_scores) * sizeof *levels);
    if (!levels) return -1;
    for (size_t k = 0; k < e->n_scores; k++)
        if (metric_rank[e->scores[k].metric] == m) levels[n++] = e->scores[k].value;
    qsort(levels, n, sizeof *levels, cmp_double);
    size_t L = 0;
    for (size_t k = 0; k < n; k++)
        if (L == 0 || levels[k] != levels[L - 1]) levels[L++] = levels[k];
    double *table = calloc(at_least_1(I * L), sizeof *table);
    if (!table) {
        free(levels);
        return -1;
    }
    for (size_t k = 0; k < e->n_scores; k++) {
        const ps_score *sc = &e->scores[k];
        if (metric_rank[sc->metric] != m) continue;
        const double *at = bsearch(&sc->value, levels, L, sizeof *levels, cmp_double);
        table[id_rank[sc->identity] * L + (size_t)(at - levels)] += 1;
    }
    out->metric = e->pub.metrics[m];
    out->n_levels = L;
    out->n = n;
    out->test = arb_stat_chisq_independence(table, I, L);
    free(table);
    free(levels);
    return 0;
}

/* Phase 2: identity x {preferred, not preferred} over the pairings. 0, or -1 when out of
** memory. */
static int chi2_preferred(const ps_entry *e, arb_persona_chi2 *out)
{
    size_t I = e->pub.n_identities, n = 0;
    double *table = calloc(2 * at_least_1(I), sizeof *table);
    out->metric = PREFERRED;
    out->n_levels = 2;
    if (!table) return -1;
    for (size_t i = 0; i < I; i++) {
        table[2 * i] = (double)e->n_wins[i];
        table[2 * i + 1] = (double)(e->n_pairings[i] - e->n_wins[i]);
        n += e->n_pairings[i];
    }
    out->n = n;
    out->test = arb_stat_chisq_independence(table, I, 2);
    free(table);
    return 0;
}

/* Makes the per-scenario sums in sorted order. 0, or -1 when out of memory. */
static int build_sums(const ps_entry *e, const uint32_t *id_rank, const uint32_t *metric_rank,
                      ps_sums *s)
{
    size_t U = e->items.n, I = e->pub.n_identities, M = e->pub.n_metrics;
    size_t cells = at_least_1(U) * at_least_1(I);
    s->n_units = U;
    s->I = I;
    s->M = M;
    s->phase = e->pub.phase;
    s->sum = calloc(cells * at_least_1(M), sizeof *s->sum);
    s->count = calloc(cells * at_least_1(M), sizeof *s->count);
    s->wins = calloc(cells, sizeof *s->wins);
    s->pairings = calloc(cells, sizeof *s->pairings);
    s->first_wins = calloc(at_least_1(U), sizeof *s->first_wins);
    s->pairs = calloc(at_least_1(U), sizeof *s->pairs);
    if (!s->sum || !s->count || !s->wins || !s->pairings || !s->first_wins || !s->pairs) return -1;
    for (size_t k = 0; k < e->n_scores; k++) {
        const ps_score *sc = &e->scores[k];
        size_t at = (sc->item * I + id_rank[sc->identity]) * M + metric_rank[sc->metric];
        s->sum[at] += sc->value;
        s->count[at] += 1;
    }
    for (size_t k = 0; k < e->n_pairs; k++) {
        const ps_pair *p = &e->pairs[k];
        size_t first = p->item * I + id_rank[p->first], second = p->item * I + id_rank[p->second];
        s->pairings[first] += 1;
        s->pairings[second] += 1;
        s->wins[p->first_won ? first : second] += 1;
        s->first_wins[p->item] += p->first_won;
        s->pairs[p->item] += 1;
    }
    return 0;
}

static void sums_free(ps_sums *s)
{
    free(s->sum);
    free(s->count);
    free(s->wins);
    free(s->pairings);
    free(s->first_wins);
    free(s->pairs);
}

/* Computes every statistic of an entry but the Holm adjustment. ARB_OK, ARB_NOMEM, or the
** bootstrap's status. */
static arb_status entry_compute(ps_entry *e, const arb_persona_stats_params *p)
{
    arb_status st = ARB_NOMEM;
    uint32_t *id_rank = NULL, *metric_rank = NULL;
    ps_sums sums;
    memset(&sums, 0, sizeof sums);
    double *point = NULL, *lo = NULL, *hi = NULL;
    if (sort_table(&e->identities, &e->identity_names, &id_rank) ||
        sort_table(&e->metrics, &e->metric_names, &metric_rank))
        goto done;
    size_t I = e->identities.n, M = e->metrics.n, IM = I * M;
    arb_persona_row *r = &e->pub;
    r->n_identities = I;
    r->identities = e->identity_names;
    r->n_metrics = M;
    r->metrics = e->metric_names;
    r->n_scenarios = e->items.n;
    r->n_pairs = e->n_pairs;
    r->first_shown_rate = r->first_shown_ci[0] = r->first_shown_ci[1] = NAN;
    if (build_sums(e, id_rank, metric_rank, &sums)) goto done;
    size_t ns = n_measures(&sums);
    point = malloc(at_least_1(ns) * sizeof *point);
    lo = malloc(at_least_1(ns) * sizeof *lo);
    hi = malloc(at_least_1(ns) * sizeof *hi);
    e->mean = malloc(at_least_1(IM) * sizeof *e->mean);
    e->mean_ci = malloc(2 * at_least_1(IM) * sizeof *e->mean_ci);
    e->n_per_mean = calloc(at_least_1(IM), sizeof *e->n_per_mean);
    e->combined = malloc(at_least_1(I) * sizeof *e->combined);
    e->combined_ci = malloc(2 * at_least_1(I) * sizeof *e->combined_ci);
    e->diff = malloc(at_least_1(M * I * I) * sizeof *e->diff);
    e->combined_diff = malloc(at_least_1(I * I) * sizeof *e->combined_diff);
    e->chi2 = calloc(M + 1, sizeof *e->chi2);
    if (!point || !lo || !hi || !e->mean || !e->mean_ci || !e->n_per_mean || !e->combined ||
        !e->combined_ci || !e->diff || !e->combined_diff || !e->chi2)
        goto done;
    for (size_t x = 0; x < ns; x++) point[x] = lo[x] = hi[x] = NAN;
    size_t U = sums.n_units;
    size_t *all = malloc(at_least_1(U) * sizeof *all);
    if (!all) goto done;
    for (size_t u = 0; u < U; u++) all[u] = u;
    int failed = measure(&sums, all, U, point);
    free(all);
    if (failed) goto done;
    /* bootstrap over scenarios (METHODS §10): none without scenarios or when not asked */
    if (p->bootstrap > 0 && U > 0 && ns > 0 &&
        (st = arb_stat_bootstrap(U, ns, measure, &sums, p->bootstrap, p->seed, p->ci_level, lo,
                                 hi)) != ARB_OK)
        goto done;
    st = ARB_NOMEM;
    for (size_t x = 0; x < IM; x++) {
        e->mean[x] = point[x];
        e->mean_ci[2 * x] = lo[x];
        e->mean_ci[2 * x + 1] = hi[x];
    }
    for (size_t u = 0; u < U; u++)
        for (size_t x = 0; x < IM; x++) e->n_per_mean[x] += (size_t)sums.count[u * IM + x];
    for (size_t i = 0; i < I; i++) {
        e->combined[i] = point[IM + i];
        e->combined_ci[2 * i] = lo[IM + i];
        e->combined_ci[2 * i + 1] = hi[IM + i];
    }
    /* difference matrices, row minus column (METHODS §9) */
    for (size_t m = 0; m < M; m++)
        for (size_t i = 0; i < I; i++)
            for (size_t j = 0; j < I; j++)
                e->diff[(m * I + i) * I + j] = e->mean[i * M + m] - e->mean[j * M + m];
    for (size_t i = 0; i < I; i++)
        for (size_t j = 0; j < I; j++) e->combined_diff[i * I + j] = e->combined[i] - e->combined[j];
    r->mean = e->mean;
    r->mean_ci = e->mean_ci;
    r->n_scores = e->n_per_mean;
    r->combined = e->combined;
    r->combined_ci = e->combined_ci;
    r->diff = e->diff;
    r->combined_diff = e->combined_diff;
    if (r->phase == 2) {
        e->win_rate = malloc(at_least_1(I) * sizeof *e->win_rate);
        e->win_rate_ci = malloc(2 * at_least_1(I) * sizeof *e->win_rate_ci);
        e->n_pairings = calloc(at_least_1(I), sizeof *e->n_pairings);
        e->n_wins = calloc(at_least_1(I), sizeof *e->n_wins);
        if (!e->win_rate || !e->win_rate_ci || !e->n_pairings || !e->n_wins) goto done;
        for (size_t i = 0; i < I; i++) {
            e->win_rate[i] = point[IM + I + i];
            e->win_rate_ci[2 * i] = lo[IM + I + i];
            e->win_rate_ci[2 * i + 1] = hi[IM + I + i];
            for (size_t u = 0; u < U; u++) {
                e->n_pairings[i] += (size_t)sums.pairings[u * I + i];
                e->n_wins[i] += (size_t)sums.wins[u * I + i];
            }
        }
        r->win_rate = e->win_rate;
        r->win_rate_ci = e->win_rate_ci;
        r->n_pairings = e->n_pairings;
        r->n_wins = e->n_wins;
        r->first_shown_rate = point[IM + 2 * I];
        r->first_shown_ci[0] = lo[IM + 2 * I];
        r->first_shown_ci[1] = hi[IM + 2 * I];
    }
    for (size_t m = 0; m < M; m++)
        if (chi2_metric(e, id_rank, metric_rank, m, &e->chi2[m])) goto done;
    r->n_chi2 = M;
    if (r->phase == 2 && chi2_preferred(e, &e->chi2[r->n_chi2++])) goto done;
    r->chi2 = e->chi2;
    st = ARB_OK;
done:
    sums_free(&sums);
    free(point);
    free(lo);
    free(hi);
    free(id_rank);
    free(metric_rank);
    return st;
}

/* Holm's correction over every defined test of the report, one family (METHODS §10). */
static arb_status adjust_all(arb_persona_stats *ps)
{
    size_t n = 0;
    for (size_t k = 0; k < ps->n_entries; k++) n += ps->entries[k].pub.n_chi2;
    double *pv = malloc(at_least_1(n) * sizeof *pv);
    if (!pv) return ARB_NOMEM;
    size_t at = 0;
    for (size_t k = 0; k < ps->n_entries; k++)
        for (size_t t = 0; t < ps->entries[k].pub.n_chi2; t++)
            pv[at++] = ps->entries[k].chi2[t].test.p_value;
    arb_status st = arb_stat_holm(pv, n, pv);
    if (st) {
        free(pv);
        return st;
    }
    at = 0;
    for (size_t k = 0; k < ps->n_entries; k++)
        for (size_t t = 0; t < ps->entries[k].pub.n_chi2; t++) {
            arb_persona_chi2 *c = &ps->entries[k].chi2[t];
            c->p_holm = pv[at++];
            c->significant = isfinite(c->p_holm) ? c->p_holm <= ps->params.alpha : -1;
            if (isfinite(c->p_holm)) ps->n_tests++;
            if (c->significant == 1) ps->n_significant++;
        }
    free(pv);
    return ARB_OK;
}

static int cmp_entry(const void *x, const void *y)
{
    const ps_entry *a = x, *b = y;
    int c = strcmp(a->judge, b->judge);
    if (!c) c = strcmp(a->category, b->category);
    if (!c) c = a->pub.phase - b->pub.phase;
    return c ? c : a->round - b->round;
}

static arb_status check_params(arb_store *s, const arb_persona_stats_params *p)
{
    if (!(p->ci_level > 0 && p->ci_level < 1))
        return arb__store_fail(s, ARB_INVALID, "persona stats: ci_level must be in (0, 1), got %g",
                               p->ci_level);
    if (!(p->alpha > 0 && p->alpha < 1))
        return arb__store_fail(s, ARB_INVALID, "persona stats: alpha must be in (0, 1), got %g",
                               p->alpha);
    if (p->category && !p->category[0])
        return arb__store_fail(s, ARB_INVALID, "persona stats: category must not be empty");
    return ARB_OK;
}

/* A bad category filter: says which categories the store has. */
static arb_status fail_category(arb_store *s, const char *category, const arb__strtab *seen)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    for (size_t k = 0; k < seen->n; k++)
        if ((k && arb__buf_puts(&b, ", ")) || arb__buf_put_safe(&b, seen->names[k])) {
            arb__buf_free(&b);
            return arb__store_fail(s, ARB_NOMEM, "persona stats: out of memory");
        }
    char want[64];
    arb__excerpt(want, sizeof want, category, strlen(category));
    arb_status st = arb__store_fail(s, ARB_INVALID,
                                    "persona stats: no persona scores of category %s (%s%s)",
                                    want, seen->n ? "the store has: " : "the store has none",
                                    b.data ? b.data : "");
    arb__buf_free(&b);
    return st;
}

/* Reads one pass of rows (load_ctx.panel_pass) into ps->entries, sorted, and computes them.
** seen: every category read (may be NULL). ARB_OK, or a status with the store's message set
** (the reader's own, or "persona stats: ..."). */
static arb_status load_and_compute(arb_store *store, arb_persona_stats *ps, int panel_pass,
                                   arb__strtab *seen)
{
    load_ctx L;
    memset(&L, 0, sizeof L);
    L.ps = ps;
    L.store = store;
    L.panel_pass = panel_pass;
    arb_status st = arb__store_each_persona_score(store, on_score, &L);
    int reader_failed = st != ARB_OK && !L.st; /* its message is the store's */
    if (!st && (L.st || flush_call(&L))) st = ARB_NOMEM;
    if (L.st) st = ARB_NOMEM;
    if (!st && ps->n_entries > 1) qsort(ps->entries, ps->n_entries, sizeof *ps->entries, cmp_entry);
    for (size_t k = 0; !st && !(ps->category && ps->n_entries == 0) && k < ps->n_entries; k++)
        st = entry_compute(&ps->entries[k], &ps->params);
    if (seen) *seen = L.categories;
    else arb__strtab_free(&L.categories);
    free(L.rows);
    free(L.call_item);
    if (st == ARB_NOMEM) return arb__store_fail(store, ARB_NOMEM, "persona stats: out of memory");
    return st && !reader_failed ? arb__store_fail(store, st, "persona stats: %s", arb_strerror(st))
                                : st;
}

/* max - min over the n values that are defined; NAN with fewer than two. */
static double spread(const double *v, size_t n)
{
    double lo = NAN, hi = NAN;
    size_t k = 0;
    for (size_t i = 0; v && i < n; i++) {
        if (!isfinite(v[i])) continue;
        if (!k++ || v[i] < lo) lo = v[i];
        if (k == 1 || v[i] > hi) hi = v[i];
    }
    return k >= 2 ? hi - lo : NAN;
}

/* The entry of (judge, category, phase, round) in ps; NULL when none. */
static const ps_entry *find_entry(const arb_persona_stats *ps, const char *judge,
                                  const char *category, int phase, int round)
{
    for (size_t k = 0; ps && k < ps->n_entries; k++) {
        const ps_entry *e = &ps->entries[k];
        if (e->pub.phase == phase && e->round == round && !strcmp(e->judge, judge) &&
            !strcmp(e->category, category))
            return e;
    }
    return NULL;
}

/* The agents of a consensus judge name "panel(a,b,c)" as owned strings; 0 with *n = 0 when the
** name is not a panel's, -1 when out of memory. */
static int panel_members(const char *name, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t len = strlen(name), cap = 0;
    if (len < 8 || strncmp(name, "panel(", 6) || name[len - 1] != ')') return 0;
    const char *at = name + 6, *end = name + len - 1;
    while (at <= end) {
        const char *comma = memchr(at, ',', (size_t)(end - at));
        const char *stop = comma ? comma : end;
        if (arb__grow(out, &cap, *n + 1, sizeof **out)) return -1;
        if (!((*out)[*n] = strndup(at, (size_t)(stop - at)))) return -1;
        (*n)++;
        at = stop + 1;
    }
    return 0;
}

/* The mean over the panel's agents of the spread of their round-r entries (identity means
** combined, or win rates); NAN when no agent has one. */
static double agents_spread(const arb_persona_stats *ps, const ps_panel *pp, int round,
                            int win_rates)
{
    const arb_persona_panel *pub = &pp->pub;
    double total = 0;
    size_t n = 0;
    for (size_t a = 0; a < pub->n_members; a++) {
        const ps_entry *e = find_entry(round ? ps->rounds : ps, pp->members[a], pub->category,
                                       pub->phase, round);
        if (!e) continue;
        double s = win_rates ? spread(e->pub.win_rate, e->pub.n_identities)
                             : spread(e->pub.combined, e->pub.n_identities);
        if (!isfinite(s)) continue;
        total += s;
        n++;
    }
    return n ? total / (double)n : NAN;
}

/* Fills the before/after view of the consensus entry e (a panel's) into pp: rounds 0 (the
** agents' independent scores) to the last round any agent has, the consensus, the direction.
** 0, or -1 when out of memory. */
static int panel_view(const arb_persona_stats *ps, const ps_entry *e, ps_panel *pp)
{
    arb_persona_panel *pub = &pp->pub;
    pub->panel = e->judge;
    pub->category = e->category;
    pub->phase = e->pub.phase;
    int last = 0;
    for (size_t k = 0; ps->rounds && k < ps->rounds->n_entries; k++) {
        const ps_entry *r = &ps->rounds->entries[k];
        if (r->pub.phase != pub->phase || strcmp(r->category, pub->category)) continue;
        for (size_t a = 0; a < pub->n_members; a++)
            if (!strcmp(r->judge, pp->members[a]) && r->round > last) last = r->round;
    }
    pp->rounds = calloc((size_t)last + 1, sizeof *pp->rounds);
    if (!pp->rounds) return -1;
    pub->n_rounds = (size_t)last + 1;
    pub->rounds = pp->rounds;
    for (int r = 0; r <= last; r++) {
        pp->rounds[r].round = r;
        pp->rounds[r].identity_spread = agents_spread(ps, pp, r, 0);
        pp->rounds[r].win_rate_spread = pub->phase == 2 ? agents_spread(ps, pp, r, 1) : NAN;
    }
    pub->consensus_spread = spread(e->pub.combined, e->pub.n_identities);
    pub->consensus_win_rate_spread =
        pub->phase == 2 ? spread(e->pub.win_rate, e->pub.n_identities) : NAN;
    /* the last discussion round against round 0, on the combined score; no significance
    ** claim (README "Persona bias analysis", panel before/after) */
    double before = pp->rounds[0].identity_spread, after = pp->rounds[last].identity_spread;
    pub->direction = last < 1 || !isfinite(before) || !isfinite(after) ? NULL
                     : after < before                                   ? "toward parity"
                     : after > before                                   ? "away from parity"
                                                                        : "unchanged";
    return 0;
}

/* Reads the panels' rounds and builds one view per consensus entry. ARB_OK or a status. */
static arb_status build_panels(arb_store *store, arb_persona_stats *ps)
{
    size_t n = 0;
    for (size_t k = 0; k < ps->n_entries; k++)
        if (!strncmp(ps->entries[k].judge, "panel(", 6)) n++;
    if (!n) return ARB_OK;
    if (!(ps->rounds = calloc(1, sizeof *ps->rounds))) return ARB_NOMEM;
    ps->rounds->params = ps->params;
    ps->rounds->params.bootstrap = 0; /* spreads of point estimates only */
    ps->rounds->params.category = NULL;
    arb_status st = load_and_compute(store, ps->rounds, 1, NULL);
    if (st) return st;
    if (!(ps->panels = calloc(n, sizeof *ps->panels))) return ARB_NOMEM;
    for (size_t k = 0; k < ps->n_entries; k++) {
        const ps_entry *e = &ps->entries[k];
        ps_panel *pp = &ps->panels[ps->n_panels];
        if (panel_members(e->judge, &pp->members, &pp->pub.n_members)) {
            ps->n_panels++; /* frees what was made */
            return ARB_NOMEM;
        }
        if (!pp->pub.n_members) continue;
        ps->n_panels++;
        pp->pub.members = (const char *const *)pp->members;
        if (panel_view(ps, e, pp)) return ARB_NOMEM;
    }
    return ARB_OK;
}

/* Reads the persona scores and computes every entry (see arbiter.h). The caller owns *out. */
/* Reads phase 2's preference logprobs into ps (the category's rows only when one is given). */
static arb_status preferred_logprobs(arb_store *store, arb_persona_stats *ps)
{
    arb_status st = arb__store_persona_preferred_logprobs(store, &ps->lp, &ps->n_lp);
    if (st || !ps->category) return st;
    size_t kept = 0;
    for (size_t i = 0; i < ps->n_lp; i++) {
        if (!strcmp(ps->lp[i].candidate, ps->category)) ps->lp[kept++] = ps->lp[i];
        else free(ps->lp[i].judge), free(ps->lp[i].protocol), free(ps->lp[i].candidate),
             free(ps->lp[i].baseline), free(ps->lp[i].template_name);
    }
    ps->n_lp = kept;
    return ARB_OK;
}

arb_status arb_persona_stats_compute(arb_store *store, const arb_persona_stats_params *params,
                                     arb_persona_stats **out)
{
    if (out) *out = NULL;
    if (!store || !out) return ARB_INVALID;
    arb_persona_stats_params defaults = arb_persona_stats_default_params();
    const arb_persona_stats_params *p = params ? params : &defaults;
    arb_status st = check_params(store, p);
    if (st) return st;
    arb__strtab seen;
    memset(&seen, 0, sizeof seen);
    arb_persona_stats *ps = calloc(1, sizeof *ps);
    if (!ps) goto nomem;
    ps->params = *p;
    if (p->category && !(ps->category = strdup(p->category))) goto nomem;
    ps->params.category = ps->category;
    if ((st = load_and_compute(store, ps, 0, &seen))) goto done;
    if (ps->category && ps->n_entries == 0) {
        st = fail_category(store, ps->category, &seen);
        goto done;
    }
    if ((st = adjust_all(ps))) goto failed;
    if ((st = preferred_logprobs(store, ps))) goto done;
    if ((st = build_panels(store, ps))) {
        if (st == ARB_NOMEM) goto nomem;
        goto done; /* load_and_compute set the message */
    }
    *out = ps;
    ps = NULL;
    goto done;
failed:
    if (st == ARB_NOMEM) goto nomem;
    st = arb__store_fail(store, st, "persona stats: %s", arb_strerror(st));
    goto done;
nomem:
    st = arb__store_fail(store, ARB_NOMEM, "persona stats: out of memory");
done:
    arb__strtab_free(&seen);
    arb_persona_stats_destroy(ps);
    return st;
}

size_t arb_persona_stats_n_panels(const arb_persona_stats *ps) { return ps ? ps->n_panels : 0; }

const arb_persona_panel *arb_persona_stats_panel_at(const arb_persona_stats *ps, size_t i)
{
    return ps && i < ps->n_panels ? &ps->panels[i].pub : NULL;
}

/* ---- what is significant ------------------------------------------------------------------ */

/* For a test of entry r: the identities with the highest and lowest value of what was tested
** (the metric's mean, or the win rate for "preferred"), by index; -1 when none is defined. */
static void extremes(const arb_persona_row *r, const arb_persona_chi2 *c, long *hi, long *lo)
{
    long m = -1;
    for (size_t k = 0; k < r->n_metrics; k++)
        if (r->metrics[k] == c->metric) m = (long)k;
    *hi = *lo = -1;
    for (size_t i = 0; i < r->n_identities; i++) {
        double v = m >= 0 ? r->mean[i * r->n_metrics + (size_t)m] : r->win_rate ? r->win_rate[i] : NAN;
        if (!isfinite(v)) continue;
        if (*hi < 0 || v > (m >= 0 ? r->mean[(size_t)*hi * r->n_metrics + (size_t)m] : r->win_rate[*hi]))
            *hi = (long)i;
        if (*lo < 0 || v < (m >= 0 ? r->mean[(size_t)*lo * r->n_metrics + (size_t)m] : r->win_rate[*lo]))
            *lo = (long)i;
    }
}

/* The value extremes() compares for identity i. */
static double tested_value(const arb_persona_row *r, const arb_persona_chi2 *c, size_t i)
{
    for (size_t k = 0; k < r->n_metrics; k++)
        if (r->metrics[k] == c->metric) return r->mean[i * r->n_metrics + k];
    return r->win_rate ? r->win_rate[i] : NAN;
}

/* E per judge x phase, summed over categories: 1 with the sums when entry k is the first of its
** judge and phase, else 0. */
static int judge_phase_errors(const arb_persona_stats *ps, size_t k, size_t *calls, size_t *errors)
{
    const ps_entry *e = &ps->entries[k];
    *calls = *errors = 0;
    for (size_t j = 0; j < ps->n_entries; j++) {
        const ps_entry *o = &ps->entries[j];
        if (strcmp(o->judge, e->judge) || o->pub.phase != e->pub.phase) continue;
        if (j < k) return 0;
        *calls += o->pub.n_calls;
        *errors += o->pub.n_errors;
    }
    return 1;
}

/* ---- text --------------------------------------------------------------------------------- */

/* Number styles: a score "7.50", a signed difference "+1.50", a share "62.5%". */
typedef enum { FMT_SCORE, FMT_SIGNED, FMT_SHARE } num_style;

/* x in `width` columns in style f; "n/a" when undefined. */
static int put_value(arb__buf *b, double x, num_style f, int width)
{
    if (!isfinite(x)) return arb__buf_printf(b, "%*s", width, "n/a");
    switch (f) {
    case FMT_SIGNED: return arb__buf_printf(b, "%+*.2f", width, x);
    case FMT_SHARE: return arb__buf_printf(b, "%*.1f%%", width - 1, 100.0 * x);
    default: return arb__buf_printf(b, "%*.2f", width, x);
    }
}

/* " [lo, hi]" (style f) or nothing when undefined; padded to `width` columns either way. */
static int put_interval(arb__buf *b, const double *ci, num_style f, int width)
{
    size_t at = b->len;
    if (isfinite(ci[0]) && isfinite(ci[1]) &&
        (arb__buf_puts(b, " [") || put_value(b, ci[0], f, 0) || arb__buf_puts(b, ", ") ||
         put_value(b, ci[1], f, 0) || arb__buf_puts(b, "]")))
        return -1;
    return arb__buf_printf(b, "%*s", (int)(width > (int)(b->len - at) ? width - (int)(b->len - at) : 0), "");
}

/* An untrusted name padded (or not cut) to `width` code points. */
static int put_name(arb__buf *b, const char *name, int width)
{
    size_t at = b->len;
    if (arb__buf_put_safe(b, name)) return -1;
    for (size_t k = arb__utf8_codepoints(b->data + at, b->len - at); k < (size_t)width; k++)
        if (arb__buf_puts(b, " ")) return -1;
    return 0;
}

/* Right-aligns an untrusted name in `width` code points. */
static int put_name_right(arb__buf *b, const char *name, int width)
{
    arb__buf tmp;
    arb__buf_init(&tmp, 0);
    if (arb__buf_put_safe(&tmp, name)) {
        arb__buf_free(&tmp);
        return -1;
    }
    int rc = 0;
    for (size_t k = arb__utf8_codepoints(tmp.data, tmp.len); k < (size_t)width && !rc; k++)
        rc = arb__buf_puts(b, " ");
    rc = rc || arb__buf_puts(b, tmp.data);
    arb__buf_free(&tmp);
    return rc;
}

static int name_width(const arb_persona_row *r)
{
    size_t w = 10;
    for (size_t i = 0; i < r->n_identities; i++) {
        size_t n = arb__utf8_codepoints(r->identities[i], strlen(r->identities[i]));
        if (n + 1 > w) w = n + 1;
    }
    return w > 24 ? 24 : (int)w;
}

/* One difference matrix (row minus column), I x I. */
static int put_matrix(arb__buf *b, const arb_persona_row *r, const char *what, const double *d)
{
    int w = name_width(r), cw = w > 9 ? w : 9;
    size_t I = r->n_identities;
    if (arb__buf_puts(b, "  difference matrix, ") || arb__buf_put_safe(b, what) ||
        arb__buf_puts(b, " (row minus column)\n    ") || put_name(b, "", w))
        return -1;
    for (size_t j = 0; j < I; j++)
        if (put_name_right(b, r->identities[j], cw)) return -1;
    for (size_t i = 0; i < I; i++) {
        if (arb__buf_puts(b, "\n    ") || put_name(b, r->identities[i], w)) return -1;
        for (size_t j = 0; j < I; j++)
            if (i == j ? arb__buf_printf(b, "%*s", cw, "-") : put_value(b, d[i * I + j], FMT_SIGNED, cw))
                return -1;
    }
    return arb__buf_puts(b, "\n");
}

static int put_means(arb__buf *b, const arb_persona_row *r, int ci)
{
    int w = name_width(r), cw = ci ? 22 : 11;
    size_t M = r->n_metrics;
    if (arb__buf_printf(b, "  mean score per identity%s\n    ",
                        r->phase == 2 ? " (the candidates attributed to it)" : "") ||
        put_name(b, "identity", w))
        return -1;
    for (size_t m = 0; m <= M; m++)
        if (arb__buf_puts(b, "  ") || put_name(b, m < M ? r->metrics[m] : "combined", cw - 2))
            return -1;
    if (arb__buf_puts(b, "  n\n")) return -1;
    for (size_t i = 0; i < r->n_identities; i++) {
        if (arb__buf_puts(b, "    ") || put_name(b, r->identities[i], w)) return -1;
        size_t n = 0;
        for (size_t m = 0; m <= M; m++) {
            double x = m < M ? r->mean[i * M + m] : r->combined[i];
            const double *iv = m < M ? &r->mean_ci[2 * (i * M + m)] : &r->combined_ci[2 * i];
            if (m < M && r->n_scores[i * M + m] > n) n = r->n_scores[i * M + m];
            if (put_value(b, x, FMT_SCORE, 6) || put_interval(b, iv, FMT_SCORE, cw - 6))
                return -1;
        }
        if (arb__buf_printf(b, "  %zu\n", n)) return -1;
    }
    return 0;
}

static int put_wins(arb__buf *b, const arb_persona_row *r, int ci)
{
    int w = name_width(r);
    if (arb__buf_puts(b, "  win rate per identity: share of the pairings it was in where its "
                         "candidate was preferred (50% = parity)\n    ") ||
        put_name(b, "identity", w) ||
        arb__buf_printf(b, "%8s%*s%10s%10s\n", "rate", ci ? 18 : 0, "", "vs 50%", "won/n"))
        return -1;
    for (size_t i = 0; i < r->n_identities; i++) {
        double rate = r->win_rate[i];
        if (arb__buf_puts(b, "    ") || put_name(b, r->identities[i], w) ||
            put_value(b, rate, FMT_SHARE, 8) ||
            (ci && put_interval(b, &r->win_rate_ci[2 * i], FMT_SHARE, 18)) ||
            (isfinite(rate) ? arb__buf_printf(b, "%+6.1f pts", 100.0 * (rate - 0.5))
                            : arb__buf_printf(b, "%10s", "n/a")) ||
            arb__buf_printf(b, "%5zu/%zu\n", r->n_wins[i], r->n_pairings[i]))
            return -1;
    }
    if (arb__buf_puts(b, "  position effect (not identity): the first-shown candidate was "
                         "preferred in ") ||
        put_value(b, r->first_shown_rate, FMT_SHARE, 0) ||
        (ci && put_interval(b, r->first_shown_ci, FMT_SHARE, 0)) ||
        arb__buf_printf(b, "\n    of %zu valid calls (50%% = none); every pairing is judged in both "
                           "positions, so this\n    order effect cancels out of the win rates\n",
                        r->n_pairs))
        return -1;
    return 0;
}

/* p as "0.0123" or "<0.0001"; "n/a" when undefined. */
static int put_p(arb__buf *b, double p, int width)
{
    if (!isfinite(p)) return arb__buf_printf(b, "%*s", width, "n/a");
    if (p < 0.0001) return arb__buf_printf(b, "%*s", width, "<0.0001");
    return arb__buf_printf(b, "%*.4f", width, p);
}

static int put_chi2(arb__buf *b, const arb_persona_row *r)
{
    if (arb__buf_printf(b, "  \xcf\x87\xc2\xb2 tests of independence, identity \xc3\x97 score "
                           "level%s\n    %-14s%9s%5s%10s%10s%8s%7s  significant\n",
                        r->phase == 2 ? " (preferred: identity \xc3\x97 won/lost)" : "",
                        "metric", "chi2", "df", "p", "p_holm", "V", "n"))
        return -1;
    for (size_t t = 0; t < r->n_chi2; t++) {
        const arb_persona_chi2 *c = &r->chi2[t];
        int defined = isfinite(c->test.statistic);
        if (arb__buf_puts(b, "    ") || put_name(b, c->metric, 14) ||
            put_value(b, c->test.statistic, FMT_SCORE, 9) ||
            (defined ? arb__buf_printf(b, "%5.0f", c->test.df) : arb__buf_printf(b, "%5s", "n/a")) ||
            put_p(b, c->test.p_value, 10) || put_p(b, c->p_holm, 10) ||
            put_value(b, c->test.cramers_v, FMT_SCORE, 8) || arb__buf_printf(b, "%7zu  ", c->n) ||
            arb__buf_puts(b, c->significant == 1 ? "yes\n" : c->significant == 0 ? "no\n" : "n/a\n"))
            return -1;
    }
    for (size_t t = 0; t < r->n_chi2; t++) {
        const arb_persona_chi2 *c = &r->chi2[t];
        if (c->test.n_expected_below_5 == 0) continue;
        if (arb__buf_puts(b, "    warning: ") || arb__buf_put_safe(b, c->metric) ||
            arb__buf_printf(b, ": %zu of %zu cells have an expected count below 5; the "
                               "\xcf\x87\xc2\xb2 approximation is poor there\n",
                            c->test.n_expected_below_5, c->test.n_cells))
            return -1;
    }
    return 0;
}

static int put_entry_text(arb__buf *b, const arb_persona_row *r, int ci)
{
    if (arb__buf_puts(b, "\njudge ") || arb__buf_put_safe(b, r->judge) ||
        arb__buf_puts(b, " \xc2\xb7 category ") || arb__buf_put_safe(b, r->category) ||
        arb__buf_printf(b, " \xc2\xb7 phase %d (%s)\n  calls %zu, E %zu, scenarios %zu\n",
                        r->phase, r->phase == 1 ? "single candidate" : "contrastive pair",
                        r->n_calls, r->n_errors, r->n_scenarios))
        return -1;
    if (put_means(b, r, ci) || put_matrix(b, r, "combined", r->combined_diff)) return -1;
    size_t I = r->n_identities;
    for (size_t m = 0; m < r->n_metrics; m++)
        if (put_matrix(b, r, r->metrics[m], r->diff + m * I * I)) return -1;
    if (r->phase == 2 && put_wins(b, r, ci)) return -1;
    return put_chi2(b, r);
}

/* E per judge x phase, summed over the categories. */
static int put_errors_text(arb__buf *b, const arb_persona_stats *ps)
{
    if (arb__buf_puts(b, "\nE (calls without a valid reply, left out of every number above) per "
                         "judge \xc3\x97 phase\n"))
        return -1;
    for (size_t k = 0; k < ps->n_entries; k++) {
        const arb_persona_row *r = &ps->entries[k].pub;
        size_t calls, errors;
        if (!judge_phase_errors(ps, k, &calls, &errors)) continue;
        if (arb__buf_puts(b, "  ") || put_name(b, r->judge, 20) ||
            arb__buf_printf(b, "phase %d  E %zu of %zu calls\n", r->phase, errors, calls))
            return -1;
    }
    return 0;
}

/* The plain statement of which differences are significant. */
static int put_significance_text(arb__buf *b, const arb_persona_stats *ps)
{
    double alpha = ps->params.alpha;
    if (ps->n_significant == 0)
        return arb__buf_printf(b, "\nNo identity difference is significant at \xce\xb1 = %g after "
                                  "Holm's correction over %zu test%s: these data do not show\nthat "
                                  "the score depends on the identity (which is not proof that "
                                  "it never does).\n",
                               alpha, ps->n_tests, ps->n_tests == 1 ? "" : "s");
    if (arb__buf_printf(b, "\nSignificant at \xce\xb1 = %g after Holm's correction over %zu "
                           "tests (the score depends on the identity):\n",
                        alpha, ps->n_tests))
        return -1;
    for (size_t k = 0; k < ps->n_entries; k++) {
        const arb_persona_row *r = &ps->entries[k].pub;
        for (size_t t = 0; t < r->n_chi2; t++) {
            const arb_persona_chi2 *c = &r->chi2[t];
            if (c->significant != 1) continue;
            long hi, lo;
            extremes(r, c, &hi, &lo);
            int share = !strcmp(c->metric, PREFERRED) && r->win_rate;
            if (arb__buf_puts(b, "  ") || arb__buf_put_safe(b, r->judge) ||
                arb__buf_puts(b, " \xc2\xb7 ") || arb__buf_put_safe(b, r->category) ||
                arb__buf_printf(b, " \xc2\xb7 phase %d \xc2\xb7 ", r->phase) ||
                arb__buf_put_safe(b, share ? "win rate" : c->metric) ||
                arb__buf_puts(b, ": p_holm ") || put_p(b, c->p_holm, 0))
                return -1;
            if (hi >= 0 && lo >= 0 && hi != lo) {
                double vh = tested_value(r, c, (size_t)hi), vl = tested_value(r, c, (size_t)lo);
                if (arb__buf_puts(b, "; highest ") || arb__buf_put_safe(b, r->identities[hi]) ||
                    arb__buf_puts(b, " ") || put_value(b, vh, share ? FMT_SHARE : FMT_SCORE, 0) ||
                    arb__buf_puts(b, ", lowest ") || arb__buf_put_safe(b, r->identities[lo]) ||
                    arb__buf_puts(b, " ") || put_value(b, vl, share ? FMT_SHARE : FMT_SCORE, 0) ||
                    (share ? arb__buf_printf(b, " (%+.1f pts)", 100.0 * (vh - vl))
                           : arb__buf_printf(b, " (%+.2f)", vh - vl)))
                    return -1;
            }
            if (arb__buf_puts(b, "\n")) return -1;
        }
    }
    return 0;
}

/* One spread as text: "1.50", or n/a. */
static int put_spread(arb__buf *b, double v)
{
    return isfinite(v) ? arb__buf_printf(b, " %6.2f", v) : arb__buf_puts(b, "    n/a");
}

/* The panel before/after view: one line per panel x category x phase and spread. */
static int put_panels_text(arb__buf *b, const arb_persona_stats *ps)
{
    if (!ps->n_panels) return 0;
    if (arb__buf_puts(b, "\npanel before/after: identity spread = max - min of the identities' "
                         "combined means, mean over the agents (win-rate spread likewise); round "
                         "0 = independent scores; point estimates, no significance claim.\n"))
        return -1;
    for (size_t k = 0; k < ps->n_panels; k++) {
        const arb_persona_panel *pp = &ps->panels[k].pub;
        for (int w = 0; w < (pp->phase == 2 ? 2 : 1); w++) {
            if (arb__buf_puts(b, "  ") || arb__buf_put_safe(b, pp->panel) ||
                arb__buf_puts(b, " \xc2\xb7 ") || arb__buf_put_safe(b, pp->category) ||
                arb__buf_printf(b, " \xc2\xb7 phase %d \xc2\xb7 %s:", pp->phase,
                                w ? "win-rate spread" : "identity spread"))
                return -1;
            for (size_t r = 0; r < pp->n_rounds; r++) {
                const arb_persona_panel_round *x = &pp->rounds[r];
                if (arb__buf_printf(b, " round %d", x->round) ||
                    put_spread(b, w ? x->win_rate_spread : x->identity_spread) ||
                    arb__buf_puts(b, ","))
                    return -1;
            }
            if (arb__buf_puts(b, " consensus") ||
                put_spread(b, w ? pp->consensus_win_rate_spread : pp->consensus_spread) ||
                (!w && arb__buf_printf(b, " -> %s", pp->direction ? pp->direction : "n/a")) ||
                arb__buf_puts(b, "\n"))
                return -1;
        }
    }
    return 0;
}

/* Renders every entry as text, then the E counts and what is significant. Returns a string
** owned by the caller (arb_free), or NULL when out of memory or ps is NULL. */
/* See arbiter.h. */
const char *const arb_persona_no_logprobs_reason =
    "persona scores (0 to 10 per metric: phase 1, and each candidate's in phase 2) are JSON "
    "numbers with no verdict token, and a score's distribution cannot be read from one token: "
    "tokenizers that split digits (Llama 3, Qwen, DeepSeek) write 10 as 1 then 0, so P(\"1\") "
    "mixes 1 and 10 and an expected score would be biased at the top of the scale by the "
    "tokenizer; phase 2's \"preferred\" (candidate_1 or candidate_2) is a two-option verdict "
    "and has logprob figures (README \"Logprobs\")";

/* Phase 2's preference with logprobs: per judge x protocol x category x identity, the share of
** calls preferring the identity's candidate (argmax) next to its mean probability, over the
** calls with a distribution; "no logprobs" for a row without any. Nothing when no call asked
** for logprobs or returned them. */
static int put_preferred_logprobs_text(arb__buf *b, const arb_persona_stats *ps)
{
    int any = 0;
    for (size_t i = 0; i < ps->n_lp; i++) any |= ps->lp[i].asked > 0 || ps->lp[i].with_logprobs > 0;
    if (!any) return 0;
    if (arb__buf_puts(b, "Logprobs of phase 2's preference (P(candidate_1), P(candidate_2) at the "
                         "token where the two differ): share of the calls preferring the "
                         "identity's candidate (argmax) and its mean probability "
                         "(prob-weighted), over the calls with a distribution:\n"))
        return -1;
    for (size_t i = 0; i < ps->n_lp; i++) {
        const arb__logprob_row *r = &ps->lp[i];
        if (arb__buf_printf(b, "  %s %s %s %s: ", r->judge, r->protocol, r->candidate,
                            r->baseline))
            return -1;
        int rc = r->with_logprobs == 0
                     ? arb__buf_printf(b, "no logprobs (%s)\n",
                                       r->asked ? "asked for; the endpoint returned none, the "
                                                  "preference's token could not be read, or "
                                                  "the calls were stored before arbiter read "
                                                  "phase 2's logprobs (2026-11-27)"
                                                : "not asked for")
                     : arb__buf_printf(b, "preferred %.1f%% argmax, %.1f%% prob-weighted, other "
                                          "mass %.3f (%zu of %zu calls)\n",
                                       100 * r->argmax[0], 100 * r->weighted[0], r->other_mass,
                                       r->with_logprobs, r->judgments);
        if (rc) return -1;
    }
    return 0;
}

/* The rows of put_preferred_logprobs_text as JSON [{judge, protocol, category, identity, calls,
** logprobs_asked, with_logprobs, logprobs_available, argmax, prob_weighted, other_mass}]. */
static json_t *json_preferred_logprobs(const arb_persona_stats *ps)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < ps->n_lp; i++) {
        const arb__logprob_row *r = &ps->lp[i];
        int has = r->with_logprobs > 0;
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:b, s:o, s:o, s:o}",
                              "judge", r->judge, "protocol", r->protocol, "category", r->candidate,
                              "identity", r->baseline, "calls", (json_int_t)r->judgments,
                              "logprobs_asked", (json_int_t)r->asked, "with_logprobs",
                              (json_int_t)r->with_logprobs, "logprobs_available", has, "argmax",
                              has ? json_real(r->argmax[0]) : json_null(), "prob_weighted",
                              has ? json_real(r->weighted[0]) : json_null(), "other_mass",
                              has ? json_real(r->other_mass) : json_null());
        if (!o || json_array_append_new(a, o)) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

char *arb_persona_stats_to_text(const arb_persona_stats *ps)
{
    if (!ps) return NULL;
    const arb_persona_stats_params *p = &ps->params;
    int ci = p->bootstrap > 0;
    arb__buf b;
    arb__buf_init(&b, 0);
    if (ps->n_entries == 0) {
        if (arb__buf_puts(&b, "no persona scores in the store (arbiter persona run)\n")) goto fail;
        return arb__buf_steal(&b);
    }
    if (arb__buf_puts(&b, "persona bias (METHODS \xc2\xa7" "9): the same responses attributed to "
                          "different identities.\nMeans over the valid calls (E left out), every "
                          "repetition counted; combined = mean of the metric means.\n") ||
        (ci && arb__buf_printf(&b, "Intervals: %g%% percentile bootstrap, %zu resamples of "
                                   "scenarios, seed %llu.\n",
                               100.0 * p->ci_level, p->bootstrap, p->seed)) ||
        arb__buf_printf(&b, "\xcf\x87\xc2\xb2 p-values are Holm-adjusted (p_holm) over all %zu "
                            "tests of this report; significant when p_holm <= %g.\n",
                        ps->n_tests, p->alpha) ||
        arb__buf_printf(&b, "No logprob figures for scores: %s\n",
                        arb_persona_no_logprobs_reason) ||
        put_preferred_logprobs_text(&b, ps))
        goto fail;
    for (size_t k = 0; k < ps->n_entries; k++)
        if (put_entry_text(&b, &ps->entries[k].pub, ci)) goto fail;
    if (put_errors_text(&b, ps) || put_significance_text(&b, ps) || put_panels_text(&b, ps))
        goto fail;
    return arb__buf_steal(&b);
fail:
    arb__buf_free(&b);
    return NULL;
}

/* ---- JSON --------------------------------------------------------------------------------- */

static json_t *json_count(size_t n) { return json_integer((json_int_t)n); }

/* {"mean": x, "ci": [lo, hi] | null} */
static json_t *json_mean(double x, const double *ci)
{
    json_t *o = json_object();
    if (!o || arb__json_set(o, "mean", arb__json_metric(x)) ||
        arb__json_set(o, "ci", arb__json_interval(ci[0], ci[1]))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* obj[untrusted name] = value (taken over). 0, or -1. */
static int set_named(json_t *obj, const char *name, json_t *value)
{
    json_t *key = arb__json_name(name);
    if (!key) {
        json_decref(value);
        return -1;
    }
    int rc = arb__json_set(obj, json_string_value(key), value);
    json_decref(key);
    return rc;
}

/* Sets obj[keys[k]] = values[k] for k < n, taking every value over; on the first failure the
** rest are released. 0, or -1 (obj keeps what was set). */
static int set_all(json_t *obj, const char *const *keys, json_t **values, size_t n)
{
    int rc = obj ? 0 : -1;
    for (size_t k = 0; k < n; k++) {
        if (rc) json_decref(values[k]);
        else rc = arb__json_set(obj, keys[k], values[k]);
    }
    return rc;
}

/* Makes the value of identity i (ctx: what the caller passed on). NULL when out of memory. */
typedef json_t *(*identity_value_fn)(const arb_persona_row *r, size_t i, const void *ctx);

/* {identity: make(i)} over the identities of r. NULL when out of memory. */
static json_t *json_by_identity(const arb_persona_row *r, identity_value_fn make, const void *ctx)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < r->n_identities; i++)
        if (set_named(o, r->identities[i], make(r, i, ctx))) {
            json_decref(o);
            o = NULL;
        }
    return o;
}

/* Row i of the I x I matrix ctx: {column identity: d}. */
static json_t *matrix_row(const arb_persona_row *r, size_t i, const void *ctx)
{
    const double *d = ctx;
    json_t *row = json_object();
    for (size_t j = 0; row && j < r->n_identities; j++)
        if (set_named(row, r->identities[j], arb__json_metric(d[i * r->n_identities + j]))) {
            json_decref(row);
            row = NULL;
        }
    return row;
}

/* {metric: {"mean", "ci", "n"}} of identity i. */
static json_t *means_of(const arb_persona_row *r, size_t i, const void *ctx)
{
    (void)ctx;
    size_t M = r->n_metrics;
    json_t *per = json_object();
    for (size_t m = 0; per && m < M; m++) {
        json_t *cell = json_mean(r->mean[i * M + m], &r->mean_ci[2 * (i * M + m)]);
        if (cell && arb__json_set(cell, "n", json_count(r->n_scores[i * M + m]))) {
            json_decref(cell);
            cell = NULL;
        }
        if (set_named(per, r->metrics[m], cell)) {
            json_decref(per);
            per = NULL;
        }
    }
    return per;
}

static json_t *combined_of(const arb_persona_row *r, size_t i, const void *ctx)
{
    (void)ctx;
    return json_mean(r->combined[i], &r->combined_ci[2 * i]);
}

/* {"rate", "ci", "deviation" (rate - 0.5), "n_wins", "n_pairings"} of identity i. */
static json_t *win_of(const arb_persona_row *r, size_t i, const void *ctx)
{
    (void)ctx;
    double rate = r->win_rate[i];
    json_t *w = json_object();
    if (!w || arb__json_set(w, "rate", arb__json_metric(rate)) ||
        arb__json_set(w, "ci", arb__json_interval(r->win_rate_ci[2 * i], r->win_rate_ci[2 * i + 1])) ||
        arb__json_set(w, "deviation", arb__json_metric(rate - 0.5)) ||
        arb__json_set(w, "n_wins", json_count(r->n_wins[i])) ||
        arb__json_set(w, "n_pairings", json_count(r->n_pairings[i]))) {
        json_decref(w);
        return NULL;
    }
    return w;
}

static json_t *json_diff(const arb_persona_row *r)
{
    size_t I = r->n_identities;
    json_t *o = json_object(), *by = json_object();
    for (size_t m = 0; by && m < r->n_metrics; m++)
        if (set_named(by, r->metrics[m], json_by_identity(r, matrix_row, r->diff + m * I * I))) {
            json_decref(by);
            by = NULL;
        }
    static const char *const keys[] = {"combined", "by_metric"};
    json_t *values[] = {json_by_identity(r, matrix_row, r->combined_diff), by};
    if (set_all(o, keys, values, 2)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_position(const arb_persona_row *r)
{
    if (r->phase != 2) return json_null();
    json_t *o = json_object();
    if (!o || arb__json_set(o, "first_shown_win_rate", arb__json_metric(r->first_shown_rate)) ||
        arb__json_set(o, "ci", arb__json_interval(r->first_shown_ci[0], r->first_shown_ci[1])) ||
        arb__json_set(o, "deviation", arb__json_metric(r->first_shown_rate - 0.5)) ||
        arb__json_set(o, "n_pairs", json_count(r->n_pairs)) ||
        arb__json_set(o, "note", json_string("position, not identity: the share of valid calls "
                                             "whose first-shown candidate was preferred"))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_test(const arb_persona_chi2 *c)
{
    int defined = isfinite(c->test.statistic);
    json_t *o = json_object();
    if (!o || arb__json_set(o, "metric", arb__json_name(c->metric)) ||
        arb__json_set(o, "statistic", arb__json_metric(c->test.statistic)) ||
        arb__json_set(o, "df", defined ? json_integer((json_int_t)c->test.df) : json_null()) ||
        arb__json_set(o, "p", arb__json_metric(c->test.p_value)) ||
        arb__json_set(o, "p_holm", arb__json_metric(c->p_holm)) ||
        arb__json_set(o, "significant",
                      c->significant < 0 ? json_null() : json_boolean(c->significant)) ||
        arb__json_set(o, "cramers_v", arb__json_metric(c->test.cramers_v)) ||
        arb__json_set(o, "n", json_count(c->n)) ||
        arb__json_set(o, "n_levels", json_count(c->n_levels)) ||
        arb__json_set(o, "n_cells", json_count(c->test.n_cells)) ||
        arb__json_set(o, "n_expected_below_5", json_count(c->test.n_expected_below_5))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_entry(const arb_persona_row *r)
{
    json_t *o = json_object(), *tests = json_array();
    for (size_t t = 0; tests && t < r->n_chi2; t++)
        if (json_array_append_new(tests, json_test(&r->chi2[t]))) {
            json_decref(tests);
            tests = NULL;
        }
    static const char *const keys[] = {"judge", "category", "phase", "identities", "metrics",
                                       "n_calls", "n_errors", "n_scenarios", "means",
                                       "combined_means", "diff_matrix", "win_rate",
                                       "position_effect", "chi2"};
    json_t *values[] = {arb__json_name(r->judge), arb__json_name(r->category),
                        json_integer(r->phase), arb__json_names(r->identities, r->n_identities),
                        arb__json_names(r->metrics, r->n_metrics), json_count(r->n_calls),
                        json_count(r->n_errors), json_count(r->n_scenarios),
                        json_by_identity(r, means_of, NULL), json_by_identity(r, combined_of, NULL),
                        json_diff(r),
                        r->phase == 2 ? json_by_identity(r, win_of, NULL) : json_null(),
                        json_position(r), tests};
    if (set_all(o, keys, values, sizeof keys / sizeof keys[0])) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* [{judge, phase, n_calls, n_errors}] summed over categories. */
static json_t *json_errors(const arb_persona_stats *ps)
{
    json_t *a = json_array();
    for (size_t k = 0; a && k < ps->n_entries; k++) {
        const arb_persona_row *r = &ps->entries[k].pub;
        size_t calls, errors;
        if (!judge_phase_errors(ps, k, &calls, &errors)) continue;
        json_t *o = json_object();
        if (!o || arb__json_set(o, "judge", arb__json_name(r->judge)) ||
            arb__json_set(o, "phase", json_integer(r->phase)) ||
            arb__json_set(o, "n_calls", json_count(calls)) ||
            arb__json_set(o, "n_errors", json_count(errors)) || json_array_append_new(a, o)) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

/* [{judge, category, phase, metric, p_holm, highest, lowest, difference}] of the significant
** tests: the plain statement as data. */
static json_t *json_significant(const arb_persona_stats *ps)
{
    json_t *a = json_array();
    for (size_t k = 0; a && k < ps->n_entries; k++) {
        const arb_persona_row *r = &ps->entries[k].pub;
        for (size_t t = 0; a && t < r->n_chi2; t++) {
            const arb_persona_chi2 *c = &r->chi2[t];
            if (c->significant != 1) continue;
            long hi, lo;
            extremes(r, c, &hi, &lo);
            int both = hi >= 0 && lo >= 0;
            json_t *o = json_object();
            if (!o || arb__json_set(o, "judge", arb__json_name(r->judge)) ||
                arb__json_set(o, "category", arb__json_name(r->category)) ||
                arb__json_set(o, "phase", json_integer(r->phase)) ||
                arb__json_set(o, "metric", arb__json_name(c->metric)) ||
                arb__json_set(o, "p_holm", arb__json_metric(c->p_holm)) ||
                arb__json_set(o, "highest", both ? arb__json_name(r->identities[hi]) : json_null()) ||
                arb__json_set(o, "lowest", both ? arb__json_name(r->identities[lo]) : json_null()) ||
                arb__json_set(o, "difference",
                              both ? arb__json_metric(tested_value(r, c, (size_t)hi) -
                                                      tested_value(r, c, (size_t)lo))
                                   : json_null()) ||
                json_array_append_new(a, o)) {
                json_decref(a);
                a = NULL;
            }
        }
    }
    return a;
}

/* [{panel, members, category, phase, rounds: [{round, identity_spread, win_rate_spread}],
** consensus_spread, consensus_win_rate_spread, direction}]: the panel before/after view. */
static json_t *json_panels(const arb_persona_stats *ps)
{
    json_t *a = json_array();
    for (size_t k = 0; a && k < ps->n_panels; k++) {
        const arb_persona_panel *pp = &ps->panels[k].pub;
        json_t *rounds = json_array();
        for (size_t r = 0; rounds && r < pp->n_rounds; r++) {
            const arb_persona_panel_round *x = &pp->rounds[r];
            json_t *o = json_object();
            if (!o || arb__json_set(o, "round", json_integer(x->round)) ||
                arb__json_set(o, "identity_spread", arb__json_metric(x->identity_spread)) ||
                arb__json_set(o, "win_rate_spread", arb__json_metric(x->win_rate_spread)) ||
                json_array_append_new(rounds, o)) {
                json_decref(rounds);
                rounds = NULL;
            }
        }
        static const char *const keys[] = {"panel", "members", "category", "phase", "rounds",
                                           "consensus_spread", "consensus_win_rate_spread",
                                           "direction"};
        json_t *values[] = {arb__json_name(pp->panel), arb__json_names(pp->members, pp->n_members),
                            arb__json_name(pp->category), json_integer(pp->phase), rounds,
                            arb__json_metric(pp->consensus_spread),
                            arb__json_metric(pp->consensus_win_rate_spread),
                            pp->direction ? json_string(pp->direction) : json_null()};
        json_t *o = json_object();
        if (set_all(o, keys, values, sizeof keys / sizeof keys[0])) {
            json_decref(o);
            o = NULL;
        }
        if (!o || json_array_append_new(a, o)) { /* append_new releases o when it fails */
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

/* 1 when some call's preference has a distribution. */
static int lp_available(const arb_persona_stats *ps)
{
    for (size_t i = 0; i < ps->n_lp; i++)
        if (ps->lp[i].with_logprobs) return 1;
    return 0;
}

/* Renders as pretty-printed JSON (keys in README, undefined values null). Returns a string
** owned by the caller (arb_free), or NULL when out of memory or ps is NULL. */
char *arb_persona_stats_to_json(const arb_persona_stats *ps)
{
    if (!ps) return NULL;
    const arb_persona_stats_params *p = &ps->params;
    char *text = NULL;
    json_t *root = json_object(), *boot = json_null(), *entries = json_array();
    if (p->bootstrap > 0) {
        json_decref(boot);
        boot = json_object();
        if (!boot || arb__json_set(boot, "resamples", json_count(p->bootstrap)) ||
            arb__json_set(boot, "seed", json_integer((json_int_t)p->seed)) ||
            arb__json_set(boot, "level", json_real(p->ci_level)) ||
            arb__json_set(boot, "unit", json_string("scenario"))) {
            json_decref(boot);
            boot = NULL;
        }
    }
    for (size_t k = 0; entries && k < ps->n_entries; k++)
        if (json_array_append_new(entries, json_entry(&ps->entries[k].pub))) {
            json_decref(entries);
            entries = NULL;
        }
    static const char *const keys[] = {"arbiter_version", "category", "alpha", "bootstrap",
                                       "n_tests", "n_significant", "entries", "errors",
                                       "significant", "panels", "logprobs"};
    json_t *values[] = {json_string(ARB_VERSION),
                        ps->category ? arb__json_name(ps->category) : json_null(),
                        json_real(p->alpha), boot, json_count(ps->n_tests),
                        json_count(ps->n_significant), entries, json_errors(ps),
                        json_significant(ps), json_panels(ps),
                        json_pack("{s:b, s:s, s:o}", "available", lp_available(ps),
                                  "reason", arb_persona_no_logprobs_reason, "preferred",
                                  json_preferred_logprobs(ps))};
    if (set_all(root, keys, values, sizeof keys / sizeof keys[0])) {
        json_decref(root);
        return NULL;
    }
    /* 15 significant digits: 0.1 prints as 0.1, not 0.10000000000000001 */
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(root);
    return text;
}
