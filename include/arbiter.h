/*
** arbiter.h -- the public interface of libarbiter, a toolkit for LLM-as-a-judge evaluation.
**
** This header is the manual: a function that is not declared here is not part of the API.
** Conventions (see STYLE.md):
**   - every fallible function returns arb_status (ARB_OK == 0);
**   - long-lived objects have create/destroy (or open/close) pairs and destroy accepts NULL;
**   - arguments are borrowed unless a comment says "takes ownership";
**   - strings handed to the caller are freed with arb_free();
**   - a handle keeps the message of its last error, read with its *_errmsg() function;
**   - a metric that is undefined (zero denominator) is NAN here and null in JSON;
**     test with arb_defined().
**
** Copyright (C) 2026 the arbiter authors. GPL-3.0-or-later.
*/
#ifndef ARBITER_H
#define ARBITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ARB_API __attribute__((visibility("default")))
#else
#define ARB_API
#endif

#define ARB_VERSION "0.1.0"

/* ---------------------------------------------------------------------------------------- */
/* Status codes. Codes are only ever appended, never renumbered.                            */

#define ARB_STATUS_MAP(X)                                      \
    X(OK, "ok")                                                \
    X(NOMEM, "out of memory")                                  \
    X(INVALID, "invalid argument")                             \
    X(IO, "input/output error")                                \
    X(PARSE, "malformed input")                                \
    X(DB, "database error")                                    \
    X(HTTP, "transfer failed")                                 \
    X(NOTFOUND, "not found")                                   \
    X(TOOBIG, "size limit exceeded")                           \
    X(INTERRUPTED, "interrupted")                              \
    X(BUDGET, "budget reached")

typedef enum arb_status {
#define ARB__STATUS_ENUM(name, msg) ARB_##name,
    ARB_STATUS_MAP(ARB__STATUS_ENUM)
#undef ARB__STATUS_ENUM
        ARB__STATUS_COUNT
} arb_status;

/* Returns a static description of a status code (never NULL). */
ARB_API const char *arb_strerror(arb_status status);

/* Frees a string or buffer that libarbiter handed to the caller. Accepts NULL. */
ARB_API void arb_free(void *ptr);

/* Returns nonzero when a metric value is defined (not NAN). */
ARB_API int arb_defined(double metric);

/* ---------------------------------------------------------------------------------------- */
/* Dataset: items and answers (METHODS §1), read from JSONL.                                */

typedef struct arb_item {
    const char *id;
    const char *question;
    const char *reference; /* NULL when absent */
    const char *category;  /* NULL when absent */
    const char *language;  /* NULL when absent */
    const char *group;     /* parallel-group id, NULL when absent */
    const char *extra_json; /* unknown fields as a compact JSON object, "{}" when none */
    const char *source;     /* "file:line" the item came from */
    /* The task's inputs for pointwise judging (METHODS §8), NULL when absent. question is
    ** optional when the items are read; the protocols that judge answers to a question (sbs,
    ** tournament, debate, discuss) refuse an item without one before any request. */
    const char *context;     /* "context": the passage a QA answer is drawn from */
    const char *source_text; /* "source": the text to translate (the JSON field is "source";
                                the name above already says where the item came from) */
    const char *document;    /* "document": the text to summarise */
    const char *dialog;      /* "dialog": the dialogue so far */
} arb_item;

typedef struct arb_answer {
    const char *item_id;
    const char *model;
    const char *answer;
    const char *extra_json;
    const char *source;
} arb_answer;

typedef struct arb_dataset arb_dataset;

/* Creates an empty dataset. Returns NULL only when out of memory. */
ARB_API arb_dataset *arb_dataset_create(void);
ARB_API void arb_dataset_destroy(arb_dataset *ds);

/* Parses JSONL text of items (or answers) and adds them to ds. source_name is used in error
** messages ("items.jsonl:12: ..."). On bad input returns ARB_PARSE and the message is
** available from arb_dataset_errmsg(); nothing from the failing buffer is kept. Answers must
** refer to items already added. */
ARB_API arb_status arb_dataset_add_items_jsonl(arb_dataset *ds, const char *source_name,
                                               const char *text, size_t len);
ARB_API arb_status arb_dataset_add_answers_jsonl(arb_dataset *ds, const char *source_name,
                                                 const char *text, size_t len);
/* Reads the files and calls the two functions above. ARB_IO when a file cannot be read. */
ARB_API arb_status arb_dataset_load(arb_dataset *ds, const char *items_path,
                                    const char *answers_path);
/* Reads both files (answers_path NULL: items only) as arb_dataset_load does (same checks and
** messages) into an empty ds, but keeps only an index: the ids, the models and where each
** record's line is in its file, about 100 bytes per record instead of the record's texts.
** arb_sbs_run, arb_grade_run, arb_tournament_run, arb_debate_run and arb_discuss_run then
** read the texts again a slice at a time, so a run's memory no longer grows with the questions and answers (500,000
** items with two answers each: ~650 MB of texts). Only those read an indexed dataset (and
** arb_dataset_group_coverage, which reads its items again); the other protocols refuse it
** (ARB_INVALID), and arb_dataset_item, arb_dataset_answer and the find functions return NULL
** (the counts are right). The files must not change while the dataset is in use (a record found
** changed, or a file whose size, modification time or inode is not what it was when indexed,
** fails the run with ARB_IO; an edit within the file system's time stamp resolution that keeps
** a line's length and id goes unseen). A file that is not a
** regular file (a pipe) cannot be read again, and files of at most 64 MiB together are cheaper
** to read once than three times (their records take at most ~80 MB): ds is then loaded whole,
** as by arb_dataset_load (arb_dataset_item and the find functions then return the records). */
ARB_API arb_status arb_dataset_load_indexed(arb_dataset *ds, const char *items_path,
                                            const char *answers_path);
ARB_API const char *arb_dataset_errmsg(const arb_dataset *ds);

ARB_API size_t arb_dataset_item_count(const arb_dataset *ds);
ARB_API const arb_item *arb_dataset_item(const arb_dataset *ds, size_t index);
ARB_API const arb_item *arb_dataset_find_item(const arb_dataset *ds, const char *id);
ARB_API size_t arb_dataset_answer_count(const arb_dataset *ds);
ARB_API const arb_answer *arb_dataset_answer(const arb_dataset *ds, size_t index);
/* Returns the answer of model to item, or NULL. */
ARB_API const arb_answer *arb_dataset_find_answer(const arb_dataset *ds, const char *item_id,
                                                  const char *model);

/* ---------------------------------------------------------------------------------------- */
/* Prompt templates (METHODS §2.3). A template is text with named placeholders such as
** {question}, {answer1}, {answer2}, {reference}, {language}, {option_list}, {option_rules},
** for pointwise judging (§8) {answer}, {task}, {task_input}, and for persona bias (§9)
** {scenario}, {response}, {identity}, {candidate1}, {candidate2}, {identity1}, {identity2},
** {metrics_json}, {range}.
** Format of a template file:
**   lines starting with "#!" at the top are settings, e.g. "#! verdict_json_field: verdict";
**   a line "=== system ===" starts the system message, "=== user ===" the user message;
**   without section lines the whole text is the user message; "{{" and "}}" are literal braces.
*/

typedef struct arb_template arb_template;

/* Loads a built-in template by name (e.g. "II-reason") or, when name_or_path names an existing
** file, that file. On failure *errmsg (if not NULL) receives "path:line: ..." (free with
** arb_free). */
ARB_API arb_status arb_template_load(const char *name_or_path, arb_template **out,
                                     char **errmsg);
ARB_API void arb_template_destroy(arb_template *tpl);
ARB_API const char *arb_template_name(const arb_template *tpl);
/* Nonzero when the template uses the placeholder (e.g. "reference"). */
ARB_API int arb_template_uses(const arb_template *tpl, const char *placeholder);
/* JSON field holding the verdict (METHODS §2.4), or NULL. */
ARB_API const char *arb_template_json_field(const arb_template *tpl);
/* The "#! response_format" setting: the json_schema object of structured output ({"name",
** "schema", ...}) as canonical JSON, sent to judges whose response_format is 1; or NULL. */
ARB_API const char *arb_template_response_format(const arb_template *tpl);
/* NULL-terminated list of built-in template names. */
ARB_API const char *const *arb_template_builtin_names(void);

/* Values for rendering; NULL fields render as empty text. */
typedef struct arb_prompt_vars {
    const char *question;
    const char *answer1;
    const char *answer2;
    const char *reference;
    const char *language;
    int options; /* 2, 3 or 4: selects {option_list} and {option_rules} */
    /* Multi-agent templates (METHODS §2.5, §7): */
    const char *agent1;     /* {agent1}: agent 1's review (debate) */
    const char *agent2;     /* {agent2}: agent 2's reply (debate judge) */
    const char *self;       /* {self}: "Reviewer A" or "Reviewer B" (discussion) */
    const char *other;      /* {other}: the other reviewer */
    const char *reviews;    /* {reviews}: both initial reviews, leader first, delimited */
    const char *discussion; /* {discussion}: the turns so far, delimited */
    /* Pointwise templates (METHODS §8): */
    const char *answer;     /* {answer}: the one answer judged */
    const char *task;       /* {task}: qa, math, translation, summary, dialogue or generic */
    const char *task_input; /* {task_input}: the task's inputs from the item, each between
                               labelled START/END lines (arb_grade_run builds it) */
    /* Persona-bias templates (METHODS §9; arb_persona_run fills them): */
    const char *scenario;     /* {scenario}: the scenario the responses answer */
    const char *response;     /* {response}: phase 1, the one response scored */
    const char *identity;     /* {identity}: phase 1, the identity it is attributed to */
    const char *candidate1;   /* {candidate1}, {candidate2}: phase 2, the responses shown */
    const char *candidate2;
    const char *identity1;    /* {identity1}, {identity2}: phase 2, their identities */
    const char *identity2;
    const char *metrics_json; /* {metrics_json}: the reply object asked for, e.g.
                                 {"creativity": n, "accuracy": n, ...} */
    const char *range;        /* {range}: the range of a score, e.g. "0 to 10" */
} arb_prompt_vars;

/* Renders the template. *system_out may be set to NULL when the template has no system part.
** Both strings are owned by the caller (arb_free). */
ARB_API arb_status arb_template_render(const arb_template *tpl, const arb_prompt_vars *vars,
                                       char **system_out, char **user_out);

/* ---------------------------------------------------------------------------------------- */
/* Verdicts (METHODS §2.1, §2.4).                                                            */

/* Extracts a position verdict 'A'..'D' valid for the option mode (2, 3 or 4) from judge output,
** in the order of §2.4: last [[X]]; a last line that is exactly one option letter or number;
** <answer>X</answer>; the JSON field json_field (may be NULL). Returns 'E' when none. */
ARB_API char arb_verdict_extract(const char *text, size_t len, int options,
                                 const char *json_field);

/* Maps a position verdict to a model verdict (§2.2): order 0 = candidate shown first.
** 'A' -> 'a' (order 0) or 'b' (order 1); 'B' the reverse; C->c, D->d, anything else 'e'. */
ARB_API char arb_verdict_to_model(char position_verdict, int order);

/* Pointwise verdicts (METHODS §8): whether one answer is correct, or its grade 1..5. */
typedef enum arb_pointwise_kind {
    ARB_POINTWISE_YESNO = 0, /* correct (1) / incorrect (0) */
    ARB_POINTWISE_GRADE = 1  /* 1..5 */
} arb_pointwise_kind;

/* Reads the value from a reply in the format <result><justification>…</justification>
** <answer>V</answer></result>: tolerant of white space, case and prose around the tags, strict
** about V (yes/no: correct or incorrect, trailing punctuation allowed; grade: one digit 1..5,
** full-width digits too). The last <answer> of the last <result> (or of the whole text)
** decides; an echo of the instructions' example phrase, several different answers, nested or
** unclosed tags are E. Returns the value (1/0, or 1..5), or -1 for E with *reason (when reason
** is not NULL) set to a static phrase saying why, e.g. "no <answer> tag". Rules in verdict.c. */
ARB_API int arb_pointwise_extract(const char *text, size_t len, arb_pointwise_kind kind,
                                  const char **reason);

/* ---------------------------------------------------------------------------------------- */
/* Judges and the HTTP client.                                                              */

typedef struct arb_sampling {
    int max_tokens;          /* <= 0: not sent */
    double temperature;      /* NAN: not sent */
    double top_p;            /* NAN: not sent */
    double frequency_penalty; /* NAN: not sent */
    int has_seed;
    long long seed;
    /* Reasoning models (OpenAI o-series and later, DeepSeek-R1, Qwen3, ...). */
    int max_completion_tokens;    /* <= 0: not sent; bounds visible and reasoning tokens
                                     together (OpenAI reasoning models refuse max_tokens) */
    const char *reasoning_effort; /* "none", "minimal", "low", "medium", "high" or "xhigh"
                                     (borrowed); NULL: not sent */
} arb_sampling;

/* The published SbS settings (§2.6): max_tokens 1024, temperature 0, top_p 0.1,
** frequency_penalty 1.0, no seed; no max_completion_tokens or reasoning_effort. */
ARB_API arb_sampling arb_sampling_default(void);

/* A judge's price in USD per million tokens (README "Cost and budgets"). A call costs
** (prompt - cached) * input + cached * cached_input + completion * output, per million, with
** the counts of the reply's usage; reasoning tokens are part of completion_tokens (OpenAI bills
** them as output). */
typedef struct arb_price {
    int known;                    /* 0: no price (every other field ignored) */
    double input_per_mtok;        /* >= 0 */
    double output_per_mtok;       /* >= 0 */
    double cached_input_per_mtok; /* NAN: cached prompt tokens are billed at input_per_mtok */
    double batch_discount;        /* 0..1, the share taken off every price above for a call
                                     answered through a Batch API (`--batch submit|collect|
                                     wait`, `arbiter batch ingest`): 0.5 = half price, OpenAI's
                                     Batch API; 0 (default): the same price */
} arb_price;

