/*
** sbs.c -- the side-by-side protocol (METHODS §2.2): candidate vs baseline on every item,
** judged in both orders (run 0 candidate first, run 1 baseline first) and repeated reps times,
** by one judge or by each of several (every judge judges everything).
**
** Everything the run needs is checked before the first request: both models answered every
** item, the template renders for every item (a template using {reference} needs a reference
** on every item), the judge is named. Model names never reach the judge: the prompt holds only
** the question, the two answers and the template text.
** It does not compute metrics (audit.c) nor talk HTTP (exec.c, http.c).
*/
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

arb_sbs_params arb_sbs_default_params(void)
{
    arb_sbs_params p;
    memset(&p, 0, sizeof p);
    p.template_name = "II-reason";
    p.options = 4;
    p.reps = 1;
    p.progress = -1;
    p.judge.sampling = arb_sampling_default();
    p.client = arb_client_default_params();
    return p;
}

typedef struct sbs_run {
    arb_store *store;
    const arb_dataset *ds;
    const arb_sbs_params *params;
    arb_judge_config *judges; /* params->judges, or params->judge, with names filled in (owned
                                 array, strings borrowed) */
    size_t n_judges;
    arb_template *tpl;
    size_t n_items;
    /* The current slice's items and the two models' answers to them (load_slice): model 0 the
    ** candidate, 1 the baseline; looked up once per item instead of twice by each of the
    ** three callbacks (build, texts, done) of both orders, and read again from the files when
    ** ds is indexed. */
    const char *models[2];
    arb__item_window window;
    size_t invalid;          /* written by the done callback only (writer thread) */
    arb__recorded *recorded; /* judgments already in the store (a rerun's), or NULL */
    size_t invalid_recorded; /* those of them without a valid verdict (main thread) */
    /* Each judge's share of the plan digest, kept by the done callback as the judgments are
    ** written (writer thread; read by note_plan after the run): the end of a run then reads
    ** only the items and answers back, not the judgments it has just written (~4,000
    ** instructions a judgment). A resumed run's tallies break and the rows are read; they
    ** go on from one slice's writer to the next. */
    arb__rows_tally *tallies;
} sbs_run;

/* Item i (in dataset order), in the current slice. */
static const arb_item *item_at(const sbs_run *r, size_t i)
{
    return arb__item_window_item(&r->window, i);
}

/* The answer of the candidate (model 0) or the baseline (model 1) to item i of the slice
** (validate() checked that both models answered each item). */
static const arb_answer *answer_at(const sbs_run *r, size_t i, int model)
{
    return arb__item_window_answer(&r->window, i, (size_t)model);
}

/* Node layout: (((item * reps) + rep) * n_judges + judge) * 2 + order: the judges of one
** item go out together, so several endpoints share the load from the start. */
static void node_coords(const sbs_run *r, size_t node, size_t *item, int *rep, size_t *judge,
                        int *order)
{
    *order = (int)(node % 2);
    node /= 2;
    *judge = node % r->n_judges;
    node /= r->n_judges;
    *rep = (int)(node % (size_t)r->params->reps);
    *item = node / (size_t)r->params->reps;
}

static int build_call(void *ud, size_t node, const arb__call_outcome *const *deps,
                      size_t n_deps, arb__exec_request *req)
{
    sbs_run *r = ud;
    size_t item_index, judge;
    int rep, order;
    node_coords(r, node, &item_index, &rep, &judge, &order);
    const arb_item *item = item_at(r, item_index);
    /* The executor writes the messages straight into the request body (no rendered copy): the
    ** texts live in the run's dataset, and options were checked with the params. */
    const arb_answer *first = answer_at(r, item_index, order), *second = answer_at(r, item_index, !order);
    req->tpl = r->tpl;
    req->vars = (arb_prompt_vars){.options = r->params->options,
                                  .question = item->question,
                                  .answer1 = first->answer,
                                  .answer2 = second->answer,
                                  .reference = item->reference,
                                  .language = item->language};
    req->response_format = arb_template_response_format(r->tpl);
    req->judge = &r->judges[judge];
    req->rep = rep;
    req->verdict = (arb__verdict_spec){ARB__VERDICT_POSITION, r->params->options,
                                       arb_template_json_field(r->tpl)};
    return 0;
}

