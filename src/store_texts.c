/*
** store_texts.c -- compact storage of the dataset's texts: the items' question and reference,
** the answers' text (schema 12; their sources "file:line" too in stores written before
** 2026-11-28 and by migration 12: a load now keeps a source TEXT, see TEXT_ZSTD_LEVEL).
**
** A benchmark's texts are most of a store once requests are compact (store_requests.c): ~650
** of the ~1,180 bytes per judgment at 100,000 items. Each text is small (a few hundred bytes),
** too small for zstd alone, so they are compressed with a dictionary trained once from the
** store's own texts (ZDICT_trainFromBuffer_fastCover) and kept in table text_dicts. A
** compressed text is a BLOB (a "compact text"):
**
**     varint dictionary id | varint length in code points | zstd frame without its magic number
**
** The frame carries the text's size (no checksum, no dictionary id: the row has it); the
** length in code points lets arb_text_length(x) answer length(x) without decompressing (the
** audit's prompt-length figures, METHODS §5, read it for every judgment).
**
** Invariants:
**   - Such a column holds TEXT (stores before schema 12, small datasets, imports, a text that
**     compression would not shorten) or a compact text; arb_text(x), an SQL function of the
**     store's connection, gives back the exact text in both cases, so every reader of those
**     columns reads through it.
**   - Compression is deterministic (one dictionary, one level), so a dataset loaded again
**     compresses to the same bytes and the upserts that compare stored values with new ones
**     write nothing, as before.
**   - Rows of text_dicts are never changed or deleted; the dictionary of a store is trained
**     once, from the first dataset large enough to train it (or by migration 12 from what the
**     store holds), and the newest one compresses.
**
** What it does not do: decide which columns are compact (store.c binds them) or compress
** requests (store_requests.c).
*/
#include "internal.h"
#include "store_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
/* ZDICT_trainFromBuffer_fastCover and its parameters: zstd's "experimental" section, exported by
** the shared library and unchanged since zstd 1.3.6 */
#define ZDICT_STATIC_LINKING_ONLY
#include <zdict.h>
#include <zstd.h>

