/*
** test_sim.c -- the simulated judge server (sim.c): judge specs, the HTTP surface (routes,
** errors, labels), option-mode detection, determinism, and the statistics of the judge model
** with stated tolerances. Talks to a server on loopback with blocking libcurl requests.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "arbiter.h"

/* ---- HTTP helpers ------------------------------------------------------------------------ */

typedef struct http_reply {
    long status;
    char *body;
    size_t len;
    int simulator_header; /* the Server header names the simulator */
} http_reply;

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    http_reply *r = ud;
    char *grown = realloc(r->body, r->len + size * n + 1);
    if (!grown) return 0;
    memcpy(grown + r->len, p, size * n);
    r->len += size * n;
    grown[r->len] = '\0';
    r->body = grown;
    return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    http_reply *r = ud;
    static const char want[] = "Server: arbiter-sim-server (SIMULATOR, not a language model)";
    if (size * n >= sizeof want - 1 && !strncmp(p, want, sizeof want - 1))
        r->simulator_header = 1;
    return size * n;
}

/* Sends method to path on the server; body may be NULL. Returns the reply (free body). */
static http_reply http(const arb_sim_server *srv, const char *method, const char *path,
                       const char *body)
{
    http_reply r = {0, NULL, 0, 0};
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", arb_sim_server_port(srv), path);
    CURL *c = curl_easy_init();
    assert_non_null(c);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);
    if (!r.body) r.body = calloc(1, 1);
    return r;
}

/* Builds a chat request body. temperature < 0: not sent; seed < 0: not sent. */
static char *chat_body(const char *model, const char *system, const char *user,
                       double temperature, long long seed)
{
    json_t *messages = json_array();
    if (system) json_array_append_new(messages, json_pack("{s:s,s:s}", "role", "system",
                                                          "content", system));
    json_array_append_new(messages, json_pack("{s:s,s:s}", "role", "user", "content", user));
    json_t *req = json_pack("{s:s,s:o}", "model", model, "messages", messages);
    if (temperature >= 0) json_object_set_new(req, "temperature", json_real(temperature));
    if (seed >= 0) json_object_set_new(req, "seed", json_integer(seed));
    char *s = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    assert_non_null(s);
    return s;
}

/* Posts a chat request and returns choices[0].message.content (caller frees); asserts 200. */
static char *chat(const arb_sim_server *srv, const char *model, const char *system,
                  const char *user, double temperature, long long seed)
{
    char *body = chat_body(model, system, user, temperature, seed);
    http_reply r = http(srv, "POST", "/v1/chat/completions", body);
    free(body);
    assert_int_equal(r.status, 200);
    json_t *root = json_loads(r.body, 0, NULL);
    assert_non_null(root);
    const char *content = NULL;
    json_unpack(root, "{s:[{s:{s:s}}]}", "choices", "message", "content", &content);
    assert_non_null(content);
    char *copy = strdup(content);
    json_decref(root);
    free(r.body);
    return copy;
}

/* The user message of arbiter's templates: the two answers between delimiter lines. */
static char *user_prompt(const char *rules, const char *answer1, const char *answer2,
                         int variant)
{
    size_t n = strlen(rules) + strlen(answer1) + strlen(answer2) + 256;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n,
             "Question %d: which answer is better?\n[ANSWER 1 START]\n%s\n[ANSWER 1 END]\n"
             "[ANSWER 2 START]\n%s\n[ANSWER 2 END]\n%s",
             variant, answer1, answer2, rules);
    return s;
}

/* The position verdict of a reply in the simulator's two formats, 'E' when none. */
static char reply_verdict(const char *content, int options)
{
    size_t n = strlen(content);
    char v = 0;
    if (n == 1) v = content[0];
    else if (n >= 6 && !strncmp(content + n - 6, "\n[[", 3) && !strcmp(content + n - 2, "]]"))
        v = content[n - 3];
    return v >= 'A' && v < 'A' + options ? v : 'E';
}

/* ---- fixtures ---------------------------------------------------------------------------- */

#define GOOD "The capital of France is Paris."
#define GOOD2 "Paris is the capital city of France."
#define BAD "The capital of France is Berlin."
#define BAD2 "France has no capital."
#define MID "Probably Paris, though I am not sure."
#define ARABIC_BERLIN "برلين" /* Berlin in Arabic script */

#define RULES4 "Reply with [[A]], [[B]], [[C]] (both good) or [[D]] (both bad)."
#define RULES3 "Reply with [[A]], [[B]] or [[C]] for a tie."
#define RULES2 "Reply with [[A]] or [[B]]."

/* q1 serves the side-by-side answers; the others are pointwise references with a known
** truth (quality q: grade 1 + round(4q), correct iff q >= 0.5): "Berlin" in English (0.9) and
** in German (0.1), Arabic text (0.8), a reference equal to the answer BAD but in French (0.7),
** one without a language (0.3) and one without a quality. */
static const char items_jsonl[] =
    "{\"id\":\"q1\",\"question\":\"What is the capital of France?\"}\n"
    "{\"id\":\"p-en\",\"question\":\"Capital of Germany?\",\"reference\":\"Berlin\","
    "\"language\":\"en\",\"group\":\"g1\",\"quality\":0.9}\n"
    "{\"id\":\"p-de\",\"question\":\"Hauptstadt Deutschlands?\",\"reference\":\"Berlin\","
    "\"language\":\"de\",\"group\":\"g1\",\"quality\":0.1}\n"
    "{\"id\":\"p-ar\",\"question\":\"ما هي عاصمة ألمانيا؟\","
    "\"reference\":\"" ARABIC_BERLIN "\",\"language\":\"ar\",\"group\":\"g1\",\"quality\":0.8}\n"
    "{\"id\":\"p-fr\",\"question\":\"Capitale de la France ?\",\"reference\":\"  " BAD "  \","
    "\"language\":\"fr\",\"group\":\"g2\",\"quality\":0.7}\n"
    "{\"id\":\"p-none\",\"question\":\"Old capital?\",\"reference\":\"Bonn\",\"quality\":0.3}\n"
    "{\"id\":\"p-noq\",\"question\":\"Port city?\",\"reference\":\"Hamburg\","
    "\"language\":\"en\"}\n";
static const char answers_jsonl[] =
    "{\"item\":\"q1\",\"model\":\"good\",\"answer\":\"" GOOD "\",\"quality\":0.9}\n"
    "{\"item\":\"q1\",\"model\":\"good2\",\"answer\":\"" GOOD2 "\",\"quality\":0.8}\n"
    "{\"item\":\"q1\",\"model\":\"bad\",\"answer\":\"" BAD "\",\"quality\":0.1}\n"
    "{\"item\":\"q1\",\"model\":\"bad2\",\"answer\":\"" BAD2 "\",\"quality\":0.2}\n"
    "{\"item\":\"q1\",\"model\":\"mid\",\"answer\":\"" MID "\",\"quality\":0.5}\n"
    "{\"item\":\"q1\",\"model\":\"noq\",\"answer\":\"no quality field\"}\n";

typedef struct fixture {
    arb_dataset *ds;
    arb_sim_server *srv;
} fixture;

static arb_sim_judge judge(const char *spec)
{
    arb_sim_judge j;
    char *err = NULL;
    arb_status st = arb_sim_judge_parse(spec, &j, &err);
    if (st) fprintf(stderr, "%s\n", err ? err : "?");
    assert_int_equal(st, ARB_OK);
    assert_null(err);
    return j;
}

static arb_dataset *oracle(void)
{
    arb_dataset *ds = arb_dataset_create();
    assert_non_null(ds);
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "items.jsonl", items_jsonl,
                                                 sizeof items_jsonl - 1),
                     ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "answers.jsonl", answers_jsonl,
                                                   sizeof answers_jsonl - 1),
                     ARB_OK);
    return ds;
}

/* Starts a server with the given judge specs and the oracle; fail_rate and throttle_rate as
** given. */
static fixture start_throttled(const char *const *specs, size_t n, double fail_rate,
                               double throttle_rate)
{
    fixture f;
    f.ds = oracle();
    arb_sim_judge *judges = calloc(n, sizeof *judges);
    assert_non_null(judges);
    for (size_t i = 0; i < n; i++) judges[i] = judge(specs[i]);
    arb_sim_params p = arb_sim_default_params();
    p.seed = 42;
    p.judges = judges;
    p.n_judges = n;
    p.answers_oracle = f.ds;
    p.fail_rate = fail_rate;
    p.throttle_rate = throttle_rate;
    char *err = NULL;
    arb_status st = arb_sim_server_start(&p, &f.srv, &err);
    if (st) fprintf(stderr, "%s\n", err ? err : "?");
    assert_int_equal(st, ARB_OK);
    free(judges); /* the server keeps its own copy */
    assert_true(arb_sim_server_port(f.srv) > 0);
    return f;
}

static fixture start(const char *const *specs, size_t n, double fail_rate)
{
    return start_throttled(specs, n, fail_rate, 0);
}

static void finish(fixture *f)
{
    arb_sim_server_stop(f->srv);
    arb_dataset_destroy(f->ds);
}

/* ---- judge specs and parameters ---------------------------------------------------------- */

static void test_judge_parse_defaults(void **state)
{
    (void)state;
    arb_sim_judge j = judge("gpt-sim");
    assert_string_equal(j.model, "gpt-sim");
    assert_true(j.skill == 4.0);
    assert_true(j.position_bias == 0.0);
    assert_true(j.tie_propensity == 0.3);
    assert_true(j.bothbad_propensity == 0.5);
    assert_true(j.invalid_rate == 0.0);
    assert_true(j.latency_ms == 0.0);
    assert_true(j.conformity == 0.5);
    assert_true(j.noise == 0.0);
    assert_true(j.strict == 0.0);
    assert_int_equal(j.n_languages, 0);
    j = judge("org/model-1:");
    assert_string_equal(j.model, "org/model-1");
    assert_true(j.skill == 4.0);
}

static void test_judge_parse_all_keys(void **state)
{
    (void)state;
    arb_sim_judge j =
        judge("m:skill=2,bias=-0.3,tie=0.2,bothbad=0.75,invalid=0.02,latency=5,conformity=0.25");
    assert_string_equal(j.model, "m");
    assert_true(j.skill == 2.0);
    assert_true(j.position_bias == -0.3);
    assert_true(j.tie_propensity == 0.2);
    assert_true(j.bothbad_propensity == 0.75);
    assert_true(j.invalid_rate == 0.02);
    assert_true(j.latency_ms == 5.0);
    assert_true(j.conformity == 0.25);
    /* The ends of the range are allowed. */
    assert_true(judge("m:conformity=0").conformity == 0.0);
    assert_true(judge("m:conformity=1").conformity == 1.0);
}

static void expect_parse_error(const char *spec, const char *needle)
{
    arb_sim_judge j;
    memset(&j, 0x5a, sizeof j);
    char *err = NULL;
    assert_int_equal(arb_sim_judge_parse(spec, &j, &err), ARB_INVALID);
    assert_non_null(err);
    if (!strstr(err, needle)) fprintf(stderr, "message: %s\n", err);
    assert_non_null(strstr(err, needle));
    arb_free(err);
    assert_int_equal((unsigned char)j.model[0], 0x5a); /* *out untouched on error */
}

static void test_judge_parse_errors(void **state)
{
    (void)state;
    expect_parse_error("", "model name");
    expect_parse_error(":skill=1", "model name");
    expect_parse_error("m:speed=1", "unknown key \"speed\"");
    expect_parse_error("m:skill=abc", "skill must be a number, got \"abc\"");
    expect_parse_error("m:skill=", "skill must be a number");
    expect_parse_error("m:skill=1x", "skill must be a number");
    expect_parse_error("m:bias=nan", "bias must be a number");
    expect_parse_error("m:skill", "must be key=value");
    expect_parse_error("m:skill=1,", "empty setting");
    expect_parse_error("m:invalid=1.5", "invalid must be");
    expect_parse_error("m:bothbad=-0.1", "bothbad must be");
    expect_parse_error("m:skill=-1", "skill must be");
    expect_parse_error("m:latency=-5", "latency must be");
    expect_parse_error("m:conformity=1.5", "conformity must be a finite number in [0, 1], got 1.5");
    expect_parse_error("m:conformity=-0.1", "conformity must be");
    expect_parse_error("m:conformity=x", "conformity must be a number");
    expect_parse_error("m:think=maybe", "think must be none, reasoning_content, reasoning, tag, "
                                        "open or cut, got \"maybe\"");
    expect_parse_error("m:think=", "think must be none");
    expect_parse_error("m:think=tag,", "empty setting after the last ','");
    {
        arb_sim_judge j;
        assert_int_equal(arb_sim_judge_parse("m:think=open,bias=1", &j, NULL), ARB_OK);
        assert_int_equal(j.think, ARB_SIM_THINK_OPEN);
        assert_true(j.position_bias == 1.0);
        assert_int_equal(arb_sim_judge_parse("m:think=reasoning_content", &j, NULL), ARB_OK);
        assert_int_equal(j.think, ARB_SIM_THINK_REASONING_CONTENT);
        assert_int_equal(arb_sim_judge_parse("m", &j, NULL), ARB_OK);
        assert_int_equal(j.think, ARB_SIM_THINK_NONE);
    }
    expect_parse_error("m:speed=1", "(known: skill, bias, tie, bothbad, invalid, latency, "
                                    "conformity, noise, noise.<lang>, strict, strict.<lang>, "
                                    "persona.<identity>, persona_sd, think, logprobs)");
    char long_name[200];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    expect_parse_error(long_name, "longer than 127");
    char *err = NULL;
    assert_int_equal(arb_sim_judge_parse(NULL, NULL, &err), ARB_INVALID);
    arb_free(err);
}

static void test_default_params(void **state)
{
    (void)state;
    arb_sim_params p = arb_sim_default_params();
    assert_string_equal(p.bind_address, "127.0.0.1");
    assert_int_equal(p.port, 0);
    assert_int_equal(p.seed, 1);
    assert_int_equal(p.instant, 0);
    assert_null(p.judges);
    assert_int_equal(p.n_judges, 0);
    assert_null(p.answers_oracle);
    assert_true(p.fail_rate == 0.0);
    arb_sim_server_stop(NULL); /* accepts NULL */
    assert_int_equal(arb_sim_server_requests(NULL), 0);
}

