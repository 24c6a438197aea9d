/*
** dataset.c -- items and answers (METHODS §1) read from JSONL, with O(1) lookups.
**
** items.jsonl:   {"id", "question"?, "reference"?, "category"?, "language"?, "group"?,
**                 "context"?, "source"?, "document"?, "dialog"?, ...}
** answers.jsonl: {"item", "model", "answer", ...}
** "id" and "item" may be a string or an integer; an integer is kept as its decimal text, so
** public sets keyed by a numeric question_id load unchanged and 7 and "7" name the same item.
** Optional string fields may be null (same as absent). "question" is optional here: which
** fields an item needs depends on the protocol (sbs and the other pairwise protocols need a
** question; pointwise judging, METHODS §8, needs the fields of its task: context for QA,
** source for translation, document for summaries, dialog for dialogue), and each protocol
** checks its own before any request. Fields not named above are kept, as a
** compact JSON object in insertion order, in extra_json ("{}" when there are none); the
** simulator reads an answer's "quality" from there. Blank lines are skipped, CRLF line ends and
** a leading UTF-8 byte order mark are accepted.
**
** Invariants: items keep the order in which they were read (benchmark order); item ids are
** unique, and so are (item, model) pairs; every answer names an item already present. Each
** record and its strings live in one allocation that never moves, so pointers handed out stay
** valid until arb_dataset_destroy(). A buffer is added all or nothing: on any error the dataset
** is rolled back to what it held before the call.
**
** Not done here: deciding which items a protocol uses, or storing anything (store.c).
*/
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

/* An indexed dataset's records (arb_dataset_load_indexed): where each line is, not its text.
** An item's id is ids.names[k] for the k-th item. */
typedef struct indexed_item {
    uint64_t offset; /* of the line in the items file */
    uint32_t len;    /* of the line, without its end */
    uint32_t line;   /* line number, for "file:line" */
    uint32_t flags;  /* HAS_QUESTION, HAS_REFERENCE */
} indexed_item;
typedef struct indexed_answer {
    uint64_t offset; /* of the line in the answers file */
    uint32_t len, line;
    uint32_t item, model; /* indices in ids and models */
} indexed_answer;
/* What an indexed file was when its index was read (fstat at open): a window finds it the same
** or refuses it. A record's id is checked again too, but an answer edited in place to a text of
** the same length keeps its id and its place, and a run that stored the old text would send the
** new one (a request stored against a text the store never held: the export cannot give it
** back). */
typedef struct file_stamp {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} file_stamp;
#define HAS_QUESTION 1u  /* "question" given */
#define HAS_REFERENCE 2u /* "reference" given and not empty */

struct arb_dataset {
    /* indexed (arb_dataset_load_indexed): the records below stay NULL and empty; the index
    ** holds ids, models and line positions, and arb__dataset_window reads texts again */
    int indexed;
    char *items_path, *answers_path;
    file_stamp stamp[2]; /* [KIND_ITEMS], [KIND_ANSWERS]: the files as indexed */
    indexed_item *ix_items;
    size_t cap_ix_items; /* the item count is ids.n */
    size_t ix_grouped;   /* items with a "group" (none: the group coverage reads nothing) */
    indexed_answer *ix_answers;
    size_t n_ix_answers, cap_ix_answers;
    arb__strtab ids, models;
    arb_item **items;
    size_t n_items, cap_items;
    arb_answer **answers;
    size_t n_answers, cap_answers;
    arb__keymap item_index;   /* id -> index + 1 in items */
    arb__keymap answer_index; /* (item id, model) -> index + 1 in answers, or in ix_answers */
    char *errmsg;
    int errmsg_lost; /* the last message could not be allocated */
};

/* ---- hashing and tables ------------------------------------------------------------------ */

static uint64_t hash_item_key(const char *id) { return XXH3_64bits(id, strlen(id)); }

/* The answer key hashes the model seeded with the hash of the item id; equal hashes are always
** confirmed by comparing both strings. */
static uint64_t hash_answer_key(const char *item_id, const char *model)
{
    return XXH3_64bits_withSeed(model, strlen(model), hash_item_key(item_id));
}

/* arb__keymap_same_fn of item_index: whether the item value stands for has the id key. */
static int item_has_id(const void *ctx, const void *key, size_t value)
{
    const arb_dataset *ds = ctx;
    return !strcmp(ds->items[value - 1]->id, key);
}

/* What answer_index is searched by: the names in a dataset loaded whole, the indices in ids
** and models in an indexed one. */
typedef struct answer_key {
    const char *item_id, *model;
    uint32_t item, model_index;
} answer_key;

static int answer_has_names(const void *ctx, const void *key, size_t value)
{
    const arb_dataset *ds = ctx;
    const answer_key *k = key;
    const arb_answer *a = ds->answers[value - 1];
    return !strcmp(a->item_id, k->item_id) && !strcmp(a->model, k->model);
}

static int answer_has_indices(const void *ctx, const void *key, size_t value)
{
    const arb_dataset *ds = ctx;
    const answer_key *k = key;
    const indexed_answer *a = &ds->ix_answers[value - 1];
    return a->item == k->item && a->model == k->model_index;
}

static const arb_item *lookup_item(const arb_dataset *ds, const char *id, uint64_t hash)
{
    size_t v = arb__keymap_find(&ds->item_index, hash, id, item_has_id, ds);
    return v ? ds->items[v - 1] : NULL;
}

static const arb_answer *lookup_answer(const arb_dataset *ds, const char *item_id,
                                       const char *model, uint64_t hash)
{
    answer_key k = {item_id, model, 0, 0};
    size_t v = arb__keymap_find(&ds->answer_index, hash, &k, answer_has_names, ds);
    return v ? ds->answers[v - 1] : NULL;
}

/* ---- the dataset object ------------------------------------------------------------------ */

arb_dataset *arb_dataset_create(void) { return calloc(1, sizeof(arb_dataset)); }

void arb_dataset_destroy(arb_dataset *ds)
{
    if (!ds) return;
    for (size_t i = 0; i < ds->n_items; i++) free(ds->items[i]);
    for (size_t i = 0; i < ds->n_answers; i++) free(ds->answers[i]);
    free(ds->items);
    free(ds->answers);
    arb__keymap_free(&ds->item_index);
    arb__keymap_free(&ds->answer_index);
    free(ds->errmsg);
    free(ds->items_path);
    free(ds->answers_path);
    free(ds->ix_items);
    free(ds->ix_answers);
    arb__strtab_free(&ds->ids);
    arb__strtab_free(&ds->models);
    free(ds);
}

