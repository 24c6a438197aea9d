/*
** verdict.c -- position verdicts from a judge's free text (METHODS §2.1, §2.4), and pointwise
** values (correct/incorrect, grades 1..5; METHODS §8) from the XML answer of a pointwise judge.
**
** The rules are tried in the order of §2.4 and the first that finds something decides:
**   1. the last "[[X]]" in the text (X one ASCII letter, either case, or one digit). This is the
**      format the built-in prompts ask for, so when it is present it is final: an X that is not
**      an option of the mode (D in 3-option, [[7]], [[Z]]) gives E rather than falling back to
**      an earlier bracket, which would pick a verdict the judge took back;
**   2. the last non-empty line, trimmed of white space, surrounding ** / * / quotes / backticks
**      and one trailing period, is exactly one option letter or option number (1..mode = A..D);
**   3. the last <answer>...</answer> (tag in any case) whose trimmed content is one letter or
**      digit, when that is an option of the mode;
**   4. when a JSON field is named: a JSON object found as the whole text, the last ```json
**      fenced block, the last balanced {...}, or the span from the first '{' to the last '}';
**      its top-level field holds a string letter/number or an integer option number.
** Anything else is 'E'. Numbers count as options because judges asked for letters sometimes
** answer "1"/"2"; letters beyond the mode never count.
**
** Echoes (issue 12). A judge that repeats the format it was given ("the required format is
** [[A]], [[B]], [[C]] or [[D]]") names every option; read naively, the last one (D) becomes
** its verdict. So a rule's hit is an ECHO when its line names two or more DIFFERENT options
** in the same form:
**   rule 1: the line of the last [[X]] holds a [[Y]] with Y != X (letters compared in either
**           case, a digit n as the n-th letter: "[[A]] ... [[a]]" names one option twice);
**   rule 3: a tag with another letter or digit closes on the lines from the last option tag's
**           opening to its closing tag;
**   rule 4: the line where the last balanced object starts holds, before it, another balanced
**           object whose field names a different letter, digit or number.
** An echo is not a verdict and the rule finds NOTHING: it does not fall back to an earlier
** bracket, tag or object (that may be one the judge took back, as above); the next rule
** decides. So "The required format is [[A]], [[B]], [[C]] or [[D]].\nB" is B, and
** "Verdict: [[B]] (options were [[A]], [[B]], [[C]] or [[D]])" is E: nothing says which of
** the named options the judge meant. One line naming two options ("at first [[A]], on
** reflection [[B]]") is treated alike: ambiguous is not a verdict. The echo test comes before
** the mode test, so an echoed [[D]] in a 3-option run is skipped as an echo, not taken as a
** final invalid bracket. Lines end at '\n'.
**
** The text need not be NUL-terminated and may hold any bytes: every access is bounded by len.
** Nothing is allocated except by the JSON rule, and only when a field name is given.
*/
#include "internal.h"

#include <string.h>

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}
static int is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static char to_upper(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c; }
static char to_lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* Maps one letter or digit to the position verdict it names in the mode, or 0 when it names
** none (§2.1: letters A..D and numbers 1..4, limited to the first `options`). */
static char option_of(char c, int options)
{
    if (is_alpha(c)) {
        char u = to_upper(c);
        return u - 'A' < options ? u : 0;
    }
    if (c >= '1' && c <= '9') return c - '1' < options ? (char)('A' + (c - '1')) : 0;
    return 0;
}

/* What a letter or digit names whatever the mode, for telling options apart in the echo test:
** A..Z for letters of either case, A..I for 1..9 (as option_of does), '0' for 0; 0 for any
** other byte. */
static char option_key(char c)
{
    return c == '0' ? '0' : option_of(c, 26);
}

/* The verdict a key names in the mode, or 0. */
static char key_in_mode(char key, int options)
{
    return key >= 'A' && key - 'A' < options ? key : 0;
}

/* The start of the line holding t[i], and the end (exclusive) of the line holding t[i]. */
static size_t line_start(const char *t, size_t i)
{
    while (i > 0 && t[i - 1] != '\n') i--;
    return i;
}
static size_t line_end(const char *t, size_t len, size_t i)
{
    while (i < len && t[i] != '\n') i++;
    return i;
}

