/*
** internal.h -- what libarbiter's modules share and the public header does not show.
**
** Internal non-static names are arb__<module>_<verb>. Each section below belongs to one module
** (its .c file); a module's section is the whole of its contract with the others.
*/
#ifndef ARB_INTERNAL_H
#define ARB_INTERNAL_H

#include "arbiter.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/socket.h>

#define ARB__ATTR_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* ---- util.c: memory, strings, UTF-8, hashing, time ---------------------------------------- */

/* malloc/strdup that abort() on exhaustion are NOT used: these return NULL and callers fail
** with ARB_NOMEM. */
char *arb__strdup(const char *s);                 /* NULL in, NULL out */
char *arb__strndup(const char *s, size_t n);
char *arb__sprintf(const char *fmt, ...) ARB__ATTR_PRINTF(1, 2); /* caller frees */
char *arb__vsprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Growing byte buffer with a cap, so a huge input fails cleanly (curl's dynbuf). The content
** is always NUL-terminated. */
typedef struct arb__buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max; /* 0 = 1 GiB */
} arb__buf;
void arb__buf_init(arb__buf *b, size_t max);
int arb__buf_append(arb__buf *b, const void *p, size_t n); /* 0 ok, -1 over max or no memory */
int arb__buf_reserve(arb__buf *b, size_t n); /* room for n more bytes: 0 ok, -1 as above */
int arb__buf_puts(arb__buf *b, const char *s);
int arb__buf_printf(arb__buf *b, const char *fmt, ...) ARB__ATTR_PRINTF(2, 3);
void arb__buf_reset(arb__buf *b);
/* Writes v in decimal ("%lld" without printf's cost) and a NUL to out; returns its length. */
size_t arb__decimal(char out[24], long long v);
/* Appends v in decimal. 0 or -1. */
int arb__buf_put_int(arb__buf *b, long long v);
void arb__buf_free(arb__buf *b);
char *arb__buf_steal(arb__buf *b); /* returns data (caller frees), leaves b empty */
/* Appends s[0..n) (valid UTF-8) as a JSON string, escaped exactly as jansson's dump does. 0 or
** -1 (over max or no memory). Stored requests depend on this output never changing: the
** spliced compact requests (store_requests.c) put texts back escaped by it. */
int arb__buf_json_string(arb__buf *b, const char *s, size_t n);
/* The same for s[0..n) not known to be valid UTF-8: 1 (b unchanged) when it is not. */
int arb__buf_json_text(arb__buf *b, const char *s, size_t n);
/* arb__buf_json_text without the quotes: the escaped characters only, so a JSON string can be
** written in pieces. 0, 1 (b unchanged) when s[0..n) is not valid UTF-8, or -1. */
int arb__buf_json_chars(arb__buf *b, const char *s, size_t n);
/* arb__buf_json_chars that also counts what it wrote, as the store's prompt length does (SQL's
** length() of the decoded text, METHODS 5): when *chars >= 0, s's code points are added to
** it; a character written as a \u escape (a control character other than \b \f \n \r \t)
** sets it to -1 instead, the count then left to the store. Nothing is added when 1 or -1 is
** returned. */
int arb__buf_json_chars_counted(arb__buf *b, const char *s, size_t n, long long *chars);

/* UTF-8: returns 1 when s[0..n) is valid UTF-8 (no overlongs, no surrogates), else 0 and
** *bad_offset (if not NULL) receives the offset of the first bad byte. */
int arb__utf8_valid(const char *s, size_t n, size_t *bad_offset);
/* Appends the JSON string at p (its opening quote, before end) decoded, and a NUL, to out:
** escapes, and \u with surrogate pairs, become UTF-8 as jansson decodes them. Returns the byte
** after the closing quote, or NULL for a string it leaves to jansson: a control character, a
** bad escape or surrogate, \u0000, an unterminated string (or out of memory). UTF-8 is not
** checked. For readers of a known shape that fall back to jansson (dataset.c, judge.c). */
const char *arb__json_decode_string(const char *p, const char *end, arb__buf *out);
/* Number of Unicode code points in a valid UTF-8 string (METHODS §5: lengths). */
size_t arb__utf8_codepoints(const char *s, size_t n);

/* 128-bit xxh3 of the bytes as 32 lowercase hex characters plus NUL in out[33]. */
void arb__hash_hex(const void *p, size_t n, char out[33]);
/* A 128-bit xxh3 hash (its two halves) as arb__hash_hex writes it. */
void arb__hash128_hex(uint64_t high64, uint64_t low64, char out[33]);

/* The name of a JSON value's type as a user thinks of it, for error messages ("string",
** "number", ...; "nothing" for NULL). Static string. */
const char *arb__json_kind(const json_t *v);

/* Appends an untrusted name (model, judge, annotator) for a terminal: control characters (C0,
** DEL, C1) and bytes that are not valid UTF-8 become '?'. Returns 0, or -1 when out of memory. */
int arb__buf_put_safe(arb__buf *b, const char *name);
/* Writes s[0..n) for an error message into out (size bytes): quoted, at most about 40 bytes
** (cut at a code point, "..." after), control characters, NUL and invalid UTF-8 shown as '?',
** so a value from an input file cannot drive the terminal that prints the message. */
void arb__excerpt(char *out, size_t size, const char *s, size_t n);
/* An untrusted name as a JSON string; invalid UTF-8 bytes become U+FFFD. NULL when out of
** memory. */
json_t *arb__json_name(const char *name);
/* Untrusted names as a JSON array of strings. NULL when out of memory. */
json_t *arb__json_names(const char *const *names, size_t n);
/* A metric as a JSON real, or null when undefined (NaN or infinite). NULL when out of memory. */
json_t *arb__json_metric(double x);
/* An interval [lo, hi] as a JSON array, or null when either end is undefined. NULL when out of
** memory. */
json_t *arb__json_interval(double lo, double hi);
/* obj[key] = value (value is taken over even on failure); -1 when value is NULL or on failure. */
int arb__json_set(json_t *obj, const char *key, json_t *value);
/* A price as {"input_per_mtok", "output_per_mtok"[, "cached_input_per_mtok"]}, or JSON null
** when it is not known. NULL when out of memory. */
json_t *arb__json_price(const arb_price *price);

/* Makes room for need elements of size bytes in the array whose pointer is at pp (a T **)
** with capacity *cap (doubling from 16). Returns 0, or -1 when out of memory (the array is left
** as it was). */
int arb__grow(void *pp, size_t *cap, size_t need, size_t size);

/* A request body as libmicrohttpd hands it over, in pieces (sim.c, annotate.c). */
typedef struct arb__upload {
    arb__buf body;  /* capped at the max given to arb__upload_step */
    int too_big;    /* the body went over the cap (the rest was dropped) */
} arb__upload;
/* One call of an MHD access handler: makes the upload state on the first call (headers only)
** and appends each piece of the body. Returns 1 when the handler should return MHD_YES and wait
** for more, 0 when the body is complete (*up is the upload), -1 when out of memory (MHD_NO). */
int arb__upload_step(void **req_cls, size_t max, const char *data, size_t *size,
                     arb__upload **up);
/* Frees the upload state of a finished request (MHD_OPTION_NOTIFY_COMPLETED). */
void arb__upload_free(void **req_cls);

/* Walks the lines of a JSONL text: from *pos (0 at the start, where a UTF-8 byte order mark is
** skipped) sets *line and *n to the next line without its "\n" or "\r\n" and advances *pos.
** Returns 1, or 0 when the text is over. */
int arb__text_next_line(const char *text, size_t len, size_t *pos, const char **line, size_t *n);
/* *errmsg = a new printf-style message (caller frees), when errmsg is not NULL. */
void arb__set_err(char **errmsg, const char *fmt, ...) ARB__ATTR_PRINTF(2, 3);
/* A listening TCP socket on address:port (port 0: a free one), SO_REUSEADDR, close-on-exec,
** for a libmicrohttpd daemon (MHD_OPTION_LISTEN_SOCKET). Returns the socket with *family and
** *bound_port set, or -1 with *errmsg (caller frees; may be NULL) starting with who. */
int arb__listen(const char *address, int port, const char *who, int *family, int *bound_port,
                char **errmsg);

double arb__now_ms(void);           /* monotonic clock, milliseconds */
char *arb__read_file(const char *path, size_t *len, char **errmsg); /* caller frees */

/* ---- csv.c: CSV text record by record (RFC 4180, libcsv strict mode) ----------------------- */

/* One record: n fields, each NUL-terminated with its length in lens (a field may hold a NUL
** byte). line: the physical line it starts on; index: 0 for the first record (a header).
** Returns ARB_OK to go on; any other status stops the walk and is returned as it is (the
** callback keeps its own message). */
typedef arb_status (*arb__csv_record_fn)(void *ud, size_t line, size_t index,
                                         const char *const *fields, const size_t *lens,
                                         size_t n);
/* Hands each record of text (path names it in messages) to fn. Malformed CSV is ARB_PARSE
** with *errmsg "path:line: malformed CSV: ..." (caller frees); ARB_NOMEM, ARB_TOOBIG. */
arb_status arb__csv_each_record(const char *path, const char *text, size_t len,
                                arb__csv_record_fn fn, void *ud, char **errmsg);

/* Interned strings: each distinct string gets the next index (0, 1, ...). Open addressing on
** xxh3; names[k] is the k-th string (owned). */
typedef struct arb__strtab {
    char **names;
    size_t n, cap;
    uint32_t *slots; /* index + 1 per slot, 0 = empty */
    size_t n_slots;
} arb__strtab;
/* Returns the index of s, adding it when new; UINT32_MAX when out of memory. */
uint32_t arb__strtab_intern(arb__strtab *t, const char *s);
/* Returns the index of s, or UINT32_MAX when absent. */
uint32_t arb__strtab_find(const arb__strtab *t, const char *s);
void arb__strtab_free(arb__strtab *t);

/* ---- keymap.c: a hash map from keys to numbers (open addressing) -------------------------- */

/* Numbers are 1 to UINT32_MAX (0 means "none"), usually the index + 1 of a record the caller
** keeps. A zeroed map is empty. With key_size 0 the caller keeps the keys: each lookup passes
** a function same(ctx, key, value) that returns nonzero when key is the key of the record
** value stands for. With key_size > 0 (set it before the first insertion; arb__keymap_free
** keeps it) the map keeps a copy of each key, key_size bytes compared with memcmp, and same
** and ctx are not used. The caller gives each key's 64-bit hash (XXH3 of its bytes): equal keys
** must hash alike. Entries are found in O(1) on average; a removal leaves no tombstone. */
typedef int (*arb__keymap_same_fn)(const void *ctx, const void *key, size_t value);
typedef struct arb__keymap_slot {
    uint32_t hash;  /* 32 bits of the key's hash */
    uint32_t value; /* 0: an empty slot */
} arb__keymap_slot;
typedef struct arb__keymap {
    size_t key_size;         /* 0: the caller keeps the keys; else the size of the map's copy */
    arb__keymap_slot *slots; /* n_slots (a power of two) at least twice count */
    unsigned char *keys;     /* key_size bytes per slot when key_size > 0 */
    size_t n_slots, count;
} arb__keymap;
/* The number of key, or 0 when it has none. */
size_t arb__keymap_find(const arb__keymap *m, uint64_t hash, const void *key,
                        arb__keymap_same_fn same, const void *ctx);
/* Gives key the number value (1 to UINT32_MAX), added or replaced; *old (when not NULL) gets
** the number it had, 0 when none. Returns 0, or -1 when out of memory or value is 0 or too
** large (nothing changed). */
int arb__keymap_put(arb__keymap *m, uint64_t hash, const void *key, arb__keymap_same_fn same,
                    const void *ctx, size_t value, size_t *old);
/* Adds key with the number value without looking for key first: for a caller that knows key
** is new. Returns 0, or -1 as arb__keymap_put. Takes no memory while the map holds fewer
** entries than it once did (after arb__keymap_clear, say). */
int arb__keymap_add(arb__keymap *m, uint64_t hash, const void *key, size_t value);
/* Removes key; returns the number it had, or 0 when it had none. Never allocates. */
size_t arb__keymap_remove(arb__keymap *m, uint64_t hash, const void *key,
                          arb__keymap_same_fn same, const void *ctx);
/* Empties the map and keeps its room. */
void arb__keymap_clear(arb__keymap *m);
/* Frees the map's memory (not the caller's records): m is empty again, key_size kept. */
void arb__keymap_free(arb__keymap *m);

/* Stop flag set by arb_request_stop() (signal handlers). */
extern volatile int arb__stop_requested;

/* ---- stats.c: pooled ratios with percentile bootstrap intervals (METHODS §10) ------------ */

/* One statistic over pooled sums: sum[num] / sum[den], minus sum[num2] / sum[den2] when
** difference is set (a ratio with a zero denominator is NAN, and so is a difference with it). */
typedef struct arb__ratio_stat {
    size_t num, den;
    int difference;
    size_t num2, den2;
} arb__ratio_stat;
/* The statistics on units agg[0..n_units) (each a row of n_sums sums, summed over the units) in
** est, and their percentile bootstrap intervals over units (arb_stat_bootstrap: resamples, seed,
** level; resamples 0 = no intervals) in lo/hi; every output NAN when undefined, the intervals
** NAN too for a bad level. Self-enhancement (§6), the family preference and the agreement by
** family (§5) are all such ratios. ARB_OK or ARB_NOMEM. */
arb_status arb__stat_pooled_ratios(const double *agg, size_t n_units, size_t n_sums,
                                   const arb__ratio_stat *stats, size_t n_stats,
                                   size_t resamples, unsigned long long seed, double level,
                                   double *est, double *lo, double *hi);
/* A round's statistics from times[0..n_kinds): how often each kind of unit was drawn. Returns
** 0, nonzero to abort. */
typedef int (*arb__stat_kinds_fn)(void *ud, const unsigned int *times, size_t n_kinds,
                                  double *out);
/* Percentile bootstrap over units that fall into n_kinds kinds, counts[k] units of kind k:
** when every statistic depends on the units only through how often each kind was drawn, a
** round draws those numbers at once (multinomial, total = sum of counts, kind k with
** probability counts[k] / total) instead of drawing every unit. Same generator and seeding
** (MT19937, seed ^ (seed >> 32)), quantiles and NAN rules as arb_stat_bootstrap, whose
** intervals these equal in law, not draw by draw. ARB_INVALID for no units, more than
** UINT_MAX units, a bad level, resamples 0, a NULL fn; ARB_NOMEM; ARB_INTERRUPTED when fn
** aborts. On any error lo/hi are NAN. */
arb_status arb__stat_bootstrap_kinds(const unsigned int *counts, size_t n_kinds, size_t n_stats,
                                     arb__stat_kinds_fn fn, void *ud, size_t resamples,
                                     unsigned long long seed, double level, double *lo,
                                     double *hi);

/* ---- url.c: judge endpoint URLs (libcurl's URL API) ------------------------------------- */

/* Why url cannot be a judge endpoint, as a static phrase that follows "the URL " (e.g. "has
** no scheme; ..."), or NULL when it parses, is http or https, has a host and a port in
** 1..65535. Never quotes the URL (it may hold credentials). */
const char *arb__url_problem(const char *url);
/* url without user name, password and query parameters that look like credentials, for
** storing (caller frees); unchanged text when there is nothing to remove, "[REDACTED]" when
** it cannot be parsed. NULL when url is NULL or out of memory. */
char *arb__url_redact(const char *url);

/* ---- http.c: many transfers in flight (plain sockets for http://, else libcurl) ------------ */

typedef struct arb__http arb__http;

typedef struct arb__http_result {
    long status;          /* last HTTP status, 0 when no response */
    int curl_code;        /* last CURLcode */
    char *body;           /* reply body of the last attempt, NUL-terminated (owned by http.c
                             until the callback returns) */
    size_t body_len;
    double latency_ms;    /* of the final attempt */
    int attempts;
    int endpoint;         /* index in its pool of the endpoint of the last attempt; -1 when
                             no attempt started */
    int ok;               /* 1 when a 2xx reply arrived */
    const char *error;    /* when !ok: reason, e.g. "HTTP 503 after 7 attempts" (owned by
                             http.c until the callback returns) */
} arb__http_result;

typedef void (*arb__http_done_fn)(void *ud, uint64_t tag, const arb__http_result *res);

typedef struct arb__http_stats {
    size_t retries;
    size_t throttled;    /* 429 replies */
    int inflight_limit;  /* current adaptive limit */
} arb__http_stats;

arb__http *arb__http_create(const arb_client_params *params);
void arb__http_destroy(arb__http *h);
/* Queues a POST of body (copied) to url with Content-Type: application/json. auth_header, when
** not NULL, is a full header line such as "Authorization: Bearer ..." (copied, never logged).
** Returns 0, or -1 when out of memory. */
int arb__http_submit(arb__http *h, uint64_t tag, const char *url, const char *auth_header,
                     const char *body, size_t body_len);
/* Drives transfers for at most timeout_ms, calling done for each transfer that finished for
** good (success, or failure after retries). Returns the number of finished transfers. */
int arb__http_step(arb__http *h, int timeout_ms, arb__http_done_fn done, void *ud);
size_t arb__http_pending(const arb__http *h); /* queued + in flight + waiting to retry */
/* One request, waited for (the Batch API's control calls): GET when neither json_body nor
** file_data is set, a JSON POST with json_body, a multipart/form-data POST (purpose=, file=)
** with file_data. Strings borrowed. */
typedef struct arb__http_request {
    const char *url;
    const char *auth_header;   /* "Authorization: Bearer ..." or NULL (never logged) */
    const char *json_body;
    const char *file_data;
    size_t file_len;
    const char *file_name, *file_purpose;
} arb__http_request;
/* Sends rq with params' timeouts and retries (connection errors, 429 and 5xx); the reply body
** goes to reply (its max caps it). Returns 0 on a 2xx, 1 on a failure with *error (caller
** frees; names the status or transfer error, never the key), -1 out of memory. *status gets
** the last HTTP status (0: none). */
int arb__http_fetch(const arb_client_params *params, const arb__http_request *rq, arb__buf *reply,
                    long *status, char **error);
