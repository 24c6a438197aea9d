/*
** http_plain.c -- the wire side of the plain-HTTP transport: which judge URLs it may take,
** the request head it sends, and a strict incremental HTTP/1.1 reply parser.
**
** http.c sends POSTs to plain http:// judges (local vLLM, llama.cpp, Ollama, the simulator)
** over its own keep-alive sockets instead of libcurl, because libcurl's per-request work cost
** about three times the system calls themselves (bench/README.md "Where arbiter's CPU goes").
** This file knows nothing of sockets or scheduling: it decides eligibility, formats heads and
** parses bytes. Anything it does not understand for sure is left to libcurl (https, proxies,
** user:password@ in the URL, a host that does not resolve) or rejected as a malformed reply.
**
** The parser accepts: a status line "HTTP/1.x SSS reason", header lines ending in CRLF or LF,
** any number of 1xx interim replies before the final one, a body framed by Content-Length, by
** Transfer-Encoding: chunked (extensions and trailers skipped) or, when neither is given, by
** the end of the connection; no body for 204 and 304. It refuses what would make the framing
** ambiguous (two different Content-Lengths, a transfer coding other than chunked, a bad chunk
** size, obs-fold continuation lines) as RFC 9112 §6.3 asks. Header lines longer than
** ARB__H1_MAX_LINE (libcurl's CURL_MAX_HTTP_HEADER, so both transports refuse the same
** replies) and heads over ARB__H1_MAX_HEAD fail as "header too large".
*/
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <curl/curl.h>

#define ARB__H1_MAX_LINE 102400
#define ARB__H1_MAX_HEAD (1 << 20)

/* ---- eligibility and the request head ----------------------------------------------------- */

/* 1 when a proxy variable libcurl would honour for an http:// URL is set (then every plain
** URL goes to libcurl, which also applies NO_PROXY). */
static int proxy_configured(void)
{
    static const char *const names[] = {"http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return 1;
    }
    return 0;
}

/* See internal.h. */
int arb__plain_transport_wanted(int transport)
{
    if (transport == ARB_TRANSPORT_CURL) return 0;
    const char *env = getenv("ARBITER_TRANSPORT");
    if (env && strcmp(env, "curl") == 0) return 0;
    return !proxy_configured();
}

/* See internal.h. */
arb__plain_target *arb__plain_target_create(const char *url)
{
    if (strncmp(url, "http://", 7) != 0) return NULL;
    const char *host = url + 7, *p = host;
    const char *host_end, *port_text = NULL;
    if (*p == '[') { /* [IPv6 literal] */
        const char *close = strchr(p, ']');
        if (!close) return NULL;
        host++;
        host_end = close;
        p = close + 1;
    } else {
        while (*p && *p != ':' && *p != '/' && *p != '?' && *p != '@' && *p != '#') p++;
        host_end = p;
    }
    if (*p == '@') return NULL; /* user:password@: libcurl's business */
    if (*p == ':') {
        port_text = ++p;
        while (*p >= '0' && *p <= '9') p++;
        if (p == port_text || p - port_text > 5) return NULL;
    }
    if (*p && *p != '/' && *p != '?') return NULL;
    const char *path = *p == '/' ? p : "/", *query = *p == '?' ? p : ""; /* "/?q" as libcurl */
    /* Only plain printable ASCII without '#', spaces or '@' anywhere: everything else (and
    ** anything a server could read as another header) stays with libcurl. */
    for (const char *q = url; *q; q++)
        if ((unsigned char)*q <= ' ' || (unsigned char)*q >= 0x7f || *q == '#' || *q == '@' ||
            *q == '\\')
            return NULL;
    size_t host_len = (size_t)(host_end - host);
    if (host_len == 0 || host_len > 253) return NULL;
    char hostname[256], port[8];
    memcpy(hostname, host, host_len);
    hostname[host_len] = '\0';
    long port_no = port_text ? strtol(port_text, NULL, 10) : 80;
    if (port_no < 1 || port_no > 65535) return NULL;
    snprintf(port, sizeof port, "%ld", port_no);

    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    if (getaddrinfo(hostname, port, &hints, &res) != 0 || !res) return NULL;
    arb__plain_target *t = calloc(1, sizeof *t);
    if (!t) goto fail;
    for (struct addrinfo *a = res; a && t->n_addrs < ARB__PLAIN_MAX_ADDRS; a = a->ai_next) {
        if (a->ai_addrlen > sizeof t->addrs[0].sa) continue;
        memcpy(&t->addrs[t->n_addrs].sa, a->ai_addr, a->ai_addrlen);
        t->addrs[t->n_addrs].len = (socklen_t)a->ai_addrlen;
        t->addrs[t->n_addrs].family = a->ai_family;
        t->n_addrs++;
    }
    if (!t->n_addrs) goto fail;
    snprintf(t->host, sizeof t->host, "%s", hostname);
    t->port = (int)port_no;
    /* libcurl's Host header: the port only when not the default, IPv6 literals bracketed. */
    int v6 = host[-1] == '[';
    char host_header[280];
    if (port_no == 80) snprintf(host_header, sizeof host_header, v6 ? "[%s]" : "%s", hostname);
    else snprintf(host_header, sizeof host_header, v6 ? "[%s]:%ld" : "%s:%ld", hostname, port_no);
    t->head = arb__sprintf("POST %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: arbiter/" ARB_VERSION
                           "\r\nContent-Type: application/json\r\nAccept: application/json\r\n",
                           path, query, host_header);
    if (!t->head) goto fail;
    t->head_len = strlen(t->head);
    freeaddrinfo(res);
    return t;
fail:
    freeaddrinfo(res);
    arb__plain_target_destroy(t);
    return NULL;
}

