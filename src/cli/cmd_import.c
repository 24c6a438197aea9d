/*
** cmd_import.c -- `arbiter import`: battles from existing judgment data (the PRD study's
** Vicuna80 reviews, Chatbot Arena dumps, FastChat MT-Bench pairwise judgments) into the
** database, for the rankings (METHODS §6).
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char import_help[] =
    "usage: arbiter import prd|arena|fastchat PATH --db FILE [--source NAME]\n"
    "\n"
    "Reads battle reviews (reviewer r compared model i, shown first, with j on question q:\n"
    "i better, tie or j better; METHODS §6) and stores them in the database under a source\n"
    "name. Importing the same source again replaces its battles. All or nothing: on a bad\n"
    "line nothing is stored and the message names file:line: field.\n"
    "\n"
    "  prd PATH        the PRD Vicuna80 folder: ratings-<reviewer>/answer_<X>-vs-answer_<Y>-\n"
    "                  <reviewer>-reviewer[_threeclass].jsonl, score 1 = X better, 2 = Y\n"
    "                  better, 3 = tie, -1 = unparseable (skipped); ratings-human/ gives\n"
    "                  reviewer \"human\", one battle per annotator line\n"
    "  arena PATH      Chatbot Arena battles: a JSON array or JSONL of {question_id, model_a,\n"
    "                  model_b, winner: model_a|model_b|tie|tie (bothbad), judge,\n"
    "                  conv_metadata (optional style counts)}\n"
    "  fastchat PATH   FastChat MT-Bench pairwise judgments (model_judgment/*_pair.jsonl):\n"
    "                  two battles per line, game 1 model_1 shown first, game 2 model_2\n"
    "                  first; verdict \"error\" is skipped; turn 2 becomes question \"<id>#2\"\n"
    "\n"
    "  --db FILE       the database (created when missing)\n"
    "  --source NAME   the name the battles are stored under (default KIND:BASENAME, e.g.\n"
    "                  prd:prd-vicuna80)\n"
    "\n"
    "'arbiter export --db FILE --format battles' writes the stored battles back as JSONL.\n"
    "exit codes: 0 ok, 1 failure, 2 usage or bad input\n";

/* The last component of path, without trailing slashes ("a/b/" -> "b"); caller frees. */
static char *base_name(const char *path)
{
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/') start--;
    char *name = malloc(end - start + 1);
    if (!name) return NULL;
    memcpy(name, path + start, end - start);
    name[end - start] = '\0';
    return name;
}

int cmd_import(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"source", required_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db = NULL, *source = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 's': source = optarg; break;
        case 'h': fputs(import_help, stdout); return EXIT_OK;
        default:
            return cli_usage_error("import", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error("import", "missing the kind: prd, arena or fastchat");
    const char *kind = argv[optind];
    if (strcmp(kind, "prd") && strcmp(kind, "arena") && strcmp(kind, "fastchat"))
        return cli_usage_error("import", "unknown kind \"%s\": expected prd, arena or fastchat",
                               kind);
    if (optind + 1 >= argc) return cli_usage_error("import", "missing the PATH to import");
    const char *path = argv[optind + 1];
    if (optind + 2 < argc)
        return cli_usage_error("import", "unexpected argument \"%s\"", argv[optind + 2]);
    if (!db) return cli_usage_error("import", "missing --db");
    if (source && !*source) return cli_usage_error("import", "--source must not be empty");

    char *default_source = NULL;
    if (!source) {
        char *base = base_name(path);
        size_t size = strlen(kind) + 1 + (base ? strlen(base) : 0) + 1;
        default_source = base ? malloc(size) : NULL;
        if (default_source) snprintf(default_source, size, "%s:%s", kind, base);
        free(base);
        if (!default_source) {
            fputs("arbiter import: out of memory\n", stderr);
            return EXIT_FAIL;
        }
        source = default_source;
    }

    int rc = EXIT_OK;
    arb_store *store = NULL;
    arb_battles *battles = arb_battles_create();
    arb_status st = battles ? arb_battles_import(battles, kind, path) : ARB_NOMEM;
    if (st) {
        fprintf(stderr, "arbiter import: %s\n",
                battles ? arb_battles_errmsg(battles) : "out of memory");
        fputs("arbiter import: nothing was stored\n", stderr);
        rc = cli_exit_code(st);
        goto done;
    }
    if ((st = arb_store_open(db, &store))) {
        fprintf(stderr, "arbiter import: %s\n", store ? arb_store_errmsg(store) : arb_strerror(st));
        rc = cli_exit_code(st) == EXIT_OK ? EXIT_FAIL : cli_exit_code(st);
        goto done;
    }
    if ((st = arb_store_put_battles(store, source, battles))) {
        rc = cli_store_failure("import", store, st);
        goto done;
    }
    fprintf(stderr, "imported %zu battles from %s as source %s (%zu skipped)\n",
            arb_battles_count(battles), path, source, arb_battles_skipped(battles));
done:
    cli_close_store(store, rc);
    arb_battles_destroy(battles);
    free(default_source);
    return rc;
}