/* zstd level of texts. On the benchmark set (2026-11-27, 32 KB dictionary): level 3 ~85-byte
** answers of ~370 characters; higher levels save a few bytes for several times the CPU.
** Measured again 2026-11-28 (Debian's libzstd 1.5.4; the 14,000 texts of 2,000 items against
** their store's dictionary, callgrind; bench/README.md "Storing the dataset, cheaper"): level 3
** 11,834 instructions a text (ZSTD_compress2) and 613,534 bytes; level 4 the same; levels 1, 2,
** -1, -3, -7 12,500-13,200 and 784,000-950,000 bytes (more sequences to code); 5 and lazier
** strategies 2-3x the instructions; hashLog/chainLog 12-18, windowLog 10-17, minMatch 4-7 and
** raw literals within 1% either way; copying or reloading the dictionary instead of attaching
** it 34-50x. What a text costs is the frame, not the search: for a text of one match (a source
** "file:line" against the paths kept in the dictionary) zstd builds its predefined FSE tables
** anew, ~8,000 of the ~12,000 instructions. Hence, 2026-11-28: the level stays, frames are
** written by the stable ZSTD_compress_usingCDict from a CDict whose dictionary id is 0
** (create_cdict: the same bytes as ZSTD_compress2 with ZSTD_c_dictIDFlag 0, ~590 fewer
** instructions a text; the deprecated, experimental ZSTD_compress_usingCDict_advanced is not
** needed for it), and loads store sources as TEXT (a frame saved ~15-20 bytes of a ~35-byte
** source). An answer of the benchmark set (~370 bytes, ~50 sequences: one a word) costs
** ~16,000 instructions, of which (zstd 1.5.4 built with symbols) the double-fast search
** against the attached dictionary ~5,900, coding the sequences ~3,500, their statistics
** (three histograms, tables reused from the dictionary) ~1,600, starting the frame ~850:
** mostly per sequence, not per frame. Storing sources as TEXT:
** storing the dataset at 2,000 items 317.4 -> 238.5 M instructions (79,300 -> 59,600 a call),
** bytes per judgment at 100,000 items 480.2 -> 513.9 (500,000: 488 -> 515.2). The bytes a text compresses to are those
** of the previous releases, so a dataset loaded again into their stores rewrites nothing. */
#define TEXT_ZSTD_LEVEL 3
/* A dictionary is trained once at least this much text and this many texts are at hand:
** fewer samples train a dictionary that would then compress every later text badly. */
#define TRAIN_MIN_BYTES (256 * 1024)
#define TRAIN_MIN_TEXTS 512
/* Samples fed to the trainer at most (spread over what is at hand), and the dictionary's size:
** more samples gave no smaller texts (answers of the benchmark set: 88-89 bytes from 250 KB to
** 1 MB of samples, 2026-11-27). 2026-11-28, with FINALIZE_MAX_BYTES: 1 MB and 256 KB -> 256
** KB and 64 KB halved training, the largest fixed cost of a first run (callgrind, 2,000 items:
** 66.2 -> 29.7 M instructions, 16,500 -> 7,400 a call; 20,000 items 114.3 -> 55.4 M; the
** sources' paths picked in the first pass since, note_source_path: 28.1 and 39.5 M),
** and the texts of 20,000 items take 4,966,904 bytes instead of 4,967,347 (128 KB of samples:
** 4,999,428; finalizing from 32 KB: 4,972,391 for 3 M fewer instructions; TRAIN_F 18:
** 4,960,105 for 0.5 M more). */
#define TRAIN_MAX_BYTES (256 * 1024)
#define DICT_BYTES (32 * 1024)
/* Room for the entropy tables that finalizing puts before the content (a few hundred bytes):
** ZDICT_finalizeDictionary cuts the END of a content that does not fit its buffer, which is
** where the source paths go. */
#define DICT_HEADER_ROOM 4096
/* The trainer's parameters, fixed: ZDICT_trainFromBuffer tries several segment sizes (k), each
** trained and then measured by compressing the samples, 0.46 G instructions on 1 MB of samples,
** the largest fixed cost of a first run. On the benchmark set it picks k = 1511 (d = 8); k from
** 512 to 2000 gave the same sizes (answers 88-89 bytes, items' texts 46-47, 2026-11-27).
** TRAIN_ACCEL 10 makes the trainer count every 10th position and finalize with a tenth of the
** samples: its statistics are thrown away anyway, as finalize_dictionary computes them again.
** Bytes per judgment at 100,000 items (bench/run_scale.sh): 535 before, 531 with these (and
** 531-534 with accel 1, or finalizing from 64 KB or 1 MB of samples). */
#define TRAIN_K 1024
#define TRAIN_D 8
#define TRAIN_F 20
#define TRAIN_ACCEL 10
/* Samples the entropy statistics of the dictionary are computed from at most (every step-th
** training sample): a quarter of 1 MB gave the same sizes as all of it, and so does a quarter
** of 256 KB (see TRAIN_MAX_BYTES). */
#define FINALIZE_MAX_BYTES (64 * 1024)
/* Texts shorter than this stay TEXT: a frame's overhead would eat what it saves. */
#define MIN_COMPACT_BYTES 24
#define DDICT_CACHE 4

static const unsigned char zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};

struct arb__textz {
    sqlite3 *db;
    sqlite3_stmt *newest, *get, *put;
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
    long long cdict_id;  /* the dictionary new texts are compressed with; 0: none known */
    ZSTD_CDict *cdict;   /* its copy in which the dictionary's id is 0: see create_cdict */
    int checked;         /* text_dicts was read for the newest dictionary in this transaction */
    int train_failed;    /* the trainer gave up on this open's texts: not tried again */
    struct {
        long long id;
        ZSTD_DDict *ddict;
    } ddicts[DDICT_CACHE];
    size_t ddict_next;
    long long decoded, ddicts_made; /* texts decompressed, dictionaries loaded for it */
    unsigned char *scratch; /* decode's input frame */
    size_t scratch_cap;
    struct {
        unsigned char *buf;
        size_t cap;
    } out[ARB__TEXTZ_SLOTS]; /* encode's output, a buffer per slot */
    char errmsg[256];
};

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

/* Makes *buf (*cap bytes) hold at least need bytes. 0, or -1 (no memory; *buf unchanged). */
static int grow_buffer(unsigned char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 4096;
    while (n < need) n *= 2;
    unsigned char *p = realloc(*buf, n);
    if (!p) return -1;
    *buf = p;
    *cap = n;
    return 0;
}

