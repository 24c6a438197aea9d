/*
** rank.c -- rankings of contestants from battles (METHODS §6): the win rate and the pairwise
** win-rate matrix, online Elo averaged over random orders, Bradley-Terry maximum likelihood
** on the Elo scale with bootstrap intervals, the Elo trend, and the length- and
** style-controlled Bradley-Terry fits. Peer rank, self-enhancement and the agreement with
** human majorities live in peer.c; text and JSON in rank_render.c.
**
** Invariants:
**   - Every method ranks the battles arb__rank_select picks; the entries are the models with
**     at least one picked battle, best first (undefined scores last, ties by name).
**   - Results are reproducible for a seed and do not depend on threads: every random stream
**     (an Elo permutation, a bootstrap round) has its own MT19937 generator seeded from
**     (seed, stream number), and per-stream results are combined in stream order.
**   - Bradley-Terry works on per-pair outcome counts (a beat b, tie, b beat a), never on
**     single battles: a fit or a bootstrap round costs O(pairs), not O(battles). A bootstrap
**     round draws the battle total over the (pair, outcome) cells from a multinomial with the
**     observed shares, which is the distribution of the counts of resampled battles (§6).
**   - The fits carry a ridge penalty RANK_RIDGE·Σθ²/2 (θ in natural log odds, mean zero at
**     the optimum). It is 1e-6 of one battle's information, so it does not move ratings the
**     data determine (well below 1e-3 Elo), but it keeps them finite when the maximum-
**     likelihood estimate does not exist: a model that never wins (or never loses), or a group
**     of models that beats the rest every time. Those ratings are then bounded only by the
**     ridge (thousands of points from the others), the result says so (bt_ridge_bound), and
**     the renderers print a note. We chose this over failing because such data sets are
**     common (a new model with a few losses) and the other models' ratings stay meaningful.
**
** Not here: which battles a peer-rank round uses and the reviewer weights (peer.c), reading
** battles (battles.c), rendering (rank_render.c).
*/
#include "internal.h"

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

/* Ridge on the log-strengths (see the file comment). */
#define RANK_RIDGE 1e-6
/* Elo points per natural-log unit of odds: 400·log10(odds) = (400 / ln 10)·ln(odds). */
#define ELO_PER_NAT (400.0 / M_LN10)
/* Newton stops when no parameter moves by this much (natural log units: 4e-8 Elo points). */
#define FIT_TOL 1e-10
#define FIT_MAX_ITER 200
/* Bootstrap rounds stop earlier (4e-5 Elo points, 3e-8 in a win rate): far below any
** interval's width, and it saves the last few of a chord iteration's linear steps. */
#define FIT_TOL_BOOT 1e-7
/* Work (battle updates, cell draws) below which a second thread does not pay. */
#define PARALLEL_MIN_WORK 2000000.0
#define RANK_MAX_THREADS 2

/* Stream numbers: each random use of a seed has its own range of streams. */
enum { STREAM_ELO_PERM = 0, STREAM_BOOT_CELLS = 1, STREAM_BOOT_ELO = 2, STREAM_BOOT_LC = 3,
       STREAM_BOOT_STYLE = 4 };

/* ---- parameters ---------------------------------------------------------------------------- */

/* Returns the defaults: win rate, Elo K 32 and initial 1000 over 1000 permutations, no anchor
** (the mean is 1000), no bootstrap, seed 1, 95% intervals, every reviewer, peer rank up to 10
** iterations or a weight change below 1e-9, no trend, no length or style control, humans are
** the reviewers whose name starts with "human". */
arb_rank_params arb_rank_default_params(void)
{
    arb_rank_params p;
    memset(&p, 0, sizeof p);
    p.method = ARB_RANK_WINRATE;
    p.elo_k = 32;
    p.elo_initial = 1000;
    p.elo_permutations = 1000;
    p.seed = 1;
    p.ci_level = 0.95;
    p.max_iterations = 10;
    p.tolerance = 1e-9;
    p.human_prefix = "human";
    return p;
}

/* ---- small helpers ------------------------------------------------------------------------- */

/* calloc that never asks for zero bytes (calloc(0) may return NULL). */
static void *zalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }

/* malloc of n doubles set to NAN; NULL when out of memory. */
static double *nan_doubles(size_t n)
{
    double *x = malloc((n ? n : 1) * sizeof *x);
    if (x)
        for (size_t k = 0; k < n; k++) x[k] = NAN;
    return x;
}

/* *errmsg = before + name (made safe for a terminal) + after, when errmsg is not NULL. */
static void set_err(char **errmsg, const char *before, const char *name, const char *after)
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

/* The 32-bit MT19937 seed of random stream `stream` of `seed` (splitmix64 of both, folded):
** distinct streams get unrelated generators, and each stream's numbers depend only on
** (seed, stream), not on which thread draws them. */
static unsigned long stream_seed(unsigned long long seed, unsigned long long kind,
                                 unsigned long long stream)
{
    uint64_t z = (uint64_t)seed + 0x9E3779B97F4A7C15ull * (stream * 8 + kind + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (unsigned long)((z ^ (z >> 32)) & 0xFFFFFFFFull);
}

/* log σ(d) = −log(1 + e^−d), computed without overflow. */
static double log_sigmoid(double d) { return d >= 0 ? -log1p(exp(-d)) : d - log1p(exp(d)); }

static double sigmoid(double d)
{
    if (d >= 0) return 1.0 / (1.0 + exp(-d));
    double e = exp(d);
    return e / (1.0 + e);
}

/* Replaces a symmetric positive definite n x n matrix (row-major) by its Cholesky factor L
** (lower triangle, A = L Lᵀ). Returns 0, or -1 when A is not positive definite. Our own
** rather than GSL's so a singular matrix is a return value, not GSL's aborting error handler. */
static int cholesky_factor(double *a, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        double d = a[j * n + j];
        for (size_t k = 0; k < j; k++) d -= a[j * n + k] * a[j * n + k];
        if (!(d > 0)) return -1;
        d = sqrt(d);
        a[j * n + j] = d;
        for (size_t i = j + 1; i < n; i++) {
            double s = a[i * n + j];
            for (size_t k = 0; k < j; k++) s -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = s / d;
        }
    }
    return 0;
}

/* Solves L Lᵀ x = rhs with a factor from cholesky_factor; rhs becomes x. */
static void cholesky_apply(const double *l, size_t n, double *rhs)
{
    for (size_t i = 0; i < n; i++) { /* L y = rhs */
        double s = rhs[i];
        for (size_t k = 0; k < i; k++) s -= l[i * n + k] * rhs[k];
        rhs[i] = s / l[i * n + i];
    }
    for (size_t i = n; i-- > 0;) { /* Lᵀ x = y */
        double s = rhs[i];
        for (size_t k = i + 1; k < n; k++) s -= l[k * n + i] * rhs[k];
        rhs[i] = s / l[i * n + i];
    }
}

/* Solves A x = rhs for a symmetric positive definite A (overwritten); rhs becomes x. 0, or
** -1 when A is not positive definite. */
static int cholesky_solve(double *a, size_t n, double *rhs)
{
    if (cholesky_factor(a, n)) return -1;
    cholesky_apply(a, n, rhs);
    return 0;
}

/* Percentile interval (§10) of column `col` of rows x cols replicate values (row-major), as
** arb_stat_bootstrap does it: the (1−level)/2 and (1+level)/2 quantiles of the defined values
** (GSL's linear interpolation between order statistics); NAN when fewer than half are
** defined. scratch holds rows doubles. */
static void percentile(const double *reps, size_t rows, size_t cols, size_t col, double level,
                       double *scratch, double *lo, double *hi)
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

/* ---- tasks on up to two threads ------------------------------------------------------------ */

/* Runs task `task` with the scratch of `worker`. Returns 0, or nonzero to stop (out of
** memory -1, interrupted -2). */
typedef int (*task_fn)(void *ud, size_t worker, size_t task);

typedef struct task_run {
    task_fn fn;
    void *ud;
    size_t n_tasks, n_workers, worker;
    int rc;
} task_run;

static void *task_thread(void *arg)
{
    task_run *t = arg;
    for (size_t k = t->worker; k < t->n_tasks; k += t->n_workers) {
        if (arb__stop_requested) {
            t->rc = -2;
            break;
        }
        if ((t->rc = t->fn(t->ud, t->worker, k)) != 0) break;
    }
    return NULL;
}

/* How many workers work of this size deserves: 1, or up to RANK_MAX_THREADS processors. */
static size_t workers_for(double work)
{
    if (work < PARALLEL_MIN_WORK) return 1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 2) return 1;
    return cpus < RANK_MAX_THREADS ? (size_t)cpus : RANK_MAX_THREADS;
}

/* Runs tasks 0..n_tasks-1, worker w taking w, w + n_workers, ... Each task writes only its
** own results, so the outcome does not depend on the workers' timing. Worker 0 runs on the
** calling thread; if a thread cannot start, its tasks run there too. Returns 0 or the first
** nonzero task result. */
static int run_tasks(size_t n_tasks, size_t n_workers, task_fn fn, void *ud)
{
    task_run runs[RANK_MAX_THREADS];
    pthread_t threads[RANK_MAX_THREADS];
    int started[RANK_MAX_THREADS] = {0};
    if (n_workers < 1) n_workers = 1;
    if (n_workers > RANK_MAX_THREADS) n_workers = RANK_MAX_THREADS;
    for (size_t w = 0; w < n_workers; w++)
        runs[w] = (task_run){fn, ud, n_tasks, n_workers, w, 0};
    for (size_t w = 1; w < n_workers; w++)
        started[w] = pthread_create(&threads[w], NULL, task_thread, &runs[w]) == 0;
    task_thread(&runs[0]);
    int rc = runs[0].rc;
    for (size_t w = 1; w < n_workers; w++) {
        if (started[w])
            pthread_join(threads[w], NULL);
        else
            task_thread(&runs[w]);
        if (!rc) rc = runs[w].rc;
    }
    return rc;
}

