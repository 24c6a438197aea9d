/*
** test_http.c -- the HTTP transport against the scriptable local test server: success,
** retries (status, timeout, dropped connection, refused connection), Retry-After, final
** failures and their reasons, the reply cap, the adaptive in-flight limit, many concurrent
** transfers. Backoff is kept at 10 ms so the file runs in a few seconds.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "testserver.h"

#define MAX_RESULTS 512

typedef struct seen {
    uint64_t tag;
    int ok;
    long status;
    int attempts;
    int endpoint;
    int curl_code;
    double latency_ms;
    char *error;
    char *body;
    size_t body_len;
} seen;

typedef struct collector {
    seen results[MAX_RESULTS];
    size_t n;
} collector;

static void on_done(void *ud, uint64_t tag, const arb__http_result *res)
{
    collector *c = ud;
    assert_true(c->n < MAX_RESULTS);
    seen *s = &c->results[c->n++];
    s->tag = tag;
    s->ok = res->ok;
    s->status = res->status;
    s->attempts = res->attempts;
    s->endpoint = res->endpoint;
    s->curl_code = res->curl_code;
    s->latency_ms = res->latency_ms;
    s->error = res->error ? strdup(res->error) : NULL;
    s->body = res->body ? strndup(res->body, res->body_len) : NULL;
    s->body_len = res->body_len;
    /* The contract: an error exactly when not ok. */
    assert_int_equal(res->ok, res->error == NULL);
}

static void collector_free(collector *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->results[i].error);
        free(c->results[i].body);
    }
    c->n = 0;
}

static arb_client_params test_params(void)
{
    arb_client_params p = arb_client_default_params();
    p.jobs = 4;
    p.connect_timeout_ms = 2000;
    p.total_timeout_ms = 5000;
    p.max_retries = 3;
    p.backoff_base_ms = 10;
    p.backoff_max_ms = 40;
    return p;
}

static char *url_of(arb_test_server *srv)
{
    char *u = arb__judge_url(arb_test_server_base_url(srv));
    assert_non_null(u);
    return u;
}

/* Steps until nothing is pending (fails the test after 20 s). */
static void run_all(arb__http *h, collector *c)
{
    double start = arb__now_ms();
    while (arb__http_pending(h) > 0) {
        arb__http_step(h, 100, on_done, c);
        assert_true(arb__now_ms() - start < 20000);
    }
}

/* One request with params p against srv; fills c. */
static void one_request(arb_test_server *srv, const arb_client_params *p, collector *c)
{
    arb__http *h = arb__http_create(p);
    assert_non_null(h);
    char *url = url_of(srv);
    assert_int_equal(arb__http_submit(h, 7, url, NULL, "{}", 2), 0);
    assert_int_equal(arb__http_pending(h), 1);
    run_all(h, c);
    assert_int_equal(c->n, 1);
    assert_int_equal(c->results[0].tag, 7);
    assert_int_equal(arb__http_pending(h), 0);
    free(url);
    arb__http_destroy(h);
}

static void test_create_rejects_bad_params(void **state)
{
    arb_client_params p = test_params();
    p.jobs = 0;
    assert_null(arb__http_create(&p));
    p = test_params();
    p.max_retries = -1;
    assert_null(arb__http_create(&p));
    p = test_params();
    p.max_retry_wait_ms = -1;
    assert_null(arb__http_create(&p));
    assert_null(arb__http_create(NULL));
    arb__http_destroy(NULL);
    assert_int_equal(arb__http_pending(NULL), 0);
}

static void test_step_with_nothing_pending_returns_at_once(void **state)
{
    arb_client_params p = test_params();
    arb__http *h = arb__http_create(&p);
    assert_non_null(h);
    double t0 = arb__now_ms();
    /* upper bounds here are far from the faulty behaviour's time, so a loaded machine (tests
    ** run two at a time beside other builds) cannot fail them: a step that waited would take
    ** 60 s */
    assert_int_equal(arb__http_step(h, 60000, on_done, NULL), 0);
    assert_true(arb__now_ms() - t0 < 30000);
    arb__http_destroy(h);
}

static void test_destroy_with_pending_work(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_client_params p = test_params();
    arb__http *h = arb__http_create(&p);
    char *url = url_of(srv);
    for (int i = 0; i < 10; i++) assert_int_equal(arb__http_submit(h, (uint64_t)i, url, NULL, "{}", 2), 0);
    assert_int_equal(arb__http_pending(h), 10);
    collector c = {.n = 0};
    arb__http_step(h, 0, on_done, &c); /* some now in flight, the rest queued */
    arb__http_destroy(h);               /* must free both without reporting them */
    assert_int_equal(c.n, 0);
    collector_free(&c);
    free(url);
    arb_test_server_stop(srv);
}

