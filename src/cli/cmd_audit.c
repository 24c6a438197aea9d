/*
** cmd_audit.c -- `arbiter audit`: position bias, consistency, fairness and agreement with
** experts from the store (METHODS §3, §4, §5), as text tables or JSON. It audits the
** side-by-side runs, the debates' verdicts and the tournament's judgments unless --protocol
** narrows them.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char audit_help[] =
    "usage: arbiter audit --db FILE [--by judge|task|language|candidate|comparison]\n"
    "                     [--ensemble J1,J2,J3] [--bootstrap N] [--seed N] [--level 0.95]\n"
    "                     [--protocol sbs,tournament] [--json] [--output FILE]\n"
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
    "                   option mode), judge, task (judge x item category), language (judge x\n"
    "                   item language; items without one are a group labelled (none)),\n"
    "                   candidate (judge x candidate); several keys may be joined with\n"
    "                   commas, e.g. task,candidate or judge,language\n"
    "  --ensemble LIST  also audit the majority vote of these judges (J1,J2[,...], in priority\n"
    "                   order) as judge \"ensemble(J1,J2,...)\": per instance every member judged\n"
    "                   (item, comparison, order, repetition), the position verdict most members\n"
    "                   gave, E not counted; a tie goes to the judge named first; E only when\n"
    "                   every member said E; instances a member lacks are left out\n"
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
                                     {"language", ARB_BY_LANGUAGE},
                                     {"comparison", ARB_BY_COMPARISON}};
    return parse_names(text, keys, sizeof keys / sizeof *keys, ARB_BY_JUDGE, "--by",
                       "judge, task, candidate, baseline, template, options, language or "
                       "comparison (comma-separated)");
}

/* --protocol: sbs, tournament. */
static unsigned parse_protocols(const char *text)
{
    static const name_bits keys[] = {{"sbs", ARB_AUDIT_SBS}, {"tournament", ARB_AUDIT_TOURNAMENT}};
    return parse_names(text, keys, sizeof keys / sizeof *keys, 0, "--protocol",
                       "sbs, tournament or sbs,tournament");
}

typedef struct audit_opts {
    arb_audit_params params;
    const char **ensemble; /* points into argv */
} audit_opts;

static int audit_option(int c, const char *arg, void *ctx)
{
    audit_opts *o = ctx;
    switch (c) {
    case 'b': return (o->params.by = parse_by(arg)) ? 1 : -1;
    case 'p': return (o->params.protocols = parse_protocols(arg)) ? 1 : -1;
    case 'e': {
        free(o->ensemble);
        o->ensemble = NULL;
        long n = cli_parse_ensemble("audit", "--ensemble", (char *)arg, &o->ensemble);
        if (n < 0) return -1;
        o->params.ensemble = o->ensemble;
        o->params.n_ensemble = (size_t)n;
        return 1;
    }
    default: return 0;
    }
}

int cmd_audit(int argc, char **argv)
{
    static const struct option own[] = {{"by", required_argument, 0, 'b'},
                                        {"protocol", required_argument, 0, 'p'},
                                        {"ensemble", required_argument, 0, 'e'},
                                        {0, 0, 0, 0}};
    audit_opts o = {arb_audit_default_params(), NULL};
    o.params.protocols = ARB_AUDIT_SBS | ARB_AUDIT_TOURNAMENT;
    cli_read_args args = {.flags = CLI_READ_JSON | CLI_READ_OUTPUT | CLI_READ_INTERVALS |
                                   CLI_READ_LEVEL,
                          .output = "-", .bootstrap = &o.params.bootstrap, .seed = &o.params.seed,
                          .level = &o.params.ci_level};
    int rc = cli_read_options("audit", audit_help, argc, argv, own, audit_option, &o, &args);
    arb_store *store = NULL;
    arb_audit *audit = NULL;
    if (rc != CLI_GO_ON || (rc = cli_open_existing_store("audit", args.db, &store))) {
        free(o.ensemble);
        return rc;
    }
    arb_status st = arb_audit_compute(store, &o.params, &audit);
    if (st) {
        rc = cli_store_failure("audit", store, st);
    } else {
        if (!args.json && arb_audit_count(audit) == 0)
            fprintf(stderr, "arbiter audit: no side-by-side or tournament judgments in %s yet\n", args.db);
        rc = cli_emit("audit", args.output, args.json ? arb_audit_to_json(audit) : arb_audit_to_text(audit));
    }
    arb_audit_destroy(audit);
    arb_store_close(store);
    free(o.ensemble);
    return rc;
}
