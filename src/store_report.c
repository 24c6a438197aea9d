/*
** store_report.c -- what the report (report.c) reads that no metric's API gives: how much the
** store holds, per judge, protocol and battle source; the dialogues shown in full with their
** turns' replies; and the items whose verdicts changed with the order of the answers, with each
** judge's verdict in both orders.
**
** Invariants: read only; every walk is ordered, so the same store gives the same report; every
** string handed to a callback is borrowed for the call (NULL for SQL NULL). Callbacks return 0
** to go on and nonzero to stop (the walk then returns ARB_OK); a failed statement returns ARB_DB
** with the store's message "cannot read <what>: <SQLite's explanation>".
**
** Not here: the judgments the metrics read (store.c, arb__store_judgments_for_audit), import
** sources and a pair's texts (store_sources.c), battles (store_battles.c), labels
** (store_labels.c), dialogues for the statistics (store_dialogues.c).
*/
#include "store_internal.h"

#include <stdint.h>
#include <stdlib.h>

/* Fails with "cannot read <what>: <SQLite's explanation>" (arb__store_each_row's words). */
static arb_status read_fail(arb_store *s, const char *what)
{
    return arb__store_fail(s, ARB_DB, "cannot read %s: %s", what,
                           sqlite3_errmsg(arb__store_conn(s)));
}

/* Prepares sql into *q; ARB_OK or ARB_DB (message set, *q NULL). */
static arb_status prepare(arb_store *s, const char *sql, const char *what, sqlite3_stmt **q)
{
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, q, NULL) == SQLITE_OK) return ARB_OK;
    sqlite3_finalize(*q);
    *q = NULL;
    return read_fail(s, what);
}

/* One integer from a one-row query. */
static arb_status count_of(arb_store *s, const char *sql, const char *what, long long *n)
{
    sqlite3_stmt *q = NULL;
    *n = 0;
    arb_status st = prepare(s, sql, what, &q);
    if (st) return st;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) *n = sqlite3_column_int64(q, 0);
    else st = read_fail(s, what);
    sqlite3_finalize(q);
    return st;
}

static const char *text(sqlite3_stmt *q, int k) { return (const char *)sqlite3_column_text(q, k); }

static sqlite3_int64 limit_of(size_t n) { return n > INT64_MAX ? INT64_MAX : (sqlite3_int64)n; }

/* ---- counts ------------------------------------------------------------------------------- */

arb_status arb__store_count_contents(arb_store *s, arb__store_contents *n)
{
    static const char sql[] =
        "SELECT (SELECT count(*) FROM items), (SELECT count(DISTINCT model) FROM answers),"
        " (SELECT count(*) FROM judges), (SELECT count(*) FROM pairwise),"
        " (SELECT count(*) FROM human_labels), (SELECT count(*) FROM battles),"
        " (SELECT count(*) FROM dialogues), (SELECT count(*) FROM runs)";
    long long *field[8] = {&n->items,  &n->models,  &n->judges,    &n->pairwise,
                           &n->labels, &n->battles, &n->dialogues, &n->runs};
    sqlite3_stmt *q = NULL;
    for (int k = 0; k < 8; k++) *field[k] = 0;
    arb_status st = prepare(s, sql, "the store's contents", &q);
    if (st) return st;
    if (sqlite3_step(q) == SQLITE_ROW)
        for (int k = 0; k < 8; k++) *field[k] = sqlite3_column_int64(q, k);
    else st = read_fail(s, "the store's contents");
    sqlite3_finalize(q);
    return st;
}

arb_status arb__store_count_labels(arb_store *s, long long *n)
{
    return count_of(s, "SELECT count(*) FROM human_labels", "the expert labels", n);
}

arb_status arb__store_count_swapped_judgments(arb_store *s, long long *n)
{
    return count_of(s, "SELECT count(*) FROM pairwise WHERE ord = 1",
                    "the judgments in the second order", n);
}

