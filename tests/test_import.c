/*
** test_import.c -- the importers (import.c, METHODS §6) on the fixtures under
** tests/data/import: the PRD Vicuna80 layout (prd-mini: two LLM reviewers, one without the
** "threeclass" suffix, a hyphen-spelled second run that must be ignored, a -1 score that must
** be skipped, human files with several annotators and a guanaco pair), a Chatbot Arena JSON
** array with conv_metadata, and FastChat pairwise judgments (both games, turn 2, "error",
** single-grade pairs). Every battle is checked exactly, then every refusal with its
** path:line: field message, and that a failed import leaves the set as it was.
**
** Run one test alone with ARB_TEST=<name>.
*/
#include "internal.h"
#include "testutil.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

typedef struct fixture {
    char data[512]; /* tests/data/import */
    char dir[128];  /* scratch */
    char path[640];
    arb_battles *b;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    const char *src = getenv("ARB_SOURCE_DIR");
    snprintf(f->data, sizeof f->data, "%s/tests/data/import", src ? src : ".");
    if (arb_test_make_dir("test_import", f->dir, sizeof f->dir) || !(f->b = arb_battles_create())) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f) return 0;
    arb_battles_destroy(f->b);
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

/* f->path = <scratch>/<name>; creates the folders on the way and writes text when not NULL. */
static const char *scratch(fixture *f, const char *name, const char *text)
{
    assert_non_null(arb_test_scratch(f->dir, name, text, f->path, sizeof f->path));
    return f->path;
}

static void expect(const arb_battles *b, size_t k, const char *q, const char *i, const char *j,
                   const char *r, int s)
{
    arb_battle got = arb_battles_at(b, k);
    if (!got.question || strcmp(got.question, q) || strcmp(got.model_i, i) ||
        strcmp(got.model_j, j) || strcmp(got.reviewer, r) || got.s != s)
        fail_msg("battle %zu: got (%s, %s, %s, %s, %d), expected (%s, %s, %s, %s, %d)", k,
                 got.question ? got.question : "-", got.model_i ? got.model_i : "-",
                 got.model_j ? got.model_j : "-", got.reviewer ? got.reviewer : "-", got.s, q, i,
                 j, r, s);
}

/* ---- good imports ---------------------------------------------------------------------------- */

static void prd_fixture(void **state)
{
    fixture *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/prd-mini", f->data);
    assert_int_equal(arb_battles_import(f->b, "prd", path), ARB_OK);
    /* folders in name order (gpt4, human, vicuna-13b), files in name order, lines in order;
    ** score 1 = first (X) better = -1, 2 = +1, 3 = tie; the -1 score is skipped; the
    ** hyphen-spelled file and LICENSE are ignored */
    assert_int_equal(arb_battles_count(f->b), 12);
    assert_int_equal(arb_battles_skipped(f->b), 1);
    expect(f->b, 0, "1", "bard", "gpt4", "gpt4", -1);
    expect(f->b, 1, "2", "bard", "gpt4", "gpt4", 1);
    expect(f->b, 2, "3", "bard", "gpt4", "gpt4", 0);
    expect(f->b, 3, "1", "gpt4", "bard", "gpt4", 1);
    expect(f->b, 4, "3", "gpt4", "bard", "gpt4", -1);
    expect(f->b, 5, "1", "bard", "gpt4", "human", -1); /* three annotators on question 1 */
    expect(f->b, 6, "1", "bard", "gpt4", "human", -1);
    expect(f->b, 7, "1", "bard", "gpt4", "human", 0);
    expect(f->b, 8, "2", "bard", "gpt4", "human", 1);
    expect(f->b, 9, "1", "guanaco-7b", "bard", "human", 1); /* kept: a real human judgment */
    expect(f->b, 10, "1", "bard", "vicuna-13b", "vicuna-13b", 0); /* no threeclass suffix */
    expect(f->b, 11, "2", "bard", "vicuna-13b", "vicuna-13b", -1);
    assert_int_equal(f->b->reviewers.n, 3);
    /* styles from generations/answer_<model>.jsonl: bard's answer to 1 is "## Plan\n- one\n
    ** - two\n**bold** héllo" (34 code points, 1 header, 2 list items, 1 bold span); gpt4's is
    ** "short"; answers that are not there (gpt4 on 2, vicuna-13b) stay unknown */
    arb_battle b0 = arb_battles_at(f->b, 0);
    assert_true(b0.style_i[ARB_STYLE_LENGTH] == 34 && b0.style_i[ARB_STYLE_HEADERS] == 1 &&
                b0.style_i[ARB_STYLE_LISTS] == 2 && b0.style_i[ARB_STYLE_BOLD] == 1);
    assert_true(b0.style_j[ARB_STYLE_LENGTH] == 5 && b0.style_j[ARB_STYLE_LISTS] == 0);
    arb_battle b1 = arb_battles_at(f->b, 1);
    assert_true(b1.style_i[ARB_STYLE_LISTS] == 2 && isnan(b1.style_j[ARB_STYLE_LENGTH]));
    assert_true(isnan(arb_battles_at(f->b, 10).style_j[ARB_STYLE_LENGTH]));
    /* a trailing slash is the same folder; importing appends and adds the skipped count */
    strcat(path, "/");
    assert_int_equal(arb_battles_import(f->b, "prd", path), ARB_OK);
    assert_int_equal(arb_battles_count(f->b), 24);
    assert_int_equal(arb_battles_skipped(f->b), 2);
    expect(f->b, 23, "2", "bard", "vicuna-13b", "vicuna-13b", -1);
}

