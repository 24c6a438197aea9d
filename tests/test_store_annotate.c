/*
** test_store_annotate.c -- the annotation app's store functions (store_annotate.c) called
** directly, without the HTTP server of test_annotate.c: the pairs served and why a given pair is
** refused (with its index), who holds an item (others' labels and live tasks, never one's own,
** not expired tasks), the next task in pair then benchmark order, task fields, renew, release,
** finish, the ui label and the progress counts.
**
** The store: items i1 (no reference), i2 (reference "Paris"), i3 in that order; model C answered
** all three, B answered i1 and i2, X nothing. So the pair C vs B has two tasks: i1, i2.
*/
#include "internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "testutil.h"

static const char items_jsonl[] =
    "{\"id\":\"i1\",\"question\":\"Q1\"}\n"
    "{\"id\":\"i2\",\"question\":\"Q2\",\"reference\":\"Paris\"}\n"
    "{\"id\":\"i3\",\"question\":\"Q3\"}\n";

static const arb_model_pair c_vs_b[] = {{"C", "B"}};

typedef struct fixture {
    char dir[256];
    arb_store *s;
    arb__annotation_tasks *at;
} fixture;

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    if (arb_test_store_with_items("store_annotate", items_jsonl, f.dir, sizeof f.dir, &f.s))
        return -1;
    if (arb_test_exec_sql(f.s, "INSERT INTO answers(item_id, model, answer) VALUES"
                               " ('i1','C','c1'), ('i2','C','c2'), ('i3','C','c3'),"
                               " ('i1','B','b1'), ('i2','B','b2')"))
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    arb__store_close_annotation_tasks(f->at);
    arb_store_close(f->s);
    arb_test_remove_dir(f->dir);
    return 0;
}

/* Serves c_vs_b with overlap and lease_minutes. */
static void serve(fixture *f, int overlap)
{
    size_t n = 9, bad = 9;
    arb__annotation_pair_problem problem = ARB__PAIR_TWICE;
    assert_int_equal(arb__store_put_annotation_pairs(f->s, c_vs_b, 1, &n, &bad, &problem), ARB_OK);
    assert_int_equal(n, 1);
    assert_int_equal(problem, ARB__PAIR_OK);
    assert_int_equal(arb__store_open_annotation_tasks(f->s, 30, overlap, &f->at), ARB_OK);
}

/* Reopens the store: the pairs live in a temporary table of one connection. */
static void reopen(fixture *f)
{
    char path[300];
    snprintf(path, sizeof path, "%s/arbiter.db", f->dir);
    arb_store_close(f->s);
    f->s = NULL;
    assert_int_equal(arb_store_open(path, &f->s), ARB_OK);
}

static void given_pairs_are_checked(void **state)
{
    fixture *f = *state;
    size_t n = 9, bad = 9;
    arb__annotation_pair_problem problem;
    /* Nothing judged side by side yet, nothing given: no pair, and no error. */
    assert_int_equal(arb__store_put_annotation_pairs(f->s, NULL, 0, &n, &bad, &problem), ARB_OK);
    assert_int_equal(n, 0);

    reopen(f);
    const arb_model_pair unanswered[] = {{"C", "B"}, {"C", "X"}};
    assert_int_equal(arb__store_put_annotation_pairs(f->s, unanswered, 2, &n, &bad, &problem),
                     ARB_INVALID);
    assert_int_equal(bad, 1);
    assert_int_equal(problem, ARB__PAIR_UNANSWERED);
    assert_int_equal(n, 0);

    reopen(f);
    const arb_model_pair twice[] = {{"B", "C"}, {"C", "B"}, {"B", "C"}};
    assert_int_equal(arb__store_put_annotation_pairs(f->s, twice, 3, &n, &bad, &problem),
                     ARB_INVALID);
    assert_int_equal(bad, 2);
    assert_int_equal(problem, ARB__PAIR_TWICE);

    reopen(f);
    assert_int_equal(arb__store_put_annotation_pairs(f->s, twice, 2, &n, &bad, &problem), ARB_OK);
    assert_int_equal(n, 2);
    assert_int_equal(arb_test_query_int(f->s, "SELECT count(*) FROM temp.annotate_pairs"), 2);
    assert_int_equal(arb_test_query_int(f->s, "SELECT pos FROM temp.annotate_pairs"
                                              " WHERE candidate = 'C'"),
                     2);
}

