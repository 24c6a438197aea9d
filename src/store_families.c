/*
** store_families.c -- table families: which family a judge or a contestant model belongs to
** (METHODS §5: judges of one family agree more and may favour their own family's answers).
** Written from the judges file (family:, families:) and by imports; read by agreement --by
** family, the factor analysis and the family preference measure.
*/
#include "store_internal.h"

#include <string.h>

arb_status arb__store_put_family(arb_store *s, const char *name, const char *role,
                                 const char *family, const char *source)
{
    static const char sql[] =
        "INSERT INTO families(name, role, family, source) VALUES (?1, ?2, ?3, ?4)"
        " ON CONFLICT(name, role) DO UPDATE SET family = excluded.family,"
        " source = excluded.source, updated_at = excluded.updated_at"
        " WHERE families.family IS NOT excluded.family"
        " OR families.source IS NOT excluded.source";
    if (!name || !*name || !role || !family || !*family ||
        (strcmp(role, "judge") && strcmp(role, "model")))
        return arb__store_fail(s, ARB_INVALID, "put_family: need a name, a role (judge or "
                               "model) and a non-empty family");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot store a family");
    arb__store_bind_text(q, 1, name);
    arb__store_bind_text(q, 2, role);
    arb__store_bind_text(q, 3, family);
    arb__store_bind_text(q, 4, source);
    arb_status st = arb__store_step_done(s, q, "cannot store a family");
    if (st)
        arb__store_fail(s, st, "cannot store the family of %s \"%s\": %s", role, name,
                        arb_store_errmsg(s));
    sqlite3_finalize(q);
    return st;
}

arb_status arb__store_put_judge_families(arb_store *s, const arb_judge_config *judge)
{
    const char *source = arb_judges_file_path(judge->judges_file);
    const char *name = judge->name ? judge->name : judge->model;
    arb_status st = ARB_OK;
    if (judge->family) st = arb__store_put_family(s, name, "judge", judge->family, source);
    size_t n = arb_judges_file_family_count(judge->judges_file);
    for (size_t i = 0; !st && i < n; i++) {
        const char *model = NULL;
        const char *family = arb_judges_file_family(judge->judges_file, i, &model);
        st = arb__store_put_family(s, model, "model", family, source);
    }
    return st;
}

typedef struct family_walk {
    arb__family_fn fn;
    void *ud;
} family_walk;

static int family_row(sqlite3_stmt *q, void *ud)
{
    const family_walk *w = ud;
    const char *name = (const char *)sqlite3_column_text(q, 0);
    const char *role = (const char *)sqlite3_column_text(q, 1);
    const char *family = (const char *)sqlite3_column_text(q, 2);
    if (!name || !role || !family) return -1;
    return w->fn(w->ud, name, role, family) ? 1 : 0;
}

arb_status arb__store_each_family(arb_store *s, arb__family_fn fn, void *ud)
{
    if (!fn) return arb__store_fail(s, ARB_INVALID, "each_family: no callback");
    family_walk w = {fn, ud};
    return arb__store_each_row(s, "SELECT name, role, family FROM families ORDER BY role, name",
                               "families", family_row, &w);
}
