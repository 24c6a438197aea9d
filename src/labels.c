/*
** labels.c -- human (expert) labels (METHODS §4): importing them from JSONL or CSV into table
** human_labels, the majority label of each (item, candidate, baseline), and the
** inter-annotator report: who labelled what, majority counts, and agreement between annotator
** pairs per benchmark split.
**
** Invariants:
**   - An import is all or nothing: it runs in one transaction (a savepoint when the caller
**     already holds one), and on the first bad row nothing of the file is stored and labels
**     stored earlier are untouched. Errors name "file:line: field ..." (the physical line; for
**     CSV the line where the record starts).
**   - A label is one model verdict a..d (§2.2: candidate better, baseline better, both good,
**     both bad) of one annotator on (item, candidate, baseline); importing it again updates it.
**     Uppercase A..D are refused: they are position verdicts, and which answer a position
**     showed depends on the order, so reading them as model verdicts would be a guess.
**   - Every labelled item is already in the store (arbiter sbs stores the items), so labels
**     always have a benchmark position (items.seq) for splits and window series.
**   - Majority (§4): the most frequent verdict among an item's annotators; when two or more
**     verdicts share the top count there is no majority (a tie), which the metrics skip and
**     count.
**
** Not here: agreement of judges with the experts (audit.c uses arb__labels_each_majority),
** collecting labels interactively, the statistics themselves (stats.c), or SQL (the table
** human_labels is store_labels.c's).
*/
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <xxhash.h>

/* Files larger than this are refused before they are read. */
#define LABELS_MAX_FILE_BYTES ((size_t)1 << 30)
/* Default benchmark split (§4: "items 0-599, 600-1199, ..."). */
#define LABELS_DEFAULT_SPLIT 600

/* ---- small helpers ------------------------------------------------------------------------- */


/* ---- import: one label row ----------------------------------------------------------------- */

enum { COL_ITEM, COL_CANDIDATE, COL_BASELINE, COL_VERDICT, COL_ANNOTATOR, COL_SHOWN_ORDER,
       COL_TIME_MS, COL__COUNT, COL__REQUIRED = COL_SHOWN_ORDER };
static const char *const col_names[COL__COUNT] = {
    "item", "candidate", "baseline", "verdict", "annotator", "shown_order", "time_ms",
};

/* One label as read from a file: strings borrowed from the parser until the row is stored. */
typedef struct label_row {
    size_t line;
    const char *text[COL__REQUIRED]; /* item, candidate, baseline, verdict, annotator */
    int has_shown_order;
    int shown_order;
    int has_time_ms;
    long long time_ms;
    char *owned_item;                /* the item id when built from other fields (caller frees) */
} label_row;

/* Where each (item, candidate, baseline, annotator) of the file was first seen, so a second
** label of the same key names both lines. Keys are copied ("item\0candidate\0baseline\0
** annotator"); index maps a key to the index + 1 of its entry. */
typedef struct seen_entry {
    char *key;
    size_t key_len;
    size_t line;
} seen_entry;

typedef struct seen_set {
    arb__keymap index;
    seen_entry *entries;
    size_t n, cap;
} seen_set;

static void seen_free(seen_set *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->entries[i].key);
    free(s->entries);
    arb__keymap_free(&s->index);
}

/* A key as seen_check looks it up. */
typedef struct seen_key {
    const char *bytes;
    size_t len;
} seen_key;

/* arb__keymap_same_fn of a seen_set's index (key: a seen_key). */
static int seen_same(const void *ctx, const void *key, size_t value)
{
    const seen_entry *e = &((const seen_set *)ctx)->entries[value - 1];
    const seen_key *k = key;
    return e->key_len == k->len && !memcmp(e->key, k->bytes, k->len);
}

/* Returns the line where key was seen before (nonzero), or 0 after recording it at line; -1
** when out of memory. */
static long long seen_check(seen_set *s, const char *key, size_t key_len, size_t line)
{
    uint64_t h = XXH3_64bits(key, key_len);
    seen_key k = {key, key_len};
    size_t v = arb__keymap_find(&s->index, h, &k, seen_same, s);
    if (v) return (long long)s->entries[v - 1].line;
    char *copy = NULL;
    if (arb__grow(&s->entries, &s->cap, s->n + 1, sizeof *s->entries) ||
        !(copy = malloc(key_len ? key_len : 1)) || arb__keymap_add(&s->index, h, NULL, s->n + 1)) {
        free(copy);
        return -1;
    }
    memcpy(copy, key, key_len);
    s->entries[s->n++] = (seen_entry){copy, key_len, line};
    return 0;
}

typedef struct importer {
    arb_store *store;
    const char *path; /* as given: error messages and human_labels.source */
    arb__label_import *statements; /* store_labels.c */
    seen_set seen;
    arb__buf key;
    arb_labels_import_stats stats;
    int fastchat_human;              /* rows are MT-Bench human judgments (format fastchat-human) */
    json_t *pair_baseline;           /* fastchat-human: "x\x1fy" (x < y) -> the baseline the
                                        file's first label of a never-judged pair gave it */
} importer;

/* Fails with "path:line: field "name": <message>" and returns ARB_PARSE. */
static arb_status field_fail(importer *im, size_t line, const char *field, const char *fmt, ...)
    ARB__ATTR_PRINTF(4, 5);
static arb_status field_fail(importer *im, size_t line, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = arb__vsprintf(fmt, ap);
    va_end(ap);
    if (!msg) return arb__store_fail(im->store, ARB_NOMEM, "%s: out of memory", im->path);
    arb__store_fail(im->store, ARB_PARSE, "%s:%zu: field \"%s\": %s", im->path, line, field, msg);
    free(msg);
    return ARB_PARSE;
}

/* Checks a text value of a required field: non-empty, no NUL byte, valid UTF-8. */
static arb_status check_text(importer *im, size_t line, int col, const char *s, size_t n)
{
    const char *field = col_names[col];
    size_t bad = 0;
    if (n == 0) return field_fail(im, line, field, "expected a non-empty string, got \"\"");
    if (memchr(s, '\0', n))
        return field_fail(im, line, field, "expected text, got a value with a NUL byte");
    if (!arb__utf8_valid(s, n, &bad))
        return field_fail(im, line, field, "expected UTF-8 text, got an invalid byte 0x%02X at "
                          "byte %zu of the value", (unsigned char)s[bad], bad + 1);
    return ARB_OK;
}

