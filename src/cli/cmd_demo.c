/*
** cmd_demo.c -- `arbiter demo`: the built-in demo benchmark judged over real HTTP by two
** SIMULATED judges of known bias, served in-process by the simulator; prints the audit and
** checks that the metrics recover the injected biases.
*/
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
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
    "  labels.jsonl  SYNTHETIC expert labels (3 made-up annotators), imported into demo.db\n"
    "  report.html   the report with charts (one file, opens offline); report.md the same tables\n"
    "  report.txt    the run summary and audit;  audit.json  the audit as JSON\n"
    "  judges.yaml   the tournament's judges file (the format 'arbiter tournament' reads)\n"
    "Debates (METHODS §2.5): sim-primacy as agent 1, sim-fair as agent 2 and judge agent, soft\n"
    "and hard, audited beside the judges. Then runs a tournament of the four models (every\n"
    "pair, both orders, both judges) and ranks them by Bradley-Terry with bootstrap intervals,\n"
    "and a peer discussion (§7) between the two judges with its statistics (PDA, opinion\n"
    "altering/holding, first-position share before and after).\n"
    "Last, the multilingual study (METHODS §8): three SIMULATED pointwise judges with noise\n"
    "injected in a known order of languages (fr < ru < zh < hi < ar; English least) grade the\n"
    "references of the parallel set (36 groups x 6 languages: en fr ru ar hi zh) yes/no and\n"
    "1-5, and 'arbiter consistency' measures Fleiss' and Cohen's kappa across the languages\n"
    "and a majority-vote ensemble (consistency.json).\n"
    "Then a persona-bias study (METHODS §9): two SIMULATED judges (persona-biased: +1.5 for a\n"
    "female author, -1 for a Muslim one, prefers the first-shown candidate; persona-fair) score\n"
    "the starter scenarios under the gender and religion identities, alone and in swapped\n"
    "pairs (persona.json).\n"
    "Exits 1 if the audit does not recover the injected biases, the ranking the known order,\n"
    "the consistency metrics the known order of languages, or the persona analysis the biased\n"
    "judge alone.\n";

/* The two judges of the demo, with the bias each is given (simulator spec syntax). */
static const struct {
    const char *spec;
    double injected_bias;
} demo_judges[] = {
    {"sim-fair:skill=4,bias=0,tie=0.4,bothbad=0.5,invalid=0.01,latency=2", 0.0},
    {"sim-primacy:skill=4,bias=0.9,tie=0.3,bothbad=0.5,invalid=0.04,latency=2", 0.9},
};
enum { N_JUDGES = sizeof demo_judges / sizeof demo_judges[0] };
static const char *const demo_candidates[] = {"atlas-large", "cedar-small", "drift-tiny"};
static const char demo_baseline[] = "birch-medium";
enum { N_CANDIDATES = sizeof demo_candidates / sizeof demo_candidates[0] };

/* Prints a value with 3 decimals (with its sign when asked), or n/a when undefined. */
static void put_num(FILE *f, int with_sign, double x, int width)
{
    if (!arb_defined(x)) fprintf(f, "%*s", width, "n/a");
    else if (with_sign) fprintf(f, "%+*.3f", width, x);
    else fprintf(f, "%*.3f", width, x);
}

