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
** The panel (§9 "multi-agent panel", --panel a,b,c --rounds R; the agents are judges of the
** run): round 0 is each agent's ordinary call above (the very node of that judge: no call is
** made twice). For every task and repetition the panel then has R rounds of one call per
** agent, round r built only once every round r-1 reply of the panel is stored (executor
** dependencies, as in debate.c); a round-r prompt (persona-panel-1, -2) shows the task as in
** round 0 plus every agent's round r-1 reply verbatim, its own included, labelled "Agent A",
** "Agent B", ... in panel order (never the judges' names). Those rows are protocol panel1 /
** panel2, round r, under the agent's name. After round R a consensus node, which makes no
** call, reads the last-round replies and stores the consensus as rows of persona1 / persona2,
** round 0, under "panel(a,b,c)" (so the analysis reads it like any judge), with the call id
** of the first agent's last-round call:
**   - per metric, the mean of the agents' scores in their valid last-round replies (E
**     replies left out; none valid: the consensus is E with that reason);
**   - phase 2: the candidate preferred by most valid agents, a tie going to the preference of
**     the first agent named (among the valid ones).
** The consensus is not stored while any last-round call failed or was not sent (a rerun sends
** it and completes the consensus). A failed call ends its task's panel for this run, as a
** failed debate turn does (the later rounds are counted as skipped); an E reply does not: the
** others see it as written. The consensus nodes are not calls: they are left out of the
** run's planned and skipped counts.
**
** The attribution phrase is part of the template (persona-1, persona-2, persona-panel-1,
** persona-panel-2). Nothing here computes a metric (the report does).
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_METRICS 16
#define MAX_PANEL 8
#define MAX_ROUNDS 10

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
    p.rounds = 1;
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
    /* the panel (n_panel 0: none) */
    size_t n_panel;
    size_t panel_judge[MAX_PANEL]; /* index into params->judges of each agent */
    int rounds;
    arb_template *panel_tpl[2];
    char *panel_label;        /* "panel(a,b,c)": the consensus's judge name */
    size_t n_solo;            /* nodes of the judges' ordinary calls (round 0); panel after */
    size_t per_block;         /* panel nodes per task and rep: n_panel * rounds + consensus */
    struct consensus *consensus; /* one per task and rep: written by the consensus node's build
                                    (main thread), read by its done (writer thread) */
    size_t n_consensus_built;
} persona_run;

/* The consensus of one task and repetition, from the panel's last-round replies. */
typedef struct consensus {
    int ready;                /* 0: not stored (a last-round call failed or was not sent) */
    int bad;                  /* no agent's reply was valid: E */
    int preferred;            /* phase 2: 0 candidate_1, 1 candidate_2 */
    long long call_id;        /* the first agent's last-round call */
    double values[2][MAX_METRICS];
    char reason[96];
} consensus;

/* Where a panel node sits: its task and rep (block = task * reps + rep), and either a round
** (1..rounds) and agent, or the consensus. */
typedef struct panel_coords {
    size_t block, task, agent;
    int rep, round, is_consensus;
} panel_coords;

static panel_coords panel_coords_of(const persona_run *r, size_t node)
{
    size_t k = node - r->n_solo, reps = (size_t)r->params->reps;
    panel_coords c = {.block = k / r->per_block};
    size_t in_block = k % r->per_block;
    c.task = c.block / reps;
    c.rep = (int)(c.block % reps);
    c.is_consensus = in_block == r->n_panel * (size_t)r->rounds;
    c.round = (int)(in_block / r->n_panel) + 1;
    c.agent = in_block % r->n_panel;
    return c;
}

/* The node of agent's call in round (0: the agent's ordinary call as a judge of the run). */
static size_t round_node(const persona_run *r, const panel_coords *c, int round, size_t agent)
{
    size_t reps = (size_t)r->params->reps;
    if (round == 0)
        return (c->task * r->params->n_judges + r->panel_judge[agent]) * reps + (size_t)c->rep;
    return r->n_solo + c->block * r->per_block + (size_t)(round - 1) * r->n_panel + agent;
}

