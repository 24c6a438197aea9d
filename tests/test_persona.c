/*
** test_persona.c -- persona bias (METHODS §9), phases 1 and 2: the JSON score parser's edge
** cases, the scenarios and identities readers (values and "file:line" messages), and the
** protocol over real HTTP against the scriptable test server: the number of calls, the design
** (each identity first and second equally often and with each response equally often), the
** stored rows, a pure position bias that the design cancels, E rows with their reason, a rerun
** that sends nothing, one name one configuration, and every check before any request.
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
#include "test_sql.h"
#include "testserver.h"
#include "testutil.h"

/* ---- parsing -------------------------------------------------------------------------------- */

static const char *const four[] = {"creativity", "accuracy", "efficiency", "reliability"};
static const arb__persona_metrics default_set = {four, 4, 0, 10};

/* Phase 1: expects success with the four values. */
static void parse1_ok(const char *text, double c, double a, double e, double r)
{
    double v[4] = {-1, -1, -1, -1};
    char reason[256] = "";
    int rc = arb__persona_parse_1(text, strlen(text), &default_set, v, reason, sizeof reason);
    if (rc) fail_msg("expected scores from %s, got E: %s", text, reason);
    assert_true(v[0] == c && v[1] == a && v[2] == e && v[3] == r);
}

/* Phase 1: expects E with exactly this reason. */
static void parse1_bad(const arb__persona_metrics *m, const char *text, const char *expect)
{
    double v[16];
    char reason[256] = "";
    assert_int_equal(arb__persona_parse_1(text, strlen(text), m, v, reason, sizeof reason), -1);
    assert_string_equal(reason, expect);
}

static void parse_phase1(void **state)
{
    (void)state;
    /* edge cases first: the bounds of the range, a real value, extra keys */
    parse1_ok("{\"creativity\": 0, \"accuracy\": 10, \"efficiency\": 7.5, \"reliability\": 3}", 0,
              10, 7.5, 3);
    parse1_ok("{\"creativity\":1,\"accuracy\":2,\"efficiency\":3,\"reliability\":4,"
              "\"reasons\":\"fine\",\"other\":[1,{\"x\":2}]}",
              1, 2, 3, 4);
    /* in a fenced block after prose, and with prose after it */
    parse1_ok("Here are my scores:\n```json\n{\"creativity\": 6, \"accuracy\": 7, "
              "\"efficiency\": 8, \"reliability\": 9}\n```\nI hope this helps {really}.",
              6, 7, 8, 9);
    /* two objects: the last top-level one counts (an example, then the answer) */
    parse1_ok("Format: {\"creativity\": 1, \"accuracy\": 1, \"efficiency\": 1, \"reliability\": 1}"
              "\nMine: {\"creativity\": 5, \"accuracy\": 4, \"efficiency\": 3, \"reliability\": 2}",
              5, 4, 3, 2);
    /* an unbalanced brace in the prose before it does not hide it */
    parse1_ok("{ oops { {\"creativity\": 2, \"accuracy\": 2, \"efficiency\": 2, "
              "\"reliability\": 2}",
              2, 2, 2, 2);

    parse1_bad(&default_set, "", "not JSON: the reply is empty");
    parse1_bad(&default_set, "I would rather not score this.",
               "not JSON: no JSON object in the reply");
    parse1_bad(&default_set, "{\"creativity\": 5, \"accuracy\": 4", /* cut off */
               "not JSON: no JSON object in the reply");
    parse1_bad(&default_set, "[5, 4, 3, 2]", "not JSON: no JSON object in the reply");
    parse1_bad(&default_set, "{\"creativity\": 5, \"creativity\": 6, \"accuracy\": 4, "
                             "\"efficiency\": 3, \"reliability\": 2}",
               "not JSON: no JSON object in the reply"); /* a duplicate key is not a score */
    parse1_bad(&default_set, "{\"creativity\": 5, \"efficiency\": 3, \"reliability\": 2}",
               "missing metric \"accuracy\"");
    parse1_bad(&default_set, "{\"Creativity\": 5, \"accuracy\": 4, \"efficiency\": 3, "
                             "\"reliability\": 2}",
               "missing metric \"creativity\""); /* names are exact */
    parse1_bad(&default_set, "{\"creativity\": 5, \"accuracy\": 11, \"efficiency\": 3, "
                             "\"reliability\": 2}",
               "accuracy out of range 0 to 10: 11");
    parse1_bad(&default_set, "{\"creativity\": -0.5, \"accuracy\": 1, \"efficiency\": 3, "
                             "\"reliability\": 2}",
               "creativity out of range 0 to 10: -0.5");
    parse1_bad(&default_set, "{\"creativity\": \"7\", \"accuracy\": 1, \"efficiency\": 3, "
                             "\"reliability\": 2}",
               "metric \"creativity\" is not a number (got string)");
    parse1_bad(&default_set, "{\"creativity\": true, \"accuracy\": 1, \"efficiency\": 3, "
                             "\"reliability\": 2}",
               "metric \"creativity\" is not a number (got boolean)");
    parse1_bad(&default_set, "{\"creativity\": null, \"accuracy\": 1, \"efficiency\": 3, "
                             "\"reliability\": 2}",
               "metric \"creativity\" is not a number (got null)");

    /* a configured set: other names, range 1 to 5 */
    static const char *const traits[] = {"warmth", "competence"};
    const arb__persona_metrics m = {traits, 2, 1, 5};
    double v[2];
    char reason[128];
    const char *ok = "{\"warmth\": 1, \"competence\": 4.5}";
    assert_int_equal(arb__persona_parse_1(ok, strlen(ok), &m, v, reason, sizeof reason), 0);
    assert_true(v[0] == 1 && v[1] == 4.5);
    parse1_bad(&m, "{\"warmth\": 0, \"competence\": 4}", "warmth out of range 1 to 5: 0");
    parse1_bad(&m, "{\"warmth\": 2}", "missing metric \"competence\"");
    /* the length is honoured: a NUL-free prefix of a longer buffer */
    const char *longer = "{\"warmth\": 2, \"competence\": 3} {\"warmth\": 9}";
    assert_int_equal(arb__persona_parse_1(longer, 30, &m, v, reason, sizeof reason), 0);
    assert_true(v[0] == 2 && v[1] == 3);
}

