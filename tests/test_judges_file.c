/*
** test_judges_file.c -- the judges file of a tournament (judges_file.c): a file with every
** field, the defaults (name = model, the published sampling settings, nulls not sent), and
** every refusal with its path:line:column: judge N: field message -- unknown and repeated
** fields, wrong types and ranges, missing url/model, entries that are not mappings, two judges
** with one name, bad top levels, YAML syntax errors -- and that a key never shows in a message.
** Run one test alone with ARB_TEST=<name>.
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

#include "internal.h"
#include "testutil.h"

typedef struct fixture {
    char dir[64];
    char path[128];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || arb_test_make_dir("judges", f->dir, sizeof f->dir)) return -1;
    snprintf(f->path, sizeof f->path, "%s/judges.yaml", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

static const char *data_path(const char *name)
{
    static char path[512];
    const char *src = getenv("ARB_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/tournament/%s", src ? src : ".", name);
    return path;
}

/* Writes text to the fixture's file and loads it; returns the status, *msg the message. */
static arb_status load_text(fixture *f, const char *text, arb_judges_file **out, char **msg)
{
    assert_int_equal(arb_test_write_file(f->path, text, strlen(text)), 0);
    return arb_judges_file_load(f->path, out, msg);
}

/* Loading text must fail with ARB_PARSE and the message "<path>:<expected>". */
static void expect_error(fixture *f, const char *text, const char *expected)
{
    arb_judges_file *jf = (arb_judges_file *)(uintptr_t)1;
    char *msg = NULL;
    assert_int_equal(load_text(f, text, &jf, &msg), ARB_PARSE);
    assert_null(jf);
    assert_non_null(msg);
    char want[1024];
    snprintf(want, sizeof want, "%s:%s", f->path, expected);
    if (strcmp(msg, want)) fail_msg("for:\n%s\ngot:  %s\nwant: %s", text, msg, want);
    arb_free(msg);
}

static void full_file_and_defaults(void **state)
{
    (void)state;
    arb_judges_file *jf = NULL;
    char *msg = NULL;
    assert_int_equal(arb_judges_file_load(data_path("judges_full.yaml"), &jf, &msg), ARB_OK);
    assert_null(msg);
    assert_int_equal(arb_judges_file_count(jf), 2);

    const arb_judge_config *a = arb_judges_file_judge(jf, 0);
    assert_string_equal(a->name, "judge-a");
    assert_string_equal(a->base_url, "http://127.0.0.1:8000/v1");
    assert_string_equal(a->model, "qwen2.5-7b-instruct");
    assert_string_equal(a->api_key_env, "ARB_TEST_KEY");
    assert_string_equal(arb_judges_file_contestant(jf, 0), "model-a");
    assert_true(a->sampling.temperature == 0.7);
    assert_true(a->sampling.top_p == 1.0);
    assert_int_equal(a->sampling.max_tokens, 256);
    assert_true(a->sampling.frequency_penalty == -0.5);
    assert_int_equal(a->sampling.has_seed, 1);
    assert_int_equal(a->sampling.seed, 42);

    /* Only url and model: the name is the model, sampling the published defaults (§2.6). */
    const arb_judge_config *b = arb_judges_file_judge(jf, 1);
    arb_sampling d = arb_sampling_default();
    assert_string_equal(b->name, "gpt-4o");
    assert_string_equal(b->base_url, "https://api.example.com/v1");
    assert_null(b->api_key_env);
    assert_null(arb_judges_file_contestant(jf, 1));
    assert_true(b->sampling.temperature == d.temperature);
    assert_true(b->sampling.top_p == d.top_p);
    assert_int_equal(b->sampling.max_tokens, d.max_tokens);
    assert_true(b->sampling.frequency_penalty == d.frequency_penalty);
    assert_int_equal(b->sampling.has_seed, 0);

    /* Out of range and NULL. */
    assert_null(arb_judges_file_judge(jf, 2));
    assert_null(arb_judges_file_contestant(jf, 2));
    assert_null(arb_judges_file_judge(NULL, 0));
    assert_int_equal(arb_judges_file_count(NULL), 0);
    arb_judges_file_destroy(jf);
    arb_judges_file_destroy(NULL);
}

