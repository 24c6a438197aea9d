/*
** fuzz_store.h -- what the fuzz targets that write to a store share: an in-memory store made
** once per process with a few items, and a one-number query. Included by one target each
** (every fuzz_*.c is its own program), so the functions are static.
*/
#ifndef ARB_FUZZ_STORE_H
#define ARB_FUZZ_STORE_H

#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* An in-memory store holding the items of items_jsonl; aborts when it cannot be made. */
static arb_store *fuzz_store_with_items(const char *items_jsonl)
{
    arb_store *store = NULL;
    arb_dataset *ds = arb_dataset_create();
    if (arb_store_open(":memory:", &store) != ARB_OK || !ds ||
        arb_dataset_add_items_jsonl(ds, "items", items_jsonl, strlen(items_jsonl)) != ARB_OK ||
        arb__store_put_dataset(store, ds) != ARB_OK)
        abort();
    arb_dataset_destroy(ds);
    return store;
}

/* The integer in the first column of the first row of sql, or -1. */
static long long fuzz_count(arb_store *s, const char *sql)
{
    sqlite3_stmt *q = NULL;
    long long n = -1;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return n;
}

#endif