static arb_status fail(arb_dataset *ds, arb_status code, const char *fmt, ...)
    ARB__ATTR_PRINTF(3, 4);
static arb_status fail(arb_dataset *ds, arb_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = arb__vsprintf(fmt, ap);
    va_end(ap);
    free(ds->errmsg);
    ds->errmsg = msg;
    ds->errmsg_lost = msg == NULL; /* arb_dataset_errmsg() then says "out of memory" */
    return code;
}

/* Drops every record added after the first n_items items and n_answers answers and rebuilds
** the indices. Only error paths come here, so the O(n) rebuild costs nothing in normal use. */
static void rollback(arb_dataset *ds, size_t n_items, size_t n_answers)
{
    for (size_t i = n_items; i < ds->n_items; i++) free(ds->items[i]);
    for (size_t i = n_answers; i < ds->n_answers; i++) free(ds->answers[i]);
    ds->n_items = n_items;
    ds->n_answers = n_answers;
    /* The maps held more entries than these, so they have the room: the additions cannot fail. */
    arb__keymap_clear(&ds->item_index);
    for (size_t i = 0; i < n_items; i++)
        (void)arb__keymap_add(&ds->item_index, hash_item_key(ds->items[i]->id), NULL, i + 1);
    arb__keymap_clear(&ds->answer_index);
    for (size_t i = 0; i < n_answers; i++)
        (void)arb__keymap_add(&ds->answer_index,
                              hash_answer_key(ds->answers[i]->item_id, ds->answers[i]->model),
                              NULL, i + 1);
}

/* ---- one JSONL line ---------------------------------------------------------------------- */

/* What the line parser hands back: field values borrowed from the JSON object (or from
** id_text for an integer id) until the record is copied. */
typedef struct fields {
    char id_text[32];      /* decimal text of an integer key */
    const char *id;        /* value of "id" / "item" */
    const char *values[9]; /* in the order of field_names[kind]; NULL when absent */
    char *extra;           /* compact JSON of unknown fields, NULL when none (caller frees) */
} fields;

enum { KIND_ITEMS, KIND_ANSWERS };

/* Field names after the key ("id" / "item"). The first field_required[kind] must be strings;
** the others are optional strings, where null means absent. */
static const char *const field_names[2][9] = {
    {"question", "reference", "category", "language", "group", "context", "source", "document",
     "dialog"},
    {"model", "answer", NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
static const size_t field_count[2] = {9, 2};
static const size_t field_required[2] = {0, 2};
static const char *const key_names[2] = {"id", "item"};

static int is_known_field(int kind, const char *key)
{
    if (strcmp(key, key_names[kind]) == 0) return 1;
    for (size_t i = 0; i < field_count[kind]; i++)
        if (strcmp(key, field_names[kind][i]) == 0) return 1;
    return 0;
}

/* How a line is read: the first time (checked whole), into an index (the unknown fields are
** checked but not kept), or again after an indexed load checked it (UTF-8 not checked again). */
enum { PARSE_FIRST, PARSE_INDEX, PARSE_AGAIN };

/* Parses one non-blank line into f. Returns ARB_OK, or an error after setting the message
** "<where>: ...". root receives the JSON value, which the caller releases either way. */
static arb_status parse_line(arb_dataset *ds, int kind, int how, const char *where,
                             const char *line, size_t len, json_t **root, fields *f)
{
    size_t bad;
    if (how != PARSE_AGAIN && !arb__utf8_valid(line, len, &bad))
        return fail(ds, ARB_PARSE, "%s: invalid UTF-8 at byte %zu of the line", where, bad + 1);

    json_error_t jerr;
    json_t *obj = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    *root = obj;
    if (!obj)
        return fail(ds, ARB_PARSE, "%s: invalid JSON at column %d: %s", where, jerr.column,
                    jerr.text);
    if (!json_is_object(obj))
        return fail(ds, ARB_PARSE, "%s: expected a JSON object, got %s", where, arb__json_kind(obj));

    const char *key = key_names[kind];
    json_t *idv = json_object_get(obj, key);
    if (!idv) return fail(ds, ARB_PARSE, "%s: missing field \"%s\"", where, key);
    if (json_is_string(idv)) {
        f->id = json_string_value(idv);
    } else if (json_is_integer(idv)) {
        snprintf(f->id_text, sizeof f->id_text, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(idv));
        f->id = f->id_text;
    } else {
        return fail(ds, ARB_PARSE, "%s: field \"%s\" must be a string or an integer, got %s",
                    where, key, arb__json_kind(idv));
    }
    if (!f->id[0]) return fail(ds, ARB_PARSE, "%s: field \"%s\" is empty", where, key);

    for (size_t i = 0; i < field_count[kind]; i++) {
        const char *name = field_names[kind][i];
        int required = i < field_required[kind];
        json_t *v = json_object_get(obj, name);
        f->values[i] = NULL;
        if (!v || (json_is_null(v) && !required)) {
            if (required) return fail(ds, ARB_PARSE, "%s: missing field \"%s\"", where, name);
            continue;
        }
        if (!json_is_string(v))
            return fail(ds, ARB_PARSE, "%s: field \"%s\" must be a string, got %s", where, name,
                        arb__json_kind(v));
        f->values[i] = json_string_value(v);
    }
    /* A model name identifies a contestant; an empty one would silently merge answers. */
    if (kind == KIND_ANSWERS && !f->values[0][0])
        return fail(ds, ARB_PARSE, "%s: field \"model\" is empty", where);

    f->extra = NULL;
    if (how == PARSE_INDEX) return ARB_OK;
    json_t *extra = NULL;
    const char *field;
    json_t *value;
    json_object_foreach(obj, field, value) {
        if (is_known_field(kind, field)) continue;
        if (!extra && !(extra = json_object())) return fail(ds, ARB_NOMEM, "out of memory");
        if (json_object_set(extra, field, value)) {
            json_decref(extra);
            return fail(ds, ARB_NOMEM, "out of memory");
        }
    }
    if (extra) {
        f->extra = json_dumps(extra, JSON_COMPACT);
        json_decref(extra);
        if (!f->extra) return fail(ds, ARB_NOMEM, "out of memory");
    }
    return ARB_OK;
}

/* Copies strings into one block after the record: each string (NULL stays NULL) is placed at
** *cursor, which advances. */
static const char *place(char **cursor, const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *dst = *cursor;
    memcpy(dst, s, n);
    *cursor += n;
    return dst;
}

static size_t span(const char *s) { return s ? strlen(s) + 1 : 0; }

static arb_status add_item(arb_dataset *ds, const char *where, const fields *f)
{
    uint64_t h = hash_item_key(f->id);
    const arb_item *prev = lookup_item(ds, f->id, h);
    if (prev)
        return fail(ds, ARB_PARSE, "%s: duplicate item id \"%s\" (first at %s)", where, f->id,
                    prev->source);
    const char *extra = f->extra ? f->extra : "{}";
    size_t need = sizeof(arb_item) + span(f->id) + span(extra) + span(where);
    for (size_t i = 0; i < field_count[KIND_ITEMS]; i++) need += span(f->values[i]);
    if (ds->n_items == ds->cap_items) {
        size_t cap = ds->cap_items ? ds->cap_items * 2 : 64;
        arb_item **p = realloc(ds->items, cap * sizeof *p);
        if (!p) return fail(ds, ARB_NOMEM, "out of memory");
        ds->items = p;
        ds->cap_items = cap;
    }
    arb_item *it = malloc(need);
    if (!it) return fail(ds, ARB_NOMEM, "out of memory");
    char *cursor = (char *)(it + 1);
    it->id = place(&cursor, f->id);
    it->question = place(&cursor, f->values[0]);
    it->reference = place(&cursor, f->values[1]);
    it->category = place(&cursor, f->values[2]);
    it->language = place(&cursor, f->values[3]);
    it->group = place(&cursor, f->values[4]);
    it->context = place(&cursor, f->values[5]);
    it->source_text = place(&cursor, f->values[6]);
    it->document = place(&cursor, f->values[7]);
    it->dialog = place(&cursor, f->values[8]);
    it->extra_json = place(&cursor, extra);
    it->source = place(&cursor, where);
    if (arb__keymap_add(&ds->item_index, h, NULL, ds->n_items + 1)) {
        free(it);
        return fail(ds, ARB_NOMEM, "out of memory");
    }
    ds->items[ds->n_items++] = it;
    return ARB_OK;
}

static arb_status add_answer(arb_dataset *ds, const char *where, const fields *f)
{
    const arb_item *item = lookup_item(ds, f->id, hash_item_key(f->id));
    if (!item) return fail(ds, ARB_PARSE, "%s: answer for unknown item \"%s\"", where, f->id);
    const char *model = f->values[0];
    uint64_t h = hash_answer_key(item->id, model);
    const arb_answer *prev = lookup_answer(ds, item->id, model, h);
    if (prev)
        return fail(ds, ARB_PARSE,
                    "%s: duplicate answer of model \"%s\" to item \"%s\" (first at %s)", where,
                    model, item->id, prev->source);
    const char *extra = f->extra ? f->extra : "{}";
    size_t need = sizeof(arb_answer) + span(model) + span(f->values[1]) + span(extra) +
                  span(where);
    if (ds->n_answers == ds->cap_answers) {
        size_t cap = ds->cap_answers ? ds->cap_answers * 2 : 256;
        arb_answer **p = realloc(ds->answers, cap * sizeof *p);
        if (!p) return fail(ds, ARB_NOMEM, "out of memory");
        ds->answers = p;
        ds->cap_answers = cap;
    }
    arb_answer *a = malloc(need);
    if (!a) return fail(ds, ARB_NOMEM, "out of memory");
    char *cursor = (char *)(a + 1);
    a->item_id = item->id; /* items outlive answers: both are freed only by destroy */
    a->model = place(&cursor, model);
    a->answer = place(&cursor, f->values[1]);
    a->extra_json = place(&cursor, extra);
    a->source = place(&cursor, where);
    if (arb__keymap_add(&ds->answer_index, h, NULL, ds->n_answers + 1)) {
        free(a);
        return fail(ds, ARB_NOMEM, "out of memory");
    }
    ds->answers[ds->n_answers++] = a;
    return ARB_OK;
}

/* Writes "path:line" into out (cap bytes), as snprintf(out, cap, "%s:%zu", path, line) does,
** without its format parsing: a line read costs about 1,000 instructions less (three per
** record read). */
static void format_where(char *out, size_t cap, const char *path, size_t line)
{
    size_t len = strlen(path);
    if (len + 2 + 20 > cap) {
        snprintf(out, cap, "%s:%zu", path, line);
        return;
    }
    char digits[20];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + line % 10);
        line /= 10;
    } while (line);
    memcpy(out, path, len);
    out[len++] = ':';
    while (n) out[len++] = digits[--n];
    out[len] = '\0';
}

