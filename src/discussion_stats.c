/*
** discussion_stats.c -- what the stored peer discussions and debates show (METHODS §7, §2.5):
** reads the dialogues other protocols wrote (tables dialogues and dialogue_turns) and, per
** set-up, computes the numbers below. It only reads the store.
**
** Set-ups. A discussion set-up is (kind, config text) with kind 'discussion' or
** 'self-discussion'; a debate set-up is (kind, participants text, config text) with kind 'soft'
** or 'hard'. Config is canonical JSON (sorted keys), so equal settings give equal text. Other
** kinds (e.g. panels) are not read. Set-ups are reported in byte order of kind, then config
** (debates: kind, participants, config), whatever order the store returns them in.
**
** Which dialogues count. status 'done' and 'failed' are counted as such; 'open' and any other
** status as open (not finished). Every metric after the counts uses the DONE dialogues only:
** then "before" and "after" discussion describe the same discussions, and a dialogue an
** interrupted run left open cannot enter a share it may still change.
**
** Statements. A discussion dialogue's turn t is spoken by the leader when t is even (turn 0 its
** initial review, turns 2, 4, ... discussion turns) and by the follower when t is odd
** (participants = [leader, follower]); the speaker's slot is taken from the turn number, which
** is how the protocol stores it. A slot is a reviewer of config.reviewers when its participant
** name equals that reviewer's name; without a usable config.reviewers (two strings), the
** reviewers are the participants of the set-up's first dialogue in byte order. A statement is
** valid when its verdict is "1" or "2" (debates: "A".."D"); anything else (E, NULL) is not.
**
** Discussion metrics (all over done dialogues):
**   mean_turns      mean number of discussion turns made (stored turns numbered >= 2).
**   expert label    for a dialogue showing X as answer 1 and Y as answer 2: the experts'
**                   majority label (arb__labels_each_majority) of (item, candidate X, baseline
**                   Y), a -> "1", b -> "2"; when that triple has no label, the one of (item,
**                   candidate Y, baseline X), a -> "2", b -> "1". The direct orientation wins
**                   when both exist: it is how the answers were shown. Majority c or d (tie,
**                   both good, both bad) has no "1"/"2" answer: the dialogue is left out and
**                   counted in n_label_draws; annotators tied: left out, n_label_ties; no label:
**                   n_unlabelled. n_labelled counts the rest, so
**                   n_labelled + n_label_draws + n_label_ties + n_unlabelled = done.
**   PDA             share of the n_labelled dialogues whose final verdict equals the label. A
**                   final E counts as wrong (§2.1: E is never dropped). Interval: percentile
**                   bootstrap over ITEMS (all dialogues of an item resampled together, as they
**                   share the item's difficulty), params.bootstrap resamples, params.seed,
**                   params.ci_level (arb_stat_bootstrap); null without resamples or labels.
**   initial accuracy per reviewer: its initial review (turn 0 or 1) against the same label, on
**                   the same n_labelled dialogues; an E review counts as wrong, as in PDA, so
**                   before and after are measured alike. n_initial_labelled is its count.
**   OA / OH         per reviewer, counted as leader and as follower. A discussion turn
**                   (t >= 2) by speaker S MEETS DISAGREEMENT when own = S's latest valid
**                   verdict before the turn and other = the other reviewer's latest valid
**                   verdict before it (E statements are skipped) both exist and differ; its
**                   verdict equal to other ALTERS, equal to own HOLDS; an E turn does neither.
**                   Per discussion (the primary figures, as PRD counts them: "holds its
**                   opinion in 174 discussions"): a done dialogue in which the reviewer took
**                   part in this role is OA when at least one of its turns altered, else OH
**                   when at least one held, else NEITHER: METHODS §7 defines both only
**                   "after" / "though the other disagrees", so a discussion in which it never
**                   answered a disagreement with a valid verdict (the initial reviews agreed,
**                   the other reviewer yielded first, or its replies were E) is neither, and
**                   counted as such so that OA + OH + neither = the role's discussions.
**                   oa_discussion_rate = OA / (OA + OH) over discussions. Per turn (the
**                   second figure, keys oa / oh / oa_rate kept from before): the altering and
**                   holding turns themselves; a reviewer that holds for two turns counts 2.
**                   Rates are undefined when their denominator is 0.
**   first share     before: share of "1" among the valid initial reviews (turns 0 and 1);
**                   after: share of "1" among the valid final verdicts.
**   agreement turn  the stored statements in turn order s0, s1, ...: agreement is reached at
**                   the first k >= 1 with s(k-1) and s(k) valid and equal, reported as
**                   discussion turn k-1 (0: the initial reviews already agreed). Histogram
**                   over 0..max_turns (config; widened when a dialogue agreed later) and
**                   "never". Protocols store turns without gaps, so s(k) is turn k.
** Debate metrics (done dialogues; turn 0 = agent 1, turn 1 = agent 2, final = final_verdict):
**   agent2_agrees   share of the valid agent-2 verdicts equal to agent 1's (agent 1's E equals
**                   nothing); for 'hard', where agent 2 is told to disagree, a low share means
**                   it obeyed.
**   final_is_agent1, final_is_agent2: shares of the valid final verdicts equal to agent 1's, to
**                   agent 2's.
** A share with a zero denominator is NAN (null in JSON, "n/a" in text).
**
** Not here: running discussions or debates (the protocols), importing labels (labels.c), the
** bootstrap itself (stats.c).
*/
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A config's max_turns beyond this is not believed when sizing the histogram (the protocol
** allows 1..20); a dialogue that really agreed later still widens it. */
#define DS_MAX_HISTOGRAM_TURNS 1000

/* ---- the result ---------------------------------------------------------------------------- */

typedef struct ds_reviewer {
    char *name;
    size_t n_initial_labelled, n_initial_correct;
    size_t oa[2], oh[2]; /* turns; [0] as leader, [1] as follower */
    /* discussions (done dialogues) in the role, and of them OA, OH (see the file comment) */
    size_t discussions[2], oa_discussions[2], oh_discussions[2];
} ds_reviewer;

typedef struct ds_discussion {
    char *kind, *config;
    char *leader;          /* config.leader when a string, else NULL */
    long long max_turns;   /* config.max_turns, -1 when absent */
    int stop_on_agreement; /* config.stop_on_agreement: 0/1, -1 when absent */
    size_t dialogues, done, failed, open;
    size_t discussion_turns; /* over done dialogues */
    size_t n_labelled, n_correct, n_label_draws, n_label_ties, n_unlabelled;
    size_t n_label_items;    /* items with a labelled dialogue: the bootstrap's units */
    double pda, pda_lo, pda_hi;
    size_t n_initial_valid, n_initial_first, n_final_valid, n_final_first;
    size_t *agreement;       /* n_bins counts: agreement at discussion turn 0..n_bins-1 */
    size_t n_bins, never;
    ds_reviewer reviewers[2];
    size_t n_reviewers;
} ds_discussion;

typedef struct ds_debate {
    char *kind, *participants, *config;
    char *agents[3]; /* agent 1, agent 2, judge; NULL when participants do not say */
    size_t dialogues, done, failed, open;
    size_t n_agent2_valid, n_agent2_agrees;
    size_t n_final_valid, n_final_is_agent1, n_final_is_agent2;
} ds_debate;

