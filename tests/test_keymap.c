/*
** test_keymap.c -- the hash map of keymap.c that the store's leases, the executor's calls in
** flight, the dataset's indices and the label importer share: keys held by the caller or by the
** map, forced collisions, clusters that wrap around the table's end, growth, removal without
** tombstones, and many keys checked against a plain array.
*/
#include "internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>

/* Records with string names that the caller keeps; the map holds a number v for the record of
** index (v - 1) % n: index + 1, or that plus a multiple of n when a put changes the number. */
typedef struct names {
    char (*name)[32];
    size_t n;
} names;

static int has_name(const void *ctx, const void *key, size_t value)
{
    const names *r = ctx;
    assert_true(value >= 1); /* 0 is no entry's number */
    return !strcmp(r->name[(value - 1) % r->n], key);
}

static names make_names(size_t n)
{
    names r = {calloc(n, sizeof *r.name), n};
    assert_non_null(r.name);
    for (size_t i = 0; i < n; i++) snprintf(r.name[i], sizeof r.name[i], "name-%zu", i);
    return r;
}

/* A hash that sends every key to the same slot: each lookup walks one cluster. */
static uint64_t same_hash(const char *s)
{
    (void)s;
    return 7;
}

static uint64_t xxh(const char *s) { return XXH3_64bits(s, strlen(s)); }

/* Keys the caller keeps, all with one hash: every one is found by its own name (the map cannot
** tell them apart by hash), put replaces a number and says the old one, absent keys have 0. */
static void caller_keys_all_colliding(void **state)
{
    (void)state;
    names r = make_names(40);
    arb__keymap m = {0};
    assert_int_equal(arb__keymap_find(&m, 7, "name-0", has_name, &r), 0); /* empty, no slots */
    assert_int_equal(arb__keymap_remove(&m, 7, "name-0", has_name, &r), 0);
    for (size_t i = 0; i < 20; i++)
        assert_int_equal(arb__keymap_add(&m, same_hash(r.name[i]), NULL, i + 1), 0);
    assert_int_equal(m.count, 20);
    for (size_t i = 0; i < 20; i++)
        assert_int_equal(arb__keymap_find(&m, 7, r.name[i], has_name, &r), i + 1);
    assert_int_equal(arb__keymap_find(&m, 7, "name-20", has_name, &r), 0);
    assert_int_equal(arb__keymap_find(&m, 8, "name-3", has_name, &r), 0); /* another hash */
    /* put on a present key replaces; on an absent one adds */
    size_t old = 99;
    assert_int_equal(arb__keymap_put(&m, 7, "name-3", has_name, &r, 44, &old), 0);
    assert_int_equal(old, 4);
    assert_int_equal(arb__keymap_find(&m, 7, "name-3", has_name, &r), 44);
    assert_int_equal(m.count, 20);
    assert_int_equal(arb__keymap_put(&m, 7, "name-30", has_name, &r, 31, &old), 0);
    assert_int_equal(old, 0);
    assert_int_equal(m.count, 21);
    assert_int_equal(arb__keymap_find(&m, 7, "name-30", has_name, &r), 31);
    /* removing from the middle of the cluster keeps the rest reachable */
    assert_int_equal(arb__keymap_remove(&m, 7, "name-5", has_name, &r), 6);
    assert_int_equal(arb__keymap_remove(&m, 7, "name-5", has_name, &r), 0);
    assert_int_equal(m.count, 20);
    for (size_t i = 0; i < 20; i++)
        assert_int_equal(arb__keymap_find(&m, 7, r.name[i], has_name, &r),
                         i == 5 ? 0 : i == 3 ? 44 : i + 1);
    assert_int_equal(arb__keymap_find(&m, 7, "name-30", has_name, &r), 31);
    arb__keymap_free(&m);
    free(r.name);
}