/* See internal.h. */
void arb__plain_target_destroy(arb__plain_target *t)
{
    if (!t) return;
    free(t->head);
    free(t);
}

/* ---- reply parser ------------------------------------------------------------------------ */

enum { ST_HEAD, ST_LENGTH, ST_CHUNK_SIZE, ST_CHUNK_DATA, ST_CHUNK_END, ST_TRAILERS, ST_TO_CLOSE,
       ST_DONE };

/* See internal.h. */
void arb__h1_begin(arb__h1 *r, arb__buf *body)
{
    arb__buf_reset(&r->head);
    r->head.max = ARB__H1_MAX_HEAD + 1;
    r->body = body;
    r->state = ST_HEAD;
    r->status = 0;
    r->keep_alive = 1;
    r->retry_after_ms = -1;
    r->remaining = 0;
    r->scanned = 0;
    r->got_bytes = 0;
}

/* Retry-After: delta-seconds or an HTTP-date, as milliseconds from now; -1 when neither. */
double arb__retry_after_ms(const char *value, size_t len)
{
    char v[128];
    while (len && (*value == ' ' || *value == '\t')) value++, len--;
    while (len && (value[len - 1] == ' ' || value[len - 1] == '\t' || value[len - 1] == '\r' ||
                   value[len - 1] == '\n'))
        len--;
    if (!len || len >= sizeof v) return -1;
    memcpy(v, value, len);
    v[len] = '\0';
    if (v[0] >= '0' && v[0] <= '9') {
        char *stop;
        double seconds = strtod(v, &stop);
        return *stop == '\0' ? seconds * 1000.0 : -1;
    }
    time_t when = curl_getdate(v, NULL);
    if (when == (time_t)-1) return -1;
    double delta = difftime(when, time(NULL));
    return delta > 0 ? delta * 1000.0 : 0;
}

#define name_is(line, name_len, name) \
    ((name_len) == sizeof(name) - 1 && strncasecmp((line), (name), sizeof(name) - 1) == 0)

/* 1 when the comma-separated value list holds token (case-insensitive). */
static int list_has(const char *v, size_t n, const char *token)
{
    size_t tl = strlen(token), i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
        size_t s = i;
        while (i < n && v[i] != ',') i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
        if (e - s == tl && strncasecmp(v + s, token, tl) == 0) return 1;
    }
    return 0;
}

/* Where the head in h[0..hl) ends (after its blank line), looking from *line_start (the start
** of a line) on; 0 when it does not end there yet (*line_start is then the start of the last,
** unfinished line). One memchr per line. -1 when a line is longer than ARB__H1_MAX_LINE. */
static long head_end(const char *h, size_t hl, size_t *line_start)
{
    size_t start = *line_start;
    const char *nl;
    while ((nl = memchr(h + start, '\n', hl - start))) {
        size_t i = (size_t)(nl - h);
        if (i - start > ARB__H1_MAX_LINE) return -1;
        if ((i >= 1 && h[i - 1] == '\n') || (i >= 2 && h[i - 1] == '\r' && h[i - 2] == '\n'))
            return (long)(i + 1);
        start = i + 1;
    }
    *line_start = start;
    return 0;
}