/* Checks the verdict: exactly one of the lowercase model verdicts a..d (§2.2). */
static arb_status check_verdict(importer *im, size_t line, const char *s, size_t n)
{
    char shown[96];
    if (n == 1 && s[0] >= 'a' && s[0] <= 'd') return ARB_OK;
    arb__excerpt(shown, sizeof shown, s, n);
    if (n == 1 && s[0] >= 'A' && s[0] <= 'D')
        return field_fail(im, line, "verdict",
                          "got %s: verdict must be a model verdict a/b/c/d (candidate better, "
                          "baseline better, both good, both bad); uppercase A-D are position "
                          "verdicts", shown);
    return field_fail(im, line, "verdict",
                      "expected a model verdict a/b/c/d (candidate better, baseline better, both "
                      "good, both bad), got %s", shown);
}

/* Parses a whole number written as decimal digits (CSV). 0 ok, -1 not one or too large. */
static int parse_count(const char *s, size_t n, long long *out)
{
    if (n == 0 || n > 18) return -1;
    long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* Stores one validated row: refuses candidate == baseline, a key given twice in the file and
** items that are not in the store; then inserts, updates or leaves the label as it is. */
static arb_status store_row(importer *im, const label_row *r)
{
    const char *item = r->text[COL_ITEM], *candidate = r->text[COL_CANDIDATE],
               *baseline = r->text[COL_BASELINE], *annotator = r->text[COL_ANNOTATOR];
    char shown[96], shown2[96], shown3[96], shown4[96];
    if (!strcmp(candidate, baseline)) {
        arb__excerpt(shown, sizeof shown, candidate, strlen(candidate));
        return field_fail(im, r->line, "baseline",
                          "expected a model other than the candidate, got %s for both", shown);
    }

    arb__buf_reset(&im->key);
    for (int c = 0; c < COL__REQUIRED; c++) {
        if (c == COL_VERDICT) continue;
        if (arb__buf_append(&im->key, r->text[c], strlen(r->text[c]) + 1))
            return arb__store_fail(im->store, ARB_NOMEM, "%s: out of memory", im->path);
    }
    long long first = seen_check(&im->seen, im->key.data, im->key.len, r->line);
    if (first < 0) return arb__store_fail(im->store, ARB_NOMEM, "%s: out of memory", im->path);
    if (first > 0) {
        arb__excerpt(shown, sizeof shown, item, strlen(item));
        arb__excerpt(shown2, sizeof shown2, candidate, strlen(candidate));
        arb__excerpt(shown3, sizeof shown3, baseline, strlen(baseline));
        arb__excerpt(shown4, sizeof shown4, annotator, strlen(annotator));
        return arb__store_fail(im->store, ARB_PARSE,
                               "%s:%zu: duplicate label: item %s, candidate %s, baseline %s, "
                               "annotator %s was already given at line %lld of the same file",
                               im->path, r->line, shown, shown2, shown3, shown4, first);
    }

    int exists = 0;
    if (arb__store_label_item_exists(im->statements, item, &exists)) goto db_error;
    if (!exists) {
        arb__excerpt(shown, sizeof shown, item, strlen(item));
        if (im->fastchat_human)
            return field_fail(im, r->line, "question_id",
                              "item %s is not in the store; import the judgments first "
                              "(arbiter import fastchat model_judgment/<judge>_pair.jsonl "
                              "stores the items)", shown);
        return field_fail(im, r->line, "item",
                          "item %s is not in the store; judge it first (arbiter sbs stores the "
                          "items)", shown);
    }

    arb__label_row row = {item, candidate, baseline, annotator, im->path,
                          r->text[COL_VERDICT][0], r->has_shown_order, r->shown_order,
                          r->has_time_ms, r->time_ms};
    arb__label_row stored;
    long long id = 0;
    if (arb__store_find_label(im->statements, &row, &stored, &id)) goto db_error;
    if (id) {
        int same_verdict = stored.verdict == row.verdict;
        int same_order = r->has_shown_order
                             ? stored.has_shown_order && stored.shown_order == r->shown_order
                             : !stored.has_shown_order;
        int same_time = r->has_time_ms ? stored.has_time_ms && stored.time_ms == r->time_ms
                                       : !stored.has_time_ms;
        if (same_verdict && same_order && same_time) {
            im->stats.unchanged++;
            return ARB_OK;
        }
    }
    if (arb__store_put_label(im->statements, id, &row)) goto db_error;
    if (id) im->stats.updated++;
    else im->stats.inserted++;
    return ARB_OK;

db_error:
    return arb__store_fail(im->store, ARB_DB, "%s:%zu: cannot store the label: %s", im->path,
                           r->line, arb__store_last_db_error(im->store, NULL));
}

/* ---- import: JSONL ------------------------------------------------------------------------- */

/* Describes a JSON value that has the wrong type: "number 7", "string \"0\"", "null",
** "array". */
static void describe_json(char *out, size_t size, const json_t *v)
{
    if (v && (json_is_number(v) || json_is_boolean(v))) {
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        snprintf(out, size, "%s %s", arb__json_kind(v), text ? text : "");
        free(text);
        return;
    }
    if (json_is_string(v)) {
        char shown[96];
        arb__excerpt(shown, sizeof shown, json_string_value(v), json_string_length(v));
        snprintf(out, size, "string %s", shown);
        return;
    }
    snprintf(out, size, "%s", arb__json_kind(v));
}

/* Reads the fields of one JSON object into r (strings borrowed from obj). */
static arb_status read_json_row(importer *im, json_t *obj, label_row *r)
{
    char got[128];
    for (int c = 0; c < COL__REQUIRED; c++) {
        json_t *v = json_object_get(obj, col_names[c]);
        if (!v)
            return field_fail(im, r->line, col_names[c], "missing (a label needs item, "
                              "candidate, baseline, verdict and annotator)");
        if (c == COL_ITEM && json_is_integer(v)) {
            /* items.jsonl may give ids as integers (dataset.c stores them as text): accept
            ** the same here, as the text the store holds; obj keeps the string alive */
            char id[32];
            snprintf(id, sizeof id, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            if (json_object_set_new(obj, col_names[c], json_string(id)))
                return arb__store_fail(im->store, ARB_NOMEM, "labels: out of memory");
            v = json_object_get(obj, col_names[c]);
        }
        if (!json_is_string(v)) {
            describe_json(got, sizeof got, v);
            if (c == COL_ITEM)
                return field_fail(im, r->line, "item", "expected a string or an integer id, "
                                  "got %s", got);
            return field_fail(im, r->line, col_names[c], "expected a string, got %s", got);
        }
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        arb_status st = check_text(im, r->line, c, s, n);
        if (!st && c == COL_VERDICT) st = check_verdict(im, r->line, s, n);
        if (st) return st;
        r->text[c] = s;
    }
    json_t *v = json_object_get(obj, "shown_order");
    if (v && !json_is_null(v)) {
        json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;
        if (x != 0 && x != 1) {
            describe_json(got, sizeof got, v);
            return field_fail(im, r->line, "shown_order",
                              "expected 0 (candidate shown first) or 1 (baseline shown first), "
                              "got %s", got);
        }
        r->has_shown_order = 1;
        r->shown_order = (int)x;
    }
    v = json_object_get(obj, "time_ms");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            describe_json(got, sizeof got, v);
            return field_fail(im, r->line, "time_ms",
                              "expected a whole number of milliseconds >= 0, got %s", got);
        }
        r->has_time_ms = 1;
        r->time_ms = (long long)json_integer_value(v);
    }
    return ARB_OK;
}

