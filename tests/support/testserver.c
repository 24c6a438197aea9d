/*
** testserver.c -- the scriptable local HTTP server of testserver.h, on libmicrohttpd with a
** thread per connection (a delayed reply must not block the others).
**
** Invariants: the script and the record of the last request are guarded by one mutex; the
** request count is atomic. Behaviours are copied when pushed and freed when consumed. A
** delayed reply sleeps in short slices so stopping the server never waits out a long delay.
** This is test support only: it does not try to be a fast or complete HTTP server.
*/
#include "testserver.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <jansson.h>

typedef struct script_entry {
    struct script_entry *next;
    arb_test_behaviour b; /* strings owned */
} script_entry;

typedef struct header_pair {
    char *name;
    char *value;
} header_pair;

struct arb_test_server {
    struct MHD_Daemon *daemon;
    int port;
    char base_url[64];
    pthread_mutex_t lock;
    script_entry *head, *tail;
    arb_test_behaviour fallback; /* strings owned */
    atomic_ulong requests;
    atomic_int stopping;
    char *last_body;
    char *last_path;
    header_pair *last_headers;
    size_t n_last_headers;
};

/* One request in progress. */
typedef struct request_ctx {
    char *body;
    size_t len, cap;
    int failed; /* out of memory while reading the body */
} request_ctx;

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static void behaviour_copy(arb_test_behaviour *dst, const arb_test_behaviour *src)
{
    *dst = *src;
    dst->content = dup_or_null(src->content);
    dst->body = dup_or_null(src->body);
    dst->retry_after = dup_or_null(src->retry_after);
}

static void behaviour_free(arb_test_behaviour *b)
{
    free((char *)b->content);
    free((char *)b->body);
    free((char *)b->retry_after);
    memset(b, 0, sizeof *b);
}

static void sleep_ms(arb_test_server *srv, long ms)
{
    while (ms > 0 && !atomic_load(&srv->stopping)) {
        long slice = ms < 5 ? ms : 5;
        struct timespec ts = {0, slice * 1000000L};
        nanosleep(&ts, NULL);
        ms -= slice;
    }
}

/* The chat.completion JSON for content (malloc'd), see testserver.h for the token counts. */
static char *completion_json(unsigned long n, const char *request, size_t request_len,
                             const char *content)
{
    json_t *req = json_loadb(request, request_len, 0, NULL);
    const char *model = json_string_value(json_object_get(req, "model"));
    long long prompt = (long long)(request_len / 4);
    long long completion = (long long)(strlen(content) / 4 + 1);
    char id[48];
    snprintf(id, sizeof id, "chatcmpl-test-%lu", n);
    json_t *reply = json_pack(
        "{s:s, s:s, s:i, s:s, s:[{s:i, s:{s:s, s:s}, s:s}], s:{s:I, s:I, s:I}}", "id", id,
        "object", "chat.completion", "created", 0, "model", model ? model : "test", "choices",
        "index", 0, "message", "role", "assistant", "content", content, "finish_reason", "stop",
        "usage", "prompt_tokens", (json_int_t)prompt, "completion_tokens",
        (json_int_t)completion, "total_tokens", (json_int_t)(prompt + completion));
    char *text = reply ? json_dumps(reply, JSON_COMPACT) : NULL;
    json_decref(reply);
    json_decref(req);
    return text;
}

static enum MHD_Result queue_text(struct MHD_Connection *conn, unsigned status, char *text,
                                  const char *retry_after, const char *content_type)
{
    if (!text) return MHD_NO;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", content_type);
    if (retry_after) MHD_add_response_header(resp, "Retry-After", retry_after);
    enum MHD_Result rc = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

typedef struct header_collect {
    header_pair *pairs;
    size_t n, cap;
} header_collect;

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    header_collect *c = cls;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        header_pair *p = realloc(c->pairs, cap * sizeof *p);
        if (!p) return MHD_NO;
        c->pairs = p;
        c->cap = cap;
    }
    c->pairs[c->n].name = strdup(key);
    c->pairs[c->n].value = strdup(value ? value : "");
    c->n++;
    return MHD_YES;
}

static void free_headers(header_pair *pairs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(pairs[i].name);
        free(pairs[i].value);
    }
    free(pairs);
}

