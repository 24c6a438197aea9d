/*
** keymap.c -- one hash map from keys to numbers, for every module that looks records up by a
** key: open addressing with linear probing over a power-of-two table kept at most half full.
** Each slot holds 32 bits of the key's hash and a number (1 to UINT32_MAX; 0 marks an empty
** slot), usually the index + 1 of the caller's record. The keys live with the caller (strings,
** records of several fields), who passes a function that says whether a key is the one a number
** stands for, or in the map (fixed-size keys of key_size bytes compared with memcmp, such as the
** 16 bytes of a call key). The caller hashes its keys (XXH3 of their bytes); equal keys must
** hash alike. A removal shifts the entries after the hole back instead of leaving a tombstone,
** so a map that sees a stream of insertions and removals (calls in flight, leases) stays as
** large as its peak. Not thread-safe; it never owns or frees the caller's records.
*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define FIRST_SLOTS 64

/* The 32 bits of a hash a slot keeps: both halves count (XXH3's are equally good). */
static uint32_t fold(uint64_t hash) { return (uint32_t)(hash ^ hash >> 32); }

static int same_key(const arb__keymap *m, size_t i, const void *key, arb__keymap_same_fn same,
                    const void *ctx)
{
    return m->key_size ? !memcmp(m->keys + i * m->key_size, key, m->key_size)
                       : same(ctx, key, m->slots[i].value);
}

/* The slot that holds key, or the empty slot where the probe for it ends. */
static size_t probe(const arb__keymap *m, uint32_t h, const void *key, arb__keymap_same_fn same,
                    const void *ctx)
{
    size_t mask = m->n_slots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        const arb__keymap_slot *s = &m->slots[i];
        if (!s->value || (s->hash == h && same_key(m, i, key, same, ctx))) return i;
    }
}

/* Puts an entry into slot i (empty). */
static void place(arb__keymap *m, size_t i, uint32_t h, const void *key, size_t value)
{
    m->slots[i].hash = h;
    m->slots[i].value = (uint32_t)value;
    if (m->key_size) memcpy(m->keys + i * m->key_size, key, m->key_size);
    m->count++;
}

/* Moves the entries into a table of n_slots slots (a power of two). 0, or -1 out of memory. */
static int rebuild(arb__keymap *m, size_t n_slots)
{
    if (m->key_size && n_slots > SIZE_MAX / m->key_size) return -1;
    arb__keymap_slot *slots = calloc(n_slots, sizeof *slots);
    unsigned char *keys = m->key_size ? malloc(n_slots * m->key_size) : NULL;
    if (!slots || (m->key_size && !keys)) {
        free(slots);
        free(keys);
        return -1;
    }
    size_t mask = n_slots - 1;
    for (size_t i = 0; i < m->n_slots; i++) {
        if (!m->slots[i].value) continue;
        size_t j = m->slots[i].hash & mask;
        while (slots[j].value) j = (j + 1) & mask;
        slots[j] = m->slots[i];
        if (m->key_size) memcpy(keys + j * m->key_size, m->keys + i * m->key_size, m->key_size);
    }
    free(m->slots);
    free(m->keys);
    m->slots = slots;
    m->keys = keys;
    m->n_slots = n_slots;
    return 0;
}

/* Makes room for more entries than m holds now. 0, or -1 when out of memory. */
static int reserve(arb__keymap *m, size_t more)
{
    if (more > SIZE_MAX / 4 - m->count) return -1;
    size_t need = 2 * (m->count + more);
    if (need <= m->n_slots) return 0;
    size_t n_slots = m->n_slots ? m->n_slots : FIRST_SLOTS;
    while (n_slots < need) n_slots *= 2;
    return rebuild(m, n_slots);
}

/* See internal.h. */
size_t arb__keymap_find(const arb__keymap *m, uint64_t hash, const void *key,
                        arb__keymap_same_fn same, const void *ctx)
{
    if (!m->count) return 0;
    return m->slots[probe(m, fold(hash), key, same, ctx)].value;
}

/* See internal.h. */
int arb__keymap_add(arb__keymap *m, uint64_t hash, const void *key, size_t value)
{
    if (!value || value > UINT32_MAX || reserve(m, 1)) return -1;
    uint32_t h = fold(hash);
    size_t mask = m->n_slots - 1, i = h & mask;
    while (m->slots[i].value) i = (i + 1) & mask;
    place(m, i, h, key, value);
    return 0;
}

/* See internal.h. */
int arb__keymap_put(arb__keymap *m, uint64_t hash, const void *key, arb__keymap_same_fn same,
                    const void *ctx, size_t value, size_t *old)
{
    if (!value || value > UINT32_MAX || reserve(m, 1)) return -1;
    uint32_t h = fold(hash);
    size_t i = probe(m, h, key, same, ctx), had = m->slots[i].value;
    if (old) *old = had;
    if (had) m->slots[i].value = (uint32_t)value;
    else place(m, i, h, key, value);
    return 0;
}

/* See internal.h. Linear probing keeps every entry reachable from its home slot through
** occupied slots; each entry after the hole whose home is not between the hole and itself
** moves into the hole, which moves on to where the entry was. */
size_t arb__keymap_remove(arb__keymap *m, uint64_t hash, const void *key,
                          arb__keymap_same_fn same, const void *ctx)
{
    if (!m->count) return 0;
    size_t mask = m->n_slots - 1, i = probe(m, fold(hash), key, same, ctx);
    size_t value = m->slots[i].value;
    if (!value) return 0;
    for (size_t j = (i + 1) & mask; m->slots[j].value; j = (j + 1) & mask) {
        size_t home = m->slots[j].hash & mask;
        if (((j - home) & mask) < ((j - i) & mask)) continue; /* its home lies in (i, j] */
        m->slots[i] = m->slots[j];
        if (m->key_size) memcpy(m->keys + i * m->key_size, m->keys + j * m->key_size, m->key_size);
        i = j;
    }
    m->slots[i].value = 0;
    m->count--;
    return value;
}

/* See internal.h. */
void arb__keymap_clear(arb__keymap *m)
{
    if (m->slots) memset(m->slots, 0, m->n_slots * sizeof *m->slots);
    m->count = 0;
}

/* See internal.h. */
void arb__keymap_free(arb__keymap *m)
{
    free(m->slots);
    free(m->keys);
    m->slots = NULL;
    m->keys = NULL;
    m->n_slots = m->count = 0;
}