/* One line of MT-Bench human judgments (lmsys/mt_bench_human_judgments, as FastChat's
** compute_agreement.py reads them): question_id, model_a, model_b, winner, judge (the
** annotator), turn. The label is put on the (candidate, baseline) orientation the stored
** judgments of that item and pair use, so audit compares like with like; a pair never judged
** takes model_b of its first line in the file as the baseline (FastChat's pair rule), and keeps
** it for the rest of the file, so all its labels are on one (candidate, baseline) and have one
** majority. model_a was shown first. MT-Bench's
** human labels have no "both bad": a tie is c. Item "<question_id>", "<question_id>#<turn>"
** from turn 2, as the FastChat importers name them. */
static arb_status read_fastchat_human_row(importer *im, json_t *obj, label_row *r)
{
    char got[128], qbuf[32];
    json_t *v = json_object_get(obj, "question_id");
    const char *qid = arb__battles_question_text(v, qbuf, sizeof qbuf);
    if (!qid) {
        describe_json(got, sizeof got, v);
        return field_fail(im, r->line, "question_id", "expected an integer or a non-empty "
                          "string, got %s", got);
    }
    json_int_t turn = 1;
    if ((v = json_object_get(obj, "turn")) && !json_is_null(v)) {
        turn = json_is_integer(v) ? json_integer_value(v) : 0;
        if (turn < 1) {
            describe_json(got, sizeof got, v);
            return field_fail(im, r->line, "turn", "expected an integer >= 1, got %s", got);
        }
    }
    static const char *const models[2] = {"model_a", "model_b"};
    const char *model[2];
    for (int k = 0; k < 2; k++) {
        v = json_object_get(obj, models[k]);
        if (!(model[k] = arb__battles_name_text(v))) {
            describe_json(got, sizeof got, v);
            return field_fail(im, r->line, models[k], "expected a non-empty string, got %s", got);
        }
    }
    if (!strcmp(model[0], model[1])) {
        describe_json(got, sizeof got, v);
        return field_fail(im, r->line, "model_b", "expected a model other than model_a, got %s",
                          got);
    }
    v = json_object_get(obj, "judge");
    const char *annotator = arb__battles_name_text(v);
    if (!annotator) {
        describe_json(got, sizeof got, v);
        return field_fail(im, r->line, "judge",
                          json_is_array(v) ? "expected the annotator's name (\"expert_0\"), got "
                          "%s: [model, prompt] is a model judge's verdict (the dataset's "
                          "gpt4_pair split), not a human label"
                                           : "expected the annotator's name (\"expert_0\"), got %s",
                          got);
    }
    v = json_object_get(obj, "winner");
    const char *winner = json_string_value(v);
    int won = !winner ? -1 : !strcmp(winner, "model_a") ? 0 : !strcmp(winner, "model_b") ? 1
              : !strcmp(winner, "tie") ? 2 : -1;
    if (won < 0) {
        describe_json(got, sizeof got, v);
        return field_fail(im, r->line, "winner", "expected \"model_a\", \"model_b\" or \"tie\", "
                          "got %s", got);
    }
    r->owned_item = turn == 1 ? arb__strdup(qid)
                              : arb__sprintf("%s#%" JSON_INTEGER_FORMAT, qid, turn);
    if (!r->owned_item) return arb__store_fail(im->store, ARB_NOMEM, "labels: out of memory");
    int which = 0;
    arb_status st = arb__store_pair_orientation(im->store, r->owned_item, model[0], model[1],
                                                &which);
    if (st) return st;
    if (!which) { /* never judged: the first label of the pair in the file decides */
        int x_first = strcmp(model[0], model[1]) < 0;
        char *key = arb__sprintf("%s\x1f%s", model[!x_first], model[x_first]);
        if (!key) return arb__store_fail(im->store, ARB_NOMEM, "labels: out of memory");
        const char *known = json_string_value(json_object_get(im->pair_baseline, key));
        which = known ? (!strcmp(known, model[1]) ? 1 : 2) : 1;
        if (!known && json_object_set_new(im->pair_baseline, key, json_string(model[1])))
            which = 0;
        free(key);
        if (!which) return arb__store_fail(im->store, ARB_NOMEM, "labels: out of memory");
    }
    int candidate = which == 1 ? 0 : 1;
    r->text[COL_ITEM] = r->owned_item;
    r->text[COL_CANDIDATE] = model[candidate];
    r->text[COL_BASELINE] = model[!candidate];
    r->text[COL_VERDICT] = won == 2 ? "c" : won == candidate ? "a" : "b";
    r->text[COL_ANNOTATOR] = annotator;
    r->has_shown_order = 1;
    r->shown_order = candidate == 0 ? 0 : 1; /* model_a is shown first */
    return ARB_OK;
}

/* Imports JSONL text: one object per line, blank lines skipped. */
static arb_status import_jsonl(importer *im, const char *text, size_t len)
{
    size_t line = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        line++;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        size_t n = (size_t)(stop - p);
        if (n && p[n - 1] == '\r') n--;
        const char *next = nl ? nl + 1 : end;
        size_t i = 0;
        while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r')) i++;
        if (i == n) {
            p = next;
            continue;
        }
        size_t bad = 0;
        if (!arb__utf8_valid(p, n, &bad))
            return arb__store_fail(im->store, ARB_PARSE,
                                   "%s:%zu: invalid UTF-8: byte 0x%02X at column %zu", im->path,
                                   line, (unsigned char)p[bad], bad + 1);
        json_error_t err;
        json_t *obj = json_loadb(p, n, JSON_REJECT_DUPLICATES, &err);
        if (!obj) {
            /* jansson quotes the text near the error, which may hold control characters */
            arb__buf why;
            arb__buf_init(&why, 0);
            int nomem = arb__buf_put_safe(&why, err.text);
            arb_status st = arb__store_fail(im->store, ARB_PARSE,
                                            "%s:%zu: invalid JSON: %s (column %d)", im->path, line,
                                            nomem || !why.data ? "" : why.data, err.column);
            arb__buf_free(&why);
            return st;
        }
        arb_status st;
        if (!json_is_object(obj)) {
            st = arb__store_fail(im->store, ARB_PARSE,
                                 "%s:%zu: expected a JSON object with item, candidate, baseline, "
                                 "verdict, annotator, got %s", im->path, line, arb__json_kind(obj));
        } else {
            label_row r;
            memset(&r, 0, sizeof r);
            r.line = line;
            im->stats.rows++;
            st = im->fastchat_human ? read_fastchat_human_row(im, obj, &r)
                                    : read_json_row(im, obj, &r);
            if (!st) st = store_row(im, &r);
            free(r.owned_item);
        }
        json_decref(obj);
        if (st) return st;
        p = next;
    }
    return ARB_OK;
}

