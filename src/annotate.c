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

#define NOW_SQL "strftime('%Y-%m-%dT%H:%M:%fZ','now')"
/* Open tasks assigned after this moment hold their item (?2 is "-N minutes"). */
#define CUTOFF_SQL "strftime('%Y-%m-%dT%H:%M:%fZ','now',?2)"

#define CSP "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; " \
            "frame-ancestors 'none'"

/* Parameters of the statements below: ?1 annotator, ?2 lease ("-30 minutes"), ?3 overlap,
** ?4 item, ?5 candidate, ?6 baseline, ?7 shown order / task id / outcome. */

/* The (pair, item) tasks annotator ?1 could still be given. */
#define ELIGIBLE_SQL                                                                         \
    " FROM temp.annotate_pairs p CROSS JOIN items i"                                         \
    " WHERE EXISTS (SELECT 1 FROM answers a WHERE a.item_id = i.id AND a.model = p.candidate)" \
    " AND EXISTS (SELECT 1 FROM answers a WHERE a.item_id = i.id AND a.model = p.baseline)"  \
    " AND NOT EXISTS (SELECT 1 FROM annotation_tasks t WHERE t.item_id = i.id"               \
    "   AND t.candidate = p.candidate AND t.baseline = p.baseline AND t.annotator = ?1)"     \
    " AND NOT EXISTS (SELECT 1 FROM human_labels l WHERE l.item_id = i.id"                   \
    "   AND l.candidate = p.candidate AND l.baseline = p.baseline AND l.annotator = ?1)"     \
    " AND (SELECT count(*) FROM human_labels l WHERE l.item_id = i.id"                       \
    "   AND l.candidate = p.candidate AND l.baseline = p.baseline)"                          \
    "   + (SELECT count(*) FROM annotation_tasks t WHERE t.item_id = i.id"                   \
    "   AND t.candidate = p.candidate AND t.baseline = p.baseline AND t.outcome IS NULL"     \
    "   AND t.assigned_at > " CUTOFF_SQL ") < ?3"

enum {
    Q_OWN_OPEN,
    Q_HELD_BY_OTHERS,
    Q_RENEW,
    Q_RELEASE,
    Q_NEXT,
    Q_COUNT_ELIGIBLE,
    Q_INSERT_TASK,
    Q_CONTENT,
    Q_GET_TASK,
    Q_FINISH_TASK,
    Q_PUT_LABEL,
    Q_PROGRESS,
    Q__COUNT
};

