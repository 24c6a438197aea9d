/*
** report_html.c -- a report document (report.h) as one self-contained HTML file: inline CSS,
** inline SVG charts drawn by html.c, a table of contents, print styles, no scripts.
**
** Invariants: every string of the document goes through arb__html_text or arb__html_attr,
** ours included, so nothing from the store can open a tag or leave an attribute, nor carry an
** explicit bidirectional control (dropped there); model texts (<pre>) and table cells are
** laid out with unicode-bidi:plaintext, so right-to-left text reads right to left; the
** Content-Security-Policy allows inline styles and data: images and nothing else, so even
** markup that slipped through could not run or fetch anything; the page loads nothing.
** Not here: what the report says (report.c), escaping and charts (html.c).
*/
#include "report.h"

/* Readable on a screen (system fonts, a measure for prose, wide tables scroll on their own),
** and on paper: no shadows, each section on a new page, charts and text blocks not split. */
static const char report_css[] =
    ":root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--soft:#f6f8fa;--accent:#0b5cad}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0 auto;max-width:72rem;padding:2rem 1.5rem 4rem;color:var(--fg);"
    "background:#fff;font:16px/1.55 system-ui,-apple-system,'Segoe UI',Roboto,"
    "'Helvetica Neue',Arial,sans-serif}\n"
    "h1{font-size:2rem;line-height:1.2;margin:0 0 .5rem}\n"
    "h2{font-size:1.5rem;line-height:1.3;margin:2.5rem 0 .75rem;padding-bottom:.3rem;"
    "border-bottom:1px solid var(--line)}\n"
    "h3{font-size:1.15rem;line-height:1.35;margin:1.75rem 0 .5rem;overflow-wrap:anywhere}\n"
    "h4{font-size:1rem;line-height:1.4;margin:1.5rem 0 .5rem;overflow-wrap:anywhere}\n"
    "details.numbers{margin:.5rem 0 1.5rem}\n"
    "details.numbers summary{cursor:pointer;font-weight:600}\n"
    "p{margin:.5rem 0 1rem;max-width:50rem}\n"
    "p.note{color:var(--muted);font-style:italic}\n"
    "a{color:var(--accent)}\n"
    "nav.toc{background:var(--soft);border:1px solid var(--line);border-radius:6px;"
    "padding:.75rem 1.25rem;margin:1.5rem 0 2rem}\n"
    "nav.toc h2{font-size:1rem;margin:0 0 .25rem;padding:0;border:0}\n"
    "nav.toc ol{margin:0;padding-left:1.5rem;columns:2}\n"
    ".table-wrap{overflow-x:auto;margin:.75rem 0 1.5rem}\n"
    "table{border-collapse:collapse;font-size:.875rem;font-variant-numeric:tabular-nums}\n"
    "caption{text-align:left;font-weight:600;padding:.25rem 0 .5rem}\n"
    "th,td{border:1px solid var(--line);padding:.3rem .6rem;text-align:left;vertical-align:top;"
    "overflow-wrap:break-word}\n"
    "thead th{background:var(--soft)}\n"
    "tbody tr:nth-child(even){background:#fbfcfd}\n"
    "td.num{text-align:right;white-space:nowrap}\n"
    "th.num{text-align:right}\n"
    "figure.chart{margin:1rem 0 1.5rem;padding:.75rem;border:1px solid var(--line);"
    "border-radius:6px;box-shadow:0 1px 3px rgba(0,0,0,.08)}\n"
    "figure.chart svg{display:block;width:100%;height:auto}\n"
    "figcaption{font-weight:600;margin:0 0 .5rem}\n"
    ".text-block{margin:.5rem 0 1rem;min-width:0}\n"
    ".text-block .label{font-weight:600;margin:0 0 .25rem;overflow-wrap:anywhere}\n"
    "pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;padding:.6rem .8rem;"
    "max-height:32rem;overflow-y:auto;background:var(--soft);border:1px solid var(--line);"
    "border-radius:6px;font:.8125rem/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,"
    "monospace}\n"
    /* each paragraph of a model's text, and each cell, takes its direction from its own first
    ** letter: an Arabic or Hebrew reply reads right to left, and cannot turn its neighbours */
    "pre,td,th{unicode-bidi:plaintext}\n"
    ".pair{display:grid;grid-template-columns:1fr 1fr;gap:1rem}\n"
    "footer{margin-top:3rem;padding-top:1rem;border-top:1px solid var(--line);"
    "color:var(--muted);font-size:.875rem}\n"
    "@media (max-width:48rem){.pair{grid-template-columns:1fr}nav.toc ol{columns:1}}\n"
    "@media print{\n"
    "*{box-shadow:none!important}\n"
    "body{max-width:none;padding:0;font-size:11pt}\n"
    "a{color:inherit;text-decoration:none}\n"
    "section.report-section{break-before:page;page-break-before:always}\n"
    "figure.chart,.text-block,tr{break-inside:avoid;page-break-inside:avoid}\n"
    "h2,h3,h4,caption{break-after:avoid;page-break-after:avoid}\n"
    "pre{max-height:none;overflow:visible}\n"
    ".table-wrap{overflow:visible}\n"
    "thead{display:table-header-group}\n"
    "}\n";

