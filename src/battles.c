/*
** battles.c -- battle sets (METHODS §6): reviewer r compared contestant i (shown first) with j
** on question q and said s = -1 (i better), 0 (tie) or +1 (j better). A set keeps its battles
** in order (online Elo depends on it) as columns of small integers: every string is interned
** once (arb__strtab), so a million battles over a few models cost a few bytes each. Also here:
** the arena-convention JSONL files (read and write) and the battles table of the store.
**
** Invariants:
**   - Every battle in a set has i != j, s in {-1, 0, 1}, both_bad only on a tie (s == 0),
**     strong only on a win (s != 0; Arena-Hard's A>>B, stored as extra "strong": true),
**     non-empty question and model names, and style covariates that are NAN or in
**     [0, FLT_MAX] (the style column is float: counts are exact up to 2^24).
**   - style is NULL until the first battle with a known style value arrives; it is then
**     allocated for the whole capacity and filled with NAN, so earlier battles read as unknown.
**   - Reading a file, importing and reading the store are all or nothing: the battles are
**     read into a scratch set and appended only when all of them are good, so on an error the
**     set is as it was (out of memory aside, when its string tables may keep unused names).
**
** Not here: the importers of other formats (import.c) and the rankings (rank.c, peer.c).
*/
#include "internal.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Floats per battle in the style array: i's covariates, then j's. */
#define STYLE_STRIDE (2 * ARB_STYLE__COUNT)

/* Our names of the style covariates: flat fields "<name>_a"/"<name>_b" in battle files and
** keys of style_i/style_j in the store's extra JSON. */
static const char *const style_names[ARB_STYLE__COUNT] = {"length", "headers", "lists", "bold"};

/* See internal.h. Style covariates of an answer (arb_battle): length in code points and the markdown counts
** of the arena's style control -- header lines (^#{1,6}\s), list items (^\s*[-*+]\s and
** ^\s*\d+\.\s) and bold spans (\*\*[^*\n]+\*\* and __[^_\n]+__, not overlapping). */
void arb__answer_style(const char *text, double style[ARB_STYLE__COUNT])
{
    size_t n = strlen(text);
    size_t headers = 0, lists = 0, bold = 0;
    for (size_t at = 0; at < n;) {
        const char *line = text + at;
        size_t len = strcspn(line, "\n");
        size_t h = 0;
        while (h < len && line[h] == '#') h++;
        if (h >= 1 && h <= 6 && h < len && (line[h] == ' ' || line[h] == '\t')) headers++;
        size_t i = strspn(line, " \t");
        if (i < len && strchr("-*+", line[i]) && i + 1 < len && (line[i + 1] == ' ' || line[i + 1] == '\t')) {
            lists++;
        } else {
            size_t d = i;
            while (d < len && line[d] >= '0' && line[d] <= '9') d++;
            if (d > i && d + 1 < len && line[d] == '.' && (line[d + 1] == ' ' || line[d + 1] == '\t'))
                lists++;
        }
        at += len + (at + len < n);
    }
    for (size_t i = 0; i + 1 < n;) {
        char m = text[i];
        if ((m == '*' || m == '_') && text[i + 1] == m) {
            size_t j = i + 2;
            while (j < n && text[j] != m && text[j] != '\n') j++;
            if (j > i + 2 && j + 1 < n && text[j] == m && text[j + 1] == m) {
                bold++;
                i = j + 2;
                continue;
            }
        }
        i++;
    }
    style[ARB_STYLE_LENGTH] = (double)arb__utf8_codepoints(text, n);
    style[ARB_STYLE_HEADERS] = (double)headers;
    style[ARB_STYLE_LISTS] = (double)lists;
    style[ARB_STYLE_BOLD] = (double)bold;
}

/* ---- the set --------------------------------------------------------------------------------- */

/* Returns a battle with NULL strings, s = 0, no both_bad, not strong and every style
** covariate NAN. */
arb_battle arb_battle_init(void)
{
    arb_battle battle;
    memset(&battle, 0, sizeof battle);
    for (int k = 0; k < ARB_STYLE__COUNT; k++) battle.style_i[k] = battle.style_j[k] = NAN;
    return battle;
}

/* Returns an empty set (caller destroys), or NULL when out of memory. */
arb_battles *arb_battles_create(void) { return calloc(1, sizeof(arb_battles)); }

/* Frees the set and its strings; NULL is fine. */
void arb_battles_destroy(arb_battles *b)
{
    if (!b) return;
    arb__strtab_free(&b->questions);
    arb__strtab_free(&b->models);
    arb__strtab_free(&b->reviewers);
    free(b->q);
    free(b->i);
    free(b->j);
    free(b->r);
    free(b->s);
    free(b->both_bad);
    free(b->strong);
    free(b->style);
    free(b->left_out);
    free(b->errmsg);
    free(b);
}

/* Returns the message of the set's last error, "" when there was none (owned by the set). */
const char *arb_battles_errmsg(const arb_battles *b)
{
    if (!b) return "no battle set (out of memory?)";
    return b->errmsg ? b->errmsg : "";
}

/* Sets b's message and returns code. */
arb_status arb__battles_fail(arb_battles *b, arb_status code, const char *fmt, ...)
{
    if (!b) return code;
    va_list ap;
    va_start(ap, fmt);
    char *msg = arb__vsprintf(fmt, ap);
    va_end(ap);
    free(b->errmsg);
    b->errmsg = msg; /* NULL when out of memory: the message is then "" */
    return code;
}

