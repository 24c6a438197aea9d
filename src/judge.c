/*
** judge.c -- the OpenAI-compatible chat-completions dialect: request bodies, call keys,
** reply parsing, the Authorization header and the endpoint URL; plus the defaults of the
** client and sampling parameters (METHODS §2.6).
**
** Invariants: a request body is canonical (compact JSON, keys sorted, reals printed with a
** fixed precision), so the same call always hashes to the same key and is never sent twice.
** Parsing a reply never fails on bad input: whatever the server sent, the caller gets either
** content or a one-line reason. The API key is read from the environment at the last moment,
** put in a header string and never stored, logged or hashed.
**
** This module does no I/O: the transfers are http.c's job, storage is store.c's.
*/
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack: hashing the key never allocates */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


#include <curl/curl.h>
#include <xxhash.h>
#ifdef ARB_HAVE_XXH_DISPATCH
/* XXH3 by the widest vector unit the CPU has (the library's dispatch): the same keys
** (test_judge pins one), about a third of the instructions on a 3.5 KB body. */
#include <xxh_x86dispatch.h>
#endif

/* Bodies are printed with ARB__JUDGE_DUMP_FLAGS: reals with 15 significant digits are enough
** to tell apart any value a user types (0.7 stays "0.7" rather than jansson's default 17-digit
** "0.69999999999999996"), and still a pure function of the double, so bodies stay canonical. */

arb_client_params arb_client_default_params(void)
{
    arb_client_params p = {0}; /* batch_export 0, batch_out NULL */
    p.jobs = 32;
    p.connect_timeout_ms = 10000;
    p.total_timeout_ms = 300000;
    p.max_retries = 6;
    p.backoff_base_ms = 500;
    p.backoff_max_ms = 60000;
    p.max_reply_bytes = (size_t)16 << 20;
    p.max_retry_wait_ms = 60000;
    p.budget_usd = 0;
    p.budget_tokens = 0;
    return p;
}

arb_sampling arb_sampling_default(void)
{
    arb_sampling s; /* the published SbS settings, METHODS §2.6 */
    s.max_tokens = 1024;
    s.temperature = 0.0;
    s.top_p = 0.1;
    s.frequency_penalty = 1.0;
    s.has_seed = 0;
    s.seed = 0;
    s.max_completion_tokens = 0;
    s.reasoning_effort = NULL;
    return s;
}

/* A JSON string of s. jansson refuses invalid UTF-8; rather than failing the whole call (and
** misreporting it as out of memory), each bad byte becomes U+FFFD. Returns NULL only when out
** of memory. */
static json_t *json_text(const char *s)
{
    size_t n = strlen(s), bad;
    if (arb__utf8_valid(s, n, &bad)) return json_stringn(s, n);
    arb__buf b;
    arb__buf_init(&b, 0);
    size_t i = 0;
    int failed = 0;
    while (!failed && i < n) {
        if (arb__utf8_valid(s + i, n - i, &bad)) {
            failed = arb__buf_append(&b, s + i, n - i) != 0;
            break;
        }
        failed = arb__buf_append(&b, s + i, bad) != 0 ||
                 arb__buf_append(&b, "\xEF\xBF\xBD", 3) != 0;
        i += bad + 1;
    }
    json_t *j = failed ? NULL : json_stringn(b.data ? b.data : "", b.len);
    arb__buf_free(&b);
    return j;
}

/* Sets key to a new value; returns 0, or -1 when value is NULL (allocation failed). */
static int set_new(json_t *obj, const char *key, json_t *value)
{
    return value ? json_object_set_new(obj, key, value) : -1;
}

static json_t *message(const char *role, const char *content)
{
    json_t *m = json_object();
    if (!m) return NULL;
    if (set_new(m, "role", json_string(role)) || set_new(m, "content", json_text(content))) {
        json_decref(m);
        return NULL;
    }
    return m;
}

/* The reference builder of the canonical body, through jansson. Used for text that is not
** valid UTF-8 (json_text repairs it); test_judge checks the fast writer below produces the
** same bytes for valid text. Returns the body (caller frees), or NULL when out of memory. */
char *arb__judge_request_body_reference(const arb_judge_config *judge, const char *system,
                                        const char *user, int rep, const char *response_format)
{
    const arb_sampling *s = &judge->sampling;
    char *out = NULL;
    json_t *root = json_object(), *messages = json_array();
    if (!root || !messages) {
        json_decref(messages);
        goto done;
    }
    if (set_new(root, "messages", messages)) goto done;
    if (set_new(root, "model", json_text(judge->model ? judge->model : ""))) goto done;
    if (system && json_array_append_new(messages, message("system", system))) goto done;
    if (json_array_append_new(messages, message("user", user ? user : ""))) goto done;
    if (judge->logprobs && set_new(root, "logprobs", json_true())) goto done;
    if (judge->logprobs && judge->top_logprobs > 0 &&
        set_new(root, "top_logprobs", json_integer(judge->top_logprobs)))
        goto done;
    if (s->max_tokens > 0 && set_new(root, "max_tokens", json_integer(s->max_tokens))) goto done;
    if (s->max_completion_tokens > 0 &&
        set_new(root, "max_completion_tokens", json_integer(s->max_completion_tokens)))
        goto done;
    if (s->reasoning_effort && set_new(root, "reasoning_effort", json_text(s->reasoning_effort)))
        goto done;
    if (response_format && judge->response_format) {
        json_t *schema = json_loads(response_format, 0, NULL), *rf = json_object();
        if (!schema || !rf || set_new(rf, "json_schema", schema) ||
            set_new(rf, "type", json_string("json_schema")) || set_new(root, "response_format", rf))
            goto done;
    }
    /* json_real rejects NAN and infinities; both mean "not sent". */
    if (isfinite(s->temperature) && set_new(root, "temperature", json_real(s->temperature)))
        goto done;
    if (isfinite(s->top_p) && set_new(root, "top_p", json_real(s->top_p))) goto done;
    if (isfinite(s->frequency_penalty) &&
        set_new(root, "frequency_penalty", json_real(s->frequency_penalty)))
        goto done;
    if (s->has_seed) {
        /* seed + rep so repetitions differ; wrap instead of overflowing (signed overflow is
        ** undefined) -- any fixed mapping keeps the body a function of the inputs. */
        long long seed = (long long)((unsigned long long)s->seed + (unsigned long long)rep);
        if (set_new(root, "seed", json_integer(seed))) goto done;
    }
    out = json_dumps(root, ARB__JUDGE_DUMP_FLAGS);
done:
    json_decref(root);
    return out;
}

/* Appends a real as jansson prints it with JSON_REAL_PRECISION(15): "%.15g", a ".0" when the
** text would read as an integer, no leading zeros or '+' in the exponent. Returns 0 or -1. */
static int put_json_real(arb__buf *b, double v)
{
    /* A judge's few sampling values recur in every body: their text is kept per thread (the
    ** last REAL_TEXTS values), since "%.15g" costs more than the rest of the body's numbers. */
    enum { REAL_TEXTS = 4 };
    static _Thread_local struct {
        uint64_t bits;
        int set;
        char text[40];
    } cache[REAL_TEXTS];
    static _Thread_local unsigned next;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < REAL_TEXTS; i++)
        if (cache[i].set && cache[i].bits == bits) return arb__buf_puts(b, cache[i].text);
    char text[40], out[40];
    snprintf(text, sizeof text, "%.15g", v);
    size_t o = 0;
    for (const char *p = text; *p;) {
        out[o++] = *p;
        if (*p++ == 'e') {
            if (*p == '+') p++;
            else if (*p == '-') out[o++] = *p++;
            while (*p == '0' && p[1]) p++;
        }
    }
    out[o] = '\0';
    if (!strpbrk(out, ".e") && o + 2 < sizeof out) strcat(out, ".0");
    unsigned slot = next++ % REAL_TEXTS;
    cache[slot].bits = bits;
    cache[slot].set = 1;
    memcpy(cache[slot].text, out, sizeof out);
    return arb__buf_puts(b, out);
}

