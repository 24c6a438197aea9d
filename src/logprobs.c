/*
** logprobs.c -- how sure a judge was of its verdict: the distribution of the verdict token over
** the active options, read from the token logprobs of an OpenAI-compatible reply
** (choices[0].logprobs.content: token, logprob, top_logprobs). G-Eval's idea (Liu et al.
** 2023): the probabilities of the options at the verdict's position say more than its argmax.
**
** How the verdict token is found. The verdict parsers (verdict.c) give the byte offset of the
** letter, digit or word that names the verdict in the answer (the reply text without its
** thinking). The tokens concatenate to the whole reply text, thinking included, so the answer
** from that offset to its end (the "tail") is looked for as the LAST occurrence in the
** concatenated tokens; the token holding the tail's first byte is the verdict token. This
** holds whatever the tokenizer did around it: "[[", "A", "]]" (the letter alone), "[[A", "]]"
** (merged with what precedes it), "A]]" (with what follows). The part of the verdict token
** before the verdict's byte (e.g. "[["; white space at its start ignored) is its prefix: an
** alternative of top_logprobs counts for option X when it has the same prefix and then names
** X (a letter of either case or an option number for positions, 1..5 for grades, a start of
** "correct"/"incorrect" for yes/no, 1 or 2 after "candidate_" for persona phase 2's
** "preferred", where the two values first differ), followed by no letter or digit. Alternatives
** naming the same option add up (" A" and "a").
**
** The result renormalises the options' probabilities to sum to 1 ("options"), and keeps the
** mass they had ("in_options", from the chosen token and its top_logprobs) and the rest
** ("other_mass" = 1 - in_options: other tokens, including those beyond top_logprobs). With
** top_logprobs 0 only the chosen token is known: its option gets 1 and other_mass says how
** much was not seen. Invariant: nothing is ever reported as probability 0 for lack of data --
** no logprobs gives no result (NULL), an unreadable verdict token gives "options": null and
** a reason.
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTIONS 5

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_alnum(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static const char *skip_space(const char *s)
{
    while (is_space(*s)) s++;
    return s;
}

/* The labels of the options of a verdict kind, and how many are active. */
static size_t option_labels(const arb__verdict_spec *spec, const char *labels[MAX_OPTIONS])
{
    static const char *const positions[] = {"A", "B", "C", "D"};
    static const char *const grades[] = {"1", "2", "3", "4", "5"};
    switch (spec->kind) {
    case ARB__VERDICT_POSITION:
        for (int i = 0; i < spec->options; i++) labels[i] = positions[i];
        return (size_t)spec->options;
    case ARB__VERDICT_GRADE:
        for (int i = 0; i < 5; i++) labels[i] = grades[i];
        return 5;
    case ARB__VERDICT_YESNO:
        labels[0] = "correct";
        labels[1] = "incorrect";
        return 2;
    case ARB__VERDICT_PREFERRED:
        labels[0] = "candidate_1";
        labels[1] = "candidate_2";
        return 2;
    default:
        return 0;
    }
}

/* The option (index into option_labels) that the token text alt names after prefix (see the
** file comment), or -1. */
static int option_named(const char *alt, const char *prefix, size_t prefix_len,
                        const arb__verdict_spec *spec)
{
    alt = skip_space(alt);
    if (strncmp(alt, prefix, prefix_len)) return -1;
    const char *r = alt + prefix_len;
    char c = r[0];
    int idx = -1;
    switch (spec->kind) {
    case ARB__VERDICT_POSITION:
        if (c >= 'A' && c <= 'Z') idx = c - 'A';
        else if (c >= 'a' && c <= 'z') idx = c - 'a';
        else if (c >= '1' && c <= '9') idx = c - '1';
        return idx >= 0 && idx < spec->options && !is_alnum(r[1]) ? idx : -1;
    case ARB__VERDICT_GRADE:
        return c >= '1' && c <= '5' && !is_alnum(r[1]) ? c - '1' : -1;
    case ARB__VERDICT_YESNO: {
        char word[10];
        size_t n = 0;
        while (n < sizeof word && ((r[n] >= 'a' && r[n] <= 'z') || (r[n] >= 'A' && r[n] <= 'Z'))) {
            word[n] = (char)(r[n] | 0x20);
            n++;
        }
        if (n == 0 || n == sizeof word || is_alnum(r[n])) return -1;
        if (n <= 7 && !strncmp("correct", word, n)) return 0;
        if (n <= 9 && !strncmp("incorrect", word, n)) return 1;
        return -1;
    }
    case ARB__VERDICT_PREFERRED: /* the prefix holds "candidate_" or its end */
        return (c == '1' || c == '2') && !is_alnum(r[1]) ? c - '1' : -1;
    default:
        return -1;
    }
}

