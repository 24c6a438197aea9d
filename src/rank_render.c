/*
** rank_render.c -- a ranking (METHODS §6) as text for people and as JSON for programs: the
** ranked table, the pairwise win-rate matrix, the Elo trend, peer-rank weights, self-
** enhancement and the agreement with the humans' majority.
**
** Invariants: an undefined number is "n/a" in text and null in JSON, never NaN or inf; model
** and reviewer names are untrusted and pass through arb__buf_put_safe / arb__json_name. JSON
** keys are stable snake_case (documented in README). Text tables show at most
** TEXT_MAX_MATRIX models in the matrix and TEXT_MAX_TREND in the trend (the JSON has all).
*/
#include "rank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_MAX_MATRIX 20
#define TEXT_MAX_TREND 10
#define ABBR_WIDTH 7      /* code points of a model name in a matrix or trend header */
#define NAME_MAX_WIDTH 32 /* the model column pads names up to this many code points */

static const char *method_name(arb_rank_method m)
{
    switch (m) {
    case ARB_RANK_WINRATE: return "winrate";
    case ARB_RANK_ELO: return "elo";
    case ARB_RANK_BT: return "bt";
    case ARB_RANK_PEER_WINRATE: return "peer-winrate";
    case ARB_RANK_PEER_ELO: return "peer-elo";
    }
    return "?";
}

/* 1 when the method's score is a win rate (0..1) rather than a rating. */
static int score_is_rate(arb_rank_method m)
{
    return m == ARB_RANK_WINRATE || m == ARB_RANK_PEER_WINRATE;
}

static int is_peer(arb_rank_method m)
{
    return m == ARB_RANK_PEER_WINRATE || m == ARB_RANK_PEER_ELO;
}

/* ---- text ---------------------------------------------------------------------------------- */

/* Appends a name made safe and padded with spaces to width code points (longer names are
** kept whole). */
static int put_name(arb__buf *b, const char *name, size_t width)
{
    size_t start = b->len;
    if (arb__buf_put_safe(b, name ? name : "")) return -1;
    size_t cps = arb__utf8_codepoints(b->data + start, b->len - start);
    for (; cps < width; cps++)
        if (arb__buf_puts(b, " ")) return -1;
    return 0;
}

/* Display width of a name as put_name writes it. */
static size_t name_width(const char *name)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    size_t w = arb__buf_put_safe(&b, name ? name : "") ? 0 : arb__utf8_codepoints(b.data, b.len);
    arb__buf_free(&b);
    return w;
}

/* A short column header for a model: its safe name cut to its first (from_end 0) or last
** ABBR_WIDTH code points (caller frees); NULL when out of memory. */
static char *abbreviate(const char *name, int from_end)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    if (arb__buf_put_safe(&b, name ? name : "")) {
        arb__buf_free(&b);
        return NULL;
    }
    size_t cps = arb__utf8_codepoints(b.data, b.len), skip = 0, at = 0;
    if (cps > ABBR_WIDTH) skip = from_end ? cps - ABBR_WIDTH : 0;
    size_t start = 0, k = 0;
    for (at = 0; at < b.len; k++) { /* walk code points: [start, at) is the kept range */
        if (k == skip) start = at;
        if (k == skip + ABBR_WIDTH) break;
        at++;
        while (at < b.len && ((unsigned char)b.data[at] & 0xC0) == 0x80) at++;
    }
    if (skip >= k) start = at;
    char *cut = arb__strndup(b.data + start, at - start);
    arb__buf_free(&b);
    return cut;
}

/* 1 when some header equals h[k]. */
static int clashes(char **h, size_t n, size_t k)
{
    for (size_t x = 0; x < n; x++)
        if (x != k && !strcmp(h[k], h[x])) return 1;
    return 0;
}

/* Headers for the first n entries: each name's first ABBR_WIDTH code points; where two look
** the same (model-001, model-002), the last ones; where those clash too, "#rank". NULL when
** out of memory; free with free_headers. */
static char **make_headers(const arb_rank *r, size_t n)
{
    char **h = calloc(n ? n : 1, sizeof *h);
    uint8_t *clash = calloc(n ? n : 1, 1);
    if (!h || !clash) goto fail;
    for (size_t k = 0; k < n; k++)
        if (!(h[k] = abbreviate(r->entries[k].model, 0))) goto fail;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < n; k++) clash[k] = (uint8_t)clashes(h, n, k);
        for (size_t k = 0; k < n; k++) {
            if (!clash[k]) continue;
            char *alt = pass == 0 ? abbreviate(r->entries[k].model, 1) : arb__sprintf("#%zu", k + 1);
            if (!alt) goto fail;
            free(h[k]);
            h[k] = alt;
        }
    }
    free(clash);
    return h;
fail:
    for (size_t k = 0; h && k < n; k++) free(h[k]);
    free(h);
    free(clash);
    return NULL;
}

static void free_headers(char **h, size_t n)
{
    if (!h) return;
    for (size_t k = 0; k < n; k++) free(h[k]);
    free(h);
}

/* A right-aligned header cell of width code points. */
static int put_header(arb__buf *b, const char *text, int width)
{
    size_t cps = arb__utf8_codepoints(text, strlen(text));
    for (size_t k = cps; k < (size_t)width; k++)
        if (arb__buf_puts(b, " ")) return -1;
    return arb__buf_puts(b, text);
}

