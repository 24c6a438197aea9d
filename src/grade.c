/*
** grade.c -- the pointwise protocol (METHODS §8): each judge says whether one answer is correct
** (yes/no) or grades it 1..5, reps times, for every item; the answer is a model's (answers
** file) or the item's reference (the study's set-up, stored under the model name
** "reference").
**
** The prompt names the evaluation language (the item's "language"), the task and its inputs:
** {task_input} is rendered here from the task's fields of the item, each between labelled
** START/END lines ([CONTEXT START] ... [CONTEXT END], [QUESTION START] ...), after a line
** saying what the task is. Which fields a task needs:
**   qa: question and context; math: question; translation: source (question optional, e.g.
**   an instruction); summary: document (question optional); dialogue: dialog (question
**   optional); generic: question (context optional).
** Everything the run needs is checked before the first request, with the item's file:line:
** the task's fields, a language, the answer judged, a reference where the template uses
** {reference}, and that no parallel group holds two items of one language (they would be two
** raters with one name in Fleiss' κ). Groups that lack some language only weaken the metrics:
** arb_dataset_group_coverage counts them for a warning. Model names never reach a judge.
**
** Each judgment is a row of the store's pointwise table through arb__store_put_pointwise,
** committed with its call, so the executor's cache and leases give resume and reruns for free:
** a rerun sends nothing, a killed run sends only what is missing. A reply without a valid
** value is E: value NULL, the reason of arb_pointwise_extract stored, the text kept in calls.
** It computes no metric (consistency.c) and talks no HTTP (exec.c).
*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* The task inputs an item can hold, in the order a prompt shows them. */
enum { F_CONTEXT, F_DOCUMENT, F_DIALOG, F_SOURCE, F_QUESTION, F__COUNT };
static const char *const field_json[F__COUNT] = {"context", "document", "dialog", "source",
                                                 "question"};
static const char *const field_label[F__COUNT] = {"CONTEXT", "DOCUMENT", "DIALOGUE",
                                                  "SOURCE TEXT", "QUESTION"};

#define BIT(f) (1u << (f))
static const struct grade_task {
    const char *name;
    const char *description; /* the first line of {task_input} */
    unsigned required, optional;
    const char *needs;       /* for messages */
} grade_tasks[] = {
    {"qa", "Task: answer the question using the passage given as context.",
     BIT(F_CONTEXT) | BIT(F_QUESTION), 0, "\"question\" and \"context\""},
    {"math", "Task: solve the math problem; the answer must reach the right result.",
     BIT(F_QUESTION), 0, "\"question\""},
    {"translation", "Task: translate the source text.", BIT(F_SOURCE), BIT(F_QUESTION),
     "\"source\""},
    {"summary", "Task: summarise the document.", BIT(F_DOCUMENT), BIT(F_QUESTION),
     "\"document\""},
    {"dialogue", "Task: write the assistant's next turn in the dialogue.", BIT(F_DIALOG),
     BIT(F_QUESTION), "\"dialog\""},
    {"generic", "Task: answer the question or do what it asks.", BIT(F_QUESTION),
     BIT(F_CONTEXT), "\"question\""},
};
#define N_TASKS (sizeof grade_tasks / sizeof grade_tasks[0])

static const char *item_field(const arb_item *it, int f)
{
    switch (f) {
    case F_CONTEXT: return it->context;
    case F_DOCUMENT: return it->document;
    case F_DIALOG: return it->dialog;
    case F_SOURCE: return it->source_text;
    default: return it->question;
    }
}

arb_grade_params arb_grade_default_params(void)
{
    arb_grade_params p;
    memset(&p, 0, sizeof p);
    p.kind = ARB_POINTWISE_YESNO;
    p.task = "generic";
    p.rubric = "general";
    p.explain = 1;
    p.reps = 1;
    p.progress = -1;
    p.client = arb_client_default_params();
    return p;
}

