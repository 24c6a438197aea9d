/*
** tournament.c -- the tournament protocol (METHODS §6): every unordered pair {X, Y} of the
** selected models on every item where both answered, shown in both orders, judged by every
** reviewer of a judges file (or a random K of them per comparison), reps times; the judgments
** become battle reviews for the rankings.
**
** Orientation: for a pair the model first by name (strcmp) is X, the candidate, and the other
** Y, the baseline; order 0 shows X first, order 1 Y first. Each judgment is a pairwise row of
** protocol "tournament" (3-option mode: A first better, B second better, C tie). After the run
** the battles of source "tournament" are rebuilt from every stored tournament row: i = the
** model shown first, j = the second, reviewer = the judge's name, s = -1 (A), +1 (B), 0 (C);
** a judgment without a valid verdict (E) gives no battle but is counted per judge and pair
** (arb_battles_add_left_out, stored with the battles), so `arbiter rank` and the run summary
** can say how many judgments each pair lost. So battles are a function of the stored
** judgments, and a resumed or repeated run leaves exactly one battle per judgment.
**
** Like sbs.c, everything is checked before the first request (models, answers, the template
** against every item judged, the judges' names against the store); model names never reach a
** judge; calls already stored are not sent again. random_k draws, for each (item, pair), K of
** the eligible reviewers with GSL's MT19937 seeded from a hash of (seed, item id, X, Y): the
** draw does not depend on the other items or models, so a rerun plans the same calls.
** The plan is made from what an indexed dataset's index knows (arb_dataset_load_indexed: ids,
** places, which answers exist), and each slice of calls reads its items and the contestants'
** answers through an item window (item_window.c), so a run holds one slice's texts.
** It does not rank (rank.c, peer.c) nor talk HTTP (exec.c).
*/
#include "internal.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define TOURNAMENT_OPTIONS 3 /* A, B, C = tie (METHODS §2.1) */

arb_tournament_params arb_tournament_default_params(void)
{
    arb_tournament_params p;
    memset(&p, 0, sizeof p);
    p.seed = 1;
    p.template_name = "II-reason";
    p.reps = 1;
    p.progress = -1;
    p.client = arb_client_default_params();
    return p;
}

/* One comparison: an item, a pair of models and a reviewer; it has reps x 2 judge calls. */
typedef struct tour_cmp {
    uint32_t item;  /* index into the dataset (the plan holds them in ascending order) */
    uint32_t pair;  /* index into run.pairs */
    uint32_t judge; /* index into the judges file */
} tour_cmp;

typedef struct tour_run {
    arb_store *store;
    const arb_dataset *ds;
    const arb_tournament_params *params;
    arb_template *tpl;
    const char **models;  /* sorted by name (owned array; the names borrowed from params or the
                             dataset) */
    size_t n_models;
    /* The current slice's items and every contestant's answers to them (load_slice), model m
    ** being models[m]; read again from the files when ds is indexed. */
    arb__item_window window;
    uint32_t (*pairs)[2]; /* model indices, [0] < [1] */
    size_t n_pairs;
    tour_cmp *cmps;
    size_t n_cmps, cap_cmps;
    size_t n_items;       /* items with at least one comparison */
    size_t invalid;       /* written by the done callback only */
    size_t written;       /* judgments the done callback wrote this pass (writer thread) */
    arb__recorded *recorded; /* judgments already in the store (a rerun's), or NULL */
    size_t invalid_recorded; /* those of them without a valid verdict (main thread) */
    size_t *judge_index;  /* the reviewers: their indices in the judges file (owned) */
    size_t n_judges;
} tour_run;

/* Reviewer j of the run and its contestant. */
static const arb_judge_config *judge_at(const tour_run *r, size_t j)
{
    return arb_judges_file_judge(r->params->judges, r->judge_index[j]);
}
static const char *contestant_at(const tour_run *r, size_t j)
{
    return arb_judges_file_contestant(r->params->judges, r->judge_index[j]);
}

