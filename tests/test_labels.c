/*
** test_labels.c -- human (expert) labels (labels.c, METHODS §4): importing JSONL and CSV
** (quoting, CRLF, byte order mark, column order), every refusal with its file:line: field
** message, all-or-nothing imports, upsert counts, majority labels with ties, and the
** inter-annotator report (pair Pearson of verdict-count vectors, Cohen's and Fleiss' kappa per
** benchmark split) against hand-computed numbers.
**
** Each test gets a fresh store in a temporary directory holding items q1..q4 (seq 0..3) and
** a0 (seq 4, so id order and benchmark order differ). Run one test alone with ARB_TEST=<name>.
*/
#include "test_sql.h"
#include "testutil.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define EPS 1e-12

typedef struct fixture {
    char dir[128];
    char file[192]; /* the last label file written */
    arb_store *store;
} fixture;

static const char items_jsonl[] = "{\"id\":\"q1\",\"question\":\"one?\"}\n"
                                  "{\"id\":\"q2\",\"question\":\"two?\"}\n"
                                  "{\"id\":\"q3\",\"question\":\"three?\"}\n"
                                  "{\"id\":\"q4\",\"question\":\"four?\"}\n"
                                  "{\"id\":\"a0\",\"question\":\"last?\"}\n";

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f; /* teardown frees what setup made, even when setup fails */
    if (arb_test_store_with_items("test_labels", items_jsonl, f->dir, sizeof f->dir, &f->store))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f) return 0;
    arb_store_close(f->store);
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

/* Writes content (n bytes) to name in the fixture's directory; f->file gets its path. */
static void write_file(fixture *f, const char *name, const char *content, size_t n)
{
    snprintf(f->file, sizeof f->file, "%s/%s", f->dir, name);
    assert_int_equal(arb_test_write_file(f->file, content, n), 0);
}

/* Writes content to name and imports it (format from the extension). */
static arb_status import_text(fixture *f, const char *name, const char *content,
                              arb_labels_import_stats *stats)
{
    write_file(f, name, content, strlen(content));
    return arb_labels_import(f->store, f->file, NULL, stats);
}

/* Imports content expecting success; checks the counts. */
static void import_ok(fixture *f, const char *name, const char *content, size_t rows,
                      size_t inserted, size_t updated, size_t unchanged)
{
    arb_labels_import_stats st;
    arb_status status = import_text(f, name, content, &st);
    if (status != ARB_OK) fail_msg("import of %s: %s", name, arb_store_errmsg(f->store));
    assert_int_equal(st.rows, rows);
    assert_int_equal(st.inserted, inserted);
    assert_int_equal(st.updated, updated);
    assert_int_equal(st.unchanged, unchanged);
}

static long long count_labels(fixture *f)
{
    return arb_test_query_int(f->store, "SELECT count(*) FROM human_labels");
}

/* The store's error message must contain "<file>:<where>" followed by want. */
static void assert_message(fixture *f, const char *where, const char *want)
{
    const char *msg = arb_store_errmsg(f->store);
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s:%s", f->file, where);
    if (strncmp(msg, prefix, strlen(prefix)) != 0 || !strstr(msg, want))
        fail_msg("message \"%s\" lacks \"%s\" ... \"%s\"", msg, prefix, want);
}

/* ---- importing ----------------------------------------------------------------------------- */
/* A judgment of judge "j" on item, candidate vs baseline, candidate shown first: [[A]]. */
static void put_judgment(fixture *f, const char *item, const char *candidate,
                         const char *baseline)
{
    arb__pairwise_row row;
    memset(&row, 0, sizeof row);
    row.judge_name = "j";
    row.item_id = item;
    row.candidate = candidate;
    row.baseline = baseline;
    row.template_name = "t";
    row.options = 3;
    row.position_verdict = 'A';
    if (arb_test_put_sbs_judgment(f->store, &row, NULL)) fail();
}

/* The stored label of annotator on item as "candidate>baseline:verdict:shown_order". */
static void assert_label(fixture *f, const char *item, const char *annotator, const char *want)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM human_labels WHERE item_id = '%s' AND "
             "annotator = '%s' AND candidate || '>' || baseline || ':' || verdict || ':' || "
             "shown_order = '%s'", item, annotator, want);
    if (arb_test_query_int(f->store, sql) != 1) fail_msg("no label %s on %s by %s", want, item,
                                                         annotator);
}


static void import_jsonl_fields(void **state)
{
    fixture *f = *state;
    import_ok(f, "l.jsonl",
              "{\"item\":\"q1\",\"candidate\":\"m1\",\"baseline\":\"m2\",\"verdict\":\"a\","
              "\"annotator\":\"ann\",\"shown_order\":1,\"time_ms\":4200,\"note\":\"ignored\"}\n"
              "\n   \r\n"
              "{\"item\":\"q2\",\"candidate\":\"m1\",\"baseline\":\"m2\",\"verdict\":\"d\","
              "\"annotator\":\"ann\",\"shown_order\":null}\r\n"
              "{\"item\":\"q2\",\"candidate\":\"m1\",\"baseline\":\"m2\",\"verdict\":\"c\","
              "\"annotator\":\"bob\"}",
              3, 3, 0, 0);
    assert_int_equal(count_labels(f), 3);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM human_labels WHERE "
                                                  "item_id='q1' AND verdict='a' AND "
                                                  "shown_order=1 AND time_ms=4200"), 1);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM human_labels WHERE "
                                                  "item_id='q2' AND annotator='ann' AND "
                                                  "verdict='d' AND shown_order IS NULL AND "
                                                  "time_ms IS NULL"), 1);
    char sql[400];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM human_labels WHERE source = '%s'", f->file);
    assert_int_equal(arb_test_query_int(f->store, sql), 3);
}

