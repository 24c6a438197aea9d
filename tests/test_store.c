/*
** test_store.c -- tests of the SQLite store (store.c): opening and refusing files, the schema
** version, calls (cache semantics), pairwise rows and their order, datasets, judges, runs,
** export as JSON lines and CSV, crash safety under SIGKILL, leases on calls (two processes on
** one store) and removing a store that a failed command created.
**
** Each test gets a fresh temporary directory. Run one test alone with ARB_TEST=<name>.
*/
#include "test_sql.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <zstd.h>

typedef struct fixture {
    char dir[256];
    char db[300];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/arb_store_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->db, sizeof f->db, "%s/arbiter.db", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    DIR *d = opendir(f->dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[600];
            snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static arb_store *open_ok(const char *path)
{
    arb_store *s = NULL;
    arb_status st = arb_store_open(path, &s);
    if (st) fail_msg("arb_store_open(%s): %s", path, arb_store_errmsg(s));
    assert_string_equal(arb_store_errmsg(s), "");
    return s;
}

static long long query_int(arb_store *s, const char *sql)
{
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    long long v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* Returns the first column of the first row as a new string ("(null)" for NULL). */
static char *query_text(arb_store *s, const char *sql)
{
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    const char *t = (const char *)sqlite3_column_text(q, 0);
    char *r = strdup(t ? t : "(null)");
    sqlite3_finalize(q);
    return r;
}

static void assert_query_text(arb_store *s, const char *sql, const char *expected)
{
    char *t = query_text(s, sql);
    assert_string_equal(t, expected);
    free(t);
}

static char *read_all(const char *path, size_t *len)
{
    char *err = NULL;
    char *data = arb__read_file(path, len, &err);
    if (!data) fail_msg("%s", err ? err : "read failed");
    return data;
}

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* A dataset of items (JSONL) and answers (JSONL). */
static arb_dataset *make_dataset(const char *items, const char *answers)
{
    arb_dataset *ds = arb_dataset_create();
    assert_non_null(ds);
    if (arb_dataset_add_items_jsonl(ds, "items.jsonl", items, strlen(items)))
        fail_msg("items: %s", arb_dataset_errmsg(ds));
    if (answers && arb_dataset_add_answers_jsonl(ds, "answers.jsonl", answers, strlen(answers)))
        fail_msg("answers: %s", arb_dataset_errmsg(ds));
    return ds;
}

static void put_items(arb_store *s, const char *items)
{
    arb_dataset *ds = make_dataset(items, NULL);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    arb_dataset_destroy(ds);
}

static arb__call_record call_record(const char *key, int ok, const char *content)
{
    arb__call_record r = {
        .key = key,
        .judge_name = "j1",
        .model = "judge-model",
        .request_json = "{\"model\":\"judge-model\"}",
        .rep = 0,
        .ok = ok,
        .content = content,
        .raw_reply = NULL,
        .error = ok ? NULL : "HTTP 503 after 7 attempts",
        .http_status = ok ? 200 : 503,
        .attempts = ok ? 1 : 7,
        .prompt_tokens = ok ? 100 : -1,
        .completion_tokens = ok ? 20 : -1,
        .latency_ms = 12.5,
        .reasoning_tokens = -1, /* not reported */
        .cached_tokens = ok ? 30 : -1,
        .cost_usd = ok ? 0.00025 : NAN,
    };
    return r;
}

static long long put_call(arb_store *s, const arb__call_record *rec)
{
    long long id = -1;
    if (arb__store_put_call(s, rec, &id)) fail_msg("put_call: %s", arb_store_errmsg(s));
    assert_true(id > 0);
    return id;
}

/* METHODS 2.2, written out here so these tests do not depend on verdict.c. */
static char model_verdict(char position_verdict, int order)
{
    switch (position_verdict) {
    case 'A': return order ? 'b' : 'a';
    case 'B': return order ? 'a' : 'b';
    case 'C': return 'c';
    case 'D': return 'd';
    default: return 'e';
    }
}

static arb__pairwise_row pairwise_row(const char *judge, const char *item, int order, int rep,
                                      char pv, long long call_id)
{
    arb__pairwise_row r = {
        .protocol = "sbs",
        .judge_name = judge,
        .item_id = item,
        .candidate = "cand",
        .baseline = "base",
        .template_name = "II-reason",
        .options = 4,
        .order = order,
        .rep = rep,
        .position_verdict = pv,
        .model_verdict = model_verdict(pv, order),
        .call_id = call_id,
    };
    return r;
}

static void put_pairwise(arb_store *s, const arb__pairwise_row *row)
{
    if (arb__store_put_pairwise(s, row)) fail_msg("put_pairwise: %s", arb_store_errmsg(s));
}

/* ---- opening ------------------------------------------------------------------------------ */

/* A call's prompt length as its builder counted it (built) is stored as told, not
** counted again in the request; a record that does not tell (a zeroed one: imports, batch
** results) gets the store's count, inside a transaction or not. */
static void test_call_prompt_chars_told_or_counted(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    const char *request = "{\"messages\":[{\"content\":\"caf\xc3\xa9\",\"role\":\"user\"}],"
                          "\"model\":\"judge-model\"}";
    arb__call_record told = call_record("k-told", 1, "[[A]]");
    told.request_json = request;
    told.built = 1;
    told.prompt_chars = 7; /* not the body's 4: proves the store took it as told */
    arb__call_record counted = call_record("k-counted", 1, "[[B]]");
    counted.request_json = request;
    counted.prompt_chars = 7; /* ignored: built is 0 */
    long long id_told = put_call(s, &told), id_counted = put_call(s, &counted);
    assert_int_equal(arb__store_begin(s), ARB_OK);
    arb__call_record told_tx = told, counted_tx = counted;
    told_tx.key = "k-told-tx";
    counted_tx.key = "k-counted-tx";
    long long id_told_tx = put_call(s, &told_tx), id_counted_tx = put_call(s, &counted_tx);
    assert_int_equal(arb__store_commit(s), ARB_OK);
    char sql[128];
    long long want[4][2] = {{id_told, 7}, {id_counted, 4}, {id_told_tx, 7}, {id_counted_tx, 4}};
    for (int i = 0; i < 4; i++) {
        snprintf(sql, sizeof sql, "SELECT prompt_chars FROM calls WHERE id = %lld", want[i][0]);
        assert_int_equal(query_int(s, sql), want[i][1]);
    }
    arb_store_close(s);
}

/* Runs first in this process, before SQLite is initialised: the CLI's setup turns SQLite's
** memory statistics off (a store opened and written then counts no memory), and once SQLite is
** initialised it is refused and changes nothing. */
static void test_setup_process_turns_off_memory_statistics(void **state)
{
    fixture *f = *state;
    assert_int_equal(arb_store_setup_process(), ARB_OK);
    arb_store *s = NULL;
    assert_int_equal(arb_store_open(f->db, &s), ARB_OK);
    assert_int_equal(sqlite3_exec(arb__store_conn(s), "CREATE TEMP TABLE t(x); "
                                  "INSERT INTO t VALUES (zeroblob(100000));", NULL, NULL, NULL),
                     SQLITE_OK);
    assert_true(sqlite3_memory_used() == 0); /* counted, it is several MB here */
    assert_int_equal(arb_store_setup_process(), ARB_INVALID);
    arb_store_close(s);
}

static void test_errmsg_never_null(void **state)
{
    (void)state;
    assert_non_null(arb_store_errmsg(NULL));
    arb_store *s = NULL;
    assert_int_equal(arb_store_open(NULL, &s), ARB_INVALID);
    assert_non_null(s);
    assert_non_null(strstr(arb_store_errmsg(s), "path"));
    arb_store_close(s);
    arb_store_close(NULL);
}

static void test_open_close_reopen(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    assert_query_text(s, "PRAGMA journal_mode", "wal");
    assert_int_equal(query_int(s, "PRAGMA synchronous"), 1); /* NORMAL */
    assert_int_equal(query_int(s, "PRAGMA foreign_keys"), 1);
    assert_int_equal(query_int(s, "PRAGMA busy_timeout"), 10000);
    assert_int_equal(query_int(s, "PRAGMA temp_store"), 2); /* MEMORY */
    static const char *const tables[] = {
        "runs", "judges", "items", "answers", "calls", "pairwise", "pointwise", "scores",
        "dialogues", "dialogue_turns", "personas", "persona_attributions", "human_labels",
        "battles"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char sql[200];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM sqlite_schema WHERE type IN ('table', 'view')"
                 " AND name = '%s'",
                 tables[i]);
        if (query_int(s, sql) != 1) fail_msg("table %s missing", tables[i]);
    }
    long long objects = query_int(s, "SELECT count(*) FROM sqlite_schema");
    long long id = put_call(s, &(arb__call_record){.key = "k-reopen", .judge_name = "j",
                                                   .model = "m", .request_json = "{}", .ok = 1,
                                                   .content = "[[A]]", .prompt_tokens = -1,
                                                   .completion_tokens = -1});
    arb_store_close(s);

    s = open_ok(f->db); /* reopening creates nothing and keeps the data */
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema"), objects);
    int found = 0;
    long long got = 0;
    char *content = NULL;
    assert_int_equal(arb__store_find_call(s, "k-reopen", &found, &got, &content), ARB_OK);
    assert_int_equal(found, 1);
    assert_int_equal(got, id);
    assert_string_equal(content, "[[A]]");
    arb_free(content);
    arb_store_close(s);
}

static void test_schema_version(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    assert_int_equal(query_int(s, "PRAGMA user_version"), 16);
    assert_int_equal(query_int(s, "PRAGMA application_id"), 0x41524274);
    /* Pretend a newer arbiter wrote the file. */
    assert_int_equal(sqlite3_exec(arb__store_conn(s), "PRAGMA user_version = 17", NULL, NULL, NULL),
                     SQLITE_OK);
    arb_store_close(s);

    s = NULL;
    assert_int_equal(arb_store_open(f->db, &s), ARB_DB);
    assert_non_null(strstr(arb_store_errmsg(s), "newer arbiter"));
    assert_non_null(strstr(arb_store_errmsg(s), "schema version 17"));
    arb_store_close(s);
}

/* Runs undo_v15, undo_v14 and UNDO_V13, then sql on the store (making it an older version), closes it,
** reopens it and checks that it was upgraded to the current version. Returns the reopened
** store. */
/* Undoes migrations 9 (batch calls), 8 (providers) and 7 (imported judgments, families), for the tests that build older stores. */
/* Undoes migration 11 (compact requests): every request back to TEXT, as sent. */
/* Undoes migration 12 (compact texts): every text back to TEXT (the retirement triggers take
** each compact one for a changed text: those copies go), the dictionary gone. */
/* Undoes migration 13 (compact judgment rows): call keys and times back to text, endpoints
** back in calls, pairwise back to a table with row ids and its two indexes (foreign keys off
** while calls is rebuilt). What is left of schema 13 (the declared key types of call_leases and
** batch_calls) changes no data. */
#define ISO_OF_MS(x)                                                                           \
    "CASE typeof(" x ") WHEN 'integer' THEN strftime('%Y-%m-%dT%H:%M:%fZ', " x " / 1000.0,"  \
    " 'unixepoch') ELSE " x " END"
#define UNDO_V13                                                                               \
    "DROP TRIGGER pairwise_call_inserted; DROP TRIGGER pairwise_call_updated;"                 \
    "PRAGMA foreign_keys = OFF;"                                                               \
    "CREATE TABLE calls_v12 (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,"                \
    " judge_name TEXT NOT NULL, model TEXT NOT NULL, request TEXT NOT NULL,"                   \
    " rep INTEGER NOT NULL DEFAULT 0, ok INTEGER NOT NULL, content TEXT, raw_reply TEXT,"      \
    " error TEXT, http_status INTEGER, attempts INTEGER NOT NULL DEFAULT 0,"                   \
    " prompt_tokens INTEGER, completion_tokens INTEGER, latency_ms REAL,"                      \
    " created_at TEXT NOT NULL DEFAULT 'then', reasoning TEXT, reasoning_tokens INTEGER,"      \
    " cached_tokens INTEGER, logprobs TEXT, endpoint TEXT, cost_usd REAL, prompt_chars INTEGER);"\
    "INSERT INTO calls_v12 SELECT id, CASE typeof(key) WHEN 'blob' THEN lower(hex(key))"       \
    " ELSE key END, judge_name, model, request, rep, ok, content, raw_reply, error, http_status,"\
    " attempts, prompt_tokens, completion_tokens, latency_ms, " ISO_OF_MS("created_at") ","    \
    " reasoning, reasoning_tokens, cached_tokens, logprobs,"                                   \
    " (SELECT url FROM endpoints e WHERE e.id = endpoint_id), cost_usd, prompt_chars"          \
    " FROM calls;"                                                                             \
    "DROP TABLE calls; ALTER TABLE calls_v12 RENAME TO calls; DROP TABLE endpoints;"           \
    "PRAGMA foreign_keys = ON;"                                                                \
    "UPDATE call_leases SET key = lower(hex(key)) WHERE typeof(key) = 'blob';"                 \
    "UPDATE batch_calls SET key = lower(hex(key)) WHERE typeof(key) = 'blob';"                 \
    "CREATE TABLE pairwise_v12 (id INTEGER PRIMARY KEY, protocol TEXT NOT NULL,"               \
    " judge_name TEXT NOT NULL, item_id TEXT NOT NULL REFERENCES items(id),"                   \
    " candidate TEXT NOT NULL, baseline TEXT NOT NULL, template_name TEXT NOT NULL,"           \
    " options INTEGER NOT NULL, ord INTEGER NOT NULL, rep INTEGER NOT NULL,"                   \
    " position_verdict TEXT NOT NULL, model_verdict TEXT NOT NULL,"                            \
    " call_id INTEGER REFERENCES calls(id), judged_at TEXT NOT NULL DEFAULT 'then',"           \
    " source TEXT REFERENCES judgment_sources(name), strength INTEGER,"                        \
    " extra TEXT NOT NULL DEFAULT '{}', UNIQUE (protocol, judge_name, candidate, baseline,"    \
    " template_name, options, item_id, rep, ord));"                                            \
    "INSERT INTO pairwise_v12 (protocol, judge_name, item_id, candidate, baseline,"            \
    " template_name, options, ord, rep, position_verdict, model_verdict, call_id, judged_at,"  \
    " source, strength, extra) SELECT protocol, judge_name, item_id, candidate, baseline,"     \
    " template_name, options, ord, rep, position_verdict, model_verdict, call_id, "            \
    ISO_OF_MS("judged_at") ", source, strength, extra FROM pairwise;"                          \
    "DROP TABLE pairwise;"                                                                     \
    "ALTER TABLE pairwise_v12 RENAME TO pairwise;"                                             \
    "CREATE INDEX pairwise_by_call ON pairwise(call_id);"                                      \
    "CREATE INDEX pairwise_by_source ON pairwise(source) WHERE source IS NOT NULL;"
#define UNDO_V12                                                                               \
    "UPDATE items SET question = arb_text(question), reference = arb_text(reference),"         \
    " source = arb_text(source);"                                                              \
    "UPDATE answers SET answer = arb_text(answer), source = arb_text(source);"                 \
    "DELETE FROM retired_texts WHERE typeof(body) = 'blob';"                                   \
    "DROP TABLE text_dicts;"
#define UNDO_V11                                                                               \
    UNDO_V12                                                                                   \
    "UPDATE calls SET request = arb_request(request) WHERE typeof(request) = 'blob';"          \
    "DROP TRIGGER items_retire_question; DROP TRIGGER items_retire_deleted;"                  \
    "DROP TRIGGER answers_retire_answer; DROP TRIGGER answers_retire_deleted;"                \
    "DROP TABLE request_texts; DROP TABLE retired_texts;"                                      \
    "ALTER TABLE calls DROP COLUMN prompt_chars;"
#define UNDO_V7                                                                                \
    UNDO_V11                                                                                   \
    "DROP TABLE batch_calls; DROP TABLE batches;"                                              \
    "ALTER TABLE calls DROP COLUMN reasoning; ALTER TABLE calls DROP COLUMN reasoning_tokens;"  \
    "ALTER TABLE calls DROP COLUMN cached_tokens; ALTER TABLE calls DROP COLUMN logprobs;"     \
    "ALTER TABLE calls DROP COLUMN endpoint; ALTER TABLE calls DROP COLUMN cost_usd;"          \
    "ALTER TABLE judges DROP COLUMN price;"                                                    \
    "DROP INDEX pairwise_by_source; DROP INDEX pointwise_by_source;"                            \
    "ALTER TABLE pairwise DROP COLUMN source; ALTER TABLE pairwise DROP COLUMN strength;"       \
    "ALTER TABLE pairwise DROP COLUMN extra; ALTER TABLE pointwise DROP COLUMN source;"         \
    "DROP TABLE judgment_sources; DROP TABLE families;"

/* Undoes migration 14 (cheaper writes per call): pairwise's CHECKs back to IN lists (edited in
** place as the migration does), the trigger that checks a judgment's call, the index of the
** leases by owner; the store reads as schema 13. */
static void undo_v14(arb_store *s)
{
    sqlite3 *db = arb__store_conn(s);
    long long version = query_int(s, "PRAGMA schema_version");
    char *sql = sqlite3_mprintf(
        "PRAGMA writable_schema = ON;"
        "UPDATE sqlite_schema SET sql = replace(replace(replace(sql,"
        " 'CHECK (options = 2 OR options = 3 OR options = 4)', 'CHECK (options IN (2, 3, 4))'),"
        " 'CHECK (position_verdict = ''A'' OR position_verdict = ''B''' || char(10) ||"
        " '    OR position_verdict = ''C'' OR position_verdict = ''D'' OR position_verdict = ''E'')',"
        " 'CHECK (position_verdict IN (''A'',''B'',''C'',''D'',''E''))'),"
        " 'CHECK (model_verdict = ''a'' OR model_verdict = ''b''' || char(10) ||"
        " '    OR model_verdict = ''c'' OR model_verdict = ''d'' OR model_verdict = ''e'')',"
        " 'CHECK (model_verdict IN (''a'',''b'',''c'',''d'',''e''))')"
        " WHERE name = 'pairwise';"
        "PRAGMA schema_version = %lld; PRAGMA writable_schema = OFF;"
        "CREATE TRIGGER pairwise_call_inserted BEFORE INSERT ON pairwise"
        "  WHEN new.call_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM calls WHERE id = new.call_id)"
        "  BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: no such call'); END;"
        "CREATE INDEX call_leases_by_owner ON call_leases(owner);"
        "PRAGMA user_version = 13;",
        version + 1);
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) fail_msg("undo v14: %s", err);
    sqlite3_free(sql);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'pairwise'"
                                  " AND instr(sql, 'options IN (2, 3, 4)')"
                                  " AND instr(sql, 'position_verdict IN (''A'',''B'',''C'',''D'',''E'')')"
                                  " AND instr(sql, 'model_verdict IN (''a'',''b'',''c'',''d'',''e'')')"),
                     1);
}

/* Undoes migration 15 (cheaper rows of the dataset, a lease row per claim): answers back to a
** table with row ids, its foreign key to items and its CHECK on extra (rows kept, retirement
** triggers created again), call_leases back to a row per call (a row of one call kept), items' CHECK on extra and pairwise's comment on call_id back as schema 14 wrote them
** (edited in place as the migration does); the store reads as schema 14. */
static void undo_v15(arb_store *s)
{
    sqlite3 *db = arb__store_conn(s);
    long long version = query_int(s, "PRAGMA schema_version");
    char *sql = sqlite3_mprintf(
        "PRAGMA foreign_keys = OFF;"
        "CREATE TABLE answers_v14 (item_id TEXT NOT NULL REFERENCES items(id),"
        " model TEXT NOT NULL, answer TEXT NOT NULL, extra TEXT NOT NULL DEFAULT '{}'"
        " CONSTRAINT extra_is_json CHECK (json_valid(extra)), source TEXT,"
        " PRIMARY KEY (item_id, model));"
        "INSERT INTO answers_v14 SELECT item_id, model, answer, extra, source FROM answers;"
        "DROP TABLE answers; ALTER TABLE answers_v14 RENAME TO answers;"
        "CREATE TRIGGER answers_retire_answer BEFORE UPDATE OF answer ON answers"
        "  WHEN old.answer IS NOT new.answer BEGIN"
        "  INSERT INTO retired_texts(item_id, model, body) SELECT old.item_id, old.model,"
        "   old.answer WHERE NOT EXISTS (SELECT 1 FROM retired_texts WHERE item_id ="
        "   old.item_id AND model = old.model AND body = old.answer); END;"
        "CREATE TRIGGER answers_retire_deleted BEFORE DELETE ON answers BEGIN"
        "  INSERT INTO retired_texts(item_id, model, body) SELECT old.item_id, old.model,"
        "   old.answer WHERE NOT EXISTS (SELECT 1 FROM retired_texts WHERE item_id ="
        "   old.item_id AND model = old.model AND body = old.answer); END;"
        "CREATE TABLE call_leases_v14 (key BLOB PRIMARY KEY, owner TEXT NOT NULL,"
        " host TEXT NOT NULL, pid INTEGER NOT NULL, expires_at REAL NOT NULL) WITHOUT ROWID;"
        "INSERT INTO call_leases_v14 SELECT keys, owner, host, pid, expires_at FROM call_leases"
        " WHERE length(keys) = 16;"
        "DROP TABLE call_leases; ALTER TABLE call_leases_v14 RENAME TO call_leases;"
        "PRAGMA foreign_keys = ON;"
        "PRAGMA writable_schema = ON;"
        "UPDATE sqlite_schema SET sql = replace(sql,"
        " 'DEFAULT ''{}'',    -- fields arbiter does not know, as a JSON' || char(10) ||"
        " '                                             -- object (the store writes valid JSON)',"
        " 'DEFAULT ''{}''     -- fields arbiter does not know' || char(10) ||"
        " '              CONSTRAINT extra_is_json CHECK (json_valid(extra)),')"
        " WHERE name = 'items';"
        "UPDATE sqlite_schema SET sql = replace(sql,"
        " '-- checked by the store on insert and by' || char(10) ||"
        " '                                             -- the trigger below on update, not a',"
        " '-- checked by the triggers below, not a') WHERE name = 'pairwise';"
        "PRAGMA schema_version = %lld; PRAGMA writable_schema = OFF;"
        "PRAGMA user_version = 14;",
        version + 1);
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) fail_msg("undo v15: %s", err);
    sqlite3_free(sql);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'items'"
                                  " AND instr(sql, 'CHECK (json_valid(extra))')"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'pairwise'"
                                  " AND instr(sql, 'checked by the triggers below')"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pragma_foreign_key_list('answers')"), 1);
}

