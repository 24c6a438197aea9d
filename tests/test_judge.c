/*
** test_judge.c -- the chat-completions dialect: defaults, canonical request bodies, call keys,
** reply parsing (good, odd and broken replies), the Authorization header, URL joining, and a
** round trip through http.c to the local test server.
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

#define ENV_KEY "ARB_TEST_JUDGE_KEY"

static arb_judge_config judge_m(void)
{
    arb_judge_config j;
    memset(&j, 0, sizeof j);
    j.model = "m";
    j.base_url = "http://127.0.0.1:1/v1";
    j.sampling = arb_sampling_default();
    return j;
}

static void parse(const char *body, arb__judge_reply *r)
{
    assert_int_equal(arb__judge_parse_reply(body, body ? strlen(body) : 0, r), 0);
}

/* ---- defaults ------------------------------------------------------------------------------- */

static void test_defaults(void **state)
{
    arb_client_params p = arb_client_default_params();
    assert_int_equal(p.jobs, 32);
    assert_int_equal(p.connect_timeout_ms, 10000);
    assert_int_equal(p.total_timeout_ms, 300000);
    assert_int_equal(p.max_retries, 6);
    assert_int_equal(p.backoff_base_ms, 500);
    assert_int_equal(p.backoff_max_ms, 60000);
    assert_int_equal(p.max_reply_bytes, 16u << 20);
    assert_int_equal(p.max_retry_wait_ms, 60000);
    arb_sampling s = arb_sampling_default();
    assert_int_equal(s.max_tokens, 1024);
    assert_true(s.temperature == 0.0);
    assert_true(s.top_p == 0.1);
    assert_true(s.frequency_penalty == 1.0);
    assert_int_equal(s.has_seed, 0);
}

/* ---- request bodies and keys -------------------------------------------------------------- */

static void test_body_minimal(void **state)
{
    arb_judge_config j = judge_m();
    j.sampling.max_tokens = 0;
    j.sampling.temperature = NAN;
    j.sampling.top_p = NAN;
    j.sampling.frequency_penalty = INFINITY; /* not representable in JSON: not sent */
    char *b = arb__judge_request_body(&j, NULL, "", 0, NULL);
    assert_string_equal(b, "{\"messages\":[{\"content\":\"\",\"role\":\"user\"}],\"model\":\"m\"}");
    free(b);
}

static void test_body_canonical_with_defaults(void **state)
{
    arb_judge_config j = judge_m();
    char *b = arb__judge_request_body(&j, "sys", "hi \"you\"", 0, NULL);
    /* Keys sorted, compact, 0 printed as 0.0 and 0.1 as 0.1. */
    assert_string_equal(b, "{\"frequency_penalty\":1.0,\"max_tokens\":1024,\"messages\":["
                           "{\"content\":\"sys\",\"role\":\"system\"},"
                           "{\"content\":\"hi \\\"you\\\"\",\"role\":\"user\"}],"
                           "\"model\":\"m\",\"temperature\":0.0,\"top_p\":0.1}");
    /* Same inputs, same bytes. */
    char *again = arb__judge_request_body(&j, "sys", "hi \"you\"", 0, NULL);
    assert_string_equal(b, again);
    /* rep does not change the body without a seed (it changes the key). */
    char *rep1 = arb__judge_request_body(&j, "sys", "hi \"you\"", 1, NULL);
    assert_string_equal(b, rep1);
    free(b);
    free(again);
    free(rep1);
}

static void test_body_seed_plus_rep(void **state)
{
    arb_judge_config j = judge_m();
    j.sampling.has_seed = 1;
    j.sampling.seed = 42;
    j.sampling.temperature = 0.7;
    char *b0 = arb__judge_request_body(&j, NULL, "q", 0, NULL);
    char *b3 = arb__judge_request_body(&j, NULL, "q", 3, NULL);
    assert_non_null(strstr(b0, "\"seed\":42,"));
    assert_non_null(strstr(b3, "\"seed\":45,"));
    assert_non_null(strstr(b0, "\"temperature\":0.7,"));
    free(b0);
    free(b3);
}

static void test_body_invalid_utf8_is_replaced(void **state)
{
    arb_judge_config j = judge_m();
    j.sampling.max_tokens = 0;
    j.sampling.temperature = j.sampling.top_p = j.sampling.frequency_penalty = NAN;
    char *b = arb__judge_request_body(&j, NULL, "a\xff" "b\xc3\xa9", 0, NULL);
    assert_non_null(b);
    assert_string_equal(b, "{\"messages\":[{\"content\":\"a\xEF\xBF\xBD" "b\xc3\xa9\","
                           "\"role\":\"user\"}],\"model\":\"m\"}");
    free(b);
}

/* The prompt length a builder must tell for messages system (may be NULL) and user sent to a
** judge whose model is model: their code points, or -1 where the count is left to the store
** (text or model not valid UTF-8, or a control character written as a \u escape). */
static long long expected_prompt_chars(const char *model, const char *system, const char *user)
{
    const char *texts[2] = {system, user ? user : ""};
    if (!arb__utf8_valid(model, strlen(model), NULL)) return -1;
    long long n = 0;
    for (int i = 0; i < 2; i++) {
        if (!texts[i]) continue;
        if (!arb__utf8_valid(texts[i], strlen(texts[i]), NULL)) return -1;
        for (const unsigned char *p = (const unsigned char *)texts[i]; *p; p++) {
            if (*p < 0x20 && !strchr("\b\f\n\r\t", *p)) return -1;
            n += (*p & 0xc0) != 0x80;
        }
    }
    return n;
}

/* The body's prompt length as the builder told it must be the one expected (test_store_requests
** checks it against what the store counts in the body). */
static void check_prompt_chars(const char *body, long long told, long long expected)
{
    assert_non_null(body);
    assert_int_equal(told, expected);
}

/* The fast body writer must produce exactly the bytes of the jansson reference, or call keys
** would depend on which path built them. */
static void test_body_fast_writer_matches_reference(void **state)
{
    (void)state;
    char controls[40];
    for (int i = 1; i < 32; i++) controls[i - 1] = (char)i;
    controls[31] = 0x7f;
    controls[32] = '\0';
    const char *texts[] = {"", "plain", "quote \" back\\slash / slash", controls,
                           "caf\xc3\xa9 \xe2\x80\xa8 line sep \xf0\x9f\x98\x8a emoji",
                           "[ANSWER 1 START]\nx\n[ANSWER 1 END]\t{braces}"};
    const double reals[] = {0.0, 0.1, 0.7, 1.0, -2.0, 1e-5, 1.5e300, 123456789.125, NAN};
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++)
        for (size_t r = 0; r < sizeof reals / sizeof reals[0]; r++) {
            arb_judge_config j = {.model = texts[(t + 1) % 6], .sampling = arb_sampling_default()};
            j.sampling.temperature = reals[r];
            j.sampling.top_p = reals[(r + 3) % 9];
            j.sampling.frequency_penalty = reals[(r + 5) % 9];
            j.sampling.max_tokens = (int)r - 2;
            j.sampling.has_seed = (int)(r % 2);
            j.sampling.seed = (long long)r * 1000;
            const char *system = t % 2 ? texts[(t + 2) % 6] : NULL;
            char *fast = arb__judge_request_body(&j, system, texts[t], (int)r, NULL);
            char *ref = arb__judge_request_body_reference(&j, system, texts[t], (int)r, NULL);
            long long chars = 0;
            char *counted = arb__judge_request_body_counted(&j, system, texts[t], (int)r, NULL,
                                                            &chars);
            assert_non_null(fast);
            assert_non_null(ref);
            assert_string_equal(fast, ref);
            assert_string_equal(counted, ref);
            check_prompt_chars(counted, chars, expected_prompt_chars(j.model, system, texts[t]));
            free(counted);
            free(fast);
            free(ref);
        }
    /* One special byte at every offset of a longer text, across the 8-byte word boundaries
    ** the fast writer skips by. */
    const char specials[] = {'"', '\\', '\n', 0x1f, 0x7f, 0x20, '!', '#', 'A'};
    arb_judge_config j = {.model = "m", .sampling = arb_sampling_default()};
    for (size_t k = 0; k < sizeof specials; k++)
        for (int pos = 0; pos < 40; pos++) {
            char text[41];
            memset(text, 'x', 40);
            text[40] = '\0';
            text[pos] = specials[k];
            char *fast = arb__judge_request_body(&j, text + (pos % 3), text, 0, NULL);
            char *ref = arb__judge_request_body_reference(&j, text + (pos % 3), text, 0, NULL);
            assert_string_equal(fast, ref);
            free(fast);
            free(ref);
        }
}

