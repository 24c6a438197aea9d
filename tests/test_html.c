/*
** test_html.c -- escaping for HTML and Markdown, and the SVG charts of html.c: exact escapes,
** charts that are well formed whatever the input (a small checker below stands in for an XML
** parser), hostile names that come out only as text, n/a instead of NaN, labels cut at code
** points, nice ticks, the heat map's ink on dark cells, and the same bytes for the same input.
*/
#include "internal.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "svg_check.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static const char *const hostile_script = "<script>alert(1)</script>";
static const char *const hostile_script_esc = "&lt;script&gt;alert(1)&lt;/script&gt;";
static const char *const hostile_img = "\"><img src=x onerror=alert(1)>";
static const char *const hostile_img_esc = "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;";
static const char *const hostile_cdata = "</svg>]]><![CDATA[x javascript:alert(1)";

/* Escapes s with fn into a fresh buffer and checks the result. */
static void expect_escape(int (*fn)(arb__buf *, const char *), const char *s, const char *want)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(fn(&b, s), 0);
    assert_string_equal(b.data ? b.data : "", want);
    arb__buf_free(&b);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0, len = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + len, needle)) n++;
    return n;
}

/* Asserts the chart in s is well formed, with a <title> and <desc> named by aria-labelledby,
** and that no hostile markup survived. */
static void assert_chart(const char *s)
{
    checker ck;
    const char *why = check_svg(&ck, s);
    if (why) fail_msg("%s\n%s", why, s);
    assert_non_null(strstr(s, "role=\"img\""));
    assert_non_null(strstr(s, "-title\">"));
    assert_non_null(strstr(s, "-desc\">"));
    assert_false(contains_ci(s, "<script"));
    assert_false(contains_ci(s, "<img"));
    assert_false(contains_ci(s, "<![CDATA["));
    assert_false(contains_ci(s, "]]>"));
}

/* ---- escaping ----------------------------------------------------------------------------- */

