/*
** test_grade.c -- the pointwise protocol (arbiter grade, METHODS §8) over real HTTP against the
** scriptable test server: the task's inputs in the prompt, values and E reasons stored, several
** judges and repetitions, a rerun that sends nothing, every check made before any request, the
** group coverage counts, and the pointwise export.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "internal.h"
#include "test_sql.h"
#include "testserver.h"
#include "testutil.h"

static const char items_jsonl[] =
    "{\"id\":\"a-en\",\"group\":\"a\",\"language\":\"en\",\"question\":\"Who?\","
    "\"context\":\"Ann did.\",\"reference\":\"Ann\"}\n"
    "{\"id\":\"a-hi\",\"group\":\"a\",\"language\":\"hi\",\"question\":\"\xe0\xa4\x95\xe0\xa5\x8c\xe0\xa4\xa8?\","
    "\"context\":\"\xe0\xa4\x8f\xe0\xa4\xa8\",\"reference\":\"\xe0\xa4\x8f\xe0\xa4\xa8\"}\n"
    "{\"id\":\"b-en\",\"group\":\"b\",\"language\":\"en\",\"question\":\"Where?\","
    "\"context\":\"In Rome.\",\"reference\":\"Rome\",\"source\":\"Roma\"}\n";
static const char answers_jsonl[] =
    "{\"item\":\"a-en\",\"model\":\"SECRETM\",\"answer\":\"ANS-5 Ann\"}\n"
    "{\"item\":\"a-hi\",\"model\":\"SECRETM\",\"answer\":\"ANS-ECHO\"}\n"
    "{\"item\":\"b-en\",\"model\":\"SECRETM\",\"answer\":\"ANS-0 Paris\"}\n";

static int names_leaked;
/* The request bodies the server received, in order (the first MAX_SEEN). */
#define MAX_SEEN 64
static char *seen[MAX_SEEN];
static size_t n_seen;

static void forget_seen(void)
{
    for (size_t i = 0; i < n_seen; i++) free(seen[i]);
    n_seen = 0;
}

/* Replies by the marker in the answer: ANS-<d> -> <answer>d</answer>, ANS-ECHO -> the grade
** phrase of the instructions; notes a request naming the model. */
static char *by_marker(void *ud, const char *body, size_t len)
{
    (void)ud;
    if (n_seen < MAX_SEEN) seen[n_seen++] = arb__strndup(body, len);
    if (strstr(body, "SECRETM")) names_leaked = 1;
    const char *m = strstr(body, "ANS-");
    if (!m) return arb__strdup("nothing");
    if (!strncmp(m, "ANS-ECHO", 8))
        return arb__strdup("Reply <answer>N</answer> with N from 1 to 5.");
    return arb__sprintf("<result><justification>ok</justification><answer>%c</answer></result>",
                        m[4]);
}

typedef struct fixture {
    arb_test_server *srv;
    arb_store *store;
    arb_dataset *ds;
    char dir[64];
    arb_judge_config judges[2];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_int_equal(arb_test_make_dir("grade", f->dir, sizeof f->dir), 0);
    char db[128];
    snprintf(db, sizeof db, "%s/g.db", f->dir);
    f->srv = arb_test_server_start();
    arb_test_behaviour b = {.action = ARB_TEST_CALLBACK, .fn = by_marker};
    arb_test_server_set_default(f->srv, &b);
    assert_int_equal(arb_store_open(db, &f->store), ARB_OK);
    f->ds = arb_dataset_create();
    assert_int_equal(arb_dataset_add_items_jsonl(f->ds, "items.jsonl", items_jsonl,
                                                 strlen(items_jsonl)),
                     ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(f->ds, "answers.jsonl", answers_jsonl,
                                                   strlen(answers_jsonl)),
                     ARB_OK);
    for (int j = 0; j < 2; j++) {
        f->judges[j] = (arb_judge_config){.name = j ? "j2" : "j1",
                                          .base_url = arb_test_server_base_url(f->srv),
                                          .model = j ? "m2" : "m1",
                                          .sampling = arb_sampling_default()};
    }
    names_leaked = 0;
    forget_seen();
    *state = f;
    return 0;
}

static uint64_t whole_limit_default; /* arb__dataset_whole_limit as built; tests lower it */

static int teardown(void **state)
{
    fixture *f = *state;
    arb__dataset_whole_limit = whole_limit_default;
    arb_dataset_destroy(f->ds);
    arb_store_close(f->store);
    arb_test_server_stop(f->srv);
    arb_test_remove_dir(f->dir);
    free(f);
    forget_seen();
    return 0;
}

static arb_grade_params params(fixture *f)
{
    arb_grade_params p = arb_grade_default_params();
    p.kind = ARB_POINTWISE_GRADE;
    p.task = "qa";
    p.model = "SECRETM";
    p.judges = f->judges;
    p.n_judges = 1;
    p.progress = 0;
    return p;
}

static void template_names(void **state)
{
    (void)state;
    assert_string_equal(arb_grade_template_name(ARB_POINTWISE_YESNO, "general", 1),
                        "pointwise-yesno-general-explain");
    assert_string_equal(arb_grade_template_name(ARB_POINTWISE_GRADE, "specific", 0),
                        "pointwise-grade-specific-plain");
    assert_null(arb_grade_template_name(ARB_POINTWISE_GRADE, "strict", 1));
    assert_null(arb_grade_template_name((arb_pointwise_kind)2, "general", 1));
    arb_grade_params p = arb_grade_default_params();
    assert_int_equal(p.kind, ARB_POINTWISE_YESNO);
    assert_string_equal(p.task, "generic");
    assert_string_equal(p.rubric, "general");
    assert_int_equal(p.explain, 1);
    assert_int_equal(p.reps, 1);
}

