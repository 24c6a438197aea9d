/*
** peer.c -- peer rank (METHODS §6): contestants that also review each other get reviewer
** weights learned from their own standing, with the weighted win rate (PR) or the weighted
** online Elo; the self-enhancement of every reviewer that is a contestant; and the agreement
** of the reviewers' (weighted) majority vote with the humans' majority per comparison.
**
** Invariants: the weights of the contestant reviewers ("peers") sum to 1 and the worst peer
** gets 0 (min-max), unless every peer's model scores the same, when they stay equal; a review
** is used with the weight rescaled to mean 1 over the peers that review in that round, so
** with equal weights PR is the plain win rate and weighted Elo is plain Elo; reviewers that
** are not contestants keep a fixed weight on that mean-1 scale; results do not depend on the
** order of the reviewers (ties are broken by name), and Elo's permutations are seeded.
** One departure from §6, argued at pr_scores: with exclude_self the PR denominator counts
** the reviews' weights.
**
** Calls only rank_core.c below it (see rank.h); rank.c calls this file, never the reverse.
** Not here: which battles count (arb__rank_select), plain Elo (arb__elo), the ranking methods
** that learn nothing (rank.c), text and JSON (rank_render.c).
*/
#include "rank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Scores closer than this (relative to their size) count as equal: min-max would otherwise
** blow rounding noise of theoretically equal scores up to weights 0 and 1. */
#define PEER_EQUAL_EPS 1e-12

/* What one peer-rank computation works on: the selection and per-reviewer roles, plus
** scratch arrays sized for the battle set. */
typedef struct peer_ctx {
    const arb_battles *b;
    const arb_rank_params *p;
    int elo;                  /* 1: weighted Elo, 0: weighted win rate */
    size_t n_models, n_reviewers;
    uint8_t *use;             /* per battle: selected by arb__rank_select */
    uint8_t *use_round;       /* per battle (Elo): selected and by an active reviewer */
    uint32_t *reviewer_model; /* per reviewer: contestant index or UINT32_MAX */
    uint8_t *peer;            /* per reviewer: 1 when it learns a weight (a contestant) */
    double *fixed;            /* per reviewer that is not a peer: weight on the mean-1 scale */
    size_t *reviews;          /* per reviewer: selected battles */
    size_t n_peers;
    size_t *battles, *wins, *ties, *losses; /* per model, unweighted, selected battles */
    double *value, *count;    /* per model: PR scratch (V and N of §6) */
    uint32_t *order;          /* top-K scratch: the peers' distinct models */
    uint8_t *chosen;          /* top-K scratch: per model */
} peer_ctx;

/* Sets *errmsg (when errmsg is not NULL; a message already there is replaced) and returns
** st. */
static arb_status peer_fail(char **errmsg, arb_status st, const char *fmt, ...)
    ARB__ATTR_PRINTF(3, 4);
static arb_status peer_fail(char **errmsg, arb_status st, const char *fmt, ...)
{
    if (errmsg) {
        va_list ap;
        va_start(ap, fmt);
        free(*errmsg);
        *errmsg = arb__vsprintf(fmt, ap);
        va_end(ap);
    }
    return st;
}

static void ctx_free(peer_ctx *c)
{
    free(c->use);
    free(c->use_round);
    free(c->reviewer_model);
    free(c->peer);
    free(c->fixed);
    free(c->reviews);
    free(c->battles);
    free(c->wins);
    free(c->ties);
    free(c->losses);
    free(c->value);
    free(c->count);
    free(c->order);
    free(c->chosen);
}

/* The fixed weight of a reviewer that is not a contestant: its reviewer_info entry's
** fixed_weight, NAN or no entry meaning 1, the mean weight of the peers (§6). */
static double fixed_weight_of(const arb_rank_params *p, const char *reviewer)
{
    for (size_t k = 0; p->reviewer_info && k < p->n_reviewer_info; k++) {
        const arb_reviewer_info *info = &p->reviewer_info[k];
        if (info->reviewer && !strcmp(info->reviewer, reviewer))
            return isnan(info->fixed_weight) ? 1.0 : info->fixed_weight;
    }
    return 1.0;
}

/* Selects the battles and sorts out who reviews as what. ARB_OK, or ARB_INVALID / ARB_NOMEM
** after setting *errmsg. */
static arb_status ctx_setup(peer_ctx *c, const arb_battles *b, const arb_rank_params *p, int elo,
                     char **errmsg)
{
    memset(c, 0, sizeof *c);
    c->b = b;
    c->p = p;
    c->elo = elo;
    c->n_models = b->models.n;
    c->n_reviewers = b->reviewers.n;
    size_t nm = c->n_models, nr = c->n_reviewers;
    c->use = arb__rank_zalloc(b->n, 1);
    c->use_round = arb__rank_zalloc(b->n, 1);
    c->reviewer_model = arb__rank_zalloc(nr, sizeof *c->reviewer_model);
    c->peer = arb__rank_zalloc(nr, 1);
    c->fixed = arb__rank_zalloc(nr, sizeof *c->fixed);
    c->reviews = arb__rank_zalloc(nr, sizeof *c->reviews);
    c->battles = arb__rank_zalloc(nm, sizeof *c->battles);
    c->wins = arb__rank_zalloc(nm, sizeof *c->wins);
    c->ties = arb__rank_zalloc(nm, sizeof *c->ties);
    c->losses = arb__rank_zalloc(nm, sizeof *c->losses);
    c->value = arb__rank_zalloc(nm, sizeof *c->value);
    c->count = arb__rank_zalloc(nm, sizeof *c->count);
    c->order = arb__rank_zalloc(nm, sizeof *c->order);
    c->chosen = arb__rank_zalloc(nm, 1);
    if (!c->use || !c->use_round || !c->reviewer_model || !c->peer || !c->fixed ||
        !c->reviews || !c->battles || !c->wins || !c->ties || !c->losses || !c->value ||
        !c->count || !c->order || !c->chosen)
        return peer_fail(errmsg, ARB_NOMEM, "out of memory");
    arb_status st = arb__rank_select(b, p, c->use, c->reviewer_model, NULL, errmsg);
    if (st != ARB_OK) return st;

    for (size_t k = 0; k < b->n; k++) {
        if (!c->use[k]) continue;
        uint32_t i = b->i[k], j = b->j[k];
        c->reviews[b->r[k]]++;
        c->battles[i]++;
        c->battles[j]++;
        if (b->s[k] == 0) {
            c->ties[i]++;
            c->ties[j]++;
        } else {
            c->wins[b->s[k] < 0 ? i : j]++;
            c->losses[b->s[k] < 0 ? j : i]++;
        }
    }
    /* A peer is a reviewer with selected reviews that is a contestant with selected battles;
    ** a contestant reviewer whose model has no selected battle has no score to learn a
    ** weight from and reviews like a non-contestant (with its fixed weight). */
    for (size_t r = 0; r < nr; r++) {
        uint32_t m = c->reviewer_model[r];
        c->peer[r] = c->reviews[r] > 0 && m < nm && c->battles[m] > 0;
        if (c->peer[r])
            c->n_peers++;
        else
            c->fixed[r] = fixed_weight_of(p, b->reviewers.names[r]);
    }
    return ARB_OK;
}