struct arb_discussion_stats {
    arb_discussion_stats_params params;
    ds_discussion *discussions;
    size_t n_discussions;
    ds_debate *debates;
    size_t n_debates;
};

/* ---- loading ------------------------------------------------------------------------------- */

typedef struct ds_turn {
    long long turn;
    char verdict; /* the verdict's single character; 0 when NULL or longer */
} ds_turn;

typedef struct ds_dialogue {
    uint32_t setup;     /* index into ds_load.setups */
    uint32_t item;      /* index into ds_load.items */
    uint32_t names[2];  /* discussion: leader, follower in ds_load.names; UINT32_MAX unknown */
    char status;        /* 'd' done, 'f' failed, 'o' open */
    char final;         /* final verdict's single character, 0 when NULL */
    char expert;        /* '1', '2'; 'D' draw label; 'T' annotators tied; 0 no label */
    size_t first_turn, n_turns; /* into ds_load.turns */
} ds_dialogue;

typedef struct ds_setup {
    int is_debate;
    char *kind, *participants, *config; /* owned; participants NULL for discussions */
} ds_setup;

typedef struct ds_load {
    arb__strtab label_keys; /* length-prefixed (item, candidate, baseline) */
    char *label_majority;   /* per key: 'a'..'d', 'T' for an annotator tie */
    size_t cap_labels;
    arb__strtab setup_keys, items, names;
    ds_setup *setups;       /* one per setup_keys entry once filled */
    size_t n_setups, cap_setups;
    ds_dialogue *dialogues;
    size_t n_dialogues, cap_dialogues;
    ds_turn *turns;
    size_t n_turns, cap_turns;
    int nomem;
} ds_load;

static void load_free(ds_load *L)
{
    arb__strtab_free(&L->label_keys);
    free(L->label_majority);
    for (size_t i = 0; i < L->n_setups; i++) {
        free(L->setups[i].kind);
        free(L->setups[i].participants);
        free(L->setups[i].config);
    }
    free(L->setups);
    arb__strtab_free(&L->setup_keys);
    arb__strtab_free(&L->items);
    arb__strtab_free(&L->names);
    free(L->dialogues);
    free(L->turns);
}

/* A key that no two different (a, b, c) share, whatever bytes the names hold: the lengths of
** a and b go in front of them. Caller frees; NULL when out of memory. */
static char *triple_key(const char *a, const char *b, const char *c)
{
    return arb__sprintf("%zu:%s%zu:%s%s", strlen(a), a, strlen(b), b, c);
}

static int on_majority(void *ud, const char *item_id, const char *candidate,
                       const char *baseline, char majority, int n_annotators)
{
    (void)n_annotators;
    ds_load *L = ud;
    char *key = triple_key(item_id, candidate, baseline);
    uint32_t k = key ? arb__strtab_intern(&L->label_keys, key) : UINT32_MAX;
    free(key);
    if (k == UINT32_MAX || arb__grow(&L->label_majority, &L->cap_labels, (size_t)k + 1, 1)) {
        L->nomem = 1;
        return 1;
    }
    L->label_majority[k] = majority ? majority : 'T';
    return 0;
}

/* The label of one orientation: 'a'..'d', 'T', or 0 when absent; -1 out of memory. */
static int label_of(const ds_load *L, const char *item_id, const char *candidate,
                    const char *baseline)
{
    char *key = triple_key(item_id, candidate, baseline);
    if (!key) return -1;
    uint32_t k = arb__strtab_find(&L->label_keys, key);
    free(key);
    return k == UINT32_MAX ? 0 : L->label_majority[k];
}

/* The expert label of a dialogue showing answer1 first (see the file comment): '1', '2', 'D'
** (draw), 'T' (annotators tied), 0 (none); -1 when out of memory. */
static int expert_of(const ds_load *L, const char *item_id, const char *answer1,
                     const char *answer2)
{
    int m = label_of(L, item_id, answer1, answer2);
    if (m < 0) return -1;
    if (m) return m == 'a' ? '1' : m == 'b' ? '2' : m == 'T' ? 'T' : 'D';
    m = label_of(L, item_id, answer2, answer1);
    if (m <= 0) return m;
    return m == 'a' ? '2' : m == 'b' ? '1' : m == 'T' ? 'T' : 'D';
}

static int is_debate_kind(const char *kind)
{
    return strcmp(kind, "soft") == 0 || strcmp(kind, "hard") == 0;
}

static const char *text_or_empty(const char *s) { return s ? s : ""; }

/* The single character of a verdict, 0 when NULL or not one character. */
static char verdict_char(const char *s) { return s && s[0] && !s[1] ? s[0] : 0; }

/* Interns the names of a discussion's participants ([leader, follower]) into names[2]. Returns
** 0, or -1 when out of memory. Malformed participants leave UINT32_MAX. */
static int intern_participants(ds_load *L, const char *participants_json, uint32_t names[2])
{
    names[0] = names[1] = UINT32_MAX;
    json_t *arr = json_loads(participants_json, 0, NULL);
    int rc = 0;
    for (size_t s = 0; s < 2 && json_is_array(arr) && s < json_array_size(arr); s++) {
        const char *name = json_string_value(json_array_get(arr, s));
        if (!name) continue;
        names[s] = arb__strtab_intern(&L->names, name);
        if (names[s] == UINT32_MAX) rc = -1;
    }
    json_decref(arr);
    return rc;
}

/* Starts a dialogue from row r. Returns 0, or -1 when out of memory. */
static int add_dialogue(ds_load *L, const arb__dialogue_turn_row *r)
{
    const char *kind = text_or_empty(r->kind), *item_id = text_or_empty(r->item_id),
               *answer1 = text_or_empty(r->answer1), *answer2 = text_or_empty(r->answer2),
               *participants = text_or_empty(r->participants_json),
               *config = text_or_empty(r->config_json), *status = text_or_empty(r->status);
    int debate = is_debate_kind(kind);
    if (arb__grow(&L->dialogues, &L->cap_dialogues, L->n_dialogues + 1, sizeof *L->dialogues))
        return -1;
    ds_dialogue *d = &L->dialogues[L->n_dialogues];
    memset(d, 0, sizeof *d);
    d->names[0] = d->names[1] = UINT32_MAX;
    d->first_turn = L->n_turns;

    char *key = debate ? arb__sprintf("%zu:%s%zu:%s%s", strlen(kind), kind,
                                      strlen(participants), participants, config)
                       : arb__sprintf("%zu:%s%s", strlen(kind), kind, config);
    size_t before = L->setup_keys.n;
    uint32_t setup = key ? arb__strtab_intern(&L->setup_keys, key) : UINT32_MAX;
    free(key);
    if (setup == UINT32_MAX) return -1;
    if (L->setup_keys.n > before) {
        if (arb__grow(&L->setups, &L->cap_setups, L->setup_keys.n, sizeof *L->setups)) return -1;
        ds_setup *su = &L->setups[setup];
        memset(su, 0, sizeof *su);
        L->n_setups++; /* the set-up is L->n_setups - 1 == setup; load_free frees it */
        su->is_debate = debate;
        su->kind = arb__strdup(kind);
        su->config = arb__strdup(config);
        if (debate) su->participants = arb__strdup(participants);
        if (!su->kind || !su->config || (debate && !su->participants)) return -1;
    }
    d->setup = setup;
    d->item = arb__strtab_intern(&L->items, item_id);
    if (d->item == UINT32_MAX) return -1;
    if (!debate && intern_participants(L, participants, d->names)) return -1;
    d->status = strcmp(status, "done") == 0 ? 'd' : strcmp(status, "failed") == 0 ? 'f' : 'o';
    d->final = verdict_char(r->final_verdict);
    if (!debate && L->label_keys.n) {
        int e = expert_of(L, item_id, answer1, answer2);
        if (e < 0) return -1;
        d->expert = (char)e;
    }
    L->n_dialogues++;
    return 0;
}

