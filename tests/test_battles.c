/*
** test_battles.c -- battle sets (battles.c, METHODS §6): add/at round trips, interning, the
** lazily allocated style columns, every refusal of arb_battles_add, the arena-convention
** JSONL reader (good files, every error with its path:line: field message, all or nothing),
** write -> read round trips, and the store's battles table (put/get, a rerun replacing its
** source, the extra JSON, savepoints inside a caller's transaction).
**
** Each test gets a scratch directory (and a store in it). Run one alone with ARB_TEST=<name>.
*/
#include "test_sql.h"
#include "testutil.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[128];
    char db[192];
    char file[192]; /* the last file written */
    arb_store *store;
    arb_battles *b;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f || arb_test_make_dir("test_battles", f->dir, sizeof f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->db, sizeof f->db, "%s/arbiter.db", f->dir);
    if (arb_store_open(f->db, &f->store) != ARB_OK || !(f->b = arb_battles_create())) {
        fprintf(stderr, "setup: %s\n", arb_store_errmsg(f->store));
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
    arb_store_close(f->store);
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

/* Writes text to name in the fixture's directory; f->file gets its path. */
static const char *write_file(fixture *f, const char *name, const char *text)
{
    snprintf(f->file, sizeof f->file, "%s/%s", f->dir, name);
    assert_int_equal(arb_test_write_file(f->file, text, strlen(text)), 0);
    return f->file;
}

static arb_battle make(const char *q, const char *i, const char *j, const char *r, int s)
{
    arb_battle battle = arb_battle_init();
    battle.question = q;
    battle.model_i = i;
    battle.model_j = j;
    battle.reviewer = r;
    battle.s = s;
    return battle;
}

/* Asserts battle k of b. */
static void expect(const arb_battles *b, size_t k, const char *q, const char *i, const char *j,
                   const char *r, int s, int both_bad)
{
    arb_battle got = arb_battles_at(b, k);
    assert_string_equal(got.question, q);
    assert_string_equal(got.model_i, i);
    assert_string_equal(got.model_j, j);
    assert_string_equal(got.reviewer, r);
    assert_int_equal(got.s, s);
    assert_int_equal(got.both_bad, both_bad);
}

/* ---- the set ------------------------------------------------------------------------------- */

static void battle_init_unknown_style(void **state)
{
    (void)state;
    arb_battle battle = arb_battle_init();
    assert_null(battle.question);
    assert_null(battle.model_i);
    assert_null(battle.reviewer);
    assert_int_equal(battle.s, 0);
    assert_int_equal(battle.both_bad, 0);
    for (int k = 0; k < ARB_STYLE__COUNT; k++) {
        assert_true(isnan(battle.style_i[k]));
        assert_true(isnan(battle.style_j[k]));
    }
    /* NULL and empty sets */
    assert_int_equal(arb_battles_count(NULL), 0);
    assert_int_equal(arb_battles_skipped(NULL), 0);
    assert_null(arb_battles_at(NULL, 0).question);
    assert_non_null(arb_battles_errmsg(NULL));
    arb_battles_destroy(NULL);
}

static void add_at_round_trip(void **state)
{
    fixture *f = *state;
    assert_string_equal(arb_battles_errmsg(f->b), "");
    char q[8] = "q1", i[8] = "m1", j[8] = "m2", r[8] = "judge";
    arb_battle one = make(q, i, j, r, -1);
    assert_int_equal(arb_battles_add(f->b, &one), ARB_OK);
    /* the set keeps copies: the caller's buffers may change */
    strcpy(q, "zz");
    strcpy(i, "zz");
    arb_battle two = make("q2", "m2", "m1", NULL, 0);
    two.both_bad = 1;
    assert_int_equal(arb_battles_add(f->b, &two), ARB_OK);
    arb_battle three = make("q2", "m1", "m3", "judge", 1);
    assert_int_equal(arb_battles_add(f->b, &three), ARB_OK);
    assert_int_equal(arb_battles_count(f->b), 3);
    expect(f->b, 0, "q1", "m1", "m2", "judge", -1, 0);
    expect(f->b, 1, "q2", "m2", "m1", "", 0, 1); /* NULL reviewer reads back as "" */
    expect(f->b, 2, "q2", "m1", "m3", "judge", 1, 0);
    /* out of range: the init battle */
    arb_battle none = arb_battles_at(f->b, 3);
    assert_null(none.question);
    assert_true(isnan(none.style_i[0]));
    /* no style yet: NAN everywhere and no style column */
    assert_null(f->b->style);
    assert_true(isnan(arb_battles_at(f->b, 0).style_j[ARB_STYLE_BOLD]));
}

static void interning(void **state)
{
    fixture *f = *state;
    const char *models[] = {"a", "b", "c", "a", "b"};
    for (int k = 0; k < 4; k++) {
        arb_battle battle = make(k % 2 ? "q1" : "q2", models[k], models[k + 1], "r", 0);
        assert_int_equal(arb_battles_add(f->b, &battle), ARB_OK);
    }
    assert_int_equal(f->b->models.n, 3);
    assert_int_equal(f->b->questions.n, 2);
    assert_int_equal(f->b->reviewers.n, 1);
    /* the same name is the same string (one copy), across battles and sides */
    assert_ptr_equal(arb_battles_at(f->b, 0).model_i, arb_battles_at(f->b, 2).model_j);
    assert_ptr_equal(arb_battles_at(f->b, 0).model_j, arb_battles_at(f->b, 3).model_j);
    assert_ptr_equal(arb_battles_at(f->b, 0).question, arb_battles_at(f->b, 2).question);
    assert_int_equal(f->b->i[3], 0); /* "a" was interned first */
    assert_int_equal(f->b->j[1], 2);
}

static void style_lazy_nan(void **state)
{
    fixture *f = *state;
    for (int k = 0; k < 70; k++) { /* past the first capacity (64) before style appears */
        arb_battle battle = make("q", "x", "y", "r", 0);
        assert_int_equal(arb_battles_add(f->b, &battle), ARB_OK);
    }
    assert_null(f->b->style);
    arb_battle styled = make("q", "x", "y", "r", 1);
    styled.style_i[ARB_STYLE_LENGTH] = 812;
    styled.style_j[ARB_STYLE_BOLD] = 2.5;
    assert_int_equal(arb_battles_add(f->b, &styled), ARB_OK);
    assert_non_null(f->b->style);
    for (int k = 0; k < 200; k++) { /* growth keeps the values and fills NAN */
        arb_battle battle = make("q", "y", "x", "r", -1);
        assert_int_equal(arb_battles_add(f->b, &battle), ARB_OK);
    }
    arb_battle early = arb_battles_at(f->b, 3), got = arb_battles_at(f->b, 70),
               late = arb_battles_at(f->b, 270);
    for (int k = 0; k < ARB_STYLE__COUNT; k++) {
        assert_true(isnan(early.style_i[k]) && isnan(early.style_j[k]));
        assert_true(isnan(late.style_i[k]) && isnan(late.style_j[k]));
    }
    assert_true(got.style_i[ARB_STYLE_LENGTH] == 812);
    assert_true(got.style_j[ARB_STYLE_BOLD] == 2.5);
    assert_true(isnan(got.style_i[ARB_STYLE_BOLD]));
    assert_true(isnan(got.style_j[ARB_STYLE_LENGTH]));
    assert_int_equal(arb_battles_count(f->b), 271);
}

static void add_refusals(void **state)
{
    fixture *f = *state;
    arb_battle ok = make("q", "a", "b", "r", 0);
    assert_int_equal(arb_battles_add(f->b, &ok), ARB_OK);
    struct {
        arb_battle battle;
        const char *message;
    } cases[8];
    cases[0].battle = make("q", "a", "a", "r", 0);
    cases[0].message = "cannot battle itself (both are \"a\")";
    cases[1].battle = make("q", "a", "b", "r", 2);
    cases[1].message = "s must be -1 (i better), 0 (tie) or +1 (j better), got 2";
    cases[2].battle = make("q", "a", "b", "r", -2);
    cases[2].message = "got -2";
    cases[3].battle = make("q", "a", "b", "r", 1);
    cases[3].battle.both_bad = 1;
    cases[3].message = "both_bad marks a tie, but s is 1";
    cases[4].battle = make("q", NULL, "b", "r", 0);
    cases[4].message = "needs two model names";
    cases[5].battle = make("", "a", "b", "r", 0);
    cases[5].message = "needs a question id";
    cases[6].battle = make("q", "a", "b", "r", 0);
    cases[6].battle.style_j[ARB_STYLE_LISTS] = -1;
    cases[6].message = "style \"lists\" must be unknown (NAN) or a number from 0 to 3.4e38";
    cases[7].battle = make("q", "a", "b", "r", 0);
    cases[7].battle.style_i[ARB_STYLE_LENGTH] = INFINITY;
    cases[7].message = "style \"length\"";
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        assert_int_equal(arb_battles_add(f->b, &cases[k].battle), ARB_INVALID);
        assert_non_null(strstr(arb_battles_errmsg(f->b), cases[k].message));
    }
    assert_int_equal(arb_battles_add(f->b, NULL), ARB_INVALID);
    assert_int_equal(arb_battles_add(NULL, &ok), ARB_INVALID);
    /* nothing of the refused battles stayed */
    assert_int_equal(arb_battles_count(f->b), 1);
    assert_int_equal(f->b->models.n, 2);
    assert_null(f->b->style);
}

