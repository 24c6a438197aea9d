/*
** cmd_annotate.c -- `arbiter annotate`: serves the annotation web app, where human experts label
** side-by-side pairs blind (METHODS §4), until Ctrl-C or SIGTERM. The token is read from a
** file so it never appears in the process list or the shell history, and it is never printed.
*/
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char annotate_help[] =
    "usage: arbiter annotate --db FILE --token-file FILE [--annotator NAME] [--port N]\n"
    "                        [--bind ADDR] [--overlap N] [--pairs CAND:BASE[,...]] [--seed N]\n"
    "                        [--lease-minutes N] [--port-file FILE]\n"
    "\n"
    "Serves a web page where human experts compare two answers to a question, blind (no model\n"
    "names, the order shuffled per task), and give a verdict: first better, second better, both\n"
    "good, both bad, or skip. Each verdict is stored at once in the database as a human label\n"
    "(source \"ui\"), which 'arbiter audit' and 'arbiter labels' use. Stop it with Ctrl-C.\n"
    "\n"
    "  --db FILE             the arbiter database (must exist: items and answers come from it)\n"
    "  --token-file FILE     file holding the access token (16 characters or more); annotators\n"
    "                        enter it on the page. Make one with: head -c 24 /dev/urandom |\n"
    "                        base64 > token.txt; chmod 600 token.txt\n"
    "  --annotator NAME      name used when an annotator signs in without one\n"
    "  --port N              port (default 8765; 0 picks a free one)\n"
    "  --bind ADDR           address to listen on (default 127.0.0.1: this machine only)\n"
    "  --overlap N           annotators per (item, pair) (default 1; 2 or more lets 'arbiter\n"
    "                        labels' measure inter-annotator agreement)\n"
    "  --pairs C:B[,C:B...]  candidate:baseline pairs to label (default: every pair with\n"
    "                        side-by-side judgments in the database)\n"
    "  --seed N              which answer is shown first (default 20261123)\n"
    "  --lease-minutes N     an unanswered task goes to someone else after this long (default 30)\n"
    "  --port-file FILE      write the port there once listening\n"
    "\n"
    "exit codes: 0 stopped by Ctrl-C or SIGTERM, 1 failure, 2 usage or bad input\n";

static volatile sig_atomic_t annotate_stop = 0;
static void on_stop(int sig)
{
    (void)sig;
    annotate_stop = 1;
    arb_request_stop();
}

/* Reads the token from path into buf (size bytes), white space trimmed. Returns 0, or the exit
** code after printing why; the token itself is never printed. */
static int read_token(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "arbiter annotate: --token-file %s: %s\n", path, strerror(errno));
        return EXIT_USAGE;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && (sb.st_mode & (S_IRWXG | S_IRWXO)))
        fprintf(stderr, "arbiter annotate: warning: %s can be read by other users; "
                        "run: chmod 600 %s\n", path, path);
    size_t n = fread(buf, 1, size, f);
    int too_long = n == size, failed = ferror(f);
    fclose(f);
    if (failed) {
        fprintf(stderr, "arbiter annotate: --token-file %s: read error\n", path);
        return EXIT_USAGE;
    }
    if (too_long) {
        fprintf(stderr, "arbiter annotate: --token-file %s: the token is longer than %zu bytes\n",
                path, size - 1);
        return EXIT_USAGE;
    }
    buf[n] = '\0';
    size_t start = 0;
    while (start < n && isspace((unsigned char)buf[start])) start++;
    while (n > start && isspace((unsigned char)buf[n - 1])) n--;
    memmove(buf, buf + start, n - start);
    n -= start;
    buf[n] = '\0';
    if (n < 16) {
        fprintf(stderr, "arbiter annotate: --token-file %s: the token is %s; use 16 characters "
                        "or more (e.g. head -c 24 /dev/urandom | base64 > %s)\n",
                path, n ? "too short" : "empty", path);
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)buf[i] <= ' ' || buf[i] == 0x7f) {
            fprintf(stderr, "arbiter annotate: --token-file %s: the token must be one word "
                            "without spaces or control characters\n", path);
            return EXIT_USAGE;
        }
    return 0;
}

/* Nonzero when address only accepts connections from this machine. */
static int is_loopback(const char *address)
{
    return !strcmp(address, "localhost") || !strncmp(address, "127.", 4) ||
           !strcmp(address, "::1");
}