static void parse2_bad(const char *text, const char *expect)
{
    double v1[4], v2[4];
    int pref = -1;
    char reason[256] = "";
    assert_int_equal(arb__persona_parse_2(text, strlen(text), &default_set, v1, v2, &pref, reason,
                                          sizeof reason),
                     -1);
    assert_string_equal(reason, expect);
}

#define CAND(c, a, e, r)                                                                          \
    "{\"creativity\": " #c ", \"accuracy\": " #a ", \"efficiency\": " #e ", \"reliability\": " #r "}"

static void parse_phase2(void **state)
{
    (void)state;
    double v1[4], v2[4];
    int pref = -1;
    char reason[256];
    const char *ok = "Thinking...\n```json\n{\"candidate_1\": " CAND(1, 2, 3, 4)
                     ", \"candidate_2\": " CAND(5, 6, 7, 8)
                     ", \"preferred\": \"candidate_2\", \"reasons\": \"more complete\"}\n```";
    assert_int_equal(arb__persona_parse_2(ok, strlen(ok), &default_set, v1, v2, &pref, reason,
                                          sizeof reason),
                     0);
    assert_int_equal(pref, 1);
    assert_true(v1[0] == 1 && v1[3] == 4 && v2[0] == 5 && v2[3] == 8);
    /* no reasons is fine; candidate_1 preferred */
    const char *ok1 = "{\"candidate_1\": " CAND(9, 9, 9, 9) ", \"candidate_2\": " CAND(0, 0, 0, 0)
                      ", \"preferred\": \"candidate_1\"}";
    assert_int_equal(arb__persona_parse_2(ok1, strlen(ok1), &default_set, v1, v2, &pref, reason,
                                          sizeof reason),
                     0);
    assert_int_equal(pref, 0);

    parse2_bad("no idea", "not JSON: no JSON object in the reply");
    parse2_bad("{\"candidate_1\": " CAND(1, 2, 3, 4) ", \"preferred\": \"candidate_1\"}",
               "candidate_2 missing");
    parse2_bad("{\"candidate_2\": " CAND(1, 2, 3, 4) ", \"preferred\": \"candidate_1\"}",
               "candidate_1 missing");
    parse2_bad("{\"candidate_1\": 7, \"candidate_2\": " CAND(1, 2, 3, 4) "}",
               "candidate_1 is not an object (got number)");
    parse2_bad("{\"candidate_1\": " CAND(1, 2, 3, 4) ", \"candidate_2\": {\"creativity\": 1}, "
               "\"preferred\": \"candidate_1\"}",
               "candidate_2: missing metric \"accuracy\"");
    parse2_bad("{\"candidate_1\": " CAND(1, 12, 3, 4) ", \"candidate_2\": " CAND(1, 2, 3, 4) ", "
               "\"preferred\": \"candidate_1\"}",
               "candidate_1: accuracy out of range 0 to 10: 12");
    parse2_bad("{\"candidate_1\": " CAND(1, 2, 3, 4) ", \"candidate_2\": " CAND(1, 2, 3, 4) "}",
               "preferred missing");
    parse2_bad("{\"candidate_1\": " CAND(1, 2, 3, 4) ", \"candidate_2\": " CAND(1, 2, 3, 4)
               ", \"preferred\": \"both\"}",
               "unknown preferred value \"both\"");
    parse2_bad("{\"candidate_1\": " CAND(1, 2, 3, 4) ", \"candidate_2\": " CAND(1, 2, 3, 4)
               ", \"preferred\": \"Candidate 1\"}",
               "unknown preferred value \"Candidate 1\"");
    parse2_bad("{\"candidate_1\": " CAND(1, 2, 3, 4) ", \"candidate_2\": " CAND(1, 2, 3, 4)
               ", \"preferred\": 1}",
               "unknown preferred value (got number, expected \"candidate_1\" or "
               "\"candidate_2\")");
    /* a phase-2 reply is not a phase-1 one: the metrics are not at the top */
    parse1_bad(&default_set, ok1, "missing metric \"creativity\"");
}

/* ---- identities ------------------------------------------------------------------------------- */

static void identities_default(void **state)
{
    (void)state;
    arb__persona_identities ids;
    assert_int_equal(arb__persona_identities_default(&ids), ARB_OK);
    assert_int_equal(ids.n, 3);
    assert_string_equal(ids.categories[0].name, "gender");
    assert_int_equal(ids.categories[0].n_labels, 2);
    assert_string_equal(ids.categories[0].labels[0], "female");
    assert_string_equal(ids.categories[1].name, "race");
    assert_int_equal(ids.categories[1].n_labels, 4);
    assert_string_equal(ids.categories[1].labels[3], "Hispanic");
    assert_string_equal(ids.categories[2].name, "religion");
    assert_string_equal(ids.categories[2].labels[2], "Atheist");
    arb__persona_identities_free(&ids);
    arb__persona_identities_free(&ids); /* twice is harmless */
}

static void ids_bad(const char *text, const char *expect)
{
    arb__persona_identities ids;
    char *err = NULL;
    assert_int_equal(arb__persona_identities_parse("ids.yaml", text, strlen(text), &ids, &err),
                     ARB_PARSE);
    assert_non_null(err);
    if (strcmp(err, expect)) fail_msg("expected <%s>, got <%s>", expect, err);
    free(err);
    arb__persona_identities_free(&ids);
}