#define PAIRWISE_V15_TABLE \
    "CREATE TABLE \"pairwise\" (\n" \
    "  -- Pairwise judgments (METHODS 2): side-by-side, soft/hard multi-agent finals, peer\n" \
    "  -- reviews. One row per (judge, item, pair, template, option mode, order, repetition),\n" \
    "  -- the primary key; a rerun updates the row.\n" \
    "  protocol          TEXT NOT NULL,           -- 'sbs', ...\n" \
    "  judge_name        TEXT NOT NULL,\n" \
    "  item_id           TEXT NOT NULL REFERENCES items(id),\n" \
    "  candidate         TEXT NOT NULL,           -- model under test\n" \
    "  baseline          TEXT NOT NULL,\n" \
    "  template_name     TEXT NOT NULL,\n" \
    "  options           INTEGER NOT NULL CHECK (options = 2 OR options = 3 OR options = 4), -- METHODS 2.1\n" \
    "  ord               INTEGER NOT NULL CHECK (ord IN (0, 1)), -- order: 0 = candidate first\n" \
    "  rep               INTEGER NOT NULL CHECK (rep >= 0),\n" \
    "  position_verdict  TEXT NOT NULL CHECK (position_verdict = 'A' OR position_verdict = 'B'\n" \
    "    OR position_verdict = 'C' OR position_verdict = 'D' OR position_verdict = 'E'),\n" \
    "  model_verdict     TEXT NOT NULL CHECK (model_verdict = 'a' OR model_verdict = 'b'\n" \
    "    OR model_verdict = 'c' OR model_verdict = 'd' OR model_verdict = 'e'),\n" \
    "  call_id           INTEGER,                 -- calls.id of the call that produced it:\n" \
    "                                             -- checked by the store on insert and by\n" \
    "                                             -- the trigger below on update, not a\n" \
    "                                             -- foreign key, whose check on deleting a\n" \
    "                                             -- call needs an index on it (about 60 bytes\n" \
    "                                             -- a judgment); calls are deleted only with\n" \
    "                                             -- the rows that use them (re-import)\n" \
    "  judged_at         INTEGER NOT NULL DEFAULT (CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)), -- unix time in ms\n" \
    "  source            TEXT REFERENCES judgment_sources(name), -- NULL: judged by arbiter;\n" \
    "                                             -- else the import source\n" \
    "  strength          INTEGER                  -- Arena-Hard A>>B = 2, A>B = 1; else NULL\n" \
    "    CHECK (strength IS NULL OR strength IN (1, 2)),\n" \
    "  extra             TEXT NOT NULL DEFAULT '{}' -- imported fields arbiter does not know\n" \
    "    CONSTRAINT extra_is_json CHECK (json_valid(extra)),\n" \
    "  -- Column order chosen so this key also serves the audit's grouping.\n" \
    "  PRIMARY KEY (protocol, judge_name, candidate, baseline, template_name, options,\n" \
    "               item_id, rep, ord)\n" \
    ") WITHOUT ROWID;"

/* Undoes migration 16 (a cheaper row per judgment): the view pairwise and the tables behind it
** back to schema 15's table pairwise (rows kept, its index by source and its trigger on
** call_id created again), pointwise's CHECKs on kind and task back to IN lists and its foreign
** key to items back (edited in place as the migration does); the store reads as schema 15. */
static void undo_v16(arb_store *s)
{
    sqlite3 *db = arb__store_conn(s);
    char *err = NULL;
    if (sqlite3_exec(
            db,
            "PRAGMA foreign_keys = OFF; DROP VIEW pairwise;" PAIRWISE_V15_TABLE
            "INSERT INTO pairwise (protocol, judge_name, item_id, candidate, baseline,"
            " template_name, options, ord, rep, position_verdict, model_verdict, call_id,"
            " judged_at, source, strength, extra)"
            " SELECT s.protocol, s.judge_name, j.item_id, s.candidate, s.baseline,"
            " s.template_name, s.options, j.ord, j.rep, j.position_verdict, j.model_verdict,"
            " j.call_id, j.judged_at, j.source, j.strength, j.extra"
            " FROM pairwise_judgments j JOIN pairwise_setups s ON s.id = j.setup_id;"
            "DROP TABLE pairwise_judgments; DROP TABLE pairwise_setups;"
            "CREATE INDEX pairwise_by_source ON pairwise(source) WHERE source IS NOT NULL;"
            "CREATE TRIGGER pairwise_call_updated BEFORE UPDATE OF call_id ON pairwise\n"
            "  WHEN new.call_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM calls WHERE id ="
            " new.call_id)\n"
            "  BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: no such call'); END;"
            "PRAGMA foreign_keys = ON;",
            NULL, NULL, &err) != SQLITE_OK)
        fail_msg("undo v16: %s", err);
    long long version = query_int(s, "PRAGMA schema_version");
    char *sql = sqlite3_mprintf(
        "PRAGMA writable_schema = ON;"
        "UPDATE sqlite_schema SET sql = replace(replace(replace(sql, %Q, %Q), %Q, %Q), %Q, %Q)"
        " WHERE name = 'pointwise';"
        "PRAGMA schema_version = %lld; PRAGMA writable_schema = OFF; PRAGMA user_version = 15;",
        "CHECK (kind = 'yesno' OR kind = 'grade' OR kind = 'grade10')",
        "CHECK (kind IN ('yesno', 'grade', 'grade10'))",
        "CHECK (task = 'qa' OR task = 'math' OR task = 'translation'\n"
        "      OR task = 'summary' OR task = 'dialogue' OR task = 'generic')",
        "CHECK (task IN ('qa', 'math', 'translation', 'summary', 'dialogue', 'generic'))",
        "  item_id           TEXT NOT NULL,           -- items.id: the store writes a judgment only\n"
        "                                             -- for an item it stored (not a foreign key)\n",
        "  item_id           TEXT NOT NULL REFERENCES items(id),\n", version + 1);
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) fail_msg("undo v16: %s", err);
    sqlite3_free(sql);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'"
                                  " AND name = 'pairwise'"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'pointwise'"
                                  " AND instr(sql, 'kind IN (') AND instr(sql, 'task IN (')"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pragma_foreign_key_list('pointwise')"
                                  " WHERE \"table\" = 'items'"), 1);
}

static arb_store *downgrade_and_reopen(arb_store *s, const char *path, const char *sql)
{
    char *err = NULL;
    undo_v16(s);
    undo_v15(s);
    undo_v14(s);
    if (sqlite3_exec(arb__store_conn(s), UNDO_V13, NULL, NULL, &err) != SQLITE_OK ||
        sqlite3_exec(arb__store_conn(s), sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("downgrade: %s", err ? err : "?");
    arb_store_close(s);
    s = open_ok(path);
    assert_int_equal(query_int(s, "PRAGMA user_version"), 16);
    return s;
}

/* The objects of a store's schema, one line each (type, name, table, SQL text), sorted; and
** its version and application id. Caller frees. */
static char *schema_listing(arb_store *s)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(s),
                                        "SELECT type, name, tbl_name, sql FROM sqlite_schema"
                                        " ORDER BY type, name", -1, &q, NULL), SQLITE_OK);
    while (sqlite3_step(q) == SQLITE_ROW)
        arb__buf_printf(&b, "%s|%s|%s|%s\n", sqlite3_column_text(q, 0), sqlite3_column_text(q, 1),
                        sqlite3_column_text(q, 2),
                        sqlite3_column_text(q, 3) ? (const char *)sqlite3_column_text(q, 3) : "-");
    sqlite3_finalize(q);
    arb__buf_printf(&b, "user_version %lld application_id %lld\n",
                    query_int(s, "PRAGMA user_version"), query_int(s, "PRAGMA application_id"));
    return b.data;
}

/* Writes store_fresh_schema.inc's list of statements for the schema of s (the objects of
** sqlite_schema in the order of their rows, SQLite's own ones left out) to path. */
static void write_fresh_schema(arb_store *s, const char *path)
{
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    fprintf(out, "#define FRESH_SCHEMA_VERSION %lld\n"
                 "static const char *const fresh_schema_sql[] = {\n",
            query_int(s, "PRAGMA user_version"));
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(s),
                                        "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND"
                                        " name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid",
                                        -1, &q, NULL), SQLITE_OK);
    while (sqlite3_step(q) == SQLITE_ROW) {
        fputs("    \"", out);
        for (const char *c = (const char *)sqlite3_column_text(q, 0); *c; c++) {
            if (*c == '\n') fputs(c[1] ? "\\n\"\n    \"" : "\\n", out);
            else if (*c == '"' || *c == '\\') fprintf(out, "\\%c", *c);
            else fputc(*c, out);
        }
        fputs("\",\n", out);
    }
    sqlite3_finalize(q);
    fputs("    NULL,\n};\n", out);
    fclose(out);
}

/* A new store is created from store_fresh_schema.inc (then migrated from its version): its
** schema is, object for object and text for text, the one that schema version 1 and every
** migration make. On a difference, the file's statements as they should be are written to
** fresh_schema_statements.inc in the working directory, to replace those of
** src/store_fresh_schema.inc. */
static void test_fresh_schema_is_the_migrated_schema(void **state)
{
    fixture *f = *state;
    char stepwise_db[400];
    const char *regenerated = "fresh_schema_statements.inc";
    snprintf(stepwise_db, sizeof stepwise_db, "%s/stepwise.db", f->dir);
    arb__store_stepwise_schema = 1;
    arb_store *stepwise = open_ok(stepwise_db);
    arb__store_stepwise_schema = 0;
    arb_store *fresh = open_ok(f->db);
    char *want = schema_listing(stepwise), *got = schema_listing(fresh);
    if (strcmp(want, got)) {
        write_fresh_schema(stepwise, regenerated);
        fail_msg("a new store's schema differs from the migrated one: replace the statements of"
                 " src/store_fresh_schema.inc with those of %s (written in the working directory)",
                 regenerated);
    }
    free(want);
    free(got);
    arb_store_close(stepwise);
    arb_store_close(fresh);
}

/* A version-1 store (before battles had "extra" and before the annotation tasks) is upgraded
** in place on open, keeping its rows. */
static void test_schema_migration_from_1(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    s = downgrade_and_reopen(s, f->db, UNDO_V7
                             "DROP INDEX battles_by_reviewer;"
                             "DROP TABLE annotation_tasks;"
                             "DROP TABLE call_leases;"
                             "DROP TABLE battles_left_out;"
                             "ALTER TABLE pointwise DROP COLUMN task;"
                             "ALTER TABLE pointwise DROP COLUMN reason;"
                             "ALTER TABLE battles DROP COLUMN extra;"
                             "INSERT INTO battles (source, seq, q, i, j, reviewer, s) "
                             "VALUES ('old', 0, 'q1', 'm1', 'm2', 'r', -1);"
                             "PRAGMA user_version = 1;");
    assert_int_equal(query_int(s, "SELECT count(*) FROM battles WHERE extra = '{}' AND s = -1"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'battles_by_reviewer'"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'annotation_tasks'"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'call_leases'"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'battles_left_out'"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pragma_table_info('pointwise') "
                                  "WHERE name IN ('task', 'reason')"), 2);
    arb_store_close(s);
}

/* A version-3 store whose runs say "ok" (the schema comment's old name for "finished") reads
** "finished" after the upgrade; the other statuses stay; the schema comment of a new store
** names the statuses the executor writes (one table, internal.h). */
static void test_schema_migration_run_status(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    sqlite3 *db = arb__store_conn(s);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_schema WHERE name = 'runs'",
                                        -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    const char *schema = (const char *)sqlite3_column_text(q, 0);
    assert_non_null(strstr(schema, "-- one of: running finished failed interrupted\n"));
    assert_null(strstr(schema, " ok "));
    sqlite3_finalize(q);
    s = downgrade_and_reopen(s, f->db, UNDO_V7
                             "DROP TABLE call_leases;"
                             "DROP TABLE battles_left_out;"
                             "ALTER TABLE pointwise DROP COLUMN task;"
                             "ALTER TABLE pointwise DROP COLUMN reason;"
                             "INSERT INTO runs (protocol, status) VALUES ('sbs', 'ok'),"
                             " ('sbs', 'interrupted'), ('sbs', 'running');"
                             "PRAGMA user_version = 3;");
    assert_int_equal(query_int(s, "SELECT count(*) FROM runs WHERE status = 'ok'"), 0);
    assert_int_equal(query_int(s, "SELECT group_concat(status, ',') = 'finished,interrupted,running'"
                                  " FROM (SELECT status FROM runs ORDER BY id)"), 1);
    assert_string_equal(arb__run_status_text(ARB__RUN_FINISHED), "finished");
    assert_string_equal(arb__run_status_text(ARB__RUN_RUNNING), "running");
    arb_store_close(s);
}

/* A version-4 store's pointwise rows survive the upgrade with task 'generic' and no reason;
** the new task column refuses a task arbiter does not know. */
static void test_schema_migration_pointwise_task(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    s = downgrade_and_reopen(s, f->db, UNDO_V7
                             "ALTER TABLE pointwise DROP COLUMN task;"
                             "ALTER TABLE pointwise DROP COLUMN reason;"
                             "INSERT INTO items (id, seq, question) VALUES ('q1', 0, 'Q');"
                             "INSERT INTO pointwise (judge_name, item_id, model, kind,"
                             " template_name, value) VALUES ('j', 'q1', 'm', 'grade', 't', 4);"
                             "PRAGMA user_version = 4;");
    assert_int_equal(query_int(s, "SELECT count(*) FROM pointwise WHERE task = 'generic' AND "
                                  "reason IS NULL AND value = 4"), 1);
    assert_int_not_equal(sqlite3_exec(arb__store_conn(s), "UPDATE pointwise SET task = 'poetry'",
                                      NULL, NULL, NULL), SQLITE_OK);
    arb_store_close(s);
}

/* A version-5 store (scores without a reason, keyed without the judge) keeps its score rows
** through the rebuild of migration 6; the new key lets two judge names that share one call
** (same model and sampling) each hold their rows, and refuses a second row of one judge. */
static void test_schema_migration_persona_scores(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    s = downgrade_and_reopen(s, f->db, UNDO_V7
                             "DROP TABLE scores;"
                             "CREATE TABLE scores (id INTEGER PRIMARY KEY, protocol TEXT NOT NULL,"
                             " judge_name TEXT NOT NULL, item_id TEXT NOT NULL REFERENCES items(id),"
                             " subject TEXT NOT NULL, persona_id INTEGER REFERENCES personas(id),"
                             " position INTEGER NOT NULL DEFAULT 0, round INTEGER NOT NULL DEFAULT 0,"
                             " metric TEXT NOT NULL, value REAL, call_id INTEGER NOT NULL"
                             " REFERENCES calls(id), scored_at TEXT NOT NULL DEFAULT 'then',"
                             " UNIQUE (protocol, call_id, position, metric));"
                             "INSERT INTO items (id, seq, question) VALUES ('s1', 0, 'Q');"
                             "INSERT INTO calls (id, key, judge_name, model, request, ok)"
                             " VALUES (7, 'k', 'j', 'm', '{}', 1);"
                             "INSERT INTO scores (protocol, judge_name, item_id, subject, metric,"
                             " value, call_id) VALUES ('persona1', 'j', 's1', 'response1',"
                             " 'accuracy', 8, 7);"
                             "PRAGMA user_version = 5;");
    assert_int_equal(query_int(s, "SELECT count(*) FROM scores WHERE judge_name = 'j' AND "
                                  "value = 8 AND reason IS NULL AND scored_at = 'then'"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name IN "
                                  "('scores_by_subject', 'scores_by_call')"), 2);
    sqlite3 *db = arb__store_conn(s);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO scores (protocol, judge_name, item_id, subject,"
                                      " metric, value, call_id) VALUES ('persona1', 'j2', 's1',"
                                      " 'response1', 'accuracy', 6, 7)", NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_not_equal(sqlite3_exec(db, "INSERT INTO scores (protocol, judge_name, item_id,"
                                          " subject, metric, value, call_id) VALUES ('persona1',"
                                          " 'j', 's1', 'response1', 'accuracy', 6, 7)",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
    arb_store_close(s);
}

static void check_refused_unchanged(const char *path, const char *bytes, size_t len,
                                    const char *expect_in_message)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(bytes, 1, len, fp), len);
    fclose(fp);
    arb_store *s = NULL;
    assert_int_equal(arb_store_open(path, &s), ARB_DB);
    const char *msg = arb_store_errmsg(s);
    if (!strstr(msg, expect_in_message)) fail_msg("message \"%s\" lacks \"%s\"", msg, expect_in_message);
    assert_non_null(strstr(msg, path));
    arb_store_close(s);
    size_t got_len = 0;
    char *got = read_all(path, &got_len);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, bytes, len);
    free(got);
    char side[700];
    snprintf(side, sizeof side, "%s-wal", path);
    assert_false(file_exists(side));
    snprintf(side, sizeof side, "%s-journal", path);
    assert_false(file_exists(side));
}

