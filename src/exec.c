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
**     the same transaction, in groups (WRITER_BATCH calls, or what came in WRITER_WAIT_MS, or
**     at once when the main thread waits for it); a kill at any moment loses only calls not
**     yet committed, which are sent again next time and counted as done only once committed;
**   - the number of requests built but not finished is bounded, so memory stays flat however
**     many nodes a run has.
** Storing runs on a writer thread with its own SQLite connection (WAL lets the main thread's
** lookups go on meanwhile), so transfers and storage use both cores; a node counts as done,
** and releases its dependents, only once the writer has committed it. An in-memory store,
** which a second connection cannot share, is written on the main thread. The claims and
** leases (below) are written through the writer's connection too, by the main thread between
** two of the writer's transactions, so a run writes the store through one connection
** (lease_store_borrow).
** A build callback may also decide that a node needs no call (a discussion that already
** ended, a turn after a failed one): the node then finishes at once as skipped, nothing is
** sent or stored for it, and its dependents are released as usual.
** Two processes on one store (two terminals, the same command): before a call is sent it is
** claimed in the store (arb__store_claim_calls, a lease per call, in batches), so each call is
** sent by one process; a call another live process holds waits (parked, asked about again every
** HELD_POLL_MS, never spinning) until it is stored, then is taken from the store like any
** stored call, or is claimed when its holder failed it, ended, died or stopped renewing. The
** lease ends in the transaction that stores the call. Should two replies to one key still meet
** (a lease that expired while its holder was stopped), the stored one wins and the protocol's
** rows are made from it, so no judgment contradicts the stored reply.
** Budgets (arb_client_params.budget_usd / budget_tokens; README "Cost and budgets") are kept
** here, once for every protocol: a claimed call starts only while the plan's spend (its stored
** calls, at their stored cost) plus the estimates of the calls in flight and its own stay within
** the budget. One that does not fit is held back, with every call after it, until the calls in
** flight are stored; then it starts if it fits with the exact spend, and otherwise the run ends
** with ARB_BUDGET. The calls held back were never sent: their leases are released and a rerun
** with a larger budget sends them.
** Batch export (client.batch_export): a call not stored is neither sent nor claimed but queued
** in the store (batch_calls) for a batch file, and its node counts as done without the done
** callback; the nodes that depend on it are not built (they wait for a later round, once the
** batch's replies are ingested). Stored calls are taken and judged as in any run, so each
** round judges what the last batch answered and queues the calls that became ready. With
** --batch wait (ARB_BATCH_WAIT) arb__exec_protocol runs the plan once per round: submit,
** wait for the batches, collect, run the plan again (a fresh executor over the same protocol
** state), until a pass submits nothing.
** Endpoints: each judge's URL, or its several endpoints (arb_judge_config.endpoints), is one
** pool of http.c, which picks the endpoint of every attempt (least outstanding requests,
** per-endpoint limits, 429 back-off, cool-down; README "Several endpoints per judge"). The call
** key is made from the request body alone, so the same request to any replica is the same
** call; the endpoint that answered is stored with it (calls.endpoint, without credentials).
** It does not parse verdicts or know any protocol: that is the build/done callbacks' job.
*/
#include "internal.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

typedef struct exec_node {
    size_t dep_start;      /* into ex->deps */
    size_t n_deps;
    size_t dependents_start; /* into ex->dependents (filled at run start) */
    size_t n_dependents;
    size_t unmet;          /* dependencies not yet finished */
    size_t unbuilt;        /* dependents whose request is not built yet: the outcome's text is
                              kept until this reaches 0 */
    size_t next_waiter;    /* next node parked behind the same in-flight key, or NO_NODE */
    size_t waiters;        /* first node parked behind this one's key, or NO_NODE */
    int keyed;             /* 1 while in ex->keys (sent, not yet committed) */
    int deferred;          /* batch export: waits on a queued call, never built this run */
    /* While in flight / finishing: */
    const arb_judge_config *judge;
    char *body;            /* canonical request JSON */
    size_t body_len;       /* strlen(body), measured once */
    long long prompt_chars; /* its prompt length as the builder counted it; -1: the store counts */
    char key[33];
    int rep;
    arb__verdict_spec verdict; /* what verdict the reply carries, for its logprobs */
    int target;            /* index into ex->targets once submitted */
    int spend_slot;        /* index into stats->judges, -1 when not itemised */
    double est_usd;        /* estimated cost and tokens (budgets): upper bounds, see */
    long long est_tokens;  /* estimate_node() */
    /* Outcome (kept while dependents may still need it). */
    arb__call_outcome out;
    char *content;
    char *error;
} exec_node;

#define NO_NODE ((size_t)-1)

/* A lease lasts LEASE_SECONDS and is renewed every quarter of that while the run goes on, so
** only a process stopped or hung for a minute loses its claims; a killed one loses them at
** once (its pid is gone). Calls held by another process are asked about every HELD_POLL_MS. */
#define LEASE_SECONDS 60.0
#define HELD_POLL_MS 200.0
/* Claims go to the store in batches of up to CLAIM_BATCH calls, built up to CLAIM_BATCH ahead of
** the send window: each claim is a write transaction that must wait for the writer thread's, so
** claiming a few calls per round halved throughput (10k against 20k calls/s on loopback; with
** batches of 4096, 19k). A batch is claimed early when the transport runs short of work. The
** price: a second process cannot help with the calls this one claimed ahead. */
#define CLAIM_BATCH 4096

/* Group commit: the writer stores a batch once WRITER_BATCH calls are waiting, or once it has
** waited WRITER_WAIT_MS for them, whichever comes first; at once when the main thread waits for
** a commit (nothing left to send until then: a tiny run, the end of a run, a full pending
** window) or stops. Every commit writes the pages it touched to the WAL once, and the key
** index of calls and the leases are spread over the whole table (keys are hashes), so a commit
** of a few hundred calls wrote most of those pages again: at 40,000 calls, batches of ~480
** wrote 0.50 pages a call; of ~1,200, 0.28 (2026-11-27). A kill loses at most the batch being
** gathered, as before only calls not yet committed, which the next run sends again. The wait is
** bounded so that the nodes that depend on a call (debate, discussion) start soon after it. */
#define WRITER_BATCH 1024
#define WRITER_WAIT_MS 20

/* What the writer reports of a committed call, for the main thread's accounting. */
typedef struct committed_call {
    size_t node;
    int cached, ok, skipped, queued;
    long long prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens;
    double cost_usd;
} committed_call;

/* The writer thread: takes batches of finished calls, stores them, hands back what it
** committed. Everything below mu is guarded by it. */
typedef struct exec_writer {
    pthread_t thread;
    int started;
    arb_store *store;      /* the writer's own connection */
    pthread_mutex_t mu;
    pthread_cond_t wake;   /* work arrived or stop */
    pthread_cond_t progress; /* something committed, or the writer failed */
    struct finished_call *queue;
    size_t n_queue, cap_queue;
    committed_call *done;
    size_t n_done, cap_done;
    int stop;
    int hurry;             /* the main thread waits for a commit: store what is queued now */
    int gathering;         /* the writer waits for a batch to fill (WRITER_BATCH) */
    int storing;           /* the writer is inside a batch's transaction */
    int lent;              /* the main thread uses the writer's connection (lease_store) */
    arb_status status;
} exec_writer;

/* A finished call waiting for the next commit. */
typedef struct finished_call {
    size_t node;
    int cached;
    int skipped;           /* the protocol asked for no call */
    int ok;                /* a usable reply arrived */
    int queued;            /* batch export: queued in the store, not sent */
    char *content;
    char *reasoning;
    char *raw_reply;
    char *logprobs;        /* arb__logprobs_verdict() JSON, NULL when none */
    char *error;
    const char *endpoint;  /* redacted URL it was sent to (borrowed from ex->targets), or NULL */
    long http_status;
    int attempts;
    long long prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens;
    double cost_usd;       /* NAN: unknown */
    double latency_ms;
} finished_call;

struct arb__exec {
    arb_store *store;
    arb__exec_params params;
    arb__buf body_scratch;       /* where request bodies are written (keeps its room) */
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
    exec_writer writer;
    size_t pending_commit; /* handed to the writer, not yet reported back */
    committed_call *accounted; /* scratch for reports taken from the writer */
    size_t cap_accounted;
    /* Keys of the calls sent and not yet committed (key -> node index + 1): a node whose
    ** identical request is already on its way waits for it and then takes it from the store,
    ** so no call is sent twice even when one run holds the same request twice. */
    arb__keymap keys;
    /* Where each judge's calls go, made on its first call: its http.c pool, the Authorization
    ** header (the environment is read once) and its endpoints as stored (redacted). */
    struct exec_target {
        const arb_judge_config *judge;
        int pool;
        char *auth;
        char **stored_url;
        size_t n_urls;
    } *targets;
    size_t n_targets, cap_targets;
    double started_ms, last_progress_ms;
    /* When this executor runs one slice of a protocol's plan (arb__exec_protocol): the plan's
    ** nodes before the slice, the whole plan's size and when it started, for progress and
    ** messages; plan_total 0 otherwise. */
    size_t plan_base, plan_total;
    double plan_started_ms;
    int show_progress;
    /* Claims on calls (see the file comment). Nodes built and keyed, waiting for the next
    ** claim batch; nodes whose call another process holds; the scratch of a batch. */
    int leasing;
    arb__lease_owner lease;
    double last_renew_ms, next_held_poll_ms;
    size_t *to_claim;
    size_t n_to_claim, cap_to_claim;
    size_t *held;
    size_t n_held, cap_held;
    long held_pid;         /* a holder of the last batch, for the progress line */
    arb__call_claim *claims;
    size_t cap_claims;
    /* Budgets (see budget_fits). spent: the plan's calls stored, at their cost (or estimate
    ** when unknown); inflight: the estimates of the calls sent and not yet accounted. Calls
    ** the gate held back wait in gated (in order) until the calls in flight are accounted. */
    int budgeting;
    double spent_usd, inflight_usd;
    long long spent_tokens, inflight_tokens;
    size_t *gated;
    size_t n_gated, cap_gated;
    int budget_stop;       /* 1: a call does not fit with nothing in flight: the run ends */
    int budget_by_usd;     /* which budget stopped it */
    const arb_judge_config *slot_judge[ARB_RUN_STATS_JUDGES];
};

static void finished_free(finished_call *fc);
static void free_targets(arb__exec *ex);
static arb_status writer_stop(arb__exec *ex);
static arb_store *lease_store_borrow(arb__exec *ex);
static arb_status lease_store_return(arb__exec *ex, arb_store *used, arb_status st);
static arb_status submit_node(arb__exec *ex, size_t idx);
static arb_status account(arb__exec *ex, const struct committed_call *c, size_t n);

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
    arb__buf_init(&ex->body_scratch, 0);
    ex->leasing = !params->dry_run && !params->client.batch_export;
    ex->budgeting = !params->dry_run &&
                    (params->client.budget_usd > 0 || params->client.budget_tokens > 0);
    if (ex->leasing) arb__lease_owner_init(&ex->lease, LEASE_SECONDS);
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
    if (ex->writer.started) writer_stop(ex); /* before freeing what the writer may touch */
    arb__http_destroy(ex->http); /* before the request bodies its transfers borrow */
    ex->http = NULL;
    for (size_t i = 0; i < ex->n_nodes; i++) {
        node_free_request(&ex->nodes[i]);
        free(ex->nodes[i].content);
        free(ex->nodes[i].error);
    }
    for (size_t i = 0; i < ex->n_finished; i++) finished_free(&ex->finished[i]);
    free(ex->finished);
    free_targets(ex);
    arb__buf_free(&ex->body_scratch);
    if (ex->writer.store) {
        for (size_t i = 0; i < ex->writer.n_queue; i++) finished_free(&ex->writer.queue[i]);
        pthread_mutex_destroy(&ex->writer.mu);
        pthread_cond_destroy(&ex->writer.wake);
        pthread_cond_destroy(&ex->writer.progress);
        arb_store_close(ex->writer.store);
    }
    free(ex->writer.queue);
    free(ex->writer.done);
    free(ex->accounted);
    free(ex->nodes);
    free(ex->deps);
    free(ex->dependents);
    arb__keymap_free(&ex->keys);
    free(ex->to_claim);
    free(ex->held);
    free(ex->claims);
    free(ex->gated);
    free(ex->ready);
    free(ex);
}