/* Parses the complete head h[0..hl) (terminated by its blank line). */
static int parse_head(arb__h1 *r, const char *h, size_t hl)
{
    const char *p = h, *end = p + hl;
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)(eol - p);
    if (n && p[n - 1] == '\r') n--;
    /* "HTTP/1.x SSS" then optionally " reason" */
    if (n < 12 || memcmp(p, "HTTP/1.", 7) || (p[7] != '0' && p[7] != '1') || p[8] != ' ' ||
        !isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) ||
        !isdigit((unsigned char)p[11]) || (n > 12 && p[12] != ' '))
        return ARB__H1_BAD;
    int http10 = p[7] == '0', has_coding = 0;
    r->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    if (r->status < 100) return ARB__H1_BAD;
    int chunked = 0, close = http10, has_length = 0;
    long long length = -1;
    double retry_after = -1;
    for (p = eol + 1; p < end;) {
        eol = memchr(p, '\n', (size_t)(end - p));
        n = (size_t)(eol - p);
        if (n && p[n - 1] == '\r') n--;
        if (n == 0) break; /* the blank line */
        if (p[0] == ' ' || p[0] == '\t') return ARB__H1_BAD; /* obs-fold */
        const char *colon = memchr(p, ':', n);
        if (!colon || colon == p) return ARB__H1_BAD;
        size_t nl = (size_t)(colon - p);
        for (size_t i = 0; i < nl; i++)
            if (p[i] <= ' ' || p[i] >= 0x7f) return ARB__H1_BAD;
        const char *v = colon + 1;
        size_t vl = n - nl - 1;
        while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
        while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t')) vl--;
        if (name_is(p, nl, "content-length")) {
            long long x = 0;
            if (!vl) return ARB__H1_BAD;
            for (size_t i = 0; i < vl; i++) {
                if (!isdigit((unsigned char)v[i]) || x > (LLONG_MAX - 9) / 10) return ARB__H1_BAD;
                x = x * 10 + (v[i] - '0');
            }
            if (has_length && x != length) return ARB__H1_BAD;
            has_length = 1;
            length = x;
        } else if (name_is(p, nl, "transfer-encoding")) {
            has_coding = 1;
            /* Only "chunked" (identity is obsolete but harmless). */
            for (size_t i = 0, s; i < vl;) {
                while (i < vl && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
                s = i;
                while (i < vl && v[i] != ',' && v[i] != ' ' && v[i] != '\t') i++;
                if (i == s) continue;
                if (i - s == 7 && strncasecmp(v + s, "chunked", 7) == 0) chunked = 1;
                else if (!(i - s == 8 && strncasecmp(v + s, "identity", 8) == 0))
                    return ARB__H1_BAD;
            }
        } else if (name_is(p, nl, "connection")) {
            if (list_has(v, vl, "close")) close = 1;
            else if (http10 && list_has(v, vl, "keep-alive")) close = 0;
        } else if (name_is(p, nl, "retry-after")) {
            double ms = arb__retry_after_ms(v, vl);
            if (ms >= 0) retry_after = ms;
        }
        p = eol + 1;
    }
    if (r->status < 200) { /* interim reply: wait for the real one */
        if (r->status == 101) return ARB__H1_BAD;
        return ARB__H1_MORE;
    }
    r->retry_after_ms = retry_after;
    /* A transfer coding in HTTP/1.0 is faulty framing: end the connection after (RFC 9112 §6.1) */
    r->keep_alive = !close && !(http10 && has_coding);
    if (r->status == 204 || r->status == 304) r->state = ST_DONE;
    else if (chunked) {
        r->state = ST_CHUNK_SIZE;
        r->keep_alive = r->keep_alive && !has_length; /* both: trust neither for reuse */
    } else if (has_length) {
        r->remaining = length;
        r->state = length ? ST_LENGTH : ST_DONE;
    } else {
        r->state = ST_TO_CLOSE;
        r->keep_alive = 0;
    }
    return ARB__H1_MORE;
}

static int body_append(arb__h1 *r, const char *p, size_t n)
{
    if (r->body->len + n > r->body->max) return ARB__H1_TOOBIG;
    return arb__buf_append(r->body, p, n) ? ARB__H1_NOMEM : ARB__H1_MORE;
}

/* Reads a line for the chunked framing (sizes, chunk ends, trailers) into r->head. Returns
** ARB__H1_MORE with *line_len set when a whole line is there (its terminator consumed),
** ARB__H1_MORE with *line_len = -1 when more bytes are needed, or an error. */
static int chunk_line(arb__h1 *r, const char **p, const char *end, long *line_len)
{
    const char *eol = memchr(*p, '\n', (size_t)(end - *p));
    size_t take = eol ? (size_t)(eol - *p) + 1 : (size_t)(end - *p);
    if (r->head.len + take > 4096) return ARB__H1_BAD; /* a framing line is short */
    if (arb__buf_append(&r->head, *p, take)) return ARB__H1_NOMEM;
    *p += take;
    if (!eol) {
        *line_len = -1;
        return ARB__H1_MORE;
    }
    size_t n = r->head.len - 1;
    if (n && r->head.data[n - 1] == '\r') n--;
    *line_len = (long)n;
    return ARB__H1_MORE;
}