/* A score: a percentage for win rates, one decimal for ratings; "n/a" when undefined. */
static int put_score(arb__buf *b, double x, int rate, int width)
{
    if (!isfinite(x)) return arb__buf_printf(b, "%*s", width, "n/a");
    if (rate) return arb__buf_printf(b, "%*.1f%%", width - 1, 100.0 * x);
    return arb__buf_printf(b, "%*.1f", width, x);
}

/* "  [lo, hi]" left-aligned in a field of 2·width + 4 characters after two spaces, or "n/a". */
static int put_interval(arb__buf *b, double lo, double hi, int rate, int width)
{
    char text[96];
    if (!isfinite(lo) || !isfinite(hi))
        snprintf(text, sizeof text, "n/a");
    else if (rate)
        snprintf(text, sizeof text, "[%.1f%%, %.1f%%]", 100.0 * lo, 100.0 * hi);
    else
        snprintf(text, sizeof text, "[%.1f, %.1f]", lo, hi);
    return arb__buf_printf(b, "  %-*s", 2 * width + 4, text);
}

/* Which columns the main table has. */
typedef struct table_cols {
    int rate, ci, sd, all, lc, lc_ci, style, style_ci;
    size_t name_width;
} table_cols;

static table_cols table_columns(const arb_rank *r)
{
    table_cols t;
    memset(&t, 0, sizeof t);
    t.rate = score_is_rate(r->params.method);
    t.sd = r->params.method == ARB_RANK_ELO || r->params.method == ARB_RANK_PEER_ELO;
    t.all = is_peer(r->params.method) && r->all_scores;
    t.lc = r->params.length_control;
    t.style = r->params.style_control;
    t.name_width = 5;
    for (size_t k = 0; k < r->n_entries; k++) {
        const arb_rank_entry *e = &r->entries[k];
        t.ci |= isfinite(e->ci_lo) && isfinite(e->ci_hi);
        t.lc_ci |= isfinite(e->lc_ci_lo) && isfinite(e->lc_ci_hi);
        t.style_ci |= isfinite(e->style_ci_lo) && isfinite(e->style_ci_hi);
        size_t w = name_width(e->model);
        if (w > t.name_width) t.name_width = w > NAME_MAX_WIDTH ? NAME_MAX_WIDTH : w;
    }
    t.ci |= r->params.bootstrap > 0 && !is_peer(r->params.method);
    return t;
}

/* The rank printed for entry k: equal scores share the rank of the first of them. */
static size_t rank_of(const arb_rank *r, size_t k)
{
    while (k > 0 && r->entries[k - 1].score == r->entries[k].score) k--;
    return k + 1;
}

static int put_title(arb__buf *b, const arb_rank *r)
{
    const arb_rank_params *p = &r->params;
    int rc = 0;
    switch (p->method) {
    case ARB_RANK_WINRATE:
        rc = arb__buf_puts(b, "win rate (METHODS §6): (wins + ½ ties) / battles\n");
        break;
    case ARB_RANK_ELO:
        rc = arb__buf_printf(b, "online Elo (METHODS §6): K = %g, start %g, mean over %zu %s "
                                "(seed %llu); sd = spread over the orders\n",
                             p->elo_k, p->elo_initial, p->elo_permutations,
                             p->elo_permutations == 1 ? "pass in the given order"
                                                      : "random orders",
                             p->seed);
        break;
    case ARB_RANK_BT:
        rc = arb__buf_puts(b, "Bradley-Terry ratings (METHODS §6): maximum likelihood, ties as "
                              "half wins, Elo scale (400·log10 odds)\n");
        break;
    case ARB_RANK_PEER_WINRATE:
        rc = arb__buf_puts(b, "peer rank, weighted win rate (METHODS §6): reviewers weighted by "
                              "their own standing\n");
        break;
    case ARB_RANK_PEER_ELO:
        rc = arb__buf_printf(b, "peer rank, weighted Elo (METHODS §6): K = %g, start %g, mean "
                                "over %zu random orders (seed %llu) per iteration\n",
                             p->elo_k, p->elo_initial, p->elo_permutations, p->seed);
        break;
    }
    if (rc) return -1;
    if (!score_is_rate(p->method) && p->method != ARB_RANK_PEER_ELO) {
        if (r->anchor) {
            if (arb__buf_puts(b, "anchored: ") || arb__buf_put_safe(b, r->anchor) ||
                arb__buf_printf(b, " = %g\n", p->elo_initial))
                return -1;
        } else if (p->method == ARB_RANK_BT && arb__buf_printf(b, "anchored: the mean rating = %g\n", p->elo_initial)) {
            return -1;
        }
    }
    if (arb__buf_printf(b, "%zu battles, %zu models", r->n_battles_used, r->n_entries)) return -1;
    /* Strong verdicts (Arena-Hard A>>B) weighted as Arena-Hard-Auto does: say so, since every
    ** count and rate below then counts such a battle several times (README "Strong verdicts") */
    if ((r->n_strong > 0 || p->strong_weight > 1) &&
        arb__buf_printf(b, "; %zu strong (A>>B) battle%s, each counted %zu time%s "
                           "(--strong-weight)",
                        r->n_strong, r->n_strong == 1 ? "" : "s", p->strong_weight,
                        p->strong_weight == 1 ? "" : "s"))
        return -1;
    if (r->n_counted != r->n_battles_used &&
        arb__buf_printf(b, ":\n%zu battles in every count, rate, rating and bootstrap below",
                        r->n_counted))
        return -1;
    if (p->bootstrap > 0 && !is_peer(p->method) &&
        arb__buf_printf(b, "; %g%% percentile intervals from %zu bootstrap rounds (seed %llu)",
                        100.0 * p->ci_level, p->bootstrap, p->seed))
        return -1;
    /* The interval is of the printed estimator (§6, issue 12): say so, since arena-style tools
    ** bootstrap a single pass, whose interval is several times wider. */
    if (p->bootstrap > 0 && p->method == ARB_RANK_ELO &&
        arb__buf_printf(b, ";\neach round resamples the battles and takes the mean over %zu "
                           "random order%s, as the rating does", p->elo_permutations,
                        p->elo_permutations == 1 ? "" : "s"))
        return -1;
    return arb__buf_puts(b, "\n\n");
}

