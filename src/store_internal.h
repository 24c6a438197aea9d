/*
** store_internal.h -- what the store's own files (store.c, store_*.c) share and no other
** module sees: the connection and the small helpers every statement uses. Only store files
** include sqlite3.h; everything else reads and writes through the arb__store_* functions of
** internal.h, named for what they read or write.
*/
#ifndef ARB_STORE_INTERNAL_H
#define ARB_STORE_INTERNAL_H

#include "internal.h"

#include <sqlite3.h>

/* The open connection (borrowed). */
sqlite3 *arb__store_conn(arb_store *s);
/* Fails with ARB_DB and SQLite's own explanation, prefixed by what was being done. */
arb_status arb__store_fail_db(arb_store *s, const char *what);
/* Runs a statement that returns no rows (or ignores them) and resets it. ARB_OK or ARB_DB. */
arb_status arb__store_step_done(arb_store *s, sqlite3_stmt *st, const char *what);
/* Binds text, or NULL for a NULL pointer (SQLITE_STATIC: reset before the text goes away). */
int arb__store_bind_text(sqlite3_stmt *st, int index, const char *text);
/* A copy of a text column (caller frees), NULL for SQL NULL; *oom = 1 when the copy failed. */
char *arb__store_column_text(sqlite3_stmt *q, int col, int *oom);
/* Runs sql and hands each row to row(q, ud): 0 goes on, 1 stops (ARB_OK), -1 out of memory.
** what names the rows in messages. */
arb_status arb__store_each_row(arb_store *s, const char *sql, const char *what,
                               int (*row)(sqlite3_stmt *q, void *ud), void *ud);

#endif
