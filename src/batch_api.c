/*
** batch_api.c -- the OpenAI HTTP Batch API for every judging protocol (--batch submit|status|
** collect|wait): the calls a run queued (batch_calls) are uploaded as batch input files
** (POST {base}/files, multipart, purpose=batch) and batches are created for them (POST
** {base}/batches {input_file_id, endpoint "/v1/chat/completions", completion_window "24h"}),
** one set per endpoint and key variable, split at 50,000 lines / 200 MB. Each batch is stored
** (table batches) with its calls, so another process or machine resumes polling
** (GET {base}/batches/{id}: status, output_file_id, error_file_id, request_counts) and
** collecting (GET {base}/files/{id}/content, stored through the batch file ingest, batch.c):
** a batch that ended (completed, failed, expired, cancelled) is collected once, whatever it
** holds; calls it did not answer (an expired batch's rest, error lines) stay pending and go in
** the next submission. A batch created but killed before it was stored is not known to the
** store: its calls are submitted again (never judged twice: the first stored reply wins).
** Rounds (dependent calls: later debate and discussion turns) are arb__exec_protocol's loop:
** submit and wait both submit after the plan; wait goes on round after round.
*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#define BATCH_MAX_LINES 50000
#define BATCH_MAX_BYTES ((size_t)200 * 1000 * 1000)

/* base URL (trailing slashes dropped) + path; caller frees. */
static char *api_url(const char *base, const char *path)
{
    size_t n = strlen(base);
    while (n && base[n - 1] == '/') n--;
    return arb__sprintf("%.*s%s", (int)n, base, path);
}

/* One control call; *out gets the reply as JSON (caller decrefs), or text with raw_text. */
static arb_status call_api(arb_store *s, const arb_client_params *cp, const arb__http_request *rq,
                           const char *what, json_t **out, arb__buf *raw_text)
{
    arb__buf reply;
    arb__buf_init(&reply, 0);
    long status = 0;
    char *error = NULL;
    arb_status st = ARB_OK;
    int rc = arb__http_fetch(cp, rq, &reply, &status, &error);
    if (rc < 0) {
        st = arb__store_fail(s, ARB_NOMEM, "out of memory");
    } else if (rc > 0) {
        char *url = arb__url_redact(rq->url);
        st = arb__store_fail(s, ARB_HTTP, "Batch API: %s (%s): %s", what, url ? url : "?", error);
        free(url);
    } else if (raw_text) {
        *raw_text = reply;
        arb__buf_init(&reply, 0);
    } else {
        json_error_t jerr;
        *out = json_loadb(reply.data ? reply.data : "", reply.len, 0, &jerr);
        if (!json_is_object(*out)) {
            json_decref(*out);
            *out = NULL;
            st = arb__store_fail(s, ARB_PARSE, "Batch API: %s: the reply is not a JSON object",
                                 what);
        }
    }
    free(error);
    arb__buf_free(&reply);
    return st;
}

/* ---- submit --------------------------------------------------------------------------------- */

typedef struct pending_call {
    char *key, *request, *base_url, *api_key_env;
} pending_call;

typedef struct pending_list {
    pending_call *v;
    size_t n, cap;
} pending_list;

static int collect_pending(const char *key, const char *request, const char *base_url,
                           const char *api_key_env, void *ud)
{
    pending_list *l = ud;
    if (arb__grow(&l->v, &l->cap, l->n + 1, sizeof *l->v)) return -1;
    pending_call *c = &l->v[l->n];
    c->key = arb__strdup(key);
    c->request = arb__strdup(request);
    c->base_url = arb__strdup(base_url);
    c->api_key_env = api_key_env ? arb__strdup(api_key_env) : NULL;
    l->n++;
    return c->key && c->request && c->base_url && (!api_key_env || c->api_key_env) ? 0 : -1;
}

static void pending_free(pending_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].key);
        free(l->v[i].request);
        free(l->v[i].base_url);
        free(l->v[i].api_key_env);
    }
    free(l->v);
}

static int same_endpoint(const pending_call *a, const pending_call *b)
{
    return !strcmp(a->base_url, b->base_url) &&
           ((!a->api_key_env && !b->api_key_env) ||
            (a->api_key_env && b->api_key_env && !strcmp(a->api_key_env, b->api_key_env)));
}

