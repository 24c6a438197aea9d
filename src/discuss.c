/*
** discuss.c -- peer discussion between two reviewers (METHODS §7), and self-discussion (one
** model at two temperatures).
**
** A discussion is about one item and one pair of answers in one order. Statement 0 is the
** leader's initial review, statement 1 the follower's (both from the initial template, with
** the three aspects and a last line 1 or 2; they do not depend on each other). Statement
** k >= 2 is discussion turn k - 1, spoken by the leader for even k and the follower for odd
** k; its prompt holds the role line, the question and answers, both initial reviews leader
** first, and every turn so far, so it depends on statements 0..k-1. The reviewers are called
** "Reviewer A" (leader) and "Reviewer B" (follower) in the prompts; model names never appear.
**
** Every statement is a node of the executor's graph, planned up front (2 + max_turns per
** discussion). A node that is not needed is skipped when its turn comes: with
** stop_on_agreement, once the last two statements agree (the two initial reviews count, so
** reviewers who agree from the start do not discuss: the departure from a literal reading of
** §7's "consecutive turns" is that the initial reviews are the first two statements); and
** after a call that failed, since the rest of the discussion would be built on nothing. The
** final verdict is the last statement's (with early stop that is the agreed verdict; without
** it the last speaker has the last word, as in §7's protocol). A failed call makes the dialogue
** "failed" with final E; a rerun sends it again and goes on from there, every call already
** stored being reused, so a discussion killed mid-way resumes at the turn it reached.
**
** Leader: reviewers[0] (first), reviewers[1] (second), or per discussion from a hash of the
** seed, item, models shown and repetition (random): the same on every rerun, as resuming
** needs.
** The texts come through an item window (item_window.c), a slice of whole discussions at a
** time: an indexed dataset's are read again from its files, so memory holds one slice's.
** Not here: the metrics (discussion_stats.c) and the prompts' wording (templates/).
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#define MAX_TURNS_LIMIT 20

arb_discuss_params arb_discuss_default_params(void)
{
    arb_discuss_params p;
    memset(&p, 0, sizeof p);
    p.leader = ARB_LEADER_FIRST;
    p.max_turns = 4;
    p.stop_on_agreement = 0;
    p.both_orders = 1;
    p.seed = 20261123ULL;
    p.initial_template = "discuss-initial";
    p.turn_template = "discuss-turn";
    p.reps = 1;
    p.progress = -1;
    for (int i = 0; i < 2; i++) p.reviewers[i].sampling = arb_sampling_default();
    p.client = arb_client_default_params();
    return p;
}

/* Why the first skipped statement of a discussion was skipped: it ends the dialogue. */
enum { END_NONE = 0, END_AGREED, END_FAILED };

typedef struct node_end {
    unsigned char reason; /* END_* */
    char verdict;         /* END_AGREED: '1' or '2' */
} node_end;

typedef struct discuss_run {
    arb_store *store;
    const arb_dataset *ds;
    const arb_discuss_params *params;
    const char *kind;                 /* "discussion" or "self-discussion" */
    arb_judge_config reviewers[2];
    arb_template *initial_tpl, *turn_tpl;
    size_t n_items;
    /* The current slice's items and the pairs' models' answers to them (load_slice), read
    ** again from the files when ds is indexed: models holds each model of the pairs once
    ** (owned array, names borrowed), pair p's first and second are models[model_of[2 * p]] and
    ** models[model_of[2 * p + 1]] (owned). */
    const char **models;
    size_t n_models, *model_of;
    arb__item_window window;
    size_t n_orders;
    size_t per_dialogue;              /* 2 + max_turns nodes */
    char *config_json;
    /* Written by build (main thread) before a node's call, read by done (writer thread)
    ** after it: the hand-over through the executor's queue orders the two. */
    node_end *ends;
    size_t invalid;                   /* statements without 1 or 2 (writer thread) */
} discuss_run;

/* Where a node sits: dialogue d = ((item * n_pairs + pair) * n_orders + order) * reps + rep,
** node = d * per_dialogue + statement. */
typedef struct coords {
    size_t item, pair;
    int order, rep, statement;
    size_t first_node; /* statement 0 of the dialogue */
} coords;

