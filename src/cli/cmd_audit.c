/*
** cmd_audit.c -- `arbiter audit`: position bias, consistency, fairness and agreement with
** experts from the store (METHODS §3, §4, §5), as text tables or JSON.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char audit_help[] =
    "usage: arbiter audit --db FILE [--by judge|task|candidate|comparison] [--bootstrap N]\n"
    "                     [--seed N] [--level 0.95] [--json] [--output FILE]\n"
    "\n"
    "For every group of side-by-side judgments in the store: the shares of model verdicts\n"
    "a/b/c/d/e per run (METHODS §2.2); PBias@AB, Con@ABCD, PCon@AB, MPCC-Consistency (§3);\n"
    "repetition stability, position consistency, error rate, primacy/recency counts, preference\n"
    "fairness, win rate and quality gap with PC and PF per gap bin, lengths in code points and\n"
    "their relation to PC and PF (§5); and, when expert labels were imported ('arbiter labels\n"
    "import'), APCC, MPCC, MPCC-Δ, accuracy, Cohen's κ and the confusion matrix (§4).\n"
    "Undefined values print as n/a (null in JSON).\n"
    "\n"
    "  --db FILE        the database written by 'arbiter sbs'\n"
    "  --by KEYS        one row per: comparison (default: judge, candidate, baseline, template,\n"
    "                   option mode), judge, task (judge x item category), candidate (judge x\n"
    "                   candidate); several keys may be joined with commas, e.g. task,candidate\n"
    "  --bootstrap N    percentile intervals from N resamples of items (0 = none, default)\n"
    "  --seed N         bootstrap seed (default 20261123); the same seed gives the same intervals\n"
    "  --level X        interval level (default 0.95)\n"
    "  --json           the same numbers as JSON (keys documented in README)\n"
    "  --output FILE    write there instead of stdout\n";

/* Parses --by: a comma-separated list of judge, candidate, baseline, template, options, task,
** comparison. Returns the mask, or 0 after printing an error. */
static unsigned parse_by(const char *text)
{
    static const struct {
        const char *name;
        unsigned bits;
    } keys[] = {{"judge", ARB_BY_JUDGE},       {"candidate", ARB_BY_CANDIDATE},
                {"baseline", ARB_BY_BASELINE}, {"template", ARB_BY_TEMPLATE},
                {"options", ARB_BY_OPTIONS},   {"task", ARB_BY_TASK},
                {"comparison", ARB_BY_COMPARISON}};
    unsigned by = ARB_BY_JUDGE;
    const char *p = text;
    while (1) {
        size_t len = strcspn(p, ",");
        size_t i;
        for (i = 0; i < sizeof keys / sizeof *keys; i++)
            if (strlen(keys[i].name) == len && !strncmp(p, keys[i].name, len)) break;
        if (i == sizeof keys / sizeof *keys) {
            cli_usage_error("audit", "--by expects judge, task, candidate, baseline, template, "
                                     "options or comparison (comma-separated), got \"%s\"", text);
            return 0;
        }
        by |= keys[i].bits;
        if (!p[len]) break;
        p += len + 1;
    }
    return by;
}

int cmd_audit(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"by", required_argument, 0, 'b'},
                                         {"bootstrap", required_argument, 0, 'n'},
                                         {"seed", required_argument, 0, 's'},
                                         {"level", required_argument, 0, 'l'},
                                         {"json", no_argument, 0, 'j'},
                                         {"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db = NULL, *output = "-";
    arb_audit_params params = arb_audit_default_params();
    int json = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'b':
            if (!(params.by = parse_by(optarg))) return EXIT_USAGE;
            break;
        case 'j': json = 1; break;
        case 'o': output = optarg; break;
        case 'h': fputs(audit_help, stdout); return EXIT_OK;
        default: {
            int t = cli_interval_option(c, optarg, &params.bootstrap, &params.seed,
                                        &params.ci_level);
            if (t < 0) return EXIT_USAGE;
            if (t > 0) break;
            return cli_usage_error("audit", "unknown or incomplete option \"%s\"", argv[optind - 1]);
        }
        }
    }
    if (optind < argc) return cli_usage_error("audit", "unexpected argument \"%s\"", argv[optind]);
    if (!db) return cli_usage_error("audit", "missing --db");

    arb_store *store = NULL;
    arb_audit *audit = NULL;
    int rc = cli_open_existing_store("audit", db, &store);
    if (rc) return rc;
    arb_status st = arb_audit_compute(store, &params, &audit);
    if (st) {
        rc = cli_store_failure("audit", store, st);
    } else {
        if (!json && arb_audit_count(audit) == 0)
            fprintf(stderr, "arbiter audit: no side-by-side judgments in %s yet\n", db);
        rc = cli_emit("audit", output, json ? arb_audit_to_json(audit) : arb_audit_to_text(audit));
    }
    arb_audit_destroy(audit);
    arb_store_close(store);
    return rc;
}