/* PR scores (§6): every review by an active reviewer r adds 1 to N[i] and N[j] (unweighted),
** u[r]·(1−s)/2 to V[i] and u[r]·(1+s)/2 to V[j]; score = V/N, NAN for a model without an
** active review (or, with exclude_self, without an active review of positive weight).
**
** Departure from §6 with exclude_self: N counts u[r] instead of 1. With every reviewer
** reviewing every model equally often (a tournament) and weights of mean 1, Σ u[r] over a
** model's reviews equals its review count, so this is the same number. exclude_self breaks
** that balance systematically: a model's own reviewer is always missing from its reviews, so
** with unweighted N a model whose reviewer has a large weight gets a small score, hence a
** small weight, and so on -- on the PRD Vicuna-80 data the weights then flip between two
** states forever (gpt4 0.93 / 0.00). With the weighted N the score stays a weighted win rate
** and the same data converge in a dozen iterations. */
static void pr_scores(peer_ctx *c, const double *u, const uint8_t *active, double *score)
{
    const arb_battles *b = c->b;
    memset(c->value, 0, c->n_models * sizeof *c->value);
    memset(c->count, 0, c->n_models * sizeof *c->count);
    for (size_t k = 0; k < b->n; k++) {
        uint32_t r = b->r[k];
        if (!c->use[k] || !active[r]) continue;
        uint32_t i = b->i[k], j = b->j[k];
        double s = b->s[k];
        double n_add = c->p->exclude_self ? u[r] : 1.0;
        c->count[i] += n_add;
        c->count[j] += n_add;
        c->value[i] += u[r] * (1 - s) / 2;
        c->value[j] += u[r] * (1 + s) / 2;
    }
    for (size_t m = 0; m < c->n_models; m++)
        score[m] = c->count[m] > 0 ? c->value[m] / c->count[m] : NAN;
}

/* Weighted Elo scores (§6): arb__elo over the active reviewers' battles with weights u, mean
** (and sd when not NULL) over the permutations; NAN for a model without an active review.
** ARB_OK, ARB_NOMEM or ARB_INTERRUPTED. */
static arb_status elo_scores(peer_ctx *c, const double *u, const uint8_t *active, double *score,
                             double *sd)
{
    const arb_battles *b = c->b;
    memset(c->count, 0, c->n_models * sizeof *c->count);
    for (size_t k = 0; k < b->n; k++) {
        c->use_round[k] = c->use[k] && active[b->r[k]];
        if (c->use_round[k]) {
            c->count[b->i[k]] += 1;
            c->count[b->j[k]] += 1;
        }
    }
    arb_status st = arb__elo(b, c->use_round, u, c->p, score, sd);
    if (st != ARB_OK) return st;
    for (size_t m = 0; m < c->n_models; m++) {
        if (c->count[m] > 0) continue;
        score[m] = NAN;
        if (sd) sd[m] = NAN;
    }
    return ARB_OK;
}

/* One scoring round with the method of c. ARB_OK, ARB_NOMEM or ARB_INTERRUPTED. */
static arb_status score_round(peer_ctx *c, const double *u, const uint8_t *active,
                              double *score, double *sd)
{
    if (c->elo) return elo_scores(c, u, active, score, sd);
    pr_scores(c, u, active, score);
    if (sd)
        for (size_t m = 0; m < c->n_models; m++) sd[m] = NAN;
    return ARB_OK;
}

/* New weights from the scores of the peers' own models (§6): min-max scaled to [0,1], then
** normalised to sum 1, so the worst peer gets 0. When the peers' scores are all equal (or
** none is defined) min-max is undefined: every peer gets 1/n_peers. A peer whose model has no
** score this round (top-K left all its battles out) gets 0. Non-peers get 0 (unused). */
static void weights_from_scores(const peer_ctx *c, const double *score, double *w)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t r = 0; r < c->n_reviewers; r++) {
        w[r] = 0;
        if (!c->peer[r]) continue;
        double x = score[c->reviewer_model[r]];
        if (!isfinite(x)) continue;
        if (x < lo) lo = x;
        if (x > hi) hi = x;
    }
    int equal = !(hi > lo) || hi - lo <= PEER_EQUAL_EPS * fmax(1.0, fmax(fabs(lo), fabs(hi)));
    double sum = 0;
    for (size_t r = 0; r < c->n_reviewers; r++) {
        if (!c->peer[r]) continue;
        double x = score[c->reviewer_model[r]];
        w[r] = equal ? 1.0 : isfinite(x) ? (x - lo) / (hi - lo) : 0.0;
        sum += w[r];
    }
    for (size_t r = 0; r < c->n_reviewers; r++)
        if (c->peer[r]) w[r] /= sum; /* sum >= 1: the best peer has 1 */
}