static coords node_coords(const discuss_run *r, size_t node)
{
    coords c;
    size_t d = node / r->per_dialogue;
    c.statement = (int)(node % r->per_dialogue);
    c.first_node = node - (size_t)c.statement;
    c.rep = (int)(d % (size_t)r->params->reps);
    d /= (size_t)r->params->reps;
    c.order = (int)(d % r->n_orders);
    d /= r->n_orders;
    c.pair = d % r->params->n_pairs;
    c.item = d / r->params->n_pairs;
    return c;
}

static size_t deps_of(void *ud, size_t node, size_t *deps)
{
    const discuss_run *r = ud;
    coords c = node_coords(r, node);
    if (c.statement < 2) return 0;
    for (int k = 0; k < c.statement; k++) deps[k] = c.first_node + (size_t)k;
    return (size_t)c.statement;
}

/* The models shown as answer 1 and 2. */
static void shown(const discuss_run *r, const coords *c, const char **first, const char **second)
{
    const arb_model_pair *p = &r->params->pairs[c->pair];
    *first = c->order == 0 ? p->first : p->second;
    *second = c->order == 0 ? p->second : p->first;
}

/* Index into reviewers[] of the discussion's leader. */
static int leader_of(const discuss_run *r, const coords *c)
{
    if (r->params->leader != ARB_LEADER_RANDOM) return r->params->leader == ARB_LEADER_SECOND;
    const char *first, *second;
    shown(r, c, &first, &second);
    const char *item = arb__item_window_item(&r->window, c->item)->id;
    /* chained seeds: no allocation, so build and done always agree */
    uint64_t x = XXH3_64bits_withSeed(item, strlen(item), r->params->seed);
    x = XXH3_64bits_withSeed(first, strlen(first), x);
    x = XXH3_64bits_withSeed(second, strlen(second), x);
    x = XXH3_64bits_withSeed(&c->rep, sizeof c->rep, x);
    return (int)(x >> 63);
}

/* Statement k's speaker: 0 leader, 1 follower. */
static int speaker_role(int statement) { return statement < 2 ? statement : statement % 2; }

/* '1', '2' or 'E' from a reply: the two-option verdict of §2.4 (a last line 1 or 2, [[1]],
** <answer>1</answer> ...), A/1 being answer 1. */
static char statement_verdict(const char *content)
{
    if (!content) return 'E';
    char v = arb_verdict_extract(content, strlen(content), 2, NULL);
    return v == 'A' ? '1' : v == 'B' ? '2' : 'E';
}

static int render_blocks(arb__buf *b, const arb__call_outcome *const *deps, int from, int to,
                         int initial)
{
    int rc = 0;
    for (int k = from; k < to; k++) {
        char who = speaker_role(k) ? 'B' : 'A';
        const char *text = deps[k]->content ? deps[k]->content : "";
        size_t len = strlen(text);
        while (len && (text[len - 1] == '\n' || text[len - 1] == ' ')) len--;
        if (b->len) rc |= arb__buf_puts(b, "\n\n");
        if (initial)
            rc |= arb__buf_printf(b, "[INITIAL REVIEW BY REVIEWER %c START]\n", who);
        else
            rc |= arb__buf_printf(b, "[TURN %d BY REVIEWER %c START]\n", k - 1, who);
        rc |= arb__buf_append(b, text, len);
        if (initial) rc |= arb__buf_printf(b, "\n[INITIAL REVIEW BY REVIEWER %c END]", who);
        else rc |= arb__buf_printf(b, "\n[TURN %d BY REVIEWER %c END]", k - 1, who);
    }
    return rc;
}

