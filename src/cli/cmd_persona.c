/*
** cmd_persona.c -- `arbiter persona`: the persona-bias study (METHODS §9). `persona run` scores
** the same responses attributed to different identities (phases 1 and 2); `persona report`
** (cmd_persona_report.c) analyses what is stored.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char persona_help[] =
    "usage: arbiter persona run --scenarios FILE [--identities FILE] [--phase 1|2|both]\n"
    "                           --judges FILE:NAME[,NAME...] [--panel A,B[,...] --rounds R]\n"
    "                           --db FILE [options]\n"
    "       arbiter persona report --db FILE [options]   (see 'arbiter persona report --help')\n"
    "\n"
    "Persona bias (METHODS §9): does a judge score the same response differently when it is\n"
    "said to be written by a woman or a man, a Muslim or an atheist? Each prompt attributes\n"
    "the response(s) to identities (\"Author: <identity> professional\"); the judge replies\n"
    "with JSON scores.\n"
    "  phase 1  every response of every scenario scored under every identity of each category\n"
    "           (one call each): {\"creativity\": n, \"accuracy\": n, ...}\n"
    "  phase 2  two responses attributed to two identities of one category, both scored and\n"
    "           one preferred: {\"candidate_1\": {...}, \"candidate_2\": {...}, \"preferred\":\n"
    "           \"candidate_1\"|\"candidate_2\", \"reasons\": \"...\"}; every identity pair in 4\n"
    "           calls, labels exchanged and positions swapped, so content and position cancel\n"
    "A reply without valid JSON scores (not JSON, a metric missing or out of range, an unknown\n"
    "preferred value) is E: stored with its reason. Each finished call is committed at once: a\n"
    "rerun sends nothing and an interrupted run resumes where it stopped.\n"
    "--panel: those judges then discuss for R rounds, each seeing all replies of the round\n"
    "before; the consensus \"panel(A,B,...)\" (README) is analysed like a judge.\n"
    "\n"
    "input:\n"
    "  --scenarios FILE        JSONL: {\"id\", \"base\", \"scenario\", \"responses\": [r1, r2],\n"
    "                          \"variant\"?}; other fields are kept\n"
    "  --identities FILE       YAML: categories: {name: [label, ...]} (at least 2 labels).\n"
    "                          Default: gender [female, male]; race [Black, White, Asian,\n"
    "                          Hispanic]; religion [Muslim, Jewish, Atheist, Christian]\n"
    "  --category C[,C...]     the categories judged (repeatable; default: all)\n"
    "  --phase 1|2|both        default both\n"
    "prompt:\n"
    "  --metrics A,B,...       the metrics scored (default creativity,accuracy,efficiency,\n"
    "                          reliability; lowercase letters, digits, '_')\n"
    "  --range LO-HI           the range of a score (default 0-10)\n"
    "  --template-1 NAME|FILE  phase-1 template (default persona-1; it must use {scenario},\n"
    "                          {response}, {identity})\n"
    "  --template-2 NAME|FILE  phase-2 template (default persona-2; {candidate1},\n"
    "                          {candidate2}, {identity1}, {identity2}); both may use\n"
    "                          {metrics_json} and {range} (format in README)\n"
    "  --reps N                repetitions of every call (default 1)\n"
    "  --full-check            check every call against the store even when the inputs,\n"
    "                          judges and templates are those of a finished run and the store\n"
    "                          is as that run left it (without it such a rerun says \"nothing\n"
    "                          to send\" at once; README \"Resume and caching\")\n"
    "judges:\n"
    "  --judges FILE[:A,B,...] judges from a judges file (format in README): the named ones,\n"
    "                          or every judge of the file\n"
    "panel (METHODS §9):\n"
    "  --panel A,B[,...]       2 to 8 of the judges that discuss (they must be in --judges)\n"
    "  --rounds R              discussion rounds after the independent scores (0-10,\n"
    "                          default 1)\n"
    "  --panel-template-1|2 NAME|FILE  round templates (default persona-panel-1|2)\n";

static void print_help(FILE *out)
{
    fputs(persona_help, out);
    cli_print_run_help(out);
}

enum {
    OPT_SCENARIOS = 256, OPT_IDENTITIES, OPT_PHASE, OPT_CATEGORY, OPT_METRICS, OPT_RANGE,
    OPT_TEMPLATE_1, OPT_TEMPLATE_2, OPT_REPS, OPT_JUDGES, OPT_PANEL, OPT_ROUNDS,
    OPT_PANEL_TEMPLATE_1, OPT_PANEL_TEMPLATE_2, OPT_HELP, OPT_FULL_CHECK
};

static const struct option run_options[] = {
    {"scenarios", required_argument, 0, OPT_SCENARIOS},
    {"identities", required_argument, 0, OPT_IDENTITIES},
    {"phase", required_argument, 0, OPT_PHASE},
    {"category", required_argument, 0, OPT_CATEGORY},
    {"metrics", required_argument, 0, OPT_METRICS},
    {"range", required_argument, 0, OPT_RANGE},
    {"template-1", required_argument, 0, OPT_TEMPLATE_1},
    {"template-2", required_argument, 0, OPT_TEMPLATE_2},
    {"reps", required_argument, 0, OPT_REPS},
    {"full-check", no_argument, 0, OPT_FULL_CHECK},
    {"judges", required_argument, 0, OPT_JUDGES},
    {"panel", required_argument, 0, OPT_PANEL},
    {"rounds", required_argument, 0, OPT_ROUNDS},
    {"panel-template-1", required_argument, 0, OPT_PANEL_TEMPLATE_1},
    {"panel-template-2", required_argument, 0, OPT_PANEL_TEMPLATE_2},
    CLI_RUN_OPTIONS,
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

/* A list of names from comma lists (--category given several times, --metrics). */
typedef struct name_list {
    char **names;   /* point into the copies in texts */
    size_t n;
    char **texts;
    size_t n_texts;
} name_list;

