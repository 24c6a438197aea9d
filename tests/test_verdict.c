/*
** test_verdict.c -- verdict extraction (METHODS §2.4): each rule, its order, its failures, and
** the position-to-model mapping of §2.2; pointwise values (§8): formats, strict values, malformed
** tags, several answers, echoes of the instructions.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "arbiter.h"

static char ex(const char *text, int options)
{
    return arb_verdict_extract(text, strlen(text), options, NULL);
}

static char exj(const char *text, int options, const char *field)
{
    return arb_verdict_extract(text, strlen(text), options, field);
}

static void edge_cases(void **state)
{
    (void)state;
    assert_int_equal(ex("", 4), 'E');
    assert_int_equal(ex("   \n\n \t", 4), 'E');
    assert_int_equal(arb_verdict_extract(NULL, 0, 4, NULL), 'E');
    assert_int_equal(ex("[[A]]", 1), 'E'); /* mode outside 2..4 */
    assert_int_equal(ex("[[A]]", 5), 'E');
    assert_int_equal(ex("[[", 4), 'E');
    assert_int_equal(ex("[[A]", 4), 'E');
    assert_int_equal(ex("I cannot help with that.", 4), 'E');
    assert_int_equal(ex("Both are fine, a tie.", 3), 'E');
}

/* len is honoured: bytes after it are never read, and a NUL inside the text is just a byte. */
static void length_not_nul(void **state)
{
    (void)state;
    const char text[] = {'[', '[', 'B', ']', ']', '\n', '[', '[', 'A', ']', ']'};
    assert_int_equal(arb_verdict_extract(text, sizeof text, 4, NULL), 'A');
    assert_int_equal(arb_verdict_extract(text, 5, 4, NULL), 'B');
    assert_int_equal(arb_verdict_extract(text, 4, 4, NULL), 'E');
    const char with_nul[] = {'x', '\0', 'y', '\n', 'C'};
    assert_int_equal(arb_verdict_extract(with_nul, sizeof with_nul, 4, NULL), 'C');
}

static void rule1_brackets(void **state)
{
    (void)state;
    assert_int_equal(ex("[[A]]", 2), 'A');
    assert_int_equal(ex("Reasoning...\nFinal verdict: [[B]]", 2), 'B');
    assert_int_equal(ex("[[c]]", 3), 'C');
    assert_int_equal(ex("[[D]] is my verdict, after all.", 4), 'D');
    /* The last bracket wins, even when the text first said something else on an earlier
    ** line (on the same line, two options are an echo: see echoed_options). */
    assert_int_equal(ex("At first [[A]].\nBut on reflection [[B]].\nDone", 4), 'B');
    /* Numbers map to A..D within the mode. */
    assert_int_equal(ex("[[1]]", 2), 'A');
    assert_int_equal(ex("[[2]]", 2), 'B');
    assert_int_equal(ex("[[4]]", 4), 'D');
    /* Malformed brackets are not brackets: rule 2 then decides. */
    assert_int_equal(ex("[[ A ]]\nB", 4), 'B');
    assert_int_equal(ex("[[AB]]\nB", 4), 'B');
    assert_int_equal(ex("[[-]]\nA", 4), 'A');
}

/* A last bracket outside the mode is E: no fallback to an earlier bracket or a later rule. */
static void rule1_invalid_is_final(void **state)
{
    (void)state;
    assert_int_equal(ex("[[D]]", 3), 'E');
    assert_int_equal(ex("[[A]] ... no wait, [[D]]", 3), 'E');
    assert_int_equal(ex("[[C]]", 2), 'E');
    assert_int_equal(ex("[[3]]", 2), 'E');
    assert_int_equal(ex("[[0]]", 4), 'E');
    assert_int_equal(ex("[[9]]", 4), 'E');
    assert_int_equal(ex("[[Z]]\nA", 4), 'E');
    assert_int_equal(ex("[[E]]", 4), 'E');
    assert_int_equal(exj("{\"verdict\":\"A\"} [[D]]", 3, "verdict"), 'E');
}

