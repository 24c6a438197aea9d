/*
** judges_file.c -- the judges file of a tournament (METHODS §6): a YAML document listing the
** reviewers, each an OpenAI-compatible endpoint with a model and sampling parameters.
**
**   judges:
**     - name: gpt4-judge            # optional, default the model
**       url: http://127.0.0.1:8000/v1
**       model: gpt-4o
**       api_key_env: OPENAI_API_KEY # optional: the variable that holds the key
**       contestant: gpt4            # optional: the contestant this judge is (peer rank)
**       temperature: 0              # optional sampling, defaults arb_sampling_default():
**       top_p: 0.1                  #   temperature, top_p, max_tokens, frequency_penalty,
**       max_tokens: 1024            #   seed; null = not sent
**       family: gpt                 # optional: the judge's family (METHODS §5)
**       reasoning_effort: medium    # optional, reasoning models: none|minimal|low|medium|high|
**       max_completion_tokens: 4096 #   xhigh, and the bound of visible + reasoning tokens
**       response_format: true       # optional: the endpoint accepts a JSON schema (default false)
**       logprobs: true              # optional: ask for token logprobs (default false), and
**       top_logprobs: 5             #   0..20 alternatives per token (OpenAI's limit; needs
**                                   #   logprobs: true); both sent only when set
**       endpoints: [http://10.0.0.5:8000/v1, http://10.0.0.6:8000/v1]
**                                   # instead of url: replicas, least-outstanding dispatch
**       max_in_flight: 256          # optional: most requests in flight per endpoint
**                                   #   (default: only --jobs bounds them)
**   families:                       # optional: contestant model name -> family, how
**     gpt4: gpt                     #   arbiter's own runs know contestant families
**
** A judging command stores the families (table families, source = the file's path) when it
** stores its judges: each config read here points back at the file (judges_file).
** A judge with reasoning_effort or max_completion_tokens is a reasoning model: the sampling
** defaults that such models refuse (OpenAI's answer 400 to temperature, top_p,
** frequency_penalty and max_tokens) are then not sent unless the file gives them.
**       price: {input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25}
**                                   # optional, USD per million tokens (cached optional: cached
**                                   # prompt tokens at the input price without it); null or
**                                   # absent: no price, costs are "unknown"
**                                   # batch_discount: 0.5 (optional, 0..1): the share off every
**                                   # price for calls answered through a Batch API
**
** The file is parsed by libyaml's document loader; scalars are typed by the YAML 1.2 core
** schema (plain 0.5 is a number, "0.5" quoted is a string). Everything is checked and the first
** problem is reported as "path:line:column: judge N: field \"f\": expected ..., got ...":
** unknown fields, fields given twice, wrong types or ranges, missing url/model, both url and
** endpoints, an empty endpoints list or a bad or repeated URL in it, an entry that
** is not a mapping, two judges with the same name. Nothing is half loaded.
** Secrets: the file names the environment variable of a key, never the key; values of url,
** endpoints and api_key_env are never echoed in messages (a URL may carry credentials, and a key pasted into
** api_key_env by mistake must not reach a terminal or a log). It does not read the variables.
*/
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct arb_judges_file {
    arb_judge_config *judges; /* string fields owned (freed through a cast) */
    char **contestants;       /* per judge, owned, NULL when none */
    size_t n;
    char *path;               /* owned */
    char **family_models, **family_names; /* the families: map, file order, owned */
    size_t n_families;
};

typedef struct loader {
    const char *path;
    yaml_document_t *doc;
    char *errmsg; /* first error (owned) */
} loader;

/* The fields of a judge, in the order the messages list them. */
enum { F_NAME, F_URL, F_MODEL, F_API_KEY_ENV, F_CONTESTANT, F_TEMPERATURE, F_TOP_P,
       F_MAX_TOKENS, F_FREQUENCY_PENALTY, F_SEED, F_FAMILY, F_PRICE, F_REASONING_EFFORT,
       F_MAX_COMPLETION_TOKENS, F_RESPONSE_FORMAT, F_LOGPROBS, F_TOP_LOGPROBS, F_ENDPOINTS,
       F_MAX_IN_FLIGHT, F__COUNT };
static const char *const field_names[F__COUNT] = {
    "name", "url", "model", "api_key_env", "contestant", "temperature", "top_p",
    "max_tokens", "frequency_penalty", "seed", "family", "price", "reasoning_effort",
    "max_completion_tokens", "response_format", "logprobs", "top_logprobs", "endpoints",
    "max_in_flight",
};
#define FIELD_LIST "name, url, model, api_key_env, contestant, temperature, top_p, " \
                   "max_tokens, frequency_penalty, seed, family, price, reasoning_effort, " \
                   "max_completion_tokens, response_format, logprobs, top_logprobs, " \
                   "endpoints, max_in_flight"

/* ---- messages ------------------------------------------------------------------------------ */


/* Records the first error: "path:line:column: <judge N: ><field "f": >message". at may be NULL
** (no position). Returns ARB_PARSE. */
static arb_status fail_at(loader *L, const yaml_node_t *at, size_t judge_no, const char *field,
                          const char *fmt, ...) ARB__ATTR_PRINTF(5, 6);
