/*
** test_exec.c -- the executor: dependencies, reuse of stored calls, failures kept for retry,
** dry runs, calls that another process holds a lease on. Against the scriptable test server
** over real HTTP.
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_sql.h"
#include "testserver.h"
#include "testutil.h"

typedef struct graph {
    arb_judge_config judge;
    const char *users[8];
    size_t built_order[8];
    size_t n_built;
    char *contents[8];
    int cached[8];
    int ok[8];
    int skipped[8];
    int skip_node;  /* build asks for no call for this node (-1: none) */
    size_t n_done;
} graph;

/* Node 2 combines the outputs of nodes 0 and 1; nodes 0 and 1 are independent. */
static int build(void *ud, size_t node, const arb__call_outcome *const *deps, size_t n_deps,
                 arb__exec_request *req)
{
    graph *g = ud;
    g->built_order[g->n_built++] = node;
    if ((int)node == g->skip_node) {
        req->skip = 1;
        return 0;
    }
    req->judge = &g->judge;
    req->rep = 0;
    req->system = NULL;
    if (n_deps == 2)
        req->user = arb__sprintf("combine <%s> and <%s>", deps[0]->content ? deps[0]->content : "-",
                                 deps[1]->content ? deps[1]->content : "-");
    else
        req->user = arb__strdup(g->users[node]);
    return 0;
}

static int done(void *ud, arb_store *s, size_t node, const arb__call_outcome *out)
{
    graph *g = ud;
    free(g->contents[node]);
    g->contents[node] = out->content ? arb__strdup(out->content) : NULL;
    g->cached[node] = out->cached;
    g->ok[node] = out->ok;
    g->skipped[node] = out->skipped;
    g->n_done++;
    return 0;
}

/* Replies "R(<user message>)". */
static char *echo(void *ud, const char *body, size_t len)
{
    json_t *o = json_loadb(body, len, 0, NULL);
    json_t *msgs = json_object_get(o, "messages");
    const char *user = json_string_value(json_object_get(json_array_get(msgs, json_array_size(msgs) - 1), "content"));
    char *r = arb__sprintf("R(%s)", user ? user : "?");
    json_decref(o);
    return r;
}

typedef struct fixture {
    arb_test_server *srv;
    arb_store *store;
    char dir[64];
    char db[96];
    graph g;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_int_equal(arb_test_make_dir("exec", f->dir, sizeof f->dir), 0);
    snprintf(f->db, sizeof f->db, "%s/e.db", f->dir);
    f->srv = arb_test_server_start();
    assert_non_null(f->srv);
    arb_test_behaviour b = {.action = ARB_TEST_CALLBACK, .fn = echo};
    arb_test_server_set_default(f->srv, &b);
    assert_int_equal(arb_store_open(f->db, &f->store), ARB_OK);
    f->g.judge.model = "m";
    f->g.judge.base_url = arb_test_server_base_url(f->srv);
    f->g.judge.sampling = arb_sampling_default();
    f->g.users[0] = "first";
    f->g.users[1] = "second";
    f->g.skip_node = -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < 8; i++) free(f->g.contents[i]);
    arb_store_close(f->store);
    arb_test_server_stop(f->srv);
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

static arb_status run_graph(fixture *f, int dry_run, arb_run_stats *stats)
{
    f->g.n_built = 0;
    f->g.n_done = 0;
    arb__exec_params p = {.client = arb_client_default_params(), .dry_run = dry_run, .progress = 0};
    p.client.backoff_base_ms = 5;
    p.client.max_retries = 1;
    arb__exec *ex = arb__exec_create(f->store, &p, build, done, &f->g);
    assert_non_null(ex);
    assert_int_equal(arb__exec_add(ex, NULL, 0), 0);
    assert_int_equal(arb__exec_add(ex, NULL, 0), 1);
    size_t deps[2] = {0, 1};
    assert_int_equal(arb__exec_add(ex, deps, 2), 2);
    memset(stats, 0, sizeof *stats);
    arb_status st = arb__exec_run(ex, stats);
    arb__exec_destroy(ex);
    return st;
}

static void test_dependent_call_sees_outputs(void **state)
{
    fixture *f = *state;
    arb_run_stats st;
    assert_int_equal(run_graph(f, 0, &st), ARB_OK);
    assert_int_equal(st.planned, 3);
    assert_int_equal(st.sent, 3);
    assert_int_equal(f->g.n_built, 3);
    assert_int_equal(f->g.built_order[2], 2); /* built last: after both dependencies */
    assert_string_equal(f->g.contents[0], "R(first)");
    assert_string_equal(f->g.contents[1], "R(second)");
    assert_string_equal(f->g.contents[2], "R(combine <R(first)> and <R(second)>)");
    assert_int_equal(arb_test_server_requests(f->srv), 3);
}