static void rule2_last_line(void **state)
{
    (void)state;
    assert_int_equal(ex("A", 2), 'A');
    assert_int_equal(ex("B\n", 2), 'B');
    assert_int_equal(ex("  c  \r\n\n  ", 3), 'C');
    assert_int_equal(ex("Some thoughts.\nD", 4), 'D');
    assert_int_equal(ex("**B**", 4), 'B');
    assert_int_equal(ex("\"A\"", 4), 'A');
    assert_int_equal(ex("'C'.", 4), 'C');
    assert_int_equal(ex("A.", 4), 'A');
    assert_int_equal(ex("**D.**", 4), 'D');
    assert_int_equal(ex("`B`", 4), 'B');
    assert_int_equal(ex("2", 2), 'B');
    assert_int_equal(ex("3", 3), 'C');
    /* Not exactly one option. */
    assert_int_equal(ex("Verdict: A", 4), 'E');
    assert_int_equal(ex("AB", 4), 'E');
    assert_int_equal(ex("D", 3), 'E');
    assert_int_equal(ex("3", 2), 'E');
    assert_int_equal(ex("A\nThat is my answer.", 4), 'E');
    assert_int_equal(ex("**", 4), 'E');
    assert_int_equal(ex("\"\"", 4), 'E');
    assert_int_equal(ex(".", 4), 'E');
}

static void rule3_answer_tag(void **state)
{
    (void)state;
    assert_int_equal(ex("<answer>B</answer>\nThat is all.", 4), 'B');
    assert_int_equal(ex("<answer> c </answer> ok", 3), 'C');
    assert_int_equal(ex("<ANSWER>2</Answer> fine", 2), 'B');
    /* The last tag with a single option wins; later tags with other content are skipped. */
    assert_int_equal(ex("<answer>A</answer>\n<answer>B</answer> <answer>none</answer> ok", 4), 'B');
    assert_int_equal(ex("<answer>D</answer> ok", 3), 'E');
    assert_int_equal(ex("<answer>the first</answer> ok", 4), 'E');
    assert_int_equal(ex("</answer>A<answer> ok", 4), 'E');
    assert_int_equal(ex("<answer>A ok", 4), 'E');
    /* Rule 2 comes first. */
    assert_int_equal(ex("<answer>A</answer>\nB", 4), 'B');
}

static void rule4_json(void **state)
{
    (void)state;
    /* Without a field name the JSON rule is off. */
    assert_int_equal(ex("{\"verdict\": \"A\"}", 4), 'E');
    assert_int_equal(exj("{\"verdict\": \"A\"}", 4, "verdict"), 'A');
    assert_int_equal(exj("  {\"verdict\": \"b\", \"why\": \"x\"}\n", 4, "verdict"), 'B');
    assert_int_equal(exj("{\"verdict\": 3}", 4, "verdict"), 'C');
    assert_int_equal(exj("{\"verdict\": \"4\"}", 4, "verdict"), 'D');
    assert_int_equal(exj("Here:\n```json\n{\"choice\": \"B\"}\n```\nthanks", 4, "choice"), 'B');
    assert_int_equal(exj("```JSON\n{\"choice\": \"A\"}", 4, "choice"), 'A'); /* cut off */
    assert_int_equal(exj("I think {\"v\": \"A\"}\nthen {\"v\": \"B\"} end", 4, "v"), 'B');
    /* Nested objects: the balanced span is the outer object. */
    assert_int_equal(exj("Result {\"r\": {\"x\": 1}, \"v\": \"C\"} done", 4, "v"), 'C');
    /* A brace inside a string unbalances the backward count; the first-to-last span works. */
    assert_int_equal(exj("Result {\"why\": \"a } b\", \"v\": \"A\"} done", 4, "v"), 'A');
    /* Failures. */
    assert_int_equal(exj("{\"verdict\": \"A\"}", 4, "other"), 'E');
    assert_int_equal(exj("{\"verdict\": \"D\"}", 3, "verdict"), 'E');
    assert_int_equal(exj("{\"verdict\": 0}", 4, "verdict"), 'E');
    assert_int_equal(exj("{\"verdict\": 5}", 4, "verdict"), 'E');
    assert_int_equal(exj("{\"verdict\": 1.0}", 4, "verdict"), 'E');
    assert_int_equal(exj("{\"verdict\": \"AB\"}", 4, "verdict"), 'E');
    assert_int_equal(exj("{\"verdict\": [\"A\"]}", 4, "verdict"), 'E');
    assert_int_equal(exj("{\"verdict\": \"A\"", 4, "verdict"), 'E');
    assert_int_equal(exj("}{", 4, "verdict"), 'E');
    assert_int_equal(exj("{\"x\": {\"verdict\": \"A\"}}", 4, "verdict"), 'E'); /* top level only */
    assert_int_equal(exj("{\"verdict\": \"A\"}", 4, ""), 'E');
}

