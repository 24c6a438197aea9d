/*
** report.c -- arb_report_write: everything the store knows, gathered into one report document
** (report.h) and rendered as HTML or Markdown. Sections, in order, each with a fixed id:
**   summary          judges, runs per protocol (calls, tokens, invalid verdicts, wall time)
**   verdicts         a/b/c/d/e shares per comparison and run (§2.2)
**   position-bias    PBias@AB, PF, PC, Con@ABCD, PCon@AB per judge with bootstrap intervals,
**                    and per judge and item language when the items have several (§2, §8)
**   human-agreement  accuracy, Cohen's κ, APCC, MPCC per judge against the experts (§4)
**   judge-agreement  judge x judge mutual agreement, ties included (§5)
**   multilingual     cross-language consistency of pointwise judgments (§8), only when the
**                    store has some (report_consistency.c)
**   persona          persona bias (§9): identity differences, win rates, χ² tests, only when
**                    the store has persona scores (report_persona.c)
**   win-rates, ratings, elo-trend, peer-weights   per battle source (§6)
**   discussions      discussion and debate statistics (§7), a few transcripts in full
**   worst-cases      the items whose verdicts depended most on the order of the answers
** The numbers come from the library's own computations (the audit's rows as arb_audit_compute
** gives them, from judgments read once and grouped per section: arb__audit_input_load and
** arb__audit_rows; arb__factors_from_audit, arb_agreement_compute, arb_rank_compute,
** arb_discussion_stats_compute); this file only chooses, arranges and explains them, and reads
** through the store (store_report.c) what has no API (run statistics, dialogues with their
** replies, verdicts per order).
**
** Invariants: the report only reads the store; every string it takes from the store is plain
** text in the document and escaped by the renderer; the same store, parameters and seed give
** the same report apart from the generation time (every query is ordered, every bootstrap
** seeded); a section without data says why in one line instead of drawing an empty chart
** (but the multilingual and persona ones, about data many stores never hold, are left out).
** Not here: statistics (their own modules), HTML and Markdown (report_html.c, report_md.c).
*/
#include "report.h"
#include "rank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TITLE "arbiter report"
#define TEXT_MAX ((size_t)12000)  /* bytes of one answer, question or reply shown */
#define MODELS_LISTED 6           /* models named in a protocol's summary row */
#define MATRIX_MAX 20             /* models in a pairwise win-rate matrix */
#define RATINGS_CHART_MAX 30      /* models in the ratings chart (the table has all) */
#define TREND_SERIES_MAX 10       /* models in the Elo trend */
#define TREND_POINTS 40           /* about this many trend points */

static const char *const verdict_cats[5] = {"a: candidate better", "b: baseline better",
                                            "c: both good / tie", "d: both bad",
                                            "e: no valid verdict"};

/* One source of battles (arb_store_put_battles) and its battles. */
typedef struct battle_source {
    char *name;
    arb_battles *battles;
} battle_source;

typedef struct report_ctx {
    arb_store *store;
    const arb_report_params *p;
    arb__report_doc *doc;
    arb__audit_input *judgments; /* the side-by-side judgments, read once for every audit below */
    arb_audit *by_comparison; /* default grouping, no intervals: verdict shares */
    arb_audit *by_judge;      /* one row per judge, bootstrapped: bias and human agreement */
    arb_audit *by_task;       /* per judge, candidate and task, no intervals: factor analysis */
    battle_source *sources;   /* byte order of their names */
    size_t n_sources;
} report_ctx;

/* ---- small helpers ------------------------------------------------------------------------- */

static arb_status nomem(report_ctx *c)
{
    return arb__store_fail(c->store, ARB_NOMEM, "report: out of memory");
}

/* A string from the store for a format string: "" for NULL. */
static const char *raw(const char *s)
{
    return s ? s : "";
}

/* A long text from the store as a document string, cut to TEXT_MAX (NULL for NULL). */
static const char *cut(report_ctx *c, const char *s)
{
    return arb__report_str_cut(c->doc, s, TEXT_MAX);
}

/* A sum over runs: its text, or "n/a" when no run recorded it. */
static const char *sum_cell(report_ctx *c, int has, long long sum)
{
    return has ? arb__report_count(c->doc, sum) : "n/a";
}

/* The host of a URL: no scheme, user information (which may hold a password), port or path. */
static const char *url_host(report_ctx *c, const char *url)
{
    if (!url || !*url) return NULL;
    const char *s = strstr(url, "://");
    s = s ? s + 3 : url;
    size_t end = strcspn(s, "/?#");
    for (size_t k = end; k-- > 0;)
        if (s[k] == '@') {
            s += k + 1;
            end -= k + 1;
            break;
        }
    size_t len = end;
    if (s[0] == '[') { /* IPv6 literal */
        const char *close = memchr(s, ']', end);
        if (close) len = (size_t)(close - s) + 1;
    } else {
        const char *colon = memchr(s, ':', end);
        if (colon) len = (size_t)(colon - s);
    }
    return arb__report_printf(c->doc, "%.*s", (int)len, s);
}

static const char *verdict_words(report_ctx *c, char v, const char *candidate,
                                 const char *baseline)
{
    switch (v) {
    case 'a': return arb__report_printf(c->doc, "a: %s better", candidate);
    case 'b': return arb__report_printf(c->doc, "b: %s better", baseline);
    case 'c': return "c: both good / tie";
    case 'd': return "d: both bad";
    default: return "e: no valid verdict";
    }
}

static const char *intervals_note(report_ctx *c)
{
    if (!c->p->bootstrap) return "No intervals (bootstrap 0).";
    return arb__report_printf(c->doc,
                              "Intervals: 95%% percentile bootstrap over items, %zu resamples, "
                              "seed %llu.",
                              c->p->bootstrap, c->p->seed);
}

/* ---- summary ------------------------------------------------------------------------------ */

/* The judges table, made at the first judge. */
typedef struct table_acc {
    report_ctx *c;
    arb__report_table *t;
} table_acc;

static int judge_row(void *ud, const arb__judge_summary *j)
{
    table_acc *a = ud;
    report_ctx *c = a->c;
    if (!a->t) a->t = arb__report_table_new(c->doc, "Judges (the API key is never stored)",
                                            "Judge|Model|Host|#Judgments|#Dialogue turns");
    const char **row = arb__report_table_row(c->doc, a->t);
    if (!row) return 0;
    row[0] = arb__report_str(c->doc, j->name);
    row[1] = arb__report_str(c->doc, j->model);
    row[2] = url_host(c, j->base_url);
    row[3] = arb__report_count(c->doc, j->n_judgments);
    row[4] = arb__report_count(c->doc, j->n_turns);
    return 0;
}

static arb_status summary_judges(report_ctx *c)
{
    table_acc a = {c, NULL};
    return arb__store_each_judge_summary(c->store, judge_row, &a);
}

/* Tokens and cost per judge over every stored call: "unknown" where no price or usage says
** what a call cost, never $0 (README "Cost and budgets"). */
static arb_status summary_spend(report_ctx *c)
{
    arb__judge_cost_row *rows = NULL;
    size_t n = 0;
    arb_status st = arb__store_judge_costs(c->store, &rows, &n);
    if (st) return st;
    arb__report_table *t = n ? arb__report_table_new(
                                   c->doc, "Tokens and cost per judge (every stored call; cost "
                                           "from the replies' usage and the judge's price)",
                                   "Judge|#Calls|#Prompt tokens|#Cached|#Completion tokens|"
                                   "#Reasoning|Cost (USD)")
                             : NULL;
    for (size_t i = 0; t && i < n; i++) {
        const char **row = arb__report_table_row(c->doc, t);
        if (!row) break;
        char cost[128];
        arb__judge_cost_text(cost, sizeof cost, &rows[i]);
        row[0] = arb__report_str(c->doc, rows[i].judge_name);
        row[1] = arb__report_count(c->doc, (long long)rows[i].calls);
        row[2] = arb__report_count(c->doc, rows[i].prompt_tokens);
        row[3] = arb__report_count(c->doc, rows[i].cached_tokens);
        row[4] = arb__report_count(c->doc, rows[i].completion_tokens);
        row[5] = arb__report_count(c->doc, rows[i].reasoning_tokens);
        row[6] = arb__report_str(c->doc, cost);
    }
    arb__store_judge_costs_free(rows, n);
    return ARB_OK;
}

/* "4: a, b, c, d" (at most MODELS_LISTED names) for the models of protocol. */
static const char *protocol_models(report_ctx *c, const arb__protocol_summary *p)
{
    const char *list = "";
    long long n = (long long)p->n_models;
    for (size_t k = 0; k < p->n_models && k < MODELS_LISTED; k++)
        list = arb__report_printf(c->doc, "%s%s%s", list ? list : "", k ? ", " : "",
                                  p->models[k]);
    if (n > MODELS_LISTED) list = arb__report_printf(c->doc, "%s, ...", list ? list : "");
    return arb__report_printf(c->doc, "%lld%s%s", n, n ? ": " : "", list ? list : "");
}

static int protocol_row(void *ud, const arb__protocol_summary *p)
{
    table_acc *a = ud;
    report_ctx *c = a->c;
    const char *protocol = arb__report_str(c->doc, p->protocol);
    if (!protocol) return 1;
    if (!a->t) a->t = arb__report_table_new(c->doc, "Protocols (calls, tokens and time summed over every run)",
                                            "Protocol|#Runs|Models compared|#Items|#Calls sent|"
                                            "#Calls failed|#Reused from the store|#Prompt tokens|"
                                            "#Completion tokens|#Invalid verdicts|#Wall time");
    const char **row = arb__report_table_row(c->doc, a->t);
    if (!row) return 1;
    row[0] = protocol;
    row[2] = protocol_models(c, p);
    row[3] = arb__report_count(c->doc, p->n_items);
    row[1] = arb__report_count(c->doc, p->n_runs);
    for (int k = 0; k < 6; k++) row[4 + k] = sum_cell(c, p->has_sum[k], p->sums[k]);
    row[10] = !p->has_seconds ? "n/a" : arb__report_seconds(c->doc, p->seconds);
    return 0;
}

static arb_status summary_protocols(report_ctx *c)
{
    table_acc a = {c, NULL};
    arb_status st = arb__store_each_protocol_summary(c->store, protocol_row, &a);
    if (!st && a.t)
        arb__report_para(c->doc,
                         "Calls sent are the calls that got a reply, failed the ones that did "
                         "not after retries (a rerun retries them), reused the ones a run found "
                         "already stored. Invalid verdicts are replies without a valid verdict "
                         "(E). n/a: no run recorded it (e.g. data imported, or a run still "
                         "going).");
    return st;
}