static void test_not_a_database(void **state)
{
    fixture *f = *state;
    /* Short text, and text longer than a page, both refused and left as they were. */
    check_refused_unchanged(f->db, "hello, not a database\n", 22, "not a SQLite database");
    char big[5000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
    check_refused_unchanged(f->db, big, sizeof big, "not a SQLite database");
}

static void test_foreign_sqlite_database(void **state)
{
    fixture *f = *state;
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE notes(x); INSERT INTO notes VALUES (1);",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    size_t len = 0;
    char *before = read_all(f->db, &len);
    arb_store *s = NULL;
    assert_int_equal(arb_store_open(f->db, &s), ARB_DB);
    assert_non_null(strstr(arb_store_errmsg(s), "not an arbiter store"));
    arb_store_close(s);
    size_t len2 = 0;
    char *after = read_all(f->db, &len2);
    assert_int_equal(len, len2);
    assert_memory_equal(before, after, len);
    free(before);
    free(after);
}

static void test_memory_database(void **state)
{
    (void)state;
    arb_store *s = open_ok(":memory:");
    assert_int_equal(query_int(s, "PRAGMA user_version"), 16);
    arb_store_close(s);
}

/* ---- calls -------------------------------------------------------------------------------- */

static void test_put_find_call(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    int found = 7;
    long long id = 0;
    char *content = (char *)"sentinel";
    assert_int_equal(arb__store_find_call(s, "nope", &found, &id, &content), ARB_OK);
    assert_int_equal(found, 0);
    assert_null(content);

    arb__call_record rec = call_record("k1", 1, "Reasoning...\n[[B]]");
    long long id1 = put_call(s, &rec);
    assert_int_equal(arb__store_find_call(s, "k1", &found, &id, &content), ARB_OK);
    assert_int_equal(found, 1);
    assert_int_equal(id, id1);
    assert_string_equal(content, "Reasoning...\n[[B]]");
    arb_free(content);
    assert_int_equal(query_int(s, "SELECT prompt_tokens FROM calls WHERE key = 'k1'"), 100);
    assert_int_equal(query_int(s, "SELECT http_status FROM calls WHERE key = 'k1'"), 200);

    /* A successful call without reply text: found, content NULL. */
    rec = call_record("k2", 1, NULL);
    long long id2 = put_call(s, &rec);
    assert_true(id2 != id1);
    content = (char *)"sentinel";
    assert_int_equal(arb__store_find_call(s, "k2", &found, &id, &content), ARB_OK);
    assert_int_equal(found, 1);
    assert_int_equal(id, id2);
    assert_null(content);

    /* Unknown token counts are stored as NULL, not -1. */
    rec = call_record("k3", 0, NULL);
    put_call(s, &rec);
    assert_query_text(s, "SELECT prompt_tokens FROM calls WHERE key = 'k3'", "(null)");
    rec.key = NULL;
    assert_int_equal(arb__store_put_call(s, &rec, &id), ARB_INVALID);
    arb_store_close(s);
}

static void test_failed_call_replaced(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    put_items(s, "{\"id\":\"q1\",\"question\":\"Q1?\"}\n");
    arb__call_record rec = call_record("kf", 0, NULL);
    long long id1 = put_call(s, &rec);
    int found = 1;
    long long id = 0;
    assert_int_equal(arb__store_find_call(s, "kf", &found, &id, NULL), ARB_OK);
    assert_int_equal(found, 0); /* failed calls are not a cache hit */
    arb__pairwise_row row = pairwise_row("j1", "q1", 0, 0, 'E', id1);
    put_pairwise(s, &row);

    /* Failing again updates the same row. */
    rec.attempts = 3;
    rec.error = "timeout";
    assert_int_equal(put_call(s, &rec), id1);
    assert_query_text(s, "SELECT error FROM calls WHERE key = 'kf'", "timeout");

    /* A later success replaces it in place: same id, so the pairwise row still refers to it. */
    rec = call_record("kf", 1, "[[A]]");
    assert_int_equal(put_call(s, &rec), id1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM calls"), 1);
    assert_int_equal(query_int(s, "SELECT ok FROM calls WHERE key = 'kf'"), 1);
    assert_query_text(s, "SELECT error FROM calls WHERE key = 'kf'", "(null)");
    assert_int_equal(query_int(s, "SELECT attempts FROM calls WHERE key = 'kf'"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise p JOIN calls c ON c.id = "
                                  "p.call_id WHERE c.key = 'kf'"), 1);
    char *content = NULL;
    assert_int_equal(arb__store_find_call(s, "kf", &found, &id, &content), ARB_OK);
    assert_int_equal(found, 1);
    assert_int_equal(id, id1);
    assert_string_equal(content, "[[A]]");
    arb_free(content);
    arb_store_close(s);
}

static void test_success_never_replaced(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    arb__call_record rec = call_record("ks", 1, "first [[A]]");
    long long id1 = put_call(s, &rec);
    rec = call_record("ks", 1, "second [[B]]");
    assert_int_equal(put_call(s, &rec), id1);
    rec = call_record("ks", 0, NULL);
    assert_int_equal(put_call(s, &rec), id1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM calls"), 1);
    assert_query_text(s, "SELECT content FROM calls WHERE key = 'ks'", "first [[A]]");
    assert_int_equal(query_int(s, "SELECT ok FROM calls WHERE key = 'ks'"), 1);
    arb_store_close(s);
}

/* ---- pairwise ----------------------------------------------------------------------------- */

static void test_pairwise_upsert(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    put_items(s, "{\"id\":\"q1\",\"question\":\"Q1?\"}\n");
    arb__call_record rec = call_record("c1", 1, "[[A]]");
    long long c1 = put_call(s, &rec);
    rec = call_record("c2", 1, "[[B]]");
    long long c2 = put_call(s, &rec);

    arb__pairwise_row row = pairwise_row("j1", "q1", 1, 0, 'A', c1);
    put_pairwise(s, &row);
    assert_query_text(s, "SELECT model_verdict FROM pairwise", "b"); /* order 1: A -> b */
    row = pairwise_row("j1", "q1", 1, 0, 'B', c2);
    put_pairwise(s, &row);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise"), 1);
    assert_query_text(s, "SELECT position_verdict || model_verdict FROM pairwise", "Ba");
    assert_int_equal(query_int(s, "SELECT call_id FROM pairwise"), c2);

    /* Any key column that differs makes a new row. */
    row.rep = 1;
    put_pairwise(s, &row);
    row.order = 0;
    row.model_verdict = 'b';
    put_pairwise(s, &row);
    row.options = 3;
    put_pairwise(s, &row);
    row.template_name = "I";
    put_pairwise(s, &row);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise"), 5);

    /* call_id 0 (no call) is stored as NULL. */
    row = pairwise_row("j2", "q1", 0, 0, 'E', 0);
    put_pairwise(s, &row);
    assert_query_text(s, "SELECT call_id FROM pairwise WHERE judge_name = 'j2'", "(null)");
    arb_store_close(s);
}

static void test_pairwise_rejects_bad_rows(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    put_items(s, "{\"id\":\"q1\",\"question\":\"Q1?\"}\n");
    arb__pairwise_row row = pairwise_row("j1", "q1", 0, 0, 'A', 0);
    row.position_verdict = 'F';
    assert_int_equal(arb__store_put_pairwise(s, &row), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(s), "position verdict"));
    row = pairwise_row("j1", "q1", 0, 0, 'A', 0);
    row.model_verdict = 'A';
    assert_int_equal(arb__store_put_pairwise(s, &row), ARB_INVALID);
    row = pairwise_row("j1", "q1", 0, 0, 'A', 0);
    row.options = 5;
    assert_int_equal(arb__store_put_pairwise(s, &row), ARB_DB);
    assert_non_null(strstr(arb_store_errmsg(s), "CHECK"));
    /* A repetition is not negative (the item is not checked: since schema 16 the store writes
    ** a judgment only for an item it stored, without a foreign key). */
    row = pairwise_row("j1", "q1", 0, -1, 'A', 0);
    assert_int_equal(arb__store_put_pairwise(s, &row), ARB_DB);
    assert_non_null(strstr(arb_store_errmsg(s), "rep -1"));
    assert_non_null(strstr(arb_store_errmsg(s), "CHECK"));
    /* So must the call. */
    row = pairwise_row("j1", "q1", 0, 0, 'A', 999);
    assert_int_equal(arb__store_put_pairwise(s, &row), ARB_DB);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise"), 0);
    arb_store_close(s);
}

/* The rows of a run's judgments: 87 of them over 44 items (a full group of 64, then 16, 4 and
** three more), one of them a second judgment of an earlier key (the update wins). */
static void put_run_rows(arb_store *s, const char *missing_item, size_t missing_at)
{
    for (size_t i = 0; i < 87; i++) {
        char item[16];
        snprintf(item, sizeof item, "q%zu", i / 2);
        int order = (int)(i % 2);
        char pv = "ABCE"[i % 4];
        arb__pairwise_row row = pairwise_row(i % 3 ? "j1" : "j2", item, order, 0, pv, 0);
        if (i == 70) row = pairwise_row("j2", "q1", 1, 0, 'C', 0); /* row 3's key again */
        if (missing_item && i == missing_at) row.item_id = missing_item;
        arb_status st = arb__store_put_pairwise(s, &row);
        if (st) fail_msg("put_pairwise %zu: %s", i, arb_store_errmsg(s));
    }
}

static char *pairwise_dump(arb_store *s)
{
    return query_text(s, "SELECT group_concat(judge_name || ' ' || item_id || ' ' "
                         "|| ord || position_verdict || model_verdict || ' ' || "
                         "ifnull(call_id, '-'), ';') FROM (SELECT * FROM pairwise ORDER BY"
                         " protocol, judge_name, candidate, baseline, template_name, options,"
                         " item_id, rep, ord)");
}

/* A counter (SQLITE_STMTSTATUS_*) of the store's insert into table whose last parameter is
** last_param (which tells how many rows it inserts); 0 when there is no such statement. */
static int table_statement_status(arb_store *s, const char *table, const char *last_param,
                                  int counter)
{
    char end[32], insert[64];
    snprintf(end, sizeof end, "%s) ON CONFLICT", last_param);
    snprintf(insert, sizeof insert, "INSERT INTO %s ", table);
    for (sqlite3_stmt *q = sqlite3_next_stmt(arb__store_conn(s), NULL); q;
         q = sqlite3_next_stmt(arb__store_conn(s), q)) {
        const char *sql = sqlite3_sql(q);
        if (sql && !strncmp(sql, insert, strlen(insert) - 1) &&
            (sql[strlen(insert) - 1] == ' ' || sql[strlen(insert) - 1] == '(') && strstr(sql, end))
            return sqlite3_stmt_status(q, counter, 0);
    }
    return 0;
}

/* The same for the pairwise insert, whose rows end with ?1, their shared judged_at. */
static int statement_status(arb_store *s, const char *last_param, int counter)
{
    char last[24];
    snprintf(last, sizeof last, "%s, ?1", last_param);
    return table_statement_status(s, "pairwise_judgments", last, counter);
}

/* How many times the store ran that insert (with the runs of the triggers it fired). */
static int statement_runs(arb_store *s, const char *last_param)
{
    return statement_status(s, last_param, SQLITE_STMTSTATUS_RUN);
}

/* Inside a transaction the judgments go in by groups (store.c, PAIRWISE_GROUP): the rows, their
** call ids are those of putting them one by one outside a transaction. */
static void test_pairwise_grouped_in_transaction(void **state)
{
    fixture *f = *state;
    char items[44 * 40] = "", other[320];
    for (int i = 0; i < 44; i++) {
        char line[40];
        snprintf(line, sizeof line, "{\"id\":\"q%d\",\"question\":\"?\"}\n", i);
        strcat(items, line);
    }
    arb_store *one = open_ok(f->db);
    put_items(one, items);
    put_run_rows(one, NULL, 0);
    snprintf(other, sizeof other, "%s/grouped.db", f->dir);
    arb_store *grouped = open_ok(other);
    put_items(grouped, items);
    assert_int_equal(arb__store_begin(grouped), ARB_OK);
    put_run_rows(grouped, NULL, 0);
    assert_int_equal(arb__store_commit(grouped), ARB_OK);
    /* 87 rows: one statement of 64 rows, one of 16, one of 4, then 3 one by one. SQLite counts
    ** with a statement's runs those of the triggers it fires: none for a row inserted (schema
    ** 14 checks call_id in the store), one for a row updated (the group of 16 puts one
    ** judgment a second time). */
    assert_int_equal(statement_runs(grouped, "?449"), 1);
    assert_int_equal(statement_runs(grouped, "?113"), 1 + 1);
    assert_int_equal(statement_runs(grouped, "?29"), 1);
    assert_int_equal(statement_runs(grouped, "?8"), 3);
    assert_int_equal(query_int(grouped, "SELECT count(*) FROM pairwise"), 86);
    assert_query_text(grouped, "SELECT position_verdict FROM pairwise WHERE item_id = 'q1' "
                               "AND judge_name = 'j2' AND ord = 1", "C");
    char *a = pairwise_dump(one), *b = pairwise_dump(grouped);
    assert_string_equal(a, b);
    free(a);
    free(b);

    /* A rollback drops the rows still waiting for their group. */
    assert_int_equal(arb__store_begin(grouped), ARB_OK);
    arb__pairwise_row row = pairwise_row("j3", "q0", 0, 0, 'A', 0);
    put_pairwise(grouped, &row);
    arb__store_rollback(grouped);
    assert_int_equal(arb__store_begin(grouped), ARB_OK);
    assert_int_equal(arb__store_commit(grouped), ARB_OK);
    assert_int_equal(query_int(grouped, "SELECT count(*) FROM pairwise WHERE judge_name = 'j3'"),
                     0);
    arb_store_close(one);
    arb_store_close(grouped);
}

/* The times a judge call's rows get (calls.created_at, pairwise.judged_at) are the store's
** clock bound as parameters, not the columns' DEFAULT: whole unix milliseconds between SQLite's
** 'now' (NOW_MS) before and after, in a transaction (a group of judgments) and outside one. */
static void test_call_times_are_unix_ms(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    put_items(s, "{\"id\":\"q0\",\"question\":\"?\"}\n");
    static const char now_ms[] =
        "SELECT CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";
    long long before = query_int(s, now_ms);
    for (int tx = 0; tx < 2; tx++) {
        if (tx) assert_int_equal(arb__store_begin(s), ARB_OK);
        for (int i = 0; i < 3; i++) {
            long long id = 0;
            char key[16];
            snprintf(key, sizeof key, "t%d-%d", tx, i);
            arb__call_record rec = call_record(key, 1, "[[A]]");
            assert_int_equal(arb__store_put_call(s, &rec, &id), ARB_OK);
            arb__pairwise_row row = pairwise_row("j1", "q0", tx, i, 'A', id);
            put_pairwise(s, &row);
        }
        if (tx) assert_int_equal(arb__store_commit(s), ARB_OK);
    }
    long long after = query_int(s, now_ms);
    char sql[512];
    static const char *const cols[][2] = {{"calls", "created_at"}, {"pairwise", "judged_at"}};
    for (int c = 0; c < 2; c++) {
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE typeof(%s) = 'integer'"
                 " AND %s BETWEEN %lld AND %lld", cols[c][0], cols[c][1], cols[c][1],
                 before - 1, after + 1); /* SQLite rounds a double: 1 ms either way */
        assert_int_equal(query_int(s, sql), 6);
    }
    arb_store_close(s);
}

/* A pointwise judgment as grade.c puts it: item q<i>, the value, the call. */
static arb__pointwise_row pointwise_row(const char *judge, const char *item, int value,
                                        long long call_id)
{
    return (arb__pointwise_row){.protocol = "pointwise", .judge_name = judge, .item_id = item,
                                .model = "m1", .language = "en", .kind = "grade",
                                .task = "generic", .template_name = "t", .value = value,
                                .reason = value < 0 ? "no <answer> tag" : NULL,
                                .call_id = call_id};
}

static char *pointwise_dump(arb_store *s)
{
    return query_text(s, "SELECT group_concat(judge_name || ' ' || item_id || ' ' || model || ' '"
                         " || language || kind || task || template_name || rep || ' ' ||"
                         " ifnull(value, 'E') || ifnull(reason, '-') || ifnull(call_id, '-'),"
                         " ';') FROM (SELECT * FROM pointwise ORDER BY judge_name, item_id)");
}

/* Pointwise judgments, too, go in by groups inside a transaction (the CHECKs with IN lists of
** table pointwise fill two temporary b-trees per execution): the rows are those of putting them
** one by one outside a transaction; a judgment put twice keeps the later value; a refused row
** is named; a rollback drops the rows still waiting. */
static void test_pointwise_grouped_in_transaction(void **state)
{
    fixture *f = *state;
    char other[320];
    arb_store *one = open_ok(f->db);
    snprintf(other, sizeof other, "%s/grouped.db", f->dir);
    arb_store *grouped = open_ok(other);
    for (int i = 0; i < 90; i++) { /* items q0 .. q89 */
        char line[40];
        snprintf(line, sizeof line, "{\"id\":\"q%d\",\"question\":\"?\"}\n", i);
        put_items(one, line);
        put_items(grouped, line);
    }
    assert_int_equal(arb__store_begin(grouped), ARB_OK);
    for (int i = 0; i < 87; i++) { /* 64 + 16 + 4 + 3 one by one */
        char item[16];
        snprintf(item, sizeof item, "q%d", i == 70 ? 1 : i); /* q1 a second time, value 3 */
        arb__pointwise_row row = pointwise_row("j1", item, i % 7 == 6 ? -1 : 1 + i % 5, 0);
        assert_int_equal(arb__store_put_pointwise(one, &row), ARB_OK);
        assert_int_equal(arb__store_put_pointwise(grouped, &row), ARB_OK);
    }
    assert_int_equal(arb__store_commit(grouped), ARB_OK);
    assert_int_equal(table_statement_status(grouped, "pointwise", "?769, ?1",
                                            SQLITE_STMTSTATUS_RUN), 1);
    assert_int_equal(table_statement_status(grouped, "pointwise", "?193, ?1",
                                            SQLITE_STMTSTATUS_RUN), 1);
    assert_int_equal(table_statement_status(grouped, "pointwise", "?49, ?1",
                                            SQLITE_STMTSTATUS_RUN), 1);
    assert_int_equal(query_int(grouped, "SELECT count(*) FROM pointwise"), 86);
    /* judged_at bound by the store (bind_now), in the form strftime('%Y-%m-%dT%H:%M:%fZ',
    ** 'now') gave each row before, and now */
    assert_int_equal(query_int(grouped, "SELECT count(*) FROM pointwise WHERE judged_at GLOB"
                                        " '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]T[0-2][0-9]:"
                                        "[0-5][0-9]:[0-6][0-9].[0-9][0-9][0-9]Z' AND"
                                        " abs(julianday(judged_at) - julianday('now')) < 60.0 / 86400"),
                     86);
    assert_int_equal(query_int(grouped, "SELECT value FROM pointwise WHERE item_id = 'q1'"), 1);
    char *a = pointwise_dump(one), *b = pointwise_dump(grouped);
    assert_string_equal(a, b);
    free(a);
    free(b);

    /* a row SQLite refuses (kind is none of yesno, grade, grade10) in a group: named */
    assert_int_equal(arb__store_begin(grouped), ARB_OK);
    for (int i = 0; i < 5; i++) {
        char item[16];
        snprintf(item, sizeof item, "q%d", i);
        arb__pointwise_row row = pointwise_row("j2", item, 1, 0);
        if (i == 3) row.kind = "stars";
        assert_int_equal(arb__store_put_pointwise(grouped, &row), ARB_OK);
    }
    assert_int_equal(arb__store_commit(grouped), ARB_DB);
    assert_non_null(strstr(arb_store_errmsg(grouped), "item \"q3\" by j2"));
    arb__store_rollback(grouped);

    /* a rollback drops the rows still waiting */
    assert_int_equal(arb__store_begin(grouped), ARB_OK);
    arb__pointwise_row row = pointwise_row("j3", "q0", 1, 0);
    assert_int_equal(arb__store_put_pointwise(grouped, &row), ARB_OK);
    arb__store_rollback(grouped);
    assert_int_equal(arb__store_begin(grouped), ARB_OK);
    assert_int_equal(arb__store_commit(grouped), ARB_OK);
    assert_int_equal(query_int(grouped, "SELECT count(*) FROM pointwise WHERE judge_name <> 'j1'"),
                     0);
    arb_store_close(one);
    arb_store_close(grouped);
}

/* What writing a judgment costs SQLite, in virtual machine steps (deterministic, unlike time):
** a new row of a group of 64 took 173 steps with schema 13, whose CHECKs with IN lists of three
** or more values filled a temporary b-tree for each row and whose trigger ran a sub-program to
** check the call; 86 with schema 14's comparisons and the store's own check. The checks still
** refuse what they refused. */
static void test_judgment_insert_cost(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    put_items(s, "{\"id\":\"q0\",\"question\":\"?\"}\n");
    assert_int_equal(arb__store_begin(s), ARB_OK);
    for (int i = 0; i < 64; i++) {
        long long id = 0;
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        arb__call_record rec = call_record(key, 1, "[[A]]");
        assert_int_equal(arb__store_put_call(s, &rec, &id), ARB_OK);
        arb__pairwise_row row = pairwise_row("j1", "q0", i % 2, i / 2, "ABCDE"[i % 5], id);
        put_pairwise(s, &row);
    }
    assert_int_equal(arb__store_commit(s), ARB_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise"), 64);
    int steps = statement_status(s, "?449", SQLITE_STMTSTATUS_VM_STEP);
    if (steps <= 0 || steps / 64 > 100) fail_msg("%d steps a judgment", steps / 64);
    assert_int_equal(statement_runs(s, "?449"), 1);
    /* the same constraints: out-of-range options and verdicts are refused by SQLite */
    sqlite3 *db = arb__store_conn(s);
    static const char *const bad[] = {
        "UPDATE pairwise SET options = 5 WHERE rep = 0",
        "UPDATE pairwise SET options = 1 WHERE rep = 0",
        "UPDATE pairwise SET position_verdict = 'F' WHERE rep = 0",
        "UPDATE pairwise SET position_verdict = 'AB' WHERE rep = 0",
        "UPDATE pairwise SET position_verdict = 'a' WHERE rep = 0",
        "UPDATE pairwise SET model_verdict = 'A' WHERE rep = 0",
        "UPDATE pairwise SET model_verdict = 'f' WHERE rep = 0",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (sqlite3_exec(db, bad[i], NULL, NULL, NULL) != SQLITE_CONSTRAINT_CHECK)
            fail_msg("not refused: %s", bad[i]);
    static const char *const good[] = {
        "UPDATE pairwise SET options = 2, position_verdict = 'E', model_verdict = 'e' WHERE rep = 0",
        "UPDATE pairwise SET options = 3, position_verdict = 'C', model_verdict = 'c' WHERE rep = 0",
        "UPDATE pairwise SET options = 4, position_verdict = 'D', model_verdict = 'd' WHERE rep = 0",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        if (sqlite3_exec(db, good[i], NULL, NULL, NULL) != SQLITE_OK)
            fail_msg("refused: %s: %s", good[i], sqlite3_errmsg(db));
    /* and a judgment's call must exist, in a transaction or not */
    arb__pairwise_row row = pairwise_row("j2", "q0", 0, 0, 'A', 999);
    assert_int_equal(arb__store_put_pairwise(s, &row), ARB_DB);
    assert_non_null(strstr(arb_store_errmsg(s), "no such call"));
    assert_int_equal(arb__store_begin(s), ARB_OK);
    arb_status st = arb__store_put_pairwise(s, &row);
    assert_int_equal(st, ARB_DB);
    arb__store_rollback(s);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise WHERE judge_name = 'j2'"), 0);
    arb_store_close(s);
}

/* A refused row in a group is reported with its own message, by the put that fills the group
** or by the commit; the caller's rollback leaves nothing of the transaction. */
static void test_pairwise_grouped_refusal(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    put_items(s, "{\"id\":\"q0\",\"question\":\"?\"}\n");
    for (int where = 0; where < 2; where++) {
        assert_int_equal(arb__store_begin(s), ARB_OK);
        size_t bad = where ? 66 : 10; /* in the full group of 64, or after it */
        arb_status st = ARB_OK;
        for (size_t i = 0; i < 70 && !st; i++) {
            arb__pairwise_row row = pairwise_row("j1", "q0", 0, i == bad ? -1 : (int)i, 'A', 0);
            st = arb__store_put_pairwise(s, &row);
        }
        if (!st) st = arb__store_commit(s);
        assert_int_equal(st, ARB_DB);
        assert_non_null(strstr(arb_store_errmsg(s), "judgment of item \"q0\""));
        assert_non_null(strstr(arb_store_errmsg(s), "rep -1"));
        assert_non_null(strstr(arb_store_errmsg(s), "CHECK"));
        arb__store_rollback(s);
        assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise"), 0);
    }
    arb_store_close(s);
}

typedef struct walk {
    char seen[32][64];
    size_t n;
    size_t stop_after; /* 0: never */
} walk;

static int record_row(void *ud, const arb__pairwise_row *r)
{
    walk *w = ud;
    if (w->n < 32)
        snprintf(w->seen[w->n], sizeof w->seen[0], "%s %s %s#%lld r%d o%d %c%c", r->judge_name,
                 r->template_name, r->item_id, r->item_seq, r->rep, r->order,
                 r->position_verdict, r->model_verdict);
    w->n++;
    return w->stop_after && w->n >= w->stop_after;
}

static void test_each_pairwise_order(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    /* Benchmark order q10, q2, q1 differs from the ids' text order. */
    put_items(s, "{\"id\":\"q10\",\"question\":\"a\"}\n{\"id\":\"q2\",\"question\":\"b\"}\n"
                 "{\"id\":\"q1\",\"question\":\"c\"}\n");
    arb__pairwise_row row;
    /* Inserted scrambled. */
    row = pairwise_row("j2", "q10", 0, 0, 'A', 0);
    put_pairwise(s, &row);
    row = pairwise_row("j1", "q1", 1, 0, 'B', 0);
    put_pairwise(s, &row);
    row = pairwise_row("j1", "q1", 0, 0, 'C', 0);
    put_pairwise(s, &row);
    row = pairwise_row("j1", "q2", 0, 1, 'D', 0);
    put_pairwise(s, &row);
    row = pairwise_row("j1", "q2", 0, 0, 'E', 0);
    put_pairwise(s, &row);
    row = pairwise_row("j1", "q10", 1, 0, 'A', 0);
    put_pairwise(s, &row);
    row = pairwise_row("j1", "q10", 0, 0, 'A', 0);
    row.template_name = "I"; /* "I" sorts before "II-reason" */
    put_pairwise(s, &row);
    row = pairwise_row("j1", "q1", 0, 0, 'A', 0);
    row.protocol = "other"; /* not walked */
    put_pairwise(s, &row);

    walk w = {0};
    assert_int_equal(arb__store_each_pairwise(s, "sbs", record_row, &w), ARB_OK);
    static const char *const expected[] = {
        "j1 I q10#0 r0 o0 Aa",
        "j1 II-reason q10#0 r0 o1 Ab",
        "j1 II-reason q2#1 r0 o0 Ee",
        "j1 II-reason q2#1 r1 o0 Dd",
        "j1 II-reason q1#2 r0 o0 Cc",
        "j1 II-reason q1#2 r0 o1 Ba",
        "j2 II-reason q10#0 r0 o0 Aa",
    };
    assert_int_equal(w.n, 7);
    for (size_t i = 0; i < 7; i++) assert_string_equal(w.seen[i], expected[i]);

    /* A nonzero return stops the walk. */
    walk w2 = {.stop_after = 2};
    assert_int_equal(arb__store_each_pairwise(s, "sbs", record_row, &w2), ARB_OK);
    assert_int_equal(w2.n, 2);

    walk w3 = {0};
    assert_int_equal(arb__store_each_pairwise(s, "none", record_row, &w3), ARB_OK);
    assert_int_equal(w3.n, 0);
    arb_store_close(s);
}

/* ---- dataset, judges, runs ---------------------------------------------------------------- */

static void test_put_dataset(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    arb_dataset *ds = make_dataset(
        "{\"id\":\"q1\",\"question\":\"Q1?\",\"reference\":\"R1\",\"language\":\"de\","
        "\"group\":\"g1\",\"category\":\"math\"}\n{\"id\":\"q2\",\"question\":\"Q2?\"}\n",
        "{\"item\":\"q1\",\"model\":\"m1\",\"answer\":\"A11\"}\n"
        "{\"item\":\"q2\",\"model\":\"m1\",\"answer\":\"A21\"}\n");
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    arb_dataset_destroy(ds);
    assert_int_equal(query_int(s, "SELECT count(*) FROM items"), 2);
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers"), 2);
    assert_query_text(s,
                      "SELECT seq || reference || language || grp || category FROM items "
                      "WHERE id = 'q1'", "0R1deg1math");
    assert_query_text(s, "SELECT reference FROM items WHERE id = 'q2'", "(null)");
    assert_query_text(s, "SELECT source FROM items WHERE id = 'q2'", "items.jsonl:2");

    /* Loading again in another order and with a changed answer updates, never duplicates. */
    ds = make_dataset("{\"id\":\"q2\",\"question\":\"Q2?\"}\n{\"id\":\"q1\",\"question\":\"Q1!\"}\n",
                      "{\"item\":\"q1\",\"model\":\"m1\",\"answer\":\"new\"}\n");
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM items"), 2);
    assert_int_equal(query_int(s, "SELECT seq FROM items WHERE id = 'q1'"), 1);
    assert_int_equal(query_int(s, "SELECT seq FROM items WHERE id = 'q2'"), 0);
    assert_query_text(s, "SELECT question FROM items WHERE id = 'q1'", "Q1!");
    assert_query_text(s, "SELECT answer FROM answers WHERE item_id = 'q1'", "new");
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers"), 2);

    /* Inside the caller's transaction it joins it: a rollback undoes it. */
    arb_dataset *ds3 = make_dataset("{\"id\":\"q3\",\"question\":\"Q3?\"}\n", NULL);
    assert_int_equal(arb__store_begin(s), ARB_OK);
    assert_int_equal(arb__store_put_dataset(s, ds3), ARB_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM items"), 3);
    arb__store_rollback(s);
    assert_int_equal(query_int(s, "SELECT count(*) FROM items"), 2);
    arb_dataset_destroy(ds3);
    arb_dataset_destroy(ds);
    arb_store_close(s);
}

/* Prices go to judges.price; a call's cost to calls.cost_usd, NULL when unknown; the spend per
** judge sums known costs and counts the calls without one, shown "unknown", never $0. */
static void test_cost_per_judge(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    arb_judge_config j = {.name = "priced", .base_url = "http://127.0.0.1:1/v1", .model = "m",
                          .sampling = {.max_tokens = 16},
                          .price = {.known = 1, .input_per_mtok = 1.5, .output_per_mtok = 6,
                                    .cached_input_per_mtok = NAN}};
    assert_int_equal(arb__store_put_judge(s, &j), ARB_OK);
    assert_query_text(s, "SELECT price FROM judges WHERE name = 'priced'",
                      "{\"input_per_mtok\":1.5,\"output_per_mtok\":6.0}");
    j.price.cached_input_per_mtok = 0.75; /* a price change is recorded, not refused */
    assert_int_equal(arb__store_put_judge(s, &j), ARB_OK);
    assert_query_text(s, "SELECT price ->> '$.cached_input_per_mtok' FROM judges", "0.75");
    arb_judge_config free_judge = {.name = "unpriced", .model = "m2"};
    assert_int_equal(arb__store_put_judge(s, &free_judge), ARB_OK);
    assert_query_text(s, "SELECT price FROM judges WHERE name = 'unpriced'", "(null)");

    arb__call_record a = call_record("c1", 1, "[[A]]");
    a.judge_name = "priced";
    a.cost_usd = 0.25;
    a.cached_tokens = 40;
    a.reasoning_tokens = 5;
    put_call(s, &a);
    arb__call_record b = call_record("c2", 1, "[[B]]");
    b.judge_name = "priced";
    b.cost_usd = NAN; /* a reply without usage */
    b.cached_tokens = b.reasoning_tokens = -1;
    put_call(s, &b);
    arb__call_record c = call_record("c3", 1, "[[B]]");
    c.judge_name = "unpriced";
    c.cost_usd = NAN;
    put_call(s, &c);
    assert_query_text(s, "SELECT cost_usd FROM calls WHERE key = 'c2'", "(null)");
    assert_query_text(s, "SELECT cached_tokens || '/' || reasoning_tokens FROM calls WHERE key = 'c1'",
                      "40/5");
    int found = 0;
    long long id = 0;
    arb__call_spend spend;
    assert_int_equal(arb__store_find_call_spend(s, "c1", &found, &id, NULL, &spend), ARB_OK);
    assert_int_equal(found, 1);
    assert_int_equal(spend.prompt_tokens, 100);
    assert_int_equal(spend.completion_tokens, 20);
    assert_true(spend.cost_usd == 0.25);
    assert_int_equal(arb__store_find_call_spend(s, "c2", &found, &id, NULL, &spend), ARB_OK);
    assert_true(isnan(spend.cost_usd));

    arb__judge_cost_row *rows = NULL;
    size_t n = 0;
    assert_int_equal(arb__store_judge_costs(s, &rows, &n), ARB_OK);
    assert_int_equal(n, 2);
    assert_string_equal(rows[0].judge_name, "priced");
    assert_int_equal(rows[0].calls, 2);
    assert_int_equal(rows[0].with_cost, 1);
    assert_int_equal(rows[0].prompt_tokens, 200);
    assert_int_equal(rows[0].cached_tokens, 40);
    assert_true(rows[0].cost_usd == 0.25);
    char text[128];
    arb__judge_cost_text(text, sizeof text, &rows[0]);
    assert_string_equal(text, "$0.2500 + 1 calls of unknown cost");
    arb__judge_cost_text(text, sizeof text, &rows[1]);
    assert_string_equal(text, "unknown (no price)");
    rows[0].with_cost = 2;
    arb__judge_cost_text(text, sizeof text, &rows[0]);
    assert_string_equal(text, "$0.2500");
    rows[0].with_cost = 0;
    arb__judge_cost_text(text, sizeof text, &rows[0]);
    assert_string_equal(text, "unknown (no usage reported)");
    arb__store_judge_costs_free(rows, n);

    double mean;
    assert_int_equal(arb__store_judge_completion_mean(s, "priced", &mean, &n), ARB_OK);
    assert_int_equal(n, 2);
    assert_true(mean == 20);
    assert_int_equal(arb__store_judge_completion_mean(s, "nobody", &mean, &n), ARB_OK);
    assert_int_equal(n, 0);
    assert_true(isnan(mean));
    arb_store_close(s);
}

static void test_put_judge(void **state)
{
    fixture *f = *state;
    setenv("ARB_TEST_STORE_KEY", "sk-secret-do-not-store", 1);
    arb_store *s = open_ok(f->db);
    arb_judge_config j = {
        .name = NULL,
        .base_url = "http://127.0.0.1:1/v1",
        .model = "judge-x",
        .api_key_env = "ARB_TEST_STORE_KEY",
        .sampling = {.max_tokens = 1024, .temperature = 0, .top_p = 0.1,
                     .frequency_penalty = 1.0},
    };
    assert_int_equal(arb__store_put_judge(s, &j), ARB_OK);
    assert_query_text(s, "SELECT name FROM judges", "judge-x"); /* name defaults to model */
    assert_query_text(s, "SELECT sampling FROM judges",
                      "{\"frequency_penalty\":1.0,\"max_tokens\":1024,\"temperature\":0.0,"
                      "\"top_p\":0.10000000000000001}");
    j.sampling.temperature = NAN; /* not sent: not recorded */
    j.sampling.has_seed = 1;
    j.sampling.seed = 42;
    j.base_url = "http://127.0.0.1:2/v1";
    assert_int_equal(arb__store_put_judge(s, &j), ARB_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM judges"), 1);
    assert_query_text(s, "SELECT base_url FROM judges", "http://127.0.0.1:2/v1");
    assert_int_equal(query_int(s, "SELECT sampling ->> '$.seed' FROM judges"), 42);
    assert_query_text(s, "SELECT sampling ->> '$.temperature' FROM judges", "(null)");
    assert_int_equal(query_int(s, "SELECT count(*) FROM judges WHERE "
                                  "sampling || base_url || model || name LIKE '%sk-secret%' "
                                  "OR sampling LIKE '%ARB_TEST_STORE_KEY%'"), 0);
    j.model = NULL;
    assert_int_equal(arb__store_put_judge(s, &j), ARB_INVALID);
    arb_store_close(s);
    unsetenv("ARB_TEST_STORE_KEY");
}

/* Credentials written into a URL never reach the judges or runs tables; other URLs and the
** rest of the parameters are stored byte for byte. */
static void test_urls_stored_without_credentials(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    arb_judge_config j;
    memset(&j, 0, sizeof j);
    j.name = "jc";
    j.model = "m";
    j.base_url = "http://alice:pw-SECRET@127.0.0.1:8000/v1?api_key=SECRET&api-version=2";
    j.sampling = arb_sampling_default();
    assert_int_equal(arb__store_put_judge(s, &j), ARB_OK);
    assert_query_text(s, "SELECT base_url FROM judges",
                      "http://127.0.0.1:8000/v1?api-version=2");
    long long run = 0;
    assert_int_equal(arb__store_run_begin(s, "tournament",
                                          "{\"judge_url\":\"https://u:SECRET@h/v1?token=SECRET\","
                                          "\"judges\":[{\"url\":\"http://h/v1?key=SECRET\",\"t\":0.7}],"
                                          "\"note_url\":\"http://plain/\"}",
                                          &run), ARB_OK);
    assert_query_text(s, "SELECT params FROM runs",
                      "{\"judge_url\":\"https://h/v1\",\"judges\":[{\"url\":\"http://h/v1\","
                      "\"t\":0.7}],\"note_url\":\"http://plain/\"}");
    assert_int_equal(arb__store_run_begin(s, "sbs", "{\"judge_url\":\"http://h/v1\",\"t\":0.7}",
                                          &run), ARB_OK);
    assert_query_text(s, "SELECT params FROM runs WHERE protocol = 'sbs'",
                      "{\"judge_url\":\"http://h/v1\",\"t\":0.7}");
    assert_int_equal(query_int(s, "SELECT count(*) FROM runs, judges WHERE params LIKE "
                                  "'%SECRET%' OR base_url LIKE '%SECRET%'"), 0);
    arb_store_close(s);
}

static void test_runs(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    long long run = 0;
    assert_int_equal(arb__store_run_begin(s, "sbs", "{\"candidate\":\"c\"}", &run), ARB_OK);
    assert_true(run > 0);
    assert_query_text(s, "SELECT status FROM runs", "running");
    assert_query_text(s, "SELECT finished_at FROM runs", "(null)");
    arb_run_stats st = {.planned = 10, .cached = 4, .sent = 5, .ok = 4, .failed = 1, .invalid = 2,
                        .prompt_tokens = 1000, .completion_tokens = 50,
                        .est_prompt_tokens = 7, .retries = 3, .seconds = 1.5,
                        .cost_usd = 0.75, .cost_unknown = 1, .not_sent = 2};
    assert_int_equal(arb__store_run_end(s, run, &st, ARB__RUN_INTERRUPTED), ARB_OK);
    assert_query_text(s, "SELECT status FROM runs", "interrupted");
    assert_query_text(s, "SELECT stats FROM runs",
                      "{\"planned\":10,\"cached\":4,\"sent\":5,\"ok\":4,\"failed\":1,\"invalid\":2,"
                      "\"prompt_tokens\":1000,\"completion_tokens\":50,\"est_prompt_tokens\":7,"
                      "\"retries\":3,\"cost_usd\":0.75,\"cost_unknown\":1,\"not_sent\":2,"
                      "\"seconds\":1.5}");
    assert_int_equal(query_int(s, "SELECT finished_at >= started_at FROM runs"), 1);
    assert_int_equal(arb__store_run_end(s, run + 100, &st, ARB__RUN_FINISHED), ARB_NOTFOUND);
    /* Parameters must be JSON. */
    assert_int_equal(arb__store_run_begin(s, "sbs", "{not json", &run), ARB_DB);
    assert_non_null(strstr(arb_store_errmsg(s), "params_is_json"));
    arb_store_close(s);
}

/* ---- export ------------------------------------------------------------------------------- */

#define TRICKY "He said \"hi\", then\nleft.\r\nПривет — “мир” 日本 [[A]]"

/* Two items, one successful call with tricky text and one failed call. */
static arb_store *export_fixture(const char *path)
{
    arb_store *s = open_ok(path);
    put_items(s, "{\"id\":\"q,2\",\"question\":\"a\"}\n{\"id\":\"q1\",\"question\":\"b\"}\n");
    arb__call_record rec = call_record("e1", 1, TRICKY);
    rec.reasoning = "maybe [[B]]"; /* a reasoning model's thinking, apart from content */
    rec.logprobs = "{\"kind\":\"position\",\"options\":{\"A\":0.75,\"B\":0.25}}";
    rec.reasoning_tokens = 7;
    rec.cached_tokens = 0;
    long long c1 = put_call(s, &rec);
    rec = call_record("e2", 0, NULL);
    rec.latency_ms = 0.25;
    long long c2 = put_call(s, &rec);
    arb__pairwise_row row = pairwise_row("j1", "q1", 1, 0, 'E', c2);
    put_pairwise(s, &row);
    row = pairwise_row("j1", "q,2", 0, 0, 'A', c1); /* q,2 comes first: seq 0 */
    put_pairwise(s, &row);
    return s;
}

static char *export_to_string(arb_store *s, const char *format, arb_status *status)
{
    /* static: gcc -O3 takes open_memstream keeping &buf for a dangling pointer */
    static char *buf;
    static size_t len;
    buf = NULL;
    len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    *status = arb_store_export(s, format, out);
    fclose(out);
    return buf;
}

static void test_export_csv(void **state)
{
    fixture *f = *state;
    arb_store *s = export_fixture(f->db);
    arb_status st;
    char *csv = export_to_string(s, "csv", &st);
    assert_int_equal(st, ARB_OK);
    const char *expected =
        "protocol,judge,item,candidate,baseline,template,options,order,rep,position_verdict,"
        "model_verdict,model,content,error,prompt_tokens,completion_tokens,latency_ms,attempts,"
        "request,question,candidate_answer,baseline_answer,category,language,source,strength,"
        "cached_tokens,reasoning_tokens,cost_usd,reasoning,logprobs\r\n"
        "sbs,j1,\"q,2\",cand,base,II-reason,4,0,0,A,a,judge-model,"
        "\"He said \"\"hi\"\", then\nleft.\r\nПривет — “мир” 日本 [[A]]\",,100,20,12.5,1,"
        "\"{\"\"model\"\":\"\"judge-model\"\"}\",a,,,,,,,0,7,0.00025,maybe [[B]],"
        "\"{\"\"kind\"\":\"\"position\"\",\"\"options\"\":{\"\"A\"\":0.75,\"\"B\"\":0.25}}\"\r\n"
        "sbs,j1,q1,cand,base,II-reason,4,1,0,E,e,judge-model,,HTTP 503 after 7 attempts,,,"
        "0.25,7,\"{\"\"model\"\":\"\"judge-model\"\"}\",b,,,,,,,,,,,\r\n";
    assert_string_equal(csv, expected);
    free(csv);
    arb_store_close(s);
}

static void test_export_jsonl(void **state)
{
    fixture *f = *state;
    arb_store *s = export_fixture(f->db);
    arb_status st;
    char *text = export_to_string(s, "jsonl", &st);
    assert_int_equal(st, ARB_OK);
    char *nl1 = strchr(text, '\n');
    assert_non_null(nl1);
    char *nl2 = strchr(nl1 + 1, '\n');
    assert_non_null(nl2);
    assert_string_equal(nl2 + 1, ""); /* exactly two lines */
    *nl1 = *nl2 = '\0';
    /* Field order as documented; non-ASCII written as UTF-8, not escaped. */
    assert_true(strncmp(text, "{\"protocol\":\"sbs\",\"judge\":\"j1\",\"item\":\"q,2\","
                              "\"candidate\":\"cand\",\"baseline\":\"base\",\"template\":"
                              "\"II-reason\",\"options\":4,\"order\":0,\"rep\":0,",
                        strlen("{\"protocol\":\"sbs\",\"judge\":\"j1\",\"item\":\"q,2\","
                               "\"candidate\":\"cand\",\"baseline\":\"base\",\"template\":"
                               "\"II-reason\",\"options\":4,\"order\":0,\"rep\":0,")) == 0);
    assert_non_null(strstr(text, "Привет — “мир” 日本"));

    json_error_t err;
    json_t *a = json_loads(text, 0, &err);
    assert_non_null(a);
    assert_string_equal(json_string_value(json_object_get(a, "content")), TRICKY);
    assert_string_equal(json_string_value(json_object_get(a, "position_verdict")), "A");
    assert_string_equal(json_string_value(json_object_get(a, "model_verdict")), "a");
    assert_string_equal(json_string_value(json_object_get(a, "model")), "judge-model");
    assert_true(json_is_null(json_object_get(a, "error")));
    assert_int_equal(json_integer_value(json_object_get(a, "prompt_tokens")), 100);
    assert_int_equal(json_integer_value(json_object_get(a, "completion_tokens")), 20);
    assert_true(json_real_value(json_object_get(a, "latency_ms")) == 12.5);
    assert_int_equal(json_integer_value(json_object_get(a, "attempts")), 1);
    /* the keys added for issue 15 (import judgments reads an export back) */
    assert_string_equal(json_string_value(json_object_get(a, "request")),
                        "{\"model\":\"judge-model\"}");
    assert_string_equal(json_string_value(json_object_get(a, "question")), "a");
    assert_true(json_is_null(json_object_get(a, "candidate_answer")));
    assert_true(json_is_null(json_object_get(a, "baseline_answer")));
    assert_true(json_is_null(json_object_get(a, "category")));
    assert_true(json_is_null(json_object_get(a, "language")));
    assert_true(json_is_null(json_object_get(a, "source")));
    assert_true(json_is_null(json_object_get(a, "strength")));
    /* and for issue 16: the rest of the usage and the cost, null when unknown */
    assert_int_equal(json_integer_value(json_object_get(a, "cached_tokens")), 0);
    assert_int_equal(json_integer_value(json_object_get(a, "reasoning_tokens")), 7);
    assert_true(json_real_value(json_object_get(a, "cost_usd")) == 0.00025);
    /* and the judge's thinking, apart from content (reasoning models) */
    assert_string_equal(json_string_value(json_object_get(a, "reasoning")), "maybe [[B]]");
    /* and the verdict token's distribution, embedded as an object (README "Logprobs") */
    assert_true(json_real_value(json_object_get(json_object_get(json_object_get(a, "logprobs"),
                                                                "options"), "B")) == 0.25);
    assert_int_equal(json_object_size(a), 31);
    json_decref(a);

    json_t *b = json_loads(nl1 + 1, 0, &err);
    assert_non_null(b);
    assert_string_equal(json_string_value(json_object_get(b, "item")), "q1");
    assert_int_equal(json_integer_value(json_object_get(b, "order")), 1);
    assert_true(json_is_null(json_object_get(b, "content")));
    assert_true(json_is_null(json_object_get(b, "prompt_tokens")));
    assert_string_equal(json_string_value(json_object_get(b, "error")),
                        "HTTP 503 after 7 attempts");
    assert_int_equal(json_integer_value(json_object_get(b, "attempts")), 7);
    json_decref(b);
    free(text);
    arb_store_close(s);
}

static void test_export_invalid_utf8_and_empty(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    arb_status st;
    char *text = export_to_string(s, "jsonl", &st); /* no rows: no output */
    assert_int_equal(st, ARB_OK);
    assert_string_equal(text, "");
    free(text);
    text = export_to_string(s, "csv", &st); /* header only */
    assert_int_equal(st, ARB_OK);
    assert_true(strncmp(text, "protocol,judge,", 15) == 0);
    assert_int_equal(strchr(text, '\n') - text + 1, (long)strlen(text));
    free(text);

    put_items(s, "{\"id\":\"q1\",\"question\":\"b\"}\n");
    arb__call_record rec = call_record("bad", 1, "x\xff" "y\xc3");
    arb__pairwise_row row = pairwise_row("j1", "q1", 0, 0, 'E', put_call(s, &rec));
    put_pairwise(s, &row);
    text = export_to_string(s, "jsonl", &st);
    assert_int_equal(st, ARB_OK);
    json_t *o = json_loads(text, 0, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "content")),
                        "x\xEF\xBF\xBDy\xEF\xBF\xBD");
    json_decref(o);
    free(text);
    arb_store_close(s);
}

/* Every exported line is exactly jansson's compact dump of the values it holds (what the export
** wrote before it escaped texts itself): controls, DEL, quotes, "/", U+2028, bytes that are not
** UTF-8 (U+FFFD), a text of ~300 KB with multi-byte characters across the escaper's 64 KB
** blocks and the 256 KB write blocks, reals that are tiny, huge or negative zero, large
** integers, NULLs. Reading a line with jansson and dumping it again gives the same bytes. */
static void test_export_lines_are_janssons_dump(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    put_items(s, "{\"id\":\"q1\",\"question\":\"b\"}\n{\"id\":\"q2\",\"question\":\"c\"}\n"
                 "{\"id\":\"q3\",\"question\":\"d\"}\n");
    char controls[64], *p = controls;
    for (int c = 1; c < 0x20; c++) *p++ = (char)c;
    strcpy(p, "\"\\/\x7f\xe2\x80\xa8\xf0\x9f\x98\x80");
    size_t big_n = 300000;
    char *big = malloc(big_n + 1);
    assert_non_null(big);
    for (size_t i = 0; i < big_n; i++) big[i] = "ab\"\n\\\x01 c"[i % 8];
    for (size_t at = 65530; at < big_n - 8; at += 65536 - 3) memcpy(big + at, "\xe6\x97\xa5", 3);
    memcpy(big + 262142, "\xf0\x9f\x98\x80", 4);
    big[big_n] = '\0';
    arb__call_record rec = call_record("c1", 1, controls);
    rec.reasoning = "a\xff" "b\xc3(\xed\xa0\x80z\xf4\x90\x80\x80";
    rec.latency_ms = -0.0;
    rec.cost_usd = 5e-324;
    rec.prompt_tokens = 9223372036854775807LL;
    rec.completion_tokens = 0;
    arb__pairwise_row row = pairwise_row("j1", "q1", 0, 0, 'A', put_call(s, &rec));
    put_pairwise(s, &row);
    rec = call_record("c2", 1, big);
    rec.latency_ms = 1e300;
    rec.cost_usd = 0.1;
    row = pairwise_row("j1", "q2", 0, 0, 'B', put_call(s, &rec));
    put_pairwise(s, &row);
    rec = call_record("c3", 0, NULL);
    rec.latency_ms = NAN;
    rec.prompt_tokens = rec.completion_tokens = -1;
    row = pairwise_row("j1", "q3", 1, 0, 'E', put_call(s, &rec));
    put_pairwise(s, &row);
    arb_status st;
    char *text = export_to_string(s, "jsonl", &st);
    assert_int_equal(st, ARB_OK);
    size_t lines = 0;
    for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1, lines++) {
        json_error_t err;
        json_t *o = json_loadb(line, (size_t)(nl - line), 0, &err);
        if (!o) fail_msg("line %zu: %s", lines + 1, err.text);
        char *again = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        assert_non_null(again);
        if (strlen(again) != (size_t)(nl - line) || memcmp(again, line, (size_t)(nl - line)))
            fail_msg("line %zu is not jansson's dump of its values", lines + 1);
        if (lines == 0) {
            assert_string_equal(json_string_value(json_object_get(o, "content")), controls);
            assert_string_equal(json_string_value(json_object_get(o, "reasoning")),
                                "a\xEF\xBF\xBD" "b\xEF\xBF\xBD(\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF"
                                "\xBDz\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
            assert_true(json_integer_value(json_object_get(o, "prompt_tokens")) ==
                        9223372036854775807LL);
        } else if (lines == 1) {
            assert_string_equal(json_string_value(json_object_get(o, "content")), big);
        } else {
            assert_true(json_is_null(json_object_get(o, "latency_ms")));
            assert_true(json_is_null(json_object_get(o, "content")));
        }
        free(again);
        json_decref(o);
    }
    assert_int_equal(lines, 3);
    free(text);
    free(big);
    arb_store_close(s);
}

static void test_export_unknown_format(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    arb_status st;
    char *text = export_to_string(s, "xml", &st);
    assert_int_equal(st, ARB_INVALID);
    assert_string_equal(text, "");
    assert_non_null(strstr(arb_store_errmsg(s), "\"xml\""));
    assert_non_null(strstr(arb_store_errmsg(s), "jsonl"));
    assert_non_null(strstr(arb_store_errmsg(s), "csv"));
    free(text);
    arb_store_close(s);
}

/* ---- leases on calls (two processes on one store) ----------------------------------------- */

static void claim(arb_store *s, const arb__lease_owner *o, arb__call_claim *c, size_t n)
{
    if (arb__store_claim_calls(s, o, c, n)) fail_msg("claim_calls: %s", arb_store_errmsg(s));
}

/* Call keys as the executor makes them (32 hex digits), n in the last two. */
#define LEASE_KEY(n) "00000000000000000000000000000" n
/* Lease rows of owner whose keys hold key (SQL's instr on blobs: a test's keys do not run
** into each other). */
static long long leases_holding(arb_store *s, const char *owner, const char *key)
{
    char *sql = sqlite3_mprintf("SELECT count(*) FROM call_leases WHERE owner = %Q"
                                " AND instr(keys, arb_call_key(%Q)) %% 16 = 1", owner, key);
    long long n = query_int(s, sql);
    sqlite3_free(sql);
    return n;
}

static void test_call_leases(void **state)
{
    fixture *f = *state;
    arb_store *a = open_ok(f->db), *b = open_ok(f->db);
    arb__lease_owner oa, ob;
    arb__lease_owner_init(&oa, 60);
    arb__lease_owner_init(&ob, 60);
    assert_string_not_equal(oa.id, ob.id);
    assert_int_equal(oa.pid, (long)getpid());
    /* Nothing to claim: no transaction, nothing set. */
    assert_int_equal(arb__store_claim_calls(a, &oa, NULL, 0), ARB_OK);

    const char *k1 = LEASE_KEY("001"), *k2 = LEASE_KEY("002"), *k3 = LEASE_KEY("003");
    arb__call_claim ca[2] = {{.key = k1}, {.key = k2}};
    claim(a, &oa, ca, 2);
    assert_int_equal(ca[0].state, ARB__CLAIM_OURS);
    assert_int_equal(ca[1].state, ARB__CLAIM_OURS);
    /* one row for the claim, its keys as the calls will store them */
    char *sql = sqlite3_mprintf("SELECT count(*) FROM call_leases WHERE owner = %Q"
                                " AND hex(keys) = upper(%Q || %Q)", oa.id, k1, k2);
    assert_int_equal(query_int(a, sql), 1);
    sqlite3_free(sql);
    assert_int_equal(query_int(a, "SELECT count(*) FROM call_leases"), 1);
    /* The other owner may not send k1 while a holds it (a's process is alive: this one). */
    arb__call_claim cb[2] = {{.key = k1}, {.key = k3}};
    claim(b, &ob, cb, 2);
    assert_int_equal(cb[0].state, ARB__CLAIM_HELD);
    assert_int_equal(cb[0].holder_pid, (long)getpid());
    assert_null(cb[0].content);
    assert_int_equal(cb[1].state, ARB__CLAIM_OURS);
    /* Claiming again what one holds is fine (a renewal). */
    claim(a, &oa, ca, 1);
    assert_int_equal(ca[0].state, ARB__CLAIM_OURS);

    /* a stores k1 and releases it in one transaction, through another handle (as the
    ** executor's writer does): k2 is still to store, so the row stays, and b takes the
    ** stored reply of k1 (a lease on a stored call is moot). */
    arb_store *w = open_ok(f->db);
    arb__call_record rec = call_record(k1, 1, "[[B]]");
    long long id = 0;
    assert_int_equal(arb__store_begin(w), ARB_OK);
    assert_int_equal(arb__store_put_call(w, &rec, &id), ARB_OK);
    assert_int_equal(arb__store_release_lease(w, &oa, k1), ARB_OK);
    assert_int_equal(arb__store_commit(w), ARB_OK);
    claim(b, &ob, cb, 1);
    assert_int_equal(cb[0].state, ARB__CLAIM_STORED);
    assert_int_equal(cb[0].call_id, id);
    assert_string_equal(cb[0].content, "[[B]]");
    free(cb[0].content);
    /* k1 was claimed twice by a (two rows): the first row holds k2 still, the second ended
    ** with k1 */
    assert_int_equal(leases_holding(a, oa.id, k2), 1);
    assert_int_equal(leases_holding(a, oa.id, k1), 1);
    assert_int_equal(query_int(a, "SELECT count(*) FROM call_leases"), 2);

    /* a's run ends: what it claimed and did not store is free. */
    arb__call_claim c2 = {.key = k2};
    claim(b, &ob, &c2, 1);
    assert_int_equal(c2.state, ARB__CLAIM_HELD);
    assert_int_equal(arb__store_release_leases(a, &oa), ARB_OK);
    assert_int_equal(leases_holding(a, oa.id, k2), 0);
    claim(b, &ob, &c2, 1);
    assert_int_equal(c2.state, ARB__CLAIM_OURS);
    /* Releasing another owner's lease by key does nothing. */
    assert_int_equal(arb__store_release_lease(w, &oa, k2), ARB_OK);
    assert_int_equal(leases_holding(a, ob.id, k2), 1);
    /* Releasing every call of a claim ends its row; the other rows of the owner stay. */
    assert_int_equal(arb__store_begin(w), ARB_OK);
    assert_int_equal(arb__store_release_lease(w, &ob, k3), ARB_OK);
    assert_int_equal(arb__store_commit(w), ARB_OK);
    assert_int_equal(leases_holding(a, ob.id, k3), 0);
    assert_int_equal(leases_holding(a, ob.id, k2), 1);
    assert_int_equal(arb__store_release_lease(w, &ob, k2), ARB_OK);
    assert_int_equal(leases_holding(a, ob.id, k2), 0);
    arb_store_close(w);

    /* An expired lease is taken over (its row deleted); a renewed one is not. */
    const char *k4 = LEASE_KEY("004"), *k5 = LEASE_KEY("005"), *k8 = LEASE_KEY("008");
    arb__lease_owner oc;
    arb__lease_owner_init(&oc, -1); /* expires as it is taken */
    arb__call_claim c4 = {.key = k4}, c5 = {.key = k5};
    claim(a, &oc, &c4, 1);
    claim(a, &oc, &c5, 1);
    sql = sqlite3_mprintf("SELECT count(*) FROM call_leases WHERE owner = %Q"
                          " AND expires_at < unixepoch('now') + 1", oc.id);
    assert_int_equal(query_int(a, sql), 2);
    sqlite3_free(sql);
    /* The owner claiming its own lease again renews it (a new row, a new expiry). */
    arb__lease_owner od = oc;
    od.seconds = 60;
    arb__call_claim c8 = {.key = k8};
    claim(a, &oc, &c8, 1);
    claim(a, &od, &c8, 1);
    assert_int_equal(c8.state, ARB__CLAIM_OURS);
    sql = sqlite3_mprintf("SELECT count(*) FROM call_leases WHERE owner = %Q"
                          " AND instr(keys, arb_call_key(%Q)) AND expires_at > unixepoch('now') + 30",
                          oc.id, k8);
    assert_int_equal(query_int(a, sql), 1);
    sqlite3_free(sql);
    /* renewed before anyone claims: k5 and k8 stay oc's */
    oc.seconds = 60;
    assert_int_equal(arb__store_renew_leases(a, &oc), ARB_OK);
    claim(b, &ob, &c5, 1);
    assert_int_equal(c5.state, ARB__CLAIM_HELD);
    /* not renewed: a claim by anyone ends the owner's expired rows */
    arb__lease_owner oe;
    arb__lease_owner_init(&oe, -1);
    arb__call_claim c9 = {.key = LEASE_KEY("009")};
    claim(a, &oe, &c9, 1);
    assert_int_equal(c9.state, ARB__CLAIM_OURS);
    assert_int_equal(leases_holding(a, oe.id, c9.key), 1);
    claim(b, &ob, &c9, 1);
    assert_int_equal(c9.state, ARB__CLAIM_OURS);
    assert_int_equal(leases_holding(a, oe.id, c9.key), 0);

    /* A holder on this host whose pid is gone (a killed run) loses its leases at once; one on
    ** another host keeps them until they expire. */
    const char *k6 = LEASE_KEY("006"), *k7 = LEASE_KEY("007");
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) _exit(0);
    assert_int_equal(waitpid(child, NULL, 0), child);
    sql = sqlite3_mprintf(
        "INSERT INTO call_leases(owner, host, pid, expires_at, keys) VALUES"
        " ('killed', %Q, %d, 1e12, arb_call_key(%Q)),"
        " ('remote', 'elsewhere.example', %d, 1e12, arb_call_key(%Q))",
        oa.host, (int)child, k6, (int)child, k7);
    assert_int_equal(sqlite3_exec(arb__store_conn(a), sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_free(sql);
    arb__call_claim c67[2] = {{.key = k6}, {.key = k7}};
    claim(b, &ob, c67, 2);
    assert_int_equal(c67[0].state, ARB__CLAIM_OURS);
    assert_int_equal(c67[1].state, ARB__CLAIM_HELD);
    assert_int_equal(c67[1].holder_pid, (long)child);
    assert_int_equal(query_int(a, "SELECT count(*) FROM call_leases WHERE owner = 'killed'"), 0);
    arb_store_close(b);
    arb_store_close(a);
}

/* Keys that are not 32 hex digits (older tests, hand-made stores) lease as well: by their
** hash. */
static void test_call_leases_other_keys(void **state)
{
    fixture *f = *state;
    arb_store *a = open_ok(f->db);
    arb__lease_owner oa, ob;
    arb__lease_owner_init(&oa, 60);
    arb__lease_owner_init(&ob, 60);
    arb__call_claim c = {.key = "k1"};
    claim(a, &oa, &c, 1);
    assert_int_equal(c.state, ARB__CLAIM_OURS);
    claim(a, &ob, &c, 1);
    assert_int_equal(c.state, ARB__CLAIM_HELD);
    assert_int_equal(arb__store_release_lease(a, &oa, "k1"), ARB_OK);
    assert_int_equal(query_int(a, "SELECT count(*) FROM call_leases"), 0);
    claim(a, &ob, &c, 1);
    assert_int_equal(c.state, ARB__CLAIM_OURS);
    arb_store_close(a);
}

/* A call its owner claimed twice (two rows): releasing it, through a handle that reads both
** rows at once, ends both. */
static void test_call_lease_claimed_twice(void **state)
{
    fixture *f = *state;
    arb_store *a = open_ok(f->db), *w = open_ok(f->db);
    arb__lease_owner o;
    arb__lease_owner_init(&o, 60);
    arb__call_claim c[2] = {{.key = LEASE_KEY("001")}, {.key = LEASE_KEY("002")}};
    claim(a, &o, c, 1);
    claim(a, &o, c, 2);
    assert_int_equal(query_int(a, "SELECT count(*) FROM call_leases"), 2);
    assert_int_equal(arb__store_begin(w), ARB_OK);
    assert_int_equal(arb__store_release_lease(w, &o, c[0].key), ARB_OK);
    assert_int_equal(arb__store_commit(w), ARB_OK);
    /* the first row held only that call; the second holds the other one still */
    assert_int_equal(query_int(a, "SELECT count(*) FROM call_leases"), 1);
    assert_int_equal(leases_holding(a, o.id, c[1].key), 1);
    assert_int_equal(arb__store_release_lease(w, &o, c[1].key), ARB_OK);
    assert_int_equal(query_int(a, "SELECT count(*) FROM call_leases"), 0);
    arb_store_close(w);
    arb_store_close(a);
}

/* A claim of many calls (more than one lookup group of the store's, 64) finds each stored
** successful call with its id, reply and spend, and claims the rest: failed calls, calls never
** stored, a key that is not 32 hex digits (stored as text), the same key twice. */
static void test_claim_finds_stored_calls_in_groups(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    enum { N = 150 };
    static char keys[N][40];
    long long ids[N] = {0};
    for (int i = 0; i < N; i++) {
        if (i == 76) snprintf(keys[i], sizeof keys[i], "text-key-%d", i);
        else if (i == 149) snprintf(keys[i], sizeof keys[i], "%s", keys[3]); /* again */
        else snprintf(keys[i], sizeof keys[i], "%032x", 0x5000 + i);
        if (i % 3 == 2 || i == 149) continue; /* never stored */
        char content[16];
        snprintf(content, sizeof content, "[[%c]] %d", "AB"[i % 2], i);
        arb__call_record rec = call_record(keys[i], i % 3 == 0 || i == 76, content);
        rec.prompt_tokens = rec.ok ? 1000 + i : -1;
        assert_int_equal(arb__store_put_call(s, &rec, &ids[i]), ARB_OK);
    }
    arb__lease_owner o;
    arb__lease_owner_init(&o, 60);
    arb__call_claim c[N];
    for (int i = 0; i < N; i++) c[i] = (arb__call_claim){.key = keys[i]};
    claim(s, &o, c, N);
    for (int i = 0; i < N; i++) {
        int j = i == 149 ? 3 : i, stored = j % 3 == 0 || j == 76;
        if (!stored) {
            if (c[i].state != ARB__CLAIM_OURS) fail_msg("claim %d: state %d", i, c[i].state);
            assert_null(c[i].content);
            continue;
        }
        char content[16];
        snprintf(content, sizeof content, "[[%c]] %d", "AB"[j % 2], j);
        if (c[i].state != ARB__CLAIM_STORED) fail_msg("claim %d: state %d", i, c[i].state);
        assert_int_equal(c[i].call_id, ids[j]);
        assert_string_equal(c[i].content, content);
        assert_int_equal(c[i].spend.prompt_tokens, 1000 + j);
        assert_int_equal(c[i].spend.completion_tokens, 20);
        free(c[i].content);
    }
    arb_store_close(s);
}

/* A call whose key another process stored first keeps the stored reply, and the caller is
** told so and given that reply (the executor judges it, not its own). */
static void test_settle_call_keeps_stored_reply(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    int kept = -1;
    char *stored = (char *)"unset";
    long long id = 0;
    /* A new key is stored: nothing kept. */
    arb__call_record mine = call_record("k", 1, "[[A]]");
    assert_int_equal(arb__store_settle_call(s, &mine, &id, &kept, &stored), ARB_OK);
    assert_int_equal(kept, 0);
    assert_null(stored);
    long long first = id;
    /* Another reply to the same key: the stored one stays and comes back. */
    arb__call_record other = call_record("k", 1, "[[B]]");
    assert_int_equal(arb__store_settle_call(s, &other, &id, &kept, &stored), ARB_OK);
    assert_int_equal(kept, 1);
    assert_int_equal(id, first);
    assert_string_equal(stored, "[[A]]");
    arb_free(stored);
    /* So does a failure arriving after the success. */
    arb__call_record failed = call_record("k", 0, NULL);
    assert_int_equal(arb__store_settle_call(s, &failed, &id, &kept, &stored), ARB_OK);
    assert_int_equal(kept, 1);
    assert_string_equal(stored, "[[A]]");
    arb_free(stored);
    assert_query_text(s, "SELECT content FROM calls WHERE key = 'k'", "[[A]]");
    arb_store_close(s);
}

/* ---- removing a store that a failed command created --------------------------------------- */

static int side_files_exist(const char *path)
{
    char side[700];
    int any = 0;
    snprintf(side, sizeof side, "%s-wal", path);
    any |= file_exists(side);
    snprintf(side, sizeof side, "%s-shm", path);
    any |= file_exists(side);
    return any;
}

static void test_close_unused(void **state)
{
    fixture *f = *state;
    /* Edge first: NULL and an in-memory store. */
    assert_int_equal(arb_store_close_unused(NULL), 0);
    assert_int_equal(arb_store_close_unused(open_ok(":memory:")), 0);
    /* Created by this handle, nothing stored: removed with its side files. */
    assert_int_equal(arb_store_close_unused(open_ok(f->db)), 1);
    assert_false(file_exists(f->db));
    assert_false(side_files_exist(f->db));
    /* Created by this handle, but something stored: kept. */
    arb_store *s = open_ok(f->db);
    put_items(s, "{\"id\":\"q1\",\"question\":\"b\"}\n");
    assert_int_equal(arb_store_close_unused(s), 0);
    assert_true(file_exists(f->db));
    /* Existed before (even an empty store): never removed. */
    assert_int_equal(unlink(f->db), 0);
    arb_store_close(open_ok(f->db));
    assert_int_equal(arb_store_close_unused(open_ok(f->db)), 0);
    assert_true(file_exists(f->db));
    assert_int_equal(unlink(f->db), 0);

    /* Created here, but another process opened it meanwhile: kept. The child forks before
    ** this process opens the store (SQLite's state must not cross a fork). */
    int go[2], up[2], hold[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(hold), 0);
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(go[1]);
        close(up[0]);
        close(hold[1]);
        char c = 0;
        if (read(go[0], &c, 1) != 1) _exit(1);
        arb_store *mine = NULL;
        c = arb_store_open(f->db, &mine) ? 'x' : 'o';
        if (write(up[1], &c, 1) != 1) _exit(1);
        while (read(hold[0], &c, 1) > 0) {}
        arb_store_close(mine);
        _exit(0);
    }
    close(go[0]);
    close(up[1]);
    close(hold[0]);
    s = open_ok(f->db);
    char c = 'g';
    assert_int_equal(write(go[1], &c, 1), 1);
    assert_int_equal(read(up[0], &c, 1), 1);
    assert_int_equal(c, 'o');
    assert_int_equal(arb_store_close_unused(s), 0);
    assert_true(file_exists(f->db));
    close(go[1]);
    close(hold[1]);
    close(up[0]);
    assert_int_equal(waitpid(child, NULL, 0), child);
}

/* ---- crash safety ------------------------------------------------------------------------- */

static void crash_key(long long i, char out[32]) { snprintf(out, 32, "crash-%08lld", i); }

/* Child: one transaction per call + judgment, acknowledging each commit on fd. Never returns. */
static void crash_child(const char *path, int fd)
{
    arb_store *s = NULL;
    if (arb_store_open(path, &s)) _exit(2);
    for (long long i = 0;; i++) {
        char key[32];
        crash_key(i, key);
        arb__call_record rec = call_record(key, 1, "[[A]]");
        rec.rep = (int)(i % 1000);
        long long id = 0;
        arb__pairwise_row row = pairwise_row("j1", "q1", 0, (int)i, 'A', 0);
        if (arb__store_begin(s) || arb__store_put_call(s, &rec, &id)) _exit(3);
        row.call_id = id;
        if (arb__store_put_pairwise(s, &row) || arb__store_commit(s)) _exit(3);
        if (write(fd, &i, sizeof i) != (ssize_t)sizeof i) _exit(4);
    }
}

static void test_crash_safety(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    put_items(s, "{\"id\":\"q1\",\"question\":\"b\"}\n");
    arb_store_close(s);

    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        crash_child(f->db, fds[1]);
    }
    close(fds[1]);
    long long acked = -1, v;
    /* Wait for the first commit (at most 10 s), then let it write for ~100 ms. */
    double start = arb__now_ms(), first = -1;
    while (arb__now_ms() - start < 10000) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        if (poll(&p, 1, 5) > 0) {
            ssize_t n = read(fds[0], &v, sizeof v);
            if (n <= 0) break; /* child died early */
            assert_int_equal(n, sizeof v);
            assert_int_equal(v, acked + 1);
            acked = v;
            if (first < 0) first = arb__now_ms();
        }
        if (first >= 0 && arb__now_ms() - first >= 100) break;
    }
    kill(pid, SIGKILL);
    int wstatus = 0;
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
    assert_true(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
    ssize_t n;
    while ((n = read(fds[0], &v, sizeof v)) == (ssize_t)sizeof v) {
        assert_int_equal(v, acked + 1);
        acked = v;
    }
    close(fds[0]);
    assert_true(acked >= 0);

    s = open_ok(f->db);
    assert_query_text(s, "PRAGMA integrity_check", "ok");
    assert_int_equal(query_int(s, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
    long long rows = query_int(s, "SELECT count(*) FROM calls");
    /* Every acknowledged commit is there; at most one more committed before its ack. */
    assert_true(rows >= acked + 1);
    assert_true(rows <= acked + 2);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(s),
                                        "SELECT c.key, p.rep FROM calls c JOIN pairwise p ON "
                                        "p.call_id = c.id ORDER BY c.id", -1, &q, NULL),
                     SQLITE_OK);
    long long i = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        char key[32];
        crash_key(i, key);
        assert_string_equal((const char *)sqlite3_column_text(q, 0), key);
        assert_int_equal(sqlite3_column_int64(q, 1), i);
        i++;
    }
    sqlite3_finalize(q);
    assert_int_equal(i, rows); /* the rows are exactly the prefix 0..rows-1, each with its pair */
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise"), rows);
    arb_store_close(s);
}

/* ---- compact requests (schema 11) ---------------------------------------------------------- */

/* The request of one side-by-side call: a long template around the question and both answers,
** with what the prompt length must count right (UTF-8, escapes; escape_u: a \u escape, which
** the scanner leaves to SQL). Caller frees. */
static char *sbs_request(const char *question, const char *first, const char *second,
                         int escape_u)
{
    char tmpl[1200];
    memset(tmpl, 'x', sizeof tmpl - 1);
    tmpl[sizeof tmpl - 1] = '\0';
    char *r = arb__sprintf("{\"logprobs\":%s,\"messages\":[{\"content\":\"Judge fairly, "
                           "caf\xc3\xa9" " \xf0\x9f\x98\x80 \\\"quoted\\\"\\n%s\",\"role\":\"system\"},"
                           "{\"content\":\"[Q] %s\\n[A] %s\\n[B] %s%s\",\"role\":\"user\"}],"
                           "\"model\":\"jm\",\"temperature\":0}",
                           escape_u ? "false" : "true", tmpl, question, first, second,
                           escape_u ? " \\u00e9\\ud83d\\ude00" : "");
    assert_non_null(r);
    return r;
}

/* Stores item q<i>'s two calls (both orders) as sbs does: call, then its pairwise row, in one
** transaction; with texts, each call is given the item's texts up front (as the executor does
** for sbs), so its row is written once, compact, before its pairwise row. built 1: the record
** also tells whether the request asks for logprobs (arb__call_record.built), as the executor
** does; 2: tells it wrong. requests[2i], requests[2i+1] get the requests (caller frees). */
static void put_sbs_item_told(arb_store *s, int i, char **requests, int texts, int built)
{
    char item[16], q[64], a1[128], a2[128];
    snprintf(item, sizeof item, "q%d", i);
    snprintf(q, sizeof q, "What is question %d, r\xc3\xa9" "ellement?", i);
    snprintf(a1, sizeof a1, "Answer of m1 to %d: the sky is blue because of Rayleigh scattering", i);
    snprintf(a2, sizeof a2, "Answer of m2 to %d: it reflects the sea, as sailors say", i);
    char *sql = arb__sprintf("INSERT INTO items(id, seq, question) VALUES ('%s', %d, '%s');"
                             "INSERT INTO answers(item_id, model, answer) VALUES ('%s', 'm1', '%s'),"
                             " ('%s', 'm2', '%s');", item, i, q, item, a1, item, a2);
    assert_int_equal(sqlite3_exec(arb__store_conn(s), sql, NULL, NULL, NULL), SQLITE_OK);
    free(sql);
    assert_int_equal(arb__store_begin(s), ARB_OK);
    for (int ord = 0; ord < 2; ord++) {
        char *req = sbs_request(q, ord ? a2 : a1, ord ? a1 : a2, i == 1);
        char key[33];
        arb__judge_call_key(req, 0, key);
        long long id = -1;
        arb__call_record rec = {.key = key, .judge_name = "j", .model = "jm", .request_json = req,
                                .ok = 1, .content = "[[A]]", .prompt_tokens = -1,
                                .completion_tokens = -1, .reasoning_tokens = -1,
                                .cached_tokens = -1, .cost_usd = NAN, .latency_ms = 5};
        arb__call_texts t = {item, ord ? "m2" : "m1", ord ? "m1" : "m2", q, ord ? a2 : a1,
                             ord ? a1 : a2, 0, 1};
        if (texts) rec.texts = &t;
        if (built) { /* sbs_request asks for logprobs but for item 1; the count left to the store */
            rec.built = 1;
            rec.prompt_chars = -1;
            rec.asks_logprobs = (i != 1) != (built == 2);
        }
        assert_int_equal(arb__store_put_call(s, &rec, &id), ARB_OK);
        if (texts) { /* compact already: no placeholder waits for the pairwise row */
            char *one = arb__sprintf("SELECT length(request) > 0 AND length(request) < 200"
                                     " FROM calls WHERE id = %lld", id);
            assert_int_equal(query_int(s, one), 1);
            free(one);
        }
        arb__pairwise_row row = {.protocol = "sbs", .judge_name = "j", .item_id = item,
                                 .candidate = "m1", .baseline = "m2", .template_name = "t",
                                 .options = 2, .order = ord, .position_verdict = 'A',
                                 .model_verdict = ord ? 'b' : 'a', .call_id = id};
        assert_int_equal(arb__store_put_pairwise(s, &row), ARB_OK);
        requests[2 * i + ord] = req;
    }
    assert_int_equal(arb__store_commit(s), ARB_OK);
}

static void put_sbs_item_as(arb_store *s, int i, char **requests, int texts)
{
    put_sbs_item_told(s, i, requests, texts, 0);
}

static void put_sbs_item(arb_store *s, int i, char **requests)
{
    put_sbs_item_as(s, i, requests, 0);
}

static char *export_text(arb_store *s, const char *format)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    if (arb_store_export(s, format, out)) fail_msg("export: %s", arb_store_errmsg(s));
    fclose(out);
    return text;
}

/* Every call's request reads back exactly as it was sent (in call id order). */
static void assert_requests(arb_store *s, char **requests, int n)
{
    for (int k = 0; k < n; k++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT arb_request(request) FROM calls WHERE id = %d", k + 1);
        assert_query_text(s, sql, requests[k]);
    }
}

/* The prompt length stored with each call is the one the audit computed from the request
** before schema 11 (total length of the messages' contents, by SQL). */
static void assert_prompt_chars(arb_store *s, int n)
{
    assert_int_equal(query_int(s, "SELECT count(*) FROM calls c WHERE prompt_chars IS NOT ("
                                  " SELECT CAST(total(length(json_extract(m.value, '$.content')))"
                                  " AS INTEGER) FROM json_each(arb_request(c.request),"
                                  " '$.messages') m)"), 0);
    assert_int_equal(query_int(s, "SELECT count(*) FROM calls WHERE prompt_chars > 1200"), n);
}

/* Calls stored by sbs are compact; a version-2 store holding the same calls as TEXT (as
** arbiter wrote them before schema 11) is compacted in place on open: every request reads back
** as sent, the prompt lengths are filled in, and every export is byte-identical. A changed
** answer keeps the requests that were compressed against it readable. */
static void test_schema_migration_from_2_compacts_requests(void **state)
{
    fixture *f = *state;
    enum { N_ITEMS = 5, N_CALLS = 2 * N_ITEMS };
    char *requests[N_CALLS];
    arb_store *s = open_ok(f->db);
    for (int i = 0; i < N_ITEMS; i++) put_sbs_item(s, i, requests);
    assert_int_equal(query_int(s, "SELECT count(*) FROM calls WHERE typeof(request) = 'blob'"),
                     N_CALLS);
    assert_int_equal(query_int(s, "SELECT count(*) FROM calls WHERE length(request) < 200"),
                     N_CALLS);
    assert_requests(s, requests, N_CALLS);
    assert_prompt_chars(s, N_CALLS);
    assert_int_equal(query_int(s, "SELECT count(arb_request_asks_logprobs(request)) FROM calls"),
                     N_CALLS - 2); /* item 1's calls say "logprobs": false */
    /* The scanner measures canonical requests itself (SQL only for a \u escape): it costs
    ** every stored call, where a JSON parse by SQL would cost ten times more. */
    assert_true(arb__request_scan_prompt_chars(requests[0]) > 1200);
    assert_int_equal(arb__request_scan_prompt_chars(requests[2]), -1); /* item 1: \u */
    assert_int_equal(arb__request_scan_prompt_chars("{\"messages\":[],\"model\":\"m\"}"), 0);
    assert_int_equal(arb__request_scan_prompt_chars("{\"a\":[1,{\"b\":null}],\"messages\":"
                                                    "[{\"content\":\"ab\\n\",\"role\":\"u\"}],"
                                                    "\"n\":true}"), 3);
    char *jsonl = export_text(s, "jsonl"), *csv = export_text(s, "csv");
    assert_non_null(strstr(jsonl, "r\\u00e9ellement") ? jsonl : strstr(jsonl, "r\xc3\xa9"));

    s = downgrade_and_reopen(s, f->db, UNDO_V7
                             "DROP TABLE annotation_tasks;"
                             "DROP TABLE call_leases;"
                             "DROP TABLE battles_left_out;"
                             "ALTER TABLE pointwise DROP COLUMN task;"
                             "ALTER TABLE pointwise DROP COLUMN reason;"
                             "PRAGMA user_version = 2;");
    assert_int_equal(query_int(s, "SELECT count(*) FROM calls WHERE typeof(request) = 'blob'"),
                     N_CALLS);
    assert_requests(s, requests, N_CALLS);
    assert_prompt_chars(s, N_CALLS);
    char *jsonl2 = export_text(s, "jsonl"), *csv2 = export_text(s, "csv");
    assert_string_equal(jsonl2, jsonl);
    assert_string_equal(csv2, csv);

    /* The dataset changes under the calls: the requests stay as they were sent. */
    assert_int_equal(sqlite3_exec(arb__store_conn(s),
                                  "UPDATE answers SET answer = 'changed' WHERE model = 'm1';"
                                  "UPDATE items SET question = 'changed too' WHERE id = 'q2';"
                                  "DELETE FROM answers WHERE item_id = 'q3' AND model = 'm2';",
                                  NULL, NULL, NULL), SQLITE_OK);
    assert_requests(s, requests, N_CALLS);
    arb_store_close(s);
    for (int k = 0; k < N_CALLS; k++) free(requests[k]);
    free(jsonl);
    free(csv);
    free(jsonl2);
    free(csv2);
}

/* A benchmark-like text of n words (a fixed pseudo-random sequence from seed). */
static void word_text(char *out, size_t cap, unsigned seed, int n)
{
    static const char *const words[] = {"the", "a", "model", "answer", "question", "judge",
                                         "result", "value", "method", "data", "system",
                                         "process", "time", "caf\xc3\xa9"};
    size_t used = 0;
    unsigned x = seed * 2654435761u + 1;
    for (int k = 0; k < n && used + 16 < cap; k++) {
        x = x * 1103515245u + 12345u;
        used += (size_t)snprintf(out + used, cap - used, "%s%s", k ? " " : "",
                                 words[(x >> 16) % (sizeof words / sizeof *words)]);
    }
    snprintf(out + used, cap - used, ".");
}

/* Writes a benchmark of n items (question, reference, two answers of a few hundred characters)
** as JSONL into *items and *answers (caller frees). */
static void benchmark_jsonl(int n, char **items, char **answers)
{
    arb__buf bi, ba;
    arb__buf_init(&bi, 0);
    arb__buf_init(&ba, 0);
    char q[400], r[400], a1[800], a2[800], line[2600];
    for (int i = 0; i < n; i++) {
        word_text(q, sizeof q, 4u * (unsigned)i, 25);
        word_text(r, sizeof r, 4u * (unsigned)i + 1, 20);
        word_text(a1, sizeof a1, 4u * (unsigned)i + 2, 60);
        word_text(a2, sizeof a2, 4u * (unsigned)i + 3, 60);
        int len = snprintf(line, sizeof line,
                           "{\"id\": \"q%d\", \"question\": \"%s\", \"reference\": \"%s\"}\n", i,
                           q, r);
        assert_int_equal(arb__buf_append(&bi, line, (size_t)len), 0);
        len = snprintf(line, sizeof line,
                       "{\"item\": \"q%d\", \"model\": \"m1\", \"answer\": \"%s\"}\n"
                       "{\"item\": \"q%d\", \"model\": \"m2\", \"answer\": \"%s\"}\n",
                       i, a1, i, a2);
        assert_int_equal(arb__buf_append(&ba, line, (size_t)len), 0);
    }
    assert_int_equal(arb__buf_append(&bi, "", 1), 0);
    assert_int_equal(arb__buf_append(&ba, "", 1), 0);
    *items = bi.data;
    *answers = ba.data;
}

/* Stores item q<i>'s two calls (both orders) as sbs does, with the item's texts as the
** dataset ds has them; requests[2i], requests[2i+1] get the requests (caller frees). */
static void put_sbs_calls(arb_store *s, const arb_dataset *ds, int i, char **requests)
{
    char item[16];
    snprintf(item, sizeof item, "q%d", i);
    const arb_item *it = arb_dataset_find_item(ds, item);
    assert_non_null(it);
    const char *a[2] = {NULL, NULL};
    for (size_t k = 0; k < arb_dataset_answer_count(ds); k++) {
        const arb_answer *an = arb_dataset_answer(ds, k);
        if (!strcmp(an->item_id, item)) a[strcmp(an->model, "m1") ? 1 : 0] = an->answer;
    }
    assert_non_null(a[0]);
    assert_non_null(a[1]);
    assert_int_equal(arb__store_begin(s), ARB_OK);
    for (int ord = 0; ord < 2; ord++) {
        char *req = sbs_request(it->question, a[ord], a[1 - ord], 0);
        char key[33];
        arb__judge_call_key(req, 0, key);
        long long id = -1;
        arb__call_record rec = {.key = key, .judge_name = "j", .model = "jm", .request_json = req,
                                .ok = 1, .content = "[[A]]", .prompt_tokens = -1,
                                .completion_tokens = -1, .reasoning_tokens = -1,
                                .cached_tokens = -1, .cost_usd = NAN, .latency_ms = 5};
        assert_int_equal(arb__store_put_call(s, &rec, &id), ARB_OK);
        arb__pairwise_row row = {.protocol = "sbs", .judge_name = "j", .item_id = item,
                                 .candidate = "m1", .baseline = "m2", .template_name = "t",
                                 .options = 2, .order = ord, .position_verdict = 'A',
                                 .model_verdict = ord ? 'b' : 'a', .call_id = id};
        assert_int_equal(arb__store_put_pairwise(s, &row), ARB_OK);
        requests[2 * i + ord] = req;
    }
    assert_int_equal(arb__store_commit(s), ARB_OK);
}

/* The benchmark set of n items as a dataset, read from data/benchmark/{items,answers}.jsonl. */
static arb_dataset *benchmark_dataset(int n)
{
    char *items = NULL, *answers = NULL;
    benchmark_jsonl(n, &items, &answers);
    arb_dataset *ds = arb_dataset_create();
    assert_non_null(ds);
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "data/benchmark/items.jsonl", items,
                                                 strlen(items)), ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "data/benchmark/answers.jsonl", answers,
                                                   strlen(answers)), ARB_OK);
    free(items);
    free(answers);
    return ds;
}