/* Issue 12: a line naming several different options repeats the format (an echo); it is no
** verdict, the rule finds nothing and the next rule decides. */
static void echoed_options(void **state)
{
    (void)state;
    /* The two examples. */
    assert_int_equal(ex("The required format is [[A]], [[B]], [[C]] or [[D]]. \xe2\x80\xa6 B", 4),
                     'E');
    assert_int_equal(ex("The required format is [[A]], [[B]], [[C]] or [[D]].\nB", 4), 'B');
    assert_int_equal(ex("The required format is [[A]], [[B]], [[C]] or [[D]].\n"
                        "Answer 2 is better.\n**B**", 4), 'B');
    assert_int_equal(ex("Verdict: [[B]] (options were [[A]], [[B]], [[C]] or [[D]])", 4), 'E');
    /* No fall-back to an earlier bracket line once the last one is an echo. */
    assert_int_equal(ex("My verdict: [[A]]\nThe options were [[A]], [[B]] or [[C]].", 3), 'E');
    assert_int_equal(ex("I lean to [[A]].\nFormat: [[A]], [[B]], [[C]] or [[D]]\nB", 4), 'B');
    /* An echo on an earlier line does not matter: the last bracket line decides. */
    assert_int_equal(ex("Format: [[A]], [[B]], [[C]] or [[D]].\nAnalysis...\nVerdict: [[C]]", 4),
                     'C');
    /* The same option named twice on one line is not an echo; case and digits are one option. */
    assert_int_equal(ex("[[A]] ... [[A]]", 4), 'A');
    assert_int_equal(ex("[[b]] because [[B]] is right", 2), 'B');
    assert_int_equal(ex("[[A]] (that is [[1]])", 2), 'A');
    assert_int_equal(ex("[[A]] or [[2]]\nA", 2), 'A');
    /* Two different options on one line: an echo even when one was taken back. */
    assert_int_equal(ex("At first [[A]], but on reflection [[B]].\nDone", 4), 'E');
    /* The echo test comes before the mode test: an echoed [[D]] in 3-option mode is skipped,
    ** not a final invalid bracket. */
    assert_int_equal(ex("[[A]], [[B]], [[C]] or [[D]]\nC", 3), 'C');
    assert_int_equal(ex("[[A]] ... no wait, [[D]]", 3), 'E');
    assert_int_equal(ex("[[D]] or [[D]]\nC", 3), 'E'); /* one option, invalid: final */
    /* Lines end at \n only; \r\n is one line end. */
    assert_int_equal(ex("[[A]] or [[B]]\r\nA\r\n", 2), 'A');

    /* <answer> tags: several different values on the tag's lines are an echo. */
    assert_int_equal(ex("Reply <answer>A</answer> or <answer>B</answer>. ok", 2), 'E');
    assert_int_equal(ex("Format <answer>A</answer>, <answer>B</answer> or <answer>C</answer>\n"
                        "Thinking...\n<answer>B</answer> done", 3), 'B');
    assert_int_equal(ex("<answer>B</answer> <answer>b</answer> ok", 4), 'B');
    /* tags whose content is another option (here beyond the mode) still make an echo */
    assert_int_equal(ex("<answer>A</answer> or <answer>D</answer> ok", 3), 'E');
    assert_int_equal(ex("<answer>\nA\n</answer> or <answer>B</answer> ok", 2), 'E');
    /* a tag with other content is neither verdict nor echo */
    assert_int_equal(ex("<answer>A</answer> not <answer>none</answer> ok", 2), 'A');
    /* the echo is skipped: rule 4 then decides */
    assert_int_equal(exj("{\"v\": \"A\"}\n<answer>A</answer> or <answer>B</answer> ok", 2, "v"),
                     'A');

    /* JSON: another object on the line of the last one naming a different option. */
    assert_int_equal(exj("Reply as {\"v\": \"A\"} or {\"v\": \"B\"} please", 2, "v"), 'E');
    assert_int_equal(exj("Reply as {\"v\": 1} or {\"v\": 2}.", 2, "v"), 'E');
    assert_int_equal(exj("Reply as {\"v\": \"A\"} or {\"v\": \"D\"}.", 3, "v"), 'E');
    assert_int_equal(exj("Reply as {\"v\": \"A\"} or {\"v\": \"B\"}.\n{\"v\": \"A\"}", 2, "v"),
                     'A');
    assert_int_equal(exj("{\"v\": \"B\"} and again {\"v\": \"B\"}", 2, "v"), 'B');
    assert_int_equal(exj("{\"w\": \"A\"} {\"v\": \"B\"}", 2, "v"), 'B'); /* other field */
    assert_int_equal(exj("{\"v\": \"A\", \"x\": {\"v\": \"A\"}} {\"v\": \"B\"}", 2, "v"), 'E');
    /* a pretty-printed object starting on its own line */
    assert_int_equal(exj("Options {\"v\": \"A\"} or {\"v\": \"B\"}\n{\n  \"v\": \"B\"\n}", 2, "v"),
                     'B');
}

