/*
** store_logprobs.c -- the verdict probabilities of stored judgments, read from calls.logprobs
** (logprobs.c writes it per call: the verdict token's distribution over the active options,
** NULL when not asked for or not returned) joined to the judgments of tables pairwise and
** pointwise. A summary row per comparison (pairwise) or per judge x protocol x kind x template
** (pointwise) counts the judgments, the calls that asked for logprobs (the stored request has
** "logprobs": true) and those whose verdict distribution was read; the sums are over the last.
** Position probabilities become model-verdict probabilities through the shown order (METHODS
** §2.2: in order 0 A is the candidate, in order 1 B is). Writes nothing.
*/
#include "store_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct lp_walk {
    arb__logprob_row *rows;
    size_t n, cap;
    int pointwise;
} lp_walk;

static int lp_row(sqlite3_stmt *q, void *ud)
{
    lp_walk *w = ud;
    if (arb__grow(&w->rows, &w->cap, w->n + 1, sizeof *w->rows)) return -1;
    arb__logprob_row *r = &w->rows[w->n++];
    memset(r, 0, sizeof *r);
    int oom = 0, c = 0;
    r->judge = arb__store_column_text(q, c++, &oom);
    r->protocol = arb__store_column_text(q, c++, &oom);
    r->candidate = arb__store_column_text(q, c++, &oom); /* pointwise: the kind */
    r->baseline = w->pointwise ? NULL : arb__store_column_text(q, c, &oom);
    c += !w->pointwise;
    r->template_name = arb__store_column_text(q, c++, &oom);
    if (oom) return -1;
    r->options = w->pointwise ? 0 : sqlite3_column_int(q, c++);
    r->judgments = (size_t)sqlite3_column_int64(q, c++);
    r->asked = (size_t)sqlite3_column_int64(q, c++);
    r->with_logprobs = (size_t)sqlite3_column_int64(q, c++);
    for (int k = 0; k < 4; k++) r->argmax[k] = sqlite3_column_double(q, c++);
    for (int k = 0; k < 4; k++) r->weighted[k] = sqlite3_column_double(q, c++);
    r->other_mass = sqlite3_column_double(q, c++);
    if (r->with_logprobs) { /* sums to means */
        double n = (double)r->with_logprobs;
        for (int k = 0; k < 4; k++) r->argmax[k] /= n, r->weighted[k] /= n;
        r->other_mass /= n;
    }
    return 0;
}

/* The column expressions shared by both summaries: asked, with a distribution. */
#define LP_ASKED                                                                                \
    " count(arb_request_asks_logprobs(c.request)),"                                             \
    " count(CASE WHEN json_type(c.logprobs, '$.options') = 'object' THEN 1 END),"
#define LP_HAS " json_type(c.logprobs, '$.options') = 'object'"

static arb_status summary(arb_store *s, const char *sql, int pointwise, arb__logprob_row **rows,
                          size_t *n)
{
    lp_walk w = {.pointwise = pointwise};
    *rows = NULL;
    *n = 0;
    arb_status st = arb__store_each_row(s, sql, "the logprobs of the judgments", lp_row, &w);
    if (st) {
        arb__store_logprobs_free(w.rows, w.n);
        return st;
    }
    *rows = w.rows;
    *n = w.n;
    return ARB_OK;
}

arb_status arb__store_pairwise_logprobs(arb_store *s, arb__logprob_row **rows, size_t *n)
{
    static const char sql[] =
        "SELECT p.judge_name, p.protocol, p.candidate, p.baseline, p.template_name, p.options,"
        " count(*)," LP_ASKED
        " total(CASE WHEN" LP_HAS " AND p.model_verdict = 'a' THEN 1 END),"
        " total(CASE WHEN" LP_HAS " AND p.model_verdict = 'b' THEN 1 END),"
        " total(CASE WHEN" LP_HAS " AND p.model_verdict = 'c' THEN 1 END),"
        " total(CASE WHEN" LP_HAS " AND p.model_verdict = 'd' THEN 1 END),"
        " total(json_extract(c.logprobs, CASE p.ord WHEN 0 THEN '$.options.A' ELSE '$.options.B'"
        " END)),"
        " total(json_extract(c.logprobs, CASE p.ord WHEN 0 THEN '$.options.B' ELSE '$.options.A'"
        " END)),"
        " total(json_extract(c.logprobs, '$.options.C')),"
        " total(json_extract(c.logprobs, '$.options.D')),"
        " total(CASE WHEN" LP_HAS " THEN json_extract(c.logprobs, '$.other_mass') END)"
        " FROM pairwise p LEFT JOIN calls c ON c.id = p.call_id"
        " GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6";
    return summary(s, sql, 0, rows, n);
}

arb_status arb__store_pointwise_logprobs(arb_store *s, arb__logprob_row **rows, size_t *n)
{
    /* argmax[0]: the value given (grade, or 1 correct / 0 incorrect); weighted[0]: the
    ** expected grade, or the probability of "correct" */
    static const char sql[] =
        "SELECT w.judge_name, w.protocol, w.kind, w.template_name,"
        " count(*)," LP_ASKED
        " total(CASE WHEN" LP_HAS " THEN w.value END), 0, 0, 0,"
        " total(CASE WHEN" LP_HAS " THEN json_extract(c.logprobs, CASE w.kind WHEN 'grade'"
        " THEN '$.expected' ELSE '$.options.correct' END) END), 0, 0, 0,"
        " total(CASE WHEN" LP_HAS " THEN json_extract(c.logprobs, '$.other_mass') END)"
        " FROM pointwise w LEFT JOIN calls c ON c.id = w.call_id"
        " WHERE w.kind IN ('yesno', 'grade')"
        " GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4";
    return summary(s, sql, 1, rows, n);
}

arb_status arb__store_persona_preferred_logprobs(arb_store *s, arb__logprob_row **rows,
                                                 size_t *n)
{
    /* a row per judge x protocol x category x identity, laid out as a pairwise one: candidate
    ** the category, baseline the identity, template NULL; argmax[0] the share of the calls
    ** preferring the identity's candidate, weighted[0] its mean probability. The consensus
    ** rows of a panel (judge_name the panel's label, not the call's judge) are left out. */
    static const char sql[] =
        "SELECT s.judge_name, s.protocol, p.category, p.identity, NULL, 2,"
        " count(*)," LP_ASKED
        " total(CASE WHEN" LP_HAS " THEN s.value END),"
        " total(CASE WHEN" LP_HAS " THEN 1 - s.value END), 0, 0,"
        " total(json_extract(c.logprobs, CASE s.position WHEN 0 THEN '$.options.candidate_1'"
        " ELSE '$.options.candidate_2' END)),"
        " total(json_extract(c.logprobs, CASE s.position WHEN 0 THEN '$.options.candidate_2'"
        " ELSE '$.options.candidate_1' END)), 0, 0,"
        " total(CASE WHEN" LP_HAS " THEN json_extract(c.logprobs, '$.other_mass') END)"
        " FROM scores s JOIN personas p ON p.id = s.persona_id"
        " JOIN calls c ON c.id = s.call_id AND c.judge_name = s.judge_name"
        " WHERE s.protocol IN ('persona2', 'panel2') AND s.metric = 'preferred'"
        " AND s.value IS NOT NULL"
        " GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4";
    return summary(s, sql, 0, rows, n);
}

void arb__store_logprobs_free(arb__logprob_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].judge);
        free(rows[i].protocol);
        free(rows[i].candidate);
        free(rows[i].baseline);
        free(rows[i].template_name);
    }
    free(rows);
}
