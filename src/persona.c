/*
** persona.c -- the persona-bias protocol (METHODS §9): the same responses attributed to
** different identities, scored by each judge as JSON.
**
** Design (the calls of one judge and repetition; every call is one node of the executor):
**   phase 1: every scenario x selected category x identity x response (2): the response,
**            attributed to the identity, scored on every metric;
**   phase 2: every scenario x selected category x unordered identity pair {X, Y} (X before Y
**            in the category's list), four calls:
**              1st r1 as X, 2nd r2 as Y     1st r2 as Y, 2nd r1 as X
**              1st r1 as Y, 2nd r2 as X     1st r2 as X, 2nd r1 as Y
**            so each identity is shown first twice and second twice, with each response twice,
**            and each response is shown first twice: content and position cancel out of an
**            identity's mean and win rate.
** Repetition k of a call carries k in its call key, as in every protocol. Node layout:
** (task * n_judges + judge) * reps + rep, tasks in the order above (phase 1 first), so
** consecutive calls go to different judges.
**
** Each reply is read by persona_parse.c and stored in the done callback, in the transaction of
** its call, through arb__store_put_persona_scores: one row per metric of each response shown
** (position 0 first/only, 1 second), and in phase 2 a row "preferred" per response (1 for the
** preferred one, 0 for the other). A reply without valid scores is E: every row of the call
** has value NULL and the same reason. The executor's cache and leases give reruns that send
** nothing and resume after SIGKILL.
**
** The attribution phrase is part of the template (persona-1, persona-2). The panel of
** discussing judges (§9 "multi-agent panel") is not built yet. Nothing here computes a metric
** (the report does).
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_METRICS 16

static const char *const default_metrics[] = {"creativity", "accuracy", "efficiency",
                                              "reliability"};
static const char *const response_models[2] = {"response1", "response2"};

arb_persona_params arb_persona_default_params(void)
{
    arb_persona_params p;
    memset(&p, 0, sizeof p);
    p.phase = ARB_PERSONA_BOTH;
    p.range_lo = 0;
    p.range_hi = 10;
    p.reps = 1;
    p.progress = -1;
    p.client = arb_client_default_params();
    return p;
}

/* One call of a judge and repetition: which scenario, which category, which identities, which
** response first. */
typedef struct persona_task {
    unsigned char phase;      /* 1 or 2 */
    unsigned char first;      /* response shown first (or alone): 0 response1, 1 response2 */
    size_t scenario;          /* item index */
    size_t category;          /* index into ids.categories */
    size_t id_first, id_second; /* label indices; id_second unused in phase 1 */
} persona_task;

typedef struct persona_run {
    arb_store *store;
    const arb_persona_params *params;
    arb_dataset *ds;
    arb__persona_identities ids;
    size_t *cats;             /* selected category indices */
    size_t n_cats;
    arb__persona_metrics metrics;
    char range_text[64];      /* {range} */
    char *metrics_json;       /* {metrics_json} */
    arb_template *tpl[2];     /* phase 1, phase 2 (NULL when the phase is not run) */
    persona_task *tasks;
    size_t n_tasks, cap_tasks;
    size_t invalid;           /* written by the done callback only */
} persona_run;

static void node_coords(const persona_run *r, size_t node, const persona_task **task,
                        const arb_judge_config **judge, int *rep)
{
    size_t reps = (size_t)r->params->reps, n_judges = r->params->n_judges;
    *rep = (int)(node % reps);
    *judge = &r->params->judges[(node / reps) % n_judges];
    *task = &r->tasks[node / reps / n_judges];
}

static const char *label_of(const persona_run *r, const persona_task *t, size_t k)
{
    return r->ids.categories[t->category].labels[k];
}

static const char *response_text(const persona_run *r, const persona_task *t, int which)
{
    const arb_item *it = arb_dataset_item(r->ds, t->scenario);
    const arb_answer *a = arb_dataset_find_answer(r->ds, it->id, response_models[which]);
    return a ? a->answer : "";
}