/* A panel node depends on every agent's reply of the round before (the consensus: the last
** round). */
static size_t deps_of(void *ud, size_t node, size_t *deps)
{
    const persona_run *r = ud;
    if (node < r->n_solo) return 0;
    panel_coords c = panel_coords_of(r, node);
    int before = c.is_consensus ? r->rounds : c.round - 1;
    for (size_t a = 0; a < r->n_panel; a++) deps[a] = round_node(r, &c, before, a);
    return r->n_panel;
}

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

/* Reads the reply of a call of task t: 0 with the values (and preferred), or -1 with why. */
static int parse_reply(const persona_run *r, const persona_task *t, const char *content,
                       double values[2][MAX_METRICS], int *preferred, char *reason, size_t cap)
{
    size_t len = strlen(content);
    return t->phase == 1 ? arb__persona_parse_1(content, len, &r->metrics, values[0], reason, cap)
                         : arb__persona_parse_2(content, len, &r->metrics, values[0], values[1],
                                                preferred, reason, cap);
}

/* Renders task t's prompt with tpl for judge; self and discussion only in a panel round. */
static int render_task(persona_run *r, const persona_task *t, arb_template *tpl,
                       const arb_judge_config *judge, int rep, const char *self,
                       const char *discussion, arb__exec_request *req)
{
    const arb_item *it = arb_dataset_item(r->ds, t->scenario);
    arb_prompt_vars vars = {.options = 2, /* no option placeholder in a persona template */
                            .scenario = it->question,
                            .metrics_json = r->metrics_json,
                            .range = r->range_text,
                            .self = self,
                            .discussion = discussion};
    if (t->phase == 1) {
        vars.response = response_text(r, t, t->first);
        vars.identity = label_of(r, t, t->id_first);
    } else {
        vars.candidate1 = response_text(r, t, t->first);
        vars.candidate2 = response_text(r, t, !t->first);
        vars.identity1 = label_of(r, t, t->id_first);
        vars.identity2 = label_of(r, t, t->id_second);
    }
    int rc = arb__exec_render(r->store, tpl, &vars, it, "scenario", judge, rep, req);
    /* phase 2's "preferred" is a two-option verdict: its token's logprobs are kept
    ** (calls.logprobs); phase 1's scores have none (arb_persona_no_logprobs_reason) */
    if (!rc && t->phase == 2) req->verdict = (arb__verdict_spec){ARB__VERDICT_PREFERRED, 2, NULL};
    return rc;
}

/* The consensus of a task and rep from the last-round replies (rule at the top). Main
** thread, in the consensus node's build. */
static void compute_consensus(persona_run *r, const panel_coords *c,
                              const arb__call_outcome *const *deps, size_t n_deps)
{
    consensus *out = &r->consensus[c->block];
    const persona_task *t = &r->tasks[c->task];
    memset(out, 0, sizeof *out);
    for (size_t a = 0; a < n_deps; a++)
        if (!deps[a]->ok || deps[a]->skipped || !deps[a]->content) return;
    double sum[2][MAX_METRICS] = {{0}}, values[2][MAX_METRICS];
    size_t n_valid = 0, votes[2] = {0, 0};
    int first_choice = -1;
    for (size_t a = 0; a < n_deps; a++) {
        int preferred = 0;
        char reason[8];
        if (parse_reply(r, t, deps[a]->content, values, &preferred, reason, sizeof reason))
            continue;
        n_valid++;
        for (int pos = 0; pos < t->phase; pos++)
            for (size_t k = 0; k < r->metrics.n; k++) sum[pos][k] += values[pos][k];
        votes[preferred]++;
        if (first_choice < 0) first_choice = preferred;
    }
    out->ready = 1;
    out->call_id = deps[0]->call_id;
    if (!n_valid) {
        out->bad = 1;
        snprintf(out->reason, sizeof out->reason,
                 "no agent of the panel gave valid scores in round %d", r->rounds);
        return;
    }
    for (int pos = 0; pos < t->phase; pos++)
        for (size_t k = 0; k < r->metrics.n; k++)
            out->values[pos][k] = sum[pos][k] / (double)n_valid;
    out->preferred = votes[0] > votes[1] ? 0 : votes[1] > votes[0] ? 1 : first_choice;
}