/* The digest of a plan's state (store_resume.c) is a fixed function of the stored rows:
** TEXT, BLOB (call keys), integers, NULL (a failed call's key) enter it as they did when the
** rows' hashes were first summed inside SQLite (arb_rows_digest, 2026-11-28; before, one
** stream over the rows in order gave "01cdaafb271dd1ddaacd099e1e87d1fe": a note of that
** build no longer matches, as no note of another build does, its fingerprint holding the
** build id; schema 15 changed it once more, answers having no rowid to hash since: the first
** rerun after the migration plans in full; and once more when the reply of a judgment's call
** entered it, the full check parsing stored replies again). A changed row (a reply included) changes it and the row put back
** restores it. (The dataset is too small to train a text dictionary: the digest does not
** depend on how texts compress.) */
static void test_plan_state_digest_is_stable(void **state)
{
    fixture *f = *state;
    char *requests[4];
    arb_dataset *ds = benchmark_dataset(20);
    arb_store *s = open_ok(f->db);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM text_dicts"), 0);
    for (int i = 0; i < 2; i++) put_sbs_calls(s, ds, i, requests);
    assert_int_equal(sqlite3_exec(arb__store_conn(s), "UPDATE calls SET ok = 0 WHERE id = 1",
                                  NULL, NULL, NULL), SQLITE_OK);
    const char *judges[] = {"j"};
    arb__sbs_plan_key key = {"m1", "m2", "t", 2, 1, judges, 1};
    arb__plan_state got;
    assert_int_equal(arb__store_sbs_plan_state(s, &key, &got), ARB_OK);
    assert_int_equal(got.judgments, 3);
    assert_string_equal(got.digest, "67e37c0e6b504b5fcc0d32b51e6b73d5");
    static const char *const changes[][2] = {
        {"UPDATE pairwise SET position_verdict = 'B' WHERE call_id = 2",
         "UPDATE pairwise SET position_verdict = 'A' WHERE call_id = 2"},
        {"UPDATE answers SET model = model || '#' WHERE item_id = (SELECT max(item_id) FROM"
         " answers) AND model = (SELECT min(model) FROM answers)",
         "UPDATE answers SET model = substr(model, 1, length(model) - 1) WHERE model LIKE '%#'"},
        {"UPDATE items SET seq = seq + 100 WHERE rowid = 5",
         "UPDATE items SET seq = seq - 100 WHERE rowid = 5"},
        {"UPDATE calls SET ok = 1 WHERE id = 1", "UPDATE calls SET ok = 0 WHERE id = 1"},
        {"UPDATE calls SET content = content || '#' WHERE id = 2",
         "UPDATE calls SET content = substr(content, 1, length(content) - 1) WHERE id = 2"},
    };
    for (size_t i = 0; i < sizeof changes / sizeof *changes; i++) {
        arb__plan_state changed, back;
        assert_int_equal(sqlite3_exec(arb__store_conn(s), changes[i][0], NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(arb__store_sbs_plan_state(s, &key, &changed), ARB_OK);
        assert_string_not_equal(changed.digest, got.digest);
        assert_int_equal(sqlite3_exec(arb__store_conn(s), changes[i][1], NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(arb__store_sbs_plan_state(s, &key, &back), ARB_OK);
        assert_string_equal(back.digest, got.digest);
        assert_int_equal(back.judgments, 3);
    }
    arb_store_close(s);
    arb_dataset_destroy(ds);
    for (int k = 0; k < 4; k++) free(requests[k]);
}

/* The plan digest a run keeps as it writes its judgments (arb__rows_tally, the writer's handle)
** is the one read back from the store: the same digest and count for replies of every shape
** (a reply, an empty one, none, a failed call), in one transaction or several; a judgment whose
** setup held rows already, or whose call was not the one just inserted, breaks the tally (the
** rows are then read back); a tally goes on through another handle (an executor's next slice).
** Fails if the writer's serialisation drifts from the reader's. */
static void test_plan_state_tallied_is_the_scanned(void **state)
{
    fixture *f = *state;
    arb_dataset *ds = benchmark_dataset(6);
    arb_store *s = open_ok(f->db);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    arb__rows_tally tally = {0};
    static const char *const contents[] = {"[[A]] because", "", NULL, "[[B]]", "x", "[[C]]"};
    for (int i = 0; i < 6; i++) {
        if (i % 3 == 0) assert_int_equal(arb__store_begin(s), ARB_OK);
        char item[16];
        snprintf(item, sizeof item, "q%d", i);
        char *req = sbs_request("question", "first", item, 0);
        char key[33];
        arb__judge_call_key(req, 0, key);
        long long id = -1;
        int ok = i != 4; /* a failed call: its judgment has no key or reply in the digest */
        arb__call_record rec = {.key = key, .judge_name = "j", .model = "jm", .request_json = req,
                                .ok = ok, .content = contents[i], .prompt_tokens = -1,
                                .completion_tokens = -1, .reasoning_tokens = -1,
                                .cached_tokens = -1, .cost_usd = NAN, .latency_ms = 5};
        assert_int_equal(arb__store_put_call(s, &rec, &id), ARB_OK);
        arb__pairwise_row row = {.protocol = "sbs", .judge_name = "j", .item_id = item,
                                 .candidate = "m1", .baseline = "m2", .template_name = "t",
                                 .options = 2, .order = i % 2, .rep = i % 3 == 2,
                                 .position_verdict = ok ? 'A' : 'E',
                                 .model_verdict = ok ? (i % 2 ? 'b' : 'a') : 'e', .call_id = id};
        assert_int_equal(arb__store_put_pairwise_tallied(s, &row, &tally), ARB_OK);
        if (i % 3 == 2) assert_int_equal(arb__store_commit(s), ARB_OK);
        free(req);
    }
    assert_int_equal(tally.broken, 0);
    assert_int_equal(tally.rows, 6);
    const char *judges[] = {"j"};
    arb__sbs_plan_key key = {"m1", "m2", "t", 2, 2, judges, 1};
    arb__plan_state scanned, tallied;
    assert_int_equal(arb__store_sbs_plan_state(s, &key, &scanned), ARB_OK);
    assert_int_equal(arb__store_sbs_plan_state_tallied(s, &key, &tally, &tallied), ARB_OK);
    assert_int_equal(scanned.judgments, 5);
    assert_int_equal(tallied.judgments, 5);
    assert_string_equal(tallied.digest, scanned.digest);
    arb_store_close(s);

    /* another handle (an executor's next slice) goes on with the same tally */
    s = open_ok(f->db);
    {
        char *next = sbs_request("question", "first", "q6", 0);
        char k6[33];
        arb__judge_call_key(next, 0, k6);
        long long id6 = -1;
        arb__call_record r6 = {.key = k6, .judge_name = "j", .model = "jm", .request_json = next,
                               .ok = 1, .content = "[[B]]", .prompt_tokens = -1,
                               .completion_tokens = -1, .reasoning_tokens = -1,
                               .cached_tokens = -1, .cost_usd = NAN, .latency_ms = 5};
        assert_int_equal(arb__store_begin(s), ARB_OK);
        assert_int_equal(arb__store_put_call(s, &r6, &id6), ARB_OK);
        arb__pairwise_row row6 = {.protocol = "sbs", .judge_name = "j", .item_id = "q0",
                                  .candidate = "m1", .baseline = "m2", .template_name = "t",
                                  .options = 2, .order = 1, .rep = 1, .position_verdict = 'B',
                                  .model_verdict = 'a', .call_id = id6};
        assert_int_equal(arb__store_put_pairwise_tallied(s, &row6, &tally), ARB_OK);
        assert_int_equal(arb__store_commit(s), ARB_OK);
        free(next);
    }
    assert_int_equal(tally.broken, 0);
    assert_int_equal(arb__store_sbs_plan_state(s, &key, &scanned), ARB_OK);
    assert_int_equal(arb__store_sbs_plan_state_tallied(s, &key, &tally, &tallied), ARB_OK);
    assert_int_equal(scanned.judgments, 6);
    assert_int_equal(tallied.judgments, 6);
    assert_string_equal(tallied.digest, scanned.digest);
    arb_store_close(s);

    /* a new tally on a setup that holds judgments breaks */
    s = open_ok(f->db);
    arb__rows_tally again = {0};
    char *req = sbs_request("question", "first", "q9", 0);
    char k9[33];
    arb__judge_call_key(req, 0, k9);
    long long id = -1;
    arb__call_record rec = {.key = k9, .judge_name = "j", .model = "jm", .request_json = req,
                            .ok = 1, .content = "[[A]]", .prompt_tokens = -1,
                            .completion_tokens = -1, .reasoning_tokens = -1,
                            .cached_tokens = -1, .cost_usd = NAN, .latency_ms = 5};
    assert_int_equal(arb__store_put_call(s, &rec, &id), ARB_OK);
    arb__pairwise_row row = {.protocol = "sbs", .judge_name = "j", .item_id = "q5",
                             .candidate = "m1", .baseline = "m2", .template_name = "t",
                             .options = 2, .order = 0, .rep = 0, .position_verdict = 'A',
                             .model_verdict = 'a', .call_id = id};
    assert_int_equal(arb__store_put_pairwise_tallied(s, &row, &again), ARB_OK);
    assert_int_equal(again.broken, 1);
    /* a call that is not the one just inserted breaks a fresh setup's tally too */
    arb__rows_tally other = {0};
    row.template_name = "t2";
    row.call_id = 1;
    assert_int_equal(arb__store_put_pairwise_tallied(s, &row, &other), ARB_OK);
    assert_int_equal(other.broken, 1);
    arb_store_close(s);
    free(req);
    arb_dataset_destroy(ds);
}

/* Texts varied enough that the trained content fills the whole dictionary: the sources' path,
** appended after that content, must still be in the dictionary (finalizing cuts the end of a
** content that does not fit), so a source "file:line" that migration 12 compacts (a load keeps
** sources TEXT) compresses to a few bytes. */
static void test_text_dictionary_keeps_source_paths(void **state)
{
    fixture *f = *state;
    enum { N_ITEMS = 1500, WORDS = 60 };
    static const char *const words[] = {"model", "data", "time", "a", "the", "value", "system",
                                        "result", "answer", "judge", "method", "process",
                                        "question", "of", "and", "is"};
    arb__buf items, answers;
    arb__buf_init(&items, 0);
    arb__buf_init(&answers, 0);
    unsigned long long x = 88172645463325252ULL; /* xorshift64: words in a fixed random order */
    for (int i = 0; i < 3 * N_ITEMS; i++) {
        arb__buf *b = i < N_ITEMS ? &items : &answers;
        if (i < N_ITEMS) arb__buf_printf(b, "{\"id\": \"i%d\", \"question\": \"", i);
        else arb__buf_printf(b, "{\"item\": \"i%d\", \"model\": \"m%d\", \"answer\": \"",
                             (i - N_ITEMS) / 2, (i - N_ITEMS) % 2);
        for (int w = 0; w < WORDS; w++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            arb__buf_puts(b, words[x % 16]);
            arb__buf_puts(b, w + 1 < WORDS ? " " : ".");
        }
        arb__buf_puts(b, "\"}\n");
    }
    arb_dataset *ds = arb_dataset_create();
    assert_non_null(ds);
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "a/rather/long/directory/of/items.jsonl",
                                                 items.data, items.len), ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "a/rather/long/directory/of/answers.jsonl",
                                                   answers.data, answers.len), ARB_OK);
    arb_store *s = open_ok(f->db);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    assert_int_equal(query_int(s, "SELECT length(dict) >= 32 * 1024 FROM text_dicts"), 1);
    /* the dictionary's content ends with the sources' two paths, in the order first seen */
    static const char paths[] = "a/rather/long/directory/of/items.jsonl:\n"
                                "a/rather/long/directory/of/answers.jsonl:\n";
    char *sql = arb__sprintf("SELECT substr(dict, -%zu) = CAST('%s' AS BLOB) FROM text_dicts",
                             strlen(paths), paths);
    assert_int_equal(query_int(s, sql), 1);
    free(sql);
    /* a load keeps sources TEXT; migration 12 compacts those of an older store */
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers WHERE typeof(source) = 'text'"),
                     2 * N_ITEMS);
    assert_int_equal(sqlite3_exec(arb__store_conn(s),
                                  "UPDATE items SET source = arb_text_pack(source);"
                                  "UPDATE answers SET source = arb_text_pack(source)",
                                  NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers WHERE typeof(source) = 'blob'"
                                  " AND length(source) < 28"), 2 * N_ITEMS);
    assert_int_equal(query_int(s, "SELECT count(*) FROM items WHERE typeof(source) = 'blob'"
                                  " AND length(source) < 28"), N_ITEMS);
    assert_query_text(s, "SELECT arb_text(source) FROM answers WHERE item_id = 'i7' AND model = 'm1'",
                      "a/rather/long/directory/of/answers.jsonl:16");
    arb_store_close(s);
    arb_dataset_destroy(ds);
    arb__buf_free(&items);
    arb__buf_free(&answers);
}