/* Each of & < > " ' has its entity; other ASCII and valid UTF-8 pass unchanged. */
static void html_text_escapes_each_special(void **state)
{
    (void)state;
    expect_escape(arb__html_text, "&", "&amp;");
    expect_escape(arb__html_text, "<", "&lt;");
    expect_escape(arb__html_text, ">", "&gt;");
    expect_escape(arb__html_text, "\"", "&quot;");
    expect_escape(arb__html_text, "'", "&#39;");
    expect_escape(arb__html_text, "a&b<c>d\"e'f", "a&amp;b&lt;c&gt;d&quot;e&#39;f");
    expect_escape(arb__html_text, "&amp;", "&amp;amp;"); /* no double-escape shortcut */
    expect_escape(arb__html_text, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    expect_escape(arb__html_text, hostile_img, hostile_img_esc);
    expect_escape(arb__html_text, hostile_script, hostile_script_esc);
    expect_escape(arb__html_text, "]]>", "]]&gt;");
    expect_escape(arb__html_text, "", "");
}

/* Every byte that does not start a valid sequence becomes U+FFFD (EF BF BD), one per byte:
** a lone 0xFF, a truncated 3-byte sequence (2 bytes -> 2 replacements), an overlong '/'
** (C0 AF -> 2), a surrogate (ED A0 80 -> 3), above U+10FFFF (F4 90 80 80 -> 4). U+FFFE and
** U+FFFF (not XML characters) become U+FFFD too; a real U+FFFD stays. */
static void html_text_replaces_invalid_utf8(void **state)
{
    (void)state;
    expect_escape(arb__html_text, "a\xff" "b", "a\xef\xbf\xbd" "b");
    expect_escape(arb__html_text, "x\xe2\x82", "x\xef\xbf\xbd\xef\xbf\xbd");
    expect_escape(arb__html_text, "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd");
    expect_escape(arb__html_text, "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    expect_escape(arb__html_text, "\xf4\x90\x80\x80",
                  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    expect_escape(arb__html_text, "\xef\xbf\xbe\xef\xbf\xbf", "\xef\xbf\xbd\xef\xbf\xbd");
    expect_escape(arb__html_text, "\xef\xbf\xbd", "\xef\xbf\xbd");
    /* the bad byte is replaced, the '<' after it still escaped */
    expect_escape(arb__html_text, "\xc3<", "\xef\xbf\xbd&lt;");
}

/* C0 controls but tab and newline, DEL, and C1 controls (C2 80 .. C2 9F) are dropped; U+00A0
** (C2 A0) is text and stays. */
static void html_text_drops_controls(void **state)
{
    (void)state;
    expect_escape(arb__html_text, "a\x01" "b\x1b[2Jc\x7f" "d\xc2\x80" "e\xc2\x9f" "f\tg\nh\ri",
                  "ab[2Jcdef\tg\nhi");
    expect_escape(arb__html_text, "\xc2\xa0", "\xc2\xa0");
    expect_escape(arb__html_text, "\x1f\x7f", "");
}

/* The explicit bidirectional controls (LRE RLE PDF LRO RLO, U+202A..U+202E; LRI RLI FSI PDI,
** U+2066..U+2069) are dropped in every mode; their neighbours U+2029 and U+202F, U+2065 and
** U+206A stay, and so do right-to-left letters and the implicit marks LRM, RLM (U+200E, U+200F)
** and ALM (U+061C) that right-to-left text uses. */
static void bidi_controls_dropped(void **state)
{
    (void)state;
    /* "[[A]]" after an RLO would show as "]]A[[" */
    static const char rlo_attack[] = "verdict \xe2\x80\xae]]B[[\xe2\x80\xac [[A]]";
    expect_escape(arb__html_text, rlo_attack, "verdict ]]B[[ [[A]]");
    expect_escape(arb__html_attr, rlo_attack, "verdict ]]B[[ [[A]]");
    expect_escape(arb__md_text, rlo_attack, "verdict \\]\\]B\\[\\[ \\[\\[A\\]\\]");
    expect_escape(arb__html_text,
                  "a\xe2\x80\xaa" "b\xe2\x80\xab" "c\xe2\x80\xac" "d\xe2\x80\xad"
                  "e\xe2\x80\xae" "f\xe2\x81\xa6" "g\xe2\x81\xa7" "h\xe2\x81\xa8"
                  "i\xe2\x81\xa9" "j",
                  "abcdefghij");
    /* the neighbours of both ranges are kept */
    expect_escape(arb__html_text, "\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa",
                  "\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa");
    /* Arabic and Hebrew with LRM, RLM and ALM come through unchanged */
    static const char rtl[] = "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7 5\xe2\x80\x8f "
                              "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d\xe2\x80\x8e x\xd8\x9c";
    expect_escape(arb__html_text, rtl, rtl);
    expect_escape(arb__html_attr, rtl, rtl);
    expect_escape(arb__md_text, rtl, rtl);
    /* only controls: nothing left */
    expect_escape(arb__html_text, "\xe2\x80\xae\xe2\x81\xa6", "");
}

/* In an attribute tab and newline are character references (attribute values fold them). */
static void html_attr_escapes_tab_and_newline(void **state)
{
    (void)state;
    expect_escape(arb__html_attr, "a\tb\nc\"d'<>&\x07", "a&#9;b&#10;c&quot;d&#39;&lt;&gt;&amp;");
    expect_escape(arb__html_attr, hostile_img, hostile_img_esc);
}

/* NULL writes nothing; text is appended after what the buffer holds. */
static void null_writes_nothing(void **state)
{
    (void)state;
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__buf_puts(&b, "x"), 0);
    assert_int_equal(arb__html_text(&b, NULL), 0);
    assert_int_equal(arb__html_attr(&b, NULL), 0);
    assert_int_equal(arb__md_text(&b, NULL), 0);
    assert_string_equal(b.data, "x");
    assert_int_equal(arb__html_text(&b, "<"), 0);
    assert_string_equal(b.data, "x&lt;");
    arb__buf_free(&b);
}

/* Markdown: | \ ` * _ [ ] # get a backslash, & < > " ' are entities, newline is <br>. */
static void md_text_escapes_markdown(void **state)
{
    (void)state;
    expect_escape(arb__md_text, "a|b", "a\\|b");
    expect_escape(arb__md_text, "\\", "\\\\");
    expect_escape(arb__md_text, "|\\`*_[]#", "\\|\\\\\\`\\*\\_\\[\\]\\#");
    expect_escape(arb__md_text, "line 1\nline 2", "line 1<br>line 2");
    /* quotes stay as they are in Markdown text: with < and > escaped no tag can open */
    expect_escape(arb__md_text, "<b>&\"'", "&lt;b&gt;&amp;\"'");
    expect_escape(arb__md_text, "[x](javascript:alert(1))", "\\[x\\](javascript:alert(1))");
    expect_escape(arb__md_text, "# h\r\n**b**", "\\# h<br>\\*\\*b\\*\\*");
    /* GitHub renders $...$ as maths and ~~...~~ as strikethrough */
    expect_escape(arb__md_text, "$1.10 ~~x~~", "\\$1.10 \\~\\~x\\~\\~");
    expect_escape(arb__md_text, "\xff|", "\xef\xbf\xbd\\|");
}

/* A buffer that cannot grow: the call fails and leaves the buffer as it was. */
static void failure_leaves_buffer(void **state)
{
    (void)state;
    arb__buf b;
    arb__buf_init(&b, 16);
    assert_int_equal(arb__buf_puts(&b, "abc"), 0);
    assert_int_equal(arb__html_text(&b, "<<<<<<<<<<<<<<<<"), -1);
    assert_string_equal(b.data, "abc");
    assert_int_equal(b.len, 3);
    const char *labels[] = {"x"};
    double v[] = {1};
    assert_int_equal(arb__svg_bars(&b, "t", "axis", labels, 1, v), -1);
    assert_string_equal(b.data, "abc");
    assert_int_equal(b.len, 3);
    arb__buf_free(&b);
}

/* ---- charts ------------------------------------------------------------------------------- */

/* Shares: segments of 6% or more print their rounded percentage, narrower ones do not; an
** all-NaN row is a hatched n/a bar, a partly NaN row gets an n/a mark; hostile names are only
** text. */
static void stacked_bars_chart(void **state)
{
    (void)state;
    const char *rows[] = {"run 1", hostile_img, "nothing", "partial"};
    const char *cats[] = {"a", "b", hostile_script};
    const double shares[] = {0.55, 0.05, 0.37, 0.25, 0.30, 0.45, NAN, NAN, NAN, 0.5, NAN, 0.2};
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__svg_stacked_bars(&b, hostile_script, rows, 4, cats, 3, shares), 0);
    assert_chart(b.data);
    assert_non_null(strstr(b.data, "-title\">&lt;script&gt;alert(1)&lt;/script&gt;</title>"));
    assert_non_null(strstr(b.data, hostile_img_esc));
    assert_non_null(strstr(b.data, ">55%</text>"));
    assert_non_null(strstr(b.data, ">37%</text>"));
    assert_null(strstr(b.data, ">5%</text>")); /* 5% < 6%: too narrow for text */
    /* percentages drawn as text: 6 ticks (0%, 20%, ..., 100%), row 1: 55%, 37%; row 2: 25%,
    ** 30%, 45%; row 3: none; row 4: 50%, 20% -> 6 + 2 + 3 + 2 = 13 */
    assert_int_equal(count(b.data, "%</text>"), 13);
    assert_non_null(strstr(b.data, ">100%</text>"));
    assert_non_null(strstr(b.data, ">n/a</text>"));
    assert_non_null(strstr(b.data, "-na)\""));  /* hatched */
    /* hover text keeps one decimal: 5% is there for the pointer */
    assert_non_null(strstr(b.data, "run 1 \xE2\x80\x94 b: 5.0%</title>"));
    /* Okabe-Ito colours in order */
    assert_non_null(strstr(b.data, "fill=\"#E69F00\""));
    assert_non_null(strstr(b.data, "fill=\"#56B4E9\""));
    assert_non_null(strstr(b.data, "fill=\"#009E73\""));
    arb__buf_free(&b);
}