/* The reviewers: params->judge_names looked up in the file, or every judge of it. */
static arb_status pick_judges(tour_run *r)
{
    const arb_tournament_params *p = r->params;
    size_t n_file = arb_judges_file_count(p->judges);
    r->n_judges = p->judge_names ? p->n_judge_names : n_file;
    if (!(r->judge_index = calloc(r->n_judges ? r->n_judges : 1, sizeof *r->judge_index)))
        return arb__store_fail(r->store, ARB_NOMEM, "out of memory");
    for (size_t j = 0; j < r->n_judges; j++) {
        if (!p->judge_names) {
            r->judge_index[j] = j;
            continue;
        }
        const char *want = p->judge_names[j] ? p->judge_names[j] : "";
        size_t i = 0;
        while (i < n_file && strcmp(arb_judges_file_judge(p->judges, i)->name, want)) i++;
        if (i == n_file)
            return arb__store_fail(r->store, ARB_INVALID, "no judge named \"%s\" in the judges "
                                   "file", want);
        r->judge_index[j] = i;
    }
    return ARB_OK;
}

/* Node layout: (cmp * reps + rep) * 2 + order. */
static void node_coords(const tour_run *r, size_t node, const tour_cmp **cmp, int *rep,
                        int *order)
{
    *order = (int)(node % 2);
    *rep = (int)((node / 2) % (size_t)r->params->reps);
    *cmp = &r->cmps[node / 2 / (size_t)r->params->reps];
}

/* The item of a comparison, from the current slice. */
static const arb_item *item_of(const tour_run *r, const tour_cmp *c)
{
    return arb__item_window_item(&r->window, c->item);
}

static int build_call(void *ud, size_t node, const arb__call_outcome *const *deps,
                      size_t n_deps, arb__exec_request *req)
{
    tour_run *r = ud;
    const tour_cmp *c;
    int rep, order;
    node_coords(r, node, &c, &rep, &order);
    const arb_item *item = item_of(r, c);
    /* plan() took only pairs where both models answered the item */
    const arb_answer *x = arb__item_window_answer(&r->window, c->item, r->pairs[c->pair][0]);
    const arb_answer *y = arb__item_window_answer(&r->window, c->item, r->pairs[c->pair][1]);
    /* The executor writes the messages straight into the request body, as sbs's: the texts
    ** live in the slice's window until the request is built. */
    req->tpl = r->tpl;
    req->vars = (arb_prompt_vars){.options = TOURNAMENT_OPTIONS,
                                  .question = item->question,
                                  .answer1 = (order == 0 ? x : y)->answer,
                                  .answer2 = (order == 0 ? y : x)->answer,
                                  .reference = item->reference,
                                  .language = item->language};
    req->response_format = arb_template_response_format(r->tpl);
    req->judge = judge_at(r, c->judge);
    req->rep = rep;
    req->verdict = (arb__verdict_spec){ARB__VERDICT_POSITION, TOURNAMENT_OPTIONS,
                                       arb_template_json_field(r->tpl)};
    return 0;
}

/* On the main thread: whether node's judgment is already stored from this exact request
** (arb__exec_recorded_fn), counting the recorded ones without a valid verdict. */
static int is_recorded(void *ud, size_t node, const char *call_key)
{
    tour_run *r = ud;
    const tour_cmp *c;
    int rep, order, invalid;
    node_coords(r, node, &c, &rep, &order);
    arb__recorded_pairwise row = {.judge_name = judge_at(r, c->judge)->name,
                                  .candidate = r->models[r->pairs[c->pair][0]],
                                  .baseline = r->models[r->pairs[c->pair][1]],
                                  .item_id = item_of(r, c)->id,
                                  .rep = rep,
                                  .order = order,
                                  .call_key = call_key};
    if (!arb__recorded_has_pairwise(r->recorded, &row, &invalid)) return 0;
    r->invalid_recorded += (size_t)invalid;
    return 1;
}

