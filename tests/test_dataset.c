/*
** test_dataset.c -- items and answers from JSONL (dataset.c): fields, lookups, and the exact
** "file:line: ..." message of every kind of bad input, with the dataset left untouched.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "arbiter.h"
#include "internal.h"

static arb_status add_items(arb_dataset *ds, const char *text)
{
    return arb_dataset_add_items_jsonl(ds, "items.jsonl", text, strlen(text));
}

static arb_status add_answers(arb_dataset *ds, const char *text)
{
    return arb_dataset_add_answers_jsonl(ds, "answers.jsonl", text, strlen(text));
}

/* Asserts that adding the items fails with ARB_PARSE and exactly the message. */
static void expect_items_error(const char *text, const char *message)
{
    arb_dataset *ds = arb_dataset_create();
    assert_non_null(ds);
    assert_int_equal(add_items(ds, text), ARB_PARSE);
    assert_string_equal(arb_dataset_errmsg(ds), message);
    assert_int_equal(arb_dataset_item_count(ds), 0);
    arb_dataset_destroy(ds);
}

/* A dataset holding items q1 and 7, for answer tests. */
static arb_dataset *two_items(void)
{
    arb_dataset *ds = arb_dataset_create();
    assert_non_null(ds);
    assert_int_equal(add_items(ds, "{\"id\":\"q1\",\"question\":\"Q1?\"}\n"
                                   "{\"id\":7,\"question\":\"Q7?\"}\n"),
                     ARB_OK);
    return ds;
}

static void expect_answers_error(const char *text, const char *message)
{
    arb_dataset *ds = two_items();
    assert_int_equal(add_answers(ds, text), ARB_PARSE);
    assert_string_equal(arb_dataset_errmsg(ds), message);
    assert_int_equal(arb_dataset_answer_count(ds), 0);
    arb_dataset_destroy(ds);
}

static void empty_input(void **state)
{
    (void)state;
    arb_dataset *ds = arb_dataset_create();
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "items.jsonl", "", 0), ARB_OK);
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "items.jsonl", NULL, 0), ARB_OK);
    assert_int_equal(add_items(ds, "\n\n  \r\n\t\n"), ARB_OK);
    assert_int_equal(arb_dataset_item_count(ds), 0);
    assert_null(arb_dataset_item(ds, 0));
    assert_null(arb_dataset_find_item(ds, "x"));
    assert_null(arb_dataset_find_answer(ds, "x", "m"));
    assert_string_equal(arb_dataset_errmsg(ds), "");
    assert_string_equal(arb_dataset_errmsg(NULL), "no dataset");
    assert_int_equal(arb_dataset_item_count(NULL), 0);
    arb_dataset_destroy(ds);
    arb_dataset_destroy(NULL);
}

static void items_all_fields(void **state)
{
    (void)state;
    arb_dataset *ds = arb_dataset_create();
    const char *text =
        "{\"id\":\"q1\",\"question\":\"What?\",\"reference\":\"R\",\"category\":\"math\","
        "\"language\":\"de\",\"group\":\"g1\"}\r\n"
        "\r\n"
        "{\"question\":\"Second\",\"id\":\"q2\",\"reference\":null,\"turns\":2,"
        "\"tags\":[\"a\",\"b\"],\"meta\":{\"x\":\"\xc3\xa9\"}}";
    assert_int_equal(add_items(ds, text), ARB_OK);
    assert_int_equal(arb_dataset_item_count(ds), 2);
    const arb_item *a = arb_dataset_item(ds, 0);
    assert_string_equal(a->id, "q1");
    assert_string_equal(a->question, "What?");
    assert_string_equal(a->reference, "R");
    assert_string_equal(a->category, "math");
    assert_string_equal(a->language, "de");
    assert_string_equal(a->group, "g1");
    assert_string_equal(a->extra_json, "{}");
    assert_string_equal(a->source, "items.jsonl:1");
    const arb_item *b = arb_dataset_item(ds, 1);
    assert_string_equal(b->id, "q2");
    assert_null(b->reference);
    assert_null(b->category);
    assert_null(b->language);
    assert_null(b->group);
    /* Unknown fields are kept in their order, compact, UTF-8 unescaped. */
    assert_string_equal(b->extra_json,
                        "{\"turns\":2,\"tags\":[\"a\",\"b\"],\"meta\":{\"x\":\"\xc3\xa9\"}}");
    assert_string_equal(b->source, "items.jsonl:3"); /* blank CRLF line 2 is counted */
    assert_ptr_equal(arb_dataset_find_item(ds, "q2"), b);
    assert_null(arb_dataset_find_item(ds, "q3"));
    arb_dataset_destroy(ds);
}

