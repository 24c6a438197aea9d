/*
** test_audit.c -- the SbS audit: verdict shares (METHODS §2.2), PBias@AB, Con@ABCD, PCon@AB
** (§3) and the error rate (§5) on hand-computed pairs, then arb_audit_compute over a real
** store in a temporary directory, and the text and JSON renderings.
*/
#include "test_sql.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#define EPS 1e-12

static void assert_near(double got, double want)
{
    if (isnan(got) || fabs(got - want) > EPS) fail_msg("got %.15g, want %.15g", got, want);
}

static void assert_undefined(double got)
{
    if (!isnan(got)) fail_msg("got %.15g, want NAN", got);
}

static void assert_shares(const arb_verdict_shares *s, double a, double b, double c, double d,
                          double e)
{
    assert_near(s->a, a);
    assert_near(s->b, b);
    assert_near(s->c, c);
    assert_near(s->d, d);
    assert_near(s->e, e);
}

static void assert_shares_undefined(const arb_verdict_shares *s)
{
    assert_undefined(s->a);
    assert_undefined(s->b);
    assert_undefined(s->c);
    assert_undefined(s->d);
    assert_undefined(s->e);
}

/* Runs the metrics on pairs written as a string of two-letter pairs, "AB AA B. .E" ('.' =
** run missing). n_items is set to a sentinel to check the function leaves it alone. */
static arb_sbs_metrics metrics_of(const char *spec)
{
    arb_sbs_pair pairs[64];
    size_t n = 0;
    for (const char *p = spec; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        assert_true(p[1] != '\0' && n < 64);
        pairs[n].p0 = p[0] == '.' ? 0 : p[0];
        pairs[n].p1 = p[1] == '.' ? 0 : p[1];
        n++;
        p += 2;
    }
    arb_sbs_metrics m;
    memset(&m, 0, sizeof m);
    m.n_items = 777;
    arb_sbs_metrics_compute(n ? pairs : NULL, n, &m);
    assert_int_equal(m.n_items, 777);
    return m;
}

/* ---- metrics ------------------------------------------------------------------------------ */

static void metrics_zero_pairs(void **state)
{
    arb_sbs_metrics m = metrics_of("");
    assert_int_equal(m.n_pairs, 0);
    assert_int_equal(m.n_judgments, 0);
    assert_shares_undefined(&m.run0);
    assert_shares_undefined(&m.run1);
    assert_shares_undefined(&m.mean);
    assert_undefined(m.pbias_ab);
    assert_undefined(m.con_abcd);
    assert_undefined(m.pcon_ab);
    assert_undefined(m.error_rate);
    assert_false(arb_defined(m.pbias_ab));
}

/* Every judgment E (an unknown letter counts as E too): error rate 1, Con 0 (E never equals E),
** PBias and PCon have no A/B to count. */
static void metrics_all_invalid(void **state)
{
    arb_sbs_metrics m = metrics_of("EE EE XE");
    assert_int_equal(m.n_pairs, 3);
    assert_int_equal(m.n_judgments, 6);
    assert_shares(&m.run0, 0, 0, 0, 0, 1);
    assert_shares(&m.run1, 0, 0, 0, 0, 1);
    assert_shares(&m.mean, 0, 0, 0, 0, 1);
    assert_near(m.error_rate, 1.0);
    assert_near(m.con_abcd, 0.0);
    assert_undefined(m.pbias_ab);
    assert_undefined(m.pcon_ab);
}

/* Only C and D: PBias undefined, PCon undefined, Con = #(c,c)/3 = 1/3 (D,C and C,D differ). */
static void metrics_no_ab(void **state)
{
    arb_sbs_metrics m = metrics_of("CC DC CD");
    assert_int_equal(m.n_pairs, 3);
    assert_undefined(m.pbias_ab);
    assert_undefined(m.pcon_ab);
    assert_near(m.con_abcd, 1.0 / 3.0);
    assert_near(m.error_rate, 0.0);
    assert_shares(&m.run0, 0, 0, 2.0 / 3.0, 1.0 / 3.0, 0);
    assert_shares(&m.run1, 0, 0, 2.0 / 3.0, 1.0 / 3.0, 0);
}

/* A judge that always says A: run 0 gives a, run 1 gives b for every item, so it always
** contradicts itself. PBias = 4/4 + 4/4 − 1 = 1; Con = 0/4; PCon = 0/4. */
static void metrics_always_first(void **state)
{
    arb_sbs_metrics m = metrics_of("AA AA AA AA");
    assert_int_equal(m.n_pairs, 4);
    assert_near(m.pbias_ab, 1.0);
    assert_near(m.con_abcd, 0.0);
    assert_near(m.pcon_ab, 0.0);
    assert_shares(&m.run0, 1, 0, 0, 0, 0);
    assert_shares(&m.run1, 0, 1, 0, 0, 0);
    assert_shares(&m.mean, 0.5, 0.5, 0, 0, 0);
}

/* A perfectly consistent judge preferring the candidate: A in run 0, B in run 1 (both = a).
** PBias = 3/3 + 0/3 − 1 = 0; Con = 3/3; PCon = 3/3. */
static void metrics_consistent(void **state)
{
    arb_sbs_metrics m = metrics_of("AB AB AB");
    assert_near(m.pbias_ab, 0.0);
    assert_near(m.con_abcd, 1.0);
    assert_near(m.pcon_ab, 1.0);
    assert_near(m.error_rate, 0.0);
    assert_shares(&m.mean, 1, 0, 0, 0, 0);
}

/* Every verdict kind, by hand:
**   pair  P0 P1   J0 J1   Con  AB-either  AB-same
**    1    A  B    a  a    yes  yes        yes
**    2    A  A    a  b    no   yes        no
**    3    B  A    b  b    yes  yes        yes
**    4    C  C    c  c    yes  no         -
**    5    D  C    d  c    no   no         -
**    6    E  B    e  a    no   yes        no
**    7    B  E    b  e    no   yes        no
**    8    E  E    e  e    no   no         -      (E never equals E)
**    9    A  D    a  d    no   yes        no
**   10    C  A    c  b    no   yes        no
** run 0 positions: A×3 B×2 C×2 D×1 E×2 -> a .3 b .2 c .2 d .1 e .2
** run 1 positions: A×3 B×2 C×2 D×1 E×2 -> (A->b, B->a) a .2 b .3 c .2 d .1 e .2
** mean: a .25 b .25 c .2 d .1 e .2
** PBias = 3/5 + 3/5 − 1 = 0.2;  Con = 3/10;  PCon = 2/7;  error rate = 4/20 = 0.2. */
static void metrics_mixed(void **state)
{
    arb_sbs_metrics m = metrics_of("AB AA BA CC DC EB BE EE AD CA");
    assert_int_equal(m.n_pairs, 10);
    assert_int_equal(m.n_judgments, 20);
    assert_shares(&m.run0, 0.3, 0.2, 0.2, 0.1, 0.2);
    assert_shares(&m.run1, 0.2, 0.3, 0.2, 0.1, 0.2);
    assert_shares(&m.mean, 0.25, 0.25, 0.2, 0.1, 0.2);
    assert_near(m.pbias_ab, 0.2);
    assert_near(m.con_abcd, 0.3);
    assert_near(m.pcon_ab, 2.0 / 7.0);
    assert_near(m.error_rate, 0.2);
}

