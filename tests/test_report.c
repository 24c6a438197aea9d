/*
** test_report.c -- arb_report_write (report.c, report_doc.c, report_html.c, report_md.c):
** the defaults and a bad format; an empty store gives a whole report that explains every empty
** section; a two-item store whose verdict shares, position-bias numbers and worst case are
** worked out by hand; a long answer is cut at a code point; a URL's password never shows; a
** store whose item ids, questions, answers, judge, model, annotator and battle-source names are
** attacks (script and img tags, an attribute break-out, </svg>, javascript:, ]]>, table pipes
** and newlines) gives HTML with no tag, handler or link of theirs and Markdown with no raw '<'
** of theirs and no broken table row; every section has its id and, with data, a chart; the
** output is the same twice apart from the time; the CLI writes --html and --markdown in one
** run and leaves no temporary file.
**
** Run one test alone with ARB_TEST=<name>.
*/
#include "internal.h"
#include "testutil.h"

#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

static const char *const section_ids[] = {
    "summary",   "verdicts",  "position-bias", "human-agreement", "judge-agreement", "win-rates",
    "ratings",   "elo-trend", "peer-weights",  "discussions",     "worst-cases"};
#define N_SECTIONS (sizeof section_ids / sizeof section_ids[0])

/* The attacks, each planted in several places of the hostile store. */
#define H_SCRIPT "<script>window.__pwned=1</script>"
#define H_IMG "\"><img src=x onerror=\"window.__pwned=1\">"
#define H_SVG "</svg><script>x</script>"
#define H_JS "javascript:alert(1)"
#define H_CDATA "]]>"
/* An override that would show "]]B[[" as "[[B]]", isolates left open, and right-to-left text
** (Arabic "marhaban", Hebrew "shalom") with an RLM, which must come through. */
#define H_BIDI "\xe2\x80\xae]]B[[\xe2\x80\xac \xe2\x81\xa7open \xe2\x80\xaa" RTL_TEXT
#define RTL_TEXT "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7\xe2\x80\x8f \xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d"
#define H_MD "| a | b |\n|---|\n`x` *y* _z_ [l](javascript:alert(1)) # h \\"

typedef struct fixture {
    char dir[128];
    arb_store *store;
} fixture;

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f) return 0;
    arb_store_close(f->store);
    if (f->dir[0]) arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

/* Runs SQL built with sqlite3's printf (%Q quotes a string or writes NULL). */
#define exec_sql(f, ...) assert_int_equal(arb_test_exec_sql((f)->store, __VA_ARGS__), 0)

static void judge(fixture *f, const char *judge_name, const char *item, const char *candidate,
                  const char *baseline, int order, char verdict)
{
    arb__pairwise_row row;
    memset(&row, 0, sizeof row);
    row.judge_name = judge_name;
    row.item_id = item;
    row.candidate = candidate;
    row.baseline = baseline;
    row.template_name = "II-reason";
    row.options = 4;
    row.order = order;
    row.position_verdict = verdict;
    assert_int_equal(arb_test_put_sbs_judgment(f->store, &row, NULL), 0);
}

/* The report in format, as a string (caller frees). */
static char *render(fixture *f, const arb_report_params *p, const char *format)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    arb_status st = arb_report_write(f->store, p, format, out);
    assert_int_equal(fclose(out), 0);
    if (st) fail_msg("arb_report_write(%s): %s", format, arb_store_errmsg(f->store));
    assert_int_equal(strlen(text), len);
    return text;
}

static const char *find_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n)) return hay;
    return NULL;
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* The HTML of section id, from its tag to its end (caller frees); fails when absent. */
static char *section_html(const char *html, const char *id)
{
    char open[96];
    snprintf(open, sizeof open, "<section class=\"report-section\" id=\"%s\">", id);
    const char *start = strstr(html, open);
    if (!start) fail_msg("no section %s", id);
    const char *end = strstr(start, "</section>");
    assert_non_null(end);
    return strndup(start, (size_t)(end - start));
}

/* Replaces every UTC time stamp "2026-01-31T12:00:00Z" by "TIME". */
static void blank_times(char *s)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
    size_t n = strlen(shape);
    for (char *p = s; *p; p++) {
        size_t k = 0;
        while (k < n && p[k] && (shape[k] == 'd' ? isdigit((unsigned char)p[k]) : p[k] == shape[k]))
            k++;
        if (k == n) memcpy(p, "TIME________________", n);
    }
}