static int is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
    return 1;
}

static arb_status index_item(arb_dataset *ds, const char *where, const fields *f,
                             uint64_t offset, size_t len, size_t line_no);
static arb_status index_answer(arb_dataset *ds, const char *where, const fields *f,
                               uint64_t offset, size_t len, size_t line_no);
static int read_checked_line(int kind, const char *line, size_t len, arb__buf *scratch,
                             fields *f);

/* Reads a line of the common shape (read_checked_line: one object of known fields with string
** or null values) without jansson, when it is also valid UTF-8 and has a non-empty key (and
** model): then parse_line would give the same fields, and no error. Returns 1 with f filled
** (strings in scratch, f->extra NULL), or 0: the caller parses the line with parse_line, which
** also writes the error of a bad line. About five times faster than building jansson's tree. */
static int read_plain_line(int kind, const char *line, size_t len, arb__buf *scratch, fields *f)
{
    return arb__utf8_valid(line, len, NULL) && read_checked_line(kind, line, len, scratch, f) &&
           f->id[0] && (kind != KIND_ANSWERS || f->values[0][0]);
}

/* Adds the lines of text from offset start (a byte order mark is skipped only at offset 0, the
** start of a file); *line_no counts the lines before them and is advanced past them. text[0]
** is at byte base of its file (an indexed dataset keeps where each line is). */
static arb_status add_jsonl_lines(arb_dataset *ds, int kind, const char *source_name,
                                  const char *text, size_t len, size_t start, size_t *line_no,
                                  uint64_t base)
{
    if (!ds) return ARB_INVALID;
    if (!text && len) return fail(ds, ARB_INVALID, "text is NULL");
    if (!source_name) source_name = kind == KIND_ITEMS ? "items" : "answers";
    size_t n_items = ds->n_items, n_answers = ds->n_answers;
    arb_status st = ARB_OK;
    size_t pos = start, n;
    const char *line;
    arb__buf scratch; /* the strings of the line being read (read_plain_line) */
    arb__buf_init(&scratch, SIZE_MAX);
    while (arb__text_next_line(text, len, &pos, &line, &n)) {
        ++*line_no;
        if (is_blank(line, n)) continue;

        char where[512];
        format_where(where, sizeof where, source_name, *line_no);
        json_t *root = NULL;
        fields f;
        st = read_plain_line(kind, line, n, &scratch, &f)
                 ? ARB_OK
                 : parse_line(ds, kind, ds->indexed ? PARSE_INDEX : PARSE_FIRST, where, line, n,
                              &root, &f);
        if (st == ARB_OK) {
            uint64_t at = base + (uint64_t)(line - text);
            st = ds->indexed ? (kind == KIND_ITEMS ? index_item(ds, where, &f, at, n, *line_no)
                                                   : index_answer(ds, where, &f, at, n, *line_no))
               : kind == KIND_ITEMS ? add_item(ds, where, &f)
                                    : add_answer(ds, where, &f);
            free(f.extra);
        }
        json_decref(root);
        if (st != ARB_OK) break;
    }
    arb__buf_free(&scratch);
    if (st != ARB_OK) rollback(ds, n_items, n_answers);
    return st;
}

