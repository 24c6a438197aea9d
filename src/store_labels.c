/*
** store_labels.c -- what the label importers ask of the judgments already stored: which way
** round (candidate, baseline) a pair of models is judged, so a label given in another tool's
** terms (MT-Bench human judgments name model_a and model_b) lands on the same rows the
** judge's verdicts are on and audit can compare them (METHODS §4).
*/
#include "store_internal.h"

#include <string.h>

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
