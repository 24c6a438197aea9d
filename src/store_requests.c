/*
** store_requests.c -- compact storage of the requests of judge calls (calls.request), and the
** prompt length of a request counted once, when it is stored.
**
** A request body is ~3.5 KB of canonical JSON of which ~3 KB is template text that every call
** of a judge repeats, and the rest is the item's question and two answers that the store holds
** already (tables items and answers) and that the other order repeats. So a request is stored
** as a BLOB (a "compact request"), in one of two formats:
**
**     'Z' | flags | varint skeleton id | count of refs | refs...
**         | spliced only: varint place of each ref's text | 4 bytes: low 32 bits of XXH3-64
**           of the whole request
**         | zstd frame (spliced: may be absent)
**     flags: bit 0 set when the request asks for logprobs ("logprobs": true), so the
**            logprobs summary need not rebuild every request to count them; bit 1 set when
**            the zstd frame is stored without its 4-byte magic number (since schema 12);
**            bit 2 set for the spliced format (below; clear: the prefixed format)
**     ref: kind | [varint length + item id] | [varint length + model]
**          | 4 bytes: low 32 bits of XXH3-64 of the text
**     kind: bit 0 set for an answer (by the model that follows), clear for the item's question;
**           bit 1 set when the item is the previous ref's (its id is not repeated)
**
** Spliced (the usual format since 2026-11-27): the refs' texts, JSON-escaped exactly as
** arb__buf_json_string writes them (as jansson's dump does, which the request builder uses),
** are cut out of the request where it holds them; what is left is the template. The skeleton
** is a template (kept once in table request_texts, content-addressed); without a frame the
** request's template is the skeleton itself, else the frame is the template compressed with
** the skeleton as prefix (ZSTD_CCtx_refPrefix). The refs come in the order of their places,
** and each place is counted in the template from the previous one. The decoder escapes each
** text with the same function and puts it back, then checks the whole request's hash; a text
** is only cut where its escaped form is, so the rebuild needs nothing else. Storing a side-by-
** side call costs a few memcmp and the escaping and hashing of its texts (~20,000 instructions,
** against ~143,000 for the prefixed format's zstd pass), and its blob is ~48 bytes.
**
** Prefixed (every store before, and the fallback when a text is not in the request as the
** escaper writes it): the zstd frame is the request compressed with a prefix made of the
** skeleton -- a whole earlier request of the same judge model -- followed by the texts of the
** refs, raw, in order. The frame carries zstd's checksum of the request and its size.
**
** Either way a prefix or text that is not the one the request was stored with is detected (the
** frame's checksum, the request's hash), never turned into a wrong request: the decoder then
** tries the next text of the same 32-bit hash.
**
** Invariants:
**   - A stored request is either TEXT (as sent; stores before schema 11, and calls not yet
**     compacted) or a compact BLOB; arb_request(request) (an SQL function of the store's
**     connection) gives back the exact text in both cases, so every reader of calls.request
**     reads through it.
**   - What a ref points to can change (a dataset reloaded with another answer): the triggers
**     of schema 11 copy an item's question or an answer to table retired_texts before it is
**     changed or deleted, and a ref names its text by owner and hash, so the text a request
**     was compressed with is found again.
**   - Rows of request_texts are never changed or deleted.
**
** What it does not do: decide when a call is compacted (store.c: when its pairwise row names
** its item and answers, else at commit), or compute keys (judge.c: the key stays the hash of the
** request as sent, so a store's keys survive compaction).
*/
#define _GNU_SOURCE /* memmem */
#include "internal.h"
#include "store_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#ifdef ARB_HAVE_XXH_DISPATCH
/* XXH3_64bits becomes the library's CPU-dispatched version: the same hashes (test_store_requests
** pins them), with the widest vector unit the CPU has; the text hashes of every call it stores
** took ~4,750 instructions with the portable version (callgrind, 2026-11-28). */
#include <xxh_x86dispatch.h>
#endif
#include <zstd.h>
#include <zstd_errors.h>

/* zstd level for requests. With the prefix, on the benchmark set's requests (measured
** 2026-11-27): level 1 gives ~120-byte frames, level 3 ~70 bytes, level 4 ~35 bytes (whole
** compact requests 118 -> 82 bytes) in about the same CPU time; levels 5-9 no smaller. */
#define REQUEST_ZSTD_LEVEL 4
/* A frame larger than this share of the request means the skeleton no longer fits (another
** template): the request becomes a new skeleton of its model. */
#define NEW_SKELETON_SHARE 8
/* Requests shorter than this stay TEXT: a skeleton would cost more than it saves. */
#define MIN_COMPACT_BYTES 512
#define SKELETON_CACHE 16
/* Dataset texts read last: the two orders of an item are stored one after the other, so the
** second finds its question and answers here instead of in the tables. */
#define TEXT_CACHE 8
#define CURRENT_MODELS 8
#define COMPACT_TAG 'Z'
/* Flags (the byte after the tag): bit 0 asks for logprobs; bit 1 (schema 12 on): the zstd frame
** is stored without its magic number (frame_magic), the same 4 bytes in every request. */
#define FLAG_LOGPROBS 1
#define FLAG_MAGICLESS 2
#define FLAG_SPLICED 4
static const unsigned char frame_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};

enum {
    Q_QUESTION,
    Q_ANSWER,
    Q_RETIRED,
    Q_SKELETON_GET,
    Q_SKELETON_FIND,
    Q_SKELETON_PUT,
    Q_PROMPT_CHARS,
    Q_ASKS_LOGPROBS,
    Q__COUNT
};

static const char *const q_sql[Q__COUNT] = {
    [Q_QUESTION] = "SELECT arb_text(question) FROM items WHERE id = ?1",
    [Q_ANSWER] = "SELECT arb_text(answer) FROM answers WHERE item_id = ?1 AND model = ?2",
    [Q_RETIRED] = "SELECT arb_text(body) FROM retired_texts WHERE item_id = ?1 AND model = ?2",
    [Q_SKELETON_GET] = "SELECT body FROM request_texts WHERE id = ?1",
    [Q_SKELETON_FIND] = "SELECT id, body FROM request_texts WHERE hash = ?1",
    [Q_SKELETON_PUT] = "INSERT INTO request_texts(hash, body) VALUES (?1, ?2) RETURNING id",
    /* The audit's prompt length as it was computed before schema 11, for the requests the
    ** scanner below does not read (METHODS §5: code points of the messages' contents). */
    [Q_PROMPT_CHARS] = ("SELECT CAST(total(length(json_extract(m.value, '$.content'))) AS INTEGER)"
                        " FROM json_each(?1, '$.messages') m WHERE json_valid(?1)"),
    /* Whether a request asks for logprobs, as the logprobs summary counted it before. */
    [Q_ASKS_LOGPROBS] = "SELECT json_valid(?1) AND json_extract(?1, '$.logprobs') = 1",
};

typedef struct skeleton {
    long long id;
    char *body;
    size_t len;
} skeleton;

