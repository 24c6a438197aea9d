/*
** import_judgments.c -- judgments made elsewhere into the store (arb_judgments_import): the
** table of source kinds and their readers, and the reader of arbiter's generic judgment file
** (kind "judgments": JSONL, one judgment per line, or CSV with a header row).
**
** The generic format (README "Importing judgments made elsewhere"): required judge, item
** (string or integer), candidate, baseline, order (0: candidate shown first, 1: baseline
** shown first) and exactly one of verdict (position: A first better, B second better, C tie /
** both good, D both bad, E no valid verdict) or winner (candidate, baseline, tie, both_bad,
** invalid); optional rep, options (2/3/4, default 4: METHODS §2.1), category, language,
** question, candidate_answer, baseline_answer, raw, judge_family, candidate_family,
** baseline_family, and the additions protocol, template, request, strength (weak|strong).
** What `arbiter export --format jsonl|csv` writes reads back as is: position_verdict is the
** verdict, content the raw text; the other keys it writes (model_verdict, model, error,
** tokens, latency, attempts, source) and every unknown field are kept in pairwise.extra (the
** store also writes model, tokens, latency and attempts into the call row).
**
** Invariants:
**   - All or nothing: the whole file is read and checked before the store sees any of it;
**     the first bad line stops the import with "file:line: field \"x\": expected ..., got ...".
**   - A verdict the judge could not have given under its options (D with options 3) is
**     refused, not mapped: the file is wrong about one or the other.
**   - winner is in models, verdict in positions; winner maps through the order (candidate
**     with order 0 is A, with order 1 B), tie to C, both_bad to D, invalid to E.
**
** Not here: storing (store_import.c), the checks every importer shares (import_set.c), the
** FastChat and Arena-Hard readers (their own files, listed in the table of kinds below).
*/
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* ---- the kinds of source ------------------------------------------------------------------- */

/* Every kind arb_judgments_import reads: its name (the CLI's word) and its reader. A new kind
** is one line here and its reader (declared in internal.h). */
static const struct import_kind {
    const char *name;
    arb__import_reader_fn read;
} import_kinds[] = {
    {"judgments", arb__import_generic},
    {"fastchat", arb__import_fastchat},
    {"arena-hard", arb__import_arena_hard},
};
#define N_IMPORT_KINDS (sizeof import_kinds / sizeof *import_kinds)

/* See arbiter.h. */
arb_status arb_judgments_import(arb_store *store, const char *kind, const char *path,
                                const arb_import_params *params, arb_import_stats *stats)
{
    if (stats) memset(stats, 0, sizeof *stats);
    if (!store) return ARB_INVALID;
    if (!kind || !path || !*path || !params || !params->source || !*params->source)
        return arb__store_fail(store, ARB_INVALID,
                               "import: need a kind, a path and a source name");
    const struct import_kind *k = NULL;
    for (size_t i = 0; i < N_IMPORT_KINDS && !k; i++)
        if (!strcmp(import_kinds[i].name, kind)) k = &import_kinds[i];
    if (!k) {
        arb__buf known;
        arb__buf_init(&known, 0);
        for (size_t i = 0; i < N_IMPORT_KINDS; i++)
            arb__buf_printf(&known, "%s%s", i ? ", " : "", import_kinds[i].name);
        arb_status st = arb__store_fail(store, ARB_INVALID,
                                        "import: unknown kind \"%s\" (known: %s)", kind,
                                        known.data ? known.data : "");
        arb__buf_free(&known);
        return st;
    }
    arb__import_set *set = arb__import_set_create();
    if (!set) return arb__store_fail(store, ARB_NOMEM, "import: out of memory");
    char *err = NULL;
    arb_status st = k->read(path, params, set, &err);
    if (st) arb__store_fail(store, st, "%s", err ? err : arb_strerror(st));
    else st = arb__store_put_import(store, params->source, kind, path, set, stats);
    free(err);
    arb__import_set_destroy(set);
    return st;
}

