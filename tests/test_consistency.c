/*
** test_consistency.c -- cross-language consistency of pointwise judgments (METHODS §8): the
** store reader (arb__store_each_pointwise), then arb_consistency_compute on small stores whose
** pointwise rows are written with SQL, against hand-computed Fleiss' and Cohen's kappa,
** accuracy, mean grade and E rates; left-out groups; degenerate cases (one language, one
** group, one category, no reference); Spearman across judges; the yes/no - grade gap; the
** ensemble and its tie rule; bootstrap reproducibility; the JSON keys of issue 13 and the text.
*/
#include "internal.h"

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

typedef struct fixture {
    char dir[256];
    arb_store *store;
} fixture;

/* Groups g1..g5 in en, fr and ar; g1..g4 in de. */
static const char items_jsonl[] =
    "{\"id\":\"g1-en\",\"question\":\"q\",\"language\":\"en\",\"group\":\"g1\"}\n"
    "{\"id\":\"g1-fr\",\"question\":\"q\",\"language\":\"fr\",\"group\":\"g1\"}\n"
    "{\"id\":\"g1-ar\",\"question\":\"q\",\"language\":\"ar\",\"group\":\"g1\"}\n"
    "{\"id\":\"g1-de\",\"question\":\"q\",\"language\":\"de\",\"group\":\"g1\"}\n"
    "{\"id\":\"g2-en\",\"question\":\"q\",\"language\":\"en\",\"group\":\"g2\"}\n"
    "{\"id\":\"g2-fr\",\"question\":\"q\",\"language\":\"fr\",\"group\":\"g2\"}\n"
    "{\"id\":\"g2-ar\",\"question\":\"q\",\"language\":\"ar\",\"group\":\"g2\"}\n"
    "{\"id\":\"g2-de\",\"question\":\"q\",\"language\":\"de\",\"group\":\"g2\"}\n"
    "{\"id\":\"g3-en\",\"question\":\"q\",\"language\":\"en\",\"group\":\"g3\"}\n"
    "{\"id\":\"g3-fr\",\"question\":\"q\",\"language\":\"fr\",\"group\":\"g3\"}\n"
    "{\"id\":\"g3-ar\",\"question\":\"q\",\"language\":\"ar\",\"group\":\"g3\"}\n"
    "{\"id\":\"g3-de\",\"question\":\"q\",\"language\":\"de\",\"group\":\"g3\"}\n"
    "{\"id\":\"g4-en\",\"question\":\"q\",\"language\":\"en\",\"group\":\"g4\"}\n"
    "{\"id\":\"g4-fr\",\"question\":\"q\",\"language\":\"fr\",\"group\":\"g4\"}\n"
    "{\"id\":\"g4-ar\",\"question\":\"q\",\"language\":\"ar\",\"group\":\"g4\"}\n"
    "{\"id\":\"g4-de\",\"question\":\"q\",\"language\":\"de\",\"group\":\"g4\"}\n"
    "{\"id\":\"g5-en\",\"question\":\"q\",\"language\":\"en\",\"group\":\"g5\"}\n"
    "{\"id\":\"g5-fr\",\"question\":\"q\",\"language\":\"fr\",\"group\":\"g5\"}\n"
    "{\"id\":\"g5-ar\",\"question\":\"q\",\"language\":\"ar\",\"group\":\"g5\"}\n"
    "{\"id\":\"solo\",\"question\":\"q\"}\n";

