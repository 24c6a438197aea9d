/*
** html.c -- untrusted text made safe for HTML and Markdown, and the SVG charts of the HTML
** report, drawn as plain markup from arrays of numbers (no scripts, no external references).
**
** Invariants: every untrusted string (titles, names, labels, model output) reaches the output
** through one escaper, put_escaped(), so no input can open a tag, end an attribute, start a
** CDATA section or an entity; what it writes is valid UTF-8 without control characters (bad
** bytes become U+FFFD) and without the explicit bidirectional controls (embeddings, overrides
** and isolates, U+202A..U+202E and U+2066..U+2069), so a reply cannot reverse its own text (an
** RLO shows "[[A]]" as "]]A[[") nor spill its direction into what follows. Right-to-left text
** needs none of them: the implicit bidirectional algorithm orders Arabic and Hebrew, and the
** implicit marks (LRM, RLM, ALM), which reorder no letters, are kept. Numbers are written by fmt_number(), which never reads the locale; NaN
** and infinities never reach the output (they are drawn as "n/a" marks) and every coordinate
** is finite and clamped to its plot. The output depends only on the arguments and on the
** length of the buffer: element ids are an FNV-1a hash of both, so the same call gives the
** same bytes, two charts in one buffer never share an id, and there is no global state (no
** counter to share between threads). A function that fails leaves the buffer as it found it.
**
** It does not measure text (widths are estimated from code points, wide scripts counting
** double), wrap text, set a font (text inherits the page's), draw a visible heading (the page
** names each chart; the SVG <title> serves assistive technology and hovering), or decide what
** to draw: report.c does.
*/
#include "internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- escaping ----------------------------------------------------------------------------- */

#define REPLACEMENT_CHAR "\xEF\xBF\xBD" /* U+FFFD */

typedef enum { ESC_TEXT, ESC_ATTR, ESC_MD, ESC_PLAIN } esc_mode;

/* Decodes one code point of s[0..n) (n >= 1) into *cp and returns its length in bytes. A byte
** that does not start a valid sequence (overlong, surrogate, above U+10FFFF, cut short)
** decodes as U+FFFD of length 1: one replacement per bad byte, as arb__json_name does. */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    size_t need;
    uint32_t min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) { need = 1; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { need = 2; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 3; min = 0x10000; }
    else goto bad;
    if (n <= need) goto bad;
    uint32_t v = c & (0x3Fu >> need);
    for (size_t k = 1; k <= need; k++) {
        if ((s[k] & 0xC0) != 0x80) goto bad;
        v = (v << 6) | (s[k] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) goto bad;
    *cp = v;
    return need + 1;
bad:
    *cp = 0xFFFD;
    return 1;
}

/* C0 controls other than tab and newline, DEL and C1 controls: dropped, as they can drive a
** terminal that shows the file and XML refuses most of them. */
static int is_dropped(uint32_t cp)
{
    return (cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7F && cp <= 0x9F);
}

/* The explicit directional formatting characters: LRE, RLE, PDF, LRO, RLO and LRI, RLI, FSI,
** PDI. Dropped, not wrapped in <bdi>: isolation would keep an override from reaching the text
** around it but not from reversing the reply itself, which is what a reader judges, and <bdi>
** has no place in an attribute, an SVG <text> or Markdown. */
static int is_bidi_control(uint32_t cp)
{
    return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

/* What replaces code point cp in the given mode: NULL to copy its bytes, "" to drop it. */
static const char *replacement(uint32_t cp, esc_mode mode)
{
    if (mode == ESC_PLAIN && cp != 0xFFFD) /* no markup to escape */
        return is_dropped(cp) || is_bidi_control(cp) ? "" : NULL;
    switch (cp) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    /* Quotes only matter inside a tag; Markdown text has none (< and > are escaped), so
    ** there they stay readable. */
    case '"': return mode == ESC_MD ? NULL : "&quot;";
    case '\'': return mode == ESC_MD ? NULL : "&#39;";
    case '\n': return mode == ESC_ATTR ? "&#10;" : mode == ESC_MD ? "<br>" : NULL;
    case '\t': return mode == ESC_ATTR ? "&#9;" : NULL; /* attributes would fold them */
    /* U+FFFD is also what an invalid byte decodes to: its bytes must not be copied. U+FFFE
    ** and U+FFFF are not XML characters. */
    case 0xFFFD: case 0xFFFE: case 0xFFFF: return REPLACEMENT_CHAR;
    default: break;
    }
    if (mode == ESC_MD) {
        switch (cp) {
        case '|': return "\\|";
        case '\\': return "\\\\";
        case '`': return "\\`";
        case '*': return "\\*";
        case '_': return "\\_";
        case '[': return "\\[";
        case ']': return "\\]";
        case '#': return "\\#";
        case '~': return "\\~"; /* strikethrough on GitHub */
        case '$': return "\\$"; /* maths on GitHub: "$1.10 ... $1.00" */
        default: break;
        }
    }
    return is_dropped(cp) || is_bidi_control(cp) ? "" : NULL;
}

/* Appends s[0..n) escaped for mode; on failure b is cut back to its length on entry. Runs of
** bytes that need nothing are copied in one go. */
static int put_escaped(arb__buf *b, const char *s, size_t n, esc_mode mode)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t start = b->len, run = 0, i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = utf8_next(p + i, n - i, &cp);
        const char *rep = replacement(cp, mode);
        if (rep) {
            if (arb__buf_append(b, s + run, i - run) || arb__buf_puts(b, rep)) goto fail;
            run = i + len;
        }
        i += len;
    }
    if (arb__buf_append(b, s + run, n - run)) goto fail;
    return 0;
fail:
    if (b->data) {
        b->len = start;
        b->data[start] = '\0';
    }
    return -1;
}

int arb__html_text(arb__buf *b, const char *s)
{
    return s ? put_escaped(b, s, strlen(s), ESC_TEXT) : 0;
}

int arb__html_attr(arb__buf *b, const char *s)
{
    return s ? put_escaped(b, s, strlen(s), ESC_ATTR) : 0;
}

int arb__md_text(arb__buf *b, const char *s)
{
    return s ? put_escaped(b, s, strlen(s), ESC_MD) : 0;
}

int arb__plain_text(arb__buf *b, const char *s)
{
    return s ? put_escaped(b, s, strlen(s), ESC_PLAIN) : 0;
}

/* ---- numbers ------------------------------------------------------------------------------ */

