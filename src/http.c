/*
** http.c -- many POST transfers in flight, with retries, exponential backoff with jitter,
** Retry-After, a reply size cap and an adaptive (AIMD) concurrency limit, over two transports:
** plain http:// endpoints over arbiter's own keep-alive HTTP/1.1 sockets and epoll (the wire
** format is http_plain.c's), everything else (https, proxies from the environment,
** ARB_TRANSPORT_CURL or ARBITER_TRANSPORT=curl) over libcurl's multi interface. An attempt
** ends on either the same way: a CURLcode (the plain transport maps its failures to the code
** libcurl gives for the same failure) and a status go through attempt_done, so retries, limits
** and reasons cannot differ between them. When both run, curl_multi_poll waits on libcurl's
** sockets and the epoll descriptor together.
**
** Plain connections: an attempt takes an idle connection of its endpoint (a stack) or opens
** one (non-blocking connect, TCP_NODELAY, each resolved address in turn); the request head and
** body go out in one sendmsg; a reply that ends cleanly on a keep-alive connection returns it
** to the stack. A connection that becomes readable while idle was closed by the server (or
** spoke out of turn) and is closed at once, and one is looked at (a peek) before reuse too, so
** bytes a server sent unasked are never read as the next request's reply; a reused
** connection that breaks before any reply byte is replaced and the request resent as the same
** attempt (libcurl does the same). Timeouts are checked when the
** earliest deadline of the running plain attempts passes (a scan of the slots).
**
** Every wait before a retry is capped by params.max_retry_wait_ms, whatever Retry-After says.
**
** Shape: a submitted transfer waits in a FIFO (ready), runs on one of `jobs` slots (a slot
** owns a reusable easy handle and reply buffer, so connections and buffers are kept across
** requests), and after a retryable failure waits in a min-heap keyed by its due time. Every
** transfer is in exactly one of these three places until it is reported through the done
** callback, once, and freed (one whose body is borrowed is kept, for the next submission). No step scans a whole queue: starting work pops the FIFO,
** timers pop the heap.
**
** Endpoints and pools: every transfer goes to a pool, the interchangeable endpoints (replicas)
** of one judge; arb__http_submit's single URL is a pool of one. Each attempt, retries
** included, goes to the pool's endpoint with the fewest attempts running (least outstanding
** requests; ties to the one sent fewer), among those that are not paused and run fewer than
** their limit; a retry goes elsewhere than the endpoint it just failed on when another is
** free. Each endpoint has its own adaptive (AIMD) limit, at most max_in_flight (jobs
** when 0): a 429 halves that endpoint's limit (once per ARB__AIMD_CUT_GAP_MS) and, in a pool
** of two or more, pauses that endpoint until the attempt's retry is due, so a throttled
** replica slows down alone while the others take its share. In a
** pool of two or more, ARB__ENDPOINT_FAILS failures in a row (no connection, a dropped
** connection, a timeout, 5xx) take the endpoint out for ARB__ENDPOINT_COOLDOWN_MS (capped by
** max_retry_wait_ms) and its retries go to the others; a pool of one keeps the plain retry
** schedule (there is nowhere else to go). A transfer whose pool has no endpoint free waits:
** behind the pool's running attempts when some endpoint is merely full (it starts when one
** ends), else in the timer heap until the first paused endpoint comes back.
**
** Invariants: at most jobs transfers run, at most an endpoint's limit on each endpoint; the
** Authorization header is only handed to curl, never printed (verbose output is never
** enabled) and wiped on destroy.
** This module knows nothing of JSON or judges: judge.c builds bodies and reads replies.
*/
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#define ARB__AIMD_CUT_GAP_MS 500.0        /* 429s within this window halve the limit once */
#define ARB__ERROR_BODY_CHARS 200         /* reply text quoted in an error message */
/* An endpoint of a pool of two or more that fails this many attempts in a row is taken out
** for the cool-down: three rules out one unlucky request while sending at most a few more
** requests into a dead replica (README "Several endpoints per judge"). */
#define ARB__ENDPOINT_FAILS 3
#define ARB__ENDPOINT_COOLDOWN_MS 30000.0 /* and never longer than max_retry_wait_ms */

typedef struct arb__xfer arb__xfer;
typedef struct arb__headers arb__headers;
typedef struct arb__slot arb__slot;

/* A keep-alive connection of the plain transport: owned by a slot during an attempt, else
** idle on its endpoint's stack. An idle connection that becomes readable (the server closed
** it, or sent what nobody asked for) is closed at once and left on the stack as dead (fd -1). */
typedef struct arb__pconn {
    int fd;
    arb__slot *slot;            /* NULL when idle */
    int connecting;             /* connect() in progress */
    int addr;                   /* index in the target's addresses being tried */
    int want_out;               /* EPOLLOUT is in the interest set */
    int tried;                  /* addresses that failed before this one */
    uint64_t drained_pass;      /* h->pass in which its last reply was read to the end of what
                                   the socket held (0: not known to be empty) */
} arb__pconn;

/* One endpoint of a pool: its URL and its own load, limit and health. */
typedef struct arb__endpoint {
    char *url;                  /* full chat-completions URL (owned) */
    int running;                /* attempts in flight on it */
    int limit;                  /* adaptive limit, 1..cap */
    int cap;                    /* max_in_flight, or jobs */
    int success_streak;         /* successes since its limit last changed */
    int failures_in_row;        /* failed attempts since its last reply (not 429) */
    double last_cut_ms;
    double paused_until_ms;     /* 429 back-off or cool-down: no attempt starts before */
    arb__http_endpoint_stats stats;
    arb__plain_target *plain;   /* set when the plain transport takes this endpoint */
    arb__pconn **idle_conns;    /* keep-alive connections free for the next attempt */
    int n_idle_conns;
} arb__endpoint;

/* Interchangeable endpoints, and the transfers waiting for a free one among them. */
typedef struct arb__pool {
    arb__endpoint *ep;
    size_t n;
    int max_in_flight;          /* as given (0: jobs) */
    arb__xfer *wait_head, *wait_tail; /* waiting for an attempt on the pool to end */
} arb__pool;

/* The header list shared by every transfer with the same Authorization line (normally one
** list for the whole run), so submitting allocates no curl_slist. */
struct arb__headers {
    arb__headers *next;
    char *auth;                 /* NULL for the list without Authorization */
    struct curl_slist *list;
    int plain_ok;               /* auth holds no CR or LF, so it can be written as one line */
};

/* One submitted request; its body lives in the same allocation, after the struct, or is the
** submitter's (arb__http_submit_pool_borrowed). */
struct arb__xfer {
    arb__xfer *next;            /* FIFO link */
    uint64_t tag;
    int pool;                   /* index into h->pools */
    int endpoint;               /* endpoint of the running or last attempt, -1 before */
    const char *body;
    size_t body_len;
    struct curl_slist *headers; /* borrowed from h->header_cache */
    const arb__headers *hdr;    /* the same entry, for the plain transport */
    int attempts;               /* attempts started so far */
    int borrowed;               /* body is the submitter's: x is kept for the next such one */
    double due_ms;              /* when waiting to retry */
    char data[];
};

struct arb__slot {
    CURL *easy;
    int plain;                  /* the running attempt uses the plain transport */
    arb__pconn *conn;           /* its connection */
    int reused;                 /* conn carried an earlier request */
    arb__h1 parse;
    arb__buf req_head;          /* head of the request being sent */
    size_t sent;                /* bytes of head + body written */
    double deadline_ms;         /* total timeout of the attempt (1e300: none) */
    double connect_deadline_ms;
    arb__xfer *xfer;            /* running transfer, NULL when idle */
    arb__buf reply;
    double started_ms;
    double retry_after_ms;      /* from the Retry-After header of this attempt, or -1 */
    int too_big;                /* the write callback refused the reply */
    int headers_done;           /* the blank line ending the reply's headers arrived */
    long max_reply;
    char errbuf[CURL_ERROR_SIZE];
};

