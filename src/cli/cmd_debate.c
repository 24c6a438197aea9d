/*
** cmd_debate.c -- `arbiter debate`: soft or hard multi-agent verdicts (METHODS §2.5) on
** candidate vs baseline, three judges of a judges file in the roles agent 1, agent 2, judge.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char debate_help[] =
    "usage: arbiter debate --mode soft|hard --agents FILE:AGENT1,AGENT2,JUDGE --items FILE\n"
    "                      --answers FILE --candidate MODEL --baseline MODEL --db FILE [options]\n"
    "\n"
    "Multi-agent verdicts (METHODS §2.5) in the side-by-side shape of 'arbiter sbs' (both\n"
    "orders): agent 1 judges the pair; agent 2 reads agent 1's review and agrees or disagrees\n"
    "with reasons (hard: it is told to disagree); the judge agent reads both and gives the final\n"
    "verdict. Each role is any judge of the judges file (its own endpoint and model). Every turn\n"
    "is stored (prompt and reply); the final verdicts are stored as judge\n"
    "\"<mode>(<agent1>,<agent2>,<judge>)\", so 'arbiter audit' reports every SbS metric for the\n"
    "debate beside the judges alone. Agent 1's calls are those of 'arbiter sbs' with the same\n"
    "judge and template, reused from the store when present.\n"
    "\n"
    "  --mode soft|hard        soft: agent 2 free to agree; hard: agent 2 must disagree\n"
    "  --agents FILE:A1,A2,J   three judge names from a judges file (the format of 'arbiter\n"
    "                          tournament --help'); or --judges FILE --agents A1,A2,J\n"
    "  --judges FILE           the judges file, when --agents holds only names\n"
    "  --items FILE, --answers FILE, --candidate MODEL, --baseline MODEL   as for 'arbiter sbs'\n"
    "  --prompt NAME|FILE      agent 1's template (default II-reason)\n"
    "  --agent2-prompt NAME|FILE  default debate-soft or debate-hard\n"
    "  --judge-prompt NAME|FILE   default debate-judge\n"
    "  --options N             verdict options 2, 3 or 4 (default 4)\n"
    "  --reps N                repetitions (default 1)\n"
    "  --full-check            check every call against the store even when the inputs,\n"
    "                          judges and templates are those of a finished run and the store\n"
    "                          is as that run left it (without it such a rerun says \"nothing\n"
    "                          to send\" at once; README \"Resume and caching\")\n"
    ;

enum {
    OPT_MODE = 256, OPT_AGENTS, OPT_JUDGES, OPT_ITEMS, OPT_ANSWERS, OPT_CANDIDATE, OPT_BASELINE,
    OPT_PROMPT, OPT_AGENT2_PROMPT, OPT_JUDGE_PROMPT, OPT_OPTIONS, OPT_REPS, OPT_HELP,
    OPT_FULL_CHECK
};

static const struct option debate_options[] = {
    {"mode", required_argument, 0, OPT_MODE},
    {"agents", required_argument, 0, OPT_AGENTS},
    {"judges", required_argument, 0, OPT_JUDGES},
    {"items", required_argument, 0, OPT_ITEMS},
    {"answers", required_argument, 0, OPT_ANSWERS},
    {"candidate", required_argument, 0, OPT_CANDIDATE},
    {"baseline", required_argument, 0, OPT_BASELINE},
    {"prompt", required_argument, 0, OPT_PROMPT},
    {"agent2-prompt", required_argument, 0, OPT_AGENT2_PROMPT},
    {"judge-prompt", required_argument, 0, OPT_JUDGE_PROMPT},
    {"options", required_argument, 0, OPT_OPTIONS},
    {"reps", required_argument, 0, OPT_REPS},
    {"full-check", no_argument, 0, OPT_FULL_CHECK},
    CLI_RUN_OPTIONS,
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

int cmd_debate(int argc, char **argv)
{
    arb_debate_params p = arb_debate_default_params();
    const char *mode = NULL, *agents = NULL, *judges_path = NULL, *items = NULL, *answers = NULL;
    const char *db = NULL;
    long n;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", debate_options, NULL)) != -1) {
        switch (c) {
        case OPT_MODE: mode = optarg; break;
        case OPT_AGENTS: agents = optarg; break;
        case OPT_JUDGES: judges_path = optarg; break;
        case OPT_ITEMS: items = optarg; break;
        case OPT_ANSWERS: answers = optarg; break;
        case OPT_CANDIDATE: p.candidate = optarg; break;
        case OPT_BASELINE: p.baseline = optarg; break;
        case OPT_PROMPT: p.template_name = optarg; break;
        case OPT_AGENT2_PROMPT: p.agent2_template = optarg; break;
        case OPT_JUDGE_PROMPT: p.judge_template = optarg; break;
        case OPT_OPTIONS:
            if (cli_parse_int("--options", optarg, 2, 4, &n)) return EXIT_USAGE;
            p.options = (int)n;
            break;
        case OPT_REPS:
            if (cli_parse_int("--reps", optarg, 1, 1000, &n)) return EXIT_USAGE;
            p.reps = (int)n;
            break;
        case OPT_FULL_CHECK: p.full_check = 1; break;
        case OPT_HELP:
            fputs(debate_help, stdout);
            cli_print_run_help(stdout);
            return EXIT_OK;
        default: {
            int t = cli_run_option(c, optarg, &p.client, &db, &p.dry_run, &p.progress);
            if (t < 0) return EXIT_USAGE;
            if (t > 0) break;
            return cli_usage_error("debate", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
        }
    }
    if (optind < argc) return cli_usage_error("debate", "unexpected argument \"%s\"", argv[optind]);
    const char *missing = !mode ? "--mode" : !agents ? "--agents" : !items ? "--items"
                        : !answers ? "--answers" : !p.candidate ? "--candidate"
                        : !p.baseline ? "--baseline" : !db ? "--db" : NULL;
    if (missing) return cli_usage_error("debate", "missing %s", missing);
    if (!strcmp(mode, "soft")) p.mode = ARB_DEBATE_SOFT;
    else if (!strcmp(mode, "hard")) p.mode = ARB_DEBATE_HARD;
    else return cli_usage_error("debate", "--mode must be soft or hard, got \"%s\"", mode);

    arb_judges_file *judges = NULL;
    int rc = cli_pick_judges("debate", "--agents", agents, judges_path, 3, p.agents, &judges);
    if (rc) {
        arb_judges_file_destroy(judges);
        return rc;
    }
    arb_store *store = NULL;
    arb_dataset *ds = NULL;
    if ((rc = cli_open_run_inputs_indexed("debate", items, answers, db, &ds, &store))) goto done;
    arb_run_stats stats;
    arb_status st = arb_debate_run(store, ds, &p, &stats);
    rc = cli_run_result("debate", store, st, &stats, p.dry_run);
done:
    cli_close_run_store(store, rc, p.dry_run);
    arb_dataset_destroy(ds);
    arb_judges_file_destroy(judges);
    return rc;
}