/* x with the given decimals (0..6) into out, trailing zeros dropped when trim, without the
** locale: printf's "%f" would write "0,5" under a German LC_NUMERIC. Not finite: "0" (callers
** write "n/a" before getting here). */
static void fmt_number(char *out, size_t size, double x, int decimals, int trim)
{
    static const unsigned long long unit[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    if (decimals < 0) decimals = 0;
    if (decimals > 6) decimals = 6;
    if (!isfinite(x)) x = 0;
    double scaled = x * (double)unit[decimals];
    if (fabs(scaled) >= 9e15) { /* beyond exact integers: no decimal point to localise */
        snprintf(out, size, "%.0e", x);
        return;
    }
    long long v = llround(scaled);
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    char frac[8] = "";
    if (decimals > 0) {
        unsigned long long f = u % unit[decimals];
        for (int k = decimals - 1; k >= 0; k--, f /= 10) frac[k] = (char)('0' + f % 10);
        frac[decimals] = '\0';
        if (trim)
            for (int k = decimals - 1; k >= 0 && frac[k] == '0'; k--) frac[k] = '\0';
    }
    snprintf(out, size, "%s%llu%s%s", v < 0 ? "-" : "", u / unit[decimals], frac[0] ? "." : "",
             frac);
}

/* ---- layout and colours ------------------------------------------------------------------ */

/* Layout, in viewBox units (CSS pixels at a 800-pixel-wide chart). */
#define CHART_W 800.0
#define MARGIN 10.0
#define FS 12.0          /* labels, legend, axis names */
#define FS_SMALL 11.0    /* ticks and values: the smallest text drawn */
#define ROW_H 26.0
#define BAR_H 16.0
#define LABEL_MAX 200.0  /* widest row label before it is cut */
#define LEGEND_TEXT_MAX 160.0
#define LEGEND_ROW_H 20.0
#define SWATCH_W 14.0

#define INK "#222222"       /* labels */
#define INK_SOFT "#444444"  /* ticks */
#define INK_DARK "#1A1A1A"  /* text on light fills */
#define INK_WHITE "#FFFFFF" /* text on dark fills */
#define GRID "#E3E3E3"
#define AXIS "#666666"
#define NA_GREY "#999999"

/* Okabe & Ito's colour-blind-safe palette, in their order. */
static const char *const palette[8] = {"#E69F00", "#56B4E9", "#009E73", "#F0E442",
                                       "#0072B2", "#D55E00", "#CC79A7", "#000000"};
#define DATA_BLUE "#0072B2" /* one-colour charts */

static void parse_hex(const char *hex, int rgb[3])
{
    for (int k = 0; k < 3; k++) {
        int v = 0;
        for (int d = 0; d < 2; d++) {
            char ch = hex[1 + 2 * k + d];
            v = v * 16 + (ch >= 'A' ? ch - 'A' + 10 : ch - '0');
        }
        rgb[k] = v;
    }
}

/* Dark text on light fills, white on dark: whichever contrasts more with the fill by WCAG
** relative luminance (equal at about 0.179). */
static const char *ink_on(const int rgb[3])
{
    double lin[3];
    for (int k = 0; k < 3; k++) {
        double v = rgb[k] / 255.0;
        lin[k] = v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
    }
    double l = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
    return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? INK_DARK : INK_WHITE;
}

/* The heat map's colour scales, three stops each (t = 0, 0.5, 1). Sequential: light to dark
** blue through ColorBrewer's Blues. Diverging: ColorBrewer's RdBu (colour-blind safe), red
** below the centre, near-white at it, blue above, for signed differences around 0. */
typedef int ramp_def[3][3];
static const ramp_def ramp_blues = {{0xF7, 0xFB, 0xFF}, {0x6B, 0xAE, 0xD6}, {0x08, 0x30, 0x6B}};
static const ramp_def ramp_red_blue = {{0xB2, 0x18, 0x2B}, {0xF7, 0xF7, 0xF7}, {0x21, 0x66, 0xAC}};

static void ramp_colour(const ramp_def *ramp, double t, int rgb[3])
{
    if (!(t >= 0)) t = 0;
    if (t > 1) t = 1;
    int seg = t <= 0.5 ? 0 : 1;
    double u = seg == 0 ? t * 2 : (t - 0.5) * 2;
    for (int k = 0; k < 3; k++) {
        double a = (*ramp)[seg][k], z = (*ramp)[seg + 1][k];
        rgb[k] = (int)lround(a + (z - a) * u);
    }
}

static void hex_of(const int rgb[3], char out[8])
{
    snprintf(out, 8, "#%02X%02X%02X", (unsigned)rgb[0] & 0xFF, (unsigned)rgb[1] & 0xFF,
             (unsigned)rgb[2] & 0xFF);
}

/* ---- the chart writer --------------------------------------------------------------------- */

typedef struct chart {
    arb__buf *b;
    size_t start; /* b->len on entry: restored on failure */
    int failed;   /* sticky: the first failed append stops all writing */
    char id[24];  /* "arb-" + 16 hex digits: prefix of every id in the chart */
} chart;

static void put_n(chart *c, const char *s, size_t n)
{
    if (!c->failed && arb__buf_append(c->b, s, n)) c->failed = 1;
}

static void put(chart *c, const char *s) { put_n(c, s, strlen(s)); }

static void put_text(chart *c, const char *s, size_t n)
{
    if (!c->failed && s && put_escaped(c->b, s, n, ESC_TEXT)) c->failed = 1;
}

/* Appends markup from a template of trusted text: %f a double (coordinate, at most two
** decimals, locale-free), %s a trusted string, %d an int, %i the chart's id, %% a percent
** sign. Untrusted text never goes through here: see put_text. */
static void emit(chart *c, const char *tmpl, ...)
{
    va_list ap;
    va_start(ap, tmpl);
    const char *run = tmpl, *p = tmpl;
    while (*p) {
        if (*p != '%' || !p[1]) {
            p++;
            continue;
        }
        put_n(c, run, (size_t)(p - run));
        char num[48];
        switch (p[1]) {
        case 'f':
            fmt_number(num, sizeof num, va_arg(ap, double), 2, 1);
            put(c, num);
            break;
        case 's': put(c, va_arg(ap, const char *)); break;
        case 'd':
            snprintf(num, sizeof num, "%d", va_arg(ap, int));
            put(c, num);
            break;
        case 'i': put(c, c->id); break;
        default: put_n(c, p + 1, 1); break; /* "%%" */
        }
        p += 2;
        run = p;
    }
    put_n(c, run, (size_t)(p - run));
    va_end(ap);
}

/* FNV-1a, enough to tell charts apart in ids (not a security boundary). */
static void hash_bytes(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) *h = (*h ^ s[i]) * 0x100000001B3ULL;
}

static void hash_str(uint64_t *h, const char *s)
{
    if (s) hash_bytes(h, s, strlen(s) + 1);
    else hash_bytes(h, "\xFF", 1);
}

static void hash_strs(uint64_t *h, const char *const *s, size_t n)
{
    for (size_t i = 0; i < n; i++) hash_str(h, s ? s[i] : NULL);
}

static void hash_doubles(uint64_t *h, const double *v, size_t n)
{
    if (v) hash_bytes(h, v, n * sizeof *v);
}

static uint64_t hash_start(arb__buf *b, const char *kind, const char *title)
{
    uint64_t h = 0xCBF29CE484222325ULL;
    uint64_t len = b->len; /* charts in one buffer never start at the same offset */
    hash_bytes(&h, &len, sizeof len);
    hash_str(&h, kind);
    hash_str(&h, title);
    return h;
}

/* Opens the <svg> with its <title>, the start of its <desc> (the caller writes the words and
** calls desc_end), a white ground and the hatch pattern of n/a marks. */
static void chart_begin(chart *c, arb__buf *b, uint64_t hash, double w, double h,
                        const char *title)
{
    c->b = b;
    c->start = b->len;
    c->failed = 0;
    snprintf(c->id, sizeof c->id, "arb-%016llx", (unsigned long long)hash);
    emit(c,
         "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"arb-chart\" viewBox=\"0 0 %f %f\" "
         "width=\"100%%\" role=\"img\" aria-labelledby=\"%i-title %i-desc\" font-size=\"%f\">\n"
         "<title id=\"%i-title\">",
         w, h, FS);
    if (title) put_text(c, title, strlen(title));
    emit(c, "</title>\n<desc id=\"%i-desc\">");
}

