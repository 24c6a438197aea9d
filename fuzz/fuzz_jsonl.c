/*
** fuzz_jsonl.c -- libFuzzer target for the JSONL readers of dataset.c.
**
** The input is fed as items JSONL to an empty dataset, then as answers JSONL to a dataset that
** holds two items ("q1" and 7). Whatever happens, the dataset must stay consistent: on failure
** its counts are unchanged and the message names the source; every record found by index is
** found again by id. An input of one line is also read with jansson alone (as the loader did
** before it read the usual lines itself): both accept it or both refuse it, with the same
** strings.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arbiter.h"

#include <jansson.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const arb_dataset *ds, arb_status st, size_t items_before,
                  size_t answers_before, const char *source)
{
    if (st != ARB_OK) {
        if (arb_dataset_item_count(ds) != items_before) abort();
        if (arb_dataset_answer_count(ds) != answers_before) abort();
        if (st == ARB_PARSE && strncmp(arb_dataset_errmsg(ds), source, strlen(source)) != 0)
            abort();
    }
    for (size_t i = 0; i < arb_dataset_item_count(ds); i++) {
        const arb_item *it = arb_dataset_item(ds, i);
        /* question is optional since pointwise items (METHODS §8) may hold other task inputs */
        if (arb_dataset_find_item(ds, it->id) != it || !it->extra_json) abort();
    }
    for (size_t i = 0; i < arb_dataset_answer_count(ds); i++) {
        const arb_answer *a = arb_dataset_answer(ds, i);
        if (arb_dataset_find_answer(ds, a->item_id, a->model) != a || !a->answer) abort();
    }
}

static int same(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

/* One items line read with jansson as the loader's own reading must (dataset.c parse_line):
** aborts when the loader's result st / ds differs. */
static void check_as_jansson(const char *line, size_t n, arb_status st, const arb_dataset *ds)
{
    static const char *const known[] = {"question", "reference", "category", "language", "group",
                                        "context", "source", "document", "dialog"};
    int blank = 1;
    for (size_t i = 0; i < n && blank; i++) blank = line[i] == ' ' || line[i] == '\t' || line[i] == '\r';
    if (blank) return;
    json_t *probe = json_stringn(line, n); /* UTF-8 (the loader checks it first) */
    json_t *o = probe ? json_loadb(line, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL) : NULL;
    json_decref(probe);
    const char *values[9] = {0};
    char id_text[32], *extra = NULL;
    const char *id = NULL;
    json_t *v = json_object_get(o, "id"), *rest = NULL;
    int ok = json_is_object(o) && (json_is_integer(v) || (json_is_string(v) && json_string_length(v)));
    if (ok && json_is_integer(v)) {
        snprintf(id_text, sizeof id_text, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        id = id_text;
    } else if (ok) {
        id = json_string_value(v);
    }
    if (ok) rest = json_object();
    const char *key;
    json_t *value;
    if (ok) json_object_foreach(o, key, value) {
        int is_known = !strcmp(key, "id");
        for (size_t k = 0; k < 9; k++) {
            if (strcmp(key, known[k])) continue;
            is_known = 1;
            if (json_is_string(value)) values[k] = json_string_value(value);
            else if (!json_is_null(value)) ok = 0;
        }
        if (!is_known) json_object_set(rest, key, value);
    }
    if (ok) extra = json_dumps(rest, JSON_COMPACT);
    if ((st == ARB_OK) != ok) abort();
    if (ok) {
        const arb_item *it = arb_dataset_item(ds, 0);
        const char *got[9] = {it->question, it->reference, it->category, it->language, it->group,
                              it->context, it->source_text, it->document, it->dialog};
        if (arb_dataset_item_count(ds) != 1 || !same(it->id, id) || !same(it->extra_json, extra))
            abort();
        for (size_t k = 0; k < 9; k++)
            if (!same(got[k], values[k])) abort();
    }
    free(extra);
    json_decref(rest);
    json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;

    arb_dataset *ds = arb_dataset_create();
    if (!ds) return 0;
    arb_status st = arb_dataset_add_items_jsonl(ds, "items.jsonl", text, size);
    check(ds, st, 0, 0, "items.jsonl:");
    /* one line, no NUL (jansson's reading of a NUL byte is its own), no byte order mark */
    if (!memchr(text, '\n', size) && !memchr(text, '\0', size) &&
        !(size >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)))
        check_as_jansson(text, size, st, ds);
    arb_dataset_destroy(ds);

    static const char items[] = "{\"id\":\"q1\",\"question\":\"Q1\"}\n"
                                "{\"id\":7,\"question\":\"Q7\"}\n";
    ds = arb_dataset_create();
    if (!ds) return 0;
    if (arb_dataset_add_items_jsonl(ds, "items.jsonl", items, sizeof items - 1) != ARB_OK) abort();
    check(ds, arb_dataset_add_answers_jsonl(ds, "answers.jsonl", text, size), 2, 0,
          "answers.jsonl:");
    arb_dataset_destroy(ds);
    return 0;
}