/* Returns the number of battles in the set (0 for NULL). */
size_t arb_battles_count(const arb_battles *b) { return b ? b->n : 0; }

/* Returns how many reviews importers left out because they had no verdict. */
size_t arb_battles_skipped(const arb_battles *b) { return b ? b->skipped : 0; }

/* Adds n judgments of reviewer on the pair {model_a, model_b} that had no valid verdict (E),
** to the record of that (reviewer, pair) -- the pair in name order -- or a new one. Borrowing
** only. ARB_INVALID (with a message) for a missing name or equal models, ARB_NOMEM. */
arb_status arb_battles_add_left_out(arb_battles *b, const char *model_a, const char *model_b,
                                    const char *reviewer, size_t n)
{
    if (!b) return ARB_INVALID;
    if (!model_a || !*model_a || !model_b || !*model_b || !reviewer)
        return arb__battles_fail(b, ARB_INVALID, "left out: a model or reviewer name is missing");
    if (!strcmp(model_a, model_b))
        return arb__battles_fail(b, ARB_INVALID, "left out: the two models are the same");
    if (strcmp(model_a, model_b) > 0) {
        const char *t = model_a;
        model_a = model_b;
        model_b = t;
    }
    uint32_t i = arb__strtab_intern(&b->models, model_a);
    uint32_t j = arb__strtab_intern(&b->models, model_b);
    uint32_t r = arb__strtab_intern(&b->reviewers, reviewer);
    if (i == UINT32_MAX || j == UINT32_MAX || r == UINT32_MAX)
        return arb__battles_fail(b, ARB_NOMEM, "out of memory");
    for (size_t k = 0; k < b->n_left_out; k++) {
        arb__battles_left_out *x = &b->left_out[k];
        if (x->i == i && x->j == j && x->r == r) {
            x->n += n;
            return ARB_OK;
        }
    }
    if (b->n_left_out == b->cap_left_out) {
        size_t cap = b->cap_left_out ? 2 * b->cap_left_out : 16;
        arb__battles_left_out *grown = realloc(b->left_out, cap * sizeof *grown);
        if (!grown) return arb__battles_fail(b, ARB_NOMEM, "out of memory");
        b->left_out = grown;
        b->cap_left_out = cap;
    }
    b->left_out[b->n_left_out++] = (arb__battles_left_out){i, j, r, n};
    return ARB_OK;
}

/* Returns the number of (reviewer, pair) records of judgments left out (0 for NULL). */
size_t arb_battles_left_out_count(const arb_battles *b) { return b ? b->n_left_out : 0; }

/* Returns record index as views into the set's strings (valid until the set changes); all
** NULL and 0 out of range. */
arb_battle_left_out arb_battles_left_out_at(const arb_battles *b, size_t index)
{
    arb_battle_left_out out = {NULL, NULL, NULL, 0};
    if (!b || index >= b->n_left_out) return out;
    const arb__battles_left_out *x = &b->left_out[index];
    out.model_a = b->models.names[x->i];
    out.model_b = b->models.names[x->j];
    out.reviewer = b->reviewers.names[x->r];
    out.n = x->n;
    return out;
}

/* Grows one column to cap elements of size bytes. 0, or -1 (the column is left as it was). */
static int grow_column(void *pp, size_t cap, size_t size)
{
    void *p;
    memcpy(&p, pp, sizeof p);
    void *grown = realloc(p, cap * size);
    if (!grown) return -1;
    memcpy(pp, &grown, sizeof grown);
    return 0;
}

/* Makes room for one more battle. A column that grew before another failed is merely larger
** than cap, which is harmless. 0, or -1 when out of memory. */
static int reserve_one(arb_battles *b)
{
    if (b->n < b->cap) return 0;
    size_t cap = b->cap ? b->cap * 2 : 64;
    if (cap > SIZE_MAX / (STYLE_STRIDE * sizeof(float))) return -1;
    if (grow_column(&b->q, cap, sizeof *b->q) || grow_column(&b->i, cap, sizeof *b->i) ||
        grow_column(&b->j, cap, sizeof *b->j) || grow_column(&b->r, cap, sizeof *b->r) ||
        grow_column(&b->s, cap, sizeof *b->s) ||
        grow_column(&b->both_bad, cap, sizeof *b->both_bad) ||
        grow_column(&b->strong, cap, sizeof *b->strong))
        return -1;
    if (b->style) {
        if (grow_column(&b->style, cap, STYLE_STRIDE * sizeof *b->style)) return -1;
        for (size_t k = b->cap * STYLE_STRIDE; k < cap * STYLE_STRIDE; k++) b->style[k] = NAN;
    }
    b->cap = cap;
    return 0;
}

/* A style covariate is NAN (unknown) or a count >= 0 that a float holds (the column's type). */
static int style_ok(double x) { return isnan(x) || (x >= 0 && x <= FLT_MAX); }