struct arb__reqz {
    sqlite3 *db;
    sqlite3_stmt *q[Q__COUNT];
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
    skeleton cache[SKELETON_CACHE]; /* skeletons read or written, round robin */
    size_t cache_next;
    struct {
        char *model;
        long long skeleton_id; /* whole requests (prefixed format) */
        long long template_id; /* requests without their refs' texts (spliced format) */
        unsigned char n_cuts, cut_ref[16]; /* where the last request's texts were cut: */
        size_t cut_at[16];                 /* ref index, place in the template, in order */
    } current[CURRENT_MODELS]; /* the skeletons new calls of a model are encoded against */
    struct {
        char *item_id, *model; /* model NULL: the question */
        char *text;
        size_t len;
        uint32_t hash;
    } texts[TEXT_CACHE];       /* round robin; a text here was current when read, and the
                                  retirement triggers keep it findable after a change */
    size_t texts_next;
    char *prefix;              /* scratch: skeleton + texts of the refs (decoder, and the
                                  encoder's texts read by SQL) */
    size_t prefix_cap;
    arb__buf scratch;          /* encoder: the prefix of the prefixed format; decoder: a
                                  decompressed template */
    arb__buf escaped;          /* the refs' texts as JSON string contents */
    arb__buf holey;            /* encoder: the request without its refs' texts; decoder: the
                                  request rebuilt */
    /* while arb__reqz_decode_given runs: the current texts its caller read (borrowed) */
    const arb__request_ref *given;
    size_t n_given;
    long long decoded, text_reads; /* requests rebuilt, dataset texts read by SQL to do it */
    char errmsg[256];
};

static int request_asks_logprobs(arb__reqz *z, const char *request);
static int append_current(arb__reqz *z, const char *item_id, const char *model, size_t *len,
                          uint32_t *hash);
static int request_asks_logprobs_sql(arb__reqz *z, const char *request);

/* ---- small helpers ----------------------------------------------------------------------- */

static int put_varint(unsigned char *out, uint64_t v)
{
    int n = 0;
    do {
        unsigned char b = v & 0x7f;
        v >>= 7;
        out[n++] = (unsigned char)(b | (v ? 0x80 : 0));
    } while (v);
    return n;
}

/* Reads a varint at *p (before end); returns 0, or -1 when truncated. */
static int get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        unsigned char b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

static uint32_t text_hash(const char *text, size_t len) { return (uint32_t)XXH3_64bits(text, len); }

static sqlite3_stmt *stmt(arb__reqz *z, int which)
{
    if (!z->q[which] &&
        sqlite3_prepare_v3(z->db, q_sql[which], -1, SQLITE_PREPARE_PERSISTENT, &z->q[which],
                           NULL) != SQLITE_OK) {
        snprintf(z->errmsg, sizeof z->errmsg, "cannot prepare: %s", sqlite3_errmsg(z->db));
        return NULL;
    }
    return z->q[which];
}

static int grow_prefix(arb__reqz *z, size_t need)
{
    if (need <= z->prefix_cap) return 0;
    size_t cap = z->prefix_cap ? z->prefix_cap : 8192;
    while (cap < need) cap *= 2;
    char *p = realloc(z->prefix, cap);
    if (!p) return -1;
    z->prefix = p;
    z->prefix_cap = cap;
    return 0;
}

/* ---- create / destroy ---------------------------------------------------------------------- */

/* See store_requests.h. */
arb__reqz *arb__reqz_create(sqlite3 *db)
{
    arb__reqz *z = calloc(1, sizeof *z);
    if (!z) return NULL;
    z->db = db;
    arb__buf_init(&z->scratch, 0);
    arb__buf_init(&z->escaped, 0);
    arb__buf_init(&z->holey, 0);
    z->cctx = ZSTD_createCCtx();
    z->dctx = ZSTD_createDCtx();
    /* Set once: a reset of the session keeps them (per call they cost as much as a frame). */
    if (!z->cctx || !z->dctx ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel,
                                            REQUEST_ZSTD_LEVEL)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1))) {
        arb__reqz_destroy(z);
        return NULL;
    }
    return z;
}

/* See store_requests.h. */
void arb__reqz_destroy(arb__reqz *z)
{
    if (!z) return;
    for (int i = 0; i < Q__COUNT; i++) sqlite3_finalize(z->q[i]);
    ZSTD_freeCCtx(z->cctx);
    ZSTD_freeDCtx(z->dctx);
    arb__reqz_forget(z);
    free(z->prefix);
    arb__buf_free(&z->scratch);
    arb__buf_free(&z->escaped);
    arb__buf_free(&z->holey);
    free(z);
}

/* See store_requests.h. */
const char *arb__reqz_errmsg(const arb__reqz *z) { return z ? z->errmsg : "out of memory"; }

/* See store_requests.h. */
void arb__reqz_forget(arb__reqz *z)
{
    if (!z) return;
    for (size_t i = 0; i < CURRENT_MODELS; i++) {
        free(z->current[i].model);
        z->current[i].model = NULL;
    }
    for (size_t i = 0; i < SKELETON_CACHE; i++) {
        free(z->cache[i].body);
        z->cache[i].body = NULL;
    }
    for (size_t i = 0; i < TEXT_CACHE; i++) {
        free(z->texts[i].item_id);
        free(z->texts[i].model);
        free(z->texts[i].text);
        z->texts[i].item_id = z->texts[i].model = z->texts[i].text = NULL;
    }
}

/* ---- skeletons --------------------------------------------------------------------------- */

static skeleton *cache_put(arb__reqz *z, long long id, const char *body, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy) return NULL;
    memcpy(copy, body, len);
    copy[len] = '\0';
    skeleton *sk = &z->cache[z->cache_next];
    z->cache_next = (z->cache_next + 1) % SKELETON_CACHE;
    free(sk->body);
    *sk = (skeleton){.id = id, .body = copy, .len = len};
    return sk;
}

/* The skeleton with this id (borrowed from the cache), or NULL with z->errmsg set. */
static const skeleton *skeleton_get(arb__reqz *z, long long id)
{
    for (size_t i = 0; i < SKELETON_CACHE; i++)
        if (z->cache[i].body && z->cache[i].id == id) return &z->cache[i];
    sqlite3_stmt *q = stmt(z, Q_SKELETON_GET);
    if (!q) return NULL;
    sqlite3_bind_int64(q, 1, id);
    const skeleton *sk = NULL;
    if (sqlite3_step(q) == SQLITE_ROW) {
        sk = cache_put(z, id, (const char *)sqlite3_column_blob(q, 0),
                       (size_t)sqlite3_column_bytes(q, 0));
        if (!sk) snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
    } else {
        snprintf(z->errmsg, sizeof z->errmsg, "request text %lld is missing", id);
    }
    sqlite3_reset(q);
    return sk;
}

/* Stores body as a skeleton (or finds the identical one); returns it (borrowed), NULL on
** failure with z->errmsg set. */
static const skeleton *skeleton_put(arb__reqz *z, const char *body, size_t len)
{
    long long hash = (long long)XXH3_64bits(body, len);
    sqlite3_stmt *q = stmt(z, Q_SKELETON_FIND);
    if (!q) return NULL;
    sqlite3_bind_int64(q, 1, hash);
    long long id = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        if ((size_t)sqlite3_column_bytes(q, 1) == len &&
            !memcmp(sqlite3_column_blob(q, 1), body, len)) {
            id = sqlite3_column_int64(q, 0);
            break;
        }
    sqlite3_reset(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) goto db_error;
    if (!id) {
        if (!(q = stmt(z, Q_SKELETON_PUT))) return NULL;
        sqlite3_bind_int64(q, 1, hash);
        sqlite3_bind_text(q, 2, body, (int)len, SQLITE_STATIC);
        rc = sqlite3_step(q);
        if (rc == SQLITE_ROW) id = sqlite3_column_int64(q, 0);
        if (rc == SQLITE_ROW) rc = sqlite3_step(q);
        sqlite3_reset(q);
        if (rc != SQLITE_DONE) goto db_error;
    }
    for (size_t i = 0; i < SKELETON_CACHE; i++)
        if (z->cache[i].body && z->cache[i].id == id) return &z->cache[i];
    const skeleton *sk = cache_put(z, id, body, len);
    if (!sk) snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
    return sk;
db_error:
    snprintf(z->errmsg, sizeof z->errmsg, "cannot store a request text: %s",
             sqlite3_errmsg(z->db));
    return NULL;
}