/* The weights a round uses (§6): peers' weights rescaled to mean 1 over the active peers
** (all 1 when their weights sum to 0), 0 for inactive peers, the fixed weight for others. */
static void use_weights(const peer_ctx *c, const double *w, const uint8_t *active, double *u)
{
    double sum = 0;
    size_t n = 0;
    for (size_t r = 0; r < c->n_reviewers; r++)
        if (c->peer[r] && active[r]) {
            sum += w[r];
            n++;
        }
    for (size_t r = 0; r < c->n_reviewers; r++) {
        if (!c->peer[r])
            u[r] = c->fixed[r];
        else if (!active[r])
            u[r] = 0;
        else
            u[r] = sum > 0 ? w[r] * (double)n / sum : 1.0;
    }
}

/* Which reviewers review this round (§6 cost control): with top_k_reviewers = K > 0, only the
** peers whose model is among the K best-scoring peer models by score (ties by name); reviewers
** that are not contestants always review. K = 0 or K >= the number of peer models: all. */
static void choose_active(peer_ctx *c, const double *score, uint8_t *active)
{
    size_t k_top = c->p->top_k_reviewers;
    for (size_t r = 0; r < c->n_reviewers; r++) active[r] = 1;
    if (k_top == 0) return;
    memset(c->chosen, 0, c->n_models);
    size_t n = 0;
    for (size_t r = 0; r < c->n_reviewers; r++) {
        if (!c->peer[r]) continue;
        uint32_t m = c->reviewer_model[r];
        if (c->chosen[m]) continue;
        c->chosen[m] = 1;
        c->order[n++] = m;
    }
    if (n <= k_top) return;
    char *const *names = c->b->models.names;
    for (size_t x = 1; x < n; x++) { /* insertion sort: a handful of reviewer models */
        uint32_t m = c->order[x];
        size_t y = x;
        for (; y > 0 && arb__rank_before(score[m], names[m], score[c->order[y - 1]],
                                     names[c->order[y - 1]]);
             y--)
            c->order[y] = c->order[y - 1];
        c->order[y] = m;
    }
    memset(c->chosen, 0, c->n_models);
    for (size_t x = 0; x < k_top; x++) c->chosen[c->order[x]] = 1;
    for (size_t r = 0; r < c->n_reviewers; r++)
        active[r] = !c->peer[r] || c->chosen[c->reviewer_model[r]];
}

/* Makes room for extra more strings in out->names. 0, or -1 when out of memory. */
static int names_reserve(arb_rank *out, size_t extra)
{
    char **names = realloc(out->names, (out->n_names + extra + 1) * sizeof *names);
    if (!names) return -1;
    out->names = names;
    return 0;
}

/* Appends an owned copy of s to out->names (room reserved by names_reserve) and returns it,
** or NULL when out of memory. */
static const char *names_add(arb_rank *out, const char *s)
{
    char *copy = arb__strdup(s);
    if (!copy) return NULL;
    out->names[out->n_names++] = copy;
    return copy;
}

/* The string out uses for contestant name: an entry's, or a new copy in out->names (room
** reserved). NULL when out of memory. */
static const char *model_name(arb_rank *out, const char *name)
{
    for (size_t k = 0; k < out->n_entries; k++)
        if (out->entries[k].model && !strcmp(out->entries[k].model, name))
            return out->entries[k].model;
    return names_add(out, name);
}

/* The index of the reviewer named name among out->reviewers[0..n), or SIZE_MAX. */
static size_t find_reviewer(const arb_rank *out, size_t n, const char *name)
{
    for (size_t k = 0; k < n; k++)
        if (out->reviewers[k].reviewer && !strcmp(out->reviewers[k].reviewer, name)) return k;
    return SIZE_MAX;
}

/* The index of the reviewer named name among out->reviewers[0..n_before); when absent, a new
** entry appended (room reserved in out->reviewers and out->names by the caller) with every
** number undefined, model (may be NULL) and reviews. SIZE_MAX when out of memory. */
static size_t reviewer_slot(arb_rank *out, size_t n_before, const char *name, const char *model,
                            size_t reviews)
{
    size_t at = find_reviewer(out, n_before, name);
    if (at != SIZE_MAX) return at;
    arb_rank_reviewer *rv = &out->reviewers[out->n_reviewers];
    memset(rv, 0, sizeof *rv);
    rv->weight = rv->self_enhancement = rv->self_ci_lo = rv->self_ci_hi = NAN;
    rv->summary_spearman = rv->summary_kendall = NAN;
    rv->human_accuracy = rv->human_kappa = NAN;
    rv->reviews = reviews;
    if (!(rv->reviewer = names_add(out, name))) return SIZE_MAX;
    if (model && !(rv->model = model_name(out, model))) return SIZE_MAX;
    return out->n_reviewers++;
}

/* Sorts reviewers by weight (highest first, undefined last), then by name. */
static int reviewer_cmp(const void *pa, const void *pb)
{
    const arb_rank_reviewer *a = pa, *b = pb;
    if (arb__rank_before(a->weight, a->reviewer, b->weight, b->reviewer)) return -1;
    if (arb__rank_before(b->weight, b->reviewer, a->weight, a->reviewer)) return 1;
    return 0;
}