/* A byte order mark, CRLF line ends, columns in another order, an extra column whose quoted
** values hold commas, quotes and a newline, a quoted annotator with a comma, and empty
** optional fields. */
static void import_csv_quoting(void **state)
{
    fixture *f = *state;
    import_ok(f, "l.csv",
              "\xEF\xBB\xBF" "annotator,comment,verdict,item,baseline,candidate,time_ms,shown_order\r\n"
              "\"Smith, J.\",\"long, with \"\"quotes\"\"\r\nand a second line\",b,q1,m2,m1,,0\r\n"
              "ann,plain,c,q2,m2,m1,120,\r\n"
              "\r\n"
              "\"ann\",,a,\"q3\",m2,m1,7,1\r\n",
              3, 3, 0, 0);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM human_labels WHERE "
                                                  "item_id='q1' AND annotator='Smith, J.' AND "
                                                  "verdict='b' AND candidate='m1' AND "
                                                  "baseline='m2' AND shown_order=0 AND "
                                                  "time_ms IS NULL"), 1);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM human_labels WHERE "
                                                  "item_id='q2' AND verdict='c' AND "
                                                  "time_ms=120 AND shown_order IS NULL"), 1);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM human_labels WHERE "
                                                  "item_id='q3' AND verdict='a' AND "
                                                  "time_ms=7 AND shown_order=1"), 1);
}

/* An error in a record after a record spanning lines 2-3 names line 4 (physical lines), and a
** record that itself spans lines is named by the line it starts on. */
static void import_csv_line_numbers(void **state)
{
    fixture *f = *state;
    const char *head = "item,candidate,baseline,verdict,annotator,comment\n";
    char text[512];
    snprintf(text, sizeof text, "%sq1,m1,m2,a,ann,\"two\nlines\"\nq2,m1,m2,x,ann,\n", head);
    assert_int_equal(import_text(f, "l.csv", text, NULL), ARB_PARSE);
    assert_message(f, "4: ", "field \"verdict\"");
    snprintf(text, sizeof text, "%sq1,m1,m2,a,ann,\n\nq2,m1,m2,Q,ann,\"x\ny\nz\"\n", head);
    assert_int_equal(import_text(f, "l.csv", text, NULL), ARB_PARSE);
    assert_message(f, "4: ", "field \"verdict\"");
    /* the last record without a line end */
    snprintf(text, sizeof text, "%sq1,m1,m2,a,ann,\nq2,m1,m2,a,,", head);
    assert_int_equal(import_text(f, "l.csv", text, NULL), ARB_PARSE);
    assert_message(f, "3: ", "field \"annotator\": expected a non-empty string");
    assert_int_equal(count_labels(f), 0);
}

/* A file of one row per line; every error names file:line: field. */
typedef struct bad_case {
    const char *name;    /* file name: its extension picks the format */
    const char *content;
    const char *where;   /* "line: " */
    const char *want;    /* substring of the message */
} bad_case;

#define ROW(item, cand, base, verdict, ann)                                                    \
    "{\"item\":" item ",\"candidate\":" cand ",\"baseline\":" base ",\"verdict\":" verdict     \
    ",\"annotator\":" ann "}\n"
#define GOOD ROW("\"q1\"", "\"m1\"", "\"m2\"", "\"a\"", "\"ann\"")