/* Is there a marker "[[X]]" at t[i], with i + 5 <= len? */
static int is_bracket(const char *t, size_t i)
{
    return t[i] == '[' && t[i + 1] == '[' && t[i + 3] == ']' && t[i + 4] == ']' &&
           (is_alpha(t[i + 2]) || is_digit(t[i + 2]));
}

/* Rule 1. Returns the verdict, 'E' for an invalid last bracket, 0 when there is no bracket or
** the last bracket's line names another option (an echo, see the file comment). */
static char last_bracket(const char *t, size_t len, int options, size_t *at)
{
    if (len < 5) return 0;
    for (size_t i = len - 5 + 1; i-- > 0;) {
        if (!is_bracket(t, i)) continue;
        char key = option_key(t[i + 2]);
        size_t b = line_start(t, i), e = line_end(t, len, i);
        for (size_t j = b; j + 5 <= e; j++)
            if (is_bracket(t, j) && option_key(t[j + 2]) != key) return 0;
        char v = key_in_mode(key, options);
        *at = i + 2;
        return v ? v : 'E';
    }
    return 0;
}

/* Narrows [*b, *e) by white space, one trailing period and matching decorations around a bare
** verdict ("**B**", "'A'", "`C`"), repeating until nothing changes. */
static void trim_decorations(const char *t, size_t *b, size_t *e)
{
    static const char *const pairs[] = {"**", "*", "\"", "'", "`"};
    for (;;) {
        size_t b0 = *b, e0 = *e;
        while (*b < *e && is_space(t[*b])) (*b)++;
        while (*e > *b && is_space(t[*e - 1])) (*e)--;
        if (*e > *b && t[*e - 1] == '.') (*e)--;
        for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
            size_t n = strlen(pairs[k]);
            if (*e - *b >= 2 * n + 1 && memcmp(t + *b, pairs[k], n) == 0 &&
                memcmp(t + *e - n, pairs[k], n) == 0) {
                *b += n;
                *e -= n;
                break;
            }
        }
        if (*b == b0 && *e == e0) return;
    }
}

/* The key (option_key) of the one letter or digit t[b, e) holds after trimming, or 0. */
static char single_key(const char *t, size_t b, size_t e)
{
    trim_decorations(t, &b, &e);
    return e - b == 1 ? option_key(t[b]) : 0;
}

/* single_key, also setting *at to the offset of that letter or digit when there is one. */
static char single_key_at(const char *t, size_t b, size_t e, size_t *at)
{
    trim_decorations(t, &b, &e);
    if (e - b != 1) return 0;
    *at = b;
    return option_key(t[b]);
}

/* The option named by t[b, e) after trimming, or 0. */
static char single_option(const char *t, size_t b, size_t e, int options, size_t *at)
{
    return key_in_mode(single_key_at(t, b, e, at), options);
}

/* Rule 2: the last line that is not white space only. */
static char last_line(const char *t, size_t len, int options, size_t *at)
{
    size_t e = len;
    while (e > 0 && is_space(t[e - 1])) e--;
    if (e == 0) return 0;
    size_t b = e;
    while (b > 0 && t[b - 1] != '\n') b--;
    return single_option(t, b, e, options, at);
}

/* Case-insensitive: does t[i..) start with the ASCII lowercase word w? */
static int starts_with_ci(const char *t, size_t len, size_t i, const char *w)
{
    size_t n = strlen(w);
    if (len - i < n) return 0;
    for (size_t k = 0; k < n; k++)
        if (to_lower(t[i + k]) != w[k]) return 0;
    return 1;
}

static const char answer_open[] = "<answer>", answer_close[] = "</answer>";
#define ANSWER_OPEN_LEN (sizeof answer_open - 1)
#define ANSWER_CLOSE_LEN (sizeof answer_close - 1)

/* When a closing tag starts at t[c] and an opening tag precedes it, sets *o to that opening
** tag's position and returns 1; else 0. The content is short when it is a verdict: the
** opening tag is looked for a bounded distance back only, so a text full of closing tags
** stays linear. */
static int answer_tag_at(const char *t, size_t len, size_t c, size_t *o)
{
    if (c < ANSWER_OPEN_LEN || t[c] != '<' || !starts_with_ci(t, len, c, answer_close)) return 0;
    size_t lo = c > 64 + ANSWER_OPEN_LEN ? c - 64 - ANSWER_OPEN_LEN : 0;
    for (size_t k = c - ANSWER_OPEN_LEN + 1; k-- > lo;) {
        if (t[k] != '<') continue;
        if (!starts_with_ci(t, len, k, answer_open)) return 0;
        *o = k;
        return 1;
    }
    return 0;
}

