/*
** test_logprobs.c -- the verdict token's distribution (logprobs.c): the verdict split over
** several tokens or merged with its neighbours, absent from the tokens, no logprobs at all,
** 2/3/4 options, grades (expected grade) and yes/no, JSON-field verdicts, thinking before the
** answer, persona phase 2's "preferred"; and the reply parser keeping logprobs.content
** (judge.c). Expectations by hand.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* One token: text, its probability, and alternatives "tok=p|tok=p" (NULL: no top_logprobs
** key). The chosen token is listed among its alternatives first, as OpenAI does. */
static json_t *token(const char *text, double p, const char *alts)
{
    json_t *t = json_pack("{s:s, s:f}", "token", text, "logprob", log(p));
    if (!alts) return t;
    json_t *top = json_array();
    json_array_append_new(top, json_pack("{s:s, s:f}", "token", text, "logprob", log(p)));
    char *copy = strdup(alts);
    for (char *save = NULL, *part = strtok_r(copy, "|", &save); part;
         part = strtok_r(NULL, "|", &save)) {
        char *eq = strrchr(part, '=');
        *eq = '\0';
        json_array_append_new(top, json_pack("{s:s, s:f}", "token", part, "logprob",
                                             log(atof(eq + 1))));
    }
    free(copy);
    json_object_set_new(t, "top_logprobs", top);
    return t;
}

/* A token list from n tokens (the list takes them). */
static json_t *tokens(size_t n, ...)
{
    json_t *list = json_array();
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++) json_array_append_new(list, va_arg(ap, json_t *));
    va_end(ap);
    return list;
}

/* Runs the extraction and parses its JSON (NULL when there was none); frees list. */
static json_t *extract(json_t *list, const char *answer, arb__verdict_spec spec)
{
    char *out = (char *)1;
    assert_int_equal(arb__logprobs_verdict(list, answer, &spec, &out), 0);
    json_decref(list);
    if (!out) return NULL;
    json_t *j = json_loads(out, 0, NULL);
    assert_non_null(j);
    free(out);
    return j;
}

static double opt(const json_t *j, const char *label)
{
    const json_t *v = json_object_get(json_object_get(j, "options"), label);
    assert_true(json_is_real(v));
    return json_real_value(v);
}

static double num(const json_t *j, const char *key)
{
    const json_t *v = json_object_get(j, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-6)

static const arb__verdict_spec three = {ARB__VERDICT_POSITION, 3, NULL};

static void no_logprobs_gives_nothing(void **state)
{
    (void)state;
    /* not asked for / the endpoint sent none: NULL, never zeros */
    assert_null(extract(NULL, "[[A]]", three));
    /* a call without a verdict (a debater's turn) */
    arb__verdict_spec none = {ARB__VERDICT_NONE, 0, NULL};
    assert_null(extract(tokens(1, token("[[A]]", 0.9, "")), "[[A]]", none));
}

static void verdict_split_over_three_tokens(void **state)
{
    (void)state;
    json_t *j = extract(tokens(5, token("Both", 1, NULL), token(" fine.\n", 1, NULL),
                               token("[[", 1, "[=0.0001"), token("A", 0.6, "B=0.3|C=0.05| the=0.05"),
                               token("]]", 1, NULL)),
                        "Both fine.\n[[A]]", three);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "A");
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "position");
    NEAR(opt(j, "A"), 0.6 / 0.95);
    NEAR(opt(j, "B"), 0.3 / 0.95);
    NEAR(opt(j, "C"), 0.05 / 0.95);
    NEAR(num(j, "in_options"), 0.95);
    NEAR(num(j, "other_mass"), 0.05);
    assert_int_equal((int)num(j, "alternatives"), 4);
    assert_null(json_object_get(json_object_get(j, "options"), "D")); /* not active */
    json_decref(j);
}

