/*
** test_import_judgments.c -- judgments made elsewhere (import_judgments.c, store_import.c):
** the generic file format (JSONL and CSV; every refusal with its file:line: field message;
** winner to position verdict through the order; what arbiter export writes), and storing an
** import (rows, model verdicts as sbs derives them, calls, items after the store's last,
** answers, families, battles with both_bad and strong, E left out), conflicts with another
** source and with arbiter's own judgments, re-import replacing a source, all or nothing.
**
** Each test gets a fresh store holding items q1..q4 (seq 0..3). Run one test alone with
** ARB_TEST=<name>.
*/
#include "test_sql.h"
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[128];
    char file[192];
    arb_store *store;
} fixture;

static const char items_jsonl[] = "{\"id\":\"q1\",\"question\":\"one?\"}\n"
                                  "{\"id\":\"q2\",\"question\":\"two?\"}\n"
                                  "{\"id\":\"q3\",\"question\":\"three?\"}\n"
                                  "{\"id\":\"q4\",\"question\":\"four?\"}\n";

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f;
    if (arb_test_store_with_items("test_import_judgments", items_jsonl, f->dir, sizeof f->dir,
                                  &f->store))
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

static long long q(fixture *f, const char *sql) { return arb_test_query_int(f->store, sql); }

/* Parses text as the generic format (CSV when csv) into a new set; *err gets the message. */
static arb_status parse(const char *name, const char *text, int csv, arb__import_set **set,
                        char **err)
{
    *set = arb__import_set_create();
    assert_non_null(*set);
    *err = NULL;
    return arb__import_generic_text(name, text, strlen(text), csv, *set, err);
}

/* Parses text expecting a refusal whose message is exactly want. */
static void refused(const char *name, const char *text, int csv, const char *want)
{
    arb__import_set *set;
    char *err;
    arb_status st = parse(name, text, csv, &set, &err);
    if (st != ARB_PARSE || !err || strcmp(err, want))
        fail_msg("%s: status %d, message\n  got:  %s\n  want: %s", name, (int)st,
                 err ? err : "(none)", want);
    free(err);
    arb__import_set_destroy(set);
}

/* Writes content to name in the fixture's directory and imports it as source. */
static arb_status import_file(fixture *f, const char *name, const char *content,
                              const char *source, arb_import_stats *stats)
{
    snprintf(f->file, sizeof f->file, "%s/%s", f->dir, name);
    assert_int_equal(arb_test_write_file(f->file, content, strlen(content)), 0);
    arb_import_params params = {.source = source};
    return arb_judgments_import(f->store, "judgments", f->file, &params, stats);
}

static void import_ok(fixture *f, const char *name, const char *content, const char *source,
                      arb_import_stats *stats)
{
    arb_status st = import_file(f, name, content, source, stats);
    if (st) fail_msg("import of %s: %s", name, arb_store_errmsg(f->store));
}

/* ---- the file format ------------------------------------------------------------------------ */

