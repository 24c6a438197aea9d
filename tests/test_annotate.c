/*
** test_annotate.c -- the annotation web app (annotate.c) through real HTTP with libcurl: the
** static page and its security headers, the token (login, cookie, header), blind tasks in the
** recorded shown order, the stored MODEL verdicts for both orders, skip, double answers,
** another annotator's task, bad input, the overlap limit (one server and two servers on one
** database), lease expiry (also a verdict on an expired task someone else took), restart,
** progress, requests from other sites and POSTs that are not JSON, the per-address connection
** limit, a busy database answering 503 quickly, hostile, long and invisible names, hostile
** paths, the audit reading the labels, and the `arbiter annotate` command (token file,
** SIGTERM).
**
** The store is built in a temporary directory: items i1..i5 in that benchmark order; models
** cand-M and other-M answered all five, base-M only i1..i4; judge-1 judged cand-M vs base-M
** on i1..i4 in both orders. So the default server (pairs from the judgments) has 4 tasks per
** annotator: (cand-M, base-M) on i1, i2, i3, i4, in that order.
*/
#include "test_sql.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "testutil.h"

#define TOKEN "test-token-0123456789-abcdef"
#define CSP_WANT "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; " \
                 "frame-ancestors 'none'"

static const char items_jsonl[] =
    "{\"id\":\"i1\",\"question\":\"Q1: what is 1+1?\"}\n"
    "{\"id\":\"i2\",\"question\":\"Q2: capital of France?\",\"reference\":\"Paris\"}\n"
    "{\"id\":\"i3\",\"question\":\"Q3: <b>bold</b> & co\"}\n"
    "{\"id\":\"i4\",\"question\":\"Q4: name a prime\"}\n"
    "{\"id\":\"i5\",\"question\":\"Q5: only two models answered\"}\n";

static const char answers_jsonl[] =
    "{\"item\":\"i1\",\"model\":\"cand-M\",\"answer\":\"cand answer 1\"}\n"
    "{\"item\":\"i2\",\"model\":\"cand-M\",\"answer\":\"cand answer 2\"}\n"
    "{\"item\":\"i3\",\"model\":\"cand-M\",\"answer\":\"<script>alert('cand 3')</script>\"}\n"
    "{\"item\":\"i4\",\"model\":\"cand-M\",\"answer\":\"cand answer 4\"}\n"
    "{\"item\":\"i5\",\"model\":\"cand-M\",\"answer\":\"cand answer 5\"}\n"
    "{\"item\":\"i1\",\"model\":\"base-M\",\"answer\":\"base answer 1\"}\n"
    "{\"item\":\"i2\",\"model\":\"base-M\",\"answer\":\"base answer 2\"}\n"
    "{\"item\":\"i3\",\"model\":\"base-M\",\"answer\":\"base answer 3\"}\n"
    "{\"item\":\"i4\",\"model\":\"base-M\",\"answer\":\"base answer 4\"}\n"
    "{\"item\":\"i1\",\"model\":\"other-M\",\"answer\":\"other answer 1\"}\n"
    "{\"item\":\"i2\",\"model\":\"other-M\",\"answer\":\"other answer 2\"}\n"
    "{\"item\":\"i3\",\"model\":\"other-M\",\"answer\":\"other answer 3\"}\n"
    "{\"item\":\"i4\",\"model\":\"other-M\",\"answer\":\"other answer 4\"}\n"
    "{\"item\":\"i5\",\"model\":\"other-M\",\"answer\":\"other answer 5\"}\n";

/* ---- HTTP helpers ------------------------------------------------------------------------ */

typedef struct http_reply {
    long status;
    char *body;
    size_t len;
    char *headers; /* every header line of the reply, as received */
    size_t headers_len;
} http_reply;

/* Who the request claims to be. */
typedef struct http_auth {
    const char *bearer;    /* Authorization: Bearer <bearer> */
    const char *x_token;   /* X-Arbiter-Token */
    const char *cookie;    /* Cookie header value */
    const char *annotator; /* X-Arbiter-Annotator */
    const char *const *extra; /* more header lines (NULL-terminated); "Content-Type: x"
                                 replaces the default, "Content-Type:" sends none */
    const char *from;         /* source address of the connection (default 127.0.0.1) */
} http_auth;

static size_t append(char **buf, size_t *len, const char *p, size_t n)
{
    char *grown = realloc(*buf, *len + n + 1);
    if (!grown) return 0;
    memcpy(grown + *len, p, n);
    *len += n;
    grown[*len] = '\0';
    *buf = grown;
    return n;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    http_reply *r = ud;
    return append(&r->body, &r->len, p, size * n);
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    http_reply *r = ud;
    return append(&r->headers, &r->headers_len, p, size * n);
}

/* Sends method to path (sent as is: no dot-segment removal) on port; body may be NULL. No
** cmocka assertion, so threads may call it. Returns the transfer's result. */
static CURLcode http_try(int port, const char *method, const char *path, const char *body,
                         const http_auth *auth, http_reply *out)
{
    http_reply r = {0, NULL, 0, NULL, 0};
    char url[512], line[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    if (!c) return CURLE_OUT_OF_MEMORY;
    struct curl_slist *headers = NULL;
    int own_type = 0;
    for (size_t i = 0; auth && auth->extra && auth->extra[i]; i++) {
        headers = curl_slist_append(headers, auth->extra[i]);
        own_type |= !strncasecmp(auth->extra[i], "Content-Type:", 13);
    }
    if (body && !own_type) headers = curl_slist_append(headers, "Content-Type: application/json");
    if (auth && auth->bearer) {
        snprintf(line, sizeof line, "Authorization: Bearer %s", auth->bearer);
        headers = curl_slist_append(headers, line);
    }
    if (auth && auth->x_token) {
        snprintf(line, sizeof line, "X-Arbiter-Token: %s", auth->x_token);
        headers = curl_slist_append(headers, line);
    }
    if (auth && auth->annotator) { /* any length: some tests send 5000 characters */
        size_t n = strlen(auth->annotator) + 32;
        char *long_line = malloc(n);
        if (long_line) {
            snprintf(long_line, n, "X-Arbiter-Annotator: %s", auth->annotator);
            headers = curl_slist_append(headers, long_line);
            free(long_line);
        }
    }
    if (auth && auth->from) {
        snprintf(line, sizeof line, "host!%s", auth->from);
        curl_easy_setopt(c, CURLOPT_INTERFACE, line);
    }
    if (auth && auth->cookie) curl_easy_setopt(c, CURLOPT_COOKIE, auth->cookie);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    if (!strcmp(method, "HEAD")) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);
    if (!r.body) r.body = calloc(1, 1);
    if (!r.headers) r.headers = calloc(1, 1);
    *out = r;
    return cc;
}

/* http_try that fails the test when the transfer fails. */
static http_reply http(int port, const char *method, const char *path, const char *body,
                       const http_auth *auth)
{
    http_reply r;
    CURLcode cc = http_try(port, method, path, body, auth, &r);
    if (cc != CURLE_OK) fail_msg("%s %s: %s", method, path, curl_easy_strerror(cc));
    assert_non_null(r.body);
    return r;
}

static void reply_free(http_reply *r)
{
    free(r->body);
    free(r->headers);
}

/* The value of the n-th (0-based) header called name, copied into out; NULL when absent. */
static const char *header_at(const http_reply *r, const char *name, int nth, char *out,
                             size_t size)
{
    size_t name_len = strlen(name);
    for (const char *line = r->headers; line && *line;) {
        const char *end = strstr(line, "\r\n");
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > name_len && !strncasecmp(line, name, name_len) && line[name_len] == ':' &&
            nth-- == 0) {
            const char *v = line + name_len + 1;
            while (*v == ' ') v++;
            snprintf(out, size, "%.*s", (int)(len - (size_t)(v - line)), v);
            return out;
        }
        line = end ? end + 2 : NULL;
    }
    return NULL;
}

static const char *header(const http_reply *r, const char *name, char *out, size_t size)
{
    return header_at(r, name, 0, out, size);
}

/* Asserts the headers every reply carries. */
static void assert_security_headers(const http_reply *r)
{
    char v[512];
    assert_non_null(header(r, "Content-Security-Policy", v, sizeof v));
    assert_string_equal(v, CSP_WANT);
    assert_non_null(header(r, "X-Content-Type-Options", v, sizeof v));
    assert_string_equal(v, "nosniff");
    assert_non_null(header(r, "Referrer-Policy", v, sizeof v));
    assert_string_equal(v, "no-referrer");
    assert_non_null(header(r, "Cache-Control", v, sizeof v));
    assert_string_equal(v, "no-store");
}

static json_t *json_of(const http_reply *r)
{
    json_error_t err;
    json_t *root = json_loads(r->body, 0, &err);
    if (!root) fail_msg("reply is not JSON (%s): %s", err.text, r->body);
    return root;
}

/* ---- fixture ----------------------------------------------------------------------------- */

typedef struct fixture {
    char dir[256];
    char db[320];
    arb_store *store; /* the test's own connection */
    arb_annotate_server *srv;
    int port;
} fixture;

static arb_annotate_params params_with(int overlap)
{
    arb_annotate_params p = arb_annotate_default_params();
    p.port = 0;
    p.token = TOKEN;
    p.overlap = overlap;
    return p;
}

static void start(fixture *f, const arb_annotate_params *p)
{
    char *err = NULL;
    arb_status st = arb_annotate_start(f->db, p, &f->srv, &err);
    if (st != ARB_OK) fail_msg("arb_annotate_start: %s", err ? err : arb_strerror(st));
    f->port = arb_annotate_port(f->srv);
    assert_true(f->port > 0);
}