/* Values and E reasons stored per item; the prompt holds the task block and the language;
** model names never reach the judge; a rerun sends nothing. */
static void run_values_and_rerun(void **state)
{
    fixture *f = *state;
    arb_grade_params p = params(f);
    arb_run_stats st;
    assert_int_equal(arb_grade_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.planned, 3);
    assert_int_equal(st.sent, 3);
    assert_int_equal(st.invalid, 2);
    assert_false(names_leaked);
    assert_int_equal(arb_test_query_int(f->store, "select value from pointwise where item_id = 'a-en'"), 5);
    assert_int_equal(arb_test_query_int(f->store,
                                        "select count(*) from pointwise where item_id = 'a-hi' and "
                                        "value is null and reason = 'echoed from the instructions'"),
                     1);
    assert_int_equal(arb_test_query_int(f->store,
                                        "select count(*) from pointwise where item_id = 'b-en' and "
                                        "value is null and reason = 'answer out of range'"),
                     1);
    assert_int_equal(arb_test_query_int(f->store,
                                        "select count(*) from pointwise where kind = 'grade' and "
                                        "task = 'qa' and model = 'SECRETM' and judge_name = 'j1' "
                                        "and template_name = 'pointwise-grade-general-explain' "
                                        "and call_id is not null"),
                     3);
    assert_int_equal(arb_test_query_int(f->store,
                                        "select count(*) from pointwise p join items i on "
                                        "i.id = p.item_id where p.language = i.language"),
                     3);
    /* the task block: the task line, context then question, labelled; the source field of
    ** b-en is not part of a QA task */
    assert_int_equal(
        arb_test_query_int(f->store,
                           "select count(*) from calls where arb_request(request) like '%Task: answer the "
                           "question using the passage given as context.\\n\\n[CONTEXT START]\\nIn "
                           "Rome.\\n[CONTEXT END]\\n\\n[QUESTION START]\\nWhere?\\n[QUESTION END]%' "
                           "and arb_request(request) like '%Evaluation language: en\\n%' and arb_request(request) not like "
                           "'%Roma%'"),
        1);
    unsigned long sent = arb_test_server_requests(f->srv);
    assert_int_equal(arb_grade_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.cached, 3);
    assert_int_equal(st.sent, 0);
    assert_int_equal(arb_test_server_requests(f->srv), sent);
}

/* Two translation items, t2 without a question (caller destroys). */
static arb_dataset *translation_items(void)
{
    static const char items[] =
        "{\"id\":\"t1\",\"language\":\"fr\",\"source\":\"Hello\",\"question\":\"Into French.\","
        "\"reference\":\"Bonjour\"}\n"
        "{\"id\":\"t2\",\"language\":\"de\",\"source\":\"Thanks\",\"reference\":\"Danke\"}\n";
    arb_dataset *ds = arb_dataset_create();
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "t.jsonl", items, strlen(items)), ARB_OK);
    return ds;
}

/* Checks every stored call against the bodies the server received: its request, rebuilt from
** what is stored, is one of them, byte for byte, and its key is still the hash of that body.
** Returns how many calls are stored compact (a BLOB) and, in *spliced, how many of those in
** the spliced format (their texts referred to, not compressed). */
static int check_stored_requests(fixture *f, int *spliced)
{
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(f->store),
                                        "select lower(hex(key)), rep, arb_request(request), request,"
                                        " typeof(request) = 'blob' from calls",
                                        -1, &q, NULL),
                     SQLITE_OK);
    int compact = 0, rows = 0;
    *spliced = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        rows++;
        const char *request = (const char *)sqlite3_column_text(q, 2);
        assert_non_null(request);
        size_t found = n_seen;
        for (size_t i = 0; i < n_seen && found == n_seen; i++)
            if (!strcmp(seen[i], request)) found = i;
        assert_true(found < n_seen);
        char key[33];
        arb__judge_call_key(request, sqlite3_column_int(q, 1), key);
        assert_string_equal(key, (const char *)sqlite3_column_text(q, 0));
        if (sqlite3_column_int(q, 4)) {
            compact++;
            const unsigned char *blob = sqlite3_column_blob(q, 3);
            /* 'Z', then flags: bit 2 is the spliced format (store_requests.c) */
            assert_int_equal(blob[0], 'Z');
            *spliced += (blob[1] & 4) != 0;
        }
    }
    sqlite3_finalize(q);
    assert_int_equal(rows, (int)n_seen);
    return compact;
}

/* A grade call's request is stored compact, referring to the texts the store holds (the
** question, the answer judged): each one gives back exactly the body sent, under the same key.
** Tasks whose other inputs are no stored text (context, source) and references judged as
** answers keep them in the request's template; a request with no stored text at all stays as
** it was sent. */
static void requests_stored_compact(void **state)
{
    fixture *f = *state;
    arb_grade_params p = params(f);
    p.task = "generic"; /* the question and the answer: both referred to */
    arb_run_stats st;
    assert_int_equal(arb_grade_run(f->store, f->ds, &p, &st), ARB_OK);
    int spliced = 0;
    assert_int_equal(check_stored_requests(f, &spliced), 3);
    assert_int_equal(spliced, 3);
    /* the template is stored once; each call is a few dozen bytes */
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from request_texts"), 1);
    assert_true(arb_test_query_int(f->store, "select max(length(request)) from calls") < 100);

    p.task = "qa"; /* the context stays in the template (compressed) */
    assert_int_equal(arb_grade_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 3);
    assert_int_equal(check_stored_requests(f, &spliced), 6);

    /* a template that shows the question twice ({question} and {task_input}) */
    char path[128];
    snprintf(path, sizeof path, "%s/twice.txt", f->dir);
    static const char tpl[] = "Question again: {question}\nTask {task} in {language}:\n"
                              "{task_input}\n[ANSWER START]\n{answer}\n[ANSWER END]\n"
                              "Reply <answer>N</answer> with N from 1 to 5. Pad pad pad pad pad "
                              "pad pad pad pad pad pad pad pad pad pad pad pad pad pad pad pad "
                              "pad pad pad pad pad pad pad pad pad pad pad pad pad pad pad pad "
                              "pad pad pad pad pad pad pad pad pad pad pad pad pad pad pad pad "
                              "pad pad pad pad pad pad pad pad pad pad pad pad pad pad pad pad.";
    assert_int_equal(arb_test_write_file(path, tpl, strlen(tpl)), 0);
    p.task = "math";
    p.template_name = path;
    assert_int_equal(arb_grade_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 3);
    assert_int_equal(check_stored_requests(f, &spliced), 9);
    assert_int_equal(spliced, 9);
    char sql[320];
    snprintf(sql, sizeof sql, "select max(length(c.request)) from calls c join pointwise p on"
                              " p.call_id = c.id where p.template_name = '%s'", path);
    assert_true(arb_test_query_int(f->store, sql) < 100);

    /* references judged (no stored answer), a translation: only the question, when there is
    ** one, is referred to; t2 has none and its request stays TEXT */
    arb_dataset *ds = translation_items();
    p = params(f);
    p.model = NULL;
    p.answer_from_reference = 1;
    p.task = "translation";
    assert_int_equal(arb_grade_run(f->store, ds, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 2);
    assert_int_equal(check_stored_requests(f, &spliced), 10);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from calls c join pointwise p"
                                                  " on p.call_id = c.id where p.item_id = 't2'"
                                                  " and typeof(c.request) = 'text'"),
                     1);
    arb_dataset_destroy(ds);
    /* a rerun finds every call by its key: nothing sent */
    p = params(f);
    p.task = "generic";
    assert_int_equal(arb_grade_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.cached, 3);
}