/* Appends a copy of one battle (strings are interned; the caller keeps its own). ARB_INVALID
** with a message for a battle that breaks the invariants, ARB_NOMEM. */
arb_status arb_battles_add(arb_battles *b, const arb_battle *battle)
{
    if (!b) return ARB_INVALID;
    if (!battle) return arb__battles_fail(b, ARB_INVALID, "battles: no battle given");
    if (!battle->question || !*battle->question)
        return arb__battles_fail(b, ARB_INVALID, "battles: a battle needs a question id");
    if (!battle->model_i || !*battle->model_i || !battle->model_j || !*battle->model_j)
        return arb__battles_fail(b, ARB_INVALID, "battles: a battle needs two model names");
    if (!strcmp(battle->model_i, battle->model_j))
        return arb__battles_fail(b, ARB_INVALID,
                                 "battles: a model cannot battle itself (both are \"%s\")",
                                 battle->model_i);
    if (battle->s < -1 || battle->s > 1)
        return arb__battles_fail(b, ARB_INVALID,
                                 "battles: s must be -1 (i better), 0 (tie) or +1 (j better), "
                                 "got %d", battle->s);
    if (battle->both_bad && battle->s != 0)
        return arb__battles_fail(b, ARB_INVALID,
                                 "battles: both_bad marks a tie, but s is %d", battle->s);
    if (battle->strong && battle->s == 0)
        return arb__battles_fail(b, ARB_INVALID,
                                 "battles: strong marks a win (A>>B), but s is 0 (a tie)");
    int any_style = 0;
    for (int k = 0; k < ARB_STYLE__COUNT; k++) {
        if (!style_ok(battle->style_i[k]) || !style_ok(battle->style_j[k]))
            return arb__battles_fail(b, ARB_INVALID,
                                     "battles: style \"%s\" must be unknown (NAN) or a number "
                                     "from 0 to 3.4e38, got %g / %g", style_names[k],
                                     battle->style_i[k], battle->style_j[k]);
        any_style |= !isnan(battle->style_i[k]) || !isnan(battle->style_j[k]);
    }
    if (reserve_one(b)) return arb__battles_fail(b, ARB_NOMEM, "battles: out of memory");
    if (any_style && !b->style) {
        b->style = malloc(b->cap * STYLE_STRIDE * sizeof *b->style);
        if (!b->style) return arb__battles_fail(b, ARB_NOMEM, "battles: out of memory");
        for (size_t k = 0; k < b->cap * STYLE_STRIDE; k++) b->style[k] = NAN;
    }
    uint32_t q = arb__strtab_intern(&b->questions, battle->question);
    uint32_t i = arb__strtab_intern(&b->models, battle->model_i);
    uint32_t j = arb__strtab_intern(&b->models, battle->model_j);
    uint32_t r = arb__strtab_intern(&b->reviewers, battle->reviewer ? battle->reviewer : "");
    if (q == UINT32_MAX || i == UINT32_MAX || j == UINT32_MAX || r == UINT32_MAX)
        return arb__battles_fail(b, ARB_NOMEM, "battles: out of memory");
    size_t n = b->n;
    b->q[n] = q;
    b->i[n] = i;
    b->j[n] = j;
    b->r[n] = r;
    b->s[n] = (int8_t)battle->s;
    b->both_bad[n] = battle->both_bad ? 1 : 0;
    b->strong[n] = battle->strong ? 1 : 0;
    if (b->style) {
        float *st = b->style + n * STYLE_STRIDE;
        for (int k = 0; k < ARB_STYLE__COUNT; k++) {
            st[k] = (float)battle->style_i[k];
            st[ARB_STYLE__COUNT + k] = (float)battle->style_j[k];
        }
    }
    b->n++;
    return ARB_OK;
}

/* Returns battle index with views into the set's strings, valid until the set changes; out of
** range (or a NULL set) gives arb_battle_init(), whose strings are NULL. */
arb_battle arb_battles_at(const arb_battles *b, size_t index)
{
    arb_battle battle = arb_battle_init();
    if (!b || index >= b->n) return battle;
    battle.question = b->questions.names[b->q[index]];
    battle.model_i = b->models.names[b->i[index]];
    battle.model_j = b->models.names[b->j[index]];
    battle.reviewer = b->reviewers.names[b->r[index]];
    battle.s = b->s[index];
    battle.both_bad = b->both_bad[index];
    battle.strong = b->strong[index];
    if (b->style) {
        const float *st = b->style + index * STYLE_STRIDE;
        for (int k = 0; k < ARB_STYLE__COUNT; k++) {
            battle.style_i[k] = st[k];
            battle.style_j[k] = st[ARB_STYLE__COUNT + k];
        }
    }
    return battle;
}

/* Appends all of src to dst (see internal.h). On failure dst gets back its count and, if it
** had none, its NULL style array. */
arb_status arb__battles_append(arb_battles *dst, const arb_battles *src)
{
    size_t n0 = dst->n;
    int had_style = dst->style != NULL;
    for (size_t k = 0; k < src->n; k++) {
        arb_battle battle = arb_battles_at(src, k);
        arb_status st = arb_battles_add(dst, &battle);
        if (st) {
            dst->n = n0;
            if (!had_style) {
                free(dst->style);
                dst->style = NULL;
            }
            return st;
        }
    }
    for (size_t k = 0; k < src->n_left_out; k++) {
        arb_battle_left_out x = arb_battles_left_out_at(src, k);
        arb_status st = arb_battles_add_left_out(dst, x.model_a, x.model_b, x.reviewer, x.n);
        if (st) return st; /* out of memory only: the records are valid */
    }
    dst->skipped += src->skipped;
    return ARB_OK;
}