/* On the main thread: whether node's judgment is already stored from this exact request
** (arb__exec_recorded_fn), counting the recorded ones without a valid verdict. */
static int is_recorded(void *ud, size_t node, const char *call_key)
{
    sbs_run *r = ud;
    size_t item_index, judge;
    int rep, order, invalid;
    node_coords(r, node, &item_index, &rep, &judge, &order);
    arb__recorded_pairwise row = {.judge_name = r->judges[judge].name,
                                  .candidate = r->params->candidate,
                                  .baseline = r->params->baseline,
                                  .item_id = item_at(r, item_index)->id,
                                  .rep = rep,
                                  .order = order,
                                  .call_key = call_key};
    if (!arb__recorded_has_pairwise(r->recorded, &row, &invalid)) return 0;
    r->invalid_recorded += (size_t)invalid;
    return 1;
}

/* Runs on the executor's writer thread: it only reads the run's fixed data, writes through s
** and counts invalid verdicts (read by the caller after the run). */
static int call_done(void *ud, arb_store *s, size_t node, const arb__call_outcome *out)
{
    sbs_run *r = ud;
    size_t item_index, judge;
    int rep, order;
    node_coords(r, node, &item_index, &rep, &judge, &order);
    char verdict = 'E';
    if (out->ok && out->content)
        verdict = arb_verdict_extract(out->content, strlen(out->content), r->params->options,
                                      arb_template_json_field(r->tpl));
    if (out->ok && verdict == 'E') r->invalid++;
    arb__pairwise_row row = {
        .protocol = "sbs",
        .judge_name = r->judges[judge].name,
        .item_id = item_at(r, item_index)->id,
        .candidate = r->params->candidate,
        .baseline = r->params->baseline,
        .template_name = arb_template_name(r->tpl),
        .options = r->params->options,
        .order = order,
        .rep = rep,
        .position_verdict = verdict,
        .model_verdict = arb_verdict_to_model(verdict, order),
        .call_id = out->call_id,
        /* as arb__store_put_dataset stored them: the store compacts the request against them */
        .question = item_at(r, item_index)->question,
    };
    const arb_answer *cand = answer_at(r, item_index, 0);
    const arb_answer *base = answer_at(r, item_index, 1);
    row.candidate_answer = cand ? cand->answer : NULL;
    row.baseline_answer = base ? base->answer : NULL;
    return arb__store_put_pairwise_tallied(s, &row, &r->tallies[judge]) ? -1 : 0;
}

/* On the writer thread (arb__exec_texts_fn): the item's question and both answers, in the order
** node's request shows them, as call_done's row names them. */
static int call_texts(void *ud, size_t node, arb__call_texts *t)
{
    const sbs_run *r = ud;
    size_t item_index, judge;
    int rep, order;
    node_coords(r, node, &item_index, &rep, &judge, &order);
    const arb_item *item = item_at(r, item_index);
    const char *first = order ? r->params->baseline : r->params->candidate;
    const char *second = order ? r->params->candidate : r->params->baseline;
    const arb_answer *a1 = answer_at(r, item_index, order);
    const arb_answer *a2 = answer_at(r, item_index, !order);
    *t = (arb__call_texts){item->id, first, second, item->question, a1 ? a1->answer : NULL,
                           a2 ? a2->answer : NULL, 0, 1};
    return 1;
}

/* See internal.h. */
arb_status arb__sbs_check_params(arb_store *s, const char *candidate, const char *baseline,
                                 int options, int reps, int jobs)
{
    if (!candidate || !*candidate || !baseline || !*baseline)
        return arb__store_fail(s, ARB_INVALID, "both a candidate and a baseline model are needed");
    if (!strcmp(candidate, baseline))
        return arb__store_fail(s, ARB_INVALID, "candidate and baseline are the same model \"%s\"",
                               candidate);
    if (options < 2 || options > 4)
        return arb__store_fail(s, ARB_INVALID, "options must be 2, 3 or 4, got %d", options);
    if (reps < 1 || reps > 1000)
        return arb__store_fail(s, ARB_INVALID, "reps must be between 1 and 1000, got %d", reps);
    if (jobs < 1) return arb__store_fail(s, ARB_INVALID, "jobs must be at least 1, got %d", jobs);
    return ARB_OK;
}