/* Closes the description and writes the definitions (the hatch of n/a marks, and with ramp
** (NULL: none) the heat map's colour scale as a gradient) and the white ground. */
static void desc_end(chart *c, double w, double h, const ramp_def *ramp)
{
    emit(c,
         "</desc>\n<defs><pattern id=\"%i-na\" width=\"6\" height=\"6\" "
         "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
         "<rect width=\"6\" height=\"6\" fill=\"#EEEEEE\"/>"
         "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"%s\" stroke-width=\"2\"/>"
         "</pattern>",
         NA_GREY);
    if (ramp) {
        emit(c, "<linearGradient id=\"%i-ramp\">");
        for (int s = 0; s < 3; s++) {
            char hex[8];
            hex_of((*ramp)[s], hex);
            emit(c, "<stop offset=\"%f\" stop-color=\"%s\"/>", s * 0.5, hex);
        }
        put(c, "</linearGradient>");
    }
    emit(c, "</defs>\n<rect width=\"%f\" height=\"%f\" fill=\"#FFFFFF\"/>\n", w, h);
}

/* Closes the chart: 0, or -1 with the buffer cut back to its length on entry. */
static int chart_end(chart *c)
{
    put(c, "</svg>\n");
    if (!c->failed) return 0;
    if (c->b->data) {
        c->b->len = c->start;
        c->b->data[c->start] = '\0';
    }
    return -1;
}

/* Writes an integer count into the description. */
static void put_count(chart *c, size_t n)
{
    char num[32];
    snprintf(num, sizeof num, "%zu", n);
    put(c, num);
}

/* ---- text: widths, cutting, labels -------------------------------------------------------- */