static const bad_case bad_cases[] = {
    {"missing.jsonl",
     GOOD "{\"item\":\"q2\",\"candidate\":\"m1\",\"baseline\":\"m2\",\"verdict\":\"a\"}\n",
     "2: ", "field \"annotator\": missing"},
    {"type.jsonl", GOOD ROW("\"q2\"", "\"m1\"", "\"m2\"", "1", "\"ann\""), "2: ",
     "field \"verdict\": expected a string, got number 1"},
    /* an integer id is read as the text the store holds, like items.jsonl's ids */
    {"itemnum.jsonl", ROW("7", "\"m1\"", "\"m2\"", "\"a\"", "\"ann\""), "1: ",
     "field \"item\": item \"7\" is not in the store"},
    {"itemreal.jsonl", ROW("7.5", "\"m1\"", "\"m2\"", "\"a\"", "\"ann\""), "1: ",
     "field \"item\": expected a string or an integer id, got number 7.5"},
    {"annotator_type.jsonl", ROW("\"q1\"", "\"m1\"", "\"m2\"", "\"a\"", "null"), "1: ",
     "field \"annotator\": expected a string, got null"},
    {"dup_same.jsonl", GOOD GOOD, "2: ", "duplicate label"},
    {"upper2.jsonl", ROW("\"q1\"", "\"m1\"", "\"m2\"", "\"A\"", "\"ann\""), "1: ",
     "field \"verdict\": got \"A\": verdict must be a model verdict a/b/c/d (candidate "
     "better, baseline better, both good, both bad); uppercase A-D are position verdicts"},
    {"verdict_e.jsonl", ROW("\"q1\"", "\"m1\"", "\"m2\"", "\"e\"", "\"ann\""), "1: ",
     "field \"verdict\": expected a model verdict a/b/c/d"},
    {"verdict_long.jsonl", ROW("\"q1\"", "\"m1\"", "\"m2\"", "\"ab\"", "\"ann\""), "1: ",
     "got \"ab\""},
    {"unknown.jsonl", GOOD ROW("\"q9\"", "\"m1\"", "\"m2\"", "\"a\"", "\"ann\""), "2: ",
     "field \"item\": item \"q9\" is not in the store; judge it first (arbiter sbs stores "
     "the items)"},
    {"dup.jsonl",
     GOOD ROW("\"q2\"", "\"m1\"", "\"m2\"", "\"a\"", "\"ann\"")
         ROW("\"q1\"", "\"m1\"", "\"m2\"", "\"b\"", "\"ann\""),
     "3: ", "already given at line 1"},
    {"same.jsonl", ROW("\"q1\"", "\"m1\"", "\"m1\"", "\"a\"", "\"ann\""), "1: ",
     "field \"baseline\": expected a model other than the candidate"},
    {"order.jsonl",
     "{\"item\":\"q1\",\"candidate\":\"m1\",\"baseline\":\"m2\",\"verdict\":\"a\","
     "\"annotator\":\"ann\",\"shown_order\":2}\n",
     "1: ", "field \"shown_order\": expected 0"},
    {"order2.jsonl",
     "{\"item\":\"q1\",\"candidate\":\"m1\",\"baseline\":\"m2\",\"verdict\":\"a\","
     "\"annotator\":\"ann\",\"shown_order\":\"0\"}\n",
     "1: ", "field \"shown_order\": expected 0 (candidate shown first) or 1 (baseline shown "
     "first), got string \"0\""},
    {"time.jsonl",
     "{\"item\":\"q1\",\"candidate\":\"m1\",\"baseline\":\"m2\",\"verdict\":\"a\","
     "\"annotator\":\"ann\",\"time_ms\":-5}\n",
     "1: ", "field \"time_ms\": expected a whole number of milliseconds >= 0, got number -5"},
    {"time2.jsonl",
     "{\"item\":\"q1\",\"candidate\":\"m1\",\"baseline\":\"m2\",\"verdict\":\"a\","
     "\"annotator\":\"ann\",\"time_ms\":1.5}\n",
     "1: ", "field \"time_ms\""},
    {"utf8.jsonl", GOOD ROW("\"q2\"", "\"m1\"", "\"m2\"", "\"a\"", "\"an\xff\""), "2: ",
     "invalid UTF-8"},
    {"empty_ann.jsonl", ROW("\"q1\"", "\"m1\"", "\"m2\"", "\"a\"", "\"\""), "1: ",
     "field \"annotator\": expected a non-empty string"},
    {"json.jsonl", GOOD "{\"item\": \"q2\",\n", "2: ", "invalid JSON"},
    {"array.jsonl", "[1,2]\n", "1: ", "expected a JSON object"},
    {"dupkey.jsonl",
     "{\"item\":\"q1\",\"item\":\"q2\",\"candidate\":\"m1\",\"baseline\":\"m2\","
     "\"verdict\":\"a\",\"annotator\":\"ann\"}\n",
     "1: ", "invalid JSON"},
    {"header.csv", "item,candidate,baseline,verdict\nq1,m1,m2,a\n", "1: ",
     "header: missing column \"annotator\""},
    {"header2.csv", "item,candidate,baseline,verdict,annotator,item\n", "1: ",
     "column \"item\" appears twice"},
    {"count.csv", "item,candidate,baseline,verdict,annotator\nq1,m1,m2,a,ann\nq2,m1,m2,a\n",
     "3: ", "expected 5 fields as in the header, got 4"},
    {"upper.csv", "item,candidate,baseline,verdict,annotator\nq1,m1,m2,B,ann\n", "2: ",
     "uppercase A-D are position verdicts"},
    {"order.csv", "item,candidate,baseline,verdict,annotator,shown_order\nq1,m1,m2,a,ann,x\n",
     "2: ", "field \"shown_order\": expected 0"},
    {"time.csv", "item,candidate,baseline,verdict,annotator,time_ms\nq1,m1,m2,a,ann,-1\n",
     "2: ", "field \"time_ms\": expected a whole number"},
    {"utf8.csv", "item,candidate,baseline,verdict,annotator\nq1,m1,m2,a,\"x\xc3\x28\"\n", "2: ",
     "field \"annotator\": expected UTF-8 text, got an invalid byte 0xC3 at byte 2"},
    {"quote2.csv", "item,candidate,baseline,verdict,annotator\nq1,m1,m2,a,an\"n\n", "2: ",
     "malformed CSV"},
    {"quote.csv", "item,candidate,baseline,verdict,annotator\nq1,m1,m2,a,\"ann\"x\n", "2: ",
     "malformed CSV"},
    {"open.csv", "item,candidate,baseline,verdict,annotator\nq1,m1,m2,a,ann\n\nq2,m1,\"m2\n,a\n",
     "4: ", "never closed"},
    {"unknown.csv", "item,candidate,baseline,verdict,annotator\nq1,m1,m2,a,ann\nq9,m1,m2,a,ann\n",
     "3: ", "field \"item\": item \"q9\" is not in the store"},
    {"dup.csv", "item,candidate,baseline,verdict,annotator\nq1,m1,m2,a,ann\nq1,m1,m2,c,ann\n",
     "3: ", "already given at line 2"},
    {"same.csv", "item,candidate,baseline,verdict,annotator\nq1,m1,m1,a,ann\n", "2: ",
     "field \"baseline\""},
};

static void import_refusals(void **state)
{
    fixture *f = *state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        arb_labels_import_stats st = {9, 9, 9, 9};
        arb_status status = import_text(f, c->name, c->content, &st);
        if (status != ARB_PARSE)
            fail_msg("%s: status %d (%s), want ARB_PARSE", c->name, (int)status,
                     arb_store_errmsg(f->store));
        assert_message(f, c->where, c->want);
        /* nothing stored, and the counts say so */
        assert_int_equal(count_labels(f), 0);
        assert_int_equal(st.rows + st.inserted + st.updated + st.unchanged, 0);
    }
}