/* Rule 3: scans backwards for closing tags; each one's content runs back to the nearest
** opening tag. The last tag whose content is a single option wins, unless a tag with another
** letter or digit closes on the lines from its opening to its closing tag (an echo: 0). */
static char answer_tag(const char *t, size_t len, int options, size_t *at)
{
    if (len < ANSWER_OPEN_LEN + ANSWER_CLOSE_LEN) return 0;
    for (size_t c = len - ANSWER_CLOSE_LEN + 1; c-- > ANSWER_OPEN_LEN;) {
        size_t o;
        if (!answer_tag_at(t, len, c, &o)) continue;
        char v = single_option(t, o + ANSWER_OPEN_LEN, c, options, at);
        if (!v) continue;
        size_t b = line_start(t, o), e = line_end(t, len, c);
        for (size_t c2 = b; c2 + ANSWER_CLOSE_LEN <= e; c2++) {
            size_t o2;
            if (!answer_tag_at(t, len, c2, &o2)) continue;
            char key = single_key(t, o2 + ANSWER_OPEN_LEN, c2);
            if (key && key != v) return 0;
        }
        return v;
    }
    return 0;
}

/* The key (option_key) of what field of a JSON object t[b, e) names: a string holding one
** letter or digit, or an integer (1..26 as A..Z, any other integer '?'); 0 for anything else. */
static char json_key(const char *t, size_t b, size_t e, const char *field)
{
    while (b < e && is_space(t[b])) b++;
    while (e > b && is_space(t[e - 1])) e--;
    if (e - b < 2 || t[b] != '{' || t[e - 1] != '}') return 0;
    json_t *obj = json_loadb(t + b, e - b, 0, NULL);
    if (!obj) return 0;
    char key = 0;
    json_t *val = json_object_get(obj, field);
    if (json_is_string(val)) {
        key = single_key(json_string_value(val), 0, json_string_length(val));
    } else if (json_is_integer(val)) {
        json_int_t n = json_integer_value(val);
        key = n >= 1 && n <= 26 ? (char)('A' + (n - 1)) : '?';
    }
    json_decref(obj);
    return key;
}

/* The offset of the value of the last "field": in t[b, e) (past an opening quote and white
** space), or SIZE_MAX: where the verdict's letter stands, for reading its token's logprobs.
** A field name written with escapes is not found (the position is then unknown). */
static size_t json_value_at(const char *t, size_t b, size_t e, const char *field)
{
    size_t n = strlen(field);
    for (size_t i = e; i-- > b;) {
        if (t[i] != '"' || e - i < n + 2 || memcmp(t + i + 1, field, n) || t[i + n + 1] != '"')
            continue;
        size_t k = i + n + 2;
        while (k < e && is_space(t[k])) k++;
        if (k == e || t[k] != ':') continue;
        k++;
        while (k < e && is_space(t[k])) k++;
        if (k < e && t[k] == '"') k++;
        while (k < e && is_space(t[k])) k++;
        return k < e ? k : SIZE_MAX;
    }
    return SIZE_MAX;
}

/* The verdict in field of a JSON object t[b, e), or 0; *at gets its offset (json_value_at). */
static char json_candidate(const char *t, size_t b, size_t e, int options, const char *field,
                           size_t *at)
{
    char v = key_in_mode(json_key(t, b, e, field), options);
    if (v) *at = json_value_at(t, b, e, field);
    return v;
}

/* The start of the balanced {...} that ends with the '}' at t[close], counting braces
** backwards; len when the braces do not balance. */
static size_t balanced_start(const char *t, size_t len, size_t close)
{
    size_t depth = 0, i = close + 1;
    while (i-- > 0) {
        if (t[i] == '}') depth++;
        else if (t[i] == '{' && --depth == 0) return i;
    }
    return len;
}

/* Does another balanced object that ends between the start of the line holding t[b] and b
** name, in field, something other than key? The echo test of rule 4 for the object starting
** at b, which ends at the text's last '}' (so no object follows it); each object is read once. */
static int json_echo(const char *t, size_t len, size_t b, const char *field, char key)
{
    size_t lo = line_start(t, b), pos = b;
    while (pos > lo) {
        size_t close = pos;
        while (close > lo && t[close - 1] != '}') close--;
        if (close == lo) return 0;
        size_t start = balanced_start(t, len, close - 1);
        if (start == len) return 0;
        char other = json_key(t, start, close, field);
        if (other && other != key) return 1;
        pos = start;
    }
    return 0;
}

