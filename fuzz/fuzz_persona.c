/*
** fuzz_persona.c -- libFuzzer target for the persona-bias readers (METHODS §9): the JSON score
** parser (persona_parse.c) and the scenarios / identities readers (persona_input.c). The first
** byte picks the reader and the metric set, the rest is the text, copied into an exact-size
** buffer without a terminating NUL so reads past its end are caught by AddressSanitizer.
**
** What must hold whatever the bytes:
** - score parser: E (-1) comes with a non-empty reason that fits the buffer; a valid reply
**   (0) has every metric of the set written, each a number within [lo, hi], and phase 2 a
**   preferred candidate 0 or 1;
** - identities / scenarios: a refusal names "path:line: " (a whole-file message "path: " only
**   for a file with nothing in it); a success gives consistent counts (identities: every
**   category named, at least 2 labels, each non-empty and unique ignoring case; scenarios: one
**   item per scenario line, two answers per item, response1 and response2 of that item).
*/
#include "internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PATH "in.txt"

/* A refusal's message starts "in.txt:<digits>" then ':' (identities add a column) or names the
** whole file with one of the messages for a file with nothing in it. */
static void check_errmsg(const char *msg, const char *whole_file)
{
    if (!msg || strncmp(msg, PATH ":", strlen(PATH ":"))) abort();
    const char *p = msg + strlen(PATH ":");
    if (isdigit((unsigned char)*p)) {
        while (isdigit((unsigned char)*p)) p++;
        if (*p != ':' || strlen(p) < 3) abort();
        return;
    }
    if (strcmp(p, whole_file)) abort();
}

static void check_reason(int rc, const char *reason, size_t size)
{
    if (rc != -1 && rc != 0) abort();
    if (rc == 0) return;
    if (!memchr(reason, '\0', size) || !reason[0]) abort();
}

static void check_values(const double *v, const arb__persona_metrics *m)
{
    for (size_t k = 0; k < m->n; k++)
        if (isnan(v[k]) || v[k] < m->lo || v[k] > m->hi) abort();
}

static void fuzz_scores(int phase, int custom, const char *text, size_t len)
{
    static const char *const four[] = {"creativity", "accuracy", "efficiency", "reliability"};
    static const char *const two[] = {"warmth", "a"};
    arb__persona_metrics m = custom ? (arb__persona_metrics){two, 2, 1, 5}
                                    : (arb__persona_metrics){four, 4, 0, 10};
    double v1[4], v2[4];
    for (size_t k = 0; k < 4; k++) v1[k] = v2[k] = NAN; /* an unwritten metric stays NaN */
    char reason[128];
    memset(reason, 'x', sizeof reason); /* no NUL: an unwritten reason is caught */
    if (phase == 1) {
        int rc = arb__persona_parse_1(text, len, &m, v1, reason, sizeof reason);
        check_reason(rc, reason, sizeof reason);
        if (!rc) check_values(v1, &m);
    } else {
        int preferred = -1;
        int rc = arb__persona_parse_2(text, len, &m, v1, v2, &preferred, reason, sizeof reason);
        check_reason(rc, reason, sizeof reason);
        if (!rc) {
            check_values(v1, &m);
            check_values(v2, &m);
            if (preferred != 0 && preferred != 1) abort();
        }
    }
}

static void fuzz_identities(const char *text, size_t len)
{
    arb__persona_identities ids;
    char *err = NULL;
    arb_status st = arb__persona_identities_parse(PATH, text, len, &ids, &err);
    if (st == ARB_PARSE) {
        check_errmsg(err, " expected a mapping with \"categories\"");
    } else if (st == ARB_OK) {
        if (err || !ids.n) abort();
        for (size_t c = 0; c < ids.n; c++) {
            const arb__persona_category *cat = &ids.categories[c];
            if (!cat->name || !*cat->name || cat->n_labels < 2) abort();
            for (size_t d = 0; d < c; d++)
                if (!strcmp(ids.categories[d].name, cat->name)) abort();
            for (size_t k = 0; k < cat->n_labels; k++) {
                if (!cat->labels[k] || !*cat->labels[k]) abort();
                for (size_t j = 0; j < k; j++)
                    if (!strcasecmp(cat->labels[j], cat->labels[k])) abort();
            }
        }
    } else if (st != ARB_NOMEM) {
        abort();
    }
    free(err);
    arb__persona_identities_free(&ids);
}

/* The number of lines holding something other than spaces and tabs (the scenario lines). */
static size_t scenario_lines(const char *text, size_t len)
{
    size_t pos = 0, n, count = 0;
    const char *line;
    while (arb__text_next_line(text, len, &pos, &line, &n)) {
        size_t i = 0;
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        count += i < n;
    }
    return count;
}

static void fuzz_scenarios(const char *text, size_t len)
{
    arb_dataset *ds = NULL;
    char *err = NULL;
    arb_status st = arb__persona_scenarios_parse(PATH, text, len, &ds, &err);
    if (st == ARB_PARSE) {
        if (ds) abort();
        check_errmsg(err, " no scenarios (expected one JSON object per line)");
    } else if (st == ARB_OK) {
        size_t n = arb_dataset_item_count(ds);
        if (err || !n || n != scenario_lines(text, len)) abort();
        if (arb_dataset_answer_count(ds) != 2 * n) abort();
        for (size_t i = 0; i < n; i++) {
            const arb_item *it = arb_dataset_item(ds, i);
            if (!it->id || !*it->id || !it->question || !*it->question || !it->category) abort();
            if (!arb_dataset_find_answer(ds, it->id, "response1") ||
                !arb_dataset_find_answer(ds, it->id, "response2"))
                abort();
        }
    } else if (st != ARB_NOMEM) {
        abort();
    }
    free(err);
    arb_dataset_destroy(ds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size) return 0;
    unsigned pick = data[0];
    size_t len = size - 1;
    char *text = malloc(len ? len : 1);
    if (!text) return 0;
    if (len) memcpy(text, data + 1, len);
    switch (pick % 4) {
    case 0: fuzz_scores(1, (pick >> 2) & 1, text, len); break;
    case 1: fuzz_scores(2, (pick >> 2) & 1, text, len); break;
    case 2: fuzz_identities(text, len); break;
    default: fuzz_scenarios(text, len); break;
    }
    free(text);
    return 0;
}