/* Records the request and takes the behaviour to apply (copied into *b; caller frees). */
static unsigned long take_behaviour(arb_test_server *srv, struct MHD_Connection *conn,
                                    const char *url, const request_ctx *ctx,
                                    arb_test_behaviour *b)
{
    header_collect hc = {NULL, 0, 0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_header, &hc);
    pthread_mutex_lock(&srv->lock);
    free_headers(srv->last_headers, srv->n_last_headers);
    srv->last_headers = hc.pairs;
    srv->n_last_headers = hc.n;
    free(srv->last_body);
    srv->last_body = ctx->body ? strndup(ctx->body, ctx->len) : strdup("");
    free(srv->last_path);
    srv->last_path = strdup(url);
    script_entry *e = srv->head;
    if (e) {
        srv->head = e->next;
        if (!srv->head) srv->tail = NULL;
        *b = e->b; /* ownership moves to the caller */
        free(e);
    } else {
        behaviour_copy(b, &srv->fallback);
    }
    pthread_mutex_unlock(&srv->lock);
    return atomic_fetch_add(&srv->requests, 1) + 1;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    arb_test_server *srv = cls;
    request_ctx *ctx = *con_cls;
    if (!ctx) {
        ctx = calloc(1, sizeof *ctx);
        if (!ctx) return MHD_NO;
        *con_cls = ctx;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        if (!ctx->failed && ctx->len + n + 1 > ctx->cap) {
            size_t cap = ctx->cap ? ctx->cap : 1024;
            while (cap < ctx->len + n + 1) cap *= 2;
            char *p = realloc(ctx->body, cap);
            if (p) {
                ctx->body = p;
                ctx->cap = cap;
            } else {
                ctx->failed = 1;
            }
        }
        if (!ctx->failed) {
            memcpy(ctx->body + ctx->len, upload_data, n);
            ctx->len += n;
            ctx->body[ctx->len] = '\0';
        }
        *upload_data_size = 0;
        return MHD_YES;
    }

    arb_test_behaviour b;
    unsigned long n = take_behaviour(srv, conn, url, ctx, &b);
    const char *body = ctx->body ? ctx->body : "";
    enum MHD_Result rc = MHD_NO;
    switch (b.action) {
    case ARB_TEST_DELAY:
        sleep_ms(srv, b.delay_ms);
        /* fall through */
    case ARB_TEST_REPLY:
        rc = queue_text(conn, 200, completion_json(n, body, ctx->len, b.content ? b.content : "[[A]]"),
                        NULL, "application/json");
        break;
    case ARB_TEST_STATUS:
        rc = queue_text(conn, (unsigned)b.status, strdup(b.body ? b.body : ""), b.retry_after,
                        "application/json");
        break;
    case ARB_TEST_MALFORMED:
        rc = queue_text(conn, 200,
                        strdup(b.body ? b.body : "{\"choices\":[{\"message\":{\"content\":"),
                        NULL, "application/json");
        break;
    case ARB_TEST_DROP:
        rc = MHD_NO; /* MHD closes the connection without a reply */
        break;
    case ARB_TEST_OVERSIZED: {
        char *big = malloc(b.size + 1);
        if (big) {
            memset(big, 'x', b.size);
            big[b.size] = '\0';
        }
        rc = queue_text(conn, 200, big, NULL, "text/plain");
        break;
    }
    case ARB_TEST_BIG_HEADER: {
        char *value = malloc(b.size + 1);
        char *text = completion_json(n, body, ctx->len, "[[A]]");
        struct MHD_Response *resp =
            value && text ? MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE)
                          : NULL;
        if (resp) {
            text = NULL; /* owned by resp */
            memset(value, 'x', b.size);
            value[b.size] = '\0';
            MHD_add_response_header(resp, "Content-Type", "application/json");
            MHD_add_response_header(resp, "X-Big", value);
            rc = MHD_queue_response(conn, 200, resp);
            MHD_destroy_response(resp);
        }
        free(text);
        free(value);
        break;
    }
    case ARB_TEST_CALLBACK: {
        char *content = b.fn ? b.fn(b.ud, body, ctx->len) : NULL;
        if (content)
            rc = queue_text(conn, 200, completion_json(n, body, ctx->len, content), NULL,
                            "application/json");
        else
            rc = queue_text(conn, 500, strdup("callback failed"), NULL, "text/plain");
        free(content);
        break;
    }
    }
    behaviour_free(&b);
    return rc;
}

static void request_done(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    request_ctx *ctx = *con_cls;
    if (!ctx) return;
    free(ctx->body);
    free(ctx);
    *con_cls = NULL;
}

arb_test_server *arb_test_server_start(void)
{
    arb_test_server *srv = calloc(1, sizeof *srv);
    if (!srv) return NULL;
    pthread_mutex_init(&srv->lock, NULL);
    atomic_init(&srv->requests, 0);
    atomic_init(&srv->stopping, 0);
    srv->fallback.action = ARB_TEST_REPLY;
    srv->fallback.content = strdup("[[A]]");
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = 0;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    srv->daemon = MHD_start_daemon(
        MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
        NULL, handle, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_NOTIFY_COMPLETED, request_done, srv, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)512, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)256 * 1024, MHD_OPTION_END);
    if (!srv->daemon) {
        arb_test_server_stop(srv);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? (int)info->port : 0;
    if (srv->port <= 0) {
        arb_test_server_stop(srv);
        return NULL;
    }
    snprintf(srv->base_url, sizeof srv->base_url, "http://127.0.0.1:%d/v1", srv->port);
    return srv;
}