static void integer_ids(void **state)
{
    (void)state;
    arb_dataset *ds = two_items();
    assert_int_equal(add_items(ds, "{\"id\":-12,\"question\":\"neg\"}"), ARB_OK);
    assert_non_null(arb_dataset_find_item(ds, "7"));
    assert_non_null(arb_dataset_find_item(ds, "-12"));
    /* 7 and "7" name the same item. */
    assert_int_equal(add_items(ds, "{\"id\":\"7\",\"question\":\"again\"}"), ARB_PARSE);
    assert_string_equal(arb_dataset_errmsg(ds),
                        "items.jsonl:1: duplicate item id \"7\" (first at items.jsonl:2)");
    assert_int_equal(add_answers(ds, "{\"item\":7,\"model\":\"m\",\"answer\":\"x\"}\n"
                                     "{\"item\":\"7\",\"model\":\"n\",\"answer\":\"y\"}\n"),
                     ARB_OK);
    assert_string_equal(arb_dataset_find_answer(ds, "7", "m")->answer, "x");
    assert_string_equal(arb_dataset_find_answer(ds, "7", "n")->answer, "y");
    arb_dataset_destroy(ds);
}

static void bom_and_no_trailing_newline(void **state)
{
    (void)state;
    arb_dataset *ds = arb_dataset_create();
    assert_int_equal(add_items(ds, "\xEF\xBB\xBF{\"id\":\"a\",\"question\":\"q\"}"), ARB_OK);
    assert_int_equal(arb_dataset_item_count(ds), 1);
    arb_dataset_destroy(ds);
}

/* The task inputs of pointwise judging (METHODS §8) are known fields; question is optional
** (null is absent), and the JSON field "source" does not touch the item's file:line. */
static void task_input_fields(void **state)
{
    (void)state;
    arb_dataset *ds = arb_dataset_create();
    const char *text =
        "{\"id\":\"t1\",\"source\":\"Guten Tag\",\"language\":\"de\",\"quality\":0.5}\n"
        "{\"id\":\"t2\",\"question\":null,\"context\":\"C\",\"document\":\"D\","
        "\"dialog\":\"U: hi\"}\n";
    assert_int_equal(add_items(ds, text), ARB_OK);
    const arb_item *a = arb_dataset_item(ds, 0);
    assert_null(a->question);
    assert_string_equal(a->source_text, "Guten Tag");
    assert_string_equal(a->source, "items.jsonl:1");
    assert_null(a->context);
    assert_null(a->document);
    assert_null(a->dialog);
    assert_string_equal(a->extra_json, "{\"quality\":0.5}"); /* known fields stay out */
    const arb_item *b = arb_dataset_item(ds, 1);
    assert_null(b->question);
    assert_null(b->source_text);
    assert_string_equal(b->context, "C");
    assert_string_equal(b->document, "D");
    assert_string_equal(b->dialog, "U: hi");
    assert_string_equal(b->extra_json, "{}");
    arb_dataset_destroy(ds);
}

/* jansson's column is that of the last character of the token where parsing stopped. */
static void item_errors(void **state)
{
    (void)state;
    expect_items_error("{\"id\":\"q1\",\"question\":\"x\"}\n\n{\"id\":\"q2\", \"question\" \"x\"}",
                       "items.jsonl:3: invalid JSON at column 26: ':' expected near '\"x\"'");
    expect_items_error("{\"question\":\"x\"}", "items.jsonl:1: missing field \"id\"");
    expect_items_error("[1,2]", "items.jsonl:1: expected a JSON object, got array");
    expect_items_error("\"text\"", "items.jsonl:1: expected a JSON object, got string");
    expect_items_error("  null ", "items.jsonl:1: expected a JSON object, got null");
    expect_items_error("{} {}", "items.jsonl:1: invalid JSON at column 4: end of file expected "
                                "near '{'");
    expect_items_error("{\"id\":1.5,\"question\":\"x\"}",
                       "items.jsonl:1: field \"id\" must be a string or an integer, got number");
    expect_items_error("{\"id\":true,\"question\":\"x\"}",
                       "items.jsonl:1: field \"id\" must be a string or an integer, got boolean");
    expect_items_error("{\"id\":\"\",\"question\":\"x\"}", "items.jsonl:1: field \"id\" is empty");
    expect_items_error("{\"id\":\"a\",\"question\":7}",
                       "items.jsonl:1: field \"question\" must be a string, got number");
    expect_items_error("{\"id\":\"a\",\"context\":[\"x\"]}",
                       "items.jsonl:1: field \"context\" must be a string, got array");
    expect_items_error("{\"id\":\"a\",\"source\":1}",
                       "items.jsonl:1: field \"source\" must be a string, got number");
    expect_items_error("{\"id\":\"a\",\"question\":\"x\",\"category\":3}",
                       "items.jsonl:1: field \"category\" must be a string, got number");
    expect_items_error("{\"id\":\"a\",\"question\":\"x\",\"group\":{}}",
                       "items.jsonl:1: field \"group\" must be a string, got object");
    expect_items_error("{\"id\":\"q1\",\"question\":\"x\"}\n{\"id\":\"q1\",\"question\":\"y\"}",
                       "items.jsonl:2: duplicate item id \"q1\" (first at items.jsonl:1)");
    expect_items_error("{\"id\":\"a\",\"question\":\"x\",\"id\":\"b\"}",
                       "items.jsonl:1: invalid JSON at column 29: duplicate object key near "
                       "'\"id\"'");
}