static arb_status fail_at(loader *L, const yaml_node_t *at, size_t judge_no, const char *field,
                          const char *fmt, ...)
{
    if (L->errmsg) return ARB_PARSE;
    arb__buf b;
    arb__buf_init(&b, 0);
    arb__buf_puts(&b, L->path);
    if (at)
        arb__buf_printf(&b, ":%lu:%lu", (unsigned long)at->start_mark.line + 1,
                        (unsigned long)at->start_mark.column + 1);
    arb__buf_puts(&b, ": ");
    if (judge_no) arb__buf_printf(&b, "judge %zu: ", judge_no);
    if (field) arb__buf_printf(&b, "field \"%s\": ", field);
    va_list ap;
    va_start(ap, fmt);
    char *msg = arb__vsprintf(fmt, ap);
    va_end(ap);
    arb__buf_puts(&b, msg ? msg : "out of memory");
    free(msg);
    L->errmsg = arb__buf_steal(&b);
    return ARB_PARSE;
}

/* Records "path: out of memory"; returns ARB_NOMEM. */
static arb_status out_of_memory(loader *L)
{
    fail_at(L, NULL, 0, NULL, "out of memory");
    return ARB_NOMEM;
}

/* ---- scalars (YAML 1.2 core schema) -------------------------------------------------------- */

typedef enum scalar_kind { K_STRING, K_NULL, K_BOOL, K_INT, K_FLOAT } scalar_kind;

static const char *scalar_text(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

static int is_one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (!strcmp(s, *words)) return 1;
    return 0;
}

/* The type of a scalar: quoted and block scalars are strings; a plain one is null, a boolean,
** an integer or a float when it reads as one (YAML 1.2 core schema), else a string. */
static scalar_kind classify(const yaml_node_t *n)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const bools[] = {"true", "True", "TRUE", "false", "False", "FALSE", NULL};
    static const char *const specials[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF",
                                           "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN",
                                           NULL};
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return K_STRING;
    const char *s = scalar_text(n);
    if (strlen(s) != n->data.scalar.length) return K_STRING;
    if (is_one_of(s, nulls)) return K_NULL;
    if (is_one_of(s, bools)) return K_BOOL;
    if (is_one_of(s, specials)) return K_FLOAT;
    const char *p = s + (*s == '+' || *s == '-');
    if ((p[0] == '0' && (p[1] == 'x' || p[1] == 'o')) && p == s) {
        const char *digits = p + 2;
        size_t ok = strspn(digits, p[1] == 'x' ? "0123456789abcdefABCDEF" : "01234567");
        return *digits && !digits[ok] ? K_INT : K_STRING;
    }
    if (*p >= '0' && *p <= '9' && !p[strspn(p, "0123456789")]) return K_INT;
    /* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
    size_t int_digits = strspn(p, "0123456789");
    const char *q = p + int_digits;
    size_t frac_digits = 0;
    if (*q == '.') {
        frac_digits = strspn(q + 1, "0123456789");
        q += 1 + frac_digits;
    }
    if (!int_digits && !frac_digits) return K_STRING;
    if (*q == 'e' || *q == 'E') {
        q++;
        if (*q == '+' || *q == '-') q++;
        size_t exp_digits = strspn(q, "0123456789");
        if (!exp_digits) return K_STRING;
        q += exp_digits;
    }
    return *q ? K_STRING : K_FLOAT;
}

/* Describes a value of the wrong type: "a mapping", "a list", "null", "boolean true",
** "number 1.5", "string \"x\"". With show_value = 0 a string or number is only named. */
static void describe(char *out, size_t size, const yaml_node_t *n, int show_value)
{
    if (!n) {
        snprintf(out, size, "nothing");
        return;
    }
    if (n->type == YAML_MAPPING_NODE) {
        snprintf(out, size, "a mapping");
        return;
    }
    if (n->type == YAML_SEQUENCE_NODE) {
        snprintf(out, size, "a list");
        return;
    }
    char shown[96];
    switch (classify(n)) {
    case K_NULL: snprintf(out, size, "null"); return;
    case K_BOOL:
        arb__excerpt(shown, sizeof shown, scalar_text(n), n->data.scalar.length);
        snprintf(out, size, "boolean %s", shown);
        return;
    case K_INT:
    case K_FLOAT:
        if (!show_value) {
            snprintf(out, size, "a number");
            return;
        }
        arb__excerpt(shown, sizeof shown, scalar_text(n), n->data.scalar.length);
        snprintf(out, size, "number %s", shown);
        return;
    case K_STRING:
        if (!show_value) {
            snprintf(out, size, n->data.scalar.length ? "a string" : "an empty string");
            return;
        }
        arb__excerpt(shown, sizeof shown, scalar_text(n), n->data.scalar.length);
        snprintf(out, size, "string %s", shown);
        return;
    }
}

/* ---- one judge ----------------------------------------------------------------------------- */

typedef struct judge_fields {
    const yaml_node_t *value[F__COUNT]; /* NULL when absent */
    const yaml_node_t *key[F__COUNT];
} judge_fields;

/* A text field: a non-empty scalar that is not null or a boolean (numbers count as their
** text: a model may be called 7). *out gets an owned copy. */
static arb_status read_text(loader *L, size_t judge_no, int f, const yaml_node_t *v,
                            int show_value, char **out)
{
    char got[160];
    if (v->type != YAML_SCALAR_NODE || classify(v) == K_NULL || classify(v) == K_BOOL ||
        !v->data.scalar.length) {
        describe(got, sizeof got, v, show_value);
        return fail_at(L, v, judge_no, field_names[f], "expected a non-empty string, got %s",
                       got);
    }
    if (strlen(scalar_text(v)) != v->data.scalar.length)
        return fail_at(L, v, judge_no, field_names[f], "expected a string without NUL bytes");
    *out = arb__strdup(scalar_text(v));
    if (!*out) return out_of_memory(L);
    return ARB_OK;
}

