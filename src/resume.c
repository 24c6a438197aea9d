/*
** resume.c -- the judgments a rerun finds already recorded, read from the store in one query
** (arb__store_each_recorded_pairwise) and held as a set, so deciding "nothing to send" for a
** node costs one hash lookup instead of a claim, a read of the stored reply and a rewrite of
** the same row (README "Resuming and reruns").
**
** An entry is the 128-bit hash (XXH3) of a row's identity -- judge, candidate, baseline, item,
** repetition, order -- together with the key of the call it was made from. The key is the hash
** of the exact canonical request (arb__judge_call_key), so a node is taken as recorded only
** when the request it would send now is the one its stored row was judged from: an edited
** item, answer, template or judge sampling changes the key, misses the set, and the node runs
** as before. Template name and option mode are fixed per load (the query filters on them).
** Memory: 16 bytes per entry, at most twice the number of rows.
*/
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack: hashing never allocates */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

/* Low bits of an entry's second word: bit 0 marks a used slot, bit 1 a verdict E. */
#define USED 1u
#define INVALID 2u

struct arb__recorded {
    int options;            /* how verdicts are read (arb_verdict_extract) */
    const char *json_field; /* borrowed during the load only */
    XXH128_hash_t *slots;
    size_t mask; /* capacity - 1 (a power of two) */
    size_t used;
};

/* The identity of a row and its call key, hashed; the two flag bits are cleared. */
static XXH128_hash_t row_hash(const arb__recorded_pairwise *row)
{
    XXH3_state_t state;
    XXH3_INITSTATE(&state);
    XXH3_128bits_reset(&state);
    const char *parts[] = {row->judge_name, row->candidate, row->baseline, row->item_id};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        XXH3_128bits_update(&state, parts[i], strlen(parts[i]) + 1);
    int coords[2] = {row->rep, row->order};
    XXH3_128bits_update(&state, coords, sizeof coords);
    XXH3_128bits_update(&state, row->call_key, strlen(row->call_key));
    XXH128_hash_t h = XXH3_128bits_digest(&state);
    h.low64 &= ~(XXH64_hash_t)(USED | INVALID);
    return h;
}

static size_t find_slot(const arb__recorded *r, XXH128_hash_t h)
{
    size_t i = (size_t)h.high64 & r->mask;
    while ((r->slots[i].low64 & USED) &&
           (r->slots[i].high64 != h.high64 ||
            (r->slots[i].low64 & ~(XXH64_hash_t)(USED | INVALID)) != h.low64))
        i = (i + 1) & r->mask;
    return i;
}

/* Keeps the load under 3/4; returns 0 or -1 when out of memory. */
static int reserve(arb__recorded *r)
{
    size_t cap = r->slots ? r->mask + 1 : 0;
    if (cap && (r->used + 1) * 4 <= cap * 3) return 0;
    size_t new_cap = cap ? cap * 2 : 1024;
    XXH128_hash_t *slots = calloc(new_cap, sizeof *slots);
    if (!slots) return -1;
    arb__recorded grown = {r->options, r->json_field, slots, new_cap - 1, r->used};
    for (size_t i = 0; i < cap; i++)
        if (r->slots[i].low64 & USED) {
            XXH128_hash_t h = r->slots[i];
            h.low64 &= ~(XXH64_hash_t)(USED | INVALID);
            slots[find_slot(&grown, h)] = r->slots[i];
        }
    free(r->slots);
    *r = grown;
    return 0;
}

static int add_row(void *ud, const arb__recorded_pairwise *row)
{
    arb__recorded *r = ud;
    /* As the protocols' done callbacks read a reply: a row whose reply reads otherwise now is
    ** left to the normal path, which judges the stored reply again and rewrites the row. */
    char now = row->content ? arb_verdict_extract(row->content, strlen(row->content), r->options,
                                                  r->json_field)
                            : 'E';
    if (now != row->position_verdict) return 0;
    if (reserve(r)) return -1;
    XXH128_hash_t h = row_hash(row);
    size_t i = find_slot(r, h);
    if (!(r->slots[i].low64 & USED)) r->used++;
    h.low64 |= USED | (row->position_verdict == 'E' ? INVALID : 0);
    r->slots[i] = h;
    return 0;
}

/* See internal.h. */
arb_status arb__recorded_load_pairwise(arb_store *s, const char *protocol,
                                       const char *template_name, int options,
                                       const char *json_field, arb__recorded **out)
{
    *out = NULL;
    arb__recorded *r = calloc(1, sizeof *r);
    if (!r) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    r->options = options;
    r->json_field = json_field;
    arb_status st =
        arb__store_each_recorded_pairwise(s, protocol, template_name, options, add_row, r);
    r->json_field = NULL;
    if (st) {
        arb__recorded_destroy(r);
        return st;
    }
    *out = r;
    return ARB_OK;
}

/* See internal.h. */
void arb__recorded_destroy(arb__recorded *r)
{
    if (!r) return;
    free(r->slots);
    free(r);
}

/* See internal.h. */
int arb__recorded_has_pairwise(const arb__recorded *r, const arb__recorded_pairwise *row,
                               int *invalid)
{
    *invalid = 0;
    if (!r || !r->used) return 0;
    size_t i = find_slot(r, row_hash(row));
    if (!(r->slots[i].low64 & USED)) return 0;
    *invalid = (r->slots[i].low64 & INVALID) != 0;
    return 1;
}