/* load_dialogues' walk: the dialogue whose turns are being read. */
typedef struct ds_walk {
    ds_load *L;
    long long last_id;
    int have_last;
} ds_walk;

static int on_dialogue_turn(void *ud, const arb__dialogue_turn_row *r)
{
    ds_walk *w = ud;
    ds_load *L = w->L;
    if (!w->have_last || r->dialogue_id != w->last_id) {
        if (add_dialogue(L, r)) goto nomem;
        w->last_id = r->dialogue_id;
        w->have_last = 1;
    }
    if (!r->has_turn) return 0; /* a dialogue without turns */
    if (arb__grow(&L->turns, &L->cap_turns, L->n_turns + 1, sizeof *L->turns)) goto nomem;
    L->turns[L->n_turns++] = (ds_turn){r->turn, verdict_char(r->verdict)};
    L->dialogues[L->n_dialogues - 1].n_turns++;
    return 0;
nomem:
    L->nomem = 1;
    return 1;
}

/* Reads every dialogue of the four kinds with its turns into L. */
static arb_status load_dialogues(arb_store *s, ds_load *L)
{
    ds_walk w = {L, 0, 0};
    arb_status st = arb__store_each_discussion_turn(s, on_dialogue_turn, &w);
    if (st == ARB_DB) return arb__store_fail(s, st, "discussion stats: %s", arb_store_errmsg(s));
    return L->nomem ? ARB_NOMEM : st;
}

/* ---- discussion set-ups ------------------------------------------------------------------- */

static int valid12(char v) { return v == '1' || v == '2'; }
static int valid_ad(char v) { return v >= 'A' && v <= 'D'; }
static double share(size_t k, size_t n) { return n ? (double)k / (double)n : NAN; }

/* Reads the settings the report shows from a discussion's config. Returns 0, or -1 when out
** of memory; a malformed config leaves the fields unknown. */
static int read_discussion_config(ds_discussion *ds, const char *config)
{
    ds->max_turns = -1;
    ds->stop_on_agreement = -1;
    json_t *root = json_loads(config, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return 0;
    }
    int rc = 0;
    json_t *v = json_object_get(root, "leader");
    if (json_is_string(v) && !(ds->leader = arb__strdup(json_string_value(v)))) rc = -1;
    v = json_object_get(root, "max_turns");
    if (json_is_integer(v) && json_integer_value(v) >= 0) ds->max_turns = json_integer_value(v);
    v = json_object_get(root, "stop_on_agreement");
    if (json_is_boolean(v)) ds->stop_on_agreement = json_is_true(v);
    else if (json_is_integer(v)) ds->stop_on_agreement = json_integer_value(v) != 0;
    v = json_object_get(root, "reviewers");
    const char *r0 = json_string_value(json_array_get(v, 0));
    const char *r1 = json_string_value(json_array_get(v, 1));
    if (rc == 0 && r0 && r1) {
        ds->reviewers[0].name = arb__strdup(r0);
        ds->reviewers[1].name = arb__strdup(r1);
        ds->n_reviewers = 2;
        if (!ds->reviewers[0].name || !ds->reviewers[1].name) rc = -1;
    }
    json_decref(root);
    return rc;
}

/* Without config.reviewers: the participants of the set-up's first dialogue, in byte order. */
static int reviewers_from_participants(ds_discussion *ds, const ds_load *L,
                                       const ds_dialogue *first)
{
    const char *n[2];
    size_t k = 0;
    for (int s = 0; s < 2; s++)
        if (first->names[s] != UINT32_MAX) n[k++] = L->names.names[first->names[s]];
    if (k == 2 && strcmp(n[0], n[1]) > 0) {
        const char *t = n[0];
        n[0] = n[1];
        n[1] = t;
    }
    for (size_t r = 0; r < k; r++)
        if (!(ds->reviewers[r].name = arb__strdup(n[r]))) return -1;
    ds->n_reviewers = k;
    return 0;
}

/* What the PDA bootstrap resamples: per item, labelled dialogues and correct finals. */
typedef struct pda_units {
    const size_t *labelled, *correct;
} pda_units;

static int pda_replicate(void *ud, const size_t *indices, size_t n, double *out)
{
    const pda_units *u = ud;
    size_t labelled = 0, correct = 0;
    for (size_t i = 0; i < n; i++) {
        labelled += u->labelled[indices[i]];
        correct += u->correct[indices[i]];
    }
    out[0] = share(correct, labelled);
    return 0;
}

/* Counts the agreement turn of a done dialogue's statements v[0..n) into ds (grows bins). */
static int count_agreement(ds_discussion *ds, const ds_turn *t, size_t n)
{
    for (size_t k = 1; k < n; k++) {
        if (!valid12(t[k - 1].verdict) || t[k].verdict != t[k - 1].verdict) continue;
        size_t at = k - 1;
        if (at >= ds->n_bins) {
            size_t *bins = realloc(ds->agreement, (at + 1) * sizeof *bins);
            if (!bins) return -1;
            memset(bins + ds->n_bins, 0, (at + 1 - ds->n_bins) * sizeof *bins);
            ds->agreement = bins;
            ds->n_bins = at + 1;
        }
        ds->agreement[at]++;
        return 0;
    }
    ds->never++;
    return 0;
}