/* The heat map: cell colours from the light-to-dark blue scale, dark ink on light cells and
** white ink on dark ones, n/a cells, long column names turned, a bad format replaced. */
static void heatmap_chart(void **state)
{
    (void)state;
    const char *rows[] = {"judge A", hostile_script};
    const char *cols[] = {"c1", "c2", "a much longer column name that must turn"};
    const double values[] = {0, 1, NAN, 0.5, 0.25, 1};
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__svg_heatmap(&b, "Consistency", rows, 2, cols, 3, values, 0, 1,
                                      "%.0f%%", 100), 0);
    assert_chart(b.data);
    /* 0 -> the light end #F7FBFF, dark ink; 1 -> the dark end #08306B (relative luminance
    ** 0.2126*0.0024 + 0.7152*0.0296 + 0.0722*0.147 = 0.032 < 0.179), white ink */
    assert_non_null(strstr(b.data, "fill=\"#F7FBFF\""));
    assert_non_null(strstr(b.data, "fill=\"#08306B\""));
    assert_non_null(strstr(b.data, "fill=\"#1A1A1A\">0%</text>"));
    assert_non_null(strstr(b.data, "fill=\"#FFFFFF\">100%</text>"));
    /* 0.5 -> the middle stop #6BAED6 (luminance about 0.50): dark ink */
    assert_non_null(strstr(b.data, "fill=\"#6BAED6\""));
    assert_non_null(strstr(b.data, "fill=\"#1A1A1A\">50%</text>"));
    /* 0.25 -> halfway from F7FBFF to 6BAED6: (247+107)/2 = 177 = B1, (251+174)/2 = 212.5 ->
    ** 213 = D5, (255+214)/2 = 234.5 -> 235 = EB */
    assert_non_null(strstr(b.data, "fill=\"#B1D5EB\""));
    assert_non_null(strstr(b.data, ">25%</text>"));
    assert_non_null(strstr(b.data, "n/a"));
    assert_non_null(strstr(b.data, "rotate(-45"));
    assert_non_null(strstr(b.data, hostile_script_esc));
    /* the legend's ends, formatted like the cells */
    assert_non_null(strstr(b.data, "-ramp)\""));

    /* "%s" would read a pointer that is not there: refused, "%.2f" of value * scale instead */
    const double one[] = {0.5};
    arb__buf_reset(&b);
    assert_int_equal(arb__svg_heatmap(&b, "t", rows, 1, cols, 1, one, 0, 1, "%s", 1), 0);
    assert_chart(b.data);
    assert_non_null(strstr(b.data, ">0.50</text>"));
    arb__buf_reset(&b);
    assert_int_equal(arb__svg_heatmap(&b, "t", rows, 1, cols, 1, one, 0, 1, "%+.1f pts", 10), 0);
    assert_non_null(strstr(b.data, ">+5.0 pts</text>"));
    /* lo, hi undefined: the data's range; all cells undefined: still a chart */
    const double nans[] = {NAN, NAN};
    arb__buf_reset(&b);
    assert_int_equal(arb__svg_heatmap(&b, "t", rows, 1, cols, 2, nans, NAN, NAN, NULL, 1), 0);
    assert_chart(b.data);
    assert_non_null(strstr(b.data, ">n/a</text>"));
    arb__buf_free(&b);
}