const char *arb_grade_template_name(arb_pointwise_kind kind, const char *rubric, int explain)
{
    static const char *const names[2][2][2] = {
        {{"pointwise-yesno-general-plain", "pointwise-yesno-general-explain"},
         {"pointwise-yesno-specific-plain", "pointwise-yesno-specific-explain"}},
        {{"pointwise-grade-general-plain", "pointwise-grade-general-explain"},
         {"pointwise-grade-specific-plain", "pointwise-grade-specific-explain"}},
    };
    if (!rubric || (kind != ARB_POINTWISE_YESNO && kind != ARB_POINTWISE_GRADE)) return NULL;
    int r = !strcmp(rubric, "general") ? 0 : !strcmp(rubric, "specific") ? 1 : -1;
    return r < 0 ? NULL : names[kind][r][explain ? 1 : 0];
}

typedef struct grade_run {
    arb_store *store;
    const arb_dataset *ds;
    const arb_grade_params *params;
    const struct grade_task *task; /* NULL with --task category: each item's own (task_of) */
    arb_template *tpl;
    const char *model;   /* params->model, or "reference" */
    const char *kind;    /* "yesno" or "grade" */
    size_t n_items;
    int uses_question;   /* the template shows {question} (besides {task_input}) */
    size_t invalid;      /* written by the done callback only */
    /* the current slice's items and the model's answers to them (load_slice); no model when
    ** the references are judged */
    arb__item_window window;
} grade_run;

/* Node layout: (item * n_judges + judge) * reps + rep: consecutive calls go to different
** judges (several endpoints share the load). *index: the item's, in dataset order. */
static void node_coords(const grade_run *r, size_t node, size_t *index, const arb_item **item,
                        const arb_judge_config **judge, int *rep)
{
    size_t reps = (size_t)r->params->reps, n_judges = r->params->n_judges;
    *rep = (int)(node % reps);
    *judge = &r->params->judges[(node / reps) % n_judges];
    *index = node / reps / n_judges;
    *item = arb__item_window_item(&r->window, *index);
}

/* The task of an item: the run's, or with --task category the one its category names (NULL
** when it names none; check_item refuses such an item before any request). */
static const struct grade_task *task_of(const grade_run *r, const arb_item *it)
{
    if (r->task) return r->task;
    for (size_t t = 0; it->category && t < N_TASKS; t++)
        if (!strcmp(it->category, grade_tasks[t].name)) return &grade_tasks[t];
    return NULL;
}

/* The answer judged for item it of index i in the current slice (borrowed), or NULL when there
** is none. */
static const char *answer_of(const grade_run *r, size_t i, const arb_item *it)
{
    if (r->params->answer_from_reference) return it->reference;
    const arb_answer *a = arb__item_window_answer(&r->window, i, 0);
    return a ? a->answer : NULL;
}

/* Whether item it has an answer to judge (the checks, before any slice is loaded). */
static int has_answer(const grade_run *r, const arb_item *it)
{
    if (r->params->answer_from_reference) return it->reference != NULL;
    return arb__dataset_has_answer(r->ds, it->id, r->model);
}

/* {task_input} of an item: the task's line, then each of the task's fields the item has
** between labelled lines. Returns 0, or -1 when out of memory. */
static int render_task_input(const struct grade_task *task, const arb_item *it, arb__buf *b)
{
    if (arb__buf_puts(b, task->description)) return -1;
    for (int f = 0; f < F__COUNT; f++) {
        const char *v = item_field(it, f);
        if (!((task->required | task->optional) & BIT(f)) || !v) continue;
        if (arb__buf_printf(b, "\n\n[%s START]\n%s\n[%s END]", field_label[f], v,
                            field_label[f]))
            return -1;
    }
    return 0;
}

static int build_call(void *ud, size_t node, const arb__call_outcome *const *deps,
                      size_t n_deps, arb__exec_request *req)
{
    (void)deps;
    (void)n_deps;
    grade_run *r = ud;
    size_t index;
    const arb_item *it;
    const arb_judge_config *judge;
    int rep;
    node_coords(r, node, &index, &it, &judge, &rep);
    arb__buf input;
    arb__buf_init(&input, 0);
    const struct grade_task *task = task_of(r, it);
    if (render_task_input(task, it, &input)) {
        arb__buf_free(&input);
        arb__store_fail(r->store, ARB_NOMEM, "out of memory");
        return -1;
    }
    arb_prompt_vars vars = {.options = 2, /* no option placeholder in a pointwise template */
                            .question = it->question,
                            .reference = it->reference,
                            .language = it->language,
                            .answer = answer_of(r, index, it),
                            .task = task->name,
                            .task_input = input.data};
    int rc = arb__exec_render(r->store, r->tpl, &vars, it, "item", judge, rep, req);
    req->verdict.kind = r->params->kind == ARB_POINTWISE_GRADE ? ARB__VERDICT_GRADE
                                                               : ARB__VERDICT_YESNO;
    arb__buf_free(&input);
    return rc;
}