static arb_status add_jsonl(arb_dataset *ds, int kind, const char *source_name,
                            const char *text, size_t len)
{
    size_t line_no = 0;
    if (ds && ds->indexed) return fail(ds, ARB_INVALID, "the dataset is indexed: it reads files");
    return add_jsonl_lines(ds, kind, source_name, text, len, 0, &line_no, 0);
}

/* Adds a JSONL file a block of whole lines at a time, so that memory holds the records and one
** block (1 MiB, or the longest line) rather than the whole file besides them: loading 500,000
** items and their 1,000,000 answers held the 420 MB answers file on top of its records. A block
** after the first keeps the newline before it at offset 0, so a byte order mark is recognised
** only at the start of the file, as when the file is read whole. Returns as add_jsonl, or
** ARB_IO with *err set (caller frees) when the file cannot be read. */
static arb_status add_jsonl_file(arb_dataset *ds, int kind, const char *path, char **err)
{
    *err = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        *err = arb__sprintf("%s: cannot open: %s", path, strerror(errno));
        return ARB_IO;
    }
    struct stat sb;
    if (ds->indexed && !fstat(fileno(f), &sb))
        ds->stamp[kind] = (file_stamp){sb.st_dev, sb.st_ino, sb.st_size, sb.st_mtim};
    size_t cap = (size_t)1 << 20, used = 0, start = 0, line_no = 0;
    uint64_t base = 0; /* the file offset of buf[0] */
    char *buf = malloc(cap);
    arb_status st = buf ? ARB_OK : ARB_NOMEM;
    while (!st) {
        if (used == cap) { /* a line longer than the block: a larger block */
            char *grown = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!grown) {
                st = ARB_NOMEM;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + used, 1, cap - used, f);
        used += got;
        if (!got && ferror(f)) {
            *err = arb__sprintf("%s: read error", path);
            st = ARB_IO;
            break;
        }
        int eof = got == 0;
        size_t end = used; /* the block: up to the last newline, or everything at the end */
        if (!eof) {
            while (end > start && buf[end - 1] != '\n') end--;
            if (end == start) continue; /* no whole line yet */
        }
        st = add_jsonl_lines(ds, kind, path, buf, end, start, &line_no, base);
        if (st || eof) break;
        /* keep the newline that ends the block at offset 0, then the partial line after it */
        memmove(buf, buf + end - 1, used - end + 1);
        base += end - 1;
        used = used - end + 1;
        start = 1;
    }
    fclose(f);
    free(buf);
    if (st == ARB_NOMEM && !*err) *err = arb__sprintf("%s: out of memory", path);
    return st;
}

/* ---- indexed datasets ---------------------------------------------------------------------- */

/* The answer of model index m to item index k in an indexed dataset, or SIZE_MAX. */
static size_t find_indexed_answer(const arb_dataset *ds, uint32_t item, uint32_t model,
                                  uint64_t hash)
{
    answer_key k = {NULL, NULL, item, model};
    size_t v = arb__keymap_find(&ds->answer_index, hash, &k, answer_has_indices, ds);
    return v ? v - 1 : SIZE_MAX;
}

/* As add_item, keeping the line's place and what the protocols check before a run. */
static arb_status index_item(arb_dataset *ds, const char *where, const fields *f,
                             uint64_t offset, size_t len, size_t line_no)
{
    uint32_t prev = arb__strtab_find(&ds->ids, f->id);
    if (prev != UINT32_MAX)
        return fail(ds, ARB_PARSE, "%s: duplicate item id \"%s\" (first at %s:%u)", where, f->id,
                    ds->items_path, ds->ix_items[prev].line);
    if (len > UINT32_MAX || line_no > UINT32_MAX || ds->ids.n >= UINT32_MAX - 1)
        return fail(ds, ARB_PARSE, "%s: the file is too large for an indexed dataset", where);
    if (arb__grow(&ds->ix_items, &ds->cap_ix_items, ds->ids.n + 1, sizeof *ds->ix_items))
        return fail(ds, ARB_NOMEM, "out of memory");
    uint32_t k = arb__strtab_intern(&ds->ids, f->id);
    if (k == UINT32_MAX) return fail(ds, ARB_NOMEM, "out of memory");
    ds->ix_grouped += f->values[4] != NULL; /* field_names[KIND_ITEMS][4]: "group" */
    ds->ix_items[k] = (indexed_item){
        offset, (uint32_t)len, (uint32_t)line_no,
        (f->values[0] ? HAS_QUESTION : 0u) | (f->values[1] && *f->values[1] ? HAS_REFERENCE : 0u)};
    return ARB_OK;
}

/* As add_answer, keeping the line's place. */
static arb_status index_answer(arb_dataset *ds, const char *where, const fields *f,
                               uint64_t offset, size_t len, size_t line_no)
{
    uint32_t item = arb__strtab_find(&ds->ids, f->id);
    if (item == UINT32_MAX)
        return fail(ds, ARB_PARSE, "%s: answer for unknown item \"%s\"", where, f->id);
    const char *model = f->values[0];
    uint32_t m = arb__strtab_intern(&ds->models, model);
    if (m == UINT32_MAX) return fail(ds, ARB_NOMEM, "out of memory");
    const char *item_id = ds->ids.names[item];
    uint64_t h = hash_answer_key(item_id, model);
    size_t prev = find_indexed_answer(ds, item, m, h);
    if (prev != SIZE_MAX)
        return fail(ds, ARB_PARSE,
                    "%s: duplicate answer of model \"%s\" to item \"%s\" (first at %s:%u)", where,
                    model, item_id, ds->answers_path, ds->ix_answers[prev].line);
    if (len > UINT32_MAX || line_no > UINT32_MAX)
        return fail(ds, ARB_PARSE, "%s: the file is too large for an indexed dataset", where);
    if (arb__grow(&ds->ix_answers, &ds->cap_ix_answers, ds->n_ix_answers + 1,
                  sizeof *ds->ix_answers) ||
        arb__keymap_add(&ds->answer_index, h, NULL, ds->n_ix_answers + 1))
        return fail(ds, ARB_NOMEM, "out of memory");
    ds->ix_answers[ds->n_ix_answers++] =
        (indexed_answer){offset, (uint32_t)len, (uint32_t)line_no, item, m};
    return ARB_OK;
}