static void nulls_are_not_sent(void **state)
{
    (void)state;
    arb_judges_file *jf = NULL;
    assert_int_equal(arb_judges_file_load(data_path("judges_nulls.yaml"), &jf, NULL), ARB_OK);
    const arb_judge_config *j = arb_judges_file_judge(jf, 0);
    assert_string_equal(j->name, "7");
    assert_string_equal(j->model, "3.5"); /* a number where text is expected: its text */
    assert_true(isnan(j->sampling.temperature));
    assert_true(isnan(j->sampling.top_p));
    assert_true(isnan(j->sampling.frequency_penalty));
    assert_int_equal(j->sampling.max_tokens, 0);
    assert_int_equal(j->sampling.has_seed, 0);
    arb_judges_file_destroy(jf);
}

/* Reasoning models and structured output: the fields, the defaults a reasoning model refuses
** left out unless given, and every bad value refused with its place. */
static void reasoning_and_response_format(void **state)
{
    fixture *f = *state;
    arb_judges_file *jf = NULL;
    char *msg = NULL;
    assert_int_equal(load_text(f,
                               "judges:\n"
                               "  - name: o3\n    url: http://h/v1\n    model: o3-mini\n"
                               "    reasoning_effort: medium\n    response_format: true\n"
                               "  - name: r1\n    url: http://h/v1\n    model: r1\n"
                               "    max_completion_tokens: 8000\n    temperature: 0.6\n"
                               "    max_tokens: 100\n"
                               "  - name: plain\n    url: http://h/v1\n    model: m\n"
                               "    response_format: false\n    reasoning_effort: null\n",
                               &jf, &msg),
                     ARB_OK);
    assert_null(msg);
    const arb_judge_config *o3 = arb_judges_file_judge(jf, 0);
    assert_string_equal(o3->sampling.reasoning_effort, "medium");
    assert_int_equal(o3->sampling.max_completion_tokens, 0);
    assert_int_equal(o3->response_format, 1);
    /* the defaults OpenAI's reasoning models refuse are not sent */
    assert_true(isnan(o3->sampling.temperature));
    assert_true(isnan(o3->sampling.top_p));
    assert_true(isnan(o3->sampling.frequency_penalty));
    assert_int_equal(o3->sampling.max_tokens, 0);
    const arb_judge_config *r1 = arb_judges_file_judge(jf, 1);
    assert_null(r1->sampling.reasoning_effort);
    assert_int_equal(r1->sampling.max_completion_tokens, 8000);
    assert_true(r1->sampling.temperature == 0.6); /* given: sent */
    assert_int_equal(r1->sampling.max_tokens, 100);
    assert_true(isnan(r1->sampling.top_p));
    assert_int_equal(r1->response_format, 0);
    const arb_judge_config *plain = arb_judges_file_judge(jf, 2);
    arb_sampling d = arb_sampling_default();
    assert_null(plain->sampling.reasoning_effort);
    assert_int_equal(plain->response_format, 0);
    assert_true(plain->sampling.temperature == d.temperature); /* not a reasoning model */
    assert_int_equal(plain->sampling.max_tokens, d.max_tokens);
    arb_judges_file_destroy(jf);

    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    reasoning_effort: hard\n",
                 "4:23: judge 1: field \"reasoning_effort\": expected low, medium or high (also "
                 "none, minimal, xhigh; null: not sent), got string \"hard\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    reasoning_effort: 2\n",
                 "4:23: judge 1: field \"reasoning_effort\": expected low, medium or high (also "
                 "none, minimal, xhigh; null: not sent), got number \"2\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    max_completion_tokens: 0\n",
                 "4:28: judge 1: field \"max_completion_tokens\": expected a whole number from 1 "
                 "to 10000000 (or null: not sent), got number \"0\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    response_format: yes\n",
                 "4:22: judge 1: field \"response_format\": expected true or false, got string "
                 "\"yes\"");
}

