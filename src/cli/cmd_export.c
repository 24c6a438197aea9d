/*
** cmd_export.c -- `arbiter export`: the stored judgments as JSONL or CSV, the stored battles
** as arena-convention JSONL, or the dialogues' transcripts.
*/
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char export_help[] =
    "usage: arbiter export --db FILE [--format jsonl|csv|battles|transcripts] [--source NAME]\n"
    "                      [--output FILE]\n"
    "\n"
    "One row per pairwise judgment with its call: protocol, judge, item, candidate, baseline,\n"
    "template, options, order, rep, position and model verdicts, the judge's raw output,\n"
    "the error (if any), tokens, latency and attempts. Default format jsonl, to stdout.\n"
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
    "and the error (if any).\n";

int cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"format", required_argument, 0, 'f'},
                                         {"source", required_argument, 0, 's'},
                                         {"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db = NULL, *format = "jsonl", *output = NULL, *source = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'f': format = optarg; break;
        case 's': source = optarg; break;
        case 'o': output = optarg; break;
        case 'h': fputs(export_help, stdout); return EXIT_OK;
        default: return cli_usage_error("export", "unknown or incomplete option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_usage_error("export", "unexpected argument \"%s\"", argv[optind]);
    if (!db) return cli_usage_error("export", "missing --db");
    int battles = !strcmp(format, "battles");
    if (strcmp(format, "jsonl") && strcmp(format, "csv") && strcmp(format, "transcripts") &&
        !battles)
        return cli_usage_error("export",
                               "--format must be jsonl, csv, battles or transcripts, got \"%s\"",
                               format);
    if (source && !battles)
        return cli_usage_error("export", "--source goes with --format battles");

    arb_store *store = NULL;
    int rc = cli_open_existing_store("export", db, &store);
    if (rc) return rc;
    arb_status st;
    FILE *out = stdout;
    if (output && !(out = fopen(output, "w"))) {
        fprintf(stderr, "arbiter export: cannot write %s: %s\n", output, strerror(errno));
        arb_store_close(store);
        return EXIT_FAIL;
    }
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
    if (out != stdout && fclose(out)) {
        fprintf(stderr, "arbiter export: cannot write %s: %s\n", output, strerror(errno));
        st = ARB_IO;
    }
    arb_store_close(store);
    return st ? cli_exit_code(st) : EXIT_OK;
}