int cmd_annotate(int argc, char **argv)
{
    enum {
        OPT_DB = 1, OPT_TOKEN_FILE, OPT_ANNOTATOR, OPT_PORT, OPT_BIND, OPT_OVERLAP, OPT_PAIRS,
        OPT_SEED, OPT_LEASE, OPT_PORT_FILE, OPT_HELP
    };
    static const struct option opts[] = {{"db", required_argument, 0, OPT_DB},
                                         {"token-file", required_argument, 0, OPT_TOKEN_FILE},
                                         {"annotator", required_argument, 0, OPT_ANNOTATOR},
                                         {"port", required_argument, 0, OPT_PORT},
                                         {"bind", required_argument, 0, OPT_BIND},
                                         {"overlap", required_argument, 0, OPT_OVERLAP},
                                         {"pairs", required_argument, 0, OPT_PAIRS},
                                         {"seed", required_argument, 0, OPT_SEED},
                                         {"lease-minutes", required_argument, 0, OPT_LEASE},
                                         {"port-file", required_argument, 0, OPT_PORT_FILE},
                                         {"help", no_argument, 0, OPT_HELP},
                                         {0, 0, 0, 0}};
    arb_annotate_params p = arb_annotate_default_params();
    const char *db = NULL, *token_file = NULL, *port_file = NULL;
    char *pairs_text = NULL;
    long n;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DB: db = optarg; break;
        case OPT_TOKEN_FILE: token_file = optarg; break;
        case OPT_ANNOTATOR: p.annotator = optarg; break;
        case OPT_PORT:
            if (cli_parse_int("--port", optarg, 0, 65535, &n)) return EXIT_USAGE;
            p.port = (int)n;
            break;
        case OPT_BIND: p.bind_address = optarg; break;
        case OPT_OVERLAP:
            if (cli_parse_int("--overlap", optarg, 1, 1000, &n)) return EXIT_USAGE;
            p.overlap = (int)n;
            break;
        case OPT_PAIRS: pairs_text = optarg; break;
        case OPT_SEED:
            if (cli_parse_int("--seed", optarg, 0, 2147483647L, &n)) return EXIT_USAGE;
            p.seed = (unsigned long long)n;
            break;
        case OPT_LEASE:
            if (cli_parse_int("--lease-minutes", optarg, 1, 525600, &n)) return EXIT_USAGE;
            p.lease_minutes = (int)n;
            break;
        case OPT_PORT_FILE: port_file = optarg; break;
        case OPT_HELP: fputs(annotate_help, stdout); return EXIT_OK;
        default:
            return cli_usage_error("annotate", "unknown or incomplete option \"%s\"",
                                   argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_usage_error("annotate", "unexpected argument \"%s\"", argv[optind]);
    if (!db) return cli_usage_error("annotate", "--db is required");
    if (!token_file) return cli_usage_error("annotate", "--token-file is required");

    char token[4097];
    int rc = read_token(token_file, token, sizeof token);
    if (rc) return rc;
    p.token = token;

    arb_model_pair *pairs = NULL;
    arb_annotate_server *srv = NULL;
    if (pairs_text) {
        long n_pairs = cli_parse_pairs("annotate", "--pairs", pairs_text, &pairs);
        if (n_pairs < 0) {
            rc = EXIT_USAGE;
            goto done;
        }
        p.pairs = pairs;
        p.n_pairs = (size_t)n_pairs;
    }
    /* The database must exist: an annotation server on a new empty file serves nothing. */
    arb_store *check = NULL;
    if ((rc = cli_open_existing_store("annotate", db, &check))) goto done;
    arb_store_close(check);

    char *err = NULL;
    arb_status st = arb_annotate_start(db, &p, &srv, &err);
    if (st) {
        fprintf(stderr, "arbiter %s\n", err ? err : arb_strerror(st));
        arb_free(err);
        rc = st == ARB_INVALID ? EXIT_USAGE : EXIT_FAIL;
        goto done;
    }
    cli_install_signal_handlers(); /* SIGPIPE ignored; SIGINT/SIGTERM replaced below */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    int port = arb_annotate_port(srv);
    const char *bind = p.bind_address;
    int v6 = strchr(bind, ':') != NULL;
    if (!is_loopback(bind))
        fprintf(stderr, "arbiter annotate: warning: listening on %s, not only on this machine: "
                        "anyone who can reach it can try the token, and plain HTTP is not "
                        "encrypted (use an SSH tunnel or a TLS proxy)\n", bind);
    size_t n_pairs = arb_annotate_pair_count(srv);
    fprintf(stderr, "arbiter annotate: serving %zu pair%s on http://%s%s%s:%d/ (open it and enter "
                    "the token from %s)\n", n_pairs, n_pairs == 1 ? "" : "s", v6 ? "[" : "", bind,
            v6 ? "]" : "", port, token_file);
    if (port_file) {
        FILE *f = fopen(port_file, "w");
        int bad = !f || fprintf(f, "%d\n", port) < 0;
        if ((f && fclose(f)) || bad) {
            fprintf(stderr, "arbiter annotate: cannot write %s\n", port_file);
            rc = EXIT_FAIL;
            goto done;
        }
    }
    while (!annotate_stop) usleep(50 * 1000);
    fprintf(stderr, "arbiter annotate: stopped; every label given is in %s\n", db);
    rc = EXIT_OK;
done:
    arb_annotate_stop(srv);
    memset(token, 0, sizeof token);
    free(pairs);
    return rc;
}