/* The compressor keeps its context, parameters and dictionary from one text to the next: a newer
** dictionary in text_dicts (trained by another process) must replace them at the next
** transaction, its texts then carry its id and read back exactly; and a text's length in code
** points (counted 8 bytes at a time) is SQL's length() for UTF-8 of every length and mix. */
static void test_compact_texts_follow_a_newer_dictionary(void **state)
{
    fixture *f = *state;
    arb_dataset *ds = benchmark_dataset(600);
    arb_store *s = open_ok(f->db);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM text_dicts"), 1);
    assert_int_equal(sqlite3_exec(arb__store_conn(s),
                                  "INSERT INTO text_dicts(dict) SELECT dict FROM text_dicts",
                                  NULL, NULL, NULL), SQLITE_OK);
    /* answers of q1, each a mix of 1- to 4-byte characters, lengths 30 to 99 bytes */
    arb__buf jsonl, text;
    arb__buf_init(&jsonl, 0);
    arb__buf_init(&text, 0);
    static const char *const pieces[] = {"a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                         " word"};
    for (int k = 0; k < 40; k++) {
        arb__buf_reset(&text);
        for (int i = 0; text.len < (size_t)(30 + k * 7 % 70); i++)
            arb__buf_puts(&text, pieces[(i * 7 + k) % 5]);
        arb__buf_printf(&jsonl, "{\"item\": \"q1\", \"model\": \"u%d\", \"answer\": \"%s\"}\n", k,
                        text.data);
    }
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "more/answers.jsonl", jsonl.data,
                                                   jsonl.len), ARB_OK);
    assert_int_equal(arb__store_put_answers(s, ds), ARB_OK);
    /* the first byte of a compact text is its dictionary's id (a varint) */
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers WHERE model LIKE 'u%'"
                                  " AND typeof(answer) = 'blob' AND substr(answer, 1, 1) = x'02'"),
                     40);
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers WHERE arb_text_length(answer)"
                                  " IS NOT length(arb_text(answer))"), 0);
    for (size_t i = 0; i < arb_dataset_answer_count(ds); i++) {
        const arb_answer *a = arb_dataset_answer(ds, i);
        if (a->model[0] != 'u') continue;
        char *sql = arb__sprintf("SELECT arb_text(answer) = '%s' FROM answers"
                                 " WHERE item_id = 'q1' AND model = '%s'", a->answer, a->model);
        assert_int_equal(query_int(s, sql), 1);
        free(sql);
    }
    arb_store_close(s);
    arb_dataset_destroy(ds);
    arb__buf_free(&jsonl);
    arb__buf_free(&text);
}