/* An error message never carries a control character from the file to the terminal. */
static void import_message_is_safe(void **state)
{
    fixture *f = *state;
    assert_int_equal(import_text(f, "l.csv",
                                 "item,candidate,baseline,verdict,annotator\n"
                                 "\"q\x1b[2J\",m1,m2,a,ann\n", NULL),
                     ARB_PARSE);
    assert_message(f, "2: ", "item \"q?[2J\" is not in the store");
    assert_null(strchr(arb_store_errmsg(f->store), 0x1b));
    /* a raw control character makes the JSON invalid; jansson's excerpt of it is cleaned */
    assert_int_equal(import_text(f, "l.jsonl", "{\"item\":\"q\x1b[2J\"}\n", NULL), ARB_PARSE);
    assert_message(f, "1: ", "invalid JSON");
    assert_null(strchr(arb_store_errmsg(f->store), 0x1b));
}

static void import_bad_arguments(void **state)
{
    fixture *f = *state;
    write_file(f, "labels.txt", GOOD, strlen(GOOD));
    assert_int_equal(arb_labels_import(f->store, f->file, NULL, NULL), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "cannot tell the label format"));
    /* an explicit format reads any name */
    assert_int_equal(arb_labels_import(f->store, f->file, "jsonl", NULL), ARB_OK);
    assert_int_equal(count_labels(f), 1);
    assert_int_equal(arb_labels_import(f->store, f->file, "xml", NULL), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "expected jsonl, csv or fastchat-human"));
    char missing[256];
    snprintf(missing, sizeof missing, "%s/missing.jsonl", f->dir);
    assert_int_equal(arb_labels_import(f->store, missing, NULL, NULL), ARB_IO);
    assert_non_null(strstr(arb_store_errmsg(f->store), "missing.jsonl: cannot open"));
    assert_int_equal(arb_labels_import(f->store, f->dir, "csv", NULL), ARB_IO);
    /* more than 1 GiB is refused before reading (a sparse file costs no disk) */
    snprintf(missing, sizeof missing, "%s/huge.csv", f->dir);
    FILE *out = fopen(missing, "wb");
    assert_non_null(out);
    fclose(out);
    assert_int_equal(truncate(missing, (off_t)((1LL << 30) + 1)), 0);
    assert_int_equal(arb_labels_import(f->store, missing, NULL, NULL), ARB_TOOBIG);
    assert_non_null(strstr(arb_store_errmsg(f->store), "1 GiB"));
    /* empty files hold no labels, which is not an error */
    arb_labels_import_stats st;
    assert_int_equal(import_text(f, "empty.csv", "", &st), ARB_OK);
    assert_int_equal(st.rows, 0);
    assert_int_equal(import_text(f, "header.csv", "\xEF\xBB\xBFitem,candidate,baseline,verdict,"
                                                  "annotator\r\n", &st), ARB_OK);
    assert_int_equal(st.rows, 0);
    assert_int_equal(count_labels(f), 1);
}

/* A bad line 3 leaves the labels of an earlier import exactly as they were, though lines 1
** and 2 of the bad file would have changed them. */
static void import_all_or_nothing(void **state)
{
    fixture *f = *state;
    import_ok(f, "first.jsonl", ROW("\"q1\"", "\"m1\"", "\"m2\"", "\"a\"", "\"ann\"")
                                ROW("\"q2\"", "\"m1\"", "\"m2\"", "\"b\"", "\"ann\""),
              2, 2, 0, 0);
    arb_labels_import_stats st;
    assert_int_equal(import_text(f, "second.jsonl",
                                 ROW("\"q1\"", "\"m1\"", "\"m2\"", "\"d\"", "\"ann\"")
                                 ROW("\"q3\"", "\"m1\"", "\"m2\"", "\"c\"", "\"ann\"")
                                 ROW("\"q2\"", "\"m1\"", "\"m2\"", "\"C\"", "\"ann\""),
                                 &st),
                     ARB_PARSE);
    assert_message(f, "3: ", "field \"verdict\"");
    assert_int_equal(st.inserted + st.updated, 0);
    assert_int_equal(count_labels(f), 2);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM human_labels WHERE "
                                                  "(item_id='q1' AND verdict='a') OR "
                                                  "(item_id='q2' AND verdict='b')"), 2);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM human_labels WHERE "
                                                  "source LIKE '%second.jsonl'"), 0);
    /* the store is not left in a transaction */
    assert_true(sqlite3_get_autocommit(arb__store_conn(f->store)));
}

/* Inside a caller's transaction a bad file rolls back only its own rows (a savepoint). */
static void import_inside_transaction(void **state)
{
    fixture *f = *state;
    assert_int_equal(arb__store_begin(f->store), ARB_OK);
    import_ok(f, "first.jsonl", GOOD, 1, 1, 0, 0);
    assert_int_equal(import_text(f, "bad.jsonl",
                                 ROW("\"q2\"", "\"m1\"", "\"m2\"", "\"a\"", "\"ann\"")
                                 ROW("\"q9\"", "\"m1\"", "\"m2\"", "\"a\"", "\"ann\""),
                                 NULL),
                     ARB_PARSE);
    assert_false(sqlite3_get_autocommit(arb__store_conn(f->store)));
    assert_int_equal(arb__store_commit(f->store), ARB_OK);
    assert_int_equal(count_labels(f), 1);
}

