/*
** transcripts.c -- dialogues (debate §2.5, peer discussion §7) written out as JSONL: one line
** per dialogue with its set-up, outcome and every turn's speaker, role, verdict, the messages
** sent and the reply, all from the store (the prompt of a turn is its call's request).
**
** A line: {"dialogue", "kind", "item", "answer1", "answer2", "participants", "config", "rep",
** "status", "final_verdict", "turns": [{"turn", "speaker", "role", "verdict", "call_id",
** "model", "messages": [{"role", "content"}...], "reply", "error", "reasoning"}]} (reasoning:
** the judge's thinking, kept apart from the reply). Missing values are null.
** Not here: which turns a protocol makes (debate.c, discuss.c).
*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* A text column as JSON: null for NULL, else the string, or parsed for the columns that hold
** JSON (kept as a string when it does not parse). */
static json_t *text_json(const char *text, int parse)
{
    if (!text) return json_null();
    if (parse) {
        json_t *v = json_loadb(text, strlen(text), 0, NULL);
        return v ? v : json_stringn(text, strlen(text));
    }
    return arb__json_name(text); /* invalid UTF-8 would make json_string fail */
}

static json_t *int_json(int present, long long v) { return present ? json_integer(v) : json_null(); }

/* Writes and frees the dialogue object. Returns 0, or -1 when writing failed. */
static int flush_dialogue(json_t *obj, FILE *out)
{
    int bad = json_dumpf(obj, out, JSON_COMPACT | JSON_PRESERVE_ORDER) || fputc('\n', out) == EOF;
    json_decref(obj);
    return bad ? -1 : 0;
}

/* The export under way: the dialogue being filled (owned) and its turns (borrowed from it). */
typedef struct transcript_writer {
    arb_store *s;
    FILE *out;
    json_t *dialogue, *turns;
    long long current;
    arb_status status; /* a failure of the writer, its message set */
} transcript_writer;

/* Starts the dialogue of row r. Returns 0, or -1 when out of memory. */
static int start_dialogue(transcript_writer *w, const arb__dialogue_turn_row *r)
{
    w->current = r->dialogue_id;
    w->dialogue = json_object();
    w->turns = json_array();
    const char *const texts[] = {r->kind, r->item_id, r->answer1, r->answer2,
                                 r->participants_json, r->config_json};
    static const char *const keys[] = {"kind", "item", "answer1", "answer2", "participants",
                                       "config"};
    int bad = !w->dialogue || !w->turns ||
              arb__json_set(w->dialogue, "dialogue", json_integer(r->dialogue_id));
    for (int k = 0; k < 6 && !bad; k++)
        bad = arb__json_set(w->dialogue, keys[k], text_json(texts[k], k >= 4));
    bad = bad || arb__json_set(w->dialogue, "rep", int_json(r->has_rep, r->rep)) ||
          arb__json_set(w->dialogue, "status", text_json(r->status, 0)) ||
          arb__json_set(w->dialogue, "final_verdict", text_json(r->final_verdict, 0)) ||
          json_object_set(w->dialogue, "turns", w->turns);
    json_decref(w->turns); /* the dialogue holds it */
    return bad ? -1 : 0;
}

static int on_dialogue_turn(void *ud, const arb__dialogue_turn_row *r)
{
    transcript_writer *w = ud;
    if (!w->dialogue || r->dialogue_id != w->current) {
        if (w->dialogue) {
            int bad = flush_dialogue(w->dialogue, w->out);
            w->dialogue = NULL;
            if (bad) {
                w->status = arb__store_fail(w->s, ARB_IO, "export: write failed");
                return 1;
            }
        }
        if (start_dialogue(w, r)) goto nomem;
    }
    if (!r->has_turn) return 0; /* no turn yet */
    json_t *turn = json_object();
    int bad = !turn || arb__json_set(turn, "turn", int_json(1, r->turn)) ||
              arb__json_set(turn, "speaker", text_json(r->speaker, 0)) ||
              arb__json_set(turn, "role", text_json(r->role, 0)) ||
              arb__json_set(turn, "verdict", text_json(r->verdict, 0)) ||
              arb__json_set(turn, "call_id", int_json(r->has_call, r->call_id)) ||
              arb__json_set(turn, "model", text_json(r->model, 0)) ||
              arb__json_set(turn, "messages", text_json(r->messages_json, 1)) ||
              arb__json_set(turn, "reply", text_json(r->reply, 0)) ||
              arb__json_set(turn, "error", text_json(r->error, 0)) ||
              arb__json_set(turn, "reasoning", text_json(r->reasoning, 0));
    if (bad) {
        json_decref(turn);
        goto nomem;
    }
    if (json_array_append_new(w->turns, turn)) goto nomem; /* turn released by jansson */
    return 0;
nomem:
    w->status = arb__store_fail(w->s, ARB_NOMEM, "out of memory");
    return 1;
}

arb_status arb__store_export_transcripts(arb_store *s, FILE *out)
{
    transcript_writer w = {.s = s, .out = out};
    arb_status st = arb__store_each_dialogue_turn(s, on_dialogue_turn, &w);
    if (st == ARB_DB) arb__store_fail(s, st, "export: %s", arb_store_errmsg(s));
    if (!st) st = w.status;
    if (!st && w.dialogue) {
        int bad = flush_dialogue(w.dialogue, out);
        w.dialogue = NULL;
        if (bad) st = arb__store_fail(s, ARB_IO, "export: write failed");
    }
    if (!st && (fflush(out) != 0 || ferror(out)))
        st = arb__store_fail(s, ARB_IO, "export: write failed");
    json_decref(w.dialogue);
    return st;
}