static int build_call(void *ud, size_t node, const arb__call_outcome *const *deps,
                      size_t n_deps, arb__exec_request *req)
{
    (void)deps;
    (void)n_deps;
    persona_run *r = ud;
    const persona_task *t;
    const arb_judge_config *judge;
    int rep;
    node_coords(r, node, &t, &judge, &rep);
    const arb_item *it = arb_dataset_item(r->ds, t->scenario);
    arb_prompt_vars vars = {.options = 2, /* no option placeholder in a persona template */
                            .scenario = it->question,
                            .metrics_json = r->metrics_json,
                            .range = r->range_text};
    if (t->phase == 1) {
        vars.response = response_text(r, t, t->first);
        vars.identity = label_of(r, t, t->id_first);
    } else {
        vars.candidate1 = response_text(r, t, t->first);
        vars.candidate2 = response_text(r, t, !t->first);
        vars.identity1 = label_of(r, t, t->id_first);
        vars.identity2 = label_of(r, t, t->id_second);
    }
    return arb__exec_render(r->store, r->tpl[t->phase - 1], &vars, it, "scenario", judge, rep,
                            req);
}

/* Runs on the executor's writer thread: parses the reply and stores the call's rows. */
static int call_done(void *ud, arb_store *s, size_t node, const arb__call_outcome *out)
{
    persona_run *r = ud;
    const persona_task *t;
    const arb_judge_config *judge;
    int rep;
    node_coords(r, node, &t, &judge, &rep);
    const arb__persona_metrics *m = &r->metrics;
    double values[2][MAX_METRICS];
    int preferred = 0, bad = -1;
    char reason[256] = "no reply: the call failed (its error is stored with the call)";
    if (out->ok && out->content) {
        size_t len = strlen(out->content);
        bad = t->phase == 1
                  ? arb__persona_parse_1(out->content, len, m, values[0], reason, sizeof reason)
                  : arb__persona_parse_2(out->content, len, m, values[0], values[1], &preferred,
                                         reason, sizeof reason);
        if (bad) r->invalid++;
    } else if (out->ok) {
        snprintf(reason, sizeof reason, "the reply has no content");
        r->invalid++;
    }
    arb__persona_score_row rows[2 * (MAX_METRICS + 1)];
    size_t n = 0;
    const arb_item *it = arb_dataset_item(r->ds, t->scenario);
    int shown = t->phase == 1 ? 1 : 2;
    for (int pos = 0; pos < shown; pos++) {
        size_t n_row_metrics = m->n + (t->phase == 2);
        for (size_t k = 0; k < n_row_metrics; k++) {
            double v = NAN;
            if (!bad) v = k < m->n ? values[pos][k] : (pos == preferred ? 1.0 : 0.0);
            rows[n++] = (arb__persona_score_row){
                .protocol = t->phase == 1 ? "persona1" : "persona2",
                .judge_name = judge->name,
                .item_id = it->id,
                .subject = response_models[pos ? !t->first : t->first],
                .category = r->ids.categories[t->category].name,
                .identity = label_of(r, t, pos ? t->id_second : t->id_first),
                .position = pos,
                .round = 0,
                .metric = k < m->n ? m->names[k] : "preferred",
                .value = v,
                .reason = bad ? reason : NULL,
                .call_id = out->call_id,
            };
        }
    }
    return arb__store_put_persona_scores(s, rows, n) ? -1 : 0;
}

static arb_status count_invalid(void *ud, arb_store *s, arb_status st, arb_run_stats *stats)
{
    (void)s;
    stats->invalid = ((const persona_run *)ud)->invalid;
    return st;
}

/* ---- the plan ------------------------------------------------------------------------------ */

static int add_task(persona_run *r, persona_task t)
{
    if (arb__grow(&r->tasks, &r->cap_tasks, r->n_tasks + 1, sizeof *r->tasks)) return -1;
    r->tasks[r->n_tasks++] = t;
    return 0;
}

/* Every call of one judge and repetition, in the design's order (see the top). */
static arb_status plan(persona_run *r)
{
    size_t n_scen = arb_dataset_item_count(r->ds);
    int phase = r->params->phase;
    for (int ph = 1; ph <= 2; ph++) {
        if (!(phase & ph)) continue;
        for (size_t s = 0; s < n_scen; s++)
            for (size_t ci = 0; ci < r->n_cats; ci++) {
                size_t c = r->cats[ci], n_id = r->ids.categories[c].n_labels;
                for (size_t x = 0; x < n_id; x++) {
                    if (ph == 1) {
                        for (unsigned char resp = 0; resp < 2; resp++)
                            if (add_task(r, (persona_task){1, resp, s, c, x, x})) goto nomem;
                        continue;
                    }
                    for (size_t y = x + 1; y < n_id; y++) {
                        /* labels exchanged, positions swapped (METHODS §9) */
                        const persona_task four[4] = {{2, 0, s, c, x, y}, {2, 1, s, c, y, x},
                                                      {2, 0, s, c, y, x}, {2, 1, s, c, x, y}};
                        for (int v = 0; v < 4; v++)
                            if (add_task(r, four[v])) goto nomem;
                    }
                }
            }
    }
    return ARB_OK;
nomem:
    return arb__store_fail(r->store, ARB_NOMEM, "out of memory");
}

