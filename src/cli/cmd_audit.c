/*
** cmd_audit.c -- `arbiter audit`: position bias, consistency, fairness and agreement with
** experts from the store (METHODS §3, §4, §5), as text tables or JSON. It audits the
** side-by-side runs, the debates' verdicts and the tournament's judgments unless --protocol
** narrows them.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char audit_help[] =
    "usage: arbiter audit --db FILE [--by judge|task|candidate|comparison] [--bootstrap N]\n"
    "                     [--seed N] [--level 0.95] [--protocol sbs,tournament] [--json]\n"
    "                     [--output FILE]\n"
    "\n"
    "For every group of side-by-side judgments in the store: the shares of model verdicts\n"
    "a/b/c/d/e per run (METHODS §2.2); PBias@AB, Con@ABCD, PCon@AB, MPCC-Consistency (§3);\n"
    "repetition stability, position consistency, error rate, primacy/recency counts, preference\n"
    "fairness (pooled, and mean ± sd over (comparison, task) units), win rate and quality gap\n"
    "with PC and PF per gap bin, lengths in code points and their relation to PC and PF (§5);\n"
    "and, when expert labels were imported ('arbiter labels import'), APCC, MPCC, MPCC-Δ,\n"
    "accuracy (per run and Accuracy-Δ), Cohen's κ and the confusion matrix (§4).\n"
    "Tournament judgments are audited too: a model pair X vs Y is a comparison whose candidate\n"
    "is the model first by name, shown first in run 0 (as 'arbiter tournament' stores it).\n"
    "Undefined values print as n/a (null in JSON).\n"
    "\n"
    "  --db FILE        the database written by 'arbiter sbs', 'debate' or 'tournament'\n"
    "  --by KEYS        one row per: comparison (default: judge, candidate, baseline, template,\n"
    "                   option mode), judge, task (judge x item category), candidate (judge x\n"
    "                   candidate); several keys may be joined with commas, e.g. task,candidate\n"
    "  --bootstrap N    percentile intervals from N resamples of items (0 = none, default)\n"
    "  --seed N         bootstrap seed (default 20261123); the same seed gives the same intervals\n"
    "  --level X        interval level (default 0.95)\n"
    "  --protocol LIST  which judgments: sbs (side-by-side runs and debates), tournament, or\n"
    "                   both (default: sbs,tournament)\n"
    "  --json           the same numbers as JSON (keys documented in README)\n"
    "  --output FILE    write there instead of stdout\n";

typedef struct name_bits {
    const char *name;
    unsigned bits;
} name_bits;

/* Parses a comma-separated list of the names in keys[0..n) into the union of their bits,
** starting from `bits`. Returns the mask, or 0 after printing an error that names the option
** and `expected`. */
static unsigned parse_names(const char *text, const name_bits *keys, size_t n, unsigned bits,
                            const char *option, const char *expected)
{
    const char *p = text;
    while (1) {
        size_t len = strcspn(p, ",");
        size_t i;
        for (i = 0; i < n; i++)
            if (strlen(keys[i].name) == len && !strncmp(p, keys[i].name, len)) break;
        if (i == n) {
            cli_usage_error("audit", "%s expects %s, got \"%s\"", option, expected, text);
            return 0;
        }
        bits |= keys[i].bits;
        if (!p[len]) break;
        p += len + 1;
    }
    return bits;
}

/* --by: judge, candidate, baseline, template, options, task, comparison (judge always). */
static unsigned parse_by(const char *text)
{
    static const name_bits keys[] = {{"judge", ARB_BY_JUDGE},       {"candidate", ARB_BY_CANDIDATE},
                                     {"baseline", ARB_BY_BASELINE}, {"template", ARB_BY_TEMPLATE},
                                     {"options", ARB_BY_OPTIONS},   {"task", ARB_BY_TASK},
                                     {"comparison", ARB_BY_COMPARISON}};
    return parse_names(text, keys, sizeof keys / sizeof *keys, ARB_BY_JUDGE, "--by",
                       "judge, task, candidate, baseline, template, options or comparison "
                       "(comma-separated)");
}

/* --protocol: sbs, tournament. */
static unsigned parse_protocols(const char *text)
{
    static const name_bits keys[] = {{"sbs", ARB_AUDIT_SBS}, {"tournament", ARB_AUDIT_TOURNAMENT}};
    return parse_names(text, keys, sizeof keys / sizeof *keys, 0, "--protocol",
                       "sbs, tournament or sbs,tournament");
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
                                         {"protocol", required_argument, 0, 'p'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db = NULL, *output = "-";
    arb_audit_params params = arb_audit_default_params();
    params.protocols = ARB_AUDIT_SBS | ARB_AUDIT_TOURNAMENT;
    int json = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'b':
            if (!(params.by = parse_by(optarg))) return EXIT_USAGE;
            break;
        case 'p':
            if (!(params.protocols = parse_protocols(optarg))) return EXIT_USAGE;
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
            fprintf(stderr, "arbiter audit: no side-by-side or tournament judgments in %s yet\n", db);
        rc = cli_emit("audit", output, json ? arb_audit_to_json(audit) : arb_audit_to_text(audit));
    }
    arb_audit_destroy(audit);
    arb_store_close(store);
    return rc;
}