static void name_list_free(name_list *l)
{
    for (size_t i = 0; i < l->n_texts; i++) free(l->texts[i]);
    free(l->texts);
    free(l->names);
}

/* Adds the names of "a,b,c" (none empty). Returns 0, or the exit code after printing why. */
static int name_list_add(name_list *l, const char *option, const char *arg)
{
    char *copy = strdup(arg);
    char **texts = realloc(l->texts, (l->n_texts + 1) * sizeof *texts);
    if (texts) l->texts = texts;
    size_t more = 1;
    for (const char *c = arg; *c; c++) more += *c == ',';
    char **names = realloc(l->names, (l->n + more) * sizeof *names);
    if (names) l->names = names;
    if (!copy || !texts || !names) {
        free(copy);
        fprintf(stderr, "arbiter persona: out of memory\n");
        return EXIT_FAIL;
    }
    l->texts[l->n_texts++] = copy;
    for (char *p = copy, *comma;; p = comma + 1) {
        comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (!*p)
            return cli_usage_error("persona", "%s expects names separated by commas, got \"%s\"",
                                   option, arg);
        l->names[l->n++] = p;
        if (!comma) break;
    }
    return 0;
}

/* "LO-HI" with LO < HI. Returns 0, or -1 after printing why. */
static int parse_range(const char *arg, double *lo, double *hi)
{
    char *end;
    *lo = strtod(arg, &end);
    if (end != arg && *end == '-') {
        const char *rest = end + 1;
        *hi = strtod(rest, &end);
        if (end != rest && !*end && *lo < *hi && *lo > -1e9 && *hi < 1e9) return 0;
    }
    cli_usage_error("persona", "--range expects LO-HI with LO < HI (e.g. 0-10), got \"%s\"", arg);
    return -1;
}