/* A number field in [lo, hi]; null leaves *out NAN (not sent). whole: integers only. */
static arb_status read_number_named(loader *L, size_t judge_no, const char *field,
                                    const yaml_node_t *v, double lo, double hi, int whole,
                                    const char *what, double *out);
static arb_status read_number(loader *L, size_t judge_no, int f, const yaml_node_t *v,
                              double lo, double hi, int whole, double *out)
{
    return read_number_named(L, judge_no, field_names[f], v, lo, hi, whole, "or null: not sent",
                             out);
}

/* read_number for a field named in full (e.g. "price.input_per_mtok"); what is the remark in
** parentheses after the range in messages. */
static arb_status read_number_named(loader *L, size_t judge_no, const char *field,
                                    const yaml_node_t *v, double lo, double hi, int whole,
                                    const char *what, double *out)
{
    char got[160];
    scalar_kind k = v->type == YAML_SCALAR_NODE ? classify(v) : K_STRING;
    if (v->type == YAML_SCALAR_NODE && k == K_NULL) {
        *out = NAN;
        return ARB_OK;
    }
    double x = NAN;
    if (v->type == YAML_SCALAR_NODE && k == K_INT) {
        /* 1.2 core: decimal (leading zeros too), 0x hexadecimal, 0o octal. */
        const char *s = scalar_text(v);
        errno = 0;
        long long i = s[0] == '0' && s[1] == 'x'   ? strtoll(s + 2, NULL, 16)
                      : s[0] == '0' && s[1] == 'o' ? strtoll(s + 2, NULL, 8)
                                                   : strtoll(s, NULL, 10);
        x = errno ? NAN : (double)i;
    } else if (v->type == YAML_SCALAR_NODE && k == K_FLOAT) {
        const char *s = scalar_text(v);
        x = strchr(s, 'n') || strchr(s, 'N') ? NAN : strchr(s, 'i') || strchr(s, 'I')
                                                          ? (s[0] == '-' ? -INFINITY : INFINITY)
                                                          : strtod(s, NULL);
    }
    int type_ok = v->type == YAML_SCALAR_NODE && (k == K_INT || (k == K_FLOAT && !whole));
    if (!type_ok || !isfinite(x) || x < lo || x > hi) {
        describe(got, sizeof got, v, 1);
        if (whole)
            return fail_at(L, v, judge_no, field,
                           "expected a whole number from %.0f to %.0f (%s), got %s", lo, hi, what,
                           got);
        return fail_at(L, v, judge_no, field, "expected a number from %g to %g (%s), got %s", lo,
                       hi, what, got);
    }
    *out = x;
    return ARB_OK;
}

/* price: null (no price), or a mapping of input_per_mtok and output_per_mtok (required) and
** cached_input_per_mtok (optional), each a number of USD per million tokens from 0 to 1e6, and
** batch_discount (optional), the share off every price for calls answered through a Batch API,
** from 0 to 1 (0.5: half price, OpenAI's). */
static arb_status read_price(loader *L, size_t judge_no, const yaml_node_t *v, arb_price *out)
{
    static const char *const keys[] = {"input_per_mtok", "output_per_mtok",
                                       "cached_input_per_mtok", "batch_discount"};
    static const char *const full[] = {"price.input_per_mtok", "price.output_per_mtok",
                                       "price.cached_input_per_mtok", "price.batch_discount"};
    enum { N_KEYS = 4 };
    char got[160];
    memset(out, 0, sizeof *out);
    if (v->type == YAML_SCALAR_NODE && classify(v) == K_NULL) return ARB_OK;
    if (v->type != YAML_MAPPING_NODE) {
        describe(got, sizeof got, v, 1);
        return fail_at(L, v, judge_no, field_names[F_PRICE],
                       "expected a mapping {input_per_mtok: X, output_per_mtok: Y} in USD per "
                       "million tokens (cached_input_per_mtok, batch_discount optional), got %s",
                       got);
    }
    const yaml_node_t *value[N_KEYS] = {0};
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
        const yaml_node_t *x = yaml_document_get_node(L->doc, p->value);
        if (!k || !x) return fail_at(L, v, judge_no, field_names[F_PRICE], "malformed mapping");
        size_t i = 0;
        while (i < N_KEYS && (k->type != YAML_SCALAR_NODE || strcmp(scalar_text(k), keys[i])))
            i++;
        if (i == N_KEYS) {
            if (k->type == YAML_SCALAR_NODE)
                arb__excerpt(got, sizeof got, scalar_text(k), k->data.scalar.length);
            else
                describe(got, sizeof got, k, 1);
            return fail_at(L, k, judge_no, field_names[F_PRICE],
                           "unknown field %s; expected input_per_mtok, output_per_mtok, "
                           "cached_input_per_mtok, batch_discount", got);
        }
        if (value[i]) return fail_at(L, k, judge_no, full[i], "given twice");
        value[i] = x;
    }
    double x[N_KEYS] = {NAN, NAN, NAN, 0};
    for (size_t i = 0; i < N_KEYS; i++) {
        if (!value[i]) {
            if (i >= 2) continue; /* optional */
            return fail_at(L, v, judge_no, full[i],
                           "missing; expected the price in USD per million tokens");
        }
        if (value[i]->type == YAML_SCALAR_NODE && classify(value[i]) == K_NULL) {
            if (i >= 2) continue; /* null: cached tokens at the input price, no discount */
            return fail_at(L, value[i], judge_no, full[i],
                           "expected a number from 0 to 1e+06 (USD per million tokens), got null");
        }
        arb_status st = i == 3 ? read_number_named(L, judge_no, full[i], value[i], 0, 1, 0,
                                                   "a share of the price: 0.5 = half price",
                                                   &x[i])
                               : read_number_named(L, judge_no, full[i], value[i], 0, 1e6, 0,
                                                   "USD per million tokens", &x[i]);
        if (st) return st;
    }
    out->known = 1;
    out->input_per_mtok = x[0];
    out->output_per_mtok = x[1];
    out->cached_input_per_mtok = x[2];
    out->batch_discount = x[3];
    return ARB_OK;
}

