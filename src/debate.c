/*
** debate.c -- multi-agent verdicts (METHODS §2.5): soft and hard debate in the side-by-side
** shape of §2.2 (candidate vs baseline, both orders, reps repetitions).
**
** Each judgment is three dependent calls: agent 1 judges the pair with the SbS template; agent
** 2 reads agent 1's reply and agrees or disagrees (hard: is told to disagree); the judge agent
** reads both and gives the final verdict. The executor sends agent 2 only once agent 1's reply
** is stored, and the judge only once both are, so a run killed at any point resumes with the
** next missing call. Every turn is a dialogue turn (its prompt and reply are the call's
** request and content); the final verdict is also a pairwise row of protocol "soft" or "hard"
** under the judge name "<mode>(<agent1>,<agent2>,<judge>)", which puts the debate into every
** SbS metric of the audit beside the judges alone.
**
** Agent 1's request is exactly an `arbiter sbs` request when the judge, template and option
** mode match, so a debate after an SbS run reuses those calls from the store.
** When agent 1's or agent 2's call fails after retries the later turns are not sent
** (counted as skipped): the judgment is E and the dialogue "failed", and a rerun retries.
** The texts come through an item window (item_window.c), a slice of whole judgments at a time:
** an indexed dataset's are read again from its files, so memory holds one slice's.
** Not here: metrics (audit.c, discussion_stats.c) and the wording of the prompts (templates/).
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { AGENT1, AGENT2, JUDGE, N_ROLES };
static const char *const role_names[N_ROLES] = {"agent1", "agent2", "judge"};

arb_debate_params arb_debate_default_params(void)
{
    arb_debate_params p;
    memset(&p, 0, sizeof p);
    p.mode = ARB_DEBATE_SOFT;
    p.template_name = "II-reason";
    p.options = 4;
    p.reps = 1;
    p.progress = -1;
    for (int i = 0; i < N_ROLES; i++) p.agents[i].sampling = arb_sampling_default();
    p.client = arb_client_default_params();
    return p;
}

typedef struct debate_run {
    arb_store *store;
    const arb_dataset *ds;
    const arb_debate_params *params;
    const char *kind;             /* "soft" or "hard" */
    arb_judge_config agents[N_ROLES];
    arb_template *tpl[N_ROLES];
    size_t n_items;
    /* The current slice's items and the two models' answers to them (load_slice): model 0 the
    ** candidate, 1 the baseline; read again from the files when ds is indexed. */
    const char *models[2];
    arb__item_window window;
    char *label;                  /* "<mode>(<a1>,<a2>,<judge>)": the pairwise judge name */
    char *participants_json;
    char *config_json;
    size_t invalid;               /* finals without a valid verdict (writer thread) */
} debate_run;

/* Node layout: judgment j = ((item * reps) + rep) * 2 + order; node = j * 3 + role. */
static void node_coords(const debate_run *r, size_t node, int *role, size_t *item, int *rep,
                        int *order)
{
    *role = (int)(node % N_ROLES);
    size_t j = node / N_ROLES;
    *order = (int)(j % 2);
    *rep = (int)((j / 2) % (size_t)r->params->reps);
    *item = j / 2 / (size_t)r->params->reps;
}

static size_t deps_of(void *ud, size_t node, size_t *deps)
{
    (void)ud;
    size_t role = node % N_ROLES, first = node - role;
    for (size_t k = 0; k < role; k++) deps[k] = first + k;
    return role;
}