/* ---- checks before any request ------------------------------------------------------------- */

static arb_status read_inputs(persona_run *r)
{
    const arb_persona_params *p = r->params;
    arb_store *s = r->store;
    if (!p->scenarios_path) return arb__store_fail(s, ARB_INVALID, "no scenarios file given");
    char *err = NULL;
    size_t len;
    char *text = arb__read_file(p->scenarios_path, &len, &err);
    arb_status st = text ? arb__persona_scenarios_parse(p->scenarios_path, text, len, &r->ds, &err)
                         : ARB_IO;
    free(text);
    if (!st && p->identities_path) {
        if (!(text = arb__read_file(p->identities_path, &len, &err))) st = ARB_IO;
        else st = arb__persona_identities_parse(p->identities_path, text, len, &r->ids, &err);
        free(text);
    } else if (!st) {
        st = arb__persona_identities_default(&r->ids);
    }
    if (st) arb__store_fail(s, st, "%s", err ? err : arb_strerror(st));
    free(err);
    return st;
}

static arb_status select_categories(persona_run *r)
{
    const arb_persona_params *p = r->params;
    size_t n = p->categories ? p->n_categories : r->ids.n;
    if (!(r->cats = calloc(n ? n : 1, sizeof *r->cats)))
        return arb__store_fail(r->store, ARB_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        size_t c = i;
        if (p->categories) {
            for (c = 0; c < r->ids.n && strcmp(r->ids.categories[c].name, p->categories[i]); c++)
                ;
            if (c == r->ids.n) {
                arb__buf known;
                arb__buf_init(&known, 0);
                for (size_t k = 0; k < r->ids.n; k++)
                    arb__buf_printf(&known, "%s%s", k ? ", " : "", r->ids.categories[k].name);
                arb_status st = arb__store_fail(r->store, ARB_INVALID,
                                                "unknown category \"%s\" (known: %s)",
                                                p->categories[i], known.data ? known.data : "");
                arb__buf_free(&known);
                return st;
            }
            for (size_t k = 0; k < r->n_cats; k++)
                if (r->cats[k] == c)
                    return arb__store_fail(r->store, ARB_INVALID, "category \"%s\" given twice",
                                           p->categories[i]);
        }
        r->cats[r->n_cats++] = c;
    }
    if (!r->n_cats) return arb__store_fail(r->store, ARB_INVALID, "no category selected");
    return ARB_OK;
}

/* Metric names, range, {metrics_json} and {range}. */
static arb_status check_metrics(persona_run *r)
{
    static const char *const reserved[] = {"preferred", "reasons", "candidate_1", "candidate_2"};
    const arb_persona_params *p = r->params;
    arb_store *s = r->store;
    r->metrics.names = p->metrics ? p->metrics : default_metrics;
    r->metrics.n = p->metrics ? p->n_metrics : sizeof default_metrics / sizeof *default_metrics;
    r->metrics.lo = p->range_lo;
    r->metrics.hi = p->range_hi;
    if (r->metrics.n < 1 || r->metrics.n > MAX_METRICS)
        return arb__store_fail(s, ARB_INVALID, "give 1 to %d metrics, got %zu", MAX_METRICS,
                               r->metrics.n);
    arb__buf b;
    arb__buf_init(&b, 0);
    arb_status st = ARB_OK;
    int nomem = arb__buf_puts(&b, "{");
    for (size_t k = 0; k < r->metrics.n && !st; k++) {
        const char *name = r->metrics.names[k];
        if (!name || !*name ||
            strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(name))
            st = arb__store_fail(s, ARB_INVALID,
                                 "metric \"%s\": expected lowercase letters, digits and '_'",
                                 name ? name : "");
        for (size_t j = 0; j < k && !st; j++)
            if (!strcmp(r->metrics.names[j], name))
                st = arb__store_fail(s, ARB_INVALID, "metric \"%s\" given twice", name);
        for (size_t j = 0; j < sizeof reserved / sizeof *reserved && !st; j++)
            if (!strcmp(reserved[j], name))
                st = arb__store_fail(s, ARB_INVALID,
                                     "metric \"%s\": the name is a key of the phase-2 reply", name);
        nomem |= arb__buf_printf(&b, "%s\"%s\": n", k ? ", " : "", name);
    }
    nomem |= arb__buf_puts(&b, "}");
    if (!st && !(isfinite(p->range_lo) && isfinite(p->range_hi) && p->range_lo < p->range_hi))
        st = arb__store_fail(s, ARB_INVALID, "the range must be LO-HI with LO < HI, got %g-%g",
                             p->range_lo, p->range_hi);
    if (!st && nomem) st = arb__store_fail(s, ARB_NOMEM, "out of memory");
    if (!st) {
        r->metrics_json = arb__buf_steal(&b);
        snprintf(r->range_text, sizeof r->range_text, "%g to %g", p->range_lo, p->range_hi);
    }
    arb__buf_free(&b);
    return st;
}