/* ---- import: CSV (libcsv) ------------------------------------------------------------------ */

/* The columns of the header, found by name (csv.c reads the records). */
typedef struct csv_columns {
    importer *im;
    int col[COL__COUNT];    /* index of each known column in the header, -1 when absent */
    size_t n_columns;       /* fields in the header */
} csv_columns;

/* The header: every required column present once; unknown columns are ignored. */
static arb_status csv_header(csv_columns *cr, size_t line, const char *const *fields,
                             const size_t *lens, size_t n_fields)
{
    importer *im = cr->im;
    for (int c = 0; c < COL__COUNT; c++) cr->col[c] = -1;
    for (size_t i = 0; i < n_fields; i++) {
        const char *name = fields[i];
        size_t bad = 0;
        if (!arb__utf8_valid(name, lens[i], &bad))
            return arb__store_fail(im->store, ARB_PARSE,
                                   "%s:%zu: header: column %zu: invalid UTF-8 byte 0x%02X",
                                   im->path, line, i + 1, (unsigned char)name[bad]);
        for (int c = 0; c < COL__COUNT; c++) {
            if (lens[i] != strlen(col_names[c]) || strcmp(name, col_names[c]) != 0)
                continue;
            if (cr->col[c] >= 0)
                return arb__store_fail(im->store, ARB_PARSE,
                                       "%s:%zu: header: column \"%s\" appears twice (columns %d "
                                       "and %zu)", im->path, line, col_names[c], cr->col[c] + 1,
                                       i + 1);
            cr->col[c] = (int)i;
        }
    }
    for (int c = 0; c < COL__REQUIRED; c++)
        if (cr->col[c] < 0)
            return arb__store_fail(im->store, ARB_PARSE,
                                   "%s:%zu: header: missing column \"%s\" (the first row must "
                                   "name the columns: item, candidate, baseline, verdict, "
                                   "annotator, and optionally shown_order, time_ms)",
                                   im->path, line, col_names[c]);
    cr->n_columns = n_fields;
    return ARB_OK;
}

/* One data record: the fields of the known columns, validated, then stored. */
static arb_status csv_record(csv_columns *cr, size_t line, const char *const *fields,
                             const size_t *lens, size_t n_fields)
{
    importer *im = cr->im;
    if (n_fields != cr->n_columns)
        return arb__store_fail(im->store, ARB_PARSE,
                               "%s:%zu: expected %zu fields as in the header, got %zu", im->path,
                               line, cr->n_columns, n_fields);
    label_row r;
    memset(&r, 0, sizeof r);
    r.line = line;
    im->stats.rows++;
    arb_status st;
    for (int c = 0; c < COL__REQUIRED; c++) {
        size_t i = (size_t)cr->col[c];
        const char *s = fields[i];
        if ((st = check_text(im, line, c, s, lens[i]))) return st;
        if (c == COL_VERDICT && (st = check_verdict(im, line, s, lens[i]))) return st;
        r.text[c] = s;
    }
    char shown[96];
    if (cr->col[COL_SHOWN_ORDER] >= 0) {
        size_t i = (size_t)cr->col[COL_SHOWN_ORDER];
        const char *s = fields[i];
        size_t n = lens[i];
        if (n) { /* empty = unknown */
            if (n != 1 || (s[0] != '0' && s[0] != '1')) {
                arb__excerpt(shown, sizeof shown, s, n);
                return field_fail(im, line, "shown_order",
                                  "expected 0 (candidate shown first), 1 (baseline shown first) "
                                  "or empty, got %s", shown);
            }
            r.has_shown_order = 1;
            r.shown_order = s[0] - '0';
        }
    }
    if (cr->col[COL_TIME_MS] >= 0) {
        size_t i = (size_t)cr->col[COL_TIME_MS];
        const char *s = fields[i];
        size_t n = lens[i];
        if (n) {
            if (parse_count(s, n, &r.time_ms)) {
                arb__excerpt(shown, sizeof shown, s, n);
                return field_fail(im, line, "time_ms",
                                  "expected a whole number of milliseconds >= 0 or empty, got %s",
                                  shown);
            }
            r.has_time_ms = 1;
        }
    }
    return store_row(im, &r);
}

static arb_status csv_on_record(void *ud, size_t line, size_t index, const char *const *fields,
                                const size_t *lens, size_t n)
{
    csv_columns *cr = ud;
    return index == 0 ? csv_header(cr, line, fields, lens, n)
                      : csv_record(cr, line, fields, lens, n);
}

/* Imports CSV text (RFC 4180, parsed by libcsv in strict mode): a header row naming the
** columns, then one label per record. */
static arb_status import_csv(importer *im, const char *text, size_t len)
{
    csv_columns cr;
    memset(&cr, 0, sizeof cr);
    cr.im = im;
    char *err = NULL;
    arb_status st = arb__csv_each_record(im->path, text, len, csv_on_record, &cr, &err);
    if (err) arb__store_fail(im->store, st, "%s", err); /* csv.c's own message */
    free(err);
    return st;
}

/* ---- import: the public function ----------------------------------------------------------- */

/* Chooses the format from the file name. Returns "jsonl", "csv" or NULL. */
static const char *format_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return NULL;
    if (!strcasecmp(dot, ".jsonl") || !strcasecmp(dot, ".json")) return "jsonl";
    if (!strcasecmp(dot, ".csv")) return "csv";
    return NULL;
}