struct arb__http {
    arb_client_params params;
    CURLM *multi;
    arb__slot *slots;           /* params.jobs of them */
    int *idle;                  /* stack of idle slot indices */
    int n_idle;
    int running;                /* slots in use */
    arb__xfer *ready_head, *ready_tail;
    arb__xfer **timers;         /* min-heap on due_ms */
    size_t n_timers, cap_timers;
    size_t pending;             /* ready + running + timers */
    arb__headers *header_cache;
    arb__pool *pools;
    size_t n_pools, cap_pools;
    arb__http_stats stats;
    uint64_t rng;               /* xorshift64* state for the jitter */
    arb__buf error;             /* message handed to the done callback */
    int curl_running;           /* attempts running on libcurl */
    int plain_running;          /* attempts running on the plain transport */
    int plain_wanted;           /* arb__plain_transport_wanted() at creation */
    int epfd;                   /* epoll set of the plain transport's sockets, -1: none */
    double next_deadline_ms;    /* no plain attempt times out before this */
    char *rbuf;                 /* receive buffer shared by the plain sockets */
    uint64_t pass;              /* counts the step calls and the waits inside them */
    arb__http_io_counts io;     /* system calls of the plain transport (tests count them) */
    arb__xfer *spare;           /* finished transfers of borrowed bodies, for the next ones */
};

#define ARB__RBUF_SIZE 65536

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_code = CURLE_OK;

static void curl_init_once(void) { curl_init_code = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* ---- small helpers ------------------------------------------------------------------------ */

static uint64_t rng_next(arb__http *h)
{
    uint64_t x = h->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    h->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Wipes a secret before its memory is released (volatile so it is not optimised away). */
static void wipe_free(char *s)
{
    if (!s) return;
    volatile char *p = s;
    while (*p) *p++ = 0;
    free(s);
}

static void fifo_push_back(arb__xfer **head, arb__xfer **tail, arb__xfer *x)
{
    x->next = NULL;
    if (*tail) (*tail)->next = x;
    else *head = x;
    *tail = x;
}

static void ready_push_back(arb__http *h, arb__xfer *x)
{
    fifo_push_back(&h->ready_head, &h->ready_tail, x);
}

/* Retries go to the front so old work finishes before new work starts. */
static void ready_push_front(arb__http *h, arb__xfer *x)
{
    x->next = h->ready_head;
    h->ready_head = x;
    if (!h->ready_tail) h->ready_tail = x;
}

static arb__xfer *ready_pop(arb__http *h)
{
    arb__xfer *x = h->ready_head;
    if (!x) return NULL;
    h->ready_head = x->next;
    if (!h->ready_head) h->ready_tail = NULL;
    x->next = NULL;
    return x;
}

static int timer_push(arb__http *h, arb__xfer *x)
{
    if (h->n_timers == h->cap_timers) {
        size_t cap = h->cap_timers ? 2 * h->cap_timers : 64;
        arb__xfer **t = realloc(h->timers, cap * sizeof *t);
        if (!t) return -1;
        h->timers = t;
        h->cap_timers = cap;
    }
    size_t i = h->n_timers++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (h->timers[parent]->due_ms <= x->due_ms) break;
        h->timers[i] = h->timers[parent];
        i = parent;
    }
    h->timers[i] = x;
    return 0;
}

static arb__xfer *timer_pop(arb__http *h)
{
    arb__xfer *top = h->timers[0];
    arb__xfer *last = h->timers[--h->n_timers];
    size_t i = 0, n = h->n_timers;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h->timers[c + 1]->due_ms < h->timers[c]->due_ms) c++;
        if (last->due_ms <= h->timers[c]->due_ms) break;
        h->timers[i] = h->timers[c];
        i = c;
    }
    if (n) h->timers[i] = last;
    return top;
}

/* ---- curl callbacks ------------------------------------------------------------------------ */

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    arb__slot *slot = ud;
    size_t n = size * nmemb;
    if (slot->reply.len + n > slot->reply.max || arb__buf_append(&slot->reply, ptr, n) != 0) {
        /* Over the cap (or no memory): returning short aborts with CURLE_WRITE_ERROR. */
        slot->too_big = slot->reply.len + n > slot->reply.max;
        return 0;
    }
    return n;
}

/* Parses Retry-After: delta-seconds or an HTTP-date; the value is a lower bound on the next
** delay. Other headers are skipped after one byte comparison. */
static size_t on_header(char *buffer, size_t size, size_t nitems, void *ud)
{
    arb__slot *slot = ud;
    size_t n = size * nitems;
    static const char name[] = "retry-after:";
    const size_t nl = sizeof name - 1;
    if (n <= nl || (buffer[0] | 0x20) != 'r') {
        if (n >= 5 && memcmp(buffer, "HTTP/", 5) == 0) { /* a new reply (after 1xx) */
            slot->retry_after_ms = -1;
            slot->headers_done = 0;
        } else if (n <= 2 && (buffer[0] == '\r' || buffer[0] == '\n')) {
            slot->headers_done = 1;
        }
        return n;
    }
    if (strncasecmp(buffer, name, nl) != 0) return n;
    double ms = arb__retry_after_ms(buffer + nl, n - nl);
    if (ms >= 0) slot->retry_after_ms = ms; /* capped by max_retry_wait_ms when used */
    return n;
}

/* ---- setup ----------------------------------------------------------------------------------- */

static int slot_init(arb__http *h, arb__slot *slot)
{
    const arb_client_params *p = &h->params;
    CURL *e = curl_easy_init();
    if (!e) return -1;
    slot->easy = e;
    curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)slot);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, p->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, p->total_timeout_ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)slot);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, (void *)slot);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, slot->errbuf);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "arbiter/" ARB_VERSION);
    /* Judges are reached directly; a redirect of a POST is a configuration error to report. */
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_VERBOSE, 0L);
    return 0;
}

/* Returns a new client (caller destroys), or NULL when out of memory or params are invalid
** (jobs < 1, negative timeouts, retries or waits). */
arb__http *arb__http_create(const arb_client_params *params)
{
    if (!params || params->jobs < 1 || params->max_retries < 0 ||
        params->connect_timeout_ms < 0 || params->total_timeout_ms < 0 ||
        params->backoff_base_ms < 0 || params->backoff_max_ms < 0 ||
        params->max_retry_wait_ms < 0)
        return NULL;
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_code != CURLE_OK) return NULL;
    arb__http *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->params = *params;
    h->epfd = -1;
    if (h->params.max_reply_bytes == 0) h->params.max_reply_bytes = (size_t)16 << 20;
    int jobs = h->params.jobs;
    h->slots = calloc((size_t)jobs, sizeof *h->slots);
    h->idle = calloc((size_t)jobs, sizeof *h->idle);
    h->multi = curl_multi_init();
    if (!h->slots || !h->idle || !h->multi) goto fail;
    for (int i = 0; i < jobs; i++) {
        h->idle[i] = jobs - 1 - i; /* slot 0 is used first */
        arb__buf_init(&h->slots[i].reply, h->params.max_reply_bytes);
        arb__buf_init(&h->slots[i].req_head, 0);
        arb__buf_init(&h->slots[i].parse.head, 0);
    }
    h->n_idle = jobs;
    curl_multi_setopt(h->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)jobs);
    curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)jobs);
    curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, (long)jobs);
    h->epfd = -1;
    h->next_deadline_ms = 1e300;
    h->plain_wanted = arb__plain_transport_wanted(h->params.transport);
    h->rng = (uint64_t)(uintptr_t)h ^ ((uint64_t)time(NULL) << 20) ^ 0x9E3779B97F4A7C15ULL;
    if (!h->rng) h->rng = 1;
    arb__buf_init(&h->error, 4096);
    return h;
