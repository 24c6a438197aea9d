/*
** test_store_labels.c -- the table human_labels through store_labels.c, called directly: an
** import's statements (an item that is stored or not, a label found or not, inserted, then
** updated with NULL and non-NULL shown order and time), its transaction (committed on ARB_OK,
** rolled back on a failure, a savepoint that leaves the caller's transaction open), and the
** three ordered walks (verdict counts per labelled item, labels per annotator, every label),
** each stopped by its callback.
**
** The store: items i1 (seq 0), i2 (seq 1), i3 (seq 2). The walks' labels (annotator, verdict):
**   (X, Y): i2 ann1 a, i2 ann2 a, i2 ann3 b, i1 ann1 c        (A, B): i1 ann1 d
** in that insertion order, so the walks' order comes from their ORDER BY, not from the rowids.
*/
#include "test_sql.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char items_jsonl[] = "{\"id\":\"i1\",\"question\":\"Q1\"}\n"
                                  "{\"id\":\"i2\",\"question\":\"Q2\"}\n"
                                  "{\"id\":\"i3\",\"question\":\"Q3\"}\n";

typedef struct fixture {
    char dir[256];
    arb_store *s;
} fixture;

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    if (arb_test_store_with_items("store_labels", items_jsonl, f.dir, sizeof f.dir, &f.s))
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    arb_store_close(f->s);
    arb_test_remove_dir(f->dir);
    return 0;
}

static long long n_labels(arb_store *s)
{
    return arb_test_query_int(s, "SELECT count(*) FROM human_labels");
}

/* ---- the import's statements -------------------------------------------------------------- */

static void test_import_insert_find_update(void **state)
{
    fixture *f = *state;
    arb__label_import *li = NULL;
    assert_int_equal(arb__store_open_label_import(f->s, &li), ARB_OK);
    assert_non_null(li);

    int exists = -1;
    assert_int_equal(arb__store_label_item_exists(li, "i1", &exists), ARB_OK);
    assert_int_equal(exists, 1);
    assert_int_equal(arb__store_label_item_exists(li, "nope", &exists), ARB_OK);
    assert_int_equal(exists, 0);

    arb__label_row row = {"i1", "X", "Y", "ann1", "f.jsonl", 'a', 0, 0, 1, 1200};
    arb__label_row found;
    long long id = -1;
    assert_int_equal(arb__store_find_label(li, &row, &found, &id), ARB_OK);
    assert_int_equal(id, 0); /* nothing stored yet */

    assert_int_equal(arb__store_put_label(li, 0, &row), ARB_OK);
    assert_int_equal(arb__store_find_label(li, &row, &found, &id), ARB_OK);
    assert_true(id > 0);
    assert_int_equal(found.verdict, 'a');
    assert_int_equal(found.has_shown_order, 0);
    assert_int_equal(found.has_time_ms, 1);
    assert_int_equal(found.time_ms, 1200);

    /* another annotator of the same item and pair is another label */
    arb__label_row other = row;
    other.annotator = "ann2";
    long long other_id = -1;
    assert_int_equal(arb__store_find_label(li, &other, &found, &other_id), ARB_OK);
    assert_int_equal(other_id, 0);

    arb__label_row update = {"i1", "X", "Y", "ann1", "g.csv", 'b', 1, 1, 0, 0};
    assert_int_equal(arb__store_put_label(li, id, &update), ARB_OK);
    long long id2 = -1;
    assert_int_equal(arb__store_find_label(li, &row, &found, &id2), ARB_OK);
    assert_int_equal(id2, id);
    assert_int_equal(found.verdict, 'b');
    assert_int_equal(found.has_shown_order, 1);
    assert_int_equal(found.shown_order, 1);
    assert_int_equal(found.has_time_ms, 0);

    assert_int_equal(arb__store_close_label_import(li, ARB_OK), ARB_OK);
    assert_int_equal(n_labels(f->s), 1);
    assert_int_equal(arb_test_query_int(f->s, "SELECT count(*) FROM human_labels WHERE verdict = "
                                              "'b' AND shown_order = 1 AND time_ms IS NULL AND "
                                              "source = 'g.csv' AND annotator = 'ann1'"),
                     1);
}

