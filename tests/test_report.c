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
** run and leaves no temporary file. Issue 13: the multilingual section of a store with pointwise
** judgments in en, ar and hi by judges named in Arabic and Hindi (and one whose name holds a
** right-to-left override) against hand-computed κ, accuracy, mean grade, gap and ensemble, its
** charts well formed (svg_check.h), n/a for undefined values, no bidi control, the ensemble only
** with --ensemble; the section absent without pointwise judgments; the side-by-side table per
** language with two item languages and not with one; `arbiter report --ensemble`. Issue 14: the
** persona section of a store written through arb__store_put_persona_scores, against hand-worked
** means, difference matrix, win rates, position effect, χ² and Holm p; identity labels that are
** attacks (a script tag with a pipe, right-to-left text) escaped; its charts well formed
** (diverging heat map, whiskers, the 50% line); the section absent without persona scores.
**
** Run one test alone with ARB_TEST=<name>.
*/
#include "test_sql.h"
#include "svg_check.h"
#include "testutil.h"

#include <ctype.h>
#include <math.h>
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
    assert_null(strstr(html, "multilingual")); /* no pointwise judgments: no section at all */
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

/* Judgments made elsewhere (arbiter import judgments): judge J on i1 says A in both orders (a
** flip: a then b), on i2 A then B (consistent). The summary says they were imported and from
** where, without a call count of its own; the worst case (i1) says "imported from ext" and
** shows the imported raw text of both orders, escaped. */
static void imported_judgments(void **state)
{
    fixture *f = *state;
    char path[256];
    snprintf(path, sizeof path, "%s/ext.jsonl", f->dir);
    static const char lines[] =
        "{\"judge\":\"J\",\"item\":\"i1\",\"candidate\":\"C\",\"baseline\":\"B\",\"order\":0,"
        "\"verdict\":\"A\",\"question\":\"<b>one?</b>\",\"candidate_answer\":\"c1\","
        "\"baseline_answer\":\"b1\",\"raw\":\"first <img src=x onerror=alert(1)> [[A]]\"}\n"
        "{\"judge\":\"J\",\"item\":\"i1\",\"candidate\":\"C\",\"baseline\":\"B\",\"order\":1,"
        "\"verdict\":\"A\",\"raw\":\"second looks better [[A]]\"}\n"
        "{\"judge\":\"J\",\"item\":\"i2\",\"candidate\":\"C\",\"baseline\":\"B\",\"order\":0,"
        "\"verdict\":\"A\"}\n"
        "{\"judge\":\"J\",\"item\":\"i2\",\"candidate\":\"C\",\"baseline\":\"B\",\"order\":1,"
        "\"verdict\":\"B\"}\n";
    assert_int_equal(arb_test_write_file(path, lines, strlen(lines)), 0);
    arb_import_params ip = {"ext", NULL};
    arb_import_stats stats;
    if (arb_judgments_import(f->store, "judgments", path, &ip, &stats))
        fail_msg("import: %s", arb_store_errmsg(f->store));
    assert_int_equal(stats.judgments, 4);
    arb_report_params p = arb_report_default_params();
    p.bootstrap = 0;
    char *md = render(f, &p, "markdown");
    assert_non_null(strstr(md, "(debates and discussions); arbiter's own runs: 0.\n"));
    assert_non_null(strstr(md, "4 of these judgments were not made by arbiter: they were "
                               "imported from ext.\n"));
    assert_non_null(strstr(md, "**Judgments imported from elsewhere (no judge call by arbiter)**"));
    assert_non_null(strstr(md, "| ext | judgments | "));
    assert_non_null(strstr(md, "ext.jsonl | 4 | 0 | 0 | J | "));
    assert_non_null(strstr(md, "### Item i1: C vs B, 1 of 1 judges changed their verdict\n"));
    assert_null(strstr(md, "### Item i2"));
    assert_non_null(strstr(md, "| J | sbs · imported · 4 options · imported from ext | 0 | "
                               "a: C better | b: B better | yes |\n"));
    assert_non_null(strstr(md, "**J, C shown first (a: C better)**\n\n> first &lt;img src=x "
                               "onerror=alert(1)&gt; \\[\\[A\\]\\]\n"));
    assert_non_null(strstr(md, "**J, B shown first (b: B better)**\n\n> second looks better"));
    check_md_tables(md);
    free(md);
    char *html = render(f, &p, "html");
    assert_null(find_ci(html, "<img"));
    assert_null(find_ci(html, "<b>one"));
    assert_non_null(strstr(html, "first &lt;img src=x onerror=alert(1)&gt; [[A]]"));
    assert_non_null(strstr(html, "&lt;b&gt;one?&lt;/b&gt;"));
    check_tags(html);
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
    return sqlite3_last_insert_rowid(arb__store_conn(f->store));
}

