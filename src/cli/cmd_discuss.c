/*
** cmd_discuss.c -- `arbiter discuss`: peer discussion between two reviewers, or a
** self-discussion of one model at two temperatures (METHODS §7).
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char discuss_help[] =
    "usage: arbiter discuss --reviewers FILE:R1,R2 --items FILE --answers FILE --pairs X:Y[,...]\n"
    "                       --db FILE [options]\n"
    "       arbiter discuss --self FILE:R --temperatures T1,T2 ...   (self-discussion)\n"
    "\n"
    "Peer discussion (METHODS §7). For every item, pair of models and order, each reviewer first\n"
    "reviews the two answers on explicit aspects (unsupported information, core information,\n"
    "coherence) and ends with 1 or 2; then the reviewers speak in turns, the leader first, for at\n"
    "most --turns turns, each turn seeing both initial reviews and the discussion so far. Every\n"
    "turn is stored with its prompt and reply ('arbiter export --format transcripts'); the\n"
    "numbers come from 'arbiter discussion-stats' (also shown by 'arbiter audit'). A discussion\n"
    "killed mid-way resumes at the turn it reached.\n"
    "\n"
    "reviewers:\n"
    "  --reviewers FILE:R1,R2  two judge names from a judges file (format: 'arbiter tournament\n"
    "                          --help'); or --judges FILE --reviewers R1,R2\n"
    "  --self FILE:R           self-discussion: judge R twice, at the two --temperatures, as\n"
    "                          reviewers named R@t<T1> and R@t<T2>\n"
    "  --temperatures T1,T2    with --self (e.g. 0.2,0.8)\n"
    "  --judges FILE           the judges file, when --reviewers/--self hold only names\n"
    "discussion:\n"
    "  --pairs X:Y[,X:Y...]    the models compared (both must have answered every item)\n"
    "  --leader first|second|random  who speaks first: R1, R2, or drawn per discussion from\n"
    "                          --seed (default first)\n"
    "  --turns N               most discussion turns (default 4)\n"
    "  --stop-on-agreement     stop once the last two statements agree (initial reviews count)\n"
    "  --one-order             only X shown first (default: both orders)\n"
    "  --seed N                seed of --leader random (default 20261123)\n"
    "  --initial-prompt NAME|FILE  default discuss-initial\n"
    "  --turn-prompt NAME|FILE     default discuss-turn\n"
    "  --reps N                repetitions (default 1)\n"
    "  --full-check            check every call against the store even when the inputs,\n"
    "                          judges and templates are those of a finished run and the store\n"
    "                          is as that run left it (without it such a rerun says \"nothing\n"
    "                          to send\" at once; README \"Resume and caching\")\n"
    "input:\n"
    "  --items FILE            JSONL: {\"id\", \"question\", \"reference\"?, ...}\n"
    "  --answers FILE          JSONL: {\"item\", \"model\", \"answer\"}\n"
    ;

enum {
    OPT_REVIEWERS = 256, OPT_SELF, OPT_TEMPERATURES, OPT_JUDGES, OPT_PAIRS, OPT_LEADER, OPT_TURNS,
    OPT_STOP, OPT_ONE_ORDER, OPT_SEED, OPT_INITIAL_PROMPT, OPT_TURN_PROMPT, OPT_REPS, OPT_ITEMS,
    OPT_ANSWERS, OPT_HELP, OPT_FULL_CHECK
};

static const struct option discuss_options[] = {
    {"reviewers", required_argument, 0, OPT_REVIEWERS},
    {"self", required_argument, 0, OPT_SELF},
    {"temperatures", required_argument, 0, OPT_TEMPERATURES},
    {"judges", required_argument, 0, OPT_JUDGES},
    {"pairs", required_argument, 0, OPT_PAIRS},
    {"leader", required_argument, 0, OPT_LEADER},
    {"turns", required_argument, 0, OPT_TURNS},
    {"stop-on-agreement", no_argument, 0, OPT_STOP},
    {"one-order", no_argument, 0, OPT_ONE_ORDER},
    {"seed", required_argument, 0, OPT_SEED},
    {"initial-prompt", required_argument, 0, OPT_INITIAL_PROMPT},
    {"turn-prompt", required_argument, 0, OPT_TURN_PROMPT},
    {"reps", required_argument, 0, OPT_REPS},
    {"full-check", no_argument, 0, OPT_FULL_CHECK},
    {"items", required_argument, 0, OPT_ITEMS},
    {"answers", required_argument, 0, OPT_ANSWERS},
    CLI_RUN_OPTIONS,
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

int cmd_discuss(int argc, char **argv)
{
    arb_discuss_params p = arb_discuss_default_params();
    const char *reviewers = NULL, *self = NULL, *temperatures = NULL, *judges_path = NULL;
    const char *items = NULL, *answers = NULL, *db = NULL;
    char *pairs_text = NULL;
    long n;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", discuss_options, NULL)) != -1) {
        switch (c) {
        case OPT_REVIEWERS: reviewers = optarg; break;
        case OPT_SELF: self = optarg; break;
        case OPT_TEMPERATURES: temperatures = optarg; break;
        case OPT_JUDGES: judges_path = optarg; break;
        case OPT_PAIRS: pairs_text = optarg; break;
        case OPT_LEADER:
            if (!strcmp(optarg, "first")) p.leader = ARB_LEADER_FIRST;
            else if (!strcmp(optarg, "second")) p.leader = ARB_LEADER_SECOND;
            else if (!strcmp(optarg, "random")) p.leader = ARB_LEADER_RANDOM;
            else return cli_usage_error("discuss", "--leader must be first, second or random, "
                                                   "got \"%s\"", optarg);
            break;
        case OPT_TURNS:
            if (cli_parse_int("--turns", optarg, 1, 20, &n)) return EXIT_USAGE;
            p.max_turns = (int)n;
            break;
        case OPT_STOP: p.stop_on_agreement = 1; break;
        case OPT_ONE_ORDER: p.both_orders = 0; break;
        case OPT_SEED:
            if (cli_parse_int("--seed", optarg, 0, 2147483647L, &n)) return EXIT_USAGE;
            p.seed = (unsigned long long)n;
            break;
        case OPT_INITIAL_PROMPT: p.initial_template = optarg; break;
        case OPT_TURN_PROMPT: p.turn_template = optarg; break;
        case OPT_REPS:
            if (cli_parse_int("--reps", optarg, 1, 1000, &n)) return EXIT_USAGE;
            p.reps = (int)n;
            break;
        case OPT_ITEMS: items = optarg; break;
        case OPT_ANSWERS: answers = optarg; break;
        case OPT_FULL_CHECK: p.full_check = 1; break;
        case OPT_HELP:
            fputs(discuss_help, stdout);
            cli_print_run_help(stdout);
            return EXIT_OK;
        default: {
            int t = cli_run_option(c, optarg, &p.client, &db, &p.dry_run, &p.progress);
            if (t < 0) return EXIT_USAGE;
            if (t > 0) break;
            return cli_usage_error("discuss", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
        }
    }
    if (optind < argc)
        return cli_usage_error("discuss", "unexpected argument \"%s\"", argv[optind]);
    if (!!reviewers == !!self)
        return cli_usage_error("discuss", "give either --reviewers (two reviewers) or --self "
                                          "(self-discussion)");
    if (!!self != !!temperatures)
        return cli_usage_error("discuss", "--self and --temperatures go together");
    const char *missing = !pairs_text ? "--pairs" : !items ? "--items" : !answers ? "--answers"
                        : !db ? "--db" : NULL;
    if (missing) return cli_usage_error("discuss", "missing %s", missing);

    double temps[2];
    if (self) {
        char *comma = strchr(temperatures, ',');
        char first[64];
        size_t len = comma ? (size_t)(comma - temperatures) : 0;
        if (!comma || len >= sizeof first)
            return cli_usage_error("discuss", "--temperatures expects T1,T2, got \"%s\"",
                                   temperatures);
        memcpy(first, temperatures, len);
        first[len] = '\0';
        if (cli_parse_double("--temperatures", first, 0, 10, &temps[0]) ||
            cli_parse_double("--temperatures", comma + 1, 0, 10, &temps[1]))
            return EXIT_USAGE;
        if (temps[0] == temps[1])
            return cli_usage_error("discuss", "--temperatures must differ, got %g twice",
                                   temps[0]);
    }

    arb_model_pair *pairs = NULL;
    arb_judges_file *judges = NULL;
    arb_store *store = NULL;
    arb_dataset *ds = NULL;
    char self_names[2][160];
    long n_pairs = cli_parse_pairs("discuss", "--pairs", pairs_text, &pairs);
    int rc = n_pairs < 0 ? EXIT_USAGE : EXIT_OK;
    if (!rc && self) {
        rc = cli_pick_judges("discuss", "--self", self, judges_path, 1, p.reviewers, &judges);
        if (!rc) {
            p.reviewers[1] = p.reviewers[0];
            const char *base = p.reviewers[0].name;
            for (int i = 0; i < 2 && !rc; i++) {
                int len = snprintf(self_names[i], sizeof self_names[i], "%s@t%g", base, temps[i]);
                if (len < 0 || (size_t)len >= sizeof self_names[i])
                    rc = cli_usage_error("discuss", "--self: judge name too long");
                p.reviewers[i].name = self_names[i];
                p.reviewers[i].sampling.temperature = temps[i];
            }
        }
    } else if (!rc) {
        rc = cli_pick_judges("discuss", "--reviewers", reviewers, judges_path, 2, p.reviewers,
                             &judges);
    }
    if (rc) goto done;
    p.pairs = pairs;
    p.n_pairs = (size_t)n_pairs;

    if ((rc = cli_open_run_inputs_indexed("discuss", items, answers, db, &ds, &store))) goto done;
    arb_run_stats stats;
    arb_status st = arb_discuss_run(store, ds, &p, &stats);
    rc = cli_run_result("discuss", store, st, &stats, p.dry_run);
done:
    cli_close_run_store(store, rc, p.dry_run);
    arb_dataset_destroy(ds);
    arb_judges_file_destroy(judges);
    free(pairs);
    return rc;
}