static void verdict_merged_with_neighbours(void **state)
{
    (void)state;
    /* "[[A" then "]]": the prefix "[[" must match; "[" alone is another token */
    json_t *j = extract(tokens(3, token("So", 1, NULL), token(" [[B", 0.5, "[[A=0.25|[[b=0.15|[=0.1"),
                               token("]]", 1, NULL)),
                        "So [[B]]", three);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "B");
    NEAR(opt(j, "A"), 0.25 / 0.9);
    NEAR(opt(j, "B"), 0.65 / 0.9); /* "[[b" is B too */
    NEAR(opt(j, "C"), 0);
    NEAR(num(j, "other_mass"), 0.1);
    json_decref(j);
    /* merged with what follows: "A]]", alternatives "B]]" and "C]" */
    j = extract(tokens(2, token("[[", 1, NULL), token("A]]", 0.7, "B]]=0.2|C]=0.1")), "[[A]]",
                three);
    NEAR(opt(j, "A"), 0.7);
    NEAR(opt(j, "B"), 0.2);
    NEAR(opt(j, "C"), 0.1);
    json_decref(j);
    /* the whole marker in one token, alternatives whole markers too */
    j = extract(tokens(1, token("[[C]]", 0.8, "[[A]]=0.1|[[D]]=0.1")),
                "[[C]]", (arb__verdict_spec){ARB__VERDICT_POSITION, 4, NULL});
    NEAR(opt(j, "A"), 0.1);
    NEAR(opt(j, "C"), 0.8);
    NEAR(opt(j, "D"), 0.1);
    NEAR(opt(j, "B"), 0);
    json_decref(j);
}

static void options_two_three_four(void **state)
{
    (void)state;
    /* 2 options: C and D are not options (their mass goes to other_mass); "1"/"2" are A/B */
    json_t *j = extract(tokens(2, token("Answer:\n", 1, NULL), token("B", 0.5, "1=0.2|C=0.2|D=0.1")),
                        "Answer:\nB", (arb__verdict_spec){ARB__VERDICT_POSITION, 2, NULL});
    NEAR(opt(j, "A"), 0.2 / 0.7);
    NEAR(opt(j, "B"), 0.5 / 0.7);
    NEAR(num(j, "other_mass"), 0.3);
    assert_int_equal(json_object_size(json_object_get(j, "options")), 2);
    json_decref(j);
    j = extract(tokens(1, token("[[D]]", 0.4, "[[C]]=0.4|[[A]]=0.2")), "[[D]]",
                (arb__verdict_spec){ARB__VERDICT_POSITION, 4, NULL});
    assert_int_equal(json_object_size(json_object_get(j, "options")), 4);
    NEAR(opt(j, "D"), 0.4);
    NEAR(num(j, "other_mass"), 0);
    json_decref(j);
    /* no top_logprobs asked (top_logprobs 0): only the chosen token is known */
    j = extract(tokens(3, token("[[", 1, NULL), token("A", 0.6, NULL), token("]]", 1, NULL)),
                "[[A]]", three);
    NEAR(opt(j, "A"), 1);
    NEAR(opt(j, "B"), 0);
    NEAR(num(j, "in_options"), 0.6);
    NEAR(num(j, "other_mass"), 0.4);
    assert_int_equal((int)num(j, "alternatives"), 1);
    json_decref(j);
}

static void verdict_token_absent(void **state)
{
    (void)state;
    /* the tokens do not hold the answer's verdict (a server's tokens that do not spell the
    ** content): options null and a reason, not zeros */
    json_t *j = extract(tokens(2, token("[[", 1, NULL), token("B]]", 1, NULL)), "[[A]]", three);
    assert_non_null(j);
    assert_true(json_is_null(json_object_get(j, "options")));
    assert_string_equal(json_string_value(json_object_get(j, "reason")),
                        "the verdict is not in the tokens");
    json_decref(j);
    /* no verdict in the answer */
    j = extract(tokens(1, token("I cannot decide.", 1, NULL)), "I cannot decide.", three);
    assert_true(json_is_null(json_object_get(j, "options")));
    assert_string_equal(json_string_value(json_object_get(j, "reason")), "no valid verdict");
    json_decref(j);
    /* an empty token list */
    j = extract(json_array(), "[[A]]", three);
    assert_true(json_is_null(json_object_get(j, "options")));
    json_decref(j);
}

static void thinking_is_not_the_verdict(void **state)
{
    (void)state;
    /* the tokens carry the thinking too; the answer (thinking removed) ends in [[A]], and the
    ** [[B]] inside <think> must not be read */
    json_t *j = extract(tokens(7, token("<think>", 1, NULL), token("[[", 1, NULL),
                               token("B", 0.99, "A=0.01"), token("]]</think>\n", 1, NULL),
                               token("[[", 1, NULL), token("A", 0.75, "B=0.25"),
                               token("]]", 1, NULL)),
                        "[[A]]", three);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "A");
    NEAR(opt(j, "A"), 0.75);
    NEAR(opt(j, "B"), 0.25);
    json_decref(j);
}