/* ---- selection, win rate, Elo (shared with peer.c) ----------------------------------------- */

/* 1 when name starts with a non-empty prefix. */
static int is_human(const char *name, const char *prefix)
{
    return prefix && *prefix && !strncmp(name, prefix, strlen(prefix));
}

/* Marks the battles p selects (see internal.h). reviewer_model[r]: the contestant index of
** reviewer r's reviewer_info entry (its model, UINT32_MAX when NULL or not a contestant in b);
** a reviewer without an entry is the contestant named like it, if any. Selection: the
** reviewers of p->reviewers when given (each must have reviewed a battle), else every
** reviewer except the humans (names starting with p->human_prefix), who are the reference of
** the agreement in peer.c -- unless nobody else reviewed, when the humans are the ranking's
** reviewers; then with exclude_self the battles whose pair contains the reviewer's own model
** are dropped. Returns 0, or -1 after setting *errmsg (when not NULL; caller frees). */
int arb__rank_select(const arb_battles *b, const arb_rank_params *p, uint8_t *use,
                     uint32_t *reviewer_model, char **errmsg)
{
    size_t nr = b->reviewers.n;
    uint8_t *allowed = zalloc(nr, 1);
    size_t *reviews = zalloc(nr, sizeof *reviews);
    int rc = -1;
    if (!allowed || !reviews) {
        set_err(errmsg, "out of memory", NULL, "");
        goto done;
    }
    for (size_t k = 0; p->reviewer_info && k < p->n_reviewer_info; k++)
        if (!p->reviewer_info[k].reviewer) {
            set_err(errmsg, "reviewer_info: an entry has no reviewer name", NULL, "");
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
                set_err(errmsg, "reviewers: an entry is NULL", NULL, "");
                goto done;
            }
            uint32_t r = arb__strtab_find(&b->reviewers, name);
            if (r == UINT32_MAX || reviews[r] == 0) {
                set_err(errmsg, "reviewer \"", name, "\" reviewed no battle");
                goto done;
            }
            allowed[r] = 1;
        }
    } else {
        int others = 0;
        for (size_t r = 0; r < nr; r++)
            if (reviews[r] && !is_human(b->reviewers.names[r], p->human_prefix)) others = 1;
        for (size_t r = 0; r < nr; r++)
            allowed[r] = !others || !is_human(b->reviewers.names[r], p->human_prefix);
    }
    for (size_t k = 0; k < b->n; k++) {
        uint32_t r = b->r[k];
        int ok = allowed[r];
        if (ok && p->exclude_self && reviewer_model[r] != UINT32_MAX &&
            (reviewer_model[r] == b->i[k] || reviewer_model[r] == b->j[k]))
            ok = 0;
        use[k] = (uint8_t)ok;
    }
    rc = 0;
done:
    free(allowed);
    free(reviews);
    return rc;
}

