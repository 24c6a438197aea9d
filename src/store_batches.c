/*
** store_batches.c -- table batch_calls: the calls a run queued for a batch file (--batch
** export) instead of sending them. A queued call is pending while calls holds no successful
** row with its key; arbiter batch export writes the pending ones, arbiter batch ingest stores
** their replies in calls (through arb__store_settle_call, like any reply) and notes which
** output line it stored, so a second ingest of the same file changes nothing.
*/
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>

/* See internal.h. */
arb_status arb__store_queue_batch_call(arb_store *s, const arb__batch_call *c)
{
    static const char sql[] =
        "INSERT INTO batch_calls(key, judge_name, model, rep, request, api_key_env)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        " ON CONFLICT(key) DO UPDATE SET judge_name = excluded.judge_name,"
        " model = excluded.model, rep = excluded.rep, request = excluded.request,"
        " api_key_env = excluded.api_key_env, queued_at = excluded.queued_at";
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot queue a batch call");
    arb__store_bind_text(q, 1, c->key);
    arb__store_bind_text(q, 2, c->judge_name);
    arb__store_bind_text(q, 3, c->model);
    sqlite3_bind_int(q, 4, c->rep);
    arb__store_bind_text(q, 5, c->request_json);
    arb__store_bind_text(q, 6, c->api_key_env);
    arb_status st = arb__store_step_done(s, q, "cannot queue a batch call");
    sqlite3_finalize(q);
    return st;
}

typedef struct pending_walk {
    arb__batch_pending_fn fn;
    void *ud;
} pending_walk;

static int pending_row(sqlite3_stmt *q, void *ud)
{
    pending_walk *w = ud;
    return w->fn((const char *)sqlite3_column_text(q, 0), (const char *)sqlite3_column_text(q, 1),
                 w->ud);
}

/* See internal.h. */
arb_status arb__store_each_pending_batch_call(arb_store *s, arb__batch_pending_fn fn, void *ud)
{
    pending_walk w = {fn, ud};
    return arb__store_each_row(s,
                               "SELECT b.key, b.request FROM batch_calls b WHERE NOT EXISTS"
                               " (SELECT 1 FROM calls c WHERE c.key = b.key AND c.ok = 1)"
                               " ORDER BY b.rowid",
                               "pending batch calls", pending_row, &w);
}

static char *column_dup(sqlite3_stmt *q, int col)
{
    const unsigned char *t = sqlite3_column_text(q, col);
    return t ? arb__strdup((const char *)t) : NULL;
}

/* See internal.h. */
void arb__batch_call_free(arb__batch_call *c)
{
    free(c->key);
    free(c->judge_name);
    free(c->model);
    free(c->request_json);
    free(c->api_key_env);
    free(c->result_id);
    memset(c, 0, sizeof *c);
}

/* See internal.h. */
arb_status arb__store_find_batch_call(arb_store *s, const char *key, int *found,
                                      arb__batch_call *out)
{
    static const char sql[] =
        "SELECT b.key, b.judge_name, b.model, b.rep, b.request, b.api_key_env, b.result_id,"
        " EXISTS (SELECT 1 FROM calls c WHERE c.key = b.key AND c.ok = 1)"
        " FROM batch_calls b WHERE b.key = ?1";
    memset(out, 0, sizeof *out);
    *found = 0;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read a batch call");
    arb__store_bind_text(q, 1, key);
    arb_status st = ARB_OK;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *found = 1;
        out->key = column_dup(q, 0);
        out->judge_name = column_dup(q, 1);
        out->model = column_dup(q, 2);
        out->rep = sqlite3_column_int(q, 3);
        out->request_json = column_dup(q, 4);
        out->api_key_env = column_dup(q, 5);
        out->result_id = column_dup(q, 6);
        out->stored_ok = sqlite3_column_int(q, 7);
        if (!out->key || !out->judge_name || !out->model || !out->request_json ||
            (sqlite3_column_type(q, 5) != SQLITE_NULL && !out->api_key_env) ||
            (sqlite3_column_type(q, 6) != SQLITE_NULL && !out->result_id)) {
            arb__batch_call_free(out);
            *found = 0;
            st = arb__store_fail(s, ARB_NOMEM, "out of memory");
        }
    } else if (rc != SQLITE_DONE) {
        st = arb__store_fail_db(s, "cannot read a batch call");
    }
    sqlite3_finalize(q);
    return st;
}

/* See internal.h. */
arb_status arb__store_set_batch_result(arb_store *s, const char *key, const char *result_id)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s),
                           "UPDATE batch_calls SET result_id = ?2 WHERE key = ?1", -1, &q,
                           NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot mark a batch call answered");
    arb__store_bind_text(q, 1, key);
    arb__store_bind_text(q, 2, result_id);
    arb_status st = arb__store_step_done(s, q, "cannot mark a batch call answered");
    sqlite3_finalize(q);
    return st;
}