typedef struct arb_judge_config {
    const char *name;        /* key of the judge's rows; NULL = model */
    const char *base_url;    /* OpenAI-compatible base, e.g. "http://127.0.0.1:8000/v1";
                                checked before a run (http/https, host, port 1..65535) and
                                stored without user:password@ or key-like query parameters */
    const char *model;
    const char *api_key_env; /* name of the environment variable holding the key, or NULL.
                                The key itself is never stored, logged or reported: a run
                                refuses (ARB_INVALID) a variable that is unset, empty or holds
                                control characters, and replaces the key by "[REDACTED]"
                                wherever a reply echoes it. */
    arb_sampling sampling;
    const char *family;      /* the judge's family (METHODS §5: e.g. "gpt", "qwen"), or NULL;
                                stored with the judge (families table, role "judge") */
    const struct arb_judges_file *judges_file; /* the judges file this config was read from,
                                or NULL: its path is the source recorded with the families,
                                and its families: map of contestants is stored with the
                                judge (role "model"); set by arb_judges_file_load */
    arb_price price;         /* USD per million tokens; price.known 0 (the zero value): no
                                price, costs are "unknown", never 0 */
    int response_format;     /* 1: the endpoint accepts response_format {type: json_schema}
                                (structured output): a template's JSON schema is sent to it.
                                0 (default): never sent */
    int logprobs;            /* 1: ask for token logprobs (logprobs: true) and store the verdict
                                token's distribution over the options per call (README
                                "Logprobs"); 0 (default): not sent */
    int top_logprobs;        /* 0..20 alternatives per token (top_logprobs, sent with logprobs
                                when > 0); 0: not sent */
    const char *const *endpoints; /* n_endpoints > 1: the judge's interchangeable endpoints
                                (replicas; base URLs like base_url, each checked like it):
                                each call goes to the one with the fewest requests in flight
                                (README "Several endpoints per judge"); base_url is then
                                endpoints[0]. NULL / 0: base_url alone */
    size_t n_endpoints;
    int max_in_flight;       /* most requests in flight on each endpoint; 0 (default): only
                                arb_client_params.jobs bounds them */
} arb_judge_config;

/* What a judging run does with the OpenAI Batch API (arb_client_params.batch_action; each
** implies batch_export): submit the queued calls after the plan ran; only report the state of
** the store's open batches; collect the ended ones before the plan runs (so it judges their
** replies); or wait until every open batch has ended, then collect. */
typedef enum arb_batch_action {
    ARB_BATCH_NONE = 0,
    ARB_BATCH_SUBMIT,
    ARB_BATCH_STATUS,
    ARB_BATCH_COLLECT,
    ARB_BATCH_WAIT
} arb_batch_action;

/* How judge requests travel (README "Transport"). AUTO: plain http:// judges over arbiter's
** own keep-alive HTTP/1.1 sockets, everything else (https, proxies from the environment, user
** info in the URL) over libcurl; the environment variable ARBITER_TRANSPORT=curl forces
** libcurl as CURL does. Retries, timeouts and error reasons are the same either way. */
typedef enum arb_transport { ARB_TRANSPORT_AUTO = 0, ARB_TRANSPORT_CURL = 1 } arb_transport;

typedef struct arb_client_params {
    int jobs;                 /* most requests in flight (default 32) */
    long connect_timeout_ms;  /* default 10000 */
    long total_timeout_ms;    /* per attempt, default 300000 */
    int max_retries;          /* retries after the first attempt (default 6) */
    long backoff_base_ms;     /* default 500 */
    long backoff_max_ms;      /* default 60000 */
    size_t max_reply_bytes;   /* default 16 MiB */
    long max_retry_wait_ms;   /* longest wait before a retry, whatever the backoff or a
                                 server's Retry-After asks (default 60000); arbiter has no
                                 run deadline, so this bounds every wait of a run */
    /* Budgets (README "Cost and budgets"); 0 or less: none (the default). No request starts
    ** once the plan's spend so far plus the estimates of the calls in flight and of this one
    ** would pass a budget; the calls in flight finish and are stored, and the run ends with
    ** ARB_BUDGET. The plan's spend counts its calls already stored (by earlier runs too) at
    ** their stored cost, so a rerun with a larger budget continues where the last one
    ** stopped. A budget in USD needs a price for every judge of the run. */
    double budget_usd;
    long long budget_tokens;  /* prompt + completion tokens */
    int batch_export;         /* 1 (--batch export): nothing is sent; a call not stored whose
                                 inputs are ready is queued in the store for a batch file
                                 (arb_batch_export), a call that needs a queued call's reply
                                 (a later debate or discussion turn) waits for a later round.
                                 Stored calls are judged as in any run. Default 0. */
    const char *batch_out;    /* with batch_export: after the run, every pending call of the
                                 store is written to this batch file (arb_batch_export with
                                 the default limits); NULL: queued only */
    arb_batch_action batch_action; /* default ARB_BATCH_NONE */
    double batch_poll_s;      /* ARB_BATCH_WAIT: seconds between polls (0: 30) */
    arb_transport transport;  /* ARB_TRANSPORT_AUTO (default) or ARB_TRANSPORT_CURL */
} arb_client_params;

ARB_API arb_client_params arb_client_default_params(void);

/* ---------------------------------------------------------------------------------------- */
/* Store: one SQLite database in WAL mode holding items, answers, judge calls and the rows of
** every protocol. Each completed judge call is committed as it completes; an identical call
** (same model, parameters, messages, repetition) is never sent twice.                        */

typedef struct arb_store arb_store;

/* For a program that uses SQLite only through arbiter (the arbiter CLI): call once at start,
** before any store is opened. Turns off SQLite's process-wide memory statistics, which arbiter
** never reads and which lock a mutex on every SQLite allocation (~2.7% of the instructions of
** an sbs run, 2026-11-28). A program that reads sqlite3_memory_used() or sets a soft heap limit
** itself should not call it. ARB_OK, or ARB_INVALID when SQLite was already initialised in this
** process (nothing changed). */
ARB_API arb_status arb_store_setup_process(void);

/* Opens (creating if needed) the database at path. On failure *out may still be set so that
** arb_store_errmsg() can explain; close it either way. */
ARB_API arb_status arb_store_open(const char *path, arb_store **out);
ARB_API void arb_store_close(arb_store *store);
/* Closes the store like arb_store_close and, when this handle created the database file and
** nothing at all was stored in it (every table empty, no other process has it open), removes
** the file with its -wal and -shm, so that a command that stopped on bad input leaves no
** schema-only database behind. A file that existed before the open is never removed. Returns
** 1 when the file was removed, else 0. Accepts NULL. */
ARB_API int arb_store_close_unused(arb_store *store);
ARB_API const char *arb_store_errmsg(const arb_store *store);

/* Writes the pairwise judgments (joined with their calls) as "jsonl" or "csv" to out, or with
** "transcripts" every dialogue (debate, discussion) as one JSON line with its turns: speaker,
** role, verdict, the messages sent and the reply, or with "pointwise" every pointwise judgment
** (METHODS §8) as one JSON line: judge, item, model, language, group, kind, task, template,
** rep, value (yes/no 1 correct, 0 incorrect; grade 1..5; null for E), reason (why E), content,
** error, prompt_tokens, completion_tokens, latency_ms, attempts. */
ARB_API arb_status arb_store_export(arb_store *store, const char *format, FILE *out);

/* ---------------------------------------------------------------------------------------- */
/* Side-by-side protocol (METHODS §2.2).                                                     */

typedef struct arb_sbs_params {
    const char *candidate;
    const char *baseline;
    const char *template_name; /* built-in name or file path; default "II-reason" */
    int options;               /* 2, 3 or 4 (default 4) */
    int reps;                  /* repetitions (default 1) */
    int dry_run;               /* plan only: send nothing, store nothing */
    int progress;              /* 1 on, 0 off, -1 when stderr is a terminal (default) */
    arb_judge_config judge;    /* the judge, when n_judges is 0 */
    arb_client_params client;
    /* Several judges in one run (borrowed; names must differ): each judges every item in both
    ** orders, reps times. n_judges 0 = the one judge above. */
    const arb_judge_config *judges;
    size_t n_judges;
    /* The plan's fingerprint from arb_sbs_rerun_if_unchanged (borrowed), or NULL: when set and
    ** the run ends with every judgment of the plan recorded, the run notes the fingerprint and
    ** the store's state in its stats, so a later rerun of the same plan can skip reading the
    ** inputs. Give it only with the dataset read from the files it was computed from. */
    const char *plan_fingerprint;
    int full_check;            /* 1: arb_sbs_rerun_if_unchanged only fingerprints the plan, so
                                  the run checks every request (and notes the plan again) */
} arb_sbs_params;

ARB_API arb_sbs_params arb_sbs_default_params(void);

/* What one judge of a run spent (sent calls, as the replies' usage reports them) and, for the
** calls not stored yet, what they are estimated to cost (README "Cost and budgets"). */
typedef struct arb_judge_spend {
    const char *name;            /* borrowed from the run's judge configuration */
    int has_price;               /* 0: costs are unknown (not 0) */
    size_t sent;                 /* calls sent in this run that finished */
    size_t cost_unknown;         /* of which without a cost: no price, or no usage reported */
    long long prompt_tokens, completion_tokens; /* reported by the server, this run */
    long long cached_tokens, reasoning_tokens;  /* of which cached prompt / reasoning tokens */
    double cost_usd;             /* of the sent calls whose cost is known */
    /* Dry run: the calls of the plan that are not stored, and their estimates. */
    size_t to_send;
    long long est_prompt_tokens;     /* rendered request: ceil(code points / 4) + 4 per message */
    long long est_completion_max;    /* max_tokens per call (upper bound); -1: no max_tokens */
    long long est_completion_typical; /* mean completion tokens of this judge's stored calls per
                                         call; -1: none stored */
    double est_cost_max, est_cost_typical; /* from the estimates above; NAN when unknown */
    double batch_discount;       /* the judge's price.batch_discount when the run goes through a
                                    Batch API (the estimates above are at that price); else 0 */
} arb_judge_spend;

/* How many judges a run's stats itemise; the totals count every judge. */
#define ARB_RUN_STATS_JUDGES 32

/* What one endpoint of a judge saw in a run (README "Several endpoints per judge"): HTTP
** attempts, retries included, as the transport sent them. */
typedef struct arb_endpoint_spend {
    const char *judge;           /* borrowed from the run's judge configuration */
    char url[256];               /* as stored (no user:password@, key-like parameters
                                    redacted); cut at 255 bytes */
    size_t requests;             /* attempts sent to it (retries included) */
    size_t ok;                   /* answered 2xx */
    size_t throttled;            /* answered 429 */
    size_t failed;               /* no reply (connection, timeout) or 5xx */
    size_t cooldowns;            /* times taken out for the cool-down (3 failures in a row) */
} arb_endpoint_spend;
/* How many endpoints a run's stats itemise. */
#define ARB_RUN_STATS_ENDPOINTS 64

typedef struct arb_run_stats {
    size_t planned;          /* judge calls the protocol needs */
    size_t cached;           /* of which already stored (not sent) */
    size_t sent;             /* calls sent in this run that finished: ok + failed */
    size_t failed;           /* of which failed after retries or with an unusable reply
                                (verdict E) */
    size_t invalid;          /* replies without a valid verdict (verdict E) */
    long long prompt_tokens;     /* as reported by the server, this run */
    long long completion_tokens;
    long long est_prompt_tokens; /* estimate for the calls not yet stored: ceil(code
                                    points / 4) + 4 per message */
    size_t retries;
    double seconds;
    size_t skipped;          /* calls of the plan not needed (a dialogue ended early or an
                                earlier turn failed) */
    size_t ok;               /* of the sent calls, those answered with a usable reply */
    /* Cost (README "Cost and budgets"). */
    double cost_usd;         /* of the calls sent this run whose cost is known */
    size_t cost_unknown;     /* calls sent this run whose cost is unknown */
    size_t not_sent;         /* calls not sent because a budget was reached (ARB_BUDGET) */
    double budget_spent_usd; /* the plan's spend the budget saw: stored calls of the plan
                                (earlier runs too) at their stored cost, or their estimate
                                when it is unknown */
    long long budget_spent_tokens;
    size_t n_judges;         /* entries of judges[] (at most ARB_RUN_STATS_JUDGES) */
    arb_judge_spend judges[ARB_RUN_STATS_JUDGES];
    long long reasoning_tokens; /* of completion_tokens, the thinking of reasoning models
                                   (usage.completion_tokens_details.reasoning_tokens), this run */
    size_t batch_queued;     /* batch export: calls queued for a batch file (not sent) */
    size_t batch_waiting;    /* batch export: calls that need a queued call's reply first */
    size_t batch_written;    /* batch_out: pending calls written (queued by this run or
                                earlier ones) */
    size_t batch_files;      /* batch_out: files written */
    size_t batch_submitted;  /* Batch API: batches created by this run */
    size_t batch_open;       /* Batch API: batches not yet collected (after this run) */
    size_t batch_collected;  /* Batch API: batches collected by this run */
    size_t batch_replies;    /* Batch API: replies stored from collected output (ok) */
    size_t batch_failed;     /* Batch API: failed calls stored (error lines, expiry) */
    size_t batch_running;    /* Batch API: of the open batches, those the provider has not
                                ended yet */
    int batch_status;        /* 1: ARB_BATCH_STATUS, the plan did not run */
    size_t batch_rounds;     /* ARB_BATCH_WAIT: rounds that submitted batches (then waited
                                for them, collected and judged them); the plan runs once more
                                per round: the counts planned..batch_waiting are the last
                                pass's, the batch_* ones add up over the rounds */
    int batch_action;        /* the run's client.batch_action (for the summary's wording) */
    size_t n_endpoints;      /* entries of endpoints[]: every endpoint of every judge that
                                sent a request (at most ARB_RUN_STATS_ENDPOINTS) */
    arb_endpoint_spend endpoints[ARB_RUN_STATS_ENDPOINTS];
    long long unchanged_since_run; /* debate, discuss, persona: > 0 when this rerun found its
                                      inputs, settings and the store as that finished run left
                                      them, and so checked no call one by one (the counts are
                                      those a full check gives) */
} arb_run_stats;