/* Pairs with one run missing count in the shares and the error rate, not in BM:
**   AB (both), A. (run 0 only), .E (run 1 only), BA (both)
** run 0: A A B -> a 2/3 b 1/3; run 1: B E A -> a 1/3 e 1/3 b 1/3; 6 judgments, 1 E.
** Over BM = {AB, BA}: PBias = 1/2 + 1/2 − 1 = 0 (over all judgments it would be
** 2/3 + 1/2 − 1 = 1/6); Con = 2/2; PCon = 2/2. */
static void metrics_missing_runs(void **state)
{
    arb_sbs_metrics m = metrics_of("AB A. .E BA");
    assert_int_equal(m.n_pairs, 2);
    assert_int_equal(m.n_judgments, 6);
    assert_shares(&m.run0, 2.0 / 3.0, 1.0 / 3.0, 0, 0, 0);
    assert_shares(&m.run1, 1.0 / 3.0, 1.0 / 3.0, 0, 0, 1.0 / 3.0);
    assert_shares(&m.mean, 0.5, 1.0 / 3.0, 0, 0, 1.0 / 6.0);
    assert_near(m.pbias_ab, 0.0);
    assert_near(m.con_abcd, 1.0);
    assert_near(m.pcon_ab, 1.0);
    assert_near(m.error_rate, 1.0 / 6.0);
}

/* One run absent altogether: its shares are undefined, the mean is the other run's, and BM is
** empty so every §3 metric is undefined. */
static void metrics_one_run_only(void **state)
{
    arb_sbs_metrics m = metrics_of("A. C. E.");
    assert_int_equal(m.n_pairs, 0);
    assert_int_equal(m.n_judgments, 3);
    assert_shares(&m.run0, 1.0 / 3.0, 0, 1.0 / 3.0, 0, 1.0 / 3.0);
    assert_shares_undefined(&m.run1);
    assert_shares(&m.mean, 1.0 / 3.0, 0, 1.0 / 3.0, 0, 1.0 / 3.0);
    assert_undefined(m.pbias_ab);
    assert_undefined(m.con_abcd);
    assert_undefined(m.pcon_ab);
    assert_near(m.error_rate, 1.0 / 3.0);

    /* and the mirror image: run 1 only, B -> a, D -> d */
    m = metrics_of(".B .D");
    assert_int_equal(m.n_judgments, 2);
    assert_shares_undefined(&m.run0);
    assert_shares(&m.run1, 0.5, 0, 0, 0.5, 0);
    assert_shares(&m.mean, 0.5, 0, 0, 0.5, 0);
    assert_undefined(m.con_abcd);
}

/* ---- a store in a temporary directory ------------------------------------------------------- */

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
    *state = f; /* teardown frees what setup made, even when setup fails */
    if (arb_test_store_with_items("test_audit", items_jsonl, f->dir, sizeof f->dir, &f->store))
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

/* One judgment to store: "q1" rep 0 order 1 verdict 'B' is {"q1", 0, 1, 'B'}. */
typedef struct judgment {
    const char *item;
    int rep;
    int order;
    char verdict;
} judgment;

/* Stores judgments of one comparison, each with its own judge call as sbs.c would. */
static void put_judgments(fixture *f, const char *judge, const char *candidate,
                          const char *baseline, const char *tpl, int options,
                          const judgment *js, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        arb__pairwise_row row;
        memset(&row, 0, sizeof row);
        row.judge_name = judge;
        row.item_id = js[i].item;
        row.candidate = candidate;
        row.baseline = baseline;
        row.template_name = tpl;
        row.options = options;
        row.order = js[i].order;
        row.rep = js[i].rep;
        row.position_verdict = js[i].verdict;
        if (arb_test_put_sbs_judgment(f->store, &row, NULL)) fail();
    }
}

static arb_audit *audit_of(fixture *f)
{
    arb_audit *audit = NULL;
    arb_status st = arb_audit_compute(f->store, NULL, &audit);
    if (st != ARB_OK) fail_msg("arb_audit_compute: %s", arb_store_errmsg(f->store));
    assert_non_null(audit);
    return audit;
}

/* ---- arb_audit_compute -------------------------------------------------------------------- */

static void audit_empty_store(void **state)
{
    fixture *f = *state;
    arb_audit *audit = audit_of(f);
    assert_int_equal(arb_audit_count(audit), 0);
    assert_null(arb_audit_row_at(audit, 0));

    char *json = arb_audit_to_json(audit);
    assert_non_null(json);
    json_error_t err;
    json_t *root = json_loads(json, 0, &err);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "arbiter_version")), ARB_VERSION);
    assert_true(json_is_array(json_object_get(root, "rows")));
    assert_int_equal(json_array_size(json_object_get(root, "rows")), 0);
    json_decref(root);
    arb_free(json);

    char *text = arb_audit_to_text(audit);
    assert_non_null(text);
    assert_non_null(strstr(text, "no side-by-side judgments"));
    arb_free(text);
    arb_audit_destroy(audit);
    arb_audit_destroy(NULL);
    assert_int_equal(arb_audit_count(NULL), 0);
}

/* Three comparisons: two judges, and the same judge in 4- and 3-option mode. Rows come back in
** the store's order (judge, candidate, baseline, template, options). */
static void audit_groups_comparisons(void **state)
{
    fixture *f = *state;
    /* judge-x, 4-option: q1 rep 0 and rep 1 complete, q2 rep 0 only run 0, q3 complete.
    ** pairs: (A,B) (A,A) (C,.) (B,A) -> BM 3; run 0 positions A A C B, run 1 B A A.
    ** PBias = 2/3 + 2/3 − 1 = 1/3; Con: (a,a) yes, (a,b) no, (b,b) yes -> 2/3;
    ** PCon = 2/3; 7 judgments, no E; items 3. */
    const judgment x4[] = {
        {"q1", 0, 0, 'A'}, {"q1", 0, 1, 'B'}, {"q1", 1, 0, 'A'}, {"q1", 1, 1, 'A'},
        {"q2", 0, 0, 'C'}, {"q3", 0, 1, 'A'}, {"q3", 0, 0, 'B'},
    };
    /* judge-x, 3-option, only q2: (E,C) -> BM 1, Con 0, PBias undefined, error 1/2. */
    const judgment x3[] = {{"q2", 0, 0, 'E'}, {"q2", 0, 1, 'C'}};
    /* judge-a sorts first: q1 (B,A) consistent b. */
    const judgment a4[] = {{"q1", 0, 1, 'A'}, {"q1", 0, 0, 'B'}};
    put_judgments(f, "judge-x", "cand", "base", "II-reason", 4, x4, sizeof x4 / sizeof *x4);
    put_judgments(f, "judge-x", "cand", "base", "II-reason", 3, x3, sizeof x3 / sizeof *x3);
    put_judgments(f, "judge-a", "cand", "base", "I", 4, a4, sizeof a4 / sizeof *a4);

    arb_audit *audit = audit_of(f);
    assert_int_equal(arb_audit_count(audit), 3);

    const arb_audit_row *r = arb_audit_row_at(audit, 0);
    assert_string_equal(r->judge, "judge-a");
    assert_string_equal(r->template_name, "I");
    assert_int_equal(r->m.n_items, 1);
    assert_int_equal(r->m.n_pairs, 1);
    assert_near(r->m.value[ARB_M_CON_ABCD], 1.0);
    assert_near(r->m.value[ARB_M_PBIAS_AB], 0.0);
    assert_shares(&r->m.mean, 0, 1, 0, 0, 0);

    r = arb_audit_row_at(audit, 1);
    assert_string_equal(r->judge, "judge-x");
    assert_string_equal(r->candidate, "cand");
    assert_string_equal(r->baseline, "base");
    assert_int_equal(r->options, 3);
    assert_int_equal(r->m.n_items, 1);
    assert_int_equal(r->m.n_pairs, 1);
    assert_int_equal(r->m.n_judgments, 2);
    assert_near(r->m.value[ARB_M_CON_ABCD], 0.0);
    assert_undefined(r->m.value[ARB_M_PBIAS_AB]);
    assert_undefined(r->m.value[ARB_M_PCON_AB]);
    assert_near(r->m.value[ARB_M_ERROR_RATE], 0.5);

    r = arb_audit_row_at(audit, 2);
    assert_string_equal(r->judge, "judge-x");
    assert_string_equal(r->template_name, "II-reason");
    assert_int_equal(r->options, 4);
    assert_int_equal(r->m.n_items, 3);
    assert_int_equal(r->m.n_pairs, 3);
    assert_int_equal(r->m.n_judgments, 7);
    assert_near(r->m.value[ARB_M_PBIAS_AB], 1.0 / 3.0);
    assert_near(r->m.value[ARB_M_CON_ABCD], 2.0 / 3.0);
    assert_near(r->m.value[ARB_M_PCON_AB], 2.0 / 3.0);
    assert_near(r->m.value[ARB_M_ERROR_RATE], 0.0);
    /* run 0: A A C B -> a 2/4 b 1/4 c 1/4; run 1: B A A -> a 1/3 b 2/3 */
    assert_shares(&r->m.run0, 0.5, 0.25, 0.25, 0, 0);
    assert_shares(&r->m.run1, 1.0 / 3.0, 2.0 / 3.0, 0, 0, 0);

    assert_null(arb_audit_row_at(audit, 3));
    arb_audit_destroy(audit);
}