size_t arb__exec_add(arb__exec *ex, const size_t *deps, size_t n_deps)
{
    if (arb__grow(&ex->nodes, &ex->cap_nodes, ex->n_nodes + 1, sizeof *ex->nodes) ||
        arb__grow(&ex->deps, &ex->cap_deps, ex->n_deps_total + n_deps, sizeof *ex->deps))
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
        ex->nodes[i].unbuilt = ex->nodes[i].n_dependents;
        ex->nodes[i].n_dependents = 0;
        ex->nodes[i].waiters = ex->nodes[i].next_waiter = NO_NODE;
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
    if (arb__grow(&ex->finished, &ex->cap_finished, ex->n_finished + 1,
             sizeof *ex->finished))
        return -1;
    ex->finished[ex->n_finished++] = *fc;
    return 0;
}

static void free_target(struct exec_target *t)
{
    if (t->auth) memset(t->auth, 0, strlen(t->auth)); /* the key must not linger in freed memory */
    free(t->auth);
    for (size_t i = 0; i < t->n_urls; i++) free(t->stored_url[i]);
    free(t->stored_url);
}

/* Frees the targets, wiping the keys. */
static void free_targets(arb__exec *ex)
{
    for (size_t i = 0; i < ex->n_targets; i++) free_target(&ex->targets[i]);
    free(ex->targets);
    ex->targets = NULL;
    ex->n_targets = ex->cap_targets = 0;
}

/* The index in ex->targets of judge's endpoints, made on its first call: a pool of its URLs
** (endpoints, or base_url alone) with its max_in_flight, its Authorization header, and the
** URLs as stored. Returns 0, or an arb_status (message in the store). */
static arb_status target_of(arb__exec *ex, const arb_judge_config *judge, int *out)
{
    for (size_t i = 0; i < ex->n_targets; i++)
        if (ex->targets[i].judge == judge) {
            *out = (int)i;
            return ARB_OK;
        }
    size_t n = judge->n_endpoints ? judge->n_endpoints : 1;
    const char *const *bases = judge->n_endpoints ? judge->endpoints : &judge->base_url;
    if (arb__grow(&ex->targets, &ex->cap_targets, ex->n_targets + 1, sizeof *ex->targets))
        return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
    struct exec_target t = {.judge = judge, .pool = -1};
    char **urls = calloc(n, sizeof *urls);
    t.stored_url = calloc(n, sizeof *t.stored_url);
    arb_status st = urls && t.stored_url ? ARB_OK : ARB_NOMEM;
    if (!st) t.n_urls = n;
    for (size_t i = 0; i < n && !st; i++)
        if (!(urls[i] = arb__judge_url(bases[i])) || !(t.stored_url[i] = arb__url_redact(bases[i])))
            st = ARB_NOMEM;
    if (!st) {
        t.pool = arb__http_add_pool(ex->http, (const char *const *)urls, n, judge->max_in_flight);
        if (t.pool < 0) st = ARB_NOMEM;
    }
    if (!st) t.auth = arb__judge_auth_header(judge->api_key_env);
    for (size_t i = 0; urls && i < n; i++) free(urls[i]);
    free(urls);
    if (st) {
        free_target(&t);
        return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
    }
    /* A named key that cannot be used is refused, never silently left out of the request. */
    if (judge->api_key_env && *judge->api_key_env && !t.auth) {
        free_target(&t);
        st = arb__judge_check(ex->store, judge, 0);
        return st ? st : arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
    }
    ex->targets[ex->n_targets] = t;
    *out = (int)ex->n_targets++;
    return ARB_OK;
}

/* ---- the keys of calls in flight ---------------------------------------------------------- */

/* A call key (arb__judge_call_key_len: 32 hex digits) as ex->keys hashes it. */
static uint64_t key_hash(const char *key) { return XXH3_64bits(key, 32); }

static int node_has_key(const void *ctx, const void *key, size_t value)
{
    const arb__exec *ex = ctx;
    return !memcmp(ex->nodes[value - 1].key, key, 32);
}

/* The node in flight with this key, or NO_NODE. */
static size_t keys_find(const arb__exec *ex, const char *key)
{
    size_t v = arb__keymap_find(&ex->keys, key_hash(key), key, node_has_key, ex);
    return v ? v - 1 : NO_NODE;
}

/* Puts node's key in ex->keys (keys_find found none). 0, or -1 when out of memory. */
static int keys_add(arb__exec *ex, size_t node)
{
    const char *key = ex->nodes[node].key;
    if (arb__keymap_add(&ex->keys, key_hash(key), key, node + 1)) return -1;
    ex->nodes[node].keyed = 1;
    return 0;
}

/* Removes node's key (node is the only one in flight with it). */
static void keys_remove(arb__exec *ex, size_t node)
{
    const char *key = ex->nodes[node].key;
    arb__keymap_remove(&ex->keys, key_hash(key), key, node_has_key, ex);
    ex->nodes[node].keyed = 0;
}

/* A node's request is built for good: its dependencies have one dependent less to wait for,
** and the text of one with none left is freed (main thread; the writer is done with it). */
static void release_dependencies(arb__exec *ex, const exec_node *n)
{
    for (size_t k = 0; k < n->n_deps; k++) {
        exec_node *d = &ex->nodes[ex->deps[n->dep_start + k]];
        if (--d->unbuilt == 0) {
            free(d->content);
            free(d->error);
            d->content = d->error = NULL;
            d->out.content = d->out.error = NULL;
        }
    }
}