/* Loads template text from a temporary file (caller destroys). */
static arb_template *template_from_text(const char *text)
{
    char path[] = "/tmp/arb_test_judge_tpl_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    fwrite(text, 1, strlen(text), f);
    fclose(f);
    arb_template *t = NULL;
    char *err = NULL;
    if (arb_template_load(path, &t, &err) != ARB_OK) fail_msg("template: %s", err ? err : "?");
    unlink(path);
    return t;
}

/* The body written from the template's escaped literals must be byte for byte the body of the
** rendered prompt (and so jansson's), whatever the template and the texts hold: quotes,
** backslashes, controls, CRLF lines, literal braces, Unicode line separators, placeholders side
** by side or at the ends, NULL and empty values, invalid UTF-8 (repaired the reference way,
** also when a sequence is split across two values), every judge parameter. */
static void test_body_from_template_matches_render(void **state)
{
    (void)state;
    const char *templates[] = {
        "=== system ===\nBe \"strict\" \\ fair.\tTab\x01\x1f\x7f {{literal}}\n=== user ===\r\n"
        "[QUESTION START]\r\n{question}\r\n[QUESTION END]\r\n{answer1}{answer2}\n"
        "\xe2\x80\xa8 caf\xc3\xa9 \xf0\x9f\x98\x8a {option_list} / {option_letters}\n{option_rules}\n"
        "[REFERENCE START]{reference}[REFERENCE END] {language}",
        "{question}",
        "{answer1}\"{answer2}\"",
        "no placeholders at all \"\\\" \x02",
        "=== user ===\n\"{{\"{question}\"}}\"\n=== system ===\n{language}{option_letters}",
    };
    char controls[34];
    for (int i = 1; i < 32; i++) controls[i - 1] = (char)i;
    controls[31] = 0x7f;
    controls[32] = '"';
    controls[33] = '\0';
    char longer[200];
    for (int i = 0; i < 199; i++) longer[i] = "ab\"\\\n\x1f\xc3\xa9xyz{}"[i % 14];
    longer[199] = '\0';
    longer[198] = 'z'; /* (the last char must not cut a sequence) */
    const char *texts[] = {NULL, "", "plain", "quote \" back\\slash / slash", controls,
                           "caf\xc3\xa9 \xe2\x80\xa8 line sep \xf0\x9f\x98\x8a emoji",
                           "bad \xff byte", "ends cut \xc3", "\xa9 starts cut", longer};
    enum { N_TEXTS = sizeof texts / sizeof texts[0] };
    const char *schema = "{\"name\":\"v\",\"schema\":{\"type\":\"object\"},\"strict\":true}";
    arb__buf scratch;
    arb__buf_init(&scratch, 0);
    size_t compared = 0;
    for (size_t t = 0; t < sizeof templates / sizeof templates[0]; t++) {
        arb_template *tpl = template_from_text(templates[t]);
        for (size_t k = 0; k < N_TEXTS * N_TEXTS; k++) {
            arb_judge_config j = judge_m();
            if (k % 3 == 1) {
                j.sampling.has_seed = 1;
                j.sampling.seed = 42;
                j.logprobs = 1;
                j.top_logprobs = 5;
                j.response_format = 1;
                j.sampling.reasoning_effort = "low";
                j.sampling.max_completion_tokens = 77;
            }
            if (k % 7 == 3) j.model = "model \xe9 latin-1";
            arb_prompt_vars v = {.options = 2 + (int)(k % 3),
                                 .question = texts[k % N_TEXTS],
                                 .answer1 = texts[(k / N_TEXTS) % N_TEXTS],
                                 .answer2 = texts[(k + 8) % N_TEXTS],
                                 .reference = texts[(k + 3) % N_TEXTS],
                                 .language = texts[(k / 3) % N_TEXTS]};
            if (k == 5) v.answer1 = "ends cut \xc3", v.answer2 = "\xa9 starts cut";
            const char *rf = k % 2 ? schema : NULL;
            char *system = NULL, *user = NULL;
            assert_int_equal(arb_template_render(tpl, &v, &system, &user), ARB_OK);
            char *want = arb__judge_request_body(&j, system, user, (int)k, rf);
            char *ref = arb__judge_request_body_reference(&j, system, user, (int)k, rf);
            size_t len = 0;
            long long chars = 0;
            char *got = arb__judge_request_body_template(&j, tpl, &v, (int)k, rf, &scratch, &len,
                                                         &chars);
            assert_non_null(got);
            check_prompt_chars(got, chars, expected_prompt_chars(j.model, system, user));
            if (strcmp(got, want))
                fail_msg("template %zu, case %zu:\n got  %s\n want %s", t, k, got, want);
            assert_string_equal(got, ref);
            assert_int_equal(len, strlen(got));
            compared++;
            free(system);
            free(user);
            free(want);
            free(ref);
            free(got);
        }
        /* Values that do not render (options outside 2..4): no body. */
        arb_prompt_vars bad = {.options = 5};
        assert_null(arb__judge_request_body_template(&(arb_judge_config){.model = "m"}, tpl, &bad,
                                                     0, NULL, &scratch, NULL, NULL));
        arb_template_destroy(tpl);
    }
    /* And every built-in template in every option mode. */
    for (const char *const *name = arb_template_builtin_names(); *name; name++) {
        arb_template *tpl = NULL;
        assert_int_equal(arb_template_load(*name, &tpl, NULL), ARB_OK);
        for (int options = 2; options <= 4; options++) {
            arb_judge_config j = judge_m();
            arb_prompt_vars v = {.options = options, .question = texts[3], .answer1 = texts[4],
                                 .answer2 = texts[5], .reference = longer, .language = "fr",
                                 .answer = texts[2], .task = texts[3], .task_input = texts[4],
                                 .scenario = texts[5], .response = texts[3], .identity = "x",
                                 .candidate1 = texts[4], .candidate2 = texts[5],
                                 .identity1 = "a", .identity2 = "b", .metrics_json = "{\"m\": n}",
                                 .range = "0 to 10", .agent1 = texts[3], .agent2 = texts[4],
                                 .self = texts[5], .other = texts[3], .reviews = texts[4],
                                 .discussion = texts[5]};
            const char *rf = arb_template_response_format(tpl);
            j.response_format = 1;
            char *system = NULL, *user = NULL;
            assert_int_equal(arb_template_render(tpl, &v, &system, &user), ARB_OK);
            char *want = arb__judge_request_body(&j, system, user, 1, rf);
            long long chars = 0;
            char *got = arb__judge_request_body_template(&j, tpl, &v, 1, rf, &scratch, NULL,
                                                         &chars);
            assert_non_null(got);
            assert_string_equal(got, want);
            check_prompt_chars(got, chars, expected_prompt_chars(j.model, system, user));
            compared++;
            free(system);
            free(user);
            free(want);
            free(got);
        }
        arb_template_destroy(tpl);
    }
    assert_true(compared > 500);
    arb__buf_free(&scratch);
}

