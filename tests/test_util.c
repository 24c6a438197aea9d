/*
** test_util.c -- the shared helpers of util.c that several modules lean on: interned string
** tables, terminal-safe names, and JSON metrics that are never NaN.
*/
#include "internal.h"

#include <malloc.h> /* malloc_usable_size (glibc): what a stolen text really holds */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Indices are dense and stable; equal strings share one index; a table survives many rehashes
** and can be reused after being freed. */
static void strtab_interns(void **state)
{
    (void)state;
    arb__strtab t;
    memset(&t, 0, sizeof t);
    assert_int_equal(arb__strtab_find(&t, "x"), UINT32_MAX);
    assert_int_equal(arb__strtab_intern(&t, "gpt4"), 0);
    assert_int_equal(arb__strtab_intern(&t, "claude"), 1);
    assert_int_equal(arb__strtab_intern(&t, "gpt4"), 0);
    assert_int_equal(arb__strtab_intern(&t, ""), 2);
    assert_int_equal(t.n, 3);
    char name[32];
    for (int k = 0; k < 5000; k++) {
        snprintf(name, sizeof name, "model-%d", k);
        assert_int_equal(arb__strtab_intern(&t, name), (uint32_t)(3 + k));
    }
    for (int k = 0; k < 5000; k += 7) {
        snprintf(name, sizeof name, "model-%d", k);
        assert_int_equal(arb__strtab_find(&t, name), (uint32_t)(3 + k));
        assert_string_equal(t.names[3 + k], name);
    }
    assert_int_equal(arb__strtab_find(&t, "claude"), 1);
    assert_int_equal(arb__strtab_find(&t, "model-5000"), UINT32_MAX);
    arb__strtab_free(&t);
    assert_int_equal(t.n, 0);
    assert_int_equal(arb__strtab_intern(&t, "again"), 0);
    arb__strtab_free(&t);
}

/* Control characters (C0, DEL, C1) and invalid UTF-8 become '?'; other text is kept. */
static void put_safe_neutralises_controls(void **state)
{
    (void)state;
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__buf_put_safe(&b, "a\x1b[2Jb\x07\x7f\xc2\x9b\xff\xc3\xa9"), 0);
    assert_string_equal(b.data, "a?[2Jb????\xc3\xa9");
    arb__buf_free(&b);
}

/* The explicit bidirectional controls (U+202A..U+202E, U+2066..U+2069) become '?'; their
** neighbours (U+2029, U+202F, U+2065, U+206A), right-to-left letters and RLM stay. */
static void put_safe_neutralises_bidi_controls(void **state)
{
    (void)state;
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__buf_put_safe(&b, "j\xe2\x80\xaa" "1\xe2\x80\xae" "2\xe2\x81\xa6"
                                           "3\xe2\x81\xa9" "4"),
                     0);
    assert_string_equal(b.data, "j?1?2?3?4");
    arb__buf_free(&b);
    static const char kept[] = "\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa"
                               "\xd7\xa9\xd7\x9c\xe2\x80\x8f";
    arb__buf_init(&b, 0);
    assert_int_equal(arb__buf_put_safe(&b, kept), 0);
    assert_string_equal(b.data, kept);
    arb__buf_free(&b);
}

/* Undefined metrics are JSON null; arb__json_set fails on a NULL value without leaking. */
static void json_metric_and_set(void **state)
{
    (void)state;
    json_t *o = json_object();
    assert_int_equal(arb__json_set(o, "a", arb__json_metric(0.25)), 0);
    assert_int_equal(arb__json_set(o, "b", arb__json_metric(NAN)), 0);
    assert_int_equal(arb__json_set(o, "c", arb__json_metric(INFINITY)), 0);
    assert_int_equal(arb__json_set(o, "d", NULL), -1);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_string_equal(s, "{\"a\":0.25,\"b\":null,\"c\":null}");
    free(s);
    json_decref(o);
}