/* logprobs / top_logprobs (README "Logprobs"): off unless set; top_logprobs 0..20 (OpenAI's
** limit) and only with logprobs: true. */
static void logprobs_fields(void **state)
{
    fixture *f = *state;
    arb_judges_file *jf = NULL;
    assert_int_equal(load_text(f,
                               "judges:\n"
                               "  - {name: a, url: http://h/v1, model: m, logprobs: true, top_logprobs: 20}\n"
                               "  - {name: b, url: http://h/v1, model: m, logprobs: true}\n"
                               "  - {name: c, url: http://h/v1, model: m}\n",
                               &jf, NULL),
                     ARB_OK);
    assert_int_equal(arb_judges_file_judge(jf, 0)->logprobs, 1);
    assert_int_equal(arb_judges_file_judge(jf, 0)->top_logprobs, 20);
    assert_int_equal(arb_judges_file_judge(jf, 1)->logprobs, 1);
    assert_int_equal(arb_judges_file_judge(jf, 1)->top_logprobs, 0);
    assert_int_equal(arb_judges_file_judge(jf, 2)->logprobs, 0);
    arb_judges_file_destroy(jf);
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    logprobs: true\n"
                    "    top_logprobs: 21\n",
                 "5:19: judge 1: field \"top_logprobs\": expected a whole number from 0 to 20 "
                 "(or null: not sent), got number \"21\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    top_logprobs: 5\n",
                 "4:19: judge 1: field \"top_logprobs\": needs \"logprobs: true\" in the same "
                 "judge");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    logprobs: 1\n",
                 "4:15: judge 1: field \"logprobs\": expected true or false, got number \"1\"");
}

static void yaml_numbers(void **state)
{
    fixture *f = *state;
    arb_judges_file *jf = NULL;
    assert_int_equal(load_text(f, "judges:\n- url: http://h/v1\n  model: m\n  temperature: 1e-1\n"
                                  "  max_tokens: 0x10\n  seed: 0o17\n  top_p: .5\n"
                                  "  frequency_penalty: +1\n", &jf, NULL), ARB_OK);
    const arb_judge_config *j = arb_judges_file_judge(jf, 0);
    assert_true(j->sampling.temperature == 0.1);
    assert_int_equal(j->sampling.max_tokens, 16);
    assert_int_equal(j->sampling.seed, 15);
    assert_true(j->sampling.top_p == 0.5);
    assert_true(j->sampling.frequency_penalty == 1.0);
    arb_judges_file_destroy(jf);
    /* Leading zeros are decimal in YAML 1.2. */
    assert_int_equal(load_text(f, "judges:\n- {url: http://h/v1, model: m, max_tokens: 017}\n",
                               &jf, NULL), ARB_OK);
    assert_int_equal(arb_judges_file_judge(jf, 0)->sampling.max_tokens, 17);
    arb_judges_file_destroy(jf);
}

