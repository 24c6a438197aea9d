/*
** audit.c -- the judge audit of the side-by-side protocol: verdict shares per run (METHODS
** §2.2), the position-bias metrics PBias@AB, Con@ABCD and PCon@AB (§3) and the error rate (§5),
** one row per (judge, candidate, baseline, template, options) found in the store, rendered as
** text tables for people or as JSON for programs.
**
** Invariants: a metric with a zero denominator is NAN in memory, "n/a" in text and null in
** JSON, never a guess. E (no valid verdict) is counted in the shares and the error rate and
** never equals anything. Text output never carries control characters from names (judge and
** model names are untrusted), so a name cannot drive the reader's terminal.
**
** Not here: running the protocol (sbs.c), window series and agreement with experts (§3.1, §4),
** the other §5 metrics (position consistency, fairness), which need their own definitions.
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One stored judgment of a comparison, kept until the comparison is complete. */
typedef struct audit_judgment {
    const char *item_id; /* owned by the comparison's item_ids list */
    int rep;
    int order;
    char position_verdict;
} audit_judgment;

/* One comparison (an audit row) while the store is walked. */
typedef struct audit_group {
    audit_judgment *judgments;
    size_t n_judgments, cap_judgments;
    char **item_ids; /* item ids in arrival order, one copy per run of rows (owned) */
    size_t n_item_ids, cap_item_ids;
} audit_group;

struct arb_audit {
    arb_audit_row *rows; /* strings owned by the audit */
    audit_group *groups; /* only during arb_audit_compute */
    size_t n_rows, cap_rows;
};

/* ---- metrics ------------------------------------------------------------------------------ */

static arb_verdict_shares shares_of(const size_t counts[5], size_t total)
{
    arb_verdict_shares s;
    if (total == 0) {
        s.a = s.b = s.c = s.d = s.e = NAN;
        return s;
    }
    s.a = (double)counts[0] / (double)total;
    s.b = (double)counts[1] / (double)total;
    s.c = (double)counts[2] / (double)total;
    s.d = (double)counts[3] / (double)total;
    s.e = (double)counts[4] / (double)total;
    return s;
}

/* Mean of the two runs' shares (§2.2: "averaged over the two runs"); a run without judgments
** (all NAN) does not pull the mean to NAN, the other run stands alone. */
static double mean_share(double x0, double x1)
{
    if (isnan(x0)) return x1;
    if (isnan(x1)) return x0;
    return (x0 + x1) / 2.0;
}

/* Index 0..4 of a model verdict a..e. */
static int verdict_index(char model_verdict)
{
    return (model_verdict >= 'a' && model_verdict <= 'd') ? model_verdict - 'a' : 4;
}