static void test_import_failure_rolls_back(void **state)
{
    fixture *f = *state;
    arb__label_import *li = NULL;
    assert_int_equal(arb__store_open_label_import(f->s, &li), ARB_OK);
    arb__label_row row = {"i2", "X", "Y", "ann1", "f.jsonl", 'c', 1, 0, 0, 0};
    assert_int_equal(arb__store_put_label(li, 0, &row), ARB_OK);
    assert_int_equal(n_labels(f->s), 1); /* inside the import's transaction */
    assert_int_equal(arb__store_close_label_import(li, ARB_PARSE), ARB_PARSE);
    assert_int_equal(n_labels(f->s), 0);
    assert_int_equal(sqlite3_get_autocommit(arb__store_conn(f->s)), 1);
    /* a label the schema refuses fails the statement (ARB_DB), not the process */
    assert_int_equal(arb__store_open_label_import(f->s, &li), ARB_OK);
    arb__label_row bad = {"i2", "X", "Y", "ann1", "f.jsonl", 'z', 0, 0, 0, 0};
    assert_int_equal(arb__store_put_label(li, 0, &bad), ARB_DB);
    assert_non_null(strstr(arb__store_last_db_error(f->s, NULL), "CHECK"));
    assert_int_equal(arb__store_close_label_import(li, ARB_DB), ARB_DB);
    assert_int_equal(n_labels(f->s), 0);
    assert_int_equal(arb__store_close_label_import(NULL, ARB_IO), ARB_IO);
}

static void test_import_savepoint_in_callers_transaction(void **state)
{
    fixture *f = *state;
    assert_int_equal(arb__store_begin(f->s), ARB_OK);
    arb__label_import *li = NULL;
    arb__label_row row = {"i3", "X", "Y", "ann1", "f.jsonl", 'd', 0, 0, 0, 0};
    assert_int_equal(arb__store_open_label_import(f->s, &li), ARB_OK);
    assert_int_equal(arb__store_put_label(li, 0, &row), ARB_OK);
    assert_int_equal(arb__store_close_label_import(li, ARB_PARSE), ARB_PARSE);
    /* the savepoint is undone, the caller's transaction is still open */
    assert_int_equal(sqlite3_get_autocommit(arb__store_conn(f->s)), 0);
    assert_int_equal(n_labels(f->s), 0);
    assert_int_equal(arb__store_open_label_import(f->s, &li), ARB_OK);
    assert_int_equal(arb__store_put_label(li, 0, &row), ARB_OK);
    assert_int_equal(arb__store_close_label_import(li, ARB_OK), ARB_OK);
    assert_int_equal(sqlite3_get_autocommit(arb__store_conn(f->s)), 0);
    assert_int_equal(arb__store_commit(f->s), ARB_OK);
    assert_int_equal(n_labels(f->s), 1);
}

/* ---- the walks ------------------------------------------------------------------------------ */

static int put_walk_labels(arb_store *s)
{
    return arb_test_exec_sql(s, "INSERT INTO human_labels(item_id, candidate, baseline, verdict,"
                                " annotator, source) VALUES"
                                " ('i2', 'X', 'Y', 'a', 'ann1', 't'), ('i2', 'X', 'Y', 'a', 'ann2', 't'),"
                                " ('i2', 'X', 'Y', 'b', 'ann3', 't'), ('i1', 'X', 'Y', 'c', 'ann1', 't'),"
                                " ('i1', 'A', 'B', 'd', 'ann1', 't')");
}

/* What a walk saw, one line per row, and after how many rows its callback stops (0: never). */
typedef struct seen {
    char text[1024];
    int rows, stop_after, stop_with;
} seen;

static int add_line(seen *w, const char *line)
{
    strncat(w->text, line, sizeof w->text - strlen(w->text) - 1);
    w->rows++;
    return w->stop_after && w->rows >= w->stop_after ? w->stop_with : 0;
}

