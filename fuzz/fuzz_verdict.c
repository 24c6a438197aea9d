/*
** fuzz_verdict.c -- libFuzzer target for verdict extraction (verdict.c).
**
** The first byte picks the option mode (2..4) and whether the JSON rule is on; the rest is the
** judge's text, copied to a buffer of exactly its length so that any read past len is caught.
** The verdict must be 'E' or a letter of the mode. The same text read as a pointwise reply
** (METHODS §8) must give -1 with a reason, or a value of the kind (0/1, or 1..5) without one.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arbiter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int options = 2 + data[0] % 3;
    const char *field = (data[0] / 3) % 2 ? "verdict" : NULL;
    size_t len = size - 1;
    char *text = malloc(len ? len : 1);
    if (!text) return 0;
    if (len) memcpy(text, data + 1, len);
    char v = arb_verdict_extract(text, len, options, field);
    if (v != 'E' && (v < 'A' || v >= 'A' + options)) abort();
    char m = arb_verdict_to_model(v, data[0] & 1);
    if (v == 'E' ? m != 'e' : m < 'a' || m > 'd') abort();
    const char *reason = NULL;
    int yn = arb_pointwise_extract(text, len, ARB_POINTWISE_YESNO, &reason);
    if (yn < 0 ? !reason || yn != -1 : reason || yn > 1) abort();
    int grade = arb_pointwise_extract(text, len, ARB_POINTWISE_GRADE, &reason);
    if (grade < 0 ? !reason || grade != -1 : reason || grade < 1 || grade > 5) abort();
    free(text);
    return 0;
}