static int build_call(void *ud, size_t node, const arb__call_outcome *const *deps,
                      size_t n_deps, arb__exec_request *req)
{
    discuss_run *r = ud;
    coords c = node_coords(r, node);
    int k = c.statement;
    if (!r->params->dry_run && k >= 2) {
        /* Skipped before: the dialogue already ended. */
        for (size_t i = 0; i < n_deps; i++)
            if (deps[i]->skipped) {
                req->skip = 1;
                return 0;
            }
        for (size_t i = 0; i < n_deps; i++)
            if (!deps[i]->ok) {
                req->skip = 1;
                r->ends[node].reason = END_FAILED;
                return 0;
            }
        char last = statement_verdict(deps[k - 1]->content);
        if (r->params->stop_on_agreement && last != 'E' &&
            last == statement_verdict(deps[k - 2]->content)) {
            req->skip = 1;
            r->ends[node] = (node_end){.reason = END_AGREED, .verdict = last};
            return 0;
        }
    }
    const arb_item *item = arb__item_window_item(&r->window, c.item);
    int leader = leader_of(r, &c);
    int speaker = speaker_role(k) ? !leader : leader;
    arb__buf reviews, discussion;
    arb__buf_init(&reviews, 0);
    arb__buf_init(&discussion, 0);
    int rc = 0;
    if (k >= 2) {
        rc |= render_blocks(&reviews, deps, 0, 2, 1);
        rc |= render_blocks(&discussion, deps, 2, k, 0);
        if (k == 2)
            rc |= arb__buf_puts(&discussion, "(The discussion starts now: nothing has been said "
                                             "yet beyond the initial reviews.)");
    }
    int follower = speaker_role(k);
    arb_prompt_vars vars = {
        .options = 2,
        .self = follower ? "Reviewer B" : "Reviewer A",
        .other = follower ? "Reviewer A" : "Reviewer B",
        .reviews = reviews.data ? reviews.data : "",
        .discussion = discussion.data ? discussion.data : "",
    };
    int failed = -1;
    if (rc)
        arb__store_fail(r->store, ARB_NOMEM, "out of memory");
    else
        failed = arb__sbs_render_answers(
            r->store, item,
            arb__item_window_answer(&r->window, c.item, r->model_of[2 * c.pair + c.order]),
            arb__item_window_answer(&r->window, c.item, r->model_of[2 * c.pair + !c.order]),
            k < 2 ? r->initial_tpl : r->turn_tpl, vars, req);
    arb__buf_free(&reviews);
    arb__buf_free(&discussion);
    if (failed) return -1;
    req->judge = &r->reviewers[speaker];
    req->rep = c.rep;
    req->verdict = (arb__verdict_spec){ARB__VERDICT_POSITION, 2, NULL}; /* statement_verdict */
    return 0;
}

/* The dialogue row of a node's discussion (upserted; see internal.h). */
static int put_dialogue(discuss_run *r, arb_store *s, const coords *c, long long *id)
{
    const char *first, *second;
    shown(r, c, &first, &second);
    const char *item = arb__item_window_item(&r->window, c->item)->id;
    int leader = leader_of(r, c);
    json_t *names = json_array();
    int bad = !names || json_array_append_new(names, arb__json_name(r->reviewers[leader].name)) ||
              json_array_append_new(names, arb__json_name(r->reviewers[!leader].name));
    char *participants_json = bad ? NULL : json_dumps(names, JSON_COMPACT);
    json_decref(names);
    if (!participants_json) {
        arb__store_fail(s, ARB_NOMEM, "out of memory");
        return -1;
    }
    arb__dialogue_ref ref = {.kind = r->kind, .item_id = item, .answer1 = first,
                             .answer2 = second, .participants_json = participants_json,
                             .config_json = r->config_json, .rep = c->rep};
    arb_status st = arb__store_put_dialogue(s, &ref, id);
    free(participants_json);
    return st ? -1 : 0;
}

/* Runs on the executor's writer thread: writes the statement as a turn and, when it is the
** last one, ends the dialogue. */
static int call_done(void *ud, arb_store *s, size_t node, const arb__call_outcome *out)
{
    discuss_run *r = ud;
    coords c = node_coords(r, node);
    int k = c.statement;
    const node_end *end = &r->ends[node];
    if (out->skipped && end->reason == END_NONE) return 0; /* an earlier node ended it */
    long long id = 0;
    if (put_dialogue(r, s, &c, &id)) return -1;
    if (out->skipped) {
        char v[2] = {end->reason == END_AGREED ? end->verdict : 'E', 0};
        return arb__store_end_dialogue(s, id, v, end->reason == END_AGREED ? "done" : "failed",
                                       k - 1)
                   ? -1
                   : 0;
    }
    int leader = leader_of(r, &c);
    int follower = speaker_role(k);
    char v[2] = {out->ok ? statement_verdict(out->content) : 'E', 0};
    if (out->ok && v[0] == 'E') r->invalid++;
    const char *role = k < 2 ? "initial" : follower ? "follower" : "leader";
    if (arb__store_put_turn(s, id, k, r->reviewers[follower ? !leader : leader].name, role,
                            out->call_id, v))
        return -1;
    if (!out->ok && k < 2) return 0; /* statement 2 finds the failure and ends the dialogue */
    if (!out->ok || k == (int)r->per_dialogue - 1)
        return arb__store_end_dialogue(s, id, v, out->ok ? "done" : "failed", k) ? -1 : 0;
    return 0;
}

