/*
** testutil.c -- see testutil.h.
*/
#define _XOPEN_SOURCE 700 /* nftw */
#include "testutil.h"

#include "test_sql.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int arb_test_make_dir(const char *prefix, char *dir, size_t size)
{
    if (snprintf(dir, size, "/tmp/arb_%s_XXXXXX", prefix) >= (int)size) return -1;
    return mkdtemp(dir) ? 0 : -1;
}

int arb_test_store_with_items(const char *prefix, const char *items_jsonl, char *dir,
                              size_t dir_size, arb_store **out)
{
    char path[256];
    *out = NULL;
    if (arb_test_make_dir(prefix, dir, dir_size)) return -1;
    snprintf(path, sizeof path, "%s/arbiter.db", dir);
    if (arb_store_open(path, out) != ARB_OK) {
        fprintf(stderr, "arb_store_open: %s\n", arb_store_errmsg(*out));
        return -1;
    }
    arb_dataset *ds = arb_dataset_create();
    int rc = -1;
    if (!ds || arb_dataset_add_items_jsonl(ds, "items.jsonl", items_jsonl,
                                           strlen(items_jsonl)) != ARB_OK)
        fprintf(stderr, "items: %s\n", ds ? arb_dataset_errmsg(ds) : "out of memory");
    else if (arb__store_put_dataset(*out, ds) != ARB_OK)
        fprintf(stderr, "put_dataset: %s\n", arb_store_errmsg(*out));
    else
        rc = 0;
    arb_dataset_destroy(ds);
    return rc;
}

int arb_test_write_file(const char *path, const void *data, size_t n)
{
    FILE *out = fopen(path, "wb");
    if (!out || fwrite(data, 1, n, out) != n || fclose(out) != 0) {
        fprintf(stderr, "arb_test_write_file: cannot write %s\n", path);
        if (out) fclose(out);
        return -1;
    }
    return 0;
}

const char *arb_test_scratch(const char *dir, const char *name, const char *text, char *out,
                             size_t size)
{
    if (snprintf(out, size, "%s/%s", dir, name) >= (int)size) return NULL;
    for (char *p = out + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(out, 0700);
        *p = '/';
    }
    if (text && arb_test_write_file(out, text, strlen(text))) return NULL;
    return out;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void arb_test_remove_dir(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

long long arb_test_query_int(arb_store *store, const char *sql)
{
    sqlite3_stmt *q = NULL;
    long long v = -1;
    if (sqlite3_prepare_v2(arb__store_conn(store), sql, -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

long long arb_test_rows_differ(arb_store *store, const char *what_main, const char *what_b)
{
    char sql[2048];
    if (snprintf(sql, sizeof sql,
                 "SELECT (SELECT count(*) FROM (%s EXCEPT %s)) + (SELECT count(*) FROM (%s EXCEPT %s))",
                 what_main, what_b, what_b, what_main) >= (int)sizeof sql)
        return -1;
    return arb_test_query_int(store, sql);
}

int arb_test_exec_sql(arb_store *store, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *sql = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    if (!sql) {
        fprintf(stderr, "arb_test_exec_sql: out of memory\n");
        return -1;
    }
    char *err = NULL;
    int rc = sqlite3_exec(arb__store_conn(store), sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) fprintf(stderr, "%s: %s\n", sql, err ? err : "?");
    sqlite3_free(err);
    sqlite3_free(sql);
    return rc == SQLITE_OK ? 0 : -1;
}

int arb_test_load_both(const char *dir, const char *sub, const char *items_text,
                       const char *answers_text, char *items, char *answers, size_t path_size,
                       arb_dataset **whole, arb_dataset **indexed)
{
    char name[64];
    *whole = *indexed = NULL;
    items[0] = answers[0] = '\0';
    arb__dataset_whole_limit = 0; /* index these small files */
    snprintf(name, sizeof name, "%sitems.jsonl", sub);
    if (!arb_test_scratch(dir, name, items_text, items, path_size)) goto fail;
    snprintf(name, sizeof name, "%sanswers.jsonl", sub);
    if (!arb_test_scratch(dir, name, answers_text, answers, path_size)) goto fail;
    *whole = arb_dataset_create();
    *indexed = arb_dataset_create();
    if (!*whole || !*indexed) goto fail;
    if (arb_dataset_load(*whole, items, answers) != ARB_OK) {
        fprintf(stderr, "load whole: %s\n", arb_dataset_errmsg(*whole));
        goto fail;
    }
    if (arb_dataset_load_indexed(*indexed, items, answers) != ARB_OK) {
        fprintf(stderr, "load indexed: %s\n", arb_dataset_errmsg(*indexed));
        goto fail;
    }
    if (!arb__dataset_is_indexed(*indexed) || arb__dataset_is_indexed(*whole)) {
        fprintf(stderr, "load_both: the datasets are not one whole and one indexed\n");
        goto fail;
    }
    return 0;
fail:
    fprintf(stderr, "load_both: cannot write or load %s and %s\n", items, answers);
    arb_dataset_destroy(*whole);
    arb_dataset_destroy(*indexed);
    *whole = *indexed = NULL;
    return -1;
}

int arb_test_put_sbs_judgment(arb_store *store, const arb__pairwise_row *row,
                              const char *request_json)
{
    static int next_call; /* keys differ across every judgment of the process */
    arb_judge_config jc;
    memset(&jc, 0, sizeof jc);
    jc.name = row->judge_name;
    jc.base_url = "http://127.0.0.1:9/v1";
    jc.model = row->judge_name;
    jc.sampling = arb_sampling_default();
    if (arb__store_put_judge(store, &jc) != ARB_OK) goto fail;

    char key_src[64], key[33], content[16];
    snprintf(key_src, sizeof key_src, "test call %d", next_call++);
    arb__hash_hex(key_src, strlen(key_src), key);
    snprintf(content, sizeof content, "[[%c]]", row->position_verdict);
    arb__call_record rec;
    memset(&rec, 0, sizeof rec);
    rec.key = key;
    rec.judge_name = row->judge_name;
    rec.model = row->judge_name;
    rec.request_json = request_json ? request_json : "{}";
    rec.rep = row->rep;
    rec.ok = 1;
    rec.content = content;
    rec.http_status = 200;
    rec.attempts = 1;
    rec.prompt_tokens = -1;
    rec.completion_tokens = -1;
    long long call_id = 0;
    if (arb__store_put_call(store, &rec, &call_id) != ARB_OK) goto fail;

    arb__pairwise_row r = *row;
    r.protocol = "sbs";
    r.model_verdict = arb_verdict_to_model(row->position_verdict, row->order);
    r.call_id = call_id;
    if (arb__store_put_pairwise(store, &r) != ARB_OK) goto fail;
    return 0;
fail:
    fprintf(stderr, "arb_test_put_sbs_judgment: %s\n", arb_store_errmsg(store));
    return -1;
}