static void format_refusals(void **state)
{
    (void)state;
    const char *base = "\"judge\":\"j\",\"item\":\"q1\",\"candidate\":\"c\",\"baseline\":\"b\"";
    char text[512];
    snprintf(text, sizeof text, "{%s,\"order\":0,\"verdict\":\"A\"}\n{\"item\":\"q1\","
             "\"candidate\":\"c\",\"baseline\":\"b\",\"order\":0,\"verdict\":\"A\"}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:2: field \"judge\": expected a non-empty string, got "
            "nothing");
    snprintf(text, sizeof text, "{%s,\"order\":0,\"verdict\":\"A\",\"winner\":\"tie\"}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"winner\": expected exactly one of verdict "
            "(in positions) and winner (in models), got both");
    snprintf(text, sizeof text, "{%s,\"order\":0}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"verdict\": expected exactly one of verdict "
            "(A, B, C, D or E, in positions) and winner (candidate, baseline, tie, both_bad or "
            "invalid), got neither");
    snprintf(text, sizeof text, "{%s,\"order\":2,\"verdict\":\"A\"}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"order\": expected 0 (candidate shown first) "
            "or 1 (baseline shown first), got 2");
    snprintf(text, sizeof text, "{%s,\"verdict\":\"A\"}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"order\": expected 0 (candidate shown first) "
            "or 1 (baseline shown first), got nothing");
    snprintf(text, sizeof text, "{%s,\"order\":\"0\",\"verdict\":\"A\"}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"order\": expected 0 (candidate shown first) "
            "or 1 (baseline shown first), got \"0\"");
    snprintf(text, sizeof text, "{%s,\"order\":0,\"verdict\":\"A\",\"options\":5}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"options\": expected 2, 3 or 4 (METHODS "
            "2.1), got 5");
    snprintf(text, sizeof text, "{%s,\"order\":0,\"verdict\":\"D\",\"options\":3}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"verdict\": expected a verdict possible with "
            "options 3 (A, B, C or E), got \"D\"");
    snprintf(text, sizeof text, "{%s,\"order\":1,\"winner\":\"tie\",\"options\":2}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"winner\": expected a verdict possible with "
            "options 2 (A, B or E), got \"tie\"");
    snprintf(text, sizeof text, "{%s,\"order\":0,\"verdict\":\"a\"}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"verdict\": expected A (first shown better), "
            "B (second shown better), C (tie), D (both bad) or E (no valid verdict), got \"a\"");
    snprintf(text, sizeof text, "{%s,\"order\":0,\"winner\":\"model_a\"}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"winner\": expected candidate, baseline, "
            "tie, both_bad or invalid, got \"model_a\"");
    snprintf(text, sizeof text, "{%s,\"order\":0,\"verdict\":\"C\",\"strength\":\"strong\"}\n",
             base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"strength\": expected only with a win "
            "(verdict A or B), got it with verdict C");
    snprintf(text, sizeof text, "{%s,\"order\":0,\"verdict\":\"A\",\"rep\":-1}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"rep\": expected a whole number >= 0, got -1");
    refused("x.jsonl", "{\"judge\":\"j\",\"item\":1.5,\"candidate\":\"c\",\"baseline\":\"b\","
            "\"order\":0,\"verdict\":\"A\"}\n", 0, "x.jsonl:1: field \"item\": expected a string "
            "or an integer id, got 1.5");
    refused("x.jsonl", "{\"judge\":\"j\",\"item\":\"q\",\"candidate\":\"c\",\"baseline\":\"c\","
            "\"order\":0,\"verdict\":\"A\"}\n", 0, "x.jsonl:1: field \"baseline\": expected "
            "another model than the candidate, got \"c\" for both");
    snprintf(text, sizeof text, "{%s,\"order\":0,\"verdict\":\"A\",\"request\":\"[1]\"}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"request\": expected the text of a JSON "
            "object, got \"[1]\"");
    snprintf(text, sizeof text, "{%s,\"order\":0,\"verdict\":\"A\",\"protocol\":\"peer\"}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:1: field \"protocol\": expected sbs, soft, hard or "
            "tournament, got \"peer\"");
    refused("x.jsonl", "\n[1]\n", 0, "x.jsonl:2: expected a JSON object with judge, item, "
            "candidate, baseline, order and verdict or winner, got array");
    /* the same judgment twice: the same answers in the same places, written either way */
    snprintf(text, sizeof text, "{%s,\"order\":0,\"verdict\":\"A\"}\n\n{\"judge\":\"j\","
             "\"item\":\"q1\",\"candidate\":\"b\",\"baseline\":\"c\",\"order\":1,"
             "\"verdict\":\"B\"}\n", base);
    refused("x.jsonl", text, 0, "x.jsonl:3: judge \"j\" judged item \"q1\" (c shown first, b "
            "second, rep 0) already at x.jsonl:1");
}

static void format_csv_refusals(void **state)
{
    (void)state;
    refused("x.csv", "judge,item,candidate,baseline,verdict\nj,q1,c,b,A\n", 1,
            "x.csv:1: header: missing column \"order\" (the first row must name the columns: "
            "judge, item, candidate, baseline, order, and verdict or winner)");
    refused("x.csv", "judge,item,candidate,baseline,order\nj,q1,c,b,0\n", 1,
            "x.csv:1: header: missing column \"verdict\" or \"winner\"");
    refused("x.csv", "judge,item,candidate,baseline,order,verdict,judge\n", 1,
            "x.csv:1: header: column \"judge\" appears twice (columns 1 and 7)");
    refused("x.csv", "judge,item,candidate,baseline,order,verdict\nj,q1,c,b,0,A\nj,q2,c\n", 1,
            "x.csv:3: expected 6 fields as in the header, got 3");
    refused("x.csv", "judge,item,candidate,baseline,order,verdict\nj,q1,c,b,0,A\n"
            "j,\"q\n2\",c,b,x,A\n", 1,
            "x.csv:3: field \"order\": expected 0 (candidate shown first) or 1 (baseline shown "
            "first), got \"x\"");
    refused("x.csv", "judge,item,candidate,baseline,order,verdict\nj,q1,c,b,0,\"A\n", 1,
            "x.csv:2: malformed CSV: a quoted field that starts at or after this line is never "
            "closed");
    refused("x.csv", "", 1, "x.csv: empty: expected a header row naming the columns");
}