/* Two judges, two repetitions, the references as answers, yes/no, another task. */
static void judges_reps_reference(void **state)
{
    fixture *f = *state;
    arb_grade_params p = params(f);
    p.model = NULL;
    p.answer_from_reference = 1;
    p.kind = ARB_POINTWISE_YESNO;
    p.task = "translation";
    p.rubric = "specific";
    p.explain = 0;
    p.n_judges = 2;
    p.reps = 2;
    arb_dataset *ds = translation_items();
    arb_run_stats st;
    assert_int_equal(arb_grade_run(f->store, ds, &p, &st), ARB_OK);
    assert_int_equal(st.planned, 2 * 2 * 2);
    assert_int_equal(st.sent, 8);
    assert_int_equal(arb_test_query_int(f->store,
                                        "select count(*) from pointwise where model = 'reference' "
                                        "and kind = 'yesno' and task = 'translation' and "
                                        "template_name = 'pointwise-yesno-specific-plain' and "
                                        "value is null and reason = 'no <answer> tag'"),
                     8);
    assert_int_equal(arb_test_query_int(f->store,
                                        "select count(distinct judge_name || rep || item_id) "
                                        "from pointwise"),
                     8);
    /* the optional question of a translation is shown after the source text */
    assert_int_equal(arb_test_query_int(f->store,
                                        "select count(*) from calls where arb_request(request) like "
                                        "'%[SOURCE TEXT START]\\nHello\\n[SOURCE TEXT END]\\n\\n"
                                        "[QUESTION START]\\nInto French.\\n[QUESTION END]%'"),
                     4);
    /* pointwise items without a question are stored with question '' and their inputs */
    assert_int_equal(arb_test_query_int(f->store,
                                        "select count(*) from items where id = 't2' and question "
                                        "= '' and extra ->> '$.source' = 'Thanks'"),
                     1);
    arb_dataset_destroy(ds);
}

/* Runs p on items (no answers but those of answers_text) and expects status and exactly the
** message, with nothing sent. */
static void expect_refused(fixture *f, const arb_grade_params *p, const char *items,
                           const char *answers, arb_status status, const char *message)
{
    arb_dataset *ds = arb_dataset_create();
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "i.jsonl", items, strlen(items)), ARB_OK);
    if (answers)
        assert_int_equal(arb_dataset_add_answers_jsonl(ds, "a.jsonl", answers, strlen(answers)),
                         ARB_OK);
    arb_run_stats st;
    assert_int_equal(arb_grade_run(f->store, ds, p, &st), status);
    assert_string_equal(arb_store_errmsg(f->store), message);
    assert_int_equal(arb_test_server_requests(f->srv), 0);
    arb_dataset_destroy(ds);
}