arb__http_stats arb__http_get_stats(const arb__http *h);
/* System calls the plain transport made to read, and transfers allocated (tests check that
** none is wasted). */
typedef struct arb__http_io_counts {
    size_t reads;        /* recv() of reply bytes, EAGAIN included */
    size_t peeks;        /* liveness looks at an idle keep-alive connection before reuse */
    size_t xfer_allocs;  /* transfers allocated (one of a borrowed body is reused once done) */
} arb__http_io_counts;
arb__http_io_counts arb__http_get_io_counts(const arb__http *h);
/* Adds a pool of n interchangeable endpoints (full chat-completions URLs, copied): each
** attempt of a transfer submitted to it goes to the endpoint with the fewest attempts running
** that is not paused (429 back-off, cool-down after repeated failures) and under its limit;
** max_in_flight (0: jobs) bounds each endpoint's attempts. See http.c. Returns the pool's id
** (>= 0), or -1 when n is 0 or out of memory. */
int arb__http_add_pool(arb__http *h, const char *const *urls, size_t n, int max_in_flight);
/* arb__http_submit to a pool (arb__http_submit's URL is a pool of one). Returns 0, or -1
** when out of memory or pool is not one. */
int arb__http_submit_pool(arb__http *h, uint64_t tag, int pool, const char *auth_header,
                          const char *body, size_t body_len);
/* arb__http_submit_pool without copying body, which must be NUL-terminated at body_len and stay
** valid and unchanged until done has been called for tag (or the client is destroyed): the
** executor's request bodies live that long anyway, so a copy per call is saved. */
int arb__http_submit_pool_borrowed(arb__http *h, uint64_t tag, int pool, const char *auth_header,
                                   const char *body, size_t body_len);
typedef struct arb__http_endpoint_stats {
    size_t sent;         /* attempts started on it */
    size_t ok;           /* 2xx replies */
    size_t throttled;    /* 429 replies */
    size_t failed;       /* attempts with no reply or 5xx */
    size_t cooldowns;    /* times it was taken out for the cool-down */
    int limit;           /* its current adaptive limit */
} arb__http_endpoint_stats;
/* Copies the counters of endpoint of pool into *out. Returns 0, or -1 when there is none. */
int arb__http_get_endpoint_stats(const arb__http *h, int pool, size_t endpoint,
                                 arb__http_endpoint_stats *out);

/* ---- http_plain.c: the wire side of the plain-HTTP transport (see http.c) ---------------- */

#define ARB__PLAIN_MAX_ADDRS 4

/* A plain http:// endpoint libcurl is not needed for: its addresses (resolved once) and the
** fixed part of every request head (request line to Accept, CRLF-terminated). */
typedef struct arb__plain_target {
    struct {
        union {
            struct sockaddr sa;
            struct sockaddr_storage ss;
        } sa;
        socklen_t len;
        int family;
    } addrs[ARB__PLAIN_MAX_ADDRS];
    int n_addrs;
    int good_addr;       /* the address that connected last */
    char host[256];      /* as written in the URL, for error messages */
    int port;
    char *head;
    size_t head_len;
} arb__plain_target;

/* 1 when plain http:// URLs may skip libcurl: transport is not ARB_TRANSPORT_CURL, the
** environment does not say ARBITER_TRANSPORT=curl, and no proxy variable is set. */
int arb__plain_transport_wanted(int transport);
/* The target for url, or NULL when url is not a plain http:// URL the lean transport takes
** (https, user info, odd characters, a host that does not resolve: libcurl's then) or out of
** memory. Resolves the host (blocking, once). Caller destroys. */
arb__plain_target *arb__plain_target_create(const char *url);
void arb__plain_target_destroy(arb__plain_target *t);
/* Retry-After's value (delta-seconds or HTTP-date) in milliseconds from now, -1 when neither. */
double arb__retry_after_ms(const char *value, size_t len);

/* An incremental HTTP/1.1 reply parser (http_plain.c's header says what it accepts). */
enum { ARB__H1_MORE = 0, ARB__H1_DONE, ARB__H1_BAD, ARB__H1_TOOBIG, ARB__H1_HEAD_TOOBIG,
       ARB__H1_NOMEM, ARB__H1_NOTHING, ARB__H1_PARTIAL };
typedef struct arb__h1 {
    int state;
    long status;
    int keep_alive;         /* the connection may carry another request after this reply */
    double retry_after_ms;  /* -1: no usable Retry-After */
    long long remaining;
    size_t scanned;
    int got_bytes;
    arb__buf head;          /* the head (or a chunk framing line) so far; caller frees */
    arb__buf *body;         /* borrowed: the body goes here, within its max */
} arb__h1;
/* Starts a reply whose body goes to body (borrowed; its max caps the body). */
void arb__h1_begin(arb__h1 *r, arb__buf *body);
/* Consumes up to len bytes (*used gets how many): ARB__H1_MORE (all used, more needed),
** ARB__H1_DONE (the reply ended; bytes after it are left unused), or an error: ARB__H1_BAD
** (malformed), ARB__H1_TOOBIG (body over the cap), ARB__H1_HEAD_TOOBIG, ARB__H1_NOMEM. */
int arb__h1_feed(arb__h1 *r, const char *data, size_t len, size_t *used);
/* The connection ended: ARB__H1_DONE when that ends the body, ARB__H1_NOTHING when no byte
** had come, ARB__H1_PARTIAL when the reply was cut short. */
int arb__h1_eof(arb__h1 *r);
/* 1 once the final reply's head has been parsed. */
int arb__h1_headers_done(const arb__h1 *r);

/* ---- judge.c: OpenAI-compatible chat completions: request bodies and replies -------------- */

/* How every canonical JSON text is printed (request bodies, a template's response format):
** compact, keys sorted, reals with 15 significant digits (a pure function of the double). */
#define ARB__JUDGE_DUMP_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(15))

/* Builds {"model", "messages":[{system},{user}], sampling...} as compact JSON with sorted keys
** (the canonical form hashed for the call key). system may be NULL. For rep > 0 with a seed,
** seed + rep is sent so repetitions differ. response_format: NULL, or a template's JSON schema
** object ({"name", "schema", ...}) printed with ARB__JUDGE_DUMP_FLAGS; it is sent as
** "response_format": {"type": "json_schema", "json_schema": ...} only when the judge declares
** support (judge->response_format), so it is part of the call key exactly when it is sent.
** Returns NULL when out of memory. */
char *arb__judge_request_body(const arb_judge_config *judge, const char *system,
                              const char *user, int rep, const char *response_format);
/* The same body built through jansson: the reference the fast writer is tested against, and
** the builder for text that is not valid UTF-8 (each bad byte becomes U+FFFD). */
char *arb__judge_request_body_reference(const arb_judge_config *judge, const char *system,
                                        const char *user, int rep, const char *response_format);
/* arb__judge_request_body that also tells the prompt's length as the store would count it in the
** body (arb__call_record.prompt_chars): *prompt_chars (may be NULL) gets the code points of the
** messages' contents, or -1 when it leaves the count to the store (a \u escape in the body, or
** text that is not valid UTF-8, which the reference builder repairs). */
char *arb__judge_request_body_counted(const arb_judge_config *judge, const char *system,
                                      const char *user, int rep, const char *response_format,
                                      long long *prompt_chars);
/* arb__judge_request_body of the messages tpl renders with vars, byte for byte, written without
** rendering them: the template's literal text is copied escaped (escaped once, at load) and only
** the values are escaped (falls back to rendering when a value is not valid UTF-8). scratch is
** the caller's reusable buffer (its room is kept between calls). Returns the body (caller frees;
** its length in *body_len when not NULL), or NULL when out of memory or the vars do not render
** (options outside 2..4). *prompt_chars (may be NULL): the prompt's length counted as it is
** written, as arb__judge_request_body_counted tells it (-1: left to the store). */
char *arb__judge_request_body_template(const arb_judge_config *judge, const arb_template *tpl,
                                       const arb_prompt_vars *vars, int rep,
                                       const char *response_format, arb__buf *scratch,
                                       size_t *body_len, long long *prompt_chars);
/* prompt.c, for the above: 1 when tpl has a system message. */
int arb__template_has_system(const arb_template *tpl);
/* prompt.c: appends tpl's system (system 1) or user message rendered with vars as the inside
** of a JSON string (no quotes), from the literals escaped at load time. Returns 0, 1 (b as it
** was) when a value is not valid UTF-8, the vars do not render or there is no such message,
** or -1 when out of memory. When it returns 0 and *chars >= 0, the code points written are added
** to *chars (arb__buf_json_chars_counted's count: -1 when one is a \u escape). */
int arb__template_put_json(const arb_template *tpl, const arb_prompt_vars *vars, int system,
                           arb__buf *b, long long *chars);
/* The call key: hash of model, canonical body and repetition index (32 hex + NUL). */
void arb__judge_call_key(const char *body, int rep, char out[33]);
/* The same for body[0..body_len) (body_len == strlen(body)), when the length is known. */
void arb__judge_call_key_len(const char *body, size_t body_len, int rep, char out[33]);

typedef struct arb__judge_reply {
    char *content;          /* choices[0].message.content without its thinking (see below);
                               NULL when missing (caller frees) */
    char *reasoning;        /* the judge's thinking, NULL when none (caller frees) */
    long long prompt_tokens; /* -1 when not reported */
    long long completion_tokens;
    long long reasoning_tokens; /* usage.completion_tokens_details.reasoning_tokens, or -1 */
    long long cached_tokens;    /* usage.prompt_tokens_details.cached_tokens, or -1 */
    char *error;            /* why the reply is unusable, NULL when fine (caller frees) */
    json_t *logprobs;       /* choices[0].logprobs.content (one object per token: token,
                               logprob, top_logprobs), NULL when the reply has none (a
                               reference the caller releases through arb__judge_reply_free) */
} arb__judge_reply;

/* Parses a chat-completion reply body. Never fails on bad input: fills error instead.
** The thinking of a reasoning model is taken out of the answer so that no verdict is ever read
** from it, whatever the protocol: message.reasoning_content (vLLM, DeepSeek) and
** message.reasoning (OpenRouter and others) go to reasoning, and so do <think>...</think>
** blocks of the content (arb__judge_split_thinking). Returns -1 only when out of memory. */
int arb__judge_parse_reply(const char *body, size_t len, arb__judge_reply *out);
/* The same through a jansson tree of the whole body: what arb__judge_parse_reply gives for every
** reply (it reads the usual shape without jansson); kept for the tests and fuzz_reply. */
int arb__judge_parse_reply_reference(const char *body, size_t len, arb__judge_reply *out);
void arb__judge_reply_free(arb__judge_reply *r);
struct arb__verdict_spec; /* below, with logprobs.c */
/* What a call row keeps of a reply body that arrived (HTTP 2xx, or a batch output line with
** status 200): one reading for both paths, so a batch reply is stored exactly as an HTTP one. */
typedef struct arb__reply_record {
    int ok;                 /* 1: usable (content set); 0: a broken body (error, raw_reply set) */
    char *content;          /* the answer, thinking removed */
    char *reasoning;        /* the thinking, or NULL */
    char *logprobs;         /* arb__logprobs_verdict() JSON, or NULL */
    char *error, *raw_reply;
    long long prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens; /* -1 unknown */
    double cost_usd;        /* at price; NAN unknown */
} arb__reply_record;
/* Parses body, prices its usage at price (arb__judge_call_cost) and, when spec is not NULL,
** reads the verdict token's distribution (arb__logprobs_verdict). Texts are not redacted: the
** caller redacts its key from them with the rest of what it stores. Returns 0, or -1 when out
** of memory (out freed). */
int arb__judge_take_reply(const char *body, size_t len, const arb_price *price,
                          const struct arb__verdict_spec *spec, arb__reply_record *out);
void arb__reply_record_free(arb__reply_record *r);
/* The cost in USD of a call from its usage and the judge's price (arb_price): cached prompt
** tokens (cached < 0: none reported) at the cached price when given, else at the input price;
** completion tokens (reasoning included, as OpenAI bills them) at the output price. NAN when
** the price is unknown or prompt/completion tokens were not reported. */
double arb__judge_call_cost(const arb_price *price, long long prompt_tokens,
                            long long completion_tokens, long long cached_tokens);
/* price as a Batch API bills it: every per-token price less price->batch_discount (0 when the
** judge declares none). Calls collected through a Batch API or `batch ingest`, and a dry run's
** estimates with --batch, are costed at it. */
arb_price arb__price_through_batch(const arb_price *price);
/* The prompt-token estimate of a request before it is sent: ceil(code points of the messages'
** texts / 4) + 4 per message (OpenAI's rule of thumb of ~4 characters per token, and the chat
** format's few tokens per message). system may be NULL. */
long long arb__judge_estimate_prompt_tokens(const char *system, const char *user);
/* Splits a reply text into its answer and its thinking: every <think>...</think> block
** (tags in any ASCII case) goes to the thinking, as does the text before a "</think>" that has
** no opening tag (the chat templates of DeepSeek-R1 and Qwen3 put "<think>" in the prompt) and
** everything after an opening tag that is never closed (a reply cut while thinking: no answer).
** White space left at the start and end of the answer by a removed block is dropped. *answer
** and *thinking get new strings (*thinking NULL when there was none). Returns 0, or -1 when out
** of memory (both NULL). */
int arb__judge_split_thinking(const char *text, char **answer, char **thinking);
/* "Authorization: Bearer <key>" from the environment variable, or NULL when env_name is NULL
** or the variable is unset, empty or holds control characters (caller frees). */
char *arb__judge_auth_header(const char *env_name);
/* Replaces the key held by env_name with "[REDACTED]" wherever it occurs in *text (a reply a
** server echoed it into); *text may be replaced. Returns 0, or -1 when out of memory (*text
** freed and NULL). */
int arb__judge_redact_key(const char *env_name, char **text);
/* ARB_OK, or ARB_INVALID with the message in s when judge's URL is unusable or (unless
** dry_run) its key variable is unset, empty or holds control characters. Run before anything
** is sent or stored. */
arb_status arb__judge_check(arb_store *s, const arb_judge_config *judge, int dry_run);
/* The checks of a run's judge list: at least one, each with a name and a model, a URL unless
** dry_run, names unique, and arb__judge_check of each. ARB_INVALID with s's message. */
arb_status arb__judge_check_list(arb_store *s, const arb_judge_config *judges, size_t n,
                                 int dry_run);
/* A judge's configuration for a run's parameters (runs.params): name, model, url, the key's
** variable name (never the key), contestant when not NULL, and the sampling sent. A new
** object, or NULL when out of memory. */
json_t *arb__judge_params_json(const arb_judge_config *jc, const char *contestant);
/* base_url + "/chat/completions" without doubling the slash, before any query (caller
** frees). */
char *arb__judge_url(const char *base_url);

/* ---- verdict.c, logprobs.c: where the verdict stands, and how sure the judge was of it ------ */

/* arb_verdict_extract that also sets *at to the byte offset of the letter or digit that names
** the verdict (SIZE_MAX for E, or when rule 4 found a field written so that its value cannot
** be placed). */
char arb__verdict_locate(const char *text, size_t len, int options, const char *json_field,
                         size_t *at);
/* arb_pointwise_extract that also sets *at to the offset of the value's first byte (SIZE_MAX
** for E). */
int arb__pointwise_locate(const char *text, size_t len, arb_pointwise_kind kind,
                          const char **reason, size_t *at);

/* What verdict a call's reply carries, so the executor can read its token's logprobs. */
typedef enum arb__verdict_kind {
    ARB__VERDICT_NONE = 0,  /* no verdict (a debater's turn): no logprobs kept */
    ARB__VERDICT_POSITION,  /* A..D of `options` (arb_verdict_extract) */
    ARB__VERDICT_GRADE,     /* 1..5 (arb_pointwise_extract, ARB_POINTWISE_GRADE) */
    ARB__VERDICT_YESNO,     /* correct/incorrect (ARB_POINTWISE_YESNO) */
    ARB__VERDICT_PREFERRED  /* persona phase 2: "preferred" candidate_1/candidate_2
                               (arb__persona_preferred_locate) */
} arb__verdict_kind;
typedef struct arb__verdict_spec {
    arb__verdict_kind kind;
    int options;            /* ARB__VERDICT_POSITION: 2..4 */
    const char *json_field; /* ARB__VERDICT_POSITION: the template's JSON field, or NULL */
} arb__verdict_spec;

/* A verdict spec as text for the store ("position:4", "position:4:verdict", "grade", "yesno",
** "preferred"; NULL
** for none; caller frees) and back (0, or -1 when text is not one). */
char *arb__verdict_spec_text(const arb__verdict_spec *spec);
int arb__verdict_spec_parse(const char *text, arb__verdict_spec *spec, char **json_field);

/* The distribution of the verdict token of answer (the reply text without its thinking) over
** the spec's options, from the reply's token logprobs (arb__judge_reply.logprobs), as the JSON
** text stored in calls.logprobs (README "Logprobs"): *out NULL when tokens is NULL (not asked
** for, or the endpoint returned none) or spec has no verdict; {"kind", "verdict", "options":
** {option: p}, "in_options", "other_mass", "alternatives"[, "expected"]} when found;
** {"kind", "options": null, "reason"} when the verdict token cannot be read. Caller frees *out.
** Returns 0, or -1 when out of memory. */
int arb__logprobs_verdict(const json_t *tokens, const char *answer,
                          const arb__verdict_spec *spec, char **out);

/* ---- judges_file.c: YAML input files ------------------------------------------------------ */

/* Called with the one YAML document of a file (a yaml_document_t *, borrowed). Returns ARB_OK,
** or an error with *errmsg set ("path:line:column: ...", caller frees). */
typedef arb_status (*arb__yaml_doc_fn)(void *ud, const char *path, void *doc, char **errmsg);
/* Parses text (path names it in messages) as exactly one YAML document and calls fn with it;
** a syntax error or a second document ("what holds one", e.g. "a judges file") is ARB_PARSE
** with "path:line:column: ..." in *errmsg (caller frees; NULL on success). */
arb_status arb__yaml_read_one(const char *path, const char *text, size_t len, const char *what,
                              arb__yaml_doc_fn fn, void *ud, char **errmsg);

/* ---- dataset.c: indexed datasets (arb_dataset_load_indexed) ---------------------------------- */

/* Whether ds was read by arb_dataset_load_indexed (its records are read again by window). */
int arb__dataset_is_indexed(const arb_dataset *ds);
/* The two files an indexed dataset reads its records from (answers NULL when none); both NULL
** for a dataset held whole. */
void arb__dataset_indexed_paths(const arb_dataset *ds, const char **items_path,
                                const char **answers_path);
/* The size (bytes, the two files together) up to which arb_dataset_load_indexed loads the files
** whole instead of indexing them: one pass that decodes each line once, where an index reads
** and decodes every line three times (the check, the store, the run's slice). Tests set it to
** 0 to index small files. */
extern uint64_t arb__dataset_whole_limit;
/* Whether model answered item_id, in either kind of dataset. */
int arb__dataset_has_answer(const arb_dataset *ds, const char *item_id, const char *model);
/* The models that answered some item of ds (whole or indexed), each once, in the order of
** their first answer: *out (caller frees the array; the names are borrowed from ds) and *n.
** ARB_OK, or ARB_NOMEM (*out NULL, *n 0). */
arb_status arb__dataset_models(const arb_dataset *ds, const char ***out, size_t *n);
/* The index-th item of ds. For an indexed dataset, *stub filled with what the index knows: id,
** source ("file:line", written to source[0..size)), and question / reference set to "" when
** the item has them (a non-empty reference) and NULL otherwise; every other field NULL. The
** result is borrowed from ds, or is stub. NULL when index is out of range. */
const arb_item *arb__dataset_item_outline(const arb_dataset *ds, size_t index, arb_item *stub,
                                          char *source, size_t size);