/* ---- arena-convention JSONL ------------------------------------------------------------------ */

static void read_jsonl_good(void **state)
{
    fixture *f = *state;
    const char *path = write_file(
        f, "good.jsonl",
        "\xEF\xBB\xBF{\"question_id\": 7, \"model_a\": \"m1\", \"model_b\": \"m2\", \"winner\": "
        "\"model_a\", \"judge\": \"u1\", \"tstamp\": 1.5}\r\n"
        "\n"
        "   \t\n"
        "{\"question_id\": \"q-2\", \"model_a\": \"m2\", \"model_b\": \"m3\", \"winner\": "
        "\"model_b\"}\n"
        "{\"question_id\": \"q-3\", \"model_a\": \"m3\", \"model_b\": \"m1\", \"winner\": "
        "\"tie\", \"judge\": null, \"conv_metadata\": {\"sum_assistant_a_tokens\": 100, "
        "\"sum_assistant_b_tokens\": 250, \"header_count_a\": {\"h1\": 1, \"h2\": 2}, "
        "\"header_count_b\": {}, \"list_count_a\": {\"ordered\": 3, \"unordered\": 4}, "
        "\"list_count_b\": {\"ordered\": 0, \"unordered\": 1}, \"bold_count_a\": {\"**\": 5, "
        "\"__\": 1}, \"bold_count_b\": {\"**\": 0, \"__\": 0}}}\n"
        "{\"question_id\": \"q-4\", \"model_a\": \"m1\", \"model_b\": \"m2\", \"winner\": "
        "\"tie (bothbad)\", \"judge\": \"u2\", \"length_a\": 10, \"bold_b\": 0.5, "
        "\"length_b\": null, \"conv_metadata\": {\"sum_assistant_a_tokens\": 99, "
        "\"sum_assistant_b_tokens\": 7}}");
    assert_int_equal(arb_battles_read_jsonl(f->b, path), ARB_OK);
    assert_int_equal(arb_battles_count(f->b), 4);
    expect(f->b, 0, "7", "m1", "m2", "u1", -1, 0);
    expect(f->b, 1, "q-2", "m2", "m3", "", 1, 0);
    expect(f->b, 2, "q-3", "m3", "m1", "", 0, 0);
    expect(f->b, 3, "q-4", "m1", "m2", "u2", 0, 1);
    arb_battle b0 = arb_battles_at(f->b, 0), b2 = arb_battles_at(f->b, 2),
               b3 = arb_battles_at(f->b, 3);
    assert_true(isnan(b0.style_i[ARB_STYLE_LENGTH]));
    /* conv_metadata: tokens, and the per-kind counts summed */
    const double want_i[] = {100, 3, 7, 6}, want_j[] = {250, 0, 1, 0};
    for (int k = 0; k < ARB_STYLE__COUNT; k++) {
        assert_true(b2.style_i[k] == want_i[k]);
        assert_true(b2.style_j[k] == want_j[k]);
    }
    /* flat fields win over conv_metadata; null is unknown, so conv_metadata fills it */
    assert_true(b3.style_i[ARB_STYLE_LENGTH] == 10);
    assert_true(b3.style_j[ARB_STYLE_LENGTH] == 7);
    assert_true(b3.style_j[ARB_STYLE_BOLD] == 0.5);
    assert_true(isnan(b3.style_i[ARB_STYLE_HEADERS]));
    /* an empty file adds nothing */
    assert_int_equal(arb_battles_read_jsonl(f->b, write_file(f, "empty.jsonl", "")), ARB_OK);
    assert_int_equal(arb_battles_count(f->b), 4);
}