/* One done discussion dialogue: labels, initial reviews, OA/OH, first share, agreement. */
static int count_done_discussion(ds_discussion *ds, const ds_load *L, const ds_dialogue *d,
                                 const int slot_reviewer[2], size_t *item_labelled,
                                 size_t *item_correct)
{
    const ds_turn *t = L->turns + d->first_turn;
    int labelled = valid12(d->expert);
    if (labelled) {
        ds->n_labelled++;
        item_labelled[d->item]++;
        if (d->final == d->expert) {
            ds->n_correct++;
            item_correct[d->item]++;
        }
    } else if (d->expert == 'D') {
        ds->n_label_draws++;
    } else if (d->expert == 'T') {
        ds->n_label_ties++;
    } else {
        ds->n_unlabelled++;
    }
    if (valid12(d->final)) {
        ds->n_final_valid++;
        ds->n_final_first += d->final == '1';
    }

    char latest[2] = {0, 0}; /* each slot's latest valid verdict */
    int altered[2] = {0, 0}, held[2] = {0, 0}; /* per slot: any turn that did so */
    for (size_t k = 0; k < d->n_turns; k++) {
        long long turn = t[k].turn;
        char v = t[k].verdict;
        int slot = (int)(turn % 2); /* 0 leader, 1 follower */
        int r = slot_reviewer[slot];
        if (turn < 2) { /* an initial review */
            if (valid12(v)) {
                ds->n_initial_valid++;
                ds->n_initial_first += v == '1';
            }
            if (labelled && r >= 0) {
                ds->reviewers[r].n_initial_labelled++;
                ds->reviewers[r].n_initial_correct += v == d->expert;
            }
        } else {
            ds->discussion_turns++;
            char own = latest[slot], other = latest[1 - slot];
            if (r >= 0 && own && other && own != other) {
                if (v == other) {
                    ds->reviewers[r].oa[slot]++;
                    altered[slot] = 1;
                } else if (v == own) {
                    ds->reviewers[r].oh[slot]++;
                    held[slot] = 1;
                }
            }
        }
        if (valid12(v)) latest[slot] = v;
    }
    for (int slot = 0; slot < 2; slot++) {
        int r = slot_reviewer[slot];
        if (r < 0) continue;
        ds_reviewer *rv = &ds->reviewers[r];
        rv->discussions[slot]++;
        if (altered[slot]) rv->oa_discussions[slot]++;
        else if (held[slot]) rv->oh_discussions[slot]++;
    }
    return count_agreement(ds, t, d->n_turns);
}

/* Computes one discussion set-up from its dialogues (indices idx[0..n), in id order). */
static arb_status compute_discussion(ds_discussion *ds, const ds_setup *su, const ds_load *L,
                                     const size_t *idx, size_t n,
                                     const arb_discussion_stats_params *p, size_t *item_labelled,
                                     size_t *item_correct)
{
    ds->pda = ds->pda_lo = ds->pda_hi = NAN;
    if (!(ds->kind = arb__strdup(su->kind)) || !(ds->config = arb__strdup(su->config)) ||
        read_discussion_config(ds, su->config))
        return ARB_NOMEM;
    if (ds->n_reviewers == 0 && n > 0 &&
        reviewers_from_participants(ds, L, &L->dialogues[idx[0]]))
        return ARB_NOMEM;
    uint32_t reviewer_name[2] = {UINT32_MAX, UINT32_MAX};
    for (size_t r = 0; r < ds->n_reviewers; r++)
        reviewer_name[r] = arb__strtab_find(&L->names, ds->reviewers[r].name);
    if (ds->max_turns >= 0) {
        ds->n_bins = (size_t)(ds->max_turns < DS_MAX_HISTOGRAM_TURNS ? ds->max_turns
                                                                      : DS_MAX_HISTOGRAM_TURNS) + 1;
        if (!(ds->agreement = calloc(ds->n_bins, sizeof *ds->agreement))) return ARB_NOMEM;
    }

    for (size_t i = 0; i < n; i++) {
        const ds_dialogue *d = &L->dialogues[idx[i]];
        ds->dialogues++;
        if (d->status == 'f') ds->failed++;
        else if (d->status == 'o') ds->open++;
        if (d->status != 'd') continue;
        ds->done++;
        int slot_reviewer[2] = {-1, -1};
        for (int s = 0; s < 2; s++)
            for (size_t r = 0; r < ds->n_reviewers && slot_reviewer[s] < 0; r++)
                if (d->names[s] != UINT32_MAX && d->names[s] == reviewer_name[r])
                    slot_reviewer[s] = (int)r;
        if (count_done_discussion(ds, L, d, slot_reviewer, item_labelled, item_correct))
            return ARB_NOMEM;
    }

    /* The bootstrap's units: the items with labelled dialogues, gathered (and the scratch
    ** counts cleared for the next set-up). */
    size_t n_units = 0;
    size_t *unit_labelled = NULL, *unit_correct = NULL;
    arb_status st = ARB_OK;
    if (ds->n_labelled) {
        unit_labelled = malloc(ds->n_labelled * sizeof *unit_labelled);
        unit_correct = malloc(ds->n_labelled * sizeof *unit_correct);
        if (!unit_labelled || !unit_correct) st = ARB_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t item = L->dialogues[idx[i]].item;
        if (!item_labelled[item]) continue;
        if (st == ARB_OK) {
            unit_labelled[n_units] = item_labelled[item];
            unit_correct[n_units] = item_correct[item];
            n_units++;
        }
        item_labelled[item] = item_correct[item] = 0;
    }
    ds->n_label_items = n_units;
    ds->pda = share(ds->n_correct, ds->n_labelled);
    if (st == ARB_OK && p->use_labels && p->bootstrap > 0 && n_units > 0) {
        pda_units u = {unit_labelled, unit_correct};
        st = arb_stat_bootstrap(n_units, 1, pda_replicate, &u, p->bootstrap, p->seed,
                                p->ci_level, &ds->pda_lo, &ds->pda_hi);
    }
    free(unit_labelled);
    free(unit_correct);
    return st;
}

/* ---- debate set-ups ------------------------------------------------------------------------ */

static arb_status compute_debate(ds_debate *db, const ds_setup *su, const ds_load *L,
                                 const size_t *idx, size_t n)
{
    if (!(db->kind = arb__strdup(su->kind)) || !(db->config = arb__strdup(su->config)) ||
        !(db->participants = arb__strdup(su->participants)))
        return ARB_NOMEM;
    json_t *arr = json_loads(su->participants, 0, NULL);
    for (size_t a = 0; a < 3; a++) {
        const char *name = json_string_value(json_array_get(arr, a));
        if (name && !(db->agents[a] = arb__strdup(name))) {
            json_decref(arr);
            return ARB_NOMEM;
        }
    }
    json_decref(arr);

    for (size_t i = 0; i < n; i++) {
        const ds_dialogue *d = &L->dialogues[idx[i]];
        db->dialogues++;
        if (d->status == 'f') db->failed++;
        else if (d->status == 'o') db->open++;
        if (d->status != 'd') continue;
        db->done++;
        char agent1 = 0, agent2 = 0;
        for (size_t k = 0; k < d->n_turns; k++) {
            const ds_turn *t = &L->turns[d->first_turn + k];
            if (t->turn == 0) agent1 = t->verdict;
            else if (t->turn == 1) agent2 = t->verdict;
        }
        if (valid_ad(agent2)) {
            db->n_agent2_valid++;
            db->n_agent2_agrees += agent2 == agent1;
        }
        if (valid_ad(d->final)) {
            db->n_final_valid++;
            db->n_final_is_agent1 += d->final == agent1;
            db->n_final_is_agent2 += d->final == agent2;
        }
    }
    return ARB_OK;
}

/* ---- compute ------------------------------------------------------------------------------- */

static int cmp_discussion(const void *x, const void *y)
{
    const ds_discussion *a = x, *b = y;
    int c = strcmp(a->kind, b->kind);
    return c ? c : strcmp(a->config, b->config);
}

static int cmp_debate(const void *x, const void *y)
{
    const ds_debate *a = x, *b = y;
    int c = strcmp(a->kind, b->kind);
    if (!c) c = strcmp(a->participants, b->participants);
    return c ? c : strcmp(a->config, b->config);
}

