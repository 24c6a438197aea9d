/*
** consistency.c -- cross-language consistency of pointwise judgments (METHODS §8): per judge x
** template x mode x task, Fleiss' kappa with the languages as raters, per language the number
** of judgments, accuracy or mean grade, E rate and Cohen's kappa against a reference language;
** across judges, Spearman's rho between accuracy (or mean grade) and Fleiss' kappa; the
** yes/no - grade kappa gap of each judge; and a majority-vote ensemble of named judges.
**
** Invariants: a row's judgments become a matrix of "groups" (a parallel group as judged for one
** answering model) x languages, each cell a category (yes/no: 0 incorrect, 1 correct; grade:
** grade - 1), CELL_E or CELL_MISSING; every metric of a row is a function of a multiset of its
** groups, so the point estimate (all groups once) and a bootstrap replicate (parallel groups
** drawn with replacement, their models together) run the same code (measure()). Only
** repetition 0 is read. Undefined values are NAN here, n/a in text and null in JSON.
** The choices the method leaves open are listed in arbiter.h above arb_consistency_params.
**
** Not here: reading SQL (store.c, arb__store_each_pointwise), the kappa formulas (stats.c).
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { CELL_MISSING = -2, CELL_E = -1 };

/* The judgments behind a row (or an ensemble's vote) as a groups x languages matrix. */
typedef struct cons_matrix {
    size_t k;               /* categories: 2 (yes/no) or 5 (grade) */
    size_t n_langs;
    uint32_t *lang;         /* column -> language index (consistency-wide table), by code */
    size_t n_units;         /* groups, i.e. (parallel group, answering model) */
    uint32_t *unit_group;   /* parallel group index per unit; units sorted by group, model */
    uint32_t *unit_model;
    signed char *cell;      /* n_units x n_langs */
    size_t n_boot;          /* parallel groups: the bootstrap's units */
    size_t *boot_start;     /* units of parallel group b: boot_start[b] .. boot_start[b + 1] */
    int ref;                /* column of the reference language, -1 when absent */
} cons_matrix;

/* One observation while reading: (group, model, language) -> cell value. */
typedef struct cons_obs {
    uint32_t group, model, lang;
    uint32_t seq;           /* reading order: of two values for one cell, the first is used */
    signed char value;
} cons_obs;

typedef struct cons_row {
    arb_consistency_row pub;
    arb_consistency_language *langs;
    cons_matrix mx;
} cons_row;

struct arb_consistency {
    arb_consistency_params params;  /* strings below owned */
    char *reference_language;
    char **ensemble_names;
    cons_row *rows;
    size_t n_rows, cap_rows;
    arb_consistency_spearman *spearman;
    size_t n_spearman;
    arb_consistency_mode_gap *gaps;
    size_t n_gaps, cap_gaps;
    arb_consistency_ensemble *ens;
    size_t n_ens, cap_ens;
    arb__strtab groups, models, languages;
    arb__logprob_row *logprobs; /* expected grades from logprobs (logprobs_report.c) */
    size_t n_logprobs;
};

/* The defaults: reference language en, no ensemble, no bootstrap, seed 20261123, level 0.95. */
arb_consistency_params arb_consistency_default_params(void)
{
    arb_consistency_params p;
    memset(&p, 0, sizeof p);
    p.reference_language = "en";
    p.seed = 20261123ULL;
    p.ci_level = 0.95;
    return p;
}

static void matrix_free(cons_matrix *m)
{
    free(m->lang);
    free(m->unit_group);
    free(m->unit_model);
    free(m->cell);
    free(m->boot_start);
    memset(m, 0, sizeof *m);
}

/* Frees the result and everything in it. Accepts NULL. */
void arb_consistency_destroy(arb_consistency *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->n_rows; i++) {
        cons_row *r = &c->rows[i];
        free((char *)r->pub.judge);
        free((char *)r->pub.template_name);
        free((char *)r->pub.task);
        free(r->langs);
        matrix_free(&r->mx);
    }
    free(c->rows);
    free(c->spearman);
    free(c->gaps);
    free(c->ens);
    free(c->reference_language);
    for (size_t i = 0; i < c->params.n_ensemble; i++) free(c->ensemble_names[i]);
    free(c->ensemble_names);
    arb__strtab_free(&c->groups);
    arb__strtab_free(&c->models);
    arb__strtab_free(&c->languages);
    arb__store_logprobs_free(c->logprobs, c->n_logprobs);
    free(c);
}

size_t arb_consistency_count(const arb_consistency *c) { return c ? c->n_rows : 0; }

const arb_consistency_row *arb_consistency_row_at(const arb_consistency *c, size_t i)
{
    return c && i < c->n_rows ? &c->rows[i].pub : NULL;
}

size_t arb_consistency_spearman_count(const arb_consistency *c) { return c ? c->n_spearman : 0; }

const arb_consistency_spearman *arb_consistency_spearman_at(const arb_consistency *c, size_t i)
{
    return c && i < c->n_spearman ? &c->spearman[i] : NULL;
}

size_t arb_consistency_mode_gap_count(const arb_consistency *c) { return c ? c->n_gaps : 0; }

const arb_consistency_mode_gap *arb_consistency_mode_gap_at(const arb_consistency *c, size_t i)
{
    return c && i < c->n_gaps ? &c->gaps[i] : NULL;
}

size_t arb_consistency_ensemble_count(const arb_consistency *c) { return c ? c->n_ens : 0; }

const arb_consistency_ensemble *arb_consistency_ensemble_at(const arb_consistency *c, size_t i)
{
    return c && i < c->n_ens ? &c->ens[i] : NULL;
}

/* ---- from observations to a matrix -------------------------------------------------------- */

/* qsort has no user pointer; language codes are compared through this table. */
static _Thread_local const arb__strtab *sort_languages;