/* See internal.h. */
int arb__sbs_render_answers(arb_store *s, const arb_item *item, const arb_answer *first,
                            const arb_answer *second, const arb_template *tpl,
                            arb_prompt_vars vars, arb__exec_request *req)
{
    vars.question = item->question;
    vars.answer1 = first->answer;
    vars.answer2 = second->answer;
    vars.reference = item->reference;
    vars.language = item->language;
    arb_status st = arb_template_render(tpl, &vars, &req->system, &req->user);
    if (st) {
        arb__store_fail(s, st, "%s: cannot render template %s for item \"%s\": %s", item->source,
                        arb_template_name(tpl), item->id, arb_strerror(st));
        return -1;
    }
    req->response_format = arb_template_response_format(tpl);
    return 0;
}

/* See internal.h. */
arb_status arb__sbs_check_question(arb_store *s, const arb_item *item)
{
    if (item->question) return ARB_OK;
    return arb__store_fail(s, ARB_PARSE,
                           "%s: missing field \"question\" (pairwise judging compares answers "
                           "to a question)",
                           item->source);
}

/* See internal.h. */
int arb__sbs_lacks_reference(const arb_dataset *ds, const arb_item *it)
{
    return !it->reference || (!*it->reference && !arb__dataset_is_indexed(ds));
}

/* See internal.h. */
arb_status arb__sbs_check_items(arb_store *s, const arb_dataset *ds, const char *first,
                                const char *second, arb_template *const *tpls, size_t n_tpls,
                                size_t *n_out)
{
    *n_out = 0;
    size_t n = arb_dataset_item_count(ds);
    if (n == 0) return arb__store_fail(s, ARB_INVALID, "the dataset has no items");
    arb_item stub;
    char source[512];
    size_t first_answers = 0, second_answers = 0;
    for (size_t i = 0; i < n; i++) {
        const arb_item *it = arb__dataset_item_outline(ds, i, &stub, source, sizeof source);
        first_answers += arb__dataset_has_answer(ds, it->id, first);
        second_answers += arb__dataset_has_answer(ds, it->id, second);
    }
    if (!first_answers || !second_answers)
        return arb__store_fail(s, ARB_PARSE, "no answers from model \"%s\" in the answers file",
                               !first_answers ? first : second);
    for (size_t i = 0; i < n; i++) {
        const arb_item *it = arb__dataset_item_outline(ds, i, &stub, source, sizeof source);
        arb_status st = arb__sbs_check_question(s, it);
        if (st) return st;
        const char *missing = !arb__dataset_has_answer(ds, it->id, first)    ? first
                            : !arb__dataset_has_answer(ds, it->id, second) ? second
                                                                            : NULL;
        if (missing)
            return arb__store_fail(s, ARB_PARSE, "%s: model \"%s\" has no answer to item \"%s\"",
                                   it->source, missing, it->id);
        for (size_t t = 0; t < n_tpls; t++)
            if (arb_template_uses(tpls[t], "reference") && arb__sbs_lacks_reference(ds, it))
                return arb__store_fail(s, ARB_PARSE,
                                       "%s: item \"%s\" has no \"reference\", which template %s "
                                       "needs",
                                       it->source, it->id, arb_template_name(tpls[t]));
    }
    *n_out = n;
    return ARB_OK;
}

/* See internal.h. */
arb_status arb__sbs_check_single_judge(arb_store *s, const arb_template *tpl)
{
    static const char *const multi_agent[] = {"agent1", "agent2", "self", "other", "reviews",
                                              "discussion"};
    for (size_t i = 0; i < sizeof multi_agent / sizeof *multi_agent; i++)
        if (arb_template_uses(tpl, multi_agent[i]))
            return arb__store_fail(s, ARB_INVALID,
                                   "template %s uses {%s}: it is for 'arbiter debate' or "
                                   "'arbiter discuss', not for a judge alone",
                                   arb_template_name(tpl), multi_agent[i]);
    static const char *const pointwise[] = {"answer", "task", "task_input"};
    for (size_t i = 0; i < sizeof pointwise / sizeof *pointwise; i++)
        if (arb_template_uses(tpl, pointwise[i]))
            return arb__store_fail(s, ARB_INVALID,
                                   "template %s uses {%s}: it judges one answer ('arbiter "
                                   "grade'), not a pair",
                                   arb_template_name(tpl), pointwise[i]);
    static const char *const persona[] = {"scenario", "response", "identity", "candidate1",
                                          "candidate2", "identity1", "identity2", "metrics_json",
                                          "range"};
    for (size_t i = 0; i < sizeof persona / sizeof *persona; i++)
        if (arb_template_uses(tpl, persona[i]))
            return arb__store_fail(s, ARB_INVALID,
                                   "template %s uses {%s}: it is for 'arbiter persona run', not "
                                   "for a pair of answers",
                                   arb_template_name(tpl), persona[i]);
    return ARB_OK;
}

