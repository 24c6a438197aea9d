/*
** test_prompt.c -- prompt templates (prompt.c): the built-ins in every option mode, user
** template files, exact rendering, and the exact "path:line: ..." message of each bad template.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arbiter.h"

static char tmpdir[64];

static int make_tmpdir(void **state)
{
    (void)state;
    strcpy(tmpdir, "/tmp/arb_test_prompt_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to a file named name in the temp dir; returns its path (static buffer). */
static const char *write_template(const char *name, const char *text)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(text, 1, strlen(text), f);
    fclose(f);
    return path;
}

/* Loads text as a template file and expects ARB_PARSE with message "<path>:<rest>". */
static void expect_bad(const char *text, const char *rest)
{
    const char *path = write_template("bad.txt", text);
    arb_template *t = (arb_template *)1;
    char *err = NULL;
    assert_int_equal(arb_template_load(path, &t, &err), ARB_PARSE);
    assert_null(t);
    assert_non_null(err);
    char expect[512];
    snprintf(expect, sizeof expect, "%s:%s", path, rest);
    assert_string_equal(err, expect);
    arb_free(err);
}

static arb_prompt_vars sample_vars(int options)
{
    arb_prompt_vars v = {.question = "What is 2+2?", .answer1 = "It is 4.", .answer2 = "It is 5.",
                         .reference = "2+2=4", .language = "en", .options = options};
    return v;
}

/* Renders built-in template name with v; returns the user message (caller frees) and checks
** that no placeholder is left and that the answers are delimited as the simulator expects. */
static char *render_builtin(const char *name, const arb_prompt_vars *v, char **sys_out)
{
    arb_template *t = NULL;
    char *err = NULL;
    assert_int_equal(arb_template_load(name, &t, &err), ARB_OK);
    char *sys = NULL, *user = NULL;
    assert_int_equal(arb_template_render(t, v, &sys, &user), ARB_OK);
    arb_template_destroy(t);
    assert_non_null(sys);
    assert_null(strpbrk(user, "{}"));
    assert_null(strpbrk(sys, "{}"));
    assert_non_null(strstr(user, "\n[ANSWER 1 START]\nIt is 4.\n[ANSWER 1 END]\n"));
    assert_non_null(strstr(user, "\n[ANSWER 2 START]\nIt is 5.\n[ANSWER 2 END]\n"));
    *sys_out = sys;
    return user;
}

/* The debate and discussion templates carry what METHODS §2.5 and §7 ask for, in the
** conventions the simulated judge reads (sim.c): the earlier agents' replies in delimited
** blocks, "must disagree" only in the hard variant, "only 1 or 2" and no [[X]] in discussion. */
static void multi_agent_templates(void **state)
{
    (void)state;
    arb_prompt_vars v = {.question = "What is 2+2?", .answer1 = "It is 4.", .answer2 = "It is 5.",
                         .options = 4, .agent1 = "First review.\n[[A]]",
                         .agent2 = "Second review.\n[[B]]"};
    char *sys, *user;
    for (int hard = 0; hard <= 1; hard++) {
        user = render_builtin(hard ? "debate-hard" : "debate-soft", &v, &sys);
        assert_non_null(strstr(
            user, "\n[AGENT 1 REVIEW START]\nFirst review.\n[[A]]\n[AGENT 1 REVIEW END]\n"));
        assert_null(strstr(user, "[AGENT 2 REVIEW START]"));
        assert_int_equal(strstr(user, "must disagree") || strstr(sys, "must disagree"), hard);
        assert_non_null(strstr(user, "[[A]], [[B]], [[C]] or [[D]]"));
        arb_free(sys);
        arb_free(user);
    }
    user = render_builtin("debate-judge", &v, &sys);
    assert_non_null(strstr(user, "\n[AGENT 1 REVIEW START]\nFirst review.\n[[A]]\n"));
    assert_non_null(
        strstr(user, "\n[AGENT 2 REVIEW START]\nSecond review.\n[[B]]\n[AGENT 2 REVIEW END]"));
    arb_free(sys);
    arb_free(user);

    v.options = 2;
    user = render_builtin("discuss-initial", &v, &sys);
    assert_non_null(strstr(user, "only 1 or 2"));
    assert_null(strstr(user, "[["));
    assert_non_null(strstr(user, "Unsupported information"));
    assert_non_null(strstr(user, "Core information"));
    assert_non_null(strstr(user, "Coherence"));
    arb_free(sys);
    arb_free(user);

    v.self = "Reviewer B";
    v.other = "Reviewer A";
    v.reviews = "[INITIAL REVIEW BY REVIEWER A START]\nx\n1\n[INITIAL REVIEW BY REVIEWER A END]";
    v.discussion = "[TURN 1 BY REVIEWER A START]\ny\n1\n[TURN 1 BY REVIEWER A END]";
    user = render_builtin("discuss-turn", &v, &sys);
    assert_non_null(strstr(sys, "You are Reviewer B"));
    assert_non_null(strstr(user, "You are Reviewer B, discussing with Reviewer A."));
    assert_non_null(strstr(user, "\n[INITIAL REVIEW BY REVIEWER A START]\nx\n1\n"));
    assert_non_null(strstr(user, "\n[TURN 1 BY REVIEWER A START]\ny\n1\n"));
    assert_non_null(strstr(user, "only 1 or 2"));
    assert_null(strstr(user, "[["));
    arb_free(sys);
    arb_free(user);
}

