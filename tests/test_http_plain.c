/*
** test_http_plain.c -- the plain-HTTP transport against a hostile raw server: chunked bodies,
** replies split into one-byte writes, Connection: close, keep-alive reuse, a connection closed
** while idle, early close, 429 with Retry-After, 5xx, 1xx interim replies, bodies ended by the
** close, slow and oversized replies, malformed replies. Every scenario runs twice, through
** libcurl (ARB_TRANSPORT_CURL) and through the plain transport (ARB_TRANSPORT_AUTO), and the
** two must give the same result: ok, status, attempts, body and error reason.
*/
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* ---- a raw scripted server ---------------------------------------------------------------- */

typedef struct step {
    const char *reply;  /* raw bytes to send */
    size_t piece;       /* write in pieces of this many bytes (0: at once) */
    long pause_ms;      /* before each piece after the first, and before a lone reply */
    int close_after;    /* close the connection after sending */
    long close_idle_ms; /* > 0: close it this long after sending (an idle keep-alive close) */
} step;

/* When set, sent unasked 20 ms after the first step's reply, before the next request is read
** (a server that speaks out of turn on a keep-alive connection). */
static const char *unasked_bytes;
/* When set, every close by the server is an abortive one (RST, SO_LINGER 0). */
static int reset_on_close;
/* When set, the server accepts connections but never reads from them. */
static int never_read;

typedef struct raw_server {
    int listen_fd;
    int port;
    pthread_t thread;
    pthread_mutex_t lock;
    const step *script;
    size_t n_steps, next;
    int connections;
    int requests;
    int live;           /* connection threads still running */
    int unasked_due;    /* steps with unasked bytes taken, and those bytes sent */
    int unasked_sent;
    volatile int stop;
} raw_server;

typedef struct conn_arg {
    raw_server *srv;
    int fd;
} conn_arg;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Reads one request (head and Content-Length body). 0 ok, -1 closed. */
static int read_request(int fd)
{
    char buf[65536];
    size_t len = 0;
    char *end = NULL;
    while (!(end = len ? memmem(buf, len, "\r\n\r\n", 4) : NULL)) {
        if (len == sizeof buf) return -1;
        ssize_t n = recv(fd, buf + len, sizeof buf - len, 0);
        if (n <= 0) return -1;
        len += (size_t)n;
    }
    size_t head = (size_t)(end - buf) + 4, body = 0;
    char *cl = strcasestr(buf, "content-length:");
    if (cl && cl < end) body = strtoul(cl + 15, NULL, 10);
    size_t have = len - head;
    while (have < body) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return -1;
        have += (size_t)n;
    }
    return 0;
}

static void *serve_conn(void *p)
{
    conn_arg *a = p;
    raw_server *srv = a->srv;
    int fd = a->fd;
    free(a);
    while (never_read && !srv->stop) sleep_ms(10);
    while (!srv->stop && read_request(fd) == 0) {
        pthread_mutex_lock(&srv->lock);
        srv->requests++;
        const step *s = srv->next < srv->n_steps ? &srv->script[srv->next++] : NULL;
        if (s == srv->script && unasked_bytes) srv->unasked_due++;
        pthread_mutex_unlock(&srv->lock);
        if (!s) break;
        size_t len = strlen(s->reply), piece = s->piece ? s->piece : len;
        if (!s->piece && s->pause_ms) sleep_ms(s->pause_ms);
        for (size_t off = 0; off < len; off += piece) {
            if (off && s->pause_ms) sleep_ms(s->pause_ms);
            size_t n = len - off < piece ? len - off : piece;
            if (send(fd, s->reply + off, n, MSG_NOSIGNAL) < 0) break;
        }
        if (s == srv->script && unasked_bytes) {
            sleep_ms(20); /* (so it usually arrives apart from the reply) */
            send(fd, unasked_bytes, strlen(unasked_bytes), MSG_NOSIGNAL);
            pthread_mutex_lock(&srv->lock);
            srv->unasked_sent++;
            pthread_mutex_unlock(&srv->lock);
        }
        if (s->close_after) break;
        if (s->close_idle_ms) {
            sleep_ms(s->close_idle_ms);
            break;
        }
    }
    if (reset_on_close) {
        struct linger abort_close = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_close, sizeof abort_close);
    }
    close(fd);
    pthread_mutex_lock(&srv->lock);
    srv->live--;
    pthread_mutex_unlock(&srv->lock);
    return NULL;
}

static void *serve(void *p)
{
    raw_server *srv = p;
    while (!srv->stop) {
        int fd = accept(srv->listen_fd, NULL, NULL);
        if (fd < 0) continue;
        if (srv->stop) {
            close(fd);
            break;
        }
        pthread_mutex_lock(&srv->lock);
        srv->connections++;
        srv->live++;
        pthread_mutex_unlock(&srv->lock);
        conn_arg *a = malloc(sizeof *a);
        a->srv = srv;
        a->fd = fd;
        pthread_t t;
        pthread_create(&t, NULL, serve_conn, a);
        pthread_detach(t);
    }
    return NULL;
}