static void expect_start_error(const arb_sim_params *p, arb_status want, const char *needle)
{
    arb_sim_server *srv = (arb_sim_server *)(uintptr_t)1; /* must be reset to NULL */
    char *err = NULL;
    assert_int_equal(arb_sim_server_start(p, &srv, &err), want);
    assert_null(srv);
    assert_non_null(err);
    if (!strstr(err, needle)) fprintf(stderr, "message: %s\n", err);
    assert_non_null(strstr(err, needle));
    arb_free(err);
}

static void test_start_errors(void **state)
{
    (void)state;
    arb_sim_params p = arb_sim_default_params();
    expect_start_error(&p, ARB_INVALID, "no judges");
    arb_sim_judge js[2] = {judge("a"), judge("a:skill=1")};
    p.judges = js;
    p.n_judges = 2;
    expect_start_error(&p, ARB_INVALID, "given twice");
    p.n_judges = 1;
    p.fail_rate = 1.5;
    expect_start_error(&p, ARB_INVALID, "fail_rate");
    p.fail_rate = 0;
    js[0].invalid_rate = 2;
    expect_start_error(&p, ARB_INVALID, "invalid must be");
    js[0].invalid_rate = 0;
    js[0].conformity = 2;
    expect_start_error(&p, ARB_INVALID, "conformity must be");
    js[0].conformity = 0.5;

    /* An oracle quality outside [0, 1] names its line. */
    arb_dataset *ds = arb_dataset_create();
    static const char bad_answers[] =
        "{\"item\":\"q1\",\"model\":\"x\",\"answer\":\"a\",\"quality\":0.5}\n"
        "{\"item\":\"q1\",\"model\":\"y\",\"answer\":\"b\",\"quality\":1.5}\n";
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "items.jsonl", items_jsonl,
                                                 sizeof items_jsonl - 1),
                     ARB_OK);
    assert_int_equal(arb_dataset_add_answers_jsonl(ds, "answers.jsonl", bad_answers,
                                                   sizeof bad_answers - 1),
                     ARB_OK);
    p.answers_oracle = ds;
    expect_start_error(&p, ARB_INVALID, "answers.jsonl:2: field \"quality\"");
    arb_dataset_destroy(ds);
    p.answers_oracle = NULL;

    /* A port already taken gives ARB_IO and says why. */
    arb_sim_server *first = NULL;
    assert_int_equal(arb_sim_server_start(&p, &first, NULL), ARB_OK);
    p.port = arb_sim_server_port(first);
    expect_start_error(&p, ARB_IO, "cannot listen on 127.0.0.1");
    arb_sim_server_stop(first);
}

/* ---- HTTP surface ------------------------------------------------------------------------ */

static void test_models_endpoint(void **state)
{
    (void)state;
    const char *specs[] = {"judge-one", "judge-two:bias=1"};
    fixture f = start(specs, 2, 0);
    http_reply r = http(f.srv, "GET", "/v1/models", NULL);
    assert_int_equal(r.status, 200);
    assert_true(r.simulator_header);
    json_t *root = json_loads(r.body, 0, NULL);
    assert_non_null(root);
    json_t *data = json_object_get(root, "data");
    assert_int_equal(json_array_size(data), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(data, 0), "id")),
                        "judge-one");
    assert_string_equal(json_string_value(json_object_get(json_array_get(data, 1), "id")),
                        "judge-two");
    assert_string_equal(json_string_value(json_object_get(json_array_get(data, 1), "owned_by")),
                        "arbiter-simulator");
    json_decref(root);
    free(r.body);
    r = http(f.srv, "GET", "/models", NULL);
    assert_int_equal(r.status, 200);
    free(r.body);
    assert_int_equal(arb_sim_server_requests(f.srv), 2);
    finish(&f);
}

/* Asserts an OpenAI-style error body of the given status and type. */
static void expect_error(const arb_sim_server *srv, const char *method, const char *path,
                         const char *body, long status, const char *type)
{
    http_reply r = http(srv, method, path, body);
    assert_int_equal(r.status, status);
    assert_true(r.simulator_header);
    json_t *root = json_loads(r.body, 0, NULL);
    assert_non_null(root);
    const char *message = NULL, *got_type = NULL;
    assert_int_equal(json_unpack(root, "{s:{s:s,s:s}}", "error", "message", &message, "type",
                                 &got_type),
                     0);
    assert_true(strlen(message) > 0);
    assert_string_equal(got_type, type);
    json_decref(root);
    free(r.body);
}

static void test_http_errors(void **state)
{
    (void)state;
    const char *specs[] = {"j"};
    fixture f = start(specs, 1, 0);
    const char *e = "invalid_request_error";
    expect_error(f.srv, "POST", "/v1/chat/completions", "", 400, e);
    expect_error(f.srv, "POST", "/v1/chat/completions", "{\"model\":", 400, e);
    expect_error(f.srv, "POST", "/v1/chat/completions", "[1,2]", 400, e);
    expect_error(f.srv, "POST", "/v1/chat/completions", "{\"messages\":[]}", 400, e);
    expect_error(f.srv, "POST", "/v1/chat/completions", "{\"model\":\"j\",\"messages\":[]}", 400,
                 e);
    expect_error(f.srv, "POST", "/v1/chat/completions",
                 "{\"model\":\"j\",\"messages\":[{\"role\":\"user\",\"content\":7}]}", 400, e);
    expect_error(f.srv, "POST", "/v1/chat/completions",
                 "{\"model\":\"j\",\"messages\":[{\"content\":\"hi\"}]}", 400, e);
    expect_error(f.srv, "POST", "/v1/chat/completions",
                 "{\"model\":\"j\",\"stream\":true,\"messages\":[{\"role\":\"user\","
                 "\"content\":\"hi\"}]}",
                 400, e);
    expect_error(f.srv, "POST", "/v1/chat/completions",
                 "{\"model\":\"j\",\"temperature\":\"hot\",\"messages\":[{\"role\":\"user\","
                 "\"content\":\"hi\"}]}",
                 400, e);
    expect_error(f.srv, "POST", "/v1/chat/completions",
                 "{\"model\":\"nope\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", 404,
                 e);
    expect_error(f.srv, "GET", "/v1/chat/completions", NULL, 405, e);
    expect_error(f.srv, "POST", "/v1/models", "{}", 405, e);
    expect_error(f.srv, "GET", "/v1/embeddings", NULL, 404, e);
    expect_error(f.srv, "GET", "/", NULL, 404, e);
    assert_int_equal(arb_sim_server_requests(f.srv), 14);
    finish(&f);
}

static void test_completion_shape(void **state)
{
    (void)state;
    const char *specs[] = {"j"};
    fixture f = start(specs, 1, 0);
    /* 40 code points of user text ("é" is one code point, two bytes) -> 10 prompt tokens. */
    char *body = chat_body("j", NULL, "0123456789012345678901234567890123456\xc3\xa9" "89", -1, -1);
    http_reply r = http(f.srv, "POST", "/chat/completions", body);
    free(body);
    assert_int_equal(r.status, 200);
    assert_true(r.simulator_header);
    json_t *root = json_loads(r.body, 0, NULL);
    assert_non_null(root);
    const char *id, *object, *model, *fingerprint, *role, *content, *finish_reason;
    json_int_t created, pt, ct, tt;
    assert_int_equal(json_unpack(root,
                                 "{s:s, s:s, s:I, s:s, s:s, s:[{s:{s:s, s:s}, s:s}],"
                                 " s:{s:I, s:I, s:I}}",
                                 "id", &id, "object", &object, "created", &created, "model",
                                 &model, "system_fingerprint", &fingerprint, "choices",
                                 "message", "role", &role, "content", &content,
                                 "finish_reason", &finish_reason, "usage", "prompt_tokens", &pt,
                                 "completion_tokens", &ct, "total_tokens", &tt),
                     0);
    assert_string_equal(object, "chat.completion");
    assert_string_equal(model, "j");
    assert_string_equal(fingerprint, "arbiter-simulator");
    assert_string_equal(role, "assistant");
    assert_string_equal(finish_reason, "stop");
    assert_true(created > 1700000000);
    assert_int_equal(pt, 10);
    assert_int_equal(ct, 1); /* a bare letter: no "[[" in the prompt */
    assert_int_equal(tt, 11);
    assert_true(strlen(content) == 1);
    json_decref(root);
    free(r.body);
    finish(&f);
}

/* ---- the judge model --------------------------------------------------------------------- */

static void test_option_modes(void **state)
{
    (void)state;
    /* skill 0 and a huge tie band: the verdict shows the mode, not the answers. */
    const char *specs[] = {"tier:skill=0,tie=100,bothbad=1"};
    fixture f = start(specs, 1, 0);
    char *u, *c;
    /* 4-option, bracketed: two good answers -> C, two bad -> D, good vs mid -> A or B. */
    u = user_prompt(RULES4, GOOD, GOOD2, 0);
    c = chat(f.srv, "tier", NULL, u, 0, -1);
    assert_true(strlen(c) > 6);
    assert_string_equal(c + strlen(c) - 6, "\n[[C]]");
    free(c);
    free(u);
    u = user_prompt(RULES4, BAD, BAD2, 0);
    c = chat(f.srv, "tier", NULL, u, 0, -1);
    assert_string_equal(c + strlen(c) - 6, "\n[[D]]");
    free(c);
    free(u);
    u = user_prompt(RULES4, GOOD, MID, 0);
    c = chat(f.srv, "tier", NULL, u, 0, -1);
    assert_true(reply_verdict(c, 2) != 'E');
    free(c);
    free(u);
    /* The rules may be in the system message. */
    u = user_prompt("", GOOD, GOOD2, 0);
    c = chat(f.srv, "tier", RULES4, u, 0, -1);
    assert_string_equal(c + strlen(c) - 6, "\n[[C]]");
    free(c);
    /* 3-option: any pair is a tie within the band, even two bad answers. */
    c = chat(f.srv, "tier", RULES3, u, 0, -1);
    assert_string_equal(c + strlen(c) - 6, "\n[[C]]");
    free(c);
    free(u);
    u = user_prompt(RULES3, BAD, BAD2, 0);
    c = chat(f.srv, "tier", NULL, u, 0, -1);
    assert_string_equal(c + strlen(c) - 6, "\n[[C]]");
    free(c);
    free(u);
    /* 2-option: never C or D. */
    for (int i = 0; i < 10; i++) {
        u = user_prompt(RULES2, GOOD, GOOD2, i);
        c = chat(f.srv, "tier", NULL, u, 0, -1);
        assert_true(reply_verdict(c, 2) == 'A' || reply_verdict(c, 2) == 'B');
        free(c);
        free(u);
    }
    /* Bare-letter formats, detected from "C or D" / "B or C". */
    u = user_prompt("Answer with one letter: A, B, C or D.", GOOD, GOOD2, 0);
    c = chat(f.srv, "tier", NULL, u, 0, -1);
    assert_string_equal(c, "C");
    free(c);
    free(u);
    u = user_prompt("Answer with one letter: A, B or C.", BAD, BAD2, 0);
    c = chat(f.srv, "tier", NULL, u, 0, -1);
    assert_string_equal(c, "C");
    free(c);
    free(u);
    u = user_prompt("Answer with one letter: A or B.", GOOD, GOOD2, 0);
    c = chat(f.srv, "tier", NULL, u, 0, -1);
    assert_true(!strcmp(c, "A") || !strcmp(c, "B"));
    free(c);
    free(u);
    /* No delimiters: q = 0.5 for both, neither good nor bad, so never C or D in 4-option. */
    for (int i = 0; i < 10; i++) {
        char text[128];
        snprintf(text, sizeof text, "Compare %d. " RULES4, i);
        c = chat(f.srv, "tier", NULL, text, 0, -1);
        char v = reply_verdict(c, 4);
        assert_true(v == 'A' || v == 'B');
        free(c);
    }
    finish(&f);
}

static void test_determinism(void **state)
{
    (void)state;
    const char *specs[] = {"coin:skill=0"};
    fixture f = start(specs, 1, 0);
    char *u = user_prompt(RULES2, GOOD, GOOD2, 0);
    /* Temperature 0, or absent: identical requests, identical replies. */
    char *first = chat(f.srv, "coin", NULL, u, 0, -1);
    char *first_absent = chat(f.srv, "coin", NULL, u, -1, -1);
    for (int i = 0; i < 5; i++) {
        char *c = chat(f.srv, "coin", NULL, u, 0, -1);
        assert_string_equal(c, first);
        free(c);
        c = chat(f.srv, "coin", NULL, u, -1, -1);
        assert_string_equal(c, first_absent);
        free(c);
    }
    /* Temperature 1 with a seed: still identical. */
    char *seeded = chat(f.srv, "coin", NULL, u, 1, 7);
    for (int i = 0; i < 5; i++) {
        char *c = chat(f.srv, "coin", NULL, u, 1, 7);
        assert_string_equal(c, seeded);
        free(c);
    }
    /* Temperature 1 without a seed: a fair coin over 20 sends shows both sides
    ** (all equal has probability 2 * 0.5^20, about 2e-6). */
    int count_a = 0;
    for (int i = 0; i < 20; i++) {
        char *c = chat(f.srv, "coin", NULL, u, 1, -1);
        count_a += reply_verdict(c, 2) == 'A';
        free(c);
    }
    assert_true(count_a > 0 && count_a < 20);
    free(first);
    free(first_absent);
    free(seeded);
    free(u);
    finish(&f);

    /* A restarted server with the same seed answers the same (not the counter of the first). */
    f = start(specs, 1, 0);
    u = user_prompt(RULES2, GOOD, GOOD2, 0);
    char *again = chat(f.srv, "coin", NULL, u, 1, -1);
    finish(&f);
    f = start(specs, 1, 0);
    char *again2 = chat(f.srv, "coin", NULL, u, 1, -1);
    assert_string_equal(again, again2);
    free(again);
    free(again2);
    free(u);
    finish(&f);
}

