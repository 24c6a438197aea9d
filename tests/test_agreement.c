/*
** test_agreement.c -- judge x judge agreement and the disagreement histogram (METHODS §5) on
** hand-computed stores: three judges with ties and E, judges with nothing in common, one
** judge, an empty store, what makes two judgments the same instance, and the text and JSON
** renderings (names from the store are untrusted).
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

#include <cmocka.h>

#define EPS 1e-12

static void assert_near(double got, double want)
{
    if (isnan(got) || fabs(got - want) > EPS) fail_msg("got %.15g, want %.15g", got, want);
}

/* ---- a store in a temporary directory ----------------------------------------------------- */

typedef struct fixture {
    char dir[64];
    arb_store *store;
} fixture;

static const char items_jsonl[] = "{\"id\":\"q1\",\"question\":\"one?\"}\n"
                                  "{\"id\":\"q2\",\"question\":\"two?\"}\n"
                                  "{\"id\":\"q3\",\"question\":\"three?\"}\n";

static int setup_store(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f;
    if (arb_test_store_with_items("test_agreement", items_jsonl, f->dir, sizeof f->dir,
                                  &f->store))
        return -1;
    return 0;
}

static int teardown_store(void **state)
{
    fixture *f = *state;
    if (!f) return 0;
    arb_store_close(f->store);
    if (f->dir[0]) arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

/* One judgment: item, candidate, template, options, order, rep, position verdict. The baseline
** is always "base". */
typedef struct judgment {
    const char *item;
    const char *candidate;
    const char *tpl;
    int options;
    int order;
    int rep;
    char verdict;
} judgment;

/* Stores judgments of judge, each with its own call, as sbs.c would. */
static void put_judgments(fixture *f, const char *judge, const judgment *js, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        arb__pairwise_row row;
        memset(&row, 0, sizeof row);
        row.judge_name = judge;
        row.item_id = js[i].item;
        row.candidate = js[i].candidate;
        row.baseline = "base";
        row.template_name = js[i].tpl;
        row.options = js[i].options;
        row.order = js[i].order;
        row.rep = js[i].rep;
        row.position_verdict = js[i].verdict;
        if (arb_test_put_sbs_judgment(f->store, &row, NULL)) fail();
    }
}

static arb_agreement *agreement_of(fixture *f)
{
    arb_agreement *ag = NULL;
    if (arb_agreement_compute(f->store, &ag) != ARB_OK)
        fail_msg("arb_agreement_compute: %s", arb_store_errmsg(f->store));
    assert_non_null(ag);
    return ag;
}

/* Checks value(i, j) == value(j, i) == want over n common instances (want NAN = undefined). */
static void assert_pair(const arb_agreement *ag, size_t i, size_t j, int ties, double want,
                        size_t want_n)
{
    for (int swap = 0; swap < 2; swap++) {
        size_t n = 12345;
        double v = swap ? arb_agreement_value(ag, j, i, ties, &n)
                        : arb_agreement_value(ag, i, j, ties, &n);
        if (isnan(want)) {
            if (!isnan(v)) fail_msg("judges %zu,%zu: got %.15g, want NAN", i, j, v);
        } else {
            assert_near(v, want);
        }
        if (n != want_n) fail_msg("judges %zu,%zu ties %d: n %zu, want %zu", i, j, ties, n, want_n);
    }
}

static json_t *json_of(const arb_agreement *ag)
{
    char *text = arb_agreement_to_json(ag);
    assert_non_null(text);
    for (const char *p = text; *p; p++) {
        assert_true(strncmp(p, "nan", 3) != 0 && strncmp(p, "NaN", 3) != 0);
        assert_true(strncmp(p, "inf", 3) != 0 && strncmp(p, "Infinity", 8) != 0);
    }
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    if (!root) fail_msg("JSON does not parse: %s\n%s", err.text, text);
    arb_free(text);
    return root;
}

static double jreal(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_real(v)) fail_msg("key %s is not a real", key);
    return json_real_value(v);
}

/* ---- tests -------------------------------------------------------------------------------- */