/* Drops an indexed dataset's index: ds is empty and ordinary again. */
static void drop_index(arb_dataset *ds)
{
    free(ds->items_path);
    free(ds->answers_path);
    free(ds->ix_items);
    free(ds->ix_answers);
    arb__strtab_free(&ds->ids);
    arb__strtab_free(&ds->models);
    arb__keymap_free(&ds->answer_index);
    ds->items_path = ds->answers_path = NULL;
    ds->ix_items = NULL;
    ds->ix_answers = NULL;
    ds->cap_ix_items = ds->ix_grouped = ds->n_ix_answers = ds->cap_ix_answers = 0;
    ds->indexed = 0;
}

/* See internal.h. 64 MiB of JSONL held as records costs about as much again in memory (the
** texts, a "file:line" and ~100 bytes of record each): at most ~80 MB more than an index, and
** only for inputs of up to ~55,000 items of the benchmark's shape; larger inputs are indexed. */
uint64_t arb__dataset_whole_limit = (uint64_t)64 << 20;

/* Whether path is a regular file; *size gets its size (0 when it is not one). */
static int is_regular_file(const char *path, uint64_t *size)
{
    struct stat sb;
    int regular = stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
    *size = regular ? (uint64_t)sb.st_size : 0;
    return regular;
}

/* Reads and checks the two files (answers_path NULL: items only) as arb_dataset_load does,
** with the same messages, but keeps only an index (see arbiter.h). Files that are not regular
** (a pipe), and files of at most arb__dataset_whole_limit bytes together, are loaded whole. */
arb_status arb_dataset_load_indexed(arb_dataset *ds, const char *items_path,
                                    const char *answers_path)
{
    if (!ds) return ARB_INVALID;
    if (!items_path) return fail(ds, ARB_INVALID, "no items file given");
    if (ds->indexed || ds->n_items || ds->n_answers)
        return fail(ds, ARB_INVALID, "an indexed dataset is read into an empty dataset");
    uint64_t items_size, answers_size = 0;
    if (!is_regular_file(items_path, &items_size) ||
        (answers_path && !is_regular_file(answers_path, &answers_size)) ||
        items_size + answers_size <= arb__dataset_whole_limit)
        return arb_dataset_load(ds, items_path, answers_path);
    ds->indexed = 1;
    ds->items_path = arb__strdup(items_path);
    ds->answers_path = answers_path ? arb__strdup(answers_path) : NULL;
    char *err = NULL;
    arb_status st = !ds->items_path || (answers_path && !ds->answers_path) ? ARB_NOMEM : ARB_OK;
    if (!st) st = add_jsonl_file(ds, KIND_ITEMS, items_path, &err);
    if (!st && answers_path) st = add_jsonl_file(ds, KIND_ANSWERS, answers_path, &err);
    if (st) drop_index(ds);
    if (err) {
        free(ds->errmsg);
        ds->errmsg = err;
        ds->errmsg_lost = 0;
    } else if (st == ARB_NOMEM && !ds->errmsg) {
        ds->errmsg_lost = 1;
    }
    return st;
}

/* See internal.h. */
int arb__dataset_is_indexed(const arb_dataset *ds) { return ds && ds->indexed; }

/* See internal.h. */
void arb__dataset_indexed_paths(const arb_dataset *ds, const char **items_path,
                                const char **answers_path)
{
    int ix = ds && ds->indexed;
    *items_path = ix ? ds->items_path : NULL;
    *answers_path = ix ? ds->answers_path : NULL;
}

/* See internal.h. */
int arb__dataset_has_answer(const arb_dataset *ds, const char *item_id, const char *model)
{
    if (!ds || !ds->indexed) return arb_dataset_find_answer(ds, item_id, model) != NULL;
    uint32_t k = arb__strtab_find(&ds->ids, item_id);
    uint32_t m = arb__strtab_find(&ds->models, model);
    if (k == UINT32_MAX || m == UINT32_MAX) return 0;
    return find_indexed_answer(ds, k, m, hash_answer_key(item_id, model)) != SIZE_MAX;
}

/* See internal.h. */
arb_status arb__dataset_models(const arb_dataset *ds, const char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!ds) return ARB_OK;
    if (ds->indexed) { /* the index interned each model at its first answer */
        if (!(*out = malloc((ds->models.n ? ds->models.n : 1) * sizeof **out))) return ARB_NOMEM;
        for (size_t m = 0; m < ds->models.n; m++) (*out)[m] = ds->models.names[m];
        *n = ds->models.n;
        return ARB_OK;
    }
    arb__strtab seen = {0};
    if (!(*out = malloc((ds->n_answers ? ds->n_answers : 1) * sizeof **out))) return ARB_NOMEM;
    for (size_t k = 0; k < ds->n_answers; k++) {
        const char *model = ds->answers[k]->model;
        size_t before = seen.n;
        if (arb__strtab_intern(&seen, model) == UINT32_MAX) {
            arb__strtab_free(&seen);
            free(*out);
            *out = NULL;
            *n = 0;
            return ARB_NOMEM;
        }
        if (seen.n > before) (*out)[(*n)++] = model;
    }
    arb__strtab_free(&seen);
    return ARB_OK;
}

/* See internal.h. */
const arb_item *arb__dataset_item_outline(const arb_dataset *ds, size_t index, arb_item *stub,
                                          char *source, size_t size)
{
    if (!ds || !ds->indexed) return arb_dataset_item(ds, index);
    if (index >= ds->ids.n) return NULL;
    const indexed_item *ix = &ds->ix_items[index];
    snprintf(source, size, "%s:%u", ds->items_path, ix->line);
    memset(stub, 0, sizeof *stub);
    stub->id = ds->ids.names[index];
    stub->source = source;
    stub->question = ix->flags & HAS_QUESTION ? "" : NULL;
    stub->reference = ix->flags & HAS_REFERENCE ? "" : NULL;
    return stub;
}

