/*
** audit.c -- the judge audit: reads the side-by-side judgments of the store with what the
** metrics need (benchmark order, task, lengths in code points, expert majority labels), forms
** one group per row (a comparison by default, or per judge, task or candidate), computes each
** group's metrics (audit_metrics.c) and, when asked, their bootstrap intervals (audit_bootstrap.c).
**
** Debates (§2.5) are audited like judges: their final verdicts are pairwise rows of protocol
** "soft"/"hard" under the judge name "<mode>(<agent1>,<agent2>,<judge>)". The discussions'
** own metrics (§7) come from discussion_stats.c and are carried along for the renderers.
** Tournament judgments (§6) are audited on request (ARB_AUDIT_TOURNAMENT): the tournament stores
** each pair {X, Y} with candidate X = the model first by name and order 0 = X shown first, which
** is exactly a side-by-side comparison, so every metric applies unchanged; the protocol is part
** of every row's key, so a judge's tournament and SbS judgments are never pooled.
**
** Invariants: a judgment pair is (comparison, item, repetition) with the position verdicts of
** run 0 and run 1 (METHODS §1, §2.2); rows come out sorted by judge, candidate, baseline,
** template, options, task.
**
** Not here: the formulas (audit_metrics.c), the bootstrap intervals (audit_bootstrap.c), text and
** JSON (audit_render.c).
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One (judge, protocol, candidate, baseline, template, options) set-up. */
typedef struct audit_cmp {
    char *judge, *protocol, *candidate, *baseline, *template_name;
    int options;
} audit_cmp;

/* Distinct names (tasks, languages) numbered in order of appearance. */
typedef struct name_list {
    char **v;
    size_t n, cap;
    size_t last; /* the last hit, tried first: rows of one name tend to come together */
} name_list;

typedef struct audit_data {
    audit_cmp *cmps;
    size_t n_cmps, cap_cmps;
    name_list tasks, languages;
    arb__sbs_pair *pairs;
    size_t n_pairs, cap_pairs;
} audit_data;

static const char *const metric_keys[] = {
#define ARB__METRIC_KEY(id, key) #key,
    ARB_AUDIT_METRIC_MAP(ARB__METRIC_KEY)
#undef ARB__METRIC_KEY
};

/* Returns the JSON key of metric m (static), or NULL when out of range. */
const char *arb_audit_metric_key(arb_audit_metric m)
{
    return (unsigned)m < ARB_M__COUNT ? metric_keys[m] : NULL;
}

/* The defaults: one row per comparison, no bootstrap, §3.1's window 10 and stride 5. */
arb_audit_params arb_audit_default_params(void)
{
    arb_audit_params p;
    memset(&p, 0, sizeof p);
    p.by = ARB_BY_COMPARISON;
    p.bootstrap = 0;
    p.seed = 20261123ULL;
    p.ci_level = 0.95;
    p.window = 10;
    p.stride = 5;
    p.multi_agent = 1;
    p.protocols = ARB_AUDIT_SBS;
    return p;
}

static void data_free(audit_data *d)
{
    for (size_t i = 0; i < d->n_cmps; i++) {
        free(d->cmps[i].judge);
        free(d->cmps[i].protocol);
        free(d->cmps[i].candidate);
        free(d->cmps[i].baseline);
        free(d->cmps[i].template_name);
    }
    free(d->cmps);
    for (size_t i = 0; i < d->tasks.n; i++) free(d->tasks.v[i]);
    free(d->tasks.v);
    for (size_t i = 0; i < d->languages.n; i++) free(d->languages.v[i]);
    free(d->languages.v);
    for (size_t i = 0; i < d->n_pairs; i++) free((char *)d->pairs[i].item_id);
    free(d->pairs);
}

/* ---- reading the store -------------------------------------------------------------------- */