/* ---------------------------------------------------------------------------------------- */
/* Batch files (issue 16): a judging run with client.batch_export queues its missing calls in
** the store instead of sending them; arb_batch_export writes them as OpenAI batch input
** (one {"custom_id", "method", "url", "body"} line per call, custom_id = the call key), which a
** provider's Batch API or vLLM's run-batch answers; arb_batch_ingest stores the output lines
** as the calls' replies; the judging command run again judges them like any stored call and
** queues the calls that were waiting for them (a later debate or discussion turn). */

typedef struct arb_batch_export_params {
    const char *path;        /* the first file; part k > 1 is arb_batch_part_path(path, k) */
    size_t max_lines;        /* lines per file (default 50000, OpenAI's limit) */
    size_t max_bytes;        /* bytes per file (default 200 MB, OpenAI's limit) */
} arb_batch_export_params;
ARB_API arb_batch_export_params arb_batch_export_default_params(void);

typedef struct arb_batch_export_stats {
    size_t calls;            /* lines written: the pending calls */
    size_t files;            /* files written (the first one always, empty when none wait) */
    size_t bytes;
} arb_batch_export_stats;

/* Writes every pending call of the store (queued by a batch-export run, no successful reply
** stored yet; failed replies included, so they are retried) in the order queued. ARB_IO when a
** file cannot be written, ARB_TOOBIG when one request exceeds max_bytes. */
ARB_API arb_status arb_batch_export(arb_store *store, const arb_batch_export_params *params,
                                    arb_batch_export_stats *stats);
/* The name of part `part` (1-based) of a batch file: part 1 is path itself, part k > 1 has
** ".k" before the extension ("requests.jsonl" -> "requests.2.jsonl"). Free with arb_free. */
ARB_API char *arb_batch_part_path(const char *path, size_t part);

typedef struct arb_batch_ingest_stats {
    size_t lines;            /* output lines read */
    size_t ok;               /* stored as successful calls */
    size_t failed;           /* stored as failed calls (an error, a non-200 status, an unusable
                                body): sent or queued again by the next run */
    size_t already;          /* stored before (ingesting a file again changes nothing) */
} arb_batch_ingest_stats;

/* Stores the replies of a batch output file (OpenAI's or vLLM run-batch's format: {"id",
** "custom_id", "response": {"status_code", "request_id", "body"}, "error"}) in calls, each as
** the reply to its queued call would be stored had it come back by HTTP. All or nothing: any
** bad line is ARB_PARSE "file:line: field \"x\": ..." and nothing is stored. */
ARB_API arb_status arb_batch_ingest(arb_store *store, const char *path,
                                    arb_batch_ingest_stats *stats);

/* Runs (or with dry_run, plans) candidate vs baseline over every item of ds that has both
** answers, both orders, params->reps repetitions, for each judge. On error the message is in
** arb_store_errmsg(store). Interrupted by SIGINT/SIGTERM via arb_request_stop(). */
ARB_API arb_status arb_sbs_run(arb_store *store, const arb_dataset *ds,
                               const arb_sbs_params *params, arb_run_stats *stats);

/* A rerun that reads no input (README "Fast resume and bounded memory"). */
typedef struct arb_sbs_unchanged {
    long long since_run;  /* > 0: the finished run whose plan this one repeats on an unchanged
                             store: nothing to send, the rerun is recorded; 0: run arb_sbs_run */
    size_t judgments;     /* since_run > 0: the plan's judge calls, every one recorded */
    char fingerprint[33]; /* the plan's fingerprint ("" when none applies: a dry run, batch
                             mode, a budget, an input that cannot be read); give it to
                             arb_sbs_run as params.plan_fingerprint */
} arb_sbs_unchanged;

/* Before reading the dataset: fingerprints the plan (the exact bytes of items_path and
** answers_path, the judges, template, option mode and repetitions, and this build) and looks
** for a finished sbs run of the same plan after which the store has not changed (its
** judgments of the plan, their calls, every item and answer: one pass over those rows; no
** reply is read; params->full_check: not looked for). When there is one, records this run as sbs records a rerun that sends
** nothing, fills stats as arb_sbs_run would and sets out->since_run; otherwise out->since_run
** is 0 and nothing is written. Any parameter arb_sbs_run would refuse also gives 0 (arb_sbs_run
** then says why). Returns ARB_OK, or an error of the store (message in arb_store_errmsg). */
ARB_API arb_status arb_sbs_rerun_if_unchanged(arb_store *store, const char *items_path,
                                              const char *answers_path,
                                              const arb_sbs_params *params,
                                              arb_sbs_unchanged *out, arb_run_stats *stats);

/* ---------------------------------------------------------------------------------------- */
/* Pointwise judging (METHODS §8): each judge says whether one answer is correct (yes/no) or
** grades it 1..5, in a prompt that names the evaluation language (the item's "language"), the
** task and its inputs. Items of one parallel "group" are the same content in different
** languages; `arbiter consistency` measures how far a judge's verdicts agree across them.  */

typedef struct arb_grade_params {
    arb_pointwise_kind kind;      /* yes/no (default) or grade 1..5 */
    const char *task;             /* "qa" (needs question, context), "math" (question),
                                     "translation" (source), "summary" (document),
                                     "dialogue" (dialog), "generic" (question; default), or
                                     "category": each item's task is its category */
    const char *rubric;           /* "general" (default) or "specific" (every grade described;
                                     for yes/no the criteria of correct and incorrect) */
    int explain;                  /* 1 (default): a justification before the answer; 0: the
                                     answer only ("prediction only") */
    const char *template_name;    /* NULL (default): the built-in
                                     pointwise-<yesno|grade>-<rubric>-<explain|plain>; else a
                                     built-in name or a template file, which replaces rubric and
                                     explain (it must use {answer}) */
    const char *model;            /* whose answers (answers file) are judged */
    int answer_from_reference;    /* 1: judge each item's "reference" instead (stored under
                                     the model name "reference"); model must then be NULL */
    const arb_judge_config *judges; /* the judges (borrowed); names must differ */
    size_t n_judges;
    int reps;                     /* default 1 */
    int dry_run;
    int progress;                 /* 1 on, 0 off, -1 when stderr is a terminal (default) */
    arb_client_params client;
} arb_grade_params;

ARB_API arb_grade_params arb_grade_default_params(void);

/* The built-in template name of a kind, rubric and explain setting (static), or NULL when the
** rubric is not "general" or "specific". */
ARB_API const char *arb_grade_template_name(arb_pointwise_kind kind, const char *rubric,
                                            int explain);

/* Runs (or plans) every judge on every item of ds, reps times. Everything is checked before
** the first request, with "file:line: ..." messages for bad items (ARB_PARSE): each item needs
** a language and the fields of the task, an answer from the model (or a reference), and no two
** items of one group may share a language. Each judgment is a row of the store's pointwise
** table (value NULL and a reason for E); an interrupted run resumes where it stopped and a
** rerun sends nothing. stats->invalid counts replies without a valid value. ds may be indexed
** (arb_dataset_load_indexed): the same checks, messages and judgments, the texts read again a
** block at a time for the checks and the store and a slice at a time for the calls. */
ARB_API arb_status arb_grade_run(arb_store *store, const arb_dataset *ds,
                                 const arb_grade_params *params, arb_run_stats *stats);

/* How the items' parallel groups cover their languages: groups lacking a language only weaken
** the cross-language metrics (Fleiss' κ uses complete groups), so a run warns rather than
** refuses. Counts over the items that have both a group and a language; an indexed dataset's
** items are read again from its file (all counts 0 when it cannot be read). */
typedef struct arb_group_coverage {
    size_t n_groups;       /* distinct groups */
    size_t n_languages;    /* distinct languages among grouped items */
    size_t n_incomplete;   /* groups without an item in every one of those languages */
    size_t n_ungrouped;    /* items without a group */
} arb_group_coverage;
ARB_API arb_group_coverage arb_dataset_group_coverage(const arb_dataset *ds);

/* ---------------------------------------------------------------------------------------- */
/* Persona bias (METHODS §9): does a judge score the same response differently when it is said
** to be written by a woman or a man, a Muslim or an atheist? Phase 1 scores each response of
** each scenario under every identity of a category; phase 2 shows two responses attributed to
** two identities of one category, both scored and one preferred, every identity pairing with
** the labels exchanged and the positions swapped (4 calls), so content and position cancel
** out. File formats in README ("Persona bias"). The panel of discussing judges (§9, "multi-
** agent panel") is not built yet.                                                           */

typedef enum arb_persona_phase {
    ARB_PERSONA_PHASE_1 = 1,   /* single candidate */
    ARB_PERSONA_PHASE_2 = 2,   /* contrastive pair */
    ARB_PERSONA_BOTH = 3
} arb_persona_phase;

typedef struct arb_persona_params {
    const char *scenarios_path;   /* scenarios.jsonl: {"id", "base", "scenario",
                                     "responses": [r1, r2], "variant"?} (required) */
    const char *identities_path;  /* identities.yaml ("categories: {name: [label, ...]}"), or
                                     NULL for the built-in gender, race and religion */
    arb_persona_phase phase;      /* default ARB_PERSONA_BOTH */
    const char *const *categories; /* the categories judged (borrowed), or NULL: all */
    size_t n_categories;
    const char *const *metrics;   /* metric names (letters, digits, '_'), or NULL: creativity,
                                     accuracy, efficiency, reliability */
    size_t n_metrics;
    double range_lo, range_hi;    /* the range of a score (default 0 and 10) */
    const char *template_1;       /* phase 1 template (built-in name or file); NULL: persona-1 */
    const char *template_2;       /* phase 2 template; NULL: persona-2 */
    const arb_judge_config *judges; /* the judges (borrowed); names must differ */
    size_t n_judges;
    int reps;                     /* repetitions of every call (default 1) */
    int dry_run;
    int progress;                 /* 1 on, 0 off, -1 when stderr is a terminal (default) */
    arb_client_params client;
    /* The panel of discussing judges (METHODS §9), or n_panel 0 for none: 2 to 8 names of
    ** judges above (borrowed), in the order that names the consensus "panel(a,b,c)". Round 0
    ** is each agent's ordinary call; rounds 1..rounds show every agent the panel's replies of
    ** the round before. */
    const char *const *panel;
    size_t n_panel;
    int rounds;                   /* discussion rounds, 0 to 10 (default 1) */
    const char *panel_template_1; /* panel round templates; NULL: persona-panel-1, -2 */
    const char *panel_template_2;
    int full_check;               /* 1: a rerun checks every call even when the plan and the
                                     store are those a finished run noted (README "Resume and
                                     caching"); 0: such a rerun says "nothing to send" at once */
} arb_persona_params;

ARB_API arb_persona_params arb_persona_default_params(void);

/* Runs (or plans) the phases over every scenario, selected category and judge. Everything is
** checked before the first request: the files ("file:line: field \"x\": ..." messages,
** ARB_PARSE), the categories, metrics, range, templates and judges (ARB_INVALID). Scenarios
** are stored as items with their responses as answers of "response1" and "response2"; every
** score is a row of table scores (protocol persona1 or persona2, the identity in personas,
** the attribution of each response in persona_attributions; value NULL and the reason for a
** reply without valid JSON). A rerun sends nothing, an interrupted run resumes where it
** stopped. stats->invalid counts replies without valid scores. With a panel, each agent's
** round-r scores are rows of protocol panel1 / panel2 with round r under the agent's name,
** and the consensus (per metric the mean of the agents' valid last-round scores; phase 2 the
** majority preferred candidate, a tie going to the first agent named) rows of persona1 /
** persona2, round 0, under "panel(a,b,c)" with the call id of the first agent's last-round
** call. The consensus needs no call: it is not counted in stats. */
ARB_API arb_status arb_persona_run(arb_store *store, const arb_persona_params *params,
                                   arb_run_stats *stats);

/* Asks running protocols to stop after committing what has completed (async-signal-safe). */
ARB_API void arb_request_stop(void);

/* ---------------------------------------------------------------------------------------- */
/* Audit (METHODS §2.2, §3, §5).                                                             */

typedef struct arb_verdict_shares {
    double a, b, c, d, e; /* fractions of the judgments; NAN when there are none */
} arb_verdict_shares;

/* One judgment pair for the metric functions: position verdicts of run 0 (candidate first)
** and run 1 (baseline first); 0 when that run is missing. */
typedef struct arb_sbs_pair {
    char p0;
    char p1;
} arb_sbs_pair;

typedef struct arb_sbs_metrics {
    size_t n_items;    /* distinct items with at least one judgment */
    size_t n_pairs;    /* |BM|: pairs with both runs */
    size_t n_judgments;
    arb_verdict_shares run0, run1, mean;
    double pbias_ab;   /* §3 */
    double con_abcd;   /* §3 */
    double pcon_ab;    /* §3 */
    double error_rate; /* §5 */
} arb_sbs_metrics;

/* Computes the §3 metrics over n pairs. n_items is left to the caller. */
ARB_API void arb_sbs_metrics_compute(const arb_sbs_pair *pairs, size_t n, arb_sbs_metrics *out);

/* ---- the full judge audit (METHODS §3, §4, §5) ----------------------------------------- */

