/*
** store_internal.h -- what the store's own files (store.c, store_*.c) share and no other
** module sees: the connection and the small helpers every statement uses. Only store files
** include sqlite3.h; everything else reads and writes through the arb__store_* functions of
** internal.h, named for what they read or write.
*/
#ifndef ARB_STORE_INTERNAL_H
#define ARB_STORE_INTERNAL_H

#include "internal.h"

#include <sqlite3.h>

/* The open connection (borrowed). */
sqlite3 *arb__store_conn(arb_store *s);
/* Fails with ARB_DB and SQLite's own explanation, prefixed by what was being done. */
arb_status arb__store_fail_db(arb_store *s, const char *what);
/* Runs a statement that returns no rows (or ignores them) and resets it. ARB_OK or ARB_DB. */
arb_status arb__store_step_done(arb_store *s, sqlite3_stmt *st, const char *what);
/* Binds text, or NULL for a NULL pointer (SQLITE_STATIC: reset before the text goes away). */
int arb__store_bind_text(sqlite3_stmt *st, int index, const char *text);
/* A call key (calls.key, call_leases.key, batch_calls.key) is stored as the 16 bytes its 32
** hex digits spell (schema 13); a key of another form would be stored as the text it is. */
#define ARB__CALL_KEY_BYTES 16
/* Adds one judgment row of an sbs plan to t (store_resume.c), serialised and hashed as
** arb__store_sbs_plan_state reads it back: item, repetition, order, position verdict, call id
** (<= 0: NULL), and the call's key (16 bytes) and reply as stored when the call holds a reply
** (key NULL otherwise: both NULL). */
void arb__store_tally_judgment(arb__rows_tally *t, const char *item_id, int rep, int ord,
                               char position_verdict, long long call_id,
                               const unsigned char *key, const char *content,
                               size_t content_len);
/* Returns once the wall clock (whole milliseconds since 1970, as every stamp of the store:
** SQLite's 'now', the rows' bound times) has passed ms, so a stamp taken next is later than
** one taken at ms (a millisecond holds many of a fast run's events). Waits at most ~5 ms: a
** stamp ahead of this clock (another host's, an import's) is not waited out. */
void arb__store_wait_clock_past(long long ms);
/* Binds a call key as it is stored (see ARB__CALL_KEY_BYTES); NULL for a NULL pointer. */
int arb__store_bind_key(sqlite3_stmt *st, int index, const char *key);
/* The call key in column col as its text (32 hex digits), written into out or borrowed from
** q until its next step; NULL for SQL NULL or a blob that is no key. */
const char *arb__store_column_key(sqlite3_stmt *q, int col, char out[2 * ARB__CALL_KEY_BYTES + 1]);
/* A copy of a text column (caller frees), NULL for SQL NULL; *oom = 1 when the copy failed. */
char *arb__store_column_text(sqlite3_stmt *q, int col, int *oom);
/* Runs sql and hands each row to row(q, ud): 0 goes on, 1 stops (ARB_OK), -1 out of memory.
** what names the rows in messages. */
arb_status arb__store_each_row(arb_store *s, const char *sql, const char *what,
                               int (*row)(sqlite3_stmt *q, void *ud), void *ud);

/* Whether calls holds a row with id call_id (*exists; 1 for call_id <= 0, no call, and for the
** call this store stored last in the open transaction): what a judgment's call_id must name,
** checked before its row is written (schema 14; a trigger did it before). ARB_OK or ARB_DB. */
arb_status arb__store_check_call(arb_store *s, long long call_id, int *exists);

/* What reading compact requests and texts cost this open store so far (tests: a reader that
** rebuilds them in bulk, as the export does, decompresses each text once and loads each
** dictionary once, and rebuilds a request only when it writes it). */
typedef struct arb__decode_counts {
    long long requests;     /* compact requests rebuilt */
    long long text_reads;   /* dataset texts read by SQL to rebuild them */
    long long texts;        /* compact texts decompressed */
    long long dictionaries; /* text dictionaries loaded to decompress them */
    /* requests and texts the last export's query rebuilt before it returned its first row: 0
    ** when they are rebuilt after its ORDER BY, so that the sort holds the compact rows */
    long long export_before_first_row;
} arb__decode_counts;
void arb__store_decode_counts(arb_store *s, arb__decode_counts *c);

/* ---- compact requests (store_requests.c) ---- */

typedef struct arb__reqz arb__reqz;

/* A text of the dataset that a request contains: the question of item_id (model NULL) or the
** answer of model to it. Borrowed strings. */
typedef struct arb__request_ref {
    const char *item_id;
    const char *model;
    const char *text; /* the text as stored, when the caller has it at hand; NULL: read it */
} arb__request_ref;

/* A codec on db (borrowed; the store's connection). NULL when out of memory. Its statements
** are prepared on first use, so it may be created before the schema is. */
arb__reqz *arb__reqz_create(sqlite3 *db);
/* Frees it and its statements. Accepts NULL. */
void arb__reqz_destroy(arb__reqz *z);
/* Registers the SQL function arb_request(request) on the connection: the request as sent,
** from a TEXT or a compact request. Returns 0 or -1. */
int arb__reqz_register(arb__reqz *z);
/* The message of the last failure (owned by z). */
const char *arb__reqz_errmsg(const arb__reqz *z);
/* Forgets the skeletons it knows and which one each model uses: after a rollback, which may
** have taken away skeletons it wrote. Accepts NULL. */
void arb__reqz_forget(arb__reqz *z);

