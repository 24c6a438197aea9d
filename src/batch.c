/*
** batch.c -- batch files for a provider's Batch API or an offline engine (vLLM run-batch):
** writes the calls a run queued (--batch export; table batch_calls) as request lines, and
** stores the replies of an output file in calls exactly as replies that came back by HTTP.
**
** Request line (OpenAI batch input): {"custom_id": KEY, "method": "POST", "url":
** "/v1/chat/completions", "body": BODY}, KEY the call key, BODY the canonical request body a
** run would send. Files are split at the provider's limits (50,000 lines, 200 MB).
** Output line (OpenAI batch output; vLLM run-batch writes the same): {"id", "custom_id",
** "response": {"status_code", "request_id", "body"} or null, "error": null or {"code",
** "message"} (a string is accepted too)}.
** Ingest reads the whole file first and stores nothing when any line is bad; then, in one
** transaction, each line becomes a calls row through arb__store_settle_call with the same reply
** parse as a call sent by exec.c (arb__judge_parse_reply, the key redacted): a 200 with a
** usable body is a successful call, anything else a failed call that the next run sends (or
** queues) again. The judgments are made by the protocol's own done callback when the judging
** command runs next and takes the stored calls, the one path every judgment takes.
** A line whose call is stored already, or whose id was the last one stored for its call, is
** skipped: ingesting a file twice changes nothing.
*/
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define BATCH_URL "/v1/chat/completions"

/* See arbiter.h. */
char *arb_batch_part_path(const char *path, size_t part)
{
    if (!path) return NULL;
    if (part <= 1) return arb__strdup(path);
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == (slash ? slash + 1 : path))
        dot = path + strlen(path); /* no extension: the number goes at the end */
    size_t stem = (size_t)(dot - path);
    size_t size = strlen(path) + 32;
    char *out = malloc(size);
    if (out) snprintf(out, size, "%.*s.%zu%s", (int)stem, path, part, dot);
    return out;
}

typedef struct export_state {
    arb_store *store;
    const arb_batch_export_params *params;
    arb_batch_export_stats *stats;
    FILE *f;
    char *path;           /* of the part being written */
    size_t lines, bytes;  /* in that part */
    arb_status st;
} export_state;

static arb_status close_part(export_state *x)
{
    arb_status st = ARB_OK;
    if (x->f && fclose(x->f))
        st = arb__store_fail(x->store, ARB_IO, "cannot write %s: %s", x->path, strerror(errno));
    x->f = NULL;
    free(x->path);
    x->path = NULL;
    return st;
}

static arb_status open_part(export_state *x)
{
    arb_status st = close_part(x);
    if (st) return st;
    x->path = arb_batch_part_path(x->params->path, x->stats->files + 1);
    if (!x->path) return arb__store_fail(x->store, ARB_NOMEM, "out of memory");
    x->f = fopen(x->path, "w");
    if (!x->f)
        return arb__store_fail(x->store, ARB_IO, "cannot write %s: %s", x->path, strerror(errno));
    x->stats->files++;
    x->lines = x->bytes = 0;
    return ARB_OK;
}

static int export_line(const char *key, const char *request_json, void *ud)
{
    export_state *x = ud;
    static const char head[] = "{\"custom_id\":\"";
    static const char mid[] = "\",\"method\":\"POST\",\"url\":\"" BATCH_URL "\",\"body\":";
    size_t len = (sizeof head - 1) + strlen(key) + (sizeof mid - 1) + strlen(request_json) + 2;
    if (len > x->params->max_bytes) {
        x->st = arb__store_fail(x->store, ARB_TOOBIG,
                                "call %s: its request line (%zu bytes) is larger than a batch "
                                "file may be (%zu bytes)", key, len, x->params->max_bytes);
        return 1;
    }
    if (x->lines && (x->lines >= x->params->max_lines || x->bytes + len > x->params->max_bytes) &&
        (x->st = open_part(x)))
        return 1;
    if (fprintf(x->f, "%s%s%s%s}\n", head, key, mid, request_json) < 0) {
        x->st = arb__store_fail(x->store, ARB_IO, "cannot write %s: %s", x->path, strerror(errno));
        return 1;
    }
    x->lines++;
    x->bytes += len;
    x->stats->calls++;
    x->stats->bytes += len;
    return 0;
}

