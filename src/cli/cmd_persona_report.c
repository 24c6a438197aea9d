/*
** cmd_persona_report.c -- `arbiter persona report`: what the stored persona scores show
** (METHODS §9): means per identity, difference matrices, win rates, chi-squared tests with
** Holm's correction and the position effect, as text or JSON.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char persona_report_help[] =
    "usage: arbiter persona report --db FILE [--category NAME] [--bootstrap N] [--seed N]\n"
    "                              [--level 0.95] [--alpha 0.05] [--json] [--output FILE]\n"
    "\n"
    "Per judge x identity category x phase (1 single candidate, 2 contrastive pair): the mean\n"
    "score of each identity per metric and combined (mean of the metric means) with bootstrap\n"
    "intervals over scenarios, the identity x identity difference matrix (row minus column),\n"
    "in phase 2 each identity's win rate and the position effect (the first-shown candidate's\n"
    "win rate: the order, not an identity), chi-squared tests of independence between identity\n"
    "and score level with p-values Holm-adjusted over every test of the report, the E counts,\n"
    "and a plain statement of which differences are significant. Undefined values print as\n"
    "n/a (null in JSON).\n"
    "\n"
    "  --db FILE        the database written by 'arbiter persona run'\n"
    "  --category NAME  only this identity category (e.g. gender); the Holm family is then\n"
    "                   the tests of that category\n"
    "  --bootstrap N    resamples of scenarios for the intervals (default 1000; 0 = none)\n"
    "  --seed N         bootstrap seed (default 20261123)\n"
    "  --level X        interval level (default 0.95)\n"
    "  --alpha X        significance level after Holm's correction (default 0.05)\n"
    "  --json           the same numbers as JSON (keys documented in README)\n"
    "  --output FILE    write there instead of stdout\n"
    "\n"
    "exit codes: 0 ok, 1 failure, 2 usage or bad input (e.g. a category without scores)\n";

static int persona_report_option(int c, const char *arg, void *ctx)
{
    arb_persona_stats_params *params = ctx;
    switch (c) {
    case 'C':
        if (!arg[0]) {
            cli_usage_error("persona report", "--category must not be empty");
            return -1;
        }
        params->category = arg;
        return 1;
    case 'A': return cli_parse_double("--alpha", arg, 1e-6, 0.5, &params->alpha) ? -1 : 1;
    default: return 0;
    }
}

int cmd_persona_report(int argc, char **argv)
{
    static const struct option own[] = {{"category", required_argument, 0, 'C'},
                                        {"alpha", required_argument, 0, 'A'},
                                        {0, 0, 0, 0}};
    arb_persona_stats_params params = arb_persona_stats_default_params();
    cli_read_args args = {.flags = CLI_READ_JSON | CLI_READ_OUTPUT | CLI_READ_INTERVALS |
                                   CLI_READ_LEVEL,
                          .output = "-", .bootstrap = &params.bootstrap, .seed = &params.seed,
                          .level = &params.ci_level};
    int rc = cli_read_options("persona report", persona_report_help, argc, argv, own,
                              persona_report_option, &params, &args);
    if (rc != CLI_GO_ON) return rc;

    arb_store *store = NULL;
    arb_persona_stats *ps = NULL;
    if ((rc = cli_open_existing_store("persona report", args.db, &store))) return rc;
    arb_status st = arb_persona_stats_compute(store, &params, &ps);
    if (st) {
        rc = cli_store_failure("persona report", store, st);
    } else {
        if (!args.json && arb_persona_stats_count(ps) == 0)
            fprintf(stderr, "arbiter persona report: no persona scores in %s yet\n", args.db);
        rc = cli_emit("persona report", args.output,
                      args.json ? arb_persona_stats_to_json(ps) : arb_persona_stats_to_text(ps));
    }
    arb_persona_stats_destroy(ps);
    arb_store_close(store);
    return rc;
}