/* Fills every field of out except n_items, which only the caller can know (pairs do not carry
** item ids). pairs is borrowed. */
void arb_sbs_metrics_compute(const arb_sbs_pair *pairs, size_t n, arb_sbs_metrics *out)
{
    size_t counts[2][5] = {{0}};
    size_t present[2] = {0, 0};
    size_t n_errors = 0;
    size_t bm = 0;              /* |BM|: pairs with both runs */
    size_t first[2] = {0, 0};   /* #(P_r = A) over BM */
    size_t ab[2] = {0, 0};      /* #(P_r in {A,B}) over BM */
    size_t same = 0;            /* #(J0 = J1, neither e) */
    size_t same_ab = 0;         /* #(J0 = J1 in {a,b}) */
    size_t either_ab = 0;       /* #(J0 in {a,b} or J1 in {a,b}) */

    for (size_t i = 0; i < n; i++) {
        char p[2] = {pairs[i].p0, pairs[i].p1};
        char j[2] = {0, 0};
        for (int r = 0; r < 2; r++) {
            if (p[r] == 0) continue;
            j[r] = arb_verdict_to_model(p[r], r); /* §2.2 */
            counts[r][verdict_index(j[r])]++;
            present[r]++;
            if (j[r] == 'e') n_errors++;
        }
        if (p[0] == 0 || p[1] == 0) continue;
        bm++;
        for (int r = 0; r < 2; r++) {
            if (p[r] == 'A') first[r]++;
            if (p[r] == 'A' || p[r] == 'B') ab[r]++;
        }
        /* §3 Con@ABCD: E never equals anything, not even another E. */
        if (j[0] == j[1] && j[0] != 'e') same++;
        /* §3 PCon@AB */
        int ab0 = j[0] == 'a' || j[0] == 'b';
        int ab1 = j[1] == 'a' || j[1] == 'b';
        if (ab0 || ab1) either_ab++;
        if (ab0 && j[0] == j[1]) same_ab++;
    }

    out->n_pairs = bm;
    out->n_judgments = present[0] + present[1];
    out->run0 = shares_of(counts[0], present[0]);
    out->run1 = shares_of(counts[1], present[1]);
    out->mean.a = mean_share(out->run0.a, out->run1.a);
    out->mean.b = mean_share(out->run0.b, out->run1.b);
    out->mean.c = mean_share(out->run0.c, out->run1.c);
    out->mean.d = mean_share(out->run0.d, out->run1.d);
    out->mean.e = mean_share(out->run0.e, out->run1.e);

    /* §3 PBias@AB = Σ_r #(P_r = A)/#(P_r ∈ {A,B}) − 1. Departure from the letter of §3, which
    ** counts each run over all its judgments: we count over BM, so both runs cover the same
    ** items and a run with extra items cannot fake a bias. */
    if (ab[0] == 0 || ab[1] == 0)
        out->pbias_ab = NAN;
    else
        out->pbias_ab = (double)first[0] / (double)ab[0] + (double)first[1] / (double)ab[1] - 1.0;
    /* §3 Con@ABCD = #(J0 = J1) / |BM| */
    out->con_abcd = bm ? (double)same / (double)bm : NAN;
    /* §3 PCon@AB = #(J0 = J1 ∈ {a,b}) / #(J0 ∈ {a,b} or J1 ∈ {a,b}) */
    out->pcon_ab = either_ab ? (double)same_ab / (double)either_ab : NAN;
    /* §5 error rate = #E / all judgments (both runs, with or without their partner) */
    out->error_rate = out->n_judgments ? (double)n_errors / (double)out->n_judgments : NAN;
}

/* ---- the audit object --------------------------------------------------------------------- */

static void group_free(audit_group *g)
{
    for (size_t i = 0; i < g->n_item_ids; i++) free(g->item_ids[i]);
    free(g->item_ids);
    free(g->judgments);
}

static void row_free(arb_audit_row *r)
{
    free((char *)r->judge);
    free((char *)r->candidate);
    free((char *)r->baseline);
    free((char *)r->template_name);
}

/* Frees the audit and every string in it. Accepts NULL. */
void arb_audit_destroy(arb_audit *audit)
{
    if (!audit) return;
    for (size_t i = 0; i < audit->n_rows; i++) {
        row_free(&audit->rows[i]);
        if (audit->groups) group_free(&audit->groups[i]);
    }
    free(audit->rows);
    free(audit->groups);
    free(audit);
}

/* Returns the number of rows (comparisons); 0 for NULL. */
size_t arb_audit_count(const arb_audit *audit) { return audit ? audit->n_rows : 0; }

/* Returns row index (borrowed from the audit), or NULL when out of range. */
const arb_audit_row *arb_audit_row_at(const arb_audit *audit, size_t index)
{
    if (!audit || index >= audit->n_rows) return NULL;
    return &audit->rows[index];
}

/* ---- computing from the store ------------------------------------------------------------- */

typedef struct audit_walk {
    arb_audit *audit;
    size_t current; /* index of the row the last judgment went to; n_rows when none */
    int nomem;
} audit_walk;

static int same_key(const arb_audit_row *r, const arb__pairwise_row *p)
{
    return r->options == p->options && strcmp(r->judge, p->judge_name) == 0 &&
           strcmp(r->candidate, p->candidate) == 0 && strcmp(r->baseline, p->baseline) == 0 &&
           strcmp(r->template_name, p->template_name) == 0;
}

/* Grows *arr (of elem bytes each) so it holds at least need elements. 0 ok, -1 no memory. */
static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t new_cap = *cap ? *cap * 2 : 16;
    while (new_cap < need) new_cap *= 2;
    void *p = realloc(*arr, new_cap * elem);
    if (!p) return -1;
    *arr = p;
    *cap = new_cap;
    return 0;
}

