/*
** rank_core.c -- the floor of the ranking module (METHODS §6; see rank.h): which battles a
** ranking uses, win rates, online Elo averaged over random orders and the bootstrap of that
** same estimator, and the seeded random streams and two-thread task runner the bootstraps of
** rank.c share. It calls nothing else of the module; rank.c and peer.c call it.
**
** Invariants:
**   - Results are reproducible for a seed and do not depend on threads: every random stream
**     (an Elo permutation, a bootstrap round) has its own generator seeded from (seed, kind,
**     stream number), and per-stream results are combined in stream order.
**   - The Elo interval belongs to the Elo printed: a bootstrap round resamples the battles
**     and recomputes the mean over p->elo_permutations random orders, never a single pass
**     (a single pass carries the order noise -- ±40 points on 8,000 battles -- that the mean
**     over 1,000 orders removes, so its interval was several times too wide).
*/
#include "rank.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

/* Work (battle updates, cell draws) below which a second thread does not pay. */
#define PARALLEL_MIN_WORK 2000000.0

/* See rank.h. */
void arb__rank_set_err(char **errmsg, const char *before, const char *name, const char *after)
{
    if (!errmsg) return;
    arb__buf b;
    arb__buf_init(&b, 0);
    if (arb__buf_puts(&b, before) || (name && arb__buf_put_safe(&b, name)) ||
        arb__buf_puts(&b, after)) {
        arb__buf_free(&b);
        free(*errmsg);
        *errmsg = arb__strdup("out of memory");
        return;
    }
    free(*errmsg);
    *errmsg = arb__buf_steal(&b);
}

/* ---- random streams, percentiles, tasks ------------------------------------------------------ */

/* See rank.h: splitmix64 of (seed, kind, stream), folded to 32 bits. */
unsigned long arb__rank_stream_seed(unsigned long long seed, unsigned long long kind,
                                    unsigned long long stream)
{
    uint64_t z = (uint64_t)seed + 0x9E3779B97F4A7C15ull * (stream * 8 + kind + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (unsigned long)((z ^ (z >> 32)) & 0xFFFFFFFFull);
}

/* See rank.h; as arb_stat_bootstrap does it (GSL's linear interpolation between order
** statistics). */
void arb__rank_percentile(const double *reps, size_t rows, size_t cols, size_t col,
                          double level, double *scratch, double *lo, double *hi)
{
    size_t defined = 0;
    for (size_t r = 0; r < rows; r++) {
        double x = reps[r * cols + col];
        if (isfinite(x)) scratch[defined++] = x;
    }
    *lo = *hi = NAN;
    if (defined == 0 || defined < rows - rows / 2) return;
    gsl_sort(scratch, 1, defined);
    *lo = gsl_stats_quantile_from_sorted_data(scratch, 1, defined, (1.0 - level) / 2.0);
    *hi = gsl_stats_quantile_from_sorted_data(scratch, 1, defined, (1.0 + level) / 2.0);
}

typedef struct task_run {
    arb__rank_task_fn fn;
    void *ud;
    size_t n_tasks, n_workers, worker;
    arb_status st;
} task_run;

static void *task_thread(void *arg)
{
    task_run *t = arg;
    for (size_t k = t->worker; k < t->n_tasks; k += t->n_workers) {
        if (arb__stop_requested) {
            t->st = ARB_INTERRUPTED;
            break;
        }
        if ((t->st = t->fn(t->ud, t->worker, k)) != ARB_OK) break;
    }
    return NULL;
}

/* See rank.h: 1, or up to ARB__RANK_MAX_THREADS processors. */
size_t arb__rank_workers_for(double work)
{
    if (work < PARALLEL_MIN_WORK) return 1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 2) return 1;
    return cpus < ARB__RANK_MAX_THREADS ? (size_t)cpus : ARB__RANK_MAX_THREADS;
}