static void builtin_names(void **state)
{
    (void)state;
    const char *const *names = arb_template_builtin_names();
    const char *expect[] = {"I",           "II",           "II-fact",      "II-fact-reason",
                            "II-reason",   "debate-hard",  "debate-judge", "debate-soft",
                            "discuss-initial", "discuss-turn", "persona-1", "persona-2",
                            "persona-panel-1", "persona-panel-2",
                            "pointwise-grade-general-explain", "pointwise-grade-general-plain",
                            "pointwise-grade-specific-explain", "pointwise-grade-specific-plain",
                            "pointwise-yesno-general-explain", "pointwise-yesno-general-plain",
                            "pointwise-yesno-specific-explain", "pointwise-yesno-specific-plain",
                            NULL};
    size_t i;
    for (i = 0; expect[i]; i++) {
        assert_non_null(names[i]);
        assert_string_equal(names[i], expect[i]);
    }
    assert_null(names[i]);
    assert_ptr_equal(arb_template_builtin_names(), names);
}

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* Every built-in in every mode: delimiters on their own lines around the values, the option
** text of the mode, no braces left over, and the reference only in the +fact prompts. */
static void builtins_render(void **state)
{
    (void)state;
    static const char *const lists[] = {"[[A]] or [[B]]", "[[A]], [[B]] or [[C]]",
                                        "[[A]], [[B]], [[C]] or [[D]]"};
    static const char *const letters[] = {"A or B", "A, B or C", "A, B, C or D"};
    for (const char *const *name = arb_template_builtin_names(); *name; name++) {
        if ((*name)[0] != 'I') continue; /* the multi-agent ones: multi_agent_templates */
        arb_template *t = NULL;
        char *err = NULL;
        assert_int_equal(arb_template_load(*name, &t, &err), ARB_OK);
        assert_null(err);
        assert_string_equal(arb_template_name(t), *name);
        assert_null(arb_template_json_field(t));
        int fact = strstr(*name, "fact") != NULL;
        assert_int_equal(arb_template_uses(t, "reference"), fact);
        assert_true(arb_template_uses(t, "question"));
        assert_true(arb_template_uses(t, "answer1"));
        assert_true(arb_template_uses(t, "answer2"));
        assert_true(arb_template_uses(t, "option_rules"));
        assert_false(arb_template_uses(t, "language"));
        for (int options = 2; options <= 4; options++) {
            arb_prompt_vars v = sample_vars(options);
            char *sys = NULL, *user = NULL;
            assert_int_equal(arb_template_render(t, &v, &sys, &user), ARB_OK);
            assert_non_null(sys);
            assert_non_null(user);
            assert_null(strpbrk(sys, "{}"));
            assert_null(strpbrk(user, "{}"));
            assert_true(contains(user, "\n[QUESTION START]\nWhat is 2+2?\n[QUESTION END]\n"));
            assert_true(contains(user, "\n[ANSWER 1 START]\nIt is 4.\n[ANSWER 1 END]\n"));
            assert_true(contains(user, "\n[ANSWER 2 START]\nIt is 5.\n[ANSWER 2 END]\n"));
            assert_int_equal(contains(user, "\n[REFERENCE START]\n2+2=4\n[REFERENCE END]\n"),
                             fact);
            assert_true(contains(user, "\nA: answer 1 is better"));
            assert_true(contains(user, "\nB: answer 2 is better"));
            assert_int_equal(contains(user, "\nC: "), options >= 3);
            assert_int_equal(contains(user, "\nD: both answers are bad"), options == 4);
            if (strcmp(*name, "I") == 0) {
                assert_true(contains(user, letters[options - 2]));
                assert_false(contains(user, "[[A]]"));
            } else {
                assert_true(contains(user, lists[options - 2]));
            }
            if (options < 4) assert_false(contains(user, "[[D]]"));
            arb_free(sys);
            arb_free(user);
        }
        arb_template_destroy(t);
    }
}