/* Writes the entries (best first), all_scores and reviewers of a finished peer rank into out.
** 0, or -1 when out of memory (out stays consistent for arb_rank_destroy). */
static int fill_result(peer_ctx *c, const double *score, const double *sd,
                       const double *all_score, const double *w, arb_rank *out)
{
    const arb_battles *b = c->b;
    size_t n_entries = 0, n_rev = 0;
    for (size_t m = 0; m < c->n_models; m++) n_entries += c->battles[m] > 0;
    for (size_t r = 0; r < c->n_reviewers; r++) n_rev += c->reviews[r] > 0;

    uint32_t *sorted = arb__rank_zalloc(n_entries, sizeof *sorted);
    arb_rank_entry *entries = arb__rank_zalloc(n_entries, sizeof *entries);
    double *all = arb__rank_zalloc(n_entries, sizeof *all);
    arb_rank_reviewer *revs =
        realloc(out->reviewers, (out->n_reviewers + n_rev + 1) * sizeof *revs);
    if (revs) out->reviewers = revs;
    if (!sorted || !entries || !all || !revs ||
        names_reserve(out, n_entries + 2 * n_rev)) {
        free(sorted);
        free(entries);
        free(all);
        return -1;
    }

    size_t n = 0;
    char *const *names = b->models.names;
    for (uint32_t m = 0; m < c->n_models; m++) {
        if (!c->battles[m]) continue;
        size_t y = n++;
        for (; y > 0 && arb__rank_before(score[m], names[m], score[sorted[y - 1]],
                                     names[sorted[y - 1]]);
             y--)
            sorted[y] = sorted[y - 1];
        sorted[y] = m;
    }
    free(out->entries);
    free(out->all_scores);
    out->entries = entries;
    out->all_scores = all;
    out->n_entries = 0;
    for (size_t k = 0; k < n_entries; k++) {
        uint32_t m = sorted[k];
        arb_rank_entry *e = &entries[k];
        e->model = names_add(out, names[m]);
        if (!e->model) {
            free(sorted);
            return -1;
        }
        e->score = score[m];
        e->sd = c->elo ? sd[m] : NAN;
        e->ci_lo = e->ci_hi = NAN;
        e->lc_win_rate = e->lc_ci_lo = e->lc_ci_hi = NAN;
        e->style_rating = e->style_ci_lo = e->style_ci_hi = NAN;
        e->battles = c->battles[m];
        e->wins = c->wins[m];
        e->ties = c->ties[m];
        e->losses = c->losses[m];
        all[k] = all_score[m];
        out->n_entries = k + 1;
    }
    free(sorted);

    /* Reviewer weights on one scale: peers sum to 1; a non-contestant's fixed weight is on
    ** the mean-1 scale of a round, so it is reported divided by the number of peers (the
    ** ratio to the peers' weights is then the one the reviews were counted with). */
    size_t n_before = out->n_reviewers;
    for (size_t r = 0; r < c->n_reviewers; r++) {
        if (!c->reviews[r]) continue;
        const char *name = b->reviewers.names[r];
        double weight = c->peer[r] ? w[r]
                        : c->n_peers ? c->fixed[r] / (double)c->n_peers
                                     : c->fixed[r];
        uint32_t m = c->reviewer_model[r];
        size_t at = reviewer_slot(out, n_before, name, m < c->n_models ? names[m] : NULL, 0);
        if (at == SIZE_MAX) return -1;
        out->reviewers[at].weight = weight;
        out->reviewers[at].reviews = c->reviews[r];
    }
    if (out->n_reviewers > 1)
        qsort(out->reviewers, out->n_reviewers, sizeof *out->reviewers, reviewer_cmp);
    return 0;
}

/* Peer rank (§6), weighted win rate (ARB_RANK_PEER_WINRATE) or weighted Elo
** (ARB_RANK_PEER_ELO). Each iteration: choose the active reviewers (top-K by the previous
** round's scores; the first round uses the equal-weight scores), rescale the weights to mean 1
** over the active peers, score, set new weights from the peers' own scores (min-max,
** normalise). Stops when no weight moved by tolerance or more, or after max_iterations.
** With exclude_self the win rate's denominator is weighted (see pr_scores: why).
** The reported scores are one more round with the final weights, so scores and weights go
** together (at convergence this is the last round's scores). all_scores: every reviewer with
** weight 1 (non-contestants too), no top-K. Fills out->entries (model strings owned by
** out->names), out->all_scores, out->reviewers, iterations and converged; out keeps what it
** had otherwise. Returns ARB_OK, or ARB_INVALID / ARB_NOMEM / ARB_INTERRUPTED after setting
** *errmsg (out stays valid for destroy). */
arb_status arb__peer_rank(const arb_battles *b, const arb_rank_params *p, arb_rank *out,
                          char **errmsg)
{
    if (p->method != ARB_RANK_PEER_WINRATE && p->method != ARB_RANK_PEER_ELO)
        return peer_fail(errmsg, ARB_INVALID, "peer rank: method must be a peer method");
    if (p->max_iterations < 1)
        return peer_fail(errmsg, ARB_INVALID, "peer rank: max_iterations must be >= 1, got %d",
                         p->max_iterations);
    if (!(p->tolerance >= 0) || !isfinite(p->tolerance))
        return peer_fail(errmsg, ARB_INVALID,
                         "peer rank: tolerance must be a number >= 0, got %g", p->tolerance);
    for (size_t k = 0; p->reviewer_info && k < p->n_reviewer_info; k++) {
        double f = p->reviewer_info[k].fixed_weight;
        if (!isnan(f) && !(f >= 0 && isfinite(f)))
            return peer_fail(errmsg, ARB_INVALID,
                             "reviewer_info[%zu]: fixed_weight must be a number >= 0, got %g",
                             k, f);
    }

    peer_ctx c;
    arb_status st;
    double *buf = NULL;
    uint8_t *active = NULL;
    if ((st = ctx_setup(&c, b, p, p->method == ARB_RANK_PEER_ELO, errmsg)) != ARB_OK) goto done;

    size_t nm = c.n_models ? c.n_models : 1, nr = c.n_reviewers ? c.n_reviewers : 1;
    st = ARB_NOMEM;
    buf = calloc(4 * nm + 3 * nr, sizeof *buf);
    active = arb__rank_zalloc(nr, 1);
    if (!buf || !active) goto done;
    double *score = buf, *prev = buf + nm, *sd = buf + 2 * nm, *all = buf + 3 * nm;
    double *ones = buf + 4 * nm, *w = ones + nr, *w_new = w + nr;
    double *u = ones; /* all-ones first, then reused for the rounds' weights */

    for (size_t r = 0; r < nr; r++) {
        ones[r] = 1;
        active[r] = 1;
    }
    if ((st = score_round(&c, ones, active, all, NULL)) != ARB_OK) goto done;
    memcpy(prev, all, c.n_models * sizeof *prev);
    for (size_t r = 0; r < c.n_reviewers; r++) w[r] = c.peer[r] ? 1.0 / (double)c.n_peers : 0;

    /* Iterate to the tolerance (§6: weight change < 1e-9 by default); max_iterations is only
    ** a safety cap (default 1000), and hitting it is reported as not converged. */
    int iterations = 0, converged = c.n_peers == 0; /* nothing to learn */
    for (int it = 1; !converged && it <= p->max_iterations; it++) {
        choose_active(&c, prev, active);
        use_weights(&c, w, active, u);
        if ((st = score_round(&c, u, active, score, NULL)) != ARB_OK) goto done;
        weights_from_scores(&c, score, w_new);
        double delta = 0;
        for (size_t r = 0; r < c.n_reviewers; r++) {
            double d = fabs(w_new[r] - w[r]);
            if (d > delta) delta = d;
        }
        double *t = w;
        w = w_new;
        w_new = t;
        memcpy(prev, score, c.n_models * sizeof *prev);
        iterations = it;
        converged = delta < p->tolerance;
    }
    choose_active(&c, prev, active);
    use_weights(&c, w, active, u);
    if ((st = score_round(&c, u, active, score, sd)) != ARB_OK) goto done;
    /* Weighted Elo is zero-sum, so the ratings average elo_initial; with an anchor, shift
    ** both columns so the anchor sits at elo_initial instead, as plain Elo does (rank.c). */
    uint32_t anchor = c.elo && p->anchor ? arb__strtab_find(&b->models, p->anchor) : UINT32_MAX;
    if (anchor != UINT32_MAX && isfinite(score[anchor]) && isfinite(all[anchor])) {
        double shift = p->elo_initial - score[anchor], shift_all = p->elo_initial - all[anchor];
        for (size_t m = 0; m < c.n_models; m++) {
            score[m] += shift;
            all[m] += shift_all;
        }
    }
    if (fill_result(&c, score, sd, all, w, out)) {
        st = ARB_NOMEM;
        goto done;
    }
    out->iterations = iterations;
    out->converged = c.n_peers == 0 || converged;
    st = ARB_OK;
done:
    if (st == ARB_NOMEM) peer_fail(errmsg, ARB_NOMEM, "out of memory");
    if (st == ARB_INTERRUPTED) peer_fail(errmsg, ARB_INTERRUPTED, "interrupted");
    free(buf);
    free(active);
    ctx_free(&c);
    return st;
}

