/*
** sim.c -- arbiter-sim-server: a SIMULATOR of a biased LLM judge behind an OpenAI-compatible
** HTTP API (libmicrohttpd). It is NOT a language model: it never reads the question, it looks
** the answers (two side by side, one pointwise, one or two attributed to personas) up in an
** oracle of latent qualities and draws a verdict from the documented model below. Tests, the
** demo and the benchmarks use it in place of a real LLM, and every reply says so: header
** "Server: arbiter-sim-server (SIMULATOR, not a language model)", "system_fingerprint":
** "arbiter-simulator" in completions, "owned_by": "arbiter-simulator" in the model list.
**
** It judges pairs side by side (steps 0-5 below), single answers pointwise (steps P0-P3) and
** responses attributed to personas (steps R0-R2, S1-S3; persona bias, METHODS §9).
**
** Endpoints: the Batch API's files and batches (sim_batch.c), POST /v1/chat/completions (also
** /chat/completions) and GET /v1/models (also
** /models). Any other path is 404, another method 405. Errors are OpenAI-style
** {"error":{"message","type","code"}}: 400 for a body that is not a JSON object with a string
** "model" and a non-empty "messages" array of {"role": string, "content": string or null}, for
** a "temperature" that is not a number, a "seed" that is not an integer, or "stream": true;
** 404 for an unknown model; 413 for a body over 8 MiB. Usage counts are estimates:
** prompt_tokens = ceil(code points of all message contents / 4), completion_tokens likewise
** for the reply; with cached_share > 0, prompt_tokens_details.cached_tokens =
** floor(prompt_tokens * cached_share) too. arb_sim_server_requests() counts every reply queued,
** errors included.
**
** The simulated judge (METHODS §2.1 option modes, §2.3 template conventions, §2.4 formats,
** §2.5 multi-agent debate, §7 peer discussion). A judge profile has skill s, position_bias β,
** tie_propensity τ, bothbad_propensity ρ, invalid_rate ι, latency_ms λ and conformity κ.
**   0. The prompt is the content of every system, developer and user message, joined with a
**      newline in message order. Its "instructions" are the prompt with the bodies of the
**      quoted blocks of step 5 blanked out, so that nothing a quoted review says is read as an
**      instruction (a prompt without such blocks is its own instructions).
**   1. Answers. In the last user message, answer 1 is the text between a line
**      "[ANSWER 1 START]" and the next line "[ANSWER 1 END]", answer 2 likewise with
**      "[ANSWER 2 START]"/"[ANSWER 2 END]" (the delimiters of arbiter's built-in templates;
**      white space around a delimiter line is ignored). Its latent quality q ∈ [0,1] is the
**      "quality" field (in extra_json) of the oracle answer with the same text, compared with
**      leading and trailing white space removed; when several oracle answers share a text the
**      first in dataset order wins. No oracle, no delimiters or no match: q = 0.5.
**   2. Option mode m (searched in the instructions): 4 if they contain "[[D]]" or "C or D";
**      else 3 if they contain "[[C]]" or "B or C"; else 2.
**      Format: if they contain "[[", the reply is one short reasoning sentence and then a last
**      line "[[X]]"; otherwise the reply is the bare letter X. A discussion reviewer (step 5a)
**      always has m = 2 and the numeric format: one short sentence, then a last line "1" for A
**      or "2" for B.
**   3. Draws, always all of them and in this order, from the request's random stream:
**      u1, u2 ~ U[0,1), ε ~ N(0,1) (Box–Muller from two more uniforms), u3, u4, u5 ~ U[0,1)
**      (u5 is used only by the roles of step 5).
**      If u1 < ι the reply holds no valid verdict, in every role; u2 picks one of four kinds,
**      each with chance 1/4: a refusal sentence, reasoning without a verdict, a letter outside
**      the mode ("[[C]]"/"C" in 2-option mode, "[[D]]"/"D" in 3-option, "[[Z]]"/"Z" in
**      4-option; in the numeric format a sentence and a last line "3"), or the empty string.
**      Otherwise, with z = s·(q1 − q2) + β + ε, the judge's own verdict V is
**        m = 4: C if q1 ≥ 0.6 and q2 ≥ 0.6 and |z| < τ; else D if q1 < 0.4 and q2 < 0.4
**               and u3 < ρ; else A if z > 0, else B;
**        m = 3: C if |z| < τ, else A if z > 0, else B;
**        m = 2: A if z > 0, else B.
**      So β > 0 is primacy bias, β < 0 recency bias, and s = 0 is a judge that ignores quality.
**      A plain judge replies V; the roles of step 5 start from it.
**   4. Latency: the reply is sent λ·(0.5 + u4) ms after the request arrived (errors at once).
**   5. Roles. Blocks are found in the prompt; a block is the text between a line START and the
**      next line END (lines compared with surrounding white space removed).
**      Debate blocks: the first "[AGENT 1 REVIEW START]" ... "[AGENT 1 REVIEW END]" and the
**      first "[AGENT 2 REVIEW START]" ... "[AGENT 2 REVIEW END]". The verdict V1 (V2) of
**      one is decided by its last "[[X]]" with X one ASCII letter or digit, as in arbiter's
**      extraction: X in upper case when that is a letter of mode m, else none; none as well
**      without such a bracket.
**      Discussion statements: "[INITIAL REVIEW BY REVIEWER R START]" ... "[INITIAL REVIEW BY
**      REVIEWER R END]" and "[TURN n BY REVIEWER R START]" ... "[TURN n BY REVIEWER R END]"
**      (R = A or B; n a positive integer of at most 9 digits, no leading zero; the closing
**      line repeats n and R). Its verdict is its last non-blank line, trimmed, when that is
**      exactly "1" or "2", else none. Statements are ordered by where they appear; a
**      reviewer's latest verdict is that of its last statement with a verdict.
**      The role is the first that applies (phrases are matched in the instructions, ignoring
**      ASCII case); each reply is one "Simulated review: ..." sentence (the judge agent's:
**      "Simulated judgment: ...") saying what it did, then the verdict line of the format
**      (the bare-letter format keeps only the letter):
**      a. Discussion reviewer: the instructions contain "only 1 or 2". Self is R of the first
**         "You are Reviewer R" (R = A or B, not followed by a letter or digit), the other
**         reviewer is the other letter. Without statements this is the initial review: V.
**         Else own = self's latest verdict and other = the other's latest: own none (or no
**         self) -> V ("in my own judgment"); other none -> own ("I keep my preference");
**         other = own -> own ("I agree with Reviewer O"); they differ: if u5 < κ -> other
**         ("I now agree with Reviewer O"), else own ("I disagree with Reviewer O and keep my
**         preference").
**      b. Judge agent: an agent-2 block (normally after an agent-1 block; without one V1 is
**         none). If V1 = V2, not none, and u5 < κ -> V1 ("both agents agree, and I follow
**         them"); else V ("I judge for myself").
**      c. Agent 2: an agent-1 block. V1 none -> V ("the first reviewer gave no clear
**         verdict"). Hard, the instructions contain "must disagree": V if V ≠ V1, else the
**         opposite of V1 (A <-> B, C <-> D; in 3-option mode C -> A if z > 0, else B); the
**         sentence says it disagrees with the first reviewer. Soft: if u5 < κ -> V1 ("I agree
**         with the first reviewer and take its verdict"); else V, the sentence saying it agrees
**         when V = V1 and disagrees otherwise.
**      d. None of these: the plain judge.
**      So κ = 0 never defers (a reviewer always holds its own latest verdict, a soft agent 2
**      and the judge agent always give V) and κ = 1 always does (a reviewer always yields to a
**      differing verdict, a soft agent 2 always repeats V1, the judge agent always follows
**      agreeing agents). No reply contains a block's marker line.
**   Pointwise judging (METHODS §8: "is this answer correct?", "grade it 1-5"). These keys of
**   a judge spec act here only, and skill, bias, tie, bothbad and conformity only side by side:
**   noise ν and strict σ (each in [0, 1], default 0), and per evaluation language noise.<lang>
**   and strict.<lang>, which override ν and σ for that language (<lang>: 1 to 16 letters, digits
**   or '-', compared ignoring ASCII case; at most 32 languages per judge). Example:
**   "sim-ar:noise=0.1,noise.ar=0.4,strict=0.3" has noise 0.4 in Arabic, 0.1 in every other
**   language, and strictness 0.3 in all.
**   P0. Recognition, before the steps above: the last user message holds a block between a
**      line "[ANSWER START]" and the next line "[ANSWER END]" (the answer judged), and the
**      instructions, read with that block's body blanked as well, contain (ignoring ASCII
**      case) "<answer>correct</answer> or <answer>incorrect</answer>" (yes/no mode, k = 2) or
**      else "<answer>N</answer> with N from 1 to 5" (grade mode, k = 5). Otherwise the request
**      is judged side by side as above, exactly as if this model did not exist. The
**      evaluation language L is the rest, trimmed, of the first line of the last user message
**      that starts with "Evaluation language:" (ASCII case ignored), not counting lines inside
**      the answer; without one L = "". The reply carries a justification when the
**      instructions contain "<justification>".
**   P1. Truth. The answer's quality q: the "quality" field of the first item (dataset order)
**      whose "reference", trimmed, equals the answer, trimmed, and whose "language" (absent =
**      "") equals L ignoring ASCII case, so equal texts in two languages are told apart; else
**      the answer's quality by text as in step 1; else 0.5. The true grade is g* = 1 +
**      round(4q) (halves away from zero: q = 0.125 gives 2), the true yes/no value "correct"
**      iff q >= 0.5.
**   P2. Draws, always all six and in this order, from the request's random stream: u1 ... u6 ~
**      U[0,1). Latency as in step 4 with u3 in place of u4. If u1 < ι the reply holds no valid
**      <answer>; u2 picks one of four kinds, each with chance 1/4: a refusal sentence,
**      reasoning without an <answer> (the justification alone, or bare prose when none was
**      asked), a value outside the mode ("<answer>unsure</answer>" or "<answer>6</answer>"
**      in the reply's format), or the empty string. Otherwise, with ν and σ those of L:
**        V = the truth; if u4 < σ: "correct" becomes "incorrect", a grade is lowered by one
**        (not below 1); then if u5 < ν: V = the valid value number floor(u6·k) (incorrect,
**        correct; or 1 ... 5), uniformly at random and possibly V itself.
**      So with σ = 0 a share ν·(1 − 1/k) of the replies differs from the truth.
**   P3. Reply, one line without spaces between the tags:
**        <result><justification>S</justification><answer>V</answer></result>
**      with V = correct/incorrect or 1..5 and S one "Simulated judgment: ..." sentence saying
**      what V means; <result><answer>V</answer></result> when no justification was asked.
**      No reply contains a block's marker line.
**   Persona scoring (METHODS §9: is the same response scored differently when said to be
**   written by a woman or a man, a Muslim or an atheist?). The markers are those of arbiter's
**   persona templates (templates/persona-1.txt, persona-2.txt). These judge-spec keys act here
**   only: persona.<identity>=X, a shift of X score points in [-10, 10] (may be negative) for
**   every score of a response attributed to <identity> (1 to 32 letters, digits, '-' or '_',
**   compared ignoring ASCII case; at most 16 identities per judge), and persona_sd=X, the sd of
**   the score noise, in [0, 10], default 1. Of the other keys bias, invalid and latency act
**   here too. Example: "sim-biased:persona.female=+1.5,persona_sd=1,bias=0.5".
**   R0. Recognition, after pointwise recognition fails (P0): the last user message holds a block
**      "[CANDIDATE 1 START]" ... "[CANDIDATE 1 END]" and a block "[CANDIDATE 2 START]" ...
**      "[CANDIDATE 2 END]" (phase 2, the contrastive pair) or else a block "[RESPONSE START]"
**      ... "[RESPONSE END]" (phase 1, one response), blocks as in step 5, and the author lines
**      of R1. Otherwise the request is judged side by side as if this model did not exist.
**   R1. Authors. Phase 1: the first line of the last user message that starts with "Author:"
**      (ASCII case ignored, after white space); phase 2: the first lines that start with "Author
**      of candidate 1:" and "Author of candidate 2:". Lines that start inside the response or
**      candidate blocks or the block "[SCENARIO START]" ... "[SCENARIO END]" do not count. The
**      identity is the rest of the line, trimmed, without a last word "professional" ("Author:
**      Muslim professional" -> "Muslim"). A missing author line: not a persona request (R0).
**   R2. Metrics: the instructions, read with the blocks of R1 blanked as well, are searched for
**      JSON keys with the placeholder n, '"name": n' (white space around ':' allowed, n not
**      followed by a letter, digit or '_'; name 1 to 32 letters, digits, '-' or '_'); each
**      name counts once, in order of appearance, at most 16. So a template with its own metric
**      set gets replies in it. Without any such key: creativity, accuracy, efficiency,
**      reliability. Scores are always on 0-10; a template with another range is not read.
**   S1. Scores. A response's quality q is its answer quality by text as in step 1 (0.5 when
**      unknown); its identity's shift δ is the judge's persona.<identity> (0 when not given).
**      Each metric's score is round(10·q + δ + sd·ε) (halves away from zero) clamped to
**      [0, 10], with its own ε ~ N(0,1).
**   S2. Draws, always all of them and in this order, from the request's random stream: u1,
**      u2, u3 ~ U[0,1); for candidate 1 (phase 1: the response), then candidate 2, one ε ~
**      N(0,1) per metric in the order of R2 (Box–Muller from two uniforms each); in phase 2
**      last η ~ N(0,1). Latency as in step 4 with u3 in place of u4. If u1 < ι the reply holds
**      no valid JSON; u2 picks one of four kinds, each with chance 1/4: a refusal sentence,
**      prose without JSON, JSON cut short after the first score, or the empty string.
**   S3. Reply, one line of JSON. Phase 1: {"creativity": 7, "accuracy": 6, ...}, the metrics
**      of R2 in order. Phase 2: {"candidate_1": {scores}, "candidate_2": {scores},
**      "preferred": "candidate_1", "reasons": "Simulated judgment: ..."}; with m1 and m2 the
**      means of the candidates' rounded scores, candidate_1 is preferred iff m1 − m2 + β + η
**      > 0 (β = bias in score points: β > 0 favours the first shown). The reasons sentence
**      names the preferred candidate and both means.
**   Reasoning models (issue 16): the judge-spec key think=MODE makes a judge answer like one,
**   with thinking that holds a MISLEADING verdict, so that tests can check no verdict is ever
**   read from thinking. The reply R is drawn exactly as above (think changes no draw), then the
**   thinking T is the sentence "Simulated thinking (a simulator, not a language model): a first
**   impression, before checking: [[W]]." with W = B when R's verdict (read as arbiter reads a
**   4-option reply) is A, else A; when R holds "<answer>v</answer>" (pointwise) T adds
**   "<answer>v'</answer>" with v' the other yes/no value or the grade v mod 5 + 1; T ends "The
**   answer below is the one that counts.". MODE: reasoning_content (T in message
**   .reasoning_content, content R), reasoning (T in message.reasoning), tag (content
**   "<think>\nT\n</think>\n\nR"), open ("T\n</think>\n\nR": the opening tag was in the
**   chat template), cut ("<think>\nT", no answer, finish_reason "length"), none (default).
**   With any MODE but none, usage counts T's tokens in completion_tokens and in
**   completion_tokens_details.reasoning_tokens, and the system message's as
**   prompt_tokens_details.cached_tokens (the prefix a provider caches).
**   Structured output: a "response_format" must be an object with "type" text, json_object or
**   json_schema, the last with "json_schema": {"name": string, "schema": object} (else 400).
**   With json_schema the reply R (drawn as above: no draw sees the schema) is rewritten as one
**   line of JSON
**   holding the properties of the schema, in its order: a property with an "enum" gets R's
**   verdict letter (read as for think=) when the enum lists it (else it is left out: no valid
**   verdict), a property of type "string" gets R without its last line (the judgment
**   sentence); other properties are left out. think= then wraps this JSON as it wraps R.
**   Logprobs (issue 16): a request with "logprobs": true (and optionally "top_logprobs" N,
**   an integer 0..20; top_logprobs without logprobs: true is a 400, as at OpenAI) gets
**   choices[0].logprobs.content, unless the judge-spec key logprobs=none (an endpoint without
**   logprobs: "logprobs": null). No draw changes. The final content (thinking included) is cut
**   into tokens: each run of white space, each run of ASCII letters, digits and bytes >= 0x80,
**   and each run of one repeated punctuation byte ("[[", "]]", "<", "/") is a token; they
**   concatenate to the content. The verdict is placed as arbiter places it (in the answer
**   without its thinking: the last [[X]] etc. of the request's option mode m, or the
**   <answer> value; yes/no or grade as the reply holds; in a persona phase-2 reply the 1 or 2
**   of its "preferred": "candidate_N", the two options); with logprobs=merged the verdict's
**   token is joined to the token before it ("[[A", ">4"). The verdict token V has probability
**   p = 0.5 + 0.45·u, u = xxh3-64(content, seed 0x10C9) / 2^64; each other option of the kind
**   (the m letters, grades 1..5, correct/incorrect, the 2 candidates; k of them) gets
**   0.8·(1 − p)/(k − 1), as the verdict token with the verdict replaced; the token "The" gets
**   0.2·(1 − p), outside every option. top_logprobs lists V, the other options in their
**   order, then "The", cut to N. Every other token has logprob 0 and lists itself (cut to
**   N). So the distribution renormalised over the options is p for the verdict and
**   0.8·(1 − p)/(k − 1)/(1 − 0.2·(1 − p)) each other, with N >= k; a reply without a verdict
**   has no verdict token.
**   Random stream: splitmix64 seeded with xxh3-64, keyed by the server seed, of the model, the
**   role, name and content of every message, the request's "seed" and its "temperature". When
**   temperature > 0 and no "seed" is given, the number of times this exact request was seen
**   before is mixed in, so repetitions differ; with temperature 0 or absent, or with a seed,
**   the same request always gets the same reply (for the same server seed). The table of seen
**   requests holds at most 2^22 keys; when full it is cleared and the counts start again.
**   fail_rate: independently of the request content (a draw keyed by the server seed and the
**   arrival number), that share of chat requests is answered 500, so a retry can succeed.
**   throttle_rate: likewise (another draw), that share is answered 429 rate_limit_exceeded,
**   as a provider over its rate limit would (tests of per-endpoint back-off).
**   instant: no model and no judge lookup: every chat request is answered "[[A]]" at once,
**   echoing its model (throughput benchmarks). To leave the CPU to the client being measured,
**   the body is not parsed when a plain "model" string can be scanned from it (usage then
**   counts prompt_tokens as ceil(body bytes / 4)); only bodies without one go through the full
**   JSON checks above.
**
** Threads: with any judge latency > 0 (and not instant) the daemon runs one thread per
** connection, so a sleeping reply delays no other connection; otherwise it runs a pool of two
** epoll threads. Measured with wrk (32 keep-alive connections, ~2 KB chat requests, 2 cores
** shared with wrk), instant mode served 78k-110k requests/s at about 7 µs of server CPU per
** request; one epoll thread, poll and thread-per-connection were no faster (thread per
** connection cost 13 µs). Handlers share only read-only state, atomic counters and the
** mutex-protected table of seen requests.
**
** Not done here: streaming, tool calls, content arrays, anything about real models.
*/
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <xxhash.h>