static void restart(fixture *f, const arb_annotate_params *p)
{
    arb_annotate_stop(f->srv);
    f->srv = NULL;
    start(f, p);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    if (arb_test_store_with_items("annotate", items_jsonl, f->dir, sizeof f->dir, &f->store))
        return -1;
    snprintf(f->db, sizeof f->db, "%s/arbiter.db", f->dir);
    arb_dataset *ds = arb_dataset_create();
    assert_non_null(ds);
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "items", items_jsonl, strlen(items_jsonl)),
                     ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "answers", answers_jsonl,
                                                   strlen(answers_jsonl)), ARB_OK);
    assert_int_equal(arb__store_put_dataset(f->store, ds), ARB_OK);
    arb_dataset_destroy(ds);
    static const char *const items[] = {"i1", "i2", "i3", "i4"};
    for (int i = 0; i < 4; i++)
        for (int order = 0; order < 2; order++) {
            arb__pairwise_row row;
            memset(&row, 0, sizeof row);
            row.judge_name = "judge-1";
            row.item_id = items[i];
            row.candidate = "cand-M";
            row.baseline = "base-M";
            row.template_name = "II";
            row.options = 4;
            row.order = order;
            row.position_verdict = 'A'; /* always the first: model verdict a in run 0, b in 1 */
            if (arb_test_put_sbs_judgment(f->store, &row, NULL)) return -1;
        }
    arb_annotate_params p = params_with(1);
    start(f, &p);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f) return 0;
    arb_annotate_stop(f->srv);
    arb_store_close(f->store);
    arb_test_remove_dir(f->dir);
    free(f);
    return 0;
}

/* Authenticated as annotator with the bearer token. */
static http_auth as(const char *annotator)
{
    return (http_auth){.bearer = TOKEN, .annotator = annotator};
}

/* GET /api/next as annotator; asserts 200. Returns the task id, 0 when done; *root (may be
** NULL) gets the parsed reply. */
static long long next_task(const fixture *f, const char *annotator, json_t **root)
{
    http_auth a = as(annotator);
    http_reply r = http(f->port, "GET", "/api/next", NULL, &a);
    if (r.status != 200) fail_msg("GET /api/next as %s: %ld %s", annotator, r.status, r.body);
    json_t *o = json_of(&r);
    reply_free(&r);
    json_t *task = json_object_get(o, "task");
    long long id = json_is_integer(task) ? json_integer_value(task) : 0;
    if (!id) assert_true(json_is_true(json_object_get(o, "done")));
    if (root) *root = o;
    else json_decref(o);
    return id;
}

/* POST /api/label; returns the status (reply body in *body when not NULL, caller frees). */
static long post_label(const fixture *f, const char *annotator, long long task,
                       const char *choice, long long time_ms, char **body)
{
    char payload[256];
    snprintf(payload, sizeof payload, "{\"task\": %lld, \"choice\": \"%s\", \"time_ms\": %lld}",
             task, choice, time_ms);
    http_auth a = as(annotator);
    http_reply r = http(f->port, "POST", "/api/label", payload, &a);
    long status = r.status;
    if (body) *body = strdup(r.body);
    reply_free(&r);
    return status;
}

static long long query_int(const fixture *f, const char *fmt, ...) ARB__ATTR_PRINTF(2, 3);
static long long query_int(const fixture *f, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    return arb_test_query_int(f->store, sql);
}

/* The text column of the first row of sql, copied into out ("" when none). */
static const char *query_text(const fixture *f, const char *sql, char *out, size_t size)
{
    sqlite3_stmt *q = NULL;
    out[0] = '\0';
    if (sqlite3_prepare_v2(arb__store_conn(f->store), sql, -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        snprintf(out, size, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return out;
}

/* The item (1..4) of a task, from the store. */
static int task_item(const fixture *f, long long task)
{
    char item[32];
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT item_id FROM annotation_tasks WHERE id = %lld", task);
    query_text(f, sql, item, sizeof item);
    assert_true(item[0] == 'i' && item[1] >= '1' && item[1] <= '5');
    return item[1] - '0';
}

/* ---- static files ------------------------------------------------------------------------ */

static void static_files_without_token(void **state)
{
    fixture *f = *state;
    char v[256];
    http_reply r = http(f->port, "GET", "/", NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_security_headers(&r);
    assert_non_null(header(&r, "Content-Type", v, sizeof v));
    assert_string_equal(v, "text/html; charset=utf-8");
    /* the ids and attributes the browser test relies on */
    static const char *const needles[] = {
        "id=\"login-form\"", "id=\"token\"", "id=\"annotator\"", "id=\"login\"",
        "id=\"question\"", "id=\"reference\"", "id=\"answer-1\"", "id=\"answer-2\"",
        "data-choice=\"A\"", "data-choice=\"B\"", "data-choice=\"C\"", "data-choice=\"D\"",
        "data-choice=\"skip\"", "id=\"progress\"", "id=\"done\"", "id=\"error\"",
        "id=\"retry\"",
        "app.css", "app.js"};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
        if (!strstr(r.body, needles[i])) fail_msg("index.html lacks %s", needles[i]);
    /* no inline script or style: the CSP would block it */
    assert_null(strstr(r.body, "<style"));
    assert_null(strstr(r.body, "style=\""));
    assert_null(strstr(r.body, "<script>"));
    reply_free(&r);

    r = http(f->port, "GET", "/app.css", NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_security_headers(&r);
    assert_non_null(header(&r, "Content-Type", v, sizeof v));
    assert_string_equal(v, "text/css; charset=utf-8");
    assert_non_null(strstr(r.body, "[hidden]"));
    reply_free(&r);

    r = http(f->port, "GET", "/app.js", NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_security_headers(&r);
    assert_non_null(header(&r, "Content-Type", v, sizeof v));
    assert_string_equal(v, "text/javascript; charset=utf-8");
    assert_non_null(strstr(r.body, "textContent"));
    assert_null(strstr(r.body, "innerHTML")); /* model outputs never become markup */
    assert_null(strstr(r.body, "http://"));   /* nothing fetched from elsewhere */
    assert_null(strstr(r.body, "https://"));
    reply_free(&r);

    r = http(f->port, "HEAD", "/app.js", NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, 0);
    reply_free(&r);

    r = http(f->port, "POST", "/", "{}", NULL);
    assert_int_equal(r.status, 405);
    assert_non_null(header(&r, "Allow", v, sizeof v));
    assert_security_headers(&r);
    reply_free(&r);
}

/* ---- the token --------------------------------------------------------------------------- */

static void api_needs_the_token(void **state)
{
    fixture *f = *state;
    http_auth none = {.annotator = "alice"};
    http_auth wrong_bearer = {.bearer = "test-token-0123456789-abcdeX", .annotator = "alice"};
    http_auth prefix = {.bearer = "test-token-0123456789-abcde", .annotator = "alice"};
    http_auth longer = {.bearer = TOKEN "0", .annotator = "alice"};
    http_auth wrong_header = {.x_token = "nope-nope-nope-nope-nope", .annotator = "alice"};
    http_auth wrong_cookie = {.cookie = "arbiter_token=nope-nope-nope-nope",
                              .annotator = "alice"};
    const http_auth *bad[] = {&none, &wrong_bearer, &prefix, &longer, &wrong_header,
                              &wrong_cookie};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        http_reply r = http(f->port, "GET", "/api/next", NULL, bad[i]);
        if (r.status != 401) fail_msg("case %zu: got %ld", i, r.status);
        assert_security_headers(&r);
        json_t *o = json_of(&r);
        assert_true(json_is_string(json_object_get(o, "error")));
        json_decref(o);
        reply_free(&r);
        r = http(f->port, "GET", "/api/progress", NULL, bad[i]);
        assert_int_equal(r.status, 401);
        reply_free(&r);
        r = http(f->port, "POST", "/api/label", "{\"task\":1,\"choice\":\"A\"}", bad[i]);
        assert_int_equal(r.status, 401);
        reply_free(&r);
    }
    /* no task was handed out to anyone */
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks"), 0);

    /* the right token, each way it may come */
    http_auth x = {.x_token = TOKEN, .annotator = "alice"};
    http_reply r = http(f->port, "GET", "/api/next", NULL, &x);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    http_auth cookie = {.cookie = "arbiter_token=" TOKEN "; arbiter_annotator=alice"};
    r = http(f->port, "GET", "/api/next", NULL, &cookie);
    assert_int_equal(r.status, 200);
    reply_free(&r);

    /* login with a wrong token: 401 and no cookie */
    r = http(f->port, "POST", "/api/login", "{\"token\": \"wrong-token-wrong-token\", "
                                            "\"annotator\": \"alice\"}", NULL);
    assert_int_equal(r.status, 401);
    char v[256];
    assert_null(header(&r, "Set-Cookie", v, sizeof v));
    assert_security_headers(&r);
    reply_free(&r);
}

static void login_sets_cookies(void **state)
{
    fixture *f = *state;
    http_reply r = http(f->port, "POST", "/api/login",
                        "{\"token\": \"" TOKEN "\", \"annotator\": \"Zoë S\"}", NULL);
    assert_int_equal(r.status, 200);
    assert_security_headers(&r);
    json_t *o = json_of(&r);
    assert_string_equal(json_string_value(json_object_get(o, "annotator")), "Zoë S");
    json_decref(o);
    char c0[512], c1[512];
    assert_non_null(header_at(&r, "Set-Cookie", 0, c0, sizeof c0));
    assert_non_null(header_at(&r, "Set-Cookie", 1, c1, sizeof c1));
    const char *tok = strstr(c0, "arbiter_token=") ? c0 : c1;
    const char *name = tok == c0 ? c1 : c0;
    /* TOKEN has only unreserved characters, so it is sent as is */
    assert_string_equal(tok, "arbiter_token=" TOKEN "; HttpOnly; SameSite=Strict; Path=/");
    /* "Zoë S": ë is C3 AB in UTF-8, the space %20 */
    assert_string_equal(name, "arbiter_annotator=Zo%C3%AB%20S; HttpOnly; SameSite=Strict; Path=/");
    reply_free(&r);

    /* the cookies alone are enough, and the name comes from them */
    http_auth cookie = {.cookie = "arbiter_token=" TOKEN "; arbiter_annotator=Zo%C3%AB%20S"};
    r = http(f->port, "GET", "/api/progress", NULL, &cookie);
    assert_int_equal(r.status, 200);
    o = json_of(&r);
    assert_string_equal(json_string_value(json_object_get(o, "annotator")), "Zoë S");
    json_decref(o);
    reply_free(&r);
    r = http(f->port, "GET", "/api/next", NULL, &cookie);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks WHERE annotator = "
                                  "'Zoë S'"), 1);

    /* no name and no default on this server: 400 */
    r = http(f->port, "POST", "/api/login", "{\"token\": \"" TOKEN "\"}", NULL);
    assert_int_equal(r.status, 400);
    reply_free(&r);
    http_auth nameless = {.bearer = TOKEN};
    r = http(f->port, "GET", "/api/next", NULL, &nameless);
    assert_int_equal(r.status, 400);
    reply_free(&r);

    /* with a default annotator, the name may be left out */
    arb_annotate_params p = params_with(1);
    p.annotator = "default-expert";
    restart(f, &p);
    r = http(f->port, "POST", "/api/login", "{\"token\": \"" TOKEN "\"}", NULL);
    assert_int_equal(r.status, 200);
    o = json_of(&r);
    assert_string_equal(json_string_value(json_object_get(o, "annotator")), "default-expert");
    json_decref(o);
    reply_free(&r);
    r = http(f->port, "GET", "/api/next", NULL, &nameless);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks WHERE annotator = "
                                  "'default-expert'"), 1);
}

/* ---- tasks ------------------------------------------------------------------------------- */

static void next_is_blind_and_in_shown_order(void **state)
{
    fixture *f = *state;
    http_auth a = as("alice");
    http_reply r = http(f->port, "GET", "/api/next", NULL, &a);
    assert_int_equal(r.status, 200);
    assert_security_headers(&r);
    char v[128];
    assert_non_null(header(&r, "Content-Type", v, sizeof v));
    assert_string_equal(v, "application/json; charset=utf-8");
    /* no model name anywhere in the reply, not even the judge's */
    assert_null(strstr(r.body, "cand-M"));
    assert_null(strstr(r.body, "base-M"));
    assert_null(strstr(r.body, "judge-1"));
    json_t *o = json_of(&r);
    reply_free(&r);
    /* exactly these keys */
    assert_int_equal(json_object_size(o), 5);
    long long task = json_integer_value(json_object_get(o, "task"));
    assert_true(task > 0);
    assert_string_equal(json_string_value(json_object_get(o, "question")), "Q1: what is 1+1?");
    assert_true(json_is_null(json_object_get(o, "reference"))); /* i1 has none */
    json_t *answers = json_object_get(o, "answers");
    assert_int_equal(json_array_size(answers), 2);
    json_t *progress = json_object_get(o, "progress");
    assert_int_equal(json_integer_value(json_object_get(progress, "labelled")), 0);
    assert_int_equal(json_integer_value(json_object_get(progress, "skipped")), 0);
    assert_int_equal(json_integer_value(json_object_get(progress, "remaining")), 4);
    /* the first task is the first item in benchmark order, shown in the recorded order */
    assert_int_equal(task_item(f, task), 1);
    long long order = query_int(f, "SELECT shown_order FROM annotation_tasks WHERE id = %lld",
                                task);
    assert_true(order == 0 || order == 1);
    assert_string_equal(json_string_value(json_array_get(answers, 0)),
                        order ? "base answer 1" : "cand answer 1");
    assert_string_equal(json_string_value(json_array_get(answers, 1)),
                        order ? "cand answer 1" : "base answer 1");
    json_decref(o);

    /* a reload shows the same task; with the order flipped in the store, flipped answers */
    query_int(f, "UPDATE annotation_tasks SET shown_order = 1 - shown_order WHERE id = %lld",
              task);
    assert_int_equal(next_task(f, "alice", &o), task);
    answers = json_object_get(o, "answers");
    assert_string_equal(json_string_value(json_array_get(answers, 0)),
                        order ? "cand answer 1" : "base answer 1");
    assert_string_equal(json_string_value(json_array_get(answers, 1)),
                        order ? "base answer 1" : "cand answer 1");
    json_decref(o);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks"), 1);

    /* the next item has a reference; the third an answer that is markup, sent as plain text */
    assert_int_equal(post_label(f, "alice", task, "C", 1000, NULL), 200);
    task = next_task(f, "alice", &o);
    assert_int_equal(task_item(f, task), 2);
    assert_string_equal(json_string_value(json_object_get(o, "reference")), "Paris");
    json_decref(o);
    assert_int_equal(post_label(f, "alice", task, "C", 1000, NULL), 200);
    task = next_task(f, "alice", &o);
    assert_int_equal(task_item(f, task), 3);
    assert_string_equal(json_string_value(json_object_get(o, "question")),
                        "Q3: <b>bold</b> & co");
    answers = json_object_get(o, "answers");
    int cand_first = query_int(f, "SELECT shown_order FROM annotation_tasks WHERE id = %lld",
                               task) == 0;
    assert_string_equal(json_string_value(json_array_get(answers, cand_first ? 0 : 1)),
                        "<script>alert('cand 3')</script>");
    json_decref(o);
}

/* Labels alice's current task with choice after forcing its shown order; returns the stored
** model verdict. */
static char label_with_order(fixture *f, int shown_order, const char *choice, long long time_ms)
{
    long long task = next_task(f, "alice", NULL);
    assert_true(task > 0);
    query_int(f, "UPDATE annotation_tasks SET shown_order = %d WHERE id = %lld", shown_order,
              task);
    char *body = NULL;
    long status = post_label(f, "alice", task, choice, time_ms, &body);
    if (status != 200) fail_msg("label: %ld %s", status, body);
    json_t *o = json_loads(body, 0, NULL);
    free(body);
    assert_true(json_is_true(json_object_get(o, "ok")));
    assert_non_null(json_object_get(o, "progress"));
    json_decref(o);
    char sql[256], verdict[8];
    snprintf(sql, sizeof sql,
             "SELECT l.verdict FROM human_labels l JOIN annotation_tasks t ON t.item_id = "
             "l.item_id AND t.candidate = l.candidate AND t.baseline = l.baseline AND "
             "t.annotator = l.annotator WHERE t.id = %lld", task);
    query_text(f, sql, verdict, sizeof verdict);
    /* the rest of the row */
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels l JOIN annotation_tasks t"
                                  " ON t.item_id = l.item_id AND t.annotator = l.annotator"
                                  " WHERE t.id = %lld AND l.source = 'ui' AND l.shown_order = %d"
                                  " AND l.time_ms = %lld AND l.candidate = 'cand-M'"
                                  " AND l.baseline = 'base-M' AND t.outcome = 'label'"
                                  " AND t.finished_at IS NOT NULL",
                                  task, shown_order, time_ms), 1);
    return verdict[0];
}

