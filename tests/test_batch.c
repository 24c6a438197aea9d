/*
** test_batch.c -- batch files (batch.c, store_batches.c): part names, the export of queued calls
** (only pending ones, split by lines and bytes, a request larger than a file refused), and the
** ingest of output lines: each refusal with its file:line: field message and nothing stored, a
** 200 reply stored like an HTTP reply (content, tokens, status, attempts), an unusable body, an
** error line and a 500 stored as failed calls, an echoed key redacted, a second ingest changing
** nothing. Run one test alone with ARB_TEST=<name>.
*/
#include "internal.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[128];
    char path[256];
    arb_store *store;
} fixture;

static const char *const keys[3] = {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                                    "cccccccccccccccccccccccccccccccc"};

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f;
    if (arb_test_store_with_items("test_batch", "{\"id\":\"q1\",\"question\":\"one?\"}\n", f->dir,
                                  sizeof f->dir, &f->store))
        return -1;
    /* three queued calls of judge j (model m), the key variable TEST_BATCH_KEY */
    for (int i = 0; i < 3; i++) {
        char body[64];
        snprintf(body, sizeof body, "{\"model\":\"m\",\"n\":%d}", i);
        arb__batch_call c = {.key = (char *)keys[i], .judge_name = "j", .model = "m", .rep = 0,
                             .request_json = body, .api_key_env = "TEST_BATCH_KEY",
                             .base_url = "http://127.0.0.1:1/v1"};
        if (arb__store_queue_batch_call(f->store, &c)) return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f) return 0;
    arb_store_close(f->store);
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

static long long q(fixture *f, const char *sql) { return arb_test_query_int(f->store, sql); }

static arb_status ingest(fixture *f, const char *text, arb_batch_ingest_stats *st)
{
    arb_test_scratch(f->dir, "results.jsonl", text, f->path, sizeof f->path);
    return arb_batch_ingest(f->store, f->path, st);
}

static void part_names(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        size_t part;
        const char *want;
    } cases[] = {{"requests.jsonl", 1, "requests.jsonl"},
                 {"requests.jsonl", 0, "requests.jsonl"},
                 {"requests.jsonl", 2, "requests.2.jsonl"},
                 {"out/requests", 3, "out/requests.3"},
                 {"dir.d/requests", 2, "dir.d/requests.2"},
                 {".hidden", 2, ".hidden.2"},
                 {"a/.b", 12, "a/.b.12"},
                 {"x.tar.jsonl", 2, "x.tar.2.jsonl"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *got = arb_batch_part_path(cases[i].path, cases[i].part);
        assert_non_null(got);
        assert_string_equal(got, cases[i].want);
        arb_free(got);
    }
    assert_null(arb_batch_part_path(NULL, 1));
}

static void export_pending(void **state)
{
    fixture *f = *state;
    arb__call_record rec = {.key = keys[1], .judge_name = "j", .model = "m",
                            .request_json = "{\"model\":\"m\",\"n\":1}", .ok = 1, .content = "x",
                            .prompt_tokens = -1, .completion_tokens = -1, .latency_ms = 1};
    long long id = 0;
    assert_int_equal(arb__store_put_call(f->store, &rec, &id), ARB_OK);
    arb_batch_export_params p = arb_batch_export_default_params();
    assert_int_equal(p.max_lines, 50000);
    assert_int_equal(p.max_bytes, 200000000);
    char path[256];
    p.path = arb_test_scratch(f->dir, "req.jsonl", NULL, path, sizeof path);
    p.max_lines = 1;
    arb_batch_export_stats st;
    assert_int_equal(arb_batch_export(f->store, &p, &st), ARB_OK);
    assert_int_equal(st.calls, 2); /* the stored call is not pending */
    assert_int_equal(st.files, 2);
    size_t len = 0;
    char *err = NULL, *text = arb__read_file(path, &len, &err);
    assert_non_null(text);
    assert_string_equal(text, "{\"custom_id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"method\":"
                              "\"POST\",\"url\":\"/v1/chat/completions\",\"body\":{\"model\":"
                              "\"m\",\"n\":0}}\n");
    assert_int_equal(st.bytes, 2 * len);
    free(text);
    char path2[256];
    arb_test_scratch(f->dir, "req.2.jsonl", NULL, path2, sizeof path2);
    text = arb__read_file(path2, &len, &err);
    assert_non_null(strstr(text, keys[2]));
    free(text);
    p.max_lines = 50000;
    p.max_bytes = 1024;
    assert_int_equal(arb_batch_export(f->store, &p, &st), ARB_OK);
    assert_int_equal(st.files, 1);
    /* a line larger than a file may be */
    char big[2048];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char *body = arb__sprintf("{\"model\":\"m\",\"pad\":\"%s\"}", big);
    arb__batch_call c = {.key = "dddddddddddddddddddddddddddddddd", .judge_name = "j",
                         .model = "m", .request_json = body};
    assert_int_equal(arb__store_queue_batch_call(f->store, &c), ARB_OK);
    free(body);
    assert_int_equal(arb_batch_export(f->store, &p, &st), ARB_TOOBIG);
    assert_non_null(strstr(arb_store_errmsg(f->store), "larger than a batch file may be"));
    p.max_bytes = 100;
    assert_int_equal(arb_batch_export(f->store, &p, &st), ARB_INVALID);
}

#define OK_LINE(key, content)                                                                   \
    "{\"id\":\"r-" key "\",\"custom_id\":\"" key "\",\"response\":{\"status_code\":200,"      \
    "\"request_id\":\"q\",\"body\":{\"choices\":[{\"message\":{\"role\":\"assistant\","        \
    "\"content\":\"" content "\"}}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}},"  \
    "\"error\":null}\n"