/* Finds the byte range of the last ```json fence's body (tag in any case) and returns 1, or
** returns 0 when there is none. */
static int last_json_fence(const char *t, size_t len, size_t *b, size_t *e)
{
    static const char fence[] = "```json";
    const size_t n = sizeof fence - 1;
    if (len < n) return 0;
    for (size_t i = len - n + 1; i-- > 0;) {
        if (t[i] != '`' || !starts_with_ci(t, len, i, fence)) continue;
        size_t start = i + n;
        for (size_t j = start; j + 3 <= len; j++) {
            if (t[j] == '`' && t[j + 1] == '`' && t[j + 2] == '`') {
                *b = start;
                *e = j;
                return 1;
            }
        }
        *b = start; /* an unclosed fence (a reply cut off by max_tokens): take the rest */
        *e = len;
        return 1;
    }
    return 0;
}

/* Rule 4. */
static char json_field_rule(const char *t, size_t len, int options, const char *field,
                            size_t *at)
{
    char v = json_candidate(t, 0, len, options, field, at);
    if (v) return v;
    size_t b, e;
    if (last_json_fence(t, len, &b, &e) && (v = json_candidate(t, b, e, options, field, at)))
        return v;
    /* The last balanced {...}, counting braces backwards from the last '}'. Braces inside
    ** JSON strings can unbalance the count; the first-'{'-to-last-'}' span covers that case
    ** when the object is the only one. */
    size_t last = len;
    while (last > 0 && t[last - 1] != '}') last--;
    if (last == 0) return 0;
    size_t i = balanced_start(t, len, last - 1);
    if (i != len && (v = json_candidate(t, i, last, options, field, at)))
        return json_echo(t, len, i, field, v) ? 0 : v;
    const char *first = memchr(t, '{', last);
    if (first && (i == len || (size_t)(first - t) != i))
        return json_candidate(t, (size_t)(first - t), last, options, field, at);
    return 0;
}

/* See internal.h. */
char arb__verdict_locate(const char *text, size_t len, int options, const char *json_field,
                         size_t *at)
{
    *at = SIZE_MAX;
    if (!text || options < 2 || options > 4) return 'E';
    char v = last_bracket(text, len, options, at);
    if (v) {
        if (v == 'E') *at = SIZE_MAX;
        return v;
    }
    if ((v = last_line(text, len, options, at))) return v;
    if ((v = answer_tag(text, len, options, at))) return v;
    if (json_field && *json_field && (v = json_field_rule(text, len, options, json_field, at)))
        return v;
    *at = SIZE_MAX;
    return 'E';
}

/* Returns 'A'..'D' valid for the mode, or 'E' (also for a NULL text or a mode outside 2..4).
** text is borrowed and read only within [0, len). */
char arb_verdict_extract(const char *text, size_t len, int options, const char *json_field)
{
    size_t at;
    return arb__verdict_locate(text, len, options, json_field, &at);
}

/* Returns the model verdict (§2.2): in order 0 the candidate is shown first, so A -> a; in
** order 1 A -> b. C and D do not depend on order. Anything else, or an order other than 0/1,
** gives 'e'. */
char arb_verdict_to_model(char position_verdict, int order)
{
    if (order != 0 && order != 1) return 'e';
    switch (position_verdict) {
    case 'A': return order == 0 ? 'a' : 'b';
    case 'B': return order == 0 ? 'b' : 'a';
    case 'C': return 'c';
    case 'D': return 'd';
    default: return 'e';
    }
}

