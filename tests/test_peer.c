/*
** test_peer.c -- peer rank (METHODS §6) on battle sets small enough to follow by hand: the
** weighted win rate's first iterations and fixed point written out in the comments, a
** reviewer that always says "first answer", equal reviewers, exclude_self, a non-contestant
** with a fixed weight, top-K reviewers, weighted Elo, self-enhancement with its bootstrap
** interval, and the agreement of the (weighted) majority vote with the humans' majority.
*/
#include "internal.h"
#include "rank.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#define EPS 1e-12

static void assert_near_eps(double got, double want, double eps)
{
    if (isnan(got) || fabs(got - want) > eps) fail_msg("got %.15g, want %.15g", got, want);
}

static void assert_near(double got, double want)
{
    assert_near_eps(got, want, EPS);
}

static void assert_undefined(double got)
{
    if (!isnan(got)) fail_msg("got %.15g, want NAN", got);
}

/* Appends one battle: reviewer r compared i (first) with j on q and said s. */
static void add(arb_battles *b, const char *q, const char *i, const char *j, const char *r, int s)
{
    arb_battle battle = arb_battle_init();
    battle.question = q;
    battle.model_i = i;
    battle.model_j = j;
    battle.reviewer = r;
    battle.s = s;
    assert_int_equal(arb_battles_add(b, &battle), ARB_OK);
}

/* s for "winner beats the other" with i shown first. */
static int verdict(const char *i, const char *winner)
{
    if (!winner) return 0;
    return strcmp(i, winner) ? 1 : -1;
}

static arb_rank *new_rank(void)
{
    arb_rank *rk = calloc(1, sizeof *rk);
    assert_non_null(rk);
    return rk;
}

/* Runs peer rank and checks what the result's memory contract says: every string the entries
** and reviewers point to is one of rk->names. */
static arb_rank *peer_rank(const arb_battles *b, const arb_rank_params *p)
{
    arb_rank *rk = new_rank();
    char *err = NULL;
    arb_status rc = arb__peer_rank(b, p, rk, &err);
    if (rc) fail_msg("arb__peer_rank: %s", err ? err : "(no message)");
    assert_null(err);
    assert_non_null(rk->all_scores);
    for (size_t k = 0; k < rk->n_entries + rk->n_reviewers; k++) {
        const char *s = k < rk->n_entries ? rk->entries[k].model
                                          : rk->reviewers[k - rk->n_entries].reviewer;
        int owned = 0;
        for (size_t x = 0; x < rk->n_names && !owned; x++) owned = rk->names[x] == s;
        assert_true(owned);
    }
    return rk;
}

static size_t entry_index(const arb_rank *rk, const char *model)
{
    for (size_t k = 0; k < rk->n_entries; k++)
        if (!strcmp(rk->entries[k].model, model)) return k;
    fail_msg("no entry for %s", model);
    return 0;
}

static double score_of(const arb_rank *rk, const char *model)
{
    return rk->entries[entry_index(rk, model)].score;
}

static double all_score_of(const arb_rank *rk, const char *model)
{
    return rk->all_scores[entry_index(rk, model)];
}

static const arb_rank_reviewer *reviewer_of(const arb_rank *rk, const char *name)
{
    for (size_t k = 0; k < rk->n_reviewers; k++)
        if (!strcmp(rk->reviewers[k].reviewer, name)) return &rk->reviewers[k];
    fail_msg("no reviewer %s", name);
    return NULL;
}

static double weight_of(const arb_rank *rk, const char *name)
{
    return reviewer_of(rk, name)->weight;
}

static arb_rank_params pr_params(void)
{
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_PEER_WINRATE;
    return p;
}

/* ---- the hand-made three-model case ------------------------------------------------------- */

/* Models A, B, C are also the reviewers; each reviews each pair once on question q1:
**   reviewer A: A > B, A > C, B > C
**   reviewer B: A > B, A > C, B = C (tie)
**   reviewer C: A = B (tie), C > A, C > B
** Some pairs are shown in the other order, so the orientation of s is exercised too.
** Every model takes part in 2 pairs x 3 reviewers: N = 6 for each, in every iteration. */
static arb_battles *three_models(void)
{
    arb_battles *b = arb_battles_create();
    assert_non_null(b);
    add(b, "q1", "A", "B", "A", verdict("A", "A"));
    add(b, "q1", "C", "A", "A", verdict("C", "A"));
    add(b, "q1", "B", "C", "A", verdict("B", "B"));
    add(b, "q1", "B", "A", "B", verdict("B", "A"));
    add(b, "q1", "A", "C", "B", verdict("A", "A"));
    add(b, "q1", "C", "B", "B", 0);
    add(b, "q1", "A", "B", "C", 0);
    add(b, "q1", "C", "A", "C", verdict("C", "C"));
    add(b, "q1", "B", "C", "C", verdict("B", "C"));
    return b;
}

