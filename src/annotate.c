/*
** annotate.c -- the annotation web app (METHODS §4): a small HTTP server (libmicrohttpd) that
** shows human experts one side-by-side pair at a time, blind, and stores each verdict as a
** human label the moment it is given. The page itself (webapp/) is embedded at build time.
**
** Tasks. The pairs served are the ones given, or every (candidate, baseline) of the stored
** side-by-side judgments (sorted by name); the items are those with answers from both models,
** in benchmark order (items.seq). For an annotator the next task is its own open task when it
** has one (a reload shows the same task and renews its lease), else the first (pair, item), in
** pair order then item order, that the annotator has neither a task nor a label for and that
** fewer than `overlap` others hold, where a label counts and so does an open task assigned less
** than lease_minutes ago. A task records which answer is shown first (shown_order 0: the
** candidate's): bit 0 of xxh3-64, seeded with the seed, of item, candidate, baseline and
** annotator, so the orders are balanced over tasks and the same on every rerun. An own open
** task whose lease expired while others filled the item up is released (its row deleted) and
** the next task chosen; a verdict on such a task is refused the same way (row deleted, 409),
** and a verdict on an expired task the others have not filled up is accepted.
** Labels store the MODEL verdict (arb_verdict_to_model of the choice and the shown order),
** source "ui", the annotator, the shown order and the time taken.
**
** HTTP: GET / (also /index.html), /app.css, /app.js without the token; POST /api/login;
** GET /api/next, POST /api/label, GET /api/progress with the token (cookie arbiter_token,
** "Authorization: Bearer", or X-Arbiter-Token) and an annotator (header X-Arbiter-Annotator,
** cookie arbiter_annotator, or the server's default). Anyone with the token may name any
** annotator: names tell honest people apart, they do not authenticate. Every /api request
** from another site (Origin not this server, Sec-Fetch-Site not same-origin or none) is
** refused, and every POST must be Content-Type: application/json, since SameSite cookies do
** not stop a page on another port of the same host. Replies are JSON, errors {"error": "..."}:
** 400 bad input, 401 no or wrong token, 403 another annotator's task or another site, 404
** unknown path or task, 405 wrong method, 409 task already answered or expired and taken, 413
** body over 64 KiB, 415 body not JSON, 500 database error, 503 database busy (for longer than
** 2 s).
**
** Invariants:
**   - Choosing and creating a task is one BEGIN IMMEDIATE transaction, and so is storing a
**     verdict (with the recount of an expired task), so two servers (two processes) on one
**     database never push an item past the overlap limit.
**   - A label is committed before its reply is sent: a killed server loses no given label.
**   - The browser never receives a model name: replies carry a task id, texts and counts.
**   - Questions and answers are sent as plain text without control characters (but tab and
**     newline) or explicit bidirectional controls (arb__plain_text): a reply's RLO cannot
**     reverse what the annotator reads.
**   - The token is compared in constant time and is never logged or stored.
**   - Every reply carries the security headers (a CSP without inline code, nosniff, no
**     referrer, no framing) and Cache-Control: no-store.
**
** A URL with a control character, raw or percent-encoded (%00..%1F, %7F), anywhere in its
** path or query is refused with 400: libmicrohttpd decodes the path into a C string, so
** "/app.js%00.png" would otherwise be served as /app.js.
**
** Threads and slow clients: one thread per connection, at most 1024 connections (fewer when
** the process may open fewer files) and 16 from one IP address. libmicrohttpd's own timeout
** (15 s) only closes IDLE connections, so a client that trickles its request a byte at a time
** could hold a connection forever (slowloris). Hence a deadline: a connection must deliver a
** whole request (headers and body) within 10 s of being ready for it (accepted, or its previous
** reply sent), and take its reply within 10 s; a sweeper thread shuts down the sockets of
** connections past their deadline (shutdown(2), as libmicrohttpd itself does when stopping:
** the connection's thread sees the end of the stream and closes it). While a request is being
** answered it has no deadline. The server's single store connection (opened with SQLite's
** locking off) is only used under srv->lock, and waits at most 2 s for a database locked by
** another program, so one busy database does not queue every request for long.
**
** Not done here: TLS (bind to loopback, or put a TLS proxy in front), accounts (one shared
** token; annotators name themselves), agreement metrics (labels.c, audit.c).
*/
#include "internal.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <xxhash.h>

/* The embedded page (webapp_*_gen.c, made by cmake/embed.cmake): {name without extension,
** text}, ending with {NULL, NULL}. */
typedef struct arb__webapp_file {
    const char *name;
    const char *text;
} arb__webapp_file;
extern const arb__webapp_file arb__webapp_html[];
extern const arb__webapp_file arb__webapp_css[];
extern const arb__webapp_file arb__webapp_js[];

#define ANNOTATE_MAX_BODY ((size_t)64 << 10)
#define ANNOTATE_MAX_NAME 64            /* code points of an annotator name */
#define ANNOTATE_MAX_NAME_BYTES (4 * ANNOTATE_MAX_NAME) /* UTF-8: at most 4 bytes a code point */
#define ANNOTATE_MIN_TOKEN 16
#define ANNOTATE_MAX_TOKEN 4096
#define ANNOTATE_MAX_TIME_MS 86400000LL /* one day */
#define ANNOTATE_MAX_OVERLAP 1000
#define ANNOTATE_MAX_LEASE 525600       /* a year, in minutes */
#define ANNOTATE_BUSY_TIMEOUT_MS 2000   /* a request waits this long for a locked database */
#define ANNOTATE_CONNECTION_TIMEOUT 15  /* seconds an idle connection is kept */
#define ANNOTATE_REQUEST_DEADLINE_MS 10000 /* to deliver a whole request, or take a reply */
#define ANNOTATE_SWEEP_MS 250           /* how often deadlines are checked */
#define ANNOTATE_MAX_CONNECTIONS 1024
#define ANNOTATE_SPARE_FILES 64         /* descriptors kept for the store and the rest */
#define ANNOTATE_MAX_PER_ADDRESS 16     /* connections from one IP address */

#define CSP "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; " \
            "frame-ancestors 'none'"

/* A connection of the daemon, for the deadline (see the file comment). */
typedef struct live_conn {
    struct live_conn *prev, *next;
    int fd;
    long long deadline_ms; /* monotonic; 0: none (its request is being answered) */
} live_conn;

struct arb_annotate_server {
    struct MHD_Daemon *daemon;
    int port;
    pthread_mutex_t conns_lock; /* guards conns, the deadlines and stopping */
    pthread_cond_t sweep_wake;  /* signalled to stop the sweeper */
    live_conn *conns;           /* every open connection */
    int stopping;
    pthread_t sweeper;
    pthread_mutex_t lock; /* guards store and tasks */
    arb_store *store;
    arb__annotation_tasks *tasks; /* the task statements, prepared once */
    char *token;
    size_t token_len;
    char *annotator;      /* default name, or NULL */
    int overlap;
    unsigned long long seed;
    int lease_minutes;
    size_t n_pairs;       /* (candidate, baseline) pairs served */
};