/* A node the protocol skips sends and stores nothing, is reported to done as skipped, counts
** in stats.skipped, and still releases its dependent. */
static void test_skipped_node_releases_dependents(void **state)
{
    fixture *f = *state;
    arb_run_stats st;
    f->g.skip_node = 1;
    assert_int_equal(run_graph(f, 0, &st), ARB_OK);
    assert_int_equal(st.planned, 3);
    assert_int_equal(st.sent, 2);
    assert_int_equal(st.skipped, 1);
    assert_int_equal(st.cached, 0);
    assert_int_equal(arb_test_server_requests(f->srv), 2);
    assert_int_equal(f->g.n_done, 3);
    assert_true(f->g.skipped[1]);
    assert_false(f->g.ok[1]);
    assert_null(f->g.contents[1]);
    assert_false(f->g.skipped[2]);
    assert_string_equal(f->g.contents[2], "R(combine <R(first)> and <->)");
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM calls"), 2);
}

/* Two nodes of one run with the same request: the call goes out once, the second node waits
** for it and takes it from the store, and both see the same reply. */
static void test_identical_requests_sent_once(void **state)
{
    fixture *f = *state;
    arb_run_stats st;
    f->g.users[1] = "first";
    assert_int_equal(run_graph(f, 0, &st), ARB_OK);
    assert_int_equal(st.planned, 3);
    assert_int_equal(st.sent, 2);
    assert_int_equal(st.cached, 1);
    assert_int_equal(arb_test_server_requests(f->srv), 2);
    assert_string_equal(f->g.contents[0], "R(first)");
    assert_string_equal(f->g.contents[1], "R(first)");
    assert_true(f->g.cached[0] != f->g.cached[1]);
    assert_string_equal(f->g.contents[2], "R(combine <R(first)> and <R(first)>)");
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM calls"), 2);
}

static void test_rerun_sends_nothing(void **state)
{
    fixture *f = *state;
    arb_run_stats st;
    assert_int_equal(run_graph(f, 0, &st), ARB_OK);
    assert_int_equal(run_graph(f, 0, &st), ARB_OK);
    assert_int_equal(st.cached, 3);
    assert_int_equal(st.sent, 0);
    assert_int_equal(arb_test_server_requests(f->srv), 3);
    /* Dependents of cached calls still get their outputs. */
    assert_true(f->g.cached[2]);
    assert_string_equal(f->g.contents[2], "R(combine <R(first)> and <R(second)>)");
}

/* ---- calls that another process holds ------------------------------------------------------ */

/* Writes the call key of node 0's request ("first") into key. */
static void first_key(fixture *f, char key[33])
{
    char *body = arb__judge_request_body(&f->g.judge, NULL, "first", 0, NULL);
    assert_non_null(body);
    arb__judge_call_key(body, 0, key);
    free(body);
}

typedef struct other_process {
    const char *db;
    const char *key;
} other_process;

/* Plays the other process: 400 ms after the start it stores node 0's call with its own reply
** and ends its lease (its one row), in one transaction, through its own connection. */
static void *other_stores_first(void *arg)
{
    other_process *o = arg;
    struct timespec pause = {0, 400 * 1000000L};
    nanosleep(&pause, NULL);
    arb_store *s = NULL;
    if (arb_store_open(o->db, &s)) abort();
    arb__call_record rec = {.key = o->key, .judge_name = "m", .model = "m", .request_json = "{}",
                            .ok = 1, .content = "R(stored by the other)", .attempts = 1,
                            .prompt_tokens = -1, .completion_tokens = -1, .latency_ms = 1};
    long long id = 0;
    if (arb__store_begin(s) || arb__store_put_call(s, &rec, &id) ||
        arb_test_exec_sql(s, "DELETE FROM call_leases WHERE owner = 'other-run'") ||
        arb__store_commit(s))
        abort();
    arb_store_close(s);
    return NULL;
}

