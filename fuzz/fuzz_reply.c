/*
** fuzz_reply.c -- libFuzzer target for arb__judge_parse_reply: any bytes a server may send
** must give either content or an error, never a crash, a leak or an out-of-bounds read.
** The input is copied into an exact-size buffer without a terminating NUL so reads past
** `len` are caught by AddressSanitizer.
*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = malloc(size ? size : 1);
    if (!body) return 0;
    if (size) memcpy(body, data, size);
    arb__judge_reply r;
    if (arb__judge_parse_reply(body, size, &r) == 0) {
        /* Exactly one of content and error, except that neither may be missing. */
        if (!r.content && !r.error) abort();
        if (r.content && r.error) abort();
        if (r.error && strlen(r.error) == 0) abort();
        if (r.prompt_tokens < -1 || r.completion_tokens < -1) abort();
        arb__judge_reply_free(&r);
    }
    free(body);
    return 0;
}