static const char *const query_sql[Q__COUNT] = {
    [Q_OWN_OPEN] =
        "SELECT t.id, t.item_id, t.candidate, t.baseline, t.assigned_at > " CUTOFF_SQL
        " FROM annotation_tasks t JOIN temp.annotate_pairs p"
        " ON p.candidate = t.candidate AND p.baseline = t.baseline"
        " WHERE t.annotator = ?1 AND t.outcome IS NULL ORDER BY p.pos, t.id LIMIT 1",
    [Q_HELD_BY_OTHERS] =
        "SELECT (SELECT count(*) FROM human_labels l WHERE l.item_id = ?4 AND l.candidate = ?5"
        "  AND l.baseline = ?6 AND l.annotator <> ?1)"
        " + (SELECT count(*) FROM annotation_tasks t WHERE t.item_id = ?4 AND t.candidate = ?5"
        "  AND t.baseline = ?6 AND t.annotator <> ?1 AND t.outcome IS NULL"
        "  AND t.assigned_at > " CUTOFF_SQL ")",
    [Q_RENEW] = "UPDATE annotation_tasks SET assigned_at = " NOW_SQL " WHERE id = ?7",
    [Q_RELEASE] = "DELETE FROM annotation_tasks WHERE id = ?7 AND outcome IS NULL",
    [Q_NEXT] = "SELECT p.candidate, p.baseline, i.id" ELIGIBLE_SQL
               " ORDER BY p.pos, i.seq, i.id LIMIT 1",
    [Q_COUNT_ELIGIBLE] = "SELECT count(*)" ELIGIBLE_SQL,
    [Q_INSERT_TASK] = "INSERT INTO annotation_tasks(item_id, candidate, baseline, annotator,"
                      " shown_order) VALUES (?4, ?5, ?6, ?1, ?7)",
    [Q_CONTENT] = "SELECT i.question, i.reference, c.answer, b.answer FROM items i"
                  " JOIN answers c ON c.item_id = i.id AND c.model = ?5"
                  " JOIN answers b ON b.item_id = i.id AND b.model = ?6 WHERE i.id = ?4",
    [Q_GET_TASK] = "SELECT item_id, candidate, baseline, annotator, shown_order, outcome,"
                   " assigned_at > " CUTOFF_SQL " FROM annotation_tasks WHERE id = ?7",
    [Q_FINISH_TASK] = "UPDATE annotation_tasks SET finished_at = " NOW_SQL ", outcome = ?1"
                      " WHERE id = ?7 AND outcome IS NULL",
    /* ?1 annotator, ?2 verdict, ?3 shown order, ?4..?6 the pair, ?7 time_ms */
    [Q_PUT_LABEL] =
        "INSERT INTO human_labels(item_id, candidate, baseline, verdict, annotator, shown_order,"
        " time_ms, source) VALUES (?4, ?5, ?6, ?2, ?1, ?3, ?7, 'ui')"
        " ON CONFLICT(item_id, candidate, baseline, annotator) DO UPDATE SET"
        " verdict = excluded.verdict, shown_order = excluded.shown_order,"
        " time_ms = excluded.time_ms, source = excluded.source, imported_at = " NOW_SQL,
    [Q_PROGRESS] =
        "SELECT coalesce(sum(t.outcome = 'label'), 0), coalesce(sum(t.outcome = 'skip'), 0),"
        " coalesce(sum(t.outcome IS NULL), 0)"
        " FROM annotation_tasks t JOIN temp.annotate_pairs p"
        " ON p.candidate = t.candidate AND p.baseline = t.baseline WHERE t.annotator = ?1",
};

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
    pthread_mutex_t lock; /* guards store and stmt */
    arb_store *store;
    sqlite3 *db;          /* the store's connection (borrowed) */
    sqlite3_stmt *stmt[Q__COUNT];
    char *token;
    size_t token_len;
    char *annotator;      /* default name, or NULL */
    int overlap;
    unsigned long long seed;
    char lease[32];       /* SQLite time modifier, "-30 minutes" */
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

