/*
** cmd_tournament.c -- `arbiter tournament`: every pair of models judged in both orders by every
** judge of a judges file; the judgments are stored and turned into battles for `arbiter rank`.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char tournament_help[] =
    "usage: arbiter tournament --items FILE --answers FILE --judges FILE[:NAME,...] --db FILE\n"
    "                          [options]\n"
    "\n"
    "Judges every unordered pair of models on every item both answered, in both orders, by\n"
    "every judge of the judges file (METHODS §6), in 3-option mode (A first better, B second\n"
    "better, C tie). Every judgment is stored (protocol \"tournament\"), and the battles of\n"
    "source \"tournament\" are rebuilt from all stored tournament judgments for 'arbiter rank'.\n"
    "Each finished call is committed at once; a rerun sends nothing and an interrupted run\n"
    "resumes where it stopped. Model names never reach the judges.\n"
    "\n"
    "input:\n"
    "  --items FILE            JSONL: {\"id\", \"question\", \"reference\"?, \"category\"?, ...}\n"
    "  --answers FILE          JSONL: {\"item\", \"model\", \"answer\"}\n"
    "  --judges FILE[:NAME,...]  YAML list of judges (format in README); with :NAMES only\n"
    "                          those judges of the file, in that order:\n"
    "                            judges:\n"
    "                              - name: judge-a        # optional, default the model\n"
    "                                url: http://127.0.0.1:8000/v1\n"
    "                                model: qwen2.5-7b-instruct\n"
    "                                api_key_env: VAR     # optional; the key is never stored\n"
    "                                contestant: model-a  # optional: the model it is\n"
    "                                temperature: 0       # optional: top_p, max_tokens,\n"
    "                                                     #   frequency_penalty, seed\n"
    "  --models all|A,B,...    contestants (default all: every model with answers)\n"
    "judging:\n"
    "  --exclude-self          a judge does not review pairs that contain its contestant\n"
    "  --random-k K            only K judges, drawn at random per (item, pair), review it\n"
    "                          (default 0: all)\n"
    "  --seed N                seed of the --random-k draw (default 1); the same seed draws the\n"
    "                          same judges, so a rerun plans the same calls\n"
    "  --prompt NAME|FILE      template: I, II, II-fact, II-reason (default), II-fact-reason,\n"
    "                          or a template file\n"
    "  --reps N                repetitions of every judgment (default 1)\n";

enum {
    OPT_ITEMS = 256, OPT_ANSWERS, OPT_JUDGES, OPT_MODELS, OPT_EXCLUDE_SELF, OPT_RANDOM_K,
    OPT_SEED, OPT_PROMPT, OPT_REPS,
    OPT_HELP
};

static const struct option tournament_options[] = {
    {"items", required_argument, 0, OPT_ITEMS},
    {"answers", required_argument, 0, OPT_ANSWERS},
    {"judges", required_argument, 0, OPT_JUDGES},
    {"models", required_argument, 0, OPT_MODELS},
    {"exclude-self", no_argument, 0, OPT_EXCLUDE_SELF},
    {"random-k", required_argument, 0, OPT_RANDOM_K},
    {"seed", required_argument, 0, OPT_SEED},
    {"prompt", required_argument, 0, OPT_PROMPT},
    {"reps", required_argument, 0, OPT_REPS},
    CLI_RUN_OPTIONS,
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

/* Splits "A,B,C" in place into *names (caller frees the array). Returns the count, or -1 after
** printing why (an empty name). */
static long split_models(char *list, const char ***names)
{
    size_t n = 1;
    for (const char *c = list; *c; c++) n += *c == ',';
    *names = malloc(n * sizeof **names);
    if (!*names) {
        fprintf(stderr, "arbiter tournament: out of memory\n");
        return -1;
    }
    size_t k = 0;
    for (char *tok = list;; k++) {
        char *comma = strchr(tok, ',');
        if (comma) *comma = '\0';
        if (!*tok) {
            free(*names);
            *names = NULL;
            return cli_usage_error("tournament", "--models: empty model name in the list"), -1;
        }
        (*names)[k] = tok;
        if (!comma) break;
        tok = comma + 1;
    }
    return (long)(k + 1);
}

/* Judgments without a valid verdict (E), which give no battle, per model pair (summed over
** the judges); nothing when there are none. */
static void print_left_out(const arb_battles *b)
{
    size_t n = arb_battles_left_out_count(b), total = 0;
    for (size_t k = 0; k < n; k++) total += arb_battles_left_out_at(b, k).n;
    if (!total) return;
    fprintf(stderr, "left out of the battles: %zu judgment%s with verdict E (no valid verdict, or "
                    "a failed call), per model pair:\n", total, total == 1 ? "" : "s");
    for (size_t k = 0; k < n; k++) {
        arb_battle_left_out x = arb_battles_left_out_at(b, k);
        size_t sum = 0;
        int first = 1; /* each pair once, at its first record */
        for (size_t y = 0; y < n && first; y++) {
            arb_battle_left_out o = arb_battles_left_out_at(b, y);
            if (strcmp(o.model_a, x.model_a) || strcmp(o.model_b, x.model_b)) continue;
            if (y < k) first = 0;
            sum += o.n;
        }
        if (first) fprintf(stderr, "  %s vs %s: %zu\n", x.model_a, x.model_b, sum);
    }
}

