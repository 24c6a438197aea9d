/*
** cmd_discussion_stats.c -- `arbiter discussion-stats`: what the stored peer discussions and
** debates show (METHODS §7), as text or JSON.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char discussion_stats_help[] =
    "usage: arbiter discussion-stats --db FILE [--labels human|none] [--bootstrap N] [--seed N]\n"
    "                                [--level 0.95] [--json] [--output FILE]\n"
    "\n"
    "Per discussion set-up (reviewers, leader, turns): peer discussion accuracy PDA against the\n"
    "experts' majority labels with a bootstrap interval over items, each reviewer's accuracy\n"
    "before discussion, opinion altering (OA) and holding (OH) per reviewer as leader and as\n"
    "follower (counted per discussion; the per-turn counts follow as a second table), the\n"
    "first-position win share before and after discussion, and the turn at which\n"
    "the reviewers agreed. Per debate set-up: how often agent 2 agreed with agent 1 and whom the\n"
    "judge agent followed. Undefined values print as n/a (null in JSON).\n"
    "\n"
    "  --db FILE        the database written by 'arbiter discuss' / 'arbiter debate'\n"
    "  --labels KIND    human (default): the expert labels imported with 'arbiter labels import';\n"
    "                   none: leave the label metrics out\n"
    "  --bootstrap N    resamples of items for the PDA interval (default 1000; 0 = none)\n"
    "  --seed N         bootstrap seed (default 20261123)\n"
    "  --level X        interval level (default 0.95)\n"
    "  --json           the same numbers as JSON (keys documented in README)\n"
    "  --output FILE    write there instead of stdout\n";

static int discussion_stats_option(int c, const char *arg, void *ctx)
{
    arb_discussion_stats_params *params = ctx;
    if (c != 'L') return 0;
    if (!strcmp(arg, "human")) params->use_labels = 1;
    else if (!strcmp(arg, "none")) params->use_labels = 0;
    else {
        cli_usage_error("discussion-stats", "--labels must be human or none, got \"%s\"", arg);
        return -1;
    }
    return 1;
}

int cmd_discussion_stats(int argc, char **argv)
{
    static const struct option own[] = {{"labels", required_argument, 0, 'L'}, {0, 0, 0, 0}};
    arb_discussion_stats_params params = arb_discussion_stats_default_params();
    cli_read_args args = {.flags = CLI_READ_JSON | CLI_READ_OUTPUT | CLI_READ_INTERVALS |
                                   CLI_READ_LEVEL,
                          .output = "-", .bootstrap = &params.bootstrap, .seed = &params.seed,
                          .level = &params.ci_level};
    int rc = cli_read_options("discussion-stats", discussion_stats_help, argc, argv, own,
                              discussion_stats_option, &params, &args);
    if (rc != CLI_GO_ON) return rc;

    arb_store *store = NULL;
    arb_discussion_stats *ds = NULL;
    if ((rc = cli_open_existing_store("discussion-stats", args.db, &store))) return rc;
    arb_status st = arb_discussion_stats_compute(store, &params, &ds);
    if (st) {
        rc = cli_store_failure("discussion-stats", store, st);
    } else {
        if (!args.json && arb_discussion_stats_count(ds) == 0)
            fprintf(stderr, "arbiter discussion-stats: no discussions or debates in %s yet\n", args.db);
        rc = cli_emit("discussion-stats", args.output,
                      args.json ? arb_discussion_stats_to_json(ds) : arb_discussion_stats_to_text(ds));
    }
    arb_discussion_stats_destroy(ds);
    arb_store_close(store);
    return rc;
}