static void invalid_utf8(void **state)
{
    (void)state;
    /* Byte 17 (counting from 1) is a lone continuation byte. */
    expect_items_error("{\"id\":\"a\",\"q\":\"x\x80\"}",
                       "items.jsonl:1: invalid UTF-8 at byte 17 of the line");
    /* An overlong encoding of '/' and a UTF-16 surrogate are rejected too. */
    expect_items_error("\n{\"id\":\"\xC0\xAF\"}",
                       "items.jsonl:2: invalid UTF-8 at byte 8 of the line");
    expect_items_error("{\"id\":\"\xED\xA0\x80\"}",
                       "items.jsonl:1: invalid UTF-8 at byte 8 of the line");
}

static void answers_ok(void **state)
{
    (void)state;
    arb_dataset *ds = two_items();
    assert_int_equal(add_answers(ds, "{\"item\":\"q1\",\"model\":\"m1\",\"answer\":\"A1\","
                                     "\"quality\":0.75}\n"
                                     "{\"item\":\"q1\",\"model\":\"m2\",\"answer\":\"\"}\n"),
                     ARB_OK);
    assert_int_equal(arb_dataset_answer_count(ds), 2);
    const arb_answer *a = arb_dataset_answer(ds, 0);
    assert_string_equal(a->item_id, "q1");
    assert_string_equal(a->model, "m1");
    assert_string_equal(a->answer, "A1");
    assert_string_equal(a->extra_json, "{\"quality\":0.75}");
    assert_string_equal(a->source, "answers.jsonl:1");
    const arb_answer *b = arb_dataset_find_answer(ds, "q1", "m2");
    assert_ptr_equal(b, arb_dataset_answer(ds, 1));
    assert_string_equal(b->answer, ""); /* an empty answer is data */
    assert_string_equal(b->extra_json, "{}");
    assert_null(arb_dataset_find_answer(ds, "q1", "m3"));
    assert_null(arb_dataset_find_answer(ds, "7", "m1"));
    assert_null(arb_dataset_answer(ds, 2));
    arb_dataset_destroy(ds);
}

static void answer_errors(void **state)
{
    (void)state;
    expect_answers_error("{\"item\":\"q1\",\"model\":\"m1\",\"answer\":42}",
                         "answers.jsonl:1: field \"answer\" must be a string, got number");
    expect_answers_error("\n\n\n{\"item\":\"q99\",\"model\":\"m1\",\"answer\":\"x\"}",
                         "answers.jsonl:4: answer for unknown item \"q99\"");
    expect_answers_error("{\"item\":\"q1\",\"answer\":\"x\"}",
                         "answers.jsonl:1: missing field \"model\"");
    expect_answers_error("{\"item\":\"q1\",\"model\":\"m\"}",
                         "answers.jsonl:1: missing field \"answer\"");
    expect_answers_error("{\"model\":\"m\",\"answer\":\"x\"}",
                         "answers.jsonl:1: missing field \"item\"");
    expect_answers_error("{\"item\":\"q1\",\"model\":\"\",\"answer\":\"x\"}",
                         "answers.jsonl:1: field \"model\" is empty");
    expect_answers_error("{\"item\":[1],\"model\":\"m\",\"answer\":\"x\"}",
                         "answers.jsonl:1: field \"item\" must be a string or an integer, got "
                         "array");
    expect_answers_error("{\"item\":\"q1\",\"model\":\"m1\",\"answer\":\"x\"}\n"
                         "{\"item\":\"7\",\"model\":\"m1\",\"answer\":\"x\"}\n"
                         "\n"
                         "\n"
                         "{\"item\":\"q1\",\"model\":\"m1\",\"answer\":\"y\"}\n",
                         "answers.jsonl:5: duplicate answer of model \"m1\" to item \"q1\" "
                         "(first at answers.jsonl:1)");
    expect_answers_error("{\"item\":\"q1\",\"model\":\"m1\",\"answer\":\"x\"}\n"
                         "{\"item\":\"q1\",\"model\":\"m1\",\"answer\":\"x\"", /* cut off */
                         "answers.jsonl:2: invalid JSON at column 38: '}' expected near end of "
                         "file");
}