/* Whether position at of html is element content rather than inside a tag: the nearest '<' or
** '>' before it is a '>'. */
static int in_text(const char *html, const char *at)
{
    while (at > html && at[-1] != '<' && at[-1] != '>') at--;
    return at > html && at[-1] == '>';
}

/* Every tag of an HTML text: a name that runs or loads nothing, no event-handler attribute,
** no link leaving the page, no '<' in an attribute value, and no '<' that does not open a tag
** (escaped text never holds one). */
static void check_tags(const char *html)
{
    static const char *const banned[] = {"script", "img", "image", "iframe", "object", "embed",
                                         "foreignobject", "use", "animate", "set", "base",
                                         "link", "form", "input", "audio", "video", NULL};
    assert_true(!strncmp(html, "<!DOCTYPE html>\n", 16));
    for (const char *p = html + 1; (p = strchr(p, '<')); ) {
        p++;
        if (*p == '/') p++;
        char name[32];
        size_t n = 0;
        while ((isalnum((unsigned char)*p) || *p == '-' || *p == ':') && n + 1 < sizeof name)
            name[n++] = (char)tolower((unsigned char)*p++);
        name[n] = '\0';
        if (!n) fail_msg("a '<' that opens no tag: %.60s", p - 1);
        for (size_t k = 0; banned[k]; k++)
            if (!strcmp(name, banned[k])) fail_msg("tag <%s> in the report", name);
        while (*p && *p != '>') { /* attributes */
            while (isspace((unsigned char)*p) || *p == '/') p++;
            if (*p == '>' || !*p) break;
            const char *attr = p;
            while (*p && !isspace((unsigned char)*p) && *p != '=' && *p != '>') p++;
            size_t attr_len = (size_t)(p - attr);
            if (attr_len >= 2 && !strncasecmp(attr, "on", 2))
                fail_msg("event handler attribute in <%s>: %.40s", name, attr);
            if (*p != '=') continue;
            p++;
            char quote = (*p == '"' || *p == '\'') ? *p++ : 0;
            const char *value = p;
            while (*p && (quote ? *p != quote : !isspace((unsigned char)*p) && *p != '>')) p++;
            size_t value_len = (size_t)(p - value);
            if (quote && *p) p++;
            char *v = strndup(value, value_len);
            assert_non_null(v);
            if (strchr(v, '<')) fail_msg("'<' in an attribute of <%s>: %s", name, v);
            if (find_ci(v, "javascript:")) fail_msg("javascript: in an attribute of <%s>", name);
            if (((attr_len == 4 && !strncasecmp(attr, "href", 4)) ||
                 (attr_len == 10 && !strncasecmp(attr, "xlink:href", 10))) && v[0] != '#')
                fail_msg("link out of the page in <%s>: %s", name, v);
            if (attr_len == 3 && !strncasecmp(attr, "src", 3)) fail_msg("src in <%s>", name);
            free(v);
        }
    }
}

/* Each Markdown table has the same number of unescaped pipes on every line (its header's). */
static void check_md_tables(const char *md)
{
    size_t want = 0, tables = 0;
    int in_table = 0;
    for (const char *line = md; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len && line[0] == '|') {
            size_t pipes = 0, backslashes = 0;
            for (size_t k = 0; k < len; k++) {
                if (line[k] == '|' && backslashes % 2 == 0) pipes++;
                backslashes = line[k] == '\\' ? backslashes + 1 : 0;
            }
            if (!in_table) {
                in_table = 1;
                want = pipes;
                tables++;
            } else if (pipes != want) {
                fail_msg("table row with %zu pipes, header has %zu: %.*s", pipes, want, (int)len,
                         line);
            }
        } else {
            in_table = 0;
        }
        line += len + (end != NULL);
    }
    assert_true(tables > 0);
}

/* ---- defaults and errors --------------------------------------------------------------- */

static void default_params(void **state)
{
    (void)state;
    arb_report_params p = arb_report_default_params();
    assert_string_equal(p.title, "arbiter report");
    assert_int_equal(p.bootstrap, 1000);
    assert_int_equal(p.seed, 20261123);
    assert_int_equal(p.worst_cases, 8);
    assert_int_equal(p.transcripts, 3);
}