/* The state of one request (*req_cls): made by on_uri when the request line has come. */
typedef struct request_state {
    int control_in_url;   /* the URL holds a control character (raw or percent-encoded) */
    void *upload;         /* the arb__upload of arb__upload_step */
} request_state;

/* What a handler answers: a status and a JSON body (owned). */
typedef struct reply {
    unsigned status;
    json_t *json;
} reply;

/* ---- small helpers ----------------------------------------------------------------------- */

/* Decodes the code point at s[*i] of valid UTF-8 and advances *i. */
static unsigned long next_code_point(const unsigned char *s, size_t *i)
{
    unsigned char c = s[(*i)++];
    if (c < 0x80) return c;
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
    unsigned long cp = c & (0x3F >> extra);
    while (extra--) cp = (cp << 6) | (s[(*i)++] & 0x3F);
    return cp;
}

/* Nonzero when cp is in Unicode's general category Cf (format characters: zero-width spaces
** and joiners, bidirectional controls, soft hyphen, tags, ...), as of Unicode 15. */
static int is_format_char(unsigned long cp)
{
    static const unsigned long ranges[][2] = {
        {0x00AD, 0x00AD},   {0x0600, 0x0605},   {0x061C, 0x061C},   {0x06DD, 0x06DD},
        {0x070F, 0x070F},   {0x0890, 0x0891},   {0x08E2, 0x08E2},   {0x180E, 0x180E},
        {0x200B, 0x200F},   {0x202A, 0x202E},   {0x2060, 0x2064},   {0x2066, 0x206F},
        {0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD}, {0x110CD, 0x110CD},
        {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001},
        {0xE0020, 0xE007F},
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (cp >= ranges[i][0] && cp <= ranges[i][1]) return 1;
    return 0;
}

/* Nonzero when cp is in Unicode's general category Zs (space separators). */
static int is_space_char(unsigned long cp)
{
    return cp == 0x20 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* Returns NULL when name[0..len) is acceptable as an annotator name, else why not (a static
** phrase). Names are stored and shown in reports and terminals, and told apart by eye, so
** they must be printable and visible: no control characters (C0, DEL, C1), no line or
** paragraph separators, no format characters (Cf: zero-width spaces and joiners, bidirectional
** overrides, soft hyphen, ...), no space separator (Zs) at either end, valid UTF-8, 1 to 64
** code points. */
static const char *annotator_problem(const char *name, size_t len)
{
    if (len == 0) return "is empty";
    if (memchr(name, '\0', len)) return "contains a NUL character";
    if (!arb__utf8_valid(name, len, NULL)) return "is not valid UTF-8";
    if (arb__utf8_codepoints(name, len) > ANNOTATE_MAX_NAME) return "is longer than 64 characters";
    const unsigned char *s = (const unsigned char *)name;
    unsigned long cp = 0;
    for (size_t i = 0; i < len;) {
        cp = next_code_point(s, &i); /* after the loop: the last one */
        if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) return "contains a control character";
        if (cp == 0x2028 || cp == 0x2029) return "contains a line or paragraph separator";
        if (is_format_char(cp)) return "contains an invisible formatting character";
    }
    size_t first_end = 0;
    if (is_space_char(next_code_point(s, &first_end)) || is_space_char(cp))
        return "starts or ends with a space";
    return NULL;
}

/* Appends s percent-encoded (everything but RFC 3986 unreserved characters), so any token or
** name is a valid cookie value. Returns 0, or -1 when out of memory. */
static int put_percent_encoded(arb__buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~';
        char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
        if (plain ? arb__buf_append(b, p, 1) : arb__buf_append(b, esc, 3)) return -1;
    }
    return 0;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes a percent-encoded cookie value into b (NUL-terminated). Returns 0, or -1 for a bad
** escape or when out of memory. */
static int percent_decode(arb__buf *b, const char *s)
{
    for (; *s; s++) {
        char c = *s;
        if (c == '%') {
            int hi = hex_value(s[1]), lo = hi < 0 ? -1 : hex_value(s[2]);
            if (lo < 0) return -1;
            c = (char)(hi * 16 + lo);
            s += 2;
        }
        if (arb__buf_append(b, &c, 1)) return -1;
    }
    return arb__buf_append(b, "", 0);
}

/* Nonzero when given[0..n) equals the server's token. The time taken depends only on the
** token's length, not on where the first difference is. */
static int token_matches(const arb_annotate_server *srv, const char *given, size_t n)
{
    unsigned diff = n != srv->token_len;
    for (size_t i = 0; i < srv->token_len; i++)
        diff |= (unsigned char)srv->token[i] ^ (unsigned char)(i < n ? given[i] : 0);
    return diff == 0;
}

/* Which answer is shown first (0: the candidate's), see the file comment. Returns 0 or 1, or
** -1 when out of memory. */
static int shown_order_of(unsigned long long seed, const char *item, const char *candidate,
                          const char *baseline, const char *annotator)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    /* NUL separators: no string holds one, so different tuples hash different bytes. */
    int fail = arb__buf_append(&b, item, strlen(item) + 1) ||
               arb__buf_append(&b, candidate, strlen(candidate) + 1) ||
               arb__buf_append(&b, baseline, strlen(baseline) + 1) ||
               arb__buf_append(&b, annotator, strlen(annotator));
    int order = fail ? -1 : (int)(XXH3_64bits_withSeed(b.data, b.len, seed) & 1);
    arb__buf_free(&b);
    return order;
}

/* ---- replies ----------------------------------------------------------------------------- */

static reply reply_json(unsigned status, json_t *json) { return (reply){status, json}; }

static reply reply_error(unsigned status, const char *fmt, ...) ARB__ATTR_PRINTF(2, 3);
static reply reply_error(unsigned status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = arb__vsprintf(fmt, ap);
    va_end(ap);
    json_t *o = msg ? json_object() : NULL;
    if (o && arb__json_set(o, "error", arb__json_name(msg))) {
        json_decref(o);
        o = NULL;
    }
    free(msg);
    return reply_json(status, o);
}

/* A database failure while doing what: 503 when another connection held the database for
** longer than the busy timeout, else 500. */
static reply reply_db_error(arb_annotate_server *srv, const char *what)
{
    int busy;
    const char *why = arb__store_last_db_error(srv->store, &busy);
    if (busy)
        return reply_error(503, "the database is busy (another program is writing to it); "
                                "try again in a moment");
    return reply_error(500, "database error while %s: %s", what, why);
}

static void add_common_headers(struct MHD_Response *resp, const char *content_type)
{
    MHD_add_response_header(resp, "Content-Type", content_type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "Content-Security-Policy", CSP);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
}