/* A failing buffer leaves the dataset exactly as it was, and later adds still work. */
static void failure_keeps_nothing(void **state)
{
    (void)state;
    arb_dataset *ds = two_items();
    assert_int_equal(add_answers(ds, "{\"item\":\"q1\",\"model\":\"m1\",\"answer\":\"x\"}"),
                     ARB_OK);
    assert_int_equal(add_items(ds, "{\"id\":\"n1\",\"question\":\"x\"}\n"
                                   "{\"id\":\"n2\",\"question\":\"x\"}\n"
                                   "{\"id\":\"n3\",\"question\":false}\n"),
                     ARB_PARSE);
    assert_string_equal(arb_dataset_errmsg(ds),
                        "items.jsonl:3: field \"question\" must be a string, got boolean");
    assert_int_equal(arb_dataset_item_count(ds), 2);
    assert_null(arb_dataset_find_item(ds, "n1"));
    assert_non_null(arb_dataset_find_item(ds, "q1"));
    assert_int_equal(add_answers(ds, "{\"item\":\"7\",\"model\":\"m1\",\"answer\":\"x\"}\n"
                                     "{\"item\":\"q1\",\"model\":\"m1\",\"answer\":\"x\"}\n"),
                     ARB_PARSE);
    assert_int_equal(arb_dataset_answer_count(ds), 1);
    assert_null(arb_dataset_find_answer(ds, "7", "m1"));
    assert_non_null(arb_dataset_find_answer(ds, "q1", "m1"));
    /* The rolled-back ids are free again. */
    assert_int_equal(add_items(ds, "{\"id\":\"n1\",\"question\":\"x\"}"), ARB_OK);
    assert_int_equal(add_answers(ds, "{\"item\":\"7\",\"model\":\"m1\",\"answer\":\"x\"}"), ARB_OK);
    assert_int_equal(arb_dataset_item_count(ds), 3);
    assert_int_equal(arb_dataset_answer_count(ds), 2);
    arb_dataset_destroy(ds);
}

/* Many records: the tables grow, order is kept and every lookup finds its record. */
static void many_records(void **state)
{
    (void)state;
    enum { N_ITEMS = 5000, N_MODELS = 4 };
    size_t cap = (size_t)N_ITEMS * 64;
    char *items = malloc(cap), *answers = malloc(cap * N_MODELS);
    assert_non_null(items);
    assert_non_null(answers);
    size_t n = 0, m = 0;
    for (int i = 0; i < N_ITEMS; i++) {
        n += (size_t)sprintf(items + n, "{\"id\":%d,\"question\":\"q%d\"}\n", i, i);
        for (int k = 0; k < N_MODELS; k++)
            m += (size_t)sprintf(answers + m,
                                 "{\"item\":%d,\"model\":\"m%d\",\"answer\":\"a%d-%d\"}\n", i,
                                 k, i, k);
    }
    arb_dataset *ds = arb_dataset_create();
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "items.jsonl", items, n), ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "answers.jsonl", answers, m), ARB_OK);
    assert_int_equal(arb_dataset_item_count(ds), N_ITEMS);
    assert_int_equal(arb_dataset_answer_count(ds), N_ITEMS * N_MODELS);
    char id[32], model[32], expect[32];
    for (int i = 0; i < N_ITEMS; i++) {
        snprintf(id, sizeof id, "%d", i);
        assert_string_equal(arb_dataset_item(ds, (size_t)i)->id, id);
        assert_ptr_equal(arb_dataset_find_item(ds, id), arb_dataset_item(ds, (size_t)i));
        for (int k = 0; k < N_MODELS; k++) {
            snprintf(model, sizeof model, "m%d", k);
            snprintf(expect, sizeof expect, "a%d-%d", i, k);
            const arb_answer *a = arb_dataset_find_answer(ds, id, model);
            assert_non_null(a);
            assert_string_equal(a->answer, expect);
        }
    }
    assert_null(arb_dataset_find_answer(ds, "0", "m9"));
    arb_dataset_destroy(ds);
    free(items);
    free(answers);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void load_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/arb_test_dataset_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char items[128], answers[128], missing[128], bad[128];
    snprintf(items, sizeof items, "%s/items.jsonl", dir);
    snprintf(answers, sizeof answers, "%s/answers.jsonl", dir);
    snprintf(missing, sizeof missing, "%s/none.jsonl", dir);
    snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
    write_file(items, "{\"id\":\"q1\",\"question\":\"x\"}\n");
    write_file(answers, "{\"item\":\"q1\",\"model\":\"m\",\"answer\":\"y\"}\n");
    write_file(bad, "{\"item\":\"q2\",\"model\":\"m\",\"answer\":\"y\"}\n");

    arb_dataset *ds = arb_dataset_create();
    char expect[256];
    assert_int_equal(arb_dataset_load(ds, missing, answers), ARB_IO);
    snprintf(expect, sizeof expect, "%s: cannot open: No such file or directory", missing);
    assert_string_equal(arb_dataset_errmsg(ds), expect);

    /* Answers fail: the items of the same call are dropped too. */
    assert_int_equal(arb_dataset_load(ds, items, bad), ARB_PARSE);
    snprintf(expect, sizeof expect, "%s:1: answer for unknown item \"q2\"", bad);
    assert_string_equal(arb_dataset_errmsg(ds), expect);
    assert_int_equal(arb_dataset_item_count(ds), 0);
    assert_int_equal(arb_dataset_load(ds, items, missing), ARB_IO);
    assert_int_equal(arb_dataset_item_count(ds), 0);

    assert_int_equal(arb_dataset_load(ds, items, answers), ARB_OK);
    assert_int_equal(arb_dataset_item_count(ds), 1);
    assert_int_equal(arb_dataset_answer_count(ds), 1);
    snprintf(expect, sizeof expect, "%s:1", answers);
    assert_string_equal(arb_dataset_answer(ds, 0)->source, expect);
    arb_dataset_destroy(ds);

    unlink(items);
    unlink(answers);
    unlink(bad);
    rmdir(dir);
}