void arb_test_server_stop(arb_test_server *srv)
{
    if (!srv) return;
    atomic_store(&srv->stopping, 1);
    if (srv->daemon) MHD_stop_daemon(srv->daemon);
    for (script_entry *e = srv->head, *next; e; e = next) {
        next = e->next;
        behaviour_free(&e->b);
        free(e);
    }
    behaviour_free(&srv->fallback);
    free_headers(srv->last_headers, srv->n_last_headers);
    free(srv->last_body);
    free(srv->last_path);
    pthread_mutex_destroy(&srv->lock);
    free(srv);
}

int arb_test_server_port(const arb_test_server *srv) { return srv->port; }

const char *arb_test_server_base_url(const arb_test_server *srv) { return srv->base_url; }

void arb_test_server_push(arb_test_server *srv, const arb_test_behaviour *b)
{
    script_entry *e = calloc(1, sizeof *e);
    if (!e) abort(); /* test support: no way to go on meaningfully */
    behaviour_copy(&e->b, b);
    pthread_mutex_lock(&srv->lock);
    if (srv->tail) srv->tail->next = e;
    else srv->head = e;
    srv->tail = e;
    pthread_mutex_unlock(&srv->lock);
}

void arb_test_server_set_default(arb_test_server *srv, const arb_test_behaviour *b)
{
    arb_test_behaviour copy;
    behaviour_copy(&copy, b);
    pthread_mutex_lock(&srv->lock);
    behaviour_free(&srv->fallback);
    srv->fallback = copy;
    pthread_mutex_unlock(&srv->lock);
}

void arb_test_server_push_reply(arb_test_server *srv, const char *content)
{
    arb_test_behaviour b = {.action = ARB_TEST_REPLY, .content = content};
    arb_test_server_push(srv, &b);
}

void arb_test_server_push_status(arb_test_server *srv, int status, const char *retry_after,
                                 const char *body)
{
    arb_test_behaviour b = {
        .action = ARB_TEST_STATUS, .status = status, .retry_after = retry_after, .body = body};
    arb_test_server_push(srv, &b);
}

void arb_test_server_push_delay(arb_test_server *srv, long delay_ms, const char *content)
{
    arb_test_behaviour b = {.action = ARB_TEST_DELAY, .delay_ms = delay_ms, .content = content};
    arb_test_server_push(srv, &b);
}

void arb_test_server_push_malformed(arb_test_server *srv, const char *body)
{
    arb_test_behaviour b = {.action = ARB_TEST_MALFORMED, .body = body};
    arb_test_server_push(srv, &b);
}

void arb_test_server_push_drop(arb_test_server *srv)
{
    arb_test_behaviour b = {.action = ARB_TEST_DROP};
    arb_test_server_push(srv, &b);
}

void arb_test_server_push_oversized(arb_test_server *srv, size_t size)
{
    arb_test_behaviour b = {.action = ARB_TEST_OVERSIZED, .size = size};
    arb_test_server_push(srv, &b);
}

size_t arb_test_server_script_left(arb_test_server *srv)
{
    size_t n = 0;
    pthread_mutex_lock(&srv->lock);
    for (script_entry *e = srv->head; e; e = e->next) n++;
    pthread_mutex_unlock(&srv->lock);
    return n;
}

unsigned long arb_test_server_requests(const arb_test_server *srv)
{
    return atomic_load(&((arb_test_server *)srv)->requests);
}

char *arb_test_server_last_body(arb_test_server *srv)
{
    pthread_mutex_lock(&srv->lock);
    char *s = dup_or_null(srv->last_body);
    pthread_mutex_unlock(&srv->lock);
    return s;
}

char *arb_test_server_last_header(arb_test_server *srv, const char *name)
{
    char *s = NULL;
    pthread_mutex_lock(&srv->lock);
    for (size_t i = 0; i < srv->n_last_headers; i++) {
        if (srv->last_headers[i].name && strcasecmp(srv->last_headers[i].name, name) == 0) {
            s = dup_or_null(srv->last_headers[i].value);
            break;
        }
    }
    pthread_mutex_unlock(&srv->lock);
    return s;
}

char *arb_test_server_last_path(arb_test_server *srv)
{
    pthread_mutex_lock(&srv->lock);
    char *s = dup_or_null(srv->last_path);
    pthread_mutex_unlock(&srv->lock);
    return s;
}