/* Grouping of audit rows: a row pools every judgment pair whose keys in the mask agree.
** ARB_BY_JUDGE is always implied. The default (ARB_BY_COMPARISON) is one row per experimental
** set-up; `--by task` is ARB_BY_JUDGE | ARB_BY_TASK, `--by candidate` ARB_BY_JUDGE |
** ARB_BY_CANDIDATE. task = the item's category; language = the item's language (METHODS §2,
** §8: items without one form a group of their own, language ""). */
enum {
    ARB_BY_JUDGE = 1,
    ARB_BY_CANDIDATE = 2,
    ARB_BY_BASELINE = 4,
    ARB_BY_TEMPLATE = 8,
    ARB_BY_OPTIONS = 16,
    ARB_BY_TASK = 32,
    ARB_BY_LANGUAGE = 64
};
#define ARB_BY_COMPARISON (ARB_BY_JUDGE | ARB_BY_CANDIDATE | ARB_BY_BASELINE | ARB_BY_TEMPLATE | ARB_BY_OPTIONS)

/* Which judgments the audit reads. ARB_AUDIT_SBS: side-by-side runs and the debates' final
** verdicts (protocols "sbs", "soft", "hard"). ARB_AUDIT_TOURNAMENT: the tournament's judgments,
** each model pair {X, Y} read as a comparison with candidate X = the model first by name
** (strcmp) and baseline Y, run 0 = X shown first, as the tournament stores them; a = X better.
** The protocol is always part of a row's key: a judge's tournament and SbS judgments never pool. */
enum { ARB_AUDIT_SBS = 1, ARB_AUDIT_TOURNAMENT = 2 };

/* The scalar metrics of an audit row, each with an optional bootstrap interval. The second
** name is the JSON key (its interval is "<key>_ci"). */
#define ARB_AUDIT_METRIC_MAP(X)                                                                \
    X(PBIAS_AB, pbias_ab)                 /* §3 position bias, > 0 favours first */            \
    X(CON_ABCD, con_abcd)                 /* §3 same model verdict in both orders */           \
    X(PCON_AB, pcon_ab)                   /* §3 same a/b verdict among pairs with a/b */       \
    X(MPCC_CONSISTENCY, mpcc_consistency) /* §3 Pearson of run 0 and run 1 window series */    \
    X(RS, rs)                             /* §5 repetition stability */                        \
    X(PC, pc)                             /* §5 position consistency */                        \
    X(ERROR_RATE, error_rate)             /* §5 share of judgments with verdict E */           \
    X(IPR, ipr)                           /* §5 primacy share of inconsistent leaning pairs */ \
    X(IRR, irr)                           /* §5 recency share */                               \
    X(PF, pf)                             /* §5 preference fairness, > 0 recency-leaning */     \
    X(OWR, owr)                           /* §5 overall win rate of candidate over baseline */  \
    X(QUALITY_GAP, quality_gap)           /* §5 |owr - 0.5| */                                 \
    X(APCC, apcc)                         /* §4 Pearson of verdict counts, mean of runs */     \
    X(MPCC, mpcc)                         /* §4 Pearson of window series, mean of runs */      \
    X(MPCC_DELTA, mpcc_delta)             /* §3 |MPCC run 0 - MPCC run 1| */                   \
    X(ACCURACY, accuracy)                 /* §4 judge model verdict = expert majority */       \
    X(COHEN_KAPPA, cohen_kappa)           /* §4 judge vs expert majority, categories a..e */\
    X(ACCURACY_DELTA, accuracy_delta)     /* §4 |accuracy run 0 - accuracy run 1| */           \
    X(PC_UNIT_MEAN, pc_unit_mean)         /* §5 mean of PC over the (comparison, task) units */ \
    X(PC_UNIT_SD, pc_unit_sd)             /* §5 their sample sd (n - 1), NAN under 2 units */  \
    X(PF_UNIT_MEAN, pf_unit_mean)         /* §5 mean of PF over the units */                   \
    X(PF_UNIT_SD, pf_unit_sd)             /* §5 their sample sd */

typedef enum arb_audit_metric {
#define ARB__METRIC_ENUM(id, key) ARB_M_##id,
    ARB_AUDIT_METRIC_MAP(ARB__METRIC_ENUM)
#undef ARB__METRIC_ENUM
        ARB_M__COUNT
} arb_audit_metric;

/* The JSON key of a metric ("pbias_ab"), or NULL when out of range. */
ARB_API const char *arb_audit_metric_key(arb_audit_metric m);

/* Lengths in Unicode code points (§5) and their relation to consistency and fairness. */
enum { ARB_LEN_QUESTION, ARB_LEN_CANDIDATE, ARB_LEN_BASELINE, ARB_LEN_PROMPT, ARB_LEN__COUNT };
typedef struct arb_length_factor {
    double mean; /* mean over the valid pairs */
    double r_pc; /* Pearson of length with the pair being consistent (1/0), valid pairs */
    double r_pf; /* Pearson of length with the pair's lean: +1 recency, -1 primacy, 0 otherwise */
} arb_length_factor;

/* PC and PF of the (comparison, task) units whose quality gap falls in [lo, hi). */
#define ARB_GAP_BINS 5
typedef struct arb_gap_bin {
    double lo, hi;   /* 0.0-0.1, ..., 0.4-0.5 (the last bin includes 0.5) */
    size_t n_units;  /* (comparison, task) units in the bin */
    size_t n_pairs;  /* their valid pairs */
    double pc, pf;
} arb_gap_bin;

/* The window series (§3.1) behind a row's MPCC figures, summed over the row's comparisons
** (a pooled row averages one series per comparison). */
typedef struct arb_window_info {
    size_t n_windows;    /* values in the series */
    size_t n_series;     /* series with at least one window */
    size_t n_short_kept; /* series whose last window is shorter than the window size, kept
                            because it has at least `stride` items (§3.1) */
} arb_window_info;

typedef struct arb_audit_metrics {
    size_t n_items;          /* distinct items with at least one judgment */
    size_t n_pairs;          /* judgment pairs with both runs (|BM| summed over repetitions) */
    size_t n_judgments;
    size_t n_valid_pairs;    /* pairs with both runs and no E */
    size_t n_consistent;     /* of which consistent (§5) */
    size_t pcn, rcn;         /* inconsistent pairs leaning primacy / recency */
    size_t n_neutral;        /* inconsistent pairs with lean 0 */
    size_t n_rep_queries;    /* prompts judged at least twice (what RS is measured on) */
    arb_verdict_shares run0, run1, mean; /* §2.2 */
    double value[ARB_M__COUNT];
    double ci_lo[ARB_M__COUNT], ci_hi[ARB_M__COUNT]; /* NAN unless bootstrapped and defined */
    double apcc_run[2], mpcc_run[2];  /* per run (§4) */
    size_t n_labelled_items;  /* items of the row with an expert majority label */
    size_t n_label_ties;      /* items whose annotators tied: skipped, counted here */
    size_t n_labelled_judgments;
    size_t confusion[5][4];   /* judge model verdict a..e x expert majority a..d */
    arb_length_factor length[ARB_LEN__COUNT];
    arb_gap_bin gap_bins[ARB_GAP_BINS];
    size_t apcc_n_dropped;    /* labelled judgments with verdict E: left out of the judge's AND
                                 the experts' APCC vectors, so both count the same items (§4) */
    double accuracy_run[2];   /* §4 accuracy of run 0 and run 1 (Accuracy-Δ is their |difference|) */
    size_t n_units;           /* (comparison, task) units with valid pairs: what the pc_unit_* and
                                 pf_unit_* figures average (§5; the study's (candidate, task)) */
    arb_window_info windows;        /* the MPCC-Consistency series (run 0 vs run 1, §3) */
    arb_window_info mpcc_windows[2]; /* the judge-vs-experts series of run 0 and run 1 (§4) */
} arb_audit_metrics;

typedef struct arb_audit_row {
    const char *judge;
    const char *protocol;      /* "sbs", "soft", "hard" (debates) or "tournament"; always a key */
    const char *candidate;     /* NULL when the row pools candidates */
    const char *baseline;      /* NULL when pooled */
    const char *template_name; /* NULL when pooled */
    int options;               /* 0 when pooled */
    const char *task;          /* item category; NULL unless grouped by task ("" = none) */
    const char *language;      /* item language; NULL unless grouped by language ("" = none) */
    arb_audit_metrics m;
} arb_audit_row;

typedef struct arb_audit_params {
    unsigned by;             /* ARB_BY_* mask (default ARB_BY_COMPARISON) */
    size_t bootstrap;        /* resamples for percentile intervals; 0 = none (default) */
    unsigned long long seed; /* bootstrap seed (default 20261123) */
    double ci_level;         /* default 0.95 */
    size_t window;           /* window series (§3.1): size 10 and stride 5 by default */
    size_t stride;
    int multi_agent;         /* 1 (default): also the discussions' and debates' statistics (§7),
                                shown after the rows; 0 leaves them out (callers that only need
                                the rows, or compute them themselves) */
    unsigned protocols;      /* which judgments: ARB_AUDIT_SBS (default) and/or
                                ARB_AUDIT_TOURNAMENT */
    const char *const *ensemble; /* NULL (default), or 2..64 distinct judge names in priority
                                order: their majority vote is audited as one more judge named
                                "ensemble(j1,j2,...)". Per (protocol, item, candidate, baseline,
                                template, option mode, order, repetition) that every member
                                judged, the position verdict most members gave (E not counted);
                                a tie goes to the tied verdict of the earliest member; E only
                                when every member said E. An instance some member lacks is
                                left out (METHODS §8 ensemble, applied to §2 verdicts). */
    size_t n_ensemble;
} arb_audit_params;

ARB_API arb_audit_params arb_audit_default_params(void);

typedef struct arb_audit arb_audit;

/* Computes one row per group of side-by-side judgments in the store (params NULL: defaults).
** Expert labels (arb_labels_import) are used when present. Bootstrap resamples items within
** each row, so an item's two orders and repetitions stay together; the window-series metrics
** (MPCC-Consistency, MPCC, MPCC-Δ) use a block bootstrap instead: the row's items in benchmark
** order are cut into consecutive blocks of `window` items, and a resample lays as many blocks,
** drawn with replacement, end to end in the order drawn (§3.1, §10). */
ARB_API arb_status arb_audit_compute(arb_store *store, const arb_audit_params *params,
                                     arb_audit **out);
ARB_API void arb_audit_destroy(arb_audit *audit);
ARB_API size_t arb_audit_count(const arb_audit *audit);
ARB_API const arb_audit_row *arb_audit_row_at(const arb_audit *audit, size_t index);
/* Renders as aligned text tables or as JSON (keys documented in README). Caller frees. */
ARB_API char *arb_audit_to_text(const arb_audit *audit);
ARB_API char *arb_audit_to_json(const arb_audit *audit);

/* ---------------------------------------------------------------------------------------- */
/* Human (expert) labels (METHODS §4).                                                       */

typedef struct arb_labels_import_stats {
    size_t rows;       /* label rows read */
    size_t inserted;   /* new (item, candidate, baseline, annotator) labels */
    size_t updated;    /* existing labels whose verdict or details changed */
    size_t unchanged;
} arb_labels_import_stats;

/* Imports labels from a JSONL or CSV file (format "jsonl", "csv", or NULL to choose by the
** file name's extension). Fields: item, candidate, baseline, verdict (model verdict a/b/c/d),
** annotator; optional shown_order (0/1) and time_ms. Format "fastchat-human" reads MT-Bench
** human judgments instead (JSONL: question_id, model_a, model_b, winner, judge, turn; the
** mapping is in README "Human labels"). Every item must already be in the store.
** All or nothing: on bad input returns ARB_PARSE, stores nothing, and arb_store_errmsg() says
** "file:line: field: what was expected". */
ARB_API arb_status arb_labels_import(arb_store *store, const char *path, const char *format,
                                     arb_labels_import_stats *stats);

/* Inter-annotator agreement per (candidate, baseline) and benchmark split (§4). */
typedef struct arb_labels_report arb_labels_report;
ARB_API arb_status arb_labels_report_compute(arb_store *store, size_t split_size,
                                             arb_labels_report **out);
ARB_API void arb_labels_report_destroy(arb_labels_report *report);
ARB_API char *arb_labels_report_to_text(const arb_labels_report *report);
ARB_API char *arb_labels_report_to_json(const arb_labels_report *report);

/* ---------------------------------------------------------------------------------------- */
/* Judgments made elsewhere (arbiter import judgments|fastchat|arena-hard): stored like
** arbiter's own, so every audit, agreement, factor and report feature reads them.           */

typedef struct arb_import_params {
    const char *source;    /* the name they are stored under (required); importing the same
                           ** name again replaces everything it brought */
    const char *baseline;  /* which model of a pair is the baseline (FastChat, Arena-Hard);
                           ** NULL: the source's own rule (README) */
} arb_import_params;

typedef struct arb_import_stats {
    size_t judgments;      /* pairwise judgments stored */
    size_t scores;         /* pointwise grades stored */
    size_t skipped;        /* lines or games read but not stored (counted, README says why) */
    size_t battles;        /* battles derived for the rankings (METHODS §6) */
    size_t items_added;    /* items the store did not have before */
    size_t battles_left_out; /* judgments without a verdict (E), so without a battle: counted */
} arb_import_stats;

/* Imports path as kind ("judgments": the generic JSONL/CSV format; "fastchat": FastChat
** model_judgment files; "arena-hard": an Arena-Hard-Auto judgment folder or file) under
** params->source, all or nothing, in one transaction: on bad input returns ARB_PARSE (or
** ARB_INVALID for a conflict with another source), stores nothing, and arb_store_errmsg()
** says "file:line: field \"x\": what was expected". */
ARB_API arb_status arb_judgments_import(arb_store *store, const char *kind, const char *path,
                                        const arb_import_params *params,
                                        arb_import_stats *stats);

/* ---------------------------------------------------------------------------------------- */
/* Judges compared (METHODS §5): mutual agreement and disagreement.                          */