/* Index of the comparison of judgment j, appending it when new (judgments come grouped by
** comparison, so only the last one can match). SIZE_MAX when out of memory. */
static size_t cmp_index(audit_data *d, const arb__audit_judgment *j)
{
    if (d->n_cmps > 0) {
        const audit_cmp *c = &d->cmps[d->n_cmps - 1];
        if (c->options == j->options && !strcmp(c->judge, j->judge_name) &&
            !strcmp(c->protocol, j->protocol) && !strcmp(c->candidate, j->candidate) &&
            !strcmp(c->baseline, j->baseline) && !strcmp(c->template_name, j->template_name))
            return d->n_cmps - 1;
    }
    if (arb__grow(&d->cmps, &d->cap_cmps, d->n_cmps + 1, sizeof *d->cmps)) return SIZE_MAX;
    audit_cmp *c = &d->cmps[d->n_cmps];
    c->judge = arb__strdup(j->judge_name);
    c->protocol = arb__strdup(j->protocol);
    c->candidate = arb__strdup(j->candidate);
    c->baseline = arb__strdup(j->baseline);
    c->template_name = arb__strdup(j->template_name);
    c->options = j->options;
    d->n_cmps++; /* counted now so data_free releases whatever was copied */
    if (!c->judge || !c->protocol || !c->candidate || !c->baseline || !c->template_name)
        return SIZE_MAX;
    return d->n_cmps - 1;
}

/* Index of a name (task, language) in l, appending it when new. Names are few. SIZE_MAX when
** out of memory. */
static size_t name_index(name_list *l, const char *name)
{
    if (l->last < l->n && !strcmp(l->v[l->last], name)) return l->last;
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], name)) return l->last = i;
    if (arb__grow(&l->v, &l->cap, l->n + 1, sizeof *l->v)) return SIZE_MAX;
    if (!(l->v[l->n] = arb__strdup(name))) return SIZE_MAX;
    return l->last = l->n++;
}

/* The loader's state between judgments: the pair being filled and its prompt lengths; the
** ensemble members' judgments set aside for the vote. */
typedef struct load_ctx {
    audit_data *d;
    struct ens_votes *votes; /* NULL without an ensemble */
    double prompt_sum;
    int prompt_n;
    int nomem;
} load_ctx;

/* Adds one stored judgment to its pair, opening a new pair for a new (comparison, item,
** repetition). Nonzero (out of memory) stops the walk. */
static int ens_record(struct ens_votes *e, const arb__audit_judgment *j);

static int on_judgment(void *ud, const arb__audit_judgment *j)
{
    load_ctx *L = ud;
    audit_data *d = L->d;
    if (L->votes && ens_record(L->votes, j)) goto nomem;
    size_t cmp = cmp_index(d, j);
    if (cmp == SIZE_MAX) goto nomem;
    arb__sbs_pair *p = d->n_pairs ? &d->pairs[d->n_pairs - 1] : NULL;
    if (!p || p->cmp != cmp || p->item != (uint32_t)j->item_rowid || p->rep != j->rep) {
        size_t task = name_index(&d->tasks, j->category);
        size_t language = name_index(&d->languages, j->language);
        if (task == SIZE_MAX || language == SIZE_MAX) goto nomem;
        if (arb__grow(&d->pairs, &d->cap_pairs, d->n_pairs + 1, sizeof *d->pairs)) goto nomem;
        p = &d->pairs[d->n_pairs];
        memset(p, 0, sizeof *p);
        if (!(p->item_id = arb__strdup(j->item_id))) goto nomem;
        d->n_pairs++;
        p->cmp = (uint32_t)cmp;
        p->item = (uint32_t)j->item_rowid; /* items.rowid: one per item id */
        p->seq = j->item_seq;
        p->task = (uint32_t)task;
        p->language = (uint32_t)language;
        p->rep = j->rep;
        p->len[ARB_LEN_QUESTION] = j->len_question;
        p->len[ARB_LEN_CANDIDATE] = j->len_candidate;
        p->len[ARB_LEN_BASELINE] = j->len_baseline;
        p->len[ARB_LEN_PROMPT] = NAN;
        L->prompt_sum = 0;
        L->prompt_n = 0;
    }
    /* order is 0 or 1 by the schema's CHECK */
    if (j->order == 0) p->p0 = j->position_verdict;
    else p->p1 = j->position_verdict;
    /* the prompt length of a pair is the mean over its two prompts */
    if (!isnan(j->len_prompt)) {
        L->prompt_sum += j->len_prompt;
        L->prompt_n++;
        p->len[ARB_LEN_PROMPT] = L->prompt_sum / L->prompt_n;
    }
    return 0;
nomem:
    L->nomem = 1;
    return 1;
}

/* ---- the ensemble's vote (METHODS §8's ensemble on §2 position verdicts) ------------------- */