static void test_success(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    assert_non_null(srv);
    arb_test_server_push_reply(srv, "[[B]]");
    arb_client_params p = test_params();
    collector c = {.n = 0};
    one_request(srv, &p, &c);
    assert_true(c.results[0].ok);
    assert_int_equal(c.results[0].status, 200);
    assert_int_equal(c.results[0].attempts, 1);
    assert_int_equal(c.results[0].curl_code, 0);
    assert_non_null(strstr(c.results[0].body, "\"content\":\"[[B]]\""));
    assert_true(c.results[0].latency_ms > 0);
    assert_int_equal(arb_test_server_requests(srv), 1);
    char *path = arb_test_server_last_path(srv);
    assert_string_equal(path, "/v1/chat/completions");
    free(path);
    collector_free(&c);
    arb_test_server_stop(srv);
}

static void test_headers_and_large_body(void **state)
{
    /* curl adds "Expect: 100-continue" to large POSTs unless told not to. */
    arb_test_server *srv = arb_test_server_start();
    arb_client_params p = test_params();
    arb__http *h = arb__http_create(&p);
    char *url = url_of(srv);
    size_t n = 2 << 20; /* curl 7.88 adds Expect above 1 MiB */
    char *body = malloc(n + 1);
    memset(body, 'q', n);
    body[0] = '"';
    body[n - 1] = '"';
    body[n] = '\0';
    assert_int_equal(arb__http_submit(h, 1, url, "Authorization: Bearer t0k", body, n), 0);
    collector c = {.n = 0};
    run_all(h, &c);
    assert_int_equal(c.n, 1);
    assert_true(c.results[0].ok);
    char *got = arb_test_server_last_body(srv);
    assert_non_null(got);
    assert_int_equal(strlen(got), n);
    assert_memory_equal(got, body, n);
    char *expect = arb_test_server_last_header(srv, "Expect");
    char *ctype = arb_test_server_last_header(srv, "Content-Type");
    char *auth = arb_test_server_last_header(srv, "Authorization");
    assert_null(expect);
    assert_string_equal(ctype, "application/json");
    assert_string_equal(auth, "Bearer t0k");
    free(ctype);
    free(auth);
    free(got);
    free(body);
    free(url);
    collector_free(&c);
    arb__http_destroy(h);
    arb_test_server_stop(srv);
}

static void test_retry_after_429_is_honoured(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_server_push_status(srv, 429, "1", "{\"error\":{\"message\":\"slow down\"}}");
    arb_test_server_push_reply(srv, "[[A]]");
    arb_client_params p = test_params();
    arb__http *h = arb__http_create(&p);
    char *url = url_of(srv);
    assert_int_equal(arb__http_submit(h, 1, url, NULL, "{}", 2), 0);
    collector c = {.n = 0};
    double t0 = arb__now_ms();
    run_all(h, &c);
    double elapsed = arb__now_ms() - t0;
    assert_true(elapsed >= 990); /* backoff alone would be <= 10 ms */
    assert_true(elapsed < 20000);
    assert_int_equal(c.n, 1);
    assert_true(c.results[0].ok);
    assert_int_equal(c.results[0].attempts, 2);
    arb__http_stats st = arb__http_get_stats(h);
    assert_int_equal(st.retries, 1);
    assert_int_equal(st.throttled, 1);
    assert_int_equal(arb_test_server_requests(srv), 2);
    free(url);
    collector_free(&c);
    arb__http_destroy(h);
    arb_test_server_stop(srv);
}

/* Steps h until nothing is pending or limit_ms passed; returns the time taken. */
static double run_for_at_most(arb__http *h, collector *c, double limit_ms)
{
    double start = arb__now_ms();
    while (arb__http_pending(h) > 0 && arb__now_ms() - start < limit_ms)
        arb__http_step(h, 50, on_done, c);
    return arb__now_ms() - start;
}