static int setup_empty(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f;
    char path[256];
    if (arb_test_make_dir("test_report", f->dir, sizeof f->dir)) return -1;
    snprintf(path, sizeof path, "%s/arbiter.db", f->dir);
    return arb_store_open(path, &f->store) == ARB_OK ? 0 : -1;
}

static void bad_format(void **state)
{
    fixture *f = *state;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(arb_report_write(f->store, NULL, "pdf", out), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store), "\"pdf\""));
    assert_int_equal(arb_report_write(f->store, NULL, "HTML", out), ARB_INVALID);
    assert_int_equal(arb_report_write(f->store, NULL, NULL, out), ARB_INVALID);
    assert_int_equal(arb_report_write(f->store, NULL, "html", NULL), ARB_INVALID);
    assert_int_equal(arb_report_write(NULL, NULL, "html", out), ARB_INVALID);
    assert_int_equal(fclose(out), 0);
    assert_int_equal(len, 0); /* nothing written */
    free(text);
}

static void empty_store(void **state)
{
    fixture *f = *state;
    char *html = render(f, NULL, "html");
    assert_true(!strncmp(html, "<!DOCTYPE html>\n", 16));
    assert_non_null(strstr(html, "<meta charset=\"utf-8\">"));
    assert_non_null(strstr(html, "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                                 "'none'; style-src 'unsafe-inline'; img-src data:\">"));
    assert_non_null(strstr(html, "<title>arbiter report</title>"));
    assert_non_null(strstr(html, "@media print"));
    assert_non_null(strstr(html, "Generated by arbiter " ARB_VERSION " on <time"));
    assert_null(find_ci(html, "<script"));
    assert_null(strstr(html, "<svg")); /* nothing to draw: explanations instead */
    for (size_t k = 0; k < N_SECTIONS; k++) {
        char *sec = section_html(html, section_ids[k]);
        char toc[96];
        snprintf(toc, sizeof toc, "<a href=\"#%s\">", section_ids[k]);
        assert_non_null(strstr(html, toc));
        if (!strstr(sec, "<p class=\"note\">")) fail_msg("section %s explains nothing", section_ids[k]);
        free(sec);
    }
    assert_true(strlen(html) > 100 && !strcmp(html + strlen(html) - 8, "</html>\n"));
    check_tags(html);
    free(html);

    char *md = render(f, NULL, "markdown");
    assert_true(!strncmp(md, "# arbiter report\n", 17));
    assert_non_null(strstr(md, "see the HTML report for charts"));
    assert_non_null(strstr(md, "\n## Run summary\n"));
    assert_non_null(strstr(md, "\n## Most order-dependent items\n"));
    assert_non_null(strstr(md, "_The store is empty"));
    free(md);
}

/* ---- numbers worked out by hand ----------------------------------------------------------- */

static int setup_small(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f;
    return arb_test_store_with_items("test_report",
                                     "{\"id\":\"i1\",\"question\":\"one?\"}\n"
                                     "{\"id\":\"i2\",\"question\":\"two?\"}\n",
                                     f->dir, sizeof f->dir, &f->store);
}

