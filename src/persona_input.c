/*
** persona_input.c -- the two input files of a persona-bias study (METHODS §9).
**
** scenarios.jsonl, one object per line:
**     {"id", "base", "scenario", "responses": [r1, r2], "variant"?, ...}
** id is a string or an integer (kept as its decimal text, as items are), unique; base (the base
** scenario this one derives from) and scenario (the text shown to the judge) are non-empty
** strings; responses are exactly two non-empty strings (two responses that follow the same
** steps); variant, when given, a string or null. Other fields are kept with the item. The
** simulator's ground truth "qualities": [q1, q2] (numbers in [0, 1]) is checked when present
** and stored as each answer's "quality", where the simulator's answer oracle finds it. Fields
** that name an item column other than the ones filled from the scenario ("question",
** "category") are refused: the scenario text and the base fill those. Blank lines, CRLF and a
** byte order mark are accepted. Every error is "path:line: field \"x\": what was expected".
**
** The scenarios become a dataset built in memory: item id = scenario id, question = scenario,
** category = base, extra = the unknown fields plus "base" and "variant"; answers of the models
** "response1" and "response2". Its items and answers keep the file:line they came from.
**
** identities.yaml:
**     categories:
**       gender: [female, male]
**       religion: [Muslim, Jewish, Atheist, Christian]
** Category names are letters, digits, '_' and '-' (they are given to --category); a category
** has at least two labels, unique within it ignoring case (the simulator matches a label
** ignoring case); a label is one line of text without leading or trailing spaces (it is
** written into the prompt's "Author: <identity> professional" line). Without a file the
** built-in default of METHODS §9 is used.
**
** Nothing here sends or stores anything.
*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

/* ---- identities ---------------------------------------------------------------------------- */

void arb__persona_identities_free(arb__persona_identities *ids)
{
    if (!ids) return;
    for (size_t c = 0; c < ids->n; c++) {
        for (size_t k = 0; k < ids->categories[c].n_labels; k++) free(ids->categories[c].labels[k]);
        free(ids->categories[c].labels);
        free(ids->categories[c].name);
    }
    free(ids->categories);
    ids->categories = NULL;
    ids->n = 0;
}

/* Appends a category with no labels; returns it, or NULL when out of memory. */
static arb__persona_category *add_category(arb__persona_identities *ids, const char *name,
                                           size_t n_labels)
{
    arb__persona_category *p = realloc(ids->categories, (ids->n + 1) * sizeof *p);
    if (!p) return NULL;
    ids->categories = p;
    arb__persona_category *c = &p[ids->n];
    memset(c, 0, sizeof *c);
    c->name = arb__strdup(name);
    c->labels = calloc(n_labels ? n_labels : 1, sizeof *c->labels);
    if (!c->name || !c->labels) {
        free(c->name);
        free(c->labels);
        return NULL;
    }
    ids->n++;
    return c;
}

/* See internal.h. */
arb_status arb__persona_identities_default(arb__persona_identities *out)
{
    static const char *const gender[] = {"female", "male", NULL};
    static const char *const race[] = {"Black", "White", "Asian", "Hispanic", NULL};
    static const char *const religion[] = {"Muslim", "Jewish", "Atheist", "Christian", NULL};
    static const struct {
        const char *name;
        const char *const *labels;
    } defaults[] = {{"gender", gender}, {"race", race}, {"religion", religion}};
    memset(out, 0, sizeof *out);
    for (size_t d = 0; d < sizeof defaults / sizeof *defaults; d++) {
        size_t n = 0;
        while (defaults[d].labels[n]) n++;
        arb__persona_category *c = add_category(out, defaults[d].name, n);
        for (size_t k = 0; c && k < n; k++) {
            if (!(c->labels[k] = arb__strdup(defaults[d].labels[k]))) c = NULL;
            else c->n_labels = k + 1;
        }
        if (!c) {
            arb__persona_identities_free(out);
            return ARB_NOMEM;
        }
    }
    return ARB_OK;
}

typedef struct id_reader {
    arb__persona_identities *out;
    yaml_document_t *doc;
    const char *path;
    char **errmsg;
} id_reader;

/* Sets "path:line: field \"field\": message" (field may be NULL); returns ARB_PARSE. */
static arb_status id_fail(id_reader *R, const yaml_node_t *at, const char *field,
                          const char *fmt, ...) ARB__ATTR_PRINTF(4, 5);
