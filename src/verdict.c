/*
** verdict.c -- position verdicts from a judge's free text (METHODS §2.1, §2.4).
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
static char last_bracket(const char *t, size_t len, int options)
{
    if (len < 5) return 0;
    for (size_t i = len - 5 + 1; i-- > 0;) {
        if (!is_bracket(t, i)) continue;
        char key = option_key(t[i + 2]);
        size_t b = line_start(t, i), e = line_end(t, len, i);
        for (size_t j = b; j + 5 <= e; j++)
            if (is_bracket(t, j) && option_key(t[j + 2]) != key) return 0;
        char v = key_in_mode(key, options);
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

/* The option named by t[b, e) after trimming, or 0. */
static char single_option(const char *t, size_t b, size_t e, int options)
{
    return key_in_mode(single_key(t, b, e), options);
}

/* Rule 2: the last line that is not white space only. */
static char last_line(const char *t, size_t len, int options)
{
    size_t e = len;
    while (e > 0 && is_space(t[e - 1])) e--;
    if (e == 0) return 0;
    size_t b = e;
    while (b > 0 && t[b - 1] != '\n') b--;
    return single_option(t, b, e, options);
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
static char answer_tag(const char *t, size_t len, int options)
{
    if (len < ANSWER_OPEN_LEN + ANSWER_CLOSE_LEN) return 0;
    for (size_t c = len - ANSWER_CLOSE_LEN + 1; c-- > ANSWER_OPEN_LEN;) {
        size_t o;
        if (!answer_tag_at(t, len, c, &o)) continue;
        char v = single_option(t, o + ANSWER_OPEN_LEN, c, options);
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

/* The verdict in field of a JSON object t[b, e), or 0. */
static char json_candidate(const char *t, size_t b, size_t e, int options, const char *field)
{
    return key_in_mode(json_key(t, b, e, field), options);
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
static char json_field_rule(const char *t, size_t len, int options, const char *field)
{
    char v = json_candidate(t, 0, len, options, field);
    if (v) return v;
    size_t b, e;
    if (last_json_fence(t, len, &b, &e) && (v = json_candidate(t, b, e, options, field)))
        return v;
    /* The last balanced {...}, counting braces backwards from the last '}'. Braces inside
    ** JSON strings can unbalance the count; the first-'{'-to-last-'}' span covers that case
    ** when the object is the only one. */
    size_t last = len;
    while (last > 0 && t[last - 1] != '}') last--;
    if (last == 0) return 0;
    size_t i = balanced_start(t, len, last - 1);
    if (i != len && (v = json_candidate(t, i, last, options, field)))
        return json_echo(t, len, i, field, v) ? 0 : v;
    const char *first = memchr(t, '{', last);
    if (first && (i == len || (size_t)(first - t) != i))
        return json_candidate(t, (size_t)(first - t), last, options, field);
    return 0;
}

/* Returns 'A'..'D' valid for the mode, or 'E' (also for a NULL text or a mode outside 2..4).
** text is borrowed and read only within [0, len). */
char arb_verdict_extract(const char *text, size_t len, int options, const char *json_field)
{
    if (!text || options < 2 || options > 4) return 'E';
    char v = last_bracket(text, len, options);
    if (v) return v;
    if ((v = last_line(text, len, options))) return v;
    if ((v = answer_tag(text, len, options))) return v;
    if (json_field && *json_field && (v = json_field_rule(text, len, options, json_field)))
        return v;
    return 'E';
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
