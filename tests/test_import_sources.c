/*
** test_import_sources.c -- the readers of other tools' judgment files (import_fastchat.c,
** import_arena_hard.c) on hand-made files under tests/data/import_sources written after the
** published formats: a FastChat data/mt_bench folder (pair and single-answer judgments,
** question.jsonl, model answers), an Arena-Hard-Auto v2.0 judge folder (two models, two
** baselines, 5-level labels and their v2.0 synonyms, null games) and a v0.1 one (no baseline in
** the lines). Every judgment the set holds is checked: who was shown first, the position
** verdict, strength, item, template, texts; then every refusal with its path:line: field message.
**
** Run one test alone with ARB_TEST=<name>.
*/
#include "internal.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

typedef struct fixture {
    char data[512]; /* tests/data/import_sources */
    char dir[128];  /* scratch */
    char path[640];
    arb__import_set *set;
    char *errmsg;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    const char *src = getenv("ARB_SOURCE_DIR");
    snprintf(f->data, sizeof f->data, "%s/tests/data/import_sources", src ? src : ".");
    if (arb_test_make_dir("test_import_sources", f->dir, sizeof f->dir) ||
        !(f->set = arb__import_set_create())) {
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
    arb__import_set_destroy(f->set);
    arb_test_remove_dir(f->dir);
    free(f->errmsg);
    free(f);
    return 0;
}

/* f->path = <scratch>/<name>; creates the folders on the way and writes text when not NULL. */
static const char *scratch(fixture *f, const char *name, const char *text)
{
    assert_non_null(arb_test_scratch(f->dir, name, text, f->path, sizeof f->path));
    return f->path;
}

static int same(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

/* Judgment k: judge, item, candidate, baseline, template, order, verdict, strength. */
static void expect(const fixture *f, size_t k, const char *judge, const char *item,
                   const char *candidate, const char *baseline, const char *template_name,
                   int order, char verdict, int strength)
{
    assert_true(k < arb__import_set_count(f->set));
    arb__import_judgment j = arb__import_set_at(f->set, k);
    if (!same(j.judge, judge) || !same(j.item, item) || !same(j.candidate, candidate) ||
        !same(j.baseline, baseline) || !same(j.template_name, template_name) ||
        j.order != order || j.position_verdict != verdict || j.strength != strength ||
        j.options != 3 || j.rep != 0)
        fail_msg("judgment %zu: got (%s, %s, %s, %s, %s, order %d, %c, strength %d, options %d), "
                 "expected (%s, %s, %s, %s, %s, order %d, %c, strength %d, options 3)", k,
                 j.judge, j.item, j.candidate, j.baseline, j.template_name ? j.template_name : "-",
                 j.order, j.position_verdict, j.strength, j.options, judge, item, candidate,
                 baseline, template_name ? template_name : "-", order, verdict, strength);
}

static void expect_texts(const fixture *f, size_t k, const char *category, const char *question,
                         const char *candidate_answer, const char *baseline_answer,
                         const char *raw)
{
    arb__import_judgment j = arb__import_set_at(f->set, k);
    if (!same(j.category, category) || !same(j.question, question) ||
        !same(j.candidate_answer, candidate_answer) || !same(j.baseline_answer, baseline_answer) ||
        !same(j.raw, raw))
        fail_msg("judgment %zu texts: got (%s | %s | %s | %s | %s)", k,
                 j.category ? j.category : "-", j.question ? j.question : "-",
                 j.candidate_answer ? j.candidate_answer : "-",
                 j.baseline_answer ? j.baseline_answer : "-", j.raw ? j.raw : "-");
}

/* Runs importer on path and checks it fails with code and a message containing msg; the
** message must also start with the file's path. */
typedef arb_status (*importer_fn)(const char *, const arb_import_params *, arb__import_set *,
                                  char **);
static void refused(fixture *f, importer_fn importer, const char *path,
                    const arb_import_params *params, arb_status code, const char *msg)
{
    arb__import_set *set = arb__import_set_create();
    assert_non_null(set);
    char *err = NULL;
    arb_status st = importer(path, params, set, &err);
    arb__import_set_destroy(set);
    if (st != code || !err || !strstr(err, msg) || strncmp(err, path, strlen(path)))
        fail_msg("%s: got status %d and \"%s\", expected %d and \"...%s\"", path, st,
                 err ? err : "(no message)", code, msg);
    free(err);
}

/* ---- FastChat --------------------------------------------------------------------------------- */

static void fastchat_pairs(void **state)
{
    fixture *f = *state;
    char path[700];
    snprintf(path, sizeof path, "%s/mt_bench/model_judgment/gpt-4_pair.jsonl", f->data);
    assert_int_equal(arb__import_fastchat(path, NULL, f->set, &f->errmsg), ARB_OK);
    /* six lines, two games each; baseline = model_2 (no --baseline); game 1 shows model_1
    ** (here the candidate) first, game 2 model_2, whose g2_winner names the model */
    assert_int_equal(arb__import_set_count(f->set), 12);
    assert_int_equal(arb__import_set_skipped(f->set), 0);
    assert_int_equal(arb__import_set_score_count(f->set), 0);
    const char *v = "vicuna-13b", *g = "gpt-3.5-turbo", *a = "alpaca-13b";
    expect(f, 0, "gpt-4", "81", v, g, "pair-v2", 0, 'A', 0);  /* g1 model_1 */
    expect(f, 1, "gpt-4", "81", v, g, "pair-v2", 1, 'B', 0);  /* g2 model_1: shown second */
    expect(f, 2, "gpt-4", "82", v, g, "pair-v2", 0, 'A', 0);
    expect(f, 3, "gpt-4", "82", v, g, "pair-v2", 1, 'A', 0);  /* g2 model_2: shown first */
    expect(f, 4, "gpt-4", "83", v, g, "pair-v2", 0, 'C', 0);  /* tie */
    expect(f, 5, "gpt-4", "83", v, g, "pair-v2", 1, 'C', 0);
    expect(f, 6, "gpt-4", "84", v, g, "pair-v2", 0, 'E', 0);  /* error */
    expect(f, 7, "gpt-4", "84", v, g, "pair-v2", 1, 'A', 0);
    expect(f, 8, "gpt-4", "81#2", v, g, "pair-v2-multi-turn", 0, 'B', 0);
    expect(f, 9, "gpt-4", "81#2", v, g, "pair-v2-multi-turn", 1, 'A', 0);
    expect(f, 10, "gpt-4", "81", a, g, "pair-v2", 0, 'B', 0);
    expect(f, 11, "gpt-4", "81", a, g, "pair-v2", 1, 'B', 0);
    /* the data/mt_bench folder around model_judgment gives questions, categories, answers */
    expect_texts(f, 0, "writing", "Compose a travel blog post about Hawaii.",
                 "Aloha! Hawaii is warm.", "Hawaii: sun, sea and song.",
                 "Assistant A is more vivid. [[A]]");
    expect_texts(f, 1, "writing", "Compose a travel blog post about Hawaii.",
                 "Aloha! Hawaii is warm.", "Hawaii: sun, sea and song.",
                 "Assistant B is more vivid. [[B]]");
    expect_texts(f, 6, "roleplay", "Convince a friend to speak in public.", "You can do it.",
                 "Public speaking builds confidence.", "$ERROR$");
    expect_texts(f, 8, "writing", "Rewrite it starting every sentence with A.",
                 "A trip to Hawaii is warm.", "A sun, a sea, a song.", "[[B]]");
    /* alpaca-13b has no answer file: no answer, the rest is there */
    expect_texts(f, 10, "writing", "Compose a travel blog post about Hawaii.", NULL,
                 "Hawaii: sun, sea and song.", "[[B]]");
    char where[800];
    snprintf(where, sizeof where, "%s:2", path);
    assert_string_equal(arb__import_set_at(f->set, 3).where, where);
}

static void fastchat_baseline_flag(void **state)
{
    fixture *f = *state;
    char path[700];
    snprintf(path, sizeof path, "%s/mt_bench/model_judgment/gpt-4_pair.jsonl", f->data);
    /* --baseline vicuna-13b: it is model_1 of five lines, so game 1 shows the baseline first;
    ** the alpaca line does not name it and keeps the model_2 rule */
    arb_import_params params = {.source = "t", .baseline = "vicuna-13b"};
    assert_int_equal(arb__import_fastchat(path, &params, f->set, &f->errmsg), ARB_OK);
    const char *v = "vicuna-13b", *g = "gpt-3.5-turbo", *a = "alpaca-13b";
    expect(f, 0, "gpt-4", "81", g, v, "pair-v2", 1, 'A', 0);
    expect(f, 1, "gpt-4", "81", g, v, "pair-v2", 0, 'B', 0);
    expect(f, 7, "gpt-4", "84", g, v, "pair-v2", 0, 'A', 0);
    expect(f, 10, "gpt-4", "81", a, g, "pair-v2", 0, 'B', 0);
    arb__import_judgment j = arb__import_set_at(f->set, 0);
    assert_string_equal(j.candidate_answer, "Hawaii: sun, sea and song.");
    assert_string_equal(j.baseline_answer, "Aloha! Hawaii is warm.");
    /* a --baseline that no pair names is refused (a typo, not the model_2 rule) */
    params.baseline = "vicuna";
    refused(f, arb__import_fastchat, path, &params, ARB_INVALID,
            ": --baseline \"vicuna\" is neither model_1 nor model_2 of any pairwise judgment");
}

static void fastchat_single(void **state)
{
    fixture *f = *state;
    char path[700];
    snprintf(path, sizeof path, "%s/mt_bench/model_judgment/gpt-4_single.jsonl", f->data);
    assert_int_equal(arb__import_fastchat(path, NULL, f->set, &f->errmsg), ARB_OK);
    assert_int_equal(arb__import_set_count(f->set), 0);
    assert_int_equal(arb__import_set_score_count(f->set), 4);
    static const struct {
        const char *item, *model, *template_name;
        int value;
        const char *reason, *answer;
    } want[] = {
        {"81", "vicuna-13b", "single-v1", 8, NULL, "Aloha! Hawaii is warm."},
        {"81", "gpt-3.5-turbo", "single-v1", -1,
         "FastChat found no [[rating]] in the judgment (score -1)", "Hawaii: sun, sea and song."},
        {"82", "vicuna-13b", "single-v1", -1, "rating 7.5 is not a whole grade from 1 to 10",
         "Dear boss, feedback?"},
        {"81#2", "vicuna-13b", "single-v1-multi-turn", 6, NULL, "A trip to Hawaii is warm."},
    };
    for (size_t k = 0; k < 4; k++) {
        arb__import_score sc = arb__import_set_score_at(f->set, k);
        assert_string_equal(sc.judge, "gpt-4");
        assert_string_equal(sc.kind, "grade10");
        assert_string_equal(sc.item, want[k].item);
        assert_string_equal(sc.model, want[k].model);
        assert_string_equal(sc.template_name, want[k].template_name);
        assert_int_equal(sc.value, want[k].value);
        assert_true(same(sc.reason, want[k].reason));
        assert_true(same(sc.answer, want[k].answer));
        assert_string_equal(sc.category, "writing");
    }
    assert_string_equal(arb__import_set_score_at(f->set, 0).raw, "A fine poem. Rating: [[8]]");
    assert_string_equal(arb__import_set_score_at(f->set, 3).question,
                        "Rewrite it starting every sentence with A.");
}

static void fastchat_loose(void **state)
{
    fixture *f = *state;
    /* outside a model_judgment folder: no texts; the judge from the file name when the line
    ** has none; a judge as a string has no prompt name; single-graded pairs are skipped */
    const char *path = scratch(f, "claude-v1_pair.jsonl",
                               "{\"question_id\": \"q7\", \"model_1\": \"a\", \"model_2\": \"b\", "
                               "\"g1_winner\": \"model_2\", \"g2_winner\": \"error\", "
                               "\"turn\": 3}\n"
                               "{\"question_id\": 5, \"model_1\": \"b\", \"model_2\": \"a\", "
                               "\"g1_winner\": \"tie\", \"g2_winner\": \"tie\", \"judge\": \"me\", "
                               "\"category\": \"math\"}\n"
                               "{\"question_id\": 84, \"model_1\": \"a\", \"model_2\": \"b\", "
                               "\"g1_winner\": \"model_1\", \"g2_winner\": \"model_1\", "
                               "\"judge\": [\"gpt-4\", \"single-v1\"], \"m1_score\": 9, "
                               "\"m2_score\": 3}\n");
    assert_int_equal(arb__import_fastchat(path, NULL, f->set, &f->errmsg), ARB_OK);
    assert_int_equal(arb__import_set_count(f->set), 4);
    assert_int_equal(arb__import_set_skipped(f->set), 1);
    /* ... but its one battle is kept, as the battle importer gives it */
    const arb_battles *own = arb__import_set_own_battles(f->set);
    assert_non_null(own);
    assert_int_equal(arb_battles_count(own), 1);
    arb_battle battle = arb_battles_at(own, 0);
    assert_string_equal(battle.question, "84");
    assert_string_equal(battle.model_i, "a");
    assert_string_equal(battle.reviewer, "gpt-4");
    assert_int_equal(battle.s, -1);
    expect(f, 0, "claude-v1", "q7#3", "a", "b", NULL, 0, 'B', 0);
    expect(f, 1, "claude-v1", "q7#3", "a", "b", NULL, 1, 'E', 0);
    expect(f, 2, "me", "5", "b", "a", NULL, 0, 'C', 0);
    expect_texts(f, 0, NULL, NULL, NULL, NULL, NULL);
    expect_texts(f, 2, "math", NULL, NULL, NULL, NULL); /* a line's own category */
    char where[700];
    snprintf(where, sizeof where, "%s:2", path);
    assert_string_equal(arb__import_set_at(f->set, 2).where, where);
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
        {"{\"question_id\": 81, \"model_1\": \"a\", \"model_2\": \"a\", \"g1_winner\": \"tie\", "
         "\"g2_winner\": \"tie\"}",
         ":2: field \"model_2\": expected a model other than model_1, got string \"a\""},
        {"{\"question_id\": 81, \"model_1\": \"a\", \"model_2\": \"b\", \"g1_winner\": \"A\", "
         "\"g2_winner\": \"tie\"}",
         ":2: field \"g1_winner\": expected \"model_1\", \"model_2\", \"tie\" or \"error\", got "
         "string \"A\""},
        {"{\"question_id\": 81, \"model_1\": \"a\", \"model_2\": \"b\", \"g1_winner\": \"tie\", "
         "\"g2_winner\": \"tie\", \"judge\": [\"gpt-4\", 2]}",
         ":2: field \"judge\": expected [judge model, prompt name] with the prompt name a "
         "non-empty string, got number 2"},
        {"{\"question_id\": 81, \"model_1\": \"a\", \"model_2\": \"b\", \"g1_winner\": \"tie\", "
         "\"g2_winner\": \"tie\"}",
         ":2: field \"judge\": expected [judge model, prompt name] (the file name is not "
         "<judge>_pair.jsonl or <judge>_single.jsonl either), got missing"},
        {"{\"question_id\": 81, \"model\": \"a\", \"score\": \"8\", \"judge\": [\"gpt-4\", "
         "\"single-v1\"]}",
         ":2: field \"score\": expected a number (the judge's [[rating]], -1 when it gave none), "
         "got string \"8\""},
        {"{\"question_id\": 81, \"model\": \"\", \"score\": 8, \"judge\": [\"gpt-4\", "
         "\"single-v1\"]}",
         ":2: field \"model\": expected a non-empty string, got string \"\""},
        /* the same judge, item, pair and shown order twice */
        {"{\"question_id\": 81, \"model_1\": \"b\", \"model_2\": \"a\", \"g1_winner\": \"tie\", "
         "\"g2_winner\": \"tie\", \"judge\": [\"gpt-4\", \"pair-v2\"]}",
         ":2: judge \"gpt-4\" judged item \"81\" (b shown first, a second, rep 0) already at "},
        {"[1]", ":2: expected a JSON object"},
    };
    char text[1024];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(text, sizeof text, "%s%s\n%s", good, cases[k].line, good);
        refused(f, arb__import_fastchat, scratch(f, "bad.jsonl", text), NULL, ARB_PARSE,
                cases[k].msg);
    }
    /* a malformed question.jsonl next to model_judgment is an error of its own file */
    scratch(f, "bench/question.jsonl", "{\"question_id\": 81, \"turns\": \"one\"}\n");
    const char *path = scratch(f, "bench/model_judgment/gpt-4_pair.jsonl", good);
    char *err = NULL;
    assert_int_equal(arb__import_fastchat(path, NULL, f->set, &err), ARB_PARSE);
    assert_non_null(strstr(err, "bench/question.jsonl:1: field \"turns\": expected an array of "
                                "the user's turns, got string \"one\""));
    free(err);
    err = NULL;
    refused(f, arb__import_fastchat, scratch(f, "none.jsonl", NULL), NULL, ARB_NOTFOUND,
            ": cannot open");
}

