/*
** fuzz_battles.c -- libFuzzer target for the reader of arena-convention battle objects
** (battles.c): any JSON the input parses to is offered as one battle. A refused battle leaves
** the set as it was with a message naming the place; an accepted one is appended with s in
** {-1, 0, 1}, two different models and style covariates that are unknown or finite and >= 0.
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *obj = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!obj) return 0;
    arb_battles *b = arb_battles_create();
    if (!b) abort();
    if (json_is_object(obj)) {
        arb_status st = arb__battles_add_json(b, obj, "fuzz", 7);
        if (st != ARB_OK) {
            if (arb_battles_count(b) != 0) abort();
            if (st == ARB_PARSE && strncmp(arb_battles_errmsg(b), "fuzz:7:", 7) != 0) abort();
        } else {
            if (arb_battles_count(b) != 1) abort();
            arb_battle x = arb_battles_at(b, 0);
            if (x.s < -1 || x.s > 1 || !strcmp(x.model_i, x.model_j)) abort();
            for (int k = 0; k < ARB_STYLE__COUNT; k++)
                if (!isnan(x.style_i[k]) && !(x.style_i[k] >= 0 && isfinite(x.style_i[k])))
                    abort();
        }
    }
    arb_battles_destroy(b);
    json_decref(obj);
    return 0;
}