/* Judge J, candidate C, baseline B:
**   i1: run 0 (C first) A -> a;  run 1 (B first) A -> b   (the verdict follows the position)
**   i2: run 0 A -> a;            run 1 B -> a             (consistent)
** Shares: run 0 a 2/2 = 100%; run 1 a 1/2 = 50%, b 1/2 = 50%; mean a 75%, b 25%.
** PBias@AB = #A/#AB in run 0 (2/2) + in run 1 (1/2) - 1 = +0.5.
** Valid pairs 2: i1 (A,A) inconsistent, lean +1+1 > 0 primacy (pcn 1, rcn 0, ipr 1, irr 0);
** i2 (A,B) consistent. PC = 1/2; PF = (rcn*irr - pcn*ipr)/n = (0 - 1)/2 = -0.5.
** Con@ABCD: i1 a vs b no, i2 a = a yes: 1/2. PCon@AB: both pairs have a or b, i2 agrees: 1/2.
** Worst cases: only i1 changed (a vs b), by 1 of 1 judges. */
static void hand_numbers(void **state)
{
    fixture *f = *state;
    judge(f, "J", "i1", "C", "B", 0, 'A');
    judge(f, "J", "i1", "C", "B", 1, 'A');
    judge(f, "J", "i2", "C", "B", 0, 'A');
    judge(f, "J", "i2", "C", "B", 1, 'B');
    arb_report_params p = arb_report_default_params();
    p.bootstrap = 0; /* exact cells, no intervals */
    char *md = render(f, &p, "markdown");
    assert_non_null(strstr(md, "| J | C | B | 2 | run 0 | 100.0% | 0.0% | 0.0% | 0.0% | 0.0% |\n"));
    assert_non_null(strstr(md, "| J | C | B | 2 | run 1 | 50.0% | 50.0% | 0.0% | 0.0% | 0.0% |\n"));
    assert_non_null(strstr(md, "| J | C | B | 2 | mean | 75.0% | 25.0% | 0.0% | 0.0% | 0.0% |\n"));
    assert_non_null(strstr(md, "| J | 2 | 2 | +0.500 | -0.500 | 50.0% | 50.0% | 50.0% | 0.0% |\n"));
    assert_non_null(strstr(md, "### Item i1: C vs B, 1 of 1 judges changed their verdict\n"));
    assert_null(strstr(md, "### Item i2"));
    assert_non_null(strstr(md, "| J | sbs · II-reason · 4 options | 0 | a: C better | b: B better | yes |\n"));
    assert_non_null(strstr(md, "_Fewer than two judges"));
    assert_non_null(strstr(md, "_No expert labels"));
    assert_non_null(strstr(md, "_No battles in the store"));
    check_md_tables(md);
    free(md);

    /* with the bootstrap, the cells carry [lo, hi] */
    p.bootstrap = 200;
    md = render(f, &p, "markdown");
    assert_non_null(strstr(md, "| J | 2 | 2 | +0.500 \\["));
    free(md);

    /* worst cases 0: the section says so */
    p.worst_cases = 0;
    char *html = render(f, &p, "html");
    char *sec = section_html(html, "worst-cases");
    assert_non_null(strstr(sec, "Not asked for"));
    assert_null(strstr(sec, "Item i1"));
    free(sec);
    free(html);
}

/* A 13001-byte answer ("x" then 6500 two-byte "é") is cut below 12000 bytes at a code point:
** byte 12000 continues the "é" that starts at 11999, so 11999 bytes stay and 1002 go. The
** URL's user and password are not shown, its host is. */
static void long_text_and_url(void **state)
{
    fixture *f = *state;
    judge(f, "J", "i1", "C", "B", 0, 'A');
    judge(f, "J", "i1", "C", "B", 1, 'A');
    size_t n = 1 + 2 * 6500;
    char *answer = malloc(n + 1);
    assert_non_null(answer);
    answer[0] = 'x';
    for (size_t k = 1; k < n; k += 2) answer[k] = '\xC3', answer[k + 1] = '\xA9';
    answer[n] = '\0';
    exec_sql(f, "INSERT INTO answers(item_id, model, answer) VALUES ('i1', 'C', %Q)", answer);
    free(answer);
    exec_sql(f, "UPDATE judges SET base_url = 'https://user:sk-secret@api.example.com:8443/v1'");
    char *html = render(f, NULL, "html");
    assert_non_null(strstr(html, "[... 1002 more bytes not shown]"));
    assert_true(arb__utf8_valid(html, strlen(html), NULL));
    assert_non_null(strstr(html, "<td>api.example.com</td>"));
    assert_null(strstr(html, "sk-secret"));
    assert_null(strstr(html, "user:"));
    free(html);
}

/* ---- a hostile store ----------------------------------------------------------------------- */

static const char *const hostile_items[3] = {"i1" H_SCRIPT, "i2" H_IMG, "i3 " H_JS " " H_CDATA " |"};
#define CAND "cand" H_SVG
#define BASE "base" H_IMG
#define JUDGE_A "judge" H_SCRIPT
#define JUDGE_B H_JS "|" H_CDATA

static char *json_line(json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    assert_non_null(s);
    return s;
}

static long long put_call(fixture *f, const char *judge_name, const char *content)
{
    static int next;
    exec_sql(f,
             "INSERT INTO calls(key, judge_name, model, request, ok, content)"
             " VALUES ('report-test-%d', %Q, %Q, '{}', 1, %Q)",
             next++, judge_name, judge_name, content);
    return sqlite3_last_insert_rowid(arb__store_db(f->store));
}