/* Queues r (taking its JSON). allow: the Allow header of a 405; cookies: Set-Cookie values
** (NULL-terminated list, may be NULL). Out of memory drops the connection. */
static enum MHD_Result send_reply(struct MHD_Connection *conn, reply r, const char *allow,
                                  char *const *cookies)
{
    char *body = r.json ? json_dumps(r.json, JSON_COMPACT) : NULL;
    json_decref(r.json);
    if (!body) return MHD_NO;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    add_common_headers(resp, "application/json; charset=utf-8");
    if (allow) MHD_add_response_header(resp, "Allow", allow);
    for (size_t i = 0; cookies && cookies[i]; i++)
        MHD_add_response_header(resp, "Set-Cookie", cookies[i]);
    enum MHD_Result ret = MHD_queue_response(conn, r.status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* ---- who is asking ----------------------------------------------------------------------- */

/* Nonzero when the request carries the token: "Authorization: Bearer", X-Arbiter-Token or the
** arbiter_token cookie (percent-decoded), the first present being the one checked. */
static int request_authorized(const arb_annotate_server *srv, struct MHD_Connection *conn)
{
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (auth) {
        if (strncasecmp(auth, "Bearer ", 7)) return 0;
        const char *t = auth + 7;
        while (*t == ' ') t++;
        return token_matches(srv, t, strlen(t));
    }
    const char *header = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Arbiter-Token");
    if (header) return token_matches(srv, header, strlen(header));
    const char *cookie = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, "arbiter_token");
    if (!cookie) return 0;
    arb__buf b;
    arb__buf_init(&b, ANNOTATE_MAX_TOKEN * 3);
    int ok = !percent_decode(&b, cookie) && token_matches(srv, b.data, b.len);
    arb__buf_free(&b);
    return ok;
}

/* The annotator of a request: header X-Arbiter-Annotator, else the arbiter_annotator cookie
** (percent-decoded), else the server's default. On success *name is a copy (caller frees);
** otherwise *bad is the 400 reply (500 when out of memory). */
static int request_annotator(const arb_annotate_server *srv, struct MHD_Connection *conn,
                             char **name, reply *bad)
{
    *name = NULL;
    const char *header = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Arbiter-Annotator");
    const char *cookie = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, "arbiter_annotator");
    /* Longer than any name could be (64 code points of 4 bytes, each byte %XX in the cookie):
    ** refused before copying, so a huge value is bad input and not an out-of-memory. */
    size_t max_len = header ? ANNOTATE_MAX_NAME_BYTES : 3 * ANNOTATE_MAX_NAME_BYTES;
    const char *given = header ? header : cookie;
    const char *source = header ? "the X-Arbiter-Annotator header" : "the arbiter_annotator cookie";
    if (given && strlen(given) > max_len) {
        *bad = reply_error(400, "the annotator name in %s is longer than %d characters", source,
                           ANNOTATE_MAX_NAME);
        return -1;
    }
    arb__buf b;
    arb__buf_init(&b, 0);
    if (header) {
        if (arb__buf_append(&b, header, strlen(header)) || arb__buf_append(&b, "", 0)) goto nomem;
    } else if (cookie) {
        if (percent_decode(&b, cookie)) {
            arb__buf_free(&b);
            *bad = reply_error(400, "the arbiter_annotator cookie is not percent-encoded text; "
                                    "sign in again");
            return -1;
        }
    } else if (srv->annotator) {
        if (!(*name = arb__strdup(srv->annotator))) goto nomem;
        return 0;
    } else {
        *bad = reply_error(400, "no annotator name: sign in with a name (POST /api/login with "
                                "\"annotator\"), or send the X-Arbiter-Annotator header");
        return -1;
    }
    const char *problem = annotator_problem(b.data ? b.data : "", b.len);
    if (problem) {
        *bad = reply_error(400, "the annotator name in %s %s", source, problem);
        arb__buf_free(&b);
        return -1;
    }
    *name = arb__buf_steal(&b);
    if (*name) return 0;
nomem:
    arb__buf_free(&b);
    *bad = reply_error(500, "out of memory");
    return -1;
}

/* Nonzero when origin is scheme followed by host, ignoring case (RFC 6454 origins and Host
** headers are compared as ASCII; a browser sends both lower case). */
static int origin_is(const char *origin, const char *scheme, const char *host)
{
    size_t n = strlen(scheme);
    return !strncasecmp(origin, scheme, n) && !strcasecmp(origin + n, host);
}

/* Returns NULL when the request may come from this server's own page, else why not (for a
** 403). SameSite cookies do not stop a page of another port on the same host, so: a browser's
** Sec-Fetch-Site must be same-origin or none (typed in), and an Origin header must be this
** server: http://<Host>, or https://<Host> behind a TLS proxy that sends
** X-Forwarded-Proto: https (a page cannot add that header to a cross-site request without a
** CORS preflight, which this server never approves). Requests without these headers (curl,
** scripts) pass: they need the token anyway. */
static const char *cross_site_problem(struct MHD_Connection *conn)
{
    const char *site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
    if (site && strcasecmp(site, "same-origin") && strcasecmp(site, "none"))
        return "requests from other sites are refused (Sec-Fetch-Site is not same-origin)";
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    if (!origin) return NULL;
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
    const char *proto = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Forwarded-Proto");
    if (host && (origin_is(origin, "http://", host) ||
                 (proto && !strcasecmp(proto, "https") && origin_is(origin, "https://", host))))
        return NULL;
    return "requests from other sites are refused (the Origin header is not this server)";
}

/* Nonzero when the request's Content-Type is application/json, parameters (charset) allowed.
** An HTML form or a cross-site "simple" request cannot send that type. */
static int body_is_json(struct MHD_Connection *conn)
{
    const char *type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
    if (!type) return 0;
    while (*type == ' ' || *type == '\t') type++;
    static const char want[] = "application/json";
    if (strncasecmp(type, want, sizeof want - 1)) return 0;
    const char *rest = type + sizeof want - 1;
    while (*rest == ' ' || *rest == '\t') rest++;
    return *rest == '\0' || *rest == ';';
}

/* ---- tasks ------------------------------------------------------------------------------- */

/* {"labelled", "skipped", "remaining"} of annotator, or NULL on a database error (message in
** the connection) or when out of memory (*nomem set). */
static json_t *progress_of(arb_annotate_server *srv, const char *annotator, int *nomem)
{
    *nomem = 0;
    arb__annotation_progress p;
    if (arb__store_annotation_progress(srv->tasks, annotator, &p)) return NULL;
    json_t *o = json_pack("{s:I, s:I, s:I}", "labelled", (json_int_t)p.labelled, "skipped",
                          (json_int_t)p.skipped, "remaining", (json_int_t)p.remaining);
    if (!o) *nomem = 1;
    return o;
}

/* Failures of the task functions (a database error's message is in the connection). */
enum { TASK_DB_ERROR = -1, TASK_NOMEM = -2, TASK_GONE = -3 };

/* The TASK_* code of a failed store call. */
static int task_failure(arb_status st) { return st == ARB_NOMEM ? TASK_NOMEM : TASK_DB_ERROR; }