/* The slot of model in z->current (a free or the oldest one when absent). */
static size_t current_slot(arb__reqz *z, const char *model, int *found)
{
    for (size_t i = 0; i < CURRENT_MODELS; i++)
        if (z->current[i].model && !strcmp(z->current[i].model, model)) {
            *found = 1;
            return i;
        }
    *found = 0;
    for (size_t i = 0; i < CURRENT_MODELS; i++)
        if (!z->current[i].model) return i;
    return 0;
}

/* ---- refs ---------------------------------------------------------------------------------- */

/* Remembers a text just read (best effort: out of memory only skips it). */
static void remember_text(arb__reqz *z, const char *item_id, const char *model, const char *t,
                          size_t n, uint32_t hash)
{
    size_t k = z->texts_next;
    z->texts_next = (k + 1) % TEXT_CACHE;
    free(z->texts[k].item_id);
    free(z->texts[k].model);
    free(z->texts[k].text);
    z->texts[k].item_id = arb__strdup(item_id);
    z->texts[k].model = model ? arb__strdup(model) : NULL;
    z->texts[k].text = arb__strndup(t, n);
    z->texts[k].len = n;
    z->texts[k].hash = hash;
    if (!z->texts[k].item_id || !z->texts[k].text || (model && !z->texts[k].model)) {
        free(z->texts[k].item_id);
        free(z->texts[k].model);
        free(z->texts[k].text);
        z->texts[k].item_id = z->texts[k].model = z->texts[k].text = NULL;
    }
}

/* Appends the text of ref (question or answer) to the prefix at *len -- the one remembered,
** else the current one in the tables; *hash gets its hash. Returns 1 when the text exists, 0
** when it does not (nothing appended), -1 on error. For the encoder: a remembered text may
** have been replaced since, which the hash tells the decoder (retired_texts keeps it). */
static int append_known(arb__reqz *z, const char *item_id, const char *model, size_t *len,
                        uint32_t *hash)
{
    for (size_t k = 0; k < TEXT_CACHE; k++) {
        if (!z->texts[k].item_id || strcmp(z->texts[k].item_id, item_id) ||
            (model ? !z->texts[k].model || strcmp(z->texts[k].model, model) : !!z->texts[k].model))
            continue;
        if (grow_prefix(z, *len + z->texts[k].len)) {
            snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
            return -1;
        }
        memcpy(z->prefix + *len, z->texts[k].text, z->texts[k].len);
        *len += z->texts[k].len;
        *hash = z->texts[k].hash;
        return 1;
    }
    size_t start = *len;
    int have = append_current(z, item_id, model, len, hash);
    if (have > 0) remember_text(z, item_id, model, z->prefix + start, *len - start, *hash);
    return have;
}

/* Appends the current text of ref (question or answer) to the prefix at *len; *hash gets its
** hash. Returns 1 when the text exists, 0 when it does not (nothing appended), -1 on error. */
static int append_current(arb__reqz *z, const char *item_id, const char *model, size_t *len,
                          uint32_t *hash)
{
    for (size_t i = 0; i < z->n_given; i++) {
        const arb__request_ref *g = &z->given[i];
        if (strcmp(g->item_id, item_id) ||
            (model ? !g->model || strcmp(g->model, model) : g->model != NULL))
            continue;
        size_t n = strlen(g->text);
        if (grow_prefix(z, *len + n)) {
            snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
            return -1;
        }
        memcpy(z->prefix + *len, g->text, n);
        *len += n;
        *hash = text_hash(g->text, n);
        return 1;
    }
    z->text_reads++;
    sqlite3_stmt *q = stmt(z, model ? Q_ANSWER : Q_QUESTION);
    if (!q) return -1;
    arb__store_bind_text(q, 1, item_id);
    if (model) arb__store_bind_text(q, 2, model);
    int rc = sqlite3_step(q), have = 0;
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(q, 0);
        size_t n = (size_t)sqlite3_column_bytes(q, 0);
        if (t && !grow_prefix(z, *len + n)) {
            memcpy(z->prefix + *len, t, n);
            *len += n;
            *hash = text_hash(t, n);
            have = 1;
        } else {
            snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
            have = -1;
        }
    } else if (rc != SQLITE_DONE) {
        snprintf(z->errmsg, sizeof z->errmsg, "cannot read a text: %s", sqlite3_errmsg(z->db));
        have = -1;
    }
    sqlite3_reset(q);
    return have;
}

/* Appends the k-th text of ref whose hash is hash: the current one first (when its hash is
** hash), then the retired ones with that hash, oldest first. Several can share a 32-bit hash
** (a changed answer may collide with the one it replaced, by chance or crafted: answers are
** model outputs), so the decoder tries the next one when the frame's checksum says the
** prefix was wrong. Returns 1 when appended, 0 when there is no k-th text, -1 on error. */
static int append_by_hash(arb__reqz *z, const char *item_id, const char *model, uint32_t hash,
                          unsigned k, size_t *len)
{
    size_t start = *len;
    uint32_t h = 0;
    int have = append_current(z, item_id, model, len, &h);
    if (have < 0) return -1;
    if (have && h == hash) {
        if (k == 0) return 1;
        k--;
    }
    *len = start;
    sqlite3_stmt *q = stmt(z, Q_RETIRED);
    if (!q) return -1;
    arb__store_bind_text(q, 1, item_id);
    arb__store_bind_text(q, 2, model ? model : "");
    z->text_reads++;
    int rc, found = 0;
    while (!found && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(q, 0);
        size_t n = (size_t)sqlite3_column_bytes(q, 0);
        if (!t || text_hash(t, n) != hash) continue;
        if (k) {
            k--;
            continue;
        }
        if (grow_prefix(z, *len + n)) {
            sqlite3_reset(q);
            snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
            return -1;
        }
        memcpy(z->prefix + *len, t, n);
        *len += n;
        found = 1;
    }
    sqlite3_reset(q);
    return found;
}

/* ---- encode -------------------------------------------------------------------------------- */

/* Compresses src[0..len) against prefix[0..plen) into out (cap bytes). Returns the frame size,
** or 0 on failure. */
static size_t compress_with(arb__reqz *z, const char *src, size_t len, const char *prefix,
                            size_t plen, unsigned char *out, size_t cap)
{
    ZSTD_CCtx_reset(z->cctx, ZSTD_reset_session_only);
    if (ZSTD_isError(ZSTD_CCtx_refPrefix(z->cctx, prefix, plen))) return 0;
    size_t n = ZSTD_compress2(z->cctx, out, cap, src, len);
    return ZSTD_isError(n) ? 0 : n;
}

/* Drops the frame's magic number (the same 4 bytes in every frame: the decoder puts them back)
** at out[h..h+*frame); sets FLAG_MAGICLESS in out[1]. */
static void drop_magic(unsigned char *out, size_t h, size_t *frame)
{
    if (*frame > sizeof frame_magic && !memcmp(out + h, frame_magic, sizeof frame_magic)) {
        memmove(out + h, out + h + sizeof frame_magic, *frame - sizeof frame_magic);
        *frame -= sizeof frame_magic;
        out[1] |= FLAG_MAGICLESS;
    }
}

/* Makes model's current skeleton (template: the spliced format's) id. 0, or -1 out of memory. */
static int set_current(arb__reqz *z, const char *model, int template, long long id)
{
    int found = 0;
    size_t slot = current_slot(z, model, &found);
    if (!found) {
        free(z->current[slot].model);
        z->current[slot].model = arb__strdup(model);
        z->current[slot].skeleton_id = z->current[slot].template_id = 0;
        if (!z->current[slot].model) return -1;
    }
    if (template) z->current[slot].template_id = id;
    else z->current[slot].skeleton_id = id;
    return 0;
}