static long long put_dialogue(fixture *f, const char *kind, const char *config,
                              const char *participants, const char *final)
{
    static int next;
    exec_sql(f,
             "INSERT INTO dialogues(key, kind, item_id, answer1, answer2, participants, config,"
             " status, final_verdict) VALUES ('report-d%d', %Q, %Q, %Q, %Q, %Q, %Q, 'done', %Q)",
             next++, kind, hostile_items[0], CAND, BASE, participants, config, final);
    return sqlite3_last_insert_rowid(arb__store_conn(f->store));
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

/* ---- the multilingual section and the SbS per language (issue 13) ---------------------- */

/* Judges named in Arabic ("hakam") and Hindi ("jaj"); a third whose name carries a right-to-left
** override, which must not reach the page. */
#define J_AR "\xd8\xad\xd9\x83\xd9\x85"
#define J_HI "\xe0\xa4\x9c\xe0\xa4\x9c"
#define J_RLO "C\xe2\x80\xae" "evil"
#define TPL_YESNO "pointwise-yesno-general-explain"
#define TPL_GRADE "pointwise-grade-general-explain"

/* Groups g1..g4 in en, ar and hi, with questions in their own scripts. */
static int setup_multilingual(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f;
    static const char *const langs[3] = {"en", "ar", "hi"};
    static const char *const questions[3] = {"Is it so?", "\xd9\x87\xd9\x84 \xd9\x87\xd9\x88 \xd9\x83\xd8\xb0\xd9\x84\xd9\x83\xd8\x9f",
                                             "\xe0\xa4\x95\xe0\xa5\x8d\xe0\xa4\xaf\xe0\xa4\xbe \xe0\xa4\x90\xe0\xa4\xb8\xe0\xa4\xbe \xe0\xa4\xb9\xe0\xa5\x88?"};
    char items[4096] = "";
    for (int g = 1; g <= 4; g++)
        for (int k = 0; k < 3; k++) {
            char id[16], group[8];
            snprintf(id, sizeof id, "g%d-%s", g, langs[k]);
            snprintf(group, sizeof group, "g%d", g);
            char *line = json_line(json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "question",
                                             questions[k], "context", "c", "language", langs[k],
                                             "group", group));
            strcat(items, line);
            strcat(items, "\n");
            free(line);
        }
    return arb_test_store_with_items("test_report", items, f->dir, sizeof f->dir, &f->store);
}

/* One pointwise judgment of the reference answer of item gG-LANG ('E' for no valid value). */
static void pointwise(fixture *f, const char *judge_name, const char *kind, const char *tpl,
                      int g, const char *lang, int value)
{
    char item[16];
    snprintf(item, sizeof item, "g%d-%s", g, lang);
    arb__pointwise_row row = {.protocol = "pointwise", .judge_name = judge_name, .item_id = item,
                              .model = "reference", .language = lang, .kind = kind,
                              .task = "qa", .template_name = tpl, .value = value,
                              .reason = value < 0 ? "no <answer> tag" : NULL};
    assert_int_equal(arb__store_put_pointwise(f->store, &row), ARB_OK);
}

/* values: the four groups' values in one language, as "1010" ('E' = no valid value). */
static void pointwise_spec(fixture *f, const char *judge_name, const char *kind, const char *tpl,
                           const char *lang, const char *values)
{
    for (int g = 1; g <= 4; g++)
        if (values[g - 1] != '.') pointwise(f, judge_name, kind, tpl, g, lang,
                                            values[g - 1] == 'E' ? -1 : values[g - 1] - '0');
}