/* A record's source is "NAME:LINE" as snprintf writes it: multi-digit line numbers in order,
** and a name too long for the 512 bytes a source may take is cut where snprintf cuts it. */
static void source_names_and_long_names(void **state)
{
    (void)state;
    char text[4096];
    memset(text, '\n', 1233); /* blank lines count */
    strcpy(text + 1233, "{\"id\":\"q\"}\n");
    arb_dataset *ds = arb_dataset_create();
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "dir/items.jsonl", text, strlen(text)), ARB_OK);
    assert_string_equal(arb_dataset_item(ds, 0)->source, "dir/items.jsonl:1234");
    arb_dataset_destroy(ds);
    char name[600], expect[700];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    for (size_t cut = 480; cut < 520; cut += 3) { /* names around where the line number is cut */
        name[cut] = '\0';
        memcpy(expect, name, cut);
        memcpy(expect + cut, ":1234", 6);
        expect[511] = '\0'; /* a source takes 512 bytes at most */
        ds = arb_dataset_create();
        assert_int_equal(arb_dataset_add_items_jsonl(ds, name, text, strlen(text)), ARB_OK);
        assert_string_equal(arb_dataset_item(ds, 0)->source, expect);
        arb_dataset_destroy(ds);
        name[cut] = 'n';
    }
}

/* A file is read a block of lines at a time: lines across block boundaries, a line longer than
** a block (2 MiB), CRLF ends, a byte order mark only at the start, no final newline, and the
** line numbers of records and of an error in a later block are as for a file read whole. */
static void load_large_file_in_blocks(void **state)
{
    (void)state;
    char dir[] = "/tmp/arb_test_dataset_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char items[128];
    snprintf(items, sizeof items, "%s/items.jsonl", dir);
    const size_t n = 30000, long_at = 20000, long_len = (size_t)2 << 20;
    FILE *f = fopen(items, "wb");
    assert_non_null(f);
    fputs("\xEF\xBB\xBF", f);
    for (size_t i = 1; i <= n; i++) {
        if (i == long_at) {
            fprintf(f, "{\"id\":\"q%zu\",\"question\":\"", i);
            for (size_t k = 0; k < long_len; k++) fputc('a' + (int)(k % 26), f);
            fputs("\"}\r\n", f);
        } else if (i % 1000 == 0 && i != n) {
            fputs("\n", f); /* blank lines count as lines */
        } else {
            fprintf(f, "{\"id\":\"q%zu\",\"question\":\"question number %zu, padded to be longer "
                       "than a few words\"}%s", i, i, i == n ? "" : "\r\n");
        }
    }
    fclose(f);
    arb_dataset *ds = arb_dataset_create();
    assert_int_equal(arb_dataset_load(ds, items, NULL), ARB_OK);
    assert_int_equal(arb_dataset_item_count(ds), n - 28); /* blank: 1000..29000 but 20000 */
    const arb_item *it = arb_dataset_find_item(ds, "q29999");
    assert_non_null(it);
    char expect[512];
    snprintf(expect, sizeof expect, "%s:29999", items);
    assert_string_equal(it->source, expect);
    assert_string_equal(it->question, "question number 29999, padded to be longer than a few words");
    it = arb_dataset_find_item(ds, "q20000");
    assert_non_null(it);
    assert_int_equal(strlen(it->question), long_len);
    assert_non_null(arb_dataset_find_item(ds, "q1"));
    assert_non_null(arb_dataset_find_item(ds, "q30000")); /* the last line, no newline */
    assert_non_null(arb_dataset_find_item(ds, "q29001"));
    arb_dataset_destroy(ds);

    /* an error far into the file names its line; nothing of the file is kept */
    f = fopen(items, "ab");
    assert_non_null(f);
    fputs("\n{\"id\":\"q1\",\"question\":\"again\"}\n", f);
    fclose(f);
    ds = arb_dataset_create();
    assert_int_equal(arb_dataset_load(ds, items, NULL), ARB_PARSE);
    snprintf(expect, sizeof expect, "%s:30001: duplicate item id \"q1\" (first at %s:1)", items,
             items);
    assert_string_equal(arb_dataset_errmsg(ds), expect);
    assert_int_equal(arb_dataset_item_count(ds), 0);
    arb_dataset_destroy(ds);
    unlink(items);
    rmdir(dir);
}

