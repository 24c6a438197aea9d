/*
** store_import.c -- storing judgments made elsewhere (arbiter import judgments|fastchat|
** arena-hard): an importer's arb__import_set becomes rows of pairwise and pointwise, with the
** items, answers, families, calls and battles they imply, under the import's source name.
**
** Invariants:
**   - One transaction (a savepoint inside the caller's): a source is replaced whole or not at
**     all. Everything the source brought before goes first, so a re-import of a shorter file
**     leaves no row of the longer one behind.
**   - A judgment is one (protocol, judge, template, options, item, answer shown first, answer
**     shown second, rep); no two sources, nor a source and arbiter's own runs, hold the same
**     one. A row of arbiter's own (source NULL) is never replaced by an import.
**   - Items and answers are shared with arbiter's runs: an import adds what is missing and
**     never changes what another source or a dataset stored (a different answer text is an
**     error, not an update); it deletes neither on re-import.
**   - model_verdict is derived exactly as arbiter's sbs derives it (arb_verdict_to_model).
**   - An imported call's key is a hash of "import", the source and the judgment key, so it
**     can never be taken for the key of a request arbiter sends (a hash of the request).
**
** Not here: reading the sources (import_judgments.c and the readers it lists), the checks on
** one judgment (import_set.c), the battle set itself (battles.c).
*/
#include "store_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define IMPORT_SAVEPOINT "arb_put_import"
#define DEFAULT_TEMPLATE "imported"

/* The statements of one import, prepared once. */
enum {
    Q_DEL_PAIRWISE, Q_DEL_POINTWISE, Q_DEL_CALL, Q_DEL_FAMILIES, Q_DEL_SOURCE, Q_PUT_SOURCE,
    Q_CONFLICT, Q_SCORE_CONFLICT, Q_MAX_SEQ, Q_FIND_ITEM, Q_PUT_ITEM, Q_FIND_ANSWER,
    Q_PUT_ANSWER, Q_PUT_PAIRWISE, Q_PUT_POINTWISE, Q__COUNT
};

static const char *const import_sql[Q__COUNT] = {
    [Q_DEL_PAIRWISE] = "DELETE FROM pairwise_judgments WHERE source = ?1 RETURNING call_id",
    [Q_DEL_POINTWISE] = "DELETE FROM pointwise WHERE source = ?1 RETURNING call_id",
    [Q_DEL_CALL] = "DELETE FROM calls WHERE id = ?1",
    [Q_DEL_FAMILIES] = "DELETE FROM families WHERE source = ?1",
    [Q_DEL_SOURCE] = "DELETE FROM judgment_sources WHERE name = ?1",
    [Q_PUT_SOURCE] = "INSERT INTO judgment_sources(name, kind, path, n_judgments, n_skipped)"
                     " VALUES (?1, ?2, ?3, ?4, ?5)",
    /* the same judgment with the pair written the other way round (candidate and baseline
    ** swapped, order flipped) shows the same answers in the same places */
    [Q_CONFLICT] =
        "SELECT source FROM pairwise WHERE protocol = ?1 AND judge_name = ?2"
        " AND template_name = ?3 AND options = ?4 AND item_id = ?5 AND rep = ?6"
        " AND ((candidate = ?7 AND baseline = ?8 AND ord = ?9)"
        "   OR (candidate = ?8 AND baseline = ?7 AND ord = 1 - ?9)) LIMIT 1",
    [Q_SCORE_CONFLICT] =
        "SELECT source FROM pointwise WHERE protocol = 'pointwise' AND judge_name = ?1"
        " AND kind = ?2 AND template_name = ?3 AND language = '' AND item_id = ?4"
        " AND model = ?5 AND rep = ?6 LIMIT 1",
    [Q_MAX_SEQ] = "SELECT max(seq) FROM items",
    [Q_FIND_ITEM] = "SELECT arb_text(source) FROM items WHERE id = ?1",
    [Q_PUT_ITEM] = "INSERT INTO items(id, seq, question, category, language, source)"
                   " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [Q_FIND_ANSWER] = "SELECT arb_text(answer), arb_text(source) FROM answers"
                     " WHERE item_id = ?1 AND model = ?2",
    [Q_PUT_ANSWER] = "INSERT INTO answers(item_id, model, answer, source) VALUES (?1, ?2, ?3, ?4)"
                     " ON CONFLICT(item_id, model) DO UPDATE SET answer = excluded.answer",
    [Q_PUT_PAIRWISE] =
        "INSERT INTO pairwise(protocol, judge_name, item_id, candidate, baseline, template_name,"
        " options, ord, rep, position_verdict, model_verdict, call_id, source, strength, extra)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    [Q_PUT_POINTWISE] =
        "INSERT INTO pointwise(protocol, judge_name, item_id, model, kind, template_name, rep,"
        " value, call_id, reason, source) VALUES ('pointwise', ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
        " ?9, ?10)",
};

