/*
** item_window.c -- what a protocol's slice of calls reads from its dataset: the items of the
** slice and some models' answers to them, looked up once per item. A whole dataset
** (arb_dataset_load) holds every text already, so a window only points into it; an indexed one
** (arb_dataset_load_indexed) has its slice's records read again from the files
** (arb__dataset_window), in place of the previous slice's, so a run holds one slice's texts
** however large its input is.
**
** Loaded from arb__exec_params.slice_begin (the executor calls it when no call of the previous
** slice is in flight or waiting to be stored), read by the build, texts and done callbacks of
** the slice's nodes. It neither checks the data (the protocols do, before the first request)
** nor stores it (arb__store_put_dataset).
*/
#include "internal.h"

#include <stdlib.h>

/* See internal.h. */
void arb__item_window_init(arb__item_window *w, const arb_dataset *ds,
                           const char *const *models, size_t n_models)
{
    *w = (arb__item_window){.ds = ds, .models = models, .n_models = n_models};
}

/* See internal.h. */
void arb__item_window_free(arb__item_window *w)
{
    arb_dataset_destroy(w->win);
    free(w->answers);
    w->win = NULL;
    w->answers = NULL;
    w->first = w->n = w->cap_answers = 0;
}

/* See internal.h. */
const arb_item *arb__item_window_item(const arb__item_window *w, size_t i)
{
    return w->win ? arb_dataset_item(w->win, i - w->first) : arb_dataset_item(w->ds, i);
}

/* See internal.h. */
const arb_answer *arb__item_window_answer(const arb__item_window *w, size_t i, size_t model)
{
    return w->answers[(i - w->first) * w->n_models + model];
}

/* See internal.h. */
arb_status arb__item_window_load(arb__item_window *w, arb_store *s, size_t first, size_t n)
{
    if (arb__dataset_is_indexed(w->ds)) {
        arb_dataset_destroy(w->win); /* the previous slice's texts first: one slice at a time */
        w->win = NULL;
        char *err = NULL;
        arb_status st = arb__dataset_window(w->ds, first, n, w->models, w->n_models, &w->win, &err);
        if (st) {
            w->n = 0;
            arb__store_fail(s, st, "%s", err ? err : arb_strerror(st));
            free(err);
            return st;
        }
    }
    w->first = first;
    w->n = n;
    if (!w->n_models) return ARB_OK;
    if (arb__grow(&w->answers, &w->cap_answers, n * w->n_models, sizeof *w->answers)) {
        w->n = 0;
        return arb__store_fail(s, ARB_NOMEM, "out of memory");
    }
    const arb_dataset *texts = w->win ? w->win : w->ds;
    for (size_t k = 0; k < n; k++) {
        const arb_item *it = arb__item_window_item(w, first + k);
        for (size_t m = 0; m < w->n_models; m++)
            w->answers[k * w->n_models + m] = arb_dataset_find_answer(texts, it->id, w->models[m]);
    }
    return ARB_OK;
}

/* See internal.h. */
arb_status arb__item_window_load_nodes(arb__item_window *w, arb_store *s, size_t first_node,
                                       size_t n_nodes, size_t nodes_per_item)
{
    if (n_nodes == 0 || nodes_per_item == 0) return ARB_OK;
    size_t from = first_node / nodes_per_item;
    size_t to = (first_node + n_nodes - 1) / nodes_per_item + 1;
    return arb__item_window_load(w, s, from, to - from);
}