static int cmp_obs(const void *x, const void *y)
{
    const cons_obs *a = x, *b = y;
    if (a->group != b->group) return a->group < b->group ? -1 : 1;
    if (a->model != b->model) return a->model < b->model ? -1 : 1;
    if (a->lang != b->lang) return a->lang < b->lang ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

static int cmp_lang_code(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return strcmp(sort_languages->names[a], sort_languages->names[b]);
}

/* Builds m from the observations (sorted here); a second value for one (group, model,
** language) is ignored and counted in *n_duplicates. ref_lang: the reference's language index,
** UINT32_MAX when it was never seen. Returns 0, or -1 when out of memory. */
static int matrix_build(cons_matrix *m, size_t k, cons_obs *obs, size_t n_obs,
                        const arb__strtab *languages, uint32_t ref_lang, size_t *n_duplicates)
{
    memset(m, 0, sizeof *m);
    m->k = k;
    m->ref = -1;
    qsort(obs, n_obs, sizeof *obs, cmp_obs);
    /* the row's languages, by code; col_of maps a language index to its column */
    size_t n_all = languages->n;
    uint32_t *col_of = malloc((n_all ? n_all : 1) * sizeof *col_of);
    if (!col_of) return -1;
    for (size_t i = 0; i < n_all; i++) col_of[i] = UINT32_MAX;
    for (size_t i = 0; i < n_obs; i++) {
        if (col_of[obs[i].lang] != UINT32_MAX) continue;
        col_of[obs[i].lang] = 0;
        m->n_langs++;
    }
    size_t units = 0, boots = 0;
    for (size_t i = 0; i < n_obs; i++) {
        if (i == 0 || obs[i].group != obs[i - 1].group || obs[i].model != obs[i - 1].model) units++;
        if (i == 0 || obs[i].group != obs[i - 1].group) boots++;
    }
    m->lang = malloc((m->n_langs ? m->n_langs : 1) * sizeof *m->lang);
    m->unit_group = malloc((units ? units : 1) * sizeof *m->unit_group);
    m->unit_model = malloc((units ? units : 1) * sizeof *m->unit_model);
    size_t cells = units * m->n_langs;
    m->cell = malloc((cells ? cells : 1) * sizeof *m->cell);
    m->boot_start = malloc((boots + 1) * sizeof *m->boot_start);
    if (!m->lang || !m->unit_group || !m->unit_model || !m->cell || !m->boot_start) {
        free(col_of);
        return -1;
    }
    size_t c = 0;
    for (size_t i = 0; i < n_all; i++)
        if (col_of[i] != UINT32_MAX) m->lang[c++] = (uint32_t)i;
    sort_languages = languages;
    qsort(m->lang, m->n_langs, sizeof *m->lang, cmp_lang_code);
    for (size_t j = 0; j < m->n_langs; j++) {
        col_of[m->lang[j]] = (uint32_t)j;
        if (m->lang[j] == ref_lang) m->ref = (int)j;
    }
    memset(m->cell, CELL_MISSING, cells);
    for (size_t i = 0; i < n_obs; i++) {
        const cons_obs *o = &obs[i];
        int new_unit = i == 0 || o->group != obs[i - 1].group || o->model != obs[i - 1].model;
        if (new_unit) {
            if (i == 0 || o->group != obs[i - 1].group) m->boot_start[m->n_boot++] = m->n_units;
            m->unit_group[m->n_units] = o->group;
            m->unit_model[m->n_units] = o->model;
            m->n_units++;
        }
        signed char *cell = &m->cell[(m->n_units - 1) * m->n_langs + col_of[o->lang]];
        if (*cell != CELL_MISSING) (*n_duplicates)++;
        else *cell = o->value;
    }
    m->boot_start[m->n_boot] = m->n_units;
    free(col_of);
    return 0;
}

/* ---- the metrics of a multiset of groups -------------------------------------------------- */

typedef struct lang_measure {
    size_t n, n_errors, n_valid, n_pairs;
    double score, kappa; /* accuracy or mean grade; Cohen's kappa vs the reference */
} lang_measure;

typedef struct row_measure {
    double fleiss;
    size_t n_used, n_with_error;
    lang_measure *lang; /* n_langs */
} row_measure;

/* Measures the groups units[0..n) (indices into m, repeats allowed) into out (out->lang has
** room for m->n_langs). Returns 0, or -1 when out of memory. */
static int measure(const cons_matrix *m, const size_t *units, size_t n, row_measure *out)
{
    size_t L = m->n_langs, k = m->k;
    double *counts = malloc((n ? n : 1) * k * sizeof *counts);
    double *tables = malloc((L ? L : 1) * k * k * sizeof *tables);
    double *sums = calloc(L ? L : 1, sizeof *sums);
    if (!counts || !tables || !sums) {
        free(counts);
        free(tables);
        free(sums);
        return -1;
    }
    memset(tables, 0, (L ? L : 1) * k * k * sizeof *tables);
    memset(out->lang, 0, L * sizeof *out->lang);
    out->n_used = out->n_with_error = 0;
    for (size_t i = 0; i < n; i++) {
        const signed char *row = &m->cell[units[i] * L];
        int complete = 1, has_error = 0;
        for (size_t j = 0; j < L; j++) {
            lang_measure *lm = &out->lang[j];
            if (row[j] == CELL_MISSING) {
                complete = 0;
                continue;
            }
            lm->n++;
            if (row[j] == CELL_E) {
                lm->n_errors++;
                has_error = 1;
                continue;
            }
            lm->n_valid++;
            sums[j] += k == 2 ? row[j] : row[j] + 1; /* correct = 1; grade = category + 1 */
            if (m->ref >= 0 && (int)j != m->ref && row[m->ref] >= 0) {
                tables[(j * k + (size_t)row[m->ref]) * k + (size_t)row[j]] += 1; /* ref in rows */
                lm->n_pairs++;
            }
        }
        if (!complete || has_error) {
            /* a group with every language present but an E counts as "with an E" */
            if (complete && has_error) out->n_with_error++;
            continue;
        }
        double *c = &counts[out->n_used * k];
        memset(c, 0, k * sizeof *c);
        for (size_t j = 0; j < L; j++) c[(size_t)row[j]] += 1;
        out->n_used++;
    }
    /* §8, §10: Fleiss' kappa with the languages as raters; a single group or a single language
    ** has no agreement to measure (stats.c would give -1 or NAN), so both are undefined here */
    out->fleiss = L >= 2 && out->n_used >= 2 ? arb_stat_fleiss_kappa(counts, out->n_used, k) : NAN;
    for (size_t j = 0; j < L; j++) {
        lang_measure *lm = &out->lang[j];
        lm->score = lm->n_valid ? sums[j] / (double)lm->n_valid : NAN;
        lm->kappa = lm->n_pairs >= 2 ? arb_stat_cohen_kappa(&tables[j * k * k], k) : NAN;
    }
    free(counts);
    free(tables);
    free(sums);
    return 0;
}

/* ---- bootstrap over parallel groups (§10) ------------------------------------------------- */

typedef struct boot_ctx {
    const cons_matrix *m;
    size_t *units;      /* room for a resample's units */
    size_t cap;
    row_measure rm;
} boot_ctx;

/* One replicate: the units of the drawn parallel groups, measured. out = Fleiss' kappa, then
** score per language, then Cohen's kappa per language. Nonzero when out of memory. */
static int boot_replicate(void *ud, const size_t *indices, size_t n, double *out)
{
    boot_ctx *b = ud;
    const cons_matrix *m = b->m;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t from = m->boot_start[indices[i]], to = m->boot_start[indices[i] + 1];
        if (k + (to - from) > b->cap) {
            size_t cap = b->cap;
            if (arb__grow(&b->units, &cap, k + (to - from), sizeof *b->units)) return 1;
            b->cap = cap;
        }
        for (size_t u = from; u < to; u++) b->units[k++] = u;
    }
    if (measure(m, b->units, k, &b->rm)) return 1;
    out[0] = b->rm.fleiss;
    for (size_t j = 0; j < m->n_langs; j++) {
        out[1 + j] = b->rm.lang[j].score;
        out[1 + m->n_langs + j] = b->rm.lang[j].kappa;
    }
    return 0;
}