/* ---- self-enhancement --------------------------------------------------------------------- */

/* A selected battle keyed by its comparison: question and unordered pair a < b. */
typedef struct comparison_key {
    uint32_t q, a, b;
    uint32_t battle;
} comparison_key;

static int comparison_key_cmp(const void *pa, const void *pb)
{
    const comparison_key *x = pa, *y = pb;
    if (x->q != y->q) return x->q < y->q ? -1 : 1;
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    if (x->b != y->b) return x->b < y->b ? -1 : 1;
    return (x->battle > y->battle) - (x->battle < y->battle);
}

/* Sorted keys of the battles with keep[k] set (*n gets their number); NULL when out of
** memory. Caller frees. */
static comparison_key *comparison_keys(const arb_battles *b, const uint8_t *keep, size_t *n)
{
    comparison_key *keys = arb__rank_zalloc(b->n, sizeof *keys);
    if (!keys) return NULL;
    size_t n_keys = 0;
    for (size_t k = 0; k < b->n; k++) {
        if (!keep[k]) continue;
        uint32_t i = b->i[k], j = b->j[k];
        keys[n_keys++] = (comparison_key){b->q[k], i < j ? i : j, i < j ? j : i, (uint32_t)k};
    }
    qsort(keys, n_keys, sizeof *keys, comparison_key_cmp);
    *n = n_keys;
    return keys;
}

/* Per (question unit, self reviewer): points and battles of the reviewer's model in its own
** reviews and in the other reviewers' reviews of the same comparisons. */
enum { SE_OWN_POINTS, SE_OWN_N, SE_OTHER_POINTS, SE_OTHER_N, SE__COUNT };

/* Points of contestant m in battle k: 1 win, ½ tie, 0 loss. */
static double points_of(const arb_battles *b, size_t k, uint32_t m)
{
    double s = b->s[k];
    return b->i[k] == m ? (1 - s) / 2 : (1 + s) / 2;
}

