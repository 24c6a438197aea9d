/*
** families.c -- the families of judges and contestant models (METHODS §5: judges of one family
** agree more, and may favour their own family's answers) as a lookup, read from the store's
** families table (filled from judges files and imports; never from a file directly here).
** Names are looked up by binary search over the store's rows sorted by strcmp.
*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct family_entry {
    char *name, *family;
} family_entry;

struct arb__families {
    family_entry *of[2]; /* [0] role "judge", [1] role "model"; sorted by name */
    size_t n[2], cap[2];
    int nomem;           /* set while loading when a copy failed */
};

static int role_index(const char *role) { return strcmp(role, "judge") == 0 ? 0 : 1; }

static int add_family(void *ud, const char *name, const char *role, const char *family)
{
    arb__families *f = ud;
    int r = role_index(role);
    if (f->n[r] == f->cap[r]) {
        size_t cap = f->cap[r] ? 2 * f->cap[r] : 16;
        family_entry *e = realloc(f->of[r], cap * sizeof *e);
        if (!e) return f->nomem = 1;
        f->of[r] = e;
        f->cap[r] = cap;
    }
    family_entry *e = &f->of[r][f->n[r]];
    e->name = arb__strdup(name);
    e->family = arb__strdup(family);
    if (!e->name || !e->family) {
        free(e->name);
        free(e->family);
        return f->nomem = 1;
    }
    f->n[r]++;
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const family_entry *)a)->name, ((const family_entry *)b)->name);
}

/* See internal.h. */
arb_status arb__families_load(arb_store *s, arb__families **out)
{
    *out = NULL;
    arb__families *f = calloc(1, sizeof *f);
    if (!f) return arb__store_fail(s, ARB_NOMEM, "families: out of memory");
    arb_status st = arb__store_each_family(s, add_family, f);
    if (st == ARB_OK && f->nomem) st = arb__store_fail(s, ARB_NOMEM, "families: out of memory");
    if (st != ARB_OK) {
        arb__families_free(f);
        return st;
    }
    for (int r = 0; r < 2; r++)
        if (f->n[r]) qsort(f->of[r], f->n[r], sizeof *f->of[r], cmp_entry);
    *out = f;
    return ARB_OK;
}

/* See internal.h. */
void arb__families_free(arb__families *f)
{
    if (!f) return;
    for (int r = 0; r < 2; r++) {
        for (size_t i = 0; i < f->n[r]; i++) {
            free(f->of[r][i].name);
            free(f->of[r][i].family);
        }
        free(f->of[r]);
    }
    free(f);
}

/* See internal.h. */
const char *arb__families_of(const arb__families *f, const char *role, const char *name)
{
    if (!f || !role || !name) return NULL;
    int r = role_index(role);
    size_t lo = 0, hi = f->n[r];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->of[r][mid].name, name);
        if (c == 0) return f->of[r][mid].family;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* See internal.h. */
size_t arb__families_count(const arb__families *f, const char *role)
{
    return f && role ? f->n[role_index(role)] : 0;
}