/* Where each name was first said something about in this import, to name both places when
** two of them disagree (answers, families, item fields). */
typedef struct first_seen {
    arb__strtab keys;
    struct {
        const char *value, *where; /* borrowed from the set */
    } *first;                      /* keys.n entries */
    size_t cap;
} first_seen;

/* Records key -> (value, where) unless present. Returns 0 new, 1 present (*value_first and
** *where_first set), -1 out of memory. */
static int seen_claim(first_seen *fs, const char *key, const char *value, const char *where,
                      const char **value_first, const char **where_first)
{
    uint32_t k = arb__strtab_find(&fs->keys, key);
    if (k != UINT32_MAX) {
        *value_first = fs->first[k].value;
        *where_first = fs->first[k].where;
        return 1;
    }
    if (arb__grow(&fs->first, &fs->cap, fs->keys.n + 1, sizeof *fs->first)) return -1;
    k = arb__strtab_intern(&fs->keys, key);
    if (k == UINT32_MAX) return -1;
    fs->first[k].value = value;
    fs->first[k].where = where;
    return 0;
}

static void seen_free(first_seen *fs)
{
    arb__strtab_free(&fs->keys);
    free(fs->first);
}

typedef struct importer {
    arb_store *s;
    const char *source;
    const arb__import_set *set;
    sqlite3_stmt *q[Q__COUNT];
    long long next_seq;
    first_seen answers, families;
    arb_battles *battles;
    arb_import_stats stats;
} importer;

static const char *or_default(const char *s, const char *dflt) { return s ? s : dflt; }

/* Runs q[which] (bound by the caller) to its end and resets it. */
static arb_status run(importer *im, int which, const char *what)
{
    return arb__store_step_done(im->s, im->q[which], what);
}

/* Deletes every row source brought before (see the file comment). Calls go after the rows
** that point at them (foreign keys); the battles are replaced by arb_store_put_battles. */
static arb_status delete_source(importer *im)
{
    long long *calls = NULL;
    size_t n_calls = 0, cap = 0;
    arb_status st = ARB_OK;
    const int dels[2] = {Q_DEL_PAIRWISE, Q_DEL_POINTWISE};
    for (int d = 0; d < 2 && !st; d++) {
        sqlite3_stmt *q = im->q[dels[d]];
        arb__store_bind_text(q, 1, im->source);
        int rc;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            if (sqlite3_column_type(q, 0) == SQLITE_NULL) continue;
            if (arb__grow(&calls, &cap, n_calls + 1, sizeof *calls)) {
                st = arb__store_fail(im->s, ARB_NOMEM, "import: out of memory");
                break;
            }
            calls[n_calls++] = sqlite3_column_int64(q, 0);
        }
        if (!st && rc != SQLITE_DONE)
            st = arb__store_fail_db(im->s, "import: cannot delete the source's earlier rows");
        sqlite3_reset(q);
    }
    for (size_t k = 0; k < n_calls && !st; k++) {
        sqlite3_bind_int64(im->q[Q_DEL_CALL], 1, calls[k]);
        st = run(im, Q_DEL_CALL, "import: cannot delete the source's earlier calls");
    }
    free(calls);
    if (!st) {
        arb__store_bind_text(im->q[Q_DEL_FAMILIES], 1, im->source);
        st = run(im, Q_DEL_FAMILIES, "import: cannot delete the source's earlier families");
    }
    if (!st) {
        arb__store_bind_text(im->q[Q_DEL_SOURCE], 1, im->source);
        st = run(im, Q_DEL_SOURCE, "import: cannot delete the source's earlier record");
    }
    return st;
}

