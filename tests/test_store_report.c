/*
** test_store_report.c -- what the report reads through store_report.c, called directly: the
** counts of an empty and of a filled store; judges with their judgments and dialogue turns;
** protocols with their models, items and the sums over their runs (a statistic no run recorded
** is absent, not 0); battle sources; transcripts (the longest dialogue of each kind first, turns
** in order, a turn without a call and a call without a reply); order-dependent items and their
** verdicts in both orders (E is no change); and callbacks that stop each walk.
**
** The store (hand-made, see fill):
**   items i1 "Q1", i2 "Q2"; answers i1: A "a1", B "b1".
**   pairwise (protocol sbs, template t, 4 options, rep 0), candidate A, baseline B:
**     j1 i1: ord 0 A (model a), ord 1 A (model b)  -> changed
**     j2 i1: ord 0 A (a),       ord 1 B (a)        -> same
**     j1 i2: ord 0 A (a),       ord 1 E (e)        -> E: not a change
**   judges j1, j2 (made by the judgments), j3 (http://user:pw@h.example:8/v1, no judgment).
**   runs: sbs {"sent":6,"failed":1,"seconds":2.5}, sbs with stats NULL.
**   dialogues: soft d1 on i1 (A, B) with turns 0 (call "hello") and 1 (no call), open;
**              soft d2 on i2 (B, A) without turns, done;
**              hard d3 on i1 (A, C) with turn 0 (a failed call: error "timeout").
**   battles: s1 (q1 A B r1, q2 B C r2, q1 A C r1), s0 (q9 X Y r9).
*/
#include "test_sql.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char items_jsonl[] = "{\"id\":\"i1\",\"question\":\"Q1\"}\n"
                                  "{\"id\":\"i2\",\"question\":\"Q2\"}\n";

typedef struct fixture {
    char dir[256];
    arb_store *s;
} fixture;

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    if (arb_test_store_with_items("store_report", items_jsonl, f.dir, sizeof f.dir, &f.s))
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    arb_store_close(f->s);
    arb_test_remove_dir(f->dir);
    return 0;
}

static int judged(arb_store *s, const char *judge, const char *item, int order, char verdict)
{
    arb__pairwise_row r = {"sbs", judge, item, "A", "B", "t", 4, order, 0, verdict, 0, 0, 0, NULL, NULL, NULL};
    return arb_test_put_sbs_judgment(s, &r, NULL);
}

static long long dialogue(arb_store *s, const char *kind, const char *item, const char *a1,
                          const char *a2)
{
    arb__dialogue_ref d = {kind, item, a1, a2, "[\"j1\"]", "{}", 0};
    long long id = 0;
    return arb__store_put_dialogue(s, &d, &id) ? 0 : id;
}