/* Three judges, six instances of one comparison (q1..q3 x order 0/1, template T, 4 options).
** Verdicts (- = not judged):
**            q1/0 q1/1 q2/0 q2/1 q3/0 q3/1
**   j-a       A    B    C    E    A    A
**   j-b       A    A    C    E    B    B
**   j-c       A    B    D    B    -    C
** Ties included (E equals nothing, not even E):
**   a,b: common 6, same q1/0 q2/0            -> 2/6
**   a,c: common 5, same q1/0 q1/1            -> 2/5
**   b,c: common 5, same q1/0                 -> 1/5
** Ties excluded (both A or B):
**   a,b: q1/0 q1/1 q3/0 q3/1 -> 4, same q1/0 -> 1/4
**   a,c: q1/0 q1/1           -> 2, same both -> 2/2
**   b,c: q1/0 q1/1           -> 2, same q1/0 -> 1/2
** Diagonal: own instances a 6 (A/B: 4), b 6 (4), c 5 (q1/0 q1/1 q2/1: 3).
** Disagreement over the 5 instances all three judged (q3/0 is missing j-c):
**   q1/0 AAA -> 0; q1/1 BAB -> 1; q2/0 CCD -> 1; q2/1 EEB -> 1 (E is a verdict here);
**   q3/1 ABC -> 2 (every verdict differs: top count 1).
**   histogram 0:1 1:3 2:1 -> shares .2 .6 .2, cumulative .2 .8 1. */
static void agreement_three_judges(void **state)
{
    fixture *f = *state;
#define J(item, order, v) {item, "cand", "T", 4, order, 0, v}
    const judgment c[] = {J("q1", 0, 'A'), J("q1", 1, 'B'), J("q2", 0, 'D'), J("q2", 1, 'B'),
                          J("q3", 1, 'C')};
    const judgment a[] = {J("q1", 0, 'A'), J("q1", 1, 'B'), J("q2", 0, 'C'), J("q2", 1, 'E'),
                          J("q3", 0, 'A'), J("q3", 1, 'A')};
    const judgment b[] = {J("q3", 1, 'B'), J("q3", 0, 'B'), J("q2", 1, 'E'), J("q2", 0, 'C'),
                          J("q1", 1, 'A'), J("q1", 0, 'A')};
#undef J
    /* stored out of name order: the result is in name order all the same */
    put_judgments(f, "j-c", c, 5);
    put_judgments(f, "j-a", a, 6);
    put_judgments(f, "j-b", b, 6);

    arb_agreement *ag = agreement_of(f);
    assert_int_equal(arb_agreement_judge_count(ag), 3);
    assert_string_equal(arb_agreement_judge(ag, 0), "j-a");
    assert_string_equal(arb_agreement_judge(ag, 1), "j-b");
    assert_string_equal(arb_agreement_judge(ag, 2), "j-c");
    assert_null(arb_agreement_judge(ag, 3));

    assert_pair(ag, 0, 1, 1, 2.0 / 6.0, 6);
    assert_pair(ag, 0, 2, 1, 2.0 / 5.0, 5);
    assert_pair(ag, 1, 2, 1, 1.0 / 5.0, 5);
    assert_pair(ag, 0, 1, 0, 1.0 / 4.0, 4);
    assert_pair(ag, 0, 2, 0, 1.0, 2);
    assert_pair(ag, 1, 2, 0, 0.5, 2);
    assert_pair(ag, 0, 0, 1, 1.0, 6);
    assert_pair(ag, 2, 2, 1, 1.0, 5);
    assert_pair(ag, 2, 2, 0, 1.0, 3);
    assert_pair(ag, 1, 1, 0, 1.0, 4);
    assert_pair(ag, 0, 3, 1, NAN, 0); /* out of range */

    json_t *root = json_of(ag);
    json_t *judges = json_object_get(root, "judges");
    assert_int_equal(json_array_size(judges), 3);
    assert_string_equal(json_string_value(json_array_get(judges, 2)), "j-c");
    json_t *pairs = json_object_get(root, "agreement");
    assert_int_equal(json_array_size(pairs), 3); /* (a,b) (a,c) (b,c) */
    json_t *ac = json_array_get(pairs, 1);
    assert_string_equal(json_string_value(json_object_get(ac, "judge1")), "j-a");
    assert_string_equal(json_string_value(json_object_get(ac, "judge2")), "j-c");
    assert_int_equal(json_integer_value(json_object_get(ac, "n_common")), 5);
    assert_near(jreal(ac, "agreement"), 0.4);
    assert_int_equal(json_integer_value(json_object_get(ac, "n_common_no_ties")), 2);
    assert_near(jreal(ac, "agreement_no_ties"), 1.0);
    json_t *bc = json_array_get(pairs, 2);
    assert_string_equal(json_string_value(json_object_get(bc, "judge1")), "j-b");
    assert_near(jreal(bc, "agreement"), 0.2);
    assert_near(jreal(bc, "agreement_no_ties"), 0.5);

    json_t *dis = json_object_get(root, "disagreement");
    assert_int_equal(json_integer_value(json_object_get(dis, "n_instances")), 5);
    assert_int_equal(json_integer_value(json_object_get(dis, "n_judges")), 3);
    json_t *hist = json_object_get(dis, "histogram");
    assert_int_equal(json_array_size(hist), 3);
    const long long counts[] = {1, 3, 1};
    const double shares[] = {0.2, 0.6, 0.2}, cums[] = {0.2, 0.8, 1.0};
    for (size_t d = 0; d < 3; d++) {
        json_t *h = json_array_get(hist, d);
        assert_int_equal(json_integer_value(json_object_get(h, "disagreeing")), d);
        assert_int_equal(json_integer_value(json_object_get(h, "count")), counts[d]);
        assert_near(jreal(h, "share"), shares[d]);
        assert_near(jreal(h, "cumulative_share"), cums[d]);
    }
    json_decref(root);

    char *text = arb_agreement_to_text(ag);
    assert_non_null(text);
    assert_non_null(strstr(text, "3 judges on 6 side-by-side instances"));
    assert_non_null(strstr(text, "  [1] j-a  (6 instances)\n"));
    assert_non_null(strstr(text, "  [3] j-c  (5 instances)\n"));
    /* ties included, then excluded; cells are "share (n)", the diagonal "- (own n)" */
    const char *incl = strstr(text, "ties included");
    const char *excl = strstr(text, "ties excluded");
    assert_non_null(incl);
    assert_non_null(excl);
    assert_true(incl < excl);
    const char *row1 = strstr(incl, "  [1]       - (6)   33.3% (6)   40.0% (5)\n");
    if (!row1) fail_msg("ties-included row 1 missing in\n%s", text);
    assert_true(row1 < excl);
    assert_non_null(strstr(incl, "  [3]   40.0% (5)   20.0% (5)       - (5)\n"));
    assert_non_null(strstr(excl, "  [1]       - (4)   25.0% (4)  100.0% (2)\n"));
    assert_non_null(strstr(excl, "  [3]  100.0% (2)   50.0% (2)       - (3)\n"));
    assert_non_null(strstr(text, "Disagreement over the 5 instances judged by all 3 judges"));
    assert_non_null(strstr(text, "            0      1    20.0%       20.0%\n"));
    assert_non_null(strstr(text, "            1      3    60.0%       80.0%\n"));
    assert_non_null(strstr(text, "            2      1    20.0%      100.0%\n"));
    arb_free(text);
    arb_agreement_destroy(ag);
}