/* Runs q, bound by the caller to look for a row holding the same judgment or grade; when it
** finds one, refuses with "where: what: already judged by arbiter" or "... already imported
** from source \"X\"". q is reset. */
static arb_status refuse_if_held(importer *im, sqlite3_stmt *q, const char *where,
                                 const char *what)
{
    int rc = sqlite3_step(q);
    arb_status st = ARB_OK;
    if (rc == SQLITE_ROW) {
        const char *other = (const char *)sqlite3_column_text(q, 0);
        st = arb__store_fail(im->s, ARB_INVALID, "%s: %s: %s%s%s", or_default(where, "?"), what,
                             other ? "already imported from source \"" : "already judged by "
                                                                        "arbiter",
                             other ? other : "", other ? "\"" : "");
    } else if (rc != SQLITE_DONE) {
        st = arb__store_fail_db(im->s, "import: cannot look for conflicting judgments");
    }
    sqlite3_reset(q);
    return st;
}

/* The judgment j is already held by another source or by arbiter itself (the same answers
** shown in the same places, either way round). */
static arb_status check_conflict(importer *im, const arb__import_judgment *j)
{
    sqlite3_stmt *q = im->q[Q_CONFLICT];
    arb__store_bind_text(q, 1, or_default(j->protocol, "sbs"));
    arb__store_bind_text(q, 2, j->judge);
    arb__store_bind_text(q, 3, or_default(j->template_name, DEFAULT_TEMPLATE));
    sqlite3_bind_int(q, 4, j->options);
    arb__store_bind_text(q, 5, j->item);
    sqlite3_bind_int(q, 6, j->rep);
    arb__store_bind_text(q, 7, j->candidate);
    arb__store_bind_text(q, 8, j->baseline);
    sqlite3_bind_int(q, 9, j->order);
    char *what = arb__sprintf("judge \"%s\" on item \"%s\" (%s shown first, %s second, "
                              "template %s, options %d, rep %d)", j->judge, j->item,
                              j->order == 0 ? j->candidate : j->baseline,
                              j->order == 0 ? j->baseline : j->candidate,
                              or_default(j->template_name, DEFAULT_TEMPLATE), j->options, j->rep);
    arb_status st = what ? refuse_if_held(im, q, j->where, what)
                         : arb__store_fail(im->s, ARB_NOMEM, "import: out of memory");
    free(what);
    return st;
}

/* The same for a grade. */
static arb_status check_score_conflict(importer *im, const arb__import_score *sc)
{
    sqlite3_stmt *q = im->q[Q_SCORE_CONFLICT];
    arb__store_bind_text(q, 1, sc->judge);
    arb__store_bind_text(q, 2, sc->kind);
    arb__store_bind_text(q, 3, or_default(sc->template_name, DEFAULT_TEMPLATE));
    arb__store_bind_text(q, 4, sc->item);
    arb__store_bind_text(q, 5, sc->model);
    sqlite3_bind_int(q, 6, sc->rep);
    char *what = arb__sprintf("judge \"%s\" grading model \"%s\" on item \"%s\" (rep %d)",
                              sc->judge, sc->model, sc->item, sc->rep);
    arb_status st = what ? refuse_if_held(im, q, sc->where, what)
                         : arb__store_fail(im->s, ARB_NOMEM, "import: out of memory");
    free(what);
    return st;
}