fail:
    arb__http_destroy(h);
    return NULL;
}

/* Frees everything, including transfers never reported (their callbacks are not called). */
void arb__http_destroy(arb__http *h)
{
    if (!h) return;
    if (h->slots) {
        for (int i = 0; i < h->params.jobs; i++) {
            arb__slot *slot = &h->slots[i];
            if (slot->xfer) {
                if (!slot->plain) curl_multi_remove_handle(h->multi, slot->easy);
                free(slot->xfer);
            }
            if (slot->conn) {
                if (slot->conn->fd >= 0) close(slot->conn->fd);
                free(slot->conn);
            }
            if (slot->easy) curl_easy_cleanup(slot->easy);
            arb__buf_free(&slot->reply);
            arb__buf_free(&slot->req_head);
            arb__buf_free(&slot->parse.head);
        }
    }
    if (h->multi) curl_multi_cleanup(h->multi); /* after the easy handles: closes connections */
    for (arb__xfer *x = h->ready_head, *next; x; x = next) {
        next = x->next;
        free(x);
    }
    for (size_t i = 0; i < h->n_timers; i++) free(h->timers[i]);
    for (arb__xfer *x = h->spare, *next; x; x = next) {
        next = x->next;
        free(x);
    }
    for (size_t i = 0; i < h->n_pools; i++) {
        arb__pool *pool = &h->pools[i];
        for (arb__xfer *x = pool->wait_head, *next; x; x = next) {
            next = x->next;
            free(x);
        }
        for (size_t k = 0; k < pool->n; k++) {
            arb__endpoint *e = &pool->ep[k];
            free(e->url);
            for (int c = 0; c < e->n_idle_conns; c++) {
                if (e->idle_conns[c]->fd >= 0) close(e->idle_conns[c]->fd);
                free(e->idle_conns[c]);
            }
            free(e->idle_conns);
            arb__plain_target_destroy(e->plain);
        }
        free(pool->ep);
    }
    free(h->pools);
    if (h->epfd >= 0) close(h->epfd);
    free(h->rbuf);
    for (arb__headers *c = h->header_cache, *next; c; c = next) {
        next = c->next;
        curl_slist_free_all(c->list); /* curl copies header strings: wipe ours */
        wipe_free(c->auth);
        free(c);
    }
    arb__buf_free(&h->error);
    free(h->timers);
    free(h->slots);
    free(h->idle);
    free(h);
}

/* The shared header entry for auth_header (NULL = none), created on first use. */
static arb__headers *headers_for(arb__http *h, const char *auth_header)
{
    for (arb__headers *c = h->header_cache; c; c = c->next) {
        if (!c->auth && !auth_header) return c;
        if (c->auth && auth_header && strcmp(c->auth, auth_header) == 0) return c;
    }
    arb__headers *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    struct curl_slist *l = NULL, *t;
    /* "Expect:" removes the 100-continue round trip curl adds to large POSTs. */
    const char *fixed[] = {"Content-Type: application/json", "Accept: application/json",
                           "Expect:"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        if (!(t = curl_slist_append(l, fixed[i]))) goto fail;
        l = t;
    }
    if (auth_header) {
        if (!(c->auth = arb__strdup(auth_header))) goto fail;
        if (!(t = curl_slist_append(l, auth_header))) goto fail;
        l = t;
    }
    c->list = l;
    c->plain_ok = !auth_header || !strpbrk(auth_header, "\r\n");
    c->next = h->header_cache;
    h->header_cache = c;
    return c;
fail:
    curl_slist_free_all(l);
    wipe_free(c->auth);
    free(c);
    return NULL;
}

/* See internal.h. */
int arb__http_add_pool(arb__http *h, const char *const *urls, size_t n, int max_in_flight)
{
    if (!n || max_in_flight < 0 || h->n_pools >= INT_MAX ||
        arb__grow(&h->pools, &h->cap_pools, h->n_pools + 1, sizeof *h->pools))
        return -1;
    arb__pool *pool = &h->pools[h->n_pools];
    memset(pool, 0, sizeof *pool);
    if (!(pool->ep = calloc(n, sizeof *pool->ep))) return -1;
    pool->max_in_flight = max_in_flight;
    int cap = max_in_flight > 0 && max_in_flight < h->params.jobs ? max_in_flight : h->params.jobs;
    for (size_t i = 0; i < n; i++) {
        arb__endpoint *e = &pool->ep[i];
        e->cap = e->limit = cap;
        e->last_cut_ms = -1e18;
        if (!(e->url = arb__strdup(urls[i])) ||
            (h->plain_wanted && (e->plain = arb__plain_target_create(urls[i])) &&
             !(e->idle_conns = calloc((size_t)h->params.jobs, sizeof *e->idle_conns)))) {
            for (size_t k = 0; k <= i; k++) {
                free(pool->ep[k].url);
                free(pool->ep[k].idle_conns);
                arb__plain_target_destroy(pool->ep[k].plain);
            }
            free(pool->ep);
            return -1;
        }
    }
    pool->n = n;
    return (int)h->n_pools++;
}

/* The pool of one for url (no limit of its own), created on first use. -1: out of memory. */
static int single_pool(arb__http *h, const char *url)
{
    for (size_t i = h->n_pools; i-- > 0;)
        if (h->pools[i].n == 1 && !h->pools[i].max_in_flight && !strcmp(h->pools[i].ep[0].url, url))
            return (int)i;
    return arb__http_add_pool(h, &url, 1, 0);
}

/* Queues the POST (see internal.h). The body is copied into one allocation with the transfer.
** Returns 0, or -1 when out of memory. */
static int submit(arb__http *h, uint64_t tag, int pool, const char *auth_header, const char *body,
                  size_t body_len, int copy);

int arb__http_submit(arb__http *h, uint64_t tag, const char *url, const char *auth_header,
                     const char *body, size_t body_len)
{
    int pool = single_pool(h, url);
    return pool < 0 ? -1 : arb__http_submit_pool(h, tag, pool, auth_header, body, body_len);
}

/* See internal.h. */
int arb__http_submit_pool(arb__http *h, uint64_t tag, int pool, const char *auth_header,
                          const char *body, size_t body_len)
{
    return submit(h, tag, pool, auth_header, body, body_len, 1);
}

/* See internal.h. */
int arb__http_submit_pool_borrowed(arb__http *h, uint64_t tag, int pool, const char *auth_header,
                                   const char *body, size_t body_len)
{
    return submit(h, tag, pool, auth_header, body, body_len, 0);
}

/* Queues a transfer of body, copied into the transfer's allocation when copy is 1, else
** borrowed (it then must outlive the transfer). Returns 0, or -1. */
static int submit(arb__http *h, uint64_t tag, int pool, const char *auth_header, const char *body,
                  size_t body_len, int copy)
{
    if (pool < 0 || (size_t)pool >= h->n_pools) return -1;
    if (body_len > SIZE_MAX - sizeof(arb__xfer) - 1) return -1;
    if (!copy && body[body_len] != '\0') return -1; /* libcurl's POSTFIELDS reads a C string */
    arb__headers *hdr = headers_for(h, auth_header);
    if (!hdr) return -1;
    /* a borrowed body's transfer is the struct alone: the one a finished call left is reused */
    arb__xfer *x = !copy && h->spare ? h->spare : NULL;
    if (x) h->spare = x->next;
    else if (!(x = malloc(sizeof *x + (copy ? body_len + 1 : 0)))) return -1;
    else h->io.xfer_allocs++;
    const char *b = body;
    if (copy) {
        if (body_len) memcpy(x->data, body, body_len);
        x->data[body_len] = '\0';
        b = x->data;
    }
    x->next = NULL;
    x->tag = tag;
    x->pool = pool;
    x->endpoint = -1;
    x->body = b;
    x->body_len = body_len;
    x->headers = hdr->list;
    x->hdr = hdr;
    x->attempts = 0;
    x->borrowed = !copy;
    x->due_ms = 0;
    ready_push_back(h, x);
    h->pending++;
    return 0;
}