/* A panel round's {discussion}: every agent's reply of the round before, as written. */
static char *previous_round(const persona_run *r, int round, const panel_coords *c,
                            const arb__call_outcome *const *deps)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    int rc = 0;
    for (size_t a = 0; a < r->n_panel; a++) {
        const char *text = deps[a]->content ? deps[a]->content : "(no reply)";
        rc |= arb__buf_printf(&b, "%sAgent %c%s, round %d:\n", a ? "\n\n" : "", (char)('A' + a),
                              a == c->agent ? " (you)" : "", round - 1);
        rc |= arb__buf_puts(&b, text);
    }
    if (rc || !b.data) {
        arb__buf_free(&b);
        return NULL;
    }
    return arb__buf_steal(&b);
}

static int build_call(void *ud, size_t node, const arb__call_outcome *const *deps,
                      size_t n_deps, arb__exec_request *req)
{
    persona_run *r = ud;
    if (node < r->n_solo) {
        const persona_task *t;
        const arb_judge_config *judge;
        int rep;
        node_coords(r, node, &t, &judge, &rep);
        return render_task(r, t, r->tpl[t->phase - 1], judge, rep, NULL, NULL, req);
    }
    panel_coords c = panel_coords_of(r, node);
    if (c.is_consensus) { /* no call: the consensus is computed here, stored by call_done */
        r->n_consensus_built++;
        if (!r->params->dry_run) compute_consensus(r, &c, deps, n_deps);
        req->skip = 1;
        return 0;
    }
    /* after a failed call the panel of this task stops (a dry run plans every call) */
    for (size_t k = 0; k < n_deps; k++)
        if (!r->params->dry_run && (!deps[k]->ok || deps[k]->skipped)) {
            req->skip = 1;
            return 0;
        }
    const persona_task *t = &r->tasks[c.task];
    char self[16];
    snprintf(self, sizeof self, "Agent %c", (char)('A' + c.agent));
    char *discussion = previous_round(r, c.round, &c, deps);
    if (!discussion) {
        arb__store_fail(r->store, ARB_NOMEM, "out of memory");
        return -1;
    }
    int rc = render_task(r, t, r->panel_tpl[t->phase - 1],
                         &r->params->judges[r->panel_judge[c.agent]], c.rep, self, discussion,
                         req);
    free(discussion);
    return rc;
}

/* The rows of one call (or consensus) of task t: every metric of each response shown, and in
** phase 2 "preferred"; bad: every value NULL with reason. */
static int put_rows(arb_store *s, const persona_run *r, const persona_task *t,
                    const char *protocol, const char *judge_name, int round,
                    double values[2][MAX_METRICS], int preferred, int bad, const char *reason,
                    long long call_id)
{
    const arb__persona_metrics *m = &r->metrics;
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
                .protocol = protocol,
                .judge_name = judge_name,
                .item_id = it->id,
                .subject = response_models[pos ? !t->first : t->first],
                .category = r->ids.categories[t->category].name,
                .identity = label_of(r, t, pos ? t->id_second : t->id_first),
                .position = pos,
                .round = round,
                .metric = k < m->n ? m->names[k] : "preferred",
                .value = v,
                .reason = bad ? reason : NULL,
                .call_id = call_id,
            };
        }
    }
    return arb__store_put_persona_scores(s, rows, n) ? -1 : 0;
}