/* A server asking to come back in an hour: each wait is cut to max_retry_wait_ms, so the call
** fails after its retries in a fraction of a second (it used to wait up to 10 minutes per
** retry), and the reason says what the server asked for and what the cap was. */
static void test_retry_after_is_capped(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_behaviour slow = {.action = ARB_TEST_STATUS, .status = 429, .retry_after = "3600",
                               .body = "quota"};
    arb_test_server_set_default(srv, &slow);
    arb_client_params p = test_params();
    p.max_retries = 2;
    p.max_retry_wait_ms = 100;
    arb__http *h = arb__http_create(&p);
    char *url = url_of(srv);
    assert_int_equal(arb__http_submit(h, 1, url, NULL, "{}", 2), 0);
    collector c = {.n = 0};
    double elapsed = run_for_at_most(h, &c, 60000);
    assert_int_equal(c.n, 1);
    assert_true(elapsed >= 190); /* two waits of 100 ms */
    assert_true(elapsed < 30000); /* not 3600 s */
    assert_false(c.results[0].ok);
    assert_int_equal(c.results[0].attempts, 3);
    assert_string_equal(c.results[0].error,
                        "HTTP 429 after 3 attempts (the server asked to wait 3600 s, Retry-After; "
                        "waits are capped at 0.1 s, max_retry_wait): quota");
    assert_int_equal(arb_test_server_requests(srv), 3);
    collector_free(&c);
    arb__http_destroy(h);

    /* The exponential backoff is capped too: base 100 s would wait 50..100 s. */
    arb_test_behaviour busy = {.action = ARB_TEST_STATUS, .status = 503, .body = "busy"};
    arb_test_server_set_default(srv, &busy);
    p.backoff_base_ms = 100000;
    p.backoff_max_ms = 600000;
    p.max_retry_wait_ms = 50;
    p.max_retries = 1;
    h = arb__http_create(&p);
    assert_int_equal(arb__http_submit(h, 2, url, NULL, "{}", 2), 0);
    elapsed = run_for_at_most(h, &c, 60000);
    assert_int_equal(c.n, 1);
    assert_true(elapsed < 30000); /* not 50..100 s */
    assert_string_equal(c.results[0].error, "HTTP 503 after 2 attempts: busy");
    collector_free(&c);
    arb__http_destroy(h);
    free(url);
    arb_test_server_stop(srv);
}

