/*
** cmd_agreement.c -- `arbiter agreement`: how often the judges in the store agree with each
** other, and how many of them disagree with the majority per instance (METHODS §5).
*/
#include "cli.h"

#include <getopt.h>
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
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"json", no_argument, 0, 'j'},
                                         {"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db = NULL, *output = "-";
    int json = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'j': json = 1; break;
        case 'o': output = optarg; break;
        case 'h': fputs(agreement_help, stdout); return EXIT_OK;
        default:
            return cli_usage_error("agreement", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("agreement", "unexpected argument \"%s\"", argv[optind]);
    if (!db) return cli_usage_error("agreement", "missing --db");

    arb_store *store = NULL;
    arb_agreement *ag = NULL;
    int rc = cli_open_existing_store("agreement", db, &store);
    if (rc) return rc;
    arb_status st = arb_agreement_compute(store, &ag);
    if (st) rc = cli_store_failure("agreement", store, st);
    else rc = cli_emit("agreement", output, json ? arb_agreement_to_json(ag) : arb_agreement_to_text(ag));
    arb_agreement_destroy(ag);
    arb_store_close(store);
    return rc;
}
