/*
** store_dialogues.c -- reading the tables dialogues and dialogue_turns (debate §2.5, peer
** discussion §7): every dialogue with its turns in order, for the transcripts export and the
** discussion statistics, and the debate set-ups already stored under a name. The writers
** (arb__store_put_dialogue, _put_turn, _end_dialogue) are in store.c.
*/
#include "store_internal.h"

#include <stdlib.h>

/* The column as text, NULL for SQL NULL. */
static const char *text_or_null(sqlite3_stmt *q, int col)
{
    return sqlite3_column_type(q, col) == SQLITE_NULL ? NULL
                                                      : (const char *)sqlite3_column_text(q, col);
}

/* each_dialogue_turn's callback and its data, for each_row. */
typedef struct dialogue_walk {
    arb__dialogue_turn_fn fn;
    void *ud;
} dialogue_walk;

/* Both walks select these columns in this order (the discussions' walk NULL for the call's). */
static int dialogue_turn_row(sqlite3_stmt *q, void *ud)
{
    const dialogue_walk *w = ud;
    arb__dialogue_turn_row r = {
        .dialogue_id = sqlite3_column_int64(q, 0),
        .kind = text_or_null(q, 1),
        .item_id = text_or_null(q, 2),
        .answer1 = text_or_null(q, 3),
        .answer2 = text_or_null(q, 4),
        .participants_json = text_or_null(q, 5),
        .config_json = text_or_null(q, 6),
        .has_rep = sqlite3_column_type(q, 7) != SQLITE_NULL,
        .rep = sqlite3_column_int64(q, 7),
        .status = text_or_null(q, 8),
        .final_verdict = text_or_null(q, 9),
        .has_turn = sqlite3_column_type(q, 10) != SQLITE_NULL,
        .turn = sqlite3_column_int64(q, 10),
        .speaker = text_or_null(q, 11),
        .role = text_or_null(q, 12),
        .verdict = text_or_null(q, 13),
        .has_call = sqlite3_column_type(q, 14) != SQLITE_NULL,
        .call_id = sqlite3_column_int64(q, 14),
        .model = text_or_null(q, 15),
        .messages_json = text_or_null(q, 16),
        .reply = text_or_null(q, 17),
        .error = text_or_null(q, 18),
        .reasoning = text_or_null(q, 19),
    };
    return w->fn(w->ud, &r) ? 1 : 0;
}

arb_status arb__store_each_dialogue_turn(arb_store *s, arb__dialogue_turn_fn fn, void *ud)
{
    /* The prompt of a turn is its call's request: the messages sent. */
    static const char sql[] =
        "SELECT d.id, d.kind, d.item_id, d.answer1, d.answer2, d.participants, d.config, d.rep,"
        "       d.status, d.final_verdict, t.turn, t.speaker, t.role, t.verdict, t.call_id,"
        "       c.model, json_extract(arb_request(c.request), '$.messages'), c.content, c.error, c.reasoning"
        "  FROM dialogues d"
        "  LEFT JOIN dialogue_turns t ON t.dialogue_id = d.id"
        "  LEFT JOIN calls c ON c.id = t.call_id"
        " ORDER BY d.id, t.turn";
    if (!fn) return arb__store_fail(s, ARB_INVALID, "each_dialogue_turn: no callback");
    dialogue_walk w = {fn, ud};
    return arb__store_each_row(s, sql, "dialogues", dialogue_turn_row, &w);
}

arb_status arb__store_each_discussion_turn(arb_store *s, arb__dialogue_turn_fn fn, void *ud)
{
    /* Without the calls: the statistics need the verdicts only, not the messages. */
    static const char sql[] =
        "SELECT d.id, d.kind, d.item_id, d.answer1, d.answer2, d.participants, d.config, d.rep,"
        " d.status, d.final_verdict, t.turn, t.speaker, t.role, t.verdict, t.call_id,"
        " NULL, NULL, NULL, NULL"
        " FROM dialogues d LEFT JOIN dialogue_turns t ON t.dialogue_id = d.id"
        " WHERE d.kind IN ('discussion', 'self-discussion', 'soft', 'hard')"
        " ORDER BY d.id, t.turn";
    if (!fn) return arb__store_fail(s, ARB_INVALID, "each_discussion_turn: no callback");
    dialogue_walk w = {fn, ud};
    return arb__store_each_row(s, sql, "the dialogues", dialogue_turn_row, &w);
}

arb_status arb__store_find_other_debate_config(arb_store *s, const char *kind,
                                               const char *participants_json,
                                               const char *config_json,
                                               const char *agent1_template, int options,
                                               char **other_config)
{
    *other_config = NULL;
    sqlite3 *db = arb__store_conn(s);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT config FROM dialogues WHERE kind = ?1 AND participants = ?2"
                           " AND config <> ?3 AND json_extract(config, '$.agent1_template') = ?4"
                           " AND json_extract(config, '$.options') = ?5 LIMIT 1",
                           -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail(s, ARB_DB, "%s", sqlite3_errmsg(db));
    arb__store_bind_text(q, 1, kind);
    arb__store_bind_text(q, 2, participants_json);
    arb__store_bind_text(q, 3, config_json);
    arb__store_bind_text(q, 4, agent1_template);
    sqlite3_bind_int(q, 5, options);
    int rc = sqlite3_step(q);
    arb_status st = ARB_OK;
    if (rc == SQLITE_ROW) {
        const char *config = (const char *)sqlite3_column_text(q, 0);
        if (!(*other_config = arb__strdup(config ? config : "(null)")))
            st = arb__store_fail(s, ARB_NOMEM, "out of memory");
    } else if (rc != SQLITE_DONE)
        st = arb__store_fail(s, ARB_DB, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(q);
    return st;
}