static void import_upsert_counts(void **state)
{
    fixture *f = *state;
    const char *first = "item,candidate,baseline,verdict,annotator,shown_order,time_ms\n"
                        "q1,m1,m2,a,ann,0,100\n"
                        "q2,m1,m2,b,ann,1,\n"
                        "q3,m1,m2,c,ann,,\n"
                        "q1,m1,m2,a,bob,,\n";
    import_ok(f, "l.csv", first, 4, 4, 0, 0);
    import_ok(f, "l.csv", first, 4, 0, 0, 4);
    /* q1/ann: time changed; q2/ann: order now unknown; q3/ann: verdict changed; q1/bob: same;
    ** q4/ann: new */
    import_ok(f, "l2.csv",
              "item,candidate,baseline,verdict,annotator,shown_order,time_ms\n"
              "q1,m1,m2,a,ann,0,101\n"
              "q2,m1,m2,b,ann,,\n"
              "q3,m1,m2,d,ann,,\n"
              "q1,m1,m2,a,bob,,\n"
              "q4,m1,m2,a,ann,,\n",
              5, 1, 3, 1);
    assert_int_equal(count_labels(f), 5);
    assert_int_equal(arb_test_query_int(f->store, "SELECT time_ms FROM human_labels WHERE "
                                                  "item_id='q1' AND annotator='ann'"), 101);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM human_labels WHERE "
                                                  "item_id='q2' AND shown_order IS NULL"), 1);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM human_labels WHERE "
                                                  "item_id='q3' AND verdict='d'"), 1);
    /* an updated label records the file it now comes from; an unchanged one keeps its own */
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM human_labels WHERE "
                                                  "source LIKE '%l2.csv'"), 4);
    /* the same label from the other format is unchanged */
    import_ok(f, "l3.jsonl", ROW("\"q3\"", "\"m1\"", "\"m2\"", "\"d\"", "\"ann\""), 1, 0, 0, 1);
}

/* ---- majority ------------------------------------------------------------------------------ */

typedef struct majority_seen {
    char text[512];
    int stop_after;
    int calls;
} majority_seen;

static int on_majority(void *ud, const char *item_id, const char *candidate,
                       const char *baseline, char majority, int n_annotators)
{
    majority_seen *m = ud;
    size_t len = strlen(m->text);
    snprintf(m->text + len, sizeof m->text - len, "%s/%s/%s=%c%d ", candidate, baseline, item_id,
             majority ? majority : '0', n_annotators);
    return ++m->calls == m->stop_after;
}

static void majority_with_ties(void **state)
{
    fixture *f = *state;
    /* m1 vs m2: q1 a,a,b -> a; q2 a,b -> tie; q3 a,a,b,b -> tie; a0 (seq 4) c -> c; q4 d,d,d,c
    ** -> d. m0 vs m2 sorts first. Written out of benchmark order on purpose. */
    import_ok(f, "l.csv",
              "item,candidate,baseline,verdict,annotator\n"
              "a0,m1,m2,c,x\n"
              "q3,m1,m2,a,x\nq3,m1,m2,a,y\nq3,m1,m2,b,z\nq3,m1,m2,b,w\n"
              "q1,m1,m2,a,x\nq1,m1,m2,a,y\nq1,m1,m2,b,z\n"
              "q2,m1,m2,a,x\nq2,m1,m2,b,y\n"
              "q4,m1,m2,d,x\nq4,m1,m2,d,y\nq4,m1,m2,d,z\nq4,m1,m2,c,w\n"
              "q2,m0,m2,b,x\n",
              15, 15, 0, 0);
    majority_seen m;
    memset(&m, 0, sizeof m);
    assert_int_equal(arb__labels_each_majority(f->store, on_majority, &m), ARB_OK);
    assert_string_equal(m.text, "m0/m2/q2=b1 m1/m2/q1=a3 m1/m2/q2=02 m1/m2/q3=04 m1/m2/q4=d4 "
                                "m1/m2/a0=c1 ");
    /* nonzero from the callback stops the walk */
    memset(&m, 0, sizeof m);
    m.stop_after = 2;
    assert_int_equal(arb__labels_each_majority(f->store, on_majority, &m), ARB_OK);
    assert_int_equal(m.calls, 2);
}

static void majority_none(void **state)
{
    fixture *f = *state;
    majority_seen m;
    memset(&m, 0, sizeof m);
    assert_int_equal(arb__labels_each_majority(f->store, on_majority, &m), ARB_OK);
    assert_int_equal(m.calls, 0);
}

/* ---- the report ---------------------------------------------------------------------------- */

static json_t *report_json(fixture *f, size_t split_size)
{
    arb_labels_report *r = NULL;
    arb_status st = arb_labels_report_compute(f->store, split_size, &r);
    if (st != ARB_OK) fail_msg("report: %s", arb_store_errmsg(f->store));
    char *text = arb_labels_report_to_json(r);
    assert_non_null(text);
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    if (!root) fail_msg("report JSON does not parse: %s\n%s", err.text, text);
    arb_free(text);
    arb_labels_report_destroy(r);
    return root;
}

static void assert_json_near(const json_t *v, double want)
{
    if (!json_is_number(v)) fail_msg("want %.15g, got a %s", want, arb__json_kind(v));
    double got = json_number_value(v);
    if (fabs(got - want) > EPS) fail_msg("got %.15g, want %.15g", got, want);
}

static long long jint(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v)) fail_msg("\"%s\" is a %s, not an integer", key, arb__json_kind(v));
    return (long long)json_integer_value(v);
}