/* Yes/no, task qa (worked out by hand; reference language en):
**   J_AR: en 1010, ar 1010, hi 1010: Fleiss' κ 1 (4 groups), Cohen's κ ar and hi vs en 1,
**         accuracy 50.0% everywhere.
**   J_HI: en 1010, ar 1100, hi 101E: g4 left out for an E, so 3 groups, P_i 1, 1/3, 1/3,
**         P = 5/9, p(1) = 6/9, P_e = 5/9: Fleiss' κ 0. Cohen ar vs en over 4 groups: p_o 1/2,
**         p_e 1/2: 0; hi vs en over 3 groups: p_o 1, p_e 5/9: 1. hi accuracy 2/3 = 66.7%,
**         E rate 1/4 = 25.0%.
**   J_RLO: en only (1010): Fleiss' κ n/a (one language), Cohen's κ n/a.
**   Spearman (qa, yes/no): J_RLO has no κ, 2 judges left: ρ n/a.
** Grades, same template variant, J_AR: en 5142, ar 5142, hi 5141: g4 P = 1/3, P = 5/6;
**   categories 1: 4, 2: 2, 4: 3, 5: 3 of 12, P_e = 38/144: κ = 41/53 = 0.774; mean grade hi
**   11/4 = 2.750. Gap yes/no - grade = 1 - 41/53 = 12/53 = +0.226.
** Ensemble J_AR, J_HI (yes/no): a tie goes to J_AR, so the vote is J_AR's values, g4-hi left
**   out (J_HI said E): 11 instances voted, 1 left out, ties where they differ (ar g2, g3): 2;
**   groups g1..g3 used, g4 left out; Ens 1, Min 0 (J_HI), Δ +1. */
static void put_multilingual(fixture *f)
{
    pointwise_spec(f, J_AR, "yesno", TPL_YESNO, "en", "1010");
    pointwise_spec(f, J_AR, "yesno", TPL_YESNO, "ar", "1010");
    pointwise_spec(f, J_AR, "yesno", TPL_YESNO, "hi", "1010");
    pointwise_spec(f, J_HI, "yesno", TPL_YESNO, "en", "1010");
    pointwise_spec(f, J_HI, "yesno", TPL_YESNO, "ar", "1100");
    pointwise_spec(f, J_HI, "yesno", TPL_YESNO, "hi", "101E");
    pointwise_spec(f, J_RLO, "yesno", TPL_YESNO, "en", "1010");
    pointwise_spec(f, J_AR, "grade", TPL_GRADE, "en", "5142");
    pointwise_spec(f, J_AR, "grade", TPL_GRADE, "ar", "5142");
    pointwise_spec(f, J_AR, "grade", TPL_GRADE, "hi", "5141");
}

/* Every <svg>...</svg> of html passes the SVG checker. Returns how many there are. */
static size_t check_all_svg(const char *html)
{
    size_t n = 0;
    for (const char *p = html; (p = strstr(p, "<svg")); n++) {
        const char *end = strstr(p, "</svg>");
        assert_non_null(end);
        char *svg = strndup(p, (size_t)(end - p) + 6);
        assert_non_null(svg);
        checker ck;
        const char *why = check_svg_words(&ck, svg, 0);
        if (why) fail_msg("chart %zu: %s", n, why);
        free(svg);
        p = end;
    }
    return n;
}

