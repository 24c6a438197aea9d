/*
** store_items.c -- reading the tables items and answers (the benchmark and the contestants'
** answers, written by arb__store_put_dataset in store.c).
*/
#include "store_internal.h"

/* each_answer's callback and its data, for each_row. */
typedef struct answer_walk {
    arb__answer_fn fn;
    void *ud;
} answer_walk;

static int answer_row(sqlite3_stmt *q, void *ud)
{
    const answer_walk *w = ud;
    return w->fn(w->ud, (const char *)sqlite3_column_text(q, 0),
                 (const char *)sqlite3_column_text(q, 1), (const char *)sqlite3_column_text(q, 2))
               ? 1
               : 0;
}

arb_status arb__store_each_answer(arb_store *s, arb__answer_fn fn, void *ud)
{
    if (!fn) return arb__store_fail(s, ARB_INVALID, "each_answer: no callback");
    answer_walk w = {fn, ud};
    return arb__store_each_row(s, "SELECT item_id, model, arb_text(answer) FROM answers", "answers",
                               answer_row, &w);
}
