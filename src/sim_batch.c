/*
** sim_batch.c -- the simulator's OpenAI Batch API (arbiter sim-server), so tests and the demo
** exercise `--batch submit|status|collect|wait` over HTTP: POST /v1/files (multipart/form-data,
** purpose and file), GET /v1/files/{id}/content, POST /v1/batches {input_file_id, endpoint
** "/v1/chat/completions", completion_window}, GET /v1/batches/{id}. Files live in memory for
** the server's lifetime. A batch is "validating", then "in_progress" while a worker thread
** waits batch_delay_ms and answers each line by POSTing its body to the server's own
** /v1/chat/completions (the same simulated judge as any call); then "completed" with an output
** file (status 200 lines) and, when some lines failed, an error file. Options:
** batch_fail_every N: every N-th line (1-based) fails with error {"code": "server_error"};
** batch_expire: the batch ends "expired" after answering its first half, the rest being error
** lines with {"code": "batch_expired"} (OpenAI's behaviour). Line ids are "batch_req_<batch>_<i>".
*/
#include "internal.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#define SIM_BATCH_SERVER_HEADER "arbiter-sim-server (SIMULATOR, not a language model)"

typedef struct sim_file {
    char *data;
    size_t len;
    char purpose[32];
} sim_file;

typedef struct sim_batch {
    size_t input;           /* file index */
    const char *status;     /* static strings */
    long output, errors;    /* file index or -1 */
    size_t total, completed, failed;
    long long created_at;
    pthread_t worker;
    int started;
} sim_batch;

struct arb__sim_batches {
    pthread_mutex_t mu;
    sim_file *files;
    size_t n_files, cap_files;
    sim_batch *batches;
    size_t n_batches, cap_batches;
    int port;
    double delay_ms;
    long fail_every;
    int expire;
    volatile int stop;
};

typedef struct worker_arg {
    arb__sim_batches *b;
    size_t index;
} worker_arg;

arb__sim_batches *arb__sim_batches_create(double delay_ms, long fail_every, int expire)
{
    arb__sim_batches *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    pthread_mutex_init(&b->mu, NULL);
    b->delay_ms = delay_ms;
    b->fail_every = fail_every;
    b->expire = expire;
    return b;
}

void arb__sim_batches_set_port(arb__sim_batches *b, int port)
{
    if (b) b->port = port;
}

void arb__sim_batches_destroy(arb__sim_batches *b)
{
    if (!b) return;
    b->stop = 1;
    for (size_t i = 0; i < b->n_batches; i++)
        if (b->batches[i].started) pthread_join(b->batches[i].worker, NULL);
    for (size_t i = 0; i < b->n_files; i++) free(b->files[i].data);
    free(b->files);
    free(b->batches);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* ---- replies ------------------------------------------------------------------------------ */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, char *body,
                             const char *type)
{
    if (!body) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body,
                                                             MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Server", SIM_BATCH_SERVER_HEADER);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply_error(struct MHD_Connection *conn, unsigned status,
                                   const char *message)
{
    json_t *e = json_pack("{s:{s:s,s:s,s:n}}", "error", "message", message, "type",
                          "invalid_request_error", "code");
    char *body = e ? json_dumps(e, JSON_COMPACT) : NULL;
    json_decref(e);
    return reply(conn, status, body, "application/json");
}

/* The batch object (OpenAI's shape); under b->mu. */
static char *batch_json(const arb__sim_batches *b, size_t i)
{
    const sim_batch *x = &b->batches[i];
    char out_id[32] = "", err_id[32] = "";
    if (x->output >= 0) snprintf(out_id, sizeof out_id, "file-%ld", x->output + 1);
    if (x->errors >= 0) snprintf(err_id, sizeof err_id, "file-%ld", x->errors + 1);
    return arb__sprintf(
        "{\"id\":\"batch_%zu\",\"object\":\"batch\",\"endpoint\":\"/v1/chat/completions\","
        "\"input_file_id\":\"file-%zu\",\"completion_window\":\"24h\",\"status\":\"%s\","
        "\"output_file_id\":%s%s%s,\"error_file_id\":%s%s%s,\"created_at\":%lld,"
        "\"request_counts\":{\"total\":%zu,\"completed\":%zu,\"failed\":%zu}}",
        i + 1, x->input + 1, x->status, *out_id ? "\"" : "", *out_id ? out_id : "null",
        *out_id ? "\"" : "", *err_id ? "\"" : "", *err_id ? err_id : "null", *err_id ? "\"" : "",
        x->created_at, x->total, x->completed, x->failed);
}