static int build_call(void *ud, size_t node, const arb__call_outcome *const *deps,
                      size_t n_deps, arb__exec_request *req)
{
    debate_run *r = ud;
    int role, rep, order;
    size_t item_index;
    node_coords(r, node, &role, &item_index, &rep, &order);
    /* A later turn needs the earlier replies; after a failed call it is not sent (a dry run
    ** plans every call). */
    for (size_t k = 0; k < n_deps; k++)
        if (!r->params->dry_run && (!deps[k]->ok || deps[k]->skipped)) {
            req->skip = 1;
            return 0;
        }
    const arb_item *item = arb__item_window_item(&r->window, item_index);
    arb_prompt_vars vars = {
        .options = r->params->options,
        .agent1 = n_deps > 0 && deps[0]->content ? deps[0]->content : "",
        .agent2 = n_deps > 1 && deps[1]->content ? deps[1]->content : "",
    };
    /* order 0 shows the candidate (model 0) first */
    if (arb__sbs_render_answers(r->store, item,
                                arb__item_window_answer(&r->window, item_index, (size_t)order),
                                arb__item_window_answer(&r->window, item_index, (size_t)!order),
                                r->tpl[role], vars, req))
        return -1;
    req->judge = &r->agents[role];
    req->rep = rep;
    if (role == JUDGE) /* the debaters' turns carry no verdict */
        req->verdict = (arb__verdict_spec){ARB__VERDICT_POSITION, r->params->options,
                                           arb_template_json_field(r->tpl[role])};
    return 0;
}

/* Runs on the executor's writer thread: reads only the run's fixed data, writes through s. */
static int call_done(void *ud, arb_store *s, size_t node, const arb__call_outcome *out)
{
    debate_run *r = ud;
    int role, rep, order;
    size_t item_index;
    node_coords(r, node, &role, &item_index, &rep, &order);
    if (out->skipped && role != JUDGE) return 0; /* the judge's node records the outcome */
    const arb_item *item = arb__item_window_item(&r->window, item_index);
    const char *first = order == 0 ? r->params->candidate : r->params->baseline;
    const char *second = order == 0 ? r->params->baseline : r->params->candidate;
    arb__dialogue_ref ref = {.kind = r->kind, .item_id = item->id,
                             .answer1 = first, .answer2 = second,
                             .participants_json = r->participants_json,
                             .config_json = r->config_json, .rep = rep};
    long long dialogue_id = 0;
    if (arb__store_put_dialogue(s, &ref, &dialogue_id)) return -1;

    char verdict = 'E';
    if (out->ok && out->content)
        verdict = arb_verdict_extract(out->content, strlen(out->content), r->params->options,
                                      arb_template_json_field(r->tpl[role]));
    char verdict_text[2] = {verdict, 0};
    if (!out->skipped && arb__store_put_turn(s, dialogue_id, role, r->agents[role].name,
                                             role_names[role], out->call_id, verdict_text))
        return -1;
    if (role != JUDGE) return 0;

    if (out->ok && verdict == 'E') r->invalid++;
    if (arb__store_end_dialogue(s, dialogue_id, verdict_text, out->ok ? "done" : "failed",
                                JUDGE))
        return -1;
    arb__pairwise_row row = {
        .protocol = r->kind,
        .judge_name = r->label,
        .item_id = item->id,
        .candidate = r->params->candidate,
        .baseline = r->params->baseline,
        .template_name = arb_template_name(r->tpl[AGENT1]),
        .options = r->params->options,
        .order = order,
        .rep = rep,
        .position_verdict = verdict,
        .model_verdict = arb_verdict_to_model(verdict, order),
        .call_id = out->call_id,
    };
    return arb__store_put_pairwise(s, &row) ? -1 : 0;
}

static arb_status count_invalid(void *ud, arb_store *s, arb_status st, arb_run_stats *stats)
{
    (void)s;
    debate_run *r = ud;
    stats->invalid = r->invalid;
    r->invalid = 0; /* a pass's count: --batch wait passes over the plan again */
    return st;
}