/* ---- Arena-Hard-Auto ------------------------------------------------------------------------ */

static void arena_hard_v2_folder(void **state)
{
    fixture *f = *state;
    char path[700];
    snprintf(path, sizeof path, "%s/arena-hard-v2.0/model_judgment/gpt-4.1", f->data);
    assert_int_equal(arb__import_arena_hard(path, NULL, f->set, &f->errmsg), ARB_OK);
    /* files in name order (deepseek-r1, qwq-32b); game 1: the baseline first (order 1) */
    assert_int_equal(arb__import_set_count(f->set), 12);
    const char *d = "deepseek-r1", *q = "qwq-32b", *o = "o3-mini", *t = "arena-hard";
    expect(f, 0, "gpt-4.1", "a1", d, o, t, 1, 'B', 1);  /* A<B */
    expect(f, 1, "gpt-4.1", "a1", d, o, t, 0, 'A', 2);  /* B<<A */
    expect(f, 2, "gpt-4.1", "c1", d, "gemini-2.0-flash", t, 1, 'C', 0); /* B=A */
    expect(f, 3, "gpt-4.1", "c1", d, "gemini-2.0-flash", t, 0, 'E', 0); /* A>B>: no verdict */
    expect(f, 4, "gpt-4.1", "a1", q, o, t, 1, 'B', 2);  /* B>>A */
    expect(f, 5, "gpt-4.1", "a1", q, o, t, 0, 'A', 1);  /* A>B */
    expect(f, 6, "gpt-4.1", "a2", q, o, t, 1, 'C', 0);
    expect(f, 7, "gpt-4.1", "a2", q, o, t, 0, 'B', 1);
    expect(f, 8, "gpt-4.1", "a3", q, o, t, 1, 'E', 0);  /* score null */
    expect(f, 9, "gpt-4.1", "a3", q, o, t, 0, 'E', 0);  /* game null */
    expect(f, 10, "gpt-4.1", "a4", q, o, t, 1, 'A', 1);
    expect(f, 11, "gpt-4.1", "a4", q, o, t, 0, 'A', 2);
    expect_texts(f, 4, "hard_prompt", NULL, NULL, NULL, "Assistant B is far better. [[B>>A]]");
    expect_texts(f, 2, "creative_writing", NULL, NULL, NULL, "[[B=A]]");
    expect_texts(f, 9, "hard_prompt", NULL, NULL, NULL, NULL);
    /* --baseline does not override a line that names its own */
    arb__import_set *again = arb__import_set_create();
    arb_import_params params = {.source = "t", .baseline = "gpt-4-0314"};
    assert_int_equal(arb__import_arena_hard(path, &params, again, &f->errmsg), ARB_OK);
    assert_string_equal(arb__import_set_at(again, 0).baseline, "o3-mini");
    arb__import_set_destroy(again);
}