/* Two judgments are the same instance only when item, candidate, baseline, template, options,
** order and rep all match: two judges who differ in any of them share nothing, so their
** agreement is undefined (NAN, null), and no instance was judged by both. */
static void agreement_disjoint_judges(void **state)
{
    fixture *f = *state;
    const judgment x[] = {{"q1", "cand", "T", 4, 0, 0, 'A'}, {"q1", "cand", "T", 4, 0, 1, 'A'}};
    const judgment y[] = {
        {"q1", "other", "T", 4, 0, 0, 'A'}, /* candidate */
        {"q1", "cand", "U", 4, 0, 0, 'A'},  /* template */
        {"q1", "cand", "T", 3, 0, 0, 'A'},  /* options */
        {"q1", "cand", "T", 4, 1, 0, 'A'},  /* order */
        {"q1", "cand", "T", 4, 0, 2, 'A'},  /* rep */
        {"q2", "cand", "T", 4, 0, 0, 'A'},  /* item */
    };
    put_judgments(f, "x", x, 2);
    put_judgments(f, "y", y, 6);
    arb_agreement *ag = agreement_of(f);
    assert_int_equal(arb_agreement_judge_count(ag), 2);
    assert_pair(ag, 0, 1, 1, NAN, 0);
    assert_pair(ag, 0, 1, 0, NAN, 0);
    assert_pair(ag, 1, 1, 1, 1.0, 6);

    json_t *root = json_of(ag);
    json_t *p = json_array_get(json_object_get(root, "agreement"), 0);
    assert_non_null(p);
    assert_int_equal(json_integer_value(json_object_get(p, "n_common")), 0);
    assert_true(json_is_null(json_object_get(p, "agreement")));
    assert_true(json_is_null(json_object_get(p, "agreement_no_ties")));
    json_t *dis = json_object_get(root, "disagreement");
    assert_int_equal(json_integer_value(json_object_get(dis, "n_instances")), 0);
    json_t *hist = json_object_get(dis, "histogram");
    assert_int_equal(json_array_size(hist), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(hist, 0), "count")), 0);
    assert_true(json_is_null(json_object_get(json_array_get(hist, 0), "share")));
    assert_true(json_is_null(json_object_get(json_array_get(hist, 1), "cumulative_share")));
    json_decref(root);

    char *text = arb_agreement_to_text(ag);
    assert_non_null(text);
    assert_non_null(strstr(text, "  [1]       - (2)     n/a (0)\n"));
    assert_non_null(strstr(text, "no instance was judged by every judge"));
    arb_free(text);
    arb_agreement_destroy(ag);
}