/* See rank.h. Worker 0 runs on the calling thread; if a thread cannot start, its tasks run
** there too. */
arb_status arb__rank_run_tasks(size_t n_tasks, size_t n_workers, arb__rank_task_fn fn, void *ud)
{
    task_run runs[ARB__RANK_MAX_THREADS];
    pthread_t threads[ARB__RANK_MAX_THREADS];
    int started[ARB__RANK_MAX_THREADS] = {0};
    if (n_workers < 1) n_workers = 1;
    if (n_workers > ARB__RANK_MAX_THREADS) n_workers = ARB__RANK_MAX_THREADS;
    for (size_t w = 0; w < n_workers; w++)
        runs[w] = (task_run){fn, ud, n_tasks, n_workers, w, ARB_OK};
    for (size_t w = 1; w < n_workers; w++)
        started[w] = pthread_create(&threads[w], NULL, task_thread, &runs[w]) == 0;
    task_thread(&runs[0]);
    arb_status st = runs[0].st;
    for (size_t w = 1; w < n_workers; w++) {
        if (started[w])
            pthread_join(threads[w], NULL);
        else
            task_thread(&runs[w]);
        if (!st) st = runs[w].st;
    }
    return st;
}

/* See rank.h: higher first, undefined last, equal scores by name. */
int arb__rank_before(double a, const char *na, double b, const char *nb)
{
    int da = !isnan(a), db = !isnan(b);
    if (da != db) return da;
    if (da && a != b) return a > b;
    return strcmp(na, nb) < 0;
}

/* ---- selection, win rate ------------------------------------------------------------------- */

int arb__rank_is_human(const char *name, const char *prefix)
{
    return prefix && *prefix && !strncmp(name, prefix, strlen(prefix));
}

/* Marks the battles p selects (see rank.h). reviewer_model[r]: the contestant index of
** reviewer r's reviewer_info entry (its model, UINT32_MAX when NULL or not a contestant in b);
** a reviewer without an entry is the contestant named like it, if any. Selection: the
** reviewers of p->reviewers when given (each must have reviewed a battle), else every
** reviewer except the humans (names starting with p->human_prefix), who are the reference of
** the agreement in peer.c -- unless nobody else reviewed, when the humans are the ranking's
** reviewers; then with exclude_self the battles whose pair contains the reviewer's own model
** are dropped. allowed (when not NULL) gets the reviewers the ranking uses. Returns ARB_OK,
** or ARB_INVALID / ARB_NOMEM after setting *errmsg (when not NULL; caller frees). */
arb_status arb__rank_select(const arb_battles *b, const arb_rank_params *p, uint8_t *use,
                            uint32_t *reviewer_model, uint8_t *allowed_out, char **errmsg)
{
    size_t nr = b->reviewers.n;
    uint8_t *allowed = arb__rank_zalloc(nr, 1);
    size_t *reviews = arb__rank_zalloc(nr, sizeof *reviews);
    arb_status st = ARB_INVALID;
    if (!allowed || !reviews) {
        arb__rank_set_err(errmsg, "out of memory", NULL, "");
        st = ARB_NOMEM;
        goto done;
    }
    for (size_t k = 0; p->reviewer_info && k < p->n_reviewer_info; k++)
        if (!p->reviewer_info[k].reviewer) {
            arb__rank_set_err(errmsg, "reviewer_info: an entry has no reviewer name", NULL, "");
            goto done;
        }
    for (size_t r = 0; r < nr; r++) {
        const char *name = b->reviewers.names[r];
        const arb_reviewer_info *info = NULL;
        for (size_t k = 0; p->reviewer_info && k < p->n_reviewer_info && !info; k++)
            if (!strcmp(p->reviewer_info[k].reviewer, name)) info = &p->reviewer_info[k];
        if (info)
            reviewer_model[r] = info->model ? arb__strtab_find(&b->models, info->model)
                                            : UINT32_MAX;
        else
            reviewer_model[r] = arb__strtab_find(&b->models, name);
    }
    for (size_t k = 0; k < b->n; k++) reviews[b->r[k]]++;

    if (p->reviewers) {
        for (size_t x = 0; x < p->n_reviewers; x++) {
            const char *name = p->reviewers[x];
            if (!name) {
                arb__rank_set_err(errmsg, "reviewers: an entry is NULL", NULL, "");
                goto done;
            }
            uint32_t r = arb__strtab_find(&b->reviewers, name);
            if (r == UINT32_MAX || reviews[r] == 0) {
                arb__rank_set_err(errmsg, "reviewer \"", name, "\" reviewed no battle");
                goto done;
            }
            allowed[r] = 1;
        }
    } else {
        int others = 0;
        for (size_t r = 0; r < nr; r++)
            if (reviews[r] && !arb__rank_is_human(b->reviewers.names[r], p->human_prefix)) others = 1;
        for (size_t r = 0; r < nr; r++)
            allowed[r] = !others || !arb__rank_is_human(b->reviewers.names[r], p->human_prefix);
    }
    for (size_t k = 0; k < b->n; k++) {
        uint32_t r = b->r[k];
        int ok = allowed[r];
        if (ok && p->exclude_self && reviewer_model[r] != UINT32_MAX &&
            (reviewer_model[r] == b->i[k] || reviewer_model[r] == b->j[k]))
            ok = 0;
        use[k] = (uint8_t)ok;
    }
    if (allowed_out) memcpy(allowed_out, allowed, nr);
    st = ARB_OK;
done:
    free(allowed);
    free(reviews);
    return st;
}

