/*
** cmd_consistency.c -- `arbiter consistency`: how consistently each judge judges the same
** content in different languages (METHODS §8), from the pointwise judgments of `arbiter grade`,
** as text tables or JSON.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char consistency_help[] =
    "usage: arbiter consistency --db FILE [--reference-language en] [--ensemble J1,J2,J3]\n"
    "                           [--bootstrap N] [--seed N] [--level 0.95] [--json]\n"
    "                           [--output FILE]\n"
    "\n"
    "For every judge x template x mode (yes/no or grade) x task of the pointwise judgments in\n"
    "the store (METHODS §8), each language being a rater:\n"
    "  Fleiss' kappa across the languages, over the groups (a parallel group as judged for one\n"
    "  answering model) with a valid value in every language of the row; groups missing a\n"
    "  language or with an E (no valid verdict; not a category) are left out and counted;\n"
    "  per language: judgments, accuracy (share judged correct) or mean grade over the valid\n"
    "  ones, E rate, and Cohen's kappa against the reference language (same groups);\n"
    "across judges, per task and mode: Spearman's rho between accuracy (or mean grade) averaged\n"
    "over the languages and Fleiss' kappa, one point per judge x template (n/a under 3);\n"
    "per judge run in both modes: the yes/no - grade kappa gap;\n"
    "with --ensemble: the majority vote of the judges per item and language, a tie going to the\n"
    "judge named first, over the instances every member judged validly: Min (lowest member\n"
    "kappa), Ens (kappa of the vote), delta = Ens - Min.\n"
    "Only repetition 0 is used. Undefined values print as n/a (null in JSON).\n"
    "\n"
    "  --db FILE                 the database written by 'arbiter grade'\n"
    "  --reference-language CODE Cohen's kappa of every language against this one (default en)\n"
    "  --ensemble J1,J2[,...]    judges of the majority-vote ensemble, in priority order\n"
    "  --bootstrap N             percentile intervals from N resamples of parallel groups\n"
    "                            (0 = none, default)\n"
    "  --seed N                  bootstrap seed (default 20261123); the same seed, the same\n"
    "                            intervals\n"
    "  --level X                 interval level (default 0.95)\n"
    "  --json                    the same numbers as JSON (keys documented in README)\n"
    "  --output FILE             write there instead of stdout\n";

typedef struct consistency_opts {
    arb_consistency_params params;
    const char **ensemble; /* points into argv */
} consistency_opts;

static int consistency_option(int c, const char *arg, void *ctx)
{
    consistency_opts *o = ctx;
    switch (c) {
    case 'r':
        if (!*arg) {
            cli_usage_error("consistency", "--reference-language expects a language code");
            return -1;
        }
        o->params.reference_language = arg;
        return 1;
    case 'e': {
        free(o->ensemble);
        o->ensemble = NULL;
        long n = cli_parse_ensemble("consistency", "--ensemble", (char *)arg, &o->ensemble);
        if (n < 0) return -1;
        o->params.ensemble = o->ensemble;
        o->params.n_ensemble = (size_t)n;
        return 1;
    }
    default: return 0;
    }
}

/* Warns (stderr) when the reference language is missing from rows: their Cohen's kappa is
** n/a throughout, which a reader would otherwise take for a property of the judges. */
static void warn_reference_missing(const arb_consistency *c, const char *reference)
{
    size_t n_rows = arb_consistency_count(c), missing = 0;
    for (size_t i = 0; i < n_rows; i++) {
        const arb_consistency_row *r = arb_consistency_row_at(c, i);
        size_t l = 0;
        while (l < r->n_languages && strcmp(r->languages[l].language, reference)) l++;
        missing += l == r->n_languages;
    }
    if (missing == 0) return;
    fprintf(stderr,
            "arbiter consistency: warning: reference language \"%s\" is missing from %zu of %zu "
            "rows; their Cohen's kappa against it is n/a (another with --reference-language)\n",
            reference, missing, n_rows);
}

int cmd_consistency(int argc, char **argv)
{
    static const struct option own[] = {{"reference-language", required_argument, 0, 'r'},
                                        {"ensemble", required_argument, 0, 'e'},
                                        {0, 0, 0, 0}};
    consistency_opts o = {arb_consistency_default_params(), NULL};
    cli_read_args args = {.flags = CLI_READ_JSON | CLI_READ_OUTPUT | CLI_READ_INTERVALS |
                                   CLI_READ_LEVEL,
                          .output = "-", .bootstrap = &o.params.bootstrap,
                          .seed = &o.params.seed, .level = &o.params.ci_level};
    int rc = cli_read_options("consistency", consistency_help, argc, argv, own,
                              consistency_option, &o, &args);
    if (rc != CLI_GO_ON) {
        free(o.ensemble);
        return rc;
    }

    arb_store *store = NULL;
    arb_consistency *result = NULL;
    if ((rc = cli_open_existing_store("consistency", args.db, &store))) {
        free(o.ensemble);
        return rc;
    }
    arb_status st = arb_consistency_compute(store, &o.params, &result);
    if (st) {
        rc = cli_store_failure("consistency", store, st);
    } else {
        if (!args.json && arb_consistency_count(result) == 0)
            fprintf(stderr, "arbiter consistency: no pointwise judgments in %s yet (arbiter grade)\n",
                    args.db);
        warn_reference_missing(result, o.params.reference_language);
        rc = cli_emit("consistency", args.output,
                      args.json ? arb_consistency_to_json(result) : arb_consistency_to_text(result));
    }
    arb_consistency_destroy(result);
    arb_store_close(store);
    free(o.ensemble);
    return rc;
}