static int setup_store(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f;
    if (arb_test_store_with_items("test_consistency", items_jsonl, f->dir, sizeof f->dir,
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

/* One pointwise judgment: value -1 is E (NULL, with a reason). The evaluation language is the
** item's, as arbiter grade stores it, unless lang is given ("" = the item's own). */
static void put(fixture *f, const char *judge, const char *tpl, const char *kind,
                const char *task, const char *item, const char *model, int rep, int value,
                const char *lang)
{
    const char *eval = lang ? lang : strchr(item, '-') ? strchr(item, '-') + 1 : "";
    char value_text[16];
    snprintf(value_text, sizeof value_text, "%d", value);
    if (arb_test_exec_sql(f->store,
                          "INSERT INTO pointwise (judge_name, item_id, model, language, kind, "
                          "template_name, rep, value, task, reason) VALUES "
                          "(%Q, %Q, %Q, %Q, %Q, %Q, %d, %s, %Q, %Q)",
                          judge, item, model, eval, kind, tpl, rep, value < 0 ? "NULL" : value_text,
                          task, value < 0 ? "no <answer> tag" : NULL))
        fail();
}

/* Judgments of one judge, template, mode and task for the reference answers, written as
** "g1-en=1 g1-fr=0 g4-ar=E" (rep 0). */
static void put_spec(fixture *f, const char *judge, const char *tpl, const char *kind,
                     const char *task, const char *spec)
{
    char item[32];
    for (const char *p = spec; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        const char *eq = strchr(p, '=');
        assert_non_null(eq);
        assert_true((size_t)(eq - p) < sizeof item);
        memcpy(item, p, (size_t)(eq - p));
        item[eq - p] = '\0';
        int value = eq[1] == 'E' ? -1 : eq[1] - '0';
        put(f, judge, tpl, kind, task, item, "reference", 0, value, NULL);
        p = eq + 2;
    }
}

static arb_consistency *compute(fixture *f, const arb_consistency_params *p)
{
    arb_consistency *c = NULL;
    arb_status st = arb_consistency_compute(f->store, p, &c);
    if (st != ARB_OK) fail_msg("arb_consistency_compute: %s", arb_store_errmsg(f->store));
    assert_non_null(c);
    return c;
}

static const arb_consistency_language *lang_of(const arb_consistency_row *r, const char *code)
{
    for (size_t j = 0; j < r->n_languages; j++)
        if (!strcmp(r->languages[j].language, code)) return &r->languages[j];
    fail_msg("no language %s", code);
    return NULL;
}

static const char T_YES[] = "pointwise-yesno-general-explain";
static const char T_GRADE[] = "pointwise-grade-general-explain";

/* The yes/no row of the hand-computed example (judge ja, task qa):
**        g1 g2 g3 g4 g5
**   en    1  0  1  1  0
**   fr    1  0  1  1  1
**   ar    1  1  1  E  -
** Fleiss over g1..g3 (3 raters, 2 categories): P = 1, 1/3, 1 -> P_bar = 7/9; p = (2/9, 7/9),
** P_e = 53/81; kappa = (63/81 - 53/81) / (28/81) = 5/14. g4 is left out for its E, g5 for
** lacking ar. Accuracy en 3/5, fr 4/5, ar 3/3 (E rate 1/4). Cohen fr vs en over g1..g5:
** (1,1) (0,0) (1,1) (1,1) (0,1): p_o = 4/5, p_e = 2/5 * 1/5 + 3/5 * 4/5 = 14/25, kappa =
** (20/25 - 14/25) / (11/25) = 6/11. ar vs en over g1..g3: ar always 1, p_o = p_e = 2/3 -> 0. */
static void put_yesno_example(fixture *f)
{
    put_spec(f, "ja", T_YES, "yesno", "qa",
             "g1-en=1 g2-en=0 g3-en=1 g4-en=1 g5-en=0 "
             "g1-fr=1 g2-fr=0 g3-fr=1 g4-fr=1 g5-fr=1 "
             "g1-ar=1 g2-ar=1 g3-ar=1 g4-ar=E");
}

/* The grade row (judge ja, task qa): en 5 3 1, de 4 3 2 over g1..g3. Fleiss (2 raters, 5
** categories): P = 0, 1, 0 -> 1/3; p = (1, 1, 2, 1, 1)/6, P_e = 8/36; kappa = (1/3 - 2/9) /
** (7/9) = 1/7. Mean grade 3 in both. Cohen de vs en: p_o = 1/3, p_e = 1/9 (only grade 3 is
** shared), kappa = (2/9) / (8/9) = 1/4. */
static void put_grade_example(fixture *f)
{
    put_spec(f, "ja", T_GRADE, "grade", "qa", "g1-en=5 g2-en=3 g3-en=1 g1-de=4 g2-de=3 g3-de=2");
}

/* ---- the store reader --------------------------------------------------------------------- */

typedef struct seen {
    char text[2048];
    size_t n;
} seen;

static int on_row(void *ud, const arb__pointwise_row *r)
{
    seen *s = ud;
    size_t len = strlen(s->text);
    snprintf(s->text + len, sizeof s->text - len, "%s|%s|%s|%s|%s|%s|%s|%d|%d|%s|%s;",
             r->judge_name, r->template_name, r->kind, r->task, r->group, r->item_language,
             r->item_id, r->rep, r->value, r->language, r->reason ? r->reason : "-");
    return ++s->n == 100;
}

static int stop_at_first(void *ud, const arb__pointwise_row *r)
{
    (void)r;
    ++*(int *)ud;
    return 1;
}

/* Rows come with the item's language and group, in the declared order (judge, template, kind,
** task, group, item language, item, model, rep); E is value -1 with its reason; an item
** without a group or language gives ""; nonzero from the callback stops the walk. */
static void reader_order_and_join(void **state)
{
    fixture *f = *state;
    put(f, "jb", "t", "yesno", "qa", "g2-en", "reference", 0, 1, NULL);
    put(f, "ja", "t", "yesno", "qa", "g2-fr", "reference", 1, 0, NULL);
    put(f, "ja", "t", "yesno", "qa", "g2-fr", "reference", 0, -1, NULL);
    put(f, "ja", "t", "yesno", "qa", "g1-fr", "reference", 0, 1, NULL);
    put(f, "ja", "t", "grade", "qa", "solo", "m1", 0, 4, "");
    seen s = {"", 0};
    assert_int_equal(arb__store_each_pointwise(f->store, on_row, &s), ARB_OK);
    assert_int_equal(s.n, 5);
    assert_string_equal(s.text,
                        "ja|t|grade|qa|||solo|0|4||-;"
                        "ja|t|yesno|qa|g1|fr|g1-fr|0|1|fr|-;"
                        "ja|t|yesno|qa|g2|fr|g2-fr|0|-1|fr|no <answer> tag;"
                        "ja|t|yesno|qa|g2|fr|g2-fr|1|0|fr|-;"
                        "jb|t|yesno|qa|g2|en|g2-en|0|1|en|-;");
    int calls = 0;
    assert_int_equal(arb__store_each_pointwise(f->store, stop_at_first, &calls), ARB_OK);
    assert_int_equal(calls, 1);
    assert_int_equal(arb__store_each_pointwise(f->store, NULL, NULL), ARB_INVALID);
}

/* ---- rows --------------------------------------------------------------------------------- */

static void empty_store(void **state)
{
    fixture *f = *state;
    arb_consistency *c = compute(f, NULL);
    assert_int_equal(arb_consistency_count(c), 0);
    assert_null(arb_consistency_row_at(c, 0));
    assert_int_equal(arb_consistency_spearman_count(c), 0);
    assert_int_equal(arb_consistency_ensemble_count(c), 0);
    char *text = arb_consistency_to_text(c);
    assert_non_null(strstr(text, "no pointwise judgments"));
    arb_free(text);
    char *json = arb_consistency_to_json(c);
    json_t *root = json_loads(json, 0, NULL);
    assert_non_null(root);
    assert_int_equal(json_array_size(json_object_get(root, "rows")), 0);
    assert_true(json_is_array(json_object_get(root, "spearman")));
    assert_true(json_is_array(json_object_get(root, "ensemble")));
    json_decref(root);
    arb_free(json);
    arb_consistency_destroy(c);
    arb_consistency_destroy(NULL);
    assert_int_equal(arb_consistency_count(NULL), 0);
}

static void yesno_row_hand_computed(void **state)
{
    fixture *f = *state;
    put_yesno_example(f);
    put(f, "ja", T_YES, "yesno", "qa", "g1-en", "reference", 1, 0, NULL); /* rep 1: not used */
    arb_consistency *c = compute(f, NULL);
    assert_int_equal(arb_consistency_count(c), 1);
    const arb_consistency_row *r = arb_consistency_row_at(c, 0);
    assert_string_equal(r->judge, "ja");
    assert_string_equal(r->template_name, T_YES);
    assert_string_equal(r->mode, "yesno");
    assert_string_equal(r->task, "qa");
    assert_int_equal(r->n_languages, 3);
    assert_string_equal(r->languages[0].language, "ar"); /* by code */
    assert_string_equal(r->languages[1].language, "en");
    assert_string_equal(r->languages[2].language, "fr");
    assert_int_equal(r->n_groups, 3);
    assert_int_equal(r->n_groups_left_out, 2);
    assert_int_equal(r->n_groups_with_error, 1);
    assert_int_equal(r->n_other_reps, 1);
    assert_int_equal(r->n_duplicates, 0);
    assert_near(r->fleiss_kappa, 5.0 / 14.0);

    const arb_consistency_language *en = lang_of(r, "en"), *fr = lang_of(r, "fr"),
                                   *ar = lang_of(r, "ar");
    assert_int_equal(en->n, 5);
    assert_near(en->accuracy, 3.0 / 5.0);
    assert_undefined(en->mean_grade);
    assert_near(en->error_rate, 0.0);
    assert_undefined(en->cohen_kappa_vs_reference); /* the reference itself */
    assert_int_equal(fr->n, 5);
    assert_near(fr->accuracy, 4.0 / 5.0);
    assert_near(fr->cohen_kappa_vs_reference, 6.0 / 11.0);
    assert_int_equal(fr->n_vs_reference, 5);
    assert_int_equal(ar->n, 4);
    assert_int_equal(ar->n_errors, 1);
    assert_near(ar->accuracy, 1.0); /* over the valid judgments */
    assert_near(ar->error_rate, 0.25);
    assert_near(ar->cohen_kappa_vs_reference, 0.0);
    assert_int_equal(ar->n_vs_reference, 3);
    assert_near(r->language_mean, (1.0 + 0.6 + 0.8) / 3.0);
    assert_undefined(r->fleiss_kappa_ci[0]); /* no bootstrap */
    arb_consistency_destroy(c);
}

/* A grade row, the mode gap with its yes/no row, and another reference language. */
static void grade_row_and_mode_gap(void **state)
{
    fixture *f = *state;
    put_yesno_example(f);
    put_grade_example(f);
    arb_consistency *c = compute(f, NULL);
    assert_int_equal(arb_consistency_count(c), 2);
    const arb_consistency_row *g = arb_consistency_row_at(c, 0); /* template ...grade... first */
    assert_string_equal(g->mode, "grade");
    assert_int_equal(g->n_groups, 3);
    assert_int_equal(g->n_groups_left_out, 0);
    assert_near(g->fleiss_kappa, 1.0 / 7.0);
    assert_near(lang_of(g, "en")->mean_grade, 3.0);
    assert_undefined(lang_of(g, "en")->accuracy);
    assert_near(lang_of(g, "de")->mean_grade, 3.0);
    assert_near(lang_of(g, "de")->cohen_kappa_vs_reference, 0.25);
    assert_near(g->language_mean, 3.0);

    assert_int_equal(arb_consistency_mode_gap_count(c), 1);
    const arb_consistency_mode_gap *gap = arb_consistency_mode_gap_at(c, 0);
    assert_string_equal(gap->judge, "ja");
    assert_string_equal(gap->task, "qa");
    assert_string_equal(gap->yesno_template, T_YES);
    assert_string_equal(gap->grade_template, T_GRADE);
    assert_near(gap->yesno_kappa, 5.0 / 14.0);
    assert_near(gap->grade_kappa, 1.0 / 7.0);
    assert_near(gap->gap, 3.0 / 14.0);
    assert_null(arb_consistency_mode_gap_at(c, 1));
    arb_consistency_destroy(c);

    /* reference de: the grade row's en gets Cohen's kappa (symmetric here), de none; the
    ** yes/no row has no de, so every kappa of it is undefined */
    arb_consistency_params p = arb_consistency_default_params();
    p.reference_language = "de";
    c = compute(f, &p);
    g = arb_consistency_row_at(c, 0);
    assert_near(lang_of(g, "en")->cohen_kappa_vs_reference, 0.25);
    assert_undefined(lang_of(g, "de")->cohen_kappa_vs_reference);
    const arb_consistency_row *y = arb_consistency_row_at(c, 1);
    for (size_t j = 0; j < y->n_languages; j++) {
        assert_undefined(y->languages[j].cohen_kappa_vs_reference);
        assert_int_equal(y->languages[j].n_vs_reference, 0);
    }
    assert_near(y->fleiss_kappa, 5.0 / 14.0); /* unchanged */
    arb_consistency_destroy(c);
}

/* Degenerate rows: one language (no raters to compare), one complete group, every value the
** same category (P_e = 1), a group with E in every language; all kappas undefined, not 0. */
static void degenerate_rows_are_null(void **state)
{
    fixture *f = *state;
    put_spec(f, "j1lang", "t", "yesno", "qa", "g1-en=1 g2-en=0 g3-en=1");
    put_spec(f, "j1group", "t", "yesno", "qa", "g1-en=1 g1-fr=0 g2-en=1");
    put_spec(f, "jconst", "t", "yesno", "qa", "g1-en=1 g1-fr=1 g2-en=1 g2-fr=1");
    put_spec(f, "jerr", "t", "grade", "qa", "g1-en=E g1-fr=E g2-en=E g2-fr=3");
    arb_consistency *c = compute(f, NULL);
    assert_int_equal(arb_consistency_count(c), 4);

    const arb_consistency_row *r = arb_consistency_row_at(c, 0);
    assert_string_equal(r->judge, "j1group");
    assert_int_equal(r->n_groups, 1);
    assert_int_equal(r->n_groups_left_out, 1);
    assert_undefined(r->fleiss_kappa);
    assert_undefined(lang_of(r, "fr")->cohen_kappa_vs_reference); /* one pair */
    assert_int_equal(lang_of(r, "fr")->n_vs_reference, 1);

    r = arb_consistency_row_at(c, 1);
    assert_string_equal(r->judge, "j1lang");
    assert_int_equal(r->n_languages, 1);
    assert_int_equal(r->n_groups, 3); /* every language (the one) present */
    assert_undefined(r->fleiss_kappa);
    assert_near(lang_of(r, "en")->accuracy, 2.0 / 3.0);

    r = arb_consistency_row_at(c, 2);
    assert_string_equal(r->judge, "jconst");
    assert_int_equal(r->n_groups, 2);
    assert_undefined(r->fleiss_kappa);
    assert_undefined(lang_of(r, "fr")->cohen_kappa_vs_reference);
    assert_near(r->language_mean, 1.0);

    r = arb_consistency_row_at(c, 3);
    assert_string_equal(r->judge, "jerr");
    assert_int_equal(r->n_groups, 0);
    assert_int_equal(r->n_groups_left_out, 2);
    assert_int_equal(r->n_groups_with_error, 2);
    assert_undefined(r->fleiss_kappa);
    assert_undefined(lang_of(r, "en")->mean_grade); /* no valid grade */
    assert_near(lang_of(r, "en")->error_rate, 1.0);
    assert_near(lang_of(r, "fr")->mean_grade, 3.0);
    assert_near(lang_of(r, "fr")->error_rate, 0.5);

    /* undefined values are null in JSON, never 0 or NaN */
    char *json = arb_consistency_to_json(c);
    assert_null(strstr(json, "nan"));
    assert_null(strstr(json, "NaN"));
    json_t *root = json_loads(json, 0, NULL);
    json_t *row = json_array_get(json_object_get(root, "rows"), 3);
    assert_true(json_is_null(json_object_get(row, "fleiss_kappa")));
    json_t *en = json_object_get(json_object_get(row, "per_language"), "en");
    assert_true(json_is_null(json_object_get(en, "mean_grade")));
    assert_true(json_is_null(json_object_get(en, "cohen_kappa_vs_reference")));
    json_decref(root);
    arb_free(json);
    arb_consistency_destroy(c);
}

/* Groups are (parallel group, answering model); an item without a group is a group of its
** own; the evaluation language stored wins over the item's; a second judgment of one group
** and language is counted, not used. */
static void groups_models_and_languages(void **state)
{
    fixture *f = *state;
    /* model m1: g1 en 1 fr 1; model m2: g1 en 0 fr 0; solo (no group, no language) */
    put(f, "jm", "t", "yesno", "qa", "g1-en", "m1", 0, 1, NULL);
    put(f, "jm", "t", "yesno", "qa", "g1-fr", "m1", 0, 1, NULL);
    put(f, "jm", "t", "yesno", "qa", "g1-en", "m2", 0, 0, NULL);
    put(f, "jm", "t", "yesno", "qa", "g1-fr", "m2", 0, 0, NULL);
    put(f, "jm", "t", "yesno", "qa", "solo", "m1", 0, 1, "");
    /* g2-ar evaluated in fr: counts as fr, then g2-fr duplicates it */
    put(f, "jm", "t", "yesno", "qa", "g2-ar", "m1", 0, 1, "fr");
    put(f, "jm", "t", "yesno", "qa", "g2-fr", "m1", 0, 0, NULL);
    arb_consistency *c = compute(f, NULL);
    const arb_consistency_row *r = arb_consistency_row_at(c, 0);
    assert_int_equal(r->n_languages, 3); /* "", en, fr */
    assert_string_equal(r->languages[0].language, "");
    assert_int_equal(r->n_duplicates, 1);
    /* groups: (g1, m1), (g1, m2), (g2, m1), (solo, m1): none has all of "", en, fr */
    assert_int_equal(r->n_groups, 0);
    assert_int_equal(r->n_groups_left_out, 4);
    assert_int_equal(lang_of(r, "fr")->n, 3);
    assert_near(lang_of(r, "fr")->accuracy, 2.0 / 3.0); /* g2-ar (1) used, g2-fr (0) not */
    assert_int_equal(lang_of(r, "")->n, 1);
    /* Cohen fr vs en: (1,1) (0,0): p_o = 1, p_e = 1/2, kappa 1 */
    assert_near(lang_of(r, "fr")->cohen_kappa_vs_reference, 1.0);
    char *text = arb_consistency_to_text(c);
    assert_non_null(strstr(text, "(none)"));
    assert_non_null(strstr(text, "1 duplicate judgments"));
    arb_free(text);
    arb_consistency_destroy(c);
}

/* ---- across judges ------------------------------------------------------------------------ */

/* Three judges on en and fr, g1..g4 (+ extras that change no kappa):
**   A: (1,1) (0,0) (1,1) (1,1)  kappa 1      accuracy en 4/5 (g5-en=1), fr 3/4 -> 0.775
**   B: (1,1) (0,1) (1,1) (1,1)  P_bar 3/4, P_e 50/64, kappa -1/7; accuracy 3/4, 1 -> 0.875
**      (B's g5-en is E)
**   C: (1,0) (0,1) (1,1) (0,0)  P_bar 1/2, P_e 1/2, kappa 0; accuracy 1/2, 1/2 -> 0.5
** Ranks of accuracy A2 B3 C1, of kappa A3 B1 C2: sum d^2 = 6, rho = 1 - 36/24 = -1/2. */
static void put_three_judges(fixture *f)
{
    put_spec(f, "A", T_YES, "yesno", "qa",
             "g1-en=1 g1-fr=1 g2-en=0 g2-fr=0 g3-en=1 g3-fr=1 g4-en=1 g4-fr=1 g5-en=1");
    put_spec(f, "B", T_YES, "yesno", "qa",
             "g1-en=1 g1-fr=1 g2-en=0 g2-fr=1 g3-en=1 g3-fr=1 g4-en=1 g4-fr=1 g5-en=E");
    put_spec(f, "C", T_YES, "yesno", "qa",
             "g1-en=1 g1-fr=0 g2-en=0 g2-fr=1 g3-en=1 g3-fr=1 g4-en=0 g4-fr=0");
}

static void spearman_across_judges(void **state)
{
    fixture *f = *state;
    put_three_judges(f);
    arb_consistency *c = compute(f, NULL);
    assert_int_equal(arb_consistency_count(c), 3);
    assert_near(arb_consistency_row_at(c, 0)->fleiss_kappa, 1.0);
    assert_near(arb_consistency_row_at(c, 0)->language_mean, 0.775);
    assert_near(arb_consistency_row_at(c, 1)->fleiss_kappa, -1.0 / 7.0);
    assert_near(arb_consistency_row_at(c, 1)->language_mean, 0.875);
    assert_near(arb_consistency_row_at(c, 2)->fleiss_kappa, 0.0);
    assert_near(arb_consistency_row_at(c, 2)->language_mean, 0.5);
    assert_int_equal(arb_consistency_spearman_count(c), 1);
    const arb_consistency_spearman *s = arb_consistency_spearman_at(c, 0);
    assert_string_equal(s->task, "qa");
    assert_string_equal(s->mode, "yesno");
    assert_int_equal(s->n_judges, 3);
    assert_near(s->rho, -0.5);
    assert_int_equal(arb_consistency_mode_gap_count(c), 0); /* no grade rows */
    arb_consistency_destroy(c);

    /* a second task with two judges: rho undefined (n < 3), listed after qa */
    put_spec(f, "A", "summary-yesno", "yesno", "summary", "g1-en=1 g1-fr=1 g2-en=0 g2-fr=0");
    put_spec(f, "B", "summary-yesno", "yesno", "summary", "g1-en=1 g1-fr=0 g2-en=0 g2-fr=0");
    c = compute(f, NULL);
    assert_int_equal(arb_consistency_spearman_count(c), 2);
    s = arb_consistency_spearman_at(c, 1);
    assert_string_equal(s->task, "summary");
    assert_int_equal(s->n_judges, 2);
    assert_undefined(s->rho);
    char *json = arb_consistency_to_json(c);
    json_t *root = json_loads(json, 0, NULL);
    json_t *sp = json_array_get(json_object_get(root, "spearman"), 1);
    assert_true(json_is_null(json_object_get(sp, "rho")));
    assert_int_equal(json_integer_value(json_object_get(sp, "n_judges")), 2);
    json_decref(root);
    arb_free(json);
    arb_consistency_destroy(c);
}

/* ---- the ensemble ------------------------------------------------------------------------- */

static arb_consistency *ensemble_of(fixture *f, const char *const *names, size_t n)
{
    arb_consistency_params p = arb_consistency_default_params();
    p.ensemble = names;
    p.n_ensemble = n;
    return compute(f, &p);
}

/* A, B, C vote: the vote equals B's matrix (kappa -1/7 = Min, B's): delta 0; g5-en is judged
** by A, E for B and absent for C: left out. Two members tie wherever they differ and the first
** named wins: (C, A) gives C's matrix (kappa 0), (A, C) gives A's (kappa 1), 4 ties each (g1-fr,
** g2-fr, g4-en, g4-fr). */
static void ensemble_vote_and_tie_rule(void **state)
{
    fixture *f = *state;
    put_three_judges(f);
    const char *abc[] = {"A", "B", "C"};
    arb_consistency *c = ensemble_of(f, abc, 3);
    assert_int_equal(arb_consistency_ensemble_count(c), 1);
    const arb_consistency_ensemble *e = arb_consistency_ensemble_at(c, 0);
    assert_string_equal(e->task, "qa");
    assert_string_equal(e->mode, "yesno");
    assert_string_equal(e->template_name, T_YES);
    assert_int_equal(e->n_members, 3);
    assert_string_equal(e->members[2], "C");
    assert_near(e->ens, -1.0 / 7.0);
    assert_near(e->min, -1.0 / 7.0);
    assert_string_equal(e->min_judge, "B");
    assert_near(e->delta, 0.0);
    assert_int_equal(e->n_instances, 8);
    assert_int_equal(e->n_instances_left_out, 1);
    assert_int_equal(e->n_ties, 0);
    assert_int_equal(e->n_groups, 4);
    arb_consistency_destroy(c);

    const char *ca[] = {"C", "A"};
    c = ensemble_of(f, ca, 2);
    e = arb_consistency_ensemble_at(c, 0);
    assert_near(e->ens, 0.0);
    assert_near(e->min, 0.0);
    assert_string_equal(e->min_judge, "C");
    assert_near(e->delta, 0.0);
    assert_int_equal(e->n_ties, 4);
    arb_consistency_destroy(c);

    const char *ac[] = {"A", "C"};
    c = ensemble_of(f, ac, 2);
    e = arb_consistency_ensemble_at(c, 0);
    assert_near(e->ens, 1.0);
    assert_near(e->min, 0.0);
    assert_near(e->delta, 1.0);
    assert_int_equal(e->n_ties, 4);
    char *text = arb_consistency_to_text(c);
    assert_non_null(strstr(text, "ensemble: majority vote of A, C"));
    assert_non_null(strstr(text, "a tie to the earliest judge"));
    arb_free(text);
    arb_consistency_destroy(c);
}

/* Grades vote by plurality; three different grades tie and the first member's wins. A member
** without a row for the task gives no ensemble there; an unknown or repeated judge is bad
** input. */
static void ensemble_grades_and_bad_members(void **state)
{
    fixture *f = *state;
    put_spec(f, "x", "t", "grade", "qa", "g1-en=1 g1-fr=1 g2-en=5 g2-fr=4 g3-en=2 g3-fr=2");
    put_spec(f, "y", "t", "grade", "qa", "g1-en=2 g1-fr=1 g2-en=5 g2-fr=4 g3-en=3 g3-fr=2");
    put_spec(f, "z", "t", "grade", "qa", "g1-en=3 g1-fr=3 g2-en=4 g2-fr=4 g3-en=3 g3-fr=2");
    put_spec(f, "z", "t-math", "grade", "math", "g1-en=3 g1-fr=3");
    /* votes: g1-en (1,2,3) tie -> 1 (x), g1-fr 1, g2-en 5, g2-fr 4, g3-en 3, g3-fr 2:
    ** pairs (1,1) (5,4) (3,2): P = 1, 0, 0 -> 1/3; p = (2, 1, 1, 1, 1)/6 -> P_e = 8/36;
    ** kappa = (1/3 - 2/9) / (7/9) = 1/7 */
    const char *xyz[] = {"x", "y", "z"};
    arb_consistency *c = ensemble_of(f, xyz, 3);
    assert_int_equal(arb_consistency_ensemble_count(c), 1); /* math: only z has a row */
    const arb_consistency_ensemble *e = arb_consistency_ensemble_at(c, 0);
    assert_string_equal(e->mode, "grade");
    assert_int_equal(e->n_ties, 1);
    assert_near(e->ens, 1.0 / 7.0);
    arb_consistency_destroy(c);

    arb_consistency_params p = arb_consistency_default_params();
    const char *unknown[] = {"x", "nobody"};
    p.ensemble = unknown;
    p.n_ensemble = 2;
    arb_consistency *bad = NULL;
    assert_int_equal(arb_consistency_compute(f->store, &p, &bad), ARB_INVALID);
    assert_null(bad);
    assert_non_null(strstr(arb_store_errmsg(f->store), "\"nobody\""));
    const char *twice[] = {"x", "x"};
    p.ensemble = twice;
    assert_int_equal(arb_consistency_compute(f->store, &p, &bad), ARB_INVALID);
    const char *one[] = {"x"};
    p.ensemble = one;
    p.n_ensemble = 1;
    assert_int_equal(arb_consistency_compute(f->store, &p, &bad), ARB_INVALID);
    p = arb_consistency_default_params();
    p.ci_level = 1.0;
    assert_int_equal(arb_consistency_compute(f->store, &p, &bad), ARB_INVALID);
    assert_int_equal(arb_consistency_compute(f->store, NULL, NULL), ARB_INVALID);
}

/* ---- bootstrap, JSON, text ---------------------------------------------------------------- */

/* The same seed gives the same intervals; intervals are ordered; the keys appear only with a
** bootstrap. */
static void bootstrap_reproducible(void **state)
{
    fixture *f = *state;
    put_three_judges(f);
    arb_consistency_params p = arb_consistency_default_params();
    p.bootstrap = 200;
    p.seed = 7;
    const char *abc[] = {"A", "B", "C"};
    p.ensemble = abc;
    p.n_ensemble = 3;
    arb_consistency *c1 = compute(f, &p), *c2 = compute(f, &p);
    char *j1 = arb_consistency_to_json(c1), *j2 = arb_consistency_to_json(c2);
    assert_string_equal(j1, j2);
    const arb_consistency_row *r = arb_consistency_row_at(c1, 2); /* C */
    assert_true(isfinite(r->fleiss_kappa_ci[0]) && isfinite(r->fleiss_kappa_ci[1]));
    assert_true(r->fleiss_kappa_ci[0] <= r->fleiss_kappa_ci[1]);
    const arb_consistency_language *fr = lang_of(r, "fr");
    assert_true(fr->score_ci[0] <= fr->accuracy && fr->accuracy <= fr->score_ci[1]);
    json_t *root = json_loads(j1, 0, NULL);
    json_t *boot = json_object_get(root, "bootstrap");
    assert_int_equal(json_integer_value(json_object_get(boot, "resamples")), 200);
    assert_int_equal(json_integer_value(json_object_get(boot, "seed")), 7);
    json_t *row = json_array_get(json_object_get(root, "rows"), 2);
    assert_true(json_is_array(json_object_get(row, "fleiss_kappa_ci")));
    json_t *pl = json_object_get(json_object_get(row, "per_language"), "fr");
    assert_true(json_is_array(json_object_get(pl, "accuracy_ci")));
    assert_non_null(json_object_get(pl, "cohen_kappa_vs_reference_ci"));
    json_t *en = json_object_get(json_object_get(row, "per_language"), "en");
    assert_true(json_is_null(json_object_get(en, "cohen_kappa_vs_reference_ci")));
    assert_non_null(json_object_get(json_array_get(json_object_get(root, "ensemble"), 0), "ens_ci"));
    json_decref(root);
    char *text = arb_consistency_to_text(c1);
    assert_non_null(strstr(text, "200 resamples of parallel groups, seed 7"));
    arb_free(text);
    arb_free(j1);
    arb_free(j2);
    arb_consistency_destroy(c1);
    arb_consistency_destroy(c2);

    p.seed = 8; /* another seed still gives a valid, ordered interval */
    c1 = compute(f, &p);
    r = arb_consistency_row_at(c1, 2);
    assert_true(r->fleiss_kappa_ci[0] <= r->fleiss_kappa_ci[1]);
    arb_consistency_destroy(c1);
}

/* Exactly the keys of issue 13 scope 4 (and the documented extras), in order. */
static void json_keys(void **state)
{
    fixture *f = *state;
    put_yesno_example(f);
    put_grade_example(f);
    put_spec(f, "jb", T_YES, "yesno", "qa", "g1-en=1 g1-fr=1 g2-en=0 g2-fr=0");
    const char *ens[] = {"ja", "jb"};
    arb_consistency *c = ensemble_of(f, ens, 2);
    char *json = arb_consistency_to_json(c);
    json_t *root = json_loads(json, 0, NULL);
    assert_non_null(root);
    const char *top[] = {"arbiter_version", "reference_language", "repetition", "bootstrap",
                         "rows", "spearman", "mode_gap", "ensemble", "logprobs"};
    const char *key;
    json_t *v;
    size_t i = 0;
    json_object_foreach(root, key, v) {
        assert_true(i < sizeof top / sizeof *top);
        assert_string_equal(key, top[i++]);
    }
    assert_int_equal(i, sizeof top / sizeof *top);
    assert_string_equal(json_string_value(json_object_get(root, "reference_language")), "en");
    assert_true(json_is_null(json_object_get(root, "bootstrap")));
    /* judgments without logprobs: "no logprobs" (null), never 0 (README "Logprobs") */
    json_t *lp = json_object_get(root, "logprobs");
    assert_true(json_array_size(lp) > 0);
    for (size_t k = 0; k < json_array_size(lp); k++) {
        json_t *r = json_array_get(lp, k);
        assert_true(json_is_false(json_object_get(r, "logprobs_available")));
        assert_int_equal(json_integer_value(json_object_get(r, "with_logprobs")), 0);
        int grade = !strcmp(json_string_value(json_object_get(r, "kind")), "grade");
        assert_true(json_is_null(json_object_get(r, grade ? "expected_grade" : "mean_p_correct")));
    }

    const char *row_keys[] = {"judge", "template", "mode", "task", "n_groups",
                              "n_groups_left_out", "n_groups_with_error", "n_duplicates",
                              "n_other_reps", "languages", "fleiss_kappa", "language_mean",
                              "per_language"};
    json_t *row = json_array_get(json_object_get(root, "rows"), 1); /* ja yes/no */
    i = 0;
    json_object_foreach(row, key, v) {
        assert_true(i < sizeof row_keys / sizeof *row_keys);
        assert_string_equal(key, row_keys[i++]);
    }
    assert_int_equal(i, sizeof row_keys / sizeof *row_keys);
    assert_string_equal(json_string_value(json_object_get(row, "mode")), "yesno");
    assert_int_equal(json_array_size(json_object_get(row, "languages")), 3);
    assert_true(fabs(json_real_value(json_object_get(row, "fleiss_kappa")) - 5.0 / 14.0) < 1e-12);
    json_t *fr = json_object_get(json_object_get(row, "per_language"), "fr");
    const char *lang_keys[] = {"n", "accuracy", "error_rate", "n_errors",
                               "cohen_kappa_vs_reference", "n_vs_reference"};
    i = 0;
    json_object_foreach(fr, key, v) {
        assert_true(i < sizeof lang_keys / sizeof *lang_keys);
        assert_string_equal(key, lang_keys[i++]);
    }
    assert_int_equal(json_integer_value(json_object_get(fr, "n")), 5);
    json_t *grade_row = json_array_get(json_object_get(root, "rows"), 0);
    json_t *de = json_object_get(json_object_get(grade_row, "per_language"), "de");
    assert_non_null(json_object_get(de, "mean_grade"));
    assert_null(json_object_get(de, "accuracy"));

    json_t *sp = json_array_get(json_object_get(root, "spearman"), 0);
    assert_non_null(json_object_get(sp, "task"));
    assert_non_null(json_object_get(sp, "mode"));
    assert_non_null(json_object_get(sp, "rho"));
    assert_non_null(json_object_get(sp, "n_judges"));
    json_t *gap = json_array_get(json_object_get(root, "mode_gap"), 0);
    assert_true(fabs(json_real_value(json_object_get(gap, "gap")) - 3.0 / 14.0) < 1e-12);
    json_t *e = json_array_get(json_object_get(root, "ensemble"), 0);
    assert_non_null(e);
    assert_int_equal(json_array_size(json_object_get(e, "members")), 2);
    assert_non_null(json_object_get(e, "min"));
    assert_non_null(json_object_get(e, "ens"));
    assert_non_null(json_object_get(e, "delta"));
    json_decref(root);
    arb_free(json);
    arb_consistency_destroy(c);
}

/* Text: the row title, the figures and the choices; untrusted names cannot drive a terminal. */
static void text_readable_and_safe(void **state)
{
    fixture *f = *state;
    put_yesno_example(f);
    put_spec(f, "evil\x1b[31m", "t", "yesno", "qa", "g1-en=1 g1-fr=1");
    arb_consistency *c = compute(f, NULL);
    char *text = arb_consistency_to_text(c);
    assert_non_null(text);
    assert_null(strchr(text, '\x1b'));
    assert_non_null(strstr(text, "judge ja \xc2\xb7 template " "pointwise-yesno-general-explain"
                                 " \xc2\xb7 yes/no \xc2\xb7 task qa"));
    assert_non_null(strstr(text, "Fleiss' \xce\xba  +0.357"));
    assert_non_null(strstr(text, "groups 3 used, 2 left out (1 with an E, 1 missing a language)"));
    assert_non_null(strstr(text, "E is no category"));
    assert_non_null(strstr(text, "repetition 0 only"));
    assert_non_null(strstr(text, "reference"));
    assert_non_null(strstr(text, "+0.545")); /* fr vs en, 6/11 */
    arb_free(text);
    arb_consistency_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(reader_order_and_join, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(empty_store, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(yesno_row_hand_computed, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(grade_row_and_mode_gap, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(degenerate_rows_are_null, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(groups_models_and_languages, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(spearman_across_judges, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(ensemble_vote_and_tie_rule, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(ensemble_grades_and_bad_members, setup_store,
                                        teardown_store),
        cmocka_unit_test_setup_teardown(bootstrap_reproducible, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(json_keys, setup_store, teardown_store),
        cmocka_unit_test_setup_teardown(text_readable_and_safe, setup_store, teardown_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