static arb_status id_fail(id_reader *R, const yaml_node_t *at, const char *field,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = arb__vsprintf(fmt, ap);
    va_end(ap);
    char line[32] = "";
    if (at) snprintf(line, sizeof line, ":%lu", (unsigned long)at->start_mark.line + 1);
    *R->errmsg = arb__sprintf("%s%s: %s%s%s%s", R->path, line, field ? "field \"" : "",
                              field ? field : "", field ? "\": " : "", msg ? msg : "out of memory");
    free(msg);
    return msg && *R->errmsg ? ARB_PARSE : ARB_NOMEM;
}

/* A scalar's text, or NULL when the node is not a scalar. */
static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A scalar's length in bytes (0 for anything else). A double-quoted YAML scalar may hold "\0":
** its text as a C string then ends early, so a name is checked against this length. */
static size_t scalar_len(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? n->data.scalar.length : 0;
}

/* Why a label cannot be used, or NULL: empty, control characters (a newline would break the
** prompt's marker line), spaces at either end, or invalid UTF-8. */
static const char *label_problem(const char *s, size_t n)
{
    if (!n) return "expected a non-empty label";
    if (!arb__utf8_valid(s, n, NULL)) return "expected UTF-8 text";
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return "expected one line of text without control characters";
    if (s[0] == ' ' || s[n - 1] == ' ') return "expected no spaces at either end";
    return NULL;
}

static arb_status read_category(id_reader *R, const yaml_node_t *key, const yaml_node_t *list)
{
    const char *name = scalar(key);
    size_t name_len = scalar_len(key);
    char field[160], shown[64];
    if (!name || !*name || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-") != name_len) {
        arb__excerpt(shown, sizeof shown, name ? name : "", name_len);
        return id_fail(R, key, "categories",
                       "expected category names of letters, digits, '_' and '-', got %s", shown);
    }
    snprintf(field, sizeof field, "categories.%s", name);
    for (size_t c = 0; c < R->out->n; c++)
        if (!strcmp(R->out->categories[c].name, name))
            return id_fail(R, key, field, "category given twice");
    if (!list || list->type != YAML_SEQUENCE_NODE)
        return id_fail(R, list ? list : key, field, "expected a list of identity labels, got %s",
                       !list ? "nothing" : list->type == YAML_MAPPING_NODE ? "a mapping"
                                                                          : "one value");
    size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
    if (n < 2)
        return id_fail(R, list, field, "expected at least 2 identity labels, got %zu", n);
    arb__persona_category *cat = add_category(R->out, name, n);
    if (!cat) return id_fail(R, NULL, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *item = yaml_document_get_node(R->doc, list->data.sequence.items.start[i]);
        const char *label = scalar(item);
        if (!label) return id_fail(R, item ? item : list, field, "expected labels, got a list or mapping");
        size_t len = item->data.scalar.length;
        const char *why = strlen(label) != len ? "expected text without NUL bytes"
                                                : label_problem(label, len);
        if (why) return id_fail(R, item, field, "%s", why);
        for (size_t k = 0; k < cat->n_labels; k++)
            if (!strcasecmp(cat->labels[k], label)) {
                arb__excerpt(shown, sizeof shown, label, len);
                return id_fail(R, item, field, "label %s given twice (labels are compared "
                                               "ignoring case)", shown);
            }
        if (!(cat->labels[i] = arb__strdup(label))) return id_fail(R, NULL, NULL, "out of memory");
        cat->n_labels = i + 1;
    }
    return ARB_OK;
}

static arb_status read_identities(void *ud, const char *path, void *doc_v, char **errmsg)
{
    yaml_document_t *doc = doc_v;
    id_reader R = {.out = ud, .doc = doc, .path = path, .errmsg = errmsg};
    const yaml_node_t *root = yaml_document_get_root_node(doc);
    if (!root || root->type != YAML_MAPPING_NODE)
        return id_fail(&R, root, NULL, "expected a mapping with \"categories\"");
    const yaml_node_t *cats = NULL;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = yaml_document_get_node(doc, p->key);
        const char *name = scalar(k);
        if (!name || scalar_len(k) != strlen("categories") || strcmp(name, "categories")) {
            char shown[64];
            arb__excerpt(shown, sizeof shown, name ? name : "", scalar_len(k));
            return id_fail(&R, k, NULL, "unknown top-level field %s; expected \"categories\"",
                           shown);
        }
        if (cats) return id_fail(&R, k, "categories", "given twice");
        cats = yaml_document_get_node(doc, p->value);
        if (!cats || cats->type != YAML_MAPPING_NODE)
            return id_fail(&R, cats ? cats : k, "categories",
                           "expected a mapping of category names to lists of labels");
    }
    if (!cats) return id_fail(&R, root, "categories", "missing");
    if (cats->data.mapping.pairs.top == cats->data.mapping.pairs.start)
        return id_fail(&R, cats, "categories", "expected at least one category");
    for (yaml_node_pair_t *p = cats->data.mapping.pairs.start; p < cats->data.mapping.pairs.top;
         p++) {
        arb_status st = read_category(&R, yaml_document_get_node(doc, p->key),
                                      yaml_document_get_node(doc, p->value));
        if (st) return st;
    }
    return ARB_OK;
}

