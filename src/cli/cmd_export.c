/*
** cmd_export.c -- `arbiter export`: the stored judgments as JSONL or CSV, the stored battles
** as arena-convention JSONL, the dialogues' transcripts, or the pointwise judgments.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char export_help[] =
    "usage: arbiter export --db FILE [--format jsonl|csv|battles|transcripts|pointwise]\n"
    "                      [--source NAME]\n"
    "                      [--output FILE]\n"
    "\n"
    "One row per pairwise judgment with its call: protocol, judge, item, candidate, baseline,\n"
    "template, options, order, rep, position and model verdicts, the judge's raw output,\n"
    "the error (if any), tokens, latency and attempts, then the request as sent, the question,\n"
    "both answers, category, language, the import source (null: judged by arbiter) and the\n"
    "strength of a win (weak, strong). Default format jsonl, to stdout. The file reads back\n"
    "with 'arbiter import judgments'.\n"
    "\n"
    "--format battles writes the stored battles instead (arbiter import, tournaments), one\n"
    "JSON object per line in the arena convention: question_id, model_a (shown first),\n"
    "model_b, judge, winner (model_a|model_b|tie|tie (bothbad)) and the known style counts\n"
    "(length_a, length_b, headers_a, ...); ordered by source, then as imported. --source NAME\n"
    "keeps one source only. The file reads back with 'arbiter import arena'.\n"
    "\n"
    "--format transcripts writes every debate and discussion (METHODS 2.5, 7) as one JSON line:\n"
    "dialogue, kind, item, answer1, answer2, participants, config, rep, status, final_verdict and\n"
    "turns, each with turn, speaker, role, verdict, call_id, model, the messages sent, the reply\n"
    "and the error (if any).\n"
    "\n"
    "--format pointwise writes every pointwise judgment (arbiter grade, METHODS 8) as one JSON\n"
    "line: judge, item, model (\"reference\" for --answer-from reference), language, group,\n"
    "kind (yesno|grade), task, template, rep, value (yes/no: 1 correct, 0 incorrect; grade:\n"
    "1-5; null for E), reason (why E), content (the judge's reply), error, prompt_tokens,\n"
    "completion_tokens, latency_ms, attempts.\n";

/* The format and battle source of an export. */
typedef struct export_choice {
    const char *format, *source;
} export_choice;

static int export_option(int c, const char *arg, void *ctx)
{
    export_choice *x = ctx;
    switch (c) {
    case 'f': x->format = arg; return 1;
    case 'S': x->source = arg; return 1;
    default: return 0;
    }
}

int cmd_export(int argc, char **argv)
{
    static const struct option own[] = {{"format", required_argument, 0, 'f'},
                                        {"source", required_argument, 0, 'S'},
                                        {0, 0, 0, 0}};
    export_choice x = {.format = "jsonl"};
    cli_read_args args = {.flags = CLI_READ_OUTPUT};
    int rc = cli_read_options("export", export_help, argc, argv, own, export_option, &x, &args);
    if (rc != CLI_GO_ON) return rc;
    const char *format = x.format, *source = x.source, *output = args.output;
    int battles = !strcmp(format, "battles");
    if (strcmp(format, "jsonl") && strcmp(format, "csv") && strcmp(format, "transcripts") &&
        strcmp(format, "pointwise") && !battles)
        return cli_usage_error("export",
                               "--format must be jsonl, csv, battles, transcripts or pointwise, "
                               "got \"%s\"",
                               format);
    if (source && !battles)
        return cli_usage_error("export", "--source goes with --format battles");

    arb_store *store = NULL;
    if ((rc = cli_open_existing_store("export", args.db, &store))) return rc;
    arb_status st;
    /* Written to FILE.tmp and renamed once whole: an export that fails half-way (a damaged
    ** stored row is found after lines were written) leaves FILE as it was. */
    cli_output output_file;
    if ((rc = cli_output_open("export", output, &output_file))) {
        arb_store_close(store);
        return rc;
    }
    FILE *out = output_file.f;
    if (battles) {
        arb_battles *set = arb_battles_create();
        if (!set) {
            st = ARB_NOMEM;
            fputs("arbiter export: out of memory\n", stderr);
        } else if ((st = arb_store_get_battles(store, source, set))) {
            fprintf(stderr, "arbiter export: %s\n", arb_store_errmsg(store));
        } else if ((st = arb_battles_write_jsonl(set, out))) {
            fprintf(stderr, "arbiter export: %s\n", arb_battles_errmsg(set));
        }
        arb_battles_destroy(set);
    } else {
        st = arb_store_export(store, format, out);
        if (st) fprintf(stderr, "arbiter export: %s\n", arb_store_errmsg(store));
    }
    rc = cli_output_close("export", &output_file, st ? cli_exit_code(st) : EXIT_OK);
    arb_store_close(store);
    return rc;
}