/* A call that another live process is sending is not sent: the run waits (sleeping between
** polls) until it is stored, then takes it from the store and feeds it to its dependent. */
static void test_call_held_elsewhere_is_waited_for(void **state)
{
    fixture *f = *state;
    char key[33];
    first_key(f, key);
    arb__lease_owner me;
    arb__lease_owner_init(&me, 60);
    /* held by this (alive) process under another owner: the other run */
    assert_int_equal(arb_test_exec_sql(f->store,
                                       "INSERT INTO call_leases(owner, host, pid, expires_at, keys)"
                                       " VALUES ('other-run', %Q, %d, 1e12, arb_call_key(%Q))",
                                       me.host, (int)me.pid, key), 0);
    other_process o = {f->db, key};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_stores_first, &o), 0);
    double t0 = arb__now_ms();
    clock_t cpu0 = clock();
    arb_run_stats st;
    assert_int_equal(run_graph(f, 0, &st), ARB_OK);
    double waited_ms = arb__now_ms() - t0;
    double cpu_ms = (double)(clock() - cpu0) * 1000.0 / CLOCKS_PER_SEC;
    pthread_join(t, NULL);
    assert_int_equal(arb_test_server_requests(f->srv), 2); /* nodes 1 and 2 only */
    assert_int_equal(st.sent, 2);
    assert_int_equal(st.cached, 1);
    assert_true(f->g.cached[0]);
    assert_string_equal(f->g.contents[0], "R(stored by the other)");
    assert_string_equal(f->g.contents[2], "R(combine <R(stored by the other)> and <R(second)>)");
    assert_true(waited_ms >= 350);
    /* waiting is sleeping: far less CPU than wall time */
    if (cpu_ms > waited_ms / 2) fail_msg("waiting used %.0f ms of CPU in %.0f ms", cpu_ms, waited_ms);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM call_leases"), 0);
}

/* A lease on another host that is not renewed expires; the run then sends the call itself. A
** lease of a process that is gone (a killed run on this host) is taken over without waiting
** for it to expire. */
static void test_expired_or_dead_lease_is_taken_over(void **state)
{
    fixture *f = *state;
    char key[33];
    first_key(f, key);
    assert_int_equal(arb_test_exec_sql(f->store,
                                       "INSERT INTO call_leases(owner, host, pid, expires_at, keys)"
                                       " VALUES ('far-run', 'elsewhere.example', 1,"
                                       " (julianday('now') - 2440587.5) * 86400.0 + 0.5,"
                                       " arb_call_key(%Q))", key), 0);
    double t0 = arb__now_ms();
    arb_run_stats st;
    assert_int_equal(run_graph(f, 0, &st), ARB_OK);
    double waited_ms = arb__now_ms() - t0;
    assert_int_equal(arb_test_server_requests(f->srv), 3);
    assert_int_equal(st.sent, 3);
    assert_string_equal(f->g.contents[0], "R(first)");
    assert_true(waited_ms >= 400);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM call_leases"), 0);

    /* a dead holder on this host: no wait */
    assert_int_equal(arb_test_exec_sql(f->store, "DELETE FROM calls"), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) _exit(0);
    assert_int_equal(waitpid(child, NULL, 0), child);
    arb__lease_owner me;
    arb__lease_owner_init(&me, 60);
    assert_int_equal(arb_test_exec_sql(f->store,
                                       "INSERT INTO call_leases(owner, host, pid, expires_at, keys)"
                                       " VALUES ('killed-run', %Q, %d, 1e12, arb_call_key(%Q))",
                                       me.host, (int)child, key), 0);
    t0 = arb__now_ms();
    assert_int_equal(run_graph(f, 0, &st), ARB_OK);
    assert_int_equal(st.sent, 3);
    /* far below the lease's 60 s (loose: the test machine may be busy) */
    assert_true(arb__now_ms() - t0 < 30000);
}

static void test_failed_call_retried_next_run(void **state)
{
    fixture *f = *state;
    arb_run_stats st;
    /* 400 is final at once; node 0 fails, nodes 1 and 2 still run (2 sees no content). */
    arb_test_server_push_status(f->srv, 400, NULL, "{\"error\":{\"message\":\"bad\"}}");
    f->g.users[1] = "second-b";
    f->g.judge.model = "m-fail";
    assert_int_equal(run_graph(f, 0, &st), ARB_OK);
    /* sent counts every call that went out, ok or not (it used to count only the ok ones) */
    assert_int_equal(st.sent, 3);
    assert_int_equal(st.ok, 2);
    assert_int_equal(st.failed, 1);
    int failed_node = !f->g.ok[0] ? 0 : 1;
    assert_false(f->g.ok[failed_node]);
    assert_int_equal(arb_test_query_int(f->store,
                         "select count(*) from calls where ok=0 and error like '%400%'"), 1);
    /* Next run: only the failed call and the one depending on it (its prompt changes) go out. */
    unsigned long before = arb_test_server_requests(f->srv);
    assert_int_equal(run_graph(f, 0, &st), ARB_OK);
    assert_int_equal(st.failed, 0);
    assert_int_equal(st.cached, 1);
    assert_int_equal(arb_test_server_requests(f->srv) - before, 2);
    assert_true(f->g.ok[0] && f->g.ok[1] && f->g.ok[2]);
}