static void sbs_pairs_are_found(void **state)
{
    fixture *f = *state;
    arb__pairwise_row row = {.judge_name = "j", .item_id = "i1", .candidate = "C",
                             .baseline = "B", .template_name = "t", .options = 4,
                             .order = 0, .model_verdict = 'a', .position_verdict = 'A'};
    assert_int_equal(arb_test_put_sbs_judgment(f->s, &row, NULL), 0);
    row.candidate = "B";
    row.baseline = "A-model";
    assert_int_equal(arb_test_put_sbs_judgment(f->s, &row, NULL), 0);
    size_t n = 0, bad;
    arb__annotation_pair_problem problem;
    assert_int_equal(arb__store_put_annotation_pairs(f->s, NULL, 0, &n, &bad, &problem), ARB_OK);
    assert_int_equal(n, 2);
    /* sorted by name: B vs A-model first */
    assert_int_equal(arb_test_query_int(f->s, "SELECT pos FROM temp.annotate_pairs"
                                              " WHERE candidate = 'B'"),
                     1);
}

static void next_task_and_holders(void **state)
{
    fixture *f = *state;
    serve(f, 1);
    arb__annotation_task t;
    int found = 0;
    long long held = -1, id1 = 0;
    assert_int_equal(arb__store_own_open_annotation_task(f->at, "ann1", &t, &found), ARB_OK);
    assert_int_equal(found, 0);
    assert_int_equal(arb__store_next_annotation_task(f->at, "ann1", &t, &found), ARB_OK);
    assert_int_equal(found, 1);
    assert_string_equal(t.item, "i1");
    assert_string_equal(t.candidate, "C");
    assert_string_equal(t.baseline, "B");
    assert_int_equal(arb__store_put_annotation_task(f->at, "ann1", t.item, t.candidate,
                                                    t.baseline, 1, &id1),
                     ARB_OK);
    assert_true(id1 > 0);
    arb__annotation_task_free(&t);

    /* ann1's live task holds i1 for the others, not for ann1 itself */
    assert_int_equal(arb__store_count_annotation_holders(f->at, "ann2", "i1", "C", "B", &held),
                     ARB_OK);
    assert_int_equal(held, 1);
    assert_int_equal(arb__store_count_annotation_holders(f->at, "ann1", "i1", "C", "B", &held),
                     ARB_OK);
    assert_int_equal(held, 0);
    /* overlap 1: ann2 is given i2 */
    assert_int_equal(arb__store_next_annotation_task(f->at, "ann2", &t, &found), ARB_OK);
    assert_int_equal(found, 1);
    assert_string_equal(t.item, "i2");
    arb__annotation_task_free(&t);

    assert_int_equal(arb__store_own_open_annotation_task(f->at, "ann1", &t, &found), ARB_OK);
    assert_int_equal(found, 1);
    assert_int_equal(t.id, id1);
    assert_string_equal(t.item, "i1");
    assert_int_equal(t.live, 1);
    arb__annotation_task_free(&t);

    /* expired: no longer held for the others, and not live for its owner; renew revives it */
    assert_int_equal(arb_test_exec_sql(f->s, "UPDATE annotation_tasks SET assigned_at ="
                                             " strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ','now','-31 minutes')"),
                     0);
    assert_int_equal(arb__store_count_annotation_holders(f->at, "ann2", "i1", "C", "B", &held),
                     ARB_OK);
    assert_int_equal(held, 0);
    assert_int_equal(arb__store_own_open_annotation_task(f->at, "ann1", &t, &found), ARB_OK);
    assert_int_equal(t.live, 0);
    arb__annotation_task_free(&t);
    assert_int_equal(arb__store_renew_annotation_task(f->at, id1), ARB_OK);
    assert_int_equal(arb__store_get_annotation_task(f->at, id1, &t, &found), ARB_OK);
    assert_int_equal(found, 1);
    assert_int_equal(t.live, 1);
    assert_string_equal(t.annotator, "ann1");
    assert_int_equal(t.shown_order, 1);
    assert_int_equal(t.answered, 0);
    arb__annotation_task_free(&t);

    /* released: gone, and i1 is ann2's next task */
    assert_int_equal(arb__store_release_annotation_task(f->at, id1), ARB_OK);
    assert_int_equal(arb__store_get_annotation_task(f->at, id1, &t, &found), ARB_OK);
    assert_int_equal(found, 0);
    assert_int_equal(arb__store_next_annotation_task(f->at, "ann2", &t, &found), ARB_OK);
    assert_string_equal(t.item, "i1");
    arb__annotation_task_free(&t);
}

