/*
** cmd_audit.c -- `arbiter audit`: verdict shares and position-bias metrics from the store.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char audit_help[] =
    "usage: arbiter audit --db FILE [--json] [--output FILE]\n"
    "\n"
    "For every judge x (candidate, baseline) x template x option mode in the store: the shares\n"
    "of model verdicts a/b/c/d/e per run and averaged (METHODS §2.2), PBias@AB, Con@ABCD,\n"
    "PCon@AB (§3) and the error rate (§5). Undefined values print as n/a (null in JSON).\n"
    "\n"
    "  --db FILE       the database written by 'arbiter sbs'\n"
    "  --json          the same numbers as JSON (keys documented in README)\n"
    "  --output FILE   write there instead of stdout\n";

int cmd_audit(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"json", no_argument, 0, 'j'},
                                         {"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db = NULL, *output = "-";
    int json = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'j': json = 1; break;
        case 'o': output = optarg; break;
        case 'h': fputs(audit_help, stdout); return EXIT_OK;
        default: return cli_usage_error("audit", "unknown or incomplete option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_usage_error("audit", "unexpected argument \"%s\"", argv[optind]);
    if (!db) return cli_usage_error("audit", "missing --db");

    int rc = EXIT_FAIL;
    arb_store *store = NULL;
    arb_audit *audit = NULL;
    char *text = NULL;
    arb_status st = arb_store_open(db, &store);
    if (st) {
        fprintf(stderr, "arbiter audit: %s\n", store ? arb_store_errmsg(store) : arb_strerror(st));
        goto done;
    }
    if ((st = arb_audit_compute(store, &audit))) {
        fprintf(stderr, "arbiter audit: %s\n", arb_store_errmsg(store));
        goto done;
    }
    text = json ? arb_audit_to_json(audit) : arb_audit_to_text(audit);
    if (!text) {
        fprintf(stderr, "arbiter audit: out of memory\n");
        goto done;
    }
    if (!json && arb_audit_count(audit) == 0)
        fprintf(stderr, "arbiter audit: no side-by-side judgments in %s yet\n", db);
    rc = cli_write_file("audit", output, text) ? EXIT_FAIL : EXIT_OK;
done:
    arb_free(text);
    arb_audit_destroy(audit);
    arb_store_close(store);
    return rc;
}