/* ---- the generic format: fields ------------------------------------------------------------ */

/* The fields the generic format knows. Strings are read as they are (an empty CSV cell is an
** absent field); the others are checked below. */
enum {
    F_JUDGE, F_ITEM, F_CANDIDATE, F_BASELINE, F_ORDER, F_VERDICT, F_WINNER, F_REP, F_OPTIONS,
    F_CATEGORY, F_LANGUAGE, F_QUESTION, F_CANDIDATE_ANSWER, F_BASELINE_ANSWER, F_RAW,
    F_JUDGE_FAMILY, F_CANDIDATE_FAMILY, F_BASELINE_FAMILY, F_PROTOCOL, F_TEMPLATE, F_REQUEST,
    F_STRENGTH,
    /* what arbiter export writes under other names */
    F_POSITION_VERDICT, F_CONTENT,
    F__COUNT
};
static const char *const field_names[F__COUNT] = {
    "judge", "item", "candidate", "baseline", "order", "verdict", "winner", "rep", "options",
    "category", "language", "question", "candidate_answer", "baseline_answer", "raw",
    "judge_family", "candidate_family", "baseline_family", "protocol", "template", "request",
    "strength", "position_verdict", "content",
};
/* Keys of arbiter's own export that say nothing the import needs (derived, or about the
** call): kept in extra when they hold a value, dropped when null. */
static const char *const export_only[] = {
    "model_verdict", "model", "error", "prompt_tokens", "completion_tokens", "latency_ms",
    "attempts", "source",
};
/* The protocols whose rows are pairwise judgments (METHODS §2, §2.5, §6). */
static const char *const protocols[] = {"sbs", "soft", "hard", "tournament"};

static int field_index(const char *name)
{
    for (int f = 0; f < F__COUNT; f++)
        if (!strcmp(field_names[f], name)) return f;
    return -1;
}

static int is_export_only(const char *name)
{
    for (size_t k = 0; k < sizeof export_only / sizeof *export_only; k++)
        if (!strcmp(export_only[k], name)) return 1;
    return 0;
}

