/*
** test_store_requests.c -- tests of compact requests (store_requests.c): blobs of the prefixed
** format (every store before the spliced format) still decode; the spliced format rebuilds
** requests exactly on tricky texts (quotes, newlines, controls, UTF-8, empty answers, an answer
** that contains the question, equal answers) and falls back to the prefixed format where a
** text is not in the request as the escaper writes it; the prompt length scanner counts what
** it counted byte by byte.
**
** Each test gets a fresh store in a temporary directory. Run one alone with ARB_TEST=<name>.
*/
#include "test_sql.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

typedef struct fixture {
    char dir[256];
    char db[300];
    arb_store *store;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/arb_reqz_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    snprintf(f->db, sizeof f->db, "%s/arbiter.db", f->dir);
    if (arb_store_open(f->db, &f->store)) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    arb_store_close(f->store);
    const char *suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
        char p[320];
        snprintf(p, sizeof p, "%s%s", f->db, suffix[i]);
        unlink(p);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

/* Stores item id's question and the answers of m1 and m2 (bound, so any bytes go in). */
static void put_item(arb_store *s, const char *id, const char *question, const char *m1,
                     const char *m2)
{
    sqlite3 *db = arb__store_conn(s);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO items(id, seq, question) VALUES"
                                            " (?1, (SELECT count(*) FROM items), ?2)",
                                        -1, &q, NULL), SQLITE_OK);
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, question, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO answers(item_id, model, answer) VALUES"
                                            " (?1, 'm1', ?2), (?1, 'm2', ?3)",
                                        -1, &q, NULL), SQLITE_OK);
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, m1, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, m2, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
}

/* A long system prompt, so the request is long enough to be compacted. */
#define SYSTEM                                                                                  \
    "You judge answers. Say which is better: [[A]] or [[B]]. Be fair, consider accuracy, "     \
    "helpfulness, clarity, and safety; ignore length and order. Weigh every claim against what " \
    "you know, and prefer the answer a careful expert would give. Weigh every claim against "   \
    "what you know, and prefer the answer a careful expert would give. Weigh every claim "      \
    "against what you know, and prefer the answer a careful expert would give. Weigh every "    \
    "claim against what you know, and prefer the answer a careful expert would give. "

/* The request of a side-by-side call as judge.c writes it: the texts JSON-escaped by the
** project's escaper inside the user message. Caller frees. */
static char *sbs_request(const char *question, const char *first, const char *second)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    const char *parts[] = {"[Q] ", question, "\n[A] ", first, "\n[B] ", second,
                           "\nThink step by step, then give the verdict on its own line."};
    arb__buf content;
    arb__buf_init(&content, 0);
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        assert_int_equal(arb__buf_puts(&content, parts[i]), 0);
    assert_int_equal(arb__buf_puts(&b, "{\"messages\":[{\"content\":\"" SYSTEM "\",\"role\":"
                                       "\"system\"},{\"content\":"), 0);
    assert_int_equal(arb__buf_json_string(&b, content.data, content.len), 0);
    assert_int_equal(arb__buf_puts(&b, ",\"role\":\"user\"}],\"model\":\"jm\",\"temperature\":0}"),
                     0);
    arb__buf_free(&content);
    return arb__buf_steal(&b);
}

static unsigned char *from_hex(const char *hex, size_t *len)
{
    size_t n = strlen(hex) / 2;
    unsigned char *b = malloc(n);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        b[i] = (unsigned char)v;
    }
    *len = n;
    return b;
}

static void assert_query_text(arb_store *s, const char *sql, const char *expected)
{
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(s), sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), expected);
    sqlite3_finalize(q);
}

/* Decodes blob with a fresh codec (nothing cached: texts read by SQL) and with the store's
** own arb_request(); both must give expected. */
static void assert_decodes(arb_store *s, const unsigned char *blob, size_t len,
                           const char *expected)
{
    arb__reqz *z = arb__reqz_create(arb__store_conn(s));
    assert_non_null(z);
    size_t n = 0;
    char *text = arb__reqz_decode(z, blob, len, &n);
    if (!text) fail_msg("decode: %s", arb__reqz_errmsg(z));
    assert_int_equal(n, strlen(expected));
    assert_string_equal(text, expected);
    free(text);
    arb__reqz_destroy(z);
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(s), "SELECT arb_request(?1)", -1, &q,
                                        NULL), SQLITE_OK);
    sqlite3_bind_blob(q, 1, blob, (int)len, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), expected);
    sqlite3_finalize(q);
}