static void format_winner_and_fields(void **state)
{
    (void)state;
    arb__import_set *set;
    char *err;
    const char *text =
        "{\"judge\":\"j\",\"item\":7,\"candidate\":\"c\",\"baseline\":\"b\",\"order\":1,"
        "\"winner\":\"candidate\",\"strength\":\"strong\",\"mine\":[1,2]}\n"
        "{\"judge\":\"j\",\"item\":7,\"candidate\":\"c\",\"baseline\":\"b\",\"order\":0,"
        "\"winner\":\"baseline\",\"rep\":2,\"options\":3,\"template\":\"t1\"}\n"
        "{\"judge\":\"j\",\"item\":\"q\",\"candidate\":\"c\",\"baseline\":\"b\",\"order\":1,"
        "\"winner\":\"both_bad\"}\n"
        "{\"judge\":\"j\",\"item\":\"q\",\"candidate\":\"c\",\"baseline\":\"b\",\"order\":0,"
        "\"winner\":\"invalid\"}\n"
        /* what arbiter export writes */
        "{\"protocol\":\"sbs\",\"judge\":\"k\",\"item\":\"q\",\"candidate\":\"c\",\"baseline\":"
        "\"b\",\"template\":\"II\",\"options\":4,\"order\":1,\"rep\":0,\"position_verdict\":"
        "\"A\",\"model_verdict\":\"b\",\"model\":\"m\",\"content\":\"[[A]]\",\"error\":null,"
        "\"prompt_tokens\":12,\"request\":{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]},"
        "\"source\":null}\n";
    arb_status st = parse("e.jsonl", text, 0, &set, &err);
    if (st) fail_msg("%s", err);
    assert_int_equal(arb__import_set_count(set), 5);
    arb__import_judgment j = arb__import_set_at(set, 0);
    assert_string_equal(j.item, "7");
    assert_int_equal(j.position_verdict, 'B'); /* the candidate, shown second */
    assert_int_equal(j.strength, 2);
    assert_int_equal(j.options, 4);
    assert_string_equal(j.extra, "{\"mine\":[1,2]}");
    assert_string_equal(j.where, "e.jsonl:1");
    j = arb__import_set_at(set, 1);
    assert_int_equal(j.position_verdict, 'B'); /* the baseline, shown second */
    assert_int_equal(j.rep, 2);
    assert_int_equal(j.options, 3);
    assert_string_equal(j.template_name, "t1");
    assert_null(j.extra);
    assert_int_equal(arb__import_set_at(set, 2).position_verdict, 'D');
    assert_int_equal(arb__import_set_at(set, 3).position_verdict, 'E');
    j = arb__import_set_at(set, 4);
    assert_int_equal(j.position_verdict, 'A');
    assert_string_equal(j.raw, "[[A]]");
    assert_string_equal(j.template_name, "II");
    assert_string_equal(j.request, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    assert_string_equal(j.extra, "{\"model_verdict\":\"b\",\"model\":\"m\",\"prompt_tokens\":12}");
    free(err);
    arb__import_set_destroy(set);

    /* CSV: numbers as text, empty cells absent, a quoted cell over two lines */
    st = parse("e.csv", "\xEF\xBB\xBFjudge,item,candidate,baseline,order,winner,rep,category,"
               "note\r\nj,q1,c,b,1,baseline,3,,x\r\nj,q1,c,b,0,tie,,\"a\r\nb\",\r\n", 1, &set,
               &err);
    if (st) fail_msg("%s", err);
    assert_int_equal(arb__import_set_count(set), 2);
    j = arb__import_set_at(set, 0);
    assert_int_equal(j.position_verdict, 'A');
    assert_int_equal(j.rep, 3);
    assert_null(j.category);
    assert_string_equal(j.extra, "{\"note\":\"x\"}");
    assert_string_equal(j.where, "e.csv:2");
    j = arb__import_set_at(set, 1);
    assert_int_equal(j.position_verdict, 'C');
    assert_string_equal(j.category, "a\r\nb");
    assert_string_equal(j.where, "e.csv:3");
    free(err);
    arb__import_set_destroy(set);
}

/* ---- storing -------------------------------------------------------------------------------- */

static const char three[] =
    "{\"judge\":\"j1\",\"item\":\"n1\",\"candidate\":\"m1\",\"baseline\":\"m0\",\"order\":0,"
    "\"verdict\":\"A\",\"question\":\"new?\",\"category\":\"cat\",\"candidate_answer\":\"xyz\","
    "\"baseline_answer\":\"uv\",\"raw\":\"[[A]]\",\"judge_family\":\"fa\",\"candidate_family\":"
    "\"fm\",\"tag\":1}\n"
    "{\"judge\":\"j1\",\"item\":\"n1\",\"candidate\":\"m1\",\"baseline\":\"m0\",\"order\":1,"
    "\"verdict\":\"B\",\"strength\":\"strong\",\"request\":{\"messages\":[]},\"model\":\"gpt\","
    "\"prompt_tokens\":12,\"completion_tokens\":\"x\",\"latency_ms\":2.5,\"attempts\":3}\n"
    "{\"judge\":\"j1\",\"item\":\"q2\",\"candidate\":\"m1\",\"baseline\":\"m0\",\"order\":0,"
    "\"verdict\":\"D\"}\n"
    "{\"judge\":\"j1\",\"item\":\"n0\",\"candidate\":\"m1\",\"baseline\":\"m0\",\"order\":0,"
    "\"verdict\":\"E\"}\n"
    "{\"judge\":\"j1\",\"item\":\"n0\",\"candidate\":\"m1\",\"baseline\":\"m0\",\"order\":1,"
    "\"verdict\":\"C\"}\n";

static void store_rows(void **state)
{
    fixture *f = *state;
    arb_import_stats st;
    import_ok(f, "three.jsonl", three, "src1", &st);
    assert_int_equal(st.judgments, 5);
    assert_int_equal(st.scores, 0);
    assert_int_equal(st.battles, 4); /* E gives none */
    assert_int_equal(st.items_added, 2);
    assert_int_equal(st.skipped, 0);
    /* rows, model verdicts as sbs derives them (order 1: B -> a) */
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise WHERE source = 'src1' AND protocol ="
                          " 'sbs' AND template_name = 'imported' AND options = 4"), 5);
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise WHERE item_id = 'n1' AND ord = 1 AND"
                          " position_verdict = 'B' AND model_verdict = 'a' AND strength = 2"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise WHERE item_id = 'n1' AND ord = 0 AND"
                          " model_verdict = 'a' AND strength IS NULL AND extra = '{\"tag\":1}'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise WHERE item_id = 'q2' AND"
                          " model_verdict = 'd'"), 1);
    /* calls for the two lines with raw or request; no call for the others */
    assert_int_equal(q(f, "SELECT count(*) FROM calls"), 2);
    assert_int_equal(q(f, "SELECT count(*) FROM calls c JOIN pairwise p ON p.call_id = c.id"
                          " WHERE p.ord = 0 AND c.content = '[[A]]' AND c.request = '{}'"
                          " AND c.ok = 1 AND c.model = 'j1'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM calls c JOIN pairwise p ON p.call_id = c.id"
                          " WHERE p.ord = 1 AND c.content IS NULL"
                          " AND c.request = '{\"messages\":[]}' AND c.model = 'gpt'"
                          " AND c.prompt_tokens = 12 AND c.completion_tokens IS NULL"
                          " AND c.latency_ms = 2.5 AND c.attempts = 3"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM calls c JOIN pairwise p ON p.call_id = c.id"
                          " WHERE p.ord = 0 AND c.prompt_tokens IS NULL AND c.attempts = 0"
                          " AND c.latency_ms IS NULL"), 1);
    /* items after the store's last (q4 = seq 3), in order of first appearance */
    assert_int_equal(q(f, "SELECT seq FROM items WHERE id = 'n1'"), 4);
    assert_int_equal(q(f, "SELECT seq FROM items WHERE id = 'n0'"), 5);
    assert_int_equal(q(f, "SELECT count(*) FROM items WHERE id = 'n1' AND question = 'new?'"
                          " AND category = 'cat' AND source = 'src1'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM items WHERE id = 'n0' AND question = ''"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM items WHERE id = 'q2' AND question = 'two?'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM answers WHERE item_id = 'n1' AND"
                          " ((model = 'm1' AND answer = 'xyz') OR (model = 'm0' AND"
                          " answer = 'uv'))"), 2);
    assert_int_equal(q(f, "SELECT count(*) FROM families WHERE source = 'src1' AND"
                          " ((name = 'j1' AND role = 'judge' AND family = 'fa') OR"
                          " (name = 'm1' AND role = 'model' AND family = 'fm'))"), 2);
    /* battles: i shown first; A -1, B +1 strong, D 0 both bad, C 0; E left out */
    assert_int_equal(q(f, "SELECT count(*) FROM battles WHERE source = 'src1'"), 4);
    assert_int_equal(q(f, "SELECT count(*) FROM battles WHERE seq = 0 AND q = 'n1' AND"
                          " i = 'm1' AND j = 'm0' AND reviewer = 'j1' AND s = -1"
                          " AND extra = '{}'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM battles WHERE seq = 1 AND i = 'm0' AND"
                          " j = 'm1' AND s = 1 AND extra = '{\"strong\":true}'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM battles WHERE seq = 2 AND s = 0"
                          " AND extra = '{\"both_bad\":true}'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM battles WHERE seq = 3 AND q = 'n0' AND"
                          " i = 'm0' AND s = 0 AND extra = '{}'"), 1);
    assert_int_equal(q(f, "SELECT n FROM battles_left_out WHERE source = 'src1' AND"
                          " model_a = 'm0' AND model_b = 'm1' AND reviewer = 'j1'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM judgment_sources WHERE name = 'src1' AND"
                          " kind = 'judgments' AND n_judgments = 5 AND n_skipped = 0"), 1);
    /* export writes the source, the strength and the answers back */
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(arb_store_export(f->store, "jsonl", out), ARB_OK);
    fclose(out);
    assert_non_null(strstr(text, "\"order\":1,\"rep\":0,\"position_verdict\":\"B\","));
    assert_non_null(strstr(text, ",\"request\":\"{\\\"messages\\\":[]}\",\"question\":\"new?\","
                                 "\"candidate_answer\":\"xyz\",\"baseline_answer\":\"uv\","
                                 "\"category\":\"cat\",\"language\":null,\"source\":\"src1\","
                                 "\"strength\":\"strong\",\"cached_tokens\":null,\"reasoning_tokens\":null,"
                                 "\"cost_usd\":null,\"reasoning\":null,\"logprobs\":null}\n"));
    free(text);
    /* the battles read back with strong kept */
    arb_battles *b = arb_battles_create();
    assert_int_equal(arb_store_get_battles(f->store, "src1", b), ARB_OK);
    assert_int_equal(arb_battles_count(b), 4);
    assert_int_equal(arb_battles_at(b, 1).strong, 1);
    assert_int_equal(arb_battles_at(b, 0).strong, 0);
    assert_int_equal(arb_battles_at(b, 2).both_bad, 1);
    arb_battles_destroy(b);
}

