/*
** store_annotate.c -- the annotation web app's tables (annotate.c, METHODS §4): the pairs one
** server serves (temp.annotate_pairs, this connection only), its tasks (annotation_tasks: who
** was given which (pair, item), in which shown order, when, and how it ended) and the human
** labels the annotators give (human_labels, source "ui").
**
** The rules for choosing a task are annotate.c's (its file comment); the statements here count
** what they need. An open task "holds" its item while it was assigned less than the lease ago.
** The task statements are prepared once per server (arb__store_open_annotation_tasks) and used
** under the server's lock; every statement that succeeds is reset before its function returns.
** A statement that fails is left as it failed, so arb__store_last_db_error still reads SQLite's
** own explanation, until arb__store_reset_annotation_tasks (before the rollback).
**
** Not here: transactions (the caller's: arb__store_begin / _begin_read ... _commit).
*/
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOW_SQL "strftime('%Y-%m-%dT%H:%M:%fZ','now')"
/* Open tasks assigned after this moment hold their item (?2 is "-N minutes"). */
#define CUTOFF_SQL "strftime('%Y-%m-%dT%H:%M:%fZ','now',?2)"

/* Parameters of the statements below: ?1 annotator, ?2 lease ("-30 minutes"), ?3 overlap,
** ?4 item, ?5 candidate, ?6 baseline, ?7 shown order / task id / outcome. */

/* The (pair, item) tasks annotator ?1 could still be given. */
#define ELIGIBLE_SQL                                                                         \
    " FROM temp.annotate_pairs p CROSS JOIN items i"                                         \
    " WHERE EXISTS (SELECT 1 FROM answers a WHERE a.item_id = i.id AND a.model = p.candidate)" \
    " AND EXISTS (SELECT 1 FROM answers a WHERE a.item_id = i.id AND a.model = p.baseline)"  \
    " AND NOT EXISTS (SELECT 1 FROM annotation_tasks t WHERE t.item_id = i.id"               \
    "   AND t.candidate = p.candidate AND t.baseline = p.baseline AND t.annotator = ?1)"     \
    " AND NOT EXISTS (SELECT 1 FROM human_labels l WHERE l.item_id = i.id"                   \
    "   AND l.candidate = p.candidate AND l.baseline = p.baseline AND l.annotator = ?1)"     \
    " AND (SELECT count(*) FROM human_labels l WHERE l.item_id = i.id"                       \
    "   AND l.candidate = p.candidate AND l.baseline = p.baseline)"                          \
    "   + (SELECT count(*) FROM annotation_tasks t WHERE t.item_id = i.id"                   \
    "   AND t.candidate = p.candidate AND t.baseline = p.baseline AND t.outcome IS NULL"     \
    "   AND t.assigned_at > " CUTOFF_SQL ") < ?3"

enum {
    Q_OWN_OPEN,
    Q_HELD_BY_OTHERS,
    Q_RENEW,
    Q_RELEASE,
    Q_NEXT,
    Q_COUNT_ELIGIBLE,
    Q_INSERT_TASK,
    Q_CONTENT,
    Q_GET_TASK,
    Q_FINISH_TASK,
    Q_PUT_LABEL,
    Q_PROGRESS,
    Q__COUNT
};