static long long put_dialogue(fixture *f, const char *kind, const char *config,
                              const char *participants, const char *final)
{
    static int next;
    exec_sql(f,
             "INSERT INTO dialogues(key, kind, item_id, answer1, answer2, participants, config,"
             " status, final_verdict) VALUES ('report-d%d', %Q, %Q, %Q, %Q, %Q, %Q, 'done', %Q)",
             next++, kind, hostile_items[0], CAND, BASE, participants, config, final);
    return sqlite3_last_insert_rowid(arb__store_db(f->store));
}

static void put_turn(fixture *f, long long dialogue, int turn, const char *speaker,
                     const char *role, const char *verdict, const char *reply)
{
    exec_sql(f,
             "INSERT INTO dialogue_turns(dialogue_id, turn, speaker, role, call_id, verdict)"
             " VALUES (%lld, %d, %Q, %Q, %lld, %Q)",
             dialogue, turn, speaker, role, put_call(f, speaker, reply), verdict);
}

static void add_battle(arb_battles *b, const char *q, const char *i, const char *j,
                       const char *reviewer, int s)
{
    arb_battle battle = arb_battle_init();
    battle.question = q;
    battle.model_i = i;
    battle.model_j = j;
    battle.reviewer = reviewer;
    battle.s = s;
    assert_int_equal(arb_battles_add(b, &battle), ARB_OK);
}

/* Three items, two judges (A flips with the order, B does not), answers, expert labels,
** battles in which judge A is also a contestant, a discussion and a soft debate: every name
** and text an attack. */
static int setup_hostile(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f;
    char items[2048] = "";
    for (size_t k = 0; k < 3; k++) {
        char *line = json_line(json_pack("{s:s, s:s}", "id", hostile_items[k], "question",
                                         "Q? " H_SCRIPT "\n" H_IMG "\n" H_SVG " " H_CDATA "\n" H_MD));
        strcat(items, line);
        strcat(items, "\n");
        free(line);
    }
    if (arb_test_store_with_items("test_report", items, f->dir, sizeof f->dir, &f->store))
        return -1;
    for (size_t k = 0; k < 3; k++) {
        exec_sql(f, "INSERT INTO answers(item_id, model, answer) VALUES (%Q, %Q, %Q)",
                 hostile_items[k], CAND, "cand says " H_SVG "\n" H_MD "\n" H_BIDI);
        exec_sql(f, "INSERT INTO answers(item_id, model, answer) VALUES (%Q, %Q, %Q)",
                 hostile_items[k], BASE, "base says " H_IMG "\n" H_JS);
        judge(f, JUDGE_A, hostile_items[k], CAND, BASE, 0, 'A');
        judge(f, JUDGE_A, hostile_items[k], CAND, BASE, 1, 'A');
        judge(f, JUDGE_B, hostile_items[k], CAND, BASE, 0, 'A');
        judge(f, JUDGE_B, hostile_items[k], CAND, BASE, 1, k == 2 ? 'C' : 'B');
    }
    char labels[4096] = "";
    for (size_t k = 0; k < 3; k++) {
        char *line = json_line(json_pack("{s:s, s:s, s:s, s:s, s:s}", "item", hostile_items[k],
                                         "candidate", CAND, "baseline", BASE, "verdict", "a",
                                         "annotator", "ann" H_SCRIPT));
        strcat(labels, line);
        strcat(labels, "\n");
        free(line);
    }
    if (arb__labels_import_text(f->store, "labels.jsonl", "jsonl", labels, strlen(labels), NULL))
        return -1;

    arb_battles *b = arb_battles_create();
    if (!b) return -1;
    for (int round = 0; round < 4; round++) {
        add_battle(b, hostile_items[0], CAND, BASE, JUDGE_A, -1);
        add_battle(b, hostile_items[1], BASE, JUDGE_A, JUDGE_B, 1);
        add_battle(b, hostile_items[2], JUDGE_A, CAND, JUDGE_A, round % 2 ? 0 : -1);
        add_battle(b, hostile_items[0], BASE, CAND, JUDGE_B, round % 2 ? 1 : -1);
    }
    arb_status st = arb_store_put_battles(f->store, "src<img src=x onerror=alert(1)>", b);
    arb_battles_destroy(b);
    if (st) return -1;

    char *participants = json_line(json_pack("[s, s]", JUDGE_A, JUDGE_B));
    char *config = json_line(json_pack("{s:s, s:s, s:i, s:[s, s], s:b, s:s}", "initial_template",
                                       "discuss-initial", "leader", "first", "max_turns", 2,
                                       "reviewers", JUDGE_A, JUDGE_B, "stop_on_agreement", 0,
                                       "turn_template", "discuss-turn"));
    long long d = put_dialogue(f, "discussion", config, participants, "1");
    put_turn(f, d, 0, JUDGE_A, "initial", "1", "review " H_SCRIPT "\n1");
    put_turn(f, d, 1, JUDGE_B, "initial", "2", "review " H_IMG "\n2");
    put_turn(f, d, 2, JUDGE_A, "leader", "1", "keep " H_SVG " " H_CDATA "\n" H_MD "\n" H_BIDI "\n1");
    free(participants);
    free(config);
    participants = json_line(json_pack("[s, s, s]", JUDGE_A, JUDGE_B, JUDGE_A));
    d = put_dialogue(f, "soft", "{\"agent2_template\":\"debate-soft\"}", participants, "A");
    put_turn(f, d, 0, JUDGE_A, "agent1", "A", "[[A]] " H_JS);
    put_turn(f, d, 1, JUDGE_B, "agent2", "A", "agree " H_SCRIPT);
    put_turn(f, d, 2, JUDGE_A, "judge", "A", "final " H_IMG);
    free(participants);
    return 0;
}