static void field_errors(void **state)
{
    fixture *f = *state;
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    colour: red\n",
                 "4:5: judge 1: unknown field \"colour\"; expected one of name, url, model, "
                 "api_key_env, contestant, temperature, top_p, max_tokens, frequency_penalty, "
                 "seed, family, price, reasoning_effort, "
                 "max_completion_tokens, response_format, logprobs, top_logprobs, "
                 "endpoints, max_in_flight");
    expect_error(f, "judges:\n  - url: [http://h/v1]\n    model: m\n",
                 "2:10: judge 1: field \"url\": expected a non-empty string, got a list");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    model: n\n",
                 "4:5: judge 1: field \"model\": given twice (first at line 3)");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n  - model: m2\n    name: x\n",
                 "4:5: judge 2: field \"url\": missing; expected the endpoint's base URL, e.g. "
                 "http://127.0.0.1:8000/v1 (or endpoints: a list of them)");
    expect_error(f, "judges:\n  - url: http://h/v1\n",
                 "2:5: judge 1: field \"model\": missing; expected the model name the endpoint "
                 "serves");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n  - just-a-name\n",
                 "4:5: judge 2: expected a mapping of fields (name, url, model, api_key_env, "
                 "contestant, temperature, top_p, max_tokens, frequency_penalty, seed, family, price, "
                 "reasoning_effort, max_completion_tokens, response_format, logprobs, top_logprobs, "
                 "endpoints, max_in_flight), got "
                 "string \"just-a-name\"");
    expect_error(f, "judges:\n  - url: ftp://h/\n    model: m\n",
                 "2:10: judge 1: field \"url\": expected an http:// or https:// URL with a host "
                 "and a port from 1 to 65535; the URL has an unsupported scheme; expected "
                 "http:// or https://");
    /* Found when the file is read (they used to fail only at the first request). */
    expect_error(f, "judges:\n  - model: m\n    url: 127.0.0.1:8000/v1\n",
                 "3:10: judge 1: field \"url\": expected an http:// or https:// URL with a host "
                 "and a port from 1 to 65535; the URL has no scheme; expected "
                 "http://host[:port]/path or https://...");
    expect_error(f, "judges:\n  - {model: m, url: 'http://h/v1'}\n"
                    "  - {model: m2, url: 'http://h:70000/v1'}\n",
                 "3:22: judge 2: field \"url\": expected an http:// or https:// URL with a host "
                 "and a port from 1 to 65535; the URL has a bad port; expected a number from 1 "
                 "to 65535");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: \"\"\n",
                 "3:12: judge 1: field \"model\": expected a non-empty string, got string \"\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    name: null\n",
                 "4:11: judge 1: field \"name\": expected a non-empty string, got null");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    contestant: true\n",
                 "4:17: judge 1: field \"contestant\": expected a non-empty string, got boolean "
                 "\"true\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    temperature: \"0.5\"\n",
                 "4:18: judge 1: field \"temperature\": expected a number from 0 to 10 (or null: "
                 "not sent), got string \"0.5\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    temperature: 11\n",
                 "4:18: judge 1: field \"temperature\": expected a number from 0 to 10 (or null: "
                 "not sent), got number \"11\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    top_p: .nan\n",
                 "4:12: judge 1: field \"top_p\": expected a number from 0 to 1 (or null: not "
                 "sent), got number \".nan\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    max_tokens: 1.5\n",
                 "4:17: judge 1: field \"max_tokens\": expected a whole number from 1 to 10000000 "
                 "(or null: not sent), got number \"1.5\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    seed: -1\n",
                 "4:11: judge 1: field \"seed\": expected a whole number from 0 to 2147483647 (or "
                 "null: not sent), got number \"-1\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    frequency_penalty: {a: 1}\n",
                 "4:24: judge 1: field \"frequency_penalty\": expected a number from -2 to 2 (or "
                 "null: not sent), got a mapping");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    ? [a]\n    : 1\n",
                 "4:7: judge 1: expected a field name, got a list");
}

/* family: per judge and the families: map of contestants (METHODS §5), and their refusals. */
static void families(void **state)
{
    fixture *f = *state;
    arb_judges_file *jf = NULL;
    char *msg = NULL;
    assert_int_equal(load_text(f, "families:\n  gpt-4o: gpt\n  7: qwen\n"
                                  "judges:\n  - {name: a, url: http://h/v1, model: m, family: gpt}\n"
                                  "  - {name: b, url: http://h/v1, model: n}\n",
                               &jf, &msg),
                     ARB_OK);
    assert_null(msg);
    assert_string_equal(arb_judges_file_judge(jf, 0)->family, "gpt");
    assert_null(arb_judges_file_judge(jf, 1)->family);
    assert_ptr_equal(arb_judges_file_judge(jf, 0)->judges_file, jf);
    assert_string_equal(arb_judges_file_path(jf), f->path);
    assert_int_equal(arb_judges_file_family_count(jf), 2);
    const char *model = NULL;
    assert_string_equal(arb_judges_file_family(jf, 0, &model), "gpt");
    assert_string_equal(model, "gpt-4o");
    assert_string_equal(arb_judges_file_family(jf, 1, &model), "qwen");
    assert_string_equal(model, "7"); /* a model may be called 7 */
    assert_null(arb_judges_file_family(jf, 2, &model));
    assert_null(model);
    arb_judges_file_destroy(jf);
    assert_int_equal(arb_judges_file_family_count(NULL), 0);
    assert_null(arb_judges_file_path(NULL));

    expect_error(f, "judges:\n  - {url: http://h/v1, model: m, family: \"\"}\n",
                 "2:42: judge 1: field \"family\": expected a non-empty string, got string \"\"");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m, family: [a]}\n",
                 "2:42: judge 1: field \"family\": expected a non-empty string, got a list");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m, family: a, family: b}\n",
                 "2:45: judge 1: field \"family\": given twice (first at line 2)");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m}\nfamilies: {}\n",
                 "3:11: field \"families\": expected a mapping of contestant model names to "
                 "families (e.g. gpt-4o: gpt), got an empty mapping");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m}\nfamilies: [gpt]\n",
                 "3:11: field \"families\": expected a mapping of contestant model names to "
                 "families (e.g. gpt-4o: gpt), got a list");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m}\nfamilies:\n  a: gpt\n  b: \"\"\n",
                 "5:6: field \"families\": model \"b\": expected a non-empty string (its family), "
                 "got string \"\"");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m}\nfamilies:\n  a: gpt\n  b: null\n",
                 "5:6: field \"families\": model \"b\": expected a non-empty string (its family), "
                 "got null");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m}\nfamilies:\n  a: gpt\n  a: qwen\n",
                 "5:3: field \"families\": model \"a\" given twice (first at line 4)");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m}\nfamilies:\n  ~: gpt\n",
                 "4:3: field \"families\": expected a contestant model name, got null");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m}\nfamilies: {a: x}\n"
                    "families: {b: y}\n",
                 "4:1: field \"families\": given twice (first at line 3)");
    expect_error(f, "families: {a: x}\n",
                 "1:1: field \"judges\": missing; expected a list of judges");
}