/* The rules in order: a bracket beats a last line, which beats a tag, which beats JSON. */
static void rule_order(void **state)
{
    (void)state;
    assert_int_equal(ex("[[A]]\nB", 4), 'A');
    assert_int_equal(exj("<answer>A</answer>\n{\"v\": \"B\"}", 4, "v"), 'A');
    assert_int_equal(exj("{\"v\": \"B\"}\nC", 4, "v"), 'C');
}

static void to_model(void **state)
{
    (void)state;
    assert_int_equal(arb_verdict_to_model('A', 0), 'a');
    assert_int_equal(arb_verdict_to_model('A', 1), 'b');
    assert_int_equal(arb_verdict_to_model('B', 0), 'b');
    assert_int_equal(arb_verdict_to_model('B', 1), 'a');
    assert_int_equal(arb_verdict_to_model('C', 0), 'c');
    assert_int_equal(arb_verdict_to_model('C', 1), 'c');
    assert_int_equal(arb_verdict_to_model('D', 0), 'd');
    assert_int_equal(arb_verdict_to_model('D', 1), 'd');
    assert_int_equal(arb_verdict_to_model('E', 0), 'e');
    assert_int_equal(arb_verdict_to_model('a', 0), 'e');
    assert_int_equal(arb_verdict_to_model(0, 1), 'e');
    assert_int_equal(arb_verdict_to_model('A', 2), 'e');
}