/* ---- running ---------------------------------------------------------------------------- */

/* Reports x as finished for good and frees it. slot (may be NULL) holds its last reply. */
static void finish(arb__http *h, arb__xfer *x, arb__slot *slot, int ok, long status,
                   int curl_code, double latency_ms, arb__http_done_fn done, void *ud)
{
    arb__http_result res;
    res.status = status;
    res.curl_code = curl_code;
    res.body = slot && slot->reply.data ? slot->reply.data : (char *)"";
    res.body_len = slot ? slot->reply.len : 0;
    res.latency_ms = latency_ms;
    res.attempts = x->attempts;
    res.endpoint = x->endpoint;
    res.ok = ok;
    res.error = ok ? NULL : (h->error.data ? h->error.data : "transfer failed (out of memory)");
    h->pending--;
    if (done) done(ud, x->tag, &res);
    if (x->borrowed) {
        x->next = h->spare;
        h->spare = x;
    } else {
        free(x);
    }
}

/* Appends up to ARB__ERROR_BODY_CHARS characters of the reply, control characters as spaces,
** cut on a UTF-8 boundary, so the reason stays one readable line. */
static void append_body_excerpt(arb__buf *e, const arb__buf *reply)
{
    if (!reply->data || reply->len == 0) return;
    size_t n = reply->len, chars = 0, i = 0;
    const unsigned char *p = (const unsigned char *)reply->data;
    while (i < n && chars < ARB__ERROR_BODY_CHARS) {
        i++;
        while (i < n && (p[i] & 0xC0) == 0x80) i++;
        chars++;
    }
    size_t start = e->len;
    if (arb__buf_puts(e, ": ") || arb__buf_append(e, reply->data, i)) return;
    for (size_t k = start + 2; k < e->len; k++)
        if ((unsigned char)e->data[k] < 0x20 || e->data[k] == 0x7f) e->data[k] = ' ';
    if (i < n) arb__buf_puts(e, "...");
}

/* libcurl 7.x reports a header line over CURL_MAX_HTTP_HEADER as CURLE_OUT_OF_MEMORY with no
** message (8.6+ as CURLE_TOO_LARGE): while the headers are still arriving that is the size
** limit, not memory. */
static int header_too_large(CURLcode code, const arb__slot *slot)
{
#if LIBCURL_VERSION_NUM >= 0x080600
    if (code == CURLE_TOO_LARGE) return 1;
#endif
    return code == CURLE_OUT_OF_MEMORY && !slot->headers_done;
}

static int retryable_status(long status)
{
    return status == 408 || status == 425 || status == 429 || status == 500 || status == 502 ||
           status == 503 || status == 504;
}

static int retryable_curl(CURLcode code)
{
    switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_COULDNT_CONNECT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return 1;
    default:
        return 0;
    }
}

/* Delay before the retry that follows attempt number `attempts`: exponential backoff with
** jitter in [d/2, d], d = min(backoff_max, base * 2^(attempts-1)), raised to Retry-After, and
** never more than max_retry_wait_ms. The jitter spreads clients that failed together so they
** do not return together. The cap is what keeps a run finite: a server answering "Retry-After:
** 3600" would otherwise hold every call for an hour per retry (arbiter has no run deadline,
** --timeout bounds one attempt, not the waits between attempts). */
static double retry_delay_ms(arb__http *h, int attempts, double retry_after_ms)
{
    double d = (double)h->params.backoff_base_ms * ldexp(1.0, attempts - 1 < 60 ? attempts - 1 : 60);
    if (d > (double)h->params.backoff_max_ms) d = (double)h->params.backoff_max_ms;
    double u = (double)(rng_next(h) >> 11) / 9007199254740992.0; /* [0, 1) */
    d = d / 2 + u * (d / 2);
    if (retry_after_ms > d) d = retry_after_ms;
    if (d > (double)h->params.max_retry_wait_ms) d = (double)h->params.max_retry_wait_ms;
    return d;
}

/* AIMD (additive increase, multiplicative decrease) on the endpoint's in-flight limit. */
static void note_throttled(arb__http *h, arb__endpoint *e, double now)
{
    h->stats.throttled++;
    e->stats.throttled++;
    e->success_streak = 0;
    if (now - e->last_cut_ms < ARB__AIMD_CUT_GAP_MS) return;
    e->last_cut_ms = now;
    int limit = e->limit / 2;
    e->limit = limit < 1 ? 1 : limit;
}

static void note_success(arb__endpoint *e)
{
    if (e->limit >= e->cap) return;
    if (++e->success_streak >= e->limit) {
        e->limit++;
        e->success_streak = 0;
    }
}

/* An attempt on e failed without a reply or with 5xx: in a pool of two or more, the
** ARB__ENDPOINT_FAILS-th in a row takes e out for the cool-down. */
static void note_failure(arb__http *h, const arb__pool *pool, arb__endpoint *e, double now)
{
    e->stats.failed++;
    e->success_streak = 0;
    if (pool->n < 2 || ++e->failures_in_row < ARB__ENDPOINT_FAILS) return;
    double cooldown = ARB__ENDPOINT_COOLDOWN_MS;
    if (cooldown > (double)h->params.max_retry_wait_ms) cooldown = (double)h->params.max_retry_wait_ms;
    e->paused_until_ms = now + cooldown;
    e->failures_in_row = 0;
    e->stats.cooldowns++;
}

/* Transfers waiting for an attempt on pool to end go back to the front of the FIFO. */
static void wake_pool(arb__http *h, arb__pool *pool)
{
    if (!pool->wait_head) return;
    pool->wait_tail->next = h->ready_head;
    h->ready_head = pool->wait_head;
    if (!h->ready_tail) h->ready_tail = pool->wait_tail;
    pool->wait_head = pool->wait_tail = NULL;
}

