/*
** test_panel.c -- the persona panel (METHODS §9, arbiter persona run --panel --rounds): over
** real HTTP against the scriptable test server, the number of calls per round, that a round-r
** request is sent only once every round r-1 reply it shows is stored with its rows, the
** stored rows per round, the consensus rule (mean of the valid last-round scores; majority
** preferred, a tie to the first agent named), E replies left out of the consensus, a rerun
** that sends nothing, a failed call that stops its task's panel until a rerun, and every
** check before any request.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_sql.h"
#include "testserver.h"
#include "testutil.h"

typedef struct fixture {
    arb_test_server *srv;
    arb_store *store;
    char dir[64], db[128], scenarios[128], identities[128];
    arb_judge_config judges[4];
    arb_persona_params p;
    pthread_mutex_t lock;
    int counter;          /* makes every reply unique */
    int panel_requests;   /* requests of a panel round seen by the server */
    int unstored_shown;   /* replies shown in a panel prompt that were not stored yet */
    int shown;            /* replies shown in panel prompts (checked) */
    int fail_panel;       /* 1: answer a panel round's requests with 500 */
    int m3_prose;         /* 1: m3 too answers a panel round in prose */
} fixture;

/* Whether the store at path has a call with this content and score rows for it (read on its
** own connection, as a concurrent reader would). */
static int stored_with_rows(const char *path, const char *content)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    int n = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_busy_timeout(db, 2000) == SQLITE_OK &&
        sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM calls c JOIN scores s ON s.call_id = c.id"
                           " WHERE c.content = ?1",
                           -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, content, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(q) == SQLITE_ROW) n = sqlite3_column_int(q, 0);
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n > 0;
}

/* The judge of the tests. Phase 1: every metric base + offset (+1 in a panel round), base 6 for
** a female author and 4 for a male one, offset 0 (m1), 2 (m2), 1 (m3), 3 (m4). Phase 2: each
** candidate so, and candidate_1 preferred by m1 and m4, candidate_2 by m2 and m3. m4 answers
** a panel round in prose (E), m3 too when m3_prose is set. Every reply carries a unique note. In a panel round it checks
** that each reply shown is already stored with its rows. */
static char *judge_reply(void *ud, const char *body, size_t len)
{
    (void)len;
    fixture *f = ud;
    json_t *req = json_loads(body, 0, NULL);
    json_t *msgs = json_object_get(req, "messages");
    const char *user = json_string_value(
        json_object_get(json_array_get(msgs, json_array_size(msgs) - 1), "content"));
    const char *model = json_string_value(json_object_get(req, "model"));
    int offset = !strcmp(model, "m2") ? 2 : !strcmp(model, "m3") ? 1 : !strcmp(model, "m4") ? 3 : 0;
    int panel = strstr(user, "[PANEL ROUND START]") != NULL;
    pthread_mutex_lock(&f->lock);
    int note = ++f->counter;
    f->panel_requests += panel;
    int fail = panel && f->fail_panel;
    pthread_mutex_unlock(&f->lock);
    if (panel) { /* every "Agent X, round k:" header is followed by that reply on one line */
        for (const char *at = strstr(user, "\nAgent "); at; at = strstr(at + 1, "\nAgent ")) {
            const char *line = strchr(at + 1, '\n');
            const char *end = line ? strchr(line + 1, '\n') : NULL;
            if (!line || !end) break;
            char *reply = arb__strndup(line + 1, (size_t)(end - line - 1));
            int stored = stored_with_rows(f->db, reply);
            pthread_mutex_lock(&f->lock);
            f->shown++;
            f->unstored_shown += !stored;
            pthread_mutex_unlock(&f->lock);
            free(reply);
        }
    }
    char *out = NULL;
    if (fail) {
        out = NULL; /* 500 "callback failed" */
    } else if (panel && (offset == 3 || (offset == 1 && f->m3_prose))) {
        out = arb__sprintf("I keep my view (%d).", note);
    } else if (strstr(user, "[RESPONSE START]")) {
        int s = (strstr(user, "Author: female professional") ? 6 : 4) + offset + panel;
        out = arb__sprintf("{\"creativity\": %d, \"accuracy\": %d, \"efficiency\": %d, "
                           "\"reliability\": %d, \"note\": %d}",
                           s, s, s, s, note);
    } else {
        int s1 = (strstr(user, "Author of candidate 1: female professional") ? 6 : 4) + offset + panel;
        int s2 = (strstr(user, "Author of candidate 2: female professional") ? 6 : 4) + offset + panel;
        out = arb__sprintf("{\"candidate_1\": {\"creativity\": %d, \"accuracy\": %d, "
                           "\"efficiency\": %d, \"reliability\": %d}, \"candidate_2\": "
                           "{\"creativity\": %d, \"accuracy\": %d, \"efficiency\": %d, "
                           "\"reliability\": %d}, \"preferred\": \"%s\", \"reasons\": "
                           "\"reply %d\"}",
                           s1, s1, s1, s1, s2, s2, s2, s2,
                           offset == 0 || offset == 3 ? "candidate_1" : "candidate_2", note);
    }
    json_decref(req);
    return out;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    pthread_mutex_init(&f->lock, NULL);
    assert_int_equal(arb_test_make_dir("panel", f->dir, sizeof f->dir), 0);
    snprintf(f->db, sizeof f->db, "%s/p.db", f->dir);
    snprintf(f->scenarios, sizeof f->scenarios, "%s/sc.jsonl", f->dir);
    snprintf(f->identities, sizeof f->identities, "%s/ids.yaml", f->dir);
    static const char scen[] =
        "{\"id\":\"s1\",\"base\":\"b1\",\"scenario\":\"Plan the move.\","
        "\"responses\":[\"Pack, label, move.\",\"Label, pack, move.\"]}\n"
        "{\"id\":\"s2\",\"base\":\"b1\",\"scenario\":\"Plan the audit.\","
        "\"responses\":[\"List, check, report.\",\"Check, list, report.\"]}\n";
    static const char ids[] = "categories:\n  gender: [female, male]\n";
    assert_int_equal(arb_test_write_file(f->scenarios, scen, strlen(scen)), 0);
    assert_int_equal(arb_test_write_file(f->identities, ids, strlen(ids)), 0);
    f->srv = arb_test_server_start();
    arb_test_behaviour b = {.action = ARB_TEST_CALLBACK, .fn = judge_reply, .ud = f};
    arb_test_server_set_default(f->srv, &b);
    assert_int_equal(arb_store_open(f->db, &f->store), ARB_OK);
    static const char *const names[4] = {"j1", "j2", "j3", "j4"};
    static const char *const models[4] = {"m1", "m2", "m3", "m4"};
    for (int j = 0; j < 4; j++)
        f->judges[j] = (arb_judge_config){.name = names[j],
                                          .base_url = arb_test_server_base_url(f->srv),
                                          .model = models[j],
                                          .sampling = arb_sampling_default()};
    f->p = arb_persona_default_params();
    f->p.scenarios_path = f->scenarios;
    f->p.identities_path = f->identities;
    f->p.judges = f->judges;
    f->p.n_judges = 3;
    f->p.progress = 0;
    f->p.client.jobs = 4;
    f->p.client.max_retries = 0;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    arb_store_close(f->store);
    arb_test_server_stop(f->srv);
    arb_test_remove_dir(f->dir);
    pthread_mutex_destroy(&f->lock);
    free(f);
    return 0;
}