/* Returns the defaults: labels used, 1000 bootstrap resamples, seed 20261123, level 0.95. */
arb_discussion_stats_params arb_discussion_stats_default_params(void)
{
    arb_discussion_stats_params p;
    memset(&p, 0, sizeof p);
    p.use_labels = 1;
    p.bootstrap = 1000;
    p.seed = 20261123ULL;
    p.ci_level = 0.95;
    return p;
}

/* Computes every set-up's numbers from the store (params NULL: defaults). *out is owned by the
** caller (arb_discussion_stats_destroy). Errors: ARB_INVALID for bad arguments or a ci_level
** outside (0, 1) with resamples asked for, ARB_DB, ARB_NOMEM; the message is in
** arb_store_errmsg(store). */
arb_status arb_discussion_stats_compute(arb_store *store,
                                        const arb_discussion_stats_params *params,
                                        arb_discussion_stats **out)
{
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!store) return ARB_INVALID;
    arb_discussion_stats_params p = params ? *params : arb_discussion_stats_default_params();
    if (p.bootstrap > 0 && !(p.ci_level > 0 && p.ci_level < 1))
        return arb__store_fail(store, ARB_INVALID,
                               "discussion stats: ci_level must be between 0 and 1, got %g",
                               p.ci_level);

    ds_load L;
    memset(&L, 0, sizeof L);
    size_t *start = NULL, *order = NULL, *item_labelled = NULL, *item_correct = NULL;
    arb_status st = ARB_OK;
    arb_discussion_stats *res = calloc(1, sizeof *res);
    if (!res) goto nomem;
    res->params = p;

    if (p.use_labels) {
        st = arb__labels_each_majority(store, on_majority, &L);
        if (L.nomem) goto nomem;
        if (st != ARB_OK) goto done;
    }
    st = load_dialogues(store, &L);
    if (L.nomem) goto nomem;
    if (st != ARB_OK) goto done;

    /* Dialogues grouped by set-up (a counting sort keeps id order within a set-up). */
    size_t n_setups = L.n_setups;
    start = calloc(n_setups + 1, sizeof *start);
    order = malloc((L.n_dialogues ? L.n_dialogues : 1) * sizeof *order);
    item_labelled = calloc(L.items.n ? L.items.n : 1, sizeof *item_labelled);
    item_correct = calloc(L.items.n ? L.items.n : 1, sizeof *item_correct);
    if (!start || !order || !item_labelled || !item_correct) goto nomem;
    for (size_t i = 0; i < L.n_dialogues; i++) start[L.dialogues[i].setup + 1]++;
    for (size_t s = 0; s < n_setups; s++) start[s + 1] += start[s];
    for (size_t i = 0; i < L.n_dialogues; i++) order[start[L.dialogues[i].setup]++] = i;
    for (size_t s = n_setups; s > 0; s--) start[s] = start[s - 1];
    start[0] = 0;

    size_t n_debates = 0;
    for (size_t s = 0; s < n_setups; s++) n_debates += L.setups[s].is_debate != 0;
    res->discussions = calloc(n_setups - n_debates + 1, sizeof *res->discussions);
    res->debates = calloc(n_debates + 1, sizeof *res->debates);
    if (!res->discussions || !res->debates) goto nomem;
    for (size_t s = 0; s < n_setups; s++) {
        const size_t *idx = order + start[s];
        size_t n = start[s + 1] - start[s];
        if (L.setups[s].is_debate)
            st = compute_debate(&res->debates[res->n_debates++], &L.setups[s], &L, idx, n);
        else
            st = compute_discussion(&res->discussions[res->n_discussions++], &L.setups[s], &L,
                                    idx, n, &p, item_labelled, item_correct);
        if (st == ARB_NOMEM) goto nomem;
        if (st != ARB_OK) {
            st = arb__store_fail(store, st, "discussion stats: bootstrap failed: %s",
                                 arb_strerror(st));
            goto done;
        }
    }
    qsort(res->discussions, res->n_discussions, sizeof *res->discussions, cmp_discussion);
    qsort(res->debates, res->n_debates, sizeof *res->debates, cmp_debate);
    goto done;

nomem:
    st = arb__store_fail(store, ARB_NOMEM, "discussion stats: out of memory");
done:
    free(start);
    free(order);
    free(item_labelled);
    free(item_correct);
    load_free(&L);
    if (st != ARB_OK) {
        arb_discussion_stats_destroy(res);
        return st;
    }
    *out = res;
    return ARB_OK;
}

/* Frees the result. Accepts NULL. */
void arb_discussion_stats_destroy(arb_discussion_stats *st)
{
    if (!st) return;
    for (size_t i = 0; i < st->n_discussions; i++) {
        ds_discussion *ds = &st->discussions[i];
        free(ds->kind);
        free(ds->config);
        free(ds->leader);
        free(ds->agreement);
        for (int r = 0; r < 2; r++) free(ds->reviewers[r].name);
    }
    for (size_t i = 0; i < st->n_debates; i++) {
        ds_debate *db = &st->debates[i];
        free(db->kind);
        free(db->participants);
        free(db->config);
        for (int a = 0; a < 3; a++) free(db->agents[a]);
    }
    free(st->discussions);
    free(st->debates);
    free(st);
}

/* Returns the number of discussion set-ups plus debate set-ups (0 for NULL). */
size_t arb_discussion_stats_count(const arb_discussion_stats *st)
{
    return st ? st->n_discussions + st->n_debates : 0;
}

/* ---- text ---------------------------------------------------------------------------------- */

/* A table of text cells printed with aligned columns: the first n_left columns left-aligned,
** the others right-aligned. */
typedef struct text_table {
    char **cells; /* row-major, owned */
    size_t n, cap, cols;
    int failed;
} text_table;

/* Adds a cell (takes ownership; NULL records a failure). */
static void table_add(text_table *t, char *cell)
{
    if (!cell || arb__grow(&t->cells, &t->cap, t->n + 1, sizeof *t->cells)) {
        free(cell);
        t->failed = 1;
        return;
    }
    t->cells[t->n++] = cell;
}

static void table_text(text_table *t, const char *fmt, ...) ARB__ATTR_PRINTF(2, 3);
static void table_text(text_table *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *cell = arb__vsprintf(fmt, ap);
    va_end(ap);
    table_add(t, cell);
}

/* An untrusted name, made safe for the terminal; NULL shows as "?". */
static void table_name(text_table *t, const char *name)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    if (arb__buf_put_safe(&b, name ? name : "?")) {
        arb__buf_free(&b);
        table_add(t, NULL);
        return;
    }
    table_add(t, arb__buf_steal(&b));
}

/* A share as a percentage, "n/a" when undefined. */
static void table_pct(text_table *t, double x)
{
    if (isnan(x)) table_text(t, "n/a");
    else table_text(t, "%.1f%%", 100.0 * x);
}

static void table_free(text_table *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->cells[i]);
    free(t->cells);
}

static int put_spaces(arb__buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (arb__buf_append(b, " ", 1)) return -1;
    return 0;
}

