/*
** agreement.c -- judges compared with each other (METHODS §5): the mutual agreement of every
** pair of judges on the side-by-side instances they share, with ties included and excluded,
** and the disagreement histogram over the instances that every judge judged. A debate's final
** verdicts (METHODS §2.5, protocols "soft"/"hard") take part as one more judge.
**
** An instance is one (item, candidate, baseline, template, option mode, order, repetition):
** the same prompt shown to different judges. Two judges agree on an instance when they gave
** the same position verdict; E (no valid verdict) equals nothing, not even another E (as in
** §3's Con@ABCD). "Ties excluded" counts only the instances where both judges said A or B.
**
** Invariants: judges are reported in byte order of their names (strcmp), whatever order the
** store returns them in; the matrices are symmetric; a share with a zero denominator is NAN
** (null in JSON, "n/a" in text). Work is O(rows log rows): strings are interned to integers
** and the judgments sorted once by instance; for a million rows this takes a few tenths of a
** second, and reading the rows from SQLite takes longer than all of it (about 2 s in all).
**
** By family (params.by_family; families from the store's families table): the same
** comparisons pooled over pairs of judges -- within a family, across families, per family pair
** -- each (instance, pair of judges) counting once, with percentile bootstrap intervals over
** items; and the family preference, §6's self-enhancement with "own answers" widened to "answers
** of the judge's family" (family_preference below). Judges without a family take part in
** neither and are counted.
**
** Not here: agreement with human labels (§4), chance-corrected coefficients (stats.c).
*/
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One stored judgment, its strings replaced by interned ids. */
typedef struct ag_judgment {
    uint32_t item, candidate, baseline, template_name; /* ids in the intern table */
    int32_t options, order, rep;
    uint32_t judge; /* id in the judge intern table (arrival order) */
    char verdict;   /* 'A'..'D', anything else counts as 'E' */
} ag_judgment;

/* Open-addressing table of distinct strings; ids are indices into strs (owned). */
typedef struct ag_intern {
    char **strs;
    size_t n, cap_strs;
    uint32_t *slots; /* id + 1; 0 = empty */
    size_t n_slots;  /* power of two */
} ag_intern;

struct arb_agreement {
    size_t n_judges;
    char **judges;          /* sorted by name (owned) */
    size_t *n_own;          /* instances judged by judge i */
    size_t *n_own_ab;       /* of which with verdict A or B */
    size_t *n_common;       /* K x K: instances judged by both i and j */
    size_t *n_same;         /* K x K: of which with the same valid verdict */
    size_t *n_common_ab;    /* K x K: instances where both said A or B */
    size_t *n_same_ab;      /* K x K: of which the same */
    size_t n_instances;     /* distinct instances */
    size_t n_all;           /* instances judged by every judge (disagreement base) */
    size_t *histogram;      /* K entries: instances with d disagreeing judges, d = 0..K-1 */
    /* by family (NULL / 0 unless asked) */
    int by_family;
    size_t bootstrap;
    double ci_level;
    size_t n_families;
    char **families;          /* sorted (owned) */
    char **judge_family;      /* per judge: its family (owned) or NULL */
    size_t n_no_family;
    arb_agreement_pool *pools; /* n_families^2 family pairs (f1 <= f2), within, across, diff */
    arb__family_prefs prefs;
};

/* Sums per (item, pool) of the agreement by family. */
enum { FS_COMMON, FS_SAME, FS_COMMON_AB, FS_SAME_AB, FS__COUNT };

