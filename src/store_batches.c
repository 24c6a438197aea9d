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
        "INSERT INTO batch_calls(key, judge_name, model, rep, request, api_key_env, base_url,"
        " verdict) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        " ON CONFLICT(key) DO UPDATE SET judge_name = excluded.judge_name,"
        " model = excluded.model, rep = excluded.rep, request = excluded.request,"
        " api_key_env = excluded.api_key_env, base_url = excluded.base_url,"
        " verdict = excluded.verdict, queued_at = excluded.queued_at";
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot queue a batch call");
    arb__store_bind_key(q, 1, c->key);
    arb__store_bind_text(q, 2, c->judge_name);
    arb__store_bind_text(q, 3, c->model);
    sqlite3_bind_int(q, 4, c->rep);
    arb__store_bind_text(q, 5, c->request_json);
    arb__store_bind_text(q, 6, c->api_key_env);
    arb__store_bind_text(q, 7, c->base_url);
    arb__store_bind_text(q, 8, c->verdict);
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
    char key[2 * ARB__CALL_KEY_BYTES + 1];
    return w->fn(arb__store_column_key(q, 0, key), (const char *)sqlite3_column_text(q, 1),
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
    free(c->base_url);
    free(c->verdict);
    memset(c, 0, sizeof *c);
}