static int put_table(arb__buf *b, const arb_rank *r, const table_cols *t)
{
    const int sw = 8; /* score width */
    if (arb__buf_puts(b, "rank  ") || put_name(b, "model", t->name_width)) return -1;
    if (t->all && put_header(b, "All", sw + 2)) return -1;
    if (put_header(b, t->all ? "All (weighted)" : t->rate ? "win rate" : "rating",
                   t->all ? 16 : sw + 2))
        return -1;
    if (t->ci) {
        char head[32];
        snprintf(head, sizeof head, "%g%% interval", 100.0 * r->params.ci_level);
        if (arb__buf_puts(b, "  ") || put_name(b, head, 2 * sw + 4)) return -1;
    }
    if (t->sd && put_header(b, "sd", 8)) return -1;
    if (t->lc && put_header(b, "LC win", sw + 2)) return -1;
    if (t->lc_ci && (arb__buf_puts(b, "  ") || put_name(b, "LC interval", 2 * sw + 4))) return -1;
    if (t->style && put_header(b, "style", sw + 2)) return -1;
    if (t->style_ci && (arb__buf_puts(b, "  ") || put_name(b, "style interval", 2 * sw + 4)))
        return -1;
    if (arb__buf_puts(b, "  battles     wins     ties   losses\n")) return -1;

    for (size_t k = 0; k < r->n_entries; k++) {
        const arb_rank_entry *e = &r->entries[k];
        if (arb__buf_printf(b, "%4zu  ", rank_of(r, k)) || put_name(b, e->model, t->name_width))
            return -1;
        if (t->all && (arb__buf_puts(b, "  ") || put_score(b, r->all_scores[k], t->rate, sw)))
            return -1;
        if (arb__buf_puts(b, t->all ? "        " : "  ") || put_score(b, e->score, t->rate, sw))
            return -1;
        if (t->ci && put_interval(b, e->ci_lo, e->ci_hi, t->rate, sw)) return -1;
        if (t->sd && (isfinite(e->sd) ? arb__buf_printf(b, "%8.1f", e->sd)
                                      : arb__buf_printf(b, "%8s", "n/a")))
            return -1;
        if (t->lc && (arb__buf_puts(b, "  ") || put_score(b, e->lc_win_rate, 1, sw))) return -1;
        if (t->lc_ci && put_interval(b, e->lc_ci_lo, e->lc_ci_hi, 1, sw)) return -1;
        if (t->style && (arb__buf_puts(b, "  ") || put_score(b, e->style_rating, 0, sw)))
            return -1;
        if (t->style_ci && put_interval(b, e->style_ci_lo, e->style_ci_hi, 0, sw)) return -1;
        if (arb__buf_printf(b, "  %7zu  %7zu  %7zu  %7zu\n", e->battles, e->wins, e->ties,
                            e->losses))
            return -1;
    }
    return 0;
}

static int put_notes(arb__buf *b, const arb_rank *r)
{
    const arb_rank_params *p = &r->params;
    if (p->method == ARB_RANK_BT && r->bt_ridge_bound &&
        arb__buf_puts(b, "\nnote: the maximum-likelihood ratings do not exist for these battles "
                         "(a model or group of models\nnever wins, or never loses, against the "
                         "others); a tiny ridge penalty keeps them finite,\nso the extreme "
                         "ratings only say \"far below/above\", not how far.\n"))
        return -1;
    if (p->length_control) {
        if (arb__buf_printf(b, "\nlength control: Bradley-Terry with a length term on %zu "
                               "battles", r->lc_rows) ||
            (r->lc_left_out && arb__buf_printf(b, " (%zu left out: length unknown)", r->lc_left_out)))
            return -1;
        if (isfinite(r->lc_coef)
                ? arb__buf_printf(b, "; length effect %+.1f Elo points per typical length "
                                     "difference\n", r->lc_coef)
                : arb__buf_puts(b, "; no fit\n"))
            return -1;
        if (arb__buf_puts(b, "LC win = mean chance to beat the opponents it met at equal "
                             "length (weighted by battles)\n"))
            return -1;
    }
    if (p->style_control) {
        static const char *const names[ARB_STYLE__COUNT] = {"length", "headers", "lists", "bold"};
        if (arb__buf_printf(b, "\nstyle control: Bradley-Terry with length, headers, lists and "
                               "bold terms on %zu battles", r->style_rows) ||
            (r->style_left_out &&
             arb__buf_printf(b, " (%zu left out: a style feature unknown)", r->style_left_out)) ||
            arb__buf_puts(b, "\n  effects (Elo points per typical difference):"))
            return -1;
        for (int f = 0; f < ARB_STYLE__COUNT; f++) {
            if (isfinite(r->style_coef[f])
                    ? arb__buf_printf(b, " %s %+.1f", names[f], r->style_coef[f])
                    : arb__buf_printf(b, " %s n/a", names[f]))
                return -1;
        }
        if (arb__buf_puts(b, "\n")) return -1;
    }
    return 0;
}

