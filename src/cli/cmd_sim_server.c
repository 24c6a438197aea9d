/*
** cmd_sim_server.c -- `arbiter sim-server`: serves the SIMULATED judge over real HTTP.
** The simulator is not a language model; it stands in for one in tests, demos and benchmarks.
*/
#include "cli.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char sim_help[] =
    "usage: arbiter sim-server [--port N] [--judge SPEC]... [--items FILE --answers FILE]\n"
    "                          [--seed N] [--instant] [--fail-rate X] [--throttle-rate X]\n"
    "                          [--cached-share X] [--bind ADDR] [--port-file FILE]\n"
    "                          [--batch-delay MS] [--batch-fail-every N] [--batch-expire]\n"
    "\n"
    "Runs an OpenAI-compatible HTTP server (POST /v1/chat/completions, GET /v1/models) whose\n"
    "judges are a SIMULATOR of biased LLM judges, not language models. Stop it with Ctrl-C.\n"
    "\n"
    "  --port N          port (default 8000; 0 picks a free one)\n"
    "  --bind ADDR       address (default 127.0.0.1)\n"
    "  --judge SPEC      a simulated judge, repeatable; SPEC is\n"
    "                    model:skill=4,bias=0,tie=0.3,bothbad=0.5,invalid=0,latency=0,\n"
    "                    conformity=0.5\n"
    "                    (bias > 0 favours the first answer, < 0 the second; conformity: in a\n"
    "                    debate or discussion, the chance to take the other's differing verdict,\n"
    "                    0 always holds, 1 always yields; default one judge named sim-judge)\n"
    "                    Pointwise (yes/no, 1-5 grades) keys, each 0..1, default 0:\n"
    "                    noise=X, noise.<lang>=X  chance of a uniformly random answer\n"
    "                    strict=X, strict.<lang>=X  chance a true yes becomes no and a grade\n"
    "                    drops by one; <lang> overrides for that evaluation language, e.g.\n"
    "                    sim-ar:noise=0.1,noise.ar=0.4,strict=0.3 (at most 32 languages)\n"
    "                    Persona (METHODS 9: responses said to be written by an identity,\n"
    "                    scored 0-10 per metric as 10*quality + shift + noise, rounded):\n"
    "                    persona.<identity>=X  shift in points, -10..10, for that identity\n"
    "                    (letters, digits, '-', '_', up to 32; case ignored; at most 16)\n"
    "                    persona_sd=X  sd of the normal noise per score, 0..10, default 1\n"
    "                    bias (in score points here) favours the first candidate shown, e.g.\n"
    "                    sim-biased:persona.female=+1.5,persona_sd=1,bias=0.5\n"
    "                    Reasoning model: think=reasoning_content|reasoning|tag|open|cut\n"
    "                    adds thinking holding a misleading verdict, in that message field,\n"
    "                    in <think>...</think> before the answer, after an opening tag the\n"
    "                    template supplied, or cut while thinking (no answer); default none\n"
    "  --items/--answers the benchmark whose answers carry a \"quality\" field (0..1): the latent\n"
    "                    quality the simulator judges by (other answers count as 0.5); items'\n"
    "                    \"reference\" texts with a \"quality\" count too, pointwise, in their\n"
    "                    \"language\"\n"
    "  --seed N          seed of the simulator (default 1): same seed, same replies\n"
    "  --instant         answer [[A]] at once without simulating (throughput benchmarks)\n"
    "  --fail-rate X     answer this share of requests with HTTP 500 (retry tests)\n"
    "  --throttle-rate X answer this share of requests with HTTP 429 (back-off tests)\n"
    "  --cached-share X  report floor(prompt_tokens * X) of each prompt as cached\n"
    "                    (usage.prompt_tokens_details.cached_tokens; tests of cached prices)\n"
    "  --port-file FILE  write the port there once listening\n"
    "Batch API (POST /v1/files, POST /v1/batches, GET /v1/batches/ID, GET /v1/files/ID/content;\n"
    "files kept in memory; each line answered by the simulated judge):\n"
    "  --batch-delay MS  a batch completes MS milliseconds after it was created (default 0)\n"
    "  --batch-fail-every N  every N-th line of a batch fails with an error line\n"
    "  --batch-expire    batches end \"expired\" after answering their first half; the rest\n"
    "                    are \"batch_expired\" error lines\n";

static volatile sig_atomic_t sim_stop = 0;
static void on_stop(int sig)
{
    (void)sig;
    sim_stop = 1;
}