static void arena_hard_v01(void **state)
{
    fixture *f = *state;
    char folder[700], file[800];
    snprintf(folder, sizeof folder, "%s/arena-hard-v0.1/model_judgment/gpt-4-1106-preview",
             f->data);
    snprintf(file, sizeof file, "%s/gpt-4-0613.jsonl", folder);
    /* v0.1 lines do not name the baseline: --baseline is required */
    refused(f, arb__import_arena_hard, folder, NULL, ARB_PARSE,
            "gpt-4-0613.jsonl:1: field \"baseline\": missing: this file does not name the "
            "baseline (Arena-Hard v0.1 keeps it in the run's configuration); give it with "
            "--baseline MODEL");
    arb_import_params params = {.source = "t", .baseline = "gpt-4-0314"};
    assert_int_equal(arb__import_arena_hard(file, &params, f->set, &f->errmsg), ARB_OK);
    assert_int_equal(arb__import_set_count(f->set), 4);
    const char *m = "gpt-4-0613", *b = "gpt-4-0314", *j = "gpt-4-1106-preview";
    expect(f, 0, j, "328c149ed45a41c0", m, b, "arena-hard", 1, 'B', 1);
    expect(f, 1, j, "328c149ed45a41c0", m, b, "arena-hard", 0, 'A', 1);
    expect(f, 2, j, "7b2368d8c5f54e0f", m, b, "arena-hard", 1, 'A', 2);
    expect(f, 3, j, "7b2368d8c5f54e0f", m, b, "arena-hard", 0, 'B', 2);
    expect_texts(f, 0, NULL, NULL, NULL, NULL, "Assistant B is better.\n\nMy final verdict is: "
                 "[[B>A]]");
}