/* ---- lines read without jansson agree with jansson ------------------------------------------ */

/* What parse_line makes of one items line, computed here with jansson itself (the reference):
** 1 with the fields when the line is a valid item, 0 when it must be refused. */
static int reference_item(const char *line, char **id, char **question, char **extra)
{
    *id = *question = *extra = NULL;
    size_t n = strlen(line);
    for (size_t i = 0; i < n; i++) /* parse_line checks UTF-8 first; jansson would too */
        if ((unsigned char)line[i] >= 0x80) {
            json_t *probe = json_stringn(line + i, n - i);
            if (!probe) return 0;
            json_decref(probe);
            break;
        }
    json_t *o = json_loadb(line, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
    int ok = 0;
    if (!json_is_object(o)) goto done;
    json_t *v = json_object_get(o, "id");
    char text[32];
    if (json_is_integer(v)) {
        snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        *id = strdup(text);
    } else if (json_is_string(v) && json_string_length(v)) {
        *id = strdup(json_string_value(v));
    } else {
        goto done;
    }
    static const char *const known[] = {"question", "reference", "category", "language", "group",
                                        "context", "source", "document", "dialog"};
    json_t *rest = json_object();
    const char *key;
    json_t *value;
    json_object_foreach(o, key, value) {
        int is_known = !strcmp(key, "id");
        for (size_t k = 0; k < sizeof known / sizeof *known; k++) {
            if (strcmp(key, known[k])) continue;
            is_known = 1;
            if (!json_is_string(value) && !json_is_null(value)) {
                json_decref(rest);
                goto done;
            }
        }
        if (!is_known) json_object_set(rest, key, value);
    }
    v = json_object_get(o, "question");
    if (json_is_string(v)) *question = strdup(json_string_value(v));
    *extra = json_dumps(rest, JSON_COMPACT);
    json_decref(rest);
    ok = 1;
done:
    json_decref(o);
    return ok;
}

/* Items lines of the shape the loader reads without jansson, and near misses that it must leave
** to jansson (bad escapes that strtoul alone would take, lone surrogates, NUL, duplicates,
** control characters, bad UTF-8, trailing garbage, other value types): loaded from text and
** indexed from a file, each is accepted or refused exactly as jansson decides, with the same
** strings. */
static void plain_lines_agree_with_jansson(void **state)
{
    (void)state;
    uint64_t whole_limit = arb__dataset_whole_limit;
    arb__dataset_whole_limit = 0; /* the one-line files below are indexed, not loaded whole */
    static const char *const lines[] = {
        "{\"id\":\"a\",\"question\":\"q\"}",
        "{\"id\":\"a\",\"question\":\"q\\u0041\\u00e9\\u20AC\"}",
        "{\"id\":\"a\",\"question\":\"\\u+041\"}",
        "{\"id\":\"a\",\"question\":\"\\u 041\"}",
        "{\"id\":\"a\",\"question\":\"\\u0x41\"}",
        "{\"id\":\"a\",\"question\":\"\\u-041\"}",
        "{\"id\":\"a\",\"question\":\"\\u00g1\"}",
        "{\"id\":\"a\",\"question\":\"\\ud83d\\ude00\"}",
        "{\"id\":\"a\",\"question\":\"\\ud83d\\u+e00\"}",
        "{\"id\":\"a\",\"question\":\"\\ud83d\"}",
        "{\"id\":\"a\",\"question\":\"\\ude00\"}",
        "{\"id\":\"a\",\"question\":\"\\u0000\"}",
        "{\"id\":\"a\",\"question\":\"\\x41\"}",
        "{\"id\":\"a\",\"question\":\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"}",
        "{\"id\":\"a\",\"question\":\"tab\there\"}",
        "{\"id\":\"a\",\"id\":\"b\"}",
        "{\"id\":\"a\",\"question\":\"x\",\"question\":null}",
        "{\"id\":\"a\",\"question\":null,\"question\":\"x\"}",
        "{\"id\":\"a\",\"question\":null}",
        "{\"id\":\"\",\"question\":\"x\"}",
        "{\"id\":\"\\u0061\",\"qu\\u0065stion\":\"x\"}",
        "{\"id\":7,\"question\":\"x\"}",
        "{\"id\":null,\"question\":\"x\"}",
        "{\"id\":\"a\",\"question\":1}",
        "{\"id\":\"a\",\"question\":\"x\",}",
        "{\"id\":\"a\",\"question\":\"x\"} x",
        "{\"id\":\"a\",\"question\":\"x\"}   \r",
        " {\"id\" : \"a\" ,\t\"question\" : \"x\" } ",
        "{\"id\":\"a\",\"question\":\"caf\xC3\xA9\"}",
        "{\"id\":\"a\",\"question\":\"\xED\xA0\x80\"}",
        "{\"id\":\"a\",\"question\":\"\xC3\"}",
        "{\"id\":\"a\",\"extra\":1,\"question\":\"x\"}",
        "{\"id\":\"a\",\"question\":\"x\"",
        "{\"id\":\"a\" \"question\":\"x\"}",
        "{\"id\":\"a\",\"question\":\"x}",
        "{\"id\":\"a\",\"question\":\"\\uD83D\\uDE00\\uDBFF\\uDFFF\\u2028\\u007f\\u0001\"}",
        "{\"id\":\"a\",\"question\":\"\\ud800\\ud800\"}",
        "{\"id\":\"a\",\"question\":\"\\ud800\\u0041\"}",
        "{\"id\":\"a\",\"question\":\"\\ud83d\\\"}",
        "{\"id\":\"a\",\"question\":\"\\u00\"}",
        "{\"id\":\"a\",\"question\":\"\\\"}",
        "{\"id\":\"a\",\"question\":\"\\U0041\"}",
        "{\"id\":\"a\",\"question\":\"x\x7f\xF0\x9F\x98\x80\"}",
        "{\"id\":\"a\",\"question\":\"\xC0\xAF\"}",
        "{\"id\":\"a\",\"question\":\"\xF4\x90\x80\x80\"}",
        "{\"id\":\"a\",\"question\":\"\x80\"}",
        "{\"i\\u0064\":\"a\",\"id\":\"b\"}",
        "{\"\\u0069\\u0064\":\"a\\/b\"}",
        "{\"id\":\"a\",\"question\\u0000\":\"x\"}",
        "{\"id\":\"a\",\"question\":nul}",
        "{\"id\":\"a\",\"question\":nullx}",
        "{\"id\":\"a\",\"question\":null }",
        "{\"id\":\"a\",\"question\":Null}",
        "{\"id\":\"a\",\"question\":\"x\"}}",
        "{\"id\":\"a\",\"question\":\"x\"}{}",
        "{\"id\":\"a\",\"question\":\"x\"}\f",
        "{\"id\":\"a\",\"question\":\"x\"}\v",
        "{\"id\":\"a\",,\"question\":\"x\"}",
        "{,\"id\":\"a\"}",
        "{\"id\":\"a\"",
        "{\"id\":\"a",
        "{\"id\":\"a\\",
        "{\"id\":\"a\\u00",
        "{\"id\":-0}",
        "{\"id\":1e3}",
        "{\"id\":1.0}",
        "{\"id\":9223372036854775808}",
        "{\"id\":true}",
        "{\"id\":\"a\",\"question\":{\"x\":1}}",
        "{\"id\":\"a\",\"question\":[\"x\"]}",
        "{\"id\":\"a\",\"category\":\"c\",\"language\":\"l\",\"group\":\"g\",\"context\":\"x\",\"source\":\"s\",\"document\":\"d\",\"dialog\":\"[]\",\"reference\":\"r\",\"question\":\"q\"}",
        "{\"question\":\"q\",\"id\":\"a\"}",
        "{\"\\u0069d\":\"a\",\"question\":\"x\"}",
        "{\"id\":\"a\",\"questio\\u006e\":\"x\"}",
        "{\"id\":\"a\",\"\":\"x\"}",
        "{\"id\":\"a\",\"ques\ttion\":\"x\"}",
        "{\"id\":\"a\",\"questions\":\"x\"}",
        "{\"id\":\"a\",\"questio\":\"x\"}",
        "{\"question\":\"q\"}",
        "{'id':'a'}",
        "{id:\"a\"}",
        "{}",
        "[]",
        "\"a\"",
    };
    char dir[] = "/tmp/arb_test_dataset_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char items[128], answers[128];
    snprintf(items, sizeof items, "%s/items.jsonl", dir);
    snprintf(answers, sizeof answers, "%s/answers.jsonl", dir);
    write_file(answers, "");
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        char *id, *question, *extra;
        int ok = reference_item(lines[i], &id, &question, &extra);
        arb_dataset *ds = arb_dataset_create();
        arb_status st = add_items(ds, lines[i]);
        if (st != (ok ? ARB_OK : ARB_PARSE)) fail_msg("line %zu: %s: status %d", i, lines[i], st);
        if (ok) {
            const arb_item *it = arb_dataset_item(ds, 0);
            assert_string_equal(it->id, id);
            if (question) assert_string_equal(it->question, question);
            else assert_null(it->question);
            assert_string_equal(it->extra_json, extra);
        }
        arb_dataset_destroy(ds);
        write_file(items, lines[i]);
        ds = arb_dataset_create();
        st = arb_dataset_load_indexed(ds, items, answers);
        if (st != (ok ? ARB_OK : ARB_PARSE))
            fail_msg("line %zu indexed: %s: status %d", i, lines[i], st);
        arb_dataset_destroy(ds);
        free(id);
        free(question);
        free(extra);
    }
    unlink(items);
    unlink(answers);
    rmdir(dir);
    arb__dataset_whole_limit = whole_limit;
}