/* Adds a file (takes data); returns its index or -1. Under b->mu. */
static long add_file(arb__sim_batches *b, char *data, size_t len, const char *purpose)
{
    if (arb__grow(&b->files, &b->cap_files, b->n_files + 1, sizeof *b->files)) return -1;
    sim_file *f = &b->files[b->n_files];
    f->data = data;
    f->len = len;
    snprintf(f->purpose, sizeof f->purpose, "%s", purpose);
    return (long)b->n_files++;
}

/* ---- the worker ----------------------------------------------------------------------------- */

static void *batch_worker(void *arg)
{
    worker_arg w = *(worker_arg *)arg;
    free(arg);
    arb__sim_batches *b = w.b;
    for (double left = b->delay_ms; left > 0 && !b->stop; left -= 10) {
        struct timespec ts = {0, (long)((left < 10 ? left : 10) * 1e6)};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&b->mu);
    const sim_file *in = &b->files[b->batches[w.index].input];
    char *text = malloc(in->len + 1);
    size_t len = in->len;
    if (text) {
        memcpy(text, in->data, len);
        text[len] = '\0';
    }
    size_t total = b->batches[w.index].total;
    pthread_mutex_unlock(&b->mu);

    arb__buf out, err;
    arb__buf_init(&out, 0);
    arb__buf_init(&err, 0);
    char *url = arb__sprintf("http://127.0.0.1:%d/v1/chat/completions", b->port);
    arb_client_params cp = arb_client_default_params();
    cp.max_retries = 0;
    size_t answered_max = b->expire ? (total + 1) / 2 : total;
    size_t pos = 0, i = 0, completed = 0, failed = 0;
    const char *line;
    size_t n;
    while (text && url && arb__text_next_line(text, len, &pos, &line, &n)) {
        if (!n) continue;
        i++;
        json_t *req = json_loadb(line, n, 0, NULL);
        const char *custom_id = json_string_value(json_object_get(req, "custom_id"));
        json_t *body = json_object_get(req, "body");
        char *id = arb__sprintf("batch_req_%zu_%zu", w.index + 1, i);
        json_t *o = json_pack("{s:s?,s:s?,s:n,s:n}", "id", id, "custom_id", custom_id,
                              "response", "error");
        const char *fail_code = i > answered_max ? "batch_expired"
                                : b->fail_every > 0 && i % (size_t)b->fail_every == 0
                                    ? "server_error"
                                    : !custom_id || !json_is_object(body) ? "invalid_request"
                                                                          : NULL;
        int ok = 0;
        if (!fail_code && o) {
            char *sent = json_dumps(body, JSON_COMPACT);
            arb__buf r;
            arb__buf_init(&r, 0);
            long status = 0;
            char *error = NULL;
            arb__http_request rq = {.url = url, .json_body = sent};
            int rc = sent ? arb__http_fetch(&cp, &rq, &r, &status, &error) : -1;
            json_t *reply_body = rc == 0 ? json_loadb(r.data ? r.data : "", r.len, 0, NULL) : NULL;
            if (reply_body) {
                json_object_set_new(o, "response",
                                    json_pack("{s:i,s:s,s:o}", "status_code", (int)status,
                                              "request_id", id ? id : "", "body", reply_body));
                ok = 1;
            } else {
                fail_code = "server_error";
            }
            free(error);
            free(sent);
            arb__buf_free(&r);
        }
        if (!ok && o)
            json_object_set_new(o, "error",
                                json_pack("{s:s,s:s}", "code", fail_code ? fail_code : "?",
                                          "message", !strcmp(fail_code ? fail_code : "",
                                                             "batch_expired")
                                                         ? "This request could not be executed "
                                                           "before the completion window "
                                                           "expired."
                                                         : "simulated batch failure"));
        char *dumped = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (dumped) arb__buf_printf(ok ? &out : &err, "%s\n", dumped);
        if (ok) completed++;
        else failed++;
        free(dumped);
        free(id);
        json_decref(o);
        json_decref(req);
    }
    pthread_mutex_lock(&b->mu);
    sim_batch *x = &b->batches[w.index];
    x->completed = completed;
    x->failed = failed;
    x->output = out.len ? add_file(b, out.data, out.len, "batch_output") : -1;
    if (x->output >= 0) arb__buf_init(&out, 0);
    x->errors = err.len ? add_file(b, err.data, err.len, "batch_output") : -1;
    if (x->errors >= 0) arb__buf_init(&err, 0);
    x->status = b->expire ? "expired" : "completed";
    pthread_mutex_unlock(&b->mu);
    arb__buf_free(&out);
    arb__buf_free(&err);
    free(url);
    free(text);
    return NULL;
}