static int prepare(arb__textz *z, sqlite3_stmt **q, const char *sql)
{
    if (*q) return 0;
    if (sqlite3_prepare_v3(z->db, sql, -1, SQLITE_PREPARE_PERSISTENT, q, NULL) == SQLITE_OK)
        return 0;
    snprintf(z->errmsg, sizeof z->errmsg, "cannot prepare: %s", sqlite3_errmsg(z->db));
    return -1;
}

/* See store_internal.h. */
arb__textz *arb__textz_create(sqlite3 *db)
{
    arb__textz *z = calloc(1, sizeof *z);
    if (!z) return NULL;
    z->db = db;
    z->cctx = ZSTD_createCCtx();
    z->dctx = ZSTD_createDCtx();
    if (!z->cctx || !z->dctx) {
        arb__textz_destroy(z);
        return NULL;
    }
    return z;
}

/* See store_internal.h. */
void arb__textz_forget(arb__textz *z)
{
    if (!z) return;
    ZSTD_freeCDict(z->cdict);
    z->cdict = NULL;
    z->cdict_id = 0;
    z->checked = 0;
    for (size_t i = 0; i < DDICT_CACHE; i++) {
        ZSTD_freeDDict(z->ddicts[i].ddict);
        z->ddicts[i].ddict = NULL;
        z->ddicts[i].id = 0;
    }
}

/* See store_internal.h. */
void arb__textz_destroy(arb__textz *z)
{
    if (!z) return;
    arb__textz_forget(z);
    sqlite3_finalize(z->newest);
    sqlite3_finalize(z->get);
    sqlite3_finalize(z->put);
    ZSTD_freeCCtx(z->cctx);
    ZSTD_freeDCtx(z->dctx);
    free(z->scratch);
    for (size_t i = 0; i < ARB__TEXTZ_SLOTS; i++) free(z->out[i].buf);
    free(z);
}

/* See store_internal.h. */
const char *arb__textz_errmsg(const arb__textz *z) { return z ? z->errmsg : "out of memory"; }

/* See store_internal.h. */
void arb__textz_new_transaction(arb__textz *z)
{
    if (z) z->checked = 0;
}

/* The compression dictionary of a stored dictionary (zstd's format: magic number, 4-byte id,
** entropy tables, content), or NULL. The CDict is made from a copy whose id is 0: texts are
** stored without the dictionary's id (the row's header holds the store's own), and the stable
** ZSTD_compress_usingCDict writes the id of its CDict's dictionary into each frame unless it
** is 0. Compression does not read the id otherwise, and decompression uses the dictionary as
** stored (a frame without an id is decoded with the dictionary it is given). A dictionary
** without the magic number is raw content (id 0 already) and is used as it is. */
static ZSTD_CDict *create_cdict(const void *dict, size_t len)
{
    static const unsigned char dict_magic[4] = {0x37, 0xa4, 0x30, 0xec};
    if (len < 8 || memcmp(dict, dict_magic, sizeof dict_magic))
        return ZSTD_createCDict(dict, len, TEXT_ZSTD_LEVEL);
    unsigned char *copy = malloc(len);
    if (!copy) return NULL;
    memcpy(copy, dict, len);
    memset(copy + 4, 0, 4);
    ZSTD_CDict *cdict = ZSTD_createCDict(copy, len, TEXT_ZSTD_LEVEL); /* copies the content */
    free(copy);
    return cdict;
}

/* Makes the newest dictionary of text_dicts the one that compresses (once per transaction:
** another process may have trained one meanwhile). 0, or -1 with z->errmsg. */
static int load_newest(arb__textz *z)
{
    if (z->checked) return 0;
    if (prepare(z, &z->newest, "SELECT id, dict FROM text_dicts ORDER BY id DESC LIMIT 1"))
        return -1;
    int rc = sqlite3_step(z->newest), status = 0;
    if (rc == SQLITE_ROW) {
        long long id = sqlite3_column_int64(z->newest, 0);
        if (id != z->cdict_id) {
            ZSTD_freeCDict(z->cdict);
            z->cdict = create_cdict(sqlite3_column_blob(z->newest, 1),
                                    (size_t)sqlite3_column_bytes(z->newest, 1));
            z->cdict_id = z->cdict ? id : 0;
            if (!z->cdict) {
                snprintf(z->errmsg, sizeof z->errmsg, "text dictionary %lld is unusable", id);
                status = -1;
            }
        }
    } else if (rc != SQLITE_DONE) {
        snprintf(z->errmsg, sizeof z->errmsg, "cannot read the text dictionary: %s",
                 sqlite3_errmsg(z->db));
        status = -1;
    }
    sqlite3_reset(z->newest);
    if (!status) z->checked = 1;
    return status;
}