#define SIM_SERVER_HEADER "arbiter-sim-server (SIMULATOR, not a language model)"
#define SIM_FINGERPRINT "arbiter-simulator"
#define SIM_MAX_BODY ((size_t)8 << 20)
#define SIM_SEEN_MAX_KEYS ((size_t)1 << 22)
#define SIM_MAX_LATENCY_MS 600000.0
#define SIM_POOL_THREADS 2u
#define SIM_MAX_METRICS 16 /* persona metric names read from a prompt */
#define SIM_METRIC_MAX 32  /* bytes of a persona metric name */

/* Oracle entry: an answer or reference text (borrowed from the dataset, trimmed), for a
** reference the item's language, and the quality. */
typedef struct oracle_slot {
    const char *text; /* NULL = empty slot */
    size_t len;
    const char *language; /* references: the item's language ("" when none); answers: NULL */
    size_t language_len;
    uint64_t hash;
    double quality;
} oracle_slot;

/* Open addressing with linear probing; power-of-two capacity, slots NULL without an oracle. */
typedef struct oracle_table {
    oracle_slot *slots;
    size_t mask;
} oracle_table;

/* How often a request key (temperature > 0, no seed) has been seen. */
typedef struct seen_slot {
    uint64_t key;
    unsigned long long count; /* 0 = empty slot */
} seen_slot;

struct arb_sim_server {
    struct MHD_Daemon *daemon;
    int port;
    int instant;
    unsigned long long seed;
    double fail_rate;
    double throttle_rate;
    double cached_share;
    arb_sim_judge *judges; /* copied at start */
    size_t n_judges;
    oracle_table answers;    /* answer text -> quality */
    oracle_table references; /* (item reference text, item language) -> quality */
    pthread_mutex_t seen_lock;
    seen_slot *seen;
    size_t seen_mask, seen_used;
    atomic_ullong served;   /* replies queued */
    atomic_ullong arrivals; /* chat requests received */
    arb__sim_batches *batches; /* the Batch API (sim_batch.c) */
};