/* The diverging heat map (signed differences): ColorBrewer's RdBu centred at 0, -h red, 0 the
** near-white middle, +h blue; h the largest |value| when not given, else as given; the
** legend marks both ends and the centre. */
static void heatmap_diverging_chart(void **state)
{
    (void)state;
    const char *rows[] = {"female", hostile_script};
    const char *cols[] = {"female", hostile_script};
    const double values[] = {0, 2, -2, NAN};
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__svg_heatmap_diverging(&b, "Difference", rows, 2, cols, 2, values, NAN,
                                                "%+.2f", 1), 0);
    assert_chart(b.data);
    assert_non_null(strstr(b.data, "colour runs from red (below 0) through white (0) to blue"));
    /* 0 -> #F7F7F7 with dark ink; +2 -> #2166AC and -2 -> #B2182B, both dark enough for white
    ** ink (luminance 0.13 and 0.10 < 0.179) */
    assert_non_null(strstr(b.data, "fill=\"#F7F7F7\" stroke=\"#FFFFFF\"/><text"));
    assert_non_null(strstr(b.data, "fill=\"#1A1A1A\">+0.00</text>"));
    assert_non_null(strstr(b.data, "fill=\"#2166AC\""));
    assert_non_null(strstr(b.data, "fill=\"#FFFFFF\">+2.00</text>"));
    assert_non_null(strstr(b.data, "fill=\"#B2182B\""));
    assert_non_null(strstr(b.data, "fill=\"#FFFFFF\">-2.00</text>"));
    assert_non_null(strstr(b.data, "<stop offset=\"0.5\" stop-color=\"#F7F7F7\"/>"));
    assert_non_null(strstr(b.data, ">-2.00</text>\n")); /* legend: -2, 0, +2 */
    assert_non_null(strstr(b.data, ">+0.00</text>\n"));
    assert_non_null(strstr(b.data, ">+2.00</text>\n"));
    assert_non_null(strstr(b.data, hostile_script_esc));
    assert_non_null(strstr(b.data, "Hatched grey cells are n/a"));
    /* a given half-range of 4: +2 is halfway from white to blue: (247+33)/2 = 140 = 8C,
    ** (247+102)/2 = 174.5 -> 175 = AF, (247+172)/2 = 209.5 -> 210 = D2 */
    arb__buf_reset(&b);
    assert_int_equal(arb__svg_heatmap_diverging(&b, "Difference", rows, 2, cols, 2, values, 4,
                                                "%+.2f", 1), 0);
    assert_chart(b.data);
    assert_non_null(strstr(b.data, "fill=\"#8CAFD2\""));
    assert_null(strstr(b.data, "fill=\"#2166AC\" stroke"));
    assert_non_null(strstr(b.data, ">+4.00</text>\n"));
    /* every value 0 (or none): the scale is -1..+1 and every cell the white middle */
    const double zeros[] = {0, 0, 0, 0};
    arb__buf_reset(&b);
    assert_int_equal(arb__svg_heatmap_diverging(&b, "t", rows, 2, cols, 2, zeros, NAN, NULL, 1),
                     0);
    assert_chart(b.data);
    assert_non_null(strstr(b.data, ">1.00</text>\n"));
    assert_null(strstr(b.data, "#2166AC\" stroke"));
    arb__buf_free(&b);
}