/* ---- spend and budgets (README "Cost and budgets") ---------------------------------------- */

/* A judge that sets no max_tokens is estimated at this many completion tokens per call when a
** budget must bound its calls (a dry run shows no upper bound for it instead). */
#define EST_COMPLETION_UNBOUNDED 4096

/* The itemised spend of judge in stats->judges (added on first sight), or -1 beyond
** ARB_RUN_STATS_JUDGES judges (the totals still count them). */
static int spend_slot(arb__exec *ex, const arb_judge_config *judge)
{
    const char *name = judge->name ? judge->name : judge->model;
    arb_run_stats *rs = ex->stats;
    for (size_t i = 0; i < rs->n_judges; i++)
        if (ex->slot_judge[i] == judge || !strcmp(rs->judges[i].name, name)) {
            if (!ex->slot_judge[i]) ex->slot_judge[i] = judge; /* itemised by an earlier slice */
            return (int)i;
        }
    if (rs->n_judges == ARB_RUN_STATS_JUDGES) return -1;
    arb_judge_spend *js = &rs->judges[rs->n_judges];
    memset(js, 0, sizeof *js);
    js->name = name;
    js->has_price = judge->price.known;
    js->est_completion_max = js->est_completion_typical = -1;
    js->est_cost_max = js->est_cost_typical = NAN;
    ex->slot_judge[rs->n_judges] = judge;
    return (int)rs->n_judges++;
}

/* The most completion tokens a call of the judge may bill: max_completion_tokens (a reasoning
** model's bound of visible + thinking tokens) when set, else max_tokens; 0 when neither is. */
static int completion_bound(const arb_judge_config *judge)
{
    return judge->sampling.max_completion_tokens > 0 ? judge->sampling.max_completion_tokens
                                                     : judge->sampling.max_tokens;
}

/* The price the plan's calls to send will be billed at: the judge's, or in batch mode (--batch,
** --dry-run --batch) its batch price (README "Cost and budgets"). */
static arb_price plan_price(const arb__exec *ex, const arb_judge_config *judge)
{
    return ex->params.client.batch_export ? arb__price_through_batch(&judge->price)
                                          : judge->price;
}

/* Sets the node's cost and token estimates from its rendered request: the prompt estimate of
** arb__judge_estimate_prompt_tokens plus completion_bound() tokens (an upper bound of what
** the reply may add; EST_COMPLETION_UNBOUNDED without one), priced at the judge's price (0
** without one: only a token budget then applies). Returns the prompt estimate. */
static long long estimate_node(const arb__exec *ex, exec_node *n, const arb__exec_request *req)
{
    long long prompt = arb__judge_estimate_prompt_tokens(req->system, req->user);
    int max = completion_bound(req->judge);
    long long completion = max > 0 ? max : EST_COMPLETION_UNBOUNDED;
    n->est_tokens = prompt + completion;
    arb_price price = plan_price(ex, req->judge);
    n->est_usd = price.known ? arb__judge_call_cost(&price, prompt, completion, -1) : 0;
    return prompt;
}

/* Whether node n may start: the plan's spend so far, the estimates of the calls in flight and
** n's own estimate stay within every budget (a relative 1e-9 absorbs rounding, so a budget
** equal to a sum of exact costs admits it). *by_usd says which budget refused. */
static int budget_fits(const arb__exec *ex, const exec_node *n, int *by_usd)
{
    const arb_client_params *c = &ex->params.client;
    if (c->budget_usd > 0 &&
        ex->spent_usd + ex->inflight_usd + n->est_usd > c->budget_usd * (1 + 1e-9)) {
        *by_usd = 1;
        return 0;
    }
    if (c->budget_tokens > 0 &&
        ex->spent_tokens + ex->inflight_tokens + n->est_tokens > c->budget_tokens) {
        *by_usd = 0;
        return 0;
    }
    return 1;
}

/* Adds a stored call of the plan to the spend the budget sees: its stored cost and tokens,
** or the node's estimate for what the store does not know. */
static void budget_add_spent(arb__exec *ex, const exec_node *n, double cost_usd,
                             long long prompt_tokens, long long completion_tokens)
{
    ex->spent_usd += isfinite(cost_usd) ? cost_usd : n->est_usd;
    ex->spent_tokens += prompt_tokens >= 0 && completion_tokens >= 0
                            ? prompt_tokens + completion_tokens
                            : n->est_tokens;
}

/* Sends node idx (claimed for this process), or with a budget holds it back in ex->gated when
** it does not fit now or calls before it wait there (so calls start in plan order). */
static arb_status send_or_gate(arb__exec *ex, size_t idx)
{
    if (ex->budgeting) {
        exec_node *n = &ex->nodes[idx];
        if (ex->n_gated || ex->budget_stop || !budget_fits(ex, n, &ex->budget_by_usd)) {
            if (arb__grow(&ex->gated, &ex->cap_gated, ex->n_gated + 1, sizeof *ex->gated))
                return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
            ex->gated[ex->n_gated++] = idx;
            return ARB_OK;
        }
        ex->inflight_usd += n->est_usd;
        ex->inflight_tokens += n->est_tokens;
    }
    return submit_node(ex, idx);
}

/* Once nothing is in flight or waiting to be stored, the spend is exact: the held-back calls
** start in order while they fit; when the first of them does not fit with nothing in flight,
** the budget is reached and the run ends (budget_stop). */
static arb_status release_gated(arb__exec *ex)
{
    size_t k = 0;
    arb_status st = ARB_OK;
    while (k < ex->n_gated && !st) {
        exec_node *n = &ex->nodes[ex->gated[k]];
        if (!budget_fits(ex, n, &ex->budget_by_usd)) {
            if (!ex->inflight) ex->budget_stop = 1;
            break;
        }
        ex->inflight_usd += n->est_usd;
        ex->inflight_tokens += n->est_tokens;
        st = submit_node(ex, ex->gated[k++]);
    }
    memmove(ex->gated, ex->gated + k, (ex->n_gated - k) * sizeof *ex->gated);
    ex->n_gated -= k;
    return st;
}

