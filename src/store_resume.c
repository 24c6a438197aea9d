/*
** store_resume.c -- what a rerun reads to decide, in one query instead of one per call, which
** judgments are already recorded (resume.c holds them in memory; the executor skips them).
** Reads only: pairwise rows joined with the key of the successful call each one was made from.
*/
#include "store_internal.h"

/* See internal.h. */
arb_status arb__store_each_recorded_pairwise(arb_store *s, const char *protocol,
                                             const char *template_name, int options,
                                             arb__recorded_pairwise_fn fn, void *ud)
{
    /* Only rows exactly as the protocol's done callback writes them: arbiter's own (no import
    ** source, strength or extra), made from a call that holds a reply (ok = 1). */
    static const char sql[] =
        "SELECT p.judge_name, p.candidate, p.baseline, p.item_id, p.rep, p.ord,"
        " p.position_verdict, c.key, c.content"
        " FROM pairwise p JOIN calls c ON c.id = p.call_id"
        " WHERE p.protocol = ?1 AND p.template_name = ?2 AND p.options = ?3"
        " AND p.source IS NULL AND p.strength IS NULL AND p.extra = '{}' AND c.ok = 1";
    if (!protocol || !template_name || !fn)
        return arb__store_fail(s, ARB_INVALID, "each_recorded_pairwise: bad arguments");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read the recorded judgments");
    arb__store_bind_text(q, 1, protocol);
    arb__store_bind_text(q, 2, template_name);
    sqlite3_bind_int(q, 3, options);
    arb_status st = ARB_OK;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *pv = (const char *)sqlite3_column_text(q, 6);
        arb__recorded_pairwise row = {
            .judge_name = (const char *)sqlite3_column_text(q, 0),
            .candidate = (const char *)sqlite3_column_text(q, 1),
            .baseline = (const char *)sqlite3_column_text(q, 2),
            .item_id = (const char *)sqlite3_column_text(q, 3),
            .rep = sqlite3_column_int(q, 4),
            .order = sqlite3_column_int(q, 5),
            .position_verdict = pv && *pv ? *pv : 'E',
            .call_key = (const char *)sqlite3_column_text(q, 7),
            .content = (const char *)sqlite3_column_text(q, 8),
        };
        if (!row.judge_name || !row.candidate || !row.baseline || !row.item_id || !row.call_key)
            continue;
        if (fn(ud, &row)) {
            st = arb__store_fail(s, ARB_NOMEM, "out of memory");
            break;
        }
    }
    if (!st && rc != SQLITE_DONE) st = arb__store_fail_db(s, "cannot read the recorded judgments");
    sqlite3_finalize(q);
    return st;
}
