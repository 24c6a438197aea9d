/*
** cmd_grade.c -- `arbiter grade`: pointwise judging (METHODS §8), yes/no or a grade 1-5 of one
** answer per item, by one judge or several.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char grade_help[] =
    "usage: arbiter grade --items FILE (--answers FILE --model M | --answer-from reference)\n"
    "                     (--judges FILE[:NAME,...] | --judge-url URL --judge-model MODEL)\n"
    "                     --db FILE [options]\n"
    "\n"
    "Pointwise judging (METHODS §8): each judge says whether an answer is correct (--mode\n"
    "yesno: <answer>correct</answer> or <answer>incorrect</answer>) or grades it from 1 to 5\n"
    "(--mode grade), in a prompt that names the evaluation language (the item's \"language\"),\n"
    "the task and its inputs. The reply format asked is\n"
    "<result><justification>...</justification><answer>...</answer></result>; a reply\n"
    "without a valid value is E, stored with its reason and its text. Each finished call is\n"
    "committed at once: a rerun sends nothing and an interrupted run resumes where it stopped.\n"
    "Items of one parallel \"group\" are the same content in different languages; measure the\n"
    "judges' cross-language consistency with 'arbiter consistency'.\n"
    "\n"
    "input:\n"
    "  --items FILE            JSONL: {\"id\", \"language\", \"group\"?, \"question\"?, \"context\"?,\n"
    "                          \"source\"?, \"document\"?, \"dialog\"?, \"reference\"?}; the task\n"
    "                          decides which fields are needed (below)\n"
    "  --answers FILE          JSONL: {\"item\", \"model\", \"answer\"}\n"
    "  --model M               judge model M's answers\n"
    "  --answer-from reference judge each item's \"reference\" instead (stored as model\n"
    "                          \"reference\"; --answers is then optional)\n"
    "task and prompt:\n"
    "  --mode yesno|grade      correct/incorrect (default) or a grade 1-5\n"
    "  --task T                qa (needs question, context), math (question), translation\n"
    "                          (source), summary (document), dialogue (dialog), generic\n"
    "                          (question; default), or category: each item's task is its\n"
    "                          \"category\" (for files that mix tasks)\n"
    "  --rubric general|specific   specific describes every grade (or what makes an answer\n"
    "                          correct or incorrect); default general\n"
    "  --explain yes|no        a justification before the answer (default yes) or the answer\n"
    "                          only\n"
    "  --template NAME|FILE    another template (built-in name or file, format in README; it\n"
    "                          must use {answer}); replaces --rubric and --explain. Default:\n"
    "                          pointwise-<mode>-<rubric>-<explain|plain>\n"
    "  --reps N                repetitions of every judgment (default 1)\n"
    "judges:\n"
    "  --judges FILE[:A,B,...] judges from a judges file (format in README): the named ones,\n"
    "                          or every judge of the file\n"
    "  --judge-url URL         or one judge: base URL, e.g. http://127.0.0.1:8000/v1\n"
    "  --judge-model MODEL     model name sent to the endpoint\n"
    "  --judge-name NAME       name of this judge in the store (default: the model)\n"
    "  --api-key-env VAR       read the API key from environment variable VAR (never stored)\n"
    "  --temperature X --top-p X --max-tokens N --frequency-penalty X --seed N\n"
    "                          sampling of --judge-model (defaults: the published SbS settings,\n"
    "                          METHODS §2.6); a judges file gives each judge's own\n"
    CLI_PRICE_HELP;

enum {
    OPT_ITEMS = 256, OPT_ANSWERS, OPT_MODEL, OPT_ANSWER_FROM, OPT_MODE, OPT_TASK, OPT_RUBRIC,
    OPT_EXPLAIN, OPT_TEMPLATE, OPT_REPS, OPT_JUDGES, OPT_JUDGE_URL, OPT_JUDGE_MODEL,
    OPT_JUDGE_NAME, OPT_API_KEY_ENV, OPT_HELP
};

static const struct option grade_options[] = {
    {"items", required_argument, 0, OPT_ITEMS},
    {"answers", required_argument, 0, OPT_ANSWERS},
    {"model", required_argument, 0, OPT_MODEL},
    {"answer-from", required_argument, 0, OPT_ANSWER_FROM},
    {"mode", required_argument, 0, OPT_MODE},
    {"task", required_argument, 0, OPT_TASK},
    {"rubric", required_argument, 0, OPT_RUBRIC},
    {"explain", required_argument, 0, OPT_EXPLAIN},
    {"template", required_argument, 0, OPT_TEMPLATE},
    {"reps", required_argument, 0, OPT_REPS},
    {"judges", required_argument, 0, OPT_JUDGES},
    {"judge-url", required_argument, 0, OPT_JUDGE_URL},
    {"judge-model", required_argument, 0, OPT_JUDGE_MODEL},
    {"judge-name", required_argument, 0, OPT_JUDGE_NAME},
    {"api-key-env", required_argument, 0, OPT_API_KEY_ENV},
    CLI_SAMPLING_OPTIONS,
    CLI_PRICE_OPTIONS,
    CLI_RUN_OPTIONS,
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

/* Is arg one of the words of list (NULL-terminated)? Prints a usage error naming opt when
** not, and returns its index or -1. */
static int pick_word(const char *opt, const char *arg, const char *const *list, const char *shown)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(arg, list[i])) return i;
    cli_usage_error("grade", "%s must be %s, got \"%s\"", opt, shown, arg);
    return -1;
}