static void duplicate_names(void **state)
{
    fixture *f = *state;
    expect_error(f, "judges:\n  - {name: j, url: http://h/v1, model: m}\n"
                    "  - {name: j, url: http://h/v1, model: n}\n",
                 "3:12: judge 2: field \"name\": expected a name of its own, got \"j\", the name "
                 "of judge 1");
    /* The name defaults to the model: two judges of one model need names. */
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m, temperature: 0}\n"
                    "  - {url: http://h/v1, model: m, temperature: 1}\n",
                 "3:5: judge 2: field \"name\": expected a name of its own, got \"m\", the name "
                 "of judge 1 (the name defaults to the model: add a name)");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m}\n  - {name: m, url: http://h/v1, "
                    "model: n}\n",
                 "3:12: judge 2: field \"name\": expected a name of its own, got \"m\", the name "
                 "of judge 1");
}

static void top_level_errors(void **state)
{
    fixture *f = *state;
    expect_error(f, "", " no judges (expected \"judges:\" with a list of judges)");
    expect_error(f, "# only a comment\n", " no judges (expected \"judges:\" with a list of judges)");
    expect_error(f, "- url: http://h/v1\n  model: m\n",
                 "1:1: expected a mapping with a \"judges\" list, got a list");
    expect_error(f, "judge:\n  - {url: http://h/v1, model: m}\n",
                 "1:1: unknown top-level field \"judge\"; expected \"judges\" or \"families\"");
    expect_error(f, "judges: []\n", "1:9: field \"judges\": expected a list of at least one "
                                    "judge, got an empty list");
    expect_error(f, "judges:\n", "1:8: field \"judges\": expected a list of at least one judge, "
                                 "got null");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m}\njudges:\n  - {url: http://h/v1, "
                    "model: n}\n",
                 "3:1: field \"judges\": given twice (first at line 1)");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: m}\n---\njudges: []\n",
                 "3:1: a second YAML document; a judges file holds one");
    expect_error(f, "judges:\n  - url: http://h/v1\n   model: m\n",
                 "3:4: YAML: did not find expected '-' indicator while parsing a block "
                 "collection");
    expect_error(f, "judges:\n  - {url: http://h/v1, model: \"m}\n",
                 "3:1: YAML: found unexpected end of stream while scanning a quoted scalar");
}