static arb_report_params quick_params(void)
{
    arb_report_params p = arb_report_default_params();
    p.bootstrap = 50;
    p.title = "Title " H_SCRIPT H_IMG H_BIDI;
    return p;
}

/* Nonzero when s holds an explicit bidirectional control (U+202A..U+202E, U+2066..U+2069). */
static int has_bidi_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (p[0] == 0xE2 && ((p[1] == 0x80 && p[2] >= 0xAA && p[2] <= 0xAE) ||
                             (p[1] == 0x81 && p[2] >= 0xA6 && p[2] <= 0xA9)))
            return 1;
    return 0;
}

static void hostile_html(void **state)
{
    fixture *f = *state;
    arb_report_params p = quick_params();
    char *html = render(f, &p, "html");
    assert_null(find_ci(html, "<script"));
    assert_null(find_ci(html, "<img"));
    for (const char *at = html; (at = find_ci(at, "onerror=")); at += 8)
        if (!in_text(html, at)) fail_msg("onerror= inside a tag: %.40s", at);
    assert_null(strstr(html, "]]>"));
    assert_int_equal(count_of(html, "<svg"), count_of(html, "</svg>"));
    check_tags(html);
    /* the attacks are shown, escaped, not dropped */
    assert_non_null(strstr(html, "<title>Title &lt;script&gt;window.__pwned=1&lt;/script&gt;"));
    assert_non_null(strstr(html, "i1&lt;script&gt;window.__pwned=1&lt;/script&gt;"));
    assert_non_null(strstr(html, "base&quot;&gt;&lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;"));
    assert_non_null(strstr(html, "cand&lt;/svg&gt;&lt;script&gt;x&lt;/script&gt;"));
    assert_non_null(strstr(html, "keep &lt;/svg&gt;"));  /* a transcript reply */
    assert_non_null(strstr(html, "src&lt;img src=x onerror=alert(1)&gt;")); /* battle source */
    /* no override or isolate reaches the page; right-to-left text does, each text block and
    ** table cell taking its direction from its own first letter */
    assert_false(has_bidi_control(html));
    assert_non_null(strstr(html, "]]B[[ open " RTL_TEXT));
    assert_non_null(strstr(html, "pre,td,th{unicode-bidi:plaintext}"));
    assert_true(arb__utf8_valid(html, strlen(html), NULL));
    free(html);
}

static void hostile_markdown(void **state)
{
    fixture *f = *state;
    arb_report_params p = quick_params();
    char *md = render(f, &p, "markdown");
    assert_null(find_ci(md, "<script"));
    assert_null(find_ci(md, "<img"));
    assert_null(find_ci(md, "</svg"));
    assert_null(strstr(md, "]]>"));
    for (const char *at = md; (at = strchr(at, '<')); at++)
        if (strncmp(at, "<br>", 4)) fail_msg("raw '<' in the Markdown: %.40s", at);
    check_md_tables(md);
    assert_non_null(strstr(md, "# Title &lt;script&gt;"));
    assert_non_null(strstr(md, "\\| a \\| b \\|")); /* pipes of a value escaped */
    assert_false(has_bidi_control(md));
    assert_non_null(strstr(md, "\\]\\]B\\[\\[ open " RTL_TEXT));
    free(md);
}