static void read_jsonl_errors(void **state)
{
    fixture *f = *state;
    /* one good battle first: every failed read must leave it, and only it */
    arb_battle keep = make("q0", "keep-a", "keep-b", "r", 0);
    assert_int_equal(arb_battles_add(f->b, &keep), ARB_OK);
    static const char good[] =
        "{\"question_id\": \"q1\", \"model_a\": \"new-a\", \"model_b\": \"new-b\", "
        "\"winner\": \"tie\", \"length_a\": 3}\n";
    static const struct {
        const char *line; /* the second line of the file */
        const char *message;
    } cases[] = {
        {"{\"model_a\": \"a\"", ":2: invalid JSON: "},
        {"[1, 2]", ":2: expected a JSON object (one battle), got array"},
        {"\"text\"", ":2: expected a JSON object (one battle), got string"},
        {"{\"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"tie\"}",
         ":2: field \"question_id\": expected a non-empty string or an integer, got missing"},
        {"{\"question_id\": 1.5, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"tie\"}",
         ":2: field \"question_id\": expected a non-empty string or an integer, got number 1.5"},
        {"{\"question_id\": \"\", \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"tie\"}",
         "field \"question_id\": expected a non-empty string or an integer, got string \"\""},
        {"{\"question_id\": 1, \"model_b\": \"b\", \"winner\": \"tie\"}",
         ":2: field \"model_a\": expected a non-empty string, got missing"},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": 3, \"winner\": \"tie\"}",
         ":2: field \"model_b\": expected a non-empty string, got number 3"},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"a\", \"winner\": \"tie\"}",
         ":2: field \"model_b\": expected a model other than model_a, got string \"a\""},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\", \"judge\": 4, "
         "\"winner\": \"tie\"}",
         ":2: field \"judge\": expected a string, got number 4"},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\"}",
         ":2: field \"winner\": expected \"model_a\", \"model_b\", \"tie\" or \"tie (bothbad)\", "
         "got missing"},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"A\"}",
         ":2: field \"winner\": expected \"model_a\", \"model_b\", \"tie\" or \"tie (bothbad)\", "
         "got string \"A\""},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"tie\", "
         "\"length_b\": -4}",
         ":2: field \"length_b\": expected a number from 0 to 3.4e38, got number -4"},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"tie\", "
         "\"bold_a\": 1e40}",
         ":2: field \"bold_a\": expected a number from 0 to 3.4e38, got number 1e40"},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"tie\", "
         "\"conv_metadata\": {\"list_count_a\": {\"x\": 3e38, \"y\": 3e38}}}",
         ":2: field \"conv_metadata.list_count_a\": expected a number from 0 to 3.4e38, got "
         "object"},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"tie\", "
         "\"headers_a\": \"2\"}",
         ":2: field \"headers_a\": expected a number from 0 to 3.4e38, got string \"2\""},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"tie\", "
         "\"conv_metadata\": [1]}",
         ":2: field \"conv_metadata\": expected an object, got array"},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"tie\", "
         "\"conv_metadata\": {\"header_count_b\": {\"h1\": true}}}",
         ":2: field \"conv_metadata.header_count_b.h1\": expected a number from 0 to 3.4e38, got "
         "boolean true"},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"tie\", "
         "\"conv_metadata\": {\"sum_assistant_a_tokens\": {\"x\": 1}}}",
         ":2: field \"conv_metadata.sum_assistant_a_tokens\": expected a number from 0 to 3.4e38, "
         "got object"},
        {"{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"tie\", "
         "\"winner\": \"tie\"}",
         ":2: invalid JSON: duplicate object key"},
        {"{\"question_id\": 1, \"model_a\": \"a\\u001b[2J\", \"model_b\": \"b\", \"winner\": 1}",
         ":2: field \"winner\""},
    };
    char text[1024];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(text, sizeof text, "%s%s\n%s", good, cases[k].line, good);
        const char *path = write_file(f, "bad.jsonl", text);
        assert_int_equal(arb_battles_read_jsonl(f->b, path), ARB_PARSE);
        const char *msg = arb_battles_errmsg(f->b);
        if (!strstr(msg, cases[k].message) || strncmp(msg, path, strlen(path)))
            fail_msg("case %zu: got \"%s\", expected \"%s\"", k, msg, cases[k].message);
        assert_null(strchr(msg, 0x1b));
        assert_int_equal(arb_battles_count(f->b), 1);
        assert_int_equal(f->b->models.n, 2); /* no name of the refused file stayed */
        assert_int_equal(f->b->questions.n, 1);
        assert_null(f->b->style);
    }
    /* a long string value is cut and made safe in the message */
    snprintf(text, sizeof text, "{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\", "
             "\"winner\": \"%s\\u0007\"}\n",
             "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
    assert_int_equal(arb_battles_read_jsonl(f->b, write_file(f, "long.jsonl", text)), ARB_PARSE);
    assert_non_null(strstr(arb_battles_errmsg(f->b),
                           "got string \"abcdefghijklmnopqrstuvwxyzabcdefghijklmn\"..."));
    /* files that are not there or not files */
    snprintf(text, sizeof text, "%s/missing.jsonl", f->dir);
    assert_int_equal(arb_battles_read_jsonl(f->b, text), ARB_NOTFOUND);
    assert_non_null(strstr(arb_battles_errmsg(f->b), "missing.jsonl: cannot open: "));
    assert_int_equal(arb_battles_read_jsonl(f->b, f->dir), ARB_INVALID);
    assert_non_null(strstr(arb_battles_errmsg(f->b), "is a folder"));
    assert_int_equal(arb_battles_read_jsonl(f->b, NULL), ARB_INVALID);
    assert_int_equal(arb_battles_read_jsonl(NULL, text), ARB_INVALID);
    assert_int_equal(arb_battles_count(f->b), 1);
}