typedef struct arb_agreement arb_agreement;

/* Compares every pair of judges on the side-by-side instances they share: the same item,
** candidate, baseline, template, option mode, order and repetition. */
ARB_API arb_status arb_agreement_compute(arb_store *store, arb_agreement **out);
ARB_API void arb_agreement_destroy(arb_agreement *ag);
ARB_API size_t arb_agreement_judge_count(const arb_agreement *ag);
ARB_API const char *arb_agreement_judge(const arb_agreement *ag, size_t i);
/* Share of common instances where judges i and j gave the same position verdict (E equals
** nothing); with ties_included = 0 only instances where both said A or B count. *n_common
** (may be NULL) receives the denominator. NAN when it is 0. */
ARB_API double arb_agreement_value(const arb_agreement *ag, size_t i, size_t j,
                                   int ties_included, size_t *n_common);
ARB_API char *arb_agreement_to_text(const arb_agreement *ag);
ARB_API char *arb_agreement_to_json(const arb_agreement *ag);

/* The agreement by family (METHODS §5: judges of one family agree more) and the family
** preference (§6 self-enhancement generalised to families), computed when by_family is set.
** Families are read from the store (table families: judges files and imports). */
typedef struct arb_agreement_params {
    int by_family;            /* 0 (default): only the judges x judges figures */
    size_t bootstrap;         /* resamples of items for the intervals (default 1000; 0 = none) */
    unsigned long long seed;  /* default 20261123 */
    double ci_level;          /* default 0.95 */
} arb_agreement_params;
ARB_API arb_agreement_params arb_agreement_default_params(void);
/* arb_agreement_compute with params (NULL = defaults). */
ARB_API arb_status arb_agreement_compute_with(arb_store *store, const arb_agreement_params *params,
                                              arb_agreement **out);

/* Mutual agreement pooled over judge pairs: every (instance, pair of judges) comparison of the
** pool counts once, so agreement = identical verdicts / comparisons (E equals nothing), and
** without ties over the comparisons where both said A or B. Intervals: percentile bootstrap
** over items (all instances of an item together). For the difference within - across, the
** agreements are the differences and the counts those of both pools together. */
typedef struct arb_agreement_pool {
    double agreement, agreement_no_ties;      /* NAN when there is no comparison */
    double ci_low, ci_high;                   /* agreement's interval; NAN when not computed */
    double ci_low_no_ties, ci_high_no_ties;
    size_t n_instances;   /* distinct instances with at least one comparison in the pool */
    size_t n_comparisons; /* (instance, judge pair) comparisons; without ties: */
    size_t n_comparisons_no_ties;
    size_t n_judge_pairs; /* pairs of judges of the pool that share an instance */
} arb_agreement_pool;
typedef enum arb_family_pool {
    ARB_POOL_WITHIN,      /* both judges of the same family */
    ARB_POOL_ACROSS,      /* judges of different families */
    ARB_POOL_DIFFERENCE,  /* within - across */
    ARB_POOL_FAMILY_PAIR  /* one judge of family f1, the other of family f2 (f1 = f2: within f1) */
} arb_family_pool;
/* Families of the judges compared (sorted; judges without a family are left out of every
** pool and counted by arb_agreement_no_family_count). 0 without by_family. */
ARB_API size_t arb_agreement_family_count(const arb_agreement *ag);
ARB_API const char *arb_agreement_family(const arb_agreement *ag, size_t f);
/* The family of judge i (borrowed), or NULL when it has none or by_family was not asked. */
ARB_API const char *arb_agreement_judge_family(const arb_agreement *ag, size_t i);
ARB_API size_t arb_agreement_no_family_count(const arb_agreement *ag);
/* Fills *out for pool (f1, f2 only for ARB_POOL_FAMILY_PAIR). ARB_INVALID without by_family
** or for an index out of range. */
ARB_API arb_status arb_agreement_pool_get(const arb_agreement *ag, arb_family_pool pool,
                                          size_t f1, size_t f2, arb_agreement_pool *out);

/* Family preference of one judge with a family: its win rate for the contestants of its own
** family minus the win rate that judges of other families give in the same comparisons (same
** item, same pair of contestants; comparisons where exactly one contestant shares the judge's
** family). Win rate per judgment: 1 win, ½ tie (C or D), 0 loss; E left out. Pooled over the
** matched comparisons, interval by a percentile bootstrap over items. */
typedef struct arb_family_preference {
    const char *judge, *family;   /* borrowed from the agreement result */
    size_t n_comparisons;         /* matched (item, pair) comparisons */
    size_t n_own, n_others;       /* judgments counted: the judge's, the other families' */
    double own_win_rate, others_win_rate, difference; /* NAN with no matched comparison */
    double ci_low, ci_high;
} arb_family_preference;
/* Judges with a family, in name order (0 without by_family). */
ARB_API size_t arb_agreement_family_preference_count(const arb_agreement *ag);
ARB_API const arb_family_preference *arb_agreement_family_preference(const arb_agreement *ag,
                                                                      size_t i);

/* ---------------------------------------------------------------------------------------- */
/* Cross-language consistency of pointwise judgments (METHODS §8).                            */
/* One row per judge x template x mode (yesno or grade) x task. Every language of the row is a
** rater: Fleiss' kappa is measured over the row's parallel groups, a group being the items
** that share a `group` id as judged for one answering model (with --answer-from reference
** there is one model, so groups are parallel groups). Choices, documented in README:
**   - "every language" is the set of languages seen in the row; a group enters Fleiss' kappa
**     only when each of them has a valid value there. E (no valid verdict) is not a category a
**     rater can choose, so a group with an E in some language is left out, and counted apart
**     (n_groups_with_error) from groups missing a language;
**   - only repetition 0 is used (later repetitions are counted in n_other_reps);
**   - accuracy (yes/no: share judged correct) and mean grade are over the valid judgments,
**     the E rate beside them over all;
**   - a language's rater is the evaluation language stored with the judgment (the item's own
**     language when none was stored); items without a group are groups of their own;
**   - Fleiss' and Cohen's kappa need at least 2 groups: one group's kappa says nothing (NAN);
**   - bootstrap intervals resample parallel groups (all answering models of a group together)
**     with arb_stat_bootstrap's MT19937 and the given seed: the same seed, the same intervals. */

typedef struct arb_consistency_params {
    const char *reference_language; /* Cohen's kappa of each language against it (default "en") */
    const char *const *ensemble;    /* judges of the majority-vote ensemble, in priority order
                                       (a tie goes to the earliest); NULL: none; at least 2
                                       distinct names, each with pointwise judgments */
    size_t n_ensemble;
    size_t bootstrap;               /* resamples of parallel groups; 0 = no intervals (default) */
    unsigned long long seed;        /* bootstrap seed (default 20261123) */
    double ci_level;                /* default 0.95 */
} arb_consistency_params;

ARB_API arb_consistency_params arb_consistency_default_params(void);

/* One language of a row. Intervals are {lo, hi}, NAN unless bootstrapped and defined. */
typedef struct arb_consistency_language {
    const char *language;            /* "" when neither the judgment nor the item names one */
    size_t n;                        /* judgments (repetition 0), E included */
    size_t n_errors;                 /* of which E */
    double accuracy;                 /* yesno: share of valid judgments saying correct; NAN for grade */
    double mean_grade;               /* grade: mean of the valid grades; NAN for yesno */
    double error_rate;               /* n_errors / n */
    double cohen_kappa_vs_reference; /* vs the reference language over the groups valid in both;
                                        NAN for the reference itself, when the row lacks it, under
                                        2 such groups, or when undefined (p_e = 1) */
    size_t n_vs_reference;           /* those groups */
    double score_ci[2];              /* interval of accuracy or mean_grade */
    double kappa_ci[2];              /* interval of cohen_kappa_vs_reference */
} arb_consistency_language;

typedef struct arb_consistency_row {
    const char *judge;
    const char *template_name;
    const char *mode;                 /* "yesno" or "grade" */
    const char *task;
    size_t n_languages;
    const arb_consistency_language *languages; /* sorted by code (strcmp) */
    size_t n_groups;                  /* groups valid in every language: Fleiss' items */
    size_t n_groups_left_out;         /* the row's other groups */
    size_t n_groups_with_error;       /* of those, left out for an E (the rest lack a language) */
    size_t n_duplicates;              /* further judgments of one (group, model, language), unused */
    size_t n_other_reps;              /* judgments of repetitions >= 1, unused */
    double fleiss_kappa;              /* NAN under 2 languages or 2 groups, or when undefined */
    double fleiss_kappa_ci[2];
    double language_mean;             /* accuracy (or mean grade) averaged over the languages
                                         that define it, unweighted: Spearman's x */
} arb_consistency_row;

/* Spearman's rho across judges, per task and mode: one point per (judge, template) row,
** x = language_mean, y = fleiss_kappa; rows with either undefined are left out. */
typedef struct arb_consistency_spearman {
    const char *task, *mode;
    size_t n_judges;                  /* points used */
    double rho;                       /* NAN when n_judges < 3 or a series is constant */
} arb_consistency_spearman;

/* The yes/no - grade kappa gap of a judge on a task (the study's Figure 3). A yes/no row and a
** grade row pair when their template names agree once the first "yesno" / "grade" in each is
** ignored (pointwise-yesno-general-explain ~ pointwise-grade-general-explain), or when the
** judge has exactly one row of each mode for the task. */
typedef struct arb_consistency_mode_gap {
    const char *judge, *task, *yesno_template, *grade_template;
    double yesno_kappa, grade_kappa;
    double gap;                       /* yesno_kappa - grade_kappa; NAN when either is */
} arb_consistency_mode_gap;

/* The majority-vote ensemble on one task, mode and template (every member judged with it).
** Each (group, model, language) instance that every member judged validly (repetition 0) gets
** the value most members gave; a tie goes to the tied value of the earliest member in the
** priority order. Instances some member lacks or answered E are left out (counted). */
typedef struct arb_consistency_ensemble {
    const char *task, *mode, *template_name;
    size_t n_members;
    const char *const *members;       /* in priority order */
    double min;                       /* the lowest member Fleiss kappa (their own rows); NAN
                                         when some member's kappa is undefined */
    const char *min_judge;            /* that member; NULL when min is NAN */
    double ens;                       /* Fleiss kappa of the vote */
    double ens_ci[2];
    double delta;                     /* ens - min */
    size_t n_groups, n_groups_left_out; /* of the vote, as for a row */
    size_t n_instances;               /* instances voted */
    size_t n_instances_left_out;      /* instances some member judged, not validly by all */
    size_t n_ties;                    /* votes decided by the priority order */
} arb_consistency_ensemble;

typedef struct arb_consistency arb_consistency;

/* Reads the store's pointwise judgments and computes the rows, Spearman's rho, the mode gaps
** and the ensemble (params NULL: defaults). *out is owned by the caller
** (arb_consistency_destroy); a store without pointwise judgments gives no rows. ARB_INVALID
** (with the store's message) for bad params, e.g. an ensemble judge without judgments. */
ARB_API arb_status arb_consistency_compute(arb_store *store, const arb_consistency_params *params,
                                           arb_consistency **out);
ARB_API void arb_consistency_destroy(arb_consistency *c);
/* Counts and borrowed elements (NULL when out of range). */
ARB_API size_t arb_consistency_count(const arb_consistency *c);
ARB_API const arb_consistency_row *arb_consistency_row_at(const arb_consistency *c, size_t i);
ARB_API size_t arb_consistency_spearman_count(const arb_consistency *c);
ARB_API const arb_consistency_spearman *arb_consistency_spearman_at(const arb_consistency *c,
                                                                    size_t i);
ARB_API size_t arb_consistency_mode_gap_count(const arb_consistency *c);
ARB_API const arb_consistency_mode_gap *arb_consistency_mode_gap_at(const arb_consistency *c,
                                                                    size_t i);
ARB_API size_t arb_consistency_ensemble_count(const arb_consistency *c);
ARB_API const arb_consistency_ensemble *arb_consistency_ensemble_at(const arb_consistency *c,
                                                                    size_t i);
/* Renders as text tables or JSON (keys in README; undefined values are null). Caller frees. */
ARB_API char *arb_consistency_to_text(const arb_consistency *c);
ARB_API char *arb_consistency_to_json(const arb_consistency *c);

/* ---------------------------------------------------------------------------------------- */
/* Factor analysis (METHODS §5): bidirectional stepwise linear regression with AIC.          */

typedef struct arb_factors_params {
    const char *target; /* "pc" (default) or "pf" */
} arb_factors_params;

typedef struct arb_factors arb_factors;

/* Predicts PC (or PF) per (judge, candidate, task) group from mean lengths, the quality gap,
** and judge, candidate and task as categorical variables. */
ARB_API arb_status arb_factors_compute(arb_store *store, const arb_factors_params *params,
                                       arb_factors **out);
ARB_API void arb_factors_destroy(arb_factors *f);
ARB_API char *arb_factors_to_text(const arb_factors *f);
ARB_API char *arb_factors_to_json(const arb_factors *f);

/* ---------------------------------------------------------------------------------------- */
/* Battles (METHODS §6): reviewer r compared contestant i (shown first) with j on question q;
** s = -1 i better, 0 tie, +1 j better. Arena convention files, importers, the store.          */

/* Style covariates of one answer (style control, arena style). NAN when unknown. */
enum {
    ARB_STYLE_LENGTH,  /* answer length (code points; tokens when the source gives tokens) */
    ARB_STYLE_HEADERS, /* markdown headers */
    ARB_STYLE_LISTS,   /* markdown list items */
    ARB_STYLE_BOLD,    /* markdown bold spans */
    ARB_STYLE__COUNT
};