static int persona_run(int argc, char **argv)
{
    arb_persona_params p = arb_persona_default_params();
    const char *db = NULL, *judges_spec = NULL;
    name_list cats = {0}, metrics = {0}, panel = {0};
    int c, rc = EXIT_OK, rounds_given = 0;
    long n;
    optind = 1;
    opterr = 0;
    while (!rc && (c = getopt_long(argc, argv, "", run_options, NULL)) != -1) {
        switch (c) {
        case OPT_SCENARIOS: p.scenarios_path = optarg; break;
        case OPT_IDENTITIES: p.identities_path = optarg; break;
        case OPT_PHASE:
            if (!strcmp(optarg, "1")) p.phase = ARB_PERSONA_PHASE_1;
            else if (!strcmp(optarg, "2")) p.phase = ARB_PERSONA_PHASE_2;
            else if (!strcmp(optarg, "both")) p.phase = ARB_PERSONA_BOTH;
            else rc = cli_usage_error("persona", "--phase must be 1, 2 or both, got \"%s\"", optarg);
            break;
        case OPT_CATEGORY: rc = name_list_add(&cats, "--category", optarg); break;
        case OPT_METRICS:
            if (metrics.n) rc = cli_usage_error("persona", "--metrics given twice");
            else rc = name_list_add(&metrics, "--metrics", optarg);
            break;
        case OPT_RANGE:
            if (parse_range(optarg, &p.range_lo, &p.range_hi)) rc = EXIT_USAGE;
            break;
        case OPT_TEMPLATE_1: p.template_1 = optarg; break;
        case OPT_TEMPLATE_2: p.template_2 = optarg; break;
        case OPT_REPS:
            if (cli_parse_int("--reps", optarg, 1, 1000, &n)) rc = EXIT_USAGE;
            p.reps = (int)n;
            break;
        case OPT_JUDGES: judges_spec = optarg; break;
        case OPT_PANEL:
            if (panel.n) rc = cli_usage_error("persona", "--panel given twice");
            else rc = name_list_add(&panel, "--panel", optarg);
            break;
        case OPT_ROUNDS:
            if (cli_parse_int("--rounds", optarg, 0, 10, &n)) rc = EXIT_USAGE;
            p.rounds = (int)n;
            rounds_given = 1;
            break;
        case OPT_PANEL_TEMPLATE_1: p.panel_template_1 = optarg; break;
        case OPT_PANEL_TEMPLATE_2: p.panel_template_2 = optarg; break;
        case OPT_FULL_CHECK: p.full_check = 1; break;
        case OPT_HELP: print_help(stdout); goto out;
        default: {
            int t = cli_run_option(c, optarg, &p.client, &db, &p.dry_run, &p.progress);
            if (t < 0) rc = EXIT_USAGE;
            else if (!t)
                rc = cli_usage_error("persona", "unknown or incomplete option \"%s\"",
                                     argv[optind - 1]);
        }
        }
    }
    if (rc) goto out;
    if (optind < argc) {
        rc = cli_usage_error("persona", "unexpected argument \"%s\"", argv[optind]);
        goto out;
    }
    const char *missing = !p.scenarios_path ? "--scenarios" : !judges_spec ? "--judges"
                        : !db ? "--db" : NULL;
    if (missing) {
        rc = cli_usage_error("persona", "missing %s", missing);
        goto out;
    }
    if (!panel.n && (rounds_given || p.panel_template_1 || p.panel_template_2)) {
        rc = cli_usage_error("persona", "%s without --panel",
                             rounds_given ? "--rounds" : "--panel-template-*");
        goto out;
    }
    p.panel = (const char *const *)panel.names;
    p.n_panel = panel.n;
    p.categories = (const char *const *)cats.names;
    p.n_categories = cats.n;
    p.metrics = (const char *const *)metrics.names;
    p.n_metrics = metrics.n;

    arb_judges_file *loaded = NULL;
    arb_judge_config *list = NULL;
    arb_store *store = NULL;
    rc = cli_pick_judge_list("persona", "--judges", judges_spec, &list, &p.n_judges, &loaded);
    p.judges = list;
    if (!rc) {
        arb_status st = arb_store_open(db, &store);
        if (st) {
            fprintf(stderr, "arbiter persona: %s\n",
                    store ? arb_store_errmsg(store) : arb_strerror(st));
            rc = EXIT_FAIL;
        }
    }
    if (!rc) {
        cli_install_signal_handlers();
        arb_run_stats stats;
        arb_status st = arb_persona_run(store, &p, &stats);
        rc = cli_run_result("persona", store, st, &stats, p.dry_run);
        for (size_t j = 0; j < p.n_judges && (!st || st == ARB_INTERRUPTED); j++)
            if (p.judges[j].logprobs) {
                fprintf(stderr, "persona: no logprob figures for the scores of judge %s "
                                "(logprobs: true), only for phase 2's preference: %s\n",
                        p.judges[j].name ? p.judges[j].name : p.judges[j].model,
                        arb_persona_no_logprobs_reason);
                break;
            }
    }
    cli_close_run_store(store, rc, p.dry_run);
    arb_judges_file_destroy(loaded);
    free(list);
out:
    name_list_free(&cats);
    name_list_free(&metrics);
    name_list_free(&panel);
    return rc;
}

int cmd_persona(int argc, char **argv)
{
    if (argc < 2) {
        print_help(stderr);
        return EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        print_help(stdout);
        return EXIT_OK;
    }
    /* the subcommand becomes argv[0] of its own option parsing */
    if (!strcmp(sub, "run")) return persona_run(argc - 1, argv + 1);
    if (!strcmp(sub, "report")) return cmd_persona_report(argc - 1, argv + 1);
    return cli_usage_error("persona", "unknown subcommand \"%s\" (run or report)", sub);
}
