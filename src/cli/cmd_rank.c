/*
** cmd_rank.c -- `arbiter rank`: rankings of contestants from battles (METHODS §6): win rate,
** online Elo, Bradley-Terry with bootstrap intervals, peer rank; length- and style-controlled
** columns, the Elo trend; text or JSON. Battles come from the database or an arena-convention
** JSONL file.
*/
#include "cli.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char rank_help[] =
    "usage: arbiter rank (--db FILE [--source S] | --battles FILE.jsonl)\n"
    "                    [--method winrate|elo|bt|peer-winrate|peer-elo]\n"
    "                    [--reviewers all|A,B,C|top-k K] [--exclude-self] [--bootstrap N]\n"
    "                    [--seed N] [--level 0.95] [--k 32] [--initial 1000]\n"
    "                    [--permutations N] [--anchor MODEL] [--trend K] [--length-control]\n"
    "                    [--style-control] [--max-iterations N] [--tolerance X]\n"
    "                    [--human-prefix P] [--strong-weight K] [--judges judges.yaml]\n"
    "                    [--json] [--output FILE]\n"
    "\n"
    "Ranks the contestants of battle reviews (reviewer r compared model i, shown first, with j\n"
    "on question q: i better, tie or j better; METHODS §6).\n"
    "\n"
    "  --db FILE          read the battles stored by 'arbiter import' or 'arbiter tournament'\n"
    "  --source S         only the battles stored under source S (default: all)\n"
    "  --battles FILE     read an arena-convention JSONL file instead: {\"question_id\",\n"
    "                     \"model_a\", \"model_b\", \"judge\", \"winner\": \"model_a\"|\"model_b\"|\n"
    "                     \"tie\"|\"tie (bothbad)\"} plus optional style fields and\n"
    "                     \"strong\": true (a strong win, e.g. Arena-Hard A>>B)\n"
    "  --method M         winrate (default): (wins + ½ ties) / battles;\n"
    "                     elo: online Elo, mean over --permutations random orders;\n"
    "                     bt: Bradley-Terry maximum likelihood on the Elo scale;\n"
    "                     peer-winrate, peer-elo: peer rank, reviewers weighted by their own\n"
    "                     standing (reviewers named like a contestant are that contestant)\n"
    "  --reviewers R      all (default; reviewers whose name starts with --human-prefix are\n"
    "                     left out when others exist: they are the reference), a comma list\n"
    "                     of reviewers, or top-k K (peer rank: only the reviewers among the\n"
    "                     current top K contestants)\n"
    "  --exclude-self     leave out reviews of pairs that contain the reviewer's own model\n"
    "  --bootstrap N      percentile intervals from N resamples (0 = none, default); BT and\n"
    "                     win rate resample per-pair outcome counts (fast); Elo resamples the\n"
    "                     battles and recomputes the mean over --permutations orders in every\n"
    "                     round (rounds x permutations x battles updates); the length/style\n"
    "                     control resample battles and refit (slower)\n"
    "  --seed N           seed of the permutations and resamples (default 1)\n"
    "  --level X          interval level (default 0.95)\n"
    "  --k K              Elo K (default 32)\n"
    "  --initial R        Elo start rating, and the BT anchor value (default 1000)\n"
    "  --permutations N   Elo orders to average (default 1000; 1 = the given order)\n"
    "  --anchor MODEL     BT/Elo: MODEL is held at --initial (default: the mean is)\n"
    "  --trend K          add the Elo ratings after every K battles (one pass, given order)\n"
    "  --length-control   add the length-controlled win rate (BT with a length term)\n"
    "  --style-control    add style-controlled BT ratings (length, headers, lists, bold)\n"
    "  --max-iterations N peer rank: a cap on the iterations (default 1000); reaching it\n"
    "                     before the weights settle is reported on stderr and in the output\n"
    "  --tolerance X      peer rank stops when no weight moves by X (default 1e-9)\n"
    "  --human-prefix P   reviewers starting with P are humans (default \"human\")\n"
    "  --strong-weight K  a strong battle (Arena-Hard A>>B, imported with strength 2, or\n"
    "                     \"strong\": true) counts K times in every method, its bootstrap\n"
    "                     and the counts, as if repeated K times (default 1; Arena-Hard-Auto\n"
    "                     uses 3)\n"
    "  --judges FILE      the tournament's judges file: its 'contestant' fields say which\n"
    "                     model each judge is (peer rank, --exclude-self, self-enhancement)\n"
    "  --json             the same numbers as JSON (keys documented in README)\n"
    "  --output FILE      write there instead of stdout\n"
    "\n"
    "exit codes: 0 ok, 1 failure, 2 usage or bad input\n";

static int parse_method(const char *text, arb_rank_method *out)
{
    static const struct {
        const char *name;
        arb_rank_method method;
    } methods[] = {{"winrate", ARB_RANK_WINRATE},
                   {"elo", ARB_RANK_ELO},
                   {"bt", ARB_RANK_BT},
                   {"peer-winrate", ARB_RANK_PEER_WINRATE},
                   {"peer-elo", ARB_RANK_PEER_ELO}};
    for (size_t k = 0; k < sizeof methods / sizeof *methods; k++)
        if (!strcmp(text, methods[k].name)) {
            *out = methods[k].method;
            return 0;
        }
    return -1;
}