/* Inside the caller's write transaction: finds the annotator's open task or assigns the next
** one (see the file comment). Returns 1 with *t filled, 0 when nothing is left, or TASK_*. */
static int find_or_assign(arb_annotate_server *srv, const char *annotator,
                          arb__annotation_task *t)
{
    arb_status st;
    int found;
    for (;;) { /* at most twice: an expired own task may be released */
        if ((st = arb__store_own_open_annotation_task(srv->tasks, annotator, t, &found)))
            return task_failure(st);
        if (!found) break;
        long long held = 0;
        if (!t->live && /* expired: still ours unless the others filled the item meanwhile */
            (st = arb__store_count_annotation_holders(srv->tasks, annotator, t->item,
                                                      t->candidate, t->baseline, &held)))
            return task_failure(st);
        int keep = t->live || held < srv->overlap;
        st = keep ? arb__store_renew_annotation_task(srv->tasks, t->id)
                  : arb__store_release_annotation_task(srv->tasks, t->id);
        if (st) return task_failure(st);
        if (keep) return 1;
        arb__annotation_task_free(t);
    }

    if ((st = arb__store_next_annotation_task(srv->tasks, annotator, t, &found)))
        return task_failure(st);
    if (!found) return 0;
    int order = shown_order_of(srv->seed, t->item, t->candidate, t->baseline, annotator);
    if (order < 0) return TASK_NOMEM;
    if ((st = arb__store_put_annotation_task(srv->tasks, annotator, t->item, t->candidate,
                                             t->baseline, order, &t->id)))
        return task_failure(st);
    return 1;
}

/* A question or answer as the page shows it: a JSON string of s without control characters
** (but tab and newline) or explicit bidirectional controls (arb__plain_text), so a model's
** RLO cannot reverse what the annotator reads. NULL when out of memory. */
static json_t *shown_text(const char *s)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    json_t *j = arb__plain_text(&b, s) ? NULL : json_stringn(b.data ? b.data : "", b.len);
    arb__buf_free(&b);
    return j;
}

/* The task as JSON for the page: {"task", "question", "reference", "answers"} with the answers
** in the shown order stored with the task. Returns 0 with *out set, TASK_DB_ERROR, TASK_NOMEM,
** or TASK_GONE when the item or an answer is no longer in the store. */
static int task_json(arb_annotate_server *srv, const arb__annotation_task *t, json_t **out)
{
    *out = NULL;
    arb__annotation_task stored;
    int found;
    arb_status st = arb__store_get_annotation_task(srv->tasks, t->id, &stored, &found);
    int order = stored.shown_order;
    arb__annotation_task_free(&stored);
    if (st) return task_failure(st);
    if (!found) return TASK_GONE;
    arb__annotation_texts x;
    st = arb__store_get_annotation_texts(srv->tasks, t->item, t->candidate, t->baseline, &x,
                                         &found);
    if (st) return task_failure(st);
    if (!found) return TASK_GONE;
    json_t *o = json_object();
    json_t *answers = json_array();
    int fail = !o || !answers;
    const char *first = order ? x.baseline_answer : x.candidate_answer,
               *second = order ? x.candidate_answer : x.baseline_answer;
    fail = fail || json_array_append_new(answers, shown_text(first)) ||
           json_array_append_new(answers, shown_text(second));
    fail = fail || arb__json_set(o, "task", json_integer(t->id)) ||
           arb__json_set(o, "question", shown_text(x.question)) ||
           arb__json_set(o, "reference", x.reference ? shown_text(x.reference) : json_null());
    arb__annotation_texts_free(&x);
    if (fail || arb__json_set(o, "answers", answers)) {
        if (fail) json_decref(answers);
        json_decref(o);
        return TASK_NOMEM;
    }
    *out = o;
    return 0;
}

/* Ends the transaction after a failure in a handler and returns the reply for code. */
static reply fail_transaction(arb_annotate_server *srv, int code, const char *what)
{
    reply r = code == TASK_NOMEM ? reply_error(500, "out of memory")
              : code == TASK_GONE
                  ? reply_error(500, "the item or an answer of this task is no longer in the "
                                     "store")
                  : reply_db_error(srv, what);
    arb__store_reset_annotation_tasks(srv->tasks);
    arb__store_rollback(srv->store);
    return r;
}

/* ---- endpoints --------------------------------------------------------------------------- */