/* One member judgment set aside for the vote; strings are indices into ens_votes.strs. */
typedef struct ens_judgment {
    uint32_t protocol, candidate, baseline, template_name, item_id, category, language;
    uint32_t member;
    int options, rep, order;
    char verdict;
    long long item_rowid, item_seq;
    double len_question, len_candidate, len_baseline, len_prompt;
} ens_judgment;

typedef struct ens_votes {
    const char *const *members; /* priority order */
    size_t n_members;
    char *judge_name;           /* "ensemble(j1,j2,...)" */
    size_t *n_seen;             /* judgments per member */
    int name_taken;             /* a stored judge already has judge_name */
    arb__strtab strs;
    ens_judgment *v;
    size_t n, cap;
} ens_votes;

/* Sets aside j when its judge is a member. 0, or -1 when out of memory. */
static int ens_record(ens_votes *e, const arb__audit_judgment *j)
{
    if (!strcmp(j->judge_name, e->judge_name)) e->name_taken = 1;
    size_t m = 0;
    while (m < e->n_members && strcmp(e->members[m], j->judge_name)) m++;
    if (m == e->n_members) return 0;
    e->n_seen[m]++;
    if (arb__grow(&e->v, &e->cap, e->n + 1, sizeof *e->v)) return -1;
    ens_judgment *x = &e->v[e->n];
    const char *strs[7] = {j->protocol, j->candidate,  j->baseline, j->template_name,
                           j->item_id,  j->category, j->language};
    uint32_t *ids[7] = {&x->protocol, &x->candidate, &x->baseline, &x->template_name,
                        &x->item_id,  &x->category,  &x->language};
    for (int k = 0; k < 7; k++)
        if ((*ids[k] = arb__strtab_intern(&e->strs, strs[k])) == UINT32_MAX) return -1;
    x->member = (uint32_t)m;
    x->options = j->options;
    x->rep = j->rep;
    x->order = j->order;
    x->verdict = j->position_verdict;
    x->item_rowid = j->item_rowid;
    x->item_seq = j->item_seq;
    x->len_question = j->len_question;
    x->len_candidate = j->len_candidate;
    x->len_baseline = j->len_baseline;
    x->len_prompt = j->len_prompt;
    e->n++;
    return 0;
}

/* Orders by instance (comparison, benchmark order, item, repetition, order), then member. */
static int ens_cmp_instance(const ens_judgment *a, const ens_judgment *b)
{
    const uint32_t ka[4] = {a->protocol, a->candidate, a->baseline, a->template_name};
    const uint32_t kb[4] = {b->protocol, b->candidate, b->baseline, b->template_name};
    for (int k = 0; k < 4; k++)
        if (ka[k] != kb[k]) return ka[k] < kb[k] ? -1 : 1;
    const long long la[5] = {a->options, a->item_seq, a->item_rowid, a->rep, a->order};
    const long long lb[5] = {b->options, b->item_seq, b->item_rowid, b->rep, b->order};
    for (int k = 0; k < 5; k++)
        if (la[k] != lb[k]) return la[k] < lb[k] ? -1 : 1;
    return 0;
}

static int ens_cmp(const void *x, const void *y)
{
    const ens_judgment *a = x, *b = y;
    int c = ens_cmp_instance(a, b);
    return c ? c : (a->member > b->member) - (a->member < b->member);
}

/* The vote of the members' position verdicts (priority order): the verdict A..D most members
** gave, E not counted; a tie goes to the tied verdict of the earliest member; E when every
** member said E. */
char arb__audit_vote(const char *verdicts, size_t n)
{
    size_t count[4] = {0, 0, 0, 0}, top = 0;
    for (size_t i = 0; i < n; i++)
        if (verdicts[i] >= 'A' && verdicts[i] <= 'D' && ++count[verdicts[i] - 'A'] > top)
            top = count[verdicts[i] - 'A'];
    for (size_t i = 0; top > 0 && i < n; i++)
        if (verdicts[i] >= 'A' && verdicts[i] <= 'D' && count[verdicts[i] - 'A'] == top)
            return verdicts[i];
    return 'E';
}

