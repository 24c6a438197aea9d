/*
** cli.h -- what the arbiter subcommands share. The CLI uses only the public header arbiter.h:
** anything it does, a C program linking libarbiter can do.
** Exit codes: 0 ok, 1 failure (including judge calls that failed after retries), 2 usage or bad
** input, 3 budget reached (--budget-usd/--budget-tokens), 130 interrupted.
*/
#ifndef ARB_CLI_H
#define ARB_CLI_H

#include "arbiter.h"

#include <getopt.h>

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_BUDGET = 3, EXIT_INTERRUPTED = 130 };

typedef struct arb_cli_embedded_file {
    const char *name;
    const char *text;
} arb_cli_embedded_file;
extern const arb_cli_embedded_file arb_cli_demo_files[]; /* the demo JSONL files, generated */

int cmd_sbs(int argc, char **argv);
int cmd_grade(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_rank(int argc, char **argv);
int cmd_sim_server(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_labels(int argc, char **argv);
int cmd_agreement(int argc, char **argv);
int cmd_factors(int argc, char **argv);
int cmd_tournament(int argc, char **argv);
int cmd_debate(int argc, char **argv);
int cmd_discuss(int argc, char **argv);
int cmd_discussion_stats(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_annotate(int argc, char **argv);
int cmd_consistency(int argc, char **argv);
int cmd_persona(int argc, char **argv);
/* `arbiter persona report` (cmd_persona_report.c), called by cmd_persona's dispatcher. */
int cmd_persona_report(int argc, char **argv);

/* The transport options every judging command shares (sbs, tournament): help text, getopt
** entries (values CLI_OPT_JOBS...), and their parsing into the client parameters. */
#define CLI_TRANSPORT_HELP                                                                       \
    "transport:\n"                                                                                \
    "  --jobs N                requests in flight (default 32; lowered while a server says 429)\n" \
    "  --connect-timeout S     seconds (default 10)\n"                                            \
    "  --timeout S             seconds per attempt (default 300)\n"                               \
    "  --retries N             retries on 429/5xx/timeouts/connection errors (default 6)\n" \
    "  --max-retry-wait S      longest wait before a retry, whatever a server's Retry-After\n"  \
    "                          asks (default 60; there is no run deadline, so this bounds\n"     \
    "                          every wait of a run)\n"                                          \
    "  --transport auto|curl   auto (default): plain http:// judges over arbiter's own\n"       \
    "                          keep-alive sockets, https and proxies over libcurl; curl: all\n" \
    "                          over libcurl (also ARBITER_TRANSPORT=curl)\n"
/* The output section and exit codes of the judging commands' help. */
#define CLI_RUN_OUTPUT_HELP                                                                      \
    "output:\n"                                                                                   \
    "  --db FILE               SQLite database (created if missing)\n"                            \
    "  --dry-run               print the plan and send nothing, store nothing: calls to send,\n" \
    "                          per judge estimated prompt tokens (code points / 4 + 4 per\n"    \
    "                          message), completion tokens (max_tokens per call: an upper\n"    \
    "                          bound; typical: the mean of the judge's stored calls) and cost\n"\
    "  --progress / --no-progress   progress line on stderr (default: when it is a terminal)\n"   \
    "budget (README \"Cost and budgets\"):\n"                                                    \
    "  --budget-usd X          start no call once the plan's spend (its calls already stored,\n"\
    "                          earlier runs included) plus the estimates of the calls in\n"     \
    "                          flight and of the next one would pass X dollars; calls in\n"     \
    "                          flight finish and are stored, then exit 3. A rerun with a\n"     \
    "                          larger budget continues where it stopped. Needs a price for\n"   \
    "                          every judge\n"                                                    \
    "  --budget-tokens N       the same in prompt + completion tokens\n"                         \
    "  --batch export|submit|status|collect|wait [--out F] [--poll S]  Batch API / batch\n"   \
    "                          files instead of sending: see 'arbiter batch --help'\n"          \
    "\n"                                                                                          \
    "exit codes: 0 ok, 1 failure or some calls failed after retries (run again to retry them),\n" \
    "2 usage or bad input, 3 budget reached (rerun with a larger budget to continue), 130\n"    \
    "interrupted\n"
enum { CLI_OPT_JOBS = 0x1000, CLI_OPT_CONNECT_TIMEOUT, CLI_OPT_TIMEOUT, CLI_OPT_RETRIES,
       CLI_OPT_MAX_RETRY_WAIT, CLI_OPT_TRANSPORT };
#define CLI_TRANSPORT_OPTIONS                                                                    \
    {"jobs", required_argument, 0, CLI_OPT_JOBS},                                                \
        {"connect-timeout", required_argument, 0, CLI_OPT_CONNECT_TIMEOUT},                      \
        {"timeout", required_argument, 0, CLI_OPT_TIMEOUT},                                      \
        {"retries", required_argument, 0, CLI_OPT_RETRIES},                                      \
        {"max-retry-wait", required_argument, 0, CLI_OPT_MAX_RETRY_WAIT},                        \
        {"transport", required_argument, 0, CLI_OPT_TRANSPORT}
/* Applies transport option c with its argument: 1 when applied, 0 when c is not a transport
** option, -1 after printing why the value is bad. */
int cli_transport_option(int c, const char *arg, arb_client_params *client);
/* The options every judging run shares: transport, --db, --dry-run, --progress/--no-progress
** (getopt entries and their parsing, which returns as cli_transport_option does). */
enum { CLI_OPT_DB = 0x1100, CLI_OPT_DRY_RUN, CLI_OPT_PROGRESS, CLI_OPT_NO_PROGRESS,
       CLI_OPT_BUDGET_USD, CLI_OPT_BUDGET_TOKENS, CLI_OPT_BATCH, CLI_OPT_OUT, CLI_OPT_POLL };
#define CLI_RUN_OPTIONS                                                                          \
    CLI_TRANSPORT_OPTIONS, {"db", required_argument, 0, CLI_OPT_DB},                             \
        {"dry-run", no_argument, 0, CLI_OPT_DRY_RUN},                                            \
        {"progress", no_argument, 0, CLI_OPT_PROGRESS},                                          \
        {"no-progress", no_argument, 0, CLI_OPT_NO_PROGRESS},                                    \
        {"budget-usd", required_argument, 0, CLI_OPT_BUDGET_USD},                                \
        {"budget-tokens", required_argument, 0, CLI_OPT_BUDGET_TOKENS},                                                                        \
        {"batch", required_argument, 0, CLI_OPT_BATCH},                                          \
        {"out", required_argument, 0, CLI_OPT_OUT},                                              \
        {"poll", required_argument, 0, CLI_OPT_POLL}
int cli_run_option(int c, const char *arg, arb_client_params *client, const char **db,
                   int *dry_run, int *progress);

/* The sampling options of a judge given on the command line (sbs, grade): --temperature,
** --top-p, --max-tokens, --frequency-penalty, --seed (getopt entries and their parsing into sp,
** which returns as cli_transport_option does). */
enum { CLI_OPT_TEMPERATURE = 0x1200, CLI_OPT_TOP_P, CLI_OPT_MAX_TOKENS, CLI_OPT_FREQ,
       CLI_OPT_SEED };
#define CLI_SAMPLING_OPTIONS                                                                     \
    {"temperature", required_argument, 0, CLI_OPT_TEMPERATURE},                                  \
        {"top-p", required_argument, 0, CLI_OPT_TOP_P},                                          \
        {"max-tokens", required_argument, 0, CLI_OPT_MAX_TOKENS},                                \
        {"frequency-penalty", required_argument, 0, CLI_OPT_FREQ},                               \
        {"seed", required_argument, 0, CLI_OPT_SEED}
int cli_sampling_option(int c, const char *arg, arb_sampling *sp);
/* The price of a judge given on the command line (sbs, grade): --price-in X, --price-out Y
** (USD per million prompt / completion tokens, both or neither) and --price-cached-in Z
** (optional), --price-batch-discount F (optional: the share off for calls answered through a
** Batch API). cli_price_option returns as cli_transport_option does; cli_price_finish checks
** the combination once the options are read (0, or the exit code after printing why). */
enum { CLI_OPT_PRICE_IN = 0x1300, CLI_OPT_PRICE_OUT, CLI_OPT_PRICE_CACHED_IN,
       CLI_OPT_PRICE_BATCH_DISCOUNT };
#define CLI_PRICE_OPTIONS                                                                        \
    {"price-in", required_argument, 0, CLI_OPT_PRICE_IN},                                        \
        {"price-out", required_argument, 0, CLI_OPT_PRICE_OUT},                                  \
        {"price-cached-in", required_argument, 0, CLI_OPT_PRICE_CACHED_IN},                      \
        {"price-batch-discount", required_argument, 0, CLI_OPT_PRICE_BATCH_DISCOUNT}
#define CLI_PRICE_HELP                                                                           \
    "  --price-in X --price-out Y   the judge's price in USD per million prompt / completion\n" \
    "                          tokens (both or neither; default: no price, costs \"unknown\")\n" \
    "  --price-cached-in Z     USD per million cached prompt tokens (default: --price-in)\n"  \
    "  --price-batch-discount F  the share off every price for calls answered through a\n"   \
    "                          Batch API (--batch, batch ingest), 0..1: 0.5 = half price\n"   \
    "                          (OpenAI's Batch API); default 0, the same price\n"
int cli_price_option(int c, const char *arg, arb_price *price);
int cli_price_finish(const char *cmd, arb_price *price);
/* Parses a whole number / a real in [lo, hi] for option name; prints an error naming the running
** subcommand (as cli_usage_error does) and returns -1 when the text is not one. */
int cli_parse_int(const char *opt, const char *text, long lo, long hi, long *out);
int cli_parse_double(const char *opt, const char *text, double lo, double hi, double *out);
/* Prints "arbiter <cmd>: <message>" and a hint to --help; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Installs SIGINT/SIGTERM handlers that call arb_request_stop(). */
void cli_install_signal_handlers(void);
/* Maps a library status to an exit code: bad input and invalid arguments are 2. */
int cli_exit_code(arb_status st);
/* Prints the summary of a run to stderr. */
/* Prints the options every judging command shares (CLI_TRANSPORT_HELP, then
** CLI_RUN_OUTPUT_HELP) after a command's own help: apart, because one literal of a command's
** whole help would pass the 4095 characters C99 guarantees. */
void cli_print_run_help(FILE *out);
void cli_print_run_stats(const char *what, const arb_run_stats *st, int dry_run);
/* The interval options of the reading commands, as getopt values 'n' (--bootstrap N), 's'
** (--seed N) and 'l' (--level X; only when level is not NULL): 1 when c was one and is
** applied, 0 when not, -1 after printing why the value is bad. */
int cli_interval_option(int c, const char *arg, size_t *bootstrap, unsigned long long *seed,
                        double *level);
/* The exit code of a judging run that returned st: prints the store's message on failure, else
** the run's summary and, when interrupted or some calls failed, what to do next. */
int cli_run_result(const char *cmd, arb_store *store, arb_status st, const arb_run_stats *stats,
                   int dry_run);
/* What every judging command does before its run: loads the items and answers (bad input:
** exit 2), opens (creating) the store, installs the signal handlers. Returns 0 or the exit code
** after printing why; the caller destroys *ds and closes *store (cli_close_store) either way. */
int cli_open_run_inputs(const char *cmd, const char *items, const char *answers,
                        const char *db, arb_dataset **ds, arb_store **store);
/* The same with the dataset indexed (arb_dataset_load_indexed), for arbiter sbs, grade,
** tournament, debate and discuss: the texts are read again slice by slice, so memory does not
** hold them all (answers NULL: items only). *store: NULL, or a store already open (sbs's rerun
** check opened it), used as it is:
** opening a store again costs as much as creating its schema (~0.12 G instructions, 13
** migrations) when the check created it. */
int cli_open_run_inputs_indexed(const char *cmd, const char *items, const char *answers,
                                const char *db, arb_dataset **ds, arb_store **store);
/* Splits "X:Y,X2:Y2" (option's value) in place into pairs (caller frees *out). Returns the
** count, or -1 after printing why. */
long cli_parse_pairs(const char *cmd, const char *option, char *text, arb_model_pair **out);
/* Splits an ensemble "J1,J2,J3" (option's value) in place into judge names in priority order
** (*out, freed by the caller, points into text): at least two, none empty, none twice. Returns
** the count, or -1 after printing why (*out may then be set: free it). */
long cli_parse_ensemble(const char *cmd, const char *option, char *text, const char ***out);
/* Looks up judges by name in a judges file: spec is "FILE:name,name,..." or, when file is not
** NULL, "name,name,...". Exactly n names must be given; out[i] gets a copy of each config
** (strings borrowed from *loaded, which the caller destroys). Returns 0 or the exit code after
** printing why. */
int cli_pick_judges(const char *cmd, const char *option, const char *spec, const char *file,
                    size_t n, arb_judge_config *out, arb_judges_file **loaded);
/* Like cli_pick_judges with any number of names: spec is "FILE:name,name,..." or, without a
** colon, a judges file whose every judge is taken. *out gets the configs (caller frees the
** array; strings borrowed from *loaded, which the caller destroys) and *n their count (>= 1).
** Returns 0 or the exit code after printing why. */
int cli_pick_judge_list(const char *cmd, const char *option, const char *spec,
                        arb_judge_config **out, size_t *n, arb_judges_file **loaded);
/* Writes text to path ("-" = stdout). Returns 0 or -1 after printing an error. */
int cli_write_file(const char *cmd, const char *path, const char *text);
/* The options of the commands that read a store (audit, agreement, factors, discussion-stats,
** labels summary, export, report): --db FILE and --help always; --json, --output FILE and the
** interval options (--bootstrap/--seed, and --level) when the flags say so. */
enum { CLI_READ_JSON = 1, CLI_READ_OUTPUT = 2, CLI_READ_INTERVALS = 4, CLI_READ_LEVEL = 8 };
typedef struct cli_read_args {
    unsigned flags;               /* CLI_READ_* */
    const char *db;               /* --db, required */
    const char *output;           /* --output (the caller's default is kept when not given) */
    int json;                     /* --json */
    size_t *bootstrap;            /* --bootstrap, --seed, --level: with CLI_READ_INTERVALS */
    unsigned long long *seed;
    double *level;                /* with CLI_READ_LEVEL */
} cli_read_args;
/* A command's own option c with its argument (getopt values other than 'd' 'h' and those of the
** options its flags enable: 'j' 'o' 'n' 's' 'l'): 1 when applied, 0 when unknown, -1 after
** printing why the value is bad. */
typedef int (*cli_own_option_fn)(int c, const char *arg, void *ctx);
enum { CLI_GO_ON = -1 };
/* Parses argv (argv[0] is the command) with the shared options of a reading command and own[]
** (NULL or terminated by a zero entry; at most 24), whose values go to own_fn. Prints help and
** usage errors; checks that --db was given and nothing else is left. Returns CLI_GO_ON when the
** command should run, else the exit code to return. */
int cli_read_options(const char *cmd, const char *help, int argc, char **argv,
                     const struct option *own, cli_own_option_fn own_fn, void *ctx,
                     cli_read_args *a);
/* Opens the database of a command that only reads one: a path that does not exist is an error
** (exit 2) rather than a new empty database. Returns 0, or the exit code after printing why. */
int cli_open_existing_store(const char *cmd, const char *path, arb_store **out);
/* Closes the store of a command that may have created it, given the command's exit code: a
** command that failed leaves no database it created with nothing in it (arb_store_close_unused);
** a database that existed before is only closed. Accepts NULL. */
void cli_close_store(arb_store *store, int rc);
/* cli_close_store for a judging run: a dry run, which stores nothing, also leaves no database
** it created (before, a dry run left an empty schema-only file behind). */
void cli_close_run_store(arb_store *store, int rc, int dry_run);
/* Prints "arbiter <cmd>: <the store's message>" and returns the exit code for st. */
int cli_store_failure(const char *cmd, arb_store *store, arb_status st);
/* An output file written whole or not at all: cli_output_open opens path.tmp, cli_output_close
** renames it over path when the command succeeded and removes it when it failed, so a failure
** half-way leaves whatever path held before. path NULL or "-" is stdout. */
typedef struct cli_output {
    FILE *f;
    char *tmp;        /* path.tmp, NULL for stdout */
    const char *path;
} cli_output;
/* Returns 0, or the exit code after printing why. */
int cli_output_open(const char *cmd, const char *path, cli_output *out);
/* Closes out given the command's exit code rc; returns rc, or the exit code of a failure to
** finish the file (printed). */
int cli_output_close(const char *cmd, cli_output *out, int rc);
/* Writes a rendered result to path ("-" = stdout) and frees it; NULL means the renderer ran out
** of memory. Returns the exit code. */
int cli_emit(const char *cmd, const char *path, char *text);

#endif
