/*
** store_battles.c -- the tables battles and battles_left_out: arb_store_put_battles replaces
** the battles of one source (a rerun replaces them, all or nothing), arb_store_get_battles
** reads them back in the order they were stored. What a battle's extra column holds (both_bad,
** strong, style) is battles.c's to write and read (arb__battle_extra_json,
** arb__battle_parse_extra); this file only stores the text.
*/
#include "store_internal.h"

#include <stdlib.h>

/* Runs one SQL statement without rows on db; SQLITE_OK or the error code. */
static int exec_sql(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

/* Stores b's battles under source in one transaction (a savepoint inside the caller's): the
** rows of that source are deleted first, so a rerun replaces them; seq is the battle's index.
** Borrowing only. ARB_INVALID for a missing source, ARB_DB, ARB_NOMEM (message in store). */
arb_status arb_store_put_battles(arb_store *store, const char *source, const arb_battles *b)
{
    if (!store) return ARB_INVALID;
    if (!source || !*source)
        return arb__store_fail(store, ARB_INVALID, "put_battles: a source name is needed");
    if (!b) return arb__store_fail(store, ARB_INVALID, "put_battles: no battles");
    sqlite3 *db = arb__store_conn(store);
    int own_tx = sqlite3_get_autocommit(db);
    arb_status st = ARB_OK;
    sqlite3_stmt *del = NULL, *ins = NULL;
    if (own_tx) {
        if ((st = arb__store_begin(store))) return st;
    } else if (exec_sql(db, "SAVEPOINT arb_put_battles") != SQLITE_OK) {
        return arb__store_fail(store, ARB_DB, "cannot store battles: %s", sqlite3_errmsg(db));
    }
    if (sqlite3_prepare_v2(db, "DELETE FROM battles WHERE source = ?1", -1, &del, NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO battles (source, seq, q, i, j, reviewer, s, extra)"
                               " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", -1, &ins, NULL)) {
        st = arb__store_fail(store, ARB_DB, "cannot store battles: %s", sqlite3_errmsg(db));
        goto done;
    }
    sqlite3_bind_text(del, 1, source, -1, SQLITE_STATIC);
    if (sqlite3_step(del) != SQLITE_DONE) {
        st = arb__store_fail(store, ARB_DB, "cannot replace the battles of source \"%s\": %s",
                             source, sqlite3_errmsg(db));
        goto done;
    }
    sqlite3_bind_text(ins, 1, source, -1, SQLITE_STATIC);
    for (size_t k = 0; k < b->n; k++) {
        arb_battle battle = arb_battles_at(b, k);
        char *extra = arb__battle_extra_json(&battle);
        if (!extra) {
            st = arb__store_fail(store, ARB_NOMEM, "cannot store battles: out of memory");
            goto done;
        }
        sqlite3_bind_int64(ins, 2, (sqlite3_int64)k);
        sqlite3_bind_text(ins, 3, battle.question, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 4, battle.model_i, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 5, battle.model_j, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 6, battle.reviewer, -1, SQLITE_STATIC);
        sqlite3_bind_int(ins, 7, battle.s);
        sqlite3_bind_text(ins, 8, extra, -1, SQLITE_STATIC);
        int rc = sqlite3_step(ins);
        sqlite3_reset(ins);
        free(extra);
        if (rc != SQLITE_DONE) {
            st = arb__store_fail(store, ARB_DB, "cannot store battle %zu of source \"%s\": %s",
                                 k, source, sqlite3_errmsg(db));
            goto done;
        }
    }
    if (!st) st = arb__store_put_battles_left_out(store, source, b);
done:
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    if (own_tx) {
        if (!st) st = arb__store_commit(store);
        if (st) arb__store_rollback(store);
    } else {
        if (st) exec_sql(db, "ROLLBACK TO arb_put_battles");
        if (exec_sql(db, "RELEASE arb_put_battles") != SQLITE_OK && !st)
            st = arb__store_fail(store, ARB_DB, "cannot store battles: %s", sqlite3_errmsg(db));
    }
    return st;
}

/* Appends the stored battles (of source, or all when source is NULL) to b, ordered by source
** and then by their position in it; all or nothing. Messages go to the store. */
arb_status arb_store_get_battles(arb_store *store, const char *source, arb_battles *b)
{
    if (!store) return ARB_INVALID;
    if (!b) return arb__store_fail(store, ARB_INVALID, "get_battles: no battle set");
    sqlite3 *db = arb__store_conn(store);
    sqlite3_stmt *q = NULL;
    arb_battles *scratch = arb_battles_create();
    if (!scratch) return arb__store_fail(store, ARB_NOMEM, "cannot read battles: out of memory");
    arb_status st = ARB_OK;
    if (sqlite3_prepare_v2(db, "SELECT source, seq, q, i, j, reviewer, s, extra FROM battles"
                               " WHERE ?1 IS NULL OR source = ?1 ORDER BY source, seq",
                           -1, &q, NULL) != SQLITE_OK) {
        st = arb__store_fail(store, ARB_DB, "cannot read battles: %s", sqlite3_errmsg(db));
        goto done;
    }
    if (source) sqlite3_bind_text(q, 1, source, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        arb_battle battle = arb_battle_init();
        const char *from = (const char *)sqlite3_column_text(q, 0);
        long long seq = sqlite3_column_int64(q, 1);
        battle.question = (const char *)sqlite3_column_text(q, 2);
        battle.model_i = (const char *)sqlite3_column_text(q, 3);
        battle.model_j = (const char *)sqlite3_column_text(q, 4);
        battle.reviewer = (const char *)sqlite3_column_text(q, 5);
        battle.s = sqlite3_column_int(q, 6);
        if (arb__battle_parse_extra((const char *)sqlite3_column_text(q, 7), &battle)) {
            st = arb__store_fail(store, ARB_DB, "battle %lld of source \"%s\": column extra is "
                                 "not the JSON arbiter writes", seq, from ? from : "");
            goto done;
        }
        if ((st = arb_battles_add(scratch, &battle))) {
            st = arb__store_fail(store, st == ARB_NOMEM ? ARB_NOMEM : ARB_DB,
                                 "battle %lld of source \"%s\": %s", seq, from ? from : "",
                                 arb_battles_errmsg(scratch));
            goto done;
        }
    }
    if (rc != SQLITE_DONE) {
        st = arb__store_fail(store, ARB_DB, "cannot read battles: %s", sqlite3_errmsg(db));
        goto done;
    }
    if ((st = arb__store_get_battles_left_out(store, source, scratch))) goto done;
    if ((st = arb__battles_append(b, scratch)))
        arb__store_fail(store, st, "cannot read battles: %s", arb_battles_errmsg(b));
done:
    sqlite3_finalize(q);
    arb_battles_destroy(scratch);
    return st;
}

/* ---- judgments left out of the battles (tournaments, METHODS §6) -------------------------- */

/* Replaces the left-out records of source by those of b, inside the caller's transaction
** (arb_store_put_battles). ARB_OK, ARB_DB (message in the store). */
arb_status arb__store_put_battles_left_out(arb_store *store, const char *source,
                                           const arb_battles *b)
{
    sqlite3 *db = arb__store_conn(store);
    sqlite3_stmt *del = NULL, *ins = NULL;
    arb_status st = ARB_OK;
    if (sqlite3_prepare_v2(db, "DELETE FROM battles_left_out WHERE source = ?1", -1, &del,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO battles_left_out (source, model_a, model_b, "
                               "reviewer, n) VALUES (?1, ?2, ?3, ?4, ?5)", -1, &ins,
                           NULL) != SQLITE_OK) {
        st = arb__store_fail(store, ARB_DB, "cannot store left-out judgments: %s",
                             sqlite3_errmsg(db));
        goto done;
    }
    sqlite3_bind_text(del, 1, source, -1, SQLITE_STATIC);
    if (sqlite3_step(del) != SQLITE_DONE) {
        st = arb__store_fail(store, ARB_DB, "cannot store left-out judgments: %s",
                             sqlite3_errmsg(db));
        goto done;
    }
    sqlite3_bind_text(ins, 1, source, -1, SQLITE_STATIC);
    for (size_t k = 0; k < arb_battles_left_out_count(b); k++) {
        arb_battle_left_out x = arb_battles_left_out_at(b, k);
        sqlite3_bind_text(ins, 2, x.model_a, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 3, x.model_b, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 4, x.reviewer, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 5, (sqlite3_int64)x.n);
        int rc = sqlite3_step(ins);
        sqlite3_reset(ins);
        if (rc != SQLITE_DONE) {
            st = arb__store_fail(store, ARB_DB, "cannot store left-out judgments: %s",
                                 sqlite3_errmsg(db));
            goto done;
        }
    }
done:
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    return st;
}

/* Adds the stored left-out records (of source, or all when NULL) to b. ARB_OK, ARB_DB,
** ARB_NOMEM (message in the store). */
arb_status arb__store_get_battles_left_out(arb_store *store, const char *source, arb_battles *b)
{
    sqlite3 *db = arb__store_conn(store);
    sqlite3_stmt *q = NULL;
    arb_status st = ARB_OK;
    int rc;
    if (sqlite3_prepare_v2(db, "SELECT model_a, model_b, reviewer, n FROM battles_left_out "
                               "WHERE ?1 IS NULL OR source = ?1 "
                               "ORDER BY source, model_a, model_b, reviewer",
                           -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail(store, ARB_DB, "cannot read left-out judgments: %s",
                               sqlite3_errmsg(db));
    if (source) sqlite3_bind_text(q, 1, source, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *a = (const char *)sqlite3_column_text(q, 0);
        const char *bm = (const char *)sqlite3_column_text(q, 1);
        const char *r = (const char *)sqlite3_column_text(q, 2);
        sqlite3_int64 n = sqlite3_column_int64(q, 3);
        st = n > 0 ? arb_battles_add_left_out(b, a, bm, r, (size_t)n) : ARB_INVALID;
        if (st) {
            st = arb__store_fail(store, st == ARB_NOMEM ? ARB_NOMEM : ARB_DB,
                                 "a left-out record is not what arbiter writes: %s",
                                 arb_battles_errmsg(b));
            break;
        }
    }
    if (!st && rc != SQLITE_DONE)
        st = arb__store_fail(store, ARB_DB, "cannot read left-out judgments: %s",
                             sqlite3_errmsg(db));
    sqlite3_finalize(q);
    return st;
}

/* Counts one integer query's single row: ARB_OK with *value, or ARB_DB with what (in store). */
static arb_status count_query(arb_store *store, const char *sql, const char *source,
                              const char *protocol, int options, long long *value,
                              const char *what)
{
    sqlite3 *db = arb__store_conn(store);
    sqlite3_stmt *q = NULL;
    arb_status st = ARB_OK;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail(store, ARB_DB, "cannot count %s: %s", what, sqlite3_errmsg(db));
    if (source) sqlite3_bind_text(q, 1, source, -1, SQLITE_STATIC);
    if (protocol) sqlite3_bind_text(q, 2, protocol, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 3, options);
    if (sqlite3_step(q) == SQLITE_ROW)
        *value = sqlite3_column_int64(q, 0);
    else
        st = arb__store_fail(store, ARB_DB, "cannot count %s: %s", what, sqlite3_errmsg(db));
    sqlite3_finalize(q);
    return st;
}

/* See arbiter.h. */
arb_status arb_store_battles_summary(arb_store *store, const char *source, size_t *n_battles,
                                     arb_battles *b)
{
    if (!store) return ARB_INVALID;
    if (!n_battles) return arb__store_fail(store, ARB_INVALID, "battles_summary: no count");
    long long n = 0;
    arb_status st = count_query(store, "SELECT count(*) FROM battles WHERE ?1 IS NULL OR "
                                       "source = ?1", source, NULL, 0, &n, "battles");
    if (st) return st;
    *n_battles = (size_t)n;
    return b ? arb__store_get_battles_left_out(store, source, b) : ARB_OK;
}

/* See internal.h. */
arb_status arb__store_battles_in_step(arb_store *store, const char *source, const char *protocol,
                                      int options, int *in_step)
{
    /* As many is not enough: a judgment replaced in its row (a run killed between storing its
    ** judgments and rebuilding, a re-import) keeps the count. Each row that is written takes
    ** the time then (judged_at), so the battles are also older than none of them: their
    ** first row's imported_at (one statement's 'now', after the rebuild read the judgments;
    ** found by the index of (source, seq), not a scan). No battle (none, or every judgment
    ** left out): rebuilt. The judgments' scan is the one the count makes. */
    long long same = 0;
    arb_status st = count_query(
        store,
        "SELECT (SELECT count(*) FROM battles WHERE source = ?1)"
        " + (SELECT coalesce(sum(n), 0) FROM battles_left_out WHERE source = ?1) = j.n"
        " AND j.newest < (SELECT CAST(round((julianday(imported_at) - 2440587.5)"
        "   * 86400000.0) AS INTEGER) FROM battles WHERE source = ?1 ORDER BY seq LIMIT 1)"
        " FROM (SELECT count(*) AS n, max(judged_at) AS newest FROM pairwise"
        "   WHERE protocol = ?2 AND options = ?3) j",
        source, protocol, options, &same, "battles and judgments");
    *in_step = !st && same;
    return st;
}

/* See internal.h. */
arb_status arb__store_wait_past_judgments(arb_store *store, const char *protocol, int options)
{
    long long newest = 0;
    arb_status st = count_query(store,
                                "SELECT coalesce(max(judged_at), 0) FROM pairwise"
                                " WHERE protocol = ?2 AND options = ?3",
                                NULL, protocol, options, &newest, "judgments");
    if (!st) arb__store_wait_clock_past(newest);
    return st;
}