/* Uploads calls v[0..n) as one input file, creates their batch and stores it. */
static arb_status submit_one(arb_store *s, const arb_client_params *cp, const pending_call *v,
                             size_t n, arb_run_stats *stats)
{
    arb__buf file;
    arb__buf_init(&file, 0);
    const char **keys = malloc(n * sizeof *keys);
    char *auth = NULL, *files_url = NULL, *batches_url = NULL, *create = NULL;
    json_t *up = NULL, *batch = NULL;
    arb_status st = ARB_OK;
    if (!keys) goto nomem;
    for (size_t i = 0; i < n; i++) {
        keys[i] = v[i].key;
        if (arb__buf_printf(&file, "{\"custom_id\":\"%s\",\"method\":\"POST\",\"url\":"
                            "\"/v1/chat/completions\",\"body\":%s}\n", v[i].key, v[i].request))
            goto nomem;
    }
    if (!*v[0].base_url) {
        st = arb__store_fail(s, ARB_INVALID, "Batch API: call %s has no endpoint (queued "
                             "without --judge-url or url:)", v[0].key);
        goto done;
    }
    if (v[0].api_key_env && *v[0].api_key_env &&
        !(auth = arb__judge_auth_header(v[0].api_key_env))) {
        st = arb__store_fail(s, ARB_INVALID, "Batch API: the key variable %s is unset, empty or "
                             "holds control characters", v[0].api_key_env);
        goto done;
    }
    if (!(files_url = api_url(v[0].base_url, "/files")) ||
        !(batches_url = api_url(v[0].base_url, "/batches")))
        goto nomem;
    arb__http_request rq = {.url = files_url, .auth_header = auth, .file_data = file.data,
                            .file_len = file.len, .file_name = "arbiter-batch.jsonl",
                            .file_purpose = "batch"};
    if ((st = call_api(s, cp, &rq, "uploading the batch input file", &up, NULL))) goto done;
    const char *file_id = json_string_value(json_object_get(up, "id"));
    if (!file_id) {
        st = arb__store_fail(s, ARB_PARSE, "Batch API: the uploaded file has no \"id\"");
        goto done;
    }
    create = arb__sprintf("{\"input_file_id\":\"%s\",\"endpoint\":\"/v1/chat/completions\","
                          "\"completion_window\":\"24h\"}", file_id);
    if (!create || strpbrk(file_id, "\"\\")) {
        st = create ? arb__store_fail(s, ARB_PARSE, "Batch API: odd file id") : ARB_NOMEM;
        if (st == ARB_NOMEM) goto nomem;
        goto done;
    }
    arb__http_request crq = {.url = batches_url, .auth_header = auth, .json_body = create};
    if ((st = call_api(s, cp, &crq, "creating the batch", &batch, NULL))) goto done;
    const char *id = json_string_value(json_object_get(batch, "id"));
    const char *status = json_string_value(json_object_get(batch, "status"));
    if (!id) {
        st = arb__store_fail(s, ARB_PARSE, "Batch API: the created batch has no \"id\"");
        goto done;
    }
    arb__batch_row row = {.id = id, .base_url = v[0].base_url, .api_key_env = v[0].api_key_env,
                          .input_file_id = file_id, .status = status ? status : "validating"};
    if ((st = arb__store_put_batch(s, &row, keys, n))) goto done;
    stats->batch_submitted++;
    stats->batch_open++;
    goto done;
nomem:
    st = arb__store_fail(s, ARB_NOMEM, "out of memory");
done:
    if (auth) memset(auth, 0, strlen(auth));
    free(auth);
    free(files_url);
    free(batches_url);
    free(create);
    free(keys);
    json_decref(up);
    json_decref(batch);
    arb__buf_free(&file);
    return st;
}

static arb_status submit_pending(arb_store *s, const arb_client_params *cp, arb_run_stats *stats)
{
    pending_list l = {0};
    arb_status st = arb__store_each_unsubmitted_batch_call(s, collect_pending, &l);
    size_t start = 0, bytes = 0;
    for (size_t i = 0; !st && i <= l.n; i++) {
        size_t len = i < l.n ? strlen(l.v[i].request) + 128 : 0;
        int cut = i == l.n || (i > start && (!same_endpoint(&l.v[start], &l.v[i]) ||
                                             i - start >= BATCH_MAX_LINES ||
                                             bytes + len > BATCH_MAX_BYTES));
        if (cut && i > start) {
            st = submit_one(s, cp, l.v + start, i - start, stats);
            start = i;
            bytes = 0;
        }
        bytes += len;
    }
    pending_free(&l);
    return st;
}