/* See internal.h. */
int arb__h1_feed(arb__h1 *r, const char *data, size_t len, size_t *used)
{
    const char *p = data, *end = data + len;
    int rc = ARB__H1_MORE;
    if (len) r->got_bytes = 1;
    while (p < end && rc == ARB__H1_MORE && r->state != ST_DONE) {
        switch (r->state) {
        case ST_HEAD: {
            if (!r->head.len) {
                /* The whole head in this read (the usual case): parsed where it lies, not
                ** copied. */
                size_t avail = (size_t)(end - p), line_start = 0;
                if (avail > ARB__H1_MAX_HEAD + 1) avail = ARB__H1_MAX_HEAD + 1;
                long in_place = head_end(p, avail, &line_start);
                if (in_place < 0) return ARB__H1_HEAD_TOOBIG;
                if (in_place > 0) {
                    rc = parse_head(r, p, (size_t)in_place);
                    p += in_place;
                    break;
                }
            }
            /* Append up to the end of the head if it is in sight, else everything. */
            size_t old = r->head.len;
            size_t take = (size_t)(end - p);
            if (old + take > ARB__H1_MAX_HEAD) take = ARB__H1_MAX_HEAD + 1 - old;
            if (arb__buf_append(&r->head, p, take)) return ARB__H1_NOMEM;
            const char *h = r->head.data;
            size_t hl = r->head.len, line_start = r->scanned;
            long found = head_end(h, hl, &line_start);
            if (found < 0) return ARB__H1_HEAD_TOOBIG;
            size_t stop = (size_t)found;
            if (!stop) {
                if (hl - line_start > ARB__H1_MAX_LINE || hl > ARB__H1_MAX_HEAD)
                    return ARB__H1_HEAD_TOOBIG;
                r->scanned = line_start;
                p += take;
                break;
            }
            p += stop - old; /* the body starts after the blank line */
            rc = parse_head(r, r->head.data, stop);
            arb__buf_reset(&r->head);
            r->scanned = 0;
            break;
        }
        case ST_LENGTH: {
            size_t n = (size_t)(end - p);
            if ((long long)n > r->remaining) n = (size_t)r->remaining;
            rc = body_append(r, p, n);
            p += n;
            r->remaining -= (long long)n;
            if (!r->remaining) r->state = ST_DONE;
            break;
        }
        case ST_TO_CLOSE:
            rc = body_append(r, p, (size_t)(end - p));
            p = end;
            break;
        case ST_CHUNK_SIZE: {
            long line;
            rc = chunk_line(r, &p, end, &line);
            if (rc != ARB__H1_MORE || line < 0) break;
            const char *s = r->head.data;
            long long size = 0;
            long i = 0;
            for (; i < line && isxdigit((unsigned char)s[i]); i++) {
                if (size > (LLONG_MAX >> 4)) return ARB__H1_BAD;
                size = size * 16 + (isdigit((unsigned char)s[i]) ? s[i] - '0'
                                                                 : (tolower((unsigned char)s[i]) - 'a' + 10));
            }
            while (i < line && (s[i] == ' ' || s[i] == '\t')) i++;
            if (i == 0 || (i < line && s[i] != ';')) return ARB__H1_BAD;
            arb__buf_reset(&r->head);
            r->remaining = size;
            r->state = size ? ST_CHUNK_DATA : ST_TRAILERS;
            break;
        }
        case ST_CHUNK_DATA: {
            size_t n = (size_t)(end - p);
            if ((long long)n > r->remaining) n = (size_t)r->remaining;
            rc = body_append(r, p, n);
            p += n;
            r->remaining -= (long long)n;
            if (!r->remaining) r->state = ST_CHUNK_END;
            break;
        }
        case ST_CHUNK_END: {
            long line;
            rc = chunk_line(r, &p, end, &line);
            if (rc != ARB__H1_MORE || line < 0) break;
            if (line != 0) return ARB__H1_BAD;
            arb__buf_reset(&r->head);
            r->state = ST_CHUNK_SIZE;
            break;
        }
        case ST_TRAILERS: {
            long line;
            rc = chunk_line(r, &p, end, &line);
            if (rc != ARB__H1_MORE || line < 0) break;
            arb__buf_reset(&r->head);
            if (line == 0) r->state = ST_DONE;
            break;
        }
        default: return ARB__H1_BAD;
        }
    }
    *used = (size_t)(p - data);
    if (rc != ARB__H1_MORE) return rc;
    return r->state == ST_DONE ? ARB__H1_DONE : ARB__H1_MORE;
}

/* See internal.h. */
int arb__h1_eof(arb__h1 *r)
{
    if (r->state == ST_DONE || r->state == ST_TO_CLOSE) {
        r->state = ST_DONE;
        return ARB__H1_DONE;
    }
    if (!r->got_bytes) return ARB__H1_NOTHING;
    return ARB__H1_PARTIAL;
}

/* See internal.h. */
int arb__h1_headers_done(const arb__h1 *r) { return r->state != ST_HEAD; }