/* Handles the end of one attempt on slot: success, retry, or final failure. Returns 1 when the
** transfer finished for good. */
static int attempt_done(arb__http *h, arb__slot *slot, CURLcode code, long status,
                        arb__http_done_fn done, void *ud)
{
    arb__xfer *x = slot->xfer;
    double now = arb__now_ms();
    double latency = now - slot->started_ms;
    slot->xfer = NULL;
    h->running--;
    arb__pool *pool = &h->pools[x->pool];
    arb__endpoint *e = &pool->ep[x->endpoint];
    e->running--;
    wake_pool(h, pool);

    int ok = code == CURLE_OK && status >= 200 && status < 300;
    int retry = 0, throttled = 0;
    if (!ok && !slot->too_big) {
        if (code == CURLE_OK) retry = retryable_status(status);
        else retry = retryable_curl(code);
        throttled = code == CURLE_OK && status == 429;
        if (throttled) note_throttled(h, e, now);
        else if (code != CURLE_OK || status >= 500) note_failure(h, pool, e, now);
        else e->success_streak = 0;
    }
    if (ok) {
        e->stats.ok++;
        e->failures_in_row = 0;
        note_success(e);
    } else if (code == CURLE_OK && status > 0 && status < 500 && !throttled) {
        e->failures_in_row = 0; /* it answered: a bad request is not a dead endpoint */
    }

    if (retry && x->attempts <= h->params.max_retries) {
        x->due_ms = now + retry_delay_ms(h, x->attempts, slot->retry_after_ms);
        /* The server asked this replica to slow down: nothing new starts on it meanwhile (its
        ** calls go to the others). A lone endpoint keeps going at its halved limit. */
        if (throttled && pool->n > 1 && x->due_ms > e->paused_until_ms)
            e->paused_until_ms = x->due_ms;
        if (timer_push(h, x) == 0) {
            h->stats.retries++;
            arb__buf_reset(&slot->reply);
            h->idle[h->n_idle++] = (int)(slot - h->slots);
            return 0;
        }
        /* No memory for the timer: fall through and report the failure. */
    }

    arb__buf *msg = &h->error;
    arb__buf_reset(msg);
    const char *plural = x->attempts == 1 ? "" : "s";
    if (ok) {
        /* no message */
    } else if (slot->too_big) {
        arb__buf_printf(msg, "reply larger than %zu bytes", h->params.max_reply_bytes);
    } else if (code == CURLE_OK) {
        arb__buf_printf(msg, "HTTP %ld after %d attempt%s", status, x->attempts, plural);
        if (slot->retry_after_ms > (double)h->params.max_retry_wait_ms)
            arb__buf_printf(msg, " (the server asked to wait %g s, Retry-After; waits are "
                            "capped at %g s, max_retry_wait)", slot->retry_after_ms / 1000.0,
                            (double)h->params.max_retry_wait_ms / 1000.0);
        append_body_excerpt(msg, &slot->reply);
    } else if (header_too_large(code, slot)) {
        arb__buf_printf(msg, "reply header too large: %s (a header line over %d bytes is "
                        "refused, as libcurl does; %d attempt%s)", arb_strerror(ARB_TOOBIG),
                        CURL_MAX_HTTP_HEADER, x->attempts, plural);
    } else if (code == CURLE_OPERATION_TIMEDOUT) {
        int connecting = strstr(slot->errbuf, "onnect") != NULL; /* curl: "Connection timed out" */
        arb__buf_printf(msg, "%s after %ld ms (%d attempt%s)",
                        connecting ? "connect timeout" : "timeout",
                        connecting ? h->params.connect_timeout_ms : h->params.total_timeout_ms,
                        x->attempts, plural);
    } else {
        const char *what = slot->errbuf[0] ? slot->errbuf : curl_easy_strerror(code);
        const char *kind = code == CURLE_COULDNT_CONNECT ? "connection failed"
                           : code == CURLE_GOT_NOTHING   ? "empty reply"
                                                         : "transfer failed";
        arb__buf_printf(msg, "%s: %s (%d attempt%s)", kind, what, x->attempts, plural);
    }
    finish(h, x, slot, ok, status, (int)code, latency, done, ud);
    arb__buf_reset(&slot->reply);
    h->idle[h->n_idle++] = (int)(slot - h->slots);
    return 1;
}

/* The endpoint of pool for the next attempt: the fewest running (ties: the fewest sent)
** among those not paused and under their limit, other than avoid (the endpoint a retry just
** failed on) unless it is the only one free; -1 when none. *full_only is set when some
** endpoint is merely full (one ending frees it), *back_ms to the end of the earliest pause. */
static int pick_endpoint(const arb__pool *pool, double now, int avoid, int *full_only,
                         double *back_ms)
{
    int best = -1, avoided = 0;
    *full_only = 0;
    *back_ms = 1e300;
    for (size_t i = 0; i < pool->n; i++) {
        const arb__endpoint *e = &pool->ep[i];
        if ((int)i == avoid && e->paused_until_ms <= now && e->running < e->limit) {
            avoided = 1;
            continue;
        }
        if (e->paused_until_ms > now) {
            if (e->paused_until_ms < *back_ms) *back_ms = e->paused_until_ms;
            continue;
        }
        if (e->running >= e->limit) {
            *full_only = 1;
            continue;
        }
        if (best < 0 || e->running < pool->ep[best].running ||
            (e->running == pool->ep[best].running && e->stats.sent < pool->ep[best].stats.sent))
            best = (int)i;
    }
    return best < 0 && avoided ? avoid : best;
}

/* x's pool has no endpoint free: x waits behind the pool's running attempts, or (every
** endpoint paused) in the timer heap until the first comes back. -1: out of memory. */
static int park(arb__http *h, arb__xfer *x, int full_only, double back_ms)
{
    if (full_only) {
        arb__pool *pool = &h->pools[x->pool];
        fifo_push_back(&pool->wait_head, &pool->wait_tail, x);
        return 0;
    }
    x->due_ms = back_ms;
    return timer_push(h, x);
}

/* ---- the plain transport: keep-alive HTTP/1.1 over non-blocking sockets and epoll ---------- */

static arb__endpoint *slot_endpoint(arb__http *h, const arb__slot *slot)
{
    return &h->pools[slot->xfer->pool].ep[slot->xfer->endpoint];
}

static void conn_close(arb__pconn *c)
{
    if (!c) return;
    if (c->fd >= 0) close(c->fd); /* also leaves the epoll set */
    free(c);
}