/* The judgments without a valid verdict that gave no battle (issue 12: never silently). */
static int put_left_out(arb__buf *b, const arb_rank *r)
{
    if (!r->left_out_total) return 0;
    if (arb__buf_printf(b, "\nleft out: %zu judgment%s with verdict E (no valid verdict, or a "
                           "failed call) gave no battle; per model pair:\n",
                        r->left_out_total, r->left_out_total == 1 ? "" : "s"))
        return -1;
    for (size_t k = 0; k < r->n_left_out; k++) {
        const arb__rank_left_out *x = &r->left_out[k];
        if (arb__buf_puts(b, "  ") || arb__buf_put_safe(b, x->model_a) ||
            arb__buf_puts(b, " vs ") || arb__buf_put_safe(b, x->model_b) ||
            arb__buf_printf(b, ": %zu\n", x->n))
            return -1;
    }
    return 0;
}

static int put_matrix(arb__buf *b, const arb_rank *r, size_t name_w)
{
    size_t n = r->n_entries < TEXT_MAX_MATRIX ? r->n_entries : TEXT_MAX_MATRIX;
    if (n < 2) return 0;
    char **h = make_headers(r, n);
    if (!h) return -1;
    int rc = -1;
    if (arb__buf_puts(b, "\npairwise win rate: row beats column in their direct battles, ties "
                         "half; n/a = never met"))
        goto done;
    if (n < r->n_entries && arb__buf_printf(b, " (top %zu of %zu; the JSON has all)", n, r->n_entries))
        goto done;
    if (arb__buf_puts(b, "\n      ") || put_name(b, "", name_w)) goto done;
    for (size_t c = 0; c < n; c++)
        if (arb__buf_puts(b, " ") || put_header(b, h[c], ABBR_WIDTH + 1)) goto done;
    if (arb__buf_puts(b, "\n")) goto done;
    for (size_t row = 0; row < n; row++) {
        if (arb__buf_printf(b, "%4zu  ", row + 1) || put_name(b, r->entries[row].model, name_w))
            goto done;
        for (size_t c = 0; c < n; c++) {
            double x = r->pairwise[row * r->n_entries + c];
            if (row == c ? arb__buf_printf(b, " %*s", ABBR_WIDTH + 1, "-")
                         : arb__buf_puts(b, " ") || put_score(b, x, 1, ABBR_WIDTH + 1))
                goto done;
        }
        if (arb__buf_puts(b, "\n")) goto done;
    }
    rc = 0;
done:
    free_headers(h, n);
    return rc;
}

/* Battles counted at trend row t: every trend_every battles, the last row at the end. */
static size_t trend_after(const arb_rank *r, size_t t)
{
    size_t after = (t + 1) * r->params.trend_every;
    return after < r->n_counted ? after : r->n_counted;
}

static int put_trend(arb__buf *b, const arb_rank *r)
{
    if (!r->trend || !r->n_trend) return 0;
    size_t n = r->n_entries < TEXT_MAX_TREND ? r->n_entries : TEXT_MAX_TREND;
    char **h = make_headers(r, n);
    if (!h) return -1;
    int rc = -1;
    if (arb__buf_printf(b, "\nElo trend: one pass in the given order (K = %g, start %g), "
                           "ratings after every %zu battles",
                        r->params.elo_k, r->params.elo_initial, r->params.trend_every))
        goto done;
    if (n < r->n_entries && arb__buf_printf(b, " (top %zu of %zu models; the JSON has all)", n, r->n_entries))
        goto done;
    if (arb__buf_printf(b, "\n%10s", "after")) goto done;
    for (size_t c = 0; c < n; c++)
        if (arb__buf_puts(b, " ") || put_header(b, h[c], ABBR_WIDTH + 1)) goto done;
    if (arb__buf_puts(b, "\n")) goto done;
    for (size_t t = 0; t < r->n_trend; t++) {
        if (arb__buf_printf(b, "%10zu", trend_after(r, t))) goto done;
        for (size_t c = 0; c < n; c++)
            if (arb__buf_puts(b, " ") || put_score(b, r->trend[t * r->n_entries + c], 0, ABBR_WIDTH + 1))
                goto done;
        if (arb__buf_puts(b, "\n")) goto done;
    }
    rc = 0;
done:
    free_headers(h, n);
    return rc;
}