/* Reads len bytes at offset of the open file fd into *buf (grown as needed). ARB_IO with the
** message in win when the file is shorter than the index says (it changed since). */
static arb_status read_at(arb_dataset *win, int fd, const char *path, uint64_t offset,
                          size_t len, arb__buf *buf)
{
    arb__buf_reset(buf);
    if (arb__buf_reserve(buf, len + 1)) return fail(win, ARB_NOMEM, "out of memory");
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, buf->data + got, len - got, (off_t)(offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return fail(win, ARB_IO, "%s: %s while the run read it again", path,
                        r < 0 ? strerror(errno) : "the file became shorter");
        got += (size_t)r;
    }
    buf->len = len;
    buf->data[len] = '\0';
    return ARB_OK;
}

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* Reads a line into f without jansson when it is the common shape: one object whose members
** are all known fields, each once, with string values (or null for an optional one). Returns 1
** with f filled (its strings in scratch, f->extra NULL), or 0 when the line has another shape
** (an integer id, unknown fields, a duplicate, anything jansson would refuse, ...): the caller
** then parses it with jansson, which gives the same fields or the error. What it accepts is
** JSON that jansson accepts with the same strings, but for UTF-8, which it does not check
** (read_plain_line does, for lines read the first time). About five times faster than
** jansson, which builds a tree of the line. */
static int read_checked_line(int kind, const char *line, size_t len, arb__buf *scratch,
                             fields *f)
{
    const char *p = line, *end = line + len;
    size_t at[10];
    int given[10] = {0}; /* [0]: the key ("id" / "item"), [1 + i]: field_names[kind][i] */
    int seen[10] = {0};  /* the member appeared (a duplicate is left to jansson, which refuses it) */
    arb__buf_reset(scratch);
    p = skip_space(p, end);
    if (p == end || *p++ != '{') return 0;
    for (;;) {
        p = skip_space(p, end);
        if (p == end || *p != '"') return 0;
        /* a member's name is matched where it lies: a known name holds no escape, so a name
        ** with one (or a control byte) is left to jansson */
        const char *key = ++p;
        while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) p++;
        if (p == end || *p != '"') return 0;
        size_t key_len = (size_t)(p++ - key);
        int member = -1;
        for (int i = -1; member < 0 && i < (int)field_count[kind]; i++) {
            const char *name = i < 0 ? key_names[kind] : field_names[kind][i];
            if (name[0] == *key && !strncmp(name, key, key_len) && !name[key_len]) member = 1 + i;
        }
        if (member < 0 || seen[member]++) return 0;
        p = skip_space(p, end);
        if (p == end || *p++ != ':') return 0;
        p = skip_space(p, end);
        if (p < end && *p == '"') {
            at[member] = scratch->len;
            if (!(p = arb__json_decode_string(p, end, scratch))) return 0;
            given[member] = 1;
        } else if (end - p >= 4 && !memcmp(p, "null", 4) && member > (int)field_required[kind]) {
            given[member] = 0;
            p += 4;
        } else {
            return 0;
        }
        p = skip_space(p, end);
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == '}') break;
        return 0;
    }
    if (skip_space(p + 1, end) != end || !given[0]) return 0;
    for (size_t i = 0; i < field_required[kind]; i++)
        if (!given[1 + i]) return 0;
    f->id = scratch->data + at[0];
    for (size_t i = 0; i < field_count[kind]; i++)
        f->values[i] = given[1 + i] ? scratch->data + at[1 + i] : NULL;
    f->extra = NULL;
    return 1;
}

/* Parses line (len bytes of the file at where) into win, as the first load did, after checking
** that it is still the record the index names (id, and model for an answer). */
static arb_status reread_line(arb_dataset *win, int kind, const char *where, const char *line,
                              size_t len, const char *id, const char *model,
                              const char *item_source, arb__buf *scratch)
{
    json_t *root = NULL;
    fields f;
    arb_status st = read_checked_line(kind, line, len, scratch, &f)
                        ? ARB_OK
                        : parse_line(win, kind, PARSE_AGAIN, where, line, len, &root, &f);
    if (st == ARB_OK) {
        if (strcmp(f.id, id) || (model && strcmp(f.values[0], model)))
            st = fail(win, ARB_IO, "%s: the file changed while the run read it", where);
        else if (kind == KIND_ITEMS)
            st = add_item(win, where, &f);
        else if (!arb_dataset_find_item(win, id)) { /* a stub of the item, for the answer */
            fields stub = {.id = id};
            st = add_item(win, item_source, &stub);
            if (!st) st = add_answer(win, where, &f);
        } else {
            st = add_answer(win, where, &f);
        }
        free(f.extra);
    }
    json_decref(root);
    return st;
}

/* The end of building a window: *out = win when st is ARB_OK; otherwise win's message to *err
** (caller frees) and win destroyed. Returns st. */
static arb_status hand_over(arb_dataset *win, arb_status st, arb_dataset **out, char **err)
{
    if (st) {
        *err = arb__strdup(arb_dataset_errmsg(win));
        arb_dataset_destroy(win);
        return st;
    }
    *out = win;
    return ARB_OK;
}

/* What building a window holds: the window, the bytes read from the files (a window may span a
** whole file) and the strings of the line being read (read_checked_line). */
typedef struct window_build {
    arb_dataset *win;
    arb__buf buf;
    arb__buf scratch;
} window_build;

/* Starts building a window: an empty dataset and buffers. ARB_OK, or ARB_NOMEM (nothing to
** free). */
static arb_status window_begin(window_build *wb)
{
    wb->win = arb_dataset_create();
    if (!wb->win) return ARB_NOMEM;
    arb__buf_init(&wb->buf, SIZE_MAX);
    arb__buf_init(&wb->scratch, SIZE_MAX);
    return ARB_OK;
}

/* Opens path for reading into *fd (-1 on failure, with the window's message naming path) and
** checks that it is still the file stamp describes (else ARB_IO with *fd open: the caller
** closes it). */
static arb_status window_open(window_build *wb, const char *path, const file_stamp *stamp,
                              int *fd)
{
    if ((*fd = open(path, O_RDONLY)) < 0)
        return fail(wb->win, ARB_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(*fd, &sb))
        return fail(wb->win, ARB_IO, "%s: cannot read: %s", path, strerror(errno));
    if (sb.st_dev != stamp->dev || sb.st_ino != stamp->ino || sb.st_size != stamp->size ||
        sb.st_mtim.tv_sec != stamp->mtime.tv_sec || sb.st_mtim.tv_nsec != stamp->mtime.tv_nsec)
        return fail(wb->win, ARB_IO,
                    "%s: the file changed while the run read it (its size, time or inode is "
                    "not what it was when the run began; a large input is read again slice "
                    "by slice, so it must not change until the run ends)", path);
    return ARB_OK;
}

