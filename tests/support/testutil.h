/*
** testutil.h -- small helpers the test files share: scratch directories and one-number SQL
** queries against a store.
*/
#ifndef ARB_TESTUTIL_H
#define ARB_TESTUTIL_H

#include "arbiter.h"

/* Creates a fresh directory /tmp/arb_<prefix>_XXXXXX and writes its path to dir (size bytes).
** Returns 0, or -1 when it cannot. */
int arb_test_make_dir(const char *prefix, char *dir, size_t size);
/* Removes the directory and everything in it. */
void arb_test_remove_dir(const char *dir);
/* The integer in the first column of the first row of sql run on the store's database, or
** -1 when the query fails or returns no row. */
long long arb_test_query_int(arb_store *store, const char *sql);

struct arb__pairwise_row;
/* Stores one side-by-side judgment as sbs.c would: the judge (named row->judge_name, its model
** the same name), a call of its own whose reply is "[[X]]" with X the position verdict, and the
** row with protocol "sbs", its model verdict and call id filled in. request_json is the call's
** request as stored (NULL: "{}"; give messages when a test measures prompt lengths). Returns 0,
** or -1 after printing the store's message. */
int arb_test_put_sbs_judgment(arb_store *store, const struct arb__pairwise_row *row,
                              const char *request_json);

#endif
