/*
** main.c -- the arbiter command: dispatches to one file per subcommand.
*/
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage_text[] =
    "arbiter " ARB_VERSION " -- fast, honest LLM-as-a-judge evaluation\n"
    "\n"
    "usage: arbiter <command> [options]\n"
    "\n"
    "commands:\n"
    "  sbs          side-by-side judging: candidate vs baseline, both orders (METHODS §2.2)\n"
    "  grade        pointwise judging: is one answer correct, or its grade 1-5 (§8)\n"
    "  audit        position bias, consistency, fairness and agreement with experts\n"
    "  labels       import human (expert) labels; inter-annotator agreement\n"
    "  agreement    judge x judge agreement and disagreement\n"
    "  factors      which factors drive position consistency (stepwise AIC regression)\n"
    "  consistency  cross-language consistency of pointwise judgments: Fleiss' and Cohen's\n"
    "               kappa across languages, accuracy per language, judge ensembles (§8)\n"
    "  export       write the stored judgments (JSONL, CSV), battles or transcripts\n"
    "  batch        batch files: export the calls queued by --batch export (OpenAI Batch\n"
    "               API, vLLM run-batch), ingest their results\n"
    "  import       import judgments made elsewhere (generic JSONL/CSV: audit them without a\n"
    "               judge call) or battles: PRD Vicuna80 reviews, Chatbot Arena, FastChat\n"
    "  rank         rank models from battles: win rate, Elo, Bradley-Terry, peer rank\n"
    "  tournament   every pair of models, both orders, judged by every judge of a judges file\n"
    "  debate       soft/hard multi-agent verdicts: agent 1, agent 2, judge agent (§2.5)\n"
    "  discuss      peer discussion between two reviewers, or a self-discussion (§7)\n"
    "  discussion-stats  PDA, opinion altering/holding, position shares of discussions\n"
    "  persona      persona bias: the same responses attributed to different identities\n"
    "               (gender, race, religion), scored as JSON, phases 1 and 2 (§9)\n"
    "  report       everything in a database as one HTML file (charts) and/or Markdown\n"
    "  annotate     web page where experts label pairs blind (human labels, §4)\n"
    "  sim-server   run the SIMULATED judge server (a simulator, not a language model)\n"
    "  demo         judge the built-in demo benchmark with two simulated judges\n"
    "\n"
    "examples:\n"
    "  arbiter sbs --items items.jsonl --answers answers.jsonl --candidate M1 --baseline M2 \\\n"
    "      --judge-url http://127.0.0.1:8000/v1 --judge-model qwen2.5-7b-instruct \\\n"
    "      --prompt II-reason --options 4 --reps 1 --jobs 32 --db eval.db\n"
    "  arbiter labels import --db eval.db experts.jsonl\n"
    "  arbiter import judgments their-judgments.jsonl --db eval.db\n"
    "  arbiter audit --db eval.db [--by judge|task|candidate] [--bootstrap 1000] [--json]\n"
    "  arbiter agreement --db eval.db [--json]\n"
    "  arbiter factors --db eval.db [--target pc|pf] [--json]\n"
    "  arbiter consistency --db eval.db [--reference-language en] [--ensemble j1,j2,j3] [--json]\n"
    "  arbiter debate --mode soft --agents judges.yaml:a1,a2,judge --items items.jsonl \\\n"
    "      --answers answers.jsonl --candidate M1 --baseline M2 --db eval.db\n"
    "  arbiter discuss --reviewers judges.yaml:r1,r2 --leader random --turns 4 \\\n"
    "      --stop-on-agreement --items items.jsonl --answers answers.jsonl --pairs M1:M2 --db eval.db\n"
    "  arbiter discussion-stats --db eval.db [--json]\n"
    "  arbiter persona report --db eval.db [--category gender] [--bootstrap N --seed S] [--json]\n"
    "  arbiter grade --items parallel.jsonl --answer-from reference --mode grade --task qa \\\n"
    "      --judges judges.yaml:j1,j2,j3 --db eval.db\n"
    "  arbiter persona run --scenarios scenarios.jsonl --identities identities.yaml \\\n"
    "      --phase both --judges judges.yaml:j1,j2 --db eval.db\n"
    "\n"
    "'arbiter <command> --help' describes a command.\n"
    "exit codes: 0 ok, 1 failure, 2 usage or bad input, 3 budget reached (--budget-usd,\n"
    "--budget-tokens), 130 interrupted\n";

/* The running subcommand, set once by main(), so that value errors found deep in shared option
** parsing still name it. */
static const char *cli_command = "";