/* Returns the row for p's comparison, creating it when new, or SIZE_MAX when out of memory.
** Rows arrive grouped by comparison (store.c's order), so the last row is checked first; the
** linear search keeps the result right even if that order were ever loosened. */
static size_t find_or_add_row(audit_walk *w, const arb__pairwise_row *p)
{
    arb_audit *a = w->audit;
    if (w->current < a->n_rows && same_key(&a->rows[w->current], p)) return w->current;
    for (size_t i = 0; i < a->n_rows; i++)
        if (same_key(&a->rows[i], p)) return i;

    size_t cap = a->cap_rows;
    if (grow((void **)&a->rows, &cap, a->n_rows + 1, sizeof *a->rows)) return SIZE_MAX;
    if (cap != a->cap_rows) {
        audit_group *g = realloc(a->groups, cap * sizeof *g);
        if (!g) return SIZE_MAX; /* rows grew but cap_rows did not: retried consistently */
        a->groups = g;
        a->cap_rows = cap;
    }
    arb_audit_row *r = &a->rows[a->n_rows];
    memset(r, 0, sizeof *r);
    memset(&a->groups[a->n_rows], 0, sizeof a->groups[0]);
    r->options = p->options;
    r->judge = arb__strdup(p->judge_name);
    r->candidate = arb__strdup(p->candidate);
    r->baseline = arb__strdup(p->baseline);
    r->template_name = arb__strdup(p->template_name);
    if (!r->judge || !r->candidate || !r->baseline || !r->template_name) {
        row_free(r);
        return SIZE_MAX;
    }
    return a->n_rows++;
}

/* Returns the group's copy of item_id, or NULL when out of memory. Rows of one item arrive
** together (store.c's order), so only the last id is reused; should an item ever come back
** later it gets a second copy, and finish_group still counts it once (it compares text). */
static const char *intern_item(audit_group *g, const char *item_id)
{
    if (g->n_item_ids > 0 && strcmp(g->item_ids[g->n_item_ids - 1], item_id) == 0)
        return g->item_ids[g->n_item_ids - 1];
    if (grow((void **)&g->item_ids, &g->cap_item_ids, g->n_item_ids + 1, sizeof *g->item_ids))
        return NULL;
    char *copy = arb__strdup(item_id);
    if (!copy) return NULL;
    g->item_ids[g->n_item_ids++] = copy;
    return copy;
}

static int on_pairwise_row(void *ud, const arb__pairwise_row *p)
{
    audit_walk *w = ud;
    size_t idx = find_or_add_row(w, p);
    if (idx == SIZE_MAX) goto nomem;
    w->current = idx;
    audit_group *g = &w->audit->groups[idx];
    const char *item = intern_item(g, p->item_id);
    if (!item) goto nomem;
    if (grow((void **)&g->judgments, &g->cap_judgments, g->n_judgments + 1, sizeof *g->judgments))
        goto nomem;
    audit_judgment *j = &g->judgments[g->n_judgments++];
    j->item_id = item;
    j->rep = p->rep;
    j->order = p->order;
    j->position_verdict = p->position_verdict ? p->position_verdict : 'E';
    return 0;
nomem:
    w->nomem = 1;
    return 1;
}

