/*
** testserver.h -- a scriptable OpenAI-compatible HTTP server on 127.0.0.1 for tests.
**
** Every request (any method, any path) consumes the next behaviour of the script; when the
** script is empty the default behaviour applies (initially: reply 200 with content "[[A]]").
** The server runs one thread per connection, so a delayed reply does not hold up the others.
** It counts requests and keeps the body and headers of the last one.
**
** A 200 reply with content is a chat.completion object:
**   {"id":"chatcmpl-test-<n>","object":"chat.completion","created":0,"model":<request model
**    or "test">,"choices":[{"index":0,"message":{"role":"assistant","content":<content>},
**    "finish_reason":"stop"}],"usage":{"prompt_tokens":P,"completion_tokens":C,
**    "total_tokens":P+C}}
** with P = request body bytes / 4 and C = content bytes / 4 + 1, so tests can check tokens.
**
** Typical use:
**   arb_test_server *srv = arb_test_server_start();
**   arb_test_server_push_status(srv, 503, "1", "busy");   // first request: 503, Retry-After: 1
**   arb_test_server_push_reply(srv, "[[B]]");             // second: 200 with "[[B]]"
**   ... point the client at arb_test_server_base_url(srv) ...
**   assert_int_equal(arb_test_server_requests(srv), 2);
**   arb_test_server_stop(srv);
*/
#ifndef ARB_TESTSERVER_H
#define ARB_TESTSERVER_H

#include <stddef.h>

typedef enum arb_test_action {
    ARB_TEST_REPLY,     /* 200 with a chat.completion holding `content` */
    ARB_TEST_STATUS,    /* `status` with `body` (may be NULL) and Retry-After (if not NULL) */
    ARB_TEST_DELAY,     /* sleep `delay_ms`, then as ARB_TEST_REPLY */
    ARB_TEST_MALFORMED, /* 200 with `body` as is (default: a truncated JSON object) */
    ARB_TEST_DROP,      /* close the connection without any answer */
    ARB_TEST_OVERSIZED, /* 200 with a body of `size` bytes ('x' repeated) */
    ARB_TEST_CALLBACK,  /* 200 with the content returned by `fn` (see below) */
    ARB_TEST_BIG_HEADER /* 200 with content "[[A]]" and a header line X-Big of `size` bytes
                           (at most 200000: the connection's memory holds the headers) */
} arb_test_action;

/* Returns the reply content for a request body (malloc'd; the server frees it), or NULL to
** answer 500 "callback failed". Called from server threads, possibly concurrently. */
typedef char *(*arb_test_content_fn)(void *ud, const char *request_body, size_t len);

typedef struct arb_test_behaviour {
    arb_test_action action;
    int status;              /* ARB_TEST_STATUS */
    const char *content;     /* ARB_TEST_REPLY, ARB_TEST_DELAY (NULL = "[[A]]") */
    const char *body;        /* ARB_TEST_STATUS, ARB_TEST_MALFORMED */
    const char *retry_after; /* ARB_TEST_STATUS: Retry-After value, NULL = no header */
    long delay_ms;           /* ARB_TEST_DELAY */
    size_t size;             /* ARB_TEST_OVERSIZED, ARB_TEST_BIG_HEADER */
    arb_test_content_fn fn;  /* ARB_TEST_CALLBACK */
    void *ud;                /* ARB_TEST_CALLBACK */
} arb_test_behaviour;

typedef struct arb_test_server arb_test_server;

/* Starts the server on 127.0.0.1 on a free port. Returns NULL on failure. */
arb_test_server *arb_test_server_start(void);
/* Stops the server (waits for its threads) and frees it. Accepts NULL. */
void arb_test_server_stop(arb_test_server *srv);
int arb_test_server_port(const arb_test_server *srv);
/* "http://127.0.0.1:<port>/v1" (owned by the server). */
const char *arb_test_server_base_url(const arb_test_server *srv);

/* Appends a behaviour to the script (strings are copied). */
void arb_test_server_push(arb_test_server *srv, const arb_test_behaviour *b);
/* Sets the behaviour used when the script is empty (strings are copied). */
void arb_test_server_set_default(arb_test_server *srv, const arb_test_behaviour *b);
/* Shorthands for arb_test_server_push. */
void arb_test_server_push_reply(arb_test_server *srv, const char *content);
void arb_test_server_push_status(arb_test_server *srv, int status, const char *retry_after,
                                 const char *body);
void arb_test_server_push_delay(arb_test_server *srv, long delay_ms, const char *content);
void arb_test_server_push_malformed(arb_test_server *srv, const char *body);
void arb_test_server_push_drop(arb_test_server *srv);
void arb_test_server_push_oversized(arb_test_server *srv, size_t size);
/* Number of behaviours still in the script. */
size_t arb_test_server_script_left(arb_test_server *srv);

/* Requests received so far (counted when their body is complete). */
unsigned long arb_test_server_requests(const arb_test_server *srv);
/* Body of the last complete request, or NULL when none yet (caller frees). */
char *arb_test_server_last_body(arb_test_server *srv);
/* Value of header `name` (case-insensitive) in the last complete request, or NULL when it
** was absent (caller frees). */
char *arb_test_server_last_header(arb_test_server *srv, const char *name);
/* Path of the last complete request, e.g. "/v1/chat/completions" (caller frees), or NULL. */
char *arb_test_server_last_path(arb_test_server *srv);

#endif