/* Win rate per model index (§6) over the selected battles, each weighted by weight[r] (NULL:
** 1): (weighted wins + ½ weighted ties) / weighted battles; NAN for a model without a battle
** of positive weight. out holds b->models.n values. */
void arb__win_rate(const arb_battles *b, const uint8_t *use, const double *weight, double *out)
{
    size_t m = b->models.n;
    double *battles = arb__rank_zalloc(m, sizeof *battles);
    if (!battles) {
        for (size_t a = 0; a < m; a++) out[a] = NAN;
        return;
    }
    for (size_t a = 0; a < m; a++) out[a] = 0;
    for (size_t k = 0; k < b->n; k++) {
        if (use && !use[k]) continue;
        double w = weight ? weight[b->r[k]] : 1.0;
        uint32_t i = b->i[k], j = b->j[k];
        double s = b->s[k];
        battles[i] += w;
        battles[j] += w;
        out[i] += w * (1 - s) / 2; /* 1 win, ½ tie, 0 loss */
        out[j] += w * (1 + s) / 2;
    }
    for (size_t a = 0; a < m; a++) out[a] = battles[a] > 0 ? out[a] / battles[a] : NAN;
    free(battles);
}

/* ---- online Elo -------------------------------------------------------------------------------- */

/* One selected battle as online Elo reads it. */
typedef struct elo_battle {
    uint32_t i, j, r;
    int32_t s;
} elo_battle;

/* The selected battles in order (*n gets their number); NULL when out of memory. */
static elo_battle *elo_battles(const arb_battles *b, const uint8_t *use, size_t *n)
{
    elo_battle *v = malloc((b->n ? b->n : 1) * sizeof *v);
    if (!v) return NULL;
    size_t c = 0;
    for (size_t k = 0; k < b->n; k++)
        if (!use || use[k]) v[c++] = (elo_battle){b->i[k], b->j[k], b->r[k], b->s[k]};
    *n = c;
    return v;
}

/* One online Elo pass (§6) over v[0..n) in order: every rating starts at initial; battle
** (i, j) with outcome o for i (1, ½, 0) and expected score E = 1/(1 + 10^((R_j − R_i)/400))
** (computed as 1/(1 + e^((R_j − R_i)·ln 10/400)), the same number, faster) moves R_i by
** +w·K·(o − E) and R_j by the opposite, so the ratings' sum never changes
** (weighted Elo is zero-sum too). rating holds m values. */
static void elo_pass(const elo_battle *v, size_t n, const double *weight, double k,
                     double initial, double *rating, size_t m)
{
    for (size_t a = 0; a < m; a++) rating[a] = initial;
    for (size_t t = 0; t < n; t++) {
        const elo_battle *e = &v[t];
        double expected = 1.0 / (1.0 + exp((rating[e->j] - rating[e->i]) / ARB__ELO_PER_NAT));
        double outcome = (1.0 - e->s) / 2.0;
        double delta = (weight ? weight[e->r] : 1.0) * k * (outcome - expected);
        rating[e->i] += delta;
        rating[e->j] -= delta;
    }
}