static void store_reimport_replaces(void **state)
{
    fixture *f = *state;
    arb_import_stats st;
    import_ok(f, "three.jsonl", three, "src1", &st);
    /* a second source alongside, which the re-import must not touch */
    import_ok(f, "other.jsonl", "{\"judge\":\"j2\",\"item\":\"q1\",\"candidate\":\"m1\","
              "\"baseline\":\"m0\",\"order\":0,\"verdict\":\"B\",\"raw\":\"B\",\"judge_family\":"
              "\"fb\"}\n", "src2", &st);
    /* the first source again, with one line and its answer changed */
    import_ok(f, "one.jsonl", "{\"judge\":\"j1\",\"item\":\"n1\",\"candidate\":\"m1\","
              "\"baseline\":\"m0\",\"order\":1,\"verdict\":\"A\",\"candidate_answer\":\"new\"}\n",
              "src1", &st);
    assert_int_equal(st.judgments, 1);
    assert_int_equal(st.battles, 1);
    assert_int_equal(st.items_added, 0);
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise WHERE source = 'src1'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise WHERE source = 'src2'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM calls"), 1); /* src2's only */
    assert_int_equal(q(f, "SELECT count(*) FROM battles WHERE source = 'src1'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM battles_left_out"), 0);
    assert_int_equal(q(f, "SELECT count(*) FROM families"), 1); /* src2's j2 */
    assert_int_equal(q(f, "SELECT count(*) FROM answers WHERE item_id = 'n1' AND model = 'm1'"
                          " AND answer = 'new'"), 1);
    assert_int_equal(q(f, "SELECT n_judgments FROM judgment_sources WHERE name = 'src1'"), 1);
}

