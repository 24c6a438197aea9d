/*
** csv.c -- reading CSV text (RFC 4180, parsed by libcsv in strict mode) record by record, with
** the physical line each record starts on, for the importers that take CSV (human labels,
** generic judgment files).
**
** Invariants:
**   - The text is fed to libcsv one physical line at a time, so a record's end is known to
**     fall on the line being fed, and the line it started on is that line minus the newlines
**     inside its (quoted) fields. Messages name that line.
**   - A record is handed over whole: every field NUL-terminated, with its length (a field may
**     hold a NUL byte; the caller decides what that means).
**
** Not here: what the columns mean (the callers), UTF-8 checks (the callers, per field).
*/
#include "internal.h"

#include <csv.h>
#include <stdlib.h>
#include <string.h>

typedef struct csv_reader {
    const char *path;
    arb__csv_record_fn fn;
    void *ud;
    arb__buf values;     /* the record's field values, each followed by a NUL */
    size_t *offsets, *lens;
    const char **fields; /* built at the record's end: values may move while it grows */
    size_t n_fields, cap_fields, cap_ptrs;
    size_t newlines;     /* '\n' inside this record's fields */
    size_t line;         /* physical line being fed */
    size_t records;      /* records completed, header included */
    arb_status status;   /* first error; once set, callbacks do nothing */
    char **errmsg;
} csv_reader;

static void on_field(void *s, size_t len, void *data)
{
    csv_reader *cr = data;
    if (cr->status) return;
    const char *text = s ? s : "";
    size_t cap = cr->cap_fields;
    if (arb__grow(&cr->offsets, &cap, cr->n_fields + 1, sizeof *cr->offsets) ||
        arb__grow(&cr->lens, &cr->cap_fields, cr->n_fields + 1, sizeof *cr->lens) ||
        arb__buf_reserve(&cr->values, len + 1)) {
        arb__set_err(cr->errmsg, "%s: out of memory", cr->path);
        cr->status = ARB_NOMEM;
        return;
    }
    cr->offsets[cr->n_fields] = cr->values.len;
    cr->lens[cr->n_fields] = len;
    arb__buf_append(&cr->values, text, len); /* room reserved above */
    arb__buf_append(&cr->values, "", 1);
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\n') cr->newlines++;
    cr->n_fields++;
}

static void on_record(int terminator, void *data)
{
    (void)terminator;
    csv_reader *cr = data;
    if (cr->status) return;
    if (arb__grow(&cr->fields, &cr->cap_ptrs, cr->n_fields + 1, sizeof *cr->fields)) {
        arb__set_err(cr->errmsg, "%s: out of memory", cr->path);
        cr->status = ARB_NOMEM;
        return;
    }
    for (size_t i = 0; i < cr->n_fields; i++) cr->fields[i] = cr->values.data + cr->offsets[i];
    cr->status = cr->fn(cr->ud, cr->line - cr->newlines, cr->records, cr->fields, cr->lens,
                        cr->n_fields);
    cr->records++;
    cr->n_fields = 0;
    cr->newlines = 0;
    arb__buf_reset(&cr->values);
}

/* See internal.h. */
arb_status arb__csv_each_record(const char *path, const char *text, size_t len,
                                arb__csv_record_fn fn, void *ud, char **errmsg)
{
    struct csv_parser parser;
    if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
        arb__set_err(errmsg, "%s: out of memory", path);
        return ARB_NOMEM;
    }
    csv_reader cr;
    memset(&cr, 0, sizeof cr);
    cr.path = path;
    cr.fn = fn;
    cr.ud = ud;
    cr.errmsg = errmsg;
    arb__buf_init(&cr.values, 0);

    /* pending_line: the first line that may start a record not yet completed */
    size_t line = 1, pending_line = 1;
    const char *p = text, *end = text + len;
    while (p < end && !cr.status) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        size_t before = cr.records;
        cr.line = line;
        if (csv_parse(&parser, p, n, on_field, on_record, &cr) != n && !cr.status) {
            int e = csv_error(&parser);
            cr.status = e == CSV_EPARSE ? ARB_PARSE : e == CSV_ETOOBIG ? ARB_TOOBIG : ARB_NOMEM;
            if (e == CSV_EPARSE)
                arb__set_err(errmsg, "%s:%zu: malformed CSV: a quote inside an unquoted field, "
                             "or text after a closing quote (quote fields that contain quotes, "
                             "and double the inner quotes)", path, line);
            else
                arb__set_err(errmsg, "%s:%zu: %s", path, line, csv_strerror(e));
        }
        int blank = 1;
        for (size_t i = 0; i < n && blank; i++)
            blank = p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n';
        if (cr.records != before || (blank && pending_line == line)) pending_line = line + 1;
        p += n;
        if (nl && p < end) line++;
    }
    if (!cr.status) {
        cr.line = line;
        if (csv_fini(&parser, on_field, on_record, &cr) != 0 && !cr.status) {
            cr.status = ARB_PARSE;
            arb__set_err(errmsg, "%s:%zu: malformed CSV: a quoted field that starts at or after "
                         "this line is never closed", path, pending_line);
        }
    }
    csv_free(&parser);
    arb__buf_free(&cr.values);
    free(cr.offsets);
    free(cr.lens);
    free(cr.fields);
    return cr.status;
}