/* Adds the item when the store lacks it, after the store's last item (benchmark order of
** first appearance). An item already there is left as it is. */
static arb_status put_item(importer *im, const char *id, const char *question,
                           const char *category, const char *language, const char *where)
{
    sqlite3_stmt *q = im->q[Q_FIND_ITEM];
    arb__store_bind_text(q, 1, id);
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    if (rc == SQLITE_ROW) return ARB_OK;
    if (rc != SQLITE_DONE) return arb__store_fail_db(im->s, "import: cannot look up an item");
    q = im->q[Q_PUT_ITEM];
    arb__store_bind_text(q, 1, id);
    sqlite3_bind_int64(q, 2, im->next_seq);
    arb__store_bind_text(q, 3, question ? question : "");
    arb__store_bind_text(q, 4, category);
    arb__store_bind_text(q, 5, language);
    arb__store_bind_text(q, 6, im->source);
    char what[256];
    snprintf(what, sizeof what, "%s: cannot store item \"%.100s\"", or_default(where, "?"), id);
    arb_status st = run(im, Q_PUT_ITEM, what);
    if (!st) {
        im->next_seq++;
        im->stats.items_added++;
    }
    return st;
}

/* Stores model's answer to item unless the store has it. The same text again is nothing; a
** different text is an error naming this line and the one (or the store's source) that gave
** the first. field names the import field the text came from. */
static arb_status put_answer(importer *im, const char *item, const char *model,
                             const char *answer, const char *field, const char *where)
{
    if (!answer) return ARB_OK;
    char *key = arb__sprintf("%s\x1f%s", item, model);
    if (!key) return arb__store_fail(im->s, ARB_NOMEM, "import: out of memory");
    const char *first_text = NULL, *first_where = NULL;
    int seen = seen_claim(&im->answers, key, answer, where, &first_text, &first_where);
    free(key);
    if (seen < 0) return arb__store_fail(im->s, ARB_NOMEM, "import: out of memory");
    if (seen) {
        if (!strcmp(first_text, answer)) return ARB_OK;
        return arb__store_fail(im->s, ARB_INVALID,
                               "%s: field \"%s\": the answer of model \"%s\" to item \"%s\" "
                               "differs from the one given at %s", or_default(where, "?"),
                               field, model, item, or_default(first_where, "?"));
    }
    sqlite3_stmt *q = im->q[Q_FIND_ANSWER];
    arb__store_bind_text(q, 1, item);
    arb__store_bind_text(q, 2, model);
    int rc = sqlite3_step(q);
    arb_status st = ARB_OK;
    int store_it = 1;
    if (rc == SQLITE_ROW) {
        const char *stored = (const char *)sqlite3_column_text(q, 0);
        const char *from = (const char *)sqlite3_column_text(q, 1);
        /* an answer this source stored before is this source's to change */
        int ours = from && !strcmp(from, im->source);
        store_it = ours && (!stored || strcmp(stored, answer));
        if (!ours && (!stored || strcmp(stored, answer)))
            st = arb__store_fail(im->s, ARB_INVALID,
                                 "%s: field \"%s\": the store already has a different answer of "
                                 "model \"%s\" to item \"%s\" (from %s)", or_default(where, "?"),
                                 field, model, item, from ? from : "a dataset");
    } else if (rc != SQLITE_DONE) {
        st = arb__store_fail_db(im->s, "import: cannot look up an answer");
    }
    sqlite3_reset(q);
    if (st || !store_it) return st;
    q = im->q[Q_PUT_ANSWER];
    arb__store_bind_text(q, 1, item);
    arb__store_bind_text(q, 2, model);
    arb__store_bind_text(q, 3, answer);
    arb__store_bind_text(q, 4, im->source);
    return run(im, Q_PUT_ANSWER, "import: cannot store an answer");
}

/* Records name's family in role; one import may not give one name two families. */
static arb_status put_family(importer *im, const char *name, const char *role,
                             const char *family, const char *where)
{
    if (!family) return ARB_OK;
    char *key = arb__sprintf("%s\x1f%s", role, name);
    if (!key) return arb__store_fail(im->s, ARB_NOMEM, "import: out of memory");
    const char *first_family = NULL, *first_where = NULL;
    int seen = seen_claim(&im->families, key, family, where, &first_family, &first_where);
    free(key);
    if (seen < 0) return arb__store_fail(im->s, ARB_NOMEM, "import: out of memory");
    if (seen) {
        if (!strcmp(first_family, family)) return ARB_OK;
        return arb__store_fail(im->s, ARB_INVALID,
                               "%s: the %s \"%s\" is of family \"%s\" here but of family \"%s\" "
                               "at %s", or_default(where, "?"), role, name, family, first_family,
                               or_default(first_where, "?"));
    }
    return arb__store_put_family(im->s, name, role, family, im->source);
}

