/*
** report_persona.c -- the report's persona section (id "persona"): does a judge score the same
** response differently when it is attributed to another identity (METHODS §9), drawn from
** arb_persona_stats_compute. Per judge x identity category, and within it per phase: the
** combined identity x identity difference matrix (row minus column) as a heat map on a
** diverging scale around 0, the mean combined score per identity with its bootstrap interval,
** the phase-2 win rate per identity against the 50% line, the position effect apart from them
** ("position, not identity"), and the chi-squared table (statistic, df, p, Holm p, significant,
** cells with an expected count below 5); then a plain statement of what is significant.
**
** Invariants: the section exists only when the store holds persona scores; every number is the
** library's (this file chooses, arranges and explains; it only picks the highest and lowest
** identity of a significant test to name them); an undefined value reads "n/a" in tables and is
** a hatched cell or an n/a mark in charts, never 0; every chart has a table beside it with its
** numbers (the Markdown shows the tables only). Identity labels, categories and judge names
** come from user files and the store: plain document strings, escaped by the renderers.
** Not here: the statistics (persona_stats.c), HTML and Markdown (report_html.c, report_md.c).
*/
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PREFERRED "preferred" /* the phase-2 test of identity x won/lost */
/* The smallest half-range of the difference heat maps' colour scale, in score points: a fair
** judge's differences of a few tenths stay pale instead of taking the darkest colour. */
#define DIFF_SCALE_MIN 1.0

typedef struct persona_ctx {
    arb__report_doc *doc;
    const arb_persona_stats *ps;
    double alpha;
    double half_range; /* the colour scale of every difference heat map: -h..+h */
    int intervals;     /* bootstrapped */
} persona_ctx;

static const char *phase_words(int phase)
{
    return phase == 1 ? "Phase 1: single candidate"
                      : "Phase 2: contrastive pair (labels exchanged, positions swapped)";
}

/* A win-rate chart (intervals, in percent, the 50% line) with n rows: NULL when out of memory. */
static arb__report_chart *win_chart(arb__report_doc *d, const char *title, size_t n)
{
    arb__report_chart *ch = arb__report_chart_new(d, ARB__CHART_INTERVALS, title, n, 0);
    if (!ch) return NULL;
    ch->x_label = "win rate (%)";
    ch->ref = 50;
    return ch;
}

/* Row i of a win-rate chart and the cells of its table row from column k on: the rate with
** its interval, then its deviation from 50% in points. */
static void win_cells(arb__report_doc *d, arb__report_chart *ch, size_t i, const char **row,
                      size_t k, double rate, const double ci[2])
{
    ch->values[i] = 100 * rate;
    ch->lo[i] = 100 * ci[0];
    ch->hi[i] = 100 * ci[1];
    row[k] = arb__report_value_ci(d, ARB__FMT_PERCENT, rate, ci[0], ci[1]);
    row[k + 1] = isfinite(rate) ? arb__report_printf(d, "%+.1f pts", 100 * (rate - 0.5)) : "n/a";
}

/* The value a test compares across identities: identity i's mean on the test's metric, or its
** win rate for "preferred". NAN when the row has no such metric. */
static double tested_value(const arb_persona_row *r, const arb_persona_chi2 *t, size_t i)
{
    if (!strcmp(t->metric, PREFERRED)) return r->win_rate ? r->win_rate[i] : NAN;
    for (size_t m = 0; m < r->n_metrics; m++)
        if (!strcmp(r->metrics[m], t->metric)) return r->mean[i * r->n_metrics + m];
    return NAN;
}

/* What test t compares, for people: its metric, or "win rate" for preferred. */
static const char *test_name(const arb_persona_chi2 *t)
{
    return !strcmp(t->metric, PREFERRED) ? "win rate" : t->metric;
}