/* See arbiter.h. */
arb_batch_export_params arb_batch_export_default_params(void)
{
    return (arb_batch_export_params){.path = NULL, .max_lines = 50000,
                                     .max_bytes = (size_t)200 * 1000 * 1000};
}

/* See arbiter.h. */
arb_status arb_batch_export(arb_store *store, const arb_batch_export_params *params,
                            arb_batch_export_stats *stats)
{
    arb_batch_export_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    if (!store) return ARB_INVALID;
    if (!params || !params->path || !*params->path || params->max_lines < 1 ||
        params->max_bytes < 1024)
        return arb__store_fail(store, ARB_INVALID, "batch export: need a file name, at least 1 "
                               "line and 1024 bytes per file");
    export_state x = {.store = store, .params = params, .stats = stats};
    /* The first file is always written, empty when nothing waits, so no stale requests stay
    ** under its name. */
    arb_status st = open_part(&x);
    if (!st) st = arb__store_each_pending_batch_call(store, export_line, &x);
    if (!st) st = x.st;
    arb_status closed = close_part(&x);
    return st ? st : closed;
}

/* ---- ingest ----------------------------------------------------------------------------- */

/* What one output line says. Strings borrowed from the line's JSON. */
typedef struct result_line {
    const char *id;          /* the output line's id, or NULL */
    const char *custom_id;
    long status;             /* response.status_code, 0 when no response */
    json_t *body;            /* response.body (object) or NULL */
    const char *error_code;  /* error.code, or NULL */
    const char *error_text;  /* error.message or the error string, or NULL */
} result_line;

/* Reads line lineno of path into *r; ARB_PARSE with "path:line: field ..." in the store. */
static arb_status read_result(arb_store *s, const char *path, size_t lineno, json_t *root,
                              result_line *r)
{
    memset(r, 0, sizeof *r);
    if (!json_is_object(root))
        return arb__store_fail(s, ARB_PARSE, "%s:%zu: expected a JSON object (a batch output "
                               "line)", path, lineno);
    json_t *v = json_object_get(root, "custom_id");
    if (!json_is_string(v) || !json_string_length(v))
        return arb__store_fail(s, ARB_PARSE, "%s:%zu: field \"custom_id\": expected the call's "
                               "key, a non-empty string", path, lineno);
    r->custom_id = json_string_value(v);
    v = json_object_get(root, "id");
    if (v && !json_is_null(v) && !json_is_string(v))
        return arb__store_fail(s, ARB_PARSE, "%s:%zu: field \"id\": expected a string", path,
                               lineno);
    r->id = json_string_value(v);
    json_t *err = json_object_get(root, "error");
    if (json_is_string(err)) {
        r->error_text = json_string_value(err);
    } else if (json_is_object(err)) {
        json_t *msg = json_object_get(err, "message"), *code = json_object_get(err, "code");
        if ((msg && !json_is_null(msg) && !json_is_string(msg)) ||
            (code && !json_is_null(code) && !json_is_string(code)))
            return arb__store_fail(s, ARB_PARSE, "%s:%zu: field \"error\": expected "
                                   "{\"code\": string, \"message\": string}", path, lineno);
        r->error_text = msg && json_is_string(msg) ? json_string_value(msg) : "(no message)";
        r->error_code = json_string_value(code);
    } else if (err && !json_is_null(err)) {
        return arb__store_fail(s, ARB_PARSE, "%s:%zu: field \"error\": expected null, an object "
                               "or a string", path, lineno);
    }
    json_t *resp = json_object_get(root, "response");
    if (resp && !json_is_null(resp)) {
        if (!json_is_object(resp))
            return arb__store_fail(s, ARB_PARSE, "%s:%zu: field \"response\": expected an object "
                                   "or null", path, lineno);
        json_t *code = json_object_get(resp, "status_code");
        if (!json_is_integer(code) || json_integer_value(code) < 100 ||
            json_integer_value(code) > 599)
            return arb__store_fail(s, ARB_PARSE, "%s:%zu: field \"response.status_code\": "
                                   "expected an HTTP status (100..599)", path, lineno);
        r->status = (long)json_integer_value(code);
        json_t *body = json_object_get(resp, "body");
        if (body && !json_is_null(body) && !json_is_object(body))
            return arb__store_fail(s, ARB_PARSE, "%s:%zu: field \"response.body\": expected an "
                                   "object or null", path, lineno);
        r->body = json_is_object(body) ? body : NULL;
    }
    if (!r->error_text && !r->status)
        return arb__store_fail(s, ARB_PARSE, "%s:%zu: field \"response\": expected an object "
                               "(or an \"error\") ", path, lineno);
    if (!r->error_text && r->status == 200 && !r->body)
        return arb__store_fail(s, ARB_PARSE, "%s:%zu: field \"response.body\": expected the "
                               "reply (an object) with status 200", path, lineno);
    return ARB_OK;
}