/* The body up to and including "messages":[ -- the keys before "messages" in sorted order. */
static int put_body_head(arb__buf *b, const arb_judge_config *judge)
{
    const arb_sampling *s = &judge->sampling;
    int err = arb__buf_append(b, "{", 1);
    if (isfinite(s->frequency_penalty))
        err |= arb__buf_puts(b, "\"frequency_penalty\":") | put_json_real(b, s->frequency_penalty) |
               arb__buf_puts(b, ",");
    if (judge->logprobs) err |= arb__buf_puts(b, "\"logprobs\":true,");
    if (s->max_completion_tokens > 0)
        err |= arb__buf_puts(b, "\"max_completion_tokens\":") | arb__buf_put_int(b, s->max_completion_tokens) |
               arb__buf_puts(b, ",");
    if (s->max_tokens > 0)
        err |= arb__buf_puts(b, "\"max_tokens\":") | arb__buf_put_int(b, s->max_tokens) | arb__buf_puts(b, ",");
    return err | arb__buf_puts(b, "\"messages\":[");
}

/* The body from the end of the messages on: "model" (model_len bytes of valid UTF-8) and the
** keys after it in sorted order, and the closing brace. */
static int put_body_tail(arb__buf *b, const arb_judge_config *judge, const char *model,
                         size_t model_len, int rep, const char *response_format)
{
    const arb_sampling *s = &judge->sampling;
    int err = arb__buf_puts(b, "],\"model\":") | arb__buf_json_string(b, model, model_len);
    if (s->reasoning_effort) /* one of a few ASCII words (judges_file.c checks) */
        err |= arb__buf_puts(b, ",\"reasoning_effort\":") |
               arb__buf_json_string(b, s->reasoning_effort, strlen(s->reasoning_effort));
    if (response_format && judge->response_format)
        err |= arb__buf_puts(b, ",\"response_format\":{\"json_schema\":") |
               arb__buf_puts(b, response_format) | arb__buf_puts(b, ",\"type\":\"json_schema\"}");
    if (s->has_seed) /* seed + rep, wrapping as the reference builder does */
        err |= arb__buf_puts(b, ",\"seed\":") |
               arb__buf_put_int(b, (long long)((unsigned long long)s->seed + (unsigned long long)rep));
    if (isfinite(s->temperature))
        err |= arb__buf_puts(b, ",\"temperature\":") | put_json_real(b, s->temperature);
    if (judge->logprobs && judge->top_logprobs > 0)
        err |= arb__buf_puts(b, ",\"top_logprobs\":") | arb__buf_put_int(b, judge->top_logprobs);
    if (isfinite(s->top_p)) err |= arb__buf_puts(b, ",\"top_p\":") | put_json_real(b, s->top_p);
    return err | arb__buf_append(b, "}", 1);
}

/* Returns the canonical body (caller frees), or NULL when out of memory. Keys are written in
** sorted order by hand: frequency_penalty, logprobs, max_completion_tokens, max_tokens,
** messages, model, reasoning_effort, response_format, seed, temperature, top_logprobs, top_p;
** inside a message content before role. response_format (canonical JSON, see internal.h) is sent only to a judge that declares
** support for it. */
char *arb__judge_request_body(const arb_judge_config *judge, const char *system,
                              const char *user, int rep, const char *response_format)
{
    return arb__judge_request_body_counted(judge, system, user, rep, response_format, NULL);
}

/* Appends {"content":"text","role":"<role>"} (and a comma after the system message) with
** text's code points added to *chars. Returns 0, 1 when text is not valid UTF-8, or -1. */
static int put_message(arb__buf *b, const char *text, size_t len, int system, long long *chars)
{
    if (arb__buf_puts(b, "{\"content\":\"")) return -1;
    int rc = arb__buf_json_chars_counted(b, text, len, chars);
    if (rc) return rc;
    return arb__buf_puts(b, system ? "\",\"role\":\"system\"}," : "\",\"role\":\"user\"}") ? -1 : 0;
}

/* See internal.h. The texts are checked for UTF-8 while they are escaped (one pass each). */
char *arb__judge_request_body_counted(const arb_judge_config *judge, const char *system,
                                      const char *user, int rep, const char *response_format,
                                      long long *prompt_chars)
{
    const char *model = judge->model ? judge->model : "";
    if (!user) user = "";
    if (prompt_chars) *prompt_chars = -1;
    size_t model_len = strlen(model), user_len = strlen(user), system_len = system ? strlen(system) : 0;
    if (!arb__utf8_valid(model, model_len, NULL))
        return arb__judge_request_body_reference(judge, system, user, rep, response_format);
    arb__buf b;
    arb__buf_init(&b, 0);
    /* One allocation in the common case: the texts plus room for escapes and parameters. */
    size_t guess = model_len + user_len + system_len;
    long long chars = 0;
    int err = arb__buf_reserve(&b, guess + guess / 8 + 256) | put_body_head(&b, judge), rc = 0;
    if (!err && system) rc = put_message(&b, system, system_len, 1, &chars);
    if (!err && !rc) rc = put_message(&b, user, user_len, 0, &chars);
    if (!err && !rc) err = put_body_tail(&b, judge, model, model_len, rep, response_format);
    if (err || rc) {
        arb__buf_free(&b);
        /* a text that is not valid UTF-8: the reference builder repairs it */
        return err || rc < 0 ? NULL
                             : arb__judge_request_body_reference(judge, system, user, rep,
                                                                 response_format);
    }
    if (prompt_chars) *prompt_chars = chars;
    return arb__buf_steal(&b);
}

/* See internal.h. */
char *arb__judge_request_body_template(const arb_judge_config *judge, const arb_template *tpl,
                                       const arb_prompt_vars *vars, int rep,
                                       const char *response_format, arb__buf *scratch,
                                       size_t *body_len, long long *prompt_chars)
{
    const char *model = judge->model ? judge->model : "";
    size_t model_len = strlen(model);
    int fallback = !arb__utf8_valid(model, model_len, NULL), err = 0;
    long long chars = 0;
    if (prompt_chars) *prompt_chars = -1;
    arb__buf_reset(scratch);
    if (!fallback) {
        err = put_body_head(scratch, judge);
        for (int system = 1; !err && !fallback && system >= 0; system--) {
            if (system && !arb__template_has_system(tpl)) continue;
            err = arb__buf_puts(scratch, "{\"content\":\"");
            int rc = err ? 0 : arb__template_put_json(tpl, vars, system, scratch, &chars);
            if (rc < 0) err = 1;
            fallback = rc > 0; /* a value that is not valid UTF-8: the reference way repairs it */
            if (!err && !fallback)
                err = arb__buf_puts(scratch, system ? "\",\"role\":\"system\"}," : "\",\"role\":\"user\"}");
        }
        if (!err && !fallback) err = put_body_tail(scratch, judge, model, model_len, rep, response_format);
    }
    if (err) return NULL;
    if (fallback) {
        char *system = NULL, *user = NULL;
        if (arb_template_render(tpl, vars, &system, &user)) return NULL;
        char *body = arb__judge_request_body_counted(judge, system, user, rep, response_format,
                                                     prompt_chars);
        free(system);
        free(user);
        if (body && body_len) *body_len = strlen(body);
        return body;
    }
    /* The scratch buffer keeps its room for the next body; the body gets exactly its bytes. */
    char *body = malloc(scratch->len + 1);
    if (!body) return NULL;
    memcpy(body, scratch->data, scratch->len + 1);
    if (body_len) *body_len = scratch->len;
    if (prompt_chars) *prompt_chars = chars;
    return body;
}