/* Model's current skeleton (template: the spliced format's), borrowed; NULL when it has none
** (or on error: z->errmsg set, *failed = 1). */
static const skeleton *current_skeleton(arb__reqz *z, const char *model, int template,
                                        int *failed)
{
    int found = 0;
    size_t slot = current_slot(z, model, &found);
    long long id = !found ? 0 : template ? z->current[slot].template_id
                                         : z->current[slot].skeleton_id;
    const skeleton *sk = id ? skeleton_get(z, id) : NULL;
    *failed = id && !sk;
    return sk;
}

/* The text of one ref, for the encoder. */
typedef struct ref_text {
    const char *raw; /* as stored (borrowed) */
    size_t len;
    uint32_t hash;
    int have;        /* the text exists and is not empty */
    size_t esc, esc_len; /* its JSON string content in z->escaped */
    size_t pos;      /* the spliced format: where it is in the request */
} ref_text;

/* Writes ref's header part at out[*h]: kind, item id unless the previous ref's, model, hash. */
static void put_ref(unsigned char *out, size_t *h, const arb__request_ref *ref, uint32_t hash,
                    const char **last_item)
{
    size_t at = *h;
    int same_item = *last_item && !strcmp(ref->item_id, *last_item);
    out[at++] = (unsigned char)((ref->model ? 1 : 0) | (same_item ? 2 : 0));
    size_t n = strlen(ref->item_id);
    if (!same_item) {
        at += (size_t)put_varint(out + at, n);
        memcpy(out + at, ref->item_id, n);
        at += n;
    }
    *last_item = ref->item_id;
    if (ref->model) {
        n = strlen(ref->model);
        at += (size_t)put_varint(out + at, n);
        memcpy(out + at, ref->model, n);
        at += n;
    }
    for (int b = 0; b < 4; b++) out[at++] = (unsigned char)(hash >> (8 * b));
    *h = at;
}

/* Room for the header of a compact request naming refs. */
static size_t header_room(const arb__request_ref *refs, size_t n_refs)
{
    size_t room = 24 + n_refs * 32;
    for (size_t i = 0; i < n_refs; i++)
        room += strlen(refs[i].item_id) + (refs[i].model ? strlen(refs[i].model) : 0);
    return room;
}

/* The prefixed format (the only one before the spliced format, and its fallback): request
** compressed against its model's skeleton followed by the refs' texts. 1, or -1 (z->errmsg). */
static int encode_prefixed(arb__reqz *z, const char *model, const char *request, size_t len,
                           int asks_logprobs, const arb__request_ref *refs,
                           const ref_text *texts, size_t n_refs, unsigned char **out,
                           size_t *out_len)
{
    int failed = 0;
    const skeleton *sk = current_skeleton(z, model, 0, &failed);
    if (failed) return -1;
    int fresh = 0;
    if (!sk) {
        if (!(sk = skeleton_put(z, request, len))) return -1;
        fresh = 1;
    }
    size_t cap = header_room(refs, n_refs) + ZSTD_compressBound(len);
    unsigned char *buf = malloc(cap);
    if (!buf) goto nomem;
    for (int attempt = 0; attempt < 2; attempt++) {
        arb__buf_reset(&z->scratch);
        if (arb__buf_append(&z->scratch, sk->body, sk->len)) goto nomem;
        size_t h = 0;
        buf[h++] = COMPACT_TAG;
        buf[h++] = (unsigned char)(asks_logprobs ? FLAG_LOGPROBS : 0);
        h += (size_t)put_varint(buf + h, (uint64_t)sk->id);
        unsigned char *count = buf + h++;
        *count = 0;
        const char *last_item = NULL;
        for (size_t i = 0; i < n_refs; i++) {
            if (!texts[i].have) continue; /* absent or empty: nothing to refer to */
            if (arb__buf_append(&z->scratch, texts[i].raw, texts[i].len)) goto nomem;
            put_ref(buf, &h, &refs[i], texts[i].hash, &last_item);
            (*count)++;
        }
        size_t frame = compress_with(z, request, len, z->scratch.data, z->scratch.len, buf + h,
                                     cap - h);
        if (!frame) {
            snprintf(z->errmsg, sizeof z->errmsg, "cannot compress a request");
            goto fail;
        }
        if (fresh || frame * NEW_SKELETON_SHARE <= len || attempt == 1) {
            drop_magic(buf, h, &frame);
            if (set_current(z, model, 0, sk->id)) goto nomem;
            *out = buf;
            *out_len = h + frame;
            return 1;
        }
        /* Another template than the skeleton's: this request becomes the model's skeleton. */
        if (!(sk = skeleton_put(z, request, len))) goto fail;
        fresh = 1;
    }
nomem:
    snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
fail:
    free(buf);
    return -1;
}

/* The first place at or after from where text[0..n) is in hay[0..len), or (size_t)-1. memmem
** looks for a head of the text (glibc's memmem runs a slower algorithm for long needles). */
static size_t find_text(const char *hay, size_t len, size_t from, const char *text, size_t n)
{
    size_t head = n < 64 ? n : 64;
    while (from < len && len - from >= n) {
        const char *hit = memmem(hay + from, len - from, text, head);
        if (!hit) break;
        size_t at = (size_t)(hit - hay);
        if (len - at < n) break;
        if (!memcmp(hit + head, text + head, n - head)) return at;
        from = at + 1;
    }
    return (size_t)-1;
}

/* Whether the texts are where the model's last request had its own (the same template, so
** the same places, shifted by the lengths of the texts before): memcmp checks them, cheaper
** than looking for them, and a text that is also elsewhere (a short answer that the template
** holds too) is cut at the same place as before. Sets order and the texts' places. */
static int predict_cuts(const arb__reqz *z, size_t slot, const char *request, size_t len,
                        ref_text *texts, size_t n_refs, size_t n_holes, size_t *order)
{
    if (!z->current[slot].template_id || z->current[slot].n_cuts != n_holes) return 0;
    size_t shift = 0;
    for (size_t k = 0; k < n_holes; k++) {
        size_t i = z->current[slot].cut_ref[k];
        if (i >= n_refs || !texts[i].have) return 0;
        size_t at = z->current[slot].cut_at[k] + shift;
        if (at > len || len - at < texts[i].esc_len ||
            memcmp(request + at, z->escaped.data + texts[i].esc, texts[i].esc_len))
            return 0;
        shift += texts[i].esc_len;
    }
    /* every text is there (n_holes refs have a text, each named once above at increasing
    ** places, so the cuts are the refs with a text) */
    shift = 0;
    for (size_t k = 0; k < n_holes; k++) {
        size_t i = z->current[slot].cut_ref[k];
        texts[i].pos = z->current[slot].cut_at[k] + shift;
        order[k] = i;
        shift += texts[i].esc_len;
    }
    return 1;
}