/* A key pasted where its variable's name belongs, or under a field of its own, never shows. */
static void secrets_stay_out_of_messages(void **state)
{
    fixture *f = *state;
    arb_judges_file *jf = NULL;
    char *msg = NULL;
    assert_int_equal(load_text(f, "judges:\n  - url: http://h/v1\n    model: m\n"
                                  "    api_key_env: sk-proj-SECRET123\n", &jf, &msg), ARB_PARSE);
    assert_null(strstr(msg, "SECRET"));
    assert_non_null(strstr(msg, ":4:18: judge 1: field \"api_key_env\": expected the name of an "
                                "environment variable"));
    arb_free(msg);
    assert_int_equal(load_text(f, "judges:\n  - url: http://user:SECRET@h/v1\n    model: m\n"
                                  "    api_key: sk-SECRET\n", &jf, &msg), ARB_PARSE);
    assert_null(strstr(msg, "SECRET"));
    assert_non_null(strstr(msg, "unknown field \"api_key\""));
    assert_non_null(strstr(msg, "never holds a key"));
    arb_free(msg);
    assert_int_equal(load_text(f, "judges:\n  - url: {u: SECRET}\n    model: m\n", &jf, &msg),
                     ARB_PARSE);
    assert_null(strstr(msg, "SECRET"));
    arb_free(msg);
    assert_int_equal(load_text(f, "judges:\n  - url: 'SECRET'\n    model: m\n", &jf, &msg),
                     ARB_PARSE);
    assert_null(strstr(msg, "SECRET"));
    arb_free(msg);
    assert_int_equal(load_text(f, "judges:\n  - url: 'http://u:SECRET@h:0/v1?key=SECRET'\n"
                                  "    model: m\n", &jf, &msg), ARB_PARSE);
    assert_null(strstr(msg, "SECRET"));
    assert_non_null(strstr(msg, "has a bad port"));
    arb_free(msg);
}

/* A field name from the file is shown cut and without control characters. */
static void names_are_made_safe(void **state)
{
    fixture *f = *state;
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    \"\\e[2Jx\": 1\n",
                 "4:5: judge 1: unknown field \"?[2Jx\"; expected one of name, url, model, "
                 "api_key_env, contestant, temperature, top_p, max_tokens, frequency_penalty, "
                 "seed, family, price, reasoning_effort, "
                 "max_completion_tokens, response_format, logprobs, top_logprobs, "
                 "endpoints, max_in_flight");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    "
                    "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij: 1\n",
                 "4:5: judge 1: unknown field \"abcdefghijabcdefghijabcdefghijabcdefghij\"...; "
                 "expected one of name, url, model, api_key_env, contestant, temperature, top_p, "
                 "max_tokens, frequency_penalty, seed, family, price, reasoning_effort, "
                 "max_completion_tokens, response_format, logprobs, top_logprobs, "
                 "endpoints, max_in_flight");
}

static void bad_arguments_and_missing_file(void **state)
{
    fixture *f = *state;
    arb_judges_file *jf = NULL;
    char *msg = NULL;
    assert_int_equal(arb_judges_file_load(NULL, &jf, &msg), ARB_INVALID);
    arb_free(msg);
    assert_int_equal(arb_judges_file_load(f->path, NULL, NULL), ARB_INVALID);
    char missing[160];
    snprintf(missing, sizeof missing, "%s/none.yaml", f->dir);
    msg = NULL;
    assert_int_equal(arb_judges_file_load(missing, &jf, &msg), ARB_IO);
    assert_null(jf);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "none.yaml: cannot open"));
    arb_free(msg);
    /* Without an errmsg pointer an error is still reported by status alone. */
    assert_int_equal(load_text(f, "judges: []\n", &jf, NULL), ARB_PARSE);
    assert_null(jf);
}