/* ---- requests ------------------------------------------------------------------------------- */

/* The first n2 bytes of needle in s[0..n), or NULL (memmem is not C11). */
static const char *find_bytes(const char *s, size_t n, const char *needle, size_t n2)
{
    for (size_t i = 0; n2 <= n && i + n2 <= n; i++)
        if (s[i] == needle[0] && !memcmp(s + i, needle, n2)) return s + i;
    return NULL;
}

/* Finds the multipart part named name: *data and *n get its content. */
static int multipart_part(const char *body, size_t len, const char *boundary, const char *name,
                          const char **data, size_t *n)
{
    char delim[256], want[96];
    snprintf(delim, sizeof delim, "\r\n--%s", boundary);
    snprintf(want, sizeof want, "name=\"%s\"", name);
    size_t dl = strlen(delim);
    /* the first delimiter has no leading CRLF */
    const char *p = body, *end = body + len;
    for (;;) {
        const char *start = find_bytes(p, (size_t)(end - p), delim + 2, dl - 2);
        if (!start) return 0;
        const char *headers = start + dl - 2;
        const char *hend = find_bytes(headers, (size_t)(end - headers), "\r\n\r\n", 4);
        if (!hend) return 0;
        const char *content = hend + 4;
        const char *next = find_bytes(content, (size_t)(end - content), delim, dl);
        if (!next) return 0;
        if (find_bytes(headers, (size_t)(hend - headers), want, strlen(want))) {
            *data = content;
            *n = (size_t)(next - content);
            return 1;
        }
        p = next + 2;
    }
}

static enum MHD_Result upload_file(arb__sim_batches *b, struct MHD_Connection *conn,
                                   const arb__upload *rq)
{
    const char *type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
    const char *bd = type ? strstr(type, "boundary=") : NULL;
    char boundary[200];
    if (!bd || strncmp(type, "multipart/form-data", 19))
        return reply_error(conn, 400, "POST /v1/files takes multipart/form-data (purpose, file)");
    bd += 9;
    size_t bl = strcspn(bd, ";");
    if (*bd == '"') {
        bd++;
        bl = strcspn(bd, "\"");
    }
    if (!bl || bl >= sizeof boundary) return reply_error(conn, 400, "bad multipart boundary");
    memcpy(boundary, bd, bl);
    boundary[bl] = '\0';
    const char *data = NULL, *purpose = NULL;
    size_t n = 0, pn = 0;
    const char *body = rq->body.data ? rq->body.data : "";
    if (!multipart_part(body, rq->body.len, boundary, "purpose", &purpose, &pn) ||
        pn != 5 || memcmp(purpose, "batch", 5))
        return reply_error(conn, 400, "field \"purpose\" must be \"batch\"");
    if (!multipart_part(body, rq->body.len, boundary, "file", &data, &n))
        return reply_error(conn, 400, "missing the \"file\" part");
    char *copy = malloc(n + 1);
    if (!copy) return MHD_NO;
    memcpy(copy, data, n);
    copy[n] = '\0';
    pthread_mutex_lock(&b->mu);
    long idx = add_file(b, copy, n, "batch");
    pthread_mutex_unlock(&b->mu);
    if (idx < 0) {
        free(copy);
        return MHD_NO;
    }
    return reply(conn, 200,
                 arb__sprintf("{\"id\":\"file-%ld\",\"object\":\"file\",\"bytes\":%zu,"
                              "\"filename\":\"batch.jsonl\",\"purpose\":\"batch\"}",
                              idx + 1, n),
                 "application/json");
}