/* Reasoning parameters and a template's JSON schema: sorted among the others, the schema only
** for a judge that declares support, and the fast writer still matches the reference. */
static void test_body_reasoning_and_response_format(void **state)
{
    (void)state;
    arb_judge_config j = judge_m();
    j.sampling.max_tokens = 0;
    j.sampling.temperature = NAN;
    j.sampling.top_p = NAN;
    j.sampling.frequency_penalty = NAN;
    j.sampling.max_completion_tokens = 4096;
    j.sampling.reasoning_effort = "medium";
    const char *schema = "{\"name\":\"verdict\",\"schema\":{\"properties\":{\"verdict\":"
                         "{\"enum\":[\"A\",\"B\"],\"type\":\"string\"}},\"type\":\"object\"},"
                         "\"strict\":true}";
    char *no_support = arb__judge_request_body(&j, NULL, "q", 0, schema);
    assert_string_equal(no_support,
                        "{\"max_completion_tokens\":4096,\"messages\":[{\"content\":\"q\","
                        "\"role\":\"user\"}],\"model\":\"m\",\"reasoning_effort\":\"medium\"}");
    j.response_format = 1;
    char *with = arb__judge_request_body(&j, NULL, "q", 0, schema);
    char *ref = arb__judge_request_body_reference(&j, NULL, "q", 0, schema);
    char expect[1024];
    snprintf(expect, sizeof expect,
             "{\"max_completion_tokens\":4096,\"messages\":[{\"content\":\"q\",\"role\":\"user\"}],"
             "\"model\":\"m\",\"reasoning_effort\":\"medium\",\"response_format\":{\"json_schema\":"
             "%s,\"type\":\"json_schema\"}}", schema);
    assert_string_equal(with, expect);
    assert_string_equal(with, ref);
    /* Supported but no schema asked for: nothing sent. */
    char *none = arb__judge_request_body(&j, NULL, "q", 0, NULL);
    assert_string_equal(none, no_support);
    /* Everything at once, with the defaults: fast == reference. */
    arb_judge_config all = judge_m();
    all.sampling.max_completion_tokens = 1;
    all.sampling.reasoning_effort = "high";
    all.sampling.has_seed = 1;
    all.response_format = 1;
    char *fast = arb__judge_request_body(&all, "s", "u", 2, schema);
    char *slow = arb__judge_request_body_reference(&all, "s", "u", 2, schema);
    assert_string_equal(fast, slow);
    free(no_support);
    free(with);
    free(ref);
    free(none);
    free(fast);
    free(slow);
}

/* Splits text and checks the answer and the thinking (NULL: none). */
static void expect_split(const char *text, const char *answer, const char *thinking)
{
    char *a = NULL, *t = NULL;
    assert_int_equal(arb__judge_split_thinking(text, &a, &t), 0);
    if (strcmp(a, answer)) fail_msg("split(%s): answer \"%s\", want \"%s\"", text, a, answer);
    if (!thinking) assert_null(t);
    else if (!t || strcmp(t, thinking))
        fail_msg("split(%s): thinking \"%s\", want \"%s\"", text, t ? t : "(null)", thinking);
    free(a);
    free(t);
}

static void test_split_thinking(void **state)
{
    (void)state;
    expect_split("", "", NULL);
    expect_split("no thinking [[A]]", "no thinking [[A]]", NULL);
    expect_split("  kept as is  ", "  kept as is  ", NULL);
    expect_split("<think>maybe [[A]]</think>\n\nFinal: [[B]]", "Final: [[B]]", "maybe [[A]]");
    expect_split("<THINK>x</Think>y", "y", "x");
    expect_split("<think></think>\n\n[[B]]", "[[B]]", NULL); /* Qwen3 with thinking off */
    /* the opening tag was in the prompt (DeepSeek-R1, Qwen3 chat templates) */
    expect_split("I think [[A]]\n</think>\n[[B]]", "[[B]]", "I think [[A]]");
    /* cut while thinking: no answer at all */
    expect_split("<think>so far [[A]]", "", "so far [[A]]");
    expect_split("  \n<think>so far [[A]]", "", "so far [[A]]");
    /* two blocks, and text between them */
    expect_split("<think>a</think>mid<think>b</think>end", "midend", "a\n\nb");
    /* an answer before an unclosed tag keeps its text, the rest is thinking */
    expect_split("[[B]] <think>[[A]]", "[[B]]", "[[A]]");
    /* a lone "<think" without '>' is text */
    expect_split("<think [[A]]", "<think [[A]]", NULL);
}

/* Thinking in a message field or in the content never reaches content; usage details kept. */
static void test_parse_reasoning(void **state)
{
    (void)state;
    arb__judge_reply r;
    parse("{\"choices\":[{\"message\":{\"content\":\"[[B]]\",\"reasoning_content\":\"maybe "
          "[[A]]\"}}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":30,"
          "\"completion_tokens_details\":{\"reasoning_tokens\":25},"
          "\"prompt_tokens_details\":{\"cached_tokens\":8}}}", &r);
    assert_string_equal(r.content, "[[B]]");
    assert_string_equal(r.reasoning, "maybe [[A]]");
    assert_int_equal(r.reasoning_tokens, 25);
    assert_int_equal(r.cached_tokens, 8);
    arb__judge_reply_free(&r);
    /* OpenRouter's field, and a <think> block too: both kept, in that order */
    parse("{\"choices\":[{\"message\":{\"content\":\"<think>b</think>[[B]]\",\"reasoning\":\"a\"}}]}",
          &r);
    assert_string_equal(r.content, "[[B]]");
    assert_string_equal(r.reasoning, "a\n\nb");
    assert_int_equal(r.reasoning_tokens, -1);
    assert_int_equal(r.cached_tokens, -1);
    arb__judge_reply_free(&r);
    /* the same text in both fields is kept once; empty fields are none */
    parse("{\"choices\":[{\"message\":{\"content\":\"x\",\"reasoning_content\":\"t\","
          "\"reasoning\":\"t\"}}]}", &r);
    assert_string_equal(r.reasoning, "t");
    arb__judge_reply_free(&r);
    parse("{\"choices\":[{\"message\":{\"content\":\"x\",\"reasoning_content\":\"\","
          "\"reasoning\":null}}],\"usage\":{\"completion_tokens_details\":null}}", &r);
    assert_string_equal(r.content, "x");
    assert_null(r.reasoning);
    arb__judge_reply_free(&r);
    /* cut while thinking, content null: a reply with no answer (verdict E), thinking kept */
    parse("{\"choices\":[{\"finish_reason\":\"length\",\"message\":{\"content\":null,"
          "\"reasoning_content\":\"[[A]] so far\"}}]}", &r);
    assert_null(r.error);
    assert_string_equal(r.content, "");
    assert_string_equal(r.reasoning, "[[A]] so far");
    arb__judge_reply_free(&r);
    /* without thinking, a null content stays an error */
    parse("{\"choices\":[{\"finish_reason\":\"length\",\"message\":{\"content\":null}}]}", &r);
    assert_non_null(r.error);
    assert_null(r.reasoning);
    arb__judge_reply_free(&r);
}