/* arb__buf_json_string writes what jansson's dump writes (the export's lines and the request
** bodies must be those bytes): every ASCII byte (controls, quote, backslash, DEL, NUL) alone,
** inside a run of eight clean bytes and at its edges, and UTF-8 unescaped. */
/* A text stolen from a buffer keeps only what it needs: the JSON escaper reserves 6 bytes per
** byte in, and request bodies built that way live for a whole slice of sbs (they held ~180 MB
** more at 100,000 items before arb__buf_steal gave the room back). */
/* arb__buf_json_chars (the unquoted form request bodies are written in pieces with) is
** arb__buf_json_text without its quotes, and jansson's dump inside them, on short random texts
** around the escaper's 16- and 8-byte blocks: quotes, backslashes, controls, DEL, multi-byte
** UTF-8 and invalid bytes at every offset; 1 (nothing written) exactly when not UTF-8. */
static void json_chars_is_json_text_unquoted(void **state)
{
    (void)state;
    static const char *const pieces[] = {"a", "b", "0", " ", "\"", "\\", "\n", "\t", "\x01",
                                         "\x1f", "\x7f", "/", "\xc3\xa9", "\xe2\x80\xa8",
                                         "\xf0\x9f\x98\x8a", "\xff", "\xc3", "\x80"};
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 4000; round++) {
        char text[256];
        size_t n = 0;
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        size_t want_len = (size_t)(rng % 80), dirty = (rng >> 8) % 3; /* 0: mostly clean */
        while (n < want_len) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            size_t pick = dirty ? (size_t)(rng % 18) : (rng % 16 ? (size_t)(rng % 4) : (size_t)(rng % 18));
            size_t len = strlen(pieces[pick]);
            memcpy(text + n, pieces[pick], len);
            n += len;
        }
        text[n] = '\0';
        int valid = arb__utf8_valid(text, n, NULL);
        arb__buf quoted, checked, bare;
        arb__buf_init(&quoted, 0);
        arb__buf_init(&checked, 0);
        arb__buf_init(&bare, 0);
        assert_int_equal(arb__buf_puts(&checked, "x") | arb__buf_puts(&bare, "x"), 0);
        assert_int_equal(arb__buf_json_text(&checked, text, n), valid ? 0 : 1);
        assert_int_equal(arb__buf_json_chars(&bare, text, n), valid ? 0 : 1);
        if (!valid) {
            assert_string_equal(checked.data, "x");
            assert_string_equal(bare.data, "x");
        } else {
            assert_int_equal(arb__buf_json_string(&quoted, text, n), 0);
            json_t *j = json_stringn(text, n);
            assert_non_null(j);
            char *want = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
            assert_string_equal(quoted.data, want);
            assert_string_equal(checked.data + 1, want);
            assert_int_equal(bare.len, quoted.len - 1);
            assert_memory_equal(bare.data + 1, want + 1, quoted.len - 2);
            free(want);
            json_decref(j);
        }
        arb__buf_free(&quoted);
        arb__buf_free(&checked);
        arb__buf_free(&bare);
    }
}

/* The decimal writer used instead of printf in request bodies and heads: "%lld" exactly. */
static void decimal_matches_printf(void **state)
{
    (void)state;
    const long long values[] = {0, 1, -1, 9, 10, -10, 99, 100, 1024, 2147483647, -2147483648LL,
                                4294967296LL, 1234567890123456789LL, LLONG_MAX, LLONG_MIN};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char want[32], got[24];
        snprintf(want, sizeof want, "%lld", values[i]);
        assert_int_equal(arb__decimal(got, values[i]), strlen(want));
        assert_string_equal(got, want);
        arb__buf b;
        arb__buf_init(&b, 0);
        assert_int_equal(arb__buf_puts(&b, "x=") | arb__buf_put_int(&b, values[i]), 0);
        assert_string_equal(b.data + 2, want);
        arb__buf_free(&b);
    }
}