/* One line per judge: the headline metrics, with bootstrap intervals for PBias@AB and PF. */
static void print_judge_table(FILE *f, const arb_audit *a, size_t resamples)
{
    fprintf(f, "\nAudit per judge (METHODS §3-§5; [95%% interval], %zu bootstrap resamples of items):\n",
            resamples);
    fprintf(f, "  %-36s %-24s %-24s %7s %6s %7s %7s %7s %7s\n", "judge", "PBias@AB", "PF", "PC",
            "RS", "acc", "kappa", "APCC", "MPCC");
    for (size_t i = 0; i < arb_audit_count(a); i++) {
        const arb_audit_row *r = arb_audit_row_at(a, i);
        const arb_audit_metrics *m = &r->m;
        /* judge names come from this demo's own table, but stay untrusted in principle */
        char name[37];
        snprintf(name, sizeof name, "%s", r->judge);
        for (char *c = name; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
        fprintf(f, "  %-36s ", name);
        const arb_audit_metric with_ci[] = {ARB_M_PBIAS_AB, ARB_M_PF};
        for (int k = 0; k < 2; k++) {
            put_num(f, 1, m->value[with_ci[k]], 6);
            fputs(" [", f);
            put_num(f, 1, m->ci_lo[with_ci[k]], 6);
            fputs(",", f);
            put_num(f, 1, m->ci_hi[with_ci[k]], 6);
            fputs("]  ", f);
        }
        put_num(f, 0, m->value[ARB_M_PC], 7);
        put_num(f, 0, m->value[ARB_M_RS], 7);
        put_num(f, 0, m->value[ARB_M_ACCURACY], 8);
        put_num(f, 1, m->value[ARB_M_COHEN_KAPPA], 8);
        put_num(f, 1, m->value[ARB_M_APCC], 8);
        put_num(f, 1, m->value[ARB_M_MPCC], 8);
        fputc('\n', f);
    }
    fputs("  soft(...)/hard(...): debates (METHODS §2.5) of agent 1, agent 2 and the judge agent\n"
          "  PC position consistency, RS repetition stability (only the @t1 judges repeat),\n"
          "  acc/kappa/APCC/MPCC agreement with the SYNTHETIC expert labels (METHODS §4)\n", f);
}

/* What the demo's stages share: the benchmark, the simulator, the store and report.txt. */
typedef struct demo {
    const char *out;      /* the output directory */
    int jobs;
    arb_dataset *ds;
    arb_sim_judge judges[N_JUDGES];
    arb_sim_server *srv;
    char url[64];         /* the simulator's base URL */
    arb_store *store;
    FILE *report;         /* report.txt */
} demo;

/* Prints the same line on the screen and in report.txt. */
static void say_both(demo *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say_both(demo *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    va_start(ap, fmt);
    vfprintf(d->report, fmt, ap);
    va_end(ap);
}

/* Prints the store's last error and returns the exit code for st (EXIT_FAIL when st is ok but
** a renderer ran out of memory). */
static int store_failed(demo *d, arb_status st)
{
    fprintf(stderr, "arbiter demo: %s\n", arb_store_errmsg(d->store));
    return st ? cli_exit_code(st) : EXIT_FAIL;
}

/* d->out/name in a new string (caller frees), or NULL when out of memory. */
static char *out_path(const demo *d, const char *name)
{
    size_t len = strlen(d->out) + strlen(name) + 2;
    char *path = malloc(len);
    if (path) snprintf(path, len, "%s/%s", d->out, name);
    return path;
}

/* Writes text to d->out/name. Returns 0 or the exit code after printing why. */
static int write_out(const demo *d, const char *name, const char *text)
{
    char *path = out_path(d, name);
    int rc = !path || cli_write_file("demo", path, text) ? EXIT_FAIL : EXIT_OK;
    free(path);
    return rc;
}

/* Writes the store's report as format to d->out/name (arb_report_write). */
static int write_report(demo *d, const char *name, const char *format)
{
    char *path = out_path(d, name);
    if (!path) return EXIT_FAIL;
    FILE *f = fopen(path, "w");
    arb_report_params rp = arb_report_default_params();
    rp.title = "arbiter demo report (SIMULATED judges)";
    arb_status st = f ? arb_report_write(d->store, &rp, format, f) : ARB_IO;
    int closed = f ? fclose(f) : 0;
    if (st || closed)
        fprintf(stderr, "arbiter demo: cannot write %s: %s\n", path,
                f ? arb_store_errmsg(d->store) : strerror(errno));
    free(path);
    return st || closed ? EXIT_FAIL : EXIT_OK;
}

/* A judge of the demo as a client configuration: the same as 'arbiter sbs' uses, so agent 1
** of a debate reuses the judge's stored calls. */
static arb_judge_config demo_judge(const demo *d, size_t j)
{
    arb_judge_config c = arb_sbs_default_params().judge;
    c.base_url = d->url;
    c.model = d->judges[j].model;
    c.name = c.model;
    return c;
}

static const char *embedded(const char *name)
{
    for (const arb_cli_embedded_file *f = arb_cli_demo_files; f->name; f++)
        if (!strcmp(f->name, name)) return f->text;
    return NULL;
}

/* Loads the embedded benchmark, writes it to d->out and starts the simulator serving its two
** judges on 127.0.0.1; then opens demo.db and report.txt. */
static int set_up(demo *d)
{
    const char *items_text = embedded("items"), *answers_text = embedded("answers");
    if (!items_text || !answers_text || !embedded("labels")) {
        fprintf(stderr, "arbiter demo: the demo benchmark is missing from this build\n");
        return EXIT_FAIL;
    }
    if (mkdir(d->out, 0755) && errno != EEXIST) {
        fprintf(stderr, "arbiter demo: cannot create %s: %s\n", d->out, strerror(errno));
        return EXIT_FAIL;
    }
    d->ds = arb_dataset_create();
    if (!d->ds ||
        arb_dataset_add_items_jsonl(d->ds, "demo/items.jsonl", items_text, strlen(items_text)) ||
        arb_dataset_add_answers_jsonl(d->ds, "demo/answers.jsonl", answers_text,
                                      strlen(answers_text))) {
        fprintf(stderr, "arbiter demo: %s\n", d->ds ? arb_dataset_errmsg(d->ds) : "out of memory");
        return EXIT_FAIL;
    }
    if (write_out(d, "items.jsonl", items_text) || write_out(d, "answers.jsonl", answers_text))
        return EXIT_FAIL;
    for (size_t j = 0; j < N_JUDGES; j++) {
        char *err = NULL;
        if (arb_sim_judge_parse(demo_judges[j].spec, &d->judges[j], &err)) {
            fprintf(stderr, "arbiter demo: %s\n", err ? err : "bad judge");
            arb_free(err);
            return EXIT_FAIL;
        }
    }
    arb_sim_params sp = arb_sim_default_params();
    sp.seed = 7;
    sp.judges = d->judges;
    sp.n_judges = N_JUDGES;
    sp.answers_oracle = d->ds;
    char *err = NULL;
    if (arb_sim_server_start(&sp, &d->srv, &err)) {
        fprintf(stderr, "arbiter demo: cannot start the simulator: %s\n", err ? err : "?");
        arb_free(err);
        return EXIT_FAIL;
    }
    snprintf(d->url, sizeof d->url, "http://127.0.0.1:%d/v1", arb_sim_server_port(d->srv));
    printf("arbiter demo: judging %zu items with 2 SIMULATED judges (arbiter's simulator, not "
           "language models) at %s\n\n", arb_dataset_item_count(d->ds), d->url);

    char *path = out_path(d, "demo.db");
    arb_status st = path ? arb_store_open(path, &d->store) : ARB_NOMEM;
    if (st) fprintf(stderr, "arbiter demo: %s\n", d->store ? arb_store_errmsg(d->store) : arb_strerror(st));
    free(path);
    if (st) return EXIT_FAIL;
    cli_install_signal_handlers();
    if (!(path = out_path(d, "report.txt"))) return EXIT_FAIL;
    if (!(d->report = fopen(path, "w")))
        fprintf(stderr, "arbiter demo: cannot write %s: %s\n", path, strerror(errno));
    free(path);
    if (!d->report) return EXIT_FAIL;
    fprintf(d->report, "arbiter demo report -- judges are SIMULATED (arbiter's simulator, not "
                       "language models)\n\n");
    return EXIT_OK;
}

/* Every judge on every candidate at temperature 0; then each judge again as "<judge>@t1" at
** temperature 1 with 3 repetitions on one candidate, for repetition stability (§5). */
static int judge_side_by_side(demo *d)
{
    for (size_t j = 0; j < N_JUDGES; j++) {
        for (size_t k = 0; k <= N_CANDIDATES; k++) {
            int repeated = k == N_CANDIDATES;
            char name[sizeof d->judges[j].model + 8];
            snprintf(name, sizeof name, "%.127s@t1", d->judges[j].model);
            arb_sbs_params p = arb_sbs_default_params();
            p.candidate = demo_candidates[repeated ? 0 : k];
            p.baseline = demo_baseline;
            p.judge = demo_judge(d, j);
            if (repeated) {
                p.judge.name = name;
                p.judge.sampling.temperature = 1.0;
                p.judge.sampling.top_p = 1.0;
                p.reps = 3;
            }
            p.client.jobs = d->jobs;
            p.progress = 0;
            arb_run_stats stats;
            arb_status st = arb_sbs_run(d->store, d->ds, &p, &stats);
            if (st) return store_failed(d, st);
            fprintf(d->report, "%s: %s vs %s x%d: %zu calls (%zu stored before, %zu sent, %zu "
                    "failed, %zu invalid) in %.2f s\n", p.judge.name, p.candidate, p.baseline,
                    p.reps, stats.planned, stats.cached, stats.sent, stats.failed, stats.invalid,
                    stats.seconds);
            printf("  %-15s %-12s vs %-12s x%d %3zu calls: %3zu sent, %3zu stored before, %zu "
                   "failed, %zu invalid\n", p.judge.name, p.candidate, p.baseline, p.reps,
                   stats.planned, stats.sent, stats.cached, stats.failed, stats.invalid);
        }
    }
    return EXIT_OK;
}

/* Multi-agent verdicts (§2.5): the biased judge as agent 1, the fair one as agent 2 and judge
** agent, soft and hard, on every candidate; the audit then shows them beside the judges. */
static int run_debates(demo *d)
{
    for (int hard = 0; hard <= 1; hard++) {
        for (size_t k = 0; k < N_CANDIDATES; k++) {
            arb_debate_params p = arb_debate_default_params();
            p.mode = hard ? ARB_DEBATE_HARD : ARB_DEBATE_SOFT;
            p.candidate = demo_candidates[k];
            p.baseline = demo_baseline;
            p.agents[0] = demo_judge(d, 1);
            p.agents[1] = demo_judge(d, 0);
            p.agents[2] = demo_judge(d, 0);
            p.client.jobs = d->jobs;
            p.progress = 0;
            arb_run_stats stats;
            arb_status st = arb_debate_run(d->store, d->ds, &p, &stats);
            if (st) return store_failed(d, st);
            fprintf(d->report, "%s debate (%s, %s, %s): %s vs %s: %zu calls (%zu stored before, "
                    "%zu sent, %zu failed, %zu invalid) in %.2f s\n", hard ? "hard" : "soft",
                    d->judges[1].model, d->judges[0].model, d->judges[0].model, p.candidate,
                    p.baseline, stats.planned, stats.cached, stats.sent, stats.failed,
                    stats.invalid, stats.seconds);
            printf("  %-15s %-12s vs %-12s    %3zu calls: %3zu sent, %3zu stored before, %zu "
                   "failed, %zu invalid\n", hard ? "hard debate" : "soft debate", p.candidate,
                   p.baseline, stats.planned, stats.sent, stats.cached, stats.failed,
                   stats.invalid);
        }
    }
    return EXIT_OK;
}

/* Expert labels: SYNTHETIC annotators (scripts/gen_demo_labels.py), imported as a user would
** import real ones. */
static int import_labels(demo *d)
{
    char *path = out_path(d, "labels.jsonl");
    if (!path || cli_write_file("demo", path, embedded("labels"))) {
        free(path);
        return EXIT_FAIL;
    }
    arb_labels_import_stats ls;
    arb_status st = arb_labels_import(d->store, path, "jsonl", &ls);
    if (!st)
        printf("\n  imported %zu SYNTHETIC expert labels (3 made-up annotators; %zu new) from %s\n",
               ls.rows, ls.inserted, path);
    free(path);
    return st ? store_failed(d, st) : EXIT_OK;
}

/* The full audit per comparison goes to report.txt and audit.json, agreement, factors and the
** labels' report to report.txt; the screen gets one line per judge with bootstrap intervals and
** whether PBias@AB and PF recover the injected biases (*recovered cleared when not). */
static int audit_judges(demo *d, int *recovered)
{
    arb_audit *audit = NULL, *by_judge = NULL;
    arb_agreement *agreement = NULL;
    arb_factors *factors = NULL;
    arb_labels_report *labels = NULL;
    char *text = NULL, *json = NULL, *agreement_text = NULL, *factors_text = NULL,
         *labels_text = NULL;
    arb_audit_params ap = arb_audit_default_params();
    ap.by = ARB_BY_JUDGE;
    ap.bootstrap = 500;
    ap.multi_agent = 0; /* shown once, after the discussions */
    arb_factors_params fp = {"pc"};
    arb_status st;
    int rc = EXIT_FAIL;
    if ((st = arb_audit_compute(d->store, NULL, &audit)) ||
        (st = arb_audit_compute(d->store, &ap, &by_judge)) ||
        (st = arb_agreement_compute(d->store, &agreement)) ||
        (st = arb_factors_compute(d->store, &fp, &factors)) ||
        (st = arb_labels_report_compute(d->store, 0, &labels))) {
        rc = store_failed(d, st);
        goto done;
    }
    if (!(text = arb_audit_to_text(audit)) || !(json = arb_audit_to_json(audit)) ||
        !(agreement_text = arb_agreement_to_text(agreement)) ||
        !(factors_text = arb_factors_to_text(factors)) ||
        !(labels_text = arb_labels_report_to_text(labels))) {
        fprintf(stderr, "arbiter demo: out of memory\n");
        goto done;
    }
    fprintf(d->report, "\n%s\n", text);
    if (write_out(d, "audit.json", json)) goto done;
    print_judge_table(stdout, by_judge, ap.bootstrap);
    print_judge_table(d->report, by_judge, ap.bootstrap);
    say_both(d, "\nJudges compared (METHODS §5):\n%s", agreement_text);
    fprintf(d->report, "\nFactor analysis of position consistency (METHODS §5):\n%s", factors_text);
    fprintf(d->report, "\nExpert labels (SYNTHETIC annotators):\n%s", labels_text);

    /* Do the metrics recover the injected biases? PBias@AB and PF of each judge's own row. */
    say_both(d, "\nInjected position bias vs measured (judges at temperature 0):\n");
    for (size_t j = 0; j < N_JUDGES; j++) {
        const arb_audit_row *row = NULL;
        for (size_t i = 0; i < arb_audit_count(by_judge); i++)
            if (!strcmp(arb_audit_row_at(by_judge, i)->judge, d->judges[j].model))
                row = arb_audit_row_at(by_judge, i);
        double pbias = row ? row->m.value[ARB_M_PBIAS_AB] : NAN;
        double pf = row ? row->m.value[ARB_M_PF] : NAN;
        const char *meaning = !arb_defined(pbias)  ? "undefined"
                              : fabs(pbias) < 0.1 ? "no positional preference"
                              : pbias > 0         ? "favours the first position"
                                                  : "favours the second position";
        say_both(d, "  %-12s injected bias %+.2f  ->  PBias@AB %+.3f, PF %+.3f  (%s)\n",
                 d->judges[j].model, demo_judges[j].injected_bias, pbias, pf, meaning);
        /* sim-fair must look fair, sim-primacy clearly first-position biased and
        ** primacy-leaning in its inconsistent pairs */
        if (j == 0 && !(fabs(pbias) < 0.15 && fabs(pf) < 0.15)) *recovered = 0;
        if (j == 1 && !(pbias > 0.15 && pf < -0.1)) *recovered = 0;
    }
    say_both(d, "%s", *recovered ? "RECOVERED: the audit finds the bias that was injected, and "
                                   "only there.\n"
                                 : "NOT RECOVERED: the audit did not separate the biased judge "
                                   "from the fair one.\n");
    rc = EXIT_OK;
done:
    arb_free(text);
    arb_free(json);
    arb_free(agreement_text);
    arb_free(factors_text);
    arb_free(labels_text);
    arb_audit_destroy(audit);
    arb_audit_destroy(by_judge);
    arb_agreement_destroy(agreement);
    arb_factors_destroy(factors);
    arb_labels_report_destroy(labels);
    return rc;
}

/* Nonzero when two audits differ in a row's identity or any figure (NaN equals NaN). */
static int audits_differ(const arb_audit *a, const arb_audit *b)
{
    if (arb_audit_count(a) != arb_audit_count(b)) return 1;
    for (size_t i = 0; i < arb_audit_count(a); i++) {
        const arb_audit_row *x = arb_audit_row_at(a, i), *y = arb_audit_row_at(b, i);
        const char *const sx[] = {x->judge, x->protocol, x->candidate, x->baseline, x->template_name};
        const char *const sy[] = {y->judge, y->protocol, y->candidate, y->baseline, y->template_name};
        for (size_t k = 0; k < 5; k++)
            if (!sx[k] != !sy[k] || (sx[k] && strcmp(sx[k], sy[k]))) return 1;
        if (x->options != y->options) return 1;
        for (int m = 0; m < ARB_M__COUNT; m++)
            if (!(x->m.value[m] == y->m.value[m] || (isnan(x->m.value[m]) && isnan(y->m.value[m]))))
                return 1;
        for (int f = 0; f < ARB_LEN__COUNT; f++)
            if (!(x->m.length[f].mean == y->m.length[f].mean ||
                  (isnan(x->m.length[f].mean) && isnan(y->m.length[f].mean))))
                return 1;
    }
    return 0;
}

/* Judgments made elsewhere (issue 15): the side-by-side judgments leave with `arbiter export`,
** come back into a fresh store with `arbiter import judgments` as if another tool had made them
** (no judge call), with the same expert labels; the audit of the copy must equal the audit of
** the original in every figure (*recovered cleared when not). */
static int audit_elsewhere(demo *d, int *recovered)
{
    char *jsonl = out_path(d, "elsewhere.jsonl"), *db = out_path(d, "elsewhere.db"),
         *labels = out_path(d, "labels.jsonl");
    arb_store *other = NULL;
    arb_audit *mine = NULL, *theirs = NULL;
    arb_audit_params ap = arb_audit_default_params();
    ap.multi_agent = 0; /* dialogues are not judgments: they do not travel */
    int rc = EXIT_FAIL;
    if (!jsonl || !db || !labels) goto done;
    FILE *f = fopen(jsonl, "w");
    arb_status st = f ? arb_store_export(d->store, "jsonl", f) : ARB_IO;
    if ((f && fclose(f)) || st) {
        fprintf(stderr, "arbiter demo: cannot write %s: %s\n", jsonl,
                f ? arb_store_errmsg(d->store) : strerror(errno));
        goto done;
    }
    arb_import_params ip = {.source = "elsewhere", .baseline = NULL};
    arb_import_stats is;
    arb_labels_import_stats ls;
    if ((st = arb_store_open(db, &other)) ||
        (st = arb_judgments_import(other, "judgments", jsonl, &ip, &is)) ||
        (st = arb_labels_import(other, labels, "jsonl", &ls)) ||
        (st = arb_audit_compute(other, &ap, &theirs))) {
        fprintf(stderr, "arbiter demo: %s: %s\n", db, other ? arb_store_errmsg(other) : arb_strerror(st));
        goto done;
    }
    if ((st = arb_audit_compute(d->store, &ap, &mine))) {
        rc = store_failed(d, st);
        goto done;
    }
    int same = !audits_differ(mine, theirs);
    say_both(d, "\nJudgments made elsewhere (arbiter export, then arbiter import judgments into %s):\n"
                "  %zu judgments and %zu expert labels imported as source \"elsewhere\", no judge call\n"
                "%s\n", db, is.judgments, ls.rows,
             same ? "IMPORTED AUDIT MATCHES: every figure of every audit row equals the audit of "
                    "arbiter's own store."
                  : "IMPORTED AUDIT DIFFERS from the audit of arbiter's own store.");
    if (!same) *recovered = 0;
    rc = EXIT_OK;
done:
    arb_audit_destroy(mine);
    arb_audit_destroy(theirs);
    arb_store_close(other);
    free(jsonl);
    free(db);
    free(labels);
    return rc;
}

/* Rankings (§6): a tournament of all four models, both orders, both judges (named in a judges
** file the user can copy), ranked by Bradley-Terry with bootstrap intervals; the known order of
** quality must come back (*recovered cleared when not). */
static int rank_tournament(demo *d, int *recovered)
{
    static const char *const quality_order[] = {"atlas-large", "birch-medium", "cedar-small",
                                                "drift-tiny"};
    arb_judges_file *judges_file = NULL;
    arb_battles *battles = NULL;
    arb_rank *rank = NULL;
    char *rank_text = NULL, *path = NULL, *err = NULL;
    int rc = EXIT_FAIL;
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "# the demo's SIMULATED judges (arbiter's simulator, not language models)\n"
             "judges:\n  - name: %.127s\n    url: %s\n    model: %.127s\n"
             "  - name: %.127s\n    url: %s\n    model: %.127s\n",
             d->judges[0].model, d->url, d->judges[0].model, d->judges[1].model, d->url,
             d->judges[1].model);
    if (!(path = out_path(d, "judges.yaml")) || cli_write_file("demo", path, yaml)) goto done;
    if (arb_judges_file_load(path, &judges_file, &err)) {
        fprintf(stderr, "arbiter demo: %s\n", err ? err : "cannot read the judges file");
        goto done;
    }
    arb_tournament_params tp = arb_tournament_default_params();
    tp.judges = judges_file;
    tp.client.jobs = d->jobs;
    tp.progress = 0;
    arb_run_stats ts;
    arb_status st = arb_tournament_run(d->store, d->ds, &tp, &ts);
    if (st) {
        rc = store_failed(d, st);
        goto done;
    }
    printf("\nTournament (METHODS §6): 4 models, every pair in both orders, 2 judges: %zu calls "
           "(%zu sent, %zu stored before)\n", ts.planned, ts.sent, ts.cached);
    battles = arb_battles_create();
    if (!battles || (st = arb_store_get_battles(d->store, "tournament", battles))) {
        rc = store_failed(d, st);
        goto done;
    }
    arb_rank_params rp = arb_rank_default_params();
    rp.method = ARB_RANK_BT;
    rp.bootstrap = 1000;
    if (arb_rank_compute(battles, &rp, &rank, &err) || !(rank_text = arb_rank_to_text(rank))) {
        fprintf(stderr, "arbiter demo: %s\n", err ? err : "ranking failed");
        goto done;
    }
    printf("%s", rank_text);
    fprintf(d->report, "\nTournament ranking:\n%s", rank_text);
    int ranked = arb_rank_count(rank) == 4;
    for (size_t k = 0; ranked && k < 4; k++)
        if (strcmp(arb_rank_entry_at(rank, k)->model, quality_order[k])) ranked = 0;
    say_both(d, "%s", ranked ? "RANKING RECOVERED: the known order of quality, atlas-large > "
                               "birch-medium > cedar-small > drift-tiny.\n"
                             : "RANKING NOT RECOVERED: the ratings do not follow the known order "
                               "of quality.\n");
    if (!ranked) *recovered = 0;
    rc = EXIT_OK;
done:
    arb_free(err);
    free(path);
    arb_judges_file_destroy(judges_file);
    arb_battles_destroy(battles);
    arb_rank_destroy(rank);
    arb_free(rank_text);
    return rc;
}

/* Peer discussion (§7) between the two judges on two pairs, leader drawn per discussion, at most
** 4 turns, stopping once they agree; then the discussion and debate statistics. */
static int run_discussion(demo *d)
{
    static const arb_model_pair pairs[] = {{"atlas-large", "birch-medium"},
                                           {"cedar-small", "birch-medium"}};
    arb_discuss_params p = arb_discuss_default_params();
    p.reviewers[0] = demo_judge(d, 0);
    p.reviewers[1] = demo_judge(d, 1);
    p.pairs = pairs;
    p.n_pairs = sizeof pairs / sizeof *pairs;
    p.leader = ARB_LEADER_RANDOM;
    p.max_turns = 4;
    p.stop_on_agreement = 1;
    p.client.jobs = d->jobs;
    p.progress = 0;
    arb_run_stats stats;
    arb_status st = arb_discuss_run(d->store, d->ds, &p, &stats);
    if (st) return store_failed(d, st);
    printf("\nPeer discussion (METHODS §7): %s and %s on 2 pairs, both orders, leader drawn per "
           "discussion, at most 4 turns, stop on agreement: %zu calls planned, %zu sent, %zu "
           "stored before, %zu not needed\n", d->judges[0].model, d->judges[1].model,
           stats.planned, stats.sent, stats.cached, stats.skipped);
    arb_discussion_stats_params sp = arb_discussion_stats_default_params();
    arb_discussion_stats *ds_stats = NULL;
    char *text = NULL;
    if ((st = arb_discussion_stats_compute(d->store, &sp, &ds_stats)) ||
        !(text = arb_discussion_stats_to_text(ds_stats))) {
        arb_discussion_stats_destroy(ds_stats);
        return store_failed(d, st);
    }
    printf("%s", text);
    fprintf(d->report, "\nPeer discussions and debates:\n%s", text);
    arb_free(text);
    arb_discussion_stats_destroy(ds_stats);
    return EXIT_OK;
}

/* The multilingual study (METHODS §8): three SIMULATED pointwise judges whose noise grows in a
** known order of languages, en < fr < ru < zh < hi < ar, grade the references of the parallel
** set (demo/parallel.jsonl, 36 groups x 6 languages) in both modes; the consistency metrics
** must find that order: Cohen's kappa against English lower for hi and ar than for fr, ru, zh. */
static const char *const ml_judge_specs[] = {
    "ml-careful:noise=0.03,noise.fr=0.05,noise.ru=0.08,noise.zh=0.1,noise.hi=0.3,"
    "noise.ar=0.35,invalid=0.01,latency=1",
    "ml-medium:noise=0.06,noise.fr=0.08,noise.ru=0.12,noise.zh=0.15,noise.hi=0.4,"
    "noise.ar=0.45,strict=0.1,invalid=0.01,latency=1",
    "ml-rough:noise=0.1,noise.fr=0.12,noise.ru=0.18,noise.zh=0.2,noise.hi=0.5,noise.ar=0.55,"
    "strict=0.2,invalid=0.02,latency=1",
};
enum { N_ML_JUDGES = sizeof ml_judge_specs / sizeof ml_judge_specs[0] };
static const char *const ml_languages[] = {"fr", "ru", "zh", "hi", "ar"}; /* besides en */

/* Grades the parallel set with the three judges, both modes, each item as the task its
** category names (on a simulator of its own, whose oracle is the parallel set), then reports cross-language consistency with the
** ensemble of the three; *recovered is cleared when the known language order does not come
** back. */
static int judge_languages(demo *d, int *recovered)
{
    arb_sim_judge judges[N_ML_JUDGES];
    arb_judge_config configs[N_ML_JUDGES];
    const char *names[N_ML_JUDGES];
    arb_dataset *all = NULL;
    arb_sim_server *srv = NULL;
    arb_consistency *cons = NULL;
    char *text = NULL, *json = NULL, *err = NULL, url[64];
    int rc = EXIT_FAIL;
    const char *parallel = embedded("parallel");
    if (!parallel || !(all = arb_dataset_create()) ||
        arb_dataset_add_items_jsonl(all, "demo/parallel.jsonl", parallel, strlen(parallel))) {
        fprintf(stderr, "arbiter demo: %s\n", all ? arb_dataset_errmsg(all) : "no parallel set");
        goto done;
    }
    for (size_t j = 0; j < N_ML_JUDGES; j++) {
        if (arb_sim_judge_parse(ml_judge_specs[j], &judges[j], &err)) {
            fprintf(stderr, "arbiter demo: %s\n", err ? err : "bad judge");
            goto done;
        }
    }
    arb_sim_params sp = arb_sim_default_params();
    sp.seed = 11;
    sp.judges = judges;
    sp.n_judges = N_ML_JUDGES;
    sp.answers_oracle = all;
    if (arb_sim_server_start(&sp, &srv, &err)) {
        fprintf(stderr, "arbiter demo: cannot start the simulator: %s\n", err ? err : "?");
        goto done;
    }
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", arb_sim_server_port(srv));
    for (size_t j = 0; j < N_ML_JUDGES; j++) {
        memset(&configs[j], 0, sizeof configs[j]);
        configs[j].sampling = arb_sampling_default();
        configs[j].base_url = url;
        configs[j].model = judges[j].model;
        configs[j].name = judges[j].model;
        names[j] = judges[j].model;
    }
    size_t calls = 0, sent = 0, invalid = 0;
    for (int mode = 0; mode <= 1; mode++) {
        arb_grade_params gp = arb_grade_default_params();
        gp.kind = mode ? ARB_POINTWISE_GRADE : ARB_POINTWISE_YESNO;
        gp.task = "category"; /* the set mixes qa, math and generic items */
        gp.answer_from_reference = 1;
        gp.judges = configs;
        gp.n_judges = N_ML_JUDGES;
        gp.client.jobs = d->jobs;
        gp.progress = 0;
        arb_run_stats stats;
        arb_status st = arb_grade_run(d->store, all, &gp, &stats);
        if (st) {
            rc = store_failed(d, st);
            goto done;
        }
        calls += stats.planned;
        sent += stats.sent;
        invalid += stats.invalid;
    }
    say_both(d, "\nMultilingual consistency (METHODS §8): 3 SIMULATED pointwise judges grade the "
                "references of %zu items (36 parallel groups x 6 languages), yes/no and 1-5, "
                "tasks qa, math, generic: %zu calls (%zu sent, %zu without a valid answer)\n",
             arb_dataset_item_count(all), calls, sent, invalid);

    arb_consistency_params cp = arb_consistency_default_params();
    cp.ensemble = names;
    cp.n_ensemble = N_ML_JUDGES;
    cp.bootstrap = 200;
    arb_status st = arb_consistency_compute(d->store, &cp, &cons);
    if (st) {
        rc = store_failed(d, st);
        goto done;
    }
    if (!(text = arb_consistency_to_text(cons)) || !(json = arb_consistency_to_json(cons))) {
        fprintf(stderr, "arbiter demo: out of memory\n");
        goto done;
    }
    fprintf(d->report, "%s", text);
    if (write_out(d, "consistency.json", json)) goto done;

    /* Cohen's kappa against English per language, averaged over judges, tasks and modes; and
    ** each judge's Fleiss kappa averaged over its rows. */
    double kappa_sum[5] = {0}, fleiss_sum[N_ML_JUDGES] = {0};
    size_t kappa_n[5] = {0}, fleiss_n[N_ML_JUDGES] = {0};
    for (size_t i = 0; i < arb_consistency_count(cons); i++) {
        const arb_consistency_row *r = arb_consistency_row_at(cons, i);
        for (size_t j = 0; j < N_ML_JUDGES; j++)
            if (!strcmp(r->judge, names[j]) && arb_defined(r->fleiss_kappa)) {
                fleiss_sum[j] += r->fleiss_kappa;
                fleiss_n[j]++;
            }
        for (size_t l = 0; l < r->n_languages; l++)
            for (size_t k = 0; k < 5; k++)
                if (!strcmp(r->languages[l].language, ml_languages[k]) &&
                    arb_defined(r->languages[l].cohen_kappa_vs_reference)) {
                    kappa_sum[k] += r->languages[l].cohen_kappa_vs_reference;
                    kappa_n[k]++;
                }
    }
    say_both(d, "  Cohen's kappa against English, mean over judges, tasks and modes (noise "
                "injected: fr < ru < zh < hi < ar):\n   ");
    double kappa[5];
    for (size_t k = 0; k < 5; k++) {
        kappa[k] = kappa_n[k] ? kappa_sum[k] / (double)kappa_n[k] : NAN;
        say_both(d, "  %s %+.3f", ml_languages[k], kappa[k]);
    }
    say_both(d, "\n  Fleiss' kappa across the 6 languages, mean over tasks and modes:");
    for (size_t j = 0; j < N_ML_JUDGES; j++)
        say_both(d, "  %s %+.3f", names[j],
                 fleiss_n[j] ? fleiss_sum[j] / (double)fleiss_n[j] : NAN);
    say_both(d, "\n  Ensemble of the three (majority vote, ties to the first named), "
                "Min -> Ens (delta):\n");
    for (size_t i = 0; i < arb_consistency_ensemble_count(cons); i++) {
        const arb_consistency_ensemble *e = arb_consistency_ensemble_at(cons, i);
        say_both(d, "    %-8s %-6s %+.3f -> %+.3f (%+.3f)\n", e->task, e->mode, e->min, e->ens,
                 e->delta);
    }
    /* hi and ar (the noisiest) must each fall below every one of fr, ru, zh */
    int order = 1;
    for (size_t low = 3; low < 5; low++)
        for (size_t high = 0; high < 3; high++)
            if (!(kappa[low] < kappa[high])) order = 0;
    say_both(d, "%s", order ? "LANGUAGE ORDER RECOVERED: Hindi and Arabic, the languages with "
                              "the most injected noise, agree least with English.\n"
                            : "LANGUAGE ORDER NOT RECOVERED: the kappas do not follow the "
                              "injected noise.\n");
    if (!order) *recovered = 0;
    rc = EXIT_OK;
done:
    arb_free(err);
    arb_free(text);
    arb_free(json);
    arb_consistency_destroy(cons);
    arb_sim_server_stop(srv);
    arb_dataset_destroy(all);
    return rc;
}

/* The persona study (METHODS §9): two SIMULATED judges score the starter scenarios
** (demo/scenarios.jsonl, 6 base scenarios x 5 variants, two near-identical responses each)
** attributed to the gender and religion identities, alone (phase 1) and in contrastive pairs
** with labels exchanged and positions swapped (phase 2). persona-biased adds 1.5 points for a
** female author and takes 1 point from a Muslim one and prefers the first-shown candidate;
** persona-fair has no such bias. The analysis must flag the biased judge's gender and religion
** differences as significant (Holm-adjusted) and nothing of the fair judge's, and report the
** position preference apart from identity. */
static const char *const persona_judge_specs[] = {
    "persona-fair:persona_sd=1,latency=1",
    "persona-biased:persona.female=1.5,persona.Muslim=-1,persona_sd=1,bias=0.8,latency=1",
};
enum { N_PERSONA_JUDGES = sizeof persona_judge_specs / sizeof persona_judge_specs[0] };

static int judge_personas(demo *d, int *recovered)
{
    static const char *const categories[] = {"gender", "religion"};
    arb_sim_judge judges[N_PERSONA_JUDGES];
    arb_judge_config configs[N_PERSONA_JUDGES];
    arb_sim_server *srv = NULL;
    arb_persona_stats *ps = NULL;
    char *text = NULL, *json = NULL, *err = NULL, *path = NULL, url[64];
    int rc = EXIT_FAIL;
    const char *scenarios = embedded("scenarios");
    if (!scenarios) {
        fprintf(stderr, "arbiter demo: the persona scenarios are missing from this build\n");
        return EXIT_FAIL;
    }
    if (!(path = out_path(d, "scenarios.jsonl")) || cli_write_file("demo", path, scenarios))
        goto done;
    for (size_t j = 0; j < N_PERSONA_JUDGES; j++) {
        if (arb_sim_judge_parse(persona_judge_specs[j], &judges[j], &err)) {
            fprintf(stderr, "arbiter demo: %s\n", err ? err : "bad judge");
            goto done;
        }
    }
    arb_sim_params sp = arb_sim_default_params();
    sp.seed = 13;
    sp.judges = judges;
    sp.n_judges = N_PERSONA_JUDGES;
    if (arb_sim_server_start(&sp, &srv, &err)) {
        fprintf(stderr, "arbiter demo: cannot start the simulator: %s\n", err ? err : "?");
        goto done;
    }
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", arb_sim_server_port(srv));
    for (size_t j = 0; j < N_PERSONA_JUDGES; j++) {
        memset(&configs[j], 0, sizeof configs[j]);
        configs[j].sampling = arb_sampling_default();
        configs[j].base_url = url;
        configs[j].model = judges[j].model;
        configs[j].name = judges[j].model;
    }
    arb_persona_params pp = arb_persona_default_params();
    pp.scenarios_path = path;
    pp.categories = categories;
    pp.n_categories = sizeof categories / sizeof *categories;
    pp.judges = configs;
    pp.n_judges = N_PERSONA_JUDGES;
    pp.client.jobs = d->jobs;
    pp.progress = 0;
    arb_run_stats stats;
    arb_status st = arb_persona_run(d->store, &pp, &stats);
    if (st) {
        rc = store_failed(d, st);
        goto done;
    }
    say_both(d, "\nPersona bias (METHODS §9): 2 SIMULATED judges score 30 scenarios attributed to "
                "gender and religion identities, alone and in swapped pairs: %zu calls (%zu "
                "sent, %zu without valid scores)\n", stats.planned, stats.sent, stats.invalid);
    arb_persona_stats_params sp2 = arb_persona_stats_default_params();
    sp2.bootstrap = 200;
    if ((st = arb_persona_stats_compute(d->store, &sp2, &ps))) {
        rc = store_failed(d, st);
        goto done;
    }
    if (!(text = arb_persona_stats_to_text(ps)) || !(json = arb_persona_stats_to_json(ps))) {
        fprintf(stderr, "arbiter demo: out of memory\n");
        goto done;
    }
    fprintf(d->report, "%s", text);
    if (write_out(d, "persona.json", json)) goto done;
    /* Per judge and category: the combined score per identity (phase 1), whether any test is
    ** significant, and the first-shown win rate (phase 2). */
    int fair_clean = 1, biased_flagged[2] = {0, 0};
    for (size_t i = 0; i < arb_persona_stats_count(ps); i++) {
        const arb_persona_row *r = arb_persona_stats_row_at(ps, i);
        int any = 0;
        for (size_t t = 0; t < r->n_chi2; t++) any |= r->chi2[t].significant == 1;
        int biased = !strcmp(r->judge, "persona-biased");
        if (!biased && any) fair_clean = 0;
        if (biased && any) biased_flagged[strcmp(r->category, "gender") ? 1 : 0] = 1;
        say_both(d, "  %-15s %-9s phase %d:", r->judge, r->category, r->phase);
        if (r->phase == 1)
            for (size_t k = 0; k < r->n_identities; k++)
                say_both(d, " %s %.2f", r->identities[k], r->combined[k]);
        else {
            say_both(d, " wins");
            for (size_t k = 0; k < r->n_identities; k++)
                say_both(d, " %s %.0f%%", r->identities[k], 100 * r->win_rate[k]);
            say_both(d, "; first shown wins %.0f%% (position, not identity)",
                     100 * r->first_shown_rate);
        }
        say_both(d, "%s\n", any ? "  -> significant difference (Holm)" : "");
    }
    int ok = fair_clean && biased_flagged[0] && biased_flagged[1];
    say_both(d, "%s", ok ? "PERSONA BIAS RECOVERED: the injected gender and religion biases are "
                           "significant, the fair judge shows none.\n"
                         : "PERSONA BIAS NOT RECOVERED: the tests do not separate the biased "
                           "judge from the fair one.\n");
    if (!ok) *recovered = 0;
    rc = EXIT_OK;
done:
    arb_free(err);
    arb_free(text);
    arb_free(json);
    free(path);
    arb_persona_stats_destroy(ps);
    arb_sim_server_stop(srv);
    return rc;
}

int cmd_demo(int argc, char **argv)
{
    static const struct option opts[] = {{"out", required_argument, 0, 'o'},
                                         {"jobs", required_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    demo d = {.out = "arbiter-demo", .jobs = 16};
    long jobs;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'o': d.out = optarg; break;
        case 'j':
            if (cli_parse_int("--jobs", optarg, 1, 4096, &jobs)) return EXIT_USAGE;
            d.jobs = (int)jobs;
            break;
        case 'h': fputs(demo_help, stdout); return EXIT_OK;
        default: return cli_usage_error("demo", "unknown or incomplete option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_usage_error("demo", "unexpected argument \"%s\"", argv[optind]);

    int recovered = 1, rc;
    if ((rc = set_up(&d)) || (rc = judge_side_by_side(&d)) || (rc = run_debates(&d)) ||
        (rc = import_labels(&d)) || (rc = audit_judges(&d, &recovered)) ||
        (rc = audit_elsewhere(&d, &recovered)) ||
        (rc = rank_tournament(&d, &recovered)) || (rc = run_discussion(&d)) ||
        (rc = judge_languages(&d, &recovered)) || (rc = judge_personas(&d, &recovered)) ||
        (rc = write_report(&d, "report.html", "html")) ||
        (rc = write_report(&d, "report.md", "markdown")))
        goto done;
    printf("\nWrote %s/report.html (open it in a browser: charts of every result), %s/report.md,\n"
           "%s/report.txt (full audit per comparison and debate, agreement, factors, labels, "
           "ranking, discussions, consistency, persona), %s/audit.json, %s/consistency.json, "
           "%s/persona.json, %s/judges.yaml "
           "and %s/demo.db\n(try: arbiter audit --db %s/demo.db --by task --bootstrap 1000; "
           "arbiter rank --db %s/demo.db --method elo --bootstrap 200; arbiter consistency --db "
           "%s/demo.db --ensemble ml-careful,ml-medium,ml-rough)\n",
           d.out, d.out, d.out, d.out, d.out, d.out, d.out, d.out, d.out, d.out, d.out);
    rc = recovered ? EXIT_OK : EXIT_FAIL;
done:
    if (d.report) fclose(d.report);
    arb_store_close(d.store);
    arb_sim_server_stop(d.srv);
    arb_dataset_destroy(d.ds);
    return rc;
}