/* Checks the parameters and the data; sets r->n_items (the texts come from the window). Returns ARB_OK or ARB_INVALID/ARB_PARSE
** with the message in the store. */
static arb_status validate(sbs_run *r)
{
    const arb_sbs_params *p = r->params;
    arb_store *s = r->store;
    arb_status st =
        arb__sbs_check_params(s, p->candidate, p->baseline, p->options, p->reps, p->client.jobs);
    if (st) return st;
    if (!p->n_judges && (!p->judge.model || !*p->judge.model))
        return arb__store_fail(s, ARB_INVALID, "no judge model given");
    if (!p->n_judges && !p->dry_run && (!p->judge.base_url || !*p->judge.base_url))
        return arb__store_fail(s, ARB_INVALID, "no judge URL given");
    st = arb__sbs_check_single_judge(s, r->tpl);
    if (st) return st;
    st = arb__sbs_check_items(s, r->ds, p->candidate, p->baseline, &r->tpl, 1, &r->n_items);
    return st ? st : arb__judge_check_list(s, r->judges, r->n_judges, p->dry_run);
}

/* The run's stats count the replies without a valid verdict, which only call_done sees. */
static arb_status count_invalid(void *ud, arb_store *s, arb_status st, arb_run_stats *stats)
{
    (void)s;
    sbs_run *r = ud;
    stats->invalid = r->invalid + r->invalid_recorded;
    r->invalid = r->invalid_recorded = 0; /* a pass's count: --batch wait passes over the plan
                                            again */
    return st;
}

/* The run's parameters as JSON for the runs table: everything that shapes the judgments and
** nothing secret (the key's variable name is recorded, never its value). One judge keeps the
** flat keys of earlier versions (judge, judge_model, judge_url, sampling); several are listed
** under "judges" as a tournament lists them. */
static char *params_json(const sbs_run *r)
{
    const arb_sbs_params *p = r->params;
    const arb_judge_config *jc = &r->judges[0];
    json_t *o = json_object();
    json_object_set_new(o, "candidate", json_string(p->candidate));
    json_object_set_new(o, "baseline", json_string(p->baseline));
    json_object_set_new(o, "template", json_string(arb_template_name(r->tpl)));
    json_object_set_new(o, "options", json_integer(p->options));
    json_object_set_new(o, "reps", json_integer(p->reps));
    if (r->n_judges > 1) {
        json_t *list = json_array();
        for (size_t j = 0; j < r->n_judges; j++)
            json_array_append_new(list, arb__judge_params_json(&r->judges[j], NULL));
        json_object_set_new(o, "judges", list);
    } else {
        /* the flat keys of earlier versions, then the rest of the judge as every protocol
        ** records it (arb__judge_params_json: sampling, price, reasoning, endpoints, ...) */
        json_object_set_new(o, "judge", json_string(jc->name));
        json_object_set_new(o, "judge_model", json_string(jc->model));
        json_object_set_new(o, "judge_url", json_string(jc->base_url));
        json_t *jo = arb__judge_params_json(jc, NULL);
        if (jo) {
            json_object_del(jo, "name");
            json_object_del(jo, "model");
            json_object_del(jo, "url");
            json_object_update_missing(o, jo);
            json_decref(jo);
        }
    }
    json_object_set_new(o, "n_items", json_integer((json_int_t)r->n_items));
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return s;
}

/* Fills r->judges (owned array) from the parameters, each named (by default its model).
** Returns 0, or -1 when out of memory. */
static int fill_judges(sbs_run *r)
{
    const arb_sbs_params *params = r->params;
    r->n_judges = params->n_judges ? params->n_judges : 1;
    r->judges = calloc(r->n_judges, sizeof *r->judges);
    r->tallies = calloc(r->n_judges, sizeof *r->tallies);
    if (!r->judges || !r->tallies) return -1;
    for (size_t j = 0; j < r->n_judges; j++) {
        r->judges[j] = params->n_judges ? params->judges[j] : params->judge;
        if (!r->judges[j].name || !*r->judges[j].name) r->judges[j].name = r->judges[j].model;
    }
    return 0;
}

/* ---- plan notes (README "Fast resume and bounded memory") ----------------------------------- */

