/*
** audit_render.c -- the judge audit as aligned text tables for people and as JSON for
** programs (keys documented in README, stable, snake_case).
**
** Invariants: an undefined metric is "n/a" in text and null in JSON, never NaN or inf; names
** (judges, models, tasks) are untrusted and pass through arb__buf_put_safe / arb__json_name.
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How a metric is printed and explained in text. */
typedef enum { FMT_SIGNED, FMT_PERCENT, FMT_PLAIN } value_format;

typedef struct metric_text {
    arb_audit_metric id;
    const char *label;
    value_format fmt;
    const char *meaning;
} metric_text;

static const metric_text bias_metrics[] = {
    {ARB_M_PBIAS_AB, "PBias@AB", FMT_SIGNED, "position bias: > 0 favours the first answer (§3)"},
    {ARB_M_CON_ABCD, "Con@ABCD", FMT_PERCENT, "same model verdict in both orders (§3)"},
    {ARB_M_PCON_AB, "PCon@AB", FMT_PERCENT, "same a/b among pairs with a or b in an order (§3)"},
    {ARB_M_MPCC_CONSISTENCY, "MPCC-Cons", FMT_SIGNED,
     "Pearson of run 0 and run 1 window series (§3.1)"},
    {ARB_M_RS, "RS", FMT_PLAIN, "repetition stability: share of the usual verdict (§5)"},
    {ARB_M_PC, "PC", FMT_PERCENT, "position consistency: pairs (A,B) (B,A) (C,C) (D,D) (§5)"},
    {ARB_M_ERROR_RATE, "error rate", FMT_PERCENT, "judgments without a valid verdict, E (§5)"},
    {ARB_M_IPR, "ipr", FMT_PLAIN, "primacy share of the leaning inconsistent pairs (§5)"},
    {ARB_M_IRR, "irr", FMT_PLAIN, "recency share (§5)"},
    {ARB_M_PF, "PF", FMT_SIGNED, "preference fairness: < 0 primacy, > 0 recency (§5)"},
    {ARB_M_PC_UNIT_MEAN, "PC unit mean", FMT_PERCENT, "mean of PC over (comparison, task) units (§5)"},
    {ARB_M_PC_UNIT_SD, "PC unit sd", FMT_PERCENT, "their sample sd (n-1), n/a under 2 units"},
    {ARB_M_PF_UNIT_MEAN, "PF unit mean", FMT_SIGNED, "mean of PF over the units (§5)"},
    {ARB_M_PF_UNIT_SD, "PF unit sd", FMT_PLAIN, "their sample sd (n-1)"},
    {ARB_M_OWR, "owr", FMT_PLAIN, "win rate of the candidate, inconsistent = tie (§5)"},
    {ARB_M_QUALITY_GAP, "quality gap", FMT_PLAIN, "|owr - 0.5| (§5)"},
};

static const metric_text human_metrics[] = {
    {ARB_M_APCC, "APCC", FMT_SIGNED, "Pearson of a/b/c/d counts, judge vs experts (§4)"},
    {ARB_M_MPCC, "MPCC", FMT_SIGNED, "Pearson of window series, judge vs experts (§4)"},
    {ARB_M_MPCC_DELTA, "MPCC-Δ", FMT_PLAIN, "|MPCC run 0 - MPCC run 1| (§3)"},
    {ARB_M_ACCURACY, "accuracy", FMT_PERCENT, "judge verdict = expert majority, E wrong (§4)"},
    {ARB_M_COHEN_KAPPA, "Cohen's κ", FMT_SIGNED, "judge vs expert majority, a..e (§4, §10)"},
    {ARB_M_ACCURACY_DELTA, "accuracy-Δ", FMT_PLAIN, "|accuracy run 0 - accuracy run 1| (§4)"},
};

static int put_value(arb__buf *b, double x, value_format fmt, int width)
{
    if (!isfinite(x)) return arb__buf_printf(b, "%*s", width, "n/a");
    switch (fmt) {
    case FMT_SIGNED: return arb__buf_printf(b, "%+*.3f", width, x);
    case FMT_PERCENT: return arb__buf_printf(b, "%*.1f%%", width - 1, 100.0 * x);
    default: return arb__buf_printf(b, "%*.3f", width, x);
    }
}

