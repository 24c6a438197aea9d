/*
** test_sbs.c -- the side-by-side protocol end to end over real HTTP against the scriptable
** test server: both orders, repetitions, verdict mapping, model names kept out of prompts,
** checks before any request, and the audit of a judge that always says A.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "testserver.h"
#include "testutil.h"

static const char items_jsonl[] =
    "{\"id\":\"q1\",\"question\":\"What is 2+2?\",\"reference\":\"4\"}\n"
    "{\"id\":\"q2\",\"question\":\"Capital of France?\"}\n"
    "{\"id\":\"q3\",\"question\":\"Name a prime.\",\"reference\":\"7\"}\n";
static const char answers_jsonl[] =
    "{\"item\":\"q1\",\"model\":\"SECRETCAND\",\"answer\":\"four\"}\n"
    "{\"item\":\"q1\",\"model\":\"SECRETBASE\",\"answer\":\"five\"}\n"
    "{\"item\":\"q2\",\"model\":\"SECRETCAND\",\"answer\":\"Paris\"}\n"
    "{\"item\":\"q2\",\"model\":\"SECRETBASE\",\"answer\":\"Lyon\"}\n"
    "{\"item\":\"q3\",\"model\":\"SECRETCAND\",\"answer\":\"7\"}\n"
    "{\"item\":\"q3\",\"model\":\"SECRETBASE\",\"answer\":\"9\"}\n";

static int names_leaked = 0;
/* Always "[[A]]"; notes any request that mentions a model name. */
static char *always_a(void *ud, const char *body, size_t len)
{
    (void)len;
    if (strstr(body, "SECRETCAND") || strstr(body, "SECRETBASE")) names_leaked = 1;
    return arb__strdup("The first one.\n[[A]]");
}

typedef struct fixture {
    arb_test_server *srv;
    arb_store *store;
    arb_dataset *ds;
    char dir[64];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_int_equal(arb_test_make_dir("sbs", f->dir, sizeof f->dir), 0);
    char db[128];
    snprintf(db, sizeof db, "%s/s.db", f->dir);
    f->srv = arb_test_server_start();
    arb_test_behaviour b = {.action = ARB_TEST_CALLBACK, .fn = always_a};
    arb_test_server_set_default(f->srv, &b);
    assert_int_equal(arb_store_open(db, &f->store), ARB_OK);
    f->ds = arb_dataset_create();
    assert_int_equal(arb_dataset_add_items_jsonl(f->ds, "items.jsonl", items_jsonl, strlen(items_jsonl)), ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(f->ds, "answers.jsonl", answers_jsonl, strlen(answers_jsonl)), ARB_OK);
    names_leaked = 0;
    *state = f;
    return 0;
}

static uint64_t whole_limit_default; /* arb__dataset_whole_limit as built; tests may lower it */

static int teardown(void **state)
{
    fixture *f = *state;
    arb__dataset_whole_limit = whole_limit_default;
    arb_dataset_destroy(f->ds);
    arb_store_close(f->store);
    arb_test_server_stop(f->srv);
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

static arb_sbs_params params(fixture *f)
{
    arb_sbs_params p = arb_sbs_default_params();
    p.candidate = "SECRETCAND";
    p.baseline = "SECRETBASE";
    p.template_name = "II";
    p.judge.base_url = arb_test_server_base_url(f->srv);
    p.judge.model = "judge-m";
    p.judge.name = "always-a";
    p.progress = 0;
    return p;
}

static void test_checks_before_any_request(void **state)
{
    fixture *f = *state;
    arb_sbs_params p = params(f);
    arb_run_stats st;
    p.template_name = "II-fact"; /* needs a reference; q2 has none */
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_PARSE);
    assert_string_equal(arb_store_errmsg(f->store),
                        "items.jsonl:2: item \"q2\" has no \"reference\", which template II-fact needs");
    p = params(f);
    p.candidate = "nobody";
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_PARSE);
    assert_non_null(strstr(arb_store_errmsg(f->store), "\"nobody\""));
    p = params(f);
    p.baseline = p.candidate;
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_INVALID);
    p = params(f);
    p.template_name = "no-such-template";
    assert_int_not_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(arb_test_server_requests(f->srv), 0);
}