/* Prints the warning of items whose groups do not cover every language (it only weakens the
** cross-language metrics, so the run goes on). */
static void warn_coverage(const arb_dataset *ds)
{
    arb_group_coverage c = arb_dataset_group_coverage(ds);
    if (c.n_incomplete)
        fprintf(stderr,
                "arbiter grade: warning: %zu of %zu groups lack an item in some of the %zu "
                "languages; cross-language metrics (Fleiss' kappa) use complete groups only\n",
                c.n_incomplete, c.n_groups, c.n_languages);
    if (c.n_groups && c.n_ungrouped)
        fprintf(stderr,
                "arbiter grade: warning: %zu items have no \"group\" and count in no "
                "cross-language metric\n",
                c.n_ungrouped);
}

int cmd_grade(int argc, char **argv)
{
    static const char *const modes[] = {"yesno", "grade", NULL};
    static const char *const yes_no[] = {"no", "yes", NULL};
    static const char *const sources[] = {"answers", "reference", NULL};
    arb_grade_params p = arb_grade_default_params();
    arb_judge_config single = {.sampling = arb_sampling_default()};
    const char *items = NULL, *answers = NULL, *db = NULL, *judges_spec = NULL;
    int rubric_given = 0, explain_given = 0, single_given = 0, k;
    long n;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", grade_options, NULL)) != -1) {
        switch (c) {
        case OPT_ITEMS: items = optarg; break;
        case OPT_ANSWERS: answers = optarg; break;
        case OPT_MODEL: p.model = optarg; break;
        case OPT_ANSWER_FROM:
            if ((k = pick_word("--answer-from", optarg, sources, "reference or answers")) < 0)
                return EXIT_USAGE;
            p.answer_from_reference = k;
            break;
        case OPT_MODE:
            if ((k = pick_word("--mode", optarg, modes, "yesno or grade")) < 0) return EXIT_USAGE;
            p.kind = k ? ARB_POINTWISE_GRADE : ARB_POINTWISE_YESNO;
            break;
        case OPT_TASK: p.task = optarg; break;
        case OPT_RUBRIC: p.rubric = optarg; rubric_given = 1; break;
        case OPT_EXPLAIN:
            if ((k = pick_word("--explain", optarg, yes_no, "yes or no")) < 0) return EXIT_USAGE;
            p.explain = k;
            explain_given = 1;
            break;
        case OPT_TEMPLATE: p.template_name = optarg; break;
        case OPT_REPS:
            if (cli_parse_int("--reps", optarg, 1, 1000, &n)) return EXIT_USAGE;
            p.reps = (int)n;
            break;
        case OPT_JUDGES: judges_spec = optarg; break;
        case OPT_JUDGE_URL: single.base_url = optarg; single_given = 1; break;
        case OPT_JUDGE_MODEL: single.model = optarg; single_given = 1; break;
        case OPT_JUDGE_NAME: single.name = optarg; single_given = 1; break;
        case OPT_API_KEY_ENV: single.api_key_env = optarg; single_given = 1; break;
        case OPT_HELP:
            fputs(grade_help, stdout);
            cli_print_run_help(stdout);
            return EXIT_OK;
        default: {
            int t = cli_run_option(c, optarg, &p.client, &db, &p.dry_run, &p.progress);
            if (!t && (t = cli_sampling_option(c, optarg, &single.sampling)) > 0) single_given = 1;
            if (!t && (t = cli_price_option(c, optarg, &single.price)) > 0) single_given = 1;
            if (t < 0) return EXIT_USAGE;
            if (t > 0) break;
            return cli_usage_error("grade", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
        }
    }
    if (optind < argc) return cli_usage_error("grade", "unexpected argument \"%s\"", argv[optind]);
    if (cli_price_finish("grade", &single.price)) return EXIT_USAGE;
    if (judges_spec && single_given)
        return cli_usage_error("grade", "give the judges with --judges or with --judge-url and "
                                        "--judge-model, not both");
    if (p.template_name && (rubric_given || explain_given))
        return cli_usage_error("grade", "--template replaces --rubric and --explain");
    if (p.model && p.answer_from_reference)
        return cli_usage_error("grade", "give --model or --answer-from reference, not both");
    const char *missing = !items ? "--items"
                        : !p.model && !p.answer_from_reference ? "--model (or --answer-from "
                                                                 "reference)"
                        : !answers && !p.answer_from_reference ? "--answers"
                        : !judges_spec && !single.model ? "--judges or --judge-model"
                        : !judges_spec && !single.base_url && !p.dry_run ? "--judge-url"
                        : !db ? "--db" : NULL;
    if (missing) return cli_usage_error("grade", "missing %s", missing);

    arb_judges_file *loaded = NULL;
    arb_judge_config *list = NULL;
    arb_store *store = NULL;
    arb_dataset *ds = NULL;
    int rc = EXIT_OK;
    if (judges_spec) {
        rc = cli_pick_judge_list("grade", "--judges", judges_spec, &list, &p.n_judges, &loaded);
        p.judges = list;
    } else {
        if (!single.name) single.name = single.model;
        p.judges = &single;
        p.n_judges = 1;
    }
    if (!rc) rc = cli_open_run_inputs_indexed("grade", items, answers, db, &ds, &store);
    if (rc) goto done;
    warn_coverage(ds);
    arb_run_stats stats;
    arb_status st = arb_grade_run(store, ds, &p, &stats);
    rc = cli_run_result("grade", store, st, &stats, p.dry_run);
done:
    cli_close_run_store(store, rc, p.dry_run);
    arb_dataset_destroy(ds);
    arb_judges_file_destroy(loaded);
    free(list);
    return rc;
}