static void store_conflicts(void **state)
{
    fixture *f = *state;
    arb_import_stats st;
    /* arbiter's own judgment of j1 on q1, m1 vs m0, order 0 */
    arb__pairwise_row row = {.judge_name = "j1", .item_id = "q1", .candidate = "m1",
                             .baseline = "m0", .template_name = "imported", .options = 4,
                             .order = 0, .rep = 0, .position_verdict = 'A'};
    assert_int_equal(arb_test_put_sbs_judgment(f->store, &row, NULL), 0);
    /* the same judgment written the other way round: m1 still shown first */
    const char *mine = "{\"judge\":\"j1\",\"item\":\"q2\",\"candidate\":\"m1\",\"baseline\":"
                       "\"m0\",\"order\":0,\"verdict\":\"A\"}\n"
                       "{\"judge\":\"j1\",\"item\":\"q1\",\"candidate\":\"m0\",\"baseline\":"
                       "\"m1\",\"order\":1,\"verdict\":\"A\"}\n";
    assert_int_equal(import_file(f, "mine.jsonl", mine, "src1", &st), ARB_INVALID);
    char want[512];
    snprintf(want, sizeof want, "%s:2: judge \"j1\" on item \"q1\" (m1 shown first, m0 second, "
             "template imported, options 4, rep 0): already judged by arbiter", f->file);
    assert_string_equal(arb_store_errmsg(f->store), want);
    assert_int_equal(st.judgments, 0);
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM judgment_sources"), 0);
    /* another source holding it */
    import_ok(f, "a.jsonl", "{\"judge\":\"j2\",\"item\":\"q1\",\"candidate\":\"m1\",\"baseline\":"
              "\"m0\",\"order\":1,\"verdict\":\"A\",\"raw\":\"x\"}\n", "srcA", &st);
    assert_int_equal(import_file(f, "b.jsonl", "{\"judge\":\"j2\",\"item\":\"q1\",\"candidate\":"
                                 "\"m1\",\"baseline\":\"m0\",\"order\":1,\"winner\":\"tie\"}\n",
                                 "srcB", &st), ARB_INVALID);
    snprintf(want, sizeof want, "%s:1: judge \"j2\" on item \"q1\" (m0 shown first, m1 second, "
             "template imported, options 4, rep 0): already imported from source \"srcA\"",
             f->file);
    assert_string_equal(arb_store_errmsg(f->store), want);
    /* another template, rep or options is another judgment */
    import_ok(f, "c.jsonl", "{\"judge\":\"j2\",\"item\":\"q1\",\"candidate\":\"m1\",\"baseline\":"
              "\"m0\",\"order\":1,\"verdict\":\"A\",\"rep\":1}\n", "srcB", &st);
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise"), 3);
}