/* See store_internal.h. */
int arb__textz_has_dictionary(arb__textz *z)
{
    if (load_newest(z)) return -1;
    return z->cdict != NULL;
}

/* Code points of a UTF-8 text, as SQL's length() counts them: the bytes that are not
** continuation bytes (10xxxxxx), counted 8 at a time (a byte at a time was ~8 instructions a
** byte, 15% of compressing a text). */
static uint64_t code_points(const char *text, size_t len)
{
    const uint64_t ones = 0x0101010101010101u;
    uint64_t cont = 0;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, text + i, sizeof w);
        /* per byte: 1 when bit 7 is set and bit 6 clear; the sum of 8 bytes fits a byte */
        cont += (((w >> 7) & ~(w >> 6) & ones) * ones) >> 56;
    }
    for (; i < len; i++) cont += ((unsigned char)text[i] & 0xc0) == 0x80;
    return (uint64_t)len - cont;
}

/* See store_internal.h. */
int arb__textz_encode(arb__textz *z, int slot, const char *text, size_t len,
                      const unsigned char **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    if (!text || len < MIN_COMPACT_BYTES) return 0;
    if (load_newest(z)) return -1;
    if (!z->cdict) return 0;
    size_t cap = 20 + ZSTD_compressBound(len);
    if (slot < 0 || slot >= ARB__TEXTZ_SLOTS ||
        grow_buffer(&z->out[slot].buf, &z->out[slot].cap, cap)) {
        snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
        return -1;
    }
    unsigned char *buf = z->out[slot].buf;
    size_t h = (size_t)put_varint(buf, (uint64_t)z->cdict_id);
    h += (size_t)put_varint(buf + h, code_points(text, len));
    /* the frame follows the header; its magic number is cut below. ZSTD_compress_usingCDict
    ** starts a new frame with the CDict's parameters (level, content size, no checksum) and
    ** the dictionary's id, 0 here (create_cdict), so none is written: the bytes ZSTD_compress2
    ** wrote with ZSTD_c_dictIDFlag 0 and the CDict referenced (tests/test_store.c
    ** test_dataset_again_into_a_previous_release_store compares them), ~590 fewer instructions
    ** of ~12,800 a text (its parameters are not derived again from the context's for each
    ** frame; callgrind, 2026-11-28). */
    size_t n = ZSTD_compress_usingCDict(z->cctx, buf + h, cap - h, text, len, z->cdict);
    if (ZSTD_isError(n) || n <= sizeof zstd_magic || memcmp(buf + h, zstd_magic, sizeof zstd_magic))
        return 0;
    memmove(buf + h, buf + h + sizeof zstd_magic, n - sizeof zstd_magic);
    n = h + n - sizeof zstd_magic;
    if (n >= len) return 0; /* not shorter: stays TEXT */
    *out = buf;
    *out_len = n;
    return 1;
}

/* The decompression dictionary with this id (cached), or NULL with z->errmsg set. */
static ZSTD_DDict *ddict_get(arb__textz *z, long long id)
{
    for (size_t i = 0; i < DDICT_CACHE; i++)
        if (z->ddicts[i].ddict && z->ddicts[i].id == id) return z->ddicts[i].ddict;
    if (prepare(z, &z->get, "SELECT dict FROM text_dicts WHERE id = ?1")) return NULL;
    sqlite3_bind_int64(z->get, 1, id);
    ZSTD_DDict *d = NULL;
    if (sqlite3_step(z->get) == SQLITE_ROW) {
        d = ZSTD_createDDict(sqlite3_column_blob(z->get, 0),
                             (size_t)sqlite3_column_bytes(z->get, 0));
        z->ddicts_made++;
        if (!d) snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
    } else {
        snprintf(z->errmsg, sizeof z->errmsg, "text dictionary %lld is missing", id);
    }
    sqlite3_reset(z->get);
    if (!d) return NULL;
    size_t k = z->ddict_next;
    z->ddict_next = (k + 1) % DDICT_CACHE;
    ZSTD_freeDDict(z->ddicts[k].ddict);
    z->ddicts[k].id = id;
    z->ddicts[k].ddict = d;
    return d;
}