static void label_stores_model_verdict(void **state)
{
    fixture *f = *state;
    /* METHODS §2.2: shown order 0 = candidate first, so A (first better) is a (candidate
    ** better) and B is b; shown order 1 = baseline first, so A is b and B is a; C and D are c
    ** and d either way. */
    assert_int_equal(label_with_order(f, 0, "A", 1234), 'a');
    assert_int_equal(label_with_order(f, 1, "A", 0), 'b');
    assert_int_equal(label_with_order(f, 1, "B", 86400000), 'a');
    assert_int_equal(label_with_order(f, 0, "D", 5), 'd');
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels"), 4);
    /* all four tasks done */
    json_t *o = NULL;
    assert_int_equal(next_task(f, "alice", &o), 0);
    json_t *progress = json_object_get(o, "progress");
    assert_int_equal(json_integer_value(json_object_get(progress, "labelled")), 4);
    assert_int_equal(json_integer_value(json_object_get(progress, "remaining")), 0);
    json_decref(o);
    /* with overlap 1 every item is now full, so bob gets nothing; with overlap 2 he gets
    ** them too: B on order 0 and C on order 1 */
    assert_int_equal(next_task(f, "bob", NULL), 0);
    arb_annotate_params p = params_with(2);
    restart(f, &p);
    long long t = next_task(f, "bob", NULL);
    query_int(f, "UPDATE annotation_tasks SET shown_order = 0 WHERE id = %lld", t);
    assert_int_equal(post_label(f, "bob", t, "B", 10, NULL), 200);
    t = next_task(f, "bob", NULL);
    query_int(f, "UPDATE annotation_tasks SET shown_order = 1 WHERE id = %lld", t);
    assert_int_equal(post_label(f, "bob", t, "C", 10, NULL), 200);
    char v[8];
    query_text(f, "SELECT group_concat(verdict, '') FROM (SELECT verdict FROM human_labels "
                  "WHERE annotator = 'bob' ORDER BY id)", v, sizeof v);
    assert_string_equal(v, "bc");
    /* a label without time_ms stores NULL */
    t = next_task(f, "bob", NULL);
    http_auth a = as("bob");
    char body[128];
    snprintf(body, sizeof body, "{\"task\": %lld, \"choice\": \"D\"}", t);
    http_reply r = http(f->port, "POST", "/api/label", body, &a);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels WHERE annotator = 'bob' "
                                  "AND verdict = 'd' AND time_ms IS NULL"), 1);
}

static void skip_stores_no_label(void **state)
{
    fixture *f = *state;
    long long first = next_task(f, "alice", NULL);
    char *body = NULL;
    assert_int_equal(post_label(f, "alice", first, "skip", 700, &body), 200);
    json_t *o = json_loads(body, 0, NULL);
    free(body);
    json_t *progress = json_object_get(o, "progress");
    /* 4 tasks: 1 skipped, 0 labelled, 3 left */
    assert_int_equal(json_integer_value(json_object_get(progress, "skipped")), 1);
    assert_int_equal(json_integer_value(json_object_get(progress, "labelled")), 0);
    assert_int_equal(json_integer_value(json_object_get(progress, "remaining")), 3);
    json_decref(o);
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels"), 0);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks WHERE id = %lld AND "
                                  "outcome = 'skip' AND finished_at IS NOT NULL", first), 1);
    long long second = next_task(f, "alice", NULL);
    assert_true(second != first);
    assert_int_equal(task_item(f, second), 2);
    /* a skipped item is free for someone else (overlap 1): bob gets i1 */
    long long bobs = next_task(f, "bob", NULL);
    assert_int_equal(task_item(f, bobs), 1);
}