static int put_table(arb__buf *b, const arb__report_table *t)
{
    if (t->folded && (arb__buf_puts(b, "<details class=\"numbers\"><summary>") ||
                      arb__html_text(b, t->caption ? t->caption : "The numbers") ||
                      arb__buf_printf(b, " (%zu rows)</summary>\n", t->n_rows)))
        return -1;
    if (arb__buf_puts(b, "<div class=\"table-wrap\"><table>")) return -1;
    if (t->caption && (arb__buf_puts(b, "<caption>") || arb__html_text(b, t->caption) ||
                       arb__buf_puts(b, "</caption>")))
        return -1;
    if (arb__buf_puts(b, "<thead><tr>")) return -1;
    for (size_t k = 0; k < t->n_cols; k++)
        if (arb__buf_puts(b, t->numeric[k] ? "<th scope=\"col\" class=\"num\">" : "<th scope=\"col\">") ||
            arb__html_text(b, t->head[k]) || arb__buf_puts(b, "</th>"))
            return -1;
    if (arb__buf_puts(b, "</tr></thead>\n<tbody>\n")) return -1;
    for (size_t r = 0; r < t->n_rows; r++) {
        if (arb__buf_puts(b, "<tr>")) return -1;
        for (size_t k = 0; k < t->n_cols; k++)
            if (arb__buf_puts(b, t->numeric[k] ? "<td class=\"num\">" : "<td>") ||
                arb__html_text(b, t->cells[r * t->n_cols + k]) || arb__buf_puts(b, "</td>"))
                return -1;
        if (arb__buf_puts(b, "</tr>\n")) return -1;
    }
    if (arb__buf_puts(b, "</tbody></table></div>\n")) return -1;
    return t->folded ? arb__buf_puts(b, "</details>\n") : 0;
}

static int put_chart(arb__buf *b, const arb__report_chart *c)
{
    const char *const *rows = c->rows, *const *cols = c->cols;
    int rc = 0;
    /* html.c draws no visible heading: the page names each chart */
    if (arb__buf_puts(b, "<figure class=\"chart\"><figcaption>") || arb__html_text(b, c->title) ||
        arb__buf_puts(b, "</figcaption>\n"))
        return -1;
    switch (c->kind) {
    case ARB__CHART_STACKED:
        rc = arb__svg_stacked_bars(b, c->title, rows, c->n_rows, cols, c->n_cols, c->values);
        break;
    case ARB__CHART_HEATMAP:
        rc = c->diverging
                 ? arb__svg_heatmap_diverging(b, c->title, rows, c->n_rows, cols, c->n_cols,
                                              c->values, c->v_hi, c->cell_format, c->scale)
                 : arb__svg_heatmap(b, c->title, rows, c->n_rows, cols, c->n_cols, c->values,
                                    c->v_lo, c->v_hi, c->cell_format, c->scale);
        break;
    case ARB__CHART_INTERVALS:
        rc = arb__svg_intervals(b, c->title, c->x_label, rows, c->n_rows, c->values, c->lo, c->hi,
                                c->ref);
        break;
    case ARB__CHART_BARS: rc = arb__svg_bars(b, c->title, c->x_label, rows, c->n_rows, c->values); break;
    case ARB__CHART_LINES:
        rc = arb__svg_lines(b, c->title, c->x_label, c->y_label, rows, c->n_rows, c->values,
                            c->n_cols);
        break;
    }
    return rc || arb__buf_puts(b, "</figure>\n") ? -1 : 0;
}