static void test_call_key(void **state)
{
    const char *body = "{\"model\":\"m\"}";
    char k0[33], k0b[33], k1[33], other[33], expect[33];
    arb__judge_call_key(body, 0, k0);
    arb__judge_call_key(body, 0, k0b);
    arb__judge_call_key(body, 1, k1);
    arb__judge_call_key("{\"model\":\"n\"}", 0, other);
    assert_int_equal(strlen(k0), 32);
    assert_string_equal(k0, k0b);
    assert_string_not_equal(k0, k1);
    assert_string_not_equal(k0, other);
    /* Defined as the hash of body, 0x1f, decimal rep. */
    const char *joined = "{\"model\":\"m\"}\x1f" "12";
    arb__judge_call_key(body, 12, k1);
    arb__hash_hex(joined, strlen(joined), expect);
    assert_string_equal(k1, expect);
    /* the executor's way, with the length it already has */
    arb__judge_call_key_len(body, strlen(body), 12, k1);
    assert_string_equal(k1, expect);
    /* A body long enough for XXH3's vector path (over 240 bytes, several 1,024-byte blocks):
    ** its key is the one computed before judge.c called the CPU-dispatched XXH3 (2026-11-28),
    ** so the keys of stored calls are found again. */
    char long_body[3000];
    for (size_t i = 0; i < sizeof long_body - 1; i++) long_body[i] = (char)('a' + (i * 7 + i / 13) % 26);
    long_body[sizeof long_body - 1] = '\0';
    arb__judge_call_key(long_body, 3, k1);
    assert_string_equal(k1, "1cfdb206b8f98156723481f47eac1b3b");
    /* The separator keeps ("...1", rep 2) apart from ("...", rep 12). */
    arb__judge_call_key("x1", 2, k0);
    arb__judge_call_key("x", 12, k0b);
    assert_string_not_equal(k0, k0b);
}

/* ---- replies ------------------------------------------------------------------------------ */

static void test_parse_empty_and_null(void **state)
{
    arb__judge_reply r;
    parse(NULL, &r);
    assert_null(r.content);
    assert_string_equal(r.error, "malformed reply: empty body");
    assert_int_equal(r.prompt_tokens, -1);
    arb__judge_reply_free(&r);
    parse("", &r);
    assert_string_equal(r.error, "malformed reply: empty body");
    arb__judge_reply_free(&r);
    arb__judge_reply_free(&r); /* a cleared reply may be freed again */
}

static void test_parse_invalid_json(void **state)
{
    arb__judge_reply r;
    parse("{\"choices\": [1,}", &r);
    assert_null(r.content);
    assert_string_equal(r.error, "malformed reply: invalid JSON at position 16: unexpected "
                                 "token near '}'");
    arb__judge_reply_free(&r);
    parse("{\"choices\":[{\"message\":{\"content\":", &r); /* truncated */
    assert_int_equal(strncmp(r.error, "malformed reply: invalid JSON at position ", 42), 0);
    arb__judge_reply_free(&r);
    parse("<html>502 Bad Gateway</html>", &r);
    assert_string_equal(r.error, "malformed reply: invalid JSON at position 1: '[' or '{' "
                                 "expected near '<'");
    arb__judge_reply_free(&r);
}

/* A "\u0000" is valid JSON: the reply is accepted (it used to be refused on every run, and so
** sent again on every run) and each NUL becomes U+FFFD, in plain and in array content. */
static void test_parse_nul_in_content(void **state)
{
    arb__judge_reply r;
    parse("{\"choices\":[{\"message\":{\"content\":\"a\\u0000b [[B]]\\u0000\"}}]}", &r);
    assert_null(r.error);
    assert_string_equal(r.content, "a\xEF\xBF\xBD" "b [[B]]\xEF\xBF\xBD");
    arb__judge_reply_free(&r);
    parse("{\"choices\":[{\"message\":{\"content\":\"\\u0000\"}}]}", &r);
    assert_string_equal(r.content, "\xEF\xBF\xBD");
    arb__judge_reply_free(&r);
    parse("{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"x\\u0000\"},"
          "{\"type\":\"text\",\"text\":\"[[A]]\"}]}}]}", &r);
    assert_string_equal(r.content, "x\xEF\xBF\xBD[[A]]");
    arb__judge_reply_free(&r);
}

/* Compares two readings of a reply field by field. */
static void expect_same_reply(const char *body, const arb__judge_reply *a, const arb__judge_reply *b)
{
#define SAME_TEXT(f)                                                                          \
    if ((a->f == NULL) != (b->f == NULL) || (a->f && strcmp(a->f, b->f)))                    \
        fail_msg("%s: " #f " \"%s\" != \"%s\"", body, a->f ? a->f : "(null)",                \
                 b->f ? b->f : "(null)");
    SAME_TEXT(content)
    SAME_TEXT(reasoning)
    SAME_TEXT(error)
#undef SAME_TEXT
    if (a->prompt_tokens != b->prompt_tokens || a->completion_tokens != b->completion_tokens ||
        a->reasoning_tokens != b->reasoning_tokens || a->cached_tokens != b->cached_tokens)
        fail_msg("%s: usage %lld %lld %lld %lld != %lld %lld %lld %lld", body, a->prompt_tokens,
                 a->completion_tokens, a->reasoning_tokens, a->cached_tokens, b->prompt_tokens,
                 b->completion_tokens, b->reasoning_tokens, b->cached_tokens);
    if (!json_equal(a->logprobs, b->logprobs) && (a->logprobs || b->logprobs))
        fail_msg("%s: logprobs differ", body);
}