/* "  +0.800" right-aligned in width + 2 characters, or n/a. */
static int put_corr(arb__buf *b, double x, int width)
{
    return isfinite(x) ? arb__buf_printf(b, "  %+*.3f", width, x)
                       : arb__buf_printf(b, "  %*s", width, "n/a");
}

static int put_reviewers(arb__buf *b, const arb_rank *r)
{
    if (!r->n_reviewers) return 0;
    const arb_rank_params *p = &r->params;
    if (is_peer(p->method) &&
        (r->converged
             ? arb__buf_printf(b, "\npeer rank: %d iteration%s, converged (no weight moved by "
                                  "%g)\n", r->iterations, r->iterations == 1 ? "" : "s",
                               p->tolerance)
             : arb__buf_printf(b, "\npeer rank: NOT CONVERGED: stopped at the iteration limit "
                                  "(%d) with weights still moving by %g or more; the weights "
                                  "below are the last iteration's\n",
                               r->iterations, p->tolerance)))
        return -1;
    size_t rw = 8, mw = 10;
    int any_self = 0, any_summary = r->human.n_comparisons > 0 || r->human.summary_models > 0;
    for (size_t k = 0; k < r->n_reviewers; k++) {
        size_t w = name_width(r->reviewers[k].reviewer);
        if (w > rw) rw = w > NAME_MAX_WIDTH ? NAME_MAX_WIDTH : w;
        w = name_width(r->reviewers[k].model);
        if (w > mw) mw = w > NAME_MAX_WIDTH ? NAME_MAX_WIDTH : w;
        any_self |= isfinite(r->reviewers[k].self_enhancement);
    }
    char head[48];
    snprintf(head, sizeof head, "%g%% interval", 100.0 * p->ci_level);
    if (arb__buf_puts(b, "\n") || put_name(b, "reviewer", rw) || arb__buf_puts(b, "  ") ||
        put_name(b, "contestant", mw) || arb__buf_puts(b, "    weight  reviews"))
        return -1;
    if (arb__buf_printf(b, "  self-enhancement  %-*s", any_summary ? 22 : 0, head) ||
        (any_summary && arb__buf_puts(b, "  ρ humans  τb humans")) || arb__buf_puts(b, "\n"))
        return -1;
    for (size_t k = 0; k < r->n_reviewers; k++) {
        const arb_rank_reviewer *v = &r->reviewers[k];
        if (put_name(b, v->reviewer, rw) || arb__buf_puts(b, "  ") ||
            put_name(b, v->model ? v->model : "-", mw))
            return -1;
        if (isfinite(v->weight) ? arb__buf_printf(b, "  %8.4f", v->weight)
                                : arb__buf_printf(b, "  %8s", "n/a"))
            return -1;
        if (arb__buf_printf(b, "  %7zu", v->reviews)) return -1;
        if (isfinite(v->self_enhancement)
                ? arb__buf_printf(b, "  %+15.1f%%", 100.0 * v->self_enhancement)
                : arb__buf_printf(b, "  %16s", "n/a"))
            return -1;
        char ci[64] = "n/a";
        if (isfinite(v->self_ci_lo) && isfinite(v->self_ci_hi))
            snprintf(ci, sizeof ci, "[%+.1f%%, %+.1f%%]", 100.0 * v->self_ci_lo,
                     100.0 * v->self_ci_hi);
        if (arb__buf_printf(b, "  %-*s", any_summary ? 22 : 0, ci)) return -1;
        if (any_summary && (put_corr(b, v->summary_spearman, 10) ||
                            put_corr(b, v->summary_kendall, 11)))
            return -1;
        if (arb__buf_puts(b, "\n")) return -1;
    }
    if (any_self &&
        arb__buf_puts(b, "self-enhancement = the contestant's win rate in its own reviews minus "
                         "in the other reviewers' reviews\nof the same comparisons\n"))
        return -1;
    if (any_summary &&
        arb__buf_puts(b, "ρ, τb humans = Spearman and Kendall tau-b of the reviewer's win-rate "
                         "ranking of the contestants\nagainst the humans' (PRD summary level, "
                         "§6); n/a when undefined\n"))
        return -1;
    return 0;
}

static int put_human(arb__buf *b, const arb_rank *r)
{
    const arb__rank_human *h = &r->human;
    if (!h->n_comparisons && !h->summary_models) return 0;
    if (arb__buf_printf(b, "\nagreement of the reviewers' majority vote with the humans' "
                           "majority, %zu comparisons (§6):\n%18s  %8s  %9s\n",
                        h->n_comparisons, "", "accuracy", "Fleiss κ"))
        return -1;
    const struct {
        const char *label;
        double acc, kappa;
    } rows[2] = {{"All (weighted)", h->accuracy_weighted, h->fleiss_weighted},
                 {"All", h->accuracy_all, h->fleiss_all}};
    for (int k = 0; k < 2; k++) {
        if (arb__buf_printf(b, "  %-16s  ", rows[k].label) || put_score(b, rows[k].acc, 1, 8) ||
            (isfinite(rows[k].kappa) ? arb__buf_printf(b, "  %+9.3f\n", rows[k].kappa)
                                     : arb__buf_printf(b, "  %9s\n", "n/a")))
            return -1;
    }
    if (arb__buf_printf(b, "summary level (PRD): the %s column against the humans' win rate "
                           "over %zu contestants: Spearman",
                        is_peer(r->params.method) ? "All (weighted)" : "score",
                        h->summary_models) ||
        put_corr(b, h->summary_spearman, 1) || arb__buf_puts(b, ", Kendall tau-b") ||
        put_corr(b, h->summary_kendall, 1) || arb__buf_puts(b, "\n"))
        return -1;
    return 0;
}