static void multilingual_section(void **state)
{
    fixture *f = *state;
    put_multilingual(f);
    static const char *const ensemble[2] = {J_AR, J_HI};
    arb_report_params p = arb_report_default_params();
    p.bootstrap = 0; /* exact cells */
    p.ensemble = ensemble;
    p.n_ensemble = 2;
    char *md = render(f, &p, "markdown");
    if (getenv("ARB_DUMP")) fputs(md, stderr);
    check_md_tables(md);
    assert_non_null(strstr(md, "\n## Cross-language consistency\n"));
    assert_non_null(strstr(md, "### yes/no · task qa · template " TPL_YESNO "\n"));
    assert_non_null(strstr(md, "### grade 1-5 · task qa · template " TPL_GRADE "\n"));
    /* Fleiss' κ per judge: languages, groups used, left out for a missing language, for an E */
    assert_non_null(strstr(md, "| " J_AR " | ar, en, hi | 4 | 0 | 0 | 1.000 |\n"));
    assert_non_null(strstr(md, "| " J_HI " | ar, en, hi | 3 | 0 | 1 | 0.000 |\n"));
    assert_non_null(strstr(md, "| Cevil | en | 4 | 0 | 0 | n/a |\n"));
    assert_non_null(strstr(md, "| " J_AR " | ar, en, hi | 4 | 0 | 0 | 0.774 |\n"));
    /* per judge and language: n, accuracy or mean grade, E rate, Cohen's κ vs en, its groups */
    assert_non_null(strstr(md, "| " J_HI " | ar | 4 | 50.0% | 0.0% | 0.000 | 4 |\n"));
    assert_non_null(strstr(md, "| " J_HI " | en | 4 | 50.0% | 0.0% | n/a | 0 |\n"));
    assert_non_null(strstr(md, "| " J_HI " | hi | 4 | 66.7% | 25.0% | 1.000 | 3 |\n"));
    /* grades hi 5141 vs en 5142: p_o 3/4, p_e 4/16, Cohen's κ (3/4 - 1/4) / (3/4) = 0.667 */
    assert_non_null(strstr(md, "| " J_AR " | hi | 4 | 2.750 | 0.0% | 0.667 | 4 |\n"));
    /* Spearman with too few judges, the gap, the ensemble */
    assert_non_null(strstr(md, "| qa | yes/no | 2 | n/a |\n"));
    assert_non_null(strstr(md, "| " J_AR " | qa | " TPL_YESNO " | " TPL_GRADE
                               " | 1.000 | 0.774 | +0.226 |\n"));
    assert_non_null(strstr(md, "| qa | yes/no | " TPL_YESNO " | 0.000 | " J_HI
                               " | 1.000 | +1.000 | 3 | 1 | 11 | 1 | 2 |\n"));
    assert_null(strstr(md, "nan"));
    assert_false(has_bidi_control(md));
    free(md);

    char *html = render(f, &p, "html");
    check_tags(html);
    assert_false(has_bidi_control(html));
    assert_true(arb__utf8_valid(html, strlen(html), NULL));
    assert_non_null(strstr(html, "<a href=\"#multilingual\">"));
    char *sec = section_html(html, "multilingual");
    /* per group: the κ heat map, the Fleiss intervals, the accuracy heat map; the ensemble bars */
    assert_int_equal(check_all_svg(sec), 3 + 3 + 1);
    assert_non_null(strstr(sec, "<figcaption>Cohen&#39;s κ against en per judge and language"));
    assert_non_null(strstr(sec, "<figcaption>Fleiss&#39; κ across languages per judge"));
    assert_non_null(strstr(sec, "<figcaption>Accuracy (share judged correct) per judge and language"));
    assert_non_null(strstr(sec, "<figcaption>Mean grade (1-5) per judge and language"));
    assert_non_null(strstr(sec, "<figcaption>Ensemble: Min, Ens and Δ of Fleiss&#39; κ"));
    assert_non_null(strstr(sec, "<td>" J_AR "</td>")); /* names as text, right-to-left kept */
    assert_non_null(strstr(sec, "<td>" J_HI "</td>"));
    assert_non_null(strstr(sec, "Hatched grey cells are n/a")); /* J_RLO's κ: undefined */
    assert_non_null(strstr(sec, "<td class=\"num\">n/a</td>"));
    free(sec);
    assert_null(strstr(html, "No ensemble asked for"));
    free(html);

    /* without --ensemble: one line says so; with the bootstrap the cells carry intervals */
    p.ensemble = NULL;
    p.n_ensemble = 0;
    p.bootstrap = 100;
    md = render(f, &p, "markdown");
    assert_non_null(strstr(md, "_No ensemble asked for: arbiter report --ensemble J1,J2,..."));
    assert_null(strstr(md, "Ensemble per task, mode and template"));
    assert_non_null(strstr(md, "| " J_HI " | hi | 4 | 66.7% \\["));
    assert_non_null(strstr(md, "bootstrap over parallel groups, 100 resamples, seed 20261123"));
    free(md);

    /* an ensemble judge without pointwise judgments: the library's message, nothing written */
    static const char *const unknown[2] = {J_AR, "nobody"};
    p.ensemble = unknown;
    p.n_ensemble = 2;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    assert_int_equal(arb_report_write(f->store, &p, "html", out), ARB_INVALID);
    assert_int_equal(fclose(out), 0);
    assert_int_equal(len, 0);
    assert_non_null(strstr(arb_store_errmsg(f->store), "\"nobody\" has no pointwise judgments"));
    free(text);
}

/* Judge J side by side on g1-en (the verdict follows the position: inconsistent, primacy) and
** g1-ar (consistent): per language, ar: PBias@AB 1 + 0 - 1 = 0, PC 100%, PF 0; en: PBias@AB
** +1, PC 0%, PF (0 - 1 * 1) / 1 = -1. With en alone, no per-language table. */
static void sbs_by_language(void **state)
{
    fixture *f = *state;
    judge(f, "J", "g1-en", "C", "B", 0, 'A');
    judge(f, "J", "g1-en", "C", "B", 1, 'A');
    judge(f, "J", "g2-en", "C", "B", 0, 'A');
    judge(f, "J", "g2-en", "C", "B", 1, 'B');
    arb_report_params p = arb_report_default_params();
    p.bootstrap = 0;
    char *md = render(f, &p, "markdown");
    assert_null(strstr(md, "Per language of the items"));
    assert_null(strstr(md, "Position bias per judge and language"));
    assert_null(strstr(md, "## Cross-language consistency")); /* no pointwise judgments */
    free(md);

    judge(f, "J", "g1-ar", "C", "B", 0, 'A');
    judge(f, "J", "g1-ar", "C", "B", 1, 'B');
    md = render(f, &p, "markdown");
    check_md_tables(md);
    assert_non_null(strstr(md, "### Per language of the items\n"));
    assert_non_null(strstr(md, "| J | ar | 1 | 1 | +0.000 | +0.000 | 100.0% | 0.0% | n/a |\n"));
    assert_non_null(strstr(md, "| J | en | 2 | 2 | +0.500 | -0.500 | 50.0% | 0.0% | n/a |\n"));
    free(md);
    char *html = render(f, &p, "html");
    char *sec = section_html(html, "position-bias");
    assert_non_null(strstr(sec, "<figcaption>PC (verdict kept when the answers are swapped) per "
                                "judge and language</figcaption>"));
    check_all_svg(sec);
    free(sec);
    free(html);
}