/* Self-enhancement (§6) of every reviewer r that is a contestant m: m's win rate in the
** battles r judged minus m's win rate in the other reviewers' battles of the same comparisons
** (question and opponent), pooled over the comparisons that both r and at least one other
** reviewer judged. Matching the comparisons keeps the opponents and questions the same, so
** the difference is r's bias rather than a different mix; a reviewer without such a
** comparison gets NAN (no fallback to unmatched battles). The battles are those
** arb__rank_select picks with exclude_self off: a reviewer's own pairs are the point here.
** "Other reviewers" are every other selected reviewer, contestant or not (a biased reviewer
** thus also moves the others' numbers; see the tests). The interval is a percentile bootstrap
** over questions with p->bootstrap resamples (1000 when p->bootstrap is 0: the estimate is
** never shown without one), seed p->seed, level p->ci_level. Updates the matching entries of
** out->reviewers (by name) and appends the missing reviewers (weight NAN; strings owned by
** out->names). Returns 0, or -1 when out of memory or the selection fails. */
arb_status arb__rank_self_enhancement(const arb_battles *b, const arb_rank_params *p,
                                      arb_rank *out)
{
    arb_status rc = ARB_NOMEM;
    size_t nr = b->reviewers.n, n_keys = 0, n_self = 0, n_units = 0;
    uint8_t *use = arb__rank_zalloc(b->n, 1);
    uint32_t *reviewer_model = arb__rank_zalloc(nr, sizeof *reviewer_model);
    size_t *self_of = arb__rank_zalloc(nr, sizeof *self_of);   /* reviewer -> self index */
    uint32_t *self_rev = arb__rank_zalloc(nr, sizeof *self_rev); /* self index -> reviewer */
    size_t *reviews = arb__rank_zalloc(nr, sizeof *reviews);
    size_t *unit_of = arb__rank_zalloc(b->questions.n, sizeof *unit_of);
    comparison_key *keys = NULL;
    double *agg = NULL, *est = NULL, *lo = NULL, *hi = NULL;
    arb__ratio_stat *ratios = NULL;
    char *msg = NULL;
    if (!use || !reviewer_model || !self_of || !self_rev || !reviews || !unit_of) goto done;

    arb_rank_params sel = *p;
    sel.exclude_self = 0;
    if ((rc = arb__rank_select(b, &sel, use, reviewer_model, NULL, &msg)) != ARB_OK) goto done;
    rc = ARB_NOMEM;
    for (size_t k = 0; k < b->n; k++)
        if (use[k]) reviews[b->r[k]]++;
    for (size_t r = 0; r < nr; r++) {
        self_of[r] = SIZE_MAX;
        if (reviews[r] > 0 && reviewer_model[r] < b->models.n) {
            self_of[r] = n_self;
            self_rev[n_self++] = (uint32_t)r;
        }
    }
    if (n_self == 0) {
        rc = ARB_OK;
        goto done;
    }
    /* The reviews column counts the battles of the ranking's own selection. */
    if (p->exclude_self) {
        uint8_t *own = arb__rank_zalloc(b->n, 1);
        if (!own) goto done;
        if ((rc = arb__rank_select(b, p, own, reviewer_model, NULL, &msg)) != ARB_OK) {
            free(own);
            goto done;
        }
        rc = ARB_NOMEM;
        memset(reviews, 0, nr * sizeof *reviews);
        for (size_t k = 0; k < b->n; k++)
            if (own[k]) reviews[b->r[k]]++;
        free(own);
    }

    keys = comparison_keys(b, use, &n_keys);
    size_t nq = b->questions.n;
    if (!keys || nq > SIZE_MAX / SE__COUNT / sizeof(double) / n_self) goto done;
    agg = calloc(nq * n_self * SE__COUNT, sizeof *agg);
    if (!agg) goto done;
    for (size_t g0 = 0, g1; g0 < n_keys; g0 = g1) {
        for (g1 = g0 + 1; g1 < n_keys && keys[g1].q == keys[g0].q && keys[g1].a == keys[g0].a &&
                          keys[g1].b == keys[g0].b;
             g1++)
            ;
        for (size_t x = g0; x < g1; x++) {
            uint32_t r = b->r[keys[x].battle];
            size_t s = self_of[r];
            uint32_t m = reviewer_model[r];
            if (s == SIZE_MAX || (m != keys[g0].a && m != keys[g0].b)) continue;
            int seen = 0; /* each reviewer once per comparison */
            for (size_t y = g0; y < x && !seen; y++) seen = b->r[keys[y].battle] == r;
            if (seen) continue;
            double sum[SE__COUNT] = {0};
            for (size_t y = g0; y < g1; y++) {
                size_t k = keys[y].battle;
                int own = b->r[k] == r;
                sum[own ? SE_OWN_POINTS : SE_OTHER_POINTS] += points_of(b, k, m);
                sum[own ? SE_OWN_N : SE_OTHER_N] += 1;
            }
            if (!(sum[SE_OWN_N] > 0 && sum[SE_OTHER_N] > 0)) continue;
            double *a = agg + ((size_t)keys[g0].q * n_self + s) * SE__COUNT;
            for (int f = 0; f < SE__COUNT; f++) a[f] += sum[f];
        }
    }
    /* Units: the questions with a matched comparison, packed to the front of agg in order. */
    for (size_t q = 0; q < nq; q++) {
        const double *row = agg + q * n_self * SE__COUNT;
        int any = 0;
        for (size_t s = 0; s < n_self && !any; s++) any = row[s * SE__COUNT + SE_OWN_N] > 0;
        unit_of[q] = SIZE_MAX;
        if (!any) continue;
        if (n_units != q)
            memmove(agg + n_units * n_self * SE__COUNT, row, n_self * SE__COUNT * sizeof *agg);
        unit_of[q] = n_units++;
    }

    est = arb__rank_zalloc(n_self, sizeof *est);
    lo = arb__rank_zalloc(n_self, sizeof *lo);
    hi = arb__rank_zalloc(n_self, sizeof *hi);
    ratios = arb__rank_zalloc(n_self, sizeof *ratios);
    if (!est || !lo || !hi || !ratios) goto done;
    /* own win rate minus the others', each pooled over the resampled units */
    for (size_t s = 0; s < n_self; s++)
        ratios[s] = (arb__ratio_stat){s * SE__COUNT + SE_OWN_POINTS, s * SE__COUNT + SE_OWN_N, 1,
                                      s * SE__COUNT + SE_OTHER_POINTS, s * SE__COUNT + SE_OTHER_N};
    if (arb__stat_pooled_ratios(agg, n_units, n_self * SE__COUNT, ratios, n_self,
                                p->bootstrap ? p->bootstrap : 1000, p->seed, p->ci_level, est, lo,
                                hi))
        goto done;

    arb_rank_reviewer *revs =
        realloc(out->reviewers, (out->n_reviewers + n_self + 1) * sizeof *revs);
    if (!revs) goto done;
    out->reviewers = revs;
    if (names_reserve(out, 2 * n_self)) goto done;
    size_t n_before = out->n_reviewers;
    for (size_t s = 0; s < n_self; s++) {
        uint32_t r = self_rev[s];
        const char *name = b->reviewers.names[r];
        size_t at = reviewer_slot(out, n_before, name, b->models.names[reviewer_model[r]],
                                  reviews[r]);
        if (at == SIZE_MAX) goto done;
        out->reviewers[at].self_enhancement = est[s];
        out->reviewers[at].self_ci_lo = lo[s];
        out->reviewers[at].self_ci_hi = hi[s];
    }
    rc = ARB_OK;
done:
    free(msg);
    free(use);
    free(reviewer_model);
    free(self_of);
    free(self_rev);
    free(reviews);
    free(unit_of);
    free(keys);
    free(agg);
    free(est);
    free(lo);
    free(hi);
    free(ratios);
    return rc;
}

/* ---- agreement with the humans' majority -------------------------------------------------- */

/* -1, 0 or +1; |x| <= eps counts as 0. */
static int sign_of(double x, double eps)
{
    return x > eps ? 1 : x < -eps ? -1 : 0;
}