/* Win rate per model index (§6) over the selected battles, each weighted by weight[r] (NULL:
** 1): (weighted wins + ½ weighted ties) / weighted battles; NAN for a model without a battle
** of positive weight. out holds b->models.n values. */
void arb__win_rate(const arb_battles *b, const uint8_t *use, const double *weight, double *out)
{
    size_t m = b->models.n;
    double *battles = zalloc(m, sizeof *battles);
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
        double expected = 1.0 / (1.0 + exp((rating[e->j] - rating[e->i]) / ELO_PER_NAT));
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

static int elo_perm_task(void *ud, size_t worker, size_t perm)
{
    elo_perm_ctx *c = ud;
    const elo_battle *v = c->sel;
    if (c->n_perm > 1) {
        memcpy(c->order[worker], c->sel, c->n_sel * sizeof *c->sel);
        gsl_rng_set(c->rng[worker], stream_seed(c->seed, STREAM_ELO_PERM, perm));
        shuffle_battles(c->rng[worker], c->order[worker], c->n_sel);
        v = c->order[worker];
    }
    elo_pass(v, c->n_sel, c->weight, c->k, c->initial, c->per + perm * c->m, c->m);
    return 0;
}

/* Online Elo (§6) over the selected battles, averaged over p->elo_permutations orders: with 1
** the given order; otherwise permutation k is gsl_ran_shuffle's permutation (shuffle_battles) by an MT19937
** generator seeded from (p->seed, k), so the result is the same on any number of threads. mean[a] is the mean
** rating of model a over the permutations, sd[a] (when sd is not NULL) their sample standard
** deviation (NAN with one permutation). Models without a selected battle keep elo_initial.
** Returns 0, or -1 when out of memory. */
int arb__elo(const arb_battles *b, const uint8_t *use, const double *weight,
             const arb_rank_params *p, double *mean, double *sd)
{
    size_t m = b->models.n, n_sel = 0;
    size_t n_perm = p->elo_permutations ? p->elo_permutations : 1;
    int rc = -1;
    elo_perm_ctx c;
    memset(&c, 0, sizeof c);
    elo_battle *order[RANK_MAX_THREADS] = {0};
    gsl_rng *rng[RANK_MAX_THREADS] = {0};
    elo_battle *sel = elo_battles(b, use, &n_sel);
    size_t n_workers = workers_for((double)n_sel * (double)n_perm);
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
    if (run_tasks(n_perm, n_workers, elo_perm_task, &c)) goto done;
    for (size_t a = 0; a < m; a++) { /* in permutation order: thread-independent */
        double sum = 0;
        for (size_t t = 0; t < n_perm; t++) sum += per[t * m + a];
        double mu = sum / (double)n_perm, ss = 0;
        for (size_t t = 0; t < n_perm; t++) ss += (per[t * m + a] - mu) * (per[t * m + a] - mu);
        mean[a] = mu;
        if (sd) sd[a] = n_perm > 1 ? sqrt(ss / (double)(n_perm - 1)) : NAN;
    }
    rc = 0;
done:
    for (size_t w = 0; w < RANK_MAX_THREADS; w++) {
        free(order[w]);
        if (rng[w]) gsl_rng_free(rng[w]);
    }
    free(c.per);
    free(sel);
    return rc;
}

/* ---- per-pair outcome counts ---------------------------------------------------------------- */

/* Outcome counts of every unordered pair of ranked models (compact indices a < b) that met:
** cnt[3p] = battles a won, cnt[3p+1] ties, cnt[3p+2] battles b won, whichever was shown
** first. */
typedef struct pair_table {
    size_t m, n_pairs;
    uint32_t *a, *b;
    double *cnt;
} pair_table;

static void pair_table_free(pair_table *t)
{
    free(t->a);
    free(t->b);
    free(t->cnt);
}

/* Open-addressing map from a pair key (a·m + b) to its index. */
typedef struct pair_map {
    uint64_t *keys; /* key + 1, 0 = empty */
    uint32_t *index;
    size_t n_slots;
} pair_map;

static size_t pair_slot(const pair_map *h, uint64_t key)
{
    uint64_t x = key * 0x9E3779B97F4A7C15ull;
    size_t s = (size_t)(x ^ (x >> 29)) & (h->n_slots - 1);
    while (h->keys[s] && h->keys[s] != key + 1) s = (s + 1) & (h->n_slots - 1);
    return s;
}

/* Fills t from the selected battles; compact[x] is the ranked index of model x (UINT32_MAX:
** not ranked). Returns 0, or -1 when out of memory. */
static int pair_table_build(pair_table *t, const arb_battles *b, const uint8_t *use,
                            const uint32_t *compact, size_t m)
{
    memset(t, 0, sizeof *t);
    t->m = m;
    pair_map h = {0};
    size_t cap = 0;
    int rc = -1;
    h.n_slots = 64;
    h.keys = calloc(h.n_slots, sizeof *h.keys);
    h.index = malloc(h.n_slots * sizeof *h.index);
    if (!h.keys || !h.index) goto done;
    for (size_t k = 0; k < b->n; k++) {
        if (!use[k]) continue;
        uint32_t i = compact[b->i[k]], j = compact[b->j[k]];
        uint32_t a = i < j ? i : j, c = i < j ? j : i;
        int outcome = b->s[k] == 0 ? 1 : ((b->s[k] < 0) == (i == a)) ? 0 : 2;
        uint64_t key = (uint64_t)a * m + c;
        size_t s = pair_slot(&h, key);
        if (!h.keys[s]) {
            if (t->n_pairs == cap) {
                size_t nc = cap ? 2 * cap : 64;
                uint32_t *na = realloc(t->a, nc * sizeof *na);
                if (na) t->a = na;
                uint32_t *nb = realloc(t->b, nc * sizeof *nb);
                if (nb) t->b = nb;
                double *ncnt = realloc(t->cnt, 3 * nc * sizeof *ncnt);
                if (ncnt) t->cnt = ncnt;
                if (!na || !nb || !ncnt) goto done;
                cap = nc;
            }
            if (2 * (t->n_pairs + 1) > h.n_slots) { /* grow the map: rehash */
                pair_map g = {0};
                g.n_slots = 2 * h.n_slots;
                g.keys = calloc(g.n_slots, sizeof *g.keys);
                g.index = malloc(g.n_slots * sizeof *g.index);
                if (!g.keys || !g.index) {
                    free(g.keys);
                    free(g.index);
                    goto done;
                }
                for (size_t x = 0; x < h.n_slots; x++) {
                    if (!h.keys[x]) continue;
                    size_t y = pair_slot(&g, h.keys[x] - 1);
                    g.keys[y] = h.keys[x];
                    g.index[y] = h.index[x];
                }
                free(h.keys);
                free(h.index);
                h = g;
                s = pair_slot(&h, key);
            }
            h.keys[s] = key + 1;
            h.index[s] = (uint32_t)t->n_pairs;
            t->a[t->n_pairs] = a;
            t->b[t->n_pairs] = c;
            t->cnt[3 * t->n_pairs] = t->cnt[3 * t->n_pairs + 1] = t->cnt[3 * t->n_pairs + 2] = 0;
            t->n_pairs++;
        }
        t->cnt[3 * (size_t)h.index[s] + (size_t)outcome] += 1;
    }
    rc = 0;
done:
    free(h.keys);
    free(h.index);
    if (rc) pair_table_free(t);
    return rc;
}

/* Win rates per ranked model from pair counts cnt (ties half), NAN without battles. */
static void win_rates_of_counts(const pair_table *t, const double *cnt, double *out,
                                double *battles)
{
    for (size_t a = 0; a < t->m; a++) out[a] = battles[a] = 0;
    for (size_t x = 0; x < t->n_pairs; x++) {
        const double *c = cnt + 3 * x;
        double n = c[0] + c[1] + c[2];
        out[t->a[x]] += c[0] + 0.5 * c[1];
        out[t->b[x]] += c[2] + 0.5 * c[1];
        battles[t->a[x]] += n;
        battles[t->b[x]] += n;
    }
    for (size_t a = 0; a < t->m; a++) out[a] = battles[a] > 0 ? out[a] / battles[a] : NAN;
}

/* ---- Bradley-Terry ------------------------------------------------------------------------- */

/* Scratch of one fit with P parameters. */
typedef struct fit_work {
    size_t n_par;
    double *grad, *hess, *step, *trial;
} fit_work;

static void fit_work_free(fit_work *w)
{
    free(w->grad);
    free(w->hess);
    free(w->step);
    free(w->trial);
}

static int fit_work_init(fit_work *w, size_t n_par)
{
    memset(w, 0, sizeof *w);
    w->n_par = n_par;
    size_t n = n_par ? n_par : 1;
    w->grad = malloc(n * sizeof *w->grad);
    w->hess = malloc(n * n * sizeof *w->hess);
    w->step = malloc(n * sizeof *w->step);
    w->trial = malloc(n * sizeof *w->trial);
    if (!w->grad || !w->hess || !w->step || !w->trial) {
        fit_work_free(w);
        return -1;
    }
    return 0;
}

/* Penalised log-likelihood of Bradley-Terry log-strengths theta for pair counts (ties as half
** a win for each side): Σ (w_ab log σ(θa−θb) + w_ba log σ(θb−θa)) − ridge·Σθ²/2. */
static double bt_loglik(const pair_table *t, const double *cnt, const double *theta)
{
    double ll = 0;
    for (size_t x = 0; x < t->n_pairs; x++) {
        const double *c = cnt + 3 * x;
        if (c[0] + c[1] + c[2] == 0) continue;
        double d = theta[t->a[x]] - theta[t->b[x]];
        ll += (c[0] + 0.5 * c[1]) * log_sigmoid(d) + (c[2] + 0.5 * c[1]) * log_sigmoid(-d);
    }
    for (size_t a = 0; a < t->m; a++) ll -= 0.5 * RANK_RIDGE * theta[a] * theta[a];
    return ll;
}

/* The size of a step in the ratings' differences: max |δ_a − mean δ|. The common shift of
** all log-strengths is pinned only by the tiny ridge, so rounding noise moves it by far more
** than FIT_TOL while no rating difference changes: convergence ignores it. */
static double step_size(const double *step, size_t m)
{
    double mean = 0, size = 0;
    for (size_t a = 0; a < m; a++) mean += step[a];
    mean = m ? mean / (double)m : 0;
    for (size_t a = 0; a < m; a++) size = fmax(size, fabs(step[a] - mean));
    return isfinite(mean) ? size : INFINITY;
}

/* Gradient of the penalised log-likelihood at theta into grad and, when hess is not NULL, the
** negative Hessian (a weighted graph Laplacian plus the ridge: positive definite) into hess. */
static void bt_derivatives(const pair_table *t, const double *cnt, const double *theta,
                           double *grad, double *hess)
{
    size_t m = t->m;
    memset(grad, 0, m * sizeof *grad);
    if (hess) memset(hess, 0, m * m * sizeof *hess);
    for (size_t x = 0; x < t->n_pairs; x++) {
        const double *c = cnt + 3 * x;
        double n = c[0] + c[1] + c[2];
        if (n == 0) continue;
        size_t a = t->a[x], b = t->b[x];
        double pr = sigmoid(theta[a] - theta[b]);
        double g = c[0] + 0.5 * c[1] - n * pr;
        grad[a] += g;
        grad[b] -= g;
        if (hess) {
            double h = n * pr * (1 - pr);
            hess[a * m + a] += h;
            hess[b * m + b] += h;
            hess[a * m + b] -= h;
            hess[b * m + a] -= h;
        }
    }
    for (size_t a = 0; a < m; a++) {
        grad[a] -= RANK_RIDGE * theta[a];
        if (hess) hess[a * m + a] += RANK_RIDGE;
    }
}

/* Newton's method with step halving on the penalised likelihood, from theta (the start) to
** the maximum: quadratic convergence, each iteration O(pairs + m³). Returns the iterations
** used, or -1 when FIT_MAX_ITER did not reach FIT_TOL (theta holds the last iterate). */
static int bt_fit(const pair_table *t, const double *cnt, double *theta, fit_work *w)
{
    size_t m = t->m;
    double ll = bt_loglik(t, cnt, theta);
    for (int it = 0; it < FIT_MAX_ITER; it++) {
        bt_derivatives(t, cnt, theta, w->grad, w->hess);
        memcpy(w->step, w->grad, m * sizeof *w->step);
        if (cholesky_solve(w->hess, m, w->step)) return -1;
        double size = step_size(w->step, m);
        double f = 1, ll_new = ll;
        for (int half = 0; half < 60; half++, f /= 2) {
            for (size_t a = 0; a < m; a++) w->trial[a] = theta[a] + f * w->step[a];
            ll_new = bt_loglik(t, cnt, w->trial);
            if (ll_new >= ll - 1e-12 * (1 + fabs(ll))) break;
        }
        memcpy(theta, w->trial, m * sizeof *theta);
        ll = ll_new;
        if (f * size < FIT_TOL) return it + 1;
    }
    return -1;
}

/* A bootstrap round's fit by the chord method: Newton steps that reuse the factored Hessian
** h0 of the point estimate, so an iteration is O(pairs + m²) instead of O(m³). A resample's
** Hessian is close to the point estimate's, so the steps shrink geometrically; when they do
** not (a small or odd resample) we fall back to full Newton from the start. Same optimum
** either way, to FIT_TOL. Returns iterations, or -1 when neither converged. */
static int bt_fit_chord(const pair_table *t, const double *cnt, const double *h0,
                        double *theta, fit_work *w)
{
    size_t m = t->m;
    double prev = INFINITY;
    memcpy(w->trial, theta, m * sizeof *theta); /* the start, for the fallback */
    for (int it = 0; it < 40; it++) {
        bt_derivatives(t, cnt, theta, w->step, NULL);
        cholesky_apply(h0, m, w->step);
        for (size_t a = 0; a < m; a++) theta[a] += w->step[a];
        double size = step_size(w->step, m);
        if (!isfinite(size)) break;
        if (size < FIT_TOL_BOOT) return it + 1;
        if (it >= 2 && size > 0.5 * prev) break; /* not contracting well: use Newton */
        prev = size;
    }
    memcpy(theta, w->trial, m * sizeof *theta);
    return bt_fit(t, cnt, theta, w);
}

/* 1 when the graph "a won or tied against b at least once" over the models with battles is
** strongly connected: the condition for the Bradley-Terry MLE to exist (Hunter 2004; a tie
** counts as half a win for both, so it links both ways). */
static int bt_mle_exists(const pair_table *t, const double *cnt, const uint8_t *present)
{
    size_t m = t->m, start = SIZE_MAX, n_present = 0;
    for (size_t a = 0; a < m; a++)
        if (present[a]) {
            n_present++;
            if (start == SIZE_MAX) start = a;
        }
    if (n_present < 2) return 1;
    uint8_t *seen = zalloc(m, 1);
    uint32_t *stack = zalloc(m, sizeof *stack);
    int ok = 1;
    if (!seen || !stack) {
        ok = 1; /* cannot tell; the fit is finite either way */
        goto done;
    }
    for (int dir = 0; dir < 2 && ok; dir++) {
        memset(seen, 0, m);
        size_t top = 0, reached = 1;
        seen[start] = 1;
        stack[top++] = (uint32_t)start;
        while (top) {
            uint32_t u = stack[--top];
            for (size_t x = 0; x < t->n_pairs; x++) { /* O(m·pairs) at worst: point estimate only */
                const double *c = cnt + 3 * x;
                uint32_t from = t->a[x], to = t->b[x];
                double fwd = c[0] + c[1], back = c[2] + c[1]; /* from beat to / to beat from */
                if (dir) {
                    double tmp = fwd;
                    fwd = back;
                    back = tmp;
                }
                if (from == u && fwd > 0 && !seen[to]) {
                    seen[to] = 1;
                    reached++;
                    stack[top++] = to;
                } else if (to == u && back > 0 && !seen[from]) {
                    seen[from] = 1;
                    reached++;
                    stack[top++] = from;
                }
            }
        }
        ok = reached == n_present;
    }
done:
    free(seen);
    free(stack);
    return ok;
}

/* Ratings on the Elo scale (§6): initial + (400/ln 10)·(θ − ref), ref = θ of the anchor
** (compact index; SIZE_MAX: none) or the mean θ of the present models. Models not present get
** NAN; everything is NAN when the anchor is not present. */
static void to_elo_scale(const double *theta, const uint8_t *present, size_t m, size_t anchor,
                         double initial, double *out)
{
    double ref = 0;
    size_t n = 0;
    if (anchor != SIZE_MAX) {
        ref = present[anchor] ? theta[anchor] : NAN;
    } else {
        for (size_t a = 0; a < m; a++)
            if (present[a]) {
                ref += theta[a];
                n++;
            }
        ref = n ? ref / (double)n : NAN;
    }
    for (size_t a = 0; a < m; a++)
        out[a] = present[a] && isfinite(ref) ? initial + ELO_PER_NAT * (theta[a] - ref) : NAN;
}

/* ---- cell bootstrap: win rate and Bradley-Terry --------------------------------------------- */

typedef struct cell_boot {
    const pair_table *t;
    size_t n_cells;
    const double *prob;       /* observed count per cell (gsl normalises) */
    const uint32_t *cell;     /* 3·pair + outcome of each cell */
    unsigned int total;       /* battles */
    int bt;                   /* 1: Bradley-Terry, 0: win rate */
    const double *theta0;     /* BT point estimate: the warm start */
    const double *h0;         /* BT: Cholesky factor of the Hessian at the point estimate */
    size_t anchor;
    double initial;
    unsigned long long seed;
    double *reps;             /* rounds x m */
    /* per worker */
    gsl_rng *rng[RANK_MAX_THREADS];
    unsigned int *draw[RANK_MAX_THREADS];
    double *cnt[RANK_MAX_THREADS], *theta[RANK_MAX_THREADS], *battles[RANK_MAX_THREADS];
    uint8_t *present[RANK_MAX_THREADS];
    fit_work fit[RANK_MAX_THREADS];
} cell_boot;

static int cell_boot_task(void *ud, size_t w, size_t round)
{
    cell_boot *c = ud;
    const pair_table *t = c->t;
    size_t m = t->m;
    double *out = c->reps + round * m;
    gsl_rng_set(c->rng[w], stream_seed(c->seed, STREAM_BOOT_CELLS, round));
    gsl_ran_multinomial(c->rng[w], c->n_cells, c->total, c->prob, c->draw[w]);
    double *cnt = c->cnt[w];
    memset(cnt, 0, 3 * t->n_pairs * sizeof *cnt);
    for (size_t x = 0; x < c->n_cells; x++) cnt[c->cell[x]] = c->draw[w][x];
    win_rates_of_counts(t, cnt, out, c->battles[w]);
    if (!c->bt) return 0;
    for (size_t a = 0; a < m; a++) c->present[w][a] = c->battles[w][a] > 0;
    memcpy(c->theta[w], c->theta0, m * sizeof *c->theta[w]);
    if (bt_fit_chord(t, cnt, c->h0, c->theta[w], &c->fit[w]) < 0) {
        for (size_t a = 0; a < m; a++) out[a] = NAN; /* an undefined round */
        return 0;
    }
    to_elo_scale(c->theta[w], c->present[w], m, c->anchor, c->initial, out);
    return 0;
}

/* Bootstrap (§6) of the win rate (bt 0) or the Bradley-Terry ratings (bt 1) by multinomial
** draws of per-pair outcome counts: `rounds` rounds, round k drawn by an MT19937 generator
** seeded from (seed, k); lo/hi per ranked model. Returns 0, -1 out of memory, -2 interrupted,
** -3 too many battles for gsl_ran_multinomial (more than UINT_MAX). */
static int cell_bootstrap(const pair_table *t, int bt, const double *theta0, const double *h0,
                          size_t anchor, const arb_rank_params *p, double *lo, double *hi)
{
    size_t m = t->m, rounds = p->bootstrap;
    cell_boot c;
    memset(&c, 0, sizeof c);
    int rc = -1;
    double total = 0;
    double *prob = zalloc(3 * t->n_pairs, sizeof *prob);
    uint32_t *cell = zalloc(3 * t->n_pairs, sizeof *cell);
    double *scratch = zalloc(rounds, sizeof *scratch);
    size_t n_workers = 1;
    if (rounds > SIZE_MAX / sizeof(double) / (m ? m : 1)) goto done;
    c.reps = zalloc(rounds * m, sizeof *c.reps);
    if (!prob || !cell || !scratch || !c.reps) goto done;
    for (size_t x = 0; x < 3 * t->n_pairs; x++) {
        if (t->cnt[x] == 0) continue;
        prob[c.n_cells] = t->cnt[x];
        cell[c.n_cells++] = (uint32_t)x;
        total += t->cnt[x];
    }
    if (total > (double)UINT_MAX) {
        rc = -3;
        goto done;
    }
    c.t = t;
    c.prob = prob;
    c.cell = cell;
    c.total = (unsigned int)total;
    c.bt = bt;
    c.theta0 = theta0;
    c.h0 = h0;
    c.anchor = anchor;
    c.initial = p->elo_initial;
    c.seed = p->seed;
    n_workers = workers_for((double)rounds * (double)c.n_cells * (bt ? 20.0 : 1.0));
    for (size_t w = 0; w < n_workers; w++) {
        c.rng[w] = gsl_rng_alloc(gsl_rng_mt19937);
        c.draw[w] = zalloc(c.n_cells, sizeof *c.draw[w]);
        c.cnt[w] = zalloc(3 * t->n_pairs, sizeof *c.cnt[w]);
        c.theta[w] = zalloc(m, sizeof *c.theta[w]);
        c.battles[w] = zalloc(m, sizeof *c.battles[w]);
        c.present[w] = zalloc(m, 1);
        if (!c.rng[w] || !c.draw[w] || !c.cnt[w] || !c.theta[w] || !c.battles[w] ||
            !c.present[w] || (bt && fit_work_init(&c.fit[w], m)))
            goto done;
    }
    if ((rc = run_tasks(rounds, n_workers, cell_boot_task, &c)) != 0) goto done;
    for (size_t a = 0; a < m; a++)
        percentile(c.reps, rounds, m, a, p->ci_level, scratch, &lo[a], &hi[a]);
    rc = 0;
done:
    for (size_t w = 0; w < RANK_MAX_THREADS; w++) {
        if (c.rng[w]) gsl_rng_free(c.rng[w]);
        free(c.draw[w]);
        free(c.cnt[w]);
        free(c.theta[w]);
        free(c.battles[w]);
        free(c.present[w]);
        fit_work_free(&c.fit[w]);
    }
    free(prob);
    free(cell);
    free(scratch);
    free(c.reps);
    return rc;
}

/* ---- Elo bootstrap ------------------------------------------------------------------------- */

typedef struct elo_boot {
    const elo_battle *sel; /* compact model indices */
    size_t n_sel, m;
    double k, initial;
    size_t anchor;
    unsigned long long seed;
    double *reps;
    gsl_rng *rng[RANK_MAX_THREADS];
    elo_battle *draw[RANK_MAX_THREADS];
    size_t *count[RANK_MAX_THREADS];
} elo_boot;

static int elo_boot_task(void *ud, size_t w, size_t round)
{
    elo_boot *c = ud;
    size_t m = c->m;
    double *out = c->reps + round * m;
    gsl_rng_set(c->rng[w], stream_seed(c->seed, STREAM_BOOT_ELO, round));
    memset(c->count[w], 0, m * sizeof *c->count[w]);
    for (size_t t = 0; t < c->n_sel; t++) {
        const elo_battle *e = &c->sel[gsl_rng_uniform_int(c->rng[w], (unsigned long)c->n_sel)];
        c->draw[w][t] = *e;
        c->count[w][e->i]++;
        c->count[w][e->j]++;
    }
    elo_pass(c->draw[w], c->n_sel, NULL, c->k, c->initial, out, m);
    double shift = 0;
    if (c->anchor != SIZE_MAX)
        shift = c->count[w][c->anchor] ? c->initial - out[c->anchor] : NAN;
    for (size_t a = 0; a < m; a++) out[a] = c->count[w][a] ? out[a] + shift : NAN;
    return 0;
}

/* Bootstrap of online Elo, arena style: each round draws the battles with replacement, in the
** order drawn (itself a random order), and makes one Elo pass; round k uses an MT19937
** generator seeded from (seed, k). Ratings of models absent from a round are undefined in it.
** 0, -1 out of memory, -2 interrupted. */
static int elo_bootstrap(const elo_battle *sel, size_t n_sel, size_t m, size_t anchor,
                         const arb_rank_params *p, double *lo, double *hi)
{
    size_t rounds = p->bootstrap;
    elo_boot c;
    memset(&c, 0, sizeof c);
    int rc = -1;
    double *scratch = zalloc(rounds, sizeof *scratch);
    size_t n_workers = workers_for((double)rounds * (double)n_sel);
    if (n_sel >= 0xFFFFFFFFull || rounds > SIZE_MAX / sizeof(double) / (m ? m : 1)) goto done;
    c.reps = zalloc(rounds * m, sizeof *c.reps);
    if (!scratch || !c.reps) goto done;
    c.sel = sel;
    c.n_sel = n_sel;
    c.m = m;
    c.k = p->elo_k;
    c.initial = p->elo_initial;
    c.anchor = anchor;
    c.seed = p->seed;
    for (size_t w = 0; w < n_workers; w++) {
        c.rng[w] = gsl_rng_alloc(gsl_rng_mt19937);
        c.draw[w] = zalloc(n_sel, sizeof *c.draw[w]);
        c.count[w] = zalloc(m, sizeof *c.count[w]);
        if (!c.rng[w] || !c.draw[w] || !c.count[w]) goto done;
    }
    if ((rc = run_tasks(rounds, n_workers, elo_boot_task, &c)) != 0) goto done;
    for (size_t a = 0; a < m; a++)
        percentile(c.reps, rounds, m, a, p->ci_level, scratch, &lo[a], &hi[a]);
    rc = 0;
done:
    for (size_t w = 0; w < RANK_MAX_THREADS; w++) {
        if (c.rng[w]) gsl_rng_free(c.rng[w]);
        free(c.draw[w]);
        free(c.count[w]);
    }
    free(scratch);
    free(c.reps);
    return rc;
}

/* ---- length and style control --------------------------------------------------------------- */

/* Per-battle rows of the controlled Bradley-Terry model: P(a beats b) = σ(θa − θb + β·z), with
** z the scaled differences of the style features (a minus b). y = 1, ½ (tie), 0. */
typedef struct ctl_rows {
    size_t n, n_feat, m;
    uint32_t *a, *b;
    double *y, *z; /* n, n x n_feat */
} ctl_rows;

static void ctl_rows_free(ctl_rows *r)
{
    free(r->a);
    free(r->b);
    free(r->y);
    free(r->z);
}

/* Builds the rows of the selected battles whose first n_feat style features are known for both
** answers (*left_out counts the others). Feature k of a row: (x_a − x_b)/(x_a + x_b) (0 when
** both are 0), as the arena's style control normalises, then divided by the root mean square of
** its column so coefficients are per typical difference -- not centred, so z = 0 still means
** "the same". Returns 0, or -1 when out of memory. */
static int ctl_rows_build(ctl_rows *r, const arb_battles *b, const uint8_t *use,
                          const uint32_t *compact, size_t m, size_t n_feat, size_t *left_out)
{
    memset(r, 0, sizeof *r);
    r->n_feat = n_feat;
    r->m = m;
    *left_out = 0;
    size_t n_use = 0;
    for (size_t k = 0; k < b->n; k++) n_use += use[k];
    size_t cap = n_use ? n_use : 1;
    r->a = malloc(cap * sizeof *r->a);
    r->b = malloc(cap * sizeof *r->b);
    r->y = malloc(cap * sizeof *r->y);
    r->z = malloc(cap * n_feat * sizeof *r->z);
    if (!r->a || !r->b || !r->y || !r->z) {
        ctl_rows_free(r);
        return -1;
    }
    double rms[ARB_STYLE__COUNT] = {0};
    for (size_t k = 0; k < b->n; k++) {
        if (!use[k]) continue;
        const float *st = b->style ? b->style + k * 2 * ARB_STYLE__COUNT : NULL;
        int known = st != NULL;
        for (size_t f = 0; f < n_feat && known; f++)
            known = !isnan(st[f]) && !isnan(st[ARB_STYLE__COUNT + f]);
        if (!known) {
            (*left_out)++;
            continue;
        }
        size_t x = r->n++;
        r->a[x] = compact[b->i[k]];
        r->b[x] = compact[b->j[k]];
        r->y[x] = (1.0 - b->s[k]) / 2.0;
        for (size_t f = 0; f < n_feat; f++) {
            double xi = st[f], xj = st[ARB_STYLE__COUNT + f], sum = xi + xj;
            double d = sum > 0 ? (xi - xj) / sum : 0.0;
            r->z[x * n_feat + f] = d;
            rms[f] += d * d;
        }
    }
    for (size_t f = 0; f < n_feat; f++) {
        double s = r->n ? sqrt(rms[f] / (double)r->n) : 0;
        if (s > 0)
            for (size_t x = 0; x < r->n; x++) r->z[x * n_feat + f] /= s;
    }
    return 0;
}

/* Penalised log-likelihood of parameters par = (θ[0..m), β[0..n_feat)) with row weights w
** (NULL: 1); ties as half a win each way (y = ½). */
static double ctl_loglik(const ctl_rows *r, const double *w, const double *par)
{
    size_t m = r->m, nf = r->n_feat;
    double ll = 0;
    for (size_t x = 0; x < r->n; x++) {
        double c = w ? w[x] : 1.0;
        if (c == 0) continue;
        double d = par[r->a[x]] - par[r->b[x]];
        for (size_t f = 0; f < nf; f++) d += par[m + f] * r->z[x * nf + f];
        ll += c * (r->y[x] * log_sigmoid(d) + (1 - r->y[x]) * log_sigmoid(-d));
    }
    for (size_t k = 0; k < m + nf; k++) ll -= 0.5 * RANK_RIDGE * par[k] * par[k];
    return ll;
}

/* Gradient (and, when H is not NULL, the negative Hessian) of the controlled model's
** penalised log-likelihood at par, rows weighted by w (NULL: 1). */
static void ctl_derivatives(const ctl_rows *r, const double *w, const double *par,
                            double *grad, double *H)
{
    size_t m = r->m, nf = r->n_feat, np = m + nf;
    memset(grad, 0, np * sizeof *grad);
    if (H) memset(H, 0, np * np * sizeof *H);
    for (size_t x = 0; x < r->n; x++) {
        double c = w ? w[x] : 1.0;
        if (c == 0) continue;
        size_t a = r->a[x], b = r->b[x];
        const double *z = r->z + x * nf;
        double d = par[a] - par[b];
        for (size_t f = 0; f < nf; f++) d += par[m + f] * z[f];
        double pr = sigmoid(d), g = c * (r->y[x] - pr);
        grad[a] += g;
        grad[b] -= g;
        for (size_t f = 0; f < nf; f++) grad[m + f] += g * z[f];
        if (!H) continue;
        double h = c * pr * (1 - pr);
        H[a * np + a] += h;
        H[b * np + b] += h;
        H[a * np + b] -= h;
        H[b * np + a] -= h;
        for (size_t f = 0; f < nf; f++) {
            double hz = h * z[f];
            H[a * np + m + f] += hz;
            H[(m + f) * np + a] += hz;
            H[b * np + m + f] -= hz;
            H[(m + f) * np + b] -= hz;
            for (size_t e = 0; e < nf; e++) H[(m + f) * np + m + e] += hz * z[e];
        }
    }
    for (size_t k = 0; k < np; k++) {
        grad[k] -= RANK_RIDGE * par[k];
        if (H) H[k * np + k] += RANK_RIDGE;
    }
}

/* Size of a step of the controlled model: θ differences only (see step_size), β whole. */
static double ctl_step_size(const double *step, size_t m, size_t nf)
{
    double size = step_size(step, m);
    for (size_t f = 0; f < nf; f++) size = fmax(size, fabs(step[m + f]));
    return size;
}

/* Newton / IRLS with step halving for the controlled model, from par (warm start) to the
** penalised maximum. Returns iterations, or -1 when it did not converge. */
static int ctl_fit(const ctl_rows *r, const double *w, double *par, fit_work *fw)
{
    size_t m = r->m, nf = r->n_feat, np = m + nf;
    double ll = ctl_loglik(r, w, par);
    for (int it = 0; it < FIT_MAX_ITER; it++) {
        ctl_derivatives(r, w, par, fw->grad, fw->hess);
        memcpy(fw->step, fw->grad, np * sizeof *fw->step);
        if (cholesky_solve(fw->hess, np, fw->step)) return -1;
        double size = ctl_step_size(fw->step, m, nf);
        double f = 1, ll_new = ll;
        for (int half = 0; half < 60; half++, f /= 2) {
            for (size_t k = 0; k < np; k++) fw->trial[k] = par[k] + f * fw->step[k];
            ll_new = ctl_loglik(r, w, fw->trial);
            if (ll_new >= ll - 1e-12 * (1 + fabs(ll))) break;
        }
        memcpy(par, fw->trial, np * sizeof *par);
        ll = ll_new;
        if (f * size < FIT_TOL) return it + 1;
    }
    return -1;
}

/* A bootstrap round's controlled fit by the chord method with the point estimate's factored
** Hessian h0 (as bt_fit_chord), falling back to ctl_fit when the steps do not shrink. */
static int ctl_fit_chord(const ctl_rows *r, const double *w, const double *h0, double *par,
                         fit_work *fw)
{
    size_t m = r->m, nf = r->n_feat, np = m + nf;
    double prev = INFINITY;
    memcpy(fw->trial, par, np * sizeof *par);
    for (int it = 0; it < 40; it++) {
        ctl_derivatives(r, w, par, fw->step, NULL);
        cholesky_apply(h0, np, fw->step);
        for (size_t k = 0; k < np; k++) par[k] += fw->step[k];
        double size = ctl_step_size(fw->step, m, nf);
        if (!isfinite(size)) break;
        if (size < FIT_TOL_BOOT) return it + 1;
        if (it >= 2 && size > 0.5 * prev) break;
        prev = size;
    }
    memcpy(par, fw->trial, np * sizeof *par);
    return ctl_fit(r, w, par, fw);
}

/* Length-controlled win rate per model from a fit (§6 style control): the mean over its rows
** (weights w) of σ(θ_c − θ_opponent), the chance to beat each opponent it met at zero length
** difference, weighted by how often they met. NAN for a model without rows. */
static void lc_win_rates(const ctl_rows *r, const double *w, const double *par, double *out,
                         double *n_rows)
{
    for (size_t a = 0; a < r->m; a++) out[a] = n_rows[a] = 0;
    for (size_t x = 0; x < r->n; x++) {
        double c = w ? w[x] : 1.0;
        if (c == 0) continue;
        double pr = sigmoid(par[r->a[x]] - par[r->b[x]]);
        out[r->a[x]] += c * pr;
        out[r->b[x]] += c * (1 - pr);
        n_rows[r->a[x]] += c;
        n_rows[r->b[x]] += c;
    }
    for (size_t a = 0; a < r->m; a++) out[a] = n_rows[a] > 0 ? out[a] / n_rows[a] : NAN;
}

typedef struct ctl_boot {
    const ctl_rows *r;
    int lc;              /* 1: LC win rate, 0: style rating */
    const double *par0;  /* point estimate: warm start */
    const double *h0;    /* Cholesky factor of the Hessian at the point estimate */
    size_t anchor;
    double initial;
    unsigned long long seed;
    int stream;
    double *reps;
    gsl_rng *rng[RANK_MAX_THREADS];
    double *w[RANK_MAX_THREADS], *par[RANK_MAX_THREADS], *n_rows[RANK_MAX_THREADS];
    uint8_t *present[RANK_MAX_THREADS];
    fit_work fit[RANK_MAX_THREADS];
} ctl_boot;

static int ctl_boot_task(void *ud, size_t wk, size_t round)
{
    ctl_boot *c = ud;
    const ctl_rows *r = c->r;
    size_t m = r->m;
    double *out = c->reps + round * m, *w = c->w[wk];
    gsl_rng_set(c->rng[wk], stream_seed(c->seed, (unsigned long long)c->stream, round));
    memset(w, 0, r->n * sizeof *w);
    for (size_t x = 0; x < r->n; x++) w[gsl_rng_uniform_int(c->rng[wk], (unsigned long)r->n)] += 1;
    memcpy(c->par[wk], c->par0, (m + r->n_feat) * sizeof *c->par[wk]);
    if (ctl_fit_chord(r, w, c->h0, c->par[wk], &c->fit[wk]) < 0) {
        for (size_t a = 0; a < m; a++) out[a] = NAN;
        return 0;
    }
    lc_win_rates(r, w, c->par[wk], out, c->n_rows[wk]);
    if (c->lc) return 0;
    for (size_t a = 0; a < m; a++) c->present[wk][a] = c->n_rows[wk][a] > 0;
    to_elo_scale(c->par[wk], c->present[wk], m, c->anchor, c->initial, out);
    return 0;
}

/* Bootstrap of the LC win rate (lc 1) or style ratings (lc 0) by resampling the rows (battles)
** with replacement, each round refitted from the point estimate: O(rows) per round, so this
** is the slow bootstrap (documented). 0, -1 out of memory, -2 interrupted. */
static int ctl_bootstrap(const ctl_rows *r, int lc, const double *par0, const double *h0,
                         size_t anchor, const arb_rank_params *p, double *lo, double *hi)
{
    size_t m = r->m, rounds = p->bootstrap, np = m + r->n_feat;
    ctl_boot c;
    memset(&c, 0, sizeof c);
    int rc = -1;
    double *scratch = zalloc(rounds, sizeof *scratch);
    size_t n_workers = workers_for((double)rounds * (double)r->n * 10.0);
    if (r->n >= 0xFFFFFFFFull || rounds > SIZE_MAX / sizeof(double) / (m ? m : 1)) goto done;
    c.reps = zalloc(rounds * m, sizeof *c.reps);
    if (!scratch || !c.reps) goto done;
    c.r = r;
    c.lc = lc;
    c.par0 = par0;
    c.h0 = h0;
    c.anchor = anchor;
    c.initial = p->elo_initial;
    c.seed = p->seed;
    c.stream = lc ? STREAM_BOOT_LC : STREAM_BOOT_STYLE;
    for (size_t w = 0; w < n_workers; w++) {
        c.rng[w] = gsl_rng_alloc(gsl_rng_mt19937);
        c.w[w] = zalloc(r->n, sizeof *c.w[w]);
        c.par[w] = zalloc(np, sizeof *c.par[w]);
        c.n_rows[w] = zalloc(m, sizeof *c.n_rows[w]);
        c.present[w] = zalloc(m, 1);
        if (!c.rng[w] || !c.w[w] || !c.par[w] || !c.n_rows[w] || !c.present[w] ||
            fit_work_init(&c.fit[w], np))
            goto done;
    }
    if ((rc = run_tasks(rounds, n_workers, ctl_boot_task, &c)) != 0) goto done;
    for (size_t a = 0; a < m; a++)
        percentile(c.reps, rounds, m, a, p->ci_level, scratch, &lo[a], &hi[a]);
    rc = 0;
done:
    for (size_t w = 0; w < RANK_MAX_THREADS; w++) {
        if (c.rng[w]) gsl_rng_free(c.rng[w]);
        free(c.w[w]);
        free(c.par[w]);
        free(c.n_rows[w]);
        free(c.present[w]);
        fit_work_free(&c.fit[w]);
    }
    free(scratch);
    free(c.reps);
    return rc;
}

/* ---- arb_rank_compute ---------------------------------------------------------------------- */

/* What arb_rank_compute works with: the selection, the ranked models (compact indices) and
** per-model results in compact order. */
typedef struct rank_ctx {
    const arb_battles *b;
    const arb_rank_params *p;
    uint8_t *use;
    uint32_t *reviewer_model;
    uint32_t *compact;   /* model index -> ranked index, UINT32_MAX when not ranked */
    uint32_t *model_of;  /* ranked index -> model index */
    size_t m;            /* ranked models */
    size_t n_used;       /* selected battles */
    size_t anchor;       /* ranked index of p->anchor, SIZE_MAX none */
    pair_table pairs;
    double *score, *ci_lo, *ci_hi, *sd;
    double *lc, *lc_lo, *lc_hi, *style, *style_lo, *style_hi;
    size_t *battles, *wins, *ties, *losses;
} rank_ctx;

static void rank_ctx_free(rank_ctx *c)
{
    free(c->use);
    free(c->reviewer_model);
    free(c->compact);
    free(c->model_of);
    pair_table_free(&c->pairs);
    free(c->score);
    free(c->ci_lo);
    free(c->ci_hi);
    free(c->sd);
    free(c->lc);
    free(c->lc_lo);
    free(c->lc_hi);
    free(c->style);
    free(c->style_lo);
    free(c->style_hi);
    free(c->battles);
    free(c->wins);
    free(c->ties);
    free(c->losses);
}

/* Status for an internal failure code: -1 out of memory, -2 interrupted. */
static arb_status status_of(int rc) { return rc == -2 ? ARB_INTERRUPTED : ARB_NOMEM; }

/* Bradley-Terry point estimate and (p->bootstrap > 0) intervals into c->score, c->ci_*.
** out->bt_ridge_bound says whether the MLE exists. 0, -1 out of memory, -2 interrupted, -3
** too many battles for the multinomial. */
static int rank_bt(rank_ctx *c, arb_rank *out)
{
    size_t m = c->m;
    double *theta = zalloc(m, sizeof *theta);
    uint8_t *present = zalloc(m, 1);
    fit_work fw;
    int rc = -1;
    if (!theta || !present || fit_work_init(&fw, m)) {
        free(theta);
        free(present);
        return -1;
    }
    for (size_t a = 0; a < m; a++) present[a] = c->battles[a] > 0;
    if (bt_fit(&c->pairs, c->pairs.cnt, theta, &fw) < 0) {
        /* Not reached in practice (the ridge makes the problem strictly concave); keep the
        ** ratings undefined rather than report an unconverged fit. */
        for (size_t a = 0; a < m; a++) c->score[a] = NAN;
    } else {
        to_elo_scale(theta, present, m, c->anchor, c->p->elo_initial, c->score);
    }
    out->bt_ridge_bound = !bt_mle_exists(&c->pairs, c->pairs.cnt, present);
    rc = 0;
    if (c->p->bootstrap > 0 && c->n_used > 0) {
        /* the factored Hessian at the estimate, for the rounds' chord iterations */
        bt_derivatives(&c->pairs, c->pairs.cnt, theta, fw.grad, fw.hess);
        if (cholesky_factor(fw.hess, m))
            rc = -1; /* not positive definite: cannot happen with the ridge */
        else
            rc = cell_bootstrap(&c->pairs, 1, theta, fw.hess, c->anchor, c->p, c->ci_lo,
                                c->ci_hi);
    }
    fit_work_free(&fw);
    free(theta);
    free(present);
    return rc;
}

/* Online Elo (and its bootstrap) into c->score, c->sd, c->ci_*; anchored when asked. */
static int rank_elo(rank_ctx *c)
{
    const arb_battles *b = c->b;
    size_t nm = b->models.n;
    double *mean = zalloc(nm, sizeof *mean), *sd = zalloc(nm, sizeof *sd);
    elo_battle *sel = NULL;
    int rc = -1;
    if (!mean || !sd || arb__elo(b, c->use, NULL, c->p, mean, sd)) goto done;
    double shift = c->anchor != SIZE_MAX ? c->p->elo_initial - mean[c->model_of[c->anchor]] : 0;
    for (size_t a = 0; a < c->m; a++) {
        c->score[a] = mean[c->model_of[a]] + shift;
        c->sd[a] = sd[c->model_of[a]];
    }
    if (c->p->bootstrap > 0 && c->n_used > 0) {
        size_t n_sel = 0;
        if (!(sel = elo_battles(b, c->use, &n_sel))) goto done;
        for (size_t t = 0; t < n_sel; t++) {
            sel[t].i = c->compact[sel[t].i];
            sel[t].j = c->compact[sel[t].j];
        }
        if ((rc = elo_bootstrap(sel, n_sel, c->m, c->anchor, c->p, c->ci_lo, c->ci_hi)) != 0)
            goto done;
    }
    rc = 0;
done:
    free(mean);
    free(sd);
    free(sel);
    return rc;
}

/* Length control (lc 1: the LC win rate) or style control (lc 0: style ratings) into c->lc* or
** c->style*; the coefficients and row counts into out. */
static int rank_control(rank_ctx *c, int lc, arb_rank *out)
{
    size_t m = c->m, n_feat = lc ? 1 : ARB_STYLE__COUNT, left_out = 0;
    ctl_rows r;
    fit_work fw;
    if (ctl_rows_build(&r, c->b, c->use, c->compact, m, n_feat, &left_out)) return -1;
    double *par = zalloc(m + n_feat, sizeof *par), *n_rows = zalloc(m, sizeof *n_rows);
    double *value = lc ? c->lc : c->style, *lo = lc ? c->lc_lo : c->style_lo;
    double *hi = lc ? c->lc_hi : c->style_hi;
    uint8_t *present = zalloc(m, 1);
    int rc = -1;
    if (!par || !n_rows || !present || fit_work_init(&fw, m + n_feat)) {
        ctl_rows_free(&r);
        free(par);
        free(n_rows);
        free(present);
        return -1;
    }
    if (lc) {
        out->lc_rows = r.n;
        out->lc_left_out = left_out;
    } else {
        out->style_rows = r.n;
        out->style_left_out = left_out;
    }
    rc = 0;
    if (r.n == 0) goto done; /* nothing to fit: values stay NAN */
    if (ctl_fit(&r, NULL, par, &fw) < 0) goto done;
    for (size_t f = 0; f < n_feat; f++) {
        if (lc)
            out->lc_coef = ELO_PER_NAT * par[m];
        else
            out->style_coef[f] = ELO_PER_NAT * par[m + f];
    }
    lc_win_rates(&r, NULL, par, value, n_rows);
    if (!lc) {
        for (size_t a = 0; a < m; a++) present[a] = n_rows[a] > 0;
        to_elo_scale(par, present, m, c->anchor, c->p->elo_initial, value);
    }
    if (c->p->bootstrap > 0) {
        ctl_derivatives(&r, NULL, par, fw.grad, fw.hess);
        rc = cholesky_factor(fw.hess, m + n_feat)
                 ? -1 /* not positive definite: cannot happen with the ridge */
                 : ctl_bootstrap(&r, lc, par, fw.hess, c->anchor, c->p, lo, hi);
    }
done:
    ctl_rows_free(&r);
    fit_work_free(&fw);
    free(par);
    free(n_rows);
    free(present);
    return rc;
}

/* The Elo trend (§6): one pass over the selected battles in the given order (no permutations,
** no anchor, equal weights), the ratings recorded after every trend_every battles and after
** the last one. out->trend rows are in ranked (compact) order for now. */
static int rank_trend(rank_ctx *c, arb_rank *out)
{
    const arb_battles *b = c->b;
    size_t every = c->p->trend_every, m = c->m;
    if (!every || !c->n_used) return 0;
    size_t rows = (c->n_used + every - 1) / every;
    if (rows > SIZE_MAX / sizeof(double) / (m ? m : 1)) return -1;
    double *trend = zalloc(rows * m, sizeof *trend);
    double *rating = zalloc(m, sizeof *rating);
    if (!trend || !rating) {
        free(trend);
        free(rating);
        return -1;
    }
    for (size_t a = 0; a < m; a++) rating[a] = c->p->elo_initial;
    size_t done = 0, row = 0;
    for (size_t k = 0; k < b->n; k++) {
        if (!c->use[k]) continue;
        elo_battle e = {c->compact[b->i[k]], c->compact[b->j[k]], 0, b->s[k]};
        double expected = 1.0 / (1.0 + exp((rating[e.j] - rating[e.i]) / ELO_PER_NAT));
        double delta = c->p->elo_k * ((1.0 - e.s) / 2.0 - expected);
        rating[e.i] += delta;
        rating[e.j] -= delta;
        done++;
        if (done % every == 0 || done == c->n_used) memcpy(trend + m * row++, rating, m * sizeof *rating);
    }
    free(rating);
    out->trend = trend;
    out->n_trend = row;
    return 0;
}

/* 1 when score a (model na) ranks before score b (model nb): higher first, undefined last,
** equal scores by name -- the same order peer.c uses. */
static int ranks_before(double a, const char *na, double b, const char *nb)
{
    int da = !isnan(a), db = !isnan(b);
    if (da != db) return da;
    if (da && a != b) return a > b;
    return strcmp(na, nb) < 0;
}

typedef struct sort_item {
    double score;
    const char *name;
    size_t index;
} sort_item;

static int sort_item_cmp(const void *pa, const void *pb)
{
    const sort_item *a = pa, *b = pb;
    if (ranks_before(a->score, a->name, b->score, b->name)) return -1;
    if (ranks_before(b->score, b->name, a->score, a->name)) return 1;
    return 0;
}

/* Builds out->entries (best first) from the compact results of c; out->names owns the model
** strings. pos[a] gets the entry position of ranked model a. 0, or -1 out of memory. */
static int fill_entries(rank_ctx *c, arb_rank *out, size_t *pos)
{
    size_t m = c->m;
    sort_item *items = zalloc(m, sizeof *items);
    out->entries = zalloc(m, sizeof *out->entries);
    out->names = zalloc(m + 1, sizeof *out->names);
    if (!items || !out->entries || !out->names) {
        free(items);
        return -1;
    }
    for (size_t a = 0; a < m; a++)
        items[a] = (sort_item){c->score[a], c->b->models.names[c->model_of[a]], a};
    qsort(items, m, sizeof *items, sort_item_cmp);
    for (size_t k = 0; k < m; k++) {
        size_t a = items[k].index;
        char *name = arb__strdup(items[k].name);
        if (!name) {
            free(items);
            return -1;
        }
        out->names[out->n_names++] = name;
        pos[a] = k;
        out->entries[k] = (arb_rank_entry){
            .model = name, .score = c->score[a], .ci_lo = c->ci_lo[a], .ci_hi = c->ci_hi[a],
            .sd = c->sd[a], .lc_win_rate = c->lc[a], .lc_ci_lo = c->lc_lo[a],
            .lc_ci_hi = c->lc_hi[a], .style_rating = c->style[a], .style_ci_lo = c->style_lo[a],
            .style_ci_hi = c->style_hi[a], .battles = c->battles[a], .wins = c->wins[a],
            .ties = c->ties[a], .losses = c->losses[a]};
        out->n_entries = k + 1;
    }
    free(items);
    return 0;
}

/* Peer rank wrote its own entries (best first): record the position of each ranked model
** and copy in what rank.c computed for it (LC and style columns). Models peer rank does not
** list get SIZE_MAX. */
static void merge_peer_entries(rank_ctx *c, arb_rank *out, size_t *pos)
{
    for (size_t a = 0; a < c->m; a++) pos[a] = SIZE_MAX;
    for (size_t k = 0; k < out->n_entries; k++) {
        arb_rank_entry *e = &out->entries[k];
        uint32_t x = arb__strtab_find(&c->b->models, e->model);
        uint32_t a = x == UINT32_MAX ? UINT32_MAX : c->compact[x];
        if (a == UINT32_MAX) continue;
        pos[a] = k;
        e->lc_win_rate = c->lc[a];
        e->lc_ci_lo = c->lc_lo[a];
        e->lc_ci_hi = c->lc_hi[a];
        e->style_rating = c->style[a];
        e->style_ci_lo = c->style_lo[a];
        e->style_ci_hi = c->style_hi[a];
    }
}

/* The pairwise win-rate matrix in entry order (row beats column over their direct battles,
** ties half; NAN when they never met) and the trend re-ordered to entry order. */
static int finish_matrices(rank_ctx *c, arb_rank *out, const size_t *pos)
{
    size_t n = out->n_entries;
    if (n > 0 && n > SIZE_MAX / sizeof(double) / n) return -1;
    out->pairwise = nan_doubles(n * n);
    if (!out->pairwise) return -1;
    for (size_t x = 0; x < c->pairs.n_pairs; x++) {
        size_t pa = pos[c->pairs.a[x]], pb = pos[c->pairs.b[x]];
        if (pa == SIZE_MAX || pb == SIZE_MAX) continue;
        const double *cnt = c->pairs.cnt + 3 * x;
        double total = cnt[0] + cnt[1] + cnt[2];
        out->pairwise[pa * n + pb] = (cnt[0] + 0.5 * cnt[1]) / total;
        out->pairwise[pb * n + pa] = (cnt[2] + 0.5 * cnt[1]) / total;
    }
    if (out->trend) {
        double *t = nan_doubles(out->n_trend * (n ? n : 1));
        if (!t) return -1;
        for (size_t row = 0; row < out->n_trend; row++)
            for (size_t a = 0; a < c->m; a++)
                if (pos[a] != SIZE_MAX) t[row * n + pos[a]] = out->trend[row * c->m + a];
        free(out->trend);
        out->trend = t;
    }
    return 0;
}

/* The weight of every reviewer index from out->reviewers (peer rank), for the weighted vote;
** NULL when out of memory. */
static double *reviewer_weights(const arb_battles *b, const arb_rank *out)
{
    double *w = nan_doubles(b->reviewers.n);
    if (!w) return NULL;
    for (size_t k = 0; k < out->n_reviewers; k++) {
        uint32_t r = arb__strtab_find(&b->reviewers, out->reviewers[k].reviewer);
        if (r != UINT32_MAX) w[r] = out->reviewers[k].weight;
    }
    return w;
}

/* Checks the parameters; returns NULL when fine, else a static message. */
static const char *check_params(const arb_rank_params *p)
{
    if (p->method < ARB_RANK_WINRATE || p->method > ARB_RANK_PEER_ELO)
        return "method must be winrate, elo, bt, peer-winrate or peer-elo";
    if (!(p->elo_k > 0) || !isfinite(p->elo_k)) return "elo_k must be a number > 0";
    if (!isfinite(p->elo_initial)) return "elo_initial must be a finite number";
    if (p->elo_permutations < 1) return "elo_permutations must be at least 1";
    if (!(p->ci_level > 0 && p->ci_level < 1)) return "ci_level must be between 0 and 1";
    if (p->n_reviewers > 0 && !p->reviewers) return "n_reviewers > 0 but no reviewers given";
    if (p->n_reviewer_info > 0 && !p->reviewer_info)
        return "n_reviewer_info > 0 but no reviewer_info given";
    return NULL;
}

/* Ranks the contestants (§6); see arbiter.h. Steps: select the battles, count per model and
** pair, the method's scores (peer rank in peer.c), the LC and style columns, the trend, then
** self-enhancement when a reviewer is a contestant and the agreement with the humans when
** humans reviewed (peer.c). *out is owned by the caller (arb_rank_destroy); *errmsg too
** (arb_free). Returns ARB_INVALID (bad parameters, an anchor or reviewer without battles,
** more than 2^32 battles for the multinomial bootstrap), ARB_NOMEM, ARB_INTERRUPTED. */
arb_status arb_rank_compute(const arb_battles *battles, const arb_rank_params *params,
                            arb_rank **out, char **errmsg)
{
    char *msg = NULL;
    arb_status st = ARB_NOMEM;
    rank_ctx c;
    memset(&c, 0, sizeof c);
    arb_rank *r = NULL;
    size_t *pos = NULL;
    double *weights = NULL;
    if (out) *out = NULL;
    if (errmsg) *errmsg = NULL;
    if (!battles || !params || !out) {
        set_err(&msg, "arb_rank_compute: battles, params and out are required", NULL, "");
        st = ARB_INVALID;
        goto done;
    }
    const char *bad = check_params(params);
    if (bad) {
        set_err(&msg, bad, NULL, "");
        st = ARB_INVALID;
        goto done;
    }
    const arb_battles *b = battles;
    const arb_rank_params *p = params;
    int peer = p->method == ARB_RANK_PEER_WINRATE || p->method == ARB_RANK_PEER_ELO;
    size_t nm = b->models.n, nr = b->reviewers.n;

    if (!(r = calloc(1, sizeof *r))) goto done;
    r->params = *p;
    r->params.anchor = NULL;
    r->params.reviewers = NULL;
    r->params.reviewer_info = NULL;
    r->params.human_prefix = NULL;
    r->human = (arb__rank_human){0, NAN, NAN, NAN, NAN};
    r->lc_coef = NAN;
    for (int f = 0; f < ARB_STYLE__COUNT; f++) r->style_coef[f] = NAN;
    if (p->anchor && !(r->anchor = arb__strdup(p->anchor))) goto done;

    c.b = b;
    c.p = p;
    c.use = zalloc(b->n, 1);
    c.reviewer_model = zalloc(nr, sizeof *c.reviewer_model);
    c.compact = zalloc(nm, sizeof *c.compact);
    c.model_of = zalloc(nm, sizeof *c.model_of);
    if (!c.use || !c.reviewer_model || !c.compact || !c.model_of) goto done;
    if (arb__rank_select(b, p, c.use, c.reviewer_model, &msg)) {
        st = msg && strcmp(msg, "out of memory") ? ARB_INVALID : ARB_NOMEM;
        goto done;
    }
    for (size_t x = 0; x < nm; x++) c.compact[x] = UINT32_MAX;
    for (size_t k = 0; k < b->n; k++) {
        if (!c.use[k]) continue;
        c.n_used++;
        uint32_t ends[2] = {b->i[k], b->j[k]};
        for (int e = 0; e < 2; e++)
            if (c.compact[ends[e]] == UINT32_MAX) c.compact[ends[e]] = 0;
    }
    for (size_t x = 0; x < nm; x++) /* ranked models in model-index order */
        if (c.compact[x] != UINT32_MAX) {
            c.compact[x] = (uint32_t)c.m;
            c.model_of[c.m++] = (uint32_t)x;
        }
    r->n_battles_used = c.n_used;
    size_t m = c.m;
    c.anchor = SIZE_MAX;
    if (p->anchor) {
        uint32_t x = arb__strtab_find(&b->models, p->anchor);
        if (x == UINT32_MAX || c.compact[x] == UINT32_MAX) {
            set_err(&msg, "anchor model \"", p->anchor, "\" has no battle in the selection");
            st = ARB_INVALID;
            goto done;
        }
        c.anchor = c.compact[x];
    }

    c.score = nan_doubles(m), c.ci_lo = nan_doubles(m), c.ci_hi = nan_doubles(m);
    c.sd = nan_doubles(m), c.lc = nan_doubles(m), c.lc_lo = nan_doubles(m);
    c.lc_hi = nan_doubles(m), c.style = nan_doubles(m), c.style_lo = nan_doubles(m);
    c.style_hi = nan_doubles(m);
    c.battles = zalloc(m, sizeof *c.battles), c.wins = zalloc(m, sizeof *c.wins);
    c.ties = zalloc(m, sizeof *c.ties), c.losses = zalloc(m, sizeof *c.losses);
    pos = zalloc(m, sizeof *pos);
    if (!c.score || !c.ci_lo || !c.ci_hi || !c.sd || !c.lc || !c.lc_lo || !c.lc_hi ||
        !c.style || !c.style_lo || !c.style_hi || !c.battles || !c.wins || !c.ties ||
        !c.losses || !pos)
        goto done;
    for (size_t k = 0; k < b->n; k++) {
        if (!c.use[k]) continue;
        uint32_t i = c.compact[b->i[k]], j = c.compact[b->j[k]];
        c.battles[i]++;
        c.battles[j]++;
        if (b->s[k] == 0) {
            c.ties[i]++;
            c.ties[j]++;
        } else {
            c.wins[b->s[k] < 0 ? i : j]++;
            c.losses[b->s[k] < 0 ? j : i]++;
        }
    }
    if (pair_table_build(&c.pairs, b, c.use, c.compact, m)) goto done;

    int rc = 0;
    switch (p->method) {
    case ARB_RANK_WINRATE: {
        double *n_battles = zalloc(m, sizeof *n_battles);
        if (!n_battles) goto done;
        win_rates_of_counts(&c.pairs, c.pairs.cnt, c.score, n_battles);
        free(n_battles);
        if (p->bootstrap > 0 && c.n_used > 0)
            rc = cell_bootstrap(&c.pairs, 0, NULL, NULL, SIZE_MAX, p, c.ci_lo, c.ci_hi);
        break;
    }
    case ARB_RANK_ELO: rc = rank_elo(&c); break;
    case ARB_RANK_BT: rc = rank_bt(&c, r); break;
    default: break; /* peer rank below */
    }
    if (rc == -3) {
        set_err(&msg, "bootstrap: more than 4294967295 battles", NULL, "");
        st = ARB_INVALID;
        goto done;
    }
    if (rc) {
        st = status_of(rc);
        goto done;
    }
    if (p->length_control && (rc = rank_control(&c, 1, r)) != 0) {
        st = status_of(rc);
        goto done;
    }
    if (p->style_control && (rc = rank_control(&c, 0, r)) != 0) {
        st = status_of(rc);
        goto done;
    }
    if (p->trend_every && (double)(c.n_used / p->trend_every + 1) * (double)(m ? m : 1) > 5e7) {
        set_err(&msg, "trend_every is too small for this many battles and models (the trend "
                      "would hold more than 5e7 ratings); use a larger value", NULL, "");
        st = ARB_INVALID;
        goto done;
    }
    if (rank_trend(&c, r)) goto done;

    if (peer) {
        if (arb__peer_rank(b, p, r, &msg)) {
            st = msg && strcmp(msg, "out of memory") ? ARB_INVALID : ARB_NOMEM;
            goto done;
        }
        merge_peer_entries(&c, r, pos);
    } else if (fill_entries(&c, r, pos)) {
        goto done;
    }
    if (finish_matrices(&c, r, pos)) goto done;

    /* Self-enhancement when a reviewer with selected battles is a contestant; agreement with
    ** the humans when there are humans besides the selected reviewers. */
    int any_self = 0, any_human = 0;
    for (size_t k = 0; k < b->n; k++) {
        uint32_t rv = b->r[k];
        if (c.use[k] && c.reviewer_model[rv] != UINT32_MAX) any_self = 1;
        if (!c.use[k] && is_human(b->reviewers.names[rv], p->human_prefix)) any_human = 1;
    }
    if (any_self && arb__rank_self_enhancement(b, p, r)) goto done;
    if (any_human) {
        if (peer && !(weights = reviewer_weights(b, r))) goto done;
        if (arb__rank_human_agreement(b, p, weights, r)) goto done;
    }
    st = ARB_OK;
done:
    if (st != ARB_OK) {
        if (!msg) set_err(&msg, st == ARB_INTERRUPTED ? "interrupted" : arb_strerror(st), NULL, "");
        arb_rank_destroy(r);
        r = NULL;
    }
    if (errmsg)
        *errmsg = st != ARB_OK ? msg : NULL;
    if (st == ARB_OK || !errmsg) free(msg);
    if (out) *out = r;
    rank_ctx_free(&c);
    free(pos);
    free(weights);
    return st;
}

/* ---- accessors ----------------------------------------------------------------------------- */

/* Frees the ranking and every string it owns; NULL is fine. */
void arb_rank_destroy(arb_rank *rank)
{
    if (!rank) return;
    for (size_t k = 0; k < rank->n_names; k++) free(rank->names[k]);
    free(rank->names);
    free(rank->anchor);
    free(rank->entries);
    free(rank->pairwise);
    free(rank->reviewers);
    free(rank->all_scores);
    free(rank->trend);
    free(rank);
}

/* Returns the number of ranked contestants. */
size_t arb_rank_count(const arb_rank *rank) { return rank ? rank->n_entries : 0; }

/* Returns entry index (best first), borrowed from the ranking; NULL out of range. */
const arb_rank_entry *arb_rank_entry_at(const arb_rank *rank, size_t index)
{
    return rank && index < rank->n_entries ? &rank->entries[index] : NULL;
}

/* Returns the win rate of entry row over entry col from their direct battles (ties half);
** NAN when they never met, row == col, or an index is out of range. */
double arb_rank_pairwise(const arb_rank *rank, size_t row, size_t col)
{
    if (!rank || !rank->pairwise || row >= rank->n_entries || col >= rank->n_entries) return NAN;
    return rank->pairwise[row * rank->n_entries + col];
}

/* Returns the number of reviewers with a peer-rank weight or a self-enhancement. */
size_t arb_rank_reviewer_count(const arb_rank *rank) { return rank ? rank->n_reviewers : 0; }

/* Returns reviewer index, borrowed; NULL out of range. */
const arb_rank_reviewer *arb_rank_reviewer_at(const arb_rank *rank, size_t index)
{
    return rank && index < rank->n_reviewers ? &rank->reviewers[index] : NULL;
}

/* Returns the peer-rank iterations (0 for other methods); *converged (when not NULL) gets 1
** when the weights settled within the tolerance. */
int arb_rank_iterations(const arb_rank *rank, int *converged)
{
    if (converged) *converged = rank ? rank->converged : 0;
    return rank ? rank->iterations : 0;
}