/* Runs on the executor's writer thread: reads the run's fixed data, writes through s, counts
** replies without a valid value (read by the caller after the run). */
static int call_done(void *ud, arb_store *s, size_t node, const arb__call_outcome *out)
{
    grade_run *r = ud;
    size_t index;
    const arb_item *it;
    const arb_judge_config *judge;
    int rep;
    node_coords(r, node, &index, &it, &judge, &rep);
    const char *reason = "no reply: the call failed (its error is stored with the call)";
    int value = -1;
    if (out->ok && out->content) {
        value = arb_pointwise_extract(out->content, strlen(out->content), r->params->kind,
                                      &reason);
        if (value < 0) r->invalid++;
    } else if (out->ok) {
        reason = "the reply has no content";
        r->invalid++;
    }
    arb__pointwise_row row = {
        .protocol = "pointwise",
        .judge_name = judge->name,
        .item_id = it->id,
        .model = r->model,
        .language = it->language,
        .kind = r->kind,
        .task = task_of(r, it)->name,
        .template_name = arb_template_name(r->tpl),
        .rep = rep,
        .value = value,
        .reason = value < 0 ? reason : NULL,
        .call_id = out->call_id,
    };
    return arb__store_put_pointwise(s, &row) ? -1 : 0;
}

/* On the writer thread (arb__exec_texts_fn): the texts of the store that node's request shows,
** so it is stored compact (the item's question where {task_input} or {question} shows it, the
** answer judged when it is a stored answer). The task's other inputs (context, document,
** source, dialogue) and a reference are not texts a request can refer to: they stay in the
** request's template. */
static int call_texts(void *ud, size_t node, arb__call_texts *t)
{
    const grade_run *r = ud;
    size_t index;
    const arb_item *it;
    const arb_judge_config *judge;
    int rep;
    node_coords(r, node, &index, &it, &judge, &rep);
    const struct grade_task *task = task_of(r, it);
    int questions = 0;
    if (it->question && task && ((task->required | task->optional) & BIT(F_QUESTION))) questions++;
    if (it->question && r->uses_question) questions++;
    const char *answer = r->params->answer_from_reference ? NULL : answer_of(r, index, it);
    *t = (arb__call_texts){.item_id = it->id,
                           .first_model = answer ? r->model : NULL,
                           .question = it->question,
                           .first_answer = answer,
                           .pointwise = 1,
                           .questions = questions};
    return 1;
}

static arb_status count_invalid(void *ud, arb_store *s, arb_status st, arb_run_stats *stats)
{
    (void)s;
    grade_run *r = ud;
    stats->invalid = r->invalid;
    r->invalid = 0; /* a pass's count: --batch wait passes over the plan again */
    return st;
}

/* ---- checks before any request ------------------------------------------------------------ */