/* Whether the run took the plain path (no dry run, batch or budget), which alone records a
** plan note or skips reading the inputs: a batch run queues, a budget may stop. */
static int plan_notes_apply(const arb_sbs_params *p)
{
    return arb__plan_notes_apply(&p->client, p->dry_run);
}

/* Whether a run that ended ARB_OK left every judgment of its plan recorded from a reply. */
static int plan_complete(const arb_sbs_params *p, const arb_run_stats *stats)
{
    return plan_notes_apply(p) && stats->planned > 0 && !stats->failed && !stats->skipped &&
           !stats->not_sent && stats->cached + stats->sent == stats->planned;
}

/* The plan's coordinates; names (n_judges entries) is filled from r->judges. */
static arb__sbs_plan_key plan_key(const sbs_run *r, const char **names)
{
    for (size_t j = 0; j < r->n_judges; j++) names[j] = r->judges[j].name;
    return (arb__sbs_plan_key){r->params->candidate, r->params->baseline,
                               arb_template_name(r->tpl), r->params->options, r->params->reps,
                               names, r->n_judges};
}

/* Records on run_id the plan's fingerprint and the store's state after the run, unless another
** run overlapped it (its judgments may then be in the state: a rerun must check every request). */
static arb_status note_plan(sbs_run *r, long long run_id, const char *fingerprint,
                            const arb_run_stats *stats)
{
    int overlapped = 0;
    arb_status ov = arb__store_run_overlapped(r->store, run_id, &overlapped);
    if (ov || overlapped) return ov; /* another run wrote meanwhile: the next run checks all */
    const char **names = calloc(r->n_judges, sizeof *names);
    if (!names) return arb__store_fail(r->store, ARB_NOMEM, "out of memory");
    arb__sbs_plan_key key = plan_key(r, names);
    arb__plan_note note = {.planned = stats->planned, .invalid = stats->invalid,
                           .n_items = r->n_items};
    snprintf(note.fingerprint, sizeof note.fingerprint, "%s", fingerprint);
    arb_status st = arb__store_sbs_plan_state_tallied(r->store, &key, r->tallies, &note.state);
    if (!st) st = arb__store_run_set_plan(r->store, run_id, &note);
    free(names);
    return st;
}

/* After the fingerprint matched note (run since_run): whether the store is as that run left
** it, and if so records this rerun (judges, a finished run with the note). *unchanged 1 then. */
static arb_status rerun_unchanged(sbs_run *r, const arb__plan_note *note, double t0,
                                  int *unchanged, arb_run_stats *stats)
{
    *unchanged = 0;
    arb_store *s = r->store;
    if (note->planned != note->n_items * (size_t)r->params->reps * r->n_judges * 2) return ARB_OK;
    const char **names = calloc(r->n_judges, sizeof *names);
    if (!names) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    arb__sbs_plan_key key = plan_key(r, names);
    arb__plan_state now;
    arb_status st = arb__store_sbs_plan_state(s, &key, &now);
    free(names);
    if (st || now.judgments != note->state.judgments || strcmp(now.digest, note->state.digest))
        return st;
    r->n_items = note->n_items;
    char *pjson = params_json(r);
    if (!pjson) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    st = arb__plan_record_unchanged(s, "sbs", pjson, r->judges, r->n_judges, note, t0, stats);
    free(pjson);
    *unchanged = !st;
    return st;
}