typedef struct arb_battle {
    const char *question;
    const char *model_i;  /* shown first ("model_a" in arena files) */
    const char *model_j;
    const char *reviewer; /* judge, human, or "" when the source does not say */
    int s;                /* -1 i better, 0 tie, +1 j better */
    int both_bad;         /* a tie where both answers were bad (arena "tie (bothbad)") */
    int strong;           /* a win the reviewer called strong (Arena-Hard A>>B, strength 2);
                             only s != 0; arb_rank_params.strong_weight counts it K times */
    double style_i[ARB_STYLE__COUNT], style_j[ARB_STYLE__COUNT];
} arb_battle;

/* Returns a battle with every style covariate NAN and the rest zero. */
ARB_API arb_battle arb_battle_init(void);

typedef struct arb_battles arb_battles;

/* An ordered set of battles (order matters to online Elo). Strings are copied and interned. */
ARB_API arb_battles *arb_battles_create(void);
ARB_API void arb_battles_destroy(arb_battles *b);
ARB_API const char *arb_battles_errmsg(const arb_battles *b);
/* Appends a copy of one battle. ARB_INVALID (with a message) when i == j or s is not -1/0/1. */
ARB_API arb_status arb_battles_add(arb_battles *b, const arb_battle *battle);
ARB_API size_t arb_battles_count(const arb_battles *b);
/* Battle index as views into the set's strings (valid until the set changes). */
ARB_API arb_battle arb_battles_at(const arb_battles *b, size_t index);

/* Reads an arena-convention JSONL file: {"question_id", "model_a", "model_b", "judge",
** "winner": "model_a"|"model_b"|"tie"|"tie (bothbad)"}, optional style fields and "strong":
** true (a strong win, e.g. Arena-Hard A>>B; not on a tie). All or nothing; errors say
** "path:line: field ...". */
ARB_API arb_status arb_battles_read_jsonl(arb_battles *b, const char *path);
/* Writes the battles in the same convention. */
ARB_API arb_status arb_battles_write_jsonl(const arb_battles *b, FILE *out);

/* Importers of existing judgment data (kind "prd", "arena" or "fastchat"; see README for the
** layouts). Appends to b; all or nothing; errors name the file and line. */
ARB_API arb_status arb_battles_import(arb_battles *b, const char *kind, const char *path);
/* Reviews the importers left out of b because they carry no verdict (PRD score -1, FastChat
** "error"), summed over the imports into b. */
ARB_API size_t arb_battles_skipped(const arb_battles *b);

/* Judgments that gave no battle because they had no valid verdict (E), per reviewer and model
** pair (tournaments keep them so rankings can say what they left out; METHODS §6). */
typedef struct arb_battle_left_out {
    const char *model_a, *model_b; /* the pair, in name order */
    const char *reviewer;
    size_t n;
} arb_battle_left_out;
/* Adds n such judgments of reviewer on {model_a, model_b} (names copied). */
ARB_API arb_status arb_battles_add_left_out(arb_battles *b, const char *model_a,
                                            const char *model_b, const char *reviewer,
                                            size_t n);
ARB_API size_t arb_battles_left_out_count(const arb_battles *b);
/* Record index as views into the set's strings (valid until the set changes). */
ARB_API arb_battle_left_out arb_battles_left_out_at(const arb_battles *b, size_t index);

/* Stores the battles under source (a rerun with the same source replaces them) / appends
** every stored battle (all sources, or those of source when not NULL), in stored order. The
** left-out records (arb_battles_add_left_out) are stored and read with them. */
ARB_API arb_status arb_store_put_battles(arb_store *store, const char *source,
                                         const arb_battles *b);
ARB_API arb_status arb_store_get_battles(arb_store *store, const char *source, arb_battles *b);
/* What arb_store_get_battles would read, without holding the battles: *n_battles gets the number
** of stored battles (of source, or all when NULL) and b, when not NULL, only their left-out
** records (appended). Its memory does not grow with the battles. Messages in the store. */
ARB_API arb_status arb_store_battles_summary(arb_store *store, const char *source,
                                             size_t *n_battles, arb_battles *b);

/* ---------------------------------------------------------------------------------------- */
/* Rankings (METHODS §6).                                                                    */

typedef enum arb_rank_method {
    ARB_RANK_WINRATE,      /* (wins + ½ ties) / battles, and the pairwise win-rate matrix */
    ARB_RANK_ELO,          /* online Elo, mean over random permutations of the order */
    ARB_RANK_BT,           /* Bradley-Terry MLE on the Elo scale */
    ARB_RANK_PEER_WINRATE, /* peer rank: weighted win rate with learned reviewer weights */
    ARB_RANK_PEER_ELO      /* peer rank: weighted Elo with learned reviewer weights */
} arb_rank_method;

/* A reviewer's identity for peer rank: which contestant it is, or a fixed weight. */
typedef struct arb_reviewer_info {
    const char *reviewer;
    const char *model;   /* the contestant this reviewer is; NULL: not a contestant */
    double fixed_weight; /* used when model is NULL (humans); NAN: 1 (the mean weight) */
} arb_reviewer_info;

typedef struct arb_rank_params {
    arb_rank_method method;
    double elo_k;               /* default 32 */
    double elo_initial;         /* default 1000 */
    size_t elo_permutations;    /* default 1000 (1: the given order only) */
    const char *anchor;         /* BT/Elo: model held at elo_initial; NULL: the mean is */
    size_t bootstrap;           /* resamples for intervals (default 0 = none) */
    unsigned long long seed;    /* permutations and bootstrap (default 1) */
    double ci_level;            /* default 0.95 */
    const char *const *reviewers; /* only these reviewers' battles; NULL = all */
    size_t n_reviewers;
    size_t top_k_reviewers;     /* peer rank: only reviewers among the current top K, 0 = all */
    int exclude_self;           /* drop reviews of pairs that contain the reviewer's own model */
    const arb_reviewer_info *reviewer_info; /* NULL: a reviewer named like a model is it */
    size_t n_reviewer_info;
    int max_iterations;         /* peer rank (default 10) */
    double tolerance;           /* peer rank weight change to stop (default 1e-9) */
    size_t trend_every;         /* Elo after every k battles (0 = no trend) */
    int length_control;         /* add the length-controlled win rate (BT with a length term) */
    int style_control;          /* add style-controlled BT (length and markdown covariates) */
    const char *human_prefix;   /* reviewers starting with this are humans: weighted majority
                                   vote vs their majority, accuracy, Fleiss' kappa (default
                                   "human") */
    size_t strong_weight;       /* a strong battle (arb_battle.strong, Arena-Hard A>>B) counts
                                   this many times in every method, its bootstrap and the
                                   battles/wins/ties/losses counts, as if repeated (Arena-Hard-
                                   Auto uses 3); 1..1000, default 1 */
} arb_rank_params;

ARB_API arb_rank_params arb_rank_default_params(void);

/* One contestant's result, best first. */
typedef struct arb_rank_entry {
    const char *model;
    double score;         /* win rate (0..1) or rating (Elo scale) */
    double ci_lo, ci_hi;  /* bootstrap percentile interval; NAN when not computed */
    double sd;            /* Elo: spread over permutations; NAN otherwise */
    double lc_win_rate, lc_ci_lo, lc_ci_hi; /* length-controlled win rate; NAN when not asked */
    double style_rating, style_ci_lo, style_ci_hi; /* style-controlled BT; NAN when not asked */
    size_t battles, wins, ties, losses;
} arb_rank_entry;

/* A reviewer's peer-rank result. */
typedef struct arb_rank_reviewer {
    const char *reviewer;
    const char *model;     /* contestant it is, or NULL */
    double weight;         /* final weight (sums to 1 over contestant reviewers) */
    size_t reviews;
    double self_enhancement;        /* own win rate by itself minus by the others; NAN n/a */
    double self_ci_lo, self_ci_hi;
    double summary_spearman;        /* when humans reviewed: Spearman and Kendall tau-b of this
                                       reviewer's win-rate ranking of the contestants against
                                       the humans' (PRD summary level, §6); NAN otherwise */
    double summary_kendall;
    /* When humans reviewed: this reviewer's own reviews against the humans' majority of the
    ** same comparison (question, pair), every review counted, both orders separately (PRD's
    ** per-reviewer table). The majority is the verdict most annotators gave (METHODS §4); a
    ** comparison where two verdicts tie for most has none, and its reviews are skipped. */
    size_t human_reviews;       /* reviews compared with a human majority */
    size_t human_ties_skipped;  /* reviews skipped: the annotators tied */
    double human_accuracy;      /* share of human_reviews equal to the majority; NAN when 0 */
    double human_kappa;         /* Cohen's kappa over {first better, tie, second better}; NAN
                                   when undefined (no reviews, or one category only) */
} arb_rank_reviewer;

typedef struct arb_rank arb_rank;

/* Ranks the contestants of the battles. On bad parameters returns ARB_INVALID and *errmsg (if
** not NULL) says why (free with arb_free). */
ARB_API arb_status arb_rank_compute(const arb_battles *battles, const arb_rank_params *params,
                                    arb_rank **out, char **errmsg);
ARB_API void arb_rank_destroy(arb_rank *rank);
ARB_API size_t arb_rank_count(const arb_rank *rank);
ARB_API const arb_rank_entry *arb_rank_entry_at(const arb_rank *rank, size_t index);
/* Win rate of entry row over entry col from their direct battles; NAN when none. */
ARB_API double arb_rank_pairwise(const arb_rank *rank, size_t row, size_t col);
ARB_API size_t arb_rank_reviewer_count(const arb_rank *rank);
ARB_API const arb_rank_reviewer *arb_rank_reviewer_at(const arb_rank *rank, size_t index);
/* Peer rank iterations done, and whether the weights converged (1) or hit the limit (0). */
ARB_API int arb_rank_iterations(const arb_rank *rank, int *converged);
ARB_API char *arb_rank_to_text(const arb_rank *rank);
ARB_API char *arb_rank_to_json(const arb_rank *rank);

/* ---------------------------------------------------------------------------------------- */
/* Judges file (YAML) for tournaments: one entry per judge.                                  */

typedef struct arb_judges_file arb_judges_file;

/* Reads a judges file:
**   judges:
**     - name: gpt4-judge          # optional, default the model
**       url: http://127.0.0.1:8000/v1
**       model: gpt-4o
**       api_key_env: OPENAI_API_KEY   # optional
**       contestant: gpt4          # optional: the contestant model this judge is (peer rank)
**       family: gpt               # optional: the judge's family (METHODS §5)
**       temperature: 0            # optional sampling: max_tokens, top_p, frequency_penalty, seed
**       reasoning_effort: medium  # optional, reasoning models; also max_completion_tokens
**       response_format: true     # optional: the endpoint accepts a JSON schema
**       logprobs: true            # optional: store the verdict token's distribution;
**       top_logprobs: 5           #   0..20 alternatives per token (needs logprobs: true)
**   families:                     # optional: contestant model name -> family
**     gpt4: gpt
** A judge with reasoning_effort or max_completion_tokens does not send the sampling defaults
** (temperature, top_p, frequency_penalty, max_tokens) the file does not give.
** Errors say "path:line:column: field ...". A judging command stores the families of its
** judges and the families: map when it stores its judges (arb_judge_config.judges_file). */
ARB_API arb_status arb_judges_file_load(const char *path, arb_judges_file **out, char **errmsg);
ARB_API void arb_judges_file_destroy(arb_judges_file *f);
ARB_API size_t arb_judges_file_count(const arb_judges_file *f);
ARB_API const arb_judge_config *arb_judges_file_judge(const arb_judges_file *f, size_t index);
/* The contestant model judge index is, or NULL. */
ARB_API const char *arb_judges_file_contestant(const arb_judges_file *f, size_t index);
/* The path the file was loaded from (borrowed), or NULL. */
ARB_API const char *arb_judges_file_path(const arb_judges_file *f);
/* Entries of the families: map, in file order: the family of entry index (borrowed), *model
** its contestant model name; NULL past the end. */
ARB_API size_t arb_judges_file_family_count(const arb_judges_file *f);
ARB_API const char *arb_judges_file_family(const arb_judges_file *f, size_t index,
                                           const char **model);

/* ---------------------------------------------------------------------------------------- */
/* Tournament (METHODS §6): every unordered pair of models in both orders, by every reviewer. */

typedef struct arb_tournament_params {
    const char *const *models;  /* contestants; NULL = every model with answers */
    size_t n_models;
    const arb_judges_file *judges; /* the reviewers (borrowed) */
    const char *const *judge_names; /* only these judges of the file, in this order (borrowed);
                                       NULL = every judge of the file */
    size_t n_judge_names;
    int exclude_self;           /* skip a reviewer's own pairs */
    size_t random_k;            /* only K reviewers drawn at random per comparison, 0 = all */
    unsigned long long seed;
    const char *template_name;  /* default "II-reason"; judged in 3-option mode (C = tie) */
    int reps;
    int dry_run;
    int progress;
    arb_client_params client;
} arb_tournament_params;

ARB_API arb_tournament_params arb_tournament_default_params(void);

/* Judges every pair and stores the judgments (pairwise, protocol "tournament") and battles
** (source "tournament"). Resumes like arb_sbs_run. */
ARB_API arb_status arb_tournament_run(arb_store *store, const arb_dataset *ds,
                                      const arb_tournament_params *params,
                                      arb_run_stats *stats);

/* ---------------------------------------------------------------------------------------- */
/* Statistics (METHODS §10). Undefined results (empty input, n < 2, zero variance, a zero
** denominator) are NAN, never 0 or inf. Where two series are paired, a pair with a NAN in
** either series is left out before anything is computed.                                   */