/* Pads to a display width: the labels hold a few multi-byte characters (Δ, κ, δ). */
static int put_label(arb__buf *b, const char *label, int width)
{
    size_t cps = arb__utf8_codepoints(label, strlen(label));
    if (arb__buf_printf(b, "  %s", label)) return -1;
    for (size_t i = cps; i < (size_t)width; i++)
        if (arb__buf_puts(b, " ")) return -1;
    return 0;
}

static int put_metric_lines(arb__buf *b, const arb_audit_metrics *m, const metric_text *list,
                            size_t n, int with_ci)
{
    for (size_t i = 0; i < n; i++) {
        const metric_text *t = &list[i];
        if (put_label(b, t->label, 12) || put_value(b, m->value[t->id], t->fmt, 9)) return -1;
        if (with_ci) {
            double lo = m->ci_lo[t->id], hi = m->ci_hi[t->id];
            if (isfinite(lo) && isfinite(hi)) {
                if (arb__buf_puts(b, "  [") || put_value(b, lo, t->fmt, 7) ||
                    arb__buf_puts(b, ",") || put_value(b, hi, t->fmt, 7) || arb__buf_puts(b, "]"))
                    return -1;
            } else if (arb__buf_printf(b, "  %-17s", "[n/a]")) {
                return -1;
            }
        }
        if (arb__buf_printf(b, "  %s\n", t->meaning)) return -1;
    }
    return 0;
}

static int put_shares_line(arb__buf *b, const char *label, const arb_verdict_shares *s)
{
    if (arb__buf_printf(b, "  %-6s", label)) return -1;
    const double v[5] = {s->a, s->b, s->c, s->d, s->e};
    for (int i = 0; i < 5; i++)
        if (put_value(b, v[i], FMT_PERCENT, 8)) return -1;
    return arb__buf_puts(b, "\n");
}

static int is_tournament(const arb_audit_row *r)
{
    return r->protocol && !strcmp(r->protocol, "tournament");
}

static int put_title(arb__buf *b, const arb_audit_row *r)
{
    if (arb__buf_puts(b, "judge ") || arb__buf_put_safe(b, r->judge)) return -1;
    if (r->candidate && (arb__buf_puts(b, " \xc2\xb7 candidate ") || arb__buf_put_safe(b, r->candidate)))
        return -1;
    if (r->baseline && (arb__buf_puts(b, r->candidate ? " vs baseline " : " \xc2\xb7 baseline ") ||
                        arb__buf_put_safe(b, r->baseline)))
        return -1;
    if (r->template_name &&
        (arb__buf_puts(b, " \xc2\xb7 template ") || arb__buf_put_safe(b, r->template_name)))
        return -1;
    if (r->options && arb__buf_printf(b, " \xc2\xb7 %d-option", r->options)) return -1;
    if (r->task && (arb__buf_puts(b, " \xc2\xb7 task ") ||
                    arb__buf_put_safe(b, r->task[0] ? r->task : "(none)")))
        return -1;
    if (r->language && (arb__buf_puts(b, " \xc2\xb7 language ") ||
                        arb__buf_put_safe(b, r->language[0] ? r->language : "(none)")))
        return -1;
    if (!r->candidate && arb__buf_puts(b, " \xc2\xb7 all candidates")) return -1;
    if (is_tournament(r))
        return arb__buf_puts(b, " \xc2\xb7 tournament\n  tournament pair: candidate = the model "
                                "first by name, shown first in run 0; a = it won\n\n");
    return arb__buf_puts(b, "\n\n");
}