static raw_server *server_start(const step *script, size_t n)
{
    raw_server *srv = calloc(1, sizeof *srv);
    pthread_mutex_init(&srv->lock, NULL);
    srv->script = script;
    srv->n_steps = n;
    srv->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(srv->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(srv->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(srv->listen_fd, 64), 0);
    socklen_t len = sizeof a;
    getsockname(srv->listen_fd, (struct sockaddr *)&a, &len);
    srv->port = ntohs(a.sin_port);
    pthread_create(&srv->thread, NULL, serve, srv);
    return srv;
}

static void server_stop(raw_server *srv)
{
    srv->stop = 1;
    int fd = socket(AF_INET, SOCK_STREAM, 0); /* wake accept() */
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)srv->port);
    connect(fd, (struct sockaddr *)&a, sizeof a);
    close(fd);
    pthread_join(srv->thread, NULL);
    close(srv->listen_fd);
    for (int i = 0; i < 1000; i++) { /* the client is gone: its connections end */
        pthread_mutex_lock(&srv->lock);
        int live = srv->live;
        pthread_mutex_unlock(&srv->lock);
        if (!live) break;
        sleep_ms(10);
    }
    pthread_mutex_destroy(&srv->lock);
    free(srv);
}

/* ---- running a scenario through both transports ------------------------------------------- */

#define MAX_RESULTS 16

typedef struct outcome {
    int ok;
    long status;
    int attempts;
    char body[256];
    char error[256];
} outcome;

typedef struct run {
    outcome r[MAX_RESULTS];
    size_t n;
    int connections;
    int requests;
} run;

static void on_done(void *ud, uint64_t tag, const arb__http_result *res)
{
    run *c = ud;
    (void)tag;
    assert_true(c->n < MAX_RESULTS);
    outcome *o = &c->r[c->n++];
    o->ok = res->ok;
    o->status = res->status;
    o->attempts = res->attempts;
    snprintf(o->body, sizeof o->body, "%.*s", (int)(res->body_len < 255 ? res->body_len : 255),
             res->body);
    snprintf(o->error, sizeof o->error, "%s", res->error ? res->error : "");
}

static arb_client_params params_for(arb_transport transport)
{
    arb_client_params p = arb_client_default_params();
    p.jobs = 1;
    p.connect_timeout_ms = 2000;
    p.total_timeout_ms = 3000;
    p.max_retries = 2;
    p.backoff_base_ms = 10;
    p.backoff_max_ms = 20;
    p.max_retry_wait_ms = 2000;
    p.transport = transport;
    return p;
}

/* The descriptors this process holds open. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Sends n_requests POSTs one after the other (jobs 1) to a server playing script. */
static void run_script(arb_transport transport, const step *script, size_t n_steps,
                       size_t n_requests, const arb_client_params *override, run *out)
{
    int fds_before = open_fds();
    raw_server *srv = server_start(script, n_steps);
    arb_client_params p = override ? *override : params_for(transport);
    p.transport = transport;
    arb__http *h = arb__http_create(&p);
    assert_non_null(h);
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", srv->port);
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n_requests; i++) {
        for (int k = 0; k < 1000; k++) { /* unasked bytes are in before the next request */
            pthread_mutex_lock(&srv->lock);
            int waiting = srv->unasked_sent < srv->unasked_due;
            pthread_mutex_unlock(&srv->lock);
            if (!waiting) break;
            sleep_ms(5);
        }
        assert_int_equal(arb__http_submit(h, i, url, NULL, "{\"q\":1}", 7), 0);
        double start = arb__now_ms();
        while (arb__http_pending(h) > 0) {
            arb__http_step(h, 100, on_done, out);
            assert_true(arb__now_ms() - start < 20000);
        }
    }
    arb__http_destroy(h);
    out->connections = srv->connections;
    out->requests = srv->requests;
    server_stop(srv);
    assert_int_equal(open_fds(), fds_before); /* no connection left open */
}

static int compare_counts = 1;

/* Runs the scenario through both transports; they must agree. Returns the plain run. */
static void both(const step *script, size_t n_steps, size_t n_requests,
                 const arb_client_params *override, run *plain)
{
    run curl;
    run_script(ARB_TRANSPORT_CURL, script, n_steps, n_requests, override, &curl);
    run_script(ARB_TRANSPORT_AUTO, script, n_steps, n_requests, override, plain);
    assert_int_equal(plain->n, curl.n);
    for (size_t i = 0; i < curl.n; i++) {
        assert_int_equal(plain->r[i].ok, curl.r[i].ok);
        assert_int_equal(plain->r[i].status, curl.r[i].status);
        assert_int_equal(plain->r[i].attempts, curl.r[i].attempts);
        /* (a reply cut short by the cap holds whatever had arrived: compared when ok) */
        if (curl.r[i].ok) assert_string_equal(plain->r[i].body, curl.r[i].body);
        assert_string_equal(plain->r[i].error, curl.r[i].error);
    }
    /* (after a timeout, whether the server saw the last request whole and how soon the next
    ** connection opened depend on the machine's speed) */
    if (compare_counts) {
        assert_int_equal(plain->requests, curl.requests);
        assert_int_equal(plain->connections, curl.connections);
    }
}