static void arena_hard_names(void **state)
{
    fixture *f = *state;
    /* a line without model and judge: the file name and the folder name say */
    const char *path = scratch(f, "judges/my-judge/model-x.jsonl",
                               "{\"question_id\": 7, \"games\": [{\"score\": \"A>B\"}, "
                               "{\"score\": \"B>>A\"}]}\n");
    arb_import_params params = {.source = "t", .baseline = "base"};
    assert_int_equal(arb__import_arena_hard(path, &params, f->set, &f->errmsg), ARB_OK);
    expect(f, 0, "my-judge", "7", "model-x", "base", "arena-hard", 1, 'A', 1);
    expect(f, 1, "my-judge", "7", "model-x", "base", "arena-hard", 0, 'B', 2);
    /* the folder: only *.jsonl files count; none is an error */
    scratch(f, "judges/my-judge/notes.txt", "not judgments\n");
    arb__import_set *again = arb__import_set_create();
    snprintf(f->path, sizeof f->path, "%s/judges/my-judge/", f->dir);
    assert_int_equal(arb__import_arena_hard(f->path, &params, again, &f->errmsg), ARB_OK);
    assert_int_equal(arb__import_set_count(again), 2);
    arb__import_set_destroy(again);
    char empty[700];
    snprintf(empty, sizeof empty, "%s/judges/empty", f->dir);
    mkdir(empty, 0700);
    refused(f, arb__import_arena_hard, empty, &params, ARB_NOTFOUND,
            ": no <model>.jsonl files: expected an Arena-Hard-Auto model_judgment/<judge>/ "
            "folder");
}