/* A comparison with run 0 only: every §3 metric and run 1's shares are null in JSON; the JSON
** has no NaN or infinity, keeps the documented key order and parses back to the numbers. */
static void audit_json_nulls_and_numbers(void **state)
{
    fixture *f = *state;
    const judgment only0[] = {{"q1", 0, 0, 'A'}, {"q2", 0, 0, 'E'}, {"q3", 0, 0, 'D'},
                              {"q3", 1, 0, 'D'}};
    put_judgments(f, "solo", "cand", "base", "II", 4, only0, sizeof only0 / sizeof *only0);
    arb_audit *audit = audit_of(f);
    char *json = arb_audit_to_json(audit);
    assert_non_null(json);
    for (const char *p = json; *p; p++) {
        assert_true(strncmp(p, "nan", 3) != 0 && strncmp(p, "NaN", 3) != 0);
        assert_true(strncmp(p, "inf", 3) != 0 && strncmp(p, "Infinity", 8) != 0);
    }
    /* keys in the documented order, pretty-printed with indent 2 */
    const char *keys[] = {"\"arbiter_version\"", "\"by\"", "\"bootstrap\"", "\"window\"",
                          "\"rows\"", "\"judge\"", "\"candidate\"", "\"baseline\"",
                          "\"template\"", "\"options\"", "\"task\"", "\"n_items\"",
                          "\"n_pairs\"", "\"n_valid_pairs\"", "\"n_consistent\"",
                          "\"n_judgments\"", "\"n_rep_queries\"", "\"verdicts\"", "\"run0\"",
                          "\"run1\"", "\"mean\"", "\"pbias_ab\"", "\"con_abcd\"", "\"pcon_ab\"",
                          "\"mpcc_consistency\"", "\"rs\"", "\"pc\"", "\"error_rate\"",
                          "\"ipr\"", "\"irr\"", "\"pf\"", "\"owr\"", "\"quality_gap\"",
                          "\"apcc\"", "\"mpcc\"", "\"mpcc_delta\"", "\"accuracy\"",
                          "\"cohen_kappa\"", "\"pcn\"", "\"rcn\"", "\"n_neutral\"",
                          "\"apcc_run\"", "\"mpcc_run\"", "\"human\"", "\"lengths\"",
                          "\"quality_gap_bins\""};
    const char *prev = json;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const char *at = strstr(prev, keys[i]);
        if (!at) fail_msg("key %s missing or out of order in\n%s", keys[i], json);
        prev = at;
    }
    assert_non_null(strstr(json, "\n  \"rows\""));

    json_error_t err;
    json_t *root = json_loads(json, 0, &err);
    if (!root) fail_msg("JSON does not parse: %s", err.text);
    json_t *c = json_array_get(json_object_get(root, "rows"), 0);
    assert_non_null(c);
    assert_string_equal(json_string_value(json_object_get(c, "judge")), "solo");
    assert_int_equal(json_integer_value(json_object_get(c, "options")), 4);
    assert_int_equal(json_integer_value(json_object_get(c, "n_items")), 3);
    assert_int_equal(json_integer_value(json_object_get(c, "n_pairs")), 0);
    assert_int_equal(json_integer_value(json_object_get(c, "n_judgments")), 4);
    assert_true(json_is_null(json_object_get(c, "pbias_ab")));
    assert_true(json_is_null(json_object_get(c, "con_abcd")));
    assert_true(json_is_null(json_object_get(c, "pcon_ab")));
    json_t *er = json_object_get(c, "error_rate");
    assert_true(json_is_real(er));
    assert_near(json_real_value(er), 0.25);
    json_t *v = json_object_get(c, "verdicts");
    json_t *run0 = json_object_get(v, "run0");
    /* run 0: A E D D -> a .25 d .5 e .25; fractions, not percentages, and reals even when 0 */
    assert_true(json_is_real(json_object_get(run0, "a")));
    assert_near(json_real_value(json_object_get(run0, "a")), 0.25);
    assert_near(json_real_value(json_object_get(run0, "b")), 0.0);
    assert_true(json_is_real(json_object_get(run0, "b")));
    assert_near(json_real_value(json_object_get(run0, "d")), 0.5);
    assert_near(json_real_value(json_object_get(run0, "e")), 0.25);
    json_t *run1 = json_object_get(v, "run1");
    assert_true(json_is_null(json_object_get(run1, "a")));
    assert_true(json_is_null(json_object_get(run1, "e")));
    json_t *mean = json_object_get(v, "mean");
    assert_near(json_real_value(json_object_get(mean, "d")), 0.5);
    json_decref(root);
    arb_free(json);
    arb_audit_destroy(audit);
}

/* The text has the header, the shares as percentages, the legend, the metrics with "n/a" for
** undefined ones, and a judge name's ESC (and other controls) replaced by '?'. */
static void audit_text_readable_and_safe(void **state)
{
    fixture *f = *state;
    /* (A,A) (A,B) on q1, q2: PBias = 2/2 + 1/2 − 1 = +0.5; Con 1/2; PCon 1/2; run 0 a 100%;
    ** run 1 b 50% a 50% */
    const judgment js[] = {{"q1", 0, 0, 'A'}, {"q1", 0, 1, 'A'}, {"q2", 0, 0, 'A'},
                           {"q2", 0, 1, 'B'}};
    put_judgments(f, "evil\x1b[2J\x07judge\x7f", "cand\x9b", "base", "II-reason", 4, js,
                  sizeof js / sizeof *js);
    /* a 2-option comparison with run 1 only, whose §3 metrics print as n/a */
    const judgment only1[] = {{"q1", 0, 1, 'B'}};
    put_judgments(f, "plain", "cand", "base", "I", 2, only1, 1);

    arb_audit *audit = audit_of(f);
    assert_int_equal(arb_audit_count(audit), 2);
    char *text = arb_audit_to_text(audit);
    assert_non_null(text);
    for (const char *p = text; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c < 0x20 && c != '\n') || c == 0x7f) fail_msg("control byte 0x%02x in\n%s", c, text);
    }
    assert_non_null(strstr(text, "judge evil?[2J?judge? \xc2\xb7 candidate cand? vs baseline "
                                 "base \xc2\xb7 template II-reason \xc2\xb7 4-option"));
    assert_non_null(strstr(text, "judge plain \xc2\xb7 candidate cand vs baseline base "
                                 "\xc2\xb7 template I \xc2\xb7 2-option"));
    assert_non_null(strstr(text, "a = candidate better, b = baseline better, c = both good "
                                 "(tie in 3-option), d = both bad, e = invalid"));
    assert_non_null(strstr(text, "  run 0   100.0%    0.0%    0.0%    0.0%    0.0%\n"));
    assert_non_null(strstr(text, "  run 1    50.0%   50.0%    0.0%    0.0%    0.0%\n"));
    assert_non_null(strstr(text, "  mean     75.0%   25.0%    0.0%    0.0%    0.0%\n"));
    assert_non_null(strstr(text, "  run 0      n/a     n/a     n/a     n/a     n/a\n"));
    assert_non_null(strstr(text, "  PBias@AB       +0.500  position bias: > 0 favours the first "
                                 "answer (\xc2\xa7""3)"));
    assert_non_null(strstr(text, "  mean    100.0%    0.0%    0.0%    0.0%    0.0%\n"));
    assert_non_null(strstr(text, "  PBias@AB          n/a"));
    assert_non_null(strstr(text, "  Con@ABCD        50.0%"));
    assert_non_null(strstr(text, "  PCon@AB         50.0%"));
    assert_non_null(strstr(text, "  error rate       0.0%"));
    assert_non_null(strstr(text, "items 2 \xc2\xb7 pairs with both orders 2 \xc2\xb7 "
                                 "valid pairs 2 \xc2\xb7 judgments 4"));

    /* the JSON keeps the name (escaped by JSON), and an invalid UTF-8 byte becomes U+FFFD */
    char *json = arb_audit_to_json(audit);
    assert_non_null(json);
    assert_true(strstr(json, "\"evil\\u001B[2J\\u0007judge") != NULL ||
                strstr(json, "\"evil\\u001b[2J\\u0007judge") != NULL);
    assert_null(strchr(json, 0x1b));
    assert_non_null(strstr(json, "\"cand\xef\xbf\xbd\""));
    arb_free(json);
    arb_free(text);
    arb_audit_destroy(audit);
}