static void test_retry_after_http_date(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    char date[64];
    time_t when = time(NULL) + 2;
    struct tm tm;
    gmtime_r(&when, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    arb_test_server_push_status(srv, 503, date, "busy");
    arb_client_params p = test_params();
    collector c = {.n = 0};
    double t0 = arb__now_ms();
    one_request(srv, &p, &c);
    double elapsed = arb__now_ms() - t0;
    /* The date has one-second resolution: the wait is between 1 and 2 s. */
    assert_true(elapsed >= 900);
    assert_true(elapsed < 15000);
    assert_true(c.results[0].ok);
    assert_int_equal(c.results[0].attempts, 2);
    collector_free(&c);
    arb_test_server_stop(srv);
}

static void test_500_then_success(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_server_push_status(srv, 500, NULL, "oops");
    arb_test_server_push_reply(srv, "[[C]]");
    arb_client_params p = test_params();
    collector c = {.n = 0};
    one_request(srv, &p, &c);
    assert_true(c.results[0].ok);
    assert_int_equal(c.results[0].attempts, 2);
    assert_int_equal(c.results[0].status, 200);
    assert_non_null(strstr(c.results[0].body, "[[C]]"));
    assert_int_equal(arb_test_server_requests(srv), 2);
    collector_free(&c);
    arb_test_server_stop(srv);
}

static void test_timeout_then_success(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_server_push_delay(srv, 60000, "late");
    arb_test_server_push_reply(srv, "[[D]]");
    arb_client_params p = test_params();
    p.total_timeout_ms = 300;
    collector c = {.n = 0};
    double t0 = arb__now_ms();
    one_request(srv, &p, &c);
    double elapsed = arb__now_ms() - t0;
    assert_true(elapsed >= 290);
    assert_true(elapsed < 30000); /* did not wait for the slow reply (60 s) */
    assert_true(c.results[0].ok);
    assert_int_equal(c.results[0].attempts, 2);
    assert_non_null(strstr(c.results[0].body, "[[D]]"));
    collector_free(&c);
    arb_test_server_stop(srv);
}

static void test_timeout_final_reason(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_behaviour slow = {.action = ARB_TEST_DELAY, .delay_ms = 2000};
    arb_test_server_set_default(srv, &slow);
    arb_client_params p = test_params();
    p.total_timeout_ms = 100;
    p.max_retries = 1;
    collector c = {.n = 0};
    one_request(srv, &p, &c);
    assert_false(c.results[0].ok);
    assert_int_equal(c.results[0].attempts, 2);
    assert_string_equal(c.results[0].error, "timeout after 100 ms (2 attempts)");
    collector_free(&c);
    arb_test_server_stop(srv);
}

static void test_dropped_connection_then_success(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_server_push_drop(srv);
    arb_test_server_push_reply(srv, "[[A]]");
    arb_client_params p = test_params();
    collector c = {.n = 0};
    one_request(srv, &p, &c);
    assert_true(c.results[0].ok);
    assert_int_equal(c.results[0].attempts, 2);
    assert_int_equal(arb_test_server_requests(srv), 2);
    collector_free(&c);
    arb_test_server_stop(srv);
}

static void test_final_failure_after_max_retries(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_behaviour busy = {.action = ARB_TEST_STATUS, .status = 503, .body = "over\nloaded"};
    arb_test_server_set_default(srv, &busy);
    arb_client_params p = test_params();
    p.max_retries = 2;
    collector c = {.n = 0};
    one_request(srv, &p, &c);
    assert_false(c.results[0].ok);
    assert_int_equal(c.results[0].status, 503);
    assert_int_equal(c.results[0].attempts, 3);
    /* control characters of the body become spaces: the reason stays one line */
    assert_string_equal(c.results[0].error, "HTTP 503 after 3 attempts: over loaded");
    assert_string_equal(c.results[0].body, "over\nloaded");
    assert_int_equal(arb_test_server_requests(srv), 3);
    collector_free(&c);
    arb_test_server_stop(srv);
}

static void test_error_body_excerpt_is_capped(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    char body[401];
    memset(body, 'e', 400);
    body[400] = '\0';
    arb_test_server_push_status(srv, 422, NULL, body);
    arb_client_params p = test_params();
    collector c = {.n = 0};
    one_request(srv, &p, &c);
    const char *prefix = "HTTP 422 after 1 attempt: ";
    assert_int_equal(strncmp(c.results[0].error, prefix, strlen(prefix)), 0);
    assert_int_equal(strlen(c.results[0].error), strlen(prefix) + 200 + 3); /* + "..." */
    collector_free(&c);
    arb_test_server_stop(srv);
}

static void test_400_is_final_at_once(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_server_push_status(srv, 400, NULL, "bad request");
    arb_client_params p = test_params();
    collector c = {.n = 0};
    one_request(srv, &p, &c);
    assert_false(c.results[0].ok);
    assert_int_equal(c.results[0].status, 400);
    assert_int_equal(c.results[0].attempts, 1);
    assert_string_equal(c.results[0].error, "HTTP 400 after 1 attempt: bad request");
    assert_int_equal(arb_test_server_requests(srv), 1);
    collector_free(&c);
    arb_test_server_stop(srv);
}

static void test_connection_refused(void **state)
{
    /* A port that was free a moment ago: bind, read it, close. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", ntohs(a.sin_port));
    arb_client_params p = test_params();
    p.max_retries = 2;
    arb__http *h = arb__http_create(&p);
    assert_int_equal(arb__http_submit(h, 3, url, NULL, "{}", 2), 0);
    collector c = {.n = 0};
    run_all(h, &c);
    assert_int_equal(c.n, 1);
    assert_false(c.results[0].ok);
    assert_int_equal(c.results[0].status, 0);
    assert_int_equal(c.results[0].attempts, 3);
    assert_int_equal(strncmp(c.results[0].error, "connection failed: ", 19), 0);
    assert_non_null(strstr(c.results[0].error, "(3 attempts)"));
    assert_int_equal(arb__http_get_stats(h).retries, 2);
    collector_free(&c);
    arb__http_destroy(h);
}

static void test_reply_cap(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_server_push_oversized(srv, 1000); /* exactly the cap: fine */
    arb_test_server_push_oversized(srv, 5000); /* over: fails at once, not retried */
    arb_client_params p = test_params();
    p.max_reply_bytes = 1000;
    p.jobs = 1;
    arb__http *h = arb__http_create(&p);
    char *url = url_of(srv);
    assert_int_equal(arb__http_submit(h, 1, url, NULL, "{}", 2), 0);
    collector c = {.n = 0};
    run_all(h, &c);
    assert_int_equal(arb__http_submit(h, 2, url, NULL, "{}", 2), 0);
    run_all(h, &c);
    assert_int_equal(c.n, 2);
    assert_true(c.results[0].ok);
    assert_int_equal(c.results[0].body_len, 1000);
    assert_false(c.results[1].ok);
    assert_int_equal(c.results[1].attempts, 1);
    assert_string_equal(c.results[1].error, "reply larger than 1000 bytes");
    assert_int_equal(arb_test_server_requests(srv), 2);
    free(url);
    collector_free(&c);
    arb__http_destroy(h);
    arb_test_server_stop(srv);
}

/* A header line over libcurl's limit is a size limit (ARB_TOOBIG's words), not "Out of
** memory", and is not retried. */
static void test_reply_header_too_large(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_behaviour big = {.action = ARB_TEST_BIG_HEADER, .size = 150000};
    arb_test_server_push(srv, &big);
    arb_client_params p = test_params();
    collector c = {.n = 0};
    one_request(srv, &p, &c);
    assert_false(c.results[0].ok);
    assert_int_equal(c.results[0].attempts, 1);
    assert_string_equal(c.results[0].error,
                        "reply header too large: size limit exceeded (a header line over 102400 "
                        "bytes is refused, as libcurl does; 1 attempt)");
    assert_int_equal(arb_test_server_requests(srv), 1);
    collector_free(&c);
    arb_test_server_stop(srv);
}

static void test_429_lowers_inflight_limit(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_server_push_status(srv, 429, NULL, "");
    arb_test_server_push_status(srv, 429, NULL, "");
    arb_client_params p = test_params();
    p.jobs = 8;
    arb__http *h = arb__http_create(&p);
    assert_int_equal(arb__http_get_stats(h).inflight_limit, 8);
    char *url = url_of(srv);
    /* Two at once: both get 429 within 500 ms, which halves the limit once, 8 -> 4. */
    assert_int_equal(arb__http_submit(h, 1, url, NULL, "{}", 2), 0);
    assert_int_equal(arb__http_submit(h, 2, url, NULL, "{}", 2), 0);
    collector c = {.n = 0};
    run_all(h, &c);
    assert_int_equal(c.n, 2);
    arb__http_stats st = arb__http_get_stats(h);
    assert_int_equal(st.throttled, 2);
    assert_int_equal(st.retries, 2);
    assert_int_equal(st.inflight_limit, 4);
    /* Two successes so far (the retries); after limit = 4 in a row the limit grows by 1. */
    assert_int_equal(arb__http_submit(h, 3, url, NULL, "{}", 2), 0);
    run_all(h, &c);
    assert_int_equal(arb__http_get_stats(h).inflight_limit, 4);
    assert_int_equal(arb__http_submit(h, 4, url, NULL, "{}", 2), 0);
    run_all(h, &c);
    assert_int_equal(arb__http_get_stats(h).inflight_limit, 5);
    free(url);
    collector_free(&c);
    arb__http_destroy(h);
    arb_test_server_stop(srv);
}

static void test_limit_never_below_one(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_test_behaviour throttle = {.action = ARB_TEST_STATUS, .status = 429, .body = "no"};
    arb_test_server_set_default(srv, &throttle);
    arb_client_params p = test_params();
    p.jobs = 2;
    p.max_retries = 2;
    p.backoff_base_ms = 1200; /* jitter puts each wait in [600, 1200] ms: a new 500 ms window */
    p.backoff_max_ms = 1200;
    collector c = {.n = 0};
    arb__http *h = arb__http_create(&p);
    char *url = url_of(srv);
    assert_int_equal(arb__http_submit(h, 1, url, NULL, "{}", 2), 0);
    run_all(h, &c);
    assert_int_equal(c.n, 1);
    assert_false(c.results[0].ok);
    assert_string_equal(c.results[0].error, "HTTP 429 after 3 attempts: no");
    arb__http_stats st = arb__http_get_stats(h);
    assert_int_equal(st.throttled, 3);
    assert_int_equal(st.inflight_limit, 1); /* 2 -> 1 -> 1 -> 1 */
    free(url);
    collector_free(&c);
    arb__http_destroy(h);
    arb_test_server_stop(srv);
}

static void test_many_requests_complete_once(void **state)
{
    enum { N = 200 };
    arb_test_server *srv = arb_test_server_start();
    /* A few failures sprinkled in, so retries interleave with fresh work. */
    arb_test_server_push_status(srv, 502, NULL, "");
    arb_test_server_push_drop(srv);
    arb_test_server_push_status(srv, 503, NULL, "");
    arb_client_params p = test_params();
    p.jobs = 16;
    arb__http *h = arb__http_create(&p);
    char *url = url_of(srv);
    for (int i = 0; i < N; i++) {
        char body[32];
        int n = snprintf(body, sizeof body, "{\"i\":%d}", i);
        assert_int_equal(arb__http_submit(h, (uint64_t)(1000 + i), url, NULL, body, (size_t)n), 0);
    }
    assert_int_equal(arb__http_pending(h), N);
    collector c = {.n = 0};
    run_all(h, &c);
    assert_int_equal(c.n, N);
    int count[N] = {0};
    int extra_attempts = 0;
    for (size_t i = 0; i < c.n; i++) {
        assert_true(c.results[i].tag >= 1000 && c.results[i].tag < 1000 + N);
        count[c.results[i].tag - 1000]++;
        assert_true(c.results[i].ok);
        extra_attempts += c.results[i].attempts - 1;
    }
    for (int i = 0; i < N; i++) assert_int_equal(count[i], 1);
    /* The server saw every failure once. The drop counts as an attempt when it meets a fresh
    ** connection; on one that already carried a request (which one it meets depends on timing:
    ** 3 runs in 30 on a fast machine) it is an idle close, and the request is sent again
    ** without counting an attempt, as libcurl does (plain_broken; test_http_plain.c,
    ** test_idle_connection_closed_by_server). */
    assert_int_equal(arb_test_server_requests(srv), N + 3);
    assert_true(extra_attempts == 2 || extra_attempts == 3);
    assert_int_equal(arb__http_get_stats(h).retries, (size_t)extra_attempts);
    free(url);
    collector_free(&c);
    arb__http_destroy(h);
    arb_test_server_stop(srv);
}

/* done may submit more work from inside the callback (the executor does). */
typedef struct chain {
    collector c;
    arb__http *h;
    const char *url;
} chain;

static void on_done_chain(void *ud, uint64_t tag, const arb__http_result *res)
{
    chain *ch = ud;
    on_done(&ch->c, tag, res);
    if (tag < 5) assert_int_equal(arb__http_submit(ch->h, tag + 1, ch->url, NULL, "{}", 2), 0);
}

static void test_submit_from_callback(void **state)
{
    arb_test_server *srv = arb_test_server_start();
    arb_client_params p = test_params();
    chain ch = {.c = {.n = 0}};
    ch.h = arb__http_create(&p);
    char *url = url_of(srv);
    ch.url = url;
    assert_int_equal(arb__http_submit(ch.h, 1, url, NULL, "{}", 2), 0);
    double start = arb__now_ms();
    while (arb__http_pending(ch.h) > 0) {
        arb__http_step(ch.h, 100, on_done_chain, &ch);
        assert_true(arb__now_ms() - start < 10000);
    }
    assert_int_equal(ch.c.n, 5);
    for (size_t i = 0; i < 5; i++) assert_int_equal(ch.c.results[i].tag, i + 1);
    free(url);
    collector_free(&ch.c);
    arb__http_destroy(ch.h);
    arb_test_server_stop(srv);
}

/* ---- pools: several endpoints of one judge --------------------------------------------------- */

/* A URL on a port that was free a moment ago (connection refused). */
static void dead_url(char *url, size_t size)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    snprintf(url, size, "http://127.0.0.1:%d/v1/chat/completions", ntohs(a.sin_port));
}