/* Two judges who always agree, one of them only on E and C: E never agrees, C agrees but is
** not counted with ties excluded; all-E instances are unanimous for the disagreement count.
**   q1/0 A A; q1/1 E E; q2/0 C C; q2/1 B B
**   ties included 3/4; ties excluded 2/2; disagreement: 0 for all four instances. */
static void agreement_two_judges_ties_and_e(void **state)
{
    fixture *f = *state;
    const judgment js[] = {{"q1", "cand", "T", 4, 0, 0, 'A'}, {"q1", "cand", "T", 4, 1, 0, 'E'},
                           {"q2", "cand", "T", 4, 0, 0, 'C'}, {"q2", "cand", "T", 4, 1, 0, 'B'}};
    put_judgments(f, "one", js, 4);
    put_judgments(f, "two", js, 4);
    arb_agreement *ag = agreement_of(f);
    assert_pair(ag, 0, 1, 1, 0.75, 4);
    assert_pair(ag, 0, 1, 0, 1.0, 2);
    json_t *root = json_of(ag);
    json_t *hist = json_object_get(json_object_get(root, "disagreement"), "histogram");
    assert_int_equal(json_array_size(hist), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(hist, 0), "count")), 4);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(hist, 1), "count")), 0);
    assert_near(jreal(json_array_get(hist, 0), "cumulative_share"), 1.0);
    assert_near(jreal(json_array_get(hist, 1), "share"), 0.0);
    json_decref(root);
    arb_agreement_destroy(ag);
}

/* One judge: nothing to compare; the text says so, the JSON has no pairs and a null
** disagreement. */
static void agreement_one_judge(void **state)
{
    fixture *f = *state;
    const judgment js[] = {{"q1", "cand", "T", 4, 0, 0, 'A'}, {"q1", "cand", "T", 4, 1, 0, 'B'}};
    put_judgments(f, "lonely", js, 2);
    arb_agreement *ag = agreement_of(f);
    assert_int_equal(arb_agreement_judge_count(ag), 1);
    assert_pair(ag, 0, 0, 1, 1.0, 2);
    char *text = arb_agreement_to_text(ag);
    assert_non_null(text);
    assert_non_null(strstr(text, "only one judge (lonely, 2 instances)"));
    assert_non_null(strstr(text, "at least two judges"));
    arb_free(text);
    json_t *root = json_of(ag);
    assert_int_equal(json_array_size(json_object_get(root, "judges")), 1);
    assert_true(json_is_array(json_object_get(root, "agreement")));
    assert_int_equal(json_array_size(json_object_get(root, "agreement")), 0);
    assert_true(json_is_null(json_object_get(root, "disagreement")));
    json_decref(root);
    arb_agreement_destroy(ag);
}

static void agreement_empty_store(void **state)
{
    fixture *f = *state;
    arb_agreement *ag = agreement_of(f);
    assert_int_equal(arb_agreement_judge_count(ag), 0);
    assert_null(arb_agreement_judge(ag, 0));
    size_t n = 99;
    assert_true(isnan(arb_agreement_value(ag, 0, 0, 1, &n)));
    assert_int_equal(n, 0);
    char *text = arb_agreement_to_text(ag);
    assert_non_null(text);
    assert_non_null(strstr(text, "no side-by-side judgments"));
    arb_free(text);
    json_t *root = json_of(ag);
    assert_string_equal(json_string_value(json_object_get(root, "arbiter_version")), ARB_VERSION);
    assert_int_equal(json_array_size(json_object_get(root, "judges")), 0);
    assert_int_equal(json_array_size(json_object_get(root, "agreement")), 0);
    assert_true(json_is_null(json_object_get(root, "disagreement")));
    json_decref(root);
    arb_agreement_destroy(ag);

    /* NULLs are refused or tolerated, never dereferenced */
    arb_agreement_destroy(NULL);
    assert_int_equal(arb_agreement_judge_count(NULL), 0);
    assert_null(arb_agreement_to_text(NULL));
    assert_null(arb_agreement_to_json(NULL));
    assert_int_equal(arb_agreement_compute(f->store, NULL), ARB_INVALID);
    arb_agreement *none = (arb_agreement *)&n;
    assert_int_equal(arb_agreement_compute(NULL, &none), ARB_INVALID);
    assert_null(none);
}

