/*
** cmd_batch.c -- `arbiter batch export|ingest`: the calls queued by a judging command run with
** --batch export, written as OpenAI batch input files, and the output files of a provider's
** Batch API or vLLM's run-batch stored back as the calls' replies.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char batch_help[] =
    "usage: arbiter batch export --db FILE --out FILE [--max-lines N] [--max-bytes N]\n"
    "       arbiter batch ingest --db FILE RESULTS.jsonl [RESULTS.jsonl ...]\n"
    "\n"
    "A judging command run with --batch export (sbs, tournament, debate, discuss, grade,\n"
    "persona) sends nothing: it judges the calls already stored and queues the missing calls\n"
    "that can go now in the store; calls that need another call's reply (later debate and\n"
    "discussion turns) wait for a later round.\n"
    "\n"
    "export  writes every queued call that has no reply stored yet (failed replies included)\n"
    "        as OpenAI batch input, one line per call:\n"
    "          {\"custom_id\": KEY, \"method\": \"POST\", \"url\": \"/v1/chat/completions\",\n"
    "           \"body\": REQUEST}\n"
    "        KEY is the call key, REQUEST the body a run would send. Files split at\n"
    "        --max-lines (default 50000) and --max-bytes (default 200000000), OpenAI's limits:\n"
    "        FILE, then FILE.2.jsonl, FILE.3.jsonl ... (\".N\" before the extension).\n"
    "ingest  stores each output line ({\"id\", \"custom_id\", \"response\": {\"status_code\",\n"
    "        \"request_id\", \"body\"}, \"error\"}: OpenAI's Batch API and vLLM run-batch) as the\n"
    "        reply of its call, exactly as a reply that came back by HTTP: status 200 with a\n"
    "        usable body is a successful call, an error or another status a failed one (sent or\n"
    "        queued again next run). A file with a bad line stores nothing (file:line: field\n"
    "        errors, exit 2); ingesting a file again changes nothing.\n"
    "\n"
    "Then run the judging command again (with --batch export for the next round): it judges\n"
    "the stored replies like any stored call and queues the calls that were waiting.\n"
    "\n"
    "The OpenAI HTTP Batch API does the same rounds on a judging command: --batch submit\n"
    "(upload the queued calls, create batches, stored in the database), --batch status,\n"
    "--batch collect (store the ended batches' replies and judge them; it says how many calls\n"
    "are still to come, which another --batch submit sends), --batch wait [--poll S] (every\n"
    "round until the run is complete: wait for the open batches, collect and judge them,\n"
    "submit the calls that became ready, such as later debate and discussion turns, again).\n"
    "An expired batch's partial output is kept; its other calls go in the next submit.\n"
    "\n"
    "Cost: replies that came back through a batch are costed at the judge's price less its\n"
    "price.batch_discount (judges file) or --price-batch-discount (0.5: half price, OpenAI's\n"
    "Batch API); without one, at the listed price.\n"
    "\n"
    "exit codes: 0 ok, 1 failure, 2 usage or bad input\n";

typedef struct export_choice {
    arb_batch_export_params p;
} export_choice;

static int export_option(int c, const char *arg, void *ctx)
{
    export_choice *x = ctx;
    long n;
    switch (c) {
    case 'O': x->p.path = arg; return 1;
    case 'L':
        if (cli_parse_int("--max-lines", arg, 1, 50000000L, &n)) return -1;
        x->p.max_lines = (size_t)n;
        return 1;
    case 'B':
        if (cli_parse_int("--max-bytes", arg, 1024, 2000000000L, &n)) return -1;
        x->p.max_bytes = (size_t)n;
        return 1;
    default: return 0;
    }
}

static int batch_export(int argc, char **argv)
{
    static const struct option own[] = {{"out", required_argument, 0, 'O'},
                                        {"max-lines", required_argument, 0, 'L'},
                                        {"max-bytes", required_argument, 0, 'B'},
                                        {0, 0, 0, 0}};
    export_choice x = {.p = arb_batch_export_default_params()};
    cli_read_args args = {0};
    int rc = cli_read_options("batch export", batch_help, argc, argv, own, export_option, &x,
                              &args);
    if (rc != CLI_GO_ON) return rc;
    if (!x.p.path) return cli_usage_error("batch export", "missing --out");
    arb_store *store = NULL;
    if ((rc = cli_open_existing_store("batch export", args.db, &store))) return rc;
    arb_batch_export_stats stats;
    arb_status st = arb_batch_export(store, &x.p, &stats);
    if (st) {
        rc = cli_store_failure("batch export", store, st);
    } else {
        fprintf(stderr, "batch export: %zu pending calls written in %zu file%s (%zu bytes):",
                stats.calls, stats.files, stats.files == 1 ? "" : "s", stats.bytes);
        for (size_t k = 1; k <= stats.files; k++) {
            char *name = arb_batch_part_path(x.p.path, k);
            fprintf(stderr, " %s", name ? name : "?");
            arb_free(name);
        }
        fputc('\n', stderr);
    }
    arb_store_close(store);
    return rc;
}

static int batch_ingest(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'd') db = optarg;
        else if (c == 'h') return fputs(batch_help, stdout), EXIT_OK;
        else return cli_usage_error("batch ingest", "unknown or incomplete option \"%s\"",
                                    argv[optind - 1]);
    }
    if (!db) return cli_usage_error("batch ingest", "missing --db");
    if (optind >= argc) return cli_usage_error("batch ingest", "missing the results file");
    arb_store *store = NULL;
    int rc = cli_open_existing_store("batch ingest", db, &store);
    if (rc) return rc;
    for (int i = optind; i < argc && !rc; i++) {
        arb_batch_ingest_stats stats;
        arb_status st = arb_batch_ingest(store, argv[i], &stats);
        if (st) {
            rc = cli_store_failure("batch ingest", store, st);
            break;
        }
        fprintf(stderr,
                "batch ingest: %s: %zu lines: %zu replies stored, %zu failed calls stored "
                "(sent or queued again next run), %zu stored before\n",
                argv[i], stats.lines, stats.ok, stats.failed, stats.already);
    }
    if (!rc)
        fprintf(stderr, "batch ingest: run the judging command again to judge the stored "
                        "replies (with --batch export for the next round)\n");
    arb_store_close(store);
    return rc;
}

int cmd_batch(int argc, char **argv)
{
    if (argc < 2) {
        fputs(batch_help, stderr);
        return EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help"))
        return fputs(batch_help, stdout), EXIT_OK;
    if (!strcmp(sub, "export")) return batch_export(argc - 1, argv + 1);
    if (!strcmp(sub, "ingest")) return batch_ingest(argc - 1, argv + 1);
    return cli_usage_error("batch", "unknown subcommand \"%s\" (export or ingest)", sub);
}