/* Prints the table (every cell is valid UTF-8: widths in code points). Returns 0, or -1 when
** out of memory (also when building a cell failed). */
static int table_put(arb__buf *b, const text_table *t, size_t indent, size_t n_left)
{
    if (t->failed || t->cols == 0) return -1;
    size_t widths[16] = {0};
    if (t->cols > 16) return -1;
    for (size_t i = 0; i < t->n; i++) {
        size_t w = arb__utf8_codepoints(t->cells[i], strlen(t->cells[i]));
        if (w > widths[i % t->cols]) widths[i % t->cols] = w;
    }
    for (size_t i = 0; i < t->n; i++) {
        size_t c = i % t->cols;
        size_t w = arb__utf8_codepoints(t->cells[i], strlen(t->cells[i]));
        size_t pad = widths[c] - w;
        int last = c + 1 == t->cols;
        if (put_spaces(b, c == 0 ? indent : 2)) return -1;
        if (c >= n_left && put_spaces(b, pad)) return -1;
        if (arb__buf_puts(b, t->cells[i])) return -1;
        if (c < n_left && !last && put_spaces(b, pad)) return -1;
        if (last && arb__buf_puts(b, "\n")) return -1;
    }
    return 0;
}

/* "[lo%, hi%]" or "n/a". */
static int put_interval(arb__buf *b, double lo, double hi)
{
    if (isnan(lo) || isnan(hi)) return arb__buf_puts(b, "n/a");
    return arb__buf_printf(b, "[%.1f%%, %.1f%%]", 100.0 * lo, 100.0 * hi);
}

static int put_pct(arb__buf *b, double x)
{
    if (isnan(x)) return arb__buf_puts(b, "n/a");
    return arb__buf_printf(b, "%.1f%%", 100.0 * x);
}

static int put_discussion_header(arb__buf *b, const ds_discussion *ds, size_t number)
{
    if (arb__buf_printf(b, "[%zu] ", number) || arb__buf_put_safe(b, ds->kind) ||
        arb__buf_puts(b, ": reviewers "))
        return -1;
    for (size_t r = 0; r < ds->n_reviewers; r++)
        if ((r && arb__buf_puts(b, " and ")) || arb__buf_put_safe(b, ds->reviewers[r].name))
            return -1;
    if (ds->n_reviewers == 0 && arb__buf_puts(b, "unknown")) return -1;
    if (arb__buf_puts(b, ", leader ") || arb__buf_put_safe(b, ds->leader ? ds->leader : "n/a"))
        return -1;
    if (ds->max_turns >= 0 ? arb__buf_printf(b, ", at most %lld turns", ds->max_turns)
                           : arb__buf_puts(b, ", max turns n/a"))
        return -1;
    const char *stop = ds->stop_on_agreement < 0 ? "n/a" : ds->stop_on_agreement ? "yes" : "no";
    return arb__buf_printf(b, ", stop on agreement %s\n    config ", stop) ||
           arb__buf_put_safe(b, ds->config) || arb__buf_puts(b, "\n");
}

static int put_discussion_summary(arb__buf *b, const ds_discussion *ds,
                                  const arb_discussion_stats_params *p)
{
    double mean_turns = share(ds->discussion_turns, ds->done);
    if (arb__buf_printf(b, "    dialogues %zu: done %zu, failed %zu, open %zu (the numbers below "
                           "count done dialogues)\n",
                        ds->dialogues, ds->done, ds->failed, ds->open) ||
        arb__buf_puts(b, "    mean discussion turns      ") ||
        (isnan(mean_turns) ? arb__buf_puts(b, "n/a\n")
                           : arb__buf_printf(b, "%.2f\n", mean_turns)))
        return -1;
    if (!p->use_labels) {
        if (arb__buf_puts(b, "    PDA                        n/a (labels not used)\n")) return -1;
    } else {
        if (arb__buf_puts(b, "    PDA (final vs experts)     ") || put_pct(b, ds->pda))
            return -1;
        if (!isnan(ds->pda_lo) &&
            (arb__buf_puts(b, "  ") || put_interval(b, ds->pda_lo, ds->pda_hi) ||
             arb__buf_printf(b, " (%g%% bootstrap over %zu items)", 100.0 * p->ci_level,
                             ds->n_label_items)))
            return -1;
        if (arb__buf_printf(b, "\n    labelled dialogues         %zu (left out: draw label c/d "
                               "%zu, annotators tied %zu, unlabelled %zu)\n",
                            ds->n_labelled, ds->n_label_draws, ds->n_label_ties,
                            ds->n_unlabelled))
            return -1;
    }
    return arb__buf_puts(b, "    first-position share       before ") ||
           put_pct(b, share(ds->n_initial_first, ds->n_initial_valid)) ||
           arb__buf_printf(b, " (of %zu valid initial reviews), after ", ds->n_initial_valid) ||
           put_pct(b, share(ds->n_final_first, ds->n_final_valid)) ||
           arb__buf_printf(b, " (of %zu valid finals)\n", ds->n_final_valid);
}

static int put_reviewers(arb__buf *b, const ds_discussion *ds,
                         const arb_discussion_stats_params *p)
{
    if (ds->n_reviewers == 0) return 0;
    /* the primary figures: per discussion (issue 12, METHODS 7) */
    text_table t = {.cols = 13};
    static const char *const head[13] = {"reviewer", "initial accuracy", "n",
                                         "as leader", "OA", "OH", "neither", "OA rate",
                                         "as follower", "OA", "OH", "neither", "OA rate"};
    for (size_t c = 0; c < 13; c++) table_text(&t, "%s", head[c]);
    /* the second figures: per turn */
    text_table u = {.cols = 7};
    static const char *const head_turns[7] = {"per turn", "leader OA", "OH", "OA rate",
                                              "follower OA", "OH", "OA rate"};
    for (size_t c = 0; c < 7; c++) table_text(&u, "%s", head_turns[c]);
    for (size_t r = 0; r < ds->n_reviewers; r++) {
        const ds_reviewer *rv = &ds->reviewers[r];
        table_name(&t, rv->name);
        table_name(&u, rv->name);
        if (p->use_labels) {
            table_pct(&t, share(rv->n_initial_correct, rv->n_initial_labelled));
            table_text(&t, "%zu", rv->n_initial_labelled);
        } else {
            table_text(&t, "n/a");
            table_text(&t, "n/a");
        }
        for (int role = 0; role < 2; role++) {
            size_t oa = rv->oa_discussions[role], oh = rv->oh_discussions[role];
            table_text(&t, "%zu", rv->discussions[role]);
            table_text(&t, "%zu", oa);
            table_text(&t, "%zu", oh);
            table_text(&t, "%zu", rv->discussions[role] - oa - oh);
            table_pct(&t, share(oa, oa + oh));
            table_text(&u, "%zu", rv->oa[role]);
            table_text(&u, "%zu", rv->oh[role]);
            table_pct(&u, share(rv->oa[role], rv->oa[role] + rv->oh[role]));
        }
    }
    int rc = arb__buf_puts(b, "\n") || table_put(b, &t, 4, 1) ||
             arb__buf_puts(b, "    OA / OH per discussion (METHODS 7): of the done discussions "
                              "the reviewer took part in\n    as leader or follower, OA = it "
                              "took the other's verdict at least once after they\n    disagreed, "
                              "OH = it met disagreement and always kept its own, neither = it "
                              "never\n    answered a disagreement with a valid verdict; OA rate "
                              "= OA / (OA + OH)\n") ||
             arb__buf_puts(b, "\n") || table_put(b, &u, 4, 1) ||
             arb__buf_puts(b, "    per turn (second figure): discussion turns that took the "
                              "other's verdict after\n    disagreeing (OA) or kept its own "
                              "(OH); one discussion can count several turns\n");
    table_free(&t);
    table_free(&u);
    return rc;
}

