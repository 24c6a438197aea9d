/*
** fuzz_import_judgments.c -- libFuzzer target for the generic judgment importer
** (import_judgments.c) and the store's side of an import (store_import.c).
**
** The input is read twice, as JSONL and as CSV. A refusal names the source ("fuzz:line: ...").
** A file read without complaint is stored in an in-memory store (items "q1" and "7" there
** already) as source "fuzz": all or nothing (a refusal leaves the pairwise rows as they were),
** and on success the rows are the judgments read, every model verdict is the one sbs derives
** from the position verdict and the order, every A-D judgment gave one battle, and importing
** the same set again under the same source replaces it with exactly the same counts.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_store.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char items[] = "{\"id\":\"q1\",\"question\":\"one?\"}\n"
                            "{\"id\":7,\"question\":\"seven?\"}\n";

/* Stores set as source "fuzz" and checks what the file comment promises. */
static void store_and_check(arb_store *store, const arb__import_set *set)
{
    long long before = fuzz_count(store, "SELECT count(*) FROM pairwise");
    arb_import_stats st;
    arb_status rc = arb__store_put_import(store, "fuzz", "judgments", "fuzz", set, &st);
    if (rc != ARB_OK) {
        if (fuzz_count(store, "SELECT count(*) FROM pairwise") != before) abort();
        if (rc == ARB_INVALID && strncmp(arb_store_errmsg(store), "fuzz:", 5) != 0) abort();
        return;
    }
    size_t n = arb__import_set_count(set);
    if (st.judgments != n) abort();
    if (fuzz_count(store, "SELECT count(*) FROM pairwise WHERE source = 'fuzz'") != (long long)n)
        abort();
    if (fuzz_count(store, "SELECT count(*) FROM pairwise WHERE model_verdict <> CASE"
                     " WHEN position_verdict = 'A' THEN (CASE ord WHEN 0 THEN 'a' ELSE 'b' END)"
                     " WHEN position_verdict = 'B' THEN (CASE ord WHEN 0 THEN 'b' ELSE 'a' END)"
                     " ELSE lower(position_verdict) END") != 0)
        abort();
    if (fuzz_count(store, "SELECT count(*) FROM pairwise WHERE position_verdict <> 'E'") !=
        (long long)st.battles)
        abort();
    arb_import_stats again;
    if (arb__store_put_import(store, "fuzz", "judgments", "fuzz", set, &again) != ARB_OK ||
        again.judgments != st.judgments || again.battles != st.battles ||
        again.items_added != 0)
        abort();
    if (fuzz_count(store, "SELECT count(*) FROM pairwise") != before + (long long)n) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static arb_store *store;
    if (!store) store = fuzz_store_with_items(items);
    for (int csv = 0; csv < 2; csv++) {
        arb__import_set *set = arb__import_set_create();
        if (!set) abort();
        char *err = NULL;
        arb_status rc = arb__import_generic_text("fuzz", (const char *)data, size, csv, set, &err);
        if (rc == ARB_PARSE && (!err || strncmp(err, "fuzz", 4) != 0)) abort();
        if (rc == ARB_OK) store_and_check(store, set);
        free(err);
        arb__import_set_destroy(set);
    }
    /* keep the store small so every run starts alike */
    sqlite3_exec(arb__store_conn(store),
                 "DELETE FROM pairwise; DELETE FROM pointwise; DELETE FROM calls;"
                 " DELETE FROM battles; DELETE FROM battles_left_out; DELETE FROM families;"
                 " DELETE FROM judgment_sources; DELETE FROM answers;"
                 " DELETE FROM items WHERE source = 'fuzz';",
                 NULL, NULL, NULL);
    return 0;
}