/* See internal.h. */
size_t arb__battles_count_strong(const arb_battles *b)
{
    size_t n = 0;
    for (size_t k = 0; b && k < b->n; k++) n += b->strong[k];
    return n;
}

/* Interns every name of src into dst in src's order; 0, or -1 when out of memory. */
static int copy_names(arb__strtab *dst, const arb__strtab *src)
{
    for (size_t k = 0; k < src->n; k++)
        if (arb__strtab_intern(dst, src->names[k]) == UINT32_MAX) return -1;
    return 0;
}

/* See internal.h. The copies stand next to their battle, as Arena-Hard-Auto's show_result.py
** repeats a strong game's row (so a single Elo pass in the given order sees them together). */
arb_battles *arb__battles_repeat_strong(const arb_battles *b, size_t times)
{
    arb_battles *out = arb_battles_create();
    if (!out) return NULL;
    if (copy_names(&out->questions, &b->questions) || copy_names(&out->models, &b->models) ||
        copy_names(&out->reviewers, &b->reviewers))
        goto fail;
    for (size_t k = 0; k < b->n; k++) {
        arb_battle battle = arb_battles_at(b, k);
        for (size_t c = 0; c < (battle.strong ? times : 1); c++)
            if (arb_battles_add(out, &battle)) goto fail; /* valid in b: out of memory only */
    }
    for (size_t k = 0; k < b->n_left_out; k++) {
        arb_battle_left_out x = arb_battles_left_out_at(b, k);
        if (arb_battles_add_left_out(out, x.model_a, x.model_b, x.reviewer, x.n)) goto fail;
    }
    out->skipped = b->skipped;
    return out;
fail:
    arb_battles_destroy(out);
    return NULL;
}

/* ---- arena-convention JSON ------------------------------------------------------------------- */

/* Describes a JSON value for "got ...": "missing", "null", "number 7", "string \"x\"" (cut to
** about 40 bytes, control characters and bad UTF-8 shown as '?'), "object", ... */
static void describe(char *out, size_t size, const json_t *v)
{
    if (!v) {
        snprintf(out, size, "missing");
    } else if (json_is_number(v) || json_is_boolean(v)) {
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        snprintf(out, size, "%s %s", arb__json_kind(v), text ? text : "");
        free(text);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v), cut = n;
        if (cut > 40) {
            cut = 40;
            while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80) cut--;
        }
        char *prefix = arb__strndup(s, cut);
        arb__buf safe;
        arb__buf_init(&safe, 0);
        if (!prefix || arb__buf_put_safe(&safe, prefix))
            snprintf(out, size, "a string");
        else
            snprintf(out, size, "string \"%s%s\"%s", safe.data ? safe.data : "",
                     strlen(prefix) < cut ? "?" : "", cut < n ? "..." : "");
        free(prefix);
        arb__buf_free(&safe);
    } else {
        snprintf(out, size, "%s", arb__json_kind(v));
    }
}

/* See internal.h. */
arb_status arb__battles_field_fail(arb_battles *b, const char *path, size_t line,
                                   const char *field, const char *expected, const json_t *got)
{
    char shown[128];
    describe(shown, sizeof shown, got);
    return arb__battles_fail(b, ARB_PARSE, "%s:%zu: field \"%s\": expected %s, got %s", path,
                             line, field, expected, shown);
}

/* See internal.h. */
const char *arb__battles_question_text(const json_t *v, char *buf, size_t size)
{
    if (json_is_integer(v)) {
        snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return buf;
    }
    if (json_is_string(v) && json_string_length(v) > 0 &&
        strlen(json_string_value(v)) == json_string_length(v))
        return json_string_value(v);
    return NULL;
}

/* See internal.h. */
const char *arb__battles_name_text(const json_t *v)
{
    if (!json_is_string(v) || json_string_length(v) == 0) return NULL;
    const char *s = json_string_value(v);
    return strlen(s) == json_string_length(v) ? s : NULL;
}

/* Reads a style count: a number >= 0, or (arena conv_metadata) an object whose values are
** such numbers, summed. *x stays NAN for a missing or null value. */
static arb_status read_count(arb_battles *b, const char *path, size_t line, const char *field,
                             const json_t *v, int allow_object, double *x)
{
    static const char expected[] = "a number from 0 to 3.4e38";
    if (!v || json_is_null(v)) return ARB_OK;
    if (json_is_number(v)) {
        double value = json_number_value(v);
        if (!style_ok(value) || isnan(value))
            return arb__battles_field_fail(b, path, line, field, expected, v);
        *x = value;
        return ARB_OK;
    }
    if (!allow_object || !json_is_object(v))
        return arb__battles_field_fail(b, path, line, field,
                                       allow_object ? "a number >= 0 or an object of them"
                                                    : expected, v);
    double sum = 0;
    const char *key;
    const json_t *part;
    json_object_foreach((json_t *)v, key, part) {
        if (!json_is_number(part) || !style_ok(json_number_value(part))) {
            char name[160];
            snprintf(name, sizeof name, "%s.%s", field, key);
            return arb__battles_field_fail(b, path, line, name, expected, part);
        }
        sum += json_number_value(part);
    }
    if (!style_ok(sum)) return arb__battles_field_fail(b, path, line, field, expected, v);
    *x = sum;
    return ARB_OK;
}