static int put_human(arb__buf *b, const arb_audit_metrics *m, int with_ci)
{
    if (m->n_labelled_items == 0) {
        return arb__buf_printf(b, "  agreement with experts (§4): no expert labels for these items%s"
                                  " (arbiter labels import)\n",
                               m->n_label_ties ? ", only annotator ties" : "");
    }
    if (arb__buf_printf(b, "  agreement with experts (§4): %zu labelled items, %zu skipped as "
                           "annotator ties, %zu judgments\n",
                        m->n_labelled_items, m->n_label_ties, m->n_labelled_judgments) ||
        arb__buf_printf(b, "  APCC compares the same items in both vectors: %zu judgments with "
                           "verdict E left out, with their expert labels\n",
                        m->apcc_n_dropped) ||
        put_metric_lines(b, m, human_metrics, sizeof human_metrics / sizeof *human_metrics, with_ci))
        return -1;
    if (arb__buf_puts(b, "  per run       APCC ") || put_value(b, m->apcc_run[0], FMT_SIGNED, 7) ||
        arb__buf_puts(b, " /") || put_value(b, m->apcc_run[1], FMT_SIGNED, 7) ||
        arb__buf_puts(b, "   MPCC ") || put_value(b, m->mpcc_run[0], FMT_SIGNED, 7) ||
        arb__buf_puts(b, " /") || put_value(b, m->mpcc_run[1], FMT_SIGNED, 7) ||
        arb__buf_puts(b, "   accuracy ") || put_value(b, m->accuracy_run[0], FMT_PERCENT, 7) ||
        arb__buf_puts(b, " /") || put_value(b, m->accuracy_run[1], FMT_PERCENT, 7) ||
        arb__buf_puts(b, "   (run 0 / run 1)\n"))
        return -1;
    if (arb__buf_printf(b, "  confusion     judge \\ experts%7s%7s%7s%7s\n", "a", "b", "c", "d"))
        return -1;
    for (int j = 0; j < 5; j++) {
        if (arb__buf_printf(b, "  %30c", 'a' + j)) return -1;
        for (int e = 0; e < 4; e++)
            if (arb__buf_printf(b, "%7zu", m->confusion[j][e])) return -1;
        if (arb__buf_puts(b, "\n")) return -1;
    }
    return 0;
}

static int put_lengths(arb__buf *b, const arb_audit_metrics *m)
{
    static const char *const names[ARB_LEN__COUNT] = {"question", "candidate answer",
                                                      "baseline answer", "whole prompt"};
    if (arb__buf_printf(b, "  %-22s%10s%10s%10s\n", "lengths (code points)", "mean", "r(PC)", "r(PF)"))
        return -1;
    for (int f = 0; f < ARB_LEN__COUNT; f++) {
        const arb_length_factor *l = &m->length[f];
        if (arb__buf_printf(b, "  %-22s", names[f])) return -1;
        if (isfinite(l->mean) ? arb__buf_printf(b, "%10.0f", l->mean) : arb__buf_printf(b, "%10s", "n/a"))
            return -1;
        if (put_value(b, l->r_pc, FMT_SIGNED, 10) || put_value(b, l->r_pf, FMT_SIGNED, 10) ||
            arb__buf_puts(b, "\n"))
            return -1;
    }
    return arb__buf_puts(b, "  r = Pearson over valid pairs: with consistency (1/0), with the "
                            "lean (+1 recency, -1 primacy)\n");
}

static int put_gap_bins(arb__buf *b, const arb_audit_metrics *m)
{
    if (arb__buf_printf(b, "  %-22s%10s%10s%10s%10s\n", "quality gap δq", "units", "pairs", "PC", "PF"))
        return -1;
    for (int k = 0; k < ARB_GAP_BINS; k++) {
        const arb_gap_bin *g = &m->gap_bins[k];
        if (arb__buf_printf(b, "  %.1f-%.1f%*s%10zu%10zu", g->lo, g->hi, 22 - 7, "", g->n_units,
                            g->n_pairs) ||
            put_value(b, g->pc, FMT_PERCENT, 10) || put_value(b, g->pf, FMT_SIGNED, 10) ||
            arb__buf_puts(b, "\n"))
            return -1;
    }
    return arb__buf_puts(b, "  units = (comparison, task) groups, binned by their own δq\n");
}