static void checks_before_any_request(void **state)
{
    fixture *f = *state;
    arb_grade_params p = params(f);
    static const char ok_items[] =
        "{\"id\":\"x\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n";
    static const char ok_answers[] = "{\"item\":\"x\",\"model\":\"SECRETM\",\"answer\":\"A\"}\n";
    expect_refused(f, &p,
                   "{\"id\":\"x\",\"group\":\"g\",\"language\":\"en\",\"question\":\"Q\","
                   "\"context\":\"C\"}\n"
                   "{\"id\":\"y\",\"group\":\"g\",\"language\":\"en\",\"question\":\"Q\","
                   "\"context\":\"C\"}\n",
                   "{\"item\":\"x\",\"model\":\"SECRETM\",\"answer\":\"A\"}\n"
                   "{\"item\":\"y\",\"model\":\"SECRETM\",\"answer\":\"A\"}\n",
                   ARB_PARSE,
                   "i.jsonl:2: field \"group\": group \"g\" already has an item in language "
                   "\"en\" (item \"x\" at i.jsonl:1); a group holds one item per language");
    /* g and "g" + "e": a group name that ends like a language does not make another pair */
    p.task = "generic";
    arb_dataset *ds = arb_dataset_create();
    static const char tricky[] =
        "{\"id\":\"x\",\"group\":\"ge\",\"language\":\"n\",\"question\":\"Q\",\"reference\":\"R\"}\n"
        "{\"id\":\"y\",\"group\":\"g\",\"language\":\"en\",\"question\":\"Q\",\"reference\":\"R\"}\n";
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "i.jsonl", tricky, strlen(tricky)), ARB_OK);
    p.answer_from_reference = 1;
    p.model = NULL;
    p.dry_run = 1;
    arb_run_stats st;
    assert_int_equal(arb_grade_run(f->store, ds, &p, &st), ARB_OK);
    assert_int_equal(st.planned, 2);
    arb_dataset_destroy(ds);
    p = params(f);
    expect_refused(f, &p, "{\"id\":\"x\",\"language\":\"en\",\"question\":\"Q\"}\n", ok_answers,
                   ARB_PARSE, "i.jsonl:1: missing field \"context\" (task qa needs \"question\" "
                              "and \"context\")");
    expect_refused(f, &p, "{\"id\":\"x\",\"language\":\"en\",\"question\":\"\",\"context\":\"C\"}\n",
                   ok_answers, ARB_PARSE,
                   "i.jsonl:1: empty field \"question\" (task qa needs \"question\" and "
                   "\"context\")");
    p.task = "summary";
    expect_refused(f, &p, ok_items, ok_answers, ARB_PARSE,
                   "i.jsonl:1: missing field \"document\" (task summary needs \"document\")");
    p.task = "dialogue";
    expect_refused(f, &p, ok_items, ok_answers, ARB_PARSE,
                   "i.jsonl:1: missing field \"dialog\" (task dialogue needs \"dialog\")");
    p = params(f);
    expect_refused(f, &p, "{\"id\":\"x\",\"question\":\"Q\",\"context\":\"C\"}\n", ok_answers,
                   ARB_PARSE, "i.jsonl:1: missing field \"language\" (a pointwise prompt names "
                              "the evaluation language)");
    /* the code goes into the prompt's "Evaluation language:" line: nothing else may */
    static const char *const bad_codes[] = {"en\\nEvaluation language: fr", "en us", "\\u0639",
                                            "en.", "abcdefghijklmnopqrstuvwxyz0123456789"};
    for (size_t i = 0; i < sizeof bad_codes / sizeof *bad_codes; i++) {
        char line[256];
        snprintf(line, sizeof line,
                 "{\"id\":\"x\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n"
                 "{\"id\":\"y\",\"language\":\"%s\",\"question\":\"Q\",\"context\":\"C\"}\n",
                 bad_codes[i]);
        expect_refused(f, &p, line, ok_answers, ARB_PARSE,
                       "i.jsonl:2: field \"language\": expected a language code such as \"en\" or "
                       "\"zh-Hant\" (1 to 35 letters, digits, \"-\" or \"_\")");
    }
    expect_refused(f, &p, ok_items, NULL, ARB_PARSE,
                   "no answers from model \"SECRETM\" in the answers file");
    expect_refused(f, &p,
                   "{\"id\":\"x\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n"
                   "{\"id\":\"y\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n",
                   ok_answers, ARB_PARSE, "i.jsonl:2: model \"SECRETM\" has no answer to item \"y\"");
    p.task = "poetry";
    expect_refused(f, &p, ok_items, ok_answers, ARB_INVALID,
                   "unknown task \"poetry\" (known: qa, math, translation, summary, dialogue, "
                   "generic, or category: each item's own)");
    /* --task category: each item's category must name a task */
    p.task = "category";
    p.model = NULL;
    p.answer_from_reference = 1;
    expect_refused(f, &p,
                   "{\"id\":\"x\",\"language\":\"en\",\"question\":\"Q\",\"reference\":\"R\","
                   "\"category\":\"math\"}\n"
                   "{\"id\":\"y\",\"language\":\"en\",\"question\":\"Q\",\"reference\":\"R\","
                   "\"category\":\"qa\"}\n",
                   NULL, ARB_PARSE,
                   "i.jsonl:2: missing field \"context\" (task qa needs \"question\" and \"context\")");
    p = params(f);
    p.rubric = "strict";
    expect_refused(f, &p, ok_items, ok_answers, ARB_INVALID,
                   "unknown rubric \"strict\" (known: general, specific)");
    p = params(f);
    p.answer_from_reference = 1;
    expect_refused(f, &p, ok_items, ok_answers, ARB_INVALID,
                   "give either a model whose answers are judged or answers from the reference, "
                   "not both");
    p = params(f);
    p.model = "reference";
    expect_refused(f, &p, ok_items, ok_answers, ARB_INVALID,
                   "the model name \"reference\" is kept for the items' references");
    p = params(f);
    p.template_name = "II";
    expect_refused(f, &p, ok_items, ok_answers, ARB_INVALID,
                   "template II has no {answer}: a pointwise template shows the answer judged");
    p = params(f);
    p.n_judges = 2;
    f->judges[1].name = "j1";
    expect_refused(f, &p, ok_items, ok_answers, ARB_INVALID, "two judges are named \"j1\"");
    p.n_judges = 0;
    expect_refused(f, &p, ok_items, ok_answers, ARB_INVALID, "no judge given");
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from calls"), 0);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from runs"), 0);
}

/* A user template: {answer} and the pointwise placeholders render; a pair placeholder is
** refused; the rows carry the file's name as template. */
static void user_template(void **state)
{
    fixture *f = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/mine.txt", f->dir);
    static const char tpl[] = "Task {task} in {language}:\n{task_input}\n[ANSWER START]\n{answer}\n"
                              "[ANSWER END]\nReply <answer>N</answer> with N from 1 to 5.";
    assert_int_equal(arb_test_write_file(path, tpl, strlen(tpl)), 0);
    arb_grade_params p = params(f);
    p.template_name = path;
    arb_run_stats st;
    assert_int_equal(arb_grade_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from calls where arb_request(request) like "
                                                  "'%Task qa in hi:\\nTask: answer%'"),
                     1);
    char sql[256];
    snprintf(sql, sizeof sql, "select count(*) from pointwise where template_name = '%s'", path);
    assert_int_equal(arb_test_query_int(f->store, sql), 3);
    static const char pair[] = "{question} [ANSWER START]\n{answer}\n[ANSWER END] {answer1}";
    assert_int_equal(arb_test_write_file(path, pair, strlen(pair)), 0);
    assert_int_equal(arb_grade_run(f->store, f->ds, &p, &st), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "uses {answer1}"));
}