static void task_answered_once(void **state)
{
    fixture *f = *state;
    long long t = next_task(f, "alice", NULL);
    assert_int_equal(post_label(f, "alice", t, "A", 10, NULL), 200);
    char *body = NULL;
    assert_int_equal(post_label(f, "alice", t, "B", 10, &body), 409);
    assert_non_null(strstr(body, "already answered"));
    free(body);
    assert_int_equal(post_label(f, "alice", t, "skip", 10, NULL), 409);
    /* the first verdict stays */
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels"), 1);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks WHERE id = %lld AND "
                                  "outcome = 'label'", t), 1);
}

static void another_annotators_task(void **state)
{
    fixture *f = *state;
    long long t = next_task(f, "alice", NULL);
    assert_int_equal(post_label(f, "bob", t, "A", 10, NULL), 403);
    assert_int_equal(post_label(f, "alice", 999999, "A", 10, NULL), 404);
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels"), 0);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks WHERE outcome IS NOT "
                                  "NULL"), 0);
    /* alice can still answer it */
    assert_int_equal(post_label(f, "alice", t, "A", 10, NULL), 200);
}

static void bad_label_requests(void **state)
{
    fixture *f = *state;
    long long t = next_task(f, "alice", NULL);
    char bodies[12][160];
    int n = 0;
    snprintf(bodies[n++], 160, "not json");
    snprintf(bodies[n++], 160, "[%lld, \"A\"]", t);
    snprintf(bodies[n++], 160, "{\"task\": \"%lld\", \"choice\": \"A\"}", t);
    snprintf(bodies[n++], 160, "{\"task\": 0, \"choice\": \"A\"}");
    snprintf(bodies[n++], 160, "{\"task\": %lld, \"choice\": \"E\"}", t);
    snprintf(bodies[n++], 160, "{\"task\": %lld, \"choice\": \"a\"}", t);
    snprintf(bodies[n++], 160, "{\"task\": %lld}", t);
    snprintf(bodies[n++], 160, "{\"task\": %lld, \"choice\": \"A\", \"time_ms\": -1}", t);
    snprintf(bodies[n++], 160, "{\"task\": %lld, \"choice\": \"A\", \"time_ms\": 86400001}", t);
    snprintf(bodies[n++], 160, "{\"task\": %lld, \"choice\": \"A\", \"time_ms\": 1.5}", t);
    snprintf(bodies[n++], 160, "{\"task\": %lld, \"choice\": \"A\", \"time_ms\": \"5\"}", t);
    snprintf(bodies[n++], 160, "{\"task\": %lld, \"choice\": \"A\", \"choice\": \"B\"}", t);
    http_auth a = as("alice");
    for (int i = 0; i < n; i++) {
        http_reply r = http(f->port, "POST", "/api/label", bodies[i], &a);
        if (r.status != 400) fail_msg("body %s: got %ld", bodies[i], r.status);
        json_t *o = json_of(&r);
        assert_true(strlen(json_string_value(json_object_get(o, "error"))) > 10);
        json_decref(o);
        reply_free(&r);
    }
    /* a body over 64 KiB: 413 */
    size_t big = 70 * 1024;
    char *huge = malloc(big + 1);
    assert_non_null(huge);
    memset(huge, ' ', big);
    huge[big] = '\0';
    memcpy(huge, "{\"task\": 1, ", 12);
    http_reply r = http(f->port, "POST", "/api/label", huge, &a);
    assert_int_equal(r.status, 413);
    reply_free(&r);
    free(huge);
    /* wrong methods */
    r = http(f->port, "GET", "/api/label", NULL, &a);
    assert_int_equal(r.status, 405);
    reply_free(&r);
    r = http(f->port, "POST", "/api/next", "{}", &a);
    assert_int_equal(r.status, 405);
    reply_free(&r);
    r = http(f->port, "GET", "/api/login", NULL, NULL);
    assert_int_equal(r.status, 405);
    reply_free(&r);
    /* nothing was stored, and the task is still open */
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels"), 0);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks WHERE outcome IS NULL"),
                     1);
}

/* ---- overlap and leases ------------------------------------------------------------------ */

/* Labels every task each annotator gets, taking turns, until all are done. */
static void label_round_robin(fixture *f, const char *const *names, int n)
{
    int done[8] = {0}, n_done = 0;
    for (int round = 0; n_done < n && round < 100; round++)
        for (int k = 0; k < n; k++) {
            if (done[k]) continue;
            long long t = next_task(f, names[k], NULL);
            if (!t) {
                done[k] = 1;
                n_done++;
                continue;
            }
            assert_int_equal(post_label(f, names[k], t, "A", 100, NULL), 200);
        }
    assert_int_equal(n_done, n);
}

static void overlap_one(void **state)
{
    fixture *f = *state;
    /* alice holds i1 (open), so bob gets i2 */
    long long a1 = next_task(f, "alice", NULL), b1 = next_task(f, "bob", NULL);
    assert_int_equal(task_item(f, a1), 1);
    assert_int_equal(task_item(f, b1), 2);
    /* bob's remaining: 4 items - i1 (held by alice) = 3, his open task included */
    json_t *o = NULL;
    next_task(f, "bob", &o);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "progress"),
                                                        "remaining")), 3);
    json_decref(o);
    static const char *const names[] = {"alice", "bob"};
    label_round_robin(f, names, 2);
    /* 4 items, each labelled exactly once */
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels"), 4);
    assert_int_equal(query_int(f, "SELECT max(n) FROM (SELECT count(*) AS n FROM human_labels "
                                  "GROUP BY item_id)"), 1);
    assert_int_equal(query_int(f, "SELECT count(*) FROM (SELECT item_id FROM annotation_tasks "
                                  "GROUP BY item_id HAVING count(*) > 1)"), 0);
}

static void overlap_two(void **state)
{
    fixture *f = *state;
    arb_annotate_params p = params_with(2);
    restart(f, &p);
    /* alice and bob both get i1; carol finds i1 full and gets i2 */
    assert_int_equal(task_item(f, next_task(f, "alice", NULL)), 1);
    assert_int_equal(task_item(f, next_task(f, "bob", NULL)), 1);
    assert_int_equal(task_item(f, next_task(f, "carol", NULL)), 2);
    static const char *const names[] = {"alice", "bob", "carol"};
    label_round_robin(f, names, 3);
    /* each of the 4 items labelled by exactly two annotators: 8 labels */
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels"), 8);
    assert_int_equal(query_int(f, "SELECT count(*) FROM (SELECT item_id FROM human_labels "
                                  "GROUP BY item_id HAVING count(*) = 2)"), 4);
    /* the shown order is decided per task, and both orders occur over these 8 tasks */
    assert_int_equal(query_int(f, "SELECT count(DISTINCT shown_order) FROM annotation_tasks"), 2);
}

static void two_servers_share_the_limit(void **state)
{
    fixture *f = *state;
    /* a second server (its own connection, as a second process would have) on the database */
    fixture g = *f;
    arb_annotate_params p = params_with(1);
    start(&g, &p);
    assert_int_equal(task_item(f, next_task(f, "alice", NULL)), 1);
    assert_int_equal(task_item(f, next_task(&g, "bob", NULL)), 2);
    assert_int_equal(task_item(f, next_task(&g, "carol", NULL)), 3);
    assert_int_equal(task_item(f, next_task(f, "dave", NULL)), 4);
    assert_int_equal(next_task(&g, "erin", NULL), 0); /* all four held */
    arb_annotate_stop(g.srv);
}

/* One annotator working as fast as it can: next, label, until done. */
typedef struct worker {
    int port;
    char name[32];
    int labelled;
    int errors; /* replies other than 200 */
} worker;

static void *work(void *ud)
{
    worker *w = ud;
    http_auth a = {.bearer = TOKEN, .annotator = w->name};
    for (int round = 0; round < 50; round++) {
        http_reply r;
        if (http_try(w->port, "GET", "/api/next", NULL, &a, &r) != CURLE_OK || r.status != 200) {
            w->errors++;
            reply_free(&r);
            return NULL;
        }
        json_t *o = json_loads(r.body, 0, NULL);
        reply_free(&r);
        json_int_t task = json_integer_value(json_object_get(o, "task"));
        json_decref(o);
        if (!task) return NULL; /* done */
        char body[128];
        snprintf(body, sizeof body, "{\"task\": %lld, \"choice\": \"C\", \"time_ms\": 1}",
                 (long long)task);
        if (http_try(w->port, "POST", "/api/label", body, &a, &r) != CURLE_OK || r.status != 200)
            w->errors++;
        else
            w->labelled++;
        reply_free(&r);
    }
    w->errors++; /* never finished */
    return NULL;
}

static void concurrent_annotators(void **state)
{
    fixture *f = *state;
    arb_annotate_params p = params_with(2);
    restart(f, &p);
    fixture g = *f;
    start(&g, &p); /* a second server on the same database */
    enum { N = 6 };
    worker w[N];
    pthread_t th[N];
    for (int k = 0; k < N; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].port = k % 2 ? g.port : f->port;
        snprintf(w[k].name, sizeof w[k].name, "worker-%d", k);
        assert_int_equal(pthread_create(&th[k], NULL, work, &w[k]), 0);
    }
    int labelled = 0;
    for (int k = 0; k < N; k++) {
        pthread_join(th[k], NULL);
        assert_int_equal(w[k].errors, 0);
        labelled += w[k].labelled;
    }
    arb_annotate_stop(g.srv);
    /* overlap 2 on 4 items: exactly 8 labels, two per item, whatever the interleaving */
    assert_int_equal(labelled, 8);
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels"), 8);
    assert_int_equal(query_int(f, "SELECT count(*) FROM (SELECT item_id FROM human_labels "
                                  "GROUP BY item_id HAVING count(*) = 2)"), 4);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks WHERE outcome IS "
                                  "NULL"), 0);
}

