/*
** test_store_dialogues.c -- the store's dialogue readers (store_dialogues.c) and its answer walk
** (store_items.c) called directly: rows in dialogue then turn order whatever order turns were
** stored in, a dialogue without turns as one row, NULL fields as NULL (no call, no verdict), the
** turn's call (model, messages, reply, error) in the full walk only, the discussion walk
** leaving other kinds out, a callback that stops the walk, the debate set-up check, and every
** stored answer once.
**
** The store: items i1, i2. Dialogue 1 "discussion" on i1 (answer1 C, answer2 B) with turn 1
** (no call, verdict NULL) and turn 0 (call 7: model m-7, messages [{"role":"user","content":
** "hi"}], reply "[[1]]", verdict "1"); dialogue 2 "panel" on i2 without turns; dialogue 3 "hard"
** on i1 with config {"agent1_template":"t1","options":4,"x":1}.
*/
#include "internal.h"

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

#define HARD_CONFIG "{\"agent1_template\":\"t1\",\"options\":4,\"x\":1}"
#define HARD_PARTICIPANTS "[\"a\",\"b\",\"j\"]"

typedef struct fixture {
    char dir[256];
    arb_store *s;
    long long d1, d2, d3;
} fixture;

static long long put_dialogue(arb_store *s, const char *kind, const char *item,
                              const char *participants, const char *config)
{
    arb__dialogue_ref d = {kind, item, "C", "B", participants, config, 0};
    long long id = 0;
    if (arb__store_put_dialogue(s, &d, &id)) fprintf(stderr, "%s\n", arb_store_errmsg(s));
    return id;
}

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    if (arb_test_store_with_items("store_dialogues", items_jsonl, f.dir, sizeof f.dir, &f.s))
        return -1;
    if (arb_test_exec_sql(f.s, "INSERT INTO calls(id, key, judge_name, model, request, ok,"
                               " content, error) VALUES (7, 'k7', 'j', 'm-7',"
                               " '{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}',"
                               " 1, '[[1]]', NULL)"))
        return -1;
    f.d1 = put_dialogue(f.s, "discussion", "i1", "[\"lead\",\"follow\"]", "{}");
    f.d2 = put_dialogue(f.s, "panel", "i2", "[\"p\"]", "{}");
    f.d3 = put_dialogue(f.s, "hard", "i1", HARD_PARTICIPANTS, HARD_CONFIG);
    if (!f.d1 || !f.d2 || !f.d3 ||
        arb__store_put_turn(f.s, f.d1, 1, "follow", "follower", 0, NULL) ||
        arb__store_put_turn(f.s, f.d1, 0, "lead", "initial", 7, "1"))
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

/* What the walks saw: one line per row, and where to stop. */
typedef struct seen {
    char rows[8][256];
    int n, stop_after;
} seen;

static int on_row(void *ud, const arb__dialogue_turn_row *r)
{
    seen *w = ud;
    if (w->n < 8)
        snprintf(w->rows[w->n], sizeof w->rows[0], "%lld %s %s %s/%s rep=%s%lld %s turn=%s%lld"
                 " %s %s %s call=%s%lld %s %s %s %s",
                 r->dialogue_id, r->kind, r->item_id, r->answer1, r->answer2,
                 r->has_rep ? "" : "-", r->rep, r->status ? r->status : "(null)",
                 r->has_turn ? "" : "-", r->turn, r->speaker ? r->speaker : "(null)",
                 r->role ? r->role : "(null)", r->verdict ? r->verdict : "(null)",
                 r->has_call ? "" : "-", r->call_id, r->model ? r->model : "(null)",
                 r->messages_json ? r->messages_json : "(null)",
                 r->reply ? r->reply : "(null)", r->error ? r->error : "(null)");
    w->n++;
    return w->stop_after && w->n >= w->stop_after;
}

static void every_dialogue_with_its_turns(void **state)
{
    fixture *f = *state;
    seen w = {.n = 0};
    assert_int_equal(arb__store_each_dialogue_turn(f->s, on_row, &w), ARB_OK);
    assert_int_equal(w.n, 4);
    char want[256];
    snprintf(want, sizeof want, "%lld discussion i1 C/B rep=0 open turn=0 lead initial 1 call=7"
             " m-7 [{\"role\":\"user\",\"content\":\"hi\"}] [[1]] (null)", f->d1);
    assert_string_equal(w.rows[0], want);
    snprintf(want, sizeof want, "%lld discussion i1 C/B rep=0 open turn=1 follow follower (null)"
             " call=-0 (null) (null) (null) (null)", f->d1);
    assert_string_equal(w.rows[1], want);
    snprintf(want, sizeof want, "%lld panel i2 C/B rep=0 open turn=-0 (null) (null) (null)"
             " call=-0 (null) (null) (null) (null)", f->d2);
    assert_string_equal(w.rows[2], want);
    snprintf(want, sizeof want, "%lld hard i1 C/B rep=0 open turn=-0", f->d3);
    assert_true(strncmp(w.rows[3], want, strlen(want)) == 0);
}

