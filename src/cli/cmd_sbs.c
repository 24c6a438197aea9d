/*
** cmd_sbs.c -- `arbiter sbs`: side-by-side judging of a candidate against a baseline.
*/
#include "cli.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char sbs_help[] =
    "usage: arbiter sbs --items FILE --answers FILE --candidate MODEL --baseline MODEL\n"
    "                   (--judges FILE:NAME[,NAME...] | --judge-url URL --judge-model MODEL)\n"
    "                   --db FILE [options]\n"
    "\n"
    "Judges every item twice (candidate first, then baseline first; METHODS §2.2) with an\n"
    "OpenAI-compatible chat-completions endpoint (vLLM, llama.cpp server, Ollama, OpenAI, ...).\n"
    "Each finished call is committed at once; a call already stored is never sent again, so a\n"
    "rerun sends nothing and an interrupted run resumes where it stopped.\n"
    "\n"
    "input:\n"
    "  --items FILE            JSONL: {\"id\", \"question\", \"reference\"?, \"category\"?, \"language\"?, \"group\"?}\n"
    "  --answers FILE          JSONL: {\"item\", \"model\", \"answer\"}\n"
    "  --candidate MODEL       model compared (verdict a = candidate better)\n"
    "  --baseline MODEL        model compared against (verdict b = baseline better)\n"
    "judge (a judges file, or the flags below as a shortcut for one endpoint):\n"
    "  --judges FILE:NAME[,NAME...]\n"
    "                          the named judges of a judges file (format in README, as for\n"
    "                          tournament; without :NAMES every judge of the file); each judges\n"
    "                          every item in both orders. Not with --judge-url/--judge-model/\n"
    "                          --judge-name/--api-key-env or the sampling flags\n"
    "  --judge-url URL         base URL, e.g. http://127.0.0.1:8000/v1 (stored without\n"
    "                          user:password@ and key-like query parameters)\n"
    "  --judge-model MODEL     model name sent to the endpoint\n"
    "  --judge-name NAME       name of this judge in the store and audit (default: the model)\n"
    "  --api-key-env VAR       read the API key from environment variable VAR (never stored;\n"
    "                          unset, empty or with a line break: exit 2 before any request)\n"
    "  --prompt NAME|FILE      template: I, II, II-fact, II-reason (default), II-fact-reason,\n"
    "                          or a template file (format in README)\n"
    "  --options N             verdict options: 2 (A/B), 3 (+C tie), 4 (+C both good, D both bad;\n"
    "                          default)\n"
    "  --reps N                repetitions of every judgment (default 1)\n"
    "sampling (defaults are the published SbS settings, METHODS §2.6):\n"
    "  --temperature X         default 0\n"
    "  --top-p X               default 0.1\n"
    "  --max-tokens N          default 1024\n"
    "  --frequency-penalty X   default 1.0\n"
    "  --seed N                sent as seed + repetition index (default: no seed)\n"
    "rerun:\n"
    "  --full-check            check every request against the store even when the inputs,\n"
    "                          judges and template are those of a finished run and the store\n"
    "                          is as that run left it (without it such a rerun only hashes\n"
    "                          the input files and says \"nothing to send\"; README \"Fast\n"
    "                          resume and bounded memory\")\n"
    "cost:\n"
    CLI_PRICE_HELP;

enum {
    OPT_ITEMS = 256, OPT_ANSWERS, OPT_CANDIDATE, OPT_BASELINE, OPT_JUDGE_URL, OPT_JUDGE_MODEL,
    OPT_JUDGE_NAME, OPT_API_KEY_ENV, OPT_PROMPT, OPT_OPTIONS, OPT_REPS, OPT_JUDGES, OPT_HELP,
    OPT_FULL_CHECK
};