/* Runs on the executor's writer thread: reads the run's fixed data, writes through s, counts
** invalid verdicts (read by the caller after the run). */
static int call_done(void *ud, arb_store *s, size_t node, const arb__call_outcome *out)
{
    tour_run *r = ud;
    const tour_cmp *c;
    int rep, order;
    node_coords(r, node, &c, &rep, &order);
    char verdict = 'E';
    if (out->ok && out->content)
        verdict = arb_verdict_extract(out->content, strlen(out->content), TOURNAMENT_OPTIONS,
                                      arb_template_json_field(r->tpl));
    if (out->ok && verdict == 'E') r->invalid++;
    arb__pairwise_row row = {
        .protocol = "tournament",
        .judge_name = judge_at(r, c->judge)->name,
        .item_id = item_of(r, c)->id,
        .candidate = r->models[r->pairs[c->pair][0]],
        .baseline = r->models[r->pairs[c->pair][1]],
        .template_name = arb_template_name(r->tpl),
        .options = TOURNAMENT_OPTIONS,
        .order = order,
        .rep = rep,
        .position_verdict = verdict,
        .model_verdict = arb_verdict_to_model(verdict, order),
        .call_id = out->call_id,
    };
    if (arb__store_put_pairwise(s, &row)) return -1;
    r->written++;
    return 0;
}

/* ---- planning ------------------------------------------------------------------------------ */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Fills r->models: the given models, or every model with an answer; sorted by name. */
static arb_status select_models(tour_run *r)
{
    const arb_tournament_params *p = r->params;
    arb_store *s = r->store;
    if (p->models && p->n_models) {
        r->models = malloc(p->n_models * sizeof *r->models);
        if (!r->models) return arb__store_fail(s, ARB_NOMEM, "out of memory");
        for (size_t k = 0; k < p->n_models; k++) {
            if (!p->models[k] || !*p->models[k])
                return arb__store_fail(s, ARB_INVALID, "model %zu of the list has no name", k + 1);
            r->models[r->n_models++] = p->models[k];
        }
    } else if (arb__dataset_models(r->ds, &r->models, &r->n_models)) {
        return arb__store_fail(s, ARB_NOMEM, "out of memory");
    }
    qsort(r->models, r->n_models, sizeof *r->models, cmp_names);
    for (size_t k = 1; k < r->n_models; k++)
        if (!strcmp(r->models[k - 1], r->models[k]))
            return arb__store_fail(s, ARB_INVALID, "model \"%s\" is listed twice", r->models[k]);
    if (r->n_models < 2)
        return arb__store_fail(s, ARB_INVALID,
                               "a tournament needs at least two models, got %zu%s", r->n_models,
                               p->models && p->n_models ? "" : " in the answers file");
    if (r->n_models > 100000)
        return arb__store_fail(s, ARB_INVALID, "too many models (%zu)", r->n_models);
    /* Every model named must have answered something: a typo should not silently drop it. */
    size_t n_items = arb_dataset_item_count(r->ds);
    arb_item stub; /* what the index knows (an indexed dataset) */
    char source[512];
    for (size_t k = 0; k < r->n_models; k++) {
        size_t found = 0;
        for (size_t i = 0; i < n_items && !found; i++)
            found = arb__dataset_has_answer(
                r->ds, arb__dataset_item_outline(r->ds, i, &stub, source, sizeof source)->id,
                r->models[k]);
        if (!found)
            return arb__store_fail(s, ARB_PARSE, "no answers from model \"%s\" in the answers file",
                                   r->models[k]);
    }
    size_t m = r->n_models;
    r->n_pairs = m * (m - 1) / 2;
    r->pairs = malloc(r->n_pairs * sizeof *r->pairs);
    if (!r->pairs) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    size_t k = 0;
    for (uint32_t a = 0; a < m; a++)
        for (uint32_t b = a + 1; b < m; b++) {
            r->pairs[k][0] = a;
            r->pairs[k][1] = b;
            k++;
        }
    return ARB_OK;
}

/* The MT19937 seed of the reviewer draw of one comparison: xxh3-64 of "item\0X\0Y" keyed by
** the run's seed, folded to the 32 bits MT19937 uses. */
static unsigned long draw_seed(arb__buf *scratch, unsigned long long seed, const char *item,
                               const char *x, const char *y)
{
    arb__buf_reset(scratch);
    if (arb__buf_append(scratch, item, strlen(item) + 1) ||
        arb__buf_append(scratch, x, strlen(x) + 1) || arb__buf_append(scratch, y, strlen(y) + 1))
        return 0; /* out of memory: still a valid (if shared) seed; the plan stays consistent */
    uint64_t h = XXH3_64bits_withSeed(scratch->data, scratch->len, (XXH64_hash_t)seed);
    return (unsigned long)((h ^ (h >> 32)) & 0xffffffffu);
}