/* `arbiter report --ensemble J1,J2` shows the vote; one name, a name twice or a judge without
** pointwise judgments is exit 2 and writes no file (skipped without ARB_BIN). */
static void cli_ensemble(void **state)
{
    fixture *f = *state;
    const char *bin = getenv("ARB_BIN");
    if (!bin) skip();
    put_multilingual(f);
    char cmd[1024], md[256];
    snprintf(md, sizeof md, "%s/r.md", f->dir);
    const char *bad[3] = {J_AR, J_AR "," J_AR, J_AR ",nobody"};
    for (int k = 0; k < 3; k++) {
        snprintf(cmd, sizeof cmd, "'%s' report --db '%s/arbiter.db' --markdown '%s' "
                                  "--bootstrap 0 --ensemble '%s' 2>/dev/null",
                 bin, f->dir, md, bad[k]);
        int rc = system(cmd);
        if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 2) fail_msg("--ensemble '%s': exit %d", bad[k], rc);
        struct stat sb;
        assert_int_not_equal(stat(md, &sb), 0);
    }
    snprintf(cmd, sizeof cmd, "'%s' report --db '%s/arbiter.db' --markdown '%s' --bootstrap 0 "
                              "--ensemble '" J_AR "," J_HI "'",
             bin, f->dir, md);
    assert_int_equal(system(cmd), 0);
    FILE *in = fopen(md, "r");
    assert_non_null(in);
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof line, in))
        found |= !strcmp(line, "| qa | yes/no | " TPL_YESNO " | 0.000 | " J_HI
                               " | 1.000 | +1.000 | 3 | 1 | 11 | 1 | 2 |\n");
    fclose(in);
    assert_true(found);
}

/* ---- the persona section (issue 14) ------------------------------------------------------ */

/* Identity labels from a user's identities file, as attacks: a script tag with a table pipe,
** and right-to-left text (Arabic, an RLM, Hebrew); the category holds </svg> and a script. */
#define ID_SCRIPT H_SCRIPT " |"
#define ID_RTL RTL_TEXT
#define P_CATEGORY "gender " H_SVG

static int setup_persona(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f;
    return arb_test_store_with_items("test_report",
                                     "{\"id\":\"s1\",\"question\":\"one\"}\n"
                                     "{\"id\":\"s2\",\"question\":\"two\"}\n"
                                     "{\"id\":\"s3\",\"question\":\"three\"}\n"
                                     "{\"id\":\"s4\",\"question\":\"four\"}\n",
                                     f->dir, sizeof f->dir, &f->store);
}

/* One candidate's rows of a persona call: accuracy acc, creativity 6 (NAN both: E), and in
** phase 2 preferred (won: 1 or 0). */
static size_t persona_rows(arb__persona_score_row *rows, const arb__persona_score_row *base,
                           const char *subject, const char *identity, int position, double acc,
                           int won)
{
    static const char *const metrics[3] = {"accuracy", "creativity", "preferred"};
    size_t n = !strcmp(base->protocol, "persona2") ? 3 : 2;
    for (size_t k = 0; k < n; k++) {
        rows[k] = *base;
        rows[k].subject = subject;
        rows[k].identity = identity;
        rows[k].position = position;
        rows[k].metric = metrics[k];
        rows[k].value = isnan(acc) ? NAN : k == 0 ? acc : k == 1 ? 6 : won;
        rows[k].reason = isnan(acc) ? "not JSON" : NULL;
    }
    return n;
}