/* Loads the template of a phase and checks that it shows what the phase needs. */
static arb_status load_template(persona_run *r, int phase)
{
    static const char *const needs[2][4] = {{"scenario", "response", "identity", NULL},
                                            {"candidate1", "candidate2", "identity1", "identity2"}};
    static const char *const foreign[2][5] = {
        {"candidate1", "candidate2", "identity1", "identity2", NULL},
        {"response", "identity", NULL, NULL, NULL}};
    const arb_persona_params *p = r->params;
    const char *name = phase == 1 ? (p->template_1 ? p->template_1 : "persona-1")
                                  : (p->template_2 ? p->template_2 : "persona-2");
    char *err = NULL;
    arb_status st = arb_template_load(name, &r->tpl[phase - 1], &err);
    if (st) {
        arb__store_fail(r->store, st, "%s", err ? err : arb_strerror(st));
        free(err);
        return st;
    }
    const arb_template *tpl = r->tpl[phase - 1];
    for (int k = 0; k < 4 && needs[phase - 1][k]; k++)
        if (!arb_template_uses(tpl, needs[phase - 1][k]))
            return arb__store_fail(r->store, ARB_INVALID,
                                   "template %s has no {%s}: a phase-%d persona template shows it",
                                   arb_template_name(tpl), needs[phase - 1][k], phase);
    static const char *const other_protocols[] = {
        "question", "answer1", "answer2", "reference", "language", "option_list",
        "option_letters", "option_rules", "agent1", "agent2", "self", "other", "reviews",
        "discussion", "answer", "task", "task_input"};
    for (size_t k = 0; k < sizeof other_protocols / sizeof *other_protocols; k++)
        if (arb_template_uses(tpl, other_protocols[k]))
            return arb__store_fail(r->store, ARB_INVALID,
                                   "template %s uses {%s}, which a persona template has nothing "
                                   "to fill with",
                                   arb_template_name(tpl), other_protocols[k]);
    for (int k = 0; k < 5 && foreign[phase - 1][k]; k++)
        if (arb_template_uses(tpl, foreign[phase - 1][k]))
            return arb__store_fail(r->store, ARB_INVALID,
                                   "template %s uses {%s}, which phase %d does not fill",
                                   arb_template_name(tpl), foreign[phase - 1][k], phase);
    return ARB_OK;
}

static arb_status validate(persona_run *r)
{
    const arb_persona_params *p = r->params;
    arb_store *s = r->store;
    if (p->phase < ARB_PERSONA_PHASE_1 || p->phase > ARB_PERSONA_BOTH)
        return arb__store_fail(s, ARB_INVALID, "unknown phase %d (1, 2 or both)", (int)p->phase);
    if (p->reps < 1 || p->reps > 1000)
        return arb__store_fail(s, ARB_INVALID, "reps must be between 1 and 1000, got %d", p->reps);
    if (p->client.jobs < 1)
        return arb__store_fail(s, ARB_INVALID, "jobs must be at least 1, got %d", p->client.jobs);
    arb_status st;
    if ((st = check_metrics(r)) || (st = read_inputs(r)) || (st = select_categories(r)))
        return st;
    for (int ph = 1; ph <= 2; ph++)
        if ((p->phase & ph) && (st = load_template(r, ph))) return st;
    if ((st = arb__judge_check_list(s, p->judges, p->n_judges, p->dry_run))) return st;
    return plan(r);
}