static const char *const query_sql[Q__COUNT] = {
    [Q_OWN_OPEN] =
        "SELECT t.id, t.item_id, t.candidate, t.baseline, t.assigned_at > " CUTOFF_SQL
        " FROM annotation_tasks t JOIN temp.annotate_pairs p"
        " ON p.candidate = t.candidate AND p.baseline = t.baseline"
        " WHERE t.annotator = ?1 AND t.outcome IS NULL ORDER BY p.pos, t.id LIMIT 1",
    [Q_HELD_BY_OTHERS] =
        "SELECT (SELECT count(*) FROM human_labels l WHERE l.item_id = ?4 AND l.candidate = ?5"
        "  AND l.baseline = ?6 AND l.annotator <> ?1)"
        " + (SELECT count(*) FROM annotation_tasks t WHERE t.item_id = ?4 AND t.candidate = ?5"
        "  AND t.baseline = ?6 AND t.annotator <> ?1 AND t.outcome IS NULL"
        "  AND t.assigned_at > " CUTOFF_SQL ")",
    [Q_RENEW] = "UPDATE annotation_tasks SET assigned_at = " NOW_SQL " WHERE id = ?7",
    [Q_RELEASE] = "DELETE FROM annotation_tasks WHERE id = ?7 AND outcome IS NULL",
    [Q_NEXT] = "SELECT i.id, p.candidate, p.baseline" ELIGIBLE_SQL
               " ORDER BY p.pos, i.seq, i.id LIMIT 1",
    [Q_COUNT_ELIGIBLE] = "SELECT count(*)" ELIGIBLE_SQL,
    [Q_INSERT_TASK] = "INSERT INTO annotation_tasks(item_id, candidate, baseline, annotator,"
                      " shown_order) VALUES (?4, ?5, ?6, ?1, ?7)",
    [Q_CONTENT] = "SELECT arb_text(i.question), arb_text(i.reference), arb_text(c.answer),"
                  " arb_text(b.answer) FROM items i"
                  " JOIN answers c ON c.item_id = i.id AND c.model = ?5"
                  " JOIN answers b ON b.item_id = i.id AND b.model = ?6 WHERE i.id = ?4",
    [Q_GET_TASK] = "SELECT item_id, candidate, baseline, annotator, shown_order, outcome,"
                   " assigned_at > " CUTOFF_SQL " FROM annotation_tasks WHERE id = ?7",
    [Q_FINISH_TASK] = "UPDATE annotation_tasks SET finished_at = " NOW_SQL ", outcome = ?1"
                      " WHERE id = ?7 AND outcome IS NULL",
    /* ?1 annotator, ?2 verdict, ?3 shown order, ?4..?6 the pair, ?7 time_ms */
    [Q_PUT_LABEL] =
        "INSERT INTO human_labels(item_id, candidate, baseline, verdict, annotator, shown_order,"
        " time_ms, source) VALUES (?4, ?5, ?6, ?2, ?1, ?3, ?7, 'ui')"
        " ON CONFLICT(item_id, candidate, baseline, annotator) DO UPDATE SET"
        " verdict = excluded.verdict, shown_order = excluded.shown_order,"
        " time_ms = excluded.time_ms, source = excluded.source, imported_at = " NOW_SQL,
    [Q_PROGRESS] =
        "SELECT coalesce(sum(t.outcome = 'label'), 0), coalesce(sum(t.outcome = 'skip'), 0),"
        " coalesce(sum(t.outcome IS NULL), 0)"
        " FROM annotation_tasks t JOIN temp.annotate_pairs p"
        " ON p.candidate = t.candidate AND p.baseline = t.baseline WHERE t.annotator = ?1",
};

struct arb__annotation_tasks {
    arb_store *store; /* borrowed */
    sqlite3_stmt *stmt[Q__COUNT];
    char lease[32];   /* SQLite time modifier, "-30 minutes" */
    int overlap;
};

/* ---- the connection ----------------------------------------------------------------------- */

void arb__store_set_busy_timeout(arb_store *s, int ms)
{
    sqlite3_busy_timeout(arb__store_conn(s), ms);
}

const char *arb__store_last_db_error(arb_store *s, int *busy)
{
    sqlite3 *db = arb__store_conn(s);
    if (busy) *busy = (sqlite3_errcode(db) & 0xFF) == SQLITE_BUSY;
    return sqlite3_errmsg(db);
}

arb_status arb__store_begin_read(arb_store *s)
{
    return sqlite3_exec(arb__store_conn(s), "BEGIN", NULL, NULL, NULL) == SQLITE_OK ? ARB_OK
                                                                                    : ARB_DB;
}

void arb__store_end_read(arb_store *s) { sqlite3_exec(arb__store_conn(s), "COMMIT", NULL, NULL, NULL); }

/* ---- the pairs served --------------------------------------------------------------------- */