static void json_field_verdict(void **state)
{
    (void)state;
    arb__verdict_spec spec = {ARB__VERDICT_POSITION, 3, "verdict"};
    json_t *j = extract(tokens(3, token("{\"verdict\": \"", 1, NULL), token("C", 0.5, "A=0.3|B=0.2"),
                               token("\"}", 1, NULL)),
                        "{\"verdict\": \"C\"}", spec);
    NEAR(opt(j, "C"), 0.5);
    NEAR(opt(j, "A"), 0.3);
    json_decref(j);
}

/* Rule 3 (an <answer> letter) and option numbers: "2" is B, its alternatives "1" and "A" are A. */
static void answer_tag_and_numbers(void **state)
{
    (void)state;
    json_t *j = extract(tokens(3, token("<answer>", 1, NULL), token("2", 0.6, "1=0.2|A=0.1|3=0.1"),
                               token("</answer>", 1, NULL)),
                        "<answer>2</answer>", (arb__verdict_spec){ARB__VERDICT_POSITION, 2, NULL});
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "B");
    NEAR(opt(j, "A"), 0.3 / 0.9);
    NEAR(opt(j, "B"), 0.6 / 0.9);
    NEAR(num(j, "other_mass"), 0.1); /* "3" is no option of a 2-option run */
    json_decref(j);
    /* a last bracket outside the mode is E: no distribution, whatever the tokens say */
    j = extract(tokens(1, token("[[D]]", 0.9, "[[A]]=0.1")), "[[D]]", three);
    assert_true(json_is_null(json_object_get(j, "options")));
    assert_string_equal(json_string_value(json_object_get(j, "reason")), "no valid verdict");
    json_decref(j);
}

static void grades_expected_value(void **state)
{
    (void)state;
    arb__verdict_spec spec = {ARB__VERDICT_GRADE, 0, NULL};
    json_t *j = extract(tokens(4, token("Good.\n", 1, NULL), token("<answer>", 1, NULL),
                               token("4", 0.7, "5=0.2|3=0.1|45=0.0001"), token("</answer>", 1, NULL)),
                        "Good.\n<answer>4</answer>", spec);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "grade");
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "4");
    NEAR(opt(j, "4"), 0.7);
    NEAR(opt(j, "1"), 0);
    NEAR(num(j, "expected"), 0.7 * 4 + 0.2 * 5 + 0.1 * 3); /* 4.1, G-Eval's sum p*g */
    json_decref(j);
    /* the grade merged with the tag, "<answer>2" */
    j = extract(tokens(2, token("<answer>2", 0.5, "<answer>1=0.5"), token("</answer>", 1, NULL)),
                "<answer>2</answer>", spec);
    NEAR(num(j, "expected"), 1.5);
    json_decref(j);
}

static void yes_no(void **state)
{
    (void)state;
    arb__verdict_spec spec = {ARB__VERDICT_YESNO, 0, NULL};
    /* "incorrect" split as "in" + "correct": the verdict token is "in", whose alternative
    ** "correct" is the other answer */
    json_t *j = extract(tokens(4, token("<answer>", 1, NULL), token("in", 0.8, "correct=0.15|I=0.05"),
                               token("correct", 1, NULL), token("</answer>", 1, NULL)),
                        "<answer>incorrect</answer>", spec);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "incorrect");
    NEAR(opt(j, "incorrect"), (0.8 + 0.05) / 1.0);
    NEAR(opt(j, "correct"), 0.15);
    json_decref(j);
    j = extract(tokens(3, token("<answer>", 1, NULL), token("Correct", 0.9, "Inc=0.1"),
                       token("</answer>", 1, NULL)),
                "<answer>Correct</answer>", spec);
    NEAR(opt(j, "correct"), 0.9);
    NEAR(opt(j, "incorrect"), 0.1);
    json_decref(j);
}