/* Sixteen-byte keys that the map keeps (the store's lease keys): keys alike in their first 8
** bytes are told apart, a removed key can come back, and the copy is the map's own (the
** caller's buffer is overwritten after each call). */
static void map_keeps_fixed_size_keys(void **state)
{
    (void)state;
    arb__keymap m = {.key_size = 16};
    unsigned char k[16];
    for (unsigned i = 0; i < 300; i++) {
        memset(k, 0xab, sizeof k);
        memcpy(k + 12, &i, sizeof i);
        size_t old = 1;
        assert_int_equal(arb__keymap_put(&m, XXH3_64bits(k, 16), k, NULL, NULL, i + 1, &old), 0);
        assert_int_equal(old, 0);
    }
    memset(k, 0, sizeof k); /* the map's copies must not change with it */
    assert_int_equal(m.count, 300);
    assert_true(m.n_slots >= 600);
    for (unsigned i = 0; i < 300; i++) {
        memset(k, 0xab, sizeof k);
        memcpy(k + 12, &i, sizeof i);
        uint64_t h = XXH3_64bits(k, 16);
        assert_int_equal(arb__keymap_find(&m, h, k, NULL, NULL), i + 1);
        if (i % 3 == 0) assert_int_equal(arb__keymap_remove(&m, h, k, NULL, NULL), i + 1);
    }
    assert_int_equal(m.count, 200);
    for (unsigned i = 0; i < 300; i++) {
        memset(k, 0xab, sizeof k);
        memcpy(k + 12, &i, sizeof i);
        assert_int_equal(arb__keymap_find(&m, XXH3_64bits(k, 16), k, NULL, NULL),
                         i % 3 ? i + 1 : 0);
    }
    /* a removed key put again is new (old 0); a key with another 16th byte is another key */
    memset(k, 0xab, sizeof k);
    unsigned zero = 0;
    memcpy(k + 12, &zero, sizeof zero);
    size_t old = 1;
    assert_int_equal(arb__keymap_put(&m, XXH3_64bits(k, 16), k, NULL, NULL, 7, &old), 0);
    assert_int_equal(old, 0);
    k[15] ^= 1;
    assert_int_equal(arb__keymap_find(&m, XXH3_64bits(k, 16), k, NULL, NULL), 0);
    /* the same hash with other bytes is not the key either */
    k[15] ^= 1;
    unsigned char other[16];
    memset(other, 0x11, sizeof other);
    assert_int_equal(arb__keymap_find(&m, XXH3_64bits(k, 16), other, NULL, NULL), 0);
    arb__keymap_free(&m);
    assert_int_equal(m.key_size, 16);
    assert_int_equal(m.count, 0);
    assert_int_equal(arb__keymap_find(&m, 1, k, NULL, NULL), 0);
    assert_int_equal(arb__keymap_add(&m, XXH3_64bits(k, 16), k, 3), 0); /* usable again */
    assert_int_equal(arb__keymap_find(&m, XXH3_64bits(k, 16), k, NULL, NULL), 3);
    arb__keymap_free(&m);
}

/* Clusters that run over the table's end and back to its start: a removal shifts back only the
** entries whose home slot allows it, on both sides of the wrap. The hashes are picked so that
** a map of 64 slots puts the keys' homes at 62, 63 and 0 (hash bits above 32 are zero, so the
** slot is the hash's low bits). */
static void removal_across_the_wrap(void **state)
{
    (void)state;
    names r = make_names(12);
    static const uint64_t home[12] = {62, 62, 63, 0, 62, 1, 0, 63, 2, 62, 1, 0};
    for (int round = 0; round < 12; round++) { /* remove each key in turn from a full cluster */
        arb__keymap m = {0};
        for (size_t i = 0; i < 12; i++)
            assert_int_equal(arb__keymap_add(&m, home[i], NULL, i + 1), 0);
        assert_int_equal(m.n_slots, 64);
        for (int gone = 0; gone <= round; gone++) {
            size_t victim = (size_t)(gone * 5 + round) % 12; /* differs from round to round */
            size_t had = arb__keymap_remove(&m, home[victim], r.name[victim], has_name, &r);
            assert_true(had == victim + 1 || had == 0); /* 0: removed earlier in this round */
            for (size_t i = 0; i < 12; i++) {
                size_t v = arb__keymap_find(&m, home[i], r.name[i], has_name, &r);
                assert_true(v == 0 || v == i + 1);
            }
        }
        /* every key not removed is still found, every removed one is not, and the count agrees */
        size_t live = 0;
        for (size_t i = 0; i < 12; i++) {
            int removed = 0;
            for (int gone = 0; gone <= round; gone++)
                removed |= (size_t)(gone * 5 + round) % 12 == i;
            assert_int_equal(arb__keymap_find(&m, home[i], r.name[i], has_name, &r),
                             removed ? 0 : i + 1);
            live += !removed;
        }
        assert_int_equal(m.count, live);
        /* no tombstones: the occupied slots are exactly the live entries */
        size_t occupied = 0;
        for (size_t s = 0; s < m.n_slots; s++) occupied += m.slots[s].value != 0;
        assert_int_equal(occupied, live);
        arb__keymap_free(&m);
    }
    free(r.name);
}

/* A small deterministic generator (xorshift64*), so a failure repeats. */
static uint64_t next_random(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1Dull;
}