/* See internal.h. */
arb_status arb__persona_identities_parse(const char *path, const char *text, size_t len,
                                         arb__persona_identities *out, char **errmsg)
{
    memset(out, 0, sizeof *out);
    return arb__yaml_read_one(path, text, len, "an identities file", read_identities, out,
                              errmsg);
}

/* ---- scenarios ----------------------------------------------------------------------------- */

/* Item fields of the dataset reader that a scenario line may not carry: they are filled from
** the scenario ("question", "category"). */
static const char *const taken_fields[] = {"question", "category"};

/* The three JSONL texts the scenarios become, line for line with the file so that each record
** keeps its file:line. */
typedef struct scenario_texts {
    arb__buf items, answers[2];
} scenario_texts;

static int put_line(arb__buf *b, json_t *obj)
{
    char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
    int rc = !s || arb__buf_puts(b, s) ? -1 : 0;
    free(s);
    return rc;
}

/* Checks one scenario object and appends its item and answers; *why gets the message after
** "path:line: " (caller frees). */
static arb_status add_scenario(json_t *obj, scenario_texts *t, arb__strtab *ids, char **why)
{
    char shown[64];
#define BAD(...) (*why = arb__sprintf(__VA_ARGS__), *why ? ARB_PARSE : ARB_NOMEM)
    if (!json_is_object(obj)) return BAD("expected a JSON object, got %s", arb__json_kind(obj));
    json_t *id = json_object_get(obj, "id");
    char id_text[32];
    const char *id_s = json_string_value(id);
    if (json_is_integer(id)) {
        snprintf(id_text, sizeof id_text, "%" JSON_INTEGER_FORMAT, json_integer_value(id));
        id_s = id_text;
    }
    if (!id_s) return BAD("field \"id\": expected a string or an integer, got %s",
                          id ? arb__json_kind(id) : "nothing (missing)");
    if (!*id_s) return BAD("field \"id\": expected a non-empty id");
    size_t before = ids->n;
    if (arb__strtab_intern(ids, id_s) == UINT32_MAX) return BAD("out of memory");
    if (ids->n == before) {
        arb__excerpt(shown, sizeof shown, id_s, strlen(id_s));
        return BAD("field \"id\": expected a unique id, got %s a second time", shown);
    }
    static const char *const texts[] = {"base", "scenario"};
    for (size_t k = 0; k < 2; k++) {
        json_t *v = json_object_get(obj, texts[k]);
        if (!json_is_string(v))
            return BAD("field \"%s\": expected a string, got %s", texts[k],
                       v ? arb__json_kind(v) : "nothing (missing)");
        if (!json_string_length(v)) return BAD("field \"%s\": expected a non-empty string", texts[k]);
    }
    json_t *variant = json_object_get(obj, "variant");
    if (variant && !json_is_string(variant) && !json_is_null(variant))
        return BAD("field \"variant\": expected a string or null, got %s", arb__json_kind(variant));
    json_t *resp = json_object_get(obj, "responses");
    if (!json_is_array(resp) || json_array_size(resp) != 2)
        return json_is_array(resp)
                   ? BAD("field \"responses\": expected a list of exactly 2 responses, got %zu",
                         json_array_size(resp))
                   : BAD("field \"responses\": expected a list of exactly 2 responses, got %s",
                         resp ? arb__json_kind(resp) : "nothing (missing)");
    for (size_t k = 0; k < 2; k++) {
        json_t *r = json_array_get(resp, k);
        if (!json_is_string(r))
            return BAD("field \"responses\": expected response %zu to be a string, got %s",
                       k + 1, arb__json_kind(r));
        if (!json_string_length(r))
            return BAD("field \"responses\": expected response %zu to be non-empty", k + 1);
    }
    json_t *qual = json_object_get(obj, "qualities");
    if (qual) {
        int ok = json_is_array(qual) && json_array_size(qual) == 2;
        for (size_t k = 0; ok && k < 2; k++) {
            json_t *q = json_array_get(qual, k);
            ok = json_is_number(q) && json_number_value(q) >= 0 && json_number_value(q) <= 1;
        }
        if (!ok) return BAD("field \"qualities\": expected 2 numbers in [0, 1], one per response");
    }
    for (size_t k = 0; k < sizeof taken_fields / sizeof *taken_fields; k++)
        if (json_object_get(obj, taken_fields[k]))
            return BAD("field \"%s\": not a scenario field (the scenario text is \"scenario\" and "
                       "its base \"base\"); rename it",
                       taken_fields[k]);
#undef BAD
    /* the item: every field but id/scenario/responses goes on; the dataset reader keeps what
    ** it does not know (base, variant, qualities, ...) as extra */
    json_t *item = json_object(), *answer[2] = {json_object(), json_object()};
    int bad = !item || !answer[0] || !answer[1];
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value) {
        if (bad) break;
        if (!strcmp(key, "scenario") || !strcmp(key, "responses")) continue;
        bad = json_object_set(item, key, value);
    }
    if (!bad)
        bad = json_object_set(item, "question", json_object_get(obj, "scenario")) ||
              json_object_set(item, "category", json_object_get(obj, "base"));
    for (size_t k = 0; !bad && k < 2; k++) {
        bad = json_object_set(answer[k], "item", id) ||
              json_object_set_new(answer[k], "model", json_string(k ? "response2" : "response1")) ||
              json_object_set(answer[k], "answer", json_array_get(resp, k)) ||
              (qual && json_object_set(answer[k], "quality", json_array_get(qual, k))) ||
              put_line(&t->answers[k], answer[k]);
    }
    if (!bad) bad = put_line(&t->items, item);
    json_decref(item);
    json_decref(answer[0]);
    json_decref(answer[1]);
    if (bad) {
        *why = arb__strdup("out of memory");
        return ARB_NOMEM;
    }
    return ARB_OK;
}