/* Dry run: each judge's completion and cost estimates for its calls to send. The typical
** completion is the mean of the judge's stored successful calls (any run). */
static arb_status finish_estimates(arb__exec *ex)
{
    arb_run_stats *rs = ex->stats;
    for (size_t i = 0; i < rs->n_judges; i++) {
        arb_judge_spend *js = &rs->judges[i];
        const arb_judge_config *jc = ex->slot_judge[i];
        if (!js->to_send || !jc) continue;
        if (completion_bound(jc) > 0)
            js->est_completion_max = (long long)completion_bound(jc) * (long long)js->to_send;
        double mean;
        size_t n_stored;
        arb_status st = arb__store_judge_completion_mean(ex->store, js->name, &mean, &n_stored);
        if (st) return st;
        if (n_stored) js->est_completion_typical = llround(mean * (double)js->to_send);
        arb_price price = plan_price(ex, jc);
        if (ex->params.client.batch_export && jc->price.known)
            js->batch_discount = jc->price.batch_discount;
        if (js->est_completion_max >= 0)
            js->est_cost_max = arb__judge_call_cost(&price, js->est_prompt_tokens,
                                                    js->est_completion_max, -1);
        if (js->est_completion_typical >= 0)
            js->est_cost_typical = arb__judge_call_cost(&price, js->est_prompt_tokens,
                                                        js->est_completion_typical, -1);
    }
    return ARB_OK;
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
    if (req.skip) {
        finished_call fc = {.node = idx, .skipped = 1};
        if (queue_finished(ex, &fc)) st = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
        release_dependencies(ex, n);
        goto done;
    }
    n->judge = req.judge;
    n->rep = req.rep;
    n->verdict = req.verdict;
    n->spend_slot = spend_slot(ex, req.judge);
    if (ex->params.client.budget_usd > 0 && !ex->params.dry_run && !req.judge->price.known) {
        st = arb__store_fail(ex->store, ARB_INVALID,
                             "--budget-usd needs a price for every judge; judge \"%s\" has none "
                             "(price: in the judges file, or --price-in/--price-out)",
                             req.judge->name ? req.judge->name : req.judge->model);
        goto done;
    }
    /* A request given as template + values is rendered only when an estimate needs the text;
    ** its body is written from the template's escaped literals (judge.c). */
    if (req.tpl && (ex->budgeting || ex->params.dry_run) &&
        arb_template_render(req.tpl, &req.vars, &req.system, &req.user)) {
        st = arb__store_fail(ex->store, ARB_INVALID, "cannot render template %s",
                             arb_template_name(req.tpl));
        goto done;
    }
    long long prompt_est = ex->budgeting || ex->params.dry_run ? estimate_node(ex, n, &req) : 0;
    if (req.tpl && !req.user)
        n->body = arb__judge_request_body_template(req.judge, req.tpl, &req.vars, req.rep,
                                                   req.response_format, &ex->body_scratch,
                                                   &n->body_len, &n->prompt_chars);
    else if ((n->body = arb__judge_request_body_counted(req.judge, req.system, req.user, req.rep,
                                                        req.response_format, &n->prompt_chars)))
        n->body_len = strlen(n->body);
    if (!n->body) {
        st = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
        goto done;
    }
    arb__judge_call_key_len(n->body, n->body_len, req.rep, n->key);
    /* Already judged from this exact request: done without a claim, a read or a write. A budget
    ** counts what stored calls spent, which only the claim reads: it takes the ordinary way. */
    if (ex->params.recorded && !n->n_dependents && !ex->budgeting &&
        ex->params.recorded(ex->ud, idx, n->key)) {
        node_free_request(n);
        release_dependencies(ex, n);
        committed_call c = {.node = idx, .cached = 1, .ok = 1};
        st = account(ex, &c, 1);
        goto done;
    }
    size_t owner = keys_find(ex, n->key);
    if (owner != NO_NODE) { /* the same request is on its way: wait for it, then reuse it */
        node_free_request(n);
        n->next_waiter = ex->nodes[owner].waiters;
        ex->nodes[owner].waiters = idx;
        goto done;
    }
    release_dependencies(ex, n);
    if (ex->leasing) { /* claimed with the others of this round (claim_calls) */
        if (keys_add(ex, idx) ||
            arb__grow(&ex->to_claim, &ex->cap_to_claim, ex->n_to_claim + 1, sizeof *ex->to_claim))
            st = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
        else
            ex->to_claim[ex->n_to_claim++] = idx;
        goto done;
    }

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
        goto done;
    }
    if (ex->params.dry_run) {
        ex->stats->est_prompt_tokens += prompt_est;
        if (n->spend_slot >= 0) {
            ex->stats->judges[n->spend_slot].to_send++;
            ex->stats->judges[n->spend_slot].est_prompt_tokens += prompt_est;
        }
        finished_call fc = {.node = idx, .ok = 0, .error = arb__strdup("dry run: not sent")};
        if (queue_finished(ex, &fc)) {
            free(fc.error);
            st = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
        }
        goto done;
    }
    if (ex->params.client.batch_export) { /* queued for a batch file (store_batch) */
        finished_call fc = {.node = idx, .queued = 1};
        if (queue_finished(ex, &fc)) st = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
        goto done;
    }
    if (keys_add(ex, idx)) {
        st = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
        goto done;
    }
    st = submit_node(ex, idx);
done:
    free(req.system);
    free(req.user);
    return st;
}

/* Claims the calls of the nodes built this round (one transaction) and acts on each answer:
** a stored call is taken (the node finishes as cached; its in-run waiters follow it), a
** claimed one is sent, one held by another process is parked until the next poll. */
static arb_status claim_calls(arb__exec *ex)
{
    size_t n = ex->n_to_claim;
    if (!n) return ARB_OK;
    if (arb__grow(&ex->claims, &ex->cap_claims, n, sizeof *ex->claims) ||
        arb__grow(&ex->held, &ex->cap_held, ex->n_held + n, sizeof *ex->held))
        return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) ex->claims[i].key = ex->nodes[ex->to_claim[i]].key;
    arb_store *via = lease_store_borrow(ex);
    arb_status st = lease_store_return(ex, via,
                                       arb__store_claim_calls(via, &ex->lease, ex->claims, n));
    if (st) return st;
    ex->n_to_claim = 0;
    for (size_t i = 0; i < n; i++) {
        size_t idx = ex->to_claim[i];
        arb__call_claim *c = &ex->claims[i];
        if (st) { /* an earlier one failed: free what the rest got */
            free(c->content);
            continue;
        }
        if (c->state == ARB__CLAIM_STORED) {
            if (ex->budgeting)
                budget_add_spent(ex, &ex->nodes[idx], c->spend.cost_usd, c->spend.prompt_tokens,
                                 c->spend.completion_tokens);
            finished_call fc = {.node = idx, .cached = 1, .ok = 1, .content = c->content};
            ex->nodes[idx].out.call_id = c->call_id;
            node_free_request(&ex->nodes[idx]);
            if (queue_finished(ex, &fc)) {
                free(c->content);
                st = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
            }
        } else if (c->state == ARB__CLAIM_HELD) {
            if (!ex->n_held) ex->next_held_poll_ms = arb__now_ms() + HELD_POLL_MS;
            ex->held[ex->n_held++] = idx;
            ex->held_pid = c->holder_pid;
        } else {
            st = send_or_gate(ex, idx);
        }
    }
    return st;
}

/* Every HELD_POLL_MS, the parked nodes go back to be claimed again. */
static void poll_held(arb__exec *ex, double now)
{
    if (!ex->n_held || now < ex->next_held_poll_ms) return;
    if (arb__grow(&ex->to_claim, &ex->cap_to_claim, ex->n_to_claim + ex->n_held,
                  sizeof *ex->to_claim))
        return; /* tried again next round */
    memcpy(ex->to_claim + ex->n_to_claim, ex->held, ex->n_held * sizeof *ex->held);
    ex->n_to_claim += ex->n_held;
    ex->n_held = 0;
    ex->next_held_poll_ms = now + HELD_POLL_MS;
}

/* Sends node idx's request (keyed already). */
static arb_status submit_node(arb__exec *ex, size_t idx)
{
    exec_node *n = &ex->nodes[idx];
    arb_status st = target_of(ex, n->judge, &n->target);
    if (st) return st;
    const struct exec_target *t = &ex->targets[n->target];
    /* borrowed: the node's body is freed only after the call finished (store_batch) */
    if (arb__http_submit_pool_borrowed(ex->http, idx, t->pool, t->auth, n->body, n->body_len))
        return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
    ex->inflight++;
    return ARB_OK;
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
                        .completion_tokens = -1,
                        .reasoning_tokens = -1,
                        .cached_tokens = -1,
                        .cost_usd = NAN};
    ex->inflight--;
    const struct exec_target *t = &ex->targets[ex->nodes[idx].target];
    if (res->endpoint >= 0 && (size_t)res->endpoint < t->n_urls)
        fc.endpoint = t->stored_url[res->endpoint];
    if (res->ok) {
        const exec_node *node = &ex->nodes[idx];
        arb__reply_record r;
        /* the verdict token's distribution (logprobs.c) only when the judge asked for it */
        if (arb__judge_take_reply(res->body, res->body_len, &node->judge->price,
                                  node->judge->logprobs ? &node->verdict : NULL, &r)) {
            ex->failed_status = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
            return;
        }
        fc.ok = r.ok;
        fc.content = r.content;
        fc.reasoning = r.reasoning;
        fc.logprobs = r.logprobs;
        fc.error = r.error;
        fc.raw_reply = r.raw_reply;
        fc.prompt_tokens = r.prompt_tokens;
        fc.completion_tokens = r.completion_tokens;
        fc.reasoning_tokens = r.reasoning_tokens;
        fc.cached_tokens = r.cached_tokens;
        fc.cost_usd = r.cost_usd;
    } else {
        fc.ok = 0;
        fc.error = arb__strdup(res->error ? res->error : "request failed");
        if (res->body_len) fc.raw_reply = arb__strndup(res->body, res->body_len);
    }
    /* A server may echo the key (in an error text, or a model repeating its headers): it is
    ** replaced before anything is stored or parsed, so the judgment is that of the stored text. */
    const char *key_env = ex->nodes[idx].judge->api_key_env;
    if (arb__judge_redact_key(key_env, &fc.content) || arb__judge_redact_key(key_env, &fc.raw_reply) ||
        arb__judge_redact_key(key_env, &fc.error) || arb__judge_redact_key(key_env, &fc.reasoning) ||
        queue_finished(ex, &fc)) {
        finished_free(&fc);
        ex->failed_status = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
    }
}

/* Frees a finished call's texts. */
static void finished_free(finished_call *fc)
{
    free(fc->content);
    free(fc->reasoning);
    free(fc->error);
    free(fc->raw_reply);
    free(fc->logprobs);
    fc->content = fc->reasoning = fc->error = fc->raw_reply = fc->logprobs = NULL;
}