/* ---- pointwise verdicts (METHODS §8) ------------------------------------------------------
**
** The built-in pointwise prompts ask for <result><justification>…</justification><answer>V
** </answer></result> with V correct/incorrect (yes/no) or 1..5 (grade). The reading:
**   - tags are found in any case and with white space inside the brackets ("< Answer >");
**   - the region read is the content of the last <result> element (to the end of the text when
**     it is not closed: a reply cut off by max_tokens), or the whole text when there is none;
**   - in the region, an <answer> opened inside another, or a </answer> with none open, is E
**     ("nested <answer> tags", "unmatched </answer> tag"); an <answer> never closed is E
**     ("unclosed <answer> tag");
**   - the LAST <answer> of the region decides. Its lines (from its opening to its closing tag)
**     are those of an echo of the instructions when they hold the example phrase: for yes/no
**     both a "correct" and an "incorrect" tag, for grades a tag holding "N". An echo is E
**     ("echoed from the instructions") and, as for SbS verdicts, nothing earlier is taken
**     instead: a judge that ends by repeating the format has not said which value it meant;
**   - other tags of the region on lines that are not such an echo must name the same value,
**     else E ("several different answers"): a judge that writes 3 and then 4 has not decided;
**   - the value, trimmed of white space (also no-break and ideographic spaces), surrounding
**     * " ' ` “” ‘’ «» 「」 and trailing . ! , ; : (also their full-width forms, 。 、 ، ۔ and
**     the danda), is, for yes/no, "correct" or "incorrect" in any case; for grades one digit
**     1..5 in ASCII, full-width, Arabic-Indic, Extended Arabic-Indic or Devanagari digits (a
**     judge told to evaluate in Arabic or Hindi may write ٤ or ४: the value is the same). A
**     whole number outside 1..5 in such digits is "answer out of range"; anything else
**     ("4.5", "4/5", "four", "yes") "answer is not a valid value".
** Reasons are static strings; the raw reply is kept by the caller (calls.content).
*/

/* A pointwise tag at t[i] ('<'): "<name>" or "</name>" with optional white space inside the
** brackets, name compared in any case. Returns the length of the tag, or 0. */
static size_t tag_at(const char *t, size_t len, size_t i, const char *name, int closing)
{
    if (t[i] != '<') return 0;
    size_t k = i + 1;
    while (k < len && is_space(t[k])) k++;
    if (closing) {
        if (k >= len || t[k] != '/') return 0;
        k++;
        while (k < len && is_space(t[k])) k++;
    }
    if (!starts_with_ci(t, len, k, name)) return 0;
    k += strlen(name);
    while (k < len && is_space(t[k])) k++;
    return k < len && t[k] == '>' ? k + 1 - i : 0;
}

/* The region read (see above): the content of the last <result> element, or the whole text. */
static void result_region(const char *t, size_t len, size_t *b, size_t *e)
{
    *b = 0;
    *e = len;
    size_t open = len, open_len = 0;
    for (size_t i = len; i-- > 0;)
        if (t[i] == '<' && (open_len = tag_at(t, len, i, "result", 0))) {
            open = i;
            break;
        }
    if (open == len) return;
    *b = open + open_len;
    for (size_t i = *b; i < len; i++)
        if (t[i] == '<' && tag_at(t, len, i, "result", 1)) {
            *e = i;
            return;
        }
}

/* One <answer> element of the region: content [cb, ce), and the tags' span [ob, oe). */
typedef struct pw_tag {
    size_t ob, cb, ce, oe;
} pw_tag;

enum { PW_INVALID = -1, PW_OUT_OF_RANGE = -2, PW_ECHO_N = -3 };

/* Byte sequences a judge writing in another script may put around the value (UTF-8): spaces
** (no-break U+00A0, U+2000..U+200B, narrow no-break U+202F, ideographic U+3000), trailing
** punctuation (ASCII . ! , ; : and the ideographic full stop and comma U+3002/U+3001, the
** full-width . ! , ; : U+FF0E/FF01/FF0C/FF1B/FF1A, the Arabic comma U+060C and full stop
** U+06D4, the Devanagari danda U+0964), and quotation marks in pairs. */
static const char *const pw_spaces[] = {"\xC2\xA0", "\xE2\x80\x80", "\xE2\x80\x81", "\xE2\x80\x82",
                                        "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85",
                                        "\xE2\x80\x86", "\xE2\x80\x87", "\xE2\x80\x88",
                                        "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\x8B",
                                        "\xE2\x80\xAF", "\xE3\x80\x80"};
static const char *const pw_trailing[] = {".", "!", ",", ";", ":", "\xE3\x80\x82", "\xE3\x80\x81",
                                          "\xEF\xBC\x8E", "\xEF\xBC\x81", "\xEF\xBC\x8C",
                                          "\xEF\xBC\x9B", "\xEF\xBC\x9A", "\xD8\x8C", "\xDB\x94",
                                          "\xE0\xA5\xA4"};