static void bind_text(sqlite3_stmt *q, int i, const char *s)
{
    if (s) sqlite3_bind_text(q, i, s, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(q, i);
}

/* Records the given pairs in order, each checked: answered by both models, not given twice. */
static arb_status put_given_pairs(arb_store *s, const arb_model_pair *pairs, size_t n,
                                  size_t *bad, arb__annotation_pair_problem *problem)
{
    static const char insert_sql[] =
        "INSERT INTO temp.annotate_pairs(candidate, baseline) VALUES (?1, ?2)";
    static const char answered_sql[] =
        "SELECT EXISTS (SELECT 1 FROM answers c JOIN answers b"
        " ON b.item_id = c.item_id AND b.model = ?2 WHERE c.model = ?1)";
    sqlite3 *db = arb__store_conn(s);
    sqlite3_stmt *ins = NULL, *answered = NULL;
    if (sqlite3_prepare_v2(db, insert_sql, -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, answered_sql, -1, &answered, NULL) != SQLITE_OK) {
        sqlite3_finalize(ins);
        return arb__store_fail_db(s, "cannot list the pairs to annotate");
    }
    arb_status st = ARB_OK;
    for (size_t i = 0; i < n && !st; i++) {
        const char *cand = pairs[i].first, *base = pairs[i].second;
        sqlite3_reset(answered);
        bind_text(answered, 1, cand);
        bind_text(answered, 2, base);
        int rc = sqlite3_step(answered);
        if (rc != SQLITE_ROW) {
            st = arb__store_fail_db(s, "cannot read the answers");
        } else if (!sqlite3_column_int(answered, 0)) {
            *bad = i;
            *problem = ARB__PAIR_UNANSWERED;
            st = arb__store_fail(s, ARB_INVALID, "a pair has no item answered by both models");
        }
        if (st) break;
        sqlite3_reset(ins);
        bind_text(ins, 1, cand);
        bind_text(ins, 2, base);
        rc = sqlite3_step(ins);
        if ((rc & 0xFF) == SQLITE_CONSTRAINT) {
            *bad = i;
            *problem = ARB__PAIR_TWICE;
            st = arb__store_fail(s, ARB_INVALID, "a pair is given twice");
        } else if (rc != SQLITE_DONE) {
            st = arb__store_fail_db(s, "cannot record the pairs");
        }
    }
    sqlite3_finalize(ins);
    sqlite3_finalize(answered);
    return st;
}

arb_status arb__store_put_annotation_pairs(arb_store *s, const arb_model_pair *pairs, size_t n,
                                           size_t *n_pairs, size_t *bad,
                                           arb__annotation_pair_problem *problem)
{
    static const char create_sql[] =
        "CREATE TEMP TABLE annotate_pairs (\n"
        "  pos       INTEGER PRIMARY KEY,  -- order in which pairs are served\n"
        "  candidate TEXT NOT NULL,\n"
        "  baseline  TEXT NOT NULL,\n"
        "  UNIQUE (candidate, baseline)\n"
        ")";
    static const char discover_sql[] =
        "INSERT INTO temp.annotate_pairs(candidate, baseline)"
        " SELECT DISTINCT candidate, baseline FROM pairwise WHERE protocol = 'sbs'"
        " ORDER BY candidate, baseline";
    sqlite3 *db = arb__store_conn(s);
    *n_pairs = 0;
    *bad = 0;
    *problem = ARB__PAIR_OK;
    if (sqlite3_exec(db, create_sql, NULL, NULL, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot list the pairs to annotate");
    if (!n) {
        if (sqlite3_exec(db, discover_sql, NULL, NULL, NULL) != SQLITE_OK)
            return arb__store_fail_db(s, "cannot list the pairs to annotate");
        *n_pairs = (size_t)sqlite3_changes(db);
        return ARB_OK;
    }
    arb_status st = put_given_pairs(s, pairs, n, bad, problem);
    if (!st) *n_pairs = n;
    return st;
}

/* ---- tasks -------------------------------------------------------------------------------- */

arb_status arb__store_open_annotation_tasks(arb_store *s, int lease_minutes, int overlap,
                                            arb__annotation_tasks **out)
{
    *out = NULL;
    arb__annotation_tasks *at = calloc(1, sizeof *at);
    if (!at) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    at->store = s;
    at->overlap = overlap;
    snprintf(at->lease, sizeof at->lease, "-%d minutes", lease_minutes);
    sqlite3 *db = arb__store_conn(s);
    for (int i = 0; i < Q__COUNT; i++)
        if (sqlite3_prepare_v2(db, query_sql[i], -1, &at->stmt[i], NULL) != SQLITE_OK) {
            arb__store_fail(s, ARB_DB, "cannot prepare query %d: %s", i, sqlite3_errmsg(db));
            arb__store_close_annotation_tasks(at);
            return ARB_DB;
        }
    *out = at;
    return ARB_OK;
}

void arb__store_close_annotation_tasks(arb__annotation_tasks *at)
{
    if (!at) return;
    for (int i = 0; i < Q__COUNT; i++) sqlite3_finalize(at->stmt[i]);
    free(at);
}

void arb__store_reset_annotation_tasks(arb__annotation_tasks *at)
{
    for (int i = 0; i < Q__COUNT; i++) sqlite3_reset(at->stmt[i]);
}

void arb__annotation_task_free(arb__annotation_task *t)
{
    free(t->item);
    free(t->candidate);
    free(t->baseline);
    free(t->annotator);
    memset(t, 0, sizeof *t);
}

/* The statement k, reset, with ?1 annotator, ?2 lease and ?3 overlap bound where it has them
** (binding a parameter a statement lacks is a harmless SQLITE_RANGE). */
static sqlite3_stmt *query(arb__annotation_tasks *at, int k, const char *annotator)
{
    sqlite3_stmt *q = at->stmt[k];
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    bind_text(q, 1, annotator);
    bind_text(q, 2, at->lease);
    sqlite3_bind_int(q, 3, at->overlap);
    return q;
}

static void bind_task(sqlite3_stmt *q, const char *item, const char *candidate,
                      const char *baseline)
{
    bind_text(q, 4, item);
    bind_text(q, 5, candidate);
    bind_text(q, 6, baseline);
}

/* A copy of the column's text ("" for NULL); NULL when out of memory. */
static char *column_copy(sqlite3_stmt *q, int col)
{
    const char *s = (const char *)sqlite3_column_text(q, col);
    return arb__strdup(s ? s : "");
}

/* Copies item, candidate and baseline from columns first..first+2 into t. ARB_OK or ARB_NOMEM. */
static arb_status copy_task_names(arb__annotation_tasks *at, arb__annotation_task *t,
                                  sqlite3_stmt *q, int first)
{
    t->item = column_copy(q, first);
    t->candidate = column_copy(q, first + 1);
    t->baseline = column_copy(q, first + 2);
    if (t->item && t->candidate && t->baseline) return ARB_OK;
    return arb__store_fail(at->store, ARB_NOMEM, "out of memory");
}

/* Runs a statement that returns no rows; resets it when it succeeded. */
static arb_status run(sqlite3_stmt *q)
{
    if (sqlite3_step(q) != SQLITE_DONE) return ARB_DB;
    sqlite3_reset(q);
    return ARB_OK;
}

/* Steps a statement that returns one row. ARB_OK with *found 1 (the row) or 0 (none, reset),
** or ARB_DB. */
static arb_status one_row(sqlite3_stmt *q, int *found)
{
    int rc = sqlite3_step(q);
    *found = rc == SQLITE_ROW;
    if (rc == SQLITE_DONE) sqlite3_reset(q);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? ARB_OK : ARB_DB;
}

arb_status arb__store_own_open_annotation_task(arb__annotation_tasks *at, const char *annotator,
                                               arb__annotation_task *t, int *found)
{
    memset(t, 0, sizeof *t);
    sqlite3_stmt *q = query(at, Q_OWN_OPEN, annotator);
    arb_status st = one_row(q, found);
    if (st || !*found) return st;
    t->id = sqlite3_column_int64(q, 0);
    t->live = sqlite3_column_int(q, 4);
    if ((st = copy_task_names(at, t, q, 1))) return st;
    sqlite3_reset(q);
    return ARB_OK;
}

arb_status arb__store_count_annotation_holders(arb__annotation_tasks *at, const char *annotator,
                                               const char *item, const char *candidate,
                                               const char *baseline, long long *held)
{
    *held = 0;
    sqlite3_stmt *q = query(at, Q_HELD_BY_OTHERS, annotator);
    bind_task(q, item, candidate, baseline);
    if (sqlite3_step(q) != SQLITE_ROW) return ARB_DB;
    *held = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    return ARB_OK;
}

/* Runs Q_RENEW, Q_RELEASE (task id) or Q_FINISH_TASK (task id, outcome in ?1). */
static arb_status update_task(arb__annotation_tasks *at, int k, long long id, const char *outcome)
{
    sqlite3_stmt *q = query(at, k, outcome);
    sqlite3_bind_int64(q, 7, id);
    return run(q);
}

arb_status arb__store_renew_annotation_task(arb__annotation_tasks *at, long long id)
{
    return update_task(at, Q_RENEW, id, NULL);
}

arb_status arb__store_release_annotation_task(arb__annotation_tasks *at, long long id)
{
    return update_task(at, Q_RELEASE, id, NULL);
}

arb_status arb__store_finish_annotation_task(arb__annotation_tasks *at, long long id,
                                             const char *outcome)
{
    return update_task(at, Q_FINISH_TASK, id, outcome);
}

arb_status arb__store_next_annotation_task(arb__annotation_tasks *at, const char *annotator,
                                           arb__annotation_task *t, int *found)
{
    memset(t, 0, sizeof *t);
    sqlite3_stmt *q = query(at, Q_NEXT, annotator);
    arb_status st = one_row(q, found);
    if (st || !*found) return st;
    if ((st = copy_task_names(at, t, q, 0))) return st;
    sqlite3_reset(q);
    return ARB_OK;
}

arb_status arb__store_put_annotation_task(arb__annotation_tasks *at, const char *annotator,
                                          const char *item, const char *candidate,
                                          const char *baseline, int shown_order, long long *id)
{
    *id = 0;
    sqlite3_stmt *q = query(at, Q_INSERT_TASK, annotator);
    bind_task(q, item, candidate, baseline);
    sqlite3_bind_int(q, 7, shown_order);
    arb_status st = run(q);
    if (!st) *id = sqlite3_last_insert_rowid(arb__store_conn(at->store));
    return st;
}

arb_status arb__store_get_annotation_task(arb__annotation_tasks *at, long long id,
                                          arb__annotation_task *t, int *found)
{
    memset(t, 0, sizeof *t);
    sqlite3_stmt *q = query(at, Q_GET_TASK, NULL);
    sqlite3_bind_int64(q, 7, id);
    arb_status st = one_row(q, found);
    if (st || !*found) return st;
    t->id = id;
    t->shown_order = sqlite3_column_int(q, 4);
    t->answered = sqlite3_column_type(q, 5) != SQLITE_NULL;
    t->live = sqlite3_column_int(q, 6);
    if ((st = copy_task_names(at, t, q, 0))) return st;
    if (!(t->annotator = column_copy(q, 3)))
        return arb__store_fail(at->store, ARB_NOMEM, "out of memory");
    sqlite3_reset(q);
    return ARB_OK;
}

void arb__annotation_texts_free(arb__annotation_texts *x)
{
    free(x->question);
    free(x->reference);
    free(x->candidate_answer);
    free(x->baseline_answer);
    memset(x, 0, sizeof *x);
}

arb_status arb__store_get_annotation_texts(arb__annotation_tasks *at, const char *item,
                                           const char *candidate, const char *baseline,
                                           arb__annotation_texts *x, int *found)
{
    memset(x, 0, sizeof *x);
    sqlite3_stmt *q = query(at, Q_CONTENT, NULL);
    bind_task(q, item, candidate, baseline);
    arb_status st = one_row(q, found);
    if (st || !*found) return st;
    x->question = column_copy(q, 0);
    x->candidate_answer = column_copy(q, 2);
    x->baseline_answer = column_copy(q, 3);
    int nomem = !x->question || !x->candidate_answer || !x->baseline_answer;
    if (sqlite3_column_type(q, 1) != SQLITE_NULL && !(x->reference = column_copy(q, 1)))
        nomem = 1;
    sqlite3_reset(q);
    if (nomem) {
        arb__annotation_texts_free(x);
        return arb__store_fail(at->store, ARB_NOMEM, "out of memory");
    }
    return ARB_OK;
}

arb_status arb__store_put_annotation_label(arb__annotation_tasks *at, const char *annotator,
                                           const char *item, const char *candidate,
                                           const char *baseline, const char *verdict,
                                           int shown_order, long long time_ms)
{
    sqlite3_stmt *q = query(at, Q_PUT_LABEL, annotator);
    bind_text(q, 2, verdict);
    sqlite3_bind_int(q, 3, shown_order);
    bind_task(q, item, candidate, baseline);
    if (time_ms >= 0) sqlite3_bind_int64(q, 7, time_ms);
    else sqlite3_bind_null(q, 7);
    return run(q);
}

arb_status arb__store_annotation_progress(arb__annotation_tasks *at, const char *annotator,
                                          arb__annotation_progress *p)
{
    memset(p, 0, sizeof *p);
    sqlite3_stmt *q = query(at, Q_PROGRESS, annotator);
    if (sqlite3_step(q) != SQLITE_ROW) return ARB_DB;
    p->labelled = sqlite3_column_int64(q, 0);
    p->skipped = sqlite3_column_int64(q, 1);
    long long open = sqlite3_column_int64(q, 2);
    sqlite3_reset(q);
    q = query(at, Q_COUNT_ELIGIBLE, annotator);
    if (sqlite3_step(q) != SQLITE_ROW) return ARB_DB;
    p->remaining = open + sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    return ARB_OK;
}