/* Runs on the executor's writer thread: parses the reply and stores the call's rows (or the
** consensus computed by the consensus node's build). */
static int call_done(void *ud, arb_store *s, size_t node, const arb__call_outcome *out)
{
    persona_run *r = ud;
    const persona_task *t;
    const char *judge_name, *protocol;
    int round = 0;
    if (node < r->n_solo) {
        const arb_judge_config *judge;
        int rep;
        node_coords(r, node, &t, &judge, &rep);
        judge_name = judge->name;
        protocol = t->phase == 1 ? "persona1" : "persona2";
    } else {
        panel_coords c = panel_coords_of(r, node);
        t = &r->tasks[c.task];
        if (c.is_consensus) {
            consensus *con = &r->consensus[c.block];
            if (!con->ready) return 0;
            return put_rows(s, r, t, t->phase == 1 ? "persona1" : "persona2", r->panel_label,
                            0, con->values, con->preferred, con->bad, con->reason,
                            con->call_id);
        }
        if (out->skipped) return 0;
        judge_name = r->params->judges[r->panel_judge[c.agent]].name;
        protocol = t->phase == 1 ? "panel1" : "panel2";
        round = c.round;
    }
    double values[2][MAX_METRICS];
    int preferred = 0, bad = -1;
    char reason[256] = "no reply: the call failed (its error is stored with the call)";
    if (out->ok && out->content) {
        bad = parse_reply(r, t, out->content, values, &preferred, reason, sizeof reason);
        if (bad) r->invalid++;
    } else if (out->ok) {
        snprintf(reason, sizeof reason, "the reply has no content");
        r->invalid++;
    }
    return put_rows(s, r, t, protocol, judge_name, round, values, preferred, bad, reason,
                    out->call_id);
}