static int cmp_judgment(const void *x, const void *y)
{
    const audit_judgment *a = x, *b = y;
    int c = a->item_id == b->item_id ? 0 : strcmp(a->item_id, b->item_id);
    if (c != 0) return c;
    if (a->rep != b->rep) return a->rep < b->rep ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* Builds the judgment pairs of one comparison (one per (item, rep), §1) and its metrics.
** Returns 0, or -1 when out of memory. */
static int finish_group(arb_audit_row *r, audit_group *g)
{
    qsort(g->judgments, g->n_judgments, sizeof *g->judgments, cmp_judgment);
    arb_sbs_pair *pairs = calloc(g->n_judgments ? g->n_judgments : 1, sizeof *pairs);
    if (!pairs) return -1;
    size_t n = 0, n_items = 0;
    for (size_t i = 0; i < g->n_judgments; i++) {
        const audit_judgment *j = &g->judgments[i];
        int new_item = i == 0 || (j->item_id != g->judgments[i - 1].item_id &&
                                  strcmp(j->item_id, g->judgments[i - 1].item_id) != 0);
        if (new_item) n_items++;
        if (new_item || j->rep != g->judgments[i - 1].rep) n++;
        /* order is 0 or 1 by the store's contract; anything else is not a run of §2.2 */
        if (j->order == 0) pairs[n - 1].p0 = j->position_verdict;
        else if (j->order == 1) pairs[n - 1].p1 = j->position_verdict;
    }
    /* a (item, rep) whose only rows had an unknown order is no judgment at all: drop it */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (pairs[i].p0 || pairs[i].p1) pairs[kept++] = pairs[i];
    arb_sbs_metrics_compute(pairs, kept, &r->m);
    free(pairs);
    r->m.n_items = n_items; /* items with at least one judgment */
    return 0;
}

/* Walks the "sbs" rows of the store and computes one row per (judge, candidate, baseline,
** template, options), in the store's order. *out is owned by the caller (arb_audit_destroy).
** An empty store gives an audit with no rows. On failure *out is NULL and the reason is in
** arb_store_errmsg(store). */
arb_status arb_audit_compute(arb_store *store, arb_audit **out)
{
    arb_status st = ARB_OK;
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!store) return ARB_INVALID;

    arb_audit *audit = calloc(1, sizeof *audit);
    if (!audit) {
        arb__store_fail(store, ARB_NOMEM, "audit: out of memory");
        return ARB_NOMEM;
    }
    audit_walk w = {audit, 0, 0};

    st = arb__store_each_pairwise(store, "sbs", on_pairwise_row, &w);
    if (w.nomem) {
        arb__store_fail(store, ARB_NOMEM, "audit: out of memory");
        st = ARB_NOMEM;
        goto done;
    }
    if (st != ARB_OK) goto done;
    for (size_t i = 0; i < audit->n_rows; i++) {
        if (finish_group(&audit->rows[i], &audit->groups[i])) {
            arb__store_fail(store, ARB_NOMEM, "audit: out of memory");
        st = ARB_NOMEM;
            goto done;
        }
    }

done:
    if (st != ARB_OK) {
        arb_audit_destroy(audit);
        return st;
    }
    /* the judgments were only needed to build the pairs */
    for (size_t i = 0; i < audit->n_rows; i++) group_free(&audit->groups[i]);
    free(audit->groups);
    audit->groups = NULL;
    *out = audit;
    return ARB_OK;
}

/* ---- text --------------------------------------------------------------------------------- */

/* Appends name for a terminal: control characters (C0, DEL, and the C1 controls U+0080..U+009F,
** which some terminals also obey) and bytes that are not valid UTF-8 become '?', so an
** untrusted name cannot inject escape sequences. Returns 0, or -1 when out of memory. */
static int put_safe(arb__buf *b, const char *name)
{
    size_t len = strlen(name);
    size_t pos = 0;
    while (pos < len) {
        size_t bad = len - pos;
        if (arb__utf8_valid(name + pos, len - pos, &bad)) bad = len - pos;
        for (size_t i = pos; i < pos + bad; i++) {
            unsigned char c = (unsigned char)name[i];
            if (c < 0x20 || c == 0x7f) {
                if (arb__buf_append(b, "?", 1)) return -1;
            } else if (c == 0xc2 && i + 1 < pos + bad && (unsigned char)name[i + 1] >= 0x80 &&
                       (unsigned char)name[i + 1] <= 0x9f) {
                if (arb__buf_append(b, "?", 1)) return -1;
                i++;
            } else if (arb__buf_append(b, &name[i], 1)) {
                return -1;
            }
        }
        pos += bad;
        if (pos < len) { /* the invalid byte itself */
            if (arb__buf_append(b, "?", 1)) return -1;
            pos++;
        }
    }
    return 0;
}

/* Appends a share as a right-aligned percentage ("  45.0%") or "n/a". */
static int put_percent(arb__buf *b, double x, int width)
{
    if (isnan(x)) return arb__buf_printf(b, "%*s", width, "n/a");
    return arb__buf_printf(b, "%*.1f%%", width - 1, 100.0 * x);
}

