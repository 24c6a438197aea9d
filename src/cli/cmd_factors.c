/*
** cmd_factors.c -- `arbiter factors`: which factors explain position consistency (or
** preference fairness) across the (judge, candidate, task) groups of the store (METHODS §5).
*/
#include "cli.h"

#include <getopt.h>
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

int cmd_factors(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"target", required_argument, 0, 't'},
                                         {"json", no_argument, 0, 'j'},
                                         {"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db = NULL, *output = "-";
    arb_factors_params params = {"pc"};
    int json = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 't': params.target = optarg; break;
        case 'j': json = 1; break;
        case 'o': output = optarg; break;
        case 'h': fputs(factors_help, stdout); return EXIT_OK;
        default:
            return cli_usage_error("factors", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage_error("factors", "unexpected argument \"%s\"", argv[optind]);
    if (!db) return cli_usage_error("factors", "missing --db");
    if (strcmp(params.target, "pc") != 0 && strcmp(params.target, "pf") != 0)
        return cli_usage_error("factors", "--target must be pc or pf, got \"%s\"", params.target);

    arb_store *store = NULL;
    arb_factors *f = NULL;
    int rc = cli_open_existing_store("factors", db, &store);
    if (rc) return rc;
    arb_status st = arb_factors_compute(store, &params, &f);
    if (st) rc = cli_store_failure("factors", store, st);
    else rc = cli_emit("factors", output, json ? arb_factors_to_json(f) : arb_factors_to_text(f));
    arb_factors_destroy(f);
    arb_store_close(store);
    return rc;
}
