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
** Not here: which battles a ranking uses, online Elo and its bootstrap, seeded streams and the
** task runner (rank_core.c); the reviewer weights (peer.c); reading battles (battles.c);
** rendering (rank_render.c). Calls go rank.c -> peer.c -> rank_core.c (rank.h).
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

/* Ridge on the log-strengths (see the file comment). */
#define RANK_RIDGE 1e-6
/* Newton stops when no parameter moves by this much (natural log units: 4e-8 Elo points). */
#define FIT_TOL 1e-10
#define FIT_MAX_ITER 200
/* Bootstrap rounds stop earlier (4e-5 Elo points, 3e-8 in a win rate): far below any
** interval's width, and it saves the last few of a chord iteration's linear steps. */
#define FIT_TOL_BOOT 1e-7

/* ---- parameters ---------------------------------------------------------------------------- */

/* Returns the defaults: win rate, Elo K 32 and initial 1000 over 1000 permutations, no anchor
** (the mean is 1000), no bootstrap, seed 1, 95% intervals, every reviewer, peer rank up to 10
** iterations or a weight change below 1e-9, no trend, no length or style control, humans are
** the reviewers whose name starts with "human", a strong battle counted once. */
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
    p.max_iterations = 1000;
    p.tolerance = 1e-9;
    p.human_prefix = "human";
    p.strong_weight = 1;
    return p;
}

/* ---- small helpers ------------------------------------------------------------------------- */

/* malloc of n doubles set to NAN; NULL when out of memory. */
static double *nan_doubles(size_t n)
{
    double *x = malloc((n ? n : 1) * sizeof *x);
    if (x)
        for (size_t k = 0; k < n; k++) x[k] = NAN;
    return x;
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
    uint8_t *seen = arb__rank_zalloc(m, 1);
    uint32_t *stack = arb__rank_zalloc(m, sizeof *stack);
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
        out[a] = present[a] && isfinite(ref) ? initial + ARB__ELO_PER_NAT * (theta[a] - ref) : NAN;
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
    gsl_rng *rng[ARB__RANK_MAX_THREADS];
    unsigned int *draw[ARB__RANK_MAX_THREADS];
    double *cnt[ARB__RANK_MAX_THREADS], *theta[ARB__RANK_MAX_THREADS], *battles[ARB__RANK_MAX_THREADS];
    uint8_t *present[ARB__RANK_MAX_THREADS];
    fit_work fit[ARB__RANK_MAX_THREADS];
} cell_boot;

static arb_status cell_boot_task(void *ud, size_t w, size_t round)
{
    cell_boot *c = ud;
    const pair_table *t = c->t;
    size_t m = t->m;
    double *out = c->reps + round * m;
    gsl_rng_set(c->rng[w], arb__rank_stream_seed(c->seed, ARB__STREAM_BOOT_CELLS, round));
    gsl_ran_multinomial(c->rng[w], c->n_cells, c->total, c->prob, c->draw[w]);
    double *cnt = c->cnt[w];
    memset(cnt, 0, 3 * t->n_pairs * sizeof *cnt);
    for (size_t x = 0; x < c->n_cells; x++) cnt[c->cell[x]] = c->draw[w][x];
    win_rates_of_counts(t, cnt, out, c->battles[w]);
    if (!c->bt) return ARB_OK;
    for (size_t a = 0; a < m; a++) c->present[w][a] = c->battles[w][a] > 0;
    memcpy(c->theta[w], c->theta0, m * sizeof *c->theta[w]);
    if (bt_fit_chord(t, cnt, c->h0, c->theta[w], &c->fit[w]) < 0) {
        for (size_t a = 0; a < m; a++) out[a] = NAN; /* an undefined round */
        return ARB_OK;
    }
    to_elo_scale(c->theta[w], c->present[w], m, c->anchor, c->initial, out);
    return ARB_OK;
}