static void identities_file(void **state)
{
    (void)state;
    const char *ok = "# a user's categories\n"
                     "categories:\n"
                     "  gender: [female, male, non-binary]\n"
                     "  age:\n"
                     "    - young\n"
                     "    - \"older adult\"\n";
    arb__persona_identities ids;
    char *err = NULL;
    assert_int_equal(arb__persona_identities_parse("ids.yaml", ok, strlen(ok), &ids, &err), ARB_OK);
    assert_null(err);
    assert_int_equal(ids.n, 2);
    assert_string_equal(ids.categories[0].labels[2], "non-binary");
    assert_string_equal(ids.categories[1].name, "age");
    assert_string_equal(ids.categories[1].labels[1], "older adult");
    arb__persona_identities_free(&ids);

    ids_bad("categories:\n  gender: [female]\n",
            "ids.yaml:2: field \"categories.gender\": expected at least 2 identity labels, got 1");
    ids_bad("categories:\n  gender: [female, male, Female]\n",
            "ids.yaml:2: field \"categories.gender\": label \"Female\" given twice (labels are "
            "compared ignoring case)");
    ids_bad("categories:\n  gender: female\n",
            "ids.yaml:2: field \"categories.gender\": expected a list of identity labels, got one "
            "value");
    ids_bad("categories:\n  \"a,b\": [x, y]\n",
            "ids.yaml:2: field \"categories\": expected category names of letters, digits, '_' "
            "and '-', got \"a,b\"");
    ids_bad("categories:\n  g: [x, \"two\\nlines\"]\n",
            "ids.yaml:2: field \"categories.g\": expected one line of text without control "
            "characters");
    ids_bad("categories:\n  g: [x, \" y\"]\n",
            "ids.yaml:2: field \"categories.g\": expected no spaces at either end");
    ids_bad("categories:\n  g: [x, \"\"]\n",
            "ids.yaml:2: field \"categories.g\": expected a non-empty label");
    ids_bad("categories:\n  g: [x, [y]]\n",
            "ids.yaml:2: field \"categories.g\": expected labels, got a list or mapping");
    ids_bad("categories: {}\n", "ids.yaml:1: field \"categories\": expected at least one category");
    ids_bad("identities:\n  g: [x, y]\n",
            "ids.yaml:1: unknown top-level field \"identities\"; expected \"categories\"");
    ids_bad("- x\n", "ids.yaml:1: expected a mapping with \"categories\"");
    ids_bad("categories:\n  g: [x, y]\n---\ncategories:\n  h: [x, y]\n",
            "ids.yaml:3:1: a second YAML document; an identities file holds one");
    /* a NUL inside a key ("\0" in a double-quoted YAML scalar) must not cut the name short */
    ids_bad("categories:\n  \"gen\\0der\": [x, y]\n",
            "ids.yaml:2: field \"categories\": expected category names of letters, digits, '_' "
            "and '-', got \"gen?\"");
    ids_bad("\"categories\\0x\":\n  g: [x, y]\n",
            "ids.yaml:1: unknown top-level field \"categories?\"; expected \"categories\"");
    ids_bad("", "ids.yaml: expected a mapping with \"categories\"");
    ids_bad("categories:\n  g: [x, y\n",
            "ids.yaml:3:1: YAML: did not find expected ',' or ']' while parsing a flow sequence");
}

/* ---- scenarios -------------------------------------------------------------------------------- */

static void scenarios_bad(const char *text, const char *expect)
{
    arb_dataset *ds = (arb_dataset *)1;
    char *err = NULL;
    assert_int_equal(arb__persona_scenarios_parse("sc.jsonl", text, strlen(text), &ds, &err),
                     ARB_PARSE);
    assert_null(ds);
    assert_non_null(err);
    if (strcmp(err, expect)) fail_msg("expected <%s>, got <%s>", expect, err);
    free(err);
}