/* Reads the style covariates of one side ("a" or "b") into style[]: our flat fields
** ("length_a", ...) first, the arena's conv_metadata (meta, may be NULL) for those absent. */
static arb_status read_style(arb_battles *b, const char *path, size_t line, json_t *obj,
                             const json_t *meta, int side_b, double *style)
{
    /* the keys spelled out, so a line costs no formatting (2 million lines take seconds).
    ** The Chatbot Arena's conv_metadata gives the answer's tokens, and per-kind counts of
    ** markdown headers (h1..h6), list items (ordered, unordered) and bold spans (**, __),
    ** which are summed. */
    static const char *const flat[2][ARB_STYLE__COUNT] = {
        {"length_a", "headers_a", "lists_a", "bold_a"},
        {"length_b", "headers_b", "lists_b", "bold_b"}};
    static const char *const arena[2][ARB_STYLE__COUNT] = {
        {"sum_assistant_a_tokens", "header_count_a", "list_count_a", "bold_count_a"},
        {"sum_assistant_b_tokens", "header_count_b", "list_count_b", "bold_count_b"}};
    static const char *const arena_field[2][ARB_STYLE__COUNT] = {
        {"conv_metadata.sum_assistant_a_tokens", "conv_metadata.header_count_a",
         "conv_metadata.list_count_a", "conv_metadata.bold_count_a"},
        {"conv_metadata.sum_assistant_b_tokens", "conv_metadata.header_count_b",
         "conv_metadata.list_count_b", "conv_metadata.bold_count_b"}};
    arb_status st;
    for (int k = 0; k < ARB_STYLE__COUNT; k++) {
        const char *key = flat[side_b][k];
        if ((st = read_count(b, path, line, key, json_object_get(obj, key), 0, &style[k])))
            return st;
        if (!isnan(style[k]) || !meta) continue;
        if ((st = read_count(b, path, line, arena_field[side_b][k],
                             json_object_get(meta, arena[side_b][k]), k != 0, &style[k])))
            return st;
    }
    return ARB_OK;
}

/* See internal.h: one arena-convention battle object. */
arb_status arb__battles_add_json(arb_battles *b, json_t *obj, const char *path, size_t line)
{
    char qbuf[32];
    arb_battle battle = arb_battle_init();
    json_t *v = json_object_get(obj, "question_id");
    if (!(battle.question = arb__battles_question_text(v, qbuf, sizeof qbuf)))
        return arb__battles_field_fail(b, path, line, "question_id",
                                       "a non-empty string or an integer", v);
    v = json_object_get(obj, "model_a");
    if (!(battle.model_i = arb__battles_name_text(v)))
        return arb__battles_field_fail(b, path, line, "model_a", "a non-empty string", v);
    v = json_object_get(obj, "model_b");
    if (!(battle.model_j = arb__battles_name_text(v)))
        return arb__battles_field_fail(b, path, line, "model_b", "a non-empty string", v);
    if (!strcmp(battle.model_i, battle.model_j))
        return arb__battles_field_fail(b, path, line, "model_b",
                                       "a model other than model_a", v);
    v = json_object_get(obj, "judge");
    battle.reviewer = "";
    if (v && !json_is_null(v)) {
        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
            return arb__battles_field_fail(b, path, line, "judge", "a string", v);
        battle.reviewer = json_string_value(v);
    }
    static const char winners[] = "\"model_a\", \"model_b\", \"tie\" or \"tie (bothbad)\"";
    v = json_object_get(obj, "winner");
    const char *w = json_string_value(v); /* NULL unless a string */
    if (!w) return arb__battles_field_fail(b, path, line, "winner", winners, v);
    if (!strcmp(w, "model_a")) battle.s = -1;
    else if (!strcmp(w, "model_b")) battle.s = 1;
    else if (!strcmp(w, "tie")) battle.s = 0;
    else if (!strcmp(w, "tie (bothbad)")) battle.both_bad = 1;
    else return arb__battles_field_fail(b, path, line, "winner", winners, v);
    const json_t *meta = json_object_get(obj, "conv_metadata");
    if (meta && !json_is_null(meta) && !json_is_object(meta))
        return arb__battles_field_fail(b, path, line, "conv_metadata", "an object", meta);
    if (!json_is_object(meta)) meta = NULL;
    /* "strong": true marks a strong win (Arena-Hard A>>B), which arb_rank_params.strong_weight
    ** may count several times; a tie cannot be strong */
    v = json_object_get(obj, "strong");
    if (v && !json_is_null(v)) {
        if (!json_is_boolean(v))
            return arb__battles_field_fail(b, path, line, "strong", "true or false", v);
        if (json_is_true(v) && battle.s == 0)
            return arb__battles_field_fail(b, path, line, "strong",
                                           "false on a tie (only a win can be strong)", v);
        battle.strong = json_is_true(v);
    }
    /* only question_id, model_a, model_b, winner and perhaps judge and strong: no style to
    ** look for */
    size_t core = 4 + (json_object_get(obj, "judge") != NULL) + (v != NULL);
    arb_status st = ARB_OK;
    if (meta || json_object_size(obj) > core) {
        st = read_style(b, path, line, obj, meta, 0, battle.style_i);
        if (!st) st = read_style(b, path, line, obj, meta, 1, battle.style_j);
    }
    if (!st) st = arb_battles_add(b, &battle);
    if (st == ARB_INVALID) /* checked above, so only a surprise; still name the place */
        return arb__battles_fail(b, ARB_PARSE, "%s:%zu: %s", path, line, arb_battles_errmsg(b));
    return st;
}

