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

int cmd_discussion_stats(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"labels", required_argument, 0, 'L'},
                                         {"bootstrap", required_argument, 0, 'n'},
                                         {"seed", required_argument, 0, 's'},
                                         {"level", required_argument, 0, 'l'},
                                         {"json", no_argument, 0, 'j'},
                                         {"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db = NULL, *output = "-";
    arb_discussion_stats_params params = arb_discussion_stats_default_params();
    int json = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'L':
            if (!strcmp(optarg, "human")) params.use_labels = 1;
            else if (!strcmp(optarg, "none")) params.use_labels = 0;
            else return cli_usage_error("discussion-stats", "--labels must be human or none, "
                                                            "got \"%s\"", optarg);
            break;
        case 'j': json = 1; break;
        case 'o': output = optarg; break;
        case 'h': fputs(discussion_stats_help, stdout); return EXIT_OK;
        default: {
            int t = cli_interval_option(c, optarg, &params.bootstrap, &params.seed,
                                        &params.ci_level);
            if (t < 0) return EXIT_USAGE;
            if (t > 0) break;
            return cli_usage_error("discussion-stats", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
        }
    }
    if (optind < argc)
        return cli_usage_error("discussion-stats", "unexpected argument \"%s\"", argv[optind]);
    if (!db) return cli_usage_error("discussion-stats", "missing --db");

    arb_store *store = NULL;
    arb_discussion_stats *ds = NULL;
    int rc = cli_open_existing_store("discussion-stats", db, &store);
    if (rc) return rc;
    arb_status st = arb_discussion_stats_compute(store, &params, &ds);
    if (st) {
        rc = cli_store_failure("discussion-stats", store, st);
    } else {
        if (!json && arb_discussion_stats_count(ds) == 0)
            fprintf(stderr, "arbiter discussion-stats: no discussions or debates in %s yet\n", db);
        rc = cli_emit("discussion-stats", output,
                      json ? arb_discussion_stats_to_json(ds) : arb_discussion_stats_to_text(ds));
    }
    arb_discussion_stats_destroy(ds);
    arb_store_close(store);
    return rc;
}