static int battle_source_row(void *ud, const arb__battle_source_summary *b)
{
    table_acc *a = ud;
    report_ctx *c = a->c;
    if (!a->t) a->t = arb__report_table_new(c->doc, "Battle sources",
                                            "Source|#Battles|#Models|#Reviewers|#Questions");
    const char **row = arb__report_table_row(c->doc, a->t);
    if (!row) return 0;
    row[0] = arb__report_str(c->doc, b->source);
    row[1] = arb__report_count(c->doc, b->n_battles);
    row[2] = arb__report_count(c->doc, b->n_models);
    row[3] = arb__report_count(c->doc, b->n_reviewers);
    row[4] = arb__report_count(c->doc, b->n_questions);
    return 0;
}

static arb_status summary_battle_sources(report_ctx *c)
{
    table_acc a = {c, NULL};
    return arb__store_each_battle_source_summary(c->store, battle_source_row, &a);
}

/* The judgments imported from elsewhere ('arbiter import judgments|fastchat|arena-hard'):
** arbiter made no call for them, so the summary names where they came from instead. */
typedef struct imported_acc {
    report_ctx *c;
    arb__report_table *t; /* NULL: only count */
    long long n_judgments;
    size_t n_sources;
    const char *names;    /* "a, b" in the document's arena */
} imported_acc;

static int imported_row(void *ud, const arb__judgment_source *src)
{
    imported_acc *a = ud;
    arb__report_doc *d = a->c->doc;
    if (!a->t) {
        a->n_judgments += src->n_pairwise + src->n_pointwise;
        a->names = a->n_sources++ ? arb__report_printf(d, "%s, %s", a->names, src->name)
                                  : arb__report_str(d, src->name);
        return 0;
    }
    const char **row = arb__report_table_row(d, a->t);
    if (!row) return 0;
    row[0] = arb__report_str(d, src->name);
    row[1] = arb__report_str(d, src->kind);
    row[2] = arb__report_str(d, src->path);
    row[3] = arb__report_count(d, src->n_pairwise);
    row[4] = arb__report_count(d, src->n_pointwise);
    row[5] = arb__report_count(d, src->n_skipped);
    row[6] = arb__report_str(d, src->judges);
    row[7] = arb__report_str(d, src->imported_at);
    return 0;
}

/* The table of import sources, after the protocols: what was read, when, by which judges. */
static arb_status summary_imported(report_ctx *c, const imported_acc *counted)
{
    if (!counted->n_sources) return ARB_OK;
    imported_acc a = {c, NULL, 0, 0, NULL};
    a.t = arb__report_table_new(c->doc, "Judgments imported from elsewhere (no judge call by "
                                        "arbiter)",
                                "Source|Kind|File|#Pairwise judgments|#Grades|#Lines skipped|"
                                "Judges|Imported at (UTC)");
    arb_status st = arb__store_each_judgment_source(c->store, imported_row, &a);
    if (!st)
        arb__report_para(c->doc,
                         "These judgments were made by other tools and read by 'arbiter "
                         "import'; their calls, tokens and times are not known to arbiter "
                         "(n/a above). Every section below uses them like arbiter's own.");
    return st;
}

static arb_status section_summary(report_ctx *c)
{
    arb__report_begin_section(c->doc, "summary", "Run summary");
    arb__store_contents held;
    arb_status st = arb__store_count_contents(c->store, &held);
    if (st) return st;
    long long n[8] = {held.items,  held.models,  held.judges,    held.pairwise,
                      held.labels, held.battles, held.dialogues, held.runs};
    long long any = 0;
    for (int k = 0; k < 8; k++) any += n[k];
    if (!any) {
        arb__report_note(c->doc, "The store is empty: judge something first (arbiter sbs, "
                                 "tournament, debate or discuss) or import battles.");
        return ARB_OK;
    }
    arb__report_doc *d = c->doc;
    arb__report_para(d,
                     "The store holds %s items with answers from %s models, %s judges, %s "
                     "pairwise judgments, %s expert labels, %s battles and %s dialogues "
                     "(debates and discussions); arbiter's own runs: %s.",
                     arb__report_count(d, n[0]), arb__report_count(d, n[1]),
                     arb__report_count(d, n[2]), arb__report_count(d, n[3]),
                     arb__report_count(d, n[4]), arb__report_count(d, n[5]),
                     arb__report_count(d, n[6]), arb__report_count(d, n[7]));
    imported_acc counted = {c, NULL, 0, 0, NULL};
    if ((st = arb__store_each_judgment_source(c->store, imported_row, &counted))) return st;
    if (counted.n_sources)
        arb__report_para(d, "%s of these judgments were not made by arbiter: they were "
                            "imported from %s.",
                         arb__report_count(d, counted.n_judgments), counted.names);
    if ((st = summary_judges(c)) || (st = summary_spend(c)) || (st = summary_protocols(c)) ||
        (st = summary_imported(c, &counted)))
        return st;
    return summary_battle_sources(c);
}

/* ---- verdict shares ------------------------------------------------------------------------ */

static void put_shares(double *out, const arb_verdict_shares *s)
{
    out[0] = s->a, out[1] = s->b, out[2] = s->c, out[3] = s->d, out[4] = s->e;
}

/* One stacked-bar chart of a judge's audit rows [from, to): three bars (run 0, run 1, mean)
** per comparison, labelled with what differs between its comparisons. */
static void verdict_chart(report_ctx *c, size_t from, size_t to)
{
    arb__report_doc *d = c->doc;
    const arb_audit_row *first = arb_audit_row_at(c->by_comparison, from);
    int base = 0, tpl = 0, opt = 0;
    for (size_t i = from + 1; i < to; i++) {
        const arb_audit_row *r = arb_audit_row_at(c->by_comparison, i);
        base |= strcmp(r->baseline, first->baseline) != 0;
        tpl |= strcmp(r->template_name, first->template_name) != 0;
        opt |= r->options != first->options;
    }
    const char *title =
        base ? arb__report_printf(d, "%s: model verdict shares per run", first->judge)
             : arb__report_printf(d, "%s: model verdict shares per run against %s", first->judge,
                                  first->baseline);
    arb__report_chart *ch = arb__report_chart_new(d, ARB__CHART_STACKED, title, 3 * (to - from), 5);
    if (!ch) return;
    for (size_t k = 0; k < 5; k++) ch->cols[k] = verdict_cats[k];
    static const char *const run_names[3] = {"run 0", "run 1", "mean"};
    for (size_t i = from; i < to; i++) {
        const arb_audit_row *r = arb_audit_row_at(c->by_comparison, i);
        const char *label = base ? arb__report_printf(d, "%s vs %s", r->candidate, r->baseline)
                                 : arb__report_str(d, r->candidate);
        if (tpl) label = arb__report_printf(d, "%s · %s", label ? label : "", r->template_name);
        if (opt) label = arb__report_printf(d, "%s · %d options", label ? label : "", r->options);
        const arb_verdict_shares *runs[3] = {&r->m.run0, &r->m.run1, &r->m.mean};
        for (size_t run = 0; run < 3; run++) {
            size_t at = 3 * (i - from) + run;
            ch->rows[at] = arb__report_printf(d, "%s · %s", label ? label : "", run_names[run]);
            put_shares(&ch->values[at * 5], runs[run]);
        }
    }
}

static arb_status section_verdicts(report_ctx *c)
{
    arb__report_doc *d = c->doc;
    arb__report_begin_section(d, "verdicts", "Verdict shares");
    size_t n = arb_audit_count(c->by_comparison);
    if (!n) {
        arb__report_note(d, "No side-by-side judgments in the store (arbiter sbs, arbiter "
                            "debate): no verdict shares to show.");
        return ARB_OK;
    }
    int tpl = 0, opt = 0; /* table columns for template and option mode only when they vary */
    const arb_audit_row *first = arb_audit_row_at(c->by_comparison, 0);
    for (size_t i = 1; i < n; i++) {
        const arb_audit_row *r = arb_audit_row_at(c->by_comparison, i);
        tpl |= strcmp(r->template_name, first->template_name) != 0;
        opt |= r->options != first->options;
    }
    arb__report_para(d,
                     "Each item is judged twice: run 0 shows the candidate first, run 1 the "
                     "baseline first (METHODS §2.2). Model verdicts: a candidate better, b "
                     "baseline better, c both good (a tie in 3-option mode), d both bad, e no "
                     "valid verdict. A judge without position bias gives the same shares in "
                     "both runs. Debates are judges named soft(agent 1, agent 2, judge) and "
                     "hard(...).");
    for (size_t from = 0, to; from < n; from = to) { /* rows come grouped by judge */
        const char *judge = arb_audit_row_at(c->by_comparison, from)->judge;
        for (to = from + 1; to < n && !strcmp(arb_audit_row_at(c->by_comparison, to)->judge, judge);)
            to++;
        verdict_chart(c, from, to);
    }
    arb__report_table *t = arb__report_table_new(
        d, "Verdict shares",
        tpl && opt ? "Judge|Candidate|Baseline|Template|#Options|#Items|Run|#a|#b|#c|#d|#e"
        : tpl      ? "Judge|Candidate|Baseline|Template|#Items|Run|#a|#b|#c|#d|#e"
        : opt      ? "Judge|Candidate|Baseline|#Options|#Items|Run|#a|#b|#c|#d|#e"
                   : "Judge|Candidate|Baseline|#Items|Run|#a|#b|#c|#d|#e");
    static const char *const run_names[3] = {"run 0", "run 1", "mean"};
    for (size_t i = 0; i < n; i++) {
        const arb_audit_row *r = arb_audit_row_at(c->by_comparison, i);
        const arb_verdict_shares *runs[3] = {&r->m.run0, &r->m.run1, &r->m.mean};
        for (int run = 0; run < 3; run++) {
            const char **row = arb__report_table_row(d, t);
            if (!row) return nomem(c);
            double shares[5];
            put_shares(shares, runs[run]);
            size_t k = 0;
            row[k++] = arb__report_str(d, r->judge);
            row[k++] = arb__report_str(d, r->candidate);
            row[k++] = arb__report_str(d, r->baseline);
            if (tpl) row[k++] = arb__report_str(d, r->template_name);
            if (opt) row[k++] = arb__report_printf(d, "%d", r->options);
            row[k++] = arb__report_count(d, (long long)r->m.n_items);
            row[k++] = run_names[run];
            for (size_t v = 0; v < 5; v++) row[k++] = arb__report_value(d, ARB__FMT_PERCENT, shares[v]);
        }
    }
    return ARB_OK;
}