/* Counts position verdicts over n distinct requests (distinct seeds) of answer1 vs answer2. */
static void count_verdicts(const arb_sim_server *srv, const char *model, const char *rules,
                           const char *answer1, const char *answer2, int options, int n,
                           int counts[5])
{
    char *u = user_prompt(rules, answer1, answer2, 0);
    memset(counts, 0, 5 * sizeof counts[0]);
    for (int i = 0; i < n; i++) {
        char *c = chat(srv, model, NULL, u, 0, 1000 + i);
        counts[reply_verdict(c, options) - 'A']++;
        free(c);
    }
    free(u);
}

static void test_quality_drives_verdict(void **state)
{
    (void)state;
    /* skill 4: z = 4 * (0.9 - 0.1) + ε = 3.2 + ε, so P(good wins) = Φ(3.2) ≈ 0.9993; we ask
    ** for > 90% of 200 in either order. */
    const char *specs[] = {"fair:skill=4,bias=0"};
    fixture f = start(specs, 1, 0);
    int counts[5];
    count_verdicts(f.srv, "fair", RULES4, GOOD, BAD, 4, 200, counts);
    assert_true(counts[0] > 180);
    count_verdicts(f.srv, "fair", RULES4, BAD, GOOD, 4, 200, counts);
    assert_true(counts[1] > 180);
    /* Leading and trailing white space does not hide an answer from the oracle. */
    count_verdicts(f.srv, "fair", RULES2, "  " BAD "\n", "\n" GOOD "  ", 2, 50, counts);
    assert_true(counts[1] > 45);
    finish(&f);
}

static void test_position_bias(void **state)
{
    (void)state;
    /* Equal answers (both q = 0.5): z = β + ε. β = 2: P(A) = Φ(2) ≈ 0.977; β = -2 mirrors it.
    ** An unbiased judge sits near 50% (sd 3.5 points over 200). */
    const char *specs[] = {"primacy:bias=2", "recency:bias=-2", "fair:bias=0"};
    fixture f = start(specs, 3, 0);
    int counts[5];
    count_verdicts(f.srv, "primacy", RULES2, MID, MID, 2, 200, counts);
    assert_int_equal(counts[0] + counts[1], 200);
    assert_true(counts[0] > 170);
    assert_true(counts[0] > 5 * counts[1]);
    count_verdicts(f.srv, "recency", RULES2, MID, MID, 2, 200, counts);
    assert_true(counts[1] > 170);
    count_verdicts(f.srv, "fair", RULES2, MID, MID, 2, 200, counts);
    assert_in_range(counts[0], 70, 130);
    finish(&f);
}

static void test_ties_and_both_bad(void **state)
{
    (void)state;
    /* Two good answers (0.9, 0.8), skill 4, tie band 1: z = 0.4 + ε, P(|z| < 1) =
    ** Φ(0.6) − Φ(−1.4) ≈ 0.645, so about 129 C of 200 (sd 7). Two bad answers (0.1, 0.2) with
    ** bothbad 0.5: about 100 D (sd 7). Tolerance ±30 (over 4 sd) each. */
    const char *specs[] = {"j:tie=1,bothbad=0.5"};
    fixture f = start(specs, 1, 0);
    int counts[5];
    count_verdicts(f.srv, "j", RULES4, GOOD, GOOD2, 4, 200, counts);
    assert_int_equal(counts[3], 0);
    assert_in_range(counts[2], 99, 159);
    count_verdicts(f.srv, "j", RULES4, BAD, BAD2, 4, 200, counts);
    assert_int_equal(counts[2], 0);
    assert_in_range(counts[3], 70, 130);
    finish(&f);
}

static void test_invalid_rate(void **state)
{
    (void)state;
    /* invalid 0.5: half of 400 distinct requests (sd 10) have no verdict, ±40 accepted; the
    ** four kinds of invalid reply each appear (about 50 each). */
    const char *specs[] = {"flaky:invalid=0.5"};
    fixture f = start(specs, 1, 0);
    char *u = user_prompt(RULES4, GOOD, BAD, 0);
    int invalid = 0, empty = 0, refusal = 0, out_of_mode = 0, no_verdict = 0;
    for (int i = 0; i < 400; i++) {
        char *c = chat(f.srv, "flaky", NULL, u, 0, i);
        if (reply_verdict(c, 4) == 'E') {
            invalid++;
            if (!*c) empty++;
            else if (strstr(c, "sorry")) refusal++;
            else if (strstr(c, "[[Z]]")) out_of_mode++;
            else if (!strstr(c, "[[")) no_verdict++;
        }
        free(c);
    }
    assert_in_range(invalid, 160, 240);
    assert_int_equal(empty + refusal + out_of_mode + no_verdict, invalid);
    assert_true(empty >= 20 && refusal >= 20 && out_of_mode >= 20 && no_verdict >= 20);
    free(u);
    /* In 2-option mode the out-of-mode letter is C. */
    u = user_prompt("Answer with one letter: A or B.", GOOD, BAD, 0);
    int letters_c = 0;
    for (int i = 0; i < 100; i++) {
        char *c = chat(f.srv, "flaky", NULL, u, 0, i);
        letters_c += !strcmp(c, "C");
        free(c);
    }
    assert_true(letters_c > 0);
    free(u);
    finish(&f);
}

static void test_fail_rate(void **state)
{
    (void)state;
    const char *specs[] = {"j"};
    fixture f = start(specs, 1, 0.5);
    char *body = chat_body("j", NULL, "hello", 0, -1);
    int failed = 0;
    for (int i = 0; i < 100; i++) {
        http_reply r = http(f.srv, "POST", "/v1/chat/completions", body);
        assert_true(r.status == 200 || r.status == 500);
        if (r.status == 500) {
            failed++;
            assert_non_null(strstr(r.body, "\"server_error\""));
        }
        free(r.body);
    }
    assert_in_range(failed, 30, 70); /* sd 5 */
    assert_int_equal(arb_sim_server_requests(f.srv), 100);
    free(body);
    finish(&f);
}

/* throttle_rate: that share answered 429 rate_limit_exceeded (all of them at 1). */
static void test_throttle_rate(void **state)
{
    (void)state;
    const char *specs[] = {"j"};
    char *body = chat_body("j", NULL, "hello", 0, -1);
    const double rates[] = {1.0, 0.5};
    for (int k = 0; k < 2; k++) {
        fixture f = start_throttled(specs, 1, 0, rates[k]);
        int throttled = 0;
        for (int i = 0; i < 100; i++) {
            http_reply r = http(f.srv, "POST", "/v1/chat/completions", body);
            assert_true(r.status == 200 || r.status == 429);
            if (r.status == 429) {
                throttled++;
                assert_non_null(strstr(r.body, "\"rate_limit_exceeded\""));
            }
            free(r.body);
        }
        if (k == 0) assert_int_equal(throttled, 100);
        else assert_in_range(throttled, 30, 70); /* sd 5 */
        finish(&f);
    }
    free(body);
    arb_sim_params p = arb_sim_default_params();
    assert_true(p.throttle_rate == 0.0);
    arb_sim_judge js = judge("a");
    p.judges = &js;
    p.n_judges = 1;
    p.throttle_rate = -0.1;
    expect_start_error(&p, ARB_INVALID, "throttle_rate must be in [0, 1]");
}

typedef struct timed_call {
    const arb_sim_server *srv;
    int index;
} timed_call;

static void *timed_call_run(void *ud)
{
    timed_call *t = ud;
    char *c = chat(t->srv, "slow", NULL, "Reply with [[A]] or [[B]].", 0, t->index);
    free(c);
    return NULL;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void test_latency_concurrent(void **state)
{
    (void)state;
    /* latency 100: each reply waits 50..150 ms. Eight requests in parallel must overlap:
    ** one after another they would take at least 400 ms. */
    const char *specs[] = {"slow:latency=100"};
    fixture f = start(specs, 1, 0);
    double t0 = now_ms();
    char *c = chat(f.srv, "slow", NULL, "Reply with [[A]] or [[B]].", 0, 99);
    assert_true(now_ms() - t0 >= 50.0 - 1.0);
    free(c);
    pthread_t threads[8];
    timed_call calls[8];
    t0 = now_ms();
    for (int i = 0; i < 8; i++) {
        calls[i].srv = f.srv;
        calls[i].index = i;
        assert_int_equal(pthread_create(&threads[i], NULL, timed_call_run, &calls[i]), 0);
    }
    for (int i = 0; i < 8; i++) pthread_join(threads[i], NULL);
    double elapsed = now_ms() - t0;
    assert_true(elapsed >= 50.0 - 1.0);
    /* Under valgrind (make valgrind sets ARB_TIME_SCALE) everything runs ~20x slower. */
    const char *scale_env = getenv("ARB_TIME_SCALE");
    double scale = scale_env ? atof(scale_env) : 1.0;
    assert_true(elapsed < 350.0 * (scale >= 1.0 ? scale : 1.0));
    finish(&f);
}

static void test_instant(void **state)
{
    (void)state;
    arb_sim_params p = arb_sim_default_params();
    p.instant = 1;
    arb_sim_server *srv = NULL;
    assert_int_equal(arb_sim_server_start(&p, &srv, NULL), ARB_OK);
    char *c = chat(srv, "anything", NULL, "[ANSWER 1 START]\nx\n[ANSWER 1 END]", 0, -1);
    assert_string_equal(c, "[[A]]");
    free(c);
    /* A model name with an escape takes the full parser and is echoed all the same. */
    http_reply r = http(srv, "POST", "/v1/chat/completions",
                        "{\"messages\":[{\"role\":\"model\",\"content\":\"\\\"model\\\": x\"}],"
                        "\"model\" : \"a\\\"b\"}");
    assert_int_equal(r.status, 200);
    json_t *root = json_loads(r.body, 0, NULL);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "model")), "a\"b");
    json_decref(root);
    free(r.body);
    r = http(srv, "POST", "/v1/chat/completions", " {\"model\": \"m1\", \"messages\": []}");
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"model\":\"m1\""));
    assert_non_null(strstr(r.body, "\"content\":\"[[A]]\""));
    assert_non_null(strstr(r.body, "\"system_fingerprint\":\"arbiter-simulator\""));
    free(r.body);
    r = http(srv, "GET", "/v1/models", NULL);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"data\":[]"));
    free(r.body);
    expect_error(srv, "POST", "/v1/chat/completions", "{", 400, "invalid_request_error");
    assert_int_equal(arb_sim_server_requests(srv), 5);
    arb_sim_server_stop(srv);
}

/* ---- debate and discussion roles (METHODS §2.5, §7) -------------------------------------- */

/* Box–Muller with 53-bit uniforms gives |ε| <= sqrt(-2 ln 2^-53) = sqrt(106 ln 2) ≈ 8.57. So a
** judge with skill 20 on GOOD (0.9) vs BAD (0.1) has z = 20 * 0.8 + ε >= 16 - 8.57 > 0: its own
** verdict is A on every request (4-option too: q2 < 0.6 rules out C, q1 >= 0.4 rules out D),
** and B with the answers swapped. The role tests below lean on this certainty. */
#define STRONG "skill=20"

#define SOFT_TASK "Say whether you agree with agent 1, and why."
#define HARD_TASK "You must disagree with agent 1; say why."
#define JUDGE_TASK "Read both agents and give the final verdict."
#define DISCUSS                                                                                \
    "Decide whether to change your preference. End with a last line that holds only 1 or 2."
#define INITIAL(r, body)                                                                       \
    "[INITIAL REVIEW BY REVIEWER " r " START]\n" body "\n[INITIAL REVIEW BY REVIEWER " r " END]\n"
#define TURN(n, r, body)                                                                       \
    "[TURN " n " BY REVIEWER " r " START]\n" body "\n[TURN " n " BY REVIEWER " r " END]\n"

/* Concatenates the strings up to a NULL (caller frees). */
static char *concat(const char *first, ...)
{
    va_list ap;
    size_t n = 0;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *)) n += strlen(s);
    va_end(ap);
    char *out = malloc(n + 1);
    assert_non_null(out);
    out[0] = '\0';
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *)) strcat(out, s);
    va_end(ap);
    return out;
}

/* A debate turn's user message: the pair under the rules, agent 1's review and (agent2 not
** NULL: the judge agent's turn) agent 2's between their marker lines, then the task. */
static char *debate_prompt(const char *rules, const char *answer1, const char *answer2,
                           const char *agent1, const char *agent2, const char *task)
{
    char *pair = user_prompt(rules, answer1, answer2, 0);
    char *s = concat(pair, "\n[AGENT 1 REVIEW START]\n", agent1, "\n[AGENT 1 REVIEW END]\n",
                     agent2 ? "[AGENT 2 REVIEW START]\n" : "", agent2 ? agent2 : "",
                     agent2 ? "\n[AGENT 2 REVIEW END]\n" : "", task, (const char *)NULL);
    free(pair);
    return s;
}

/* A discussion turn's user message: the pair, the statements so far, the task. */
static char *discussion_prompt(const char *answer1, const char *answer2, const char *statements)
{
    char *pair = user_prompt("", answer1, answer2, 0);
    char *s = concat(pair, "\n", statements, DISCUSS, (const char *)NULL);
    free(pair);
    return s;
}

/* chat() for the roles: also asserts that the reply quotes no marker line. */
static char *role_chat(const arb_sim_server *srv, const char *model, const char *system,
                       const char *user, long long seed)
{
    char *c = chat(srv, model, system, user, 0, seed);
    assert_null(strstr(c, "REVIEW START]"));
    assert_null(strstr(c, "REVIEW END]"));
    assert_null(strstr(c, "[TURN "));
    return c;
}

/* Asserts that over seeds 0..n-1 the reply has the verdict want (mode options) and contains
** the phrase. */
static void expect_debate(const arb_sim_server *srv, const char *model, const char *system,
                          const char *user, int options, char want, const char *phrase, int n)
{
    for (int seed = 0; seed < n; seed++) {
        char *c = role_chat(srv, model, system, user, seed);
        if (reply_verdict(c, options) != want || !strstr(c, phrase))
            fprintf(stderr, "want %c and \"%s\", got: %s\n", want, phrase, c);
        assert_int_equal(reply_verdict(c, options), want);
        assert_non_null(strstr(c, phrase));
        free(c);
    }
}

/* The verdict of a discussion reply: its second and last line "1" or "2"; 0 otherwise. */
static int reply_number(const char *c)
{
    const char *nl = strchr(c, '\n');
    if (!nl || strchr(nl + 1, '\n')) return 0;
    return !strcmp(nl + 1, "1") ? 1 : !strcmp(nl + 1, "2") ? 2 : 0;
}