/* Reads a whole file for an importer: text (caller frees) and *len, or NULL after setting b's
** message (ARB_NOTFOUND for a path that is not there, ARB_INVALID for a folder, ARB_IO). */
static char *read_input(arb_battles *b, const char *path, size_t *len, arb_status *st)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        *st = arb__battles_fail(b, e == ENOENT || e == ENOTDIR ? ARB_NOTFOUND : ARB_IO,
                                "%s: cannot open: %s", path, strerror(e));
        return NULL;
    }
    if (S_ISDIR(sb.st_mode)) {
        *st = arb__battles_fail(b, ARB_INVALID, "%s: is a folder, expected a file", path);
        return NULL;
    }
    char *why = NULL;
    char *text = arb__read_file(path, len, &why);
    if (!text) *st = arb__battles_fail(b, ARB_IO, "%s", why ? why : "out of memory");
    free(why);
    return text;
}

/* Fails with "path:line: invalid JSON: <jansson's reason> (column c)". */
static arb_status invalid_json(arb_battles *b, const char *path, size_t line,
                               const json_error_t *err)
{
    arb__buf why; /* jansson quotes the text near the error: make it safe for a terminal */
    arb__buf_init(&why, 0);
    int nomem = arb__buf_put_safe(&why, err->text);
    arb_status st = arb__battles_fail(b, ARB_PARSE, "%s:%zu: invalid JSON: %s (column %d)", path,
                                      line, nomem || !why.data ? "" : why.data, err->column);
    arb__buf_free(&why);
    return st;
}

/* Calls fn for obj when it is an object; otherwise fails naming the line. */
static arb_status visit(arb_battles *b, const char *path, size_t line, json_t *obj,
                        arb__battles_json_fn fn, void *ud)
{
    if (!json_is_object(obj))
        return arb__battles_fail(b, ARB_PARSE, "%s:%zu: expected a JSON object (one battle), "
                                 "got %s", path, line, arb__json_kind(obj));
    return fn(ud, b, obj, path, line);
}