static const struct option sbs_options[] = {
    {"items", required_argument, 0, OPT_ITEMS},
    {"answers", required_argument, 0, OPT_ANSWERS},
    {"candidate", required_argument, 0, OPT_CANDIDATE},
    {"baseline", required_argument, 0, OPT_BASELINE},
    {"judges", required_argument, 0, OPT_JUDGES},
    {"judge-url", required_argument, 0, OPT_JUDGE_URL},
    {"judge-model", required_argument, 0, OPT_JUDGE_MODEL},
    {"judge-name", required_argument, 0, OPT_JUDGE_NAME},
    {"api-key-env", required_argument, 0, OPT_API_KEY_ENV},
    {"prompt", required_argument, 0, OPT_PROMPT},
    {"options", required_argument, 0, OPT_OPTIONS},
    {"reps", required_argument, 0, OPT_REPS},
    {"full-check", no_argument, 0, OPT_FULL_CHECK},
    CLI_SAMPLING_OPTIONS,
    CLI_PRICE_OPTIONS,
    CLI_RUN_OPTIONS,
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

/* A rerun of a finished plan on an unchanged store (arb_sbs_rerun_if_unchanged): says so,
** prints the run's summary as a rerun that sends nothing prints it and sets *finished. Else
** leaves the store as it was, open in *kept for the run (NULL when it could not be opened: the
** run reports why), with the plan's fingerprint in *out. The caller closes *kept with
** cli_close_run_store, which removes a database this check created when the run fails. Returns
** 0 or the exit code. */
static int rerun_if_unchanged(const char *items, const char *answers, const char *db,
                              const arb_sbs_params *p, arb_sbs_unchanged *out, int *finished,
                              arb_store **kept)
{
    arb_store *store = NULL;
    *finished = 0;
    *kept = NULL;
    if (arb_store_open(db, &store)) { /* the run reports it */
        arb_store_close(store);
        return 0;
    }
    arb_run_stats stats;
    arb_status st = arb_sbs_rerun_if_unchanged(store, items, answers, p, out, &stats);
    if (st) {
        int rc = cli_store_failure("sbs", store, st);
        arb_store_close(store);
        return rc;
    }
    if (!out->since_run) {
        *kept = store;
        return 0;
    }
    fprintf(stderr,
            "sbs: inputs, judges and template unchanged since run %lld, whose %zu judgments are "
            "all still stored: nothing to send (--full-check checks every request)\n",
            out->since_run, out->judgments);
    *finished = 1;
    int rc = cli_run_result("sbs", store, ARB_OK, &stats, 0);
    arb_store_close(store);
    return rc;
}

int cmd_sbs(int argc, char **argv)
{
    arb_sbs_params p = arb_sbs_default_params();
    const char *items = NULL, *answers = NULL, *db = NULL, *judges_spec = NULL;
    int single_given = 0; /* a flag of the one-endpoint shortcut was given */
    long n;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", sbs_options, NULL)) != -1) {
        switch (c) {
        case OPT_ITEMS: items = optarg; break;
        case OPT_ANSWERS: answers = optarg; break;
        case OPT_CANDIDATE: p.candidate = optarg; break;
        case OPT_BASELINE: p.baseline = optarg; break;
        case OPT_JUDGES: judges_spec = optarg; break;
        case OPT_JUDGE_URL: p.judge.base_url = optarg; single_given = 1; break;
        case OPT_JUDGE_MODEL: p.judge.model = optarg; single_given = 1; break;
        case OPT_JUDGE_NAME: p.judge.name = optarg; single_given = 1; break;
        case OPT_API_KEY_ENV: p.judge.api_key_env = optarg; single_given = 1; break;
        case OPT_PROMPT: p.template_name = optarg; break;
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
            fputs(sbs_help, stdout);
            cli_print_run_help(stdout);
            return EXIT_OK;
        default: {
            int t = cli_run_option(c, optarg, &p.client, &db, &p.dry_run, &p.progress);
            if (!t && (t = cli_sampling_option(c, optarg, &p.judge.sampling)) > 0) single_given = 1;
            if (!t && (t = cli_price_option(c, optarg, &p.judge.price)) > 0) single_given = 1;
            if (t < 0) return EXIT_USAGE;
            if (t > 0) break;
            return cli_usage_error("sbs", "unknown or incomplete option \"%s\"", argv[optind - 1]);
        }
        }
    }
    if (optind < argc) return cli_usage_error("sbs", "unexpected argument \"%s\"", argv[optind]);
    if (cli_price_finish("sbs", &p.judge.price)) return EXIT_USAGE;
    if (judges_spec && single_given)
        return cli_usage_error("sbs", "give the judges with --judges or with --judge-url and "
                                      "--judge-model, not both (a judges file holds the "
                                      "sampling too)");
    const char *missing = !items ? "--items" : !answers ? "--answers" : !p.candidate ? "--candidate"
                        : !p.baseline ? "--baseline"
                        : !judges_spec && !p.judge.model ? "--judges or --judge-model"
                        : !judges_spec && !p.judge.base_url && !p.dry_run ? "--judge-url"
                        : !db ? "--db" : NULL;
    if (missing) return cli_usage_error("sbs", "missing %s", missing);

    arb_judges_file *loaded = NULL;
    arb_judge_config *list = NULL;
    arb_store *store = NULL;
    arb_dataset *ds = NULL;
    int rc = EXIT_OK;
    if (judges_spec) {
        rc = cli_pick_judge_list("sbs", "--judges", judges_spec, &list, &p.n_judges, &loaded);
        p.judges = list;
    }
    arb_sbs_unchanged unchanged;
    memset(&unchanged, 0, sizeof unchanged);
    if (!rc) {
        int finished = 0;
        rc = rerun_if_unchanged(items, answers, db, &p, &unchanged, &finished, &store);
        if (rc || finished) goto done;
    }
    if (*unchanged.fingerprint) p.plan_fingerprint = unchanged.fingerprint;
    if (!rc) rc = cli_open_run_inputs_indexed("sbs", items, answers, db, &ds, &store);
    if (rc) goto done;
    arb_run_stats stats;
    arb_status st = arb_sbs_run(store, ds, &p, &stats);
    rc = cli_run_result("sbs", store, st, &stats, p.dry_run);
done:
    cli_close_run_store(store, rc, p.dry_run);
    arb_dataset_destroy(ds);
    arb_judges_file_destroy(loaded);
    free(list);
    return rc;
}