/* ---- at a glance ------------------------------------------------------------------------ */

/* One sentence per judge on what matters most: which position it favours (judged by whether
** the PBias@AB interval leaves 0, or by its size when there is no interval), how often its
** verdict survives swapping the answers, and how often it agrees with the experts. */
static arb_status section_at_a_glance(report_ctx *c)
{
    arb__report_doc *d = c->doc;
    arb__report_begin_section(d, "at-a-glance", "At a glance");
    size_t n = arb_audit_count(c->by_judge);
    if (!n) {
        arb__report_note(d, "No side-by-side judgments in the store yet.");
        return ARB_OK;
    }
    arb__report_table *t = arb__report_table_new(
        d, "Each judge in one line (details in the sections below)",
        "Judge|Position bias|#Verdict kept when the answers are swapped|#Agrees with experts");
    for (size_t i = 0; i < n; i++) {
        const arb_audit_row *r = arb_audit_row_at(c->by_judge, i);
        const arb_audit_metrics *m = &r->m;
        double pb = m->value[ARB_M_PBIAS_AB], lo = m->ci_lo[ARB_M_PBIAS_AB];
        double hi = m->ci_hi[ARB_M_PBIAS_AB];
        int has_ci = arb_defined(lo) && arb_defined(hi);
        const char *bias = !arb_defined(pb) ? "not measurable (no pair judged in both orders)"
                           : has_ci && lo > 0 ? "favours the answer shown first"
                           : has_ci && hi < 0 ? "favours the answer shown second"
                           : has_ci ? "no clear preference (the interval includes 0)"
                           : pb > 0.1 ? "leans to the answer shown first"
                           : pb < -0.1 ? "leans to the answer shown second"
                                       : "no clear preference";
        const char **row = arb__report_table_row(d, t);
        if (!row) return nomem(c);
        row[0] = arb__report_str(d, r->judge);
        row[1] = arb__report_printf(d, "%s (PBias@AB %s)", bias,
                                    arb__report_value_ci(d, ARB__FMT_SIGNED, pb, lo, hi));
        row[2] = arb__report_value(d, ARB__FMT_PERCENT, m->value[ARB_M_PC]);
        row[3] = arb__report_value(d, ARB__FMT_PERCENT, m->value[ARB_M_ACCURACY]);
    }
    arb__report_para(d, "A judge you can trust keeps its verdict when only the order of the "
                        "answers changes and favours neither position. %s", intervals_note(c));
    return ARB_OK;
}

/* ---- position bias ---------------------------------------------------------------------- */

/* An intervals chart of metric m over the judges of the by-judge audit. */
static void bias_chart(report_ctx *c, arb_audit_metric m, const char *title, const char *axis)
{
    size_t n = arb_audit_count(c->by_judge);
    arb__report_chart *ch = arb__report_chart_new(c->doc, ARB__CHART_INTERVALS, title, n, 0);
    if (!ch) return;
    ch->x_label = axis;
    ch->ref = 0;
    for (size_t i = 0; i < n; i++) {
        const arb_audit_row *r = arb_audit_row_at(c->by_judge, i);
        ch->rows[i] = arb__report_str(c->doc, r->judge);
        ch->values[i] = r->m.value[m];
        ch->lo[i] = r->m.ci_lo[m];
        ch->hi[i] = r->m.ci_hi[m];
    }
}

static const char *metric_cell(report_ctx *c, const arb_audit_row *r, arb_audit_metric m,
                               arb__report_format f)
{
    return arb__report_value_ci(c->doc, f, r->m.value[m], r->m.ci_lo[m], r->m.ci_hi[m]);
}

/* The columns of the position-bias tables after the judge's own: metric and number format. */
typedef struct metric_column {
    arb_audit_metric metric;
    arb__report_format format;
} metric_column;

/* Fills cells[k] with r's metric of column k, interval included, for k < n. */
static void metric_cells(report_ctx *c, const arb_audit_row *r, const metric_column *columns,
                         size_t n, const char **cells)
{
    for (size_t k = 0; k < n; k++)
        cells[k] = metric_cell(c, r, columns[k].metric, columns[k].format);
}

/* The distinct languages of a by-language audit's rows ("" for items without one). */
static arb_status audit_languages(report_ctx *c, const arb_audit *a, arb__report_names *langs)
{
    for (size_t i = 0; i < arb_audit_count(a); i++)
        if (arb__report_name_index(c->doc, langs, arb_audit_row_at(a, i)->language) == SIZE_MAX)
            return nomem(c);
    arb__report_names_sort(langs);
    return ARB_OK;
}

/* The headline metrics per judge and language of the items (METHODS §2: the study reports
** every metric per language), when the side-by-side items have more than one language:
** the audit's rows by ARB_BY_JUDGE | ARB_BY_LANGUAGE, first without intervals to count the
** languages, then with them. Adds nothing for a single language (the table above says it). */
static arb_status position_bias_by_language(report_ctx *c)
{
    static const metric_column columns[] = {
        {ARB_M_PBIAS_AB, ARB__FMT_SIGNED}, {ARB_M_PF, ARB__FMT_SIGNED},
        {ARB_M_PC, ARB__FMT_PERCENT},     {ARB_M_ERROR_RATE, ARB__FMT_PERCENT},
        {ARB_M_ACCURACY, ARB__FMT_PERCENT}};
    arb__report_doc *d = c->doc;
    arb_audit_params ap = arb_audit_default_params();
    ap.multi_agent = 0;
    ap.by = ARB_BY_JUDGE | ARB_BY_LANGUAGE;
    arb_audit *a = NULL;
    arb__report_names langs = {0}, judges = {0};
    arb_status st = arb__audit_rows(c->store, c->judgments, &ap, &a);
    if (!st) st = audit_languages(c, a, &langs);
    if (st || langs.n < 2) goto done;
    if (c->p->bootstrap) {
        arb_audit_destroy(a);
        a = NULL;
        ap.bootstrap = c->p->bootstrap;
        ap.seed = c->p->seed;
        if ((st = arb__audit_rows(c->store, c->judgments, &ap, &a))) goto done;
    }
    size_t n = arb_audit_count(a);
    for (size_t i = 0; i < n; i++)
        if (arb__report_name_index(d, &judges, arb_audit_row_at(a, i)->judge) == SIZE_MAX) {
            st = nomem(c);
            goto done;
        }
    arb__report_heading(d, "Per language of the items");
    arb__report_para(d, "The same metrics with each judge's judgments split by the language of "
                        "the item (its \"language\" field; (none) for items without one), as "
                        "arbiter audit --by language computes them. Accuracy is against the "
                        "experts' majority and n/a without expert labels. %s",
                     intervals_note(c));
    arb__report_chart *ch = arb__report_chart_new(
        d, ARB__CHART_HEATMAP, "PC (verdict kept when the answers are swapped) per judge and language",
        judges.n, langs.n);
    arb__report_table *t = arb__report_table_new(
        d, "Position bias per judge and language",
        "Judge|Language|#Items|#Valid pairs|#PBias@AB|#PF|#PC|#Error rate|#Accuracy");
    if (!ch || !t) {
        st = nomem(c);
        goto done;
    }
    ch->v_lo = 0;
    ch->v_hi = 1;
    ch->cell_format = "%.0f%%";
    ch->scale = 100;
    for (size_t i = 0; i < judges.n; i++) ch->rows[i] = judges.v[i];
    for (size_t k = 0; k < langs.n; k++) ch->cols[k] = arb__report_language(d, langs.v[k]);
    for (size_t i = 0; i < n; i++) {
        const arb_audit_row *r = arb_audit_row_at(a, i);
        size_t row_at = arb__report_name_index(d, &judges, r->judge);
        size_t col_at = arb__report_name_index(d, &langs, r->language);
        if (row_at < judges.n && col_at < langs.n)
            ch->values[row_at * langs.n + col_at] = r->m.value[ARB_M_PC];
        const char **row = arb__report_table_row(d, t);
        if (!row) break;
        row[0] = arb__report_str(d, r->judge);
        row[1] = arb__report_language(d, r->language);
        row[2] = arb__report_count(d, (long long)r->m.n_items);
        row[3] = arb__report_count(d, (long long)r->m.n_valid_pairs);
        metric_cells(c, r, columns, sizeof columns / sizeof columns[0], row + 4);
    }
    if (d->nomem) st = nomem(c);
done:
    arb_audit_destroy(a);
    return st;
}

static arb_status section_position_bias(report_ctx *c)
{
    static const metric_column columns[] = {
        {ARB_M_PBIAS_AB, ARB__FMT_SIGNED}, {ARB_M_PF, ARB__FMT_SIGNED},
        {ARB_M_PC, ARB__FMT_PERCENT},     {ARB_M_CON_ABCD, ARB__FMT_PERCENT},
        {ARB_M_PCON_AB, ARB__FMT_PERCENT}, {ARB_M_ERROR_RATE, ARB__FMT_PERCENT}};
    arb__report_doc *d = c->doc;
    arb__report_begin_section(d, "position-bias", "Position bias");
    size_t n = arb_audit_count(c->by_judge);
    if (!n) {
        arb__report_note(d, "No side-by-side judgments in the store: no position bias to "
                            "measure.");
        return ARB_OK;
    }
    arb__report_para(d,
                     "PBias@AB (METHODS §3) is 0 for a judge without positional preference; "
                     "above 0 the judge favours the answer shown first (primacy), below 0 the "
                     "answer shown second (recency). PF, preference fairness (§5), has the "
                     "opposite sign: below 0 primacy-leaning, above 0 recency-leaning, 0 fair. "
                     "PC is the share of valid pairs (no E) whose two verdicts agree once the "
                     "order is undone; Con@ABCD is the share of pairs with the same model "
                     "verdict in both orders, PCon@AB the same among pairs with a or b. %s",
                     intervals_note(c));
    bias_chart(c, ARB_M_PBIAS_AB, "PBias@AB per judge (above 0: the first answer is favoured)",
               "PBias@AB");
    bias_chart(c, ARB_M_PF, "PF per judge (below 0: primacy, above 0: recency)", "PF");
    arb__report_table *t = arb__report_table_new(
        d, "Position bias per judge",
        "Judge|#Pairs|#Valid pairs|#PBias@AB|#PF|#PC|#Con@ABCD|#PCon@AB|#Error rate");
    for (size_t i = 0; i < n; i++) {
        const arb_audit_row *r = arb_audit_row_at(c->by_judge, i);
        const char **row = arb__report_table_row(d, t);
        if (!row) return nomem(c);
        row[0] = arb__report_str(d, r->judge);
        row[1] = arb__report_count(d, (long long)r->m.n_pairs);
        row[2] = arb__report_count(d, (long long)r->m.n_valid_pairs);
        metric_cells(c, r, columns, sizeof columns / sizeof columns[0], row + 3);
    }
    return position_bias_by_language(c);
}