/* Stores the reply of r for call bc the way exec.c stores a reply that came back by HTTP. */
/* The price of the judge of the last line settled: a results file holds one judge's calls,
** or a few, so the store is asked once per change of judge, not once per line. */
typedef struct price_cache {
    char *judge;
    arb_price price;
} price_cache;

static arb_status cached_price(arb_store *s, price_cache *pc, const char *judge)
{
    if (pc->judge && !strcmp(pc->judge, judge)) return ARB_OK;
    free(pc->judge);
    pc->judge = NULL;
    arb_status st = arb__store_judge_price(s, judge, &pc->price);
    if (!st) pc->price = arb__price_through_batch(&pc->price); /* answered through a batch */
    if (!st && !(pc->judge = arb__strdup(judge)))
        st = arb__store_fail(s, ARB_NOMEM, "out of memory");
    return st;
}

static arb_status settle(arb_store *s, const arb__batch_call *bc, const result_line *r,
                         price_cache *pc, arb_batch_ingest_stats *stats)
{
    arb__call_record rec = {.key = bc->key, .judge_name = bc->judge_name, .model = bc->model,
                            .request_json = bc->request_json, .rep = bc->rep,
                            .http_status = r->status, .attempts = 1,
                            .prompt_tokens = -1, .completion_tokens = -1, .latency_ms = NAN,
                            .reasoning_tokens = -1, .cached_tokens = -1, .cost_usd = NAN};
    char *content = NULL, *raw = NULL, *error = NULL, *reasoning = NULL, *logprobs = NULL;
    arb_status st = cached_price(s, pc, bc->judge_name);
    if (st) return st;
    if (r->body) {
        raw = json_dumps(r->body, JSON_COMPACT);
        if (!raw) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    }
    if (!r->error_text && r->status >= 200 && r->status < 300) {
        /* Read as exec.c reads an HTTP reply (arb__judge_take_reply): the usage priced at the
        ** judge's batch price (its price less price.batch_discount, README "Cost and
        ** budgets"), and the verdict token's logprobs by the spec stored when the call was
        ** queued. */
        arb__verdict_spec spec;
        char *field = NULL;
        if (arb__verdict_spec_parse(bc->verdict, &spec, &field)) {
            free(raw);
            return arb__store_fail(s, ARB_INVALID, "batch call %s: bad verdict spec \"%s\" in "
                                   "the store", bc->key, bc->verdict);
        }
        arb__reply_record rr;
        int bad = arb__judge_take_reply(raw, strlen(raw), &pc->price,
                                        spec.kind != ARB__VERDICT_NONE ? &spec : NULL, &rr);
        free(field);
        if (bad) {
            free(raw);
            return arb__store_fail(s, ARB_NOMEM, "out of memory");
        }
        rec.ok = rr.ok;
        rec.prompt_tokens = rr.prompt_tokens;
        rec.completion_tokens = rr.completion_tokens;
        rec.reasoning_tokens = rr.reasoning_tokens;
        rec.cached_tokens = rr.cached_tokens;
        rec.cost_usd = rr.cost_usd;
        content = rr.content;
        reasoning = rr.reasoning;
        logprobs = rr.logprobs;
        error = rr.error;
        free(raw); /* kept again (the same text) when the body was broken */
        raw = rr.raw_reply;
    } else {
        error = r->error_text
                    ? arb__sprintf("batch error%s%s: %s", r->error_code ? " " : "",
                                  r->error_code ? r->error_code : "", r->error_text)
                    : arb__sprintf("HTTP %ld in the batch output", r->status);
        if (!error) {
            free(raw);
            return arb__store_fail(s, ARB_NOMEM, "out of memory");
        }
    }
    if (arb__judge_redact_key(bc->api_key_env, &content) ||
        arb__judge_redact_key(bc->api_key_env, &raw) ||
        arb__judge_redact_key(bc->api_key_env, &error) ||
        arb__judge_redact_key(bc->api_key_env, &reasoning)) {
        st = arb__store_fail(s, ARB_NOMEM, "out of memory");
        goto done;
    }
    rec.content = content;
    rec.reasoning = reasoning;
    rec.logprobs = logprobs;
    rec.raw_reply = raw;
    rec.error = error;
    long long call_id = 0;
    int kept = 0;
    char *stored = NULL;
    if ((st = arb__store_settle_call(s, &rec, &call_id, &kept, &stored))) goto done;
    free(stored);
    if (kept) stats->already++;
    else if (rec.ok) stats->ok++;
    else stats->failed++;
    st = arb__store_set_batch_result(s, bc->key, r->id);
done:
    free(content);
    free(reasoning);
    free(logprobs);
    free(raw);
    free(error);
    return st;
}

