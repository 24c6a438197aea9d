/*
** fuzz_html.c -- libFuzzer target for the escaping and the SVG charts of html.c: whatever the
** labels and titles hold (here: the input, split at 0x01 bytes into up to four strings) and
** whatever the numbers (the input's bytes read as doubles, NaN and infinities included), the
** escaped text must hold no raw markup character and every chart must pass the well-formedness
** checker of the unit tests (tests/support/svg_check.h), so no input can add an element or an
** attribute to the report.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/support/svg_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts when s[0..n) holds an explicit bidirectional control (U+202A..U+202E,
** U+2066..U+2069). */
static void check_no_bidi_control(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i + 2 < n; i++)
        if (p[i] == 0xE2 && ((p[i + 1] == 0x80 && p[i + 2] >= 0xAA && p[i + 2] <= 0xAE) ||
                             (p[i + 1] == 0x81 && p[i + 2] >= 0xA6 && p[i + 2] <= 0xA9)))
            abort();
}

/* The escaped text must not hold < > " , a control character (tab and newline aside) or an
** explicit bidirectional control, and must be valid UTF-8; in Markdown the only tag is <br>. */
static void check_text(const arb__buf *b, int markdown)
{
    if (!b->len) return;
    if (!arb__utf8_valid(b->data, b->len, NULL)) abort();
    check_no_bidi_control(b->data, b->len);
    for (size_t i = 0; i < b->len; i++) {
        unsigned char c = (unsigned char)b->data[i];
        if (c == '<') {
            if (!markdown || strncmp(b->data + i, "<br>", 4)) abort();
            i += 3;
            continue;
        }
        if (c == '>' || (!markdown && c == '"') || (c < 0x20 && c != '\t' && c != '\n') ||
            c == 0x7f)
            abort();
        if (markdown && c == '|' && (i == 0 || b->data[i - 1] != '\\')) abort();
    }
}

static void check_chart(arb__buf *b, int rc)
{
    if (rc) abort(); /* no memory cap was set: a chart always fits */
    check_no_bidi_control(b->data, b->len);
    checker ck;
    const char *why = check_svg_words(&ck, b->data, 0);
    if (why) {
        fprintf(stderr, "chart not well formed: %s\n", why);
        abort();
    }
    arb__buf_reset(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* up to four NUL-terminated strings, cut at 0x01 */
    char *copy = malloc(size + 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    const char *str[4] = {"", "", "", ""};
    size_t n_str = 0;
    for (char *p = copy; n_str < 4;) {
        str[n_str++] = p;
        char *cut = strchr(p, '\x01');
        if (!cut) break;
        *cut = '\0';
        p = cut + 1;
    }
    double v[6];
    for (size_t k = 0; k < 6; k++) {
        uint64_t bits = 0;
        for (size_t i = 0; i < 8 && k * 8 + i < size; i++) bits |= (uint64_t)data[k * 8 + i] << (8 * i);
        memcpy(&v[k], &bits, sizeof v[k]);
    }

    arb__buf b;
    arb__buf_init(&b, 0);
    for (size_t k = 0; k < n_str; k++) {
        if (arb__html_text(&b, str[k])) abort();
        check_text(&b, 0);
        arb__buf_reset(&b);
        if (arb__html_attr(&b, str[k])) abort();
        check_text(&b, 0);
        arb__buf_reset(&b);
        if (arb__md_text(&b, str[k])) abort();
        check_text(&b, 1);
        arb__buf_reset(&b);
        if (arb__plain_text(&b, str[k])) abort(); /* text for textContent: no markup escaped */
        if (b.len && !arb__utf8_valid(b.data, b.len, NULL)) abort();
        check_no_bidi_control(b.data, b.len);
        arb__buf_reset(&b);
    }
    const char *rows[2] = {str[1], str[2]}, *cols[3] = {str[2], str[3], str[0]};
    check_chart(&b, arb__svg_stacked_bars(&b, str[0], rows, 2, cols, 3, v));
    check_chart(&b, arb__svg_heatmap(&b, str[0], rows, 2, cols, 3, v, v[0], v[1], str[3], v[2]));
    check_chart(&b, arb__svg_intervals(&b, str[0], str[3], rows, 2, v, v + 2, v + 4, v[1]));
    check_chart(&b, arb__svg_bars(&b, str[0], str[1], rows, 2, v));
    check_chart(&b, arb__svg_lines(&b, str[0], str[1], str[2], rows, 2, v, 3));
    arb__buf_free(&b);
    free(copy);
    return 0;
}