#define OK_BODY "{\"choices\":[]}"
#define OK_REPLY "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n" OK_BODY
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_chunked_one_byte_writes(void **state)
{
    (void)state;
    static const step s[] = {{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "5;ext=1\r\n{\"cho\r\n9\r\nices\":[]}\r\n0\r\nX-Trailer: t\r\n\r\n",
                              1, 0, 0, 0}};
    run r;
    both(s, N(s), 1, NULL, &r);
    assert_true(r.r[0].ok);
    assert_string_equal(r.r[0].body, OK_BODY);
}

static void test_split_reads_with_pauses(void **state)
{
    (void)state;
    static const step s[] = {{OK_REPLY, 7, 5, 0, 0}, {OK_REPLY, 40, 5, 0, 0}};
    run r;
    both(s, N(s), 2, NULL, &r);
    assert_true(r.r[0].ok && r.r[1].ok);
    assert_string_equal(r.r[1].body, OK_BODY);
    assert_int_equal(r.connections, 1); /* kept alive */
}

static void test_keep_alive_reused(void **state)
{
    (void)state;
    static const step s[] = {{OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0},
                             {OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0}};
    run r;
    both(s, N(s), 4, NULL, &r);
    for (int i = 0; i < 4; i++) assert_true(r.r[i].ok);
    assert_int_equal(r.connections, 1);
}

static void test_connection_close(void **state)
{
    (void)state;
    static const step s[] = {
        {"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 14\r\n\r\n" OK_BODY, 0, 0, 1, 0},
        {"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 14\r\n\r\n" OK_BODY, 0, 0, 1, 0}};
    run r;
    both(s, N(s), 2, NULL, &r);
    assert_true(r.r[0].ok && r.r[1].ok);
    assert_int_equal(r.connections, 2);
}

/* The server closes a kept-alive connection while it is idle: the next request goes out on a
** fresh connection as the same attempt. */
static void test_idle_connection_closed_by_server(void **state)
{
    (void)state;
    static const step s[] = {{OK_REPLY, 0, 0, 0, 1}, {OK_REPLY, 0, 0, 0, 0}};
    run r;
    arb_client_params p = params_for(ARB_TRANSPORT_AUTO);
    both(s, N(s), 2, &p, &r);
    assert_true(r.r[1].ok);
    assert_int_equal(r.r[1].attempts, 1);
    assert_int_equal(r.connections, 2);
}

