/*
** store_transcripts.c -- dialogues (debate §2.5, peer discussion §7) written out as JSONL: one line
** per dialogue with its set-up, outcome and every turn's speaker, role, verdict, the messages
** sent and the reply, all from the store (the prompt of a turn is its call's request).
**
** A line: {"dialogue", "kind", "item", "answer1", "answer2", "participants", "config", "rep",
** "status", "final_verdict", "turns": [{"turn", "speaker", "role", "verdict", "call_id",
** "model", "messages": [{"role", "content"}...], "reply", "error", "reasoning"}]} (reasoning:
** the judge's thinking, kept apart from the reply). Missing values are null. The SQL is the
** store's: this file is the store's transcript export.
** Not here: which turns a protocol makes (debate.c, discuss.c).
*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static const char transcripts_sql[] =
    "SELECT d.id, d.kind, d.item_id, d.answer1, d.answer2, d.participants, d.config, d.rep,"
    "       d.status, d.final_verdict, t.turn, t.speaker, t.role, t.verdict, t.call_id,"
    "       c.model, json_extract(c.request, '$.messages'), c.content, c.error, c.reasoning"
    "  FROM dialogues d"
    "  LEFT JOIN dialogue_turns t ON t.dialogue_id = d.id"
    "  LEFT JOIN calls c ON c.id = t.call_id"
    " ORDER BY d.id, t.turn";

/* The column as a JSON string (NULL: null), or parsed JSON for the columns holding JSON. */
static json_t *column_json(sqlite3_stmt *q, int col, int parse)
{
    if (sqlite3_column_type(q, col) == SQLITE_NULL) return json_null();
    const char *text = (const char *)sqlite3_column_text(q, col);
    size_t len = (size_t)sqlite3_column_bytes(q, col);
    if (parse) {
        json_t *v = json_loadb(text, len, 0, NULL);
        return v ? v : json_stringn(text, len);
    }
    return arb__json_name(text ? text : ""); /* invalid UTF-8 would make json_string fail */
}

static json_t *column_int(sqlite3_stmt *q, int col)
{
    return sqlite3_column_type(q, col) == SQLITE_NULL ? json_null()
                                                      : json_integer(sqlite3_column_int64(q, col));
}

/* Writes and frees the dialogue object. Returns 0, or -1 when writing failed. */
static int flush_dialogue(json_t *obj, FILE *out)
{
    int bad = json_dumpf(obj, out, JSON_COMPACT | JSON_PRESERVE_ORDER) || fputc('\n', out) == EOF;
    json_decref(obj);
    return bad ? -1 : 0;
}

arb_status arb__store_export_transcripts(arb_store *s, FILE *out)
{
    sqlite3 *db = arb__store_db(s);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, transcripts_sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail(s, ARB_DB, "export: cannot read dialogues: %s", sqlite3_errmsg(db));
    arb_status st = ARB_OK;
    json_t *dialogue = NULL, *turns = NULL;
    long long current = -1;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        long long id = sqlite3_column_int64(q, 0);
        if (id != current) {
            if (dialogue && flush_dialogue(dialogue, out)) {
                dialogue = NULL;
                st = arb__store_fail(s, ARB_IO, "export: write failed");
                goto done;
            }
            current = id;
            dialogue = json_object();
            turns = json_array();
            static const char *const keys[] = {"kind", "item", "answer1", "answer2",
                                               "participants", "config"};
            int bad = !dialogue || !turns || arb__json_set(dialogue, "dialogue", json_integer(id));
            for (int k = 0; k < 6 && !bad; k++)
                bad = arb__json_set(dialogue, keys[k], column_json(q, 1 + k, k >= 4));
            bad = bad || arb__json_set(dialogue, "rep", column_int(q, 7)) ||
                  arb__json_set(dialogue, "status", column_json(q, 8, 0)) ||
                  arb__json_set(dialogue, "final_verdict", column_json(q, 9, 0)) ||
                  json_object_set(dialogue, "turns", turns);
            json_decref(turns); /* the dialogue holds it */
            if (bad) goto nomem;
        }
        if (sqlite3_column_type(q, 10) == SQLITE_NULL) continue; /* no turn yet */
        json_t *turn = json_object();
        int bad = !turn || arb__json_set(turn, "turn", column_int(q, 10)) ||
                  arb__json_set(turn, "speaker", column_json(q, 11, 0)) ||
                  arb__json_set(turn, "role", column_json(q, 12, 0)) ||
                  arb__json_set(turn, "verdict", column_json(q, 13, 0)) ||
                  arb__json_set(turn, "call_id", column_int(q, 14)) ||
                  arb__json_set(turn, "model", column_json(q, 15, 0)) ||
                  arb__json_set(turn, "messages", column_json(q, 16, 1)) ||
                  arb__json_set(turn, "reply", column_json(q, 17, 0)) ||
                  arb__json_set(turn, "error", column_json(q, 18, 0)) ||
                  arb__json_set(turn, "reasoning", column_json(q, 19, 0));
        if (bad) {
            json_decref(turn);
            goto nomem;
        }
        if (json_array_append_new(turns, turn)) goto nomem; /* turn released by jansson */
    }
    if (rc != SQLITE_DONE) {
        st = arb__store_fail(s, ARB_DB, "export: cannot read dialogues: %s", sqlite3_errmsg(db));
        goto done;
    }
    if (dialogue) {
        int bad = flush_dialogue(dialogue, out);
        dialogue = NULL;
        if (bad) {
            st = arb__store_fail(s, ARB_IO, "export: write failed");
            goto done;
        }
    }
    if (fflush(out) != 0 || ferror(out)) st = arb__store_fail(s, ARB_IO, "export: write failed");
    goto done;
nomem:
    st = arb__store_fail(s, ARB_NOMEM, "out of memory");
done:
    json_decref(dialogue);
    sqlite3_finalize(q);
    return st;
}