/* ---- judges, protocols, battle sources ---------------------------------------------------- */

/* A walk's callback and its data, for arb__store_each_row. */
typedef struct walk {
    union {
        arb__judge_summary_fn judge;
        arb__battle_source_summary_fn battle_source;
        arb__name_fn name;
    } fn;
    void *ud;
} walk;

static int judge_row(sqlite3_stmt *q, void *ud)
{
    const walk *w = ud;
    arb__judge_summary j = {text(q, 0), text(q, 1), text(q, 2), sqlite3_column_int64(q, 3),
                            sqlite3_column_int64(q, 4)};
    return w->fn.judge(w->ud, &j) ? 1 : 0;
}

arb_status arb__store_each_judge_summary(arb_store *s, arb__judge_summary_fn fn, void *ud)
{
    static const char sql[] =
        "SELECT j.name, j.model, j.base_url, coalesce(p.n, 0), coalesce(t.n, 0) FROM judges j"
        " LEFT JOIN (SELECT judge_name, count(*) AS n FROM pairwise GROUP BY judge_name) p"
        "   ON p.judge_name = j.name"
        " LEFT JOIN (SELECT speaker, count(*) AS n FROM dialogue_turns GROUP BY speaker) t"
        "   ON t.speaker = j.name"
        " ORDER BY j.name";
    walk w = {.fn.judge = fn, .ud = ud};
    return arb__store_each_row(s, sql, "the judges", judge_row, &w);
}

/* The models of protocol (byte order) into p->models, copies freed by free_models. */
static arb_status protocol_models(arb_store *s, sqlite3_stmt *q, arb__protocol_summary *p,
                                  char ***names, size_t *cap)
{
    sqlite3_reset(q);
    sqlite3_bind_text(q, 1, p->protocol, -1, SQLITE_TRANSIENT);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *model = text(q, 0);
        if (arb__grow(names, cap, p->n_models + 1, sizeof **names) ||
            !((*names)[p->n_models] = arb__strdup(model ? model : "")))
            return arb__store_fail(s, ARB_NOMEM, "report: out of memory");
        p->n_models++;
    }
    return rc == SQLITE_DONE ? ARB_OK : read_fail(s, "the models of a protocol");
}