/* Many keys, added and removed at random, against an array that says which are in: after each
** step of a phase, every key's number is what the array says; the table stays at most half full
** and a power of two. With few distinct hashes (hash mod 61) the clusters are long; with XXH3
** they are not. */
static void many_keys_against_an_array(void **state)
{
    (void)state;
    enum { N = 20000 };
    names r = make_names(N);
    size_t *want = calloc(N, sizeof *want); /* the number each key has, 0 none */
    assert_non_null(want);
    for (int weak = 0; weak < 2; weak++) {
        arb__keymap m = {0};
        memset(want, 0, N * sizeof *want);
        uint64_t x = 0x9E3779B97F4A7C15ull, live = 0;
        for (int step = 0; step < 6 * N; step++) {
            size_t i = (size_t)(next_random(&x) % (weak ? 3000 : N));
            uint64_t h = weak ? xxh(r.name[i]) % 61 : xxh(r.name[i]);
            uint64_t what = next_random(&x) % 4;
            if (what == 0) {
                size_t had = arb__keymap_remove(&m, h, r.name[i], has_name, &r);
                assert_int_equal(had, want[i]);
                live -= want[i] != 0;
                want[i] = 0;
            } else if (what == 1 && !want[i]) {
                assert_int_equal(arb__keymap_add(&m, h, NULL, i + 1), 0);
                want[i] = i + 1;
                live++;
            } else {
                size_t old = 12345, value = i + 1 + N * (size_t)(next_random(&x) % 1000);
                assert_int_equal(arb__keymap_put(&m, h, r.name[i], has_name, &r, value, &old), 0);
                assert_int_equal(old, want[i]);
                live += !want[i];
                want[i] = value;
            }
            assert_int_equal(m.count, live);
            if (step % 4999 == 0 || step == 6 * N - 1) {
                assert_true(m.n_slots >= 2 * m.count);
                assert_int_equal(m.n_slots & (m.n_slots - 1), 0);
                for (size_t k = 0; k < (weak ? 3000u : (size_t)N); k++) {
                    uint64_t hk = weak ? xxh(r.name[k]) % 61 : xxh(r.name[k]);
                    assert_int_equal(arb__keymap_find(&m, hk, r.name[k], has_name, &r), want[k]);
                }
            }
        }
        arb__keymap_free(&m);
    }
    free(want);
    free(r.name);
}

/* A same() for lookups that must be settled by the hash alone. */
static int never_called(const void *ctx, const void *key, size_t value)
{
    (void)ctx;
    (void)key;
    (void)value;
    fail_msg("same() called for a slot whose hash differs");
    return 0;
}

/* A same() whose key is the number wanted; ctx counts its calls. */
static int is_number(const void *ctx, const void *key, size_t value)
{
    ++*(size_t *)ctx;
    return value == *(const size_t *)key;
}

/* Growth moves every entry by its kept hash (no key is compared, none is lost), numbers out of
** range are refused without a change, and clear keeps the room so adding back takes no memory. */
static void growth_values_and_clear(void **state)
{
    (void)state;
    arb__keymap m = {0};
    assert_int_equal(arb__keymap_add(&m, 1, NULL, 0), -1);
    assert_int_equal(arb__keymap_add(&m, 1, NULL, (size_t)UINT32_MAX + 1), -1);
    assert_int_equal(arb__keymap_put(&m, 1, "k", never_called, NULL, 0, NULL), -1);
    assert_int_equal(m.count, 0);
    size_t last_slots = 0;
    int rebuilds = 0;
    for (size_t i = 0; i < 5000; i++) {
        uint64_t h = XXH3_64bits(&i, sizeof i);
        assert_int_equal(arb__keymap_add(&m, h, NULL, i + 1), 0);
        if (m.n_slots != last_slots) rebuilds++;
        last_slots = m.n_slots;
        assert_true(m.n_slots >= 2 * m.count);
    }
    assert_true(rebuilds >= 7); /* 64 slots, then doubling to 16384 */
    assert_int_equal(arb__keymap_add(&m, 5, NULL, UINT32_MAX), 0); /* the largest number */
    /* every key is found, and its number confirmed by one call of same: the kept hash bits
    ** pass over the other entries of its cluster */
    for (size_t i = 0; i < 5000; i++) {
        size_t calls = 0, want = i + 1;
        assert_int_equal(arb__keymap_find(&m, XXH3_64bits(&i, sizeof i), &want, is_number, &calls),
                         i + 1);
        assert_int_equal(calls, 1);
    }
    size_t slots = m.n_slots;
    void *before = m.slots;
    arb__keymap_clear(&m);
    assert_int_equal(m.count, 0);
    assert_int_equal(m.n_slots, slots);
    assert_int_equal(arb__keymap_find(&m, 5, "x", never_called, NULL), 0);
    for (size_t i = 0; i < 5000; i++)
        assert_int_equal(arb__keymap_add(&m, XXH3_64bits(&i, sizeof i), NULL, i + 1), 0);
    assert_ptr_equal(m.slots, before); /* no new table */
    arb__keymap_free(&m);
    assert_null(m.slots);
    assert_int_equal(m.n_slots, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(caller_keys_all_colliding),
        cmocka_unit_test(map_keeps_fixed_size_keys),
        cmocka_unit_test(removal_across_the_wrap),
        cmocka_unit_test(many_keys_against_an_array),
        cmocka_unit_test(growth_values_and_clear),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