/* Writes arb__hash_hex(body "\x1f" decimal(rep)) to out, computed by streaming so it cannot
** fail; test_judge checks it equals the one-shot hash of the concatenation. */
void arb__judge_call_key(const char *body, int rep, char out[33])
{
    arb__judge_call_key_len(body, strlen(body), rep, out);
}

/* See internal.h. */
void arb__judge_call_key_len(const char *body, size_t body_len, int rep, char out[33])
{
    char rep_text[24];
    size_t n = arb__decimal(rep_text, rep);
    XXH3_state_t state;
    XXH3_INITSTATE(&state);
    XXH3_128bits_reset(&state);
    XXH3_128bits_update(&state, body, body_len);
    XXH3_128bits_update(&state, "\x1f", 1);
    XXH3_128bits_update(&state, rep_text, n);
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(&state));
    static const char hex[] = "0123456789abcdef"; /* big-endian bytes, as arb__hash_hex */
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[canon.digest[i] >> 4];
        out[2 * i + 1] = hex[canon.digest[i] & 15];
    }
    out[32] = '\0';
}

static long long usage_count(json_t *usage, const char *key)
{
    json_t *v = json_object_get(usage, key);
    if (json_is_integer(v) && json_integer_value(v) >= 0) return json_integer_value(v);
    if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 9e18)
        return (long long)json_real_value(v);
    return -1;
}

static const char *json_kind(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "unknown";
}

/* The reason a server gave in {"error":{"message":...}} (OpenAI), {"error":"..."} or
** {"object":"error","message":...} (vLLM), as a new string; NULL when there is none. */
static char *server_error(json_t *root)
{
    json_t *err = json_object_get(root, "error");
    const char *msg = NULL;
    if (json_is_object(err)) {
        msg = json_string_value(json_object_get(err, "message"));
        if (!msg) msg = "(no message)";
    } else if (json_is_string(err)) {
        msg = json_string_value(err);
    } else if (err && !json_is_null(err)) {
        msg = "(no message)";
    }
    if (!msg) {
        const char *object = json_string_value(json_object_get(root, "object"));
        if (!object || strcmp(object, "error") != 0) return NULL;
        msg = json_string_value(json_object_get(root, "message"));
        if (!msg) msg = "(no message)";
    }
    return arb__sprintf("server error: %.500s", msg);
}

/* Appends the JSON string s with every NUL (a "\u0000" in the reply) replaced by U+FFFD,
** the character Unicode reserves for what cannot be represented: the stored text keeps its
** length and the rest of its content, and stays distinguishable from a model that wrote the
** six characters \u0000 itself. Returns 0, or -1 when out of memory. */
static int append_text(arb__buf *b, const json_t *s)
{
    const char *p = json_string_value(s);
    size_t n = json_string_length(s);
    if (arb__buf_reserve(b, n + 1)) return -1;
    for (;;) {
        const char *nul = memchr(p, '\0', n);
        size_t run = nul ? (size_t)(nul - p) : n;
        if (arb__buf_append(b, p, run)) return -1;
        if (!nul) return 0;
        if (arb__buf_append(b, "\xEF\xBF\xBD", 3)) return -1;
        p += run + 1;
        n -= run + 1;
    }
}

/* Concatenates the text parts of an array content ([{"type":"text","text":...}, ...]); parts
** of other types (images, refusals) are skipped. Returns 0, or -1 when out of memory; *text is
** NULL when there was no text part. */
static int join_parts(json_t *parts, char **text)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    size_t i;
    json_t *part;
    int any = 0;
    *text = NULL;
    json_array_foreach(parts, i, part) {
        const char *type = json_string_value(json_object_get(part, "type"));
        json_t *t = json_object_get(part, "text");
        if (json_is_string(part)) t = part; /* some servers send bare strings */
        else if (type && strcmp(type, "text") != 0) continue;
        if (!json_is_string(t)) continue;
        if (append_text(&b, t)) {
            arb__buf_free(&b);
            return -1;
        }
        any = 1;
    }
    if (any) {
        *text = arb__buf_steal(&b);
        if (!*text) return -1;
    }
    arb__buf_free(&b);
    return 0;
}

/* The first occurrence of tag (lower case ASCII) in text[0..n), ignoring ASCII case; NULL when
** none. */
static const char *find_tag(const char *text, size_t n, const char *tag)
{
    size_t k = strlen(tag);
    for (size_t i = 0; i + k <= n; i++) {
        if (text[i] != '<') continue;
        size_t j = 1;
        while (j < k && (text[i + j] | (text[i + j] >= 'A' && text[i + j] <= 'Z' ? 0x20 : 0)) == tag[j])
            j++;
        if (j == k) return text + i;
    }
    return NULL;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Appends text[b, e) trimmed of white space to a thinking buffer, a blank line between parts. */
static int add_thought(arb__buf *t, const char *text, size_t b, size_t e)
{
    while (b < e && is_space(text[b])) b++;
    while (e > b && is_space(text[e - 1])) e--;
    if (b == e) return 0;
    if (t->len && arb__buf_puts(t, "\n\n")) return -1;
    return arb__buf_append(t, text + b, e - b);
}

/* See internal.h. */
int arb__judge_split_thinking(const char *text, char **answer, char **thinking)
{
    static const char open_tag[] = "<think>", close_tag[] = "</think>";
    const size_t lo = sizeof open_tag - 1, lc = sizeof close_tag - 1;
    size_t n = strlen(text);
    arb__buf a, t;
    arb__buf_init(&a, 0);
    arb__buf_init(&t, 0);
    *answer = *thinking = NULL;
    int err = 0, found = 0;
    size_t pos = 0;
    /* A "</think>" before any "<think>": the opening tag was in the prompt. */
    const char *first_open = find_tag(text, n, open_tag);
    const char *first_close = find_tag(text, n, close_tag);
    if (first_close && (!first_open || first_close < first_open)) {
        err |= add_thought(&t, text, 0, (size_t)(first_close - text));
        pos = (size_t)(first_close - text) + lc;
        found = 1;
    }
    while (!err && pos < n) {
        const char *o = find_tag(text + pos, n - pos, open_tag);
        if (!o) {
            err |= arb__buf_append(&a, text + pos, n - pos);
            break;
        }
        size_t ob = (size_t)(o - text);
        err |= arb__buf_append(&a, text + pos, ob - pos);
        found = 1;
        const char *c = find_tag(text + ob + lo, n - ob - lo, close_tag);
        size_t ce = c ? (size_t)(c - text) : n; /* unclosed: the reply was cut while thinking */
        err |= add_thought(&t, text, ob + lo, ce);
        pos = c ? ce + lc : n;
    }
    if (!err && !found) { /* no thinking: the answer is the whole text */
        arb__buf_free(&a);
        arb__buf_free(&t);
        *answer = arb__strndup(text, n);
        return *answer ? 0 : -1;
    }
    if (!err) {
        size_t b = 0, e = a.len; /* trim what the removed blocks left around the answer */
        while (b < e && is_space(a.data[b])) b++;
        while (e > b && is_space(a.data[e - 1])) e--;
        *answer = arb__strndup(a.data ? a.data + b : "", e - b);
        /* an empty block (<think></think>, as Qwen3 writes with thinking off) is no thinking */
        if (t.len && !(*thinking = arb__strndup(t.data, t.len))) err = 1;
        if (!*answer) err = 1;
    }
    arb__buf_free(&a);
    arb__buf_free(&t);
    if (err) {
        free(*answer);
        free(*thinking);
        *answer = *thinking = NULL;
        return -1;
    }
    return 0;
}

/* The thinking a message carries in a field of its own: reasoning_content (vLLM, DeepSeek) and
** reasoning (OpenRouter, Ollama, ...), both when they differ, a blank line between. Returns 0,
** or -1 when out of memory; *out NULL when there is none. */
static int message_reasoning(json_t *msg, char **out)
{
    static const char *const fields[] = {"reasoning_content", "reasoning"};
    arb__buf b;
    arb__buf_init(&b, 0);
    const char *first = NULL;
    *out = NULL;
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        json_t *v = json_object_get(msg, fields[i]);
        if (!json_is_string(v) || !json_string_length(v)) continue;
        if (first && !strcmp(first, json_string_value(v))) continue;
        if ((b.len && arb__buf_puts(&b, "\n\n")) || append_text(&b, v)) {
            arb__buf_free(&b);
            return -1;
        }
        first = json_string_value(v);
    }
    if (b.len && !(*out = arb__buf_steal(&b))) return -1;
    arb__buf_free(&b);
    return 0;
}