static void ingest_refusals(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"not json\n", "results.jsonl:1: not valid JSON"},
        {OK_LINE("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "x") "[1]\n",
         "results.jsonl:2: expected a JSON object"},
        {"\n{\"custom_id\":5,\"response\":null}\n", "results.jsonl:2: field \"custom_id\""},
        {"{\"custom_id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"id\":3}",
         "results.jsonl:1: field \"id\": expected a string"},
        {"{\"custom_id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"response\":null,\"error\":null}",
         "results.jsonl:1: field \"response\": expected an object"},
        {"{\"custom_id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"response\":{\"status_code\":\"200\"}}",
         "results.jsonl:1: field \"response.status_code\""},
        {"{\"custom_id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"response\":{\"status_code\":200}}",
         "results.jsonl:1: field \"response.body\": expected the reply"},
        {"{\"custom_id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"response\":{\"status_code\":200,"
         "\"body\":[]}}",
         "results.jsonl:1: field \"response.body\": expected an object or null"},
        {"{\"custom_id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"error\":7}",
         "results.jsonl:1: field \"error\": expected null"},
        {"{\"custom_id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"error\":{\"message\":1}}",
         "results.jsonl:1: field \"error\": expected {\"code\""},
        {OK_LINE("eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "x"),
         "results.jsonl:1: field \"custom_id\": no call \"eeee"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        arb_batch_ingest_stats st;
        assert_int_equal(ingest(f, cases[i].text, &st), ARB_PARSE);
        if (!strstr(arb_store_errmsg(f->store), cases[i].want))
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, arb_store_errmsg(f->store),
                     cases[i].want);
        assert_int_equal(st.ok + st.failed + st.already, 0);
        assert_int_equal(q(f, "SELECT count(*) FROM calls"), 0);
    }
    assert_int_equal(arb_batch_ingest(f->store, "/nonexistent/results.jsonl", NULL), ARB_IO);
}

static void ingest_stores_like_http(void **state)
{
    fixture *f = *state;
    setenv("TEST_BATCH_KEY", "sk-test-batch-1234567", 1);
    const char *text =
        OK_LINE("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "fine [[A]] sk-test-batch-1234567")
        "{\"id\":\"r-b\",\"custom_id\":\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\",\"response\":"
        "{\"status_code\":500,\"request_id\":\"q\",\"body\":{\"error\":{\"message\":\"boom\"}}},"
        "\"error\":null}\n"
        "\r\n"
        "{\"id\":\"r-c\",\"custom_id\":\"cccccccccccccccccccccccccccccccc\",\"response\":null,"
        "\"error\":{\"code\":\"batch_expired\",\"message\":\"too late\"}}\r\n";
    arb_batch_ingest_stats st;
    assert_int_equal(ingest(f, text, &st), ARB_OK);
    assert_int_equal(st.lines, 3);
    assert_int_equal(st.ok, 1);
    assert_int_equal(st.failed, 2);
    assert_int_equal(st.already, 0);
    assert_int_equal(q(f, "SELECT count(*) FROM calls WHERE key = arb_call_key('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa')"
                          " AND ok = 1 AND http_status = 200 AND attempts = 1 AND"
                          " prompt_tokens = 7 AND completion_tokens = 3 AND latency_ms IS NULL"
                          " AND content = 'fine [[A]] [REDACTED]' AND judge_name = 'j'"
                          " AND request = '{\"model\":\"m\",\"n\":0}'"),
                     1);
    assert_int_equal(q(f, "SELECT count(*) FROM calls WHERE lower(hex(key)) LIKE 'b%' AND ok = 0 AND"
                          " http_status = 500 AND error = 'HTTP 500 in the batch output'"
                          " AND raw_reply LIKE '%boom%'"),
                     1);
    assert_int_equal(q(f, "SELECT count(*) FROM calls WHERE lower(hex(key)) LIKE 'c%' AND ok = 0 AND"
                          " http_status IS NULL AND error = 'batch error batch_expired: too late'"),
                     1);
    /* the same file again: nothing changes */
    long long before = q(f, "SELECT total(id * length(coalesce(error, content)))"
                            " FROM calls");
    assert_int_equal(ingest(f, text, &st), ARB_OK);
    assert_int_equal(st.ok + st.failed, 0);
    assert_int_equal(st.already, 3);
    assert_int_equal(q(f, "SELECT total(id * length(coalesce(error, content))) FROM calls"),
                     before);
    assert_int_equal(q(f, "SELECT count(*) FROM calls"), 3);
    /* a new answer for a failed call replaces it; an answer for a stored one is skipped */
    const char *again = OK_LINE("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "[[B]]")
        "{\"id\":\"r-x\",\"custom_id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
        "\"error\":\"a plain string error\"}\n"
        "{\"id\":\"r-y\",\"custom_id\":\"cccccccccccccccccccccccccccccccc\",\"response\":"
        "{\"status_code\":200,\"body\":{\"no_choices\":true}}}\n";
    assert_int_equal(ingest(f, again, &st), ARB_OK);
    assert_int_equal(st.ok, 1);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.already, 1);
    assert_int_equal(q(f, "SELECT count(*) FROM calls WHERE lower(hex(key)) LIKE 'b%' AND ok = 1 AND content"
                          " = '[[B]]'"),
                     1);
    assert_int_equal(q(f, "SELECT count(*) FROM calls WHERE lower(hex(key)) LIKE 'c%' AND ok = 0 AND"
                          " error = 'reply has no choices' AND raw_reply LIKE '%no_choices%'"),
                     1);
    unsetenv("TEST_BATCH_KEY");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(part_names),
        cmocka_unit_test_setup_teardown(export_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(ingest_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(ingest_stores_like_http, setup, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