arb_status arb__store_each_protocol_summary(arb_store *s, arb__protocol_summary_fn fn, void *ud)
{
    sqlite3_stmt *names = NULL, *runs = NULL, *models = NULL, *items = NULL;
    arb_status st = prepare(s,
        "SELECT protocol FROM runs UNION SELECT protocol FROM pairwise"
        " UNION SELECT kind FROM dialogues ORDER BY 1", "the protocols", &names);
    if (!st) st = prepare(s,
        "SELECT count(*), sum(json_extract(stats, '$.sent')), sum(json_extract(stats, '$.failed')),"
        " sum(json_extract(stats, '$.cached')), sum(json_extract(stats, '$.prompt_tokens')),"
        " sum(json_extract(stats, '$.completion_tokens')), sum(json_extract(stats, '$.invalid')),"
        " sum(json_extract(stats, '$.seconds')) FROM runs WHERE protocol = ?1",
        "the runs of a protocol", &runs);
    if (!st) st = prepare(s,
        "SELECT candidate FROM pairwise WHERE protocol = ?1 UNION"
        " SELECT baseline FROM pairwise WHERE protocol = ?1 UNION"
        " SELECT answer1 FROM dialogues WHERE kind = ?1 UNION"
        " SELECT answer2 FROM dialogues WHERE kind = ?1 ORDER BY 1",
        "the models of a protocol", &models);
    if (!st) st = prepare(s,
        "SELECT count(*) FROM (SELECT item_id FROM pairwise WHERE protocol = ?1 UNION"
        " SELECT item_id FROM dialogues WHERE kind = ?1)", "the items of a protocol", &items);
    char **model_names = NULL;
    size_t cap = 0;
    int rc = SQLITE_DONE;
    while (!st && (rc = sqlite3_step(names)) == SQLITE_ROW) {
        arb__protocol_summary p = {0};
        p.protocol = text(names, 0);
        if (!p.protocol) break;
        st = protocol_models(s, models, &p, &model_names, &cap);
        p.models = (const char *const *)model_names;
        if (!st) {
            sqlite3_reset(items);
            sqlite3_bind_text(items, 1, p.protocol, -1, SQLITE_TRANSIENT);
            if (sqlite3_step(items) == SQLITE_ROW) p.n_items = sqlite3_column_int64(items, 0);
            else st = read_fail(s, "the items of a protocol");
        }
        if (!st) {
            sqlite3_reset(runs);
            sqlite3_bind_text(runs, 1, p.protocol, -1, SQLITE_TRANSIENT);
            if (sqlite3_step(runs) == SQLITE_ROW) {
                p.n_runs = sqlite3_column_int64(runs, 0);
                for (int k = 0; k < 6; k++) {
                    p.has_sum[k] = sqlite3_column_type(runs, 1 + k) != SQLITE_NULL;
                    p.sums[k] = sqlite3_column_int64(runs, 1 + k);
                }
                p.has_seconds = sqlite3_column_type(runs, 7) != SQLITE_NULL;
                p.seconds = sqlite3_column_double(runs, 7);
            } else {
                st = read_fail(s, "the runs of a protocol");
            }
        }
        int stop = !st && fn(ud, &p);
        for (size_t k = 0; k < p.n_models; k++) free(model_names[k]);
        if (stop) break;
    }
    if (!st && rc != SQLITE_DONE && rc != SQLITE_ROW) st = read_fail(s, "the protocols");
    free(model_names);
    sqlite3_finalize(names);
    sqlite3_finalize(runs);
    sqlite3_finalize(models);
    sqlite3_finalize(items);
    return st;
}

static int battle_source_row(sqlite3_stmt *q, void *ud)
{
    const walk *w = ud;
    arb__battle_source_summary b = {text(q, 0), sqlite3_column_int64(q, 1),
                                    sqlite3_column_int64(q, 4), sqlite3_column_int64(q, 2),
                                    sqlite3_column_int64(q, 3)};
    return w->fn.battle_source(w->ud, &b) ? 1 : 0;
}

arb_status arb__store_each_battle_source_summary(arb_store *s, arb__battle_source_summary_fn fn,
                                                 void *ud)
{
    static const char sql[] =
        "SELECT b.source, count(*), count(DISTINCT b.reviewer), count(DISTINCT b.q),"
        " (SELECT count(*) FROM (SELECT i FROM battles WHERE source = b.source UNION"
        "  SELECT j FROM battles WHERE source = b.source))"
        " FROM battles b GROUP BY b.source ORDER BY b.source";
    walk w = {.fn.battle_source = fn, .ud = ud};
    return arb__store_each_row(s, sql, "the battle sources", battle_source_row, &w);
}

static int source_name_row(sqlite3_stmt *q, void *ud)
{
    const walk *w = ud;
    const char *name = text(q, 0);
    return w->fn.name(w->ud, name ? name : "") ? 1 : 0;
}

arb_status arb__store_each_battle_source(arb_store *s, arb__name_fn fn, void *ud)
{
    walk w = {.fn.name = fn, .ud = ud};
    return arb__store_each_row(s, "SELECT DISTINCT source FROM battles ORDER BY source",
                               "the battle sources", source_name_row, &w);
}

/* ---- transcripts -------------------------------------------------------------------------- */