static void lease_expiry_frees_the_task(void **state)
{
    fixture *f = *state;
    long long a1 = next_task(f, "alice", NULL);
    assert_int_equal(task_item(f, a1), 1);
    assert_int_equal(task_item(f, next_task(f, "bob", NULL)), 2);
    /* alice walked away 31 minutes ago (lease 30): her i1 is free for carol */
    query_int(f, "UPDATE annotation_tasks SET assigned_at = strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ',"
                 " 'now', '-31 minutes') WHERE id = %lld", a1);
    long long c1 = next_task(f, "carol", NULL);
    assert_int_equal(task_item(f, c1), 1);
    /* alice comes back: her expired task is taken, so it is released and she gets i3 */
    long long a2 = next_task(f, "alice", NULL);
    assert_int_equal(task_item(f, a2), 3);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks WHERE id = %lld", a1),
                     0);
    assert_int_equal(post_label(f, "alice", a1, "A", 10, NULL), 404);

    /* an expired task nobody took stays its owner's, and showing it renews the lease */
    query_int(f, "UPDATE annotation_tasks SET assigned_at = '2000-01-01T00:00:00.000Z' WHERE "
                 "id = %lld", a2);
    assert_int_equal(next_task(f, "alice", NULL), a2);
    assert_int_equal(query_int(f, "SELECT assigned_at > '2001' FROM annotation_tasks WHERE "
                                  "id = %lld", a2), 1);
    /* a shorter lease on a restarted server: 1 minute; 2 minutes old is expired */
    arb_annotate_params p = params_with(1);
    p.lease_minutes = 1;
    restart(f, &p);
    query_int(f, "UPDATE annotation_tasks SET assigned_at = strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ',"
                 " 'now', '-2 minutes') WHERE id = %lld", a2);
    assert_int_equal(task_item(f, next_task(f, "dave", NULL)), 3);
}

/* Sets the assigned_at of task to now + modifier ("-31 minutes"). */
static void backdate(const fixture *f, long long task, const char *modifier)
{
    query_int(f, "UPDATE annotation_tasks SET assigned_at = strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ',"
                 " 'now', '%s') WHERE id = %lld", modifier, task);
}

static void expired_task_taken_meanwhile(void **state)
{
    fixture *f = *state;
    arb_annotate_params p = params_with(2);
    restart(f, &p);
    /* carol labels i1: one of its two places is taken */
    long long c1 = next_task(f, "carol", NULL);
    assert_int_equal(task_item(f, c1), 1);
    assert_int_equal(post_label(f, "carol", c1, "A", 10, NULL), 200);
    /* alice gets i1 (carol's label 1 + 0 open tasks = 1 < 2) and walks away for 31 minutes */
    long long a1 = next_task(f, "alice", NULL);
    assert_int_equal(task_item(f, a1), 1);
    backdate(f, a1, "-31 minutes");
    /* bob gets i1 too (carol 1 + alice's expired task 0 = 1 < 2) and labels it */
    long long b1 = next_task(f, "bob", NULL);
    assert_int_equal(task_item(f, b1), 1);
    assert_int_equal(post_label(f, "bob", b1, "B", 10, NULL), 200);
    /* alice comes back and answers: the others hold i1 twice (carol's and bob's labels), which
    ** is the overlap, so her verdict is refused and her task deleted: still 2 labels on i1 */
    char *body = NULL;
    assert_int_equal(post_label(f, "alice", a1, "A", 10, &body), 409);
    assert_non_null(strstr(body, "went to someone else"));
    free(body);
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels WHERE item_id = 'i1'"), 2);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks WHERE id = %lld", a1),
                     0);

    /* the same when the others hold open, unexpired tasks instead of labels: alice gets i2 (i1
    ** is full) and lets it expire; dave and erin both get i2 (0 + 1 open < 2) */
    long long a2 = next_task(f, "alice", NULL);
    assert_int_equal(task_item(f, a2), 2);
    backdate(f, a2, "-31 minutes");
    assert_int_equal(task_item(f, next_task(f, "dave", NULL)), 2);
    assert_int_equal(task_item(f, next_task(f, "erin", NULL)), 2);
    assert_int_equal(post_label(f, "alice", a2, "C", 10, NULL), 409);
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels WHERE item_id = 'i2'"), 0);

    /* an expired task of which only one other place is taken is still accepted: alice gets i3,
    ** lets it expire, frank gets i3 (i1 and i2 are full; 0 + 1 < 2); alice's verdict makes
    ** frank's open task + her label = 2 holders, within the overlap */
    long long a3 = next_task(f, "alice", NULL);
    assert_int_equal(task_item(f, a3), 3);
    backdate(f, a3, "-31 minutes");
    assert_int_equal(task_item(f, next_task(f, "frank", NULL)), 3);
    assert_int_equal(post_label(f, "alice", a3, "D", 10, NULL), 200);
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels WHERE item_id = 'i3' AND "
                                  "annotator = 'alice'"), 1);
}

static void labels_survive_restart(void **state)
{
    fixture *f = *state;
    long long t = next_task(f, "alice", NULL);
    assert_int_equal(post_label(f, "alice", t, "B", 42, NULL), 200);
    /* committed before the reply: the test's own connection sees it at once */
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels WHERE annotator = 'alice' "
                                  "AND time_ms = 42"), 1);
    long long open = next_task(f, "alice", NULL);
    long long order = query_int(f, "SELECT shown_order FROM annotation_tasks WHERE id = %lld",
                                open);
    arb_annotate_params p = params_with(1);
    restart(f, &p);
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels"), 1);
    json_t *o = NULL;
    /* after the restart alice sees her open task again, in the same order */
    assert_int_equal(next_task(f, "alice", &o), open);
    assert_int_equal(query_int(f, "SELECT shown_order FROM annotation_tasks WHERE id = %lld",
                               open), order);
    json_t *progress = json_object_get(o, "progress");
    assert_int_equal(json_integer_value(json_object_get(progress, "labelled")), 1);
    assert_int_equal(json_integer_value(json_object_get(progress, "remaining")), 3);
    json_decref(o);
}

static void progress_counts(void **state)
{
    fixture *f = *state;
    http_auth a = as("alice");
    http_reply r = http(f->port, "GET", "/api/progress", NULL, &a);
    assert_int_equal(r.status, 200);
    json_t *o = json_of(&r);
    reply_free(&r);
    assert_string_equal(json_string_value(json_object_get(o, "annotator")), "alice");
    json_t *p = json_object_get(o, "progress");
    assert_int_equal(json_integer_value(json_object_get(p, "labelled")), 0);
    assert_int_equal(json_integer_value(json_object_get(p, "skipped")), 0);
    assert_int_equal(json_integer_value(json_object_get(p, "remaining")), 4);
    json_decref(o);
    /* progress alone hands out no task */
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks"), 0);
    /* label one, skip one: 1 labelled, 1 skipped, 4 - 2 = 2 left */
    assert_int_equal(post_label(f, "alice", next_task(f, "alice", NULL), "A", 1, NULL), 200);
    assert_int_equal(post_label(f, "alice", next_task(f, "alice", NULL), "skip", 1, NULL), 200);
    r = http(f->port, "GET", "/api/progress", NULL, &a);
    o = json_of(&r);
    reply_free(&r);
    p = json_object_get(o, "progress");
    assert_int_equal(json_integer_value(json_object_get(p, "labelled")), 1);
    assert_int_equal(json_integer_value(json_object_get(p, "skipped")), 1);
    assert_int_equal(json_integer_value(json_object_get(p, "remaining")), 2);
    json_decref(o);
    /* bob: i1 is full (alice's label), i2 is free (alice skipped it); he labels i2 and then
    ** holds i3, so alice can only still get i4: 1 left */
    long long b1 = next_task(f, "bob", NULL);
    assert_int_equal(task_item(f, b1), 2);
    assert_int_equal(post_label(f, "bob", b1, "A", 1, NULL), 200);
    assert_int_equal(task_item(f, next_task(f, "bob", NULL)), 3);
    r = http(f->port, "GET", "/api/progress", NULL, &a);
    o = json_of(&r);
    reply_free(&r);
    p = json_object_get(o, "progress");
    assert_int_equal(json_integer_value(json_object_get(p, "labelled")), 1);
    assert_int_equal(json_integer_value(json_object_get(p, "skipped")), 1);
    assert_int_equal(json_integer_value(json_object_get(p, "remaining")), 1);
    json_decref(o);
}

/* ---- requests from other sites ----------------------------------------------------------- */

static void other_sites_are_refused(void **state)
{
    fixture *f = *state;
    char same[64], other_port[64], https_same[64];
    snprintf(same, sizeof same, "Origin: http://127.0.0.1:%d", f->port);
    /* a page of another server on the same host: same site for the cookie, other origin */
    snprintf(other_port, sizeof other_port, "Origin: http://127.0.0.1:%d",
             f->port == 65535 ? 1 : f->port + 1);
    snprintf(https_same, sizeof https_same, "Origin: https://127.0.0.1:%d", f->port);
    const char *const refused[][3] = {
        {other_port, NULL},
        {"Origin: null", NULL},
        {https_same, NULL}, /* https only counts behind a proxy that says so */
        {"Origin: http://evil.example", NULL},
        {"Sec-Fetch-Site: same-site", NULL},
        {"Sec-Fetch-Site: cross-site", NULL},
        {same, "Sec-Fetch-Site: same-site"},
    };
    char label_body[] = "{\"task\": 1, \"choice\": \"A\"}";
    char login_body[] = "{\"token\": \"" TOKEN "\", \"annotator\": \"alice\"}";
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        http_auth a = {.bearer = TOKEN, .annotator = "alice", .extra = refused[i]};
        http_reply r = http(f->port, "GET", "/api/next", NULL, &a);
        if (r.status != 403) fail_msg("case %zu: GET /api/next got %ld", i, r.status);
        assert_security_headers(&r);
        reply_free(&r);
        r = http(f->port, "GET", "/api/progress", NULL, &a);
        assert_int_equal(r.status, 403);
        reply_free(&r);
        r = http(f->port, "POST", "/api/label", label_body, &a);
        assert_int_equal(r.status, 403);
        reply_free(&r);
        http_auth anon = {.extra = refused[i]};
        r = http(f->port, "POST", "/api/login", login_body, &anon);
        if (r.status != 403) fail_msg("case %zu: POST /api/login got %ld", i, r.status);
        char v[256];
        assert_null(header(&r, "Set-Cookie", v, sizeof v));
        reply_free(&r);
    }
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks"), 0);

    /* this page itself: its origin (any case), same-origin, a typed address (none), nothing */
    char same_upper[64];
    snprintf(same_upper, sizeof same_upper, "Origin: HTTP://127.0.0.1:%d", f->port);
    const char *const accepted[][4] = {
        {same, NULL},
        {same_upper, NULL},
        {same, "Sec-Fetch-Site: same-origin", NULL},
        {"Sec-Fetch-Site: none", NULL},
        {NULL},
        /* behind a TLS proxy that passes the Host header and says the scheme was https */
        {https_same, "X-Forwarded-Proto: https", NULL},
    };
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        http_auth a = {.bearer = TOKEN, .annotator = "alice", .extra = accepted[i]};
        http_reply r = http(f->port, "GET", "/api/next", NULL, &a);
        if (r.status != 200) fail_msg("case %zu: GET /api/next got %ld %s", i, r.status, r.body);
        reply_free(&r);
        http_auth anon = {.extra = accepted[i]};
        r = http(f->port, "POST", "/api/login", login_body, &anon);
        if (r.status != 200) fail_msg("case %zu: POST /api/login got %ld", i, r.status);
        reply_free(&r);
    }
    /* the page's own files need no such check */
    http_auth other = {.extra = (const char *const[]){other_port, NULL}};
    http_reply r = http(f->port, "GET", "/app.js", NULL, &other);
    assert_int_equal(r.status, 200);
    reply_free(&r);
}