/* Items load without a question (pointwise tasks), but side-by-side judging needs one: the
** run stops with the item's file:line before any request. */
static void test_item_without_question_refused(void **state)
{
    fixture *f = *state;
    arb_dataset *ds = arb_dataset_create();
    static const char items[] = "{\"id\":\"q1\",\"question\":\"What is 2+2?\"}\n"
                                "{\"id\":\"q2\",\"source\":\"Bonjour\"}\n";
    static const char answers[] =
        "{\"item\":\"q1\",\"model\":\"SECRETCAND\",\"answer\":\"4\"}\n"
        "{\"item\":\"q1\",\"model\":\"SECRETBASE\",\"answer\":\"5\"}\n"
        "{\"item\":\"q2\",\"model\":\"SECRETCAND\",\"answer\":\"Hello\"}\n"
        "{\"item\":\"q2\",\"model\":\"SECRETBASE\",\"answer\":\"Hi\"}\n";
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "items.jsonl", items, strlen(items)), ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "answers.jsonl", answers, strlen(answers)),
                     ARB_OK);
    arb_sbs_params p = params(f);
    arb_run_stats st;
    assert_int_equal(arb_sbs_run(f->store, ds, &p, &st), ARB_PARSE);
    assert_string_equal(arb_store_errmsg(f->store),
                        "items.jsonl:2: missing field \"question\" (pairwise judging compares "
                        "answers to a question)");
    assert_int_equal(arb_test_server_requests(f->srv), 0);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from calls"), 0);
    arb_dataset_destroy(ds);
}

static void test_both_orders_reps_and_audit(void **state)
{
    fixture *f = *state;
    arb_sbs_params p = params(f);
    p.reps = 2;
    p.judge.sampling.has_seed = 1;
    p.judge.sampling.seed = 10;
    arb_run_stats st;
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.planned, 3 * 2 * 2);
    assert_int_equal(st.sent, 12);
    assert_int_equal(arb_test_server_requests(f->srv), 12);
    assert_false(names_leaked);
    /* Repetition 1 is sent with seed + 1. */
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from calls where arb_request(request) like '%\"seed\":11%'"), 6);

    arb_audit *a = NULL;
    assert_int_equal(arb_audit_compute(f->store, NULL, &a), ARB_OK);
    assert_int_equal(arb_audit_count(a), 1);
    const arb_audit_row *r = arb_audit_row_at(a, 0);
    assert_string_equal(r->judge, "always-a");
    assert_int_equal(r->m.n_items, 3);
    assert_int_equal(r->m.n_pairs, 6);
    /* Always A: run 0 says a (candidate), run 1 says b (baseline): PBias 1, Con 0, PCon 0. */
    assert_true(fabs(r->m.run0.a - 1.0) < 1e-12);
    assert_true(fabs(r->m.run1.b - 1.0) < 1e-12);
    assert_true(fabs(r->m.value[ARB_M_PBIAS_AB] - 1.0) < 1e-12);
    assert_true(fabs(r->m.value[ARB_M_CON_ABCD]) < 1e-12);
    assert_true(fabs(r->m.value[ARB_M_PCON_AB]) < 1e-12);
    assert_true(fabs(r->m.value[ARB_M_ERROR_RATE]) < 1e-12);
    arb_audit_destroy(a);

    /* A rerun sends nothing and leaves one row per judgment. */
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.cached, 12);
    assert_int_equal(st.sent, 0);
    assert_int_equal(arb_test_server_requests(f->srv), 12);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from pairwise"), 12);
}