/* The spliced format: the refs' texts, JSON-escaped, are cut out of the request where it holds
** them, and what is left (the template) is the model's template skeleton, or compressed
** against it. 1, 0 when a text is not in the request as the escaper writes it (the caller
** uses the prefixed format), -1 on error (z->errmsg). */
static int encode_spliced(arb__reqz *z, const char *model, const char *request, size_t len,
                          int asks_logprobs, const arb__request_ref *refs, ref_text *texts,
                          size_t n_refs, unsigned char **out, size_t *out_len)
{
    size_t order[16], n_holes = 0;
    unsigned char *buf = NULL;
    arb__buf_reset(&z->escaped);
    for (size_t i = 0; i < n_refs; i++) {
        if (!texts[i].have) continue;
        size_t at = z->escaped.len;
        if (arb__buf_json_string(&z->escaped, texts[i].raw, texts[i].len)) goto nomem;
        texts[i].esc = at + 1; /* without the quotes */
        texts[i].esc_len = z->escaped.len - at - 2;
        /* longest first: a shorter text inside a longer one (the question quoted in an
        ** answer) is found where it stands alone */
        size_t k = n_holes++;
        while (k && texts[order[k - 1]].esc_len < texts[i].esc_len) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    int found = 0;
    size_t slot = current_slot(z, model, &found);
    if (found && predict_cuts(z, slot, request, len, texts, n_refs, n_holes, order))
        goto cut;
    for (size_t k = 0; k < n_holes; k++) {
        ref_text *t = &texts[order[k]];
        const char *esc = z->escaped.data + t->esc;
        size_t from = 0, at;
        for (;;) {
            at = find_text(request, len, from, esc, t->esc_len);
            if (at == (size_t)-1) return 0;
            size_t clash = 0; /* the end of a text already cut that this place overlaps */
            for (size_t j = 0; j < k && !clash; j++) {
                const ref_text *u = &texts[order[j]];
                if (at < u->pos + u->esc_len && u->pos < at + t->esc_len) clash = u->pos + u->esc_len;
            }
            if (!clash) break;
            from = clash;
        }
        t->pos = at;
    }
    /* in the order of the request */
    for (size_t k = 1; k < n_holes; k++)
        for (size_t j = k; j && texts[order[j - 1]].pos > texts[order[j]].pos; j--) {
            size_t swap = order[j];
            order[j] = order[j - 1];
            order[j - 1] = swap;
        }
cut:
    arb__buf_reset(&z->holey);
    size_t from = 0;
    for (size_t k = 0; k < n_holes; k++) {
        const ref_text *t = &texts[order[k]];
        if (arb__buf_append(&z->holey, request + from, t->pos - from)) goto nomem;
        from = t->pos + t->esc_len;
    }
    if (arb__buf_append(&z->holey, request + from, len - from)) goto nomem;
    const char *tmpl = z->holey.data;
    size_t tlen = z->holey.len;

    size_t cap = header_room(refs, n_refs) + n_refs * 10 + ZSTD_compressBound(tlen);
    buf = malloc(cap);
    if (!buf) goto nomem;
    int failed = 0;
    const skeleton *sk = current_skeleton(z, model, 1, &failed);
    if (failed) goto fail;
    size_t h = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        h = 0;
        buf[h++] = COMPACT_TAG;
        buf[h++] = (unsigned char)((asks_logprobs ? FLAG_LOGPROBS : 0) | FLAG_SPLICED);
        h += (size_t)put_varint(buf + h, (uint64_t)(sk ? sk->id : 0));
        buf[h++] = (unsigned char)n_holes;
        const char *last_item = NULL;
        for (size_t k = 0; k < n_holes; k++)
            put_ref(buf, &h, &refs[order[k]], texts[order[k]].hash, &last_item);
        size_t at = 0, cut = 0; /* where the previous text was in the template; bytes cut */
        for (size_t k = 0; k < n_holes; k++) {
            const ref_text *t = &texts[order[k]];
            h += (size_t)put_varint(buf + h, t->pos - cut - at);
            at = t->pos - cut;
            cut += t->esc_len;
        }
        uint32_t sum = text_hash(request, len);
        for (int b = 0; b < 4; b++) buf[h++] = (unsigned char)(sum >> (8 * b));
        if (sk && sk->len == tlen && !memcmp(sk->body, tmpl, tlen)) break; /* no frame */
        if (sk) {
            size_t frame = compress_with(z, tmpl, tlen, sk->body, sk->len, buf + h, cap - h);
            if (!frame) {
                snprintf(z->errmsg, sizeof z->errmsg, "cannot compress a request");
                goto fail;
            }
            if (frame * NEW_SKELETON_SHARE <= tlen || attempt == 1) {
                drop_magic(buf, h, &frame);
                h += frame;
                break;
            }
        }
        /* The first request of its model, or another template than the skeleton's: this
        ** template becomes the model's (found again if it was one before). */
        if (!(sk = skeleton_put(z, tmpl, tlen))) goto fail;
    }
    if (set_current(z, model, 1, sk->id)) goto nomem;
    slot = current_slot(z, model, &found);
    z->current[slot].n_cuts = (unsigned char)n_holes;
    for (size_t k = 0, cut = 0; k < n_holes; k++) {
        z->current[slot].cut_ref[k] = (unsigned char)order[k];
        z->current[slot].cut_at[k] = texts[order[k]].pos - cut;
        cut += texts[order[k]].esc_len;
    }
    *out = buf;
    *out_len = h;
    return 1;
nomem:
    snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
fail:
    free(buf);
    return -1;
}

/* See store_requests.h. */
int arb__reqz_encode(arb__reqz *z, const char *model, const char *request, int asks_logprobs,
                     const arb__request_ref *refs, size_t n_refs, unsigned char **out,
                     size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    size_t len = strlen(request);
    /* Only a request whose dataset texts are named (a pairwise call) is compacted: the other
    ** protocols' calls are few beside them and stay TEXT. */
    if (len < MIN_COMPACT_BYTES || n_refs == 0 || n_refs > 16) return 0;
    if (!model) model = "";
    /* read in the request only when its builder did not tell: the request's keys are read up to
    ** its end (~5,500 instructions for a typical 3 KB request, most in skipping its messages) */
    if (asks_logprobs < 0 && (asks_logprobs = request_asks_logprobs(z, request)) < 0) return -1;
    ref_text texts[16];
    size_t offset[16], plen = 0; /* texts read by SQL go to z->prefix, which may move */
    for (size_t i = 0; i < n_refs; i++) {
        ref_text *t = &texts[i];
        *t = (ref_text){0};
        offset[i] = (size_t)-1;
        if (refs[i].text) { /* the caller's copy of the stored text */
            t->raw = refs[i].text;
            t->len = strlen(refs[i].text);
            t->hash = text_hash(t->raw, t->len);
            t->have = t->len > 0;
            continue;
        }
        size_t before = plen;
        int have = append_known(z, refs[i].item_id, refs[i].model, &plen, &t->hash);
        if (have < 0) return -1;
        offset[i] = before;
        t->len = plen - before;
        t->have = have && t->len > 0;
    }
    for (size_t i = 0; i < n_refs; i++)
        if (offset[i] != (size_t)-1) texts[i].raw = z->prefix + offset[i];
    int got = encode_spliced(z, model, request, len, asks_logprobs, refs, texts, n_refs, out,
                             out_len);
    if (got) return got;
    return encode_prefixed(z, model, request, len, asks_logprobs, refs, texts, n_refs, out,
                           out_len);
}

/* ---- decode -------------------------------------------------------------------------------- */

/* A reference to a question or an answer, as a compact request names it. */
typedef struct decoded_ref {
    char *item, *model; /* model NULL: the item's question */
    uint32_t hash;
    unsigned choice;    /* which text of that hash (append_by_hash) */
} decoded_ref;