/* Large hostile inputs finish quickly (linear scans). */
static void large_inputs(void **state)
{
    (void)state;
    size_t n = 1 << 20;
    char *t = malloc(n);
    assert_non_null(t);
    for (size_t i = 0; i < n; i++) t[i] = "</answer>"[i % 9];
    assert_int_equal(arb_verdict_extract(t, n, 4, "v"), 'E');
    memset(t, '{', n);
    assert_int_equal(arb_verdict_extract(t, n, 4, "v"), 'E');
    for (size_t i = 0; i < n; i++) t[i] = i % 2 ? '}' : '{';
    assert_int_equal(arb_verdict_extract(t, n, 4, "v"), 'E');
    memset(t, '[', n);
    memcpy(t + n - 5, "[[B]]", 5);
    assert_int_equal(arb_verdict_extract(t, n, 4, NULL), 'B');
    /* one long line of markers, tags and objects: the echo tests read it once */
    for (size_t i = 0; i < n; i++) t[i] = "[[A]]"[i % 5];
    memcpy(t + n - 5, "[[B]]", 5);
    assert_int_equal(arb_verdict_extract(t, n, 4, NULL), 'E');
    for (size_t i = 0; i < n; i++) t[i] = "<answer>A</answer>"[i % 18];
    assert_int_equal(arb_verdict_extract(t, n - n % 18, 4, NULL), 'A');
    for (size_t i = 0; i < n; i++) t[i] = "{\"v\":\"A\"}"[i % 9];
    assert_int_equal(arb_verdict_extract(t, n - n % 9, 4, "v"), 'A');
    memcpy(t + n - n % 9 - 9, "{\"v\":\"B\"}", 9);
    assert_int_equal(arb_verdict_extract(t, n - n % 9, 4, "v"), 'E');
    free(t);
}


/* ---- pointwise values (METHODS §8) --------------------------------------------------------- */

/* Asserts the value read from text (-1: E) and, for E, the exact reason. */
static void pw(const char *text, arb_pointwise_kind kind, int value, const char *reason)
{
    const char *why = "unset";
    int v = arb_pointwise_extract(text, strlen(text), kind, &why);
    if (v != value || (value < 0 && strcmp(why, reason)) || (value >= 0 && why)) {
        print_error("text: %s\nexpected %d (%s), got %d (%s)\n", text, value,
                    reason ? reason : "-", v, why ? why : "-");
        fail();
    }
}
#define YN ARB_POINTWISE_YESNO
#define GR ARB_POINTWISE_GRADE

static void pointwise_edge_cases(void **state)
{
    (void)state;
    pw("", YN, -1, "no <answer> tag");
    pw("Correct", YN, -1, "no <answer> tag"); /* a bare word is not the format asked for */
    pw("<answer></answer>", GR, -1, "answer is not a valid value");
    assert_int_equal(arb_pointwise_extract(NULL, 0, YN, NULL), -1);
    assert_int_equal(arb_pointwise_extract("<answer>3</answer>", 18, (arb_pointwise_kind)7, NULL),
                     -1);
    /* len is honoured: the closing tag beyond it is not seen */
    const char *cut = "<answer>3</answer>";
    const char *why = NULL;
    assert_int_equal(arb_pointwise_extract(cut, 12, GR, &why), -1);
    assert_string_equal(why, "unclosed <answer> tag");
}

static void pointwise_well_formed(void **state)
{
    (void)state;
    pw("<result><justification>Right.</justification><answer>correct</answer></result>", YN, 1,
       NULL);
    pw("<result><answer>incorrect</answer></result>", YN, 0, NULL);
    pw("<result>\n  <justification>ok</justification>\n  <answer> 4 </answer>\n</result>", GR, 4,
       NULL);
    /* case, white space inside the brackets, prose around */
    pw("Let me think.\n< RESULT ><Answer>CORRECT</ANSWER></ Result >\nHope this helps!", YN, 1,
       NULL);
    pw("Grade: <answer>\n5\n</answer>", GR, 5, NULL); /* no <result>: the whole text */
    /* punctuation and decorations around the value */
    pw("<answer>Correct.</answer>", YN, 1, NULL);
    pw("<answer>**Incorrect!**</answer>", YN, 0, NULL);
    pw("<answer>\"3\".</answer>", GR, 3, NULL);
    /* full-width digits U+FF11..U+FF15 */
    pw("<answer>\xEF\xBC\x91</answer>", GR, 1, NULL);
    pw("<answer>\xEF\xBC\x95</answer>", GR, 5, NULL);
    pw("<answer>\xEF\xBC\x96</answer>", GR, -1, "answer out of range"); /* 6, as for ASCII */
    /* the same value twice is one answer */
    pw("<answer>2</answer>\n<result><answer>2</answer></result>", GR, 2, NULL);
    pw("<answer>3</answer> I repeat: <answer>3</answer>", GR, 3, NULL);
}