static void discussions_without_calls(void **state)
{
    fixture *f = *state;
    seen w = {.n = 0};
    assert_int_equal(arb__store_each_discussion_turn(f->s, on_row, &w), ARB_OK);
    assert_int_equal(w.n, 3); /* the panel left out */
    char want[256];
    snprintf(want, sizeof want, "%lld discussion i1 C/B rep=0 open turn=0 lead initial 1 call=7"
             " (null) (null) (null) (null)", f->d1);
    assert_string_equal(w.rows[0], want);
    assert_non_null(strstr(w.rows[2], " hard i1 C/B "));
}

static void a_callback_stops_the_walk(void **state)
{
    fixture *f = *state;
    seen w = {.n = 0, .stop_after = 1};
    assert_int_equal(arb__store_each_dialogue_turn(f->s, on_row, &w), ARB_OK);
    assert_int_equal(w.n, 1);
    w.n = 0;
    assert_int_equal(arb__store_each_discussion_turn(f->s, on_row, &w), ARB_OK);
    assert_int_equal(w.n, 1);
    assert_int_equal(arb__store_each_dialogue_turn(f->s, NULL, NULL), ARB_INVALID);
}

static void another_debate_config_under_the_name(void **state)
{
    fixture *f = *state;
    char *other = (char *)"unset";
    /* the same config: no conflict */
    assert_int_equal(arb__store_find_other_debate_config(f->s, "hard", HARD_PARTICIPANTS,
                                                         HARD_CONFIG, "t1", 4, &other),
                     ARB_OK);
    assert_null(other);
    /* another config with the same agent 1 template and options: that stored config */
    const char *config2 = "{\"agent1_template\":\"t1\",\"options\":4,\"x\":2}";
    assert_int_equal(arb__store_find_other_debate_config(f->s, "hard", HARD_PARTICIPANTS,
                                                         config2, "t1", 4, &other),
                     ARB_OK);
    assert_non_null(other);
    assert_string_equal(other, HARD_CONFIG);
    free(other);
    /* another option mode, template, kind or participants: none */
    assert_int_equal(arb__store_find_other_debate_config(f->s, "hard", HARD_PARTICIPANTS,
                                                         config2, "t1", 3, &other),
                     ARB_OK);
    assert_null(other);
    assert_int_equal(arb__store_find_other_debate_config(f->s, "hard", HARD_PARTICIPANTS,
                                                         config2, "t2", 4, &other),
                     ARB_OK);
    assert_null(other);
    assert_int_equal(arb__store_find_other_debate_config(f->s, "soft", HARD_PARTICIPANTS,
                                                         config2, "t1", 4, &other),
                     ARB_OK);
    assert_null(other);
    assert_int_equal(arb__store_find_other_debate_config(f->s, "hard", "[\"a\",\"c\",\"j\"]",
                                                         config2, "t1", 4, &other),
                     ARB_OK);
    assert_null(other);
}

/* The answers a walk saw as "item/model=answer", and where to stop. */
typedef struct answers_seen {
    char lines[8][64];
    int n, stop_after;
} answers_seen;

static int on_answer(void *ud, const char *item, const char *model, const char *answer)
{
    answers_seen *a = ud;
    if (a->n < 8) snprintf(a->lines[a->n], sizeof a->lines[0], "%s/%s=%s", item, model, answer);
    a->n++;
    return a->stop_after && a->n >= a->stop_after;
}

static int by_text(const void *x, const void *y) { return strcmp(x, y); }

static void every_answer_once(void **state)
{
    fixture *f = *state;
    answers_seen a = {.n = 0};
    assert_int_equal(arb__store_each_answer(f->s, on_answer, &a), ARB_OK);
    assert_int_equal(a.n, 0);
    assert_int_equal(arb_test_exec_sql(f->s, "INSERT INTO answers(item_id, model, answer) VALUES"
                                             " ('i1','C','c1'), ('i2','C','c2'), ('i1','B','')"),
                     0);
    assert_int_equal(arb__store_each_answer(f->s, on_answer, &a), ARB_OK);
    assert_int_equal(a.n, 3);
    qsort(a.lines, 3, sizeof a.lines[0], by_text);
    assert_string_equal(a.lines[0], "i1/B=");
    assert_string_equal(a.lines[1], "i1/C=c1");
    assert_string_equal(a.lines[2], "i2/C=c2");
    a = (answers_seen){.n = 0, .stop_after = 2};
    assert_int_equal(arb__store_each_answer(f->s, on_answer, &a), ARB_OK);
    assert_int_equal(a.n, 2);
    assert_int_equal(arb__store_each_answer(f->s, NULL, NULL), ARB_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_dialogue_with_its_turns, setup, teardown),
        cmocka_unit_test_setup_teardown(discussions_without_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(a_callback_stops_the_walk, setup, teardown),
        cmocka_unit_test_setup_teardown(another_debate_config_under_the_name, setup, teardown),
        cmocka_unit_test_setup_teardown(every_answer_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