/* Percentile intervals of Fleiss' kappa (fleiss_ci) and, when langs is not NULL, of each
** language's score and Cohen's kappa. ARB_OK, ARB_NOMEM, or what arb_stat_bootstrap says. */
static arb_status bootstrap_matrix(const cons_matrix *m, const arb_consistency_params *p,
                                   double fleiss_ci[2], arb_consistency_language *langs)
{
    if (m->n_boot == 0) return ARB_OK; /* nothing to resample: intervals stay undefined */
    size_t n_stats = 1 + 2 * m->n_langs;
    arb_status st = ARB_NOMEM;
    boot_ctx b = {m, NULL, 0, {NAN, 0, 0, NULL}};
    double *lo = malloc(n_stats * sizeof *lo), *hi = malloc(n_stats * sizeof *hi);
    b.rm.lang = malloc((m->n_langs ? m->n_langs : 1) * sizeof *b.rm.lang);
    if (!lo || !hi || !b.rm.lang) goto done;
    st = arb_stat_bootstrap(m->n_boot, n_stats, boot_replicate, &b, p->bootstrap, p->seed,
                            p->ci_level, lo, hi);
    if (st == ARB_INTERRUPTED) st = ARB_NOMEM; /* the replicate only stops when out of memory */
    if (st != ARB_OK) goto done;
    fleiss_ci[0] = lo[0];
    fleiss_ci[1] = hi[0];
    for (size_t j = 0; langs && j < m->n_langs; j++) {
        langs[j].score_ci[0] = lo[1 + j];
        langs[j].score_ci[1] = hi[1 + j];
        langs[j].kappa_ci[0] = lo[1 + m->n_langs + j];
        langs[j].kappa_ci[1] = hi[1 + m->n_langs + j];
    }
done:
    free(lo);
    free(hi);
    free(b.rm.lang);
    free(b.units);
    return st;
}

/* The point estimate over every group of m once. Returns 0, or -1 when out of memory. */
static int measure_all(const cons_matrix *m, row_measure *rm)
{
    size_t *all = malloc((m->n_units ? m->n_units : 1) * sizeof *all);
    rm->lang = malloc((m->n_langs ? m->n_langs : 1) * sizeof *rm->lang);
    int rc = -1;
    if (all && rm->lang) {
        for (size_t u = 0; u < m->n_units; u++) all[u] = u;
        rc = measure(m, all, m->n_units, rm);
    }
    free(all);
    return rc;
}

/* Fills a row's public figures from its matrix. Returns ARB_OK, ARB_NOMEM or a bootstrap
** failure. */
static arb_status row_finish(arb_consistency *c, cons_row *r)
{
    const cons_matrix *m = &r->mx;
    row_measure rm = {NAN, 0, 0, NULL};
    r->langs = calloc(m->n_langs ? m->n_langs : 1, sizeof *r->langs);
    if (!r->langs || measure_all(m, &rm)) {
        free(rm.lang);
        return ARB_NOMEM;
    }
    arb_consistency_row *p = &r->pub;
    p->languages = r->langs;
    p->n_languages = m->n_langs;
    p->n_groups = rm.n_used;
    p->n_groups_left_out = m->n_units - rm.n_used;
    p->n_groups_with_error = rm.n_with_error;
    p->fleiss_kappa = rm.fleiss;
    p->fleiss_kappa_ci[0] = p->fleiss_kappa_ci[1] = NAN;
    double score_sum = 0;
    size_t score_n = 0;
    for (size_t j = 0; j < m->n_langs; j++) {
        arb_consistency_language *l = &r->langs[j];
        const lang_measure *lm = &rm.lang[j];
        l->language = c->languages.names[m->lang[j]];
        l->n = lm->n;
        l->n_errors = lm->n_errors;
        l->accuracy = m->k == 2 ? lm->score : NAN;
        l->mean_grade = m->k == 2 ? NAN : lm->score;
        l->error_rate = lm->n ? (double)lm->n_errors / (double)lm->n : NAN;
        l->cohen_kappa_vs_reference = lm->kappa;
        l->n_vs_reference = lm->n_pairs;
        l->score_ci[0] = l->score_ci[1] = l->kappa_ci[0] = l->kappa_ci[1] = NAN;
        if (isfinite(lm->score)) {
            score_sum += lm->score;
            score_n++;
        }
    }
    p->language_mean = score_n ? score_sum / (double)score_n : NAN;
    free(rm.lang);
    if (c->params.bootstrap == 0) return ARB_OK;
    return bootstrap_matrix(m, &c->params, p->fleiss_kappa_ci, r->langs);
}

/* ---- reading the store -------------------------------------------------------------------- */

typedef struct load_ctx {
    arb_consistency *c;
    cons_row *row;          /* the row being read */
    cons_obs *obs;
    size_t n_obs, cap_obs;
    arb__buf key;           /* scratch for group keys */
    int nomem;
} load_ctx;

/* Closes the row being read: its matrix from the observations. 0, or -1 out of memory. */
static int close_row(load_ctx *L)
{
    if (!L->row) return 0;
    cons_row *r = L->row;
    uint32_t ref = arb__strtab_find(&L->c->languages, L->c->reference_language);
    int rc = matrix_build(&r->mx, strcmp(r->pub.mode, "grade") ? 2 : 5, L->obs, L->n_obs,
                          &L->c->languages, ref, &r->pub.n_duplicates);
    L->n_obs = 0;
    L->row = NULL;
    return rc;
}

/* The cell value of a stored value, CELL_E for E (or a value outside the mode's range, which
** the schema's CHECK rules out). */
static signed char cell_of(int grade, int value)
{
    if (grade) return value >= 1 && value <= 5 ? (signed char)(value - 1) : CELL_E;
    return value == 0 || value == 1 ? (signed char)value : CELL_E;
}

static int on_pointwise(void *ud, const arb__pointwise_row *pr)
{
    load_ctx *L = ud;
    arb_consistency *c = L->c;
    cons_row *r = L->row;
    if (!r || strcmp(r->pub.judge, pr->judge_name) || strcmp(r->pub.template_name, pr->template_name) ||
        strcmp(r->pub.mode, pr->kind) || strcmp(r->pub.task, pr->task)) {
        if (close_row(L)) goto nomem;
        if (arb__grow(&c->rows, &c->cap_rows, c->n_rows + 1, sizeof *c->rows)) goto nomem;
        r = L->row = &c->rows[c->n_rows++];
        memset(r, 0, sizeof *r);
        r->pub.judge = arb__strdup(pr->judge_name);
        r->pub.template_name = arb__strdup(pr->template_name);
        r->pub.task = arb__strdup(pr->task);
        r->pub.mode = strcmp(pr->kind, "grade") ? "yesno" : "grade"; /* static */
        if (!r->pub.judge || !r->pub.template_name || !r->pub.task) goto nomem;
    }
    if (pr->rep != 0) {
        r->pub.n_other_reps++;
        return 0;
    }
    /* a group: the parallel group, or the item alone when it has none */
    arb__buf_reset(&L->key);
    if (pr->group[0] ? arb__buf_printf(&L->key, "g:%s", pr->group)
                     : arb__buf_printf(&L->key, "i:%s", pr->item_id))
        goto nomem;
    const char *lang = pr->language[0] ? pr->language : pr->item_language;
    uint32_t g = arb__strtab_intern(&c->groups, L->key.data);
    uint32_t mo = arb__strtab_intern(&c->models, pr->model);
    uint32_t la = arb__strtab_intern(&c->languages, lang);
    if (g == UINT32_MAX || mo == UINT32_MAX || la == UINT32_MAX) goto nomem;
    if (arb__grow(&L->obs, &L->cap_obs, L->n_obs + 1, sizeof *L->obs)) goto nomem;
    L->obs[L->n_obs] = (cons_obs){g, mo, la, (uint32_t)L->n_obs,
                                  cell_of(!strcmp(r->pub.mode, "grade"), pr->value)};
    L->n_obs++;
    return 0;
nomem:
    L->nomem = 1;
    return 1;
}