static arb_status check_params(grade_run *r)
{
    const arb_grade_params *p = r->params;
    arb_store *s = r->store;
    if (p->kind != ARB_POINTWISE_YESNO && p->kind != ARB_POINTWISE_GRADE)
        return arb__store_fail(s, ARB_INVALID, "unknown pointwise mode %d", (int)p->kind);
    r->kind = p->kind == ARB_POINTWISE_YESNO ? "yesno" : "grade";
    for (size_t t = 0; t < N_TASKS && !r->task; t++)
        if (p->task && !strcmp(p->task, grade_tasks[t].name)) r->task = &grade_tasks[t];
    /* "category": a file that mixes tasks (the parallel demo set) is judged in one run, each
    ** item as the task its category names */
    if (!r->task && !(p->task && !strcmp(p->task, "category")))
        return arb__store_fail(s, ARB_INVALID,
                               "unknown task \"%s\" (known: qa, math, translation, summary, "
                               "dialogue, generic, or category: each item's own)",
                               p->task ? p->task : "");
    if (!p->template_name && !arb_grade_template_name(p->kind, p->rubric, p->explain))
        return arb__store_fail(s, ARB_INVALID,
                               "unknown rubric \"%s\" (known: general, specific)",
                               p->rubric ? p->rubric : "");
    if (p->answer_from_reference && p->model)
        return arb__store_fail(s, ARB_INVALID,
                               "give either a model whose answers are judged or answers from "
                               "the reference, not both");
    if (!p->answer_from_reference && (!p->model || !*p->model))
        return arb__store_fail(s, ARB_INVALID,
                               "no model given (or judge the items' references instead)");
    if (!p->answer_from_reference && !strcmp(p->model, "reference"))
        return arb__store_fail(s, ARB_INVALID,
                               "the model name \"reference\" is kept for the items' references");
    r->model = p->answer_from_reference ? "reference" : p->model;
    if (p->reps < 1 || p->reps > 1000)
        return arb__store_fail(s, ARB_INVALID, "reps must be between 1 and 1000, got %d", p->reps);
    if (p->client.jobs < 1)
        return arb__store_fail(s, ARB_INVALID, "jobs must be at least 1, got %d", p->client.jobs);
    if (!p->judges || p->n_judges == 0) return arb__store_fail(s, ARB_INVALID, "no judge given");
    return ARB_OK;
}

/* A pointwise template judges one answer: it must show it and cannot fill pair or
** multi-agent placeholders. */
static arb_status check_template(grade_run *r)
{
    static const char *const pairwise[] = {"answer1", "answer2", "option_list",
                                           "option_letters", "option_rules", "agent1",
                                           "agent2", "self", "other", "reviews", "discussion",
                                           "scenario", "response", "identity", "candidate1",
                                           "candidate2", "identity1", "identity2",
                                           "metrics_json", "range"};
    const char *name = arb_template_name(r->tpl);
    if (!arb_template_uses(r->tpl, "answer"))
        return arb__store_fail(r->store, ARB_INVALID,
                               "template %s has no {answer}: a pointwise template shows the "
                               "answer judged",
                               name);
    for (size_t i = 0; i < sizeof pairwise / sizeof *pairwise; i++)
        if (arb_template_uses(r->tpl, pairwise[i]))
            return arb__store_fail(r->store, ARB_INVALID,
                                   "template %s uses {%s}: it is for judging pairs, not one "
                                   "answer",
                                   name, pairwise[i]);
    return ARB_OK;
}

/* A BCP-47-like language code: 1 to 35 ASCII letters, digits, "-" or "_" ("en", "zh-Hant",
** "pt_BR"). It is written into the prompt's "Evaluation language:" line, so a newline or any
** other text there would change the instructions the judge reads. */
static int language_code_ok(const char *code)
{
    size_t n = 0;
    for (; code[n]; n++) {
        char ch = code[n];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_'))
            return 0;
    }
    return n >= 1 && n <= 35;
}

/* One item's checks: the task's fields, a language, the answer judged, a reference when the
** template shows it. */
static arb_status check_item(grade_run *r, const arb_item *it)
{
    arb_store *s = r->store;
    const struct grade_task *task = task_of(r, it);
    if (!task)
        return arb__store_fail(s, ARB_PARSE,
                               "%s: field \"category\": expected a task (qa, math, translation, "
                               "summary, dialogue or generic) for --task category, got %s%s%s",
                               it->source, it->category ? "\"" : "none",
                               it->category ? it->category : "", it->category ? "\"" : "");
    for (int f = 0; f < F__COUNT; f++) {
        if (!(task->required & BIT(f))) continue;
        const char *v = item_field(it, f);
        if (!v || !*v)
            return arb__store_fail(s, ARB_PARSE, "%s: %s field \"%s\" (task %s needs %s)",
                                   it->source, v ? "empty" : "missing", field_json[f],
                                   task->name, task->needs);
    }
    if (!it->language || !*it->language)
        return arb__store_fail(s, ARB_PARSE,
                               "%s: %s field \"language\" (a pointwise prompt names the "
                               "evaluation language)",
                               it->source, it->language ? "empty" : "missing");
    if (!language_code_ok(it->language))
        return arb__store_fail(s, ARB_PARSE,
                               "%s: field \"language\": expected a language code such as \"en\" or "
                               "\"zh-Hant\" (1 to 35 letters, digits, \"-\" or \"_\")",
                               it->source);
    if (!has_answer(r, it))
        return r->params->answer_from_reference
                   ? arb__store_fail(s, ARB_PARSE,
                                     "%s: item \"%s\" has no \"reference\" to judge", it->source,
                                     it->id)
                   : arb__store_fail(s, ARB_PARSE, "%s: model \"%s\" has no answer to item \"%s\"",
                                     it->source, r->model, it->id);
    if (arb_template_uses(r->tpl, "reference") && (!it->reference || !*it->reference))
        return arb__store_fail(s, ARB_PARSE,
                               "%s: item \"%s\" has no \"reference\", which template %s needs",
                               it->source, it->id, arb_template_name(r->tpl));
    return ARB_OK;
}