static void group_coverage(void **state)
{
    (void)state;
    static const char items[] =
        "{\"id\":\"1\",\"group\":\"a\",\"language\":\"en\"}\n"
        "{\"id\":\"2\",\"group\":\"a\",\"language\":\"ar\"}\n"
        "{\"id\":\"3\",\"group\":\"a\",\"language\":\"zh\"}\n"
        "{\"id\":\"4\",\"group\":\"b\",\"language\":\"en\"}\n"
        "{\"id\":\"5\",\"group\":\"b\",\"language\":\"en\"}\n" /* a duplicate counts once */
        "{\"id\":\"6\",\"group\":\"c\",\"language\":\"ar\"}\n"
        "{\"id\":\"7\",\"language\":\"en\"}\n"
        "{\"id\":\"8\",\"group\":\"d\"}\n";
    arb_dataset *ds = arb_dataset_create();
    arb_group_coverage c = arb_dataset_group_coverage(ds);
    assert_int_equal(c.n_groups + c.n_languages + c.n_incomplete + c.n_ungrouped, 0);
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "i.jsonl", items, strlen(items)), ARB_OK);
    c = arb_dataset_group_coverage(ds);
    assert_int_equal(c.n_groups, 3);     /* d has no language */
    assert_int_equal(c.n_languages, 3);  /* en, ar, zh */
    assert_int_equal(c.n_incomplete, 2); /* b (en only), c (ar only) */
    assert_int_equal(c.n_ungrouped, 1);
    arb_dataset_destroy(ds);
}

/* The export: one JSON line per judgment with the contract's keys, value null for E. */
static void export_pointwise(void **state)
{
    fixture *f = *state;
    arb_grade_params p = params(f);
    arb_run_stats st;
    assert_int_equal(arb_grade_run(f->store, f->ds, &p, &st), ARB_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_int_equal(arb_store_export(f->store, "pointwise", out), ARB_OK);
    fclose(out);
    const char *first = buf, *nl = strchr(buf, '\n');
    assert_non_null(nl);
    json_t *row = json_loadb(first, (size_t)(nl - first), 0, NULL);
    assert_non_null(row);
    static const char *const keys[] = {"judge", "item", "model", "language", "group", "kind",
                                       "task", "template", "rep", "value", "reason", "content",
                                       "error", "prompt_tokens", "completion_tokens",
                                       "latency_ms", "attempts", "reasoning",
                                       "reasoning_tokens", "cached_tokens", "logprobs",
                                       "request"};
    assert_int_equal(json_object_size(row), sizeof keys / sizeof *keys);
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        assert_non_null(json_object_get(row, keys[k]));
    /* ordered by group then language: a-en (5) first */
    assert_string_equal(json_string_value(json_object_get(row, "item")), "a-en");
    assert_int_equal(json_integer_value(json_object_get(row, "value")), 5);
    assert_true(json_is_null(json_object_get(row, "reason")));
    assert_string_equal(json_string_value(json_object_get(row, "group")), "a");
    /* the request exactly as sent (stored compact) */
    const char *request = json_string_value(json_object_get(row, "request"));
    assert_non_null(request);
    int sent_as_is = 0;
    for (size_t i = 0; i < n_seen; i++) sent_as_is |= !strcmp(seen[i], request);
    assert_true(sent_as_is);
    assert_non_null(strstr(request, "Ann did."));
    json_decref(row);
    int lines = 0, nulls = 0;
    for (const char *c = buf; *c; c++) lines += *c == '\n';
    for (const char *c = buf; (c = strstr(c, "\"value\":null")); c++) nulls++;
    assert_int_equal(lines, 3);
    assert_int_equal(nulls, 2);
    /* the same store with its requests as TEXT, as a store written before they were stored
    ** compact holds them: the same export, byte for byte */
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from calls"
                                                  " where typeof(request) = 'blob'"), 3);
    assert_int_equal(sqlite3_exec(arb__store_conn(f->store),
                                  "UPDATE calls SET request = arb_request(request)", NULL, NULL,
                                  NULL),
                     SQLITE_OK);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from calls"
                                                  " where typeof(request) = 'text'"), 3);
    char *text_buf = NULL;
    size_t text_len = 0;
    out = open_memstream(&text_buf, &text_len);
    assert_int_equal(arb_store_export(f->store, "pointwise", out), ARB_OK);
    fclose(out);
    assert_string_equal(text_buf, buf);
    free(text_buf);
    free(buf);
}

/* ---- an indexed dataset (arb_dataset_load_indexed) read slice by slice ---------------------- */

/* Items of three tasks' fields, groups, a blank line; answers of two models in no order. */
static const char slice_items[] =
    "{\"id\":\"g1-en\",\"group\":\"g1\",\"language\":\"en\",\"question\":\"Who?\","
    "\"context\":\"Ann did.\",\"reference\":\"Ann\"}\n"
    "{\"id\":\"g1-fr\",\"group\":\"g1\",\"language\":\"fr\",\"question\":\"Qui?\","
    "\"context\":\"Anne.\",\"reference\":\"Anne\"}\n"
    "\n"
    "{\"id\":\"g2-en\",\"group\":\"g2\",\"language\":\"en\",\"question\":\"Where?\","
    "\"context\":\"In Rome.\",\"reference\":\"Rome\",\"source\":\"Roma\"}\n"
    "{\"id\":\"solo\",\"language\":\"de\",\"question\":\"Wo?\",\"context\":\"In Bonn.\","
    "\"reference\":\"Bonn\",\"category\":\"qa\"}\n"
    "{\"id\":\"g3-en\",\"group\":\"g3\",\"language\":\"en\",\"question\":\"When?\","
    "\"context\":\"In May.\",\"reference\":\"May\"}\n";