/* The consensus nodes make no call: they leave the planned and skipped counts. */
static arb_status count_invalid(void *ud, arb_store *s, arb_status st, arb_run_stats *stats)
{
    (void)s;
    persona_run *r = ud;
    stats->invalid = r->invalid;
    size_t n_consensus = r->per_block ? r->n_tasks * (size_t)r->params->reps : 0;
    stats->planned -= n_consensus <= stats->planned ? n_consensus : stats->planned;
    stats->skipped -= r->n_consensus_built <= stats->skipped ? r->n_consensus_built : stats->skipped;
    r->invalid = r->n_consensus_built = 0; /* a pass's counts: --batch wait passes again */
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

/* Loads the template of a phase (panel: of the phase's panel rounds) and checks that it shows
** what the phase needs; a panel round also shows the round before ({discussion}) and may say
** which agent reads it ({self}). */
static arb_status load_template(persona_run *r, int phase, int panel)
{
    static const char *const needs[2][4] = {{"scenario", "response", "identity", NULL},
                                            {"candidate1", "candidate2", "identity1", "identity2"}};
    static const char *const foreign[2][5] = {
        {"candidate1", "candidate2", "identity1", "identity2", NULL},
        {"response", "identity", NULL, NULL, NULL}};
    const arb_persona_params *p = r->params;
    const char *name = phase == 1 ? (p->template_1 ? p->template_1 : "persona-1")
                                  : (p->template_2 ? p->template_2 : "persona-2");
    if (panel)
        name = phase == 1 ? (p->panel_template_1 ? p->panel_template_1 : "persona-panel-1")
                          : (p->panel_template_2 ? p->panel_template_2 : "persona-panel-2");
    arb_template **slot = panel ? &r->panel_tpl[phase - 1] : &r->tpl[phase - 1];
    char *err = NULL;
    arb_status st = arb_template_load(name, slot, &err);
    if (st) {
        arb__store_fail(r->store, st, "%s", err ? err : arb_strerror(st));
        free(err);
        return st;
    }
    const arb_template *tpl = *slot;
    for (int k = 0; k < 4 && needs[phase - 1][k]; k++)
        if (!arb_template_uses(tpl, needs[phase - 1][k]))
            return arb__store_fail(r->store, ARB_INVALID,
                                   "template %s has no {%s}: a phase-%d persona template shows it",
                                   arb_template_name(tpl), needs[phase - 1][k], phase);
    if (panel && !arb_template_uses(tpl, "discussion"))
        return arb__store_fail(r->store, ARB_INVALID,
                               "template %s has no {discussion}: a panel round shows the panel's "
                               "replies of the round before",
                               arb_template_name(tpl));
    static const char *const other_protocols[] = {
        "question", "answer1", "answer2", "reference", "language", "option_list",
        "option_letters", "option_rules", "agent1", "agent2", "other", "reviews",
        "answer", "task", "task_input", "self", "discussion"};
    size_t n_other = sizeof other_protocols / sizeof *other_protocols - (panel ? 2 : 0);
    for (size_t k = 0; k < n_other; k++)
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

/* The panel: 2 to MAX_PANEL distinct judges of the run, 0 to MAX_ROUNDS rounds, its
** templates, its name, and no consensus of another number of rounds under that name. */
static arb_status check_panel(persona_run *r)
{
    const arb_persona_params *p = r->params;
    arb_store *s = r->store;
    if (!p->n_panel) return ARB_OK;
    if (!p->panel || p->n_panel < 2 || p->n_panel > MAX_PANEL)
        return arb__store_fail(s, ARB_INVALID, "a panel has 2 to %d agents, got %zu", MAX_PANEL,
                               p->n_panel);
    if (p->rounds < 0 || p->rounds > MAX_ROUNDS)
        return arb__store_fail(s, ARB_INVALID, "rounds must be between 0 and %d, got %d",
                               MAX_ROUNDS, p->rounds);
    arb__buf label;
    arb__buf_init(&label, 0);
    int nomem = arb__buf_puts(&label, "panel(");
    for (size_t a = 0; a < p->n_panel; a++) {
        const char *name = p->panel[a] ? p->panel[a] : "";
        size_t j = 0;
        while (j < p->n_judges && (!p->judges[j].name || strcmp(p->judges[j].name, name))) j++;
        if (j == p->n_judges) {
            arb__buf_free(&label);
            return arb__store_fail(s, ARB_INVALID,
                                   "panel agent \"%s\" is not one of the judges of the run (give "
                                   "it in --judges too: its round 0 is its ordinary call)",
                                   name);
        }
        for (size_t b = 0; b < a; b++)
            if (r->panel_judge[b] == j) {
                arb__buf_free(&label);
                return arb__store_fail(s, ARB_INVALID, "panel agent \"%s\" named twice", name);
            }
        r->panel_judge[a] = j;
        nomem |= arb__buf_printf(&label, "%s%s", a ? "," : "", name);
    }
    nomem |= arb__buf_puts(&label, ")");
    r->panel_label = nomem ? NULL : arb__buf_steal(&label);
    arb__buf_free(&label);
    if (!r->panel_label) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    r->n_panel = p->n_panel;
    r->rounds = p->rounds;
    arb_status st;
    for (int ph = 1; ph <= 2; ph++)
        if ((p->phase & ph) && (st = load_template(r, ph, 1))) return st;
    int other = 0;
    if ((st = arb__store_panel_other_rounds(s, r->panel_label, p->judges[r->panel_judge[0]].name,
                                            r->rounds, &other)))
        return st;
    if (other)
        return arb__store_fail(s, ARB_INVALID,
                               "the store already has a consensus of %s after another number of "
                               "rounds than %d; both would be analysed as one judge: use another "
                               "database, or the same --rounds",
                               r->panel_label, r->rounds);
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
        if ((p->phase & ph) && (st = load_template(r, ph, 0))) return st;
    if ((st = arb__judge_check_list(s, p->judges, p->n_judges, p->dry_run))) return st;
    if ((st = check_panel(r))) return st;
    if ((st = plan(r))) return st;
    r->n_solo = r->n_tasks * p->n_judges * (size_t)p->reps;
    if (r->n_panel) {
        r->per_block = r->n_panel * (size_t)r->rounds + 1;
        r->consensus = calloc(r->n_tasks * (size_t)p->reps + 1, sizeof *r->consensus);
        if (!r->consensus) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    }
    return ARB_OK;
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
    if (!bad && r->n_panel) {
        json_t *panel = json_object(), *agents = json_array();
        bad = !panel || !agents;
        for (size_t a = 0; !bad && a < r->n_panel; a++)
            bad = json_array_append_new(agents, arb__json_name(p->judges[r->panel_judge[a]].name));
        bad = bad || arb__json_set(panel, "agents", json_incref(agents)) ||
              arb__json_set(panel, "rounds", json_integer(r->rounds)) ||
              arb__json_set(panel, "name", arb__json_name(r->panel_label)) ||
              arb__json_set(panel, "template_1", r->panel_tpl[0]
                                                     ? arb__json_name(arb_template_name(r->panel_tpl[0]))
                                                     : json_null()) ||
              arb__json_set(panel, "template_2", r->panel_tpl[1]
                                                     ? arb__json_name(arb_template_name(r->panel_tpl[1]))
                                                     : json_null()) ||
              arb__json_set(o, "panel", json_incref(panel));
        json_decref(panel);
        json_decref(agents);
    }
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
    /* a rerun of a finished plan on the store it left says so at once (README "Resume and
    ** caching"); otherwise every call is checked, and a complete run notes its plan */
    if (!params->dry_run && !(pjson = params_json(&r))) {
        st = arb__store_fail(store, ARB_NOMEM, "out of memory");
        goto done;
    }
    const arb_template *tpls[4] = {r.tpl[0], r.tpl[1], r.panel_tpl[0], r.panel_tpl[1]};
    arb__plan_desc plan = {.protocol = "persona", .params_json = pjson, .ds = r.ds,
                           .judges = params->judges, .n_judges = params->n_judges,
                           .tpls = tpls, .n_tpls = 4, .reps = params->reps,
                           .n_items = arb_dataset_item_count(r.ds), .scope = {NULL, NULL, 1},
                           .full_check = params->full_check};
    char fingerprint[33] = "";
    int unchanged = 0;
    st = arb__plan_rerun_if_unchanged(store, &plan, &params->client, params->dry_run,
                                      fingerprint, &unchanged, stats);
    if (st || unchanged) goto done;
    for (size_t j = 0; j < params->n_judges; j++)
        if ((st = params->dry_run ? arb__store_check_judge(store, &params->judges[j])
                                  : arb__store_put_judge(store, &params->judges[j])))
            goto done;
    if (!params->dry_run && (st = arb__store_put_dataset(store, r.ds))) goto done;
    long long run_id = 0;
    arb__exec_params ep = {.client = params->client, .dry_run = params->dry_run,
                           .progress = params->progress, .run_id = &run_id};
    /* without a panel no call depends on another: the plan runs in slices (exec.c) */
    st = arb__exec_protocol(store, "persona", pjson, &ep,
                            r.n_solo + r.n_tasks * (size_t)params->reps * r.per_block,
                            r.n_panel ? deps_of : NULL,
                            build_call, call_done, count_invalid, &r, stats);
    if (!st) st = arb__plan_note_run(store, &plan, fingerprint, run_id, stats);
done:
    free(pjson);
    free(r.consensus);
    free(r.panel_label);
    arb_template_destroy(r.panel_tpl[0]);
    arb_template_destroy(r.panel_tpl[1]);
    free(r.tasks);
    free(r.cats);
    free(r.metrics_json);
    arb_template_destroy(r.tpl[0]);
    arb_template_destroy(r.tpl[1]);
    arb__persona_identities_free(&r.ids);
    arb_dataset_destroy(r.ds);
    return st;
}