static void fill(arb_store *s)
{
    assert_int_equal(arb_test_exec_sql(s, "INSERT INTO answers(item_id, model, answer) VALUES"
                                          " ('i1', 'A', 'a1'), ('i1', 'B', 'b1')"), 0);
    assert_int_equal(judged(s, "j1", "i1", 0, 'A'), 0);
    assert_int_equal(judged(s, "j1", "i1", 1, 'A'), 0);
    assert_int_equal(judged(s, "j2", "i1", 0, 'A'), 0);
    assert_int_equal(judged(s, "j2", "i1", 1, 'B'), 0);
    assert_int_equal(judged(s, "j1", "i2", 0, 'A'), 0);
    assert_int_equal(judged(s, "j1", "i2", 1, 'E'), 0);
    assert_int_equal(arb_test_exec_sql(s, "INSERT INTO judges(name, base_url, model) VALUES"
                                          " ('j3', 'http://user:pw@h.example:8/v1', 'm3')"), 0);
    assert_int_equal(arb_test_exec_sql(s, "INSERT INTO runs(protocol, stats) VALUES"
                                          " ('sbs', '{\"sent\":6,\"failed\":1,\"seconds\":2.5}'),"
                                          " ('sbs', NULL)"), 0);
    assert_int_equal(arb_test_exec_sql(s, "INSERT INTO calls(id, key, judge_name, model, request,"
                                          " ok, content, error) VALUES"
                                          " (100, 'k100', 'j1', 'j1', '{}', 1, 'hello', NULL),"
                                          " (101, 'k101', 'j1', 'j1', '{}', 0, NULL, 'timeout')"),
                     0);
    long long d1 = dialogue(s, "soft", "i1", "A", "B"), d2 = dialogue(s, "soft", "i2", "B", "A"),
              d3 = dialogue(s, "hard", "i1", "A", "C");
    assert_true(d1 && d2 && d3);
    assert_int_equal(arb__store_put_turn(s, d1, 1, "j1", "follower", 0, NULL), ARB_OK);
    assert_int_equal(arb__store_put_turn(s, d1, 0, "j1", "initial", 100, "1"), ARB_OK);
    assert_int_equal(arb__store_put_turn(s, d3, 0, "j1", "agent1", 101, NULL), ARB_OK);
    assert_int_equal(arb__store_end_dialogue(s, d2, "2", "done", -1), ARB_OK);
    assert_int_equal(arb_test_exec_sql(s, "INSERT INTO battles(source, seq, q, i, j, reviewer, s)"
                                          " VALUES ('s1', 0, 'q1', 'A', 'B', 'r1', -1),"
                                          " ('s1', 1, 'q2', 'B', 'C', 'r2', 0),"
                                          " ('s1', 2, 'q1', 'A', 'C', 'r1', 1),"
                                          " ('s0', 0, 'q9', 'X', 'Y', 'r9', 1)"), 0);
}

/* What a walk saw, one line per row, and after how many rows its callback stops (0: never). */
typedef struct seen {
    char text[2048];
    int rows, stop_after;
} seen;

static int add_line(seen *w, const char *line)
{
    strncat(w->text, line, sizeof w->text - strlen(w->text) - 1);
    w->rows++;
    return w->stop_after && w->rows >= w->stop_after;
}

static const char *or_null(const char *s)
{
    return s ? s : "NULL";
}

/* ---- counts ------------------------------------------------------------------------------- */

static void test_counts(void **state)
{
    fixture *f = *state;
    arb__store_contents n;
    long long labels = -1, swapped = -1;
    assert_int_equal(arb__store_count_contents(f->s, &n), ARB_OK);
    assert_int_equal(n.items, 2);
    assert_int_equal(n.models + n.judges + n.pairwise + n.labels + n.battles + n.dialogues +
                         n.runs, 0);
    assert_int_equal(arb__store_count_swapped_judgments(f->s, &swapped), ARB_OK);
    assert_int_equal(swapped, 0);

    fill(f->s);
    assert_int_equal(arb_test_exec_sql(f->s, "INSERT INTO human_labels(item_id, candidate,"
                                             " baseline, verdict, annotator, source) VALUES"
                                             " ('i1', 'A', 'B', 'a', 'h', 't')"), 0);
    assert_int_equal(arb__store_count_contents(f->s, &n), ARB_OK);
    assert_int_equal(n.items, 2);
    assert_int_equal(n.models, 2);
    assert_int_equal(n.judges, 3);
    assert_int_equal(n.pairwise, 6);
    assert_int_equal(n.labels, 1);
    assert_int_equal(n.battles, 4);
    assert_int_equal(n.dialogues, 3);
    assert_int_equal(n.runs, 2);
    assert_int_equal(arb__store_count_labels(f->s, &labels), ARB_OK);
    assert_int_equal(labels, 1);
    assert_int_equal(arb__store_count_swapped_judgments(f->s, &swapped), ARB_OK);
    assert_int_equal(swapped, 3);
}

/* ---- judges, protocols, battle sources ---------------------------------------------------- */

static int judge_row(void *ud, const arb__judge_summary *j)
{
    char line[256];
    snprintf(line, sizeof line, "%s %s %s %lld %lld\n", j->name, j->model, or_null(j->base_url),
             j->n_judgments, j->n_turns);
    return add_line(ud, line);
}