/* reasoning_effort: one of OpenAI's words (null: not sent); *out points to static text. */
static arb_status read_effort(loader *L, size_t judge_no, const yaml_node_t *v, const char **out)
{
    static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh",
                                          NULL};
    char got[160];
    if (v->type == YAML_SCALAR_NODE && classify(v) == K_NULL) {
        *out = NULL;
        return ARB_OK;
    }
    if (v->type == YAML_SCALAR_NODE && classify(v) == K_STRING)
        for (size_t i = 0; efforts[i]; i++)
            if (!strcmp(scalar_text(v), efforts[i])) {
                *out = efforts[i];
                return ARB_OK;
            }
    describe(got, sizeof got, v, 1);
    return fail_at(L, v, judge_no, field_names[F_REASONING_EFFORT],
                   "expected low, medium or high (also none, minimal, xhigh; null: not sent), "
                   "got %s", got);
}

/* A boolean field: true or false. */
static arb_status read_bool(loader *L, size_t judge_no, int f, const yaml_node_t *v, int *out)
{
    char got[160];
    if (v->type != YAML_SCALAR_NODE || classify(v) != K_BOOL) {
        describe(got, sizeof got, v, 1);
        return fail_at(L, v, judge_no, field_names[f], "expected true or false, got %s", got);
    }
    *out = scalar_text(v)[0] == 't' || scalar_text(v)[0] == 'T';
    return ARB_OK;
}

/* Nonzero when s is a plausible environment variable name: [A-Za-z_][A-Za-z0-9_]*. */
static int env_name_ok(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return 0;
    return !s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")];
}

static void free_endpoints(char **urls, size_t n)
{
    for (size_t i = 0; i < n; i++) free(urls[i]);
    free(urls);
}

/* The endpoints: list, a non-empty list of distinct base URLs, each checked like url (values
** never shown: a URL may hold credentials). *out (owned) gets the copies, *n their number. */
static arb_status read_endpoints(loader *L, size_t judge_no, const yaml_node_t *v, char ***out,
                                 size_t *n)
{
    char got[160];
    *out = NULL;
    *n = 0;
    size_t count = v->type == YAML_SEQUENCE_NODE
                       ? (size_t)(v->data.sequence.items.top - v->data.sequence.items.start)
                       : 0;
    if (!count) {
        if (v->type == YAML_SEQUENCE_NODE) snprintf(got, sizeof got, "an empty list");
        else describe(got, sizeof got, v, 0);
        return fail_at(L, v, judge_no, field_names[F_ENDPOINTS],
                       "expected a non-empty list of base URLs, e.g. [http://10.0.0.5:8000/v1, "
                       "http://10.0.0.6:8000/v1], got %s", got);
    }
    char **urls = calloc(count, sizeof *urls);
    if (!urls) return out_of_memory(L);
    arb_status st = ARB_OK;
    for (size_t i = 0; i < count && !st; i++) {
        const yaml_node_t *u = yaml_document_get_node(L->doc, v->data.sequence.items.start[i]);
        if (!u || u->type != YAML_SCALAR_NODE || classify(u) != K_STRING ||
            !u->data.scalar.length || strlen(scalar_text(u)) != u->data.scalar.length) {
            describe(got, sizeof got, u, 0);
            st = fail_at(L, u ? u : v, judge_no, field_names[F_ENDPOINTS],
                         "entry %zu: expected a base URL string, got %s", i + 1, got);
            break;
        }
        const char *problem = arb__url_problem(scalar_text(u));
        if (problem) {
            st = fail_at(L, u, judge_no, field_names[F_ENDPOINTS],
                         "entry %zu: expected an http:// or https:// URL with a host and a port "
                         "from 1 to 65535; the URL %s", i + 1, problem);
            break;
        }
        for (size_t k = 0; k < i && !st; k++)
            if (!strcmp(urls[k], scalar_text(u)))
                st = fail_at(L, u, judge_no, field_names[F_ENDPOINTS],
                             "entry %zu: the same URL as entry %zu; expected distinct endpoints",
                             i + 1, k + 1);
        if (!st && !(urls[i] = arb__strdup(scalar_text(u)))) st = out_of_memory(L);
    }
    if (st) {
        free_endpoints(urls, count);
        return st;
    }
    *out = urls;
    *n = count;
    return ARB_OK;
}