static const char *const pw_quotes[][2] = {
    {"**", "**"}, {"*", "*"}, {"\"", "\""}, {"'", "'"}, {"`", "`"},
    {"\xE2\x80\x9C", "\xE2\x80\x9D"}, /* “ ” */
    {"\xE2\x80\x98", "\xE2\x80\x99"}, /* ‘ ’ */
    {"\xC2\xAB", "\xC2\xBB"},         /* « » */
    {"\xE3\x80\x8C", "\xE3\x80\x8D"}, /* 「 」 */
};

/* The length of the first of the n sequences set[] that t[b, e) starts with (at_end: ends
** with), or 0. */
static size_t pw_match(const char *t, size_t b, size_t e, const char *const *set, size_t n,
                       int at_end)
{
    for (size_t k = 0; k < n; k++) {
        size_t l = strlen(set[k]);
        if (e - b >= l && memcmp(t + (at_end ? e - l : b), set[k], l) == 0) return l;
    }
    return 0;
}
#define PW_MATCH(t, b, e, set, at_end) pw_match(t, b, e, set, sizeof set / sizeof *set, at_end)

/* The decimal digit at t[b] (before e): ASCII, full-width (U+FF10..), Arabic-Indic (U+0660..),
** Extended Arabic-Indic (U+06F0..) or Devanagari (U+0966..); its value 0..9 and *n its bytes,
** or -1. */
static int pw_digit(const char *t, size_t b, size_t e, size_t *n)
{
    static const struct { const char *lead; unsigned char first; } scripts[] = {
        {"\xEF\xBC", 0x90}, {"\xD9", 0xA0}, {"\xDB", 0xB0}, {"\xE0\xA5", 0xA6}};
    if (is_digit(t[b])) {
        *n = 1;
        return t[b] - '0';
    }
    for (size_t k = 0; k < sizeof scripts / sizeof *scripts; k++) {
        size_t l = strlen(scripts[k].lead);
        unsigned char last;
        if (e - b < l + 1 || memcmp(t + b, scripts[k].lead, l)) continue;
        last = (unsigned char)t[b + l];
        if (last < scripts[k].first || last > scripts[k].first + 9) continue;
        *n = l + 1;
        return last - scripts[k].first;
    }
    return -1;
}

/* The value a tag's content names: 1/0 (yes/no) or 1..5 (grade), else PW_INVALID,
** PW_OUT_OF_RANGE (a whole number outside 1..5 for grades) or PW_ECHO_N (the "N" of the grade
** instructions). */
static int pw_value_at(const char *t, size_t b, size_t e, arb_pointwise_kind kind, size_t *at)
{
    for (;;) {
        size_t b0 = b, e0 = e, l = 0;
        while (b < e && (is_space(t[b]) || (l = PW_MATCH(t, b, e, pw_spaces, 0))))
            b += is_space(t[b]) ? 1 : l;
        while (e > b && (is_space(t[e - 1]) || (l = PW_MATCH(t, b, e, pw_spaces, 1)) ||
                         (l = PW_MATCH(t, b, e, pw_trailing, 1))))
            e -= is_space(t[e - 1]) ? 1 : l;
        for (size_t k = 0; k < sizeof pw_quotes / sizeof pw_quotes[0]; k++) {
            size_t lo = strlen(pw_quotes[k][0]), lc = strlen(pw_quotes[k][1]);
            if (e - b >= lo + lc + 1 && memcmp(t + b, pw_quotes[k][0], lo) == 0 &&
                memcmp(t + e - lc, pw_quotes[k][1], lc) == 0) {
                b += lo;
                e -= lc;
                break;
            }
        }
        if (b == b0 && e == e0) break;
    }
    size_t n = e - b;
    *at = b;
    if (kind == ARB_POINTWISE_YESNO) {
        if (n == 7 && starts_with_ci(t, e, b, "correct")) return 1;
        if (n == 9 && starts_with_ci(t, e, b, "incorrect")) return 0;
        return PW_INVALID;
    }
    if (n == 1 && (t[b] == 'N' || t[b] == 'n')) return PW_ECHO_N;
    /* a whole number in one script's digits: 1..5 is the grade, another is out of range */
    size_t i = b, len = 0, digits = 0;
    int value = 0, d;
    while (i < e && (d = pw_digit(t, i, e, &len)) >= 0) {
        value = digits++ == 0 ? d : 10;
        i += len;
    }
    if (digits == 0 || i != e) return PW_INVALID;
    return value >= 1 && value <= 5 ? value : PW_OUT_OF_RANGE;
}