/* Adds the ensemble's judgments, one per instance every member judged, after the stored ones
** (its judge name sorts its comparisons apart). Nonzero when out of memory. */
static int ens_feed(load_ctx *L, ens_votes *e)
{
    char verdicts[64];
    qsort(e->v, e->n, sizeof *e->v, ens_cmp);
    for (size_t i = 0, j; i < e->n; i = j) {
        j = i + 1;
        while (j < e->n && ens_cmp_instance(&e->v[i], &e->v[j]) == 0) j++;
        if (j - i != e->n_members) continue; /* a member lacks the instance: left out */
        double prompt_sum = 0;
        int prompt_n = 0;
        for (size_t k = i; k < j; k++) {
            verdicts[e->v[k].member] = e->v[k].verdict;
            if (!isnan(e->v[k].len_prompt)) {
                prompt_sum += e->v[k].len_prompt;
                prompt_n++;
            }
        }
        const ens_judgment *x = &e->v[i];
        char *const *names = e->strs.names;
        arb__audit_judgment vote = {
            .protocol = names[x->protocol], .judge_name = e->judge_name,
            .candidate = names[x->candidate], .baseline = names[x->baseline],
            .template_name = names[x->template_name], .options = x->options,
            .item_id = names[x->item_id], .item_rowid = x->item_rowid, .item_seq = x->item_seq,
            .category = names[x->category], .language = names[x->language], .rep = x->rep,
            .order = x->order, .position_verdict = arb__audit_vote(verdicts, e->n_members),
            .len_question = x->len_question, .len_candidate = x->len_candidate,
            .len_baseline = x->len_baseline,
            .len_prompt = prompt_n ? prompt_sum / prompt_n : NAN, /* the members' mean */
        };
        if (on_judgment(L, &vote)) return 1;
    }
    return 0;
}

static void ens_free(ens_votes *e)
{
    free(e->judge_name);
    free(e->n_seen);
    arb__strtab_free(&e->strs);
    free(e->v);
}

/* "ensemble(j1,j2,...)" for the members, or NULL when out of memory. */
static char *ens_name(const char *const *members, size_t n)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    int bad = arb__buf_puts(&b, "ensemble(");
    for (size_t i = 0; i < n && !bad; i++)
        bad = (i && arb__buf_puts(&b, ",")) || arb__buf_puts(&b, members[i]);
    if (bad || arb__buf_puts(&b, ")")) {
        arb__buf_free(&b);
        return NULL;
    }
    return arb__buf_steal(&b);
}

static arb_status load_pairs(arb_store *s, const arb_audit_params *p, audit_data *d)
{
    ens_votes votes;
    memset(&votes, 0, sizeof votes);
    load_ctx L = {d, NULL, 0, 0, 0};
    arb_status st = ARB_OK;
    if (p->n_ensemble) {
        votes.members = p->ensemble;
        votes.n_members = p->n_ensemble;
        votes.judge_name = ens_name(p->ensemble, p->n_ensemble);
        votes.n_seen = calloc(p->n_ensemble, sizeof *votes.n_seen);
        if (!votes.judge_name || !votes.n_seen) goto nomem;
        L.votes = &votes;
    }
    st = arb__store_judgments_for_audit(s, p->protocols, on_judgment, &L);
    if (st) goto done;
    if (L.nomem) goto nomem;
    if (!L.votes) goto done;
    for (size_t m = 0; m < votes.n_members; m++)
        if (votes.n_seen[m] == 0) {
            st = arb__store_fail(s, ARB_INVALID, "audit: ensemble judge \"%s\" has no judgments "
                                                 "among those audited", votes.members[m]);
            goto done;
        }
    if (votes.name_taken) {
        st = arb__store_fail(s, ARB_INVALID, "audit: a stored judge is already named \"%s\"",
                             votes.judge_name);
        goto done;
    }
    L.votes = NULL;
    if (ens_feed(&L, &votes)) goto nomem;
    goto done;
nomem:
    st = arb__store_fail(s, ARB_NOMEM, "audit: out of memory");
done:
    ens_free(&votes);
    return st;
}

/* ---- expert labels ------------------------------------------------------------------------ */

typedef struct label_entry {
    char *item_id, *candidate, *baseline;
    char majority; /* 'a'..'d', or 'T' when annotators tied */
} label_entry;

typedef struct label_list {
    label_entry *v;
    size_t n, cap;
    int nomem;
} label_list;