static void conn_want_out(arb__http *h, arb__pconn *c, int on)
{
    if (c->want_out == on) return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(h->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = on;
}

/* Ends the running plain attempt of slot with code (its connection is closed): the same path
** as a libcurl transfer that ended with that code. Returns 1 when it finished for good. */
static int plain_fail(arb__http *h, arb__slot *slot, CURLcode code, arb__http_done_fn done,
                      void *ud)
{
    conn_close(slot->conn);
    slot->conn = NULL;
    h->plain_running--;
    slot->headers_done = arb__h1_headers_done(&slot->parse);
    if (slot->headers_done) slot->retry_after_ms = slot->parse.retry_after_ms;
    long status = slot->headers_done ? slot->parse.status : 0;
    return attempt_done(h, slot, code, status, done, ud);
}

/* The reply arrived whole: the connection goes back to its endpoint when it can carry another
** request (keep-alive, request sent whole, nothing more received), else it is closed. */
static int plain_reply_done(arb__http *h, arb__slot *slot, int leftover, int drained,
                            arb__http_done_fn done, void *ud)
{
    arb__pconn *c = slot->conn;
    arb__endpoint *e = slot_endpoint(h, slot);
    int reusable = slot->parse.keep_alive && !leftover &&
                   slot->sent == slot->req_head.len + slot->xfer->body_len;
    if (reusable && e->n_idle_conns < h->params.jobs) {
        c->slot = NULL;
        c->drained_pass = drained ? h->pass : 0;
        e->idle_conns[e->n_idle_conns++] = c;
    } else {
        conn_close(c);
    }
    slot->conn = NULL;
    h->plain_running--;
    slot->headers_done = 1;
    slot->retry_after_ms = slot->parse.retry_after_ms;
    return attempt_done(h, slot, CURLE_OK, slot->parse.status, done, ud);
}

static int plain_connect(arb__http *h, arb__slot *slot, int addr, int tried,
                         arb__http_done_fn done, void *ud);

/* No address of the target took the connection (err: the last errno): libcurl's words. */
static int plain_refused(arb__http *h, arb__slot *slot, int err, arb__http_done_fn done, void *ud)
{
    const arb__plain_target *t = slot_endpoint(h, slot)->plain;
    snprintf(slot->errbuf, sizeof slot->errbuf, "Failed to connect to %.120s port %d after %ld ms: %.40s",
             t->host, t->port, (long)(arb__now_ms() - slot->started_ms), strerror(err));
    return plain_fail(h, slot, CURLE_COULDNT_CONNECT, done, ud);
}

/* The connection broke before a reply (send or receive error, or closed): on a reused
** connection with nothing received, the server had closed it while idle, so the request is
** sent again on a fresh connection without counting an attempt (as libcurl does); otherwise
** the attempt fails with code. */
static int plain_broken(arb__http *h, arb__slot *slot, CURLcode code, int err,
                        arb__http_done_fn done, void *ud)
{
    if (slot->reused && !slot->parse.got_bytes) {
        conn_close(slot->conn);
        slot->conn = NULL;
        slot->reused = 0;
        slot->sent = 0;
        arb__buf_reset(&slot->reply);
        arb__h1_begin(&slot->parse, &slot->reply);
        arb__plain_target *t = slot_endpoint(h, slot)->plain;
        return plain_connect(h, slot, t->good_addr, 0, done, ud);
    }
    if (code == CURLE_GOT_NOTHING) snprintf(slot->errbuf, sizeof slot->errbuf, "Empty reply from server");
    else if (code == CURLE_SEND_ERROR)
        snprintf(slot->errbuf, sizeof slot->errbuf, "Failed sending data to the peer: %s", strerror(err));
    else snprintf(slot->errbuf, sizeof slot->errbuf, "Recv failure: %s", strerror(err));
    return plain_fail(h, slot, code, done, ud);
}

/* Writes what is left of the request; waits for EPOLLOUT when the socket is full. */
static int plain_send(arb__http *h, arb__slot *slot, arb__http_done_fn done, void *ud)
{
    arb__pconn *c = slot->conn;
    arb__xfer *x = slot->xfer;
    size_t hl = slot->req_head.len, total = hl + x->body_len;
    while (slot->sent < total) {
        struct iovec iov[2];
        struct msghdr msg;
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = iov;
        if (slot->sent < hl) {
            iov[0].iov_base = slot->req_head.data + slot->sent;
            iov[0].iov_len = hl - slot->sent;
            iov[1].iov_base = (void *)x->body;
            iov[1].iov_len = x->body_len;
            msg.msg_iovlen = x->body_len ? 2 : 1;
        } else {
            iov[0].iov_base = (void *)(x->body + (slot->sent - hl));
            iov[0].iov_len = total - slot->sent;
            msg.msg_iovlen = 1;
        }
        ssize_t w = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
        if (w > 0) {
            slot->sent += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            conn_want_out(h, c, 1);
            return 0;
        }
        return plain_broken(h, slot, CURLE_SEND_ERROR, w < 0 ? errno : EPIPE, done, ud);
    }
    conn_want_out(h, c, 0);
    return 0;
}

/* Opens a connection for slot's attempt, trying the target's addresses from addr on (tried
** of them failed already). */
static int plain_connect(arb__http *h, arb__slot *slot, int addr, int tried,
                         arb__http_done_fn done, void *ud)
{
    arb__plain_target *t = slot_endpoint(h, slot)->plain;
    int err = 0;
    if (tried == 0) {
        double now = arb__now_ms();
        slot->connect_deadline_ms =
            h->params.connect_timeout_ms > 0 ? now + (double)h->params.connect_timeout_ms : 1e300;
        if (slot->connect_deadline_ms < h->next_deadline_ms)
            h->next_deadline_ms = slot->connect_deadline_ms;
    }
    for (; tried < t->n_addrs; tried++, addr = (addr + 1) % t->n_addrs) {
        int fd = socket(t->addrs[addr].family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int r = connect(fd, &t->addrs[addr].sa.sa, t->addrs[addr].len);
        if (r != 0 && errno != EINPROGRESS) {
            err = errno;
            close(fd);
            continue;
        }
        arb__pconn *c = calloc(1, sizeof *c);
        struct epoll_event ev = {.events = EPOLLIN | (r ? EPOLLOUT : 0), .data.ptr = c};
        if (!c || epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            err = c ? errno : ENOMEM;
            free(c);
            close(fd);
            break;
        }
        c->fd = fd;
        c->slot = slot;
        c->connecting = r != 0;
        c->want_out = r != 0;
        c->addr = addr;
        c->tried = tried;
        slot->conn = c;
        if (c->connecting) return 0;
        t->good_addr = addr;
        return plain_send(h, slot, done, ud);
    }
    return plain_refused(h, slot, err ? err : ECONNREFUSED, done, ud);
}

/* Starts slot's attempt (slot->xfer set, counted as running) on endpoint e's plain target:
** on an idle keep-alive connection when there is one, else on a new one. Returns 1 when the
** attempt ended at once and the transfer finished for good. */
static int plain_start(arb__http *h, arb__slot *slot, arb__endpoint *e, arb__http_done_fn done,
                       void *ud)
{
    arb__xfer *x = slot->xfer;
    h->plain_running++;
    slot->plain = 1;
    slot->sent = 0;
    slot->started_ms = arb__now_ms();
    slot->deadline_ms = h->params.total_timeout_ms > 0
                            ? slot->started_ms + (double)h->params.total_timeout_ms : 1e300;
    if (slot->deadline_ms < h->next_deadline_ms) h->next_deadline_ms = slot->deadline_ms;
    arb__h1_begin(&slot->parse, &slot->reply);
    if (h->epfd < 0 && (h->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) goto nomem;
    if (!h->rbuf && !(h->rbuf = malloc(ARB__RBUF_SIZE))) goto nomem;
    arb__buf *head = &slot->req_head;
    arb__buf_reset(head);
    if (arb__buf_append(head, e->plain->head, e->plain->head_len) ||
        (x->hdr->auth && (arb__buf_puts(head, x->hdr->auth) || arb__buf_puts(head, "\r\n"))) ||
        arb__buf_puts(head, "Content-Length: ") ||
        arb__buf_put_int(head, (long long)x->body_len) || arb__buf_puts(head, "\r\n\r\n"))
        goto nomem;
    while (e->n_idle_conns > 0) {
        arb__pconn *c = e->idle_conns[--e->n_idle_conns];
        /* Anything readable on an idle connection (a close, or bytes the server sent unasked)
        ** would be taken for the reply to this request: such a connection is never reused.
        ** epoll may not have said so yet, so look (libcurl's liveness check does the same) --
        ** unless the read that ended its last reply found the socket empty in this same pass
        ** (no return to the caller, no wait since): that read was the look, microseconds ago,
        ** and a second one would only ever say EAGAIN (it did for every reused connection: one
        ** wasted system call per request). A close that slips in after either look is caught
        ** by plain_broken, which sends the request again on a new connection. */
        int alive = c->fd >= 0;
        if (alive && c->drained_pass != h->pass) {
            char byte;
            h->io.peeks++;
            alive = recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) < 0 &&
                    (errno == EAGAIN || errno == EWOULDBLOCK);
        }
        c->drained_pass = 0;
        if (alive) {
            c->slot = slot;
            slot->conn = c;
            slot->reused = 1;
            return plain_send(h, slot, done, ud);
        }
        conn_close(c); /* closed by the server while idle, or spoke out of turn */
    }
    slot->reused = 0;
    return plain_connect(h, slot, e->plain->good_addr, 0, done, ud);
nomem:
    snprintf(slot->errbuf, sizeof slot->errbuf, "out of memory or descriptors: %s", strerror(errno));
    return plain_fail(h, slot, CURLE_OUT_OF_MEMORY, done, ud);
}

/* Reads what the socket holds into the reply parser. */
static int plain_read(arb__http *h, arb__slot *slot, arb__http_done_fn done, void *ud)
{
    arb__pconn *c = slot->conn;
    for (;;) {
        ssize_t n = recv(c->fd, h->rbuf, ARB__RBUF_SIZE, 0);
        h->io.reads++;
        if (n > 0) {
            size_t used;
            int rc = arb__h1_feed(&slot->parse, h->rbuf, (size_t)n, &used);
            if (rc == ARB__H1_MORE) {
                if ((size_t)n < ARB__RBUF_SIZE) return 0; /* drained for now */
                continue;
            }
            /* less than the buffer: the socket held no more than this (TCP reads take all) */
            if (rc == ARB__H1_DONE)
                return plain_reply_done(h, slot, used < (size_t)n, (size_t)n < ARB__RBUF_SIZE, done,
                                        ud);
            CURLcode code = CURLE_WEIRD_SERVER_REPLY;
            if (rc == ARB__H1_TOOBIG) {
                slot->too_big = 1;
                code = CURLE_WRITE_ERROR;
            } else if (rc == ARB__H1_HEAD_TOOBIG) {
#if LIBCURL_VERSION_NUM >= 0x080600
                code = CURLE_TOO_LARGE;
#else
                code = CURLE_OUT_OF_MEMORY; /* what header_too_large() reads as the limit */
#endif
            } else if (rc == ARB__H1_NOMEM) {
                code = CURLE_OUT_OF_MEMORY;
                snprintf(slot->errbuf, sizeof slot->errbuf, "out of memory reading the reply");
            } else {
                snprintf(slot->errbuf, sizeof slot->errbuf, "malformed HTTP reply");
            }
            return plain_fail(h, slot, code, done, ud); /* head too big: headers_done 0 */
        }
        if (n == 0) {
            int rc = arb__h1_eof(&slot->parse);
            if (rc == ARB__H1_DONE) return plain_reply_done(h, slot, 1, 0, done, ud);
            if (rc == ARB__H1_NOTHING) return plain_broken(h, slot, CURLE_GOT_NOTHING, 0, done, ud);
            snprintf(slot->errbuf, sizeof slot->errbuf,
                     "transfer closed with outstanding read data remaining");
            return plain_fail(h, slot, CURLE_PARTIAL_FILE, done, ud);
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        return plain_broken(h, slot, CURLE_RECV_ERROR, errno, done, ud);
    }
}

/* Handles the readiness of connection c. Returns the transfers finished for good. */
static int plain_event(arb__http *h, arb__pconn *c, uint32_t events, arb__http_done_fn done,
                       void *ud)
{
    arb__slot *slot = c->slot;
    if (!slot) { /* idle: the server closed it or spoke out of turn; never reuse it */
        close(c->fd);
        c->fd = -1;
        return 0;
    }
    if (c->connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        if (!err && !(events & (EPOLLERR | EPOLLHUP))) {
            c->connecting = 0;
            slot_endpoint(h, slot)->plain->good_addr = c->addr;
            return plain_send(h, slot, done, ud);
        }
        if (!err) err = ECONNREFUSED;
        arb__plain_target *t = slot_endpoint(h, slot)->plain;
        int next = (c->addr + 1) % t->n_addrs, tried = c->tried + 1;
        conn_close(c);
        slot->conn = NULL;
        if (tried < t->n_addrs) return plain_connect(h, slot, next, tried, done, ud);
        return plain_refused(h, slot, err, done, ud);
    }
    if ((events & EPOLLOUT) && c->want_out) {
        int fin = plain_send(h, slot, done, ud);
        if (fin || slot->conn != c || !slot->xfer) return fin;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) return plain_read(h, slot, done, ud);
    return 0;
}

/* Waits up to timeout_ms for socket events and handles them. */
static int plain_poll(arb__http *h, int timeout_ms, arb__http_done_fn done, void *ud)
{
    struct epoll_event ev[64];
    int n = epoll_wait(h->epfd, ev, 64, timeout_ms);
    int finished = 0;
    for (int i = 0; i < n; i++) finished += plain_event(h, ev[i].data.ptr, ev[i].events, done, ud);
    return finished;
}

/* Fails the plain attempts whose connect or total timeout has passed (libcurl's messages). */
static int plain_sweep(arb__http *h, double now, arb__http_done_fn done, void *ud)
{
    if (now < h->next_deadline_ms) return 0;
    double next = 1e300;
    int finished = 0;
    for (int i = 0; i < h->params.jobs; i++) {
        arb__slot *slot = &h->slots[i];
        if (!slot->xfer || !slot->plain || !slot->conn) continue;
        int connecting = slot->conn->connecting && slot->connect_deadline_ms < slot->deadline_ms;
        double due = connecting ? slot->connect_deadline_ms : slot->deadline_ms;
        if (now < due) {
            if (due < next) next = due;
            continue;
        }
        if (connecting)
            snprintf(slot->errbuf, sizeof slot->errbuf, "Connection timed out after %ld milliseconds",
                     h->params.connect_timeout_ms);
        else
            snprintf(slot->errbuf, sizeof slot->errbuf,
                     "Operation timed out after %ld milliseconds with %zu bytes received",
                     h->params.total_timeout_ms, slot->reply.len);
        finished += plain_fail(h, slot, CURLE_OPERATION_TIMEDOUT, done, ud);
    }
    h->next_deadline_ms = next;
    return finished;
}

/* Starts queued transfers while a slot is free, each on its pool's least loaded endpoint.
** Returns the number of transfers that failed to start (reported as finished). */
static int start_ready(arb__http *h, arb__http_done_fn done, void *ud)
{
    int failed = 0;
    double now = arb__now_ms();
    while (h->n_idle > 0) {
        arb__xfer *x = ready_pop(h);
        if (!x) break;
        arb__pool *pool = &h->pools[x->pool];
        int full_only;
        double back_ms;
        int ep = pick_endpoint(pool, now, x->endpoint, &full_only, &back_ms);
        if (ep < 0) {
            if (park(h, x, full_only, back_ms) == 0) continue;
            arb__buf_reset(&h->error);
            arb__buf_puts(&h->error, "cannot queue a transfer (out of memory)");
            finish(h, x, NULL, 0, 0, (int)CURLE_OUT_OF_MEMORY, 0, done, ud);
            failed++;
            continue;
        }
        arb__slot *slot = &h->slots[h->idle[h->n_idle - 1]];
        arb__endpoint *target = &pool->ep[ep];
        if (target->plain && x->hdr->plain_ok) {
            h->n_idle--;
            x->endpoint = ep;
            x->attempts++;
            slot->xfer = x;
            slot->too_big = 0;
            slot->headers_done = 0;
            slot->retry_after_ms = -1;
            slot->errbuf[0] = '\0';
            arb__buf_reset(&slot->reply);
            h->running++;
            target->running++;
            target->stats.sent++;
            failed += plain_start(h, slot, target, done, ud);
            continue;
        }
        if (!slot->easy && slot_init(h, slot) != 0) {
            x->attempts++;
            arb__buf_reset(&h->error);
            arb__buf_puts(&h->error, "cannot create a transfer (out of memory)");
            finish(h, x, NULL, 0, 0, (int)CURLE_OUT_OF_MEMORY, 0, done, ud);
            failed++;
            continue;
        }
        h->n_idle--;
        CURL *e = slot->easy;
        x->endpoint = ep;
        curl_easy_setopt(e, CURLOPT_URL, pool->ep[ep].url);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body); /* not copied: x outlives the attempt */
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body_len);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
        slot->xfer = x;
        slot->plain = 0;
        slot->too_big = 0;
        slot->headers_done = 0;
        slot->retry_after_ms = -1;
        slot->errbuf[0] = '\0';
        arb__buf_reset(&slot->reply);
        x->attempts++;
        slot->started_ms = arb__now_ms();
        if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
            slot->xfer = NULL;
            h->idle[h->n_idle++] = (int)(slot - h->slots);
            x->endpoint = -1;
            arb__buf_reset(&h->error);
            arb__buf_puts(&h->error, "cannot start a transfer");
            finish(h, x, NULL, 0, 0, (int)CURLE_FAILED_INIT, 0, done, ud);
            failed++;
            continue;
        }
        h->running++;
        h->curl_running++;
        pool->ep[ep].running++;
        pool->ep[ep].stats.sent++;
    }
    return failed;
}