static void bind_text(sqlite3_stmt *q, int i, const char *s)
{
    if (s) sqlite3_bind_text(q, i, s, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(q, i);
}

/* The statement k, reset, with ?1 annotator, ?2 lease and ?3 overlap bound where it has them
** (binding a parameter a statement lacks is a harmless SQLITE_RANGE). */
static sqlite3_stmt *query(arb_annotate_server *srv, int k, const char *annotator)
{
    sqlite3_stmt *q = srv->stmt[k];
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    bind_text(q, 1, annotator);
    bind_text(q, 2, srv->lease);
    sqlite3_bind_int(q, 3, srv->overlap);
    return q;
}

static void bind_task(sqlite3_stmt *q, const char *item, const char *candidate,
                      const char *baseline)
{
    bind_text(q, 4, item);
    bind_text(q, 5, candidate);
    bind_text(q, 6, baseline);
}

static const char *column_text(sqlite3_stmt *q, int col)
{
    const char *s = (const char *)sqlite3_column_text(q, col);
    return s ? s : "";
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
    int busy = (sqlite3_errcode(srv->db) & 0xFF) == SQLITE_BUSY;
    if (busy)
        return reply_error(503, "the database is busy (another program is writing to it); "
                                "try again in a moment");
    return reply_error(500, "database error while %s: %s", what, sqlite3_errmsg(srv->db));
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
    sqlite3_stmt *q = query(srv, Q_PROGRESS, annotator);
    if (sqlite3_step(q) != SQLITE_ROW) return NULL;
    long long labelled = sqlite3_column_int64(q, 0), skipped = sqlite3_column_int64(q, 1);
    long long open = sqlite3_column_int64(q, 2);
    sqlite3_reset(q);
    q = query(srv, Q_COUNT_ELIGIBLE, annotator);
    if (sqlite3_step(q) != SQLITE_ROW) return NULL;
    long long eligible = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    json_t *o = json_pack("{s:I, s:I, s:I}", "labelled", (json_int_t)labelled, "skipped",
                          (json_int_t)skipped, "remaining", (json_int_t)(open + eligible));
    if (!o) *nomem = 1;
    return o;
}

/* One task as the annotator sees it. Strings are owned. */
typedef struct task_ref {
    long long id;
    char *item, *candidate, *baseline;
} task_ref;

static void task_ref_free(task_ref *t)
{
    free(t->item);
    free(t->candidate);
    free(t->baseline);
    memset(t, 0, sizeof *t);
}

/* Copies the strings of row q (columns first..first+2) into t. Returns 0, or -1 when out of
** memory. */
static int task_ref_fill(task_ref *t, sqlite3_stmt *q, int first)
{
    t->item = arb__strdup(column_text(q, first));
    t->candidate = arb__strdup(column_text(q, first + 1));
    t->baseline = arb__strdup(column_text(q, first + 2));
    return t->item && t->candidate && t->baseline ? 0 : -1;
}

/* Failures of the task functions (a database error's message is in the connection). */
enum { TASK_DB_ERROR = -1, TASK_NOMEM = -2, TASK_GONE = -3 };

/* Inside the caller's write transaction: finds the annotator's open task or assigns the next
** one (see the file comment). Returns 1 with *t filled, 0 when nothing is left, or TASK_*. */
static int find_or_assign(arb_annotate_server *srv, const char *annotator, task_ref *t)
{
    memset(t, 0, sizeof *t);
    for (;;) { /* at most twice: an expired own task may be released */
        sqlite3_stmt *q = query(srv, Q_OWN_OPEN, annotator);
        int rc = sqlite3_step(q);
        if (rc == SQLITE_DONE) break;
        if (rc != SQLITE_ROW) return TASK_DB_ERROR;
        t->id = sqlite3_column_int64(q, 0);
        int live = sqlite3_column_int(q, 4);
        if (task_ref_fill(t, q, 1)) return TASK_NOMEM;
        sqlite3_reset(q);
        long long held = 0;
        if (!live) { /* expired: still ours unless the others filled the item meanwhile */
            q = query(srv, Q_HELD_BY_OTHERS, annotator);
            bind_task(q, t->item, t->candidate, t->baseline);
            if (sqlite3_step(q) != SQLITE_ROW) return TASK_DB_ERROR;
            held = sqlite3_column_int64(q, 0);
            sqlite3_reset(q);
        }
        q = query(srv, live || held < srv->overlap ? Q_RENEW : Q_RELEASE, annotator);
        sqlite3_bind_int64(q, 7, t->id);
        if (sqlite3_step(q) != SQLITE_DONE) return TASK_DB_ERROR;
        sqlite3_reset(q);
        if (live || held < srv->overlap) return 1;
        task_ref_free(t);
    }

    sqlite3_stmt *q = query(srv, Q_NEXT, annotator);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) return 0;
    if (rc != SQLITE_ROW) return TASK_DB_ERROR;
    /* columns: candidate, baseline, item */
    t->candidate = arb__strdup(column_text(q, 0));
    t->baseline = arb__strdup(column_text(q, 1));
    t->item = arb__strdup(column_text(q, 2));
    sqlite3_reset(q);
    if (!t->item || !t->candidate || !t->baseline) return TASK_NOMEM;
    int order = shown_order_of(srv->seed, t->item, t->candidate, t->baseline, annotator);
    if (order < 0) return TASK_NOMEM;
    q = query(srv, Q_INSERT_TASK, annotator);
    bind_task(q, t->item, t->candidate, t->baseline);
    sqlite3_bind_int(q, 7, order);
    if (sqlite3_step(q) != SQLITE_DONE) return TASK_DB_ERROR;
    sqlite3_reset(q);
    t->id = sqlite3_last_insert_rowid(srv->db);
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
static int task_json(arb_annotate_server *srv, const task_ref *t, json_t **out)
{
    *out = NULL;
    sqlite3_stmt *q = query(srv, Q_GET_TASK, NULL);
    sqlite3_bind_int64(q, 7, t->id);
    int rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) return rc == SQLITE_DONE ? TASK_GONE : TASK_DB_ERROR;
    int order = sqlite3_column_int(q, 4);
    sqlite3_reset(q);
    q = query(srv, Q_CONTENT, NULL);
    bind_task(q, t->item, t->candidate, t->baseline);
    rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) return rc == SQLITE_DONE ? TASK_GONE : TASK_DB_ERROR;
    json_t *o = json_object();
    json_t *answers = json_array();
    int fail = !o || !answers;
    const char *first = column_text(q, order ? 3 : 2), *second = column_text(q, order ? 2 : 3);
    fail = fail || json_array_append_new(answers, shown_text(first)) ||
           json_array_append_new(answers, shown_text(second));
    fail = fail || arb__json_set(o, "task", json_integer(t->id)) ||
           arb__json_set(o, "question", shown_text(column_text(q, 0))) ||
           arb__json_set(o, "reference", sqlite3_column_type(q, 1) == SQLITE_NULL
                                             ? json_null()
                                             : shown_text(column_text(q, 1)));
    sqlite3_reset(q);
    if (fail || arb__json_set(o, "answers", answers)) {
        if (fail) json_decref(answers);
        json_decref(o);
        return TASK_NOMEM;
    }
    *out = o;
    return 0;
}

