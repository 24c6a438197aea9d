/*
** store_resume.c -- what a rerun reads to decide, in one query instead of one per call, which
** judgments are already recorded (resume.c holds them in memory; the executor skips them).
** Reads pairwise rows joined with the key of the successful call each one was made from.
** Also the plan notes (README "Fast resume and bounded memory"): a finished sbs run records in
** its stats the fingerprint of its plan and a digest of what it left in the store (its
** judgments, every item and answer), so that a rerun of the same plan on an unchanged store
** can say "nothing to send" without reading its inputs; and the state a debate, discuss or
** persona plan notes (arb__store_plan_state: its dialogues and turns, pairwise rows or scores,
** with their calls' replies).
*/
#include "store_internal.h"

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* A pass over tens of megabytes, read once, goes through a small page cache that recycles its
** pages, rather than filling the connection's 64 MiB one fresh allocation (and page fault) at
** a time, which cost about four times the reading itself. Returns the size to restore with
** small_cache_end (0: left as it was). */
static int small_cache_begin(arb_store *s)
{
    sqlite3 *db = arb__store_conn(s);
    sqlite3_stmt *q = NULL;
    int cache_size = 0;
    if (sqlite3_prepare_v2(db, "PRAGMA cache_size", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        cache_size = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    if (cache_size) sqlite3_exec(db, "PRAGMA cache_size = -2048", NULL, NULL, NULL);
    return cache_size;
}

static void small_cache_end(arb_store *s, int cache_size)
{
    if (!cache_size) return;
    char restore[64];
    snprintf(restore, sizeof restore, "PRAGMA cache_size = %d", cache_size);
    sqlite3_exec(arb__store_conn(s), restore, NULL, NULL, NULL);
}

/* See internal.h. */
arb_status arb__store_each_recorded_pairwise(arb_store *s, const char *protocol,
                                             const char *template_name, int options,
                                             arb__recorded_pairwise_fn fn, void *ud)
{
    /* Only rows exactly as the protocol's done callback writes them: arbiter's own (no import
    ** source, strength or extra), made from a call that holds a reply (ok = 1). */
    static const char sql[] =
        "SELECT p.judge_name, p.candidate, p.baseline, p.item_id, p.rep, p.ord,"
        " p.position_verdict, c.key, c.content"
        " FROM pairwise p JOIN calls c ON c.id = p.call_id"
        " WHERE p.protocol = ?1 AND p.template_name = ?2 AND p.options = ?3"
        " AND p.source IS NULL AND p.strength IS NULL AND p.extra = '{}' AND c.ok = 1";
    if (!protocol || !template_name || !fn)
        return arb__store_fail(s, ARB_INVALID, "each_recorded_pairwise: bad arguments");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read the recorded judgments");
    arb__store_bind_text(q, 1, protocol);
    arb__store_bind_text(q, 2, template_name);
    sqlite3_bind_int(q, 3, options);
    int cache_size = small_cache_begin(s);
    arb_status st = ARB_OK;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *pv = (const char *)sqlite3_column_text(q, 6);
        char key[2 * ARB__CALL_KEY_BYTES + 1];
        arb__recorded_pairwise row = {
            .judge_name = (const char *)sqlite3_column_text(q, 0),
            .candidate = (const char *)sqlite3_column_text(q, 1),
            .baseline = (const char *)sqlite3_column_text(q, 2),
            .item_id = (const char *)sqlite3_column_text(q, 3),
            .rep = sqlite3_column_int(q, 4),
            .order = sqlite3_column_int(q, 5),
            .position_verdict = pv && *pv ? *pv : 'E',
            .call_key = arb__store_column_key(q, 7, key),
            .content = (const char *)sqlite3_column_text(q, 8),
        };
        if (!row.judge_name || !row.candidate || !row.baseline || !row.item_id || !row.call_key)
            continue;
        if (fn(ud, &row)) {
            st = arb__store_fail(s, ARB_NOMEM, "out of memory");
            break;
        }
    }
    if (!st && rc != SQLITE_DONE) st = arb__store_fail_db(s, "cannot read the recorded judgments");
    sqlite3_finalize(q);
    small_cache_end(s, cache_size);
    return st;
}

/* ---- plan notes: what a finished run leaves for a rerun's quick check ---------------------- */

/* A digest of rows in any order (arb_rows_digest, an aggregate SQL function private to this
** file): each row's values serialised (type, then value; texts and blobs length-prefixed, so
** NULL, '' and 0 differ and no two rows run together) and hashed with XXH3-128; the hashes are
** added modulo 2^128, so the result does not depend on the order SQLite visits the rows in
** (no ORDER BY, no sorter) and a changed, added or removed row changes it. Run inside SQLite,
** one call per row: the column accessors of a result row (type, bytes, text: ~60 instructions
** each, and a step per row) cost as much as reading the rows (callgrind, 2026-11-28). */
typedef struct rows_digest {
    uint64_t low, high; /* the sum of the rows' hashes */
    arb__buf row;       /* the row being serialised */
    int oom;
} rows_digest;

/* One value of a row as the digest serialises it: its type, then (not NULL) the integer or the
** length, then a text's or blob's bytes (body; NULL for a number). Returns the end of what it
** wrote. */
static char *row_value(char *o, int type, sqlite3_int64 n, const void *body)
{
    *o++ = (char)(unsigned char)type;
    if (type == SQLITE_NULL) return o;
    memcpy(o, &n, sizeof n);
    o += sizeof n;
    if (body) {
        memcpy(o, body, (size_t)n);
        o += n;
    }
    return o;
}

/* Adds the hash of a serialised row to the sum low, high (modulo 2^128). */
static void sum_row(uint64_t *low, uint64_t *high, const char *row, size_t len)
{
    XXH128_hash_t h = XXH3_128bits(row, len);
    uint64_t sum = *low + h.low64;
    *high += h.high64 + (sum < *low);
    *low = sum;
}

/* The sum as the digest's input: 16 bytes, low then high, little-endian. */
static void sum_bytes(uint64_t low, uint64_t high, unsigned char out[16])
{
    for (int i = 0; i < 8; i++) {
        out[i] = (unsigned char)(low >> (8 * i));
        out[8 + i] = (unsigned char)(high >> (8 * i));
    }
}

static void rows_digest_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    rows_digest *d = sqlite3_aggregate_context(ctx, sizeof *d);
    if (!d) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    if (!d->row.cap) arb__buf_init(&d->row, 0);
    arb__buf_reset(&d->row);
    for (int c = 0; c < argc && !d->oom; c++) {
        sqlite3_value *v = argv[c];
        int type = sqlite3_value_type(v);
        const void *p = NULL;
        sqlite3_int64 n = 0; /* the integer, or the length of a text or blob */
        double real = 0;
        if (type == SQLITE_INTEGER) {
            n = sqlite3_value_int64(v);
        } else if (type == SQLITE_FLOAT) {
            real = sqlite3_value_double(v);
            memcpy(&n, &real, sizeof n);
        } else if (type != SQLITE_NULL) {
            p = sqlite3_value_blob(v); /* a text's bytes as stored, no conversion */
            n = sqlite3_value_bytes(v);
        }
        size_t body = p ? (size_t)n : 0;
        /* the buffer grows only for a row longer than any before it (a call per column was
        ** ~15% of the digest's own instructions) */
        if (d->row.cap - d->row.len <= 1 + sizeof n + body &&
            arb__buf_reserve(&d->row, 1 + sizeof n + body)) {
            d->oom = 1;
            break;
        }
        char *o = row_value(d->row.data + d->row.len, type, n, body ? p : NULL);
        d->row.len = (size_t)(o - d->row.data);
    }
    if (d->oom) return;
    sum_row(&d->low, &d->high, d->row.data, d->row.len);
}