typedef struct elo_perm_ctx {
    const elo_battle *sel;
    size_t n_sel, m, n_perm;
    const double *weight;
    double k, initial;
    unsigned long long seed;
    elo_battle **order; /* per worker: n_sel */
    gsl_rng **rng;      /* per worker */
    double *per;        /* n_perm x m ratings */
} elo_perm_ctx;

/* Shuffles v[0..n) exactly as gsl_ran_shuffle(rng, v, n, sizeof *v) does -- the same draws
** of gsl_rng_uniform_int in the same order, so the same permutation -- but swaps whole
** structs instead of GSL's byte-by-byte copy, which dominated Elo on millions of battles. */
static void shuffle_battles(gsl_rng *rng, elo_battle *v, size_t n)
{
    for (size_t i = n; i-- > 1;) {
        size_t j = (size_t)gsl_rng_uniform_int(rng, (unsigned long)(i + 1));
        elo_battle tmp = v[i];
        v[i] = v[j];
        v[j] = tmp;
    }
}

static arb_status elo_perm_task(void *ud, size_t worker, size_t perm)
{
    elo_perm_ctx *c = ud;
    const elo_battle *v = c->sel;
    if (c->n_perm > 1) {
        memcpy(c->order[worker], c->sel, c->n_sel * sizeof *c->sel);
        gsl_rng_set(c->rng[worker], arb__rank_stream_seed(c->seed, ARB__STREAM_ELO_PERM, perm));
        shuffle_battles(c->rng[worker], c->order[worker], c->n_sel);
        v = c->order[worker];
    }
    elo_pass(v, c->n_sel, c->weight, c->k, c->initial, c->per + perm * c->m, c->m);
    return ARB_OK;
}

/* Online Elo (§6) over the selected battles, averaged over p->elo_permutations orders: with 1
** the given order; otherwise permutation k is gsl_ran_shuffle's permutation (shuffle_battles) by an MT19937
** generator seeded from (p->seed, k), so the result is the same on any number of threads. mean[a] is the mean
** rating of model a over the permutations, sd[a] (when sd is not NULL) their sample standard
** deviation (NAN with one permutation). Models without a selected battle keep elo_initial.
** Returns ARB_OK, ARB_NOMEM or ARB_INTERRUPTED. */
arb_status arb__elo(const arb_battles *b, const uint8_t *use, const double *weight,
                    const arb_rank_params *p, double *mean, double *sd)
{
    size_t m = b->models.n, n_sel = 0;
    size_t n_perm = p->elo_permutations ? p->elo_permutations : 1;
    arb_status st = ARB_NOMEM;
    elo_perm_ctx c;
    memset(&c, 0, sizeof c);
    elo_battle *order[ARB__RANK_MAX_THREADS] = {0};
    gsl_rng *rng[ARB__RANK_MAX_THREADS] = {0};
    elo_battle *sel = elo_battles(b, use, &n_sel);
    size_t n_workers = arb__rank_workers_for((double)n_sel * (double)n_perm);
    if (n_perm > SIZE_MAX / sizeof(double) / (m ? m : 1)) goto done;
    double *per = malloc(n_perm * (m ? m : 1) * sizeof *per);
    c.per = per;
    if (!sel || !per) goto done;
    for (size_t w = 0; w < n_workers && n_perm > 1; w++) {
        order[w] = malloc((n_sel ? n_sel : 1) * sizeof *order[w]);
        rng[w] = gsl_rng_alloc(gsl_rng_mt19937);
        if (!order[w] || !rng[w]) goto done;
    }
    c.sel = sel;
    c.n_sel = n_sel;
    c.m = m;
    c.n_perm = n_perm;
    c.weight = weight;
    c.k = p->elo_k;
    c.initial = p->elo_initial;
    c.seed = p->seed;
    c.order = order;
    c.rng = rng;
    if ((st = arb__rank_run_tasks(n_perm, n_workers, elo_perm_task, &c)) != ARB_OK) goto done;
    for (size_t a = 0; a < m; a++) { /* in permutation order: thread-independent */
        double sum = 0;
        for (size_t t = 0; t < n_perm; t++) sum += per[t * m + a];
        double mu = sum / (double)n_perm, ss = 0;
        for (size_t t = 0; t < n_perm; t++) ss += (per[t * m + a] - mu) * (per[t * m + a] - mu);
        mean[a] = mu;
        if (sd) sd[a] = n_perm > 1 ? sqrt(ss / (double)(n_perm - 1)) : NAN;
    }
    st = ARB_OK;
done:
    for (size_t w = 0; w < ARB__RANK_MAX_THREADS; w++) {
        free(order[w]);
        if (rng[w]) gsl_rng_free(rng[w]);
    }
    free(c.per);
    free(sel);
    return st;
}