/* ---- interning ---------------------------------------------------------------------------- */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static void intern_free(ag_intern *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->strs[i]);
    free(t->strs);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static int intern_rehash(ag_intern *t, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots) return -1;
    for (size_t id = 0; id < t->n; id++) {
        size_t at = (size_t)fnv1a(t->strs[id]) & (n_slots - 1);
        while (slots[at]) at = (at + 1) & (n_slots - 1);
        slots[at] = (uint32_t)(id + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

/* Returns the id of s (copied on first sight), or -1 when out of memory or full. */
static int64_t intern(ag_intern *t, const char *s)
{
    if (!s) s = "";
    if ((t->n + 1) * 2 > t->n_slots && intern_rehash(t, t->n_slots ? t->n_slots * 2 : 64))
        return -1;
    size_t at = (size_t)fnv1a(s) & (t->n_slots - 1);
    while (t->slots[at]) {
        uint32_t id = t->slots[at] - 1;
        if (strcmp(t->strs[id], s) == 0) return id;
        at = (at + 1) & (t->n_slots - 1);
    }
    if (t->n >= UINT32_MAX - 1) return -1;
    if (t->n == t->cap_strs) {
        size_t cap = t->cap_strs ? t->cap_strs * 2 : 64;
        char **strs = realloc(t->strs, cap * sizeof *strs);
        if (!strs) return -1;
        t->strs = strs;
        t->cap_strs = cap;
    }
    char *copy = arb__strdup(s);
    if (!copy) return -1;
    t->strs[t->n] = copy;
    t->slots[at] = (uint32_t)(t->n + 1);
    return (int64_t)t->n++;
}

/* ---- reading the store -------------------------------------------------------------------- */

typedef struct ag_walk {
    ag_intern strings; /* item ids, model names, template names */
    ag_intern judges;
    ag_judgment *rows;
    size_t n_rows, cap_rows;
    /* the last strings seen per field: rows come grouped, so most lookups stop here */
    int64_t last_id[4];
    int nomem;
} ag_walk;

/* Interns s for field f, trying the field's last string first. */
static int64_t intern_field(ag_walk *w, int f, const char *s)
{
    if (!s) s = "";
    if (w->last_id[f] >= 0 && strcmp(w->strings.strs[w->last_id[f]], s) == 0)
        return w->last_id[f];
    int64_t id = intern(&w->strings, s);
    w->last_id[f] = id;
    return id;
}

static int on_row(void *ud, const arb__pairwise_row *p)
{
    ag_walk *w = ud;
    if (w->n_rows == w->cap_rows) {
        size_t cap = w->cap_rows ? w->cap_rows * 2 : 1024;
        ag_judgment *rows = realloc(w->rows, cap * sizeof *rows);
        if (!rows) goto nomem;
        w->rows = rows;
        w->cap_rows = cap;
    }
    int64_t item = intern_field(w, 0, p->item_id);
    int64_t cand = intern_field(w, 1, p->candidate);
    int64_t base = intern_field(w, 2, p->baseline);
    int64_t tpl = intern_field(w, 3, p->template_name);
    int64_t judge = intern(&w->judges, p->judge_name);
    if (item < 0 || cand < 0 || base < 0 || tpl < 0 || judge < 0) goto nomem;
    ag_judgment *j = &w->rows[w->n_rows++];
    j->item = (uint32_t)item;
    j->candidate = (uint32_t)cand;
    j->baseline = (uint32_t)base;
    j->template_name = (uint32_t)tpl;
    j->options = p->options;
    j->order = p->order;
    j->rep = p->rep;
    j->judge = (uint32_t)judge;
    j->verdict = p->position_verdict;
    return 0;
nomem:
    w->nomem = 1;
    return 1;
}

#define AG_CMP(field)                                                                          \
    if (a->field != b->field) return a->field < b->field ? -1 : 1
/* Orders judgments by instance, then judge (the order itself has no meaning beyond that). */
static int cmp_judgment(const void *x, const void *y)
{
    const ag_judgment *a = x, *b = y;
    AG_CMP(item);
    AG_CMP(candidate);
    AG_CMP(baseline);
    AG_CMP(template_name);
    AG_CMP(options);
    AG_CMP(order);
    AG_CMP(rep);
    AG_CMP(judge);
    return 0;
}
#undef AG_CMP

static int same_instance(const ag_judgment *a, const ag_judgment *b)
{
    return a->item == b->item && a->candidate == b->candidate && a->baseline == b->baseline &&
           a->template_name == b->template_name && a->options == b->options &&
           a->order == b->order && a->rep == b->rep;
}

static char norm_verdict(char v) { return (v >= 'A' && v <= 'D') ? v : 'E'; }
static int is_ab(char v) { return v == 'A' || v == 'B'; }

/* Sorts judge names; rank[id] receives the sorted position of judge id. */
typedef struct ag_name_idx {
    const char *name;
    size_t id;
} ag_name_idx;
static int cmp_name_idx(const void *x, const void *y)
{
    return strcmp(((const ag_name_idx *)x)->name, ((const ag_name_idx *)y)->name);
}

/* Allocates the result arrays for k judges. 0 ok, -1 out of memory. */
static int alloc_result(arb_agreement *ag, size_t k)
{
    ag->n_judges = k;
    size_t kk = k * k;
    ag->judges = calloc(k ? k : 1, sizeof *ag->judges);
    ag->n_own = calloc(k ? k : 1, sizeof *ag->n_own);
    ag->n_own_ab = calloc(k ? k : 1, sizeof *ag->n_own_ab);
    ag->histogram = calloc(k ? k : 1, sizeof *ag->histogram);
    ag->n_common = calloc(kk ? kk : 1, sizeof *ag->n_common);
    ag->n_same = calloc(kk ? kk : 1, sizeof *ag->n_same);
    ag->n_common_ab = calloc(kk ? kk : 1, sizeof *ag->n_common_ab);
    ag->n_same_ab = calloc(kk ? kk : 1, sizeof *ag->n_same_ab);
    return (ag->judges && ag->n_own && ag->n_own_ab && ag->histogram && ag->n_common &&
            ag->n_same && ag->n_common_ab && ag->n_same_ab)
               ? 0
               : -1;
}

/* Counts one instance: judges[0..m) (sorted positions) with their verdicts. */
static void count_instance(arb_agreement *ag, const size_t *judges, const char *verdicts,
                           size_t m)
{
    size_t k = ag->n_judges;
    ag->n_instances++;
    for (size_t a = 0; a < m; a++) {
        size_t i = judges[a];
        ag->n_own[i]++;
        if (is_ab(verdicts[a])) ag->n_own_ab[i]++;
        for (size_t b = a + 1; b < m; b++) {
            size_t j = judges[b];
            /* §5 mutual agreement: identical verdicts, E equal to nothing */
            int same = verdicts[a] == verdicts[b] && verdicts[a] != 'E';
            int both_ab = is_ab(verdicts[a]) && is_ab(verdicts[b]);
            ag->n_common[i * k + j]++;
            ag->n_common[j * k + i]++;
            if (same) {
                ag->n_same[i * k + j]++;
                ag->n_same[j * k + i]++;
            }
            if (both_ab) {
                ag->n_common_ab[i * k + j]++;
                ag->n_common_ab[j * k + i]++;
                if (same) {
                    ag->n_same_ab[i * k + j]++;
                    ag->n_same_ab[j * k + i]++;
                }
            }
        }
    }
    /* §5 disagreement, over the instances every judge judged (each judge at most once: the
    ** store is unique on judge and instance). The majority verdict is the most frequent one;
    ** here E counts as a verdict of its own, so judges who all failed do not disagree. When
    ** two verdicts share the top count either is the majority: the count is the same. */
    if (k >= 2 && m == k) {
        size_t counts[5] = {0};
        size_t top = 0;
        for (size_t a = 0; a < m; a++) {
            size_t c = ++counts[verdicts[a] - 'A'];
            if (c > top) top = c;
        }
        ag->histogram[k - top]++;
        ag->n_all++;
    }
}

/* ---- by family ---------------------------------------------------------------------------- */

/* What the family pass accumulates while the instances are counted. */
typedef struct ag_family_pass {
    size_t n_fam, n_pools;   /* pools: n_fam^2 family pairs, then within, then across */
    int64_t *fam_of;         /* per judge (sorted position): family index, -1 none */
    double *agg;             /* n_units x n_pools x FS__COUNT */
    size_t n_units, cap_units;
    uint32_t unit_item;      /* item of the last unit */
    size_t *n_inst;          /* per pool, then one more: instances touching within or across */
    uint8_t *touched;        /* per pool, scratch */
} ag_family_pass;

/* Counts one instance of item for the family pools. 0 ok, -1 out of memory. */
static int count_family(ag_family_pass *fp, uint32_t item, const size_t *judges,
                        const char *verdicts, size_t m)
{
    size_t np = fp->n_pools, within = np - 2, across = np - 1;
    double *row = NULL;
    memset(fp->touched, 0, np);
    for (size_t a = 0; a < m; a++) {
        int64_t fa = fp->fam_of[judges[a]];
        if (fa < 0) continue;
        for (size_t b = a + 1; b < m; b++) {
            int64_t fb = fp->fam_of[judges[b]];
            if (fb < 0) continue;
            if (!row) {
                if (fp->n_units == 0 || fp->unit_item != item) {
                    if (fp->n_units == fp->cap_units) {
                        size_t cap = fp->cap_units ? 2 * fp->cap_units : 64;
                        double *agg = realloc(fp->agg, cap * np * FS__COUNT * sizeof *agg);
                        if (!agg) return -1;
                        fp->agg = agg;
                        fp->cap_units = cap;
                    }
                    memset(fp->agg + fp->n_units * np * FS__COUNT, 0,
                           np * FS__COUNT * sizeof *fp->agg);
                    fp->n_units++;
                    fp->unit_item = item;
                }
                row = fp->agg + (fp->n_units - 1) * np * FS__COUNT;
            }
            size_t lo = (size_t)(fa < fb ? fa : fb), hi = (size_t)(fa < fb ? fb : fa);
            size_t pools[2] = {lo * fp->n_fam + hi, fa == fb ? within : across};
            int same = verdicts[a] == verdicts[b] && verdicts[a] != 'E';
            int both_ab = is_ab(verdicts[a]) && is_ab(verdicts[b]);
            for (int x = 0; x < 2; x++) {
                double *c = row + pools[x] * FS__COUNT;
                c[FS_COMMON] += 1;
                c[FS_SAME] += same;
                c[FS_COMMON_AB] += both_ab;
                c[FS_SAME_AB] += both_ab && same;
                fp->touched[pools[x]] = 1;
            }
        }
    }
    for (size_t x = 0; x < np; x++) fp->n_inst[x] += fp->touched[x];
    fp->n_inst[np] += fp->touched[within] || fp->touched[across];
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Reads the judges' families into ag (sorted family list, family per judge) and prepares fp.
** 0 ok, -1 out of memory. */
static int family_setup(arb_agreement *ag, const arb__families *fam, ag_family_pass *fp)
{
    size_t k = ag->n_judges, nf = 0;
    ag->judge_family = calloc(k ? k : 1, sizeof *ag->judge_family);
    ag->families = calloc(k ? k : 1, sizeof *ag->families);
    fp->fam_of = calloc(k ? k : 1, sizeof *fp->fam_of);
    if (!ag->judge_family || !ag->families || !fp->fam_of) return -1;
    for (size_t i = 0; i < k; i++) {
        const char *f = arb__families_of(fam, "judge", ag->judges[i]);
        if (!f) {
            ag->n_no_family++;
            continue;
        }
        if (!(ag->judge_family[i] = arb__strdup(f))) return -1;
        size_t j = 0;
        while (j < nf && strcmp(ag->families[j], f)) j++;
        if (j == nf && !(ag->families[nf++] = arb__strdup(f))) return -1;
    }
    qsort(ag->families, nf, sizeof *ag->families, cmp_str);
    ag->n_families = nf;
    for (size_t i = 0; i < k; i++) {
        fp->fam_of[i] = -1;
        for (size_t j = 0; ag->judge_family[i] && j < nf; j++)
            if (!strcmp(ag->families[j], ag->judge_family[i])) fp->fam_of[i] = (int64_t)j;
    }
    fp->n_fam = nf;
    fp->n_pools = nf * nf + 2;
    fp->n_inst = calloc(fp->n_pools + 1, sizeof *fp->n_inst);
    fp->touched = calloc(fp->n_pools, 1);
    ag->pools = calloc(fp->n_pools + 1, sizeof *ag->pools);
    return fp->n_inst && fp->touched && ag->pools ? 0 : -1;
}

/* Turns the family pass into ag->pools: pooled agreements and their bootstrap intervals over
** items (§5 mutual agreement pooled; stats.c's pooled ratios). ARB_OK or ARB_NOMEM. */
static arb_status family_finish(arb_agreement *ag, const ag_family_pass *fp,
                                const arb_agreement_params *p)
{
    size_t np = fp->n_pools, n_stats = 2 * np + 2, k = ag->n_judges;
    arb__ratio_stat *ratios = calloc(n_stats, sizeof *ratios);
    double *est = calloc(3 * n_stats, sizeof *est);
    arb_status st = ARB_NOMEM;
    if (!ratios || !est) goto done;
    for (size_t x = 0; x < np; x++) {
        ratios[2 * x] = (arb__ratio_stat){x * FS__COUNT + FS_SAME, x * FS__COUNT + FS_COMMON, 0, 0, 0};
        ratios[2 * x + 1] =
            (arb__ratio_stat){x * FS__COUNT + FS_SAME_AB, x * FS__COUNT + FS_COMMON_AB, 0, 0, 0};
    }
    size_t w = (np - 2) * FS__COUNT, a = (np - 1) * FS__COUNT;
    ratios[2 * np] = (arb__ratio_stat){w + FS_SAME, w + FS_COMMON, 1, a + FS_SAME, a + FS_COMMON};
    ratios[2 * np + 1] =
        (arb__ratio_stat){w + FS_SAME_AB, w + FS_COMMON_AB, 1, a + FS_SAME_AB, a + FS_COMMON_AB};
    double *lo = est + n_stats, *hi = est + 2 * n_stats;
    if ((st = arb__stat_pooled_ratios(fp->agg, fp->n_units, np * FS__COUNT, ratios, n_stats,
                                      p->bootstrap, p->seed, p->ci_level, est, lo, hi)))
        goto done;
    for (size_t x = 0; x <= np; x++) {
        arb_agreement_pool *pool = &ag->pools[x];
        pool->agreement = est[2 * x];
        pool->agreement_no_ties = est[2 * x + 1];
        pool->ci_low = lo[2 * x];
        pool->ci_high = hi[2 * x];
        pool->ci_low_no_ties = lo[2 * x + 1];
        pool->ci_high_no_ties = hi[2 * x + 1];
        pool->n_instances = fp->n_inst[x];
        if (x == np) { /* the difference: the counts of within and across together */
            pool->n_comparisons = ag->pools[np - 2].n_comparisons + ag->pools[np - 1].n_comparisons;
            pool->n_comparisons_no_ties =
                ag->pools[np - 2].n_comparisons_no_ties + ag->pools[np - 1].n_comparisons_no_ties;
            continue;
        }
        for (size_t u = 0; u < fp->n_units; u++) {
            const double *c = fp->agg + (u * np + x) * FS__COUNT;
            pool->n_comparisons += (size_t)c[FS_COMMON];
            pool->n_comparisons_no_ties += (size_t)c[FS_COMMON_AB];
        }
    }
    for (size_t i = 0; i < k; i++) {
        for (size_t j = i + 1; j < k; j++) {
            int64_t fi = fp->fam_of[i], fj = fp->fam_of[j];
            if (fi < 0 || fj < 0 || ag->n_common[i * k + j] == 0) continue;
            size_t lo_f = (size_t)(fi < fj ? fi : fj), hi_f = (size_t)(fi < fj ? fj : fi);
            ag->pools[lo_f * fp->n_fam + hi_f].n_judge_pairs++;
            ag->pools[fi == fj ? np - 2 : np - 1].n_judge_pairs++;
            ag->pools[np].n_judge_pairs++;
        }
    }
    st = ARB_OK;
done:
    free(ratios);
    free(est);
    return st;
}

/* ---- family preference -------------------------------------------------------------------- */

/* One judgment of a judge with a family, keyed by its comparison: item and the unordered pair
** lo < hi (interned ids), with the points of contestant lo (1 win, ½ tie, 0 loss). */
typedef struct fp_row {
    uint32_t item, lo, hi, judge;
    double points_lo;
} fp_row;

static int cmp_fp_row(const void *x, const void *y)
{
    const fp_row *a = x, *b = y;
    if (a->item != b->item) return a->item < b->item ? -1 : 1;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
    return (a->judge > b->judge) - (a->judge < b->judge);
}

/* Per (item, judge with a family): the points and judgments of the judge's own-family
** contestant in its own judgments and in the other families' judgments of the same
** comparisons, like self-enhancement's (peer.c). */
enum { FP_OWN_POINTS, FP_OWN_N, FP_OTHER_POINTS, FP_OTHER_N, FP__COUNT };

void arb__family_prefs_free(arb__family_prefs *prefs)
{
    if (!prefs) return;
    for (size_t i = 0; i < prefs->n; i++) {
        free((void *)(uintptr_t)prefs->v[i].judge);
        free((void *)(uintptr_t)prefs->v[i].family);
    }
    free(prefs->v);
    memset(prefs, 0, sizeof *prefs);
}

/* Adds the group rows[g0..g1) (one comparison) to the unit row agg_row for every judge of the
** group whose family has exactly one of the two contestants. */
static void prefer_group(const fp_row *rows, size_t g0, size_t g1, const char *const *judge_fam,
                         const char *fam_lo, const char *fam_hi, const size_t *subj_of,
                         double *agg_row, size_t *n_comparisons, size_t *n_own, size_t *n_others)
{
    for (size_t x = g0; x < g1; x++) {
        if (x > g0 && rows[x].judge == rows[x - 1].judge) continue; /* each judge once */
        const char *f = judge_fam[rows[x].judge];
        int lo_own = fam_lo && !strcmp(fam_lo, f), hi_own = fam_hi && !strcmp(fam_hi, f);
        if (lo_own == hi_own) continue; /* both or neither of the judge's family */
        double sum[FP__COUNT] = {0};
        for (size_t y = g0; y < g1; y++) {
            const char *fy = judge_fam[rows[y].judge];
            int own = rows[y].judge == rows[x].judge;
            if (!own && !strcmp(fy, f)) continue; /* another judge of the same family */
            double points = lo_own ? rows[y].points_lo : 1.0 - rows[y].points_lo;
            sum[own ? FP_OWN_POINTS : FP_OTHER_POINTS] += points;
            sum[own ? FP_OWN_N : FP_OTHER_N] += 1;
        }
        if (!(sum[FP_OWN_N] > 0 && sum[FP_OTHER_N] > 0)) continue;
        size_t s = subj_of[rows[x].judge];
        for (int k = 0; k < FP__COUNT; k++) agg_row[s * FP__COUNT + k] += sum[k];
        n_comparisons[s]++;
        n_own[s] += (size_t)sum[FP_OWN_N];
        n_others[s] += (size_t)sum[FP_OTHER_N];
    }
}

/* See internal.h. The win rate is per judgment (a judgment is one battle, §6): ties (C, D)
** count ½, E is left out. */
arb_status arb__family_preference_compute(arb_store *store, const arb__families *fam,
                                          const arb_agreement_params *p, arb__family_prefs *out)
{
    memset(out, 0, sizeof *out);
    arb_status st = ARB_OK;
    ag_walk w;
    memset(&w, 0, sizeof w);
    for (int f = 0; f < 4; f++) w.last_id[f] = -1;
    fp_row *rows = NULL;
    const char **judge_fam = NULL;
    size_t *subj_of = NULL, *counts = NULL;
    ag_name_idx *subj = NULL;
    double *agg = NULL, *est = NULL;
    arb__ratio_stat *ratios = NULL;
    size_t n_rows = 0, n_subj = 0, n_units = 0, cap_units = 0;

    static const char *const protocols[] = {"sbs", "tournament"};
    for (size_t i = 0; i < sizeof protocols / sizeof *protocols; i++) {
        st = arb__store_each_pairwise(store, protocols[i], on_row, &w);
        if (w.nomem) goto nomem;
        if (st != ARB_OK) goto done;
    }
    size_t nj = w.judges.n;
    judge_fam = calloc(nj ? nj : 1, sizeof *judge_fam);
    subj_of = calloc(nj ? nj : 1, sizeof *subj_of);
    subj = calloc(nj ? nj : 1, sizeof *subj);
    rows = calloc(w.n_rows ? w.n_rows : 1, sizeof *rows);
    if (!judge_fam || !subj_of || !subj || !rows) goto nomem;
    for (size_t j = 0; j < nj; j++) {
        judge_fam[j] = arb__families_of(fam, "judge", w.judges.strs[j]);
        if (judge_fam[j]) subj[n_subj++] = (ag_name_idx){w.judges.strs[j], j};
    }
    qsort(subj, n_subj, sizeof *subj, cmp_name_idx);
    for (size_t s = 0; s < n_subj; s++) subj_of[subj[s].id] = s;
    for (size_t r = 0; r < w.n_rows; r++) {
        const ag_judgment *j = &w.rows[r];
        char v = norm_verdict(j->verdict);
        if (v == 'E' || !judge_fam[j->judge]) continue;
        /* points of the candidate: A is the answer shown first */
        double cand = v == 'A' ? (j->order == 0 ? 1.0 : 0.0)
                      : v == 'B' ? (j->order == 0 ? 0.0 : 1.0)
                                 : 0.5;
        int cand_lo = j->candidate < j->baseline;
        rows[n_rows++] = (fp_row){j->item, cand_lo ? j->candidate : j->baseline,
                                  cand_lo ? j->baseline : j->candidate, j->judge,
                                  cand_lo ? cand : 1.0 - cand};
    }
    if (n_rows) qsort(rows, n_rows, sizeof *rows, cmp_fp_row);
    counts = calloc(3 * (n_subj ? n_subj : 1), sizeof *counts);
    if (!counts) goto nomem;
    size_t row_len = n_subj * FP__COUNT;
    for (size_t g0 = 0, g1; g0 < n_rows; g0 = g1) {
        for (g1 = g0 + 1; g1 < n_rows && rows[g1].item == rows[g0].item &&
                          rows[g1].lo == rows[g0].lo && rows[g1].hi == rows[g0].hi;
             g1++)
            ;
        /* a unit per item, opened when the item is new */
        if (n_units == 0 || g0 == 0 || rows[g0].item != rows[g0 - 1].item) {
            if (n_units == cap_units) {
                size_t cap = cap_units ? 2 * cap_units : 64;
                double *grown = realloc(agg, cap * (row_len ? row_len : 1) * sizeof *grown);
                if (!grown) goto nomem;
                agg = grown;
                cap_units = cap;
            }
            memset(agg + n_units * row_len, 0, row_len * sizeof *agg);
            n_units++;
        }
        prefer_group(rows, g0, g1, judge_fam,
                     arb__families_of(fam, "model", w.strings.strs[rows[g0].lo]),
                     arb__families_of(fam, "model", w.strings.strs[rows[g0].hi]), subj_of,
                     agg + (n_units - 1) * row_len, counts, counts + n_subj, counts + 2 * n_subj);
    }
    /* items where no judge had a matched comparison carry nothing: drop them (as §6's
    ** self-enhancement counts only the questions with a matched comparison) */
    size_t kept = 0;
    for (size_t u = 0; u < n_units; u++) {
        const double *row = agg + u * row_len;
        int any = 0;
        for (size_t s = 0; s < n_subj && !any; s++) any = row[s * FP__COUNT + FP_OWN_N] > 0;
        if (!any) continue;
        if (kept != u) memmove(agg + kept * row_len, row, row_len * sizeof *agg);
        kept++;
    }
    n_units = kept;

    ratios = calloc(3 * (n_subj ? n_subj : 1), sizeof *ratios);
    est = calloc(9 * (n_subj ? n_subj : 1), sizeof *est);
    out->v = calloc(n_subj ? n_subj : 1, sizeof *out->v);
    if (!ratios || !est || !out->v) goto nomem;
    for (size_t s = 0; s < n_subj; s++) {
        size_t b = s * FP__COUNT;
        ratios[3 * s] = (arb__ratio_stat){b + FP_OWN_POINTS, b + FP_OWN_N, 0, 0, 0};
        ratios[3 * s + 1] = (arb__ratio_stat){b + FP_OTHER_POINTS, b + FP_OTHER_N, 0, 0, 0};
        ratios[3 * s + 2] = (arb__ratio_stat){b + FP_OWN_POINTS, b + FP_OWN_N, 1,
                                              b + FP_OTHER_POINTS, b + FP_OTHER_N};
    }
    double *lo = est + 3 * n_subj, *hi = est + 6 * n_subj;
    if (arb__stat_pooled_ratios(agg, n_units, row_len, ratios, 3 * n_subj, p->bootstrap, p->seed,
                                p->ci_level, est, lo, hi))
        goto nomem;
    for (size_t s = 0; s < n_subj; s++) {
        arb_family_preference *fp = &out->v[s];
        fp->judge = arb__strdup(subj[s].name);
        fp->family = arb__strdup(judge_fam[subj[s].id]);
        out->n = s + 1;
        if (!fp->judge || !fp->family) goto nomem;
        fp->n_comparisons = counts[s];
        fp->n_own = counts[n_subj + s];
        fp->n_others = counts[2 * n_subj + s];
        fp->own_win_rate = est[3 * s];
        fp->others_win_rate = est[3 * s + 1];
        fp->difference = est[3 * s + 2];
        fp->ci_low = lo[3 * s + 2];
        fp->ci_high = hi[3 * s + 2];
    }
    goto done;
nomem:
    st = arb__store_fail(store, ARB_NOMEM, "family preference: out of memory");
done:
    if (st != ARB_OK) arb__family_prefs_free(out);
    free(rows);
    free(judge_fam);
    free(subj_of);
    free(subj);
    free(counts);
    free(agg);
    free(est);
    free(ratios);
    free(w.rows);
    intern_free(&w.strings);
    intern_free(&w.judges);
    return st;
}

/* Compares the judges in the store's side-by-side judgments. *out is owned by the caller
** (arb_agreement_destroy); on failure it is NULL and arb_store_errmsg(store) says why. A store
** with no judgments gives a result with no judges. */
arb_status arb_agreement_compute(arb_store *store, arb_agreement **out)
{
    return arb_agreement_compute_with(store, NULL, out);
}

/* The defaults: no family view; 1000 resamples, seed 20261123, level 0.95 for it. */
arb_agreement_params arb_agreement_default_params(void)
{
    return (arb_agreement_params){.by_family = 0, .bootstrap = 1000, .seed = 20261123ULL,
                                  .ci_level = 0.95};
}

/* arb_agreement_compute, and with params->by_family the agreement by family and the family
** preference (families read from the store). params NULL = the defaults. */
arb_status arb_agreement_compute_with(arb_store *store, const arb_agreement_params *params,
                                      arb_agreement **out)
{
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!store) return ARB_INVALID;

    arb_agreement_params p = params ? *params : arb_agreement_default_params();
    arb_status st = ARB_OK;
    ag_walk w;
    ag_family_pass fp;
    arb__families *fam = NULL;
    memset(&fp, 0, sizeof fp);
    memset(&w, 0, sizeof w);
    for (int f = 0; f < 4; f++) w.last_id[f] = -1;
    ag_name_idx *names = NULL;
    size_t *rank = NULL, *group_judges = NULL;
    char *group_verdicts = NULL;
    arb_agreement *ag = calloc(1, sizeof *ag);
    if (!ag) goto nomem;
    ag->by_family = p.by_family;
    ag->bootstrap = p.bootstrap;
    ag->ci_level = p.ci_level;
    if (p.by_family && (st = arb__families_load(store, &fam)) != ARB_OK) goto done;

    /* A debate's final verdicts (§2.5) count as one more judge, "soft(a1,a2,j)" or
    ** "hard(...)", on the same instances (agent 1's template). */
    static const char *const protocols[] = {"sbs", "soft", "hard"};
    for (size_t i = 0; i < sizeof protocols / sizeof *protocols; i++) {
        st = arb__store_each_pairwise(store, protocols[i], on_row, &w);
        if (w.nomem) goto nomem;
        if (st != ARB_OK) goto done;
    }

    size_t k = w.judges.n;
    if (alloc_result(ag, k)) goto nomem;
    names = calloc(k ? k : 1, sizeof *names);
    rank = calloc(k ? k : 1, sizeof *rank);
    group_judges = calloc(k ? k : 1, sizeof *group_judges);
    group_verdicts = calloc(k ? k : 1, 1);
    if (!names || !rank || !group_judges || !group_verdicts) goto nomem;
    for (size_t id = 0; id < k; id++) names[id] = (ag_name_idx){w.judges.strs[id], id};
    qsort(names, k, sizeof *names, cmp_name_idx);
    for (size_t pos = 0; pos < k; pos++) {
        rank[names[pos].id] = pos;
        ag->judges[pos] = w.judges.strs[names[pos].id];
        w.judges.strs[names[pos].id] = NULL; /* now owned by ag */
    }
    if (p.by_family && family_setup(ag, fam, &fp)) goto nomem;

    if (w.n_rows) qsort(w.rows, w.n_rows, sizeof *w.rows, cmp_judgment);
    for (size_t start = 0; start < w.n_rows;) {
        size_t end = start, m = 0;
        while (end < w.n_rows && same_instance(&w.rows[start], &w.rows[end])) {
            /* the store's unique key makes a judge appear once per instance; should it not,
            ** the first row stands and the repeat is ignored */
            if (m == 0 || w.rows[end].judge != w.rows[end - 1].judge) {
                group_judges[m] = rank[w.rows[end].judge];
                group_verdicts[m] = norm_verdict(w.rows[end].verdict);
                m++;
            }
            end++;
        }
        count_instance(ag, group_judges, group_verdicts, m);
        if (p.by_family && count_family(&fp, w.rows[start].item, group_judges, group_verdicts, m))
            goto nomem;
        start = end;
    }
    if (p.by_family) {
        if ((st = family_finish(ag, &fp, &p)) == ARB_NOMEM) goto nomem;
        st = arb__family_preference_compute(store, fam, &p, &ag->prefs);
    }
    goto done;

nomem:
    st = arb__store_fail(store, ARB_NOMEM, "agreement: out of memory");
done:
    arb__families_free(fam);
    free(fp.fam_of);
    free(fp.agg);
    free(fp.n_inst);
    free(fp.touched);
    free(names);
    free(rank);
    free(group_judges);
    free(group_verdicts);
    free(w.rows);
    intern_free(&w.strings);
    intern_free(&w.judges); /* strings moved to ag were set to NULL */
    if (st != ARB_OK) {
        arb_agreement_destroy(ag);
        return st;
    }
    *out = ag;
    return ARB_OK;
}

/* Frees the result and its strings. Accepts NULL. */
void arb_agreement_destroy(arb_agreement *ag)
{
    if (!ag) return;
    if (ag->judges)
        for (size_t i = 0; i < ag->n_judges; i++) free(ag->judges[i]);
    free(ag->judges);
    free(ag->n_own);
    free(ag->n_own_ab);
    free(ag->n_common);
    free(ag->n_same);
    free(ag->n_common_ab);
    free(ag->n_same_ab);
    free(ag->histogram);
    for (size_t i = 0; ag->judge_family && i < ag->n_judges; i++) free(ag->judge_family[i]);
    free(ag->judge_family);
    for (size_t f = 0; f < ag->n_families; f++) free(ag->families[f]);
    free(ag->families);
    free(ag->pools);
    arb__family_prefs_free(&ag->prefs);
    free(ag);
}

size_t arb_agreement_family_count(const arb_agreement *ag) { return ag ? ag->n_families : 0; }

const char *arb_agreement_family(const arb_agreement *ag, size_t f)
{
    return ag && f < ag->n_families ? ag->families[f] : NULL;
}

const char *arb_agreement_judge_family(const arb_agreement *ag, size_t i)
{
    return ag && ag->judge_family && i < ag->n_judges ? ag->judge_family[i] : NULL;
}

size_t arb_agreement_no_family_count(const arb_agreement *ag) { return ag ? ag->n_no_family : 0; }

arb_status arb_agreement_pool_get(const arb_agreement *ag, arb_family_pool pool, size_t f1,
                                  size_t f2, arb_agreement_pool *out)
{
    if (!ag || !out || !ag->pools) return ARB_INVALID;
    size_t nf = ag->n_families, at;
    switch (pool) {
    case ARB_POOL_WITHIN: at = nf * nf; break;
    case ARB_POOL_ACROSS: at = nf * nf + 1; break;
    case ARB_POOL_DIFFERENCE: at = nf * nf + 2; break;
    case ARB_POOL_FAMILY_PAIR:
        if (f1 >= nf || f2 >= nf) return ARB_INVALID;
        at = f1 <= f2 ? f1 * nf + f2 : f2 * nf + f1;
        break;
    default: return ARB_INVALID;
    }
    *out = ag->pools[at];
    return ARB_OK;
}

size_t arb_agreement_family_preference_count(const arb_agreement *ag)
{
    return ag ? ag->prefs.n : 0;
}

const arb_family_preference *arb_agreement_family_preference(const arb_agreement *ag, size_t i)
{
    return ag && i < ag->prefs.n ? &ag->prefs.v[i] : NULL;
}

/* Returns the number of judges (0 for NULL). */
size_t arb_agreement_judge_count(const arb_agreement *ag) { return ag ? ag->n_judges : 0; }

/* Returns judge i's name (borrowed from ag; judges are in strcmp order), or NULL. */
const char *arb_agreement_judge(const arb_agreement *ag, size_t i)
{
    return ag && i < ag->n_judges ? ag->judges[i] : NULL;
}

/* Returns the mutual agreement of judges i and j (§5). The diagonal is a judge compared with
** itself: 1 over its own instances (with ties excluded, over those where it said A or B), so
** *n_common reports how many instances the judge has; NAN when it has none. Out-of-range
** indices give NAN and *n_common = 0. */
double arb_agreement_value(const arb_agreement *ag, size_t i, size_t j, int ties_included,
                           size_t *n_common)
{
    if (n_common) *n_common = 0;
    if (!ag || i >= ag->n_judges || j >= ag->n_judges) return NAN;
    size_t n, same;
    if (i == j) {
        n = ties_included ? ag->n_own[i] : ag->n_own_ab[i];
        same = n;
    } else {
        size_t at = i * ag->n_judges + j;
        n = ties_included ? ag->n_common[at] : ag->n_common_ab[at];
        same = ties_included ? ag->n_same[at] : ag->n_same_ab[at];
    }
    if (n_common) *n_common = n;
    return n ? (double)same / (double)n : NAN;
}

/* ---- text --------------------------------------------------------------------------------- */

static int digits_of(size_t n)
{
    int d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

/* One matrix: rows and columns are judge numbers [i]; a cell is "share (n)", right-aligned,
** the diagonal "- (n)" with the judge's own count. */
static int put_matrix(arb__buf *b, const arb_agreement *ag, int ties_included, int nw)
{
    size_t k = ag->n_judges;
    int cell = 6 + 2 + nw + 1; /* "100.0%", " (", n, ")" */
    int label = 2 + digits_of(k);
    if (arb__buf_printf(b, "  %*s", label, "")) return -1;
    for (size_t j = 0; j < k; j++) {
        char head[32];
        snprintf(head, sizeof head, "[%zu]", j + 1);
        if (arb__buf_printf(b, "  %*s", cell, head)) return -1;
    }
    if (arb__buf_puts(b, "\n")) return -1;
    for (size_t i = 0; i < k; i++) {
        char head[32];
        snprintf(head, sizeof head, "[%zu]", i + 1);
        if (arb__buf_printf(b, "  %-*s", label, head)) return -1;
        for (size_t j = 0; j < k; j++) {
            size_t n;
            double v = arb_agreement_value(ag, i, j, ties_included, &n);
            char text[64];
            if (i == j) snprintf(text, sizeof text, "- (%zu)", n);
            else if (isnan(v)) snprintf(text, sizeof text, "n/a (%zu)", n);
            else snprintf(text, sizeof text, "%.1f%% (%zu)", 100.0 * v, n);
            if (arb__buf_printf(b, "  %*s", cell, text)) return -1;
        }
        if (arb__buf_puts(b, "\n")) return -1;
    }
    return 0;
}

static int put_text(arb__buf *b, const arb_agreement *ag)
{
    size_t k = ag->n_judges;
    if (k < 2) {
        if (k == 0) return arb__buf_puts(b, "no side-by-side judgments in the store: nothing to "
                                            "compare\n");
        return arb__buf_puts(b, "only one judge (") || arb__buf_put_safe(b, ag->judges[0]) ||
               arb__buf_printf(b, ", %zu instances) in the store: agreement needs at least two "
                                  "judges\n",
                               ag->n_own[0]);
    }
    size_t max_n = 1;
    for (size_t i = 0; i < k; i++)
        if (ag->n_own[i] > max_n) max_n = ag->n_own[i];
    int nw = digits_of(max_n);

    if (arb__buf_printf(b, "%zu judges on %zu side-by-side instances (item, candidate, baseline, "
                           "template, options, order, rep)\n",
                        k, ag->n_instances))
        return -1;
    for (size_t i = 0; i < k; i++) {
        if (arb__buf_printf(b, "  [%zu] ", i + 1) || arb__buf_put_safe(b, ag->judges[i]) ||
            arb__buf_printf(b, "  (%zu instances)\n", ag->n_own[i]))
            return -1;
    }
    if (arb__buf_puts(b, "\nMutual agreement, ties included: share of common instances with the "
                         "same verdict\n(E equals nothing); in brackets the common instances\n") ||
        put_matrix(b, ag, 1, nw) ||
        arb__buf_puts(b, "\nMutual agreement, ties excluded: only instances where both judges "
                         "said A or B\n") ||
        put_matrix(b, ag, 0, nw))
        return -1;

    if (arb__buf_printf(b, "\nDisagreement over the %zu instances judged by all %zu judges: how "
                           "many judges differ\nfrom the majority verdict (E counts as a verdict "
                           "of its own)\n",
                        ag->n_all, k))
        return -1;
    if (ag->n_all == 0) return arb__buf_puts(b, "  no instance was judged by every judge\n");
    int cw = digits_of(ag->n_all);
    if (cw < 5) cw = 5;
    if (arb__buf_printf(b, "  %11s  %*s  %7s  %10s\n", "disagreeing", cw, "count", "share",
                        "cumulative"))
        return -1;
    size_t cum = 0;
    for (size_t d = 0; d < k; d++) {
        cum += ag->histogram[d];
        if (arb__buf_printf(b, "  %11zu  %*zu  %6.1f%%  %9.1f%%\n", d, cw, ag->histogram[d],
                            100.0 * (double)ag->histogram[d] / (double)ag->n_all,
                            100.0 * (double)cum / (double)ag->n_all))
            return -1;
    }
    return 0;
}

/* Appends "  80.0% [70.0%, 90.0%]" (signed points for a difference), or n/a parts; the
** interval padded to a column unless last. */
static int put_share_ci(arb__buf *b, double v, double lo, double hi, int signed_points, int last)
{
    int pad = last ? 0 : 17;
    if (!isfinite(v)) return arb__buf_printf(b, "  %7s %-*s", "n/a", pad, "");
    int r = signed_points ? arb__buf_printf(b, "  %+6.1fpt", 100.0 * v)
                          : arb__buf_printf(b, "  %6.1f%%", 100.0 * v);
    if (r) return -1;
    if (!isfinite(lo) || !isfinite(hi)) return arb__buf_printf(b, " %-*s", pad, "[n/a]");
    char ci[64];
    if (signed_points) snprintf(ci, sizeof ci, "[%+.1f, %+.1f]", 100.0 * lo, 100.0 * hi);
    else snprintf(ci, sizeof ci, "[%.1f%%, %.1f%%]", 100.0 * lo, 100.0 * hi);
    return arb__buf_printf(b, " %-*s", pad, ci);
}

/* One line of a pool: label, agreement with and without ties with intervals, counts. */
static int put_pool_line(arb__buf *b, const arb_agreement_pool *pool, int signed_points)
{
    return put_share_ci(b, pool->agreement, pool->ci_low, pool->ci_high, signed_points, 0) ||
           put_share_ci(b, pool->agreement_no_ties, pool->ci_low_no_ties,
                        pool->ci_high_no_ties, signed_points, 0) ||
           arb__buf_printf(b, "  %11zu  %9zu  %11zu\n", pool->n_comparisons, pool->n_instances,
                           pool->n_judge_pairs);
}

static int put_family_text(arb__buf *b, const arb_agreement *ag)
{
    size_t nf = ag->n_families, np = nf * nf;
    int level = (int)lround(100.0 * ag->ci_level);
    if (arb__buf_puts(b, "\nAgreement by judge family (METHODS \xc2\xa7" "5): mutual agreement pooled "
                         "over pairs of judges,\nevery (instance, pair of judges) comparison "
                         "counting once;\n") ||
        (ag->bootstrap ? arb__buf_printf(b, "%d%% percentile bootstrap intervals over items "
                                            "(%zu resamples)\n",
                                         level, ag->bootstrap)
                       : arb__buf_puts(b, "no intervals (--bootstrap 0)\n")))
        return -1;
    for (size_t i = 0; i < ag->n_judges; i++)
        if (arb__buf_printf(b, "  [%zu] ", i + 1) || arb__buf_put_safe(b, ag->judges[i]) ||
            arb__buf_puts(b, "  family ") ||
            (ag->judge_family[i] ? arb__buf_put_safe(b, ag->judge_family[i])
                                 : arb__buf_puts(b, "(no family)")) ||
            arb__buf_puts(b, "\n"))
            return -1;
    if (ag->n_no_family &&
        arb__buf_printf(b, "  %zu judge%s without a family: left out of the figures below\n",
                        ag->n_no_family, ag->n_no_family == 1 ? "" : "s"))
        return -1;
    if (nf == 0)
        return arb__buf_puts(b, "  no judge has a family (give family: in the judges file or "
                                "judge_family in an import)\n");
    if (arb__buf_printf(b, "  %-24s  %7s %-17s  %7s %-17s  %11s  %9s  %11s\n", "", "agree",
                        "interval", "no ties", "interval", "comparisons", "instances",
                        "judge pairs"))
        return -1;
    static const char *const labels[3] = {"within a family", "across families",
                                          "within - across"};
    for (int x = 0; x < 3; x++)
        if (arb__buf_printf(b, "  %-24s", labels[x]) || put_pool_line(b, &ag->pools[np + (size_t)x], x == 2))
            return -1;
    if (arb__buf_puts(b, "  (within - across in percentage points)\n\nFamily x family\n")) return -1;
    for (size_t f1 = 0; f1 < nf; f1++) {
        for (size_t f2 = f1; f2 < nf; f2++) {
            arb__buf cell;
            arb__buf_init(&cell, 0);
            int bad = arb__buf_put_safe(&cell, ag->families[f1]) || arb__buf_puts(&cell, " x ") ||
                      arb__buf_put_safe(&cell, ag->families[f2]);
            char *label = bad ? NULL : arb__buf_steal(&cell);
            if (bad) arb__buf_free(&cell);
            bad = !label || arb__buf_printf(b, "  %-24s", label) ||
                  put_pool_line(b, &ag->pools[f1 * nf + f2], 0);
            free(label);
            if (bad) return -1;
        }
    }

    if (arb__buf_puts(b, "\nFamily preference (METHODS \xc2\xa7" "6 self-enhancement by family): "
                         "the judge's win rate for the\ncontestant of its own family minus the "
                         "win rate judges of other families give in the\nsame comparisons (item "
                         "and pair); win rate per judgment: 1 win, 1/2 tie (C or D), 0 loss,\nE "
                         "left out; only comparisons with exactly one contestant of the judge's "
                         "family\n"))
        return -1;
    if (ag->prefs.n == 0) return arb__buf_puts(b, "  no judge with a family\n");
    if (arb__buf_printf(b, "  %-20s  %-12s  %11s  %7s  %7s  %8s %s\n", "judge", "family",
                        "comparisons", "own", "others", "diff", "interval"))
        return -1;
    for (size_t i = 0; i < ag->prefs.n; i++) {
        const arb_family_preference *fp = &ag->prefs.v[i];
        arb__buf name, fam;
        arb__buf_init(&name, 0);
        arb__buf_init(&fam, 0);
        int bad = arb__buf_put_safe(&name, fp->judge) || arb__buf_put_safe(&fam, fp->family);
        char *nm = arb__buf_steal(&name), *fm = arb__buf_steal(&fam);
        bad = bad || !nm || !fm || arb__buf_printf(b, "  %-20s  %-12s  %11zu", nm, fm, fp->n_comparisons);
        free(nm);
        free(fm);
        if (bad) return -1;
        if (!isfinite(fp->difference)) {
            if (arb__buf_printf(b, "  %7s  %7s  %8s\n", "n/a", "n/a", "n/a")) return -1;
            continue;
        }
        if (arb__buf_printf(b, "  %6.1f%%  %6.1f%%", 100.0 * fp->own_win_rate,
                            100.0 * fp->others_win_rate) ||
            put_share_ci(b, fp->difference, fp->ci_low, fp->ci_high, 1, 1) ||
            arb__buf_puts(b, "\n"))
            return -1;
    }
    return 0;
}

/* Renders the judges, the two agreement matrices and the disagreement histogram as text.
** Returns a string owned by the caller (arb_free), or NULL when out of memory or ag is NULL. */
char *arb_agreement_to_text(const arb_agreement *ag)
{
    if (!ag) return NULL;
    arb__buf b;
    arb__buf_init(&b, 0);
    if (put_text(&b, ag) || (ag->by_family && put_family_text(&b, ag))) {
        arb__buf_free(&b);
        return NULL;
    }
    return arb__buf_steal(&b);
}

/* ---- JSON --------------------------------------------------------------------------------- */


/* Appends to arr (stolen value); returns nonzero on failure. */
static int append(json_t *arr, json_t *v) { return !v || json_array_append_new(arr, v); }

static json_t *json_pair(const arb_agreement *ag, size_t i, size_t j)
{
    size_t n_all, n_ab;
    double all = arb_agreement_value(ag, i, j, 1, &n_all);
    double ab = arb_agreement_value(ag, i, j, 0, &n_ab);
    json_t *o = json_object();
    if (!o) return NULL;
    if (json_object_set_new(o, "judge1", arb__json_name(ag->judges[i])) ||
        json_object_set_new(o, "judge2", arb__json_name(ag->judges[j])) ||
        json_object_set_new(o, "n_common", json_integer((json_int_t)n_all)) ||
        json_object_set_new(o, "agreement", arb__json_metric(all)) ||
        json_object_set_new(o, "n_common_no_ties", json_integer((json_int_t)n_ab)) ||
        json_object_set_new(o, "agreement_no_ties", arb__json_metric(ab))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_disagreement(const arb_agreement *ag)
{
    size_t k = ag->n_judges;
    json_t *o = json_object();
    json_t *hist = json_array();
    if (!o || !hist) goto fail;
    double n = (double)ag->n_all;
    size_t cum = 0;
    for (size_t d = 0; d < k; d++) {
        cum += ag->histogram[d];
        json_t *h = json_object();
        if (!h) goto fail;
        if (json_object_set_new(h, "disagreeing", json_integer((json_int_t)d)) ||
            json_object_set_new(h, "count", json_integer((json_int_t)ag->histogram[d])) ||
            json_object_set_new(h, "share",
                                arb__json_metric(ag->n_all ? (double)ag->histogram[d] / n : NAN)) ||
            json_object_set_new(h, "cumulative_share",
                                arb__json_metric(ag->n_all ? (double)cum / n : NAN))) {
            json_decref(h);
            goto fail;
        }
        if (append(hist, h)) goto fail;
    }
    if (json_object_set_new(o, "n_instances", json_integer((json_int_t)ag->n_all)) ||
        json_object_set_new(o, "n_judges", json_integer((json_int_t)k)))
        goto fail;
    if (json_object_set_new(o, "histogram", hist)) {
        hist = NULL;
        goto fail;
    }
    return o;
fail:
    json_decref(hist);
    json_decref(o);
    return NULL;
}

static json_t *json_pool(const arb_agreement_pool *pool)
{
    json_t *o = json_object();
    if (!o || arb__json_set(o, "agreement", arb__json_metric(pool->agreement)) ||
        arb__json_set(o, "agreement_no_ties", arb__json_metric(pool->agreement_no_ties)) ||
        arb__json_set(o, "n_instances", json_integer((json_int_t)pool->n_instances)) ||
        arb__json_set(o, "n_comparisons", json_integer((json_int_t)pool->n_comparisons)) ||
        arb__json_set(o, "n_comparisons_no_ties",
                      json_integer((json_int_t)pool->n_comparisons_no_ties)) ||
        arb__json_set(o, "n_judge_pairs", json_integer((json_int_t)pool->n_judge_pairs)) ||
        arb__json_set(o, "ci_low", arb__json_metric(pool->ci_low)) ||
        arb__json_set(o, "ci_high", arb__json_metric(pool->ci_high)) ||
        arb__json_set(o, "ci_low_no_ties", arb__json_metric(pool->ci_low_no_ties)) ||
        arb__json_set(o, "ci_high_no_ties", arb__json_metric(pool->ci_high_no_ties))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The by_family object (keys in README). */
static json_t *json_by_family(const arb_agreement *ag)
{
    size_t nf = ag->n_families, np = nf * nf;
    json_t *o = json_object(), *fams = json_array(), *none = json_array(), *matrix = json_array();
    if (!o || !fams || !none || !matrix) goto fail;
    for (size_t f = 0; f < nf; f++) {
        json_t *e = json_object(), *judges = json_array();
        if (append(fams, e) || !judges) {
            json_decref(judges);
            goto fail;
        }
        for (size_t i = 0; i < ag->n_judges; i++)
            if (ag->judge_family[i] && !strcmp(ag->judge_family[i], ag->families[f]) &&
                append(judges, arb__json_name(ag->judges[i]))) {
                json_decref(judges);
                goto fail;
            }
        if (arb__json_set(e, "family", arb__json_name(ag->families[f])) ||
            arb__json_set(e, "judges", judges))
            goto fail;
    }
    for (size_t i = 0; i < ag->n_judges; i++)
        if (!ag->judge_family[i] && append(none, arb__json_name(ag->judges[i]))) goto fail;
    for (size_t f1 = 0; f1 < nf; f1++) {
        for (size_t f2 = f1; f2 < nf; f2++) {
            json_t *e = json_pool(&ag->pools[f1 * nf + f2]);
            if (append(matrix, e) || json_object_set_new(e, "family1", arb__json_name(ag->families[f1])) ||
                json_object_set_new(e, "family2", arb__json_name(ag->families[f2])))
                goto fail;
        }
    }
    int bad = arb__json_set(o, "families", fams);
    bad |= arb__json_set(o, "no_family", none);
    fams = none = NULL;
    bad = bad || arb__json_set(o, "n_no_family", json_integer((json_int_t)ag->n_no_family)) ||
          arb__json_set(o, "bootstrap", json_integer((json_int_t)ag->bootstrap)) ||
          arb__json_set(o, "ci_level", json_real(ag->ci_level)) ||
          arb__json_set(o, "within", json_pool(&ag->pools[np])) ||
          arb__json_set(o, "across", json_pool(&ag->pools[np + 1])) ||
          arb__json_set(o, "difference", json_pool(&ag->pools[np + 2]));
    json_t *m = matrix;
    matrix = NULL;
    if (bad || arb__json_set(o, "matrix", m)) goto fail;
    return o;
fail:
    json_decref(fams);
    json_decref(none);
    json_decref(matrix);
    json_decref(o);
    return NULL;
}

/* See internal.h: one judge's family preference as JSON (the keys of README). */
json_t *arb__json_family_preference(const arb_family_preference *fp)
{
    json_t *o = json_object();
    if (!o || arb__json_set(o, "judge", arb__json_name(fp->judge)) ||
        arb__json_set(o, "family", arb__json_name(fp->family)) ||
        arb__json_set(o, "n_comparisons", json_integer((json_int_t)fp->n_comparisons)) ||
        arb__json_set(o, "n_own", json_integer((json_int_t)fp->n_own)) ||
        arb__json_set(o, "n_others", json_integer((json_int_t)fp->n_others)) ||
        arb__json_set(o, "own_win_rate", arb__json_metric(fp->own_win_rate)) ||
        arb__json_set(o, "others_win_rate", arb__json_metric(fp->others_win_rate)) ||
        arb__json_set(o, "difference", arb__json_metric(fp->difference)) ||
        arb__json_set(o, "ci_low", arb__json_metric(fp->ci_low)) ||
        arb__json_set(o, "ci_high", arb__json_metric(fp->ci_high))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Renders the result as pretty-printed JSON: judges, one entry per unordered pair of judges,
** and the disagreement histogram (null with fewer than two judges). Returns a string owned by
** the caller (arb_free), or NULL when out of memory or ag is NULL. */
char *arb_agreement_to_json(const arb_agreement *ag)
{
    if (!ag) return NULL;
    char *text = NULL;
    json_t *root = json_object();
    json_t *judges = json_array();
    json_t *pairs = json_array();
    if (!root || !judges || !pairs) goto done;
    for (size_t i = 0; i < ag->n_judges; i++)
        if (append(judges, arb__json_name(ag->judges[i]))) goto done;
    for (size_t i = 0; i < ag->n_judges; i++)
        for (size_t j = i + 1; j < ag->n_judges; j++)
            if (append(pairs, json_pair(ag, i, j))) goto done;
    json_t *dis = ag->n_judges >= 2 ? json_disagreement(ag) : json_null();
    if (!dis) goto done;
    int bad = json_object_set_new(root, "arbiter_version", json_string(ARB_VERSION));
    bad |= json_object_set_new(root, "judges", judges);
    bad |= json_object_set_new(root, "agreement", pairs);
    judges = pairs = NULL; /* stolen, even on failure */
    bad |= json_object_set_new(root, "disagreement", dis);
    if (bad) goto done;
    if (ag->by_family) {
        json_t *prefs = json_array();
        for (size_t i = 0; prefs && i < ag->prefs.n; i++)
            if (append(prefs, arb__json_family_preference(&ag->prefs.v[i]))) {
                json_decref(prefs);
                prefs = NULL;
            }
        if (arb__json_set(root, "by_family", json_by_family(ag)) ||
            arb__json_set(root, "family_preference_win_rate",
                          json_string("per judgment: 1 win, 0.5 tie (C or D), 0 loss; E left "
                                      "out")) ||
            arb__json_set(root, "family_preference", prefs))
            goto done;
    }
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
done:
    json_decref(judges);
    json_decref(pairs);
    json_decref(root);
    return text;
}