/* A user template: settings, both sections, CRLF, literal braces, every placeholder. */
/* The eight pointwise templates (METHODS §8) carry the lines the simulated judge and the
** parser rely on (POINTWISE contract): "Evaluation language: <code>" on its own line, the
** answer between [ANSWER START] and [ANSWER END] lines, the task block, the value phrase of
** the mode, the <result> format with a justification only when explaining, and, for the
** specific rubric, every grade 1..5 described (grade) or the correct/incorrect criteria. */
static void pointwise_templates(void **state)
{
    (void)state;
    static const char *const kinds[] = {"yesno", "grade"};
    static const char *const rubrics[] = {"general", "specific"};
    static const char *const explains[] = {"explain", "plain"};
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < 2; r++)
            for (int e = 0; e < 2; e++) {
                char name[64];
                snprintf(name, sizeof name, "pointwise-%s-%s-%s", kinds[k], rubrics[r],
                         explains[e]);
                arb_template *t = NULL;
                assert_int_equal(arb_template_load(name, &t, NULL), ARB_OK);
                assert_true(arb_template_uses(t, "answer"));
                assert_true(arb_template_uses(t, "task_input"));
                assert_true(arb_template_uses(t, "language"));
                assert_false(arb_template_uses(t, "answer1"));
                assert_false(arb_template_uses(t, "option_rules"));
                arb_prompt_vars v = {.options = 2, .answer = "Paris is the capital.",
                                     .language = "fr", .task = "qa",
                                     .task_input = "[QUESTION START]\nQ\n[QUESTION END]"};
                char *sys = NULL, *user = NULL;
                assert_int_equal(arb_template_render(t, &v, &sys, &user), ARB_OK);
                assert_non_null(sys);
                assert_null(strpbrk(user, "{}"));
                assert_true(contains(user, "\nEvaluation language: fr\n"));
                assert_true(
                    contains(user, "\n[ANSWER START]\nParis is the capital.\n[ANSWER END]\n"));
                assert_true(contains(user, "\n[QUESTION START]\nQ\n[QUESTION END]\n"));
                if (k == 0) {
                    assert_true(contains(
                        user, "<answer>correct</answer> or <answer>incorrect</answer>"));
                    assert_false(contains(user, "<answer>N</answer>"));
                } else {
                    assert_true(contains(user, "<answer>N</answer> with N from 1 to 5"));
                    assert_false(contains(user, "<answer>correct</answer>"));
                }
                assert_int_equal(contains(user, "<justification>"), e == 0);
                assert_true(contains(user, e == 0 ? "<result><justification>"
                                                  : "<result><answer>...</answer></result>"));
                for (int g = 1; g <= 5; g++) {
                    char line[8];
                    snprintf(line, sizeof line, "\n%d: ", g);
                    assert_int_equal(contains(user, line), r == 1 && k == 1);
                }
                assert_int_equal(contains(user, "correct only when ALL"), r == 1 && k == 0);
                assert_int_equal(contains(user, "incorrect when ANY"), r == 1 && k == 0);
                /* the prompt's own example phrase is an echo for the parser, never a verdict */
                assert_int_equal(arb_pointwise_extract(user, strlen(user),
                                                       k ? ARB_POINTWISE_GRADE
                                                         : ARB_POINTWISE_YESNO,
                                                       NULL),
                                 -1);
                arb_free(sys);
                arb_free(user);
                arb_template_destroy(t);
            }
}