static arb__http_endpoint_stats endpoint_stats(arb__http *h, int pool, size_t i)
{
    arb__http_endpoint_stats es;
    assert_int_equal(arb__http_get_endpoint_stats(h, pool, i, &es), 0);
    return es;
}

static void test_pool_bad_arguments(void **state)
{
    arb_client_params p = test_params();
    arb__http *h = arb__http_create(&p);
    const char *urls[] = {"http://127.0.0.1:1/v1/chat/completions"};
    assert_int_equal(arb__http_add_pool(h, urls, 0, 0), -1);
    assert_int_equal(arb__http_add_pool(h, urls, 1, -1), -1);
    assert_int_equal(arb__http_submit_pool(h, 1, 0, NULL, "{}", 2), -1); /* no pool yet */
    assert_int_equal(arb__http_add_pool(h, urls, 1, 0), 0);
    assert_int_equal(arb__http_submit_pool(h, 1, 1, NULL, "{}", 2), -1);
    arb__http_endpoint_stats es;
    assert_int_equal(arb__http_get_endpoint_stats(h, 0, 1, &es), -1);
    arb__http_destroy(h);
}

/* Equal endpoints, nothing running: two requests go one to each (least outstanding, ties to
** the endpoint sent fewer), and each result names its endpoint. */
static void test_pool_spreads_evenly(void **state)
{
    arb_test_server *a = arb_test_server_start(), *b = arb_test_server_start();
    arb_test_behaviour slow = {.action = ARB_TEST_DELAY, .delay_ms = 100};
    arb_test_server_set_default(a, &slow);
    arb_test_server_set_default(b, &slow);
    arb_client_params p = test_params();
    arb__http *h = arb__http_create(&p);
    char *ua = url_of(a), *ub = url_of(b);
    const char *urls[] = {ua, ub};
    int pool = arb__http_add_pool(h, urls, 2, 0);
    assert_int_equal(pool, 0);
    for (uint64_t t = 0; t < 4; t++)
        assert_int_equal(arb__http_submit_pool(h, t, pool, NULL, "{}", 2), 0);
    collector c = {.n = 0};
    run_all(h, &c);
    assert_int_equal(c.n, 4);
    int on[2] = {0, 0};
    for (size_t i = 0; i < c.n; i++) {
        assert_true(c.results[i].ok);
        assert_true(c.results[i].endpoint == 0 || c.results[i].endpoint == 1);
        on[c.results[i].endpoint]++;
    }
    assert_int_equal(on[0], 2);
    assert_int_equal(on[1], 2);
    assert_int_equal(arb_test_server_requests(a), 2);
    assert_int_equal(arb_test_server_requests(b), 2);
    assert_int_equal(endpoint_stats(h, pool, 0).sent, 2);
    free(ua);
    free(ub);
    collector_free(&c);
    arb__http_destroy(h);
    arb_test_server_stop(a);
    arb_test_server_stop(b);
}