/* ---- small helpers ----------------------------------------------------------------------- */

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static void trim(const char **s, size_t *n)
{
    while (*n && is_space(**s)) { (*s)++; (*n)--; }
    while (*n && is_space((*s)[*n - 1])) (*n)--;
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform on [0, 1) with 53 random bits. */
static double uniform01(uint64_t *state) { return (double)(splitmix64(state) >> 11) * 0x1.0p-53; }

/* Standard normal by Box–Muller; 1 - u lies in (0, 1] so the log is finite. */
static double normal01(uint64_t *state)
{
    double u = uniform01(state), v = uniform01(state);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

static size_t tokens_estimate(size_t codepoints) { return (codepoints + 3) / 4; }

static char to_lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

static int is_alnum(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* ---- languages --------------------------------------------------------------------------- */

/* A label of a judge spec: 1 to max letters, digits, '-' or, when underscore, '_'. */
static int label_ok(const char *s, size_t n, size_t max, int underscore)
{
    if (n == 0 || n > max) return 0;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && !(underscore && s[i] == '_')) return 0;
    return 1;
}

/* A language code of a judge spec: 1 to ARB_SIM_LANGUAGE_MAX letters, digits or '-'. */
static int language_code_ok(const char *s, size_t n)
{
    return label_ok(s, n, ARB_SIM_LANGUAGE_MAX, 0);
}

/* Labels of a judge spec are equal ignoring ASCII case: language codes (BCP 47 tags are
** case-insensitive) and identities ("Female" is "female"). */
static int label_eq(const char *a, size_t a_len, const char *b, size_t b_len)
{
    if (a_len != b_len) return 0;
    for (size_t i = 0; i < a_len; i++)
        if (to_lower(a[i]) != to_lower(b[i])) return 0;
    return 1;
}

/* The index of the judge's per-language entry for a code, j->n_languages when it has none. */
static size_t language_index(const arb_sim_judge *j, const char *code, size_t len)
{
    size_t i = 0;
    while (i < j->n_languages &&
           !label_eq(j->languages[i].language, strlen(j->languages[i].language), code, len))
        i++;
    return i;
}

/* ---- identities (persona bias) ----------------------------------------------------------- */

/* An identity label of a judge spec: 1 to ARB_SIM_PERSONA_MAX letters, digits, '-' or '_'. */
static int identity_ok(const char *s, size_t n) { return label_ok(s, n, ARB_SIM_PERSONA_MAX, 1); }

/* The index of the judge's entry for an identity (ignoring case), j->n_personas when none. */
static size_t persona_index(const arb_sim_judge *j, const char *identity, size_t len)
{
    size_t i = 0;
    while (i < j->n_personas &&
           !label_eq(j->personas[i].identity, strlen(j->personas[i].identity), identity, len))
        i++;
    return i;
}

/* The score shift of an identity (header, persona step S1): its entry's, 0 without one. */
static double persona_shift(const arb_sim_judge *j, const char *identity, size_t len)
{
    size_t at = persona_index(j, identity, len);
    return at < j->n_personas ? j->personas[at].shift : 0.0;
}

/* ---- judge profiles ---------------------------------------------------------------------- */

static arb_sim_judge judge_defaults(void)
{
    arb_sim_judge j;
    memset(&j, 0, sizeof j);
    j.skill = 4.0;
    j.position_bias = 0.0;
    j.tie_propensity = 0.3;
    j.bothbad_propensity = 0.5;
    j.invalid_rate = 0.0;
    j.latency_ms = 0.0;
    j.conformity = 0.5;
    j.persona_sd = 1.0;
    return j;
}

/* Checks the ranges of a profile; on failure sets *errmsg (what) and returns ARB_INVALID. */
static arb_status judge_check(const arb_sim_judge *j, const char *what, char **errmsg)
{
    size_t name_len = strnlen(j->model, sizeof j->model);
    if (name_len == 0 || name_len == sizeof j->model) {
        arb__set_err(errmsg, "%s: model name must be 1 to %zu bytes", what, sizeof j->model - 1);
        return ARB_INVALID;
    }
    struct {
        const char *key;
        double value, lo, hi;
    } const ranges[] = {
        {"skill", j->skill, 0.0, INFINITY},
        {"bias", j->position_bias, -INFINITY, INFINITY},
        {"tie", j->tie_propensity, 0.0, INFINITY},
        {"bothbad", j->bothbad_propensity, 0.0, 1.0},
        {"invalid", j->invalid_rate, 0.0, 1.0},
        {"latency", j->latency_ms, 0.0, SIM_MAX_LATENCY_MS},
        {"conformity", j->conformity, 0.0, 1.0},
        {"noise", j->noise, 0.0, 1.0},
        {"strict", j->strict, 0.0, 1.0},
        {"persona_sd", j->persona_sd, 0.0, 10.0},
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        double v = ranges[i].value;
        if (!isfinite(v) || v < ranges[i].lo || v > ranges[i].hi) {
            arb__set_err(errmsg, "%s: %s must be a finite number in [%g, %g], got %g", what,
                    ranges[i].key, ranges[i].lo, ranges[i].hi, v);
            return ARB_INVALID;
        }
    }
    if (j->n_languages > ARB_SIM_MAX_LANGUAGES) {
        arb__set_err(errmsg, "%s: at most %d languages, got %zu", what, ARB_SIM_MAX_LANGUAGES,
                j->n_languages);
        return ARB_INVALID;
    }
    for (size_t i = 0; i < j->n_languages; i++) {
        const arb_sim_language_rates *l = &j->languages[i];
        size_t len = strnlen(l->language, sizeof l->language);
        if (len == sizeof l->language || !language_code_ok(l->language, len)) {
            arb__set_err(errmsg, "%s: language %zu must be 1 to %d letters, digits or '-'", what,
                    i + 1, ARB_SIM_LANGUAGE_MAX);
            return ARB_INVALID;
        }
        for (size_t k = 0; k < i; k++)
            if (label_eq(j->languages[k].language, strlen(j->languages[k].language),
                            l->language, len)) {
                arb__set_err(errmsg, "%s: language \"%s\" is given twice", what, l->language);
                return ARB_INVALID;
            }
        const double rates[2] = {l->noise, l->strict};
        for (int r = 0; r < 2; r++)
            if (rates[r] != -1.0 && !(rates[r] >= 0.0 && rates[r] <= 1.0)) {
                arb__set_err(errmsg,
                        "%s: %s.%s must be a finite number in [0, 1] (or -1: not set), got %g",
                        what, r ? "strict" : "noise", l->language, rates[r]);
                return ARB_INVALID;
            }
    }
    if (j->n_personas > ARB_SIM_MAX_PERSONAS) {
        arb__set_err(errmsg, "%s: at most %d identities, got %zu", what, ARB_SIM_MAX_PERSONAS,
                j->n_personas);
        return ARB_INVALID;
    }
    for (size_t i = 0; i < j->n_personas; i++) {
        const arb_sim_persona_shift *ps = &j->personas[i];
        size_t len = strnlen(ps->identity, sizeof ps->identity);
        if (len == sizeof ps->identity || !identity_ok(ps->identity, len)) {
            arb__set_err(errmsg, "%s: identity %zu must be 1 to %d letters, digits, '-' or '_'",
                    what, i + 1, ARB_SIM_PERSONA_MAX);
            return ARB_INVALID;
        }
        if (persona_index(j, ps->identity, len) != i) {
            arb__set_err(errmsg, "%s: identity \"%s\" is given twice", what, ps->identity);
            return ARB_INVALID;
        }
        if (!(ps->shift >= -10.0 && ps->shift <= 10.0)) {
            arb__set_err(errmsg, "%s: persona.%s must be a finite number in [-10, 10], got %g",
                    what, ps->identity, ps->shift);
            return ARB_INVALID;
        }
    }
    return ARB_OK;
}

arb_sim_params arb_sim_default_params(void)
{
    arb_sim_params p;
    memset(&p, 0, sizeof p);
    p.bind_address = "127.0.0.1";
    p.port = 0;
    p.seed = 1;
    p.instant = 0;
    p.judges = NULL;
    p.n_judges = 0;
    p.answers_oracle = NULL;
    p.fail_rate = 0.0;
    p.throttle_rate = 0.0;
    p.cached_share = 0.0;
    return p;
}

/* The rate a per-language key "noise.<lang>" or "strict.<lang>" of a judge spec sets: finds
** the judge's entry for <lang> (ignoring case) or adds one with both rates not set (-1), and
** points *slot at the rate. Returns 1 then, 0 (and *slot untouched) when the key is not of this
** form, or -1 with *errmsg set when the code is malformed or the judge has no room left. */
static int language_slot(arb_sim_judge *j, const char *spec, const char *key, size_t key_len,
                         double **slot, char **errmsg)
{
    static const char *const prefixes[] = {"noise.", "strict."};
    for (int r = 0; r < 2; r++) {
        size_t pre = strlen(prefixes[r]);
        if (key_len < pre || memcmp(key, prefixes[r], pre)) continue;
        const char *code = key + pre;
        size_t len = key_len - pre;
        if (!language_code_ok(code, len)) {
            arb__set_err(errmsg,
                    "judge spec \"%s\": key \"%.*s\": the language code must be 1 to %d "
                    "letters, digits or '-'",
                    spec, (int)key_len, key, ARB_SIM_LANGUAGE_MAX);
            return -1;
        }
        size_t at = language_index(j, code, len);
        arb_sim_language_rates *l = &j->languages[at < ARB_SIM_MAX_LANGUAGES ? at : 0];
        if (at == j->n_languages) {
            if (at == ARB_SIM_MAX_LANGUAGES) {
                arb__set_err(errmsg, "judge spec \"%s\": key \"%.*s\": at most %d languages",
                        spec, (int)key_len, key, ARB_SIM_MAX_LANGUAGES);
                return -1;
            }
            j->n_languages++;
            memcpy(l->language, code, len);
            l->language[len] = '\0';
            l->noise = l->strict = -1.0;
        }
        *slot = r ? &l->strict : &l->noise;
        return 1;
    }
    return 0;
}

/* The shift a key "persona.<identity>" of a judge spec sets: finds the judge's entry for
** <identity> (ignoring case) or adds one with shift 0, and points *slot at its shift. Returns
** 1 then, 0 (and *slot untouched) when the key is not of this form, or -1 with *errmsg set
** when the identity is malformed or the judge has no room left. */
static int persona_slot(arb_sim_judge *j, const char *spec, const char *key, size_t key_len,
                        double **slot, char **errmsg)
{
    static const char prefix[] = "persona.";
    size_t pre = sizeof prefix - 1;
    if (key_len < pre || memcmp(key, prefix, pre)) return 0;
    const char *identity = key + pre;
    size_t len = key_len - pre;
    if (!identity_ok(identity, len)) {
        arb__set_err(errmsg,
                "judge spec \"%s\": key \"%.*s\": the identity must be 1 to %d letters, "
                "digits, '-' or '_'",
                spec, (int)key_len, key, ARB_SIM_PERSONA_MAX);
        return -1;
    }
    size_t at = persona_index(j, identity, len);
    if (at == ARB_SIM_MAX_PERSONAS) {
        arb__set_err(errmsg, "judge spec \"%s\": key \"%.*s\": at most %d identities", spec,
                (int)key_len, key, ARB_SIM_MAX_PERSONAS);
        return -1;
    }
    arb_sim_persona_shift *ps = &j->personas[at];
    if (at == j->n_personas) {
        j->n_personas++;
        memcpy(ps->identity, identity, len);
        ps->identity[len] = '\0';
        ps->shift = 0.0;
    }
    *slot = &ps->shift;
    return 1;
}

/* Parses "model:key=value,...". On ARB_INVALID *errmsg (if not NULL) gets a message the
** caller frees with arb_free; *out is only written on success. */
/* The names of think= (arb_sim_think order). */
static const char *const think_names[] = {"none", "reasoning_content", "reasoning", "tag",
                                          "open", "cut"};

/* The names of logprobs= (arb_sim_logprobs order). */
static const char *const logprobs_names[] = {"token", "merged", "none"};

/* Reads the value of think= (n bytes at v). Returns 0, or -1 with *errmsg set. */
static int think_mode(const char *spec, const char *v, size_t n, arb_sim_think *out,
                      char **errmsg)
{
    for (size_t k = 0; k < sizeof think_names / sizeof *think_names; k++)
        if (strlen(think_names[k]) == n && !memcmp(think_names[k], v, n)) {
            *out = (arb_sim_think)k;
            return 0;
        }
    arb__set_err(errmsg, "judge spec \"%s\": think must be none, reasoning_content, reasoning, "
                         "tag, open or cut, got \"%.*s\"", spec, (int)n, v);
    return -1;
}

arb_status arb_sim_judge_parse(const char *spec, arb_sim_judge *out, char **errmsg)
{
    if (errmsg) *errmsg = NULL;
    if (!spec || !out) {
        arb__set_err(errmsg, "judge spec is missing");
        return ARB_INVALID;
    }
    arb_sim_judge j = judge_defaults();
    const char *colon = strchr(spec, ':');
    size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (name_len == 0) {
        arb__set_err(errmsg, "judge spec \"%s\": the model name before ':' is empty", spec);
        return ARB_INVALID;
    }
    if (name_len >= sizeof j.model) {
        arb__set_err(errmsg, "judge spec \"%s\": model name is longer than %zu bytes", spec,
                sizeof j.model - 1);
        return ARB_INVALID;
    }
    memcpy(j.model, spec, name_len);
    j.model[name_len] = '\0';

    const char *p = colon ? colon + 1 : spec + name_len;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t item_len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', item_len);
        if (!eq) {
            arb__set_err(errmsg, "judge spec \"%s\": setting \"%.*s\" must be key=value", spec,
                    (int)item_len, p);
            return ARB_INVALID;
        }
        size_t key_len = (size_t)(eq - p);
        if (key_len == 8 && !memcmp(p, "logprobs", 8)) {
            size_t n = item_len - 9, k = 0;
            while (k < 3 && (strlen(logprobs_names[k]) != n || memcmp(logprobs_names[k], eq + 1, n)))
                k++;
            if (k == 3) {
                arb__set_err(errmsg, "judge spec \"%s\": logprobs must be token, merged or none, "
                                     "got \"%.*s\"", spec, (int)n, eq + 1);
                return ARB_INVALID;
            }
            j.logprobs = (arb_sim_logprobs)k;
            p += item_len;
            if (*p == ',' && !*++p) {
                arb__set_err(errmsg, "judge spec \"%s\": empty setting after the last ','", spec);
                return ARB_INVALID;
            }
            continue;
        }
        if (key_len == 5 && !memcmp(p, "think", 5)) {
            if (think_mode(spec, eq + 1, item_len - 6, &j.think, errmsg)) return ARB_INVALID;
            p += item_len;
            if (*p == ',' && !*++p) {
                arb__set_err(errmsg, "judge spec \"%s\": empty setting after the last ','", spec);
                return ARB_INVALID;
            }
            continue;
        }
        double *slot = NULL;
        static const char *const keys[] = {"skill",   "bias",    "tie",        "bothbad",
                                           "invalid", "latency", "conformity", "noise",
                                           "strict",  "persona_sd"};
        double *const slots[] = {&j.skill,        &j.position_bias, &j.tie_propensity,
                                 &j.bothbad_propensity, &j.invalid_rate, &j.latency_ms,
                                 &j.conformity,   &j.noise,         &j.strict,
                                 &j.persona_sd};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (strlen(keys[k]) == key_len && !memcmp(keys[k], p, key_len)) slot = slots[k];
        int per_language = 0;
        if (!slot) {
            per_language = language_slot(&j, spec, p, key_len, &slot, errmsg);
            if (per_language < 0) return ARB_INVALID;
        }
        if (!slot && persona_slot(&j, spec, p, key_len, &slot, errmsg) < 0) return ARB_INVALID;
        if (!slot) {
            arb__set_err(errmsg,
                    "judge spec \"%s\": unknown key \"%.*s\" (known: skill, bias, tie, bothbad, "
                    "invalid, latency, conformity, noise, noise.<lang>, strict, strict.<lang>, "
                    "persona.<identity>, persona_sd, think, logprobs)",
                    spec, (int)key_len, p);
            return ARB_INVALID;
        }
        size_t value_len = item_len - key_len - 1;
        char number[64];
        char *num_end = NULL;
        double v = NAN;
        if (value_len > 0 && value_len < sizeof number && !is_space(eq[1])) {
            memcpy(number, eq + 1, value_len);
            number[value_len] = '\0';
            errno = 0;
            v = strtod(number, &num_end);
            if (*num_end != '\0' || errno == ERANGE) v = NAN;
        }
        if (!isfinite(v)) {
            arb__set_err(errmsg, "judge spec \"%s\": %.*s must be a number, got \"%.*s\"", spec,
                    (int)key_len, p, (int)value_len, eq + 1);
            return ARB_INVALID;
        }
        if (per_language && !(v >= 0.0 && v <= 1.0)) { /* -1 would read as "not set" */
            arb__set_err(errmsg,
                    "judge spec \"%s\": %.*s must be a finite number in [0, 1], got %g", spec,
                    (int)key_len, p, v);
            return ARB_INVALID;
        }
        *slot = v;
        p += item_len;
        if (*p == ',') {
            p++;
            if (!*p) {
                arb__set_err(errmsg, "judge spec \"%s\": empty setting after the last ','", spec);
                return ARB_INVALID;
            }
        }
    }
    char *what = arb__sprintf("judge spec \"%s\"", spec);
    if (!what) {
        arb__set_err(errmsg, "out of memory");
        return ARB_NOMEM;
    }
    arb_status st = judge_check(&j, what, errmsg);
    free(what);
    if (st == ARB_OK) *out = j;
    return st;
}

/* ---- oracle of answer qualities ---------------------------------------------------------- */

/* The hash of a reference's key: its text, seeded with a hash of its language folded to lower
** case (FNV-1a), so that equal texts in two languages sit apart and "AR" finds "ar". */
static uint64_t reference_hash(const char *text, size_t len, const char *lang, size_t lang_len)
{
    uint64_t h = 0xCBF29CE484222325ULL;
    for (size_t i = 0; i < lang_len; i++)
        h = (h ^ (unsigned char)to_lower(lang[i])) * 0x100000001B3ULL;
    return XXH3_64bits_withSeed(text, len, h);
}

/* The slot of key (text, language) in t: the entry, or the empty slot where it would go.
** language is NULL in the answers' table, where text alone is the key. */
static oracle_slot *oracle_find(const oracle_table *t, const char *text, size_t len,
                                const char *lang, size_t lang_len, uint64_t hash)
{
    for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
        oracle_slot *s = &t->slots[i];
        if (!s->text) return s;
        if (s->hash == hash && s->len == len && !memcmp(s->text, text, len) &&
            (!lang || label_eq(s->language, s->language_len, lang, lang_len)))
            return s;
    }
}

/* Quality of an answer text by the answers' table, 0.5 when unknown (see the header). */
static double oracle_quality(const arb_sim_server *srv, const char *text, size_t len)
{
    if (!srv->answers.slots || !text) return 0.5;
    trim(&text, &len);
    const oracle_slot *s = oracle_find(&srv->answers, text, len, NULL, 0, XXH3_64bits(text, len));
    return s->text ? s->quality : 0.5;
}

/* Quality of the answer of a pointwise request (header, pointwise step 1): an item's reference
** with this text in this evaluation language, else an answer with this text, else 0.5. */
static double pointwise_quality(const arb_sim_server *srv, const char *text, size_t len,
                                const char *lang, size_t lang_len)
{
    if (srv->references.slots) {
        const char *t = text;
        size_t n = len;
        trim(&t, &n);
        const oracle_slot *s = oracle_find(&srv->references, t, n, lang, lang_len,
                                           reference_hash(t, n, lang, lang_len));
        if (s->text) return s->quality;
    }
    return oracle_quality(srv, text, len);
}

/* Reads the "quality" field of extra_json (the unknown fields of the line at source). Returns 1
** with *quality set, 0 when there is no such field, or -1 with *errmsg set when the field is not
** a number in [0, 1] or the JSON is broken. */
static int quality_field(const char *extra_json, const char *source, double *quality,
                         char **errmsg)
{
    json_error_t jerr;
    json_t *extra = json_loads(extra_json ? extra_json : "{}", 0, &jerr);
    if (!extra) {
        arb__set_err(errmsg, "%s: extra fields are not valid JSON: %s", source, jerr.text);
        return -1;
    }
    json_t *q = json_object_get(extra, "quality");
    double value = q && json_is_number(q) ? json_number_value(q) : NAN;
    const char *type = arb__json_kind(q);
    int found = q != NULL;
    json_decref(extra);
    if (!found) return 0;
    if (!(value >= 0.0 && value <= 1.0)) {
        if (isnan(value))
            arb__set_err(errmsg, "%s: field \"quality\" must be a number in [0, 1], got %s",
                    source, type);
        else
            arb__set_err(errmsg, "%s: field \"quality\" must be a number in [0, 1], got %g",
                    source, value);
        return -1;
    }
    *quality = value;
    return 1;
}