/* The walk over every item before any request (arb__dataset_each_item: an indexed dataset's
** items are read a block at a time): check_item on each, and no parallel group may hold two
** items of one language. */
typedef struct check_walk {
    grade_run *r;
    arb__strtab seen;    /* per (group, language) of the items so far: "<len>:<group><language>" */
    size_t *first, cap;  /* per entry of seen: the index of its first item */
    arb__buf key;
    char *group_clash;   /* the first clash's message: reported only when every item passes
                            check_item, so a file with both faults gets the item's message */
} check_walk;

/* arb__dataset_item_fn: the checks of item it (of index i). */
static arb_status check_walk_item(void *ud, size_t i, const arb_item *it)
{
    check_walk *w = ud;
    arb_status st = check_item(w->r, it);
    if (st || !it->group || w->group_clash) return st;
    arb__buf_reset(&w->key);
    size_t before = w->seen.n;
    uint32_t k;
    /* the group's length first: no pair of names can make another pair's key */
    if (arb__buf_printf(&w->key, "%zu:%s%s", strlen(it->group), it->group, it->language) ||
        (k = arb__strtab_intern(&w->seen, w->key.data)) == UINT32_MAX ||
        arb__grow(&w->first, &w->cap, w->seen.n, sizeof *w->first))
        return arb__store_fail(w->r->store, ARB_NOMEM, "out of memory");
    if (w->seen.n > before) {
        w->first[k] = i;
        return ARB_OK;
    }
    arb_item stub; /* the index knows the first item's id and place, which is all it takes */
    char source[512];
    const arb_item *prev = arb__dataset_item_outline(w->r->ds, w->first[k], &stub, source,
                                                     sizeof source);
    w->group_clash = arb__sprintf("%s: field \"group\": group \"%s\" already has an item in "
                                  "language \"%s\" (item \"%s\" at %s); a group holds one item "
                                  "per language",
                                  it->source, it->group, it->language, prev->id, prev->source);
    return w->group_clash ? ARB_OK : arb__store_fail(w->r->store, ARB_NOMEM, "out of memory");
}

/* Every item's checks, then the groups'. */
static arb_status check_items(grade_run *r)
{
    check_walk w = {.r = r};
    arb__buf_init(&w.key, 0);
    char *err = NULL;
    arb_status st = arb__dataset_each_item(r->ds, check_walk_item, &w, &err);
    if (err) arb__store_fail(r->store, st, "%s", err);
    else if (!st && w.group_clash) st = arb__store_fail(r->store, ARB_PARSE, "%s", w.group_clash);
    free(err);
    free(w.group_clash);
    free(w.first);
    arb__buf_free(&w.key);
    arb__strtab_free(&w.seen);
    return st;
}