/* ---- groupings, expert labels, lengths, bootstrap through the store ----------------------- */

/* Items with tasks and answers whose lengths in code points differ from their bytes. */
static void put_tasks_and_answers(fixture *f)
{
    static const char items[] =
        "{\"id\":\"t1\",\"question\":\"h\\u00e9llo\",\"category\":\"math\"}\n"
        "{\"id\":\"t2\",\"question\":\"abc\",\"category\":\"code\"}\n"
        "{\"id\":\"t3\",\"question\":\"abcd\",\"category\":\"math\"}\n";
    static const char answers[] =
        "{\"item\":\"t1\",\"model\":\"cand\",\"answer\":\"\\u00e4\\u00e4\\u00e4\\u00e4\"}\n"
        "{\"item\":\"t1\",\"model\":\"base\",\"answer\":\"xx\"}\n"
        "{\"item\":\"t2\",\"model\":\"cand\",\"answer\":\"\\u4e2d\\u6587\"}\n"
        "{\"item\":\"t2\",\"model\":\"base\",\"answer\":\"yyyy\"}\n"
        "{\"item\":\"t3\",\"model\":\"cand\",\"answer\":\"zzzzzz\"}\n"
        "{\"item\":\"t3\",\"model\":\"base\",\"answer\":\"w\"}\n";
    arb_dataset *ds = arb_dataset_create();
    assert_non_null(ds);
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "i.jsonl", items, strlen(items)), ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "a.jsonl", answers, strlen(answers)),
                     ARB_OK);
    assert_int_equal(arb__store_put_dataset(f->store, ds), ARB_OK);
    arb_dataset_destroy(ds);
}

