/*
** store_cost.c -- what judge calls cost, read from table calls (prompt_tokens,
** completion_tokens, cached_tokens, reasoning_tokens, cost_usd) and the judges' prices (table
** judges, column price). cost_usd is written with the call (store.c, from the reply's usage and
** the judge's price); a call without a known price or without usage has cost_usd NULL, which
** readers show as "unknown", never as 0. Read by the dry run (typical completion length) and
** by audit and report (spend per judge). Writes nothing.
*/
#include "store_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

arb_status arb__store_judge_completion_mean(arb_store *s, const char *judge_name, double *mean,
                                            size_t *n)
{
    static const char sql[] = "SELECT avg(completion_tokens), count(completion_tokens) FROM calls"
                              " WHERE judge_name = ?1 AND ok = 1";
    *mean = NAN;
    *n = 0;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read the calls");
    arb__store_bind_text(q, 1, judge_name);
    arb_status st = ARB_OK;
    if (sqlite3_step(q) == SQLITE_ROW) {
        *n = (size_t)sqlite3_column_int64(q, 1);
        if (*n) *mean = sqlite3_column_double(q, 0);
    } else {
        st = arb__store_fail_db(s, "cannot read the calls");
    }
    sqlite3_finalize(q);
    return st;
}

typedef struct cost_walk {
    arb__judge_cost_row *rows;
    size_t n, cap;
} cost_walk;

static int cost_row(sqlite3_stmt *q, void *ud)
{
    cost_walk *w = ud;
    if (arb__grow(&w->rows, &w->cap, w->n + 1, sizeof *w->rows)) return -1;
    arb__judge_cost_row *r = &w->rows[w->n];
    memset(r, 0, sizeof *r);
    int oom = 0;
    r->judge_name = arb__store_column_text(q, 0, &oom);
    r->price_json = arb__store_column_text(q, 1, &oom);
    w->n++; /* freed with the rest even when a copy failed */
    if (oom || !r->judge_name) return -1;
    r->calls = (size_t)sqlite3_column_int64(q, 2);
    r->with_cost = (size_t)sqlite3_column_int64(q, 3);
    r->with_usage = (size_t)sqlite3_column_int64(q, 4);
    r->prompt_tokens = sqlite3_column_int64(q, 5);
    r->completion_tokens = sqlite3_column_int64(q, 6);
    r->cached_tokens = sqlite3_column_int64(q, 7);
    r->reasoning_tokens = sqlite3_column_int64(q, 8);
    r->cost_usd = sqlite3_column_double(q, 9);
    return 0;
}

arb_status arb__store_judge_costs(arb_store *s, arb__judge_cost_row **rows, size_t *n)
{
    static const char sql[] =
        "SELECT c.judge_name, (SELECT price FROM judges j WHERE j.name = c.judge_name),"
        " count(*), count(c.cost_usd),"
        " count(CASE WHEN c.prompt_tokens IS NOT NULL AND c.completion_tokens IS NOT NULL"
        " THEN 1 END),"
        " total(c.prompt_tokens), total(c.completion_tokens), total(c.cached_tokens),"
        " total(c.reasoning_tokens), total(c.cost_usd)"
        " FROM calls c GROUP BY c.judge_name ORDER BY c.judge_name";
    cost_walk w = {0};
    *rows = NULL;
    *n = 0;
    arb_status st = arb__store_each_row(s, sql, "the cost of the calls", cost_row, &w);
    if (st) {
        arb__store_judge_costs_free(w.rows, w.n);
        return st;
    }
    *rows = w.rows;
    *n = w.n;
    return ARB_OK;
}

void arb__store_judge_costs_free(arb__judge_cost_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].judge_name);
        free(rows[i].price_json);
    }
    free(rows);
}

/* See internal.h. */
void arb__judge_cost_text(char *out, size_t size, const arb__judge_cost_row *r)
{
    if (r->with_cost == 0)
        snprintf(out, size, "unknown (%s)", r->price_json ? "no usage reported" : "no price");
    else if (r->with_cost < r->calls)
        snprintf(out, size, "$%.4f + %zu calls of unknown cost", r->cost_usd,
                 r->calls - r->with_cost);
    else
        snprintf(out, size, "$%.4f", r->cost_usd);
}

/* ---- one judge's price -------------------------------------------------------------------- */

typedef struct price_read {
    arb_price *out;
    int bad;
} price_read;

static int price_row(sqlite3_stmt *q, void *ud)
{
    price_read *r = ud;
    const char *text = (const char *)sqlite3_column_text(q, 0);
    if (!text) return 1; /* NULL: no price */
    json_t *o = json_loads(text, 0, NULL);
    json_t *in = json_object_get(o, "input_per_mtok"), *out = json_object_get(o, "output_per_mtok");
    json_t *cached = json_object_get(o, "cached_input_per_mtok");
    if (json_is_number(in) && json_is_number(out)) {
        r->out->known = 1;
        r->out->input_per_mtok = json_number_value(in);
        r->out->output_per_mtok = json_number_value(out);
        r->out->cached_input_per_mtok = json_is_number(cached) ? json_number_value(cached) : NAN;
        json_t *discount = json_object_get(o, "batch_discount");
        r->out->batch_discount = json_is_number(discount) ? json_number_value(discount) : 0;
    } else {
        r->bad = 1;
    }
    json_decref(o);
    return 1;
}

arb_status arb__store_judge_price(arb_store *s, const char *judge_name, arb_price *out)
{
    memset(out, 0, sizeof *out);
    out->cached_input_per_mtok = NAN;
    if (!judge_name) return arb__store_fail(s, ARB_INVALID, "judge_price: no judge name");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), "SELECT price FROM judges WHERE name = ?1", -1, &q,
                           NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read the judge's price");
    arb__store_bind_text(q, 1, judge_name);
    price_read r = {out, 0};
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) price_row(q, &r);
    arb_status st = rc == SQLITE_ROW || rc == SQLITE_DONE
                        ? ARB_OK
                        : arb__store_fail_db(s, "cannot read the judge's price");
    sqlite3_finalize(q);
    if (!st && r.bad) memset(out, 0, sizeof *out); /* not a price this build wrote: unknown */
    return st;
}
