/*
** cmd_import.c -- `arbiter import`: judgments made elsewhere into the database. Two families
** of kinds: judgment sources (arb_judgments_import: stored as judgments, so audit, agreement,
** factors and report read them, and as battles for the rankings) and battle sources
** (arb_battles_import: battles only, for the rankings; METHODS §6).
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char import_help[] =
    "usage: arbiter import judgments|prd|arena|fastchat PATH --db FILE [--source NAME]\n"
    "\n"
    "Reads judgments made elsewhere and stores them in the database under a source name.\n"
    "Importing the same source again replaces everything it brought. All or nothing: on a\n"
    "bad line nothing is stored and the message names file:line: field.\n"
    "\n"
    "  judgments PATH  arbiter's generic judgment file, JSONL (one judgment per line) or CSV\n"
    "                  (.csv, with a header row): judge, item, candidate, baseline, order (0:\n"
    "                  candidate shown first, 1: baseline first) and verdict (A B C D E, in\n"
    "                  positions) or winner (candidate, baseline, tie, both_bad, invalid);\n"
    "                  optional rep, options, category, language, question, candidate_answer,\n"
    "                  baseline_answer, raw, request, protocol, template, strength, and\n"
    "                  judge/candidate/baseline_family (README). Stored as judgments (audit,\n"
    "                  agreement, factors, report read them) and as battles (rank). A\n"
    "                  judgment another source or arbiter itself already holds is refused.\n"
    "                  'arbiter export --format jsonl|csv' output imports as is.\n"
    "\n"
    "Battle sources (reviewer r compared model i, shown first, with j on question q: i\n"
    "better, tie or j better; METHODS §6), stored as battles for the rankings:\n"
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
    "  --source NAME   the name they are stored under (default KIND:BASENAME, e.g.\n"
    "                  prd:prd-vicuna80, judgments:gpt4.jsonl)\n"
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

/* The kinds `arbiter import` reads: judgments (arb_judgments_import) or battles only
** (arb_battles_import). */
static const struct import_kind {
    const char *name;
    int judgments;
} import_kinds[] = {
    {"judgments", 1},
    {"prd", 0},
    {"arena", 0},
    {"fastchat", 0},
};

/* Battles only (arb_battles_import), for the rankings. Returns the exit code. */
static int import_battles(const char *kind, const char *path, const char *db, const char *source)
{
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
    return rc;
}

/* Judgments (arb_judgments_import), which also give battles. Returns the exit code. */
static int import_judgments(const char *kind, const char *path, const char *db,
                            const char *source)
{
    arb_store *store = NULL;
    arb_status st = arb_store_open(db, &store);
    if (st) {
        fprintf(stderr, "arbiter import: %s\n", store ? arb_store_errmsg(store) : arb_strerror(st));
        int rc = cli_exit_code(st) == EXIT_OK ? EXIT_FAIL : cli_exit_code(st);
        cli_close_store(store, rc);
        return rc;
    }
    arb_import_params params = {.source = source};
    arb_import_stats stats;
    st = arb_judgments_import(store, kind, path, &params, &stats);
    int rc = EXIT_OK;
    if (st) {
        rc = cli_store_failure("import", store, st);
        fputs("arbiter import: nothing was stored\n", stderr);
    } else {
        fprintf(stderr, "imported %zu judgments and %zu grades from %s as source %s: %zu battles "
                "for the rankings, %zu items added, %zu skipped\n", stats.judgments,
                stats.scores, path, source, stats.battles, stats.items_added, stats.skipped);
    }
    cli_close_store(store, rc);
    return rc;
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
        return cli_usage_error("import", "missing the kind: judgments, prd, arena or fastchat");
    const char *kind = argv[optind];
    const struct import_kind *k = NULL;
    for (size_t i = 0; i < sizeof import_kinds / sizeof *import_kinds && !k; i++)
        if (!strcmp(import_kinds[i].name, kind)) k = &import_kinds[i];
    if (!k)
        return cli_usage_error("import", "unknown kind \"%s\": expected judgments, prd, arena "
                               "or fastchat", kind);
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

    int rc = k->judgments ? import_judgments(kind, path, db, source)
                          : import_battles(kind, path, db, source);
    free(default_source);
    return rc;
}