/* See internal.h. */
arb_status arb__store_find_batch_call(arb_store *s, const char *key, int *found,
                                      arb__batch_call *out)
{
    static const char sql[] =
        "SELECT b.key, b.judge_name, b.model, b.rep, b.request, b.api_key_env, b.result_id,"
        " EXISTS (SELECT 1 FROM calls c WHERE c.key = b.key AND c.ok = 1), b.verdict"
        " FROM batch_calls b WHERE b.key = ?1";
    memset(out, 0, sizeof *out);
    *found = 0;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read a batch call");
    arb__store_bind_key(q, 1, key);
    arb_status st = ARB_OK;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *found = 1;
        char key_buf[2 * ARB__CALL_KEY_BYTES + 1];
        const char *key_text = arb__store_column_key(q, 0, key_buf);
        out->key = key_text ? arb__strdup(key_text) : NULL;
        out->judge_name = column_dup(q, 1);
        out->model = column_dup(q, 2);
        out->rep = sqlite3_column_int(q, 3);
        out->request_json = column_dup(q, 4);
        out->api_key_env = column_dup(q, 5);
        out->result_id = column_dup(q, 6);
        out->stored_ok = sqlite3_column_int(q, 7);
        out->verdict = column_dup(q, 8);
        if (!out->key || !out->judge_name || !out->model || !out->request_json ||
            (sqlite3_column_type(q, 5) != SQLITE_NULL && !out->api_key_env) ||
            (sqlite3_column_type(q, 6) != SQLITE_NULL && !out->result_id) ||
            (sqlite3_column_type(q, 8) != SQLITE_NULL && !out->verdict)) {
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
    arb__store_bind_key(q, 1, key);
    arb__store_bind_text(q, 2, result_id);
    arb_status st = arb__store_step_done(s, q, "cannot mark a batch call answered");
    sqlite3_finalize(q);
    return st;
}

/* ---- batches submitted to a provider's Batch API ---------------------------------------- */

typedef struct submit_walk {
    arb__batch_submit_fn fn;
    void *ud;
} submit_walk;

static int submit_row(sqlite3_stmt *q, void *ud)
{
    submit_walk *w = ud;
    char key[2 * ARB__CALL_KEY_BYTES + 1];
    return w->fn(arb__store_column_key(q, 0, key), (const char *)sqlite3_column_text(q, 1),
                 (const char *)sqlite3_column_text(q, 2), (const char *)sqlite3_column_text(q, 3),
                 w->ud);
}

/* See internal.h. */
arb_status arb__store_each_unsubmitted_batch_call(arb_store *s, arb__batch_submit_fn fn, void *ud)
{
    submit_walk w = {fn, ud};
    return arb__store_each_row(
        s,
        "SELECT b.key, b.request, coalesce(b.base_url, ''), b.api_key_env FROM batch_calls b"
        " WHERE NOT EXISTS (SELECT 1 FROM calls c WHERE c.key = b.key AND c.ok = 1)"
        " AND NOT EXISTS (SELECT 1 FROM batches x WHERE x.id = b.batch_id AND x.collected = 0)"
        " ORDER BY coalesce(b.base_url, ''), coalesce(b.api_key_env, ''), b.rowid",
        "batch calls to submit", submit_row, &w);
}

/* See internal.h. */
arb_status arb__store_put_batch(arb_store *s, const arb__batch_row *b, const char *const *keys,
                                size_t n_keys)
{
    sqlite3_stmt *q = NULL, *u = NULL;
    arb_status st = arb__store_begin(s);
    if (st) return st;
    if (sqlite3_prepare_v2(arb__store_conn(s),
                           "INSERT INTO batches(id, base_url, api_key_env, input_file_id, status,"
                           " n_calls) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                           -1, &q, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(arb__store_conn(s),
                           "UPDATE batch_calls SET batch_id = ?1 WHERE key = ?2", -1, &u,
                           NULL) != SQLITE_OK) {
        st = arb__store_fail_db(s, "cannot store a batch");
        goto done;
    }
    arb__store_bind_text(q, 1, b->id);
    arb__store_bind_text(q, 2, b->base_url);
    arb__store_bind_text(q, 3, b->api_key_env);
    arb__store_bind_text(q, 4, b->input_file_id);
    arb__store_bind_text(q, 5, b->status);
    sqlite3_bind_int64(q, 6, (sqlite3_int64)n_keys);
    if ((st = arb__store_step_done(s, q, "cannot store a batch"))) goto done;
    arb__store_bind_text(u, 1, b->id);
    for (size_t i = 0; i < n_keys && !st; i++) {
        arb__store_bind_key(u, 2, keys[i]);
        st = arb__store_step_done(s, u, "cannot store a batch");
    }
done:
    sqlite3_finalize(q);
    sqlite3_finalize(u);
    if (st) arb__store_rollback(s);
    else st = arb__store_commit(s);
    return st;
}

typedef struct batch_walk {
    arb__batch_row_fn fn;
    void *ud;
} batch_walk;

static int batch_row(sqlite3_stmt *q, void *ud)
{
    batch_walk *w = ud;
    arb__batch_row b = {
        .id = (const char *)sqlite3_column_text(q, 0),
        .base_url = (const char *)sqlite3_column_text(q, 1),
        .api_key_env = (const char *)sqlite3_column_text(q, 2),
        .input_file_id = (const char *)sqlite3_column_text(q, 3),
        .status = (const char *)sqlite3_column_text(q, 4),
        .output_file_id = (const char *)sqlite3_column_text(q, 5),
        .error_file_id = (const char *)sqlite3_column_text(q, 6),
        .n_calls = sqlite3_column_int64(q, 7),
        .n_completed = sqlite3_column_int64(q, 8),
        .n_failed = sqlite3_column_int64(q, 9),
        .collected = sqlite3_column_int(q, 10),
    };
    return w->fn(&b, w->ud);
}

/* See internal.h. */
arb_status arb__store_each_open_batch(arb_store *s, arb__batch_row_fn fn, void *ud)
{
    batch_walk w = {fn, ud};
    return arb__store_each_row(s,
                               "SELECT id, base_url, api_key_env, input_file_id, status,"
                               " output_file_id, error_file_id, n_calls, n_completed, n_failed,"
                               " collected FROM batches WHERE collected = 0 ORDER BY rowid",
                               "batches", batch_row, &w);
}

/* See internal.h. */
arb_status arb__store_update_batch(arb_store *s, const arb__batch_row *b)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s),
                           "UPDATE batches SET status = ?2, output_file_id = ?3,"
                           " error_file_id = ?4, n_completed = ?5, n_failed = ?6,"
                           " collected = ?7,"
                           " updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?1",
                           -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot update a batch");
    arb__store_bind_text(q, 1, b->id);
    arb__store_bind_text(q, 2, b->status);
    arb__store_bind_text(q, 3, b->output_file_id);
    arb__store_bind_text(q, 4, b->error_file_id);
    sqlite3_bind_int64(q, 5, b->n_completed);
    sqlite3_bind_int64(q, 6, b->n_failed);
    sqlite3_bind_int(q, 7, b->collected);
    arb_status st = arb__store_step_done(s, q, "cannot update a batch");
    sqlite3_finalize(q);
    return st;
}