/* Judges told to evaluate in another language write its spaces, punctuation, quotation marks
** and digits around the same value. */
static void pointwise_other_scripts(void **state)
{
    (void)state;
    pw("<answer>\xC2\xA0" "4\xC2\xA0</answer>", GR, 4, NULL);          /* no-break spaces */
    pw("<answer>\xE3\x80\x80\xEF\xBC\x94\xE3\x80\x80</answer>", GR, 4, NULL); /* ideographic */
    pw("<answer>4\xE3\x80\x82</answer>", GR, 4, NULL);                  /* 4。 */
    pw("<answer>Correct\xE3\x80\x82</answer>", YN, 1, NULL);            /* Correct。 */
    pw("<answer>incorrect\xEF\xBC\x81</answer>", YN, 0, NULL);          /* full-width ! */
    pw("<answer>correct\xD8\x8C</answer>", YN, 1, NULL);                 /* Arabic comma */
    pw("<answer>\xE2\x80\x9C" "correct\xE2\x80\x9D</answer>", YN, 1, NULL); /* “correct” */
    pw("<answer>\xC2\xAB\xC2\xA0incorrect\xC2\xA0\xC2\xBB</answer>", YN, 0, NULL); /* « … » */
    pw("<answer>\xE3\x80\x8C" "3\xE3\x80\x8D</answer>", GR, 3, NULL);  /* 「3」 */
    pw("<answer>\xD9\xA4</answer>", GR, 4, NULL);                        /* Arabic-Indic 4 */
    pw("<answer>\xDB\xB2</answer>", GR, 2, NULL);                        /* Persian 2 */
    pw("<answer>\xE0\xA5\xAB</answer>", GR, 5, NULL);                    /* Devanagari 5 */
    pw("<answer>\xE0\xA5\xA7\xE0\xA5\xA4</answer>", GR, 1, NULL);     /* 1 and a danda */
    /* strict about the value in every script */
    pw("<answer>\xEF\xBC\x91\xEF\xBC\x90</answer>", GR, -1, "answer out of range"); /* 10 */
    pw("<answer>\xD9\xA0</answer>", GR, -1, "answer out of range");          /* Arabic-Indic 0 */
    pw("<answer>\xD9\xA7</answer>", GR, -1, "answer out of range");          /* 7 */
    pw("<answer>\xD9\xA4.\xD9\xA5</answer>", GR, -1, "answer is not a valid value"); /* 4.5 */
    pw("<answer>\xE2\x80\x9C" "correct</answer>", YN, -1, "answer is not a valid value");
    pw("<answer>\xE2\x80\x9C\xE2\x80\x9D</answer>", YN, -1, "answer is not a valid value");
    pw("<answer>\xE3\x80\x82</answer>", GR, -1, "answer is not a valid value");
    pw("<answer>\xD9</answer>", GR, -1, "answer is not a valid value"); /* a cut sequence */
    pw("<answer>\xE0\xA5</answer>", GR, -1, "answer is not a valid value");
}

static void pointwise_strict_values(void **state)
{
    (void)state;
    pw("<answer>0</answer>", GR, -1, "answer out of range");
    pw("<answer>6</answer>", GR, -1, "answer out of range");
    pw("<answer>10</answer>", GR, -1, "answer out of range");
    pw("<answer>4.5</answer>", GR, -1, "answer is not a valid value");
    pw("<answer>4/5</answer>", GR, -1, "answer is not a valid value");
    pw("<answer>four</answer>", GR, -1, "answer is not a valid value");
    pw("<answer>-3</answer>", GR, -1, "answer is not a valid value");
    pw("<answer>yes</answer>", YN, -1, "answer is not a valid value");
    pw("<answer>correctly</answer>", YN, -1, "answer is not a valid value");
    pw("<answer>not correct</answer>", YN, -1, "answer is not a valid value");
    pw("<answer>3</answer>", YN, -1, "answer is not a valid value");
    pw("<answer>correct</answer>", GR, -1, "answer is not a valid value");
}