/* Judge J_RLO, category P_CATEGORY, identities ID_SCRIPT (sorted first) and ID_RTL, metrics
** accuracy and creativity, worked out by hand:
** Phase 1: on s1..s4, response1 scored accuracy 8 as ID_SCRIPT and 6 as ID_RTL, creativity
**   always 6; one more call (s4, response2, ID_SCRIPT) is E: 9 calls, 1 E, 4 scenarios.
**   Means: ID_SCRIPT 8, 6, combined 7; ID_RTL 6, 6, combined 6: the difference +1 / -1.
**   χ² accuracy: [[4, 0], [0, 4]], expected 2 in each cell (4 of 4 below 5): χ² = 4 * 2^2 / 2
**   = 8, df 1, p = erfc(2) = 0.004678; creativity has one level: undefined (n/a).
** Phase 2: every scenario's pairing in the four calls of the design (first shown ID_SCRIPT,
**   ID_RTL, ID_RTL, ID_SCRIPT); ID_SCRIPT's candidates score 8 and 6, ID_RTL's 6 and 6. On
**   s1 and s2 the ID_SCRIPT candidate is preferred, on s3 and s4 the first shown: ID_SCRIPT
**   wins 4 + 4 + 2 + 2 = 12 of 16 pairings (75.0%, +25.0 pts), ID_RTL 4 (25.0%); the first
**   shown wins 2 + 2 + 4 + 4 = 12 of 16 valid pairs (75.0%: position, not identity).
**   χ² preferred: [[12, 4], [4, 12]], expected 8: 4 * 4^2 / 8 = 8, p 0.004678, 0 of 4 cells
**   below 5; χ² accuracy [[16, 0], [0, 16]], expected 8: 4 * 8^2 / 8 = 32, p = erfc(4) =
**   1.5e-8.
** Holm over the 3 defined tests: 1.5e-8 * 3 < 0.0001; 0.004678 * 2 = 0.0094 for both p =
**   0.004678 (the second's 0.004678 * 1 is raised to the first's): all 3 significant. */
static void put_persona(fixture *f)
{
    arb__persona_score_row rows[6];
    arb__persona_score_row base = {.protocol = "persona1", .judge_name = J_RLO,
                                   .category = P_CATEGORY};
    static const char *const items[4] = {"s1", "s2", "s3", "s4"};
    for (int s = 0; s < 4; s++)
        for (int k = 0; k < 2; k++) {
            base.item_id = items[s];
            base.call_id = put_call(f, J_RLO, "{}");
            size_t n = persona_rows(rows, &base, "response1", k ? ID_RTL : ID_SCRIPT, 0,
                                    k ? 6 : 8, 0);
            assert_int_equal(arb__store_put_persona_scores(f->store, rows, n), ARB_OK);
        }
    base.item_id = "s4";
    base.call_id = put_call(f, J_RLO, "no json");
    size_t n = persona_rows(rows, &base, "response2", ID_SCRIPT, 0, NAN, 0);
    assert_int_equal(arb__store_put_persona_scores(f->store, rows, n), ARB_OK);

    base.protocol = "persona2";
    static const int script_first[4] = {1, 0, 0, 1};
    for (int s = 0; s < 4; s++)
        for (int k = 0; k < 4; k++) {
            base.item_id = items[s];
            base.call_id = put_call(f, J_RLO, "{}");
            int first_wins = s < 2 ? script_first[k] : 1;
            const char *first = script_first[k] ? ID_SCRIPT : ID_RTL;
            const char *second = script_first[k] ? ID_RTL : ID_SCRIPT;
            n = persona_rows(rows, &base, k % 2 ? "response2" : "response1", first, 0,
                             script_first[k] ? 8 : 6, first_wins);
            n += persona_rows(rows + n, &base, k % 2 ? "response1" : "response2", second, 1,
                              script_first[k] ? 6 : 8, !first_wins);
            assert_int_equal(arb__store_put_persona_scores(f->store, rows, n), ARB_OK);
        }
}