/* ---- the bootstrap of the printed Elo ----------------------------------------------------- */

/* One kind of selected battle (first, second, outcome) and how often it occurs: the cells of
** the multinomial resample. Elo does not read the question or (unweighted) the reviewer, so
** battles of one cell are interchangeable. */
typedef struct elo_cell {
    uint32_t i, j; /* ranked indices */
    int32_t s;
    double count;
} elo_cell;

static int elo_cell_cmp(const void *pa, const void *pb)
{
    const elo_cell *a = pa, *b = pb;
    if (a->i != b->i) return a->i < b->i ? -1 : 1;
    if (a->j != b->j) return a->j < b->j ? -1 : 1;
    return (a->s > b->s) - (a->s < b->s);
}

/* A battle as the bootstrap's passes read it: the outcome for i precomputed. */
typedef struct boot_battle {
    uint32_t i, j;
    double outcome;
} boot_battle;

typedef struct elo_boot {
    const elo_cell *cells;
    const double *prob;       /* the cells' counts (gsl normalises) */
    size_t n_cells, n_sel, m, n_perm, anchor;
    double k, initial;
    unsigned long long seed;
    double *reps;             /* rounds x m */
    gsl_rng *rng[ARB__RANK_MAX_THREADS];
    unsigned int *draw[ARB__RANK_MAX_THREADS];
    boot_battle *battles[ARB__RANK_MAX_THREADS];
    double *rating[ARB__RANK_MAX_THREADS], *sum[ARB__RANK_MAX_THREADS];
} elo_boot;

/* The shuffles of the bootstrap rounds draw from xoshiro128++ (Blackman and Vigna), seeded from
** the round's MT19937 stream: a round shuffles permutations x battles times, and GSL's
** uniform_int (a division per draw on MT19937) cost about as much as the Elo updates. The
** bounded draw is Lemire's multiply-shift with rejection, exact for any n < 2^32. */
typedef struct fast_rng {
    uint32_t s[4];
} fast_rng;