/* Stores a batch of finished calls and their protocol rows in one transaction through store
** (a dry run stores nothing), fills report[i] for each, and frees the batch's texts, keeping
** the outcome text of nodes that have dependents. On failure everything is rolled back and
** freed. Runs on the writer thread, or on the main thread for an in-memory store. */
static arb_status store_batch(arb__exec *ex, arb_store *store, finished_call *batch, size_t n,
                              committed_call *report)
{
    arb_status st = ARB_OK;
    int dry = ex->params.dry_run, in_tx = 0;
    if (!dry) {
        if ((st = arb__store_begin(store))) goto done;
        in_tx = 1;
    }
    for (size_t i = 0; i < n; i++) {
        finished_call *fc = &batch[i];
        exec_node *node = &ex->nodes[fc->node];
        if (fc->queued) { /* batch export: kept for the batch file, no judgment yet */
            char *verdict = arb__verdict_spec_text(&node->verdict);
            if (node->verdict.kind != ARB__VERDICT_NONE && !verdict) {
                st = arb__store_fail(store, ARB_NOMEM, "out of memory");
                goto done;
            }
            arb__batch_call bc = {.key = node->key,
                                  .judge_name = (char *)(node->judge->name ? node->judge->name
                                                                           : node->judge->model),
                                  .model = (char *)node->judge->model,
                                  .rep = node->rep,
                                  .request_json = node->body,
                                  .api_key_env = (char *)node->judge->api_key_env,
                                  .base_url = (char *)node->judge->base_url,
                                  .verdict = verdict};
            st = arb__store_queue_batch_call(store, &bc);
            free(verdict);
            if (st) goto done;
            continue;
        }
        if (!dry && !fc->cached && !fc->skipped) {
            arb__call_record rec = {
                .key = node->key,
                .judge_name = node->judge->name ? node->judge->name : node->judge->model,
                .model = node->judge->model,
                .request_json = node->body,
                .rep = node->rep,
                .ok = fc->ok,
                .content = fc->content,
                .raw_reply = fc->raw_reply,
                .error = fc->error,
                .http_status = fc->http_status,
                .attempts = fc->attempts,
                .prompt_tokens = fc->prompt_tokens,
                .completion_tokens = fc->completion_tokens,
                .latency_ms = fc->latency_ms,
                .reasoning = fc->reasoning,
                .reasoning_tokens = fc->reasoning_tokens,
                .cached_tokens = fc->cached_tokens,
                .cost_usd = fc->cost_usd,
                .logprobs = fc->logprobs,
                .endpoint = fc->endpoint,
                .built = 1, /* the body is arb__judge_request_body_counted's (start_node) */
                .prompt_chars = node->prompt_chars,
                .asks_logprobs = node->judge->logprobs ? 1 : 0,
            };
            arb__call_texts texts;
            if (ex->params.texts && ex->params.texts(ex->ud, fc->node, &texts)) rec.texts = &texts;
            int kept = 0;
            char *stored = NULL;
            if ((st = arb__store_settle_call(store, &rec, &node->out.call_id, &kept, &stored)))
                goto done;
            if (kept) { /* another process stored a reply first: judge that one */
                free(fc->content);
                free(fc->error);
                fc->content = stored;
                fc->error = NULL;
                fc->ok = 1;
            }
            if (ex->leasing && (st = arb__store_release_lease(store, &ex->lease, node->key)))
                goto done;
        }
        node->out.cached = fc->cached;
        node->out.skipped = fc->skipped;
        node->out.ok = fc->ok;
        node->out.content = fc->content;
        node->out.error = fc->error;
        if (!dry && ex->done(ex->ud, store, fc->node, &node->out)) {
            st = ARB_INVALID;
            goto done;
        }
    }
    if (in_tx) {
        if ((st = arb__store_commit(store))) goto done;
        in_tx = 0;
    }
    for (size_t i = 0; i < n; i++) {
        finished_call *fc = &batch[i];
        exec_node *node = &ex->nodes[fc->node];
        report[i] = (committed_call){.node = fc->node, .cached = fc->cached, .ok = fc->ok,
                                     .skipped = fc->skipped, .queued = fc->queued,
                                     .prompt_tokens = fc->prompt_tokens,
                                     .completion_tokens = fc->completion_tokens,
                                     .reasoning_tokens = fc->reasoning_tokens,
                                     .cached_tokens = fc->cached_tokens,
                                     .cost_usd = fc->cost_usd};
        node_free_request(node);
        /* Keep the outcome's text only while some dependent may still read it. */
        if (node->n_dependents) {
            node->content = fc->content;
            node->error = fc->error;
            fc->content = fc->error = NULL;
        } else {
            node->out.content = node->out.error = NULL;
        }
        finished_free(fc);
    }
    return ARB_OK;
done:
    if (in_tx) arb__store_rollback(store);
    for (size_t i = 0; i < n; i++) {
        ex->nodes[batch[i].node].out.content = ex->nodes[batch[i].node].out.error = NULL;
        finished_free(&batch[i]);
    }
    return st;
}

/* Main thread: what a sent call spent, in the totals, its judge's line and the budget. */
static void account_spend(arb__exec *ex, const exec_node *node, const committed_call *c)
{
    int known = isfinite(c->cost_usd);
    if (known) ex->stats->cost_usd += c->cost_usd;
    else ex->stats->cost_unknown++;
    if (node->spend_slot >= 0) {
        arb_judge_spend *js = &ex->stats->judges[node->spend_slot];
        js->sent++;
        if (c->prompt_tokens > 0) js->prompt_tokens += c->prompt_tokens;
        if (c->completion_tokens > 0) js->completion_tokens += c->completion_tokens;
        if (c->cached_tokens > 0) js->cached_tokens += c->cached_tokens;
        if (c->reasoning_tokens > 0) js->reasoning_tokens += c->reasoning_tokens;
        if (known) js->cost_usd += c->cost_usd;
        else js->cost_unknown++;
    }
    if (ex->budgeting) {
        ex->inflight_usd -= node->est_usd;
        ex->inflight_tokens -= node->est_tokens;
        budget_add_spent(ex, node, c->cost_usd, c->prompt_tokens, c->completion_tokens);
    }
}

/* Batch export: the nodes that depend, directly or not, on queued node idx wait for a later
** round; they count as done now and are never built. */
static arb_status defer_dependents(arb__exec *ex, size_t idx)
{
    size_t *stack = NULL, n = 0, cap = 0;
    arb_status st = ARB_OK;
    for (size_t top = idx;;) {
        const exec_node *node = &ex->nodes[top];
        for (size_t k = 0; k < node->n_dependents; k++) {
            size_t d = ex->dependents[node->dependents_start + k];
            if (ex->nodes[d].deferred) continue;
            if (arb__grow(&stack, &cap, n + 1, sizeof *stack)) {
                st = arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
                goto done;
            }
            ex->nodes[d].deferred = 1;
            ex->n_done++;
            ex->stats->batch_waiting++;
            stack[n++] = d;
        }
        if (!n) break;
        top = stack[--n];
    }
done:
    free(stack);
    return st;
}

/* Main thread: counts committed calls and releases their dependents. */
static arb_status account(arb__exec *ex, const committed_call *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        exec_node *node = &ex->nodes[c[i].node];
        if (c[i].queued) {
            ex->stats->batch_queued++;
            ex->n_done++;
            arb_status st = defer_dependents(ex, c[i].node);
            if (st) return st;
            continue;
        }
        if (c[i].skipped) ex->stats->skipped++;
        else if (c[i].cached) ex->stats->cached++;
        else if (!ex->params.dry_run) {
            ex->stats->sent++; /* sent = ok + failed */
            if (c[i].ok) ex->stats->ok++;
            else ex->stats->failed++;
            if (c[i].prompt_tokens > 0) ex->stats->prompt_tokens += c[i].prompt_tokens;
            if (c[i].completion_tokens > 0) ex->stats->completion_tokens += c[i].completion_tokens;
            account_spend(ex, node, &c[i]);
            if (c[i].reasoning_tokens > 0) ex->stats->reasoning_tokens += c[i].reasoning_tokens;
        }
        ex->n_done++;
        if (node->keyed) {
            keys_remove(ex, c[i].node);
            /* the waiters now find the call in the store (or, if it failed, send it again) */
            for (size_t w = node->waiters; w != NO_NODE; w = ex->nodes[w].next_waiter)
                if (ready_push(ex, w)) return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
            node->waiters = NO_NODE;
        }
        for (size_t k = 0; k < node->n_dependents; k++) {
            size_t d = ex->dependents[node->dependents_start + k];
            if (--ex->nodes[d].unmet == 0 && !ex->nodes[d].deferred && ready_push(ex, d))
                return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
        }
    }
    return ARB_OK;
}

/* Inline storing (dry runs, in-memory stores): store and account at once. */
static arb_status commit_finished(arb__exec *ex)
{
    if (!ex->n_finished) return ARB_OK;
    size_t n = ex->n_finished;
    ex->n_finished = 0;
    if (arb__grow(&ex->accounted, &ex->cap_accounted, n, sizeof *ex->accounted)) {
        for (size_t i = 0; i < n; i++) finished_free(&ex->finished[i]);
        return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");
    }
    arb_status st = store_batch(ex, ex->store, ex->finished, n, ex->accounted);
    return st ? st : account(ex, ex->accounted, n);
}