/* Replies of the usual shape are read without jansson: each of these, usual or a near miss
** (what the fast reader must leave to jansson: errors, repeats, reals, \u0000, nesting, bad
** UTF-8, trailing bytes, ...), reads exactly as through jansson's tree. */
static void test_parse_plain_matches_reference(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1795805936,\"model\":"
        "\"m\",\"system_fingerprint\":\"fp\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
        "\"assistant\",\"content\":\"[[A]]\"},\"logprobs\":null,\"finish_reason\":\"stop\"}],"
        "\"usage\":{\"prompt_tokens\":17,\"completion_tokens\":2,\"total_tokens\":19}}",
        " {\"choices\" : [ {\"message\" : {\"content\" : \"x\\n\\u00e9\\ud83d\\ude00\\\"\"} } ] } \n",
        "{\"choices\":[{\"message\":{\"content\":\"<think>hm</think> [[B]]\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"ok\",\"reasoning_content\":\"r1\","
        "\"reasoning\":\"r2\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"ok\",\"reasoning_content\":\"r\","
        "\"reasoning\":\"r\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"ok\",\"reasoning_content\":\"\","
        "\"reasoning\":null}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"ok\",\"reasoning\":7}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}},{\"message\":{\"content\":\"b\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}},{\"message\":{\"content\":\"b\","
        "\"tool_calls\":[]}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":-3,"
        "\"completion_tokens\":\"2\",\"completion_tokens_details\":{\"reasoning_tokens\":5},"
        "\"prompt_tokens_details\":{\"cached_tokens\":0,\"audio_tokens\":null}}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":1.0e2}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":12,"
        "\"prompt_tokens\":13}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":0012}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":-0}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":"
        "123456789012345678901}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":null}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"completion_tokens_details\""
        ":null,\"prompt_tokens_details\":[1]}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"completion_tokens_details\""
        ":{\"reasoning_tokens\":1},\"completion_tokens_details\":{\"reasoning_tokens\":2}}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\",\"content\":\"b\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"},\"message\":{\"content\":\"b\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"choices\":[]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\\u0000b\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\\u+041\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\tb\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"caf\xC3\xA9\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"caf\xC3\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":null}}]}",
        "{\"choices\":[{\"message\":{\"content\":null,\"reasoning\":\"cut\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":null,\"refusal\":\"no\"},"
        "\"finish_reason\":\"stop\"}]}",
        "{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"},\"logprobs\":{\"content\":[{\"token\":"
        "\"A\",\"logprob\":-0.1,\"top_logprobs\":[]}]}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"},\"logprobs\":false}]}",
        "{\"choices\":[{\"message\":\"a\"}]}",
        "{\"choices\":[{\"text\":\"a\"}]}",
        "{\"choices\":[]}",
        "{\"choices\":{}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"error\":null}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"error\":{\"message\":\"boom\"}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"error\":\"boom\"}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"error\":false}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"object\":\"error\",\"message\":\"m\"}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"object\":\"chat.completion\","
        "\"object\":\"error\"}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"extra\":{\"nested\":true}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"created\":1.5}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}]} x",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}]",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}] \"x\":1}",
        "{\"ch\\u006fices\":[{\"message\":{\"content\":\"a\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"x\":tru}",
        "{\"choices\":[{\"message\":{\"content\":\"\\/\\ud83d\\ude00\\uD83D\\uDE00\\uDBFF\\uDFFF\\uD800\\uDC00\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\\ud800\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\\udc00x\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\\ud800\\u0041\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\\ud800\\ud800\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\\ud83d\\\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\\u00\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\\u00E9\\u00e9\\u0001\\u001f\\u007f\\u2028\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\\a\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\\U0041\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\\\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"x\x7f\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\xED\xA0\x80\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\xC0\xAF\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\xE0\x80\xAF\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\xF4\x90\x80\x80\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\x80\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\xF5\x80\x80\x80\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\xF0\x9F\x98\x80\xE2\x80\xA8\"}}]}",
        "\xEF\xBB\xBF{\"choices\":[{\"message\":{\"content\":\"a\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}]}\f",
        "\r\n\t {\"choices\"\r:\n[\t{\"message\":{\"content\":\"a\"}}]}\r\n",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}]}\v",
        "{\"usage\":{\"completion_tokens\":3,\"prompt_tokens\":4},\"choices\":[{\"finish_reason\":\"stop\",\"message\":{\"role\":\"assistant\",\"content\":\"a\"},\"index\":0}],\"model\":\"m\",\"model\":\"n\"}",
        "{\"choices\":[{\"message\":{\"c\\u006fntent\":\"a\",\"content\":\"b\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"\\u0065rror\":{\"message\":\"e\"}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"object\":\"err\\u006fr\"}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"error\":null,\"error\":\"late\"}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{},\"usage\":{\"prompt_tokens\":5}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"},\"logprobs\":null,\"logprobs\":{\"content\":[]}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}},{\"message\":{\"content\":\"b\"},\"logprobs\":{\"content\":[]}}]}",
        "{\"choices\":[{\"index\":1},{\"message\":{\"content\":\"b\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}},{\"message\":{\"reasoning\":\"r2\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}},{\"message\":{\"x\":1},\"message\":{\"y\":2}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\",\"tool_calls\":[{\"id\":\"t\"}]}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\",\"tool_calls\":null,\"function_call\":null,\"refusal\":null,\"audio\":null}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\",\"reasoning_content\":\"think\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"<think>a\",\"reasoning\":\"b\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"x</think>y\",\"reasoning_content\":\"r\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\",\"reasoning_content\":true}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":1e3,\"completion_tokens\":1E3}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":1.0,\"completion_tokens\":-0.0}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":999999999999999999,\"completion_tokens\":-999999999999999999}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":9223372036854775807,\"completion_tokens\":9223372036854775808}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":-9223372036854775808}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":1e400}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":-}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":+1}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":.5}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":1.}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":NaN}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":Infinity}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":12x}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":nulll}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":True}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":00}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":3,\"cached_tokens\":4}}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":{}}}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"completion_tokens_details\":{\"cached_tokens\":3,\"reasoning_tokens\":2}}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}]}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}]}{}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}]}]",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}},]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"},}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\",}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"x\":}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"x\"}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"x\":1 2}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],x:1}",
        "{'choices':[{'message':{'content':'a'}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"x\":[]}",
        "{\"choices\":[{\"message\":{\"content\":\"a",
        "{\"choices\":[{\"message\":{\"content\":\"a\\",
        "{\"choices\":[{\"message\":{\"content\":\"a\\u12",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":12",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":tru",
        /* strings read sixteen bytes at a time: the byte that ends a run at the 15th, 16th and
        ** 17th place, past a chunk, in names, skipped values and kept ones */
        "{\"choices\":[{\"message\":{\"content\":\"0123456789abcde\\\"f\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"0123456789abcdef\\\"\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"0123456789abcdefg\\n\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"0123456789abcdef0123456789abcdef\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"0123456789abcdef\x01\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"0123456789abcde\x1f\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"0123456789abcdefcaf\xC3\xA9\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"0123456789abcdefcaf\xC3\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"0123456789abcd\xC3\xA9\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"0123456789abcde\xC3\xA9\\u00e9\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"0123456789abcdef\xED\xA0\x80\\n\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a < b, no tag <thin\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"\\u003cthink>t</think>ok\"}}]}",
        "{\"model\":\"0123456789abcdef\\u00e9\",\"choices\":[{\"message\":{\"content\":\"a\"}}]}",
        "{\"model\":\"0123456789abcdef\\x\",\"choices\":[{\"message\":{\"content\":\"a\"}}]}",
        "{\"model\":\"0123456789abcdef0123\x0a\",\"choices\":[{\"message\":{\"content\":\"a\"}}]}",
        "{\"model\":\"0123456789abcdef\xC3\",\"choices\":[{\"message\":{\"content\":\"a\"}}]}",
        "{\"model\":\"\\ud83d\",\"choices\":[{\"message\":{\"content\":\"a\"}}]}",
        "{\"caf\xC3\xA9\":1,\"choices\":[{\"message\":{\"content\":\"a\"}}]}",
        "{\"caf\xC3\":1,\"choices\":[{\"message\":{\"content\":\"a\"}}]}",
        "{\"0123456789abcdef_choices\":1,\"choices\":[{\"message\":{\"content\":\"a\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"object\":\"\\u0065rror\"}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"object\":\"errors\"}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"object\":\"erro\"}",
        "{\"choices\":[{\"message\":{\"content\":\"ok\",\"reasoning_content\":\"r\\u0031\","
        "\"reasoning\":\"r1\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"ok\",\"reasoning_content\":\"0123456789abcdef\","
        "\"reasoning\":\"0123456789abcdeg\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"ok\",\"reasoning\":\"0123456789abcdef\\t\"}}]}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":1234567890123456789}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":123456789012345678}}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"x\":nul}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"x\":fals}",
        "{\"choices\":[{\"message\":{\"content\":\"a\"}}],\"x\":falsey}",
        "{",
        "}",
        " ",
        "null",
        "{\"choices\":null}",
        "[{\"choices\":[]}]",
        "\"text\"",
        "{}",
        "",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        arb__judge_reply fast, ref;
        size_t n = strlen(bodies[i]);
        assert_int_equal(arb__judge_parse_reply(bodies[i], n, &fast), 0);
        assert_int_equal(arb__judge_parse_reply_reference(bodies[i], n, &ref), 0);
        expect_same_reply(bodies[i], &fast, &ref);
        arb__judge_reply_free(&fast);
        arb__judge_reply_free(&ref);
    }
    /* bodies with NUL bytes (a raw one is not JSON; the length, not strlen, ends the body) */
    static const struct { const char *body; size_t len; } sized[] = {
#define SIZED(s) {s, sizeof s - 1}
        SIZED("{\"choices\":[{\"message\":{\"content\":\"a\0b\"}}]}"),
        SIZED("{\"choices\":[{\"message\":{\"content\":\"a\"}}]}\0"),
        SIZED("{\"choices\":[{\"message\":{\"content\":\"a\"}}]\0}"),
        SIZED("{\"choices\":[{\"message\":{\"content\":\"a\"}}]} \0 "),
        SIZED("\0{\"choices\":[{\"message\":{\"content\":\"a\"}}]}"),
        {"{\"choices\":[{\"message\":{\"content\":\"a\"}}]}", 20}, /* cut short */
#undef SIZED
    };
    for (size_t i = 0; i < sizeof sized / sizeof *sized; i++) {
        arb__judge_reply fast, ref;
        assert_int_equal(arb__judge_parse_reply(sized[i].body, sized[i].len, &fast), 0);
        assert_int_equal(arb__judge_parse_reply_reference(sized[i].body, sized[i].len, &ref), 0);
        expect_same_reply(sized[i].body, &fast, &ref);
        arb__judge_reply_free(&fast);
        arb__judge_reply_free(&ref);
    }
}