static void report_empty(void **state)
{
    fixture *f = *state;
    json_t *root = report_json(f, 0);
    assert_int_equal(jint(root, "split_size"), 600);
    assert_int_equal(json_array_size(json_object_get(root, "label_sets")), 0);
    json_decref(root);
    arb_labels_report *r = NULL;
    assert_int_equal(arb_labels_report_compute(f->store, 0, &r), ARB_OK);
    char *text = arb_labels_report_to_text(r);
    assert_string_equal(text, "no expert labels\n");
    arb_free(text);
    arb_labels_report_destroy(r);
    arb_labels_report_destroy(NULL);
}

/* Two annotators over q1..q4: ann1 a,a,b,c; ann2 a,a,b,b; and carol on q1 only (a).
** Count vectors over the 4 common items: ann1 (2,1,1,0), ann2 (2,2,0,0): deviations from the
** mean 1 are (1,0,0,-1) and (1,1,-1,-1): r = 2 / sqrt(2 * 4) = 0.70710678...
** Cohen: p_o = 3/4; marginals ann1 (.5,.25,.25,0), ann2 (.5,.5,0,0): p_e = .375;
** kappa = .375 / .625 = 0.6. carol shares one item with each: no pair listed.
** Majorities: q1 a (a,a,a), q2 a, q3 b, q4 tie (b,c). Fleiss: q2..q4 have 2 annotators (the
** most common number), q1 has 3: rows (2,0,0,0) (0,2,0,0) (0,1,1,0): P = 1,1,0, P_bar = 2/3;
** p = (2,3,1,0)/6, P_e = 14/36; kappa = (24/36 - 14/36) / (22/36) = 5/11. */
static void report_numbers(void **state)
{
    fixture *f = *state;
    import_ok(f, "l.jsonl",
              ROW("\"q1\"", "\"m1\"", "\"m2\"", "\"a\"", "\"ann1\"")
              ROW("\"q2\"", "\"m1\"", "\"m2\"", "\"a\"", "\"ann1\"")
              ROW("\"q3\"", "\"m1\"", "\"m2\"", "\"b\"", "\"ann1\"")
              ROW("\"q4\"", "\"m1\"", "\"m2\"", "\"c\"", "\"ann1\"")
              ROW("\"q1\"", "\"m1\"", "\"m2\"", "\"a\"", "\"ann2\"")
              ROW("\"q2\"", "\"m1\"", "\"m2\"", "\"a\"", "\"ann2\"")
              ROW("\"q3\"", "\"m1\"", "\"m2\"", "\"b\"", "\"ann2\"")
              ROW("\"q4\"", "\"m1\"", "\"m2\"", "\"b\"", "\"ann2\"")
              ROW("\"q1\"", "\"m1\"", "\"m2\"", "\"a\"", "\"carol\""),
              9, 9, 0, 0);
    json_t *root = report_json(f, 0);
    json_t *sets = json_object_get(root, "label_sets");
    assert_int_equal(json_array_size(sets), 1);
    json_t *s = json_array_get(sets, 0);
    assert_string_equal(json_string_value(json_object_get(s, "candidate")), "m1");
    assert_string_equal(json_string_value(json_object_get(s, "baseline")), "m2");
    assert_int_equal(jint(s, "n_items"), 4);
    assert_int_equal(jint(s, "n_labels"), 9);
    assert_int_equal(jint(s, "n_multi_annotated"), 4);
    assert_int_equal(jint(s, "n_annotator_ties"), 1);
    json_t *maj = json_object_get(s, "majority");
    assert_int_equal(jint(maj, "a"), 2);
    assert_int_equal(jint(maj, "b"), 1);
    assert_int_equal(jint(maj, "c"), 0);
    assert_int_equal(jint(maj, "d"), 0);
    json_t *anns = json_object_get(s, "annotators");
    assert_int_equal(json_array_size(anns), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(anns, 2), "name")),
                        "carol");
    assert_int_equal(jint(json_array_get(anns, 0), "n_labels"), 4);
    assert_int_equal(jint(json_array_get(anns, 2), "n_labels"), 1);
    json_t *splits = json_object_get(s, "splits");
    assert_int_equal(json_array_size(splits), 1);
    json_t *sp = json_array_get(splits, 0);
    assert_int_equal(jint(sp, "first_seq"), 0);
    assert_int_equal(jint(sp, "last_seq"), 599);
    assert_int_equal(jint(sp, "n_items"), 4);
    json_t *pairs = json_object_get(sp, "pairs");
    assert_int_equal(json_array_size(pairs), 1);
    json_t *p = json_array_get(pairs, 0);
    assert_string_equal(json_string_value(json_object_get(p, "annotator1")), "ann1");
    assert_string_equal(json_string_value(json_object_get(p, "annotator2")), "ann2");
    assert_int_equal(jint(p, "n_common"), 4);
    assert_json_near(json_object_get(p, "pearson"), 2.0 / sqrt(8.0));
    assert_json_near(json_object_get(p, "cohen_kappa"), 0.6);
    assert_json_near(json_object_get(sp, "mean_pearson"), 2.0 / sqrt(8.0));
    assert_json_near(json_object_get(sp, "fleiss_kappa"), 5.0 / 11.0);
    assert_int_equal(jint(sp, "fleiss_raters"), 2);
    assert_int_equal(jint(sp, "fleiss_items"), 3);
    json_decref(root);

    arb_labels_report *r = NULL;
    assert_int_equal(arb_labels_report_compute(f->store, 0, &r), ARB_OK);
    char *text = arb_labels_report_to_text(r);
    assert_non_null(text);
    assert_non_null(strstr(text, "candidate m1 vs baseline m2"));
    assert_non_null(strstr(text, "4 items, 9 labels, 3 annotators"));
    assert_non_null(strstr(text, "ann1 x ann2: 4 common items, Pearson 0.707, Cohen's kappa 0.600"));
    assert_non_null(strstr(text, "Fleiss' kappa 0.455 (3 items with 2 annotators)"));
    arb_free(text);
    arb_labels_report_destroy(r);
}