/* "4 windows, the last one short (kept)" for one kind of series of a row. */
static int put_windows(arb__buf *b, const arb_window_info *w)
{
    if (arb__buf_printf(b, "%zu window%s", w->n_windows, w->n_windows == 1 ? "" : "s")) return -1;
    if (w->n_series > 1 && arb__buf_printf(b, " in %zu series", w->n_series)) return -1;
    if (w->n_short_kept == 0) return 0;
    if (w->n_series > 1) return arb__buf_printf(b, " (%zu end short, kept)", w->n_short_kept);
    return arb__buf_puts(b, ", the last one short (kept)");
}

/* The §3.1 windows behind MPCC-Consistency and MPCC: how many points their Pearson stands on. */
static int put_window_line(arb__buf *b, const arb_audit_metrics *m, const arb_audit_params *p)
{
    return arb__buf_printf(b, "  window series (§3.1, %zu items, stride %zu): run 0 vs run 1 ",
                           p->window, p->stride) ||
           put_windows(b, &m->windows) || arb__buf_puts(b, "; vs experts run 0 ") ||
           put_windows(b, &m->mpcc_windows[0]) || arb__buf_puts(b, ", run 1 ") ||
           put_windows(b, &m->mpcc_windows[1]) || arb__buf_puts(b, "\n");
}

static int put_row_text(arb__buf *b, const arb_audit_row *r, const arb_audit_params *params)
{
    int with_ci = params->bootstrap > 0;
    double level = params->ci_level;
    const arb_audit_metrics *m = &r->m;
    if (put_title(b, r)) return -1;
    if (params->n_ensemble && !strncmp(r->judge, "ensemble(", 9) &&
        arb__buf_puts(b, "  majority vote of the members' position verdicts on each instance "
                         "every member judged (E not\n  counted; a tie goes to the member named "
                         "first; E only when every member said E)\n\n"))
        return -1;
    /* §2.2 verdict shares per run and averaged */
    if (arb__buf_printf(b, "  %-6s%8s%8s%8s%8s%8s\n", "", "a", "b", "c", "d", "e") ||
        put_shares_line(b, "run 0", &m->run0) || put_shares_line(b, "run 1", &m->run1) ||
        put_shares_line(b, "mean", &m->mean) ||
        arb__buf_puts(b, "  a = candidate better, b = baseline better, c = both good (tie in "
                         "3-option), d = both bad, e = invalid\n\n"))
        return -1;
    if (arb__buf_printf(b, "  %-12s%9s", "metric", "value")) return -1;
    if (with_ci) {
        char head[32];
        snprintf(head, sizeof head, "%g%% interval", 100.0 * level);
        if (arb__buf_printf(b, "  %-17s", head)) return -1;
    }
    if (arb__buf_puts(b, "  meaning\n") ||
        put_metric_lines(b, m, bias_metrics, sizeof bias_metrics / sizeof *bias_metrics, with_ci))
        return -1;
    if (arb__buf_printf(b, "  inconsistent pairs: %zu primacy (pcn), %zu recency (rcn), %zu "
                           "neutral; RS over %zu repeated prompts; %zu (comparison, task) units\n",
                        m->pcn, m->rcn, m->n_neutral, m->n_rep_queries, m->n_units) ||
        put_window_line(b, m, params) || arb__buf_puts(b, "\n"))
        return -1;
    if (put_human(b, m, with_ci) || arb__buf_puts(b, "\n") || put_lengths(b, m) ||
        arb__buf_puts(b, "\n") || put_gap_bins(b, m))
        return -1;
    return arb__buf_printf(b, "\n  items %zu \xc2\xb7 pairs with both orders %zu \xc2\xb7 valid "
                              "pairs %zu \xc2\xb7 judgments %zu\n",
                           m->n_items, m->n_pairs, m->n_valid_pairs, m->n_judgments);
}