static int pw_value(const char *t, size_t b, size_t e, arb_pointwise_kind kind)
{
    size_t at;
    return pw_value_at(t, b, e, kind, &at);
}

/* Does the span [b, e) of lines hold the instructions' example phrase (see above)? */
static int pw_echo_lines(const char *t, const pw_tag *tags, size_t n, size_t b, size_t e,
                         arb_pointwise_kind kind)
{
    int seen_correct = 0, seen_incorrect = 0;
    for (size_t k = 0; k < n; k++) {
        if (tags[k].ob < b || tags[k].oe > e) continue;
        int v = pw_value(t, tags[k].cb, tags[k].ce, kind);
        if (kind == ARB_POINTWISE_GRADE && v == PW_ECHO_N) return 1;
        seen_correct |= kind == ARB_POINTWISE_YESNO && v == 1;
        seen_incorrect |= kind == ARB_POINTWISE_YESNO && v == 0;
    }
    return seen_correct && seen_incorrect;
}

#define PW_MAX_TAGS 64 /* a reply with more <answer> tags than this is not a verdict */

/* Returns the value (yes/no: 1 correct, 0 incorrect; grade: 1..5), or -1 with *reason (a
** static string; reason may be NULL) for E. text is borrowed and read within [0, len). */
int arb_pointwise_extract(const char *text, size_t len, arb_pointwise_kind kind,
                          const char **reason)
{
    size_t at;
    return arb__pointwise_locate(text, len, kind, reason, &at);
}

/* See internal.h. */
int arb__pointwise_locate(const char *text, size_t len, arb_pointwise_kind kind,
                          const char **reason, size_t *at)
{
    *at = SIZE_MAX;
    const char *why_local;
    if (!reason) reason = &why_local;
    *reason = NULL;
    if (!text || (kind != ARB_POINTWISE_YESNO && kind != ARB_POINTWISE_GRADE)) {
        *reason = "no reply";
        return -1;
    }
    size_t rb, re;
    result_region(text, len, &rb, &re);
    pw_tag tags[PW_MAX_TAGS];
    size_t n = 0, open = SIZE_MAX, open_len = 0;
    for (size_t i = rb; i < re; i++) {
        if (text[i] != '<') continue;
        size_t tl;
        if ((tl = tag_at(text, re, i, "answer", 0))) {
            if (open != SIZE_MAX) {
                *reason = "nested <answer> tags";
                return -1;
            }
            open = i;
            open_len = tl;
            i += tl - 1;
        } else if ((tl = tag_at(text, re, i, "answer", 1))) {
            if (open == SIZE_MAX) {
                *reason = "unmatched </answer> tag";
                return -1;
            }
            if (n == PW_MAX_TAGS) {
                *reason = "too many <answer> tags";
                return -1;
            }
            tags[n++] = (pw_tag){.ob = open, .cb = open + open_len, .ce = i, .oe = i + tl};
            open = SIZE_MAX;
            i += tl - 1;
        }
    }
    if (open != SIZE_MAX) {
        *reason = "unclosed <answer> tag";
        return -1;
    }
    if (n == 0) {
        *reason = "no <answer> tag";
        return -1;
    }
    const pw_tag *last = &tags[n - 1];
    size_t lb = line_start(text, last->ob), le = line_end(text, len, last->oe);
    if (pw_echo_lines(text, tags, n, lb, le, kind)) {
        *reason = "echoed from the instructions";
        return -1;
    }
    size_t value_at;
    int v = pw_value_at(text, last->cb, last->ce, kind, &value_at);
    if (v < 0) {
        *reason = v == PW_OUT_OF_RANGE ? "answer out of range" : "answer is not a valid value";
        return -1;
    }
    for (size_t k = 0; k + 1 < n; k++) {
        int other = pw_value(text, tags[k].cb, tags[k].ce, kind);
        if (other == v) continue;
        size_t b = line_start(text, tags[k].ob), e = line_end(text, len, tags[k].oe);
        if (pw_echo_lines(text, tags, n, b, e, kind)) continue;
        *reason = "several different answers";
        return -1;
    }
    *at = value_at;
    return v;
}
