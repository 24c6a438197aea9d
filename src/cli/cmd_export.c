/*
** cmd_export.c -- `arbiter export`: the stored judgments as JSONL or CSV.
*/
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char export_help[] =
    "usage: arbiter export --db FILE [--format jsonl|csv] [--output FILE]\n"
    "\n"
    "One row per pairwise judgment with its call: protocol, judge, item, candidate, baseline,\n"
    "template, options, order, rep, position and model verdicts, the judge's raw output,\n"
    "the error (if any), tokens, latency and attempts. Default format jsonl, to stdout.\n";

int cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"format", required_argument, 0, 'f'},
                                         {"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db = NULL, *format = "jsonl", *output = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'f': format = optarg; break;
        case 'o': output = optarg; break;
        case 'h': fputs(export_help, stdout); return EXIT_OK;
        default: return cli_usage_error("export", "unknown or incomplete option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_usage_error("export", "unexpected argument \"%s\"", argv[optind]);
    if (!db) return cli_usage_error("export", "missing --db");
    if (strcmp(format, "jsonl") && strcmp(format, "csv"))
        return cli_usage_error("export", "--format must be jsonl or csv, got \"%s\"", format);

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
    st = arb_store_export(store, format, out);
    if (st) fprintf(stderr, "arbiter export: %s\n", arb_store_errmsg(store));
    if (out != stdout && fclose(out)) {
        fprintf(stderr, "arbiter export: cannot write %s: %s\n", output, strerror(errno));
        st = ARB_IO;
    }
    arb_store_close(store);
    return st ? cli_exit_code(st) : EXIT_OK;
}