static void put_label(fixture *f, const char *item, const char *cand, const char *base,
                      char verdict, const char *annotator)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO human_labels (item_id, candidate, baseline, verdict, annotator, source) "
             "VALUES ('%s', '%s', '%s', '%c', '%s', 'test')",
             item, cand, base, verdict, annotator);
    char *err = NULL;
    if (sqlite3_exec(arb__store_conn(f->store), sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("insert label: %s", err);
}

static arb_audit *audit_with(fixture *f, const arb_audit_params *p)
{
    arb_audit *audit = NULL;
    arb_status st = arb_audit_compute(f->store, p, &audit);
    if (st != ARB_OK) fail_msg("arb_audit_compute: %s", arb_store_errmsg(f->store));
    return audit;
}

/* --by judge pools the candidates of a judge; --by task splits a judge's pairs by category;
** lengths are code points (é, ä, 中 are one each), averaged over valid pairs. */
static void audit_groupings_and_lengths(void **state)
{
    fixture *f = *state;
    put_tasks_and_answers(f);
    /* cand vs base: t1 (A,B) consistent, t2 (A,A) primacy, t3 (B,A) consistent */
    const judgment js[] = {{"t1", 0, 0, 'A'}, {"t1", 0, 1, 'B'}, {"t2", 0, 0, 'A'},
                           {"t2", 0, 1, 'A'}, {"t3", 0, 0, 'B'}, {"t3", 0, 1, 'A'}};
    /* other vs base on t1: (B,B) recency */
    const judgment other[] = {{"t1", 0, 0, 'B'}, {"t1", 0, 1, 'B'}};
    put_judgments(f, "jx", "cand", "base", "I", 4, js, sizeof js / sizeof *js);
    put_judgments(f, "jx", "other", "base", "I", 4, other, 2);
    put_judgments(f, "jy", "cand", "base", "I", 4, js, 2);

    arb_audit *audit = audit_with(f, NULL);
    assert_int_equal(arb_audit_count(audit), 3); /* jx/cand, jx/other, jy/cand */
    const arb_audit_row *r = arb_audit_row_at(audit, 0);
    assert_string_equal(r->candidate, "cand");
    assert_null(r->task);
    assert_near(r->m.value[ARB_M_PC], 2.0 / 3.0);
    /* question 5, 3, 4 -> 4; candidate 4, 2, 6 -> 4; baseline 2, 4, 1 -> 7/3 */
    assert_near(r->m.length[ARB_LEN_QUESTION].mean, 4.0);
    assert_near(r->m.length[ARB_LEN_CANDIDATE].mean, 4.0);
    assert_near(r->m.length[ARB_LEN_BASELINE].mean, 7.0 / 3.0);
    arb_audit_destroy(audit);

    arb_audit_params p = arb_audit_default_params();
    p.by = ARB_BY_JUDGE;
    audit = audit_with(f, &p);
    assert_int_equal(arb_audit_count(audit), 2);
    r = arb_audit_row_at(audit, 0);
    assert_string_equal(r->judge, "jx");
    assert_null(r->candidate);
    assert_null(r->baseline);
    assert_int_equal(r->options, 0);
    assert_int_equal(r->m.n_valid_pairs, 4);
    assert_near(r->m.value[ARB_M_PC], 0.5);
    assert_int_equal(r->m.pcn, 1);
    assert_int_equal(r->m.rcn, 1);
    assert_int_equal(r->m.n_items, 3); /* t1 counted once across both candidates */
    char *text = arb_audit_to_text(audit);
    assert_non_null(strstr(text, "judge jx \xc2\xb7 all candidates\n"));
    arb_free(text);
    arb_audit_destroy(audit);

    p.by = ARB_BY_JUDGE | ARB_BY_TASK;
    audit = audit_with(f, &p);
    assert_int_equal(arb_audit_count(audit), 3); /* jx code, jx math, jy math */
    r = arb_audit_row_at(audit, 0);
    assert_string_equal(r->judge, "jx");
    assert_string_equal(r->task, "code");
    assert_int_equal(r->m.n_valid_pairs, 1);
    assert_near(r->m.value[ARB_M_PC], 0.0);
    r = arb_audit_row_at(audit, 1);
    assert_string_equal(r->task, "math");
    assert_int_equal(r->m.n_valid_pairs, 3); /* t1 and t3 of cand, t1 of other */
    char *json = arb_audit_to_json(audit);
    assert_non_null(strstr(json, "\"task\": \"math\""));
    assert_non_null(strstr(json, "\"by\": [\n    \"judge\",\n    \"task\"\n  ]"));
    arb_free(json);
    arb_audit_destroy(audit);

    p.by = 1u << 10; /* no such key */
    arb_audit *bad = NULL;
    assert_int_equal(arb_audit_compute(f->store, &p, &bad), ARB_INVALID);
    assert_null(bad);
}

/* Expert labels join by item and models; labels given the other way round (baseline as their
** candidate) count with a and b exchanged; annotator ties are skipped and counted. */
static void audit_expert_labels(void **state)
{
    fixture *f = *state;
    put_tasks_and_answers(f);
    const judgment js[] = {{"t1", 0, 0, 'A'}, {"t1", 0, 1, 'B'}, {"t2", 0, 0, 'B'},
                           {"t2", 0, 1, 'A'}, {"t3", 0, 0, 'A'}, {"t3", 0, 1, 'A'}};
    put_judgments(f, "jx", "cand", "base", "I", 4, js, sizeof js / sizeof *js);
    /* t1: 2 of 3 say a. t2: labelled as base vs cand, "a" there = b here. t3: a vs b tie. */
    put_label(f, "t1", "cand", "base", 'a', "ann1");
    put_label(f, "t1", "cand", "base", 'a', "ann2");
    put_label(f, "t1", "cand", "base", 'b', "ann3");
    put_label(f, "t2", "base", "cand", 'a', "ann1");
    put_label(f, "t3", "cand", "base", 'a', "ann1");
    put_label(f, "t3", "cand", "base", 'b', "ann2");

    arb_audit *audit = audit_with(f, NULL);
    const arb_audit_row *r = arb_audit_row_at(audit, 0);
    assert_int_equal(r->m.n_labelled_items, 2);
    assert_int_equal(r->m.n_label_ties, 1);
    assert_int_equal(r->m.n_labelled_judgments, 4);
    /* judge: t1 a a (experts a), t2 b b (experts b): all right */
    assert_near(r->m.value[ARB_M_ACCURACY], 1.0);
    assert_int_equal(r->m.confusion[0][0], 2);
    assert_int_equal(r->m.confusion[1][1], 2);
    assert_near(r->m.value[ARB_M_COHEN_KAPPA], 1.0);
    char *text = arb_audit_to_text(audit);
    assert_non_null(strstr(text, "2 labelled items, 1 skipped as annotator ties, 4 judgments"));
    arb_free(text);
    arb_audit_destroy(audit);
}

/* Bootstrap: intervals appear in text and JSON, the same seed gives the same intervals, a
** point estimate lies inside its interval, and metrics undefined everywhere stay null. */
static void audit_bootstrap(void **state)
{
    fixture *f = *state;
    put_tasks_and_answers(f);
    const judgment js[] = {{"t1", 0, 0, 'A'}, {"t1", 0, 1, 'B'}, {"t2", 0, 0, 'A'},
                           {"t2", 0, 1, 'A'}, {"t3", 0, 0, 'B'}, {"t3", 0, 1, 'A'},
                           {"q1", 0, 0, 'A'}, {"q1", 0, 1, 'A'}, {"q2", 0, 0, 'C'},
                           {"q2", 0, 1, 'C'}};
    put_judgments(f, "jx", "cand", "base", "I", 4, js, sizeof js / sizeof *js);
    arb_audit_params p = arb_audit_default_params();
    p.bootstrap = 500;
    p.seed = 7;
    arb_audit *a1 = audit_with(f, &p), *a2 = audit_with(f, &p);
    const arb_audit_row *r1 = arb_audit_row_at(a1, 0), *r2 = arb_audit_row_at(a2, 0);
    for (int k = 0; k < ARB_M__COUNT; k++) {
        assert_memory_equal(&r1->m.ci_lo[k], &r2->m.ci_lo[k], sizeof(double));
        assert_memory_equal(&r1->m.ci_hi[k], &r2->m.ci_hi[k], sizeof(double));
    }
    double pc = r1->m.value[ARB_M_PC]; /* 3 of 5 */
    assert_near(pc, 0.6);
    assert_true(r1->m.ci_lo[ARB_M_PC] <= pc && pc <= r1->m.ci_hi[ARB_M_PC]);
    assert_true(r1->m.ci_lo[ARB_M_PC] < r1->m.ci_hi[ARB_M_PC]);
    assert_undefined(r1->m.ci_lo[ARB_M_ACCURACY]); /* no labels in any resample */
    char *json = arb_audit_to_json(a1);
    json_error_t err;
    json_t *root = json_loads(json, 0, &err);
    assert_non_null(root);
    json_t *row = json_array_get(json_object_get(root, "rows"), 0);
    json_t *ci = json_object_get(row, "pc_ci");
    assert_true(json_is_array(ci));
    assert_int_equal(json_array_size(ci), 2);
    assert_true(json_is_null(json_object_get(row, "accuracy_ci")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(root, "bootstrap"), "seed")), 7);
    json_decref(root);
    arb_free(json);
    double seed7_lo[ARB_M__COUNT], seed7_hi[ARB_M__COUNT];
    memcpy(seed7_lo, r1->m.ci_lo, sizeof seed7_lo);
    memcpy(seed7_hi, r1->m.ci_hi, sizeof seed7_hi);
    char *text = arb_audit_to_text(a1);
    assert_non_null(strstr(text, "95% interval"));
    assert_non_null(strstr(text, "500 resamples of items, seed 7"));
    arb_free(text);
    arb_audit_destroy(a1);
    arb_audit_destroy(a2);

    /* another seed: other intervals (the stats tests show they differ), still around PC */
    p.seed = 8;
    arb_audit *a3 = audit_with(f, &p);
    const arb_audit_row *r3 = arb_audit_row_at(a3, 0);
    assert_true(r3->m.ci_lo[ARB_M_PC] <= seed7_lo[ARB_M_PC] + 0.2);
    assert_true(r3->m.ci_lo[ARB_M_PC] <= pc && pc <= r3->m.ci_hi[ARB_M_PC]);
    arb_audit_destroy(a3);
}

/* Tournament judgments (protocol "tournament", candidate = the pair's model first by name) are
** audited as comparisons when asked, in rows of their own: never pooled with the same judge's
** SbS judgments of the same models, template and option mode. */
static void audit_tournament_rows(void **state)
{
    fixture *f = *state;
    /* SbS: q1 (A,B) q2 (A,A): PC 1/2. Tournament: q1 (B,A) q2 (C,C) q3 (A,E): PC 1, E 1 of 6 */
    const judgment sbs[] = {{"q1", 0, 0, 'A'}, {"q1", 0, 1, 'B'}, {"q2", 0, 0, 'A'}, {"q2", 0, 1, 'A'}};
    put_judgments(f, "jx", "alpha", "beta", "II-reason", 3, sbs, sizeof sbs / sizeof *sbs);
    const judgment tour[] = {{"q1", 0, 0, 'B'}, {"q1", 0, 1, 'A'}, {"q2", 0, 0, 'C'},
                             {"q2", 0, 1, 'C'}, {"q3", 0, 0, 'A'}, {"q3", 0, 1, 'E'}};
    for (size_t i = 0; i < sizeof tour / sizeof *tour; i++) {
        arb__pairwise_row row = {.protocol = "tournament", .judge_name = "jx",
                                 .item_id = tour[i].item, .candidate = "alpha",
                                 .baseline = "beta", .template_name = "II-reason", .options = 3,
                                 .order = tour[i].order, .rep = tour[i].rep,
                                 .position_verdict = tour[i].verdict,
                                 .model_verdict = arb_verdict_to_model(tour[i].verdict, tour[i].order)};
        assert_int_equal(arb__store_put_pairwise(f->store, &row), ARB_OK);
    }
    /* the library's default: side-by-side judgments only */
    arb_audit *audit = audit_of(f);
    assert_int_equal(arb_audit_count(audit), 1);
    assert_string_equal(arb_audit_row_at(audit, 0)->protocol, "sbs");
    assert_near(arb_audit_row_at(audit, 0)->m.value[ARB_M_PC], 0.5);
    arb_audit_destroy(audit);

    arb_audit_params p = arb_audit_default_params();
    p.protocols = ARB_AUDIT_SBS | ARB_AUDIT_TOURNAMENT;
    for (int pass = 0; pass < 2; pass++) {
        p.by = pass == 0 ? ARB_BY_COMPARISON : ARB_BY_JUDGE;
        audit = audit_with(f, &p);
        assert_int_equal(arb_audit_count(audit), 2);
        const arb_audit_row *r = arb_audit_row_at(audit, 1);
        assert_string_equal(r->judge, "jx");
        assert_string_equal(r->protocol, "tournament");
        assert_int_equal(r->m.n_judgments, 6);
        assert_int_equal(r->m.n_pairs, 3);
        assert_int_equal(r->m.n_valid_pairs, 2);
        assert_near(r->m.value[ARB_M_PC], 1.0);
        assert_near(r->m.value[ARB_M_ERROR_RATE], 1.0 / 6.0);
        /* (B,A): the baseline twice; (C,C) a tie: owr = ½/2 */
        assert_near(r->m.value[ARB_M_OWR], 0.25);
        assert_near(arb_audit_row_at(audit, 0)->m.value[ARB_M_PC], 0.5);
        char *json = arb_audit_to_json(audit);
        char *text = arb_audit_to_text(audit);
        assert_non_null(strstr(json, "\"protocol\": \"tournament\""));
        assert_non_null(strstr(json, "\"protocol\": \"sbs\""));
        assert_non_null(strstr(text, " \xc2\xb7 tournament\n  tournament pair: candidate = the "
                                     "model first by name"));
        arb_free(json);
        arb_free(text);
        arb_audit_destroy(audit);
    }
    p.protocols = ARB_AUDIT_TOURNAMENT;
    audit = audit_with(f, &p);
    assert_int_equal(arb_audit_count(audit), 1);
    assert_string_equal(arb_audit_row_at(audit, 0)->protocol, "tournament");
    arb_audit_destroy(audit);
    p.protocols = 0;
    assert_int_equal(arb_audit_compute(f->store, &p, &audit), ARB_INVALID);
    assert_null(audit);
}