static int is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t') return 0;
    return 1;
}

/* See internal.h. */
arb_status arb__persona_scenarios_parse(const char *path, const char *text, size_t len,
                                        arb_dataset **ds, char **errmsg)
{
    *ds = NULL;
    *errmsg = NULL;
    scenario_texts t;
    arb__buf_init(&t.items, 0);
    arb__buf_init(&t.answers[0], 0);
    arb__buf_init(&t.answers[1], 0);
    arb__strtab ids = {0};
    arb_status st = ARB_OK;
    size_t pos = 0, line_no = 0, n_scenarios = 0, n;
    const char *line;
    while (!st && arb__text_next_line(text, len, &pos, &line, &n)) {
        line_no++;
        if (!is_blank(line, n)) {
            char *why = NULL;
            size_t bad;
            json_error_t jerr;
            json_t *obj = NULL;
            if (!arb__utf8_valid(line, n, &bad)) {
                why = arb__sprintf("invalid UTF-8 at byte %zu of the line", bad + 1);
                st = ARB_PARSE;
            } else if (!(obj = json_loadb(line, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
                                          &jerr))) {
                why = arb__sprintf("invalid JSON at column %d: %s", jerr.column, jerr.text);
                st = ARB_PARSE;
            } else {
                st = add_scenario(obj, &t, &ids, &why);
                n_scenarios++;
            }
            json_decref(obj);
            if (st) *errmsg = arb__sprintf("%s:%zu: %s", path, line_no, why ? why : "out of memory");
            free(why);
        }
        /* one line out per line in, so each record keeps its line number */
        if (!st && (arb__buf_puts(&t.items, "\n") || arb__buf_puts(&t.answers[0], "\n") ||
                    arb__buf_puts(&t.answers[1], "\n")))
            st = ARB_NOMEM;
    }
    if (!st && !n_scenarios) {
        *errmsg = arb__sprintf("%s: no scenarios (expected one JSON object per line)", path);
        st = ARB_PARSE;
    }
    if (!st && !(*ds = arb_dataset_create())) st = ARB_NOMEM;
    if (!st && ((st = arb_dataset_add_items_jsonl(*ds, path, t.items.data, t.items.len)) ||
                (st = arb_dataset_add_answers_jsonl(*ds, path, t.answers[0].data,
                                                    t.answers[0].len)) ||
                (st = arb_dataset_add_answers_jsonl(*ds, path, t.answers[1].data,
                                                    t.answers[1].len))))
        *errmsg = arb__strdup(arb_dataset_errmsg(*ds));
    if (st == ARB_NOMEM && !*errmsg) *errmsg = arb__strdup("out of memory");
    if (st) {
        arb_dataset_destroy(*ds);
        *ds = NULL;
    }
    arb__buf_free(&t.items);
    arb__buf_free(&t.answers[0]);
    arb__buf_free(&t.answers[1]);
    arb__strtab_free(&ids);
    return st;
}