/* One judge name must not mix two configurations: a temperature-1 run under the name of a
** temperature-0 run is refused before any request (dry run too), and runs under its own name. */
static void test_judge_name_keeps_one_configuration(void **state)
{
    fixture *f = *state;
    arb_sbs_params p = params(f);
    arb_run_stats st;
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(arb_test_server_requests(f->srv), 6);
    p.judge.sampling.temperature = 1.0;
    p.reps = 3;
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_INVALID);
    const char *msg = arb_store_errmsg(f->store);
    assert_non_null(strstr(msg, "judge \"always-a\" already has judgments made with model judge-m"));
    assert_non_null(strstr(msg, "\"temperature\":0"));
    assert_non_null(strstr(msg, "\"temperature\":1"));
    assert_non_null(strstr(msg, "--judge-name"));
    p.dry_run = 1;
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_INVALID);
    assert_int_equal(arb_test_server_requests(f->srv), 6);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from pairwise"), 6);
    p.dry_run = 0;
    p.judge.name = "always-a@t1";
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from pairwise"), 6 + 18);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from judges"), 2);
}

/* Several judges in one run: each judges every item in both orders under its own name, with
** its own sampling; two judges with one name are refused before any request. */
static void test_several_judges(void **state)
{
    fixture *f = *state;
    arb_sbs_params p = params(f);
    arb_judge_config judges[2] = {p.judge, p.judge};
    judges[0].name = "j-one";
    judges[1].name = "j-two";
    judges[1].sampling.temperature = 0.5;
    p.judges = judges;
    p.n_judges = 2;
    p.judge.model = NULL; /* ignored when judges are given */
    arb_run_stats st;
    judges[1].name = "j-one";
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store), "two judges are named \"j-one\"");
    assert_int_equal(arb_test_server_requests(f->srv), 0);
    judges[1].name = "j-two";
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.planned, 3 * 2 * 2);
    assert_int_equal(st.sent, 12);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from pairwise where judge_name = 'j-one'"), 6);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from pairwise where judge_name = 'j-two'"), 6);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from calls where judge_name = 'j-two' "
                                                  "and json_extract(arb_request(request), '$.temperature') = 0.5"), 6);
    assert_int_equal(arb_test_query_int(f->store, "select json_array_length(params, '$.judges') from runs"), 2);
    /* The audit has one row per judge. */
    arb_audit *a = NULL;
    assert_int_equal(arb_audit_compute(f->store, NULL, &a), ARB_OK);
    assert_int_equal(arb_audit_count(a), 2);
    arb_audit_destroy(a);
}

static void test_invalid_output_is_e_with_text_kept(void **state)
{
    fixture *f = *state;
    arb_test_behaviour b = {.action = ARB_TEST_REPLY, .content = "I cannot decide. [[Z]]"};
    arb_test_server_set_default(f->srv, &b);
    arb_sbs_params p = params(f);
    p.options = 2;
    arb_run_stats st;
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.invalid, 6);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from pairwise p join calls c on c.id = p.call_id "
        "where p.position_verdict = 'E' and p.model_verdict = 'e' and c.content like 'I cannot decide%'"), 6);
}