/* Resets every statement, so none keeps a read open after a failed transaction. */
static void reset_all(arb_annotate_server *srv)
{
    for (int i = 0; i < Q__COUNT; i++) sqlite3_reset(srv->stmt[i]);
}

/* Ends the transaction after a failure in a handler and returns the reply for code. */
static reply fail_transaction(arb_annotate_server *srv, int code, const char *what)
{
    reply r = code == TASK_NOMEM ? reply_error(500, "out of memory")
              : code == TASK_GONE
                  ? reply_error(500, "the item or an answer of this task is no longer in the "
                                     "store")
                  : reply_db_error(srv, what);
    reset_all(srv);
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
    task_ref t;
    json_t *o = NULL;
    int found = find_or_assign(srv, annotator, &t);
    int code = found < 0 ? found : found ? task_json(srv, &t, &o) : 0;
    task_ref_free(&t);
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
    task_ref t;
    memset(&t, 0, sizeof t);
    int code = TASK_DB_ERROR;
    sqlite3_stmt *q = query(srv, Q_GET_TASK, NULL);
    sqlite3_bind_int64(q, 7, lr->task);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        r = reply_error(404, "task %lld does not exist (it may have been given to someone else "
                             "after its lease expired)", lr->task);
        goto refuse;
    }
    if (rc != SQLITE_ROW) goto fail;
    if (strcmp(column_text(q, 3), annotator)) {
        r = reply_error(403, "task %lld belongs to another annotator", lr->task);
        goto refuse;
    }
    if (sqlite3_column_type(q, 5) != SQLITE_NULL) {
        r = reply_error(409, "task %lld is already answered", lr->task);
        goto refuse;
    }
    int order = sqlite3_column_int(q, 4), live = sqlite3_column_int(q, 6);
    if (task_ref_fill(&t, q, 0)) {
        code = TASK_NOMEM;
        goto fail;
    }
    sqlite3_reset(q);
    if (!live) {
        /* Expired: others may have been given the item meanwhile (as find_or_assign counts
        ** them). When they fill it, this verdict would push the item past the overlap. */
        q = query(srv, Q_HELD_BY_OTHERS, annotator);
        bind_task(q, t.item, t.candidate, t.baseline);
        if (sqlite3_step(q) != SQLITE_ROW) goto fail;
        long long held = sqlite3_column_int64(q, 0);
        sqlite3_reset(q);
        if (held >= srv->overlap) {
            q = query(srv, Q_RELEASE, annotator);
            sqlite3_bind_int64(q, 7, lr->task);
            if (sqlite3_step(q) != SQLITE_DONE) goto fail;
            sqlite3_reset(q);
            if (arb__store_commit(srv->store)) goto fail;
            task_ref_free(&t);
            return reply_error(409, "task %lld expired (no answer within %d minutes) and went to "
                                    "someone else; your verdict was not stored", lr->task,
                               srv->lease_minutes);
        }
    }
    if (lr->choice != 'S') {
        char verdict[2] = {arb_verdict_to_model(lr->choice, order), 0};
        q = query(srv, Q_PUT_LABEL, annotator);
        bind_text(q, 2, verdict);
        sqlite3_bind_int(q, 3, order);
        bind_task(q, t.item, t.candidate, t.baseline);
        if (lr->time_ms >= 0) sqlite3_bind_int64(q, 7, lr->time_ms);
        else sqlite3_bind_null(q, 7);
        if (sqlite3_step(q) != SQLITE_DONE) goto fail;
        sqlite3_reset(q);
    }
    q = query(srv, Q_FINISH_TASK, lr->choice == 'S' ? "skip" : "label");
    sqlite3_bind_int64(q, 7, lr->task);
    if (sqlite3_step(q) != SQLITE_DONE) goto fail;
    sqlite3_reset(q);
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
    task_ref_free(&t);
    return reply_json(200, o);