/* Imports one label file into the store, all or nothing (see arbiter.h). stats (may be NULL)
** receives the counts; on failure they are zero, since nothing was stored. */
arb_status arb_labels_import(arb_store *store, const char *path, const char *format,
                             arb_labels_import_stats *stats)
{
    if (stats) memset(stats, 0, sizeof *stats);
    if (!store) return ARB_INVALID;
    if (!path || !*path) return arb__store_fail(store, ARB_INVALID, "labels: no file given");
    if (!format) {
        format = format_of(path);
        if (!format)
            return arb__store_fail(store, ARB_INVALID,
                                   "%s: cannot tell the label format from the file name: name it "
                                   ".jsonl, .json or .csv, or give the format (jsonl or csv)",
                                   path);
    } else if (strcmp(format, "jsonl") && strcmp(format, "csv") &&
               strcmp(format, "fastchat-human")) {
        return arb__store_fail(store, ARB_INVALID, "unknown label format \"%s\": expected "
                               "jsonl, csv or fastchat-human", format);
    }

    struct stat sb;
    if (stat(path, &sb) != 0)
        return arb__store_fail(store, ARB_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return arb__store_fail(store, ARB_IO, "%s: is a directory, not a label file", path);
    if (S_ISREG(sb.st_mode) && (unsigned long long)sb.st_size > LABELS_MAX_FILE_BYTES)
        return arb__store_fail(store, ARB_TOOBIG,
                               "%s: %lld bytes is more than the 1 GiB a label file may have: "
                               "split it into several files", path, (long long)sb.st_size);
    char *err = NULL;
    size_t len = 0;
    char *text = arb__read_file(path, &len, &err);
    if (!text) {
        arb_status code = err && strstr(err, "too large") ? ARB_TOOBIG : ARB_IO;
        arb__store_fail(store, code, "%s", err ? err : "cannot read the label file");
        free(err);
        return code;
    }
    arb_status st = arb__labels_import_text(store, path, format, text, len, stats);
    free(text);
    return st;
}

/* Imports label text (JSONL or CSV, as format says) named source in messages; the work of
** arb_labels_import once the file is read, and what the fuzz target drives. text is borrowed. */
arb_status arb__labels_import_text(arb_store *store, const char *source, const char *format,
                                   const char *text, size_t len, arb_labels_import_stats *stats)
{
    if (stats) memset(stats, 0, sizeof *stats);
    const char *path = source;
    const char *body = text;
    if (len >= 3 && !memcmp(body, "\xEF\xBB\xBF", 3)) { /* UTF-8 byte order mark */
        body += 3;
        len -= 3;
    }

    importer im;
    memset(&im, 0, sizeof im);
    im.store = store;
    im.path = path;
    im.fastchat_human = !strcmp(format, "fastchat-human");
    if (im.fastchat_human && !(im.pair_baseline = json_object()))
        return arb__store_fail(store, ARB_NOMEM, "labels: out of memory");
    arb__buf_init(&im.key, 0);
    arb_status st = arb__store_open_label_import(store, &im.statements);
    if (!st) st = !strcmp(format, "csv") ? import_csv(&im, body, len) : import_jsonl(&im, body, len);
    st = arb__store_close_label_import(im.statements, st);
    seen_free(&im.seen);
    json_decref(im.pair_baseline);
    arb__buf_free(&im.key);
    if (!st && stats) *stats = im.stats;
    return st;
}

/* ---- majority labels ----------------------------------------------------------------------- */

/* The majority (§4) of verdict counts a..d: 'a'..'d', or 0 when the top count is shared (or
** there are no labels). */
static char majority_of(const long long counts[4])
{
    int best = -1, shared = 0;
    for (int v = 0; v < 4; v++) {
        if (counts[v] <= 0) continue;
        if (best < 0 || counts[v] > counts[best]) {
            best = v;
            shared = 0;
        } else if (counts[v] == counts[best]) {
            shared = 1;
        }
    }
    return best < 0 || shared ? 0 : (char)('a' + best);
}

/* each_majority's callback and its data, for arb__store_each_label_count. */
typedef struct majority_walk {
    arb__majority_fn fn;
    void *ud;
} majority_walk;

static int majority_row(void *ud, const char *item_id, const char *candidate,
                        const char *baseline, const long long counts[4])
{
    const majority_walk *w = ud;
    long long n = counts[0] + counts[1] + counts[2] + counts[3];
    return w->fn(w->ud, item_id, candidate, baseline, majority_of(counts), (int)n);
}

/* Calls fn for each (item, candidate, baseline) with labels, ordered by candidate, baseline,
** benchmark order (items.seq), item id; the verdict counts per item are aggregated by SQLite.
** Returns ARB_OK (also when fn stopped the walk) or ARB_DB. */
arb_status arb__labels_each_majority(arb_store *s, arb__majority_fn fn, void *ud)
{
    if (!s || !fn) return arb__store_fail(s, ARB_INVALID, "labels: each_majority: bad arguments");
    majority_walk w = {fn, ud};
    return arb__store_each_label_count(s, majority_row, &w);
}

/* ---- the report ---------------------------------------------------------------------------- */

typedef struct labels_pair {
    size_t annotator1, annotator2; /* indices into the set's annotators, annotator1 < annotator2 */
    size_t n_common;
    double pearson;     /* of the two annotators' (a, b, c, d) count vectors */
    double cohen_kappa; /* categories a..d */
} labels_pair;

typedef struct labels_split {
    long long first_seq, last_seq;
    size_t n_items;
    labels_pair *pairs;
    size_t n_pairs;
    double mean_pearson;
    double fleiss_kappa;
    size_t fleiss_raters, fleiss_items;
} labels_split;

typedef struct labels_annotator {
    char *name;
    size_t n_labels;
} labels_annotator;

typedef struct labels_set {
    char *candidate, *baseline;
    size_t n_items, n_labels, n_multi, n_ties;
    size_t majority[4];
    labels_annotator *annotators;
    size_t n_annotators, cap_annotators;
    labels_split *splits;
    size_t n_splits, cap_splits;
} labels_set;

struct arb_labels_report {
    size_t split_size;
    labels_set *sets;
    size_t n_sets, cap_sets;
};

void arb_labels_report_destroy(arb_labels_report *report)
{
    if (!report) return;
    for (size_t i = 0; i < report->n_sets; i++) {
        labels_set *set = &report->sets[i];
        free(set->candidate);
        free(set->baseline);
        for (size_t a = 0; a < set->n_annotators; a++) free(set->annotators[a].name);
        free(set->annotators);
        for (size_t k = 0; k < set->n_splits; k++) free(set->splits[k].pairs);
        free(set->splits);
    }
    free(report->sets);
    free(report);
}

/* Two annotators' verdicts on one item of the current split. */
typedef struct pair_obs {
    size_t i, j;        /* annotator indices, i < j */
    unsigned char vi, vj; /* verdict indices 0..3 */
} pair_obs;

static int cmp_pair_obs(const void *pa, const void *pb)
{
    const pair_obs *a = pa, *b = pb;
    if (a->i != b->i) return a->i < b->i ? -1 : 1;
    if (a->j != b->j) return a->j < b->j ? -1 : 1;
    return 0;
}

/* One item with two or more annotators, for Fleiss' kappa. */
typedef struct multi_item {
    double counts[4];
    size_t raters;
} multi_item;

/* What the walk over the labels accumulates. */
typedef struct report_walk {
    arb_labels_report *report;
    labels_set *set;           /* current set */
    long long split_index;     /* current split of the set, -1 before the first */
    size_t split_items;
    pair_obs *obs;
    size_t n_obs, cap_obs;
    multi_item *multi;
    size_t n_multi, cap_multi;
    /* the current item */
    char *item_id;
    long long item_seq;
    size_t *item_ann;           /* all annotator indices of the item (grows) */
    unsigned char *item_verdict;
    size_t n_item, cap_item, cap_item_v;
    size_t next_set;           /* the set the walk's next (candidate, baseline) must be */
} report_walk;

/* Closes the current split: pairs (§4 inter-annotator agreement) and Fleiss' kappa. */
static int finish_split(report_walk *w)
{
    labels_set *set = w->set;
    if (w->split_index < 0 || w->split_items == 0) return 0;
    if (arb__grow(&set->splits, &set->cap_splits, set->n_splits + 1, sizeof *set->splits)) return -1;
    labels_split *sp = &set->splits[set->n_splits++];
    memset(sp, 0, sizeof *sp);
    long long size = (long long)w->report->split_size;
    sp->first_seq = w->split_index * size;
    sp->last_seq = sp->first_seq + size - 1;
    sp->n_items = w->split_items;

    /* Pairs of annotators with at least two common items. Our reading of §4 ("Pearson between
    ** annotator pairs per benchmark split"): like APCC, Pearson's r between the two
    ** annotators' 4-vectors of verdict counts (a, b, c, d) over their common items; Cohen's
    ** kappa on the same items is given beside it. */
    if (w->n_obs) qsort(w->obs, w->n_obs, sizeof *w->obs, cmp_pair_obs);
    double sum_r = 0;
    size_t n_r = 0, cap_pairs = 0;
    for (size_t a = 0; a < w->n_obs;) {
        size_t b = a;
        double table[16] = {0};
        while (b < w->n_obs && w->obs[b].i == w->obs[a].i && w->obs[b].j == w->obs[a].j) {
            table[w->obs[b].vi * 4 + w->obs[b].vj] += 1;
            b++;
        }
        if (b - a >= 2) {
            if (arb__grow(&sp->pairs, &cap_pairs, sp->n_pairs + 1, sizeof *sp->pairs)) return -1;
            labels_pair *pr = &sp->pairs[sp->n_pairs++];
            double x[4] = {0}, y[4] = {0};
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 4; c++) {
                    x[r] += table[r * 4 + c];
                    y[c] += table[r * 4 + c];
                }
            pr->annotator1 = w->obs[a].i;
            pr->annotator2 = w->obs[a].j;
            pr->n_common = b - a;
            pr->pearson = arb_stat_pearson(x, y, 4);
            pr->cohen_kappa = arb_stat_cohen_kappa(table, 4);
            if (!isnan(pr->pearson)) {
                sum_r += pr->pearson;
                n_r++;
            }
        }
        a = b;
    }
    sp->mean_pearson = n_r ? sum_r / (double)n_r : NAN;

    /* Fleiss' kappa needs the same number of raters on every item: take the items with the
    ** most common number of annotators (>= 2; on a tie, the larger number). */
    sp->fleiss_kappa = NAN;
    size_t best_raters = 0, best_items = 0, max_raters = 0;
    for (size_t i = 0; i < w->n_multi; i++)
        if (w->multi[i].raters > max_raters) max_raters = w->multi[i].raters;
    if (w->n_multi) {
        /* items per number of raters; at most the set's annotator count + 1 entries */
        size_t *freq = calloc(max_raters + 1, sizeof *freq);
        if (!freq) return -1;
        for (size_t i = 0; i < w->n_multi; i++) freq[w->multi[i].raters]++;
        for (size_t m = 2; m <= max_raters; m++)
            if (freq[m] && freq[m] >= best_items) { /* >=: on a tie the larger number wins */
                best_items = freq[m];
                best_raters = m;
            }
        free(freq);
    }
    if (best_items) {
        double *counts = malloc(best_items * 4 * sizeof *counts);
        if (!counts) return -1;
        size_t n = 0;
        for (size_t i = 0; i < w->n_multi; i++)
            if (w->multi[i].raters == best_raters) memcpy(counts + 4 * n++, w->multi[i].counts,
                                                          sizeof w->multi[i].counts);
        sp->fleiss_kappa = arb_stat_fleiss_kappa(counts, n, 4);
        sp->fleiss_raters = best_raters;
        sp->fleiss_items = best_items;
        free(counts);
    }
    w->split_items = 0;
    w->n_obs = 0;
    w->n_multi = 0;
    return 0;
}