static void free_config(arb_judge_config *c)
{
    free((void *)(uintptr_t)c->name);
    free((void *)(uintptr_t)c->base_url);
    free((void *)(uintptr_t)c->model);
    free((void *)(uintptr_t)c->api_key_env);
    free((void *)(uintptr_t)c->family);
    free_endpoints((char **)(uintptr_t)c->endpoints, c->n_endpoints);
    memset(c, 0, sizeof *c);
}

/* Reads judge number judge_no (1-based) from node into *cfg and *contestant (owned on
** success; nothing is left allocated on failure). */
static arb_status read_judge(loader *L, const yaml_node_t *node, size_t judge_no,
                             arb_judge_config *cfg, char **contestant)
{
    char got[160];
    memset(cfg, 0, sizeof *cfg);
    *contestant = NULL;
    if (node->type != YAML_MAPPING_NODE) {
        describe(got, sizeof got, node, 1);
        return fail_at(L, node, judge_no, NULL,
                       "expected a mapping of fields (" FIELD_LIST "), got %s", got);
    }
    judge_fields jf;
    memset(&jf, 0, sizeof jf);
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
        const yaml_node_t *v = yaml_document_get_node(L->doc, p->value);
        if (!k || !v) return fail_at(L, node, judge_no, NULL, "malformed mapping");
        if (k->type != YAML_SCALAR_NODE) {
            describe(got, sizeof got, k, 1);
            return fail_at(L, k, judge_no, NULL, "expected a field name, got %s", got);
        }
        int f = 0;
        while (f < F__COUNT && strcmp(scalar_text(k), field_names[f])) f++;
        if (f == F__COUNT) {
            arb__excerpt(got, sizeof got, scalar_text(k), k->data.scalar.length);
            const char *hint = strstr(scalar_text(k), "key") || strstr(scalar_text(k), "token")
                                   ? " (a judges file never holds a key: put it in an "
                                     "environment variable and name the variable in api_key_env)"
                                   : "";
            return fail_at(L, k, judge_no, NULL, "unknown field %s; expected one of " FIELD_LIST
                           "%s", got, hint);
        }
        if (jf.value[f])
            return fail_at(L, k, judge_no, field_names[f], "given twice (first at line %lu)",
                           (unsigned long)jf.key[f]->start_mark.line + 1);
        jf.key[f] = k;
        jf.value[f] = v;
    }
    if (jf.value[F_URL] && jf.value[F_ENDPOINTS])
        return fail_at(L, jf.key[F_ENDPOINTS], judge_no, field_names[F_ENDPOINTS],
                       "given with url (line %lu); expected one of the two: url for one endpoint, "
                       "endpoints for several", (unsigned long)jf.key[F_URL]->start_mark.line + 1);
    if (!jf.value[F_URL] && !jf.value[F_ENDPOINTS])
        return fail_at(L, node, judge_no, field_names[F_URL],
                       "missing; expected the endpoint's base URL, e.g. http://127.0.0.1:8000/v1 "
                       "(or endpoints: a list of them)");
    if (!jf.value[F_MODEL])
        return fail_at(L, node, judge_no, field_names[F_MODEL],
                       "missing; expected the model name the endpoint serves");

    arb_status st;
    char *name = NULL, *url = NULL, *model = NULL, *key_env = NULL, *family = NULL;
    char **endpoints = NULL;
    size_t n_endpoints = 0;
    arb_sampling sp = arb_sampling_default();
    if (jf.value[F_ENDPOINTS]) {
        if ((st = read_endpoints(L, judge_no, jf.value[F_ENDPOINTS], &endpoints, &n_endpoints)))
            goto fail;
        if (!(url = arb__strdup(endpoints[0]))) {
            st = out_of_memory(L);
            goto fail;
        }
    } else if ((st = read_text(L, judge_no, F_URL, jf.value[F_URL], 0, &url))) {
        goto fail;
    }
    const char *problem = arb__url_problem(url);
    if (problem) { /* the value is not shown: it may hold credentials */
        st = fail_at(L, jf.value[F_URL], judge_no, field_names[F_URL],
                     "expected an http:// or https:// URL with a host and a port from 1 to "
                     "65535; the URL %s", problem);
        goto fail;
    }
    if ((st = read_text(L, judge_no, F_MODEL, jf.value[F_MODEL], 1, &model))) goto fail;
    if (jf.value[F_NAME] && (st = read_text(L, judge_no, F_NAME, jf.value[F_NAME], 1, &name)))
        goto fail;
    if (!name && !(name = arb__strdup(model))) {
        st = out_of_memory(L);
        goto fail;
    }
    if (jf.value[F_API_KEY_ENV]) {
        if ((st = read_text(L, judge_no, F_API_KEY_ENV, jf.value[F_API_KEY_ENV], 0, &key_env)))
            goto fail;
        if (!env_name_ok(key_env)) {
            memset(key_env, 0, strlen(key_env)); /* it may be a key pasted by mistake */
            st = fail_at(L, jf.value[F_API_KEY_ENV], judge_no, field_names[F_API_KEY_ENV],
                         "expected the name of an environment variable (letters, digits and _, "
                         "e.g. OPENAI_API_KEY), not the key itself (value not shown)");
            goto fail;
        }
    }
    if (jf.value[F_CONTESTANT] &&
        (st = read_text(L, judge_no, F_CONTESTANT, jf.value[F_CONTESTANT], 1, contestant)))
        goto fail;
    if (jf.value[F_FAMILY] &&
        (st = read_text(L, judge_no, F_FAMILY, jf.value[F_FAMILY], 1, &family)))
        goto fail;
    /* Ranges as accepted by `arbiter sbs` (METHODS §2.6). */
    if (jf.value[F_TEMPERATURE] &&
        (st = read_number(L, judge_no, F_TEMPERATURE, jf.value[F_TEMPERATURE], 0, 10, 0,
                          &sp.temperature)))
        goto fail;
    if (jf.value[F_TOP_P] &&
        (st = read_number(L, judge_no, F_TOP_P, jf.value[F_TOP_P], 0, 1, 0, &sp.top_p)))
        goto fail;
    if (jf.value[F_FREQUENCY_PENALTY] &&
        (st = read_number(L, judge_no, F_FREQUENCY_PENALTY, jf.value[F_FREQUENCY_PENALTY], -2, 2,
                          0, &sp.frequency_penalty)))
        goto fail;
    double x;
    if (jf.value[F_MAX_TOKENS]) {
        if ((st = read_number(L, judge_no, F_MAX_TOKENS, jf.value[F_MAX_TOKENS], 1, 10000000, 1,
                              &x)))
            goto fail;
        sp.max_tokens = isnan(x) ? 0 : (int)x;
    }
    if (jf.value[F_SEED]) {
        if ((st = read_number(L, judge_no, F_SEED, jf.value[F_SEED], 0, 2147483647.0, 1, &x)))
            goto fail;
        sp.has_seed = !isnan(x);
        sp.seed = isnan(x) ? 0 : (long long)x;
    }
    if (jf.value[F_PRICE] && (st = read_price(L, judge_no, jf.value[F_PRICE], &cfg->price)))
        goto fail;
    if (jf.value[F_MAX_COMPLETION_TOKENS]) {
        if ((st = read_number(L, judge_no, F_MAX_COMPLETION_TOKENS,
                              jf.value[F_MAX_COMPLETION_TOKENS], 1, 10000000, 1, &x)))
            goto fail;
        sp.max_completion_tokens = isnan(x) ? 0 : (int)x;
    }
    if (jf.value[F_REASONING_EFFORT] &&
        (st = read_effort(L, judge_no, jf.value[F_REASONING_EFFORT], &sp.reasoning_effort)))
        goto fail;
    if (jf.value[F_RESPONSE_FORMAT] &&
        (st = read_bool(L, judge_no, F_RESPONSE_FORMAT, jf.value[F_RESPONSE_FORMAT],
                        &cfg->response_format)))
        goto fail;
    if (jf.value[F_LOGPROBS] &&
        (st = read_bool(L, judge_no, F_LOGPROBS, jf.value[F_LOGPROBS], &cfg->logprobs)))
        goto fail;
    if (jf.value[F_TOP_LOGPROBS]) { /* OpenAI: 0..20, and only with logprobs: true */
        if ((st = read_number(L, judge_no, F_TOP_LOGPROBS, jf.value[F_TOP_LOGPROBS], 0, 20, 1, &x)))
            goto fail;
        cfg->top_logprobs = isnan(x) ? 0 : (int)x;
        if (cfg->top_logprobs > 0 && !cfg->logprobs) {
            st = fail_at(L, jf.value[F_TOP_LOGPROBS], judge_no, field_names[F_TOP_LOGPROBS],
                         "needs \"logprobs: true\" in the same judge");
            goto fail;
        }
    }
    if (jf.value[F_MAX_IN_FLIGHT]) {
        if ((st = read_number(L, judge_no, F_MAX_IN_FLIGHT, jf.value[F_MAX_IN_FLIGHT], 1, 1000000,
                              1, &x)))
            goto fail;
        cfg->max_in_flight = isnan(x) ? 0 : (int)x;
    }
    if (sp.reasoning_effort || sp.max_completion_tokens > 0) {
        /* A reasoning model: the defaults it would refuse are not sent (given ones are). */
        if (!jf.value[F_TEMPERATURE]) sp.temperature = NAN;
        if (!jf.value[F_TOP_P]) sp.top_p = NAN;
        if (!jf.value[F_FREQUENCY_PENALTY]) sp.frequency_penalty = NAN;
        if (!jf.value[F_MAX_TOKENS]) sp.max_tokens = 0;
    }
    cfg->name = name;
    cfg->base_url = url;
    cfg->model = model;
    cfg->api_key_env = key_env;
    cfg->sampling = sp;
    cfg->family = family;
    cfg->endpoints = (const char *const *)endpoints;
    cfg->n_endpoints = n_endpoints;
    return ARB_OK;