static void *writer_main(void *arg)
{
    arb__exec *ex = arg;
    exec_writer *w = &ex->writer;
    finished_call *batch = NULL;
    size_t cap_batch = 0, cap_report = 0;
    committed_call *report = NULL;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->n_queue && !w->stop) pthread_cond_wait(&w->wake, &w->mu);
        if (!w->n_queue) break; /* stopping, and everything handed over is stored */
        if (w->n_queue < WRITER_BATCH && !w->stop && !w->hurry) { /* gather (WRITER_BATCH) */
            double wait_ms = ex->params.commit_wait_ms > 0 ? ex->params.commit_wait_ms
                                                             : WRITER_WAIT_MS;
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            long long ns = until.tv_nsec + (long long)(wait_ms * 1e6);
            until.tv_sec += (time_t)(ns / 1000000000LL);
            until.tv_nsec = (long)(ns % 1000000000LL);
            w->gathering = 1;
            while (w->n_queue < WRITER_BATCH && !w->stop && !w->hurry &&
                   pthread_cond_timedwait(&w->wake, &w->mu, &until) == 0)
                ;
            w->gathering = 0;
        }
        /* The main thread has the connection for a claim (lease_store): wait until it is
        ** done; what it queued meanwhile goes into this batch. */
        while (w->lent) pthread_cond_wait(&w->wake, &w->mu);
        /* Take the whole queue by swapping arrays, so the main thread can go on queueing. */
        finished_call *taken = w->queue;
        size_t n = w->n_queue, cap = w->cap_queue;
        w->queue = batch;
        w->cap_queue = cap_batch;
        w->n_queue = 0;
        batch = taken;
        cap_batch = cap;
        w->storing = 1;
        pthread_mutex_unlock(&w->mu);

        arb_status st = arb__grow(&report, &cap_report, n, sizeof *report)
                            ? arb__store_fail(w->store, ARB_NOMEM, "out of memory")
                            : ARB_OK;
        if (st) {
            for (size_t i = 0; i < n; i++) finished_free(&batch[i]);
        } else {
            st = store_batch(ex, w->store, batch, n, report);
        }
        pthread_mutex_lock(&w->mu);
        w->storing = 0;
        if (!st && arb__grow(&w->done, &w->cap_done, w->n_done + n, sizeof *w->done))
            st = arb__store_fail(w->store, ARB_NOMEM, "out of memory");
        if (st) {
            w->status = st;
            pthread_cond_signal(&w->progress);
            break;
        }
        memcpy(w->done + w->n_done, report, n * sizeof *report);
        w->n_done += n;
        pthread_cond_signal(&w->progress);
    }
    pthread_mutex_unlock(&w->mu);
    free(batch);
    free(report);
    return NULL;
}

/* Opens the writer's connection and starts its thread. */
static arb_status writer_start(arb__exec *ex)
{
    exec_writer *w = &ex->writer;
    arb_status st = arb_store_open(arb__store_path(ex->store), &w->store);
    if (st) {
        arb__store_fail(ex->store, st, "%s", w->store ? arb_store_errmsg(w->store) : arb_strerror(st));
        arb_store_close(w->store);
        w->store = NULL;
        return st;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->progress, NULL);
    if (pthread_create(&w->thread, NULL, writer_main, ex)) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->wake);
        pthread_cond_destroy(&w->progress);
        arb_store_close(w->store);
        w->store = NULL;
        return arb__store_fail(ex->store, ARB_NOMEM, "cannot start the storage thread");
    }
    w->started = 1;
    return ARB_OK;
}

/* Hands the finished calls to the writer. */
static arb_status hand_over(arb__exec *ex)
{
    if (!ex->n_finished) return ARB_OK;
    exec_writer *w = &ex->writer;
    pthread_mutex_lock(&w->mu);
    int failed = arb__grow(&w->queue, &w->cap_queue, w->n_queue + ex->n_finished,
                      sizeof *w->queue);
    if (!failed) {
        memcpy(w->queue + w->n_queue, ex->finished, ex->n_finished * sizeof *ex->finished);
        w->n_queue += ex->n_finished;
        ex->pending_commit += ex->n_finished;
        ex->n_finished = 0;
        /* a gathering writer is woken only by a full batch */
        if (!w->gathering || w->n_queue >= WRITER_BATCH) pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->mu);
    return failed ? arb__store_fail(ex->store, ARB_NOMEM, "out of memory") : ARB_OK;
}

/* Takes what the writer committed (waiting for something when wait is set) and accounts
** for it. Returns the writer's failure, with its message copied to the main store. */
static arb_status take_committed(arb__exec *ex, int wait)
{
    exec_writer *w = &ex->writer;
    pthread_mutex_lock(&w->mu);
    if (wait && !w->n_done && ex->pending_commit) { /* nothing to do until a commit: now */
        w->hurry = 1;
        pthread_cond_signal(&w->wake);
    }
    while (wait && !w->n_done && !w->status && ex->pending_commit) pthread_cond_wait(&w->progress, &w->mu);
    w->hurry = 0;
    arb_status status = w->status;
    committed_call *reports = w->done;
    size_t n = w->n_done, cap = w->cap_done;
    w->done = ex->accounted;
    w->cap_done = ex->cap_accounted;
    w->n_done = 0;
    pthread_mutex_unlock(&w->mu);
    ex->accounted = reports;
    ex->cap_accounted = cap;
    ex->pending_commit -= n;
    arb_status st = account(ex, reports, n);
    if (status) return arb__store_fail(ex->store, status, "%s", arb_store_errmsg(w->store));
    return st;
}

/* The connection the leases are written through (claims, renewals, the release at the end):
** the writer's, when there is one, used by the main thread between two of the writer's
** transactions (the writer takes no batch meanwhile), so the run writes the store through one
** connection only. Through the main thread's own connection, every claim was a write of
** another connection to the writer, which then dropped its whole page cache (SQLite does in
** WAL mode when another connection has committed) and read ~250 pages back from the WAL,
** while the main thread read back the pages the writer had changed and waited for the
** writer's transaction by SQLite's busy handler, which sleeps (3 ms and more) instead of being
** woken: at 40,000 calls ~7,300 and ~2,000 page reads and ~100 sleeps (strace, 2026-11-28).
** Another process on the store still waits through the busy handler. Pair with
** lease_store_return. */
static arb_store *lease_store_borrow(arb__exec *ex)
{
    exec_writer *w = &ex->writer;
    if (!w->store) return ex->store;
    if (!w->started) return w->store; /* stopped (joined) or never started: no other user */
    pthread_mutex_lock(&w->mu);
    w->lent = 1;
    while (w->storing) pthread_cond_wait(&w->progress, &w->mu);
    pthread_mutex_unlock(&w->mu);
    return w->store;
}

/* Gives the connection back to the writer; a failure's message goes to the main store. */
static arb_status lease_store_return(arb__exec *ex, arb_store *used, arb_status st)
{
    exec_writer *w = &ex->writer;
    if (used == ex->store) return st;
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->lent = 0;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->mu);
    }
    if (st) arb__store_fail(ex->store, st, "%s", arb_store_errmsg(used));
    return st;
}

/* Lets the writer store everything handed over, stops it and accounts for the rest. */
static arb_status writer_stop(arb__exec *ex)
{
    exec_writer *w = &ex->writer;
    if (!w->started) return ARB_OK;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    w->started = 0;
    return take_committed(ex, 0);
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
    size_t done = ex->plan_base + ex->n_done;
    size_t total = ex->plan_total ? ex->plan_total : ex->n_nodes;
    double elapsed = (now - (ex->plan_total ? ex->plan_started_ms : ex->started_ms)) / 1000.0;
    double rate = elapsed > 0 ? (double)ex->stats->sent / elapsed : 0;
    size_t left = total - done;
    /* the line ends with the plan's last slice, or with the slice where the run stopped */
    final = final && (ex->plan_base + ex->n_nodes >= total || ex->n_done < ex->n_nodes);
    char eta[32];
    format_duration(eta, sizeof eta, rate > 0 ? (double)left / rate : NAN);
    char held[96] = "";
    if (ex->n_held && !final)
        snprintf(held, sizeof held, "  waiting for %zu calls that pid %ld is sending", ex->n_held,
                 ex->held_pid);
    fprintf(stderr, "\r\033[K%zu/%zu calls  %.1f/s  ETA %s  errors %zu  stored before %zu%s%s",
            done, total, rate, eta, ex->stats->failed, ex->stats->cached, held,
            final ? "\n" : "");
    fflush(stderr);
}