ARB_API double arb_stat_pearson(const double *x, const double *y, size_t n);
/* Spearman's rho with average ranks for ties. */
ARB_API double arb_stat_spearman(const double *x, const double *y, size_t n);
ARB_API double arb_stat_kendall_tau_b(const double *x, const double *y, size_t n);
/* Cohen's kappa of two raters from a k x k table of counts (row-major, rater 1 in rows). */
ARB_API double arb_stat_cohen_kappa(const double *table, size_t k);
/* Fleiss' kappa from n_items x k counts (row-major); every item must have the same number of
** raters (>= 2), else NAN. */
ARB_API double arb_stat_fleiss_kappa(const double *counts, size_t n_items, size_t k);
/* Krippendorff's alpha from n_units x n_raters values (row-major; NAN = missing). Nominal
** treats values as labels; ordinal uses their order (ranks of the observed values). */
ARB_API double arb_stat_krippendorff_alpha(const double *values, size_t n_units,
                                           size_t n_raters, int ordinal);

/* The result of a test. statistic, df and p_value are those of every test; the fields after
** them belong to one kind of test and are NAN (counts 0) in the others. */
typedef struct arb_test_result {
    double statistic;
    double df;
    double p_value; /* two-sided for t; NAN when undefined */
    double mean_diff; /* t: mean(x - y) paired, mean(x) - mean(y) Welch; NAN when a sample
                      ** (or the set of pairs) is empty */
    double cramers_v; /* chi-squared: sqrt(chi2 / (N (min(r, c) - 1))) in [0, 1] */
    size_t n_cells;   /* chi-squared: cells r x c of the table left after dropping zero
                      ** rows and columns */
    size_t n_expected_below_5; /* chi-squared: of those, cells with expected count < 5 (the
                               ** approximation is poor when many are: warn, the test runs) */
} arb_test_result;

/* Chi-squared test of independence on a rows x cols table of counts (row-major), no
** continuity correction. Rows and columns that are all zero are dropped first; r and c count
** what is left and df = (r - 1)(c - 1). With r < 2 or c < 2 (this includes an empty or
** all-zero table) the test is undefined: statistic, p and V NAN, df 0. A NULL table, a
** negative or non-finite count: everything NAN. */
ARB_API arb_test_result arb_stat_chisq_independence(const double *table, size_t rows,
                                                    size_t cols);
/* Paired t-test on d = x - y (pairs with a NAN dropped): df = n - 1. Welch's t-test of two
** independent samples (NAN values dropped): Welch-Satterthwaite df. Both: statistic and p NAN
** when a sample has fewer than two values or the variance (of d; of both samples) is 0. */
ARB_API arb_test_result arb_stat_t_paired(const double *x, const double *y, size_t n);
ARB_API arb_test_result arb_stat_t_welch(const double *x, size_t nx, const double *y, size_t ny);

/* Holm-Bonferroni step-down adjustment of n p-values (any order) for a family of tests:
** with the m defined p-values sorted, p_(1) <= ... <= p_(m), the adjusted
** p'_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)) (monotone in p, capped at 1); reject at
** level alpha where p' <= alpha. A NAN p-value (an undefined test) stays NAN in adjusted and
** is not counted in m. adjusted may be p_values itself. ARB_INVALID (adjusted all NAN) for a
** value outside [0, 1] other than NAN, or NULL arrays with n > 0; ARB_NOMEM. */
ARB_API arb_status arb_stat_holm(const double *p_values, size_t n, double *adjusted);

/* Computes n_stats statistics of a resample given as n indices into the caller's data (an
** index may repeat); writes them to out (NAN allowed). Returns 0, nonzero to abort. */
typedef int (*arb_stat_resample_fn)(void *ud, const size_t *indices, size_t n, double *out);
/* Percentile bootstrap: `resamples` resamples of n units drawn with replacement by GSL's
** MT19937 generator seeded with seed (same seed, same intervals). For each statistic lo/hi get
** the (1-level)/2 and (1+level)/2 quantiles of its defined replicate values; NAN when fewer
** than half the replicates are defined. ARB_INVALID for n == 0 or bad level, ARB_NOMEM,
** ARB_INTERRUPTED when fn aborts. */
ARB_API arb_status arb_stat_bootstrap(size_t n, size_t n_stats, arb_stat_resample_fn fn,
                                      void *ud, size_t resamples, unsigned long long seed,
                                      double level, double *lo, double *hi);

/* ---------------------------------------------------------------------------------------- */
/* Multi-agent debate (METHODS §2.5): agent 1 judges the pair, agent 2 reads agent 1's review
** and agrees or disagrees (hard: is told to disagree), a judge agent reads both and gives the
** final verdict. Side-by-side shape (§2.2): both orders, reps repetitions. Each finished
** debate is a dialogue (three turns, every prompt and output kept as calls) and a pairwise row
** of protocol "soft" or "hard" under the judge name "<mode>(<agent1>,<agent2>,<judge>)", so the
** audit reports every SbS metric for it beside the plain judges.                            */

typedef enum arb_debate_mode { ARB_DEBATE_SOFT = 0, ARB_DEBATE_HARD = 1 } arb_debate_mode;

typedef struct arb_debate_params {
    arb_debate_mode mode;
    const char *candidate;
    const char *baseline;
    arb_judge_config agents[3];   /* agent 1, agent 2, judge agent; names must be set */
    const char *template_name;    /* agent 1's SbS template (default "II-reason"): with the
                                     same judge and template as an `arbiter sbs` run, agent 1's
                                     calls are that run's, reused from the store */
    const char *agent2_template;  /* default "debate-soft" or "debate-hard" by mode */
    const char *judge_template;   /* default "debate-judge" */
    int options;                  /* 2, 3 or 4 (default 4) */
    int reps;                     /* default 1 */
    int dry_run;
    int progress;                 /* 1 on, 0 off, -1 when stderr is a terminal (default) */
    arb_client_params client;
    int full_check;               /* 1: a rerun checks every call even when the plan and the
                                     store are those a finished run noted (README "Resume and
                                     caching"); 0: such a rerun says "nothing to send" at once */
} arb_debate_params;

ARB_API arb_debate_params arb_debate_default_params(void);
/* Runs (or plans) the debates; like arb_sbs_run, an interrupted run resumes where it stopped.
** stats->skipped counts later turns not sent because an earlier turn's call failed. ds may be
** indexed (arb_dataset_load_indexed): the same checks, messages and rows, the texts read again
** a slice of whole judgments at a time. */
ARB_API arb_status arb_debate_run(arb_store *store, const arb_dataset *ds,
                                  const arb_debate_params *params, arb_run_stats *stats);

/* ---------------------------------------------------------------------------------------- */
/* Peer discussion (METHODS §7): two reviewers each review a pair of answers (explicit aspects,
** last line 1 or 2), then speak in turns, the leader first, for at most max_turns turns,
** each turn seeing both initial reviews (leader first) and the discussion so far. With the
** same model as both reviewers at two temperatures it is a self-discussion.                */

typedef enum arb_leader_mode {
    ARB_LEADER_FIRST = 0,  /* reviewers[0] leads every discussion */
    ARB_LEADER_SECOND = 1, /* reviewers[1] leads */
    ARB_LEADER_RANDOM = 2  /* drawn per discussion from the seed (the same on every rerun) */
} arb_leader_mode;

typedef struct arb_model_pair {
    const char *first;  /* shown as answer 1 in order 0 */
    const char *second;
} arb_model_pair;

typedef struct arb_discuss_params {
    arb_judge_config reviewers[2]; /* names must be set and differ */
    const arb_model_pair *pairs;   /* models compared; both must have answered every item */
    size_t n_pairs;
    arb_leader_mode leader;
    int max_turns;                 /* T, default 4 (1..20) */
    int stop_on_agreement;         /* stop once the last two statements (initial reviews
                                      included) agree; default 0 */
    int both_orders;               /* also discuss each pair with the second model shown first
                                      (default 1) */
    unsigned long long seed;       /* random leader (default 20261123) */
    const char *initial_template;  /* default "discuss-initial" */
    const char *turn_template;     /* default "discuss-turn" */
    int reps;                      /* default 1 */
    int dry_run;
    int progress;
    arb_client_params client;
    int full_check;                /* 1: a rerun checks every call even when the plan and the
                                     store are those a finished run noted (README "Resume and
                                     caching"); 0: such a rerun says "nothing to send" at once */
} arb_discuss_params;

ARB_API arb_discuss_params arb_discuss_default_params(void);
/* Runs (or plans) every discussion. Turns not needed after an early agreement, or after a
** failed call, are counted in stats->skipped; a rerun sends only what is missing. ds may be
** indexed, as for arb_debate_run (slices of whole discussions). */
ARB_API arb_status arb_discuss_run(arb_store *store, const arb_dataset *ds,
                                   const arb_discuss_params *params, arb_run_stats *stats);

/* What the stored discussions and debates show (METHODS §7): per discussion set-up the peer
** discussion accuracy PDA against the experts' majority (with a bootstrap interval over items),
** each reviewer's accuracy before discussion, opinion altering / holding per reviewer as
** leader and as follower, the first-position win share before and after discussion, and the
** turn at which agreement was reached; per debate set-up how agent 2 and the judge agent
** related to agent 1. */
typedef struct arb_discussion_stats_params {
    int use_labels;             /* 1 (default): PDA and accuracies from the human labels */
    size_t bootstrap;           /* resamples for the PDA interval (default 1000; 0 none) */
    unsigned long long seed;    /* default 20261123 */
    double ci_level;            /* default 0.95 */
} arb_discussion_stats_params;

typedef struct arb_discussion_stats arb_discussion_stats;

ARB_API arb_discussion_stats_params arb_discussion_stats_default_params(void);
ARB_API arb_status arb_discussion_stats_compute(arb_store *store,
                                                const arb_discussion_stats_params *params,
                                                arb_discussion_stats **out);
ARB_API void arb_discussion_stats_destroy(arb_discussion_stats *st);
/* Discussion set-ups plus debate set-ups found (0: nothing to report). */
ARB_API size_t arb_discussion_stats_count(const arb_discussion_stats *st);
ARB_API char *arb_discussion_stats_to_text(const arb_discussion_stats *st);
ARB_API char *arb_discussion_stats_to_json(const arb_discussion_stats *st);

/* ---------------------------------------------------------------------------------------- */
/* Persona bias analysis (METHODS §9): does a judge score the same response differently when
** it is attributed to another identity? One entry per judge x identity category x phase
** (1: single candidate, 2: contrastive pair), read from the persona scores in the store.
** Choices, documented in README ("Persona bias analysis"):
**   - a call counts only when its reply was valid as a whole (phase 1: every metric a number;
**     phase 2: both candidates' metrics and exactly one preferred); other calls are E, counted
**     per entry and left out of every statistic;
**   - every repetition of a call is one more observation (they are not averaged first);
**   - identities and metrics are listed sorted by name (strcmp); entries read round 0 only
**     (the panel rounds feed the before/after view, arb_persona_stats_panel_at);
**   - the combined score of an identity is the mean of its metric means;
**   - bootstrap intervals resample scenarios (item ids) with replacement, all of a scenario's
**     calls together, with arb_stat_bootstrap's MT19937 and the given seed;
**   - the chi-squared tests (identity x score level per metric; in phase 2 also identity x
**     preferred/not) form one family across the whole report, Holm-adjusted together; a test
**     is significant when its Holm-adjusted p <= alpha;
**   - the position effect (phase 2) is the share of valid calls won by the first-shown
**     candidate, whatever the identities: the design swaps positions, so it is not identity. */

typedef struct arb_persona_stats_params {
    const char *category;           /* only this identity category (NULL: every category); one
                                       without scores in the store is ARB_INVALID */
    size_t bootstrap;               /* resamples of scenarios; 0 = no intervals (default 1000) */
    unsigned long long seed;        /* bootstrap seed (default 20261123) */
    double ci_level;                /* default 0.95 */
    double alpha;                   /* significance level after Holm (default 0.05) */
} arb_persona_stats_params;

ARB_API arb_persona_stats_params arb_persona_stats_default_params(void);

/* One chi-squared test of independence between identity and score level. */
typedef struct arb_persona_chi2 {
    const char *metric;             /* a metric, or "preferred" (phase 2: won / not won) */
    size_t n_levels;                /* distinct values observed (the table's columns) */
    size_t n;                       /* observations in the table */
    arb_test_result test;           /* statistic, df, p_value, cramers_v, n_cells,
                                       n_expected_below_5 */
    double p_holm;                  /* Holm-adjusted across every test of the report; NAN when
                                       the test is undefined */
    int significant;                /* 1 p_holm <= alpha, 0 not, -1 undefined */
} arb_persona_chi2;

/* One judge x category x phase. Arrays are borrowed from the result. Intervals are {lo, hi},
** NAN unless bootstrapped and defined. I = n_identities, M = n_metrics. */
typedef struct arb_persona_row {
    const char *judge;
    const char *category;
    int phase;                      /* 1 or 2 */
    size_t n_identities;
    const char *const *identities;  /* sorted by name */
    size_t n_metrics;
    const char *const *metrics;     /* the scored metrics, sorted ("preferred" excluded) */
    size_t n_calls;                 /* calls stored, E included */
    size_t n_errors;                /* E: calls without a valid reply */
    size_t n_scenarios;             /* scenarios (item ids) of the valid calls: bootstrap units */
    const double *mean;             /* I x M, row-major: mean score of identity i on metric m
                                       (phase 2: of the candidates attributed to i) */
    const double *mean_ci;          /* I x M x 2 */
    const size_t *n_scores;         /* I x M: scores behind each mean */
    const double *combined;         /* I: mean of the identity's metric means */
    const double *combined_ci;      /* I x 2 */
    const double *diff;             /* M x I x I: diff[(m I + i) I + j] = mean(i, m) - mean(j, m),
                                       row minus column */
    const double *combined_diff;    /* I x I: combined[i] - combined[j] */
    /* phase 2 only (NULL, NAN, 0 in phase 1) */
    const double *win_rate;         /* I: share of the pairings identity i was in where its
                                       candidate was preferred */
    const double *win_rate_ci;      /* I x 2 */
    const size_t *n_pairings;       /* I: those pairings */
    const size_t *n_wins;           /* I */
    double first_shown_rate;        /* share of valid calls whose preferred candidate was shown
                                       first: position effect, not identity */
    double first_shown_ci[2];
    size_t n_pairs;                 /* valid phase-2 calls */
    size_t n_chi2;
    const arb_persona_chi2 *chi2;   /* metrics in order, then "preferred" (phase 2) */
} arb_persona_row;