/* See store_internal.h. The row is serialised as judgments_sql's arb_rows_digest arguments
** would be (test_plan_state_tallied_is_the_scanned checks that the sums agree). */
void arb__store_tally_judgment(arb__rows_tally *t, const char *item_id, int rep, int ord,
                               char position_verdict, long long call_id,
                               const unsigned char *key, const char *content,
                               size_t content_len)
{
    size_t item_len = strlen(item_id);
    size_t need = 7 * (1 + sizeof(sqlite3_int64)) + item_len + 1 + ARB__CALL_KEY_BYTES +
                  (content ? content_len : 0);
    char stack[1024];
    char *row = need <= sizeof stack ? stack : malloc(need);
    if (!row) {
        t->broken = 1;
        return;
    }
    char *o = row;
    o = row_value(o, SQLITE_TEXT, (sqlite3_int64)item_len, item_id);
    o = row_value(o, SQLITE_INTEGER, rep, NULL);
    o = row_value(o, SQLITE_INTEGER, ord, NULL);
    o = row_value(o, SQLITE_TEXT, 1, &position_verdict);
    o = call_id > 0 ? row_value(o, SQLITE_INTEGER, call_id, NULL) : row_value(o, SQLITE_NULL, 0, NULL);
    o = key ? row_value(o, SQLITE_BLOB, ARB__CALL_KEY_BYTES, key) : row_value(o, SQLITE_NULL, 0, NULL);
    o = key && content ? row_value(o, SQLITE_TEXT, (sqlite3_int64)content_len, content)
                       : row_value(o, SQLITE_NULL, 0, NULL);
    sum_row(&t->low, &t->high, row, (size_t)(o - row));
    if (row != stack) free(row);
    t->rows++;
    if (key) t->with_key++;
}