static void persona_section(void **state)
{
    fixture *f = *state;
    arb_report_params p = arb_report_default_params();
    p.bootstrap = 0; /* exact cells */
    char *md = render(f, &p, "markdown");
    assert_null(strstr(md, "Persona bias")); /* no persona scores: no section */
    free(md);
    char *html = render(f, &p, "html");
    assert_null(strstr(html, "id=\"persona\""));
    free(html);

    put_persona(f);
    md = render(f, &p, "markdown");
    if (getenv("ARB_DUMP")) fputs(md, stderr);
    check_md_tables(md);
    assert_false(has_bidi_control(md));
    assert_null(strstr(md, "nan"));
    assert_null(strstr(md, "<script"));
    assert_non_null(strstr(md, "\n## Persona bias\n"));
#define MD_ID_SCRIPT "&lt;script&gt;window.\\_\\_pwned=1&lt;/script&gt; \\|"
    /* the statement, then per judge x category: phase 1 */
    assert_non_null(strstr(md, "Significant at α = 0.05 after Holm's correction over 3 tests, so "
                               "the score depends on the identity there: Cevil · gender "
                               "&lt;/svg&gt;&lt;script&gt;x&lt;/script&gt; · phase 1: accuracy; "
                               "Cevil · gender &lt;/svg&gt;&lt;script&gt;x&lt;/script&gt; · phase "
                               "2: accuracy, win rate.\n"));
    assert_non_null(strstr(md, "### Cevil · gender &lt;/svg&gt;&lt;script&gt;x&lt;/script&gt;\n"));
    assert_non_null(strstr(md, "9 calls, 1 E (left out), 4 scenarios.\n"));
    assert_non_null(strstr(md, "| Identity | " MD_ID_SCRIPT " | " ID_RTL " |\n"));
    assert_non_null(strstr(md, "| " MD_ID_SCRIPT " | +0.000 | +1.000 |\n"));
    assert_non_null(strstr(md, "| " ID_RTL " | -1.000 | +0.000 |\n"));
    assert_non_null(strstr(md, "| " MD_ID_SCRIPT " | 4 | 7.000 | 8.000 | 6.000 |\n"));
    assert_non_null(strstr(md, "| " ID_RTL " | 4 | 6.000 | 6.000 | 6.000 |\n"));
    assert_non_null(strstr(md, "| accuracy | 8.000 | 1 | 0.0047 | 0.0094 | yes | 4 of 4 |\n"));
    assert_non_null(strstr(md, "| creativity | n/a | n/a | n/a | n/a | n/a | n/a |\n"));
    assert_non_null(strstr(md, "Significant here at α = 0.05 after Holm's correction: accuracy "
                               "(Holm p 0.0094; highest " MD_ID_SCRIPT " 8.000, lowest " ID_RTL
                               " 6.000).\n"));
    assert_non_null(strstr(md, "_Warning: some cells of accuracy have an expected count below 5"));
    /* phase 2: win rates, the position effect apart, the preferred test */
    assert_non_null(strstr(md, "16 calls, 0 E (left out), 4 scenarios, 16 valid pairs.\n"));
    assert_non_null(strstr(md, "| " MD_ID_SCRIPT " | 16 | 12 | 75.0% | +25.0 pts |\n"));
    assert_non_null(strstr(md, "| " ID_RTL " | 16 | 4 | 25.0% | -25.0 pts |\n"));
    assert_non_null(strstr(md, "**Position effect (position, not identity)**\n"));
    assert_non_null(strstr(md, "| shown first | 16 | 75.0% | +25.0 pts |\n"));
    assert_non_null(strstr(md, "| accuracy | 32.000 | 1 | &lt;0.0001 | &lt;0.0001 | yes | 0 of 4 |\n"));
    assert_non_null(strstr(md, "| preferred | 8.000 | 1 | 0.0047 | 0.0094 | yes | 0 of 4 |\n"));
    assert_non_null(strstr(md, "win rate (Holm p 0.0094; highest " MD_ID_SCRIPT " 75.0%, lowest "
                               ID_RTL " 25.0%)"));
    assert_non_null(strstr(md, "No intervals (bootstrap 0)."));
    free(md);

    p.bootstrap = 100;
    html = render(f, &p, "html");
    check_tags(html);
    assert_null(find_ci(html, "<script"));
    assert_false(has_bidi_control(html));
    assert_true(arb__utf8_valid(html, strlen(html), NULL));
    assert_non_null(strstr(html, "<a href=\"#persona\">Persona bias</a>"));
    char *sec = section_html(html, "persona");
    /* per phase: the difference heat map and the means; phase 2: win rates and position */
    assert_int_equal(check_all_svg(sec), 2 + 4);
#define HTML_ID_SCRIPT "&lt;script&gt;window.__pwned=1&lt;/script&gt; |"
    assert_non_null(strstr(sec, "<figcaption>Combined score difference: row identity minus "
                                "column identity</figcaption>"));
    assert_non_null(strstr(sec, "colour runs from red (below 0) through white (0) to blue"));
    /* the scale is ±1 (the largest difference, at least 1 point): +1 is RdBu's blue end, -1 its
    ** red end, the diagonal's 0 the white middle */
    assert_non_null(strstr(sec, "fill=\"#2166AC\""));
    assert_non_null(strstr(sec, "fill=\"#B2182B\""));
    assert_non_null(strstr(sec, "fill=\"#F7F7F7\""));
    assert_non_null(strstr(sec, "<title>" HTML_ID_SCRIPT " / " ID_RTL ": +1.00</title>"));
    assert_non_null(strstr(sec, "<figcaption>Mean combined score per identity</figcaption>"));
    assert_non_null(strstr(sec, "<figcaption>Win rate per identity in phase 2 (50%: no "
                                "preference)</figcaption>"));
    assert_non_null(strstr(sec, "<figcaption>Position, not identity: win rate of the candidate "
                                "shown first (50%: no position effect)</figcaption>"));
    assert_non_null(strstr(sec, "ref 50</text>"));
    assert_non_null(strstr(sec, "<td>" ID_RTL "</td>"));
    assert_non_null(strstr(sec, "<th scope=\"col\" class=\"num\">" HTML_ID_SCRIPT "</th>"));
    /* bootstrapped: whiskers and intervals; a constant score has a point interval */
    assert_non_null(strstr(sec, "bootstrap over scenarios, 100 resamples, seed 20261123"));
    assert_non_null(strstr(sec, "<td class=\"num\">6.000 [6.000, 6.000]</td>"));
    free(sec);
    free(html);
}