static arb_status count_invalid(void *ud, arb_store *s, arb_status st, arb_run_stats *stats)
{
    (void)s;
    discuss_run *r = ud;
    stats->invalid = r->invalid;
    r->invalid = 0; /* a pass's count: --batch wait passes over the plan again */
    return st;
}

static const char *const leader_names[] = {"first", "second", "random"};

/* The set-up as canonical JSON (dialogues.config) and the run's parameters (runs.params). */
static arb_status describe(discuss_run *r, char **params_out)
{
    const arb_discuss_params *p = r->params;
    *params_out = NULL;
    json_t *config = json_object(), *reviewers = json_array(), *params = NULL;
    int bad = !config || !reviewers;
    for (int i = 0; i < 2 && !bad; i++)
        bad |= json_array_append_new(reviewers, arb__json_name(r->reviewers[i].name));
    bad |= arb__json_set(config, "reviewers", reviewers);
    bad |= arb__json_set(config, "leader", json_string(leader_names[p->leader]));
    bad |= arb__json_set(config, "max_turns", json_integer(p->max_turns));
    bad |= arb__json_set(config, "stop_on_agreement", json_boolean(p->stop_on_agreement));
    bad |= arb__json_set(config, "initial_template",
                         json_string(arb_template_name(r->initial_tpl)));
    bad |= arb__json_set(config, "turn_template", json_string(arb_template_name(r->turn_tpl)));
    if (!bad) r->config_json = json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS);

    params = bad ? NULL : json_deep_copy(config);
    json_t *models = json_array(), *pairs = json_array();
    bad |= !params || !models || !pairs;
    /* each reviewer as every protocol records a judge: sampling, price, every endpoint ... */
    for (int i = 0; i < 2 && !bad; i++)
        bad |= json_array_append_new(models, arb__judge_params_json(&r->reviewers[i], NULL));
    for (size_t i = 0; i < p->n_pairs && !bad; i++)
        bad |= json_array_append_new(pairs, json_pack("[ss]", p->pairs[i].first,
                                                      p->pairs[i].second));
    if (!bad) {
        bad |= arb__json_set(params, "reviewer_models", models);
        bad |= arb__json_set(params, "pairs", pairs);
        models = pairs = NULL;
        bad |= arb__json_set(params, "kind", json_string(r->kind));
        bad |= arb__json_set(params, "both_orders", json_boolean(p->both_orders));
        bad |= arb__json_set(params, "seed", json_integer((json_int_t)p->seed));
        bad |= arb__json_set(params, "reps", json_integer(p->reps));
        bad |= arb__json_set(params, "n_items", json_integer((json_int_t)r->n_items));
    }
    if (!bad) *params_out = json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(config);
    json_decref(params);
    json_decref(models);
    json_decref(pairs);
    if (bad || !r->config_json || !*params_out)
        return arb__store_fail(r->store, ARB_NOMEM, "out of memory");
    return ARB_OK;
}

static arb_status load_template(arb_store *s, const char *name, const char *what,
                                arb_template **out)
{
    char *err = NULL;
    arb_status st = arb_template_load(name, out, &err);
    if (st) arb__store_fail(s, st, "%s template: %s", what, err ? err : arb_strerror(st));
    free(err);
    return st;
}