static void stolen_text_gives_back_reserved_room(void **state)
{
    (void)state;
    size_t n = 3000;
    char *prompt = malloc(n + 1);
    assert_non_null(prompt);
    memset(prompt, 'q', n);
    prompt[n] = '\0';
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__buf_json_string(&b, prompt, n), 0);
    assert_true(b.cap >= 6 * n); /* what the escaper reserved: the test means something */
    size_t len = b.len;
    char *text = arb__buf_steal(&b);
    assert_int_equal(strlen(text), len);
    assert_true(malloc_usable_size(text) < len + 256 + len / 4);
    free(text);
    /* a buffer that fits its text is handed over as it is */
    arb__buf_init(&b, 0);
    assert_int_equal(arb__buf_puts(&b, "short"), 0);
    text = arb__buf_steal(&b);
    assert_string_equal(text, "short");
    free(text);
    free(prompt);
}

static void json_string_as_jansson(void **state)
{
    (void)state;
    for (int c = 0; c < 128; c++) {
        char text[32];
        for (size_t at = 0; at < 20; at += 3) {
            memset(text, 'x', sizeof text);
            memcpy(text + 22, "\xc3\xa9\xe2\x80\x9c", 5);
            text[at] = (char)c;
            json_t *j = json_stringn(text, 27);
            assert_non_null(j);
            char *want = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
            json_decref(j);
            arb__buf b;
            arb__buf_init(&b, 0);
            assert_int_equal(arb__buf_json_string(&b, text, 27), 0);
            assert_string_equal(b.data, want);
            arb__buf_free(&b);
            free(want);
        }
    }
    /* past the 64 KB blocks the escaper reserves room for, a sequence across their edge */
    size_t n = 70000;
    char *big = malloc(n);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++) big[i] = "ab\"\n\\c"[i % 7];
    memcpy(big + 65534, "\xe6\x97\xa5", 3);
    memcpy(big + n - 4, "\xf0\x9f\x98\x80", 4);
    json_t *j = json_stringn(big, n);
    char *want = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    arb__buf b;
    arb__buf_init(&b, 0);
    assert_int_equal(arb__buf_json_text(&b, big, n), 0);
    assert_string_equal(b.data, want);
    /* not UTF-8: 1, and what was in the buffer stays as it was */
    arb__buf_reset(&b);
    assert_int_equal(arb__buf_append(&b, "{", 1), 0);
    big[65535] = 'x'; /* cuts the sequence of 65534 */
    assert_int_equal(arb__buf_json_text(&b, big, n), 1);
    assert_int_equal(arb__buf_json_text(&b, "ok\xc3", 3), 1);
    assert_int_equal(arb__buf_json_text(&b, "\xed\xa0\x80", 3), 1); /* a surrogate */
    assert_string_equal(b.data, "{");
    arb__buf_free(&b);
    json_decref(j);
    free(want);
    free(big);
}

