/*
** store_labels.c -- the table human_labels (expert labels, METHODS §4): the statements of a
** label import (prepared once per file, inside one transaction or the caller's savepoint), the
** verdict counts per labelled (item, candidate, baseline) that the majority is taken from, and
** the two ordered walks of the inter-annotator report. Also what the label importers ask of
** the judgments already stored: which way round (candidate, baseline) a pair of models is
** judged, so a label given in another tool's terms (MT-Bench human judgments name model_a and
** model_b) lands on the same rows the judge's verdicts are on and audit can compare them.
**
** Not here: what a label file means, the majority rule or the statistics (labels.c).
*/
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>

#define NOW_SQL "strftime('%Y-%m-%dT%H:%M:%fZ','now')"
#define LABELS_SAVEPOINT "arb_labels_import"

/* ---- import ---------------------------------------------------------------------------------- */

struct arb__label_import {
    arb_store *store;
    sqlite3_stmt *find_item, *find_label, *insert, *update;
    int own_tx; /* began its own transaction (else a savepoint inside the caller's) */
    int in_tx;
};

static const char *const import_sql[4] = {
    "SELECT 1 FROM items WHERE id = ?1",
    "SELECT id, verdict, shown_order, time_ms FROM human_labels"
    " WHERE item_id = ?1 AND candidate = ?2 AND baseline = ?3 AND annotator = ?4",
    "INSERT INTO human_labels(item_id, verdict, shown_order, time_ms, source, candidate,"
    " baseline, annotator) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    "UPDATE human_labels SET verdict = ?2, shown_order = ?3, time_ms = ?4, source = ?5,"
    " imported_at = " NOW_SQL " WHERE id = ?1",
};

arb_status arb__store_open_label_import(arb_store *s, arb__label_import **out)
{
    *out = NULL;
    arb__label_import *li = calloc(1, sizeof *li);
    if (!li) return arb__store_fail(s, ARB_NOMEM, "labels: out of memory");
    li->store = s;
    sqlite3 *db = arb__store_conn(s);
    sqlite3_stmt **stmts[4] = {&li->find_item, &li->find_label, &li->insert, &li->update};
    arb_status st = ARB_OK;
    for (int i = 0; i < 4 && !st; i++)
        if (sqlite3_prepare_v2(db, import_sql[i], -1, stmts[i], NULL) != SQLITE_OK)
            st = arb__store_fail_db(s, "labels: cannot prepare a statement");
    /* A caller already in a transaction gets a savepoint, so a bad file still leaves no trace
    ** and the caller's transaction stays theirs to finish. */
    li->own_tx = sqlite3_get_autocommit(db);
    if (!st) {
        if (li->own_tx) st = arb__store_begin(s);
        else if (sqlite3_exec(db, "SAVEPOINT " LABELS_SAVEPOINT, NULL, NULL, NULL) != SQLITE_OK)
            st = arb__store_fail_db(s, "labels: cannot start a savepoint");
        li->in_tx = !st;
    }
    if (st) {
        arb__store_close_label_import(li, st);
        return st;
    }
    *out = li;
    return ARB_OK;
}

arb_status arb__store_close_label_import(arb__label_import *li, arb_status st)
{
    if (!li) return st;
    arb_store *s = li->store;
    sqlite3 *db = arb__store_conn(s);
    if (li->in_tx) {
        if (!st) {
            if (li->own_tx) st = arb__store_commit(s);
            else if (sqlite3_exec(db, "RELEASE " LABELS_SAVEPOINT, NULL, NULL, NULL) != SQLITE_OK)
                st = arb__store_fail_db(s, "labels: cannot release the savepoint");
        }
        if (st) {
            if (li->own_tx) arb__store_rollback(s);
            else sqlite3_exec(db, "ROLLBACK TO " LABELS_SAVEPOINT "; RELEASE " LABELS_SAVEPOINT,
                              NULL, NULL, NULL);
        }
    }
    sqlite3_finalize(li->find_item);
    sqlite3_finalize(li->find_label);
    sqlite3_finalize(li->insert);
    sqlite3_finalize(li->update);
    free(li);
    return st;
}

