/*
** fuzz_labels.c -- libFuzzer target for the label importers of labels.c (JSONL, CSV and
** MT-Bench human judgments).
**
** The input is imported three times into an in-memory store that holds items "q1" and "7": as
** JSONL, as CSV and as fastchat-human. Whatever happens, an import is all or nothing: on
** failure the number of stored labels is unchanged and the message names the source; on
** success every stored label has a verdict a..d and the counts add up.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_store.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char items[] = "{\"id\":\"q1\",\"question\":\"one?\"}\n"
                            "{\"id\":7,\"question\":\"seven?\"}\n";

static long long count_labels(arb_store *s, const char *where)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM human_labels%s", where);
    return fuzz_count(s, sql);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static arb_store *store;
    if (!store) store = fuzz_store_with_items(items);
    static const char *const formats[] = {"jsonl", "csv", "fastchat-human"};
    for (int f = 0; f < 3; f++) {
        long long before = count_labels(store, "");
        arb_labels_import_stats st;
        arb_status rc = arb__labels_import_text(store, "fuzz", formats[f], (const char *)data,
                                                size, &st);
        long long after = count_labels(store, "");
        if (rc != ARB_OK) {
            if (after != before) abort();
            if (rc == ARB_PARSE && strncmp(arb_store_errmsg(store), "fuzz", 4) != 0) abort();
        } else {
            if (after != before + (long long)st.inserted) abort();
            if (st.inserted + st.updated + st.unchanged > st.rows) abort();
        }
        if (count_labels(store, " WHERE verdict NOT IN ('a','b','c','d')") != 0) abort();
    }
    /* keep the store small so every run starts alike */
    sqlite3_exec(arb__store_conn(store), "DELETE FROM human_labels", NULL, NULL, NULL);
    return 0;
}