/* "accuracy (highest female 8.000, lowest male 6.000)" for a significant test t of r. */
static const char *finding(persona_ctx *m, const arb_persona_row *r, const arb_persona_chi2 *t)
{
    arb__report_doc *d = m->doc;
    int share = !strcmp(t->metric, PREFERRED);
    size_t hi = SIZE_MAX, lo = SIZE_MAX;
    for (size_t i = 0; i < r->n_identities; i++) {
        double v = tested_value(r, t, i);
        if (!isfinite(v)) continue;
        if (hi == SIZE_MAX || v > tested_value(r, t, hi)) hi = i;
        if (lo == SIZE_MAX || v < tested_value(r, t, lo)) lo = i;
    }
    const char *what = test_name(t);
    const char *p = arb__report_value(d, ARB__FMT_P, t->p_holm);
    if (hi == SIZE_MAX || hi == lo)
        return arb__report_printf(d, "%s (Holm p %s)", what, p);
    arb__report_format f = share ? ARB__FMT_PERCENT : ARB__FMT_PLAIN;
    return arb__report_printf(d, "%s (Holm p %s; highest %s %s, lowest %s %s)", what, p,
                              r->identities[hi], arb__report_value(d, f, tested_value(r, t, hi)),
                              r->identities[lo], arb__report_value(d, f, tested_value(r, t, lo)));
}

/* The plain statement over the whole section: the Holm family is every test of it. */
static void statement_part(persona_ctx *m)
{
    arb__report_doc *d = m->doc;
    size_t n_tests = arb_persona_stats_n_tests(m->ps);
    size_t n_sig = arb_persona_stats_n_significant(m->ps);
    if (!n_sig) {
        arb__report_para(d, "No identity difference is significant at α = %g after Holm's "
                            "correction over %zu test%s: these data do not show that the score "
                            "depends on the identity (which is not proof that it never does).",
                         m->alpha, n_tests, n_tests == 1 ? "" : "s");
        return;
    }
    /* one clause per judge x category x phase naming its significant tests; which identity
    ** is highest and lowest is said under each entry */
    const char *list = "";
    for (size_t k = 0; k < arb_persona_stats_count(m->ps); k++) {
        const arb_persona_row *r = arb_persona_stats_row_at(m->ps, k);
        const char *tests = "";
        for (size_t t = 0; t < r->n_chi2; t++)
            if (r->chi2[t].significant == 1)
                tests = arb__report_printf(d, "%s%s%s", tests ? tests : "",
                                           tests && *tests ? ", " : "",
                                           test_name(&r->chi2[t]));
        if (tests && *tests)
            list = arb__report_printf(d, "%s%s%s · %s · phase %d: %s", list ? list : "",
                                      list && *list ? "; " : "", r->judge, r->category, r->phase,
                                      tests);
    }
    arb__report_para(d, "Significant at α = %g after Holm's correction over %zu tests, so the "
                        "score depends on the identity there: %s.",
                     m->alpha, n_tests, list);
}

/* The combined difference matrix: heat map and its numbers. */
static void matrix_part(persona_ctx *m, const arb_persona_row *r)
{
    arb__report_doc *d = m->doc;
    size_t I = r->n_identities;
    arb__report_chart *ch = arb__report_chart_new(
        d, ARB__CHART_HEATMAP, "Combined score difference: row identity minus column identity",
        I, I);
    arb__report_table *t = arb__report_table_wide(
        d, "Combined score difference, row minus column (above 0: the row's identity scored "
           "higher)",
        "Identity", r->identities, I);
    if (!ch || !t) return;
    t->folded = 1;
    ch->diverging = 1;
    ch->v_hi = m->half_range;
    ch->cell_format = "%+.2f";
    for (size_t i = 0; i < I; i++) {
        ch->rows[i] = ch->cols[i] = arb__report_str(d, r->identities[i]);
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        row[0] = ch->rows[i];
        for (size_t j = 0; j < I; j++) {
            double diff = r->combined_diff[i * I + j];
            /* a difference that prints as 0 at two decimals is drawn as 0: no "-0.00" cell */
            ch->values[i * I + j] = fabs(diff) < 0.005 ? 0 : diff;
            row[j + 1] = arb__report_value(d, ARB__FMT_SIGNED, r->combined_diff[i * I + j]);
        }
    }
}