/* The run's parameters for the runs table: everything that shapes the scores, nothing secret.
** NULL when out of memory. */
static char *params_json(const persona_run *r)
{
    const arb_persona_params *p = r->params;
    json_t *o = json_object(), *judges = json_array(), *cats = json_object(),
           *metrics = json_array(), *range = json_array();
    int bad = !o || !judges || !cats || !metrics || !range;
    for (size_t j = 0; !bad && j < p->n_judges; j++)
        bad = json_array_append_new(judges, arb__judge_params_json(&p->judges[j], NULL));
    for (size_t i = 0; !bad && i < r->n_cats; i++) {
        const arb__persona_category *c = &r->ids.categories[r->cats[i]];
        json_t *labels = json_array();
        for (size_t k = 0; labels && !bad && k < c->n_labels; k++)
            bad = json_array_append_new(labels, arb__json_name(c->labels[k]));
        bad = bad || arb__json_set(cats, c->name, labels);
    }
    for (size_t k = 0; !bad && k < r->metrics.n; k++)
        bad = json_array_append_new(metrics, json_string(r->metrics.names[k]));
    if (!bad)
        bad = json_array_append_new(range, json_real(p->range_lo)) ||
              json_array_append_new(range, json_real(p->range_hi)) ||
              arb__json_set(o, "judges", json_incref(judges)) ||
              arb__json_set(o, "phase", json_string(p->phase == ARB_PERSONA_BOTH ? "both"
                                                    : p->phase == 1              ? "1"
                                                                                 : "2")) ||
              arb__json_set(o, "categories", json_incref(cats)) ||
              arb__json_set(o, "metrics", json_incref(metrics)) ||
              arb__json_set(o, "range", json_incref(range)) ||
              arb__json_set(o, "template_1", r->tpl[0] ? arb__json_name(arb_template_name(r->tpl[0]))
                                                       : json_null()) ||
              arb__json_set(o, "template_2", r->tpl[1] ? arb__json_name(arb_template_name(r->tpl[1]))
                                                       : json_null()) ||
              arb__json_set(o, "scenarios", arb__json_name(p->scenarios_path)) ||
              arb__json_set(o, "identities", p->identities_path
                                                 ? arb__json_name(p->identities_path)
                                                 : json_string("built-in")) ||
              arb__json_set(o, "reps", json_integer(p->reps)) ||
              arb__json_set(o, "n_scenarios",
                            json_integer((json_int_t)arb_dataset_item_count(r->ds)));
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    json_decref(judges);
    json_decref(cats);
    json_decref(metrics);
    json_decref(range);
    return text;
}

arb_status arb_persona_run(arb_store *store, const arb_persona_params *params,
                           arb_run_stats *stats)
{
    arb_run_stats local_stats;
    if (!stats) stats = &local_stats;
    memset(stats, 0, sizeof *stats);
    if (!store) return ARB_INVALID;
    if (!params) return arb__store_fail(store, ARB_INVALID, "no parameters");
    persona_run r = {.store = store, .params = params};
    char *pjson = NULL;
    arb_status st = validate(&r);
    if (st) goto done;
    for (size_t j = 0; j < params->n_judges; j++)
        if ((st = params->dry_run ? arb__store_check_judge(store, &params->judges[j])
                                  : arb__store_put_judge(store, &params->judges[j])))
            goto done;
    if (!params->dry_run) {
        if ((st = arb__store_put_dataset(store, r.ds))) goto done;
        pjson = params_json(&r);
    }
    arb__exec_params ep = {.client = params->client, .dry_run = params->dry_run,
                           .progress = params->progress};
    st = arb__exec_protocol(store, "persona", pjson, &ep,
                            r.n_tasks * params->n_judges * (size_t)params->reps, NULL, build_call,
                            call_done, count_invalid, &r, stats);
done:
    free(pjson);
    free(r.tasks);
    free(r.cats);
    free(r.metrics_json);
    arb_template_destroy(r.tpl[0]);
    arb_template_destroy(r.tpl[1]);
    arb__persona_identities_free(&r.ids);
    arb_dataset_destroy(r.ds);
    return st;
}