static void test_judges(void **state)
{
    fixture *f = *state;
    fill(f->s);
    seen w = {"", 0, 0};
    assert_int_equal(arb__store_each_judge_summary(f->s, judge_row, &w), ARB_OK);
    /* j1 speaks in three turns (d1 twice, d3 once); the URL is the report's to shorten */
    assert_string_equal(w.text, "j1 j1 http://127.0.0.1:9/v1 4 3\n"
                                "j2 j2 http://127.0.0.1:9/v1 2 0\n"
                                "j3 m3 http://user:pw@h.example:8/v1 0 0\n");
    seen stop = {"", 0, 1};
    assert_int_equal(arb__store_each_judge_summary(f->s, judge_row, &stop), ARB_OK);
    assert_int_equal(stop.rows, 1);
}

static int protocol_row(void *ud, const arb__protocol_summary *p)
{
    char line[512];
    int k = snprintf(line, sizeof line, "%s models", p->protocol);
    for (size_t m = 0; m < p->n_models; m++) k += snprintf(line + k, sizeof line - (size_t)k, " %s", p->models[m]);
    k += snprintf(line + k, sizeof line - (size_t)k, "; items %lld runs %lld;", p->n_items, p->n_runs);
    for (int s = 0; s < 6; s++)
        k += p->has_sum[s] ? snprintf(line + k, sizeof line - (size_t)k, " %lld", p->sums[s])
                           : snprintf(line + k, sizeof line - (size_t)k, " n/a");
    if (p->has_seconds) snprintf(line + k, sizeof line - (size_t)k, " %.1fs\n", p->seconds);
    else snprintf(line + k, sizeof line - (size_t)k, " n/a\n");
    return add_line(ud, line);
}

static void test_protocols(void **state)
{
    fixture *f = *state;
    seen empty = {"", 0, 0};
    assert_int_equal(arb__store_each_protocol_summary(f->s, protocol_row, &empty), ARB_OK);
    assert_int_equal(empty.rows, 0);
    fill(f->s);
    seen w = {"", 0, 0};
    assert_int_equal(arb__store_each_protocol_summary(f->s, protocol_row, &w), ARB_OK);
    /* sums: sent, failed, cached, prompt, completion tokens, invalid; a NULL stats run adds
    ** nothing, a statistic no run has is n/a */
    assert_string_equal(w.text, "hard models A C; items 1 runs 0; n/a n/a n/a n/a n/a n/a n/a\n"
                                "sbs models A B; items 2 runs 2; 6 1 n/a n/a n/a n/a 2.5s\n"
                                "soft models A B; items 2 runs 0; n/a n/a n/a n/a n/a n/a n/a\n");
    seen stop = {"", 0, 1};
    assert_int_equal(arb__store_each_protocol_summary(f->s, protocol_row, &stop), ARB_OK);
    assert_int_equal(stop.rows, 1);
}

static int battle_source_row(void *ud, const arb__battle_source_summary *b)
{
    char line[128];
    snprintf(line, sizeof line, "%s battles %lld models %lld reviewers %lld questions %lld\n",
             b->source, b->n_battles, b->n_models, b->n_reviewers, b->n_questions);
    return add_line(ud, line);
}

static int name_row(void *ud, const char *name)
{
    char line[64];
    snprintf(line, sizeof line, "%s\n", name);
    return add_line(ud, line);
}

static void test_battle_sources(void **state)
{
    fixture *f = *state;
    fill(f->s);
    seen w = {"", 0, 0}, names = {"", 0, 0}, stop = {"", 0, 1};
    assert_int_equal(arb__store_each_battle_source_summary(f->s, battle_source_row, &w), ARB_OK);
    assert_string_equal(w.text, "s0 battles 1 models 2 reviewers 1 questions 1\n"
                                "s1 battles 3 models 3 reviewers 2 questions 2\n");
    assert_int_equal(arb__store_each_battle_source(f->s, name_row, &names), ARB_OK);
    assert_string_equal(names.text, "s0\ns1\n");
    assert_int_equal(arb__store_each_battle_source(f->s, name_row, &stop), ARB_OK);
    assert_string_equal(stop.text, "s0\n");
}