arb_status arb__store_each_transcript(arb_store *s, size_t limit, arb__transcript_fn dialogue,
                                      arb__transcript_turn_fn turn, void *ud)
{
    sqlite3_stmt *q = NULL, *turns = NULL;
    /* the longest dialogue of each kind first, then the next of each kind, ... */
    arb_status st = prepare(s,
        "WITH ranked AS (SELECT d.*, row_number() OVER (PARTITION BY d.kind ORDER BY"
        "  d.status = 'done' DESC, (SELECT count(*) FROM dialogue_turns t WHERE t.dialogue_id = d.id)"
        "  DESC, d.id) AS pick FROM dialogues d)"
        " SELECT r.id, r.kind, r.item_id, r.answer1, r.answer2, r.status, r.final_verdict, r.rep,"
        "  arb_text(i.question), arb_text(a1.answer), arb_text(a2.answer) FROM ranked r"
        " LEFT JOIN items i ON i.id = r.item_id"
        " LEFT JOIN answers a1 ON a1.item_id = r.item_id AND a1.model = r.answer1"
        " LEFT JOIN answers a2 ON a2.item_id = r.item_id AND a2.model = r.answer2"
        " ORDER BY r.pick, r.kind LIMIT ?1", "the dialogues", &q);
    if (!st) st = prepare(s,
        "SELECT t.turn, t.speaker, t.role, t.verdict, t.call_id, c.content, c.error"
        " FROM dialogue_turns t LEFT JOIN calls c ON c.id = t.call_id"
        " WHERE t.dialogue_id = ?1 ORDER BY t.turn", "the turns of a dialogue", &turns);
    int rc = SQLITE_DONE, stop = 0;
    if (!st) sqlite3_bind_int64(q, 1, limit_of(limit));
    while (!st && !stop && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        arb__transcript d = {sqlite3_column_int64(q, 0), text(q, 1), text(q, 2), text(q, 3),
                             text(q, 4), text(q, 5), text(q, 6), text(q, 8), text(q, 9),
                             text(q, 10)};
        if ((stop = dialogue(ud, &d))) break;
        sqlite3_reset(turns);
        sqlite3_bind_int64(turns, 1, d.id);
        int trc;
        while ((trc = sqlite3_step(turns)) == SQLITE_ROW) {
            arb__transcript_turn t = {sqlite3_column_int(turns, 0), text(turns, 1),
                                      text(turns, 2), text(turns, 3),
                                      sqlite3_column_type(turns, 4) != SQLITE_NULL,
                                      text(turns, 5), text(turns, 6)};
            if ((stop = turn(ud, &t))) break;
        }
        if (!stop && trc != SQLITE_DONE) st = read_fail(s, "the turns of a dialogue");
    }
    if (!st && !stop && rc != SQLITE_DONE) st = read_fail(s, "the dialogues");
    sqlite3_finalize(q);
    sqlite3_finalize(turns);
    return st;
}

/* ---- order-dependent items (worst cases) -------------------------------------------------- */

/* Every judgment pair (both orders of one judge, set-up and repetition) with its two model
** verdicts and whether they flip: differ with neither invalid. */
#define FLIPS_CTE                                                                              \
    "WITH pairs AS (SELECT a.protocol, a.judge_name, a.item_id, a.candidate, a.baseline,"     \
    "  a.template_name, a.options, a.rep, a.model_verdict AS v0, b.model_verdict AS v1,"       \
    "  (a.model_verdict <> b.model_verdict AND a.model_verdict <> 'e'"                       \
    "   AND b.model_verdict <> 'e') AS flip"                                                  \
    " FROM pairwise a JOIN pairwise b ON b.protocol = a.protocol"                             \
    "  AND b.judge_name = a.judge_name AND b.candidate = a.candidate"                         \
    "  AND b.baseline = a.baseline AND b.template_name = a.template_name"                     \
    "  AND b.options = a.options AND b.item_id = a.item_id AND b.rep = a.rep AND b.ord = 1"    \
    " WHERE a.ord = 0)"

