/*
** cmd_agreement.c -- `arbiter agreement`: how often the judges in the store agree with each
** other, and how many of them disagree with the majority per instance (METHODS §5).
*/
#include "cli.h"

#include <stdio.h>

static const char agreement_help[] =
    "usage: arbiter agreement --db FILE [--json] [--output FILE]\n"
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
    "  --db FILE       the database written by 'arbiter sbs' (one run per judge)\n"
    "  --json          the same numbers as JSON (keys documented in README)\n"
    "  --output FILE   write there instead of stdout\n";

int cmd_agreement(int argc, char **argv)
{
    cli_read_args args = {.flags = CLI_READ_JSON | CLI_READ_OUTPUT, .output = "-"};
    int rc = cli_read_options("agreement", agreement_help, argc, argv, NULL, NULL, NULL, &args);
    if (rc != CLI_GO_ON) return rc;

    arb_store *store = NULL;
    arb_agreement *ag = NULL;
    if ((rc = cli_open_existing_store("agreement", args.db, &store))) return rc;
    arb_status st = arb_agreement_compute(store, &ag);
    if (st) rc = cli_store_failure("agreement", store, st);
    else rc = cli_emit("agreement", args.output, args.json ? arb_agreement_to_json(ag) : arb_agreement_to_text(ag));
    arb_agreement_destroy(ag);
    arb_store_close(store);
    return rc;
}