static int put_agreement(arb__buf *b, const ds_discussion *ds)
{
    text_table t = {.cols = 3};
    table_text(&t, "agreement reached at");
    table_text(&t, "dialogues");
    table_text(&t, "share");
    size_t total = ds->never;
    for (size_t k = 0; k < ds->n_bins; k++) total += ds->agreement[k];
    for (size_t k = 0; k < ds->n_bins; k++) {
        if (k == 0) table_text(&t, "turn 0 (initial reviews)");
        else table_text(&t, "turn %zu", k);
        table_text(&t, "%zu", ds->agreement[k]);
        table_pct(&t, share(ds->agreement[k], total));
    }
    table_text(&t, "never");
    table_text(&t, "%zu", ds->never);
    table_pct(&t, share(ds->never, total));
    int rc = arb__buf_puts(b, "\n") || table_put(b, &t, 4, 1);
    table_free(&t);
    return rc;
}

static int put_debates(arb__buf *b, const arb_discussion_stats *st)
{
    text_table t = {.cols = 12};
    static const char *const head[12] = {
        "", "kind", "agent 1", "agent 2", "judge", "dialogues", "done", "failed", "open",
        "agent 2 agrees", "final = agent 1", "final = agent 2"};
    for (size_t c = 0; c < 12; c++) table_text(&t, "%s", head[c]);
    int any_hard = 0;
    for (size_t i = 0; i < st->n_debates; i++) {
        const ds_debate *db = &st->debates[i];
        any_hard |= strcmp(db->kind, "hard") == 0;
        table_text(&t, "[%zu]", i + 1);
        table_name(&t, db->kind);
        for (int a = 0; a < 3; a++) table_name(&t, db->agents[a]);
        table_text(&t, "%zu", db->dialogues);
        table_text(&t, "%zu", db->done);
        table_text(&t, "%zu", db->failed);
        table_text(&t, "%zu", db->open);
        size_t k[3] = {db->n_agent2_agrees, db->n_final_is_agent1, db->n_final_is_agent2};
        size_t n[3] = {db->n_agent2_valid, db->n_final_valid, db->n_final_valid};
        for (int m = 0; m < 3; m++) {
            double x = share(k[m], n[m]);
            if (isnan(x)) table_text(&t, "n/a (of 0)");
            else table_text(&t, "%.1f%% (of %zu)", 100.0 * x, n[m]);
        }
    }
    int rc = arb__buf_printf(b, "Debates (METHODS 2.5): %zu set-up%s; shares over done "
                                "dialogues with a valid verdict (A-D)\n",
                             st->n_debates, st->n_debates == 1 ? "" : "s") ||
             table_put(b, &t, 2, 5);
    table_free(&t);
    if (!rc && any_hard)
        rc = arb__buf_puts(b, "  hard: agent 2 was told to disagree, so a low \"agent 2 agrees\" "
                              "means it obeyed\n");
    for (size_t i = 0; !rc && i < st->n_debates; i++)
        rc = arb__buf_printf(b, "  [%zu] config ", i + 1) ||
             arb__buf_put_safe(b, st->debates[i].config) || arb__buf_puts(b, "\n");
    return rc;
}

static int put_text(arb__buf *b, const arb_discussion_stats *st)
{
    if (st->n_discussions == 0 && st->n_debates == 0)
        return arb__buf_puts(b, "no discussions or debates in the store: nothing to report\n");
    if (st->n_discussions &&
        arb__buf_printf(b, "Peer discussions (METHODS 7): %zu set-up%s\n", st->n_discussions,
                        st->n_discussions == 1 ? "" : "s"))
        return -1;
    for (size_t i = 0; i < st->n_discussions; i++) {
        const ds_discussion *ds = &st->discussions[i];
        if (arb__buf_puts(b, "\n") || put_discussion_header(b, ds, i + 1) ||
            put_discussion_summary(b, ds, &st->params) || put_reviewers(b, ds, &st->params) ||
            put_agreement(b, ds))
            return -1;
    }
    if (st->n_debates && ((st->n_discussions && arb__buf_puts(b, "\n")) || put_debates(b, st)))
        return -1;
    return 0;
}

