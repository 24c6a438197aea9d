/*
** fuzz_reply.c -- libFuzzer target for arb__judge_parse_reply: any bytes a server may send
** must give either content or an error, never a crash, a leak or an out-of-bounds read.
** The input is copied into an exact-size buffer without a terminating NUL so reads past
** `len` are caught by AddressSanitizer. A reply with logprobs.content then goes through the
** verdict-token extraction (logprobs.c) for every kind of verdict: its result, when there is
** one, is a JSON object whose option probabilities lie in [0, 1] and sum to 1. The reading
** (which takes the usual shape without jansson) equals the reference's, through jansson.
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whether two readings of a reply are the same. */
static int same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static void check_same(const arb__judge_reply *a, const arb__judge_reply *b)
{
    if (!same_text(a->content, b->content) || !same_text(a->reasoning, b->reasoning) ||
        !same_text(a->error, b->error) || a->prompt_tokens != b->prompt_tokens ||
        a->completion_tokens != b->completion_tokens || a->reasoning_tokens != b->reasoning_tokens ||
        a->cached_tokens != b->cached_tokens ||
        ((a->logprobs || b->logprobs) && !json_equal(a->logprobs, b->logprobs)))
        abort();
}

/* Checks one extraction result (see the file comment). */
static void check_distribution(const char *text)
{
    json_t *o = json_loads(text, 0, NULL);
    if (!json_is_object(o)) abort();
    json_t *opts = json_object_get(o, "options");
    if (json_is_object(opts)) {
        double sum = 0;
        const char *k;
        json_t *v;
        json_object_foreach(opts, k, v) {
            double p = json_number_value(v);
            if (!json_is_number(v) || !(p >= 0 && p <= 1)) abort();
            sum += p;
        }
        if (fabs(sum - 1) > 1e-4) abort();
    } else if (!json_is_null(opts) || !json_is_string(json_object_get(o, "reason"))) {
        abort();
    }
    json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = malloc(size ? size : 1);
    if (!body) return 0;
    if (size) memcpy(body, data, size);
    arb__judge_reply r, ref;
    if (arb__judge_parse_reply_reference(body, size, &ref) == 0) {
        if (arb__judge_parse_reply(body, size, &r) == 0) {
            check_same(&r, &ref);
            arb__judge_reply_free(&r);
        }
        arb__judge_reply_free(&ref);
    }
    if (arb__judge_parse_reply(body, size, &r) == 0) {
        /* Exactly one of content and error, except that neither may be missing. */
        if (!r.content && !r.error) abort();
        if (r.content && r.error) abort();
        if (r.error && strlen(r.error) == 0) abort();
        if (r.prompt_tokens < -1 || r.completion_tokens < -1) abort();
        const arb__verdict_spec specs[] = {{ARB__VERDICT_POSITION, 2, NULL},
                                           {ARB__VERDICT_POSITION, 4, "verdict"},
                                           {ARB__VERDICT_GRADE, 0, NULL},
                                           {ARB__VERDICT_YESNO, 0, NULL}};
        for (size_t k = 0; r.logprobs && k < sizeof specs / sizeof *specs; k++) {
            char *out = NULL;
            if (arb__logprobs_verdict(r.logprobs, r.content, &specs[k], &out) == 0 && out)
                check_distribution(out);
            free(out);
        }
        arb__judge_reply_free(&r);
    }
    free(body);
    return 0;
}