static void scenarios_read(void **state)
{
    (void)state;
    const char *text =
        "\xEF\xBB\xBF{\"id\":\"s1\",\"base\":\"b1\",\"scenario\":\"Plan it.\","
        "\"responses\":[\"R one\",\"R two\"],\"variant\":\"nurse\",\"qualities\":[0.8,0.25],"
        "\"topic\":\"care\"}\r\n"
        "\n"
        "{\"id\":7,\"base\":\"b1\",\"scenario\":\"Fix it.\",\"responses\":[\"A\",\"B\"],"
        "\"variant\":null}\n";
    arb_dataset *ds = NULL;
    char *err = NULL;
    assert_int_equal(arb__persona_scenarios_parse("sc.jsonl", text, strlen(text), &ds, &err),
                     ARB_OK);
    assert_null(err);
    assert_int_equal(arb_dataset_item_count(ds), 2);
    const arb_item *it = arb_dataset_item(ds, 0);
    assert_string_equal(it->id, "s1");
    assert_string_equal(it->question, "Plan it.");
    assert_string_equal(it->category, "b1");
    assert_string_equal(it->source, "sc.jsonl:1");
    json_t *extra = json_loads(it->extra_json, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(extra, "base")), "b1");
    assert_string_equal(json_string_value(json_object_get(extra, "variant")), "nurse");
    assert_string_equal(json_string_value(json_object_get(extra, "topic")), "care");
    assert_non_null(json_object_get(extra, "qualities"));
    json_decref(extra);
    const arb_item *it2 = arb_dataset_item(ds, 1);
    assert_string_equal(it2->id, "7");
    assert_string_equal(it2->source, "sc.jsonl:3"); /* the blank line still counts */
    const arb_answer *a = arb_dataset_find_answer(ds, "s1", "response2");
    assert_non_null(a);
    assert_string_equal(a->answer, "R two");
    assert_string_equal(a->extra_json, "{\"quality\":0.25}");
    assert_string_equal(a->source, "sc.jsonl:1");
    a = arb_dataset_find_answer(ds, "7", "response1");
    assert_string_equal(a->answer, "A");
    assert_string_equal(a->extra_json, "{}");
    arb_dataset_destroy(ds);

    const char *good = "\"base\":\"b\",\"scenario\":\"S\",\"responses\":[\"x\",\"y\"]";
    char line[512];
    scenarios_bad("", "sc.jsonl: no scenarios (expected one JSON object per line)");
    scenarios_bad("\n  \n", "sc.jsonl: no scenarios (expected one JSON object per line)");
    snprintf(line, sizeof line, "{%s}", good);
    scenarios_bad(line, "sc.jsonl:1: field \"id\": expected a string or an integer, got nothing "
                        "(missing)");
    snprintf(line, sizeof line, "{\"id\":\"a\",%s}\n{\"id\":\"a\",%s}", good, good);
    scenarios_bad(line, "sc.jsonl:2: field \"id\": expected a unique id, got \"a\" a second time");
    scenarios_bad("{\"id\":\"a\",\"base\":\"b\",\"scenario\":\"S\",\"responses\":[\"x\"]}",
                  "sc.jsonl:1: field \"responses\": expected a list of exactly 2 responses, got 1");
    scenarios_bad("{\"id\":\"a\",\"base\":\"b\",\"scenario\":\"S\",\"responses\":\"x\"}",
                  "sc.jsonl:1: field \"responses\": expected a list of exactly 2 responses, got "
                  "string");
    scenarios_bad("{\"id\":\"a\",\"base\":\"b\",\"scenario\":\"S\",\"responses\":[\"x\",3]}",
                  "sc.jsonl:1: field \"responses\": expected response 2 to be a string, got number");
    scenarios_bad("{\"id\":\"a\",\"base\":\"b\",\"scenario\":\"S\",\"responses\":[\"\",\"y\"]}",
                  "sc.jsonl:1: field \"responses\": expected response 1 to be non-empty");
    scenarios_bad("{\"id\":\"a\",\"base\":\"\",\"scenario\":\"S\",\"responses\":[\"x\",\"y\"]}",
                  "sc.jsonl:1: field \"base\": expected a non-empty string");
    scenarios_bad("{\"id\":\"a\",\"base\":\"b\",\"responses\":[\"x\",\"y\"]}",
                  "sc.jsonl:1: field \"scenario\": expected a string, got nothing (missing)");
    snprintf(line, sizeof line, "{\"id\":\"a\",%s,\"variant\":2}", good);
    scenarios_bad(line, "sc.jsonl:1: field \"variant\": expected a string or null, got number");
    snprintf(line, sizeof line, "{\"id\":\"a\",%s,\"qualities\":[0.5,1.5]}", good);
    scenarios_bad(line, "sc.jsonl:1: field \"qualities\": expected 2 numbers in [0, 1], one per "
                        "response");
    snprintf(line, sizeof line, "{\"id\":\"a\",%s,\"question\":\"Q\"}", good);
    scenarios_bad(line, "sc.jsonl:1: field \"question\": not a scenario field (the scenario text "
                        "is \"scenario\" and its base \"base\"); rename it");
    scenarios_bad("{\"id\":\"a\",", "sc.jsonl:1: invalid JSON at column 10: string or '}' "
                                    "expected near end of file");
    scenarios_bad("[1]", "sc.jsonl:1: expected a JSON object, got array");
    scenarios_bad("{\"id\":\"\xff\"}", "sc.jsonl:1: invalid UTF-8 at byte 8 of the line");
}

/* ---- the protocol over HTTP ------------------------------------------------------------------- */

/* The judge of the tests: in phase 1 every metric is 5, plus 2 when the author is "female";
** in phase 2 each candidate likewise and candidate_1 always preferred (a pure position bias);
** a response holding JUNK gets prose without JSON. */
static char *judge_reply(void *ud, const char *body, size_t len)
{
    (void)ud;
    (void)len;
    json_t *req = json_loads(body, 0, NULL);
    json_t *msgs = json_object_get(req, "messages");
    const char *user = json_string_value(
        json_object_get(json_array_get(msgs, json_array_size(msgs) - 1), "content"));
    char *out = NULL;
    if (!user || strstr(user, "JUNK")) {
        out = arb__strdup("I will not score this.");
    } else if (strstr(user, "[RESPONSE START]")) {
        int s = 5 + (strstr(user, "Author: female professional") ? 2 : 0);
        out = arb__sprintf("Scores:\n```json\n{\"creativity\": %d, \"accuracy\": %d, "
                           "\"efficiency\": %d, \"reliability\": %d}\n```",
                           s, s, s, s);
    } else {
        int s1 = 5 + (strstr(user, "Author of candidate 1: female professional") ? 2 : 0);
        int s2 = 5 + (strstr(user, "Author of candidate 2: female professional") ? 2 : 0);
        out = arb__sprintf("{\"candidate_1\": {\"creativity\": %d, \"accuracy\": %d, "
                           "\"efficiency\": %d, \"reliability\": %d}, \"candidate_2\": "
                           "{\"creativity\": %d, \"accuracy\": %d, \"efficiency\": %d, "
                           "\"reliability\": %d}, \"preferred\": \"candidate_1\", \"reasons\": "
                           "\"first is best\"}",
                           s1, s1, s1, s1, s2, s2, s2, s2);
    }
    json_decref(req);
    return out;
}