/* Moves the thinking of r->content (<think> blocks) to r->reasoning, after the thinking of the
** message's own fields. Returns 0 or -1 when out of memory. */
static int take_thinking(arb__judge_reply *r)
{
    /* no '<', no tag: the content stays as it is (not copied again) */
    if (!strchr(r->content, '<')) return 0;
    char *answer = NULL, *thinking = NULL;
    if (arb__judge_split_thinking(r->content, &answer, &thinking)) return -1;
    free(r->content);
    r->content = answer;
    if (!thinking) return 0;
    if (!r->reasoning) {
        r->reasoning = thinking;
        return 0;
    }
    char *both = arb__sprintf("%s\n\n%s", r->reasoning, thinking);
    free(thinking);
    if (!both) return -1;
    free(r->reasoning);
    r->reasoning = both;
    return 0;
}

/* See internal.h. The reading of every reply; read_plain_reply below gives the same for the
** usual ones, faster. */
int arb__judge_parse_reply_reference(const char *body, size_t len, arb__judge_reply *out)
{
    out->content = NULL;
    out->reasoning = NULL;
    out->error = NULL;
    out->prompt_tokens = -1;
    out->completion_tokens = -1;
    out->reasoning_tokens = -1;
    out->cached_tokens = -1;
    out->logprobs = NULL;
    json_error_t jerr;
    json_t *root = NULL;
    int rc = 0;

    if (!body || len == 0) {
        out->error = arb__strdup("malformed reply: empty body");
        goto done;
    }
    /* A "\u0000" in a string is valid JSON: accepted, and the NUL becomes U+FFFD when the
    ** text is taken out (text_of), so content stays a C string that is neither truncated nor
    ** refused (which would send the call again on every run). */
    root = json_loadb(body, len, JSON_ALLOW_NUL, &jerr);
    if (!root) {
        out->error = arb__sprintf("malformed reply: invalid JSON at position %d: %s",
                                  jerr.position, jerr.text);
        goto done;
    }
    if (!json_is_object(root)) {
        out->error = arb__sprintf("malformed reply: top level is %s, expected an object",
                                  json_kind(root));
        goto done;
    }
    json_t *usage = json_object_get(root, "usage");
    if (json_is_object(usage)) {
        out->prompt_tokens = usage_count(usage, "prompt_tokens");
        out->completion_tokens = usage_count(usage, "completion_tokens");
        json_t *details = json_object_get(usage, "completion_tokens_details");
        if (json_is_object(details)) out->reasoning_tokens = usage_count(details, "reasoning_tokens");
        details = json_object_get(usage, "prompt_tokens_details");
        if (json_is_object(details)) out->cached_tokens = usage_count(details, "cached_tokens");
    }
    char *server_msg = server_error(root);
    if (server_msg) {
        out->error = server_msg;
        goto done;
    }
    json_t *choices = json_object_get(root, "choices");
    if (!json_is_array(choices) || json_array_size(choices) == 0) {
        out->error = arb__strdup("reply has no choices");
        goto done;
    }
    json_t *choice = json_array_get(choices, 0);
    json_t *msg = json_object_get(choice, "message");
    if (!json_is_object(msg)) {
        out->error = arb__strdup("reply has no message in choices[0]");
        goto done;
    }
    if (message_reasoning(msg, &out->reasoning)) {
        rc = -1;
        goto done;
    }
    json_t *content = json_object_get(msg, "content");
    if (json_is_string(content)) {
        arb__buf b;
        arb__buf_init(&b, 0);
        if (append_text(&b, content) || !(out->content = arb__buf_steal(&b))) rc = -1;
        arb__buf_free(&b);
    } else if (json_is_array(content)) {
        if (join_parts(content, &out->content)) rc = -1;
        else if (!out->content) out->error = arb__strdup("reply content has no text parts");
    } else if (out->reasoning && (!content || json_is_null(content))) {
        /* A reasoning model cut (or stopped) while thinking: a reply with no answer, so verdict
        ** E, and its thinking is kept; sending it again would cut it again. */
        if (!(out->content = arb__strdup(""))) rc = -1;
    } else {
        const char *finish = json_string_value(json_object_get(choice, "finish_reason"));
        const char *refusal = json_string_value(json_object_get(msg, "refusal"));
        if (refusal)
            out->error = arb__sprintf("reply refused: %.500s", refusal);
        else if (finish)
            out->error = arb__sprintf("reply content is %s (finish_reason %.100s)",
                                      content ? json_kind(content) : "missing", finish);
        else
            out->error = arb__sprintf("reply content is %s",
                                      content ? json_kind(content) : "missing");
    }
    if (rc == 0 && out->content && take_thinking(out)) rc = -1;
    /* The token logprobs (logprobs.content), kept whole: the verdict's token is found in them
    ** once the protocol's parser has placed the verdict (logprobs.c). An endpoint that ignores
    ** logprobs: true sends none, or null: that is "no logprobs", never zeros. */
    json_t *tokens = json_object_get(json_object_get(choice, "logprobs"), "content");
    if (rc == 0 && out->content && json_is_array(tokens)) out->logprobs = json_incref(tokens);
done:
    json_decref(root);
    if (rc == 0 && !out->content && !out->error) rc = -1; /* an error string failed to allocate */
    if (rc != 0) arb__judge_reply_free(out);
    return rc;
}