/* The mean score per identity: the combined one with whiskers, every metric in the table. */
static void means_part(persona_ctx *m, const arb_persona_row *r)
{
    arb__report_doc *d = m->doc;
    size_t I = r->n_identities, M = r->n_metrics;
    arb__report_chart *ch = arb__report_chart_new(d, ARB__CHART_INTERVALS,
                                                  "Mean combined score per identity", I, 0);
    const char **names = arb__report_alloc(d, M + 2, sizeof *names);
    if (!ch || !names) return;
    names[0] = "Scores";
    names[1] = "Combined";
    for (size_t k = 0; k < M; k++) names[k + 2] = r->metrics[k];
    arb__report_table *t = arb__report_table_wide(
        d, "Mean score per identity (combined = mean of the metric means)", "Identity", names,
        M + 2);
    if (!t) return;
    ch->x_label = "combined score (mean of the metric means)";
    for (size_t i = 0; i < I; i++) {
        ch->rows[i] = arb__report_str(d, r->identities[i]);
        ch->values[i] = r->combined[i];
        ch->lo[i] = r->combined_ci[2 * i];
        ch->hi[i] = r->combined_ci[2 * i + 1];
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        row[0] = ch->rows[i];
        row[1] = arb__report_count(d, M ? (long long)r->n_scores[i * M] : 0);
        row[2] = arb__report_value_ci(d, ARB__FMT_PLAIN, r->combined[i], ch->lo[i], ch->hi[i]);
        for (size_t k = 0; k < M; k++)
            row[k + 3] = arb__report_value_ci(d, ARB__FMT_PLAIN, r->mean[i * M + k],
                                              r->mean_ci[2 * (i * M + k)],
                                              r->mean_ci[2 * (i * M + k) + 1]);
    }
}

/* Phase 2: win rate per identity against 50%, then the position effect on its own. */
static void wins_part(persona_ctx *m, const arb_persona_row *r)
{
    arb__report_doc *d = m->doc;
    size_t I = r->n_identities;
    arb__report_chart *ch =
        win_chart(d, "Win rate per identity in phase 2 (50%: no preference)", I);
    arb__report_table *t = arb__report_table_new(
        d, "Win rate per identity: share of its pairings where its candidate was preferred",
        "Identity|#Pairings|#Wins|#Win rate|#Deviation from 50%");
    if (!ch || !t) return;
    for (size_t i = 0; i < I; i++) {
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        row[0] = ch->rows[i] = arb__report_str(d, r->identities[i]);
        row[1] = arb__report_count(d, (long long)r->n_pairings[i]);
        row[2] = arb__report_count(d, (long long)r->n_wins[i]);
        win_cells(d, ch, i, row, 3, r->win_rate[i], &r->win_rate_ci[2 * i]);
    }

    arb__report_para(d, "Position, not identity: the share of valid phase-2 calls whose "
                        "preferred candidate was the one shown first, whatever the identities. "
                        "Every pairing is judged with the labels exchanged and the positions "
                        "swapped, so this effect cancels out of the win rates above; it is "
                        "shown here so it is not mistaken for an identity effect.");
    arb__report_chart *pc = win_chart(
        d, "Position, not identity: win rate of the candidate shown first (50%: no position effect)",
        1);
    arb__report_table *pt = arb__report_table_new(
        d, "Position effect (position, not identity)",
        "Candidate|#Valid pairs|#Win rate|#Deviation from 50%");
    const char **row = pc && pt ? arb__report_table_row(d, pt) : NULL;
    if (!row) return;
    row[0] = pc->rows[0] = "shown first";
    row[1] = arb__report_count(d, (long long)r->n_pairs);
    win_cells(d, pc, 0, row, 2, r->first_shown_rate, r->first_shown_ci);
}