/* The sum as 16 bytes (low then high, little-endian: the digest's input), or an error. */
static void rows_digest_final(sqlite3_context *ctx)
{
    rows_digest *d = sqlite3_aggregate_context(ctx, 0);
    rows_digest none = {0};
    if (!d) d = &none; /* no row */
    if (d->oom) {
        sqlite3_result_error_nomem(ctx);
    } else {
        unsigned char out[16];
        sum_bytes(d->low, d->high, out);
        sqlite3_result_blob(ctx, out, sizeof out, SQLITE_TRANSIENT);
    }
    if (d->row.cap) arb__buf_free(&d->row);
}

/* Adds to h the digest of the rows of sql (its parameters bound by bind, when not NULL): sql
** selects arb_rows_digest(...) and, when with_key is not NULL, a count added to *with_key. */
static arb_status hash_rows(arb_store *s, const char *sql, XXH3_state_t *h,
                            void (*bind)(sqlite3_stmt *q, const void *ud), const void *ud,
                            size_t *with_key)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read the store's state for a rerun");
    if (bind) bind(q, ud);
    arb_status st = ARB_OK;
    int rc = sqlite3_step(q);
    const void *digest = rc == SQLITE_ROW ? sqlite3_column_blob(q, 0) : NULL;
    if (digest && sqlite3_column_bytes(q, 0) == 16) {
        XXH3_128bits_update(h, digest, 16);
        if (with_key) *with_key += (size_t)sqlite3_column_int64(q, 1);
    } else {
        st = rc == SQLITE_NOMEM || sqlite3_errcode(arb__store_conn(s)) == SQLITE_NOMEM
                 ? arb__store_fail(s, ARB_NOMEM, "out of memory")
                 : arb__store_fail_db(s, "cannot read the store's state for a rerun");
    }
    sqlite3_finalize(q);
    return st;
}

/* Every row of items (with its rowid: a run upserts them only when they differ, so an unchanged
** dataset keeps its rowids) and of answers (no rowid since schema 15; the digest sums the rows'
** hashes, so their order does not matter), as every plan's state digests them. */
static const char items_sql[] =
    "SELECT arb_rows_digest(rowid, id, seq, question, reference, category, language, grp,"
    " extra, source) FROM items";
static const char answers_sql[] =
    "SELECT arb_rows_digest(item_id, model, answer, extra, source) FROM answers";