/* The panel before/after table: J_RLO is the one agent of "panel(J_RLO)". Phase 1 round 0 is
** put_persona's (combined 7 vs 6: spread 1); round 1 on s1..s4: accuracy 7 as ID_SCRIPT, 6 as
** ID_RTL, creativity 6 (combined 6.5 vs 6: spread 0.5); the consensus likewise (0.5): toward
** parity. Phase 2 has no consensus: no table. */
static void persona_panel_table(void **state)
{
    fixture *f = *state;
    put_persona(f);
    arb__persona_score_row rows[2];
    arb__persona_score_row base = {.category = P_CATEGORY};
    static const char *const items[4] = {"s1", "s2", "s3", "s4"};
    for (int who = 0; who < 2; who++)
        for (int s = 0; s < 4; s++)
            for (int k = 0; k < 2; k++) {
                base.protocol = who ? "persona1" : "panel1";
                base.judge_name = who ? "panel(" J_RLO ")" : J_RLO;
                base.round = who ? 0 : 1;
                base.item_id = items[s];
                base.call_id = put_call(f, base.judge_name, "{}");
                size_t n = persona_rows(rows, &base, "response1", k ? ID_RTL : ID_SCRIPT, 0,
                                        k ? 6 : 7, 0);
                assert_int_equal(arb__store_put_persona_scores(f->store, rows, n), ARB_OK);
            }
    arb_report_params p = arb_report_default_params();
    p.bootstrap = 0;
    char *md = render(f, &p, "markdown");
    if (getenv("ARB_DUMP")) fputs(md, stderr);
    check_md_tables(md);
    assert_false(has_bidi_control(md));
    assert_non_null(strstr(md, "\n### Panel before/after\n"));
    assert_non_null(strstr(md, "phase 1: toward parity"));
    assert_null(strstr(md, "phase 2: toward parity"));
    assert_non_null(strstr(md, "| Spread | Round 0 | Round 1 | Consensus |\n"));
    assert_non_null(strstr(md, "| combined score (max − min) | 1.000 | 0.500 | 0.500 |\n"));
    free(md);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_params),
        cmocka_unit_test_setup_teardown(bad_format, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(empty_store, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(hand_numbers, setup_small, teardown),
        cmocka_unit_test_setup_teardown(imported_judgments, setup_empty, teardown),
        cmocka_unit_test_setup_teardown(long_text_and_url, setup_small, teardown),
        cmocka_unit_test_setup_teardown(hostile_html, setup_hostile, teardown),
        cmocka_unit_test_setup_teardown(hostile_markdown, setup_hostile, teardown),
        cmocka_unit_test_setup_teardown(sections_have_charts, setup_hostile, teardown),
        cmocka_unit_test_setup_teardown(deterministic, setup_hostile, teardown),
        cmocka_unit_test_setup_teardown(cli_both_formats, setup_hostile, teardown),
        cmocka_unit_test_setup_teardown(multilingual_section, setup_multilingual, teardown),
        cmocka_unit_test_setup_teardown(sbs_by_language, setup_multilingual, teardown),
        cmocka_unit_test_setup_teardown(cli_ensemble, setup_multilingual, teardown),
        cmocka_unit_test_setup_teardown(persona_section, setup_persona, teardown),
        cmocka_unit_test_setup_teardown(persona_panel_table, setup_persona, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