/* ---- agreement with humans ------------------------------------------------------------- */

static arb_status section_human_agreement(report_ctx *c)
{
    arb__report_doc *d = c->doc;
    arb__report_begin_section(d, "human-agreement", "Agreement with human experts");
    long long n_labels = 0;
    arb_status st = arb__store_count_labels(c->store, &n_labels);
    if (st) return st;
    size_t n = arb_audit_count(c->by_judge), n_labelled = 0;
    for (size_t i = 0; i < n; i++)
        n_labelled += arb_audit_row_at(c->by_judge, i)->m.n_labelled_items > 0;
    if (!n_labels) {
        arb__report_note(d, "No expert labels in the store: import them with 'arbiter labels "
                            "import' to see each judge's accuracy, Cohen's κ, APCC and MPCC "
                            "against the experts' majority.");
        return ARB_OK;
    }
    if (!n_labelled) {
        arb__report_note(d, "The store has %s expert labels, but none on an item and pair a "
                            "judge compared.",
                         arb__report_count(d, n_labels));
        return ARB_OK;
    }
    arb__report_para(d,
                     "Against the experts' majority label per item (METHODS §4): accuracy is "
                     "the share of the judge's judgments with the same model verdict (E "
                     "counts as wrong), Cohen's κ corrects it for chance, APCC is the Pearson "
                     "correlation of the a/b/c/d counts and MPCC of the window series (§3.1), "
                     "each the mean of the two runs. Items whose annotators tied are left out "
                     "and counted. %s",
                     intervals_note(c));
    arb__report_chart *ch = arb__report_chart_new(
        d, ARB__CHART_BARS, "Accuracy against the experts' majority", n_labelled, 0);
    arb__report_table *t = arb__report_table_new(
        d, "Agreement with the experts per judge",
        "Judge|#Labelled items|#Labelled judgments|#Annotator ties|#Accuracy|#Cohen's κ|"
        "#APCC|#MPCC");
    if (!ch || !t) return nomem(c);
    ch->x_label = "accuracy (share of judgments)";
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const arb_audit_row *r = arb_audit_row_at(c->by_judge, i);
        if (!r->m.n_labelled_items) continue;
        ch->rows[k] = arb__report_str(d, r->judge);
        ch->values[k++] = r->m.value[ARB_M_ACCURACY];
        const char **row = arb__report_table_row(d, t);
        if (!row) return nomem(c);
        row[0] = ch->rows[k - 1];
        row[1] = arb__report_count(d, (long long)r->m.n_labelled_items);
        row[2] = arb__report_count(d, (long long)r->m.n_labelled_judgments);
        row[3] = arb__report_count(d, (long long)r->m.n_label_ties);
        row[4] = metric_cell(c, r, ARB_M_ACCURACY, ARB__FMT_PERCENT);
        row[5] = metric_cell(c, r, ARB_M_COHEN_KAPPA, ARB__FMT_PLAIN);
        row[6] = metric_cell(c, r, ARB_M_APCC, ARB__FMT_PLAIN);
        row[7] = metric_cell(c, r, ARB_M_MPCC, ARB__FMT_PLAIN);
    }
    return ARB_OK;
}

/* ---- judge x judge agreement ------------------------------------------------------------- */

static arb_status section_judge_agreement(report_ctx *c)
{
    arb__report_doc *d = c->doc;
    arb__report_begin_section(d, "judge-agreement", "Agreement between judges");
    arb_agreement *ag = NULL;
    arb_status st = arb_agreement_compute(c->store, &ag);
    if (st) return st;
    size_t n = arb_agreement_judge_count(ag);
    if (n < 2) {
        arb__report_note(d, "Fewer than two judges with side-by-side judgments: no agreement "
                            "between judges to show.");
        arb_agreement_destroy(ag);
        return ARB_OK;
    }
    arb__report_para(d,
                     "Mutual agreement (METHODS §5): the share of the instances two judges "
                     "share (same item, pair, template, option mode, order and repetition) on "
                     "which they gave the same position verdict; E agrees with nothing. The "
                     "heat map counts ties; the table also gives the agreement on the "
                     "instances where both said A or B.");
    arb__report_chart *ch = arb__report_chart_new(
        d, ARB__CHART_HEATMAP, "Judge x judge agreement, ties included", n, n);
    arb__report_table *t = arb__report_table_new(
        d, "Agreement per pair of judges",
        "Judge|Other judge|#Common instances|#Agreement|#Both A or B|#Agreement on A/B");
    if (!ch || !t) {
        arb_agreement_destroy(ag);
        return nomem(c);
    }
    ch->v_lo = 0;
    ch->v_hi = 1;
    ch->cell_format = "%.0f%%";
    ch->scale = 100;
    for (size_t i = 0; i < n; i++) {
        ch->rows[i] = ch->cols[i] = arb__report_str(d, arb_agreement_judge(ag, i));
        for (size_t j = 0; j < n; j++) ch->values[i * n + j] = arb_agreement_value(ag, i, j, 1, NULL);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            size_t common = 0, common_ab = 0;
            double all = arb_agreement_value(ag, i, j, 1, &common);
            double ab = arb_agreement_value(ag, i, j, 0, &common_ab);
            const char **row = arb__report_table_row(d, t);
            if (!row) break;
            row[0] = ch->rows[i];
            row[1] = ch->rows[j];
            row[2] = arb__report_count(d, (long long)common);
            row[3] = arb__report_value(d, ARB__FMT_PERCENT, all);
            row[4] = arb__report_count(d, (long long)common_ab);
            row[5] = arb__report_value(d, ARB__FMT_PERCENT, ab);
        }
    arb_agreement_destroy(ag);
    return d->nomem ? nomem(c) : ARB_OK;
}

/* ---- cross-language consistency (METHODS §8): report_consistency.c ---------------------- */

static arb_status section_multilingual(report_ctx *c)
{
    return arb__report_multilingual(c->doc, c->store, c->p);
}

/* ---- persona bias (METHODS §9): report_persona.c ----------------------------------------- */

static arb_status section_persona(report_ctx *c)
{
    return arb__report_persona(c->doc, c->store, c->p);
}

/* ---- battles: win rates, ratings, Elo trend, peer rank ------------------------------------ */

/* Loads one battle source of the store; the status goes to *st (0 goes on). */
typedef struct source_acc {
    report_ctx *c;
    size_t cap;
    arb_status st;
} source_acc;

static int source_loaded(void *ud, const char *name)
{
    source_acc *a = ud;
    report_ctx *c = a->c;
    if (arb__grow(&c->sources, &a->cap, c->n_sources + 1, sizeof *c->sources)) {
        a->st = nomem(c);
        return 1;
    }
    battle_source *src = &c->sources[c->n_sources];
    src->name = arb__strdup(name);
    src->battles = arb_battles_create();
    c->n_sources++; /* freed with the rest even when incomplete */
    if (!src->name || !src->battles) {
        a->st = nomem(c);
        return 1;
    }
    return (a->st = arb_store_get_battles(c->store, src->name, src->battles)) != ARB_OK;
}

/* Loads every battle source of the store. */
static arb_status load_battles(report_ctx *c)
{
    source_acc a = {c, 0, ARB_OK};
    arb_status st = arb__store_each_battle_source(c->store, source_loaded, &a);
    return st ? st : a.st;
}

/* Ranks source k's battles with params; on a ranking error (e.g. every battle by a human)
** writes the reason as a note and returns ARB_OK with *out NULL. */
static arb_status rank_source(report_ctx *c, size_t k, const arb_rank_params *params,
                              arb_rank **out)
{
    char *err = NULL;
    *out = NULL;
    arb_status st = arb_rank_compute(c->sources[k].battles, params, out, &err);
    if (st == ARB_NOMEM) {
        arb_free(err);
        return nomem(c);
    }
    if (st) {
        arb__report_note(c->doc, "Source %s cannot be ranked: %s", c->sources[k].name,
                         err ? err : arb_strerror(st));
        arb_free(err);
        arb_rank_destroy(*out);
        *out = NULL;
    }
    return ARB_OK;
}

/* Says why the section is empty when the store has no battles (returns 0), else returns 1. */
static int battles_intro(report_ctx *c, const char *what)
{
    if (!c->n_sources) {
        arb__report_note(c->doc, "No battles in the store (arbiter tournament stores them, "
                                 "arbiter import reads them): no %s to show.", what);
        return 0;
    }
    return 1;
}

/* A sub-heading naming source k, when there is more than one source. */
static void source_heading(report_ctx *c, size_t k)
{
    if (c->n_sources > 1) arb__report_heading(c->doc, "Source: %s", c->sources[k].name);
}

/* 1-based ranks where equal scores share a rank. */
static long long shared_rank(const arb_rank *r, size_t i)
{
    while (i > 0 && arb_rank_entry_at(r, i - 1)->score == arb_rank_entry_at(r, i)->score) i--;
    return (long long)i + 1;
}

