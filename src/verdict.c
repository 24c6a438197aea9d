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

/* Rule 1. Returns the verdict, 'E' for an invalid last bracket, 0 when there is no bracket. */
static char last_bracket(const char *t, size_t len, int options)
{
    if (len < 5) return 0;
    for (size_t i = len - 5 + 1; i-- > 0;) {
        if (t[i] == '[' && t[i + 1] == '[' && t[i + 3] == ']' && t[i + 4] == ']' &&
            (is_alpha(t[i + 2]) || is_digit(t[i + 2]))) {
            char v = option_of(t[i + 2], options);
            return v ? v : 'E';
        }
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

/* The option named by t[b, e) after trimming, or 0. */
static char single_option(const char *t, size_t b, size_t e, int options)
{
    trim_decorations(t, &b, &e);
    return e - b == 1 ? option_of(t[b], options) : 0;
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

/* Rule 3: scans backwards for closing tags; each one's content runs back to the nearest
** opening tag. The last tag whose content is a single option wins. */
static char answer_tag(const char *t, size_t len, int options)
{
    static const char open[] = "<answer>", close[] = "</answer>";
    const size_t n_open = sizeof open - 1, n_close = sizeof close - 1;
    if (len < n_open + n_close) return 0;
    for (size_t c = len - n_close + 1; c-- > n_open;) {
        if (t[c] != '<' || !starts_with_ci(t, len, c, close)) continue;
        /* The content is short when it is a verdict: look back a bounded distance only, so a
        ** text full of closing tags stays linear. */
        size_t lo = c > 64 + n_open ? c - 64 - n_open : 0;
        for (size_t o = c - n_open + 1; o-- > lo;) {
            if (t[o] != '<') continue;
            if (starts_with_ci(t, len, o, open)) {
                char v = single_option(t, o + n_open, c, options);
                if (v) return v;
                break;
            }
        }
    }
    return 0;
}

/* The verdict in field of a JSON object t[b, e), or 0. */
static char json_candidate(const char *t, size_t b, size_t e, int options, const char *field)
{
    while (b < e && is_space(t[b])) b++;
    while (e > b && is_space(t[e - 1])) e--;
    if (e - b < 2 || t[b] != '{' || t[e - 1] != '}') return 0;
    json_t *obj = json_loadb(t + b, e - b, 0, NULL);
    if (!obj) return 0;
    char v = 0;
    json_t *val = json_object_get(obj, field);
    if (json_is_string(val)) {
        const char *s = json_string_value(val);
        v = single_option(s, 0, json_string_length(val), options);
    } else if (json_is_integer(val)) {
        json_int_t n = json_integer_value(val);
        if (n >= 1 && n <= options) v = (char)('A' + (n - 1));
    }
    json_decref(obj);
    return v;
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
    size_t depth = 0, i = last;
    while (i-- > 0) {
        if (t[i] == '}') depth++;
        else if (t[i] == '{' && --depth == 0) break;
    }
    if (depth == 0 && (v = json_candidate(t, i, last, options, field))) return v;
    const char *first = memchr(t, '{', last);
    if (first && (depth != 0 || (size_t)(first - t) != i))
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