/* Skips JSON whitespace, counting newlines into *line. */
static const char *skip_space(const char *p, const char *end, size_t *line)
{
    for (; p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'); p++)
        if (*p == '\n') (*line)++;
    return p;
}

/* JSONL: one object per line, blank lines skipped. */
static arb_status each_line(arb_battles *b, const char *path, const char *p, const char *end,
                            size_t first_line, arb__battles_json_fn fn, void *ud)
{
    for (size_t line = first_line; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *next = nl ? nl + 1 : end;
        size_t n = (size_t)((nl ? nl : end) - p);
        size_t lead = 0;
        while (lead < n && (p[lead] == ' ' || p[lead] == '\t' || p[lead] == '\r')) lead++;
        if (lead < n) {
            json_error_t err;
            json_t *obj = json_loadb(p, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
            if (!obj) return invalid_json(b, path, line, &err);
            arb_status st = visit(b, path, line, obj, fn, ud);
            json_decref(obj);
            if (st) return st;
        }
        p = next;
    }
    return ARB_OK;
}

/* A JSON array of objects starting at p ('['), line being p's line. Each element is parsed
** on its own (jansson stops after one value with JSON_DISABLE_EOF_CHECK and reports the bytes
** it read), so an error can name the line the element starts on, and a dump of a million
** battles never becomes one tree in memory. */
static arb_status each_element(arb_battles *b, const char *path, const char *p, const char *end,
                               size_t line, arb__battles_json_fn fn, void *ud)
{
    p = skip_space(p + 1, end, &line);
    if (p < end && *p == ']') {
        p++;
    } else {
        for (;;) {
            if (p >= end)
                return arb__battles_fail(b, ARB_PARSE, "%s:%zu: the JSON array is not closed "
                                         "(expected a battle object or ']')", path, line);
            json_error_t err;
            json_t *obj = json_loadb(p, (size_t)(end - p), JSON_DISABLE_EOF_CHECK |
                                     JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
            if (!obj) return invalid_json(b, path, line + (size_t)(err.line > 0 ? err.line - 1 : 0),
                                          &err);
            size_t start = line, used = err.position > 0 ? (size_t)err.position : 0;
            if (used > (size_t)(end - p)) used = (size_t)(end - p);
            for (size_t k = 0; k < used; k++) line += p[k] == '\n';
            p += used;
            arb_status st = visit(b, path, start, obj, fn, ud);
            json_decref(obj);
            if (st) return st;
            p = skip_space(p, end, &line);
            if (p < end && *p == ',') {
                p = skip_space(p + 1, end, &line);
                continue;
            }
            if (p < end && *p == ']') {
                p++;
                break;
            }
            if (p >= end)
                return arb__battles_fail(b, ARB_PARSE, "%s:%zu: the JSON array is not closed "
                                         "(expected ',' or ']')", path, line);
            return arb__battles_fail(b, ARB_PARSE, "%s:%zu: expected ',' or ']' after a battle "
                                     "in the JSON array", path, line);
        }
    }
    p = skip_space(p, end, &line);
    if (p < end)
        return arb__battles_fail(b, ARB_PARSE, "%s:%zu: unexpected text after the JSON array",
                                 path, line);
    return ARB_OK;
}

/* See internal.h. */
arb_status arb__battles_each_json(arb_battles *b, const char *path, int allow_array,
                                  arb__battles_json_fn fn, void *ud)
{
    size_t len = 0;
    arb_status st = ARB_OK;
    char *text = read_input(b, path, &len, &st);
    if (!text) return st;
    const char *p = text, *end = text + len;
    if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) p += 3;
    size_t line = 1;
    const char *first = skip_space(p, end, &line);
    if (allow_array && first < end && *first == '[')
        st = each_element(b, path, first, end, line, fn, ud);
    else
        st = each_line(b, path, p, end, 1, fn, ud);
    free(text);
    return st;
}

/* arb__battles_json_fn that appends an arena-convention battle. */
static arb_status add_json_fn(void *ud, arb_battles *b, json_t *obj, const char *path,
                              size_t line)
{
    (void)ud;
    return arb__battles_add_json(b, obj, path, line);
}

/* One half of a JSONL file parsed on its own thread into its own scratch set. */
typedef struct jsonl_part {
    arb_battles *scratch;
    const char *path, *p, *end;
    size_t first_line;
    arb_status st;
} jsonl_part;

static void *parse_part(void *arg)
{
    jsonl_part *part = arg;
    part->st = each_line(part->scratch, part->path, part->p, part->end, part->first_line,
                         add_json_fn, NULL);
    return NULL;
}

/* Files above this are parsed in two halves on two threads: parsing is most of the time of
** `arbiter rank --battles` on millions of battles, and the halves are independent. */
#define JSONL_SPLIT_BYTES ((size_t)8 << 20)

/* Reads an arena-convention JSONL file into b, all or nothing (see arbiter.h and README). A
** large file is parsed as two halves in parallel; the battles keep the file's order, and an
** error is the first one in the file. */
arb_status arb_battles_read_jsonl(arb_battles *b, const char *path)
{
    if (!b) return ARB_INVALID;
    if (!path) return arb__battles_fail(b, ARB_INVALID, "battles: no file given");
    size_t len = 0;
    arb_status st = ARB_OK;
    char *text = read_input(b, path, &len, &st);
    if (!text) return st;
    const char *p = text, *end = text + len;
    if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) p += 3;

    jsonl_part parts[2];
    memset(parts, 0, sizeof parts);
    int n_parts = 1;
    const char *mid = NULL;
    if ((size_t)(end - p) > JSONL_SPLIT_BYTES) {
        mid = memchr(p + (end - p) / 2, '\n', (size_t)(end - (p + (end - p) / 2)));
        if (mid && mid + 1 < end) n_parts = 2;
    }
    parts[0].path = parts[1].path = path;
    parts[0].p = p;
    parts[0].end = n_parts == 2 ? mid + 1 : end;
    parts[0].first_line = 1;
    if (n_parts == 2) {
        size_t lines = 0;
        for (const char *q = p; (q = memchr(q, '\n', (size_t)(mid + 1 - q))) != NULL; q++) lines++;
        parts[1].p = mid + 1;
        parts[1].end = end;
        parts[1].first_line = 1 + lines;
    }
    for (int k = 0; k < n_parts; k++)
        if (!(parts[k].scratch = arb_battles_create())) st = ARB_NOMEM;
    if (st) {
        arb__battles_fail(b, st, "%s: out of memory", path);
        goto done;
    }
    json_object_seed(0); /* jansson seeds its hash function once, before threads share it */
    pthread_t thread;
    int threaded = n_parts == 2 && pthread_create(&thread, NULL, parse_part, &parts[1]) == 0;
    parse_part(&parts[0]);
    if (threaded) pthread_join(thread, NULL);
    else if (n_parts == 2) parse_part(&parts[1]);
    for (int k = 0; k < n_parts && !st; k++)
        if ((st = parts[k].st)) arb__battles_fail(b, st, "%s", arb_battles_errmsg(parts[k].scratch));
    if (!st && n_parts == 2 && (st = arb__battles_append(parts[0].scratch, parts[1].scratch)))
        arb__battles_fail(b, st, "%s", arb_battles_errmsg(parts[0].scratch));
    if (!st && b->n == 0 && b->questions.n == 0 && b->models.n == 0 && b->reviewers.n == 0) {
        /* an empty set takes the parsed one over whole: no second pass over the battles */
        arb_battles old = *b;
        *b = *parts[0].scratch;
        b->errmsg = old.errmsg;
        *parts[0].scratch = old; /* b's empty tables go with the scratch set */
        parts[0].scratch->errmsg = NULL;
    } else if (!st) {
        st = arb__battles_append(b, parts[0].scratch); /* sets b's message itself */
    }
done:
    for (int k = 0; k < 2; k++) arb_battles_destroy(parts[k].scratch);
    free(text);
    return st;
}

/* A style count as JSON: an integer when it is one, else a real. NULL when out of memory. */
static json_t *count_json(double x)
{
    if (x == floor(x) && fabs(x) < 9007199254740992.0) return json_integer((json_int_t)x);
    return json_real(x);
}

/* The arena winner of a battle. */
static const char *winner_text(const arb_battle *battle)
{
    if (battle->s < 0) return "model_a";
    if (battle->s > 0) return "model_b";
    return battle->both_bad ? "tie (bothbad)" : "tie";
}

/* Writes the battles as arena-convention JSONL, one object per line: question_id (always a
** string), model_a, model_b, judge, winner, "strong": true on a strong win, and the known
** style covariates as flat fields
** (length_a, length_b, headers_a, ...). ARB_IO when out cannot be written (message in b). */
arb_status arb_battles_write_jsonl(const arb_battles *b, FILE *out)
{
    if (!b) return ARB_INVALID;
    /* the set is not changed, only its last-error message (a cache, as in SQLite handles) */
    arb_battles *mb = (arb_battles *)b;
    if (!out) return arb__battles_fail(mb, ARB_INVALID, "battles: no output stream");
    char key[32];
    for (size_t k = 0; k < b->n; k++) {
        arb_battle battle = arb_battles_at(b, k);
        json_t *obj = json_object();
        int bad = !obj || arb__json_set(obj, "question_id", arb__json_name(battle.question)) ||
                  arb__json_set(obj, "model_a", arb__json_name(battle.model_i)) ||
                  arb__json_set(obj, "model_b", arb__json_name(battle.model_j)) ||
                  arb__json_set(obj, "judge", arb__json_name(battle.reviewer)) ||
                  arb__json_set(obj, "winner", json_string(winner_text(&battle))) ||
                  (battle.strong && arb__json_set(obj, "strong", json_true()));
        for (int side = 0; side < 2 && !bad; side++) {
            const double *style = side ? battle.style_j : battle.style_i;
            for (int c = 0; c < ARB_STYLE__COUNT && !bad; c++) {
                if (isnan(style[c])) continue;
                snprintf(key, sizeof key, "%s_%s", style_names[c], side ? "b" : "a");
                bad = arb__json_set(obj, key, count_json(style[c]));
            }
        }
        /* 9 significant digits give every float (the style column) back exactly */
        char *text = bad ? NULL
                         : json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                               JSON_REAL_PRECISION(9));
        json_decref(obj);
        if (!text) return arb__battles_fail(mb, ARB_NOMEM, "battles: out of memory");
        int failed = fputs(text, out) < 0 || fputc('\n', out) == EOF;
        free(text);
        if (failed)
            return arb__battles_fail(mb, ARB_IO, "cannot write battles: %s", strerror(errno));
    }
    if (fflush(out))
        return arb__battles_fail(mb, ARB_IO, "cannot write battles: %s", strerror(errno));
    return ARB_OK;
}