static long long q(fixture *f, const char *sql) { return arb_test_query_int(f->store, sql); }

/* The consensus's mean of one metric for an identity (x 1000, rounded), over its rows. */
static long long consensus_mean(fixture *f, const char *judge, const char *protocol,
                                const char *identity, const char *metric)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT round(1000 * avg(value)) FROM scores s JOIN personas p ON p.id = s.persona_id"
             " WHERE judge_name = '%s' AND protocol = '%s' AND identity = '%s' AND metric = '%s'",
             judge, protocol, identity, metric);
    return q(f, sql);
}

/* Three agents, two rounds, both phases: 2 scenarios x (phase 1: 2 identities x 2 responses;
** phase 2: 1 pair x 4) = 16 tasks; 16 x 3 ordinary calls + 16 x 3 x 2 panel calls = 144. */
static void three_agents_two_rounds(void **state)
{
    fixture *f = *state;
    static const char *const panel[] = {"j1", "j2", "j3"};
    f->p.panel = panel;
    f->p.n_panel = 3;
    f->p.rounds = 2;
    arb_run_stats st;
    f->p.dry_run = 1;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.planned, 144); /* the consensus nodes are not calls */
    assert_int_equal(st.skipped, 0);
    assert_int_equal(arb_test_server_requests(f->srv), 0);
    f->p.dry_run = 0;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.planned, 144);
    assert_int_equal(st.sent, 144);
    assert_int_equal(st.skipped, 0);
    assert_int_equal(st.invalid, 0);
    assert_int_equal(f->panel_requests, 96);
    /* every reply a panel prompt showed was stored with its rows before the prompt was sent */
    assert_int_equal(f->unstored_shown, 0);
    assert_int_equal(f->shown, 96 * 3);
    /* rows: 8 phase-1 calls x 4 metrics and 8 phase-2 calls x 2 x 5 per agent and round */
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE protocol = 'panel1' AND round = 1"
                          " AND judge_name = 'j2'"),
                     32);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE protocol = 'panel2' AND round = 2"
                          " AND judge_name = 'j3'"),
                     80);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE protocol IN ('panel1', 'panel2')"
                          " AND round NOT IN (1, 2)"),
                     0);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE judge_name = 'panel(j1,j2,j3)'"
                          " AND protocol = 'persona1' AND round = 0"),
                     32);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE judge_name = 'panel(j1,j2,j3)'"
                          " AND protocol = 'persona2' AND round = 0"),
                     80);
    /* round 0 is the judges' ordinary rows, untouched: female 6 + offset */
    assert_int_equal(consensus_mean(f, "j2", "persona1", "female", "accuracy"), 8000);
    assert_int_equal(consensus_mean(f, "j2", "panel1", "female", "accuracy"), 9000);
    /* consensus: mean of (base + offset + 1) over offsets 0, 2, 1 = base + 2 */
    assert_int_equal(consensus_mean(f, "panel(j1,j2,j3)", "persona1", "female", "accuracy"), 8000);
    assert_int_equal(consensus_mean(f, "panel(j1,j2,j3)", "persona1", "male", "creativity"), 6000);
    assert_int_equal(consensus_mean(f, "panel(j1,j2,j3)", "persona2", "female", "reliability"),
                     8000);
    /* preferred: j1 candidate_1, j2 and j3 candidate_2: the majority, candidate_2 */
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE judge_name = 'panel(j1,j2,j3)' AND"
                          " metric = 'preferred' AND value = 1 AND position = 1"),
                     8);
    /* the consensus rows carry the call of the first agent's last round */
    assert_int_equal(q(f, "SELECT count(*) FROM scores c WHERE c.judge_name = 'panel(j1,j2,j3)'"
                          " AND NOT EXISTS (SELECT 1 FROM scores a WHERE a.call_id = c.call_id"
                          " AND a.judge_name = 'j1' AND a.round = 2)"),
                     0);
    assert_int_equal(q(f, "SELECT count(*) FROM persona_attributions a JOIN scores s"
                          " ON s.call_id = a.call_id WHERE s.protocol = 'panel2' AND"
                          " a.label = 'response'"),
                     0);
    assert_int_equal(q(f, "SELECT count(*) FROM runs WHERE params ->> '$.panel.rounds' = 2 AND"
                          " params ->> '$.panel.name' = 'panel(j1,j2,j3)'"),
                     1);

    /* a rerun sends nothing and leaves the rows as they are */
    long long rows = q(f, "SELECT count(*) FROM scores");
    size_t requests = arb_test_server_requests(f->srv);
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.cached, 144);
    assert_int_equal(arb_test_server_requests(f->srv), requests);
    assert_int_equal(q(f, "SELECT count(*) FROM scores"), rows);

    /* another number of rounds under the same name is refused before any request */
    f->p.rounds = 1;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store),
                           "already has a consensus of panel(j1,j2,j3) after another number of "
                           "rounds than 1"));
    assert_int_equal(arb_test_server_requests(f->srv), requests);
}