/* Each judge's endpoints' counters from the transport into stats->endpoints (added to an entry
** of the same judge and URL: a pass of --batch wait runs the plan again). */
static void endpoint_stats(const arb__exec *ex, arb_run_stats *stats)
{
    for (size_t t = 0; ex->http && t < ex->n_targets; t++) {
        const struct exec_target *tg = &ex->targets[t];
        for (size_t i = 0; i < tg->n_urls; i++) {
            arb__http_endpoint_stats es;
            if (arb__http_get_endpoint_stats(ex->http, tg->pool, i, &es) || !es.sent) continue;
            const char *name = tg->judge->name ? tg->judge->name : tg->judge->model;
            size_t k = 0;
            while (k < stats->n_endpoints &&
                   (strcmp(stats->endpoints[k].judge, name) ||
                    strncmp(stats->endpoints[k].url, tg->stored_url[i],
                            sizeof stats->endpoints[k].url - 1)))
                k++;
            if (k == ARB_RUN_STATS_ENDPOINTS) continue;
            arb_endpoint_spend *e = &stats->endpoints[k];
            if (k == stats->n_endpoints) {
                memset(e, 0, sizeof *e);
                e->judge = name;
                snprintf(e->url, sizeof e->url, "%s", tg->stored_url[i]);
                stats->n_endpoints++;
            }
            e->requests += es.sent;
            e->ok += es.ok;
            e->throttled += es.throttled;
            e->failed += es.failed;
            e->cooldowns += es.cooldowns;
        }
    }
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
    if (!ex->params.dry_run && !ex->params.client.batch_export) {
        ex->http = arb__http_create(&ex->params.client);
        if (!ex->http) return arb__store_fail(ex->store, ARB_NOMEM, "cannot start HTTP client");
        if (!arb__store_is_memory(ex->store) && (st = writer_start(ex))) return st;
    }
    int threaded = ex->writer.started;
    for (size_t i = 0; i < ex->n_nodes; i++)
        if (ex->nodes[i].unmet == 0 && ready_push(ex, i))
            return arb__store_fail(ex->store, ARB_NOMEM, "out of memory");

    /* Requests built ahead of the transport: enough to keep every connection busy, few enough
    ** that memory does not grow with the size of the run. Likewise calls waiting to be stored. */
    size_t window = (size_t)(ex->params.client.jobs > 0 ? ex->params.client.jobs : 1) * 4;
    if (window < 64) window = 64;
    const size_t max_pending_commit = 8192;
    while (ex->n_done < ex->n_nodes) {
        if (arb__stop_requested) {
            st = ARB_INTERRUPTED;
            break;
        }
        if (ex->budget_stop && !ex->inflight && !ex->n_finished && !ex->pending_commit) {
            st = ARB_BUDGET;
            break;
        }
        double now = arb__now_ms();
        poll_held(ex, now);
        size_t ahead = ex->leasing ? CLAIM_BATCH : 0;
        int gate_shut = ex->n_gated || ex->budget_stop; /* start nothing new meanwhile */
        while (!gate_shut && ex->ready_len && ex->inflight + ex->n_to_claim < window + ahead &&
               ex->n_held < 8 * window && ex->n_finished < 4096 &&
               ex->pending_commit < max_pending_commit) {
            if ((st = start_node(ex, ready_pop(ex)))) goto done;
        }
        if (!gate_shut &&
            (ex->n_to_claim >= CLAIM_BATCH || ex->inflight < window / 2 || !ex->ready_len) &&
            (st = claim_calls(ex)))
            goto done;
        if (ex->leasing && now - ex->last_renew_ms > LEASE_SECONDS * 1000.0 / 4) {
            arb_store *via = lease_store_borrow(ex);
            st = lease_store_return(ex, via, arb__store_renew_leases(via, &ex->lease));
            if (st) goto done;
            ex->last_renew_ms = now;
        }
        if (ex->inflight) {
            arb__http_step(ex->http, ex->n_finished ? 0 : 100, on_http_done, ex);
            if (ex->failed_status) {
                st = ex->failed_status;
                goto done;
            }
        }
        if (threaded) {
            if ((st = hand_over(ex))) goto done;
            /* Nothing to send until the writer catches up: wait for it rather than spin. */
            int idle = !ex->inflight && (!ex->ready_len || gate_shut ||
                                         ex->pending_commit >= max_pending_commit);
            if ((st = take_committed(ex, idle))) goto done;
        } else if ((st = commit_finished(ex))) {
            goto done;
        }
        if (ex->n_gated && !ex->budget_stop && !ex->inflight && !ex->n_finished &&
            !ex->pending_commit && (st = release_gated(ex)))
            goto done;
        show_progress(ex, 0);
        if (!ex->inflight && !ex->n_finished && !ex->pending_commit && ex->n_held &&
            (!ex->ready_len || ex->n_held >= 8 * window)) {
            /* Only calls that another process is sending: wait for the next poll, not spin. */
            double wait_ms = ex->next_held_poll_ms - arb__now_ms();
            if (wait_ms > 0) {
                struct timespec pause = {0, (long)(wait_ms * 1e6)};
                nanosleep(&pause, NULL);
            }
            continue;
        }
        if (!ex->inflight && !ex->ready_len && !ex->n_finished && !ex->pending_commit &&
            !ex->n_gated && !ex->budget_stop && ex->n_done < ex->n_nodes) {
            st = arb__store_fail(ex->store, ARB_INVALID,
                                 "internal error: %zu calls can never start",
                                 ex->n_nodes - ex->n_done);
            goto done;
        }
    }
done:
    /* Keep what finished; the rest is sent again on the next run. */
    if (threaded) {
        arb_status flush = hand_over(ex);
        arb_status stop = writer_stop(ex);
        if (st == ARB_OK) st = flush ? flush : stop;
    } else if (st == ARB_INTERRUPTED) {
        commit_finished(ex);
    }
    /* What this run claimed and did not store is free for others (or the next run) to send. */
    if (ex->leasing) {
        arb_store *via = lease_store_borrow(ex); /* the writer's, stopped: its cache is warm */
        arb_status release =
            lease_store_return(ex, via, arb__store_release_leases(via, &ex->lease));
        if (st == ARB_OK) st = release;
    }
    if (st == ARB_INTERRUPTED)
        arb__store_fail(ex->store, ARB_INTERRUPTED,
                        "interrupted: %zu of %zu calls done and stored; run again to finish",
                        ex->plan_base + ex->n_done, ex->plan_total ? ex->plan_total : ex->n_nodes);
    stats->budget_spent_usd = ex->spent_usd;
    stats->budget_spent_tokens = ex->spent_tokens;
    if (st == ARB_BUDGET) {
        /* this slice's calls not sent, and every call of the slices after it */
        size_t after = ex->plan_total > ex->plan_base + ex->n_nodes
                           ? ex->plan_total - ex->plan_base - ex->n_nodes : 0;
        stats->not_sent = ex->n_nodes - ex->n_done + after;
        if (ex->budget_by_usd)
            arb__store_fail(ex->store, ARB_BUDGET,
                            "budget reached: spent $%.4f of $%.4f; %zu calls not sent; rerun with "
                            "a larger budget to continue", ex->spent_usd,
                            ex->params.client.budget_usd, stats->not_sent);
        else
            arb__store_fail(ex->store, ARB_BUDGET,
                            "budget reached: spent %lld tokens of %lld; %zu calls not sent; rerun "
                            "with a larger budget to continue", ex->spent_tokens,
                            ex->params.client.budget_tokens, stats->not_sent);
    }
    if (ex->params.dry_run && st == ARB_OK) st = finish_estimates(ex);
    if (ex->http) stats->retries += arb__http_get_stats(ex->http).retries;
    endpoint_stats(ex, stats);
    show_progress(ex, 1);
    stats->seconds += (arb__now_ms() - t0) / 1000.0;
    return st;
}

/* A protocol's plan of independent calls runs in consecutive slices of at most PLAN_SLICE
** nodes, one executor each, so the plan's memory (a node is about 220 bytes) stays the same
** however many calls a run has: 1,000,000 calls would hold 220 MB of nodes at once. Between
** slices the transport drains once (a few milliseconds per 65,536 calls). A plan with
** dependencies does the same when they stay inside groups of consecutive nodes
** (arb__exec_params.group: a debate's turns, a discussion's statements), its slices cut
** between groups; a plan whose dependencies cross (a persona panel's rounds over the judges'
** calls) runs whole. Under a budget the spend goes from each slice's executor to the next:
** a slice ends with every call of it stored, so the next starts from the exact spend, as a
** whole run's gate does once its calls in flight are stored (until 2026-11-28 a budget run
** was one slice, so 1,000,000 calls held their nodes and an indexed input at once). A plan
** with dependencies still runs whole under a budget: its slices would finish whole judgments
** (every turn of a debate) before the next slice starts, where one pass starts the first turns
** of all of them first, so the budget would stop at other calls (a review's test: 7 calls sent
** against one pass's 6). */
#define PLAN_SLICE 65536