/* A slow endpoint holds its requests longer, so least-outstanding sends it fewer. */
static void test_pool_slow_endpoint_gets_fewer(void **state)
{
    enum { N = 40 };
    arb_test_server *slow = arb_test_server_start(), *fast = arb_test_server_start();
    arb_test_behaviour delay = {.action = ARB_TEST_DELAY, .delay_ms = 150};
    arb_test_server_set_default(slow, &delay);
    arb_client_params p = test_params();
    p.jobs = 4;
    arb__http *h = arb__http_create(&p);
    char *us = url_of(slow), *uf = url_of(fast);
    const char *urls[] = {us, uf};
    int pool = arb__http_add_pool(h, urls, 2, 0);
    for (uint64_t t = 0; t < N; t++)
        assert_int_equal(arb__http_submit_pool(h, t, pool, NULL, "{}", 2), 0);
    collector c = {.n = 0};
    run_all(h, &c);
    assert_int_equal(c.n, N);
    assert_int_equal(arb_test_server_requests(slow) + arb_test_server_requests(fast), N);
    assert_true(arb_test_server_requests(slow) >= 1);
    assert_true(arb_test_server_requests(slow) * 4 < arb_test_server_requests(fast));
    free(us);
    free(uf);
    collector_free(&c);
    arb__http_destroy(h);
    arb_test_server_stop(slow);
    arb_test_server_stop(fast);
}