static void posts_must_be_json(void **state)
{
    fixture *f = *state;
    long long t = next_task(f, "alice", NULL);
    char label_body[128];
    snprintf(label_body, sizeof label_body, "{\"task\": %lld, \"choice\": \"A\"}", t);
    char login_body[] = "{\"token\": \"" TOKEN "\", \"annotator\": \"alice\"}";
    /* what a form or a "simple" cross-site fetch can send, and near misses */
    static const char *const types[] = {"Content-Type: text/plain",
                                        "Content-Type: application/x-www-form-urlencoded",
                                        "Content-Type: multipart/form-data; boundary=x",
                                        "Content-Type: application/jsonp",
                                        "Content-Type: application/json-seq",
                                        "Content-Type: text/json",
                                        "Content-Type:"}; /* none at all */
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const char *extra[] = {types[i], NULL};
        http_auth a = {.bearer = TOKEN, .annotator = "alice", .extra = extra};
        http_reply r = http(f->port, "POST", "/api/label", label_body, &a);
        if (r.status != 415) fail_msg("%s: POST /api/label got %ld", types[i], r.status);
        assert_security_headers(&r);
        json_t *o = json_of(&r);
        assert_non_null(strstr(json_string_value(json_object_get(o, "error")),
                               "application/json"));
        json_decref(o);
        reply_free(&r);
        http_auth anon = {.extra = extra};
        r = http(f->port, "POST", "/api/login", login_body, &anon);
        if (r.status != 415) fail_msg("%s: POST /api/login got %ld", types[i], r.status);
        char v[256];
        assert_null(header(&r, "Set-Cookie", v, sizeof v));
        reply_free(&r);
    }
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels"), 0);
    /* parameters and any case are fine */
    const char *with_charset[] = {"Content-Type: Application/JSON ; charset=UTF-8", NULL};
    http_auth a = {.bearer = TOKEN, .annotator = "alice", .extra = with_charset};
    http_reply r = http(f->port, "POST", "/api/label", label_body, &a);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    const char *plain[] = {"Content-Type: application/json", NULL};
    http_auth anon = {.extra = plain};
    r = http(f->port, "POST", "/api/login", login_body, &anon);
    assert_int_equal(r.status, 200);
    reply_free(&r);
}

/* ---- load -------------------------------------------------------------------------------- */