static void test_parse_wrong_shapes(void **state)
{
    arb__judge_reply r;
    parse("[1,2]", &r);
    assert_string_equal(r.error, "malformed reply: top level is an array, expected an object");
    arb__judge_reply_free(&r);
    parse("{}", &r);
    assert_string_equal(r.error, "reply has no choices");
    arb__judge_reply_free(&r);
    parse("{\"choices\":[]}", &r);
    assert_string_equal(r.error, "reply has no choices");
    arb__judge_reply_free(&r);
    parse("{\"choices\":{\"message\":1}}", &r);
    assert_string_equal(r.error, "reply has no choices");
    arb__judge_reply_free(&r);
    parse("{\"choices\":[7]}", &r);
    assert_string_equal(r.error, "reply has no message in choices[0]");
    arb__judge_reply_free(&r);
    parse("{\"choices\":[{\"message\":{\"content\":null},\"finish_reason\":\"length\"}],"
          "\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1024}}",
          &r);
    assert_null(r.content);
    assert_string_equal(r.error, "reply content is null (finish_reason length)");
    assert_int_equal(r.prompt_tokens, 9); /* usage is kept even when the content is not */
    assert_int_equal(r.completion_tokens, 1024);
    arb__judge_reply_free(&r);
    parse("{\"choices\":[{\"message\":{\"role\":\"assistant\"}}]}", &r);
    assert_string_equal(r.error, "reply content is missing");
    arb__judge_reply_free(&r);
    parse("{\"choices\":[{\"message\":{\"content\":5}}]}", &r);
    assert_string_equal(r.error, "reply content is a number");
    arb__judge_reply_free(&r);
    parse("{\"choices\":[{\"message\":{\"content\":null,\"refusal\":\"no\"}}]}", &r);
    assert_string_equal(r.error, "reply refused: no");
    arb__judge_reply_free(&r);
}

static void test_parse_server_errors(void **state)
{
    arb__judge_reply r;
    parse("{\"error\":{\"message\":\"model not found\",\"type\":\"invalid_request_error\"}}", &r);
    assert_null(r.content);
    assert_string_equal(r.error, "server error: model not found");
    arb__judge_reply_free(&r);
    parse("{\"error\":\"quota\"}", &r);
    assert_string_equal(r.error, "server error: quota");
    arb__judge_reply_free(&r);
    parse("{\"error\":{\"code\":500}}", &r);
    assert_string_equal(r.error, "server error: (no message)");
    arb__judge_reply_free(&r);
    parse("{\"object\":\"error\",\"message\":\"bad max_tokens\",\"code\":400}", &r); /* vLLM */
    assert_string_equal(r.error, "server error: bad max_tokens");
    arb__judge_reply_free(&r);
    /* "error": null is not an error (some proxies always include the key). */
    parse("{\"error\":null,\"choices\":[{\"message\":{\"content\":\"ok\"}}]}", &r);
    assert_null(r.error);
    assert_string_equal(r.content, "ok");
    arb__judge_reply_free(&r);
}

