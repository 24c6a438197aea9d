/*
** report.h -- the report module's document: what report.c gathers from the store and
** report_html.c and report_md.c render (arb_report_write).
**
** A report is a list of sections (fixed ids such as "summary"), each a list of blocks:
** paragraphs, sub-headings, tables, charts, labelled texts (a question, an answer, a turn of a
** discussion) and pairs of them shown side by side. Every string in the document is plain
** text, often straight from the store (names, questions, answers, replies): the renderers
** escape every one of them, so the gatherer never writes markup and a renderer never trusts
** a string. Numbers are formatted once, by the gatherer, so both formats show the same text.
** Charts are drawn only in HTML; each chart sits next to a table with its numbers, so the
** Markdown loses nothing but the picture.
**
** Everything a document holds lives in its arena and goes with arb__report_doc_free: the
** strings a gatherer puts into cells and chart labels itself must be document strings
** (arb__report_str, ...) or static text, never borrowed from an object freed before rendering.
** Modules: report_doc.c builds documents, report.c fills one from the store, report_html.c
** and report_md.c render it; escaping and SVG charts are html.c's.
*/
#ifndef ARB_REPORT_H
#define ARB_REPORT_H

#include "internal.h"

typedef enum arb__report_block_kind {
    ARB__REPORT_PARA,    /* text */
    ARB__REPORT_NOTE,    /* text: why a section (or part of one) has nothing to show */
    ARB__REPORT_HEADING, /* text: a heading inside the section, level 3 or 4 */
    ARB__REPORT_TABLE,   /* table */
    ARB__REPORT_CHART,   /* chart (HTML only) */
    ARB__REPORT_TEXT,    /* label + text: a long untrusted text kept with its line breaks */
    ARB__REPORT_PAIR     /* label + text and label2 + text2, side by side in HTML */
} arb__report_block_kind;

typedef struct arb__report_table {
    const char *caption;       /* may be NULL */
    int folded;                /* long numbers behind a chart: HTML shows them on request */
    size_t n_cols, n_rows, cap_rows;
    const char **head;         /* n_cols column names */
    unsigned char *numeric;    /* per column: 1 = numbers (right-aligned) */
    const char **cells;        /* n_rows x n_cols, row-major; NULL = empty cell */
} arb__report_table;

typedef enum arb__report_chart_kind {
    ARB__CHART_STACKED,   /* rows x cols shares: arb__svg_stacked_bars */
    ARB__CHART_HEATMAP,   /* rows x cols values from lo to hi: arb__svg_heatmap */
    ARB__CHART_INTERVALS, /* rows: value, lo, hi, ref: arb__svg_intervals */
    ARB__CHART_BARS,      /* rows: value: arb__svg_bars */
    ARB__CHART_LINES      /* rows = series, cols = points (n_cols only): arb__svg_lines */
} arb__report_chart_kind;

typedef struct arb__report_chart {
    arb__report_chart_kind kind;
    const char *title;
    const char *x_label;      /* axis label (intervals, bars, lines) */
    const char *y_label;      /* lines */
    const char **rows;        /* n_rows labels */
    size_t n_rows;
    const char **cols;        /* n_cols labels (stacked: categories; heatmap: columns) */
    size_t n_cols;
    double *values;           /* stacked, heatmap, lines: n_rows x n_cols; else n_rows */
    double *lo, *hi;          /* intervals: n_rows each */
    double ref;               /* intervals: reference line (NAN none) */
    double v_lo, v_hi;        /* heatmap: colour scale */
    int diverging;            /* heatmap: a scale centred at 0 from -v_hi to +v_hi (signed
                                 differences; v_lo unused), arb__svg_heatmap_diverging */
    const char *cell_format;  /* heatmap: printf format of value * scale */
    double scale;
} arb__report_chart;

typedef struct arb__report_block {
    arb__report_block_kind kind;
    int level;                  /* HEADING: 3 (a part of the section) or 4 (within a part) */
    const char *text, *label;  /* PARA, NOTE, HEADING: text; TEXT, PAIR: label + text */
    const char *text2, *label2; /* PAIR: the right-hand side */
    arb__report_table *table;
    arb__report_chart *chart;
} arb__report_block;

typedef struct arb__report_section {
    const char *id;    /* "summary", "verdicts", ...: the anchor and the browser tests' handle */
    const char *title;
    arb__report_block *blocks;
    size_t n_blocks, cap_blocks;
} arb__report_section;

typedef struct arb__report_arena_chunk arb__report_arena_chunk;

typedef struct arb__report_doc {
    const char *title;
    const char *generated;     /* UTC time, "2026-01-31T12:00:00Z" */
    arb__report_section *sections;
    size_t n_sections, cap_sections;
    arb__report_arena_chunk *arena;
    int nomem;                 /* an allocation failed: the document is incomplete */
} arb__report_doc;

/* ---- report_doc.c: building a document ------------------------------------------------- */
/* Every builder takes strings by copy and fails softly: out of memory it sets doc->nomem and
** returns NULL (or nothing), and later builders do nothing, so a gatherer checks once at the
** end (SQLite's mallocFailed). */