static int put_text_block(arb__buf *b, const char *label, const char *text)
{
    return arb__buf_puts(b, "<div class=\"text-block\"><p class=\"label\">") ||
                   arb__html_text(b, label) || arb__buf_puts(b, "</p><pre>") ||
                   arb__html_text(b, text) || arb__buf_puts(b, "</pre></div>\n")
               ? -1
               : 0;
}

/* Nonzero when out of memory. */
static int put_block_parts(arb__buf *b, const arb__report_block *k)
{
    switch (k->kind) {
    case ARB__REPORT_PARA:
        return arb__buf_puts(b, "<p>") || arb__html_text(b, k->text) || arb__buf_puts(b, "</p>\n");
    case ARB__REPORT_NOTE:
        return arb__buf_puts(b, "<p class=\"note\">") || arb__html_text(b, k->text) ||
               arb__buf_puts(b, "</p>\n");
    case ARB__REPORT_HEADING:
        return arb__buf_puts(b, k->level == 4 ? "<h4>" : "<h3>") || arb__html_text(b, k->text) ||
               arb__buf_puts(b, k->level == 4 ? "</h4>\n" : "</h3>\n");
    case ARB__REPORT_TABLE: return put_table(b, k->table);
    case ARB__REPORT_CHART: return put_chart(b, k->chart);
    case ARB__REPORT_TEXT: return put_text_block(b, k->label, k->text);
    case ARB__REPORT_PAIR:
        return arb__buf_puts(b, "<div class=\"pair\">\n") ||
               put_text_block(b, k->label, k->text) || put_text_block(b, k->label2, k->text2) ||
               arb__buf_puts(b, "</div>\n");
    }
    return 0;
}

static int put_block(arb__buf *b, const arb__report_block *k)
{
    return put_block_parts(b, k) ? -1 : 0;
}

static int put_section(arb__buf *b, const arb__report_section *s)
{
    if (arb__buf_puts(b, "<section class=\"report-section\" id=\"") || arb__html_attr(b, s->id) ||
        arb__buf_puts(b, "\">\n<h2>") || arb__html_text(b, s->title) ||
        arb__buf_puts(b, "</h2>\n"))
        return -1;
    for (size_t k = 0; k < s->n_blocks; k++)
        if (put_block(b, &s->blocks[k])) return -1;
    return arb__buf_puts(b, "</section>\n");
}

int arb__report_render_html(arb__buf *b, const arb__report_doc *doc)
{
    if (arb__buf_puts(b,
                      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                      "'none'; style-src 'unsafe-inline'; img-src data:\">\n"
                      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                      "<meta name=\"generator\" content=\"arbiter " ARB_VERSION "\">\n<title>") ||
        arb__html_text(b, doc->title) || arb__buf_puts(b, "</title>\n<style>\n") ||
        arb__buf_puts(b, report_css) || arb__buf_puts(b, "</style>\n</head>\n<body>\n<header><h1>") ||
        arb__html_text(b, doc->title) ||
        arb__buf_puts(b, "</h1></header>\n<nav class=\"toc\" aria-label=\"Contents\">"
                         "<h2>Contents</h2>\n<ol>\n"))
        return -1;
    for (size_t k = 0; k < doc->n_sections; k++)
        if (arb__buf_puts(b, "<li><a href=\"#") || arb__html_attr(b, doc->sections[k].id) ||
            arb__buf_puts(b, "\">") || arb__html_text(b, doc->sections[k].title) ||
            arb__buf_puts(b, "</a></li>\n"))
            return -1;
    if (arb__buf_puts(b, "</ol>\n</nav>\n<main>\n")) return -1;
    for (size_t k = 0; k < doc->n_sections; k++)
        if (put_section(b, &doc->sections[k])) return -1;
    return arb__buf_puts(b, "</main>\n<footer><p>Generated by arbiter " ARB_VERSION " on <time datetime=\"") ||
                   arb__html_attr(b, doc->generated) || arb__buf_puts(b, "\">") ||
                   arb__html_text(b, doc->generated) ||
                   arb__buf_puts(b, "</time> (UTC). Charts are drawn by arbiter as inline SVG; "
                                    "the page has no scripts and loads nothing.</p></footer>\n"
                                    "</body>\n</html>\n")
               ? -1
               : 0;
}