size_t arb__exec_plan_slice = 0;
size_t arb__exec_largest_slice = 0;

/* One slice's view of the protocol: node numbers shifted by base into the protocol's. */
typedef struct plan_slice {
    void *ud;
    size_t base;
    arb__exec_build_fn build;
    arb__exec_done_fn done;
    arb__exec_recorded_fn recorded;
    arb__exec_texts_fn texts;
} plan_slice;

static int slice_build(void *ud, size_t node, const arb__call_outcome *const *deps,
                       size_t n_deps, arb__exec_request *req)
{
    const plan_slice *sl = ud;
    return sl->build(sl->ud, sl->base + node, deps, n_deps, req);
}

static int slice_done(void *ud, arb_store *s, size_t node, const arb__call_outcome *out)
{
    const plan_slice *sl = ud;
    return sl->done(sl->ud, s, sl->base + node, out);
}

static int slice_recorded(void *ud, size_t node, const char *call_key)
{
    const plan_slice *sl = ud;
    return sl->recorded(sl->ud, sl->base + node, call_key);
}

static int slice_texts(void *ud, size_t node, arb__call_texts *t)
{
    const plan_slice *sl = ud;
    return sl->texts(sl->ud, sl->base + node, t);
}

/* One pass over the plan: every node added (slice by slice, see PLAN_SLICE), the stored calls
** judged, the missing ones sent (or queued in batch mode), the protocol's finish, then the
** batch steps after the plan (submit only when submit is set). */
static arb_status run_plan(arb_store *s, const arb__exec_params *params, size_t n_calls,
                           arb__exec_deps_fn deps_of, arb__exec_build_fn build,
                           arb__exec_done_fn done, arb__exec_finish_fn finish, void *ud,
                           int submit, arb_run_stats *stats)
{
    size_t slice = params->slice ? params->slice
                   : arb__exec_plan_slice ? arb__exec_plan_slice : PLAN_SLICE;
    if (deps_of && params->group) /* whole groups: a node and its dependencies in one slice */
        slice = slice < params->group ? params->group : slice - slice % params->group;
    int budget = params->client.budget_usd > 0 || params->client.budget_tokens > 0;
    if (deps_of && (!params->group || budget)) slice = n_calls;
    plan_slice sl = {ud, 0, build, done, params->recorded, params->texts};
    arb__exec_params slice_params = *params;
    if (params->recorded) slice_params.recorded = slice_recorded;
    if (params->texts) slice_params.texts = slice_texts;
    double started_ms = arb__now_ms();
    double spent_usd = 0; /* the budget's spend of the slices before (arb__exec.spent_usd) */
    long long spent_tokens = 0;
    arb_status st = ARB_OK;
    do {
        size_t n = n_calls - sl.base < slice ? n_calls - sl.base : slice;
        if (params->slice_begin && (st = params->slice_begin(ud, sl.base, n))) break;
        arb__exec *ex = arb__exec_create(s, &slice_params, slice_build, slice_done, &sl);
        if (!ex) {
            st = arb__store_fail(s, ARB_NOMEM, "out of memory");
            break;
        }
        ex->plan_base = sl.base;
        ex->plan_total = n_calls;
        ex->plan_started_ms = started_ms;
        size_t deps[ARB__EXEC_MAX_DEPS]; /* the protocol's node numbers, then the slice's */
        for (size_t i = 0; i < n && !st; i++) {
            size_t n_deps = deps_of ? deps_of(ud, sl.base + i, deps) : 0;
            for (size_t k = 0; k < n_deps && !st; k++) {
                if (deps[k] < sl.base) /* a protocol's group that is not one */
                    st = arb__store_fail(s, ARB_INVALID, "node %zu depends on node %zu, outside "
                                         "its group of %zu", sl.base + i, deps[k], params->group);
                deps[k] -= sl.base;
            }
            if (!st && arb__exec_add(ex, deps, n_deps) == (size_t)-1)
                st = arb__store_fail(s, ARB_NOMEM, "out of memory");
        }
        if (n > arb__exec_largest_slice) arb__exec_largest_slice = n;
        ex->spent_usd = spent_usd;
        ex->spent_tokens = spent_tokens;
        if (!st) st = arb__exec_run(ex, stats);
        spent_usd = ex->spent_usd;
        spent_tokens = ex->spent_tokens;
        arb__exec_destroy(ex);
        sl.base += n;
    } while (!st && sl.base < n_calls);
    stats->planned = n_calls;
    if (finish) st = finish(ud, s, st, stats);
    if (!st && !params->dry_run) {
        arb__exec_params p = *params;
        if (!submit && p.client.batch_action == ARB_BATCH_WAIT)
            p.client.batch_action = ARB_BATCH_COLLECT; /* judge and queue, send nothing */
        st = arb__batch_api_after(s, &p.client, stats);
    }
    return st;
}

/* --batch wait, between rounds: the counts of a pass over the plan start again (the summary
** reports the last pass, which judges every call stored so far), the Batch API's add up. */
static void next_round_stats(arb_run_stats *st)
{
    arb_run_stats keep = *st;
    memset(st, 0, sizeof *st);
    st->seconds = keep.seconds;
    st->batch_written = keep.batch_written;
    st->batch_files = keep.batch_files;
    st->batch_submitted = keep.batch_submitted;
    st->batch_open = keep.batch_open;
    st->batch_collected = keep.batch_collected;
    st->batch_replies = keep.batch_replies;
    st->batch_failed = keep.batch_failed;
    st->batch_running = keep.batch_running;
    st->batch_rounds = keep.batch_rounds;
    st->batch_action = keep.batch_action;
}

/* See internal.h. */
arb_status arb__exec_protocol(arb_store *s, const char *protocol, const char *params_json,
                              const arb__exec_params *params, size_t n_calls,
                              arb__exec_deps_fn deps_of, arb__exec_build_fn build,
                              arb__exec_done_fn done, arb__exec_finish_fn finish, void *ud,
                              arb_run_stats *stats)
{
    long long run_id = 0;
    arb_status st;
    arb__exec_params batch_params = *params;
    if (params->client.batch_action) { /* every Batch API step queues instead of sending */
        batch_params.client.batch_export = 1;
        params = &batch_params;
    }
    if (params->client.batch_out && !params->client.batch_export)
        return arb__store_fail(s, ARB_INVALID, "a batch file is written only in batch export "
                               "mode (--out needs --batch export)");
    stats->batch_action = params->client.batch_action;
    if (!params->dry_run && params->client.batch_action) {
        if ((st = arb__batch_api_before(s, &params->client, stats))) return st;
        if (params->client.batch_action == ARB_BATCH_STATUS) return ARB_OK; /* no plan run */
    }
    if (!params->dry_run && !params_json) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    if (!params->dry_run && (st = arb__store_run_begin(s, protocol, params_json, &run_id)))
        return st;
    if (params->run_id) *params->run_id = run_id;
    /* --batch wait goes round by round (README "Batch API"): submit what can go, wait for it,
    ** collect, judge, submit the calls that became ready (later debate and discussion turns),
    ** until a pass submits nothing. A round whose batches stored no reply at all (a provider
    ** that fails every line) submits nothing more, so the loop ends and the summary says what
    ** is still to come. */
    int looping = !params->dry_run && params->client.batch_action == ARB_BATCH_WAIT;
    int submit = 1;
    for (;;) {
        size_t submitted = stats->batch_submitted;
        st = run_plan(s, params, n_calls, deps_of, build, done, finish, ud, submit, stats);
        if (st || !looping || stats->batch_submitted == submitted) break;
        stats->batch_rounds++;
        size_t replies = stats->batch_replies;
        next_round_stats(stats);
        if ((st = arb__batch_api_before(s, &params->client, stats))) break;
        submit = stats->batch_replies > replies;
    }
    if (run_id) {
        arb_status end = arb__store_run_end(s, run_id, stats,
                                            st == ARB_OK ? ARB__RUN_FINISHED
                                            : st == ARB_INTERRUPTED || st == ARB_BUDGET
                                                ? ARB__RUN_INTERRUPTED
                                                : ARB__RUN_FAILED);
        if (st == ARB_OK) st = end;
    }
    return st;
}

/* See internal.h. */
int arb__exec_render(arb_store *s, const arb_template *tpl, const arb_prompt_vars *vars,
                     const arb_item *it, const char *what, const arb_judge_config *judge, int rep,
                     arb__exec_request *req)
{
    arb_status st = arb_template_render(tpl, vars, &req->system, &req->user);
    if (st) {
        arb__store_fail(s, st, "%s: cannot render template %s for %s \"%s\": %s", it->source,
                        arb_template_name(tpl), what, it->id, arb_strerror(st));
        return -1;
    }
    req->judge = judge;
    req->rep = rep;
    req->response_format = arb_template_response_format(tpl);
    return 0;
}