static int add_cmp(tour_run *r, uint32_t item, uint32_t pair, uint32_t judge)
{
    if (r->n_cmps == r->cap_cmps) {
        size_t cap = r->cap_cmps ? r->cap_cmps * 2 : 1024;
        tour_cmp *c = realloc(r->cmps, cap * sizeof *c);
        if (!c) return -1;
        r->cmps = c;
        r->cap_cmps = cap;
    }
    r->cmps[r->n_cmps++] = (tour_cmp){.item = item, .pair = pair, .judge = judge};
    return 0;
}

/* Plans the comparisons in the order item, pair, reviewer (so consecutive calls go to
** different endpoints and several servers share the load), checking the template against
** every item judged. It reads what the index knows of an indexed dataset (ids, places,
** whether an item has a question and a reference, which answers exist), the same facts with
** the same "file:line" as the records of a whole one. */
static arb_status plan(tour_run *r)
{
    const arb_tournament_params *p = r->params;
    arb_store *s = r->store;
    size_t n_judges = r->n_judges;
    size_t n_items = arb_dataset_item_count(r->ds);
    if (n_items == 0) return arb__store_fail(s, ARB_INVALID, "the dataset has no items");
    if (n_items > UINT32_MAX || r->n_pairs > UINT32_MAX || n_judges > UINT32_MAX)
        return arb__store_fail(s, ARB_INVALID, "the tournament is too large");
    uint32_t *eligible = malloc(n_judges * sizeof *eligible);
    uint32_t *drawn = malloc(n_judges * sizeof *drawn);
    gsl_rng *rng = p->random_k ? gsl_rng_alloc(gsl_rng_mt19937) : NULL;
    arb__buf scratch;
    arb__buf_init(&scratch, 0);
    arb_status st = ARB_OK;
    if (!eligible || !drawn || (p->random_k && !rng)) {
        st = arb__store_fail(s, ARB_NOMEM, "out of memory");
        goto done;
    }
    int needs_reference = arb_template_uses(r->tpl, "reference");
    arb_item stub;
    char source[512];
    for (uint32_t i = 0; i < n_items; i++) {
        const arb_item *it = arb__dataset_item_outline(r->ds, i, &stub, source, sizeof source);
        size_t before = r->n_cmps;
        for (uint32_t k = 0; k < r->n_pairs; k++) {
            const char *x = r->models[r->pairs[k][0]], *y = r->models[r->pairs[k][1]];
            if (!arb__dataset_has_answer(r->ds, it->id, x) ||
                !arb__dataset_has_answer(r->ds, it->id, y))
                continue;
            size_t n_eligible = 0;
            for (uint32_t j = 0; j < n_judges; j++) {
                const char *own = contestant_at(r, j);
                if (p->exclude_self && own && (!strcmp(own, x) || !strcmp(own, y))) continue;
                eligible[n_eligible++] = j;
            }
            const uint32_t *chosen = eligible;
            size_t n_chosen = n_eligible;
            if (p->random_k && p->random_k < n_eligible) {
                gsl_rng_set(rng, draw_seed(&scratch, p->seed, it->id, x, y));
                /* gsl_ran_choose keeps the file order of the reviewers it picks. */
                gsl_ran_choose(rng, drawn, p->random_k, eligible, n_eligible, sizeof *eligible);
                chosen = drawn;
                n_chosen = p->random_k;
            }
            for (size_t c = 0; c < n_chosen; c++)
                if (add_cmp(r, i, k, chosen[c])) {
                    st = arb__store_fail(s, ARB_NOMEM, "out of memory");
                    goto done;
                }
        }
        if (r->n_cmps == before) continue;
        r->n_items++;
        if ((st = arb__sbs_check_question(s, it))) goto done;
        if (needs_reference && arb__sbs_lacks_reference(r->ds, it)) {
            st = arb__store_fail(s, ARB_PARSE,
                                 "%s: item \"%s\" has no \"reference\", which template %s needs",
                                 it->source, it->id, arb_template_name(r->tpl));
            goto done;
        }
    }
    if (r->n_cmps == 0)
        st = arb__store_fail(s, ARB_INVALID, "nothing to judge: no item has answers from two of "
                             "the models%s", p->exclude_self ? " with a reviewer left after "
                                                               "excluding its own pairs" : "");
done:
    free(eligible);
    free(drawn);
    gsl_rng_free(rng);
    arb__buf_free(&scratch);
    return st;
}

