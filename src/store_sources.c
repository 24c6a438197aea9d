/*
** store_sources.c -- reading what imports of judgments made elsewhere left in the store, for
** the commands that show judgments to people (the report): the import sources with the
** judgments and judges each brought, and the stored text of a pair of judgments (the judge's
** own words, arbiter's reply or the imported "raw") with the source it came from.
**
** Invariants: read only; every string handed to a callback is borrowed for the call, every
** string returned is a copy the caller frees.
**
** Not here: writing imports (store_import.c), the judgments the metrics read (store.c).
*/
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>

/* Text of column k, "" for NULL (the callbacks get no NULL names). */
static const char *text_or_empty(sqlite3_stmt *q, int k)
{
    const char *s = (const char *)sqlite3_column_text(q, k);
    return s ? s : "";
}

typedef struct each_source {
    arb__judgment_source_fn fn;
    void *ud;
} each_source;

static int source_row(sqlite3_stmt *q, void *ud)
{
    const each_source *e = ud;
    arb__judgment_source row = {
        .name = text_or_empty(q, 0),
        .kind = text_or_empty(q, 1),
        .path = text_or_empty(q, 2),
        .n_judgments = sqlite3_column_int64(q, 3),
        .n_skipped = sqlite3_column_int64(q, 4),
        .imported_at = text_or_empty(q, 5),
        .n_pairwise = sqlite3_column_int64(q, 6),
        .n_pointwise = sqlite3_column_int64(q, 7),
        .judges = text_or_empty(q, 8),
    };
    return e->fn(e->ud, &row) ? 1 : 0;
}

/* See internal.h. */
arb_status arb__store_each_judgment_source(arb_store *s, arb__judgment_source_fn fn, void *ud)
{
    static const char sql[] =
        "SELECT s.name, s.kind, s.path, s.n_judgments, s.n_skipped, s.imported_at,"
        " (SELECT count(*) FROM pairwise WHERE source = s.name),"
        " (SELECT count(*) FROM pointwise WHERE source = s.name),"
        " (SELECT group_concat(judge_name, ', ') FROM"
        "   (SELECT judge_name FROM pairwise WHERE source = s.name UNION"
        "    SELECT judge_name FROM pointwise WHERE source = s.name ORDER BY 1))"
        " FROM judgment_sources s ORDER BY s.name";
    if (!fn) return arb__store_fail(s, ARB_INVALID, "each_judgment_source: no callback");
    each_source e = {fn, ud};
    return arb__store_each_row(s, sql, "import sources", source_row, &e);
}

/* See internal.h. */
arb_status arb__store_pair_texts(arb_store *s, const arb__pair_key *key, char *text[2],
                                 char **source)
{
    static const char sql[] =
        "SELECT p.ord, c.content, p.source FROM pairwise p LEFT JOIN calls c ON c.id = p.call_id"
        " WHERE p.protocol = ?1 AND p.judge_name = ?2 AND p.template_name = ?3"
        " AND p.options = ?4 AND p.item_id = ?5 AND p.candidate = ?6 AND p.baseline = ?7"
        " AND p.rep = ?8 ORDER BY p.ord";
    text[0] = text[1] = NULL;
    *source = NULL;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read the judgments' texts");
    arb__store_bind_text(q, 1, key->protocol);
    arb__store_bind_text(q, 2, key->judge_name);
    arb__store_bind_text(q, 3, key->template_name);
    sqlite3_bind_int(q, 4, key->options);
    arb__store_bind_text(q, 5, key->item_id);
    arb__store_bind_text(q, 6, key->candidate);
    arb__store_bind_text(q, 7, key->baseline);
    sqlite3_bind_int(q, 8, key->rep);
    arb_status st = ARB_OK;
    int rc = SQLITE_DONE;
    while (!st && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        int ord = sqlite3_column_int(q, 0) ? 1 : 0;
        const char *content = (const char *)sqlite3_column_text(q, 1);
        const char *from = (const char *)sqlite3_column_text(q, 2);
        if ((content && !text[ord] && !(text[ord] = arb__strdup(content))) ||
            (from && !*source && !(*source = arb__strdup(from))))
            st = arb__store_fail(s, ARB_NOMEM, "cannot read the judgments' texts: out of memory");
    }
    if (!st && rc != SQLITE_DONE) st = arb__store_fail_db(s, "cannot read the judgments' texts");
    sqlite3_finalize(q);
    if (st) {
        free(text[0]);
        free(text[1]);
        free(*source);
        text[0] = text[1] = *source = NULL;
    }
    return st;
}