/* split_size 2 over q1..q4: two splits. ann1 a,a | b,c; ann2 a,a | b,b.
** Split 0: both (2,0,0,0): r = 1; Cohen undefined (both used only a: p_e = 1) -> null;
** Fleiss: every rating a, P_e = 1 -> null.
** Split 1: (0,1,1,0) vs (0,2,0,0): deviations (-.5,.5,.5,-.5), (-.5,1.5,-.5,-.5): r = 1/sqrt(3);
** Cohen: p_o = .5, p_e = .5 -> 0 (a defined zero, not null).
** a0 (seq 4) labelled by ann1 alone: split 2 with one item and no pairs. */
static void report_splits(void **state)
{
    fixture *f = *state;
    import_ok(f, "l.csv",
              "item,candidate,baseline,verdict,annotator\n"
              "q1,m1,m2,a,ann1\nq2,m1,m2,a,ann1\nq3,m1,m2,b,ann1\nq4,m1,m2,c,ann1\n"
              "q1,m1,m2,a,ann2\nq2,m1,m2,a,ann2\nq3,m1,m2,b,ann2\nq4,m1,m2,b,ann2\n"
              "a0,m1,m2,d,ann1\n",
              9, 9, 0, 0);
    json_t *root = report_json(f, 2);
    assert_int_equal(jint(root, "split_size"), 2);
    json_t *s = json_array_get(json_object_get(root, "label_sets"), 0);
    json_t *splits = json_object_get(s, "splits");
    assert_int_equal(json_array_size(splits), 3);

    json_t *sp = json_array_get(splits, 0);
    assert_int_equal(jint(sp, "first_seq"), 0);
    assert_int_equal(jint(sp, "last_seq"), 1);
    assert_int_equal(jint(sp, "n_items"), 2);
    json_t *p = json_array_get(json_object_get(sp, "pairs"), 0);
    assert_int_equal(jint(p, "n_common"), 2);
    assert_json_near(json_object_get(p, "pearson"), 1.0);
    assert_true(json_is_null(json_object_get(p, "cohen_kappa")));
    assert_true(json_is_null(json_object_get(sp, "fleiss_kappa")));
    assert_int_equal(jint(sp, "fleiss_raters"), 2);
    assert_int_equal(jint(sp, "fleiss_items"), 2);

    sp = json_array_get(splits, 1);
    assert_int_equal(jint(sp, "first_seq"), 2);
    assert_int_equal(jint(sp, "last_seq"), 3);
    p = json_array_get(json_object_get(sp, "pairs"), 0);
    assert_json_near(json_object_get(p, "pearson"), 1.0 / sqrt(3.0));
    assert_json_near(json_object_get(p, "cohen_kappa"), 0.0);
    assert_json_near(json_object_get(sp, "mean_pearson"), 1.0 / sqrt(3.0));

    sp = json_array_get(splits, 2);
    assert_int_equal(jint(sp, "first_seq"), 4);
    assert_int_equal(jint(sp, "n_items"), 1);
    assert_int_equal(json_array_size(json_object_get(sp, "pairs")), 0);
    assert_true(json_is_null(json_object_get(sp, "mean_pearson")));
    assert_true(json_is_null(json_object_get(sp, "fleiss_kappa")));
    assert_int_equal(jint(sp, "fleiss_raters"), 0);
    json_decref(root);
}

/* Label sets are reported per (candidate, baseline) in name order; untrusted names reach the
** text without control characters and the JSON as valid strings. */
static void report_sets_and_names(void **state)
{
    fixture *f = *state;
    import_ok(f, "l.jsonl",
              ROW("\"q1\"", "\"zeta\"", "\"m2\"", "\"a\"", "\"x\"")
              ROW("\"q1\"", "\"alpha\"", "\"m2\"", "\"b\"", "\"evil\\u001b[2J\"")
              ROW("\"q2\"", "\"alpha\"", "\"m2\"", "\"b\"", "\"evil\\u001b[2J\""),
              3, 3, 0, 0);
    json_t *root = report_json(f, 0);
    json_t *sets = json_object_get(root, "label_sets");
    assert_int_equal(json_array_size(sets), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(sets, 0), "candidate")),
                        "alpha");
    assert_int_equal(jint(json_array_get(sets, 0), "n_items"), 2);
    assert_int_equal(jint(json_array_get(sets, 0), "n_multi_annotated"), 0);
    assert_int_equal(jint(json_object_get(json_array_get(sets, 0), "majority"), "b"), 2);
    assert_int_equal(jint(json_array_get(sets, 1), "n_items"), 1);
    json_decref(root);
    arb_labels_report *r = NULL;
    assert_int_equal(arb_labels_report_compute(f->store, 0, &r), ARB_OK);
    char *text = arb_labels_report_to_text(r);
    assert_non_null(text);
    assert_null(strchr(text, 0x1b));
    assert_non_null(strstr(text, "evil?[2J (2)"));
    assert_non_null(strstr(text, "no annotator pair shares 2 or more items"));
    arb_free(text);
    arb_labels_report_destroy(r);
}