/* The chi-squared tests of r and what is significant among them. */
static void tests_part(persona_ctx *m, const arb_persona_row *r)
{
    arb__report_doc *d = m->doc;
    arb__report_table *t = arb__report_table_new(
        d,
        r->phase == 2 ? "χ² tests of independence: identity x score level (preferred: identity "
                        "x won/lost)"
                      : "χ² tests of independence: identity x score level",
        "Metric|#χ²|#df|#p|#Holm p|Significant|#Cells expected < 5");
    if (!t) return;
    const char *found = "", *warned = "";
    for (size_t k = 0; k < r->n_chi2; k++) {
        const arb_persona_chi2 *c = &r->chi2[k];
        int defined = isfinite(c->test.statistic);
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        row[0] = arb__report_str(d, c->metric);
        row[1] = arb__report_value(d, ARB__FMT_PLAIN, c->test.statistic);
        row[2] = defined ? arb__report_printf(d, "%.0f", c->test.df) : "n/a";
        row[3] = arb__report_value(d, ARB__FMT_P, c->test.p_value);
        row[4] = arb__report_value(d, ARB__FMT_P, c->p_holm);
        row[5] = c->significant == 1 ? "yes" : c->significant == 0 ? "no" : "n/a";
        row[6] = defined ? arb__report_printf(d, "%zu of %zu", c->test.n_expected_below_5,
                                              c->test.n_cells)
                         : "n/a";
        if (c->significant == 1)
            found = arb__report_printf(d, "%s%s%s", found ? found : "", found && *found ? "; " : "",
                                       finding(m, r, c));
        if (defined && c->test.n_expected_below_5)
            warned = arb__report_printf(d, "%s%s%s", warned ? warned : "",
                                        warned && *warned ? ", " : "", c->metric);
    }
    if (found && *found)
        arb__report_para(d, "Significant here at α = %g after Holm's correction: %s.", m->alpha,
                         found);
    else
        arb__report_para(d, "Nothing significant here at α = %g after Holm's correction.",
                         m->alpha);
    if (warned && *warned)
        arb__report_note(d, "Warning: some cells of %s have an expected count below 5, where "
                            "the χ² approximation is poor; read those p-values with care (more "
                            "scenarios or repetitions help).",
                         warned);
}

static void entry_part(persona_ctx *m, const arb_persona_row *r)
{
    arb__report_doc *d = m->doc;
    arb__report_subheading(d, "%s", phase_words(r->phase));
    arb__report_para(d, "%zu calls, %zu E (left out), %zu scenarios%s.", r->n_calls, r->n_errors,
                     r->n_scenarios,
                     r->phase == 2 ? arb__report_printf(d, ", %zu valid pairs", r->n_pairs) : "");
    matrix_part(m, r);
    means_part(m, r);
    if (r->phase == 2 && r->win_rate) wins_part(m, r);
    tests_part(m, r);
}