/* ---- replies of the usual shape, read without jansson ------------------------------------- */

/* Building jansson's tree of a reply cost ~60,000 instructions a call (~190 per byte: its lexer
** copies byte by byte), the largest part of the harness's own work per call. A reply of the
** shape OpenAI-compatible servers send for a successful call is read here instead, taking only
** what arb__judge_parse_reply_reference takes from it: an object whose members are strings,
** integers, true, false or null, but for "choices" (an array of objects of such members, whose
** "message" is an object of such members and whose "logprobs" is null) and "usage" (an object
** of such members and objects of them). Anything else -- an error, a refusal, a content that is
** not a string, logprobs, a real number, \u0000, a field it reads given twice, invalid UTF-8,
** other nesting -- is left to the reference, so every reply gets the reference's reading
** (test_judge and fuzz_reply compare the two). */

typedef struct plain_str {
    const char *raw;   /* the text in the body (no escape in it), or NULL: decoded at `at` */
    long at;           /* offset in plain_reply.strings when decoded */
    size_t len;
    int state;         /* -2 while not seen, -1 not a string, 1 a string */
} plain_str;

typedef struct plain_reply {
    const char *p, *end;
    arb__buf strings;  /* strings with escapes, decoded, each NUL-terminated */
    plain_str last;    /* the string plain_scalar read last */
    /* -2 while not seen: a field given twice is left to the reference (jansson keeps the last) */
    long long prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens;
    plain_str content, reasoning_content, reasoning;
    int choices, usage, message, error, object, completion_details, prompt_details;
} plain_reply;

enum { PLAIN_STRING, PLAIN_INTEGER, PLAIN_NULL, PLAIN_BOOLEAN };

#define PLAIN_KEY_IS(k, n, lit) ((n) == sizeof(lit) - 1 && !memcmp((k), (lit), sizeof(lit) - 1))

static const char *plain_str_text(const plain_reply *r, const plain_str *s)
{
    return s->raw ? s->raw : r->strings.data + s->at;
}

static void plain_ws(plain_reply *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

/* The first '"', '\\' or control character (below 0x20) from p on, or end; *high is set when a
** byte before it is not ASCII. Sixteen bytes at a time: a reply's strings are mostly plain. */
static const char *plain_scan(const char *p, const char *end, int *high)
{
    unsigned hi = 0;
#if defined(__SSE2__)
    while (end - p >= 16) {
        unsigned h, mask = arb__json_special16(p, &h);
        if (mask) {
            hi |= h & ((mask & -mask) - 1);
            *high = hi != 0;
            return p + __builtin_ctz(mask);
        }
        hi |= h;
        p += 16;
    }
#endif
    for (; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\' || c < 0x20) break;
        hi |= c & 0x80;
    }
    *high = hi != 0;
    return p;
}

/* Reads the string at r->p (its opening quote) into *s: a view of the body when it has no
** escape, else decoded into r->strings. Its bytes must be valid UTF-8 (the reference refuses
** the whole reply otherwise). Returns 0, or -1. */
static int plain_string(plain_reply *r, plain_str *s)
{
    const char *open = r->p;
    int high;
    const char *q = plain_scan(open + 1, r->end, &high);
    if (q >= r->end) return -1;
    if (*q == '"') {
        if (high && !arb__utf8_valid(open + 1, (size_t)(q - open - 1), NULL)) return -1;
        *s = (plain_str){open + 1, 0, (size_t)(q - open - 1), 1};
        r->p = q + 1;
        return 0;
    }
    if (*q != '\\') return -1; /* a control character */
    size_t at = r->strings.len;
    const char *after = arb__json_decode_string(open, r->end, &r->strings);
    if (!after || !arb__utf8_valid(open + 1, (size_t)(after - open - 2), NULL)) return -1;
    *s = (plain_str){NULL, (long)at, r->strings.len - at - 1, 1};
    r->p = after;
    return 0;
}

/* Reads a string, an integer, true, false or null at r->p. Returns its kind (a string in
** r->last, an integer's value in *n), or -1 for anything else. */
static int plain_scalar(plain_reply *r, long long *n)
{
    const char *p = r->p;
    if (p >= r->end) return -1;
    switch (*p) {
    case '"': return plain_string(r, &r->last) ? -1 : PLAIN_STRING;
    case 'n':
        if (r->end - p < 4 || memcmp(p, "null", 4)) return -1;
        r->p = p + 4;
        return PLAIN_NULL;
    case 't':
        if (r->end - p < 4 || memcmp(p, "true", 4)) return -1;
        r->p = p + 4;
        return PLAIN_BOOLEAN;
    case 'f':
        if (r->end - p < 5 || memcmp(p, "false", 5)) return -1;
        r->p = p + 5;
        return PLAIN_BOOLEAN;
    default: break;
    }
    /* JSON's integers only: no leading zero, no fraction or exponent (reals are the
    ** reference's), and few enough digits to fit */
    const char *d = p + (*p == '-');
    size_t digits = 0;
    long long v = 0;
    while (d + digits < r->end && d[digits] >= '0' && d[digits] <= '9') {
        if (digits == 18) return -1; /* checked before the digit is added: 19 may overflow */
        v = v * 10 + (d[digits] - '0');
        digits++;
    }
    if (!digits || (d[0] == '0' && digits > 1)) return -1;
    const char *after = d + digits;
    if (after < r->end && (*after == '.' || *after == 'e' || *after == 'E')) return -1;
    *n = *p == '-' ? -v : v;
    r->p = after;
    return PLAIN_INTEGER;
}

static int plain_skip_scalar(plain_reply *r)
{
    long long n;
    return plain_scalar(r, &n) < 0 ? -1 : 0;
}

/* Reads one member's value; key[0..key_len) is its name as the body spells it. */
typedef int (*plain_member_fn)(plain_reply *r, const char *key, size_t key_len, void *ud);

/* Reads the object at r->p, each member's value through fn. A name with an escape in it is
** left to the reference (servers never write one; it would have to be decoded to be matched).
** Returns 0, or -1 to leave the reply to the reference. */
static int plain_object(plain_reply *r, plain_member_fn fn, void *ud)
{
    if (r->p >= r->end || *r->p != '{') return -1;
    r->p++;
    plain_ws(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return 0;
    }
    for (;;) {
        plain_ws(r);
        if (r->p >= r->end || *r->p != '"') return -1;
        int high;
        const char *key = r->p + 1, *q = plain_scan(key, r->end, &high);
        if (q >= r->end || *q != '"' || (high && !arb__utf8_valid(key, (size_t)(q - key), NULL)))
            return -1;
        r->p = q + 1;
        plain_ws(r);
        if (r->p >= r->end || *r->p++ != ':') return -1;
        plain_ws(r);
        if (fn(r, key, (size_t)(q - key), ud)) return -1;
        plain_ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == '}') {
            r->p++;
            return 0;
        }
        return -1;
    }
}

/* A usage count, as usage_count() reads it: a non-negative integer, else -1. */
static int plain_count(plain_reply *r, long long *n)
{
    long long v = 0;
    int kind = plain_scalar(r, &v);
    if (kind < 0 || *n != -2) return -1;
    *n = kind == PLAIN_INTEGER && v >= 0 ? v : -1;
    return 0;
}

/* Members of usage.*_details: ud names the field read and where its count goes. */
typedef struct plain_field {
    const char *name;
    size_t name_len;
    long long *count;
} plain_field;