/* max_in_flight 1 per endpoint: four 100 ms requests over two endpoints take two rounds
** although jobs would allow all four at once. */
static void test_pool_max_in_flight(void **state)
{
    arb_test_server *a = arb_test_server_start(), *b = arb_test_server_start();
    arb_test_behaviour slow = {.action = ARB_TEST_DELAY, .delay_ms = 100};
    arb_test_server_set_default(a, &slow);
    arb_test_server_set_default(b, &slow);
    arb_client_params p = test_params();
    p.jobs = 8;
    arb__http *h = arb__http_create(&p);
    char *ua = url_of(a), *ub = url_of(b);
    const char *urls[] = {ua, ub};
    int pool = arb__http_add_pool(h, urls, 2, 1);
    assert_int_equal(endpoint_stats(h, pool, 0).limit, 1);
    assert_int_equal(arb__http_get_stats(h).inflight_limit, 2);
    for (uint64_t t = 0; t < 4; t++)
        assert_int_equal(arb__http_submit_pool(h, t, pool, NULL, "{}", 2), 0);
    collector c = {.n = 0};
    double t0 = arb__now_ms();
    run_all(h, &c);
    assert_true(arb__now_ms() - t0 >= 190);
    assert_int_equal(c.n, 4);
    assert_int_equal(arb_test_server_requests(a), 2);
    assert_int_equal(arb_test_server_requests(b), 2);
    free(ua);
    free(ub);
    collector_free(&c);
    arb__http_destroy(h);
    arb_test_server_stop(a);
    arb_test_server_stop(b);
}

/* A dead endpoint: after ARB__ENDPOINT_FAILS (3) refused connections in a row it is cooled
** down and every call finishes on the live one, within its retries. */
static void test_pool_dead_endpoint_cooled_down(void **state)
{
    enum { N = 12 };
    arb_test_server *live = arb_test_server_start();
    char dead[64];
    dead_url(dead, sizeof dead);
    arb_client_params p = test_params();
    p.jobs = 2;
    p.max_retries = 3;
    arb__http *h = arb__http_create(&p);
    char *ul = url_of(live);
    const char *urls[] = {dead, ul};
    int pool = arb__http_add_pool(h, urls, 2, 0);
    for (uint64_t t = 0; t < N; t++)
        assert_int_equal(arb__http_submit_pool(h, t, pool, NULL, "{}", 2), 0);
    collector c = {.n = 0};
    run_all(h, &c);
    assert_int_equal(c.n, N);
    for (size_t i = 0; i < c.n; i++) {
        assert_true(c.results[i].ok);
        assert_int_equal(c.results[i].endpoint, 1);
    }
    assert_int_equal(arb_test_server_requests(live), N);
    arb__http_endpoint_stats es = endpoint_stats(h, pool, 0);
    assert_int_equal(es.cooldowns, 1);
    assert_true(es.failed >= 3 && es.failed <= 4); /* the third, and one running beside it */
    assert_int_equal(es.ok, 0);
    assert_int_equal(endpoint_stats(h, pool, 1).ok, N);
    free(ul);
    collector_free(&c);
    arb__http_destroy(h);
    arb_test_server_stop(live);
}