/* Checks the parameters, loads the templates and checks the items for every pair (walking an
** indexed dataset's index: the same file:line messages); sets r->n_items and r->models. */
static arb_status prepare(discuss_run *r)
{
    const arb_discuss_params *p = r->params;
    arb_store *s = r->store;
    if (p->leader < ARB_LEADER_FIRST || p->leader > ARB_LEADER_RANDOM)
        return arb__store_fail(s, ARB_INVALID, "leader must be first, second or random");
    if (p->max_turns < 1 || p->max_turns > MAX_TURNS_LIMIT)
        return arb__store_fail(s, ARB_INVALID, "turns must be between 1 and %d, got %d",
                               MAX_TURNS_LIMIT, p->max_turns);
    if (p->reps < 1 || p->reps > 1000)
        return arb__store_fail(s, ARB_INVALID, "reps must be between 1 and 1000, got %d", p->reps);
    if (p->client.jobs < 1)
        return arb__store_fail(s, ARB_INVALID, "jobs must be at least 1, got %d", p->client.jobs);
    if (!p->pairs || p->n_pairs == 0)
        return arb__store_fail(s, ARB_INVALID, "no pair of models to discuss");
    for (int i = 0; i < 2; i++) {
        const arb_judge_config *j = &p->reviewers[i];
        if (!j->name || !*j->name || !j->model || !*j->model)
            return arb__store_fail(s, ARB_INVALID, "reviewer %d needs a name and a model", i + 1);
        if (!p->dry_run && (!j->base_url || !*j->base_url))
            return arb__store_fail(s, ARB_INVALID, "no URL given for reviewer \"%s\"", j->name);
        arb_status st = arb__judge_check(s, j, p->dry_run);
        if (st) return st;
        r->reviewers[i] = *j;
    }
    if (!strcmp(r->reviewers[0].name, r->reviewers[1].name))
        return arb__store_fail(s, ARB_INVALID,
                               "the two reviewers have the same name \"%s\" (for a "
                               "self-discussion give each temperature its own name)",
                               r->reviewers[0].name);
    int same_model = !strcmp(r->reviewers[0].model, r->reviewers[1].model) &&
                     !strcmp(r->reviewers[0].base_url ? r->reviewers[0].base_url : "",
                             r->reviewers[1].base_url ? r->reviewers[1].base_url : "");
    r->kind = same_model ? "self-discussion" : "discussion";
    arb_status st;
    if ((st = load_template(s, p->initial_template ? p->initial_template : "discuss-initial",
                            "initial review", &r->initial_tpl)) ||
        (st = load_template(s, p->turn_template ? p->turn_template : "discuss-turn",
                            "discussion turn", &r->turn_tpl)))
        return st;
    static const char *const turn_needs[] = {"self", "reviews", "discussion"};
    for (size_t i = 0; i < sizeof turn_needs / sizeof *turn_needs; i++)
        if (!arb_template_uses(r->turn_tpl, turn_needs[i]))
            return arb__store_fail(s, ARB_INVALID,
                                   "discussion turn template %s does not use {%s}, which every "
                                   "turn needs (METHODS 7)",
                                   arb_template_name(r->turn_tpl), turn_needs[i]);
    arb_template *tpls[2] = {r->initial_tpl, r->turn_tpl};
    for (size_t i = 0; i < p->n_pairs; i++) {
        const arb_model_pair *mp = &p->pairs[i];
        if (!mp->first || !*mp->first || !mp->second || !*mp->second)
            return arb__store_fail(s, ARB_INVALID, "pair %zu: both models are needed", i + 1);
        if (!strcmp(mp->first, mp->second))
            return arb__store_fail(s, ARB_INVALID, "pair %zu compares model \"%s\" with itself",
                                   i + 1, mp->first);
        /* the same discussions twice would only be planned twice */
        for (size_t j = 0; j < i; j++) {
            const arb_model_pair *q = &p->pairs[j];
            int same = !strcmp(q->first, mp->first) && !strcmp(q->second, mp->second);
            int swapped = !strcmp(q->first, mp->second) && !strcmp(q->second, mp->first);
            if (same || (swapped && p->both_orders))
                return arb__store_fail(s, ARB_INVALID,
                                       "pairs %zu and %zu are the same pair of models%s", j + 1,
                                       i + 1, same ? "" : " (both orders are discussed anyway)");
        }
        if ((st = arb__sbs_check_items(s, r->ds, mp->first, mp->second, tpls, 2, &r->n_items)))
            return st;
    }
    /* each model once: a window reads a model's answers once */
    r->models = calloc(2 * p->n_pairs, sizeof *r->models);
    r->model_of = calloc(2 * p->n_pairs, sizeof *r->model_of);
    if (!r->models || !r->model_of) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    for (size_t i = 0; i < 2 * p->n_pairs; i++) {
        const char *name = i % 2 ? p->pairs[i / 2].second : p->pairs[i / 2].first;
        size_t m = 0;
        while (m < r->n_models && strcmp(r->models[m], name)) m++;
        if (m == r->n_models) r->models[r->n_models++] = name;
        r->model_of[i] = m;
    }
    arb__item_window_init(&r->window, r->ds, r->models, r->n_models);
    r->n_orders = p->both_orders ? 2 : 1;
    r->per_dialogue = 2 + (size_t)p->max_turns;
    return ARB_OK;
}