/* Walks the lines of text; with store_them 0 checks every line (and that its call was queued),
** with 1 stores them. */
static arb_status ingest_pass(arb_store *s, const char *path, char *text, size_t len,
                              int store_them, arb_batch_ingest_stats *stats)
{
    arb_status st = ARB_OK;
    size_t lineno = 0;
    price_cache pc = {0};
    for (char *line = text; !st && line < text + len;) {
        char *end = memchr(line, '\n', (size_t)(text + len - line));
        size_t n = end ? (size_t)(end - line) : (size_t)(text + len - line);
        char *next = end ? end + 1 : text + len;
        lineno++;
        while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t')) n--;
        if (!n) {
            line = next;
            continue;
        }
        json_error_t jerr;
        json_t *root = json_loadb(line, n, JSON_REJECT_DUPLICATES, &jerr);
        if (!root) {
            st = arb__store_fail(s, ARB_PARSE, "%s:%zu: not valid JSON: %s", path, lineno,
                                 jerr.text);
            break;
        }
        result_line r;
        arb__batch_call bc;
        int found = 0;
        st = read_result(s, path, lineno, root, &r);
        if (!st) st = arb__store_find_batch_call(s, r.custom_id, &found, &bc);
        if (!st && !found)
            st = arb__store_fail(s, ARB_PARSE, "%s:%zu: field \"custom_id\": no call \"%.64s\" "
                                 "was queued for a batch in this store", path, lineno,
                                 r.custom_id);
        if (!st && !store_them) stats->lines++;
        if (!st && found && store_them) {
            if (bc.stored_ok || (r.id && bc.result_id && !strcmp(r.id, bc.result_id)))
                stats->already++; /* stored before: nothing changes */
            else
                st = settle(s, &bc, &r, &pc, stats);
        }
        if (found) arb__batch_call_free(&bc);
        json_decref(root);
        line = next;
    }
    free(pc.judge);
    return st;
}

/* See arbiter.h. */
arb_status arb_batch_ingest(arb_store *store, const char *path, arb_batch_ingest_stats *stats)
{
    arb_batch_ingest_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    if (!store) return ARB_INVALID;
    if (!path) return arb__store_fail(store, ARB_INVALID, "batch ingest: no file");
    size_t len = 0;
    char *err = NULL;
    char *text = arb__read_file(path, &len, &err);
    if (!text) {
        arb_status st = arb__store_fail(store, ARB_IO, "%s", err ? err : "out of memory");
        free(err);
        return st;
    }
    arb_status st = arb__batch_ingest_text(store, path, text, len, stats);
    free(text);
    return st;
}

/* See internal.h. */
arb_status arb__batch_ingest_text(arb_store *store, const char *name, char *text, size_t len,
                                  arb_batch_ingest_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    arb_status st = ingest_pass(store, name, text, len, 0, stats);
    if (!st) st = arb__store_begin(store);
    if (!st) {
        st = ingest_pass(store, name, text, len, 1, stats);
        if (st) arb__store_rollback(store);
        else st = arb__store_commit(store);
    }
    if (st) {
        size_t lines = stats->lines;
        memset(stats, 0, sizeof *stats);
        stats->lines = lines;
    }
    return st;
}