/* Asserts a and b hold the same battles, style included. */
static void expect_same(const arb_battles *a, const arb_battles *b)
{
    assert_int_equal(arb_battles_count(a), arb_battles_count(b));
    for (size_t k = 0; k < arb_battles_count(a); k++) {
        arb_battle x = arb_battles_at(a, k), y = arb_battles_at(b, k);
        assert_string_equal(x.question, y.question);
        assert_string_equal(x.model_i, y.model_i);
        assert_string_equal(x.model_j, y.model_j);
        assert_string_equal(x.reviewer, y.reviewer);
        assert_int_equal(x.s, y.s);
        assert_int_equal(x.both_bad, y.both_bad);
        assert_int_equal(x.strong, y.strong);
        for (int c = 0; c < ARB_STYLE__COUNT; c++) {
            assert_true(isnan(x.style_i[c]) ? isnan(y.style_i[c]) : x.style_i[c] == y.style_i[c]);
            assert_true(isnan(x.style_j[c]) ? isnan(y.style_j[c]) : x.style_j[c] == y.style_j[c]);
        }
    }
}

/* Fills b with battles covering every winner, reviewers "" and not, and some style values
** (an integer, a fraction a float holds exactly only to 9 digits). */
static void fill(arb_battles *b)
{
    arb_battle v[5] = {make("1", "m1", "m2", "u1", -1), make("q two", "m2", "m1", "", 1),
                       make("3", "m1", "m3", "u2", 0), make("4", "m3", "m2", "u1", 0),
                       make("5", "m2", "m3", "u1", 1)};
    v[3].both_bad = 1;
    v[4].strong = 1;
    v[1].style_i[ARB_STYLE_LENGTH] = 812;
    v[1].style_j[ARB_STYLE_LENGTH] = 0;
    v[1].style_j[ARB_STYLE_HEADERS] = 2;
    v[2].style_i[ARB_STYLE_BOLD] = 0.1;
    v[4].style_j[ARB_STYLE_LISTS] = 16777216;
    for (int k = 0; k < 5; k++) assert_int_equal(arb_battles_add(b, &v[k]), ARB_OK);
}