/* See store_internal.h. */
void arb__textz_counts(const arb__textz *z, long long *decoded, long long *dictionaries)
{
    *decoded = z ? z->decoded : 0;
    *dictionaries = z ? z->ddicts_made : 0;
}

/* Reads a compact text's header: dictionary id, length in code points; *frame points past it. */
static int read_header(const unsigned char *blob, size_t len, uint64_t *dict_id, uint64_t *chars,
                       const unsigned char **frame)
{
    const unsigned char *p = blob, *end = blob + len;
    if (get_varint(&p, end, dict_id) || get_varint(&p, end, chars) || p >= end) return -1;
    *frame = p;
    return 0;
}

/* See store_internal.h. */
char *arb__textz_decode(arb__textz *z, const unsigned char *blob, size_t len, size_t *out_len)
{
    uint64_t dict_id = 0, chars = 0;
    const unsigned char *frame = NULL;
    z->decoded++;
    if (read_header(blob, len, &dict_id, &chars, &frame)) goto bad;
    ZSTD_DDict *d = ddict_get(z, (long long)dict_id);
    if (!d) return NULL;
    size_t flen = (size_t)(blob + len - frame);
    if (grow_buffer(&z->scratch, &z->scratch_cap, flen + sizeof zstd_magic)) goto nomem;
    memcpy(z->scratch, zstd_magic, sizeof zstd_magic);
    memcpy(z->scratch + sizeof zstd_magic, frame, flen);
    flen += sizeof zstd_magic;
    unsigned long long size = ZSTD_getFrameContentSize(z->scratch, flen);
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > (1u << 30))
        goto bad;
    char *text = malloc((size_t)size + 1);
    if (!text) goto nomem;
    size_t got = ZSTD_decompress_usingDDict(z->dctx, text, (size_t)size, z->scratch, flen, d);
    if (ZSTD_isError(got) || got != size) {
        free(text);
        goto bad;
    }
    text[got] = '\0';
    *out_len = got;
    return text;
bad:
    snprintf(z->errmsg, sizeof z->errmsg, "a compact text is damaged");
    return NULL;
nomem:
    snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
    return NULL;
}

/* The distinct paths of the sources "PATH:LINE" (a dataset's file:line) among the texts, each
** with its ':' and then '\n', in the order first seen; at most MAX_PATHS of them. */
enum { MAX_PATHS = 8 };
typedef struct source_paths {
    char bytes[2048];
    size_t used, n;
    size_t at[MAX_PATHS], len[MAX_PATHS]; /* where each path is in bytes, its length */
} source_paths;

/* Notes the path of text (len bytes, len = strlen(text)) when text is a source: a path, a ':'
** and digits only after it (the last ':'), the path not empty and without '\n'. Read from the
** end, so a text of another shape (an answer ends with '.') costs a byte or two, not a scan. */
static void note_source_path(source_paths *p, const char *text, size_t len)
{
    if (p->n >= MAX_PATHS || !len || text[len - 1] < '0' || text[len - 1] > '9') return;
    size_t digits = len - 1; /* where the digits at the end start */
    while (digits > 0 && text[digits - 1] >= '0' && text[digits - 1] <= '9') digits--;
    if (digits < 2 || text[digits - 1] != ':') return;
    size_t plen = digits; /* the path and its ':' */
    if (p->used + plen + 1 > sizeof p->bytes) return;
    for (size_t k = 0; k < p->n; k++)
        if (p->len[k] == plen && !memcmp(p->bytes + p->at[k], text, plen)) return;
    if (memchr(text, '\n', plen)) return;
    p->at[p->n] = p->used;
    p->len[p->n++] = plen;
    memcpy(p->bytes + p->used, text, plen);
    p->used += plen;
    p->bytes[p->used++] = '\n';
}