static arb_status load_rows(arb_store *s, arb_consistency *c)
{
    load_ctx L;
    memset(&L, 0, sizeof L);
    L.c = c;
    arb__buf_init(&L.key, 0);
    arb_status st = arb__store_each_pointwise(s, on_pointwise, &L);
    if (st == ARB_OK && !L.nomem && close_row(&L)) L.nomem = 1;
    if (st == ARB_OK && L.nomem) st = arb__store_fail(s, ARB_NOMEM, "consistency: out of memory");
    free(L.obs);
    arb__buf_free(&L.key);
    return st;
}

/* ---- across judges: Spearman and the mode gap --------------------------------------------- */

static int same_task_mode(const arb_consistency_row *a, const arb_consistency_row *b)
{
    return !strcmp(a->task, b->task) && !strcmp(a->mode, b->mode);
}

/* One Spearman entry per (task, mode), in order of task then mode ("grade" < "yesno"). */
static arb_status compute_spearman(arb_consistency *c)
{
    c->spearman = calloc(c->n_rows ? c->n_rows : 1, sizeof *c->spearman);
    double *x = malloc((c->n_rows ? c->n_rows : 1) * sizeof *x);
    double *y = malloc((c->n_rows ? c->n_rows : 1) * sizeof *y);
    if (!c->spearman || !x || !y) {
        free(x);
        free(y);
        return ARB_NOMEM;
    }
    for (size_t i = 0; i < c->n_rows; i++) {
        const arb_consistency_row *ri = &c->rows[i].pub;
        size_t seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = same_task_mode(ri, &c->rows[j].pub);
        if (seen) continue;
        size_t n = 0;
        for (size_t j = i; j < c->n_rows; j++) {
            const arb_consistency_row *rj = &c->rows[j].pub;
            if (!same_task_mode(ri, rj) || !isfinite(rj->language_mean) ||
                !isfinite(rj->fleiss_kappa))
                continue;
            x[n] = rj->language_mean;
            y[n] = rj->fleiss_kappa;
            n++;
        }
        /* §8: across judges; under 3 points a rank correlation is ±1 or undefined by
        ** construction, so it is not reported */
        arb_consistency_spearman *s = &c->spearman[c->n_spearman++];
        s->task = ri->task;
        s->mode = ri->mode;
        s->n_judges = n;
        s->rho = n >= 3 ? arb_stat_spearman(x, y, n) : NAN;
    }
    free(x);
    free(y);
    /* insertion sort by task, then mode: few entries */
    for (size_t i = 1; i < c->n_spearman; i++) {
        arb_consistency_spearman v = c->spearman[i];
        size_t j = i;
        while (j > 0) {
            const arb_consistency_spearman *u = &c->spearman[j - 1];
            int cmp = strcmp(u->task, v.task);
            if (cmp < 0 || (cmp == 0 && strcmp(u->mode, v.mode) <= 0)) break;
            c->spearman[j] = *u;
            j--;
        }
        c->spearman[j] = v;
    }
    return ARB_OK;
}

/* 1 when two template names agree once the first "yesno" in a and the first "grade" in b are
** left out (pointwise-yesno-general-explain ~ pointwise-grade-general-explain). */
static int same_variant(const char *yesno_name, const char *grade_name)
{
    const char *y = strstr(yesno_name, "yesno"), *g = strstr(grade_name, "grade");
    if (!y || !g) return 0;
    size_t yp = (size_t)(y - yesno_name), gp = (size_t)(g - grade_name);
    return yp == gp && !strncmp(yesno_name, grade_name, yp) && !strcmp(y + 5, g + 5);
}

static size_t rows_of_mode(const arb_consistency *c, const char *judge, const char *task,
                           const char *mode)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_rows; i++) {
        const arb_consistency_row *r = &c->rows[i].pub;
        n += !strcmp(r->judge, judge) && !strcmp(r->task, task) && !strcmp(r->mode, mode);
    }
    return n;
}

/* The yes/no - grade gaps (§8, the study's Figure 3), in row order of the yes/no rows. */
static arb_status compute_gaps(arb_consistency *c)
{
    for (size_t i = 0; i < c->n_rows; i++) {
        const arb_consistency_row *y = &c->rows[i].pub;
        if (strcmp(y->mode, "yesno")) continue;
        int single = rows_of_mode(c, y->judge, y->task, "yesno") == 1 &&
                     rows_of_mode(c, y->judge, y->task, "grade") == 1;
        for (size_t j = 0; j < c->n_rows; j++) {
            const arb_consistency_row *g = &c->rows[j].pub;
            if (strcmp(g->mode, "grade") || strcmp(g->judge, y->judge) || strcmp(g->task, y->task))
                continue;
            if (!single && !same_variant(y->template_name, g->template_name)) continue;
            if (arb__grow(&c->gaps, &c->cap_gaps, c->n_gaps + 1, sizeof *c->gaps)) return ARB_NOMEM;
            arb_consistency_mode_gap *gap = &c->gaps[c->n_gaps++];
            gap->judge = y->judge;
            gap->task = y->task;
            gap->yesno_template = y->template_name;
            gap->grade_template = g->template_name;
            gap->yesno_kappa = y->fleiss_kappa;
            gap->grade_kappa = g->fleiss_kappa;
            gap->gap = y->fleiss_kappa - g->fleiss_kappa; /* NAN when either is */
        }
    }
    return ARB_OK;
}

/* ---- the ensemble (§8) -------------------------------------------------------------------- */

/* The majority of n member values (categories 0..k-1, priority order): the most frequent; a tie
** goes to the tied value given by the earliest member. *tied is set when the top count is
** shared. */
static signed char majority_vote(const signed char *values, size_t n, size_t k, int *tied)
{
    size_t count[5] = {0, 0, 0, 0, 0};
    size_t top = 0;
    for (size_t i = 0; i < n; i++) {
        size_t v = (size_t)values[i];
        if (v < k && ++count[v] > top) top = count[v];
    }
    size_t n_top = 0;
    for (size_t v = 0; v < k; v++) n_top += count[v] == top;
    *tied = n_top > 1;
    for (size_t i = 0; i < n; i++)
        if (count[(size_t)values[i]] == top) return values[i];
    return CELL_E; /* not reached: n >= 1 valid values */
}

/* The unit of (group, model) in m, or SIZE_MAX. Units are sorted by group, then model. */
static size_t find_unit(const cons_matrix *m, uint32_t group, uint32_t model)
{
    size_t lo = 0, hi = m->n_units;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t g = m->unit_group[mid], mo = m->unit_model[mid];
        if (g < group || (g == group && mo < model)) lo = mid + 1;
        else hi = mid;
    }
    return lo < m->n_units && m->unit_group[lo] == group && m->unit_model[lo] == model ? lo
                                                                                     : SIZE_MAX;
}

/* The cell of (group, model, language index) in m, CELL_MISSING when absent. */
static signed char find_cell(const cons_matrix *m, uint32_t group, uint32_t model, uint32_t lang)
{
    size_t u = find_unit(m, group, model);
    if (u == SIZE_MAX) return CELL_MISSING;
    for (size_t j = 0; j < m->n_langs; j++)
        if (m->lang[j] == lang) return m->cell[u * m->n_langs + j];
    return CELL_MISSING;
}

/* The row of judge with r's template, mode and task, or NULL. */
static const cons_row *find_member_row(const arb_consistency *c, const char *judge,
                                       const arb_consistency_row *r)
{
    for (size_t i = 0; i < c->n_rows; i++) {
        const arb_consistency_row *x = &c->rows[i].pub;
        if (!strcmp(x->judge, judge) && !strcmp(x->template_name, r->template_name) &&
            !strcmp(x->mode, r->mode) && !strcmp(x->task, r->task))
            return &c->rows[i];
    }
    return NULL;
}