static void write_read_round_trip(void **state)
{
    fixture *f = *state;
    fill(f->b);
    snprintf(f->file, sizeof f->file, "%s/out.jsonl", f->dir);
    FILE *out = fopen(f->file, "w");
    assert_non_null(out);
    assert_int_equal(arb_battles_write_jsonl(f->b, out), ARB_OK);
    assert_int_equal(fclose(out), 0);
    arb_battles *back = arb_battles_create();
    assert_int_equal(arb_battles_read_jsonl(back, f->file), ARB_OK);
    expect_same(f->b, back);
    arb_battles_destroy(back);
    /* the exact text of two lines: question ids are strings, counts integers, flat style */
    FILE *in = fopen(f->file, "r");
    char line[512];
    assert_non_null(fgets(line, sizeof line, in));
    assert_string_equal(line, "{\"question_id\":\"1\",\"model_a\":\"m1\",\"model_b\":\"m2\","
                              "\"judge\":\"u1\",\"winner\":\"model_a\"}\n");
    assert_non_null(fgets(line, sizeof line, in));
    assert_string_equal(line, "{\"question_id\":\"q two\",\"model_a\":\"m2\",\"model_b\":\"m1\","
                              "\"judge\":\"\",\"winner\":\"model_b\",\"length_a\":812,"
                              "\"length_b\":0,\"headers_b\":2}\n");
    assert_non_null(fgets(line, sizeof line, in));
    assert_non_null(strstr(line, "\"bold_a\":0.100000001}"));
    assert_non_null(fgets(line, sizeof line, in));
    assert_non_null(strstr(line, "\"winner\":\"tie (bothbad)\""));
    assert_non_null(fgets(line, sizeof line, in));
    assert_string_equal(line, "{\"question_id\":\"5\",\"model_a\":\"m2\",\"model_b\":\"m3\","
                              "\"judge\":\"u1\",\"winner\":\"model_b\",\"strong\":true,"
                              "\"lists_b\":16777216}\n");
    fclose(in);
    /* an empty set writes nothing; a failing stream is ARB_IO */
    arb_battles *empty = arb_battles_create();
    out = fopen(f->file, "w");
    assert_int_equal(arb_battles_write_jsonl(empty, out), ARB_OK);
    assert_int_equal(ftell(out), 0);
    fclose(out);
    arb_battles_destroy(empty);
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        assert_int_equal(arb_battles_write_jsonl(f->b, full), ARB_IO);
        assert_non_null(strstr(arb_battles_errmsg(f->b), "cannot write battles"));
        fclose(full);
    }
    assert_int_equal(arb_battles_write_jsonl(f->b, NULL), ARB_INVALID);
}