/* A TCP connection from address from (127.0.0.x) to 127.0.0.1:port; the socket, or -1. */
static int connect_from(const char *from, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in src, dst;
    memset(&src, 0, sizeof src);
    src.sin_family = AF_INET;
    inet_pton(AF_INET, from, &src.sin_addr);
    memset(&dst, 0, sizeof dst);
    dst.sin_family = AF_INET;
    dst.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    if (bind(fd, (struct sockaddr *)&src, sizeof src) ||
        connect(fd, (struct sockaddr *)&dst, sizeof dst)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends a GET / on fd and returns what comes back within ms milliseconds: 1 when the server
** answered, 0 when it closed the connection, -1 when nothing came. */
static int answered_within(int fd, int ms)
{
    static const char request[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, request, sizeof request - 1, MSG_NOSIGNAL) < 0) return 0;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    if (poll(&pfd, 1, ms) <= 0) return -1;
    char buf[64];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    return n > 0 ? 1 : 0;
}

static void one_address_cannot_take_every_connection(void **state)
{
    fixture *f = *state;
    /* 16 idle connections from 127.0.0.1 (a slow or hostile client) */
    enum { PER_ADDRESS = 16 };
    int idle[PER_ADDRESS];
    for (int i = 0; i < PER_ADDRESS; i++) {
        idle[i] = connect_from("127.0.0.1", f->port);
        assert_true(idle[i] >= 0);
    }
    /* the 17th from that address is closed at once, without an answer (before the limit it
    ** was served) */
    int extra = connect_from("127.0.0.1", f->port);
    assert_true(extra >= 0);
    assert_int_equal(answered_within(extra, 5000), 0);
    close(extra);
    /* another address is still served */
    http_auth other = {.bearer = TOKEN, .annotator = "alice", .from = "127.0.0.2"};
    http_reply r = http(f->port, "GET", "/api/next", NULL, &other);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    /* when the idle ones go, 127.0.0.1 is served again (the server notices within moments) */
    for (int i = 0; i < PER_ADDRESS; i++) close(idle[i]);
    int served = 0;
    for (int tries = 0; tries < 100 && !served; tries++) {
        int fd = connect_from("127.0.0.1", f->port);
        served = fd >= 0 && answered_within(fd, 2000) == 1;
        if (fd >= 0) close(fd);
        if (!served) usleep(20 * 1000);
    }
    assert_true(served);
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void busy_database_answers_503_quickly(void **state)
{
    fixture *f = *state;
    long long t = next_task(f, "alice", NULL);
    /* another program holds the write lock */
    sqlite3 *db = arb__store_conn(f->store);
    assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    http_auth a = as("alice");
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    http_reply r = http(f->port, "GET", "/api/next", NULL, &a);
    double waited = ms_since(&t0);
    assert_int_equal(r.status, 503);
    json_t *o = json_of(&r);
    assert_non_null(strstr(json_string_value(json_object_get(o, "error")), "busy"));
    json_decref(o);
    reply_free(&r);
    /* the server's busy timeout is 2 s; the store's default of 10 s would take longer than 5 */
    if (waited > 5000) fail_msg("GET /api/next on a busy database took %.0f ms", waited);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(post_label(f, "alice", t, "A", 10, NULL), 503);
    waited = ms_since(&t0);
    if (waited > 5000) fail_msg("POST /api/label on a busy database took %.0f ms", waited);
    assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    /* the task is still alice's and open, and the verdict can be given again */
    assert_int_equal(post_label(f, "alice", t, "A", 10, NULL), 200);
    assert_int_equal(query_int(f, "SELECT count(*) FROM human_labels"), 1);
}

/* Slowloris: connections that send their request one byte a second. Each keeps the idle
** timeout from firing, so only a deadline for the whole request frees them. 300 of them from
** 20 addresses (15 each, under the per-address limit) plus 16 from 127.0.0.1 (that address's
** whole share): a normal request from a 22nd address is served at once, the slow ones are all
** cut within the deadline (10 s) and a second or two, and 127.0.0.1 is served again. */
static void slow_requests_are_cut_off(void **state)
{
    fixture *f = *state;
    enum { ADDRESSES = 20, PER_ADDRESS = 15, OWN = 16, SLOW = ADDRESSES * PER_ADDRESS + OWN };
    static int slow[SLOW];
    int open_slow = 0;
    for (int a = 0; a < ADDRESSES; a++)
        for (int i = 0; i < PER_ADDRESS; i++) {
            char from[32];
            snprintf(from, sizeof from, "127.0.0.%d", a + 2);
            slow[open_slow++] = connect_from(from, f->port);
        }
    for (int i = 0; i < OWN; i++) slow[open_slow++] = connect_from("127.0.0.1", f->port);
    static const char start[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    for (int i = 0; i < SLOW; i++) {
        if (slow[i] < 0) fail_msg("slow connection %d could not connect: %s", i, strerror(errno));
        assert_true(send(slow[i], start, sizeof start - 1, MSG_NOSIGNAL) > 0);
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* a normal request from another address is served while they are open */
    http_auth other = {.bearer = TOKEN, .annotator = "alice", .from = "127.0.0.22"};
    http_reply r = http(f->port, "GET", "/api/next", NULL, &other);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    /* trickle one byte a second to each slow connection until the server closes them all */
    int closed = 0, served = 0;
    double cut_all = -1;
    while (ms_since(&t0) < 14000 && (closed < SLOW || !served)) {
        for (int i = 0; i < SLOW; i++) {
            if (slow[i] < 0) continue;
            struct pollfd pfd = {.fd = slow[i], .events = POLLIN};
            char buf[64];
            if ((poll(&pfd, 1, 0) > 0 && recv(slow[i], buf, sizeof buf, MSG_DONTWAIT) <= 0) ||
                send(slow[i], "a", 1, MSG_NOSIGNAL) < 0) {
                close(slow[i]);
                slow[i] = -1;
                if (++closed == SLOW) cut_all = ms_since(&t0);
            }
        }
        if (closed == SLOW && !served) { /* 127.0.0.1 has its share back */
            int fd = connect_from("127.0.0.1", f->port);
            served = fd >= 0 && answered_within(fd, 2000) == 1;
            if (fd >= 0) close(fd);
        }
        usleep(1000 * 1000);
    }
    for (int i = 0; i < SLOW; i++)
        if (slow[i] >= 0) close(slow[i]);
    if (closed < SLOW) fail_msg("%d of %d slow connections still open after 14 s", SLOW - closed,
                                SLOW);
    /* not before the deadline: the server gives a request 10 s */
    if (cut_all < 9000) fail_msg("the slow connections were cut after %.0f ms", cut_all);
    assert_true(served);
}

/* ---- hostile input ----------------------------------------------------------------------- */


/* Each name (as JSON string content) is refused at login with 400. */
static void expect_logins_refused(const fixture *f, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"token\": \"%s\", \"annotator\": \"%s\"}", TOKEN,
                 names[i]);
        http_reply r = http(f->port, "POST", "/api/login", body, NULL);
        if (r.status != 400) fail_msg("login name %s: got %ld", names[i], r.status);
        reply_free(&r);
    }
}

static void hostile_annotator_names(void **state)
{
    fixture *f = *state;
    char name65[66], name64[65];
    memset(name65, 'x', 65);
    name65[65] = '\0';
    memset(name64, 'y', 64);
    name64[64] = '\0';
    /* (a leading space cannot be tested here: HTTP drops it from a header value) */
    const char *bad[] = {"bob\x01", "bob\x7f", "\xc2\x9b" "31m", name65, "evil\xe2\x80\xae" "txt",
                         "bob\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        http_auth a = as(bad[i]);
        http_reply r = http(f->port, "GET", "/api/next", NULL, &a);
        if (r.status != 400) fail_msg("name %zu: got %ld", i, r.status);
        reply_free(&r);
    }
    /* the same through login (JSON escapes) and the cookie (percent-encoded) */
    static const char *const bad_json[] = {"bob\\u0007", "a\\nb", "\\u001b[31mred", "\\u202e",
                                           " bob", "bob "};
    expect_logins_refused(f, bad_json, sizeof bad_json / sizeof bad_json[0]);
    char body[256];
    snprintf(body, sizeof body, "{\"token\": \"%s\", \"annotator\": \"%s\"}", TOKEN, name65);
    http_reply r = http(f->port, "POST", "/api/login", body, NULL);
    assert_int_equal(r.status, 400);
    reply_free(&r);
    http_auth c = {.cookie = "arbiter_token=" TOKEN "; arbiter_annotator=bob%0Aevil"};
    r = http(f->port, "GET", "/api/next", NULL, &c);
    assert_int_equal(r.status, 400);
    reply_free(&r);
    http_auth c2 = {.cookie = "arbiter_token=" TOKEN "; arbiter_annotator=bob%zz"};
    r = http(f->port, "GET", "/api/next", NULL, &c2);
    assert_int_equal(r.status, 400);
    reply_free(&r);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks"), 0);
    /* 64 characters is fine */
    http_auth ok = as(name64);
    r = http(f->port, "GET", "/api/next", NULL, &ok);
    assert_int_equal(r.status, 200);
    reply_free(&r);
}

static void long_annotator_names(void **state)
{
    fixture *f = *state;
    char *huge = malloc(5001);
    assert_non_null(huge);
    memset(huge, 'x', 5000);
    huge[5000] = '\0';
    http_auth a = as(huge);
    http_reply r = http(f->port, "GET", "/api/next", NULL, &a);
    assert_int_equal(r.status, 400);
    json_t *o = json_of(&r);
    assert_non_null(strstr(json_string_value(json_object_get(o, "error")),
                           "longer than 64 characters"));
    json_decref(o);
    reply_free(&r);
    /* the same in the cookie */
    char *cookie = malloc(5100);
    assert_non_null(cookie);
    snprintf(cookie, 5100, "arbiter_token=%s; arbiter_annotator=%s", TOKEN, huge);
    http_auth c = {.cookie = cookie};
    r = http(f->port, "GET", "/api/next", NULL, &c);
    assert_int_equal(r.status, 400);
    o = json_of(&r);
    assert_non_null(strstr(json_string_value(json_object_get(o, "error")),
                           "longer than 64 characters"));
    json_decref(o);
    reply_free(&r);
    free(huge);
    /* the longest name in bytes: 64 four-byte characters (U+1F600, F0 9F 98 80) = 256 bytes,
    ** or 64 * 12 = 768 characters percent-encoded in the cookie; one more is too long */
    char emoji[65 * 4 + 1], encoded[64 * 12 + 1];
    for (int i = 0; i < 65; i++) memcpy(emoji + 4 * i, "\xf0\x9f\x98\x80", 4);
    for (int i = 0; i < 64; i++) memcpy(encoded + 12 * i, "%F0%9F%98%80", 12);
    encoded[64 * 12] = '\0';
    emoji[64 * 4] = '\0';
    a = as(emoji);
    r = http(f->port, "GET", "/api/next", NULL, &a);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    snprintf(cookie, 5100, "arbiter_token=%s; arbiter_annotator=%s", TOKEN, encoded);
    r = http(f->port, "GET", "/api/progress", NULL, &c);
    assert_int_equal(r.status, 200);
    o = json_of(&r);
    assert_string_equal(json_string_value(json_object_get(o, "annotator")), emoji);
    json_decref(o);
    reply_free(&r);
    memcpy(emoji + 64 * 4, "\xf0\x9f\x98\x80", 5); /* 65 characters, NUL included */
    r = http(f->port, "GET", "/api/next", NULL, &a);
    assert_int_equal(r.status, 400);
    reply_free(&r);
    free(cookie);
}

static void invisible_characters_in_names(void **state)
{
    fixture *f = *state;
    /* Unicode category Cf anywhere; Zs at either end */
    static const char *const bad[] = {
        "a\xe2\x80\x8b" "b",         /* U+200B zero width space */
        "a\xe2\x80\x8c" "b",         /* U+200C zero width non-joiner */
        "a\xe2\x80\x8d" "b",         /* U+200D zero width joiner */
        "\xe2\x81\xa0" "bob",        /* U+2060 word joiner */
        "bob\xe2\x81\xa4",           /* U+2064 invisible plus */
        "bo\xc2\xad" "b",            /* U+00AD soft hyphen */
        "bo\xe1\xa0\x8e" "b",        /* U+180E Mongolian vowel separator */
        "bob\xef\xbb\xbf",           /* U+FEFF byte order mark */
        "bob\xf3\xa0\x80\x81",       /* U+E0001 language tag */
        "\xc2\xa0" "bob",            /* U+00A0 no-break space first */
        "bob\xe3\x80\x80",           /* U+3000 ideographic space last */
        "bob\xe2\x80\x83",           /* U+2003 em space last */
        "\xe2\x80\xaf" "bob",        /* U+202F narrow no-break space first */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        http_auth a = as(bad[i]);
        http_reply r = http(f->port, "GET", "/api/next", NULL, &a);
        if (r.status != 400) fail_msg("name %zu: got %ld", i, r.status);
        reply_free(&r);
    }
    static const char *const bad_json[] = {"bob\\u200b", "\\u00a0bob", "bob\\u3000",
                                           "\\ufeffbob", "b\\u2062ob"};
    expect_logins_refused(f, bad_json, sizeof bad_json / sizeof bad_json[0]);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks"), 0);
    /* a no-break space inside a name is visible enough: it is kept */
    http_auth ok = as("Ann\xc2\xa0" "Lee");
    http_reply r = http(f->port, "GET", "/api/next", NULL, &ok);
    assert_int_equal(r.status, 200);
    reply_free(&r);
    /* and the default name is held to the same rules */
    arb_annotate_server *srv = NULL;
    char *err = NULL;
    arb_annotate_params p = params_with(1);
    p.annotator = "bob\xe2\x80\x8b";
    assert_int_equal(arb_annotate_start(f->db, &p, &srv, &err), ARB_INVALID);
    assert_null(srv);
    assert_non_null(strstr(err, "invisible"));
    arb_free(err);
}

static void unknown_paths(void **state)
{
    fixture *f = *state;
    static const char *const paths[] = {"/../etc/passwd", "/app.js/../../etc/passwd",
                                        "/%2e%2e/%2e%2e/etc/passwd", "/webapp/app.js",
                                        "/api/../app.js", "/api/", "/api/nexts", "/API/next",
                                        "/favicon.ico", "//app.js", "/app.css.map"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        http_auth a = as("alice");
        http_reply r = http(f->port, "GET", paths[i], NULL, &a);
        if (r.status != 404) fail_msg("%s: got %ld", paths[i], r.status);
        assert_security_headers(&r);
        assert_null(strstr(r.body, "root:"));
        reply_free(&r);
    }
}

/* A percent-encoded NUL or other control character in the URL is refused with 400: the
** server decodes "/app.js%00.png" to a C string, and before this check served it as /app.js. */
static void control_characters_in_paths(void **state)
{
    fixture *f = *state;
    static const char *const paths[] = {"/app.js%00",     "/app.js%00.png", "/%00",
                                        "/index.html%00", "/api/next%00",   "/api/next%00x",
                                        "/app.js%0a",     "/app.js%0D%0A",  "/app.js%1f",
                                        "/app.js%7F",     "/%09app.js",     "/app.js?x=%00",
                                        "/api/next?a=%01"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        http_auth a = as("alice");
        http_reply r = http(f->port, "GET", paths[i], NULL, &a);
        if (r.status != 400) fail_msg("%s: got %ld", paths[i], r.status);
        assert_security_headers(&r);
        json_t *o = json_of(&r);
        assert_non_null(strstr(json_string_value(json_object_get(o, "error")), "control"));
        json_decref(o);
        reply_free(&r);
    }
    /* no task was handed out by the refused /api/next, and plain paths still work */
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks"), 0);
    http_auth a = as("alice");
    http_reply r = http(f->port, "GET", "/app.js?x=%41", NULL, &a);
    assert_int_equal(r.status, 200);
    reply_free(&r);
}

/* A question and answers that carry explicit bidirectional controls (an RLO that would show
** "]]B[[" reversed, an isolate left open) reach the page without them; right-to-left text
** (Arabic, Hebrew, with an RLM), tabs and newlines come through unchanged. */
static void bidi_controls_not_served(void **state)
{
    fixture *f = *state;
#define RTL "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7\xe2\x80\x8f \xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d"
    assert_int_equal(arb_test_exec_sql(f->store, "UPDATE answers SET answer = %Q WHERE item_id ="
                                       " 'i1'", "x\xe2\x80\xae]]B[[\xe2\x80\xac\t\xe2\x81\xa6"
                                       "y\n" RTL), 0);
    assert_int_equal(arb_test_exec_sql(f->store, "UPDATE items SET question = %Q WHERE id = 'i1'",
                                       "Q\xe2\x80\xaa" "1\xe2\x81\xa9 " RTL), 0);
    json_t *o = NULL;
    assert_true(next_task(f, "alice", &o) > 0);
    assert_string_equal(json_string_value(json_object_get(o, "question")), "Q1 " RTL);
    json_t *answers = json_object_get(o, "answers");
    assert_int_equal(json_array_size(answers), 2);
    for (size_t i = 0; i < 2; i++)
        assert_string_equal(json_string_value(json_array_get(answers, i)), "x]]B[[\ty\n" RTL);
    json_decref(o);
#undef RTL
}

/* ---- what the labels are for --------------------------------------------------------------- */

static void audit_sees_the_labels(void **state)
{
    fixture *f = *state;
    static const char *const names[] = {"alice"};
    label_round_robin(f, names, 1);
    arb_audit *audit = NULL;
    assert_int_equal(arb_audit_compute(f->store, NULL, &audit), ARB_OK);
    assert_int_equal(arb_audit_count(audit), 1);
    const arb_audit_row *row = arb_audit_row_at(audit, 0);
    assert_string_equal(row->candidate, "cand-M");
    /* alice labelled all 4 items, one label each: 4 majority labels, no ties */
    assert_int_equal(row->m.n_labelled_items, 4);
    assert_int_equal(row->m.n_label_ties, 0);
    assert_true(arb_defined(row->m.value[ARB_M_ACCURACY]));
    arb_audit_destroy(audit);
}

static void given_pairs(void **state)
{
    fixture *f = *state;
    arb_model_pair pairs[] = {{"other-M", "base-M"}, {"cand-M", "other-M"}};
    arb_annotate_params p = params_with(1);
    p.pairs = pairs;
    p.n_pairs = 2;
    restart(f, &p);
    json_t *o = NULL;
    /* pair 1 first: other-M vs base-M on i1..i4 (base-M did not answer i5): 4 tasks; then
    ** cand-M vs other-M on i1..i5: 5 tasks; 9 in all */
    long long t = next_task(f, "alice", &o);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "progress"),
                                                        "remaining")), 9);
    json_t *answers = json_object_get(o, "answers");
    const char *a0 = json_string_value(json_array_get(answers, 0));
    const char *a1 = json_string_value(json_array_get(answers, 1));
    assert_true((!strcmp(a0, "other answer 1") && !strcmp(a1, "base answer 1")) ||
                (!strcmp(a1, "other answer 1") && !strcmp(a0, "base answer 1")));
    json_decref(o);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks WHERE id = %lld AND "
                                  "candidate = 'other-M' AND baseline = 'base-M'", t), 1);
}