static void win_rate_tables(report_ctx *c, const arb_rank *r)
{
    arb__report_doc *d = c->doc;
    size_t n = arb_rank_count(r), m = n < MATRIX_MAX ? n : MATRIX_MAX;
    arb__report_chart *ch = arb__report_chart_new(
        d, ARB__CHART_HEATMAP, "Pairwise win rate: row beats column in their direct battles", m, m);
    if (!ch) return;
    ch->v_lo = 0;
    ch->v_hi = 1;
    ch->cell_format = "%.0f%%";
    ch->scale = 100;
    for (size_t i = 0; i < m; i++) {
        ch->rows[i] = ch->cols[i] = arb__report_str(d, arb_rank_entry_at(r, i)->model);
        for (size_t j = 0; j < m; j++) ch->values[i * m + j] = arb_rank_pairwise(r, i, j);
    }
    if (n > m) arb__report_note(d, "The matrix shows the %zu best-ranked of %zu models.", m, n);
    arb__report_table *t = arb__report_table_new(d, "Win rate",
                                                 "#Rank|Model|#Win rate|#Battles|#Wins|#Ties|#Losses");
    for (size_t i = 0; i < n; i++) {
        const arb_rank_entry *e = arb_rank_entry_at(r, i);
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        row[0] = arb__report_count(d, shared_rank(r, i));
        row[1] = arb__report_str(d, e->model);
        row[2] = arb__report_value(d, ARB__FMT_PERCENT, e->score);
        row[3] = arb__report_count(d, (long long)e->battles);
        row[4] = arb__report_count(d, (long long)e->wins);
        row[5] = arb__report_count(d, (long long)e->ties);
        row[6] = arb__report_count(d, (long long)e->losses);
    }
    /* the matrix again as numbers: a Markdown reader sees no heat map */
    arb__report_table *mt = arb__report_table_wide(d, "Pairwise win rate (row beats column)",
                                                   "Model", ch->cols, m);
    for (size_t i = 0; i < m; i++) {
        const char **row = arb__report_table_row(d, mt);
        if (!row) return;
        row[0] = ch->rows[i];
        for (size_t j = 0; j < m; j++)
            row[j + 1] = i == j ? "-" : arb__report_value(d, ARB__FMT_PERCENT, ch->values[i * m + j]);
    }
}

static arb_status section_win_rates(report_ctx *c)
{
    arb__report_begin_section(c->doc, "win-rates", "Win rates");
    if (!battles_intro(c, "win rates")) return ARB_OK;
    arb__report_para(c->doc,
                     "Win rate (METHODS §6): (wins + ½ ties) / battles. In the matrix, the "
                     "row model's win rate against the column model in their direct battles; "
                     "n/a when they never met.");
    arb_rank_params params = arb_rank_default_params();
    for (size_t k = 0; k < c->n_sources; k++) {
        source_heading(c, k);
        arb_rank *r = NULL;
        arb_status st = rank_source(c, k, &params, &r);
        if (st) return st;
        if (!r) continue;
        arb__report_para(c->doc, "%s battles among %zu models (source %s).",
                         arb__report_count(c->doc, (long long)r->n_battles_used), arb_rank_count(r),
                         c->sources[k].name);
        win_rate_tables(c, r);
        arb_rank_destroy(r);
    }
    return ARB_OK;
}

static void ratings_tables(report_ctx *c, const arb_rank *r)
{
    arb__report_doc *d = c->doc;
    size_t n = arb_rank_count(r), m = n < RATINGS_CHART_MAX ? n : RATINGS_CHART_MAX;
    arb__report_chart *ch = arb__report_chart_new(
        d, ARB__CHART_INTERVALS, "Bradley-Terry ratings with bootstrap intervals", m, 0);
    if (!ch) return;
    ch->x_label = "rating (Elo scale)";
    ch->ref = r->params.elo_initial;
    for (size_t i = 0; i < m; i++) {
        const arb_rank_entry *e = arb_rank_entry_at(r, i);
        ch->rows[i] = arb__report_str(d, e->model);
        ch->values[i] = e->score;
        ch->lo[i] = e->ci_lo;
        ch->hi[i] = e->ci_hi;
    }
    if (n > m) arb__report_note(d, "The chart shows the %zu best-ranked of %zu models.", m, n);
    if (r->bt_ridge_bound)
        arb__report_note(d, "The Bradley-Terry maximum-likelihood ratings do not exist here (a "
                            "model or group of models never wins or never loses against the "
                            "rest): a tiny ridge keeps them finite, so the extreme ratings only "
                            "mean far below or far above, not by how much.");
    arb__report_table *t = arb__report_table_new(d, "Bradley-Terry ratings",
                                                 "#Rank|Model|#Rating|#Battles|#Wins|#Ties|#Losses");
    for (size_t i = 0; i < n; i++) {
        const arb_rank_entry *e = arb_rank_entry_at(r, i);
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        row[0] = arb__report_count(d, shared_rank(r, i));
        row[1] = arb__report_str(d, e->model);
        row[2] = arb__report_value_ci(d, ARB__FMT_RATING, e->score, e->ci_lo, e->ci_hi);
        row[3] = arb__report_count(d, (long long)e->battles);
        row[4] = arb__report_count(d, (long long)e->wins);
        row[5] = arb__report_count(d, (long long)e->ties);
        row[6] = arb__report_count(d, (long long)e->losses);
    }
}

static arb_status section_ratings(report_ctx *c)
{
    arb__report_begin_section(c->doc, "ratings", "Ratings");
    if (!battles_intro(c, "ratings")) return ARB_OK;
    arb_rank_params params = arb_rank_default_params();
    params.method = ARB_RANK_BT;
    params.bootstrap = c->p->bootstrap;
    params.seed = c->p->seed;
    if (c->p->bootstrap)
        arb__report_para(c->doc,
                         "Bradley-Terry strengths (METHODS §6) on the Elo scale (400·log10 of "
                         "the odds; a tie is half a win for each side), the mean rating held at "
                         "%g (the line), with 95%% percentile intervals from %zu multinomial "
                         "bootstrap resamples of the battles (seed %llu).",
                         params.elo_initial, params.bootstrap, params.seed);
    else
        arb__report_para(c->doc,
                         "Bradley-Terry strengths (METHODS §6) on the Elo scale (400·log10 of "
                         "the odds; a tie is half a win for each side), the mean rating held at "
                         "%g (the line). No intervals (bootstrap 0).",
                         params.elo_initial);
    for (size_t k = 0; k < c->n_sources; k++) {
        source_heading(c, k);
        arb_rank *r = NULL;
        arb_status st = rank_source(c, k, &params, &r);
        if (st) return st;
        if (!r) continue;
        ratings_tables(c, r);
        arb_rank_destroy(r);
    }
    return ARB_OK;
}

static void trend_tables(report_ctx *c, const arb_rank *r)
{
    arb__report_doc *d = c->doc;
    size_t n = arb_rank_count(r), m = n < TREND_SERIES_MAX ? n : TREND_SERIES_MAX;
    size_t points = r->n_trend, every = r->params.trend_every;
    if (!r->trend || !points) {
        arb__report_note(d, "No Elo trend: no battle was used.");
        return;
    }
    arb__report_chart *ch = arb__report_chart_new(d, ARB__CHART_LINES,
                                                  "Online Elo as the battles came in", m, points);
    if (!ch) return;
    ch->x_label = arb__report_printf(d, "checkpoint (every %zu battles)", every);
    ch->y_label = "Elo rating";
    for (size_t i = 0; i < m; i++) {
        ch->rows[i] = arb__report_str(d, arb_rank_entry_at(r, i)->model);
        for (size_t t = 0; t < points; t++) ch->values[i * points + t] = r->trend[t * n + i];
    }
    if (n > m) arb__report_note(d, "The %zu best-ranked of %zu models are shown.", m, n);
    arb__report_table *t = arb__report_table_wide(d, "Elo after each checkpoint", "#Battles",
                                                  ch->rows, m);
    if (t) t->folded = 1;
    for (size_t p = 0; p < points; p++) {
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        size_t after = (p + 1) * every;
        if (after > r->n_battles_used || p + 1 == points) after = r->n_battles_used;
        row[0] = arb__report_count(d, (long long)after);
        for (size_t i = 0; i < m; i++)
            row[i + 1] = arb__report_value(d, ARB__FMT_RATING, ch->values[i * points + p]);
    }
}

static arb_status section_elo_trend(report_ctx *c)
{
    arb__report_begin_section(c->doc, "elo-trend", "Elo trend");
    if (!battles_intro(c, "Elo trend")) return ARB_OK;
    arb_rank_params params = arb_rank_default_params();
    arb__report_para(c->doc,
                     "Online Elo (METHODS §6; K = %g, every model starting at %g) recorded "
                     "every few battles in the stored order: one pass, no permutations, so the "
                     "lines show how the ratings moved as the battles came in. The models are "
                     "ordered by their final Elo.",
                     params.elo_k, params.elo_initial);
    params.method = ARB_RANK_ELO;
    params.elo_permutations = 1; /* only the trend is shown: one pass is all it needs */
    for (size_t k = 0; k < c->n_sources; k++) {
        source_heading(c, k);
        size_t n = arb_battles_count(c->sources[k].battles);
        params.trend_every = (n + TREND_POINTS - 1) / TREND_POINTS;
        if (!params.trend_every) params.trend_every = 1;
        arb_rank *r = NULL;
        arb_status st = rank_source(c, k, &params, &r);
        if (st) return st;
        if (!r) continue;
        trend_tables(c, r);
        arb_rank_destroy(r);
    }
    return ARB_OK;
}

static void peer_tables(report_ctx *c, size_t k, const arb_rank *r)
{
    arb__report_doc *d = c->doc;
    size_t n_rev = arb_rank_reviewer_count(r), n_peers = 0;
    for (size_t i = 0; i < n_rev; i++) n_peers += arb_rank_reviewer_at(r, i)->model != NULL;
    if (!n_peers) {
        arb__report_note(d, "No reviewer of source %s is also a contestant (a reviewer counts "
                            "as a model when it has the model's name), so peer rank does not "
                            "apply.",
                         c->sources[k].name);
        return;
    }
    int converged = 0;
    int iterations = arb_rank_iterations(r, &converged);
    arb__report_para(d, "%d iterations, %s.", iterations,
                     converged ? "the weights converged" : "stopped at the iteration limit");
    arb__report_chart *ch = arb__report_chart_new(d, ARB__CHART_BARS,
                                                  "Peer-rank reviewer weights", n_peers, 0);
    if (!ch) return;
    ch->x_label = "weight (contestant reviewers sum to 1)";
    arb__report_table *t = arb__report_table_new(
        d, "Reviewers", "Reviewer|Contestant|#Weight|#Reviews|#Self-enhancement");
    size_t at = 0;
    for (size_t i = 0; i < n_rev; i++) {
        const arb_rank_reviewer *rv = arb_rank_reviewer_at(r, i);
        const char *reviewer = arb__report_str(d, rv->reviewer);
        if (rv->model) {
            ch->rows[at] = reviewer;
            ch->values[at++] = rv->weight;
        }
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        row[0] = reviewer;
        row[1] = rv->model ? arb__report_str(d, rv->model) : "-";
        row[2] = arb__report_value(d, ARB__FMT_PLAIN, rv->weight);
        row[3] = arb__report_count(d, (long long)rv->reviews);
        row[4] = arb__report_value_ci(d, ARB__FMT_SIGNED, rv->self_enhancement, rv->self_ci_lo,
                                      rv->self_ci_hi);
    }
    arb__report_table *s = arb__report_table_new(d, "Peer-rank win rate",
                                                 "#Rank|Model|#All (equal weights)|#Weighted");
    for (size_t i = 0; i < arb_rank_count(r); i++) {
        const arb_rank_entry *e = arb_rank_entry_at(r, i);
        const char **row = arb__report_table_row(d, s);
        if (!row) return;
        row[0] = arb__report_count(d, shared_rank(r, i));
        row[1] = arb__report_str(d, e->model);
        row[2] = arb__report_value(d, ARB__FMT_PERCENT, r->all_scores ? r->all_scores[i] : NAN);
        row[3] = arb__report_value(d, ARB__FMT_PERCENT, e->score);
    }
}