static void user_template_exact(void **state)
{
    (void)state;
    const char *path = write_template(
        "mine.txt",
        "#! description: my own\r\n"
        "#!verdict_json_field :  verdict  \r\n"
        "\r\n"
        "=== system ===\r\n"
        "\r\n"
        "Judge in {language}.\r\n"
        "  === user ===  \n"
        "\n"
        "Q={question} R={reference}\n"
        "1={answer1}|2={answer2}\n"
        "{option_list} / {option_letters}\n"
        "{{\"verdict\": \"X\"}} {{{question}}}\n"
        "\n\n");
    arb_template *t = NULL;
    char *err = NULL;
    assert_int_equal(arb_template_load(path, &t, &err), ARB_OK);
    assert_string_equal(arb_template_name(t), path);
    assert_string_equal(arb_template_json_field(t), "verdict");
    assert_true(arb_template_uses(t, "language"));
    assert_false(arb_template_uses(t, "option_rules"));
    assert_false(arb_template_uses(t, "nonsense"));
    assert_false(arb_template_uses(t, NULL));

    arb_prompt_vars v = {.question = "q?", .answer1 = "one", .answer2 = "two", .language = "fr",
                         .options = 3};
    char *sys = NULL, *user = NULL;
    assert_int_equal(arb_template_render(t, &v, &sys, &user), ARB_OK);
    assert_string_equal(sys, "Judge in fr.");
    assert_string_equal(user, "Q=q? R=\n"
                              "1=one|2=two\n"
                              "[[A]], [[B]] or [[C]] / A, B or C\n"
                              "{\"verdict\": \"X\"} {q?}");
    arb_free(sys);
    arb_free(user);
    arb_template_destroy(t);
}

/* Without section lines the whole body is the user message and there is no system part. */
static void no_sections(void **state)
{
    (void)state;
    const char *path = write_template("plain.txt", "Compare {answer1} and {answer2}.\n");
    arb_template *t = NULL;
    assert_int_equal(arb_template_load(path, &t, NULL), ARB_OK);
    arb_prompt_vars v = {0};
    v.options = 2;
    char *sys = (char *)1, *user = NULL;
    assert_int_equal(arb_template_render(t, &v, &sys, &user), ARB_OK);
    assert_null(sys);
    assert_string_equal(user, "Compare  and .");
    arb_free(user);

    /* Options outside 2..4 and NULL arguments. */
    v.options = 5;
    assert_int_equal(arb_template_render(t, &v, &sys, &user), ARB_INVALID);
    assert_null(sys);
    assert_null(user);
    v.options = 1;
    assert_int_equal(arb_template_render(t, &v, &sys, &user), ARB_INVALID);
    assert_int_equal(arb_template_render(t, NULL, &sys, &user), ARB_INVALID);
    assert_int_equal(arb_template_render(NULL, &v, &sys, &user), ARB_INVALID);
    arb_template_destroy(t);
    arb_template_destroy(NULL);

    /* An empty system section counts as none. */
    path = write_template("emptysys.txt", "=== system ===\n\n=== user ===\nhi\n");
    assert_int_equal(arb_template_load(path, &t, NULL), ARB_OK);
    v.options = 4;
    sys = (char *)1;
    assert_int_equal(arb_template_render(t, &v, &sys, &user), ARB_OK);
    assert_null(sys);
    assert_string_equal(user, "hi");
    arb_free(user);
    arb_template_destroy(t);
}