/* ---- the prefixed format ------------------------------------------------------------------ */

/* Item q1's plain texts, item q2's tricky ones (as stored, and as the request holds them). */
#define Q1 "Why is the sky blue?"
#define A1 "Rayleigh scattering of sunlight by the air's molecules."
#define B1 "Because it reflects the sea."
#define Q2 "Say \"caf\xc3\xa9\" \xf0\x9f\x98\x80\nthen\\stop"
#define A2 "Say \"caf\xc3\xa9\" \xf0\x9f\x98\x80\nthen\\stop -- done\ttab"

/* Blobs written by the encoder before the spliced format (commit 914189e), against skeleton 1
** (request 1, with item q1's texts) and the texts of q1 and q2: the decoder must rebuild them
** as long as stores hold them. */
static const char old_blob1[] =
    "5a02010300027131910b602103026d312b006f0203026d3234dfe59e6419024500000001001607570208611b"
    "8700";
static const char old_blob2[] =
    "5a0201020002713298198e9d03026d3152f6264264fb01750100485c5c5c6e5c747461620b00c8a74840abc0"
    "ca4810719400b302018d68e08c1068460c56468c481001e0e05a0920a10f15b9";

static void test_prefixed_blobs_still_decode(void **state)
{
    fixture *f = *state;
    char *r1 = sbs_request(Q1, A1, B1), *r2 = sbs_request(Q2, A2, "");
    put_item(f->store, "q1", Q1, A1, B1);
    put_item(f->store, "q2", Q2, A2, "");
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(f->store),
                                        "INSERT INTO request_texts(id, hash, body)"
                                        " VALUES (1, 7, ?1)", -1, &q, NULL), SQLITE_OK);
    sqlite3_bind_text(q, 1, r1, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    size_t n1 = 0, n2 = 0;
    unsigned char *b1 = from_hex(old_blob1, &n1), *b2 = from_hex(old_blob2, &n2);
    assert_int_equal(b1[1] & 4, 0); /* not spliced */
    assert_decodes(f->store, b1, n1, r1);
    assert_decodes(f->store, b2, n2, r2);
    free(b1);
    free(b2);
    free(r1);
    free(r2);
}

/* ---- the spliced format ------------------------------------------------------------------- */

typedef struct tricky {
    const char *question, *first, *second;
} tricky;

static const tricky tricky_items[] = {
    {Q1, A1, B1},
    {Q2, A2, ""},                                   /* an empty answer */
    {"What is 2+2?", "What is 2+2? It is 4.", "4"}, /* an answer holds the question */
    {"same", "The same answer twice.", "The same answer twice."},
    {"\x01\x1f control \"\\\"", "tab\there\r\nCRLF \\u00e9 not an escape", "\xe2\x80\xa8 and /"},
    {"[Q] ", "\n[A] ", "\n[B] "}, /* texts that are pieces of the template */
    {"A", "[[A]]", "[[B]]"},      /* short texts found inside the template */
};

/* Every tricky item's two calls are encoded in the spliced format (the template is the same,
** so they carry no zstd frame at all) and rebuilt exactly by a codec that knows nothing (texts
** read by SQL), and by arb_request(). Each item gets a new codec: its first call looks for
** the texts, its second finds them where the first had them. */
static void test_spliced_round_trip(void **state)
{
    fixture *f = *state;
    size_t n_items = sizeof tricky_items / sizeof *tricky_items;
    for (size_t i = 0; i < n_items; i++) {
        arb__reqz *z = arb__reqz_create(arb__store_conn(f->store));
        assert_non_null(z);
        const tricky *t = &tricky_items[i];
        char id[16];
        snprintf(id, sizeof id, "t%zu", i);
        put_item(f->store, id, t->question, t->first, t->second);
        for (int ord = 0; ord < 2; ord++) {
            const char *a = ord ? t->second : t->first, *b = ord ? t->first : t->second;
            char *req = sbs_request(t->question, a, b);
            /* every other call reads its texts by SQL instead of being given them */
            int given = (int)(i + (size_t)ord) % 2;
            arb__request_ref refs[3] = {{id, NULL, given ? t->question : NULL},
                                        {id, ord ? "m2" : "m1", given ? a : NULL},
                                        {id, ord ? "m1" : "m2", given ? b : NULL}};
            unsigned char *blob = NULL;
            size_t len = 0;
            assert_int_equal(arb__store_begin(f->store), ARB_OK);
            int got = arb__reqz_encode(z, "jm", req, -1, refs, 3, &blob, &len);
            assert_int_equal(arb__store_commit(f->store), ARB_OK);
            if (got != 1) fail_msg("item %zu: encode: %s", i, arb__reqz_errmsg(z));
            assert_true(blob[1] & 4); /* spliced */
            /* texts that are not pieces of the template: nothing but the header */
            /* nothing but the header; texts that are pieces of the template may be cut
            ** elsewhere than the template's places (another template, compressed against
            ** the skeleton) */
            assert_true(len < (i < 5 ? 40u : 100u));
            assert_decodes(f->store, blob, len, req);
            free(blob);
            free(req);
        }
        arb__reqz_destroy(z);
    }
}