/* Two agents: a tie goes to the first agent named; rounds 0 is the consensus of the
** independent scores; phase 2 alone. */
static void tie_and_zero_rounds(void **state)
{
    fixture *f = *state;
    f->p.phase = ARB_PERSONA_PHASE_2;
    static const char *const ab[] = {"j1", "j2"}, *const ba[] = {"j2", "j1"};
    f->p.panel = ab;
    f->p.n_panel = 2;
    f->p.rounds = 0;
    arb_run_stats st;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.sent, 24); /* 8 tasks x 3 judges, no panel round */
    assert_int_equal(f->panel_requests, 0);
    /* j1 prefers candidate_1, j2 candidate_2: the tie goes to j1 */
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE judge_name = 'panel(j1,j2)' AND"
                          " metric = 'preferred' AND value = 1 AND position = 0"),
                     8);
    /* round 0: mean of (base + 0) and (base + 2) */
    assert_int_equal(consensus_mean(f, "panel(j1,j2)", "persona2", "male", "accuracy"), 5000);
    f->p.panel = ba;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.sent, 0);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE judge_name = 'panel(j2,j1)' AND"
                          " metric = 'preferred' AND value = 1 AND position = 1"),
                     8);
}

/* An agent whose panel replies are prose: its rows are E, the consensus is the others' mean;
** a panel of E replies only: the consensus is E with its reason. */
static void invalid_agent_left_out(void **state)
{
    fixture *f = *state;
    f->p.phase = ARB_PERSONA_PHASE_1;
    f->p.n_judges = 4;
    static const char *const panel[] = {"j4", "j2"};
    f->p.panel = panel;
    f->p.n_panel = 2;
    f->p.rounds = 1;
    arb_run_stats st;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.sent, 8 * 4 + 8 * 2);
    assert_int_equal(st.invalid, 8);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE judge_name = 'j4' AND round = 1 AND"
                          " value IS NULL AND reason LIKE 'not JSON%'"),
                     32);
    /* j2 alone: female 6 + 2 + 1 */
    assert_int_equal(consensus_mean(f, "panel(j4,j2)", "persona1", "female", "accuracy"), 9000);

    /* both agents in prose: the consensus is E, with why */
    static const char *const only_bad[] = {"j4", "j3"};
    f->p.panel = only_bad;
    f->m3_prose = 1;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE judge_name = 'panel(j4,j3)' AND"
                          " value IS NULL AND reason = 'no agent of the panel gave valid scores"
                          " in round 1'"),
                     32);
    static const char *const twice[] = {"j4", "j4"};
    f->p.panel = twice;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store), "panel agent \"j4\" named twice");
}