static void test_malformed_reply_is_failure_with_raw_text(void **state)
{
    fixture *f = *state;
    arb_run_stats st;
    arb_test_server_push_malformed(f->srv, "{\"choices\": [");
    f->g.judge.model = "m-malformed";
    assert_int_equal(run_graph(f, 0, &st), ARB_OK);
    assert_int_equal(st.failed, 1);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(arb__store_conn(f->store),
                                        "select raw_reply, error from calls where ok=0", -1, &q,
                                        NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "{\"choices\": [");
    assert_non_null(strstr((const char *)sqlite3_column_text(q, 1), "malformed"));
    sqlite3_finalize(q);
}

static void test_dry_run_sends_and_stores_nothing(void **state)
{
    fixture *f = *state;
    arb_run_stats st;
    assert_int_equal(run_graph(f, 1, &st), ARB_OK);
    assert_int_equal(st.planned, 3);
    assert_int_equal(st.cached, 0);
    assert_int_equal(st.sent, 0);
    assert_true(st.est_prompt_tokens > 0);
    assert_int_equal(arb_test_server_requests(f->srv), 0);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from calls"), 0);
    /* After a real run, the dry run counts every call as stored. */
    assert_int_equal(run_graph(f, 0, &st), ARB_OK);
    assert_int_equal(run_graph(f, 1, &st), ARB_OK);
    assert_int_equal(st.cached, 3);
    assert_int_equal(st.est_prompt_tokens, 0);
}

/* For arb__exec_protocol's slices: the nodes the recorded callback was asked about, and which
** of them it says are recorded (even ones). */
static int recorded_asked[8];
static int recorded_even(void *ud, size_t node, const char *call_key)
{
    (void)ud;
    assert_non_null(call_key);
    assert_true(node < 8);
    recorded_asked[node]++;
    return node % 2 == 0;
}

/* A plan without dependencies runs in slices (here of 3 nodes): every node of the protocol is
** built and done once under its own number, the stats count the whole plan, and a node the
** protocol says is recorded is taken as stored without its done callback. */
static void test_protocol_runs_in_slices(void **state)
{
    fixture *f = *state;
    static const char *const users[8] = {"u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7"};
    memcpy(f->g.users, users, sizeof users);
    arb__exec_params p = {.client = arb_client_default_params(), .progress = 0, .slice = 3};
    arb_run_stats st;
    memset(&st, 0, sizeof st);
    assert_int_equal(arb__exec_protocol(f->store, "test", "{}", &p, 8, NULL, build, done, NULL,
                                        &f->g, &st), ARB_OK);
    assert_int_equal(st.planned, 8);
    assert_int_equal(st.sent, 8);
    assert_int_equal(f->g.n_done, 8);
    for (int i = 0; i < 8; i++) {
        char want[16];
        snprintf(want, sizeof want, "R(u%d)", i);
        assert_string_equal(f->g.contents[i], want);
    }
    /* rerun: the even nodes are recorded (no done callback), the odd ones come from the store */
    f->g.n_done = 0;
    f->g.n_built = 0; /* built_order holds one run's 8 nodes */
    memset(f->g.cached, 0, sizeof f->g.cached);
    p.recorded = recorded_even;
    memset(&st, 0, sizeof st);
    assert_int_equal(arb__exec_protocol(f->store, "test", "{}", &p, 8, NULL, build, done, NULL,
                                        &f->g, &st), ARB_OK);
    assert_int_equal(st.planned, 8);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.cached, 8);
    assert_int_equal(f->g.n_done, 4);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(recorded_asked[i], 1);
        assert_int_equal(f->g.cached[i], i % 2);
    }
    assert_int_equal(arb_test_server_requests(f->srv), 8);
    assert_int_equal(arb_test_query_int(f->store, "select count(*) from runs where status = 'finished'"), 2);
}

/* ---- group commit ------------------------------------------------------------------------ */

#define MANY 3000

