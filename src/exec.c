/*
** exec.c -- runs a graph of judge calls against OpenAI-compatible endpoints.
**
** A node is one judge call. It may depend on earlier nodes: its request is built (by the
** protocol's build callback) only once every dependency has finished, so later protocols can
** feed one call's output into the next (debate, discussion). Nodes whose dependencies are met
** run concurrently through http.c.
**
** Invariants:
**   - before a node is sent, its call key is looked up in the store; a stored successful call
**     is reused and never sent again (this is what makes reruns free and resumption exact);
**   - every finished call is committed together with the protocol's rows (done callback) in
**     the same transaction, right after the transfer step that finished it; a kill at any
**     moment loses only calls still in flight, which are sent again next time;
**   - the number of requests built but not finished is bounded, so memory stays flat however
**     many nodes a run has.
** It does not parse verdicts or know any protocol: that is the build/done callbacks' job.
*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum node_state { NODE_WAITING, NODE_READY, NODE_INFLIGHT, NODE_DONE };

typedef struct exec_node {
    size_t dep_start;      /* into ex->deps */
    size_t n_deps;
    size_t dependents_start; /* into ex->dependents (filled at run start) */
    size_t n_dependents;
    size_t unmet;          /* dependencies not yet finished */
    enum node_state state;
    /* While in flight / finishing: */
    const arb_judge_config *judge;
    char *body;            /* canonical request JSON */
    char key[33];
    int rep;
    double started_ms;
    /* Outcome (kept while dependents may still need it). */
    arb__call_outcome out;
    char *content;
    char *error;
} exec_node;

/* A finished call waiting for the next commit. */
typedef struct finished_call {
    size_t node;
    int cached;
    int ok;                /* a usable reply arrived */
    char *content;
    char *raw_reply;
    char *error;
    long http_status;
    int attempts;
    long long prompt_tokens, completion_tokens;
    double latency_ms;
} finished_call;

struct arb__exec {
    arb_store *store;
    arb__exec_params params;
    arb__exec_build_fn build;
    arb__exec_done_fn done;
    void *ud;

    exec_node *nodes;
    size_t n_nodes, cap_nodes;
    size_t *deps;
    size_t n_deps_total, cap_deps;
    size_t *dependents;

    size_t *ready;         /* FIFO ring of node indices */
    size_t ready_head, ready_len, ready_cap;

    finished_call *finished;
    size_t n_finished, cap_finished;

    arb__http *http;
    size_t inflight;
    size_t n_done;
    arb_run_stats *stats;
    int failed_status;     /* a callback failed: stop */
    double started_ms, last_progress_ms;
    int show_progress;
};

arb__exec *arb__exec_create(arb_store *s, const arb__exec_params *params,
                            arb__exec_build_fn build, arb__exec_done_fn done, void *ud)
{
    arb__exec *ex = calloc(1, sizeof *ex);
    if (!ex) return NULL;
    ex->store = s;
    ex->params = *params;
    ex->build = build;
    ex->done = done;
    ex->ud = ud;
    return ex;
}

static void node_free_request(exec_node *n)
{
    free(n->body);
    n->body = NULL;
}