/* The ensemble on one task, mode and template whose member rows are members[0..n). */
static arb_status ensemble_one(arb_consistency *c, const cons_row *const *members, size_t n)
{
    const arb_consistency_row *first = &members[0]->pub;
    cons_obs *obs = NULL;
    size_t n_obs = 0, cap_obs = 0;
    signed char values[64];
    arb_status st = ARB_NOMEM;
    cons_matrix vote;
    memset(&vote, 0, sizeof vote);
    if (arb__grow(&c->ens, &c->cap_ens, c->n_ens + 1, sizeof *c->ens)) return ARB_NOMEM;
    arb_consistency_ensemble *e = &c->ens[c->n_ens];
    memset(e, 0, sizeof *e);
    e->task = first->task;
    e->mode = first->mode;
    e->template_name = first->template_name;
    e->n_members = n;
    e->members = (const char *const *)c->ensemble_names;
    e->ens_ci[0] = e->ens_ci[1] = NAN;
    /* every instance any member judged, counted once (at its first member) */
    size_t n_union = 0;
    for (size_t m = 0; m < n; m++) {
        const cons_matrix *mx = &members[m]->mx;
        for (size_t u = 0; u < mx->n_units; u++) {
            for (size_t j = 0; j < mx->n_langs; j++) {
                signed char v = mx->cell[u * mx->n_langs + j];
                if (v == CELL_MISSING) continue;
                uint32_t g = mx->unit_group[u], mo = mx->unit_model[u], la = mx->lang[j];
                int earlier = 0;
                for (size_t q = 0; q < m && !earlier; q++)
                    earlier = find_cell(&members[q]->mx, g, mo, la) != CELL_MISSING;
                if (earlier) continue;
                n_union++;
                if (m > 0 || v < 0) continue; /* voted instances are valid for member 0 */
                values[0] = v;
                int all_valid = 1;
                for (size_t q = 1; q < n && all_valid; q++)
                    all_valid = (values[q] = find_cell(&members[q]->mx, g, mo, la)) >= 0;
                if (!all_valid) continue;
                int tied = 0;
                signed char winner = majority_vote(values, n, mx->k, &tied);
                e->n_ties += (size_t)tied;
                if (arb__grow(&obs, &cap_obs, n_obs + 1, sizeof *obs)) goto done;
                obs[n_obs] = (cons_obs){g, mo, la, (uint32_t)n_obs, winner};
                n_obs++;
            }
        }
    }
    e->n_instances = n_obs;
    e->n_instances_left_out = n_union - n_obs;
    size_t dup = 0;
    uint32_t ref = arb__strtab_find(&c->languages, c->reference_language);
    if (matrix_build(&vote, members[0]->mx.k, obs, n_obs, &c->languages, ref, &dup)) goto done;
    row_measure rm = {NAN, 0, 0, NULL};
    if (measure_all(&vote, &rm)) {
        free(rm.lang);
        goto done;
    }
    free(rm.lang);
    e->ens = rm.fleiss;
    e->n_groups = rm.n_used;
    e->n_groups_left_out = vote.n_units - rm.n_used;
    /* Min: the lowest member kappa as the members' own rows give it; undefined when any is */
    e->min = INFINITY;
    for (size_t m = 0; m < n; m++) {
        double k = members[m]->pub.fleiss_kappa;
        if (!isfinite(k)) {
            e->min = NAN;
            e->min_judge = NULL;
            break;
        }
        if (k < e->min) {
            e->min = k;
            e->min_judge = members[m]->pub.judge;
        }
    }
    e->delta = e->ens - e->min;
    st = c->params.bootstrap ? bootstrap_matrix(&vote, &c->params, e->ens_ci, NULL) : ARB_OK;
    if (st == ARB_OK) c->n_ens++;
done:
    free(obs);
    matrix_free(&vote);
    return st;
}

/* One ensemble per (task, mode, template) that every member has a row for, in the order of
** the first member's rows. */
static arb_status compute_ensembles(arb_consistency *c)
{
    size_t n = c->params.n_ensemble;
    if (n == 0) return ARB_OK;
    const cons_row **members = malloc(n * sizeof *members);
    if (!members) return ARB_NOMEM;
    arb_status st = ARB_OK;
    for (size_t i = 0; i < c->n_rows && st == ARB_OK; i++) {
        if (strcmp(c->rows[i].pub.judge, c->ensemble_names[0])) continue;
        size_t m;
        for (m = 0; m < n; m++)
            if (!(members[m] = find_member_row(c, c->ensemble_names[m], &c->rows[i].pub))) break;
        if (m == n) st = ensemble_one(c, members, n);
    }
    free(members);
    return st;
}

/* ---- the whole computation ---------------------------------------------------------------- */

static int judge_has_rows(const arb_consistency *c, const char *judge)
{
    for (size_t i = 0; i < c->n_rows; i++)
        if (!strcmp(c->rows[i].pub.judge, judge)) return 1;
    return 0;
}

static arb_status check_params(arb_store *s, const arb_consistency_params *p)
{
    if (!p->reference_language)
        return arb__store_fail(s, ARB_INVALID, "consistency: no reference language given");
    if (!(p->ci_level > 0 && p->ci_level < 1))
        return arb__store_fail(s, ARB_INVALID,
                               "consistency: the interval level must be in (0, 1), got %g",
                               p->ci_level);
    if (p->bootstrap > 1000000)
        return arb__store_fail(s, ARB_INVALID,
                               "consistency: at most 1000000 bootstrap resamples, got %zu",
                               p->bootstrap);
    if (p->n_ensemble == 0) return ARB_OK;
    if (p->n_ensemble < 2 || p->n_ensemble > 64 || !p->ensemble)
        return arb__store_fail(s, ARB_INVALID,
                               "consistency: an ensemble needs 2 to 64 judges, got %zu",
                               p->n_ensemble);
    for (size_t i = 0; i < p->n_ensemble; i++) {
        if (!p->ensemble[i] || !p->ensemble[i][0])
            return arb__store_fail(s, ARB_INVALID, "consistency: ensemble judge %zu has no name",
                                   i + 1);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(p->ensemble[i], p->ensemble[j]))
                return arb__store_fail(s, ARB_INVALID,
                                       "consistency: ensemble judge \"%s\" is named twice",
                                       p->ensemble[i]);
    }
    return ARB_OK;
}

/* Copies the params' strings into c (so the result outlives the caller's). 0, -1 no memory. */
static int copy_params(arb_consistency *c, const arb_consistency_params *p)
{
    c->params = *p;
    c->params.n_ensemble = 0;
    if (!(c->reference_language = arb__strdup(p->reference_language))) return -1;
    c->params.reference_language = c->reference_language;
    if (p->n_ensemble == 0) {
        c->params.ensemble = NULL;
        return 0;
    }
    if (!(c->ensemble_names = calloc(p->n_ensemble, sizeof *c->ensemble_names))) return -1;
    for (size_t i = 0; i < p->n_ensemble; i++) {
        if (!(c->ensemble_names[i] = arb__strdup(p->ensemble[i]))) return -1;
        c->params.n_ensemble = i + 1; /* what destroy frees */
    }
    c->params.ensemble = (const char *const *)c->ensemble_names;
    return 0;
}