/* A text the request holds otherwise than the escaper writes it (here: \/ for /) is not cut:
** the request is stored in the prefixed format and still rebuilt exactly. */
static void test_text_escaped_otherwise_falls_back(void **state)
{
    fixture *f = *state;
    put_item(f->store, "s", "a/b", "Answer one, long enough to matter.", "Answer two.");
    char *req = sbs_request("a\\/b", "Answer one, long enough to matter.", "Answer two.");
    /* sbs_request escaped the backslash: make it the \/ escape of a JSON writer */
    char *esc = strstr(req, "a\\\\/b");
    assert_non_null(esc);
    memmove(esc + 1, esc + 2, strlen(esc + 2) + 1);
    arb__reqz *z = arb__reqz_create(arb__store_conn(f->store));
    arb__request_ref refs[3] = {{"s", NULL, NULL}, {"s", "m1", NULL}, {"s", "m2", NULL}};
    unsigned char *blob = NULL;
    size_t len = 0;
    assert_int_equal(arb__store_begin(f->store), ARB_OK);
    assert_int_equal(arb__reqz_encode(z, "jm", req, -1, refs, 3, &blob, &len), 1);
    assert_int_equal(arb__store_commit(f->store), ARB_OK);
    assert_int_equal(blob[1] & 4, 0); /* prefixed */
    assert_decodes(f->store, blob, len, req);
    free(blob);
    free(req);
    arb__reqz_destroy(z);
}

/* A blob of the spliced format as its first encoder wrote it (item q2's request against
** template 1, which is the request with empty texts): the decoder must go on reading it, so
** where it puts the texts back, and how it escapes them, may never change. */
static const char spliced_blob[] = "5a0401020002713298198e9d03026d3152f62642bb04063774c119";

static void test_spliced_blob_pinned(void **state)
{
    fixture *f = *state;
    char *r2 = sbs_request(Q2, A2, ""), *template = sbs_request("", "", "");
    put_item(f->store, "q2", Q2, A2, "");
    arb__reqz *z = arb__reqz_create(arb__store_conn(f->store));
    arb__request_ref refs[3] = {{"q2", NULL, Q2}, {"q2", "m1", A2}, {"q2", "m2", ""}};
    unsigned char *blob = NULL;
    size_t len = 0;
    assert_int_equal(arb__reqz_encode(z, "jm", r2, -1, refs, 3, &blob, &len), 1);
    assert_query_text(f->store, "SELECT body FROM request_texts WHERE id = 1", template);
    size_t n = 0;
    unsigned char *pinned = from_hex(spliced_blob, &n);
    assert_int_equal(len, n);
    assert_memory_equal(blob, pinned, n);
    assert_decodes(f->store, pinned, n, r2);
    free(pinned);
    free(blob);
    arb__reqz_destroy(z);
    free(r2);
    free(template);
}

/* Texts and a request long enough that XXH3 takes its vector path (over 240 bytes; 1,024-byte
** blocks): the hashes a blob holds (each ref's text, the whole request) are those of the blob
** written before the store called the CPU-dispatched XXH3 (2026-11-28), so old and new blobs
** name their texts alike. */
static const char long_blob[] = "5a040103000271333d0c71da03026d31f6b63e1b03026d3228059397bb040606df6e"
                                "1e53";