static void arena_fixture(void **state)
{
    fixture *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/arena.json", f->data);
    assert_int_equal(arb_battles_import(f->b, "arena", path), ARB_OK);
    assert_int_equal(arb_battles_count(f->b), 4);
    assert_int_equal(arb_battles_skipped(f->b), 0);
    expect(f->b, 0, "a1f3", "gpt-4", "claude-v1", "arena_user_1", -1);
    expect(f->b, 1, "17", "vicuna-13b", "gpt-4", "arena_user_2", 1);
    expect(f->b, 2, "c3", "claude-v1", "vicuna-13b", "", 0);
    expect(f->b, 3, "d4", "gpt-4", "vicuna-13b", "arena_user_1", 0);
    assert_int_equal(arb_battles_at(f->b, 3).both_bad, 1);
    assert_int_equal(arb_battles_at(f->b, 2).both_bad, 0);
    /* conv_metadata: tokens; headers h1..h6, lists ordered + unordered, bold ** + __ summed */
    arb_battle b0 = arb_battles_at(f->b, 0), b1 = arb_battles_at(f->b, 1);
    const double want_i[] = {310, 3, 5, 4}, want_j[] = {254, 0, 5, 1};
    for (int k = 0; k < ARB_STYLE__COUNT; k++) {
        assert_true(b0.style_i[k] == want_i[k]);
        assert_true(b0.style_j[k] == want_j[k]);
        assert_true(isnan(b1.style_i[k]) && isnan(b1.style_j[k]));
    }
    /* arena JSONL works too, and so does an empty array */
    const char *jsonl = scratch(f, "arena.jsonl",
                                "{\"question_id\": 1, \"model_a\": \"x\", \"model_b\": \"y\", "
                                "\"winner\": \"model_b\"}\n");
    assert_int_equal(arb_battles_import(f->b, "arena", jsonl), ARB_OK);
    expect(f->b, 4, "1", "x", "y", "", 1);
    assert_int_equal(arb_battles_import(f->b, "arena", scratch(f, "empty.json", " [ ]\n")), ARB_OK);
    assert_int_equal(arb_battles_count(f->b), 5);
}

static void fastchat_fixture(void **state)
{
    fixture *f = *state;
    char path[600];
    snprintf(path, sizeof path, "%s/fastchat_pair.jsonl", f->data);
    assert_int_equal(arb_battles_import(f->b, "fastchat", path), ARB_OK);
    /* game 1 shows model_1 first; game 2 shows model_2 first and its winner names the model */
    assert_int_equal(arb_battles_count(f->b), 7);
    assert_int_equal(arb_battles_skipped(f->b), 2); /* the two "error" games */
    const char *v = "vicuna-13b-v1.3";
    expect(f->b, 0, "81", "gpt-4", v, "gpt-4", -1);   /* g1 model_1 */
    expect(f->b, 1, "81", v, "gpt-4", "gpt-4", 1);    /* g2 model_1: j (model_1) better */
    expect(f->b, 2, "81#2", "gpt-4", v, "gpt-4", 0);  /* turn 2, g1 tie */
    expect(f->b, 3, "81#2", v, "gpt-4", "gpt-4", -1); /* g2 model_2: i (model_2) better */
    expect(f->b, 4, "82", "gpt-4", "alpaca-13b", "gpt-4", -1); /* g1 error skipped */
    expect(f->b, 5, "83", "llama-13b", v, "claude-v1", 1);     /* g2 error skipped */
    expect(f->b, 6, "84", "gpt-4", "llama-13b", "gpt-4", -1);  /* single grades: one battle */
}