/* Both endpoints fail three times in a row (503): both are cooled down (for max_retry_wait,
** 300 ms here), the call waits for the first to come back and then succeeds there. */
static void test_pool_all_out_waits_for_first_back(void **state)
{
    arb_test_server *a = arb_test_server_start(), *b = arb_test_server_start();
    for (int i = 0; i < 3; i++) {
        arb_test_server_push_status(a, 503, NULL, "busy");
        arb_test_server_push_status(b, 503, NULL, "busy");
    }
    arb_client_params p = test_params();
    p.jobs = 1;
    p.max_retries = 10;
    p.max_retry_wait_ms = 300;
    arb__http *h = arb__http_create(&p);
    char *ua = url_of(a), *ub = url_of(b);
    const char *urls[] = {ua, ub};
    int pool = arb__http_add_pool(h, urls, 2, 0);
    assert_int_equal(arb__http_submit_pool(h, 9, pool, NULL, "{}", 2), 0);
    collector c = {.n = 0};
    double t0 = arb__now_ms();
    run_all(h, &c);
    double elapsed = arb__now_ms() - t0;
    assert_int_equal(c.n, 1);
    assert_true(c.results[0].ok);
    assert_int_equal(c.results[0].attempts, 7); /* A B A B A B, then A once back */
    assert_int_equal(c.results[0].endpoint, 0);
    assert_true(elapsed >= 250);
    assert_int_equal(endpoint_stats(h, pool, 0).cooldowns, 1);
    assert_int_equal(endpoint_stats(h, pool, 1).cooldowns, 1);
    assert_int_equal(arb_test_server_requests(a), 4);
    assert_int_equal(arb_test_server_requests(b), 3);
    free(ua);
    free(ub);
    collector_free(&c);
    arb__http_destroy(h);
    arb_test_server_stop(a);
    arb_test_server_stop(b);
}

/* One endpoint answers 429 to everything: its limit is halved and it is paused, the other's
** limit stays at jobs, and every call is answered by the other. */
static void test_pool_429_slows_only_that_endpoint(void **state)
{
    enum { N = 20 };
    arb_test_server *a = arb_test_server_start(), *b = arb_test_server_start();
    arb_test_behaviour throttle = {.action = ARB_TEST_STATUS, .status = 429, .body = "slow"};
    arb_test_server_set_default(a, &throttle);
    arb_client_params p = test_params();
    p.jobs = 8;
    p.max_retries = 5;
    arb__http *h = arb__http_create(&p);
    char *ua = url_of(a), *ub = url_of(b);
    const char *urls[] = {ua, ub};
    int pool = arb__http_add_pool(h, urls, 2, 0);
    for (uint64_t t = 0; t < N; t++)
        assert_int_equal(arb__http_submit_pool(h, t, pool, NULL, "{}", 2), 0);
    collector c = {.n = 0};
    run_all(h, &c);
    assert_int_equal(c.n, N);
    for (size_t i = 0; i < c.n; i++) {
        assert_true(c.results[i].ok);
        assert_int_equal(c.results[i].endpoint, 1);
    }
    arb__http_endpoint_stats ea = endpoint_stats(h, pool, 0), eb = endpoint_stats(h, pool, 1);
    assert_true(ea.throttled >= 1);
    assert_int_equal(ea.throttled, arb_test_server_requests(a));
    assert_true(ea.limit <= 4);
    assert_int_equal(ea.cooldowns, 0); /* throttled is not dead */
    assert_int_equal(eb.throttled, 0);
    assert_int_equal(eb.limit, 8);
    assert_int_equal(eb.ok, N);
    free(ua);
    free(ub);
    collector_free(&c);
    arb__http_destroy(h);
    arb_test_server_stop(a);
    arb_test_server_stop(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_rejects_bad_params),
        cmocka_unit_test(test_step_with_nothing_pending_returns_at_once),
        cmocka_unit_test(test_destroy_with_pending_work),
        cmocka_unit_test(test_success),
        cmocka_unit_test(test_headers_and_large_body),
        cmocka_unit_test(test_retry_after_429_is_honoured),
        cmocka_unit_test(test_retry_after_is_capped),
        cmocka_unit_test(test_retry_after_http_date),
        cmocka_unit_test(test_500_then_success),
        cmocka_unit_test(test_timeout_then_success),
        cmocka_unit_test(test_timeout_final_reason),
        cmocka_unit_test(test_dropped_connection_then_success),
        cmocka_unit_test(test_final_failure_after_max_retries),
        cmocka_unit_test(test_error_body_excerpt_is_capped),
        cmocka_unit_test(test_400_is_final_at_once),
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test(test_reply_cap),
        cmocka_unit_test(test_reply_header_too_large),
        cmocka_unit_test(test_429_lowers_inflight_limit),
        cmocka_unit_test(test_limit_never_below_one),
        cmocka_unit_test(test_many_requests_complete_once),
        cmocka_unit_test(test_submit_from_callback),
        cmocka_unit_test(test_pool_bad_arguments),
        cmocka_unit_test(test_pool_spreads_evenly),
        cmocka_unit_test(test_pool_slow_endpoint_gets_fewer),
        cmocka_unit_test(test_pool_max_in_flight),
        cmocka_unit_test(test_pool_dead_endpoint_cooled_down),
        cmocka_unit_test(test_pool_all_out_waits_for_first_back),
        cmocka_unit_test(test_pool_429_slows_only_that_endpoint),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