/* As expect_debate for a discussion reviewer: the numbered verdict want. */
static void expect_review(const arb_sim_server *srv, const char *model, const char *system,
                          const char *user, int want, const char *phrase, int n)
{
    for (int seed = 0; seed < n; seed++) {
        char *c = role_chat(srv, model, system, user, seed);
        if (reply_number(c) != want || !strstr(c, phrase))
            fprintf(stderr, "want %d and \"%s\", got: %s\n", want, phrase, c);
        assert_int_equal(reply_number(c), want);
        assert_non_null(strstr(c, "Simulated review: "));
        assert_non_null(strstr(c, phrase));
        free(c);
    }
}

static void test_debate_soft_agent2(void **state)
{
    (void)state;
    const char *specs[] = {"yield:" STRONG ",conformity=1", "hold:" STRONG ",conformity=0",
                           "half:" STRONG};
    fixture f = start(specs, 3, 0);
    /* Agent 1 said B; the judge's own verdict is A for sure (see STRONG). conformity 1: u5 < 1
    ** always, so agent 2 repeats B; conformity 0: u5 < 0 never, so it keeps A. */
    char *u = debate_prompt(RULES4, GOOD, BAD, "Agent 1 finds the second answer better.\n[[B]]",
                            NULL, SOFT_TASK);
    expect_debate(f.srv, "yield", NULL, u, 4, 'B', "I agree with the first reviewer", 20);
    expect_debate(f.srv, "hold", NULL, u, 4, 'A', "I disagree with the first reviewer", 20);
    /* conformity 0.5: B exactly when u5 < 0.5, so about 100 B of 200 (sd 7); ±30 accepted. */
    int b = 0;
    for (int seed = 0; seed < 200; seed++) {
        char *c = role_chat(f.srv, "half", NULL, u, seed);
        char v = reply_verdict(c, 4);
        assert_true(v == 'A' || v == 'B');
        b += v == 'B';
        free(c);
    }
    assert_in_range(b, 70, 130);
    free(u);
    /* Agent 1 said A, the judge thinks A: it agrees on its own account. */
    u = debate_prompt(RULES4, GOOD, BAD, "[[A]]", NULL, SOFT_TASK);
    expect_debate(f.srv, "hold", NULL, u, 4, 'A', "I agree with the first reviewer: ", 5);
    free(u);
    finish(&f);
}

static void test_debate_agent1_verdict(void **state)
{
    (void)state;
    /* conformity 1: agent 2 repeats agent 1's verdict whenever there is one, and otherwise
    ** gives its own, A (see STRONG). So the reply shows what was read from the agent-1 block. */
    const char *specs[] = {"yield:" STRONG ",conformity=1", "hold:" STRONG ",conformity=0"};
    fixture f = start(specs, 2, 0);
    struct {
        const char *rules, *agent1;
        int options;
        char want;
    } const cases[] = {
        {RULES4, "lower case counts\n[[b]]", 4, 'B'},
        {RULES4, "First [[B]], but on reflection both are good: [[C]]", 4, 'C'},
        {RULES4, "[[B]] or rather [[Z]]", 4, 'A'},   /* the last bracket is out of mode: none */
        {RULES4, "No bracketed verdict.\nB", 4, 'A'}, /* only brackets count */
        {RULES3, "[[D]]", 3, 'A'},                    /* D is not a 3-option verdict */
        /* A quoted "[[D]]" neither makes the mode 4-option nor counts: none, so A. */
        {RULES2, "Both are bad.\n[[D]]", 2, 'A'},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *u = debate_prompt(cases[i].rules, GOOD, BAD, cases[i].agent1, NULL, SOFT_TASK);
        expect_debate(f.srv, "yield", NULL, u, cases[i].options, cases[i].want,
                      "Simulated review: ", 3);
        free(u);
    }
    char *u = debate_prompt(RULES4, GOOD, BAD, "[[Z]]", NULL, SOFT_TASK);
    expect_debate(f.srv, "yield", NULL, u, 4, 'A', "the first reviewer gave no clear verdict", 3);
    free(u);
    /* "must disagree" quoted from agent 1 is not an instruction: still soft, and with
    ** conformity 0 the judge's A equals agent 1's A, so it agrees (hard would say B). */
    u = debate_prompt(RULES4, GOOD, BAD, "I must disagree with the premise.\n[[A]]", NULL,
                      SOFT_TASK);
    expect_debate(f.srv, "hold", NULL, u, 4, 'A', "I agree with the first reviewer", 5);
    free(u);
    finish(&f);
}