/* The set-up's names and settings as JSON: the label, the dialogue's participants and config,
** and the run's parameters (nothing secret: the key's variable name at most). */
static arb_status describe(debate_run *r, char **params_out)
{
    const arb_debate_params *p = r->params;
    *params_out = NULL;
    r->label = arb__sprintf("%s(%s,%s,%s)", r->kind, r->agents[AGENT1].name,
                            r->agents[AGENT2].name, r->agents[JUDGE].name);
    json_t *participants = json_array(), *config = json_object(), *params = json_object();
    json_t *agents = json_array();
    int bad = !r->label || !participants || !config || !params || !agents;
    for (int i = 0; i < N_ROLES && !bad; i++) {
        const arb_judge_config *a = &r->agents[i];
        bad |= json_array_append_new(participants, json_string(a->name));
        /* as every protocol records a judge: sampling, price, every endpoint ... */
        bad |= json_array_append_new(agents, arb__judge_params_json(a, NULL));
    }
    bad |= arb__json_set(config, "agent1_template", json_string(arb_template_name(r->tpl[AGENT1])));
    bad |= arb__json_set(config, "agent2_template", json_string(arb_template_name(r->tpl[AGENT2])));
    bad |= arb__json_set(config, "judge_template", json_string(arb_template_name(r->tpl[JUDGE])));
    bad |= arb__json_set(config, "options", json_integer(p->options));
    bad |= arb__json_set(params, "mode", json_string(r->kind));
    bad |= arb__json_set(params, "candidate", json_string(p->candidate));
    bad |= arb__json_set(params, "baseline", json_string(p->baseline));
    bad |= arb__json_set(params, "agents", agents);
    agents = NULL;
    bad |= arb__json_set(params, "setup", json_deep_copy(config));
    bad |= arb__json_set(params, "reps", json_integer(p->reps));
    bad |= arb__json_set(params, "n_items", json_integer((json_int_t)r->n_items));
    if (!bad) {
        r->participants_json = json_dumps(participants, JSON_COMPACT);
        r->config_json = json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS);
        *params_out = json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS);
    }
    json_decref(participants);
    json_decref(config);
    json_decref(params);
    json_decref(agents);
    if (bad || !r->participants_json || !r->config_json || !*params_out)
        return arb__store_fail(r->store, ARB_NOMEM, "out of memory");
    return ARB_OK;
}

/* The audit knows a debate by its label and agent 1's template and option mode: a set-up
** that differs only in agent 2's or the judge's template would overwrite the other's verdicts
** under the same name, so it is refused. */
static arb_status check_label_free(debate_run *r)
{
    char *other = NULL;
    arb_status st = arb__store_find_other_debate_config(
        r->store, r->kind, r->participants_json, r->config_json,
        arb_template_name(r->tpl[AGENT1]), r->params->options, &other);
    if (st == ARB_DB) return arb__store_fail(r->store, ARB_DB, "debate: %s",
                                             arb_store_errmsg(r->store));
    if (!st && other)
        st = arb__store_fail(r->store, ARB_INVALID,
                             "the store already has %s debates with other templates (%s); their "
                             "verdicts share the name %s in the audit, so this run would mix "
                             "them: give the agents other names, or use another database",
                             r->kind, other, r->label);
    free(other);
    return st;
}

/* Checks the parameters, loads the templates and checks the items (walking an indexed
** dataset's index: the same file:line messages); sets r->n_items. */
static arb_status prepare(debate_run *r)
{
    const arb_debate_params *p = r->params;
    arb_store *s = r->store;
    if (p->mode != ARB_DEBATE_SOFT && p->mode != ARB_DEBATE_HARD)
        return arb__store_fail(s, ARB_INVALID, "debate mode must be soft or hard");
    arb_status st =
        arb__sbs_check_params(s, p->candidate, p->baseline, p->options, p->reps, p->client.jobs);
    if (st) return st;
    for (int i = 0; i < N_ROLES; i++) {
        const arb_judge_config *a = &p->agents[i];
        if (!a->model || !*a->model)
            return arb__store_fail(s, ARB_INVALID, "no model given for %s", role_names[i]);
        if (!p->dry_run && (!a->base_url || !*a->base_url))
            return arb__store_fail(s, ARB_INVALID, "no URL given for %s", role_names[i]);
        if ((st = arb__judge_check(s, a, p->dry_run))) return st;
        r->agents[i] = *a;
        if (!r->agents[i].name || !*r->agents[i].name) r->agents[i].name = a->model;
    }
    const char *names[N_ROLES] = {
        p->template_name ? p->template_name : "II-reason",
        p->agent2_template ? p->agent2_template
                           : p->mode == ARB_DEBATE_HARD ? "debate-hard" : "debate-soft",
        p->judge_template ? p->judge_template : "debate-judge",
    };
    for (int i = 0; i < N_ROLES; i++) {
        char *err = NULL;
        st = arb_template_load(names[i], &r->tpl[i], &err);
        if (st) {
            arb__store_fail(s, st, "%s template: %s", role_names[i], err ? err : arb_strerror(st));
            free(err);
            return st;
        }
    }
    /* Agent 2 without agent 1's review, or the judge without both, would not be a debate. */
    if (!arb_template_uses(r->tpl[AGENT2], "agent1"))
        return arb__store_fail(s, ARB_INVALID, "agent2 template %s does not use {agent1}",
                               arb_template_name(r->tpl[AGENT2]));
    if (!arb_template_uses(r->tpl[JUDGE], "agent1") || !arb_template_uses(r->tpl[JUDGE], "agent2"))
        return arb__store_fail(s, ARB_INVALID,
                               "judge template %s must use both {agent1} and {agent2}",
                               arb_template_name(r->tpl[JUDGE]));
    return arb__sbs_check_items(s, r->ds, p->candidate, p->baseline, r->tpl, N_ROLES,
                                &r->n_items);
}