/* arbiter judging the same judgment after an import takes the row over: it is arbiter's own
** from then on, and a re-import of the source is refused instead of deleting it. */
static void store_arbiter_takes_over(void **state)
{
    fixture *f = *state;
    arb_import_stats st;
    const char *line = "{\"judge\":\"j1\",\"item\":\"q1\",\"candidate\":\"m1\",\"baseline\":"
                       "\"m0\",\"order\":0,\"verdict\":\"A\",\"strength\":\"weak\",\"x\":1}\n";
    import_ok(f, "one.jsonl", line, "src1", &st);
    arb__pairwise_row row = {.judge_name = "j1", .item_id = "q1", .candidate = "m1",
                             .baseline = "m0", .template_name = "imported", .options = 4,
                             .order = 0, .rep = 0, .position_verdict = 'B'};
    assert_int_equal(arb_test_put_sbs_judgment(f->store, &row, NULL), 0);
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise WHERE source IS NULL AND strength IS"
                          " NULL AND extra = '{}' AND position_verdict = 'B'"), 1);
    assert_int_equal(import_file(f, "one.jsonl", line, "src1", &st), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "already judged by arbiter"));
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise"), 1);
}

static void store_answers_and_families(void **state)
{
    fixture *f = *state;
    arb_import_stats st;
    assert_int_equal(arb_test_exec_sql(f->store, "INSERT INTO answers(item_id, model, answer,"
                                       " source) VALUES ('q1', 'm1', 'stored', 'answers.jsonl:3')"),
                     0);
#define LINE(answer)                                                                          \
    "{\"judge\":\"j\",\"item\":\"q1\",\"candidate\":\"m1\",\"baseline\":\"m0\",\"order\":0,"    \
    "\"verdict\":\"A\",\"candidate_answer\":\"" answer "\"}\n"
    import_ok(f, "same.jsonl", LINE("stored"), "s", &st); /* the same text: nothing to do */
    const char *text = LINE("other");
#undef LINE
    assert_int_equal(import_file(f, "diff.jsonl", text, "s", &st), ARB_INVALID);
    char want[512];
    snprintf(want, sizeof want, "%s:1: field \"candidate_answer\": the store already has a "
             "different answer of model \"m1\" to item \"q1\" (from answers.jsonl:3)", f->file);
    assert_string_equal(arb_store_errmsg(f->store), want);
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise"), 1); /* same.jsonl's, kept */
    /* two texts for one answer inside one file */
    assert_int_equal(import_file(f, "two.jsonl",
                                 "{\"judge\":\"j\",\"item\":\"q3\",\"candidate\":\"m1\","
                                 "\"baseline\":\"m0\",\"order\":0,\"verdict\":\"A\","
                                 "\"baseline_answer\":\"one\"}\n"
                                 "{\"judge\":\"j\",\"item\":\"q3\",\"candidate\":\"m1\","
                                 "\"baseline\":\"m0\",\"order\":1,\"verdict\":\"A\","
                                 "\"baseline_answer\":\"two\"}\n", "t", &st), ARB_INVALID);
    snprintf(want, sizeof want, "%s:2: field \"baseline_answer\": the answer of model \"m0\" to "
             "item \"q3\" differs from the one given at %s:1", f->file, f->file);
    assert_string_equal(arb_store_errmsg(f->store), want);
    /* one judge, two families */
    assert_int_equal(import_file(f, "fam.jsonl",
                                 "{\"judge\":\"j\",\"item\":\"q3\",\"candidate\":\"m1\","
                                 "\"baseline\":\"m0\",\"order\":0,\"verdict\":\"A\","
                                 "\"judge_family\":\"x\"}\n"
                                 "{\"judge\":\"j\",\"item\":\"q3\",\"candidate\":\"m1\","
                                 "\"baseline\":\"m0\",\"order\":1,\"verdict\":\"A\","
                                 "\"judge_family\":\"y\"}\n", "t", &st), ARB_INVALID);
    snprintf(want, sizeof want, "%s:2: the judge \"j\" is of family \"y\" here but of family "
             "\"x\" at %s:1", f->file, f->file);
    assert_string_equal(arb_store_errmsg(f->store), want);
    assert_int_equal(q(f, "SELECT count(*) FROM families"), 0);
    assert_int_equal(q(f, "SELECT count(*) FROM answers"), 1);
}