/* Judge names are untrusted: control bytes never reach the text, JSON escapes them, and bytes
** that are not UTF-8 become U+FFFD in JSON. The JSON keys come in the documented order. */
static void agreement_untrusted_names(void **state)
{
    fixture *f = *state;
    const judgment js[] = {{"q1", "cand", "T", 4, 0, 0, 'A'}};
    put_judgments(f, "evil\x1b[2J\x07", js, 1);
    put_judgments(f, "bad\xff", js, 1);
    arb_agreement *ag = agreement_of(f);
    char *text = arb_agreement_to_text(ag);
    assert_non_null(text);
    for (const char *p = text; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c < 0x20 && c != '\n') || c == 0x7f || c == 0xff)
            fail_msg("unsafe byte 0x%02x in\n%s", c, text);
    }
    assert_non_null(strstr(text, "] bad?  (1 instances)"));
    assert_non_null(strstr(text, "] evil?[2J?  (1 instances)"));
    arb_free(text);

    char *json = arb_agreement_to_json(ag);
    assert_non_null(json);
    assert_null(strchr(json, 0x1b));
    assert_non_null(strstr(json, "\"bad\xef\xbf\xbd\""));
    const char *keys[] = {"\"arbiter_version\"", "\"judges\"",  "\"agreement\"",
                          "\"judge1\"",          "\"judge2\"",  "\"n_common\"",
                          "\"agreement\"",       "\"n_common_no_ties\"",
                          "\"agreement_no_ties\"", "\"disagreement\"", "\"n_instances\"",
                          "\"n_judges\"",        "\"histogram\"", "\"disagreeing\"",
                          "\"count\"",           "\"share\"",   "\"cumulative_share\""};
    const char *prev = json;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const char *at = strstr(prev, keys[i]);
        if (!at) fail_msg("key %s missing or out of order in\n%s", keys[i], json);
        prev = at + 1;
    }
    arb_free(json);
    arb_agreement_destroy(ag);
}

/* ---- by family (METHODS §5) and family preference (§6 generalised) ------------------------ */

static arb_agreement *agreement_by_family(fixture *f, size_t bootstrap)
{
    arb_agreement_params p = arb_agreement_default_params();
    p.by_family = 1;
    p.bootstrap = bootstrap;
    arb_agreement *ag = NULL;
    if (arb_agreement_compute_with(f->store, &p, &ag) != ARB_OK)
        fail_msg("arb_agreement_compute_with: %s", arb_store_errmsg(f->store));
    assert_non_null(ag);
    return ag;
}

static void put_family(fixture *f, const char *name, const char *role, const char *family)
{
    assert_int_equal(arb__store_put_family(f->store, name, role, family, "test"), ARB_OK);
}

static void assert_pool(const arb_agreement *ag, arb_family_pool which, size_t f1, size_t f2,
                        double agree, double no_ties, size_t n_comparisons,
                        size_t n_comparisons_no_ties, size_t n_instances, size_t n_judge_pairs)
{
    arb_agreement_pool pool;
    assert_int_equal(arb_agreement_pool_get(ag, which, f1, f2, &pool), ARB_OK);
    if (isnan(agree)) assert_true(isnan(pool.agreement));
    else assert_near(pool.agreement, agree);
    if (isnan(no_ties)) assert_true(isnan(pool.agreement_no_ties));
    else assert_near(pool.agreement_no_ties, no_ties);
    assert_int_equal(pool.n_comparisons, n_comparisons);
    assert_int_equal(pool.n_comparisons_no_ties, n_comparisons_no_ties);
    assert_int_equal(pool.n_instances, n_instances);
    assert_int_equal(pool.n_judge_pairs, n_judge_pairs);
}