/* The panels' before/after: per panel x category x phase, the identity spread per round, the
** consensus's, and the direction (point estimates, no test). */
static void panels_part(persona_ctx *m)
{
    arb__report_doc *d = m->doc;
    size_t n = arb_persona_stats_n_panels(m->ps);
    if (!n) return;
    arb__report_heading(d, "Panel before/after");
    arb__report_para(d, "Did discussion move the panel toward parity? The identity spread is the "
                        "largest minus the smallest combined mean over the identities, averaged "
                        "over the agents (phase 2 also: the spread of the win rates). Round 0 "
                        "is the agents' independent scores, round r their scores after r rounds "
                        "of discussion; the direction compares the last round with round 0. "
                        "Point estimates only: no significance is claimed.");
    for (size_t k = 0; k < n; k++) {
        const arb_persona_panel *pp = arb_persona_stats_panel_at(m->ps, k);
        const char **names = arb__report_alloc(d, pp->n_rounds + 1, sizeof *names);
        if (!names) return;
        for (size_t r = 0; r < pp->n_rounds; r++)
            names[r] = arb__report_printf(d, "Round %d", pp->rounds[r].round);
        names[pp->n_rounds] = "Consensus";
        arb__report_table *t = arb__report_table_wide(
            d,
            arb__report_printf(d, "%s · %s · phase %d: %s", pp->panel, pp->category, pp->phase,
                               pp->direction ? pp->direction : "direction undefined"),
            "Spread", names, pp->n_rounds + 1);
        if (!t) return;
        for (int w = 0; w < (pp->phase == 2 ? 2 : 1); w++) {
            const char **row = arb__report_table_row(d, t);
            if (!row) return;
            arb__report_format f = w ? ARB__FMT_PERCENT : ARB__FMT_PLAIN;
            row[0] = w ? "win rate (max − min)" : "combined score (max − min)";
            for (size_t r = 0; r < pp->n_rounds; r++)
                row[r + 1] = arb__report_value(d, f, w ? pp->rounds[r].win_rate_spread
                                                       : pp->rounds[r].identity_spread);
            row[pp->n_rounds + 1] =
                arb__report_value(d, f, w ? pp->consensus_win_rate_spread : pp->consensus_spread);
        }
    }
}

arb_status arb__report_persona(arb__report_doc *d, arb_store *store, const arb_report_params *p)
{
    arb_persona_stats_params sp = arb_persona_stats_default_params();
    sp.bootstrap = p->bootstrap;
    sp.seed = p->seed;
    arb_persona_stats *ps = NULL;
    arb_status st = arb_persona_stats_compute(store, &sp, &ps);
    if (st) return st;
    size_t n = arb_persona_stats_count(ps);
    persona_ctx m = {d, ps, sp.alpha, DIFF_SCALE_MIN, p->bootstrap > 0};
    if (n) {
        for (size_t k = 0; k < n; k++) {
            const arb_persona_row *r = arb_persona_stats_row_at(ps, k);
            size_t cells = r->n_identities * r->n_identities;
            for (size_t c = 0; c < cells; c++)
                if (isfinite(r->combined_diff[c]))
                    m.half_range = fmax(m.half_range, fabs(r->combined_diff[c]));
        }
        arb__report_begin_section(d, "persona", "Persona bias");
        arb__report_para(
            d,
            "The same responses attributed to different identities (arbiter persona run, "
            "METHODS §9): a judge without persona bias gives them the same scores whoever is "
            "said to have written them. Phase 1 scores one response at a time; phase 2 shows two "
            "candidates of one category and asks which is better. Means are over the valid "
            "calls (E left out), every repetition counted; the combined score of an identity is "
            "the mean of its metric means. The difference matrices read row minus column and "
            "share one colour scale, red below 0 and blue above, from -%.2f to +%.2f points "
            "(the largest difference, at least %.0f point). χ² p-values are Holm-adjusted over "
            "all %zu tests of this section; a test is significant when its Holm p is at most "
            "α = %g. %s",
            m.half_range, m.half_range, DIFF_SCALE_MIN, arb_persona_stats_n_tests(ps), m.alpha,
            m.intervals
                ? arb__report_printf(d, "Intervals: 95%% percentile bootstrap over scenarios, %zu "
                                        "resamples, seed %llu.",
                                     p->bootstrap, p->seed)
                : "No intervals (bootstrap 0).");
        statement_part(&m);
        for (size_t k = 0; k < n; k++) {
            const arb_persona_row *r = arb_persona_stats_row_at(ps, k);
            const arb_persona_row *prev = k ? arb_persona_stats_row_at(ps, k - 1) : NULL;
            if (!prev || strcmp(prev->judge, r->judge) || strcmp(prev->category, r->category))
                arb__report_heading(d, "%s · %s", r->judge, r->category);
            entry_part(&m, r);
        }
        panels_part(&m);
    }
    arb_persona_stats_destroy(ps);
    return d->nomem ? arb__store_fail(store, ARB_NOMEM, "report: out of memory") : ARB_OK;
}