/* Starts an empty document titled title (copied), stamped with the current UTC time. */
void arb__report_doc_init(arb__report_doc *doc, const char *title);
void arb__report_doc_free(arb__report_doc *doc);
/* n zeroed elements of size bytes from the document's arena. */
void *arb__report_alloc(arb__report_doc *doc, size_t n, size_t size);
const char *arb__report_str(arb__report_doc *doc, const char *s); /* NULL in, NULL out */
/* A copy of s cut to at most max bytes at a code point, with a note of how much was left
** out: answers and replies can be megabytes long. */
const char *arb__report_str_cut(arb__report_doc *doc, const char *s, size_t max);
const char *arb__report_printf(arb__report_doc *doc, const char *fmt, ...) ARB__ATTR_PRINTF(2, 3);

/* Appends a section; the blocks below go to the last section. */
void arb__report_begin_section(arb__report_doc *doc, const char *id, const char *title);
void arb__report_para(arb__report_doc *doc, const char *fmt, ...) ARB__ATTR_PRINTF(2, 3);
void arb__report_note(arb__report_doc *doc, const char *fmt, ...) ARB__ATTR_PRINTF(2, 3);
void arb__report_heading(arb__report_doc *doc, const char *fmt, ...) ARB__ATTR_PRINTF(2, 3);
void arb__report_subheading(arb__report_doc *doc, const char *fmt, ...) ARB__ATTR_PRINTF(2, 3);
void arb__report_text(arb__report_doc *doc, const char *label, const char *text);
void arb__report_pair(arb__report_doc *doc, const char *label, const char *text,
                      const char *label2, const char *text2);
/* A table whose columns are given as "Judge|#Items|#Share": '|' separates the column names,
** a leading '#' marks a column of numbers. */
arb__report_table *arb__report_table_new(arb__report_doc *doc, const char *caption,
                                         const char *columns);
/* A table with a first column (named as in columns above) and n columns of numbers named by
** names (copied): a matrix or a series per model. */
arb__report_table *arb__report_table_wide(arb__report_doc *doc, const char *caption,
                                          const char *first, const char *const *names,
                                          size_t n);
/* A new row of t: n_cols cells, all NULL, to fill before the next row is added. */
const char **arb__report_table_row(arb__report_doc *doc, arb__report_table *t);
/* A chart with room for its labels and values (NAN-filled; lo/hi for intervals only). */
arb__report_chart *arb__report_chart_new(arb__report_doc *doc, arb__report_chart_kind kind,
                                         const char *title, size_t n_rows, size_t n_cols);

/* Distinct names (judges, languages) in the document's arena: the rows and columns of a
** matrix. */
typedef struct arb__report_names {
    const char **v;
    size_t n, cap;
} arb__report_names;
/* The index of s (NULL counts as "") in list, copied and appended when absent; SIZE_MAX (and
** doc->nomem) when out of memory. */
size_t arb__report_name_index(arb__report_doc *doc, arb__report_names *list, const char *s);
/* Sorts list by strcmp (byte order), so indexes taken before are void. */
void arb__report_names_sort(arb__report_names *list);
/* A language code for people: a document copy of code, or "(none)" for an item without a
** language. */
const char *arb__report_language(arb__report_doc *doc, const char *code);

/* Numbers for people: "12.3%", "+0.125", "0.732", "1032", each "n/a" when undefined, and
** with " [lo, hi]" after it when the interval is defined. */
typedef enum arb__report_format {
    ARB__FMT_PERCENT, /* a share 0..1 as a percentage with one decimal */
    ARB__FMT_SIGNED,  /* a signed difference, three decimals */
    ARB__FMT_PLAIN,   /* three decimals */
    ARB__FMT_RATING,  /* a rating on the Elo scale, no decimals */
    ARB__FMT_P        /* a p-value, four decimals, "<0.0001" below that */
} arb__report_format;
const char *arb__report_value(arb__report_doc *doc, arb__report_format f, double x);
const char *arb__report_value_ci(arb__report_doc *doc, arb__report_format f, double x,
                                 double lo, double hi);
const char *arb__report_count(arb__report_doc *doc, long long n); /* "12,345" */
const char *arb__report_seconds(arb__report_doc *doc, double s);  /* "0.31 s", "1 h 02 min" */

/* ---- report_consistency.c: the multilingual section ------------------------------------ */
/* Appends the section "multilingual" (METHODS §8) to doc when store holds pointwise judgments
** (nothing otherwise), computed with params' bootstrap, seed and ensemble. Returns store errors
** as arb_consistency_compute does (ARB_INVALID for an ensemble judge without pointwise
** judgments), ARB_NOMEM when out of memory. */
arb_status arb__report_multilingual(arb__report_doc *doc, arb_store *store,
                                    const arb_report_params *params);

/* ---- report_persona.c: the persona section ------------------------------------------- */
/* Appends the section "persona" (METHODS §9) to doc when store holds persona scores (nothing
** otherwise), computed with params' bootstrap and seed. Returns store errors as
** arb_persona_stats_compute does, ARB_NOMEM when out of memory. */
arb_status arb__report_persona(arb__report_doc *doc, arb_store *store,
                               const arb_report_params *params);

/* ---- report_html.c, report_md.c: rendering ------------------------------------------ */
/* Renders doc (complete: nomem not set) as one HTML file / as Markdown, appended to b.
** Return 0, or -1 when out of memory. */
int arb__report_render_html(arb__buf *b, const arb__report_doc *doc);
int arb__report_render_md(arb__buf *b, const arb__report_doc *doc);

#endif