/* Small files given to arb_dataset_load_indexed are read once, whole: the records are there
** (the same as arb_dataset_load's), nothing is indexed, and a bad line is refused with the
** same "file:line" message, leaving the dataset empty. Over the limit they are indexed. */
static void indexed_load_of_small_files_is_whole(void **state)
{
    (void)state;
    char dir[] = "/tmp/arb_test_dataset_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char items[128], answers[128], bad[128];
    snprintf(items, sizeof items, "%s/items.jsonl", dir);
    snprintf(answers, sizeof answers, "%s/answers.jsonl", dir);
    snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
    write_file(items, "{\"id\":\"q1\",\"question\":\"x \\u00e9\",\"k\":1}\n"
                      "{\"id\":2,\"question\":\"y\"}\n");
    write_file(answers, "{\"item\":\"2\",\"model\":\"m\",\"answer\":\"b\"}\n"
                        "{\"item\":\"q1\",\"model\":\"m\",\"answer\":\"a\"}\n");
    write_file(bad, "{\"item\":\"q1\",\"model\":\"m\",\"answer\":\"a\"}\n\n"
                    "{\"item\":\"q1\",\"model\":\"m\",\"answer\":7}\n");

    arb_dataset *ds = arb_dataset_create(), *whole = arb_dataset_create();
    assert_int_equal(arb_dataset_load_indexed(ds, items, answers), ARB_OK);
    assert_int_equal(arb_dataset_load(whole, items, answers), ARB_OK);
    assert_false(arb__dataset_is_indexed(ds));
    assert_int_equal(arb_dataset_item_count(ds), 2);
    assert_int_equal(arb_dataset_answer_count(ds), 2);
    for (size_t i = 0; i < 2; i++) {
        const arb_item *a = arb_dataset_item(ds, i), *b = arb_dataset_item(whole, i);
        assert_non_null(a);
        assert_string_equal(a->id, b->id);
        assert_string_equal(a->question, b->question);
        assert_string_equal(a->extra_json, b->extra_json);
        assert_string_equal(a->source, b->source);
        const arb_answer *x = arb_dataset_answer(ds, i), *y = arb_dataset_answer(whole, i);
        assert_string_equal(x->answer, y->answer);
        assert_string_equal(x->source, y->source);
    }
    assert_string_equal(arb_dataset_find_answer(ds, "q1", "m")->answer, "a");
    arb_dataset_destroy(ds);
    arb_dataset_destroy(whole);

    ds = arb_dataset_create();
    char expect[256];
    assert_int_equal(arb_dataset_load_indexed(ds, items, bad), ARB_PARSE);
    snprintf(expect, sizeof expect, "%s:3: field \"answer\" must be a string, got number", bad);
    assert_string_equal(arb_dataset_errmsg(ds), expect);
    assert_int_equal(arb_dataset_item_count(ds), 0);
    assert_int_equal(arb_dataset_answer_count(ds), 0);
    arb_dataset_destroy(ds);

    uint64_t whole_limit = arb__dataset_whole_limit;
    arb__dataset_whole_limit = 100; /* the two files hold 167 bytes */
    ds = arb_dataset_create();
    assert_int_equal(arb_dataset_load_indexed(ds, items, answers), ARB_OK);
    assert_true(arb__dataset_is_indexed(ds));
    assert_null(arb_dataset_item(ds, 0));
    assert_int_equal(arb_dataset_item_count(ds), 2);
    arb_dataset_destroy(ds);
    arb__dataset_whole_limit = whole_limit;

    unlink(items);
    unlink(answers);
    unlink(bad);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty_input),
        cmocka_unit_test(items_all_fields),
        cmocka_unit_test(source_names_and_long_names),
        cmocka_unit_test(integer_ids),
        cmocka_unit_test(bom_and_no_trailing_newline),
        cmocka_unit_test(load_large_file_in_blocks),
        cmocka_unit_test(task_input_fields),
        cmocka_unit_test(item_errors),
        cmocka_unit_test(invalid_utf8),
        cmocka_unit_test(answers_ok),
        cmocka_unit_test(answer_errors),
        cmocka_unit_test(failure_keeps_nothing),
        cmocka_unit_test(many_records),
        cmocka_unit_test(load_files),
        cmocka_unit_test(plain_lines_agree_with_jansson),
        cmocka_unit_test(indexed_load_of_small_files_is_whole),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