/* The window series' bootstrap resamples blocks of `window` consecutive items laid end to end
** (never an item's copies side by side): 10 items are one block, so every resample is the
** benchmark itself and the interval of MPCC-Consistency is its value, exactly. Run 0 says b on
** items 0-4 and a on 5-9; run 1 a b b b b a a a a b: windows [0,10) [5,10): (.5, 1) and (.5, .8),
** Pearson 1. The row's JSON says how many windows there were and that the last one was short. */
static void audit_window_block_bootstrap(void **state)
{
    fixture *f = *state;
    char items[1024] = "";
    for (int i = 0; i < 10; i++) {
        char line[64];
        snprintf(line, sizeof line, "{\"id\":\"w%d\",\"question\":\"q%d\"}\n", i, i);
        strcat(items, line);
    }
    arb_dataset *ds = arb_dataset_create();
    assert_non_null(ds);
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "w.jsonl", items, strlen(items)), ARB_OK);
    assert_int_equal(arb__store_put_dataset(f->store, ds), ARB_OK);
    arb_dataset_destroy(ds);
    const char run0[] = "bbbbbaaaaa", run1[] = "abbbbaaaab";
    char ids[10][4];
    judgment js[20];
    for (int i = 0; i < 10; i++) {
        snprintf(ids[i], sizeof ids[i], "w%d", i);
        js[2 * i] = (judgment){ids[i], 0, 0, run0[i] == 'a' ? 'A' : 'B'};
        js[2 * i + 1] = (judgment){ids[i], 0, 1, run1[i] == 'a' ? 'B' : 'A'};
    }
    put_judgments(f, "jw", "cand", "base", "I", 4, js, 20);
    arb_audit_params p = arb_audit_default_params();
    p.bootstrap = 400;
    arb_audit *audit = audit_with(f, &p);
    const arb_audit_row *r = arb_audit_row_at(audit, 0);
    assert_near(r->m.value[ARB_M_MPCC_CONSISTENCY], 1.0);
    assert_near(r->m.ci_lo[ARB_M_MPCC_CONSISTENCY], 1.0);
    assert_near(r->m.ci_hi[ARB_M_MPCC_CONSISTENCY], 1.0);
    assert_true(r->m.ci_lo[ARB_M_PC] < r->m.ci_hi[ARB_M_PC]); /* items still resampled for PC */
    assert_int_equal(r->m.windows.n_windows, 2);

    char *json = arb_audit_to_json(audit);
    json_error_t err;
    json_t *root = json_loads(json, 0, &err);
    assert_non_null(root);
    json_t *boot = json_object_get(root, "bootstrap");
    assert_string_equal(json_string_value(json_object_get(boot, "window_metrics")), "block");
    assert_int_equal(json_integer_value(json_object_get(boot, "block_size")), 10);
    json_t *row = json_array_get(json_object_get(root, "rows"), 0);
    json_t *win = json_object_get(row, "window");
    assert_int_equal(json_integer_value(json_object_get(win, "n_windows")), 2);
    assert_true(json_is_true(json_object_get(win, "short_last_window_kept")));
    assert_int_equal(json_integer_value(json_array_get(json_object_get(win, "mpcc_n_windows"), 0)), 0);
    assert_true(json_is_null(json_array_get(json_object_get(win, "mpcc_short_last_window_kept"), 1)));
    /* no labels: the per-run accuracy and its Δ are null, not 0; nothing dropped from APCC */
    assert_true(json_is_null(json_array_get(json_object_get(row, "accuracy_run"), 0)));
    assert_true(json_is_null(json_object_get(row, "accuracy_delta")));
    assert_int_equal(json_integer_value(json_object_get(row, "apcc_n_dropped")), 0);
    /* one (comparison, task) unit: a mean, no sd */
    assert_int_equal(json_integer_value(json_object_get(row, "n_units")), 1);
    assert_true(json_is_real(json_object_get(row, "pc_unit_mean")));
    assert_true(json_is_null(json_object_get(row, "pc_unit_sd")));
    json_decref(root);
    arb_free(json);
    char *text = arb_audit_to_text(audit);
    assert_non_null(strstr(text, "window series (\xc2\xa7" "3.1, 10 items, stride 5): run 0 vs run 1 2 "
                                 "windows, the last one short (kept); vs experts run 0 0 windows"));
    assert_non_null(strstr(text, "resamples of blocks of 10 consecutive items, laid end to end"));
    assert_non_null(strstr(text, "PC unit sd        n/a"));
    arb_free(text);
    arb_audit_destroy(audit);
}


/* ---- --by language and --ensemble ---------------------------------------------------------- */

static void assert_same_name(const char *a, const char *b)
{
    if (!a || !b) assert_ptr_equal(a, b);
    else assert_string_equal(a, b);
}