/* See arbiter.h. */
arb_status arb_sbs_rerun_if_unchanged(arb_store *store, const char *items_path,
                                      const char *answers_path, const arb_sbs_params *params,
                                      arb_sbs_unchanged *out, arb_run_stats *stats)
{
    arb_run_stats local_stats;
    if (!stats) stats = &local_stats;
    memset(stats, 0, sizeof *stats);
    if (!out) return ARB_INVALID;
    memset(out, 0, sizeof *out);
    if (!store) return ARB_INVALID;
    if (!params || !items_path || !answers_path || !plan_notes_apply(params)) return ARB_OK;
    double t0 = arb__now_ms();
    sbs_run r = {.store = store, .params = params};
    if (fill_judges(&r)) return arb__store_fail(store, ARB_NOMEM, "out of memory");
    char *tpl_err = NULL;
    arb_status st = ARB_OK;
    /* What arb_sbs_run would refuse, it refuses with its own words: no fingerprint then. */
    if (arb_template_load(params->template_name ? params->template_name : "II-reason", &r.tpl,
                          &tpl_err) ||
        arb__sbs_check_params(store, params->candidate, params->baseline, params->options,
                              params->reps, params->client.jobs) ||
        (!params->n_judges && (!params->judge.model || !*params->judge.model ||
                               !params->judge.base_url || !*params->judge.base_url)) ||
        arb__sbs_check_single_judge(store, r.tpl) ||
        arb__judge_check_list(store, r.judges, r.n_judges, 0) ||
        arb__sbs_plan_fingerprint(store, items_path, answers_path, params, r.judges, r.n_judges,
                                  r.tpl, out->fingerprint)) {
        out->fingerprint[0] = '\0';
        goto done;
    }
    long long since = 0;
    arb__plan_note note;
    int unchanged = 0;
    if (params->full_check ||
        (st = arb__store_find_plan(store, "sbs", out->fingerprint, &since, &note)) || !since)
        goto done;
    if ((st = rerun_unchanged(&r, &note, t0, &unchanged, stats)) || !unchanged) goto done;
    out->since_run = since;
    out->judgments = note.planned;
done:
    arb_template_destroy(r.tpl);
    free(r.judges);
    free(r.tallies);
    free(tpl_err);
    return st;
}

/* See internal.h. */
size_t arb__sbs_plan_slice = 0;

/* arb__exec_params.slice_begin: the items of nodes first .. first + n - 1 and the two models'
** answers to them, in place of the previous slice's. */
static arb_status load_slice(void *ud, size_t first, size_t n)
{
    sbs_run *r = ud;
    return arb__item_window_load_nodes(&r->window, r->store, first, n,
                                       (size_t)r->params->reps * r->n_judges * 2);
}

arb_status arb_sbs_run(arb_store *store, const arb_dataset *ds, const arb_sbs_params *params,
                       arb_run_stats *stats)
{
    arb_run_stats local_stats;
    if (!stats) stats = &local_stats;
    memset(stats, 0, sizeof *stats);
    if (!store) return ARB_INVALID;
    if (!ds || !params) return arb__store_fail(store, ARB_INVALID, "no dataset or parameters");

    sbs_run r = {.store = store, .ds = ds, .params = params};
    if (fill_judges(&r)) return arb__store_fail(store, ARB_NOMEM, "out of memory");
    char *pjson = NULL;
    char *tpl_err = NULL;
    arb_status st = arb_template_load(params->template_name ? params->template_name : "II-reason",
                                      &r.tpl, &tpl_err);
    if (st) {
        arb__store_fail(store, st, "%s", tpl_err ? tpl_err : arb_strerror(st));
        goto done;
    }
    if ((st = validate(&r))) goto done;
    r.models[0] = params->candidate;
    r.models[1] = params->baseline;
    arb__item_window_init(&r.window, ds, r.models, 2);
    for (size_t j = 0; params->dry_run && j < r.n_judges; j++)
        if ((st = arb__store_check_judge(store, &r.judges[j]))) goto done;

    if (!params->dry_run) {
        if ((st = arb__store_put_dataset(store, ds))) goto done;
        for (size_t j = 0; j < r.n_judges; j++)
            if ((st = arb__store_put_judge(store, &r.judges[j]))) goto done;
        pjson = params_json(&r);
    }
    if ((st = arb__recorded_load_pairwise(store, "sbs", arb_template_name(r.tpl), params->options,
                                          arb_template_json_field(r.tpl), &r.recorded)))
        goto done;
    long long run_id = 0;
    arb__exec_params ep = {.client = params->client, .dry_run = params->dry_run,
                           .progress = params->progress, .recorded = is_recorded,
                           .texts = call_texts,
                           .run_id = &run_id, .slice_begin = load_slice,
                           .slice = arb__sbs_plan_slice};
    st = arb__exec_protocol(store, "sbs", pjson, &ep,
                            r.n_items * (size_t)params->reps * r.n_judges * 2, NULL, build_call,
                            call_done, count_invalid, &r, stats);
    if (!st && run_id && params->plan_fingerprint && *params->plan_fingerprint &&
        plan_complete(params, stats))
        st = note_plan(&r, run_id, params->plan_fingerprint, stats);
done:
    arb_template_destroy(r.tpl);
    arb__recorded_destroy(r.recorded);
    arb__item_window_free(&r.window);
    free(r.judges);
    free(r.tallies);
    free(pjson);
    free(tpl_err);
    return st;
}