static int build_many(void *ud, size_t node, const arb__call_outcome *const *deps, size_t n_deps,
                      arb__exec_request *req)
{
    (void)deps;
    (void)n_deps;
    req->judge = ud;
    req->user = arb__sprintf("question %zu", node);
    return req->user ? 0 : -1;
}

static int done_many(void *ud, arb_store *s, size_t node, const arb__call_outcome *out)
{
    (void)ud;
    (void)s;
    (void)node;
    return out->ok ? 0 : -1;
}

/* The writer commits calls in groups (exec.c, WRITER_BATCH): 3,000 calls answered at once by
** the local server are stored in transactions of many calls, each writing the pages it touches
** once, not in one transaction whenever the writer is free (19 to 57 commits here before,
** writing 1,100 to 2,500 pages: the same pages of the key index and the leases again and
** again). Counted through the store's totals, not timed: the writer's wait for a batch is set
** long, so only a full batch, the main thread waiting for a commit (the end of the run) or
** the stop commits: 3 writer commits and the claims' transactions. Every call is stored once
** and no lease is left. */
static void test_calls_committed_in_groups(void **state)
{
    fixture *f = *state;
    arb__exec_params p = {.client = arb_client_default_params(), .progress = 0,
                          .commit_wait_ms = 60000};
    p.client.jobs = 64;
    long long commits0 = 0, pages0 = 0, commits1 = 0, pages1 = 0;
    arb__store_write_totals(&commits0, &pages0);
    arb_run_stats st;
    memset(&st, 0, sizeof st);
    assert_int_equal(arb__exec_protocol(f->store, "test", "{}", &p, MANY, NULL, build_many,
                                        done_many, NULL, &f->g.judge, &st), ARB_OK);
    arb__store_write_totals(&commits1, &pages1);
    assert_int_equal(st.sent, MANY);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM calls WHERE ok = 1"), MANY);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM call_leases"), 0);
    long long commits = commits1 - commits0, pages = pages1 - pages0;
    print_message("%d calls: %lld commits, %lld pages written\n", MANY, commits, pages);
    if (commits > 8) fail_msg("%lld commits for %d calls", commits, MANY);
    if (pages * 4 > MANY) fail_msg("%lld pages written for %d calls", pages, MANY);
}

/* A run writes the store through one connection: the claims, lease renewals and the release
** at the end go through the writer thread's connection, between its transactions, not through
** the main thread's. When the main thread claimed through its own, each claim emptied the
** writer's page cache (SQLite in WAL mode, after another connection's commit) and the writer
** read its pages back from the files, and the main thread read back what the writer had
** changed before each claim. 10,000 calls take three claims of up to 4,096 (exec.c,
** CLAIM_BATCH) while the writer commits groups of 1,024: the pages read by the write
** transactions are counted (the store's SQLITE_DBSTATUS_CACHE_MISS totals), not timed:
** 495-545 before, 15 after (the writer's first reads). */
#define LEASED 10000
static void test_claims_keep_the_writer_cache(void **state)
{
    fixture *f = *state;
    arb__exec_params p = {.client = arb_client_default_params(), .progress = 0};
    p.client.jobs = 64;
    long long read0 = arb__store_read_total(), commits0 = 0, pages0 = 0, commits1 = 0,
              pages1 = 0;
    arb__store_write_totals(&commits0, &pages0);
    arb_run_stats st;
    memset(&st, 0, sizeof st);
    assert_int_equal(arb__exec_protocol(f->store, "test", "{}", &p, LEASED, NULL, build_many,
                                        done_many, NULL, &f->g.judge, &st), ARB_OK);
    long long read = arb__store_read_total() - read0;
    arb__store_write_totals(&commits1, &pages1);
    assert_int_equal(st.sent, LEASED);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM calls WHERE ok = 1"),
                     LEASED);
    assert_int_equal(arb_test_query_int(f->store, "SELECT count(*) FROM call_leases"), 0);
    print_message("%d calls: %lld commits, %lld pages written, %lld pages read\n", LEASED,
                  commits1 - commits0, pages1 - pages0, read);
    if (read * 100 > LEASED) fail_msg("%lld pages read for %d calls", read, LEASED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dry_run_sends_and_stores_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calls_committed_in_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claims_keep_the_writer_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dependent_call_sees_outputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rerun_sends_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_protocol_runs_in_slices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_skipped_node_releases_dependents, setup, teardown),
        cmocka_unit_test_setup_teardown(test_identical_requests_sent_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_call_retried_next_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_reply_is_failure_with_raw_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_held_elsewhere_is_waited_for, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expired_or_dead_lease_is_taken_over, setup, teardown),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
