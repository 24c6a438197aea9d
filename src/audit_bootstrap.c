/*
** audit_bootstrap.c -- percentile intervals (METHODS §10) of the judge audit's metrics for one
** group of side-by-side judgment pairs, in two resamplings:
** - items: every metric but the window series. A round draws as many items as the group has,
**   with replacement, keeping an item's orders, repetitions and comparisons together. Every
**   such metric is a function of counts that add up over items (arb__audit_tally: verdict
**   counts, consistency, leans, wins, RS, the κ table and APCC vectors against the expert
**   label, and the (comparison, task) units' tallies), so a round needs only how often each
**   distinct item PATTERN was drawn, not the items: the counts of a round are the sum over
**   patterns of (times drawn) × (the pattern's counts). How often each pattern is drawn when n
**   items are drawn is multinomial(n, pattern k with probability n_k / n), so a round draws
**   exactly that, one multinomial over the patterns (arb__stat_bootstrap_kinds), as the
**   Bradley–Terry bootstrap does over pair outcomes (METHODS §6): O(patterns) per round instead
**   of n draws and n lookups. The intervals have the law of the item-by-item bootstrap's, not
**   its draws (test_audit_bootstrap compares the two over many seeds).
** - blocks: the window series (MPCC-Consistency, MPCC, MPCC-Δ; §3, §3.1, §4), which depend on
**   the benchmark order and so on the items themselves. An item resample sorted back into
**   benchmark order puts an item's copies side by side, so windows fill with duplicates and the
**   series no longer resembles the benchmark's. A moving series keeps its local structure under
**   a block bootstrap instead: the group's distinct items in benchmark order are cut into
**   consecutive blocks of `window` items (the last may be shorter), and each round draws as
**   many blocks with replacement and lays them end to end in the order drawn. One draw per
**   round serves all three window metrics and every comparison. Each block keeps, per
**   comparison and series, the running counts from its start (arb__series_cum), so a round
**   reads a few marks per drawn block instead of walking and copying its items.
**
** Invariants: the same seed gives the same intervals; the lengths and the quality-gap bins are
** not bootstrapped (they have no interval), so they never enter a pattern.
**
** Not here: the formulas (audit_metrics.c), forming groups (audit.c).
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The window-series metrics, whose intervals come from the block bootstrap. */
static const arb_audit_metric window_metrics[] = {ARB_M_MPCC_CONSISTENCY, ARB_M_MPCC,
                                                  ARB_M_MPCC_DELTA};
enum { N_WINDOW_METRICS = sizeof window_metrics / sizeof window_metrics[0] };

/* ---- items, counted by pattern ------------------------------------------------------------ */

/* By item, then in the order arb__audit_metrics needs: an item's pairs together, by comparison
** then repetition. */
static int cmp_ref_item(const void *x, const void *y)
{
    const arb__pair_ref *a = x, *b = y;
    if (a->p->item != b->p->item) return a->p->item < b->p->item ? -1 : 1;
    return arb__audit_ref_order_cmp(a, b);
}

/* The group's items: item u is by_item[start[u] .. start[u + 1]). */
typedef struct item_list {
    const arb__pair_ref *by_item;
    const size_t *start;
} item_list;

/* qsort has no user pointer; the audit runs one group at a time per thread. */
static _Thread_local const item_list *pattern_items;