static void label_finish_and_progress(void **state)
{
    fixture *f = *state;
    serve(f, 2);
    long long id = 0, held = -1;
    arb__annotation_progress p;
    assert_int_equal(arb__store_annotation_progress(f->at, "ann1", &p), ARB_OK);
    assert_int_equal(p.labelled, 0);
    assert_int_equal(p.skipped, 0);
    assert_int_equal(p.remaining, 2);

    assert_int_equal(arb__store_put_annotation_task(f->at, "ann1", "i1", "C", "B", 0, &id),
                     ARB_OK);
    assert_int_equal(arb__store_put_annotation_label(f->at, "ann1", "i1", "C", "B", "b", 0, -1),
                     ARB_OK);
    assert_int_equal(arb__store_finish_annotation_task(f->at, id, "label"), ARB_OK);
    assert_int_equal(arb_test_query_int(f->s, "SELECT count(*) FROM human_labels WHERE"
                                              " annotator = 'ann1' AND verdict = 'b' AND"
                                              " shown_order = 0 AND time_ms IS NULL AND"
                                              " source = 'ui'"),
                     1);
    /* a finished task cannot be finished again, nor released */
    assert_int_equal(arb__store_finish_annotation_task(f->at, id, "skip"), ARB_OK);
    assert_int_equal(arb__store_release_annotation_task(f->at, id), ARB_OK);
    arb__annotation_task t;
    int found;
    assert_int_equal(arb__store_get_annotation_task(f->at, id, &t, &found), ARB_OK);
    assert_int_equal(found, 1);
    assert_int_equal(t.answered, 1);
    arb__annotation_task_free(&t);
    assert_int_equal(arb_test_query_int(f->s, "SELECT count(*) FROM annotation_tasks"
                                              " WHERE outcome = 'label'"),
                     1);
    /* the label holds i1 for the others even without a task */
    assert_int_equal(arb_test_exec_sql(f->s, "DELETE FROM annotation_tasks"), 0);
    assert_int_equal(arb__store_count_annotation_holders(f->at, "ann2", "i1", "C", "B", &held),
                     ARB_OK);
    assert_int_equal(held, 1);
    /* the label again, with a time: an upsert */
    assert_int_equal(arb__store_put_annotation_label(f->at, "ann1", "i1", "C", "B", "a", 1, 1500),
                     ARB_OK);
    assert_int_equal(arb_test_query_int(f->s, "SELECT time_ms FROM human_labels"
                                              " WHERE verdict = 'a' AND shown_order = 1"),
                     1500);

    assert_int_equal(arb__store_put_annotation_task(f->at, "ann1", "i1", "C", "B", 0, &id),
                     ARB_OK);
    assert_int_equal(arb__store_finish_annotation_task(f->at, id, "skip"), ARB_OK);
    assert_int_equal(arb__store_put_annotation_task(f->at, "ann1", "i2", "C", "B", 0, &id),
                     ARB_OK);
    /* skipped 1, open i2 1, nothing else eligible (i1 labelled, i3 lacks B) */
    assert_int_equal(arb__store_annotation_progress(f->at, "ann1", &p), ARB_OK);
    assert_int_equal(p.labelled, 0);
    assert_int_equal(p.skipped, 1);
    assert_int_equal(p.remaining, 1);
    /* ann2: i2 is held by ann1's open task but overlap 2 leaves room; i1 has one label */
    assert_int_equal(arb__store_annotation_progress(f->at, "ann2", &p), ARB_OK);
    assert_int_equal(p.remaining, 2);
}

static void task_texts(void **state)
{
    fixture *f = *state;
    serve(f, 1);
    arb__annotation_texts x;
    int found = 0;
    assert_int_equal(arb__store_get_annotation_texts(f->at, "i1", "C", "B", &x, &found), ARB_OK);
    assert_int_equal(found, 1);
    assert_string_equal(x.question, "Q1");
    assert_null(x.reference);
    assert_string_equal(x.candidate_answer, "c1");
    assert_string_equal(x.baseline_answer, "b1");
    arb__annotation_texts_free(&x);
    assert_int_equal(arb__store_get_annotation_texts(f->at, "i2", "C", "B", &x, &found), ARB_OK);
    assert_string_equal(x.reference, "Paris");
    arb__annotation_texts_free(&x);
    assert_int_equal(arb__store_get_annotation_texts(f->at, "i3", "C", "B", &x, &found), ARB_OK);
    assert_int_equal(found, 0);
    assert_null(x.question);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(given_pairs_are_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(sbs_pairs_are_found, setup, teardown),
        cmocka_unit_test_setup_teardown(next_task_and_holders, setup, teardown),
        cmocka_unit_test_setup_teardown(label_finish_and_progress, setup, teardown),
        cmocka_unit_test_setup_teardown(task_texts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