/* ---- poll and collect ----------------------------------------------------------------------- */

typedef struct open_batch {
    char *id, *base_url, *api_key_env, *status, *output_file_id, *error_file_id;
    long long n_calls, n_completed, n_failed;
} open_batch;

typedef struct open_list {
    open_batch *v;
    size_t n, cap;
} open_list;

static char *dup_or_null(const char *s, int *bad)
{
    if (!s) return NULL;
    char *d = arb__strdup(s);
    if (!d) *bad = 1;
    return d;
}

static int collect_open(const arb__batch_row *b, void *ud)
{
    open_list *l = ud;
    if (arb__grow(&l->v, &l->cap, l->n + 1, sizeof *l->v)) return -1;
    int bad = 0;
    open_batch *o = &l->v[l->n++];
    o->id = dup_or_null(b->id, &bad);
    o->base_url = dup_or_null(b->base_url, &bad);
    o->api_key_env = dup_or_null(b->api_key_env, &bad);
    o->status = dup_or_null(b->status, &bad);
    o->output_file_id = dup_or_null(b->output_file_id, &bad);
    o->error_file_id = dup_or_null(b->error_file_id, &bad);
    o->n_calls = b->n_calls;
    o->n_completed = b->n_completed;
    o->n_failed = b->n_failed;
    return bad ? -1 : 0;
}

static void open_free(open_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        open_batch *o = &l->v[i];
        free(o->id);
        free(o->base_url);
        free(o->api_key_env);
        free(o->status);
        free(o->output_file_id);
        free(o->error_file_id);
    }
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

static int has_ended(const char *status)
{
    return status && (!strcmp(status, "completed") || !strcmp(status, "failed") ||
                      !strcmp(status, "expired") || !strcmp(status, "cancelled"));
}

static void set_text(char **field, json_t *v)
{
    const char *s = json_string_value(v);
    if (!s) return;
    char *d = arb__strdup(s);
    if (!d) return;
    free(*field);
    *field = d;
}

static arb__batch_row row_of(const open_batch *o, int collected)
{
    return (arb__batch_row){.id = o->id, .base_url = o->base_url, .api_key_env = o->api_key_env,
                            .status = o->status, .output_file_id = o->output_file_id,
                            .error_file_id = o->error_file_id, .n_calls = o->n_calls,
                            .n_completed = o->n_completed, .n_failed = o->n_failed,
                            .collected = collected};
}

/* GET the batch's state and store it. */
static arb_status poll_one(arb_store *s, const arb_client_params *cp, open_batch *o,
                           const char *auth)
{
    char *path = arb__sprintf("/batches/%s", o->id);
    char *url = path ? api_url(o->base_url, path) : NULL;
    free(path);
    if (!url) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    json_t *b = NULL;
    arb__http_request rq = {.url = url, .auth_header = auth};
    arb_status st = call_api(s, cp, &rq, "polling a batch", &b, NULL);
    free(url);
    if (st) return st;
    set_text(&o->status, json_object_get(b, "status"));
    set_text(&o->output_file_id, json_object_get(b, "output_file_id"));
    set_text(&o->error_file_id, json_object_get(b, "error_file_id"));
    json_t *counts = json_object_get(b, "request_counts");
    if (json_is_integer(json_object_get(counts, "completed")))
        o->n_completed = json_integer_value(json_object_get(counts, "completed"));
    if (json_is_integer(json_object_get(counts, "failed")))
        o->n_failed = json_integer_value(json_object_get(counts, "failed"));
    json_decref(b);
    arb__batch_row row = row_of(o, 0);
    return arb__store_update_batch(s, &row);
}