/* arb__exec_params.slice_begin: the items of nodes first .. first + n - 1 (slices of whole
** discussions) and the pairs' answers to them, in place of the previous slice's. */
static arb_status load_slice(void *ud, size_t first, size_t n)
{
    discuss_run *r = ud;
    return arb__item_window_load_nodes(&r->window, r->store, first, n,
                                       r->params->n_pairs * r->n_orders *
                                           (size_t)r->params->reps * r->per_dialogue);
}

arb_status arb_discuss_run(arb_store *store, const arb_dataset *ds,
                           const arb_discuss_params *params, arb_run_stats *stats)
{
    arb_run_stats local_stats;
    if (!stats) stats = &local_stats;
    memset(stats, 0, sizeof *stats);
    if (!store) return ARB_INVALID;
    if (!ds || !params) return arb__store_fail(store, ARB_INVALID, "no dataset or parameters");

    discuss_run r = {.store = store, .ds = ds, .params = params};
    char *pjson = NULL;
    arb_status st = prepare(&r);
    if (!st) st = describe(&r, &pjson);
    /* a rerun of a finished plan on the store it left says so at once (README "Resume and
    ** caching"); otherwise every call is checked, and a complete run notes its plan */
    const arb_template *tpls[2] = {r.initial_tpl, r.turn_tpl};
    arb__plan_desc plan = {.protocol = r.kind, .params_json = pjson, .ds = ds,
                           .judges = r.reviewers, .n_judges = 2, .tpls = tpls, .n_tpls = 2,
                           .options = 2, .reps = params->reps, .n_items = r.n_items,
                           .scope = {r.kind, NULL, 0}, .full_check = params->full_check};
    char fingerprint[33] = "";
    int unchanged = 0;
    if (!st)
        st = arb__plan_rerun_if_unchanged(store, &plan, &params->client, params->dry_run,
                                          fingerprint, &unchanged, stats);
    if (unchanged) goto done;
    for (int i = 0; i < 2 && !st; i++)
        st = params->dry_run ? arb__store_check_judge(store, &r.reviewers[i])
                             : arb__store_put_judge(store, &r.reviewers[i]);
    if (!st && !params->dry_run) st = arb__store_put_dataset(store, ds);
    size_t n_nodes = 0;
    if (!st) {
        n_nodes = r.n_items * params->n_pairs * r.n_orders * (size_t)params->reps *
                  r.per_dialogue;
        r.ends = calloc(n_nodes ? n_nodes : 1, sizeof *r.ends);
        if (!r.ends) st = arb__store_fail(store, ARB_NOMEM, "out of memory");
    }
    if (!st) {
        /* a statement depends only on its own discussion's: slices of whole discussions */
        long long run_id = 0;
        arb__exec_params ep = {.client = params->client, .dry_run = params->dry_run,
                               .progress = params->progress, .group = r.per_dialogue,
                               .slice_begin = load_slice, .run_id = &run_id};
        st = arb__exec_protocol(store, r.kind, pjson, &ep, n_nodes, deps_of, build_call,
                                call_done, count_invalid, &r, stats);
        if (!st) st = arb__plan_note_run(store, &plan, fingerprint, run_id, stats);
    }
done:
    arb_template_destroy(r.initial_tpl);
    arb_template_destroy(r.turn_tpl);
    arb__item_window_free(&r.window);
    free(r.models);
    free(r.model_of);
    free(r.config_json);
    free(r.ends);
    free(pjson);
    return st;
}