/* ---- transcripts -------------------------------------------------------------------------- */

static int transcript_row(void *ud, const arb__transcript *d)
{
    char line[256];
    snprintf(line, sizeof line, "%s %s %s/%s %s %s q=%s 1=%s 2=%s\n", d->kind, d->item_id,
             d->answer1, d->answer2, d->status, or_null(d->final_verdict), or_null(d->question),
             or_null(d->answer1_text), or_null(d->answer2_text));
    return add_line(ud, line);
}

static int turn_row(void *ud, const arb__transcript_turn *t)
{
    char line[256];
    snprintf(line, sizeof line, "  %d %s %s %s call=%d %s %s\n", t->turn, t->speaker, t->role,
             or_null(t->verdict), t->has_call, or_null(t->content), or_null(t->error));
    return add_line(ud, line);
}

static void test_transcripts(void **state)
{
    fixture *f = *state;
    fill(f->s);
    seen w = {"", 0, 0};
    /* pick 1 of each kind (hard before soft), then pick 2: the finished soft d2 before d1 */
    assert_int_equal(arb__store_each_transcript(f->s, 10, transcript_row, turn_row, &w), ARB_OK);
    assert_string_equal(w.text,
                        "hard i1 A/C open NULL q=Q1 1=a1 2=NULL\n"
                        "  0 j1 agent1 NULL call=1 NULL timeout\n"
                        "soft i2 B/A done 2 q=Q2 1=NULL 2=NULL\n"
                        "soft i1 A/B open NULL q=Q1 1=a1 2=b1\n"
                        "  0 j1 initial 1 call=1 hello NULL\n"
                        "  1 j1 follower NULL call=0 NULL NULL\n");
    seen two = {"", 0, 0};
    assert_int_equal(arb__store_each_transcript(f->s, 2, transcript_row, turn_row, &two), ARB_OK);
    assert_int_equal(two.rows, 3); /* hard d3 with its turn, soft d2 */
    seen none = {"", 0, 0};
    assert_int_equal(arb__store_each_transcript(f->s, 0, transcript_row, turn_row, &none), ARB_OK);
    assert_int_equal(none.rows, 0);
    seen stop = {"", 0, 2}; /* stops in the first dialogue's turns */
    assert_int_equal(arb__store_each_transcript(f->s, 10, transcript_row, turn_row, &stop), ARB_OK);
    assert_int_equal(stop.rows, 2);
}

/* ---- order-dependent items ---------------------------------------------------------------- */

typedef struct order_walk {
    seen w;
    arb__order_verdicts *ov;
} order_walk;

static int verdict_row(void *ud, const arb__order_verdict *v)
{
    char line[128];
    snprintf(line, sizeof line, "  %s %s %s %d %d %s%s %d\n", v->judge_name, v->protocol,
             v->template_name, v->options, v->rep, v->verdict[0], v->verdict[1], v->changed);
    return add_line(ud, line);
}

static int item_row(void *ud, const arb__order_dependent_item *it)
{
    order_walk *o = ud;
    char line[256];
    snprintf(line, sizeof line, "%s %s %s %lld/%lld q=%s c=%s b=%s\n", it->item_id,
             it->candidate, it->baseline, it->n_judges_changed, it->n_judges,
             or_null(it->question), or_null(it->candidate_answer), or_null(it->baseline_answer));
    if (add_line(&o->w, line)) return 1;
    return arb__store_each_order_verdict(o->ov, it->item_id, it->candidate, it->baseline,
                                         verdict_row, &o->w) != ARB_OK;
}