/* Renders every set-up as aligned plain text for a terminal (names made safe). Returns a
** string owned by the caller (arb_free), or NULL when out of memory or st is NULL. */
char *arb_discussion_stats_to_text(const arb_discussion_stats *st)
{
    if (!st) return NULL;
    arb__buf b;
    arb__buf_init(&b, 0);
    if (put_text(&b, st)) {
        arb__buf_free(&b);
        return NULL;
    }
    return arb__buf_steal(&b);
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static json_t *json_count(size_t n) { return json_integer((json_int_t)n); }

/* A count that exists only with labels: null without. */
static json_t *json_label_count(const arb_discussion_stats_params *p, size_t n)
{
    return p->use_labels ? json_count(n) : json_null();
}

/* One role's OA / OH: "oa", "oh", "oa_rate" count turns (as before issue 12); the
** "*_discussions" keys count discussions, the primary figures (see the file comment). */
static json_t *json_role(const ds_reviewer *rv, int role)
{
    json_t *o = json_object();
    if (!o) return NULL;
    size_t oa = rv->oa_discussions[role], oh = rv->oh_discussions[role];
    int bad = arb__json_set(o, "discussions", json_count(rv->discussions[role]));
    bad |= arb__json_set(o, "oa_discussions", json_count(oa));
    bad |= arb__json_set(o, "oh_discussions", json_count(oh));
    bad |= arb__json_set(o, "neither_discussions", json_count(rv->discussions[role] - oa - oh));
    bad |= arb__json_set(o, "oa_discussion_rate", arb__json_metric(share(oa, oa + oh)));
    bad |= arb__json_set(o, "oa", json_count(rv->oa[role]));
    bad |= arb__json_set(o, "oh", json_count(rv->oh[role]));
    bad |= arb__json_set(o, "oa_rate",
                         arb__json_metric(share(rv->oa[role], rv->oa[role] + rv->oh[role])));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_discussion(const ds_discussion *ds, const arb_discussion_stats_params *p)
{
    json_t *o = json_object();
    json_t *reviewers = json_array();
    json_t *stats = json_array();
    json_t *turns = json_object();
    int bad = !o || !reviewers || !stats || !turns;
    for (size_t r = 0; !bad && r < ds->n_reviewers; r++) {
        const ds_reviewer *rv = &ds->reviewers[r];
        bad |= json_array_append_new(reviewers, arb__json_name(rv->name));
        json_t *s = json_object();
        if (!s) {
            bad = 1;
            break;
        }
        int b2 = arb__json_set(s, "reviewer", arb__json_name(rv->name));
        b2 |= arb__json_set(s, "initial_accuracy",
                            arb__json_metric(p->use_labels ? share(rv->n_initial_correct,
                                                                   rv->n_initial_labelled)
                                                           : NAN));
        b2 |= arb__json_set(s, "n_initial_labelled", json_label_count(p, rv->n_initial_labelled));
        b2 |= arb__json_set(s, "leader", json_role(rv, 0));
        b2 |= arb__json_set(s, "follower", json_role(rv, 1));
        bad |= b2 | json_array_append_new(stats, s);
    }
    for (size_t k = 0; !bad && k < ds->n_bins; k++) {
        char key[32];
        snprintf(key, sizeof key, "%zu", k);
        bad |= arb__json_set(turns, key, json_count(ds->agreement[k]));
    }
    if (!bad) bad |= arb__json_set(turns, "never", json_count(ds->never));
    if (bad) {
        json_decref(o);
        json_decref(reviewers);
        json_decref(stats);
        json_decref(turns);
        return NULL;
    }
    json_t *ci = json_null();
    if (p->use_labels && !isnan(ds->pda_lo) && !isnan(ds->pda_hi))
        ci = json_pack("[ff]", ds->pda_lo, ds->pda_hi);
    bad |= arb__json_set(o, "kind", arb__json_name(ds->kind));
    bad |= arb__json_set(o, "reviewers", reviewers);
    bad |= arb__json_set(o, "leader", ds->leader ? arb__json_name(ds->leader) : json_null());
    bad |= arb__json_set(o, "max_turns", ds->max_turns >= 0
                                             ? json_integer((json_int_t)ds->max_turns)
                                             : json_null());
    bad |= arb__json_set(o, "stop_on_agreement", ds->stop_on_agreement >= 0
                                                     ? json_boolean(ds->stop_on_agreement)
                                                     : json_null());
    json_t *config = json_loads(ds->config, 0, NULL);
    bad |= arb__json_set(o, "config", config ? config : json_null());
    bad |= arb__json_set(o, "dialogues", json_count(ds->dialogues));
    bad |= arb__json_set(o, "done", json_count(ds->done));
    bad |= arb__json_set(o, "failed", json_count(ds->failed));
    bad |= arb__json_set(o, "open", json_count(ds->open));
    bad |= arb__json_set(o, "mean_turns", arb__json_metric(share(ds->discussion_turns, ds->done)));
    bad |= arb__json_set(o, "pda", arb__json_metric(p->use_labels ? ds->pda : NAN));
    bad |= arb__json_set(o, "pda_ci", ci);
    bad |= arb__json_set(o, "n_labelled", json_label_count(p, ds->n_labelled));
    bad |= arb__json_set(o, "n_label_draws", json_label_count(p, ds->n_label_draws));
    bad |= arb__json_set(o, "n_label_ties", json_label_count(p, ds->n_label_ties));
    bad |= arb__json_set(o, "n_unlabelled", json_label_count(p, ds->n_unlabelled));
    bad |= arb__json_set(o, "n_label_items", json_label_count(p, ds->n_label_items));
    bad |= arb__json_set(o, "first_share_before",
                         arb__json_metric(share(ds->n_initial_first, ds->n_initial_valid)));
    bad |= arb__json_set(o, "n_initial_valid", json_count(ds->n_initial_valid));
    bad |= arb__json_set(o, "first_share_after",
                         arb__json_metric(share(ds->n_final_first, ds->n_final_valid)));
    bad |= arb__json_set(o, "n_final_valid", json_count(ds->n_final_valid));
    bad |= arb__json_set(o, "agreement_turns", turns);
    bad |= arb__json_set(o, "reviewer_stats", stats);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_debate(const ds_debate *db)
{
    json_t *o = json_object();
    if (!o) return NULL;
    static const char *const agent_keys[3] = {"agent1", "agent2", "judge"};
    int bad = arb__json_set(o, "kind", arb__json_name(db->kind));
    for (int a = 0; a < 3; a++)
        bad |= arb__json_set(o, agent_keys[a],
                             db->agents[a] ? arb__json_name(db->agents[a]) : json_null());
    json_t *config = json_loads(db->config, 0, NULL);
    bad |= arb__json_set(o, "config", config ? config : json_null());
    bad |= arb__json_set(o, "dialogues", json_count(db->dialogues));
    bad |= arb__json_set(o, "done", json_count(db->done));
    bad |= arb__json_set(o, "failed", json_count(db->failed));
    bad |= arb__json_set(o, "open", json_count(db->open));
    bad |= arb__json_set(o, "agent2_agrees",
                         arb__json_metric(share(db->n_agent2_agrees, db->n_agent2_valid)));
    bad |= arb__json_set(o, "n_agent2_valid", json_count(db->n_agent2_valid));
    bad |= arb__json_set(o, "final_is_agent1",
                         arb__json_metric(share(db->n_final_is_agent1, db->n_final_valid)));
    bad |= arb__json_set(o, "final_is_agent2",
                         arb__json_metric(share(db->n_final_is_agent2, db->n_final_valid)));
    bad |= arb__json_set(o, "n_final_valid", json_count(db->n_final_valid));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Renders every set-up as pretty-printed JSON (keys in the README, "Discussion statistics";
** undefined numbers null). Returns a string owned by the caller (arb_free), or NULL when out
** of memory or st is NULL. */
char *arb_discussion_stats_to_json(const arb_discussion_stats *st)
{
    if (!st) return NULL;
    char *text = NULL;
    json_t *root = json_object();
    json_t *discussions = json_array();
    json_t *debates = json_array();
    int bad = !root || !discussions || !debates;
    for (size_t i = 0; !bad && i < st->n_discussions; i++) {
        json_t *d = json_discussion(&st->discussions[i], &st->params);
        bad |= !d || json_array_append_new(discussions, d);
    }
    for (size_t i = 0; !bad && i < st->n_debates; i++) {
        json_t *d = json_debate(&st->debates[i]);
        bad |= !d || json_array_append_new(debates, d);
    }
    if (bad) {
        json_decref(discussions);
        json_decref(debates);
        goto done;
    }
    bad |= arb__json_set(root, "arbiter_version", json_string(ARB_VERSION));
    bad |= arb__json_set(root, "use_labels", json_boolean(st->params.use_labels));
    bad |= arb__json_set(root, "bootstrap", json_count(st->params.bootstrap));
    /* a seed beyond 2^63 - 1 (jansson's integers) is written as a decimal string */
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", st->params.seed);
    bad |= arb__json_set(root, "seed", st->params.seed <= (unsigned long long)INT64_MAX
                                           ? json_integer((json_int_t)st->params.seed)
                                           : json_string(seed));
    bad |= arb__json_set(root, "ci_level", arb__json_metric(st->params.ci_level));
    bad |= arb__json_set(root, "discussions", discussions);
    bad |= arb__json_set(root, "debates", debates);
    if (!bad)
        text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
done:
    json_decref(root);
    return text;
}