/* Parses the body as a JSON object. On failure *bad is the 400 reply. */
static json_t *body_object(const arb__upload *rq, reply *bad)
{
    json_error_t jerr;
    json_t *root = json_loadb(rq->body.data ? rq->body.data : "", rq->body.len,
                              JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        *bad = reply_error(400, "the body is not valid JSON: %s (line %d, column %d)", jerr.text,
                           jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        *bad = reply_error(400, "the body must be a JSON object, got %s", arb__json_kind(root));
        json_decref(root);
        return NULL;
    }
    return root;
}

/* POST /api/login {"token", "annotator"}: checks the token and sets the cookies. */
static enum MHD_Result handle_login(arb_annotate_server *srv, struct MHD_Connection *conn,
                                    const arb__upload *rq)
{
    reply bad;
    json_t *root = body_object(rq, &bad);
    if (!root) return send_reply(conn, bad, NULL, NULL);
    json_t *token = json_object_get(root, "token");
    json_t *name = json_object_get(root, "annotator");
    reply r;
    char *cookies[3] = {NULL, NULL, NULL};
    if (!json_is_string(token)) {
        r = reply_error(400, "field \"token\" must be a string, got %s", arb__json_kind(token));
        goto done;
    }
    if (!token_matches(srv, json_string_value(token), json_string_length(token))) {
        r = reply_error(401, "wrong token");
        goto done;
    }
    const char *annotator = NULL;
    if (json_is_string(name) && json_string_length(name) > 0) {
        annotator = json_string_value(name);
        const char *problem = annotator_problem(annotator, json_string_length(name));
        if (problem) {
            r = reply_error(400, "field \"annotator\": the name %s", problem);
            goto done;
        }
    } else if (name && !json_is_null(name) && !json_is_string(name)) {
        r = reply_error(400, "field \"annotator\" must be a string, got %s", arb__json_kind(name));
        goto done;
    } else if (!(annotator = srv->annotator)) {
        r = reply_error(400, "field \"annotator\": give your name (this server has no default "
                             "annotator)");
        goto done;
    }
    arb__buf b;
    arb__buf_init(&b, 0);
    int fail = arb__buf_puts(&b, "arbiter_token=") || put_percent_encoded(&b, srv->token) ||
               arb__buf_puts(&b, "; HttpOnly; SameSite=Strict; Path=/");
    cookies[0] = fail ? NULL : arb__buf_steal(&b);
    fail = fail || arb__buf_puts(&b, "arbiter_annotator=") || put_percent_encoded(&b, annotator) ||
           arb__buf_puts(&b, "; HttpOnly; SameSite=Strict; Path=/");
    cookies[1] = fail ? NULL : arb__buf_steal(&b);
    arb__buf_free(&b);
    json_t *o = fail ? NULL : json_object();
    if (o && arb__json_set(o, "annotator", arb__json_name(annotator))) {
        json_decref(o);
        o = NULL;
    }
    r = o ? reply_json(200, o) : reply_error(500, "out of memory");
done:
    json_decref(root);
    enum MHD_Result ret = send_reply(conn, r, NULL, r.status == 200 ? cookies : NULL);
    for (int i = 0; i < 2; i++) {
        if (cookies[i]) memset(cookies[i], 0, strlen(cookies[i])); /* it holds the token */
        free(cookies[i]);
    }
    return ret;
}

/* GET /api/next: the annotator's current or next task, or {"done": true}. */
static reply do_next(arb_annotate_server *srv, const char *annotator)
{
    if (arb__store_begin(srv->store)) return reply_db_error(srv, "starting a transaction");
    arb__annotation_task t;
    json_t *o = NULL;
    int found = find_or_assign(srv, annotator, &t);
    int code = found < 0 ? found : found ? task_json(srv, &t, &o) : 0;
    arb__annotation_task_free(&t);
    if (!code && !o && !(o = json_pack("{s:b}", "done", 1))) code = TASK_NOMEM;
    if (!code) {
        int nomem;
        json_t *progress = progress_of(srv, annotator, &nomem);
        if (!progress) code = nomem ? TASK_NOMEM : TASK_DB_ERROR;
        else if (arb__json_set(o, "progress", progress)) code = TASK_NOMEM;
    }
    if (!code && arb__store_commit(srv->store)) code = TASK_DB_ERROR;
    if (code) {
        json_decref(o);
        return fail_transaction(srv, code, "choosing the next task");
    }
    return reply_json(200, o);
}

/* The fields of a POST /api/label body, checked. */
typedef struct label_request {
    long long task;
    char choice;      /* 'A'..'D', or 'S' for skip */
    long long time_ms; /* -1: not given */
} label_request;

/* Reads and checks the label body. On failure *bad is the 400 reply. */
static int parse_label(const arb__upload *rq, label_request *lr, reply *bad)
{
    json_t *root = body_object(rq, bad);
    if (!root) return -1;
    json_t *task = json_object_get(root, "task");
    json_t *choice = json_object_get(root, "choice");
    json_t *time = json_object_get(root, "time_ms");
    int rc = -1;
    if (!json_is_integer(task) || json_integer_value(task) <= 0) {
        *bad = reply_error(400, "field \"task\" must be a positive whole number (the task id "
                                "from /api/next), got %s", arb__json_kind(task));
        goto done;
    }
    lr->task = json_integer_value(task);
    const char *c = json_string_value(choice);
    if (c && (!strcmp(c, "A") || !strcmp(c, "B") || !strcmp(c, "C") || !strcmp(c, "D")))
        lr->choice = c[0];
    else if (c && !strcmp(c, "skip"))
        lr->choice = 'S';
    else {
        char shown[64];
        if (c) arb__excerpt(shown, sizeof shown, c, json_string_length(choice));
        *bad = reply_error(400, "field \"choice\" must be \"A\" (first better), \"B\" (second "
                                "better), \"C\" (both good), \"D\" (both bad) or \"skip\", got %s",
                           c ? shown : arb__json_kind(choice));
        goto done;
    }
    lr->time_ms = -1;
    if (time && !json_is_null(time)) {
        if (!json_is_integer(time) || json_integer_value(time) < 0 ||
            json_integer_value(time) > ANNOTATE_MAX_TIME_MS) {
            *bad = reply_error(400, "field \"time_ms\" must be a whole number of milliseconds "
                                    "from 0 to 86400000, got %s%s", arb__json_kind(time),
                               json_is_integer(time) ? " out of range" : "");
            goto done;
        }
        lr->time_ms = json_integer_value(time);
    }
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* POST /api/label: stores the verdict (or the skip) and finishes the task, committed before
** the reply. */
static reply do_label(arb_annotate_server *srv, const char *annotator, const label_request *lr)
{
    if (arb__store_begin(srv->store)) return reply_db_error(srv, "starting a transaction");
    reply r;
    arb__annotation_task t;
    int code = TASK_DB_ERROR, found;
    arb_status st = arb__store_get_annotation_task(srv->tasks, lr->task, &t, &found);
    if (st) {
        code = task_failure(st);
        goto fail;
    }
    if (!found) {
        r = reply_error(404, "task %lld does not exist (it may have been given to someone else "
                             "after its lease expired)", lr->task);
        goto refuse;
    }
    if (strcmp(t.annotator, annotator)) {
        r = reply_error(403, "task %lld belongs to another annotator", lr->task);
        goto refuse;
    }
    if (t.answered) {
        r = reply_error(409, "task %lld is already answered", lr->task);
        goto refuse;
    }
    if (!t.live) {
        /* Expired: others may have been given the item meanwhile (as find_or_assign counts
        ** them). When they fill it, this verdict would push the item past the overlap. */
        long long held;
        if (arb__store_count_annotation_holders(srv->tasks, annotator, t.item, t.candidate,
                                                t.baseline, &held))
            goto fail;
        if (held >= srv->overlap) {
            if (arb__store_release_annotation_task(srv->tasks, lr->task) ||
                arb__store_commit(srv->store))
                goto fail;
            arb__annotation_task_free(&t);
            return reply_error(409, "task %lld expired (no answer within %d minutes) and went to "
                                    "someone else; your verdict was not stored", lr->task,
                               srv->lease_minutes);
        }
    }
    if (lr->choice != 'S') {
        char verdict[2] = {arb_verdict_to_model(lr->choice, t.shown_order), 0};
        if (arb__store_put_annotation_label(srv->tasks, annotator, t.item, t.candidate,
                                            t.baseline, verdict, t.shown_order, lr->time_ms))
            goto fail;
    }
    if (arb__store_finish_annotation_task(srv->tasks, lr->task,
                                          lr->choice == 'S' ? "skip" : "label"))
        goto fail;
    int nomem;
    json_t *progress = progress_of(srv, annotator, &nomem);
    if (!progress) {
        code = nomem ? TASK_NOMEM : TASK_DB_ERROR;
        goto fail;
    }
    json_t *o = json_object();
    if (!o || arb__json_set(o, "ok", json_true()) || arb__json_set(o, "progress", progress)) {
        if (!o) json_decref(progress);
        json_decref(o);
        code = TASK_NOMEM;
        goto fail;
    }
    if (arb__store_commit(srv->store)) {
        json_decref(o);
        goto fail;
    }
    arb__annotation_task_free(&t);
    return reply_json(200, o);
refuse:
    arb__store_reset_annotation_tasks(srv->tasks);
    arb__store_rollback(srv->store);
    arb__annotation_task_free(&t);
    return r;
fail:
    arb__annotation_task_free(&t);
    return fail_transaction(srv, code, "storing the label");
}

/* GET /api/progress. */
static reply do_progress(arb_annotate_server *srv, const char *annotator)
{
    /* One read transaction, so the counts come from one snapshot. */
    if (arb__store_begin_read(srv->store)) return reply_db_error(srv, "reading the progress");
    int nomem, code = 0;
    json_t *progress = progress_of(srv, annotator, &nomem);
    json_t *o = progress ? json_object() : NULL;
    if (!progress) code = nomem ? TASK_NOMEM : TASK_DB_ERROR;
    else if (!o || arb__json_set(o, "progress", progress) ||
             arb__json_set(o, "annotator", arb__json_name(annotator))) {
        if (!o) json_decref(progress);
        code = TASK_NOMEM;
    }
    if (code) {
        json_decref(o);
        return fail_transaction(srv, code, "reading the progress");
    }
    arb__store_end_read(srv->store);
    return reply_json(200, o);
}

/* ---- routing ----------------------------------------------------------------------------- */

static const struct static_file {
    const char *path;
    const arb__webapp_file *table;
    const char *name;
    const char *content_type;
} static_files[] = {
    {"/", arb__webapp_html, "index", "text/html; charset=utf-8"},
    {"/index.html", arb__webapp_html, "index", "text/html; charset=utf-8"},
    {"/app.css", arb__webapp_css, "app", "text/css; charset=utf-8"},
    {"/app.js", arb__webapp_js, "app", "text/javascript; charset=utf-8"},
};

static enum MHD_Result send_static(struct MHD_Connection *conn, const struct static_file *f)
{
    const char *text = NULL;
    for (const arb__webapp_file *e = f->table; e->name; e++)
        if (!strcmp(e->name, f->name)) text = e->text;
    if (!text) return send_reply(conn, reply_error(404, "not found"), NULL, NULL);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    add_common_headers(resp, f->content_type);
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* The API endpoints that need the token, each with its method. */
enum { API_NEXT, API_LABEL, API_PROGRESS };

static enum MHD_Result handle_api(arb_annotate_server *srv, struct MHD_Connection *conn,
                                  int endpoint, const arb__upload *rq)
{
    if (!request_authorized(srv, conn))
        return send_reply(conn, reply_error(401, "missing or wrong token: sign in (POST "
                                                 "/api/login) or send it as \"Authorization: "
                                                 "Bearer <token>\""), NULL, NULL);
    reply r;
    char *annotator = NULL;
    if (request_annotator(srv, conn, &annotator, &r)) return send_reply(conn, r, NULL, NULL);
    label_request lr;
    if (endpoint == API_LABEL && parse_label(rq, &lr, &r)) {
        free(annotator);
        return send_reply(conn, r, NULL, NULL);
    }
    pthread_mutex_lock(&srv->lock);
    r = endpoint == API_NEXT    ? do_next(srv, annotator)
        : endpoint == API_LABEL ? do_label(srv, annotator, &lr)
                                : do_progress(srv, annotator);
    pthread_mutex_unlock(&srv->lock);
    free(annotator);
    return send_reply(conn, r, NULL, NULL);
}

/* Answers a whole request (rq: its body). */
static enum MHD_Result route(arb_annotate_server *srv, struct MHD_Connection *conn,
                             const char *url, const char *method, const arb__upload *rq)
{
    int get = !strcmp(method, MHD_HTTP_METHOD_GET);
    int head = !strcmp(method, MHD_HTTP_METHOD_HEAD);
    int post = !strcmp(method, MHD_HTTP_METHOD_POST);
    for (size_t i = 0; i < sizeof static_files / sizeof static_files[0]; i++) {
        if (strcmp(url, static_files[i].path)) continue;
        if (!get && !head)
            return send_reply(conn, reply_error(405, "use GET for %s", url), "GET, HEAD", NULL);
        return send_static(conn, &static_files[i]);
    }
    static const struct {
        const char *path;
        int endpoint; /* -1: login */
        int post;
    } api[] = {{"/api/login", -1, 1},
               {"/api/next", API_NEXT, 0},
               {"/api/label", API_LABEL, 1},
               {"/api/progress", API_PROGRESS, 0}};
    for (size_t i = 0; i < sizeof api / sizeof api[0]; i++) {
        if (strcmp(url, api[i].path)) continue;
        const char *foreign = cross_site_problem(conn);
        if (foreign) return send_reply(conn, reply_error(403, "%s", foreign), NULL, NULL);
        if (api[i].post ? !post : !get)
            return send_reply(conn, reply_error(405, "use %s for %s", api[i].post ? "POST" : "GET",
                                                url),
                              api[i].post ? "POST" : "GET", NULL);
        if (post && !body_is_json(conn))
            return send_reply(conn, reply_error(415, "the body must be sent as Content-Type: "
                                                     "application/json"), NULL, NULL);
        if (rq->too_big)
            return send_reply(conn, reply_error(413, "the body is larger than %zu bytes",
                                                ANNOTATE_MAX_BODY), NULL, NULL);
        if (api[i].endpoint < 0) return handle_login(srv, conn, rq);
        return handle_api(srv, conn, api[i].endpoint, rq);
    }
    return send_reply(conn, reply_error(404, "not found"), NULL, NULL);
}

/* ---- connections and their deadlines ------------------------------------------------------ */

static long long monotonic_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Gives the connection ANNOTATE_REQUEST_DEADLINE_MS from now (arm nonzero), or no deadline. */
static void set_deadline(arb_annotate_server *srv, struct MHD_Connection *conn, int arm)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    live_conn *lc = info ? info->socket_context : NULL;
    if (!lc) return;
    pthread_mutex_lock(&srv->conns_lock);
    lc->deadline_ms = arm ? monotonic_ms() + ANNOTATE_REQUEST_DEADLINE_MS : 0;
    pthread_mutex_unlock(&srv->conns_lock);
}

/* MHD_OPTION_NOTIFY_CONNECTION: keeps srv->conns, each accepted connection with its deadline.
** libmicrohttpd calls CLOSED before it closes the socket, so under conns_lock every fd in the
** list is still the connection's own. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    arb_annotate_server *srv = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!info) return;
        live_conn *lc = calloc(1, sizeof *lc);
        if (!lc) { /* cannot watch it: do not serve it */
            shutdown(info->connect_fd, SHUT_RDWR);
            return;
        }
        lc->fd = info->connect_fd;
        pthread_mutex_lock(&srv->conns_lock);
        lc->deadline_ms = monotonic_ms() + ANNOTATE_REQUEST_DEADLINE_MS;
        lc->next = srv->conns;
        if (srv->conns) srv->conns->prev = lc;
        srv->conns = lc;
        pthread_mutex_unlock(&srv->conns_lock);
        *socket_context = lc;
        return;
    }
    live_conn *lc = *socket_context;
    if (!lc) return;
    pthread_mutex_lock(&srv->conns_lock);
    if (lc->prev) lc->prev->next = lc->next;
    else srv->conns = lc->next;
    if (lc->next) lc->next->prev = lc->prev;
    pthread_mutex_unlock(&srv->conns_lock);
    free(lc);
    *socket_context = NULL;
}