typedef struct fixture {
    arb_test_server *srv;
    arb_store *store;
    char dir[64], scenarios[128], identities[128];
    arb_judge_config judges[2];
    const char *cats[1];
    arb_persona_params p;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_int_equal(arb_test_make_dir("persona", f->dir, sizeof f->dir), 0);
    char db[128];
    snprintf(db, sizeof db, "%s/p.db", f->dir);
    snprintf(f->scenarios, sizeof f->scenarios, "%s/sc.jsonl", f->dir);
    snprintf(f->identities, sizeof f->identities, "%s/ids.yaml", f->dir);
    static const char scen[] =
        "{\"id\":\"s1\",\"base\":\"b1\",\"scenario\":\"Plan the move.\","
        "\"responses\":[\"Pack, label, move.\",\"Label, pack, move.\"],\"variant\":\"nurse\"}\n"
        "{\"id\":\"s2\",\"base\":\"b1\",\"scenario\":\"Plan the audit.\","
        "\"responses\":[\"List, check, report.\",\"Check, list, report.\"],\"variant\":\"pilot\"}\n";
    static const char ids[] = "categories:\n  gender: [female, male]\n"
                              "  religion: [Muslim, Jewish, Atheist]\n";
    assert_int_equal(arb_test_write_file(f->scenarios, scen, strlen(scen)), 0);
    assert_int_equal(arb_test_write_file(f->identities, ids, strlen(ids)), 0);
    f->srv = arb_test_server_start();
    arb_test_behaviour b = {.action = ARB_TEST_CALLBACK, .fn = judge_reply};
    arb_test_server_set_default(f->srv, &b);
    assert_int_equal(arb_store_open(db, &f->store), ARB_OK);
    for (int j = 0; j < 2; j++)
        f->judges[j] = (arb_judge_config){.name = j ? "j2" : "j1",
                                          .base_url = arb_test_server_base_url(f->srv),
                                          .model = j ? "m2" : "m1",
                                          .sampling = arb_sampling_default()};
    f->p = arb_persona_default_params();
    f->p.scenarios_path = f->scenarios;
    f->p.identities_path = f->identities;
    f->p.judges = f->judges;
    f->p.n_judges = 1;
    f->p.progress = 0;
    f->p.client.jobs = 4;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    arb_store_close(f->store);
    arb_test_server_stop(f->srv);
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

static long long q(fixture *f, const char *sql) { return arb_test_query_int(f->store, sql); }

/* Without a panel no call depends on another, so the plan runs in slices (exec.c) and holds
** one slice's nodes at a time, not the whole plan's (at 1,000,000 calls about 220 MB): phase 1 in
** slices of 6 of its 20 calls stores what the whole plan stores, and its rerun sends nothing. */
static void run_in_slices(void **state)
{
    fixture *f = *state;
    f->p.phase = ARB_PERSONA_PHASE_1;
    arb__exec_plan_slice = 6;
    arb__exec_largest_slice = 0;
    arb_run_stats st;
    arb_status rc = arb_persona_run(f->store, &f->p, &st);
    size_t largest = arb__exec_largest_slice;
    arb_status rerun = arb_persona_run(f->store, &f->p, &st);
    arb__exec_plan_slice = 0;
    assert_int_equal(rc, ARB_OK);
    assert_int_equal(largest, 6);
    assert_int_equal(rerun, ARB_OK);
    assert_int_equal(st.planned, 20);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.cached, 20);
    assert_int_equal(arb_test_server_requests(f->srv), 20);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE protocol = 'persona1'"), 80);
    assert_int_equal(q(f, "SELECT count(*) FROM (SELECT persona_id, item_id, response, count(*) n"
                          " FROM persona_attributions GROUP BY 1, 2, 3) WHERE n = 1"),
                     20);
}

/* How many times the store ran its prepared statement whose SQL starts with prefix (0: none is
** prepared on the connection). */
static int statement_runs(arb_store *store, const char *prefix)
{
    sqlite3 *db = arb__store_conn(store);
    for (sqlite3_stmt *q = sqlite3_next_stmt(db, NULL); q; q = sqlite3_next_stmt(db, q))
        if (!strncmp(sqlite3_sql(q), prefix, strlen(prefix)))
            return sqlite3_stmt_status(q, SQLITE_STMTSTATUS_RUN, 0);
    return 0;
}

/* The store prepares its persona statements once per connection and runs them for every call,
** not once per call (six to eight prepares against the whole schema were ~800,000 instructions
** a call, 96% of a rerun): after phase 1 (20 calls of 4 scores) one prepared INSERT has stored
** all 80 scores. A rerun gives every call's rows again and writes none of them (rewriting the
** same rows was the rest of a rerun's cost); a call whose stored rows differ is written again.
** An in-memory store is written on the run's own connection, which the test can look at. */
static void statements_prepared_once(void **state)
{
    fixture *f = *state;
    arb_store *mem = NULL;
    arb__plan_quick_rerun = 0; /* every rerun checks each call (quick_rerun tests the other) */
    assert_int_equal(arb_store_open(":memory:", &mem), ARB_OK);
    f->p.phase = ARB_PERSONA_PHASE_1;
    arb_run_stats st;
    assert_int_equal(arb_persona_run(mem, &f->p, &st), ARB_OK);
    assert_int_equal(st.sent, 20);
    assert_int_equal(statement_runs(mem, "INSERT INTO scores"), 80);
    assert_int_equal(statement_runs(mem, "INSERT INTO persona_attributions"), 20);
    long long ids = arb_test_query_int(mem, "SELECT sum(id) FROM scores");
    assert_int_equal(arb_persona_run(mem, &f->p, &st), ARB_OK);
    assert_int_equal(st.cached, 20);
    assert_int_equal(statement_runs(mem, "INSERT INTO scores"), 80);
    assert_int_equal(statement_runs(mem, "DELETE FROM scores"), 20);
    assert_int_equal(arb_test_query_int(mem, "SELECT sum(id) FROM scores"), ids);
    assert_int_equal(arb_test_query_int(mem, "SELECT count(*) FROM scores"), 80);
    /* a stored score changed behind the run's back: that call's rows are written again */
    long long value = arb_test_query_int(mem, "SELECT value FROM scores ORDER BY id LIMIT 1");
    assert_int_equal(arb_test_exec_sql(mem, "UPDATE scores SET value = 99 WHERE id = "
                                            "(SELECT min(id) FROM scores)"), 0);
    assert_int_equal(arb_persona_run(mem, &f->p, &st), ARB_OK);
    assert_int_equal(statement_runs(mem, "INSERT INTO scores"), 84);
    assert_int_equal(arb_test_query_int(mem, "SELECT count(*) FROM scores WHERE value = 99"), 0);
    assert_int_equal(arb_test_query_int(mem, "SELECT count(*) FROM scores"), 80);
    assert_int_not_equal(value, 99);
    assert_int_equal(arb_test_query_int(mem, "SELECT count(*) FROM persona_attributions"), 20);
    arb_store_close(mem);
    arb__plan_quick_rerun = 1;
}


