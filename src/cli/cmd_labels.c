/*
** cmd_labels.c -- `arbiter labels`: import human (expert) labels (METHODS §4) and summarise
** them: annotators, majority labels and inter-annotator agreement per benchmark split.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char labels_help[] =
    "usage: arbiter labels import --db FILE [--format jsonl|csv|fastchat-human] FILE...\n"
    "       arbiter labels summary --db FILE [--split N] [--json] [--output FILE]\n"
    "\n"
    "Human (expert) labels of candidate vs baseline (METHODS §4).\n"
    "\n"
    "  import    reads label files (JSONL, or CSV with a header row) into the database.\n"
    "            Fields: item, candidate, baseline, verdict (model verdict: a = candidate\n"
    "            better, b = baseline better, c = both good, d = both bad; lowercase only),\n"
    "            annotator; optional shown_order (0 = candidate shown first, 1 = baseline\n"
    "            first) and time_ms. Every item must already be in the database (arbiter sbs\n"
    "            stores the items). Each file is imported all or nothing; importing a label\n"
    "            again (same item, candidate, baseline, annotator) updates it. Files are\n"
    "            imported in the order given and the first bad file stops the import: the\n"
    "            files before it stay imported, it and the files after it are not.\n"
    "            --format fastchat-human reads MT-Bench human judgments (JSONL of\n"
    "            question_id, model_a, model_b, winner model_a|model_b|tie, judge = the\n"
    "            annotator, turn): item <question_id> (turn 2: <question_id>#2), the\n"
    "            candidate/baseline way round the stored judgments of that pair take it\n"
    "            (never judged: model_b is the baseline), tie = c (no both-bad there),\n"
    "            model_a shown first. Import the FastChat judgments first.\n"
    "  summary   per (candidate, baseline): items, labels, annotators, majority labels,\n"
    "            annotator ties (no majority), and per benchmark split of N items (by\n"
    "            position in the dataset) for each annotator pair with >= 2 common items\n"
    "            the Pearson correlation of their a/b/c/d verdict counts and Cohen's kappa,\n"
    "            and Fleiss' kappa over the items with the most common number of\n"
    "            annotators.\n"
    "\n"
    "  --db FILE        the database written by 'arbiter sbs'\n"
    "  --format F       jsonl, csv or fastchat-human (default: from the file name:\n"
    "                   .jsonl/.json, .csv)\n"
    "  --split N        items per benchmark split (default 600)\n"
    "  --json           the summary as JSON (keys documented in README)\n"
    "  --output FILE    write the summary there instead of stdout\n"
    "\n"
    "exit codes: 0 ok, 1 failure, 2 usage or bad input (the message names file:line: field)\n";

static int labels_import(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"format", required_argument, 0, 'f'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db = NULL, *format = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'f': format = optarg; break;
        case 'h': fputs(labels_help, stdout); return EXIT_OK;
        default:
            return cli_usage_error("labels", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
    }
    if (!db) return cli_usage_error("labels", "missing --db");
    if (optind >= argc) return cli_usage_error("labels", "import: no label file given");
    if (format && strcmp(format, "jsonl") && strcmp(format, "csv") &&
        strcmp(format, "fastchat-human"))
        return cli_usage_error("labels", "--format expects jsonl, csv or fastchat-human, got "
                               "\"%s\"", format);

    /* labels refer to items, which only a database that has judged them holds */
    arb_store *store = NULL;
    int rc = cli_open_existing_store("labels", db, &store);
    if (rc) return rc;
    arb_status st;
    for (int i = optind; i < argc; i++) {
        arb_labels_import_stats stats;
        st = arb_labels_import(store, argv[i], format, &stats);
        if (st) {
            fprintf(stderr, "arbiter labels: %s\n", arb_store_errmsg(store));
            if (i > optind)
                fprintf(stderr, "arbiter labels: nothing of %s was imported; the %d file(s) "
                                "before it were\n", argv[i], i - optind);
            else
                fprintf(stderr, "arbiter labels: nothing of %s was imported\n", argv[i]);
            rc = cli_exit_code(st);
            if (st == ARB_TOOBIG) rc = EXIT_USAGE;
            break;
        }
        fprintf(stderr, "imported %zu labels from %s: %zu new, %zu updated, %zu unchanged\n",
                stats.rows, argv[i], stats.inserted, stats.updated, stats.unchanged);
    }
    arb_store_close(store);
    return rc;
}

static int summary_option(int c, const char *arg, void *ctx)
{
    long *split = ctx;
    if (c != 's') return 0;
    return cli_parse_int("--split", arg, 1, 1000000000L, split) ? -1 : 1;
}

static int labels_summary(int argc, char **argv)
{
    static const struct option own[] = {{"split", required_argument, 0, 's'}, {0, 0, 0, 0}};
    long split = 0; /* 0: the library's default, 600 */
    cli_read_args args = {.flags = CLI_READ_JSON | CLI_READ_OUTPUT, .output = "-"};
    int rc = cli_read_options("labels", labels_help, argc, argv, own, summary_option, &split,
                              &args);
    if (rc != CLI_GO_ON) return rc;

    arb_store *store = NULL;
    arb_labels_report *report = NULL;
    if ((rc = cli_open_existing_store("labels", args.db, &store))) return rc;
    arb_status st = arb_labels_report_compute(store, (size_t)split, &report);
    if (st) rc = cli_store_failure("labels", store, st);
    else rc = cli_emit("labels", args.output, args.json ? arb_labels_report_to_json(report)
                                              : arb_labels_report_to_text(report));
    arb_labels_report_destroy(report);
    arb_store_close(store);
    return rc;
}

int cmd_labels(int argc, char **argv)
{
    if (argc < 2) {
        fputs(labels_help, stderr);
        return EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        fputs(labels_help, stdout);
        return EXIT_OK;
    }
    /* the subcommand becomes argv[0] of its own option parsing */
    if (!strcmp(sub, "import")) return labels_import(argc - 1, argv + 1);
    if (!strcmp(sub, "summary")) return labels_summary(argc - 1, argv + 1);
    return cli_usage_error("labels", "unknown subcommand \"%s\" (import or summary)", sub);
}