static int put_shares_line(arb__buf *b, const char *label, const arb_verdict_shares *s)
{
    if (arb__buf_printf(b, "  %-6s", label)) return -1;
    const double v[5] = {s->a, s->b, s->c, s->d, s->e};
    for (int i = 0; i < 5; i++)
        if (put_percent(b, v[i], 8)) return -1;
    return arb__buf_puts(b, "\n");
}

static int put_row_text(arb__buf *b, const arb_audit_row *r)
{
    const arb_sbs_metrics *m = &r->m;
    if (arb__buf_puts(b, "judge ") || put_safe(b, r->judge) ||
        arb__buf_puts(b, " \xc2\xb7 candidate ") || put_safe(b, r->candidate) ||
        arb__buf_puts(b, " vs baseline ") || put_safe(b, r->baseline) ||
        arb__buf_puts(b, " \xc2\xb7 template ") || put_safe(b, r->template_name) ||
        arb__buf_printf(b, " \xc2\xb7 %d-option\n\n", r->options))
        return -1;

    /* §2.2 verdict shares per run and averaged */
    if (arb__buf_printf(b, "  %-6s%8s%8s%8s%8s%8s\n", "", "a", "b", "c", "d", "e") ||
        put_shares_line(b, "run 0", &m->run0) || put_shares_line(b, "run 1", &m->run1) ||
        put_shares_line(b, "mean", &m->mean) ||
        arb__buf_puts(b, "  a = candidate better, b = baseline better, c = both good (tie in "
                         "3-option), d = both bad, e = invalid\n\n"))
        return -1;

    /* §3 and §5 metrics, each with what it means */
    if (arb__buf_printf(b, "  %-12s", "PBias@AB")) return -1;
    if (isnan(m->pbias_ab) ? arb__buf_printf(b, "%8s", "n/a")
                           : arb__buf_printf(b, "%+8.3f", m->pbias_ab))
        return -1;
    if (arb__buf_puts(b, "  position bias (> 0 favours the first position)\n")) return -1;
    if (arb__buf_printf(b, "  %-12s", "Con@ABCD") || put_percent(b, m->con_abcd, 8) ||
        arb__buf_puts(b, "  pairs with the same verdict in both orders\n"))
        return -1;
    if (arb__buf_printf(b, "  %-12s", "PCon@AB") || put_percent(b, m->pcon_ab, 8) ||
        arb__buf_puts(b, "  of pairs with a or b in either order, those with the same a/b\n"))
        return -1;
    if (arb__buf_printf(b, "  %-12s", "error rate") || put_percent(b, m->error_rate, 8) ||
        arb__buf_puts(b, "  judgments without a valid verdict (E)\n"))
        return -1;
    return arb__buf_printf(b, "\n  items %zu \xc2\xb7 pairs with both orders %zu \xc2\xb7 "
                              "judgments %zu\n",
                           m->n_items, m->n_pairs, m->n_judgments);
}

/* Renders the audit as text tables, one block per comparison. Returns a string owned by the
** caller (arb_free), or NULL when out of memory or audit is NULL. */
char *arb_audit_to_text(const arb_audit *audit)
{
    if (!audit) return NULL;
    arb__buf b;
    arb__buf_init(&b, 0);
    if (audit->n_rows == 0 && arb__buf_puts(&b, "no side-by-side judgments in the store\n"))
        goto fail;
    for (size_t i = 0; i < audit->n_rows; i++) {
        if (i > 0 && arb__buf_puts(&b, "\n")) goto fail;
        if (put_row_text(&b, &audit->rows[i])) goto fail;
    }
    return arb__buf_steal(&b);
fail:
    arb__buf_free(&b);
    return NULL;
}

/* ---- JSON --------------------------------------------------------------------------------- */