/* Reads the refs after the skeleton id; returns their number, or -1 when damaged (refs owned
** by the caller either way: free_refs). Names have no length limit: item ids and model names
** are whatever the dataset holds. */
static int read_refs(const unsigned char **pp, const unsigned char *end, decoded_ref *refs,
                     unsigned n_refs)
{
    const unsigned char *p = *pp;
    uint64_t n = 0;
    for (unsigned i = 0; i < n_refs; i++) {
        if (p >= end) return -1;
        int kind = *p++;
        if (kind & 2) {
            if (!i || !(refs[i].item = arb__strdup(refs[i - 1].item))) return -1;
        } else {
            if (get_varint(&p, end, &n) || (size_t)(end - p) < n) return -1;
            if (!(refs[i].item = malloc((size_t)n + 1))) return -1;
            memcpy(refs[i].item, p, (size_t)n);
            refs[i].item[n] = '\0';
            p += n;
        }
        if (kind & 1) {
            if (get_varint(&p, end, &n) || (size_t)(end - p) < n) return -1;
            if (!(refs[i].model = malloc((size_t)n + 1))) return -1;
            memcpy(refs[i].model, p, (size_t)n);
            refs[i].model[n] = '\0';
            p += n;
        }
        if (end - p < 4) return -1;
        refs[i].hash = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                       (uint32_t)p[3] << 24;
        p += 4;
    }
    *pp = p;
    return (int)n_refs;
}

static void free_refs(decoded_ref *refs, unsigned n_refs)
{
    for (unsigned i = 0; i < n_refs; i++) {
        free(refs[i].item);
        free(refs[i].model);
    }
}

/* Tries so many combinations of same-hash texts at most before calling a request lost. */
#define MAX_HASH_TRIES 64

/* See store_internal.h. */
char *arb__reqz_decode_given(arb__reqz *z, const unsigned char *blob, size_t len,
                             const arb__request_ref *current, size_t n_current, size_t *out_len)
{
    z->given = current;
    z->n_given = n_current;
    char *text = arb__reqz_decode(z, blob, len, out_len);
    z->given = NULL;
    z->n_given = 0;
    return text;
}

/* See store_internal.h. */
void arb__reqz_counts(const arb__reqz *z, long long *decoded, long long *text_reads)
{
    *decoded = z ? z->decoded : 0;
    *text_reads = z ? z->text_reads : 0;
}

/* The spliced format's rebuild from template[0..tlen): the refs' texts (in z->prefix at
** offsets start[i]..start[i+1]) escaped into it at the places gaps[] says, into z->holey.
** 1 when the result's hash is sum, 0 when not (another text of the same hash may be the one),
** -1 on error (z->errmsg). */
static int splice(arb__reqz *z, const char *template, size_t tlen, const uint64_t *gaps,
                  const size_t *start, unsigned n_refs, uint32_t sum)
{
    arb__buf_reset(&z->holey);
    size_t at = 0;
    for (unsigned i = 0; i < n_refs; i++) {
        if (gaps[i] > tlen - at) {
            snprintf(z->errmsg, sizeof z->errmsg, "a compact request is damaged");
            return -1;
        }
        if (arb__buf_append(&z->holey, template + at, (size_t)gaps[i])) goto nomem;
        at += (size_t)gaps[i];
        size_t mark = z->holey.len;
        if (arb__buf_json_string(&z->holey, z->prefix + start[i], start[i + 1] - start[i]))
            goto nomem;
        /* the string's content, without its quotes */
        memmove(z->holey.data + mark, z->holey.data + mark + 1, z->holey.len - mark - 2);
        z->holey.len -= 2;
    }
    if (arb__buf_append(&z->holey, template + at, tlen - at)) goto nomem;
    return text_hash(z->holey.data, z->holey.len) == sum;
nomem:
    snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
    return -1;
}

/* See store_requests.h. */
char *arb__reqz_decode(arb__reqz *z, const unsigned char *blob, size_t len, size_t *out_len)
{
    z->decoded++;
    const unsigned char *p = blob, *end = blob + len;
    uint64_t skel_id = 0;
    decoded_ref refs[256];
    uint64_t gaps[256];
    size_t start[257];
    unsigned n_refs = 0;
    uint32_t sum = 0;
    char *text = NULL;
    char *frame_copy = NULL; /* a magicless frame with its magic number put back */
    const char *template = NULL; /* spliced: the request without the refs' texts */
    size_t tlen = 0;
    if (len < 4 || *p++ != COMPACT_TAG) goto bad;
    int flags = *p++;
    int magicless = (flags & FLAG_MAGICLESS) != 0, spliced = (flags & FLAG_SPLICED) != 0;
    if (get_varint(&p, end, &skel_id) || p >= end) goto bad;
    const skeleton *sk = skeleton_get(z, (long long)skel_id);
    if (!sk) return NULL;
    n_refs = *p++;
    memset(refs, 0, n_refs * sizeof *refs);
    if (read_refs(&p, end, refs, n_refs) < 0) goto bad;
    if (spliced) {
        for (unsigned i = 0; i < n_refs; i++)
            if (get_varint(&p, end, &gaps[i])) goto bad;
        if (end - p < 4) goto bad;
        sum = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        p += 4;
    }
    if (magicless) {
        size_t flen = (size_t)(end - p);
        if (!(frame_copy = malloc(flen + sizeof frame_magic))) goto nomem;
        memcpy(frame_copy, frame_magic, sizeof frame_magic);
        memcpy(frame_copy + sizeof frame_magic, p, flen);
        p = (const unsigned char *)frame_copy;
        end = p + flen + sizeof frame_magic;
    }
    if (spliced && p == end) { /* no frame: the template is the skeleton */
        template = sk->body;
        tlen = sk->len;
    } else {
        unsigned long long size = ZSTD_getFrameContentSize(p, (size_t)(end - p));
        if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN ||
            size > (1u << 30))
            goto bad;
        if (!(text = malloc((size_t)size + 1))) goto nomem;
        if (spliced) { /* the template, compressed against the skeleton */
            ZSTD_DCtx_reset(z->dctx, ZSTD_reset_session_only);
            size_t got = ZSTD_isError(ZSTD_DCtx_refPrefix(z->dctx, sk->body, sk->len))
                             ? (size_t)-1
                             : ZSTD_decompressDCtx(z->dctx, text, (size_t)size, p,
                                                   (size_t)(end - p));
            if (ZSTD_isError(got) || got != size) {
                snprintf(z->errmsg, sizeof z->errmsg, "a compact request does not decompress (%s)",
                         ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong size");
                goto fail;
            }
            template = text;
            tlen = got;
        }
    }
    for (unsigned tries = 0; tries < MAX_HASH_TRIES; tries++) {
        size_t plen = 0;
        if (!spliced) { /* the prefixed format: skeleton, then the refs' texts */
            if (grow_prefix(z, sk->len)) goto nomem;
            memcpy(z->prefix, sk->body, sk->len);
            plen = sk->len;
        }
        unsigned i = 0;
        for (; i < n_refs; i++) {
            start[i] = plen;
            int got = append_by_hash(z, refs[i].item, refs[i].model, refs[i].hash,
                                     refs[i].choice, &plen);
            if (got < 0) goto fail;
            if (!got) break;
        }
        start[i] = plen;
        if (i == n_refs && spliced) {
            int right = splice(z, template, tlen, gaps, start, n_refs, sum);
            if (right < 0) goto fail;
            if (right) {
                free(text);
                free(frame_copy);
                free_refs(refs, n_refs);
                *out_len = z->holey.len;
                return arb__buf_steal(&z->holey);
            }
            if (!n_refs) {
                snprintf(z->errmsg, sizeof z->errmsg, "a compact request does not decompress (%s)",
                         "wrong checksum");
                goto fail;
            }
        } else if (i == n_refs) {
            size_t size = (size_t)ZSTD_getFrameContentSize(p, (size_t)(end - p));
            ZSTD_DCtx_reset(z->dctx, ZSTD_reset_session_only);
            size_t got = ZSTD_isError(ZSTD_DCtx_refPrefix(z->dctx, z->prefix, plen))
                             ? (size_t)-1
                             : ZSTD_decompressDCtx(z->dctx, text, size, p, (size_t)(end - p));
            if (!ZSTD_isError(got) && got == size) {
                text[got] = '\0';
                *out_len = got;
                free_refs(refs, n_refs);
                free(frame_copy);
                return text;
            }
            if (ZSTD_getErrorCode(got) != ZSTD_error_checksum_wrong || !n_refs) {
                snprintf(z->errmsg, sizeof z->errmsg, "a compact request does not decompress (%s)",
                         ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong size");
                goto fail;
            }
        }
        /* The next combination, as an odometer: after a wrong checksum the last ref takes its
        ** next text of the same hash; a ref out of texts goes back to its first and the ref
        ** before it moves on. */
        unsigned at;
        if (i == n_refs) {
            at = n_refs - 1;
        } else if (refs[i].choice == 0) {
            snprintf(z->errmsg, sizeof z->errmsg,
                     "the %s of item \"%.80s\"%s%.80s that the request was stored against is gone",
                     refs[i].model ? "answer" : "question", refs[i].item,
                     refs[i].model ? " by " : "", refs[i].model ? refs[i].model : "");
            goto fail;
        } else if (i == 0) {
            break; /* every combination tried */
        } else {
            at = i - 1;
        }
        refs[at].choice++;
        for (unsigned j = at + 1; j < n_refs; j++) refs[j].choice = 0;
    }
    snprintf(z->errmsg, sizeof z->errmsg, "a compact request does not decompress (%s)",
             "no text of the hashes it names rebuilds it");
    goto fail;
bad:
    snprintf(z->errmsg, sizeof z->errmsg, "a compact request is damaged");
    goto fail;
nomem:
    snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
fail:
    free(text);
    free(frame_copy);
    free_refs(refs, n_refs);
    return NULL;
}

/* arb_request(request): the request as sent, whether stored as TEXT or compact. */
static void sql_arb_request(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
        sqlite3_result_value(ctx, argv[0]);
        return;
    }
    arb__reqz *z = sqlite3_user_data(ctx);
    size_t n = 0;
    char *text = arb__reqz_decode(z, sqlite3_value_blob(argv[0]),
                                  (size_t)sqlite3_value_bytes(argv[0]), &n);
    if (!text) {
        sqlite3_result_error(ctx, z->errmsg, -1);
        return;
    }
    sqlite3_result_text(ctx, text, (int)n, free);
}