/* Reads the store and computes everything; see arbiter.h. On failure *out is NULL and the
** reason is in arb_store_errmsg(store). */
arb_status arb_consistency_compute(arb_store *store, const arb_consistency_params *params,
                                   arb_consistency **out)
{
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!store) return ARB_INVALID;
    arb_consistency_params p = params ? *params : arb_consistency_default_params();
    arb_status st = check_params(store, &p);
    if (st) return st;
    arb_consistency *c = calloc(1, sizeof *c);
    if (!c || copy_params(c, &p)) goto nomem;
    if ((st = load_rows(store, c))) goto done;
    for (size_t i = 0; i < c->params.n_ensemble; i++)
        if (!judge_has_rows(c, c->ensemble_names[i])) {
            st = arb__store_fail(store, ARB_INVALID,
                                 "consistency: ensemble judge \"%s\" has no pointwise judgments "
                                 "in the store",
                                 c->ensemble_names[i]);
            goto done;
        }
    for (size_t i = 0; i < c->n_rows; i++)
        if ((st = row_finish(c, &c->rows[i]))) goto failed;
    if ((st = compute_spearman(c)) || (st = compute_gaps(c)) || (st = compute_ensembles(c)))
        goto failed;
    if ((st = arb__store_pointwise_logprobs(store, &c->logprobs, &c->n_logprobs))) goto done;
    *out = c;
    return ARB_OK;
failed:
    if (st == ARB_NOMEM) goto nomem;
    arb__store_fail(store, st, "consistency: bootstrap failed: %s", arb_strerror(st));
    goto done;
nomem:
    st = arb__store_fail(store, ARB_NOMEM, "consistency: out of memory");
done:
    arb_consistency_destroy(c);
    return st;
}

/* ---- text --------------------------------------------------------------------------------- */

/* x as "+0.412" (signed), "83.3%" (percent) or "3.25" (plain) in width, "n/a" when undefined. */
typedef enum { NUM_SIGNED, NUM_PERCENT, NUM_PLAIN } num_format;

static int put_num(arb__buf *b, double x, num_format f, int width)
{
    if (!isfinite(x)) return arb__buf_printf(b, "%*s", width, "n/a");
    if (f == NUM_SIGNED) return arb__buf_printf(b, "%+*.3f", width, x);
    if (f == NUM_PERCENT) return arb__buf_printf(b, "%*.1f%%", width - 1, 100.0 * x);
    return arb__buf_printf(b, "%*.2f", width, x);
}

/* "  [lo, hi]" in 18 columns, or blanks when the interval is undefined. */
static int put_ci(arb__buf *b, const double ci[2], num_format f)
{
    if (!isfinite(ci[0]) || !isfinite(ci[1])) return arb__buf_printf(b, "%18s", "");
    return arb__buf_puts(b, "  [") || put_num(b, ci[0], f, 6) || arb__buf_puts(b, ",") ||
           put_num(b, ci[1], f, 7) || arb__buf_puts(b, "]");
}

/* A language code for a terminal, "(none)" when empty. */
static int put_language(arb__buf *b, const char *code)
{
    return arb__buf_put_safe(b, code[0] ? code : "(none)");
}

/* Pads after an untrusted name already written from byte `from` to `width` code points. */
static int pad_to(arb__buf *b, size_t from, int width)
{
    size_t cps = arb__utf8_codepoints(b->data + from, b->len - from);
    for (size_t i = cps; i < (size_t)width; i++)
        if (arb__buf_puts(b, " ")) return -1;
    return 0;
}

static int put_row_text(arb__buf *b, const arb_consistency *c, const arb_consistency_row *r)
{
    int ci = c->params.bootstrap > 0, grade = !strcmp(r->mode, "grade");
    num_format sf = grade ? NUM_PLAIN : NUM_PERCENT;
    if (arb__buf_puts(b, "judge ") || arb__buf_put_safe(b, r->judge) ||
        arb__buf_puts(b, " \xc2\xb7 template ") || arb__buf_put_safe(b, r->template_name) ||
        arb__buf_puts(b, grade ? " \xc2\xb7 grade 1-5" : " \xc2\xb7 yes/no") ||
        arb__buf_puts(b, " \xc2\xb7 task ") || arb__buf_put_safe(b, r->task) ||
        arb__buf_puts(b, "\n  Fleiss' \xce\xba ") || put_num(b, r->fleiss_kappa, NUM_SIGNED, 7) ||
        (ci && put_ci(b, r->fleiss_kappa_ci, NUM_SIGNED)) ||
        arb__buf_printf(b, "   %zu language%s as raters:", r->n_languages,
                        r->n_languages == 1 ? "" : "s"))
        return -1;
    for (size_t j = 0; j < r->n_languages; j++)
        if (arb__buf_puts(b, " ") || put_language(b, r->languages[j].language)) return -1;
    if (arb__buf_printf(b, "\n  groups %zu used, %zu left out (%zu with an E, %zu missing a "
                           "language)",
                        r->n_groups, r->n_groups_left_out, r->n_groups_with_error,
                        r->n_groups_left_out - r->n_groups_with_error))
        return -1;
    if (r->n_duplicates &&
        arb__buf_printf(b, "; %zu duplicate judgments of one group and language not used",
                        r->n_duplicates))
        return -1;
    if (r->n_other_reps &&
        arb__buf_printf(b, "; %zu judgments of repetitions >= 1 not used", r->n_other_reps))
        return -1;
    if (arb__buf_puts(b, "\n  ") || arb__buf_printf(b, "%-12s%6s%10s", "language", "n",
                                                   grade ? "mean" : "accuracy") ||
        (ci && arb__buf_printf(b, "%18s", "")) || arb__buf_printf(b, "%8s", "E rate") ||
        arb__buf_puts(b, "  \xce\xba vs ") || arb__buf_put_safe(b, c->reference_language) ||
        (ci && arb__buf_printf(b, "%18s", "")) || arb__buf_puts(b, "  pairs\n"))
        return -1;
    for (size_t j = 0; j < r->n_languages; j++) {
        const arb_consistency_language *l = &r->languages[j];
        int is_ref = !strcmp(l->language, c->reference_language);
        size_t at = b->len;
        if (arb__buf_puts(b, "  ") || put_language(b, l->language) || pad_to(b, at + 2, 12) ||
            arb__buf_printf(b, "%6zu", l->n) ||
            put_num(b, grade ? l->mean_grade : l->accuracy, sf, 10) ||
            (ci && put_ci(b, l->score_ci, sf)) || put_num(b, l->error_rate, NUM_PERCENT, 8))
            return -1;
        if (is_ref) {
            if (arb__buf_puts(b, "   reference\n")) return -1;
            continue;
        }
        if (put_num(b, l->cohen_kappa_vs_reference, NUM_SIGNED, 9) ||
            (ci && put_ci(b, l->kappa_ci, NUM_SIGNED)) ||
            arb__buf_printf(b, "%7zu\n", l->n_vs_reference))
            return -1;
    }
    return 0;
}

static int put_spearman_text(arb__buf *b, const arb_consistency *c)
{
    if (c->n_spearman == 0) return 0;
    if (arb__buf_puts(b, "\nSpearman across judges: accuracy (or mean grade) averaged over the "
                         "languages vs Fleiss' \xce\xba,\none point per judge \xc3\x97 template "
                         "row (n/a under 3 points)\n") ||
        arb__buf_printf(b, "  %-14s%-7s%9s%7s\n", "task", "mode", "rho", "n"))
        return -1;
    for (size_t i = 0; i < c->n_spearman; i++) {
        const arb_consistency_spearman *s = &c->spearman[i];
        size_t at = b->len;
        if (arb__buf_puts(b, "  ") || arb__buf_put_safe(b, s->task) || pad_to(b, at + 2, 14) ||
            arb__buf_printf(b, "%-7s", s->mode) || put_num(b, s->rho, NUM_SIGNED, 9) ||
            arb__buf_printf(b, "%7zu\n", s->n_judges))
            return -1;
    }
    return 0;
}