/* Iteration 1, weights 1/3 each, mean-1 weights u = 1:
**   V_A = (1 + 1) + (1 + 1) + (1/2 + 0) = 4.5     S_A = 4.5/6 = 0.75
**   V_B = (0 + 1) + (0 + 1/2) + (1/2 + 0) = 2     S_B = 2/6 = 1/3
**   V_C = (0 + 0) + (0 + 1/2) + (1 + 1) = 2.5     S_C = 2.5/6 = 5/12
** min-max: A 1, B 0, C (5/12 - 4/12)/(9/12 - 4/12) = 1/5; normalised by 6/5:
**   w = (5/6, 0, 1/6).
** Iteration 2, u = 3w = (2.5, 0, 0.5):
**   V_A = 2.5*2 + 0*2 + 0.5*0.5 = 5.25           S_A = 0.875
**   V_B = 2.5*1 + 0*0.5 + 0.5*0.5 = 2.75         S_B = 2.75/6
**   V_C = 2.5*0 + 0*0.5 + 0.5*2 = 1              S_C = 1/6
** min-max: A 1, C 0, B (2.75 - 1)/(5.25 - 1) = 7/17; normalised by 24/17:
**   w = (17/24, 7/24, 0).
** Iteration 3, u = (17/8, 7/8, 0): V_A = 2*3 = 6 (S_A = 1), V_B = 17/8 + 7/16 = 41/16,
** V_C = 7/16. With max_iterations = 1 the reported scores are those of the final weights, i.e.
** iteration 2's; with max_iterations = 2, iteration 3's. */
static void pr_three_models_first_iterations(void **state)
{
    (void)state;
    arb_battles *b = three_models();
    arb_rank_params p = pr_params();
    p.max_iterations = 1;
    arb_rank *rk = peer_rank(b, &p);
    assert_int_equal(rk->iterations, 1);
    assert_int_equal(rk->converged, 0);
    assert_int_equal(rk->n_entries, 3);
    assert_string_equal(rk->entries[0].model, "A");
    assert_string_equal(rk->entries[1].model, "B");
    assert_string_equal(rk->entries[2].model, "C");
    assert_near(score_of(rk, "A"), 0.875);
    assert_near(score_of(rk, "B"), 2.75 / 6);
    assert_near(score_of(rk, "C"), 1.0 / 6);
    assert_near(all_score_of(rk, "A"), 0.75);
    assert_near(all_score_of(rk, "B"), 1.0 / 3);
    assert_near(all_score_of(rk, "C"), 5.0 / 12);
    assert_near(weight_of(rk, "A"), 5.0 / 6);
    assert_near(weight_of(rk, "B"), 0);
    assert_near(weight_of(rk, "C"), 1.0 / 6);
    /* Reviewers best first; each made 3 reviews and is the contestant of its name. */
    assert_string_equal(rk->reviewers[0].reviewer, "A");
    assert_string_equal(rk->reviewers[2].reviewer, "B");
    assert_int_equal(reviewer_of(rk, "C")->reviews, 3);
    assert_string_equal(reviewer_of(rk, "C")->model, "C");
    assert_ptr_equal(reviewer_of(rk, "C")->model, rk->entries[2].model);
    assert_undefined(reviewer_of(rk, "C")->self_enhancement);
    const arb_rank_entry *a = &rk->entries[0];
    assert_int_equal(a->battles, 6);
    assert_int_equal(a->wins, 4);
    assert_int_equal(a->ties, 1);
    assert_int_equal(a->losses, 1);
    assert_undefined(a->sd);
    assert_undefined(a->ci_lo);
    arb_rank_destroy(rk);

    p.max_iterations = 2;
    rk = peer_rank(b, &p);
    assert_int_equal(rk->iterations, 2);
    assert_int_equal(rk->converged, 0);
    assert_near(weight_of(rk, "A"), 17.0 / 24);
    assert_near(weight_of(rk, "B"), 7.0 / 24);
    assert_near(weight_of(rk, "C"), 0);
    assert_near(score_of(rk, "A"), 1);
    assert_near(score_of(rk, "B"), 41.0 / 16 / 6);
    assert_near(score_of(rk, "C"), 7.0 / 16 / 6);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* From iteration 2 on C has weight 0, so u_A + u_B = 3; with t = u_B:
**   V_A = 2(u_A + u_B) = 6, V_B = u_A + t/2 = 3 - t/2, V_C = t/2
**   x_B = (V_B - V_C)/(V_A - V_C) = (3 - t)/(6 - t/2) = 2(3 - t)/(12 - t)
**   t' = 3 x_B/(1 + x_B) = 2(3 - t)/(6 - t)
** Fixed point: t(6 - t) = 6 - 2t, t^2 - 8t + 6 = 0, t_fix = 4 - sqrt(10) (|f'| = 6/(6-t)^2 < 1/4:
** it converges). So w_B = t_fix/3, w_A = 1 - w_B, w_C = 0, and the scores are
** S_A = 1, S_B = (3 - t_fix/2)/6, S_C = t_fix/12. The "All" column stays iteration 1's. */
static void pr_three_models_converged(void **state)
{
    (void)state;
    arb_battles *b = three_models();
    arb_rank_params p = pr_params();
    p.max_iterations = 100;
    p.tolerance = 1e-12;
    arb_rank *rk = peer_rank(b, &p);
    double t = 4 - sqrt(10);
    assert_int_equal(rk->converged, 1);
    assert_true(rk->iterations > 3 && rk->iterations < 100);
    assert_near_eps(weight_of(rk, "B"), t / 3, 1e-11);
    assert_near_eps(weight_of(rk, "A"), 1 - t / 3, 1e-11);
    assert_near(weight_of(rk, "C"), 0);
    assert_near_eps(score_of(rk, "A"), 1, 1e-11);
    assert_near_eps(score_of(rk, "B"), (3 - t / 2) / 6, 1e-11);
    assert_near_eps(score_of(rk, "C"), t / 12, 1e-11);
    /* Peer rank puts B above C; the equal-weight "All" column has them the other way. */
    assert_string_equal(rk->entries[1].model, "B");
    assert_true(all_score_of(rk, "C") > all_score_of(rk, "B"));
    assert_near(all_score_of(rk, "A"), 0.75);
    int converged = -1;
    assert_int_equal(arb_rank_iterations(rk, &converged), rk->iterations);
    assert_int_equal(converged, 1);
    arb_rank_destroy(rk);

    /* The default tolerance (1e-9) stops earlier, within that of the fixed point. */
    p = pr_params();
    p.max_iterations = 100;
    rk = peer_rank(b, &p);
    assert_int_equal(rk->converged, 1);
    assert_near_eps(weight_of(rk, "B"), t / 3, 1e-8);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* ---- reviewer behaviours ------------------------------------------------------------------ */

/* Quality A > B > C > D. Reviewers A, B, C judge truthfully; D always says "first answer".
** Each ordered pair once. Iteration 1: D loses all 18 honest reviews and wins the 3 of its own
** reviews where it is shown first: S_D = 3/24, the lowest (C: 6 wins of 18 honest, 3 of 6 by
** D: 9/24), so D's weight is 0 and its reviews stop counting. */
static void pr_first_answer_reviewer_gets_low_weight(void **state)
{
    (void)state;
    const char *m[] = {"A", "B", "C", "D"};
    arb_battles *b = arb_battles_create();
    for (int r = 0; r < 4; r++)
        for (int x = 0; x < 4; x++)
            for (int y = 0; y < 4; y++) {
                if (x == y) continue;
                int s = r == 3 ? -1 : x < y ? -1 : 1;
                add(b, "q1", m[x], m[y], m[r], s);
            }
    arb_rank_params p = pr_params();
    p.max_iterations = 50;
    arb_rank *rk = peer_rank(b, &p);
    assert_near(weight_of(rk, "D"), 0);
    assert_true(weight_of(rk, "A") > weight_of(rk, "B"));
    assert_true(weight_of(rk, "B") > weight_of(rk, "C"));
    assert_true(weight_of(rk, "C") > 0);
    assert_near(weight_of(rk, "A") + weight_of(rk, "B") + weight_of(rk, "C"), 1);
    assert_string_equal(rk->reviewers[3].reviewer, "D");
    for (size_t k = 0; k < 4; k++) assert_string_equal(rk->entries[k].model, m[k]);
    assert_near(all_score_of(rk, "D"), 3.0 / 24);
    /* D's reviews count 0: its model's score comes from the honest reviews only. */
    assert_near(score_of(rk, "D"), 0);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* A cycle every reviewer agrees on (A > B, B > C, C > A): every score is 1/2, min-max is
** undefined, so the weights stay equal and the first iteration has nothing to change. */
static void pr_equal_reviewers_keep_equal_weights(void **state)
{
    (void)state;
    const char *r[] = {"A", "B", "C"};
    arb_battles *b = arb_battles_create();
    for (int k = 0; k < 3; k++) {
        add(b, "q1", "A", "B", r[k], -1);
        add(b, "q1", "B", "C", r[k], -1);
        add(b, "q1", "C", "A", r[k], -1);
    }
    arb_rank_params p = pr_params();
    arb_rank *rk = peer_rank(b, &p);
    assert_int_equal(rk->iterations, 1);
    assert_int_equal(rk->converged, 1);
    for (int k = 0; k < 3; k++) {
        assert_near(weight_of(rk, r[k]), 1.0 / 3);
        assert_near(score_of(rk, r[k]), 0.5);
        assert_near(rk->all_scores[k], 0.5);
    }
    /* Equal scores: entries by name. */
    assert_string_equal(rk->entries[0].model, "A");
    assert_string_equal(rk->entries[2].model, "C");
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* exclude_self on the three-model case leaves each reviewer the one pair without itself:
** A reviews B-C (B wins), B reviews A-C (A wins), C reviews A-B (tie); 2 battles each.
** Iteration 1: S_A = (1 + 1/2)/2 = 0.75, S_B = (1 + 1/2)/2 = 0.75, S_C = 0: w = (1/2, 1/2, 0).
** Iteration 2: u = (1.5, 1.5, 0). With exclude_self N counts the weights (peer.c, pr_scores):
** N_A = 1.5 (B) + 0 (C), V_A = 1.5; N_B = 1.5 (A) + 0, V_B = 1.5; N_C = 3, V_C = 0:
** S = (1, 1, 0) (the unweighted N of §6 would give 0.75, 0.75, 0), the same weights:
** converged after 2 iterations. The final scores are those of the weights (1/2, 1/2, 0). */
static void pr_exclude_self(void **state)
{
    (void)state;
    arb_battles *b = three_models();
    arb_rank_params p = pr_params();
    p.exclude_self = 1;
    arb_rank *rk = peer_rank(b, &p);
    assert_int_equal(rk->iterations, 2);
    assert_int_equal(rk->converged, 1);
    assert_near(weight_of(rk, "A"), 0.5);
    assert_near(weight_of(rk, "B"), 0.5);
    assert_near(weight_of(rk, "C"), 0);
    assert_near(score_of(rk, "A"), 1);
    assert_near(score_of(rk, "B"), 1);
    assert_near(score_of(rk, "C"), 0);
    assert_near(all_score_of(rk, "A"), 0.75);
    assert_near(all_score_of(rk, "C"), 0);
    assert_int_equal(rk->entries[0].battles, 2);
    assert_int_equal(reviewer_of(rk, "A")->reviews, 1);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* A 4-model case where §6's unweighted N never settles under exclude_self (the weights cycle)
** and the weighted N converges. Expected weights from an independent Python version of the
** iteration (tolerance 1e-9), to 1e-8. */
static void pr_exclude_self_converges(void **state)
{
    (void)state;
    static const struct { const char *i, *j, *r; int s; } rv[] = {
        {"B", "C", "A", -1}, {"B", "D", "A", 1},  {"C", "D", "A", 1},  {"A", "C", "B", -1},
        {"A", "D", "B", 0},  {"C", "D", "B", 1},  {"A", "B", "C", 0},  {"A", "D", "C", 1},
        {"B", "D", "C", 1},  {"A", "B", "D", -1}, {"A", "C", "D", 1},  {"B", "C", "D", -1},
    };
    arb_battles *b = arb_battles_create();
    for (size_t k = 0; k < sizeof rv / sizeof rv[0]; k++)
        add(b, "q1", rv[k].i, rv[k].j, rv[k].r, rv[k].s);
    arb_rank_params p = pr_params();
    p.exclude_self = 1;
    p.max_iterations = 100;
    arb_rank *rk = peer_rank(b, &p);
    assert_int_equal(rk->converged, 1);
    assert_near_eps(weight_of(rk, "A"), 0.2589320039028861, 1e-8);
    assert_near_eps(weight_of(rk, "B"), 0.2000861249197951, 1e-8);
    assert_near(weight_of(rk, "C"), 0);
    assert_near_eps(weight_of(rk, "D"), 0.5409818711773188, 1e-8);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* A and B review A-B (each says it wins) and judge X, not a contestant, says B wins.
** Fixed weight 2: iteration 1 u = (1, 1, 2): V_A = 1, V_B = 1 + 2 = 3, N = 3: S = (1/3, 1):
** w = (0, 1). Iteration 2: u_B = 2 (mean 1 over the two peers), X = 2: V_A = 0, V_B = 4,
** S = (0, 4/3), the same weights: converged after 2. "All" gives X weight 1 too:
** S = (1/3, 2/3). X's weight is reported as 2 / 2 peers = 1.
** Fixed weight NAN (= 1, the mean): iteration 1 S = (1/3, 2/3), w = (0, 1); then u_B = 2, X 1:
** S = (0, 1); X reported as 1/2. */
static void pr_non_contestant_fixed_weight(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    add(b, "q1", "A", "B", "A", -1);
    add(b, "q1", "A", "B", "B", 1);
    add(b, "q1", "B", "A", "X", -1);
    arb_reviewer_info info[] = {{"A", "A", NAN}, {"B", "B", NAN}, {"X", NULL, 2}};
    arb_rank_params p = pr_params();
    p.reviewer_info = info;
    p.n_reviewer_info = 3;
    arb_rank *rk = peer_rank(b, &p);
    assert_int_equal(rk->iterations, 2);
    assert_int_equal(rk->converged, 1);
    assert_near(score_of(rk, "A"), 0);
    assert_near(score_of(rk, "B"), 4.0 / 3);
    assert_near(all_score_of(rk, "A"), 1.0 / 3);
    assert_near(all_score_of(rk, "B"), 2.0 / 3);
    assert_near(weight_of(rk, "A"), 0);
    assert_near(weight_of(rk, "B"), 1);
    assert_near(weight_of(rk, "X"), 1);
    assert_null(reviewer_of(rk, "X")->model);
    arb_rank_destroy(rk);

    info[2].fixed_weight = NAN;
    rk = peer_rank(b, &p);
    assert_near(score_of(rk, "A"), 0);
    assert_near(score_of(rk, "B"), 1);
    assert_near(weight_of(rk, "X"), 0.5);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* top_k_reviewers = 2 on the three-model case. The first iteration picks by the equal-weight
** scores (0.75, 1/3, 5/12): A and C review, u = (1, -, 1), N = 4 each:
**   V_A = 2 + 1/2 = 2.5 (0.625), V_B = 1 + 1/2 = 1.5 (0.375), V_C = 0 + 2 = 2 (0.5)
**   min-max over all peers: A 1, B 0, C 1/2 -> w = (2/3, 0, 1/3).
** Iteration 2 picks by (0.625, 0.375, 0.5): A and C again; mean of their weights 1/2, so
** u = (4/3, -, 2/3): V_A = 8/3 + 1/3 = 3 (0.75), V_B = 4/3 + 1/3 (5/12), V_C = 4/3 (1/3)
**   -> B (5/12 - 4/12)/(9/12 - 4/12) = 1/5 -> w = (5/6, 1/6, 0).
** Final round picks by (0.75, 5/12, 1/3): A and B, u = (5/3, 1/3, -):
**   V_A = 2(5/3 + 1/3) = 4 (1), V_B = 5/3 + 1/6 = 11/6 (11/24), V_C = 1/6 (1/24). */
static void pr_top_k_reviewers(void **state)
{
    (void)state;
    arb_battles *b = three_models();
    arb_rank_params p = pr_params();
    p.top_k_reviewers = 2;
    p.max_iterations = 2;
    arb_rank *rk = peer_rank(b, &p);
    assert_int_equal(rk->iterations, 2);
    assert_near(weight_of(rk, "A"), 5.0 / 6);
    assert_near(weight_of(rk, "B"), 1.0 / 6);
    assert_near(weight_of(rk, "C"), 0);
    assert_near(score_of(rk, "A"), 1);
    assert_near(score_of(rk, "B"), 11.0 / 24);
    assert_near(score_of(rk, "C"), 1.0 / 24);
    /* "All" is every reviewer, no top-K. */
    assert_near(all_score_of(rk, "B"), 1.0 / 3);
    arb_rank_destroy(rk);

    /* K at least the number of reviewer models: the same as no restriction. */
    p.top_k_reviewers = 3;
    rk = peer_rank(b, &p);
    assert_near(weight_of(rk, "A"), 17.0 / 24);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* Issue 12, metrics 8: the defaults iterate to the tolerance (1e-9, §6). In this full
** three-model round robin (every ordered pair, every reviewer, one question) the weights
** contract slowly: 31 iterations; the old default of 10 stopped with weights still moving.
** At the end the weights are (to the tolerance) the min-max-normalised scores of the
** reviewers' own models -- the fixed point -- and the result says converged. */
static void pr_defaults_iterate_to_tolerance(void **state)
{
    (void)state;
    static const struct {
        const char *i, *j, *r;
        int s;
    } rows[] = {{"A", "B", "A", -1}, {"A", "B", "B", -1}, {"A", "B", "C", -1},
                {"A", "C", "A", 1},  {"A", "C", "B", -1}, {"A", "C", "C", 0},
                {"B", "A", "A", 0},  {"B", "A", "B", 1},  {"B", "A", "C", 1},
                {"B", "C", "A", 0},  {"B", "C", "B", -1}, {"B", "C", "C", 0},
                {"C", "A", "A", -1}, {"C", "A", "B", 0},  {"C", "A", "C", 0},
                {"C", "B", "A", -1}, {"C", "B", "B", 1},  {"C", "B", "C", 0}};
    arb_battles *b = arb_battles_create();
    for (size_t k = 0; k < sizeof rows / sizeof *rows; k++)
        add(b, "q1", rows[k].i, rows[k].j, rows[k].r, rows[k].s);
    arb_rank_params p = pr_params(); /* default max_iterations and tolerance */
    assert_int_equal(p.max_iterations, 1000);
    arb_rank *rk = peer_rank(b, &p);
    int converged = 0;
    int iterations = arb_rank_iterations(rk, &converged);
    assert_int_equal(converged, 1);
    assert_true(iterations > 10 && iterations < 100);
    const char *names[] = {"A", "B", "C"};
    double lo = INFINITY, hi = -INFINITY, x[3], sum = 0;
    for (int k = 0; k < 3; k++) {
        x[k] = score_of(rk, names[k]);
        lo = fmin(lo, x[k]);
        hi = fmax(hi, x[k]);
    }
    for (int k = 0; k < 3; k++) sum += (x[k] - lo) / (hi - lo);
    for (int k = 0; k < 3; k++)
        assert_near_eps(weight_of(rk, names[k]), (x[k] - lo) / (hi - lo) / sum, 1e-8);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* Issue 12, metrics 7 (PRD summary level): each reviewer's win-rate ranking of the contestants
** and the printed ranking against the humans' ranking. Humans: A > B > C (win rates 1, ½, 0).
** judge-x says B > A > C (½, 1, 0): ranks (2,3,1) vs (3,2,1), Σd² = 2, ρ = 1 − 12/24 = ½;
** pairs AB discordant, AC and BC concordant: τb = 1/3. judge-y agrees with the humans: 1, 1.
** The score column (both judges): A ¾, B ¾, C 0: ranks (2.5, 2.5, 1) vs (3, 2, 1),
** ρ = 1.5/√(1.5·2) = √3/2; τb = 2/√((3−1)(3−0)) = 2/√6 (one tie in the scores). */
static void human_summary_correlations(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    add(b, "q1", "A", "B", "human-1", -1);
    add(b, "q1", "A", "C", "human-1", -1);
    add(b, "q1", "B", "C", "human-1", -1);
    add(b, "q1", "A", "B", "judge-x", 1);
    add(b, "q1", "A", "C", "judge-x", -1);
    add(b, "q1", "B", "C", "judge-x", -1);
    add(b, "q1", "A", "B", "judge-y", -1);
    add(b, "q1", "A", "C", "judge-y", -1);
    add(b, "q1", "B", "C", "judge-y", -1);
    arb_rank_params p = arb_rank_default_params();
    arb_rank *rk = NULL;
    char *err = NULL;
    assert_int_equal(arb_rank_compute(b, &p, &rk, &err), ARB_OK);
    assert_near(reviewer_of(rk, "judge-x")->summary_spearman, 0.5);
    assert_near(reviewer_of(rk, "judge-x")->summary_kendall, 1.0 / 3);
    assert_near(reviewer_of(rk, "judge-y")->summary_spearman, 1);
    assert_near(reviewer_of(rk, "judge-y")->summary_kendall, 1);
    assert_int_equal(rk->human.summary_models, 3);
    assert_near(rk->human.summary_spearman, sqrt(3) / 2);
    assert_near(rk->human.summary_kendall, 2 / sqrt(6));
    char *json = arb_rank_to_json(rk);
    json_t *root = json_loads(json, 0, NULL);
    assert_non_null(root);
    json_t *human = json_object_get(root, "human");
    assert_near(json_real_value(json_object_get(human, "summary_kendall")), 2 / sqrt(6));
    json_t *revs = json_object_get(root, "reviewers");
    int seen = 0;
    for (size_t k = 0; k < json_array_size(revs); k++) {
        json_t *o = json_array_get(revs, k);
        if (strcmp(json_string_value(json_object_get(o, "reviewer")), "judge-x")) continue;
        assert_near(json_real_value(json_object_get(o, "summary_spearman")), 0.5);
        assert_near(json_real_value(json_object_get(o, "summary_kendall")), 1.0 / 3);
        seen = 1;
    }
    assert_true(seen);
    json_decref(root);
    arb_free(json);
    char *text = arb_rank_to_text(rk);
    assert_non_null(strstr(text, "Kendall tau-b  +0.816"));
    arb_free(text);
    arb_rank_destroy(rk);

    /* one contestant ranked by the humans: undefined, null in JSON */
    arb_battles_destroy(b);
    b = arb_battles_create();
    add(b, "q1", "A", "B", "human-1", -1);
    add(b, "q2", "A", "C", "judge-x", -1);
    assert_int_equal(arb_rank_compute(b, &p, &rk, &err), ARB_OK);
    assert_undefined(reviewer_of(rk, "judge-x")->summary_spearman);
    assert_undefined(rk->human.summary_kendall);
    json = arb_rank_to_json(rk);
    root = json_loads(json, 0, NULL);
    assert_true(json_is_null(json_object_get(json_object_get(root, "human"), "summary_spearman")));
    json_decref(root);
    arb_free(json);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

static void pr_bad_parameters_and_empty(void **state)
{
    (void)state;
    arb_battles *b = three_models();
    arb_rank *rk = new_rank();
    char *err = NULL;
    arb_rank_params p = pr_params();
    p.max_iterations = 0;
    assert_int_equal(arb__peer_rank(b, &p, rk, &err), ARB_INVALID);
    assert_non_null(err);
    assert_non_null(strstr(err, "max_iterations"));
    arb_free(err);
    err = NULL;
    p = pr_params();
    p.tolerance = -1;
    assert_int_equal(arb__peer_rank(b, &p, rk, &err), ARB_INVALID);
    assert_non_null(strstr(err, "tolerance"));
    arb_free(err);
    err = NULL;
    arb_reviewer_info info[] = {{"X", NULL, -0.5}};
    p = pr_params();
    p.reviewer_info = info;
    p.n_reviewer_info = 1;
    assert_int_equal(arb__peer_rank(b, &p, rk, &err), ARB_INVALID);
    assert_non_null(strstr(err, "fixed_weight"));
    arb_free(err);
    err = NULL;
    p = pr_params();
    p.method = ARB_RANK_ELO;
    assert_int_equal(arb__peer_rank(b, &p, rk, &err), ARB_INVALID);
    arb_free(err);
    assert_int_equal(rk->n_entries, 0);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);

    /* No battles: nothing to rank, nothing to learn. */
    b = arb_battles_create();
    p = pr_params();
    rk = peer_rank(b, &p);
    assert_int_equal(rk->n_entries, 0);
    assert_int_equal(rk->n_reviewers, 0);
    assert_int_equal(rk->iterations, 0);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* ---- weighted Elo ------------------------------------------------------------------------- */

/* Quality A > B > C > D over 4 questions, every ordered pair: reviewers A and B are right,
** C right on even questions and wrong on odd ones, D always wrong. D's model comes last, so D
** gets weight 0; the weighted ratings then spread wider than the equal-weight ones, because
** the wrong reviews no longer pull the order together. Weighted Elo is zero-sum: the ratings
** average the initial rating. */
static void peer_elo_favours_accurate_reviewer(void **state)
{
    (void)state;
    const char *m[] = {"A", "B", "C", "D"};
    const char *qs[] = {"q1", "q2", "q3", "q4"};
    arb_battles *b = arb_battles_create();
    for (int q = 0; q < 4; q++)
        for (int r = 0; r < 4; r++)
            for (int x = 0; x < 4; x++)
                for (int y = 0; y < 4; y++) {
                    if (x == y) continue;
                    int truth = x < y ? -1 : 1;
                    int right = r < 2 || (r == 2 && q % 2 == 0);
                    add(b, qs[q], m[x], m[y], m[r], right ? truth : -truth);
                }
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_PEER_ELO;
    p.elo_permutations = 20;
    p.seed = 7;
    arb_rank *rk = peer_rank(b, &p);
    assert_int_equal(rk->n_entries, 4);
    for (size_t k = 0; k < 4; k++) assert_string_equal(rk->entries[k].model, m[k]);
    assert_near(weight_of(rk, "D"), 0);
    assert_true(weight_of(rk, "A") > weight_of(rk, "B"));
    assert_true(weight_of(rk, "B") > weight_of(rk, "C"));
    assert_string_equal(rk->reviewers[0].reviewer, "A");
    double mean = 0, spread_w = score_of(rk, "A") - score_of(rk, "D");
    double spread_all = all_score_of(rk, "A") - all_score_of(rk, "D");
    for (size_t k = 0; k < 4; k++) {
        mean += rk->entries[k].score / 4;
        assert_true(isfinite(rk->entries[k].sd) && rk->entries[k].sd >= 0);
    }
    assert_near_eps(mean, p.elo_initial, 1e-6);
    assert_true(spread_w > spread_all);
    assert_true(spread_all > 0);
    int iterations = rk->iterations;
    double w_a = weight_of(rk, "A");
    arb_rank_destroy(rk);

    /* Seeded: the same seed gives the same weights. */
    rk = peer_rank(b, &p);
    assert_int_equal(rk->iterations, iterations);
    assert_true(weight_of(rk, "A") == w_a);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* With an anchor both columns are shifted so the anchor sits at the initial rating; the
** differences between models stay as they were. */
static void peer_elo_anchor(void **state)
{
    (void)state;
    arb_battles *b = three_models();
    arb_rank_params p = arb_rank_default_params();
    p.method = ARB_RANK_PEER_ELO;
    p.elo_permutations = 10;
    arb_rank *plain = peer_rank(b, &p);
    p.anchor = "B";
    arb_rank *anchored = peer_rank(b, &p);
    assert_near_eps(score_of(anchored, "B"), 1000, 1e-9);
    assert_near_eps(all_score_of(anchored, "B"), 1000, 1e-9);
    assert_near_eps(score_of(anchored, "A") - score_of(anchored, "C"),
                    score_of(plain, "A") - score_of(plain, "C"), 1e-9);
    assert_near_eps(all_score_of(anchored, "A") - all_score_of(anchored, "B"),
                    all_score_of(plain, "A") - all_score_of(plain, "B"), 1e-9);
    assert_true(weight_of(anchored, "A") == weight_of(plain, "A"));
    arb_rank_destroy(plain);
    arb_rank_destroy(anchored);
    arb_battles_destroy(b);
}

/* ---- self-enhancement --------------------------------------------------------------------- */

/* Quality B > A > C on 10 questions, every ordered pair, reviewers A, B, C. B and C are fair.
** A prefers its own answer on questions 0..5 and is fair on 6..9.
**   A by A: biased questions 4/4 battles won, fair ones 2/4 (beats C, loses to B):
**           (6*4 + 4*2)/40 = 0.8; A by B and C on the same pairs: 4 of 8 per question = 0.5;
**           self-enhancement 0.3.
**   B by B: 1. B by A and C on the same pairs: per question 8 battles, of which A's 2 on A-B
**           go against B on biased questions: (6*6 + 4*8)/80 = 0.85; self-enhancement 0.15
**           (A's bias shows up in the others' column: the definition compares with every
**           other reviewer).
**   C by C: 0, C by the others: 0; self-enhancement 0.
** Bootstrap over questions: with k biased questions drawn of 10, A's value is k/20 and B's
** k/40, so the intervals lie inside [0, 0.5] and [0, 0.25]. */
static arb_battles *self_biased(void)
{
    const char *m[] = {"A", "B", "C"};
    const int quality[] = {2, 3, 1};
    arb_battles *b = arb_battles_create();
    for (int q = 0; q < 10; q++) {
        char qid[8];
        snprintf(qid, sizeof qid, "q%d", q);
        for (int r = 0; r < 3; r++)
            for (int x = 0; x < 3; x++)
                for (int y = 0; y < 3; y++) {
                    if (x == y) continue;
                    int s = quality[x] > quality[y] ? -1 : 1;
                    if (r == 0 && q < 6 && (x == 0 || y == 0)) s = x == 0 ? -1 : 1;
                    add(b, qid, m[x], m[y], m[r], s);
                }
    }
    return b;
}

static void self_enhancement_biased_and_fair(void **state)
{
    (void)state;
    arb_battles *b = self_biased();
    arb_rank_params p = arb_rank_default_params();
    p.bootstrap = 200;
    p.seed = 42;
    arb_rank *rk = new_rank();
    assert_int_equal(arb__rank_self_enhancement(b, &p, rk), 0);
    assert_int_equal(rk->n_reviewers, 3);
    const arb_rank_reviewer *a = reviewer_of(rk, "A"), *bb = reviewer_of(rk, "B"),
                            *c = reviewer_of(rk, "C");
    assert_near(a->self_enhancement, 0.3);
    assert_near(bb->self_enhancement, 0.15);
    assert_near(c->self_enhancement, 0);
    assert_string_equal(a->model, "A");
    assert_undefined(a->weight);
    assert_int_equal(a->reviews, 60);
    for (int k = 0; k < 3; k++) {
        const arb_rank_reviewer *rv = &rk->reviewers[k];
        assert_true(rv->self_ci_lo <= rv->self_enhancement + EPS);
        assert_true(rv->self_ci_hi >= rv->self_enhancement - EPS);
    }
    assert_true(a->self_ci_lo >= 0 && a->self_ci_hi <= 0.5 && a->self_ci_hi > a->self_ci_lo);
    assert_true(bb->self_ci_lo >= 0 && bb->self_ci_hi <= 0.25);
    assert_near(c->self_ci_lo, 0);
    assert_near(c->self_ci_hi, 0);
    double lo = a->self_ci_lo, hi = a->self_ci_hi;
    arb_rank_destroy(rk);

    /* Reproducible for a seed. */
    rk = new_rank();
    assert_int_equal(arb__rank_self_enhancement(b, &p, rk), 0);
    assert_true(reviewer_of(rk, "A")->self_ci_lo == lo);
    assert_true(reviewer_of(rk, "A")->self_ci_hi == hi);
    arb_rank_destroy(rk);

    /* bootstrap 0 means 1000 resamples for this interval. */
    p.bootstrap = 0;
    rk = new_rank();
    assert_int_equal(arb__rank_self_enhancement(b, &p, rk), 0);
    double lo0 = reviewer_of(rk, "A")->self_ci_lo, hi0 = reviewer_of(rk, "A")->self_ci_hi;
    arb_rank_destroy(rk);
    p.bootstrap = 1000;
    rk = new_rank();
    assert_int_equal(arb__rank_self_enhancement(b, &p, rk), 0);
    assert_true(isfinite(lo0));
    assert_true(reviewer_of(rk, "A")->self_ci_lo == lo0);
    assert_true(reviewer_of(rk, "A")->self_ci_hi == hi0);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* After peer rank the reviewers are updated in place (weights kept), and exclude_self does not
** hide the reviewer's own pairs from self-enhancement (only from the ranking). */
static void self_enhancement_after_peer_rank(void **state)
{
    (void)state;
    arb_battles *b = self_biased();
    arb_rank_params p = pr_params();
    p.exclude_self = 1;
    p.bootstrap = 50;
    arb_rank *rk = peer_rank(b, &p);
    size_t n_names = rk->n_names;
    double w_a = weight_of(rk, "A");
    assert_int_equal(arb__rank_self_enhancement(b, &p, rk), 0);
    assert_int_equal(rk->n_reviewers, 3);
    assert_int_equal(rk->n_names, n_names);
    assert_true(weight_of(rk, "A") == w_a);
    assert_near(reviewer_of(rk, "A")->self_enhancement, 0.3);
    /* With exclude_self each reviewer keeps the 2 orders of its 1 other pair per question. */
    assert_int_equal(reviewer_of(rk, "A")->reviews, 20);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* The others' win rate is taken on the comparisons the reviewer judged. On q1, A judged A-C
** (A wins); B judged A-C (C wins) and A-B (A wins). Matched: A by A 1, A by B on A-C 0:
** self-enhancement 1 (not 1 - 1/2, which B's A-B review would give unmatched). B judged its
** own pair A-B, but nobody else did: undefined. */
static void self_enhancement_matches_comparisons(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    add(b, "q1", "A", "C", "A", -1);
    add(b, "q1", "C", "A", "B", -1);
    add(b, "q1", "A", "B", "B", -1);
    arb_rank_params p = arb_rank_default_params();
    p.bootstrap = 20;
    arb_rank *rk = new_rank();
    assert_int_equal(arb__rank_self_enhancement(b, &p, rk), 0);
    assert_int_equal(rk->n_reviewers, 2);
    assert_near(reviewer_of(rk, "A")->self_enhancement, 1);
    assert_undefined(reviewer_of(rk, "B")->self_enhancement);
    assert_int_equal(reviewer_of(rk, "B")->reviews, 2);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* A reviewer that judged no pair of its own, or one that is not a contestant: NAN / absent. */
static void self_enhancement_undefined(void **state)
{
    (void)state;
    arb_battles *b = arb_battles_create();
    add(b, "q1", "A", "B", "C", -1); /* C is a contestant below, but not in this pair */
    add(b, "q1", "A", "C", "X", -1);
    add(b, "q1", "A", "C", "A", -1);
    arb_rank_params p = arb_rank_default_params();
    arb_rank *rk = new_rank();
    assert_int_equal(arb__rank_self_enhancement(b, &p, rk), 0);
    /* A judged A-C, and X judged the same comparison: A by A 1, by X 1: 0. */
    assert_near(reviewer_of(rk, "A")->self_enhancement, 0);
    assert_undefined(reviewer_of(rk, "C")->self_enhancement);
    assert_undefined(reviewer_of(rk, "C")->self_ci_lo);
    for (size_t k = 0; k < rk->n_reviewers; k++)
        assert_string_not_equal(rk->reviewers[k].reviewer, "X");
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

/* ---- agreement with the humans ------------------------------------------------------------ */

/* Contestants A, B; reviewers J1, J2, J3 (not contestants); annotators human-1..3. Votes on
** A vs B (A = "first" in the fixed orientation):
**   q1: humans A, A, B -> A.  J1 A, J2 A, J3 B.     all: A (match)   weighted: B (no)
**   q2: humans A, B -> tie.   J1 A, J2 tie, J3 B.   all: tie (match) weighted: B (no)
**   q3: humans B, B, B -> B.  J1 A, J2 A, J3 B.     all: A (no)      weighted: B (match)
**   q4: (shown B first) human A. J1 A, J2 A, J3 B.  all: A (match)   weighted: B (no)
**   q5: humans only; q6: reviewers only; a guanaco pair judged by humans only: not counted.
** Weights (0.1, 0.1, 0.8). Accuracy all 3/4, weighted 1/4.
** Fleiss (2 raters, categories A, tie, B), all: items [2,0,0] [0,2,0] [1,0,1] [2,0,0]:
**   P = (1, 1, 0, 1), mean 3/4; p = (5/8, 2/8, 1/8), Pe = 30/64; kappa = (3/4 - 15/32)/(17/32)
**   = 9/17.
** Weighted: items [1,0,1] [0,1,1] [0,0,2] [1,0,1]: mean P 1/4; p = (2/8, 1/8, 5/8), Pe = 30/64;
**   kappa = (1/4 - 15/32)/(17/32) = -7/17. */
static arb_battles *human_case(void)
{
    arb_battles *b = arb_battles_create();
    add(b, "q1", "A", "B", "human-1", -1);
    add(b, "q1", "A", "B", "human-2", -1);
    add(b, "q1", "A", "B", "human-3", 1);
    add(b, "q1", "A", "B", "J1", -1);
    add(b, "q1", "B", "A", "J2", 1);
    add(b, "q1", "A", "B", "J3", 1);
    add(b, "q2", "A", "B", "human-1", -1);
    add(b, "q2", "A", "B", "human-2", 1);
    add(b, "q2", "A", "B", "J1", -1);
    add(b, "q2", "A", "B", "J2", 0);
    add(b, "q2", "A", "B", "J3", 1);
    add(b, "q3", "A", "B", "human-1", 1);
    add(b, "q3", "A", "B", "human-2", 1);
    add(b, "q3", "A", "B", "human-3", 1);
    add(b, "q3", "A", "B", "J1", -1);
    add(b, "q3", "A", "B", "J2", -1);
    add(b, "q3", "A", "B", "J3", 1);
    add(b, "q4", "B", "A", "human-1", 1);
    add(b, "q4", "B", "A", "J1", 1);
    add(b, "q4", "B", "A", "J2", 1);
    add(b, "q4", "B", "A", "J3", -1);
    add(b, "q5", "A", "B", "human-1", 1);
    add(b, "q6", "A", "B", "J1", 1);
    add(b, "q1", "guanaco", "A", "human-1", 1);
    return b;
}

static void human_agreement_hand(void **state)
{
    (void)state;
    arb_battles *b = human_case();
    arb_rank_params p = arb_rank_default_params();
    p.human_prefix = "human";
    double *weight = calloc(b->reviewers.n, sizeof *weight);
    assert_non_null(weight);
    weight[arb__strtab_find(&b->reviewers, "J1")] = 0.1;
    weight[arb__strtab_find(&b->reviewers, "J2")] = 0.1;
    weight[arb__strtab_find(&b->reviewers, "J3")] = 0.8;
    arb_rank *rk = new_rank();
    assert_int_equal(arb__rank_human_agreement(b, &p, weight, rk), 0);
    assert_int_equal(rk->human.n_comparisons, 4);
    assert_near(rk->human.accuracy_all, 0.75);
    assert_near(rk->human.accuracy_weighted, 0.25);
    assert_near(rk->human.fleiss_all, 9.0 / 17);
    assert_near(rk->human.fleiss_weighted, -7.0 / 17);

    /* No weights: only the "all" vote. */
    assert_int_equal(arb__rank_human_agreement(b, &p, NULL, rk), 0);
    assert_int_equal(rk->human.n_comparisons, 4);
    assert_near(rk->human.accuracy_all, 0.75);
    assert_undefined(rk->human.accuracy_weighted);
    assert_undefined(rk->human.fleiss_weighted);
    arb_rank_destroy(rk);
    free(weight);
    arb_battles_destroy(b);
}

/* Per-reviewer agreement (METHODS §4, PRD's per-reviewer table): contestants A, B; three
** annotators; gpt reviews each comparison in both orders, claude once (A first), always "A".
** Human plurality (A first): q1 A,A,B -> A; q2 B,B,tie -> B; q3 tie,tie,A -> tie; q4 A,B,tie
** -> none (skipped); q5 A,A,A -> A; q6 A,tie -> none (skipped; the sign of the mean says A).
** gpt, oriented to A first (order AB, then BA):
**   q1 A, A (2 hits); q2 B, A (1); q3 tie, B (1); q4, q6 skipped (4); q5 A, B (1).
**   8 reviews, 5 hits: accuracy 5/8. Table (gpt x human): AA 3, AB 1, tt 1, Bt 1, BB 1, BA 1;
**   rows A 4, t 1, B 3; columns A 4, t 2, B 2; p_o = 5/8, p_e = (16 + 2 + 6)/64 = 3/8,
**   kappa = (5/8 - 3/8)/(5/8) = 2/5.
** claude: q1 hit, q2 miss, q3 miss, q5 hit, q4 and q6 skipped: 4 reviews, accuracy 1/2, one
**   category only on its side: p_o = p_e = 1/2, kappa 0. */
static arb_battles *per_reviewer_case(void)
{
    arb_battles *b = arb_battles_create();
    static const struct {
        const char *q;
        int humans[3]; /* s with A first; 9 = no such annotator */
        int gpt_ab, gpt_ba; /* gpt's s in its own order (BA: B shown first) */
    } rows[] = {
        {"q1", {-1, -1, 1}, -1, 1}, {"q2", {1, 1, 0}, 1, 1},   {"q3", {0, 0, -1}, 0, -1},
        {"q4", {-1, 1, 0}, -1, 1},  {"q5", {-1, -1, -1}, -1, -1}, {"q6", {-1, 0, 9}, -1, 1},
    };
    static const char *const annotators[3] = {"human-1", "human-2", "human-3"};
    for (size_t k = 0; k < sizeof rows / sizeof *rows; k++) {
        for (int h = 0; h < 3; h++)
            if (rows[k].humans[h] != 9) add(b, rows[k].q, "A", "B", annotators[h], rows[k].humans[h]);
        add(b, rows[k].q, "A", "B", "gpt", rows[k].gpt_ab);
        add(b, rows[k].q, "B", "A", "gpt", rows[k].gpt_ba);
        add(b, rows[k].q, "A", "B", "claude", -1);
    }
    return b;
}

static void human_agreement_per_reviewer(void **state)
{
    (void)state;
    arb_battles *b = per_reviewer_case();
    arb_rank_params p = arb_rank_default_params();
    arb_rank *rk = new_rank();
    assert_int_equal(arb__rank_human_agreement(b, &p, NULL, rk), 0);
    const arb_rank_reviewer *gpt = reviewer_of(rk, "gpt"), *claude = reviewer_of(rk, "claude");
    assert_int_equal(gpt->human_reviews, 8);
    assert_int_equal(gpt->human_ties_skipped, 4);
    assert_near(gpt->human_accuracy, 5.0 / 8);
    assert_near(gpt->human_kappa, 2.0 / 5);
    assert_int_equal(claude->human_reviews, 4);
    assert_int_equal(claude->human_ties_skipped, 2);
    assert_near(claude->human_accuracy, 0.5);
    assert_near(claude->human_kappa, 0);
    arb_rank_destroy(rk);

    /* through arb_rank_compute: text and JSON (reviewer_agreement) */
    arb_rank *r = NULL;
    char *err = NULL;
    assert_int_equal(arb_rank_compute(b, &p, &r, &err), ARB_OK);
    char *text = arb_rank_to_text(r);
    assert_non_null(strstr(text, "each reviewer against the humans' majority, every review "
                                 "counted (both orders"));
    assert_non_null(strstr(text, "gpt              8     62.5%    +0.400         4\n"));
    assert_non_null(strstr(text, "claude           4     50.0%    +0.000         2\n"));
    arb_free(text);
    char *json = arb_rank_to_json(r);
    json_t *root = json_loads(json, 0, NULL);
    json_t *agreement = json_object_get(root, "reviewer_agreement");
    assert_int_equal(json_array_size(agreement), 2);
    int seen = 0;
    for (size_t k = 0; k < 2; k++) {
        json_t *o = json_array_get(agreement, k);
        if (strcmp(json_string_value(json_object_get(o, "reviewer")), "gpt")) continue;
        seen = 1;
        assert_int_equal(json_integer_value(json_object_get(o, "n_reviews")), 8);
        assert_near(json_real_value(json_object_get(o, "accuracy")), 0.625);
        assert_near(json_real_value(json_object_get(o, "kappa")), 0.4);
        assert_int_equal(json_integer_value(json_object_get(o, "n_human_ties_skipped")), 4);
    }
    assert_true(seen);
    json_decref(root);
    arb_free(json);
    arb_rank_destroy(r);

    /* the earlier case: J3 gets 1 of 3 right (q2's annotators tie: skipped; q6 has no human:
    ** neither counted nor skipped); a constant-looking table gives kappa 0 */
    arb_battles_destroy(b);
    b = human_case();
    rk = new_rank();
    assert_int_equal(arb__rank_human_agreement(b, &p, NULL, rk), 0);
    const arb_rank_reviewer *j1 = reviewer_of(rk, "J1"), *j3 = reviewer_of(rk, "J3");
    assert_int_equal(j1->human_reviews, 3);
    assert_int_equal(j1->human_ties_skipped, 1);
    assert_near(j1->human_accuracy, 2.0 / 3);
    assert_int_equal(j3->human_reviews, 3);
    assert_near(j3->human_accuracy, 1.0 / 3);
    assert_near(j3->human_kappa, 0);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);

    /* no humans: no per-reviewer figures, reviewer_agreement is null */
    b = three_models();
    assert_int_equal(arb_rank_compute(b, &p, &r, &err), ARB_OK);
    json = arb_rank_to_json(r);
    root = json_loads(json, 0, NULL);
    assert_true(json_is_null(json_object_get(root, "reviewer_agreement")));
    json_decref(root);
    arb_free(json);
    arb_rank_destroy(r);
    arb_battles_destroy(b);
}

static void human_agreement_none(void **state)
{
    (void)state;
    arb_battles *b = three_models();
    arb_rank_params p = arb_rank_default_params();
    p.human_prefix = "human";
    arb_rank *rk = new_rank();
    assert_int_equal(arb__rank_human_agreement(b, &p, NULL, rk), 0);
    assert_int_equal(rk->human.n_comparisons, 0);
    assert_undefined(rk->human.accuracy_all);
    assert_undefined(rk->human.fleiss_all);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);

    /* Humans, but every comparison they judged has all annotators and reviewers agree on a
    ** single category: accuracy 1, kappa undefined (p_e = 1). */
    b = arb_battles_create();
    add(b, "q1", "A", "B", "human-1", -1);
    add(b, "q1", "A", "B", "J1", -1);
    add(b, "q2", "B", "A", "human-1", 1);
    add(b, "q2", "A", "B", "J1", -1);
    rk = new_rank();
    assert_int_equal(arb__rank_human_agreement(b, &p, NULL, rk), 0);
    assert_int_equal(rk->human.n_comparisons, 2);
    assert_near(rk->human.accuracy_all, 1);
    assert_undefined(rk->human.fleiss_all);
    /* No prefix: no humans. */
    p.human_prefix = NULL;
    assert_int_equal(arb__rank_human_agreement(b, &p, NULL, rk), 0);
    assert_int_equal(rk->human.n_comparisons, 0);
    arb_rank_destroy(rk);
    arb_battles_destroy(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pr_bad_parameters_and_empty),
        cmocka_unit_test(pr_three_models_first_iterations),
        cmocka_unit_test(pr_defaults_iterate_to_tolerance),
        cmocka_unit_test(human_summary_correlations),
        cmocka_unit_test(pr_three_models_converged),
        cmocka_unit_test(pr_first_answer_reviewer_gets_low_weight),
        cmocka_unit_test(pr_equal_reviewers_keep_equal_weights),
        cmocka_unit_test(pr_exclude_self),
        cmocka_unit_test(pr_exclude_self_converges),
        cmocka_unit_test(pr_non_contestant_fixed_weight),
        cmocka_unit_test(pr_top_k_reviewers),
        cmocka_unit_test(peer_elo_favours_accurate_reviewer),
        cmocka_unit_test(peer_elo_anchor),
        cmocka_unit_test(self_enhancement_biased_and_fair),
        cmocka_unit_test(self_enhancement_after_peer_rank),
        cmocka_unit_test(self_enhancement_matches_comparisons),
        cmocka_unit_test(self_enhancement_undefined),
        cmocka_unit_test(human_agreement_hand),
        cmocka_unit_test(human_agreement_none),
        cmocka_unit_test(human_agreement_per_reviewer),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