static void test_order_dependent_items(void **state)
{
    fixture *f = *state;
    fill(f->s);
    order_walk o = {{"", 0, 0}, NULL};
    assert_int_equal(arb__store_open_order_verdicts(f->s, &o.ov), ARB_OK);
    assert_int_equal(arb__store_each_order_dependent_item(f->s, 10, item_row, &o), ARB_OK);
    /* i2 is left out: j1's a then e is no change */
    assert_string_equal(o.w.text, "i1 A B 1/2 q=Q1 c=a1 b=b1\n"
                                  "  j1 sbs t 4 0 ab 1\n"
                                  "  j2 sbs t 4 0 aa 0\n");
    /* the prepared statement serves another item: i2's verdicts, E included */
    seen i2 = {"", 0, 0};
    assert_int_equal(arb__store_each_order_verdict(o.ov, "i2", "A", "B", verdict_row, &i2), ARB_OK);
    assert_string_equal(i2.text, "  j1 sbs t 4 0 ae 0\n");
    seen stop = {"", 0, 1};
    assert_int_equal(arb__store_each_order_verdict(o.ov, "i1", "A", "B", verdict_row, &stop),
                     ARB_OK);
    assert_int_equal(stop.rows, 1);
    order_walk none = {{"", 0, 0}, o.ov};
    assert_int_equal(arb__store_each_order_dependent_item(f->s, 0, item_row, &none), ARB_OK);
    assert_int_equal(none.w.rows, 0);
    arb__store_close_order_verdicts(o.ov);
    arb__store_close_order_verdicts(NULL);
}

/* The ranking: most judges changed first, then most changes, then benchmark order; the limit
** keeps the first (the texts are read for those only, and must still be the right ones). */
static void test_order_dependent_ranking(void **state)
{
    fixture *f = *state;
    fill(f->s);
    /* i2: j2 and j3 change (2 judges), ahead of i1 (1 judge) although i1 comes first */
    assert_int_equal(judged(f->s, "j2", "i2", 0, 'A'), 0);
    assert_int_equal(judged(f->s, "j2", "i2", 1, 'A'), 0);
    assert_int_equal(judged(f->s, "j3", "i2", 0, 'B'), 0);
    assert_int_equal(judged(f->s, "j3", "i2", 1, 'B'), 0);
    assert_int_equal(arb_test_exec_sql(f->s, "INSERT INTO answers(item_id, model, answer) VALUES"
                                             " ('i2', 'A', 'a2'), ('i2', 'B', 'b2')"), 0);
    order_walk all = {{"", 0, 0}, NULL};
    assert_int_equal(arb__store_open_order_verdicts(f->s, &all.ov), ARB_OK);
    assert_int_equal(arb__store_each_order_dependent_item(f->s, 10, item_row, &all), ARB_OK);
    assert_string_equal(all.w.text, "i2 A B 2/3 q=Q2 c=a2 b=b2\n"
                                    "  j1 sbs t 4 0 ae 0\n"
                                    "  j2 sbs t 4 0 ab 1\n"
                                    "  j3 sbs t 4 0 ba 1\n"
                                    "i1 A B 1/2 q=Q1 c=a1 b=b1\n"
                                    "  j1 sbs t 4 0 ab 1\n"
                                    "  j2 sbs t 4 0 aa 0\n");
    order_walk first = {{"", 0, 0}, all.ov};
    assert_int_equal(arb__store_each_order_dependent_item(f->s, 1, item_row, &first), ARB_OK);
    assert_string_equal(first.w.text, "i2 A B 2/3 q=Q2 c=a2 b=b2\n"
                                      "  j1 sbs t 4 0 ae 0\n"
                                      "  j2 sbs t 4 0 ab 1\n"
                                      "  j3 sbs t 4 0 ba 1\n");
    arb__store_close_order_verdicts(all.ov);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_judges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protocols, setup, teardown),
        cmocka_unit_test_setup_teardown(test_battle_sources, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transcripts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_order_dependent_items, setup, teardown),
        cmocka_unit_test_setup_teardown(test_order_dependent_ranking, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