/* Starts a plan state's digest: the SQL function that sums rows' hashes, the hash state, a small
** page cache (small_cache_begin, which digest_end undoes). */
static arb_status digest_begin(arb_store *s, XXH3_state_t *h, int *cache_size)
{
    if (sqlite3_create_function(arb__store_conn(s), "arb_rows_digest", -1,
                                SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL, NULL, rows_digest_step,
                                rows_digest_final) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read the store's state for a rerun");
    XXH3_INITSTATE(h);
    XXH3_128bits_reset(h);
    *cache_size = small_cache_begin(s);
    return ARB_OK;
}

/* Ends it with every plan's items and answers (unless st already failed), and writes out's
** digest. */
static arb_status digest_end(arb_store *s, XXH3_state_t *h, int cache_size, arb_status st,
                             arb__plan_state *out)
{
    if (!st) st = hash_rows(s, items_sql, h, NULL, NULL, NULL);
    if (!st) st = hash_rows(s, answers_sql, h, NULL, NULL, NULL);
    small_cache_end(s, cache_size);
    if (st) return st;
    XXH128_hash_t digest = XXH3_128bits_digest(h);
    arb__hash128_hex(digest.high64, digest.low64, out->digest);
    return ARB_OK;
}

typedef struct plan_coords {
    const arb__sbs_plan_key *key;
    const char *judge_name;
} plan_coords;

static void bind_plan(sqlite3_stmt *q, const void *ud)
{
    const plan_coords *c = ud;
    arb__store_bind_text(q, 1, c->judge_name);
    arb__store_bind_text(q, 2, c->key->candidate);
    arb__store_bind_text(q, 3, c->key->baseline);
    arb__store_bind_text(q, 4, c->key->template_name);
    sqlite3_bind_int(q, 5, c->key->options);
    sqlite3_bind_int(q, 6, c->key->reps);
}

/* See internal.h. */
arb_status arb__store_sbs_plan_state(arb_store *s, const arb__sbs_plan_key *key,
                                     arb__plan_state *out)
{
    return arb__store_sbs_plan_state_tallied(s, key, NULL, out);
}

/* See internal.h. */
arb_status arb__store_sbs_plan_state_tallied(arb_store *s, const arb__sbs_plan_key *key,
                                             const arb__rows_tally *tallies,
                                             arb__plan_state *out)
{
    /* The judgments: rows as sbs writes them (as arb__store_each_recorded_pairwise reads
    ** them), with the key and the reply of their call when it holds one (the full check
    ** parses a stored reply again: a reply edited in the store changes the judgment it
    ** gives, so it must change the digest; pairwise rows have no row id
    ** since schema 13: their primary key columns are bound or hashed). Items: every row with
    ** its rowid (a run upserts them only when they differ, so an unchanged dataset keeps its
    ** rowids); answers: every row (no rowid since schema 15; the digest sums the rows' hashes,
    ** so their order does not matter). */
    static const char judgments_sql[] =
        "SELECT arb_rows_digest(p.item_id, p.rep, p.ord, p.position_verdict, p.call_id, c.key,"
        " c.content),"
        " count(c.key)"
        " FROM pairwise p LEFT JOIN calls c ON c.id = p.call_id AND c.ok = 1"
        " WHERE p.protocol = 'sbs' AND p.judge_name = ?1 AND p.candidate = ?2"
        " AND p.baseline = ?3 AND p.template_name = ?4 AND p.options = ?5 AND p.rep < ?6"
        " AND p.source IS NULL AND p.strength IS NULL AND p.extra = '{}'";
    memset(out, 0, sizeof *out);
    if (!key || !key->candidate || !key->baseline || !key->template_name || !key->judge_names)
        return arb__store_fail(s, ARB_INVALID, "sbs_plan_state: bad arguments");
    XXH3_state_t h;
    int cache_size = 0;
    arb_status st = digest_begin(s, &h, &cache_size);
    if (st) return st;
    for (size_t j = 0; !st && j < key->n_judges; j++) {
        plan_coords c = {key, key->judge_names[j]};
        XXH3_128bits_update(&h, c.judge_name, strlen(c.judge_name) + 1);
        const arb__rows_tally *t = tallies ? &tallies[j] : NULL;
        if (t && !t->broken && t->rows) { /* the writer's sum: the same 16 bytes (hash_rows) */
            unsigned char sum[16];
            sum_bytes(t->low, t->high, sum);
            XXH3_128bits_update(&h, sum, sizeof sum);
            out->judgments += t->with_key;
            continue;
        }
        st = hash_rows(s, judgments_sql, &h, bind_plan, &c, &out->judgments);
    }
    return digest_end(s, &h, cache_size, st, out);
}

static void bind_name(sqlite3_stmt *q, const void *ud) { arb__store_bind_text(q, 1, ud); }

/* See internal.h. */
arb_status arb__store_plan_state(arb_store *s, const arb__plan_scope *scope,
                                 arb__plan_state *out)
{
    /* Every column a rerun that checks each call would write or read, but not when rows were
    ** written (created_at, judged_at, scored_at) nor which run wrote a dialogue: the outcome
    ** and reply of each turn's call too (a reply edited in the store changes the verdict and
    ** the later turns' requests). The dialogues apart from their turns: their JSON columns are
    ** not read again for every turn. */
    static const char dialogues_sql[] =
        "SELECT arb_rows_digest(id, key, item_id, answer1, answer2, participants, config, rep,"
        " final_verdict, status) FROM dialogues WHERE kind = ?1";
    static const char turns_sql[] =
        "SELECT arb_rows_digest(t.dialogue_id, t.turn, t.speaker, t.role, t.call_id, t.verdict,"
        " c.key, c.ok, c.content), count(c.key)"
        " FROM dialogues d JOIN dialogue_turns t ON t.dialogue_id = d.id"
        " LEFT JOIN calls c ON c.id = t.call_id WHERE d.kind = ?1";
    static const char pairwise_sql[] =
        "SELECT arb_rows_digest(judge_name, item_id, candidate, baseline, template_name,"
        " options, rep, ord, position_verdict, model_verdict, call_id, source, strength,"
        " extra) FROM pairwise WHERE protocol = ?1";
    static const char scores_sql[] =
        "SELECT arb_rows_digest(w.id, w.protocol, w.judge_name, w.item_id, w.subject,"
        " w.persona_id, w.position, w.round, w.metric, w.value, w.call_id, w.reason, c.key,"
        " c.ok, c.content), count(c.key)"
        " FROM scores w LEFT JOIN calls c ON c.id = w.call_id";
    static const char attributions_sql[] =
        "SELECT arb_rows_digest(call_id, position, persona_id, item_id, response, label)"
        " FROM persona_attributions";
    static const char personas_sql[] =
        "SELECT arb_rows_digest(id, category, identity) FROM personas";
    memset(out, 0, sizeof *out);
    XXH3_state_t h;
    int cache_size = 0;
    arb_status st = digest_begin(s, &h, &cache_size);
    if (st) return st;
    if (scope->dialogue_kind)
        st = hash_rows(s, dialogues_sql, &h, bind_name, scope->dialogue_kind, NULL);
    if (!st && scope->dialogue_kind)
        st = hash_rows(s, turns_sql, &h, bind_name, scope->dialogue_kind, &out->judgments);
    if (!st && scope->pairwise_protocol)
        st = hash_rows(s, pairwise_sql, &h, bind_name, scope->pairwise_protocol, NULL);
    if (!st && scope->persona) st = hash_rows(s, scores_sql, &h, NULL, NULL, &out->judgments);
    if (!st && scope->persona) st = hash_rows(s, attributions_sql, &h, NULL, NULL, NULL);
    if (!st && scope->persona) st = hash_rows(s, personas_sql, &h, NULL, NULL, NULL);
    return digest_end(s, &h, cache_size, st, out);
}

/* See internal.h. */
arb_status arb__store_run_set_plan(arb_store *s, long long run_id, const arb__plan_note *note)
{
    static const char sql[] =
        "UPDATE runs SET stats = json_set(coalesce(stats, '{}'), '$.plan', json(?2)) WHERE id = ?1";
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "fingerprint", note->fingerprint,
                          "state", note->state.digest, "judgments",
                          (json_int_t)note->state.judgments, "invalid",
                          (json_int_t)note->invalid, "planned", (json_int_t)note->planned,
                          "n_items", (json_int_t)note->n_items);
    /* only a plan with calls it did not need (a discussion that ended early) says so */
    if (o && note->skipped &&
        json_object_set_new(o, "skipped", json_integer((json_int_t)note->skipped))) {
        json_decref(o);
        o = NULL;
    }
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!text) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    sqlite3_stmt *q = NULL;
    arb_status st = ARB_OK;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK) {
        st = arb__store_fail_db(s, "cannot record the run's plan");
    } else {
        sqlite3_bind_int64(q, 1, run_id);
        arb__store_bind_text(q, 2, text);
        st = arb__store_step_done(s, q, "cannot record the run's plan");
    }
    sqlite3_finalize(q);
    free(text);
    return st;
}