/* Intervals: the axis covers -0.3..0.5 with nice ticks -0.4, -0.2, ..., 0.6 (range 0.8 ->
** nice 1, step 1/5 = 0.2; floor(-0.3/0.2) = -2, ceil(0.5/0.2) = 3); rows in the given order;
** the reference line; n/a for an undefined value. */
static void intervals_chart(void **state)
{
    (void)state;
    const char *labels[] = {"first", hostile_script, "third"};
    const double value[] = {0.1, -0.3, NAN}, lo[] = {0.0, NAN, NAN}, hi[] = {0.5, NAN, NAN};
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__svg_intervals(&b, "PBias", hostile_img, labels, 3, value, lo, hi, 0),
                     0);
    assert_chart(b.data);
    const char *ticks[] = {">-0.4</text>", ">-0.2</text>", ">0.0</text>", ">0.2</text>",
                           ">0.4</text>", ">0.6</text>"};
    for (size_t k = 0; k < 6; k++) assert_non_null(strstr(b.data, ticks[k]));
    assert_null(strstr(b.data, ">0.8</text>"));
    assert_null(strstr(b.data, ">-0.6</text>"));
    const char *p1 = strstr(b.data, ">first</text>");
    const char *p2 = strstr(b.data, hostile_script_esc);
    const char *p3 = strstr(b.data, ">third</text>");
    assert_non_null(p1);
    assert_non_null(p2);
    assert_non_null(p3);
    assert_true(p1 < p2 && p2 < p3);
    assert_non_null(strstr(b.data, "stroke-dasharray"));
    assert_non_null(strstr(b.data, ">ref 0</text>"));
    /* values one decimal finer than the ticks */
    assert_non_null(strstr(b.data, ">0.10</text>"));
    assert_non_null(strstr(b.data, ">-0.30</text>"));
    assert_non_null(strstr(b.data, "first: 0.10 [0.00, 0.50]</title>"));
    assert_non_null(strstr(b.data, ">n/a</text>"));
    assert_non_null(strstr(b.data, hostile_img_esc)); /* the axis name */
    arb__buf_free(&b);
}

