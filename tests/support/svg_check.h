/*
** svg_check.h -- a small checker that SVG written by html.c is well formed and inert: balanced
** tags of a fixed list of elements and attributes (no scripts, event handlers or links),
** quoted values, only the escaper's entities, unique ids that every reference names, valid
** UTF-8. Header-only (static functions) so the unit tests (tests/test_html.c) and the fuzz
** target (fuzz/fuzz_html.c) share it without a library of their own.
*/
#ifndef ARB_SVG_CHECK_H
#define ARB_SVG_CHECK_H

#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static inline int contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t k = 0;
        while (k < n && p[k] && tolower((unsigned char)p[k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == n) return 1;
    }
    return 0;
}

/* ---- a tiny well-formedness checker ------------------------------------------------------- */

static const char *const allowed_elements[] = {
    "svg", "title", "desc", "defs", "pattern", "linearGradient", "stop", "rect", "line", "text",
    "g", "polyline", "polygon", "circle", NULL};
static const char *const allowed_attrs[] = {
    "xmlns", "class", "viewBox", "width", "height", "role", "aria-labelledby", "font-size", "id",
    "patternUnits", "patternTransform", "fill", "stroke", "stroke-width", "stroke-dasharray",
    "stroke-linejoin", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "points",
    "text-anchor", "transform", "offset", "stop-color", NULL};

static inline int in_list(const char *const *list, const char *s, size_t n)
{
    for (; *list; list++)
        if (strlen(*list) == n && !memcmp(*list, s, n)) return 1;
    return 0;
}

/* The entities the escaper writes; anything else after '&' is an error. */
static inline size_t entity_len(const char *p)
{
    static const char *const ok[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;", "&#10;", "&#9;",
                                     NULL};
    for (int k = 0; ok[k]; k++)
        if (!strncmp(p, ok[k], strlen(ok[k]))) return strlen(ok[k]);
    return 0;
}

#define MAX_IDS 256

typedef struct checker {
    char ids[MAX_IDS][48];
    size_t n_ids;
    char refs[MAX_IDS][48];
    size_t n_refs;
    char msg[160];
} checker;

static inline const char *fail_at(checker *ck, const char *base, const char *p, const char *why)
{
    snprintf(ck->msg, sizeof ck->msg, "%s at byte %zu: %.40s", why, (size_t)(p - base), p);
    return ck->msg;
}

static inline void add_word(char list[][48], size_t *n, const char *s, size_t len)
{
    if (*n < MAX_IDS && len < 48) {
        memcpy(list[*n], s, len);
        list[*n][len] = '\0';
        (*n)++;
    }
}