static int put_gaps_text(arb__buf *b, const arb_consistency *c)
{
    if (c->n_gaps == 0) return 0;
    if (arb__buf_puts(b, "\nyes/no - grade gap of Fleiss' \xce\xba per judge (METHODS \xc2\xa7"
                         "8, the study's Figure 3)\n") ||
        arb__buf_printf(b, "  %-16s%-14s%9s%9s%9s  templates\n", "judge", "task", "yes/no",
                        "grade", "gap"))
        return -1;
    for (size_t i = 0; i < c->n_gaps; i++) {
        const arb_consistency_mode_gap *g = &c->gaps[i];
        size_t at = b->len;
        if (arb__buf_puts(b, "  ") || arb__buf_put_safe(b, g->judge) || pad_to(b, at + 2, 16))
            return -1;
        at = b->len;
        if (arb__buf_put_safe(b, g->task) || pad_to(b, at, 14) ||
            put_num(b, g->yesno_kappa, NUM_SIGNED, 9) || put_num(b, g->grade_kappa, NUM_SIGNED, 9) ||
            put_num(b, g->gap, NUM_SIGNED, 9) || arb__buf_puts(b, "  ") ||
            arb__buf_put_safe(b, g->yesno_template) || arb__buf_puts(b, " / ") ||
            arb__buf_put_safe(b, g->grade_template) || arb__buf_puts(b, "\n"))
            return -1;
    }
    return 0;
}

static int put_ensemble_text(arb__buf *b, const arb_consistency *c)
{
    size_t n = c->params.n_ensemble;
    if (n == 0) return 0;
    if (arb__buf_puts(b, "\nensemble: majority vote of")) return -1;
    for (size_t m = 0; m < n; m++)
        if (arb__buf_puts(b, m ? ", " : " ") || arb__buf_put_safe(b, c->ensemble_names[m]))
            return -1;
    if (arb__buf_puts(b, " per item and language (repetition 0),\na tie to the earliest judge "
                         "named; only instances (voted) every member judged validly;\nMin = "
                         "lowest member \xce\xba, Ens = \xce\xba of the vote, \xce\x94 = Ens - "
                         "Min; groups = the vote's groups in Fleiss' \xce\xba\n"))
        return -1;
    if (c->n_ens == 0)
        return arb__buf_puts(b, "  no task, mode and template was judged by every member\n");
    int ci = c->params.bootstrap > 0;
    if (arb__buf_printf(b, "  %-14s%-7s%9s%9s", "task", "mode", "Min", "Ens") ||
        (ci && arb__buf_printf(b, "%18s", "")) ||
        arb__buf_printf(b, "%10s%8s%8s%10s%6s  template\n", "\xce\x94", "groups", "voted",
                        "left out", "ties"))
        return -1;
    for (size_t i = 0; i < c->n_ens; i++) {
        const arb_consistency_ensemble *e = &c->ens[i];
        size_t at = b->len;
        if (arb__buf_puts(b, "  ") || arb__buf_put_safe(b, e->task) || pad_to(b, at + 2, 14) ||
            arb__buf_printf(b, "%-7s", e->mode) || put_num(b, e->min, NUM_SIGNED, 9) ||
            put_num(b, e->ens, NUM_SIGNED, 9) || (ci && put_ci(b, e->ens_ci, NUM_SIGNED)) ||
            put_num(b, e->delta, NUM_SIGNED, 9) ||
            arb__buf_printf(b, "%8zu%8zu%10zu%6zu  ", e->n_groups, e->n_instances,
                            e->n_instances_left_out, e->n_ties) ||
            arb__buf_put_safe(b, e->template_name) || arb__buf_puts(b, "\n"))
            return -1;
    }
    return 0;
}

/* Renders the rows as text tables, then Spearman, the mode gaps and the ensemble, with the
** choices a reader needs. Returns a string owned by the caller (arb_free), or NULL when out of
** memory or c is NULL. */
char *arb_consistency_to_text(const arb_consistency *c)
{
    if (!c) return NULL;
    arb__buf b;
    arb__buf_init(&b, 0);
    if (c->n_rows == 0) {
        if (arb__buf_puts(&b, "no pointwise judgments in the store (arbiter grade)\n")) goto fail;
        return arb__buf_steal(&b);
    }
    if (arb__buf_puts(&b, "cross-language consistency (METHODS \xc2\xa7" "8): each language is a "
                          "rater; a group is a parallel group as judged\nfor one answering "
                          "model. Fleiss' \xce\xba uses the groups with a valid value in every "
                          "language of the row\n(E is no category: a group with an E is left "
                          "out); repetition 0 only; accuracy and mean grade over\nvalid "
                          "judgments, E rate over all\n"))
        goto fail;
    for (size_t i = 0; i < c->n_rows; i++)
        if (arb__buf_puts(&b, "\n") || put_row_text(&b, c, &c->rows[i].pub)) goto fail;
    if (put_spearman_text(&b, c) || put_gaps_text(&b, c) || put_ensemble_text(&b, c) ||
        arb__logprobs_text(&b, c->logprobs, c->n_logprobs, 1))
        goto fail;
    if (c->params.bootstrap > 0 &&
        arb__buf_printf(&b, "\nintervals: %g%% percentile bootstrap, %zu resamples of parallel "
                            "groups, seed %llu\n",
                        100.0 * c->params.ci_level, c->params.bootstrap, c->params.seed))
        goto fail;
    return arb__buf_steal(&b);
fail:
    arb__buf_free(&b);
    return NULL;
}

/* ---- JSON --------------------------------------------------------------------------------- */

/* [lo, hi], or null when either is undefined. */
static json_t *json_ci(const double ci[2])
{
    if (!isfinite(ci[0]) || !isfinite(ci[1])) return json_null();
    json_t *a = json_array();
    if (!a || json_array_append_new(a, json_real(ci[0])) || json_array_append_new(a, json_real(ci[1]))) {
        json_decref(a);
        return NULL;
    }
    return a;
}

static json_t *json_count(size_t n) { return json_integer((json_int_t)n); }