arb_status arb__store_label_item_exists(arb__label_import *li, const char *item, int *exists)
{
    sqlite3_stmt *q = li->find_item;
    arb__store_bind_text(q, 1, item);
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    *exists = rc == SQLITE_ROW;
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? ARB_OK : ARB_DB;
}

arb_status arb__store_find_label(arb__label_import *li, const arb__label_row *key,
                                 arb__label_row *found, long long *id)
{
    sqlite3_stmt *q = li->find_label;
    arb__store_bind_text(q, 1, key->item);
    arb__store_bind_text(q, 2, key->candidate);
    arb__store_bind_text(q, 3, key->baseline);
    arb__store_bind_text(q, 4, key->annotator);
    int rc = sqlite3_step(q);
    *id = 0;
    memset(found, 0, sizeof *found);
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(q, 0);
        const unsigned char *v = sqlite3_column_text(q, 1);
        found->verdict = v && v[0] && !v[1] ? (char)v[0] : 0;
        found->has_shown_order = sqlite3_column_type(q, 2) != SQLITE_NULL;
        if (found->has_shown_order) found->shown_order = sqlite3_column_int(q, 2);
        found->has_time_ms = sqlite3_column_type(q, 3) != SQLITE_NULL;
        if (found->has_time_ms) found->time_ms = sqlite3_column_int64(q, 3);
    }
    sqlite3_reset(q);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? ARB_OK : ARB_DB;
}

arb_status arb__store_put_label(arb__label_import *li, long long id, const arb__label_row *row)
{
    sqlite3_stmt *q;
    if (id) {
        q = li->update;
        sqlite3_bind_int64(q, 1, id);
    } else {
        q = li->insert;
        arb__store_bind_text(q, 1, row->item);
        arb__store_bind_text(q, 6, row->candidate);
        arb__store_bind_text(q, 7, row->baseline);
        arb__store_bind_text(q, 8, row->annotator);
    }
    sqlite3_bind_text(q, 2, &row->verdict, 1, SQLITE_STATIC);
    if (row->has_shown_order) sqlite3_bind_int(q, 3, row->shown_order);
    else sqlite3_bind_null(q, 3);
    if (row->has_time_ms) sqlite3_bind_int64(q, 4, row->time_ms);
    else sqlite3_bind_null(q, 4);
    arb__store_bind_text(q, 5, row->source);
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc == SQLITE_DONE ? ARB_OK : ARB_DB;
}

/* ---- reading ----------------------------------------------------------------------------- */

arb_status arb__store_each_label_count(arb_store *s, arb__label_count_fn fn, void *ud)
{
    static const char sql[] =
        "SELECT l.item_id, l.candidate, l.baseline, sum(l.verdict = 'a'), sum(l.verdict = 'b'),"
        " sum(l.verdict = 'c'), sum(l.verdict = 'd'), min(i.seq) AS item_seq"
        " FROM human_labels l JOIN items i ON i.id = l.item_id"
        " GROUP BY l.candidate, l.baseline, l.item_id"
        " ORDER BY l.candidate, l.baseline, item_seq, l.item_id";
    sqlite3 *db = arb__store_conn(s);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "labels: cannot read the labels");
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        long long counts[4];
        for (int v = 0; v < 4; v++) counts[v] = sqlite3_column_int64(q, 3 + v);
        if (fn(ud, (const char *)sqlite3_column_text(q, 0), (const char *)sqlite3_column_text(q, 1),
               (const char *)sqlite3_column_text(q, 2), counts)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    arb_status st = ARB_OK;
    if (rc != SQLITE_DONE) st = arb__store_fail_db(s, "labels: cannot read the labels");
    sqlite3_finalize(q);
    return st;
}

int arb__store_label_report_begin(arb_store *s)
{
    sqlite3 *db = arb__store_conn(s);
    return sqlite3_get_autocommit(db) && sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
}