/* The trainer keeps what is frequent in bytes, so the path that every source repeats ("items.
** jsonl:", a few dozen bytes in a short text) is left out and a source would not compress. The
** distinct paths of the sources among the texts (paths: a few at most) are appended to the
** trained dictionary's content, where matches cost least. Then the dictionary is finalized (its
** entropy tables computed) from every step-th sample, at most FINALIZE_MAX_BYTES of them, into
** dict (DICT_BYTES + DICT_HEADER_ROOM bytes): at most DICT_BYTES of content, its tables before
** it. Returns the dictionary's new size, or a ZDICT error code. */
static size_t finalize_dictionary(void *dict, size_t dlen, const source_paths *paths,
                                  const char *samples, const size_t *sizes, unsigned n_samples)
{
    size_t used = paths->used;
    size_t header = ZDICT_getDictHeaderSize(dict, dlen);
    if (ZDICT_isError(header)) return header;
    size_t content_len = dlen - header;
    if (content_len + used > DICT_BYTES) content_len = DICT_BYTES - used;
    size_t total = 0;
    for (unsigned i = 0; i < n_samples; i++) total += sizes[i];
    unsigned step = (unsigned)(total / FINALIZE_MAX_BYTES + 1), n_picked = 0;
    char *content = malloc(content_len + used);
    char *picked = malloc(total + 1);
    size_t *picked_sizes = malloc((n_samples / step + 1) * sizeof *picked_sizes);
    size_t got = (size_t)-1; /* a ZDICT error code: out of memory */
    if (content && picked && picked_sizes) {
        /* the end of the trained content is kept (its most useful part), then the paths */
        memcpy(content, (const char *)dict + dlen - content_len, content_len);
        memcpy(content + content_len, paths->bytes, used);
        size_t at = 0, picked_len = 0;
        for (unsigned i = 0; i < n_samples; at += sizes[i++]) {
            if (i % step) continue;
            memcpy(picked + picked_len, samples + at, sizes[i]);
            picked_len += sizes[i];
            picked_sizes[n_picked++] = sizes[i];
        }
        ZDICT_params_t params = {.compressionLevel = TEXT_ZSTD_LEVEL};
        got = ZDICT_finalizeDictionary(dict, DICT_BYTES + DICT_HEADER_ROOM, content,
                                       content_len + used, picked, picked_sizes, n_picked, params);
    }
    free(content);
    free(picked);
    free(picked_sizes);
    return got;
}

/* See store_internal.h. */
int arb__textz_train(arb__textz *z, const char *const *texts, size_t n)
{
    if (z->train_failed) return 0;
    int have = arb__textz_has_dictionary(z);
    if (have) return have < 0 ? -1 : 0;
    size_t total = 0, count = 0;
    source_paths paths = {.used = 0};
    for (size_t i = 0; i < n; i++)
        if (texts[i] && *texts[i]) {
            size_t len = strlen(texts[i]);
            note_source_path(&paths, texts[i], len);
            total += len;
            count++;
        }
    if (total < TRAIN_MIN_BYTES || count < TRAIN_MIN_TEXTS) return 0;
    /* every step-th text, so the samples spread over the whole dataset */
    size_t step = total / TRAIN_MAX_BYTES + 1, cap = total / step + 4096;
    char *buf = malloc(cap);
    size_t *sizes = malloc((count / step + 2) * sizeof *sizes);
    unsigned n_samples = 0;
    size_t used = 0, seen = 0;
    int status = 0;
    if (!buf || !sizes) goto nomem;
    for (size_t i = 0; i < n; i++) {
        if (!texts[i] || !*texts[i] || seen++ % step) continue;
        size_t len = strlen(texts[i]);
        if (used + len > cap) break;
        memcpy(buf + used, texts[i], len);
        used += len;
        sizes[n_samples++] = len;
    }
    void *dict = malloc(DICT_BYTES + DICT_HEADER_ROOM);
    if (!dict) goto nomem;
    ZDICT_fastCover_params_t params = {.k = TRAIN_K, .d = TRAIN_D, .f = TRAIN_F,
                                       .accel = TRAIN_ACCEL,
                                       .zParams = {.compressionLevel = TEXT_ZSTD_LEVEL}};
    size_t dlen = ZDICT_trainFromBuffer_fastCover(dict, DICT_BYTES, buf, sizes, n_samples, params);
    if (!ZDICT_isError(dlen))
        dlen = finalize_dictionary(dict, dlen, &paths, buf, sizes, n_samples);
    if (ZDICT_isError(dlen)) {
        z->train_failed = 1; /* too uniform or too few: the texts stay TEXT */
    } else if (!prepare(z, &z->put, "INSERT INTO text_dicts(dict) VALUES (?1)")) {
        sqlite3_bind_blob(z->put, 1, dict, (int)dlen, SQLITE_STATIC);
        int rc = sqlite3_step(z->put);
        sqlite3_reset(z->put);
        sqlite3_clear_bindings(z->put);
        if (rc != SQLITE_DONE) {
            snprintf(z->errmsg, sizeof z->errmsg, "cannot store the text dictionary: %s",
                     sqlite3_errmsg(z->db));
            status = -1;
        } else {
            z->checked = 0;
            status = load_newest(z);
        }
    } else {
        status = -1;
    }
    free(dict);
    free(buf);
    free(sizes);
    return status;
nomem:
    free(buf);
    free(sizes);
    snprintf(z->errmsg, sizeof z->errmsg, "out of memory");
    return -1;
}