/* One reading of the judgments (arb__audit_input_load) grouped several ways (arb__audit_rows,
** as the report does) gives exactly the rows of arb_audit_compute for each grouping, intervals
** included; a reading for other protocols is refused, and the factor analysis takes only an
** audit by judge, candidate and task. */
static void audit_rows_of_one_reading(void **state)
{
    fixture *f = *state;
    put_tasks_and_answers(f);
    const judgment js[] = {{"t1", 0, 0, 'A'}, {"t1", 0, 1, 'B'}, {"t2", 0, 0, 'A'},
                           {"t2", 0, 1, 'A'}, {"t3", 0, 0, 'B'}, {"t3", 0, 1, 'A'},
                           {"q1", 0, 0, 'A'}, {"q1", 0, 1, 'E'}};
    const judgment ks[] = {{"t1", 0, 0, 'B'}, {"t1", 0, 1, 'A'}, {"t2", 0, 0, 'C'},
                           {"t2", 0, 1, 'C'}, {"t3", 0, 0, 'A'}, {"t3", 0, 1, 'A'}};
    put_judgments(f, "jx", "cand", "base", "I", 4, js, sizeof js / sizeof *js);
    put_judgments(f, "jx", "base", "cand", "I", 4, ks, sizeof ks / sizeof *ks);
    put_judgments(f, "jy", "cand", "base", "I", 3, ks, sizeof ks / sizeof *ks);
    put_label(f, "t1", "cand", "base", 'a', "ann");
    arb_audit_params p = arb_audit_default_params();
    p.multi_agent = 0;
    arb__audit_input *in = NULL;
    assert_int_equal(arb__audit_input_load(f->store, &p, &in), ARB_OK);
    const unsigned groupings[] = {ARB_BY_COMPARISON, ARB_BY_JUDGE, ARB_BY_JUDGE | ARB_BY_TASK,
                                  ARB_BY_JUDGE | ARB_BY_LANGUAGE,
                                  ARB_BY_JUDGE | ARB_BY_CANDIDATE | ARB_BY_TASK};
    for (size_t g = 0; g < sizeof groupings / sizeof *groupings; g++) {
        p.by = groupings[g];
        p.bootstrap = g % 2 ? 300 : 0;
        p.seed = 11 + g;
        arb_audit *whole = audit_with(f, &p), *rows = NULL;
        assert_int_equal(arb__audit_rows(f->store, in, &p, &rows), ARB_OK);
        assert_true(arb_audit_count(whole) > 0);
        assert_int_equal(arb_audit_count(rows), arb_audit_count(whole));
        for (size_t i = 0; i < arb_audit_count(whole); i++) {
            const arb_audit_row *a = arb_audit_row_at(whole, i), *b = arb_audit_row_at(rows, i);
            assert_same_name(a->judge, b->judge);
            assert_same_name(a->candidate, b->candidate);
            assert_same_name(a->baseline, b->baseline);
            assert_same_name(a->task, b->task);
            assert_same_name(a->language, b->language);
            assert_int_equal(a->m.n_pairs, b->m.n_pairs);
            assert_int_equal(a->m.n_labelled_items, b->m.n_labelled_items);
            assert_memory_equal(a->m.value, b->m.value, sizeof a->m.value);
            assert_memory_equal(a->m.ci_lo, b->m.ci_lo, sizeof a->m.ci_lo);
            assert_memory_equal(a->m.ci_hi, b->m.ci_hi, sizeof a->m.ci_hi);
            assert_memory_equal(&a->m.mean, &b->m.mean, sizeof a->m.mean);
        }
        arb_factors *fa = NULL;
        arb_status want = p.by == (ARB_BY_JUDGE | ARB_BY_CANDIDATE | ARB_BY_TASK) ? ARB_OK
                                                                                 : ARB_INVALID;
        assert_int_equal(arb__factors_from_audit(f->store, rows, "pf", &fa), want);
        assert_true((fa != NULL) == (want == ARB_OK));
        arb_factors_destroy(fa);
        arb_audit_destroy(whole);
        arb_audit_destroy(rows);
    }
    arb_audit *bad = NULL;
    p.protocols = ARB_AUDIT_SBS | ARB_AUDIT_TOURNAMENT;
    assert_int_equal(arb__audit_rows(f->store, in, &p, &bad), ARB_INVALID);
    assert_null(bad);
    arb__audit_input_free(in);
    arb__audit_input_free(NULL);
}

/* The items' language splits a judge's rows; items without one are a group of their own,
** language "" ("(none)" in text), sorted first; combinable with other keys. */
static void audit_by_language(void **state)
{
    fixture *f = *state;
    assert_int_equal(arb_test_exec_sql(f->store, "UPDATE items SET language = 'ar' WHERE id IN "
                                                 "('q1', 'q2')"),
                     0);
    /* q1 (A,B) consistent, q2 (A,A) primacy, q3 (B,A) consistent */
    const judgment js[] = {{"q1", 0, 0, 'A'}, {"q1", 0, 1, 'B'}, {"q2", 0, 0, 'A'},
                           {"q2", 0, 1, 'A'}, {"q3", 0, 0, 'B'}, {"q3", 0, 1, 'A'}};
    put_judgments(f, "jx", "cand", "base", "I", 4, js, sizeof js / sizeof *js);
    arb_audit_params p = arb_audit_default_params();
    p.by = ARB_BY_JUDGE | ARB_BY_LANGUAGE;
    arb_audit *audit = audit_with(f, &p);
    assert_int_equal(arb_audit_count(audit), 2);
    const arb_audit_row *r = arb_audit_row_at(audit, 0);
    assert_string_equal(r->language, "");
    assert_null(r->task);
    assert_int_equal(r->m.n_items, 1);
    assert_near(r->m.value[ARB_M_PC], 1.0);
    r = arb_audit_row_at(audit, 1);
    assert_string_equal(r->language, "ar");
    assert_int_equal(r->m.n_items, 2);
    assert_near(r->m.value[ARB_M_PC], 0.5);
    char *text = arb_audit_to_text(audit);
    assert_non_null(strstr(text, "judge jx \xc2\xb7 language (none) \xc2\xb7 all candidates\n"));
    assert_non_null(strstr(text, "judge jx \xc2\xb7 language ar \xc2\xb7 all candidates\n"));
    char *json = arb_audit_to_json(audit);
    assert_non_null(strstr(json, "\"by\": [\n    \"judge\",\n    \"language\"\n  ]"));
    assert_non_null(strstr(json, "\"language\": \"ar\""));
    assert_non_null(strstr(json, "\"language\": \"\""));
    arb_free(text);
    arb_free(json);
    arb_audit_destroy(audit);

    /* the default grouping has no language key: null in JSON, one row */
    audit = audit_with(f, NULL);
    assert_int_equal(arb_audit_count(audit), 1);
    assert_null(arb_audit_row_at(audit, 0)->language);
    json = arb_audit_to_json(audit);
    assert_non_null(strstr(json, "\"language\": null"));
    arb_free(json);
    arb_audit_destroy(audit);

    /* comparison x language */
    p.by = ARB_BY_COMPARISON | ARB_BY_LANGUAGE;
    audit = audit_with(f, &p);
    assert_int_equal(arb_audit_count(audit), 2);
    assert_string_equal(arb_audit_row_at(audit, 1)->candidate, "cand");
    assert_string_equal(arb_audit_row_at(audit, 1)->language, "ar");
    arb_audit_destroy(audit);
}

/* The vote: most members' verdict, E not counted, ties to the earliest member, E when all E. */
static void audit_vote_rule(void **state)
{
    (void)state;
    assert_int_equal(arb__audit_vote("AAB", 3), 'A');
    assert_int_equal(arb__audit_vote("BAA", 3), 'A');
    assert_int_equal(arb__audit_vote("BCD", 3), 'B'); /* three-way tie: the first member */
    assert_int_equal(arb__audit_vote("DCB", 3), 'D');
    assert_int_equal(arb__audit_vote("EBA", 3), 'B'); /* E does not vote; B and A tie */
    assert_int_equal(arb__audit_vote("EEA", 3), 'A');
    assert_int_equal(arb__audit_vote("EEE", 3), 'E');
    assert_int_equal(arb__audit_vote("ABAB", 4), 'A');
    assert_int_equal(arb__audit_vote("BABA", 4), 'B');
    assert_int_equal(arb__audit_vote("CCAB", 4), 'C');
}