static void start_refuses_bad_parameters(void **state)
{
    fixture *f = *state;
    arb_annotate_server *srv = NULL;
    char *err = NULL;
    arb_annotate_params p = params_with(1);
    p.token = "too-short";
    assert_int_equal(arb_annotate_start(f->db, &p, &srv, &err), ARB_INVALID);
    assert_null(srv);
    assert_non_null(strstr(err, "token"));
    arb_free(err);

    p = params_with(0);
    assert_int_equal(arb_annotate_start(f->db, &p, &srv, &err), ARB_INVALID);
    assert_non_null(strstr(err, "overlap"));
    arb_free(err);

    p = params_with(1);
    p.annotator = "bad\nname";
    assert_int_equal(arb_annotate_start(f->db, &p, &srv, &err), ARB_INVALID);
    arb_free(err);

    p = params_with(1);
    arb_model_pair typo[] = {{"cand-M", "base-MM"}};
    p.pairs = typo;
    p.n_pairs = 1;
    assert_int_equal(arb_annotate_start(f->db, &p, &srv, &err), ARB_INVALID);
    assert_non_null(strstr(err, "base-MM"));
    arb_free(err);

    arb_model_pair twice[] = {{"cand-M", "base-M"}, {"cand-M", "base-M"}};
    p.pairs = twice;
    p.n_pairs = 2;
    assert_int_equal(arb_annotate_start(f->db, &p, &srv, &err), ARB_INVALID);
    assert_non_null(strstr(err, "twice"));
    arb_free(err);

    /* a store without side-by-side judgments and no pairs: nothing to serve */
    char dir[256], db[300];
    arb_store *empty = NULL;
    assert_int_equal(arb_test_store_with_items("annotate_empty", items_jsonl, dir, sizeof dir,
                                               &empty), 0);
    snprintf(db, sizeof db, "%s/arbiter.db", dir);
    p = params_with(1);
    assert_int_equal(arb_annotate_start(db, &p, &srv, &err), ARB_INVALID);
    assert_non_null(strstr(err, "nothing to annotate"));
    arb_free(err);
    arb_store_close(empty);
    arb_test_remove_dir(dir);
    arb_annotate_stop(NULL); /* accepts NULL */
}

/* ---- the command ------------------------------------------------------------------------- */

/* Runs the arbiter binary with args, stderr to err_path; returns the child's pid. */
static pid_t spawn(const char *const *args, const char *err_path)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(err_path, "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(127);
        execv(args[0], (char *const *)args);
        _exit(127);
    }
    return pid;
}

static int wait_exit(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void command_line(void **state)
{
    fixture *f = *state;
    const char *bin = getenv("ARB_BIN");
    if (!bin) {
        fprintf(stderr, "ARB_BIN not set: skipping the command-line test\n");
        skip();
    }
    char token_file[400], short_file[400], port_file[400], err_path[400], missing[400];
    snprintf(token_file, sizeof token_file, "%s/token.txt", f->dir);
    snprintf(short_file, sizeof short_file, "%s/short.txt", f->dir);
    snprintf(port_file, sizeof port_file, "%s/port.txt", f->dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", f->dir);
    snprintf(missing, sizeof missing, "%s/missing.db", f->dir);
    assert_int_equal(arb_test_write_file(token_file, "  " TOKEN "\n", strlen(TOKEN) + 3), 0);
    chmod(token_file, 0600);
    assert_int_equal(arb_test_write_file(short_file, "abc\n", 4), 0);

    /* a short token, an empty one, a missing database: usage errors (2) */
    const char *short_args[] = {bin, "annotate", "--db", f->db, "--token-file", short_file, NULL};
    assert_int_equal(wait_exit(spawn(short_args, err_path)), 2);
    assert_int_equal(arb_test_write_file(short_file, "\n", 1), 0);
    assert_int_equal(wait_exit(spawn(short_args, err_path)), 2);
    const char *missing_args[] = {bin, "annotate", "--db", missing, "--token-file", token_file,
                                  NULL};
    assert_int_equal(wait_exit(spawn(missing_args, err_path)), 2);
    struct stat sb;
    assert_int_equal(stat(missing, &sb), -1); /* and not created */

    /* a real run: serves, writes the port, stops on SIGTERM with 0 */
    const char *args[] = {bin, "annotate", "--db", f->db, "--token-file", token_file,
                          "--port", "0", "--port-file", port_file, "--annotator", "cli-expert",
                          NULL};
    pid_t pid = spawn(args, err_path);
    int port = 0;
    for (int i = 0; i < 200 && !port; i++) {
        FILE *pf = fopen(port_file, "r");
        if (pf) {
            if (fscanf(pf, "%d", &port) != 1) port = 0;
            fclose(pf);
        }
        if (!port) usleep(50 * 1000);
    }
    if (!port) {
        kill(pid, SIGKILL);
        wait_exit(pid);
        fail_msg("the command wrote no port");
    }
    http_auth a = {.bearer = TOKEN};
    http_reply r = http(port, "GET", "/api/next", NULL, &a);
    assert_int_equal(r.status, 200); /* the name falls back to --annotator */
    reply_free(&r);
    kill(pid, SIGTERM);
    assert_int_equal(wait_exit(pid), 0);
    assert_int_equal(query_int(f, "SELECT count(*) FROM annotation_tasks WHERE annotator = "
                                  "'cli-expert'"), 1);
    char *text = arb__read_file(err_path, NULL, NULL);
    assert_non_null(text);
    assert_non_null(strstr(text, "serving"));
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
    assert_non_null(strstr(text, url));
    assert_null(strstr(text, TOKEN)); /* never printed */
    free(text);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(static_files_without_token, setup, teardown),
        cmocka_unit_test_setup_teardown(api_needs_the_token, setup, teardown),
        cmocka_unit_test_setup_teardown(login_sets_cookies, setup, teardown),
        cmocka_unit_test_setup_teardown(next_is_blind_and_in_shown_order, setup, teardown),
        cmocka_unit_test_setup_teardown(label_stores_model_verdict, setup, teardown),
        cmocka_unit_test_setup_teardown(skip_stores_no_label, setup, teardown),
        cmocka_unit_test_setup_teardown(task_answered_once, setup, teardown),
        cmocka_unit_test_setup_teardown(another_annotators_task, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_label_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(overlap_one, setup, teardown),
        cmocka_unit_test_setup_teardown(overlap_two, setup, teardown),
        cmocka_unit_test_setup_teardown(two_servers_share_the_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(concurrent_annotators, setup, teardown),
        cmocka_unit_test_setup_teardown(lease_expiry_frees_the_task, setup, teardown),
        cmocka_unit_test_setup_teardown(expired_task_taken_meanwhile, setup, teardown),
        cmocka_unit_test_setup_teardown(labels_survive_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(progress_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(other_sites_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(posts_must_be_json, setup, teardown),
        cmocka_unit_test_setup_teardown(one_address_cannot_take_every_connection, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(busy_database_answers_503_quickly, setup, teardown),
        cmocka_unit_test_setup_teardown(slow_requests_are_cut_off, setup, teardown),
        cmocka_unit_test_setup_teardown(hostile_annotator_names, setup, teardown),
        cmocka_unit_test_setup_teardown(long_annotator_names, setup, teardown),
        cmocka_unit_test_setup_teardown(invisible_characters_in_names, setup, teardown),
        cmocka_unit_test_setup_teardown(unknown_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(control_characters_in_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(bidi_controls_not_served, setup, teardown),
        cmocka_unit_test_setup_teardown(audit_sees_the_labels, setup, teardown),
        cmocka_unit_test_setup_teardown(given_pairs, setup, teardown),
        cmocka_unit_test_setup_teardown(start_refuses_bad_parameters, setup, teardown),
        cmocka_unit_test_setup_teardown(command_line, setup, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return failed;
}