static void import_fastchat_human(void **state)
{
    fixture *f = *state;
    /* q1 is judged x (candidate) vs y, q2 the other way round; q3 not at all but the pair is,
    ** once each way (the candidate that sorts first wins: x); p vs q never */
    put_judgment(f, "q1", "x", "y");
    put_judgment(f, "q2", "y", "x");
    static const char text[] =
        "{\"question_id\": \"q1\", \"model_a\": \"y\", \"model_b\": \"x\", \"winner\": "
        "\"model_a\", \"judge\": \"expert_0\", \"turn\": 1, \"conversation_a\": [], "
        "\"conversation_b\": []}\n"
        "{\"question_id\": \"q2\", \"model_a\": \"y\", \"model_b\": \"x\", \"winner\": "
        "\"model_a\", \"judge\": \"expert_0\", \"turn\": 1}\n"
        "{\"question_id\": \"q3\", \"model_a\": \"y\", \"model_b\": \"x\", \"winner\": \"tie\", "
        "\"judge\": \"author_3\"}\n"
        "{\"question_id\": \"q4\", \"model_a\": \"p\", \"model_b\": \"q\", \"winner\": "
        "\"model_b\", \"judge\": \"author_3\", \"turn\": 1}\n"
        "{\"question_id\": \"q3\", \"model_a\": \"q\", \"model_b\": \"p\", \"winner\": "
        "\"model_a\", \"judge\": \"expert_0\", \"turn\": 1}\n";
    write_file(f, "human.jsonl", text, strlen(text));
    arb_labels_import_stats st;
    if (arb_labels_import(f->store, f->file, "fastchat-human", &st))
        fail_msg("%s", arb_store_errmsg(f->store));
    assert_int_equal(st.rows, 5);
    assert_int_equal(st.inserted, 5);
    assert_label(f, "q1", "expert_0", "x>y:b:1"); /* y (the baseline here) won, shown first */
    assert_label(f, "q2", "expert_0", "y>x:a:0");
    assert_label(f, "q3", "author_3", "x>y:c:1");
    assert_label(f, "q4", "author_3", "p>q:b:0"); /* never judged: model_b is the baseline */
    assert_label(f, "q3", "expert_0", "p>q:b:1"); /* ... of the pair's first line, kept */
    assert_int_equal(count_labels(f), 5);
}

static void import_fastchat_human_refusals(void **state)
{
    fixture *f = *state;
    static const char good[] = "{\"question_id\": \"q1\", \"model_a\": \"y\", \"model_b\": "
                               "\"x\", \"winner\": \"tie\", \"judge\": \"expert_0\"}\n";
    static const struct {
        const char *line, *where, *msg;
    } cases[] = {
        {"{\"question_id\": \"q1\", \"model_a\": \"y\", \"model_b\": \"x\", \"winner\": "
         "\"tie (bothbad)\", \"judge\": \"expert_1\"}",
         "2: field \"winner\"", "expected \"model_a\", \"model_b\" or \"tie\", got string "
         "\"tie (bothbad)\""},
        {"{\"question_id\": \"q1\", \"model_a\": \"y\", \"model_b\": \"y\", \"winner\": \"tie\", "
         "\"judge\": \"expert_1\"}",
         "2: field \"model_b\"", "expected a model other than model_a, got string \"y\""},
        {"{\"question_id\": \"q1\", \"model_a\": \"y\", \"model_b\": \"x\", \"winner\": \"tie\", "
         "\"judge\": [\"gpt-4\", \"pair-v2\"]}",
         "2: field \"judge\"", "is a model judge's verdict (the dataset's gpt4_pair split)"},
        {"{\"question_id\": \"q1\", \"model_a\": \"y\", \"model_b\": \"x\", \"winner\": \"tie\", "
         "\"judge\": \"expert_1\", \"turn\": 2}",
         "2: field \"question_id\"", "item \"q1#2\" is not in the store; import the judgments "
         "first (arbiter import fastchat"},
        {"{\"question_id\": \"q1\", \"model_a\": \"y\", \"model_b\": \"x\", \"winner\": \"tie\", "
         "\"judge\": \"expert_1\", \"turn\": 0}",
         "2: field \"turn\"", "expected an integer >= 1, got number 0"},
        {"{\"question_id\": null, \"model_a\": \"y\", \"model_b\": \"x\", \"winner\": \"tie\", "
         "\"judge\": \"expert_1\"}",
         "2: field \"question_id\"", "expected an integer or a non-empty string, got null"},
        {"{\"question_id\": \"q1\", \"model_a\": \"x\", \"model_b\": \"y\", \"winner\": \"tie\", "
         "\"judge\": \"expert_0\"}",
         "2: duplicate label", "was already given at line 1"},
    };
    char text[1024];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        snprintf(text, sizeof text, "%s%s\n", good, cases[k].line);
        write_file(f, "human.jsonl", text, strlen(text));
        assert_int_equal(arb_labels_import(f->store, f->file, "fastchat-human", NULL), ARB_PARSE);
        assert_message(f, cases[k].where, cases[k].msg);
        assert_int_equal(count_labels(f), 0); /* all or nothing */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(import_jsonl_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(import_csv_quoting, setup, teardown),
        cmocka_unit_test_setup_teardown(import_csv_line_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(import_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(import_message_is_safe, setup, teardown),
        cmocka_unit_test_setup_teardown(import_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(import_all_or_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(import_inside_transaction, setup, teardown),
        cmocka_unit_test_setup_teardown(import_upsert_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(majority_with_ties, setup, teardown),
        cmocka_unit_test_setup_teardown(majority_none, setup, teardown),
        cmocka_unit_test_setup_teardown(report_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(report_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(report_splits, setup, teardown),
        cmocka_unit_test_setup_teardown(report_sets_and_names, setup, teardown),
        cmocka_unit_test_setup_teardown(import_fastchat_human, setup, teardown),
        cmocka_unit_test_setup_teardown(import_fastchat_human_refusals, setup, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