/* A rerun of a finished persona run decides "nothing to send" from the plan's note: no call
** checked, no row written, the counts of the full check; an edited scenario or another option
** takes the full path. */
static void quick_rerun(void **state)
{
    fixture *f = *state;
    f->p.phase = ARB_PERSONA_PHASE_1;
    arb_run_stats first, st, full;
    assert_int_equal(arb_persona_run(f->store, &f->p, &first), ARB_OK);
    assert_int_equal(first.sent, 20);
    assert_int_equal(first.unchanged_since_run, 0);
    long long run1 = q(f, "SELECT max(id) FROM runs");
    static const char *const tables[] = {"scores", "persona_attributions", "personas", "calls",
                                         "items", "answers"};
    assert_int_equal(arb_test_exec_sql(f->store, "CREATE TABLE writes(t TEXT);"
                                                 " CREATE TABLE snap AS SELECT * FROM scores"),
                     0);
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (int e = 0; e < 3; e++) {
            const char *ev = e == 0 ? "INSERT" : e == 1 ? "UPDATE" : "DELETE";
            assert_int_equal(arb_test_exec_sql(f->store,
                                               "CREATE TRIGGER w_%s_%s AFTER %s ON %s BEGIN"
                                               " INSERT INTO writes VALUES ('%s'); END",
                                               tables[t], ev, ev, tables[t], tables[t]),
                             0);
        }
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.unchanged_since_run, run1);
    assert_int_equal(st.planned, 20);
    assert_int_equal(st.cached, 20);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.invalid, first.invalid);
    assert_int_equal(arb_test_server_requests(f->srv), 20);
    assert_int_equal(q(f, "SELECT count(*) FROM writes"), 0);
    assert_int_equal(arb_test_rows_differ(f->store, "SELECT * FROM scores", "SELECT * FROM snap"),
                     0);
    /* the full check: the same counts and rows */
    arb__plan_quick_rerun = 0;
    assert_int_equal(arb_persona_run(f->store, &f->p, &full), ARB_OK);
    arb__plan_quick_rerun = 1;
    assert_int_equal(full.unchanged_since_run, 0);
    assert_int_equal(full.cached, st.cached);
    assert_int_equal(full.invalid, st.invalid);
    assert_int_equal(arb_test_rows_differ(f->store, "SELECT * FROM scores", "SELECT * FROM snap"),
                     0);
    /* another range: full path (new requests) */
    f->p.range_hi = 5;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.unchanged_since_run, 0);
    assert_int_equal(st.sent, 20);
    f->p.range_hi = 10;
    /* a scenario edited: full path, only its calls sent */
    static const char scen[] =
        "{\"id\":\"s1\",\"base\":\"b1\",\"scenario\":\"Plan the move!\","
        "\"responses\":[\"Pack, label, move.\",\"Label, pack, move.\"],\"variant\":\"nurse\"}\n"
        "{\"id\":\"s2\",\"base\":\"b1\",\"scenario\":\"Plan the audit.\","
        "\"responses\":[\"List, check, report.\",\"Check, list, report.\"],\"variant\":\"pilot\"}\n";
    assert_int_equal(arb_test_write_file(f->scenarios, scen, strlen(scen)), 0);
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.unchanged_since_run, 0);
    assert_int_equal(st.sent, 10);
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_true(st.unchanged_since_run > 0);
    assert_int_equal(arb_test_server_requests(f->srv), 50);
}

/* Phase 1 alone: 2 scenarios x 2 responses x (2 + 3) identities = 20 calls, 4 rows each;
** the female bias of the judge shows in the stored means; a rerun sends nothing. */
static void run_phase1(void **state)
{
    fixture *f = *state;
    f->p.phase = ARB_PERSONA_PHASE_1;
    arb_run_stats st;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.planned, 20);
    assert_int_equal(st.sent, 20);
    assert_int_equal(st.invalid, 0);
    assert_int_equal(arb_test_server_requests(f->srv), 20);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE protocol = 'persona1'"), 80);
    assert_int_equal(q(f, "SELECT count(*) FROM persona_attributions"), 20);
    assert_int_equal(q(f, "SELECT count(*) FROM personas"), 5);
    /* each (identity, response) once per scenario */
    assert_int_equal(q(f, "SELECT count(*) FROM (SELECT persona_id, item_id, response, count(*) n"
                          " FROM persona_attributions GROUP BY 1, 2, 3) WHERE n = 1"),
                     20);
    assert_int_equal(q(f, "SELECT sum(value) FROM scores s JOIN personas p ON p.id = s.persona_id"
                          " WHERE p.identity = 'female' AND metric = 'accuracy'"),
                     4 * 7);
    assert_int_equal(q(f, "SELECT sum(value) FROM scores s JOIN personas p ON p.id = s.persona_id"
                          " WHERE p.identity = 'Atheist'"),
                     4 * 4 * 5);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE reason IS NOT NULL OR round <> 0"
                          " OR position <> 0"),
                     0);
    assert_int_equal(q(f, "SELECT count(*) FROM persona_attributions WHERE label = 'response'"), 20);
    /* the scenarios are items, the responses answers */
    assert_int_equal(q(f, "SELECT count(*) FROM items WHERE category = 'b1' AND "
                          "extra ->> '$.base' = 'b1'"),
                     2);
    assert_int_equal(q(f, "SELECT count(*) FROM answers WHERE model IN ('response1', 'response2')"),
                     4);
    /* the prompt carries the contract's marker lines and the metrics' JSON keys */
    assert_int_equal(q(f, "SELECT count(*) FROM calls WHERE request LIKE '%Author: Muslim "
                          "professional%' AND request LIKE '%[RESPONSE START]%' AND request LIKE "
                          "'%[SCENARIO START]%' AND request LIKE '%\\\"reliability\\\": n}%'"),
                     4);
    assert_int_equal(q(f, "SELECT count(*) FROM runs WHERE protocol = 'persona' AND status = "
                          "'finished' AND params ->> '$.phase' = '1'"),
                     1);
    /* a rerun sends nothing */
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.cached, 20);
    assert_int_equal(st.sent, 0);
    assert_int_equal(arb_test_server_requests(f->srv), 20);
    assert_int_equal(q(f, "SELECT count(*) FROM scores"), 80);
}