/* Closes the current item: set counts, majority, and the split's pair observations. */
static int finish_item(report_walk *w)
{
    if (!w->item_id) return 0;
    labels_set *set = w->set;
    long long size = (long long)w->report->split_size;
    long long split = w->item_seq >= 0 ? w->item_seq / size : -1;
    if (split != w->split_index) {
        if (finish_split(w)) return -1;
        w->split_index = split;
    }
    long long counts[4] = {0, 0, 0, 0};
    for (size_t k = 0; k < w->n_item; k++) counts[w->item_verdict[k]]++;
    char maj = majority_of(counts);
    set->n_items++;
    if (maj) set->majority[maj - 'a']++;
    else set->n_ties++;
    w->split_items++;
    if (w->n_item >= 2) {
        set->n_multi++;
        if (arb__grow(&w->multi, &w->cap_multi, w->n_multi + 1, sizeof *w->multi)) return -1;
        multi_item *mi = &w->multi[w->n_multi++];
        for (int v = 0; v < 4; v++) mi->counts[v] = (double)counts[v];
        mi->raters = w->n_item;
        /* annotators arrive sorted by name, which is their index order */
        for (size_t a = 0; a < w->n_item; a++)
            for (size_t b = a + 1; b < w->n_item; b++) {
                if (arb__grow(&w->obs, &w->cap_obs, w->n_obs + 1, sizeof *w->obs)) return -1;
                w->obs[w->n_obs++] = (pair_obs){w->item_ann[a], w->item_ann[b],
                                                w->item_verdict[a], w->item_verdict[b]};
            }
    }
    free(w->item_id);
    w->item_id = NULL;
    w->n_item = 0;
    return 0;
}