/* A new ordinary dataset (*out, caller destroys) holding items first .. first + n - 1 of the
** indexed ds and their answers by the n_models models, read again from the files and parsed as
** the first load did (same records, same "file:line"). ARB_IO when a file changed since
** (a record is not where the index says), ARB_NOMEM; *err then gets the message (caller
** frees). */
arb_status arb__dataset_window(const arb_dataset *ds, size_t first, size_t n,
                               const char *const *models, size_t n_models, arb_dataset **out,
                               char **err);
/* A new ordinary dataset holding the answers first .. first + n - 1 of the indexed ds in the
** order of its answers file, each with an outline of its item (id and source only). Returns
** as arb__dataset_window. */
arb_status arb__dataset_answers_window(const arb_dataset *ds, size_t first, size_t n,
                                       arb_dataset **out, char **err);
/* Items read at a time from an indexed dataset when every item is walked (checks before a run,
** storing the dataset): about 10 MB of the benchmark's texts. */
#define ARB__DATASET_BLOCK_ITEMS 32768
/* Called with each item of a dataset in order (index: its position); ARB_OK goes on, anything
** else stops the walk and is returned. item is borrowed until fn returns. */
typedef arb_status (*arb__dataset_item_fn)(void *ud, size_t index, const arb_item *item);
/* Calls fn with every item of ds, whole or indexed (then read again ARB__DATASET_BLOCK_ITEMS at
** a time, the records as arb_dataset_item would give them: every field, the same
** "file:line"). Returns ARB_OK, fn's status, or a window's failure with *err set (caller frees;
** NULL otherwise). */
arb_status arb__dataset_each_item(const arb_dataset *ds, arb__dataset_item_fn fn, void *ud,
                                  char **err);

/* ---- store.c: SQLite persistence ---------------------------------------------------------- */

/* Sets the store's error message (printf-style); returns code for convenience. */
arb_status arb__store_fail(arb_store *s, arb_status code, const char *fmt, ...)
    ARB__ATTR_PRINTF(3, 4);
arb_status arb__store_begin(arb_store *s);    /* BEGIN IMMEDIATE */
arb_status arb__store_commit(arb_store *s);
/* What the write transactions of every store this process opened have cost since it started:
** transactions committed by arb__store_commit, and pages their connections wrote (WAL frames;
** SQLite's SQLITE_DBSTATUS_CACHE_WRITE, counted at each commit). Tests compare them with the
** calls stored. */
void arb__store_write_totals(long long *commits, long long *pages);
/* Pages the write transactions of every store this process opened read from its files
** (SQLite's SQLITE_DBSTATUS_CACHE_MISS, counted at each commit like the pages written): a
** connection whose page cache another connection's commit emptied reads its pages again.
** Tests count them. */
long long arb__store_read_total(void);
void arb__store_rollback(arb_store *s);

/* Records (upserts) every item and answer of ds, keeping the dataset order in items.seq so
** window series (METHODS §3.1) can walk items in benchmark order. An indexed dataset
** (arb_dataset_load_indexed) is stored a block at a time, read again from its files: the same
** rows, ARB_IO with the message when a file changed since it was indexed. */
arb_status arb__store_put_dataset(arb_store *s, const arb_dataset *ds);
/* The two halves of arb__store_put_dataset, for a dataset stored a block at a time (an indexed
** dataset, see arb_dataset_load_indexed): the items of ds at positions first_seq, first_seq + 1,
** ...; the answers of ds (their items stored already). Each runs in its own transaction unless
** the caller holds one. */
/* Trains the store's text dictionary (store_texts.c) from the items of items and the answers
** of answers (either may be NULL) when the store has none yet and they hold enough text, so a
** new store's texts are compact from the first load. */
arb_status arb__store_train_texts(arb_store *s, const arb_dataset *items,
                                  const arb_dataset *answers);
arb_status arb__store_put_items(arb_store *s, const arb_dataset *ds, size_t first_seq);
arb_status arb__store_put_answers(arb_store *s, const arb_dataset *ds);
/* store_items.c: calls fn(ud, item_id, model, answer) for every stored answer, in no
** particular order; the strings are borrowed until fn returns. fn returns nonzero to stop the
** walk (which then returns ARB_OK). */
typedef int (*arb__answer_fn)(void *ud, const char *item_id, const char *model,
                              const char *answer);
arb_status arb__store_each_answer(arb_store *s, arb__answer_fn fn, void *ud);
/* Records the judge (name, base_url, model, sampling as JSON; never the key). A name that
** already has judgments made with another model or other sampling is refused (ARB_INVALID):
** one name must not mix two configurations. */
arb_status arb__store_put_judge(arb_store *s, const arb_judge_config *judge);
/* The same check alone, writing nothing (dry runs). */
arb_status arb__store_check_judge(arb_store *s, const arb_judge_config *judge);

/* One judge call, as stored in table calls (unique on key). */
/* The dataset texts a call's request contains, as arb__store_put_dataset stored them. A pairwise
** call (pointwise 0): the question of item_id and the answers of first_model and second_model,
** in the order the request shows them; the texts may be NULL (the store reads them). A
** pointwise call (pointwise 1, grade.c): the question, shown `questions` times (0: not at all),
** and the answer of first_model (NULL: the answer is not a stored answer, e.g. the item's
** reference); second_model is NULL and the texts shown are given. Borrowed strings. */
typedef struct arb__call_texts {
    const char *item_id, *first_model, *second_model;
    const char *question, *first_answer, *second_answer;
    int pointwise, questions;
} arb__call_texts;

typedef struct arb__call_record {
    const char *key;          /* arb__judge_call_key() */
    const char *judge_name;
    const char *model;
    const char *request_json; /* canonical request body (no secrets in it) */
    int rep;
    int ok;                   /* 1: a reply arrived (verdict may still be E); 0: failed */
    const char *content;      /* reply text, NULL when none */
    const char *raw_reply;    /* raw body when the reply could not be parsed, else NULL */
    const char *error;        /* reason when !ok or the reply was unusable */
    long http_status;
    int attempts;
    long long prompt_tokens;  /* -1 unknown */
    long long completion_tokens;
    double latency_ms;
    const char *reasoning;    /* the judge's thinking, kept apart from content; NULL when none */
    long long reasoning_tokens; /* -1 unknown */
    long long cached_tokens;    /* -1 unknown */
    double cost_usd;            /* arb__judge_call_cost(); NAN: unknown (stored as NULL) */
    const char *logprobs;       /* arb__logprobs_verdict() JSON; NULL: none */
    const char *endpoint;       /* base URL it was sent to, without credentials
                                   (arb__url_redact); NULL when unknown */
    const arb__call_texts *texts; /* NULL: unknown yet (the request is compacted when its
                                     pairwise row names them); else the row is written once,
                                     compact, when it is new */
    /* What the request's builder knows of request_json, so the store need not read it again:
    ** built 1 when prompt_chars and asks_logprobs are told (exec.c, from
    ** arb__judge_request_body_counted); 0 (a zeroed record: imports, batch results) when the
    ** store reads both in request_json. */
    int built;
    long long prompt_chars;       /* code points of the messages' contents (METHODS 5); -1:
                                     left to the store (it counts them in request_json) */
    int asks_logprobs;            /* 1: the request has "logprobs":true; else 0 */
} arb__call_record;

/* Inserts the call, or replaces a stored failed call with the same key. *call_id gets its row
** id. A stored successful call is never replaced. */
arb_status arb__store_put_call(arb_store *s, const arb__call_record *rec, long long *call_id);
/* arb__store_put_call, telling what happened: when a successful call already held the key
** (another process stored it first), *kept = 1 and *stored_content gets that call's reply
** text (caller frees; NULL when it had none), so the caller judges the reply that is stored
** and not its own. Otherwise *kept = 0 and *stored_content = NULL. */
arb_status arb__store_settle_call(arb_store *s, const arb__call_record *rec, long long *call_id,
                                  int *kept, char **stored_content);
/* Looks up a successful call by key. *found = 1 and *call_id, *content (caller frees; may be
** NULL) when present. */
arb_status arb__store_find_call(arb_store *s, const char *key, int *found, long long *call_id,
                                char **content);
/* What a stored call spent, as the store holds it: tokens -1 and cost NAN when unknown. */
typedef struct arb__call_spend {
    long long prompt_tokens, completion_tokens;
    double cost_usd;
} arb__call_spend;
/* arb__store_find_call that also fills *spend (may be NULL) when found. */
arb_status arb__store_find_call_spend(arb_store *s, const char *key, int *found,
                                      long long *call_id, char **content, arb__call_spend *spend);

/* ---- store_cost.c: what calls cost, per judge --------------------------------------------- */

/* The mean completion tokens of the judge's stored successful calls that report them
** (*mean; *n how many; *n 0 and *mean NAN when none). The typical completion of a dry run. */
arb_status arb__store_judge_completion_mean(arb_store *s, const char *judge_name, double *mean,
                                            size_t *n);
/* One judge's calls in the store (every run), for audit and report. */
typedef struct arb__judge_cost_row {
    char *judge_name;             /* owned */
    char *price_json;             /* owned; NULL: no price recorded */
    size_t calls;                 /* stored calls (failed ones included) */
    size_t with_cost;             /* of which with a known cost */
    size_t with_usage;            /* of which reporting prompt and completion tokens */
    long long prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens;
    double cost_usd;              /* sum over the calls with a known cost */
} arb__judge_cost_row;
/* Every judge with stored calls, by name; *rows (caller frees with
** arb__store_judge_costs_free). */
arb_status arb__store_judge_costs(arb_store *s, arb__judge_cost_row **rows, size_t *n);
void arb__store_judge_costs_free(arb__judge_cost_row *rows, size_t n);
/* The price stored with judge_name (table judges), out->known 0 when none: what a reply that
** comes back other than by HTTP (a batch's output) is priced at. */
arb_status arb__store_judge_price(arb_store *s, const char *judge_name, arb_price *out);
/* The cost of a row for people: "$X", "$X + N calls of unknown cost", or "unknown (no price)" /
** "unknown (no usage reported)" when no call has a cost -- never $0 for what is not known. */
void arb__judge_cost_text(char *out, size_t size, const arb__judge_cost_row *r);

/* ---- store_logprobs.c, logprobs_report.c: verdict probabilities of stored judgments -------- */

/* One comparison's (pairwise: judge, protocol, candidate, baseline, template, options) or one
** pointwise set's (judge, protocol, kind, template) judgments and their logprobs. Means are
** over the with_logprobs judgments whose verdict distribution was read (NAN-free: 0 when
** there are none -- readers show "no logprobs" then, never 0). */
typedef struct arb__logprob_row {
    char *judge, *protocol, *candidate, *baseline, *template_name; /* owned; pointwise:
                                  candidate holds the kind ("yesno"/"grade"), baseline NULL */
    int options;               /* pairwise 2..4; pointwise 0 */
    size_t judgments;          /* all judgments of the row */
    size_t asked;              /* of which made by a call that asked for logprobs */
    size_t with_logprobs;      /* of which with the verdict's distribution */
    double argmax[4];          /* pairwise: shares of the verdicts a, b, c, d given; pointwise:
                                  [0] the mean grade given (grade) or share "correct" (yesno) */
    double weighted[4];        /* pairwise: mean probability of a, b, c, d; pointwise: [0] the
                                  mean expected grade sum p*g (G-Eval) or mean P(correct) */
    double other_mass;         /* mean probability outside the options */
} arb__logprob_row;
arb_status arb__store_pairwise_logprobs(arb_store *s, arb__logprob_row **rows, size_t *n);
arb_status arb__store_pointwise_logprobs(arb_store *s, arb__logprob_row **rows, size_t *n);
/* Persona phase 2's preference (calls.logprobs of kind "preferred"), per judge x protocol
** (persona2, panel2) x category x identity over the valid calls: candidate holds the category,
** baseline the identity; argmax[0] the share of calls preferring the identity's candidate,
** weighted[0] the mean probability of that candidate (the means as above). */
arb_status arb__store_persona_preferred_logprobs(arb_store *s, arb__logprob_row **rows,
                                                 size_t *n);
void arb__store_logprobs_free(arb__logprob_row *rows, size_t n);
/* Text lines (README "Logprobs") for the rows, appended to b: nothing when no call of any row
** asked for logprobs or returned them; a judge without them says "no logprobs". 0 or -1. */
int arb__logprobs_text(arb__buf *b, const arb__logprob_row *rows, size_t n, int pointwise);
/* The rows as a JSON array [{judge, protocol, ..., judgments, logprobs_asked, with_logprobs,
** logprobs_available, argmax, prob_weighted, other_mass}] (null values when unavailable);
** NULL when out of memory. */
json_t *arb__logprobs_json(const arb__logprob_row *rows, size_t n, int pointwise);

/* One pairwise judgment (table pairwise), unique on (protocol, judge_name, item_id, candidate,
** baseline, template_name, options, order, rep); a rerun replaces the row. */
typedef struct arb__pairwise_row {
    const char *protocol;     /* "sbs" */
    const char *judge_name;
    const char *item_id;
    const char *candidate;
    const char *baseline;
    const char *template_name;
    int options;
    int order;                /* 0: candidate shown first; 1: baseline first */
    int rep;
    char position_verdict;    /* 'A'..'D' or 'E' */
    char model_verdict;       /* 'a'..'e' */
    long long call_id;
    long long item_seq;       /* filled by arb__store_each_pairwise: benchmark order */
    /* Optional, for arb__store_put_pairwise: the item's question and the two answers exactly
    ** as this run stored them (arb__store_put_dataset), which the call's request contains; the
    ** store compacts the request against them without reading them back. NULL: it reads them. */
    const char *question, *candidate_answer, *baseline_answer;
} arb__pairwise_row;

/* Stores one judgment (a rerun updates the row). Inside a transaction opened with
** arb__store_begin the row may wait, copied, for arb__store_commit (rows are inserted in groups,
** see store.c), so a read in the same transaction may not see it yet and a refusal (a foreign
** key) may be reported by a later put or by the commit; the rows and the message are the same. */
arb_status arb__store_put_pairwise(arb_store *s, const arb__pairwise_row *row);
struct arb__rows_tally;
/* arb__store_put_pairwise, adding the row to tally (see arb__rows_tally; NULL: none). */
arb_status arb__store_put_pairwise_tallied(arb_store *s, const arb__pairwise_row *row,
                                           struct arb__rows_tally *tally);
typedef int (*arb__pairwise_fn)(void *ud, const arb__pairwise_row *row); /* nonzero stops */
/* Calls fn for every row of protocol, ordered by judge_name, candidate, baseline,
** template_name, options, item_seq, rep, order. Strings are valid only during the call. */
arb_status arb__store_each_pairwise(arb_store *s, const char *protocol, arb__pairwise_fn fn,
                                    void *ud);

/* A pairwise row as a rerun needs it to skip the call (resume.c): its identity, its verdict
** and the key of the successful call it was made from. Strings borrowed. */
typedef struct arb__recorded_pairwise {
    const char *judge_name;
    const char *candidate;
    const char *baseline;
    const char *item_id;
    int rep;
    int order;
    char position_verdict;    /* 'A'..'D' or 'E' */
    const char *call_key;     /* arb__judge_call_key() */
    const char *content;      /* the call's reply text (NULL: none) */
} arb__recorded_pairwise;
/* Nonzero stops the walk as out of memory. */
typedef int (*arb__recorded_pairwise_fn)(void *ud, const arb__recorded_pairwise *row);
/* Calls fn for every pairwise row of protocol, template_name and options that arbiter itself
** wrote (no import source) from a call with a reply (calls.ok = 1), with that call's key.
** One query (store_resume.c); strings are valid only during the call. */
arb_status arb__store_each_recorded_pairwise(arb_store *s, const char *protocol,
                                             const char *template_name, int options,
                                             arb__recorded_pairwise_fn fn, void *ud);

/* The recorded pairwise judgments of one protocol, template and option mode, held in memory
** (resume.c) so a rerun decides "already judged from this exact request" per node with one
** hash lookup. */
typedef struct arb__recorded arb__recorded;
/* Reads them (one query); *out is the caller's (arb__recorded_destroy). A row is held only
** when its stored reply still reads as its stored verdict with options and json_field (the
** template's verdict_json_field, or NULL): how the verdict is read is not part of the request,
** so a changed field, or a newer arbiter that reads replies differently, must re-judge the
** stored reply (the normal path) rather than keep the old verdict. */
arb_status arb__recorded_load_pairwise(arb_store *s, const char *protocol,
                                       const char *template_name, int options,
                                       const char *json_field, arb__recorded **out);
void arb__recorded_destroy(arb__recorded *r);
/* 1 when row (its identity and the key of the request the node would send now; its verdict is
** ignored) is recorded, with *invalid = 1 when its stored verdict is E; 0 otherwise. r may be
** NULL (nothing recorded). */
int arb__recorded_has_pairwise(const arb__recorded *r, const arb__recorded_pairwise *row,
                               int *invalid);

/* ---- plan notes: a rerun that reads no input (README "Fast resume and bounded memory") ---- */

/* The coordinates of an sbs plan's judgments (strings borrowed). */
typedef struct arb__sbs_plan_key {
    const char *candidate, *baseline, *template_name;
    int options, reps;
    const char *const *judge_names;
    size_t n_judges;
} arb__sbs_plan_key;

/* What a plan left in the store, as a rerun compares it. */
typedef struct arb__plan_state {
    size_t judgments; /* pairwise rows of the plan's coordinates (any item) whose call holds a
                         reply */
    char digest[33];  /* XXH3-128 (hex) over the sums of the rows' XXH3-128 hashes: those rows
                         (id, item, rep, order, verdict, call id and key, failed calls too),
                         every row of items, every row of answers (any order) */
} arb__plan_state;

/* Reads the state (store_resume.c): one pass over the plan's rows (the unique index) and over
** the items and answers tables. */
arb_status arb__store_sbs_plan_state(arb_store *s, const arb__sbs_plan_key *key,
                                     arb__plan_state *out);