void arb__exec_destroy(arb__exec *ex)
{
    if (!ex) return;
    for (size_t i = 0; i < ex->n_nodes; i++) {
        node_free_request(&ex->nodes[i]);
        free(ex->nodes[i].content);
        free(ex->nodes[i].error);
    }
    for (size_t i = 0; i < ex->n_finished; i++) {
        free(ex->finished[i].content);
        free(ex->finished[i].raw_reply);
        free(ex->finished[i].error);
    }
    free(ex->finished);
    free(ex->nodes);
    free(ex->deps);
    free(ex->dependents);
    free(ex->ready);
    arb__http_destroy(ex->http);
    free(ex);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

size_t arb__exec_add(arb__exec *ex, const size_t *deps, size_t n_deps)
{
    if (grow((void **)&ex->nodes, &ex->cap_nodes, ex->n_nodes + 1, sizeof *ex->nodes) ||
        grow((void **)&ex->deps, &ex->cap_deps, ex->n_deps_total + n_deps, sizeof *ex->deps))
        return (size_t)-1;
    for (size_t i = 0; i < n_deps; i++) {
        if (deps[i] >= ex->n_nodes) return (size_t)-1; /* only earlier nodes: no cycles */
        ex->deps[ex->n_deps_total + i] = deps[i];
    }
    exec_node *n = &ex->nodes[ex->n_nodes];
    memset(n, 0, sizeof *n);
    n->dep_start = ex->n_deps_total;
    n->n_deps = n_deps;
    n->unmet = n_deps;
    ex->n_deps_total += n_deps;
    return ex->n_nodes++;
}

static int ready_push(arb__exec *ex, size_t node)
{
    if (ex->ready_len == ex->ready_cap) {
        size_t cap = ex->ready_cap ? ex->ready_cap * 2 : 1024;
        size_t *q = malloc(cap * sizeof *q);
        if (!q) return -1;
        for (size_t i = 0; i < ex->ready_len; i++)
            q[i] = ex->ready[(ex->ready_head + i) % ex->ready_cap];
        free(ex->ready);
        ex->ready = q;
        ex->ready_cap = cap;
        ex->ready_head = 0;
    }
    ex->ready[(ex->ready_head + ex->ready_len) % ex->ready_cap] = node;
    ex->ready_len++;
    ex->nodes[node].state = NODE_READY;
    return 0;
}

static size_t ready_pop(arb__exec *ex)
{
    size_t node = ex->ready[ex->ready_head];
    ex->ready_head = (ex->ready_head + 1) % ex->ready_cap;
    ex->ready_len--;
    return node;
}

/* Builds the reverse edges (dependents of each node) in one array. */
static int link_dependents(arb__exec *ex)
{
    if (ex->n_deps_total) {
        ex->dependents = malloc(ex->n_deps_total * sizeof *ex->dependents);
        if (!ex->dependents) return -1;
    }
    for (size_t i = 0; i < ex->n_nodes; i++)
        for (size_t k = 0; k < ex->nodes[i].n_deps; k++)
            ex->nodes[ex->deps[ex->nodes[i].dep_start + k]].n_dependents++;
    size_t offset = 0;
    for (size_t i = 0; i < ex->n_nodes; i++) {
        ex->nodes[i].dependents_start = offset;
        offset += ex->nodes[i].n_dependents;
        ex->nodes[i].n_dependents = 0;
    }
    for (size_t i = 0; i < ex->n_nodes; i++)
        for (size_t k = 0; k < ex->nodes[i].n_deps; k++) {
            exec_node *d = &ex->nodes[ex->deps[ex->nodes[i].dep_start + k]];
            ex->dependents[d->dependents_start + d->n_dependents++] = i;
        }
    return 0;
}

static int queue_finished(arb__exec *ex, const finished_call *fc)
{
    if (grow((void **)&ex->finished, &ex->cap_finished, ex->n_finished + 1,
             sizeof *ex->finished))
        return -1;
    ex->finished[ex->n_finished++] = *fc;
    return 0;
}

/* Asks the protocol for node's request, then either reuses a stored call, plans it (dry run)
** or submits it. Returns 0, or an arb_status on failure (message in the store). */
static arb_status start_node(arb__exec *ex, size_t idx)
{
    exec_node *n = &ex->nodes[idx];
    const arb__call_outcome *dep_out_stack[8] = {0};
    const arb__call_outcome **dep_out = dep_out_stack;
    if (n->n_deps > 8) {
        dep_out = malloc(n->n_deps * sizeof *dep_out);
        if (!dep_out) return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
    }
    for (size_t k = 0; k < n->n_deps; k++)
        dep_out[k] = &ex->nodes[ex->deps[n->dep_start + k]].out;
    arb__exec_request req = {0};
    int rc = ex->build(ex->ud, idx, dep_out, n->n_deps, &req);
    if (dep_out != dep_out_stack) free(dep_out);
    arb_status st = ARB_OK;
    if (rc) {
        st = ARB_INVALID;
        goto done;
    }
    n->judge = req.judge;
    n->rep = req.rep;
    n->body = arb__judge_request_body(req.judge, req.system, req.user, req.rep);
    if (!n->body) {
        st = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
        goto done;
    }
    arb__judge_call_key(n->body, req.rep, n->key);

    int found = 0;
    long long call_id = 0;
    char *content = NULL;
    st = arb__store_find_call(ex->store, n->key, &found, &call_id, &content);
    if (st) goto done;
    if (found) {
        finished_call fc = {.node = idx, .cached = 1, .ok = 1, .content = content};
        n->out.call_id = call_id;
        if (queue_finished(ex, &fc)) {
            free(content);
            st = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
        }
        n->state = NODE_INFLIGHT;
        goto done;
    }
    if (ex->params.dry_run) {
        ex->stats->est_prompt_tokens +=
            (long long)((req.system ? arb__utf8_codepoints(req.system, strlen(req.system)) : 0) +
                        arb__utf8_codepoints(req.user, strlen(req.user)) + 3) / 4;
        finished_call fc = {.node = idx, .ok = 0, .error = arb__strdup("dry run: not sent")};
        if (queue_finished(ex, &fc)) {
            free(fc.error);
            st = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
        }
        n->state = NODE_INFLIGHT;
        goto done;
    }
    char *url = arb__judge_url(req.judge->base_url);
    char *auth = arb__judge_auth_header(req.judge->api_key_env);
    int sub = url ? arb__http_submit(ex->http, idx, url, auth, n->body, strlen(n->body)) : -1;
    free(url);
    if (auth) {
        /* The key must not linger in freed memory longer than needed. */
        memset(auth, 0, strlen(auth));
        free(auth);
    }
    if (sub) {
        st = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
        goto done;
    }
    n->state = NODE_INFLIGHT;
    n->started_ms = arb__now_ms();
    ex->inflight++;
done:
    free(req.system);
    free(req.user);
    return st;
}

static void on_http_done(void *ud, uint64_t tag, const arb__http_result *res)
{
    arb__exec *ex = ud;
    size_t idx = (size_t)tag;
    finished_call fc = {.node = idx,
                        .http_status = res->status,
                        .attempts = res->attempts,
                        .latency_ms = res->latency_ms,
                        .prompt_tokens = -1,
                        .completion_tokens = -1};
    ex->inflight--;
    if (res->ok) {
        arb__judge_reply reply;
        if (arb__judge_parse_reply(res->body, res->body_len, &reply)) {
            ex->failed_status = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
            return;
        }
        fc.prompt_tokens = reply.prompt_tokens;
        fc.completion_tokens = reply.completion_tokens;
        if (reply.error) {
            /* A broken body is a transport failure, not a judgment: stored as failed so a
            ** later run sends it again; this run records verdict E with the reason. */
            fc.ok = 0;
            fc.error = reply.error;
            reply.error = NULL;
            fc.raw_reply = arb__strndup(res->body, res->body_len);
        } else {
            fc.ok = 1;
            fc.content = reply.content;
            reply.content = NULL;
        }
        arb__judge_reply_free(&reply);
    } else {
        fc.ok = 0;
        fc.error = arb__strdup(res->error ? res->error : "request failed");
        if (res->body_len) fc.raw_reply = arb__strndup(res->body, res->body_len);
    }
    if (queue_finished(ex, &fc)) {
        free(fc.content);
        free(fc.error);
        free(fc.raw_reply);
        ex->failed_status = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
    }
}

/* Stores every finished call and its protocol rows in one transaction, then releases the
** dependents of the finished nodes. */
static arb_status commit_finished(arb__exec *ex)
{
    if (!ex->n_finished) return ARB_OK;
    arb_status st = ARB_OK;
    int in_tx = 0;
    if (!ex->params.dry_run) {
        if ((st = arb__store_begin(ex->store))) goto done;
        in_tx = 1;
    }
    for (size_t i = 0; i < ex->n_finished; i++) {
        finished_call *fc = &ex->finished[i];
        exec_node *n = &ex->nodes[fc->node];
        if (!ex->params.dry_run && !fc->cached) {
            arb__call_record rec = {
                .key = n->key,
                .judge_name = n->judge->name ? n->judge->name : n->judge->model,
                .model = n->judge->model,
                .request_json = n->body,
                .rep = n->rep,
                .ok = fc->ok,
                .content = fc->content,
                .raw_reply = fc->raw_reply,
                .error = fc->error,
                .http_status = fc->http_status,
                .attempts = fc->attempts,
                .prompt_tokens = fc->prompt_tokens,
                .completion_tokens = fc->completion_tokens,
                .latency_ms = fc->latency_ms,
            };
            if ((st = arb__store_put_call(ex->store, &rec, &n->out.call_id))) goto done;
        }
        n->out.cached = fc->cached;
        n->out.ok = fc->ok;
        n->out.content = fc->content;
        n->out.error = fc->error;
        if (!ex->params.dry_run && ex->done(ex->ud, fc->node, &n->out)) {
            st = ARB_INVALID;
            goto done;
        }
    }
    if (in_tx) {
        if ((st = arb__store_commit(ex->store))) goto done;
        in_tx = 0;
    }
    /* Committed: account for the calls and release their dependents. */
    for (size_t i = 0; i < ex->n_finished; i++) {
        finished_call *fc = &ex->finished[i];
        exec_node *n = &ex->nodes[fc->node];
        if (fc->cached) ex->stats->cached++;
        else if (!ex->params.dry_run) {
            if (fc->ok) ex->stats->sent++;
            else ex->stats->failed++;
            if (fc->prompt_tokens > 0) ex->stats->prompt_tokens += fc->prompt_tokens;
            if (fc->completion_tokens > 0) ex->stats->completion_tokens += fc->completion_tokens;
        }
        n->state = NODE_DONE;
        node_free_request(n);
        /* Keep the outcome's text only while some dependent may still read it. */
        if (n->n_dependents) {
            n->content = fc->content;
            n->error = fc->error;
            fc->content = fc->error = NULL;
        } else {
            n->out.content = n->out.error = NULL;
        }
        free(fc->content);
        free(fc->error);
        free(fc->raw_reply);
        ex->n_done++;
        for (size_t k = 0; k < n->n_dependents; k++) {
            size_t d = ex->dependents[n->dependents_start + k];
            if (--ex->nodes[d].unmet == 0 && ready_push(ex, d)) {
                ex->n_finished = 0;
                return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
            }
        }
    }
    ex->n_finished = 0;
    return ARB_OK;
done:
    if (in_tx) arb__store_rollback(ex->store);
    return st;
}

static void format_duration(char *out, size_t size, double seconds)
{
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(out, size, "--:--");
        return;
    }
    long s = (long)(seconds + 0.5);
    if (s >= 3600) snprintf(out, size, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else snprintf(out, size, "%ld:%02ld", s / 60, s % 60);
}

static void show_progress(arb__exec *ex, int final)
{
    if (!ex->show_progress) return;
    double now = arb__now_ms();
    if (!final && now - ex->last_progress_ms < 200) return;
    ex->last_progress_ms = now;
    double elapsed = (now - ex->started_ms) / 1000.0;
    size_t sent_done = ex->stats->sent + ex->stats->failed;
    double rate = elapsed > 0 ? (double)sent_done / elapsed : 0;
    size_t left = ex->n_nodes - ex->n_done;
    char eta[32];
    format_duration(eta, sizeof eta, rate > 0 ? (double)left / rate : NAN);
    fprintf(stderr, "\r\033[K%zu/%zu calls  %.1f/s  ETA %s  errors %zu  stored before %zu%s",
            ex->n_done, ex->n_nodes, rate, eta, ex->stats->failed, ex->stats->cached,
            final ? "\n" : "");
    fflush(stderr);
}

arb_status arb__exec_run(arb__exec *ex, arb_run_stats *stats)
{
    arb_status st = ARB_OK;
    double t0 = arb__now_ms();
    ex->stats = stats;
    ex->started_ms = t0;
    ex->show_progress = ex->params.progress < 0 ? isatty(STDERR_FILENO) : ex->params.progress;
    stats->planned = ex->n_nodes;
    if (link_dependents(ex)) return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
    if (!ex->params.dry_run) {
        ex->http = arb__http_create(&ex->params.client);
        if (!ex->http) return arb__store_fail(ex->store, ARB_NOMEM, "cannot start HTTP client");
    }
    for (size_t i = 0; i < ex->n_nodes; i++)
        if (ex->nodes[i].unmet == 0 && ready_push(ex, i))
            return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");

    /* Requests built ahead of the transport: enough to keep every connection busy, few enough
    ** that memory does not grow with the size of the run. */
    size_t window = (size_t)(ex->params.client.jobs > 0 ? ex->params.client.jobs : 1) * 4;
    if (window < 64) window = 64;
    while (ex->n_done < ex->n_nodes) {
        if (arb__stop_requested) {
            st = ARB_INTERRUPTED;
            break;
        }
        while (ex->ready_len && ex->inflight < window && ex->n_finished < 4096) {
            if ((st = start_node(ex, ready_pop(ex)))) goto done;
        }
        if (ex->inflight) {
            arb__http_step(ex->http, ex->n_finished ? 0 : 100, on_http_done, ex);
            if (ex->failed_status) {
                st = ex->failed_status;
                goto done;
            }
        }
        if ((st = commit_finished(ex))) goto done;
        show_progress(ex, 0);
        if (!ex->inflight && !ex->ready_len && !ex->n_finished && ex->n_done < ex->n_nodes) {
            st = arb__store_fail(ex->store, ARB_INVALID,
                                 "internal error: %zu calls can never start",
                                 ex->n_nodes - ex->n_done);
            goto done;
        }
    }
done:
    if (st == ARB_INTERRUPTED) {
        /* Keep what finished; the rest is sent again on the next run. */
        if (commit_finished(ex) == ARB_OK)
            arb__store_fail(ex->store, ARB_INTERRUPTED,
                            "interrupted: %zu of %zu calls done and stored; run again to finish",
                            ex->n_done, ex->n_nodes);
    }
    if (ex->http) stats->retries += arb__http_get_stats(ex->http).retries;
    show_progress(ex, 1);
    stats->seconds += (arb__now_ms() - t0) / 1000.0;
    return st;
}