/* What a source said about the call itself, kept in extra under the names arbiter export
** writes: the model the request went to, the judge's thinking, tokens (cached and reasoning
** too), latency, attempts and cost (unknown, NULL, unless the source gives it: an import never
** invents a price). A key that is absent or not of its type is left out (it stays in extra as
** it was). */
typedef struct call_usage {
    json_t *extra;        /* owns the strings below */
    const char *model;
    const char *reasoning; /* the judge's thinking, apart from raw (reasoning models) */
    long long prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens;
    double latency_ms, cost_usd;
    int attempts;
    char *logprobs;       /* the verdict token's distribution as exported (an object, or its
                             JSON text in a CSV cell), canonical JSON; NULL when none (owned) */
} call_usage;

/* The number under key: a JSON number, or text that is one whole number (a CSV cell). 0 and
** *out set, or -1 when absent or not a number. */
static int usage_number(json_t *extra, const char *key, double *out)
{
    json_t *v = json_object_get(extra, key);
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    const char *text = json_string_value(v);
    if (!text || !*text) return -1;
    char *end = NULL;
    errno = 0;
    double d = strtod(text, &end);
    if (errno || *end || !isfinite(d)) return -1;
    *out = d;
    return 0;
}

static long long usage_count(json_t *extra, const char *key)
{
    double d;
    if (usage_number(extra, key, &d) || d < 0 || d > 9e15 || d != floor(d)) return -1;
    return (long long)d;
}