/* Checks the parameters and plans the calls. Returns ARB_OK or ARB_INVALID/ARB_PARSE with the
** message in the store. */
static arb_status validate(tour_run *r)
{
    const arb_tournament_params *p = r->params;
    arb_store *s = r->store;
    if (!p->judges || arb_judges_file_count(p->judges) == 0 || (p->judge_names && !p->n_judge_names))
        return arb__store_fail(s, ARB_INVALID, "no judges (a judges file lists the reviewers)");
    arb_status st = pick_judges(r);
    if (st) return st;
    if (p->reps < 1 || p->reps > 1000)
        return arb__store_fail(s, ARB_INVALID, "reps must be between 1 and 1000, got %d", p->reps);
    if (p->client.jobs < 1)
        return arb__store_fail(s, ARB_INVALID, "jobs must be at least 1, got %d", p->client.jobs);
    st = arb__sbs_check_single_judge(s, r->tpl);
    if (st) return st;
    size_t n_judges = r->n_judges;
    int any_contestant = 0;
    for (size_t j = 0; j < n_judges; j++) {
        const arb_judge_config *jc = judge_at(r, j);
        if (!jc->name || !*jc->name || !jc->model || !*jc->model || !jc->base_url)
            return arb__store_fail(s, ARB_INVALID, "judge %zu has no name, model or URL", j + 1);
        for (size_t k = 0; k < j; k++)
            if (!strcmp(judge_at(r, k)->name, jc->name))
                return arb__store_fail(s, ARB_INVALID, "two judges are named \"%s\"", jc->name);
        any_contestant |= contestant_at(r, j) != NULL;
    }
    if (p->exclude_self && !any_contestant)
        return arb__store_fail(s, ARB_INVALID,
                               "exclude_self needs to know which contestant each judge is: no "
                               "judge in the judges file has a \"contestant\" field");
    if ((st = select_models(r)) || (st = plan(r))) return st;
    for (size_t j = 0; j < n_judges; j++)
        if ((st = arb__judge_check(s, judge_at(r, j), p->dry_run))) return st;
    return ARB_OK;
}

/* The run's parameters as JSON for the runs table: everything that shapes the judgments and
** nothing secret (a key's variable name is recorded, never its value). NULL out of memory. */
static char *params_json(const tour_run *r)
{
    const arb_tournament_params *p = r->params;
    json_t *o = json_object(), *models = json_array(), *judges = json_array();
    int bad = !o || !models || !judges;
    for (size_t k = 0; !bad && k < r->n_models; k++)
        bad = json_array_append_new(models, arb__json_name(r->models[k]));
    for (size_t j = 0; !bad && j < r->n_judges; j++)
        bad = json_array_append_new(judges, arb__judge_params_json(judge_at(r, j),
                                                                   contestant_at(r, j)));
    if (!bad)
        bad = arb__json_set(o, "models", json_incref(models)) ||
              arb__json_set(o, "judges", json_incref(judges)) ||
              arb__json_set(o, "template", arb__json_name(arb_template_name(r->tpl))) ||
              arb__json_set(o, "options", json_integer(TOURNAMENT_OPTIONS)) ||
              arb__json_set(o, "reps", json_integer(p->reps)) ||
              arb__json_set(o, "exclude_self", json_boolean(p->exclude_self)) ||
              arb__json_set(o, "random_k", json_integer((json_int_t)p->random_k)) ||
              arb__json_set(o, "seed", json_integer((json_int_t)p->seed)) ||
              arb__json_set(o, "n_items", json_integer((json_int_t)r->n_items)) ||
              arb__json_set(o, "n_comparisons", json_integer((json_int_t)r->n_cmps));
    char *s = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(models);
    json_decref(judges);
    json_decref(o);
    return s;
}

/* ---- battles from the stored judgments ----------------------------------------------------- */


typedef struct battle_walk {
    arb_battles *b;
    arb__strtab answer_keys; /* "item\x1fmodel" of every stored answer */
    double (*styles)[ARB_STYLE__COUNT];
    size_t skipped;          /* judgments with verdict E (or not 3-option) */
    arb_status status;
} battle_walk;

