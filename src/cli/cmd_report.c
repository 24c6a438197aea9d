/*
** cmd_report.c -- `arbiter report`: everything a database knows as one self-contained HTML
** file and/or Markdown (arb_report_write). Read-only: the database must exist. Each output is
** written to FILE.tmp and renamed over FILE once complete, so a failure never leaves a half
** report where a reader expects a whole one.
*/
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char report_help[] =
    "usage: arbiter report --db FILE [--html FILE] [--markdown FILE] [--title TEXT]\n"
    "                      [--bootstrap N] [--seed N] [--worst N] [--transcripts N]\n"
    "                      [--ensemble J1,J2,...]\n"
    "\n"
    "Writes a report of everything in the database: a run summary (judges, calls, tokens,\n"
    "invalid verdicts, wall time per protocol), verdict shares per comparison and run,\n"
    "position bias per judge with bootstrap intervals, agreement with the human experts and\n"
    "between judges, win rates, Bradley-Terry ratings, the Elo trend and peer-rank weights of\n"
    "stored battles, debate and discussion statistics with a few transcripts in full, and the\n"
    "items whose verdicts depended most on the order of the answers. With side-by-side items in\n"
    "several languages, the position-bias metrics also per judge and language; with pointwise\n"
    "judgments (arbiter grade), a cross-language consistency section (arbiter consistency's\n"
    "numbers: Cohen's and Fleiss' kappa per judge and language, accuracy or mean grade).\n"
    "\n"
    "The HTML is one file with inline CSS and SVG charts, no scripts, nothing loaded from the\n"
    "network; it prints well. The Markdown has the same sections and tables, without charts.\n"
    "Give --html, --markdown or both; '-' writes to stdout.\n"
    "\n"
    "  --db FILE          the database (it is only read)\n"
    "  --html FILE        write the HTML report there\n"
    "  --markdown FILE    write the Markdown report there\n"
    "  --title TEXT       the report's title (default \"arbiter report\")\n"
    "  --bootstrap N      resamples for the intervals of the audit, the ratings and the\n"
    "                     cross-language kappas\n"
    "                     (default 1000; 0 = no intervals)\n"
    "  --seed N           bootstrap seed (default 20261123)\n"
    "  --worst N          most order-dependent items shown with both answers (default 8)\n"
    "  --transcripts N    debates and discussions shown in full (default 3)\n"
    "  --ensemble J1,J2[,...]  the cross-language section also shows the majority vote of\n"
    "                     these judges (pointwise judgments), in priority order: a tie goes\n"
    "                     to the earliest (default: no ensemble)\n"
    "\n"
    "exit codes: 0 ok, 1 failure, 2 usage or bad input (e.g. no such database)\n";

/* Writes the report in format to path: stdout for "-", else path.tmp renamed to path. Returns
** the exit code after printing why on failure. */
static int write_report(arb_store *store, const arb_report_params *params, const char *format,
                        const char *path)
{
    cli_output out;
    int rc = cli_output_open("report", path, &out);
    if (rc) return rc;
    arb_status st = arb_report_write(store, params, format, out.f);
    if (st) rc = cli_store_failure("report", store, st);
    return cli_output_close("report", &out, rc);
}

/* The report's own options: the files to write and the report parameters. */
typedef struct report_choice {
    const char *html, *markdown;
    arb_report_params params;
    const char **ensemble; /* points into argv; freed by cmd_report */
} report_choice;

static int report_option(int c, const char *arg, void *ctx)
{
    report_choice *x = ctx;
    long n;
    switch (c) {
    case 'H': x->html = arg; return 1;
    case 'm': x->markdown = arg; return 1;
    case 't': x->params.title = arg; return 1;
    case 'w':
        if (cli_parse_int("--worst", arg, 0, 10000, &n)) return -1;
        x->params.worst_cases = (size_t)n;
        return 1;
    case 'T':
        if (cli_parse_int("--transcripts", arg, 0, 10000, &n)) return -1;
        x->params.transcripts = (size_t)n;
        return 1;
    case 'e':
        free(x->ensemble);
        x->ensemble = NULL;
        if ((n = cli_parse_ensemble("report", "--ensemble", (char *)arg, &x->ensemble)) < 0)
            return -1;
        x->params.ensemble = x->ensemble;
        x->params.n_ensemble = (size_t)n;
        return 1;
    default: return 0;
    }
}

int cmd_report(int argc, char **argv)
{
    static const struct option own[] = {{"html", required_argument, 0, 'H'},
                                        {"markdown", required_argument, 0, 'm'},
                                        {"title", required_argument, 0, 't'},
                                        {"worst", required_argument, 0, 'w'},
                                        {"transcripts", required_argument, 0, 'T'},
                                        {"ensemble", required_argument, 0, 'e'},
                                        {0, 0, 0, 0}};
    report_choice x = {.params = arb_report_default_params()};
    cli_read_args args = {.flags = CLI_READ_INTERVALS, .bootstrap = &x.params.bootstrap,
                          .seed = &x.params.seed};
    int rc = cli_read_options("report", report_help, argc, argv, own, report_option, &x, &args);
    const char *html = x.html, *markdown = x.markdown;
    if (rc != CLI_GO_ON) goto done;
    if (!html && !markdown) {
        rc = cli_usage_error("report", "give --html FILE, --markdown FILE or both");
        goto done;
    }
    if (html && markdown && !strcmp(html, markdown)) {
        rc = cli_usage_error("report", "--html and --markdown name the same file \"%s\"", html);
        goto done;
    }
    arb_store *store = NULL;
    if ((rc = cli_open_existing_store("report", args.db, &store))) goto done;
    if (html) rc = write_report(store, &x.params, "html", html);
    if (rc == EXIT_OK && markdown) rc = write_report(store, &x.params, "markdown", markdown);
    arb_store_close(store);
done:
    free(x.ensemble);
    return rc;
}