static void arena_hard_refusals(void **state)
{
    fixture *f = *state;
    static const char good[] = "{\"uid\": \"u0\", \"judge\": \"j\", \"model\": \"m\", "
                               "\"baseline\": \"b\", \"games\": [{\"score\": \"A>B\"}, "
                               "{\"score\": \"B>A\"}]}\n";
    static const struct {
        const char *line;
        const char *msg;
    } cases[] = {
        {"{\"uid\": \"u1\", \"judge\": \"j\", \"model\": \"m\", \"baseline\": \"b\", \"games\": "
         "[{\"score\": \"A>C\"}, {\"score\": \"B>A\"}]}",
         ":2: field \"games[0].score\": expected a verdict label \"A>>B\", \"A>B\", \"A=B\", "
         "\"B>A\" or \"B>>A\", or null, got string \"A>C\""},
        {"{\"uid\": \"u1\", \"judge\": \"j\", \"model\": \"m\", \"baseline\": \"b\", \"games\": "
         "[{\"score\": \"A>B\"}, {\"score\": 3}]}",
         ":2: field \"games[1].score\": expected a verdict label"},
        {"{\"uid\": \"u1\", \"judge\": \"j\", \"model\": \"m\", \"baseline\": \"b\", \"games\": "
         "[{\"score\": \"A>B\"}]}",
         ":2: field \"games\": expected an array of the two games (baseline shown first, then "
         "the model), got array"},
        {"{\"uid\": \"u1\", \"judge\": \"j\", \"model\": \"b\", \"baseline\": \"b\", \"games\": "
         "[{\"score\": \"A>B\"}, {\"score\": \"B>A\"}]}",
         ":2: field \"model\": expected a model other than the baseline, got \"b\" for both"},
        {"{\"judge\": \"j\", \"model\": \"m\", \"baseline\": \"b\", \"games\": []}",
         ":2: field \"question_id\": expected an integer or a non-empty string (uid in v2.0 "
         "files, question_id in v0.1), got missing"},
        {"{\"uid\": \"u1\", \"judge\": \"j\", \"model\": \"m\", \"baseline\": \"b\", \"games\": "
         "[\"A>B\", {\"score\": \"B>A\"}]}",
         ":2: field \"games[0]\": expected an object {score, judgment} or null, got string"},
        {"{\"uid\": \"u1\", \"judge\": 4, \"model\": \"m\", \"baseline\": \"b\", \"games\": []}",
         ":2: field \"judge\": expected a non-empty string, got number 4"},
        {"{\"uid\": \"u0\", \"judge\": \"j\", \"model\": \"m\", \"baseline\": \"b\", \"games\": "
         "[{\"score\": \"A>B\"}, {\"score\": \"B>A\"}]}",
         ":2: judge \"j\" judged item \"u0\" (b shown first, m second, rep 0) already at "},
    };
    char text[1024];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(text, sizeof text, "%s%s\n%s", good, cases[k].line, good);
        refused(f, arb__import_arena_hard, scratch(f, "j/m.jsonl", text), NULL, ARB_PARSE,
                cases[k].msg);
    }
    refused(f, arb__import_arena_hard, scratch(f, "j/m.txt", good), NULL, ARB_INVALID,
            ": expected a <model>.jsonl file or a model_judgment/<judge>/ folder");
    refused(f, arb__import_arena_hard, scratch(f, "j/missing", NULL), NULL, ARB_NOTFOUND,
            ": cannot open");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(fastchat_pairs, setup, teardown),
        cmocka_unit_test_setup_teardown(fastchat_baseline_flag, setup, teardown),
        cmocka_unit_test_setup_teardown(fastchat_single, setup, teardown),
        cmocka_unit_test_setup_teardown(fastchat_loose, setup, teardown),
        cmocka_unit_test_setup_teardown(fastchat_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(arena_hard_v2_folder, setup, teardown),
        cmocka_unit_test_setup_teardown(arena_hard_v01, setup, teardown),
        cmocka_unit_test_setup_teardown(arena_hard_names, setup, teardown),
        cmocka_unit_test_setup_teardown(arena_hard_refusals, setup, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