/* Orders items by pattern: the sequence of (comparison, task, position verdicts, expert label)
** of their pairs. Two items with the same sequence have the same counts. */
static int cmp_pattern(const void *x, const void *y)
{
    size_t u = *(const size_t *)x, v = *(const size_t *)y;
    const size_t *st = pattern_items->start;
    size_t nu = st[u + 1] - st[u], nv = st[v + 1] - st[v];
    if (nu != nv) return nu < nv ? -1 : 1;
    const arb__pair_ref *a = pattern_items->by_item + st[u], *b = pattern_items->by_item + st[v];
    for (size_t i = 0; i < nu; i++) {
        const arb__sbs_pair *p = a[i].p, *q = b[i].p;
        if (p->cmp != q->cmp) return p->cmp < q->cmp ? -1 : 1;
        if (p->task != q->task) return p->task < q->task ? -1 : 1;
        if (p->p0 != q->p0) return p->p0 < q->p0 ? -1 : 1;
        if (p->p1 != q->p1) return p->p1 < q->p1 ? -1 : 1;
        if (p->expert != q->expert) return p->expert < q->expert ? -1 : 1;
    }
    return 0;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static uint64_t cell_key(const arb__sbs_pair *p) { return (uint64_t)p->cmp << 32 | p->task; }

/* A (comparison, task) unit's tally from one pattern. */
typedef struct cell_part {
    size_t cell;
    arb__pair_tally tally;
} cell_part;

typedef struct pattern_boot {
    size_t n_patterns;
    unsigned int *n_items_of; /* per pattern: how many of the group's items have it */
    arb__audit_tally *tally;  /* per pattern */
    size_t *part_start;       /* pattern k's cell parts: parts[part_start[k] .. part_start[k+1]) */
    cell_part *parts;
    size_t n_cells;           /* the group's (comparison, task) units, in that order */
    arb__pair_tally *cells;   /* a round's unit tallies */
    double *scratch;          /* 2 * n_cells */
} pattern_boot;

static void pattern_boot_free(pattern_boot *pb)
{
    free(pb->n_items_of);
    free(pb->tally);
    free(pb->part_start);
    free(pb->parts);
    free(pb->cells);
    free(pb->scratch);
}

/* arb__stat_kinds_fn: the metrics from the round's draws per pattern (window series left NAN:
** the block bootstrap gives theirs). */
static int pattern_replicate(void *ud, const unsigned int *times_drawn, size_t n_patterns,
                             double *out)
{
    pattern_boot *pb = ud;
    (void)n_patterns;
    arb__audit_tally sum;
    memset(&sum, 0, sizeof sum);
    memset(pb->cells, 0, pb->n_cells * sizeof *pb->cells);
    for (size_t k = 0; k < pb->n_patterns; k++) {
        size_t times = times_drawn[k];
        if (!times) continue;
        arb__audit_tally_add(&sum, &pb->tally[k], times);
        for (size_t c = pb->part_start[k]; c < pb->part_start[k + 1]; c++)
            arb__audit_pair_tally_add_times(&pb->cells[pb->parts[c].cell], &pb->parts[c].tally,
                                            times);
    }
    arb__audit_tally_values(&sum, out);
    arb__audit_unit_values(pb->cells, pb->n_cells, pb->scratch, out);
    return 0;
}

/* Builds the patterns of the n_items items of L and their counts. 0, or -1 out of memory. */
static int pattern_build(pattern_boot *pb, const item_list *L, size_t n_items, size_t n)
{
    const arb__pair_ref *by_item = L->by_item;
    int rc = -1;
    size_t *order = malloc(n_items * sizeof *order);
    uint64_t *cells = malloc((n ? n : 1) * sizeof *cells);
    pb->n_items_of = calloc(n_items, sizeof *pb->n_items_of);
    pb->tally = calloc(n_items, sizeof *pb->tally);
    pb->part_start = malloc((n_items + 1) * sizeof *pb->part_start);
    pb->parts = calloc(n ? n : 1, sizeof *pb->parts);
    if (!order || !cells || !pb->n_items_of || !pb->tally || !pb->part_start || !pb->parts)
        goto done;

    /* the group's (comparison, task) units, sorted as unit_figures orders them */
    for (size_t i = 0; i < n; i++) cells[i] = cell_key(by_item[i].p);
    qsort(cells, n, sizeof *cells, cmp_u64);
    for (size_t i = 0; i < n; i++)
        if (pb->n_cells == 0 || cells[i] != cells[pb->n_cells - 1]) cells[pb->n_cells++] = cells[i];
    pb->cells = malloc((pb->n_cells ? pb->n_cells : 1) * sizeof *pb->cells);
    pb->scratch = malloc((pb->n_cells ? 2 * pb->n_cells : 1) * sizeof *pb->scratch);
    if (!pb->cells || !pb->scratch) goto done;

    for (size_t u = 0; u < n_items; u++) order[u] = u;
    pattern_items = L;
    qsort(order, n_items, sizeof *order, cmp_pattern);
    size_t n_parts = 0;
    for (size_t x = 0; x < n_items; x++) {
        size_t u = order[x];
        if (x > 0 && cmp_pattern(&order[x - 1], &u) == 0) {
            pb->n_items_of[pb->n_patterns - 1]++;
            continue;
        }
        size_t k = pb->n_patterns++;
        pb->n_items_of[k] = 1;
        const arb__pair_ref *refs = by_item + L->start[u];
        size_t len = L->start[u + 1] - L->start[u];
        arb__audit_tally_item(&pb->tally[k], refs, len);
        pb->part_start[k] = n_parts;
        for (size_t i = 0; i < len; i++) {
            uint64_t key = cell_key(refs[i].p);
            if (i == 0 || key != cell_key(refs[i - 1].p)) {
                const uint64_t *hit = bsearch(&key, cells, pb->n_cells, sizeof *cells, cmp_u64);
                pb->parts[n_parts++].cell = (size_t)(hit - cells);
            }
            arb__audit_pair_tally_add(&pb->parts[n_parts - 1].tally, refs[i].p);
        }
    }
    pb->part_start[pb->n_patterns] = n_parts;
    rc = 0;
done:
    free(order);
    free(cells);
    return rc;
}

/* Item intervals of every metric but the window series into lo/hi (ARB_M__COUNT each). */
static arb_status bootstrap_items(const arb__pair_ref *refs, size_t n,
                                  const arb_audit_params *params, double *lo, double *hi)
{
    arb_status st = ARB_NOMEM;
    pattern_boot pb;
    memset(&pb, 0, sizeof pb);
    arb__pair_ref *by_item = malloc(n * sizeof *by_item);
    size_t *start = malloc((n + 1) * sizeof *start);
    if (!by_item || !start) goto done;
    memcpy(by_item, refs, n * sizeof *refs);
    qsort(by_item, n, sizeof *by_item, cmp_ref_item);
    size_t n_items = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || by_item[i].p->item != by_item[i - 1].p->item) start[n_items++] = i;
    start[n_items] = n;
    item_list L = {by_item, start};
    if (pattern_build(&pb, &L, n_items, n)) goto done;
    st = arb__stat_bootstrap_kinds(pb.n_items_of, pb.n_patterns, ARB_M__COUNT, pattern_replicate,
                                   &pb, params->bootstrap, params->seed, params->ci_level, lo, hi);
done:
    pattern_boot_free(&pb);
    free(by_item);
    free(start);
    return st;
}