/* Index of name among the set's annotators (sorted by strcmp, as SQLite's BINARY order). */
static long long annotator_index(const labels_set *set, const char *name)
{
    size_t lo = 0, hi = set->n_annotators;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(set->annotators[mid].name, name);
        if (c == 0) return (long long)mid;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* Reads the label sets and their annotators (first walk), in (candidate, baseline, annotator)
** order: called per row by arb__store_each_label_annotator. Returns 0, -1 out of memory. */
static int set_row(void *ud, const char *cand, const char *base, const char *ann,
                   long long n_labels)
{
    arb_labels_report *rep = ud;
    if (!cand || !base || !ann) return -1;
    labels_set *set = rep->n_sets ? &rep->sets[rep->n_sets - 1] : NULL;
    if (!set || strcmp(set->candidate, cand) || strcmp(set->baseline, base)) {
        if (arb__grow(&rep->sets, &rep->cap_sets, rep->n_sets + 1, sizeof *rep->sets)) return -1;
        set = &rep->sets[rep->n_sets++];
        memset(set, 0, sizeof *set);
        set->candidate = arb__strdup(cand);
        set->baseline = arb__strdup(base);
        if (!set->candidate || !set->baseline) return -1;
    }
    if (arb__grow(&set->annotators, &set->cap_annotators, set->n_annotators + 1,
                  sizeof *set->annotators))
        return -1;
    labels_annotator *a = &set->annotators[set->n_annotators];
    if (!(a->name = arb__strdup(ann))) return -1;
    a->n_labels = (size_t)n_labels;
    set->n_labels += a->n_labels;
    set->n_annotators++;
    return 0;
}

/* Takes every label in (candidate, baseline, seq, item, annotator) order (second walk): called
** per row by arb__store_each_label. Returns 0, -1 out of memory, -2 when the label does not
** fit what the first walk saw. */
static int label_row_seen(void *ud, const char *cand, const char *base, const char *item,
                          long long seq, const char *ann, const char *verdict)
{
    report_walk *w = ud;
    arb_labels_report *rep = w->report;
    if (!cand || !base || !item || !ann || !verdict) return -1;
    if (!w->set || strcmp(w->set->candidate, cand) || strcmp(w->set->baseline, base)) {
        if (finish_item(w) || finish_split(w)) return -1;
        /* both walks order sets the same way: the next set is this one */
        if (w->next_set >= rep->n_sets || strcmp(rep->sets[w->next_set].candidate, cand) ||
            strcmp(rep->sets[w->next_set].baseline, base))
            return -2;
        w->set = &rep->sets[w->next_set++];
        w->split_index = -1;
    }
    if (w->item_id && strcmp(w->item_id, item) && finish_item(w)) return -1;
    if (!w->item_id) {
        if (!(w->item_id = arb__strdup(item))) return -1;
        w->item_seq = seq;
    }
    long long a = annotator_index(w->set, ann);
    int v = verdict[0] - 'a';
    if (a < 0 || v < 0 || v > 3) /* the first walk saw every annotator; the schema allows
                                    only a..d */
        return -2;
    if (arb__grow(&w->item_ann, &w->cap_item, w->n_item + 1, sizeof *w->item_ann) ||
        arb__grow(&w->item_verdict, &w->cap_item_v, w->n_item + 1, 1))
        return -1;
    w->item_ann[w->n_item] = (size_t)a;
    w->item_verdict[w->n_item] = (unsigned char)v;
    w->n_item++;
    return 0;
}

/* Computes the report over every label in the store (split_size 0: 600). *out is owned by the
** caller (arb_labels_report_destroy); a store without labels gives a report with no sets. On
** failure *out is NULL and the reason is in arb_store_errmsg(store). */
arb_status arb_labels_report_compute(arb_store *store, size_t split_size,
                                     arb_labels_report **out)
{
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!store) return ARB_INVALID;
    if ((unsigned long long)split_size > (1ULL << 40))
        return arb__store_fail(store, ARB_INVALID, "labels: split size %zu is too large",
                               split_size);
    arb_labels_report *rep = calloc(1, sizeof *rep);
    if (!rep) return arb__store_fail(store, ARB_NOMEM, "labels: out of memory");
    rep->split_size = split_size ? split_size : LABELS_DEFAULT_SPLIT;

    report_walk w;
    memset(&w, 0, sizeof w);
    w.report = rep;
    w.split_index = -1;
    /* one read transaction, so both queries see the same labels */
    int tx = arb__store_label_report_begin(store);
    int rc = arb__store_each_label_annotator(store, set_row, rep);
    if (!rc) rc = arb__store_each_label(store, label_row_seen, &w);
    if (!rc && w.set && (finish_item(&w) || finish_split(&w))) rc = -1;
    arb__store_label_report_end(store, tx);
    free(w.obs);
    free(w.multi);
    free(w.item_id);
    free(w.item_ann);
    free(w.item_verdict);
    if (rc) {
        arb_status st = rc == -1 ? arb__store_fail(store, ARB_NOMEM, "labels: out of memory")
                                 : arb__store_fail(store, ARB_DB, "labels: cannot read the labels: %s",
                                                   arb__store_last_db_error(store, NULL));
        arb_labels_report_destroy(rep);
        return st;
    }
    *out = rep;
    return ARB_OK;
}

/* ---- rendering ----------------------------------------------------------------------------- */

static int put_number(arb__buf *b, double x)
{
    return isnan(x) ? arb__buf_puts(b, "n/a") : arb__buf_printf(b, "%.3f", x);
}