/* A strong verdict (Arena-Hard A>>B): only a win can be one; the arena file's "strong": true
** (false and null are fine, anything else is refused naming the line); the repeated copy that
** arb_rank_params.strong_weight ranks. */
static void strong_flag(void **state)
{
    fixture *f = *state;
    arb_battle tie = make("q", "a", "b", "r", 0);
    tie.strong = 1;
    assert_int_equal(arb_battles_add(f->b, &tie), ARB_INVALID);
    assert_non_null(strstr(arb_battles_errmsg(f->b), "strong marks a win"));
    assert_int_equal(arb_battles_count(f->b), 0);

    const char *path = write_file(
        f, "strong.jsonl",
        "{\"question_id\": 1, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"model_a\", "
        "\"strong\": true}\n"
        "{\"question_id\": 2, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"model_b\", "
        "\"strong\": false}\n"
        "{\"question_id\": 3, \"model_a\": \"b\", \"model_b\": \"a\", \"winner\": \"tie\", "
        "\"strong\": null, \"judge\": \"j\"}\n"
        "{\"question_id\": 4, \"model_a\": \"b\", \"model_b\": \"a\", \"winner\": \"model_b\", "
        "\"judge\": \"j\", \"strong\": true, \"length_a\": 5}\n");
    assert_int_equal(arb_battles_read_jsonl(f->b, path), ARB_OK);
    assert_int_equal(arb_battles_count(f->b), 4);
    static const int strong[4] = {1, 0, 0, 1};
    for (size_t k = 0; k < 4; k++) assert_int_equal(arb_battles_at(f->b, k).strong, strong[k]);
    assert_true(arb_battles_at(f->b, 3).style_i[ARB_STYLE_LENGTH] == 5);
    assert_int_equal(arb__battles_count_strong(f->b), 2);

    static const struct {
        const char *line;
        const char *message;
    } bad[] = {
        {"{\"question_id\": 9, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"model_a\", "
         "\"strong\": \"yes\"}",
         "bad.jsonl:2: field \"strong\": expected true or false, got string \"yes\""},
        {"{\"question_id\": 9, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"model_a\", "
         "\"strong\": 1}",
         "bad.jsonl:2: field \"strong\": expected true or false, got number 1"},
        {"{\"question_id\": 9, \"model_a\": \"a\", \"model_b\": \"b\", \"winner\": \"tie\", "
         "\"strong\": true}",
         "bad.jsonl:2: field \"strong\": expected false on a tie (only a win can be strong), "
         "got boolean true"},
        {"{\"question_id\": 9, \"model_a\": \"a\", \"model_b\": \"b\", "
         "\"winner\": \"tie (bothbad)\", \"strong\": true}",
         "bad.jsonl:2: field \"strong\": expected false on a tie"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"question_id\": 8, \"model_a\": \"a\", \"model_b\": \"b\", "
                 "\"winner\": \"model_a\", \"strong\": true}\n%s\n", bad[k].line);
        path = write_file(f, "bad.jsonl", text);
        assert_int_equal(arb_battles_read_jsonl(f->b, path), ARB_PARSE);
        if (!strstr(arb_battles_errmsg(f->b), bad[k].message))
            fail_msg("case %zu: got \"%s\", want \"%s\"", k, arb_battles_errmsg(f->b),
                     bad[k].message);
        assert_int_equal(arb_battles_count(f->b), 4); /* all or nothing */
    }

    /* the repeated copy: each strong battle 3 times in a row where it stood, the same string
    ** tables (a left-out record's model interned first keeps its index), left-outs and skipped */
    arb_battles *src = arb_battles_create();
    assert_int_equal(arb_battles_add_left_out(src, "z", "b", "j", 2), ARB_OK);
    for (size_t k = 0; k < 4; k++) {
        arb_battle x = arb_battles_at(f->b, k);
        assert_int_equal(arb_battles_add(src, &x), ARB_OK);
    }
    src->skipped = 5;
    arb_battles *rep = arb__battles_repeat_strong(src, 3);
    assert_non_null(rep);
    assert_int_equal(arb_battles_count(rep), 8);
    static const char *const questions[8] = {"1", "1", "1", "2", "3", "4", "4", "4"};
    for (size_t k = 0; k < 8; k++) {
        arb_battle x = arb_battles_at(rep, k);
        assert_string_equal(x.question, questions[k]);
        assert_int_equal(x.strong, k < 3 || k > 4);
    }
    assert_true(arb_battles_at(rep, 7).style_i[ARB_STYLE_LENGTH] == 5);
    assert_int_equal(arb__strtab_find(&rep->models, "z"), arb__strtab_find(&src->models, "z"));
    assert_int_equal(arb__strtab_find(&rep->models, "a"), arb__strtab_find(&src->models, "a"));
    assert_int_equal(arb_battles_left_out_count(rep), 1);
    assert_int_equal(arb_battles_left_out_at(rep, 0).n, 2);
    assert_int_equal(arb_battles_skipped(rep), 5);
    assert_int_equal(arb__battles_count_strong(rep), 6);
    arb_battles_destroy(rep);
    arb_battles_destroy(src);
}

/* ---- the store ------------------------------------------------------------------------------- */