typedef struct arb_persona_stats arb_persona_stats;

/* Reads the store's persona scores (protocols "persona1" and "persona2") and computes every
** entry (params NULL: defaults). *out is owned by the caller (arb_persona_stats_destroy); a
** store without persona scores gives no entries. ARB_INVALID (with the store's message) for bad
** params or a category without scores; ARB_DB, ARB_NOMEM as usual. */
ARB_API arb_status arb_persona_stats_compute(arb_store *store,
                                             const arb_persona_stats_params *params,
                                             arb_persona_stats **out);
ARB_API void arb_persona_stats_destroy(arb_persona_stats *ps);
/* Entries, ordered by judge, category, phase; borrowed (NULL when out of range). */
ARB_API size_t arb_persona_stats_count(const arb_persona_stats *ps);
ARB_API const arb_persona_row *arb_persona_stats_row_at(const arb_persona_stats *ps, size_t i);
/* Defined chi-squared tests in the Holm family, and of those the significant ones. */
/* Panel before/after (METHODS §9 multi-agent panel; README "Persona bias analysis"): per
** panel (a consensus judge "panel(a,b,c)") x category x phase, the identity gap per round.
** The identity spread of one judge's entry is max - min of its identities' combined means
** (win-rate spread: of its phase-2 win rates); a round's spread is the mean over the agents
** that have a defined one. Round 0 is the agents' independent persona1/persona2 scores, round
** r >= 1 their panel1/panel2 rows of round r; point estimates, no interval or test. */
typedef struct arb_persona_panel_round {
    int round;
    double identity_spread;         /* NAN when no agent has two identities with scores */
    double win_rate_spread;         /* phase 2; NAN in phase 1 */
} arb_persona_panel_round;

typedef struct arb_persona_panel {
    const char *panel;              /* the consensus's judge name, "panel(a,b,c)" */
    size_t n_members;
    const char *const *members;     /* the agents, in panel order */
    const char *category;
    int phase;
    size_t n_rounds;                /* rounds 0..R: R + 1 */
    const arb_persona_panel_round *rounds;
    double consensus_spread;        /* of the consensus entry's combined means */
    double consensus_win_rate_spread; /* phase 2; NAN in phase 1 */
    const char *direction;          /* last round R against round 0 on the identity spread:
                                       "toward parity" (smaller), "away from parity" (larger),
                                       "unchanged", or NULL (R = 0 or a spread undefined) */
} arb_persona_panel;

ARB_API size_t arb_persona_stats_n_panels(const arb_persona_stats *ps);
ARB_API const arb_persona_panel *arb_persona_stats_panel_at(const arb_persona_stats *ps, size_t i);
ARB_API size_t arb_persona_stats_n_tests(const arb_persona_stats *ps);
ARB_API size_t arb_persona_stats_n_significant(const arb_persona_stats *ps);
/* Renders as text tables (with a plain statement of what is significant) or JSON (keys in
** README; undefined values are null). Caller frees (arb_free); NULL when out of memory. */
ARB_API char *arb_persona_stats_to_text(const arb_persona_stats *ps);
ARB_API char *arb_persona_stats_to_json(const arb_persona_stats *ps);
/* Why persona scores have no logprob figures (no expected score per metric; phase 2's
** "preferred" has them: the report's preference shares): printed by the text report, the
** JSON's "logprobs" {"available", "reason", "preferred"}, and a persona run whose judges ask
** for logprobs. */
ARB_API extern const char *const arb_persona_no_logprobs_reason;

/* ---------------------------------------------------------------------------------------- */
/* Reports: everything the store knows, as one self-contained HTML file (inline CSS and SVG
** charts drawn by arbiter, no scripts, works offline, prints well) or as Markdown with the same
** tables. Every string from the store (answers, questions, names) is escaped.               */

typedef struct arb_report_params {
    const char *title;          /* default "arbiter report" */
    size_t bootstrap;           /* resamples for audit and rating intervals (default 1000) */
    unsigned long long seed;    /* default 20261123 */
    size_t worst_cases;         /* most inconsistent items shown with both answers (default 8) */
    size_t transcripts;         /* discussion/debate transcripts shown in full (default 3) */
    const char *const *ensemble; /* the multilingual section's majority-vote ensemble of judges
                                    (pointwise judgments, arb_consistency_params.ensemble), in
                                    priority order; NULL (default): none is shown. Borrowed. */
    size_t n_ensemble;
} arb_report_params;

ARB_API arb_report_params arb_report_default_params(void);
/* Writes the report of the store as format "html" or "markdown" to out. ARB_INVALID for
** another format; store errors as usual (arb_store_errmsg). */
ARB_API arb_status arb_report_write(arb_store *store, const arb_report_params *params,
                                    const char *format, FILE *out);

/* ---------------------------------------------------------------------------------------- */
/* Annotation web app (METHODS §4): blind side-by-side labelling by human experts in a
** browser, served over HTTP by libmicrohttpd. Labels go to the store's human_labels (source
** "ui", with annotator, shown order and time taken) as soon as they are given.             */

typedef struct arb_annotate_params {
    const char *bind_address;     /* default "127.0.0.1" */
    int port;                     /* default 8765; 0 picks a free port */
    const char *token;            /* required: requests carry it (header or cookie); never
                                     logged or stored */
    const char *annotator;        /* name used when the login gives none; NULL: must be given */
    int overlap;                  /* each (item, candidate, baseline) is shown to at most this
                                     many annotators (default 1) */
    const arb_model_pair *pairs;  /* first = candidate, second = baseline; NULL: every pair of
                                     the stored side-by-side judgments */
    size_t n_pairs;
    unsigned long long seed;      /* which answer is shown first (default 20261123) */
    int lease_minutes;            /* an unanswered task is given to others after this long
                                     (default 30) */
} arb_annotate_params;

typedef struct arb_annotate_server arb_annotate_server;

ARB_API arb_annotate_params arb_annotate_default_params(void);
/* Opens the store at db_path (its own connections) and starts serving. On failure *errmsg
** (free with arb_free) says why. */
ARB_API arb_status arb_annotate_start(const char *db_path, const arb_annotate_params *params,
                                      arb_annotate_server **out, char **errmsg);
ARB_API int arb_annotate_port(const arb_annotate_server *srv);
/* The (candidate, baseline) pairs being served (given, or found in the store). */
ARB_API size_t arb_annotate_pair_count(const arb_annotate_server *srv);
ARB_API void arb_annotate_stop(arb_annotate_server *srv);

/* ---------------------------------------------------------------------------------------- */
/* Simulated judge server (a SIMULATOR, not a language model): an OpenAI-compatible HTTP
** server on loopback whose replies come from a documented model of a biased judge. Used by the
** tests, the demo and the benchmarks in place of a real LLM.                                */

#define ARB_SIM_MAX_LANGUAGES 32 /* per-language entries a simulated judge can hold */
#define ARB_SIM_LANGUAGE_MAX 16  /* bytes of a language code in a judge spec */
#define ARB_SIM_MAX_PERSONAS 16  /* per-identity score shifts a simulated judge can hold */
#define ARB_SIM_PERSONA_MAX 32   /* bytes of an identity label in a judge spec */

/* A simulated judge's pointwise rates for one evaluation language ("noise.ar=0.4"). A rate
** of -1 is not set: the judge's own rate applies. */
typedef struct arb_sim_language_rates {
    char language[ARB_SIM_LANGUAGE_MAX + 1]; /* letters, digits and '-'; matched ignoring case */
    double noise;
    double strict;
} arb_sim_language_rates;

/* A simulated judge's persona bias for one identity ("persona.female=+1.5", METHODS §9): the
** points added to every score of a response attributed to that identity. */
typedef struct arb_sim_persona_shift {
    char identity[ARB_SIM_PERSONA_MAX + 1]; /* letters, digits, '-', '_'; matched ignoring case */
    double shift;                           /* in score points, in [-10, 10] */
} arb_sim_persona_shift;

/* How a simulated judge answers like a reasoning model (judge-spec key think=; src/sim.c). */
typedef enum arb_sim_think {
    ARB_SIM_THINK_NONE = 0,          /* no thinking */
    ARB_SIM_THINK_REASONING_CONTENT, /* message.reasoning_content (vLLM, DeepSeek) */
    ARB_SIM_THINK_REASONING,         /* message.reasoning (OpenRouter, Ollama) */
    ARB_SIM_THINK_TAG,               /* "<think>...</think>" before the answer in content */
    ARB_SIM_THINK_OPEN,              /* "...</think>" before the answer (the opening tag was in
                                        the chat template) */
    ARB_SIM_THINK_CUT                /* "<think>..." never closed, no answer: cut while thinking
                                        (finish_reason "length") */
} arb_sim_think;

/* How a simulated judge answers "logprobs": true (judge-spec key logprobs=; src/sim.c). */
typedef enum arb_sim_logprobs {
    ARB_SIM_LOGPROBS_TOKEN = 0, /* the verdict letter, digit or word is a token of its own */
    ARB_SIM_LOGPROBS_MERGED,    /* the verdict is merged with the token before it ("[[A") */
    ARB_SIM_LOGPROBS_NONE       /* an endpoint without logprobs: "logprobs": null */
} arb_sim_logprobs;

typedef struct arb_sim_judge {
    char model[128];       /* model name the server answers to */
    double skill;          /* how strongly the quality difference drives the verdict (0..) */
    double position_bias;  /* > 0 favours the first answer (primacy), < 0 the second */
    double tie_propensity; /* widens the band in which two good answers are called a tie */
    double bothbad_propensity; /* chance to call two poor answers both bad */
    double invalid_rate;   /* share of replies with no verdict */
    double latency_ms;     /* mean reply delay */
    double conformity;     /* in a debate or discussion: chance to take the other's verdict
                              when it differs (0 always holds, 1 always yields; default 0.5) */
    /* Pointwise judging (yes/no and 1-5 grades; src/sim.c explains the model). */
    double noise;          /* chance the answer is replaced by a uniformly random valid value */
    double strict;         /* chance a true "correct" becomes "incorrect" and a grade drops by 1 */
    size_t n_languages;    /* entries used in languages[] */
    arb_sim_language_rates languages[ARB_SIM_MAX_LANGUAGES]; /* per-language overrides */
    /* Persona scoring (METHODS §9, 0-10 scores; src/sim.c explains the model). */
    double persona_sd;     /* sd of the normal noise added to every score (default 1) */
    size_t n_personas;     /* entries used in personas[] */
    arb_sim_persona_shift personas[ARB_SIM_MAX_PERSONAS]; /* per-identity score shifts */
    arb_sim_think think;   /* answer like a reasoning model, with misleading thinking */
    arb_sim_logprobs logprobs; /* token logprobs when a request asks (logprobs: true) */
} arb_sim_judge;

typedef struct arb_sim_params {
    const char *bind_address; /* default "127.0.0.1" */
    int port;                 /* 0 = pick a free port */
    unsigned long long seed;
    int instant;              /* answer "[[A]]" at once, no model: for throughput benchmarks */
    const arb_sim_judge *judges; /* borrowed for the server's lifetime */
    size_t n_judges;
    const arb_dataset *answers_oracle; /* answers with a "quality" extra field (0..1); borrowed */
    double fail_rate;         /* share of requests answered 500 (tests of retries), default 0 */
    double throttle_rate;     /* share of requests answered 429 rate_limit_exceeded (tests of
                                 back-off), default 0; drawn independently of fail_rate */
    double cached_share;      /* 0..1: usage reports prompt_tokens_details.cached_tokens =
                                 floor(prompt_tokens * cached_share), as a provider's prompt
                                 cache would (tests of cached prices); 0 (default): the field is
                                 not sent */
    /* The Batch API (POST /v1/files, POST /v1/batches, GET /v1/batches/{id},
    ** GET /v1/files/{id}/content): files kept in memory; a batch completes batch_delay_ms after
    ** it was created (default 0); every batch_fail_every-th line fails with an error line
    ** (0, default: none); batch_expire 1: batches end "expired" after answering their first
    ** half, the rest being "batch_expired" error lines. */
    double batch_delay_ms;
    long batch_fail_every;
    int batch_expire;
} arb_sim_params;

typedef struct arb_sim_server arb_sim_server;

ARB_API arb_sim_params arb_sim_default_params(void);
/* Parses "model:skill=2,bias=0.3,tie=0.2,bothbad=0.5,invalid=0.02,latency=5,conformity=0.5",
** the pointwise keys "noise=0.1,noise.ar=0.4,strict=0.3,strict.hi=0.5" (rates in [0, 1];
** at most ARB_SIM_MAX_LANGUAGES languages) and the persona keys
** "persona.female=+1.5,persona_sd=1" (shifts in [-10, 10] points, sd >= 0; at most
** ARB_SIM_MAX_PERSONAS identities) and "think=tag" (none, reasoning_content, reasoning, tag,
** open, cut: arb_sim_think) and "logprobs=merged" (token, merged, none: arb_sim_logprobs). On ARB_INVALID *errmsg (arb_free) says why and *out is
** untouched. */
ARB_API arb_status arb_sim_judge_parse(const char *spec, arb_sim_judge *out, char **errmsg);
ARB_API arb_status arb_sim_server_start(const arb_sim_params *params, arb_sim_server **out,
                                        char **errmsg);
ARB_API int arb_sim_server_port(const arb_sim_server *srv);
ARB_API unsigned long long arb_sim_server_requests(const arb_sim_server *srv);
ARB_API void arb_sim_server_stop(arb_sim_server *srv);

#ifdef __cplusplus
}
#endif
#endif /* ARBITER_H */