/* A judge's share of the plan digest kept by the writer as it stores the judgments
** (arb__pairwise_row.tally), so that the end of a run need not read them back: the sum of the
** rows' hashes exactly as arb__store_sbs_plan_state computes it, valid only while every row
** added was written by this run onto a setup that held no judgments before its first row and
** from a call the same handle had just inserted (else broken, and the rows are read as before).
** Zero it to start; it may go on through several handles (an executor's slices). */
typedef struct arb__rows_tally {
    uint64_t low, high; /* the sum of the rows' hashes */
    size_t rows;        /* rows added */
    size_t with_key;    /* of which made from a call that holds a reply */
    int broken;         /* a row could not be added: read the rows instead */
    long long setup_id; /* the setup of its first row, which held no judgment then: later rows
                           (the next slices' connections) must be of the same one */
} arb__rows_tally;

/* arb__store_sbs_plan_state, taking judge j's judgments from tallies[j] when it is valid
** (tallies may be NULL): the same state, without reading the rows the run has just written. */
arb_status arb__store_sbs_plan_state_tallied(arb_store *s, const arb__sbs_plan_key *key,
                                             const arb__rows_tally *tallies,
                                             arb__plan_state *out);

/* What a finished sbs run records in its stats (key "plan") for later reruns. */
typedef struct arb__plan_note {
    char fingerprint[33]; /* arb__sbs_plan_fingerprint */
    arb__plan_state state; /* right after the run */
    size_t planned;       /* the plan's judge calls, every one recorded */
    size_t invalid;       /* of which without a valid verdict (the run's stats.invalid) */
    size_t n_items;
    size_t skipped;       /* calls of the plan not needed (a discussion that ended early) */
} arb__plan_note;
arb_status arb__store_run_set_plan(arb_store *s, long long run_id, const arb__plan_note *note);
/* *overlapped: 1 when another run may have written the store while run_id ran (a run started
** after it, or one that finished after it started), else 0. Its state at the end is then not
** what its plan alone leaves (another plan's judgments of the same items), so no note. A run
** killed before run_id started and never finished is not counted (it cannot write). */
arb_status arb__store_run_overlapped(arb_store *s, long long run_id, int *overlapped);
/* The note of the latest finished run of protocol (runs.protocol) whose plan has this
** fingerprint: *run_id its run, or 0 when there is none (note zeroed). */
arb_status arb__store_find_plan(arb_store *s, const char *protocol, const char *fingerprint,
                                long long *run_id, arb__plan_note *note);

/* The fingerprint of an sbs plan (resume.c), 32 hex characters in out: the exact bytes and the
** paths of the two input files, candidate, baseline, option mode, repetitions, the template
** (rendered with probe texts), each judge's name and the call key of a probe request per
** repetition (model, sampling, seed, logprobs, response format, and how this build writes a
** request), and the identity of this build (its GNU build id, which changes with any change
** of how inputs are parsed or verdicts read; ARB_VERSION where there is none). Two plans with
** the same fingerprint send the same requests and store the same rows. judges: with names
** filled in. Returns ARB_OK, or ARB_IO when a file cannot be read (message in s). */
arb_status arb__sbs_plan_fingerprint(arb_store *s, const char *items_path,
                                     const char *answers_path, const arb_sbs_params *p,
                                     const arb_judge_config *judges, size_t n_judges,
                                     const arb_template *tpl, char out[33]);

/* ---- plan notes of debate, discuss and persona (README "Resume and caching") ---------------
** As sbs's, for the protocols whose calls depend on earlier replies: a run that ends with every
** call of its plan stored from a reply notes its fingerprint and the state of what it wrote;
** a rerun with the same fingerprint on a store in that state says "nothing to send" without
** building a request, reading a reply or writing a row. */

/* The rows a plan writes, which its note's state digests (store_resume.c); NULL fields: none.
** Every row of items and answers is always digested too. */
typedef struct arb__plan_scope {
    const char *dialogue_kind;     /* dialogues of this kind, their turns and the turns' calls
                                      (key, outcome, reply) */
    const char *pairwise_protocol; /* pairwise rows of this protocol */
    int persona;                   /* scores (every persona and panel protocol) with their
                                      calls, persona_attributions, personas */
} arb__plan_scope;

/* What the state of a scope reads now (one pass over each of its tables). */
arb_status arb__store_plan_state(arb_store *s, const arb__plan_scope *scope,
                                 arb__plan_state *out);

/* A plan as its fingerprint sees it (resume.c): everything a rerun's requests and rows are made
** from. */
typedef struct arb__plan_desc {
    const char *protocol;    /* runs.protocol of the plan's runs */
    const char *params_json; /* the run's parameters (runs.params): names, settings, counts */
    const arb_dataset *ds;   /* every item and answer (an indexed one: its files' bytes) */
    const arb_judge_config *judges; /* each one's probe request per repetition */
    size_t n_judges;
    const arb_template *const *tpls; /* rendered with probe texts (NULL entries skipped) */
    size_t n_tpls;
    int options, reps;
    size_t n_items;          /* items (scenarios) the plan judges */
    arb__plan_scope scope;
    int full_check;          /* 1: no quick rerun (the plan is still noted) */
} arb__plan_desc;

/* Whether a run with these client settings takes the plain path (no dry run, batch or budget),
** which alone notes a plan or skips one. */
int arb__plan_notes_apply(const arb_client_params *client, int dry_run);
/* Tests set it to 0: every rerun takes the full path (the fingerprint is still noted). */
extern int arb__plan_quick_rerun;
/* Records a rerun that found note's plan unchanged as a rerun that checks every call records
** itself: the judges (their URL may be new), then a finished run with params_json, stats filled
** from the note (planned, cached, skipped, invalid; 0 sent; seconds since t0) and the note. */
arb_status arb__plan_record_unchanged(arb_store *s, const char *protocol, const char *params_json,
                                      const arb_judge_config *judges, size_t n_judges,
                                      const arb__plan_note *note, double t0,
                                      arb_run_stats *stats);
/* Before a run: the plan's fingerprint in fingerprint ("" when the plan takes no note: a dry
** run, batch, budget, or a dataset without files or records). When a finished run of the same
** protocol and fingerprint noted a state that the store still has, records this rerun as a
** finished run (its judges, its parameters, stats and the note) and fills stats as a rerun that
** checks every call would (planned, cached, skipped, invalid; 0 sent) with
** stats->unchanged_since_run: *unchanged 1. */
arb_status arb__plan_rerun_if_unchanged(arb_store *s, const arb__plan_desc *d,
                                        const arb_client_params *client, int dry_run,
                                        char fingerprint[33], int *unchanged,
                                        arb_run_stats *stats);
/* After run_id ended ARB_OK: notes the plan on it when every call of the plan is stored from a
** reply (no failure, nothing left unsent) and no other run overlapped it. */
arb_status arb__plan_note_run(arb_store *s, const arb__plan_desc *d, const char *fingerprint,
                              long long run_id, const arb_run_stats *stats);

/* One pointwise judgment (table pointwise, METHODS §8), unique on (protocol, judge_name, kind,
** template_name, language, item_id, model, rep); a rerun replaces the row. The last four
** fields are filled only by arb__store_each_pointwise (from the item). */
typedef struct arb__pointwise_row {
    const char *protocol;      /* "pointwise" */
    const char *judge_name;
    const char *item_id;
    const char *model;         /* whose answer was judged; "reference" for the item's reference */
    const char *language;      /* evaluation language (arbiter grade: the item's own) */
    const char *kind;          /* "yesno" or "grade" */
    const char *task;          /* qa, math, translation, summary, dialogue, generic */
    const char *template_name; /* e.g. "pointwise-grade-specific-explain" */
    int rep;
    int value;                 /* yesno: 1 correct, 0 incorrect; grade: 1..5; -1: E */
    const char *reason;        /* why E; NULL when value is valid */
    long long call_id;         /* 0: none */
    const char *item_language; /* read only: the item's language, "" when none */
    const char *group;         /* read only: the item's parallel group, "" when none */
    long long item_seq;        /* read only: benchmark order */
} arb__pointwise_row;

/* Inside a transaction the row may wait in a group of rows, written by the commit at the latest
** (store.c, PAIRWISE_GROUP); a rollback drops it. */
arb_status arb__store_put_pointwise(arb_store *s, const arb__pointwise_row *row);
/* Every pointwise judgment as one JSON line (arb_store_export "pointwise"): judge, item,
** model, language, group, kind, task, template, rep, value (null for E), reason, content,
** error, prompt_tokens, completion_tokens, latency_ms, attempts; ordered by judge, template,
** kind, task, group, language, benchmark order, item, model, rep. */
arb_status arb__store_export_pointwise(arb_store *s, FILE *out);
typedef int (*arb__pointwise_fn)(void *ud, const arb__pointwise_row *row); /* nonzero stops */
/* Calls fn for every pointwise row, with its item's language, group and seq, ordered by
** judge_name, template_name, kind, task, group, item language, item_id, model, rep. Strings
** are valid only during the call. */
arb_status arb__store_each_pointwise(arb_store *s, arb__pointwise_fn fn, void *ud);

/* One score of a persona-bias call (tables scores, persona_attributions, personas; METHODS §9).
** Written per call by arb__store_put_persona_scores (all rows of one call in one go, with the
** call's attributions), read back one row at a time by arb__store_each_persona_score, which
** also fills the fields marked "read only". */
typedef struct arb__persona_score_row {
    const char *protocol;   /* "persona1" (single candidate) or "persona2" (contrastive pair);
                               "panel1" / "panel2": a panel round r >= 1 (persona.c) */
    const char *judge_name;
    const char *item_id;    /* the scenario */
    const char *subject;    /* the response scored: "response1" or "response2" */
    const char *category;   /* identity category, e.g. "gender" */
    const char *identity;   /* the identity it was attributed to, e.g. "female" */
    int position;           /* 0 first shown (candidate_1, or the only one), 1 second */
    int round;              /* 0: independent scoring (panels: later rounds) */
    const char *metric;     /* "creativity", ..., or "preferred" (phase 2: 1 preferred, 0 not) */
    double value;           /* NAN: E (no valid reply) */
    const char *reason;     /* why E; NULL otherwise */
    long long call_id;
    int rep;                /* read only: the call's repetition */
    const char *base;       /* read only: the scenario's base scenario ("" when none) */
    const char *variant;    /* read only: its variant ("" when none) */
} arb__persona_score_row;

/* Stores the n score rows of one call and its attributions (one per position present),
** replacing what that call stored before, inside the caller's transaction. */
arb_status arb__store_put_persona_scores(arb_store *s, const arb__persona_score_row *rows,
                                         size_t n);
typedef int (*arb__persona_score_fn)(void *ud, const arb__persona_score_row *row); /* nonzero stops */
/* Calls fn for every persona score row, ordered by judge_name, protocol, category, call_id,
** position, metric. Strings are valid only during the call. */
arb_status arb__store_each_persona_score(arb_store *s, arb__persona_score_fn fn, void *ud);
/* Sets *found when the store holds consensus rows of the panel named label (persona1 /
** persona2 rows under that judge name) whose call is not a round-`rounds` call of the panel's
** first agent: a consensus after another number of rounds. */
arb_status arb__store_panel_other_rounds(arb_store *s, const char *label, const char *first_agent,
                                         int rounds, int *found);

/* One pairwise judgment as the audit reads it, with what its metrics need of the item. */
typedef struct arb__audit_judgment {
    const char *protocol, *judge_name, *candidate, *baseline, *template_name;
    int options;
    const char *item_id;
    long long item_rowid;    /* one number per item */
    long long item_seq;      /* benchmark order */
    const char *category;    /* "" when none */
    const char *language;    /* the item's language, "" when none */
    int rep, order;
    char position_verdict;   /* 'A'..'E' */
    double len_question, len_candidate, len_baseline; /* code points; NAN unknown */
    double len_prompt;       /* code points of the call's messages; NAN unknown */
} arb__audit_judgment;
typedef int (*arb__audit_judgment_fn)(void *ud, const arb__audit_judgment *j); /* nonzero stops */
/* Calls fn for every pairwise judgment of the protocols in the ARB_AUDIT_* mask (sbs, soft and
** hard for ARB_AUDIT_SBS; tournament for ARB_AUDIT_TOURNAMENT), ordered by judge, protocol,
** candidate, baseline, template, options, benchmark order, item, repetition, order. Strings are
** valid only during the call. Returns ARB_OK also when fn stops the walk. */
arb_status arb__store_judgments_for_audit(arb_store *s, unsigned protocols,
                                          arb__audit_judgment_fn fn, void *ud);

/* ---- judgments made elsewhere (arbiter import judgments|fastchat|arena-hard; import_set.c,
** store_import.c). An importer reads its source into an arb__import_set; the store then
** replaces the source's earlier import with the set in one transaction. */

/* One pairwise judgment as an importer read it. Strings are borrowed by arb__import_set_add
** (copied); NULL means absent. */
typedef struct arb__import_judgment {
    const char *judge, *item, *candidate, *baseline;
    const char *protocol;        /* NULL: "sbs" */
    const char *template_name;   /* NULL: "imported" */
    int options;                 /* 2, 3 or 4 (METHODS §2.1) */
    int order;                   /* 0: candidate shown first; 1: baseline shown first */
    int rep;                     /* >= 0 */
    char position_verdict;       /* 'A'..'E' */
    int strength;                /* 0: none; 1: weak (A>B); 2: strong (A>>B) */
    const char *category, *language, *question;
    const char *candidate_answer, *baseline_answer; /* lengths; the report's worst cases */
    const char *raw;             /* the judge's text */
    const char *request;         /* JSON text of the request as sent, when known */
    const char *judge_family, *candidate_family, *baseline_family;
    const char *extra;           /* JSON object text of the fields arbiter does not know */
    const char *where;           /* "file:line" it came from, for messages */
} arb__import_judgment;

/* One pointwise grade as an importer read it (FastChat single-answer grading: kind
** "grade10", value 1..10). */
typedef struct arb__import_score {
    const char *judge, *item, *model;
    const char *kind;            /* "yesno", "grade" or "grade10" */
    const char *template_name;   /* NULL: "imported" */
    int rep;
    int value;                   /* -1: no valid verdict (E) */
    const char *reason;          /* why value is -1 */
    const char *category, *question, *answer, *raw, *extra;
    const char *judge_family, *model_family;
    const char *where;
} arb__import_score;

typedef struct arb__import_set arb__import_set;
arb__import_set *arb__import_set_create(void);
void arb__import_set_destroy(arb__import_set *set);
/* Adds a copy of j. ARB_INVALID with *errmsg (caller frees) when a field is out of range or
** when the set already holds a judgment of the same judge on the same item with the same two
** answers in the same shown order and repetition ("where: ... also at <where>"); ARB_NOMEM. */
arb_status arb__import_set_add(arb__import_set *set, const arb__import_judgment *j,
                               char **errmsg);
/* Adds a copy of sc; duplicates (judge, item, model, kind, template, rep) are refused. */
arb_status arb__import_set_add_score(arb__import_set *set, const arb__import_score *sc,
                                     char **errmsg);
/* The battles a source gives without a judgment behind them (FastChat pairs graded by two
** single-answer calls: a verdict but no shown order), stored after those derived from the
** judgments. Created on first use (NULL when out of memory); owned by the set. */
arb_battles *arb__import_set_battles(arb__import_set *set);
const arb_battles *arb__import_set_own_battles(const arb__import_set *set); /* NULL: none */
/* A line read but not stored (e.g. a game without a score): counted, with its reason. */
void arb__import_set_skip(arb__import_set *set, size_t n);
size_t arb__import_set_count(const arb__import_set *set);
size_t arb__import_set_score_count(const arb__import_set *set);
size_t arb__import_set_skipped(const arb__import_set *set);
/* The i-th judgment/score in the order added; strings owned by the set. */
arb__import_judgment arb__import_set_at(const arb__import_set *set, size_t i);
arb__import_score arb__import_set_score_at(const arb__import_set *set, size_t i);
/* The key two imports may not share (protocol, judge, template, options, item, answer shown
** first, answer shown second, rep), as text; caller frees; NULL when out of memory. */
char *arb__import_judgment_key(const arb__import_judgment *j);

/* Stores set as source (store_import.c), all or nothing, in one transaction (a savepoint when
** the caller holds one): first everything source brought before is deleted (its pairwise and
** pointwise rows, their calls, its battles, its families, its judgment_sources row); then a
** judgment that another source, or arbiter itself, already holds under the same key is
** refused (ARB_INVALID, "where: ... already judged by arbiter" / "... imported from source
** \"X\""), as is an answer text that differs from the stored one and a name given two
** families. Missing items are added after the store's last (items.seq, in order of first
** appearance), answers and families stored, a call row made for each judgment with a raw text
** or a request (model, tokens, latency and attempts read from extra under export's names), and
** the battles derived from the judgments stored under source (METHODS §6:
** i = shown first; A -1, B +1, C and D 0 (D both_bad), E left out and counted; strength 2
** strong). kind and path are recorded in judgment_sources. stats (may be NULL) gets the
** counts, zero on failure. Borrowing only; the message is in the store. */
arb_status arb__store_put_import(arb_store *s, const char *source, const char *kind,
                                 const char *path, const arb__import_set *set,
                                 arb_import_stats *stats);

/* One import source as stored (store_sources.c): its judgment_sources row, the pairwise and
** pointwise rows stored under it now, and its judges as "a, b" in name order. Borrowed for
** the callback. */
typedef struct arb__judgment_source {
    const char *name, *kind, *path, *imported_at;
    long long n_judgments, n_skipped, n_pairwise, n_pointwise;
    const char *judges;
} arb__judgment_source;
/* Returns 0 to go on, non-zero to stop. */
typedef int (*arb__judgment_source_fn)(void *ud, const arb__judgment_source *source);
/* Calls fn for every import source in name order. ARB_OK (also when fn stops), ARB_DB. */
arb_status arb__store_each_judgment_source(arb_store *s, arb__judgment_source_fn fn, void *ud);

/* Both orders of one judge's judgment of one pair (everything but the order). */
typedef struct arb__pair_key {
    const char *protocol, *judge_name, *template_name, *item_id, *candidate, *baseline;
    int options, rep;
} arb__pair_key;
/* The stored texts of the pair key names (store_sources.c): text[ord] is the judge's reply of
** the judgment shown in order ord (calls.content: arbiter's reply, or the imported "raw"),
** NULL when there is none; *source the import source, NULL when arbiter judged it. Copies the
** caller frees (all NULL on failure). ARB_OK, ARB_DB, ARB_NOMEM. */
arb_status arb__store_pair_texts(arb_store *s, const arb__pair_key *key, char *text[2],
                                 char **source);

/* A reader of one kind of judgment source (import_judgments.c's table of kinds): reads path
** into set. Bad input is ARB_PARSE with *errmsg "file:line: field \"x\": ..." (caller frees);
** ARB_IO, ARB_TOOBIG, ARB_NOMEM likewise. */
typedef arb_status (*arb__import_reader_fn)(const char *path, const arb_import_params *params,
                                            arb__import_set *set, char **errmsg);