/* Moves transfers whose retry time has come from the heap to the front of the FIFO. */
static void promote_due(arb__http *h, double now)
{
    while (h->n_timers > 0 && h->timers[0]->due_ms <= now) ready_push_front(h, timer_pop(h));
}

static int collect(arb__http *h, arb__http_done_fn done, void *ud)
{
    int finished = 0, left;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(h->multi, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        arb__slot *slot = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&slot);
        CURLcode code = msg->data.result; /* read before remove_handle invalidates msg */
        long status = 0;
        curl_easy_getinfo(slot->easy, CURLINFO_RESPONSE_CODE, &status);
        curl_multi_remove_handle(h->multi, slot->easy);
        h->curl_running--;
        finished += attempt_done(h, slot, code, status, done, ud);
    }
    return finished;
}

/* Drives transfers for at most timeout_ms (0: one pass without waiting) and returns as soon
** as one or more transfers finished for good, with their number; 0 when the time ran out or
** nothing is pending. done may submit new transfers. */
int arb__http_step(arb__http *h, int timeout_ms, arb__http_done_fn done, void *ud)
{
    double now = arb__now_ms();
    double deadline = now + (timeout_ms > 0 ? timeout_ms : 0);
    int finished = 0;
    h->pass++; /* time passed in the caller: idle connections are looked at before reuse */
    for (int last = 0;;) {
        promote_due(h, now);
        finished += start_ready(h, done, ud);
        int still_running;
        if (h->curl_running) {
            curl_multi_perform(h->multi, &still_running);
            finished += collect(h, done, ud);
        }
        if (h->plain_running) finished += plain_sweep(h, arb__now_ms(), done, ud);
        if (finished > 0) {
            /* Put freed slots back to work before returning, so the connections stay busy
            ** while the caller handles the results. */
            promote_due(h, arb__now_ms());
            finished += start_ready(h, done, ud);
            if (h->curl_running) curl_multi_perform(h->multi, &still_running);
            break;
        }
        if (h->pending == 0 || last) break;
        now = arb__now_ms();
        if (now >= deadline) {
            /* No time to wait, but plain sockets only progress when looked at: once. */
            if (!h->plain_running) break;
            last = 1;
        }
        double wait = deadline - now;
        if (h->n_timers > 0 && h->timers[0]->due_ms - now < wait)
            wait = h->timers[0]->due_ms - now;
        if (h->plain_running && h->next_deadline_ms - now < wait) wait = h->next_deadline_ms - now;
        if (wait < 0) wait = 0;
        h->pass++; /* and after a wait */
        if (h->curl_running) {
            struct curl_waitfd plain = {h->epfd, CURL_WAIT_POLLIN, 0};
            curl_multi_poll(h->multi, h->epfd >= 0 ? &plain : NULL, h->epfd >= 0 ? 1 : 0,
                            (int)ceil(wait), NULL);
            if (plain.revents) finished += plain_poll(h, 0, done, ud);
        } else if (h->epfd >= 0) {
            finished += plain_poll(h, (int)ceil(wait), done, ud);
        } else if (wait > 0) {
            curl_multi_poll(h->multi, NULL, 0, (int)ceil(wait), NULL);
        }
        now = arb__now_ms();
    }
    return finished;
}