static void test_debate_hard_agent2(void **state)
{
    (void)state;
    /* Hard: never agent 1's verdict, whatever the conformity (all 1 here). The own verdicts:
    ** strong: A on GOOD vs BAD (STRONG);
    ** good4: skill 0, GOOD (0.9) vs GOOD2 (0.8), |z| = |ε| <= 8.57 < tie 100: C;
    ** bad4: BAD (0.1) vs BAD2 (0.2), tie 0 (|z| < 0 never), u3 < bothbad 1 always: D;
    ** tie3p / tie3n: 3-option, z = ±20 + ε, so 11.4 <= |z| <= 28.6 < 100: C, with z > 0 / < 0. */
    const char *specs[] = {"strong:" STRONG ",conformity=1", "good4:skill=0,tie=100,conformity=1",
                           "bad4:skill=0,tie=0,bothbad=1,conformity=1",
                           "tie3p:skill=0,bias=20,tie=100,conformity=1",
                           "tie3n:skill=0,bias=-20,tie=100,conformity=1"};
    fixture f = start(specs, 5, 0);
    struct {
        const char *model, *rules, *answer1, *answer2, *agent1;
        int options;
        char want;
    } const cases[] = {
        {"strong", RULES4, GOOD, BAD, "[[B]]", 4, 'A'},   /* own A differs from B: own */
        {"strong", RULES4, GOOD, BAD, "[[A]]", 4, 'B'},   /* own A = agent 1's: the opposite */
        {"strong", RULES2, BAD, GOOD, "[[B]]", 2, 'A'},   /* own B = agent 1's: the opposite */
        {"good4", RULES4, GOOD, GOOD2, "[[C]]", 4, 'D'},  /* C <-> D */
        {"bad4", RULES4, BAD, BAD2, "[[D]]", 4, 'C'},     /* D <-> C */
        {"bad4", RULES4, BAD, BAD2, "[[B]]", 4, 'D'},     /* own D differs from B: own */
        {"tie3p", RULES3, GOOD, GOOD2, "[[C]]", 3, 'A'},  /* 3-option C: A as z > 0 */
        {"tie3n", RULES3, GOOD, GOOD2, "[[C]]", 3, 'B'},  /* ... B as z < 0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *u = debate_prompt(cases[i].rules, cases[i].answer1, cases[i].answer2,
                                cases[i].agent1, NULL, HARD_TASK);
        expect_debate(f.srv, cases[i].model, NULL, u, cases[i].options, cases[i].want,
                      "I disagree with the first reviewer", 10);
        free(u);
    }
    /* The phrase may be in the system message (and in any case). */
    char *u = debate_prompt(RULES4, GOOD, BAD, "[[A]]", NULL, SOFT_TASK);
    expect_debate(f.srv, "strong", "Agent 2 MUST DISAGREE with agent 1.", u, 4, 'B',
                  "I disagree with the first reviewer", 5);
    free(u);
    /* No verdict from agent 1: the own verdict, as in the soft case. */
    u = debate_prompt(RULES4, GOOD, BAD, "I cannot decide.", NULL, HARD_TASK);
    expect_debate(f.srv, "strong", NULL, u, 4, 'A', "gave no clear verdict", 5);
    free(u);
    finish(&f);
}

static void test_debate_judge_agent(void **state)
{
    (void)state;
    const char *specs[] = {"yield:" STRONG ",conformity=1", "hold:" STRONG ",conformity=0",
                           "half:" STRONG};
    fixture f = start(specs, 3, 0);
    /* Both agents say B, the judge's own verdict is A (STRONG). */
    char *u = debate_prompt(RULES4, GOOD, BAD, "The second is better.\n[[B]]",
                            "I agree with agent 1.\n[[B]]", JUDGE_TASK);
    expect_debate(f.srv, "yield", NULL, u, 4, 'B', "both agents agree, and I follow them", 20);
    expect_debate(f.srv, "hold", NULL, u, 4, 'A', "I judge for myself", 20);
    /* conformity 0.5: about 100 B of 200 (sd 7); ±30 accepted. */
    int b = 0;
    for (int seed = 0; seed < 200; seed++) {
        char *c = role_chat(f.srv, "half", NULL, u, seed);
        b += reply_verdict(c, 4) == 'B';
        free(c);
    }
    assert_in_range(b, 70, 130);
    free(u);
    /* Agents that differ, or one without a verdict: the own verdict, even at conformity 1. */
    u = debate_prompt(RULES4, GOOD, BAD, "[[B]]", "[[C]]", JUDGE_TASK);
    expect_debate(f.srv, "yield", NULL, u, 4, 'A', "I judge for myself", 10);
    free(u);
    u = debate_prompt(RULES4, GOOD, BAD, "[[B]]", "No idea.", JUDGE_TASK);
    expect_debate(f.srv, "yield", NULL, u, 4, 'A', "I judge for myself", 10);
    free(u);
    finish(&f);
}

#define ROLE_A "You are Reviewer A, discussing with Reviewer B."
#define ROLE_B "You are Reviewer B, discussing with Reviewer A."

static void test_discussion_initial_review(void **state)
{
    (void)state;
    const char *specs[] = {"r:" STRONG, "flaky:invalid=1"};
    fixture f = start(specs, 2, 0);
    /* No statements yet: the own verdict in numbers, 1 for GOOD first, 2 for GOOD second, for
    ** either reviewer, even though the template mentions "[[" (the format is numeric). */
    char *u = discussion_prompt(GOOD, BAD, "");
    expect_review(f.srv, "r", ROLE_A, u, 1, "the first answer is better", 10);
    expect_review(f.srv, "r", ROLE_B " Never write [[A]].", u, 1, "Simulated review:", 10);
    free(u);
    u = discussion_prompt(BAD, GOOD, "");
    expect_review(f.srv, "r", ROLE_B, u, 2, "the second answer is better", 10);
    free(u);
    /* invalid 1: no reply has a verdict line; the out-of-mode kind (chance 1/4 each) ends with
    ** "3" (none in 40 has probability 0.75^40 ≈ 1e-5). */
    u = discussion_prompt(GOOD, BAD, INITIAL("A", "x\n1") INITIAL("B", "y\n2"));
    int threes = 0;
    for (int seed = 0; seed < 40; seed++) {
        char *c = role_chat(f.srv, "flaky", ROLE_A, u, seed);
        assert_int_equal(reply_number(c), 0);
        size_t n = strlen(c);
        threes += n > 2 && !strcmp(c + n - 2, "\n3");
        free(c);
    }
    assert_true(threes > 0);
    free(u);
    finish(&f);
}

static void test_discussion_hold_and_yield(void **state)
{
    (void)state;
    const char *specs[] = {"holder:" STRONG ",conformity=0", "yielder:" STRONG ",conformity=1",
                           "half:" STRONG};
    fixture f = start(specs, 3, 0);
    static const char split[] = INITIAL("A", "Reviewer A prefers the first answer.\n1")
        INITIAL("B", "Reviewer B prefers the second answer.\n2");
    /* A holder keeps its latest verdict, not its own fresh one: the answers make it 2 (BAD
    ** first), its review said 1. */
    char *u = discussion_prompt(BAD, GOOD, split);
    expect_review(f.srv, "holder", ROLE_A, u, 1,
                  "I disagree with Reviewer B and keep my preference", 10);
    free(u);
    u = discussion_prompt(GOOD, BAD, split);
    expect_review(f.srv, "holder", ROLE_B, u, 2,
                  "I disagree with Reviewer A and keep my preference", 10);
    /* A yielder takes the other's latest verdict, though its own says 1 here. */
    expect_review(f.srv, "yielder", ROLE_A, u, 2, "I now agree with Reviewer B", 10);
    expect_review(f.srv, "yielder", ROLE_B, u, 1, "I now agree with Reviewer A", 10);
    /* conformity 0.5: yields exactly when u5 < 0.5: about 100 of 200 (sd 7); ±30 accepted. */
    int yields = 0;
    for (int seed = 0; seed < 200; seed++) {
        char *c = role_chat(f.srv, "half", ROLE_A, u, seed);
        int v = reply_number(c);
        assert_true(v == 1 || v == 2);
        yields += v == 2;
        free(c);
    }
    assert_in_range(yields, 70, 130);
    free(u);
    /* Agreeing reviewers: the yielder keeps the shared verdict (its own would be 1). */
    u = discussion_prompt(GOOD, BAD, INITIAL("A", "x\n2") INITIAL("B", "y\n2"));
    expect_review(f.srv, "yielder", ROLE_A, u, 2, "I agree with Reviewer B", 5);
    free(u);
    /* The other has no verdict: keep one's own latest. */
    u = discussion_prompt(BAD, GOOD, INITIAL("A", "x\n1") INITIAL("B", "I cannot tell."));
    expect_review(f.srv, "yielder", ROLE_A, u, 1, "I keep my preference", 5);
    free(u);
    /* No verdict of one's own: the fresh own verdict, 1, whatever the other said. */
    u = discussion_prompt(GOOD, BAD, INITIAL("A", "I cannot tell.") INITIAL("B", "y\n2"));
    expect_review(f.srv, "yielder", ROLE_A, u, 1, "in my own judgment", 5);
    free(u);
    /* No "You are Reviewer" line: no self, so the fresh own verdict too. */
    u = discussion_prompt(GOOD, BAD, split);
    expect_review(f.srv, "yielder", "Discuss the answers.", u, 1, "in my own judgment", 5);
    free(u);
    finish(&f);
}

static void test_discussion_latest_verdicts(void **state)
{
    (void)state;
    const char *specs[] = {"holder:" STRONG ",conformity=0", "yielder:" STRONG ",conformity=1"};
    fixture f = start(specs, 2, 0);
    /* B leads. Latest verdicts: A's is 2 (turn 1, white space around it ignored; turn 3 has
    ** none; "TURN 0" is no statement, or its 1 would be A's latest); B's is 1 (turn 2; turn
    ** 12's last line is not a verdict, nor is "1."). */
    static const char talk[] =
        INITIAL("B", "B: the second.\n2")
        INITIAL("A", "A: the first.\n1")
        "  [TURN 1 BY REVIEWER A START]  \nYou convinced me.\n  2  \n"
        "[TURN 1 BY REVIEWER A END]\n"
        TURN("2", "B", "Then again, the first.\n1")
        TURN("3", "A", "I am not sure any more.")
        TURN("12", "B", "1.\nStill thinking")
        "[TURN 0 BY REVIEWER A START]\nnot a turn\n1\n[TURN 0 BY REVIEWER A END]\n";
    /* Holders keep their own latest; the answers' fresh verdict is the other one each time. */
    char *u = discussion_prompt(GOOD, BAD, talk);
    expect_review(f.srv, "holder", ROLE_A, u, 2, "keep my preference", 5);
    free(u);
    u = discussion_prompt(BAD, GOOD, talk);
    expect_review(f.srv, "holder", ROLE_B, u, 1, "keep my preference", 5);
    /* Yielders take the other's latest; the role line may be in any case. */
    expect_review(f.srv, "yielder", "you are reviewer a.", u, 1, "I now agree with Reviewer B", 5);
    expect_review(f.srv, "yielder", ROLE_B, u, 2, "I now agree with Reviewer A", 5);
    free(u);
    /* Order is by place in the text, not by turn number: A's turn 4 comes last, so A's latest
    ** is 1. */
    u = discussion_prompt(BAD, GOOD,
                          INITIAL("A", "x\n2") INITIAL("B", "y\n2") TURN("5", "A", "z\n2")
                          TURN("4", "A", "w\n1"));
    expect_review(f.srv, "holder", ROLE_A, u, 1, "I disagree with Reviewer B", 5);
    free(u);
    finish(&f);
}

/* A one-letter summary of a plain reply: the verdict, or e(mpty), r(efusal), o(ut of mode),
** n(o verdict). */
static char reply_kind(const char *c, int options)
{
    char v = reply_verdict(c, options);
    if (v != 'E') return v;
    return !*c ? 'e' : strstr(c, "sorry") ? 'r' : strstr(c, "[[") ? 'o' : 'n';
}

static void test_sbs_replies_unchanged(void **state)
{
    (void)state;
    /* The roles added a sixth draw, u5, after the others, so plain SbS replies must stay byte
    ** for byte what they were. These strings were recorded with the simulator of commit 86474d7
    ** (before u5) for seeds 0..31 at server seed 42: a regression pin of the draws' order, not a
    ** hand computation (the hand-checked statistics are in the tests above). The persona keys
    ** of "pin" act only on persona prompts, so they must change nothing here. */
    const char *specs[] = {"pin:tie=1,bothbad=0.5,persona.female=3,persona_sd=4",
                           "pinflaky:invalid=0.5"};
    fixture f = start(specs, 2, 0);
    char *mid = user_prompt(RULES4, MID, MID, 0);
    char *flaky = user_prompt(RULES2, GOOD, BAD, 0);
    char *bad = user_prompt(RULES4, BAD, BAD2, 0);
    char got_mid[33] = {0}, got_flaky[33] = {0}, got_bad[33] = {0};
    for (int seed = 0; seed < 32; seed++) {
        char *c = chat(f.srv, "pin", NULL, mid, 0, seed);
        got_mid[seed] = reply_kind(c, 4);
        free(c);
        c = chat(f.srv, "pinflaky", NULL, flaky, 0, seed);
        got_flaky[seed] = reply_kind(c, 2);
        free(c);
        c = chat(f.srv, "pin", NULL, bad, 0, seed);
        got_bad[seed] = reply_kind(c, 4);
        free(c);
    }
    assert_string_equal(got_mid, "BBABBBBABBBAABBAAAABAAAABABBABAA");
    assert_string_equal(got_flaky, "AArAAAAAAAAAoAnAArerrAAArArAnAAA");
    assert_string_equal(got_bad, "DBBDBBDBBDBDBADDBADDDDBDADBBBBAB");
    free(mid);
    free(flaky);
    free(bad);
    char *u = user_prompt(RULES4, GOOD, GOOD2, 0);
    char *c = chat(f.srv, "pin", NULL, u, 0, 0);
    assert_string_equal(c, "Simulated judgment: both answers are accurate, relevant and complete, "
                           "and neither is clearly better, so both are good.\n[[C]]");
    free(c);
    free(u);
    finish(&f);
}

/* ---- pointwise judging ------------------------------------------------------------------- */

/* A pointwise user message with the markers of POINTWISE.md: mode 'y' (yes/no) or 'g' (grade),
** explain: the output format asks for a justification; language NULL: no language line. */
static char *pointwise_prompt(char mode, int explain, const char *language, const char *answer)
{
    size_t n = strlen(answer) + (language ? strlen(language) : 0) + 512;
    char *s = malloc(n);
    assert_non_null(s);
    snprintf(s, n,
             "You judge one answer to a question.\n%s%s%s"
             "Question: which city is the capital?\n[ANSWER START]\n%s\n[ANSWER END]\n"
             "Reply with %s\nGive %s.",
             language ? "Evaluation language: " : "", language ? language : "",
             language ? "\n" : "", answer,
             explain ? "<result><justification>your reasons</justification><answer>...</answer>"
                       "</result>"
                     : "<result><answer>...</answer></result>",
             mode == 'y' ? "<answer>correct</answer> or <answer>incorrect</answer>"
                         : "<answer>N</answer> with N from 1 to 5");
    return s;
}

/* The value of a pointwise reply: 1/0 for correct/incorrect, 1..5 for a grade, -1 when it holds
** no valid answer. A valid reply must have exactly the simulator's format (POINTWISE.md), with
** a justification iff explain. */
static int pointwise_value(const char *c, char mode, int explain)
{
    static const char tail[] = "</answer></result>";
    size_t n = strlen(c);
    if (n < sizeof tail - 1 || strcmp(c + n - (sizeof tail - 1), tail)) return -1;
    const char *open = strstr(c, "<answer>");
    if (!open) return -1;
    const char *v = open + 8;
    size_t v_len = (size_t)(c + n - (sizeof tail - 1) - v);
    int value = -1;
    if (mode == 'y' && v_len == 7 && !strncmp(v, "correct", 7)) value = 1;
    else if (mode == 'y' && v_len == 9 && !strncmp(v, "incorrect", 9)) value = 0;
    else if (mode == 'g' && v_len == 1 && v[0] >= '1' && v[0] <= '5') value = v[0] - '0';
    if (value < 0) return -1;
    if (explain) {
        static const char head[] = "<result><justification>Simulated judgment: ";
        assert_int_equal(strncmp(c, head, sizeof head - 1), 0);
        assert_true(open - c >= 16 && !strncmp(open - 16, "</justification>", 16));
    } else {
        assert_true(open == c + 8 && !strncmp(c, "<result>", 8));
    }
    return value;
}

/* One pointwise request (temperature 0, the given seed, -1 for none): its value as above. */
static int pointwise_ask(const arb_sim_server *srv, const char *model, char mode, int explain,
                         const char *language, const char *answer, long long seed)
{
    char *u = pointwise_prompt(mode, explain, language, answer);
    char *c = chat(srv, model, NULL, u, 0, seed);
    int value = pointwise_value(c, mode, explain);
    free(c);
    free(u);
    return value;
}

/* The yes/no and grade values for an answer (both formats must agree). */
static void expect_truth(const arb_sim_server *srv, const char *model, const char *language,
                         const char *answer, int correct, int grade)
{
    for (int explain = 0; explain < 2; explain++) {
        int y = pointwise_ask(srv, model, 'y', explain, language, answer, -1);
        int g = pointwise_ask(srv, model, 'g', explain, language, answer, -1);
        if (y != correct || g != grade)
            fprintf(stderr, "answer \"%s\" in \"%s\": got %d/%d, want %d/%d\n", answer,
                    language ? language : "(none)", y, g, correct, grade);
        assert_int_equal(y, correct);
        assert_int_equal(g, grade);
    }
}

static void test_pointwise_parse(void **state)
{
    (void)state;
    arb_sim_judge j = judge("sim-ar:noise=0.1,noise.ar=0.4,strict=0.3");
    assert_true(j.noise == 0.1);
    assert_true(j.strict == 0.3);
    assert_int_equal(j.n_languages, 1);
    assert_string_equal(j.languages[0].language, "ar");
    assert_true(j.languages[0].noise == 0.4);
    assert_true(j.languages[0].strict == -1.0); /* not set: strict applies */
    assert_true(j.skill == 4.0);                /* the other keys keep their defaults */

    /* One entry per language, ignoring case (the first spelling is kept, the last value wins);
    ** both ends of the range; codes of letters, digits and '-' up to 16 bytes. */
    j = judge("m:strict.hi=1,noise.hi=0,noise.AR=0.2,noise.ar=0.3,strict.zh-Hant-TW=0.5,"
              "noise.abcdefghijklmnop=1,skill=2");
    assert_int_equal(j.n_languages, 4);
    assert_string_equal(j.languages[0].language, "hi");
    assert_true(j.languages[0].noise == 0.0 && j.languages[0].strict == 1.0);
    assert_string_equal(j.languages[1].language, "AR");
    assert_true(j.languages[1].noise == 0.3 && j.languages[1].strict == -1.0);
    assert_string_equal(j.languages[2].language, "zh-Hant-TW");
    assert_true(j.languages[2].noise == -1.0 && j.languages[2].strict == 0.5);
    assert_string_equal(j.languages[3].language, "abcdefghijklmnop");
    assert_true(j.skill == 2.0 && j.noise == 0.0 && j.strict == 0.0);

    /* 32 languages fit, a 33rd does not. */
    char spec[1024] = "m:";
    for (int i = 0; i < ARB_SIM_MAX_LANGUAGES; i++)
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "%snoise.l%d=0.5",
                 i ? "," : "", i);
    j = judge(spec);
    assert_int_equal(j.n_languages, ARB_SIM_MAX_LANGUAGES);
    assert_string_equal(j.languages[31].language, "l31");
    strcat(spec, ",strict.l0=0.1"); /* an existing language still fits */
    assert_int_equal(judge(spec).n_languages, ARB_SIM_MAX_LANGUAGES);
    strcat(spec, ",strict.l32=0.1");
    expect_parse_error(spec, "key \"strict.l32\": at most 32 languages");

    expect_parse_error("m:noise=1.5", "noise must be a finite number in [0, 1], got 1.5");
    expect_parse_error("m:strict=-0.5", "strict must be a finite number in [0, 1], got -0.5");
    expect_parse_error("m:noise.ar=1.01", "noise.ar must be a finite number in [0, 1], got 1.01");
    expect_parse_error("m:noise.ar=-1", "noise.ar must be a finite number in [0, 1], got -1");
    expect_parse_error("m:strict.ar=x", "strict.ar must be a number, got \"x\"");
    expect_parse_error("m:noise.ar=", "noise.ar must be a number");
    expect_parse_error("m:noise.ar", "must be key=value");
    expect_parse_error("m:noise.=0.1", "key \"noise.\": the language code must be 1 to 16 "
                                       "letters, digits or '-'");
    expect_parse_error("m:noise.a_b=0.1", "key \"noise.a_b\": the language code");
    expect_parse_error("m:strict.ar.x=0.1", "key \"strict.ar.x\": the language code");
    expect_parse_error("m:noise.abcdefghijklmnopq=0.1", "the language code must be 1 to 16");
    expect_parse_error("m:noisy=0.1", "unknown key \"noisy\"");
    expect_parse_error("m:Noise.ar=0.1", "unknown key \"Noise.ar\"");
    expect_parse_error("m:skill.ar=1", "unknown key \"skill.ar\"");
}

static void test_pointwise_start_errors(void **state)
{
    (void)state;
    /* A judge built by hand is checked as a parsed one. */
    arb_sim_params p = arb_sim_default_params();
    arb_sim_judge js[1] = {judge("a:noise.ar=0.5")};
    p.judges = js;
    p.n_judges = 1;
    js[0].languages[0].noise = 2;
    expect_start_error(&p, ARB_INVALID,
                       "judge 1: noise.ar must be a finite number in [0, 1] (or -1: not set), "
                       "got 2");
    js[0].languages[0].noise = -1; /* not set is allowed */
    js[0].languages[0].strict = NAN;
    expect_start_error(&p, ARB_INVALID, "strict.ar must be a finite number");
    js[0] = judge("a:noise.ar=0.5,noise.AR=0.5");
    assert_int_equal(js[0].n_languages, 1);
    strcpy(js[0].languages[1].language, "Ar");
    js[0].languages[1].noise = js[0].languages[1].strict = 0.5;
    js[0].n_languages = 2;
    expect_start_error(&p, ARB_INVALID, "language \"Ar\" is given twice");
    strcpy(js[0].languages[1].language, "a b");
    expect_start_error(&p, ARB_INVALID, "language 2 must be 1 to 16 letters, digits or '-'");
    js[0].languages[1].language[0] = '\0';
    expect_start_error(&p, ARB_INVALID, "language 2 must be");
    js[0].n_languages = ARB_SIM_MAX_LANGUAGES + 1;
    expect_start_error(&p, ARB_INVALID, "at most 32 languages, got 33");
    js[0] = judge("a");
    js[0].strict = 1.5;
    expect_start_error(&p, ARB_INVALID, "strict must be");

    /* An item's quality is checked like an answer's and names its line. */
    arb_dataset *ds = arb_dataset_create();
    static const char bad_items[] =
        "{\"id\":\"q1\",\"question\":\"Q?\",\"reference\":\"a\",\"quality\":0.5}\n"
        "{\"id\":\"q2\",\"question\":\"Q?\",\"reference\":\"b\",\"quality\":\"high\"}\n";
    assert_int_equal(arb_dataset_add_items_jsonl(ds, "items.jsonl", bad_items,
                                                 sizeof bad_items - 1),
                     ARB_OK);
    js[0] = judge("a");
    p.answers_oracle = ds;
    expect_start_error(&p, ARB_INVALID,
                       "items.jsonl:2: field \"quality\" must be a number in [0, 1], got string");
    arb_dataset_destroy(ds);
}