int cmd_sim_server(int argc, char **argv)
{
    static const struct option opts[] = {{"port", required_argument, 0, 'p'},
                                         {"batch-delay", required_argument, 0, 'D'},
                                         {"batch-fail-every", required_argument, 0, 'F'},
                                         {"batch-expire", no_argument, 0, 'E'},
                                         {"bind", required_argument, 0, 'b'},
                                         {"judge", required_argument, 0, 'j'},
                                         {"items", required_argument, 0, 'i'},
                                         {"answers", required_argument, 0, 'a'},
                                         {"seed", required_argument, 0, 's'},
                                         {"instant", no_argument, 0, 'I'},
                                         {"fail-rate", required_argument, 0, 'f'},
                                         {"throttle-rate", required_argument, 0, 't'},
                                         {"cached-share", required_argument, 0, 'c'},
                                         {"port-file", required_argument, 0, 'P'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    enum { MAX_JUDGES = 64 };
    arb_sim_judge judges[MAX_JUDGES];
    size_t n_judges = 0;
    arb_sim_params p = arb_sim_default_params();
    p.port = 8000;
    const char *items = NULL, *answers = NULL, *port_file = NULL;
    long n;
    double x;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (cli_parse_int("--port", optarg, 0, 65535, &n)) return EXIT_USAGE;
            p.port = (int)n;
            break;
        case 'b': p.bind_address = optarg; break;
        case 'j': {
            if (n_judges == MAX_JUDGES) return cli_usage_error("sim-server", "at most %d judges", MAX_JUDGES);
            char *err = NULL;
            if (arb_sim_judge_parse(optarg, &judges[n_judges], &err)) {
                int rc = cli_usage_error("sim-server", "--judge %s: %s", optarg, err ? err : "invalid");
                arb_free(err);
                return rc;
            }
            n_judges++;
            break;
        }
        case 'i': items = optarg; break;
        case 'a': answers = optarg; break;
        case 's':
            if (cli_parse_int("--seed", optarg, 0, 2147483647L, &n)) return EXIT_USAGE;
            p.seed = (unsigned long long)n;
            break;
        case 'I': p.instant = 1; break;
        case 'f':
            if (cli_parse_double("--fail-rate", optarg, 0, 1, &x)) return EXIT_USAGE;
            p.fail_rate = x;
            break;
        case 't':
            if (cli_parse_double("--throttle-rate", optarg, 0, 1, &x)) return EXIT_USAGE;
            p.throttle_rate = x;
            break;
        case 'c':
            if (cli_parse_double("--cached-share", optarg, 0, 1, &x)) return EXIT_USAGE;
            p.cached_share = x;
            break;
        case 'P': port_file = optarg; break;
        case 'D':
            if (cli_parse_double("--batch-delay", optarg, 0, 86400000, &p.batch_delay_ms))
                return EXIT_USAGE;
            break;
        case 'F':
            if (cli_parse_int("--batch-fail-every", optarg, 1, 1000000000L, &p.batch_fail_every))
                return EXIT_USAGE;
            break;
        case 'E': p.batch_expire = 1; break;
        case 'h': fputs(sim_help, stdout); return EXIT_OK;
        default: return cli_usage_error("sim-server", "unknown or incomplete option \"%s\"", argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_usage_error("sim-server", "unexpected argument \"%s\"", argv[optind]);
    if (!items != !answers) return cli_usage_error("sim-server", "--items and --answers go together");
    if (n_judges == 0) {
        char *err = NULL;
        if (arb_sim_judge_parse("sim-judge", &judges[0], &err)) {
            fprintf(stderr, "arbiter sim-server: %s\n", err ? err : "cannot make default judge");
            arb_free(err);
            return EXIT_FAIL;
        }
        n_judges = 1;
    }
    p.judges = judges;
    p.n_judges = n_judges;

    int rc = EXIT_FAIL;
    arb_dataset *oracle = NULL;
    arb_sim_server *srv = NULL;
    if (items) {
        oracle = arb_dataset_create();
        if (!oracle || arb_dataset_load(oracle, items, answers)) {
            fprintf(stderr, "arbiter sim-server: %s\n", oracle ? arb_dataset_errmsg(oracle) : "out of memory");
            rc = EXIT_USAGE;
            goto done;
        }
        p.answers_oracle = oracle;
    }
    char *err = NULL;
    if (arb_sim_server_start(&p, &srv, &err)) {
        fprintf(stderr, "arbiter sim-server: %s\n", err ? err : "cannot start");
        arb_free(err);
        goto done;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int port = arb_sim_server_port(srv);
    fprintf(stderr,
            "arbiter sim-server: SIMULATED judge server (a simulator, not a language model) on "
            "http://%s:%d/v1 with %zu judge(s):",
            p.bind_address ? p.bind_address : "127.0.0.1", port, n_judges);
    for (size_t i = 0; i < n_judges; i++) fprintf(stderr, " %s", judges[i].model);
    fprintf(stderr, "%s\n", p.instant ? " (instant mode)" : "");
    if (port_file) {
        FILE *f = fopen(port_file, "w");
        if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f)) {
            fprintf(stderr, "arbiter sim-server: cannot write %s\n", port_file);
            goto done;
        }
    }
    while (!sim_stop) usleep(50 * 1000);
    fprintf(stderr, "arbiter sim-server: stopped after %llu requests\n", arb_sim_server_requests(srv));
    rc = EXIT_OK;
done:
    arb_sim_server_stop(srv);
    arb_dataset_destroy(oracle);
    return rc;
}