/* The sweeper thread: every ANNOTATE_SWEEP_MS, shuts down the sockets of the connections past
** their deadline, until srv->stopping. */
static void *sweep(void *arg)
{
    arb_annotate_server *srv = arg;
    pthread_mutex_lock(&srv->conns_lock);
    while (!srv->stopping) {
        long long now = monotonic_ms();
        for (live_conn *lc = srv->conns; lc; lc = lc->next)
            if (lc->deadline_ms && now >= lc->deadline_ms) {
                shutdown(lc->fd, SHUT_RDWR);
                lc->deadline_ms = 0; /* once is enough */
            }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += ANNOTATE_SWEEP_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&srv->sweep_wake, &srv->conns_lock, &until);
    }
    pthread_mutex_unlock(&srv->conns_lock);
    return NULL;
}

/* Nonzero when the raw URL (as received, before decoding) holds a control character, raw or
** percent-encoded: C0, or DEL. */
static int url_has_control(const char *uri)
{
    for (const char *p = uri; *p; p++) {
        int c = (unsigned char)*p;
        if (c == '%') {
            int hi = hex_value(p[1]), lo = hi < 0 ? -1 : hex_value(p[2]);
            if (lo >= 0) c = hi * 16 + lo;
        }
        if (c < 0x20 || c == 0x7F) return 1;
    }
    return 0;
}