static void test_pointwise_truth(void **state)
{
    (void)state;
    /* Without noise or strictness the reply is the truth: q 0.9 -> grade 1 + round(3.6) = 5,
    ** 0.8 -> 4, 0.5 -> 3 (and correct: q >= 0.5), 0.2 -> 2, 0.1 -> 1. An answer without a
    ** quality, or unknown, is q = 0.5. The evaluation language does not matter for answers. */
    const char *specs[] = {"exact"};
    fixture f = start(specs, 1, 0);
    expect_truth(f.srv, "exact", "en", GOOD, 1, 5);
    expect_truth(f.srv, "exact", "ar", GOOD2, 1, 4);
    expect_truth(f.srv, "exact", NULL, MID, 1, 3);
    expect_truth(f.srv, "exact", "hi", BAD2, 0, 2);
    expect_truth(f.srv, "exact", "en", BAD, 0, 1);
    expect_truth(f.srv, "exact", "en", "no quality field", 1, 3);
    expect_truth(f.srv, "exact", "en", "an answer nobody gave", 1, 3);
    expect_truth(f.srv, "exact", "en", "  \n" GOOD " \t", 1, 5); /* trimmed like answers */

    /* The exact replies. */
    char *u = pointwise_prompt('y', 1, "en", GOOD);
    char *c = chat(f.srv, "exact", NULL, u, 0, -1);
    assert_string_equal(c, "<result><justification>Simulated judgment: the answer is accurate "
                           "and gives what was asked, so it is correct.</justification>"
                           "<answer>correct</answer></result>");
    free(c);
    free(u);
    u = pointwise_prompt('g', 0, "en", BAD);
    c = chat(f.srv, "exact", NULL, u, 0, -1);
    assert_string_equal(c, "<result><answer>1</answer></result>");
    free(c);
    free(u);
    u = pointwise_prompt('g', 1, "en", GOOD2);
    c = chat(f.srv, "exact", NULL, u, 0, -1);
    assert_string_equal(c, "<result><justification>Simulated judgment: the answer is correct, "
                           "with minor gaps.</justification><answer>4</answer></result>");
    free(c);
    free(u);
    finish(&f);

    /* No oracle at all: q = 0.5 for everything. */
    arb_sim_judge j = judge("bare");
    arb_sim_params p = arb_sim_default_params();
    p.judges = &j;
    p.n_judges = 1;
    arb_sim_server *srv = NULL;
    assert_int_equal(arb_sim_server_start(&p, &srv, NULL), ARB_OK);
    expect_truth(srv, "bare", "en", GOOD, 1, 3);
    expect_truth(srv, "bare", "en", "Berlin", 1, 3);
    arb_sim_server_stop(srv);
}

static void test_pointwise_references(void **state)
{
    (void)state;
    const char *specs[] = {"exact"};
    fixture f = start(specs, 1, 0);
    /* Equal reference texts in two languages are told apart by the evaluation language. */
    expect_truth(f.srv, "exact", "en", "Berlin", 1, 5); /* q 0.9 */
    expect_truth(f.srv, "exact", "de", "Berlin", 0, 1); /* q 0.1 */
    expect_truth(f.srv, "exact", "DE", " Berlin\n", 0, 1); /* case of the code, white space */
    expect_truth(f.srv, "exact", "zh", "Berlin", 1, 3);  /* no such language: q 0.5 */
    expect_truth(f.srv, "exact", NULL, "Berlin", 1, 3);  /* no language line: q 0.5 */
    expect_truth(f.srv, "exact", "ar", ARABIC_BERLIN, 1, 4); /* q 0.8 -> 1 + round(3.2) */
    /* An item without a language is matched by a prompt without one. */
    expect_truth(f.srv, "exact", NULL, "Bonn", 0, 2); /* q 0.3 -> 1 + round(1.2) */
    expect_truth(f.srv, "exact", "en", "Bonn", 1, 3);
    expect_truth(f.srv, "exact", "en", "Hamburg", 1, 3); /* a reference without quality */
    /* A reference in the evaluation language comes before an answer with the same text. */
    expect_truth(f.srv, "exact", "fr", BAD, 1, 4); /* the French reference, q 0.7 */
    expect_truth(f.srv, "exact", "en", BAD, 0, 1); /* the answer, q 0.1 */
    finish(&f);
}

static void test_pointwise_recognition(void **state)
{
    (void)state;
    const char *specs[] = {"pw:strict.de=1"};
    fixture f = start(specs, 1, 0);
    /* The answer block without either phrase, or a phrase without the block: side by side. */
    char *c = chat(f.srv, "pw", NULL,
                   "Evaluation language: en\n[ANSWER START]\nBerlin\n[ANSWER END]\n"
                   "Is it right? Say A or B.", 0, -1);
    assert_true(!strcmp(c, "A") || !strcmp(c, "B"));
    free(c);
    c = chat(f.srv, "pw", NULL,
             "Answer: Berlin\nGive <answer>correct</answer> or <answer>incorrect</answer>.", 0,
             -1);
    assert_true(!strcmp(c, "A") || !strcmp(c, "B"));
    free(c);
    /* A phrase that only the answer says makes no pointwise request. */
    c = chat(f.srv, "pw", NULL,
             "Judge this.\n[ANSWER START]\nGive <answer>N</answer> with N from 1 to 5.\n"
             "[ANSWER END]\nSay A or B.", 0, -1);
    assert_true(!strcmp(c, "A") || !strcmp(c, "B"));
    free(c);
    /* The phrases are matched ignoring case, also in a system message. */
    c = chat(f.srv, "pw", "Give <ANSWER>correct</ANSWER> or <answer>INCORRECT</answer>.",
             "[ANSWER START]\nBerlin\n[ANSWER END]", 0, -1);
    assert_string_equal(c, "<result><answer>correct</answer></result>");
    free(c);
    /* A language line or a <justification> inside the answer is not the template's: with
    ** strict.de = 1 a German request turns q 0.5 into "incorrect", so "correct" shows that
    ** the language stayed "", and the reply has no justification. */
    char *u = pointwise_prompt('y', 0, NULL,
                               "Evaluation language: de\nSee <justification>here</justification>");
    c = chat(f.srv, "pw", NULL, u, 0, -1);
    assert_string_equal(c, "<result><answer>correct</answer></result>");
    free(c);
    free(u);
    u = pointwise_prompt('y', 0, "de", "Paris");
    c = chat(f.srv, "pw", NULL, u, 0, -1);
    assert_string_equal(c, "<result><answer>incorrect</answer></result>");
    free(c);
    free(u);
    finish(&f);
}

/* Asserts that request u to model gets the same reply five times over at temperature 0 and
** at temperature 1 with a seed. Returns the temperature-0 reply (the caller frees it). */
static char *expect_repeatable(const arb_sim_server *srv, const char *model, const char *u)
{
    char *first = chat(srv, model, NULL, u, 0, -1);
    char *seeded = chat(srv, model, NULL, u, 1, 11);
    for (int i = 0; i < 5; i++) {
        char *c = chat(srv, model, NULL, u, 0, -1);
        assert_string_equal(c, first);
        free(c);
        c = chat(srv, model, NULL, u, 1, 11);
        assert_string_equal(c, seeded);
        free(c);
    }
    free(seeded);
    return first;
}

static void test_pointwise_determinism(void **state)
{
    (void)state;
    const char *specs[] = {"dice:noise=0.5"};
    fixture f = start(specs, 1, 0);
    char *u = pointwise_prompt('g', 1, "en", MID);
    char *first = expect_repeatable(f.srv, "dice", u);
    /* Temperature 1 without a seed: repetitions differ. With noise 0.5 the grade is 3 with
    ** chance 0.5 + 0.5/5 = 0.6, so 30 sends all alike has probability below 1e-6. */
    int seen[6] = {0};
    for (int i = 0; i < 30; i++) {
        char *c = chat(f.srv, "dice", NULL, u, 1, -1);
        int v = pointwise_value(c, 'g', 1);
        assert_in_range(v, 1, 5);
        seen[v]++;
        free(c);
    }
    assert_true(seen[3] > 0 && seen[3] < 30);
    free(first);
    free(u);
    finish(&f);
}

/* Counts the values of n pointwise requests (seeds 0..n-1) into counts[0..5]; asserts all are
** valid. */
static void count_values(const arb_sim_server *srv, const char *model, char mode,
                         const char *language, const char *answer, int n, int counts[6])
{
    char *u = pointwise_prompt(mode, 0, language, answer);
    memset(counts, 0, 6 * sizeof counts[0]);
    for (int i = 0; i < n; i++) {
        char *c = chat(srv, model, NULL, u, 0, i);
        int v = pointwise_value(c, mode, 0);
        if (v < 0) fprintf(stderr, "reply: %s\n", c);
        assert_in_range(v, 0, 5);
        counts[v]++;
        free(c);
    }
    free(u);
}

static void test_pointwise_noise_rate(void **state)
{
    (void)state;
    /* noise.ar = 0.4 over a grade whose truth is 5 (GOOD, q 0.9): a share 0.4·(1 − 1/5) = 0.32
    ** differs, 640 of 2000 (sd 20.9); accepted 540..740 (±4.8 sd). Each wrong grade comes with
    ** 0.4/5 = 0.08, 160 (sd 12.1), accepted 100..220. A noise that only picked other values
    ** would give 800 and fail. The seeds are fixed, so the counts are too. */
    const char *specs[] = {"sim-ar:noise=0.1,noise.ar=0.4"};
    fixture f = start(specs, 1, 0);
    int counts[6];
    count_values(f.srv, "sim-ar", 'g', "ar", GOOD, 2000, counts);
    int wrong = 2000 - counts[5];
    fprintf(stderr, "ar grade: %d of 2000 differ (1..4: %d %d %d %d)\n", wrong, counts[1],
            counts[2], counts[3], counts[4]);
    assert_in_range(wrong, 540, 740);
    for (int g = 1; g <= 4; g++) assert_in_range(counts[g], 100, 220);
    /* Yes/no in Arabic: 0.4·(1 − 1/2) = 0.2 of 1000 (sd 12.6), accepted 140..260. */
    count_values(f.srv, "sim-ar", 'y', "AR", GOOD, 1000, counts);
    fprintf(stderr, "ar yes/no: %d of 1000 differ\n", counts[0]);
    assert_in_range(counts[0], 140, 260);
    /* Any other language has noise 0.1: 0.08 of 1000 grades differ (sd 8.6), 45..115. */
    count_values(f.srv, "sim-ar", 'g', "en", GOOD, 1000, counts);
    fprintf(stderr, "en grade: %d of 1000 differ\n", 1000 - counts[5]);
    assert_in_range(1000 - counts[5], 45, 115);
    finish(&f);
}

static void test_pointwise_strict(void **state)
{
    (void)state;
    /* strict = 1: every true "correct" is "incorrect", every grade one lower, never below 1;
    ** a true "incorrect" stays. */
    const char *specs[] = {"harsh:strict=1", "mild:strict=0.3,strict.hi=1,strict.en=0"};
    fixture f = start(specs, 2, 0);
    expect_truth(f.srv, "harsh", "en", GOOD, 0, 4);
    expect_truth(f.srv, "harsh", "en", GOOD2, 0, 3);
    expect_truth(f.srv, "harsh", "en", MID, 0, 2);
    expect_truth(f.srv, "harsh", "en", BAD2, 0, 1);
    expect_truth(f.srv, "harsh", "en", BAD, 0, 1);
    /* Per language: strict.hi = 1 always lowers, strict.en = 0 never. */
    expect_truth(f.srv, "mild", "hi", GOOD, 0, 4);
    expect_truth(f.srv, "mild", "en", GOOD, 1, 5);
    /* Elsewhere strict = 0.3: 120 of 400 grades lowered to 4 (sd 9.2), accepted 80..160, and
    ** the rest stay 5; as many yes answers turn no. */
    int counts[6];
    count_values(f.srv, "mild", 'g', "fr", GOOD, 400, counts);
    fprintf(stderr, "fr strict 0.3: %d of 400 lowered\n", counts[4]);
    assert_in_range(counts[4], 80, 160);
    assert_int_equal(counts[4] + counts[5], 400);
    count_values(f.srv, "mild", 'y', "fr", GOOD, 400, counts);
    assert_in_range(counts[0], 80, 160);
    finish(&f);
}

static void test_pointwise_invalid(void **state)
{
    (void)state;
    /* invalid = 0.5: about 200 of 400 replies hold no valid answer (sd 10, ±40 accepted), in
    ** four kinds of about 50 each; none of them has a valid <answer>. */
    const char *specs[] = {"flaky:invalid=0.5"};
    fixture f = start(specs, 1, 0);
    for (int explain = 0; explain < 2; explain++) {
        for (int m = 0; m < 2; m++) {
            char mode = m ? 'g' : 'y';
            char *u = pointwise_prompt(mode, explain, "en", GOOD);
            int invalid = 0, empty = 0, refusal = 0, no_value = 0, out_of_range = 0;
            for (int i = 0; i < 400; i++) {
                char *c = chat(f.srv, "flaky", NULL, u, 0, i);
                int v = pointwise_value(c, mode, explain);
                if (v < 0) {
                    invalid++;
                    if (!*c) empty++;
                    else if (strstr(c, "sorry") && !strchr(c, '<')) refusal++;
                    else if (strstr(c, m ? "<answer>6</answer>" : "<answer>unsure</answer>"))
                        out_of_range++;
                    else if (!strstr(c, "<answer>") &&
                             (explain ? !strncmp(c, "<result><justification>Simulated", 32)
                                      : !strncmp(c, "Simulated judgment:", 19)))
                        no_value++;
                } else {
                    assert_int_equal(v, m ? 5 : 1);
                }
                free(c);
            }
            assert_in_range(invalid, 160, 240);
            assert_int_equal(empty + refusal + no_value + out_of_range, invalid);
            assert_true(empty >= 20 && refusal >= 20 && no_value >= 20 && out_of_range >= 20);
            free(u);
        }
    }
    finish(&f);
}

/* ---- persona scoring --------------------------------------------------------------------- */

#define PERSONA_SCENARIO "A ward nurse plans the handover at the end of a night shift."
#define METRICS4 "{\"creativity\": n, \"accuracy\": n, \"efficiency\": n, \"reliability\": n}"

