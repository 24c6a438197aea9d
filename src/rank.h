/*
** rank.h -- the internal header of the ranking module (METHODS §6), one module in four files
** whose calls go one way, down the list:
**   rank.c        the methods that learn nothing (win rate, Bradley-Terry, length and style
**                 control, the trend) and arb_rank_compute, which runs the others;
**   peer.c        peer rank (weighted win rate, weighted Elo), self-enhancement, and the
**                 agreement of the reviewers with the humans;
**   rank_core.c   the floor both stand on: which battles a ranking uses, win rates, online
**                 Elo and its bootstrap, seeded random streams and the two-thread task runner;
**   rank_render.c text and JSON (reads struct arb_rank only).
** Every function that can fail returns arb_status (ARB_OK, ARB_NOMEM, ARB_INVALID with a
** message, ARB_INTERRUPTED) as the rest of the library does.
*/
#ifndef ARB_RANK_H
#define ARB_RANK_H

#include "internal.h"

#include <math.h>
#include <stdlib.h>

/* Elo points per natural-log unit of odds: 400·log10(odds) = (400 / ln 10)·ln(odds). */
#define ARB__ELO_PER_NAT (400.0 / M_LN10)
/* Threads a ranking computation uses at most. */
#define ARB__RANK_MAX_THREADS 2

/* Stream kinds: each random use of a seed has its own range of streams (arb__rank_stream_seed). */
enum { ARB__STREAM_ELO_PERM = 0, ARB__STREAM_BOOT_CELLS = 1, ARB__STREAM_BOOT_ELO = 2,
       ARB__STREAM_BOOT_LC = 3, ARB__STREAM_BOOT_STYLE = 4 };

/* Agreement of the reviewers' vote with the humans' majority per comparison (§6), and of the
** printed ranking with the humans' ranking (§6, PRD's summary level). */
typedef struct arb__rank_human {
    size_t n_comparisons;      /* (question, unordered pair) with a human majority and a vote */
    double accuracy_weighted;  /* weighted majority vote (final peer-rank weights) */
    double accuracy_all;       /* every reviewer with equal weight */
    double fleiss_weighted;    /* Fleiss' kappa of {vote, human majority} */
    double fleiss_all;
    size_t summary_models;     /* contestants ranked by both the score column and the humans */
    double summary_spearman;   /* Spearman / Kendall tau-b of the score column vs the humans'
                                  win rate over those contestants; NAN when undefined */
    double summary_kendall;
} arb__rank_human;

/* Judgments per model pair that had no valid verdict (E) and so gave no battle (§6). */
typedef struct arb__rank_left_out {
    const char *model_a, *model_b; /* by name, model_a first; owned by arb_rank.names */
    size_t n;
} arb__rank_left_out;

struct arb_rank {
    arb_rank_params params;   /* as used; string pointers are not kept (NULL) */
    char *anchor;             /* copy of params.anchor, or NULL */
    arb_rank_entry *entries;  /* best first; model strings owned by names below */
    size_t n_entries;
    char **names;             /* owned copies of model and reviewer names */
    size_t n_names;
    double *pairwise;         /* n_entries x n_entries in entry order: row beats col, NAN none */
    arb_rank_reviewer *reviewers; /* peer rank, self-enhancement, agreement with humans */
    size_t n_reviewers;
    int iterations, converged;
    double *all_scores;       /* peer rank: the same method with equal weights ("All"), per
                                 entry; NULL otherwise */
    double *trend;            /* n_trend x n_entries: Elo after every trend_every battles */
    size_t n_trend;
    arb__rank_human human;    /* n_comparisons 0 when there are no human reviewers */
    size_t n_battles_used;    /* distinct battles the selection used */
    size_t n_strong;          /* of them strong (arb_battle.strong) */
    size_t n_counted;         /* battles as the methods count them: a strong one
                                 params.strong_weight times (= n_battles_used when 1) */
    arb__rank_left_out *left_out; /* per pair, of the selected reviewers; NULL when none */
    size_t n_left_out, left_out_total;
    /* rank.c: how the Bradley-Terry and control fits went (see rank.c's file comment) */
    int bt_ridge_bound;       /* 1: the BT MLE does not exist (a model or group never wins or
                                 never loses against the rest); ratings bounded by the ridge */
    size_t lc_rows, lc_left_out;       /* length control: battles fitted / left out (no
                                          length for one of the answers) */
    size_t style_rows, style_left_out; /* style control: the same (any feature unknown) */
    double lc_coef;           /* length effect, Elo points per typical (rms) difference; NAN */
    double style_coef[ARB_STYLE__COUNT]; /* style effects on the same scale; NAN */
};

/* ---- rank_core.c ----------------------------------------------------------------------------- */

/* calloc that never asks for zero bytes (calloc(0) may return NULL). */
static inline void *arb__rank_zalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }

/* The 32-bit MT19937 seed of random stream `stream` of kind `kind` of `seed`: distinct streams
** get unrelated generators, and a stream's numbers depend only on (seed, kind, stream), never
** on which thread draws them. */
unsigned long arb__rank_stream_seed(unsigned long long seed, unsigned long long kind,
                                    unsigned long long stream);