static void sections_have_charts(void **state)
{
    fixture *f = *state;
    arb_report_params p = quick_params();
    char *html = render(f, &p, "html");
    for (size_t k = 0; k < N_SECTIONS; k++) {
        char *sec = section_html(html, section_ids[k]);
        int want_chart = strcmp(section_ids[k], "summary") && strcmp(section_ids[k], "worst-cases");
        if (want_chart && !strstr(sec, "<svg")) fail_msg("section %s has no chart", section_ids[k]);
        free(sec);
    }
    /* peer rank applies: judge A is also a contestant */
    char *peer = section_html(html, "peer-weights");
    assert_null(strstr(peer, "does not apply"));
    free(peer);
    /* the transcript shows the question once and every turn */
    char *disc = section_html(html, "discussions");
    assert_non_null(strstr(disc, "Turn 2 · judge&lt;script&gt;"));
    /* OA / OH count discussions, the per-turn counts beside them (issue 12): judge A leads
    ** and keeps its 1 against B's 2 in turn 2: one OH discussion, OA / OH turns 0 / 1 */
    assert_non_null(strstr(disc, "Leader OA / OH turns"));
    assert_non_null(strstr(disc, "<td class=\"num\">0</td><td class=\"num\">1</td>"
                                 "<td class=\"num\">0.0%</td><td class=\"num\">0 / 1</td>"));
    free(disc);
    free(html);
}

static void deterministic(void **state)
{
    fixture *f = *state;
    arb_report_params p = quick_params();
    const char *formats[2] = {"html", "markdown"};
    for (int k = 0; k < 2; k++) {
        char *one = render(f, &p, formats[k]), *two = render(f, &p, formats[k]);
        assert_non_null(strstr(one, "Generated by arbiter"));
        blank_times(one);
        blank_times(two);
        assert_string_equal(one, two);
        free(one);
        free(two);
    }
}

/* `arbiter report` writes both files in one run, leaves no .tmp, and refuses a missing
** database with exit 2 (skipped when ARB_BIN, the CLI built beside the tests, is not set). */
static void cli_both_formats(void **state)
{
    fixture *f = *state;
    const char *bin = getenv("ARB_BIN");
    if (!bin) skip();
    char cmd[1024], html[256], md[256], tmp[300];
    snprintf(html, sizeof html, "%s/r.html", f->dir);
    snprintf(md, sizeof md, "%s/r.md", f->dir);
    snprintf(cmd, sizeof cmd, "'%s' report --db '%s/arbiter.db' --html '%s' --markdown '%s' --bootstrap 20",
             bin, f->dir, html, md);
    assert_int_equal(system(cmd), 0);
    struct stat sb;
    assert_int_equal(stat(html, &sb), 0);
    assert_true(sb.st_size > 1000);
    assert_int_equal(stat(md, &sb), 0);
    assert_true(sb.st_size > 1000);
    snprintf(tmp, sizeof tmp, "%s.tmp", html);
    assert_int_not_equal(stat(tmp, &sb), 0);
    snprintf(cmd, sizeof cmd, "'%s' report --db '%s/missing.db' --html '%s' 2>/dev/null", bin, f->dir,
             html);
    int rc = system(cmd);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_params),
        cmocka_unit_test_setup_teardown(bad_format, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(empty_store, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(hand_numbers, setup_small, teardown),
        cmocka_unit_test_setup_teardown(long_text_and_url, setup_small, teardown),
        cmocka_unit_test_setup_teardown(hostile_html, setup_hostile, teardown),
        cmocka_unit_test_setup_teardown(hostile_markdown, setup_hostile, teardown),
        cmocka_unit_test_setup_teardown(sections_have_charts, setup_hostile, teardown),
        cmocka_unit_test_setup_teardown(deterministic, setup_hostile, teardown),
        cmocka_unit_test_setup_teardown(cli_both_formats, setup_hostile, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