/* A caller's open transaction: a refused import rolls back to its savepoint only. */
static void store_inside_transaction(void **state)
{
    fixture *f = *state;
    arb__import_set *set;
    char *err;
    assert_int_equal(parse("x.jsonl", three, 0, &set, &err), ARB_OK);
    assert_int_equal(arb__store_begin(f->store), ARB_OK);
    assert_int_equal(arb_test_exec_sql(f->store, "INSERT INTO answers(item_id, model, answer)"
                                       " VALUES ('q4', 'm9', 'kept')"), 0);
    assert_int_equal(arb__store_put_import(f->store, "", "judgments", "x.jsonl", set, NULL),
                     ARB_INVALID);
    arb_import_stats st;
    assert_int_equal(arb__store_put_import(f->store, "s", "judgments", "x.jsonl", set, &st),
                     ARB_OK);
    assert_int_equal(st.judgments, 5);
    assert_int_equal(arb__store_put_import(f->store, "t", "judgments", "x.jsonl", set, &st),
                     ARB_INVALID); /* s holds them */
    assert_int_equal(st.judgments, 0);
    assert_false(sqlite3_get_autocommit(arb__store_conn(f->store)));
    assert_int_equal(arb__store_commit(f->store), ARB_OK);
    assert_int_equal(q(f, "SELECT count(*) FROM pairwise WHERE source = 's'"), 5);
    assert_int_equal(q(f, "SELECT count(*) FROM answers WHERE answer = 'kept'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM judgment_sources"), 1);
    free(err);
    arb__import_set_destroy(set);
}