/* arb_request_asks_logprobs(request): 1 when the request asks for logprobs
** (json_extract(request, '$.logprobs') = 1), else NULL; cheap on a compact request. */
static void sql_asks_logprobs(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    int type = sqlite3_value_type(argv[0]), asks = 0;
    if (type == SQLITE_BLOB) {
        const unsigned char *b = sqlite3_value_blob(argv[0]);
        asks = sqlite3_value_bytes(argv[0]) > 1 && b[0] == COMPACT_TAG && (b[1] & FLAG_LOGPROBS);
    } else if (type == SQLITE_TEXT) {
        /* a request stored as TEXT is read as before compact requests, by SQL */
        asks = request_asks_logprobs_sql(sqlite3_user_data(ctx),
                                         (const char *)sqlite3_value_text(argv[0]));
        if (asks < 0) {
            sqlite3_result_error(ctx, ((arb__reqz *)sqlite3_user_data(ctx))->errmsg, -1);
            return;
        }
    }
    if (asks) sqlite3_result_int(ctx, 1);
    else sqlite3_result_null(ctx);
}

/* See store_requests.h. */
int arb__reqz_register(arb__reqz *z)
{
    return sqlite3_create_function(z->db, "arb_request", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, z,
                                   sql_arb_request, NULL, NULL) == SQLITE_OK &&
                   sqlite3_create_function(z->db, "arb_request_asks_logprobs", 1,
                                           SQLITE_UTF8 | SQLITE_DIRECTONLY, z,
                                           sql_asks_logprobs, NULL, NULL) == SQLITE_OK
               ? 0
               : -1;
}

/* ---- prompt length ------------------------------------------------------------------------- */

/* A scanner for the canonical JSON of a request (jansson's output: no duplicate keys, UTF-8
** unescaped). It reads only what the prompt length needs and gives up (-1) on anything else,
** which the SQL expression then measures. */
typedef struct scan {
    const char *p, *end;
} scan;

static void skip_ws(scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\t' || *s->p == '\r'))
        s->p++;
}

/* Sixteen bytes as one vector (GCC's and Clang's vector extensions: SSE2 on x86-64, NEON on
** ARM, plain words elsewhere). */
typedef unsigned char bytes16 __attribute__((vector_size(16)));
typedef signed char lanes16 __attribute__((vector_size(16)));
typedef uint64_t words2 __attribute__((vector_size(16)));

/* The sum of the 16 lanes of acc (each at most 31). */
static size_t lanes_sum(lanes16 acc)
{
    const uint64_t ones = 0x0101010101010101ull;
    words2 w = (words2)acc;
    return (size_t)(((w[0] * ones) >> 56) + ((w[1] * ones) >> 56));
}

/* Adds to *c the lanes of mask that are all ones (0xff). */
static void below_count(size_t *c, uint64_t mask)
{
    const uint64_t ones = 0x0101010101010101ull;
    *c += (size_t)((((mask >> 7) & ones) * ones) >> 56);
}

/* The content of the JSON string that starts at p[0] (past its opening quote), n bytes at
** most: the offset of its closing quote, *chars its length in code points (an escape counts one,
** a UTF-8 sequence one: its continuation bytes, 10xxxxxx, are not counted); (size_t)-1 at a \u
** escape (SQL's business) or when the string does not end. Sixteen bytes at a time: a vector
** compare finds the next quote or backslash, and the continuation bytes add up in the lanes of
** acc (at most 31 rounds before the lanes are summed). Byte by byte after strcspn, this count
** cost ~33,000 instructions per stored call (it runs over every request stored). */
static size_t string_chars(const unsigned char *p, size_t n, long long *chars)
{
    const bytes16 quote = {'"', '"', '"', '"', '"', '"', '"', '"',
                           '"', '"', '"', '"', '"', '"', '"', '"'};
    const bytes16 backslash = quote + ('\\' - '"');
    const bytes16 top2 = quote - '"' + 0xc0, tail = quote - '"' + 0x80;
    size_t i = 0, cont = 0, escapes = 0;
    for (;;) {
        int hit = 0;
        while (!hit && n - i >= 16) {
            lanes16 acc = {0};
            for (unsigned round = 0; round < 31 && n - i >= 16; round++, i += 16) {
                bytes16 v;
                memcpy(&v, p + i, 16);
                words2 special = (words2)((v == quote) | (v == backslash));
                if (special[0] | special[1]) {
                    hit = 1; /* in these 16 bytes */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                    /* lane k is byte k of the words: the first set lane is the quote or
                    ** backslash; the continuation bytes before it are counted here (elsewhere
                    ** the byte loop below does it) */
                    words2 tails = (words2)((v & top2) == tail);
                    int half = special[0] ? 0 : 1;
                    unsigned at = (unsigned)__builtin_ctzll(special[half]) / 8;
                    uint64_t below = at ? tails[half] & (~0ull >> (64 - 8 * at)) : 0;
                    if (half) below_count(&cont, tails[0]);
                    below_count(&cont, below);
                    i += (size_t)half * 8 + at;
#endif
                    break;
                }
                acc -= (v & top2) == tail; /* a true lane is -1 */
            }
            cont += lanes_sum(acc);
        }
        for (; i < n && p[i] != '"' && p[i] != '\\'; i++) cont += (p[i] & 0xc0) == 0x80;
        if (i >= n) return (size_t)-1;
        if (p[i] == '"') {
            *chars = (long long)(i - cont - escapes); /* an escape: two bytes, one character */
            return i;
        }
        if (n - i < 2 || p[i + 1] == 'u') return (size_t)-1;
        escapes++;
        i += 2;
    }
}