/* Splits a comma list into *names (the pointers point into text, which is modified). Returns
** the count, or -1 when out of memory or an item is empty. */
static long split_names(char *text, const char ***names)
{
    size_t n = 1;
    for (const char *p = text; *p; p++) n += *p == ',';
    const char **list = calloc(n, sizeof *list);
    if (!list) return -1;
    size_t k = 0;
    for (char *p = text;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (!*p) {
            free(list);
            return -1;
        }
        list[k++] = p;
        if (!comma) break;
        p = comma + 1;
    }
    *names = list;
    return (long)k;
}

int cmd_rank(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"source", required_argument, 0, 'S'},
                                         {"battles", required_argument, 0, 'B'},
                                         {"method", required_argument, 0, 'm'},
                                         {"reviewers", required_argument, 0, 'r'},
                                         {"exclude-self", no_argument, 0, 'x'},
                                         {"bootstrap", required_argument, 0, 'n'},
                                         {"seed", required_argument, 0, 's'},
                                         {"level", required_argument, 0, 'l'},
                                         {"k", required_argument, 0, 'k'},
                                         {"initial", required_argument, 0, 'i'},
                                         {"permutations", required_argument, 0, 'p'},
                                         {"anchor", required_argument, 0, 'a'},
                                         {"trend", required_argument, 0, 't'},
                                         {"length-control", no_argument, 0, 'L'},
                                         {"style-control", no_argument, 0, 'Y'},
                                         {"max-iterations", required_argument, 0, 'I'},
                                         {"tolerance", required_argument, 0, 'T'},
                                         {"human-prefix", required_argument, 0, 'H'},
                                         {"strong-weight", required_argument, 0, 'W'},
                                         {"judges", required_argument, 0, 'J'},
                                         {"json", no_argument, 0, 'j'},
                                         {"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db = NULL, *source = NULL, *battles_path = NULL, *output = "-";
    char *reviewer_text = NULL;
    const char **reviewers = NULL;
    const char *judges_path = NULL;
    arb_judges_file *judges = NULL;
    arb_reviewer_info *info = NULL;
    arb_rank_params params = arb_rank_default_params();
    int json = 0, c, rc = EXIT_USAGE;
    long n;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db = optarg; break;
        case 'S': source = optarg; break;
        case 'B': battles_path = optarg; break;
        case 'm':
            if (parse_method(optarg, &params.method)) {
                rc = cli_usage_error("rank", "--method expects winrate, elo, bt, peer-winrate "
                                             "or peer-elo, got \"%s\"", optarg);
                goto done;
            }
            break;
        case 'r': {
            const char *k_text = NULL;
            if (!strcmp(optarg, "all")) {
                free(reviewer_text);
                reviewer_text = NULL;
                params.top_k_reviewers = 0;
                break;
            }
            if (!strcmp(optarg, "top-k")) { /* "top-k K": the count is the next argument */
                if (optind >= argc) {
                    rc = cli_usage_error("rank", "--reviewers top-k needs a count, e.g. "
                                                 "--reviewers top-k 3");
                    goto done;
                }
                k_text = argv[optind++];
            } else if (!strncmp(optarg, "top-k=", 6) || !strncmp(optarg, "top-k:", 6)) {
                k_text = optarg + 6;
            }
            if (k_text) {
                if (cli_parse_int("--reviewers top-k", k_text, 1, 1000000, &n)) goto done;
                params.top_k_reviewers = (size_t)n;
                break;
            }
            free(reviewer_text);
            if (!(reviewer_text = strdup(optarg))) {
                fprintf(stderr, "arbiter rank: out of memory\n");
                rc = EXIT_FAIL;
                goto done;
            }
            break;
        }
        case 'x': params.exclude_self = 1; break;
        case 'n':
            if (cli_parse_int("--bootstrap", optarg, 0, 1000000, &n)) goto done;
            params.bootstrap = (size_t)n;
            break;
        case 's':
            if (cli_parse_int("--seed", optarg, 0, 2147483647L, &n)) goto done;
            params.seed = (unsigned long long)n;
            break;
        case 'l':
            if (cli_parse_double("--level", optarg, 0.5, 0.999, &params.ci_level)) goto done;
            break;
        case 'k':
            if (cli_parse_double("--k", optarg, 1e-9, 1e6, &params.elo_k)) goto done;
            break;
        case 'i':
            if (cli_parse_double("--initial", optarg, -1e9, 1e9, &params.elo_initial)) goto done;
            break;
        case 'p':
            if (cli_parse_int("--permutations", optarg, 1, 10000000, &n)) goto done;
            params.elo_permutations = (size_t)n;
            break;
        case 'a': params.anchor = optarg; break;
        case 't':
            if (cli_parse_int("--trend", optarg, 1, 2147483647L, &n)) goto done;
            params.trend_every = (size_t)n;
            break;
        case 'L': params.length_control = 1; break;
        case 'Y': params.style_control = 1; break;
        case 'I':
            if (cli_parse_int("--max-iterations", optarg, 1, 1000000, &n)) goto done;
            params.max_iterations = (int)n;
            break;
        case 'T':
            if (cli_parse_double("--tolerance", optarg, 0, 1, &params.tolerance)) goto done;
            break;
        case 'H': params.human_prefix = optarg; break;
        case 'W':
            if (cli_parse_int("--strong-weight", optarg, 1, 1000, &n)) goto done;
            params.strong_weight = (size_t)n;
            break;
        case 'J': judges_path = optarg; break;
        case 'j': json = 1; break;
        case 'o': output = optarg; break;
        case 'h':
            fputs(rank_help, stdout);
            rc = EXIT_OK;
            goto done;
        default:
            rc = cli_usage_error("rank", "unknown or incomplete option \"%s\"", argv[optind - 1]);
            goto done;
        }
    }
    if (optind < argc) {
        rc = cli_usage_error("rank", "unexpected argument \"%s\"", argv[optind]);
        goto done;
    }
    if (!db == !battles_path) {
        rc = cli_usage_error("rank", "give either --db FILE or --battles FILE.jsonl");
        goto done;
    }
    if (source && !db) {
        rc = cli_usage_error("rank", "--source needs --db");
        goto done;
    }
    if (reviewer_text) {
        long count = split_names(reviewer_text, &reviewers);
        if (count < 0) {
            rc = cli_usage_error("rank", "--reviewers expects all, top-k K or a comma list of "
                                         "names without empty items");
            goto done;
        }
        params.reviewers = reviewers;
        params.n_reviewers = (size_t)count;
    }
    if (judges_path) {
        /* each judge with a contestant field is that contestant as a reviewer */
        char *jerr = NULL;
        arb_status jst = arb_judges_file_load(judges_path, &judges, &jerr);
        if (jst) {
            fprintf(stderr, "arbiter rank: %s\n", jerr ? jerr : arb_strerror(jst));
            arb_free(jerr);
            rc = cli_exit_code(jst);
            goto done;
        }
        size_t nj = arb_judges_file_count(judges);
        if (!(info = calloc(nj ? nj : 1, sizeof *info))) {
            fprintf(stderr, "arbiter rank: out of memory\n");
            rc = EXIT_FAIL;
            goto done;
        }
        size_t n_info = 0; /* judges without a contestant keep the rule "named like a model" */
        for (size_t k = 0; k < nj; k++) {
            const arb_judge_config *jc = arb_judges_file_judge(judges, k);
            if (!arb_judges_file_contestant(judges, k)) continue;
            info[n_info].reviewer = jc->name ? jc->name : jc->model;
            info[n_info].model = arb_judges_file_contestant(judges, k);
            info[n_info].fixed_weight = NAN;
            n_info++;
        }
        params.reviewer_info = info;
        params.n_reviewer_info = n_info;
    }
    rc = EXIT_FAIL;

    arb_battles *battles = arb_battles_create();
    arb_rank *rank = NULL;
    char *errmsg = NULL;
    if (!battles) {
        fprintf(stderr, "arbiter rank: out of memory\n");
        goto done;
    }
    arb_status st;
    if (db) {
        arb_store *store = NULL;
        if ((rc = cli_open_existing_store("rank", db, &store)) != 0) goto finish;
        st = arb_store_get_battles(store, source, battles);
        if (st) rc = cli_store_failure("rank", store, st);
        arb_store_close(store);
        if (st) goto finish;
    } else if ((st = arb_battles_read_jsonl(battles, battles_path)) != ARB_OK) {
        fprintf(stderr, "arbiter rank: %s\n", arb_battles_errmsg(battles));
        rc = cli_exit_code(st);
        goto finish;
    }
    if (arb_battles_count(battles) == 0)
        fprintf(stderr, "arbiter rank: no battles in %s%s%s\n", db ? db : battles_path,
                source ? " for source " : "", source ? source : "");
    st = arb_rank_compute(battles, &params, &rank, &errmsg);
    if (st) {
        fprintf(stderr, "arbiter rank: %s\n", errmsg ? errmsg : arb_strerror(st));
        rc = cli_exit_code(st);
    } else {
        int converged = 1;
        int iterations = arb_rank_iterations(rank, &converged);
        if ((params.method == ARB_RANK_PEER_WINRATE || params.method == ARB_RANK_PEER_ELO) &&
            !converged)
            fprintf(stderr, "arbiter rank: warning: peer rank did not converge: the weights "
                            "still moved by %g or more after %d iterations (--max-iterations); "
                            "the scores and weights are those of the last iteration\n",
                    params.tolerance, iterations);
        rc = cli_emit("rank", output, json ? arb_rank_to_json(rank) : arb_rank_to_text(rank));
    }
finish:
    arb_free(errmsg);
    arb_rank_destroy(rank);
    arb_battles_destroy(battles);
done:
    free(info);
    arb_judges_file_destroy(judges);
    free(reviewers);
    free(reviewer_text);
    return rc;
}