static arb_status validate(grade_run *r)
{
    arb_store *s = r->store;
    arb_status st = check_params(r);
    if (st) return st;
    char *tpl_err = NULL;
    const arb_grade_params *p = r->params;
    const char *name = p->template_name ? p->template_name
                                        : arb_grade_template_name(p->kind, p->rubric, p->explain);
    if ((st = arb_template_load(name, &r->tpl, &tpl_err))) {
        arb__store_fail(s, st, "%s", tpl_err ? tpl_err : arb_strerror(st));
        free(tpl_err);
        return st;
    }
    if ((st = check_template(r))) return st;
    r->uses_question = arb_template_uses(r->tpl, "question");
    r->n_items = arb_dataset_item_count(r->ds);
    if (r->n_items == 0) return arb__store_fail(s, ARB_INVALID, "the dataset has no items");
    if (!p->answer_from_reference) {
        size_t found = 0;
        arb_item stub; /* what the index knows (an indexed dataset) */
        char source[512];
        for (size_t i = 0; i < r->n_items && !found; i++)
            found = arb__dataset_has_answer(
                r->ds, arb__dataset_item_outline(r->ds, i, &stub, source, sizeof source)->id,
                r->model);
        if (!found)
            return arb__store_fail(s, ARB_PARSE, "no answers from model \"%s\" in the answers file",
                                   r->model);
    }
    if ((st = check_items(r))) return st;
    return arb__judge_check_list(s, p->judges, p->n_judges, p->dry_run);
}

/* The run's parameters as JSON for the runs table: everything that shapes the judgments and
** nothing secret (a key's variable name is recorded, never its value). NULL out of memory. */
static char *params_json(const grade_run *r)
{
    const arb_grade_params *p = r->params;
    json_t *o = json_object(), *judges = json_array();
    int bad = !o || !judges;
    for (size_t j = 0; !bad && j < p->n_judges; j++) {
        bad = json_array_append_new(judges, arb__judge_params_json(&p->judges[j], NULL));
    }
    if (!bad)
        bad = arb__json_set(o, "judges", json_incref(judges)) ||
              arb__json_set(o, "mode", json_string(r->kind)) ||
              arb__json_set(o, "task", json_string(r->task ? r->task->name : "category")) ||
              arb__json_set(o, "template", arb__json_name(arb_template_name(r->tpl))) ||
              arb__json_set(o, "model", arb__json_name(r->model)) ||
              arb__json_set(o, "answer_from", json_string(p->answer_from_reference ? "reference"
                                                                                   : "answers")) ||
              arb__json_set(o, "reps", json_integer(p->reps)) ||
              arb__json_set(o, "n_items", json_integer((json_int_t)r->n_items));
    char *s = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(judges);
    json_decref(o);
    return s;
}

/* arb__exec_params.slice_begin: the items of nodes first .. first + n - 1 and the model's
** answers to them, in place of the previous slice's. */
static arb_status load_slice(void *ud, size_t first, size_t n)
{
    grade_run *r = ud;
    return arb__item_window_load_nodes(&r->window, r->store, first, n,
                                       r->params->n_judges * (size_t)r->params->reps);
}

arb_status arb_grade_run(arb_store *store, const arb_dataset *ds, const arb_grade_params *params,
                         arb_run_stats *stats)
{
    arb_run_stats local_stats;
    if (!stats) stats = &local_stats;
    memset(stats, 0, sizeof *stats);
    if (!store) return ARB_INVALID;
    if (!ds || !params) return arb__store_fail(store, ARB_INVALID, "no dataset or parameters");

    grade_run r = {.store = store, .ds = ds, .params = params};
    char *pjson = NULL;
    arb_status st = validate(&r);
    if (st) goto done;
    arb__item_window_init(&r.window, ds, &r.model, params->answer_from_reference ? 0 : 1);
    for (size_t j = 0; j < params->n_judges; j++)
        if ((st = params->dry_run ? arb__store_check_judge(store, &params->judges[j])
                                  : arb__store_put_judge(store, &params->judges[j])))
            goto done;
    if (!params->dry_run) {
        if ((st = arb__store_put_dataset(store, ds))) goto done;
        pjson = params_json(&r);
    }
    arb__exec_params ep = {.client = params->client, .dry_run = params->dry_run,
                           .progress = params->progress, .texts = call_texts,
                           .slice_begin = load_slice, .slice = arb__sbs_plan_slice};
    st = arb__exec_protocol(store, "pointwise", pjson, &ep,
                            r.n_items * params->n_judges * (size_t)params->reps, NULL, build_call,
                            call_done, count_invalid, &r, stats);
done:
    arb_template_destroy(r.tpl);
    arb__item_window_free(&r.window);
    free(pjson);
    return st;
}