/* A rerun of a finished run sends nothing and leaves the recorded judgments as they are (not
** rewritten: their judged_at stays); an edited answer sends exactly the calls whose request
** changed (both orders of its item) and only their rows change; an edited template file (same
** name) sends everything again. */
static void test_rerun_sends_only_what_changed(void **state)
{
    fixture *f = *state;
    char tpl_path[160];
    snprintf(tpl_path, sizeof tpl_path, "%s/mine.txt", f->dir);
    static const char tpl_v1[] = "=== user ===\nQ: {question}\n1: {answer1}\n2: {answer2}\n"
                                 "Say [[A]] or [[B]].\n";
    assert_int_equal(arb_test_write_file(tpl_path, tpl_v1, strlen(tpl_v1)), 0);
    arb_sbs_params p = params(f);
    arb_run_stats st;
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(arb_test_server_requests(f->srv), 6);
    assert_int_equal(arb_test_exec_sql(f->store, "update pairwise set judged_at = 'then'"), 0);

    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.cached, 6);
    assert_int_equal(st.sent, 0);
    assert_int_equal(arb_test_server_requests(f->srv), 6);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from pairwise where judged_at = 'then'"), 6);

    /* q2's candidate answer edited: its two calls (both orders) go out again, nothing else */
    arb_dataset *edited = arb_dataset_create();
    char *answers = arb__strdup(answers_jsonl);
    char *paris = strstr(answers, "\"Paris\"");
    memcpy(paris, "\"Rome\" ", 7);
    assert_int_equal(arb_dataset_add_items_jsonl(edited, "items.jsonl", items_jsonl, strlen(items_jsonl)), ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(edited, "answers.jsonl", answers, strlen(answers)), ARB_OK);
    assert_int_equal(arb_sbs_run(f->store, edited, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 2);
    assert_int_equal(st.cached, 4);
    assert_int_equal(arb_test_server_requests(f->srv), 8);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from pairwise where judged_at = 'then'"), 4);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from pairwise p join calls c on c.id = p.call_id "
                                                  "where p.item_id = 'q2' and arb_request(c.request) like '%Rome%'"), 2);
    /* the original answers again: those calls are stored, so taken (and their rows rewritten) */
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 0);
    assert_int_equal(arb_test_server_requests(f->srv), 8);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from pairwise p join calls c on c.id = p.call_id "
                                                  "where p.item_id = 'q2' and arb_request(c.request) like '%Paris%'"), 2);

    /* a template file of the same name, edited: every request changes */
    p.template_name = tpl_path;
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 6);
    assert_int_equal(arb_test_server_requests(f->srv), 14);
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(arb_test_server_requests(f->srv), 14);
    static const char tpl_v2[] = "=== user ===\nQuestion: {question}\n1: {answer1}\n2: {answer2}\n"
                                 "Say [[A]] or [[B]].\n";
    assert_int_equal(arb_test_write_file(tpl_path, tpl_v2, strlen(tpl_v2)), 0);
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 6);
    assert_int_equal(st.cached, 0);
    assert_int_equal(arb_test_server_requests(f->srv), 20);
    arb_dataset_destroy(edited);
    free(answers);
}

/* A rerun that takes every judgment from the store still counts those without a valid
** verdict, as the run that made them did. */
static void test_rerun_counts_recorded_invalid(void **state)
{
    fixture *f = *state;
    arb_test_behaviour b = {.action = ARB_TEST_REPLY, .content = "I cannot decide. [[Z]]"};
    arb_test_server_set_default(f->srv, &b);
    arb_sbs_params p = params(f);
    arb_run_stats st;
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.invalid, 6);
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.cached, 6);
    assert_int_equal(st.invalid, 6);
    assert_int_equal(arb_test_server_requests(f->srv), 6);
}

/* ---- an indexed dataset (arb_dataset_load_indexed) read slice by slice ---------------------- */

/* A verdict that depends on the request, so the stored replies tell requests apart. */
static char *by_length(void *ud, const char *body, size_t len)
{
    (void)ud;
    (void)body;
    static const char *const replies[] = {"[[A]]", "[[B]]", "[[C]]"};
    return arb__strdup(replies[len % 3]);
}

/* Items with what a reader must keep byte for byte: a byte order mark, an integer id, CRLF,
** a blank line, escapes, unknown fields, a reference on some. The answers file lists them in
** another order than the items (last item first), with a third model's answers between. */
static const char slice_items[] =
    "\xEF\xBB\xBF{\"id\":\"a1\",\"question\":\"Caf\\u00e9 or tea?\",\"category\":\"food\"}\n"
    "{\"id\":7,\"question\":\"Seven?\",\"reference\":\"7\",\"difficulty\":3}\r\n"
    "\n"
    "{\"id\":\"a3\",\"question\":\"Tab\\there\",\"language\":\"fr\",\"group\":\"g1\"}\n"
    "{\"id\":\"a4\",\"question\":\"\\\"Quoted\\\"\",\"reference\":\"\"}\n"
    "{\"id\":\"a5\",\"question\":\"Five\",\"context\":\"ctx\",\"tags\":[1,2]}\n"
    "{\"id\":\"a6\",\"question\":\"Six \\ud83d\\ude00\"}\n"
    "{\"id\":\"a7\",\"question\":\"Seven again\"}\n"
    " { \"id\" : \"a8\" , \"question\" : \"\\u0041\\/\\b\\f\\r \\u20ac \xC3\xA9 \\\\\" ,"
    " \"reference\":null,\"category\":\"x\\u00e9\"\t} ";