/* Three judges; the ensemble row "ensemble(j1,j2,j3)" holds their vote on the instances all
** three judged:
**   q1 order 0: A A B -> A;  order 1: B C D -> tie, j1's B   => pair (A,B) consistent
**   q2 order 0: E E E -> E;  order 1: E B A -> tie B/A, j2's B => pair (E,B) not valid
**   q3 order 0: j3 missing -> left out; order 1: A A A -> A    => run 1 only
** 5 judgments, 2 pairs with both orders, 1 valid and consistent, error rate 1/5. Named in the
** order j3, j2, j1, q1 order 1 goes to j3's D: (A,D) is inconsistent. */
static void audit_ensemble_row(void **state)
{
    fixture *f = *state;
    const judgment j1[] = {{"q1", 0, 0, 'A'}, {"q1", 0, 1, 'B'}, {"q2", 0, 0, 'E'},
                           {"q2", 0, 1, 'E'}, {"q3", 0, 0, 'A'}, {"q3", 0, 1, 'A'}};
    const judgment j2[] = {{"q1", 0, 0, 'A'}, {"q1", 0, 1, 'C'}, {"q2", 0, 0, 'E'},
                           {"q2", 0, 1, 'B'}, {"q3", 0, 0, 'B'}, {"q3", 0, 1, 'A'}};
    const judgment j3[] = {{"q1", 0, 0, 'B'}, {"q1", 0, 1, 'D'}, {"q2", 0, 0, 'E'},
                           {"q2", 0, 1, 'A'}, {"q3", 0, 1, 'A'}};
    put_judgments(f, "j1", "cand", "base", "I", 4, j1, sizeof j1 / sizeof *j1);
    put_judgments(f, "j2", "cand", "base", "I", 4, j2, sizeof j2 / sizeof *j2);
    put_judgments(f, "j3", "cand", "base", "I", 4, j3, sizeof j3 / sizeof *j3);
    arb_audit_params p = arb_audit_default_params();
    const char *names[] = {"j1", "j2", "j3"};
    p.ensemble = names;
    p.n_ensemble = 3;
    arb_audit *audit = audit_with(f, &p);
    assert_int_equal(arb_audit_count(audit), 4); /* the ensemble sorts before j1 */
    const arb_audit_row *r = arb_audit_row_at(audit, 0);
    assert_string_equal(r->judge, "ensemble(j1,j2,j3)");
    assert_string_equal(r->candidate, "cand");
    assert_int_equal(r->m.n_judgments, 5);
    assert_int_equal(r->m.n_pairs, 2);
    assert_int_equal(r->m.n_valid_pairs, 1);
    assert_int_equal(r->m.n_consistent, 1);
    assert_near(r->m.value[ARB_M_ERROR_RATE], 1.0 / 5.0);
    assert_shares(&r->m.run0, 0.5, 0, 0, 0, 0.5);
    assert_string_equal(arb_audit_row_at(audit, 1)->judge, "j1"); /* members stay */
    char *text = arb_audit_to_text(audit);
    assert_non_null(strstr(text, "judge ensemble(j1,j2,j3) \xc2\xb7 candidate cand"));
    assert_non_null(strstr(text, "a tie goes to the member named first"));
    arb_free(text);
    arb_audit_destroy(audit);

    const char *reversed[] = {"j3", "j2", "j1"};
    p.ensemble = reversed;
    audit = audit_with(f, &p);
    r = arb_audit_row_at(audit, 0);
    assert_string_equal(r->judge, "ensemble(j3,j2,j1)");
    assert_int_equal(r->m.n_valid_pairs, 1);
    assert_int_equal(r->m.n_consistent, 0);
    arb_audit_destroy(audit);

    /* by judge and language: the ensemble row splits like any judge */
    p.by = ARB_BY_JUDGE | ARB_BY_LANGUAGE;
    audit = audit_with(f, &p);
    assert_int_equal(arb_audit_count(audit), 4);
    assert_string_equal(arb_audit_row_at(audit, 0)->language, "");
    arb_audit_destroy(audit);

    /* bad members: unknown, repeated, alone */
    arb_audit *bad = NULL;
    const char *unknown[] = {"j1", "nobody"};
    p.ensemble = unknown;
    p.n_ensemble = 2;
    assert_int_equal(arb_audit_compute(f->store, &p, &bad), ARB_INVALID);
    assert_null(bad);
    assert_non_null(strstr(arb_store_errmsg(f->store), "\"nobody\""));
    const char *twice[] = {"j1", "j1"};
    p.ensemble = twice;
    assert_int_equal(arb_audit_compute(f->store, &p, &bad), ARB_INVALID);
    p.n_ensemble = 1;
    assert_int_equal(arb_audit_compute(f->store, &p, &bad), ARB_INVALID);
}

/* family_preference in the audit JSON, only when the store knows a judge's family. The
** numbers are those of test_agreement's agreement_family_preference for g1 and qw (the same
** judgments without g2): g1 (gpt, own cg) 5/6 - 3/8 = 11/24; qw (qwen, own base):
** own (1 + .5 + 0 + 1)/4 = 5/8, others = g1's points for base (0 + 0 + .5)/3 = 1/6,
** difference 11/24 as well, over 2 comparisons each. */
static void audit_family_preference(void **state)
{
    fixture *f = *state;
    static const judgment g1[] = {{"q1", 0, 0, 'A'}, {"q1", 0, 1, 'B'}, {"q2", 0, 0, 'C'},
                                  {"q2", 0, 1, 'E'}};
    static const judgment qw[] = {{"q1", 0, 0, 'B'}, {"q1", 0, 1, 'C'}, {"q2", 0, 0, 'A'},
                                  {"q2", 0, 1, 'A'}};
    put_judgments(f, "g1", "cg", "base", "t", 4, g1, 4);
    put_judgments(f, "qw", "cg", "base", "t", 4, qw, 4);
    arb_audit *audit = audit_of(f);
    char *text = arb_audit_to_json(audit);
    assert_null(strstr(text, "family_preference")); /* no family: the audit of before */
    arb_free(text);
    arb_audit_destroy(audit);

    assert_int_equal(arb__store_put_family(f->store, "g1", "judge", "gpt", "t"), ARB_OK);
    assert_int_equal(arb__store_put_family(f->store, "qw", "judge", "qwen", "t"), ARB_OK);
    assert_int_equal(arb__store_put_family(f->store, "cg", "model", "gpt", "t"), ARB_OK);
    assert_int_equal(arb__store_put_family(f->store, "base", "model", "qwen", "t"), ARB_OK);
    audit = audit_of(f);
    text = arb_audit_to_json(audit);
    json_t *root = json_loads(text, 0, NULL);
    assert_non_null(root);
    json_t *prefs = json_object_get(root, "family_preference");
    assert_int_equal(json_array_size(prefs), 2);
    json_t *g = json_array_get(prefs, 0), *q = json_array_get(prefs, 1);
    assert_string_equal(json_string_value(json_object_get(g, "judge")), "g1");
    assert_string_equal(json_string_value(json_object_get(g, "family")), "gpt");
    assert_near(json_real_value(json_object_get(g, "own_win_rate")), 5.0 / 6.0);
    assert_near(json_real_value(json_object_get(g, "others_win_rate")), 3.0 / 8.0);
    assert_near(json_real_value(json_object_get(g, "difference")), 11.0 / 24.0);
    assert_int_equal(json_integer_value(json_object_get(g, "n_comparisons")), 2);
    assert_true(json_is_real(json_object_get(g, "ci_low")));
    assert_string_equal(json_string_value(json_object_get(q, "judge")), "qw");
    assert_near(json_real_value(json_object_get(q, "own_win_rate")), 5.0 / 8.0);
    assert_near(json_real_value(json_object_get(q, "others_win_rate")), 1.0 / 6.0);
    assert_near(json_real_value(json_object_get(q, "difference")), 11.0 / 24.0);
    json_decref(root);
    arb_free(text);
    arb_audit_destroy(audit);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(metrics_zero_pairs),
        cmocka_unit_test(metrics_all_invalid),
        cmocka_unit_test(metrics_no_ab),
        cmocka_unit_test(metrics_always_first),
        cmocka_unit_test(metrics_consistent),
        cmocka_unit_test(metrics_mixed),
        cmocka_unit_test(metrics_missing_runs),
        cmocka_unit_test(metrics_one_run_only),
        cmocka_unit_test_setup_teardown(audit_empty_store, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(audit_groups_comparisons, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(audit_json_nulls_and_numbers, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(audit_text_readable_and_safe, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(audit_groupings_and_lengths, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(audit_expert_labels, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(audit_bootstrap, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(audit_family_preference, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(audit_tournament_rows, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(audit_window_block_bootstrap, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(audit_by_language, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(audit_rows_of_one_reading, setup_store, teardown_store),
        cmocka_unit_test(audit_vote_rule),
        cmocka_unit_test_setup_teardown(audit_ensemble_row, setup_store, teardown_store),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
