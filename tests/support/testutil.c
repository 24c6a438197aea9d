/*
** testutil.c -- see testutil.h.
*/
#define _XOPEN_SOURCE 700 /* nftw */
#include "testutil.h"

#include "internal.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int arb_test_make_dir(const char *prefix, char *dir, size_t size)
{
    if (snprintf(dir, size, "/tmp/arb_%s_XXXXXX", prefix) >= (int)size) return -1;
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void arb_test_remove_dir(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

long long arb_test_query_int(arb_store *store, const char *sql)
{
    sqlite3_stmt *q = NULL;
    long long v = -1;
    if (sqlite3_prepare_v2(arb__store_db(store), sql, -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}