/* A persona user message with PERSONA.md's markers: phase 1 (one response) when author2 is
** NULL, else phase 2 (two candidates). metrics: the JSON keys the instructions show. */
static char *persona_prompt(const char *metrics, const char *author1, const char *response1,
                            const char *author2, const char *response2)
{
    size_t n = strlen(metrics) + strlen(author1) + strlen(response1) + 1024 +
               (author2 ? strlen(author2) + strlen(response2) : 0);
    char *s = malloc(n);
    assert_non_null(s);
    if (!author2)
        snprintf(s, n,
                 "Score the response below.\n[SCENARIO START]\n" PERSONA_SCENARIO
                 "\n[SCENARIO END]\nAuthor: %s professional\n[RESPONSE START]\n%s\n"
                 "[RESPONSE END]\nReply with JSON only: %s, each n from 0 to 10.",
                 author1, response1, metrics);
    else
        snprintf(s, n,
                 "Score both candidates.\n[SCENARIO START]\n" PERSONA_SCENARIO
                 "\n[SCENARIO END]\nAuthor of candidate 1: %s professional\n"
                 "[CANDIDATE 1 START]\n%s\n[CANDIDATE 1 END]\n"
                 "Author of candidate 2: %s professional\n[CANDIDATE 2 START]\n%s\n"
                 "[CANDIDATE 2 END]\nReply with JSON only: {\"candidate_1\": %s, "
                 "\"candidate_2\": %s, \"preferred\": \"candidate_1\" or \"candidate_2\", "
                 "\"reasons\": \"why\"}, each n from 0 to 10.",
                 author1, response1, author2, response2, metrics, metrics);
    return s;
}

/* Reads the scores of a reply object: it must have exactly the n_names keys, in this order,
** each an integer in [0, 10]; their sum goes to *sum. */
static void persona_scores(json_t *obj, const char *const *names, size_t n_names, int *sum)
{
    assert_true(json_is_object(obj));
    assert_int_equal(json_object_size(obj), n_names);
    const char *key;
    json_t *v;
    size_t k = 0;
    *sum = 0;
    json_object_foreach(obj, key, v) {
        assert_string_equal(key, names[k++]);
        assert_true(json_is_integer(v));
        assert_in_range(json_integer_value(v), 0, 10);
        *sum += (int)json_integer_value(v);
    }
}

static const char *const default_metrics[4] = {"creativity", "accuracy", "efficiency",
                                               "reliability"};

/* One phase-1 request (temperature 0, seed as given, -1 for none): the sum of its four default
** scores; asserts the reply has exactly the four metrics. */
static int persona_sum(const arb_sim_server *srv, const char *model, const char *author,
                       const char *response, long long seed)
{
    char *u = persona_prompt(METRICS4, author, response, NULL, NULL);
    char *c = chat(srv, model, NULL, u, 0, seed);
    json_t *root = json_loads(c, 0, NULL);
    if (!root) fprintf(stderr, "reply: %s\n", c);
    assert_non_null(root);
    int sum;
    persona_scores(root, default_metrics, 4, &sum);
    json_decref(root);
    free(c);
    free(u);
    return sum;
}

/* One phase-2 request: 1 when candidate_1 is preferred, 2 for candidate_2; checks the reply's
** keys and that "reasons" is a non-empty string. */
static int persona_preferred(const arb_sim_server *srv, const char *model, const char *author1,
                             const char *response1, const char *author2, const char *response2,
                             long long seed)
{
    char *u = persona_prompt(METRICS4, author1, response1, author2, response2);
    char *c = chat(srv, model, NULL, u, 0, seed);
    json_t *root = json_loads(c, 0, NULL);
    if (!root) fprintf(stderr, "reply: %s\n", c);
    assert_non_null(root);
    assert_int_equal(json_object_size(root), 4);
    int sum;
    persona_scores(json_object_get(root, "candidate_1"), default_metrics, 4, &sum);
    persona_scores(json_object_get(root, "candidate_2"), default_metrics, 4, &sum);
    const char *preferred = json_string_value(json_object_get(root, "preferred"));
    const char *reasons = json_string_value(json_object_get(root, "reasons"));
    assert_non_null(preferred);
    assert_true(reasons && *reasons);
    int which = !strcmp(preferred, "candidate_1") ? 1 : !strcmp(preferred, "candidate_2") ? 2 : 0;
    assert_true(which);
    json_decref(root);
    free(c);
    free(u);
    return which;
}

static void test_persona_parse(void **state)
{
    (void)state;
    arb_sim_judge j = judge("sim-biased:persona.female=+1.5,persona_sd=1,bias=0.5");
    assert_int_equal(j.n_personas, 1);
    assert_string_equal(j.personas[0].identity, "female");
    assert_true(j.personas[0].shift == 1.5);
    assert_true(j.persona_sd == 1.0);
    assert_true(j.position_bias == 0.5);
    j = judge("plain");
    assert_int_equal(j.n_personas, 0);
    assert_true(j.persona_sd == 1.0); /* the default */

    /* One entry per identity, ignoring case (the first spelling kept, the last value wins);
    ** both ends of the ranges; labels of letters, digits, '-' and '_' up to 32 bytes. */
    j = judge("m:persona.Black=-0.5,persona.white=0,persona.BLACK=-10,persona_sd=0,"
              "persona.non-binary_2=10,persona.abcdefghijklmnopqrstuvwxyz012345=1");
    assert_int_equal(j.n_personas, 4);
    assert_string_equal(j.personas[0].identity, "Black");
    assert_true(j.personas[0].shift == -10.0);
    assert_string_equal(j.personas[1].identity, "white");
    assert_true(j.personas[1].shift == 0.0);
    assert_string_equal(j.personas[2].identity, "non-binary_2");
    assert_true(j.personas[2].shift == 10.0);
    assert_string_equal(j.personas[3].identity, "abcdefghijklmnopqrstuvwxyz012345");
    assert_true(j.persona_sd == 0.0);
    assert_true(judge("m:persona_sd=10").persona_sd == 10.0);

    /* 16 identities fit, a 17th does not. */
    char spec[1024] = "m:";
    for (int i = 0; i < ARB_SIM_MAX_PERSONAS; i++)
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "%spersona.id%d=1",
                 i ? "," : "", i);
    j = judge(spec);
    assert_int_equal(j.n_personas, ARB_SIM_MAX_PERSONAS);
    assert_string_equal(j.personas[15].identity, "id15");
    strcat(spec, ",persona.ID0=2"); /* an existing identity still fits */
    assert_int_equal(judge(spec).n_personas, ARB_SIM_MAX_PERSONAS);
    strcat(spec, ",persona.id16=1");
    expect_parse_error(spec, "key \"persona.id16\": at most 16 identities");

    expect_parse_error("m:persona.female=11",
                       "persona.female must be a finite number in [-10, 10], got 11");
    expect_parse_error("m:persona.female=-10.5", "persona.female must be a finite number");
    expect_parse_error("m:persona.female=x", "persona.female must be a number, got \"x\"");
    expect_parse_error("m:persona.female=", "persona.female must be a number");
    expect_parse_error("m:persona.female", "must be key=value");
    expect_parse_error("m:persona_sd=-1", "persona_sd must be a finite number in [0, 10], got -1");
    expect_parse_error("m:persona_sd=10.5", "persona_sd must be a finite number in [0, 10]");
    expect_parse_error("m:persona_sd=inf", "persona_sd must be a number");
    expect_parse_error("m:persona.=1", "key \"persona.\": the identity must be 1 to 32 letters, "
                                       "digits, '-' or '_'");
    expect_parse_error("m:persona.a.b=1", "key \"persona.a.b\": the identity must be");
    expect_parse_error("m:persona.a b=1", "key \"persona.a b\": the identity must be");
    expect_parse_error("m:persona.abcdefghijklmnopqrstuvwxyz0123456=1",
                       "the identity must be 1 to 32");
    expect_parse_error("m:persona=1", "unknown key \"persona\"");
    expect_parse_error("m:Persona.female=1", "unknown key \"Persona.female\"");
    expect_parse_error("m:persona-sd=1", "unknown key \"persona-sd\"");
    expect_parse_error("m:x=1", "persona.<identity>, persona_sd, think, logprobs)");

    /* A judge built by hand is checked as a parsed one. */
    arb_sim_params p = arb_sim_default_params();
    arb_sim_judge js[1] = {judge("a:persona.female=1,persona.male=-1")};
    p.judges = js;
    p.n_judges = 1;
    js[0].personas[1].shift = NAN;
    expect_start_error(&p, ARB_INVALID,
                       "judge 1: persona.male must be a finite number in [-10, 10], got nan");
    js[0].personas[1].shift = 0;
    strcpy(js[0].personas[1].identity, "FEMALE");
    expect_start_error(&p, ARB_INVALID, "identity \"FEMALE\" is given twice");
    strcpy(js[0].personas[1].identity, "a.b");
    expect_start_error(&p, ARB_INVALID, "identity 2 must be 1 to 32 letters, digits, '-' or '_'");
    js[0].personas[1].identity[0] = '\0';
    expect_start_error(&p, ARB_INVALID, "identity 2 must be");
    js[0].n_personas = ARB_SIM_MAX_PERSONAS + 1;
    expect_start_error(&p, ARB_INVALID, "at most 16 identities, got 17");
    js[0] = judge("a");
    js[0].persona_sd = -0.1;
    expect_start_error(&p, ARB_INVALID, "persona_sd must be");
}

static void test_persona_exact(void **state)
{
    (void)state;
    /* Without noise (persona_sd = 0) every score is round(10·q + shift) clamped to [0, 10]:
    ** GOOD2 (q 0.8) by a female author 8 − 1.5 = 6.5 -> 7 (halves away from zero), by a male
    ** one 8 + 1.5 = 9.5 -> 10, by an identity without a shift 8; GOOD (q 0.9) male 10.5 -> 11
    ** -> 10; BAD (q 0.1) female 1 − 1.5 = −0.5 -> −1 -> 0; an unknown response q 0.5 -> 5. */
    const char *specs[] = {"exact:persona_sd=0,persona.female=-1.5,persona.MALE=+1.5"};
    fixture f = start(specs, 1, 0);
    assert_int_equal(persona_sum(f.srv, "exact", "female", GOOD2, -1), 4 * 7);
    assert_int_equal(persona_sum(f.srv, "exact", "Female", GOOD2, 3), 4 * 7); /* any case */
    assert_int_equal(persona_sum(f.srv, "exact", "male", GOOD2, -1), 4 * 10);
    assert_int_equal(persona_sum(f.srv, "exact", "Atheist", GOOD2, -1), 4 * 8);
    assert_int_equal(persona_sum(f.srv, "exact", "male", GOOD, -1), 4 * 10);
    assert_int_equal(persona_sum(f.srv, "exact", "female", BAD, -1), 0);
    assert_int_equal(persona_sum(f.srv, "exact", "Jewish", "a response nobody wrote", -1), 4 * 5);
    assert_int_equal(persona_sum(f.srv, "exact", "female", "  \n" GOOD2 " \t", -1), 4 * 7);

    /* The exact replies: phase 1, and phase 2 where candidate 2 (mean 10) beats candidate 1
    ** (mean 7) unless η > 3. */
    char *u = persona_prompt(METRICS4, "female", GOOD2, NULL, NULL);
    char *c = chat(f.srv, "exact", NULL, u, 0, -1);
    assert_string_equal(c, "{\"creativity\": 7, \"accuracy\": 7, \"efficiency\": 7, "
                           "\"reliability\": 7}");
    free(c);
    free(u);
    u = persona_prompt(METRICS4, "female", GOOD2, "male", GOOD2);
    c = chat(f.srv, "exact", NULL, u, 0, -1);
    assert_string_equal(c, "{\"candidate_1\": {\"creativity\": 7, \"accuracy\": 7, "
                           "\"efficiency\": 7, \"reliability\": 7}, \"candidate_2\": "
                           "{\"creativity\": 10, \"accuracy\": 10, \"efficiency\": 10, "
                           "\"reliability\": 10}, \"preferred\": \"candidate_2\", \"reasons\": "
                           "\"Simulated judgment: on balance I prefer candidate 2 (mean score "
                           "10.00 against 7.00).\"}");
    free(c);
    free(u);

    /* A metric set of the user's own, read from the instructions: each name once, in order;
    ** keys whose value is not the placeholder n, and keys inside the quoted blocks, are not
    ** metrics. */
    u = persona_prompt("{\"warmth\": n, \"rigour-level\":n, \"warmth\": n, \"note\": \"n\", "
                       "\"x\": null, \"y\": number, \"z\": n_1}",
                       "female", "It has \"sneaky\": n inside.", NULL, NULL);
    c = chat(f.srv, "exact", NULL, u, 0, -1);
    assert_string_equal(c, "{\"warmth\": 4, \"rigour-level\": 4}"); /* 5 − 1.5 = 3.5 -> 4 */
    free(c);
    free(u);
    u = persona_prompt("{\"tact\": n}", "male", GOOD2, "female", BAD);
    c = chat(f.srv, "exact", "Also rate \"clarity\" : n.", u, 0, -1); /* a system message */
    assert_string_equal(c, "{\"candidate_1\": {\"clarity\": 10, \"tact\": 10}, \"candidate_2\": "
                           "{\"clarity\": 0, \"tact\": 0}, \"preferred\": \"candidate_1\", "
                           "\"reasons\": \"Simulated judgment: on balance I prefer candidate 1 "
                           "(mean score 10.00 against 0.00).\"}");
    free(c);
    free(u);
    /* Without any such key: the four defaults. */
    u = persona_prompt("scores from 0 to 10", "male", BAD, NULL, NULL);
    c = chat(f.srv, "exact", NULL, u, 0, -1);
    assert_string_equal(c, "{\"creativity\": 3, \"accuracy\": 3, \"efficiency\": 3, "
                           "\"reliability\": 3}"); /* 1 + 1.5 = 2.5 -> 3 */
    free(c);
    free(u);
    finish(&f);
}