static enum MHD_Result create_batch(arb__sim_batches *b, struct MHD_Connection *conn,
                                    const arb__upload *rq)
{
    json_t *req = json_loadb(rq->body.data ? rq->body.data : "", rq->body.len, 0, NULL);
    const char *file = json_string_value(json_object_get(req, "input_file_id"));
    const char *endpoint = json_string_value(json_object_get(req, "endpoint"));
    unsigned long idx = 0;
    enum MHD_Result ret;
    if (!file || sscanf(file, "file-%lu", &idx) != 1 || !endpoint ||
        strcmp(endpoint, "/v1/chat/completions")) {
        json_decref(req);
        return reply_error(conn, 400, "need input_file_id (an uploaded file) and endpoint "
                                      "\"/v1/chat/completions\"");
    }
    json_decref(req);
    pthread_mutex_lock(&b->mu);
    if (idx < 1 || idx > b->n_files || strcmp(b->files[idx - 1].purpose, "batch")) {
        pthread_mutex_unlock(&b->mu);
        return reply_error(conn, 404, "no such input file");
    }
    worker_arg *w = malloc(sizeof *w);
    if (!w || arb__grow(&b->batches, &b->cap_batches, b->n_batches + 1, sizeof *b->batches)) {
        pthread_mutex_unlock(&b->mu);
        free(w);
        return MHD_NO;
    }
    sim_batch *x = &b->batches[b->n_batches];
    memset(x, 0, sizeof *x);
    x->input = idx - 1;
    x->status = "in_progress";
    x->output = x->errors = -1;
    x->created_at = (long long)time(NULL);
    const sim_file *f = &b->files[idx - 1];
    for (size_t k = 0; k < f->len; k++) x->total += f->data[k] == '\n';
    if (f->len && f->data[f->len - 1] != '\n') x->total++;
    w->b = b;
    w->index = b->n_batches;
    b->n_batches++;
    x->started = !pthread_create(&x->worker, NULL, batch_worker, w);
    if (!x->started) {
        free(w);
        x->status = "failed";
    }
    char *body = batch_json(b, b->n_batches - 1);
    pthread_mutex_unlock(&b->mu);
    ret = reply(conn, 200, body, "application/json");
    return ret;
}

/* See internal.h. */
int arb__sim_batches_handle(arb__sim_batches *b, struct MHD_Connection *conn, const char *url,
                            const char *method, const arb__upload *rq, int *result)
{
    enum MHD_Result r = MHD_NO;
    enum MHD_Result *ret = &r;
    if (!b) return 0;
    if (!strncmp(url, "/v1/", 4)) url += 3;
    int get = !strcmp(method, MHD_HTTP_METHOD_GET), post = !strcmp(method, MHD_HTTP_METHOD_POST);
    unsigned long id = 0;
    char tail[16] = "";
    if (!strcmp(url, "/files") && post) {
        *ret = upload_file(b, conn, rq);
    } else if (!strcmp(url, "/batches") && post) {
        *ret = create_batch(b, conn, rq);
    } else if (get && sscanf(url, "/files/file-%lu/%15s", &id, tail) == 2 &&
               !strcmp(tail, "content")) {
        pthread_mutex_lock(&b->mu);
        char *copy = id >= 1 && id <= b->n_files ? arb__strndup(b->files[id - 1].data,
                                                                b->files[id - 1].len)
                                                 : NULL;
        int known = id >= 1 && id <= b->n_files;
        pthread_mutex_unlock(&b->mu);
        *ret = known ? reply(conn, 200, copy, "application/jsonl")
                     : reply_error(conn, 404, "no such file");
    } else if (get && sscanf(url, "/batches/batch_%lu%15s", &id, tail) == 1) {
        pthread_mutex_lock(&b->mu);
        char *body = id >= 1 && id <= b->n_batches ? batch_json(b, id - 1) : NULL;
        int known = id >= 1 && id <= b->n_batches;
        pthread_mutex_unlock(&b->mu);
        *ret = known ? reply(conn, 200, body, "application/json")
                     : reply_error(conn, 404, "no such batch");
    } else if (!strncmp(url, "/files", 6) || !strncmp(url, "/batches", 8)) {
        *ret = reply_error(conn, 404, "unknown Batch API endpoint or method");
    } else {
        return 0;
    }
    *result = (int)r;
    return 1;
}
