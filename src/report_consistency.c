/*
** report_consistency.c -- the report's multilingual section (id "multilingual"): how far each
** judge's pointwise verdicts agree across the languages of parallel items (METHODS §8), drawn
** from arb_consistency_compute. Per mode, task and template (the rows a judge has in
** `arbiter consistency`), a judge x language heat map of Cohen's κ against the reference
** language, Fleiss' κ per judge with its bootstrap interval, accuracy (yes/no) or mean grade
** per judge and language; then Spearman's ρ between accuracy and Fleiss' κ across judges, the
** yes/no - grade κ gap, and the majority-vote ensemble (Min, Ens, Δ) when one is asked for.
**
** Invariants: the section exists only when the store holds pointwise judgments; every number
** is the library's (this file chooses, arranges and explains); an undefined value reads "n/a"
** in tables and is a hatched cell or an n/a mark in charts, never 0; every chart has a table
** beside it with its numbers (the Markdown shows the tables only). Language codes and judge
** names are plain document strings, escaped by the renderers like every other.
** Not here: the statistics (consistency.c), HTML and Markdown (report_html.c, report_md.c).
*/
#include "report.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The reference language of Cohen's κ: the library's default; `arbiter consistency
** --reference-language` gives the same tables against another. */
#define REFERENCE_DEFAULT "en"

typedef struct ml_ctx {
    arb__report_doc *doc;
    const arb_consistency *cons;
    const char *reference;
    int intervals; /* bootstrapped */
} ml_ctx;

/* The mode for people (a document string: the consistency goes before rendering). */
static const char *mode_words(arb__report_doc *d, const char *mode)
{
    return !strcmp(mode, "yesno")   ? "yes/no"
           : !strcmp(mode, "grade") ? "grade 1-5"
                                    : arb__report_str(d, mode);
}

static int is_grade(const arb_consistency_row *r) { return !strcmp(r->mode, "grade"); }

/* The language entry of r for code, or NULL when r has none. */
static const arb_consistency_language *row_language(const arb_consistency_row *r, const char *code)
{
    for (size_t k = 0; k < r->n_languages; k++)
        if (!strcmp(r->languages[k].language, code)) return &r->languages[k];
    return NULL;
}

/* Rows in the order the section shows them: by mode (yes/no first), task and template, the
** judges of one such group in the library's order. */
typedef struct ml_row_ref {
    const arb_consistency_row *r;
    size_t index;
} ml_row_ref;

static int cmp_row_refs(const void *pa, const void *pb)
{
    const ml_row_ref *a = pa, *b = pb;
    int mode = is_grade(a->r) - is_grade(b->r);
    if (mode) return mode;
    int k = strcmp(a->r->mode, b->r->mode);
    if (!k) k = strcmp(a->r->task, b->r->task);
    if (!k) k = strcmp(a->r->template_name, b->r->template_name);
    if (k) return k;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int same_group(const arb_consistency_row *a, const arb_consistency_row *b)
{
    return !strcmp(a->mode, b->mode) && !strcmp(a->task, b->task) &&
           !strcmp(a->template_name, b->template_name);
}

/* The score of language l of r: accuracy (yes/no) or mean grade, with its interval. */
static const char *score_cell(ml_ctx *m, const arb_consistency_row *r,
                              const arb_consistency_language *l)
{
    if (is_grade(r))
        return arb__report_value_ci(m->doc, ARB__FMT_PLAIN, l->mean_grade, l->score_ci[0],
                                    l->score_ci[1]);
    return arb__report_value_ci(m->doc, ARB__FMT_PERCENT, l->accuracy, l->score_ci[0],
                                l->score_ci[1]);
}

/* The charts and tables of one group: rows g[0..n) share mode, task and template. */
static void group_part(ml_ctx *m, const ml_row_ref *g, size_t n)
{
    arb__report_doc *d = m->doc;
    const arb_consistency_row *first = g[0].r;
    int grade = is_grade(first);
    arb__report_heading(d, "%s · task %s · template %s", mode_words(d, first->mode), first->task,
                        first->template_name);

    arb__report_names langs = {0};
    int has_reference = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < g[i].r->n_languages; k++) {
            const char *code = g[i].r->languages[k].language;
            has_reference |= !strcmp(code, m->reference);
            if (arb__report_name_index(d, &langs, code) == SIZE_MAX) return;
        }
    arb__report_names_sort(&langs);

    /* Cohen's κ against the reference: the reference's own column would only say n/a */
    size_t n_others = langs.n - (has_reference ? 1 : 0);
    if (!has_reference) {
        arb__report_note(d, "No judgment in the reference language %s here: Cohen's κ against "
                            "it is n/a (arbiter consistency --reference-language picks another).",
                         m->reference);
    } else if (!n_others) {
        arb__report_note(d, "Only the reference language %s was judged: no Cohen's κ to show.",
                         m->reference);
    } else {
        arb__report_chart *ch = arb__report_chart_new(
            d, ARB__CHART_HEATMAP,
            arb__report_printf(d, "Cohen's κ against %s per judge and language", m->reference), n,
            n_others);
        if (!ch) return;
        ch->v_lo = 0; /* κ at or below chance takes the lightest colour, its value printed */
        ch->v_hi = 1;
        ch->cell_format = "%.2f";
        for (size_t i = 0; i < n; i++) ch->rows[i] = arb__report_str(d, g[i].r->judge);
        for (size_t k = 0, col = 0; k < langs.n; k++) {
            if (!strcmp(langs.v[k], m->reference)) continue;
            ch->cols[col] = arb__report_language(d, langs.v[k]);
            for (size_t i = 0; i < n; i++) {
                const arb_consistency_language *l = row_language(g[i].r, langs.v[k]);
                if (l) ch->values[i * n_others + col] = l->cohen_kappa_vs_reference;
            }
            col++;
        }
    }

    /* Fleiss' κ per judge, languages as raters */
    arb__report_chart *fk = arb__report_chart_new(
        d, ARB__CHART_INTERVALS, "Fleiss' κ across languages per judge (0: chance agreement)", n, 0);
    arb__report_table *ft = arb__report_table_new(
        d, "Fleiss' κ per judge (each language a rater, over the groups judged validly in all)",
        "Judge|Languages|#Groups used|#Left out: a language missing|#Left out: an E|#Fleiss' κ");
    if (!fk || !ft) return;
    fk->x_label = "Fleiss' κ";
    fk->ref = 0;
    for (size_t i = 0; i < n; i++) {
        const arb_consistency_row *r = g[i].r;
        fk->rows[i] = arb__report_str(d, r->judge);
        fk->values[i] = r->fleiss_kappa;
        fk->lo[i] = r->fleiss_kappa_ci[0];
        fk->hi[i] = r->fleiss_kappa_ci[1];
        const char *list = "";
        for (size_t k = 0; k < r->n_languages; k++)
            list = arb__report_printf(d, "%s%s%s", list ? list : "", k ? ", " : "",
                                      arb__report_language(d, r->languages[k].language));
        const char **row = arb__report_table_row(d, ft);
        if (!row) return;
        row[0] = fk->rows[i];
        row[1] = list;
        row[2] = arb__report_count(d, (long long)r->n_groups);
        row[3] = arb__report_count(d, (long long)(r->n_groups_left_out - r->n_groups_with_error));
        row[4] = arb__report_count(d, (long long)r->n_groups_with_error);
        row[5] = arb__report_value_ci(d, ARB__FMT_PLAIN, r->fleiss_kappa, r->fleiss_kappa_ci[0],
                                      r->fleiss_kappa_ci[1]);
    }

    /* accuracy or mean grade per judge and language */
    arb__report_chart *sc = arb__report_chart_new(
        d, ARB__CHART_HEATMAP,
        grade ? "Mean grade (1-5) per judge and language"
              : "Accuracy (share judged correct) per judge and language",
        n, langs.n);
    arb__report_table *lt = arb__report_table_new(
        d, "Per judge and language (repetition 0)",
        arb__report_printf(d, "Judge|Language|#Judgments|#%s|#E rate|#Cohen's κ vs %s|"
                              "#Groups vs %s",
                           grade ? "Mean grade" : "Accuracy", m->reference, m->reference));
    if (!sc || !lt) return;
    sc->v_lo = grade ? 1 : 0;
    sc->v_hi = grade ? 5 : 1;
    sc->cell_format = grade ? "%.2f" : "%.0f%%";
    sc->scale = grade ? 1 : 100;
    for (size_t k = 0; k < langs.n; k++) sc->cols[k] = arb__report_language(d, langs.v[k]);
    for (size_t i = 0; i < n; i++) {
        const arb_consistency_row *r = g[i].r;
        sc->rows[i] = fk->rows[i];
        for (size_t k = 0; k < r->n_languages; k++) {
            const arb_consistency_language *l = &r->languages[k];
            for (size_t j = 0; j < langs.n; j++)
                if (!strcmp(langs.v[j], l->language))
                    sc->values[i * langs.n + j] = grade ? l->mean_grade : l->accuracy;
            const char **row = arb__report_table_row(d, lt);
            if (!row) return;
            row[0] = fk->rows[i];
            row[1] = arb__report_language(d, l->language);
            row[2] = arb__report_count(d, (long long)l->n);
            row[3] = score_cell(m, r, l);
            row[4] = arb__report_value(d, ARB__FMT_PERCENT, l->error_rate);
            row[5] = arb__report_value_ci(d, ARB__FMT_PLAIN, l->cohen_kappa_vs_reference,
                                          l->kappa_ci[0], l->kappa_ci[1]);
            row[6] = arb__report_count(d, (long long)l->n_vs_reference);
        }
    }
}

static void spearman_part(ml_ctx *m)
{
    arb__report_doc *d = m->doc;
    size_t n = arb_consistency_spearman_count(m->cons);
    arb__report_heading(d, "Accuracy and consistency across judges");
    if (!n) {
        arb__report_note(d, "No task and mode with a judge's accuracy and Fleiss' κ both "
                            "defined: no Spearman's ρ to show.");
        return;
    }
    arb__report_para(d, "Spearman's ρ, per task and mode, between a judge's accuracy (or mean "
                        "grade) averaged over its languages and its Fleiss' κ, one point per "
                        "judge and template: is the judge that finds more answers correct also "
                        "the more consistent one? n/a under 3 judges or when a series is "
                        "constant.");
    arb__report_table *t =
        arb__report_table_new(d, "Spearman's ρ of accuracy and Fleiss' κ", "Task|Mode|#Judges|#ρ");
    for (size_t i = 0; i < n; i++) {
        const arb_consistency_spearman *s = arb_consistency_spearman_at(m->cons, i);
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        row[0] = arb__report_str(d, s->task);
        row[1] = mode_words(d, s->mode);
        row[2] = arb__report_count(d, (long long)s->n_judges);
        row[3] = arb__report_value(d, ARB__FMT_SIGNED, s->rho);
    }
}

static void mode_gap_part(ml_ctx *m)
{
    arb__report_doc *d = m->doc;
    size_t n = arb_consistency_mode_gap_count(m->cons);
    arb__report_heading(d, "Yes/no against grades");
    if (!n) {
        arb__report_note(d, "No judge was run in both modes (yes/no and grade) on one task: no "
                            "gap to show.");
        return;
    }
    arb__report_para(d, "Fleiss' κ of a judge's yes/no verdicts minus that of its grades on the "
                        "same task and template variant (METHODS §8): above 0 the judge is more "
                        "consistent across languages when it only says correct or incorrect.");
    arb__report_table *t = arb__report_table_new(
        d, "Yes/no - grade gap of Fleiss' κ",
        "Judge|Task|Yes/no template|Grade template|#κ yes/no|#κ grade|#Gap (yes/no - grade)");
    for (size_t i = 0; i < n; i++) {
        const arb_consistency_mode_gap *g = arb_consistency_mode_gap_at(m->cons, i);
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        row[0] = arb__report_str(d, g->judge);
        row[1] = arb__report_str(d, g->task);
        row[2] = arb__report_str(d, g->yesno_template);
        row[3] = arb__report_str(d, g->grade_template);
        row[4] = arb__report_value(d, ARB__FMT_PLAIN, g->yesno_kappa);
        row[5] = arb__report_value(d, ARB__FMT_PLAIN, g->grade_kappa);
        row[6] = arb__report_value(d, ARB__FMT_SIGNED, g->gap);
    }
}

static void ensemble_part(ml_ctx *m, const arb_report_params *p)
{
    arb__report_doc *d = m->doc;
    arb__report_heading(d, "Ensemble of judges");
    if (!p->n_ensemble) {
        arb__report_note(d, "No ensemble asked for: arbiter report --ensemble J1,J2,... shows the "
                            "majority vote of those judges (Min, Ens, Δ).");
        return;
    }
    const char *members = "";
    for (size_t k = 0; k < p->n_ensemble; k++)
        members = arb__report_printf(d, "%s%s%s", members ? members : "", k ? ", " : "",
                                     p->ensemble[k]);
    size_t n = arb_consistency_ensemble_count(m->cons);
    if (!n) {
        arb__report_note(d, "The judges %s were never run on one task, mode and template all "
                            "together: no vote to show.",
                         members);
        return;
    }
    arb__report_para(d, "Majority vote of %s per item, answer and language (METHODS §8), in "
                        "this priority order: a tie goes to the tied value of the earliest "
                        "judge. An instance some member did not judge validly is left out. Min "
                        "is the lowest member's Fleiss' κ, Ens the κ of the vote, Δ = Ens - Min "
                        "(above 0: the vote is more consistent across languages than its "
                        "weakest member).",
                     members);
    arb__report_chart *ch = arb__report_chart_new(d, ARB__CHART_BARS,
                                                  "Ensemble: Min, Ens and Δ of Fleiss' κ", 3 * n, 0);
    arb__report_table *t = arb__report_table_new(
        d, "Ensemble per task, mode and template",
        "Task|Mode|Template|#Min|Lowest member|#Ens|#Δ = Ens - Min|#Groups used|"
        "#Groups left out|#Instances voted|#Instances left out|#Ties by priority");
    if (!ch || !t) return;
    ch->x_label = "Fleiss' κ";
    for (size_t i = 0; i < n; i++) {
        const arb_consistency_ensemble *e = arb_consistency_ensemble_at(m->cons, i);
        const char *what = arb__report_printf(d, "%s · %s · %s", e->task, mode_words(d, e->mode),
                                              e->template_name);
        ch->rows[3 * i] = arb__report_printf(d, "%s: Min", what);
        ch->rows[3 * i + 1] = arb__report_printf(d, "%s: Ens", what);
        ch->rows[3 * i + 2] = arb__report_printf(d, "%s: Δ", what);
        ch->values[3 * i] = e->min;
        ch->values[3 * i + 1] = e->ens;
        ch->values[3 * i + 2] = e->delta;
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        row[0] = arb__report_str(d, e->task);
        row[1] = mode_words(d, e->mode);
        row[2] = arb__report_str(d, e->template_name);
        row[3] = arb__report_value(d, ARB__FMT_PLAIN, e->min);
        row[4] = e->min_judge ? arb__report_str(d, e->min_judge) : "n/a";
        row[5] = arb__report_value_ci(d, ARB__FMT_PLAIN, e->ens, e->ens_ci[0], e->ens_ci[1]);
        row[6] = arb__report_value(d, ARB__FMT_SIGNED, e->delta);
        row[7] = arb__report_count(d, (long long)e->n_groups);
        row[8] = arb__report_count(d, (long long)e->n_groups_left_out);
        row[9] = arb__report_count(d, (long long)e->n_instances);
        row[10] = arb__report_count(d, (long long)e->n_instances_left_out);
        row[11] = arb__report_count(d, (long long)e->n_ties);
    }
}

arb_status arb__report_multilingual(arb__report_doc *d, arb_store *store,
                                    const arb_report_params *p)
{
    arb_consistency_params cp = arb_consistency_default_params();
    cp.bootstrap = p->bootstrap;
    cp.seed = p->seed;
    cp.ensemble = p->n_ensemble ? p->ensemble : NULL;
    cp.n_ensemble = p->n_ensemble;
    if (!cp.reference_language) cp.reference_language = REFERENCE_DEFAULT;
    arb_consistency *cons = NULL;
    arb_status st = arb_consistency_compute(store, &cp, &cons);
    if (st) return st;
    size_t n = arb_consistency_count(cons);
    ml_row_ref *refs = n ? calloc(n, sizeof *refs) : NULL;
    if (n && !refs) {
        arb_consistency_destroy(cons);
        return arb__store_fail(store, ARB_NOMEM, "report: out of memory");
    }
    ml_ctx m = {d, cons, cp.reference_language, p->bootstrap > 0};
    if (n) {
        arb__report_begin_section(d, "multilingual", "Cross-language consistency");
        arb__report_para(d,
                         "Pointwise judgments of parallel items (arbiter grade, METHODS §8): "
                         "items sharing a group are the same content in several languages, and "
                         "each language is a rater of the group. Fleiss' κ measures how far a "
                         "judge says the same thing in every language, over the groups it "
                         "judged validly in all of them (a group missing a language or with an "
                         "E in one is left out, and counted); Cohen's κ compares each language "
                         "with the reference language %s. 1 is full agreement, 0 what chance "
                         "gives. Accuracy is the share of valid yes/no verdicts saying correct; "
                         "the E rate is over all judgments. Repetition 0 only. n/a: undefined "
                         "(fewer than 2 groups, one category used, or nothing to compare). %s",
                         m.reference,
                         m.intervals
                             ? arb__report_printf(d, "Intervals: 95%% percentile bootstrap over "
                                                     "parallel groups, %zu resamples, seed %llu.",
                                                  p->bootstrap, p->seed)
                             : "No intervals (bootstrap 0).");
        for (size_t i = 0; i < n; i++) refs[i] = (ml_row_ref){arb_consistency_row_at(cons, i), i};
        qsort(refs, n, sizeof *refs, cmp_row_refs);
        for (size_t from = 0, to; from < n; from = to) {
            for (to = from + 1; to < n && same_group(refs[to].r, refs[from].r);) to++;
            group_part(&m, refs + from, to - from);
        }
        spearman_part(&m);
        mode_gap_part(&m);
        ensemble_part(&m, p);
    }
    free(refs);
    arb_consistency_destroy(cons);
    return d->nomem ? arb__store_fail(store, ARB_NOMEM, "report: out of memory") : ARB_OK;
}