static const char slice_answers[] =
    "{\"item\":\"a7\",\"model\":\"SECRETBASE\",\"answer\":\"b7\"}\n"
    "{\"item\":\"a7\",\"model\":\"SECRETCAND\",\"answer\":\"c7\",\"tokens\":12}\n"
    "{\"item\":\"a1\",\"model\":\"OTHER\",\"answer\":\"o1\"}\n"
    "{\"item\":\"a6\",\"model\":\"SECRETCAND\",\"answer\":\"c6 \\u00fc\"}\n"
    "{\"item\":\"a5\",\"model\":\"SECRETBASE\",\"answer\":\"b5\"}\n"
    "{\"item\":\"a6\",\"model\":\"SECRETBASE\",\"answer\":\"b6\"}\r\n"
    "{\"item\":\"7\",\"model\":\"SECRETCAND\",\"answer\":\"c-seven\"}\n"
    "{\"item\":\"a5\",\"model\":\"SECRETCAND\",\"answer\":\"c5\"}\n"
    "\n"
    "{\"item\":\"a4\",\"model\":\"SECRETBASE\",\"answer\":\"b4\"}\n"
    "{\"item\":\"a3\",\"model\":\"SECRETCAND\",\"answer\":\"c3\\nline two\"}\n"
    "{\"item\":7,\"model\":\"SECRETBASE\",\"answer\":\"b-seven\"}\n"
    "{\"item\":\"a4\",\"model\":\"SECRETCAND\",\"answer\":\"c4\"}\n"
    "{\"item\":\"a3\",\"model\":\"SECRETBASE\",\"answer\":\"b3\"}\n"
    "{\"item\":\"a1\",\"model\":\"SECRETBASE\",\"answer\":\"b1\"}\n"
    "{\"item\":\"a5\",\"model\":\"OTHER\",\"answer\":\"o5\",\"note\":{\"x\":1}}\n"
    "{\"item\":\"a1\",\"model\":\"SECRETCAND\",\"answer\":\"c1\"}\n"
    "{\"answer\":\"\\ud83d\\ude00 b8\",\"model\":\"SECRETBASE\",\"item\":\"a8\"}\n"
    "{\"item\":\"a8\",\"model\":\"SECRETCAND\",\"answer\":\"c8 \\\"q\\\"\"}\n";

#define PAIRWISE_ROWS(db)                                                                        \
    "SELECT p.protocol, p.judge_name, p.item_id, p.candidate, p.baseline, p.template_name,"   \
    " p.options, p.ord, p.rep, p.position_verdict, p.model_verdict, c.key, c.content, c.ok"  \
    " FROM " db "pairwise p JOIN " db "calls c ON c.id = p.call_id"