refuse:
    reset_all(srv);
    arb__store_rollback(srv->store);
    task_ref_free(&t);
    return r;
fail:
    task_ref_free(&t);
    return fail_transaction(srv, code, "storing the label");
}

/* GET /api/progress. */
static reply do_progress(arb_annotate_server *srv, const char *annotator)
{
    /* One read transaction, so the counts come from one snapshot. */
    if (sqlite3_exec(srv->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return reply_db_error(srv, "reading the progress");
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
    reset_all(srv);
    sqlite3_exec(srv->db, "COMMIT", NULL, NULL, NULL);
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

/* Fills temp.annotate_pairs with the pairs served, in order: the given ones (each must have at
** least one item answered by both models) or every side-by-side pair of the store. */
static arb_status load_pairs(arb_annotate_server *srv, const arb_annotate_params *p,
                             char **errmsg)
{
    static const char create_sql[] =
        "CREATE TEMP TABLE annotate_pairs (\n"
        "  pos       INTEGER PRIMARY KEY,  -- order in which pairs are served\n"
        "  candidate TEXT NOT NULL,\n"
        "  baseline  TEXT NOT NULL,\n"
        "  UNIQUE (candidate, baseline)\n"
        ")";
    static const char insert_sql[] =
        "INSERT INTO temp.annotate_pairs(candidate, baseline) VALUES (?1, ?2)";
    static const char discover_sql[] =
        "INSERT INTO temp.annotate_pairs(candidate, baseline)"
        " SELECT DISTINCT candidate, baseline FROM pairwise WHERE protocol = 'sbs'"
        " ORDER BY candidate, baseline";
    static const char answered_sql[] =
        "SELECT EXISTS (SELECT 1 FROM answers c JOIN answers b"
        " ON b.item_id = c.item_id AND b.model = ?2 WHERE c.model = ?1)";
    if (sqlite3_exec(srv->db, create_sql, NULL, NULL, NULL) != SQLITE_OK) goto db_error;
    if (!p->n_pairs) {
        if (sqlite3_exec(srv->db, discover_sql, NULL, NULL, NULL) != SQLITE_OK) goto db_error;
        srv->n_pairs = (size_t)sqlite3_changes(srv->db);
        if (srv->n_pairs == 0) {
            arb__set_err(errmsg, "annotate: nothing to annotate: the store has no side-by-side "
                            "judgments, and no pairs were given (give them as candidate:baseline)");
            return ARB_INVALID;
        }
        return ARB_OK;
    }
    sqlite3_stmt *ins = NULL, *answered = NULL;
    if (sqlite3_prepare_v2(srv->db, insert_sql, -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(srv->db, answered_sql, -1, &answered, NULL) != SQLITE_OK) {
        sqlite3_finalize(ins);
        goto db_error;
    }
    arb_status st = ARB_OK;
    for (size_t i = 0; i < p->n_pairs && !st; i++) {
        const char *cand = p->pairs[i].first, *base = p->pairs[i].second;
        sqlite3_reset(answered);
        bind_text(answered, 1, cand);
        bind_text(answered, 2, base);
        int rc = sqlite3_step(answered);
        if (rc != SQLITE_ROW) {
            arb__set_err(errmsg, "annotate: cannot read the answers: %s", sqlite3_errmsg(srv->db));
            st = ARB_DB;
        } else if (!sqlite3_column_int(answered, 0)) {
            set_pair_err(errmsg, "pair", cand, base,
                         "has nothing to label: no item has answers from both models (check "
                         "the model names)");
            st = ARB_INVALID;
        }
        if (st) break;
        sqlite3_reset(ins);
        bind_text(ins, 1, cand);
        bind_text(ins, 2, base);
        rc = sqlite3_step(ins);
        if ((rc & 0xFF) == SQLITE_CONSTRAINT) {
            set_pair_err(errmsg, "pair", cand, base, "is given twice");
            st = ARB_INVALID;
        } else if (rc != SQLITE_DONE) {
            arb__set_err(errmsg, "annotate: cannot record the pairs: %s", sqlite3_errmsg(srv->db));
            st = ARB_DB;
        }
    }
    if (!st) srv->n_pairs = p->n_pairs;
    sqlite3_finalize(ins);
    sqlite3_finalize(answered);
    return st;
db_error:
    arb__set_err(errmsg, "annotate: cannot list the pairs to annotate: %s", sqlite3_errmsg(srv->db));
    return ARB_DB;
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
    for (int i = 0; i < Q__COUNT; i++) sqlite3_finalize(srv->stmt[i]);
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
    snprintf(srv->lease, sizeof srv->lease, "-%d minutes", params->lease_minutes);

    st = arb_store_open(db_path, &srv->store);
    if (st) {
        arb__set_err(errmsg, "annotate: %s", srv->store ? arb_store_errmsg(srv->store)
                                                   : arb_strerror(st));
        goto fail;
    }
    srv->db = arb__store_db(srv->store);
    /* Requests queue behind srv->lock: a database locked by another program must answer 503
    ** soon, not hold everyone up for the store's default wait. */
    sqlite3_busy_timeout(srv->db, ANNOTATE_BUSY_TIMEOUT_MS);
    if ((st = load_pairs(srv, params, errmsg))) goto fail;
    for (int i = 0; i < Q__COUNT; i++)
        if (sqlite3_prepare_v2(srv->db, query_sql[i], -1, &srv->stmt[i], NULL) != SQLITE_OK) {
            arb__set_err(errmsg, "annotate: cannot prepare query %d: %s", i, sqlite3_errmsg(srv->db));
            st = ARB_DB;
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
