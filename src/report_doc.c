/*
** report_doc.c -- building a report document (report.h): an arena for its strings and arrays,
** sections and blocks, tables, charts, and numbers formatted for people.
**
** Invariants: everything a document holds is in its arena (one free); a failed allocation
** sets doc->nomem once and from then on every builder does nothing, so callers check at the
** end; an undefined number (NaN or infinite) is "n/a", never "nan".
** Not here: what goes into a report (report.c) or how it looks (report_html.c, report_md.c).
*/
#include "report.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ARENA_ALIGN 16
#define ARENA_CHUNK ((size_t)64 * 1024)

struct arb__report_arena_chunk {
    arb__report_arena_chunk *next;
    size_t used, size;
};
/* Chunk data starts after the header, rounded up so any object can sit at its start. */
#define CHUNK_HEADER ((sizeof(arb__report_arena_chunk) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1))

void arb__report_doc_init(arb__report_doc *doc, const char *title)
{
    memset(doc, 0, sizeof *doc);
    doc->title = arb__report_str(doc, title);
    char stamp[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    doc->generated = arb__report_str(doc, stamp);
}

void arb__report_doc_free(arb__report_doc *doc)
{
    if (!doc) return;
    for (arb__report_arena_chunk *c = doc->arena, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    doc->arena = NULL;
}

void *arb__report_alloc(arb__report_doc *doc, size_t n, size_t size)
{
    if (doc->nomem) return NULL;
    if (size && n > (SIZE_MAX - ARENA_CHUNK) / size) goto nomem;
    size_t bytes = (n * size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (!bytes) bytes = ARENA_ALIGN;
    arb__report_arena_chunk *c = doc->arena;
    if (!c || c->size - c->used < bytes) {
        size_t room = bytes > ARENA_CHUNK ? bytes : ARENA_CHUNK;
        if (!(c = malloc(CHUNK_HEADER + room))) goto nomem;
        c->used = 0;
        c->size = room;
        c->next = doc->arena;
        doc->arena = c;
    }
    void *p = (unsigned char *)c + CHUNK_HEADER + c->used;
    c->used += bytes;
    memset(p, 0, bytes);
    return p;
nomem:
    doc->nomem = 1;
    return NULL;
}

/* Makes room for need elements at *pp (arena arrays never shrink; the old copy is left in
** the arena, at most doubling what the array uses). Returns 0, or -1 when out of memory. */
static int doc_grow(arb__report_doc *doc, void *pp, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap * 2 : 8;
    if (n < need) n = need;
    void *fresh = arb__report_alloc(doc, n, size);
    if (!fresh) return -1;
    void **slot = pp;
    if (*slot) memcpy(fresh, *slot, *cap * size);
    *slot = fresh;
    *cap = n;
    return 0;
}

static const char *str_n(arb__report_doc *doc, const char *s, size_t n)
{
    char *copy = arb__report_alloc(doc, n + 1, 1);
    if (copy) memcpy(copy, s, n);
    return copy;
}

const char *arb__report_str(arb__report_doc *doc, const char *s)
{
    return s ? str_n(doc, s, strlen(s)) : NULL;
}

const char *arb__report_str_cut(arb__report_doc *doc, const char *s, size_t max)
{
    if (!s) return NULL;
    size_t len = strlen(s);
    if (len <= max) return str_n(doc, s, len);
    size_t keep = max;
    while (keep > 0 && ((unsigned char)s[keep] & 0xC0) == 0x80) keep--; /* a code point's start */
    return arb__report_printf(doc, "%.*s\n[... %zu more bytes not shown]", (int)keep, s,
                              len - keep);
}

static const char *vprintf_doc(arb__report_doc *doc, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static const char *vprintf_doc(arb__report_doc *doc, const char *fmt, va_list ap)
{
    if (doc->nomem) return NULL;
    char *s = arb__vsprintf(fmt, ap);
    if (!s) {
        doc->nomem = 1;
        return NULL;
    }
    const char *copy = arb__report_str(doc, s);
    free(s);
    return copy;
}

const char *arb__report_printf(arb__report_doc *doc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *s = vprintf_doc(doc, fmt, ap);
    va_end(ap);
    return s;
}

/* ---- sections and blocks ---------------------------------------------------------------- */

void arb__report_begin_section(arb__report_doc *doc, const char *id, const char *title)
{
    if (doc_grow(doc, &doc->sections, &doc->cap_sections, doc->n_sections + 1,
                 sizeof *doc->sections))
        return;
    arb__report_section *s = &doc->sections[doc->n_sections];
    memset(s, 0, sizeof *s);
    s->id = arb__report_str(doc, id);
    s->title = arb__report_str(doc, title);
    if (!doc->nomem) doc->n_sections++;
}

/* A new block of the last section, or NULL (no section yet, or out of memory). */
static arb__report_block *new_block(arb__report_doc *doc, arb__report_block_kind kind)
{
    if (doc->nomem || !doc->n_sections) return NULL;
    arb__report_section *s = &doc->sections[doc->n_sections - 1];
    if (doc_grow(doc, &s->blocks, &s->cap_blocks, s->n_blocks + 1, sizeof *s->blocks))
        return NULL;
    arb__report_block *b = &s->blocks[s->n_blocks++];
    memset(b, 0, sizeof *b);
    b->kind = kind;
    return b;
}

static void text_block(arb__report_doc *doc, arb__report_block_kind kind, int level,
                       const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));
static void text_block(arb__report_doc *doc, arb__report_block_kind kind, int level,
                       const char *fmt, va_list ap)
{
    const char *text = vprintf_doc(doc, fmt, ap);
    arb__report_block *b = text ? new_block(doc, kind) : NULL;
    if (b) {
        b->text = text;
        b->level = level;
    }
}

void arb__report_para(arb__report_doc *doc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    text_block(doc, ARB__REPORT_PARA, 0, fmt, ap);
    va_end(ap);
}

void arb__report_note(arb__report_doc *doc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    text_block(doc, ARB__REPORT_NOTE, 0, fmt, ap);
    va_end(ap);
}

void arb__report_heading(arb__report_doc *doc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    text_block(doc, ARB__REPORT_HEADING, 3, fmt, ap);
    va_end(ap);
}

void arb__report_subheading(arb__report_doc *doc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    text_block(doc, ARB__REPORT_HEADING, 4, fmt, ap);
    va_end(ap);
}

void arb__report_text(arb__report_doc *doc, const char *label, const char *text)
{
    arb__report_block *b = new_block(doc, ARB__REPORT_TEXT);
    if (!b) return;
    b->label = arb__report_str(doc, label);
    b->text = arb__report_str(doc, text ? text : "");
}

void arb__report_pair(arb__report_doc *doc, const char *label, const char *text,
                      const char *label2, const char *text2)
{
    arb__report_block *b = new_block(doc, ARB__REPORT_PAIR);
    if (!b) return;
    b->label = arb__report_str(doc, label);
    b->text = arb__report_str(doc, text ? text : "");
    b->label2 = arb__report_str(doc, label2);
    b->text2 = arb__report_str(doc, text2 ? text2 : "");
}

arb__report_table *arb__report_table_new(arb__report_doc *doc, const char *caption,
                                         const char *columns)
{
    size_t n = 1;
    for (const char *p = columns; *p; p++) n += *p == '|';
    arb__report_table *t = arb__report_alloc(doc, 1, sizeof *t);
    arb__report_block *b = t ? new_block(doc, ARB__REPORT_TABLE) : NULL;
    if (!b) return NULL;
    b->table = t;
    t->caption = arb__report_str(doc, caption);
    t->n_cols = n;
    t->head = arb__report_alloc(doc, n, sizeof *t->head);
    t->numeric = arb__report_alloc(doc, n, 1);
    if (doc->nomem) return NULL;
    const char *p = columns;
    for (size_t k = 0; k < n; k++) {
        size_t len = strcspn(p, "|");
        if (*p == '#') {
            t->numeric[k] = 1;
            p++;
            len--;
        }
        t->head[k] = str_n(doc, p, len);
        p += len + (p[len] == '|');
    }
    return doc->nomem ? NULL : t;
}

arb__report_table *arb__report_table_wide(arb__report_doc *doc, const char *caption,
                                          const char *first, const char *const *names,
                                          size_t n)
{
    arb__report_table *t = arb__report_table_new(doc, caption, first);
    if (!t) return NULL;
    const char **head = arb__report_alloc(doc, n + 1, sizeof *head);
    unsigned char *numeric = arb__report_alloc(doc, n + 1, 1);
    if (!head || !numeric) return NULL;
    head[0] = t->head[0];
    numeric[0] = t->numeric[0];
    for (size_t k = 0; k < n; k++) {
        head[k + 1] = arb__report_str(doc, names[k]);
        numeric[k + 1] = 1;
    }
    t->head = head;
    t->numeric = numeric;
    t->n_cols = n + 1;
    return doc->nomem ? NULL : t;
}

const char **arb__report_table_row(arb__report_doc *doc, arb__report_table *t)
{
    if (!t || doc->nomem) return NULL;
    size_t cap_cells = t->cap_rows * t->n_cols;
    if (doc_grow(doc, &t->cells, &cap_cells, (t->n_rows + 1) * t->n_cols, sizeof *t->cells))
        return NULL;
    t->cap_rows = cap_cells / t->n_cols;
    const char **row = &t->cells[t->n_rows * t->n_cols];
    memset(row, 0, t->n_cols * sizeof *row);
    t->n_rows++;
    return row;
}

arb__report_chart *arb__report_chart_new(arb__report_doc *doc, arb__report_chart_kind kind,
                                         const char *title, size_t n_rows, size_t n_cols)
{
    arb__report_chart *c = arb__report_alloc(doc, 1, sizeof *c);
    arb__report_block *b = c ? new_block(doc, ARB__REPORT_CHART) : NULL;
    if (!b) return NULL;
    b->chart = c;
    c->kind = kind;
    c->title = arb__report_str(doc, title);
    c->n_rows = n_rows;
    c->n_cols = n_cols;
    c->rows = arb__report_alloc(doc, n_rows, sizeof *c->rows);
    c->cols = arb__report_alloc(doc, n_cols, sizeof *c->cols);
    int grid = kind == ARB__CHART_STACKED || kind == ARB__CHART_HEATMAP || kind == ARB__CHART_LINES;
    if (grid && n_cols && n_rows > SIZE_MAX / n_cols) {
        doc->nomem = 1;
        return NULL;
    }
    size_t n_values = grid ? n_rows * n_cols : n_rows;
    c->values = arb__report_alloc(doc, n_values, sizeof *c->values);
    c->lo = arb__report_alloc(doc, n_rows, sizeof *c->lo);
    c->hi = arb__report_alloc(doc, n_rows, sizeof *c->hi);
    if (doc->nomem) return NULL;
    for (size_t k = 0; k < n_values; k++) c->values[k] = NAN;
    for (size_t k = 0; k < n_rows; k++) c->lo[k] = c->hi[k] = NAN;
    c->ref = NAN;
    c->scale = 1;
    return c;
}

/* ---- lists of names ------------------------------------------------------------------------ */

size_t arb__report_name_index(arb__report_doc *doc, arb__report_names *list, const char *s)
{
    if (!s) s = "";
    for (size_t k = 0; k < list->n; k++)
        if (!strcmp(list->v[k], s)) return k;
    const char *copy = arb__report_str(doc, s);
    if (!copy || doc_grow(doc, &list->v, &list->cap, list->n + 1, sizeof *list->v)) return SIZE_MAX;
    list->v[list->n] = copy;
    return list->n++;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void arb__report_names_sort(arb__report_names *list)
{
    if (list->n > 1) qsort(list->v, list->n, sizeof *list->v, cmp_names);
}

const char *arb__report_language(arb__report_doc *doc, const char *code)
{
    return code && *code ? arb__report_str(doc, code) : "(none)";
}

/* ---- numbers for people ------------------------------------------------------------------ */

/* Writes x in format f into out (size bytes); "n/a" when undefined. */
static void put_number(char *out, size_t size, arb__report_format f, double x)
{
    if (!isfinite(x)) {
        snprintf(out, size, "n/a");
        return;
    }
    switch (f) {
    case ARB__FMT_PERCENT: snprintf(out, size, "%.1f%%", 100.0 * x); break;
    case ARB__FMT_SIGNED:
        if (fabs(x) < 0.0005) x = 0; /* no "-0.000" */
        snprintf(out, size, "%+.3f", x);
        break;
    case ARB__FMT_PLAIN:
        if (fabs(x) < 0.0005) x = 0; /* a κ of -1e-17 is 0.000, not "-0.000" */
        snprintf(out, size, "%.3f", x);
        break;
    case ARB__FMT_RATING: snprintf(out, size, "%.0f", fabs(x) < 0.5 ? 0.0 : x); break;
    case ARB__FMT_P:
        if (x < 0.0001) snprintf(out, size, "<0.0001");
        else snprintf(out, size, "%.4f", x);
        break;
    }
}

const char *arb__report_value(arb__report_doc *doc, arb__report_format f, double x)
{
    char text[64];
    put_number(text, sizeof text, f, x);
    return arb__report_str(doc, text);
}

const char *arb__report_value_ci(arb__report_doc *doc, arb__report_format f, double x,
                                 double lo, double hi)
{
    char v[64], l[64], h[64];
    put_number(v, sizeof v, f, x);
    if (!isfinite(x) || !isfinite(lo) || !isfinite(hi)) return arb__report_str(doc, v);
    put_number(l, sizeof l, f, lo);
    put_number(h, sizeof h, f, hi);
    return arb__report_printf(doc, "%s [%s, %s]", v, l, h);
}

const char *arb__report_count(arb__report_doc *doc, long long n)
{
    char digits[32], out[48];
    unsigned long long magnitude = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
    snprintf(digits, sizeof digits, "%llu", magnitude);
    size_t len = strlen(digits), k = 0;
    if (n < 0) out[k++] = '-';
    for (size_t i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0) out[k++] = ',';
        out[k++] = digits[i];
    }
    out[k] = '\0';
    return arb__report_str(doc, out);
}

const char *arb__report_seconds(arb__report_doc *doc, double s)
{
    if (!isfinite(s) || s < 0) return arb__report_str(doc, "n/a");
    if (s < 10) return arb__report_printf(doc, "%.2f s", s);
    if (s < 120) return arb__report_printf(doc, "%.1f s", s);
    long long whole = (long long)(s + 0.5);
    if (whole < 3600) return arb__report_printf(doc, "%lld min %02lld s", whole / 60, whole % 60);
    return arb__report_printf(doc, "%lld h %02lld min", whole / 3600, whole % 3600 / 60);
}