static arb_status section_peer_weights(report_ctx *c)
{
    arb__report_begin_section(c->doc, "peer-weights", "Peer-rank reviewer weights");
    if (!battles_intro(c, "peer-rank weights")) return ARB_OK;
    arb__report_para(c->doc,
                     "When the contestants also review each other, peer rank (METHODS §6) "
                     "learns each reviewer's weight from the standing of its own model and "
                     "scores the models with the weighted win rate. Self-enhancement: a "
                     "reviewer's model's win rate in its own reviews minus in the others' "
                     "reviews of the same comparisons.");
    arb_rank_params params = arb_rank_default_params();
    params.method = ARB_RANK_PEER_WINRATE;
    params.bootstrap = c->p->bootstrap;
    params.seed = c->p->seed;
    for (size_t k = 0; k < c->n_sources; k++) {
        source_heading(c, k);
        arb_rank *r = NULL;
        arb_status st = rank_source(c, k, &params, &r);
        if (st) return st;
        if (!r) continue;
        peer_tables(c, k, r);
        arb_rank_destroy(r);
    }
    return ARB_OK;
}

/* ---- debates and discussions --------------------------------------------------------------- */

static double json_num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *json_count(report_ctx *c, const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? arb__report_count(c->doc, json_integer_value(v)) : "n/a";
}

/* A string of the statistics' JSON, copied (the JSON goes before the document is rendered). */
static const char *json_text(report_ctx *c, const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return arb__report_str(c->doc, s ? s : "");
}

/* "81.4% (of 237)" */
static const char *share_of(report_ctx *c, const json_t *o, const char *share, const char *n)
{
    return arb__report_printf(c->doc, "%s (of %s)",
                              arb__report_value(c->doc, ARB__FMT_PERCENT, json_num(o, share)),
                              json_count(c, o, n));
}

static const char *pda_cell(report_ctx *c, const json_t *o)
{
    const json_t *ci = json_object_get(o, "pda_ci");
    return arb__report_value_ci(c->doc, ARB__FMT_PERCENT, json_num(o, "pda"),
                                json_is_array(ci) ? json_number_value(json_array_get(ci, 0)) : NAN,
                                json_is_array(ci) ? json_number_value(json_array_get(ci, 1)) : NAN);
}

static void discussion_tables(report_ctx *c, const json_t *list)
{
    arb__report_doc *d = c->doc;
    size_t n = json_array_size(list);
    if (!n) return;
    arb__report_heading(d, "Peer discussions");
    arb__report_para(d,
                     "Per discussion set-up (METHODS §7): PDA is the share of labelled "
                     "discussions whose final verdict matches the experts' majority; the "
                     "first-position share is the share of 'answer 1 is better' among the "
                     "valid initial reviews (before) and final verdicts (after), 0.5 meaning "
                     "no positional preference. Opinion altering (OA) and holding (OH) count "
                     "discussions: OA when the reviewer took the other's differing verdict at "
                     "least once, OH when it met disagreement and always kept its own (a "
                     "discussion without disagreement is neither); the OA rate is OA / (OA + "
                     "OH). The per-turn counts (turns that took or kept a verdict; one "
                     "discussion can hold several) are shown as OA / OH turns.");
    arb__report_table *t = arb__report_table_new(
        d, "Discussion set-ups",
        "#Set-up|Kind|Reviewers|Leader|#Max turns|Stop on agreement|#Done / failed / open");
    arb__report_table *res = arb__report_table_new(
        d, "What the discussions show",
        "#Set-up|#Mean turns|#PDA|#Labelled|#First-position share before|#After");
    arb__report_table *rt = arb__report_table_new(
        d, "Reviewers in discussion",
        "#Set-up|Reviewer|#Initial accuracy|#Leader OA|#Leader OH|#Leader OA rate|"
        "#Leader OA / OH turns|#Follower OA|#Follower OH|#Follower OA rate|"
        "#Follower OA / OH turns");
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(list, i);
        const json_t *rv = json_object_get(o, "reviewers");
        const char *setup = arb__report_printf(d, "%zu", i + 1);
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        row[0] = setup;
        row[1] = json_text(c, o, "kind");
        const char *r0 = json_string_value(json_array_get(rv, 0));
        const char *r1 = json_string_value(json_array_get(rv, 1));
        row[2] = arb__report_printf(d, "%s and %s", r0 ? r0 : "", r1 ? r1 : "");
        row[3] = json_text(c, o, "leader");
        row[4] = json_count(c, o, "max_turns");
        row[5] = json_is_true(json_object_get(o, "stop_on_agreement")) ? "yes" : "no";
        row[6] = arb__report_printf(d, "%s / %s / %s", json_count(c, o, "done"),
                                    json_count(c, o, "failed"), json_count(c, o, "open"));
        if (!(row = arb__report_table_row(d, res))) return;
        double mean_turns = json_num(o, "mean_turns");
        row[0] = setup;
        row[1] = isfinite(mean_turns) ? arb__report_printf(d, "%.2f", mean_turns) : "n/a";
        row[2] = pda_cell(c, o);
        row[3] = json_count(c, o, "n_labelled");
        row[4] = share_of(c, o, "first_share_before", "n_initial_valid");
        row[5] = share_of(c, o, "first_share_after", "n_final_valid");
        const json_t *stats = json_object_get(o, "reviewer_stats");
        for (size_t k = 0; k < json_array_size(stats); k++) {
            const json_t *s = json_array_get(stats, k);
            const json_t *lead = json_object_get(s, "leader"), *fol = json_object_get(s, "follower");
            const char **r2 = arb__report_table_row(d, rt);
            if (!r2) return;
            r2[0] = setup;
            r2[1] = json_text(c, s, "reviewer");
            r2[2] = arb__report_value(d, ARB__FMT_PERCENT, json_num(s, "initial_accuracy"));
            for (int role = 0; role < 2; role++) { /* per discussion, then per turn */
                const json_t *r = role ? fol : lead;
                const char **cell = r2 + 3 + 4 * role;
                cell[0] = json_count(c, r, "oa_discussions");
                cell[1] = json_count(c, r, "oh_discussions");
                cell[2] = arb__report_value(d, ARB__FMT_PERCENT,
                                            json_num(r, "oa_discussion_rate"));
                cell[3] = arb__report_printf(d, "%s / %s", json_count(c, r, "oa"),
                                             json_count(c, r, "oh"));
            }
        }
    }
    /* when the reviewers agreed, per set-up: a chart and its table */
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(list, i);
        const json_t *turns = json_object_get(o, "agreement_turns");
        size_t max_turns = (size_t)json_integer_value(json_object_get(o, "max_turns"));
        double done = json_num(o, "done");
        if (!json_is_object(turns) || max_turns > 1000) continue;
        arb__report_chart *ch = arb__report_chart_new(
            d, ARB__CHART_BARS,
            arb__report_printf(d, "Set-up %zu: turn at which the reviewers agreed", i + 1),
            max_turns + 2, 0);
        arb__report_table *at = arb__report_table_new(
            d, arb__report_printf(d, "Set-up %zu: agreement reached at", i + 1),
            "Turn|#Dialogues|#Share");
        if (!ch || !at) return;
        ch->x_label = "share of done dialogues";
        for (size_t k = 0; k <= max_turns + 1; k++) {
            char key[32];
            if (k <= max_turns) snprintf(key, sizeof key, "%zu", k);
            else snprintf(key, sizeof key, "never");
            double count = json_num(turns, key);
            ch->rows[k] = k == 0 ? "turn 0 (initial reviews)"
                          : k <= max_turns ? arb__report_printf(d, "turn %zu", k)
                                           : "never";
            ch->values[k] = done > 0 && isfinite(count) ? count / done : NAN;
            const char **row = arb__report_table_row(d, at);
            if (!row) return;
            row[0] = ch->rows[k];
            row[1] = json_count(c, turns, key);
            row[2] = arb__report_value(d, ARB__FMT_PERCENT, ch->values[k]);
        }
    }
}

static void debate_tables(report_ctx *c, const json_t *list)
{
    arb__report_doc *d = c->doc;
    size_t n = json_array_size(list);
    if (!n) return;
    arb__report_heading(d, "Debates");
    arb__report_para(d,
                     "Debates (METHODS §2.5): agent 1 judges, agent 2 reads its review and "
                     "agrees or disagrees (in a hard debate it is told to disagree, so a low "
                     "agreement means it obeyed), the judge agent gives the final verdict. "
                     "Their final verdicts are audited above like any judge.");
    arb__report_table *t = arb__report_table_new(
        d, "Debate set-ups",
        "#Set-up|Kind|Agent 1|Agent 2|Judge agent|#Done|#Failed|#Open|#Agent 2 agrees|"
        "#Final = agent 1|#Final = agent 2");
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(list, i);
        const char **row = arb__report_table_row(d, t);
        if (!row) return;
        row[0] = arb__report_printf(d, "%zu", i + 1);
        row[1] = json_text(c, o, "kind");
        row[2] = json_text(c, o, "agent1");
        row[3] = json_text(c, o, "agent2");
        row[4] = json_text(c, o, "judge");
        row[5] = json_count(c, o, "done");
        row[6] = json_count(c, o, "failed");
        row[7] = json_count(c, o, "open");
        row[8] = share_of(c, o, "agent2_agrees", "n_agent2_valid");
        row[9] = share_of(c, o, "final_is_agent1", "n_final_valid");
        row[10] = share_of(c, o, "final_is_agent2", "n_final_valid");
    }
}