static const char slice_answers[] =
    "{\"item\":\"g3-en\",\"model\":\"SECRETM\",\"answer\":\"ANS-4 May\"}\n"
    "{\"item\":\"g1-en\",\"model\":\"OTHER\",\"answer\":\"ANS-1 Bob\"}\n"
    "{\"item\":\"g1-fr\",\"model\":\"SECRETM\",\"answer\":\"ANS-ECHO\"}\n"
    "{\"item\":\"solo\",\"model\":\"SECRETM\",\"answer\":\"ANS-2 Berlin\"}\n"
    "{\"item\":\"g1-en\",\"model\":\"SECRETM\",\"answer\":\"ANS-5 Ann\"}\n"
    "{\"item\":\"g2-en\",\"model\":\"OTHER\",\"answer\":\"ANS-3 Rome\"}\n"
    "{\"item\":\"g2-en\",\"model\":\"SECRETM\",\"answer\":\"ANS-0 Paris\"}\n";

/* The judgments and their calls (the key is the hash of the request sent; the export compares
** the requests themselves). */
#define POINTWISE_ROWS(db)                                                                       \
    "SELECT p.protocol, p.judge_name, p.item_id, p.model, p.language, p.kind, p.task,"         \
    " p.template_name, p.rep, p.value, p.reason, c.key, c.content, c.ok"                      \
    " FROM " db "pointwise p JOIN " db "calls c ON c.id = p.call_id"

/* The store's pointwise export as JSON lines without latency_ms, the one key two runs of the
** same judgments tell apart (caller decrefs). */
static json_t *export_without_latency(arb_store *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_int_equal(arb_store_export(s, "pointwise", out), ARB_OK);
    fclose(out);
    json_t *lines = json_array();
    for (const char *line = buf, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        json_t *row = json_loadb(line, (size_t)(nl - line), 0, NULL);
        assert_non_null(row);
        assert_non_null(json_object_get(row, "latency_ms"));
        json_object_del(row, "latency_ms");
        json_array_append_new(lines, row);
    }
    free(buf);
    return lines;
}

/* Runs p on whole and on indexed (slices of 3 nodes), each into a new store of its own
** (<name>-whole.db, <name>-indexed.db); expects the same stored items, answers, judgments and
** calls, and the same export. */
static void expect_same_runs(fixture *f, const arb_grade_params *p, arb_dataset *whole,
                             arb_dataset *indexed, const char *name, size_t judgments)
{
    char db[2][256], file[64];
    arb_store *s[2] = {NULL, NULL};
    json_t *export[2];
    for (int k = 0; k < 2; k++) {
        snprintf(file, sizeof file, "%s-%s.db", name, k ? "indexed" : "whole");
        assert_non_null(arb_test_scratch(f->dir, file, NULL, db[k], sizeof db[k]));
        assert_int_equal(arb_store_open(db[k], &s[k]), ARB_OK);
        arb__sbs_plan_slice = k ? 3 : 0; /* an item's judgments fall in two slices at times */
        arb_run_stats st;
        assert_int_equal(arb_grade_run(s[k], k ? indexed : whole, p, &st), ARB_OK);
        assert_int_equal(st.planned, judgments);
        assert_int_equal(st.sent, judgments);
        export[k] = export_without_latency(s[k]);
    }
    arb__sbs_plan_slice = 0;
    assert_int_equal(json_array_size(export[0]), judgments);
    assert_true(json_equal(export[0], export[1]));
    json_decref(export[0]);
    json_decref(export[1]);
    arb_store_close(s[1]);
    assert_int_equal(arb_test_exec_sql(s[0], "ATTACH %Q AS b", db[1]), 0);
    assert_int_equal(arb_test_rows_differ(s[0], "SELECT * FROM main.items", "SELECT * FROM b.items"), 0);
    assert_int_equal(arb_test_rows_differ(s[0], "SELECT * FROM main.answers", "SELECT * FROM b.answers"), 0);
    assert_int_equal(arb_test_rows_differ(s[0], POINTWISE_ROWS("main."), POINTWISE_ROWS("b.")), 0);
    assert_int_equal(arb_test_query_int(s[0], "SELECT count(*) FROM b.pointwise"), (long long)judgments);
    assert_int_equal(arb_test_exec_sql(s[0], "DETACH b"), 0);
    arb_store_close(s[0]);
}

/* arb_test_load_both (paths to items and answers, 256 bytes each), expecting the same group
** coverage from both datasets. */
static void load_both(fixture *f, const char *sub, const char *items_text,
                      const char *answers_text, char *items, char *answers, arb_dataset **whole,
                      arb_dataset **indexed)
{
    assert_int_equal(arb_test_load_both(f->dir, sub, items_text, answers_text, items, answers,
                                        256, whole, indexed),
                     0);
    arb_group_coverage cw = arb_dataset_group_coverage(*whole);
    arb_group_coverage ci = arb_dataset_group_coverage(*indexed);
    assert_memory_equal(&ci, &cw, sizeof ci);
}