/* price: USD per million tokens; cached optional (NAN: billed at the input price); null or
** absent: no price (known 0, costs "unknown"). */
static void prices(void **state)
{
    fixture *f = *state;
    arb_judges_file *jf = NULL;
    assert_int_equal(load_text(f, "judges:\n"
                                  "- {url: http://h/v1, model: a, price: {input_per_mtok: 1.10, "
                                  "output_per_mtok: 4.4, cached_input_per_mtok: 0.55}}\n"
                                  "- {url: http://h/v1, model: b, price: {input_per_mtok: 0, "
                                  "output_per_mtok: 0}}\n"
                                  "- {url: http://h/v1, model: c}\n"
                                  "- {url: http://h/v1, model: d, price: null}\n"
                                  "- {url: http://h/v1, model: e, price: {input_per_mtok: 2, "
                                  "output_per_mtok: 8, batch_discount: 0.5}}\n",
                               &jf, NULL), ARB_OK);
    const arb_judge_config *a = arb_judges_file_judge(jf, 0);
    assert_int_equal(a->price.known, 1);
    assert_true(a->price.input_per_mtok == 1.10);
    assert_true(a->price.output_per_mtok == 4.4);
    assert_true(a->price.cached_input_per_mtok == 0.55);
    const arb_judge_config *b = arb_judges_file_judge(jf, 1);
    assert_int_equal(b->price.known, 1); /* a free local model is known to cost 0 */
    assert_true(b->price.input_per_mtok == 0 && b->price.output_per_mtok == 0);
    assert_true(isnan(b->price.cached_input_per_mtok));
    assert_int_equal(arb_judges_file_judge(jf, 2)->price.known, 0);
    assert_int_equal(arb_judges_file_judge(jf, 3)->price.known, 0);
    assert_true(a->price.batch_discount == 0); /* absent: the same price through a batch */
    const arb_judge_config *e = arb_judges_file_judge(jf, 4);
    assert_int_equal(e->price.known, 1);
    assert_true(e->price.batch_discount == 0.5);
    /* OpenAI's batch price: half of every price, the cached one too */
    arb_price bp = arb__price_through_batch(&e->price);
    assert_true(bp.input_per_mtok == 1 && bp.output_per_mtok == 4 && bp.batch_discount == 0);
    assert_true(isnan(bp.cached_input_per_mtok));
    bp = arb__price_through_batch(&a->price);
    assert_true(bp.input_per_mtok == 1.10 && bp.cached_input_per_mtok == 0.55);
    arb_price c = {1, 2, 8, 1, 0.25};
    bp = arb__price_through_batch(&c);
    assert_true(bp.input_per_mtok == 1.5 && bp.output_per_mtok == 6 &&
                bp.cached_input_per_mtok == 0.75);
    assert_true(fabs(arb__judge_call_cost(&bp, 1000000, 1000000, 0) - 7.5) < 1e-12);
    arb_judges_file_destroy(jf);
}

static void price_errors(void **state)
{
    fixture *f = *state;
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    price: 3\n",
                 "4:12: judge 1: field \"price\": expected a mapping {input_per_mtok: X, "
                 "output_per_mtok: Y} in USD per million tokens (cached_input_per_mtok, "
                 "batch_discount optional), got number \"3\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    price: {input_per_mtok: 1}\n",
                 "4:12: judge 1: field \"price.output_per_mtok\": missing; expected the price in "
                 "USD per million tokens");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n"
                    "    price: {input_per_mtok: -1, output_per_mtok: 2}\n",
                 "4:29: judge 1: field \"price.input_per_mtok\": expected a number from 0 to "
                 "1e+06 (USD per million tokens), got number \"-1\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n"
                    "    price: {input_per_mtok: 1, output_per_mtok: \"2\"}\n",
                 "4:49: judge 1: field \"price.output_per_mtok\": expected a number from 0 to "
                 "1e+06 (USD per million tokens), got string \"2\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n"
                    "    price: {input_per_mtok: 1, output_per_mtok: null}\n",
                 "4:49: judge 1: field \"price.output_per_mtok\": expected a number from 0 to "
                 "1e+06 (USD per million tokens), got null");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n"
                    "    price: {input_per_mtok: 1, output_per_mtok: 2, per_request: 1}\n",
                 "4:52: judge 1: field \"price\": unknown field \"per_request\"; expected "
                 "input_per_mtok, output_per_mtok, cached_input_per_mtok, batch_discount");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n"
                    "    price: {input_per_mtok: 1, output_per_mtok: 2, batch_discount: 50}\n",
                 "4:68: judge 1: field \"price.batch_discount\": expected a number from 0 to 1 "
                 "(a share of the price: 0.5 = half price), got number \"50\"");
    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n"
                    "    price: {input_per_mtok: 1, output_per_mtok: 2, input_per_mtok: 3}\n",
                 "4:52: judge 1: field \"price.input_per_mtok\": given twice");
}