/* Bars from zero: 0.3 and 1.0 give the axis 0..1 in steps of 0.2 (range 1 -> nice 1, step
** 1/5 = 0.2), values at the bars' ends; a negative bar extends the axis below zero. */
static void bars_chart(void **state)
{
    (void)state;
    const char *labels[] = {"w1", "w2", hostile_img};
    const double values[] = {0.3, 1.0, NAN};
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__svg_bars(&b, "Weights", "weight", labels, 3, values), 0);
    assert_chart(b.data);
    const char *ticks[] = {">0.0</text>", ">0.2</text>", ">0.4</text>", ">0.6</text>",
                           ">0.8</text>", ">1.0</text>"};
    for (size_t k = 0; k < 6; k++) assert_non_null(strstr(b.data, ticks[k]));
    assert_null(strstr(b.data, ">1.2</text>"));
    assert_non_null(strstr(b.data, ">0.30</text>"));
    assert_non_null(strstr(b.data, ">1.00</text>"));
    assert_non_null(strstr(b.data, ">n/a</text>"));
    assert_non_null(strstr(b.data, ">weight</text>"));

    /* -0.5 and 0.25: range 0.75 -> nice 1, step 0.2, floor(-0.5/0.2) = -3 -> -0.6,
    ** ceil(0.25/0.2) = 2 -> 0.4 */
    const double mixed[] = {-0.5, 0.25};
    arb__buf_reset(&b);
    assert_int_equal(arb__svg_bars(&b, "t", NULL, labels, 2, mixed), 0);
    assert_chart(b.data);
    assert_non_null(strstr(b.data, ">-0.6</text>"));
    assert_non_null(strstr(b.data, ">0.4</text>"));
    assert_null(strstr(b.data, ">0.6</text>"));
    assert_non_null(strstr(b.data, ">-0.50</text>"));

    /* No number the axis could use: never inf, still a chart. */
    const double wild[] = {INFINITY, -INFINITY, 1e300, DBL_MAX, -DBL_MAX};
    arb__buf_reset(&b);
    assert_int_equal(arb__svg_bars(&b, "t", "x", NULL, 5, wild), 0);
    assert_chart(b.data);
    /* Elo-sized values: whole-number ticks, values without decimals */
    const double elo[] = {1012.4, 1234.6};
    arb__buf_reset(&b);
    assert_int_equal(arb__svg_bars(&b, "t", "Elo", labels, 2, elo), 0);
    assert_chart(b.data);
    assert_non_null(strstr(b.data, ">1235</text>"));
    arb__buf_free(&b);
}