/* Skips a string at s->p ('"'); *chars gets its length in code points. -1 on anything the
** SQL might count otherwise (\u escapes: surrogates) or on a malformed string. */
static int scan_string(scan *s, long long *chars)
{
    if (s->p >= s->end || *s->p != '"') return -1;
    const char *p = s->p + 1;
    if (chars) {
        size_t end = string_chars((const unsigned char *)p, (size_t)(s->end - p), chars);
        if (end == (size_t)-1) return -1;
        s->p = p + end + 1;
        return 0;
    }
    for (;;) {
        /* the text is NUL-terminated at s->end: strcspn finds the next quote or backslash
        ** many bytes at a time */
        p += strcspn(p, "\"\\");
        if (p >= s->end) return -1;
        if (*p == '"') {
            s->p = p + 1;
            return 0;
        }
        if (p + 1 >= s->end || p[1] == 'u') return -1; /* \uXXXX: SQL's business */
        p += 2;
    }
}

static int skip_value(scan *s, int depth);

static int skip_container(scan *s, int depth, char close)
{
    if (depth > 64) return -1;
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 0;
    }
    for (;;) {
        if (close == '}') {
            if (scan_string(s, NULL)) return -1;
            skip_ws(s);
            if (s->p >= s->end || *s->p++ != ':') return -1;
        }
        if (skip_value(s, depth + 1)) return -1;
        skip_ws(s);
        if (s->p >= s->end) return -1;
        if (*s->p == close) {
            s->p++;
            return 0;
        }
        if (*s->p++ != ',') return -1;
        skip_ws(s);
    }
}

static int skip_value(scan *s, int depth)
{
    skip_ws(s);
    if (s->p >= s->end) return -1;
    char c = *s->p;
    if (c == '"') return scan_string(s, NULL);
    if (c == '{') return skip_container(s, depth, '}');
    if (c == '[') return skip_container(s, depth, ']');
    const char *start = s->p;
    while (s->p < s->end && (strchr("+-.eE", *s->p) || (*s->p >= '0' && *s->p <= '9') ||
                             (*s->p >= 'a' && *s->p <= 'z')))
        s->p++;
    return s->p > start ? 0 : -1;
}

/* Whether the string at s->p is the key name (plain, no escapes); advances past it. */
static int key_is(scan *s, const char *name, int *is)
{
    const char *start = s->p + 1;
    if (scan_string(s, NULL)) return -1;
    size_t n = strlen(name);
    *is = (size_t)(s->p - 1 - start) == n && !memcmp(start, name, n);
    return 0;
}

/* The messages array at s->p: total of the contents' lengths, or -1. */
static long long scan_messages(scan *s)
{
    if (*s->p != '[') return -1;
    long long total = 0;
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == ']') {
        s->p++;
        return 0;
    }
    for (;;) {
        skip_ws(s);
        if (s->p >= s->end || *s->p != '{') return -1; /* a message that is not an object */
        s->p++;
        skip_ws(s);
        int seen = 0;
        while (s->p < s->end && *s->p != '}') {
            int is = 0;
            if (key_is(s, "content", &is)) return -1;
            skip_ws(s);
            if (s->p >= s->end || *s->p++ != ':') return -1;
            skip_ws(s);
            if (is) {
                long long n = 0;
                if (seen++ || scan_string(s, &n)) return -1; /* not a string: SQL's business */
                total += n;
            } else if (skip_value(s, 2)) {
                return -1;
            }
            skip_ws(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                skip_ws(s);
            }
        }
        if (s->p >= s->end) return -1;
        s->p++;
        skip_ws(s);
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            return total;
        }
        if (s->p >= s->end || *s->p++ != ',') return -1;
    }
}

/* See store_internal.h. */
long long arb__request_scan_prompt_chars(const char *json)
{
    scan s = {json, json + strlen(json)};
    skip_ws(&s);
    if (s.p >= s.end || *s.p != '{') return -1;
    s.p++;
    long long total = 0;
    int seen = 0;
    skip_ws(&s);
    while (s.p < s.end && *s.p != '}') {
        int is = 0;
        if (key_is(&s, "messages", &is)) return -1;
        skip_ws(&s);
        if (s.p >= s.end || *s.p++ != ':') return -1;
        skip_ws(&s);
        if (is) {
            if (seen++ || (total = scan_messages(&s)) < 0) return -1;
        } else if (skip_value(&s, 1)) {
            return -1;
        }
        skip_ws(&s);
        if (s.p < s.end && *s.p == ',') {
            s.p++;
            skip_ws(&s);
        }
    }
    if (s.p >= s.end) return -1;
    s.p++;
    skip_ws(&s);
    return s.p == s.end ? total : -1;
}

/* See store_requests.h. */
int arb__reqz_prompt_chars(arb__reqz *z, const char *request, long long *chars)
{
    *chars = -1;
    if (!request) return 0;
    long long n = arb__request_scan_prompt_chars(request);
    if (n >= 0) {
        *chars = n;
        return 0;
    }
    sqlite3_stmt *q = stmt(z, Q_PROMPT_CHARS);
    if (!q) return -1;
    arb__store_bind_text(q, 1, request);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL)
        *chars = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        snprintf(z->errmsg, sizeof z->errmsg, "cannot measure a prompt: %s",
                 sqlite3_errmsg(z->db));
        return -1;
    }
    return 0;
}

/* Whether the canonical request asks for logprobs (its top-level "logprobs" is true or 1):
** 1 or 0, -1 on failure. The scanner answers for canonical JSON; SQL for anything else. */
static int request_asks_logprobs(arb__reqz *z, const char *request)
{
    scan s = {request, request + strlen(request)};
    int asks = -1;
    skip_ws(&s);
    if (s.p < s.end && *s.p == '{') {
        s.p++;
        skip_ws(&s);
        asks = 0;
        while (asks == 0 && s.p < s.end && *s.p != '}') {
            int is = 0;
            if (key_is(&s, "logprobs", &is)) {
                asks = -1;
                break;
            }
            skip_ws(&s);
            if (s.p >= s.end || *s.p++ != ':') {
                asks = -1;
                break;
            }
            skip_ws(&s);
            if (is) {
                /* true, or a number: SQL compares the value with 1 */
                if (s.end - s.p >= 4 && !memcmp(s.p, "true", 4)) asks = 1;
                else if (*s.p == '-' || (*s.p >= '0' && *s.p <= '9')) asks = -1;
                else asks = 2; /* another value: not asked */
                break;
            }
            if (skip_value(&s, 1)) {
                asks = -1;
                break;
            }
            skip_ws(&s);
            if (s.p < s.end && *s.p == ',') {
                s.p++;
                skip_ws(&s);
            }
        }
        if (asks == 2) asks = 0;
    }
    return asks >= 0 ? asks : request_asks_logprobs_sql(z, request);
}

/* request_asks_logprobs by SQL's reading of the JSON. */
static int request_asks_logprobs_sql(arb__reqz *z, const char *request)
{
    int asks = 0;
    sqlite3_stmt *q = stmt(z, Q_ASKS_LOGPROBS);
    if (!q) return -1;
    arb__store_bind_text(q, 1, request);
    int rc = sqlite3_step(q);
    asks = rc == SQLITE_ROW && sqlite3_column_int(q, 0) == 1;
    sqlite3_reset(q);
    if (rc != SQLITE_ROW) {
        snprintf(z->errmsg, sizeof z->errmsg, "cannot read a request: %s", sqlite3_errmsg(z->db));
        return -1;
    }
    return asks;
}