int cli_parse_int(const char *opt, const char *text, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        cli_usage_error(cli_command, "%s expects a whole number from %ld to %ld, got \"%s\"", opt,
                        lo, hi, text);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_double(const char *opt, const char *text, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < lo || v > hi) {
        cli_usage_error(cli_command, "%s expects a number from %g to %g, got \"%s\"", opt, lo, hi,
                        text);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_transport_option(int c, const char *arg, arb_client_params *client)
{
    long n;
    double x;
    switch (c) {
    case CLI_OPT_JOBS:
        if (cli_parse_int("--jobs", arg, 1, 4096, &n)) return -1;
        client->jobs = (int)n;
        return 1;
    case CLI_OPT_CONNECT_TIMEOUT:
        if (cli_parse_double("--connect-timeout", arg, 0.001, 3600, &x)) return -1;
        client->connect_timeout_ms = (long)(x * 1000);
        return 1;
    case CLI_OPT_TIMEOUT:
        if (cli_parse_double("--timeout", arg, 0.001, 86400, &x)) return -1;
        client->total_timeout_ms = (long)(x * 1000);
        return 1;
    case CLI_OPT_RETRIES:
        if (cli_parse_int("--retries", arg, 0, 100, &n)) return -1;
        client->max_retries = (int)n;
        return 1;
    case CLI_OPT_MAX_RETRY_WAIT:
        if (cli_parse_double("--max-retry-wait", arg, 0, 86400, &x)) return -1;
        client->max_retry_wait_ms = (long)(x * 1000);
        return 1;
    case CLI_OPT_TRANSPORT:
        if (strcmp(arg, "auto") && strcmp(arg, "curl")) {
            cli_usage_error(cli_command, "--transport expects auto or curl, got \"%s\"", arg);
            return -1;
        }
        client->transport = strcmp(arg, "curl") ? ARB_TRANSPORT_AUTO : ARB_TRANSPORT_CURL;
        return 1;
    default: return 0;
    }
}

int cli_sampling_option(int c, const char *arg, arb_sampling *sp)
{
    long n;
    double x;
    switch (c) {
    case CLI_OPT_TEMPERATURE:
        if (cli_parse_double("--temperature", arg, 0, 10, &x)) return -1;
        sp->temperature = x;
        return 1;
    case CLI_OPT_TOP_P:
        if (cli_parse_double("--top-p", arg, 0, 1, &x)) return -1;
        sp->top_p = x;
        return 1;
    case CLI_OPT_MAX_TOKENS:
        if (cli_parse_int("--max-tokens", arg, 1, 10000000, &n)) return -1;
        sp->max_tokens = (int)n;
        return 1;
    case CLI_OPT_FREQ:
        if (cli_parse_double("--frequency-penalty", arg, -2, 2, &x)) return -1;
        sp->frequency_penalty = x;
        return 1;
    case CLI_OPT_SEED:
        if (cli_parse_int("--seed", arg, 0, 2147483647L, &n)) return -1;
        sp->has_seed = 1;
        sp->seed = n;
        return 1;
    default: return 0;
    }
}
/* While the options are read, price->known collects which were given (1 in, 2 out, 4 cached,
** 8 batch discount); cli_price_finish turns it back into 0 or 1. */
int cli_price_option(int c, const char *arg, arb_price *price)
{
    double x;
    const char *name = c == CLI_OPT_PRICE_IN ? "--price-in" : c == CLI_OPT_PRICE_OUT ? "--price-out"
                     : c == CLI_OPT_PRICE_CACHED_IN ? "--price-cached-in"
                     : c == CLI_OPT_PRICE_BATCH_DISCOUNT ? "--price-batch-discount" : NULL;
    if (!name) return 0;
    if (cli_parse_double(name, arg, 0, c == CLI_OPT_PRICE_BATCH_DISCOUNT ? 1 : 1e6, &x)) return -1;
    if (c == CLI_OPT_PRICE_IN) price->input_per_mtok = x, price->known |= 1;
    else if (c == CLI_OPT_PRICE_OUT) price->output_per_mtok = x, price->known |= 2;
    else if (c == CLI_OPT_PRICE_CACHED_IN) price->cached_input_per_mtok = x, price->known |= 4;
    else price->batch_discount = x, price->known |= 8;
    return 1;
}

int cli_price_finish(const char *cmd, arb_price *price)
{
    int given = price->known;
    if (!given) return 0;
    if ((given & 3) != 3)
        return cli_usage_error(cmd, "a price needs both --price-in and --price-out (USD per "
                                    "million prompt / completion tokens)%s",
                               given & 8 ? "; --price-batch-discount is the share off that price"
                                         : "");
    if (!(given & 4)) price->cached_input_per_mtok = NAN;
    price->known = 1;
    return 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "arbiter %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see 'arbiter %s --help')\n", cmd);
    va_end(ap);
    return EXIT_USAGE;
}

static void on_signal(int sig)
{
    (void)sig;
    arb_request_stop();
}

void cli_install_signal_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int cli_exit_code(arb_status st)
{
    switch (st) {
    case ARB_OK: return EXIT_OK;
    case ARB_INVALID:
    case ARB_PARSE:
    case ARB_NOTFOUND: return EXIT_USAGE;
    case ARB_INTERRUPTED: return EXIT_INTERRUPTED;
    case ARB_BUDGET: return EXIT_BUDGET;
    default: return EXIT_FAIL;
    }
}

/* A cost for a summary line: "$X", "unknown (no price)", or "$X + N calls of unknown cost" when
** some replies reported no usage. Never prints 0 for a cost that is not known. */
static void format_cost(char *out, size_t size, int has_price, double known_usd, size_t unknown)
{
    if (!has_price) snprintf(out, size, "unknown (no price)");
    else if (unknown) snprintf(out, size, "$%.4f + %zu calls of unknown cost (no usage reported)", known_usd, unknown);
    else snprintf(out, size, "$%.4f", known_usd);
}

/* Set by --batch (one judging command per process): the summary then has batch lines. */
static int batch_mode;

/* The dry run's line for one judge: calls to send, token and cost estimates. */
static void print_judge_estimate(const arb_judge_spend *js)
{
    fprintf(stderr, "  judge %s: %zu calls to send, ~%lld prompt tokens; completion tokens ", js->name,
            js->to_send, js->est_prompt_tokens);
    if (js->est_completion_max >= 0) fprintf(stderr, "<= %lld (max_completion_tokens or max_tokens)", js->est_completion_max);
    else fprintf(stderr, "unbounded (neither max_completion_tokens nor max_tokens)");
    if (js->est_completion_typical >= 0)
        fprintf(stderr, ", ~%lld typical (mean of its stored calls)", js->est_completion_typical);
    if (!js->has_price) fprintf(stderr, "; cost unknown (no price)\n");
    else {
        fprintf(stderr, "; cost ");
        if (!isnan(js->est_cost_max)) fprintf(stderr, "<= $%.4f", js->est_cost_max);
        else fprintf(stderr, "unbounded");
        if (!isnan(js->est_cost_typical)) fprintf(stderr, ", ~$%.4f typical", js->est_cost_typical);
        if (batch_mode && js->batch_discount > 0)
            fprintf(stderr, " (batch price: %g%% off)", js->batch_discount * 100);
        else if (batch_mode)
            fprintf(stderr, " (batch: at the listed price, no batch_discount given)");
        fputc('\n', stderr);
    }
}

/* The batch lines of a run's summary (--batch). */
static void print_batch_stats(const char *what, const arb_run_stats *st)
{
    if (st->batch_status) {
        fprintf(stderr, "%s batch: %zu batches open: %zu running, %zu ended (collect them with "
                        "--batch collect or --batch wait)\n",
                what, st->batch_open, st->batch_running, st->batch_open - st->batch_running);
        return;
    }
    if (st->batch_collected)
        fprintf(stderr, "%s batch: %zu batches collected: %zu replies stored, %zu failed calls "
                        "stored (queued again)\n",
                what, st->batch_collected, st->batch_replies, st->batch_failed);
    if (st->batch_action == ARB_BATCH_WAIT)
        fprintf(stderr, "%s batch: %zu round%s of batches submitted, waited for, collected and "
                        "judged\n",
                what, st->batch_rounds, st->batch_rounds == 1 ? "" : "s");
    if ((st->batch_queued || st->batch_waiting) && st->batch_action == ARB_BATCH_NONE)
        fprintf(stderr,
                "%s batch: %zu calls queued, %zu wait for their replies (a later round: run "
                "this command again once the replies are stored)\n",
                what, st->batch_queued, st->batch_waiting);
    else if (st->batch_queued || st->batch_waiting)
        /* Batch API: queued calls go in the next submission; waiting ones once those are in */
        fprintf(stderr,
                "%s batch: %zu calls still to come: %zu queued%s, %zu wait for their replies "
                "(a later round)%s\n",
                what, st->batch_queued + st->batch_waiting, st->batch_queued,
                st->batch_action == ARB_BATCH_SUBMIT ? " (in open batches)"
                : st->batch_action == ARB_BATCH_WAIT ? " (not sent by this wait: an open batch of "
                                                       "another process holds them, or the last "
                                                       "round's batches stored no reply)"
                                                     : "",
                st->batch_waiting,
                st->batch_action == ARB_BATCH_SUBMIT
                    ? "; --batch collect or --batch wait, then another --batch submit sends the "
                      "next round"
                    : st->batch_running
                    ? "; batches still running hold some: --batch collect again once they end, "
                      "then another --batch submit sends the rest (or --batch wait does every "
                      "round)"
                    : "; another --batch submit sends them (or --batch wait does every round)");
    else
        fprintf(stderr, "%s batch: nothing to queue, every call of the plan is stored\n", what);
    if (st->batch_files)
        fprintf(stderr, "%s batch: %zu pending calls written in %zu file%s\n", what,
                st->batch_written, st->batch_files, st->batch_files == 1 ? "" : "s");
    if (st->batch_submitted || st->batch_running)
        fprintf(stderr, "%s batch: %zu batches submitted, %zu still running\n", what,
                st->batch_submitted, st->batch_running);
}

void cli_print_run_help(FILE *out)
{
    static const char transport[] = CLI_TRANSPORT_HELP, output[] = CLI_RUN_OUTPUT_HELP;
    fputs(transport, out);
    fputs(output, out);
}

void cli_print_run_stats(const char *what, const arb_run_stats *st, int dry_run)
{
    char cost[128];
    if (st->batch_status) {
        print_batch_stats(what, st);
        return;
    }
    if (st->unchanged_since_run)
        fprintf(stderr,
                "%s: inputs, judges and templates unchanged since run %lld, whose %zu judge calls "
                "are all still stored: nothing to send (--full-check checks every call)\n",
                what, st->unchanged_since_run, st->cached);
    if (dry_run) {
        fprintf(stderr,
                "%s plan: %zu judge calls, %zu already stored, %zu to send, "
                "~%lld prompt tokens to send (estimate: code points / 4 + 4 per message)\n",
                what, st->planned, st->cached, st->planned - st->cached, st->est_prompt_tokens);
        for (size_t j = 0; j < st->n_judges; j++)
            if (st->judges[j].to_send) print_judge_estimate(&st->judges[j]);
        return;
    }
    /* sent = ok + failed: every call that went out in this run and finished. */
    fprintf(stderr,
            "%s: %zu judge calls: %zu stored before, %zu sent (%zu ok, %zu failed), %zu without "
            "a valid verdict; %zu retries; tokens %lld prompt + %lld completion",
            what, st->planned, st->cached, st->sent, st->ok, st->failed, st->invalid,
            st->retries, st->prompt_tokens, st->completion_tokens);
    if (st->reasoning_tokens > 0) /* part of completion, as the servers count them */
        fprintf(stderr, " (%lld of the completion tokens reasoning)", st->reasoning_tokens);
    fprintf(stderr, "; %.2f s", st->seconds);
    if (st->sent && st->seconds > 0) fprintf(stderr, " (%.0f calls/s)", (double)st->sent / st->seconds);
    if (st->skipped) fprintf(stderr, "; %zu not needed (dialogues ended earlier)", st->skipped);
    fputc('\n', stderr);
    /* Spend of this run per judge: tokens as the replies' usage reports them. */
    for (size_t j = 0; j < st->n_judges; j++) {
        const arb_judge_spend *js = &st->judges[j];
        if (!js->sent) continue;
        format_cost(cost, sizeof cost, js->has_price, js->cost_usd, js->cost_unknown);
        fprintf(stderr, "  judge %s: %zu calls sent, tokens %lld prompt (%lld cached) + %lld "
                "completion (%lld reasoning), cost %s\n", js->name, js->sent, js->prompt_tokens,
                js->cached_tokens, js->completion_tokens, js->reasoning_tokens, cost);
        for (size_t k = 0; k < st->n_endpoints; k++) {
            const arb_endpoint_spend *e = &st->endpoints[k];
            if (strcmp(e->judge, js->name)) continue;
            fprintf(stderr, "    endpoint %s: %zu requests (retries included): %zu ok, %zu "
                    "answered 429, %zu failed, %zu cool-downs\n", e->url, e->requests, e->ok,
                    e->throttled, e->failed, e->cooldowns);
        }
    }
    if (batch_mode) print_batch_stats(what, st);
}

int cli_run_option(int c, const char *arg, arb_client_params *client, const char **db,
                   int *dry_run, int *progress)
{
    switch (c) {
    case CLI_OPT_BATCH: {
        static const struct {
            const char *name;
            arb_batch_action action;
        } modes[] = {{"export", ARB_BATCH_NONE},     {"submit", ARB_BATCH_SUBMIT},
                     {"status", ARB_BATCH_STATUS},   {"collect", ARB_BATCH_COLLECT},
                     {"wait", ARB_BATCH_WAIT}};
        for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
            if (!strcmp(arg, modes[i].name)) {
                batch_mode = 1;
                client->batch_export = 1;
                client->batch_action = modes[i].action;
                return 1;
            }
        fprintf(stderr, "arbiter: --batch: expected export, submit, status, collect or wait, "
                        "got \"%s\"\n", arg);
        return -1;
    }
    case CLI_OPT_POLL:
        return cli_parse_double("--poll", arg, 0.01, 86400, &client->batch_poll_s) ? -1 : 1;
    case CLI_OPT_OUT: client->batch_out = arg; return 1;
    case CLI_OPT_DB: *db = arg; return 1;
    case CLI_OPT_DRY_RUN: *dry_run = 1; return 1;
    case CLI_OPT_PROGRESS: *progress = 1; return 1;
    case CLI_OPT_NO_PROGRESS: *progress = 0; return 1;
    case CLI_OPT_BUDGET_USD:
        if (cli_parse_double("--budget-usd", arg, 1e-9, 1e12, &client->budget_usd)) return -1;
        return 1;
    case CLI_OPT_BUDGET_TOKENS: {
        long n;
        if (cli_parse_int("--budget-tokens", arg, 1, LONG_MAX, &n)) return -1;
        client->budget_tokens = n;
        return 1;
    }
    default: return cli_transport_option(c, arg, client);
    }
}

int cli_interval_option(int c, const char *arg, size_t *bootstrap, unsigned long long *seed,
                        double *level)
{
    long n;
    switch (c) {
    case 'n':
        if (cli_parse_int("--bootstrap", arg, 0, 1000000, &n)) return -1;
        *bootstrap = (size_t)n;
        return 1;
    case 's':
        if (cli_parse_int("--seed", arg, 0, 2147483647L, &n)) return -1;
        *seed = (unsigned long long)n;
        return 1;
    case 'l':
        if (!level) return 0;
        return cli_parse_double("--level", arg, 0.5, 0.999, level) ? -1 : 1;
    default: return 0;
    }
}

int cli_read_options(const char *cmd, const char *help, int argc, char **argv,
                     const struct option *own, cli_own_option_fn own_fn, void *ctx,
                     cli_read_args *a)
{
    static const struct option db_help[] = {{"db", required_argument, 0, 'd'},
                                            {"help", no_argument, 0, 'h'}};
    static const struct option json = {"json", no_argument, 0, 'j'};
    static const struct option output = {"output", required_argument, 0, 'o'};
    static const struct option intervals[] = {{"bootstrap", required_argument, 0, 'n'},
                                              {"seed", required_argument, 0, 's'}};
    static const struct option level = {"level", required_argument, 0, 'l'};
    struct option opts[32];
    size_t n = 0;
    opts[n++] = db_help[0];
    opts[n++] = db_help[1];
    if (a->flags & CLI_READ_JSON) opts[n++] = json;
    if (a->flags & CLI_READ_OUTPUT) opts[n++] = output;
    if (a->flags & CLI_READ_INTERVALS) {
        opts[n++] = intervals[0];
        opts[n++] = intervals[1];
        if (a->flags & CLI_READ_LEVEL) opts[n++] = level;
    }
    for (size_t k = 0; own && own[k].name; k++) {
        if (n + 1 >= sizeof opts / sizeof opts[0]) {
            fprintf(stderr, "arbiter %s: too many options\n", cmd);
            return EXIT_FAIL;
        }
        opts[n++] = own[k];
    }
    opts[n] = (struct option){0, 0, 0, 0};

    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int applied = 1;
        switch (c) {
        case 'd': a->db = optarg; break;
        case 'j': a->json = 1; break;
        case 'o': a->output = optarg; break;
        case 'h': fputs(help, stdout); return EXIT_OK;
        case '?':
        case ':': applied = 0; break;
        default:
            applied = a->flags & CLI_READ_INTERVALS
                          ? cli_interval_option(c, optarg, a->bootstrap, a->seed, a->level)
                          : 0;
            if (!applied && own_fn) applied = own_fn(c, optarg, ctx);
        }
        if (applied < 0) return EXIT_USAGE;
        if (!applied)
            return cli_usage_error(cmd, "unknown or incomplete option \"%s\"", argv[optind - 1]);
    }
    if (optind < argc) return cli_usage_error(cmd, "unexpected argument \"%s\"", argv[optind]);
    if (!a->db) return cli_usage_error(cmd, "missing --db");
    return CLI_GO_ON;
}

