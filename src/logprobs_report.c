/*
** logprobs_report.c -- the verdict probabilities in reports (README "Logprobs"): for each
** comparison of `arbiter audit`, the shares of the verdicts given (argmax) next to the
** probability-weighted shares (the mean, over judgments, of each verdict's probability in the
** verdict token's distribution renormalised over the options); for the pointwise sets of
** `arbiter consistency`, the mean grade given next to the expected grade sum p*g (G-Eval's
** score), or the share judged correct next to the mean P(correct).
**
** Invariant: a row without any distribution is "no logprobs" (JSON: null values and
** logprobs_available false), saying whether it was not asked for or the endpoint returned
** none; never 0. The rows come from store_logprobs.c; this file only renders them.
*/
#include "internal.h"

#include <string.h>

static const char *const verdict_names[4] = {"a", "b", "c", "d"};

/* Why a row has no logprobs, for people. */
static const char *missing_reason(const arb__logprob_row *r)
{
    if (r->asked == 0) return "not asked for; logprobs: true in the judges file asks";
    return r->asked == r->judgments ? "asked for; the endpoint returned none"
                                    : "asked for in some calls; none returned";
}

static int put_shares(arb__buf *b, const char *label, const double *v, int options)
{
    int err = arb__buf_printf(b, "; %s", label);
    for (int k = 0; k < options && k < 4; k++)
        err |= arb__buf_printf(b, " %s %.3f", verdict_names[k], v[k]);
    return err;
}

int arb__logprobs_text(arb__buf *b, const arb__logprob_row *rows, size_t n, int pointwise)
{
    int any = 0;
    for (size_t i = 0; i < n; i++) any |= rows[i].asked > 0 || rows[i].with_logprobs > 0;
    if (!any) return 0;
    int err = arb__buf_puts(
        b, pointwise
               ? "\nverdict probabilities from logprobs (README \"Logprobs\"): the mean grade "
                 "given (argmax) next to the\nexpected grade sum p*g (G-Eval), or the share "
                 "judged correct next to the mean P(correct), over\nthe judgments whose verdict "
                 "token's distribution was read\n"
               : "\nverdict probabilities from logprobs (README \"Logprobs\"): shares of the "
                 "verdicts given (argmax) next to\nthe mean probability of each verdict "
                 "(prob-weighted: the verdict token's distribution renormalised\nover the "
                 "options), over the judgments whose verdict token's distribution was read\n");
    for (size_t i = 0; !err && i < n; i++) {
        const arb__logprob_row *r = &rows[i];
        if (pointwise)
            err |= arb__buf_printf(b, "  %s %s %s, template %s: ", r->judge, r->protocol,
                                   r->candidate, r->template_name);
        else
            err |= arb__buf_printf(b, "  %s %s %s vs %s, template %s (%d options): ", r->judge,
                                   r->protocol, r->candidate, r->baseline, r->template_name,
                                   r->options);
        if (!r->with_logprobs) {
            err |= arb__buf_printf(b, "no logprobs (%s)\n", missing_reason(r));
            continue;
        }
        err |= arb__buf_printf(b, "%zu of %zu judgments with logprobs", r->with_logprobs,
                               r->judgments);
        if (!pointwise)
            err |= put_shares(b, "argmax", r->argmax, r->options) |
                   put_shares(b, "prob-weighted", r->weighted, r->options);
        else if (!strcmp(r->candidate, "grade"))
            err |= arb__buf_printf(b, "; mean grade %.3f, expected grade %.3f", r->argmax[0],
                                   r->weighted[0]);
        else
            err |= arb__buf_printf(b, "; share correct %.3f, mean P(correct) %.3f", r->argmax[0],
                                   r->weighted[0]);
        err |= arb__buf_printf(b, "; mass outside the options %.3f\n", r->other_mass);
    }
    return err ? -1 : 0;
}

/* {a, b, ...} of the first `options` values, or null when unavailable. */
static json_t *shares_json(const double *v, int options, int available)
{
    if (!available) return json_null();
    json_t *o = json_object();
    for (int k = 0; o && k < options && k < 4; k++)
        if (arb__json_set(o, verdict_names[k], json_real(v[k]))) {
            json_decref(o);
            return NULL;
        }
    return o;
}

json_t *arb__logprobs_json(const arb__logprob_row *rows, size_t n, int pointwise)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        const arb__logprob_row *r = &rows[i];
        int has = r->with_logprobs > 0, grade = pointwise && !strcmp(r->candidate, "grade");
        json_t *o = json_object();
        int bad = !o || arb__json_set(o, "judge", arb__json_name(r->judge)) ||
                  arb__json_set(o, "protocol", arb__json_name(r->protocol));
        if (!bad && pointwise)
            bad = arb__json_set(o, "kind", arb__json_name(r->candidate)) ||
                  arb__json_set(o, "template", arb__json_name(r->template_name)) ||
                  arb__json_set(o, grade ? "mean_grade" : "share_correct",
                                has ? json_real(r->argmax[0]) : json_null()) ||
                  arb__json_set(o, grade ? "expected_grade" : "mean_p_correct",
                                has ? json_real(r->weighted[0]) : json_null());
        else if (!bad)
            bad = arb__json_set(o, "candidate", arb__json_name(r->candidate)) ||
                  arb__json_set(o, "baseline", arb__json_name(r->baseline)) ||
                  arb__json_set(o, "template", arb__json_name(r->template_name)) ||
                  arb__json_set(o, "options", json_integer(r->options)) ||
                  arb__json_set(o, "argmax", shares_json(r->argmax, r->options, has)) ||
                  arb__json_set(o, "prob_weighted", shares_json(r->weighted, r->options, has));
        bad = bad || arb__json_set(o, "judgments", json_integer((json_int_t)r->judgments)) ||
              arb__json_set(o, "logprobs_asked", json_integer((json_int_t)r->asked)) ||
              arb__json_set(o, "with_logprobs", json_integer((json_int_t)r->with_logprobs)) ||
              arb__json_set(o, "logprobs_available", json_boolean(has)) ||
              arb__json_set(o, "other_mass", has ? json_real(r->other_mass) : json_null());
        if (bad || json_array_append_new(a, o)) {
            if (bad) json_decref(o);
            json_decref(a);
            return NULL;
        }
    }
    return a;
}