/* See internal.h. */
arb__http_io_counts arb__http_get_io_counts(const arb__http *h)
{
    arb__http_io_counts z = {0, 0, 0};
    return h ? h->io : z;
}

/* Returns queued + running + waiting-to-retry transfers (0 for NULL). */
size_t arb__http_pending(const arb__http *h) { return h ? h->pending : 0; }

/* Returns a copy of the counters and the current adaptive limit: the sum of the endpoints'
** limits, at most jobs (zeros for NULL; jobs before the first submission). */
arb__http_stats arb__http_get_stats(const arb__http *h)
{
    arb__http_stats s = {0, 0, 0};
    if (!h) return s;
    s = h->stats;
    long sum = h->n_pools ? 0 : h->params.jobs;
    for (size_t i = 0; i < h->n_pools; i++)
        for (size_t k = 0; k < h->pools[i].n; k++) sum += h->pools[i].ep[k].limit;
    s.inflight_limit = sum < h->params.jobs ? (int)sum : h->params.jobs;
    return s;
}

/* ---- one request at a time (Batch API control calls) -------------------------------------- */

static size_t on_write_capped(char *ptr, size_t size, size_t nmemb, void *ud)
{
    arb__buf *b = ud;
    size_t n = size * nmemb;
    if (arb__buf_append(b, ptr, n)) return 0; /* over b's cap, or no memory */
    return n;
}

/* See internal.h. */
int arb__http_fetch(const arb_client_params *params, const arb__http_request *rq, arb__buf *reply,
                    long *status, char **error)
{
    *status = 0;
    *error = NULL;
    CURL *e = curl_easy_init();
    struct curl_slist *headers = NULL;
    curl_mime *mime = NULL;
    int rc = -1;
    if (!e) goto nomem;
    if (rq->auth_header && !(headers = curl_slist_append(headers, rq->auth_header))) goto nomem;
    if (rq->json_body) {
        struct curl_slist *h = curl_slist_append(headers, "Content-Type: application/json");
        if (!h) goto nomem;
        headers = h;
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, rq->json_body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(rq->json_body));
    } else if (rq->file_data) {
        /* multipart/form-data: purpose=..., file=<data> (RFC 7578) */
        curl_mimepart *part;
        if (!(mime = curl_mime_init(e)) || !(part = curl_mime_addpart(mime)) ||
            curl_mime_name(part, "purpose") ||
            curl_mime_data(part, rq->file_purpose, CURL_ZERO_TERMINATED) ||
            !(part = curl_mime_addpart(mime)) || curl_mime_name(part, "file") ||
            curl_mime_filename(part, rq->file_name) ||
            curl_mime_type(part, "application/jsonl") ||
            curl_mime_data(part, rq->file_data, rq->file_len))
            goto nomem;
        curl_easy_setopt(e, CURLOPT_MIMEPOST, mime);
    }
    curl_easy_setopt(e, CURLOPT_URL, rq->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, params->connect_timeout_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, params->total_timeout_ms);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write_capped);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, reply);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
    /* Retries like the transport's: a connection error, 429 or 5xx is tried again after a
    ** capped exponential backoff. */
    for (int attempt = 0;; attempt++) {
        arb__buf_reset(reply);
        CURLcode code = curl_easy_perform(e);
        long http = 0;
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &http);
        *status = http;
        int transient =
            code != CURLE_OK ? code != CURLE_WRITE_ERROR : (http == 429 || http >= 500);
        if (code == CURLE_OK && http >= 200 && http < 300) {
            rc = 0;
            break;
        }
        if (!transient || attempt >= params->max_retries || arb__stop_requested) {
            *error = code != CURLE_OK
                         ? arb__sprintf("%s", code == CURLE_WRITE_ERROR ? "reply too large"
                                                                         : curl_easy_strerror(code))
                         : arb__sprintf("HTTP %ld: %.200s", http, reply->data ? reply->data : "");
            rc = *error ? 1 : -1;
            break;
        }
        double wait =
            (double)params->backoff_base_ms * (double)(1L << (attempt < 20 ? attempt : 20));
        if (wait > (double)params->backoff_max_ms) wait = (double)params->backoff_max_ms;
        struct timespec ts = {(time_t)(wait / 1000), (long)fmod(wait, 1000.0) * 1000000L};
        nanosleep(&ts, NULL);
    }
    goto done;
nomem:
    rc = -1;
done:
    curl_mime_free(mime);
    curl_slist_free_all(headers);
    if (e) curl_easy_cleanup(e);
    return rc;
}

/* See internal.h. */
int arb__http_get_endpoint_stats(const arb__http *h, int pool, size_t endpoint,
                                 arb__http_endpoint_stats *out)
{
    if (!h || pool < 0 || (size_t)pool >= h->n_pools || endpoint >= h->pools[pool].n) return -1;
    const arb__endpoint *e = &h->pools[pool].ep[endpoint];
    *out = e->stats;
    out->limit = e->limit;
    return 0;
}