/* Spearman and Kendall tau-b of x against the humans' win rate h (n_models each) over the
** models where both are defined; *n_both gets their number. x and h are borrowed; scratch
** holds 2·n_models doubles. */
static void rank_correlations(const double *x, const double *h, size_t n_models,
                              double *scratch, double *spearman, double *kendall,
                              size_t *n_both)
{
    double *xs = scratch, *hs = scratch + n_models;
    size_t n = 0;
    for (size_t m = 0; m < n_models; m++)
        if (isfinite(x[m]) && isfinite(h[m])) {
            xs[n] = x[m];
            hs[n++] = h[m];
        }
    *spearman = arb_stat_spearman(xs, hs, n);
    *kendall = arb_stat_kendall_tau_b(xs, hs, n);
    if (n_both) *n_both = n;
}

/* The summary-level part of arb__rank_human_agreement (see there): use marks the selected
** battles, human the human reviewers, reviewer_model the contestant each reviewer is
** (arb__rank_select). ARB_OK or ARB_NOMEM. */
static arb_status summary_correlations(const arb_battles *b, const uint8_t *use,
                                       const uint8_t *human, const uint32_t *reviewer_model,
                                       arb_rank *out)
{
    size_t nm = b->models.n, nr = b->reviewers.n, n_rev = 0;
    arb_status st = ARB_NOMEM;
    double *weight = arb__rank_zalloc(nr, sizeof *weight);
    double *human_rate = arb__rank_zalloc(nm, sizeof *human_rate);
    double *rate = arb__rank_zalloc(nm, sizeof *rate);
    double *scratch = arb__rank_zalloc(2 * nm, sizeof *scratch);
    size_t *reviews = arb__rank_zalloc(nr, sizeof *reviews);
    if (!weight || !human_rate || !rate || !scratch || !reviews) goto done;
    for (size_t k = 0; k < b->n; k++) reviews[b->r[k]] += use[k];
    for (size_t r = 0; r < nr; r++) {
        weight[r] = human[r];
        n_rev += reviews[r] > 0;
    }
    /* the humans' ranking: every human battle, equal weights */
    arb__win_rate(b, NULL, weight, human_rate);
    for (size_t m = 0; m < nm; m++) rate[m] = NAN; /* the score column, by model index */
    for (size_t k = 0; k < out->n_entries; k++) {
        uint32_t m = arb__strtab_find(&b->models, out->entries[k].model);
        if (m != UINT32_MAX) rate[m] = out->entries[k].score;
    }
    rank_correlations(rate, human_rate, nm, scratch, &out->human.summary_spearman,
                      &out->human.summary_kendall, &out->human.summary_models);

    arb_rank_reviewer *revs = realloc(out->reviewers, (out->n_reviewers + n_rev + 1) * sizeof *revs);
    if (!revs) goto done;
    out->reviewers = revs;
    if (names_reserve(out, 2 * n_rev)) goto done;
    size_t n_before = out->n_reviewers;
    for (size_t r = 0; r < nr; r++) {
        if (!reviews[r]) continue;
        uint32_t own = reviewer_model[r];
        size_t at = reviewer_slot(out, n_before, b->reviewers.names[r],
                                  own != UINT32_MAX ? b->models.names[own] : NULL, reviews[r]);
        if (at == SIZE_MAX) goto done;
        for (size_t x = 0; x < nr; x++) weight[x] = x == r;
        arb__win_rate(b, use, weight, rate);
        rank_correlations(rate, human_rate, nm, scratch, &out->reviewers[at].summary_spearman,
                          &out->reviewers[at].summary_kendall, NULL);
    }
    st = ARB_OK;
done:
    free(weight);
    free(human_rate);
    free(rate);
    free(scratch);
    free(reviews);
    return st;
}

/* Per-reviewer agreement with the humans (METHODS §4, PRD's per-reviewer table): table holds
** 9 counts per reviewer index (its verdict in rows, the human majority in columns, both over
** {first better, tie, second better} oriented to the pair's fixed order) and skipped one count
** per reviewer. Fills the human_* fields of the reviewers already in out->reviewers. */
static void reviewer_human_agreement(const arb_battles *b, const double *table,
                                     const size_t *skipped, arb_rank *out)
{
    for (size_t k = 0; k < out->n_reviewers; k++) {
        arb_rank_reviewer *v = &out->reviewers[k];
        uint32_t r = arb__strtab_find(&b->reviewers, v->reviewer);
        if (r == UINT32_MAX) continue;
        const double *t = table + 9 * (size_t)r;
        double n = 0, hits = 0;
        for (int x = 0; x < 9; x++) n += t[x];
        for (int x = 0; x < 3; x++) hits += t[4 * x];
        v->human_reviews = (size_t)n;
        v->human_ties_skipped = skipped[r];
        v->human_accuracy = n > 0 ? hits / n : NAN;
        v->human_kappa = n > 0 ? arb_stat_cohen_kappa(t, 3) : NAN;
    }
}

/* The humans' majority of one comparison (METHODS §4): the category (0 first better, 1 tie,
** 2 second better) more annotators chose than any other, or -1 when two tie for most. */
static int plurality_of(const size_t votes[3])
{
    int best = 0;
    for (int c = 1; c < 3; c++)
        if (votes[c] > votes[best]) best = c;
    for (int c = 0; c < 3; c++)
        if (c != best && votes[c] == votes[best]) return -1;
    return best;
}

