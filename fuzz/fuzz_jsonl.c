/*
** fuzz_jsonl.c -- libFuzzer target for the JSONL readers of dataset.c.
**
** The input is fed as items JSONL to an empty dataset, then as answers JSONL to a dataset that
** holds two items ("q1" and 7). Whatever happens, the dataset must stay consistent: on failure
** its counts are unchanged and the message names the source; every record found by index is
** found again by id.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arbiter.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;

    arb_dataset *ds = arb_dataset_create();
    if (!ds) return 0;
    check(ds, arb_dataset_add_items_jsonl(ds, "items.jsonl", text, size), 0, 0, "items.jsonl:");
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