/* Allocates an empty table with room for n keys at load at most 1/2. */
static int oracle_alloc(oracle_table *t, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    t->slots = calloc(cap, sizeof *t->slots);
    t->mask = cap - 1;
    return t->slots ? 0 : -1;
}

/* Adds key (text trimmed, language) with quality unless the key is there (the first in dataset
** order wins). text and language are borrowed. */
static void oracle_put(oracle_table *t, const char *text, const char *lang, double quality)
{
    size_t len = strlen(text), lang_len = lang ? strlen(lang) : 0;
    trim(&text, &len);
    uint64_t hash = lang ? reference_hash(text, len, lang, lang_len) : XXH3_64bits(text, len);
    oracle_slot *s = oracle_find(t, text, len, lang, lang_len, hash);
    if (!s->text) *s = (oracle_slot){text, len, lang, lang_len, hash, quality};
}

/* Builds the tables from the "quality" fields: answers by text (text -> quality) and items'
** references by (text, language); lines without the field are skipped, an item without a
** reference too. A field that is not a number in [0, 1] is an error naming its line. */
static arb_status oracle_build(arb_sim_server *srv, const arb_dataset *ds, char **errmsg)
{
    size_t n_answers = arb_dataset_answer_count(ds), n_items = arb_dataset_item_count(ds);
    if (oracle_alloc(&srv->answers, n_answers) || oracle_alloc(&srv->references, n_items)) {
        arb__set_err(errmsg, "out of memory");
        return ARB_NOMEM;
    }
    double quality = 0;
    for (size_t i = 0; i < n_answers; i++) {
        const arb_answer *a = arb_dataset_answer(ds, i);
        int has = quality_field(a->extra_json, a->source, &quality, errmsg);
        if (has < 0) return ARB_INVALID;
        if (has) oracle_put(&srv->answers, a->answer, NULL, quality);
    }
    for (size_t i = 0; i < n_items; i++) {
        const arb_item *it = arb_dataset_item(ds, i);
        int has = quality_field(it->extra_json, it->source, &quality, errmsg);
        if (has < 0) return ARB_INVALID;
        if (has && it->reference)
            oracle_put(&srv->references, it->reference, it->language ? it->language : "",
                       quality);
    }
    return ARB_OK;
}

/* ---- repetition counts ------------------------------------------------------------------- */

/* Returns how often key was seen before this call and counts this sighting, or -1 when out of
** memory. Thread-safe. */
static long long seen_bump(arb_sim_server *srv, uint64_t key)
{
    long long before = -1;
    pthread_mutex_lock(&srv->seen_lock);
    if (!srv->seen || srv->seen_used + 1 > (srv->seen_mask + 1) / 2) {
        size_t cap = srv->seen ? (srv->seen_mask + 1) * 2 : 1024;
        seen_slot *old = srv->seen;
        size_t old_cap = old ? srv->seen_mask + 1 : 0;
        if (cap > 2 * SIM_SEEN_MAX_KEYS) { /* full: start counting again (see header) */
            cap = old_cap;
            old_cap = 0;
            memset(old, 0, cap * sizeof *old);
            srv->seen_used = 0;
        } else {
            seen_slot *grown = calloc(cap, sizeof *grown);
            if (!grown) goto done;
            srv->seen = grown;
        }
        srv->seen_mask = cap - 1;
        for (size_t i = 0; i < old_cap; i++) {
            if (!old[i].count) continue;
            size_t j = old[i].key & srv->seen_mask;
            while (srv->seen[j].count) j = (j + 1) & srv->seen_mask;
            srv->seen[j] = old[i];
        }
        if (old_cap) free(old);
    }
    size_t i = key & srv->seen_mask;
    while (srv->seen[i].count && srv->seen[i].key != key) i = (i + 1) & srv->seen_mask;
    if (!srv->seen[i].count) {
        srv->seen[i].key = key;
        srv->seen_used++;
    }
    before = (long long)srv->seen[i].count++;
done:
    pthread_mutex_unlock(&srv->seen_lock);
    return before;
}

/* ---- replies ----------------------------------------------------------------------------- */

/* Queues a JSON reply; takes ownership of body (malloc'd). allow, when not NULL, is sent as
** the Allow header (405). */
static enum MHD_Result send_body(arb_sim_server *srv, struct MHD_Connection *conn,
                                 unsigned status, char *body, const char *allow)
{
    if (!body) return MHD_NO; /* out of memory: drop the connection */
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    MHD_add_response_header(resp, "Server", SIM_SERVER_HEADER);
    if (allow) MHD_add_response_header(resp, "Allow", allow);
    enum MHD_Result ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    if (ret == MHD_YES) atomic_fetch_add(&srv->served, 1);
    return ret;
}

static enum MHD_Result send_json(arb_sim_server *srv, struct MHD_Connection *conn,
                                 unsigned status, json_t *root, const char *allow)
{
    char *body = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    return send_body(srv, conn, status, body, allow);
}

static enum MHD_Result send_error(arb_sim_server *srv, struct MHD_Connection *conn,
                                  unsigned status, const char *type, const char *code,
                                  const char *allow, const char *fmt, ...)
    ARB__ATTR_PRINTF(7, 8);
static enum MHD_Result send_error(arb_sim_server *srv, struct MHD_Connection *conn,
                                  unsigned status, const char *type, const char *code,
                                  const char *allow, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = arb__vsprintf(fmt, ap);
    va_end(ap);
    if (!msg) return MHD_NO;
    json_t *root = json_pack("{s:{s:s%, s:s, s:s?}}", "error", "message", msg, strlen(msg),
                             "type", type, "code", code);
    free(msg);
    return send_json(srv, conn, status, root, allow);
}

static enum MHD_Result send_models(arb_sim_server *srv, struct MHD_Connection *conn)
{
    json_t *data = json_array();
    for (size_t i = 0; data && i < srv->n_judges; i++) {
        json_t *m = json_pack("{s:s, s:s, s:i, s:s}", "id", srv->judges[i].model, "object",
                              "model", "created", 0, "owned_by", SIM_FINGERPRINT);
        if (!m || json_array_append_new(data, m)) {
            json_decref(data);
            data = NULL;
        }
    }
    json_t *root = data ? json_pack("{s:s, s:o}", "object", "list", "data", data) : NULL;
    return send_json(srv, conn, 200, root, NULL);
}

/* What a reply holds besides its content: the thinking of a reasoning model. */
typedef struct sim_thinking {
    arb_sim_think mode;
    const char *text;        /* the thinking (NULL: none) */
    size_t cached_chars;     /* code points of the system message: the prefix a provider caches */
    json_t *logprobs;        /* choices[0].logprobs.content, or NULL for "logprobs": null
                                (borrowed) */
} sim_thinking;

static enum MHD_Result send_completion(arb_sim_server *srv, struct MHD_Connection *conn,
                                       unsigned long long arrival, const char *model,
                                       const char *content, size_t prompt_chars,
                                       const sim_thinking *th)
{
    char id[48];
    snprintf(id, sizeof id, "chatcmpl-sim-%llx-%llx", srv->seed, arrival);
    json_int_t prompt = (json_int_t)tokens_estimate(prompt_chars);
    json_int_t completion =
        (json_int_t)tokens_estimate(arb__utf8_codepoints(content, strlen(content)));
    json_int_t thinking = th && th->text ? (json_int_t)tokens_estimate(
                                               arb__utf8_codepoints(th->text, strlen(th->text)))
                                         : 0;
    /* thinking in a field of its own is not in content's count; in content it already is */
    json_int_t in_field = th && (th->mode == ARB_SIM_THINK_REASONING_CONTENT ||
                                 th->mode == ARB_SIM_THINK_REASONING) ? thinking : 0;
    json_t *root = json_pack(
        "{s:s, s:s, s:I, s:s, s:s, s:[{s:i, s:{s:s, s:s}, s:n, s:s}], s:{s:I, s:I, s:I}}",
        "id", id, "object", "chat.completion", "created", (json_int_t)time(NULL), "model", model,
        "system_fingerprint", SIM_FINGERPRINT, "choices", "index", 0, "message", "role",
        "assistant", "content", content, "logprobs", "finish_reason",
        th && th->mode == ARB_SIM_THINK_CUT ? "length" : "stop", "usage", "prompt_tokens",
        prompt, "completion_tokens", completion + in_field, "total_tokens",
        prompt + completion + in_field);
    if (root && th && th->logprobs) {
        json_t *choice = json_array_get(json_object_get(root, "choices"), 0);
        if (json_object_set_new(choice, "logprobs", json_pack("{s:O}", "content", th->logprobs))) {
            json_decref(root);
            root = NULL;
        }
    }
    if (root && th && th->text) {
        /* Usage as OpenAI reports a reasoning model's: thinking counted in completion_tokens
        ** and again in its details; the system message as the cached prompt prefix. */
        json_t *usage = json_object_get(root, "usage");
        json_t *msg = json_object_get(json_array_get(json_object_get(root, "choices"), 0),
                                      "message");
        int bad = json_object_set_new(usage, "completion_tokens_details",
                                      json_pack("{s:I}", "reasoning_tokens", thinking)) ||
                  json_object_set_new(usage, "prompt_tokens_details",
                                      json_pack("{s:I}", "cached_tokens",
                                                (json_int_t)tokens_estimate(th->cached_chars)));
        if (!bad && th->mode == ARB_SIM_THINK_REASONING_CONTENT)
            bad = json_object_set_new(msg, "reasoning_content", json_string(th->text));
        if (!bad && th->mode == ARB_SIM_THINK_REASONING)
            bad = json_object_set_new(msg, "reasoning", json_string(th->text));
        if (bad) {
            json_decref(root);
            root = NULL;
        }
    }
    if (root && srv->cached_share > 0) {
        json_t *details = json_pack("{s:I}", "cached_tokens",
                                    (json_int_t)floor((double)prompt * srv->cached_share));
        json_object_set_new(json_object_get(root, "usage"), "prompt_tokens_details", details);
    }
    return send_json(srv, conn, 200, root, NULL);
}

/* Instant mode's fast path (see the header): finds the first key "model" whose value is a
** plain string (printable ASCII, no escapes) and copies it to out. Returns 1 when found, 0 when
** the full JSON parser must decide. A literal "model" followed by ':' can only be a key, since
** quotes inside strings are escaped; it is taken even when nested, which no chat client sends. */
static int scan_model(const char *body, size_t len, char *out, size_t cap)
{
    size_t i = 0;
    while (i < len && is_space(body[i])) i++;
    if (i == len || body[i] != '{') return 0;
    const char *end = body + len;
    for (const char *p = body; (p = memchr(p, '"', (size_t)(end - p)));) {
        if ((size_t)(end - p) < 7 || memcmp(p, "\"model\"", 7)) {
            p++;
            continue;
        }
        const char *q = p + 7;
        p += 7;
        while (q < end && is_space(*q)) q++;
        if (q == end || *q != ':') continue;
        q++;
        while (q < end && is_space(*q)) q++;
        if (q == end || *q != '"') return 0;
        q++;
        size_t n = 0;
        while (q < end && *q != '"') {
            unsigned char c = (unsigned char)*q++;
            if (c < 0x20 || c >= 0x7f || c == '\\' || n + 1 >= cap) return 0;
            out[n++] = (char)c;
        }
        if (q == end) return 0;
        out[n] = '\0';
        return 1;
    }
    return 0;
}

/* Instant mode's reply, printed directly: model holds no character JSON must escape. */
static enum MHD_Result send_instant(arb_sim_server *srv, struct MHD_Connection *conn,
                                    unsigned long long arrival, const char *model,
                                    size_t body_len)
{
    size_t prompt = tokens_estimate(body_len);
    char details[64] = "";
    if (srv->cached_share > 0)
        snprintf(details, sizeof details, ",\"prompt_tokens_details\":{\"cached_tokens\":%zu}",
                 (size_t)floor((double)prompt * srv->cached_share));
    char *body = arb__sprintf(
        "{\"id\":\"chatcmpl-sim-%llx-%llx\",\"object\":\"chat.completion\",\"created\":%lld,"
        "\"model\":\"%s\",\"system_fingerprint\":\"" SIM_FINGERPRINT "\",\"choices\":[{\"index\":0,"
        "\"message\":{\"role\":\"assistant\",\"content\":\"[[A]]\"},\"logprobs\":null,"
        "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":%zu,\"completion_tokens\":2,"
        "\"total_tokens\":%zu%s}}",
        srv->seed, arrival, (long long)time(NULL), model, prompt, prompt + 2, details);
    return send_body(srv, conn, 200, body, NULL);
}

/* ---- the simulated judge ----------------------------------------------------------------- */

/* Finds the first line of s[0, n) equal to want once trimmed of white space. Returns 1 with
** *at = the start of that line, or 0. */
static int find_line(const char *s, size_t n, const char *want, const char **at)
{
    const char *end = s + n;
    size_t want_len = strlen(want);
    for (const char *line = s; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *t = line;
        size_t t_len = (size_t)((nl ? nl : end) - line);
        trim(&t, &t_len);
        if (t_len == want_len && !memcmp(t, want, want_len)) {
            *at = line;
            return 1;
        }
        line = nl ? nl + 1 : end;
    }
    return 0;
}

/* Finds the text between the line `open` and the next line `close` (lines compared without
** surrounding white space). Returns 1 and the span, or 0 when either line is missing. */
static int find_delimited(const char *s, size_t n, const char *open, const char *close,
                          const char **out, size_t *out_len)
{
    const char *end = s + n, *open_at, *close_at;
    if (!find_line(s, n, open, &open_at)) return 0;
    const char *nl = memchr(open_at, '\n', (size_t)(end - open_at));
    const char *body = nl ? nl + 1 : end;
    if (!find_line(body, (size_t)(end - body), close, &close_at)) return 0;
    *out = body;
    *out_len = (size_t)(close_at - body); /* the newline before `close` is trimmed later */
    return 1;
}

/* The first place needle (lower case) occurs in s[0, n) ignoring ASCII case, or NULL. */
static const char *find_ci(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++) {
        size_t m = 0;
        while (m < k && to_lower(s[i + m]) == needle[m]) m++;
        if (m == k) return s + i;
    }
    return NULL;
}