/* ---- refusals -------------------------------------------------------------------------------- */

/* Imports kind from path and expects st with msg in the message and the set unchanged. */
static void refused(fixture *f, const char *kind, const char *path, arb_status st,
                    const char *msg)
{
    size_t n = arb_battles_count(f->b), models = f->b->models.n, skipped = f->b->skipped;
    arb_status got = arb_battles_import(f->b, kind, path);
    if (got != st || !strstr(arb_battles_errmsg(f->b), msg))
        fail_msg("%s %s: got %d \"%s\", expected %d \"%s\"", kind, path, (int)got,
                 arb_battles_errmsg(f->b), (int)st, msg);
    assert_int_equal(arb_battles_count(f->b), n);
    assert_int_equal(f->b->models.n, models);
    assert_int_equal(f->b->skipped, skipped);
}

static void prd_refusals(void **state)
{
    fixture *f = *state;
    arb_battle keep = arb_battle_init();
    keep.question = "q";
    keep.model_i = "a";
    keep.model_j = "b";
    assert_int_equal(arb_battles_add(f->b, &keep), ARB_OK);
    char root[256], file[700];
    refused(f, "prd", scratch(f, "nothing", NULL), ARB_NOTFOUND, "nothing: cannot open: ");
    refused(f, "prd", scratch(f, "plain.txt", "x"), ARB_INVALID,
            "plain.txt: expected the PRD Vicuna80 folder");
    scratch(f, "empty/LICENSE", "MIT");
    snprintf(root, sizeof root, "%s/empty", f->dir);
    refused(f, "prd", root, ARB_NOTFOUND, "empty: no ratings-<reviewer> folders");

    /* a good file first, then a bad line: nothing of the folder is kept */
    static const char good[] = "{\"question_id\": 1, \"score\": 1}\n{\"question_id\": 2, "
                               "\"score\": -1}\n";
    scratch(f, "p1/ratings-gpt4/answer_aa-vs-answer_bb-gpt4-reviewer_threeclass.jsonl", good);
    snprintf(file, sizeof file, "%s/p1/ratings-gpt4/answer_bb-vs-answer_aa-gpt4-reviewer_"
             "threeclass.jsonl", f->dir);
    snprintf(root, sizeof root, "%s/p1", f->dir);
    static const struct {
        const char *lines;
        const char *msg;
    } cases[] = {
        {"{\"question_id\": 1, \"score\": 1}\n{\"question_id\": 2, \"score\": 5}\n",
         "threeclass.jsonl:2: field \"score\": expected 1 (first answer better), 2 (second "
         "better), 3 (tie) or -1 (unparseable), got number 5"},
        {"\n\n{\"question_id\": 2, \"score\": \"1\"}\n", ":3: field \"score\": expected 1 "
                                                          "(first answer better)"},
        {"{\"question_id\": 2, \"score\": 1.0}\n", ":1: field \"score\": expected"},
        {"{\"score\": 1}\n", ":1: field \"question_id\": expected an integer or a non-empty "
                             "string, got missing"},
        {"{\"question_id\": [2], \"score\": 1}\n", ":1: field \"question_id\": expected an "
                                                   "integer or a non-empty string, got array"},
        {"{\"question_id\": 2, \"score\": 1\n", ":1: invalid JSON"},
        {"[{\"question_id\": 2, \"score\": 1}]\n", ":1: expected a JSON object (one battle), got "
                                                   "array"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        FILE *out = fopen(file, "w");
        assert_non_null(out);
        fputs(cases[k].lines, out);
        fclose(out);
        refused(f, "prd", root, ARB_PARSE, cases[k].msg);
        assert_non_null(strstr(arb_battles_errmsg(f->b), file)); /* the whole path */
    }
    remove(file);
    assert_int_equal(arb_battles_import(f->b, "prd", root), ARB_OK); /* the good file alone */
    assert_int_equal(arb_battles_count(f->b), 2);
    assert_int_equal(arb_battles_skipped(f->b), 1);

    /* file names that do not fit the layout */
    scratch(f, "p2/ratings-gpt4/answer_aa-vs-answer_bb-claude-reviewer_threeclass.jsonl", good);
    snprintf(root, sizeof root, "%s/p2", f->dir);
    refused(f, "prd", root, ARB_PARSE,
            "answer_aa-vs-answer_bb-claude-reviewer_threeclass.jsonl: file name: expected "
            "answer_<X>-vs-answer_<Y>-gpt4-reviewer_threeclass.jsonl");
    scratch(f, "p3/ratings-gpt4/answer_aa-vs-answer_aa-gpt4-reviewer.jsonl", good);
    snprintf(root, sizeof root, "%s/p3", f->dir);
    refused(f, "prd", root, ARB_PARSE, "file name: both answers are \"aa\"");
    scratch(f, "p4/ratings-gpt4/answer_-vs-answer_bb-gpt4-reviewer.jsonl", good);
    snprintf(root, sizeof root, "%s/p4", f->dir);
    refused(f, "prd", root, ARB_PARSE, "file name: expected");
    /* ignored: the hyphen spelling, other extensions; a ratings- file (not folder) is no folder */
    scratch(f, "p5/ratings-gpt4/answer-aa-vs-answer-bb-gpt4-reviewer-threeclass.jsonl", "junk");
    scratch(f, "p5/ratings-gpt4/notes.txt", "junk");
    scratch(f, "p5/ratings-x", "junk");
    snprintf(root, sizeof root, "%s/p5", f->dir);
    assert_int_equal(arb_battles_import(f->b, "prd", root), ARB_OK);
    assert_int_equal(arb_battles_count(f->b), 2);
}

/* Writes format with each '@' replaced by one into out. */
static void expand(char *out, size_t size, const char *format, const char *one)
{
    size_t n = 0;
    for (const char *p = format; *p; p++) {
        const char *piece = *p == '@' ? one : p;
        size_t len = *p == '@' ? strlen(one) : 1;
        assert_true(n + len < size);
        memcpy(out + n, piece, len);
        n += len;
    }
    out[n] = '\0';
}

static void arena_refusals(void **state)
{
    fixture *f = *state;
    static const char one[] = "{\"question_id\": 1, \"model_a\": \"x\", \"model_b\": \"y\", "
                              "\"winner\": \"tie\"}";
    char text[1024];
    static const struct {
        const char *format; /* @ = one good battle */
        const char *msg;
    } cases[] = {
        {"[\n@,\n@,\n 7\n]", ":4: expected a JSON object (one battle), got number"},
        {"[\n {\"question_id\": 1,\n  \"model_a\": \"x\",\n  \"model_b\": \"y\",\n"
         "  \"winner\": \"tie\"},\n {\"question_id\": 2}\n]",
         ":6: field \"model_a\": expected a non-empty string, got missing"},
        {"[\n@,\n@,\n {\"question_id\": 1,\n  \"model_a\": \"x\", \"model_b\": \"y\", "
         "\"winner\": \"B\"}]",
         ":4: field \"winner\": expected \"model_a\", \"model_b\", \"tie\" or \"tie (bothbad)\", "
         "got string \"B\""},
        {"[@,\n@\n\n {\"question_id\": 1}]", ":4: expected ',' or ']' after a battle"},
        {"[@,\n@,\n {\"question_id\": 1,\n \"model_a\": }]",
         ":4: invalid JSON: unexpected token near '}' (column 13)"},
        {"[@,\n@,\n]", ":3: invalid JSON: "},
        {"[@,\n@\n", ":3: the JSON array is not closed"},
        {"[@,\n@]\n\n]", ":4: unexpected text after the JSON array"},
        {"@\n@\n{\"question_id\": 1, \"model_a\": \"x\"}", ":3: field \"model_b\": expected a "
                                                           "non-empty string, got missing"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        expand(text, sizeof text, cases[k].format, one);
        refused(f, "arena", scratch(f, "bad.json", text), ARB_PARSE, cases[k].msg);
    }
    refused(f, "arena", scratch(f, "gone.json", NULL), ARB_NOTFOUND, "gone.json: cannot open");
    refused(f, "arena", f->dir, ARB_INVALID, "is a folder");
    refused(f, "chess", f->dir, ARB_INVALID, "unknown kind \"chess\": expected prd, arena or "
                                             "fastchat");
    assert_int_equal(arb_battles_import(f->b, NULL, f->dir), ARB_INVALID);
    assert_int_equal(arb_battles_import(NULL, "arena", f->dir), ARB_INVALID);
}

static void fastchat_refusals(void **state)
{
    fixture *f = *state;
    static const char good[] = "{\"question_id\": 81, \"model_1\": \"a\", \"model_2\": \"b\", "
                               "\"g1_winner\": \"tie\", \"g2_winner\": \"tie\", \"judge\": "
                               "[\"gpt-4\", \"pair-v2\"], \"turn\": 1}\n";
    static const struct {
        const char *line;
        const char *msg;
    } cases[] = {
        {"{\"question_id\": 81, \"model\": \"a\", \"score\": 7, \"judge\": [\"gpt-4\", "
         "\"single-v1\"]}",
         ":2: field \"model_1\": expected a non-empty string (a pairwise judgment; "
         "single-answer grading files have \"model\" and \"score\" instead), got missing"},
        {"{\"question_id\": 81, \"model_1\": \"a\", \"model_2\": \"a\", \"g1_winner\": \"tie\", "
         "\"g2_winner\": \"tie\"}",
         ":2: field \"model_2\": expected a model other than model_1, got string \"a\""},
        {"{\"question_id\": 81, \"model_1\": \"a\", \"model_2\": \"b\", \"g1_winner\": \"A\", "
         "\"g2_winner\": \"tie\"}",
         ":2: field \"g1_winner\": expected \"model_1\", \"model_2\", \"tie\" or \"error\", got "
         "string \"A\""},
        {"{\"question_id\": 81, \"model_1\": \"a\", \"model_2\": \"b\", \"g1_winner\": \"tie\"}",
         ":2: field \"g2_winner\": expected \"model_1\", \"model_2\", \"tie\" or \"error\", got "
         "missing"},
        {"{\"question_id\": 81, \"model_1\": \"a\", \"model_2\": \"b\", \"g1_winner\": \"tie\", "
         "\"g2_winner\": \"tie\", \"judge\": 5}",
         ":2: field \"judge\": expected an array [judge model, prompt name] or a string, got "
         "number 5"},
        {"{\"question_id\": 81, \"model_1\": \"a\", \"model_2\": \"b\", \"g1_winner\": \"tie\", "
         "\"g2_winner\": \"tie\", \"judge\": []}",
         ":2: field \"judge\": expected an array starting with the judge model's name, got "
         "array"},
        {"{\"question_id\": 81, \"model_1\": \"a\", \"model_2\": \"b\", \"g1_winner\": \"tie\", "
         "\"g2_winner\": \"tie\", \"turn\": 0}",
         ":2: field \"turn\": expected an integer >= 1, got number 0"},
        {"{\"question_id\": true, \"model_1\": \"a\", \"model_2\": \"b\"}",
         ":2: field \"question_id\": expected an integer or a non-empty string, got boolean "
         "true"},
    };
    char text[1024];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(text, sizeof text, "%s%s\n%s", good, cases[k].line, good);
        refused(f, "fastchat", scratch(f, "bad_pair.jsonl", text), ARB_PARSE, cases[k].msg);
    }
    /* a judge given as a plain string, and question ids as strings */
    snprintf(text, sizeof text, "{\"question_id\": \"q7\", \"model_1\": \"a\", \"model_2\": "
             "\"b\", \"g1_winner\": \"model_2\", \"g2_winner\": \"error\", \"judge\": \"me\", "
             "\"turn\": 3}\n");
    assert_int_equal(arb_battles_import(f->b, "fastchat", scratch(f, "ok.jsonl", text)), ARB_OK);
    assert_int_equal(arb_battles_count(f->b), 1);
    expect(f->b, 0, "q7#3", "a", "b", "me", 1);
    assert_int_equal(arb_battles_skipped(f->b), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(prd_fixture, setup, teardown),
        cmocka_unit_test_setup_teardown(arena_fixture, setup, teardown),
        cmocka_unit_test_setup_teardown(fastchat_fixture, setup, teardown),
        cmocka_unit_test_setup_teardown(prd_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(arena_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(fastchat_refusals, setup, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