/* The same judgments, the same stored items and answers, the same call keys, whether the
** dataset is held whole or indexed and read again slice by slice (slices of 3 nodes: an item's
** two orders fall in two slices at times; its answers lie anywhere in the answers file); a
** rerun on the store the whole dataset made sends nothing. */
static void test_indexed_dataset_in_slices(void **state)
{
    fixture *f = *state;
    arb__dataset_whole_limit = 0; /* index these small files */
    arb_test_behaviour b = {.action = ARB_TEST_CALLBACK, .fn = by_length};
    arb_test_server_set_default(f->srv, &b);
    char items[256], answers[256], db[256];
    assert_non_null(arb_test_scratch(f->dir, "items.jsonl", slice_items, items, sizeof items));
    assert_non_null(arb_test_scratch(f->dir, "answers.jsonl", slice_answers, answers, sizeof answers));
    arb_dataset *whole = arb_dataset_create(), *indexed = arb_dataset_create();
    assert_int_equal(arb_dataset_load(whole, items, answers), ARB_OK);
    assert_int_equal(arb_dataset_load_indexed(indexed, items, answers), ARB_OK);
    assert_true(arb__dataset_is_indexed(indexed));
    assert_int_equal(arb_dataset_item_count(indexed), 8);
    assert_int_equal(arb_dataset_answer_count(indexed), 18);

    arb_sbs_params p = params(f);
    p.template_name = "II-reason";
    arb_run_stats st;
    assert_int_equal(arb_sbs_run(f->store, whole, &p, &st), ARB_OK); /* one slice */
    assert_int_equal(st.sent, 16);

    arb_store *other = NULL;
    assert_non_null(arb_test_scratch(f->dir, "indexed.db", NULL, db, sizeof db));
    assert_int_equal(arb_store_open(db, &other), ARB_OK);
    arb__sbs_plan_slice = 3;
    assert_int_equal(arb_sbs_run(other, indexed, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 16);
    assert_int_equal(st.planned, 16);
    assert_int_equal(arb_test_server_requests(f->srv), 32);
    arb_store_close(other);

    assert_int_equal(arb_test_exec_sql(f->store, "ATTACH %Q AS b", db), 0);
    assert_int_equal(arb_test_rows_differ(f->store, "SELECT * FROM main.items", "SELECT * FROM b.items"), 0);
    assert_int_equal(arb_test_rows_differ(f->store, "SELECT * FROM main.answers", "SELECT * FROM b.answers"), 0);
    assert_int_equal(arb_test_rows_differ(f->store, PAIRWISE_ROWS("main."), PAIRWISE_ROWS("b.")), 0);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM b.pairwise"), 16);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM b.answers"), 18);
    assert_int_equal(arb_test_exec_sql(f->store, "DETACH b"), 0);

    /* the store the whole dataset made, rerun from the index in slices: nothing to send */
    assert_int_equal(arb_sbs_run(f->store, indexed, &p, &st), ARB_OK);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.cached, 16);
    assert_int_equal(arb_test_server_requests(f->srv), 32);

    /* a file changed under the index: the run stops with where, before sending anything */
    static const char changed[] = "{\"item\":\"a9\",\"model\":\"SECRETBASE\",\"answer\":\"b7\"}\n";
    assert_non_null(arb_test_scratch(f->dir, "answers.jsonl", changed, answers, sizeof answers));
    p.judge.name = "another";
    assert_int_not_equal(arb_sbs_run(f->store, indexed, &p, &st), ARB_OK);
    assert_non_null(strstr(arb_store_errmsg(f->store), "answers.jsonl"));
    assert_int_equal(arb_test_server_requests(f->srv), 32);
    arb__sbs_plan_slice = 0;
    arb_dataset_destroy(whole);
    arb_dataset_destroy(indexed);
}