static char *query_text(arb_store *s, const char *sql)
{
    sqlite3_stmt *q = NULL;
    char *text = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        text = arb__strdup((const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return text;
}

static void store_round_trip(void **state)
{
    fixture *f = *state;
    fill(f->b);
    assert_int_equal(arb_store_put_battles(f->store, "src-b", f->b), ARB_OK);
    arb_battles *other = arb_battles_create();
    arb_battle one = make("x", "p", "q", "r", 1);
    assert_int_equal(arb_battles_add(other, &one), ARB_OK);
    assert_int_equal(arb_store_put_battles(f->store, "src-a", other), ARB_OK);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from battles"), 6);
    assert_int_equal(arb_test_query_int(f->store, "select max(seq) from battles where "
                                                  "source = 'src-b'"), 4);
    /* extra: both_bad and the known style values, nothing else */
    char *extra = query_text(f->store, "select extra from battles where source = 'src-b' and "
                                       "seq = 1");
    assert_string_equal(extra, "{\"style_i\":{\"length\":812},\"style_j\":{\"length\":0,"
                               "\"headers\":2}}");
    free(extra);
    extra = query_text(f->store, "select extra from battles where source = 'src-b' and seq = 3");
    assert_string_equal(extra, "{\"both_bad\":true}");
    free(extra);
    extra = query_text(f->store, "select extra from battles where source = 'src-b' and seq = 0");
    assert_string_equal(extra, "{}");
    free(extra);
    extra = query_text(f->store, "select extra from battles where source = 'src-b' and seq = 4");
    assert_string_equal(extra, "{\"strong\":true,\"style_j\":{\"lists\":16777216}}");
    free(extra);

    /* one source, in order */
    arb_battles *back = arb_battles_create();
    assert_int_equal(arb_store_get_battles(f->store, "src-b", back), ARB_OK);
    expect_same(f->b, back);
    arb_battles_destroy(back);
    /* all sources: ordered by source, then seq; appended after what the set holds */
    back = arb_battles_create();
    arb_battle first = make("z", "m9", "m8", "", 0);
    assert_int_equal(arb_battles_add(back, &first), ARB_OK);
    assert_int_equal(arb_store_get_battles(f->store, NULL, back), ARB_OK);
    assert_int_equal(arb_battles_count(back), 7);
    expect(back, 0, "z", "m9", "m8", "", 0, 0);
    expect(back, 1, "x", "p", "q", "r", 1, 0);
    expect(back, 2, "1", "m1", "m2", "u1", -1, 0);
    expect(back, 5, "4", "m3", "m2", "u1", 0, 1);
    arb_battles_destroy(back);

    /* a rerun of a source replaces it */
    assert_int_equal(arb_store_put_battles(f->store, "src-b", other), ARB_OK);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from battles"), 2);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from battles where "
                                                  "source = 'src-b' and q = 'x'"), 1);
    /* an empty set empties its source */
    arb_battles *empty = arb_battles_create();
    assert_int_equal(arb_store_put_battles(f->store, "src-b", empty), ARB_OK);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from battles"), 1);
    assert_int_equal(arb_store_get_battles(f->store, "nothing here", empty), ARB_OK);
    assert_int_equal(arb_battles_count(empty), 0);
    arb_battles_destroy(empty);
    arb_battles_destroy(other);

    /* bad arguments */
    assert_int_equal(arb_store_put_battles(f->store, NULL, f->b), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "source name"));
    assert_int_equal(arb_store_put_battles(f->store, "", f->b), ARB_INVALID);
    assert_int_equal(arb_store_put_battles(f->store, "s", NULL), ARB_INVALID);
    assert_int_equal(arb_store_get_battles(f->store, NULL, NULL), ARB_INVALID);
    assert_int_equal(arb_store_put_battles(NULL, "s", f->b), ARB_INVALID);
}