arb_status arb__store_each_order_dependent_item(arb_store *s, size_t limit,
                                                arb__order_dependent_item_fn fn, void *ud)
{
    sqlite3_stmt *q = NULL;
    arb_status st = prepare(s,
        /* the texts are joined to the few groups shown, not to every group ranked */
        FLIPS_CTE
        ", top AS (SELECT p.item_id, p.candidate, p.baseline,"
        "  count(DISTINCT CASE WHEN p.flip THEN p.protocol || char(31) || p.judge_name END) AS jf,"
        "  count(DISTINCT p.protocol || char(31) || p.judge_name) AS judges,"
        "  sum(p.flip) AS flips, i.seq AS seq"
        " FROM pairs p JOIN items i ON i.id = p.item_id"
        " GROUP BY p.item_id, p.candidate, p.baseline HAVING jf > 0"
        " ORDER BY jf DESC, flips DESC, i.seq, p.item_id, p.candidate, p.baseline LIMIT ?1)"
        " SELECT t.item_id, t.candidate, t.baseline, t.jf, t.judges, arb_text(i.question),"
        "  arb_text(ac.answer), arb_text(ab.answer)"
        " FROM top t JOIN items i ON i.id = t.item_id"
        " LEFT JOIN answers ac ON ac.item_id = t.item_id AND ac.model = t.candidate"
        " LEFT JOIN answers ab ON ab.item_id = t.item_id AND ab.model = t.baseline"
        " ORDER BY t.jf DESC, t.flips DESC, t.seq, t.item_id, t.candidate, t.baseline",
        "the order-dependent items", &q);
    if (st) return st;
    sqlite3_bind_int64(q, 1, limit_of(limit));
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        arb__order_dependent_item it = {text(q, 0), text(q, 1), text(q, 2),
                                        sqlite3_column_int64(q, 3), sqlite3_column_int64(q, 4),
                                        text(q, 5), text(q, 6), text(q, 7)};
        if (fn(ud, &it)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    if (rc != SQLITE_DONE) st = read_fail(s, "the order-dependent items");
    sqlite3_finalize(q);
    return st;
}

struct arb__order_verdicts {
    arb_store *store;
    sqlite3_stmt *q;
};

arb_status arb__store_open_order_verdicts(arb_store *s, arb__order_verdicts **out)
{
    *out = NULL;
    arb__order_verdicts *ov = calloc(1, sizeof *ov);
    if (!ov) return arb__store_fail(s, ARB_NOMEM, "report: out of memory");
    ov->store = s;
    arb_status st = prepare(s,
        FLIPS_CTE
        " SELECT protocol, judge_name, template_name, options, rep, v0, v1, flip FROM pairs"
        " WHERE item_id = ?1 AND candidate = ?2 AND baseline = ?3"
        " ORDER BY judge_name, protocol, template_name, options, rep",
        "the verdicts in both orders", &ov->q);
    if (st) {
        free(ov);
        return st;
    }
    *out = ov;
    return ARB_OK;
}

void arb__store_close_order_verdicts(arb__order_verdicts *ov)
{
    if (!ov) return;
    sqlite3_finalize(ov->q);
    free(ov);
}

arb_status arb__store_each_order_verdict(arb__order_verdicts *ov, const char *item,
                                         const char *candidate, const char *baseline,
                                         arb__order_verdict_fn fn, void *ud)
{
    sqlite3_stmt *q = ov->q;
    sqlite3_reset(q);
    sqlite3_bind_text(q, 1, item, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, candidate, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 3, baseline, -1, SQLITE_TRANSIENT);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        arb__order_verdict v = {text(q, 0), text(q, 1), text(q, 2), sqlite3_column_int(q, 3),
                                sqlite3_column_int(q, 4), {text(q, 5), text(q, 6)},
                                sqlite3_column_int(q, 7)};
        if (fn(ud, &v)) return ARB_OK;
    }
    return rc == SQLITE_DONE ? ARB_OK : read_fail(ov->store, "the verdicts in both orders");
}
