/*
** cmd_demo.c -- `arbiter demo`: the built-in demo benchmark judged over real HTTP by two
** SIMULATED judges of known bias, served in-process by the simulator; prints the audit and
** checks that the metrics recover the injected biases.
*/
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char demo_help[] =
    "usage: arbiter demo [--out DIR] [--jobs N]\n"
    "\n"
    "Judges the built-in demo benchmark (40 items in 4 languages, answers from 4 fictional\n"
    "models of clearly different quality) with two SIMULATED judges served over real HTTP on\n"
    "127.0.0.1 by arbiter's own simulator (not a language model): sim-fair (no position bias)\n"
    "and sim-primacy (injected primacy bias). Writes to DIR (default arbiter-demo):\n"
    "  demo.db       the SQLite store (run again: nothing is sent twice)\n"
    "  items.jsonl, answers.jsonl   the benchmark, to try the other commands on\n"
    "  report.txt    the run summary and audit;  audit.json  the audit as JSON\n"
    "Exits 1 if the audit does not recover the injected biases.\n";

/* The two judges of the demo, with the bias each is given (simulator spec syntax). */
static const struct {
    const char *spec;
    double injected_bias;
} demo_judges[] = {
    {"sim-fair:skill=4,bias=0,tie=0.4,bothbad=0.5,invalid=0.01,latency=2", 0.0},
    {"sim-primacy:skill=4,bias=0.9,tie=0.3,bothbad=0.5,invalid=0.04,latency=2", 0.9},
};
static const char *const demo_candidates[] = {"atlas-large", "cedar-small", "drift-tiny"};
static const char demo_baseline[] = "birch-medium";

static const char *embedded(const char *name)
{
    for (const arb_cli_embedded_file *f = arb_cli_demo_files; f->name; f++)
        if (!strcmp(f->name, name)) return f->text;
    return NULL;
}