/* Lines: a NaN breaks a series into separate polylines; x ticks on whole points 1..5. */
static void lines_chart(void **state)
{
    (void)state;
    const char *series[] = {"A", hostile_img};
    const double values[] = {1, 2, NAN, 4, 5, 2, 2, 2, 2, 2};
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__svg_lines(&b, "Elo trend", hostile_script, "rating", series, 2,
                                    values, 5), 0);
    assert_chart(b.data);
    /* A: runs 1-2 and 4-5 -> 2 polylines; B: one run -> 1 */
    assert_int_equal(count(b.data, "<polyline"), 3);
    assert_non_null(strstr(b.data, "gaps: n/a"));
    /* x: range 4 -> nice 5, step 5/7 = 0.71 -> 1: ticks 1..5 */
    for (int k = 1; k <= 5; k++) {
        char want[64];
        snprintf(want, sizeof want, "middle\" font-size=\"11\" fill=\"#444444\">%d</text>", k);
        assert_non_null(strstr(b.data, want));
    }
    assert_non_null(strstr(b.data, hostile_script_esc));
    assert_non_null(strstr(b.data, hostile_img_esc));
    assert_non_null(strstr(b.data, "rotate(-90"));

    /* Lone points: no polyline, a marker each (series 0 draws circles; one more circle is the
    ** legend's swatch) -> 2 + 1 circles */
    const double lone[] = {1, NAN, 3};
    arb__buf_reset(&b);
    assert_int_equal(arb__svg_lines(&b, "t", NULL, NULL, series, 1, lone, 3), 0);
    assert_chart(b.data);
    assert_int_equal(count(b.data, "<polyline"), 0);
    assert_int_equal(count(b.data, "<circle"), 3);
    /* A single point and a constant series */
    const double single[] = {0.7};
    arb__buf_reset(&b);
    assert_int_equal(arb__svg_lines(&b, "t", "x", "y", series, 1, single, 1), 0);
    assert_chart(b.data);
    arb__buf_free(&b);
}

/* A label too long for its column is cut with "…" at a code point, the whole label in a
** <title>: 60 CJK characters of one em (12 units at font size 12) in a 200-unit column keep
** floor((200 - 12 for the ellipsis) / 12) = 15 characters. */
static void labels_cut_at_code_points(void **state)
{
    (void)state;
    char wide[60 * 3 + 1] = "", cut[15 * 3 + 1] = "";
    for (int k = 0; k < 60; k++) strcat(wide, "\xe6\x97\xa5"); /* U+65E5 */
    for (int k = 0; k < 15; k++) strcat(cut, "\xe6\x97\xa5");
    char mixed[400] = "";
    for (int k = 0; k < 50; k++) strcat(mixed, k % 7 ? "\xc3\xa9" : "\xf0\x9f\x98\x80\xff");
    const char *labels[] = {wide, mixed};
    const double values[] = {1, 2};
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__svg_bars(&b, "t", "x", labels, 2, values), 0);
    assert_chart(b.data); /* includes: valid UTF-8 */
    char want[400];
    snprintf(want, sizeof want, "<title>%s</title>%s\xe2\x80\xa6</text>", wide, cut);
    assert_non_null(strstr(b.data, want));
    assert_non_null(strstr(b.data, "\xef\xbf\xbd")); /* the 0xFF bytes */
    arb__buf_free(&b);
}

/* The same input gives the same bytes; two charts in one buffer get different ids (the
** checker refuses duplicate ids). */
static void charts_are_deterministic(void **state)
{
    (void)state;
    const char *labels[] = {"a", "b"};
    const double values[] = {0.2, NAN};
    arb__buf b1, b2;
    arb__buf_init(&b1, 0);
    arb__buf_init(&b2, 0);
    assert_int_equal(arb__svg_bars(&b1, "same", "x", labels, 2, values), 0);
    assert_int_equal(arb__svg_bars(&b2, "same", "x", labels, 2, values), 0);
    assert_string_equal(b1.data, b2.data);
    size_t first_len = b1.len;
    assert_int_equal(arb__svg_bars(&b1, "same", "x", labels, 2, values), 0);
    assert_int_equal(arb__svg_intervals(&b1, "same", "x", labels, 2, values, NULL, NULL, NAN),
                     0);
    assert_chart(b1.data);
    const char *id1 = strstr(b1.data, "aria-labelledby=\""), *id2 = strstr(b1.data + first_len,
                                                                         "aria-labelledby=\"");
    assert_non_null(id1);
    assert_non_null(id2);
    assert_true(strncmp(id1, id2, 40) != 0);
    arb__buf_free(&b1);
    arb__buf_free(&b2);
}