/* A file removed after indexing: a window that needs it fails with the file's name and hands
** back no dataset; a window that does not need it (items only) is still read. */
static void test_indexed_window_file_gone(void **state)
{
    fixture *f = *state;
    arb__dataset_whole_limit = 0; /* index these small files */
    char items[256], answers[256];
    assert_non_null(arb_test_scratch(f->dir, "gone/items.jsonl", slice_items, items, sizeof items));
    assert_non_null(arb_test_scratch(f->dir, "gone/answers.jsonl", slice_answers, answers, sizeof answers));
    arb_dataset *indexed = arb_dataset_create(), *win = NULL;
    assert_int_equal(arb_dataset_load_indexed(indexed, items, answers), ARB_OK);
    const char *const models[] = {"SECRETCAND", "SECRETBASE"};
    char *err = NULL;
    assert_int_equal(arb__dataset_window(indexed, 0, 3, models, 2, &win, &err), ARB_OK);
    assert_int_equal(arb_dataset_item_count(win), 3);
    assert_int_equal(arb_dataset_answer_count(win), 6);
    assert_null(err);
    arb_dataset_destroy(win);

    assert_int_equal(unlink(answers), 0);
    assert_int_equal(arb__dataset_window(indexed, 0, 3, models, 2, &win, &err), ARB_IO);
    assert_null(win);
    assert_non_null(strstr(err, "gone/answers.jsonl: cannot open: "));
    free(err);
    assert_int_equal(arb__dataset_answers_window(indexed, 0, 4, &win, &err), ARB_IO);
    assert_null(win);
    assert_non_null(strstr(err, "gone/answers.jsonl: cannot open: "));
    free(err);
    assert_int_equal(arb__dataset_window(indexed, 2, 2, NULL, 0, &win, &err), ARB_OK);
    assert_int_equal(arb_dataset_item_count(win), 2);
    arb_dataset_destroy(win);

    assert_int_equal(unlink(items), 0);
    assert_int_equal(arb__dataset_window(indexed, 0, 3, models, 2, &win, &err), ARB_IO);
    assert_null(win);
    assert_non_null(strstr(err, "gone/items.jsonl: cannot open: "));
    free(err);
    arb_dataset_destroy(indexed);
}