static json_t *json_language(const arb_consistency *c, const arb_consistency_row *r,
                             const arb_consistency_language *l)
{
    int ci = c->params.bootstrap > 0, grade = !strcmp(r->mode, "grade");
    const char *score_key = grade ? "mean_grade" : "accuracy";
    json_t *o = json_object();
    if (!o || arb__json_set(o, "n", json_count(l->n)) ||
        arb__json_set(o, score_key, arb__json_metric(grade ? l->mean_grade : l->accuracy)) ||
        (ci && arb__json_set(o, grade ? "mean_grade_ci" : "accuracy_ci", json_ci(l->score_ci))) ||
        arb__json_set(o, "error_rate", arb__json_metric(l->error_rate)) ||
        arb__json_set(o, "n_errors", json_count(l->n_errors)) ||
        arb__json_set(o, "cohen_kappa_vs_reference", arb__json_metric(l->cohen_kappa_vs_reference)) ||
        (ci && arb__json_set(o, "cohen_kappa_vs_reference_ci", json_ci(l->kappa_ci))) ||
        arb__json_set(o, "n_vs_reference", json_count(l->n_vs_reference))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_row(const arb_consistency *c, const arb_consistency_row *r)
{
    int ci = c->params.bootstrap > 0;
    json_t *o = json_object(), *langs = json_array(), *per = json_object();
    if (!o || !langs || !per) goto fail;
    for (size_t j = 0; j < r->n_languages; j++) {
        /* the code as a JSON string (invalid UTF-8 made valid) also keys per_language */
        json_t *code = arb__json_name(r->languages[j].language);
        if (!code || json_array_append_new(langs, code) ||
            arb__json_set(per, json_string_value(code), json_language(c, r, &r->languages[j])))
            goto fail;
    }
    if (arb__json_set(o, "judge", arb__json_name(r->judge)) ||
        arb__json_set(o, "template", arb__json_name(r->template_name)) ||
        arb__json_set(o, "mode", json_string(r->mode)) ||
        arb__json_set(o, "task", arb__json_name(r->task)) ||
        arb__json_set(o, "n_groups", json_count(r->n_groups)) ||
        arb__json_set(o, "n_groups_left_out", json_count(r->n_groups_left_out)) ||
        arb__json_set(o, "n_groups_with_error", json_count(r->n_groups_with_error)) ||
        arb__json_set(o, "n_duplicates", json_count(r->n_duplicates)) ||
        arb__json_set(o, "n_other_reps", json_count(r->n_other_reps)))
        goto fail;
    if (arb__json_set(o, "languages", langs)) {
        langs = NULL;
        goto fail;
    }
    langs = NULL;
    if (arb__json_set(o, "fleiss_kappa", arb__json_metric(r->fleiss_kappa)) ||
        (ci && arb__json_set(o, "fleiss_kappa_ci", json_ci(r->fleiss_kappa_ci))) ||
        arb__json_set(o, "language_mean", arb__json_metric(r->language_mean)))
        goto fail;
    if (arb__json_set(o, "per_language", per)) per = NULL;
    else return o;
fail:
    json_decref(langs);
    json_decref(per);
    json_decref(o);
    return NULL;
}

static json_t *json_spearman(const arb_consistency_spearman *s)
{
    json_t *o = json_object();
    if (!o || arb__json_set(o, "task", arb__json_name(s->task)) ||
        arb__json_set(o, "mode", json_string(s->mode)) ||
        arb__json_set(o, "rho", arb__json_metric(s->rho)) ||
        arb__json_set(o, "n_judges", json_count(s->n_judges))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_gap(const arb_consistency_mode_gap *g)
{
    json_t *o = json_object();
    if (!o || arb__json_set(o, "judge", arb__json_name(g->judge)) ||
        arb__json_set(o, "task", arb__json_name(g->task)) ||
        arb__json_set(o, "yesno_template", arb__json_name(g->yesno_template)) ||
        arb__json_set(o, "grade_template", arb__json_name(g->grade_template)) ||
        arb__json_set(o, "yesno_kappa", arb__json_metric(g->yesno_kappa)) ||
        arb__json_set(o, "grade_kappa", arb__json_metric(g->grade_kappa)) ||
        arb__json_set(o, "gap", arb__json_metric(g->gap))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_ensemble(const arb_consistency *c, const arb_consistency_ensemble *e)
{
    json_t *o = json_object();
    if (!o || arb__json_set(o, "task", arb__json_name(e->task)) ||
        arb__json_set(o, "mode", json_string(e->mode)) ||
        arb__json_set(o, "template", arb__json_name(e->template_name)) ||
        arb__json_set(o, "members", arb__json_names(e->members, e->n_members)) ||
        arb__json_set(o, "min", arb__json_metric(e->min)) ||
        arb__json_set(o, "min_judge", e->min_judge ? arb__json_name(e->min_judge) : json_null()) ||
        arb__json_set(o, "ens", arb__json_metric(e->ens)) ||
        (c->params.bootstrap > 0 && arb__json_set(o, "ens_ci", json_ci(e->ens_ci))) ||
        arb__json_set(o, "delta", arb__json_metric(e->delta)) ||
        arb__json_set(o, "n_groups", json_count(e->n_groups)) ||
        arb__json_set(o, "n_groups_left_out", json_count(e->n_groups_left_out)) ||
        arb__json_set(o, "n_instances", json_count(e->n_instances)) ||
        arb__json_set(o, "n_instances_left_out", json_count(e->n_instances_left_out)) ||
        arb__json_set(o, "n_ties", json_count(e->n_ties))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Appends n elements made by make(i) to a new array set as root[key]. 0, or -1. */
static int set_list(json_t *root, const char *key, size_t n, json_t *(*make)(const void *, size_t),
                    const void *ctx)
{
    json_t *a = json_array();
    if (!a) return -1;
    for (size_t i = 0; i < n; i++)
        if (json_array_append_new(a, make(ctx, i))) {
            json_decref(a);
            return -1;
        }
    return arb__json_set(root, key, a);
}

static json_t *make_row(const void *ctx, size_t i)
{
    const arb_consistency *c = ctx;
    return json_row(c, &c->rows[i].pub);
}

static json_t *make_spearman(const void *ctx, size_t i)
{
    return json_spearman(&((const arb_consistency *)ctx)->spearman[i]);
}

static json_t *make_gap(const void *ctx, size_t i)
{
    return json_gap(&((const arb_consistency *)ctx)->gaps[i]);
}

static json_t *make_ensemble(const void *ctx, size_t i)
{
    const arb_consistency *c = ctx;
    return json_ensemble(c, &c->ens[i]);
}

/* Renders as pretty-printed JSON (keys in README, undefined values null). Returns a string
** owned by the caller (arb_free), or NULL when out of memory or c is NULL. */
char *arb_consistency_to_json(const arb_consistency *c)
{
    if (!c) return NULL;
    const arb_consistency_params *p = &c->params;
    char *text = NULL;
    json_t *root = json_object(), *boot = NULL;
    if (!root || arb__json_set(root, "arbiter_version", json_string(ARB_VERSION)) ||
        arb__json_set(root, "reference_language", arb__json_name(c->reference_language)) ||
        arb__json_set(root, "repetition", json_integer(0)))
        goto done;
    if (p->bootstrap > 0) {
        boot = json_object();
        if (!boot || arb__json_set(boot, "resamples", json_count(p->bootstrap)) ||
            arb__json_set(boot, "seed", json_integer((json_int_t)p->seed)) ||
            arb__json_set(boot, "level", json_real(p->ci_level)) ||
            arb__json_set(boot, "unit", json_string("parallel group")))
            goto done;
    } else {
        boot = json_null();
    }
    if (arb__json_set(root, "bootstrap", boot)) {
        boot = NULL;
        goto done;
    }
    boot = NULL;
    if (set_list(root, "rows", c->n_rows, make_row, c) ||
        set_list(root, "spearman", c->n_spearman, make_spearman, c) ||
        set_list(root, "mode_gap", c->n_gaps, make_gap, c) ||
        set_list(root, "ensemble", c->n_ens, make_ensemble, c) ||
        arb__json_set(root, "logprobs", arb__logprobs_json(c->logprobs, c->n_logprobs, 1)))
        goto done;
    /* 15 significant digits: 0.1 prints as 0.1, not 0.10000000000000001 */
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
done:
    json_decref(boot);
    json_decref(root);
    return text;
}