static int plain_detail_member(plain_reply *r, const char *key, size_t key_len, void *ud)
{
    const plain_field *f = ud;
    return key_len == f->name_len && !memcmp(key, f->name, key_len) ? plain_count(r, f->count)
                                                                     : plain_skip_scalar(r);
}

static int plain_usage_member(plain_reply *r, const char *key, size_t key_len, void *ud)
{
    (void)ud;
    if (PLAIN_KEY_IS(key, key_len, "prompt_tokens")) return plain_count(r, &r->prompt_tokens);
    if (PLAIN_KEY_IS(key, key_len, "completion_tokens")) return plain_count(r, &r->completion_tokens);
    int completion = PLAIN_KEY_IS(key, key_len, "completion_tokens_details");
    if (!completion && !PLAIN_KEY_IS(key, key_len, "prompt_tokens_details"))
        return plain_skip_scalar(r);
    if (completion ? r->completion_details++ : r->prompt_details++) return -1;
    if (r->p >= r->end || *r->p != '{') return plain_skip_scalar(r); /* not an object: no count */
    plain_field f = {completion ? "reasoning_tokens" : "cached_tokens", completion ? 16 : 13,
                     completion ? &r->reasoning_tokens : &r->cached_tokens};
    return plain_object(r, plain_detail_member, &f);
}

static int plain_message_member(plain_reply *r, const char *key, size_t key_len, void *ud)
{
    (void)ud;
    plain_str *slot = PLAIN_KEY_IS(key, key_len, "content")             ? &r->content
                      : PLAIN_KEY_IS(key, key_len, "reasoning_content") ? &r->reasoning_content
                      : PLAIN_KEY_IS(key, key_len, "reasoning")         ? &r->reasoning
                                                                        : NULL;
    long long n;
    int kind = plain_scalar(r, &n);
    if (kind < 0 || (slot && slot->state != -2)) return -1;
    if (slot) {
        if (kind == PLAIN_STRING) *slot = r->last;
        else slot->state = -1;
    }
    return 0;
}

/* Members of a choice; ud is non-NULL for choices[0], the one read. */
static int plain_choice_member(plain_reply *r, const char *key, size_t key_len, void *ud)
{
    if (PLAIN_KEY_IS(key, key_len, "logprobs")) {
        long long n;
        return plain_scalar(r, &n) == PLAIN_NULL ? 0 : -1;
    }
    if (!PLAIN_KEY_IS(key, key_len, "message")) return plain_skip_scalar(r);
    if (!ud) return plain_object(r, plain_message_member, NULL) ? -1 : 0;
    if (r->message++) return -1;
    return plain_object(r, plain_message_member, NULL);
}

static int plain_choices(plain_reply *r)
{
    if (r->choices++ || r->p >= r->end || *r->p != '[') return -1;
    r->p++;
    for (int i = 0;; i++) {
        plain_ws(r);
        /* other choices' message fields would overwrite the first's: read them as such, but
        ** keep the first's (a copy of the slots) */
        plain_str content = r->content, rc = r->reasoning_content, rs = r->reasoning;
        if (plain_object(r, plain_choice_member, i == 0 ? r : NULL)) return -1; /* [] too */
        if (i > 0) r->content = content, r->reasoning_content = rc, r->reasoning = rs;
        plain_ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == ']') {
            r->p++;
            return 0;
        }
        return -1;
    }
}

static int plain_top_member(plain_reply *r, const char *key, size_t key_len, void *ud)
{
    (void)ud;
    if (PLAIN_KEY_IS(key, key_len, "choices")) return plain_choices(r);
    if (PLAIN_KEY_IS(key, key_len, "usage")) {
        if (r->usage++) return -1;
        return r->p < r->end && *r->p == '{' ? plain_object(r, plain_usage_member, NULL)
                                             : plain_skip_scalar(r);
    }
    int error = PLAIN_KEY_IS(key, key_len, "error"), object = PLAIN_KEY_IS(key, key_len, "object");
    long long n;
    int kind = plain_scalar(r, &n);
    if (kind < 0) return -1;
    /* a server's error ({"error": ...} not null, or "object": "error") is the reference's */
    if (error && (r->error++ || kind != PLAIN_NULL)) return -1;
    if (object && (r->object++ || (kind == PLAIN_STRING && r->last.len == 5 &&
                                   !memcmp(plain_str_text(r, &r->last), "error", 5))))
        return -1;
    return 0;
}

/* A copy of s as a C string (NULL when out of memory). */
static char *plain_copy(const plain_reply *r, const plain_str *s)
{
    char *c = malloc(s->len + 1);
    if (!c) return NULL;
    if (s->len) memcpy(c, plain_str_text(r, s), s->len);
    c[s->len] = '\0';
    return c;
}

/* Reads a reply of the usual shape into out (cleared first, as the reference does). Returns 1
** when it did, 0 to leave the reply to the reference, -1 when out of memory (out cleared).
** One pass over the body; a string is copied only when it is kept (content, reasoning) or has
** an escape; the body's UTF-8 is checked only inside strings (elsewhere a byte that is not
** ASCII is not JSON, so the reply goes to the reference anyway). */
static int read_plain_reply(const char *body, size_t len, arb__judge_reply *out)
{
    if (!body || !len) return 0;
    const plain_str unseen = {NULL, 0, 0, -2};
    plain_reply r = {.p = body, .end = body + len, .prompt_tokens = -2, .completion_tokens = -2,
                     .reasoning_tokens = -2, .cached_tokens = -2, .content = unseen,
                     .reasoning_content = unseen, .reasoning = unseen};
    arb__buf_init(&r.strings, 0);
    plain_ws(&r);
    int read = !plain_object(&r, plain_top_member, NULL); /* on failure r.p may be anywhere */
    if (read) plain_ws(&r);
    if (!read || r.p != r.end || !r.message || r.content.state != 1) {
        arb__buf_free(&r.strings);
        return 0;
    }
    memset(out, 0, sizeof *out);
    out->prompt_tokens = r.prompt_tokens < 0 ? -1 : r.prompt_tokens;
    out->completion_tokens = r.completion_tokens < 0 ? -1 : r.completion_tokens;
    out->reasoning_tokens = r.reasoning_tokens < 0 ? -1 : r.reasoning_tokens;
    out->cached_tokens = r.cached_tokens < 0 ? -1 : r.cached_tokens;
    /* message_reasoning: reasoning_content, then reasoning when it differs (empty ones are
    ** none; a string holds no NUL, so comparing lengths and bytes is strcmp) */
    const plain_str *first = r.reasoning_content.state == 1 && r.reasoning_content.len
                                 ? &r.reasoning_content : NULL;
    const plain_str *second = r.reasoning.state == 1 && r.reasoning.len ? &r.reasoning : NULL;
    int rc = 0;
    if (first && second && (first->len != second->len ||
                            memcmp(plain_str_text(&r, first), plain_str_text(&r, second), first->len))) {
        char *both = malloc(first->len + 2 + second->len + 1);
        if (both) {
            memcpy(both, plain_str_text(&r, first), first->len);
            memcpy(both + first->len, "\n\n", 2);
            memcpy(both + first->len + 2, plain_str_text(&r, second), second->len);
            both[first->len + 2 + second->len] = '\0';
        }
        rc |= !(out->reasoning = both);
    } else if (first || second) {
        rc |= !(out->reasoning = plain_copy(&r, first ? first : second));
    }
    rc |= !(out->content = plain_copy(&r, &r.content));
    arb__buf_free(&r.strings);
    if (rc || take_thinking(out)) {
        arb__judge_reply_free(out);
        return -1;
    }
    return 1;
}