/* 1 when reviewer v was compared with the humans' majority (some review counted or skipped). */
static int compared_with_humans(const arb_rank_reviewer *v)
{
    return v->human_reviews > 0 || v->human_ties_skipped > 0;
}

/* Each reviewer's own reviews against the humans' majority (METHODS §4; PRD's per-reviewer
** table), after the majority-vote rows. */
static int put_reviewer_agreement(arb__buf *b, const arb_rank *r)
{
    size_t rw = 8, n = 0;
    for (size_t k = 0; k < r->n_reviewers; k++) {
        if (!compared_with_humans(&r->reviewers[k])) continue;
        n++;
        size_t w = name_width(r->reviewers[k].reviewer);
        if (w > rw) rw = w > NAME_MAX_WIDTH ? NAME_MAX_WIDTH : w;
    }
    if (!n) return 0;
    if (arb__buf_puts(b, "\neach reviewer against the humans' majority, every review counted "
                         "(both orders; PRD's per-reviewer\ntable, METHODS §4):\n") ||
        put_name(b, "reviewer", rw) ||
        arb__buf_puts(b, "   reviews  accuracy   Cohen κ   skipped (annotators tied)\n"))
        return -1;
    for (size_t k = 0; k < r->n_reviewers; k++) {
        const arb_rank_reviewer *v = &r->reviewers[k];
        if (!compared_with_humans(v)) continue;
        if (put_name(b, v->reviewer, rw) || arb__buf_printf(b, "  %8zu  ", v->human_reviews) ||
            put_score(b, v->human_accuracy, 1, 8) || put_corr(b, v->human_kappa, 8) ||
            arb__buf_printf(b, "  %8zu\n", v->human_ties_skipped))
            return -1;
    }
    return arb__buf_puts(b, "the majority here is the verdict most annotators gave; a "
                            "comparison where two verdicts tie for\nmost has none and its "
                            "reviews are skipped (the vote rows above take the sign of the "
                            "mean\nhuman vote instead, a split being a tie)\n");
}