/* The generic format (import judgments): JSONL, or CSV when path ends in .csv. */
arb_status arb__import_generic(const char *path, const arb_import_params *params,
                               arb__import_set *set, char **errmsg);
/* The generic format on text already read (path names it in messages; csv: CSV with a header,
** else JSONL); what arb__import_generic does once the file is read, and what the fuzz target
** drives. text is borrowed. */
arb_status arb__import_generic_text(const char *path, const char *text, size_t len, int csv,
                                    arb__import_set *set, char **errmsg);

/* Readers of other tools' judgment files into a set (import_fastchat.c, import_arena_hard.c;
** mappings in README "Import"). All or nothing is the caller's: on failure the set may hold
** part of the file and must be dropped. ARB_PARSE (or ARB_NOTFOUND / ARB_IO / ARB_INVALID) with
** *errmsg (caller frees) "path:line: field \"x\": expected ..., got ...". */
/* FastChat model_judgment/<judge>_pair.jsonl (two judgments per line) or _single.jsonl
** (grade10 scores); params->baseline picks the baseline of a pair (else model_2). */
arb_status arb__import_fastchat(const char *path, const arb_import_params *params,
                                arb__import_set *set, char **errmsg);
/* Arena-Hard-Auto model_judgment/<judge>/ folder of <model>.jsonl files, or one such file;
** params->baseline names the baseline of lines that do not (v0.1), and is then required. */
arb_status arb__import_arena_hard(const char *path, const arb_import_params *params,
                                  arb__import_set *set, char **errmsg);

/* The entries of folder except "." and "..", sorted bytewise (readdir's order is the file
** system's), so an import reads a folder in the same order everywhere. *names and each name
** are the caller's (arb__import_free_names). ARB_NOTFOUND / ARB_IO / ARB_NOMEM with b's
** message. (import.c) */
arb_status arb__import_list_folder(arb_battles *b, const char *folder, char ***names, size_t *n);
void arb__import_free_names(char **names, size_t n);

/* One FastChat pairwise judgment line as both importers read it (battles: import.c;
** judgments: import_fastchat.c). Strings borrow the JSON object, except item. */
typedef struct arb__fastchat_line {
    char *item;              /* "<question_id>", or "<question_id>#<turn>" from turn 2 (owned) */
    const char *question_id; /* as text (an integer id is written into qbuf) */
    char qbuf[32];
    json_int_t turn;         /* 1 when absent */
    const char *model_1, *model_2;
    const char *judge;       /* judge model; "" when the line names none */
    const char *prompt;      /* the judge prompt's name ("pair-v2"), NULL when not given */
    int s1, s2;              /* game 1 (model_1 shown first) and game 2 (model_2 shown first),
                             ** for the answer shown first: -1 better, 0 tie, +1 worse, 2 error */
    int single;              /* m1_score given: one verdict from two grades, no shown order */
    const char *judgment_1, *judgment_2; /* g1_judgment, g2_judgment (NULL when absent) */
} arb__fastchat_line;
/* Reads one pairwise line read from path:line into *p (free with arb__fastchat_line_free,
** also after a failure). ARB_PARSE with b's message "path:line: field ..." when it is not one. */
arb_status arb__fastchat_pair_read(arb_battles *b, json_t *obj, const char *path, size_t line,
                                   arb__fastchat_line *p);
/* Adds the battles of one pairwise line read by arb__fastchat_pair_read to b (METHODS §6):
** game 1 (model_1 shown first) and game 2 (model_2 first), an "error" game left out and
** counted (b->skipped); one battle for a single-graded pair. reviewer: the judge's name. */
arb_status arb__fastchat_battles(arb_battles *b, const arb__fastchat_line *p,
                                 const char *reviewer, const char *path, size_t line);
void arb__fastchat_line_free(arb__fastchat_line *p);

/* Which way round the stored pairwise judgments take the models x and y (store_labels.c):
** *which = 1 when x is their candidate and y the baseline, 2 when y is, 0 when the pair was
** never judged. The item's own judgments decide first, then the pair's on any item. */
arb_status arb__store_pair_orientation(arb_store *s, const char *item, const char *x,
                                       const char *y, int *which);

/* Families of judges and contestants (table families, METHODS §5/§6). role is "judge" or
** "model"; source names the judges file or import that said so (may be NULL). Upserts. */
arb_status arb__store_put_family(arb_store *s, const char *name, const char *role,
                                 const char *family, const char *source);
typedef int (*arb__family_fn)(void *ud, const char *name, const char *role, const char *family);
/* Calls fn for every family record, ordered by role, name. Returns ARB_OK also when fn stops. */
arb_status arb__store_each_family(arb_store *s, arb__family_fn fn, void *ud);
/* Stores what a judge's config says about families (called by arb__store_put_judge, so every
** judging command records them where it records its judges): judge->family under the judge's
** name (role "judge") and every entry of judge->judges_file's families: map (role "model"),
** with the file's path as source. Nothing when the config has neither. */
arb_status arb__store_put_judge_families(arb_store *s, const arb_judge_config *judge);

/* ---- families.c: the families table as a lookup (METHODS §5) ------------------------------ */
typedef struct arb__families arb__families;
/* Reads every family record of the store. *out owned by the caller (arb__families_free); on
** failure NULL and arb_store_errmsg(s) says why. */
arb_status arb__families_load(arb_store *s, arb__families **out);
void arb__families_free(arb__families *f); /* accepts NULL */
/* The family of name in role ("judge" or "model"), borrowed from f; NULL when unknown. */
const char *arb__families_of(const arb__families *f, const char *role, const char *name);
/* How many names of role have a family. */
size_t arb__families_count(const arb__families *f, const char *role);

/* ---- agreement.c: the family preference (METHODS §6 self-enhancement, by family) --------- */
typedef struct arb__family_prefs {
    arb_family_preference *v; /* strings owned */
    size_t n;
} arb__family_prefs;
/* The family preference of every judge with a family in fam, over the pairwise judgments of
** protocols sbs and tournament (see arb_family_preference), with p's bootstrap over items.
** out is filled (arb__family_prefs_free); ARB_OK, or an error with arb_store_errmsg(s). */
arb_status arb__family_preference_compute(arb_store *s, const arb__families *fam,
                                          const arb_agreement_params *p, arb__family_prefs *out);
void arb__family_prefs_free(arb__family_prefs *prefs);
/* One judge's family preference as a JSON object (judge, family, n_comparisons, n_own,
** n_others, own_win_rate, others_win_rate, difference, ci_low, ci_high); NULL out of memory. */
json_t *arb__json_family_preference(const arb_family_preference *fp);

/* Dialogues (debate §2.5, discussion §7). A dialogue is found by its key, a hash of all the
** fields below: every turn's done callback upserts it (turns may finish in any order) and gets
** its id. An existing dialogue that failed is open again (status "open", no final verdict),
** and a finished one as soon as arb__store_put_turn changes one of its turns, until
** arb__store_end_dialogue, so a rerun that stops half-way leaves it open, not as it was; a
** rerun that changes nothing writes nothing. */
typedef struct arb__dialogue_ref {
    const char *kind;              /* "soft", "hard", "discussion", "self-discussion" */
    const char *item_id;
    const char *answer1, *answer2; /* models shown as answer 1 and 2 */
    const char *participants_json; /* JSON array of judge names: leader first, or agent 1,
                                      agent 2, judge agent */
    const char *config_json;       /* canonical JSON (sorted keys): the set-up's settings, the
                                      same for every dialogue of the set-up */
    int rep;
} arb__dialogue_ref;
arb_status arb__store_put_dialogue(arb_store *s, const arb__dialogue_ref *d, long long *id);
/* Upserts turn `turn` of a dialogue (written only when it differs; then the dialogue is open
** again). call_id 0 stores NULL; verdict may be NULL. */
arb_status arb__store_put_turn(arb_store *s, long long dialogue_id, int turn,
                               const char *speaker, const char *role, long long call_id,
                               const char *verdict);
/* Sets the final verdict and status ("done" or "failed") and drops turns after last_turn (a
** rerun that ended earlier than a previous attempt). */
arb_status arb__store_end_dialogue(arb_store *s, long long dialogue_id, const char *final_verdict,
                                   const char *status, int last_turn);

/* One row of a dialogue walk: a dialogue with one of its turns (has_turn 0: a dialogue without
** turns, one row). Strings are NULL for SQL NULL and borrowed until the callback returns. */
typedef struct arb__dialogue_turn_row {
    long long dialogue_id;
    const char *kind, *item_id, *answer1, *answer2;
    const char *participants_json, *config_json;
    int has_rep;
    long long rep;
    const char *status, *final_verdict;
    int has_turn;
    long long turn;
    const char *speaker, *role, *verdict;
    int has_call;
    long long call_id;
    /* The turn's call (each_dialogue_turn only, else NULL): its model, the messages sent (the
    ** request's "messages", JSON), the reply's content, the error and the judge's thinking. */
    const char *model, *messages_json, *reply, *error, *reasoning;
} arb__dialogue_turn_row;
/* Returns nonzero to stop the walk (which then returns ARB_OK). */
typedef int (*arb__dialogue_turn_fn)(void *ud, const arb__dialogue_turn_row *row);
/* store_dialogues.c: every dialogue with each of its turns and the turn's call, ordered by
** dialogue id then turn. */
arb_status arb__store_each_dialogue_turn(arb_store *s, arb__dialogue_turn_fn fn, void *ud);
/* The same rows for the dialogues of the four discussion and debate kinds ("discussion",
** "self-discussion", "soft", "hard"), without the calls (model..error NULL). */
arb_status arb__store_each_discussion_turn(arb_store *s, arb__dialogue_turn_fn fn, void *ud);
/* The config of a stored dialogue of kind with these participants, the same agent 1 template
** and options but another config (debate.c refuses such a set-up under one name), in
** *other_config (caller frees), or NULL when there is none. On ARB_DB the store's message is
** SQLite's own. */
arb_status arb__store_find_other_debate_config(arb_store *s, const char *kind,
                                               const char *participants_json,
                                               const char *config_json,
                                               const char *agent1_template, int options,
                                               char **other_config);

/* transcripts.c: every dialogue with its turns as JSONL (arb_store_export "transcripts"). */
arb_status arb__store_export_transcripts(arb_store *s, FILE *out);

/* ---- store_report.c: what the report reads that no metric's API gives ---------------------- */
/* Every walk is ordered; strings are borrowed for the call (NULL for SQL NULL); a callback
** returns 0 to go on, nonzero to stop (the walk then returns ARB_OK). Failures: ARB_DB (or
** ARB_NOMEM) with the store's message "cannot read <what>: ...". */

/* How many rows the store's main tables hold (models: distinct models with answers). */
typedef struct arb__store_contents {
    long long items, models, judges, pairwise, labels, battles, dialogues, runs;
} arb__store_contents;
arb_status arb__store_count_contents(arb_store *s, arb__store_contents *n);
/* How many expert labels (human_labels rows) the store holds. */
arb_status arb__store_count_labels(arb_store *s, long long *n);
/* How many pairwise judgments were made with the baseline shown first (ord 1). */
arb_status arb__store_count_swapped_judgments(arb_store *s, long long *n);
/* Each judge (by name) with its pairwise judgments and dialogue turns. */
typedef struct arb__judge_summary {
    const char *name, *model, *base_url;
    long long n_judgments, n_turns;
} arb__judge_summary;
typedef int (*arb__judge_summary_fn)(void *ud, const arb__judge_summary *j);
arb_status arb__store_each_judge_summary(arb_store *s, arb__judge_summary_fn fn, void *ud);
/* Each protocol that has runs, pairwise judgments or dialogues (by name), with its models (of
** judgments and dialogues, byte order), items, runs and the sums of the runs' statistics:
** sums[k] of sent, failed, cached, prompt_tokens, completion_tokens, invalid, has_sum[k] 0
** when no run recorded it; seconds likewise. */
typedef struct arb__protocol_summary {
    const char *protocol;
    const char *const *models;
    size_t n_models;
    long long n_items, n_runs;
    long long sums[6];
    int has_sum[6];
    double seconds;
    int has_seconds;
} arb__protocol_summary;
typedef int (*arb__protocol_summary_fn)(void *ud, const arb__protocol_summary *p);
arb_status arb__store_each_protocol_summary(arb_store *s, arb__protocol_summary_fn fn, void *ud);
/* Each battle source (by name) with its battles, models (i or j), reviewers and questions. */
typedef struct arb__battle_source_summary {
    const char *source;
    long long n_battles, n_models, n_reviewers, n_questions;
} arb__battle_source_summary;
typedef int (*arb__battle_source_summary_fn)(void *ud, const arb__battle_source_summary *b);
arb_status arb__store_each_battle_source_summary(arb_store *s, arb__battle_source_summary_fn fn,
                                                 void *ud);
/* The name of each battle source, in byte order (never NULL). */
typedef int (*arb__name_fn)(void *ud, const char *name);
arb_status arb__store_each_battle_source(arb_store *s, arb__name_fn fn, void *ud);
/* At most limit dialogues shown in full: the longest (finished first) of each kind, then the
** next of each kind, ...; each dialogue (with its item's question and both answers) is
** followed by its turns in order. has_call 0: the turn was not sent; else content is the
** reply, or NULL with error saying why. */
typedef struct arb__transcript {
    long long id;
    const char *kind, *item_id, *answer1, *answer2, *status, *final_verdict;
    const char *question, *answer1_text, *answer2_text;
} arb__transcript;
typedef struct arb__transcript_turn {
    int turn;
    const char *speaker, *role, *verdict;
    int has_call;
    const char *content, *error;
} arb__transcript_turn;
typedef int (*arb__transcript_fn)(void *ud, const arb__transcript *d);
typedef int (*arb__transcript_turn_fn)(void *ud, const arb__transcript_turn *t);
arb_status arb__store_each_transcript(arb_store *s, size_t limit, arb__transcript_fn dialogue,
                                      arb__transcript_turn_fn turn, void *ud);
/* At most limit (item, candidate, baseline) whose model verdict changed with the order for at
** least one judge (a judge = protocol and judge name; E does not count as a change): most
** judges changed first, then most changed pairs, benchmark order, ids. */
typedef struct arb__order_dependent_item {
    const char *item_id, *candidate, *baseline;
    long long n_judges_changed, n_judges;
    const char *question, *candidate_answer, *baseline_answer;
} arb__order_dependent_item;
typedef int (*arb__order_dependent_item_fn)(void *ud, const arb__order_dependent_item *it);
arb_status arb__store_each_order_dependent_item(arb_store *s, size_t limit,
                                                arb__order_dependent_item_fn fn, void *ud);
/* The model verdicts of (item, candidate, baseline) in both orders (verdict[0]: candidate
** shown first), one per judge, set-up and repetition, ordered by judge, protocol, template,
** options, rep; changed as above. The statement is prepared once by open (close accepts
** NULL). */
typedef struct arb__order_verdict {
    const char *protocol, *judge_name, *template_name;
    int options, rep;
    const char *verdict[2];
    int changed;
} arb__order_verdict;
typedef int (*arb__order_verdict_fn)(void *ud, const arb__order_verdict *v);
typedef struct arb__order_verdicts arb__order_verdicts;
arb_status arb__store_open_order_verdicts(arb_store *s, arb__order_verdicts **out);
void arb__store_close_order_verdicts(arb__order_verdicts *ov);
arb_status arb__store_each_order_verdict(arb__order_verdicts *ov, const char *item,
                                         const char *candidate, const char *baseline,
                                         arb__order_verdict_fn fn, void *ud);

/* ---- store_annotate.c: the annotation web app's pairs, tasks and labels (annotate.c) ---- */

/* Sets how long the connection waits for a database another program holds locked. */
void arb__store_set_busy_timeout(arb_store *s, int ms);
/* SQLite's explanation of the connection's last failure (owned by the store), and in *busy
** whether it was a wait for another program's lock that timed out (busy may be NULL). */
const char *arb__store_last_db_error(arb_store *s, int *busy);
/* A read transaction (deferred BEGIN), so several reads see one snapshot; ended by
** arb__store_end_read (COMMIT) or arb__store_rollback. ARB_DB: see arb__store_last_db_error. */
arb_status arb__store_begin_read(arb_store *s);
void arb__store_end_read(arb_store *s);

typedef enum arb__annotation_pair_problem {
    ARB__PAIR_OK,
    ARB__PAIR_UNANSWERED, /* no item has answers from both models */
    ARB__PAIR_TWICE       /* the pair is given twice */
} arb__annotation_pair_problem;
/* Makes this connection's list of the pairs served (temp.annotate_pairs, in order): the n given
** ones (first = candidate, second = baseline), or when n is 0 every (candidate, baseline) of
** the stored side-by-side judgments, sorted by name. *n_pairs gets how many (0: none found).
** ARB_INVALID with *bad (the index) and *problem when a given pair cannot be served; ARB_DB
** with the store's message. Once per connection. */
arb_status arb__store_put_annotation_pairs(arb_store *s, const arb_model_pair *pairs, size_t n,
                                           size_t *n_pairs, size_t *bad,
                                           arb__annotation_pair_problem *problem);

/* The task statements of one annotation server, prepared once over its store (after the pairs
** are made) and used under the server's lock, inside the caller's transactions. Their
** functions return ARB_OK, ARB_NOMEM (store message set), or ARB_DB: SQLite's explanation is
** then arb__store_last_db_error, and the failed statement stays as it failed until
** arb__store_reset_annotation_tasks, which the caller calls before rolling back. */
typedef struct arb__annotation_tasks arb__annotation_tasks;
/* An open task holds its item for lease_minutes; at most overlap annotators label an item. */
arb_status arb__store_open_annotation_tasks(arb_store *s, int lease_minutes, int overlap,
                                            arb__annotation_tasks **out);
void arb__store_close_annotation_tasks(arb__annotation_tasks *at); /* accepts NULL */
void arb__store_reset_annotation_tasks(arb__annotation_tasks *at);

/* A task (annotation_tasks row). Strings are owned (arb__annotation_task_free). */
typedef struct arb__annotation_task {
    long long id;
    char *item, *candidate, *baseline;
    char *annotator;  /* filled by arb__store_get_annotation_task only */
    int shown_order;  /* 0: the candidate's answer shown first (get only) */
    int answered;     /* has an outcome, label or skip (get only) */
    int live;         /* assigned or renewed less than the lease ago (own_open and get) */
} arb__annotation_task;
void arb__annotation_task_free(arb__annotation_task *t);
/* The annotator's open task of a served pair (first in pair order, then task id): id, names,
** live. *found 0 when there is none. */
arb_status arb__store_own_open_annotation_task(arb__annotation_tasks *at, const char *annotator,
                                               arb__annotation_task *t, int *found);