/* See internal.h. */
int arb__judge_parse_reply(const char *body, size_t len, arb__judge_reply *out)
{
    int read = read_plain_reply(body, len, out);
    if (read) return read > 0 ? 0 : -1;
    return arb__judge_parse_reply_reference(body, len, out);
}

/* See internal.h. A broken body (a reply without a usable message) is a transport failure,
** not a judgment: it is kept with its error and raw text so that a later run sends it again. */
int arb__judge_take_reply(const char *body, size_t len, const arb_price *price,
                          const struct arb__verdict_spec *spec, arb__reply_record *out)
{
    memset(out, 0, sizeof *out);
    out->prompt_tokens = out->completion_tokens = out->reasoning_tokens = out->cached_tokens = -1;
    out->cost_usd = NAN;
    arb__judge_reply reply;
    if (arb__judge_parse_reply(body, len, &reply)) return -1;
    out->prompt_tokens = reply.prompt_tokens;
    out->completion_tokens = reply.completion_tokens;
    out->reasoning_tokens = reply.reasoning_tokens;
    out->cached_tokens = reply.cached_tokens;
    out->cost_usd = arb__judge_call_cost(price, reply.prompt_tokens, reply.completion_tokens,
                                         reply.cached_tokens);
    int bad = 0;
    if (reply.error) {
        out->error = reply.error;
        reply.error = NULL;
        bad = !(out->raw_reply = arb__strndup(body, len));
    } else {
        out->ok = 1;
        out->content = reply.content;
        out->reasoning = reply.reasoning;
        reply.content = reply.reasoning = NULL;
        bad = spec && arb__logprobs_verdict(reply.logprobs, out->content, spec, &out->logprobs);
    }
    arb__judge_reply_free(&reply);
    if (bad) arb__reply_record_free(out);
    return bad ? -1 : 0;
}

/* Frees a reply record's texts (the numbers stay). */
void arb__reply_record_free(arb__reply_record *r)
{
    free(r->content);
    free(r->reasoning);
    free(r->logprobs);
    free(r->error);
    free(r->raw_reply);
    r->content = r->reasoning = r->logprobs = r->error = r->raw_reply = NULL;
}

/* Frees what a parse allocated and clears r; accepts a cleared reply. */
void arb__judge_reply_free(arb__judge_reply *r)
{
    if (!r) return;
    free(r->content);
    free(r->reasoning);
    free(r->error);
    json_decref(r->logprobs);
    r->logprobs = NULL;
    r->content = r->reasoning = r->error = NULL;
    r->prompt_tokens = -1;
    r->completion_tokens = -1;
    r->reasoning_tokens = -1;
    r->cached_tokens = -1;
}

/* See internal.h. OpenAI's usage: prompt_tokens include the cached ones
** (prompt_tokens_details.cached_tokens), completion_tokens include the reasoning ones
** (completion_tokens_details.reasoning_tokens), which are billed as output. A cached count
** above the prompt count (a server's mistake) is capped to it. */
double arb__judge_call_cost(const arb_price *price, long long prompt_tokens,
                            long long completion_tokens, long long cached_tokens)
{
    if (!price || !price->known || prompt_tokens < 0 || completion_tokens < 0) return NAN;
    long long cached = cached_tokens < 0 ? 0 : cached_tokens > prompt_tokens ? prompt_tokens
                                                                             : cached_tokens;
    double cached_price = isnan(price->cached_input_per_mtok) ? price->input_per_mtok
                                                              : price->cached_input_per_mtok;
    return ((double)(prompt_tokens - cached) * price->input_per_mtok +
            (double)cached * cached_price + (double)completion_tokens * price->output_per_mtok) /
           1e6;
}

/* See internal.h. */
arb_price arb__price_through_batch(const arb_price *price)
{
    arb_price p = *price;
    double keep = 1.0 - (price->batch_discount > 0 ? price->batch_discount : 0.0);
    p.input_per_mtok *= keep;
    p.output_per_mtok *= keep;
    if (!isnan(p.cached_input_per_mtok)) p.cached_input_per_mtok *= keep;
    p.batch_discount = 0;
    return p;
}

/* See internal.h. */
long long arb__judge_estimate_prompt_tokens(const char *system, const char *user)
{
    size_t points = (system ? arb__utf8_codepoints(system, strlen(system)) : 0) +
                    (user ? arb__utf8_codepoints(user, strlen(user)) : 0);
    return (long long)((points + 3) / 4) + 4 * (system ? 2 : 1);
}

/* Clears a string that may hold the key before its memory is released (volatile: not
** optimised away). */
static void wipe_free(char *s)
{
    if (!s) return;
    for (volatile char *p = s; *p; p++) *p = 0;
    free(s);
}

/* The key held by the variable env_name: *key points into the environment, *n is its length
** without surrounding spaces and tabs. Returns NULL when it is usable, else why not (a static
** phrase that never quotes the value): unset, empty, or holding a control character -- a CR or
** LF would inject a header line, and dropping the header would send the request without a key. */
static const char *key_from_env(const char *env_name, const char **key, size_t *n)
{
    const char *k = getenv(env_name);
    if (!k) return "is not set";
    while (*k == ' ' || *k == '\t') k++;
    size_t len = strlen(k);
    while (len > 0 && (k[len - 1] == ' ' || k[len - 1] == '\t')) len--;
    if (len == 0) return "is empty";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)k[i];
        if (c < 0x20 || c == 0x7f)
            return c == '\r' || c == '\n' ? "holds a line break (CR or LF)"
                                          : "holds a control character";
    }
    *key = k;
    *n = len;
    return NULL;
}

/* Returns "Authorization: Bearer <key>" (caller frees), or NULL when env_name is NULL or
** empty, the variable's key is unusable (see key_from_env; arb__judge_check refuses such a
** judge before a run) or out of memory. Spaces and tabs around the key are trimmed. */
char *arb__judge_auth_header(const char *env_name)
{
    const char *key;
    size_t n;
    if (!env_name || !*env_name || key_from_env(env_name, &key, &n)) return NULL;
    return arb__sprintf("Authorization: Bearer %.*s", (int)n, key);
}

/* Keys shorter than this are placeholders that local servers accept ("EMPTY", "none", "x"), not
** secrets; replacing them in replies would corrupt judgments (a key "A" would erase verdicts). */
#define ARB__REDACT_MIN_KEY 8

/* Replaces every occurrence of the key held by env_name in *text (may be NULL) with
** "[REDACTED]"; a new string then replaces *text. Nothing happens when there is no usable key
** or the key is shorter than ARB__REDACT_MIN_KEY characters.
** Returns 0, or -1 when out of memory (*text is then freed and NULL: nothing is better than
** the key). */
int arb__judge_redact_key(const char *env_name, char **text)
{
    static const char marker[] = "[REDACTED]";
    const char *key;
    size_t n;
    if (!*text || !env_name || !*env_name || key_from_env(env_name, &key, &n) ||
        n < ARB__REDACT_MIN_KEY)
        return 0;
    char *needle = arb__strndup(key, n);
    if (!needle) goto fail;
    const char *hit = strstr(*text, needle);
    if (!hit) {
        wipe_free(needle);
        return 0;
    }
    arb__buf b;
    arb__buf_init(&b, 0);
    const char *p = *text;
    int failed = 0;
    for (; hit && !failed; hit = strstr(p, needle)) {
        failed = arb__buf_append(&b, p, (size_t)(hit - p)) ||
                 arb__buf_append(&b, marker, sizeof marker - 1);
        p = hit + n;
    }
    failed = failed || arb__buf_puts(&b, p);
    wipe_free(needle);
    if (failed) {
        arb__buf_free(&b);
        goto fail;
    }
    wipe_free(*text);
    *text = arb__buf_steal(&b);
    return *text ? 0 : -1;
fail:
    wipe_free(*text);
    *text = NULL;
    return -1;
}