static int on_majority(void *ud, const char *item_id, const char *candidate,
                       const char *baseline, char majority, int n_annotators)
{
    label_list *l = ud;
    (void)n_annotators;
    if (arb__grow(&l->v, &l->cap, l->n + 1, sizeof *l->v)) goto nomem;
    label_entry *e = &l->v[l->n];
    e->item_id = arb__strdup(item_id);
    e->candidate = arb__strdup(candidate);
    e->baseline = arb__strdup(baseline);
    e->majority = majority ? majority : 'T';
    l->n++;
    if (!e->item_id || !e->candidate || !e->baseline) goto nomem;
    return 0;
nomem:
    l->nomem = 1;
    return 1;
}

static int cmp_label(const void *x, const void *y)
{
    const label_entry *a = x, *b = y;
    int c = strcmp(a->candidate, b->candidate);
    if (c) return c;
    if ((c = strcmp(a->baseline, b->baseline))) return c;
    return strcmp(a->item_id, b->item_id);
}

static const label_entry *find_label(const label_list *l, const char *item, const char *cand,
                                     const char *base)
{
    label_entry key = {(char *)item, (char *)cand, (char *)base, 0};
    return l->n ? bsearch(&key, l->v, l->n, sizeof *l->v, cmp_label) : NULL;
}

/* Attaches to every pair the experts' majority verdict for its item and models. Labels given
** the other way round (the baseline as their candidate) are used with a and b exchanged. */
static arb_status attach_labels(arb_store *s, audit_data *d)
{
    label_list l = {NULL, 0, 0, 0};
    arb_status st = arb__labels_each_majority(s, on_majority, &l);
    if (l.nomem) st = arb__store_fail(s, ARB_NOMEM, "audit: out of memory");
    if (st == ARB_OK && l.n) {
        qsort(l.v, l.n, sizeof *l.v, cmp_label);
        for (size_t i = 0; i < d->n_pairs; i++) {
            arb__sbs_pair *p = &d->pairs[i];
            const audit_cmp *c = &d->cmps[p->cmp];
            const label_entry *e = find_label(&l, p->item_id, c->candidate, c->baseline);
            if (e) {
                p->expert = e->majority;
                continue;
            }
            e = find_label(&l, p->item_id, c->baseline, c->candidate);
            if (e) p->expert = e->majority == 'a' ? 'b' : e->majority == 'b' ? 'a' : e->majority;
        }
    }
    for (size_t i = 0; i < l.n; i++) {
        free(l.v[i].item_id);
        free(l.v[i].candidate);
        free(l.v[i].baseline);
    }
    free(l.v);
    return st;
}

/* ---- groups ------------------------------------------------------------------------------- */

typedef struct group_sort {
    const audit_data *d;
    unsigned by;
} group_sort;

/* qsort has no user pointer; the audit runs one grouping at a time per thread. */
static _Thread_local group_sort sort_ctx;

/* Compares the group keys of two pairs under the mask: 0 when they belong to one row. */
static int group_key_cmp(const arb__sbs_pair *a, const arb__sbs_pair *b)
{
    const audit_cmp *x = &sort_ctx.d->cmps[a->cmp], *y = &sort_ctx.d->cmps[b->cmp];
    unsigned by = sort_ctx.by;
    int c = strcmp(x->judge, y->judge);
    if (c) return c;
    if ((c = strcmp(x->protocol, y->protocol))) return c; /* always a key */
    if ((by & ARB_BY_CANDIDATE) && (c = strcmp(x->candidate, y->candidate))) return c;
    if ((by & ARB_BY_BASELINE) && (c = strcmp(x->baseline, y->baseline))) return c;
    if ((by & ARB_BY_TEMPLATE) && (c = strcmp(x->template_name, y->template_name))) return c;
    if ((by & ARB_BY_OPTIONS) && x->options != y->options) return x->options < y->options ? -1 : 1;
    if ((by & ARB_BY_TASK) && a->task != b->task)
        return strcmp(sort_ctx.d->tasks.v[a->task], sort_ctx.d->tasks.v[b->task]);
    if ((by & ARB_BY_LANGUAGE) && a->language != b->language)
        return strcmp(sort_ctx.d->languages.v[a->language], sort_ctx.d->languages.v[b->language]);
    return 0;
}