/* Random texts of escapes, controls, NULs, UTF-8 of every length (U+2028 too) and, in some,
** bytes that are not UTF-8, up to ~3 blocks of the escaper long: arb__buf_json_text writes
** jansson's dump of the text when it is UTF-8 and refuses it (1) when jansson would refuse it;
** arb__buf_json_string writes the same for UTF-8. */
static void json_string_random_as_jansson(void **state)
{
    (void)state;
    static const char *const good[] = {"a", "xyzw1234", "\"", "\\", "\x01", "\x1f", "\x7f", "/",
                                       "\xc3\xa9", "\xe2\x80\xa8", "\xef\xbf\xbd",
                                       "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\n", "\t", " "};
    static const char *const bad[] = {"\xc3", "\xed\xa0\x80", "\xff", "\x80", "\xc0\xaf",
                                      "\xf4\x90\x80\x80", "\xe0\x80\xaf", "\xf0\x9f\x98"};
    unsigned long long x = 88172645463325252ull;
#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
    arb__buf t, b;
    arb__buf_init(&t, 0);
    arb__buf_init(&b, 0);
    for (int round = 0; round < 300; round++) {
        arb__buf_reset(&t);
        size_t pieces = NEXT() % (round % 10 == 0 ? 60000 : 200);
        int spoil = round % 3 == 0;
        for (size_t k = 0; k < pieces; k++) {
            const char *piece = good[NEXT() % (sizeof good / sizeof *good)];
            if (NEXT() % 97 == 0) piece = "\0";
            assert_int_equal(arb__buf_append(&t, piece, *piece ? strlen(piece) : 1), 0);
        }
        if (spoil) {
            const char *piece = bad[NEXT() % (sizeof bad / sizeof *bad)];
            size_t at = t.len ? NEXT() % t.len : 0;
            while (at && ((unsigned char)t.data[at] & 0xC0) == 0x80) at--; /* a boundary */
            arb__buf other;
            arb__buf_init(&other, 0);
            assert_int_equal(arb__buf_append(&other, t.data ? t.data : "", at), 0);
            assert_int_equal(arb__buf_puts(&other, piece), 0);
            assert_int_equal(arb__buf_append(&other, t.data ? t.data + at : "", t.len - at), 0);
            arb__buf_free(&t);
            t = other;
        }
        const char *text = t.data ? t.data : "";
        json_t *j = json_stringn(text, t.len);
        assert_int_equal(j == NULL, spoil);
        arb__buf_reset(&b);
        assert_int_equal(arb__buf_json_text(&b, text, t.len), spoil);
        if (j) {
            char *want = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
            assert_non_null(want);
            assert_int_equal(b.len, strlen(want));
            assert_memory_equal(b.data, want, b.len);
            free(want);
            json_decref(j);
        }
        if (spoil) continue; /* jansson's dump refuses what is not UTF-8 */
        j = json_stringn_nocheck(text, t.len);
        char *want = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
        assert_non_null(want);
        arb__buf_reset(&b);
        assert_int_equal(arb__buf_json_string(&b, text, t.len), 0);
        assert_int_equal(b.len, strlen(want));
        assert_memory_equal(b.data, want, b.len);
        free(want);
        json_decref(j);
    }
#undef NEXT
    arb__buf_free(&t);
    arb__buf_free(&b);
}

/* arb__json_decode_string scans 16 (SSE2) or 8 bytes at a time: a quote, an escape, a control
** character or the end at every offset from a run's start (past two 16-byte blocks), a byte
** >= 0x80 next to them, are found as a byte at a time would find them. */
static void json_decode_string_at_every_offset(void **state)
{
    (void)state;
    for (size_t at = 0; at < 40; at++) {
        char text[64], want[64];
        memset(text, 'x', sizeof text);
        text[0] = '"';
        text[1 + at] = '\xc3'; /* UTF-8 é before the special byte: not special */
        text[2 + at] = '\xa9';
        /* a closing quote */
        memcpy(text + 3 + at, "\"tail", 5);
        arb__buf out;
        arb__buf_init(&out, 0);
        const char *end = arb__json_decode_string(text, text + 8 + at, &out);
        assert_ptr_equal(end, text + 4 + at);
        memset(want, 'x', at);
        memcpy(want + at, "\xc3\xa9", 3);
        assert_string_equal(out.data, want);
        /* an escape, then the quote */
        arb__buf_reset(&out);
        memcpy(text + 3 + at, "\\n\"", 3);
        end = arb__json_decode_string(text, text + 6 + at, &out);
        assert_ptr_equal(end, text + 6 + at);
        memcpy(want + at + 2, "\n", 2);
        assert_string_equal(out.data, want);
        /* a control character: not a JSON string */
        arb__buf_reset(&out);
        text[3 + at] = '\t';
        assert_null(arb__json_decode_string(text, text + 48, &out));
        /* no closing quote before the end */
        arb__buf_reset(&out);
        text[3 + at] = 'x';
        assert_null(arb__json_decode_string(text, text + 4 + at, &out));
        arb__buf_free(&out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strtab_interns),
        cmocka_unit_test(decimal_matches_printf),
        cmocka_unit_test(json_chars_is_json_text_unquoted),
        cmocka_unit_test(json_decode_string_at_every_offset),
        cmocka_unit_test(put_safe_neutralises_controls),
        cmocka_unit_test(put_safe_neutralises_bidi_controls),
        cmocka_unit_test(json_metric_and_set),
        cmocka_unit_test(json_string_as_jansson),
        cmocka_unit_test(stolen_text_gives_back_reserved_room),
        cmocka_unit_test(json_string_random_as_jansson),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