/* What a JSON value is, for messages: the value itself (quoted, cut) for strings and numbers,
** its kind otherwise. */
static void describe(char *out, size_t size, const json_t *v)
{
    if (json_is_string(v)) {
        arb__excerpt(out, size, json_string_value(v), json_string_length(v));
    } else if (json_is_integer(v)) {
        snprintf(out, size, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        snprintf(out, size, "%g", json_real_value(v));
    } else {
        snprintf(out, size, "%s", arb__json_kind(v));
    }
}

/* One line being read: the object (JSONL, or built from a CSV record whose cells are all
** strings) and where it is. */
typedef struct reader {
    const char *path;
    arb__import_set *set;
    char **errmsg;
    char where[512];
    int csv;         /* numbers arrive as text */
    /* CSV: the header's column names and which are known fields */
    char **columns;
    size_t n_columns;
} reader;

static arb_status field_fail(reader *r, const char *field, const char *fmt, ...)
    ARB__ATTR_PRINTF(3, 4);
static arb_status field_fail(reader *r, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *what = arb__vsprintf(fmt, ap);
    va_end(ap);
    arb__set_err(r->errmsg, "%s: field \"%s\": %s", r->where, field,
                 what ? what : "out of memory");
    free(what);
    return what ? ARB_PARSE : ARB_NOMEM;
}

/* The field's value, NULL when absent or null. */
static json_t *get(json_t *obj, int f)
{
    json_t *v = json_object_get(obj, field_names[f]);
    return json_is_null(v) ? NULL : v;
}

/* A string field: *out = its text (borrowed from obj), NULL when absent. Required fields
** must be present and non-empty. */
static arb_status text_field(reader *r, json_t *obj, int f, int required, const char **out)
{
    json_t *v = get(obj, f);
    *out = NULL;
    char got[96];
    if (!v) {
        if (!required) return ARB_OK;
        return field_fail(r, field_names[f], "expected a non-empty string, got nothing");
    }
    if (!json_is_string(v)) {
        describe(got, sizeof got, v);
        return field_fail(r, field_names[f], "expected a string, got %s", got);
    }
    if (strlen(json_string_value(v)) != json_string_length(v))
        return field_fail(r, field_names[f], "expected text, got a NUL byte inside");
    if (required && !json_string_length(v))
        return field_fail(r, field_names[f], "expected a non-empty string, got \"\"");
    *out = json_string_value(v);
    return ARB_OK;
}

/* A whole-number field in [lo, hi]: a JSON integer, or in CSV its decimal text. *out keeps its
** default when the field is absent. expected says what is accepted, for the message. */
static arb_status int_field(reader *r, json_t *obj, int f, int lo, int hi, const char *expected,
                            int *out)
{
    json_t *v = get(obj, f);
    if (!v) return ARB_OK;
    long long x = LLONG_MIN;
    if (json_is_integer(v)) {
        x = (long long)json_integer_value(v);
    } else if (r->csv && json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end = NULL;
        errno = 0;
        long long y = strtoll(s, &end, 10);
        if (*s && *s != ' ' && *s != '+' && !*end && !errno) x = y;
    }
    if (x < lo || x > hi) {
        char got[96];
        describe(got, sizeof got, v);
        return field_fail(r, field_names[f], "expected %s, got %s", expected, got);
    }
    *out = (int)x;
    return ARB_OK;
}

/* Whether verdict v can be said under options (METHODS §2.1): 2 options A/B, 3 add C, 4 add
** D; E (no valid verdict) always. */
static int verdict_allowed(char v, int options)
{
    return v == 'A' || v == 'B' || v == 'E' || (v == 'C' && options >= 3) ||
           (v == 'D' && options >= 4);
}

/* The position verdict of the line: from verdict (or export's position_verdict) or from
** winner through the order. */
static arb_status read_verdict(reader *r, json_t *obj, int order, int options, char *verdict)
{
    const char *v = NULL, *pv = NULL, *w = NULL;
    arb_status st;
    if ((st = text_field(r, obj, F_VERDICT, 0, &v)) ||
        (st = text_field(r, obj, F_POSITION_VERDICT, 0, &pv)) ||
        (st = text_field(r, obj, F_WINNER, 0, &w)))
        return st;
    if (v && pv)
        return field_fail(r, "position_verdict", "expected it or verdict, not both (they are "
                          "the same thing)");
    int f = v ? F_VERDICT : F_POSITION_VERDICT;
    if (pv) v = pv;
    if (v && w)
        return field_fail(r, "winner", "expected exactly one of %s (in positions) and winner "
                          "(in models), got both", field_names[f]);
    if (!v && !w)
        return field_fail(r, "verdict", "expected exactly one of verdict (A, B, C, D or E, in "
                          "positions) and winner (candidate, baseline, tie, both_bad or "
                          "invalid), got neither");
    char got[96];
    if (v) {
        if (strlen(v) != 1 || !strchr("ABCDE", v[0])) {
            arb__excerpt(got, sizeof got, v, strlen(v));
            return field_fail(r, field_names[f], "expected A (first shown better), B (second "
                              "shown better), C (tie), D (both bad) or E (no valid verdict), "
                              "got %s", got);
        }
        *verdict = v[0];
    } else {
        static const struct {
            const char *word;
            char verdict_if_first; /* the position verdict when the candidate was shown first */
        } winners[] = {{"candidate", 'A'}, {"baseline", 'B'}, {"tie", 'C'},
                       {"both_bad", 'D'},  {"invalid", 'E'}};
        *verdict = 0;
        for (size_t k = 0; k < sizeof winners / sizeof *winners && !*verdict; k++)
            if (!strcmp(w, winners[k].word)) *verdict = winners[k].verdict_if_first;
        if (!*verdict) {
            arb__excerpt(got, sizeof got, w, strlen(w));
            return field_fail(r, "winner", "expected candidate, baseline, tie, both_bad or "
                              "invalid, got %s", got);
        }
        if (order == 1 && (*verdict == 'A' || *verdict == 'B'))
            *verdict = *verdict == 'A' ? 'B' : 'A';
        f = F_WINNER;
    }
    if (!verdict_allowed(*verdict, options)) {
        arb__excerpt(got, sizeof got, v ? v : w, strlen(v ? v : w));
        return field_fail(r, field_names[f], "expected a verdict possible with options %d (%s), "
                          "got %s", options,
                          options == 2 ? "A, B or E" : options == 3 ? "A, B, C or E"
                                                                    : "A, B, C, D or E",
                          got);
    }
    return ARB_OK;
}

/* The unknown fields and the non-null export-only keys of obj, as a JSON object text (caller
** frees), or NULL (*nomem set when out of memory) when there are none. */
static char *extra_of(json_t *obj, int *nomem)
{
    *nomem = 0;
    json_t *extra = NULL;
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (field_index(key) >= 0 || (is_export_only(key) && json_is_null(v))) continue;
        if ((!extra && !(extra = json_object())) || json_object_set(extra, key, v)) {
            json_decref(extra);
            *nomem = 1;
            return NULL;
        }
    }
    if (!extra) return NULL;
    char *text = json_dumps(extra, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(extra);
    if (!text) *nomem = 1;
    return text;
}

/* Reads one judgment from obj into the set. */
static arb_status read_judgment(reader *r, json_t *obj)
{
    arb__import_judgment j;
    memset(&j, 0, sizeof j);
    j.options = 4;
    j.where = r->where;
    arb_status st;
    const char *strength = NULL;
    /* item: a string, or an integer id written as its decimal text */
    char item_text[32];
    json_t *item = get(obj, F_ITEM);
    if (json_is_integer(item)) {
        snprintf(item_text, sizeof item_text, "%lld", (long long)json_integer_value(item));
        j.item = item_text;
    } else if (item && !json_is_string(item)) {
        char got[96];
        describe(got, sizeof got, item);
        return field_fail(r, "item", "expected a string or an integer id, got %s", got);
    } else if ((st = text_field(r, obj, F_ITEM, 1, &j.item))) {
        return st;
    }
    if ((st = text_field(r, obj, F_JUDGE, 1, &j.judge)) ||
        (st = text_field(r, obj, F_CANDIDATE, 1, &j.candidate)) ||
        (st = text_field(r, obj, F_BASELINE, 1, &j.baseline)))
        return st;
    j.order = -1;
    if ((st = int_field(r, obj, F_ORDER, 0, 1, "0 (candidate shown first) or 1 (baseline shown "
                        "first)", &j.order)))
        return st;
    if (j.order < 0)
        return field_fail(r, "order", "expected 0 (candidate shown first) or 1 (baseline shown "
                          "first), got nothing");
    if ((st = int_field(r, obj, F_OPTIONS, 2, 4, "2, 3 or 4 (METHODS 2.1)", &j.options)) ||
        (st = int_field(r, obj, F_REP, 0, 1000000, "a whole number >= 0", &j.rep)) ||
        (st = read_verdict(r, obj, j.order, j.options, &j.position_verdict)))
        return st;
    if (!strcmp(j.candidate, j.baseline))
        return field_fail(r, "baseline", "expected another model than the candidate, got "
                          "\"%s\" for both", j.candidate);
    const struct {
        int f;
        const char **out;
    } optional[] = {
        {F_CATEGORY, &j.category},
        {F_LANGUAGE, &j.language},
        {F_QUESTION, &j.question},
        {F_CANDIDATE_ANSWER, &j.candidate_answer},
        {F_BASELINE_ANSWER, &j.baseline_answer},
        {F_JUDGE_FAMILY, &j.judge_family},
        {F_CANDIDATE_FAMILY, &j.candidate_family},
        {F_BASELINE_FAMILY, &j.baseline_family},
        {F_PROTOCOL, &j.protocol},
        {F_TEMPLATE, &j.template_name},
        {F_STRENGTH, &strength},
    };
    for (size_t k = 0; k < sizeof optional / sizeof *optional; k++)
        if ((st = text_field(r, obj, optional[k].f, 0, optional[k].out))) return st;
    const char *raw = NULL, *content = NULL;
    if ((st = text_field(r, obj, F_RAW, 0, &raw)) ||
        (st = text_field(r, obj, F_CONTENT, 0, &content)))
        return st;
    if (raw && content)
        return field_fail(r, "content", "expected it or raw, not both (they are the same "
                          "thing)");
    j.raw = raw ? raw : content;
    char got[96];
    if (j.protocol) {
        int known = 0;
        for (size_t k = 0; k < sizeof protocols / sizeof *protocols; k++)
            known |= !strcmp(protocols[k], j.protocol);
        if (!known) {
            arb__excerpt(got, sizeof got, j.protocol, strlen(j.protocol));
            return field_fail(r, "protocol", "expected sbs, soft, hard or tournament, got %s",
                              got);
        }
    }
    if (j.template_name && !*j.template_name)
        return field_fail(r, "template", "expected a non-empty name, got \"\"");
    if (strength) {
        if (strcmp(strength, "weak") && strcmp(strength, "strong")) {
            arb__excerpt(got, sizeof got, strength, strlen(strength));
            return field_fail(r, "strength", "expected weak or strong, got %s", got);
        }
        if (j.position_verdict != 'A' && j.position_verdict != 'B')
            return field_fail(r, "strength", "expected only with a win (verdict A or B), got "
                              "it with verdict %c", j.position_verdict);
        j.strength = strength[0] == 's' ? 2 : 1;
    }
    const char *families[] = {j.judge_family, j.candidate_family, j.baseline_family};
    const int family_fields[] = {F_JUDGE_FAMILY, F_CANDIDATE_FAMILY, F_BASELINE_FAMILY};
    for (int k = 0; k < 3; k++)
        if (families[k] && !*families[k])
            return field_fail(r, field_names[family_fields[k]], "expected a non-empty family "
                              "name, got \"\"");
    /* request: the request as sent, a JSON object or its text */
    char *request_owned = NULL;
    json_t *request = get(obj, F_REQUEST);
    if (json_is_object(request)) {
        request_owned = json_dumps(request, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!request_owned) return field_fail(r, "request", "out of memory");
        j.request = request_owned;
    } else if (request) {
        if (!json_is_string(request) || strlen(json_string_value(request)) !=
                                            json_string_length(request)) {
            describe(got, sizeof got, request);
            return field_fail(r, "request", "expected a JSON object or its text, got %s", got);
        }
        json_error_t jerr;
        json_t *parsed = json_loads(json_string_value(request), 0, &jerr);
        int object = json_is_object(parsed);
        json_decref(parsed);
        if (!object) {
            describe(got, sizeof got, request);
            return field_fail(r, "request", "expected the text of a JSON object, got %s", got);
        }
        j.request = json_string_value(request);
    }
    int nomem = 0;
    char *extra = extra_of(obj, &nomem);
    if (nomem) {
        free(request_owned);
        return field_fail(r, "extra", "out of memory");
    }
    j.extra = extra;
    st = arb__import_set_add(r->set, &j, r->errmsg);
    if (st == ARB_INVALID) st = ARB_PARSE; /* the file is wrong (e.g. a duplicate line) */
    free(extra);
    free(request_owned);
    return st;
}

/* ---- the generic format: JSONL ------------------------------------------------------------- */

static arb_status read_jsonl(reader *r, const char *text, size_t len)
{
    size_t pos = 0, line_no = 0, n = 0;
    const char *line = NULL;
    arb_status st = ARB_OK;
    while (!st && arb__text_next_line(text, len, &pos, &line, &n)) {
        line_no++;
        snprintf(r->where, sizeof r->where, "%s:%zu", r->path, line_no);
        size_t i = 0;
        while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) i++;
        if (i == n) continue;
        size_t bad = 0;
        if (!arb__utf8_valid(line, n, &bad)) {
            arb__set_err(r->errmsg, "%s: invalid UTF-8: byte 0x%02X at column %zu", r->where,
                         (unsigned char)line[bad], bad + 1);
            return ARB_PARSE;
        }
        json_error_t err;
        json_t *obj = json_loadb(line, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
        if (!obj) {
            /* jansson quotes the text near the error, which may hold control characters */
            arb__buf why;
            arb__buf_init(&why, 0);
            int nomem = arb__buf_put_safe(&why, err.text);
            arb__set_err(r->errmsg, "%s: invalid JSON: %s (column %d)", r->where,
                         nomem || !why.data ? "" : why.data, err.column);
            arb__buf_free(&why);
            return ARB_PARSE;
        }
        if (!json_is_object(obj)) {
            arb__set_err(r->errmsg, "%s: expected a JSON object with judge, item, candidate, "
                         "baseline, order and verdict or winner, got %s", r->where,
                         arb__json_kind(obj));
            st = ARB_PARSE;
        } else {
            st = read_judgment(r, obj);
        }
        json_decref(obj);
    }
    return st;
}

/* ---- the generic format: CSV --------------------------------------------------------------- */

/* The header: column names, each once; the required ones present. */
static arb_status csv_header(reader *r, size_t line, const char *const *fields,
                             const size_t *lens, size_t n)
{
    snprintf(r->where, sizeof r->where, "%s:%zu", r->path, line);
    if (!(r->columns = calloc(n ? n : 1, sizeof *r->columns))) {
        arb__set_err(r->errmsg, "%s: out of memory", r->where);
        return ARB_NOMEM;
    }
    r->n_columns = n;
    for (size_t i = 0; i < n; i++) {
        size_t bad = 0;
        if (!arb__utf8_valid(fields[i], lens[i], &bad) || strlen(fields[i]) != lens[i] ||
            !lens[i]) {
            arb__set_err(r->errmsg, "%s: header: column %zu: expected a column name, got %s",
                         r->where, i + 1, lens[i] ? "invalid UTF-8 or a NUL byte" : "nothing");
            return ARB_PARSE;
        }
        for (size_t k = 0; k < i; k++)
            if (!strcmp(r->columns[k], fields[i])) {
                char name[96];
                arb__excerpt(name, sizeof name, fields[i], lens[i]);
                arb__set_err(r->errmsg, "%s: header: column %s appears twice (columns %zu and "
                             "%zu)", r->where, name, k + 1, i + 1);
                return ARB_PARSE;
            }
        if (!(r->columns[i] = arb__strdup(fields[i]))) {
            arb__set_err(r->errmsg, "%s: out of memory", r->where);
            return ARB_NOMEM;
        }
    }
    static const int required[] = {F_JUDGE, F_ITEM, F_CANDIDATE, F_BASELINE, F_ORDER};
    int has[F__COUNT] = {0};
    for (size_t i = 0; i < n; i++) {
        int f = field_index(r->columns[i]);
        if (f >= 0) has[f] = 1;
    }
    for (size_t k = 0; k < sizeof required / sizeof *required; k++)
        if (!has[required[k]]) {
            arb__set_err(r->errmsg, "%s: header: missing column \"%s\" (the first row must name "
                         "the columns: judge, item, candidate, baseline, order, and verdict or "
                         "winner)", r->where, field_names[required[k]]);
            return ARB_PARSE;
        }
    if (!has[F_VERDICT] && !has[F_WINNER] && !has[F_POSITION_VERDICT]) {
        arb__set_err(r->errmsg, "%s: header: missing column \"verdict\" or \"winner\"",
                     r->where);
        return ARB_PARSE;
    }
    return ARB_OK;
}

/* One record: its non-empty cells become the string fields of an object. */
static arb_status csv_row(reader *r, size_t line, const char *const *fields, const size_t *lens,
                          size_t n)
{
    snprintf(r->where, sizeof r->where, "%s:%zu", r->path, line);
    if (n == 1 && !lens[0]) return ARB_OK; /* a blank line */
    if (n != r->n_columns) {
        arb__set_err(r->errmsg, "%s: expected %zu fields as in the header, got %zu", r->where,
                     r->n_columns, n);
        return ARB_PARSE;
    }
    json_t *obj = json_object();
    if (!obj) {
        arb__set_err(r->errmsg, "%s: out of memory", r->where);
        return ARB_NOMEM;
    }
    arb_status st = ARB_OK;
    for (size_t i = 0; i < n && !st; i++) {
        if (!lens[i]) continue;
        size_t bad = 0;
        if (!arb__utf8_valid(fields[i], lens[i], &bad)) {
            st = field_fail(r, r->columns[i], "expected UTF-8 text, got byte 0x%02X at offset %zu",
                            (unsigned char)fields[i][bad], bad);
            break;
        }
        json_t *v = json_stringn(fields[i], lens[i]);
        if (!v || json_object_set_new(obj, r->columns[i], v)) {
            arb__set_err(r->errmsg, "%s: out of memory", r->where);
            st = ARB_NOMEM;
        }
    }
    if (!st) st = read_judgment(r, obj);
    json_decref(obj);
    return st;
}

static arb_status csv_on_record(void *ud, size_t line, size_t index, const char *const *fields,
                                const size_t *lens, size_t n)
{
    reader *r = ud;
    return index == 0 ? csv_header(r, line, fields, lens, n) : csv_row(r, line, fields, lens, n);
}

/* ---- the generic format: entry points ------------------------------------------------------ */

/* See internal.h. */
arb_status arb__import_generic_text(const char *path, const char *text, size_t len, int csv,
                                    arb__import_set *set, char **errmsg)
{
    reader r;
    memset(&r, 0, sizeof r);
    r.path = path;
    r.set = set;
    r.errmsg = errmsg;
    r.csv = csv;
    arb_status st;
    if (csv) {
        if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) { /* UTF-8 byte order mark */
            text += 3;
            len -= 3;
        }
        st = arb__csv_each_record(path, text, len, csv_on_record, &r, errmsg);
        if (!st && !r.columns) {
            arb__set_err(errmsg, "%s: empty: expected a header row naming the columns", path);
            st = ARB_PARSE;
        }
    } else {
        st = read_jsonl(&r, text, len);
    }
    for (size_t i = 0; i < r.n_columns; i++) free(r.columns[i]);
    free(r.columns);
    return st;
}

/* See internal.h. The format follows the file name: .csv is CSV, anything else JSONL. */
arb_status arb__import_generic(const char *path, const arb_import_params *params,
                               arb__import_set *set, char **errmsg)
{
    (void)params;
    size_t n = strlen(path);
    int csv = n >= 4 && !strcasecmp(path + n - 4, ".csv");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        arb__set_err(errmsg, "%s: is a directory, not a judgment file", path);
        return ARB_IO;
    }
    size_t len = 0;
    char *err = NULL;
    /* arb__read_file refuses more than 1 GiB ("too large") */
    char *text = arb__read_file(path, &len, &err);
    if (!text) {
        arb_status code = err && strstr(err, "too large") ? ARB_TOOBIG : ARB_IO;
        arb__set_err(errmsg, "%s", err ? err : "cannot read the judgment file");
        free(err);
        return code;
    }
    arb_status st = arb__import_generic_text(path, text, len, csv, set, errmsg);
    if (!st && arb__import_set_count(set) == 0) {
        arb__set_err(errmsg, "%s: no judgments in the file", path);
        st = ARB_PARSE;
    }
    free(text);
    return st;
}