static void usage_read(call_usage *u, const char *extra_text)
{
    memset(u, 0, sizeof *u);
    u->extra = extra_text ? json_loads(extra_text, 0, NULL) : NULL;
    json_t *model = json_object_get(u->extra, "model");
    u->model = json_is_string(model) && json_string_length(model) ? json_string_value(model)
                                                                  : NULL;
    u->prompt_tokens = usage_count(u->extra, "prompt_tokens");
    u->completion_tokens = usage_count(u->extra, "completion_tokens");
    if (usage_number(u->extra, "latency_ms", &u->latency_ms) || u->latency_ms < 0)
        u->latency_ms = NAN;
    json_t *reasoning = json_object_get(u->extra, "reasoning");
    u->reasoning = json_is_string(reasoning) && json_string_length(reasoning)
                       ? json_string_value(reasoning)
                       : NULL;
    u->cached_tokens = usage_count(u->extra, "cached_tokens");
    u->reasoning_tokens = usage_count(u->extra, "reasoning_tokens");
    if (usage_number(u->extra, "cost_usd", &u->cost_usd) || u->cost_usd < 0)
        u->cost_usd = NAN; /* unknown */
    long long attempts = usage_count(u->extra, "attempts");
    u->attempts = attempts >= 0 && attempts <= INT_MAX ? (int)attempts : 0;
    json_t *lp = json_object_get(u->extra, "logprobs"), *parsed = NULL;
    if (json_is_string(lp)) lp = parsed = json_loads(json_string_value(lp), 0, NULL);
    if (json_is_object(lp)) u->logprobs = json_dumps(lp, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(parsed);
}

/* The call row of an imported judgment or grade that came with the judge's text or the
** request: ok, content = raw, request as sent (or "{}"), model as the source said (else the
** judge's name), and the tokens, latency and attempts the source gave (extra_text). key_text is
** the judgment's key. *call_id = 0 when there is nothing to store. */
static arb_status put_call(importer *im, const char *key_text, const char *judge, int rep,
                           const char *raw, const char *request, const char *extra_text,
                           long long *call_id)
{
    *call_id = 0;
    if (!raw && !request) return ARB_OK;
    arb__buf b;
    arb__buf_init(&b, 0);
    int bad = arb__buf_append(&b, "import", sizeof "import") ||
              arb__buf_append(&b, im->source, strlen(im->source) + 1) ||
              arb__buf_append(&b, key_text, strlen(key_text));
    char key[33];
    if (!bad) arb__hash_hex(b.data, b.len, key);
    arb__buf_free(&b);
    if (bad) return arb__store_fail(im->s, ARB_NOMEM, "import: out of memory");
    call_usage u;
    usage_read(&u, extra_text);
    arb__call_record rec = {
        .key = key,
        .judge_name = judge,
        .model = u.model ? u.model : judge,
        .request_json = request ? request : "{}",
        .rep = rep,
        .ok = 1,
        .content = raw,
        .attempts = u.attempts,
        .prompt_tokens = u.prompt_tokens,
        .completion_tokens = u.completion_tokens,
        .latency_ms = u.latency_ms,
        .cached_tokens = u.cached_tokens,
        .reasoning_tokens = u.reasoning_tokens,
        .cost_usd = u.cost_usd,
        .reasoning = u.reasoning,
        .logprobs = u.logprobs,
    };
    arb_status st = arb__store_put_call(im->s, &rec, call_id);
    json_decref(u.extra);
    free(u.logprobs);
    return st;
}

/* The battle of one judgment (METHODS §6): i shown first; A -> -1, B -> +1, C -> 0, D -> 0
** both bad; E gives none and is counted as left out. */
static arb_status add_battle(importer *im, const arb__import_judgment *j)
{
    const char *first = j->order == 0 ? j->candidate : j->baseline;
    const char *second = j->order == 0 ? j->baseline : j->candidate;
    arb_status st;
    if (j->position_verdict == 'E') {
        im->stats.battles_left_out++;
        int ordered = strcmp(first, second) < 0;
        st = arb_battles_add_left_out(im->battles, ordered ? first : second,
                                      ordered ? second : first, j->judge, 1);
    } else {
        arb_battle battle = arb_battle_init();
        battle.question = j->item;
        battle.model_i = first;
        battle.model_j = second;
        battle.reviewer = j->judge;
        battle.s = j->position_verdict == 'A' ? -1 : j->position_verdict == 'B' ? 1 : 0;
        battle.both_bad = j->position_verdict == 'D';
        battle.strong = j->strength == 2 && battle.s != 0;
        st = arb_battles_add(im->battles, &battle);
    }
    if (st)
        return arb__store_fail(im->s, st, "%s: cannot make a battle: %s",
                               or_default(j->where, "?"), arb_battles_errmsg(im->battles));
    return ARB_OK;
}

static arb_status put_judgment(importer *im, const arb__import_judgment *j)
{
    arb_status st;
    if ((st = check_conflict(im, j))) return st;
    if ((st = put_item(im, j->item, j->question, j->category, j->language, j->where)) ||
        (st = put_answer(im, j->item, j->candidate, j->candidate_answer, "candidate_answer",
                         j->where)) ||
        (st = put_answer(im, j->item, j->baseline, j->baseline_answer, "baseline_answer",
                         j->where)) ||
        (st = put_family(im, j->judge, "judge", j->judge_family, j->where)) ||
        (st = put_family(im, j->candidate, "model", j->candidate_family, j->where)) ||
        (st = put_family(im, j->baseline, "model", j->baseline_family, j->where)))
        return st;
    char *key = arb__import_judgment_key(j);
    if (!key) return arb__store_fail(im->s, ARB_NOMEM, "import: out of memory");
    long long call_id = 0;
    st = put_call(im, key, j->judge, j->rep, j->raw, j->request, j->extra, &call_id);
    free(key);
    if (st) return st;
    char pv[2] = {j->position_verdict, 0};
    char mv[2] = {arb_verdict_to_model(j->position_verdict, j->order), 0};
    sqlite3_stmt *q = im->q[Q_PUT_PAIRWISE];
    arb__store_bind_text(q, 1, or_default(j->protocol, "sbs"));
    arb__store_bind_text(q, 2, j->judge);
    arb__store_bind_text(q, 3, j->item);
    arb__store_bind_text(q, 4, j->candidate);
    arb__store_bind_text(q, 5, j->baseline);
    arb__store_bind_text(q, 6, or_default(j->template_name, DEFAULT_TEMPLATE));
    sqlite3_bind_int(q, 7, j->options);
    sqlite3_bind_int(q, 8, j->order);
    sqlite3_bind_int(q, 9, j->rep);
    arb__store_bind_text(q, 10, pv);
    arb__store_bind_text(q, 11, mv);
    if (call_id > 0) sqlite3_bind_int64(q, 12, call_id);
    else sqlite3_bind_null(q, 12);
    arb__store_bind_text(q, 13, im->source);
    if (j->strength > 0) sqlite3_bind_int(q, 14, j->strength);
    else sqlite3_bind_null(q, 14);
    arb__store_bind_text(q, 15, or_default(j->extra, "{}"));
    char what[256];
    snprintf(what, sizeof what, "%s: cannot store the judgment", or_default(j->where, "?"));
    int exists = 1; /* the call put just above: checked as the row's trigger did (schema 13) */
    if ((st = arb__store_check_call(im->s, call_id, &exists))) return st;
    if (!exists)
        return arb__store_fail(im->s, ARB_DB, "%s: no such call %lld", what, call_id);
    if ((st = run(im, Q_PUT_PAIRWISE, what))) return st;
    im->stats.judgments++;
    return add_battle(im, j);
}

static arb_status put_score(importer *im, const arb__import_score *sc)
{
    arb_status st;
    if ((st = check_score_conflict(im, sc)) ||
        (st = put_item(im, sc->item, sc->question, sc->category, NULL, sc->where)) ||
        (st = put_answer(im, sc->item, sc->model, sc->answer, "answer", sc->where)) ||
        (st = put_family(im, sc->judge, "judge", sc->judge_family, sc->where)) ||
        (st = put_family(im, sc->model, "model", sc->model_family, sc->where)))
        return st;
    char *key = arb__sprintf("grade\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%d", sc->judge, sc->item,
                             sc->model, sc->kind, or_default(sc->template_name, ""), sc->rep);
    if (!key) return arb__store_fail(im->s, ARB_NOMEM, "import: out of memory");
    long long call_id = 0;
    st = put_call(im, key, sc->judge, sc->rep, sc->raw, NULL, sc->extra, &call_id);
    free(key);
    if (st) return st;
    sqlite3_stmt *q = im->q[Q_PUT_POINTWISE];
    arb__store_bind_text(q, 1, sc->judge);
    arb__store_bind_text(q, 2, sc->item);
    arb__store_bind_text(q, 3, sc->model);
    arb__store_bind_text(q, 4, sc->kind);
    arb__store_bind_text(q, 5, or_default(sc->template_name, DEFAULT_TEMPLATE));
    sqlite3_bind_int(q, 6, sc->rep);
    if (sc->value < 0) sqlite3_bind_null(q, 7);
    else sqlite3_bind_int(q, 7, sc->value);
    if (call_id > 0) sqlite3_bind_int64(q, 8, call_id);
    else sqlite3_bind_null(q, 8);
    arb__store_bind_text(q, 9, sc->value < 0 ? or_default(sc->reason, "no valid verdict") : NULL);
    arb__store_bind_text(q, 10, im->source);
    char what[256];
    snprintf(what, sizeof what, "%s: cannot store the grade", or_default(sc->where, "?"));
    if ((st = run(im, Q_PUT_POINTWISE, what))) return st;
    im->stats.scores++;
    return ARB_OK;
}

/* The whole import once the statements are ready and the transaction open. */
static arb_status import_all(importer *im, const char *kind, const char *path)
{
    arb_status st = delete_source(im);
    if (st) return st;
    size_t n = arb__import_set_count(im->set), n_scores = arb__import_set_score_count(im->set);
    sqlite3_stmt *q = im->q[Q_PUT_SOURCE];
    arb__store_bind_text(q, 1, im->source);
    arb__store_bind_text(q, 2, kind);
    arb__store_bind_text(q, 3, path);
    sqlite3_bind_int64(q, 4, (sqlite3_int64)(n + n_scores));
    sqlite3_bind_int64(q, 5, (sqlite3_int64)arb__import_set_skipped(im->set));
    if ((st = run(im, Q_PUT_SOURCE, "import: cannot record the source"))) return st;

    q = im->q[Q_MAX_SEQ];
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        im->next_seq = sqlite3_column_type(q, 0) == SQLITE_NULL ? 0
                                                                : sqlite3_column_int64(q, 0) + 1;
    sqlite3_reset(q);
    if (rc != SQLITE_ROW) return arb__store_fail_db(im->s, "import: cannot read the items");

    for (size_t k = 0; k < n && !st; k++) {
        arb__import_judgment j = arb__import_set_at(im->set, k);
        st = put_judgment(im, &j);
    }
    for (size_t k = 0; k < n_scores && !st; k++) {
        arb__import_score sc = arb__import_set_score_at(im->set, k);
        st = put_score(im, &sc);
    }
    /* battles the source gives without a judgment (FastChat single-graded pairs) come last */
    const arb_battles *own = arb__import_set_own_battles(im->set);
    if (!st && own) {
        if ((st = arb__battles_append(im->battles, own)))
            arb__store_fail(im->s, st, "import: out of memory");
        else
            im->stats.battles_left_out += arb_battles_skipped(own);
    }
    if (!st) st = arb_store_put_battles(im->s, im->source, im->battles);
    if (!st) im->stats.battles = arb_battles_count(im->battles);
    im->stats.skipped = arb__import_set_skipped(im->set);
    return st;
}

arb_status arb__store_put_import(arb_store *s, const char *source, const char *kind,
                                 const char *path, const arb__import_set *set,
                                 arb_import_stats *stats)
{
    if (stats) memset(stats, 0, sizeof *stats);
    if (!s) return ARB_INVALID;
    if (!source || !*source || !kind || !*kind || !path || !set)
        return arb__store_fail(s, ARB_INVALID, "import: need a source name, a kind, a path "
                               "and the judgments");
    sqlite3 *db = arb__store_conn(s);
    importer im;
    memset(&im, 0, sizeof im);
    im.s = s;
    im.source = source;
    im.set = set;
    arb_status st = ARB_OK;
    if (!(im.battles = arb_battles_create()))
        return arb__store_fail(s, ARB_NOMEM, "import: out of memory");
    for (int k = 0; k < Q__COUNT && !st; k++)
        if (sqlite3_prepare_v2(db, import_sql[k], -1, &im.q[k], NULL) != SQLITE_OK)
            st = arb__store_fail_db(s, "import: cannot prepare a statement");
    /* a caller already in a transaction gets a savepoint: a refused import leaves no trace and
    ** the caller's transaction stays theirs to finish */
    int own_tx = sqlite3_get_autocommit(db), in_tx = 0;
    if (!st) {
        if (own_tx) st = arb__store_begin(s);
        else if (sqlite3_exec(db, "SAVEPOINT " IMPORT_SAVEPOINT, NULL, NULL, NULL) != SQLITE_OK)
            st = arb__store_fail_db(s, "import: cannot start a savepoint");
        in_tx = !st;
    }
    if (!st) st = import_all(&im, kind, path);
    if (in_tx) {
        if (!st) {
            if (own_tx) st = arb__store_commit(s);
            else if (sqlite3_exec(db, "RELEASE " IMPORT_SAVEPOINT, NULL, NULL, NULL) != SQLITE_OK)
                st = arb__store_fail_db(s, "import: cannot release the savepoint");
        }
        if (st) {
            if (own_tx) arb__store_rollback(s);
            else sqlite3_exec(db, "ROLLBACK TO " IMPORT_SAVEPOINT "; RELEASE " IMPORT_SAVEPOINT,
                              NULL, NULL, NULL);
        }
    }
    for (int k = 0; k < Q__COUNT; k++) sqlite3_finalize(im.q[k]);
    seen_free(&im.answers);
    seen_free(&im.families);
    arb_battles_destroy(im.battles);
    if (!st && stats) *stats = im.stats;
    return st;
}