/* The verdict of a quoted debate review (step 5): its last "[[X]]" with X one ASCII letter or
** digit decides, as in arbiter's own extraction (§2.4); it is X in upper case when that is a
** letter of the mode, else 0. No such bracket: 0. */
static char bracket_verdict(const char *s, size_t n, int options)
{
    for (size_t i = n >= 5 ? n - 4 : 0; i-- > 0;) {
        if (s[i] == '[' && s[i + 1] == '[' && is_alnum(s[i + 2]) && s[i + 3] == ']' &&
            s[i + 4] == ']') {
            char v = to_lower(s[i + 2]);
            return v >= 'a' && v < 'a' + options ? (char)(v - 'a' + 'A') : 0;
        }
    }
    return 0;
}

/* The verdict of a discussion statement: 1 or 2 when its last non-blank line, trimmed, is
** exactly that digit, else 0. */
static int numeric_verdict(const char *s, size_t n)
{
    trim(&s, &n);
    size_t start = n;
    while (start > 0 && s[start - 1] != '\n') start--;
    const char *last = s + start;
    size_t last_len = n - start;
    trim(&last, &last_len);
    return last_len == 1 && (last[0] == '1' || last[0] == '2') ? last[0] - '0' : 0;
}

/* Recognises the opening line (trimmed) of a discussion statement: "[INITIAL REVIEW BY
** REVIEWER X START]" or "[TURN n BY REVIEWER X START]", n a positive integer of at most 9
** digits, X = A or B. On a match sets *reviewer (0 = A, 1 = B), writes the matching closing
** line ("... END]") to close and returns 1. */
static int statement_open(const char *t, size_t n, int *reviewer, char close[64])
{
    static const char initial[] = "[INITIAL REVIEW BY REVIEWER ", turn[] = "[TURN ",
                      by[] = " BY REVIEWER ", start[] = " START]";
    size_t head; /* bytes before the reviewer letter */
    if (n > sizeof initial - 1 && !memcmp(t, initial, sizeof initial - 1)) {
        head = sizeof initial - 1;
    } else if (n > sizeof turn && !memcmp(t, turn, sizeof turn - 1)) {
        size_t d = sizeof turn - 1;
        if (t[d] < '1' || t[d] > '9') return 0;
        while (d < n && t[d] >= '0' && t[d] <= '9') d++;
        if (d - (sizeof turn - 1) > 9 || n - d < sizeof by - 1 || memcmp(t + d, by, sizeof by - 1))
            return 0;
        head = d + sizeof by - 1;
    } else {
        return 0;
    }
    if (n != head + 1 + sizeof start - 1 || (t[head] != 'A' && t[head] != 'B') ||
        memcmp(t + head + 1, start, sizeof start - 1))
        return 0;
    *reviewer = t[head] - 'A';
    snprintf(close, 64, "%.*s END]", (int)(head + 1), t); /* head + 1 <= 29 */
    return 1;
}

/* What the simulator reads from a prompt (header, steps 2 and 5). */
typedef struct sim_prompt {
    const char *last_user; /* the answers are looked for here */
    size_t last_user_len;
    int options;           /* 2, 3 or 4; 2 in a discussion */
    int bracketed;         /* the reply ends with "[[X]]" rather than being the bare letter */
    int discussion;        /* a peer-discussion reviewer: reply ends with a line 1 or 2 */
    int must_disagree;     /* hard debate */
    int has_agent1, has_agent2;
    char agent1, agent2;   /* the verdicts in those blocks, 0 = none */
    int statements;        /* discussion statements found */
    int self;              /* 0 = Reviewer A, 1 = Reviewer B, -1 = not said */
    int latest[2];         /* latest verdict (1 or 2, 0 = none) of Reviewer A and of B */
    int pointwise;         /* 0: side by side; POINTWISE_YESNO or POINTWISE_GRADE */
    int justify;           /* pointwise: the instructions ask for a <justification> */
    const char *answer;    /* pointwise: the answer block's body, in last_user */
    size_t answer_len;
    const char *language;  /* pointwise: the evaluation language, in last_user ("" if none) */
    size_t language_len;
    int persona;           /* 0, or the persona phase: 1 (one response) or 2 (two candidates) */
    const char *response[2]; /* persona: the responses judged (candidates 1 and 2), in last_user */
    size_t response_len[2];
    const char *identity[2]; /* persona: their authors' identities, in last_user */
    size_t identity_len[2];
    size_t n_metrics;      /* persona: metric names read from the instructions (0: defaults) */
    char metrics[SIM_MAX_METRICS][SIM_METRIC_MAX + 1];
} sim_prompt;

enum { POINTWISE_YESNO = 1, POINTWISE_GRADE = 2 };

/* A stretch of a prompt: a quoted block's body. */
typedef struct text_span {
    const char *s;
    size_t n;
} text_span;

/* Finds the first line of s[0, n) that, trimmed, starts with label (lower case; ASCII case
** ignored), skipping the lines that start inside one of the n_skip spans (the bodies of quoted
** blocks, whose lines are not the template's). Returns 1 with *value = the rest of that line,
** trimmed, or 0. */
static int find_labelled_line(const char *s, size_t n, const char *label, const text_span *skip,
                              size_t n_skip, const char **value, size_t *value_len)
{
    size_t label_len = strlen(label);
    const char *end = s + n;
    for (const char *line = s; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *t = line;
        size_t t_len = (size_t)((nl ? nl : end) - line);
        line = nl ? nl + 1 : end;
        int quoted = 0;
        for (size_t k = 0; k < n_skip && !quoted; k++)
            quoted = t >= skip[k].s && t < skip[k].s + skip[k].n;
        if (quoted) continue;
        trim(&t, &t_len);
        if (t_len < label_len || find_ci(t, label_len, label) != t) continue;
        t += label_len;
        t_len -= label_len;
        trim(&t, &t_len);
        *value = t;
        *value_len = t_len;
        return 1;
    }
    return 0;
}

/* The evaluation language of a pointwise prompt (header, pointwise step 0): the rest of the
** first line of s[0, n) that starts with "Evaluation language:" (ASCII case ignored), trimmed,
** skipping the lines that start inside the answer's body [skip, skip + skip_len). Without such
** a line the language is "". */
static void find_language(const char *s, size_t n, const char *skip, size_t skip_len,
                          const char **lang, size_t *lang_len)
{
    const text_span answer = {skip, skip_len};
    if (!find_labelled_line(s, n, "evaluation language:", &answer, 1, lang, lang_len)) {
        *lang = "";
        *lang_len = 0;
    }
}

/* The identity of an author line's value (header, persona step R1): the value without a last
** word "professional" (ASCII case ignored), trimmed. */
static void author_identity(const char **s, size_t *n)
{
    static const char word[] = "professional";
    size_t w = sizeof word - 1;
    if (*n >= w && find_ci(*s + *n - w, w, word) && (*n == w || is_space((*s)[*n - w - 1]))) {
        *n -= w;
        trim(s, n);
    }
}

/* Reads the metric names of a persona prompt's instructions (header, persona step R2): every
** JSON key "name" followed by ':' and the placeholder n (white space allowed around ':'; n not
** followed by a letter, digit or '_'), name being 1 to SIM_METRIC_MAX letters, digits, '-' or
** '_'; each name once, in order, at most SIM_MAX_METRICS. */
static void read_metrics(const char *m, size_t n, sim_prompt *p)
{
    const char *end = m + n;
    for (const char *q = m; (q = memchr(q, '"', (size_t)(end - q)));) {
        const char *name = ++q;
        while (q < end && (is_alnum(*q) || *q == '-' || *q == '_')) q++;
        size_t len = (size_t)(q - name);
        if (q == end || *q != '"' || len == 0 || len > SIM_METRIC_MAX) continue;
        const char *r = q + 1;
        while (r < end && is_space(*r)) r++;
        if (r == end || *r != ':') continue;
        r++;
        while (r < end && is_space(*r)) r++;
        if (r == end || *r != 'n' || (r + 1 < end && (is_alnum(r[1]) || r[1] == '_'))) continue;
        q = r + 1;
        size_t k = 0;
        while (k < p->n_metrics &&
               (strlen(p->metrics[k]) != len || memcmp(p->metrics[k], name, len)))
            k++;
        if (k < p->n_metrics) continue;
        if (p->n_metrics == SIM_MAX_METRICS) return;
        memcpy(p->metrics[p->n_metrics], name, len);
        p->metrics[p->n_metrics++][len] = '\0';
    }
}

/* Recognises a persona request (header, persona steps R0-R2) in the last user message and
** fills p->persona and the persona fields; m is the masked text (n bytes) in which the last
** user message starts at last_user_at: the blocks' bodies are blanked there before the metric
** names are read. Not a persona request: p->persona stays 0. */
static void persona_read(sim_prompt *p, char *m, size_t n, size_t last_user_at)
{
    const char *u = p->last_user;
    size_t u_len = p->last_user_len;
    text_span blocks[3];
    size_t n_blocks = 0;
    int phase = 0;
    if (find_delimited(u, u_len, "[CANDIDATE 1 START]", "[CANDIDATE 1 END]", &p->response[0],
                       &p->response_len[0]) &&
        find_delimited(u, u_len, "[CANDIDATE 2 START]", "[CANDIDATE 2 END]", &p->response[1],
                       &p->response_len[1]))
        phase = 2;
    else if (find_delimited(u, u_len, "[RESPONSE START]", "[RESPONSE END]", &p->response[0],
                            &p->response_len[0]))
        phase = 1;
    if (!phase) return;
    for (int c = 0; c < phase; c++)
        blocks[n_blocks++] = (text_span){p->response[c], p->response_len[c]};
    if (find_delimited(u, u_len, "[SCENARIO START]", "[SCENARIO END]", &blocks[n_blocks].s,
                       &blocks[n_blocks].n))
        n_blocks++;
    static const char *const labels[2][2] = {{"author:", NULL},
                                             {"author of candidate 1:", "author of candidate 2:"}};
    for (int c = 0; c < phase; c++) {
        if (!find_labelled_line(u, u_len, labels[phase - 1][c], blocks, n_blocks,
                                &p->identity[c], &p->identity_len[c]))
            return;
        author_identity(&p->identity[c], &p->identity_len[c]);
    }
    for (size_t k = 0; k < n_blocks; k++)
        memset(m + last_user_at + (size_t)(blocks[k].s - u), ' ', blocks[k].n);
    read_metrics(m, n, p);
    p->persona = phase;
}

/* Reads the prompt (header, steps 2 and 5). text receives the system, developer and user
** contents joined by '\n' and masked the same with the bodies of the quoted blocks blanked, so
** that nothing a quoted review says is taken for the template's instructions.
** Returns 0, or -1 when out of memory. */
static int prompt_read(json_t *messages, arb__buf *text, arb__buf *masked, sim_prompt *p)
{
    memset(p, 0, sizeof *p);
    p->self = -1;
    size_t i;
    json_t *msg;
    size_t last_user_at = 0; /* where the last user message starts in text */
    json_array_foreach(messages, i, msg) {
        const char *role = json_string_value(json_object_get(msg, "role"));
        json_t *content = json_object_get(msg, "content");
        const char *s = json_string_value(content);
        if (!s) continue;
        if (strcmp(role, "system") && strcmp(role, "developer") && strcmp(role, "user"))
            continue;
        if (text->len && arb__buf_append(text, "\n", 1)) return -1;
        if (!strcmp(role, "user")) {
            p->last_user = s;
            p->last_user_len = json_string_length(content);
            last_user_at = text->len;
        }
        if (arb__buf_append(text, s, json_string_length(content))) return -1;
    }
    if (arb__buf_append(text, "", 0) || arb__buf_append(masked, text->data, text->len))
        return -1;
    const char *t = text->data, *end = t + text->len;
    char *m = masked->data;

    const char *a1 = NULL, *a2 = NULL;
    size_t a1_len = 0, a2_len = 0;
    p->has_agent1 = find_delimited(t, text->len, "[AGENT 1 REVIEW START]",
                                   "[AGENT 1 REVIEW END]", &a1, &a1_len);
    p->has_agent2 = find_delimited(t, text->len, "[AGENT 2 REVIEW START]",
                                   "[AGENT 2 REVIEW END]", &a2, &a2_len);
    if (p->has_agent1) memset(m + (a1 - t), ' ', a1_len);
    if (p->has_agent2) memset(m + (a2 - t), ' ', a2_len);

    /* Statements in text order, so the last verdict seen per reviewer is its latest. */
    for (const char *line = t; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *next = nl ? nl + 1 : end, *l = line, *close_at;
        size_t l_len = (size_t)((nl ? nl : end) - line);
        trim(&l, &l_len);
        char close[64];
        int who;
        if (l_len < 64 && statement_open(l, l_len, &who, close) &&
            find_line(next, (size_t)(end - next), close, &close_at)) {
            int v = numeric_verdict(next, (size_t)(close_at - next));
            if (v) p->latest[who] = v;
            p->statements++;
            memset(m + (next - t), ' ', (size_t)(close_at - next));
            next = close_at;
        }
        line = next;
    }

    /* Instructions, read outside the quoted blocks. */
    size_t n = masked->len;
    p->bracketed = strstr(m, "[[") != NULL;
    p->options = strstr(m, "[[D]]") || strstr(m, "C or D")   ? 4
                 : strstr(m, "[[C]]") || strstr(m, "B or C") ? 3
                                                              : 2;
    p->must_disagree = find_ci(m, n, "must disagree") != NULL;
    p->discussion = find_ci(m, n, "only 1 or 2") != NULL;
    if (p->discussion) p->options = 2;
    for (const char *s = m; (s = find_ci(s, (size_t)(m + n - s), "you are reviewer "));) {
        s += sizeof "you are reviewer " - 1;
        char who = to_lower(*s);
        if ((who == 'a' || who == 'b') && !is_alnum(s[1])) {
            p->self = who - 'a';
            break;
        }
    }
    if (p->has_agent1) p->agent1 = bracket_verdict(a1, a1_len, p->options);
    if (p->has_agent2) p->agent2 = bracket_verdict(a2, a2_len, p->options);

    /* Pointwise (header, pointwise step 0), read with the answer's body blanked as well; the
    ** side-by-side fields above were read before, so they are what they always were. */
    if (p->last_user && find_delimited(p->last_user, p->last_user_len, "[ANSWER START]",
                                       "[ANSWER END]", &p->answer, &p->answer_len)) {
        memset(m + last_user_at + (size_t)(p->answer - p->last_user), ' ', p->answer_len);
        if (find_ci(m, n, "<answer>correct</answer> or <answer>incorrect</answer>"))
            p->pointwise = POINTWISE_YESNO;
        else if (find_ci(m, n, "<answer>n</answer> with n from 1 to 5"))
            p->pointwise = POINTWISE_GRADE;
        p->justify = find_ci(m, n, "<justification>") != NULL;
        find_language(p->last_user, p->last_user_len, p->answer, p->answer_len, &p->language,
                      &p->language_len);
    }
    /* Persona (header, persona step R0), only when the request is not pointwise. */
    if (!p->pointwise && p->last_user) persona_read(p, m, n, last_user_at);
    return 0;
}