/* endpoints: instead of url, several replicas; max_in_flight per endpoint. Exactly one of url
** and endpoints; an empty list, a bad, non-string or repeated entry are refused by position,
** never echoing a URL (it may hold credentials). */
static void endpoints_and_max_in_flight(void **state)
{
    fixture *f = *state;
    arb_judges_file *jf = NULL;
    char *msg = NULL;
    assert_int_equal(load_text(f,
                               "judges:\n"
                               "  - name: q\n    model: qwen\n"
                               "    endpoints: [http://10.0.0.5:8000/v1, 'http://10.0.0.6:8000/v1']\n"
                               "    max_in_flight: 256\n"
                               "  - name: one\n    model: m\n    url: http://h/v1\n",
                               &jf, &msg),
                     ARB_OK);
    assert_null(msg);
    const arb_judge_config *q = arb_judges_file_judge(jf, 0);
    assert_int_equal(q->n_endpoints, 2);
    assert_string_equal(q->endpoints[0], "http://10.0.0.5:8000/v1");
    assert_string_equal(q->endpoints[1], "http://10.0.0.6:8000/v1");
    assert_string_equal(q->base_url, "http://10.0.0.5:8000/v1"); /* the first, for the judges table */
    assert_int_equal(q->max_in_flight, 256);
    const arb_judge_config *one = arb_judges_file_judge(jf, 1);
    assert_int_equal(one->n_endpoints, 0);
    assert_null(one->endpoints);
    assert_int_equal(one->max_in_flight, 0); /* default: only --jobs bounds it */
    arb_judges_file_destroy(jf);

    expect_error(f, "judges:\n  - url: http://h/v1\n    model: m\n    endpoints: [http://g/v1]\n",
                 "4:5: judge 1: field \"endpoints\": given with url (line 2); expected one of the "
                 "two: url for one endpoint, endpoints for several");
    expect_error(f, "judges:\n  - model: m\n    endpoints: []\n",
                 "3:16: judge 1: field \"endpoints\": expected a non-empty list of base URLs, e.g. "
                 "[http://10.0.0.5:8000/v1, http://10.0.0.6:8000/v1], got an empty list");
    expect_error(f, "judges:\n  - model: m\n    endpoints: http://h/v1\n",
                 "3:16: judge 1: field \"endpoints\": expected a non-empty list of base URLs, e.g. "
                 "[http://10.0.0.5:8000/v1, http://10.0.0.6:8000/v1], got a string");
    expect_error(f, "judges:\n  - model: m\n    endpoints: [http://h/v1, 'ftp://u:SECRET@h/']\n",
                 "3:30: judge 1: field \"endpoints\": entry 2: expected an http:// or https:// URL "
                 "with a host and a port from 1 to 65535; the URL has an unsupported scheme; "
                 "expected http:// or https://");
    expect_error(f, "judges:\n  - model: m\n    endpoints: [http://h/v1, 7]\n",
                 "3:30: judge 1: field \"endpoints\": entry 2: expected a base URL string, got a "
                 "number");
    expect_error(f, "judges:\n  - model: m\n    endpoints: [http://h/v1, http://g/v1, http://h/v1]\n",
                 "3:43: judge 1: field \"endpoints\": entry 3: the same URL as entry 1; expected "
                 "distinct endpoints");
    expect_error(f, "judges:\n  - model: m\n    endpoints: [http://h/v1]\n    max_in_flight: 0\n",
                 "4:20: judge 1: field \"max_in_flight\": expected a whole number from 1 to 1000000 "
                 "(or null: not sent), got number \"0\"");
    /* A URL with credentials in the list is never echoed. */
    assert_int_equal(load_text(f, "judges:\n  - model: m\n    endpoints: ['http://u:SECRET@h:0/v1']\n",
                               &jf, &msg),
                     ARB_PARSE);
    assert_null(strstr(msg, "SECRET"));
    assert_non_null(strstr(msg, "entry 1: "));
    arb_free(msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(full_file_and_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(nulls_are_not_sent, setup, teardown),
        cmocka_unit_test_setup_teardown(yaml_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(logprobs_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(reasoning_and_response_format, setup, teardown),
        cmocka_unit_test_setup_teardown(field_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(families, setup, teardown),
        cmocka_unit_test_setup_teardown(duplicate_names, setup, teardown),
        cmocka_unit_test_setup_teardown(top_level_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(secrets_stay_out_of_messages, setup, teardown),
        cmocka_unit_test_setup_teardown(names_are_made_safe, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_arguments_and_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(prices, setup, teardown),
        cmocka_unit_test_setup_teardown(price_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(endpoints_and_max_in_flight, setup, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
