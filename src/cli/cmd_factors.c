/*
** cmd_factors.c -- `arbiter factors`: which factors explain position consistency (or
** preference fairness) across the (judge, candidate, task) groups of the store (METHODS §5).
*/
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char factors_help[] =
    "usage: arbiter factors --db FILE [--target pc|pf] [--json] [--output FILE]\n"
    "\n"
    "Groups the side-by-side judgments by (judge, candidate, task) as 'arbiter audit' does and\n"
    "fits a bidirectional stepwise linear regression chosen by AIC = 2k - 2 ln L (METHODS §5)\n"
    "that predicts each group's position consistency PC (or preference fairness PF) from:\n"
    "  question_length, candidate_length, baseline_length, prompt_length\n"
    "                      mean lengths in Unicode code points\n"
    "  quality_gap         |overall win rate - 0.5|\n"
    "  judge, candidate, task\n"
    "                      categorical, dummy coded against the first name in sorted order\n"
    "  judge_family, same_family\n"
    "                      only when the store knows families (judges file family:/families:,\n"
    "                      imports): the judge's family (categorical) and 1 when it is the\n"
    "                      candidate's family, else 0\n"
    "It starts from the intercept-only model; each step adds or removes the one variable that\n"
    "lowers AIC most, and it stops when no change lowers it. Reported: the groups used (those\n"
    "with an undefined target are dropped and counted), the variables that cannot vary (not\n"
    "used), the steps, and the final model: each variable's AIC increase on removal (> 0: it\n"
    "helps), coefficients with standard errors and t-test p-values, R^2 and AIC. With fewer\n"
    "than 3 groups there is no regression, and the output says so.\n"
    "\n"
    "  --db FILE       the database written by 'arbiter sbs'\n"
    "  --target pc|pf  what to explain (default pc)\n"
    "  --json          the same as JSON (keys documented in README)\n"
    "  --output FILE   write there instead of stdout\n";

static int factors_option(int c, const char *arg, void *ctx)
{
    arb_factors_params *params = ctx;
    if (c != 't') return 0;
    if (strcmp(arg, "pc") != 0 && strcmp(arg, "pf") != 0) {
        cli_usage_error("factors", "--target must be pc or pf, got \"%s\"", arg);
        return -1;
    }
    params->target = arg;
    return 1;
}

int cmd_factors(int argc, char **argv)
{
    static const struct option own[] = {{"target", required_argument, 0, 't'}, {0, 0, 0, 0}};
    arb_factors_params params = {"pc"};
    cli_read_args args = {.flags = CLI_READ_JSON | CLI_READ_OUTPUT, .output = "-"};
    int rc = cli_read_options("factors", factors_help, argc, argv, own, factors_option, &params,
                              &args);
    if (rc != CLI_GO_ON) return rc;

    arb_store *store = NULL;
    arb_factors *f = NULL;
    if ((rc = cli_open_existing_store("factors", args.db, &store))) return rc;
    arb_status st = arb_factors_compute(store, &params, &f);
    if (st) rc = cli_store_failure("factors", store, st);
    else rc = cli_emit("factors", args.output, args.json ? arb_factors_to_json(f) : arb_factors_to_text(f));
    arb_factors_destroy(f);
    arb_store_close(store);
    return rc;
}