void arb__store_label_report_end(arb_store *s, int began)
{
    if (began) sqlite3_exec(arb__store_conn(s), "COMMIT", NULL, NULL, NULL);
}

/* Runs sql and hands each row to row(q, ud) until it returns nonzero; returns that, 0 at the
** end, or -2 on a database error. */
static int walk_label_rows(arb_store *s, const char *sql, int (*row)(sqlite3_stmt *, void *),
                           void *ud)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK) return -2;
    int rc, result = 0;
    while (!result && (rc = sqlite3_step(q)) == SQLITE_ROW) result = row(q, ud);
    if (!result && rc != SQLITE_DONE) result = -2;
    sqlite3_finalize(q);
    return result;
}

typedef struct annotator_walk {
    arb__label_annotator_fn fn;
    void *ud;
} annotator_walk;

static int annotator_row(sqlite3_stmt *q, void *ud)
{
    const annotator_walk *w = ud;
    return w->fn(w->ud, (const char *)sqlite3_column_text(q, 0),
                 (const char *)sqlite3_column_text(q, 1), (const char *)sqlite3_column_text(q, 2),
                 sqlite3_column_int64(q, 3));
}

int arb__store_each_label_annotator(arb_store *s, arb__label_annotator_fn fn, void *ud)
{
    annotator_walk w = {fn, ud};
    return walk_label_rows(s,
                           "SELECT l.candidate, l.baseline, l.annotator, count(*)"
                           " FROM human_labels l JOIN items i ON i.id = l.item_id"
                           " GROUP BY l.candidate, l.baseline, l.annotator"
                           " ORDER BY l.candidate, l.baseline, l.annotator",
                           annotator_row, &w);
}

typedef struct label_walk {
    arb__label_fn fn;
    void *ud;
} label_walk;

static int label_row(sqlite3_stmt *q, void *ud)
{
    const label_walk *w = ud;
    return w->fn(w->ud, (const char *)sqlite3_column_text(q, 0),
                 (const char *)sqlite3_column_text(q, 1), (const char *)sqlite3_column_text(q, 2),
                 sqlite3_column_int64(q, 3), (const char *)sqlite3_column_text(q, 4),
                 (const char *)sqlite3_column_text(q, 5));
}

int arb__store_each_label(arb_store *s, arb__label_fn fn, void *ud)
{
    label_walk w = {fn, ud};
    return walk_label_rows(s,
                           "SELECT l.candidate, l.baseline, l.item_id, i.seq, l.annotator, l.verdict"
                           " FROM human_labels l JOIN items i ON i.id = l.item_id"
                           " ORDER BY l.candidate, l.baseline, i.seq, l.item_id, l.annotator",
                           label_row, &w);
}

/* ---- the judged pairs ------------------------------------------------------------------------ */

arb_status arb__store_pair_orientation(arb_store *s, const char *item, const char *x,
                                       const char *y, int *which)
{
    /* the orientation of the item's own judgments first, then the pair's anywhere; the more
    ** judgments, the stronger; ties go to the candidate that sorts first */
    static const char sql[] =
        "SELECT candidate = ?2, sum(item_id = ?1) AS here, count(*) AS anywhere FROM pairwise"
        " WHERE (candidate = ?2 AND baseline = ?3) OR (candidate = ?3 AND baseline = ?2)"
        " GROUP BY candidate ORDER BY here DESC, anywhere DESC, candidate LIMIT 1";
    *which = 0;
    if (!item || !x || !y) return arb__store_fail(s, ARB_INVALID, "pair_orientation: no pair");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read the judged pairs");
    arb__store_bind_text(q, 1, item);
    arb__store_bind_text(q, 2, x);
    arb__store_bind_text(q, 3, y);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) *which = sqlite3_column_int(q, 0) ? 1 : 2;
    arb_status st = rc == SQLITE_ROW || rc == SQLITE_DONE
                        ? ARB_OK : arb__store_fail_db(s, "cannot read the judged pairs");
    sqlite3_finalize(q);
    return st;
}