/* ---- the extra column of the store's battles table (stored by store_battles.c) ------------ */

/* The extra JSON of a stored battle: both_bad, strong and the known style covariates, e.g.
** {"both_bad":true,"style_i":{"length":812,"headers":2},"style_j":{...}} or {"strong":true};
** "{}" when there is nothing. Caller frees; NULL when out of memory. */
char *arb__battle_extra_json(const arb_battle *battle)
{
    json_t *obj = json_object();
    int bad = !obj;
    if (!bad && battle->both_bad) bad = arb__json_set(obj, "both_bad", json_true());
    if (!bad && battle->strong) bad = arb__json_set(obj, "strong", json_true());
    for (int side = 0; side < 2 && !bad; side++) {
        const double *style = side ? battle->style_j : battle->style_i;
        json_t *st = NULL;
        for (int c = 0; c < ARB_STYLE__COUNT && !bad; c++) {
            if (isnan(style[c])) continue;
            if (!st && !(st = json_object())) bad = 1;
            else bad = arb__json_set(st, style_names[c], count_json(style[c]));
        }
        if (st && !bad) bad = arb__json_set(obj, side ? "style_j" : "style_i", st);
        else json_decref(st);
    }
    char *text = bad ? NULL : json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                                  JSON_REAL_PRECISION(9));
    json_decref(obj);
    return text;
}

/* Reads the extra JSON of a stored battle into battle (both_bad, strong, style). -1 when it
** is not what arb_store_put_battles writes. Unknown keys are ignored (a newer arbiter may add
** some). */
int arb__battle_parse_extra(const char *text, arb_battle *battle)
{
    json_t *obj = text ? json_loads(text, 0, NULL) : NULL;
    int bad = !json_is_object(obj);
    if (!bad) {
        battle->both_bad = json_is_true(json_object_get(obj, "both_bad"));
        battle->strong = json_is_true(json_object_get(obj, "strong"));
        for (int side = 0; side < 2 && !bad; side++) {
            json_t *st = json_object_get(obj, side ? "style_j" : "style_i");
            double *style = side ? battle->style_j : battle->style_i;
            if (!st || json_is_null(st)) continue;
            if (!json_is_object(st)) {
                bad = 1;
                break;
            }
            for (int c = 0; c < ARB_STYLE__COUNT; c++) {
                json_t *v = json_object_get(st, style_names[c]);
                if (!v || json_is_null(v)) continue;
                if (!json_is_number(v)) bad = 1;
                else style[c] = json_number_value(v);
            }
        }
    }
    json_decref(obj);
    return bad ? -1 : 0;
}