/* Persona phase 2's "preferred": the token where "candidate_1" and "candidate_2" differ, however
** the tokenizer split the value; the object read is the last one, as arb__persona_parse_2's. */
static void persona_preferred(void **state)
{
    (void)state;
    arb__verdict_spec spec = {ARB__VERDICT_PREFERRED, 2, NULL};
    const char *reply = "{\"candidate_1\": {\"accuracy\": 7}, \"candidate_2\": {\"accuracy\": 8},"
                        " \"preferred\": \"candidate_2\", \"reasons\": \"x\"}";
    /* the digit a token of its own: "candidate" "_" "2" */
    json_t *j = extract(tokens(5, token("{\"candidate_1\": {\"accuracy\": 7}, \"candidate_2\": "
                                        "{\"accuracy\": 8}, \"preferred\": \"", 1, NULL),
                               token("candidate", 1, NULL), token("_", 1, NULL),
                               token("2", 0.7, "1=0.2|The=0.1"),
                               token("\", \"reasons\": \"x\"}", 1, NULL)),
                        reply, spec);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "preferred");
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "candidate_2");
    NEAR(opt(j, "candidate_2"), 0.7 / 0.9);
    NEAR(opt(j, "candidate_1"), 0.2 / 0.9);
    NEAR(num(j, "other_mass"), 0.1);
    json_decref(j);
    /* the whole value one token: "candidate_2" against "candidate_1" (and "candidate" alone,
    ** which names neither) */
    j = extract(tokens(3, token("{\"candidate_1\": {\"accuracy\": 7}, \"candidate_2\": "
                                "{\"accuracy\": 8}, \"preferred\": \"", 1, NULL),
                       token("candidate_2", 0.6, "candidate_1=0.3|candidate=0.1"),
                       token("\", \"reasons\": \"x\"}", 1, NULL)),
                reply, spec);
    NEAR(opt(j, "candidate_2"), 0.6 / 0.9);
    NEAR(opt(j, "candidate_1"), 0.3 / 0.9);
    json_decref(j);
    /* a value that is no candidate: no valid verdict, no figures */
    j = extract(tokens(1, token("{\"preferred\": \"both\"}", 1, NULL)), "{\"preferred\": \"both\"}",
                spec);
    assert_true(json_is_null(json_object_get(j, "options")));
    json_decref(j);
    /* the stored spec text round-trips */
    char *text = arb__verdict_spec_text(&spec), *field;
    arb__verdict_spec back;
    assert_string_equal(text, "preferred");
    assert_int_equal(arb__verdict_spec_parse(text, &back, &field), 0);
    assert_int_equal(back.kind, ARB__VERDICT_PREFERRED);
    free(text);
    free(field);
}

/* The reply parser keeps choices[0].logprobs.content, and nothing when logprobs is null. */
static void reply_keeps_token_logprobs(void **state)
{
    (void)state;
    const char *with = "{\"choices\":[{\"message\":{\"content\":\"[[A]]\"},\"logprobs\":{\"content\":"
                       "[{\"token\":\"[[A]]\",\"logprob\":-0.1,\"top_logprobs\":[]}]}}]}";
    arb__judge_reply r;
    assert_int_equal(arb__judge_parse_reply(with, strlen(with), &r), 0);
    assert_non_null(r.logprobs);
    assert_int_equal(json_array_size(r.logprobs), 1);
    arb__judge_reply_free(&r);
    assert_null(r.logprobs);
    const char *without = "{\"choices\":[{\"message\":{\"content\":\"[[A]]\"},\"logprobs\":null}]}";
    assert_int_equal(arb__judge_parse_reply(without, strlen(without), &r), 0);
    assert_null(r.logprobs);
    arb__judge_reply_free(&r);
}

/* A judge asking for logprobs sends logprobs/top_logprobs (part of the call key); both
** builders agree. */
static void request_asks_for_logprobs(void **state)
{
    (void)state;
    arb_judge_config jc = {.name = "j", .model = "m", .sampling = arb_sampling_default()};
    char *plain = arb__judge_request_body(&jc, NULL, "hi", 0, NULL);
    assert_null(strstr(plain, "logprobs"));
    jc.logprobs = 1;
    jc.top_logprobs = 5;
    char *fast = arb__judge_request_body(&jc, NULL, "hi", 0, NULL);
    char *ref = arb__judge_request_body_reference(&jc, NULL, "hi", 0, NULL);
    assert_string_equal(fast, ref);
    assert_non_null(strstr(fast, "{\"frequency_penalty\":1.0,\"logprobs\":true,"));
    assert_non_null(strstr(fast, ",\"top_logprobs\":5,\"top_p\":0.1}"));
    free(plain);
    free(fast);
    free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_logprobs_gives_nothing),
        cmocka_unit_test(verdict_split_over_three_tokens),
        cmocka_unit_test(verdict_merged_with_neighbours),
        cmocka_unit_test(options_two_three_four),
        cmocka_unit_test(verdict_token_absent),
        cmocka_unit_test(thinking_is_not_the_verdict),
        cmocka_unit_test(json_field_verdict),
        cmocka_unit_test(answer_tag_and_numbers),
        cmocka_unit_test(grades_expected_value),
        cmocka_unit_test(yes_no),
        cmocka_unit_test(persona_preferred),
        cmocka_unit_test(reply_keeps_token_logprobs),
        cmocka_unit_test(request_asks_for_logprobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