static void bad_templates(void **state)
{
    (void)state;
    expect_bad("#! description: x\n\nHello {foo}\n",
               "3: unknown placeholder {foo} (known: question, answer1, answer2, reference, "
               "language, option_list, option_letters, option_rules, agent1, agent2, self, "
               "other, reviews, discussion, answer, task, task_input, scenario, response, identity, "
               "candidate1, candidate2, identity1, identity2, metrics_json, range)");
    expect_bad("#! colour: red\n{question}", "1: unknown setting \"colour\" (known: description, "
                                             "verdict_json_field, response_format)");
    expect_bad("#! description\n{question}", "1: malformed setting (expected \"#! key: value\")");
    expect_bad("#!: x\n{question}", "1: malformed setting (expected \"#! key: value\")");
    expect_bad("#! description: a\n#! description: b\n{question}",
               "2: setting \"description\" given twice");
    expect_bad("#! verdict_json_field:  \n{question}",
               "1: setting \"verdict_json_field\" needs a value");
    expect_bad("a\nb } c\n", "2: unbalanced '}' (write }} for a literal brace)");
    expect_bad("a {question\n}", "1: unbalanced '{' (write {{ for a literal brace)");
    expect_bad("x {} y", "1: unbalanced '{' (write {{ for a literal brace)");
    expect_bad("say {\"verdict\": \"A\"}", "1: unbalanced '{' (write {{ for a literal brace)");
    expect_bad("x {", "1: unbalanced '{' (write {{ for a literal brace)");
    expect_bad("\nintro\n=== user ===\n{question}", "2: text before the first section line");
    expect_bad("=== user ===\na\n=== assistant ===\nb",
               "3: unknown section \"=== assistant ===\" (known: system, user)");
    expect_bad("=== user ===\na\n=== user ===\nb", "3: section \"=== user ===\" given twice");
    expect_bad("=== system ===\nbe fair\n", "2: the template has no user message");
    expect_bad("=== system ===\nbe fair\n=== user ===\n  \n\n",
               "5: the template has no user message");
    expect_bad("", "1: the template has no user message");
    expect_bad("ok\nbad \xC3(\n", "2: invalid UTF-8 or NUL byte");
}

/* "#! response_format": the json_schema object kept as canonical JSON; every bad form refused
** with its line. */
static void response_format_setting(void **state)
{
    (void)state;
    const char *path = write_template(
        "rf.txt", "#! verdict_json_field: verdict\n"
                  "#! response_format: { \"strict\": true, \"name\": \"pair_verdict\",  \"schema\": "
                  "{\"type\": \"object\", \"properties\": {\"verdict\": {\"enum\": [\"A\", \"B\"]}, "
                  "\"reason\": {\"type\": \"string\"}}}}\n"
                  "{question}\n[ANSWER 1 START]\n{answer1}\n[ANSWER 1 END]\n"
                  "[ANSWER 2 START]\n{answer2}\n[ANSWER 2 END]\n");
    arb_template *t = NULL;
    char *err = NULL;
    assert_int_equal(arb_template_load(path, &t, &err), ARB_OK);
    assert_string_equal(arb_template_response_format(t),
                        "{\"name\":\"pair_verdict\",\"schema\":{\"properties\":{\"reason\":"
                        "{\"type\":\"string\"},\"verdict\":{\"enum\":[\"A\",\"B\"]}},\"type\":"
                        "\"object\"},\"strict\":true}");
    arb_template_destroy(t);
    assert_null(arb_template_response_format(NULL));
    assert_int_equal(arb_template_load("II-reason", &t, NULL), ARB_OK);
    assert_null(arb_template_response_format(t)); /* built-ins ask for none */
    arb_template_destroy(t);

    const char *pair = "\n{answer1} {answer2}";
    char text[512];
#define RF_BAD(setting, rest)                                                                   \
    do {                                                                                        \
        snprintf(text, sizeof text, "#! verdict_json_field: verdict\n#! response_format: %s%s",  \
                 setting, pair);                                                                \
        expect_bad(text, rest);                                                                 \
    } while (0)
    RF_BAD("[1]", "2: setting \"response_format\": expected a JSON object {\"name\": ..., "
                  "\"schema\": {...}} (optional \"strict\", \"description\") on one line");
    RF_BAD("{\"name\": \"x\"", "2: setting \"response_format\": expected a JSON object {\"name\": "
                               "..., \"schema\": {...}} (optional \"strict\", \"description\") on "
                               "one line; JSON: '}' expected near end of file");
    RF_BAD("{\"name\": \"a b\", \"schema\": {}}",
           "2: setting \"response_format\": \"name\" must be 1 to 64 letters, digits, '_' or '-'");
    RF_BAD("{\"name\": \"v\", \"schema\": true}",
           "2: setting \"response_format\": \"schema\" must be a JSON object (a JSON Schema)");
    RF_BAD("{\"name\": \"v\", \"schema\": {}, \"strict\": 1}",
           "2: setting \"response_format\": \"strict\" must be true or false and \"description\" "
           "a string");
    RF_BAD("{\"name\": \"v\", \"schema\": {}, \"type\": \"json_schema\"}",
           "2: setting \"response_format\": unknown key \"type\"; expected a JSON object {\"name\": "
           "..., \"schema\": {...}} (optional \"strict\", \"description\") on one line");
    RF_BAD("{\"name\": \"v\", \"schema\": {\"properties\": {\"answer\": {}}}}",
           "2: setting \"response_format\": the schema's properties have no \"verdict\" (the "
           "verdict_json_field)");
#undef RF_BAD
    expect_bad("#! response_format: {\"name\": \"v\", \"schema\": {}}\n{answer1} {answer2}",
               "1: setting \"response_format\" needs \"#! verdict_json_field: NAME\" in a template "
               "that judges a pair: the verdict is read from that JSON field");
    expect_bad("#! response_format: {\"name\": \"v\", \"schema\": {}}\n"
               "#! response_format: {\"name\": \"v\", \"schema\": {}}\n{question}",
               "2: setting \"response_format\" given twice");
}