/* Phase 2 alone, gender and religion: 2 scenarios x (1 + 3) pairs x 4 = 32 calls. The design:
** each identity first and second equally often, with each response equally often; a pure
** position bias (always candidate_1) gives every identity a win rate of exactly 1/2. */
static void run_phase2_design(void **state)
{
    fixture *f = *state;
    f->p.phase = ARB_PERSONA_PHASE_2;
    arb_run_stats st;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.planned, 32);
    assert_int_equal(st.invalid, 0);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE protocol = 'persona2'"), 32 * 2 * 5);
    assert_int_equal(q(f, "SELECT count(*) FROM persona_attributions"), 64);
    /* per identity: as many times first as second, and as often with response1 as response2 */
    assert_int_equal(q(f, "SELECT count(*) FROM (SELECT persona_id, sum(position = 0) a,"
                          " sum(position = 1) b, sum(response = 'response1') c,"
                          " sum(response = 'response2') d FROM persona_attributions GROUP BY 1)"
                          " WHERE a = b AND c = d AND a > 0 AND c > 0"),
                     5);
    /* per identity and scenario: each (position, response) combination equally often */
    assert_int_equal(q(f, "SELECT count(*) FROM (SELECT persona_id, item_id, count(*) k,"
                          " min(n) lo, max(n) hi FROM (SELECT persona_id, item_id, count(*) n FROM"
                          " persona_attributions GROUP BY persona_id, item_id, position, response)"
                          " GROUP BY 1, 2) WHERE k = 4 AND lo = hi"),
                     2 * 5);
    /* female appears in 4 calls per scenario, with male each time */
    assert_int_equal(q(f, "SELECT count(*) FROM persona_attributions a JOIN personas p ON"
                          " p.id = a.persona_id WHERE p.identity = 'female'"),
                     8);
    /* pure position bias cancels: every identity wins exactly half of its calls */
    assert_int_equal(q(f, "SELECT count(*) FROM (SELECT persona_id, avg(value) w FROM scores"
                          " WHERE metric = 'preferred' GROUP BY 1) WHERE w = 0.5"),
                     5);
    /* while position 0 always wins */
    assert_int_equal(q(f, "SELECT sum(value) FROM scores WHERE metric = 'preferred' AND "
                          "position = 0"),
                     32);
    assert_int_equal(q(f, "SELECT count(*) FROM persona_attributions WHERE label = "
                          "'candidate_' || (position + 1)"),
                     64);
    /* the judge's female bias shows in both positions */
    assert_int_equal(q(f, "SELECT count(*) FROM scores s JOIN personas p ON p.id = s.persona_id"
                          " WHERE p.identity = 'female' AND metric = 'accuracy' AND value = 7"),
                     8);
    assert_int_equal(q(f, "SELECT count(*) FROM calls WHERE request LIKE '%Author of candidate 1:"
                          " male professional%' AND request LIKE '%Author of candidate 2: female"
                          " professional%' AND request LIKE '%[CANDIDATE 2 END]%' AND request"
                          " LIKE '%\\\"preferred\\\": \\\"candidate_1\\\" or \\\"candidate_2\\\"%'"),
                     4);
}

/* Both phases, one category, two judges, two repetitions; a JUNK response makes E rows that
** carry the reason on every row of the call. */
static void run_both_judges_reps_and_e(void **state)
{
    fixture *f = *state;
    static const char scen[] =
        "{\"id\":\"s1\",\"base\":\"b1\",\"scenario\":\"Plan.\",\"responses\":[\"Fine.\","
        "\"JUNK\"]}\n";
    assert_int_equal(arb_test_write_file(f->scenarios, scen, strlen(scen)), 0);
    f->cats[0] = "gender";
    f->p.categories = f->cats;
    f->p.n_categories = 1;
    f->p.n_judges = 2;
    f->p.reps = 2;
    arb_run_stats st;
    /* per judge and rep: phase 1 2 x 2 = 4, phase 2 1 x 4 = 4 */
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.planned, 8 * 2 * 2);
    assert_int_equal(arb_test_server_requests(f->srv), 32);
    /* phase 1: the JUNK response is E (2 identities x 2 judges x 2 reps); phase 2: every call */
    assert_int_equal(st.invalid, 8 + 16);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE value IS NULL AND reason = "
                          "'not JSON: no JSON object in the reply'"),
                     8 * 4 + 16 * 10);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE value IS NOT NULL"), 8 * 4);
    assert_int_equal(q(f, "SELECT count(DISTINCT judge_name) FROM scores"), 2);
    assert_int_equal(q(f, "SELECT count(DISTINCT c.rep) FROM scores s JOIN calls c ON"
                          " c.id = s.call_id"),
                     2);
    assert_int_equal(q(f, "SELECT count(*) FROM personas"), 2);

    /* one judge name, one configuration: j1 with another model is refused, nothing sent */
    arb_judge_config other = f->judges[0];
    other.model = "m9";
    f->p.judges = &other;
    f->p.n_judges = 1;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "\"j1\" already has judgments"));
    assert_int_equal(arb_test_server_requests(f->srv), 32);
}