/* NULL when s is a sequence of well-formed <svg> elements as html.c promises: balanced tags
** of the allowed elements and attributes only (no event handlers, no links), double-quoted
** values without '<', only the escaper's entities, no raw '>' in text, unique ids that every
** aria-labelledby and url(#...) reference names, valid UTF-8, no control characters other
** than newlines and tabs, and (with words set: the labels are known not to hold them) never "nan" or
** "inf". Else a message saying where. */
static inline const char *check_svg_words(checker *ck, const char *s, int words)
{
    memset(ck, 0, sizeof *ck);
    size_t n = strlen(s);
    if (!arb__utf8_valid(s, n, NULL)) return "not valid UTF-8";
    if (words && contains_ci(s, "nan"))
        return fail_at(ck, s, strstr(s, "nan") ? strstr(s, "nan") : s, "contains nan");
    if (words && contains_ci(s, "inf")) return "contains inf";
    const char *stack[64];
    size_t stack_len[64];
    int depth = 0, roots = 0;
    const char *p = s;
    while (*p) {
        unsigned char ch = (unsigned char)*p;
        if (ch < 0x20 && ch != '\n' && ch != '\t') return fail_at(ck, s, p, "control character");
        if (ch == 0x7f) return fail_at(ck, s, p, "DEL");
        if (ch == '>') return fail_at(ck, s, p, "raw '>' in text");
        if (ch == '&') {
            size_t e = entity_len(p);
            if (!e) return fail_at(ck, s, p, "unknown entity");
            p += e;
            continue;
        }
        if (ch != '<') {
            if (depth == 0 && !isspace(ch)) return fail_at(ck, s, p, "text outside <svg>");
            p++;
            continue;
        }
        if (p[1] == '/') {
            const char *name = p + 2;
            size_t len = strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
            if (depth == 0) return fail_at(ck, s, p, "close without open");
            depth--;
            if (len != stack_len[depth] || memcmp(name, stack[depth], len))
                return fail_at(ck, s, p, "mismatched close");
            if (name[len] != '>') return fail_at(ck, s, p, "bad close");
            p = name + len + 1;
            continue;
        }
        const char *name = p + 1;
        size_t len = strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
        if (!in_list(allowed_elements, name, len)) return fail_at(ck, s, p, "element not allowed");
        if (depth == 0) {
            if (len != 3 || memcmp(name, "svg", 3)) return fail_at(ck, s, p, "root is not svg");
            roots++;
        } else if (len == 3 && !memcmp(name, "svg", 3)) {
            return fail_at(ck, s, p, "nested svg");
        }
        p = name + len;
        int self_closing = 0;
        for (;;) {
            while (*p == ' ' || *p == '\n') p++;
            if (p[0] == '/' && p[1] == '>') {
                self_closing = 1;
                p += 2;
                break;
            }
            if (*p == '>') {
                p++;
                break;
            }
            const char *attr = p;
            size_t alen = strspn(attr, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ12-");
            if (!in_list(allowed_attrs, attr, alen)) return fail_at(ck, s, p, "attribute not allowed");
            if (attr[alen] != '=' || attr[alen + 1] != '"') return fail_at(ck, s, p, "unquoted");
            const char *v = attr + alen + 2, *q = v;
            while (*q && *q != '"') {
                if (*q == '<') return fail_at(ck, s, q, "'<' in attribute");
                if (*q == '&') {
                    size_t e = entity_len(q);
                    if (!e) return fail_at(ck, s, q, "unknown entity in attribute");
                    q += e;
                    continue;
                }
                q++;
            }
            if (!*q) return fail_at(ck, s, p, "unterminated attribute");
            size_t vlen = (size_t)(q - v);
            if (alen == 2 && !memcmp(attr, "id", 2)) {
                for (size_t k = 0; k < ck->n_ids; k++)
                    if (strlen(ck->ids[k]) == vlen && !memcmp(ck->ids[k], v, vlen))
                        return fail_at(ck, s, v, "duplicate id");
                add_word(ck->ids, &ck->n_ids, v, vlen);
            } else if (alen == 15 && !memcmp(attr, "aria-labelledby", 15)) {
                for (const char *w = v; w < q;) {
                    size_t wl = strcspn(w, " \"");
                    add_word(ck->refs, &ck->n_refs, w, wl);
                    w += wl;
                    while (*w == ' ') w++;
                }
            } else if (vlen > 5 && !memcmp(v, "url(#", 5)) {
                add_word(ck->refs, &ck->n_refs, v + 5, vlen - 6);
            }
            p = q + 1;
        }
        if (!self_closing) {
            if (depth == 64) return "too deep";
            stack[depth] = name;
            stack_len[depth] = len;
            depth++;
        }
    }
    if (depth) return "unclosed element";
    if (!roots) return "no <svg>";
    for (size_t r = 0; r < ck->n_refs; r++) {
        int found = 0;
        for (size_t k = 0; k < ck->n_ids; k++) found |= !strcmp(ck->refs[r], ck->ids[k]);
        if (!found) {
            snprintf(ck->msg, sizeof ck->msg, "reference to missing id %s", ck->refs[r]);
            return ck->msg;
        }
    }
    return NULL;
}

static inline const char *check_svg(checker *ck, const char *s) { return check_svg_words(ck, s, 1); }

#endif