int cmd_tournament(int argc, char **argv)
{
    arb_tournament_params p = arb_tournament_default_params();
    const char *items = NULL, *answers = NULL, *judges_path = NULL, *db = NULL;
    char *models_arg = NULL;
    long n;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", tournament_options, NULL)) != -1) {
        switch (c) {
        case OPT_ITEMS: items = optarg; break;
        case OPT_ANSWERS: answers = optarg; break;
        case OPT_JUDGES: judges_path = optarg; break;
        case OPT_MODELS: models_arg = optarg; break;
        case OPT_EXCLUDE_SELF: p.exclude_self = 1; break;
        case OPT_RANDOM_K:
            if (cli_parse_int("--random-k", optarg, 1, 1000000, &n)) return EXIT_USAGE;
            p.random_k = (size_t)n;
            break;
        case OPT_SEED:
            if (cli_parse_int("--seed", optarg, 0, 2147483647L, &n)) return EXIT_USAGE;
            p.seed = (unsigned long long)n;
            break;
        case OPT_PROMPT: p.template_name = optarg; break;
        case OPT_REPS:
            if (cli_parse_int("--reps", optarg, 1, 1000, &n)) return EXIT_USAGE;
            p.reps = (int)n;
            break;
        case OPT_HELP:
            fputs(tournament_help, stdout);
            cli_print_run_help(stdout);
            return EXIT_OK;
        default: {
            int t = cli_run_option(c, optarg, &p.client, &db, &p.dry_run, &p.progress);
            if (t < 0) return EXIT_USAGE;
            if (t > 0) break;
            return cli_usage_error("tournament", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
        }
    }
    if (optind < argc)
        return cli_usage_error("tournament", "unexpected argument \"%s\"", argv[optind]);
    const char *missing = !items ? "--items" : !answers ? "--answers" : !judges_path ? "--judges"
                        : !db ? "--db" : NULL;
    if (missing) return cli_usage_error("tournament", "missing %s", missing);

    const char **models = NULL;
    if (models_arg && strcmp(models_arg, "all") != 0) {
        long m = split_models(models_arg, &models);
        if (m < 0) return EXIT_USAGE;
        p.models = models;
        p.n_models = (size_t)m;
    }

    int rc = EXIT_FAIL;
    arb_store *store = NULL;
    arb_judges_file *judges = NULL;
    arb_battles *battles = NULL;
    arb_dataset *ds = NULL;
    arb_judge_config *picked = NULL;
    const char **names = NULL;
    size_t n_picked = 0;
    arb_status st;
    if ((rc = cli_pick_judge_list("tournament", "--judges", judges_path, &picked, &n_picked,
                                  &judges)))
        goto done;
    rc = EXIT_FAIL;
    p.judges = judges;
    if (strchr(judges_path, ':')) { /* FILE:NAMES: those judges only */
        if (!(names = calloc(n_picked, sizeof *names))) goto done;
        for (size_t j = 0; j < n_picked; j++) names[j] = picked[j].name;
        p.judge_names = names;
        p.n_judge_names = n_picked;
    }
    if ((rc = cli_open_run_inputs_indexed("tournament", items, answers, db, &ds, &store)))
        goto done;
    rc = EXIT_FAIL;
    arb_run_stats stats;
    st = arb_tournament_run(store, ds, &p, &stats);
    if (st && st != ARB_INTERRUPTED && st != ARB_BUDGET) {
        rc = cli_store_failure("tournament", store, st);
        goto done;
    }
    char stop_msg[512]; /* why the run stopped, before reading the battles */
    snprintf(stop_msg, sizeof stop_msg, "%s", st ? arb_store_errmsg(store) : "");
    cli_print_run_stats("tournament", &stats, p.dry_run);
    if (!p.dry_run) {
        battles = arb_battles_create(); /* the left-out counts only: not every battle */
        size_t n_battles = 0;
        arb_status bst = battles ? arb_store_battles_summary(store, "tournament", &n_battles,
                                                             battles)
                                 : ARB_NOMEM;
        if (bst) {
            rc = battles ? cli_store_failure("tournament", store, bst) : EXIT_FAIL;
            if (!battles) fprintf(stderr, "arbiter tournament: out of memory\n");
            goto done;
        }
        fprintf(stderr, "stored %zu battles (source tournament)\n", n_battles);
        print_left_out(battles);
    }
    if (st == ARB_INTERRUPTED || st == ARB_BUDGET) {
        fprintf(stderr, "arbiter tournament: %s\n", stop_msg);
        rc = cli_exit_code(st);
    } else if (stats.failed) {
        fprintf(stderr,
                "arbiter tournament: %zu calls failed after retries and count as verdict E (no "
                "battle; reasons in the store, 'arbiter export' shows them); run the same command "
                "again to retry them\n",
                stats.failed);
        rc = EXIT_FAIL;
    } else {
        rc = EXIT_OK;
    }
done:
    arb_battles_destroy(battles);
    cli_close_run_store(store, rc, p.dry_run);
    arb_judges_file_destroy(judges);
    arb_dataset_destroy(ds);
    free(models);
    free(picked);
    free(names);
    return rc;
}