/* Grades (FastChat single-answer grading) go to pointwise, with their calls and source. */
static void store_scores(void **state)
{
    fixture *f = *state;
    arb__import_set *set = arb__import_set_create();
    assert_non_null(set);
    char *err = NULL;
    arb__import_score sc = {.judge = "gpt-4", .item = "81", .model = "m1", .kind = "grade10",
                            .template_name = "single-v1", .value = 7, .raw = "Rating: [[7]]",
                            .question = "Write a poem", .answer = "roses", .where = "s.jsonl:1"};
    assert_int_equal(arb__import_set_add_score(set, &sc, &err), ARB_OK);
    sc.model = "m2";
    sc.value = -1;
    sc.raw = NULL;
    sc.answer = NULL;
    sc.where = "s.jsonl:2";
    assert_int_equal(arb__import_set_add_score(set, &sc, &err), ARB_OK);
    arb__import_set_skip(set, 3);
    arb_import_stats st;
    if (arb__store_put_import(f->store, "fc", "fastchat", "s.jsonl", set, &st))
        fail_msg("%s", arb_store_errmsg(f->store));
    assert_int_equal(st.scores, 2);
    assert_int_equal(st.judgments, 0);
    assert_int_equal(st.skipped, 3);
    assert_int_equal(st.items_added, 1);
    assert_int_equal(q(f, "SELECT count(*) FROM pointwise p JOIN calls c ON c.id = p.call_id"
                          " WHERE p.source = 'fc' AND p.model = 'm1' AND p.value = 7 AND"
                          " p.kind = 'grade10' AND p.template_name = 'single-v1' AND"
                          " c.content = 'Rating: [[7]]'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM pointwise WHERE model = 'm2' AND value IS NULL"
                          " AND reason = 'no valid verdict' AND call_id IS NULL"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM answers WHERE item_id = '81'"), 1);
    assert_int_equal(q(f, "SELECT count(*) FROM judgment_sources WHERE name = 'fc' AND"
                          " n_judgments = 2 AND n_skipped = 3"), 1);
    /* another source with the same grade is refused; the source itself may replace it */
    assert_int_equal(arb__store_put_import(f->store, "fc2", "fastchat", "s.jsonl", set, &st),
                     ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store), "s.jsonl:1: judge \"gpt-4\" grading model "
                        "\"m1\" on item \"81\" (rep 0): already imported from source \"fc\"");
    assert_int_equal(arb__store_put_import(f->store, "fc", "fastchat", "s.jsonl", set, &st),
                     ARB_OK);
    assert_int_equal(q(f, "SELECT count(*) FROM pointwise"), 2);
    assert_int_equal(q(f, "SELECT count(*) FROM calls"), 1);
    free(err);
    arb__import_set_destroy(set);
}

static void import_bad_arguments(void **state)
{
    fixture *f = *state;
    arb_import_params params = {.source = "s"};
    arb_import_stats st;
    assert_int_equal(arb_judgments_import(f->store, "nope", "x", &params, &st), ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store), "import: unknown kind \"nope\" (known: "
                        "judgments, fastchat, arena-hard)");
    params.source = "";
    assert_int_equal(arb_judgments_import(f->store, "judgments", "x", &params, &st),
                     ARB_INVALID);
    params.source = "s";
    char path[256];
    snprintf(path, sizeof path, "%s/missing.jsonl", f->dir);
    assert_int_equal(arb_judgments_import(f->store, "judgments", path, &params, &st), ARB_IO);
    assert_int_equal(arb_judgments_import(f->store, "judgments", f->dir, &params, &st), ARB_IO);
    assert_non_null(strstr(arb_store_errmsg(f->store), "is a directory, not a judgment file"));
    assert_int_equal(import_file(f, "empty.jsonl", "\n\n", "s", &st), ARB_PARSE);
    assert_non_null(strstr(arb_store_errmsg(f->store), "no judgments in the file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(format_refusals),
        cmocka_unit_test(format_csv_refusals),
        cmocka_unit_test(format_winner_and_fields),
        cmocka_unit_test_setup_teardown(store_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(store_reimport_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(store_conflicts, setup, teardown),
        cmocka_unit_test_setup_teardown(store_arbiter_takes_over, setup, teardown),
        cmocka_unit_test_setup_teardown(store_answers_and_families, setup, teardown),
        cmocka_unit_test_setup_teardown(store_inside_transaction, setup, teardown),
        cmocka_unit_test_setup_teardown(store_scores, setup, teardown),
        cmocka_unit_test_setup_teardown(import_bad_arguments, setup, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