static void store_survives_reopen_and_bad_extra(void **state)
{
    fixture *f = *state;
    fill(f->b);
    assert_int_equal(arb_store_put_battles(f->store, "s", f->b), ARB_OK);
    arb_store_close(f->store);
    assert_int_equal(arb_store_open(f->db, &f->store), ARB_OK);
    arb_battles *back = arb_battles_create();
    assert_int_equal(arb_store_get_battles(f->store, "s", back), ARB_OK);
    expect_same(f->b, back);
    /* an extra arbiter did not write is refused, naming the row; the set is unchanged */
    assert_int_equal(sqlite3_exec(arb__store_conn(f->store), "update battles set extra = "
                                  "'{\"style_i\": {\"length\": \"long\"}}' where seq = 2",
                                  NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(arb_store_get_battles(f->store, NULL, back), ARB_DB);
    assert_non_null(strstr(arb_store_errmsg(f->store), "battle 2 of source \"s\": column extra"));
    assert_int_equal(arb_battles_count(back), 5);
    /* unknown keys are fine (a newer arbiter may add some) */
    assert_int_equal(sqlite3_exec(arb__store_conn(f->store), "update battles set extra = "
                                  "'{\"later\": [1], \"both_bad\": false}' where seq = 2",
                                  NULL, NULL, NULL), SQLITE_OK);
    arb_battles_destroy(back);
    back = arb_battles_create();
    assert_int_equal(arb_store_get_battles(f->store, NULL, back), ARB_OK);
    assert_int_equal(arb_battles_count(back), 5);
    assert_true(isnan(arb_battles_at(back, 2).style_i[ARB_STYLE_BOLD]));
    arb_battles_destroy(back);
}

static void store_inside_transaction(void **state)
{
    fixture *f = *state;
    fill(f->b);
    arb_battles *bad = arb_battles_create();
    arb_battle one = make("x", "p", "q", "r", 1);
    assert_int_equal(arb_battles_add(bad, &one), ARB_OK);
    sqlite3 *db = arb__store_conn(f->store);
    assert_int_equal(arb__store_begin(f->store), ARB_OK);
    assert_int_equal(arb_store_put_battles(f->store, "t", f->b), ARB_OK);
    /* a failing put inside the caller's transaction undoes only itself: make the insert fail
    ** by a trigger, after the delete of its source ran */
    assert_int_equal(sqlite3_exec(db, "create temp trigger no_x before insert on battles when "
                                      "new.q = 'x' begin select raise(abort, 'no x'); end",
                                  NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(arb_store_put_battles(f->store, "t", bad), ARB_DB);
    assert_non_null(strstr(arb_store_errmsg(f->store), "no x"));
    assert_int_equal(sqlite3_get_autocommit(db), 0); /* the caller's transaction is still open */
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from battles"), 5);
    assert_int_equal(arb__store_commit(f->store), ARB_OK);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from battles"), 5);
    /* on its own, the failing put leaves the stored source as it was */
    assert_int_equal(arb_store_put_battles(f->store, "t", bad), ARB_DB);
    assert_int_equal(sqlite3_get_autocommit(db), 1);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from battles where "
                                                  "source = 't'"), 5);
    arb_battles_destroy(bad);
}

/* A file above 8 MiB is parsed as two halves on two threads: the battles keep the file's
** order, and an error in the second half names its true line. */
static void read_jsonl_large_file_in_halves(void **state)
{
    fixture *f = *state;
    const size_t n = 120000; /* about 13 MB */
    arb__buf text;
    arb__buf_init(&text, 0);
    for (size_t k = 0; k < n; k++)
        assert_int_equal(arb__buf_printf(&text, "{\"question_id\": \"q%zu\", \"model_a\": "
                                         "\"m%zu\", \"model_b\": \"m%zu\", \"judge\": \"j\", "
                                         "\"winner\": \"%s\"}\n", k, k % 7, k % 7 + 1,
                                         k % 3 ? "model_a" : "tie"), 0);
    const char *path = write_file(f, "large.jsonl", text.data);
    assert_int_equal(arb_battles_read_jsonl(f->b, path), ARB_OK);
    assert_int_equal(arb_battles_count(f->b), n);
    for (size_t k = 0; k < n; k += 997) {
        char q[32];
        snprintf(q, sizeof q, "q%zu", k);
        arb_battle b = arb_battles_at(f->b, k);
        assert_string_equal(b.question, q);
        assert_int_equal(b.s, k % 3 ? -1 : 0);
    }
    /* break line 100001 (in the second half) */
    char *bad = strstr(text.data, "\"q100000\"");
    assert_non_null(bad);
    memcpy(bad + 1, "x", 1);
    char *winner = strstr(bad, "\"winner\": \"");
    memcpy(winner + 11, "nobody!", 7);
    arb_battles *b2 = arb_battles_create();
    path = write_file(f, "large_bad.jsonl", text.data);
    assert_int_equal(arb_battles_read_jsonl(b2, path), ARB_PARSE);
    if (!strstr(arb_battles_errmsg(b2), "large_bad.jsonl:100001: field \"winner\""))
        fail_msg("got \"%s\"", arb_battles_errmsg(b2));
    assert_int_equal(arb_battles_count(b2), 0);
    arb_battles_destroy(b2);
    arb__buf_free(&text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(battle_init_unknown_style, setup, teardown),
        cmocka_unit_test_setup_teardown(add_at_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(interning, setup, teardown),
        cmocka_unit_test_setup_teardown(read_jsonl_large_file_in_halves, setup, teardown),
        cmocka_unit_test_setup_teardown(style_lazy_nan, setup, teardown),
        cmocka_unit_test_setup_teardown(add_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(read_jsonl_good, setup, teardown),
        cmocka_unit_test_setup_teardown(read_jsonl_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(write_read_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(strong_flag, setup, teardown),
        cmocka_unit_test_setup_teardown(store_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(store_survives_reopen_and_bad_extra, setup, teardown),
        cmocka_unit_test_setup_teardown(store_inside_transaction, setup, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