int cmd_demo(int argc, char **argv)
{
    static const struct option opts[] = {{"out", required_argument, 0, 'o'},
                                         {"jobs", required_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = "arbiter-demo";
    long jobs = 16;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'j':
            if (cli_parse_int("--jobs", optarg, 1, 4096, &jobs)) return EXIT_USAGE;
            break;
        case 'h': fputs(demo_help, stdout); return EXIT_OK;
        default: return cli_usage_error("demo", "unknown or incomplete option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_usage_error("demo", "unexpected argument \"%s\"", argv[optind]);

    enum { N_JUDGES = sizeof demo_judges / sizeof demo_judges[0] };
    int rc = EXIT_FAIL;
    arb_dataset *ds = NULL;
    arb_sim_server *srv = NULL;
    arb_store *store = NULL;
    arb_audit *audit = NULL;
    char *text = NULL, *json = NULL, *path = NULL, *url = NULL;
    arb_sim_judge judges[N_JUDGES];
    FILE *report = NULL;

    const char *items_text = embedded("items"), *answers_text = embedded("answers");
    if (!items_text || !answers_text) {
        fprintf(stderr, "arbiter demo: the demo benchmark is missing from this build\n");
        return EXIT_FAIL;
    }
    if (mkdir(out, 0755) && errno != EEXIST) {
        fprintf(stderr, "arbiter demo: cannot create %s: %s\n", out, strerror(errno));
        return EXIT_FAIL;
    }
    ds = arb_dataset_create();
    if (!ds || arb_dataset_add_items_jsonl(ds, "demo/items.jsonl", items_text, strlen(items_text)) ||
        arb_dataset_add_answers_jsonl(ds, "demo/answers.jsonl", answers_text, strlen(answers_text))) {
        fprintf(stderr, "arbiter demo: %s\n", ds ? arb_dataset_errmsg(ds) : "out of memory");
        goto done;
    }
    size_t plen = strlen(out) + 32;
    path = malloc(plen);
    if (!path) goto done;
    snprintf(path, plen, "%s/items.jsonl", out);
    if (cli_write_file("demo", path, items_text)) goto done;
    snprintf(path, plen, "%s/answers.jsonl", out);
    if (cli_write_file("demo", path, answers_text)) goto done;

    for (size_t j = 0; j < N_JUDGES; j++) {
        char *err = NULL;
        if (arb_sim_judge_parse(demo_judges[j].spec, &judges[j], &err)) {
            fprintf(stderr, "arbiter demo: %s\n", err ? err : "bad judge");
            arb_free(err);
            goto done;
        }
    }
    arb_sim_params sp = arb_sim_default_params();
    sp.seed = 7;
    sp.judges = judges;
    sp.n_judges = N_JUDGES;
    sp.answers_oracle = ds;
    char *err = NULL;
    if (arb_sim_server_start(&sp, &srv, &err)) {
        fprintf(stderr, "arbiter demo: cannot start the simulator: %s\n", err ? err : "?");
        arb_free(err);
        goto done;
    }
    size_t ulen = 64;
    url = malloc(ulen);
    if (!url) goto done;
    snprintf(url, ulen, "http://127.0.0.1:%d/v1", arb_sim_server_port(srv));
    printf("arbiter demo: judging %zu items with 2 SIMULATED judges (arbiter's simulator, not "
           "language models) at %s\n\n", arb_dataset_item_count(ds), url);

    snprintf(path, plen, "%s/demo.db", out);
    if (arb_store_open(path, &store)) {
        fprintf(stderr, "arbiter demo: %s\n", store ? arb_store_errmsg(store) : "cannot open store");
        goto done;
    }
    cli_install_signal_handlers();
    snprintf(path, plen, "%s/report.txt", out);
    if (!(report = fopen(path, "w"))) {
        fprintf(stderr, "arbiter demo: cannot write %s: %s\n", path, strerror(errno));
        goto done;
    }
    fprintf(report, "arbiter demo report -- judges are SIMULATED (arbiter's simulator, not language models)\n\n");
    for (size_t j = 0; j < N_JUDGES; j++) {
        for (size_t k = 0; k < sizeof demo_candidates / sizeof demo_candidates[0]; k++) {
            arb_sbs_params p = arb_sbs_default_params();
            p.candidate = demo_candidates[k];
            p.baseline = demo_baseline;
            p.judge.base_url = url;
            p.judge.model = judges[j].model;
            p.client.jobs = (int)jobs;
            p.progress = 0;
            arb_run_stats stats;
            arb_status st = arb_sbs_run(store, ds, &p, &stats);
            if (st) {
                fprintf(stderr, "arbiter demo: %s\n", arb_store_errmsg(store));
                rc = cli_exit_code(st);
                goto done;
            }
            fprintf(report, "%s: %s vs %s: %zu calls (%zu stored before, %zu sent, %zu failed, "
                    "%zu invalid) in %.2f s\n", judges[j].model, p.candidate, p.baseline,
                    stats.planned, stats.cached, stats.sent, stats.failed, stats.invalid, stats.seconds);
            printf("  %-12s %-12s vs %-12s  %3zu calls: %3zu sent, %3zu stored before, %zu failed, %zu invalid\n",
                   judges[j].model, p.candidate, p.baseline, stats.planned, stats.sent,
                   stats.cached, stats.failed, stats.invalid);
        }
    }
    if (arb_audit_compute(store, &audit)) {
        fprintf(stderr, "arbiter demo: %s\n", arb_store_errmsg(store));
        goto done;
    }
    text = arb_audit_to_text(audit);
    json = arb_audit_to_json(audit);
    if (!text || !json) goto done;
    printf("\n%s\n", text);
    fprintf(report, "\n%s\n", text);
    snprintf(path, plen, "%s/audit.json", out);
    if (cli_write_file("demo", path, json)) goto done;

    /* Do the metrics recover the injected biases? Mean PBias@AB per judge. */
    int recovered = 1;
    double mean_pbias[N_JUDGES];
    printf("Injected position bias vs measured PBias@AB (mean over the judge's comparisons):\n");
    fprintf(report, "Injected position bias vs measured PBias@AB:\n");
    for (size_t j = 0; j < N_JUDGES; j++) {
        double sum = 0;
        int n = 0;
        for (size_t i = 0; i < arb_audit_count(audit); i++) {
            const arb_audit_row *row = arb_audit_row_at(audit, i);
            if (!strcmp(row->judge, judges[j].model) && arb_defined(row->m.pbias_ab)) {
                sum += row->m.pbias_ab;
                n++;
            }
        }
        mean_pbias[j] = n ? sum / n : NAN;
        const char *meaning = !n ? "undefined"
                            : fabs(mean_pbias[j]) < 0.1 ? "no positional preference"
                            : mean_pbias[j] > 0 ? "favours the first position"
                                                : "favours the second position";
#define DEMO_BIAS_LINE "  %-12s injected bias %+.2f  ->  PBias@AB %+.3f  (%s)\n"
        printf(DEMO_BIAS_LINE, judges[j].model, demo_judges[j].injected_bias, mean_pbias[j], meaning);
        fprintf(report, DEMO_BIAS_LINE, judges[j].model, demo_judges[j].injected_bias,
                mean_pbias[j], meaning);
    }
    /* sim-fair must look fair, sim-primacy clearly first-position biased. */
    if (!(fabs(mean_pbias[0]) < 0.15 && mean_pbias[1] > 0.15 && mean_pbias[1] > mean_pbias[0] + 0.15))
        recovered = 0;
    const char *verdict = recovered ? "RECOVERED: the audit finds the bias that was injected, and only there.\n"
                                    : "NOT RECOVERED: the audit did not separate the biased judge from the fair one.\n";
    printf("%s", verdict);
    fprintf(report, "%s", verdict);
    snprintf(path, plen, "%s", out);
    printf("\nWrote %s/report.txt, %s/audit.json and %s/demo.db (try: arbiter audit --db %s/demo.db --json)\n",
           out, out, out, out);
    rc = recovered ? EXIT_OK : EXIT_FAIL;
done:
    if (report) fclose(report);
    arb_free(text);
    arb_free(json);
    arb_audit_destroy(audit);
    arb_store_close(store);
    arb_sim_server_stop(srv);
    arb_dataset_destroy(ds);
    free(path);
    free(url);
    return rc;
}