/* Renders the report for people; names pass through arb__buf_put_safe. Caller frees. */
char *arb_labels_report_to_text(const arb_labels_report *report)
{
    if (!report) return NULL;
    arb__buf b;
    arb__buf_init(&b, 0);
    if (report->n_sets == 0 && arb__buf_puts(&b, "no expert labels\n")) goto fail;
    for (size_t s = 0; s < report->n_sets; s++) {
        const labels_set *set = &report->sets[s];
        if ((s && arb__buf_puts(&b, "\n")) || arb__buf_puts(&b, "expert labels: candidate ") ||
            arb__buf_put_safe(&b, set->candidate) || arb__buf_puts(&b, " vs baseline ") ||
            arb__buf_put_safe(&b, set->baseline) ||
            arb__buf_printf(&b, "\n  %zu items, %zu labels, %zu annotators; %zu items with >= 2 "
                                "annotators, %zu annotator ties (no majority, skipped)\n",
                            set->n_items, set->n_labels, set->n_annotators, set->n_multi,
                            set->n_ties) ||
            arb__buf_printf(&b, "  majority labels: a %zu, b %zu, c %zu, d %zu  (a = candidate "
                                "better, b = baseline better, c = both good, d = both bad)\n",
                            set->majority[0], set->majority[1], set->majority[2],
                            set->majority[3]) ||
            arb__buf_puts(&b, "  annotators:"))
            goto fail;
        for (size_t a = 0; a < set->n_annotators; a++)
            if (arb__buf_puts(&b, a ? ", " : " ") ||
                arb__buf_put_safe(&b, set->annotators[a].name) ||
                arb__buf_printf(&b, " (%zu)", set->annotators[a].n_labels))
                goto fail;
        if (arb__buf_puts(&b, "\n")) goto fail;
        for (size_t k = 0; k < set->n_splits; k++) {
            const labels_split *sp = &set->splits[k];
            if (arb__buf_printf(&b, "  split seq %lld-%lld: %zu items; mean pair Pearson ",
                                sp->first_seq, sp->last_seq, sp->n_items) ||
                put_number(&b, sp->mean_pearson) || arb__buf_puts(&b, "; Fleiss' kappa ") ||
                put_number(&b, sp->fleiss_kappa))
                goto fail;
            if (sp->fleiss_items &&
                arb__buf_printf(&b, " (%zu items with %zu annotators)", sp->fleiss_items,
                                sp->fleiss_raters))
                goto fail;
            if (arb__buf_puts(&b, "\n")) goto fail;
            if (sp->n_pairs == 0 &&
                arb__buf_puts(&b, "    no annotator pair shares 2 or more items\n"))
                goto fail;
            for (size_t i = 0; i < sp->n_pairs; i++) {
                const labels_pair *pr = &sp->pairs[i];
                if (arb__buf_puts(&b, "    ") ||
                    arb__buf_put_safe(&b, set->annotators[pr->annotator1].name) ||
                    arb__buf_puts(&b, " x ") ||
                    arb__buf_put_safe(&b, set->annotators[pr->annotator2].name) ||
                    arb__buf_printf(&b, ": %zu common items, Pearson ", pr->n_common) ||
                    put_number(&b, pr->pearson) || arb__buf_puts(&b, ", Cohen's kappa ") ||
                    put_number(&b, pr->cohen_kappa) || arb__buf_puts(&b, "\n"))
                    goto fail;
            }
        }
    }
    return arb__buf_steal(&b);
fail:
    arb__buf_free(&b);
    return NULL;
}



static json_t *split_json(const labels_set *set, const labels_split *sp)
{
    json_t *o = json_object(), *pairs = NULL;
    if (!o) return NULL;
    if (arb__json_set(o, "first_seq", json_integer(sp->first_seq)) ||
        arb__json_set(o, "last_seq", json_integer(sp->last_seq)) ||
        arb__json_set(o, "n_items", json_integer((json_int_t)sp->n_items)) ||
        arb__json_set(o, "pairs", pairs = json_array()))
        goto fail;
    for (size_t i = 0; i < sp->n_pairs; i++) {
        const labels_pair *pr = &sp->pairs[i];
        json_t *p = json_object();
        if (!p || json_array_append_new(pairs, p) ||
            arb__json_set(p, "annotator1", arb__json_name(set->annotators[pr->annotator1].name)) ||
            arb__json_set(p, "annotator2", arb__json_name(set->annotators[pr->annotator2].name)) ||
            arb__json_set(p, "n_common", json_integer((json_int_t)pr->n_common)) ||
            arb__json_set(p, "pearson", arb__json_metric(pr->pearson)) ||
            arb__json_set(p, "cohen_kappa", arb__json_metric(pr->cohen_kappa)))
            goto fail;
    }
    if (arb__json_set(o, "mean_pearson", arb__json_metric(sp->mean_pearson)) ||
        arb__json_set(o, "fleiss_kappa", arb__json_metric(sp->fleiss_kappa)) ||
        arb__json_set(o, "fleiss_raters", json_integer((json_int_t)sp->fleiss_raters)) ||
        arb__json_set(o, "fleiss_items", json_integer((json_int_t)sp->fleiss_items)))
        goto fail;
    return o;
fail:
    json_decref(o);
    return NULL;
}

static json_t *set_json(const labels_set *set)
{
    json_t *o = json_object();
    if (!o) return NULL;
    /* arb__json_set() hands each value to o at once (even when it fails), so o owns everything and a
    ** single json_decref cleans up */
    json_t *maj = json_object(), *anns = NULL, *splits = NULL;
    if (arb__json_set(o, "candidate", arb__json_name(set->candidate)) ||
        arb__json_set(o, "baseline", arb__json_name(set->baseline)) ||
        arb__json_set(o, "n_items", json_integer((json_int_t)set->n_items)) ||
        arb__json_set(o, "n_labels", json_integer((json_int_t)set->n_labels)) ||
        arb__json_set(o, "n_multi_annotated", json_integer((json_int_t)set->n_multi)) ||
        arb__json_set(o, "n_annotator_ties", json_integer((json_int_t)set->n_ties)) ||
        arb__json_set(o, "majority", maj) || arb__json_set(o, "annotators", anns = json_array()) ||
        arb__json_set(o, "splits", splits = json_array()))
        goto fail;
    for (int v = 0; v < 4; v++) {
        const char key[2] = {(char)('a' + v), '\0'};
        if (arb__json_set(maj, key, json_integer((json_int_t)set->majority[v]))) goto fail;
    }
    for (size_t a = 0; a < set->n_annotators; a++) {
        json_t *x = json_object();
        if (!x || json_array_append_new(anns, x) ||
            arb__json_set(x, "name", arb__json_name(set->annotators[a].name)) ||
            arb__json_set(x, "n_labels", json_integer((json_int_t)set->annotators[a].n_labels)))
            goto fail;
    }
    for (size_t k = 0; k < set->n_splits; k++)
        if (json_array_append_new(splits, split_json(set, &set->splits[k]))) goto fail;
    return o;
fail:
    json_decref(o);
    return NULL;
}

/* Renders the report as JSON (keys documented in README): {"split_size", "label_sets": [...]}.
** Undefined metrics are null. Caller frees. */
char *arb_labels_report_to_json(const arb_labels_report *report)
{
    if (!report) return NULL;
    json_t *root = json_object(), *sets = json_array();
    char *text = NULL;
    if (!root || !sets) {
        json_decref(sets);
        goto done;
    }
    if (arb__json_set(root, "split_size", json_integer((json_int_t)report->split_size)) ||
        json_object_set_new(root, "label_sets", sets))
        goto done;
    for (size_t s = 0; s < report->n_sets; s++)
        if (json_array_append_new(sets, set_json(&report->sets[s]))) goto done;
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
done:
    json_decref(root);
    return text;
}