/* How many OTHER annotators hold (item, candidate, baseline): their labels plus their open
** tasks assigned less than the lease ago. */
arb_status arb__store_count_annotation_holders(arb__annotation_tasks *at, const char *annotator,
                                               const char *item, const char *candidate,
                                               const char *baseline, long long *held);
/* Renews the task's lease (assigned_at = now). */
arb_status arb__store_renew_annotation_task(arb__annotation_tasks *at, long long id);
/* Deletes the task when it is still open. */
arb_status arb__store_release_annotation_task(arb__annotation_tasks *at, long long id);
/* Ends an open task with outcome "label" or "skip" (finished_at = now). */
arb_status arb__store_finish_annotation_task(arb__annotation_tasks *at, long long id,
                                             const char *outcome);
/* The first (pair, item) in pair order, then benchmark order, that has answers from both
** models, that the annotator has neither a task nor a label for, and that fewer than overlap
** others hold (names filled, id 0). *found 0 when nothing is left. */
arb_status arb__store_next_annotation_task(arb__annotation_tasks *at, const char *annotator,
                                           arb__annotation_task *t, int *found);
/* Records a new open task, assigned now; *id gets its id. */
arb_status arb__store_put_annotation_task(arb__annotation_tasks *at, const char *annotator,
                                          const char *item, const char *candidate,
                                          const char *baseline, int shown_order, long long *id);
/* Task id with every field. *found 0 when there is no such task. */
arb_status arb__store_get_annotation_task(arb__annotation_tasks *at, long long id,
                                          arb__annotation_task *t, int *found);

/* What a task shows (owned, arb__annotation_texts_free); reference NULL when the item has none. */
typedef struct arb__annotation_texts {
    char *question, *reference, *candidate_answer, *baseline_answer;
} arb__annotation_texts;
void arb__annotation_texts_free(arb__annotation_texts *x);
/* The item's question and reference and both models' answers. *found 0 when the item or an
** answer is no longer stored. */
arb_status arb__store_get_annotation_texts(arb__annotation_tasks *at, const char *item,
                                           const char *candidate, const char *baseline,
                                           arb__annotation_texts *x, int *found);
/* Upserts the annotator's human label of (item, candidate, baseline): the MODEL verdict
** ("a".."d"), the shown order, time_ms (-1: NULL), source "ui". */
arb_status arb__store_put_annotation_label(arb__annotation_tasks *at, const char *annotator,
                                           const char *item, const char *candidate,
                                           const char *baseline, const char *verdict,
                                           int shown_order, long long time_ms);
/* An annotator's counts over the served pairs: tasks labelled, skipped, and remaining (its open
** tasks plus the tasks it could still be given). */
typedef struct arb__annotation_progress {
    long long labelled, skipped, remaining;
} arb__annotation_progress;
arb_status arb__store_annotation_progress(arb__annotation_tasks *at, const char *annotator,
                                          arb__annotation_progress *p);

/* The path the store was opened with, and whether it names an in-memory database (which a
** second connection could not share). */
const char *arb__store_path(const arb_store *s);
int arb__store_is_memory(const arb_store *s);

/* The states of a run (runs.status): one table for the writer (exec.c), the readers and the
** schema comment, so that one state has one name. Text values are stored; only ever append.
** A run stays "running" after a crash (kill -9): nothing is left to mark it. Stores made
** before schema version 4 may say "ok" for "finished"; the migration to 4 renames it. */
#define ARB__RUN_STATUS_MAP(X)                                                                    \
    X(RUNNING, "running")                                                                         \
    X(FINISHED, "finished")                                                                       \
    X(FAILED, "failed")                                                                           \
    X(INTERRUPTED, "interrupted")
typedef enum {
#define ARB__RUN_STATUS_ENUM(name, text) ARB__RUN_##name,
    ARB__RUN_STATUS_MAP(ARB__RUN_STATUS_ENUM)
#undef ARB__RUN_STATUS_ENUM
} arb__run_status;
/* The stored text of a status (static). */
const char *arb__run_status_text(arb__run_status status);

/* A run of a protocol: its parameters as JSON (never secrets) and, at the end, its stats. */
arb_status arb__store_run_begin(arb_store *s, const char *protocol, const char *params_json,
                                long long *run_id);
arb_status arb__store_run_end(arb_store *s, long long run_id, const arb_run_stats *stats,
                              arb__run_status status);

/* Leases on judge calls (table call_leases), so that two processes running the same work on
** one store send every call once: a process claims a call before sending it, and a call that
** another live process holds is not sent but waited for, then taken from the store. A lease
** lasts `seconds` unless its owner renews it; it ends when the call is stored, when its owner
** ends the run, when it expires (an owner stopped or hung), or at once when the owner's
** process is gone (same host, pid no longer alive: a killed run is resumed without waiting).
** One owner per executor. The calls of one claim share one row (schema 15): a row written per
** claim, not one written and deleted per call. */
typedef struct arb__lease_owner {
    char id[128];         /* host:pid:start:counter, unique per executor */
    char host[64];
    long pid;
    double seconds;       /* lifetime of a lease unless renewed */
} arb__lease_owner;
/* Fills o for this process with leases of the given lifetime. */
void arb__lease_owner_init(arb__lease_owner *o, double seconds);

enum {
    ARB__CLAIM_STORED, /* a successful call is stored: take it (call_id, content) */
    ARB__CLAIM_OURS,   /* claimed: send it */
    ARB__CLAIM_HELD    /* another live process holds it (holder_pid): wait, then ask again */
};
typedef struct arb__call_claim {
    const char *key;      /* in: the call key (borrowed) */
    int state;            /* out: ARB__CLAIM_... */
    long long call_id;    /* STORED */
    char *content;        /* STORED: the reply text (caller frees; may be NULL) */
    long holder_pid;      /* HELD */
    arb__call_spend spend; /* STORED: what it spent */
} arb__call_claim;
/* Claims calls c[0..n) for o in one write transaction (BEGIN IMMEDIATE, so two processes
** never both claim a key): for each, a stored successful call, else a lease taken (or renewed)
** for o, else the live holder. On failure nothing is claimed and no content is left set. */
arb_status arb__store_claim_calls(arb_store *s, const arb__lease_owner *o, arb__call_claim *c,
                                  size_t n);
/* Extends o's leases by o->seconds from now. */
arb_status arb__store_renew_leases(arb_store *s, const arb__lease_owner *o);
/* Ends o's lease on key (within the caller's transaction: with the stored call): the handle
** counts the keys of o's rows it was given (reading each row once) and deletes a row when the
** last of its keys is released. */
arb_status arb__store_release_lease(arb_store *s, const arb__lease_owner *o, const char *key);
/* Ends every lease of o (the run is over: what it did not store, others may send). */
arb_status arb__store_release_leases(arb_store *s, const arb__lease_owner *o);

/* ---- prompt.c ----------------------------------------------------------------------------- */

typedef struct arb__builtin_template {
    const char *name;
    const char *text;
} arb__builtin_template;
extern const arb__builtin_template arb__builtin_templates[]; /* generated; ends with {0,0} */

/* ---- store_batches.c: calls queued for a batch file (--batch export, arbiter batch) ------ */

/* A queued call (table batch_calls). Filled by arb__store_find_batch_call with allocated
** strings (arb__batch_call_free); borrowed when given to arb__store_queue_batch_call. */
typedef struct arb__batch_call {
    char *key;            /* the call key: the batch line's custom_id */
    char *judge_name;
    char *model;
    int rep;
    char *request_json;   /* canonical body, the batch line's body */
    char *api_key_env;    /* the key variable's name (redaction), or NULL */
    char *result_id;      /* the output line stored for it last, or NULL */
    int stored_ok;        /* calls holds a successful row with the key */
    char *base_url;       /* the judge's endpoint (--batch submit), or NULL */
    char *verdict;        /* the verdict its reply carries (arb__verdict_spec_text), or NULL */
} arb__batch_call;
void arb__batch_call_free(arb__batch_call *c);
/* Queues the call (a call queued again is updated, its stored result id kept). */
arb_status arb__store_queue_batch_call(arb_store *s, const arb__batch_call *c);
/* Called with each pending call (queued, no successful call stored) in queue order, key and
** body borrowed; returns 0 to go on, 1 to stop, -1 out of memory. */
typedef int (*arb__batch_pending_fn)(const char *key, const char *request_json, void *ud);
arb_status arb__store_each_pending_batch_call(arb_store *s, arb__batch_pending_fn fn, void *ud);
/* Reads the queued call with this key: *found = 0 when none. */
arb_status arb__store_find_batch_call(arb_store *s, const char *key, int *found,
                                      arb__batch_call *out);
/* Records which output line (its "id") was stored for the call. */
arb_status arb__store_set_batch_result(arb_store *s, const char *key, const char *result_id);
/* Called with each pending call not held by an uncollected batch, grouped by endpoint (base
** URL, "" when none; key variable or NULL), all borrowed; 0 goes on, 1 stops, -1 no memory. */
typedef int (*arb__batch_submit_fn)(const char *key, const char *request_json,
                                    const char *base_url, const char *api_key_env, void *ud);
arb_status arb__store_each_unsubmitted_batch_call(arb_store *s, arb__batch_submit_fn fn,
                                                  void *ud);
/* A provider batch (table batches); strings borrowed. */
typedef struct arb__batch_row {
    const char *id, *base_url, *api_key_env, *input_file_id, *status, *output_file_id,
        *error_file_id;
    long long n_calls, n_completed, n_failed;
    int collected;
} arb__batch_row;
/* Stores a submitted batch and marks its calls (keys) as held by it, in one transaction. */
arb_status arb__store_put_batch(arb_store *s, const arb__batch_row *b, const char *const *keys,
                                size_t n_keys);
/* Called with each batch not collected yet, in submission order; 0 goes on, 1 stops, -1. */
typedef int (*arb__batch_row_fn)(const arb__batch_row *b, void *ud);
arb_status arb__store_each_open_batch(arb_store *s, arb__batch_row_fn fn, void *ud);
/* Writes b's status, file ids, counts and collected flag. */
arb_status arb__store_update_batch(arb_store *s, const arb__batch_row *b);

/* ---- batch.c, batch_api.c: batch files and the OpenAI Batch API ---------------------------- */

/* arb_batch_ingest of text already read (name for messages; text is not kept). */
arb_status arb__batch_ingest_text(arb_store *store, const char *name, char *text, size_t len,
                                  arb_batch_ingest_stats *stats);
/* The batch steps of a judging run (client->batch_action, batch_out), called by
** arb__exec_protocol. Before the plan: polls the store's open batches (waiting, for
** ARB_BATCH_WAIT, until each has ended) and collects the ended ones, so the plan judges their
** replies. After it: writes the batch file (batch_out) and submits the pending calls
** (ARB_BATCH_SUBMIT, ARB_BATCH_WAIT). Counts go to stats. arb__exec_protocol repeats
** after-before-plan for ARB_BATCH_WAIT until nothing more is submitted. */
arb_status arb__batch_api_before(arb_store *s, const arb_client_params *client,
                                 arb_run_stats *stats);
arb_status arb__batch_api_after(arb_store *s, const arb_client_params *client,
                                arb_run_stats *stats);

/* ---- sim_batch.c: the simulator's Batch API (see the file comment) ------------------------ */

typedef struct arb__sim_batches arb__sim_batches;
struct MHD_Connection;
/* Batches complete delay_ms after creation; every fail_every-th line fails (0: none); expire:
** batches end "expired" after their first half. NULL when out of memory. */
arb__sim_batches *arb__sim_batches_create(double delay_ms, long fail_every, int expire);
/* The port of the server's own /v1/chat/completions, which answers the lines. */
void arb__sim_batches_set_port(arb__sim_batches *b, int port);
/* Stops the workers (waiting for them) and frees everything. Accepts NULL. */
void arb__sim_batches_destroy(arb__sim_batches *b);
/* Answers url when it is a files or batches endpoint: returns 1 with *result the MHD_Result,
** else 0 (not a Batch API path). */
int arb__sim_batches_handle(arb__sim_batches *b, struct MHD_Connection *conn, const char *url,
                            const char *method, const arb__upload *rq, int *result);

/* ---- exec.c: runs a graph of judge calls; a call may depend on earlier calls' outputs ----- */

typedef struct arb__exec arb__exec;

/* What the executor knows of a finished call (borrowed during callbacks). */
typedef struct arb__call_outcome {
    long long call_id;
    int cached;             /* 1: taken from the store, not sent */
    int ok;                 /* 0: failed after retries (verdict E) */
    int skipped;            /* 1: the build callback asked for no call (nothing sent or
                               stored; ok 0, call_id 0) */
    const char *content;    /* reply text or NULL */
    const char *error;      /* reason or NULL */
} arb__call_outcome;

/* The request a node will send; the executor takes ownership of system and user. */
typedef struct arb__exec_request {
    const arb_judge_config *judge; /* borrowed; must outlive the run */
    char *system;                  /* may be NULL */
    char *user;
    /* Instead of system and user (both NULL): the messages tpl renders with vars, which the
    ** executor writes straight into the request body (arb__judge_request_body_template), so
    ** the template's text is not rendered and escaped again for every call. Both borrowed:
    ** the texts vars points to must stay valid until the build callback's caller is done
    ** with the request (it reads them right after the callback returns). The callback
    ** checks that the values render (options 2..4) before it hands them over. */
    const arb_template *tpl;
    arb_prompt_vars vars;
    int rep;
    const char *response_format;   /* borrowed: the template's JSON schema (canonical JSON,
                                      arb_template_response_format), sent to judges that
                                      support it; NULL for none */
    arb__verdict_spec verdict;     /* the verdict the reply carries (zero: none), for its
                                      token's logprobs when the judge asks for them */
    int skip;                      /* 1: no call is needed (a dialogue ended early, or an
                                      earlier turn failed): the node finishes at once, done is
                                      called with out->skipped, dependents are released */
} arb__exec_request;

/* Builds node's request once its dependencies have finished (deps in the order given to
** arb__exec_add). Returns 0, or -1 after setting the store's error. */
typedef int (*arb__exec_build_fn)(void *ud, size_t node, const arb__call_outcome *const *deps,
                                  size_t n_deps, arb__exec_request *req);
/* Called inside the transaction that stores the call, so protocol rows commit with it; write
** them through s, which may be the executor's own writer connection rather than the store
** given to arb__exec_create (it runs on the executor's writer thread then: it must not touch
** state the build callback uses without care). Returns 0, or -1 after setting s's error. Not
** called in dry runs. */
typedef int (*arb__exec_done_fn)(void *ud, arb_store *s, size_t node,
                                 const arb__call_outcome *out);

/* Optional (arb__exec_params.recorded): 1 when the protocol's row for node is already
** recorded from the successful stored call with key call_key (the hash of the exact request the
** node would send now), so the node finishes as taken from the store without reading the reply
** or writing anything; 0 to take the ordinary way (claim, read, done callback). Asked on the
** main thread, only for nodes no other node depends on; the protocol counts there what its done
** callback would have (invalid verdicts). */
typedef int (*arb__exec_recorded_fn)(void *ud, size_t node, const char *call_key);

/* Optional (arb__exec_params.texts): fills *t with the dataset texts node's request contains
** and returns 1, or returns 0 (none known). Called on the executor's writer thread before the
** call is stored, so its row is written once, compact (it reads only the run's fixed data). */
typedef int (*arb__exec_texts_fn)(void *ud, size_t node, arb__call_texts *t);

typedef struct arb__exec_params {
    arb_client_params client;
    int dry_run;
    int progress; /* 1, 0, or -1: when stderr is a terminal */
    arb__exec_recorded_fn recorded; /* NULL: every node takes the ordinary way */
    /* arb__exec_protocol: called on the main thread before each slice of the plan (nodes
    ** first .. first + n - 1) is added, when no call of an earlier slice is in flight or
    ** waiting to be stored, so the protocol can load what the slice reads (an indexed
    ** dataset's window) and drop what the previous one read. Returns ARB_OK, or a failure with
    ** the store's message, which ends the run. NULL: nothing to load. */
    arb_status (*slice_begin)(void *ud, size_t first, size_t n);
    arb__exec_texts_fn texts;       /* NULL: calls are compacted when their row names them */
    size_t slice; /* arb__exec_protocol: nodes per slice of a plan without dependencies, or of
                     one in groups (0: arb__exec_plan_slice, else the default, 65,536) */
    size_t group; /* arb__exec_protocol, a plan with dependencies: every node's dependencies lie
                     in its own group of this many consecutive nodes (node / group the same:
                     a debate's three turns, a discussion's statements), so the plan runs in
                     slices of whole groups like an independent one; 0: it runs whole */
    long long *run_id; /* arb__exec_protocol: when not NULL, gets the id of the run it recorded
                          (0 for a dry run) */
    double commit_wait_ms; /* the longest the writer waits for a batch to fill (0: the default,
                              exec.c WRITER_WAIT_MS; tests set it long) */
} arb__exec_params;

arb__exec *arb__exec_create(arb_store *s, const arb__exec_params *params,
                            arb__exec_build_fn build, arb__exec_done_fn done, void *ud);
void arb__exec_destroy(arb__exec *ex);
/* Adds a node depending on earlier nodes; returns its index, or (size_t)-1 when out of
** memory. */
size_t arb__exec_add(arb__exec *ex, const size_t *deps, size_t n_deps);
arb_status arb__exec_run(arb__exec *ex, arb_run_stats *stats);

/* Renders tpl with vars into req->system and req->user and sets req's judge and rep: the end
** of a protocol's build callback. Returns 0, or -1 after setting s's error "<item's file:line>:
** cannot render template T for <what> \"<item id>\": ...". */
int arb__exec_render(arb_store *s, const arb_template *tpl, const arb_prompt_vars *vars,
                     const arb_item *it, const char *what, const arb_judge_config *judge, int rep,
                     arb__exec_request *req);

/* Called after a protocol's calls ran (also when interrupted), before the run is closed;
** returns the status to keep (st, or a new failure). Called once per pass over the plan: with
** --batch wait the plan runs again after each round of batches, so what it reports from
** counters the done callback keeps (invalid verdicts) it resets for the next pass. */
typedef arb_status (*arb__exec_finish_fn)(void *ud, arb_store *s, arb_status st,
                                          arb_run_stats *stats);
/* The dependencies of a protocol's node: writes at most ARB__EXEC_MAX_DEPS earlier node
** indices to deps and returns how many. */
#define ARB__EXEC_MAX_DEPS 64
typedef size_t (*arb__exec_deps_fn)(void *ud, size_t node, size_t *deps);
/* Runs n_calls calls of a protocol as one recorded run: a runs row with params_json (not in
** dry runs; NULL there means building it ran out of memory), the executor, finish (may be
** NULL), and the run's end status (finished, interrupted or failed). deps_of (NULL: the calls
** are independent) gives each node's dependencies. The whole shared shape of sbs.c,
** tournament.c, debate.c and discuss.c. */
arb_status arb__exec_protocol(arb_store *s, const char *protocol, const char *params_json,
                              const arb__exec_params *params, size_t n_calls,
                              arb__exec_deps_fn deps_of, arb__exec_build_fn build,
                              arb__exec_done_fn done, arb__exec_finish_fn finish, void *ud,
                              arb_run_stats *stats);