/* Tokens and cost per judge over every stored call (README "Cost and budgets"). */
static int put_spend_text(arb__buf *b, const arb_audit *audit)
{
    if (!audit->n_costs) return 0;
    if (arb__buf_puts(b, "\ntokens and cost per judge (every stored call, all runs; cost from "
                         "the reply's usage and the judge's price)\n"))
        return -1;
    for (size_t i = 0; i < audit->n_costs; i++) {
        const arb__judge_cost_row *r = &audit->costs[i];
        char cost[128], name[96];
        arb__judge_cost_text(cost, sizeof cost, r);
        arb__excerpt(name, sizeof name, r->judge_name, strlen(r->judge_name));
        if (arb__buf_printf(b, "  %s: %zu calls, tokens %lld prompt (%lld cached) + %lld completion "
                               "(%lld reasoning), cost %s\n", name, r->calls, r->prompt_tokens,
                            r->cached_tokens, r->completion_tokens, r->reasoning_tokens, cost))
            return -1;
    }
    return 0;
}

/* The same as JSON: [{judge, calls, prompt_tokens, cached_tokens, completion_tokens,
** reasoning_tokens, calls_with_cost, cost_usd (null when no call has a cost), price}]. */
static json_t *json_spend(const arb_audit *audit)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < audit->n_costs; i++) {
        const arb__judge_cost_row *r = &audit->costs[i];
        json_t *o = json_object();
        json_t *price = r->price_json ? json_loads(r->price_json, 0, NULL) : json_null();
        if (!o || json_array_append_new(a, o) ||
            arb__json_set(o, "judge", arb__json_name(r->judge_name)) ||
            arb__json_set(o, "calls", json_integer((json_int_t)r->calls)) ||
            arb__json_set(o, "prompt_tokens", json_integer(r->prompt_tokens)) ||
            arb__json_set(o, "cached_tokens", json_integer(r->cached_tokens)) ||
            arb__json_set(o, "completion_tokens", json_integer(r->completion_tokens)) ||
            arb__json_set(o, "reasoning_tokens", json_integer(r->reasoning_tokens)) ||
            arb__json_set(o, "calls_with_cost", json_integer((json_int_t)r->with_cost)) ||
            arb__json_set(o, "cost_usd", r->with_cost ? json_real(r->cost_usd) : json_null()) ||
            arb__json_set(o, "price", price)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* Renders the audit as text tables, one block per row. Returns a string owned by the caller
** (arb_free), or NULL when out of memory or audit is NULL. */
char *arb_audit_to_text(const arb_audit *audit)
{
    if (!audit) return NULL;
    arb__buf b;
    arb__buf_init(&b, 0);
    int with_ci = audit->params.bootstrap > 0;
    if (audit->n_rows == 0 && arb__buf_puts(&b, "no side-by-side judgments in the store\n"))
        goto fail;
    for (size_t i = 0; i < audit->n_rows; i++) {
        if (i > 0 && arb__buf_puts(&b, "\n")) goto fail;
        if (put_row_text(&b, &audit->rows[i], &audit->params)) goto fail;
    }
    if (with_ci && audit->n_rows &&
        arb__buf_printf(&b, "\nintervals: percentile bootstrap, %zu resamples of items, seed %llu;\n"
                            "MPCC-Cons, MPCC and MPCC-Δ: resamples of blocks of %zu consecutive "
                            "items, laid end to end in the order drawn (§3.1)\n",
                        audit->params.bootstrap, audit->params.seed, audit->params.window))
        goto fail;
    if (arb_discussion_stats_count(audit->multi_agent)) {
        char *text = arb_discussion_stats_to_text(audit->multi_agent);
        int bad = !text || arb__buf_puts(&b, "\npeer discussions and debates (METHODS 7, 2.5)\n") ||
                  arb__buf_puts(&b, text);
        free(text);
        if (bad) goto fail;
    }
    if (put_spend_text(&b, audit)) goto fail;
    if (arb__logprobs_text(&b, audit->logprobs, audit->n_logprobs, 0)) goto fail;
    return arb__buf_steal(&b);
fail:
    arb__buf_free(&b);
    return NULL;
}

/* ---- JSON --------------------------------------------------------------------------------- */


static json_t *json_name_or_null(const char *s) { return s ? arb__json_name(s) : json_null(); }


static json_t *json_shares(const arb_verdict_shares *s)
{
    json_t *o = json_object();
    if (!o || arb__json_set(o, "a", arb__json_metric(s->a)) || arb__json_set(o, "b", arb__json_metric(s->b)) ||
        arb__json_set(o, "c", arb__json_metric(s->c)) || arb__json_set(o, "d", arb__json_metric(s->d)) ||
        arb__json_set(o, "e", arb__json_metric(s->e))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_pair(double x, double y)
{
    json_t *a = json_array();
    if (!a || json_array_append_new(a, arb__json_metric(x)) || json_array_append_new(a, arb__json_metric(y))) {
        json_decref(a);
        return NULL;
    }
    return a;
}

static json_t *json_human(const arb_audit_metrics *m)
{
    json_t *o = json_object(), *conf = json_object();
    if (!o || !conf) goto fail;
    for (int j = 0; j < 5; j++) {
        json_t *row = json_object();
        char key[2] = {(char)('a' + j), 0};
        if (arb__json_set(conf, key, row)) goto fail;
        for (int e = 0; e < 4; e++) {
            char ek[2] = {(char)('a' + e), 0};
            if (arb__json_set(row, ek, json_integer((json_int_t)m->confusion[j][e]))) goto fail;
        }
    }
    if (arb__json_set(o, "n_labelled_items", json_integer((json_int_t)m->n_labelled_items)) ||
        arb__json_set(o, "n_label_ties", json_integer((json_int_t)m->n_label_ties)) ||
        arb__json_set(o, "n_labelled_judgments", json_integer((json_int_t)m->n_labelled_judgments)))
        goto fail;
    if (arb__json_set(o, "confusion", conf)) {
        conf = NULL;
        goto fail;
    }
    return o;
fail:
    json_decref(conf);
    json_decref(o);
    return NULL;
}

static json_t *json_lengths(const arb_audit_metrics *m)
{
    static const char *const keys[ARB_LEN__COUNT] = {"question", "candidate", "baseline", "prompt"};
    json_t *o = json_object();
    if (!o) return NULL;
    for (int f = 0; f < ARB_LEN__COUNT; f++) {
        json_t *l = json_object();
        if (arb__json_set(o, keys[f], l) || arb__json_set(l, "mean", arb__json_metric(m->length[f].mean)) ||
            arb__json_set(l, "r_pc", arb__json_metric(m->length[f].r_pc)) ||
            arb__json_set(l, "r_pf", arb__json_metric(m->length[f].r_pf))) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static json_t *json_gap_bins(const arb_audit_metrics *m)
{
    json_t *a = json_array();
    if (!a) return NULL;
    for (int k = 0; k < ARB_GAP_BINS; k++) {
        const arb_gap_bin *g = &m->gap_bins[k];
        json_t *o = json_object();
        if (!o || json_array_append_new(a, o) || arb__json_set(o, "lo", json_real(g->lo)) ||
            arb__json_set(o, "hi", json_real(g->hi)) || arb__json_set(o, "n_units", json_integer((json_int_t)g->n_units)) ||
            arb__json_set(o, "n_pairs", json_integer((json_int_t)g->n_pairs)) ||
            arb__json_set(o, "pc", arb__json_metric(g->pc)) || arb__json_set(o, "pf", arb__json_metric(g->pf))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* true/false, or null when the series has no window at all. */
static json_t *json_short_kept(const arb_window_info *w)
{
    return w->n_series ? json_boolean(w->n_short_kept > 0) : json_null();
}

/* The §3.1 windows of a row: n_windows and short_last_window_kept of the MPCC-Consistency
** series, the same per run for the judge-vs-experts series. */
static json_t *json_windows(const arb_audit_metrics *m)
{
    json_t *o = json_object(), *n = json_array(), *k = json_array();
    if (!o || !n || !k || arb__json_set(o, "n_windows", json_integer((json_int_t)m->windows.n_windows)) ||
        arb__json_set(o, "short_last_window_kept", json_short_kept(&m->windows)))
        goto fail;
    for (int r = 0; r < 2; r++)
        if (json_array_append_new(n, json_integer((json_int_t)m->mpcc_windows[r].n_windows)) ||
            json_array_append_new(k, json_short_kept(&m->mpcc_windows[r])))
            goto fail;
    if (arb__json_set(o, "mpcc_n_windows", n)) {
        n = NULL;
        goto fail;
    }
    n = NULL;
    if (arb__json_set(o, "mpcc_short_last_window_kept", k)) {
        k = NULL;
        goto fail;
    }
    return o;
fail:
    json_decref(n);
    json_decref(k);
    json_decref(o);
    return NULL;
}

static json_t *json_row(const arb_audit_row *r, int with_ci)
{
    const arb_audit_metrics *m = &r->m;
    json_t *o = json_object();
    json_t *verdicts = NULL;
    if (!o) return NULL;
    if (arb__json_set(o, "judge", arb__json_name(r->judge)) ||
        arb__json_set(o, "protocol", json_name_or_null(r->protocol)) ||
        arb__json_set(o, "candidate", json_name_or_null(r->candidate)) ||
        arb__json_set(o, "baseline", json_name_or_null(r->baseline)) ||
        arb__json_set(o, "template", json_name_or_null(r->template_name)) ||
        arb__json_set(o, "options", r->options ? json_integer(r->options) : json_null()) ||
        arb__json_set(o, "task", json_name_or_null(r->task)) ||
        arb__json_set(o, "language", json_name_or_null(r->language)) ||
        arb__json_set(o, "n_items", json_integer((json_int_t)m->n_items)) ||
        arb__json_set(o, "n_pairs", json_integer((json_int_t)m->n_pairs)) ||
        arb__json_set(o, "n_valid_pairs", json_integer((json_int_t)m->n_valid_pairs)) ||
        arb__json_set(o, "n_consistent", json_integer((json_int_t)m->n_consistent)) ||
        arb__json_set(o, "n_judgments", json_integer((json_int_t)m->n_judgments)) ||
        arb__json_set(o, "n_rep_queries", json_integer((json_int_t)m->n_rep_queries)))
        goto fail;
    verdicts = json_object(); /* owned by o once set */
    if (arb__json_set(o, "verdicts", verdicts) || arb__json_set(verdicts, "run0", json_shares(&m->run0)) ||
        arb__json_set(verdicts, "run1", json_shares(&m->run1)) || arb__json_set(verdicts, "mean", json_shares(&m->mean)))
        goto fail;
    for (int k = 0; k < ARB_M__COUNT; k++) {
        const char *key = arb_audit_metric_key((arb_audit_metric)k);
        if (arb__json_set(o, key, arb__json_metric(m->value[k]))) goto fail;
        if (with_ci) {
            char ci_key[64];
            snprintf(ci_key, sizeof ci_key, "%s_ci", key);
            json_t *ci = isfinite(m->ci_lo[k]) && isfinite(m->ci_hi[k])
                             ? json_pair(m->ci_lo[k], m->ci_hi[k])
                             : json_null();
            if (arb__json_set(o, ci_key, ci)) goto fail;
        }
    }
    if (arb__json_set(o, "pcn", json_integer((json_int_t)m->pcn)) ||
        arb__json_set(o, "rcn", json_integer((json_int_t)m->rcn)) ||
        arb__json_set(o, "n_neutral", json_integer((json_int_t)m->n_neutral)) ||
        arb__json_set(o, "apcc_run", json_pair(m->apcc_run[0], m->apcc_run[1])) ||
        arb__json_set(o, "mpcc_run", json_pair(m->mpcc_run[0], m->mpcc_run[1])) ||
        arb__json_set(o, "apcc_n_dropped", json_integer((json_int_t)m->apcc_n_dropped)) ||
        arb__json_set(o, "accuracy_run", json_pair(m->accuracy_run[0], m->accuracy_run[1])) ||
        arb__json_set(o, "n_units", json_integer((json_int_t)m->n_units)) ||
        arb__json_set(o, "window", json_windows(m)) ||
        arb__json_set(o, "human", json_human(m)) || arb__json_set(o, "lengths", json_lengths(m)) ||
        arb__json_set(o, "quality_gap_bins", json_gap_bins(m)))
        goto fail;
    return o;
fail:
    json_decref(o);
    return NULL;
}

static json_t *json_by(unsigned by)
{
    static const struct {
        unsigned bit;
        const char *name;
    } keys[] = {{ARB_BY_JUDGE, "judge"},       {ARB_BY_CANDIDATE, "candidate"},
                {ARB_BY_BASELINE, "baseline"}, {ARB_BY_TEMPLATE, "template"},
                {ARB_BY_OPTIONS, "options"},   {ARB_BY_TASK, "task"},
                {ARB_BY_LANGUAGE, "language"}};
    json_t *a = json_array();
    if (!a) return NULL;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if ((by & keys[i].bit) && json_array_append_new(a, json_string(keys[i].name))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* Renders the audit as pretty-printed JSON (indent 2, keys in documented order, undefined
** metrics null). Returns a string owned by the caller (arb_free), or NULL when out of memory
** or audit is NULL. */
char *arb_audit_to_json(const arb_audit *audit)
{
    if (!audit) return NULL;
    const arb_audit_params *p = &audit->params;
    int with_ci = p->bootstrap > 0;
    char *text = NULL;
    json_t *root = json_object(), *rows = json_array(), *boot = NULL, *win = json_object();
    if (!root || arb__json_set(root, "arbiter_version", json_string(ARB_VERSION)) ||
        arb__json_set(root, "by", json_by(p->by)))
        goto done;
    if (with_ci) {
        boot = json_object();
        if (!boot || arb__json_set(boot, "resamples", json_integer((json_int_t)p->bootstrap)) ||
            arb__json_set(boot, "seed", json_integer((json_int_t)p->seed)) ||
            arb__json_set(boot, "level", json_real(p->ci_level)) ||
            arb__json_set(boot, "window_metrics", json_string("block")) ||
            arb__json_set(boot, "block_size", json_integer((json_int_t)p->window)))
            goto done;
    } else {
        boot = json_null();
    }
    if (arb__json_set(root, "bootstrap", boot)) {
        boot = NULL;
        goto done;
    }
    boot = NULL;
    if (!win || arb__json_set(win, "size", json_integer((json_int_t)p->window)) ||
        arb__json_set(win, "stride", json_integer((json_int_t)p->stride)))
        goto done;
    if (arb__json_set(root, "window", win)) {
        win = NULL;
        goto done;
    }
    win = NULL;
    for (size_t i = 0; i < audit->n_rows; i++)
        if (!rows || json_array_append_new(rows, json_row(&audit->rows[i], with_ci))) goto done;
    if (arb__json_set(root, "rows", rows)) {
        rows = NULL;
        goto done;
    }
    rows = NULL;
    if (audit->has_families) {
        /* per judge with a family (only then, so the audit of a store without families is
        ** what it always was) */
        json_t *prefs = json_array();
        for (size_t i = 0; prefs && i < audit->family_prefs.n; i++)
            if (json_array_append_new(prefs, arb__json_family_preference(&audit->family_prefs.v[i]))) {
                json_decref(prefs);
                prefs = NULL;
            }
        if (arb__json_set(root, "family_preference", prefs)) goto done;
    }
    if (audit->multi_agent) {
        /* {"discussions": [...], "debates": [...]} as discussion-stats writes it */
        char *ma = arb_discussion_stats_to_json(audit->multi_agent);
        json_t *v = ma ? json_loads(ma, 0, NULL) : NULL;
        free(ma);
        if (arb__json_set(root, "multi_agent", v)) goto done;
    }
    if (arb__json_set(root, "spend", json_spend(audit))) goto done;
    if (arb__json_set(root, "logprobs", arb__logprobs_json(audit->logprobs, audit->n_logprobs, 0)))
        goto done;
    /* 15 significant digits: 0.1 prints as 0.1, not 0.10000000000000001 */
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
done:
    json_decref(boot);
    json_decref(win);
    json_decref(rows);
    json_decref(root);
    return text;
}