/* A dictionary in text_dicts that is raw content (no zstd dictionary header, so no id to clear
** before compressing with it) compresses the texts of the next transaction as one with a header
** does: they carry its id and read back exactly. */
static void test_compact_texts_with_a_raw_content_dictionary(void **state)
{
    fixture *f = *state;
    arb_dataset *ds = benchmark_dataset(600);
    arb_store *s = open_ok(f->db);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    /* the dictionary: the 20 answers stored again below, one after the other */
    arb__buf jsonl, content;
    arb__buf_init(&jsonl, 0);
    arb__buf_init(&content, 0);
    for (size_t i = 0; i < 20; i++) arb__buf_puts(&content, arb_dataset_answer(ds, i)->answer);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(s),
                                        "INSERT INTO text_dicts(dict) VALUES (?1)", -1, &q,
                                        NULL), SQLITE_OK);
    sqlite3_bind_blob(q, 1, content.data, (int)content.len, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    assert_int_equal(query_int(s, "SELECT max(id) FROM text_dicts"), 2);
    for (size_t i = 0; i < 20; i++) {
        const arb_answer *a = arb_dataset_answer(ds, i);
        arb__buf_printf(&jsonl, "{\"item\": \"%s\", \"model\": \"raw%zu\", \"answer\": \"%s\"}\n",
                        a->item_id, i, a->answer);
    }
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "raw/answers.jsonl", jsonl.data, jsonl.len),
                     ARB_OK);
    assert_int_equal(arb__store_put_answers(s, ds), ARB_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers WHERE model LIKE 'raw%'"
                                  " AND typeof(answer) = 'blob' AND substr(answer, 1, 1) = x'02'"),
                     20);
    for (size_t i = 0; i < 20; i++) {
        const arb_answer *a = arb_dataset_answer(ds, i);
        char *sql = arb__sprintf("SELECT arb_text(answer) = '%s' FROM answers"
                                 " WHERE item_id = '%s' AND model = 'raw%zu'",
                                 a->answer, a->item_id, i);
        assert_int_equal(query_int(s, sql), 1);
        free(sql);
    }
    arb_store_close(s);
    arb_dataset_destroy(ds);
    arb__buf_free(&jsonl);
    arb__buf_free(&content);
}

