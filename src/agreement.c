/*
** agreement.c -- judges compared with each other (METHODS §5): the mutual agreement of every
** pair of judges on the side-by-side instances they share, with ties included and excluded,
** and the disagreement histogram over the instances that every judge judged. A debate's final
** verdicts (METHODS §2.5, protocols "soft"/"hard") take part as one more judge.
**
** An instance is one (item, candidate, baseline, template, option mode, order, repetition):
** the same prompt shown to different judges. Two judges agree on an instance when they gave
** the same position verdict; E (no valid verdict) equals nothing, not even another E (as in
** §3's Con@ABCD). "Ties excluded" counts only the instances where both judges said A or B.
**
** Invariants: judges are reported in byte order of their names (strcmp), whatever order the
** store returns them in; the matrices are symmetric; a share with a zero denominator is NAN
** (null in JSON, "n/a" in text). Work is O(rows log rows): strings are interned to integers
** and the judgments sorted once by instance; for a million rows this takes a few tenths of a
** second, and reading the rows from SQLite takes longer than all of it (about 2 s in all).
**
** Not here: agreement with human labels (§4), chance-corrected coefficients (stats.c).
*/
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One stored judgment, its strings replaced by interned ids. */
typedef struct ag_judgment {
    uint32_t item, candidate, baseline, template_name; /* ids in the intern table */
    int32_t options, order, rep;
    uint32_t judge; /* id in the judge intern table (arrival order) */
    char verdict;   /* 'A'..'D', anything else counts as 'E' */
} ag_judgment;

/* Open-addressing table of distinct strings; ids are indices into strs (owned). */
typedef struct ag_intern {
    char **strs;
    size_t n, cap_strs;
    uint32_t *slots; /* id + 1; 0 = empty */
    size_t n_slots;  /* power of two */
} ag_intern;

struct arb_agreement {
    size_t n_judges;
    char **judges;          /* sorted by name (owned) */
    size_t *n_own;          /* instances judged by judge i */
    size_t *n_own_ab;       /* of which with verdict A or B */
    size_t *n_common;       /* K x K: instances judged by both i and j */
    size_t *n_same;         /* K x K: of which with the same valid verdict */
    size_t *n_common_ab;    /* K x K: instances where both said A or B */
    size_t *n_same_ab;      /* K x K: of which the same */
    size_t n_instances;     /* distinct instances */
    size_t n_all;           /* instances judged by every judge (disagreement base) */
    size_t *histogram;      /* K entries: instances with d disagreeing judges, d = 0..K-1 */
};