static void test_parse_good_replies(void **state)
{
    arb__judge_reply r;
    parse("{\"id\":\"x\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
          "\"content\":\"Answer 1 is better. [[A]]\"},\"finish_reason\":\"stop\"}],"
          "\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":7,\"total_tokens\":127}}",
          &r);
    assert_null(r.error);
    assert_string_equal(r.content, "Answer 1 is better. [[A]]");
    assert_int_equal(r.prompt_tokens, 120);
    assert_int_equal(r.completion_tokens, 7);
    arb__judge_reply_free(&r);
    assert_null(r.content);

    /* No usage: -1; empty content is a reply (its verdict will be E), not an error. */
    parse("{\"choices\":[{\"message\":{\"content\":\"\"}}],\"usage\":{\"prompt_tokens\":\"3\"}}",
          &r);
    assert_null(r.error);
    assert_string_equal(r.content, "");
    assert_int_equal(r.prompt_tokens, -1);
    assert_int_equal(r.completion_tokens, -1);
    arb__judge_reply_free(&r);

    /* Content parts are concatenated; non-text parts are skipped. */
    parse("{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"[[\"},"
          "{\"type\":\"image_url\",\"image_url\":{}},{\"type\":\"text\",\"text\":\"B]]\"}]}}]}",
          &r);
    assert_null(r.error);
    assert_string_equal(r.content, "[[B]]");
    arb__judge_reply_free(&r);
    parse("{\"choices\":[{\"message\":{\"content\":[{\"type\":\"image_url\"}]}}]}", &r);
    assert_null(r.content);
    assert_string_equal(r.error, "reply content has no text parts");
    arb__judge_reply_free(&r);

    /* UTF-8 content survives as is. */
    parse("{\"choices\":[{\"message\":{\"content\":\"\xc3\xa9\\u00e9\"}}]}", &r);
    assert_string_equal(r.content, "\xc3\xa9\xc3\xa9");
    arb__judge_reply_free(&r);
}

/* ---- auth header and URL -------------------------------------------------------------------- */

static void test_auth_header(void **state)
{
    unsetenv(ENV_KEY);
    assert_null(arb__judge_auth_header(NULL));
    assert_null(arb__judge_auth_header(ENV_KEY));
    setenv(ENV_KEY, "", 1);
    assert_null(arb__judge_auth_header(ENV_KEY));
    setenv(ENV_KEY, "  \t", 1);
    assert_null(arb__judge_auth_header(ENV_KEY));
    setenv(ENV_KEY, "sk-abc", 1);
    char *h = arb__judge_auth_header(ENV_KEY);
    assert_string_equal(h, "Authorization: Bearer sk-abc");
    free(h);
    setenv(ENV_KEY, " sk-abc\t", 1);
    h = arb__judge_auth_header(ENV_KEY);
    assert_string_equal(h, "Authorization: Bearer sk-abc");
    free(h);
    /* Line breaks anywhere (a key file with CRLF) are refused, not trimmed away. */
    setenv(ENV_KEY, "sk-abc\r", 1);
    assert_null(arb__judge_auth_header(ENV_KEY));
    setenv(ENV_KEY, "sk-a\r\nX-Injected: 1", 1);
    assert_null(arb__judge_auth_header(ENV_KEY));
    unsetenv(ENV_KEY);
}

/* Runs arb__judge_check on an in-memory store; returns the status, *msg a copy of the message. */
static arb_status check(const arb_judge_config *j, int dry_run, char **msg)
{
    arb_store *s = NULL;
    assert_int_equal(arb_store_open(":memory:", &s), ARB_OK);
    arb_status st = arb__judge_check(s, j, dry_run);
    *msg = strdup(st ? arb_store_errmsg(s) : "");
    arb_store_close(s);
    return st;
}

/* A key variable that is named but unusable stops the run before anything is sent: the message
** names the judge and the variable, never the value. */
static void test_judge_check_key(void **state)
{
    arb_judge_config j = judge_m();
    j.name = "jj";
    char *msg;
    assert_int_equal(check(&j, 0, &msg), ARB_OK); /* no key named: fine */
    free(msg);
    j.api_key_env = ENV_KEY;
    unsetenv(ENV_KEY);
    assert_int_equal(check(&j, 0, &msg), ARB_INVALID);
    assert_string_equal(msg, "judge \"jj\": environment variable " ENV_KEY " (--api-key-env, or "
                             "api_key_env in a judges file) is not set; nothing was sent");
    free(msg);
    assert_int_equal(check(&j, 1, &msg), ARB_OK); /* a dry run sends nothing: no key needed */
    free(msg);
    setenv(ENV_KEY, " ", 1);
    assert_int_equal(check(&j, 0, &msg), ARB_INVALID);
    assert_non_null(strstr(msg, ENV_KEY " (--api-key-env, or api_key_env in a judges file) is empty"));
    free(msg);
    setenv(ENV_KEY, "sk-VALUE\r\n", 1);
    assert_int_equal(check(&j, 0, &msg), ARB_INVALID);
    assert_non_null(strstr(msg, "holds a line break (CR or LF)"));
    assert_null(strstr(msg, "VALUE"));
    free(msg);
    setenv(ENV_KEY, "sk-VALUE\x01", 1);
    assert_int_equal(check(&j, 0, &msg), ARB_INVALID);
    assert_non_null(strstr(msg, "holds a control character"));
    assert_null(strstr(msg, "VALUE"));
    free(msg);
    setenv(ENV_KEY, "sk-ok", 1);
    assert_int_equal(check(&j, 0, &msg), ARB_OK);
    free(msg);
    unsetenv(ENV_KEY);
}

/* A URL that cannot be sent to is refused with the other inputs, without quoting it. */
static void test_judge_check_url(void **state)
{
    static const char *const bad[][2] = {
        {"127.0.0.1:8000/v1", "has no scheme"},
        {"http://h:99999/v1", "has a bad port"},
        {"http://u:SECRET@h:0/v1", "has a bad port"},
        {"ftp://h/v1", "unsupported scheme"},
        {"http:///v1", "has no host"},
    };
    arb_judge_config j = judge_m();
    char *msg;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j.base_url = bad[i][0];
        assert_int_equal(check(&j, 1, &msg), ARB_INVALID);
        if (!strstr(msg, bad[i][1]) || strstr(msg, "SECRET") || strncmp(msg, "judge \"m\": the URL", 18))
            fail_msg("%s: %s", bad[i][0], msg);
        free(msg);
    }
    j.base_url = "https://u:p@api.example.com:8443/v1?api-version=2";
    assert_int_equal(check(&j, 0, &msg), ARB_OK);
    free(msg);
}

/* A key a server echoes is replaced wherever it occurs; other text is kept. */
static void test_redact_key(void **state)
{
    setenv(ENV_KEY, " sk-echo-123 ", 1);
    char *text = strdup("Authorization: Bearer sk-echo-123 and again sk-echo-123. [[A]]");
    assert_int_equal(arb__judge_redact_key(ENV_KEY, &text), 0);
    assert_string_equal(text, "Authorization: Bearer [REDACTED] and again [REDACTED]. [[A]]");
    free(text);
    text = strdup("nothing to hide");
    char *before = text;
    assert_int_equal(arb__judge_redact_key(ENV_KEY, &text), 0);
    assert_ptr_equal(text, before);
    assert_string_equal(text, "nothing to hide");
    assert_int_equal(arb__judge_redact_key(NULL, &text), 0);
    free(text);
    text = NULL;
    assert_int_equal(arb__judge_redact_key(ENV_KEY, &text), 0);
    assert_null(text);
    /* a placeholder key (shorter than 8) is no secret: replies keep their letters */
    setenv(ENV_KEY, "EMPTY", 1);
    text = strdup("EMPTY answers are bad. [[A]]");
    assert_int_equal(arb__judge_redact_key(ENV_KEY, &text), 0);
    assert_string_equal(text, "EMPTY answers are bad. [[A]]");
    free(text);
    unsetenv(ENV_KEY);
}

static void test_url(void **state)
{
    assert_null(arb__judge_url(NULL));
    const char *cases[][2] = {
        {"http://h:8000/v1", "http://h:8000/v1/chat/completions"},
        {"http://h:8000/v1/", "http://h:8000/v1/chat/completions"},
        {"http://h:8000/v1//", "http://h:8000/v1/chat/completions"},
        {"https://api.example.com/v1/chat/completions", "https://api.example.com/v1/chat/completions"},
        {"https://api.example.com/v1/chat/completions/", "https://api.example.com/v1/chat/completions"},
        {"", "/chat/completions"},
        /* a query stays after the path (it used to end up before "/chat/completions") */
        {"http://h:8000/v1/?api-version=2", "http://h:8000/v1/chat/completions?api-version=2"},
        {"https://h/v1/chat/completions?key=k", "https://h/v1/chat/completions?key=k"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *u = arb__judge_url(cases[i][0]);
        assert_string_equal(u, cases[i][1]);
        free(u);
    }
}

/* ---- round trip through http.c and the test server ---------------------------------------- */

typedef struct one_result {
    int done;
    int ok;
    char *body;
    size_t len;
} one_result;

static void keep(void *ud, uint64_t tag, const arb__http_result *res)
{
    one_result *o = ud;
    o->done++;
    o->ok = res->ok;
    o->body = strndup(res->body, res->body_len);
    o->len = res->body_len;
}

/* Sends one call of judge j and returns the raw reply (caller frees *body). */
static void send_call(arb_test_server *srv, const arb_judge_config *j, const char *request,
                      one_result *o)
{
    arb_client_params p = arb_client_default_params();
    p.jobs = 2;
    p.max_retries = 0;
    p.total_timeout_ms = 5000;
    arb__http *h = arb__http_create(&p);
    assert_non_null(h);
    char *url = arb__judge_url(arb_test_server_base_url(srv));
    char *auth = arb__judge_auth_header(j->api_key_env);
    assert_int_equal(arb__http_submit(h, 1, url, auth, request, strlen(request)), 0);
    double start = arb__now_ms();
    while (arb__http_pending(h) > 0) {
        arb__http_step(h, 100, keep, o);
        assert_true(arb__now_ms() - start < 10000);
    }
    assert_int_equal(o->done, 1);
    free(auth);
    free(url);
    arb__http_destroy(h);
}

static void test_round_trip_with_auth(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    assert_non_null(srv);
    arb_test_server_push_reply(srv, "Both fine. [[C]]");
    arb_judge_config j = judge_m();
    j.api_key_env = ENV_KEY;
    setenv(ENV_KEY, "sk-secret-1", 1);
    char *request = arb__judge_request_body(&j, "be fair", "which is better?", 0, NULL);
    one_result o = {0, 0, NULL, 0};
    send_call(srv, &j, request, &o);
    assert_true(o.ok);

    char *auth = arb_test_server_last_header(srv, "Authorization");
    assert_string_equal(auth, "Bearer sk-secret-1");
    char *got = arb_test_server_last_body(srv);
    assert_string_equal(got, request);
    char *ctype = arb_test_server_last_header(srv, "Content-Type");
    assert_string_equal(ctype, "application/json");

    arb__judge_reply r;
    assert_int_equal(arb__judge_parse_reply(o.body, o.len, &r), 0);
    assert_null(r.error);
    assert_string_equal(r.content, "Both fine. [[C]]");
    /* The test server's documented counts: request bytes / 4 and content bytes / 4 + 1. */
    assert_int_equal(r.prompt_tokens, (long long)(strlen(request) / 4));
    assert_int_equal(r.completion_tokens, (long long)(strlen("Both fine. [[C]]") / 4 + 1));
    arb__judge_reply_free(&r);
    free(auth);
    free(got);
    free(ctype);
    free(o.body);
    free(request);
    unsetenv(ENV_KEY);
    arb_test_server_stop(srv);
}

static void test_round_trip_without_key_sends_no_auth(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_judge_config j = judge_m();
    j.api_key_env = ENV_KEY;
    unsetenv(ENV_KEY);
    char *request = arb__judge_request_body(&j, NULL, "q", 0, NULL);
    one_result o = {0, 0, NULL, 0};
    send_call(srv, &j, request, &o);
    assert_true(o.ok);
    assert_null(arb_test_server_last_header(srv, "Authorization"));
    char *got = arb_test_server_last_body(srv);
    assert_string_equal(got, request);
    free(got);
    free(o.body);
    free(request);
    arb_test_server_stop(srv);
}

static void test_round_trip_malformed_reply(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_server_push_malformed(srv, "{\"choices\":[{\"message\":");
    arb_judge_config j = judge_m();
    char *request = arb__judge_request_body(&j, NULL, "q", 0, NULL);
    one_result o = {0, 0, NULL, 0};
    send_call(srv, &j, request, &o);
    assert_true(o.ok); /* HTTP was fine: the body is the problem */
    arb__judge_reply r;
    assert_int_equal(arb__judge_parse_reply(o.body, o.len, &r), 0);
    assert_null(r.content);
    assert_string_equal(r.error, "malformed reply: invalid JSON at position 23: unexpected "
                                 "token near end of file");
    arb__judge_reply_free(&r);
    free(o.body);
    free(request);
    arb_test_server_stop(srv);
}

/* ---- cost ---------------------------------------------------------------------------------- */

/* usage details: cached prompt tokens and reasoning tokens (OpenAI's shape); absent: -1. */
static void test_parse_usage_details(void **state)
{
    (void)state;
    arb__judge_reply r;
    parse("{\"choices\":[{\"message\":{\"content\":\"[[A]]\"}}],\"usage\":{"
          "\"prompt_tokens\":1000,\"completion_tokens\":300,"
          "\"prompt_tokens_details\":{\"cached_tokens\":400},"
          "\"completion_tokens_details\":{\"reasoning_tokens\":250}}}", &r);
    assert_int_equal(r.prompt_tokens, 1000);
    assert_int_equal(r.completion_tokens, 300);
    assert_int_equal(r.cached_tokens, 400);
    assert_int_equal(r.reasoning_tokens, 250);
    arb__judge_reply_free(&r);
    parse("{\"choices\":[{\"message\":{\"content\":\"[[A]]\"}}],\"usage\":{"
          "\"prompt_tokens\":5,\"completion_tokens\":2}}", &r);
    assert_int_equal(r.cached_tokens, -1);
    assert_int_equal(r.reasoning_tokens, -1);
    arb__judge_reply_free(&r);
}

/* Hand-computed: price in 2.5, out 10, cached 1.25 USD per million tokens. */
static void test_call_cost(void **state)
{
    (void)state;
    arb_price p = {.known = 1, .input_per_mtok = 2.5, .output_per_mtok = 10,
                   .cached_input_per_mtok = 1.25};
    /* (600 * 2.5 + 400 * 1.25 + 200 * 10) / 1e6 = 4000 / 1e6 */
    assert_true(fabs(arb__judge_call_cost(&p, 1000, 200, 400) - 0.004) < 1e-15);
    /* nothing cached reported: every prompt token at the input price, 4500 / 1e6 */
    assert_true(fabs(arb__judge_call_cost(&p, 1000, 200, -1) - 0.0045) < 1e-15);
    /* no cached price: cached tokens at the input price */
    p.cached_input_per_mtok = NAN;
    assert_true(fabs(arb__judge_call_cost(&p, 1000, 200, 400) - 0.0045) < 1e-15);
    /* more cached than prompt (a server's mistake): capped at the prompt */
    p.cached_input_per_mtok = 0;
    assert_true(fabs(arb__judge_call_cost(&p, 100, 0, 500) - 0.0) < 1e-15);
    /* free is 0, known */
    arb_price free_price = {.known = 1, .cached_input_per_mtok = NAN};
    assert_true(arb__judge_call_cost(&free_price, 1000, 200, -1) == 0.0);
    /* unknown: no price, or no usage */
    arb_price none = {0};
    assert_true(isnan(arb__judge_call_cost(&none, 1000, 200, 0)));
    assert_true(isnan(arb__judge_call_cost(NULL, 1000, 200, 0)));
    assert_true(isnan(arb__judge_call_cost(&p, -1, 200, 0)));
    assert_true(isnan(arb__judge_call_cost(&p, 1000, -1, 0)));
}

/* ceil(code points / 4) + 4 per message. */
static void test_estimate_prompt_tokens(void **state)
{
    (void)state;
    assert_int_equal(arb__judge_estimate_prompt_tokens(NULL, ""), 4);
    assert_int_equal(arb__judge_estimate_prompt_tokens(NULL, "abcd"), 1 + 4);
    assert_int_equal(arb__judge_estimate_prompt_tokens(NULL, "abcde"), 2 + 4);
    /* "é" and "€" are one code point each: 12 code points in all */
    assert_int_equal(arb__judge_estimate_prompt_tokens("abcé", "abcdefg\xe2\x82\xac"), 3 + 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_body_minimal),
        cmocka_unit_test(test_body_canonical_with_defaults),
        cmocka_unit_test(test_body_seed_plus_rep),
        cmocka_unit_test(test_body_invalid_utf8_is_replaced),
        cmocka_unit_test(test_body_fast_writer_matches_reference),
        cmocka_unit_test(test_body_from_template_matches_render),
        cmocka_unit_test(test_body_reasoning_and_response_format),
        cmocka_unit_test(test_split_thinking),
        cmocka_unit_test(test_parse_reasoning),
        cmocka_unit_test(test_call_key),
        cmocka_unit_test(test_parse_empty_and_null),
        cmocka_unit_test(test_parse_invalid_json),
        cmocka_unit_test(test_parse_wrong_shapes),
        cmocka_unit_test(test_parse_server_errors),
        cmocka_unit_test(test_parse_good_replies),
        cmocka_unit_test(test_parse_nul_in_content),
        cmocka_unit_test(test_parse_plain_matches_reference),
        cmocka_unit_test(test_auth_header),
        cmocka_unit_test(test_judge_check_key),
        cmocka_unit_test(test_judge_check_url),
        cmocka_unit_test(test_redact_key),
        cmocka_unit_test(test_url),
        cmocka_unit_test(test_round_trip_with_auth),
        cmocka_unit_test(test_round_trip_without_key_sends_no_auth),
        cmocka_unit_test(test_round_trip_malformed_reply),
        cmocka_unit_test(test_parse_usage_details),
        cmocka_unit_test(test_call_cost),
        cmocka_unit_test(test_estimate_prompt_tokens),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