/* A varint as store_texts.c writes a compact text's header. */
static size_t put_test_varint(unsigned char *out, unsigned long long v)
{
    size_t n = 0;
    do {
        out[n++] = (unsigned char)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

/* A store written by the previous release (before 2026-11-28): its texts compressed with
** ZSTD_compress2 at level 3 against the store's dictionary, its sources compact too. Every
** compact text this release writes holds exactly those bytes; the same dataset loaded again
** into such a store writes nothing and the export stays byte-identical; a row changed in
** another column is updated without its question or answer counting as replaced (no row in
** retired_texts, which a question or answer compressed to other bytes would add). */
static void test_dataset_again_into_a_previous_release_store(void **state)
{
    fixture *f = *state;
    enum { N_ITEMS = 600 };
    arb_dataset *ds = benchmark_dataset(N_ITEMS);
    arb_store *s = open_ok(f->db);
    sqlite3 *db = arb__store_conn(s);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    /* sources "file:line" stay TEXT: a frame each was ~40% of the instructions of storing */
    assert_int_equal(query_int(s, "SELECT count(*) FROM items WHERE typeof(source) = 'text'"),
                     N_ITEMS);
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers WHERE typeof(source) = 'text'"),
                     2 * N_ITEMS);

    /* the bytes the previous release's encoder (ZSTD_compress2, CDict referenced) writes; the
    ** dictionary has zstd's header with an id (this release compresses with a copy whose id
    ** is 0, so that ZSTD_compress_usingCDict writes none into the frame) */
    assert_int_equal(query_int(s, "SELECT hex(substr(dict, 1, 4)) = '37A430EC'"
                                  " AND substr(dict, 5, 4) <> x'00000000' FROM text_dicts"
                                  " WHERE id = 1"), 1);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT dict FROM text_dicts WHERE id = 1", -1, &q,
                                        NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    ZSTD_CDict *cdict = ZSTD_createCDict(sqlite3_column_blob(q, 0),
                                         (size_t)sqlite3_column_bytes(q, 0), 3);
    sqlite3_finalize(q);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    assert_non_null(cdict);
    assert_non_null(cctx);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_dictIDFlag, 0);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    ZSTD_CCtx_refCDict(cctx, cdict);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT arb_text(question), question FROM items"
                                            " UNION ALL SELECT arb_text(reference), reference"
                                            " FROM items UNION ALL SELECT arb_text(answer),"
                                            " answer FROM answers", -1, &q, NULL), SQLITE_OK);
    int compact = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        if (sqlite3_column_type(q, 1) != SQLITE_BLOB) continue;
        const char *text = (const char *)sqlite3_column_text(q, 0);
        size_t len = strlen(text), chars = 0;
        for (size_t i = 0; i < len; i++) chars += ((unsigned char)text[i] & 0xc0) != 0x80;
        unsigned char expected[8192];
        size_t h = put_test_varint(expected, 1);
        h += put_test_varint(expected + h, chars);
        unsigned char frame[8192];
        size_t n = ZSTD_compress2(cctx, frame, sizeof frame, text, len);
        assert_false(ZSTD_isError(n));
        memcpy(expected + h, frame + 4, n - 4); /* the magic number is not stored */
        assert_int_equal((size_t)sqlite3_column_bytes(q, 1), h + n - 4);
        assert_memory_equal(sqlite3_column_blob(q, 1), expected, h + n - 4);
        compact++;
    }
    sqlite3_finalize(q);
    assert_int_equal(compact, 4 * N_ITEMS);
    ZSTD_freeCCtx(cctx);
    ZSTD_freeCDict(cdict);

    /* the previous release compacted the sources as well (migration 12 still does) */
    assert_int_equal(sqlite3_exec(db, "UPDATE items SET source = arb_text_pack(source);"
                                      "UPDATE answers SET source = arb_text_pack(source)",
                                  NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers WHERE typeof(source) = 'blob'"),
                     2 * N_ITEMS);
    char *before = export_text(s, "jsonl");
    long long changes = sqlite3_total_changes(db);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    assert_int_equal(sqlite3_total_changes(db), changes);
    char *after = export_text(s, "jsonl");
    assert_string_equal(after, before);
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers WHERE typeof(source) = 'blob'"),
                     2 * N_ITEMS);

    /* rows changed in another column are written back, their texts as they were */
    assert_int_equal(sqlite3_exec(db, "UPDATE items SET category = 'other' WHERE id = 'q5';"
                                      "UPDATE answers SET extra = '{\"x\":1}'"
                                      " WHERE item_id = 'q5' AND model = 'm1'",
                                  NULL, NULL, NULL), SQLITE_OK);
    changes = sqlite3_total_changes(db);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    assert_int_equal(sqlite3_total_changes(db), changes + 2);
    assert_int_equal(query_int(s, "SELECT count(*) FROM retired_texts"), 0);
    char *again = export_text(s, "jsonl");
    assert_string_equal(again, before);
    arb_store_close(s);
    arb_dataset_destroy(ds);
    free(before);
    free(after);
    free(again);
}

/* Schema 12: a dataset large enough to train a dictionary is stored as compact texts, read
** back exactly (export, arb_text, arb_text_length), and loading it again writes nothing. A
** version-11 store (its texts TEXT, as arbiter wrote them before) is compacted in place on
** open: the export is byte-identical, every request reads back as sent, and a text changed
** afterwards keeps the requests compressed against it readable. */
static void test_schema_migration_12_compacts_texts(void **state)
{
    fixture *f = *state;
    enum { N_ITEMS = 600, N_JUDGED = 8, N_CALLS = 2 * N_JUDGED };
    char *requests[N_CALLS];
    arb_dataset *ds = benchmark_dataset(N_ITEMS);
    arb_store *s = open_ok(f->db);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM text_dicts"), 1);
    /* every text is compact; sources "file:line" stay TEXT (a frame each cost more than the
    ** ~20 bytes it saved was worth, 2026-11-28) */
    assert_int_equal(query_int(s, "SELECT count(*) FROM items WHERE typeof(question) = 'blob'"
                                  " AND typeof(reference) = 'blob' AND typeof(source) = 'text'"),
                     N_ITEMS);
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers WHERE typeof(answer) = 'blob'"
                                  " AND typeof(source) = 'text'"), 2 * N_ITEMS);
    assert_int_equal(query_int(s, "SELECT sum(length(answer)) * 3 < sum(length(arb_text(answer)))"
                                  " FROM answers"), 1);
    assert_query_text(s, "SELECT arb_text(source) FROM answers"
                         " WHERE item_id = 'q7' AND model = 'm2'", "data/benchmark/answers.jsonl:16");
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers"
                                  " WHERE arb_text_length(answer) IS NOT length(arb_text(answer))"),
                     0);
    const arb_item *q5 = arb_dataset_find_item(ds, "q5");
    char *sql = arb__sprintf("SELECT arb_text(question) = '%s' AND arb_text(reference) = '%s'"
                             " FROM items WHERE id = 'q5'", q5->question, q5->reference);
    assert_int_equal(query_int(s, sql), 1);
    free(sql);
    /* the same dataset again changes no row */
    long long before = sqlite3_total_changes(arb__store_conn(s));
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    assert_int_equal(sqlite3_total_changes(arb__store_conn(s)), before);
    for (int i = 0; i < N_JUDGED; i++) put_sbs_calls(s, ds, i, requests);
    assert_requests(s, requests, N_CALLS);
    char *jsonl = export_text(s, "jsonl"), *csv = export_text(s, "csv");
    assert_non_null(strstr(jsonl, q5->question) ? jsonl : strstr(jsonl, "caf\xc3\xa9"));

    /* version 11: the same store with its texts as TEXT */
    s = downgrade_and_reopen(s, f->db, UNDO_V12 "PRAGMA user_version = 11;");
    assert_int_equal(query_int(s, "SELECT count(*) FROM text_dicts"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers WHERE typeof(answer) = 'blob'"),
                     2 * N_ITEMS);
    assert_int_equal(query_int(s, "SELECT count(*) FROM retired_texts"), 0);
    assert_requests(s, requests, N_CALLS);
    char *jsonl2 = export_text(s, "jsonl"), *csv2 = export_text(s, "csv");
    assert_string_equal(jsonl2, jsonl);
    assert_string_equal(csv2, csv);

    /* The dataset changes under the calls: the requests stay as they were sent. */
    assert_int_equal(sqlite3_exec(arb__store_conn(s),
                                  "UPDATE answers SET answer = 'changed' WHERE model = 'm1';"
                                  "DELETE FROM answers WHERE item_id = 'q3' AND model = 'm2';",
                                  NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM retired_texts WHERE typeof(body) = 'blob'"),
                     N_ITEMS + 1);
    assert_requests(s, requests, N_CALLS);
    arb_store_close(s);
    arb_dataset_destroy(ds);
    for (int k = 0; k < N_CALLS; k++) free(requests[k]);
    free(jsonl);
    free(csv);
    free(jsonl2);
    free(csv2);
}

/* Migration 15 (cheaper rows of the dataset) on a store of schema 14 with data: answers has
** no rowid, foreign key or CHECK any more, items no CHECK on extra, pairwise's comment on
** call_id is true again; every row stays (the export is byte-identical), the file is sound, the
** retirement triggers still keep a replaced answer, loading the same dataset again writes
** nothing, and a changed dataset is stored (new rows inserted, changed ones updated). */
static void test_schema_migration_15_dataset_rows(void **state)
{
    fixture *f = *state;
    static const char items[] = "{\"id\":\"q1\",\"question\":\"Why?\",\"tag\":[1,2]}\n"
                                "{\"id\":\"q2\",\"question\":\"How?\"}\n";
    static const char answers[] = "{\"item\":\"q1\",\"model\":\"m1\",\"answer\":\"Because.\"}\n"
                                  "{\"item\":\"q1\",\"model\":\"m2\",\"answer\":\"No idea\","
                                  "\"score\":0.5}\n"
                                  "{\"item\":\"q2\",\"model\":\"m1\",\"answer\":\"Slowly.\"}\n";
    arb_store *s = open_ok(f->db);
    arb_dataset *ds = make_dataset(items, answers);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    long long a = put_call(s, &(arb__call_record){.key = "k1", .judge_name = "j1", .model = "m",
                                                  .request_json = "{}", .ok = 1,
                                                  .content = "[[A]]", .prompt_tokens = -1,
                                                  .completion_tokens = -1});
    arb__pairwise_row row = pairwise_row("j1", "q1", 0, 0, 'A', a);
    row.candidate = "m1";
    row.baseline = "m2";
    put_pairwise(s, &row);
    char *jsonl = export_text(s, "jsonl");
    undo_v16(s);
    undo_v15(s);
    arb_store_close(s);

    s = open_ok(f->db);
    assert_int_equal(query_int(s, "PRAGMA user_version"), 16);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'answers'"
                                  " AND instr(sql, 'WITHOUT ROWID') AND NOT instr(sql, 'json_valid')"),
                     1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pragma_foreign_key_list('answers')"), 0);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE type = 'index'"
                                  " AND tbl_name = 'answers'"), 0);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'items'"
                                  " AND NOT instr(sql, 'json_valid')"), 1);
    /* pairwise's table is pairwise_judgments since schema 16 */
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema"
                                  " WHERE name = 'pairwise_judgments'"
                                  " AND instr(sql, 'checked by the store on insert')"
                                  " AND NOT instr(sql, 'triggers below')"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'"
                                  " AND tbl_name = 'answers'"), 2);
    assert_query_text(s, "PRAGMA integrity_check", "ok");
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers"), 3);
    assert_query_text(s, "SELECT extra FROM answers WHERE item_id = 'q1' AND model = 'm2'",
                      "{\"score\":0.5}");
    char *jsonl2 = export_text(s, "jsonl");
    assert_string_equal(jsonl2, jsonl);
    /* the same dataset again writes nothing */
    int before = sqlite3_total_changes(arb__store_conn(s));
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    assert_int_equal(sqlite3_total_changes(arb__store_conn(s)), before);
    arb_dataset_destroy(ds);
    /* a changed dataset: q1's answer of m1 replaced (the old text retired), q3 new */
    ds = make_dataset("{\"id\":\"q1\",\"question\":\"Why?\",\"tag\":[1,2]}\n"
                      "{\"id\":\"q3\",\"question\":\"When?\"}\n",
                      "{\"item\":\"q1\",\"model\":\"m1\",\"answer\":\"Since.\"}\n"
                      "{\"item\":\"q3\",\"model\":\"m1\",\"answer\":\"Now.\"}\n");
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    arb_dataset_destroy(ds);
    assert_int_equal(query_int(s, "SELECT count(*) FROM answers"), 4);
    assert_query_text(s, "SELECT arb_text(answer) FROM answers WHERE item_id = 'q1'"
                         " AND model = 'm1'", "Since.");
    assert_query_text(s, "SELECT arb_text(body) FROM retired_texts WHERE item_id = 'q1'"
                         " AND model = 'm1'", "Because.");
    assert_query_text(s, "SELECT arb_text(question) FROM items WHERE id = 'q3'", "When?");
    assert_int_equal(query_int(s, "SELECT seq FROM items WHERE id = 'q3'"), 1);
    free(jsonl);
    free(jsonl2);
    arb_store_close(s);
}