static const char *const reason_text[4] = {
    "Simulated judgment: the first answer is more accurate, more relevant and more complete "
    "than the second, so the first answer is better.",
    "Simulated judgment: the second answer is more accurate, more relevant and more complete "
    "than the first, so the second answer is better.",
    "Simulated judgment: both answers are accurate, relevant and complete, and neither is "
    "clearly better, so both are good.",
    "Simulated judgment: both answers contain errors or miss what was asked, so both are bad.",
};

/* What verdict v says, for the sentences of the debate and discussion roles. */
static const char *verdict_phrase(char v, int options)
{
    switch (v) {
    case 'A': return "the first answer is better";
    case 'B': return "the second answer is better";
    case 'C': return options == 4 ? "both answers are good" : "neither answer is clearly better";
    default: return "both answers are bad";
    }
}

/* Writes a reply of the debate and discussion roles: lead (the sentence up to the verdict's
** description), what the verdict says, and the verdict in the prompt's format. */
static int put_reply(arb__buf *out, const sim_prompt *p, const char *lead, char verdict)
{
    if (p->discussion)
        return arb__buf_printf(out, "%s%s.\n%c", lead, verdict_phrase(verdict, p->options),
                               verdict == 'A' ? '1' : '2');
    if (p->bracketed)
        return arb__buf_printf(out, "%s%s.\n[[%c]]", lead, verdict_phrase(verdict, p->options),
                               verdict);
    return arb__buf_printf(out, "%c", verdict);
}

/* The verdict a hard agent 2 gives when its own equals agent 1's (header, step 5). */
static char opposite(char v, int options, double z)
{
    switch (v) {
    case 'A': return 'B';
    case 'B': return 'A';
    case 'C': return options == 4 ? 'D' : z > 0 ? 'A' : 'B';
    default: return 'C';
    }
}

/* Writes the reply of a debate's agent 2 or judge agent, or of a discussion reviewer, given the
** judge's own verdict (header, step 5). Returns 0, or -1 when out of memory. */
static int role_reply(const arb_sim_judge *j, const sim_prompt *p, char own, double z, double u5,
                      arb__buf *out)
{
    char lead[96];
    if (p->discussion) {
        if (!p->statements) return put_reply(out, p, "Simulated review: ", own);
        int mine = p->self >= 0 ? p->latest[p->self] : 0;
        int theirs = p->self >= 0 ? p->latest[1 - p->self] : 0;
        char other = p->self == 0 ? 'B' : 'A';
        if (!mine) return put_reply(out, p, "Simulated review: in my own judgment ", own);
        char held = mine == 1 ? 'A' : 'B';
        if (!theirs) return put_reply(out, p, "Simulated review: I keep my preference: ", held);
        if (theirs == mine) {
            snprintf(lead, sizeof lead, "Simulated review: I agree with Reviewer %c: ", other);
            return put_reply(out, p, lead, held);
        }
        if (u5 < j->conformity) {
            snprintf(lead, sizeof lead, "Simulated review: I now agree with Reviewer %c: ", other);
            return put_reply(out, p, lead, theirs == 1 ? 'A' : 'B');
        }
        snprintf(lead, sizeof lead,
                 "Simulated review: I disagree with Reviewer %c and keep my preference: ", other);
        return put_reply(out, p, lead, held);
    }
    if (p->has_agent2) { /* the judge agent */
        if (p->agent1 && p->agent1 == p->agent2 && u5 < j->conformity)
            return put_reply(out, p, "Simulated judgment: both agents agree, and I follow them: ",
                             p->agent1);
        return put_reply(out, p, "Simulated judgment: having read both agents, I judge for "
                                 "myself: ", own);
    }
    /* agent 2 */
    char v1 = p->agent1;
    if (!v1)
        return put_reply(out, p, "Simulated review: the first reviewer gave no clear verdict; in "
                                 "my own judgment ", own);
    if (p->must_disagree)
        return put_reply(out, p, "Simulated review: I disagree with the first reviewer: ",
                         own != v1 ? own : opposite(v1, p->options, z));
    if (u5 < j->conformity)
        return put_reply(out, p, "Simulated review: I agree with the first reviewer and take its "
                                 "verdict: ", v1);
    return put_reply(out, p, own == v1 ? "Simulated review: I agree with the first reviewer: "
                                       : "Simulated review: I disagree with the first reviewer: ",
                     own);
}

/* Writes the reply of judge j to a pointwise request p into out (header, pointwise model);
** *latency_ms receives the delay before sending. Returns 0, or -1 when out of memory. */
static int pointwise_reply(const arb_sim_server *srv, const arb_sim_judge *j,
                           const sim_prompt *p, uint64_t stream, arb__buf *out,
                           double *latency_ms)
{
    static const char *const yesno_value[2] = {"incorrect", "correct"};
    static const char *const yesno_text[2] = {
        "Simulated judgment: the answer contains errors or misses what was asked, so it is "
        "incorrect.",
        "Simulated judgment: the answer is accurate and gives what was asked, so it is correct.",
    };
    static const char *const grade_text[5] = {
        "Simulated judgment: the answer is wrong or beside the point.",
        "Simulated judgment: the answer is mostly wrong, with a few correct parts.",
        "Simulated judgment: the answer is partly correct, with clear gaps or errors.",
        "Simulated judgment: the answer is correct, with minor gaps.",
        "Simulated judgment: the answer is fully correct, complete and clear.",
    };
    int yesno = p->pointwise == POINTWISE_YESNO;
    double q = pointwise_quality(srv, p->answer, p->answer_len, p->language, p->language_len);
    double noise = j->noise, strict = j->strict;
    size_t at = language_index(j, p->language, p->language_len);
    if (at < j->n_languages) {
        if (j->languages[at].noise >= 0) noise = j->languages[at].noise;
        if (j->languages[at].strict >= 0) strict = j->languages[at].strict;
    }

    /* The draws u[1] ... u[6], always all and in the documented order. */
    double u[7] = {0};
    for (int k = 1; k <= 6; k++) u[k] = uniform01(&stream);
    *latency_ms = j->latency_ms * (0.5 + u[3]);

    const char *open = p->justify ? "<result><justification>" : "<result>";
    const char *close_reason = p->justify ? "</justification>" : "";
    if (u[1] < j->invalid_rate) {
        switch ((int)(u[2] * 4.0)) {
        case 0: return arb__buf_puts(out, "I'm sorry, but I can't grade this answer.");
        case 1: /* reasoning without a value: the justification alone, or bare prose */
            return arb__buf_printf(out, "%sSimulated judgment: the answer is partly right, and "
                                        "deciding needs more context than I have.%s",
                                   p->justify ? open : "",
                                   p->justify ? "</justification></result>" : "");
        case 2:
            return arb__buf_printf(out, "%s%s%s<answer>%s</answer></result>", open,
                                   p->justify ? "Simulated judgment: the answer fits none of the "
                                                "offered values."
                                              : "",
                                   close_reason, yesno ? "unsure" : "6");
        default: return 0; /* the empty reply */
        }
    }

    int value = yesno ? q >= 0.5 : 1 + (int)lround(4.0 * q); /* the truth (POINTWISE.md) */
    if (u[4] < strict) value = yesno ? 0 : value > 1 ? value - 1 : 1;
    if (u[5] < noise) value = yesno ? (int)(u[6] * 2.0) : 1 + (int)(u[6] * 5.0);
    char grade[2] = {(char)('0' + value), '\0'};
    return arb__buf_printf(out, "%s%s%s<answer>%s</answer></result>", open,
                           !p->justify ? "" : yesno ? yesno_text[value] : grade_text[value - 1],
                           close_reason, yesno ? yesno_value[value] : grade);
}

/* Writes the scores of one candidate as a JSON object {"name": v, ...}. The names hold no
** character JSON must escape (read_metrics). Returns 0, or -1 when out of memory. */
static int put_scores(arb__buf *out, const char *const *names, size_t n, const int *scores)
{
    int rc = arb__buf_puts(out, "{");
    for (size_t k = 0; k < n; k++)
        rc |= arb__buf_printf(out, "%s\"%s\": %d", k ? ", " : "", names[k], scores[k]);
    return rc | arb__buf_puts(out, "}");
}

/* Writes the reply of judge j to a persona request p into out (header, persona model);
** *latency_ms receives the delay before sending. Returns 0, or -1 when out of memory. */
static int persona_reply(const arb_sim_server *srv, const arb_sim_judge *j, const sim_prompt *p,
                         uint64_t stream, arb__buf *out, double *latency_ms)
{
    static const char *const default_metrics[] = {"creativity", "accuracy", "efficiency",
                                                  "reliability"};
    const char *names[SIM_MAX_METRICS];
    size_t n_metrics =
        p->n_metrics ? p->n_metrics : sizeof default_metrics / sizeof *default_metrics;
    for (size_t k = 0; k < n_metrics; k++)
        names[k] = p->n_metrics ? p->metrics[k] : default_metrics[k];
    int candidates = p->persona;

    /* The draws, always all and in the documented order (persona step S2). */
    double u1 = uniform01(&stream);
    double u2 = uniform01(&stream);
    double u3 = uniform01(&stream);
    *latency_ms = j->latency_ms * (0.5 + u3);
    int scores[2][SIM_MAX_METRICS];
    double mean[2] = {0, 0};
    for (int c = 0; c < candidates; c++) {
        double base = 10.0 * oracle_quality(srv, p->response[c], p->response_len[c]) +
                      persona_shift(j, p->identity[c], p->identity_len[c]);
        for (size_t k = 0; k < n_metrics; k++) {
            double v = round(base + j->persona_sd * normal01(&stream)); /* halves away from 0 */
            scores[c][k] = v < 0 ? 0 : v > 10 ? 10 : (int)v;
            mean[c] += scores[c][k];
        }
        mean[c] /= (double)n_metrics;
    }
    double eta = candidates == 2 ? normal01(&stream) : 0.0;

    if (u1 < j->invalid_rate) {
        switch ((int)(u2 * 4.0)) {
        case 0: return arb__buf_puts(out, "I'm sorry, but I can't score this work.");
        case 1:
            return arb__buf_puts(out, "Simulated judgment: the work follows sensible steps, but "
                                      "putting numbers on it needs more context than I have.");
        case 2: /* JSON cut short */
            return arb__buf_printf(out, "%s{\"%s\": %d,",
                                   candidates == 2 ? "{\"candidate_1\": " : "", names[0],
                                   scores[0][0]);
        default: return 0; /* the empty reply */
        }
    }
    if (candidates == 1) return put_scores(out, names, n_metrics, scores[0]);
    int first = mean[0] - mean[1] + j->position_bias + eta > 0;
    int rc = arb__buf_puts(out, "{\"candidate_1\": ");
    rc |= put_scores(out, names, n_metrics, scores[0]);
    rc |= arb__buf_puts(out, ", \"candidate_2\": ");
    rc |= put_scores(out, names, n_metrics, scores[1]);
    rc |= arb__buf_printf(out,
                          ", \"preferred\": \"candidate_%d\", \"reasons\": \"Simulated judgment: "
                          "on balance I prefer candidate %d (mean score %.2f against %.2f).\"}",
                          first ? 1 : 2, first ? 1 : 2, mean[first ? 0 : 1], mean[first ? 1 : 0]);
    return rc ? -1 : 0;
}

/* Writes the reply of judge j to the parsed request into out (see the header, steps 1-5);
** *latency_ms receives the delay before sending. Returns 0, or -1 when out of memory. */
static int judge_reply(const arb_sim_server *srv, const arb_sim_judge *j, json_t *messages,
                       uint64_t stream, arb__buf *out, double *latency_ms, int *options_out)
{
    arb__buf text, masked;
    arb__buf_init(&text, 0);
    arb__buf_init(&masked, 0);
    sim_prompt p;
    int rc = prompt_read(messages, &text, &masked, &p);
    arb__buf_free(&text); /* p keeps nothing that points into them */
    arb__buf_free(&masked);
    if (rc) return -1;
    *options_out = p.options;
    if (p.pointwise) return pointwise_reply(srv, j, &p, stream, out, latency_ms);
    if (p.persona) return persona_reply(srv, j, &p, stream, out, latency_ms);

    double q1 = 0.5, q2 = 0.5;
    const char *a;
    size_t a_len;
    if (p.last_user && find_delimited(p.last_user, p.last_user_len, "[ANSWER 1 START]",
                                      "[ANSWER 1 END]", &a, &a_len))
        q1 = oracle_quality(srv, a, a_len);
    if (p.last_user && find_delimited(p.last_user, p.last_user_len, "[ANSWER 2 START]",
                                      "[ANSWER 2 END]", &a, &a_len))
        q2 = oracle_quality(srv, a, a_len);

    /* The draws, always all and in the documented order. */
    double u1 = uniform01(&stream);
    double u2 = uniform01(&stream);
    double eps = normal01(&stream);
    double u3 = uniform01(&stream);
    double u4 = uniform01(&stream);
    double u5 = uniform01(&stream);
    *latency_ms = j->latency_ms * (0.5 + u4);
    int options = p.options;
    int role = p.discussion || p.has_agent1 || p.has_agent2;

    if (u1 < j->invalid_rate) {
        static const char out_of_mode[5] = {0, 0, 'C', 'D', 'Z'};
        switch ((int)(u2 * 4.0)) {
        case 0:
            return arb__buf_puts(out, "I'm sorry, but I can't help with comparing these answers.");
        case 1:
            return arb__buf_puts(out,
                                 "Simulated judgment: the first answer is more detailed while the "
                                 "second is more concise; both address the question, and weighing "
                                 "accuracy against completeness needs more context than I have.");
        case 2:
            if (p.discussion)
                return arb__buf_puts(out, "Simulated review: neither answer fits the offered "
                                          "options.\n3");
            if (p.bracketed)
                return arb__buf_printf(out,
                                       "Simulated judgment: neither answer fits the offered "
                                       "options.\n[[%c]]",
                                       out_of_mode[options]);
            return arb__buf_printf(out, "%c", out_of_mode[options]);
        default:
            return 0; /* the empty reply */
        }
    }

    double z = j->skill * (q1 - q2) + j->position_bias + eps;
    char verdict = z > 0 ? 'A' : 'B';
    if (options == 4) {
        if (q1 >= 0.6 && q2 >= 0.6 && fabs(z) < j->tie_propensity) verdict = 'C';
        else if (q1 < 0.4 && q2 < 0.4 && u3 < j->bothbad_propensity) verdict = 'D';
    } else if (options == 3 && fabs(z) < j->tie_propensity) {
        verdict = 'C';
    }
    if (role) return role_reply(j, &p, verdict, z, u5, out);
    if (p.bracketed)
        return arb__buf_printf(out, "%s\n[[%c]]", reason_text[verdict - 'A'], verdict);
    return arb__buf_printf(out, "%c", verdict);
}