/* arb__exec_params.slice_begin: the items of nodes first .. first + n - 1 (slices of whole
** judgments) and both models' answers to them, in place of the previous slice's. */
static arb_status load_slice(void *ud, size_t first, size_t n)
{
    debate_run *r = ud;
    return arb__item_window_load_nodes(&r->window, r->store, first, n,
                                       (size_t)r->params->reps * 2 * N_ROLES);
}

arb_status arb_debate_run(arb_store *store, const arb_dataset *ds,
                          const arb_debate_params *params, arb_run_stats *stats)
{
    arb_run_stats local_stats;
    if (!stats) stats = &local_stats;
    memset(stats, 0, sizeof *stats);
    if (!store) return ARB_INVALID;
    if (!ds || !params) return arb__store_fail(store, ARB_INVALID, "no dataset or parameters");

    debate_run r = {.store = store, .ds = ds, .params = params,
                    .kind = params->mode == ARB_DEBATE_HARD ? "hard" : "soft",
                    .models = {params->candidate, params->baseline}};
    arb__item_window_init(&r.window, ds, r.models, 2);
    char *pjson = NULL;
    arb_status st = prepare(&r);
    if (!st) st = describe(&r, &pjson);
    if (!st) st = check_label_free(&r);
    /* a rerun of a finished plan on the store it left says so at once (README "Resume and
    ** caching"); otherwise every call is checked, and a complete run notes its plan */
    arb__plan_desc plan = {.protocol = r.kind, .params_json = pjson, .ds = ds,
                           .judges = r.agents, .n_judges = N_ROLES,
                           .tpls = (const arb_template *const *)r.tpl, .n_tpls = N_ROLES,
                           .options = params->options, .reps = params->reps,
                           .n_items = r.n_items, .scope = {r.kind, r.kind, 0},
                           .full_check = params->full_check};
    char fingerprint[33] = "";
    int unchanged = 0;
    if (!st)
        st = arb__plan_rerun_if_unchanged(store, &plan, &params->client, params->dry_run,
                                          fingerprint, &unchanged, stats);
    if (unchanged) goto done;
    for (int i = 0; i < N_ROLES && !st; i++)
        st = params->dry_run ? arb__store_check_judge(store, &r.agents[i])
                             : arb__store_put_judge(store, &r.agents[i]);
    if (!st && !params->dry_run) st = arb__store_put_dataset(store, ds);
    if (!st) {
        /* a judgment's three turns depend on nothing outside it: slices of whole judgments */
        long long run_id = 0;
        arb__exec_params ep = {.client = params->client, .dry_run = params->dry_run,
                               .progress = params->progress, .group = N_ROLES,
                               .slice_begin = load_slice, .run_id = &run_id};
        st = arb__exec_protocol(store, r.kind, pjson, &ep,
                                r.n_items * (size_t)params->reps * 2 * N_ROLES, deps_of,
                                build_call, call_done, count_invalid, &r, stats);
        if (!st) st = arb__plan_note_run(store, &plan, fingerprint, run_id, stats);
    }
done:
    for (int i = 0; i < N_ROLES; i++) arb_template_destroy(r.tpl[i]);
    arb__item_window_free(&r.window);
    free(r.label);
    free(r.participants_json);
    free(r.config_json);
    free(pjson);
    return st;
}