static void not_found(void **state)
{
    (void)state;
    arb_template *t = (arb_template *)1;
    char *err = NULL;
    assert_int_equal(arb_template_load("III", &t, &err), ARB_NOTFOUND);
    assert_null(t);
    assert_string_equal(err, "unknown template \"III\": not a built-in (I, II, II-fact, "
                             "II-fact-reason, II-reason, debate-hard, debate-judge, debate-soft, "
                             "discuss-initial, discuss-turn, persona-1, persona-2, persona-panel-1, "
                             "persona-panel-2, "
                             "pointwise-grade-general-explain, "
                             "pointwise-grade-general-plain, pointwise-grade-specific-explain, "
                             "pointwise-grade-specific-plain, pointwise-yesno-general-explain, "
                             "pointwise-yesno-general-plain, pointwise-yesno-specific-explain, "
                             "pointwise-yesno-specific-plain) nor a file");
    arb_free(err);
    assert_int_equal(arb_template_load("./I", &t, &err), ARB_NOTFOUND); /* a path, not "I" */
    arb_free(err);
    assert_int_equal(arb_template_load("", &t, &err), ARB_INVALID);
    arb_free(err);
    assert_int_equal(arb_template_load("I", NULL, NULL), ARB_INVALID);
    /* A directory exists but cannot be read as a template. */
    assert_int_equal(arb_template_load(tmpdir, &t, &err), ARB_IO);
    assert_non_null(err);
    arb_free(err);
}

/* Rendering is cheap: the harness renders well over 10,000 prompts per second. */
static void render_speed(void **state)
{
    (void)state;
    arb_template *t = NULL;
    assert_int_equal(arb_template_load("II-fact-reason", &t, NULL), ARB_OK);
    arb_prompt_vars v = sample_vars(4);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    size_t total = 0;
    for (int i = 0; i < 20000; i++) {
        char *sys, *user;
        assert_int_equal(arb_template_render(t, &v, &sys, &user), ARB_OK);
        total += strlen(user);
        arb_free(sys);
        arb_free(user);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double seconds = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    assert_true(total > 20000u * 1000u);
    assert_true(seconds < 2.0); /* 20,000 renders; generous for sanitizer builds */
    arb_template_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(builtin_names),
        cmocka_unit_test(multi_agent_templates),
        cmocka_unit_test(builtins_render),
        cmocka_unit_test(pointwise_templates),
        cmocka_unit_test(user_template_exact),
        cmocka_unit_test(no_sections),
        cmocka_unit_test(bad_templates),
        cmocka_unit_test(response_format_setting),
        cmocka_unit_test(not_found),
        cmocka_unit_test(render_speed),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