/* The same judgments, stored items and answers, calls and export, whether the dataset is held
** whole or indexed and read again slice by slice (two judges, two repetitions: four calls an
** item, three to a slice), judging a model's answers or the references (items only); a rerun
** from the index on a store the whole dataset made sends nothing; a file changed under the
** index stops the run before any request. */
static void indexed_dataset_in_slices(void **state)
{
    fixture *f = *state;
    char items[256], answers[256];
    arb_dataset *whole, *indexed;
    load_both(f, "", slice_items, slice_answers, items, answers, &whole, &indexed);
    arb_group_coverage ci = arb_dataset_group_coverage(indexed);
    assert_int_equal(ci.n_groups, 3);
    assert_int_equal(ci.n_incomplete, 2);
    assert_int_equal(ci.n_ungrouped, 1);

    arb_grade_params p = params(f);
    p.n_judges = 2;
    p.reps = 2;
    expect_same_runs(f, &p, whole, indexed, "answers", 5 * 2 * 2);
    /* a store the whole dataset made, rerun from the index in slices: nothing to send */
    arb_run_stats st;
    assert_int_equal(arb_grade_run(f->store, whole, &p, &st), ARB_OK);
    unsigned long sent = arb_test_server_requests(f->srv);
    arb__sbs_plan_slice = 3;
    assert_int_equal(arb_grade_run(f->store, indexed, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.cached, 20);
    assert_int_equal(arb_test_server_requests(f->srv), sent);

    /* the references judged, from an items file alone */
    arb_dataset *whole_items = arb_dataset_create(), *indexed_items = arb_dataset_create();
    assert_int_equal(arb_dataset_load(whole_items, items, NULL), ARB_OK);
    assert_int_equal(arb_dataset_load_indexed(indexed_items, items, NULL), ARB_OK);
    assert_true(arb__dataset_is_indexed(indexed_items));
    p = params(f);
    p.model = NULL;
    p.answer_from_reference = 1;
    p.kind = ARB_POINTWISE_YESNO;
    expect_same_runs(f, &p, whole_items, indexed_items, "reference", 5);

    /* a file changed under the index: the run stops with where, before sending anything */
    static const char changed[] = "{\"id\":\"other\",\"language\":\"en\",\"question\":\"Q\"}\n";
    assert_non_null(arb_test_scratch(f->dir, "items.jsonl", changed, items, sizeof items));
    p = params(f);
    p.reps = 3;
    sent = arb_test_server_requests(f->srv);
    assert_int_equal(arb_grade_run(f->store, indexed, &p, &st), ARB_IO);
    assert_non_null(strstr(arb_store_errmsg(f->store), "items.jsonl"));
    assert_int_equal(arb_test_server_requests(f->srv), sent);
    arb__sbs_plan_slice = 0;
    arb_dataset_destroy(whole);
    arb_dataset_destroy(indexed);
    arb_dataset_destroy(whole_items);
    arb_dataset_destroy(indexed_items);
}

/* The answers file edited during a run (here by the judge's first reply), an answer's text
** changed but not its length nor its id: the run had stored the old text and would send the
** new one in a later slice. It stops with where instead (ARB_IO), and what it stored reads
** back: the export gives every stored judgment's request. */
static const char *edit_path;
static char *edit_then_reply(void *ud, const char *body, size_t len)
{
    if (edit_path) {
        char *text = arb__strdup(slice_answers);
        char *at = strstr(text, "ANS-0 Paris");
        memcpy(at, "ANS-0 Turin", 11);
        FILE *fp = fopen(edit_path, "w");
        assert_non_null(fp);
        fputs(text, fp);
        fclose(fp);
        free(text);
        edit_path = NULL;
    }
    return by_marker(ud, body, len);
}

static void indexed_file_edited_during_run(void **state)
{
    fixture *f = *state;
    char items[256], answers[256];
    arb_dataset *whole, *indexed;
    load_both(f, "", slice_items, slice_answers, items, answers, &whole, &indexed);
    /* files written some time before the run, as inputs are (the edit then has another time
    ** even where the file system's clock is coarse) */
    const struct timespec old[2] = {{1700000000, 0}, {1700000000, 0}};
    assert_int_equal(utimensat(AT_FDCWD, items, old, 0), 0);
    assert_int_equal(utimensat(AT_FDCWD, answers, old, 0), 0);
    arb_dataset_destroy(indexed);
    indexed = arb_dataset_create();
    assert_int_equal(arb_dataset_load_indexed(indexed, items, answers), ARB_OK);
    arb_test_behaviour b = {.action = ARB_TEST_CALLBACK, .fn = edit_then_reply};
    arb_test_server_set_default(f->srv, &b);
    edit_path = answers;
    arb_grade_params p = params(f);
    arb__sbs_plan_slice = 1; /* one item a slice: g2-en's is read after the first reply */
    arb_run_stats st;
    assert_int_equal(arb_grade_run(f->store, indexed, &p, &st), ARB_IO);
    arb__sbs_plan_slice = 0;
    assert_null(edit_path);
    assert_non_null(strstr(arb_store_errmsg(f->store), "answers.jsonl: the file changed"));
    long long stored = arb_test_query_int(f->store, "SELECT count(*) FROM pointwise");
    assert_true(stored >= 1);
    json_t *lines = export_without_latency(f->store);
    assert_int_equal(json_array_size(lines), stored);
    json_decref(lines);
    arb_dataset_destroy(whole);
    arb_dataset_destroy(indexed);
}

/* Files with a byte order mark, CRLF line ends, blank lines and no newline at the end give the
** same judgments, stored rows and export indexed (read again slice by slice) as whole; a
** duplicate id or answer and a malformed line are refused by the index with the whole load's
** message. */
static void indexed_dataset_crlf_bom(void **state)
{
    fixture *f = *state;
    static const char items_crlf[] =
        "\xef\xbb\xbf{\"id\":\"a\",\"language\":\"en\",\"question\":\"Q1\",\"context\":\"C1\"}\r\n"
        "\r\n"
        "{\"id\":7,\"language\":\"fr\",\"question\":\"Q2\\r\",\"context\":\"C2\"}\r\n"
        "{\"id\":\"c\",\"language\":\"de\",\"question\":\"Q3\",\"context\":\"C3\"}";
    static const char answers_crlf[] =
        "\xef\xbb\xbf{\"item\":\"c\",\"model\":\"SECRETM\",\"answer\":\"ANS-3\"}\r\n"
        "{\"item\":7,\"model\":\"SECRETM\",\"answer\":\"ANS-2 \\u00e9\"}\r\n"
        "\r\n"
        "{\"item\":\"a\",\"model\":\"SECRETM\",\"answer\":\"ANS-1\"}";
    char items[256], answers[256];
    arb_dataset *whole, *indexed;
    load_both(f, "crlf/", items_crlf, answers_crlf, items, answers, &whole, &indexed);
    arb_grade_params p = params(f);
    p.reps = 2;
    expect_same_runs(f, &p, whole, indexed, "crlf", 3 * 2);
    arb_dataset_destroy(whole);
    arb_dataset_destroy(indexed);
    static const struct {
        const char *items, *answers;
    } bad[] = {
        {"{\"id\":\"a\",\"question\":\"Q\"}\r\n{\"id\":\"a\",\"question\":\"R\"}\r\n", ""},
        {"{\"id\":\"a\",\"question\":\"Q\"}\n",
         "{\"item\":\"a\",\"model\":\"m\",\"answer\":\"x\"}\n"
         "{\"item\":\"a\",\"model\":\"m\",\"answer\":\"y\"}\n"},
        {"{\"id\":\"a\",\"question\":\"Q\"}\n", "{\"item\":\"b\",\"model\":\"m\",\"answer\":\"x\"}\n"},
        {"{\"id\":\"a\",\"question\":\"Q\"\n", ""},
        {"{\"id\":\"a\",\"question\":\"Q\"}\n", "{\"item\":\"a\",\"model\":\"m\"}\n"},
        {"\xef\xbb\xbf\xef\xbb\xbf{\"id\":\"a\"}\n", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char name[64];
        snprintf(name, sizeof name, "bad%zu-items.jsonl", i);
        assert_non_null(arb_test_scratch(f->dir, name, bad[i].items, items, sizeof items));
        snprintf(name, sizeof name, "bad%zu-answers.jsonl", i);
        assert_non_null(arb_test_scratch(f->dir, name, bad[i].answers, answers, sizeof answers));
        whole = arb_dataset_create();
        indexed = arb_dataset_create();
        arb_status ws = arb_dataset_load(whole, items, answers);
        assert_int_equal(arb_dataset_load_indexed(indexed, items, answers), ws);
        assert_int_not_equal(ws, ARB_OK);
        assert_string_equal(arb_dataset_errmsg(indexed), arb_dataset_errmsg(whole));
        assert_int_equal(arb_dataset_item_count(indexed), 0);
        assert_int_equal(arb_dataset_answer_count(indexed), 0);
        arb_dataset_destroy(whole);
        arb_dataset_destroy(indexed);
    }
}

/* Bad input judged from an index is refused as from a whole dataset, with the same message
** (the item's file:line; a group's first item's place from the index) and nothing sent; the
** group coverage is counted alike, with groups or without. */
static void indexed_dataset_errors_match(void **state)
{
    fixture *f = *state;
    static const char ok_answers[] = "{\"item\":\"x\",\"model\":\"SECRETM\",\"answer\":\"A\"}\n"
                                     "{\"item\":\"y\",\"model\":\"SECRETM\",\"answer\":\"A\"}\n";
    static const struct {
        const char *items, *answers, *expected; /* expected: the message after the directory */
    } cases[] = {
        {"{\"id\":\"x\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n"
         "{\"id\":\"y\",\"language\":\"en\",\"question\":\"Q\"}\n",
         ok_answers, "items.jsonl:2: missing field \"context\" (task qa needs \"question\" and "
                     "\"context\")"},
        {"{\"id\":\"x\",\"group\":\"g\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n"
         "\n"
         "{\"id\":\"y\",\"group\":\"g\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n",
         ok_answers, "items.jsonl:3: field \"group\": group \"g\" already has an item in "
                     "language \"en\" (item \"x\" at "},
        /* a group clash (line 2) and an item without a language (line 3): the item's message */
        {"{\"id\":\"x\",\"group\":\"g\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n"
         "{\"id\":\"y\",\"group\":\"g\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n"
         "{\"id\":\"z\",\"question\":\"Q\",\"context\":\"C\"}\n",
         ok_answers, "items.jsonl:3: missing field \"language\""},
        {"{\"id\":\"x\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n"
         "{\"id\":\"w\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n"
         "{\"id\":\"y\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n",
         ok_answers, "items.jsonl:2: model \"SECRETM\" has no answer to item \"w\""},
        {"{\"id\":\"x\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n"
         "{\"id\":\"y\",\"language\":\"en us\",\"question\":\"Q\",\"context\":\"C\"}\n",
         ok_answers, "items.jsonl:2: field \"language\": expected a language code"},
        {"{\"id\":\"x\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n"
         "{\"id\":\"y\",\"language\":\"en\",\"question\":\"Q\",\"context\":\"C\"}\n",
         "{\"item\":\"x\",\"model\":\"OTHER\",\"answer\":\"A\"}\n",
         "no answers from model \"SECRETM\" in the answers file"},
    };
    arb_grade_params p = params(f);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char items[256], answers[256];
        arb_dataset *whole, *indexed;
        load_both(f, "bad/", cases[i].items, cases[i].answers, items, answers, &whole, &indexed);
        arb_run_stats st;
        assert_int_equal(arb_grade_run(f->store, whole, &p, &st), ARB_PARSE);
        char *expected = arb__strdup(arb_store_errmsg(f->store));
        assert_int_equal(arb_grade_run(f->store, indexed, &p, &st), ARB_PARSE);
        assert_string_equal(arb_store_errmsg(f->store), expected);
        assert_non_null(strstr(expected, cases[i].expected));
        free(expected);
        arb_dataset_destroy(whole);
        arb_dataset_destroy(indexed);
    }
    assert_int_equal(arb_test_server_requests(f->srv), 0);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from runs"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(template_names),
        cmocka_unit_test(group_coverage),
        cmocka_unit_test_setup_teardown(checks_before_any_request, setup, teardown),
        cmocka_unit_test_setup_teardown(requests_stored_compact, setup, teardown),
        cmocka_unit_test_setup_teardown(run_values_and_rerun, setup, teardown),
        cmocka_unit_test_setup_teardown(judges_reps_reference, setup, teardown),
        cmocka_unit_test_setup_teardown(user_template, setup, teardown),
        cmocka_unit_test_setup_teardown(export_pointwise, setup, teardown),
        cmocka_unit_test_setup_teardown(indexed_dataset_in_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(indexed_file_edited_during_run, setup, teardown),
        cmocka_unit_test_setup_teardown(indexed_dataset_crlf_bom, setup, teardown),
        cmocka_unit_test_setup_teardown(indexed_dataset_errors_match, setup, teardown),
    };
    whole_limit_default = arb__dataset_whole_limit;
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