/* Bootstrap (§6) of the win rate (bt 0) or the Bradley-Terry ratings (bt 1) by multinomial
** draws of per-pair outcome counts: `rounds` rounds, round k drawn by an MT19937 generator
** seeded from (seed, k); lo/hi per ranked model. Returns ARB_OK, ARB_NOMEM, ARB_INTERRUPTED,
** or ARB_INVALID with *errmsg set: too many battles for gsl_ran_multinomial (over UINT_MAX). */
static arb_status cell_bootstrap(const pair_table *t, int bt, const double *theta0,
                                 const double *h0, size_t anchor, const arb_rank_params *p,
                                 double *lo, double *hi, char **errmsg)
{
    size_t m = t->m, rounds = p->bootstrap;
    cell_boot c;
    memset(&c, 0, sizeof c);
    arb_status rc = ARB_NOMEM;
    double total = 0;
    double *prob = arb__rank_zalloc(3 * t->n_pairs, sizeof *prob);
    uint32_t *cell = arb__rank_zalloc(3 * t->n_pairs, sizeof *cell);
    double *scratch = arb__rank_zalloc(rounds, sizeof *scratch);
    size_t n_workers = 1;
    if (rounds > SIZE_MAX / sizeof(double) / (m ? m : 1)) goto done;
    c.reps = arb__rank_zalloc(rounds * m, sizeof *c.reps);
    if (!prob || !cell || !scratch || !c.reps) goto done;
    for (size_t x = 0; x < 3 * t->n_pairs; x++) {
        if (t->cnt[x] == 0) continue;
        prob[c.n_cells] = t->cnt[x];
        cell[c.n_cells++] = (uint32_t)x;
        total += t->cnt[x];
    }
    if (total > (double)UINT_MAX) {
        free(*errmsg);
        *errmsg = arb__strdup("bootstrap: more than 4294967295 battles");
        rc = ARB_INVALID;
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
    n_workers = arb__rank_workers_for((double)rounds * (double)c.n_cells * (bt ? 20.0 : 1.0));
    for (size_t w = 0; w < n_workers; w++) {
        c.rng[w] = gsl_rng_alloc(gsl_rng_mt19937);
        c.draw[w] = arb__rank_zalloc(c.n_cells, sizeof *c.draw[w]);
        c.cnt[w] = arb__rank_zalloc(3 * t->n_pairs, sizeof *c.cnt[w]);
        c.theta[w] = arb__rank_zalloc(m, sizeof *c.theta[w]);
        c.battles[w] = arb__rank_zalloc(m, sizeof *c.battles[w]);
        c.present[w] = arb__rank_zalloc(m, 1);
        if (!c.rng[w] || !c.draw[w] || !c.cnt[w] || !c.theta[w] || !c.battles[w] ||
            !c.present[w] || (bt && fit_work_init(&c.fit[w], m)))
            goto done;
    }
    if ((rc = arb__rank_run_tasks(rounds, n_workers, cell_boot_task, &c)) != ARB_OK) goto done;
    for (size_t a = 0; a < m; a++)
        arb__rank_percentile(c.reps, rounds, m, a, p->ci_level, scratch, &lo[a], &hi[a]);
    rc = ARB_OK;
done:
    for (size_t w = 0; w < ARB__RANK_MAX_THREADS; w++) {
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
    gsl_rng *rng[ARB__RANK_MAX_THREADS];
    double *w[ARB__RANK_MAX_THREADS], *par[ARB__RANK_MAX_THREADS], *n_rows[ARB__RANK_MAX_THREADS];
    uint8_t *present[ARB__RANK_MAX_THREADS];
    fit_work fit[ARB__RANK_MAX_THREADS];
} ctl_boot;

static arb_status ctl_boot_task(void *ud, size_t wk, size_t round)
{
    ctl_boot *c = ud;
    const ctl_rows *r = c->r;
    size_t m = r->m;
    double *out = c->reps + round * m, *w = c->w[wk];
    gsl_rng_set(c->rng[wk], arb__rank_stream_seed(c->seed, (unsigned long long)c->stream, round));
    memset(w, 0, r->n * sizeof *w);
    for (size_t x = 0; x < r->n; x++) w[gsl_rng_uniform_int(c->rng[wk], (unsigned long)r->n)] += 1;
    memcpy(c->par[wk], c->par0, (m + r->n_feat) * sizeof *c->par[wk]);
    if (ctl_fit_chord(r, w, c->h0, c->par[wk], &c->fit[wk]) < 0) {
        for (size_t a = 0; a < m; a++) out[a] = NAN;
        return ARB_OK;
    }
    lc_win_rates(r, w, c->par[wk], out, c->n_rows[wk]);
    if (c->lc) return ARB_OK;
    for (size_t a = 0; a < m; a++) c->present[wk][a] = c->n_rows[wk][a] > 0;
    to_elo_scale(c->par[wk], c->present[wk], m, c->anchor, c->initial, out);
    return ARB_OK;
}

/* Bootstrap of the LC win rate (lc 1) or style ratings (lc 0) by resampling the rows (battles)
** with replacement, each round refitted from the point estimate: O(rows) per round, so this
** is the slow bootstrap (documented). ARB_OK, ARB_NOMEM (also: too many rows to draw),
** ARB_INTERRUPTED. */
static arb_status ctl_bootstrap(const ctl_rows *r, int lc, const double *par0, const double *h0,
                                size_t anchor, const arb_rank_params *p, double *lo, double *hi)
{
    size_t m = r->m, rounds = p->bootstrap, np = m + r->n_feat;
    ctl_boot c;
    memset(&c, 0, sizeof c);
    arb_status rc = ARB_NOMEM;
    double *scratch = arb__rank_zalloc(rounds, sizeof *scratch);
    size_t n_workers = arb__rank_workers_for((double)rounds * (double)r->n * 10.0);
    if (r->n >= 0xFFFFFFFFull || rounds > SIZE_MAX / sizeof(double) / (m ? m : 1)) goto done;
    c.reps = arb__rank_zalloc(rounds * m, sizeof *c.reps);
    if (!scratch || !c.reps) goto done;
    c.r = r;
    c.lc = lc;
    c.par0 = par0;
    c.h0 = h0;
    c.anchor = anchor;
    c.initial = p->elo_initial;
    c.seed = p->seed;
    c.stream = lc ? ARB__STREAM_BOOT_LC : ARB__STREAM_BOOT_STYLE;
    for (size_t w = 0; w < n_workers; w++) {
        c.rng[w] = gsl_rng_alloc(gsl_rng_mt19937);
        c.w[w] = arb__rank_zalloc(r->n, sizeof *c.w[w]);
        c.par[w] = arb__rank_zalloc(np, sizeof *c.par[w]);
        c.n_rows[w] = arb__rank_zalloc(m, sizeof *c.n_rows[w]);
        c.present[w] = arb__rank_zalloc(m, 1);
        if (!c.rng[w] || !c.w[w] || !c.par[w] || !c.n_rows[w] || !c.present[w] ||
            fit_work_init(&c.fit[w], np))
            goto done;
    }
    if ((rc = arb__rank_run_tasks(rounds, n_workers, ctl_boot_task, &c)) != ARB_OK) goto done;
    for (size_t a = 0; a < m; a++)
        arb__rank_percentile(c.reps, rounds, m, a, p->ci_level, scratch, &lo[a], &hi[a]);
    rc = ARB_OK;
done:
    for (size_t w = 0; w < ARB__RANK_MAX_THREADS; w++) {
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
    char *msg;           /* the message of an ARB_INVALID (owned) */
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
    free(c->msg);
}

/* Bradley-Terry point estimate and (p->bootstrap > 0) intervals into c->score, c->ci_*.
** out->bt_ridge_bound says whether the MLE exists. ARB_OK, ARB_NOMEM, ARB_INTERRUPTED, or
** ARB_INVALID (c->msg: too many battles for the multinomial). */
static arb_status rank_bt(rank_ctx *c, arb_rank *out)
{
    size_t m = c->m;
    double *theta = arb__rank_zalloc(m, sizeof *theta);
    uint8_t *present = arb__rank_zalloc(m, 1);
    fit_work fw;
    arb_status rc = ARB_NOMEM;
    if (!theta || !present || fit_work_init(&fw, m)) {
        free(theta);
        free(present);
        return ARB_NOMEM;
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
    rc = ARB_OK;
    if (c->p->bootstrap > 0 && c->n_used > 0) {
        /* the factored Hessian at the estimate, for the rounds' chord iterations */
        bt_derivatives(&c->pairs, c->pairs.cnt, theta, fw.grad, fw.hess);
        if (cholesky_factor(fw.hess, m))
            rc = ARB_NOMEM; /* not positive definite: cannot happen with the ridge */
        else
            rc = cell_bootstrap(&c->pairs, 1, theta, fw.hess, c->anchor, c->p, c->ci_lo,
                                c->ci_hi, &c->msg);
    }
    fit_work_free(&fw);
    free(theta);
    free(present);
    return rc;
}

/* Online Elo into c->score, c->sd, and the bootstrap of that same estimator (the mean over
** the permutations; rank_core.c) into c->ci_*; anchored when asked. ARB_OK, ARB_NOMEM,
** ARB_INTERRUPTED, ARB_INVALID (c->msg). */
static arb_status rank_elo(rank_ctx *c)
{
    const arb_battles *b = c->b;
    size_t nm = b->models.n;
    double *mean = arb__rank_zalloc(nm, sizeof *mean), *sd = arb__rank_zalloc(nm, sizeof *sd);
    arb_status rc = ARB_NOMEM;
    if (!mean || !sd || (rc = arb__elo(b, c->use, NULL, c->p, mean, sd)) != ARB_OK) goto done;
    double shift = c->anchor != SIZE_MAX ? c->p->elo_initial - mean[c->model_of[c->anchor]] : 0;
    for (size_t a = 0; a < c->m; a++) {
        c->score[a] = mean[c->model_of[a]] + shift;
        c->sd[a] = sd[c->model_of[a]];
    }
    if (c->p->bootstrap > 0 && c->n_used > 0)
        rc = arb__elo_bootstrap(b, c->use, c->compact, c->m, c->anchor, c->p, c->ci_lo,
                                c->ci_hi, &c->msg);
done:
    free(mean);
    free(sd);
    return rc;
}

/* Length control (lc 1: the LC win rate) or style control (lc 0: style ratings) into c->lc* or
** c->style*; the coefficients and row counts into out. ARB_OK, ARB_NOMEM, ARB_INTERRUPTED. */
static arb_status rank_control(rank_ctx *c, int lc, arb_rank *out)
{
    size_t m = c->m, n_feat = lc ? 1 : ARB_STYLE__COUNT, left_out = 0;
    ctl_rows r;
    fit_work fw;
    if (ctl_rows_build(&r, c->b, c->use, c->compact, m, n_feat, &left_out)) return ARB_NOMEM;
    double *par = arb__rank_zalloc(m + n_feat, sizeof *par), *n_rows = arb__rank_zalloc(m, sizeof *n_rows);
    double *value = lc ? c->lc : c->style, *lo = lc ? c->lc_lo : c->style_lo;
    double *hi = lc ? c->lc_hi : c->style_hi;
    uint8_t *present = arb__rank_zalloc(m, 1);
    arb_status rc = ARB_OK;
    if (!par || !n_rows || !present || fit_work_init(&fw, m + n_feat)) {
        ctl_rows_free(&r);
        free(par);
        free(n_rows);
        free(present);
        return ARB_NOMEM;
    }
    if (lc) {
        out->lc_rows = r.n;
        out->lc_left_out = left_out;
    } else {
        out->style_rows = r.n;
        out->style_left_out = left_out;
    }
    if (r.n == 0) goto done; /* nothing to fit: values stay NAN */
    if (ctl_fit(&r, NULL, par, &fw) < 0) goto done;
    for (size_t f = 0; f < n_feat; f++) {
        if (lc)
            out->lc_coef = ARB__ELO_PER_NAT * par[m];
        else
            out->style_coef[f] = ARB__ELO_PER_NAT * par[m + f];
    }
    lc_win_rates(&r, NULL, par, value, n_rows);
    if (!lc) {
        for (size_t a = 0; a < m; a++) present[a] = n_rows[a] > 0;
        to_elo_scale(par, present, m, c->anchor, c->p->elo_initial, value);
    }
    if (c->p->bootstrap > 0) {
        ctl_derivatives(&r, NULL, par, fw.grad, fw.hess);
        rc = cholesky_factor(fw.hess, m + n_feat)
                 ? ARB_NOMEM /* not positive definite: cannot happen with the ridge */
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
** the last one. out->trend rows are in ranked (compact) order for now. ARB_OK or ARB_NOMEM. */
static arb_status rank_trend(rank_ctx *c, arb_rank *out)
{
    const arb_battles *b = c->b;
    size_t every = c->p->trend_every, m = c->m;
    if (!every || !c->n_used) return ARB_OK;
    size_t rows = (c->n_used + every - 1) / every;
    if (rows > SIZE_MAX / sizeof(double) / (m ? m : 1)) return ARB_NOMEM;
    double *trend = arb__rank_zalloc(rows * m, sizeof *trend);
    double *rating = arb__rank_zalloc(m, sizeof *rating);
    if (!trend || !rating) {
        free(trend);
        free(rating);
        return ARB_NOMEM;
    }
    for (size_t a = 0; a < m; a++) rating[a] = c->p->elo_initial;
    size_t done = 0, row = 0;
    for (size_t k = 0; k < b->n; k++) {
        if (!c->use[k]) continue;
        uint32_t i = c->compact[b->i[k]], j = c->compact[b->j[k]];
        double expected = 1.0 / (1.0 + exp((rating[j] - rating[i]) / ARB__ELO_PER_NAT));
        double delta = c->p->elo_k * ((1.0 - b->s[k]) / 2.0 - expected);
        rating[i] += delta;
        rating[j] -= delta;
        done++;
        if (done % every == 0 || done == c->n_used) memcpy(trend + m * row++, rating, m * sizeof *rating);
    }
    free(rating);
    out->trend = trend;
    out->n_trend = row;
    return ARB_OK;
}

typedef struct sort_item {
    double score;
    const char *name;
    size_t index;
} sort_item;

static int sort_item_cmp(const void *pa, const void *pb)
{
    const sort_item *a = pa, *b = pb;
    if (arb__rank_before(a->score, a->name, b->score, b->name)) return -1;
    if (arb__rank_before(b->score, b->name, a->score, a->name)) return 1;
    return 0;
}

/* Builds out->entries (best first) from the compact results of c; out->names owns the model
** strings. pos[a] gets the entry position of ranked model a. 0, or -1 out of memory. */
static int fill_entries(rank_ctx *c, arb_rank *out, size_t *pos)
{
    size_t m = c->m;
    sort_item *items = arb__rank_zalloc(m, sizeof *items);
    out->entries = arb__rank_zalloc(m, sizeof *out->entries);
    out->names = arb__rank_zalloc(m + 1, sizeof *out->names);
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

static int left_out_cmp(const void *pa, const void *pb)
{
    const arb__rank_left_out *a = pa, *b = pb;
    int c = strcmp(a->model_a, b->model_a);
    return c ? c : strcmp(a->model_b, b->model_b);
}

/* The judgments without a valid verdict (E) that the battles left out, per model pair, of the
** reviewers the ranking uses (allowed; with exclude_self not the reviewer's own pairs, as
** for the battles), into out->left_out (names owned by out->names; sorted by pair). Issue 12:
** they used to vanish without a count. ARB_OK or ARB_NOMEM. */
static arb_status collect_left_out(const rank_ctx *c, const uint8_t *allowed, arb_rank *out)
{
    const arb_battles *b = c->b;
    if (!b->n_left_out) return ARB_OK;
    out->left_out = arb__rank_zalloc(b->n_left_out, sizeof *out->left_out);
    char **names = realloc(out->names, (out->n_names + 2 * b->n_left_out + 1) * sizeof *names);
    if (names) out->names = names;
    if (!out->left_out || !names) return ARB_NOMEM;
    for (size_t k = 0; k < b->n_left_out; k++) {
        const arb__battles_left_out *x = &b->left_out[k];
        uint32_t own = c->reviewer_model[x->r];
        if (!allowed[x->r] || (c->p->exclude_self && (own == x->i || own == x->j))) continue;
        const char *ma = b->models.names[x->i], *mb = b->models.names[x->j];
        size_t at = 0;
        while (at < out->n_left_out && (strcmp(out->left_out[at].model_a, ma) ||
                                        strcmp(out->left_out[at].model_b, mb)))
            at++;
        if (at == out->n_left_out) {
            char *ca = arb__strdup(ma), *cb = ca ? arb__strdup(mb) : NULL;
            if (ca) out->names[out->n_names++] = ca;
            if (cb) out->names[out->n_names++] = cb;
            if (!ca || !cb) return ARB_NOMEM;
            out->left_out[out->n_left_out++] = (arb__rank_left_out){ca, cb, 0};
        }
        out->left_out[at].n += x->n;
        out->left_out_total += x->n;
    }
    qsort(out->left_out, out->n_left_out, sizeof *out->left_out, left_out_cmp);
    return ARB_OK;
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
    if (p->strong_weight < 1 || p->strong_weight > 1000)
        return "strong_weight must be from 1 to 1000";
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
    uint8_t *allowed = NULL;
    arb_battles *repeated = NULL;
    if (out) *out = NULL;
    if (errmsg) *errmsg = NULL;
    if (!battles || !params || !out) {
        arb__rank_set_err(&msg, "arb_rank_compute: battles, params and out are required", NULL, "");
        st = ARB_INVALID;
        goto done;
    }
    const char *bad = check_params(params);
    if (bad) {
        arb__rank_set_err(&msg, bad, NULL, "");
        st = ARB_INVALID;
        goto done;
    }
    const arb_battles *b = battles;
    const arb_rank_params *p = params;
    /* Strong battles (Arena-Hard A>>B) count strong_weight times: everything below runs on a
    ** copy in which each stands that many times, which is what Arena-Hard-Auto's
    ** show_result.py does (it repeats the battle's row before fitting and bootstrapping), so
    ** every method, its bootstrap (the copies are resampled independently, as there) and the
    ** counts see the same weighting (METHODS §6, README "Strong verdicts"). */
    if (p->strong_weight > 1 && arb__battles_count_strong(b) > 0) {
        if (!(repeated = arb__battles_repeat_strong(b, p->strong_weight))) goto done;
        b = repeated;
    }
    int peer = p->method == ARB_RANK_PEER_WINRATE || p->method == ARB_RANK_PEER_ELO;
    size_t nm = b->models.n, nr = b->reviewers.n;

    if (!(r = calloc(1, sizeof *r))) goto done;
    r->params = *p;
    r->params.anchor = NULL;
    r->params.reviewers = NULL;
    r->params.reviewer_info = NULL;
    r->params.human_prefix = NULL;
    r->human = (arb__rank_human){0, NAN, NAN, NAN, NAN, 0, NAN, NAN};
    r->lc_coef = NAN;
    for (int f = 0; f < ARB_STYLE__COUNT; f++) r->style_coef[f] = NAN;
    if (p->anchor && !(r->anchor = arb__strdup(p->anchor))) goto done;

    c.b = b;
    c.p = p;
    c.use = arb__rank_zalloc(b->n, 1);
    c.reviewer_model = arb__rank_zalloc(nr, sizeof *c.reviewer_model);
    c.compact = arb__rank_zalloc(nm, sizeof *c.compact);
    c.model_of = arb__rank_zalloc(nm, sizeof *c.model_of);
    if (!c.use || !c.reviewer_model || !c.compact || !c.model_of) goto done;
    if (!(allowed = arb__rank_zalloc(nr, 1))) goto done;
    if ((st = arb__rank_select(b, p, c.use, c.reviewer_model, allowed, &msg)) != ARB_OK)
        goto done;
    st = ARB_NOMEM;
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
    r->n_counted = c.n_used;
    for (size_t k = 0; k < b->n; k++) r->n_strong += c.use[k] && b->strong[k];
    r->n_strong /= p->strong_weight > 1 && repeated ? p->strong_weight : 1; /* copies */
    r->n_battles_used = c.n_used - r->n_strong * (repeated ? p->strong_weight - 1 : 0);
    size_t m = c.m;
    c.anchor = SIZE_MAX;
    if (p->anchor) {
        uint32_t x = arb__strtab_find(&b->models, p->anchor);
        if (x == UINT32_MAX || c.compact[x] == UINT32_MAX) {
            arb__rank_set_err(&msg, "anchor model \"", p->anchor, "\" has no battle in the selection");
            st = ARB_INVALID;
            goto done;
        }
        c.anchor = c.compact[x];
    }

    c.score = nan_doubles(m), c.ci_lo = nan_doubles(m), c.ci_hi = nan_doubles(m);
    c.sd = nan_doubles(m), c.lc = nan_doubles(m), c.lc_lo = nan_doubles(m);
    c.lc_hi = nan_doubles(m), c.style = nan_doubles(m), c.style_lo = nan_doubles(m);
    c.style_hi = nan_doubles(m);
    c.battles = arb__rank_zalloc(m, sizeof *c.battles), c.wins = arb__rank_zalloc(m, sizeof *c.wins);
    c.ties = arb__rank_zalloc(m, sizeof *c.ties), c.losses = arb__rank_zalloc(m, sizeof *c.losses);
    pos = arb__rank_zalloc(m, sizeof *pos);
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

    arb_status rc = ARB_OK;
    switch (p->method) {
    case ARB_RANK_WINRATE: {
        double *n_battles = arb__rank_zalloc(m, sizeof *n_battles);
        if (!n_battles) goto done;
        win_rates_of_counts(&c.pairs, c.pairs.cnt, c.score, n_battles);
        free(n_battles);
        if (p->bootstrap > 0 && c.n_used > 0)
            rc = cell_bootstrap(&c.pairs, 0, NULL, NULL, SIZE_MAX, p, c.ci_lo, c.ci_hi,
                                &c.msg);
        break;
    }
    case ARB_RANK_ELO: rc = rank_elo(&c); break;
    case ARB_RANK_BT: rc = rank_bt(&c, r); break;
    default: break; /* peer rank below */
    }
    if (rc == ARB_OK && p->length_control) rc = rank_control(&c, 1, r);
    if (rc == ARB_OK && p->style_control) rc = rank_control(&c, 0, r);
    if (rc != ARB_OK) {
        st = rc;
        if (c.msg) {
            free(msg);
            msg = c.msg;
            c.msg = NULL;
        }
        goto done;
    }
    if (p->trend_every && (double)(c.n_used / p->trend_every + 1) * (double)(m ? m : 1) > 5e7) {
        arb__rank_set_err(&msg, "trend_every is too small for this many battles and models (the trend "
                      "would hold more than 5e7 ratings); use a larger value", NULL, "");
        st = ARB_INVALID;
        goto done;
    }
    if (rank_trend(&c, r)) goto done;

    if (peer) {
        if ((st = arb__peer_rank(b, p, r, &msg)) != ARB_OK) goto done;
        st = ARB_NOMEM;
        merge_peer_entries(&c, r, pos);
    } else if (fill_entries(&c, r, pos)) {
        goto done;
    }
    if (finish_matrices(&c, r, pos) || collect_left_out(&c, allowed, r)) goto done;

    /* Self-enhancement when a reviewer with selected battles is a contestant; agreement with
    ** the humans when there are humans besides the selected reviewers. */
    int any_self = 0, any_human = 0;
    for (size_t k = 0; k < b->n; k++) {
        uint32_t rv = b->r[k];
        if (c.use[k] && c.reviewer_model[rv] != UINT32_MAX) any_self = 1;
        if (!c.use[k] && arb__rank_is_human(b->reviewers.names[rv], p->human_prefix)) any_human = 1;
    }
    if (any_self && (st = arb__rank_self_enhancement(b, p, r)) != ARB_OK) goto done;
    st = ARB_NOMEM;
    if (any_human) {
        if (peer && !(weights = reviewer_weights(b, r))) goto done;
        if ((st = arb__rank_human_agreement(b, p, weights, r)) != ARB_OK) goto done;
    }
    st = ARB_OK;
done:
    if (st != ARB_OK) {
        if (!msg) arb__rank_set_err(&msg, st == ARB_INTERRUPTED ? "interrupted" : arb_strerror(st), NULL, "");
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
    free(allowed);
    arb_battles_destroy(repeated);
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
    free(rank->left_out);
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
