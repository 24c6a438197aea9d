/*
** testutil.h -- small helpers the test files share: scratch directories and one-number SQL
** queries and statements against a store.
*/
#ifndef ARB_TESTUTIL_H
#define ARB_TESTUTIL_H

#include "arbiter.h"

/* Creates a fresh directory /tmp/arb_<prefix>_XXXXXX and writes its path to dir (size bytes).
** Returns 0, or -1 when it cannot. */
int arb_test_make_dir(const char *prefix, char *dir, size_t size);
/* Makes a scratch directory (as arb_test_make_dir), opens <dir>/arbiter.db in it and stores
** the items of items_jsonl there. Returns 0, or -1 after printing why (*out may then be set:
** close it). */
int arb_test_store_with_items(const char *prefix, const char *items_jsonl, char *dir,
                              size_t dir_size, arb_store **out);
/* Writes n bytes of data to path (created or truncated). Returns 0, or -1 after printing why. */
int arb_test_write_file(const char *path, const void *data, size_t n);
/* out = <dir>/<name> (size bytes), creating the folders of name on the way, and writes text
** there when it is not NULL. Returns out, or NULL when the path does not fit or the file cannot
** be written. */
const char *arb_test_scratch(const char *dir, const char *name, const char *text, char *out,
                             size_t size);
/* Removes the directory and everything in it. */
void arb_test_remove_dir(const char *dir);
/* The integer in the first column of the first row of sql run on the store's database, or
** -1 when the query fails or returns no row. */
long long arb_test_query_int(arb_store *store, const char *sql);

/* Rows of table or query what_main that query what_b (e.g. the same of a store attached as b)
** lacks, plus the reverse: 0 when both hold the same rows, -1 when the query fails. */
long long arb_test_rows_differ(arb_store *store, const char *what_main, const char *what_b);

/* Runs SQL built with sqlite3's printf (%Q quotes a string or writes NULL) on the store's
** database. Returns 0, or -1 after printing the SQL and SQLite's message. */
int arb_test_exec_sql(arb_store *store, const char *fmt, ...); /* %Q: not a printf format */

/* Writes items_text and answers_text to <dir>/<sub>items.jsonl and <dir>/<sub>answers.jsonl
** (their paths to items and answers, path_size bytes each) and loads them whole
** (arb_dataset_load) and indexed (arb_dataset_load_indexed), the files indexed whatever their
** size: arb__dataset_whole_limit is left at 0 for the test's further indexed loads, and the
** test's teardown restores it. Returns 0 (the caller destroys both), or -1 after printing why. */
int arb_test_load_both(const char *dir, const char *sub, const char *items_text,
                       const char *answers_text, char *items, char *answers, size_t path_size,
                       arb_dataset **whole, arb_dataset **indexed);

struct arb__pairwise_row;
/* Stores one side-by-side judgment as sbs.c would: the judge (named row->judge_name, its model
** the same name), a call of its own whose reply is "[[X]]" with X the position verdict, and the
** row with protocol "sbs", its model verdict and call id filled in. request_json is the call's
** request as stored (NULL: "{}"; give messages when a test measures prompt lengths). Returns 0,
** or -1 after printing the store's message. */
int arb_test_put_sbs_judgment(arb_store *store, const struct arb__pairwise_row *row,
                              const char *request_json);

#endif