/* g1, g2 of family gpt, qw of family qwen, x without a family, on three items:
**        q1  q2  q3
**   g1   A   B   A
**   g2   A   C   A
**   qw   B   B   A
**   x    A   B   -
** within (g1-g2): same on q1, q3 of 3 -> 2/3; without ties (both A/B: q1, q3) 2/2 = 1.
** across (g1-qw, g2-qw): q1 0+0, q2 1+0, q3 1+1 -> 3/6 = 1/2; without ties: comparisons
** q1 2, q2 1 (g1-qw; C is a tie), q3 2 = 5, same 0 + 1 + 2 = 3 -> 3/5.
** within - across: 2/3 - 1/2 = 1/6; without ties 1 - 3/5 = 2/5. */
static void agreement_by_family_pools(void **state)
{
    fixture *f = *state;
    static const judgment g1[] = {{"q1", "m", "t", 4, 0, 0, 'A'}, {"q2", "m", "t", 4, 0, 0, 'B'},
                                  {"q3", "m", "t", 4, 0, 0, 'A'}};
    static const judgment g2[] = {{"q1", "m", "t", 4, 0, 0, 'A'}, {"q2", "m", "t", 4, 0, 0, 'C'},
                                  {"q3", "m", "t", 4, 0, 0, 'A'}};
    static const judgment qw[] = {{"q1", "m", "t", 4, 0, 0, 'B'}, {"q2", "m", "t", 4, 0, 0, 'B'},
                                  {"q3", "m", "t", 4, 0, 0, 'A'}};
    static const judgment x[] = {{"q1", "m", "t", 4, 0, 0, 'A'}, {"q2", "m", "t", 4, 0, 0, 'B'}};
    put_judgments(f, "g1", g1, 3);
    put_judgments(f, "g2", g2, 3);
    put_judgments(f, "qw", qw, 3);
    put_judgments(f, "x", x, 2);

    /* without families: no family view, every pool refused */
    arb_agreement *ag = agreement_by_family(f, 0);
    arb_agreement_pool pool;
    assert_int_equal(arb_agreement_family_count(ag), 0);
    assert_int_equal(arb_agreement_no_family_count(ag), 4);
    assert_int_equal(arb_agreement_family_preference_count(ag), 0);
    assert_pool(ag, ARB_POOL_WITHIN, 0, 0, NAN, NAN, 0, 0, 0, 0);
    assert_int_equal(arb_agreement_pool_get(ag, ARB_POOL_FAMILY_PAIR, 0, 0, &pool), ARB_INVALID);
    arb_agreement_destroy(ag);

    put_family(f, "g1", "judge", "gpt");
    put_family(f, "g2", "judge", "gpt");
    put_family(f, "qw", "judge", "qwen");
    put_family(f, "m", "model", "mistral"); /* a model's family is not a judge's */
    ag = agreement_by_family(f, 1000);
    assert_int_equal(arb_agreement_family_count(ag), 2);
    assert_string_equal(arb_agreement_family(ag, 0), "gpt");
    assert_string_equal(arb_agreement_family(ag, 1), "qwen");
    assert_null(arb_agreement_family(ag, 2));
    assert_int_equal(arb_agreement_no_family_count(ag), 1);
    assert_string_equal(arb_agreement_judge_family(ag, 0), "gpt");
    assert_null(arb_agreement_judge_family(ag, 3)); /* x */
    assert_pool(ag, ARB_POOL_WITHIN, 0, 0, 2.0 / 3.0, 1.0, 3, 2, 3, 1);
    assert_pool(ag, ARB_POOL_ACROSS, 0, 0, 0.5, 0.6, 6, 5, 3, 2);
    assert_pool(ag, ARB_POOL_DIFFERENCE, 0, 0, 2.0 / 3.0 - 0.5, 1.0 - 0.6, 9, 7, 3, 3);
    assert_pool(ag, ARB_POOL_FAMILY_PAIR, 0, 0, 2.0 / 3.0, 1.0, 3, 2, 3, 1);
    assert_pool(ag, ARB_POOL_FAMILY_PAIR, 1, 0, 0.5, 0.6, 6, 5, 3, 2);
    assert_pool(ag, ARB_POOL_FAMILY_PAIR, 1, 1, NAN, NAN, 0, 0, 0, 0);
    assert_int_equal(arb_agreement_pool_get(ag, ARB_POOL_FAMILY_PAIR, 2, 0, &pool), ARB_INVALID);
    /* within per item: 1/1, 0/1, 1/1. 1/27 of the resamples hold only q2 (0) and 8/27 no q2
    ** (1), both more than 2.5%: the 95% interval is [0, 1] */
    assert_int_equal(arb_agreement_pool_get(ag, ARB_POOL_WITHIN, 0, 0, &pool), ARB_OK);
    assert_near(pool.ci_low, 0.0);
    assert_near(pool.ci_high, 1.0);
    assert_int_equal(arb_agreement_pool_get(ag, ARB_POOL_DIFFERENCE, 0, 0, &pool), ARB_OK);
    assert_true(pool.ci_low <= pool.agreement && pool.agreement <= pool.ci_high);
    assert_true(pool.ci_low < pool.ci_high);

    /* the renderings */
    json_t *root = json_of(ag);
    json_t *by = json_object_get(root, "by_family");
    assert_non_null(by);
    assert_near(json_real_value(json_object_get(json_object_get(by, "within"), "agreement")),
                2.0 / 3.0);
    assert_near(json_real_value(json_object_get(json_object_get(by, "across"),
                                                "agreement_no_ties")),
                0.6);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(by, "across"),
                                                        "n_instances")),
                     3);
    assert_near(json_real_value(json_object_get(json_object_get(by, "difference"), "ci_low")),
                pool.ci_low);
    assert_int_equal(json_integer_value(json_object_get(by, "n_no_family")), 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(by, "no_family"), 0)),
                        "x");
    assert_int_equal(json_array_size(json_object_get(by, "matrix")), 3);
    assert_true(json_is_null(json_object_get(json_array_get(json_object_get(by, "matrix"), 2),
                                             "agreement")));
    json_decref(root);
    char *text = arb_agreement_to_text(ag);
    assert_non_null(text);
    assert_non_null(strstr(text, "within a family             66.7% [0.0%, 100.0%]"));
    assert_non_null(strstr(text, "[4] x  family (no family)"));
    assert_non_null(strstr(text, "1 judge without a family"));
    arb_free(text);
    arb_agreement_destroy(ag);
}