int cli_run_result(const char *cmd, arb_store *store, arb_status st, const arb_run_stats *stats,
                   int dry_run)
{
    if (st && st != ARB_INTERRUPTED && st != ARB_BUDGET) return cli_store_failure(cmd, store, st);
    cli_print_run_stats(cmd, stats, dry_run);
    if (st == ARB_INTERRUPTED || st == ARB_BUDGET) {
        fprintf(stderr, "arbiter %s: %s\n", cmd, arb_store_errmsg(store));
        return cli_exit_code(st);
    }
    if (stats->failed) {
        fprintf(stderr,
                "arbiter %s: %zu calls failed after retries and count as verdict E (reasons in "
                "the store; 'arbiter export' shows them); run the same command again to retry "
                "them\n",
                cmd, stats->failed);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

int cli_write_file(const char *cmd, const char *path, const char *text)
{
    if (!strcmp(path, "-")) {
        fputs(text, stdout);
        return 0;
    }
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) {
        fprintf(stderr, "arbiter %s: cannot write %s: %s\n", cmd, path, strerror(errno));
        return -1;
    }
    return 0;
}

int cli_output_open(const char *cmd, const char *path, cli_output *out)
{
    *out = (cli_output){.f = stdout, .path = path};
    if (!path || !strcmp(path, "-")) return 0;
    size_t len = strlen(path);
    if (!(out->tmp = malloc(len + 5))) {
        fprintf(stderr, "arbiter %s: out of memory\n", cmd);
        return EXIT_FAIL;
    }
    memcpy(out->tmp, path, len);
    memcpy(out->tmp + len, ".tmp", 5);
    if (!(out->f = fopen(out->tmp, "w"))) {
        fprintf(stderr, "arbiter %s: cannot write %s: %s\n", cmd, out->tmp, strerror(errno));
        free(out->tmp);
        *out = (cli_output){0};
        return EXIT_FAIL;
    }
    return 0;
}

int cli_output_close(const char *cmd, cli_output *out, int rc)
{
    if (!out->tmp) {
        if (out->f && fflush(out->f) && rc == EXIT_OK) {
            fprintf(stderr, "arbiter %s: cannot write standard output: %s\n", cmd,
                    strerror(errno));
            rc = EXIT_FAIL;
        }
        return rc;
    }
    if (fclose(out->f) && rc == EXIT_OK) {
        fprintf(stderr, "arbiter %s: cannot write %s: %s\n", cmd, out->tmp, strerror(errno));
        rc = EXIT_FAIL;
    }
    if (rc == EXIT_OK && rename(out->tmp, out->path)) {
        fprintf(stderr, "arbiter %s: cannot rename %s to %s: %s\n", cmd, out->tmp, out->path,
                strerror(errno));
        rc = EXIT_FAIL;
    }
    if (rc != EXIT_OK) unlink(out->tmp);
    free(out->tmp);
    *out = (cli_output){0};
    return rc;
}

void cli_close_store(arb_store *store, int rc)
{
    if (rc != EXIT_OK) arb_store_close_unused(store);
    else arb_store_close(store);
}

void cli_close_run_store(arb_store *store, int rc, int dry_run)
{
    cli_close_store(store, dry_run ? EXIT_FAIL : rc);
}

int cli_open_existing_store(const char *cmd, const char *path, arb_store **out)
{
    struct stat sb;
    *out = NULL;
    if (strcmp(path, ":memory:") != 0 && stat(path, &sb) != 0) {
        fprintf(stderr, "arbiter %s: %s: %s (a database is made by 'arbiter %s')\n", cmd, path,
                strerror(errno), strcmp(cmd, "consistency") ? "sbs" : "grade");
        return EXIT_USAGE;
    }
    arb_status st = arb_store_open(path, out);
    if (st) {
        fprintf(stderr, "arbiter %s: %s\n", cmd, *out ? arb_store_errmsg(*out) : arb_strerror(st));
        arb_store_close(*out);
        *out = NULL;
        return cli_exit_code(st) == EXIT_OK ? EXIT_FAIL : cli_exit_code(st);
    }
    return 0;
}

/* Splits spec into the judges file and the names part ("FILE:names", or names alone when
** file is given). *path gets a copy of the file part (caller frees; NULL when file is given).
** Returns 0, or the exit code after printing why. */
static int split_judges_spec(const char *cmd, const char *option, const char *spec,
                             const char **file, const char **names, char **path)
{
    *path = NULL;
    *names = spec;
    if (*file) return 0;
    const char *colon = strchr(spec, ':');
    if (!colon || colon == spec)
        return cli_usage_error(cmd, "%s expects FILE:name,... (a judges file and the judges' "
                                    "names in it), or give the file with --judges; got \"%s\"",
                               option, spec);
    if (!(*path = strndup(spec, (size_t)(colon - spec)))) {
        fprintf(stderr, "arbiter %s: out of memory\n", cmd);
        return EXIT_FAIL;
    }
    *file = *path;
    *names = colon + 1;
    return 0;
}

/* Looks up each comma-separated name of names in the loaded file and copies its config to
** out[count++] (at most max). Returns 0, or the exit code after printing why. */
static int find_judges(const char *cmd, const char *option, const char *names, const char *file,
                       const arb_judges_file *loaded, size_t max, const char *expect,
                       arb_judge_config *out, size_t *count)
{
    size_t n_judges = arb_judges_file_count(loaded);
    *count = 0;
    for (const char *p = names;; p++) {
        size_t len = strcspn(p, ",");
        if (len == 0 || *count == max)
            return cli_usage_error(cmd, "%s expects %s judge names separated by commas, got \"%s\"",
                                   option, expect, names);
        size_t i;
        for (i = 0; i < n_judges; i++) {
            const arb_judge_config *j = arb_judges_file_judge(loaded, i);
            const char *name = j->name ? j->name : j->model;
            if (strlen(name) == len && !strncmp(name, p, len)) break;
        }
        if (i == n_judges)
            return cli_usage_error(cmd, "%s: no judge named \"%.*s\" in %s", option, (int)len, p,
                                   file);
        out[*count] = *arb_judges_file_judge(loaded, i);
        if (!out[*count].name) out[*count].name = out[*count].model;
        (*count)++;
        p += len;
        if (!*p) return 0;
    }
}

/* Loads a judges file for cli_pick_judges and cli_pick_judge_list. */
static int load_judges_file(const char *cmd, const char *file, arb_judges_file **loaded)
{
    char *err = NULL;
    arb_status st = arb_judges_file_load(file, loaded, &err);
    if (!st) return 0;
    fprintf(stderr, "arbiter %s: %s\n", cmd, err ? err : arb_strerror(st));
    arb_free(err);
    return st == ARB_NOMEM ? EXIT_FAIL : EXIT_USAGE;
}

int cli_pick_judges(const char *cmd, const char *option, const char *spec, const char *file,
                    size_t n, arb_judge_config *out, arb_judges_file **loaded)
{
    *loaded = NULL;
    char *path = NULL, expect[32];
    const char *names;
    int rc = split_judges_spec(cmd, option, spec, &file, &names, &path);
    if (!rc) rc = load_judges_file(cmd, file, loaded);
    snprintf(expect, sizeof expect, "exactly %zu", n);
    size_t count = 0;
    if (!rc) rc = find_judges(cmd, option, names, file, *loaded, n, expect, out, &count);
    if (!rc && count != n)
        rc = cli_usage_error(cmd, "%s expects exactly %zu judge names separated by commas, got "
                                  "\"%s\"", option, n, names);
    free(path);
    return rc;
}

int cli_pick_judge_list(const char *cmd, const char *option, const char *spec,
                        arb_judge_config **out, size_t *n, arb_judges_file **loaded)
{
    *loaded = NULL;
    *out = NULL;
    *n = 0;
    const char *file = NULL, *names = NULL;
    char *path = NULL;
    int whole_file = !strchr(spec, ':');
    int rc = whole_file ? 0 : split_judges_spec(cmd, option, spec, &file, &names, &path);
    if (whole_file) file = spec;
    if (!rc) rc = load_judges_file(cmd, file, loaded);
    size_t max = 0;
    if (!rc) {
        max = whole_file ? arb_judges_file_count(*loaded) : 1;
        for (const char *c = names; !whole_file && *c; c++) max += *c == ',';
        if (!(*out = calloc(max ? max : 1, sizeof **out))) {
            fprintf(stderr, "arbiter %s: out of memory\n", cmd);
            rc = EXIT_FAIL;
        }
    }
    if (!rc && whole_file) {
        for (size_t i = 0; i < max; i++) {
            (*out)[i] = *arb_judges_file_judge(*loaded, i);
            if (!(*out)[i].name) (*out)[i].name = (*out)[i].model;
        }
        *n = max;
        if (!max) rc = cli_usage_error(cmd, "%s: %s lists no judge", option, file);
    } else if (!rc) {
        rc = find_judges(cmd, option, names, file, *loaded, max, "one or more", *out, n);
    }
    free(path);
    return rc;
}

/* *store: NULL, or a store the caller opened already (then kept, not opened again). */
static int open_run_inputs(const char *cmd, const char *items, const char *answers,
                           const char *db, int indexed, arb_dataset **ds, arb_store **store)
{
    if (!(*ds = arb_dataset_create())) {
        fprintf(stderr, "arbiter %s: out of memory\n", cmd);
        return EXIT_FAIL;
    }
    if (indexed ? arb_dataset_load_indexed(*ds, items, answers)
                : arb_dataset_load(*ds, items, answers)) {
        fprintf(stderr, "arbiter %s: %s\n", cmd, arb_dataset_errmsg(*ds));
        return EXIT_USAGE;
    }
    arb_status st = *store ? ARB_OK : arb_store_open(db, store);
    if (st) {
        fprintf(stderr, "arbiter %s: %s\n", cmd, *store ? arb_store_errmsg(*store) : arb_strerror(st));
        return EXIT_FAIL;
    }
    cli_install_signal_handlers();
    return EXIT_OK;
}

int cli_open_run_inputs(const char *cmd, const char *items, const char *answers,
                        const char *db, arb_dataset **ds, arb_store **store)
{
    *store = NULL;
    return open_run_inputs(cmd, items, answers, db, 0, ds, store);
}

int cli_open_run_inputs_indexed(const char *cmd, const char *items, const char *answers,
                                const char *db, arb_dataset **ds, arb_store **store)
{
    return open_run_inputs(cmd, items, answers, db, 1, ds, store);
}

long cli_parse_pairs(const char *cmd, const char *option, char *text, arb_model_pair **out)
{
    size_t n = 1;
    for (const char *c = text; *c; c++) n += *c == ',';
    *out = calloc(n, sizeof **out);
    if (!*out) {
        fprintf(stderr, "arbiter %s: out of memory\n", cmd);
        return -1;
    }
    size_t k = 0;
    for (char *save = NULL, *tok = strtok_r(text, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (!colon || colon == tok || !colon[1] || strchr(colon + 1, ':')) {
            cli_usage_error(cmd, "%s expects X:Y[,X:Y...] (two model names per pair), got \"%s\"",
                            option, tok);
            return -1;
        }
        *colon = '\0';
        (*out)[k++] = (arb_model_pair){.first = tok, .second = colon + 1};
    }
    if (k == 0) {
        cli_usage_error(cmd, "%s names no pair", option);
        return -1;
    }
    return (long)k;
}

long cli_parse_ensemble(const char *cmd, const char *option, char *text, const char ***out)
{
    size_t n = 1;
    for (const char *c = text; *c; c++) n += *c == ',';
    *out = calloc(n, sizeof **out);
    if (!*out) {
        fprintf(stderr, "arbiter %s: out of memory\n", cmd);
        return -1;
    }
    char *p = text;
    for (size_t k = 0; k < n; k++) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (!*p) {
            cli_usage_error(cmd, "%s expects judge names separated by commas, got an empty name",
                            option);
            return -1;
        }
        for (size_t j = 0; j < k; j++)
            if (!strcmp((*out)[j], p)) {
                cli_usage_error(cmd, "%s names judge \"%s\" twice", option, p);
                return -1;
            }
        (*out)[k] = p;
        p = comma ? comma + 1 : p;
    }
    if (n < 2) {
        cli_usage_error(cmd, "%s needs at least two judges (J1,J2[,J3...]), got \"%s\"", option,
                        text);
        return -1;
    }
    return (long)n;
}

int cli_store_failure(const char *cmd, arb_store *store, arb_status st)
{
    fprintf(stderr, "arbiter %s: %s\n", cmd, arb_store_errmsg(store));
    return cli_exit_code(st);
}

int cli_emit(const char *cmd, const char *path, char *text)
{
    if (!text) {
        fprintf(stderr, "arbiter %s: out of memory\n", cmd);
        return EXIT_FAIL;
    }
    int rc = cli_write_file(cmd, path, text) ? EXIT_FAIL : EXIT_OK;
    arb_free(text);
    return rc;
}

/* Commands that send judge calls at scale: their heap is run with transparent huge pages. */
static int judges_at_scale(const char *cmd)
{
    static const char *const names[] = {"sbs", "grade", "batch", "tournament",
                                        "debate", "discuss", "persona"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(cmd, names[i])) return 1;
    return 0;
}

/* Starts this program again with glibc's malloc asking for transparent huge pages
** (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, glibc >= 2.35; read only when a process starts, so
** it cannot be set from here by mallopt). hugetlb=1 advises the main heap and large mappings.
** Measured on sbs (bench/README.md, 2026-11-28): page faults at 20,000 items ~23,000 -> ~5,000,
** CPU ~0.85x; at 100,000 items 80,700 -> 11,700, peak memory 198 -> 202 MB. Until 2026-11-28
** evening it also set arena_max=1 so that the writer thread's arena (which hugetlb=1 does not
** advise) shared the main heap; the two threads then met on that arena's lock in every malloc
** and free of a request or reply, and two arenas cost less: CPU ratio of pairs 0.91 with THP
** "always", 0.92 with "madvise" (bench/README.md "One arena or two"). Returns only when it
** does not restart: GLIBC_TUNABLES already set (the user's own choice, an empty value
** included), under valgrind (its tools follow no exec by default), or when the exec fails,
** which changes nothing. */
static void restart_with_huge_pages(char **argv)
{
#if defined(__GLIBC__) && defined(__linux__) && \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
    if (getenv("GLIBC_TUNABLES")) return;
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload")) return;
    if (setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    unsetenv("GLIBC_TUNABLES");
#else
    (void)argv;
#endif
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "--version")) {
        printf("arbiter %s\n", ARB_VERSION);
        return EXIT_OK;
    }
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } commands[] = {{"sbs", cmd_sbs},
                    {"grade", cmd_grade},
                    {"audit", cmd_audit},
                    {"export", cmd_export},
                    {"import", cmd_import},
                    {"batch", cmd_batch},
                    {"rank", cmd_rank},
                    {"sim-server", cmd_sim_server},
                    {"demo", cmd_demo},
                    {"labels", cmd_labels},
                    {"agreement", cmd_agreement},
                    {"factors", cmd_factors},
                    {"tournament", cmd_tournament},
                    {"debate", cmd_debate},
                    {"discuss", cmd_discuss},
                    {"discussion-stats", cmd_discussion_stats},
                    {"report", cmd_report},
                    {"consistency", cmd_consistency},
                    {"persona", cmd_persona},
                    {"annotate", cmd_annotate}};
    if (judges_at_scale(cmd)) restart_with_huge_pages(argv);
    /* the CLI reads no SQLite memory statistics: a mutex less on every SQLite allocation */
    (void)arb_store_setup_process();
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name)) {
            cli_command = commands[i].name;
            return commands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "arbiter: unknown command \"%s\"\n(see 'arbiter --help')\n", cmd);
    return EXIT_USAGE;
}