/* Encodes request (sent to model) as a compact request in *out (caller frees), *out_len bytes:
** the texts of refs that exist cut out of it (or, when one is not in it as the JSON escaper
** writes it, compressed against the model's skeleton and those texts). Returns 1 when
** encoded, 0 when the request is better kept as TEXT (short; *out NULL), -1 on failure
** (arb__reqz_errmsg). May write a new skeleton row: call it inside the write transaction.
** asks_logprobs: whether the request asks for logprobs as its builder knows it (1 or 0), or -1
** when the encoder is to read it in the request. */
int arb__reqz_encode(arb__reqz *z, const char *model, const char *request, int asks_logprobs,
                     const arb__request_ref *refs, size_t n_refs, unsigned char **out,
                     size_t *out_len);
/* Decodes a compact request: the request text (caller frees, NUL-terminated, *out_len bytes),
** or NULL (arb__reqz_errmsg). */
char *arb__reqz_decode(arb__reqz *z, const unsigned char *blob, size_t len, size_t *out_len);
/* arb__reqz_decode, given the current texts of some refs (their text is the stored one, read
** in the same transaction, decompressed; NULL text: not given): those are not read again by
** SQL. A bulk reader (the export) has them at hand anyway. */
char *arb__reqz_decode_given(arb__reqz *z, const unsigned char *blob, size_t len,
                             const arb__request_ref *current, size_t n_current, size_t *out_len);
/* Requests this codec rebuilt, and dataset texts it read by SQL to rebuild them (tests). */
void arb__reqz_counts(const arb__reqz *z, long long *decoded, long long *text_reads);

/* The prompt length of request in code points: the total length of its messages' contents,
** as SQL's length() counts them (METHODS §5). *chars = -1 for a NULL request. 0 or -1. */
int arb__reqz_prompt_chars(arb__reqz *z, const char *request, long long *chars);
/* The scanner arb__reqz_prompt_chars tries first (no SQL): the prompt length of a canonical
** request, or -1 when it leaves the request to SQL (\u escapes, unusual shapes). */
long long arb__request_scan_prompt_chars(const char *json);

/* ---- compact texts of the dataset (store_texts.c) ---- */

typedef struct arb__textz arb__textz;

/* A codec on db (borrowed; the store's connection). NULL when out of memory. Its statements
** are prepared on first use, so it may be created before the schema is. */
arb__textz *arb__textz_create(sqlite3 *db);
/* Frees it and its statements. Accepts NULL. */
void arb__textz_destroy(arb__textz *z);
/* Registers arb_text(x) (the text, from TEXT or a compact text), arb_text_length(x)
** (length(arb_text(x)), cheaply) and arb_text_pack(x) (migration 12). Returns 0 or -1. */
int arb__textz_register(arb__textz *z);
/* The message of the last failure (owned by z). */
const char *arb__textz_errmsg(const arb__textz *z);
/* Forgets the dictionaries it knows: after a rollback, which may have taken away one it
** stored. Accepts NULL. */
void arb__textz_forget(arb__textz *z);
/* A new write transaction began: text_dicts is read again before the next compression
** (another process may have trained the store's dictionary). Accepts NULL. */
void arb__textz_new_transaction(arb__textz *z);
/* 1 when the store has a dictionary, 0 when not, -1 on failure. */
int arb__textz_has_dictionary(arb__textz *z);
/* Trains and stores the store's dictionary from texts (n strings, NULL ones skipped) unless it
** has one, or they are too few to train a useful one (nothing happens). Call it inside the
** write transaction. 0 or -1 (arb__textz_errmsg). */
int arb__textz_train(arb__textz *z, const char *const *texts, size_t n);
/* Output buffers of arb__textz_encode: a row's compact texts, each in its own, stay valid
** together until its statement is stepped (bound with SQLITE_STATIC: no copy). */
#define ARB__TEXTZ_SLOTS 3
/* Compresses text (len bytes) into a compact text: 1 with *out (owned by z, valid until the
** next call with the same slot, 0 <= slot < ARB__TEXTZ_SLOTS) and *out_len; 0 when it stays
** TEXT (no dictionary, short, or not shorter); -1 on failure. */
int arb__textz_encode(arb__textz *z, int slot, const char *text, size_t len,
                      const unsigned char **out, size_t *out_len);
/* Decodes a compact text: the text (caller frees, NUL-terminated, *out_len bytes), or NULL
** (arb__textz_errmsg). */
char *arb__textz_decode(arb__textz *z, const unsigned char *blob, size_t len, size_t *out_len);
/* Texts this codec decompressed, and dictionaries it loaded to do it (tests). */
void arb__textz_counts(const arb__textz *z, long long *decoded, long long *dictionaries);

/* Nonzero: a new store is created from schema version 1 and every migration (as before
** store_fresh_schema.inc), for the test that compares both; nothing else writes it. */
extern int arb__store_stepwise_schema;

#endif