/* Returns the ranking as text (caller frees with arb_free), NULL when out of memory. */
char *arb_rank_to_text(const arb_rank *r)
{
    if (!r) return NULL;
    arb__buf b;
    arb__buf_init(&b, 0);
    if (put_title(&b, r)) goto fail;
    if (r->n_entries == 0) {
        if (arb__buf_puts(&b, "no battles to rank\n") || put_left_out(&b, r)) goto fail;
        return arb__buf_steal(&b);
    }
    table_cols t = table_columns(r);
    if (put_table(&b, r, &t) || put_notes(&b, r) || put_left_out(&b, r) || put_matrix(&b, r, t.name_width) ||
        put_trend(&b, r) || put_reviewers(&b, r) || put_human(&b, r) ||
        put_reviewer_agreement(&b, r))
        goto fail;
    return arb__buf_steal(&b);
fail:
    arb__buf_free(&b);
    return NULL;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

/* [lo, hi], or null when either end is undefined. */
static json_t *json_ci(double lo, double hi)
{
    if (!isfinite(lo) || !isfinite(hi)) return json_null();
    return json_pack("[ff]", lo, hi);
}

static json_t *json_size(size_t n) { return json_integer((json_int_t)n); }

static json_t *params_json(const arb_rank *r)
{
    const arb_rank_params *p = &r->params;
    json_t *o = json_object();
    if (!o) return NULL;
    if (arb__json_set(o, "method", json_string(method_name(p->method))) ||
        arb__json_set(o, "elo_k", json_real(p->elo_k)) ||
        arb__json_set(o, "elo_initial", json_real(p->elo_initial)) ||
        arb__json_set(o, "elo_permutations", json_size(p->elo_permutations)) ||
        arb__json_set(o, "anchor", r->anchor ? arb__json_name(r->anchor) : json_null()) ||
        arb__json_set(o, "bootstrap", json_size(p->bootstrap)) ||
        arb__json_set(o, "seed", json_integer((json_int_t)p->seed)) ||
        arb__json_set(o, "ci_level", json_real(p->ci_level)) ||
        arb__json_set(o, "exclude_self", json_boolean(p->exclude_self)) ||
        arb__json_set(o, "top_k_reviewers", json_size(p->top_k_reviewers)) ||
        arb__json_set(o, "max_iterations", json_integer(p->max_iterations)) ||
        arb__json_set(o, "tolerance", json_real(p->tolerance)) ||
        arb__json_set(o, "trend_every", json_size(p->trend_every)) ||
        arb__json_set(o, "length_control", json_boolean(p->length_control)) ||
        arb__json_set(o, "style_control", json_boolean(p->style_control))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *entry_json(const arb_rank *r, size_t k)
{
    const arb_rank_entry *e = &r->entries[k];
    json_t *o = json_object();
    if (!o) return NULL;
    if (arb__json_set(o, "rank", json_size(rank_of(r, k))) ||
        arb__json_set(o, "model", arb__json_name(e->model)) ||
        arb__json_set(o, "score", arb__json_metric(e->score)) ||
        arb__json_set(o, "ci", json_ci(e->ci_lo, e->ci_hi)) ||
        arb__json_set(o, "sd", arb__json_metric(e->sd)) ||
        arb__json_set(o, "battles", json_size(e->battles)) ||
        arb__json_set(o, "wins", json_size(e->wins)) ||
        arb__json_set(o, "ties", json_size(e->ties)) ||
        arb__json_set(o, "losses", json_size(e->losses)) ||
        arb__json_set(o, "lc_win_rate", arb__json_metric(e->lc_win_rate)) ||
        arb__json_set(o, "lc_ci", json_ci(e->lc_ci_lo, e->lc_ci_hi)) ||
        arb__json_set(o, "style_rating", arb__json_metric(e->style_rating)) ||
        arb__json_set(o, "style_ci", json_ci(e->style_ci_lo, e->style_ci_hi)) ||
        arb__json_set(o, "all_score",
                      arb__json_metric(r->all_scores ? r->all_scores[k] : NAN))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *pairwise_json(const arb_rank *r)
{
    json_t *o = json_object(), *models = json_array(), *rows = json_array();
    if (!o || arb__json_set(o, "models", models) || arb__json_set(o, "win_rate", rows)) {
        json_decref(o);
        return NULL;
    }
    for (size_t k = 0; k < r->n_entries; k++) {
        json_t *row = json_array();
        if (json_array_append_new(models, arb__json_name(r->entries[k].model)) ||
            json_array_append_new(rows, row))
            goto fail;
        for (size_t c = 0; c < r->n_entries; c++)
            if (json_array_append_new(row, arb__json_metric(arb_rank_pairwise(r, k, c))))
                goto fail;
    }
    return o;
fail:
    json_decref(o);
    return NULL;
}

static json_t *reviewers_json(const arb_rank *r)
{
    json_t *a = json_array();
    if (!a) return NULL;
    for (size_t k = 0; k < r->n_reviewers; k++) {
        const arb_rank_reviewer *v = &r->reviewers[k];
        json_t *o = json_object();
        if (!o || json_array_append_new(a, o) ||
            arb__json_set(o, "reviewer", arb__json_name(v->reviewer)) ||
            arb__json_set(o, "model", v->model ? arb__json_name(v->model) : json_null()) ||
            arb__json_set(o, "weight", arb__json_metric(v->weight)) ||
            arb__json_set(o, "reviews", json_size(v->reviews)) ||
            arb__json_set(o, "self_enhancement", arb__json_metric(v->self_enhancement)) ||
            arb__json_set(o, "self_ci", json_ci(v->self_ci_lo, v->self_ci_hi)) ||
            arb__json_set(o, "summary_spearman", arb__json_metric(v->summary_spearman)) ||
            arb__json_set(o, "summary_kendall", arb__json_metric(v->summary_kendall))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *human_json(const arb_rank *r)
{
    const arb__rank_human *h = &r->human;
    if (!h->n_comparisons && !h->summary_models) return json_null();
    json_t *o = json_object();
    if (!o) return NULL;
    if (arb__json_set(o, "n_comparisons", json_size(h->n_comparisons)) ||
        arb__json_set(o, "accuracy_weighted", arb__json_metric(h->accuracy_weighted)) ||
        arb__json_set(o, "accuracy_all", arb__json_metric(h->accuracy_all)) ||
        arb__json_set(o, "fleiss_weighted", arb__json_metric(h->fleiss_weighted)) ||
        arb__json_set(o, "fleiss_all", arb__json_metric(h->fleiss_all)) ||
        arb__json_set(o, "summary_models", json_size(h->summary_models)) ||
        arb__json_set(o, "summary_spearman", arb__json_metric(h->summary_spearman)) ||
        arb__json_set(o, "summary_kendall", arb__json_metric(h->summary_kendall))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* [{"reviewer", "n_reviews", "accuracy", "kappa", "n_human_ties_skipped"}] per reviewer compared
** with the humans' majority; null when no reviewer was (no humans). */
static json_t *reviewer_agreement_json(const arb_rank *r)
{
    size_t n = 0;
    for (size_t k = 0; k < r->n_reviewers; k++) n += compared_with_humans(&r->reviewers[k]);
    if (!n) return json_null();
    json_t *a = json_array();
    for (size_t k = 0; a && k < r->n_reviewers; k++) {
        const arb_rank_reviewer *v = &r->reviewers[k];
        if (!compared_with_humans(v)) continue;
        json_t *o = json_object();
        if (!o || json_array_append_new(a, o) ||
            arb__json_set(o, "reviewer", arb__json_name(v->reviewer)) ||
            arb__json_set(o, "n_reviews", json_size(v->human_reviews)) ||
            arb__json_set(o, "accuracy", arb__json_metric(v->human_accuracy)) ||
            arb__json_set(o, "kappa", arb__json_metric(v->human_kappa)) ||
            arb__json_set(o, "n_human_ties_skipped", json_size(v->human_ties_skipped))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* [{"model_a", "model_b", "n"}] per pair (empty when none). */
static json_t *left_out_json(const arb_rank *r)
{
    json_t *a = json_array();
    for (size_t k = 0; a && k < r->n_left_out; k++) {
        const arb__rank_left_out *x = &r->left_out[k];
        json_t *o = json_object();
        if (!o || json_array_append_new(a, o) ||
            arb__json_set(o, "model_a", arb__json_name(x->model_a)) ||
            arb__json_set(o, "model_b", arb__json_name(x->model_b)) ||
            arb__json_set(o, "n", json_size(x->n))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *trend_json(const arb_rank *r)
{
    if (!r->trend || !r->n_trend) return json_null();
    json_t *a = json_array();
    if (!a) return NULL;
    for (size_t t = 0; t < r->n_trend; t++) {
        json_t *o = json_object();
        if (json_array_append_new(a, o) ||
            arb__json_set(o, "after", json_size(trend_after(r, t))) ||
            arb__json_set(o, "ratings", json_object()))
            goto fail;
        json_t *ratings = json_object_get(o, "ratings");
        for (size_t k = 0; k < r->n_entries; k++) {
            json_t *name = arb__json_name(r->entries[k].model);
            int bad = !name || arb__json_set(ratings, json_string_value(name),
                                             arb__json_metric(r->trend[t * r->n_entries + k]));
            json_decref(name);
            if (bad) goto fail;
        }
    }
    return a;
fail:
    json_decref(a);
    return NULL;
}

static json_t *control_json(size_t rows, size_t left_out, const double *coef, size_t n_coef)
{
    static const char *const names[ARB_STYLE__COUNT] = {"length", "headers", "lists", "bold"};
    json_t *o = json_object(), *c = json_object();
    if (!o || !c) goto fail;
    for (size_t f = 0; f < n_coef; f++)
        if (arb__json_set(c, names[f], arb__json_metric(coef[f]))) goto fail;
    if (arb__json_set(o, "battles", json_size(rows)) ||
        arb__json_set(o, "left_out", json_size(left_out)))
        goto fail;
    if (arb__json_set(o, "coefficients", c)) {
        c = NULL;
        goto fail;
    }
    return o;
fail:
    json_decref(o);
    json_decref(c);
    return NULL;
}

/* Returns the ranking as JSON (keys in README; caller frees with arb_free), NULL when out of
** memory. */
char *arb_rank_to_json(const arb_rank *r)
{
    if (!r) return NULL;
    const arb_rank_params *p = &r->params;
    json_t *root = json_object(), *models = json_array();
    char *text = NULL;
    if (!root || !models) {
        json_decref(root);
        json_decref(models);
        return NULL;
    }
    if (arb__json_set(root, "arbiter_version", json_string(ARB_VERSION)) ||
        arb__json_set(root, "method", json_string(method_name(p->method))) ||
        arb__json_set(root, "params", params_json(r)) ||
        arb__json_set(root, "n_battles", json_size(r->n_battles_used)) ||
        arb__json_set(root, "strong_weight", json_size(p->strong_weight)) ||
        arb__json_set(root, "n_strong", json_size(r->n_strong)) ||
        arb__json_set(root, "n_counted", json_size(r->n_counted)) ||
        arb__json_set(root, "n_left_out_e", json_size(r->left_out_total)) ||
        arb__json_set(root, "left_out_e", left_out_json(r))) {
        json_decref(models);
        goto done;
    }
    if (arb__json_set(root, "models", models)) goto done;
    for (size_t k = 0; k < r->n_entries; k++)
        if (json_array_append_new(models, entry_json(r, k))) goto done;
    json_t *peer = json_null();
    if (is_peer(p->method))
        peer = json_pack("{s:i,s:b,s:i,s:f}", "iterations", r->iterations, "converged",
                         r->converged, "max_iterations", p->max_iterations, "tolerance",
                         p->tolerance);
    if (arb__json_set(root, "pairwise", pairwise_json(r)) ||
        arb__json_set(root, "reviewers", reviewers_json(r)) || arb__json_set(root, "peer", peer) ||
        arb__json_set(root, "human", human_json(r)) ||
        arb__json_set(root, "reviewer_agreement", reviewer_agreement_json(r)) ||
        arb__json_set(root, "trend", trend_json(r)) ||
        arb__json_set(root, "bt_mle_exists",
                      p->method == ARB_RANK_BT ? json_boolean(!r->bt_ridge_bound) : json_null()) ||
        arb__json_set(root, "length_control",
                      p->length_control ? control_json(r->lc_rows, r->lc_left_out, &r->lc_coef, 1)
                                        : json_null()) ||
        arb__json_set(root, "style_control",
                      p->style_control ? control_json(r->style_rows, r->style_left_out,
                                                      r->style_coef, ARB_STYLE__COUNT)
                                       : json_null()))
        goto done;
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
done:
    json_decref(root);
    return text;
}