static void pointwise_malformed_tags(void **state)
{
    (void)state;
    pw("<answer><answer>4</answer></answer>", GR, -1, "nested <answer> tags");
    pw("<answer>4</answer></answer>", GR, -1, "unmatched </answer> tag");
    pw("<result><answer>4</result>", GR, -1, "unclosed <answer> tag");
    pw("<result><justification>fine</justification></result>", GR, -1, "no <answer> tag");
    pw("<answer>4<answer>", GR, -1, "nested <answer> tags");
    pw("<answer 4>", GR, -1, "no <answer> tag");
    /* a reply cut off inside <result>: the region runs to the end */
    pw("<result><justification>long...", YN, -1, "no <answer> tag");
    pw("<result><answer>correct</answer><justification>cut", YN, 1, NULL);
}

static void pointwise_several_answers(void **state)
{
    (void)state;
    pw("<answer>3</answer>\n<answer>4</answer>", GR, -1, "several different answers");
    pw("At first <answer>2</answer>, on reflection <answer>4</answer>", GR, -1,
       "several different answers");
    pw("<result><answer>correct</answer>\n<answer>incorrect</answer></result>", YN, -1,
       "several different answers");
    pw("<answer>maybe</answer>\n<answer>correct</answer>", YN, -1, "several different answers");
    /* an earlier answer outside the last <result> does not count */
    pw("<result><answer>2</answer></result>\nLet me redo it.\n<result><answer>3</answer></result>",
       GR, 3, NULL);
}

/* The instructions say "<answer>correct</answer> or <answer>incorrect</answer>" and
** "<answer>N</answer> with N from 1 to 5": a reply whose last tag sits in that phrase has not
** given a verdict (nothing earlier is taken instead); the phrase elsewhere is harmless. */
static void pointwise_echoes(void **state)
{
    (void)state;
    pw("I must answer <answer>correct</answer> or <answer>incorrect</answer>.", YN, -1,
       "echoed from the instructions");
    pw("<answer>correct</answer>\nFormat: <answer>correct</answer> or <answer>incorrect</answer>",
       YN, -1, "echoed from the instructions");
    pw("Reply with <answer>N</answer> with N from 1 to 5.", GR, -1,
       "echoed from the instructions");
    pw("<answer>4</answer>\nReply with <answer>N</answer> with N from 1 to 5.", GR, -1,
       "echoed from the instructions");
    pw("Grade <answer>4</answer> (as <answer>N</answer> with N from 1 to 5)", GR, -1,
       "echoed from the instructions");
    /* the phrase echoed earlier, the verdict after it on its own line */
    pw("You asked for <answer>correct</answer> or <answer>incorrect</answer>.\n"
       "<result><justification>The sum is right.</justification>"
       "<answer>correct</answer></result>",
       YN, 1, NULL);
    pw("The format is <answer>correct</answer> or <answer>incorrect</answer>.\n"
       "<answer>incorrect</answer>",
       YN, 0, NULL);
    pw("Format: <answer>N</answer> with N from 1 to 5.\n<answer>2</answer>", GR, 2, NULL);
    /* the echo after a closed <result> is outside the region read */
    pw("<result><answer>incorrect</answer></result>\n"
       "(<answer>correct</answer> or <answer>incorrect</answer>)",
       YN, 0, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(edge_cases),
        cmocka_unit_test(length_not_nul),
        cmocka_unit_test(rule1_brackets),
        cmocka_unit_test(rule1_invalid_is_final),
        cmocka_unit_test(rule2_last_line),
        cmocka_unit_test(rule3_answer_tag),
        cmocka_unit_test(rule4_json),
        cmocka_unit_test(echoed_options),
        cmocka_unit_test(rule_order),
        cmocka_unit_test(to_model),
        cmocka_unit_test(large_inputs),
        cmocka_unit_test(pointwise_edge_cases),
        cmocka_unit_test(pointwise_well_formed),
        cmocka_unit_test(pointwise_strict_values),
        cmocka_unit_test(pointwise_other_scripts),
        cmocka_unit_test(pointwise_malformed_tags),
        cmocka_unit_test(pointwise_several_answers),
        cmocka_unit_test(pointwise_echoes),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