/* ---- blocks of consecutive items, for the window series ----------------------------------- */

typedef struct block_boot {
    const arb__series_piece *pieces; /* block b, comparison c, series s: pieces[(b*C+c)*3+s] */
    size_t n_cmps;                   /* C: the group's comparisons */
    arb__series_work work;
    double (*per_cmp)[3];          /* a round's figures per comparison */
    double *scratch;               /* 3 C */
    const arb_audit_params *params;
} block_boot;

static int cmp_ref_seq(const void *x, const void *y)
{
    const arb__pair_ref *a = x, *b = y;
    if (a->p->seq != b->p->seq) return a->p->seq < b->p->seq ? -1 : 1;
    if (a->p->item != b->p->item) return a->p->item < b->p->item ? -1 : 1;
    return arb__audit_ref_order_cmp(a, b);
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/* arb_stat_resample_fn: per comparison, the series of the drawn blocks laid end to end in the
** order drawn (as pieces of precomputed running counts, not copied; each draw's items distinct
** from another draw's), which is exactly the series of the drawn pairs sorted by comparison,
** draw and benchmark order; the three window metrics measured on it. Nonzero when out of
** memory. */
static int block_replicate(void *ud, const size_t *indices, size_t n, double *out)
{
    block_boot *b = ud;
    size_t stride = ARB__N_SERIES * b->n_cmps;
    arb_audit_metrics m;
    memset(&m, 0, sizeof m);
    for (size_t c = 0; c < b->n_cmps; c++)
        if (arb__audit_series_metrics(b->pieces + ARB__N_SERIES * c, stride, indices, n,
                                      b->params, &b->work, b->per_cmp[c], &m))
            return 1;
    arb__audit_window_values((const double (*)[3])b->per_cmp, b->n_cmps, b->scratch, &m);
    for (size_t w = 0; w < N_WINDOW_METRICS; w++) out[w] = m.value[window_metrics[w]];
    return 0;
}

/* Block intervals of the window series into lo/hi (N_WINDOW_METRICS each). */
static arb_status bootstrap_blocks(const arb__pair_ref *refs, size_t n,
                                   const arb_audit_params *params, double *lo, double *hi)
{
    arb_status st = ARB_NOMEM;
    arb__pair_ref *by_block = malloc(n * sizeof *by_block);
    size_t *block_start = malloc((n + 1) * sizeof *block_start);
    uint32_t *cmps = malloc(n * sizeof *cmps);
    arb__series_item *items = malloc(n * sizeof *items);
    arb__series_cum *cum = malloc(ARB__N_SERIES * n * sizeof *cum);
    arb__series_piece *pieces = NULL;
    block_boot b;
    memset(&b, 0, sizeof b);
    b.params = params;
    if (!by_block || !block_start || !cmps || !items || !cum) goto done;
    memcpy(by_block, refs, n * sizeof *refs);
    qsort(by_block, n, sizeof *by_block, cmp_ref_seq);
    size_t n_blocks = 0, n_items = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && by_block[i].p->item == by_block[i - 1].p->item) continue;
        if (n_items % params->window == 0) block_start[n_blocks++] = i;
        n_items++;
    }
    block_start[n_blocks] = n;
    for (size_t i = 0; i < n; i++) cmps[i] = refs[i].p->cmp;
    qsort(cmps, n, sizeof *cmps, cmp_u32);
    for (size_t i = 0; i < n; i++)
        if (b.n_cmps == 0 || cmps[i] != cmps[b.n_cmps - 1]) cmps[b.n_cmps++] = cmps[i];
    size_t stride = ARB__N_SERIES * b.n_cmps;
    if (n_blocks > SIZE_MAX / sizeof *pieces / stride) goto done;
    pieces = malloc(n_blocks * stride * sizeof *pieces);
    b.per_cmp = malloc(b.n_cmps * sizeof *b.per_cmp);
    b.scratch = malloc(3 * b.n_cmps * sizeof *b.scratch);
    if (!pieces || !b.per_cmp || !b.scratch) goto done;
    /* each block's pairs by comparison then benchmark order, cut into the three series of each
    ** comparison as running counts from the block's start (empty when the block has none of
    ** the comparison's pairs) */
    size_t n_cum = 0;
    for (size_t x = 0; x < n_blocks; x++) {
        size_t s = block_start[x], e = block_start[x + 1], i = s;
        qsort(by_block + s, e - s, sizeof *by_block, arb__audit_ref_order_cmp);
        for (size_t c = 0; c < b.n_cmps; c++) {
            size_t j = i;
            while (j < e && by_block[j].p->cmp == cmps[c]) j++;
            size_t n_entries = arb__audit_series_items(by_block + i, j - i, items);
            arb__series_cum *const out[ARB__N_SERIES] = {cum + n_cum, cum + n_cum + n_entries,
                                                         cum + n_cum + 2 * n_entries};
            arb__audit_series_cumulate(items, n_entries, out,
                                       pieces + x * stride + c * ARB__N_SERIES);
            n_cum += ARB__N_SERIES * n_entries;
            i = j;
        }
    }
    b.pieces = pieces;
    st = arb_stat_bootstrap(n_blocks, N_WINDOW_METRICS, block_replicate, &b, params->bootstrap,
                            params->seed, params->ci_level, lo, hi);