/* One judgment of judge on item: candidate vs baseline, order, position verdict. */
static void put_one(fixture *f, const char *judge, const char *item, const char *candidate,
                    const char *baseline, int order, char verdict)
{
    arb__pairwise_row row;
    memset(&row, 0, sizeof row);
    row.judge_name = judge;
    row.item_id = item;
    row.candidate = candidate;
    row.baseline = baseline;
    row.template_name = "t";
    row.options = 4;
    row.order = order;
    row.position_verdict = verdict;
    if (arb_test_put_sbs_judgment(f->store, &row, NULL)) fail();
}

static const arb_family_preference *preference_of(const arb_agreement *ag, const char *judge)
{
    for (size_t i = 0; i < arb_agreement_family_preference_count(ag); i++)
        if (!strcmp(arb_agreement_family_preference(ag, i)->judge, judge))
            return arb_agreement_family_preference(ag, i);
    fail_msg("no family preference for %s", judge);
    return NULL;
}

/* cg is a gpt model, base a qwen one; g1, g2 are gpt judges, qw a qwen judge, x has none.
** Points of cg (order 0: cg shown first):
**            q1/0  q1/1  q2/0  q2/1
**   g1        A=1   B=1   C=.5  E(out)
**   qw        B=0   C=.5  A=1   A=0
**   g2        B=0
**   x         A=1   (no family: never counted)
** g1 (own: cg): own (1+1+.5)/3 = 5/6; others = qwen judges only (g2 is gpt) (0+.5+1+0)/4 = 3/8;
**   difference 5/6 - 3/8 = 11/24 over 2 comparisons (q1, q2), n_own 3, n_others 4.
** qw (own: base, points 1 - cg's): own (1+.5+0+1)/4 = 5/8; others g1 and g2:
**   (0+0+1 + .5)/4 = 3/8; difference 1/4, n_own 4, n_others 4.
** g2: own (base... no: cg) 0/1; others (qw at q1) (0+.5)/2 = 1/4; difference -1/4, 1 comparison.
** A pair of two gpt models (cg, cg2) counts for nobody: both or neither are the judge's. */
static void agreement_family_preference(void **state)
{
    fixture *f = *state;
    put_one(f, "g1", "q1", "cg", "base", 0, 'A');
    put_one(f, "g1", "q1", "cg", "base", 1, 'B');
    put_one(f, "g1", "q2", "cg", "base", 0, 'C');
    put_one(f, "g1", "q2", "cg", "base", 1, 'E');
    put_one(f, "qw", "q1", "cg", "base", 0, 'B');
    put_one(f, "qw", "q1", "cg", "base", 1, 'C');
    put_one(f, "qw", "q2", "cg", "base", 0, 'A');
    put_one(f, "qw", "q2", "cg", "base", 1, 'A');
    put_one(f, "g2", "q1", "cg", "base", 0, 'B');
    put_one(f, "x", "q1", "cg", "base", 0, 'A');
    put_one(f, "g1", "q3", "cg", "cg2", 0, 'A');
    put_one(f, "qw", "q3", "cg", "cg2", 0, 'B');
    put_family(f, "g1", "judge", "gpt");
    put_family(f, "g2", "judge", "gpt");
    put_family(f, "qw", "judge", "qwen");
    put_family(f, "cg", "model", "gpt");
    put_family(f, "cg2", "model", "gpt");
    put_family(f, "base", "model", "qwen");

    arb_agreement *ag = agreement_by_family(f, 1000);
    assert_int_equal(arb_agreement_family_preference_count(ag), 3); /* x has no family */
    assert_string_equal(arb_agreement_family_preference(ag, 0)->judge, "g1");
    assert_null(arb_agreement_family_preference(ag, 3));
    const arb_family_preference *p = preference_of(ag, "g1");
    assert_string_equal(p->family, "gpt");
    assert_near(p->own_win_rate, 5.0 / 6.0);
    assert_near(p->others_win_rate, 3.0 / 8.0);
    assert_near(p->difference, 11.0 / 24.0);
    assert_int_equal(p->n_comparisons, 2);
    assert_int_equal(p->n_own, 3);
    assert_int_equal(p->n_others, 4);
    assert_true(p->ci_low <= p->difference && p->difference <= p->ci_high);
    p = preference_of(ag, "qw");
    assert_string_equal(p->family, "qwen");
    assert_near(p->own_win_rate, 5.0 / 8.0);
    assert_near(p->others_win_rate, 3.0 / 8.0);
    assert_near(p->difference, 0.25);
    assert_int_equal(p->n_comparisons, 2);
    assert_int_equal(p->n_own, 4);
    assert_int_equal(p->n_others, 4);
    p = preference_of(ag, "g2");
    assert_near(p->own_win_rate, 0.0);
    assert_near(p->others_win_rate, 0.25);
    assert_near(p->difference, -0.25);
    assert_int_equal(p->n_comparisons, 1);
    /* one item only: every resample is that item, the interval is the point */
    assert_near(p->ci_low, -0.25);
    assert_near(p->ci_high, -0.25);

    json_t *root = json_of(ag);
    json_t *first = json_array_get(json_object_get(root, "family_preference"), 0);
    assert_string_equal(json_string_value(json_object_get(first, "judge")), "g1");
    assert_near(json_real_value(json_object_get(first, "difference")), 11.0 / 24.0);
    assert_near(json_real_value(json_object_get(first, "own_win_rate")), 5.0 / 6.0);
    assert_int_equal(json_integer_value(json_object_get(first, "n_comparisons")), 2);
    assert_non_null(json_object_get(root, "family_preference_win_rate"));
    json_decref(root);
    char *text = arb_agreement_to_text(ag);
    if (!strstr(text, "  g1                    gpt                     2    83.3%    37.5%   +45.8pt"))
        fail_msg("%s", text);
    arb_free(text);
    arb_agreement_destroy(ag);

    /* without by_family the output has no family keys */
    ag = agreement_of(f);
    root = json_of(ag);
    assert_null(json_object_get(root, "by_family"));
    assert_null(json_object_get(root, "family_preference"));
    json_decref(root);
    arb_agreement_destroy(ag);
}