/* The verdict of answer as an option index, and *at its offset; -1 when there is none. */
static int locate(const char *answer, const arb__verdict_spec *spec, size_t *at)
{
    size_t len = strlen(answer);
    const char *why;
    int v;
    switch (spec->kind) {
    case ARB__VERDICT_POSITION: {
        char c = arb__verdict_locate(answer, len, spec->options, spec->json_field, at);
        return c >= 'A' && c <= 'D' ? c - 'A' : -1;
    }
    case ARB__VERDICT_GRADE:
        v = arb__pointwise_locate(answer, len, ARB_POINTWISE_GRADE, &why, at);
        return v >= 1 ? v - 1 : -1;
    case ARB__VERDICT_YESNO:
        v = arb__pointwise_locate(answer, len, ARB_POINTWISE_YESNO, &why, at);
        return v < 0 ? -1 : v == 1 ? 0 : 1;
    case ARB__VERDICT_PREFERRED:
        return arb__persona_preferred_locate(answer, len, at);
    default:
        return -1;
    }
}

static const char *kind_name(arb__verdict_kind k)
{
    return k == ARB__VERDICT_GRADE       ? "grade"
           : k == ARB__VERDICT_YESNO     ? "yesno"
           : k == ARB__VERDICT_PREFERRED ? "preferred"
                                         : "position";
}

/* The text of token object t, or NULL. */
static const char *token_text(const json_t *t)
{
    return json_string_value(json_object_get(t, "token"));
}

/* Concatenates the tokens' texts into *text; starts[i] is where token i begins (n + 1 entries,
** the last the total length). A token without text counts as empty. Returns 0 or -1. */
static int concat_tokens(const json_t *tokens, char **text, size_t **starts)
{
    size_t n = json_array_size(tokens);
    arb__buf b;
    arb__buf_init(&b, 0);
    *starts = malloc((n + 1) * sizeof **starts);
    int err = !*starts;
    for (size_t i = 0; !err && i < n; i++) {
        const json_t *tok = json_array_get(tokens, i);
        (*starts)[i] = b.len;
        const char *s = token_text(tok);
        /* token strings may hold "\u0000": the length is jansson's, not strlen's */
        if (s) err = arb__buf_append(&b, s, json_string_length(json_object_get(tok, "token")));
    }
    if (!err) (*starts)[n] = b.len;
    if (!err && !(*text = b.data ? arb__buf_steal(&b) : arb__strdup(""))) err = 1;
    if (err) {
        arb__buf_free(&b);
        free(*starts);
        *starts = NULL;
        *text = NULL;
        return -1;
    }
    return 0;
}

/* The start of the last occurrence of needle in hay, or SIZE_MAX. */
static size_t last_occurrence(const char *hay, size_t hay_len, const char *needle, size_t n)
{
    if (n == 0 || n > hay_len) return SIZE_MAX;
    for (size_t i = hay_len - n + 1; i-- > 0;)
        if (hay[i] == needle[0] && !memcmp(hay + i, needle, n)) return i;
    return SIZE_MAX;
}

/* A logprob as a probability, or -1 when it is not a number. */
static double probability(const json_t *lp)
{
    if (!json_is_number(lp)) return -1;
    double p = exp(json_number_value(lp));
    return isfinite(p) && p >= 0 ? (p > 1 ? 1 : p) : -1;
}

/* Sets out to {"kind", "options": null, "reason"}. Returns 0 or -1. */
static int unreadable(const arb__verdict_spec *spec, const char *reason, char **out)
{
    json_t *o = json_object();
    int bad = !o || arb__json_set(o, "kind", json_string(kind_name(spec->kind))) ||
              arb__json_set(o, "options", json_null()) ||
              arb__json_set(o, "reason", json_string(reason));
    *out = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return *out ? 0 : -1;
}