/* The order arb__audit_metrics needs: comparison, benchmark order, item, copy, repetition. */
static int ref_order_cmp(const arb__pair_ref *a, const arb__pair_ref *b)
{
    const arb__sbs_pair *x = a->p, *y = b->p;
    if (x->cmp != y->cmp) return x->cmp < y->cmp ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    if (x->item != y->item) return x->item < y->item ? -1 : 1;
    if (a->copy != b->copy) return a->copy < b->copy ? -1 : 1;
    return (x->rep > y->rep) - (x->rep < y->rep);
}

static int cmp_ref_grouped(const void *x, const void *y)
{
    const arb__pair_ref *a = x, *b = y;
    int c = group_key_cmp(a->p, b->p);
    return c ? c : ref_order_cmp(a, b);
}

/* qsort's comparator for the order arb__audit_metrics needs (ref_order_cmp). */
int arb__audit_ref_order_cmp(const void *x, const void *y) { return ref_order_cmp(x, y); }

/* ---- the audit object --------------------------------------------------------------------- */

static void row_free(arb_audit_row *r)
{
    free((char *)r->judge);
    free((char *)r->protocol);
    free((char *)r->candidate);
    free((char *)r->baseline);
    free((char *)r->template_name);
    free((char *)r->task);
    free((char *)r->language);
}

/* Frees the audit and every string in it. Accepts NULL. */
void arb_audit_destroy(arb_audit *audit)
{
    if (!audit) return;
    for (size_t i = 0; i < audit->n_rows; i++) row_free(&audit->rows[i]);
    free(audit->rows);
    arb_discussion_stats_destroy(audit->multi_agent);
    arb__family_prefs_free(&audit->family_prefs);
    arb__store_judge_costs_free(audit->costs, audit->n_costs);
    arb__store_logprobs_free(audit->logprobs, audit->n_logprobs);
    free(audit);
}

/* Returns the number of rows; 0 for NULL. */
size_t arb_audit_count(const arb_audit *audit) { return audit ? audit->n_rows : 0; }

/* Returns row index (borrowed from the audit), or NULL when out of range. */
const arb_audit_row *arb_audit_row_at(const arb_audit *audit, size_t index)
{
    if (!audit || index >= audit->n_rows) return NULL;
    return &audit->rows[index];
}

/* Fills a new row's names from its first pair under the mask. Returns 0, -1 no memory. */
static int row_names(arb_audit_row *r, const audit_data *d, const arb__sbs_pair *p, unsigned by)
{
    const audit_cmp *c = &d->cmps[p->cmp];
    memset(r, 0, sizeof *r);
    r->judge = arb__strdup(c->judge);
    r->protocol = arb__strdup(c->protocol);
    if (by & ARB_BY_CANDIDATE) r->candidate = arb__strdup(c->candidate);
    if (by & ARB_BY_BASELINE) r->baseline = arb__strdup(c->baseline);
    if (by & ARB_BY_TEMPLATE) r->template_name = arb__strdup(c->template_name);
    if (by & ARB_BY_OPTIONS) r->options = c->options;
    if (by & ARB_BY_TASK) r->task = arb__strdup(d->tasks.v[p->task]);
    if (by & ARB_BY_LANGUAGE) r->language = arb__strdup(d->languages.v[p->language]);
    if (!r->judge || !r->protocol || ((by & ARB_BY_CANDIDATE) && !r->candidate) ||
        ((by & ARB_BY_BASELINE) && !r->baseline) ||
        ((by & ARB_BY_TEMPLATE) && !r->template_name) || ((by & ARB_BY_TASK) && !r->task) ||
        ((by & ARB_BY_LANGUAGE) && !r->language))
        return -1;
    return 0;
}