/* arb_text(x): the text of x, whether stored as TEXT or compact; NULL stays NULL. */
static void sql_arb_text(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
        sqlite3_result_value(ctx, argv[0]);
        return;
    }
    arb__textz *z = sqlite3_user_data(ctx);
    size_t n = 0;
    char *text = arb__textz_decode(z, sqlite3_value_blob(argv[0]),
                                   (size_t)sqlite3_value_bytes(argv[0]), &n);
    if (!text) {
        sqlite3_result_error(ctx, z->errmsg, -1);
        return;
    }
    sqlite3_result_text(ctx, text, (int)n, free);
}

/* arb_text_length(x): length(arb_text(x)) without decompressing a compact text. */
static void sql_arb_text_length(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
        if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
            sqlite3_result_null(ctx);
            return;
        }
        const unsigned char *t = sqlite3_value_text(argv[0]);
        size_t n = (size_t)sqlite3_value_bytes(argv[0]);
        sqlite3_result_int64(ctx, t ? (sqlite3_int64)code_points((const char *)t, n) : 0);
        return;
    }
    uint64_t dict_id = 0, chars = 0;
    const unsigned char *frame = NULL;
    if (read_header(sqlite3_value_blob(argv[0]), (size_t)sqlite3_value_bytes(argv[0]), &dict_id,
                    &chars, &frame)) {
        sqlite3_result_error(ctx, "a compact text is damaged", -1);
        return;
    }
    sqlite3_result_int64(ctx, (sqlite3_int64)chars);
}

/* arb_text_pack(x): x compressed as a compact text when that is shorter, else x unchanged
** (migration 12 rewrites the stored texts with it). */
static void sql_arb_text_pack(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) != SQLITE_TEXT) {
        sqlite3_result_value(ctx, argv[0]);
        return;
    }
    arb__textz *z = sqlite3_user_data(ctx);
    const unsigned char *blob = NULL;
    size_t len = 0;
    int got = arb__textz_encode(z, 0, (const char *)sqlite3_value_text(argv[0]),
                                (size_t)sqlite3_value_bytes(argv[0]), &blob, &len);
    if (got < 0) sqlite3_result_error(ctx, z->errmsg, -1);
    else if (got == 0) sqlite3_result_value(ctx, argv[0]);
    else sqlite3_result_blob(ctx, blob, (int)len, SQLITE_TRANSIENT);
}

/* See store_internal.h. */
int arb__textz_register(arb__textz *z)
{
    int flags = SQLITE_UTF8 | SQLITE_DIRECTONLY | SQLITE_DETERMINISTIC;
    return sqlite3_create_function(z->db, "arb_text", 1, flags, z, sql_arb_text, NULL, NULL) ==
                       SQLITE_OK &&
                   sqlite3_create_function(z->db, "arb_text_length", 1, flags, z,
                                           sql_arb_text_length, NULL, NULL) == SQLITE_OK &&
                   sqlite3_create_function(z->db, "arb_text_pack", 1,
                                           SQLITE_UTF8 | SQLITE_DIRECTONLY, z, sql_arb_text_pack,
                                           NULL, NULL) == SQLITE_OK
               ? 0
               : -1;
}