/* ---- item_window.c: a slice's items and answers, whole or read again from an index -------- */

/* What a protocol's current slice of calls reads from its dataset ds: items first .. first + n
** - 1 and the answers of models[0 .. n_models - 1] to them. For a whole dataset it points into
** ds; for an indexed one (arb_dataset_load_indexed) it holds those records, read again from the
** files by each load in place of the previous slice's. Use: init with the run's dataset and
** models, load from arb__exec_params.slice_begin (arb__item_window_load_nodes maps the slice's
** nodes to items when a protocol numbers its nodes item by item), read with
** arb__item_window_item / _answer from the build, texts and done callbacks, free at the end.
** Not thread-safe, and needs none: the executor loads a slice only when no call of the
** previous one is in flight or waiting to be stored. */
typedef struct arb__item_window {
    const arb_dataset *ds;      /* the run's dataset (borrowed) */
    const char *const *models;  /* whose answers a load looks up (borrowed) */
    size_t n_models;
    arb_dataset *win;           /* an indexed ds's loaded records (owned), else NULL */
    size_t first, n;            /* the items loaded */
    const arb_answer **answers; /* [(i - first) * n_models + m]: models[m]'s answer to item i,
                                   or NULL (owned array of borrowed records) */
    size_t cap_answers;
} arb__item_window;
/* An empty window on ds (nothing to free yet). models: each name once (an indexed load would
** read a model named twice as a duplicate answer). */
void arb__item_window_init(arb__item_window *w, const arb_dataset *ds,
                           const char *const *models, size_t n_models);
/* Loads items first .. first + n - 1 (in range of ds) and the models' answers to them.
** ARB_OK, or a failure with the store's message (ARB_IO "file: ..." when a file changed since
** it was indexed, ARB_NOMEM); the window is then empty. */
arb_status arb__item_window_load(arb__item_window *w, arb_store *s, size_t first, size_t n);
/* arb__item_window_load of the items of nodes first_node .. first_node + n_nodes - 1 when node
** k belongs to item k / nodes_per_item (a plan numbered item by item). */
arb_status arb__item_window_load_nodes(arb__item_window *w, arb_store *s, size_t first_node,
                                       size_t n_nodes, size_t nodes_per_item);
/* Item i of ds (borrowed): any i of a whole dataset, a loaded one of an indexed dataset. */
const arb_item *arb__item_window_item(const arb__item_window *w, size_t i);
/* models[model]'s answer to loaded item i (borrowed), or NULL when it gave none. */
const arb_answer *arb__item_window_answer(const arb__item_window *w, size_t i, size_t model);
/* Frees what the window holds (not ds); the window is empty again and can be loaded. */
void arb__item_window_free(arb__item_window *w);

/* ---- sbs.c: what the pairwise protocols (sbs, debate, discussion) share -------------------- */

/* Nodes per slice of an sbs or grade plan (arb__exec_params.slice; 0: the executor's default).
** Tests set it small to run an indexed dataset across many slices; nothing else writes it. */
extern size_t arb__sbs_plan_slice;
/* Nodes per slice of any protocol's plan whose params give no slice (0: the default, 65,536), and
** the most nodes one executor of arb__exec_protocol has held since a test last zeroed it. Tests
** set the first small and read the second, to see that a plan's memory stays one slice's; nothing
** else writes them. */
extern size_t arb__exec_plan_slice;
extern size_t arb__exec_largest_slice;

/* Checks that models first and second answered every item of ds and that every item has a
** reference when one of the templates uses {reference}, walking an indexed dataset's index
** (the same "file:line" messages); *n_out gets the number of items. The protocols read the
** texts themselves through an item window. ARB_INVALID/ARB_PARSE with the store's message
** otherwise. */
arb_status arb__sbs_check_items(arb_store *s, const arb_dataset *ds, const char *first,
                                const char *second, arb_template *const *tpls, size_t n_tpls,
                                size_t *n_out);
/* Whether item it (of ds; an outline, arb__dataset_item_outline, when ds is indexed: its
** reference is "" when the item has a non-empty one) lacks the reference {reference} needs. */
int arb__sbs_lacks_reference(const arb_dataset *ds, const arb_item *it);

/* ARB_PARSE with "file:line: missing field \"question\" ..." in the store when the item has
** no question, which every pairwise protocol (sbs, tournament, debate, discuss) needs: items
** are read without requiring one (pointwise tasks do not all have one). */
arb_status arb__sbs_check_question(arb_store *s, const arb_item *item);
/* The checks every candidate-vs-baseline protocol makes of its parameters: two different
** models, options 2..4, reps 1..1000, jobs >= 1. ARB_INVALID with the store's message. */
arb_status arb__sbs_check_params(arb_store *s, const char *candidate, const char *baseline,
                                 int options, int reps, int jobs);
/* Renders tpl for item into req->system and req->user, with answer first shown as answer 1
** and second as answer 2 (both non-NULL: from the protocol's item window,
** arb__item_window_answer); vars supplies the option mode and any multi-agent fields, the item
** fills the rest. Returns 0, or -1 after setting s's error. */
int arb__sbs_render_answers(arb_store *s, const arb_item *item, const arb_answer *first,
                            const arb_answer *second, const arb_template *tpl,
                            arb_prompt_vars vars, arb__exec_request *req);
/* ARB_INVALID (with the store's message) when tpl uses a multi-agent placeholder ({agent1},
** {reviews}, ...), which a judge alone has nothing to fill with, or a pointwise one ({answer},
** {task}, {task_input}), which a pair has nothing to fill with. */
arb_status arb__sbs_check_single_judge(arb_store *s, const arb_template *tpl);

/* ---- persona_parse.c, persona.c: persona bias (METHODS §9) ---------------------------------- */

/* The metric set a persona run asks for: names (borrowed) and the closed range of a value. */
typedef struct arb__persona_metrics {
    const char *const *names;
    size_t n;
    double lo, hi;
} arb__persona_metrics;
/* Reads a phase-1 reply (the last top-level JSON object of text; rules in persona_parse.c):
** values[0..m->n) get the scores. Returns 0, or -1 for E with the reason written to
** reason[0..size). Never allocates beyond the parse. */
int arb__persona_parse_1(const char *text, size_t len, const arb__persona_metrics *m,
                         double *values, char *reason, size_t size);
/* Reads a phase-2 reply: values1 / values2 (m->n each) of candidate_1 / candidate_2 and
** *preferred 0 (candidate_1) or 1 (candidate_2). Returns 0, or -1 for E with the reason. */
int arb__persona_parse_2(const char *text, size_t len, const arb__persona_metrics *m,
                         double *values1, double *values2, int *preferred, char *reason,
                         size_t size);
/* The "preferred" value of a phase-2 reply (the object arb__persona_parse_2 reads; the scores
** are not checked): 0 candidate_1, 1 candidate_2, -1 none. *at gets the offset in text of the
** byte where the two values differ (the digit after "candidate_"), SIZE_MAX when it cannot be
** placed (the field written with escapes): the verdict token for its logprobs (logprobs.c). */
int arb__persona_preferred_locate(const char *text, size_t len, size_t *at);

/* Identity categories (persona.c): category names and their labels, in file order. */
typedef struct arb__persona_category {
    char *name;
    char **labels;
    size_t n_labels;
} arb__persona_category;
typedef struct arb__persona_identities {
    arb__persona_category *categories;
    size_t n;
} arb__persona_identities;
/* Reads identities.yaml ("categories: {name: [label, ...]}"; at least 2 labels per category,
** unique within it) from text; path names it in messages ("path:line: ..."). *out is filled
** (free with arb__persona_identities_free, also after a failure). ARB_PARSE with *errmsg
** (caller frees) on bad input, ARB_NOMEM. */
arb_status arb__persona_identities_parse(const char *path, const char *text, size_t len,
                                         arb__persona_identities *out, char **errmsg);
/* The built-in identities: gender, race, religion (METHODS §9). ARB_NOMEM or ARB_OK. */
arb_status arb__persona_identities_default(arb__persona_identities *out);
void arb__persona_identities_free(arb__persona_identities *ids);
/* Reads scenarios.jsonl text (see persona.c) into ds, a new dataset: one item per scenario
** (id, question = scenario, category = base, extra = unknown fields and base, variant) and
** its two responses as answers of models "response1" and "response2" (extra {"quality": q}
** when the line has "qualities"). ARB_PARSE with *errmsg "path:line: field \"x\": ..."
** (caller frees) on bad input, ARB_NOMEM. */
arb_status arb__persona_scenarios_parse(const char *path, const char *text, size_t len,
                                        arb_dataset **ds, char **errmsg);

/* ---- audit.c, audit_metrics.c, audit_render.c: the judge audit (METHODS §3-§5) ------------ */

/* One judgment pair (METHODS §1): a comparison's verdicts on one item and repetition in both
** orders, with what the metrics need to know of the item. */
typedef struct arb__sbs_pair {
    const char *item_id;   /* owned by the audit's loader */
    uint32_t cmp;          /* comparison (judge, candidate, baseline, template, options) index */
    uint32_t item;         /* one number per item */
    uint32_t task;         /* task (item category) index */
    uint32_t language;     /* item language index */
    long long seq;         /* benchmark order */
    int rep;
    char p0, p1;           /* position verdicts of run 0 and run 1 ('A'..'E'), 0 when missing */
    char expert;           /* experts' majority model verdict 'a'..'d'; 'T' when the annotators
                              tied; 0 when unlabelled */
    double len[ARB_LEN__COUNT]; /* code points; the prompt: mean of the two prompts; NAN unknown */
} arb__sbs_pair;

/* A pair as one member of a group; copy tells bootstrap copies of one item apart. */
typedef struct arb__pair_ref {
    const arb__sbs_pair *p;
    uint32_t copy;
} arb__pair_ref;

/* Computes every metric of m except the intervals over refs[0..n), sorted by comparison,
** benchmark order, item, copy and repetition. Returns 0, or -1 when out of memory. */
int arb__audit_metrics(const arb__pair_ref *refs, size_t n, const arb_audit_params *params,
                       arb_audit_metrics *m);
/* The counts every §3/§4/§5 figure but the window series is a function of (audit_metrics.c).
** They add up over items, so a bootstrap round can weight the counts of each distinct item
** pattern by how often the round drew it (audit_bootstrap.c) instead of walking the items. */
typedef struct arb__sbs_tally {
    size_t counts[2][5];   /* model verdicts a..e per run */
    size_t present[2];     /* judgments per run */
    size_t n_errors;
    size_t bm;             /* |BM|: pairs with both runs */
    size_t first[2];       /* #(P_r = A) over BM */
    size_t ab[2];          /* #(P_r in {A,B}) over BM */
    size_t same;           /* #(J0 = J1, neither e) */
    size_t same_ab;        /* #(J0 = J1 in {a,b}) */
    size_t either_ab;      /* #(J0 in {a,b} or J1 in {a,b}) */
} arb__sbs_tally;
/* §5 consistency counts of a set of pairs, enough for PC, PF and the win rate. */
typedef struct arb__pair_tally {
    size_t valid, consistent, pcn, rcn, neutral, wins, ties;
} arb__pair_tally;
/* §4 counts against the expert majority, judgment by judgment. */
typedef struct arb__label_tally {
    size_t correct_run[2], labelled_run[2];
    double kappa[5 * 5];          /* judge model verdict a..e x expert a..e */
    double judge[2][4], expert[2][4]; /* APCC's vectors per run */
} arb__label_tally;
typedef struct arb__audit_tally {
    arb__sbs_tally sbs;
    arb__pair_tally pairs;
    double rs_sum;                /* §5 RS: sum over the repeated prompts of their top share */
    size_t rs_queries;
    arb__label_tally labels;
} arb__audit_tally;

/* Adds to t the pairs refs[0..n) of ONE item (one copy), sorted by comparison then repetition. */
void arb__audit_tally_item(arb__audit_tally *t, const arb__pair_ref *refs, size_t n);
/* Adds `times` times src to dst. */
void arb__audit_tally_add(arb__audit_tally *dst, const arb__audit_tally *src, size_t times);
/* Sets value[] (ARB_M_ ids) of every metric that is a function of the tally: all but the
** window series and the (comparison, task) unit figures, which are left as they are. */
void arb__audit_tally_values(const arb__audit_tally *t, double *value);
/* Adds pair p to the §5 tally t. */
void arb__audit_pair_tally_add(arb__pair_tally *t, const arb__sbs_pair *p);
/* Adds `times` times src to dst. */
void arb__audit_pair_tally_add_times(arb__pair_tally *dst, const arb__pair_tally *src, size_t times);
/* The order arb__audit_metrics needs, for qsort over arb__pair_ref: comparison, benchmark order,
** item, copy, repetition (audit.c). */
int arb__audit_ref_order_cmp(const void *x, const void *y);
/* Sets value[] of the unit figures (PC and PF mean and sd over the units with valid pairs) from
** units[0..n), in (comparison, task) order; scratch holds 2n doubles. Returns the units with
** valid pairs. */
size_t arb__audit_unit_values(const arb__pair_tally *units, size_t n, double *scratch, double *value);
/* Percentile intervals of every metric of one group (refs sorted as for arb__audit_metrics)
** into m->ci_lo/ci_hi (audit_bootstrap.c). ARB_OK, ARB_NOMEM. */
arb_status arb__audit_bootstrap(const arb__pair_ref *refs, size_t n, const arb_audit_params *params,
                                arb_audit_metrics *m);
/* Model-verdict counts a, b, c of one item in one series (d and e are not in §3.1). */
typedef struct arb__verdict_counts {
    double a, b, c;
} arb__verdict_counts;
/* One (item, copy) of a comparison as the window series (§3.1) see it. */
typedef struct arb__series_item {
    arb__verdict_counts run[2]; /* model-verdict counts of run 0 and run 1 */
    unsigned char has[2];       /* the item has run r */
    unsigned char both;         /* a pair of the item has both runs (BM) */
    char expert;                /* experts' majority; the MPCC series take 'a'..'d' only */
} arb__series_item;
/* One entry per (item, copy) of refs[0..n) (one comparison, series order) into out (room for
** n); returns the number of entries. */
size_t arb__audit_series_items(const arb__pair_ref *refs, size_t n, arb__series_item *out);
/* One (item, copy) of one window series (§3.1) as the counts of its x and y sides accumulated
** from the start of a run of entries: model-verdict counts a, b, c of the judge's run (x) and of
** the other run or the experts' label (y). Window sums are differences of two of them. */
typedef struct arb__series_cum {
    uint32_t x[3], y[3];
} arb__series_cum;
/* A run of consecutive entries of one series: cum[i] = the counts of entries 0..i. */
typedef struct arb__series_piece {
    const arb__series_cum *cum;
    size_t n;
} arb__series_piece;
/* A comparison's three series: MPCC-Consistency (run 0 vs run 1 over BM, §3), MPCC of run 0
** and of run 1 against the experts' label (§4). */
enum { ARB__N_SERIES = 3 };
/* The three series of items[0..n) (one comparison or block, series order): series s into
** out[s] (room for n entries each, owned by the caller), described by pieces[s]. */
void arb__audit_series_cumulate(const arb__series_item *items, size_t n,
                                arb__series_cum *const out[ARB__N_SERIES],
                                arb__series_piece pieces[ARB__N_SERIES]);
/* Buffers reused from one series to the next. */
typedef struct arb__series_work {
    uint64_t (*marks)[6]; /* the series' running counts at multiples of gcd(window, stride) */
    double *sx, *sy;      /* window values */
    size_t cap_marks, cap_windows;
} arb__series_work;
/* MPCC-Consistency, MPCC run 0, MPCC run 1 of one comparison into out[0..3): its series s is
** the pieces table[draws[i] * table_stride + s], i = 0..n_draws, laid end to end (one piece
** and draws {0} for the benchmark's own series; the drawn blocks for a block resample).
** Windows are added to m's counts; w grown as needed. 0, or -1 no memory. */
int arb__audit_series_metrics(const arb__series_piece *table, size_t table_stride,
                              const size_t *draws, size_t n_draws, const arb_audit_params *p,
                              arb__series_work *w, double out[3], arb_audit_metrics *m);
void arb__series_work_free(arb__series_work *w);
/* The row's window figures from each comparison's out[3]; scratch holds 3 n_cmp doubles. */
void arb__audit_window_values(const double (*per_cmp)[3], size_t n_cmp, double *scratch,
                              arb_audit_metrics *m);
/* Computes only the window-series figures of m (MPCC-Consistency, MPCC, MPCC-Δ, mpcc_run and
** the windows behind them) over refs sorted by comparison, then series order with the refs of
** one (item, copy) together. Returns 0, or -1 when out of memory. */
int arb__audit_window_metrics(const arb__pair_ref *refs, size_t n, const arb_audit_params *params,
                              arb_audit_metrics *m);

/* The side-by-side judgments read once for audits of several groupings (the report reads them
** once and groups them per comparison, judge, language, ...; METHODS §1 pairs with their
** benchmark order, lengths and expert majority). Opaque; audit.c. */
typedef struct arb__audit_input arb__audit_input;
/* Reads what arb_audit_compute reads for params (its protocols and ensemble; borrowed). *out is
** owned by the caller (arb__audit_input_free); on failure NULL, arb_store_errmsg says why. */
arb_status arb__audit_input_load(arb_store *store, const arb_audit_params *params,
                                 arb__audit_input **out);
void arb__audit_input_free(arb__audit_input *in); /* accepts NULL */
/* The rows arb_audit_compute gives for params (grouping, intervals, seed, window) over in, which
** was read with the same protocols and ensemble (ARB_INVALID otherwise); without what
** arb_audit_compute adds after the rows (discussions, family preference, costs, logprobs).
** *out is owned by the caller (arb_audit_destroy); on failure NULL, the store says why. */
arb_status arb__audit_rows(arb_store *store, const arb__audit_input *in,
                           const arb_audit_params *params, arb_audit **out);
/* The ensemble's vote on one instance (arb_audit_params.ensemble): of the members' position
** verdicts in priority order, the verdict A..D most gave (E not counted), a tie going to the
** earliest member's; 'E' when none gave A..D. */
char arb__audit_vote(const char *verdicts, size_t n);