static arb_status check_params(arb_store *s, const arb_audit_params *p)
{
    if (p->by & ~(unsigned)(ARB_BY_COMPARISON | ARB_BY_TASK | ARB_BY_LANGUAGE))
        return arb__store_fail(s, ARB_INVALID, "audit: unknown grouping bits 0x%x", p->by);
    if (!(p->ci_level > 0 && p->ci_level < 1))
        return arb__store_fail(s, ARB_INVALID, "audit: the interval level must be in (0, 1), got %g",
                               p->ci_level);
    if (p->protocols == 0 || (p->protocols & ~(unsigned)(ARB_AUDIT_SBS | ARB_AUDIT_TOURNAMENT)))
        return arb__store_fail(s, ARB_INVALID, "audit: protocols must be ARB_AUDIT_SBS and/or "
                                               "ARB_AUDIT_TOURNAMENT, got 0x%x", p->protocols);
    if (p->window == 0 || p->stride == 0)
        return arb__store_fail(s, ARB_INVALID, "audit: window and stride must be at least 1");
    if (p->bootstrap > 1000000)
        return arb__store_fail(s, ARB_INVALID, "audit: at most 1000000 bootstrap resamples, got %zu",
                               p->bootstrap);
    if (p->n_ensemble == 0) return ARB_OK;
    if (p->n_ensemble < 2 || p->n_ensemble > 64 || !p->ensemble)
        return arb__store_fail(s, ARB_INVALID, "audit: an ensemble needs 2 to 64 judges, got %zu",
                               p->n_ensemble);
    for (size_t i = 0; i < p->n_ensemble; i++) {
        if (!p->ensemble[i] || !p->ensemble[i][0])
            return arb__store_fail(s, ARB_INVALID, "audit: ensemble judge %zu has no name", i + 1);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(p->ensemble[i], p->ensemble[j]))
                return arb__store_fail(s, ARB_INVALID, "audit: ensemble judge \"%s\" is named twice",
                                       p->ensemble[i]);
    }
    return ARB_OK;
}

/* When the store knows a judge's family: every such judge's family preference (§6
** self-enhancement by family, agreement.c), its interval with the audit's resamples, or 1000
** when the audit has none (as self-enhancement: the estimate never goes without one). */
static arb_status family_preference(arb_store *store, const arb_audit_params *p, arb_audit *audit)
{
    arb__families *fam = NULL;
    arb_status st = arb__families_load(store, &fam);
    if (st) return st;
    audit->has_families = arb__families_count(fam, "judge") > 0;
    if (audit->has_families) {
        arb_agreement_params ap = arb_agreement_default_params();
        ap.bootstrap = p->bootstrap ? p->bootstrap : 1000;
        ap.seed = p->seed;
        ap.ci_level = p->ci_level;
        st = arb__family_preference_compute(store, fam, &ap, &audit->family_prefs);
    }
    arb__families_free(fam);
    return st;
}

/* ---- the judgments read once, grouped as often as wanted -------------------------------- */

/* What arb__audit_input_load read: the pairs and their names, with the expert labels. */
struct arb__audit_input {
    audit_data d;
    unsigned protocols;   /* as read: a grouping must ask for the same */
    size_t n_ensemble;
};

void arb__audit_input_free(arb__audit_input *in)
{
    if (!in) return;
    data_free(&in->d);
    free(in);
}

/* Reads the judgments of params' protocols (with params' ensemble voted in) and the experts'
** majority labels: everything the rows of arb_audit_compute are computed from. *out is owned
** by the caller (arb__audit_input_free); on failure it is NULL and the store says why. */
arb_status arb__audit_input_load(arb_store *store, const arb_audit_params *params,
                                 arb__audit_input **out)
{
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!store) return ARB_INVALID;
    arb_audit_params p = params ? *params : arb_audit_default_params();
    arb_status st = check_params(store, &p);
    if (st) return st;
    arb__audit_input *in = calloc(1, sizeof *in);
    if (!in) return arb__store_fail(store, ARB_NOMEM, "audit: out of memory");
    in->protocols = p.protocols;
    in->n_ensemble = p.n_ensemble;
    if ((st = load_pairs(store, &p, &in->d)) || (st = attach_labels(store, &in->d))) {
        arb__audit_input_free(in);
        return st;
    }
    *out = in;
    return ARB_OK;
}