/* Example-level aggregation (§6): for every (question, unordered pair) with at least one human
** vote and one selected review, the humans' majority is the sign of their mean vote (PRD
** convention: a split is a tie) and the reviewers' vote is the sign of Σ w_r·s, both with s
** oriented to the pair's fixed order (lower contestant index first). accuracy = share of
** equal votes; Fleiss' kappa of the two "raters" {vote, human majority} over the categories
** {first better, tie, second better}. The "all" vote gives every reviewer weight 1; the
** weighted vote uses weight[r] (NAN counts as 0; a weighted sum within rounding of 0 is a
** tie), and is NAN when weight is NULL. Humans are the reviewers whose name starts with
** p->human_prefix (none when NULL or ""); their votes are taken from every battle, the
** reviewers' from arb__rank_select's selection without humans. Fills out->human.
**
** Summary level (PRD, §6): the humans' ranking is the contestants' win rate in the humans'
** battles; a reviewer's ranking is their win rate in its selected battles. Spearman (average
** ranks) and Kendall tau-b (src/stats.c) over the contestants that both rank, per selected
** reviewer (into out->reviewers, appended when absent) and for the score column of the
** entries (out->human.summary_*); NAN when undefined (fewer than two contestants, or one
** side ranks them all equal).
**
** Per reviewer (reviewer_human_agreement): each selected review of a comparison with a human
** vote is compared with the humans' plurality verdict (METHODS §4; a tie between annotators
** skips the review and counts it), so both orders of a pair count, as PRD's per-reviewer
** table counts them. The plurality differs from the sign of the mean vote above only where
** annotators disagree: {first, tie} has mean sign "first" but no plurality. Returns ARB_OK or
** ARB_NOMEM. */
arb_status arb__rank_human_agreement(const arb_battles *b, const arb_rank_params *p,
                                     const double *weight, arb_rank *out)
{
    out->human = (arb__rank_human){0, NAN, NAN, NAN, NAN, 0, NAN, NAN};
    const char *prefix = p->human_prefix;
    if (!prefix || !*prefix) return ARB_OK;
    size_t plen = strlen(prefix), nr = b->reviewers.n, n_keys = 0;

    arb_status rc = ARB_NOMEM;
    char *msg = NULL;
    uint8_t *human = arb__rank_zalloc(nr, 1);
    uint8_t *use = arb__rank_zalloc(b->n, 1);
    uint8_t *keep = arb__rank_zalloc(b->n, 1);
    uint32_t *reviewer_model = arb__rank_zalloc(nr, sizeof *reviewer_model);
    comparison_key *keys = NULL;
    double *counts_all = NULL, *counts_w = NULL;
    double *rev_table = arb__rank_zalloc(9 * nr, sizeof *rev_table);
    size_t *rev_skipped = arb__rank_zalloc(nr, sizeof *rev_skipped);
    if (!human || !use || !keep || !reviewer_model || !rev_table || !rev_skipped) goto done;
    int any_human = 0;
    for (size_t r = 0; r < nr; r++) {
        human[r] = !strncmp(b->reviewers.names[r], prefix, plen);
        any_human |= human[r];
    }
    if (!any_human) {
        rc = ARB_OK;
        goto done;
    }
    if ((rc = arb__rank_select(b, p, use, reviewer_model, NULL, &msg)) != ARB_OK) goto done;
    rc = ARB_NOMEM;
    for (size_t k = 0; k < b->n; k++) keep[k] = human[b->r[k]] || use[k];
    keys = comparison_keys(b, keep, &n_keys);
    counts_all = arb__rank_zalloc(3 * n_keys, sizeof *counts_all);
    counts_w = arb__rank_zalloc(3 * n_keys, sizeof *counts_w);
    if (!keys || !counts_all || !counts_w) goto done;

    size_t n = 0, hits_all = 0, hits_w = 0;
    for (size_t g0 = 0, g1; g0 < n_keys; g0 = g1) {
        for (g1 = g0 + 1; g1 < n_keys && keys[g1].q == keys[g0].q && keys[g1].a == keys[g0].a &&
                          keys[g1].b == keys[g0].b;
             g1++)
            ;
        double human_sum = 0, sum_all = 0, sum_w = 0, abs_w = 0;
        size_t n_human = 0, n_reviews = 0, human_votes[3] = {0, 0, 0};
        for (size_t x = g0; x < g1; x++) {
            size_t k = keys[x].battle;
            uint32_t r = b->r[k];
            double s = b->i[k] == keys[g0].a ? b->s[k] : -b->s[k];
            if (human[r]) {
                human_sum += s;
                n_human++;
                human_votes[(int)s + 1]++;
            } else if (use[k]) {
                sum_all += s;
                n_reviews++;
                double wr = weight ? weight[r] : NAN;
                if (isfinite(wr)) {
                    sum_w += wr * s;
                    abs_w += fabs(wr);
                }
            }
        }
        if (!n_human || !n_reviews) continue;
        int plurality = plurality_of(human_votes);
        for (size_t x = g0; x < g1; x++) { /* each review on its own (per-reviewer table) */
            size_t k = keys[x].battle;
            uint32_t r = b->r[k];
            if (human[r] || !use[k]) continue;
            int s = b->i[k] == keys[g0].a ? b->s[k] : -b->s[k];
            if (plurality < 0) rev_skipped[r]++;
            else rev_table[9 * (size_t)r + 3 * (size_t)(s + 1) + (size_t)plurality] += 1;
        }
        int majority = sign_of(human_sum, 0); /* integer votes: exact */
        int vote_all = sign_of(sum_all, 0);
        int vote_w = sign_of(sum_w, PEER_EQUAL_EPS * abs_w);
        counts_all[3 * n + (size_t)(vote_all + 1)] += 1;
        counts_all[3 * n + (size_t)(majority + 1)] += 1;
        counts_w[3 * n + (size_t)(vote_w + 1)] += 1;
        counts_w[3 * n + (size_t)(majority + 1)] += 1;
        hits_all += vote_all == majority;
        hits_w += vote_w == majority;
        n++;
    }
    out->human.n_comparisons = n;
    if (n > 0) {
        out->human.accuracy_all = (double)hits_all / (double)n;
        out->human.fleiss_all = arb_stat_fleiss_kappa(counts_all, n, 3);
        if (weight) {
            out->human.accuracy_weighted = (double)hits_w / (double)n;
            out->human.fleiss_weighted = arb_stat_fleiss_kappa(counts_w, n, 3);
        }
    }
    rc = summary_correlations(b, use, human, reviewer_model, out);
    if (rc == ARB_OK) reviewer_human_agreement(b, rev_table, rev_skipped, out);
done:
    free(rev_table);
    free(rev_skipped);
    free(msg);
    free(human);
    free(use);
    free(keep);
    free(reviewer_model);
    free(keys);
    free(counts_all);
    free(counts_w);
    return rc;
}