fail:
    free_endpoints(endpoints, n_endpoints);
    free(family);
    free(name);
    free(url);
    free(model);
    free(key_env);
    free(*contestant);
    *contestant = NULL;
    return st;
}

/* ---- the file ------------------------------------------------------------------------------ */

void arb_judges_file_destroy(arb_judges_file *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->n; i++) {
        free_config(&f->judges[i]);
        free(f->contestants[i]);
    }
    for (size_t i = 0; i < f->n_families; i++) {
        free(f->family_models[i]);
        free(f->family_names[i]);
    }
    free(f->family_models);
    free(f->family_names);
    free(f->judges);
    free(f->contestants);
    free(f->path);
    free(f);
}

/* A scalar usable as a name or a family: a non-empty string (numbers count as their text),
** not null or a boolean, without NUL bytes. */
static int name_scalar_ok(const yaml_node_t *v)
{
    return v && v->type == YAML_SCALAR_NODE && classify(v) != K_NULL && classify(v) != K_BOOL &&
           v->data.scalar.length && strlen(scalar_text(v)) == v->data.scalar.length;
}

/* Reads the top-level families: map (contestant model name -> family, METHODS §5) into f:
** a non-empty mapping of non-empty strings, each model once. */
static arb_status read_families(loader *L, const yaml_node_t *map, arb_judges_file *f)
{
    char got[160], model[96];
    if (map->type != YAML_MAPPING_NODE ||
        map->data.mapping.pairs.top == map->data.mapping.pairs.start) {
        if (map->type == YAML_MAPPING_NODE) snprintf(got, sizeof got, "an empty mapping");
        else describe(got, sizeof got, map, 1);
        return fail_at(L, map, 0, "families",
                       "expected a mapping of contestant model names to families "
                       "(e.g. gpt-4o: gpt), got %s", got);
    }
    size_t n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
    f->family_models = calloc(n, sizeof *f->family_models);
    f->family_names = calloc(n, sizeof *f->family_names);
    if (!f->family_models || !f->family_names) return out_of_memory(L);
    const yaml_node_t **keys = calloc(n, sizeof *keys);
    if (!keys) return out_of_memory(L);
    arb_status st = ARB_OK;
    for (size_t i = 0; i < n && !st; i++) {
        const yaml_node_pair_t *p = &map->data.mapping.pairs.start[i];
        const yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
        const yaml_node_t *v = yaml_document_get_node(L->doc, p->value);
        if (!k || !v) {
            st = fail_at(L, map, 0, "families", "malformed mapping");
            break;
        }
        if (!name_scalar_ok(k)) {
            describe(got, sizeof got, k, 1);
            st = fail_at(L, k, 0, "families", "expected a contestant model name, got %s", got);
            break;
        }
        arb__excerpt(model, sizeof model, scalar_text(k), k->data.scalar.length);
        for (size_t j = 0; j < i && !st; j++)
            if (!strcmp(scalar_text(keys[j]), scalar_text(k)))
                st = fail_at(L, k, 0, "families", "model %s given twice (first at line %lu)",
                             model, (unsigned long)keys[j]->start_mark.line + 1);
        if (st) break;
        keys[i] = k;
        if (!name_scalar_ok(v)) {
            describe(got, sizeof got, v, 1);
            st = fail_at(L, v, 0, "families",
                         "model %s: expected a non-empty string (its family), got %s", model,
                         got);
            break;
        }
        f->family_models[i] = arb__strdup(scalar_text(k));
        f->family_names[i] = arb__strdup(scalar_text(v));
        f->n_families = i + 1;
        if (!f->family_models[i] || !f->family_names[i]) st = out_of_memory(L);
    }
    free(keys);
    return st;
}