/* Nothing to draw, or NULL arrays: a well-formed chart that says so. */
static void empty_charts(void **state)
{
    (void)state;
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__svg_stacked_bars(&b, NULL, NULL, 0, NULL, 0, NULL), 0);
    assert_int_equal(arb__svg_heatmap(&b, "t", NULL, 0, NULL, 0, NULL, 0, 1, "%.1f", 1), 0);
    assert_int_equal(arb__svg_intervals(&b, "t", NULL, NULL, 0, NULL, NULL, NULL, NAN), 0);
    assert_int_equal(arb__svg_bars(&b, "t", NULL, NULL, 0, NULL), 0);
    assert_int_equal(arb__svg_lines(&b, "t", NULL, NULL, NULL, 0, NULL, 0), 0);
    assert_chart(b.data);
    assert_int_equal(count(b.data, "<svg "), 5);
    assert_int_equal(count(b.data, ">no data</text>"), 5);
    /* rows but no arrays: every value n/a */
    arb__buf_reset(&b);
    assert_int_equal(arb__svg_bars(&b, "t", NULL, NULL, 2, NULL), 0);
    assert_int_equal(arb__svg_stacked_bars(&b, "t", NULL, 2, NULL, 2, NULL), 0);
    assert_int_equal(arb__svg_lines(&b, "t", NULL, NULL, NULL, 2, NULL, 3), 0);
    assert_chart(b.data);
    assert_non_null(strstr(b.data, "n/a"));
    arb__buf_free(&b);
}

/* Untrusted text in every place a chart writes text, including control characters. */
static void hostile_text_everywhere(void **state)
{
    (void)state;
    const char *names[] = {hostile_script, hostile_img, hostile_cdata, "\x1b[31mred\x07\xc2\x9b"};
    const double v[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 0.0, 0.5,
                        0.1, 0.2, 0.3, 0.4};
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__svg_stacked_bars(&b, hostile_cdata, names, 4, names, 4, v), 0);
    assert_int_equal(arb__svg_heatmap(&b, hostile_cdata, names, 4, names, 4, v, 0, 1,
                                      hostile_script, 1), 0);
    assert_int_equal(arb__svg_intervals(&b, hostile_cdata, hostile_cdata, names, 4, v, v, v,
                                        0.5), 0);
    assert_int_equal(arb__svg_bars(&b, hostile_cdata, hostile_script, names, 4, v), 0);
    assert_int_equal(arb__svg_lines(&b, hostile_cdata, hostile_img, hostile_script, names, 4, v,
                                    4), 0);
    assert_chart(b.data);
    assert_null(strstr(b.data, "\x1b"));
    assert_non_null(strstr(b.data, "[31mred"));
    assert_non_null(strstr(b.data, "&lt;/svg&gt;]]&gt;&lt;![CDATA[x javascript:alert(1)"));
    arb__buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(html_text_escapes_each_special),
        cmocka_unit_test(html_text_replaces_invalid_utf8),
        cmocka_unit_test(html_text_drops_controls),
        cmocka_unit_test(bidi_controls_dropped),
        cmocka_unit_test(html_attr_escapes_tab_and_newline),
        cmocka_unit_test(null_writes_nothing),
        cmocka_unit_test(md_text_escapes_markdown),
        cmocka_unit_test(failure_leaves_buffer),
        cmocka_unit_test(stacked_bars_chart),
        cmocka_unit_test(heatmap_chart),
        cmocka_unit_test(heatmap_diverging_chart),
        cmocka_unit_test(intervals_chart),
        cmocka_unit_test(bars_chart),
        cmocka_unit_test(lines_chart),
        cmocka_unit_test(labels_cut_at_code_points),
        cmocka_unit_test(charts_are_deterministic),
        cmocka_unit_test(empty_charts),
        cmocka_unit_test(hostile_text_everywhere),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