done:
    free(by_block);
    free(block_start);
    free(cmps);
    free(items);
    free(cum);
    free(pieces);
    arb__series_work_free(&b.work);
    free(b.per_cmp);
    free(b.scratch);
    return st;
}

/* Percentile intervals of every metric of one group into m->ci_lo/ci_hi: items for all but the
** window series, blocks for those. refs[0..n) sorted as for arb__audit_metrics; an empty group
** leaves the intervals as they are. ARB_OK, or ARB_NOMEM. */
arb_status arb__audit_bootstrap(const arb__pair_ref *refs, size_t n, const arb_audit_params *params,
                                arb_audit_metrics *m)
{
    double lo[ARB_M__COUNT], hi[ARB_M__COUNT];
    if (n == 0) return ARB_OK; /* nothing to resample: intervals stay undefined */
    arb_status st = bootstrap_items(refs, n, params, lo, hi);
    if (st == ARB_OK) {
        memcpy(m->ci_lo, lo, sizeof lo);
        memcpy(m->ci_hi, hi, sizeof hi);
        st = bootstrap_blocks(refs, n, params, lo, hi);
    }
    if (st == ARB_INTERRUPTED) st = ARB_NOMEM; /* a replicate only aborts when out of memory */
    if (st != ARB_OK) return st;
    for (size_t k = 0; k < N_WINDOW_METRICS; k++) {
        m->ci_lo[window_metrics[k]] = lo[k];
        m->ci_hi[window_metrics[k]] = hi[k];
    }
    return ARB_OK;
}