static char *long_text(const char *word, size_t len)
{
    char *t = malloc(len + 1);
    assert_non_null(t);
    for (size_t i = 0; i < len; i++) t[i] = i % 7 == 6 ? ' ' : word[(i * 5 + i / 7) % strlen(word)];
    t[len] = '\0';
    return t;
}

static void test_long_texts_blob_pinned(void **state)
{
    fixture *f = *state;
    char *q = long_text("question", 300), *a = long_text("answer", 1500), *b = long_text("other", 700);
    char *req = sbs_request(q, a, b);
    put_item(f->store, "q3", q, a, b);
    arb__reqz *z = arb__reqz_create(arb__store_conn(f->store));
    arb__request_ref refs[3] = {{"q3", NULL, q}, {"q3", "m1", a}, {"q3", "m2", b}};
    unsigned char *blob = NULL;
    size_t len = 0;
    assert_int_equal(arb__reqz_encode(z, "jm", req, -1, refs, 3, &blob, &len), 1);
    size_t n = 0;
    unsigned char *pinned = from_hex(long_blob, &n);
    char hex[2 * 64 + 1] = "";
    for (size_t i = 0; i < len && i < 64; i++) snprintf(hex + 2 * i, 3, "%02x", blob[i]);
    if (len != n || memcmp(blob, pinned, n)) fail_msg("blob %s", hex);
    assert_decodes(f->store, blob, len, req);
    free(pinned);
    free(blob);
    arb__reqz_destroy(z);
    free(req);
    free(q);
    free(a);
    free(b);
}

/* ---- prompt length ------------------------------------------------------------------------- */

/* The count as it was made before (one byte at a time): code points of the string at p, an
** escape counting one; -1 at a \u escape. *end gets the byte after the closing quote. */
static long long old_count(const char *p, const char **end)
{
    long long n = 0;
    for (p++; *p != '"'; p++) {
        if (*p == '\\') {
            if (p[1] == 'u') return -1;
            n++;
            p++;
        } else {
            n += ((unsigned char)*p & 0xc0) != 0x80;
        }
    }
    *end = p + 1;
    return n;
}

/* A random string content: ASCII, 2-, 3- and 4-byte UTF-8, escapes, in runs of any length (the
** scanner counts eight bytes at a time and sums every 248 bytes). */
static void random_content(arb__buf *b, unsigned *x, size_t len, int allow_u)
{
    static const char *const pieces[] = {"a", "Z", " ", "\xc3\xa9", "\xe2\x82\xac",
                                         "\xf0\x9f\x98\x80", "\\n", "\\\"", "\\\\", "\\t",
                                         "\\/", "\xd0\x96", "0123456789abcdef"};
    size_t n_pieces = sizeof pieces / sizeof *pieces;
    while (b->len < len) {
        *x = *x * 1103515245u + 12345u;
        unsigned r = (*x >> 16) % (unsigned)(n_pieces + 1);
        if (r == n_pieces) {
            if (allow_u && (*x & 0x100)) assert_int_equal(arb__buf_puts(b, "\\ud83d\\ude00"), 0);
            continue;
        }
        /* runs: the same piece many times, so long clean stretches occur */
        unsigned run = 1 + ((*x >> 8) & 0x3f);
        for (unsigned k = 0; k < run; k++) assert_int_equal(arb__buf_puts(b, pieces[r]), 0);
    }
}

static void test_prompt_chars_counts_as_before(void **state)
{
    fixture *f = *state;
    unsigned x = 17;
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(f->store),
                                        "SELECT CAST(total(length(json_extract(m.value,"
                                        " '$.content'))) AS INTEGER) FROM json_each(?1,"
                                        " '$.messages') m", -1, &q, NULL), SQLITE_OK);
    for (int round = 0; round < 400; round++) {
        arb__buf c1, c2, req;
        arb__buf_init(&c1, 0);
        arb__buf_init(&c2, 0);
        arb__buf_init(&req, 0);
        random_content(&c1, &x, (size_t)round % 40, 0);
        random_content(&c2, &x, (size_t)round * 7 % 1500, round % 5 == 0);
        assert_int_equal(arb__buf_printf(&req, "{\"max_tokens\":8,\"messages\":[{\"content\":"
                                               "\"%s\",\"role\":\"system\"},{\"role\":\"user\","
                                               "\"content\":\"%s\"}],\"model\":\"m\"}",
                                         c1.data ? c1.data : "", c2.data ? c2.data : ""), 0);
        const char *p = strstr(req.data, "\"content\":") + 10, *end = NULL;
        long long want = old_count(p, &end);
        if (want >= 0) {
            long long second = old_count(strstr(end, "\"content\":") + 10, &end);
            want = second < 0 ? -1 : want + second;
        }
        long long got = arb__request_scan_prompt_chars(req.data);
        if (got != want) fail_msg("round %d: scanner %lld, before %lld: %s", round, got, want,
                                  req.data);
        if (want >= 0) { /* and what SQL counts, the definition (METHODS §5) */
            sqlite3_bind_text(q, 1, req.data, -1, SQLITE_STATIC);
            assert_int_equal(sqlite3_step(q), SQLITE_ROW);
            assert_int_equal(sqlite3_column_int64(q, 0), want);
            sqlite3_reset(q);
        }
        arb__buf_free(&c1);
        arb__buf_free(&c2);
        arb__buf_free(&req);
    }
    sqlite3_finalize(q);
}