/* Estimated advance of cp in tenths of the font size: wide scripts and emoji take about a
** full em, the rest about 0.6 em (generous for proportional fonts, so estimates rarely fall
** short). */
static int cp_width(uint32_t cp)
{
    int wide = (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
               (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
               (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
               (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1FAFF) ||
               (cp >= 0x20000 && cp <= 0x3FFFD);
    return wide ? 10 : 6;
}

/* Estimated width of s at font size fs (as escaped: dropped characters take no room). */
static double text_width(const char *s, double fs)
{
    if (!s) return 0;
    size_t n = strlen(s), i = 0;
    long units = 0;
    while (i < n) {
        uint32_t cp;
        i += utf8_next((const unsigned char *)s + i, n - i, &cp);
        if (!is_dropped(cp) && !is_bidi_control(cp)) units += cp_width(cp);
    }
    return (double)units * fs / 10.0;
}

#define ELLIPSIS "\xE2\x80\xA6" /* U+2026 */

/* The byte length of the longest prefix of s (length n) that fits max_px with an ellipsis
** after it, or n when all of s fits. Always a code point boundary of the decoder, so a cut
** never splits a UTF-8 sequence. */
static size_t fit_prefix(const char *s, size_t n, double max_px, double fs)
{
    if (text_width(s, fs) <= max_px) return n;
    double budget = max_px - 10.0 * fs / 10.0; /* the ellipsis: about one em */
    double used = 0;
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = utf8_next((const unsigned char *)s + i, n - i, &cp);
        double w = is_dropped(cp) || is_bidi_control(cp) ? 0 : cp_width(cp) * fs / 10.0;
        if (used + w > budget) break;
        used += w;
        i += len;
    }
    return i;
}

/* Writes label s (untrusted, may be NULL) as element content, cut with "…" to max_px at font
** size fs; a cut label is preceded by a <title> child holding all of it, so hovering shows
** it. The caller has opened the element. */
static void put_label(chart *c, const char *s, double max_px, double fs)
{
    if (!s) return;
    size_t n = strlen(s);
    size_t keep = fit_prefix(s, n, max_px, fs);
    if (keep == n) {
        put_text(c, s, n);
        return;
    }
    put(c, "<title>");
    put_text(c, s, n);
    put(c, "</title>");
    put_text(c, s, keep);
    put(c, ELLIPSIS);
}

/* A <text> element at (x, y) with the given anchor ("start", "middle", "end"), size and
** colour, holding label s cut to max_px. */
static void draw_text(chart *c, double x, double y, const char *anchor, double fs,
                      const char *fill, const char *s, double max_px)
{
    emit(c, "<text x=\"%f\" y=\"%f\" text-anchor=\"%s\" font-size=\"%f\" fill=\"%s\">", x, y,
         anchor, fs, fill);
    put_label(c, s, max_px, fs);
    put(c, "</text>\n");
}

/* The same for trusted text that is known to fit (numbers, "n/a"). */
static void draw_plain(chart *c, double x, double y, const char *anchor, double fs,
                       const char *fill, const char *s)
{
    emit(c, "<text x=\"%f\" y=\"%f\" text-anchor=\"%s\" font-size=\"%f\" fill=\"%s\">%s</text>\n",
         x, y, anchor, fs, fill, s);
}

/* Width of the row label column: the widest label, at most LABEL_MAX. */
static double label_column(const char *const *labels, size_t n)
{
    double w = 24;
    for (size_t i = 0; labels && i < n; i++) {
        double t = text_width(labels[i], FS);
        if (t > w) w = t;
    }
    return w > LABEL_MAX ? LABEL_MAX : w;
}

static const char *label_at(const char *const *labels, size_t i)
{
    return labels ? labels[i] : NULL;
}

/* ---- scales and axes ---------------------------------------------------------------------- */

/* A linear scale with "nice" ticks (Heckbert, Graphics Gems 1990): ticks are k * step for
** first <= k <= last, step is 1, 2 or 5 times a power of ten, and the domain [lo, hi] runs
** from the first tick to the last. */
typedef struct scale {
    double lo, hi, step;
    long long first, last;
    int decimals; /* for tick labels: enough to tell ticks apart */
} scale;

static double nice_number(double x, int round_it)
{
    double e = floor(log10(x)), f = x / pow(10, e), nf;
    if (round_it) nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nf * pow(10, e);
}

/* About `target` nice ticks covering [lo, hi]. No finite range: [0, 1]; a single value v:
** widened by a tenth of |v| (or 1 around zero) on each side. */
static void scale_nice(scale *sc, double lo, double hi, int target)
{
    if (!isfinite(lo) || !isfinite(hi)) lo = 0, hi = 1;
    if (lo > hi) {
        double t = lo;
        lo = hi;
        hi = t;
    }
    /* far from any metric, but hi - lo must stay finite */
    if (lo < -1e100) lo = -1e100;
    if (hi > 1e100) hi = 1e100;
    if (lo > 1e100) lo = 1e100;
    if (hi < -1e100) hi = -1e100;
    if (hi - lo <= fabs(hi) * 1e-12) {
        double d = lo == 0 ? 1 : fabs(lo) * 0.1;
        lo -= d;
        hi += d;
    }
    sc->step = nice_number(nice_number(hi - lo, 0) / (target - 1), 1);
    sc->first = (long long)floor(lo / sc->step + 1e-9);
    sc->last = (long long)ceil(hi / sc->step - 1e-9);
    if (sc->last <= sc->first) sc->last = sc->first + 1;
    sc->lo = (double)sc->first * sc->step;
    sc->hi = (double)sc->last * sc->step;
    int d = -(int)floor(log10(sc->step) + 1e-9);
    sc->decimals = d < 0 ? 0 : d > 6 ? 6 : d;
}

static double tick_value(const scale *sc, long long k)
{
    double v = (double)k * sc->step;
    return fabs(v) < sc->step * 1e-9 ? 0 : v;
}

/* Position of v between a (at sc->lo) and z (at sc->hi), clamped to [a, z] (or [z, a]); a
** value that is not finite maps to a, so no coordinate is ever NaN. */
static double map(const scale *sc, double v, double a, double z)
{
    if (!isfinite(v)) return a;
    double t = (v - sc->lo) / (sc->hi - sc->lo);
    if (!(t >= 0)) t = 0;
    if (t > 1) t = 1;
    return a + (z - a) * t;
}

/* Decimals for values printed next to marks: one more than the ticks', none for coarse axes. */
static int value_decimals(const scale *sc)
{
    if (sc->step >= 10) return 0;
    return sc->decimals + 1 > 4 ? 4 : sc->decimals + 1;
}

/* Horizontal value axis at y_axis under a plot spanning [x0, x1] from y_top: vertical grid
** lines, the axis line, ticks with labels (as percentages when percent), and the axis name
** under them. */
static void draw_x_axis(chart *c, const scale *sc, double x0, double x1, double y_top,
                        double y_axis, const char *name, int percent)
{
    char num[48];
    for (long long k = sc->first; k <= sc->last; k++) {
        double v = tick_value(sc, k), x = map(sc, v, x0, x1);
        emit(c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\"/>\n", x, y_top, x,
             y_axis, GRID);
        emit(c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\"/>\n", x, y_axis, x,
             y_axis + 4, AXIS);
        if (percent) {
            int d = sc->decimals - 2;
            fmt_number(num, sizeof num - 1, v * 100, d < 0 ? 0 : d, 0);
            strcat(num, "%");
        } else {
            fmt_number(num, sizeof num, v, sc->decimals, 0);
        }
        draw_plain(c, x, y_axis + 16, "middle", FS_SMALL, INK_SOFT, num);
    }
    emit(c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\"/>\n", x0, y_axis, x1,
         y_axis, AXIS);
    if (name) draw_text(c, (x0 + x1) / 2, y_axis + 33, "middle", FS, INK, name, x1 - x0);
}

/* ---- legends and marks -------------------------------------------------------------------- */

typedef enum { SWATCH_RECT, SWATCH_LINE } swatch_kind;

static void draw_marker(chart *c, size_t series, double x, double y, const char *fill)
{
    /* a shape per series as well as a colour, so series stay apart in grey print */
    switch (series % 5) {
    case 0: emit(c, "<circle cx=\"%f\" cy=\"%f\" r=\"3.5\" fill=\"%s\"/>\n", x, y, fill); break;
    case 1:
        emit(c, "<rect x=\"%f\" y=\"%f\" width=\"7\" height=\"7\" fill=\"%s\"/>\n", x - 3.5,
             y - 3.5, fill);
        break;
    case 2:
        emit(c, "<polygon points=\"%f,%f %f,%f %f,%f %f,%f\" fill=\"%s\"/>\n", x, y - 4.5,
             x + 4.5, y, x, y + 4.5, x - 4.5, y, fill);
        break;
    case 3:
        emit(c, "<polygon points=\"%f,%f %f,%f %f,%f\" fill=\"%s\"/>\n", x, y - 4.5, x + 4,
             y + 3.5, x - 4, y + 3.5, fill);
        break;
    default:
        emit(c, "<polygon points=\"%f,%f %f,%f %f,%f\" fill=\"%s\"/>\n", x, y + 4.5, x + 4,
             y - 3.5, x - 4, y - 3.5, fill);
        break;
    }
}

/* Lays out the legend from (x, y), entries left to right wrapping at width: one per name in
** palette colour k, then, when na_text is not NULL, an n/a entry (hatched swatch for bars, no
** swatch for lines). Draws it when draw is set. Returns its height (0 when empty). */
static double legend(chart *c, int draw, double x, double y, double width,
                     const char *const *names, size_t n, swatch_kind kind, const char *na_text)
{
    size_t total = n + (na_text ? 1 : 0);
    double cx = x, cy = y;
    for (size_t k = 0; k < total; k++) {
        int is_na = k == n;
        const char *name = is_na ? na_text : label_at(names, k);
        double tw = text_width(name, FS);
        if (tw > LEGEND_TEXT_MAX) tw = LEGEND_TEXT_MAX;
        int swatch = !(is_na && kind == SWATCH_LINE);
        double ew = (swatch ? SWATCH_W + 5 : 0) + tw + 16;
        if (cx > x && cx + ew - 16 > x + width) {
            cx = x;
            cy += LEGEND_ROW_H;
        }
        if (draw) {
            double tx = cx + (swatch ? SWATCH_W + 5 : 0);
            if (is_na && swatch) {
                emit(c, "<rect x=\"%f\" y=\"%f\" width=\"%f\" height=\"10\" fill=\"url(#%i-na)\" "
                        "stroke=\"%s\"/>\n", cx, cy + 3, SWATCH_W, NA_GREY);
            } else if (kind == SWATCH_RECT) {
                emit(c, "<rect x=\"%f\" y=\"%f\" width=\"%f\" height=\"10\" fill=\"%s\"/>\n", cx,
                     cy + 3, SWATCH_W, palette[k % 8]);
            } else if (swatch) {
                emit(c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\" "
                        "stroke-width=\"2\"/>\n", cx, cy + 8, cx + SWATCH_W, cy + 8,
                     palette[k % 8]);
                draw_marker(c, k, cx + SWATCH_W / 2, cy + 8, palette[k % 8]);
            }
            draw_text(c, tx, cy + 12, "start", FS, INK, name, LEGEND_TEXT_MAX);
        }
        cx += ew;
    }
    return total ? cy - y + LEGEND_ROW_H : 0;
}

/* The "no data" mark of a chart with nothing to draw. */
static void draw_no_data(chart *c, double x, double y)
{
    draw_plain(c, x, y, "start", FS, INK_SOFT, "no data");
}

/* ---- stacked bars ------------------------------------------------------------------------- */

int arb__svg_stacked_bars(arb__buf *b, const char *title, const char *const *rows, size_t n_rows,
                          const char *const *cats, size_t n_cats, const double *shares)
{
    int any_na = 0;
    for (size_t i = 0; i < n_rows * n_cats; i++)
        if (!shares || !isfinite(shares[i])) any_na = 1;
    double label_w = label_column(rows, n_rows);
    double x0 = MARGIN + label_w + 8, x1 = CHART_W - MARGIN - 36; /* room for a row's "n/a" */
    chart c;
    double legend_w = CHART_W - MARGIN - x0;
    double legend_h = legend(&c, 0, x0, MARGIN, legend_w, cats, n_cats, SWATCH_RECT,
                             any_na ? "n/a" : NULL);
    double top = MARGIN + legend_h + (legend_h > 0 ? 8 : 0);
    double y_axis = top + (double)(n_rows ? n_rows : 1) * ROW_H + 4;
    double h = y_axis + 40 + MARGIN;

    uint64_t hash = hash_start(b, "stacked_bars", title);
    hash_strs(&hash, rows, n_rows);
    hash_strs(&hash, cats, n_cats);
    hash_doubles(&hash, shares, n_rows * n_cats);
    chart_begin(&c, b, hash, CHART_W, h, title);
    put(&c, "Stacked horizontal bars, one per row (");
    put_count(&c, n_rows);
    put(&c, "), each splitting 0 to 100% into the shares of ");
    put_count(&c, n_cats);
    put(&c, " categories named in the legend; segments of 6% or more print their percentage.");
    if (any_na) put(&c, " Hatched grey bars and n/a marks are undefined shares.");
    desc_end(&c, CHART_W, h, NULL);

    legend(&c, 1, x0, MARGIN, legend_w, cats, n_cats, SWATCH_RECT, any_na ? "n/a" : NULL);
    scale sc;
    scale_nice(&sc, 0, 1, 6);
    draw_x_axis(&c, &sc, x0, x1, top, y_axis, "share", 1);
    if (!n_rows) draw_no_data(&c, x0 + 6, top + ROW_H / 2 + 4);

    char pct[48];
    int fill_rgb[3];
    for (size_t i = 0; i < n_rows; i++) {
        double y = top + (double)i * ROW_H, bar_y = y + (ROW_H - BAR_H) / 2;
        const char *row = label_at(rows, i);
        draw_text(&c, x0 - 8, y + ROW_H / 2 + 4, "end", FS, INK, row, label_w);
        double acc = 0;
        size_t n_known = 0;
        for (size_t k = 0; k < n_cats; k++) {
            double v = shares ? shares[i * n_cats + k] : NAN;
            if (!isfinite(v)) continue;
            n_known++;
            if (v > 1 - acc) v = 1 - acc; /* shares beyond 100% are cut, not drawn outside */
            if (v <= 0) continue;
            double xs = map(&sc, acc, x0, x1), xe = map(&sc, acc + v, x0, x1);
            acc += v;
            put(&c, "<g><title>");
            put_text(&c, row, row ? strlen(row) : 0);
            put(&c, " \xE2\x80\x94 ");
            const char *cat = label_at(cats, k);
            put_text(&c, cat, cat ? strlen(cat) : 0);
            fmt_number(pct, sizeof pct, v * 100, 1, 0);
            emit(&c, ": %s%%</title>", pct);
            emit(&c, "<rect x=\"%f\" y=\"%f\" width=\"%f\" height=\"%f\" fill=\"%s\"/>", xs,
                 bar_y, xe - xs, BAR_H, palette[k % 8]);
            fmt_number(pct, sizeof pct - 1, v * 100, 0, 0);
            strcat(pct, "%");
            if (v >= 0.06 && text_width(pct, FS_SMALL) + 4 <= xe - xs) {
                parse_hex(palette[k % 8], fill_rgb);
                put(&c, "\n");
                draw_plain(&c, (xs + xe) / 2, bar_y + BAR_H / 2 + 4, "middle", FS_SMALL,
                           ink_on(fill_rgb), pct);
            }
            put(&c, "</g>\n");
        }
        if (n_cats > 0 && n_known == 0) {
            emit(&c, "<rect x=\"%f\" y=\"%f\" width=\"%f\" height=\"%f\" fill=\"url(#%i-na)\"/>\n",
                 x0, bar_y, x1 - x0, BAR_H);
            draw_plain(&c, (x0 + x1) / 2, bar_y + BAR_H / 2 + 4, "middle", FS_SMALL, INK_DARK,
                       "n/a");
        } else if (n_known < n_cats) {
            draw_plain(&c, x1 + 6, bar_y + BAR_H / 2 + 4, "start", FS_SMALL, INK_SOFT, "n/a");
        }
    }
    return chart_end(&c);
}

/* ---- heat map ----------------------------------------------------------------------------- */

/* Whether fmt is a safe printf format for one double: literal text, "%%", and exactly one
** conversion %[-+ 0#][width][.precision] of f, F, e, E, g or G, width and precision at most
** two digits. Anything else (a %s would read a pointer that is not there) is refused. */
static int is_double_format(const char *fmt)
{
    int conversions = 0;
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') continue;
        p++;
        if (*p == '%') continue;
        for (int f = 0; *p && strchr("-+ 0#", *p); f++, p++)
            if (f == 5) return 0;
        for (int d = 0; d < 3 && *p >= '0' && *p <= '9'; d++, p++)
            if (d == 2) return 0;
        if (*p == '.') {
            p++;
            for (int d = 0; d < 3 && *p >= '0' && *p <= '9'; d++, p++)
                if (d == 2) return 0;
        }
        if (!*p || !strchr("fFeEgG", *p)) return 0;
        conversions++;
    }
    return conversions == 1;
}

/* v printed with the cell format into out; the locale's decimal mark (printf's, whatever
** setlocale said) becomes '.'. The format must have passed is_double_format. */
static void fmt_cell(char *out, size_t size, const char *fmt, double v)
{
    char tmp[320];
    size_t o = 0;
    for (const char *p = fmt; *p && o + 1 < size; p++) {
        if (*p != '%') {
            out[o++] = *p;
            continue;
        }
        if (p[1] == '%') {
            out[o++] = '%';
            p++;
            continue;
        }
        const char *end = p + 1;
        while (!strchr("fFeEgG", *end)) end++;
        char spec[16];
        size_t len = (size_t)(end - p) + 1;
        memcpy(spec, p, len);
        spec[len] = '\0';
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        snprintf(tmp, sizeof tmp, spec, v);
#pragma GCC diagnostic pop
        int in_mark = 0;
        for (const char *t = tmp; *t && o + 1 < size; t++) {
            if (strchr("0123456789+-eE ", *t)) {
                out[o++] = *t;
                in_mark = 0;
            } else if (!in_mark) { /* a decimal mark may take several bytes */
                out[o++] = '.';
                in_mark = 1;
            }
        }
        p = end;
    }
    out[o] = '\0';
}

/* The heat map of arb__svg_heatmap (diverging 0) and arb__svg_heatmap_diverging (1): the same
** grid, legend and hover texts; only the colour scale and its description differ. */
static int heatmap(arb__buf *b, const char *title, const char *const *rows, size_t n_rows,
                   const char *const *cols, size_t n_cols, const double *values, double lo,
                   double hi, const char *cell_format, double scale_by, int diverging)
{
    const char *fmt = cell_format && is_double_format(cell_format) ? cell_format : "%.2f";
    if (!isfinite(scale_by)) scale_by = 1;
    const ramp_def *ramp = diverging ? &ramp_red_blue : &ramp_blues;
    /* The colour scale: lo..hi as given (hi < lo reverses it), else the data's range;
    ** diverging: -hi..hi with 0 in the middle, hi the largest |value| when not given. */
    double dmin = INFINITY, dmax = -INFINITY;
    int any_na = 0;
    for (size_t i = 0; i < n_rows * n_cols; i++) {
        double v = values ? values[i] : NAN;
        if (!isfinite(v)) {
            any_na = 1;
            continue;
        }
        if (v < dmin) dmin = v;
        if (v > dmax) dmax = v;
    }
    if (diverging) {
        double widest = fmax(fabs(dmin), fabs(dmax));
        if (!(isfinite(hi) && hi > 0)) hi = isfinite(widest) && widest > 0 ? widest : 1;
        lo = -hi;
    } else if (!isfinite(lo) || !isfinite(hi) || lo == hi) {
        lo = dmin;
        hi = dmax;
    }

    double label_w = label_column(rows, n_rows);
    double grid_x0 = MARGIN + label_w + 8;
    double avail = CHART_W - MARGIN - grid_x0;
    double cell_w = n_cols ? avail / (double)n_cols : avail;
    if (cell_w > 96) cell_w = 96;
    if (cell_w < 40) cell_w = 40; /* many columns: the chart grows wider */
    double col_max = 0;
    for (size_t j = 0; cols && j < n_cols; j++) {
        double t = text_width(cols[j], FS_SMALL);
        if (t > col_max) col_max = t;
    }
    int rotate = col_max > cell_w - 6;
    double col_label_max = rotate ? 140 : cell_w - 6;
    if (rotate && col_max > col_label_max) col_max = col_label_max;
    double header_h = rotate ? col_max * 0.7071 + 14 : 20;
    double top = MARGIN + header_h;
    double grid_h = (double)(n_rows ? n_rows : 1) * ROW_H;
    double grid_x1 = grid_x0 + (double)(n_cols ? n_cols : 1) * cell_w;
    double right = grid_x1 + MARGIN + (rotate ? col_max * 0.7071 : 0);
    double w = right > CHART_W ? right : CHART_W;
    double legend_y = top + grid_h + 14;
    double h = legend_y + 10 + 20 + MARGIN;

    uint64_t hash = hash_start(b, diverging ? "heatmap-diverging" : "heatmap", title);
    hash_strs(&hash, rows, n_rows);
    hash_strs(&hash, cols, n_cols);
    hash_doubles(&hash, values, n_rows * n_cols);
    hash_doubles(&hash, &lo, 1);
    hash_doubles(&hash, &hi, 1);
    hash_str(&hash, fmt);
    hash_doubles(&hash, &scale_by, 1);
    chart c;
    chart_begin(&c, b, hash, w, h, title);
    put(&c, "Heat map of ");
    put_count(&c, n_rows);
    put(&c, " rows by ");
    put_count(&c, n_cols);
    put(&c, diverging ? " columns; colour runs from red (below 0) through white (0) to blue "
                        "(above 0), deeper the further from 0, as the legend under the grid "
                        "shows, and each cell prints its value where it fits."
                      : " columns; colour runs from light (low) to dark blue (high) as the legend "
                        "under the grid shows, and each cell prints its value where it fits.");
    if (any_na) put(&c, " Hatched grey cells are n/a.");
    desc_end(&c, w, h, ramp);

    if (!n_rows || !n_cols) draw_no_data(&c, grid_x0 + 6, top + ROW_H / 2 + 4);
    for (size_t j = 0; j < n_cols; j++) {
        double cx = grid_x0 + ((double)j + 0.5) * cell_w;
        const char *col = label_at(cols, j);
        if (!rotate) {
            draw_text(&c, cx, top - 7, "middle", FS_SMALL, INK, col, col_label_max);
            continue;
        }
        emit(&c, "<text x=\"%f\" y=\"%f\" transform=\"rotate(-45 %f %f)\" text-anchor=\"start\" "
                 "font-size=\"%f\" fill=\"%s\">", cx, top - 6, cx, top - 6, FS_SMALL, INK);
        put_label(&c, col, col_label_max, FS_SMALL);
        put(&c, "</text>\n");
    }
    char text[256];
    for (size_t i = 0; i < n_rows; i++) {
        double y = top + (double)i * ROW_H;
        const char *row = label_at(rows, i);
        draw_text(&c, grid_x0 - 8, y + ROW_H / 2 + 4, "end", FS, INK, row, label_w);
        for (size_t j = 0; j < n_cols; j++) {
            double x = grid_x0 + (double)j * cell_w, v = values ? values[i * n_cols + j] : NAN;
            const char *col = label_at(cols, j);
            int known = isfinite(v) && isfinite(v * scale_by);
            if (known) fmt_cell(text, sizeof text, fmt, v * scale_by);
            else snprintf(text, sizeof text, "n/a");
            put(&c, "<g><title>");
            put_text(&c, row, row ? strlen(row) : 0);
            put(&c, " / ");
            put_text(&c, col, col ? strlen(col) : 0);
            put(&c, ": ");
            put_text(&c, text, strlen(text));
            put(&c, "</title>");
            const char *ink = INK_DARK;
            if (known) {
                int rgb[3];
                char hex[8];
                double t = hi != lo ? (v - lo) / (hi - lo) : 0.5; /* one value: mid-scale */
                ramp_colour(ramp, t, rgb);
                hex_of(rgb, hex);
                ink = ink_on(rgb);
                emit(&c, "<rect x=\"%f\" y=\"%f\" width=\"%f\" height=\"%f\" fill=\"%s\" "
                         "stroke=\"#FFFFFF\"/>", x, y, cell_w, ROW_H, hex);
            } else {
                emit(&c, "<rect x=\"%f\" y=\"%f\" width=\"%f\" height=\"%f\" fill=\"url(#%i-na)\" "
                         "stroke=\"#FFFFFF\"/>", x, y, cell_w, ROW_H);
            }
            if (text_width(text, FS_SMALL) + 6 <= cell_w) {
                emit(&c, "<text x=\"%f\" y=\"%f\" text-anchor=\"middle\" font-size=\"%f\" "
                         "fill=\"%s\">", x + cell_w / 2, y + ROW_H / 2 + 4, FS_SMALL, ink);
                put_text(&c, text, strlen(text));
                put(&c, "</text>");
            }
            put(&c, "</g>\n");
        }
    }

    /* Legend: the ramp from lo to hi, and the n/a swatch. */
    double ramp_w = 160;
    emit(&c, "<rect x=\"%f\" y=\"%f\" width=\"%f\" height=\"10\" fill=\"url(#%i-ramp)\" "
             "stroke=\"%s\" stroke-width=\"0.5\"/>\n", grid_x0, legend_y, ramp_w, GRID);
    if (isfinite(lo) && isfinite(hi)) {
        fmt_cell(text, sizeof text, fmt, lo * scale_by);
        emit(&c, "<text x=\"%f\" y=\"%f\" text-anchor=\"start\" font-size=\"%f\" fill=\"%s\">",
             grid_x0, legend_y + 23, FS_SMALL, INK_SOFT);
        put_text(&c, text, strlen(text));
        put(&c, "</text>\n");
        fmt_cell(text, sizeof text, fmt, hi * scale_by);
        emit(&c, "<text x=\"%f\" y=\"%f\" text-anchor=\"end\" font-size=\"%f\" fill=\"%s\">",
             grid_x0 + ramp_w, legend_y + 23, FS_SMALL, INK_SOFT);
        put_text(&c, text, strlen(text));
        put(&c, "</text>\n");
        if (diverging) { /* the centre of the scale */
            fmt_cell(text, sizeof text, fmt, 0.0);
            emit(&c, "<text x=\"%f\" y=\"%f\" text-anchor=\"middle\" font-size=\"%f\" "
                     "fill=\"%s\">", grid_x0 + ramp_w / 2, legend_y + 23, FS_SMALL, INK_SOFT);
            put_text(&c, text, strlen(text));
            put(&c, "</text>\n");
        }
    }
    if (any_na) {
        emit(&c, "<rect x=\"%f\" y=\"%f\" width=\"%f\" height=\"10\" fill=\"url(#%i-na)\" "
                 "stroke=\"%s\"/>\n", grid_x0 + ramp_w + 24, legend_y, SWATCH_W, NA_GREY);
        draw_plain(&c, grid_x0 + ramp_w + 24 + SWATCH_W + 5, legend_y + 9, "start", FS, INK,
                   "n/a");
    }
    return chart_end(&c);
}

int arb__svg_heatmap(arb__buf *b, const char *title, const char *const *rows, size_t n_rows,
                     const char *const *cols, size_t n_cols, const double *values, double lo,
                     double hi, const char *cell_format, double scale_by)
{
    return heatmap(b, title, rows, n_rows, cols, n_cols, values, lo, hi, cell_format, scale_by,
                   0);
}

int arb__svg_heatmap_diverging(arb__buf *b, const char *title, const char *const *rows,
                               size_t n_rows, const char *const *cols, size_t n_cols,
                               const double *values, double half_range, const char *cell_format,
                               double scale_by)
{
    return heatmap(b, title, rows, n_rows, cols, n_cols, values, NAN, half_range, cell_format,
                   scale_by, 1);
}

/* ---- intervals ---------------------------------------------------------------------------- */

static double at(const double *v, size_t i) { return v ? v[i] : NAN; }

int arb__svg_intervals(arb__buf *b, const char *title, const char *axis_label,
                       const char *const *labels, size_t n, const double *value,
                       const double *lo, const double *hi, double ref)
{
    /* The axis covers every value, bound and the reference. */
    double dmin = INFINITY, dmax = -INFINITY;
    int any_na = 0;
    for (size_t i = 0; i < n; i++) {
        double xs[3] = {at(value, i), at(lo, i), at(hi, i)};
        if (!isfinite(xs[0])) any_na = 1;
        for (int k = 0; k < 3; k++) {
            if (!isfinite(xs[k])) continue;
            if (xs[k] < dmin) dmin = xs[k];
            if (xs[k] > dmax) dmax = xs[k];
        }
    }
    if (isfinite(ref)) {
        if (ref < dmin) dmin = ref;
        if (ref > dmax) dmax = ref;
    }
    scale sc;
    scale_nice(&sc, dmin, dmax, 6);
    int vd = value_decimals(&sc);

    double label_w = label_column(labels, n);
    double x0 = MARGIN + label_w + 8, x1 = CHART_W - MARGIN - 16;
    double top = MARGIN + (isfinite(ref) ? 16 : 0);
    double y_axis = top + (double)(n ? n : 1) * ROW_H + 4;
    double h = y_axis + 40 + MARGIN;

    uint64_t hash = hash_start(b, "intervals", title);
    hash_str(&hash, axis_label);
    hash_strs(&hash, labels, n);
    hash_doubles(&hash, value, n);
    hash_doubles(&hash, lo, n);
    hash_doubles(&hash, hi, n);
    hash_doubles(&hash, &ref, 1);
    chart c;
    chart_begin(&c, b, hash, CHART_W, h, title);
    put(&c, "One row per label (");
    put_count(&c, n);
    put(&c, "): a dot at the value and a whisker from the lower to the upper bound, on a shared "
            "horizontal axis");
    if (axis_label) {
        put(&c, " (");
        put_text(&c, axis_label, strlen(axis_label));
        put(&c, ")");
    }
    put(&c, ".");
    char num[48];
    if (isfinite(ref)) {
        fmt_number(num, sizeof num, ref, vd, 1);
        emit(&c, " A dashed vertical line marks the reference %s.", num);
    }
    if (any_na) put(&c, " Rows marked n/a have no value.");
    desc_end(&c, CHART_W, h, NULL);

    draw_x_axis(&c, &sc, x0, x1, top, y_axis, axis_label, 0);
    if (!n) draw_no_data(&c, x0 + 6, top + ROW_H / 2 + 4);
    if (isfinite(ref)) {
        double xr = map(&sc, ref, x0, x1);
        emit(&c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\" "
                 "stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>\n", xr, top - 4, xr, y_axis,
             AXIS);
        fmt_number(num, sizeof num, ref, vd, 1);
        char text[64];
        snprintf(text, sizeof text, "ref %s", num);
        draw_plain(&c, xr, top - 6, "middle", FS_SMALL, INK_SOFT, text);
    }
    for (size_t i = 0; i < n; i++) {
        double cy = top + ((double)i + 0.5) * ROW_H;
        double v = at(value, i), l = at(lo, i), u = at(hi, i);
        const char *label = label_at(labels, i);
        draw_text(&c, x0 - 8, cy + 4, "end", FS, INK, label, label_w);
        int whisker = isfinite(l) && isfinite(u);
        put(&c, "<g><title>");
        put_text(&c, label, label ? strlen(label) : 0);
        put(&c, ": ");
        if (isfinite(v)) fmt_number(num, sizeof num, v, vd, 0);
        put(&c, isfinite(v) ? num : "n/a");
        if (whisker) {
            fmt_number(num, sizeof num, l, vd, 0);
            emit(&c, " [%s, ", num);
            fmt_number(num, sizeof num, u, vd, 0);
            emit(&c, "%s]", num);
        }
        put(&c, "</title>\n");
        double xl = map(&sc, l, x0, x1), xu = map(&sc, u, x0, x1), xv = map(&sc, v, x0, x1);
        if (whisker) {
            emit(&c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\" "
                     "stroke-width=\"2\"/>\n", xl, cy, xu, cy, DATA_BLUE);
            emit(&c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\" "
                     "stroke-width=\"2\"/>\n", xl, cy - 5, xl, cy + 5, DATA_BLUE);
            emit(&c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\" "
                     "stroke-width=\"2\"/>\n", xu, cy - 5, xu, cy + 5, DATA_BLUE);
        }
        if (isfinite(v)) {
            emit(&c, "<circle cx=\"%f\" cy=\"%f\" r=\"4.5\" fill=\"%s\" stroke=\"#FFFFFF\"/>\n",
                 xv, cy, DATA_BLUE);
            fmt_number(num, sizeof num, v, vd, 0);
            double tw = text_width(num, FS_SMALL);
            double right = (whisker && xu > xv ? xu : xv) + 8;
            double left = (whisker && xl < xv ? xl : xv) - 8;
            if (right + tw <= x1) draw_plain(&c, right, cy + 4, "start", FS_SMALL, INK, num);
            else if (left - tw >= x0) draw_plain(&c, left, cy + 4, "end", FS_SMALL, INK, num);
        } else {
            draw_plain(&c, x0 + 6, cy + 4, "start", FS_SMALL, INK_SOFT, "n/a");
        }
        put(&c, "</g>\n");
    }
    return chart_end(&c);
}

/* ---- bars --------------------------------------------------------------------------------- */

int arb__svg_bars(arb__buf *b, const char *title, const char *axis_label,
                  const char *const *labels, size_t n, const double *values)
{
    double dmin = 0, dmax = 0;
    int any_na = 0, any_value = 0;
    for (size_t i = 0; i < n; i++) {
        double v = at(values, i);
        if (!isfinite(v)) {
            any_na = 1;
            continue;
        }
        any_value = 1;
        if (v < dmin) dmin = v;
        if (v > dmax) dmax = v;
    }
    if (!any_value || dmin == dmax) dmax = dmin + 1; /* all zero or nothing: 0..1 */
    scale sc;
    scale_nice(&sc, dmin, dmax, 6);
    int vd = value_decimals(&sc);

    double label_w = label_column(labels, n);
    double x0 = MARGIN + label_w + 8, x1 = CHART_W - MARGIN - 56; /* room for end values */
    double top = MARGIN;
    double y_axis = top + (double)(n ? n : 1) * ROW_H + 4;
    double h = y_axis + 40 + MARGIN;

    uint64_t hash = hash_start(b, "bars", title);
    hash_str(&hash, axis_label);
    hash_strs(&hash, labels, n);
    hash_doubles(&hash, values, n);
    chart c;
    chart_begin(&c, b, hash, CHART_W, h, title);
    put(&c, "Horizontal bars from zero, one per label (");
    put_count(&c, n);
    put(&c, ")");
    if (axis_label) {
        put(&c, " on the axis ");
        put_text(&c, axis_label, strlen(axis_label));
    }
    put(&c, "; each bar's value is printed at its end.");
    if (any_na) put(&c, " Rows marked n/a have no value.");
    desc_end(&c, CHART_W, h, NULL);

    draw_x_axis(&c, &sc, x0, x1, top, y_axis, axis_label, 0);
    if (!n) draw_no_data(&c, x0 + 6, top + ROW_H / 2 + 4);
    double xz = map(&sc, 0, x0, x1);
    char num[48];
    for (size_t i = 0; i < n; i++) {
        double y = top + (double)i * ROW_H, bar_y = y + (ROW_H - BAR_H) / 2;
        double v = at(values, i);
        const char *label = label_at(labels, i);
        draw_text(&c, x0 - 8, y + ROW_H / 2 + 4, "end", FS, INK, label, label_w);
        put(&c, "<g><title>");
        put_text(&c, label, label ? strlen(label) : 0);
        if (isfinite(v)) fmt_number(num, sizeof num, v, vd, 0);
        emit(&c, ": %s</title>", isfinite(v) ? num : "n/a");
        if (!isfinite(v)) {
            put(&c, "\n");
            draw_plain(&c, xz + 6, bar_y + BAR_H / 2 + 4, "start", FS_SMALL, INK_SOFT, "n/a");
            put(&c, "</g>\n");
            continue;
        }
        double xv = map(&sc, v, x0, x1);
        double xs = xv < xz ? xv : xz, width = fabs(xv - xz);
        emit(&c, "<rect x=\"%f\" y=\"%f\" width=\"%f\" height=\"%f\" fill=\"%s\"/>\n", xs, bar_y,
             width, BAR_H, DATA_BLUE);
        double tw = text_width(num, FS_SMALL);
        if (v >= 0 || xv - 4 - tw < x0) /* no room left of a negative bar: write inside */
            draw_plain(&c, xv + 4, bar_y + BAR_H / 2 + 4, "start", FS_SMALL,
                       v >= 0 ? INK : INK_WHITE, num);
        else
            draw_plain(&c, xv - 4, bar_y + BAR_H / 2 + 4, "end", FS_SMALL, INK, num);
        put(&c, "</g>\n");
    }
    emit(&c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\"/>\n", xz, top, xz,
         y_axis, AXIS);
    return chart_end(&c);
}

/* ---- lines -------------------------------------------------------------------------------- */

/* Markers on every point when there are few; with many, only on points whose neighbours are
** both missing (a lone point would otherwise be invisible). */
#define MARKERS_MAX_POINTS 40

int arb__svg_lines(arb__buf *b, const char *title, const char *x_label, const char *y_label,
                   const char *const *series, size_t n_series, const double *values,
                   size_t n_points)
{
    double dmin = INFINITY, dmax = -INFINITY;
    int any_na = 0;
    for (size_t i = 0; i < n_series * n_points; i++) {
        double v = at(values, i);
        if (!isfinite(v)) {
            any_na = 1;
            continue;
        }
        if (v < dmin) dmin = v;
        if (v > dmax) dmax = v;
    }
    scale ys;
    scale_nice(&ys, dmin, dmax, 6);
    /* x: the points 1..n_points exactly, ticks on whole numbers. */
    scale xs;
    scale_nice(&xs, 1, n_points > 1 ? (double)n_points : 2, 8);
    if (xs.step < 1) xs.step = 1;
    xs.lo = n_points > 1 ? 1 : 0;
    xs.hi = n_points > 1 ? (double)n_points : 2;
    xs.first = (long long)ceil(1 / xs.step);
    xs.last = (long long)floor((n_points > 1 ? (double)n_points : 1) / xs.step);
    xs.decimals = 0;

    char num[48];
    double tick_w = 0;
    for (long long k = ys.first; k <= ys.last; k++) {
        fmt_number(num, sizeof num, tick_value(&ys, k), ys.decimals, 0);
        double t = text_width(num, FS_SMALL);
        if (t > tick_w) tick_w = t;
    }
    double x0 = MARGIN + 18 + tick_w + 10, x1 = CHART_W - MARGIN - 12;
    chart c;
    double legend_h = legend(&c, 0, x0, MARGIN, x1 - x0, series, n_series, SWATCH_LINE,
                             any_na ? "gaps: n/a" : NULL);
    double top = MARGIN + legend_h + 10, bottom = top + 240;
    double h = bottom + 40 + MARGIN;

    uint64_t hash = hash_start(b, "lines", title);
    hash_str(&hash, x_label);
    hash_str(&hash, y_label);
    hash_strs(&hash, series, n_series);
    hash_doubles(&hash, values, n_series * n_points);
    chart_begin(&c, b, hash, CHART_W, h, title);
    put(&c, "Lines of ");
    put_count(&c, n_series);
    put(&c, " series named in the legend over points 1 to ");
    put_count(&c, n_points);
    put(&c, " on the horizontal axis");
    if (x_label) {
        put(&c, " (");
        put_text(&c, x_label, strlen(x_label));
        put(&c, ")");
    }
    put(&c, ", values on the vertical axis");
    if (y_label) {
        put(&c, " (");
        put_text(&c, y_label, strlen(y_label));
        put(&c, ")");
    }
    put(&c, ".");
    if (any_na) put(&c, " Gaps in a line are n/a values.");
    desc_end(&c, CHART_W, h, NULL);

    legend(&c, 1, x0, MARGIN, x1 - x0, series, n_series, SWATCH_LINE,
           any_na ? "gaps: n/a" : NULL);
    /* y axis: horizontal grid lines, tick labels left, the name turned along the axis */
    for (long long k = ys.first; k <= ys.last; k++) {
        double v = tick_value(&ys, k), y = map(&ys, v, bottom, top);
        emit(&c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\"/>\n", x0, y, x1, y,
             GRID);
        fmt_number(num, sizeof num, v, ys.decimals, 0);
        draw_plain(&c, x0 - 6, y + 4, "end", FS_SMALL, INK_SOFT, num);
    }
    emit(&c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\"/>\n", x0, top, x0,
         bottom, AXIS);
    if (y_label) {
        double ly = (top + bottom) / 2, lx = MARGIN + 10;
        emit(&c, "<text x=\"%f\" y=\"%f\" transform=\"rotate(-90 %f %f)\" text-anchor=\"middle\" "
                 "font-size=\"%f\" fill=\"%s\">", lx, ly, lx, ly, FS, INK);
        put_label(&c, y_label, bottom - top, FS);
        put(&c, "</text>\n");
    }
    /* x axis: ticks on whole points, no grid (the lines carry the eye) */
    for (long long k = xs.first; k <= xs.last; k++) {
        double v = (double)k * xs.step, x = map(&xs, v, x0, x1);
        emit(&c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\"/>\n", x, bottom, x,
             bottom + 4, AXIS);
        fmt_number(num, sizeof num, v, 0, 0);
        draw_plain(&c, x, bottom + 16, "middle", FS_SMALL, INK_SOFT, num);
    }
    emit(&c, "<line x1=\"%f\" y1=\"%f\" x2=\"%f\" y2=\"%f\" stroke=\"%s\"/>\n", x0, bottom, x1,
         bottom, AXIS);
    if (x_label) draw_text(&c, (x0 + x1) / 2, bottom + 33, "middle", FS, INK, x_label, x1 - x0);
    if (!n_series || !n_points) draw_no_data(&c, x0 + 6, top + 16);

    for (size_t s = 0; s < n_series; s++) {
        const double *row = values ? values + s * n_points : NULL;
        const char *colour = palette[s % 8], *name = label_at(series, s);
        put(&c, "<g><title>");
        put_text(&c, name, name ? strlen(name) : 0);
        put(&c, "</title>\n");
        /* one polyline per run of defined points: a NaN breaks the line */
        size_t p = 0;
        while (p < n_points) {
            if (!isfinite(at(row, p))) {
                p++;
                continue;
            }
            size_t end = p;
            while (end < n_points && isfinite(at(row, end))) end++;
            if (end - p >= 2) {
                emit(&c, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                         "stroke-linejoin=\"round\" points=\"", colour);
                for (size_t q = p; q < end; q++)
                    emit(&c, "%s%f,%f", q > p ? " " : "", map(&xs, (double)(q + 1), x0, x1),
                         map(&ys, row[q], bottom, top));
                put(&c, "\"/>\n");
            }
            for (size_t q = p; q < end; q++)
                if (n_points <= MARKERS_MAX_POINTS || end - p == 1)
                    draw_marker(&c, s, map(&xs, (double)(q + 1), x0, x1),
                                map(&ys, row[q], bottom, top), colour);
            p = end;
        }
        put(&c, "</g>\n");
    }
    return chart_end(&c);
}