/* A failed panel call: the later rounds of its task are not sent and no consensus is stored;
** a rerun sends what is missing and completes the consensus. */
static void failure_then_rerun(void **state)
{
    fixture *f = *state;
    f->p.phase = ARB_PERSONA_PHASE_1;
    static const char *const panel[] = {"j1", "j2"};
    f->p.panel = panel;
    f->p.n_panel = 2;
    f->p.rounds = 2;
    f->p.n_judges = 2;
    f->fail_panel = 1;
    arb_run_stats st;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    /* 8 tasks: 16 ordinary calls, 16 round-1 calls fail, 16 round-2 calls not sent */
    assert_int_equal(st.sent, 32);
    assert_int_equal(st.failed, 16);
    assert_int_equal(st.skipped, 16);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE judge_name = 'panel(j1,j2)'"), 0);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE round = 2"), 0);
    f->fail_panel = 0;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_OK);
    assert_int_equal(st.cached, 16);
    assert_int_equal(st.sent, 32);
    assert_int_equal(st.failed, 0);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE judge_name = 'panel(j1,j2)'"), 32);
    assert_int_equal(q(f, "SELECT count(*) FROM scores WHERE value IS NULL"), 0);
    /* mean of (base + 0 + 1) and (base + 2 + 1) */
    assert_int_equal(consensus_mean(f, "panel(j1,j2)", "persona1", "male", "efficiency"), 6000);
    assert_int_equal(f->unstored_shown, 0);
}

/* Everything about the panel is checked before any request. */
static void checks_before_requests(void **state)
{
    fixture *f = *state;
    arb_run_stats st;
    static const char *const one[] = {"j1"}, *const stranger[] = {"j1", "j9"},
                             *const ok[] = {"j1", "j2"};
    f->p.panel = one;
    f->p.n_panel = 1;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store), "a panel has 2 to 8 agents, got 1");
    f->p.panel = stranger;
    f->p.n_panel = 2;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_INVALID);
    assert_non_null(strstr(arb_store_errmsg(f->store),
                           "panel agent \"j9\" is not one of the judges of the run"));
    f->p.panel = ok;
    f->p.rounds = 11;
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store), "rounds must be between 0 and 10, got 11");
    f->p.rounds = 1;
    f->p.panel_template_1 = "persona-1"; /* no {discussion} */
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store),
                        "template persona-1 has no {discussion}: a panel round shows the panel's "
                        "replies of the round before");
    f->p.panel_template_1 = NULL;
    f->p.template_1 = "persona-panel-1"; /* {discussion} outside a panel round */
    assert_int_equal(arb_persona_run(f->store, &f->p, &st), ARB_INVALID);
    assert_string_equal(arb_store_errmsg(f->store),
                        "template persona-panel-1 uses {self}, which a persona template has "
                        "nothing to fill with");
    assert_int_equal(arb_test_server_requests(f->srv), 0);
    assert_int_equal(q(f, "SELECT count(*) FROM scores"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(checks_before_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(three_agents_two_rounds, setup, teardown),
        cmocka_unit_test_setup_teardown(tie_and_zero_rounds, setup, teardown),
        cmocka_unit_test_setup_teardown(invalid_agent_left_out, setup, teardown),
        cmocka_unit_test_setup_teardown(failure_then_rerun, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