static void test_early_close_is_retried(void **state)
{
    (void)state;
    static const step s[] = {{"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"cho", 0, 0, 1, 0},
                             {OK_REPLY, 0, 0, 0, 0}};
    run r;
    both(s, N(s), 1, NULL, &r);
    assert_true(r.r[0].ok);
    assert_int_equal(r.r[0].attempts, 2);
}

static void test_close_without_reply_is_retried(void **state)
{
    (void)state;
    static const step s[] = {{"", 0, 0, 1, 0}, {OK_REPLY, 0, 0, 0, 0}};
    run r;
    both(s, N(s), 1, NULL, &r);
    assert_true(r.r[0].ok);
    assert_int_equal(r.r[0].attempts, 2);
}

static void test_429_retry_after_then_ok(void **state)
{
    (void)state;
    static const step s[] = {
        {"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: 4\r\n\r\nslow", 0, 0, 0, 0},
        {OK_REPLY, 0, 0, 0, 0}};
    run r;
    both(s, N(s), 1, NULL, &r);
    assert_true(r.r[0].ok);
    assert_int_equal(r.r[0].attempts, 2);
}

/* Retry-After over the cap: the final reason names it, through both transports alike. */
static void test_429_retry_after_over_cap_reason(void **state)
{
    (void)state;
    static const step s[] = {
        {"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7200\r\nContent-Length: 4\r\n\r\nslow", 0, 0, 0, 0}};
    arb_client_params p = params_for(ARB_TRANSPORT_AUTO);
    p.max_retries = 0;
    run r;
    both(s, N(s), 1, &p, &r);
    assert_false(r.r[0].ok);
    assert_string_equal(r.r[0].error, "HTTP 429 after 1 attempt (the server asked to wait 7200 s, "
                                      "Retry-After; waits are capped at 2 s, max_retry_wait): slow");
}

static void test_5xx_final_reason(void **state)
{
    (void)state;
    static const step s[] = {
        {"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", 0, 0, 0, 0},
        {"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 4\r\n\r\nbusy", 0, 0, 0, 0},
        {"HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbusy\r\n0\r\n\r\n", 0, 0, 0, 0}};
    run r;
    both(s, N(s), 1, NULL, &r);
    assert_false(r.r[0].ok);
    assert_int_equal(r.r[0].status, 500);
    assert_string_equal(r.r[0].error, "HTTP 500 after 3 attempts: busy");
}

static void test_interim_100_and_body_to_close(void **state)
{
    (void)state;
    static const step s[] = {
        {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" OK_BODY, 3, 0, 1, 0}};
    run r;
    both(s, N(s), 1, NULL, &r);
    assert_true(r.r[0].ok);
    assert_string_equal(r.r[0].body, OK_BODY);
}

static void test_slow_reply_times_out(void **state)
{
    (void)state;
    static const step s[] = {{OK_REPLY, 0, 600, 0, 0}, {OK_REPLY, 0, 600, 0, 0}};
    arb_client_params p = params_for(ARB_TRANSPORT_AUTO);
    p.total_timeout_ms = 150;
    p.max_retries = 1;
    run r;
    compare_counts = 0;
    both(s, N(s), 1, &p, &r);
    compare_counts = 1;
    assert_false(r.r[0].ok);
    assert_string_equal(r.r[0].error, "timeout after 150 ms (2 attempts)");
}

static void test_oversized_reply(void **state)
{
    (void)state;
    static const step s[] = {{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "20\r\n0123456789abcdef0123456789abcdef\r\n"
                              "20\r\n0123456789abcdef0123456789abcdef\r\n0\r\n\r\n", 5, 0, 0, 0}};
    arb_client_params p = params_for(ARB_TRANSPORT_AUTO);
    p.max_reply_bytes = 40;
    run r;
    both(s, N(s), 1, &p, &r);
    assert_false(r.r[0].ok);
    assert_string_equal(r.r[0].error, "reply larger than 40 bytes");
    assert_int_equal(r.r[0].attempts, 1);
}

/* Malformed replies fail without a retry through the plain transport; libcurl's reasons for
** them differ from each other, so only the shared facts are compared here. */
static void test_malformed_replies_fail(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "HTTX/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n{}",
    };
    for (size_t i = 0; i < N(bad); i++) {
        step s[] = {{bad[i], 0, 0, 1, 0}, {OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0}};
        run r;
        run_script(ARB_TRANSPORT_AUTO, s, N(s), 1, NULL, &r);
        assert_int_equal(r.n, 1);
        assert_false(r.r[0].ok);
        assert_int_equal(r.r[0].attempts, 1);
        assert_string_equal(r.r[0].error, "transfer failed: malformed HTTP reply (1 attempt)");
    }
}

/* The parser alone: a reply fed one byte at a time ends exactly at its last byte. */
static void test_parser_byte_by_byte(void **state)
{
    (void)state;
    const char *reply = "HTTP/1.1 429 Slow\nRetry-After: 3\nTransfer-Encoding: chunked\n\n"
                        "3\nabc\n0\n\nHTTP/1.1";
    arb__buf body;
    arb__buf_init(&body, 100);
    arb__h1 h;
    memset(&h, 0, sizeof h);
    arb__buf_init(&h.head, 0);
    arb__h1_begin(&h, &body);
    size_t len = strlen(reply), i = 0, used = 0;
    int rc = ARB__H1_MORE;
    for (; i < len && rc == ARB__H1_MORE; i++) rc = arb__h1_feed(&h, reply + i, 1, &used);
    assert_int_equal(rc, ARB__H1_DONE);
    assert_int_equal(i, len - strlen("HTTP/1.1")); /* stopped at the end of the reply */
    assert_int_equal(h.status, 429);
    assert_true(h.retry_after_ms == 3000.0);
    assert_int_equal(body.len, 3);
    assert_memory_equal(body.data, "abc", 3);
    arb__buf_free(&body);
    arb__buf_free(&h.head);
}

/* A server that sends a second, unasked reply on a keep-alive connection after the first:
** those bytes are not the reply to the next request, which must go out on a new connection
** (libcurl checks an idle connection the same way before reusing it). */
static void test_unasked_bytes_on_idle_connection(void **state)
{
    (void)state;
    static const step s[] = {{OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0}};
    /* (plain only: libcurl 7.88 sometimes takes these bytes as the next reply) */
    unasked_bytes = "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"smuggled\"}";
    run r;
    run_script(ARB_TRANSPORT_AUTO, s, N(s), 2, NULL, &r);
    unasked_bytes = NULL;
    assert_int_equal(r.n, 2);
    assert_true(r.r[1].ok);
    assert_string_equal(r.r[1].body, OK_BODY);
    assert_int_equal(r.r[1].attempts, 1);
    assert_int_equal(r.connections, 2);
}

/* Requests queued together go out one after the other on one kept-alive connection: each is
** sent right after the read that ended the previous reply found the socket empty, so no
** liveness look (a recv that could only say EAGAIN) precedes it, and every recv reads a reply.
** A connection left idle across a return to the caller is still looked at before reuse. */
static void test_no_wasted_recv_on_reuse(void **state)
{
    (void)state;
    enum { QUEUED = 8 };
    static const step s[] = {{OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0},
                             {OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0},
                             {OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0}};
    raw_server *srv = server_start(s, N(s));
    arb_client_params p = params_for(ARB_TRANSPORT_AUTO);
    arb__http *h = arb__http_create(&p);
    assert_non_null(h);
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", srv->port);
    run out;
    memset(&out, 0, sizeof out);
    for (int i = 0; i < QUEUED; i++) assert_int_equal(arb__http_submit(h, (uint64_t)i, url, NULL, "{\"q\":1}", 7), 0);
    double start = arb__now_ms();
    while (arb__http_pending(h) > 0) {
        arb__http_step(h, 100, on_done, &out);
        assert_true(arb__now_ms() - start < 20000);
    }
    assert_int_equal(out.n, QUEUED);
    for (int i = 0; i < QUEUED; i++) assert_true(out.r[i].ok);
    arb__http_io_counts io = arb__http_get_io_counts(h);
    assert_int_equal(io.peeks, 0);
    /* one read per reply, plus at most one that found a reply not yet there */
    assert_true(io.reads >= QUEUED && io.reads <= 2 * QUEUED);
    /* the caller had the connection idle in its hands: looked at before it is reused */
    assert_int_equal(arb__http_submit(h, QUEUED, url, NULL, "{\"q\":1}", 7), 0);
    while (arb__http_pending(h) > 0) arb__http_step(h, 100, on_done, &out);
    assert_true(out.r[QUEUED].ok);
    assert_int_equal(arb__http_get_io_counts(h).peeks, 1);
    arb__http_destroy(h);
    pthread_mutex_lock(&srv->lock);
    assert_int_equal(srv->connections, 1);
    pthread_mutex_unlock(&srv->lock);
    server_stop(srv);
}

/* A transfer of a borrowed body (the executor's way) is a struct without the body: once its
** call is reported, the next submission reuses it instead of allocating another; a copied
** body's transfer is allocated with the body, each time. The results are the same. */
static void test_borrowed_transfers_reused(void **state)
{
    (void)state;
    enum { CALLS = 6 };
    static const step s[] = {{OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0},
                             {OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0},
                             {OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0}};
    raw_server *srv = server_start(s, N(s));
    arb_client_params p = params_for(ARB_TRANSPORT_AUTO);
    arb__http *h = arb__http_create(&p);
    assert_non_null(h);
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", srv->port);
    const char *urls[] = {url};
    int pool = arb__http_add_pool(h, urls, 1, 0);
    assert_true(pool >= 0);
    static const char body[] = "{\"q\":1}";
    run out;
    memset(&out, 0, sizeof out);
    for (int i = 0; i < CALLS; i++) {
        assert_int_equal(arb__http_submit_pool_borrowed(h, (uint64_t)i, pool, NULL, body, 7), 0);
        while (arb__http_pending(h) > 0) arb__http_step(h, 100, on_done, &out);
        assert_int_equal(out.n, i + 1);
        assert_true(out.r[i].ok);
        assert_string_equal(out.r[i].body, OK_BODY);
    }
    assert_int_equal(arb__http_get_io_counts(h).xfer_allocs, 1);
    for (int i = CALLS; i < CALLS + 2; i++) { /* copied bodies: one allocation each */
        assert_int_equal(arb__http_submit_pool(h, (uint64_t)i, pool, NULL, body, 7), 0);
        while (arb__http_pending(h) > 0) arb__http_step(h, 100, on_done, &out);
        assert_true(out.r[i].ok);
    }
    assert_int_equal(arb__http_get_io_counts(h).xfer_allocs, 3);
    arb__http_destroy(h);
    server_stop(srv);
}

/* The server reads the second request on a kept-alive connection and closes (or resets) it
** without a reply: the request goes out again on a new connection as the same attempt, and
** the caller gets one result for it (libcurl retries the same way). */
static void test_reused_connection_dropped_at_request(void **state)
{
    (void)state;
    static const step s[] = {{OK_REPLY, 0, 0, 0, 0}, {"", 0, 0, 1, 0}, {OK_REPLY, 0, 0, 0, 0}};
    for (int rst = 0; rst < 2; rst++) {
        reset_on_close = rst;
        run r;
        both(s, N(s), 2, NULL, &r);
        reset_on_close = 0;
        assert_int_equal(r.n, 2);
        assert_true(r.r[0].ok && r.r[1].ok);
        assert_int_equal(r.r[1].attempts, 1);
        assert_int_equal(r.requests, 3);
        assert_int_equal(r.connections, 2);
    }
}

/* A reset in the middle of a reply on a fresh connection is a failed attempt, retried. */
static void test_reset_mid_reply(void **state)
{
    (void)state;
    static const step s[] = {{"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"cho", 0, 0, 1, 0},
                             {OK_REPLY, 0, 0, 0, 0}};
    reset_on_close = 1;
    run r;
    both(s, N(s), 1, NULL, &r);
    reset_on_close = 0;
    assert_true(r.r[0].ok);
    assert_int_equal(r.r[0].attempts, 2);
}

/* A server that accepts but never reads a 4 MB body: the send blocks (EAGAIN) until the
** total timeout ends the attempt, with libcurl's reason, and the connection is closed. */
static void test_server_never_reads(void **state)
{
    (void)state;
    static const step s[] = {{OK_REPLY, 0, 0, 0, 0}};
    size_t len = 4u << 20;
    char *body = malloc(len);
    assert_non_null(body);
    memset(body, 'x', len);
    never_read = 1;
    outcome got[2];
    for (int t = 0; t < 2; t++) {
        int fds_before = open_fds();
        raw_server *srv = server_start(s, N(s));
        arb_client_params p = params_for(t ? ARB_TRANSPORT_AUTO : ARB_TRANSPORT_CURL);
        p.total_timeout_ms = 300;
        p.max_retries = 0;
        arb__http *h = arb__http_create(&p);
        assert_non_null(h);
        char url[96];
        snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", srv->port);
        run out;
        memset(&out, 0, sizeof out);
        assert_int_equal(arb__http_submit(h, 0, url, NULL, body, len), 0);
        while (arb__http_pending(h) > 0) arb__http_step(h, 100, on_done, &out);
        arb__http_destroy(h);
        server_stop(srv);
        assert_int_equal(open_fds(), fds_before);
        assert_int_equal(out.n, 1);
        got[t] = out.r[0];
    }
    never_read = 0;
    free(body);
    assert_false(got[1].ok);
    assert_int_equal(got[1].attempts, 1);
    assert_int_equal(got[1].status, got[0].status);
    assert_string_equal(got[1].error, got[0].error);
    assert_string_equal(got[1].error, "timeout after 300 ms (1 attempt)");
}

/* A 4 MB body to a server that drains it slowly through a small receive buffer: the sends
** hit EAGAIN and resume on EPOLLOUT until the whole body is out (the server only replies
** once it has read Content-Length bytes). */
static void test_large_body_partial_writes(void **state)
{
    (void)state;
    static const step s[] = {{OK_REPLY, 0, 0, 0, 0}, {OK_REPLY, 0, 0, 0, 0}};
    size_t len = 4u << 20;
    char *body = malloc(len);
    assert_non_null(body);
    memset(body, 'x', len);
    for (int t = 0; t < 2; t++) {
        arb_transport transport = t ? ARB_TRANSPORT_AUTO : ARB_TRANSPORT_CURL;
        int fds_before = open_fds();
        raw_server *srv = server_start(s, N(s));
        int small = 4096;
        setsockopt(srv->listen_fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        arb_client_params p = params_for(transport);
        p.total_timeout_ms = 60000;
        arb__http *h = arb__http_create(&p);
        assert_non_null(h);
        char url[96];
        snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", srv->port);
        run out;
        memset(&out, 0, sizeof out);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(arb__http_submit(h, (uint64_t)i, url, NULL, body, len), 0);
            while (arb__http_pending(h) > 0) arb__http_step(h, 100, on_done, &out);
        }
        arb__http_destroy(h);
        assert_int_equal(out.n, 2);
        assert_true(out.r[0].ok && out.r[1].ok);
        assert_string_equal(out.r[1].body, OK_BODY);
        assert_int_equal(srv->connections, 1);
        server_stop(srv);
        assert_int_equal(open_fds(), fds_before);
    }
    free(body);
}

/* Parses reply whole with a body cap of 100 bytes; returns the parser's code. */
static int parse_all(const char *reply, arb__h1 *h, arb__buf *body, size_t *used)
{
    arb__buf_init(body, 100);
    memset(h, 0, sizeof *h);
    arb__buf_init(&h->head, 0);
    arb__h1_begin(h, body);
    int rc = arb__h1_feed(h, reply, strlen(reply), used);
    arb__buf_free(&h->head);
    return rc;
}

#define ARB__TEST_LONG_LINE 102401 /* one byte over http_plain.c's line limit */

/* Feeds reply[0..len) in two reads split at k (the second as long as the parser takes more);
** returns the parser's code and fills what it read. */
static int parse_split(const char *reply, size_t len, size_t k, arb__h1 *h, arb__buf *body,
                       size_t *consumed)
{
    arb__buf_init(body, 100);
    memset(h, 0, sizeof *h);
    arb__buf_init(&h->head, 0);
    arb__h1_begin(h, body);
    size_t used = 0;
    int rc = arb__h1_feed(h, reply, k, &used);
    *consumed = used;
    if (rc == ARB__H1_MORE && k < len) {
        rc = arb__h1_feed(h, reply + k, len - k, &used);
        *consumed += used;
    }
    arb__buf_free(&h->head);
    return rc;
}

/* A head parsed where it lies (whole in one read) and one gathered over reads end alike: every
** split of each reply gives the code, status, framing, Retry-After, body and end of the whole
** reply in one read -- LF-only lines, interim replies, a line at the length limit and over it. */
static void test_parser_split_anywhere(void **state)
{
    (void)state;
    static char long_line[ARB__TEST_LONG_LINE + 64];
    memcpy(long_line, "HTTP/1.1 200 OK\r\nX-Long: ", 26);
    memset(long_line + 26, 'a', ARB__TEST_LONG_LINE);
    strcpy(long_line + 26 + ARB__TEST_LONG_LINE, "\r\nContent-Length: 2\r\n\r\n{}");
    const char *replies[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
        "HTTP/1.1 200 OK\nContent-Length: 2\n\n{}tail",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Slow\r\nRetry-After: 7\r\n"
        "Content-Length: 3\r\nConnection: close\r\n\r\nabc",
        "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "HTTP/1.1 204 No Content\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 2\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\n\nContent-Length: 2\r\n\r\n{}",
        "\nHTTP/1.1 200 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nBad Name: 1\r\n\r\n",
        long_line,
    };
    for (size_t i = 0; i < sizeof replies / sizeof *replies; i++) {
        size_t len = strlen(replies[i]);
        arb__h1 whole, part;
        arb__buf wbody, pbody;
        size_t wused, pused;
        int wrc = parse_split(replies[i], len, len, &whole, &wbody, &wused);
        size_t stride = len > 4096 ? 997 : 1;
        for (size_t k = 0; k <= len; k += stride) {
            int prc = parse_split(replies[i], len, k, &part, &pbody, &pused);
            if (prc != wrc || part.status != whole.status || part.keep_alive != whole.keep_alive ||
                part.retry_after_ms != whole.retry_after_ms || pbody.len != wbody.len ||
                (wbody.len && memcmp(pbody.data, wbody.data, wbody.len)) ||
                (wrc == ARB__H1_DONE && pused != wused))
                fail_msg("reply %zu split at %zu: rc %d/%d status %d/%d used %zu/%zu", i, k, prc,
                         wrc, part.status, whole.status, pused, wused);
            arb__buf_free(&pbody);
        }
        arb__buf_free(&wbody);
    }
}

/* Hostile framing: signs, hex prefixes, overflowing sizes, folding and conflicting framings
** are refused; what is allowed ends exactly where the reply ends. */
static void test_parser_hostile_framing(void **state)
{
    (void)state;
    static const struct {
        const char *reply;
        int rc, keep_alive;
        const char *body; /* NULL: not checked */
        size_t rest;      /* bytes left unused after DONE */
    } cases[] = {
        {"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n{}", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n{}", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nContent-Length: 0x2\r\n\r\n{}", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nContent-Length: 2 2\r\n\r\n{}", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n{}", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n{}", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000000\r\n\r\n{}", ARB__H1_MORE, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nContent-Length: \t2 \r\nContent-Length: 002\r\n\r\n{}", ARB__H1_DONE, 1, "{}", 0},
        {"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 2\r\n\r\n{}", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\nab", ARB__H1_MORE, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\n{}\r\n0\r\n\r\n", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\n{}\r\n0\r\n\r\n", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-2\r\n{}\r\n0\r\n\r\n", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 2\r\n{}\r\n0\r\n\r\n", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}x\r\n0\r\n\r\n", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 ;a=\"b\";c\r\n{}\r\n0;z\r\nT: 1\r\nU: 2\r\n\r\nX",
         ARB__H1_DONE, 1, "{}", 1},
        /* the cap holds across chunks: 4 x 32 bytes > 100 */
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
         "20\r\n0123456789abcdef0123456789abcdef\r\n20\r\n0123456789abcdef0123456789abcdef\r\n"
         "20\r\n0123456789abcdef0123456789abcdef\r\n20\r\n0123456789abcdef0123456789abcdef\r\n0\r\n\r\n",
         ARB__H1_TOOBIG, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
         ARB__H1_DONE, 0, "{}", 0},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n{}", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\n{}", ARB__H1_DONE, 1, "", 2},
        {"HTTP/1.1 304 Not Modified\r\n\r\n", ARB__H1_DONE, 1, "", 0},
        {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nContent-Length: 5\r\n\r\n"
         "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", ARB__H1_DONE, 1, "{}", 0},
        {"HTTP/1.1 101 Switching Protocols\r\n\r\n", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n\r\n", ARB__H1_DONE, 1, "{}", 19},
        {"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", ARB__H1_DONE, 0, "{}", 0},
        {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}", ARB__H1_DONE, 1, "{}", 0},
        /* RFC 9112 §6.1: chunked in HTTP/1.0 is faulty framing, the connection ends after */
        {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
         ARB__H1_DONE, 0, "{}", 0},
        {"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 2\r\n\r\n{}", ARB__H1_DONE, 0, "{}", 0},
        {"HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\n{}", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 20 OK\r\nContent-Length: 2\r\n\r\n{}", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200OK\r\nContent-Length: 2\r\n\r\n{}", ARB__H1_BAD, 1, NULL, 0},
        {"HTTP/1.1 200 OK\r\nBad Name: 1\r\nContent-Length: 2\r\n\r\n{}", ARB__H1_BAD, 1, NULL, 0},
    };
    for (size_t i = 0; i < N(cases); i++) {
        arb__h1 h;
        arb__buf body;
        size_t used = 0;
        int rc = parse_all(cases[i].reply, &h, &body, &used);
        if (rc != cases[i].rc) fail_msg("case %zu: rc %d, expected %d", i, rc, cases[i].rc);
        if (rc == ARB__H1_DONE) {
            if (h.keep_alive != cases[i].keep_alive) fail_msg("case %zu: keep_alive %d", i, h.keep_alive);
            assert_int_equal(strlen(cases[i].reply) - used, cases[i].rest);
            assert_int_equal(body.len, strlen(cases[i].body));
            assert_memory_equal(body.data ? body.data : "", cases[i].body, body.len);
        }
        arb__buf_free(&body);
    }
}

static int head_starts(const arb__plain_target *t, const char *start)
{
    return strncmp(t->head, start, strlen(start)) == 0;
}

/* Eligibility: plain http:// only; https, user info and odd characters stay with libcurl. */
static void test_target_eligibility(void **state)
{
    (void)state;
    arb__plain_target *t = arb__plain_target_create("http://127.0.0.1:8080/v1/chat/completions");
    assert_non_null(t);
    assert_string_equal(t->head, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                                 "User-Agent: arbiter/" ARB_VERSION "\r\n"
                                 "Content-Type: application/json\r\nAccept: application/json\r\n");
    arb__plain_target_destroy(t);
    /* a query without a path: the request target is still origin-form, "/?..." (as libcurl) */
    t = arb__plain_target_create("http://127.0.0.1:8080?model=a%20b");
    assert_non_null(t);
    assert_true(head_starts(t, "POST /?model=a%20b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"));
    arb__plain_target_destroy(t);
    /* an IPv6 literal keeps its brackets in Host; the default port is left out */
    t = arb__plain_target_create("http://[::1]:80/v1?x=1");
    assert_non_null(t);
    assert_true(head_starts(t, "POST /v1?x=1 HTTP/1.1\r\nHost: [::1]\r\n"));
    arb__plain_target_destroy(t);
    t = arb__plain_target_create("http://[::1]:8080");
    assert_non_null(t);
    assert_true(head_starts(t, "POST / HTTP/1.1\r\nHost: [::1]:8080\r\n"));
    arb__plain_target_destroy(t);
    assert_null(arb__plain_target_create("http://127.0.0.1:0/v1"));
    assert_null(arb__plain_target_create("http://127.0.0.1:/v1"));
    assert_null(arb__plain_target_create("http://127.0.0.1:8080:1/v1"));
    assert_null(arb__plain_target_create("http://[::1/v1"));
    assert_null(arb__plain_target_create("http://127.0.0.1/v1\r\nX-Injected: 1"));
    assert_null(arb__plain_target_create("http://us%40er@127.0.0.1/v1"));
    assert_null(arb__plain_target_create("https://127.0.0.1/v1/chat/completions"));
    assert_null(arb__plain_target_create("http://user:pw@127.0.0.1/v1"));
    assert_null(arb__plain_target_create("http://127.0.0.1/v1 x"));
    assert_null(arb__plain_target_create("http://127.0.0.1/v1#frag"));
    assert_null(arb__plain_target_create("http://127.0.0.1:99999/v1"));
    setenv("http_proxy", "http://proxy.invalid:3128", 1);
    assert_int_equal(arb__plain_transport_wanted(ARB_TRANSPORT_AUTO), 0);
    unsetenv("http_proxy");
    assert_int_equal(arb__plain_transport_wanted(ARB_TRANSPORT_AUTO), 1);
    assert_int_equal(arb__plain_transport_wanted(ARB_TRANSPORT_CURL), 0);
    setenv("ARBITER_TRANSPORT", "curl", 1);
    assert_int_equal(arb__plain_transport_wanted(ARB_TRANSPORT_AUTO), 0);
    unsetenv("ARBITER_TRANSPORT");
}

int main(void)
{
    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    unsetenv("all_proxy");
    unsetenv("ALL_PROXY");
    unsetenv("ARBITER_TRANSPORT");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parser_byte_by_byte),
        cmocka_unit_test(test_parser_split_anywhere),
        cmocka_unit_test(test_target_eligibility),
        cmocka_unit_test(test_chunked_one_byte_writes),
        cmocka_unit_test(test_split_reads_with_pauses),
        cmocka_unit_test(test_keep_alive_reused),
        cmocka_unit_test(test_no_wasted_recv_on_reuse),
        cmocka_unit_test(test_connection_close),
        cmocka_unit_test(test_idle_connection_closed_by_server),
        cmocka_unit_test(test_early_close_is_retried),
        cmocka_unit_test(test_close_without_reply_is_retried),
        cmocka_unit_test(test_429_retry_after_then_ok),
        cmocka_unit_test(test_429_retry_after_over_cap_reason),
        cmocka_unit_test(test_5xx_final_reason),
        cmocka_unit_test(test_interim_100_and_body_to_close),
        cmocka_unit_test(test_slow_reply_times_out),
        cmocka_unit_test(test_oversized_reply),
        cmocka_unit_test(test_malformed_replies_fail),
        cmocka_unit_test(test_parser_hostile_framing),
        cmocka_unit_test(test_unasked_bytes_on_idle_connection),
        cmocka_unit_test(test_large_body_partial_writes),
        cmocka_unit_test(test_borrowed_transfers_reused),
        cmocka_unit_test(test_reused_connection_dropped_at_request),
        cmocka_unit_test(test_reset_mid_reply),
        cmocka_unit_test(test_server_never_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