/* A metric as a JSON real, or null when undefined (JSON has no NaN or infinity). */
static json_t *json_metric(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* A name as a JSON string; bytes that are not valid UTF-8 (jansson refuses them) become
** U+FFFD. Returns NULL when out of memory. */
static json_t *json_name(const char *name)
{
    size_t len = strlen(name);
    size_t bad = 0;
    if (arb__utf8_valid(name, len, &bad)) return json_stringn(name, len);
    arb__buf b;
    arb__buf_init(&b, 0);
    size_t pos = 0;
    while (pos < len) {
        size_t run = len - pos;
        if (arb__utf8_valid(name + pos, len - pos, &run)) run = len - pos;
        if (arb__buf_append(&b, name + pos, run)) goto fail;
        pos += run;
        if (pos < len) {
            if (arb__buf_puts(&b, "\xef\xbf\xbd")) goto fail;
            pos++;
        }
    }
    json_t *s = json_stringn(b.data ? b.data : "", b.len);
    arb__buf_free(&b);
    return s;
fail:
    arb__buf_free(&b);
    return NULL;
}

static json_t *json_shares(const arb_verdict_shares *s)
{
    json_t *o = json_object();
    if (!o) return NULL;
    if (json_object_set_new(o, "a", json_metric(s->a)) ||
        json_object_set_new(o, "b", json_metric(s->b)) ||
        json_object_set_new(o, "c", json_metric(s->c)) ||
        json_object_set_new(o, "d", json_metric(s->d)) ||
        json_object_set_new(o, "e", json_metric(s->e))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_row(const arb_audit_row *r)
{
    const arb_sbs_metrics *m = &r->m;
    json_t *o = json_object();
    json_t *verdicts = json_object();
    if (!o || !verdicts) goto fail;
    /* json_object_set_new steals its value even on failure, so each call is safe alone */
    if (json_object_set_new(verdicts, "run0", json_shares(&m->run0)) ||
        json_object_set_new(verdicts, "run1", json_shares(&m->run1)) ||
        json_object_set_new(verdicts, "mean", json_shares(&m->mean)))
        goto fail;
    if (json_object_set_new(o, "judge", json_name(r->judge)) ||
        json_object_set_new(o, "candidate", json_name(r->candidate)) ||
        json_object_set_new(o, "baseline", json_name(r->baseline)) ||
        json_object_set_new(o, "template", json_name(r->template_name)) ||
        json_object_set_new(o, "options", json_integer(r->options)) ||
        json_object_set_new(o, "n_items", json_integer((json_int_t)m->n_items)) ||
        json_object_set_new(o, "n_pairs", json_integer((json_int_t)m->n_pairs)) ||
        json_object_set_new(o, "n_judgments", json_integer((json_int_t)m->n_judgments)))
        goto fail;
    if (json_object_set_new(o, "verdicts", verdicts)) {
        verdicts = NULL; /* stolen */
        goto fail;
    }
    verdicts = NULL;
    if (json_object_set_new(o, "pbias_ab", json_metric(m->pbias_ab)) ||
        json_object_set_new(o, "con_abcd", json_metric(m->con_abcd)) ||
        json_object_set_new(o, "pcon_ab", json_metric(m->pcon_ab)) ||
        json_object_set_new(o, "error_rate", json_metric(m->error_rate)))
        goto fail;
    return o;
fail:
    json_decref(verdicts);
    json_decref(o);
    return NULL;
}

/* Renders the audit as pretty-printed JSON (indent 2, keys in documented order, undefined
** metrics null, fractions as reals). Returns a string owned by the caller (arb_free), or NULL
** when out of memory or audit is NULL. */
char *arb_audit_to_json(const arb_audit *audit)
{
    if (!audit) return NULL;
    char *text = NULL;
    json_t *root = json_object();
    json_t *comparisons = json_array();
    if (!root || !comparisons) goto done;
    if (json_object_set_new(root, "arbiter_version", json_string(ARB_VERSION))) goto done;
    for (size_t i = 0; i < audit->n_rows; i++)
        if (json_array_append_new(comparisons, json_row(&audit->rows[i]))) goto done;
    if (json_object_set_new(root, "comparisons", comparisons)) {
        comparisons = NULL;
        goto done;
    }
    comparisons = NULL;
    /* 15 significant digits: 0.1 prints as 0.1, not 0.10000000000000001 */
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
done:
    json_decref(comparisons);
    json_decref(root);
    return text;
}