/* A dialogue shown in full: the question and both answers once. */
static int transcript_head(void *ud, const arb__transcript *t)
{
    report_ctx *c = ud;
    arb__report_doc *d = c->doc;
    const char *a1 = raw(t->answer1), *a2 = raw(t->answer2), *final = raw(t->final_verdict);
    arb__report_subheading(d, "%s · item %s · %s shown first, %s second · %s, final verdict %s",
                           raw(t->kind), raw(t->item_id), a1, a2, raw(t->status),
                           *final ? final : "none");
    arb__report_text(d, "Question", cut(c, t->question));
    arb__report_pair(d, arb__report_printf(d, "Answer 1: %s", a1), cut(c, t->answer1_text),
                     arb__report_printf(d, "Answer 2: %s", a2), cut(c, t->answer2_text));
    return 0;
}

/* One turn of the dialogue, as a labelled text. */
static int transcript_turn(void *ud, const arb__transcript_turn *t)
{
    report_ctx *c = ud;
    const char *verdict = raw(t->verdict);
    const char *label = arb__report_printf(c->doc, "Turn %d · %s · %s · verdict %s", t->turn,
                                           raw(t->speaker), raw(t->role),
                                           *verdict ? verdict : "none");
    const char *text;
    if (!t->has_call) text = "(no call: the turn was not sent)";
    else if (t->content) text = cut(c, t->content);
    else
        text = arb__report_printf(c->doc, "(no reply: %s)", t->error ? t->error : "unknown");
    arb__report_text(c->doc, label, text);
    return 0;
}

static arb_status transcripts(report_ctx *c)
{
    arb__report_doc *d = c->doc;
    if (!c->p->transcripts) return ARB_OK;
    arb__report_heading(d, "Transcripts");
    arb__report_para(d, "A few dialogues in full, the longest of each kind first: the "
                        "question and both answers once, then every turn's reply.");
    return arb__store_each_transcript(c->store, c->p->transcripts, transcript_head,
                                      transcript_turn, c);
}

static arb_status section_discussions(report_ctx *c)
{
    arb__report_doc *d = c->doc;
    arb__report_begin_section(d, "discussions", "Debates and discussions");
    arb_discussion_stats_params params = arb_discussion_stats_default_params();
    params.bootstrap = c->p->bootstrap;
    params.seed = c->p->seed;
    arb_discussion_stats *ds = NULL;
    arb_status st = arb_discussion_stats_compute(c->store, &params, &ds);
    if (st) return st;
    if (!arb_discussion_stats_count(ds)) {
        arb_discussion_stats_destroy(ds);
        arb__report_note(d, "No debates or discussions in the store (arbiter debate, arbiter "
                            "discuss).");
        return ARB_OK;
    }
    char *text = arb_discussion_stats_to_json(ds);
    arb_discussion_stats_destroy(ds);
    json_t *root = text ? json_loads(text, 0, NULL) : NULL;
    arb_free(text);
    if (!root) return nomem(c); /* the library's own JSON: only memory can fail */
    discussion_tables(c, json_object_get(root, "discussions"));
    debate_tables(c, json_object_get(root, "debates"));
    json_decref(root);
    return transcripts(c);
}

/* ---- worst cases ----------------------------------------------------------------------- */

/* The judge's own text of a worst case in both orders (arbiter's reply, or the "raw" text of
** an imported judgment), shown below the verdicts: the words behind a flip. */
typedef struct worst_texts {
    const char *judge, *label[2], *text[2];
} worst_texts;

/* Reads the texts of the pair key names into w (document strings, cut to TEXT_MAX) and
** returns the import source (document string) or NULL when arbiter judged it. */
static arb_status pair_texts(report_ctx *c, const arb__pair_key *key, worst_texts *w,
                             const char **source)
{
    char *text[2], *from = NULL;
    arb_status st = arb__store_pair_texts(c->store, key, text, &from);
    if (st) return st;
    *source = from ? arb__report_str(c->doc, from) : NULL;
    for (int o = 0; o < 2; o++) {
        w->text[o] = text[o] ? arb__report_str_cut(c->doc, text[o], TEXT_MAX) : NULL;
        free(text[o]);
    }
    free(from);
    return ARB_OK;
}

/* The verdicts of one order-dependent item as they are read, and their texts to show after. */
typedef struct worst_acc {
    report_ctx *c;
    const char *item, *candidate, *baseline;
    arb__report_table *t;
    worst_texts *texts;
    size_t n_texts, cap;
    arb_status st;
} worst_acc;

static int worst_case_verdict(void *ud, const arb__order_verdict *v)
{
    worst_acc *a = ud;
    report_ctx *c = a->c;
    const char *candidate = a->candidate, *baseline = a->baseline;
    const char **row = arb__report_table_row(c->doc, a->t);
    if (!row) return 0;
    const char *v0 = raw(v->verdict[0]), *v1 = raw(v->verdict[1]);
    arb__pair_key key = {raw(v->protocol), raw(v->judge_name), raw(v->template_name), a->item,
                         candidate, baseline, v->options, v->rep};
    worst_texts w = {arb__report_str(c->doc, v->judge_name), {NULL, NULL}, {NULL, NULL}};
    const char *source = NULL;
    if ((a->st = pair_texts(c, &key, &w, &source))) return 1;
    row[0] = w.judge;
    row[1] = arb__report_printf(c->doc, "%s · %s · %d options%s%s", key.protocol,
                                key.template_name, key.options,
                                source ? " · imported from " : "", source ? source : "");
    row[2] = arb__report_printf(c->doc, "%d", key.rep);
    row[3] = verdict_words(c, v0[0], candidate, baseline);
    row[4] = verdict_words(c, v1[0], candidate, baseline);
    row[5] = v->changed ? "yes" : "no";
    if (!w.text[0] && !w.text[1]) return 0;
    for (int o = 0; o < 2; o++)
        w.label[o] = arb__report_printf(c->doc, "%s, %s shown first (%s)%s", w.judge,
                                        o ? baseline : candidate, row[3 + o],
                                        w.text[o] ? "" : ": no text stored");
    if (arb__grow(&a->texts, &a->cap, a->n_texts + 1, sizeof *a->texts)) {
        a->st = nomem(c);
        return 1;
    }
    a->texts[a->n_texts++] = w;
    return 0;
}

static arb_status worst_case_verdicts(report_ctx *c, arb__order_verdicts *ov, const char *item,
                                      const char *candidate, const char *baseline)
{
    worst_acc a = {c, item, candidate, baseline, NULL, NULL, 0, 0, ARB_OK};
    a.t = arb__report_table_new(
        c->doc, "Verdicts per judge",
        "Judge|Set-up|#Rep|Candidate shown first|Baseline shown first|Changed");
    arb_status st = arb__store_each_order_verdict(ov, item, candidate, baseline,
                                                  worst_case_verdict, &a);
    if (!st) st = a.st;
    for (size_t k = 0; !st && k < a.n_texts; k++)
        arb__report_pair(c->doc, a.texts[k].label[0], a.texts[k].text[0] ? a.texts[k].text[0] : "",
                         a.texts[k].label[1], a.texts[k].text[1] ? a.texts[k].text[1] : "");
    free(a.texts);
    return st;
}

/* One order-dependent item: its heading, question, answers and verdicts. */
typedef struct worst_items {
    report_ctx *c;
    arb__order_verdicts *verdicts;
    size_t shown;
    arb_status st;
} worst_items;

static int worst_case(void *ud, const arb__order_dependent_item *it)
{
    worst_items *w = ud;
    report_ctx *c = w->c;
    arb__report_doc *d = c->doc;
    const char *item = arb__report_str(d, it->item_id), *cand = arb__report_str(d, it->candidate),
               *base = arb__report_str(d, it->baseline);
    if (!item || !cand || !base) return 1;
    w->shown++;
    arb__report_heading(d, "Item %s: %s vs %s, %lld of %lld judges changed their verdict",
                        item, cand, base, it->n_judges_changed, it->n_judges);
    arb__report_text(d, "Question", cut(c, it->question));
    arb__report_pair(d, arb__report_printf(d, "Candidate: %s", cand), cut(c, it->candidate_answer),
                     arb__report_printf(d, "Baseline: %s", base), cut(c, it->baseline_answer));
    return (w->st = worst_case_verdicts(c, w->verdicts, item, cand, base)) != ARB_OK;
}

static arb_status section_worst_cases(report_ctx *c)
{
    arb__report_doc *d = c->doc;
    arb__report_begin_section(d, "worst-cases", "Most order-dependent items");
    if (!c->p->worst_cases) {
        arb__report_note(d, "Not asked for (worst cases 0).");
        return ARB_OK;
    }
    long long n_pairs = 0;
    worst_items w = {c, NULL, 0, ARB_OK};
    arb_status st = arb__store_count_swapped_judgments(c->store, &n_pairs);
    if (!st) st = arb__store_open_order_verdicts(c->store, &w.verdicts);
    if (!st && n_pairs)
        arb__report_para(d,
                         "The items whose verdicts depended most on the order of the "
                         "answers: per item and pair of models, the judges whose model "
                         "verdicts differ between the two orders (E not counted), most "
                         "judges first. Each judge's verdict is given in both orders, "
                         "with its own text when the store has it (the reply arbiter "
                         "received, or the raw text of an imported judgment).");
    if (!st) st = arb__store_each_order_dependent_item(c->store, c->p->worst_cases, worst_case, &w);
    if (!st) st = w.st;
    arb__store_close_order_verdicts(w.verdicts);
    if (st) return st;
    if (!n_pairs)
        arb__report_note(d, "No judgments in both orders in the store: no order-dependent "
                            "items to show.");
    else if (!w.shown)
        arb__report_note(d, "No judge gave a different model verdict when the order of the "
                            "answers was swapped.");
    return ARB_OK;
}

/* ---- what drives consistency (METHODS §5 factor analysis) ---------------------------------- */