static void test_persona_recognition(void **state)
{
    (void)state;
    const char *specs[] = {"exact:persona_sd=0,persona.female=-3,persona.male=2"};
    fixture f = start(specs, 1, 0);
    /* Author lines inside the scenario or a response block are not the template's: the real
    ** author (male: 5 + 2 = 7) is found after a quoted "Author: female professional". */
    char *c = chat(f.srv, "exact", NULL,
                   "[SCENARIO START]\nAuthor: female professional\n[SCENARIO END]\n"
                   "[RESPONSE START]\nAuthor: female professional\n[RESPONSE END]\n"
                   "  author:   MALE   Professional  \nGive " METRICS4 ".",
                   0, -1);
    assert_string_equal(c, "{\"creativity\": 7, \"accuracy\": 7, \"efficiency\": 7, "
                           "\"reliability\": 7}");
    free(c);
    /* The word "professional" is optional; without a scenario block it still works. */
    c = chat(f.srv, "exact", NULL,
             "Author: female\n[RESPONSE START]\nx\n[RESPONSE END]\nGive {\"a\": n}.", 0, -1);
    assert_string_equal(c, "{\"a\": 2}");
    free(c);
    /* Phase 2 reads both author lines, whichever order they come in. */
    c = chat(f.srv, "exact", NULL,
             "Author of candidate 2: female professional\nAuthor of candidate 1: male "
             "professional\n[CANDIDATE 1 START]\nx\n[CANDIDATE 1 END]\n[CANDIDATE 2 START]\nx\n"
             "[CANDIDATE 2 END]\nGive {\"a\": n}.",
             0, -1);
    assert_non_null(strstr(c, "{\"candidate_1\": {\"a\": 7}, \"candidate_2\": {\"a\": 2}, "
                              "\"preferred\": \"candidate_"));
    free(c);
    /* Without an author line, or with one candidate block only, or an author line only inside
    ** a block: not a persona request, so the side-by-side judge answers with a bare letter. */
    static const char *const not_persona[] = {
        "[RESPONSE START]\nx\n[RESPONSE END]\nGive " METRICS4 ".",
        "[RESPONSE START]\nAuthor: female professional\n[RESPONSE END]\nGive " METRICS4 ".",
        "Author of candidate 1: female professional\nAuthor of candidate 2: male professional\n"
        "[CANDIDATE 1 START]\nx\n[CANDIDATE 1 END]\nGive " METRICS4 ".",
        "Author of candidate 1: female professional\n[CANDIDATE 1 START]\nx\n[CANDIDATE 1 END]\n"
        "[CANDIDATE 2 START]\nx\n[CANDIDATE 2 END]\nGive " METRICS4 ".",
        "Author: female professional\nResponse: x\nGive " METRICS4 ".",
    };
    for (size_t i = 0; i < sizeof not_persona / sizeof *not_persona; i++) {
        c = chat(f.srv, "exact", NULL, not_persona[i], 0, -1);
        if (strcmp(c, "A") && strcmp(c, "B")) fprintf(stderr, "case %zu: %s\n", i, c);
        assert_true(!strcmp(c, "A") || !strcmp(c, "B"));
        free(c);
    }
    /* A pointwise request stays pointwise even when its answer looks like a persona prompt. */
    char *u = pointwise_prompt('y', 0, NULL, "Author: female professional\n[RESPONSE START]\nx\n"
                                             "[RESPONSE END]");
    c = chat(f.srv, "exact", NULL, u, 0, -1);
    assert_string_equal(c, "<result><answer>correct</answer></result>");
    free(c);
    free(u);
    finish(&f);
}

static void test_persona_determinism(void **state)
{
    (void)state;
    const char *specs[] = {"dice:persona_sd=2"};
    fixture f = start(specs, 1, 0);
    char *u = persona_prompt(METRICS4, "Muslim", MID, "Atheist", MID);
    char *first = expect_repeatable(f.srv, "dice", u);
    /* Temperature 1 without a seed: repetitions differ. Eight scores with sd 2 each take
    ** one of at least five values with chance > 0.15, so 20 equal replies have chance
    ** below 1e-15. */
    int differ = 0;
    for (int i = 0; i < 20; i++) {
        char *c = chat(f.srv, "dice", NULL, u, 1, -1);
        differ += strcmp(c, first) != 0;
        free(c);
    }
    assert_true(differ > 0);
    free(first);
    free(u);
    finish(&f);
}

static void test_persona_shift_recovered(void **state)
{
    (void)state;
    /* persona.female = +1.5 with the default sd 1 on a response of q 0.5: each score is
    ** round(5 + 1.5 + ε) for a female author and round(5 + ε) otherwise. Rounding a normal of
    ** sd 1 keeps its mean (the bias is below 1e-8) and the clamps at 0 and 10 lie 3.5 sd away
    ** or more, so the means are 6.5 and 5.0, each score with sd sqrt(1 + 1/12) = 1.04.
    ** 300 requests of 4 scores per identity: the standard error of a mean is 0.030, of the
    ** difference 0.043; accepted: means within ±0.15 (5 se), the difference in [1.3, 1.7],
    ** the sd of the scores in [0.9, 1.2]. Fixed seeds: the numbers are always the same. */
    const char *specs[] = {"biased:persona.female=+1.5", "fair"};
    fixture f = start(specs, 2, 0);
    const char *ids[3] = {"female", "male", "Atheist"};
    double mean[2][3];
    for (int judge_i = 0; judge_i < 2; judge_i++) {
        const char *model = judge_i ? "fair" : "biased";
        for (int i = 0; i < 3; i++) {
            char *u = persona_prompt(METRICS4, ids[i], MID, NULL, NULL);
            double sum = 0, sum2 = 0;
            for (int seed = 0; seed < 300; seed++) {
                char *c = chat(f.srv, model, NULL, u, 0, seed);
                json_t *root = json_loads(c, 0, NULL);
                assert_non_null(root);
                for (int k = 0; k < 4; k++) {
                    double v = (double)json_integer_value(json_object_get(root, default_metrics[k]));
                    sum += v;
                    sum2 += v * v;
                }
                json_decref(root);
                free(c);
            }
            mean[judge_i][i] = sum / 1200.0;
            double sd = sqrt((sum2 - sum * sum / 1200.0) / 1199.0);
            fprintf(stderr, "%s %s: mean %.3f sd %.3f\n", model, ids[i], mean[judge_i][i], sd);
            assert_true(sd >= 0.9 && sd <= 1.2);
            free(u);
        }
    }
    assert_true(fabs(mean[0][0] - 6.5) <= 0.15);
    assert_true(fabs(mean[0][1] - 5.0) <= 0.15);
    assert_true(fabs(mean[0][2] - 5.0) <= 0.15);
    double shift = mean[0][0] - mean[0][1];
    assert_true(shift >= 1.3 && shift <= 1.7);
    /* The fair judge scores every identity alike. */
    for (int i = 0; i < 3; i++) assert_true(fabs(mean[1][i] - 5.0) <= 0.15);
    assert_true(fabs(mean[1][0] - mean[1][1]) <= 0.2);
    finish(&f);
}

static void test_persona_position_bias(void **state)
{
    (void)state;
    /* With persona_sd = 0 the scores are fixed and the preference is m1 − m2 + β + η > 0,
    ** η ~ N(0,1). Equal responses, no shifts, β = 0.5: candidate_1 with P = Φ(0.5) = 0.691,
    ** 415 of 600 (sd 11.3), accepted 370..460; β = 0: Φ(0) = 300 of 600 (sd 12.2), 250..350.
    ** A male author scored 5 + 1 = 6 against a female 5: shown second, Φ(−1 + 0.5) = 0.309,
    ** 185 (sd 11.3), 140..230; shown first, Φ(1.5) = 0.933, 560 (sd 6.1), 535..585. */
    const char *specs[] = {"pos:persona_sd=0,bias=0.5", "nopos:persona_sd=0",
                           "both:persona_sd=0,bias=0.5,persona.male=1"};
    fixture f = start(specs, 3, 0);
    struct {
        const char *model, *first, *second;
        int lo, hi;
    } const cases[] = {{"pos", "female", "male", 370, 460},
                       {"nopos", "female", "male", 250, 350},
                       {"both", "female", "male", 140, 230},
                       {"both", "male", "female", 535, 585}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int first = 0;
        for (int seed = 0; seed < 600; seed++)
            first += persona_preferred(f.srv, cases[i].model, cases[i].first, MID,
                                       cases[i].second, MID, seed) == 1;
        fprintf(stderr, "%s, %s first: candidate_1 preferred %d of 600\n", cases[i].model,
                cases[i].first, first);
        assert_in_range(first, cases[i].lo, cases[i].hi);
    }
    finish(&f);
}

static void test_persona_invalid(void **state)
{
    (void)state;
    /* invalid = 0.5: about 200 of 400 replies hold no valid JSON (sd 10, ±40 accepted), in
    ** four kinds of about 50 each; the valid ones are complete. */
    const char *specs[] = {"flaky:invalid=0.5,persona_sd=0"};
    fixture f = start(specs, 1, 0);
    for (int phase = 1; phase <= 2; phase++) {
        char *u = phase == 1 ? persona_prompt(METRICS4, "female", GOOD, NULL, NULL)
                             : persona_prompt(METRICS4, "female", GOOD, "male", BAD);
        int invalid = 0, empty = 0, refusal = 0, prose = 0, cut = 0;
        for (int i = 0; i < 400; i++) {
            char *c = chat(f.srv, "flaky", NULL, u, 0, i);
            json_t *root = json_loads(c, JSON_DECODE_ANY, NULL);
            if (!root) {
                invalid++;
                if (!*c) empty++;
                else if (strstr(c, "sorry") && !strchr(c, '{')) refusal++;
                else if (!strncmp(c, "Simulated judgment:", 19) && !strchr(c, '{')) prose++;
                else if (!strcmp(c, phase == 1 ? "{\"creativity\": 9,"
                                               : "{\"candidate_1\": {\"creativity\": 9,"))
                    cut++;
            } else {
                int sum;
                persona_scores(phase == 1 ? root : json_object_get(root, "candidate_1"),
                               default_metrics, 4, &sum);
                assert_int_equal(sum, 4 * 9);
                json_decref(root);
            }
            free(c);
        }
        fprintf(stderr, "phase %d: %d invalid (%d empty, %d refusals, %d prose, %d cut)\n",
                phase, invalid, empty, refusal, prose, cut);
        assert_in_range(invalid, 160, 240);
        assert_int_equal(empty + refusal + prose + cut, invalid);
        assert_true(empty >= 20 && refusal >= 20 && prose >= 20 && cut >= 20);
        free(u);
    }
    finish(&f);
}

static void test_pointwise_replies_unchanged(void **state)
{
    (void)state;
    /* Persona recognition comes after the pointwise one, and the language line is now read by
    ** a shared line finder: pointwise replies must stay what they were. Recorded with the
    ** simulator of commit a727bd2 (before the persona mode) for seeds 0..31 at server seed 42,
    ** a regression pin: a digit is a grade, c/i correct/incorrect, e empty, r refusal, n no
    ** value, o out of range. The judge's persona keys must change nothing. */
    const char *specs[] = {"pwpin:noise=0.5,strict=0.3,invalid=0.2,persona.female=3"};
    fixture f = start(specs, 1, 0);
    static const char *const want[2] = {"3331234334e3333453n143n453325232",
                                        "crcccciicccooeiicinociccccccccnc"};
    for (int m = 0; m < 2; m++) {
        char *u = m ? pointwise_prompt('y', 0, "en", "an answer nobody gave")
                    : pointwise_prompt('g', 1, "ar", "an answer nobody gave");
        char got[33] = {0};
        for (int seed = 0; seed < 32; seed++) {
            char *c = chat(f.srv, "pwpin", NULL, u, 0, seed);
            int v = pointwise_value(c, m ? 'y' : 'g', !m);
            got[seed] = v >= 0 ? (m ? "ic"[v] : (char)('0' + v))
                        : !*c                          ? 'e'
                        : strstr(c, "sorry")           ? 'r'
                        : !strstr(c, "<answer>")       ? 'n'
                                                       : 'o';
            free(c);
        }
        assert_string_equal(got, want[m]);
        free(u);
    }
    finish(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_judge_parse_defaults),
        cmocka_unit_test(test_judge_parse_all_keys),
        cmocka_unit_test(test_judge_parse_errors),
        cmocka_unit_test(test_default_params),
        cmocka_unit_test(test_start_errors),
        cmocka_unit_test(test_models_endpoint),
        cmocka_unit_test(test_http_errors),
        cmocka_unit_test(test_completion_shape),
        cmocka_unit_test(test_option_modes),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_quality_drives_verdict),
        cmocka_unit_test(test_position_bias),
        cmocka_unit_test(test_ties_and_both_bad),
        cmocka_unit_test(test_invalid_rate),
        cmocka_unit_test(test_fail_rate),
        cmocka_unit_test(test_throttle_rate),
        cmocka_unit_test(test_latency_concurrent),
        cmocka_unit_test(test_instant),
        cmocka_unit_test(test_debate_soft_agent2),
        cmocka_unit_test(test_debate_agent1_verdict),
        cmocka_unit_test(test_debate_hard_agent2),
        cmocka_unit_test(test_debate_judge_agent),
        cmocka_unit_test(test_discussion_initial_review),
        cmocka_unit_test(test_discussion_hold_and_yield),
        cmocka_unit_test(test_discussion_latest_verdicts),
        cmocka_unit_test(test_sbs_replies_unchanged),
        cmocka_unit_test(test_pointwise_parse),
        cmocka_unit_test(test_pointwise_start_errors),
        cmocka_unit_test(test_pointwise_truth),
        cmocka_unit_test(test_pointwise_references),
        cmocka_unit_test(test_pointwise_recognition),
        cmocka_unit_test(test_pointwise_determinism),
        cmocka_unit_test(test_pointwise_noise_rate),
        cmocka_unit_test(test_pointwise_strict),
        cmocka_unit_test(test_pointwise_invalid),
        cmocka_unit_test(test_persona_parse),
        cmocka_unit_test(test_persona_exact),
        cmocka_unit_test(test_persona_recognition),
        cmocka_unit_test(test_persona_determinism),
        cmocka_unit_test(test_persona_shift_recovered),
        cmocka_unit_test(test_persona_position_bias),
        cmocka_unit_test(test_persona_invalid),
        cmocka_unit_test(test_pointwise_replies_unchanged),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return failed;
}