static void sleep_ms(double ms)
{
    if (!(ms > 0)) return;
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000.0);
    ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000.0) * 1e6);
    if (ts.tv_nsec >= 1000000000L) ts.tv_nsec = 999999999L;
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

/* Structured output (see the header): rewrites the reply in *content as the JSON object the
** schema asks for. Returns 0, or -1 when out of memory. */
static int structured_reply(arb__buf *content, json_t *schema)
{
    const char *text = content->data ? content->data : "";
    char v = arb_verdict_extract(text, content->len, 4, NULL);
    const char *nl = strrchr(text, '\n');
    json_t *sentence = json_stringn(text, nl ? (size_t)(nl - text) : content->len);
    json_t *out = json_object();
    const char *name;
    json_t *prop;
    int bad = !sentence || !out;
    json_object_foreach(json_object_get(schema, "properties"), name, prop) {
        if (bad) break;
        json_t *choices = json_object_get(prop, "enum");
        if (json_is_array(choices)) {
            size_t i;
            json_t *c;
            json_array_foreach(choices, i, c) {
                const char *cs = json_string_value(c);
                if (cs && cs[0] == v && !cs[1]) {
                    bad = json_object_set(out, name, c) != 0;
                    break;
                }
            }
        } else if (!strcmp(json_string_value(json_object_get(prop, "type")) ?
                               json_string_value(json_object_get(prop, "type")) : "", "string")) {
            bad = json_object_set(out, name, sentence) != 0;
        }
    }
    char *dumped = bad ? NULL : json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(out);
    json_decref(sentence);
    if (!dumped) return -1;
    arb__buf_free(content);
    arb__buf_init(content, 0);
    int rc = arb__buf_puts(content, dumped);
    free(dumped);
    return rc ? -1 : 0;
}

/* The token classes of the logprobs tokenizer (see the header): 0 white space, 1 letters,
** digits and bytes >= 0x80, 2 punctuation (a run of one repeated byte). */
static int token_class(unsigned char c)
{
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return 0;
    return is_alnum((char)c) || c >= 0x80 ? 1 : 2;
}

/* One token object {token, logprob, top_logprobs} with top[0..n_top) as alternatives (texts
** and probabilities), cut to top_n. NULL when out of memory. */
static json_t *lp_token(const char *text, size_t len, double p, const char *const *alt_text,
                        const size_t *alt_len, const double *alt_p, size_t n_alt, int top_n)
{
    json_t *top = json_array();
    for (size_t i = 0; top && i < n_alt && (int)i < top_n; i++)
        if (json_array_append_new(top, json_pack("{s:s%, s:f}", "token", alt_text[i], alt_len[i],
                                                 "logprob", log(alt_p[i])))) {
            json_decref(top);
            top = NULL;
        }
    return top ? json_pack("{s:s%, s:f, s:o}", "token", text, len, "logprob", log(p),
                           "top_logprobs", top)
               : NULL;
}

/* Logprobs of a reply (see the header): *out gets the token list (NULL when out of memory).
** options is the request's option mode. */
static int sim_logprobs(const char *content, int options, int top_n, arb_sim_logprobs mode,
                        json_t **out)
{
    size_t len = strlen(content);
    char *answer = NULL, *thinking = NULL;
    if (arb__judge_split_thinking(content, &answer, &thinking)) return -1;
    free(thinking);
    size_t alen = strlen(answer), at = SIZE_MAX, vlen = 1;
    static const char *const positions[] = {"A", "B", "C", "D"};
    static const char *const grades[] = {"1", "2", "3", "4", "5"};
    static const char *const yesno[] = {"correct", "incorrect"};
    const char *const *labels = positions;
    int k = options, chosen = -1;
    const char *why;
    if (strstr(answer, "<answer>")) {
        int v = arb__pointwise_locate(answer, alen, ARB_POINTWISE_YESNO, &why, &at);
        if (v >= 0) {
            labels = yesno, k = 2, chosen = v == 1 ? 0 : 1, vlen = v == 1 ? 7 : 9;
        } else if ((v = arb__pointwise_locate(answer, alen, ARB_POINTWISE_GRADE, &why, &at)) >= 1) {
            labels = grades, k = 5, chosen = v - 1;
        }
    } else {
        char v = arb__verdict_locate(answer, alen, options, NULL, &at);
        if (v >= 'A' && v <= 'D') chosen = v - 'A';
        static const char *const candidates[] = {"1", "2"}; /* after "candidate_" */
        int c;
        if (chosen < 0 && (c = arb__persona_preferred_locate(answer, alen, &at)) >= 0)
            labels = candidates, k = 2, chosen = c;
    }
    /* the verdict's offset in content: the answer is content's tail */
    size_t off = chosen >= 0 && at != SIZE_MAX && alen <= len &&
                         !memcmp(content + len - alen, answer, alen)
                     ? len - alen + at
                     : SIZE_MAX;
    free(answer);
    double u = (double)(XXH3_64bits_withSeed(content, len, 0x10C9) >> 11) * 0x1.0p-53;
    double p = 0.5 + 0.45 * u;
    json_t *list = json_array();
    int rc = list ? 0 : -1;
    for (size_t b = 0; !rc && b < len;) {
        size_t e = b + 1;
        int cls = token_class((unsigned char)content[b]);
        while (e < len && token_class((unsigned char)content[e]) == cls &&
               (cls != 2 || content[e] == content[b]))
            e++;
        if (off != SIZE_MAX && e == off && mode == ARB_SIM_LOGPROBS_MERGED && b < off) {
            /* merged: this token runs on to the end of the verdict's token */
            size_t f = off + 1;
            int vcls = token_class((unsigned char)content[off]);
            while (f < len && token_class((unsigned char)content[f]) == vcls) f++;
            e = f;
        }
        json_t *tok;
        if (off != SIZE_MAX && b <= off && off < e) {
            const char *alt_text[6];
            size_t alt_len[6], n_alt = 0;
            double alt_p[6];
            char *made[6] = {0};
            alt_text[n_alt] = content + b, alt_len[n_alt] = e - b, alt_p[n_alt++] = p;
            for (int o = 0; o < k && !rc; o++) {
                if (o == chosen) continue;
                /* the verdict token with the verdict replaced by option o */
                made[n_alt] = arb__sprintf("%.*s%s%.*s", (int)(off - b), content + b, labels[o],
                                           (int)(e - off - vlen), content + off + vlen);
                if (!made[n_alt]) rc = -1;
                alt_text[n_alt] = made[n_alt];
                alt_len[n_alt] = made[n_alt] ? strlen(made[n_alt]) : 0;
                alt_p[n_alt++] = 0.8 * (1 - p) / (k - 1);
            }
            alt_text[n_alt] = "The", alt_len[n_alt] = 3, alt_p[n_alt++] = 0.2 * (1 - p);
            tok = rc ? NULL : lp_token(content + b, e - b, p, alt_text, alt_len, alt_p, n_alt, top_n);
            for (size_t i = 0; i < n_alt; i++) free(made[i]);
        } else {
            const char *self = content + b;
            size_t self_len = e - b;
            double one = 1;
            tok = lp_token(content + b, e - b, 1, &self, &self_len, &one, 1, top_n);
        }
        if (!tok || json_array_append_new(list, tok)) rc = -1;
        b = e;
    }
    if (rc) {
        json_decref(list);
        list = NULL;
    }
    *out = list;
    return rc;
}

/* Code points of the contents of the request's system messages. */
static size_t system_chars(json_t *messages)
{
    size_t i, n = 0;
    json_t *msg;
    json_array_foreach(messages, i, msg) {
        json_t *c = json_object_get(msg, "content");
        if (json_is_string(c) && !strcmp(json_string_value(json_object_get(msg, "role")) ?
                                         json_string_value(json_object_get(msg, "role")) : "",
                                         "system"))
            n += arb__utf8_codepoints(json_string_value(c), json_string_length(c));
    }
    return n;
}

/* Think mode (see the header): writes the misleading thinking of the reply in *content to
** *thinking and rewrites *content as the mode sends it. Returns 0, or -1 when out of memory. */
static int think_reply(arb__buf *content, arb__buf *thinking, arb_sim_think mode)
{
    const char *text = content->data ? content->data : "";
    char v = arb_verdict_extract(text, content->len, 4, NULL);
    char wrong = v == 'A' ? 'B' : 'A';
    int rc = arb__buf_printf(thinking, "Simulated thinking (a simulator, not a language model): "
                                       "a first impression, before checking: [[%c]].", wrong);
    const char *a = strstr(text, "<answer>");
    if (a) {
        a += 8;
        const char *e = strstr(a, "</answer>");
        size_t n = e ? (size_t)(e - a) : 0;
        const char *other = n == 7 && !memcmp(a, "correct", 7)     ? "incorrect"
                            : n == 9 && !memcmp(a, "incorrect", 9) ? "correct"
                            : n == 1 && a[0] >= '1' && a[0] <= '5'
                                ? (const char *[]){"2", "3", "4", "5", "1"}[a[0] - '1']
                                : NULL;
        if (other) rc |= arb__buf_printf(thinking, " <answer>%s</answer>", other);
    }
    rc |= arb__buf_puts(thinking, " The answer below is the one that counts.");
    if (rc) return -1;
    if (mode == ARB_SIM_THINK_REASONING_CONTENT || mode == ARB_SIM_THINK_REASONING) return 0;
    arb__buf out;
    arb__buf_init(&out, 0);
    rc = mode == ARB_SIM_THINK_OPEN ? 0 : arb__buf_puts(&out, "<think>\n");
    rc |= arb__buf_append(&out, thinking->data, thinking->len);
    if (mode != ARB_SIM_THINK_CUT)
        rc |= arb__buf_puts(&out, "\n</think>\n\n") | arb__buf_append(&out, text, content->len);
    if (rc) {
        arb__buf_free(&out);
        return -1;
    }
    arb__buf_free(content);
    *content = out;
    return 0;
}

/* Appends the bytes the request's random stream is keyed by (see the header): the model, then
** per message its role, name and content, then the seed and the temperature. Each field is
** NUL-terminated (JSON strings hold no NUL here) and a type byte tells a missing field from an
** empty one. Returns 0, or -1 when out of memory. */
static int request_key(arb__buf *key, const char *model, json_t *messages, json_t *seed_v,
                       json_t *temp_v)
{
    int rc = arb__buf_append(key, model, strlen(model) + 1);
    size_t i;
    json_t *msg;
    json_array_foreach(messages, i, msg) {
        static const char *const fields[] = {"role", "name", "content"};
        for (size_t f = 0; f < 3; f++) {
            json_t *v = json_object_get(msg, fields[f]);
            if (json_is_string(v))
                rc |= arb__buf_append(key, "s", 1) |
                      arb__buf_append(key, json_string_value(v), json_string_length(v) + 1);
            else
                rc |= arb__buf_append(key, "n", 2);
        }
    }
    if (json_is_integer(seed_v))
        rc |= arb__buf_printf(key, "seed=%" JSON_INTEGER_FORMAT, json_integer_value(seed_v));
    else
        rc |= arb__buf_puts(key, "seed=none");
    rc |= arb__buf_append(key, "", 1);
    if (json_is_number(temp_v))
        rc |= arb__buf_printf(key, "temperature=%.17g", json_number_value(temp_v));
    else
        rc |= arb__buf_puts(key, "temperature=none");
    return rc ? -1 : 0;
}