/* Ends building a window: frees the buffers and hands the window over as hand_over does. */
static arb_status window_end(window_build *wb, arb_status st, arb_dataset **out, char **err)
{
    arb__buf_free(&wb->buf);
    arb__buf_free(&wb->scratch);
    return hand_over(wb->win, st, out, err);
}

/* See internal.h. */
arb_status arb__dataset_window(const arb_dataset *ds, size_t first, size_t n,
                               const char *const *models, size_t n_models, arb_dataset **out,
                               char **err)
{
    *out = NULL;
    *err = NULL;
    if (!ds || !ds->indexed || first > ds->ids.n || n > ds->ids.n - first) return ARB_INVALID;
    window_build wb;
    arb_status st = window_begin(&wb);
    if (st) return st;
    arb_dataset *win = wb.win;
    arb__buf *buf = &wb.buf;
    char where[512];
    int fd_items = -1, fd_answers = -1;
    size_t *picked = NULL, n_picked = 0, cap_picked = 0; /* the answers to read */
    if (n == 0) goto done;
    if ((st = window_open(&wb, ds->items_path, &ds->stamp[KIND_ITEMS], &fd_items)) ||
        (n_models && ds->answers_path &&
         (st = window_open(&wb, ds->answers_path, &ds->stamp[KIND_ANSWERS], &fd_answers))))
        goto done;
    /* the items lie in one stretch of the file, in order */
    const indexed_item *a = &ds->ix_items[first], *z = &ds->ix_items[first + n - 1];
    uint64_t start = a->offset;
    if ((st = read_at(win, fd_items, ds->items_path, start, (size_t)(z->offset + z->len - start),
                      buf)))
        goto done;
    for (size_t i = first; i < first + n && !st; i++) {
        const indexed_item *it = &ds->ix_items[i];
        format_where(where, sizeof where, ds->items_path, it->line);
        st = reread_line(win, KIND_ITEMS, where, buf->data + (it->offset - start), it->len,
                         ds->ids.names[i], NULL, NULL, &wb.scratch);
    }
    /* the answers of those items by the models asked for: one read of the stretch of the file
    ** they lie in when it is not much longer than they are (answers kept near their items),
    ** else one read each */
    if (fd_answers < 0) n_models = 0; /* no answers file: no answers to read */
    if (n_models && arb__grow(&picked, &cap_picked, n * n_models, sizeof *picked)) {
        st = fail(win, ARB_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = first; i < first + n && !st; i++)
        for (size_t m = 0; m < n_models; m++) {
            uint32_t mi = arb__strtab_find(&ds->models, models[m]);
            if (mi == UINT32_MAX) continue;
            size_t k = find_indexed_answer(ds, (uint32_t)i, mi,
                                           hash_answer_key(ds->ids.names[i], models[m]));
            if (k != SIZE_MAX) picked[n_picked++] = k;
        }
    uint64_t lo = UINT64_MAX, hi = 0, need = 0;
    for (size_t j = 0; j < n_picked; j++) {
        const indexed_answer *an = &ds->ix_answers[picked[j]];
        if (an->offset < lo) lo = an->offset;
        if (an->offset + an->len > hi) hi = an->offset + an->len;
        need += an->len;
    }
    int one_read = n_picked && hi - lo <= 2 * need + ((uint64_t)1 << 16);
    if (one_read && (st = read_at(win, fd_answers, ds->answers_path, lo, (size_t)(hi - lo), buf)))
        goto done;
    for (size_t j = 0; j < n_picked && !st; j++) {
        const indexed_answer *an = &ds->ix_answers[picked[j]];
        format_where(where, sizeof where, ds->answers_path, an->line);
        const char *line = buf->data + (an->offset - lo);
        if (!one_read) {
            line = buf->data;
            if ((st = read_at(win, fd_answers, ds->answers_path, an->offset, an->len, buf)))
                break;
        }
        st = reread_line(win, KIND_ANSWERS, where, line, an->len, ds->ids.names[an->item],
                         ds->models.names[an->model], NULL, &wb.scratch);
    }
done:
    if (fd_items >= 0) close(fd_items);
    if (fd_answers >= 0) close(fd_answers);
    free(picked);
    return window_end(&wb, st, out, err);
}

/* See internal.h. */
arb_status arb__dataset_answers_window(const arb_dataset *ds, size_t first, size_t n,
                                       arb_dataset **out, char **err)
{
    *out = NULL;
    *err = NULL;
    if (!ds || !ds->indexed || first > ds->n_ix_answers || n > ds->n_ix_answers - first)
        return ARB_INVALID;
    window_build wb;
    arb_status st = window_begin(&wb);
    if (st) return st;
    char where[512], item_where[512];
    int fd = -1;
    if (n == 0) goto done;
    if ((st = window_open(&wb, ds->answers_path, &ds->stamp[KIND_ANSWERS], &fd))) goto done;
    /* in file order, so the answers lie in one stretch of the file */
    const indexed_answer *a = &ds->ix_answers[first], *z = &ds->ix_answers[first + n - 1];
    uint64_t start = a->offset;
    if ((st = read_at(wb.win, fd, ds->answers_path, start, (size_t)(z->offset + z->len - start),
                      &wb.buf)))
        goto done;
    for (size_t k = first; k < first + n && !st; k++) {
        const indexed_answer *an = &ds->ix_answers[k];
        format_where(where, sizeof where, ds->answers_path, an->line);
        format_where(item_where, sizeof item_where, ds->items_path, ds->ix_items[an->item].line);
        st = reread_line(wb.win, KIND_ANSWERS, where, wb.buf.data + (an->offset - start), an->len,
                         ds->ids.names[an->item], ds->models.names[an->model], item_where,
                         &wb.scratch);
    }
done:
    if (fd >= 0) close(fd);
    return window_end(&wb, st, out, err);
}

/* See internal.h. */
arb_status arb__dataset_each_item(const arb_dataset *ds, arb__dataset_item_fn fn, void *ud,
                                  char **err)
{
    *err = NULL;
    if (!ds || !fn) return ARB_INVALID;
    arb_status st = ARB_OK;
    if (!ds->indexed) {
        for (size_t i = 0; i < ds->n_items && !st; i++) st = fn(ud, i, ds->items[i]);
        return st;
    }
    size_t n = ds->ids.n;
    for (size_t first = 0; first < n && !st; first += ARB__DATASET_BLOCK_ITEMS) {
        size_t k = n - first < ARB__DATASET_BLOCK_ITEMS ? n - first : ARB__DATASET_BLOCK_ITEMS;
        arb_dataset *block = NULL;
        if ((st = arb__dataset_window(ds, first, k, NULL, 0, &block, err))) break;
        for (size_t i = 0; i < k && !st; i++) st = fn(ud, first + i, block->items[i]);
        arb_dataset_destroy(block);
    }
    return st;
}

/* Adds the items of a JSONL buffer (all or nothing). Returns ARB_OK, ARB_PARSE with the message
** in arb_dataset_errmsg(), or ARB_NOMEM. text is borrowed; the dataset keeps copies. */
arb_status arb_dataset_add_items_jsonl(arb_dataset *ds, const char *source_name,
                                       const char *text, size_t len)
{
    return add_jsonl(ds, KIND_ITEMS, source_name, text, len);
}

/* Adds the answers of a JSONL buffer (all or nothing); each must name an item already added.
** Same returns and ownership as arb_dataset_add_items_jsonl(). */
arb_status arb_dataset_add_answers_jsonl(arb_dataset *ds, const char *source_name,
                                         const char *text, size_t len)
{
    return add_jsonl(ds, KIND_ANSWERS, source_name, text, len);
}

/* Reads items_path and then answers_path (NULL: items only), using each path as the source
** name of messages. ARB_IO when a file cannot be read ("path: cannot open: ..."). The two
** files are added together: when the answers fail, the items of this call are dropped too. */
arb_status arb_dataset_load(arb_dataset *ds, const char *items_path, const char *answers_path)
{
    if (!ds) return ARB_INVALID;
    if (!items_path) return fail(ds, ARB_INVALID, "no items file given");
    size_t n_items = ds->n_items, n_answers = ds->n_answers;
    char *err = NULL;
    arb_status st = add_jsonl_file(ds, KIND_ITEMS, items_path, &err);
    if (!st && answers_path) st = add_jsonl_file(ds, KIND_ANSWERS, answers_path, &err);
    if (st) rollback(ds, n_items, n_answers);
    if (err) { /* a parse error's message is set already; an I/O error's is err */
        free(ds->errmsg);
        ds->errmsg = err;
        ds->errmsg_lost = 0;
    } else if (st == ARB_NOMEM) {
        ds->errmsg_lost = 1;
    }
    return st;
}

/* Returns the message of the last error (owned by ds; "" before any error). Never NULL. */
const char *arb_dataset_errmsg(const arb_dataset *ds)
{
    if (!ds) return "no dataset";
    if (ds->errmsg_lost) return "out of memory";
    return ds->errmsg ? ds->errmsg : "";
}

size_t arb_dataset_item_count(const arb_dataset *ds)
{
    return !ds ? 0 : ds->indexed ? ds->ids.n : ds->n_items;
}

/* Returns the item at index in reading order (owned by ds), or NULL when out of range. */
const arb_item *arb_dataset_item(const arb_dataset *ds, size_t index)
{
    return ds && index < ds->n_items ? ds->items[index] : NULL;
}

/* Returns the item with that id (owned by ds), or NULL. O(1) on average. */
const arb_item *arb_dataset_find_item(const arb_dataset *ds, const char *id)
{
    if (!ds || !id) return NULL;
    return lookup_item(ds, id, hash_item_key(id));
}

size_t arb_dataset_answer_count(const arb_dataset *ds)
{
    return !ds ? 0 : ds->indexed ? ds->n_ix_answers : ds->n_answers;
}

/* Returns the answer at index in reading order (owned by ds), or NULL when out of range. */
const arb_answer *arb_dataset_answer(const arb_dataset *ds, size_t index)
{
    return ds && index < ds->n_answers ? ds->answers[index] : NULL;
}

/* Returns the answer of model to item_id (owned by ds), or NULL. O(1) on average. */
const arb_answer *arb_dataset_find_answer(const arb_dataset *ds, const char *item_id,
                                          const char *model)
{
    if (!ds || !item_id || !model) return NULL;
    return lookup_answer(ds, item_id, model, hash_answer_key(item_id, model));
}

/* What arb_dataset_group_coverage counts while it walks the items. */
typedef struct coverage_walk {
    arb_group_coverage c;
    arb__strtab groups, languages, pairs;
    size_t *per_group, cap, n_counted; /* distinct languages of each group */
    arb__buf key;
} coverage_walk;

/* arb__dataset_item_fn: counts one item. ARB_NOMEM stops the walk. */
static arb_status count_coverage(void *ud, size_t index, const arb_item *it)
{
    (void)index;
    coverage_walk *w = ud;
    if (!it->group) {
        w->c.n_ungrouped++;
        return ARB_OK;
    }
    if (!it->language) return ARB_OK;
    uint32_t g = arb__strtab_intern(&w->groups, it->group);
    size_t before = w->pairs.n;
    arb__buf_reset(&w->key);
    if (g == UINT32_MAX || arb__strtab_intern(&w->languages, it->language) == UINT32_MAX ||
        arb__buf_printf(&w->key, "%zu:%s%s", strlen(it->group), it->group, it->language) ||
        arb__strtab_intern(&w->pairs, w->key.data) == UINT32_MAX ||
        arb__grow(&w->per_group, &w->cap, w->groups.n, sizeof *w->per_group))
        return ARB_NOMEM;
    while (w->n_counted < w->groups.n) w->per_group[w->n_counted++] = 0;
    if (w->pairs.n > before) w->per_group[g]++;
    return ARB_OK;
}

/* Counts the groups, languages and incomplete groups of the items that have both a group and
** a language (see arbiter.h); an indexed dataset's items are read again a block at a time
** when some item has a group. Out
** of memory, the counts are all zero but n_ungrouped; when an indexed dataset's file cannot be
** read again, all zero (the run that reads it fails with the message). */
arb_group_coverage arb_dataset_group_coverage(const arb_dataset *ds)
{
    coverage_walk w;
    memset(&w, 0, sizeof w);
    if (!ds) return w.c;
    if (ds->indexed && !ds->ix_grouped) { /* nothing to read again: no item has a group */
        w.c.n_ungrouped = ds->ids.n;
        return w.c;
    }
    arb__buf_init(&w.key, 0);
    char *err = NULL;
    arb_status st = arb__dataset_each_item(ds, count_coverage, &w, &err);
    free(err);
    if (st == ARB_OK) {
        w.c.n_groups = w.groups.n;
        w.c.n_languages = w.languages.n;
        for (size_t g = 0; g < w.groups.n; g++) w.c.n_incomplete += w.per_group[g] < w.languages.n;
    } else if (st != ARB_NOMEM) {
        memset(&w.c, 0, sizeof w.c);
    }
    free(w.per_group);
    arb__buf_free(&w.key);
    arb__strtab_free(&w.groups);
    arb__strtab_free(&w.languages);
    arb__strtab_free(&w.pairs);
    return w.c;
}