/* Refuses (ARB_INVALID, message in s) a judge that cannot be sent to: a URL (base_url or any
** of endpoints) that arb__url_problem() rejects, or a key variable that is unset, empty or
** holds control characters. The URL is checked when given (a dry run needs none), the key only when the
** run sends (dry_run 0). Messages name the judge and the variable, never the URL or the key. */
arb_status arb__judge_check(arb_store *s, const arb_judge_config *judge, int dry_run)
{
    const char *name = judge->name && *judge->name ? judge->name : judge->model ? judge->model : "?";
    const char *problem;
    if (judge->base_url && *judge->base_url && (problem = arb__url_problem(judge->base_url)))
        return arb__store_fail(s, ARB_INVALID, "judge \"%s\": the URL (--judge-url, or url in a "
                               "judges file) %s", name, problem);
    for (size_t i = 0; i < judge->n_endpoints; i++)
        if (!judge->endpoints || !judge->endpoints[i] ||
            (problem = arb__url_problem(judge->endpoints[i])))
            return arb__store_fail(s, ARB_INVALID, "judge \"%s\": endpoint %zu (endpoints in a "
                                   "judges file): the URL %s", name, i + 1,
                                   judge->endpoints && judge->endpoints[i] ? problem
                                                                           : "is missing");
    if (dry_run || !judge->api_key_env || !*judge->api_key_env) return ARB_OK;
    const char *key;
    size_t n;
    if ((problem = key_from_env(judge->api_key_env, &key, &n)))
        return arb__store_fail(s, ARB_INVALID,
                               "judge \"%s\": environment variable %s (--api-key-env, or "
                               "api_key_env in a judges file) %s; nothing was sent", name,
                               judge->api_key_env, problem);
    return ARB_OK;
}

/* Returns base_url + "/chat/completions" (caller frees): trailing slashes of the path are
** dropped first, and a path that already ends in "/chat/completions" is used as is. A query
** (e.g. ?api-version=...) stays after the path, which libcurl's URL API places. NULL when
** base_url is NULL or out of memory. */
char *arb__judge_url(const char *base_url)
{
    static const char suffix[] = "/chat/completions";
    if (!base_url) return NULL;
    CURLU *u = NULL;
    char *path = NULL, *out = NULL;
    const char *text = base_url;
    size_t n = strlen(base_url);
    if (strpbrk(base_url, "?#") && (u = curl_url()) &&
        curl_url_set(u, CURLUPART_URL, base_url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK) {
        text = path;
        n = strlen(path);
    }
    while (n > 0 && text[n - 1] == '/') n--;
    size_t sl = sizeof suffix - 1;
    char *joined = n >= sl && memcmp(text + n - sl, suffix, sl) == 0
                       ? arb__strndup(text, n)
                       : arb__sprintf("%.*s%s", (int)n, text, suffix);
    if (!path || !joined) {
        out = joined;
    } else {
        char *full = NULL;
        if (curl_url_set(u, CURLUPART_PATH, joined, 0) == CURLUE_OK &&
            curl_url_get(u, CURLUPART_URL, &full, 0) == CURLUE_OK)
            out = arb__strdup(full);
        curl_free(full);
        free(joined);
    }
    curl_free(path);
    curl_url_cleanup(u);
    return out;
}

/* See internal.h. */
json_t *arb__judge_params_json(const arb_judge_config *jc, const char *contestant)
{
    const arb_sampling *sp = &jc->sampling;
    json_t *jo = json_object();
    int bad = !jo || arb__json_set(jo, "name", arb__json_name(jc->name)) ||
              arb__json_set(jo, "model", arb__json_name(jc->model)) ||
              arb__json_set(jo, "url", arb__json_name(jc->base_url)) ||
              (jc->api_key_env && arb__json_set(jo, "api_key_env", arb__json_name(jc->api_key_env))) ||
              (contestant && arb__json_set(jo, "contestant", arb__json_name(contestant))) ||
              (sp->max_tokens > 0 && arb__json_set(jo, "max_tokens", json_integer(sp->max_tokens))) ||
              (!isnan(sp->temperature) && arb__json_set(jo, "temperature", json_real(sp->temperature))) ||
              (!isnan(sp->top_p) && arb__json_set(jo, "top_p", json_real(sp->top_p))) ||
              (!isnan(sp->frequency_penalty) &&
               arb__json_set(jo, "frequency_penalty", json_real(sp->frequency_penalty))) ||
              (sp->has_seed && arb__json_set(jo, "seed", json_integer(sp->seed))) ||
              (jc->price.known && arb__json_set(jo, "price", arb__json_price(&jc->price))) ||
              (sp->max_completion_tokens > 0 &&
               arb__json_set(jo, "max_completion_tokens", json_integer(sp->max_completion_tokens))) ||
              (sp->reasoning_effort &&
               arb__json_set(jo, "reasoning_effort", json_string(sp->reasoning_effort))) ||
              (jc->response_format && arb__json_set(jo, "response_format", json_true())) ||
              (jc->logprobs && arb__json_set(jo, "logprobs", json_true())) ||
              (jc->logprobs && jc->top_logprobs > 0 &&
               arb__json_set(jo, "top_logprobs", json_integer(jc->top_logprobs))) ||
              (jc->n_endpoints &&
               arb__json_set(jo, "endpoints", arb__json_names(jc->endpoints, jc->n_endpoints))) ||
              (jc->max_in_flight > 0 &&
               arb__json_set(jo, "max_in_flight", json_integer(jc->max_in_flight)));
    if (bad) {
        json_decref(jo);
        return NULL;
    }
    return jo;
}

/* See internal.h. */
arb_status arb__judge_check_list(arb_store *s, const arb_judge_config *judges, size_t n,
                                 int dry_run)
{
    if (!judges || n == 0) return arb__store_fail(s, ARB_INVALID, "no judge given");
    for (size_t j = 0; j < n; j++) {
        const arb_judge_config *jc = &judges[j];
        if (!jc->name || !*jc->name || !jc->model || !*jc->model)
            return arb__store_fail(s, ARB_INVALID, "judge %zu has no name or model", j + 1);
        if (!dry_run && (!jc->base_url || !*jc->base_url))
            return arb__store_fail(s, ARB_INVALID, "judge \"%s\" has no URL", jc->name);
        for (size_t k = 0; k < j; k++)
            if (!strcmp(judges[k].name, jc->name))
                return arb__store_fail(s, ARB_INVALID, "two judges are named \"%s\"", jc->name);
    }
    for (size_t j = 0; j < n; j++) {
        arb_status st = arb__judge_check(s, &judges[j], dry_run);
        if (st) return st;
    }
    return ARB_OK;
}