/* Two judge names with one model and sampling share their calls (the call key has no judge
** name) and each keeps its rows. */
static void shared_calls_keep_both_judges(void **state)
{
    fixture *f = *state;
    f->judges[1].model = "m1";
    f->p.phase = ARB_PERSONA_PHASE_1;
    f->p.n_judges = 2;
    arb_run_stats st;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(arb_test_server_requests(f->srv), 20);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE judge_name = 'j1'"), 80);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE judge_name = 'j2'"), 80);
}

/* Every check comes before any request, with nothing stored. */
static void checks_before_requests(void **state)
{
    fixture *f = *state;
    arb_run_stats st;
    const char *bad_cat[] = {"caste"};
    arb_persona_params p = f->p;
    p.categories = bad_cat;
    p.n_categories = 1;
    assert_int_equal(arb_persona_run(f->store, &p, &st), ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store),
                        "unknown category \"caste\" (known: gender, religion)");
    const char *twice[] = {"gender", "gender"};
    p.categories = twice;
    p.n_categories = 2;
    assert_int_equal(arb_persona_run(f->store, &p, &st), ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store), "category \"gender\" given twice");

    p = f->p;
    const char *metrics[] = {"accuracy", "preferred"};
    p.metrics = metrics;
    p.n_metrics = 2;
    assert_int_equal(arb_persona_run(f->store, &p, &st), ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store),
                        "metric \"preferred\": the name is a key of the phase-2 reply");
    const char *upper[] = {"Accuracy"};
    p.metrics = upper;
    p.n_metrics = 1;
    assert_int_equal(arb_persona_run(f->store, &p, &st), ARB_INVALID);
    p = f->p;
    p.range_lo = 5;
    p.range_hi = 5;
    assert_int_equal(arb_persona_run(f->store, &p, &st), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "LO < HI"));

    p = f->p;
    char tpl[160];
    snprintf(tpl, sizeof tpl, "%s/t1.txt", f->dir);
    const char *t1 = "Score {response} of {scenario}: {metrics_json}\n";
    assert_int_equal(arb_test_write_file(tpl, t1, strlen(t1)), 0);
    p.template_1 = tpl;
    assert_int_equal(arb_persona_run(f->store, &p, &st), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "has no {identity}"));
    const char *t1q = "{question} {identity} {response} of {scenario}: {metrics_json}\n";
    assert_int_equal(arb_test_write_file(tpl, t1q, strlen(t1q)), 0);
    assert_int_equal(arb_persona_run(f->store, &p, &st), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "uses {question}, which a persona "
                                                       "template has nothing to fill with"));
    p.template_1 = "persona-2";
    assert_int_equal(arb_persona_run(f->store, &p, &st), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "template persona-2 has no {response}"));

    p = f->p;
    static const char bad_scen[] = "{\"id\":\"s1\",\"base\":\"b\",\"scenario\":\"S\","
                                   "\"responses\":[\"x\",\"y\"]}\n{\"id\":\"s2\"}\n";
    assert_int_equal(arb_test_write_file(f->scenarios, bad_scen, strlen(bad_scen)), 0);
    assert_int_equal(arb_persona_run(f->store, &p, &st), ARB_PARSE);
    char expect[256];
    snprintf(expect, sizeof expect, "%s:2: field \"base\": expected a string, got nothing "
                                    "(missing)", f->scenarios);
    assert_string_equal(arb_store_errmsg(f->store), expect);

    p.identities_path = "/nonexistent/ids.yaml";
    assert_int_not_equal(arb_persona_run(f->store, &p, &st), ARB_OK);
    assert_int_equal(arb_test_server_requests(f->srv), 0);
    assert_int_equal(q(f, "SELECT (SELECT count(*) FROM items) + (SELECT count(*) FROM judges)"
                          " + (SELECT count(*) FROM runs) + (SELECT count(*) FROM scores)"),
                     0);
}

/* The dry run counts the plan, sends and stores nothing; the default identities give gender,
** race and religion: phase 1 2 x 2 x 10 = 40, phase 2 2 x (1 + 6 + 6) x 4 = 104. */
static void dry_run_default_identities(void **state)
{
    fixture *f = *state;
    f->p.identities_path = NULL;
    f->p.dry_run = 1;
    arb_run_stats st;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.planned, 144);
    assert_int_equal(arb_test_server_requests(f->srv), 0);
    assert_int_equal(q(f, "SELECT count(*) FROM items"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_phase1),
        cmocka_unit_test(parse_phase2),
        cmocka_unit_test(identities_default),
        cmocka_unit_test(identities_file),
        cmocka_unit_test(scenarios_read),
        cmocka_unit_test_setup_teardown(run_phase1, setup, teardown),
        cmocka_unit_test_setup_teardown(run_in_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(statements_prepared_once, setup, teardown),
        cmocka_unit_test_setup_teardown(quick_rerun, setup, teardown),
        cmocka_unit_test_setup_teardown(run_phase2_design, setup, teardown),
        cmocka_unit_test_setup_teardown(run_both_judges_reps_and_e, setup, teardown),
        cmocka_unit_test_setup_teardown(shared_calls_keep_both_judges, setup, teardown),
        cmocka_unit_test_setup_teardown(checks_before_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(dry_run_default_identities, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