/* Sets out to the distribution (see internal.h) of the verdict token tokens[k], whose verdict
** byte is at inner offset `inner`, the answer's verdict being option `chosen`. */
static int distribution(const json_t *tokens, size_t k, size_t inner, int chosen,
                        const arb__verdict_spec *spec, char **out)
{
    const char *labels[MAX_OPTIONS];
    size_t n_opt = option_labels(spec, labels);
    const json_t *tok = json_array_get(tokens, k);
    const char *text = token_text(tok);
    const char *prefix = skip_space(text);
    size_t skipped = (size_t)(prefix - text);
    size_t prefix_len = inner > skipped ? inner - skipped : 0;
    if (option_named(text, prefix, prefix_len, spec) != chosen)
        return unreadable(spec, "the verdict token does not name the verdict", out);
    double p_chosen = probability(json_object_get(tok, "logprob"));
    if (p_chosen < 0) return unreadable(spec, "the verdict token has no logprob", out);
    double mass[MAX_OPTIONS] = {0};
    mass[chosen] = p_chosen;
    size_t alternatives = 1;
    const json_t *top = json_object_get(tok, "top_logprobs");
    for (size_t i = 0; i < json_array_size(top); i++) {
        const json_t *alt = json_array_get(top, i);
        const char *alt_text = token_text(alt);
        double p = probability(json_object_get(alt, "logprob"));
        if (!alt_text || p < 0 || !strcmp(alt_text, text)) continue; /* the chosen one: counted */
        alternatives++;
        int o = option_named(alt_text, prefix, prefix_len, spec);
        if (o >= 0) mass[o] += p;
    }
    double in_options = 0;
    for (size_t i = 0; i < n_opt; i++) in_options += mass[i];
    if (in_options > 1) in_options = 1; /* rounding in a server's logprobs */
    json_t *o = json_object(), *opts = json_object();
    int bad = !o || !opts;
    double expected = 0, total = 0;
    for (size_t i = 0; i < n_opt; i++) total += mass[i];
    for (size_t i = 0; !bad && i < n_opt; i++) {
        double p = mass[i] / total; /* total >= p_chosen > 0 unless it underflowed */
        if (!isfinite(p)) p = (int)i == chosen ? 1 : 0;
        expected += p * (double)(i + 1);
        bad = arb__json_set(opts, labels[i], json_real(p));
    }
    if (!bad) {
        bad = arb__json_set(o, "options", opts) ||
              arb__json_set(o, "kind", json_string(kind_name(spec->kind))) ||
              arb__json_set(o, "verdict", json_string(labels[chosen])) ||
              arb__json_set(o, "in_options", json_real(in_options)) ||
              arb__json_set(o, "other_mass", json_real(1 - in_options)) ||
              arb__json_set(o, "alternatives", json_integer((json_int_t)alternatives)) ||
              (spec->kind == ARB__VERDICT_GRADE && arb__json_set(o, "expected", json_real(expected)));
        opts = NULL;
    }
    json_decref(opts);
    *out = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
    json_decref(o);
    return *out ? 0 : -1;
}

/* See internal.h. */
int arb__logprobs_verdict(const json_t *tokens, const char *answer,
                          const arb__verdict_spec *spec, char **out)
{
    *out = NULL;
    if (!tokens || !spec || spec->kind == ARB__VERDICT_NONE) return 0;
    if (!json_is_array(tokens) || json_array_size(tokens) == 0)
        return unreadable(spec, "the reply's logprobs hold no tokens", out);
    size_t at;
    int chosen = answer ? locate(answer, spec, &at) : -1;
    if (chosen < 0) return unreadable(spec, "no valid verdict", out);
    if (at == SIZE_MAX) return unreadable(spec, "the verdict's place in the text is unknown", out);
    char *text;
    size_t *starts;
    if (concat_tokens(tokens, &text, &starts)) return -1;
    size_t n = json_array_size(tokens);
    size_t off = last_occurrence(text, starts[n], answer + at, strlen(answer + at));
    int rc;
    if (off == SIZE_MAX) {
        rc = unreadable(spec, "the verdict is not in the tokens", out);
    } else {
        size_t k = 0; /* the token holding byte off: the last one starting at or before it */
        while (k + 1 < n && starts[k + 1] <= off) k++;
        rc = distribution(tokens, k, off - starts[k], chosen, spec, out);
    }
    free(text);
    free(starts);
    return rc;
}

/* ---- the verdict spec as stored text (batch_calls.verdict) ------------------------------- */

/* See internal.h. */
char *arb__verdict_spec_text(const arb__verdict_spec *spec)
{
    switch (spec ? spec->kind : ARB__VERDICT_NONE) {
    case ARB__VERDICT_POSITION:
        return spec->json_field ? arb__sprintf("position:%d:%s", spec->options, spec->json_field)
                                : arb__sprintf("position:%d", spec->options);
    case ARB__VERDICT_GRADE: return arb__strdup("grade");
    case ARB__VERDICT_YESNO: return arb__strdup("yesno");
    case ARB__VERDICT_PREFERRED: return arb__strdup("preferred");
    case ARB__VERDICT_NONE: break;
    }
    return NULL;
}

/* See internal.h. *json_field (caller frees) holds the field name spec->json_field points to. */
int arb__verdict_spec_parse(const char *text, arb__verdict_spec *spec, char **json_field)
{
    memset(spec, 0, sizeof *spec);
    *json_field = NULL;
    if (!text) return 0;
    if (!strcmp(text, "grade")) spec->kind = ARB__VERDICT_GRADE;
    else if (!strcmp(text, "yesno")) spec->kind = ARB__VERDICT_YESNO;
    else if (!strcmp(text, "preferred")) spec->kind = ARB__VERDICT_PREFERRED;
    else if (!strncmp(text, "position:", 9) && text[9] >= '2' && text[9] <= '4' &&
             (text[10] == '\0' || (text[10] == ':' && text[11]))) {
        spec->kind = ARB__VERDICT_POSITION;
        spec->options = text[9] - '0';
        if (text[10] == ':' && !(*json_field = arb__strdup(text + 11))) return -1;
        spec->json_field = *json_field;
    } else {
        return -1;
    }
    return 0;
}