/* MHD_OPTION_URI_LOG_CALLBACK: called with the raw URL once the request line has come; its
** result is the request's first *req_cls. NULL (out of memory) closes the connection. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    request_state *rs = calloc(1, sizeof *rs);
    if (rs) rs->control_in_url = url_has_control(uri);
    return rs;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    arb_annotate_server *srv = cls;
    request_state *rs = *req_cls;
    if (!rs) return MHD_NO;
    arb__upload *rq = NULL;
    int more = arb__upload_step(&rs->upload, ANNOTATE_MAX_BODY, upload_data, upload_data_size,
                                &rq);
    if (more) return more > 0 ? MHD_YES : MHD_NO;
    /* The request is in: no deadline while it is answered, then one for sending the reply. */
    set_deadline(srv, conn, 0);
    enum MHD_Result ret =
        rs->control_in_url
            ? send_reply(conn, reply_error(400, "the URL contains a control character"), NULL,
                         NULL)
            : route(srv, conn, url, method, rq);
    set_deadline(srv, conn, 1);
    return ret;
}

/* MHD_OPTION_NOTIFY_COMPLETED: frees the request's state; the connection has the deadline
** again, for its next request. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    request_state *rs = *req_cls;
    if (rs) {
        arb__upload_free(&rs->upload);
        free(rs);
        *req_cls = NULL;
    }
    set_deadline(cls, conn, 1);
}

/* ---- lifecycle --------------------------------------------------------------------------- */

/* The defaults: 127.0.0.1:8765, overlap 1, seed 20261123, lease 30 minutes, no token (the
** caller must give one), no default annotator, every side-by-side pair of the store. */
arb_annotate_params arb_annotate_default_params(void)
{
    arb_annotate_params p;
    memset(&p, 0, sizeof p);
    p.bind_address = "127.0.0.1";
    p.port = 8765;
    p.overlap = 1;
    p.seed = 20261123ULL;
    p.lease_minutes = 30;
    return p;
}


/* Checks the parameters; on failure sets *errmsg and returns ARB_INVALID. */
static arb_status check_params(const arb_annotate_params *p, char **errmsg)
{
    size_t token_len = p->token ? strlen(p->token) : 0;
    if (token_len < ANNOTATE_MIN_TOKEN || token_len > ANNOTATE_MAX_TOKEN) {
        arb__set_err(errmsg, "annotate: the token must be %d to %d characters long (got %zu)",
                ANNOTATE_MIN_TOKEN, ANNOTATE_MAX_TOKEN, token_len);
        return ARB_INVALID;
    }
    for (size_t i = 0; i < token_len; i++) {
        unsigned char c = (unsigned char)p->token[i];
        if (c < 0x21 || c == 0x7F) { /* it travels in headers and cookies */
            arb__set_err(errmsg, "annotate: the token must not contain spaces or control characters");
            return ARB_INVALID;
        }
    }
    if (p->annotator) {
        const char *problem = annotator_problem(p->annotator, strlen(p->annotator));
        if (problem) {
            arb__set_err(errmsg, "annotate: the default annotator name %s", problem);
            return ARB_INVALID;
        }
    }
    if (p->overlap < 1 || p->overlap > ANNOTATE_MAX_OVERLAP) {
        arb__set_err(errmsg, "annotate: overlap must be from 1 to %d, got %d", ANNOTATE_MAX_OVERLAP,
                p->overlap);
        return ARB_INVALID;
    }
    if (p->lease_minutes < 1 || p->lease_minutes > ANNOTATE_MAX_LEASE) {
        arb__set_err(errmsg, "annotate: lease_minutes must be from 1 to %d, got %d",
                ANNOTATE_MAX_LEASE, p->lease_minutes);
        return ARB_INVALID;
    }
    if (p->port < 0 || p->port > 65535) {
        arb__set_err(errmsg, "annotate: port must be from 0 to 65535, got %d", p->port);
        return ARB_INVALID;
    }
    if (p->n_pairs && !p->pairs) {
        arb__set_err(errmsg, "annotate: n_pairs is %zu but no pairs are given", p->n_pairs);
        return ARB_INVALID;
    }
    for (size_t i = 0; i < p->n_pairs; i++) {
        const arb_model_pair *mp = &p->pairs[i];
        if (!mp->first || !*mp->first || !mp->second || !*mp->second ||
            !strcmp(mp->first, mp->second)) {
            arb__set_err(errmsg, "annotate: pair %zu must name two different models (candidate and "
                            "baseline)", i + 1);
            return ARB_INVALID;
        }
    }
    return ARB_OK;
}

/* "what: candidate vs baseline" with the names made safe for a terminal, for *errmsg. */
static void set_pair_err(char **errmsg, const char *what, const char *candidate,
                         const char *baseline, const char *why)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    if (arb__buf_printf(&b, "annotate: %s \"", what) || arb__buf_put_safe(&b, candidate) ||
        arb__buf_puts(&b, "\" vs \"") || arb__buf_put_safe(&b, baseline) ||
        arb__buf_printf(&b, "\" %s", why)) {
        arb__buf_free(&b);
        arb__set_err(errmsg, "annotate: out of memory");
        return;
    }
    if (errmsg) *errmsg = arb__buf_steal(&b);
    arb__buf_free(&b);
}

/* Makes the list of the pairs served, in order: the given ones (each must have at least one
** item answered by both models) or every side-by-side pair of the store. */
static arb_status load_pairs(arb_annotate_server *srv, const arb_annotate_params *p,
                             char **errmsg)
{
    size_t bad;
    arb__annotation_pair_problem problem;
    arb_status st = arb__store_put_annotation_pairs(srv->store, p->pairs, p->n_pairs,
                                                    &srv->n_pairs, &bad, &problem);
    if (st == ARB_INVALID && problem == ARB__PAIR_UNANSWERED)
        set_pair_err(errmsg, "pair", p->pairs[bad].first, p->pairs[bad].second,
                     "has nothing to label: no item has answers from both models (check "
                     "the model names)");
    else if (st == ARB_INVALID && problem == ARB__PAIR_TWICE)
        set_pair_err(errmsg, "pair", p->pairs[bad].first, p->pairs[bad].second,
                     "is given twice");
    else if (st)
        arb__set_err(errmsg, "annotate: %s", arb_store_errmsg(srv->store));
    else if (srv->n_pairs == 0) {
        arb__set_err(errmsg, "annotate: nothing to annotate: the store has no side-by-side "
                             "judgments, and no pairs were given (give them as candidate:baseline)");
        return ARB_INVALID;
    }
    return st;
}