/* See internal.h. */
arb_status arb__store_run_overlapped(arb_store *s, long long run_id, int *overlapped)
{
    static const char sql[] =
        "SELECT count(*) FROM runs o, runs r WHERE r.id = ?1 AND o.id <> r.id"
        " AND (o.id > r.id OR o.finished_at >= r.started_at)";
    *overlapped = 0;
    sqlite3_stmt *q = NULL;
    arb_status st = ARB_OK;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK) {
        st = arb__store_fail_db(s, "cannot read the store's runs");
    } else {
        sqlite3_bind_int64(q, 1, run_id);
        if (sqlite3_step(q) == SQLITE_ROW)
            *overlapped = sqlite3_column_int64(q, 0) > 0;
        else
            st = arb__store_fail_db(s, "cannot read the store's runs");
    }
    sqlite3_finalize(q);
    return st;
}

/* See internal.h. */
arb_status arb__store_find_plan(arb_store *s, const char *protocol, const char *fingerprint,
                                long long *run_id, arb__plan_note *note)
{
    static const char sql[] =
        "SELECT id, json_extract(stats, '$.plan') FROM runs"
        " WHERE protocol = ?2 AND status = 'finished'"
        " AND json_extract(stats, '$.plan.fingerprint') = ?1 ORDER BY id DESC LIMIT 1";
    *run_id = 0;
    memset(note, 0, sizeof *note);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read the recorded runs");
    arb__store_bind_text(q, 1, fingerprint);
    arb__store_bind_text(q, 2, protocol);
    int rc = sqlite3_step(q);
    arb_status st = ARB_OK;
    if (rc == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(q, 1);
        json_t *o = text ? json_loads(text, 0, NULL) : NULL;
        const char *fp = json_string_value(json_object_get(o, "fingerprint"));
        const char *state = json_string_value(json_object_get(o, "state"));
        json_int_t judgments = json_integer_value(json_object_get(o, "judgments"));
        json_int_t invalid = json_integer_value(json_object_get(o, "invalid"));
        json_int_t planned = json_integer_value(json_object_get(o, "planned"));
        json_int_t n_items = json_integer_value(json_object_get(o, "n_items"));
        json_int_t skipped = json_integer_value(json_object_get(o, "skipped")); /* 0: absent */
        /* a note written otherwise (by hand, or by another version) is no note */
        if (fp && state && strlen(fp) == 32 && strlen(state) == 32 && judgments > 0 &&
            invalid >= 0 && invalid <= planned && planned > 0 && n_items > 0 &&
            skipped >= 0 && skipped <= planned) {
            memcpy(note->fingerprint, fp, 33);
            memcpy(note->state.digest, state, 33);
            note->state.judgments = (size_t)judgments;
            note->invalid = (size_t)invalid;
            note->planned = (size_t)planned;
            note->n_items = (size_t)n_items;
            note->skipped = (size_t)skipped;
            *run_id = sqlite3_column_int64(q, 0);
        }
        json_decref(o);
    } else if (rc != SQLITE_DONE) {
        st = arb__store_fail_db(s, "cannot read the recorded runs");
    }
    sqlite3_finalize(q);
    return st;
}
