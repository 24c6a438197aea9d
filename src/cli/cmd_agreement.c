/*
** cmd_agreement.c -- `arbiter agreement`: how often the judges in the store agree with each
** other, and how many of them disagree with the majority per instance (METHODS §5); with
** --by family also within vs across judge families and the family preference (§5, §6).
*/
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char agreement_help[] =
    "usage: arbiter agreement --db FILE [--by family] [--bootstrap N] [--seed S] [--level L]\n"
    "                         [--json] [--output FILE]\n"
    "\n"
    "Compares every pair of judges on the side-by-side instances they share (same item,\n"
    "candidate, baseline, template, option mode, order and repetition; METHODS §5):\n"
    "  mutual agreement, ties included   share of common instances with the same position\n"
    "                                    verdict (E, no valid verdict, equals nothing)\n"
    "  mutual agreement, ties excluded   the same over the instances where both said A or B\n"
    "  disagreement                      over the instances every judge judged: how many\n"
    "                                    judges differ from the majority verdict (E counts as\n"
    "                                    a verdict of its own), as a histogram with cumulative\n"
    "                                    shares\n"
    "The diagonal of a matrix shows each judge's own number of instances. Undefined shares\n"
    "print as n/a (null in JSON). With fewer than two judges there is nothing to compare.\n"
    "\n"
    "With --by family (families from the judges file's family:/families: or from imports):\n"
    "  within / across families   the mutual agreement pooled over the pairs of judges of one\n"
    "                             family / of two families, each (instance, judge pair) once,\n"
    "                             and within - across; a family x family table; judges\n"
    "                             without a family are listed and left out\n"
    "  family preference          a judge's win rate for the contestant of its own family\n"
    "                             minus the win rate judges of other families give in the\n"
    "                             same comparisons (item and pair); per judgment, ties 1/2\n"
    "Intervals: percentile bootstrap over items.\n"
    "\n"
    "  --db FILE       the database written by 'arbiter sbs' (one run per judge)\n"
    "  --by family     also the agreement by judge family and the family preference\n"
    "  --bootstrap N   resamples for the family intervals (default 1000; 0 = none)\n"
    "  --seed S        bootstrap seed (default 20261123)\n"
    "  --level L       interval level (default 0.95)\n"
    "  --json          the same numbers as JSON (keys documented in README)\n"
    "  --output FILE   write there instead of stdout\n";

static int agreement_option(int c, const char *arg, void *ctx)
{
    arb_agreement_params *params = ctx;
    if (c != 'b') return 0;
    if (strcmp(arg, "family") != 0) {
        cli_usage_error("agreement", "--by expects family, got \"%s\"", arg);
        return -1;
    }
    params->by_family = 1;
    return 1;
}

int cmd_agreement(int argc, char **argv)
{
    static const struct option own[] = {{"by", required_argument, 0, 'b'}, {0, 0, 0, 0}};
    arb_agreement_params params = arb_agreement_default_params();
    cli_read_args args = {.flags = CLI_READ_JSON | CLI_READ_OUTPUT | CLI_READ_INTERVALS |
                                   CLI_READ_LEVEL,
                          .output = "-",
                          .bootstrap = &params.bootstrap,
                          .seed = &params.seed,
                          .level = &params.ci_level};
    int rc = cli_read_options("agreement", agreement_help, argc, argv, own, agreement_option,
                              &params, &args);
    if (rc != CLI_GO_ON) return rc;

    arb_store *store = NULL;
    arb_agreement *ag = NULL;
    if ((rc = cli_open_existing_store("agreement", args.db, &store))) return rc;
    arb_status st = arb_agreement_compute_with(store, &params, &ag);
    if (st) rc = cli_store_failure("agreement", store, st);
    else rc = cli_emit("agreement", args.output, args.json ? arb_agreement_to_json(ag) : arb_agreement_to_text(ag));
    arb_agreement_destroy(ag);
    arb_store_close(store);
    return rc;
}