/* Downloads file_id's content and stores its lines (batch file ingest). */
static arb_status fetch_and_ingest(arb_store *s, const arb_client_params *cp, const open_batch *o,
                                   const char *file_id, const char *auth, arb_run_stats *stats)
{
    char *path = arb__sprintf("/files/%s/content", file_id);
    char *url = path ? api_url(o->base_url, path) : NULL;
    char *name = arb__sprintf("batch %s file %s", o->id, file_id);
    free(path);
    arb_status st = ARB_OK;
    arb__buf text;
    arb__buf_init(&text, 0);
    if (!url || !name) {
        st = arb__store_fail(s, ARB_NOMEM, "out of memory");
        goto done;
    }
    arb__http_request rq = {.url = url, .auth_header = auth};
    if ((st = call_api(s, cp, &rq, "downloading a batch file", NULL, &text))) goto done;
    arb_batch_ingest_stats is;
    st = arb__batch_ingest_text(s, name, text.data ? text.data : (char *)"", text.len, &is);
    stats->batch_replies += is.ok;
    stats->batch_failed += is.failed;
done:
    arb__buf_free(&text);
    free(url);
    free(name);
    return st;
}

static void sleep_s(double s)
{
    /* in steps, so a stop request (SIGINT) is seen within 0.1 s */
    for (double left = s; left > 0 && !arb__stop_requested; left -= 0.1) {
        double step = left < 0.1 ? left : 0.1;
        struct timespec ts = {0, (long)(step * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* See internal.h. */
arb_status arb__batch_api_before(arb_store *s, const arb_client_params *cp, arb_run_stats *stats)
{
    if (cp->batch_action != ARB_BATCH_STATUS && cp->batch_action != ARB_BATCH_COLLECT &&
        cp->batch_action != ARB_BATCH_WAIT)
        return ARB_OK;
    open_list l = {0};
    arb_status st = ARB_OK;
    for (;;) {
        open_free(&l);
        if ((st = arb__store_each_open_batch(s, collect_open, &l))) break;
        size_t running = 0;
        for (size_t i = 0; i < l.n && !st; i++) {
            open_batch *o = &l.v[i];
            char *auth = o->api_key_env && *o->api_key_env ? arb__judge_auth_header(o->api_key_env)
                                                            : NULL;
            if (o->api_key_env && *o->api_key_env && !auth) {
                st = arb__store_fail(s, ARB_INVALID, "Batch API: the key variable %s is unset, "
                                     "empty or holds control characters", o->api_key_env);
                break;
            }
            if (!has_ended(o->status)) st = poll_one(s, cp, o, auth);
            if (!st && has_ended(o->status) && cp->batch_action != ARB_BATCH_STATUS) {
                /* output first, then errors: an expired batch's partial output is kept */
                if (o->output_file_id)
                    st = fetch_and_ingest(s, cp, o, o->output_file_id, auth, stats);
                if (!st && o->error_file_id)
                    st = fetch_and_ingest(s, cp, o, o->error_file_id, auth, stats);
                arb__batch_row row = row_of(o, 1);
                if (!st && !(st = arb__store_update_batch(s, &row))) stats->batch_collected++;
            } else if (!st && !has_ended(o->status)) {
                running++;
            }
            if (auth) memset(auth, 0, strlen(auth));
            free(auth);
        }
        stats->batch_running = running;
        stats->batch_open = running + (cp->batch_action == ARB_BATCH_STATUS
                                           ? l.n - running : 0);
        stats->batch_status = cp->batch_action == ARB_BATCH_STATUS;
        if (st || cp->batch_action != ARB_BATCH_WAIT || !running) break;
        if (arb__stop_requested) {
            st = arb__store_fail(s, ARB_INTERRUPTED, "interrupted while waiting for %zu "
                                 "batches; run again to go on waiting", running);
            break;
        }
        sleep_s(cp->batch_poll_s > 0 ? cp->batch_poll_s : 30);
    }
    open_free(&l);
    return st;
}

/* See internal.h. */
arb_status arb__batch_api_after(arb_store *s, const arb_client_params *cp, arb_run_stats *stats)
{
    if (cp->batch_out) {
        arb_batch_export_params bp = arb_batch_export_default_params();
        arb_batch_export_stats bs;
        bp.path = cp->batch_out;
        arb_status st = arb_batch_export(s, &bp, &bs);
        stats->batch_written = bs.calls;
        stats->batch_files = bs.files;
        if (st) return st;
    }
    return cp->batch_action == ARB_BATCH_SUBMIT || cp->batch_action == ARB_BATCH_WAIT
               ? submit_pending(s, cp, stats)
               : ARB_OK;
}