/* Reads the judges list (and the families: map) of the loaded document into f. */
static arb_status read_document(loader *L, arb_judges_file *f)
{
    char got[160];
    const yaml_node_t *root = yaml_document_get_root_node(L->doc);
    if (!root)
        return fail_at(L, NULL, 0, NULL, "no judges (expected \"judges:\" with a list of judges)");
    if (root->type != YAML_MAPPING_NODE) {
        describe(got, sizeof got, root, 1);
        return fail_at(L, root, 0, NULL, "expected a mapping with a \"judges\" list, got %s", got);
    }
    const yaml_node_t *list = NULL, *list_key = NULL, *families = NULL, *families_key = NULL;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp(scalar_text(k), "families")) {
            if (families)
                return fail_at(L, k, 0, "families", "given twice (first at line %lu)",
                               (unsigned long)families_key->start_mark.line + 1);
            families_key = k;
            families = yaml_document_get_node(L->doc, p->value);
            if (!families) return fail_at(L, k, 0, "families", "malformed mapping");
            continue;
        }
        if (!k || k->type != YAML_SCALAR_NODE || strcmp(scalar_text(k), "judges")) {
            if (k && k->type == YAML_SCALAR_NODE)
                arb__excerpt(got, sizeof got, scalar_text(k), k->data.scalar.length);
            else
                describe(got, sizeof got, k, 1);
            return fail_at(L, k ? k : root, 0, NULL,
                           "unknown top-level field %s; expected \"judges\" or \"families\"",
                           got);
        }
        if (list)
            return fail_at(L, k, 0, "judges", "given twice (first at line %lu)",
                           (unsigned long)list_key->start_mark.line + 1);
        list_key = k;
        list = yaml_document_get_node(L->doc, p->value);
    }
    if (!list)
        return fail_at(L, root, 0, "judges", "missing; expected a list of judges");
    if (families) {
        arb_status st = read_families(L, families, f);
        if (st) return st;
    }
    if (list->type != YAML_SEQUENCE_NODE || list->data.sequence.items.top ==
                                                list->data.sequence.items.start) {
        if (list->type == YAML_SEQUENCE_NODE) snprintf(got, sizeof got, "an empty list");
        else describe(got, sizeof got, list, 1);
        return fail_at(L, list, 0, "judges", "expected a list of at least one judge, got %s",
                       got);
    }
    size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
    f->judges = calloc(n, sizeof *f->judges);
    f->contestants = calloc(n, sizeof *f->contestants);
    if (!f->judges || !f->contestants) return out_of_memory(L);
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *node = yaml_document_get_node(L->doc,
                                                         list->data.sequence.items.start[i]);
        if (!node) return fail_at(L, list, i + 1, NULL, "malformed list");
        arb_status st = read_judge(L, node, i + 1, &f->judges[i], &f->contestants[i]);
        if (st) return st;
        f->n = i + 1;
        /* One name, one configuration: rows are stored under the name (store.c). */
        for (size_t j = 0; j < i; j++) {
            if (strcmp(f->judges[j].name, f->judges[i].name)) continue;
            const yaml_node_t *at = NULL;
            for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
                 p < node->data.mapping.pairs.top; p++) {
                const yaml_node_t *k = yaml_document_get_node(L->doc, p->key);
                if (!strcmp(scalar_text(k), "name")) at = yaml_document_get_node(L->doc, p->value);
            }
            arb__excerpt(got, sizeof got, f->judges[i].name, strlen(f->judges[i].name));
            return fail_at(L, at ? at : node, i + 1, "name",
                           "expected a name of its own, got %s, the name of judge %zu%s", got,
                           j + 1, at ? "" : " (the name defaults to the model: add a name)");
        }
    }
    return ARB_OK;
}