struct arb_audit {
    arb_audit_row *rows; /* strings owned by the audit */
    size_t n_rows, cap_rows;
    arb_audit_params params; /* as used: by includes ARB_BY_JUDGE */
    arb_discussion_stats *multi_agent; /* discussions and debates of the store (§7) */
    int has_families;          /* the store knows a judge's family: family_preference shown */
    arb__family_prefs family_prefs; /* per judge with a family (§6 by family; agreement.c) */
    arb__judge_cost_row *costs;        /* tokens and cost per judge, every stored call */
    size_t n_costs;
    arb__logprob_row *logprobs;        /* verdict probabilities per comparison (logprobs) */
    size_t n_logprobs;
};

/* ---- labels.c: expert labels (METHODS §4) ------------------------------------------------ */

/* Called for every (item, candidate, baseline) that has expert labels. majority is the most
** frequent model verdict 'a'..'d', or 0 when two or more verdicts share the top count (a tie
** between annotators: skipped by the metrics, and counted). Strings are valid only during the
** call; nonzero from fn stops the walk. */
typedef int (*arb__majority_fn)(void *ud, const char *item_id, const char *candidate,
                                const char *baseline, char majority, int n_annotators);
/* arb_labels_import on text already read (source names it in messages; format "jsonl" or
** "csv"). text is borrowed. */
arb_status arb__labels_import_text(arb_store *s, const char *source, const char *format,
                                   const char *text, size_t len, arb_labels_import_stats *stats);
/* Walks the majority labels ordered by candidate, baseline, item seq. */
arb_status arb__labels_each_majority(arb_store *s, arb__majority_fn fn, void *ud);

/* ---- store_labels.c: the table human_labels ----------------------------------------------- */

/* One expert label as the importer stores it (strings borrowed). verdict is 'a'..'d' (0 when
** a stored one is not a single letter); source is the file it came from. */
typedef struct arb__label_row {
    const char *item, *candidate, *baseline, *annotator, *source;
    char verdict;
    int has_shown_order, shown_order;
    int has_time_ms;
    long long time_ms;
} arb__label_row;
/* The statements of one label import, prepared once, inside one transaction (a savepoint
** when the caller already holds one). Open: ARB_OK, or ARB_DB/ARB_NOMEM with the store's
** message ("labels: cannot prepare a statement: ..."). Close with the import's status: on
** ARB_OK commits (releases the savepoint), else rolls back, so a failed file leaves no trace;
** returns the final status. Close accepts NULL (returns st). */
typedef struct arb__label_import arb__label_import;
arb_status arb__store_open_label_import(arb_store *s, arb__label_import **out);
arb_status arb__store_close_label_import(arb__label_import *li, arb_status st);
/* The statements of an import. Each returns ARB_OK or ARB_DB without setting the store's
** message: arb__store_last_db_error says why. *exists: the item is in table items. find: the
** stored label of key's (item, candidate, baseline, annotator) into *found and its row id in
** *id (0: none). put: updates row id, or inserts row when id is 0. */
arb_status arb__store_label_item_exists(arb__label_import *li, const char *item, int *exists);
arb_status arb__store_find_label(arb__label_import *li, const arb__label_row *key,
                                 arb__label_row *found, long long *id);
arb_status arb__store_put_label(arb__label_import *li, long long id, const arb__label_row *row);
/* Calls fn with the verdict counts a..d of every labelled (item, candidate, baseline) whose
** item is stored, ordered by candidate, baseline, benchmark order (items.seq), item id;
** nonzero from fn stops the walk. ARB_OK or ARB_DB ("labels: cannot read the labels: ..."). */
typedef int (*arb__label_count_fn)(void *ud, const char *item_id, const char *candidate,
                                   const char *baseline, const long long counts[4]);
arb_status arb__store_each_label_count(arb_store *s, arb__label_count_fn fn, void *ud);
/* The inter-annotator report's walks (labels of stored items only), meant to run between
** arb__store_label_report_begin (a read transaction when none is open; returns whether it
** began one) and _end, so both see the same labels. each_label_annotator: per (candidate,
** baseline, annotator) in that order, how many labels; each_label: every label in
** (candidate, baseline, items.seq, item, annotator) order. Strings are valid during the call
** (NULL for SQL NULL). A nonzero return of fn stops the walk and is returned; otherwise 0, or
** -2 on a database error (arb__store_last_db_error). */
typedef int (*arb__label_annotator_fn)(void *ud, const char *candidate, const char *baseline,
                                       const char *annotator, long long n_labels);
typedef int (*arb__label_fn)(void *ud, const char *candidate, const char *baseline,
                             const char *item_id, long long item_seq, const char *annotator,
                             const char *verdict);
int arb__store_label_report_begin(arb_store *s);
void arb__store_label_report_end(arb_store *s, int began);
int arb__store_each_label_annotator(arb_store *s, arb__label_annotator_fn fn, void *ud);
int arb__store_each_label(arb_store *s, arb__label_fn fn, void *ud);

/* ---- factors.c: stepwise linear regression by AIC (METHODS §5 factor analysis) ------------ */

/* One explanatory variable: numeric (x set, level NULL) or categorical (level set, x NULL). */
typedef struct arb__factor_var {
    const char *name;               /* borrowed */
    const double *x;                /* numeric: n finite values */
    const size_t *level;            /* categorical: n level indices, each < n_levels */
    size_t n_levels;                /* levels in sorted order; the first present one is the
                                       reference of the dummy coding */
    const char *const *level_names; /* categorical: n_levels names, may be NULL (reporting) */
} arb__factor_var;

/* Why a variable was not a candidate (arb__stepwise_result.unusable). */
enum { ARB__FACTOR_USABLE = 0, ARB__FACTOR_NO_VARIATION = 1, ARB__FACTOR_ONE_LEVEL = 2 };

typedef struct arb__stepwise_step {
    int add;    /* 1 added, 0 removed */
    size_t var; /* index into vars */
    double aic; /* AIC of the model after the step */
} arb__stepwise_step;

/* One coefficient of the final model: intercept first, then the variables in their order,
** a categorical as one dummy per non-reference level present. */
typedef struct arb__stepwise_coef {
    size_t var;   /* index into vars; SIZE_MAX for the intercept */
    size_t level; /* categorical: the level of this dummy; 0 otherwise */
    int aliased;  /* 1: linearly dependent on earlier columns; not estimated, not in k */
    double estimate, std_error, t, p_value; /* NAN when undefined (no residual df, aliased) */
} arb__stepwise_coef;

typedef struct arb__stepwise_result {
    size_t n, n_vars;
    int *unusable;        /* per variable: ARB__FACTOR_* (not a candidate when nonzero) */
    int *in_model;        /* per variable: 1 when in the final model */
    double *delta_aic;    /* per variable: AIC without it − AIC of the final model; NAN when
                             not in the model (> 0: it helps) */
    size_t *reference;    /* per categorical: its reference level; SIZE_MAX for numeric */
    arb__stepwise_step *steps;
    size_t n_steps;
    arb__stepwise_coef *coefs;
    size_t n_coefs;
    double aic;           /* final model */
    double aic_null;      /* intercept-only model */
    double rss, tss, r_squared; /* R² NAN when y does not vary */
    size_t rank;          /* independent coefficients of the final model (k − 1) */
    size_t df_residual;   /* n − rank */
} arb__stepwise_result;

/* Bidirectional stepwise regression of y[0..n) on vars (all borrowed) from the intercept-only
** model, AIC = 2k − 2 ln L; details in factors.c. *out is filled and must be freed with
** arb__stepwise_result_free, also after a failure. ARB_INVALID for n == 0, a non-finite value
** or a level out of range; ARB_NOMEM. */
arb_status arb__stepwise_fit(const double *y, size_t n, const arb__factor_var *vars,
                             size_t n_vars, arb__stepwise_result *out);
void arb__stepwise_result_free(arb__stepwise_result *r); /* accepts NULL */

/* One (judge, candidate, task) group as arb_factors_compute reads it from the audit. */
typedef struct arb__factor_group {
    const char *judge, *candidate, *task; /* borrowed; NULL is taken as "" */
    double pc, pf, quality_gap;           /* NAN when undefined */
    double length[ARB_LEN__COUNT];        /* mean lengths in code points */
    const char *judge_family, *candidate_family; /* borrowed; NULL unknown. When any group
                                          has one, judge_family and same_family are variables */
} arb__factor_group;

/* The factor analysis of groups (borrowed) for target "pc" or "pf": what arb_factors_compute
** does after the audit. *out is owned by the caller (arb_factors_destroy). ARB_INVALID for a
** bad target, ARB_NOMEM. */
arb_status arb__factors_from_groups(const arb__factor_group *groups, size_t n,
                                    const char *target, arb_factors **out);

/* The factor analysis for target "pc" or "pf" (NULL = "pc") of an audit grouped by judge,
** candidate and task (borrowed; ARB_INVALID for another grouping): what arb_factors_compute
** does after its audit. *out is owned by the caller (arb_factors_destroy); on failure NULL and
** arb_store_errmsg(store) says why. */
arb_status arb__factors_from_audit(arb_store *store, const arb_audit *audit, const char *target,
                                   arb_factors **out);

/* ---- battles.c: battle sets (METHODS §6) --------------------------------------------------- */

/* n judgments of reviewer r on the pair (i, j) -- i before j by name, indices into the string
** tables -- that had no valid verdict (E) and so gave no battle (tournaments, §6). */
typedef struct arb__battles_left_out {
    uint32_t i, j, r;
    size_t n;
} arb__battles_left_out;

struct arb_battles {
    arb__strtab questions, models, reviewers;
    uint32_t *q, *i, *j, *r; /* per battle: indices into the tables above */
    int8_t *s;               /* -1 i better, 0 tie, +1 j better */
    uint8_t *both_bad;
    uint8_t *strong;         /* a strong verdict (arb_battle.strong): only on a win (s != 0) */
    float *style;            /* n x 2 x ARB_STYLE__COUNT (i then j), NAN unknown; NULL while no
                                battle has any style value */
    size_t n, cap;
    size_t skipped;          /* reviews importers left out (no verdict); arb_battles_skipped */
    arb__battles_left_out *left_out; /* judgments without a verdict (E) per reviewer and pair */
    size_t n_left_out, cap_left_out;
    char *errmsg;            /* last error (owned) */
};
/* Sets b's message (printf-style) and returns code. */
arb_status arb__battles_fail(arb_battles *b, arb_status code, const char *fmt, ...)
    ARB__ATTR_PRINTF(3, 4);
/* The style covariates of an answer's text (length in code points, markdown headers, list
** items, bold spans; counted as the Chatbot Arena's style control does). */
void arb__answer_style(const char *text, double style[ARB_STYLE__COUNT]);
/* The text of a question id given as a string or an integer (arena and PRD files use both):
** integers are written in decimal into buf. NULL when v is neither, empty, or holds a NUL. */
const char *arb__battles_question_text(const json_t *v, char *buf, size_t size);
/* A non-empty JSON string without NUL bytes, or NULL. */
const char *arb__battles_name_text(const json_t *v);
/* Appends one arena-convention object (borrowed; see arb_battles_read_jsonl) read from
** path:line to b. ARB_PARSE with "path:line: field ..." in b's message when it is not one. */
arb_status arb__battles_add_json(arb_battles *b, json_t *obj, const char *path, size_t line);
/* Fails with "path:line: field \"field\": expected <expected>, got <a description of got>"
** (got may be NULL: "missing"; strings are quoted, cut and made safe for a terminal) and
** returns ARB_PARSE. */
arb_status arb__battles_field_fail(arb_battles *b, const char *path, size_t line,
                                   const char *field, const char *expected, const json_t *got);
/* Called with each JSON object of a file (borrowed) and the line it starts on. */
typedef arb_status (*arb__battles_json_fn)(void *ud, arb_battles *b, json_t *obj,
                                           const char *path, size_t line);
/* Reads path and calls fn for each object: JSONL (blank lines, CRLF and a byte order mark
** are fine), or with allow_array also a JSON array of objects. Stops at the first error (fn's
** status, or ARB_PARSE "path:line: ..." / ARB_NOTFOUND / ARB_IO with b's message set). */
arb_status arb__battles_each_json(arb_battles *b, const char *path, int allow_array,
                                  arb__battles_json_fn fn, void *ud);
/* Appends every battle of src to dst, in order; adds src's skipped count. All or nothing
** except that, out of memory, dst's string tables may keep names of no battle. */
arb_status arb__battles_append(arb_battles *dst, const arb_battles *src);
/* The number of strong battles in b (arb_battle.strong). */
size_t arb__battles_count_strong(const arb_battles *b);
/* A copy of b in which every strong battle stands `times` times in a row where it stood
** (Arena-Hard-Auto's weighting of A>>B verdicts: the battle repeated), with b's string tables
** in the same order (so model, question and reviewer indices are b's), left-out records and
** skipped count. Caller destroys; NULL when out of memory. */
arb_battles *arb__battles_repeat_strong(const arb_battles *b, size_t times);
/* The extra column of a stored battle (battles.c): both_bad, strong and the known style
** covariates as compact JSON, "{}" when there is nothing (caller frees; NULL out of memory);
** and back into battle, -1 when text is not what arb__battle_extra_json writes (unknown keys
** are ignored). */
char *arb__battle_extra_json(const arb_battle *battle);
int arb__battle_parse_extra(const char *text, arb_battle *battle);
/* store_battles.c: the left-out records of b under source, written inside
** arb_store_put_battles' transaction (replacing the source's), and read back into b (source
** NULL: all). */
arb_status arb__store_put_battles_left_out(arb_store *store, const char *source,
                                           const arb_battles *b);
arb_status arb__store_get_battles_left_out(arb_store *store, const char *source, arb_battles *b);
/* store_battles.c: *in_step = 1 when the battles of source (with their left-out counts) are as
** many as the stored pairwise judgments of protocol in option mode options, the number a
** rebuild from those judgments gives (one battle or one left-out count each), and stored after
** every one of those judgments was written; else 0. */
arb_status arb__store_battles_in_step(arb_store *store, const char *source, const char *protocol,
                                      int options, int *in_step);
/* store_battles.c: returns once the wall clock has passed the newest judged_at (ms) of those
** judgments, so battles stored next are stamped after every one of them (times are whole
** milliseconds: battles built within the millisecond of the last judgment otherwise looked
** older than it, and the next rerun rebuilt them). Waits at most ~5 ms
** (arb__store_wait_clock_past). */
arb_status arb__store_wait_past_judgments(arb_store *store, const char *protocol, int options);

/* ---- rankings (METHODS §6): rank.c, peer.c, rank_core.c, rank_render.c share src/rank.h --- */

/* ---- html.c: escaping for HTML and Markdown, and SVG charts drawn by arbiter ------------- */

/* Each appends to b and returns 0, or -1 when out of memory. Untrusted text is written with
** &, <, >, " and ' escaped, invalid UTF-8 bytes as U+FFFD, control characters other than
** tab and newline dropped, and the explicit bidirectional controls (U+202A..U+202E,
** U+2066..U+2069) dropped, so no input can open a tag, end an attribute, drive a terminal or
** reverse the text shown (right-to-left scripts display by the implicit algorithm). */
int arb__html_text(arb__buf *b, const char *s);  /* element content; NULL writes nothing */
int arb__html_attr(arb__buf *b, const char *s);  /* an attribute value inside double quotes */
/* A Markdown table cell or inline text: as arb__html_text except that quotes stay (no tag can
** open), and also | \ ` * _ [ ] # ~ $ escaped with a backslash and newlines as <br>, so a value
** cannot break the table or add markup. */
int arb__md_text(arb__buf *b, const char *s);
/* Plain text, for a page that writes it with textContent (the annotation page's JSON): as
** arb__html_text without the entities (nothing is markup there), so only invalid UTF-8 (U+FFFD),
** control characters but tab and newline, and the explicit bidirectional controls change. */
int arb__plain_text(arb__buf *b, const char *s);

/* Charts: each writes one <svg role="img" aria-labelledby=...> with a <title> (title) and a
** <desc> (what is drawn, in words), axis labels, a legend where there is more than one colour,
** colour-blind-safe colours (Okabe-Ito), values as text where they fit, and undefined values
** (NAN) drawn as empty/grey marks labelled "n/a"; width 100% of the page, fixed viewBox. All
** strings are escaped. Arrays are borrowed. */

/* One horizontal bar per row, split into n_cats segments (shares 0..1, row-major n_rows x
** n_cats; a row's shares may sum to less than 1); e.g. verdict shares a/b/c/d/e per run. */
int arb__svg_stacked_bars(arb__buf *b, const char *title, const char *const *rows, size_t n_rows,
                          const char *const *cats, size_t n_cats, const double *shares);
/* A heat map (row-major n_rows x n_cols) coloured from lo to hi, each cell printed with
** printf-style cell_format applied to value * scale (e.g. "%.0f%%" with scale 100). */
int arb__svg_heatmap(arb__buf *b, const char *title, const char *const *rows, size_t n_rows,
                     const char *const *cols, size_t n_cols, const double *values, double lo,
                     double hi, const char *cell_format, double scale);
/* The same heat map on a diverging scale centred at 0 (signed differences): red below 0,
** white at 0, blue above, from -half_range to +half_range (NAN or <= 0: the largest |value|). */
int arb__svg_heatmap_diverging(arb__buf *b, const char *title, const char *const *rows,
                               size_t n_rows, const char *const *cols, size_t n_cols,
                               const double *values, double half_range, const char *cell_format,
                               double scale);
/* One row per label: a point at value with a whisker from lo to hi (NAN: no whisker) on a
** shared horizontal axis named axis_label, and a vertical reference line at ref (NAN: none). */
int arb__svg_intervals(arb__buf *b, const char *title, const char *axis_label,
                       const char *const *labels, size_t n, const double *value,
                       const double *lo, const double *hi, double ref);
/* Horizontal bars from 0 (e.g. reviewer weights), the value printed at each bar's end. */
int arb__svg_bars(arb__buf *b, const char *title, const char *axis_label,
                  const char *const *labels, size_t n, const double *values);
/* Lines: n_series series (row-major n_series x n_points) over x = 1..n_points, x_label and
** y_label on the axes, a legend naming the series. */
int arb__svg_lines(arb__buf *b, const char *title, const char *x_label, const char *y_label,
                   const char *const *series, size_t n_series, const double *values,
                   size_t n_points);

#if defined(__SSE2__)
#include <emmintrin.h>
/* The 16 bytes at p as two bit masks: the return value has bit i set where p[i] is '"', '\\'
** or a control character (below 0x20), the bytes a JSON string cannot hold as they are; *high
** where p[i] is not ASCII. The one vector test the JSON escaper and the reply reader share. */
static inline unsigned arb__json_special16(const void *p, unsigned *high)
{
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i special = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v),
                                   _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
    *high = (unsigned)_mm_movemask_epi8(v);
    return (unsigned)_mm_movemask_epi8(special);
}
#endif

#endif