static uint32_t answer_key(arb__strtab *t, const char *item, const char *model, int add)
{
    char *key = arb__sprintf("%s\x1f%s", item, model);
    if (!key) return UINT32_MAX;
    uint32_t k = add ? arb__strtab_intern(t, key) : arb__strtab_find(t, key);
    free(key);
    return k;
}

/* load_styles' walk: the battle walk and the capacity of its styles. */
typedef struct style_walk {
    arb_store *s;
    battle_walk *w;
    size_t cap;
    arb_status status; /* out of memory, its message set */
} style_walk;

static int on_answer(void *ud, const char *item, const char *model, const char *answer)
{
    style_walk *sw = ud;
    battle_walk *w = sw->w;
    if (!item || !model || !answer) return 0;
    uint32_t k = answer_key(&w->answer_keys, item, model, 1);
    if (k == UINT32_MAX) goto nomem;
    if (k >= sw->cap) {
        size_t ncap = sw->cap ? sw->cap * 2 : 256;
        while (ncap <= k) ncap *= 2;
        double (*grown)[ARB_STYLE__COUNT] = realloc(w->styles, ncap * sizeof *grown);
        if (!grown) goto nomem;
        w->styles = grown;
        sw->cap = ncap;
    }
    arb__answer_style(answer, w->styles[k]);
    return 0;
nomem:
    sw->status = arb__store_fail(sw->s, ARB_NOMEM, "out of memory");
    return 1;
}

/* Computes the style of every stored answer. */
static arb_status load_styles(arb_store *s, battle_walk *w)
{
    style_walk sw = {s, w, 0, ARB_OK};
    arb_status st = arb__store_each_answer(s, on_answer, &sw);
    return st ? st : sw.status;
}

static void copy_style(battle_walk *w, const char *item, const char *model, double *out)
{
    uint32_t k = answer_key(&w->answer_keys, item, model, 0);
    for (int c = 0; c < ARB_STYLE__COUNT; c++)
        out[c] = k == UINT32_MAX ? NAN : w->styles[k][c];
}

static int on_judgment(void *ud, const arb__pairwise_row *row)
{
    battle_walk *w = ud;
    int s = row->position_verdict == 'A' ? -1 : row->position_verdict == 'B' ? 1
          : row->position_verdict == 'C' ? 0 : 2;
    if (row->options != TOURNAMENT_OPTIONS) {
        w->skipped++;
        return 0;
    }
    if (s == 2) { /* no battle, but counted per judge and pair: rankings say what they left out */
        w->skipped++;
        w->status = arb_battles_add_left_out(w->b, row->candidate, row->baseline,
                                             row->judge_name, 1);
        return w->status != ARB_OK;
    }
    arb_battle battle = arb_battle_init();
    battle.question = row->item_id;
    battle.model_i = row->order == 0 ? row->candidate : row->baseline;
    battle.model_j = row->order == 0 ? row->baseline : row->candidate;
    battle.reviewer = row->judge_name;
    battle.s = s;
    copy_style(w, row->item_id, battle.model_i, battle.style_i);
    copy_style(w, row->item_id, battle.model_j, battle.style_j);
    w->status = arb_battles_add(w->b, &battle);
    return w->status != ARB_OK;
}

/* Rebuilds the battles of source "tournament" from every stored tournament judgment. */
static arb_status store_battles(arb_store *s)
{
    battle_walk w;
    memset(&w, 0, sizeof w);
    w.b = arb_battles_create();
    if (!w.b) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    arb_status st = load_styles(s, &w);
    if (!st) st = arb__store_each_pairwise(s, "tournament", on_judgment, &w);
    if (!st && w.status)
        st = arb__store_fail(s, w.status, "cannot build the tournament's battles: %s",
                             arb_battles_errmsg(w.b));
    if (!st) st = arb__store_wait_past_judgments(s, "tournament", TOURNAMENT_OPTIONS);
    if (!st) st = arb_store_put_battles(s, "tournament", w.b);
    arb_battles_destroy(w.b);
    arb__strtab_free(&w.answer_keys);
    free(w.styles);
    return st;
}