static int count_family(void *ud, const char *name, const char *role, const char *family)
{
    (void)name;
    (void)role;
    (void)family;
    (*(size_t *)ud)++;
    return 0;
}

/* A judging command stores its judges with arb__store_put_judge: a judge read from a judges
** file brings its family and the file's families: map into the store, where --by family reads
** them; a judge configured without a file brings none. */
static void judges_file_families_stored(void **state)
{
    fixture *f = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/judges.yaml", f->dir);
    static const char yaml[] = "judges:\n"
                               "  - {name: ja, url: http://127.0.0.1:9/v1, model: m, family: gpt}\n"
                               "  - {name: jb, url: http://127.0.0.1:9/v1, model: n}\n"
                               "families:\n  cand: qwen\n  base: gpt\n";
    assert_int_equal(arb_test_write_file(path, yaml, strlen(yaml)), 0);
    arb_judges_file *jf = NULL;
    assert_int_equal(arb_judges_file_load(path, &jf, NULL), ARB_OK);
    arb_judge_config plain = {.name = "jc", .base_url = "http://127.0.0.1:9/v1", .model = "o",
                              .sampling = arb_sampling_default()};
    assert_int_equal(arb__store_put_judge(f->store, &plain), ARB_OK);
    size_t n = 0;
    assert_int_equal(arb__store_each_family(f->store, count_family, &n), ARB_OK);
    assert_int_equal(n, 0);
    arb_judge_config copy = *arb_judges_file_judge(jf, 0); /* as the CLI copies a config */
    assert_int_equal(arb__store_put_judge(f->store, &copy), ARB_OK);
    assert_int_equal(arb__store_put_judge(f->store, arb_judges_file_judge(jf, 1)), ARB_OK);
    arb_judges_file_destroy(jf);
    arb__families *fam = NULL;
    assert_int_equal(arb__families_load(f->store, &fam), ARB_OK);
    assert_int_equal(arb__families_count(fam, "judge"), 1);
    assert_int_equal(arb__families_count(fam, "model"), 2);
    assert_string_equal(arb__families_of(fam, "judge", "ja"), "gpt");
    assert_null(arb__families_of(fam, "judge", "jb"));
    assert_string_equal(arb__families_of(fam, "model", "cand"), "qwen");
    assert_string_equal(arb__families_of(fam, "model", "base"), "gpt");
    assert_null(arb__families_of(fam, "judge", "cand"));
    arb__families_free(fam);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(agreement_three_judges, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(agreement_disjoint_judges, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(agreement_two_judges_ties_and_e, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(agreement_one_judge, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(agreement_empty_store, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(agreement_untrusted_names, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(agreement_by_family_pools, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(agreement_family_preference, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(judges_file_families_stored, setup_store, teardown_store),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