static uint32_t rotl32(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

static uint32_t fast_next(fast_rng *r)
{
    uint32_t *s = r->s, result = rotl32(s[0] + s[3], 7) + s[0], t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl32(s[3], 11);
    return result;
}

/* Uniform in [0, n), n >= 1. */
static uint32_t fast_below(fast_rng *r, uint32_t n)
{
    uint64_t m = (uint64_t)fast_next(r) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (uint32_t)(-n) % n;
        while (low < threshold) {
            m = (uint64_t)fast_next(r) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* Permutations a bootstrap pass runs side by side. One Elo pass is a chain of dependent
** updates (each waits for the exp and the division of the one before), so a core idles most
** of the time; independent passes interleaved keep it busy. Measured on 8,000 battles: the
** xoshiro shuffle made a round 1.6x faster than GSL's, 4 lanes another 1.6x (8: no gain). */
#define ELO_LANES 4

/* n_lanes (1..ELO_LANES) passes of plain Elo (as elo_pass without weights), lane l over
** v[l·n .. l·n + n) in order, its ratings in rating[l·m .. l·m + m). */
static void boot_passes(const boot_battle *v, size_t n, size_t n_lanes, double k,
                        double initial, double *rating, size_t m)
{
    const double scale = 1.0 / ARB__ELO_PER_NAT;
    for (size_t a = 0; a < n_lanes * m; a++) rating[a] = initial;
    for (size_t t = 0; t < n; t++) {
        for (size_t l = 0; l < n_lanes; l++) {
            const boot_battle *e = &v[l * n + t];
            double *r = rating + l * m;
            double expected = 1.0 / (1.0 + exp((r[e->j] - r[e->i]) * scale));
            double delta = k * (e->outcome - expected);
            r[e->i] += delta;
            r[e->j] -= delta;
        }
    }
}

/* Round `round`: a multinomial draw of the cells' counts (the distribution of the cell counts
** of n_sel battles drawn with replacement), then the mean over n_perm uniformly random orders
** of those battles of one Elo pass each -- the estimator arb__elo prints. With n_perm 1 the
** one order is random too: a resample has no given order. */
static arb_status elo_boot_task(void *ud, size_t w, size_t round)
{
    elo_boot *c = ud;
    size_t m = c->m, n = c->n_sel;
    gsl_rng *rng = c->rng[w];
    boot_battle *v = c->battles[w];
    double *sum = c->sum[w], *rating = c->rating[w], *out = c->reps + round * m;
    gsl_rng_set(rng, arb__rank_stream_seed(c->seed, ARB__STREAM_BOOT_ELO, round));
    gsl_ran_multinomial(rng, c->n_cells, (unsigned int)n, c->prob, c->draw[w]);
    size_t at = 0;
    for (size_t x = 0; x < c->n_cells; x++) {
        boot_battle e = {c->cells[x].i, c->cells[x].j, (1.0 - c->cells[x].s) / 2.0};
        for (unsigned int d = 0; d < c->draw[w][x]; d++) v[at++] = e;
    }
    size_t n_lanes = c->n_perm < ELO_LANES ? c->n_perm : ELO_LANES;
    for (size_t l = 1; l < n_lanes; l++) memcpy(v + l * n, v, n * sizeof *v);
    fast_rng shuffle;
    do { /* MT19937 gives 32-bit words; an all-zero xoshiro state would stay zero */
        for (int x = 0; x < 4; x++) shuffle.s[x] = (uint32_t)gsl_rng_get(rng);
    } while (!(shuffle.s[0] | shuffle.s[1] | shuffle.s[2] | shuffle.s[3]));
    for (size_t a = 0; a < m; a++) sum[a] = 0;
    for (size_t perm = 0; perm < c->n_perm; perm += n_lanes) {
        if (arb__stop_requested) return ARB_INTERRUPTED;
        size_t lanes = c->n_perm - perm < n_lanes ? c->n_perm - perm : n_lanes;
        for (size_t l = 0; l < lanes; l++) { /* Fisher-Yates, whole structs; any start order */
            boot_battle *lane = v + l * n;
            for (size_t i = n; i-- > 1;) {
                size_t j = fast_below(&shuffle, (uint32_t)(i + 1));
                boot_battle tmp = lane[i];
                lane[i] = lane[j];
                lane[j] = tmp;
            }
        }
        boot_passes(v, n, lanes, c->k, c->initial, rating, m);
        for (size_t l = 0; l < lanes; l++)
            for (size_t a = 0; a < m; a++) sum[a] += rating[l * m + a];
    }
    /* present models: the ones with a battle in the resample */
    for (size_t a = 0; a < m; a++) rating[a] = 0;
    for (size_t t = 0; t < n; t++) rating[v[t].i] = rating[v[t].j] = 1;
    double shift = 0;
    if (c->anchor != SIZE_MAX)
        shift = rating[c->anchor] ? c->initial - sum[c->anchor] / (double)c->n_perm : NAN;
    for (size_t a = 0; a < m; a++)
        out[a] = rating[a] ? sum[a] / (double)c->n_perm + shift : NAN;
    return ARB_OK;
}

/* See rank.h. Cost: rounds x permutations x battles Elo updates, on up to two threads; the
** round's battles are materialised from the cells once, then shuffled in place. */
arb_status arb__elo_bootstrap(const arb_battles *b, const uint8_t *use, const uint32_t *compact,
                              size_t m, size_t anchor, const arb_rank_params *p, double *lo,
                              double *hi, char **errmsg)
{
    size_t rounds = p->bootstrap, n_sel = 0;
    size_t n_perm = p->elo_permutations ? p->elo_permutations : 1;
    elo_boot c;
    memset(&c, 0, sizeof c);
    arb_status st = ARB_NOMEM;
    elo_cell *cells = NULL;
    double *prob = NULL, *scratch = NULL;
    for (size_t k = 0; k < b->n; k++) n_sel += use[k] != 0;
    for (size_t a = 0; a < m; a++) lo[a] = hi[a] = NAN;
    if (rounds == 0 || n_sel == 0) return ARB_OK;
    if (n_sel > UINT_MAX) {
        arb__rank_set_err(errmsg, "bootstrap: more than 4294967295 battles", NULL, "");
        return ARB_INVALID;
    }
    cells = arb__rank_zalloc(n_sel, sizeof *cells);
    prob = arb__rank_zalloc(n_sel, sizeof *prob);
    scratch = arb__rank_zalloc(rounds, sizeof *scratch);
    if (rounds > SIZE_MAX / sizeof(double) / (m ? m : 1)) goto done;
    c.reps = arb__rank_zalloc(rounds * m, sizeof *c.reps);
    if (!cells || !prob || !scratch || !c.reps) goto done;
    size_t n = 0;
    for (size_t k = 0; k < b->n; k++)
        if (use[k]) cells[n++] = (elo_cell){compact[b->i[k]], compact[b->j[k]], b->s[k], 1};
    qsort(cells, n, sizeof *cells, elo_cell_cmp);
    size_t n_cells = 0;
    for (size_t x = 0; x < n; x++) {
        if (n_cells && !elo_cell_cmp(&cells[n_cells - 1], &cells[x]))
            cells[n_cells - 1].count += 1;
        else
            cells[n_cells++] = cells[x];
    }
    for (size_t x = 0; x < n_cells; x++) prob[x] = cells[x].count;
    double *reps = c.reps;
    c = (elo_boot){.cells = cells, .prob = prob, .n_cells = n_cells, .n_sel = n_sel, .m = m,
                   .n_perm = n_perm, .anchor = anchor, .k = p->elo_k, .initial = p->elo_initial,
                   .seed = p->seed, .reps = reps};
    size_t n_workers = arb__rank_workers_for((double)rounds * (double)n_perm * (double)n_sel);
    for (size_t w = 0; w < n_workers; w++) {
        c.rng[w] = gsl_rng_alloc(gsl_rng_mt19937);
        c.draw[w] = arb__rank_zalloc(n_cells, sizeof *c.draw[w]);
        c.battles[w] = arb__rank_zalloc(ELO_LANES * n_sel, sizeof *c.battles[w]);
        c.rating[w] = arb__rank_zalloc(ELO_LANES * m, sizeof *c.rating[w]);
        c.sum[w] = arb__rank_zalloc(m, sizeof *c.sum[w]);
        if (!c.rng[w] || !c.draw[w] || !c.battles[w] || !c.rating[w] || !c.sum[w]) goto done;
    }
    if ((st = arb__rank_run_tasks(rounds, n_workers, elo_boot_task, &c)) != ARB_OK) goto done;
    for (size_t a = 0; a < m; a++)
        arb__rank_percentile(c.reps, rounds, m, a, p->ci_level, scratch, &lo[a], &hi[a]);
    st = ARB_OK;
done:
    if (st == ARB_NOMEM) arb__rank_set_err(errmsg, "out of memory", NULL, "");
    for (size_t w = 0; w < ARB__RANK_MAX_THREADS; w++) {
        if (c.rng[w]) gsl_rng_free(c.rng[w]);
        free(c.draw[w]);
        free(c.battles[w]);
        free(c.rating[w]);
        free(c.sum[w]);
    }
    free(cells);
    free(prob);
    free(scratch);
    free(c.reps);
    return st;
}