/* After the calls: the invalid count, and the battles rebuilt from what is stored, even when
** interrupted (what was judged is stored: keep the battles in step with it). A pass that wrote
** no judgment (a rerun: every one recorded) leaves the battles as they are when they are as
** many as the stored judgments, so as a rebuild would make them (a run killed before its
** rebuild left fewer: rebuilt then); rebuilding holds every battle in memory and was three
** quarters of a rerun's instructions (callgrind, 10,000 judgments). */
static arb_status finish_run(void *ud, arb_store *s, arb_status st, arb_run_stats *stats)
{
    tour_run *r = ud;
    stats->invalid = r->invalid + r->invalid_recorded;
    r->invalid = r->invalid_recorded = 0; /* a pass's count: --batch wait passes over the plan
                                            again */
    size_t written = r->written;
    r->written = 0;
    if (!r->params->dry_run && (st == ARB_OK || st == ARB_INTERRUPTED || st == ARB_BUDGET)) {
        int in_step = 0;
        arb_status bst = written ? ARB_OK
                                 : arb__store_battles_in_step(s, "tournament", "tournament",
                                                              TOURNAMENT_OPTIONS, &in_step);
        if (!bst && !in_step) bst = store_battles(s);
        if (bst) st = bst;
    }
    return st;
}

/* ---- the run ------------------------------------------------------------------------------- */

/* arb__exec_params.slice_begin: the items of nodes first .. first + n - 1 (those of their
** comparisons, consecutive in the plan, and any item between them without one) and every
** contestant's answers to them, in place of the previous slice's. */
static arb_status load_slice(void *ud, size_t first, size_t n)
{
    tour_run *r = ud;
    if (n == 0) return ARB_OK;
    size_t per_cmp = (size_t)r->params->reps * 2;
    size_t from = r->cmps[first / per_cmp].item, to = r->cmps[(first + n - 1) / per_cmp].item;
    return arb__item_window_load(&r->window, r->store, from, to - from + 1);
}

arb_status arb_tournament_run(arb_store *store, const arb_dataset *ds,
                              const arb_tournament_params *params, arb_run_stats *stats)
{
    arb_run_stats local_stats;
    if (!stats) stats = &local_stats;
    memset(stats, 0, sizeof *stats);
    if (!store) return ARB_INVALID;
    if (!ds || !params) return arb__store_fail(store, ARB_INVALID, "no dataset or parameters");

    tour_run r = {.store = store, .ds = ds, .params = params};
    char *pjson = NULL;
    char *tpl_err = NULL;
    arb_status st = arb_template_load(params->template_name ? params->template_name : "II-reason",
                                      &r.tpl, &tpl_err);
    if (st) {
        arb__store_fail(store, st, "%s", tpl_err ? tpl_err : arb_strerror(st));
        goto done;
    }
    if ((st = validate(&r))) goto done;
    arb__item_window_init(&r.window, ds, r.models, r.n_models);
    for (size_t j = 0; j < r.n_judges; j++) {
        const arb_judge_config *jc = judge_at(&r, j);
        if ((st = params->dry_run ? arb__store_check_judge(store, jc)
                                  : arb__store_put_judge(store, jc)))
            goto done;
    }
    if (!params->dry_run) {
        if ((st = arb__store_put_dataset(store, ds))) goto done;
        pjson = params_json(&r);
    }
    if ((st = arb__recorded_load_pairwise(store, "tournament", arb_template_name(r.tpl),
                                          TOURNAMENT_OPTIONS, arb_template_json_field(r.tpl),
                                          &r.recorded)))
        goto done;
    arb__exec_params ep = {.client = params->client, .dry_run = params->dry_run,
                           .progress = params->progress, .recorded = is_recorded,
                           .slice_begin = load_slice, .slice = arb__sbs_plan_slice};
    st = arb__exec_protocol(store, "tournament", pjson, &ep, r.n_cmps * (size_t)params->reps * 2,
                            NULL, build_call, call_done, finish_run, &r, stats);
done:
    arb_template_destroy(r.tpl);
    arb__recorded_destroy(r.recorded);
    arb__item_window_free(&r.window);
    free(r.judge_index);
    free(r.models);
    free(r.pairs);
    free(r.cmps);
    free(tpl_err);
    free(pjson);
    return st;
}