/* Runs task `task` with the scratch of `worker`; ARB_OK, or a status that stops the run. */
typedef arb_status (*arb__rank_task_fn)(void *ud, size_t worker, size_t task);
/* How many workers (1..ARB__RANK_MAX_THREADS) work of this size deserves. */
size_t arb__rank_workers_for(double work);
/* Runs tasks 0..n_tasks-1 on n_workers workers, worker w taking w, w + n_workers, ...; each
** task writes only its own results, so the outcome does not depend on timing. Returns ARB_OK,
** ARB_INTERRUPTED (arb__stop_requested), or the first failing task's status. */
arb_status arb__rank_run_tasks(size_t n_tasks, size_t n_workers, arb__rank_task_fn fn, void *ud);
/* Percentile interval (§10) of column col of rows x cols replicates (row-major): the
** (1−level)/2 and (1+level)/2 quantiles of the defined values; NAN when fewer than half are
** defined. scratch holds rows doubles. */
void arb__rank_percentile(const double *reps, size_t rows, size_t cols, size_t col,
                          double level, double *scratch, double *lo, double *hi);
/* *errmsg = before + name (made safe for a terminal) + after, when errmsg is not NULL; a
** message already there is freed. */
void arb__rank_set_err(char **errmsg, const char *before, const char *name, const char *after);
/* 1 when score a (of the model or reviewer named na) ranks before b: higher first, undefined
** last, equal scores by name -- the one order of every table of the module. */
int arb__rank_before(double a, const char *na, double b, const char *nb);
/* 1 when name starts with a non-empty prefix (the humans, p->human_prefix). */
int arb__rank_is_human(const char *name, const char *prefix);

/* Marks the battles p selects (reviewer list, exclude_self, humans left out of the contestant
** ranking): use[k] = 1. reviewer_model[r] gets the contestant index (into b->models) reviewer
** r is, or UINT32_MAX; allowed[r] (when allowed is not NULL) 1 for the reviewers the ranking
** uses. ARB_INVALID (bad reviewer list) or ARB_NOMEM with *errmsg set (caller frees). */
arb_status arb__rank_select(const arb_battles *b, const arb_rank_params *p, uint8_t *use,
                            uint32_t *reviewer_model, uint8_t *allowed, char **errmsg);
/* Win rate per model index over the selected battles, each review counted with weight[r]
** (NULL: 1): (weighted wins + ½ ties) / weighted battles. NAN for a model with no battle. */
void arb__win_rate(const arb_battles *b, const uint8_t *use, const double *weight, double *out);
/* Online Elo over the selected battles (§6): K and initial rating from p, each review moving
** both ratings by weight[r]·K·(outcome − expected) (weight NULL: 1), averaged over
** p->elo_permutations random orders (1: the given order). mean and sd per model index
** (b->models.n each; sd may be NULL). ARB_OK, ARB_NOMEM or ARB_INTERRUPTED. */
arb_status arb__elo(const arb_battles *b, const uint8_t *use, const double *weight,
                    const arb_rank_params *p, double *mean, double *sd);
/* Bootstrap (§6, §10) of the printed Elo estimator: p->bootstrap rounds, each a multinomial
** resample of the selected battles' (first, second, outcome) counts, then the mean rating
** over p->elo_permutations random orders of the resample (shifted so the anchor -- compact
** index, SIZE_MAX none -- sits at elo_initial). compact maps model index -> ranked index
** (m of them); lo/hi per ranked index, NAN for a model absent from too many rounds.
** ARB_OK, ARB_NOMEM, ARB_INTERRUPTED, ARB_INVALID (more than 2^32 − 1 battles; *errmsg). */
arb_status arb__elo_bootstrap(const arb_battles *b, const uint8_t *use, const uint32_t *compact,
                              size_t m, size_t anchor, const arb_rank_params *p, double *lo,
                              double *hi, char **errmsg);

/* ---- peer.c ---------------------------------------------------------------------------------- */

/* Peer rank (PR weighted win rate, weighted Elo; §6). Fills out->entries (score = the weighted
** result, plus all_scores), out->reviewers (weights), iterations and converged. ARB_INVALID
** (bad parameters) or ARB_NOMEM with *errmsg set, ARB_INTERRUPTED; out stays valid for
** arb_rank_destroy. */
arb_status arb__peer_rank(const arb_battles *b, const arb_rank_params *p, arb_rank *out,
                          char **errmsg);
/* Self-enhancement per reviewer that is a contestant, with bootstrap intervals over questions
** (p->bootstrap, p->seed); fills out->reviewers (adding reviewers when absent). ARB_OK or
** ARB_NOMEM. */
arb_status arb__rank_self_enhancement(const arb_battles *b, const arb_rank_params *p,
                                      arb_rank *out);
/* Weighted majority vote per (question, unordered pair) vs the human majority (§6); weights
** per reviewer index (NULL: equal); and each selected reviewer's summary-level Spearman and
** Kendall tau-b against the humans' ranking, plus the score column's (score per entry, in
** entry order). Fills out->human and out->reviewers. ARB_OK or ARB_NOMEM. */
arb_status arb__rank_human_agreement(const arb_battles *b, const arb_rank_params *p,
                                     const double *weight, arb_rank *out);

#endif