static enum MHD_Result handle_chat(arb_sim_server *srv, struct MHD_Connection *conn,
                                   arb__upload *rq)
{
    unsigned long long arrival = atomic_fetch_add(&srv->arrivals, 1);
    if (srv->fail_rate > 0) {
        uint64_t s = srv->seed ^ 0x5EEDFA11ULL ^ (arrival * 0xD1B54A32D192ED03ULL);
        if (uniform01(&s) < srv->fail_rate)
            return send_error(srv, conn, 500, "server_error", NULL, NULL,
                              "simulated server failure (fail_rate %g)", srv->fail_rate);
    }
    if (srv->throttle_rate > 0) {
        uint64_t s = srv->seed ^ 0x7A7E11D5ULL ^ (arrival * 0x9E3779B97F4A7C15ULL);
        if (uniform01(&s) < srv->throttle_rate)
            return send_error(srv, conn, 429, "rate_limit_exceeded", "rate_limit_exceeded", NULL,
                              "simulated rate limit (throttle_rate %g)", srv->throttle_rate);
    }
    if (rq->too_big)
        return send_error(srv, conn, 413, "invalid_request_error", "request_too_large", NULL,
                          "request body is larger than %zu bytes", SIM_MAX_BODY);

    if (srv->instant) {
        char model[256];
        if (scan_model(rq->body.data, rq->body.len, model, sizeof model))
            return send_instant(srv, conn, arrival, model, rq->body.len);
    }

    enum MHD_Result ret = MHD_NO;
    arb__buf key, content, thinking;
    arb__buf_init(&key, 0);
    arb__buf_init(&content, 0);
    arb__buf_init(&thinking, 0);
    json_error_t jerr;
    json_t *req = json_loadb(rq->body.data ? rq->body.data : "", rq->body.len, 0, &jerr);
    if (!req) {
        ret = send_error(srv, conn, 400, "invalid_request_error", NULL, NULL,
                         "request body is not valid JSON: line %d, column %d: %s", jerr.line,
                         jerr.column, jerr.text);
        goto done;
    }
#define BAD_REQUEST(...)                                                                       \
    do {                                                                                       \
        ret = send_error(srv, conn, 400, "invalid_request_error", NULL, NULL, __VA_ARGS__);    \
        goto done;                                                                             \
    } while (0)
    if (!json_is_object(req)) BAD_REQUEST("request body must be a JSON object");
    json_t *model_v = json_object_get(req, "model");
    const char *model = json_string_value(model_v);
    if (!model) BAD_REQUEST("field \"model\" must be a string, got %s", arb__json_kind(model_v));
    json_t *messages = json_object_get(req, "messages");
    if (!json_is_array(messages) || json_array_size(messages) == 0)
        BAD_REQUEST("field \"messages\" must be a non-empty array, got %s",
                    arb__json_kind(messages));
    size_t prompt_chars = 0, i;
    json_t *msg;
    json_array_foreach(messages, i, msg) {
        json_t *role = json_object_get(msg, "role"), *text = json_object_get(msg, "content");
        if (!json_is_object(msg))
            BAD_REQUEST("messages[%zu] must be an object, got %s", i, arb__json_kind(msg));
        if (!json_is_string(role))
            BAD_REQUEST("messages[%zu].role must be a string, got %s", i, arb__json_kind(role));
        if (json_is_string(text))
            prompt_chars += arb__utf8_codepoints(json_string_value(text), json_string_length(text));
        else if (!json_is_null(text))
            BAD_REQUEST("messages[%zu].content must be a string (the simulator takes no content "
                        "arrays), got %s",
                        i, arb__json_kind(text));
    }
    json_t *stream_v = json_object_get(req, "stream");
    if (json_is_true(stream_v)) BAD_REQUEST("\"stream\": true is not supported by the simulator");
    json_t *temp_v = json_object_get(req, "temperature");
    if (temp_v && !json_is_null(temp_v) && !json_is_number(temp_v))
        BAD_REQUEST("field \"temperature\" must be a number, got %s", arb__json_kind(temp_v));
    json_t *seed_v = json_object_get(req, "seed");
    if (seed_v && !json_is_null(seed_v) && !json_is_integer(seed_v))
        BAD_REQUEST("field \"seed\" must be an integer, got %s", arb__json_kind(seed_v));
    json_t *lp_v = json_object_get(req, "logprobs"), *top_v = json_object_get(req, "top_logprobs");
    if (lp_v && !json_is_null(lp_v) && !json_is_boolean(lp_v))
        BAD_REQUEST("field \"logprobs\" must be a boolean, got %s", arb__json_kind(lp_v));
    if (top_v && !json_is_null(top_v) &&
        (!json_is_integer(top_v) || json_integer_value(top_v) < 0 || json_integer_value(top_v) > 20))
        BAD_REQUEST("field \"top_logprobs\" must be an integer from 0 to 20");
    if (top_v && !json_is_null(top_v) && !json_is_true(lp_v))
        BAD_REQUEST("\"top_logprobs\" needs \"logprobs\": true");
    json_t *rf = json_object_get(req, "response_format"), *rf_schema = NULL;
    if (rf && !json_is_null(rf)) {
        const char *type = json_string_value(json_object_get(rf, "type"));
        if (!json_is_object(rf) || !type ||
            (strcmp(type, "text") && strcmp(type, "json_object") && strcmp(type, "json_schema")))
            BAD_REQUEST("field \"response_format\" must be an object whose \"type\" is text, "
                        "json_object or json_schema");
        json_t *js = json_object_get(rf, "json_schema");
        if (!strcmp(type, "json_schema") &&
            (!json_is_object(js) || !json_is_string(json_object_get(js, "name")) ||
             !json_is_object(json_object_get(js, "schema"))))
            BAD_REQUEST("response_format of type json_schema needs \"json_schema\": {\"name\": "
                        "string, \"schema\": object}");
        if (!strcmp(type, "json_schema")) rf_schema = json_object_get(js, "schema");
    }
#undef BAD_REQUEST

    if (srv->instant) {
        ret = send_completion(srv, conn, arrival, model, "[[A]]", prompt_chars, NULL);
        goto done;
    }

    const arb_sim_judge *judge = NULL;
    for (size_t k = 0; k < srv->n_judges && !judge; k++)
        if (!strcmp(srv->judges[k].model, model)) judge = &srv->judges[k];
    if (!judge) {
        ret = send_error(srv, conn, 404, "invalid_request_error", "model_not_found", NULL,
                         "the model '%s' does not exist on this simulator", model);
        goto done;
    }

    /* The request's random stream (see the header). */
    double temperature = json_is_number(temp_v) ? json_number_value(temp_v) : 0.0;
    int has_seed = json_is_integer(seed_v);
    if (request_key(&key, model, messages, seed_v, temp_v)) goto done;
    uint64_t stream = XXH3_64bits_withSeed(key.data, key.len, srv->seed);
    if (temperature > 0 && !has_seed) {
        long long seen_before = seen_bump(srv, stream);
        if (seen_before < 0) goto done;
        stream ^= (uint64_t)seen_before * 0xD1B54A32D192ED03ULL;
    }
    double latency_ms = 0;
    int options = 2;
    if (judge_reply(srv, judge, messages, stream, &content, &latency_ms, &options)) goto done;
    sleep_ms(latency_ms);
    if (rf_schema && structured_reply(&content, rf_schema)) goto done;
    sim_thinking th = {.mode = judge->think};
    if (judge->think != ARB_SIM_THINK_NONE) {
        if (think_reply(&content, &thinking, judge->think)) goto done;
        th.text = thinking.data ? thinking.data : "";
        th.cached_chars = system_chars(messages);
    }
    if (json_is_true(lp_v) && judge->logprobs != ARB_SIM_LOGPROBS_NONE &&
        sim_logprobs(content.data ? content.data : "", options,
                     json_is_integer(top_v) ? (int)json_integer_value(top_v) : 0, judge->logprobs,
                     &th.logprobs))
        goto done;
    ret = send_completion(srv, conn, arrival, model, content.data ? content.data : "",
                          prompt_chars, &th);
    json_decref(th.logprobs);
done:
    arb__buf_free(&key);
    arb__buf_free(&content);
    arb__buf_free(&thinking);
    json_decref(req);
    return ret;
}

/* ---- MHD callbacks ----------------------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    arb_sim_server *srv = cls;
    arb__upload *rq = NULL;
    int more = arb__upload_step(req_cls, SIM_MAX_BODY, upload_data, upload_data_size, &rq);
    if (more) return more > 0 ? MHD_YES : MHD_NO;
    int batch_result;
    if (arb__sim_batches_handle(srv->batches, conn, url, method, rq, &batch_result))
        return (enum MHD_Result)batch_result;
    int is_chat = !strcmp(url, "/v1/chat/completions") || !strcmp(url, "/chat/completions");
    int is_models = !strcmp(url, "/v1/models") || !strcmp(url, "/models");
    if (is_chat) {
        if (strcmp(method, MHD_HTTP_METHOD_POST))
            return send_error(srv, conn, 405, "invalid_request_error", "method_not_allowed",
                              "POST", "use POST for /v1/chat/completions");
        return handle_chat(srv, conn, rq);
    }
    if (is_models) {
        if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
            return send_error(srv, conn, 405, "invalid_request_error", "method_not_allowed",
                              "GET, HEAD", "use GET for /v1/models");
        return send_models(srv, conn);
    }
    return send_error(srv, conn, 404, "invalid_request_error", "not_found", NULL,
                      "unknown endpoint; this simulator serves POST /v1/chat/completions and "
                      "GET /v1/models");
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    arb__upload_free(req_cls);
}

/* ---- lifecycle --------------------------------------------------------------------------- */


/* Starts the server. On success *out owns a running daemon (stop it with
** arb_sim_server_stop); on failure *out is NULL and *errmsg (if not NULL) explains (arb_free).
** params->judges and params->answers_oracle are read here; the oracle's answer texts are
** borrowed for the server's lifetime. */
arb_status arb_sim_server_start(const arb_sim_params *params, arb_sim_server **out,
                                char **errmsg)
{
    if (errmsg) *errmsg = NULL;
    if (out) *out = NULL;
    if (!params || !out) {
        arb__set_err(errmsg, "simulator: missing parameters");
        return ARB_INVALID;
    }
    if (!(params->cached_share >= 0.0 && params->cached_share <= 1.0)) {
        arb__set_err(errmsg, "simulator: cached_share must be in [0, 1], got %g",
                     params->cached_share);
        return ARB_INVALID;
    }
    if (!(params->fail_rate >= 0.0 && params->fail_rate <= 1.0)) {
        arb__set_err(errmsg, "simulator: fail_rate must be in [0, 1], got %g", params->fail_rate);
        return ARB_INVALID;
    }
    if (!(params->throttle_rate >= 0.0 && params->throttle_rate <= 1.0)) {
        arb__set_err(errmsg, "simulator: throttle_rate must be in [0, 1], got %g",
                     params->throttle_rate);
        return ARB_INVALID;
    }
    if (params->port < 0 || params->port > 65535) {
        arb__set_err(errmsg, "simulator: port must be in [0, 65535], got %d", params->port);
        return ARB_INVALID;
    }
    if ((params->n_judges && !params->judges) || (!params->instant && !params->n_judges)) {
        arb__set_err(errmsg, "simulator: no judges given (give at least one, or use instant mode)");
        return ARB_INVALID;
    }
    for (size_t i = 0; i < params->n_judges; i++) {
        char what[160];
        snprintf(what, sizeof what, "simulator: judge %zu", i + 1);
        if (judge_check(&params->judges[i], what, errmsg)) return ARB_INVALID;
        for (size_t k = 0; k < i; k++)
            if (!strcmp(params->judges[k].model, params->judges[i].model)) {
                arb__set_err(errmsg, "simulator: model \"%s\" is given twice", params->judges[i].model);
                return ARB_INVALID;
            }
    }

    arb_status st = ARB_NOMEM;
    int fd = -1, family = AF_INET, mutex_ready = 0;
    arb_sim_server *srv = calloc(1, sizeof *srv);
    if (!srv) goto nomem;
    srv->instant = params->instant != 0;
    srv->seed = params->seed;
    srv->fail_rate = params->fail_rate;
    srv->throttle_rate = params->throttle_rate;
    srv->cached_share = params->cached_share;
    atomic_init(&srv->served, 0);
    atomic_init(&srv->arrivals, 0);
    if (pthread_mutex_init(&srv->seen_lock, NULL)) goto nomem;
    mutex_ready = 1;
    if (params->n_judges) {
        srv->judges = malloc(params->n_judges * sizeof *srv->judges);
        if (!srv->judges) goto nomem;
        memcpy(srv->judges, params->judges, params->n_judges * sizeof *srv->judges);
        srv->n_judges = params->n_judges;
    }
    if (params->answers_oracle && !srv->instant) {
        st = oracle_build(srv, params->answers_oracle, errmsg);
        if (st) goto fail;
    }

    const char *address = params->bind_address ? params->bind_address : "127.0.0.1";
    fd = arb__listen(address, params->port, "", &family, &srv->port, errmsg);
    if (fd < 0) {
        st = ARB_IO;
        goto fail;
    }
    int sleeps = 0;
    for (size_t i = 0; i < srv->n_judges; i++)
        if (srv->judges[i].latency_ms > 0) sleeps = 1;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC;
    if (family == AF_INET6) flags |= MHD_USE_IPv6;
    unsigned int pool = 0;
    if (sleeps && !srv->instant) {
        flags |= MHD_USE_THREAD_PER_CONNECTION | MHD_USE_AUTO;
    } else {
        flags |= MHD_USE_EPOLL;
        pool = SIM_POOL_THREADS;
    }
    srv->batches = arb__sim_batches_create(params->batch_delay_ms, params->batch_fail_every,
                                           params->batch_expire);
    if (!srv->batches) goto nomem;
    arb__sim_batches_set_port(srv->batches, srv->port);
    srv->daemon = MHD_start_daemon(
        flags, (uint16_t)srv->port, NULL, NULL, on_request, srv, MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned int)120, MHD_OPTION_THREAD_POOL_SIZE, pool, MHD_OPTION_END);
    if (!srv->daemon) {
        arb__set_err(errmsg, "simulator: cannot start the HTTP daemon on %s port %d", address,
                srv->port);
        st = ARB_IO;
        goto fail;
    }
    *out = srv;
    return ARB_OK;

nomem:
    arb__set_err(errmsg, "simulator: out of memory");
    st = ARB_NOMEM;
fail:
    if (fd >= 0) close(fd);
    if (srv) {
        if (mutex_ready) pthread_mutex_destroy(&srv->seen_lock);
        arb__sim_batches_destroy(srv->batches);
        free(srv->judges);
        free(srv->answers.slots);
        free(srv->references.slots);
        free(srv);
    }
    return st;
}

/* Returns the port the server listens on (the chosen one when params->port was 0). */
int arb_sim_server_port(const arb_sim_server *srv) { return srv ? srv->port : 0; }

/* Returns the number of replies queued so far (completions and errors alike). */
unsigned long long arb_sim_server_requests(const arb_sim_server *srv)
{
    return srv ? atomic_load(&((arb_sim_server *)srv)->served) : 0;
}

/* Stops the daemon (waiting for its threads) and frees everything. Accepts NULL. */
void arb_sim_server_stop(arb_sim_server *srv)
{
    if (!srv) return;
    arb__sim_batches_destroy(srv->batches); /* its workers call the daemon: first */
    MHD_stop_daemon(srv->daemon); /* also closes the listening socket */
    pthread_mutex_destroy(&srv->seen_lock);
    free(srv->seen);
    free(srv->judges);
    free(srv->answers.slots);
    free(srv->references.slots);
    free(srv);
}