/* The prompt length a request builder tells with the body (arb__judge_request_body_counted,
** passed to the store instead of a scan of the body) is what SQL counts in that body (METHODS
** §5), on decoded texts of every kind: ASCII, 2- to 4-byte UTF-8, quotes, backslashes, the
** escaped controls and the \u ones (left to the store), bytes that are not UTF-8. */
static void test_builder_prompt_chars_is_what_sql_counts(void **state)
{
    fixture *f = *state;
    static const char *const pieces[] = {"a", " ", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                         "\n", "\"", "\\", "\t", "\r", "/", "\x01", "\x1f",
                                         "\x7f", "\xff", "0123456789abcdef"};
    size_t n_pieces = sizeof pieces / sizeof *pieces;
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(f->store),
                                        "SELECT CAST(total(length(json_extract(m.value,"
                                        " '$.content'))) AS INTEGER) FROM json_each(?1,"
                                        " '$.messages') m", -1, &q, NULL), SQLITE_OK);
    arb_judge_config j = {.model = "m", .sampling = arb_sampling_default()};
    unsigned x = 5, told_count = 0;
    for (int round = 0; round < 300; round++) {
        arb__buf text[2];
        for (int t = 0; t < 2; t++) {
            arb__buf_init(&text[t], 0);
            size_t len = t ? (size_t)round * 5 % 700 : (size_t)round % 30;
            while (text[t].len < len) {
                x = x * 1103515245u + 12345u;
                /* the controls and the bad byte only now and then, so most bodies count */
                unsigned r = (x >> 16) % (unsigned)n_pieces;
                if (r >= 11 && r <= 14 && (x & 0x7000)) r = 0;
                unsigned run = 1 + ((x >> 8) & 0x1f);
                for (unsigned k = 0; k < run; k++)
                    assert_int_equal(arb__buf_puts(&text[t], pieces[r]), 0);
            }
        }
        const char *system = round % 3 ? (text[0].data ? text[0].data : "") : NULL;
        long long told = -2;
        char *body = arb__judge_request_body_counted(&j, system, text[1].data, 0, NULL, &told);
        assert_non_null(body);
        assert_true(told >= -1);
        if (told >= 0) {
            told_count++;
            sqlite3_bind_text(q, 1, body, -1, SQLITE_STATIC);
            assert_int_equal(sqlite3_step(q), SQLITE_ROW);
            if (sqlite3_column_int64(q, 0) != told)
                fail_msg("round %d: told %lld, SQL %lld: %s", round, told,
                         (long long)sqlite3_column_int64(q, 0), body);
            sqlite3_reset(q);
        } else { /* left to the store: a \u escape in the body, or a text repaired */
            assert_true(strstr(body, "\\u") || strstr(text[1].data ? text[1].data : "", "\xff") ||
                        (system && strstr(system, "\xff")));
        }
        free(body);
        arb__buf_free(&text[0]);
        arb__buf_free(&text[1]);
    }
    assert_true(told_count > 100);
    sqlite3_finalize(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prefixed_blobs_still_decode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spliced_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_escaped_otherwise_falls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spliced_blob_pinned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_texts_blob_pinned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prompt_chars_counts_as_before, setup, teardown),
        cmocka_unit_test_setup_teardown(test_builder_prompt_chars_is_what_sql_counts, setup,
                                        teardown),
    };
    const char *only = getenv("ARB_TEST");
    if (only && *only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