/* Bad input read into an index fails as a whole load does, with the same message. */
static void test_indexed_dataset_errors_match(void **state)
{
    fixture *f = *state;
    arb__dataset_whole_limit = 0; /* index these small files */
    static const struct {
        const char *items, *answers;
    } cases[] = {
        {"{\"id\":\"q1\",\"question\":\"x\"}\n{\"id\":\"q1\",\"question\":\"y\"}\n", ""},
        {"{\"id\":\"q1\",\"question\":\"x\"}\nnot json\n", ""},
        {"{\"id\":\"q1\",\"question\":\"x\"}\n", "{\"item\":\"q2\",\"model\":\"m\",\"answer\":\"a\"}\n"},
        {"{\"id\":\"q1\",\"question\":\"x\"}\n",
         "{\"item\":\"q1\",\"model\":\"m\",\"answer\":\"a\"}\n\n{\"item\":\"q1\",\"model\":\"m\",\"answer\":\"b\"}\n"},
        {"{\"id\":\"q1\",\"question\":\"x\"}\n", "{\"item\":\"q1\",\"model\":\"m\",\"answer\":5}\n"},
        {"{\"id\":\"q1\",\"question\":\"\xff\"}\n", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char items[256], answers[256];
        assert_non_null(arb_test_scratch(f->dir, "bad/items.jsonl", cases[i].items, items, sizeof items));
        assert_non_null(arb_test_scratch(f->dir, "bad/answers.jsonl", cases[i].answers, answers, sizeof answers));
        arb_dataset *whole = arb_dataset_create(), *indexed = arb_dataset_create();
        arb_status a = arb_dataset_load(whole, items, answers);
        arb_status b = arb_dataset_load_indexed(indexed, items, answers);
        assert_int_equal(a, ARB_PARSE);
        assert_int_equal(b, a);
        assert_string_equal(arb_dataset_errmsg(indexed), arb_dataset_errmsg(whole));
        assert_int_equal(arb_dataset_item_count(indexed), 0);
        arb_dataset_destroy(whole);
        arb_dataset_destroy(indexed);
    }
}

/* A run under a budget goes in slices like any other (until 2026-11-28 it was one slice, so a
** 1,000,000-call run held every node and its whole indexed input at once): the spend goes from
** each slice to the next, so it stops where the whole run stops, with the same counts and the
** same message, and a rerun with a larger budget sends exactly the rest, in slices too. */
static void test_budget_run_in_slices(void **state)
{
    fixture *f = *state;
    arb_sbs_params p = params(f);
    p.reps = 2; /* 12 calls */
    /* $1 a completion token; the reply is 6 tokens (testserver.h) and max_tokens 6, so every
    ** call is estimated at, and costs, $6 */
    p.judge.price = (arb_price){.known = 1, .input_per_mtok = 0, .output_per_mtok = 1e6,
                                .cached_input_per_mtok = NAN};
    p.judge.sampling.max_tokens = 6;
    p.client.budget_usd = 40; /* 6 calls, $36: a seventh would make $42 */
    arb_run_stats whole, sliced;
    arb__exec_largest_slice = 0;
    assert_int_equal(arb_sbs_run(f->store, f->ds, &p, &whole), ARB_BUDGET);
    assert_int_equal(arb__exec_largest_slice, 12);
    char whole_msg[256];
    snprintf(whole_msg, sizeof whole_msg, "%s", arb_store_errmsg(f->store));

    char db[256];
    arb_store *other = NULL;
    assert_non_null(arb_test_scratch(f->dir, "sliced.db", NULL, db, sizeof db));
    assert_int_equal(arb_store_open(db, &other), ARB_OK);
    arb__sbs_plan_slice = 5; /* the budget stops the run in the second slice */
    arb__exec_largest_slice = 0;
    assert_int_equal(arb_sbs_run(other, f->ds, &p, &sliced), ARB_BUDGET);
    assert_int_equal(arb__exec_largest_slice, 5);
    assert_int_equal(whole.sent, 6);
    assert_int_equal(sliced.sent, 6);
    assert_int_equal(whole.not_sent, 6);
    assert_int_equal(sliced.not_sent, 6);
    assert_true(fabs(whole.budget_spent_usd - 36) < 1e-9);
    assert_true(fabs(sliced.budget_spent_usd - 36) < 1e-9);
    assert_string_equal(whole_msg, "budget reached: spent $36.0000 of $40.0000; 6 calls not "
                                   "sent; rerun with a larger budget to continue");
    assert_string_equal(arb_store_errmsg(other), whole_msg);
    assert_int_equal(arb_test_server_requests(f->srv), 12);

    /* a slice that the budget stops at its first call: the third, at $36 */
    arb__sbs_plan_slice = 3;
    p.judge.name = "sliced-by-3";
    p.judge.model = "judge-m3"; /* other requests, other keys: nothing stored yet */
    assert_int_equal(arb_sbs_run(other, f->ds, &p, &sliced), ARB_BUDGET);
    assert_int_equal(sliced.sent, 6);
    assert_int_equal(sliced.not_sent, 6);
    assert_int_equal(arb_test_server_requests(f->srv), 18);
    p.judge.name = "always-a";
    p.judge.model = "judge-m";

    /* the same six judgments (the first six calls of the plan), then the rest */
    assert_int_equal(arb_test_exec_sql(f->store, "ATTACH %Q AS b", db), 0);
    assert_int_equal(arb_test_rows_differ(f->store, PAIRWISE_ROWS("main."),
                                          "SELECT p.* FROM (" PAIRWISE_ROWS("b.") ") p "
                                          "WHERE p.judge_name = 'always-a'"), 0);
    assert_int_equal(arb_test_exec_sql(f->store, "DETACH b"), 0);
    arb__sbs_plan_slice = 5;
    p.client.budget_usd = 1000;
    assert_int_equal(arb_sbs_run(other, f->ds, &p, &sliced), ARB_OK);
    assert_int_equal(sliced.sent, 6);
    assert_int_equal(sliced.cached, 6);
    assert_int_equal(sliced.not_sent, 0);
    assert_true(fabs(sliced.budget_spent_usd - 72) < 1e-9);
    assert_int_equal(arb_test_server_requests(f->srv), 24);
    arb__sbs_plan_slice = 0;
    arb_store_close(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_checks_before_any_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_item_without_question_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_both_orders_reps_and_audit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_output_is_e_with_text_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_judge_name_keeps_one_configuration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_several_judges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rerun_sends_only_what_changed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rerun_counts_recorded_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_indexed_dataset_in_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_indexed_dataset_errors_match, setup, teardown),
        cmocka_unit_test_setup_teardown(test_indexed_window_file_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_budget_run_in_slices, setup, teardown),
    };
    whole_limit_default = arb__dataset_whole_limit;
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