/* The rows of arb_audit_compute for params (grouping, intervals, seed, window) over in, read
** with the same protocols and ensemble (ARB_INVALID otherwise), and nothing else: no
** discussions, family preference, costs or logprobs. *out is owned by the caller
** (arb_audit_destroy); on failure it is NULL and the store says why. */
arb_status arb__audit_rows(arb_store *store, const arb__audit_input *in,
                           const arb_audit_params *params, arb_audit **out)
{
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!store || !in) return ARB_INVALID;
    arb_audit_params p = params ? *params : arb_audit_default_params();
    p.by |= ARB_BY_JUDGE;
    arb_status st = check_params(store, &p);
    if (st) return st;
    if (p.protocols != in->protocols || p.n_ensemble != in->n_ensemble)
        return arb__store_fail(store, ARB_INVALID, "audit: the judgments were read for other "
                                                   "protocols or another ensemble");
    const audit_data *d = &in->d;
    arb__pair_ref *refs = NULL;
    arb_audit *audit = calloc(1, sizeof *audit);
    if (!audit) goto nomem;
    audit->params = p;
    audit->params.ensemble = NULL; /* the caller's; the ensemble row's judge name says it */

    refs = malloc((d->n_pairs ? d->n_pairs : 1) * sizeof *refs);
    if (!refs) goto nomem;
    for (size_t i = 0; i < d->n_pairs; i++) {
        refs[i].p = &d->pairs[i];
        refs[i].copy = 0;
    }
    sort_ctx.d = d;
    sort_ctx.by = p.by;
    qsort(refs, d->n_pairs, sizeof *refs, cmp_ref_grouped);

    for (size_t i = 0; i < d->n_pairs;) {
        size_t j = i + 1;
        while (j < d->n_pairs && group_key_cmp(refs[i].p, refs[j].p) == 0) j++;
        size_t cap = audit->cap_rows;
        if (arb__grow(&audit->rows, &cap, audit->n_rows + 1, sizeof *audit->rows)) goto nomem;
        audit->cap_rows = cap;
        arb_audit_row *r = &audit->rows[audit->n_rows++];
        if (row_names(r, d, refs[i].p, p.by)) goto nomem;
        /* within the group, refs are in comparison then benchmark order already */
        if (arb__audit_metrics(refs + i, j - i, &p, &r->m)) goto nomem;
        for (int k = 0; k < ARB_M__COUNT; k++) r->m.ci_lo[k] = r->m.ci_hi[k] = NAN;
        if (p.bootstrap > 0 && (st = arb__audit_bootstrap(refs + i, j - i, &p, &r->m))) {
            if (st == ARB_NOMEM) goto nomem;
            arb__store_fail(store, st, "audit: bootstrap failed: %s", arb_strerror(st));
            goto done;
        }
        i = j;
    }
    st = ARB_OK;
    goto done;
nomem:
    st = arb__store_fail(store, ARB_NOMEM, "audit: out of memory");
done:
    free(refs);
    if (st != ARB_OK) {
        arb_audit_destroy(audit);
        return st;
    }
    *out = audit;
    return ARB_OK;
}

/* Reads the store and computes one row per group. *out is owned by the caller
** (arb_audit_destroy); an empty store gives an audit with no rows. On failure *out is NULL and
** the reason is in arb_store_errmsg(store). */
arb_status arb_audit_compute(arb_store *store, const arb_audit_params *params, arb_audit **out)
{
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!store) return ARB_INVALID;
    arb_audit_params p = params ? *params : arb_audit_default_params();
    p.by |= ARB_BY_JUDGE;
    arb__audit_input *in = NULL;
    arb_audit *audit = NULL;
    arb_status st = arb__audit_input_load(store, &p, &in);
    if (!st) st = arb__audit_rows(store, in, &p, &audit);
    arb__audit_input_free(in);
    if (st) return st;
    /* Debates are rows above (judge "soft(...)", "hard(...)"); discussions have their own
    ** metrics (§7), shown after the rows. */
    if (p.multi_agent) {
        arb_discussion_stats_params dp = arb_discussion_stats_default_params();
        dp.bootstrap = p.bootstrap;
        dp.seed = p.seed;
        dp.ci_level = p.ci_level;
        if ((st = arb_discussion_stats_compute(store, &dp, &audit->multi_agent))) goto done;
    }
    if ((st = family_preference(store, &p, audit))) goto done;
    /* What the judges' calls spent (every stored call, of every protocol). */
    if ((st = arb__store_judge_costs(store, &audit->costs, &audit->n_costs))) goto done;
    /* How sure the judges were of their verdicts, where they gave logprobs (README "Logprobs") */
    st = arb__store_pairwise_logprobs(store, &audit->logprobs, &audit->n_logprobs);
done:
    if (st != ARB_OK) {
        arb_audit_destroy(audit);
        return st;
    }
    *out = audit;
    return ARB_OK;
}