/* How many connections the daemon may hold: ANNOTATE_MAX_CONNECTIONS, or fewer when the
** process may open fewer files (each connection is one), keeping ANNOTATE_SPARE_FILES. */
static unsigned int connection_limit(void)
{
    struct rlimit rl;
    rlim_t limit = ANNOTATE_MAX_CONNECTIONS;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < limit + ANNOTATE_SPARE_FILES)
        limit = rl.rlim_cur > 2 * ANNOTATE_SPARE_FILES ? rl.rlim_cur - ANNOTATE_SPARE_FILES
                                                       : ANNOTATE_SPARE_FILES;
    return (unsigned int)limit;
}

/* Stops the sweeper thread. */
static void stop_sweeper(arb_annotate_server *srv)
{
    pthread_mutex_lock(&srv->conns_lock);
    srv->stopping = 1;
    pthread_cond_signal(&srv->sweep_wake);
    pthread_mutex_unlock(&srv->conns_lock);
    pthread_join(srv->sweeper, NULL);
}

/* Frees everything but the daemon and the sweeper. ready: how many of the server's mutex, the
** connections' mutex and the sweeper's condition were made (0 to 3). */
static void server_free(arb_annotate_server *srv, int ready)
{
    if (!srv) return;
    arb__store_close_annotation_tasks(srv->tasks);
    arb_store_close(srv->store);
    if (ready > 0) pthread_mutex_destroy(&srv->lock);
    if (ready > 1) pthread_mutex_destroy(&srv->conns_lock);
    if (ready > 2) pthread_cond_destroy(&srv->sweep_wake);
    if (srv->token) {
        volatile char *t = srv->token; /* volatile: the wipe is not optimised away */
        for (size_t i = 0; i < srv->token_len; i++) t[i] = 0;
    }
    free(srv->token);
    free(srv->annotator);
    free(srv);
}

/* Starts the server: see arbiter.h. */
arb_status arb_annotate_start(const char *db_path, const arb_annotate_params *params,
                              arb_annotate_server **out, char **errmsg)
{
    if (errmsg) *errmsg = NULL;
    if (out) *out = NULL;
    if (!db_path || !params || !out) {
        arb__set_err(errmsg, "annotate: missing database path or parameters");
        return ARB_INVALID;
    }
    arb_status st = check_params(params, errmsg);
    if (st) return st;

    int ready = 0, fd = -1, family = AF_INET, sweeping = 0;
    arb_annotate_server *srv = calloc(1, sizeof *srv);
    if (!srv) goto nomem;
    if (pthread_mutex_init(&srv->lock, NULL)) goto nomem;
    ready = 1;
    if (pthread_mutex_init(&srv->conns_lock, NULL)) goto nomem;
    ready = 2;
    pthread_condattr_t cond_attr;
    if (pthread_condattr_init(&cond_attr)) goto nomem;
    int cond_failed = pthread_condattr_setclock(&cond_attr, CLOCK_MONOTONIC) ||
                      pthread_cond_init(&srv->sweep_wake, &cond_attr);
    pthread_condattr_destroy(&cond_attr);
    if (cond_failed) goto nomem;
    ready = 3;
    srv->token_len = strlen(params->token);
    if (!(srv->token = arb__strdup(params->token))) goto nomem;
    if (params->annotator && !(srv->annotator = arb__strdup(params->annotator))) goto nomem;
    srv->overlap = params->overlap;
    srv->seed = params->seed;
    srv->lease_minutes = params->lease_minutes;

    st = arb_store_open(db_path, &srv->store);
    if (st) {
        arb__set_err(errmsg, "annotate: %s", srv->store ? arb_store_errmsg(srv->store)
                                                   : arb_strerror(st));
        goto fail;
    }
    /* Requests queue behind srv->lock: a database locked by another program must answer 503
    ** soon, not hold everyone up for the store's default wait. */
    arb__store_set_busy_timeout(srv->store, ANNOTATE_BUSY_TIMEOUT_MS);
    if ((st = load_pairs(srv, params, errmsg))) goto fail;
    /* after the pairs: the task statements read temp.annotate_pairs */
    st = arb__store_open_annotation_tasks(srv->store, params->lease_minutes, params->overlap,
                                          &srv->tasks);
    if (st) {
        arb__set_err(errmsg, "annotate: %s", st == ARB_NOMEM ? "out of memory"
                                                           : arb_store_errmsg(srv->store));
        goto fail;
    }

    const char *address = params->bind_address ? params->bind_address : "127.0.0.1";
    fd = arb__listen(address, params->port, "annotate: ", &family, &srv->port, errmsg);
    if (fd < 0) {
        st = ARB_IO;
        goto fail;
    }
    if (pthread_create(&srv->sweeper, NULL, sweep, srv)) {
        arb__set_err(errmsg, "annotate: cannot start a thread");
        st = ARB_IO;
        goto fail;
    }
    sweeping = 1;
    /* A thread per connection: a slow client (reading or sending slowly) must not hold up the
    ** others. Idle connections are closed after 15 s, slow ones after 10 s (the sweeper), and
    ** one address may hold 16 of the 1024, so slow or hostile clients from fewer than 64
    ** addresses cannot lock everyone out (a browser opens at most 6). */
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                         MHD_USE_AUTO | MHD_USE_ITC;
    if (family == AF_INET6) flags |= MHD_USE_IPv6;
    srv->daemon = MHD_start_daemon(
        flags, (uint16_t)srv->port, NULL, NULL, on_request, srv, MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, srv, MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)ANNOTATE_CONNECTION_TIMEOUT,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit(), MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned int)ANNOTATE_MAX_PER_ADDRESS, MHD_OPTION_END);
    if (!srv->daemon) {
        arb__set_err(errmsg, "annotate: cannot start the HTTP daemon on %s port %d", address,
                srv->port);
        st = ARB_IO;
        goto fail;
    }
    *out = srv;
    return ARB_OK;

nomem:
    arb__set_err(errmsg, "annotate: out of memory");
    st = ARB_NOMEM;
fail:
    if (fd >= 0) close(fd);
    if (sweeping) stop_sweeper(srv);
    server_free(srv, ready);
    return st;
}

/* Returns the port the server listens on (the chosen one when params->port was 0). */
int arb_annotate_port(const arb_annotate_server *srv) { return srv ? srv->port : 0; }

/* Stops the daemon (waiting for requests in progress), closes the store and frees everything.
** Accepts NULL. */
void arb_annotate_stop(arb_annotate_server *srv)
{
    if (!srv) return;
    MHD_stop_daemon(srv->daemon); /* also closes the listening socket and every connection */
    stop_sweeper(srv);
    server_free(srv, 3);
}

/* See arbiter.h. */
size_t arb_annotate_pair_count(const arb_annotate_server *srv) { return srv ? srv->n_pairs : 0; }
