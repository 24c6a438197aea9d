/*
** persona_parse.c -- the JSON scores of a persona-bias reply (METHODS §9): phase 1
** {"creativity": n, "accuracy": n, ...} for one response, phase 2 {"candidate_1": {...},
** "candidate_2": {...}, "preferred": "candidate_1"|"candidate_2", "reasons": "..."} for a pair.
**
** Which object is read: the last top-level JSON object of the reply that parses. The text is
** scanned from the start; at each '{' a JSON object is tried, and when one parses the scan goes
** on after its end (so objects nested inside it are not candidates). This accepts a bare
** object, one inside a fenced code block (```json ... ```), one after prose and one followed by
** prose; when a judge writes an example and then its answer, the answer (the last) counts.
**
** Strict about the content, so that a failure is never read as a score: every metric of the
** set must be there under its exact name, as a JSON number (not a string, not a boolean)
** within the range [lo, hi]; other keys ("reasons", a judge's comments) are ignored. Phase 2
** needs both candidates as objects and "preferred" exactly "candidate_1" or "candidate_2".
** Anything else is E with a short reason ("not JSON", "missing metric \"accuracy\"",
** "accuracy out of range 0 to 10: 11", "unknown preferred value \"both\"", "candidate_2
** missing"), stored with every row of the call.
**
** Nothing here sends, stores or renders anything.
*/
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* Replies longer than this are E before any parsing: a score reply is a few hundred bytes,
** and the scan tries a parse at every '{'. */
#define MAX_REPLY_BYTES (256u * 1024u)

static int reject(char *reason, size_t size, const char *fmt, ...) ARB__ATTR_PRINTF(3, 4);
static int reject(char *reason, size_t size, const char *fmt, ...)
{
    if (reason && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The last top-level object of text that parses (new reference), or NULL. */
static json_t *last_object(const char *text, size_t len)
{
    json_t *last = NULL;
    size_t i = 0;
    while (i < len) {
        const char *open = memchr(text + i, '{', len - i);
        if (!open) break;
        i = (size_t)(open - text);
        json_error_t err;
        json_t *v = json_loadb(open, len - i, JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES,
                               &err);
        if (json_is_object(v) && err.position > 0) {
            json_decref(last);
            last = v;
            i += (size_t)err.position;
        } else {
            json_decref(v);
            i++;
        }
    }
    return last;
}

/* Reads the metrics of m from obj into values; prefix ("" or "candidate_1: ") starts the
** reason. Returns 0, or -1 with the reason. */
static int read_metrics(const json_t *obj, const arb__persona_metrics *m, const char *prefix,
                        double *values, char *reason, size_t size)
{
    for (size_t k = 0; k < m->n; k++) {
        const char *name = m->names[k];
        const json_t *v = json_object_get(obj, name);
        if (!v) return reject(reason, size, "%smissing metric \"%s\"", prefix, name);
        if (!json_is_number(v))
            return reject(reason, size, "%smetric \"%s\" is not a number (got %s)", prefix, name,
                          arb__json_kind(v));
        double x = json_number_value(v);
        if (!(x >= m->lo && x <= m->hi))
            return reject(reason, size, "%s%s out of range %g to %g: %g", prefix, name, m->lo,
                          m->hi, x);
        values[k] = x;
    }
    return 0;
}

/* The object of the reply, or NULL with the reason. */
static json_t *reply_object(const char *text, size_t len, char *reason, size_t size)
{
    if (!text || !len) {
        reject(reason, size, "not JSON: the reply is empty");
        return NULL;
    }
    if (len > MAX_REPLY_BYTES) {
        reject(reason, size, "not JSON: the reply is longer than %u bytes", MAX_REPLY_BYTES);
        return NULL;
    }
    json_t *o = last_object(text, len);
    if (!o) reject(reason, size, "not JSON: no JSON object in the reply");
    return o;
}

/* See internal.h. */
int arb__persona_parse_1(const char *text, size_t len, const arb__persona_metrics *m,
                         double *values, char *reason, size_t size)
{
    json_t *o = reply_object(text, len, reason, size);
    if (!o) return -1;
    int rc = read_metrics(o, m, "", values, reason, size);
    json_decref(o);
    return rc;
}

/* The offset of the last '"preferred"' key's value in text past its opening quote and
** "candidate_", or SIZE_MAX. */
static size_t preferred_digit_at(const char *text, size_t len)
{
    static const char key[] = "\"preferred\"", value[] = "\"candidate_";
    const size_t n = sizeof key - 1, m = sizeof value - 1;
    for (size_t i = len >= n ? len - n + 1 : 0; i-- > 0;) {
        if (memcmp(text + i, key, n)) continue;
        size_t k = i + n;
        while (k < len && (text[k] == ' ' || text[k] == '\t' || text[k] == '\n' || text[k] == '\r'))
            k++;
        if (k == len || text[k] != ':') return SIZE_MAX;
        k++;
        while (k < len && (text[k] == ' ' || text[k] == '\t' || text[k] == '\n' || text[k] == '\r'))
            k++;
        return len - k > m && !memcmp(text + k, value, m) ? k + m : SIZE_MAX;
    }
    return SIZE_MAX;
}

/* See internal.h. */
int arb__persona_preferred_locate(const char *text, size_t len, size_t *at)
{
    *at = SIZE_MAX;
    if (!text || !len || len > MAX_REPLY_BYTES) return -1;
    json_t *o = last_object(text, len);
    const char *s = json_string_value(json_object_get(o, "preferred"));
    int v = s && !strcmp(s, "candidate_1") ? 0 : s && !strcmp(s, "candidate_2") ? 1 : -1;
    json_decref(o);
    if (v < 0) return -1;
    size_t d = preferred_digit_at(text, len);
    /* the last key written must be the value read, and end there: "candidate_1" then '"' */
    if (d != SIZE_MAX && d + 1 < len && text[d] == (char)('1' + v) && text[d + 1] == '"') *at = d;
    return v;
}

/* See internal.h. */
int arb__persona_parse_2(const char *text, size_t len, const arb__persona_metrics *m,
                         double *values1, double *values2, int *preferred, char *reason,
                         size_t size)
{
    json_t *o = reply_object(text, len, reason, size);
    if (!o) return -1;
    static const char *const cands[2] = {"candidate_1", "candidate_2"};
    double *out[2] = {values1, values2};
    int rc = 0;
    for (int c = 0; c < 2 && !rc; c++) {
        const json_t *cv = json_object_get(o, cands[c]);
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%s: ", cands[c]);
        if (!cv) rc = reject(reason, size, "%s missing", cands[c]);
        else if (!json_is_object(cv))
            rc = reject(reason, size, "%s is not an object (got %s)", cands[c],
                        arb__json_kind(cv));
        else rc = read_metrics(cv, m, prefix, out[c], reason, size);
    }
    if (!rc) {
        const json_t *p = json_object_get(o, "preferred");
        const char *s = json_string_value(p);
        char shown[64];
        if (!p) rc = reject(reason, size, "preferred missing");
        else if (!s)
            rc = reject(reason, size, "unknown preferred value (got %s, expected \"candidate_1\" "
                                      "or \"candidate_2\")",
                        arb__json_kind(p));
        else if (!strcmp(s, cands[0])) *preferred = 0;
        else if (!strcmp(s, cands[1])) *preferred = 1;
        else {
            arb__excerpt(shown, sizeof shown, s, json_string_length(p));
            rc = reject(reason, size, "unknown preferred value %s", shown);
        }
    }
    json_decref(o);
    return rc;
}