/* Migration 16 (a cheaper row per pairwise judgment) on a store of schema 15 with pairwise and
** pointwise judgments (arbiter's own and an imported one): pairwise is a view of
** pairwise_setups and pairwise_judgments, pointwise's CHECKs have no IN lists; every row stays
** (each export format is byte-identical), the file is sound, the state a rerun compares with
** its plan note is the same (so the rerun sends nothing), and rows written after it go where
** they belong: a judgment of a known setup names it, one written through the view (as the
** import and other tools write) updates and deletes its row, and the CHECKs still refuse. */
static void test_schema_migration_16_judgment_rows(void **state)
{
    fixture *f = *state;
    char *requests[8];
    arb_dataset *ds = benchmark_dataset(20);
    arb_store *s = open_ok(f->db);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    for (int i = 0; i < 3; i++) put_sbs_calls(s, ds, i, requests);
    sqlite3 *db = arb__store_conn(s);
    assert_int_equal(
        sqlite3_exec(db,
                     "INSERT INTO judgment_sources(name, kind, path) VALUES ('src', 'judgments',"
                     " 'j.jsonl');"
                     "INSERT INTO pairwise(protocol, judge_name, item_id, candidate, baseline,"
                     " template_name, options, ord, rep, position_verdict, model_verdict, call_id,"
                     " judged_at, source, strength, extra) VALUES ('sbs', 'ext', 'q1', 'm2', 'm1',"
                     " 'imported', 3, 1, 0, 'B', 'a', NULL, 1700000000000, 'src', 2,"
                     " '{\"note\":1}')",
                     NULL, NULL, NULL),
        SQLITE_OK);
    for (int i = 0; i < 2; i++) {
        char key[8];
        snprintf(key, sizeof key, "kp%d", i);
        long long c = put_call(s, &(arb__call_record){.key = key, .judge_name = "j1", .model = "m",
                                                      .request_json = "{}", .ok = 1,
                                                      .content = "<answer>4</answer>",
                                                      .prompt_tokens = -1,
                                                      .completion_tokens = -1});
        arb__pointwise_row p = pointwise_row("j1", i ? "q2" : "q1", i ? -1 : 4, c);
        assert_int_equal(arb__store_put_pointwise(s, &p), ARB_OK);
    }
    const char *judges[] = {"j"};
    arb__sbs_plan_key key = {"m1", "m2", "t", 2, 1, judges, 1};
    arb__plan_state before, after;
    assert_int_equal(arb__store_sbs_plan_state(s, &key, &before), ARB_OK);
    assert_int_equal(before.judgments, 6);
    static const char *const formats[] = {"jsonl", "csv", "pointwise"};
    char *exported[3];
    for (int k = 0; k < 3; k++) exported[k] = export_text(s, formats[k]);
    undo_v16(s);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise"), 7);
    arb_store_close(s);

    s = open_ok(f->db);
    db = arb__store_conn(s);
    assert_int_equal(query_int(s, "PRAGMA user_version"), 16);
    assert_query_text(s, "SELECT type FROM sqlite_schema WHERE name = 'pairwise'", "view");
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise_setups"), 2);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise_judgments"), 7);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise"), 7);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'pointwise'"
                                  " AND NOT instr(sql, ' IN (''') AND"
                                  " instr(sql, 'kind = ''yesno'' OR') AND instr(sql, 'task = ''qa'' OR')"),
                     1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pragma_foreign_key_list('pointwise')"
                                  " WHERE \"table\" = 'items'"), 0);
    assert_query_text(s, "PRAGMA integrity_check", "ok");
    assert_int_equal(query_int(s, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
    for (int k = 0; k < 3; k++) {
        char *again = export_text(s, formats[k]);
        assert_string_equal(again, exported[k]);
        free(again);
        free(exported[k]);
    }
    assert_int_equal(arb__store_sbs_plan_state(s, &key, &after), ARB_OK);
    assert_int_equal(after.judgments, before.judgments);
    assert_string_equal(after.digest, before.digest);
    /* a judgment of a stored setup names it; a new item adds rows, not setups */
    put_sbs_calls(s, ds, 3, requests);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise_setups"), 2);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise WHERE candidate = 'm1'"
                                  " AND template_name = 't'"), 8);
    /* written through the view: updated and deleted in place, the CHECKs still refuse */
    assert_int_equal(sqlite3_exec(db, "UPDATE pairwise SET position_verdict = 'B',"
                                      " model_verdict = 'b' WHERE item_id = 'q1' AND ord = 0"
                                      " AND judge_name = 'j'", NULL, NULL, NULL), SQLITE_OK);
    assert_query_text(s, "SELECT position_verdict || model_verdict FROM pairwise"
                         " WHERE item_id = 'q1' AND ord = 0 AND judge_name = 'j'", "Bb");
    assert_int_equal(sqlite3_exec(db, "UPDATE pairwise SET options = 5 WHERE judge_name = 'j'",
                                  NULL, NULL, NULL), SQLITE_CONSTRAINT_CHECK);
    assert_int_equal(sqlite3_exec(db, "UPDATE pointwise SET kind = 'grade5'", NULL, NULL, NULL),
                     SQLITE_CONSTRAINT_CHECK);
    assert_int_equal(sqlite3_exec(db, "UPDATE pointwise SET task = 'poem'", NULL, NULL, NULL),
                     SQLITE_CONSTRAINT_CHECK);
    assert_int_equal(sqlite3_exec(db, "DELETE FROM pairwise WHERE source = 'src'", NULL, NULL,
                                  NULL), SQLITE_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise_judgments"), 8);
    for (int i = 0; i < 8; i++) free(requests[i]);
    arb_dataset_destroy(ds);
    arb_store_close(s);
}

/* Migration 14 (cheaper writes per call) on a store of schema 13: pairwise's CHECKs are stated
** without IN lists, the trigger that checked a judgment's call and the index of the leases by
** owner are gone; every row stays (the export is byte-identical), the file is sound, and a
** judgment whose call is missing is still refused. */
static void test_schema_migration_14_cheaper_writes(void **state)
{
    fixture *f = *state;
    arb_store *s = open_ok(f->db);
    put_items(s, "{\"id\":\"q1\",\"question\":\"?\"}\n");
    long long a = put_call(s, &(arb__call_record){.key = "k1", .judge_name = "j1", .model = "m",
                                                  .request_json = "{}", .ok = 1,
                                                  .content = "[[A]]", .prompt_tokens = -1,
                                                  .completion_tokens = -1});
    arb__pairwise_row row = pairwise_row("j1", "q1", 0, 0, 'A', a);
    put_pairwise(s, &row);
    arb__lease_owner o;
    arb__lease_owner_init(&o, 60);
    arb__call_claim c = {.key = "k2"};
    assert_int_equal(arb__store_claim_calls(s, &o, &c, 1), ARB_OK);
    char *jsonl = export_text(s, "jsonl");
    undo_v16(s);
    undo_v15(s);
    undo_v14(s);
    arb_store_close(s);

    s = open_ok(f->db);
    assert_int_equal(query_int(s, "PRAGMA user_version"), 16);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name IN"
                                  " ('pairwise_call_inserted', 'call_leases_by_owner')"), 0);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema WHERE name ="
                                  " 'pairwise_call_updated'"), 1);
    /* pairwise's columns are in pairwise_setups and pairwise_judgments since schema 16 */
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema"
                                  " WHERE name = 'pairwise_setups' AND instr(sql, 'IN (2, 3, 4)') = 0"
                                  " AND instr(sql, 'CHECK (options = 2 OR options = 3')"), 1);
    assert_int_equal(query_int(s, "SELECT count(*) FROM sqlite_schema"
                                  " WHERE name = 'pairwise_judgments'"
                                  " AND instr(sql, 'IN (''A''') = 0 AND instr(sql, 'IN (''a''') = 0"
                                  " AND instr(sql, 'CHECK (position_verdict = ''A'' OR')"), 1);
    assert_query_text(s, "PRAGMA integrity_check", "ok");
    char *jsonl2 = export_text(s, "jsonl");
    assert_string_equal(jsonl2, jsonl);
    assert_int_equal(query_int(s, "SELECT count(*) FROM call_leases"), 1);
    /* the lease is still the owner's to renew and release */
    assert_int_equal(arb__store_renew_leases(s, &o), ARB_OK);
    assert_int_equal(arb__store_release_leases(s, &o), ARB_OK);
    assert_int_equal(query_int(s, "SELECT count(*) FROM call_leases"), 0);
    row = pairwise_row("j1", "q1", 1, 0, 'B', 999);
    assert_int_equal(arb__store_put_pairwise(s, &row), ARB_DB);
    assert_non_null(strstr(arb_store_errmsg(s), "no such call"));
    row.call_id = a;
    put_pairwise(s, &row);
    assert_int_equal(query_int(s, "SELECT count(*) FROM pairwise"), 2);
    free(jsonl);
    free(jsonl2);
    arb_store_close(s);
}

/* Migration 13 (compact judgment rows): a store of schema 12 keeps every call key, time,
** endpoint and judgment. Keys of 32 hex digits become 16 bytes (another key stays text),
** times integer milliseconds (a time of another form stays as it was), endpoints a reference,
** pairwise rows lose their row id; the export is byte-identical and the keys read back. */
static void test_schema_migration_13_compacts_rows(void **state)
{
    fixture *f = *state;
    static const char hex_key[] = "0123456789abcdef0123456789abcdef";
    arb_store *s = open_ok(f->db);
    put_items(s, "{\"id\":\"q1\",\"question\":\"?\"}\n{\"id\":\"q2\",\"question\":\"?\"}\n");
    long long a = put_call(s, &(arb__call_record){.key = hex_key, .judge_name = "j1",
                                                  .model = "m", .request_json = "{\"n\":1}",
                                                  .ok = 1, .content = "[[A]]",
                                                  .prompt_tokens = -1, .completion_tokens = -1,
                                                  .endpoint = "http://e1/v1"});
    long long b = put_call(s, &(arb__call_record){.key = "k-not-hex", .judge_name = "j1",
                                                  .model = "m", .request_json = "{\"n\":2}",
                                                  .ok = 1, .content = "[[B]]",
                                                  .prompt_tokens = -1, .completion_tokens = -1,
                                                  .endpoint = "http://e2/v1"});
    arb__pairwise_row row = pairwise_row("j1", "q1", 0, 0, 'A', a);
    put_pairwise(s, &row);
    row = pairwise_row("j1", "q2", 1, 0, 'B', b);
    put_pairwise(s, &row);
    assert_int_equal(query_int(s, "SELECT count(*) FROM calls WHERE typeof(created_at) = 'integer'"
                                  " AND created_at > 1700000000000"), 2);
    static const char times[] = "SELECT group_concat(created_at, ',') FROM"
                                " (SELECT created_at FROM calls ORDER BY id)";
    char *times_before = query_text(s, times);
    char *jsonl = export_text(s, "jsonl"), *csv = export_text(s, "csv");

    /* schema 12, with one time in a form of its own */
    s = downgrade_and_reopen(s, f->db, "UPDATE pairwise SET judged_at = 'then' WHERE item_id = 'q2';"
                                       "PRAGMA user_version = 12;");
    assert_int_equal(query_int(s, "SELECT count(*) FROM calls WHERE typeof(key) = 'blob'"
                                  " AND length(key) = 16"), 1);
    assert_query_text(s, "SELECT lower(hex(key)) FROM calls WHERE typeof(key) = 'blob'", hex_key);
    assert_query_text(s, "SELECT key FROM calls WHERE typeof(key) = 'text'", "k-not-hex");
    char *times_after = query_text(s, times);
    assert_string_equal(times_after, times_before);
    assert_query_text(s, "SELECT judged_at FROM pairwise WHERE item_id = 'q2'", "then");
    assert_int_equal(query_int(s, "SELECT typeof(judged_at) = 'integer' FROM pairwise"
                                  " WHERE item_id = 'q1'"), 1);
    assert_query_text(s, "SELECT group_concat(e.url, ',') FROM calls c"
                         " JOIN endpoints e ON e.id = c.endpoint_id ORDER BY c.id",
                      "http://e1/v1,http://e2/v1");
    assert_int_not_equal(sqlite3_exec(arb__store_conn(s), "SELECT rowid FROM pairwise_judgments",
                                      NULL, NULL, NULL), SQLITE_OK);
    char *jsonl2 = export_text(s, "jsonl"), *csv2 = export_text(s, "csv");
    assert_string_equal(jsonl2, jsonl);
    assert_string_equal(csv2, csv);
    /* the keys read back as text, and a stored call is found by its key */
    int found = 0;
    long long id = 0;
    char *content = NULL;
    assert_int_equal(arb__store_find_call(s, hex_key, &found, &id, &content), ARB_OK);
    assert_int_equal(found, 1);
    assert_int_equal(id, a);
    assert_string_equal(content, "[[A]]");
    arb_free(content);
    /* the call of a judgment is still checked */
    row = pairwise_row("j1", "q1", 1, 0, 'A', 999);
    assert_int_equal(arb__store_put_pairwise(s, &row), ARB_DB);
    arb_store_close(s);
    free(times_before);
    free(times_after);
    free(jsonl);
    free(csv);
    free(jsonl2);
    free(csv2);
}

/* The export of a store of compact requests and texts (issue 17's export regression): the query
** sorts the compact rows and rebuilds nothing before its first row comes out (so the sorter
** never holds the rebuilt ~4.6 KB rows); each text is decompressed once for the two orders of
** its item, the dictionary loaded once, and a request is rebuilt from the row's own texts, none
** read again by SQL. Every request comes out as it was sent, also after the dataset changed
** under it. */
static void test_export_rebuilds_after_sort(void **state)
{
    fixture *f = *state;
    enum { N_ITEMS = 600, N_JUDGED = 8, N_CALLS = 2 * N_JUDGED };
    char *requests[N_CALLS];
    arb_dataset *ds = benchmark_dataset(N_ITEMS);
    arb_store *s = open_ok(f->db);
    assert_int_equal(arb__store_put_dataset(s, ds), ARB_OK);
    for (int i = 0; i < N_JUDGED; i++) put_sbs_calls(s, ds, i, requests);
    arb_store_close(s);
    s = open_ok(f->db); /* a fresh open: nothing cached, counts from 0 */
    assert_int_equal(query_int(s, "SELECT count(*) FROM calls WHERE typeof(request) = 'blob'"),
                     N_CALLS);
    assert_int_equal(query_int(s, "SELECT count(*) FROM items WHERE typeof(question) = 'blob'"),
                     N_ITEMS);

    for (int changed = 0; changed < 2; changed++) {
        arb__decode_counts before, after;
        arb__store_decode_counts(s, &before);
        char *jsonl = export_text(s, "jsonl");
        arb__store_decode_counts(s, &after);
        assert_int_equal(after.export_before_first_row, 0);
        assert_int_equal(after.requests - before.requests, N_CALLS);
        if (!changed) {
            assert_int_equal(after.texts - before.texts, 3 * N_JUDGED);
            assert_int_equal(after.text_reads - before.text_reads, 0);
            assert_int_equal(after.dictionaries, 1);
        }
        int line = 0;
        for (char *p = jsonl, *nl; (nl = strchr(p, '\n')); p = nl + 1, line++) {
            json_t *o = json_loadb(p, (size_t)(nl - p), 0, NULL);
            assert_non_null(o);
            assert_true(line < N_CALLS);
            /* lines in item order, then order 0 and 1: q0's two calls, q1's... */
            assert_string_equal(json_string_value(json_object_get(o, "request")), requests[line]);
            json_decref(o);
        }
        assert_int_equal(line, N_CALLS);
        free(jsonl);
        /* the dataset changes under the calls: their requests rebuild from retired_texts */
        assert_int_equal(sqlite3_exec(arb__store_conn(s),
                                      "UPDATE answers SET answer = 'changed' WHERE model = 'm1';"
                                      "DELETE FROM answers WHERE item_id = 'q3' AND model = 'm2';",
                                      NULL, NULL, NULL), SQLITE_OK);
    }
    arb_store_close(s);
    arb_dataset_destroy(ds);
    for (int k = 0; k < N_CALLS; k++) free(requests[k]);
}

/* Every stored call as one line of text: id, key, compact request and prompt length. */
static const char calls_rows_sql[] = "SELECT group_concat(id || ':' || key || ':' || hex(request)"
                                     " || ':' || prompt_chars, ',') FROM (SELECT * FROM calls"
                                     " ORDER BY id)";

/* A call given its texts up front is written once, compact, and its row is byte-identical to
** the one written when its pairwise row names the texts afterwards (insert, then UPDATE). */
static void test_call_with_texts_written_compact_once(void **state)
{
    fixture *f = *state;
    enum { N_ITEMS = 3, N_CALLS = 2 * N_ITEMS };
    char *later[N_CALLS], *upfront[N_CALLS];
    char other[320];
    snprintf(other, sizeof other, "%s/upfront.db", f->dir);
    arb_store *a = open_ok(f->db), *b = open_ok(other);
    for (int i = 0; i < N_ITEMS; i++) {
        put_sbs_item_as(a, i, later, 0);
        put_sbs_item_as(b, i, upfront, 1);
    }
    char *ra = query_text(a, calls_rows_sql), *rb = query_text(b, calls_rows_sql);
    assert_string_equal(ra, rb);
    free(ra);
    free(rb);
    static const char texts[] = "SELECT group_concat(id || ':' || hash || ':' || hex(body), ',')"
                                " FROM (SELECT * FROM request_texts ORDER BY id)";
    ra = query_text(a, texts);
    rb = query_text(b, texts);
    assert_string_equal(ra, rb);
    assert_requests(b, upfront, N_CALLS);
    char *ea = export_text(a, "jsonl"), *eb = export_text(b, "jsonl");
    assert_string_equal(ea, eb);
    free(ra);
    free(rb);
    free(ea);
    free(eb);
    for (int k = 0; k < N_CALLS; k++) {
        free(later[k]);
        free(upfront[k]);
    }
    arb_store_close(a);
    arb_store_close(b);
}

/* Whether a request asks for logprobs, told by its builder (arb__call_record.built), is stored
** as the store reads it in the request when not told: the rows are byte-identical. Told wrong,
** the row differs: the store took what it was told instead of reading the request again. */
static void test_call_told_logprobs_stored_as_read(void **state)
{
    fixture *f = *state;
    enum { N_ITEMS = 3, N_CALLS = 2 * N_ITEMS };
    char *read[N_CALLS], *told[N_CALLS], *wrong[N_CALLS];
    char path_told[320], path_wrong[320];
    snprintf(path_told, sizeof path_told, "%s/told.db", f->dir);
    snprintf(path_wrong, sizeof path_wrong, "%s/wrong.db", f->dir);
    arb_store *a = open_ok(f->db), *b = open_ok(path_told), *c = open_ok(path_wrong);
    for (int i = 0; i < N_ITEMS; i++) {
        put_sbs_item_told(a, i, read, 1, 0);
        put_sbs_item_told(b, i, told, 1, 1);
        put_sbs_item_told(c, i, wrong, 1, 2);
    }
    char *ra = query_text(a, calls_rows_sql), *rb = query_text(b, calls_rows_sql),
         *rc = query_text(c, calls_rows_sql);
    assert_string_equal(ra, rb);
    assert_string_not_equal(ra, rc);
    assert_requests(b, told, N_CALLS);
    char *ea = export_text(a, "jsonl"), *eb = export_text(b, "jsonl");
    assert_string_equal(ea, eb);
    free(ra);
    free(rb);
    free(rc);
    free(ea);
    free(eb);
    for (int k = 0; k < N_CALLS; k++) {
        free(read[k]);
        free(told[k]);
        free(wrong[k]);
    }
    arb_store_close(a);
    arb_store_close(b);
    arb_store_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* first: it needs SQLite not yet initialised in this process */
        cmocka_unit_test_setup_teardown(test_setup_process_turns_off_memory_statistics, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_errmsg_never_null, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_prompt_chars_told_or_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_told_logprobs_stored_as_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pairwise_grouped_in_transaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_judgment_insert_cost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_times_are_unix_ms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pairwise_grouped_refusal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_close_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_migration_from_1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fresh_schema_is_the_migrated_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_dictionary_keeps_source_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plan_state_digest_is_stable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plan_state_tallied_is_the_scanned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dataset_again_into_a_previous_release_store, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_schema_migration_12_compacts_texts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_texts_follow_a_newer_dictionary, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_compact_texts_with_a_raw_content_dictionary, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_schema_migration_13_compacts_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_migration_14_cheaper_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_migration_15_dataset_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_migration_16_judgment_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_rebuilds_after_sort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_with_texts_written_compact_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_schema_migration_from_2_compacts_requests, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_schema_migration_pointwise_task, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_migration_persona_scores, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_sqlite_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_find_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_call_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_success_never_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pairwise_upsert, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pairwise_rejects_bad_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_each_pairwise_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_dataset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_judge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cost_per_judge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_urls_stored_without_credentials, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_csv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_jsonl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_invalid_utf8_and_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_lines_are_janssons_dump, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_unknown_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_safety, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_migration_run_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_leases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_leases_other_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_lease_claimed_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_finds_stored_calls_in_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settle_call_keeps_stored_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_unused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pointwise_grouped_in_transaction, setup, teardown),
    };
    const char *only = getenv("ARB_TEST");
    if (only && *only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