static int count_row(void *ud, const char *item, const char *cand, const char *base,
                     const long long counts[4])
{
    char line[128];
    snprintf(line, sizeof line, "%s %s %s %lld%lld%lld%lld\n", cand, base, item, counts[0],
             counts[1], counts[2], counts[3]);
    return add_line(ud, line);
}

static void test_each_label_count(void **state)
{
    fixture *f = *state;
    assert_int_equal(put_walk_labels(f->s), 0);
    seen w = {"", 0, 0, 0};
    assert_int_equal(arb__store_each_label_count(f->s, count_row, &w), ARB_OK);
    /* candidate, baseline, then benchmark order: i1 (seq 0) before i2 */
    assert_string_equal(w.text, "A B i1 0001\n"
                                "X Y i1 0010\n"
                                "X Y i2 2100\n");
    seen stop = {"", 0, 2, 1};
    assert_int_equal(arb__store_each_label_count(f->s, count_row, &stop), ARB_OK);
    assert_int_equal(stop.rows, 2);
}

static int annotator_row(void *ud, const char *cand, const char *base, const char *ann,
                         long long n)
{
    char line[128];
    snprintf(line, sizeof line, "%s %s %s %lld\n", cand, base, ann, n);
    return add_line(ud, line);
}

static int label_row(void *ud, const char *cand, const char *base, const char *item,
                     long long seq, const char *ann, const char *verdict)
{
    char line[128];
    snprintf(line, sizeof line, "%s %s %s@%lld %s %s\n", cand, base, item, seq, ann, verdict);
    return add_line(ud, line);
}

static void test_report_walks(void **state)
{
    fixture *f = *state;
    assert_int_equal(put_walk_labels(f->s), 0);
    seen a = {"", 0, 0, 0}, l = {"", 0, 0, 0};
    int began = arb__store_label_report_begin(f->s);
    assert_int_equal(began, 1); /* no transaction was open */
    assert_int_equal(sqlite3_get_autocommit(arb__store_conn(f->s)), 0);
    assert_int_equal(arb__store_each_label_annotator(f->s, annotator_row, &a), 0);
    assert_int_equal(arb__store_each_label(f->s, label_row, &l), 0);
    arb__store_label_report_end(f->s, began);
    assert_int_equal(sqlite3_get_autocommit(arb__store_conn(f->s)), 1);
    assert_string_equal(a.text, "A B ann1 1\n"
                                "X Y ann1 2\n"
                                "X Y ann2 1\n"
                                "X Y ann3 1\n");
    assert_string_equal(l.text, "A B i1@0 ann1 d\n"
                                "X Y i1@0 ann1 c\n"
                                "X Y i2@1 ann1 a\n"
                                "X Y i2@1 ann2 a\n"
                                "X Y i2@1 ann3 b\n");
    /* a callback's nonzero return stops the walk and is returned */
    seen stop = {"", 0, 2, -7};
    assert_int_equal(arb__store_each_label(f->s, label_row, &stop), -7);
    assert_int_equal(stop.rows, 2);
    seen stop_a = {"", 0, 1, -1};
    assert_int_equal(arb__store_each_label_annotator(f->s, annotator_row, &stop_a), -1);
    assert_int_equal(stop_a.rows, 1);
    /* inside the caller's transaction no second one is begun, and end leaves it open */
    assert_int_equal(arb__store_begin(f->s), ARB_OK);
    began = arb__store_label_report_begin(f->s);
    assert_int_equal(began, 0);
    arb__store_label_report_end(f->s, began);
    assert_int_equal(sqlite3_get_autocommit(arb__store_conn(f->s)), 0);
    arb__store_rollback(f->s);
}

static void test_walks_of_an_empty_table(void **state)
{
    fixture *f = *state;
    seen w = {"", 0, 0, 0};
    assert_int_equal(arb__store_each_label_count(f->s, count_row, &w), ARB_OK);
    assert_int_equal(arb__store_each_label_annotator(f->s, annotator_row, &w), 0);
    assert_int_equal(arb__store_each_label(f->s, label_row, &w), 0);
    assert_int_equal(w.rows, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_walks_of_an_empty_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import_insert_find_update, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import_failure_rolls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import_savepoint_in_callers_transaction, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_each_label_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_walks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