/* The judges file's reading of the loaded document (arb__yaml_read_one's callback). */
static arb_status read_judges_document(void *ud, const char *path, void *doc, char **errmsg)
{
    loader L = {.path = path, .doc = doc};
    arb_status st = read_document(&L, ud);
    *errmsg = L.errmsg;
    return st;
}

/* See internal.h. */
arb_status arb__yaml_read_one(const char *path, const char *text, size_t len, const char *what,
                              arb__yaml_doc_fn fn, void *ud, char **errmsg)
{
    *errmsg = NULL;
    loader L = {.path = path};
    yaml_parser_t parser;
    yaml_document_t doc, extra;
    int have_doc = 0, have_parser = 0;
    arb_status st = ARB_OK;
    if (!yaml_parser_initialize(&parser)) {
        st = out_of_memory(&L);
        goto done;
    }
    have_parser = 1;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) goto syntax;
    have_doc = 1;
    if ((st = fn(ud, path, &doc, &L.errmsg))) goto done;
    /* A second document would be ignored silently: refuse it. */
    if (!yaml_parser_load(&parser, &extra)) goto syntax;
    int more = yaml_document_get_root_node(&extra) != NULL;
    yaml_mark_t mark = extra.start_mark;
    yaml_document_delete(&extra);
    if (more) {
        yaml_node_t at = {.start_mark = mark};
        st = fail_at(&L, &at, 0, NULL, "a second YAML document; %s holds one", what);
    }
    goto done;
syntax:
    if (parser.error == YAML_MEMORY_ERROR) {
        st = out_of_memory(&L);
    } else {
        yaml_node_t at = {.start_mark = parser.problem_mark};
        st = fail_at(&L, &at, 0, NULL, "YAML: %s%s%s", parser.problem ? parser.problem : "error",
                     parser.context ? " " : "", parser.context ? parser.context : "");
    }
done:
    if (have_doc) yaml_document_delete(&doc);
    if (have_parser) yaml_parser_delete(&parser);
    if (!L.errmsg && st == ARB_NOMEM) L.errmsg = arb__strdup("out of memory");
    *errmsg = L.errmsg;
    return st;
}

arb_status arb_judges_file_load(const char *path, arb_judges_file **out, char **errmsg)
{
    if (errmsg) *errmsg = NULL;
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!path) {
        if (errmsg) *errmsg = arb__strdup("no judges file given");
        return ARB_INVALID;
    }
    size_t len = 0;
    char *read_err = NULL;
    char *text = arb__read_file(path, &len, &read_err);
    if (!text) {
        if (errmsg) *errmsg = read_err;
        else free(read_err);
        return ARB_IO;
    }
    char *msg = NULL;
    arb_status st;
    arb_judges_file *f = calloc(1, sizeof *f);
    if (!f) {
        st = ARB_NOMEM;
        msg = arb__strdup("out of memory");
    } else {
        st = arb__yaml_read_one(path, text, len, "a judges file", read_judges_document, f, &msg);
    }
    memset(text, 0, len); /* a key pasted into the file by mistake should not linger */
    free(text);
    if (st) {
        arb_judges_file_destroy(f);
        if (errmsg) *errmsg = msg;
        else free(msg);
        return st;
    }
    free(msg);
    if (!(f->path = arb__strdup(path))) {
        arb_judges_file_destroy(f);
        if (errmsg) *errmsg = arb__strdup("out of memory");
        return ARB_NOMEM;
    }
    for (size_t i = 0; i < f->n; i++) f->judges[i].judges_file = f;
    *out = f;
    return ARB_OK;
}

size_t arb_judges_file_count(const arb_judges_file *f) { return f ? f->n : 0; }

const arb_judge_config *arb_judges_file_judge(const arb_judges_file *f, size_t index)
{
    return f && index < f->n ? &f->judges[index] : NULL;
}

const char *arb_judges_file_contestant(const arb_judges_file *f, size_t index)
{
    return f && index < f->n ? f->contestants[index] : NULL;
}

const char *arb_judges_file_path(const arb_judges_file *f) { return f ? f->path : NULL; }

size_t arb_judges_file_family_count(const arb_judges_file *f) { return f ? f->n_families : 0; }

const char *arb_judges_file_family(const arb_judges_file *f, size_t index, const char **model)
{
    if (model) *model = NULL;
    if (!f || index >= f->n_families) return NULL;
    if (model) *model = f->family_models[index];
    return f->family_names[index];
}