/* The stepwise regression of one target ("pc" or "pf") over the audit by judge, candidate and
** task, as its steps and final coefficients, read from arb_factors_to_json (the factors' only
** accessor). */
static arb_status factors_tables(report_ctx *c, const char *target, const char *what)
{
    arb__report_doc *d = c->doc;
    arb_factors *f = NULL;
    arb_status st = arb__factors_from_audit(c->store, c->by_task, target, &f);
    if (st) return st;
    char *text = arb_factors_to_json(f);
    arb_factors_destroy(f);
    json_t *root = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (!root) return nomem(c);
    const json_t *model = json_object_get(root, "model");
    const char *message = json_string_value(json_object_get(root, "message"));
    arb__report_subheading(d, "%s", what);
    if (!json_is_object(model)) {
        arb__report_note(d, "%s", message ? message : "Too few groups to fit a model.");
        json_decref(root);
        return ARB_OK;
    }
    arb__report_para(d, "%s (judge, candidate, task) groups; R² of the final model %s; AIC %s "
                        "(intercept only %s).",
                     json_count(c, root, "n_used"),
                     arb__report_value(d, ARB__FMT_PLAIN, json_num(model, "r_squared")),
                     arb__report_value(d, ARB__FMT_PLAIN, json_num(model, "aic")),
                     arb__report_value(d, ARB__FMT_PLAIN, json_num(root, "aic_intercept_only")));
    arb__report_table *t = arb__report_table_new(
        d, arb__report_printf(d, "Variables kept for %s (AIC lost without each: larger = matters "
                                 "more)", target),
        "Variable|Kind|Reference level|#ΔAIC without it");
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(model, "variables"), i, v) {
        const char **row = arb__report_table_row(d, t);
        if (!row) break;
        row[0] = json_text(c, v, "variable");
        row[1] = json_text(c, v, "kind");
        row[2] = json_is_string(json_object_get(v, "reference")) ? json_text(c, v, "reference")
                                                                  : "";
        row[3] = arb__report_value(d, ARB__FMT_PLAIN, json_num(v, "delta_aic"));
    }
    t = arb__report_table_new(d, arb__report_printf(d, "Coefficients of the model for %s", target),
                              "Term|Level|#Estimate|#Std. error|#t|#p");
    json_array_foreach(json_object_get(model, "coefficients"), i, v) {
        const char **row = arb__report_table_row(d, t);
        if (!row) break;
        row[0] = json_text(c, v, "variable");
        row[1] = json_is_string(json_object_get(v, "level")) ? json_text(c, v, "level") : "";
        int aliased = json_is_true(json_object_get(v, "aliased"));
        row[2] = aliased ? "aliased" : arb__report_value(d, ARB__FMT_SIGNED, json_num(v, "estimate"));
        row[3] = arb__report_value(d, ARB__FMT_PLAIN, json_num(v, "std_error"));
        row[4] = arb__report_value(d, ARB__FMT_PLAIN, json_num(v, "t"));
        double pv = json_num(v, "p_value");
        row[5] = isnan(pv) ? "n/a" : pv < 0.001 ? "< 0.001" : arb__report_value(d, ARB__FMT_PLAIN, pv);
    }
    json_decref(root);
    return d->nomem ? nomem(c) : ARB_OK;
}

static arb_status section_factors(report_ctx *c)
{
    arb__report_doc *d = c->doc;
    arb__report_begin_section(d, "factors", "What drives consistency and fairness");
    if (!arb_audit_count(c->by_judge)) {
        arb__report_note(d, "No side-by-side judgments in the store: nothing to explain.");
        return ARB_OK;
    }
    arb__report_para(d, "Bidirectional stepwise linear regression by AIC (METHODS §5) of position "
                        "consistency PC and preference fairness PF over (judge, candidate, task) "
                        "groups, on the quality gap, the lengths of question, answers and prompt, "
                        "the judge, the candidate and the task. A variable stays only when it "
                        "lowers AIC. The same numbers: arbiter factors --target pc|pf.");
    arb_status st = factors_tables(c, "pc", "Position consistency (PC)");
    return st ? st : factors_tables(c, "pf", "Preference fairness (PF)");
}

/* ---- agreement among annotators (METHODS §4) ----------------------------------------------- */

static arb_status section_annotators(report_ctx *c)
{
    arb__report_doc *d = c->doc;
    arb__report_begin_section(d, "annotators", "Agreement among human annotators");
    arb_labels_report *lr = NULL;
    arb_status st = arb_labels_report_compute(c->store, 0, &lr);
    if (st) return st;
    char *text = arb_labels_report_to_json(lr);
    arb_labels_report_destroy(lr);
    json_t *root = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (!root) return nomem(c);
    const json_t *sets = json_object_get(root, "label_sets");
    if (!json_array_size(sets)) {
        arb__report_note(d, "No expert labels in the store (import them with arbiter labels "
                            "import, or collect them with arbiter annotate).");
        json_decref(root);
        return ARB_OK;
    }
    arb__report_para(d, "Per candidate and baseline: the labels, the items labelled by two or more "
                        "annotators, the items whose annotators tied (no majority; left out of "
                        "every comparison with the experts), and per benchmark split of %s items "
                        "the mean Pearson correlation between annotator pairs and Fleiss' κ "
                        "(METHODS §4, §10).",
                     json_count(c, root, "split_size"));
    arb__report_table *t = arb__report_table_new(
        d, "Expert label sets",
        "Candidate|Baseline|#Items|#Labels|#Annotators|#Multi-annotated|#Ties");
    arb__report_table *ts = arb__report_table_new(
        d, "Agreement per benchmark split",
        "Candidate vs baseline|#First item|#Last item|#Items|#Mean Pearson|#Fleiss κ");
    size_t i, k;
    const json_t *set, *split;
    json_array_foreach(sets, i, set) {
        const char **row = arb__report_table_row(d, t);
        if (!row) break;
        row[0] = json_text(c, set, "candidate");
        row[1] = json_text(c, set, "baseline");
        row[2] = json_count(c, set, "n_items");
        row[3] = json_count(c, set, "n_labels");
        size_t n_annotators = json_array_size(json_object_get(set, "annotators"));
        row[4] = arb__report_count(d, (long long)n_annotators);
        row[5] = json_count(c, set, "n_multi_annotated");
        row[6] = json_count(c, set, "n_annotator_ties");
        json_array_foreach(json_object_get(set, "splits"), k, split) {
            const char **srow = arb__report_table_row(d, ts);
            if (!srow) break;
            srow[0] = arb__report_printf(d, "%s vs %s", row[0], row[1]);
            srow[1] = json_count(c, split, "first_seq");
            srow[2] = json_count(c, split, "last_seq");
            srow[3] = json_count(c, split, "n_items");
            srow[4] = arb__report_value(d, ARB__FMT_PLAIN, json_num(split, "mean_pearson"));
            srow[5] = arb__report_value(d, ARB__FMT_PLAIN, json_num(split, "fleiss_kappa"));
        }
    }
    json_decref(root);
    return d->nomem ? nomem(c) : ARB_OK;
}

/* ---- the report ------------------------------------------------------------------------- */

arb_report_params arb_report_default_params(void)
{
    arb_report_params p;
    memset(&p, 0, sizeof p);
    p.title = DEFAULT_TITLE;
    p.bootstrap = 1000;
    p.seed = 20261123;
    p.worst_cases = 8;
    p.transcripts = 3;
    return p;
}

/* The judgments are read once and grouped for each audit the sections show: the rows are
** those of arb_audit_compute (arbiter audit) with the same grouping and parameters. */
static arb_status gather(report_ctx *c)
{
    arb_audit_params ap = arb_audit_default_params();
    ap.multi_agent = 0; /* the discussions section computes them once */
    arb_status st = arb__audit_input_load(c->store, &ap, &c->judgments);
    if (!st) st = arb__audit_rows(c->store, c->judgments, &ap, &c->by_comparison);
    if (st) return st;
    ap.by = ARB_BY_JUDGE | ARB_BY_CANDIDATE | ARB_BY_TASK; /* as arb_factors_compute */
    if ((st = arb__audit_rows(c->store, c->judgments, &ap, &c->by_task))) return st;
    ap.by = ARB_BY_JUDGE;
    ap.bootstrap = c->p->bootstrap;
    ap.seed = c->p->seed;
    if ((st = arb__audit_rows(c->store, c->judgments, &ap, &c->by_judge)) || (st = load_battles(c)))
        return st;
    arb_status (*const sections[])(report_ctx *) = {
        section_at_a_glance, section_summary,     section_verdicts,  section_position_bias,
        section_factors,     section_human_agreement, section_annotators,
        section_judge_agreement, section_multilingual, section_persona, section_win_rates,
        section_ratings,     section_elo_trend,   section_peer_weights, section_discussions,
        section_worst_cases};
    for (size_t k = 0; k < sizeof sections / sizeof sections[0]; k++)
        if ((st = sections[k](c))) return st;
    return c->doc->nomem ? nomem(c) : ARB_OK;
}

arb_status arb_report_write(arb_store *store, const arb_report_params *params,
                            const char *format, FILE *out)
{
    if (!store) return ARB_INVALID;
    int html = format && !strcmp(format, "html");
    if (!html && !(format && !strcmp(format, "markdown"))) {
        char shown[64] = "nothing";
        if (format) arb__excerpt(shown, sizeof shown, format, strlen(format));
        return arb__store_fail(store, ARB_INVALID,
                               "report: format must be \"html\" or \"markdown\", got %s", shown);
    }
    if (!out) return arb__store_fail(store, ARB_INVALID, "report: no output file");
    arb_report_params p = params ? *params : arb_report_default_params();
    if (!p.title) p.title = DEFAULT_TITLE;

    arb__report_doc doc;
    arb__report_doc_init(&doc, p.title);
    report_ctx c = {.store = store, .p = &p, .doc = &doc};
    arb__buf b;
    arb__buf_init(&b, 0);
    arb_status st = doc.nomem ? nomem(&c) : gather(&c);
    if (!st && (html ? arb__report_render_html(&b, &doc) : arb__report_render_md(&b, &doc)))
        st = nomem(&c);
    if (!st && (fwrite(b.data, 1, b.len, out) != b.len || fflush(out) != 0))
        st = arb__store_fail(store, ARB_IO, "report: cannot write the report");
    arb__buf_free(&b);
    arb__report_doc_free(&doc);
    arb_audit_destroy(c.by_comparison);
    arb_audit_destroy(c.by_judge);
    arb_audit_destroy(c.by_task);
    arb__audit_input_free(c.judgments);
    for (size_t k = 0; k < c.n_sources; k++) {
        free(c.sources[k].name);
        arb_battles_destroy(c.sources[k].battles);
    }
    free(c.sources);
    return st;
}