/* ---- interning ---------------------------------------------------------------------------- */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static void intern_free(ag_intern *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->strs[i]);
    free(t->strs);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static int intern_rehash(ag_intern *t, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots) return -1;
    for (size_t id = 0; id < t->n; id++) {
        size_t at = (size_t)fnv1a(t->strs[id]) & (n_slots - 1);
        while (slots[at]) at = (at + 1) & (n_slots - 1);
        slots[at] = (uint32_t)(id + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

/* Returns the id of s (copied on first sight), or -1 when out of memory or full. */
static int64_t intern(ag_intern *t, const char *s)
{
    if (!s) s = "";
    if ((t->n + 1) * 2 > t->n_slots && intern_rehash(t, t->n_slots ? t->n_slots * 2 : 64))
        return -1;
    size_t at = (size_t)fnv1a(s) & (t->n_slots - 1);
    while (t->slots[at]) {
        uint32_t id = t->slots[at] - 1;
        if (strcmp(t->strs[id], s) == 0) return id;
        at = (at + 1) & (t->n_slots - 1);
    }
    if (t->n >= UINT32_MAX - 1) return -1;
    if (t->n == t->cap_strs) {
        size_t cap = t->cap_strs ? t->cap_strs * 2 : 64;
        char **strs = realloc(t->strs, cap * sizeof *strs);
        if (!strs) return -1;
        t->strs = strs;
        t->cap_strs = cap;
    }
    char *copy = arb__strdup(s);
    if (!copy) return -1;
    t->strs[t->n] = copy;
    t->slots[at] = (uint32_t)(t->n + 1);
    return (int64_t)t->n++;
}

/* ---- reading the store -------------------------------------------------------------------- */

typedef struct ag_walk {
    ag_intern strings; /* item ids, model names, template names */
    ag_intern judges;
    ag_judgment *rows;
    size_t n_rows, cap_rows;
    /* the last strings seen per field: rows come grouped, so most lookups stop here */
    int64_t last_id[4];
    int nomem;
} ag_walk;

/* Interns s for field f, trying the field's last string first. */
static int64_t intern_field(ag_walk *w, int f, const char *s)
{
    if (!s) s = "";
    if (w->last_id[f] >= 0 && strcmp(w->strings.strs[w->last_id[f]], s) == 0)
        return w->last_id[f];
    int64_t id = intern(&w->strings, s);
    w->last_id[f] = id;
    return id;
}

static int on_row(void *ud, const arb__pairwise_row *p)
{
    ag_walk *w = ud;
    if (w->n_rows == w->cap_rows) {
        size_t cap = w->cap_rows ? w->cap_rows * 2 : 1024;
        ag_judgment *rows = realloc(w->rows, cap * sizeof *rows);
        if (!rows) goto nomem;
        w->rows = rows;
        w->cap_rows = cap;
    }
    int64_t item = intern_field(w, 0, p->item_id);
    int64_t cand = intern_field(w, 1, p->candidate);
    int64_t base = intern_field(w, 2, p->baseline);
    int64_t tpl = intern_field(w, 3, p->template_name);
    int64_t judge = intern(&w->judges, p->judge_name);
    if (item < 0 || cand < 0 || base < 0 || tpl < 0 || judge < 0) goto nomem;
    ag_judgment *j = &w->rows[w->n_rows++];
    j->item = (uint32_t)item;
    j->candidate = (uint32_t)cand;
    j->baseline = (uint32_t)base;
    j->template_name = (uint32_t)tpl;
    j->options = p->options;
    j->order = p->order;
    j->rep = p->rep;
    j->judge = (uint32_t)judge;
    j->verdict = p->position_verdict;
    return 0;
nomem:
    w->nomem = 1;
    return 1;
}

#define AG_CMP(field)                                                                          \
    if (a->field != b->field) return a->field < b->field ? -1 : 1
/* Orders judgments by instance, then judge (the order itself has no meaning beyond that). */
static int cmp_judgment(const void *x, const void *y)
{
    const ag_judgment *a = x, *b = y;
    AG_CMP(item);
    AG_CMP(candidate);
    AG_CMP(baseline);
    AG_CMP(template_name);
    AG_CMP(options);
    AG_CMP(order);
    AG_CMP(rep);
    AG_CMP(judge);
    return 0;
}
#undef AG_CMP

static int same_instance(const ag_judgment *a, const ag_judgment *b)
{
    return a->item == b->item && a->candidate == b->candidate && a->baseline == b->baseline &&
           a->template_name == b->template_name && a->options == b->options &&
           a->order == b->order && a->rep == b->rep;
}

static char norm_verdict(char v) { return (v >= 'A' && v <= 'D') ? v : 'E'; }
static int is_ab(char v) { return v == 'A' || v == 'B'; }

/* Sorts judge names; rank[id] receives the sorted position of judge id. */
typedef struct ag_name_idx {
    const char *name;
    size_t id;
} ag_name_idx;
static int cmp_name_idx(const void *x, const void *y)
{
    return strcmp(((const ag_name_idx *)x)->name, ((const ag_name_idx *)y)->name);
}

/* Allocates the result arrays for k judges. 0 ok, -1 out of memory. */
static int alloc_result(arb_agreement *ag, size_t k)
{
    ag->n_judges = k;
    size_t kk = k * k;
    ag->judges = calloc(k ? k : 1, sizeof *ag->judges);
    ag->n_own = calloc(k ? k : 1, sizeof *ag->n_own);
    ag->n_own_ab = calloc(k ? k : 1, sizeof *ag->n_own_ab);
    ag->histogram = calloc(k ? k : 1, sizeof *ag->histogram);
    ag->n_common = calloc(kk ? kk : 1, sizeof *ag->n_common);
    ag->n_same = calloc(kk ? kk : 1, sizeof *ag->n_same);
    ag->n_common_ab = calloc(kk ? kk : 1, sizeof *ag->n_common_ab);
    ag->n_same_ab = calloc(kk ? kk : 1, sizeof *ag->n_same_ab);
    return (ag->judges && ag->n_own && ag->n_own_ab && ag->histogram && ag->n_common &&
            ag->n_same && ag->n_common_ab && ag->n_same_ab)
               ? 0
               : -1;
}

/* Counts one instance: judges[0..m) (sorted positions) with their verdicts. */
static void count_instance(arb_agreement *ag, const size_t *judges, const char *verdicts,
                           size_t m)
{
    size_t k = ag->n_judges;
    ag->n_instances++;
    for (size_t a = 0; a < m; a++) {
        size_t i = judges[a];
        ag->n_own[i]++;
        if (is_ab(verdicts[a])) ag->n_own_ab[i]++;
        for (size_t b = a + 1; b < m; b++) {
            size_t j = judges[b];
            /* §5 mutual agreement: identical verdicts, E equal to nothing */
            int same = verdicts[a] == verdicts[b] && verdicts[a] != 'E';
            int both_ab = is_ab(verdicts[a]) && is_ab(verdicts[b]);
            ag->n_common[i * k + j]++;
            ag->n_common[j * k + i]++;
            if (same) {
                ag->n_same[i * k + j]++;
                ag->n_same[j * k + i]++;
            }
            if (both_ab) {
                ag->n_common_ab[i * k + j]++;
                ag->n_common_ab[j * k + i]++;
                if (same) {
                    ag->n_same_ab[i * k + j]++;
                    ag->n_same_ab[j * k + i]++;
                }
            }
        }
    }
    /* §5 disagreement, over the instances every judge judged (each judge at most once: the
    ** store is unique on judge and instance). The majority verdict is the most frequent one;
    ** here E counts as a verdict of its own, so judges who all failed do not disagree. When
    ** two verdicts share the top count either is the majority: the count is the same. */
    if (k >= 2 && m == k) {
        size_t counts[5] = {0};
        size_t top = 0;
        for (size_t a = 0; a < m; a++) {
            size_t c = ++counts[verdicts[a] - 'A'];
            if (c > top) top = c;
        }
        ag->histogram[k - top]++;
        ag->n_all++;
    }
}

/* Compares the judges in the store's side-by-side judgments. *out is owned by the caller
** (arb_agreement_destroy); on failure it is NULL and arb_store_errmsg(store) says why. A store
** with no judgments gives a result with no judges. */
arb_status arb_agreement_compute(arb_store *store, arb_agreement **out)
{
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!store) return ARB_INVALID;

    arb_status st = ARB_OK;
    ag_walk w;
    memset(&w, 0, sizeof w);
    for (int f = 0; f < 4; f++) w.last_id[f] = -1;
    ag_name_idx *names = NULL;
    size_t *rank = NULL, *group_judges = NULL;
    char *group_verdicts = NULL;
    arb_agreement *ag = calloc(1, sizeof *ag);
    if (!ag) goto nomem;

    /* A debate's final verdicts (§2.5) count as one more judge, "soft(a1,a2,j)" or
    ** "hard(...)", on the same instances (agent 1's template). */
    static const char *const protocols[] = {"sbs", "soft", "hard"};
    for (size_t i = 0; i < sizeof protocols / sizeof *protocols; i++) {
        st = arb__store_each_pairwise(store, protocols[i], on_row, &w);
        if (w.nomem) goto nomem;
        if (st != ARB_OK) goto done;
    }

    size_t k = w.judges.n;
    if (alloc_result(ag, k)) goto nomem;
    names = calloc(k ? k : 1, sizeof *names);
    rank = calloc(k ? k : 1, sizeof *rank);
    group_judges = calloc(k ? k : 1, sizeof *group_judges);
    group_verdicts = calloc(k ? k : 1, 1);
    if (!names || !rank || !group_judges || !group_verdicts) goto nomem;
    for (size_t id = 0; id < k; id++) names[id] = (ag_name_idx){w.judges.strs[id], id};
    qsort(names, k, sizeof *names, cmp_name_idx);
    for (size_t pos = 0; pos < k; pos++) {
        rank[names[pos].id] = pos;
        ag->judges[pos] = w.judges.strs[names[pos].id];
        w.judges.strs[names[pos].id] = NULL; /* now owned by ag */
    }

    if (w.n_rows) qsort(w.rows, w.n_rows, sizeof *w.rows, cmp_judgment);
    for (size_t start = 0; start < w.n_rows;) {
        size_t end = start, m = 0;
        while (end < w.n_rows && same_instance(&w.rows[start], &w.rows[end])) {
            /* the store's unique key makes a judge appear once per instance; should it not,
            ** the first row stands and the repeat is ignored */
            if (m == 0 || w.rows[end].judge != w.rows[end - 1].judge) {
                group_judges[m] = rank[w.rows[end].judge];
                group_verdicts[m] = norm_verdict(w.rows[end].verdict);
                m++;
            }
            end++;
        }
        count_instance(ag, group_judges, group_verdicts, m);
        start = end;
    }
    goto done;

nomem:
    st = arb__store_fail(store, ARB_NOMEM, "agreement: out of memory");
done:
    free(names);
    free(rank);
    free(group_judges);
    free(group_verdicts);
    free(w.rows);
    intern_free(&w.strings);
    intern_free(&w.judges); /* strings moved to ag were set to NULL */
    if (st != ARB_OK) {
        arb_agreement_destroy(ag);
        return st;
    }
    *out = ag;
    return ARB_OK;
}

/* Frees the result and its strings. Accepts NULL. */
void arb_agreement_destroy(arb_agreement *ag)
{
    if (!ag) return;
    if (ag->judges)
        for (size_t i = 0; i < ag->n_judges; i++) free(ag->judges[i]);
    free(ag->judges);
    free(ag->n_own);
    free(ag->n_own_ab);
    free(ag->n_common);
    free(ag->n_same);
    free(ag->n_common_ab);
    free(ag->n_same_ab);
    free(ag->histogram);
    free(ag);
}

/* Returns the number of judges (0 for NULL). */
size_t arb_agreement_judge_count(const arb_agreement *ag) { return ag ? ag->n_judges : 0; }

/* Returns judge i's name (borrowed from ag; judges are in strcmp order), or NULL. */
const char *arb_agreement_judge(const arb_agreement *ag, size_t i)
{
    return ag && i < ag->n_judges ? ag->judges[i] : NULL;
}

/* Returns the mutual agreement of judges i and j (§5). The diagonal is a judge compared with
** itself: 1 over its own instances (with ties excluded, over those where it said A or B), so
** *n_common reports how many instances the judge has; NAN when it has none. Out-of-range
** indices give NAN and *n_common = 0. */
double arb_agreement_value(const arb_agreement *ag, size_t i, size_t j, int ties_included,
                           size_t *n_common)
{
    if (n_common) *n_common = 0;
    if (!ag || i >= ag->n_judges || j >= ag->n_judges) return NAN;
    size_t n, same;
    if (i == j) {
        n = ties_included ? ag->n_own[i] : ag->n_own_ab[i];
        same = n;
    } else {
        size_t at = i * ag->n_judges + j;
        n = ties_included ? ag->n_common[at] : ag->n_common_ab[at];
        same = ties_included ? ag->n_same[at] : ag->n_same_ab[at];
    }
    if (n_common) *n_common = n;
    return n ? (double)same / (double)n : NAN;
}

/* ---- text --------------------------------------------------------------------------------- */

static int digits_of(size_t n)
{
    int d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

/* One matrix: rows and columns are judge numbers [i]; a cell is "share (n)", right-aligned,
** the diagonal "- (n)" with the judge's own count. */
static int put_matrix(arb__buf *b, const arb_agreement *ag, int ties_included, int nw)
{
    size_t k = ag->n_judges;
    int cell = 6 + 2 + nw + 1; /* "100.0%", " (", n, ")" */
    int label = 2 + digits_of(k);
    if (arb__buf_printf(b, "  %*s", label, "")) return -1;
    for (size_t j = 0; j < k; j++) {
        char head[32];
        snprintf(head, sizeof head, "[%zu]", j + 1);
        if (arb__buf_printf(b, "  %*s", cell, head)) return -1;
    }
    if (arb__buf_puts(b, "\n")) return -1;
    for (size_t i = 0; i < k; i++) {
        char head[32];
        snprintf(head, sizeof head, "[%zu]", i + 1);
        if (arb__buf_printf(b, "  %-*s", label, head)) return -1;
        for (size_t j = 0; j < k; j++) {
            size_t n;
            double v = arb_agreement_value(ag, i, j, ties_included, &n);
            char text[64];
            if (i == j) snprintf(text, sizeof text, "- (%zu)", n);
            else if (isnan(v)) snprintf(text, sizeof text, "n/a (%zu)", n);
            else snprintf(text, sizeof text, "%.1f%% (%zu)", 100.0 * v, n);
            if (arb__buf_printf(b, "  %*s", cell, text)) return -1;
        }
        if (arb__buf_puts(b, "\n")) return -1;
    }
    return 0;
}

static int put_text(arb__buf *b, const arb_agreement *ag)
{
    size_t k = ag->n_judges;
    if (k < 2) {
        if (k == 0) return arb__buf_puts(b, "no side-by-side judgments in the store: nothing to "
                                            "compare\n");
        return arb__buf_puts(b, "only one judge (") || arb__buf_put_safe(b, ag->judges[0]) ||
               arb__buf_printf(b, ", %zu instances) in the store: agreement needs at least two "
                                  "judges\n",
                               ag->n_own[0]);
    }
    size_t max_n = 1;
    for (size_t i = 0; i < k; i++)
        if (ag->n_own[i] > max_n) max_n = ag->n_own[i];
    int nw = digits_of(max_n);

    if (arb__buf_printf(b, "%zu judges on %zu side-by-side instances (item, candidate, baseline, "
                           "template, options, order, rep)\n",
                        k, ag->n_instances))
        return -1;
    for (size_t i = 0; i < k; i++) {
        if (arb__buf_printf(b, "  [%zu] ", i + 1) || arb__buf_put_safe(b, ag->judges[i]) ||
            arb__buf_printf(b, "  (%zu instances)\n", ag->n_own[i]))
            return -1;
    }
    if (arb__buf_puts(b, "\nMutual agreement, ties included: share of common instances with the "
                         "same verdict\n(E equals nothing); in brackets the common instances\n") ||
        put_matrix(b, ag, 1, nw) ||
        arb__buf_puts(b, "\nMutual agreement, ties excluded: only instances where both judges "
                         "said A or B\n") ||
        put_matrix(b, ag, 0, nw))
        return -1;

    if (arb__buf_printf(b, "\nDisagreement over the %zu instances judged by all %zu judges: how "
                           "many judges differ\nfrom the majority verdict (E counts as a verdict "
                           "of its own)\n",
                        ag->n_all, k))
        return -1;
    if (ag->n_all == 0) return arb__buf_puts(b, "  no instance was judged by every judge\n");
    int cw = digits_of(ag->n_all);
    if (cw < 5) cw = 5;
    if (arb__buf_printf(b, "  %11s  %*s  %7s  %10s\n", "disagreeing", cw, "count", "share",
                        "cumulative"))
        return -1;
    size_t cum = 0;
    for (size_t d = 0; d < k; d++) {
        cum += ag->histogram[d];
        if (arb__buf_printf(b, "  %11zu  %*zu  %6.1f%%  %9.1f%%\n", d, cw, ag->histogram[d],
                            100.0 * (double)ag->histogram[d] / (double)ag->n_all,
                            100.0 * (double)cum / (double)ag->n_all))
            return -1;
    }
    return 0;
}

/* Renders the judges, the two agreement matrices and the disagreement histogram as text.
** Returns a string owned by the caller (arb_free), or NULL when out of memory or ag is NULL. */
char *arb_agreement_to_text(const arb_agreement *ag)
{
    if (!ag) return NULL;
    arb__buf b;
    arb__buf_init(&b, 0);
    if (put_text(&b, ag)) {
        arb__buf_free(&b);
        return NULL;
    }
    return arb__buf_steal(&b);
}

/* ---- JSON --------------------------------------------------------------------------------- */


/* Appends to arr (stolen value); returns nonzero on failure. */
static int append(json_t *arr, json_t *v) { return !v || json_array_append_new(arr, v); }

static json_t *json_pair(const arb_agreement *ag, size_t i, size_t j)
{
    size_t n_all, n_ab;
    double all = arb_agreement_value(ag, i, j, 1, &n_all);
    double ab = arb_agreement_value(ag, i, j, 0, &n_ab);
    json_t *o = json_object();
    if (!o) return NULL;
    if (json_object_set_new(o, "judge1", arb__json_name(ag->judges[i])) ||
        json_object_set_new(o, "judge2", arb__json_name(ag->judges[j])) ||
        json_object_set_new(o, "n_common", json_integer((json_int_t)n_all)) ||
        json_object_set_new(o, "agreement", arb__json_metric(all)) ||
        json_object_set_new(o, "n_common_no_ties", json_integer((json_int_t)n_ab)) ||
        json_object_set_new(o, "agreement_no_ties", arb__json_metric(ab))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_disagreement(const arb_agreement *ag)
{
    size_t k = ag->n_judges;
    json_t *o = json_object();
    json_t *hist = json_array();
    if (!o || !hist) goto fail;
    double n = (double)ag->n_all;
    size_t cum = 0;
    for (size_t d = 0; d < k; d++) {
        cum += ag->histogram[d];
        json_t *h = json_object();
        if (!h) goto fail;
        if (json_object_set_new(h, "disagreeing", json_integer((json_int_t)d)) ||
            json_object_set_new(h, "count", json_integer((json_int_t)ag->histogram[d])) ||
            json_object_set_new(h, "share",
                                arb__json_metric(ag->n_all ? (double)ag->histogram[d] / n : NAN)) ||
            json_object_set_new(h, "cumulative_share",
                                arb__json_metric(ag->n_all ? (double)cum / n : NAN))) {
            json_decref(h);
            goto fail;
        }
        if (append(hist, h)) goto fail;
    }
    if (json_object_set_new(o, "n_instances", json_integer((json_int_t)ag->n_all)) ||
        json_object_set_new(o, "n_judges", json_integer((json_int_t)k)))
        goto fail;
    if (json_object_set_new(o, "histogram", hist)) {
        hist = NULL;
        goto fail;
    }
    return o;
fail:
    json_decref(hist);
    json_decref(o);
    return NULL;
}

/* Renders the result as pretty-printed JSON: judges, one entry per unordered pair of judges,
** and the disagreement histogram (null with fewer than two judges). Returns a string owned by
** the caller (arb_free), or NULL when out of memory or ag is NULL. */
char *arb_agreement_to_json(const arb_agreement *ag)
{
    if (!ag) return NULL;
    char *text = NULL;
    json_t *root = json_object();
    json_t *judges = json_array();
    json_t *pairs = json_array();
    if (!root || !judges || !pairs) goto done;
    for (size_t i = 0; i < ag->n_judges; i++)
        if (append(judges, arb__json_name(ag->judges[i]))) goto done;
    for (size_t i = 0; i < ag->n_judges; i++)
        for (size_t j = i + 1; j < ag->n_judges; j++)
            if (append(pairs, json_pair(ag, i, j))) goto done;
    json_t *dis = ag->n_judges >= 2 ? json_disagreement(ag) : json_null();
    if (!dis) goto done;
    int bad = json_object_set_new(root, "arbiter_version", json_string(ARB_VERSION));
    bad |= json_object_set_new(root, "judges", judges);
    bad |= json_object_set_new(root, "agreement", pairs);
    judges = pairs = NULL; /* stolen, even on failure */
    bad |= json_object_set_new(root, "disagreement", dis);
    if (bad) goto done;
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
done:
    json_decref(judges);
    json_decref(pairs);
    json_decref(root);
    return text;
}
