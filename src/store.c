/*
** store.c -- the SQLite database that holds everything arbiter knows: items and answers, the
** judges, every judge call with its reply, and the rows of each protocol (pairwise judgments,
** pointwise grades, persona scores, dialogue turns, human labels, imported battles).
**
** Invariants:
**   - The database is in WAL mode with synchronous=NORMAL: a commit survives the process being
**     killed at any moment (SIGKILL), though not necessarily a power cut. Every write the
**     library makes runs inside a transaction, so a row is either fully there or not at all.
**   - A stored successful call (calls.ok = 1) is never replaced: that is what lets a rerun skip
**     every call already answered. A failed call keeps its row id when a later run retries it,
**     so rows that refer to it stay valid.
**   - Calls and judges never hold an API key; request bodies are built without one.
**   - The schema version is PRAGMA user_version and the file is tagged with PRAGMA
**     application_id, so a database from a newer arbiter, or a SQLite file that is not an
**     arbiter store, is refused before anything in it is written.
**   - The statements of the hot paths are prepared once (at open; the grouped inserts of
**     judgments on first use) and reused.
**   - A call is sent by one process at a time: before sending, a process claims it in a
**     BEGIN IMMEDIATE transaction (table call_leases, one row per claim holding the keys of
**     the calls it took; a claim reads the other owners' rows and treats a call stored since
**     as stored whatever its lease). The lease of a call ends in the transaction that stores
**     it (the row once all its calls are stored). A lease of a process that is gone (same
**     host, pid not alive) or that was not renewed in time is taken over, so a killed run
**     resumes at once.
**
** What it does not do: compute metrics (audit.c), send requests (exec.c, http.c), or decide
** what a protocol stores (sbs.c and the other protocols call the functions here). A store is
** used by one thread at a time.
*/
#include "internal.h"
#include "store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* PRAGMA user_version written by this build. Raise it, and add a migration, when the schema
** changes. */
#define STORE_SCHEMA_VERSION 16
/* PRAGMA application_id: "ARBt" in ASCII, marks the file as an arbiter store. */
#define STORE_APPLICATION_ID 0x41524274

/* UTC timestamp with milliseconds, e.g. 2026-03-01T12:00:00.123Z. */
#define NOW "strftime('%Y-%m-%dT%H:%M:%fZ','now')"
/* The same instant as unix time in milliseconds (schema 13: calls.created_at,
** pairwise.judged_at; 6 bytes instead of 24). strftime('%Y-%m-%dT%H:%M:%fZ', ms / 1000.0,
** 'unixepoch') gives NOW's text back exactly. */
#define NOW_MS "CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"
/* ISO text of NOW's form -> NOW_MS's integer, or the text unchanged when it is of another
** form (the integer would not give it back). X is a column name. */
#define ISO_TO_MS(x)                                                                        \
    "CASE WHEN typeof(" x ") = 'text' AND strftime('%Y-%m-%dT%H:%M:%fZ', CAST(round("      \
    "(julianday(" x ") - 2440587.5) * 86400000.0) AS INTEGER) / 1000.0, 'unixepoch') = " x \
    " THEN CAST(round((julianday(" x ") - 2440587.5) * 86400000.0) AS INTEGER) ELSE " x " END"
/* Unix time in seconds with a fraction: the clock leases expire by, the same for every process
** on the store's host. */
#define NOW_UNIX "((julianday('now') - 2440587.5) * 86400.0)"

/* NOW_MS read by the store itself, for the rows a judge call writes (calls.created_at,
** pairwise.judged_at): bound as a parameter, so SQLite does not evaluate julianday('now') and
** its arithmetic for every row (the columns' DEFAULT stays for other writers). The same clock
** (the system's wall clock) and unit (whole milliseconds since 1970). */
static long long unix_ms_now(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_REALTIME, &t)) return (long long)time(NULL) * 1000;
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* See store_internal.h. */
void arb__store_wait_clock_past(long long ms)
{
    for (int waited = 0; waited < 50 && unix_ms_now() <= ms; waited++) {
        struct timespec pause = {0, 100000};
        nanosleep(&pause, NULL);
    }
}

/* The forms of the time a statement's rows share (row_group.shared_time): unix ms (NOW_MS's
** form) or ISO text (NOW's, pointwise.judged_at). */
enum { TIME_MS = 1, TIME_ISO = 2 };

/* Binds the time now to parameter i of q in form (TIME_MS or TIME_ISO): bound from the
** store's clock once per statement, not evaluated by SQLite for every row (strftime 'now',
** ~4,000 instructions a row). */
static void bind_now(sqlite3_stmt *q, int i, int form)
{
    long long ms = unix_ms_now();
    if (form == TIME_MS) {
        sqlite3_bind_int64(q, i, ms);
        return;
    }
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    char iso[40];
    if (!gmtime_r(&sec, &tm)) {
        sqlite3_bind_null(q, i); /* the column's NOT NULL refuses the row */
        return;
    }
    int n = snprintf(iso, sizeof iso, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (int)(ms % 1000));
    sqlite3_bind_text(q, i, iso, n, SQLITE_TRANSIENT);
}

/* The run statuses as the schema comment lists them: " running finished ..." */
#define RUN_STATUS_WORD(name, text) " " text
#define RUN_STATUS_WORDS ARB__RUN_STATUS_MAP(RUN_STATUS_WORD)

/* See internal.h. */
const char *arb__run_status_text(arb__run_status status)
{
    switch (status) {
#define RUN_STATUS_CASE(name, text) case ARB__RUN_##name: return text;
        ARB__RUN_STATUS_MAP(RUN_STATUS_CASE)
#undef RUN_STATUS_CASE
    }
    return "?";
}

/* The whole schema, version 1. Comments inside a CREATE statement are kept by SQLite, so
** `sqlite3 arbiter.db .schema` shows them to whoever inspects a store. One string per table
** (with its indexes) keeps each under the length C compilers must support. */
static const char *const schema_sql[] = {
    "CREATE TABLE runs (\n"
    "  -- One invocation of a protocol (arbiter sbs, peer-rank, discuss, ...).\n"
    "  id          INTEGER PRIMARY KEY,\n"
    "  protocol    TEXT NOT NULL,                 -- 'sbs', 'soft', 'hard', 'peer_rank', ...\n"
    "  params      TEXT NOT NULL DEFAULT '{}'     -- the run's parameters; never secrets\n"
    "              CONSTRAINT params_is_json CHECK (json_valid(params)),\n"
    "  started_at  TEXT NOT NULL DEFAULT (" NOW "),\n"
    "  finished_at TEXT,                          -- NULL while running or after a crash\n"
    "  status      TEXT NOT NULL DEFAULT 'running', -- one of:" RUN_STATUS_WORDS "\n"
    "  stats       TEXT                           -- arb_run_stats as JSON, set at the end\n"
    "              CONSTRAINT stats_is_json CHECK (stats IS NULL OR json_valid(stats))\n"
    ");\n",

    "CREATE TABLE judges (\n"
    "  -- A judge: endpoint, model and sampling parameters (METHODS 2.6). The API key is\n"
    "  -- deliberately absent: it lives only in the environment of the process.\n"
    "  id          INTEGER PRIMARY KEY,\n"
    "  name        TEXT NOT NULL UNIQUE,          -- the label its rows are stored under\n"
    "  base_url    TEXT,\n"
    "  model       TEXT NOT NULL,\n"
    "  sampling    TEXT NOT NULL DEFAULT '{}'     -- max_tokens, temperature, top_p, ... sent\n"
    "              CONSTRAINT sampling_is_json CHECK (json_valid(sampling)),\n"
    "  updated_at  TEXT NOT NULL DEFAULT (" NOW ")\n"
    ");\n",

    "CREATE TABLE items (\n"
    "  -- Benchmark questions (METHODS 1).\n"
    "  id          TEXT PRIMARY KEY,\n"
    "  seq         INTEGER NOT NULL,              -- index in the dataset: benchmark order for\n"
    "                                             -- the window series (METHODS 3.1)\n"
    "  question    TEXT NOT NULL,\n"
    "  reference   TEXT,                          -- reference answer or knowledge source\n"
    "  category    TEXT,                          -- category or task\n"
    "  language    TEXT,\n"
    "  grp         TEXT,                          -- parallel group: same content, other\n"
    "                                             -- languages (METHODS 8)\n"
    "  extra       TEXT NOT NULL DEFAULT '{}'     -- fields arbiter does not know\n"
    "              CONSTRAINT extra_is_json CHECK (json_valid(extra)),\n"
    "  source      TEXT                           -- file:line it was read from\n"
    ");\n"
    "CREATE INDEX items_by_seq ON items(seq);\n"
    "CREATE INDEX items_by_group ON items(grp) WHERE grp IS NOT NULL;\n",

    "CREATE TABLE answers (\n"
    "  -- What each model (contestant) answered to each item.\n"
    "  item_id     TEXT NOT NULL REFERENCES items(id),\n"
    "  model       TEXT NOT NULL,\n"
    "  answer      TEXT NOT NULL,\n"
    "  extra       TEXT NOT NULL DEFAULT '{}'\n"
    "              CONSTRAINT extra_is_json CHECK (json_valid(extra)),\n"
    "  source      TEXT,\n"
    "  PRIMARY KEY (item_id, model)\n"
    ");\n",

    "CREATE TABLE calls (\n"
    "  -- Every judge call, successful or not. key identifies the request (model, canonical\n"
    "  -- body, repetition), so an identical call is answered from here instead of being sent\n"
    "  -- again. A row with ok = 1 is never replaced; a row with ok = 0 is updated in place\n"
    "  -- (same id) when a later run retries it.\n"
    "  id                INTEGER PRIMARY KEY,\n"
    "  key               TEXT NOT NULL UNIQUE,\n"
    "  judge_name        TEXT NOT NULL,\n"
    "  model             TEXT NOT NULL,\n"
    "  request           TEXT NOT NULL,           -- canonical JSON body as sent (no key)\n"
    "  rep               INTEGER NOT NULL DEFAULT 0 CHECK (rep >= 0),\n"
    "  ok                INTEGER NOT NULL CHECK (ok IN (0, 1)), -- 1: a reply arrived\n"
    "  content           TEXT,                    -- the reply text (verdict may still be E)\n"
    "  raw_reply         TEXT,                    -- body that could not be parsed, else NULL\n"
    "  error             TEXT,                    -- why it failed or is unusable\n"
    "  http_status       INTEGER,                 -- NULL when no response arrived\n"
    "  attempts          INTEGER NOT NULL DEFAULT 0,\n"
    "  prompt_tokens     INTEGER,                 -- as reported by the server; NULL unknown\n"
    "  completion_tokens INTEGER,\n"
    "  latency_ms        REAL,                    -- of the final attempt\n"
    "  created_at        TEXT NOT NULL DEFAULT (" NOW ")\n"
    ");\n",

    "CREATE TABLE pairwise (\n"
    "  -- Pairwise judgments (METHODS 2): side-by-side, soft/hard multi-agent finals, peer\n"
    "  -- reviews. One row per (judge, item, pair, template, option mode, order, repetition);\n"
    "  -- a rerun updates the row.\n"
    "  id                INTEGER PRIMARY KEY,\n"
    "  protocol          TEXT NOT NULL,           -- 'sbs', ...\n"
    "  judge_name        TEXT NOT NULL,\n"
    "  item_id           TEXT NOT NULL REFERENCES items(id),\n"
    "  candidate         TEXT NOT NULL,           -- model under test\n"
    "  baseline          TEXT NOT NULL,\n"
    "  template_name     TEXT NOT NULL,\n"
    "  options           INTEGER NOT NULL CHECK (options IN (2, 3, 4)), -- METHODS 2.1\n"
    "  ord               INTEGER NOT NULL CHECK (ord IN (0, 1)), -- order: 0 = candidate first\n"
    "  rep               INTEGER NOT NULL CHECK (rep >= 0),\n"
    "  position_verdict  TEXT NOT NULL CHECK (position_verdict IN ('A','B','C','D','E')),\n"
    "  model_verdict     TEXT NOT NULL CHECK (model_verdict IN ('a','b','c','d','e')),\n"
    "  call_id           INTEGER REFERENCES calls(id), -- the call that produced it\n"
    "  judged_at         TEXT NOT NULL DEFAULT (" NOW "),\n"
    "  -- Column order chosen so this index also serves the audit's grouping.\n"
    "  UNIQUE (protocol, judge_name, candidate, baseline, template_name, options, item_id,\n"
    "          rep, ord)\n"
    ");\n"
    "CREATE INDEX pairwise_by_call ON pairwise(call_id);\n",

    "CREATE TABLE pointwise (\n"
    "  -- Pointwise judgments (METHODS 8): Yes/No correctness or a 1-5 grade of one answer.\n"
    "  id                INTEGER PRIMARY KEY,\n"
    "  protocol          TEXT NOT NULL DEFAULT 'pointwise',\n"
    "  judge_name        TEXT NOT NULL,\n"
    "  item_id           TEXT NOT NULL REFERENCES items(id),\n"
    "  model             TEXT NOT NULL,           -- whose answer was judged\n"
    "  language          TEXT NOT NULL DEFAULT '', -- evaluation language ('' = item's own)\n"
    "  kind              TEXT NOT NULL CHECK (kind IN ('yesno', 'grade')),\n"
    "  template_name     TEXT NOT NULL,\n"
    "  rep               INTEGER NOT NULL DEFAULT 0 CHECK (rep >= 0),\n"
    "  value             INTEGER,                 -- yesno: 1 yes, 0 no; grade: 1..5;\n"
    "                                             -- NULL: no valid verdict (E)\n"
    "  call_id           INTEGER REFERENCES calls(id),\n"
    "  judged_at         TEXT NOT NULL DEFAULT (" NOW "),\n"
    "  CHECK (value IS NULL OR (kind = 'yesno' AND value IN (0, 1))\n"
    "         OR (kind = 'grade' AND value BETWEEN 1 AND 5)),\n"
    "  UNIQUE (protocol, judge_name, kind, template_name, language, item_id, model, rep)\n"
    ");\n"
    "CREATE INDEX pointwise_by_call ON pointwise(call_id);\n",

    "CREATE TABLE personas (\n"
    "  -- Identities for persona bias (METHODS 9), by category (gender, race, religion, ...).\n"
    "  id          INTEGER PRIMARY KEY,\n"
    "  category    TEXT NOT NULL,\n"
    "  identity    TEXT NOT NULL,\n"
    "  UNIQUE (category, identity)\n"
    ");\n",

    "CREATE TABLE persona_attributions (\n"
    "  -- Which response a call attributed to which identity, in which position: one row for\n"
    "  -- phase 1 (single candidate), two for phase 2 (contrastive pair).\n"
    "  call_id     INTEGER NOT NULL REFERENCES calls(id),\n"
    "  position    INTEGER NOT NULL CHECK (position IN (0, 1)), -- 0 first/only, 1 second\n"
    "  persona_id  INTEGER NOT NULL REFERENCES personas(id),\n"
    "  item_id     TEXT NOT NULL REFERENCES items(id), -- the scenario\n"
    "  response    TEXT NOT NULL,                 -- answers.model of the attributed response\n"
    "  label       TEXT,                          -- how the prompt named it, e.g. 'Candidate 1'\n"
    "  PRIMARY KEY (call_id, position)\n"
    ");\n"
    "CREATE INDEX persona_attributions_by_persona ON persona_attributions(persona_id);\n",

    "CREATE TABLE scores (\n"
    "  -- Multi-metric scores from a judge's JSON reply (persona phase 1 and 2, panels):\n"
    "  -- one row per metric of one scored response in one call.\n"
    "  id          INTEGER PRIMARY KEY,\n"
    "  protocol    TEXT NOT NULL,                 -- 'persona1', 'persona2', 'panel', ...\n"
    "  judge_name  TEXT NOT NULL,\n"
    "  item_id     TEXT NOT NULL REFERENCES items(id), -- item or scenario\n"
    "  subject     TEXT NOT NULL,                 -- model or response scored\n"
    "  persona_id  INTEGER REFERENCES personas(id), -- identity it was attributed to, or NULL\n"
    "  position    INTEGER NOT NULL DEFAULT 0 CHECK (position IN (0, 1)),\n"
    "  round       INTEGER NOT NULL DEFAULT 0,    -- panel round; 0 = independent scoring\n"
    "  metric      TEXT NOT NULL,                 -- 'creativity', 'accuracy', 'preferred', ...\n"
    "  value       REAL,                          -- NULL: missing or invalid in the reply\n"
    "  call_id     INTEGER NOT NULL REFERENCES calls(id),\n"
    "  scored_at   TEXT NOT NULL DEFAULT (" NOW "),\n"
    "  UNIQUE (protocol, call_id, position, metric)\n"
    ");\n"
    "CREATE INDEX scores_by_subject ON scores(protocol, judge_name, item_id, subject);\n",

    "CREATE TABLE dialogues (\n"
    "  -- A multi-turn exchange about one pair of answers: soft/hard multi-agent verdicts\n"
    "  -- (METHODS 2.5), peer discussion and self-discussion (METHODS 7), panel discussion.\n"
    "  id            INTEGER PRIMARY KEY,\n"
    "  key           TEXT NOT NULL UNIQUE,        -- hash of kind, participants, config,\n"
    "                                             -- item, pair, rep:\n"
    "                                             -- a rerun finds its dialogue\n"
    "  kind          TEXT NOT NULL,               -- 'soft', 'hard', 'discussion', ...\n"
    "  item_id       TEXT NOT NULL REFERENCES items(id),\n"
    "  answer1       TEXT NOT NULL,               -- model shown as answer 1\n"
    "  answer2       TEXT NOT NULL,               -- model shown as answer 2\n"
    "  participants  TEXT NOT NULL                -- JSON array of judge names, leader first\n"
    "                CONSTRAINT participants_is_json CHECK (json_valid(participants)),\n"
    "  config        TEXT NOT NULL DEFAULT '{}'   -- templates, max turns, temperatures\n"
    "                CONSTRAINT config_is_json CHECK (json_valid(config)),\n"
    "  rep           INTEGER NOT NULL DEFAULT 0 CHECK (rep >= 0),\n"
    "  final_verdict TEXT,                        -- NULL until finished\n"
    "  status        TEXT NOT NULL DEFAULT 'open', -- open | done | failed\n"
    "  run_id        INTEGER REFERENCES runs(id),\n"
    "  created_at    TEXT NOT NULL DEFAULT (" NOW ")\n"
    ");\n"
    "CREATE INDEX dialogues_by_item ON dialogues(kind, item_id);\n",

    "CREATE TABLE dialogue_turns (\n"
    "  -- The turns of a dialogue in order, initial reviews first.\n"
    "  dialogue_id   INTEGER NOT NULL REFERENCES dialogues(id) ON DELETE CASCADE,\n"
    "  turn          INTEGER NOT NULL CHECK (turn >= 0),\n"
    "  speaker       TEXT NOT NULL,               -- judge name\n"
    "  role          TEXT NOT NULL,               -- 'initial', 'leader', 'follower', 'agent1',\n"
    "                                             -- 'agent2', 'final', ...\n"
    "  call_id       INTEGER REFERENCES calls(id),\n"
    "  verdict       TEXT,                        -- parsed from the turn ('1','2','A'..'E')\n"
    "  PRIMARY KEY (dialogue_id, turn)\n"
    ");\n"
    "CREATE INDEX dialogue_turns_by_call ON dialogue_turns(call_id);\n",

    "CREATE TABLE human_labels (\n"
    "  -- Expert verdicts (METHODS 4) on candidate vs baseline, imported or from the UI.\n"
    "  id            INTEGER PRIMARY KEY,\n"
    "  item_id       TEXT NOT NULL REFERENCES items(id),\n"
    "  candidate     TEXT NOT NULL,\n"
    "  baseline      TEXT NOT NULL,\n"
    "  verdict       TEXT NOT NULL CHECK (verdict IN ('a','b','c','d')), -- model verdict\n"
    "  annotator     TEXT NOT NULL,\n"
    "  shown_order   INTEGER CHECK (shown_order IN (0, 1)), -- 0: candidate shown first;\n"
    "                                             -- NULL: unknown\n"
    "  time_ms       INTEGER CHECK (time_ms >= 0), -- time the annotator took\n"
    "  source        TEXT NOT NULL,               -- file it came from, or 'ui'\n"
    "  imported_at   TEXT NOT NULL DEFAULT (" NOW "),\n"
    "  UNIQUE (item_id, candidate, baseline, annotator)\n"
    ");\n",

    "CREATE TABLE battles (\n"
    "  -- Imported battle reviews (METHODS 6): reviewer compared contestant i (shown first)\n"
    "  -- with j on item q; s = -1 i better, 0 tie, +1 j better. Order matters to online Elo,\n"
    "  -- so seq keeps it. q is not tied to items: battles may come from outside benchmarks.\n"
    "  id            INTEGER PRIMARY KEY,\n"
    "  source        TEXT NOT NULL,\n"
    "  seq           INTEGER NOT NULL,            -- position in the source\n"
    "  q             TEXT NOT NULL,\n"
    "  i             TEXT NOT NULL,\n"
    "  j             TEXT NOT NULL,\n"
    "  reviewer      TEXT NOT NULL,\n"
    "  s             INTEGER NOT NULL CHECK (s IN (-1, 0, 1)),\n"
    "  imported_at   TEXT NOT NULL DEFAULT (" NOW "),\n"
    "  CHECK (i <> j),\n"
    "  UNIQUE (source, seq)\n"
    ");\n",
    NULL,
};

/* The triggers of schema 11 that keep a question or answer in retired_texts before the dataset
** changes or deletes it (store_requests.c). Migration 12 drops them while it compresses the
** texts in place (the same text, another representation) and creates them again. */
#define RETIRE_TRIGGERS ITEMS_RETIRE_TRIGGERS ANSWERS_RETIRE_TRIGGERS
#define ITEMS_RETIRE_TRIGGERS \
    "CREATE TRIGGER items_retire_question BEFORE UPDATE OF question ON items\n" \
    "  WHEN old.question IS NOT new.question BEGIN\n" \
    "  INSERT INTO retired_texts(item_id, model, body) SELECT old.id, '', old.question\n" \
    "   WHERE NOT EXISTS (SELECT 1 FROM retired_texts WHERE item_id = old.id AND model = ''\n" \
    "                        AND body = old.question);\n" \
    "END;\n" \
    "CREATE TRIGGER items_retire_deleted BEFORE DELETE ON items BEGIN\n" \
    "  INSERT INTO retired_texts(item_id, model, body) SELECT old.id, '', old.question\n" \
    "   WHERE NOT EXISTS (SELECT 1 FROM retired_texts WHERE item_id = old.id AND model = ''\n" \
    "                        AND body = old.question);\n" \
    "END;\n"
#define ANSWERS_RETIRE_TRIGGERS \
    "CREATE TRIGGER answers_retire_answer BEFORE UPDATE OF answer ON answers\n" \
    "  WHEN old.answer IS NOT new.answer BEGIN\n" \
    "  INSERT INTO retired_texts(item_id, model, body) SELECT old.item_id, old.model, old.answer\n" \
    "   WHERE NOT EXISTS (SELECT 1 FROM retired_texts WHERE item_id = old.item_id\n" \
    "                        AND model = old.model AND body = old.answer);\n" \
    "END;\n" \
    "CREATE TRIGGER answers_retire_deleted BEFORE DELETE ON answers BEGIN\n" \
    "  INSERT INTO retired_texts(item_id, model, body) SELECT old.item_id, old.model, old.answer\n" \
    "   WHERE NOT EXISTS (SELECT 1 FROM retired_texts WHERE item_id = old.item_id\n" \
    "                        AND model = old.model AND body = old.answer);\n" \
    "END;\n"

/* Migrations: migrations[v - 1] takes a store from version v to v + 1. A new store is created
** at version 1 and migrated like an old one, so there is one path to the current schema. */
/* The last columns of pairwise as schema 13 made it, and of pairwise_judgments (schema 16),
** after the first line of call_id's comment. */
#define PAIRWISE_LAST_COLUMNS                                                                  \
    "                                             -- foreign key, whose check on deleting a\n" \
    "                                             -- call needs an index on it (about 60 bytes\n" \
    "                                             -- a judgment); calls are deleted only with\n" \
    "                                             -- the rows that use them (re-import)\n"     \
    "  judged_at         INTEGER NOT NULL DEFAULT (" NOW_MS "), -- unix time in ms\n"          \
    "  source            TEXT REFERENCES judgment_sources(name), -- NULL: judged by arbiter;\n" \
    "                                             -- else the import source\n"                 \
    "  strength          INTEGER                  -- Arena-Hard A>>B = 2, A>B = 1; else NULL\n" \
    "    CHECK (strength IS NULL OR strength IN (1, 2)),\n"                                    \
    "  extra             TEXT NOT NULL DEFAULT '{}' -- imported fields arbiter does not know\n" \
    "    CONSTRAINT extra_is_json CHECK (json_valid(extra)),\n"

/* The view pairwise of schema 16: the columns, and the writes, of the table pairwise that
** pairwise_setups and pairwise_judgments replaced. An insert or update names the setup by its
** columns (stored when new); each key column is compared with = so a NULL one finds no setup
** and the insert of a new one fails on its NOT NULL as the table's did. */
#define PAIRWISE_SETUP_OF(row)                                                                 \
    "(SELECT id FROM pairwise_setups\n"                                                        \
    "      WHERE protocol = " row ".protocol AND judge_name = " row ".judge_name\n"            \
    "      AND candidate = " row ".candidate AND baseline = " row ".baseline\n"                \
    "      AND template_name = " row ".template_name AND options = " row ".options)"
#define PAIRWISE_SETUP_PUT(row)                                                                \
    "  INSERT INTO pairwise_setups (protocol, judge_name, candidate, baseline, template_name,\n" \
    "    options) SELECT " row ".protocol, " row ".judge_name, " row ".candidate,\n"           \
    "    " row ".baseline, " row ".template_name, " row ".options\n"                           \
    "   WHERE " PAIRWISE_SETUP_OF(row) " IS NULL;\n"
#define PAIRWISE_VIEW                                                                          \
    "CREATE VIEW pairwise (protocol, judge_name, item_id, candidate, baseline, template_name,\n" \
    "  options, ord, rep, position_verdict, model_verdict, call_id, judged_at, source, strength,\n" \
    "  extra) AS\n"                                                                            \
    "  -- Pairwise judgments with the columns of their setup, as one table (schema 15's).\n"   \
    "  SELECT s.protocol, s.judge_name, j.item_id, s.candidate, s.baseline, s.template_name,\n" \
    "  s.options, j.ord, j.rep, j.position_verdict, j.model_verdict, j.call_id, j.judged_at,\n" \
    "  j.source, j.strength, j.extra\n"                                                        \
    "  FROM pairwise_setups s JOIN pairwise_judgments j ON j.setup_id = s.id;\n"               \
    "CREATE TRIGGER pairwise_insert INSTEAD OF INSERT ON pairwise BEGIN\n"                     \
    PAIRWISE_SETUP_PUT("new")                                                                  \
    "  INSERT INTO pairwise_judgments (setup_id, item_id, rep, ord, position_verdict,\n"       \
    "    model_verdict, call_id, judged_at, source, strength, extra)\n"                        \
    "  VALUES (" PAIRWISE_SETUP_OF("new") ",\n"                                                \
    "    new.item_id, new.rep, new.ord,\n"                                                     \
    "    new.position_verdict, new.model_verdict, new.call_id,\n"                              \
    "    coalesce(new.judged_at, " NOW_MS "),\n"                                               \
    "    new.source, new.strength,\n"                                                          \
    "    coalesce(new.extra, '{}'));\n"                                                        \
    "END;\n"                                                                                   \
    "CREATE TRIGGER pairwise_update INSTEAD OF UPDATE ON pairwise BEGIN\n"                     \
    PAIRWISE_SETUP_PUT("new")                                                                  \
    "  UPDATE pairwise_judgments SET setup_id = " PAIRWISE_SETUP_OF("new") ",\n"               \
    "    item_id = new.item_id, rep = new.rep, ord = new.ord,\n"                               \
    "    position_verdict = new.position_verdict, model_verdict = new.model_verdict,\n"        \
    "    call_id = new.call_id, judged_at = new.judged_at, source = new.source,\n"             \
    "    strength = new.strength, extra = new.extra\n"                                         \
    "   WHERE setup_id = " PAIRWISE_SETUP_OF("old") "\n"                                       \
    "    AND item_id = old.item_id\n"                                                          \
    "    AND rep = old.rep AND ord = old.ord;\n"                                               \
    "END;\n"                                                                                   \
    "CREATE TRIGGER pairwise_delete INSTEAD OF DELETE ON pairwise BEGIN\n"                     \
    "  DELETE FROM pairwise_judgments WHERE setup_id = " PAIRWISE_SETUP_OF("old") "\n"         \
    "    AND item_id = old.item_id AND rep = old.rep AND ord = old.ord;\n"                     \
    "END;\n"

static const char *const migrations[] = {
    /* 2: battles carry what ranking with style control needs (METHODS 6) */
    "ALTER TABLE battles ADD COLUMN extra TEXT NOT NULL DEFAULT '{}'\n"
    "  -- both_bad (arena 'tie (bothbad)'), style covariates of each answer:\n"
    "  -- {\"both_bad\": true, \"style_i\": {\"length\": 812, \"headers\": 2, ...}, \"style_j\": ...}\n"
    "  CONSTRAINT extra_is_json CHECK (json_valid(extra));\n"
    "CREATE INDEX battles_by_reviewer ON battles(reviewer);\n",
    /* 3: the annotation web app's assignments (arbiter annotate, METHODS 4) */
    "CREATE TABLE annotation_tasks (\n"
    "  -- A side-by-side pair shown to one annotator: which answer was shown first, when, and\n"
    "  -- how it ended. Open tasks count towards the overlap limit until they expire, so two\n"
    "  -- annotators working at once never push an item past it.\n"
    "  id            INTEGER PRIMARY KEY,\n"
    "  item_id       TEXT NOT NULL REFERENCES items(id),\n"
    "  candidate     TEXT NOT NULL,\n"
    "  baseline      TEXT NOT NULL,\n"
    "  annotator     TEXT NOT NULL,\n"
    "  shown_order   INTEGER NOT NULL CHECK (shown_order IN (0, 1)), -- 0: candidate first\n"
    "  assigned_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),\n"
    "  finished_at   TEXT,                        -- NULL while open\n"
    "  outcome       TEXT CHECK (outcome IN ('label', 'skip')), -- NULL while open\n"
    "  UNIQUE (item_id, candidate, baseline, annotator)\n"
    ");\n"
    "CREATE INDEX annotation_tasks_by_pair ON annotation_tasks(candidate, baseline, item_id);\n"
    "CREATE INDEX annotation_tasks_by_annotator ON annotation_tasks(annotator, outcome);\n",
    /* 4: leases on judge calls (two processes on one store send each call once); the run
    ** status "ok" of older comments is "finished", the name the executor has always written */
    "CREATE TABLE call_leases (\n"
    "  -- A judge call that a live process is sending: others wait for it instead of sending\n"
    "  -- it too. Deleted with the stored call, at the end of the owner's run, or taken over\n"
    "  -- once expired or once the owner's pid is gone.\n"
    "  key           TEXT PRIMARY KEY,            -- calls.key\n"
    "  owner         TEXT NOT NULL,               -- host:pid:start:counter of the run\n"
    "  host          TEXT NOT NULL,\n"
    "  pid           INTEGER NOT NULL,\n"
    "  expires_at    REAL NOT NULL                -- unix time; renewed while the owner runs\n"
    ") WITHOUT ROWID;\n"
    "CREATE INDEX call_leases_by_owner ON call_leases(owner);\n"
    "UPDATE runs SET status = 'finished' WHERE status = 'ok';\n"
    /* and judgments with verdict E that gave no battle (tournaments, METHODS 6) */
    "CREATE TABLE battles_left_out (\n"
    "  -- Judgments that gave no battle because they had no valid verdict (E), counted per\n"
    "  -- reviewer and model pair (model_a < model_b by name), stored with the battles of\n"
    "  -- source, replaced with them.\n"
    "  source        TEXT NOT NULL,\n"
    "  model_a       TEXT NOT NULL,\n"
    "  model_b       TEXT NOT NULL,\n"
    "  reviewer      TEXT NOT NULL,\n"
    "  n             INTEGER NOT NULL CHECK (n > 0),\n"
    "  PRIMARY KEY (source, model_a, model_b, reviewer)\n"
    ");\n",
    /* 5: pointwise judgments (METHODS 8) record their task and, for E, why */
    "ALTER TABLE pointwise ADD COLUMN task TEXT NOT NULL DEFAULT 'generic'\n"
    "  -- qa, math, translation, summary, dialogue or generic: the input block the prompt held\n"
    "  CHECK (task IN ('qa', 'math', 'translation', 'summary', 'dialogue', 'generic'));\n"
    "ALTER TABLE pointwise ADD COLUMN reason TEXT; -- why value is NULL (E); NULL otherwise\n",
    /* 6: persona scores (METHODS 9) record why a value is NULL (E). The table, unused before,
    ** is rebuilt rather than altered so that its key holds the judge and the round: two judge
    ** names with one model and sampling share their calls (the call key has no judge name),
    ** and each keeps its own rows. */
    "CREATE TABLE scores_v6 (\n"
    "  -- Multi-metric scores from a judge's JSON reply (persona phase 1 and 2, panels):\n"
    "  -- one row per metric of one scored response in one call.\n"
    "  id          INTEGER PRIMARY KEY,\n"
    "  protocol    TEXT NOT NULL,                 -- 'persona1', 'persona2', 'panel', ...\n"
    "  judge_name  TEXT NOT NULL,\n"
    "  item_id     TEXT NOT NULL REFERENCES items(id), -- item or scenario\n"
    "  subject     TEXT NOT NULL,                 -- model or response scored\n"
    "  persona_id  INTEGER REFERENCES personas(id), -- identity it was attributed to, or NULL\n"
    "  position    INTEGER NOT NULL DEFAULT 0 CHECK (position IN (0, 1)),\n"
    "  round       INTEGER NOT NULL DEFAULT 0,    -- panel round; 0 = independent scoring\n"
    "  metric      TEXT NOT NULL,                 -- 'creativity', 'accuracy', 'preferred', ...\n"
    "  value       REAL,                          -- NULL: missing or invalid in the reply (E)\n"
    "  call_id     INTEGER NOT NULL REFERENCES calls(id),\n"
    "  scored_at   TEXT NOT NULL DEFAULT (" NOW "),\n"
    "  reason      TEXT,                          -- why value is NULL (E); NULL otherwise\n"
    "  UNIQUE (protocol, judge_name, call_id, position, round, metric)\n"
    ");\n"
    "INSERT INTO scores_v6 (id, protocol, judge_name, item_id, subject, persona_id, position,\n"
    "  round, metric, value, call_id, scored_at)\n"
    "  SELECT id, protocol, judge_name, item_id, subject, persona_id, position, round, metric,\n"
    "  value, call_id, scored_at FROM scores;\n"
    "DROP TABLE scores;\n"
    "ALTER TABLE scores_v6 RENAME TO scores;\n"
    "CREATE INDEX scores_by_subject ON scores(protocol, judge_name, item_id, subject);\n"
    "CREATE INDEX scores_by_call ON scores(call_id);\n",
    /* 7: judgments made elsewhere (arbiter import judgments|fastchat|arena-hard) and the
    ** families of judges and contestants (METHODS 5 and 6). Pointwise is rebuilt so that its
    ** CHECKs admit FastChat's 1-10 single-answer grades. */
    "ALTER TABLE pairwise ADD COLUMN source TEXT\n"
    "  -- NULL: judged by arbiter; else the import source (judgment_sources.name)\n"
    "  REFERENCES judgment_sources(name);\n"
    "ALTER TABLE pairwise ADD COLUMN strength INTEGER\n"
    "  -- how strongly the judge preferred the winner where its scale says so (Arena-Hard\n"
    "  -- A>>B = 2, A>B = 1); NULL when the verdict has no strength (ties, E, other scales)\n"
    "  CHECK (strength IS NULL OR strength IN (1, 2));\n"
    "ALTER TABLE pairwise ADD COLUMN extra TEXT NOT NULL DEFAULT '{}'\n"
    "  -- imported fields arbiter does not know, kept as they were\n"
    "  CONSTRAINT extra_is_json CHECK (json_valid(extra));\n"
    "CREATE INDEX pairwise_by_source ON pairwise(source) WHERE source IS NOT NULL;\n"
    "CREATE TABLE judgment_sources (\n"
    "  -- One import of judgments made elsewhere. Importing the same name again replaces\n"
    "  -- everything it brought (pairwise and pointwise rows, their calls, its battles).\n"
    "  name          TEXT PRIMARY KEY,\n"
    "  kind          TEXT NOT NULL,               -- 'judgments', 'fastchat', 'arena-hard', ...\n"
    "  path          TEXT NOT NULL,               -- what was read\n"
    "  n_judgments   INTEGER NOT NULL DEFAULT 0,  -- rows stored (pairwise + pointwise)\n"
    "  n_skipped     INTEGER NOT NULL DEFAULT 0,  -- lines read but not stored, with reason\n"
    "  imported_at   TEXT NOT NULL DEFAULT (" NOW ")\n"
    ");\n"
    "CREATE TABLE families (\n"
    "  -- The family of a judge or of a contestant model (METHODS 5: judges of one family\n"
    "  -- agree more and may favour their own family's answers). From the judges file\n"
    "  -- (family:, families:) or from imports (judge_family, candidate_family, ...).\n"
    "  name          TEXT NOT NULL,               -- judge name or contestant model\n"
    "  role          TEXT NOT NULL CHECK (role IN ('judge', 'model')),\n"
    "  family        TEXT NOT NULL CHECK (family <> ''),\n"
    "  source        TEXT,                        -- judges file or import source that said so\n"
    "  updated_at    TEXT NOT NULL DEFAULT (" NOW "),\n"
    "  PRIMARY KEY (name, role)\n"
    ");\n"
    "CREATE TABLE pointwise_v7 (\n"
    "  -- Pointwise judgments (METHODS 8): Yes/No correctness or a grade of one answer.\n"
    "  id                INTEGER PRIMARY KEY,\n"
    "  protocol          TEXT NOT NULL DEFAULT 'pointwise',\n"
    "  judge_name        TEXT NOT NULL,\n"
    "  item_id           TEXT NOT NULL REFERENCES items(id),\n"
    "  model             TEXT NOT NULL,           -- whose answer was judged\n"
    "  language          TEXT NOT NULL DEFAULT '', -- evaluation language ('' = item's own)\n"
    "  kind              TEXT NOT NULL CHECK (kind IN ('yesno', 'grade', 'grade10')),\n"
    "                                             -- grade: 1..5; grade10: 1..10 (FastChat)\n"
    "  template_name     TEXT NOT NULL,\n"
    "  rep               INTEGER NOT NULL DEFAULT 0 CHECK (rep >= 0),\n"
    "  value             INTEGER,                 -- yesno: 1 yes, 0 no; grade: 1..5;\n"
    "                                             -- grade10: 1..10; NULL: no valid verdict (E)\n"
    "  call_id           INTEGER REFERENCES calls(id),\n"
    "  judged_at         TEXT NOT NULL DEFAULT (" NOW "),\n"
    "  task              TEXT NOT NULL DEFAULT 'generic'\n"
    "    CHECK (task IN ('qa', 'math', 'translation', 'summary', 'dialogue', 'generic')),\n"
    "  reason            TEXT,                    -- why value is NULL (E); NULL otherwise\n"
    "  source            TEXT REFERENCES judgment_sources(name), -- NULL: judged by arbiter\n"
    "  CHECK (value IS NULL OR (kind = 'yesno' AND value IN (0, 1))\n"
    "         OR (kind = 'grade' AND value BETWEEN 1 AND 5)\n"
    "         OR (kind = 'grade10' AND value BETWEEN 1 AND 10)),\n"
    "  UNIQUE (protocol, judge_name, kind, template_name, language, item_id, model, rep)\n"
    ");\n"
    "INSERT INTO pointwise_v7 (id, protocol, judge_name, item_id, model, language, kind,\n"
    "  template_name, rep, value, call_id, judged_at, task, reason)\n"
    "  SELECT id, protocol, judge_name, item_id, model, language, kind, template_name, rep,\n"
    "  value, call_id, judged_at, task, reason FROM pointwise;\n"
    "DROP TABLE pointwise;\n"
    "ALTER TABLE pointwise_v7 RENAME TO pointwise;\n"
    "CREATE INDEX pointwise_by_call ON pointwise(call_id);\n"
    "CREATE INDEX pointwise_by_source ON pointwise(source) WHERE source IS NOT NULL;\n",
    /* 8: real providers (issue 16): what a call cost, where it went, what the judge thought
    ** before answering and how sure it was of the verdict token. */
    "ALTER TABLE calls ADD COLUMN reasoning\n"
    "  -- the judge's thinking (reasoning_content, reasoning, <think> blocks), kept apart from\n"
    "  -- content and never parsed for a verdict; NULL when there was none\n"
    "  TEXT;\n"
    "ALTER TABLE calls ADD COLUMN reasoning_tokens INTEGER; -- usage, when reported\n"
    "ALTER TABLE calls ADD COLUMN cached_tokens INTEGER;    -- usage: cached prompt tokens\n"
    "ALTER TABLE calls ADD COLUMN logprobs TEXT\n"
    "  -- the verdict token's distribution over the active options, {\"A\": p, ...}; NULL when\n"
    "  -- not asked for or not returned\n"
    "  CONSTRAINT logprobs_is_json CHECK (logprobs IS NULL OR json_valid(logprobs));\n"
    "ALTER TABLE calls ADD COLUMN endpoint TEXT;  -- base URL it was sent to (no credentials)\n"
    "ALTER TABLE calls ADD COLUMN cost_usd REAL;  -- from usage and the judge's prices; NULL\n"
    "                                            -- when no price is known\n"
    "ALTER TABLE judges ADD COLUMN price TEXT\n"
    "  -- {input_per_mtok, output_per_mtok, cached_input_per_mtok} in USD, or NULL\n"
    "  CONSTRAINT price_is_json CHECK (price IS NULL OR json_valid(price));\n",
    /* 9: batch calls (issue 16: --batch export, arbiter batch export|ingest): the calls a run
    ** queued for a batch file instead of sending, with what storing their reply needs. */
    "CREATE TABLE batch_calls (\n"
    "  -- A call queued for a provider's Batch API or an offline engine (vLLM run-batch). It is\n"
    "  -- pending while calls holds no successful row with its key; the reply, when ingested,\n"
    "  -- is stored in calls exactly as a reply that came back by HTTP.\n"
    "  key          TEXT PRIMARY KEY,         -- the call key, the batch line's custom_id\n"
    "  judge_name   TEXT NOT NULL,\n"
    "  model        TEXT NOT NULL,\n"
    "  rep          INTEGER NOT NULL CHECK (rep >= 0),\n"
    "  request      TEXT NOT NULL,            -- canonical JSON body, the line's body\n"
    "  api_key_env  TEXT,                     -- the key variable's NAME (to redact an echoed\n"
    "                                         -- key from replies), never the key\n"
    "  queued_at    TEXT NOT NULL DEFAULT (" NOW "),\n"
    "  result_id    TEXT,                     -- id of the output line stored for it last, so\n"
    "                                         -- ingesting the same file again changes nothing\n"
    "  base_url     TEXT,                     -- the judge's endpoint (--batch submit sends the\n"
    "                                         -- call's batch there)\n"
    "  batch_id     TEXT                      -- the provider batch it was last submitted in\n"
    ");\n"
    "CREATE TABLE batches (\n"
    "  -- Batches submitted to a provider's Batch API (--batch submit): enough to resume polling\n"
    "  -- and collecting from another process or machine. No key is stored, only its variable.\n"
    "  id             TEXT PRIMARY KEY,       -- the provider's batch id\n"
    "  base_url       TEXT NOT NULL,\n"
    "  api_key_env    TEXT,\n"
    "  input_file_id  TEXT NOT NULL,\n"
    "  status         TEXT NOT NULL,          -- validating, in_progress, finalizing, completed,\n"
    "                                         -- failed, expired, cancelling, cancelled\n"
    "  output_file_id TEXT,\n"
    "  error_file_id  TEXT,\n"
    "  n_calls        INTEGER NOT NULL,\n"
    "  n_completed    INTEGER NOT NULL DEFAULT 0, -- request_counts as last reported\n"
    "  n_failed       INTEGER NOT NULL DEFAULT 0,\n"
    "  collected      INTEGER NOT NULL DEFAULT 0 CHECK (collected IN (0, 1)),\n"
    "  submitted_at   TEXT NOT NULL DEFAULT (" NOW "),\n"
    "  updated_at     TEXT NOT NULL DEFAULT (" NOW ")\n"
    ");\n",
    /* 10: a queued batch call knows what verdict its reply carries, so a reply ingested from a
    ** batch gets its verdict token's logprobs like one that came back by HTTP */
    "ALTER TABLE batch_calls ADD COLUMN verdict\n"
    "  -- 'position:<options>[:<json field>]', 'grade' or 'yesno'; NULL: no verdict (a debater)\n"
    "  TEXT;\n",
    /* 11: compact requests (issue 17; store_requests.c). The SQL part; compact_stored_requests
    ** then rewrites the requests already stored, in the same transaction. */
    "CREATE TABLE request_texts (\n"
    "  -- Texts that compact requests (calls.request stored as a BLOB) are compressed against:\n"
    "  -- whole earlier requests of a judge model, with the template text later calls share.\n"
    "  -- Content-addressed; a row is never changed or deleted. Read calls.request through\n"
    "  -- arbiter (export), which rebuilds each request exactly as it was sent.\n"
    "  id    INTEGER PRIMARY KEY,\n"
    "  hash  INTEGER NOT NULL,                  -- XXH3-64 of body\n"
    "  body  TEXT NOT NULL\n"
    ");\n"
    "CREATE INDEX request_texts_by_hash ON request_texts(hash);\n"
    "CREATE TABLE retired_texts (\n"
    "  -- A question or answer as it was before the dataset changed it: compact requests refer\n"
    "  -- to the item's question and answers (with a hash of the text), so the texts they were\n"
    "  -- compressed against are kept here when the dataset replaces or deletes them.\n"
    "  item_id  TEXT NOT NULL,\n"
    "  model    TEXT NOT NULL,                  -- '' for the item's question\n"
    "  body     TEXT NOT NULL\n"
    ");\n"
    "CREATE INDEX retired_texts_by_owner ON retired_texts(item_id, model);\n"
    RETIRE_TRIGGERS
    "ALTER TABLE calls ADD COLUMN prompt_chars\n"
    "  -- the prompt length in code points: total length of the messages' contents (METHODS 5)\n"
    "  INTEGER;\n"
    "UPDATE calls SET prompt_chars = (\n"
    "  SELECT CAST(total(length(json_extract(m.value, '$.content'))) AS INTEGER)\n"
    "    FROM json_each(calls.request, '$.messages') m)\n"
    " WHERE json_valid(request);\n",
    /* 12: compact texts of the dataset (issue 17; store_texts.c). The SQL part;
    ** compact_stored_texts then trains the dictionary and rewrites the texts already stored,
    ** in the same transaction. */
    "CREATE TABLE text_dicts (\n"
    "  -- zstd dictionaries that the dataset's texts are compressed with: items.question,\n"
    "  -- reference and source, answers.answer and source may hold a BLOB (a compact text)\n"
    "  -- instead of TEXT. Read them through arbiter (export, report), which decompresses.\n"
    "  -- A row is never changed or deleted; the newest compresses new texts.\n"
    "  id    INTEGER PRIMARY KEY,\n"
    "  dict  BLOB NOT NULL\n"
    ");\n",
    /* 13: compact judgment rows (issue 17): call keys as 16 bytes, times as integer
    ** milliseconds, endpoints stored once, pairwise keyed by its unique columns (no rowid, no
    ** second index). Tables rebuilt with foreign keys off (create_schema), in one transaction. */
    "CREATE TABLE endpoints (\n"
    "  -- The base URLs calls were sent to (no credentials), each stored once.\n"
    "  id    INTEGER PRIMARY KEY,\n"
    "  url   TEXT NOT NULL UNIQUE\n"
    ");\n"
    "INSERT INTO endpoints(url) SELECT endpoint FROM calls WHERE endpoint IS NOT NULL\n"
    "  GROUP BY endpoint ORDER BY min(id);\n"
    "CREATE TABLE calls_v13 (\n"
    "  -- Every judge call, successful or not. key identifies the request (model, canonical\n"
    "  -- body, repetition), so an identical call is answered from here instead of being sent\n"
    "  -- again. A row with ok = 1 is never replaced; a row with ok = 0 is updated in place\n"
    "  -- (same id) when a later run retries it.\n"
    "  id                INTEGER PRIMARY KEY,\n"
    "  key               BLOB NOT NULL UNIQUE,    -- 16 bytes: the request's 128-bit hash,\n"
    "                                             -- shown as 32 hex digits: lower(hex(key))\n"
    "  judge_name        TEXT NOT NULL,\n"
    "  model             TEXT NOT NULL,\n"
    "  request           TEXT NOT NULL,           -- canonical JSON body as sent (no key), or a\n"
    "                                             -- compact request (BLOB): read via export\n"
    "  rep               INTEGER NOT NULL DEFAULT 0 CHECK (rep >= 0),\n"
    "  ok                INTEGER NOT NULL CHECK (ok IN (0, 1)), -- 1: a reply arrived\n"
    "  content           TEXT,                    -- the reply text (verdict may still be E)\n"
    "  raw_reply         TEXT,                    -- body that could not be parsed, else NULL\n"
    "  error             TEXT,                    -- why it failed or is unusable\n"
    "  http_status       INTEGER,                 -- NULL when no response arrived\n"
    "  attempts          INTEGER NOT NULL DEFAULT 0,\n"
    "  prompt_tokens     INTEGER,                 -- as reported by the server; NULL unknown\n"
    "  completion_tokens INTEGER,\n"
    "  latency_ms        REAL,                    -- of the final attempt\n"
    "  created_at        INTEGER NOT NULL DEFAULT (" NOW_MS "),\n"
    "                                             -- unix time in ms: strftime('%Y-%m-%dT%H:%M:\n"
    "                                             -- %fZ', created_at / 1000.0, 'unixepoch')\n"
    "  reasoning         TEXT,                    -- the judge's thinking, never parsed; NULL\n"
    "  reasoning_tokens  INTEGER,                 -- usage, when reported\n"
    "  cached_tokens     INTEGER,                 -- usage: cached prompt tokens\n"
    "  logprobs          TEXT                     -- the verdict token's distribution, or NULL\n"
    "    CONSTRAINT logprobs_is_json CHECK (logprobs IS NULL OR json_valid(logprobs)),\n"
    "  endpoint_id       INTEGER REFERENCES endpoints(id), -- where it was sent; NULL unknown\n"
    "  cost_usd          REAL,                    -- from usage and the judge's prices; NULL\n"
    "                                             -- when no price is known\n"
    "  prompt_chars      INTEGER                  -- prompt length in code points (METHODS 5)\n"
    ");\n"
    "INSERT INTO calls_v13 (id, key, judge_name, model, request, rep, ok, content, raw_reply,\n"
    "  error, http_status, attempts, prompt_tokens, completion_tokens, latency_ms, created_at,\n"
    "  reasoning, reasoning_tokens, cached_tokens, logprobs, endpoint_id, cost_usd, prompt_chars)\n"
    "  SELECT id, arb_call_key(key), judge_name, model, request, rep, ok, content, raw_reply,\n"
    "  error, http_status, attempts, prompt_tokens, completion_tokens, latency_ms,\n"
    "  " ISO_TO_MS("created_at") ",\n"
    "  reasoning, reasoning_tokens, cached_tokens, logprobs,\n"
    "  (SELECT e.id FROM endpoints e WHERE e.url = calls.endpoint), cost_usd, prompt_chars\n"
    "  FROM calls ORDER BY id;\n"
    "DROP TABLE calls;\n"
    "ALTER TABLE calls_v13 RENAME TO calls;\n",
    /* 14: cheaper writes per judge call (issue 17 point 5). The SQL part; rewrite_pairwise_checks
    ** then states pairwise's CHECKs without IN lists, in the same transaction.
    ** - call_leases loses its index by owner: the table holds only the calls being sent (a few
    **   thousand rows), so renewing and releasing a run's leases scan it, and claiming and
    **   ending a lease write one b-tree instead of two.
    ** - The check that a judgment's call exists moves from a trigger, whose sub-program cost
    **   about 12,000 instructions a row (callgrind, 2026-11-27), into the store
    **   (arb__store_put_pairwise and the import check it before writing the row, see
    **   arb__store_check_call); the trigger on UPDATE OF call_id stays. */
    ("DROP INDEX call_leases_by_owner;\n"
     "DROP TRIGGER pairwise_call_inserted;\n"), /* parenthesised: one element, two lines */
    /* 15: cheaper rows of the dataset (issue 17 point 5). The SQL part; rewrite_schema_15 then
    ** edits the definitions of items (its CHECK on extra) and pairwise (a comment), in the same
    ** transaction.
    ** - answers is keyed by its primary key alone (no rowid, no second index: one b-tree
    **   written per answer instead of two) and loses its foreign key to items and its CHECK
    **   json_valid(extra): the store writes an answer only from a dataset, which refuses an
    **   answer to an unknown item, and extra is the JSON the dataset's parser wrote. Together
    **   ~5,400 of the 13,500 instructions of an answer's row in SQLite (callgrind, 2026-11-28).
    **   Its retirement triggers go with the old table and are created again. */
    "CREATE TABLE answers_v15 (\n"
    "  -- What each model (contestant) answered to each item.\n"
    "  item_id     TEXT NOT NULL,                 -- items.id: the store writes an answer with\n"
    "                                             -- its item (not a foreign key, whose check\n"
    "                                             -- cost more than the rest of the row)\n"
    "  model       TEXT NOT NULL,\n"
    "  answer      TEXT NOT NULL,\n"
    "  extra       TEXT NOT NULL DEFAULT '{}',    -- fields arbiter does not know, as a JSON\n"
    "                                             -- object (the store writes valid JSON)\n"
    "  source      TEXT,\n"
    "  PRIMARY KEY (item_id, model)\n"
    ") WITHOUT ROWID;\n"
    "INSERT INTO answers_v15 (item_id, model, answer, extra, source)\n"
    "  SELECT item_id, model, answer, extra, source FROM answers ORDER BY item_id, model;\n"
    "DROP TABLE answers;\n"
    "ALTER TABLE answers_v15 RENAME TO answers;\n"
    ANSWERS_RETIRE_TRIGGERS
    /* - call_leases holds one row per claim (the calls one transaction claimed) instead of
    **   one per call: a row inserted and deleted per call cost ~21,000 instructions a call
    **   (callgrind, 2026-11-28). A lease on a call stored since is moot (a claim looks for
    **   the stored call first); the row ends once all its calls are stored. The leases there
    **   are (a run killed on an old arbiter) are kept, one row each. */
    "CREATE TABLE call_leases_v15 (\n"
    "  -- Judge calls that a live process is sending, one row per claim (the calls one\n"
    "  -- transaction claimed): others wait for them instead of sending them too. A call\n"
    "  -- stored since needs no lease (a claim looks for the stored call first). Deleted once\n"
    "  -- every call of it is stored, at the end of the owner's run, or taken over once\n"
    "  -- expired or once the owner's pid is gone.\n"
    "  id            INTEGER PRIMARY KEY AUTOINCREMENT, -- only grows: a process that ends\n"
    "                                             -- its leases reads the rows it has not seen\n"
    "  owner         TEXT NOT NULL,               -- host:pid:start:counter of the run\n"
    "  host          TEXT NOT NULL,\n"
    "  pid           INTEGER NOT NULL,\n"
    "  expires_at    REAL NOT NULL,               -- unix time; renewed while the owner runs\n"
    "  keys          BLOB NOT NULL                -- the calls (calls.key), 16 bytes each\n"
    ");\n"
    "INSERT INTO call_leases_v15 (owner, host, pid, expires_at, keys)\n"
    "  SELECT owner, host, pid, expires_at, key FROM call_leases\n"
    "   WHERE typeof(key) = 'blob' AND length(key) = 16;\n"
    "DROP TABLE call_leases;\n"
    "ALTER TABLE call_leases_v15 RENAME TO call_leases;\n",
    /* 16: a cheaper row per pairwise judgment (issue 17 point 5). The key of a judgment began
    ** with six columns that are the same for every judgment of a run (protocol, judge, pair,
    ** template, option mode): each b-tree comparison of an insert went through them before it
    ** reached the item, ~21 comparisons of ~340 instructions per row, and they were bound and
    ** stored again in every row. They are stored once per setup (pairwise_setups) and a
    ** judgment names its setup by a small integer, first in its key; item_id loses its foreign
    ** key to items (the store writes a judgment only for an item it stored: a protocol's
    ** dataset is put before its calls, an import puts the items it names). ~9,000 of the
    ** ~21,000 instructions of a judgment's row (callgrind, 2026-11-28). The view pairwise
    ** has the columns of the table it replaces, so what read or wrote pairwise still does
    ** (its triggers turn writes into writes of both tables). The rows are copied in the order
    ** of both keys (setup ids are given in the order of the old key's first columns), so the
    ** copy appends. rewrite_schema_16 then edits pointwise's CHECKs in place. */
    "CREATE TABLE pairwise_setups (\n"
    "  -- What a pairwise judgment compared, and how: protocol, judge, pair, template and option\n"
    "  -- mode, each combination stored once (read pairwise judgments through the view\n"
    "  -- pairwise). A row is never changed or deleted.\n"
    "  id                INTEGER PRIMARY KEY,\n"
    "  protocol          TEXT NOT NULL,           -- 'sbs', ...\n"
    "  judge_name        TEXT NOT NULL,\n"
    "  candidate         TEXT NOT NULL,           -- model under test\n"
    "  baseline          TEXT NOT NULL,\n"
    "  template_name     TEXT NOT NULL,\n"
    "  options           INTEGER NOT NULL CHECK (options = 2 OR options = 3 OR options = 4), -- METHODS 2.1\n"
    "  UNIQUE (protocol, judge_name, candidate, baseline, template_name, options)\n"
    ");\n"
    "INSERT INTO pairwise_setups (protocol, judge_name, candidate, baseline, template_name,\n"
    "  options)\n"
    "  SELECT DISTINCT protocol, judge_name, candidate, baseline, template_name, options\n"
    "  FROM pairwise ORDER BY protocol, judge_name, candidate, baseline, template_name, options;\n",
};

/* Migration 16 continued: the judgments' table, then the view pairwise (one string each, as
** migration 13's). */
static const char *const migration_16_more[] = {
    "CREATE TABLE pairwise_judgments (\n"
    "  -- Pairwise judgments (METHODS 2): side-by-side, soft/hard multi-agent finals, peer\n"
    "  -- reviews. One row per (setup, item, repetition, order), the primary key; a rerun\n"
    "  -- updates the row. Read them through the view pairwise, which names the setup's columns.\n"
    "  setup_id          INTEGER NOT NULL,        -- pairwise_setups.id (written by the store)\n"
    "  item_id           TEXT NOT NULL,           -- items.id: the store writes a judgment only\n"
    "                                             -- for an item it stored (not a foreign key,\n"
    "                                             -- whose check cost a search of items a row)\n"
    "  rep               INTEGER NOT NULL CHECK (rep >= 0),\n"
    "  ord               INTEGER NOT NULL CHECK (ord IN (0, 1)), -- order: 0 = candidate first\n"
    "  position_verdict  TEXT NOT NULL CHECK (position_verdict = 'A' OR position_verdict = 'B'\n"
    "    OR position_verdict = 'C' OR position_verdict = 'D' OR position_verdict = 'E'),\n"
    "  model_verdict     TEXT NOT NULL CHECK (model_verdict = 'a' OR model_verdict = 'b'\n"
    "    OR model_verdict = 'c' OR model_verdict = 'd' OR model_verdict = 'e'),\n"
    "  call_id           INTEGER,                 -- calls.id of the call that produced it:\n"
    "                                             -- checked by the store on insert and by\n"
    "                                             -- the trigger below on update, not a\n"
    PAIRWISE_LAST_COLUMNS
    "  PRIMARY KEY (setup_id, item_id, rep, ord)\n"
    ") WITHOUT ROWID;\n"
    "INSERT INTO pairwise_judgments (setup_id, item_id, rep, ord, position_verdict,\n"
    "  model_verdict, call_id, judged_at, source, strength, extra)\n"
    "  SELECT s.id, p.item_id, p.rep, p.ord, p.position_verdict, p.model_verdict, p.call_id,\n"
    "  p.judged_at, p.source, p.strength, p.extra\n"
    "  FROM pairwise p JOIN pairwise_setups s ON s.protocol = p.protocol\n"
    "   AND s.judge_name = p.judge_name AND s.candidate = p.candidate\n"
    "   AND s.baseline = p.baseline AND s.template_name = p.template_name\n"
    "   AND s.options = p.options\n"
    "  ORDER BY p.protocol, p.judge_name, p.candidate, p.baseline, p.template_name, p.options,\n"
    "  p.item_id, p.rep, p.ord;\n"
    "DROP TABLE pairwise;\n"
    "CREATE INDEX pairwise_judgments_by_source ON pairwise_judgments(source)\n"
    "  WHERE source IS NOT NULL;\n"
    "CREATE TRIGGER pairwise_call_updated BEFORE UPDATE OF call_id ON pairwise_judgments\n"
    "  WHEN new.call_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM calls WHERE id = new.call_id)\n"
    "  BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: no such call'); END;\n",
    PAIRWISE_VIEW,
    NULL,
};

/* Migration 13 continued (one string per table keeps each under the length C compilers must
** support): create_schema runs these right after migrations[12]. */
static const char *const migration_13_more[] = {
    "CREATE TABLE pairwise_v13 (\n"
    "  -- Pairwise judgments (METHODS 2): side-by-side, soft/hard multi-agent finals, peer\n"
    "  -- reviews. One row per (judge, item, pair, template, option mode, order, repetition),\n"
    "  -- the primary key; a rerun updates the row.\n"
    "  protocol          TEXT NOT NULL,           -- 'sbs', ...\n"
    "  judge_name        TEXT NOT NULL,\n"
    "  item_id           TEXT NOT NULL REFERENCES items(id),\n"
    "  candidate         TEXT NOT NULL,           -- model under test\n"
    "  baseline          TEXT NOT NULL,\n"
    "  template_name     TEXT NOT NULL,\n"
    "  options           INTEGER NOT NULL CHECK (options IN (2, 3, 4)), -- METHODS 2.1\n"
    "  ord               INTEGER NOT NULL CHECK (ord IN (0, 1)), -- order: 0 = candidate first\n"
    "  rep               INTEGER NOT NULL CHECK (rep >= 0),\n"
    "  position_verdict  TEXT NOT NULL CHECK (position_verdict IN ('A','B','C','D','E')),\n"
    "  model_verdict     TEXT NOT NULL CHECK (model_verdict IN ('a','b','c','d','e')),\n"
    "  call_id           INTEGER,                 -- calls.id of the call that produced it:\n"
    "                                             -- checked by the triggers below, not a\n"
    PAIRWISE_LAST_COLUMNS
    "  -- Column order chosen so this key also serves the audit's grouping.\n"
    "  PRIMARY KEY (protocol, judge_name, candidate, baseline, template_name, options,\n"
    "               item_id, rep, ord)\n"
    ") WITHOUT ROWID;\n"
    "INSERT INTO pairwise_v13 (protocol, judge_name, item_id, candidate, baseline,\n"
    "  template_name, options, ord, rep, position_verdict, model_verdict, call_id, judged_at,\n"
    "  source, strength, extra)\n"
    "  SELECT protocol, judge_name, item_id, candidate, baseline, template_name, options, ord,\n"
    "  rep, position_verdict, model_verdict, call_id, " ISO_TO_MS("judged_at") ",\n"
    "  source, strength, extra FROM pairwise\n"
    "  ORDER BY protocol, judge_name, candidate, baseline, template_name, options, item_id,\n"
    "  rep, ord;\n"
    "DROP TABLE pairwise;\n"
    "ALTER TABLE pairwise_v13 RENAME TO pairwise;\n"
    "CREATE INDEX pairwise_by_source ON pairwise(source) WHERE source IS NOT NULL;\n"
    "CREATE TRIGGER pairwise_call_inserted BEFORE INSERT ON pairwise\n"
    "  WHEN new.call_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM calls WHERE id = new.call_id)\n"
    "  BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: no such call'); END;\n"
    "CREATE TRIGGER pairwise_call_updated BEFORE UPDATE OF call_id ON pairwise\n"
    "  WHEN new.call_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM calls WHERE id = new.call_id)\n"
    "  BEGIN SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: no such call'); END;\n",
    "CREATE TABLE call_leases_v13 (\n"
    "  -- A judge call that a live process is sending: others wait for it instead of sending\n"
    "  -- it too. Deleted with the stored call, at the end of the owner's run, or taken over\n"
    "  -- once expired or once the owner's pid is gone.\n"
    "  key           BLOB PRIMARY KEY,            -- calls.key (16 bytes)\n"
    "  owner         TEXT NOT NULL,               -- host:pid:start:counter of the run\n"
    "  host          TEXT NOT NULL,\n"
    "  pid           INTEGER NOT NULL,\n"
    "  expires_at    REAL NOT NULL                -- unix time; renewed while the owner runs\n"
    ") WITHOUT ROWID;\n"
    "INSERT INTO call_leases_v13 SELECT arb_call_key(key), owner, host, pid, expires_at\n"
    "  FROM call_leases;\n"
    "DROP TABLE call_leases;\n"
    "ALTER TABLE call_leases_v13 RENAME TO call_leases;\n"
    "CREATE INDEX call_leases_by_owner ON call_leases(owner);\n"
    "CREATE TABLE batch_calls_v13 (\n"
    "  -- A call queued for a provider's Batch API or an offline engine (vLLM run-batch). It is\n"
    "  -- pending while calls holds no successful row with its key; the reply, when ingested,\n"
    "  -- is stored in calls exactly as a reply that came back by HTTP.\n"
    "  key          BLOB PRIMARY KEY,         -- the call key (16 bytes); the batch line's\n"
    "                                         -- custom_id is its 32 hex digits\n"
    "  judge_name   TEXT NOT NULL,\n"
    "  model        TEXT NOT NULL,\n"
    "  rep          INTEGER NOT NULL CHECK (rep >= 0),\n"
    "  request      TEXT NOT NULL,            -- canonical JSON body, the line's body\n"
    "  api_key_env  TEXT,                     -- the key variable's NAME (to redact an echoed\n"
    "                                         -- key from replies), never the key\n"
    "  queued_at    TEXT NOT NULL DEFAULT (" NOW "),\n"
    "  result_id    TEXT,                     -- id of the output line stored for it last, so\n"
    "                                         -- ingesting the same file again changes nothing\n"
    "  base_url     TEXT,                     -- the judge's endpoint (--batch submit sends the\n"
    "                                         -- call's batch there)\n"
    "  batch_id     TEXT,                     -- the provider batch it was last submitted in\n"
    "  verdict      TEXT                      -- 'position:<options>[:<json field>]', 'grade'\n"
    "                                         -- or 'yesno'; NULL: no verdict (a debater)\n"
    ");\n"
    "INSERT INTO batch_calls_v13 (rowid, key, judge_name, model, rep, request, api_key_env,\n"
    "  queued_at, result_id, base_url, batch_id, verdict)\n"
    "  SELECT rowid, arb_call_key(key), judge_name, model, rep, request, api_key_env, queued_at,\n"
    "  result_id, base_url, batch_id, verdict FROM batch_calls ORDER BY rowid;\n"
    "DROP TABLE batch_calls;\n"
    "ALTER TABLE batch_calls_v13 RENAME TO batch_calls;\n",
    NULL,
};

/* Statements prepared once at open (the hot paths). */
enum {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_PUT_ITEM,
    ST_ADD_ITEM,
    ST_PUT_ANSWER,
    ST_ADD_ANSWER,
    ST_PUT_JUDGE,
    ST_PUT_NEW_CALL,
    ST_PUT_CALL,
    ST_FIND_CALL,
    ST_CALL_EXISTS,
    ST_PUT_PAIRWISE,
    ST_FIND_SETUP,
    ST_ADD_SETUP,
    ST_SETUP_HAS_JUDGMENTS,
    ST_RUN_BEGIN,
    ST_RUN_LAST_FINISHED,
    ST_RUN_END,
    ST_PUT_DIALOGUE,
    ST_FIND_DIALOGUE,
    ST_REOPEN_DIALOGUE,
    ST_PUT_TURN,
    ST_END_DIALOGUE,
    ST_DROP_TURNS,
    ST_LEASES_ALL,
    ST_LEASE_DROP,
    ST_LEASE_ADD,
    ST_LEASES_OWN,
    ST_LEASE_END,
    ST_LEASE_RENEW,
    ST_LEASES_RELEASE,
    ST_COMPACT_CALL,
    ST_ITEM_TEXTS,
    ST_ANSWER_TEXTS,
    ST_PUT_POINTWISE,
    ST__COUNT
};

#define CALL_INSERT                                                                        \
    "INSERT INTO calls(key, judge_name, model, request, rep, ok, content, raw_reply, error,"  \
    " http_status, attempts, prompt_tokens, completion_tokens, latency_ms,"                  \
    " reasoning_tokens, cached_tokens, cost_usd, reasoning, logprobs, endpoint_id, prompt_chars,"\
    " created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"\
    " ?17, ?18, ?19, ?20, ?21, ?22)"

/* A pairwise judgment: PAIRWISE_INSERT, one or more groups of PAIRWISE_COLUMNS parameters and
** the time parameter, then PAIRWISE_UPSERT (a rerun updates the row; arbiter's own judgment
** takes the row over from an import, issue 15: it is no longer the source's, so a re-import
** neither deletes nor counts it). The rows of one statement share one parameter for judged_at,
** ?1 (unix_ms_now: SQLite's 'now' is one instant per statement too), and row r's columns are
** parameters 2 + r * PAIRWISE_COLUMNS onwards: numbered in ascending order, so preparing the
** statement does not search its list of parameters for each one. The row goes into
** pairwise_judgments, its setup named by id (schema 16, pairwise_setup). */
#define PAIRWISE_COLUMNS 7
#define PAIRWISE_INSERT                                                                        \
    "INSERT INTO pairwise_judgments(setup_id, item_id, ord, rep, position_verdict,"            \
    " model_verdict, call_id, judged_at) VALUES "
#define PAIRWISE_UPSERT                                                                        \
    " ON CONFLICT(setup_id, item_id, rep, ord) DO UPDATE SET"                                  \
    " position_verdict = excluded.position_verdict,"                                           \
    " model_verdict = excluded.model_verdict, call_id = excluded.call_id,"                     \
    " judged_at = excluded.judged_at, source = NULL, strength = NULL, extra = '{}'"

/* A pointwise judgment, as a pairwise one: POINTWISE_INSERT, groups of POINTWISE_COLUMNS
** parameters, POINTWISE_UPSERT (a rerun of the same judgment replaces its value, reason, task
** and call). */
#define POINTWISE_COLUMNS 12
#define POINTWISE_INSERT                                                                       \
    "INSERT INTO pointwise (protocol, judge_name, item_id, model, language, kind,"             \
    " template_name, rep, value, call_id, task, reason, judged_at) VALUES "
#define POINTWISE_UPSERT                                                                       \
    " ON CONFLICT (protocol, judge_name, kind, template_name, language, item_id, model, rep)"  \
    " DO UPDATE SET value = excluded.value, call_id = excluded.call_id,"                       \
    " task = excluded.task, reason = excluded.reason, judged_at = excluded.judged_at"

static const char *const stmt_sql[ST__COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    /* The WHERE clauses skip rewriting unchanged rows, so loading the same dataset on every
    ** run writes nothing. */
    [ST_PUT_ITEM] =
        "INSERT INTO items(id, seq, question, reference, category, language, grp, extra, source)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
        " ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, question = excluded.question,"
        " reference = excluded.reference, category = excluded.category,"
        " language = excluded.language, grp = excluded.grp, extra = excluded.extra,"
        " source = excluded.source"
        " WHERE items.seq IS NOT excluded.seq OR items.question IS NOT excluded.question"
        " OR items.reference IS NOT excluded.reference OR items.category IS NOT excluded.category"
        " OR items.language IS NOT excluded.language OR items.grp IS NOT excluded.grp"
        " OR items.extra IS NOT excluded.extra OR items.source IS NOT excluded.source",
    [ST_PUT_ANSWER] =
        "INSERT INTO answers(item_id, model, answer, extra, source) VALUES (?1, ?2, ?3, ?4, ?5)"
        " ON CONFLICT(item_id, model) DO UPDATE SET answer = excluded.answer,"
        " extra = excluded.extra, source = excluded.source"
        " WHERE answers.answer IS NOT excluded.answer OR answers.extra IS NOT excluded.extra"
        " OR answers.source IS NOT excluded.source",
    /* A row known to be new (ST_ITEM_TEXTS or ST_ANSWER_TEXTS found none, or the table was
    ** empty): a plain INSERT. The upsert above makes SQLite open a statement journal on every
    ** execution (its UPDATE fires the retire triggers), which copies each page the row touches:
    ** about 10,000 of the 29,000 instructions of an item's row (callgrind, 2026-11-28). */
    [ST_ADD_ITEM] =
        "INSERT INTO items(id, seq, question, reference, category, language, grp, extra, source)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [ST_ADD_ANSWER] =
        "INSERT INTO answers(item_id, model, answer, extra, source) VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_PUT_JUDGE] =
        "INSERT INTO judges(name, base_url, model, sampling, price) VALUES (?1, ?2, ?3, ?4, ?5)"
        " ON CONFLICT(name) DO UPDATE SET base_url = excluded.base_url,"
        " model = excluded.model, sampling = excluded.sampling, price = excluded.price,"
        " updated_at = " NOW
        " WHERE judges.base_url IS NOT excluded.base_url OR judges.model IS NOT excluded.model"
        " OR judges.sampling IS NOT excluded.sampling OR judges.price IS NOT excluded.price",
    /* A call whose key is new, the common case: inserted without RETURNING (which makes SQLite
    ** fill a temporary table on every execution), its id from sqlite3_last_insert_rowid. When
    ** the key is there already nothing happens and ST_PUT_CALL decides. */
    [ST_PUT_NEW_CALL] = CALL_INSERT " ON CONFLICT(key) DO NOTHING",
    /* Returns a row only when it inserted or replaced a failed call; otherwise ST_FIND_CALL
    ** finds the successful call that stays. */
    [ST_PUT_CALL] =
        CALL_INSERT
        " ON CONFLICT(key) DO UPDATE SET judge_name = excluded.judge_name,"
        " model = excluded.model, request = excluded.request, rep = excluded.rep,"
        " ok = excluded.ok, content = excluded.content, raw_reply = excluded.raw_reply,"
        " error = excluded.error, http_status = excluded.http_status,"
        " attempts = excluded.attempts, prompt_tokens = excluded.prompt_tokens,"
        " completion_tokens = excluded.completion_tokens, latency_ms = excluded.latency_ms,"
        " reasoning_tokens = excluded.reasoning_tokens, cached_tokens = excluded.cached_tokens,"
        " cost_usd = excluded.cost_usd,"
        " reasoning = excluded.reasoning, logprobs = excluded.logprobs,"
        " endpoint_id = excluded.endpoint_id, prompt_chars = excluded.prompt_chars,"
        " created_at = excluded.created_at"
        " WHERE calls.ok = 0"
        " RETURNING id",
    [ST_FIND_CALL] = "SELECT id, content, prompt_tokens, completion_tokens, cost_usd FROM calls"
                     " WHERE key = ?1 AND ok = 1",
    [ST_CALL_EXISTS] = "SELECT 1 FROM calls WHERE id = ?1",
    [ST_PUT_PAIRWISE] = PAIRWISE_INSERT "(?2, ?3, ?4, ?5, ?6, ?7, ?8, ?1)" PAIRWISE_UPSERT,
    /* A pairwise judgment's setup (pairwise_setup) */
    [ST_FIND_SETUP] = "SELECT id FROM pairwise_setups WHERE protocol = ?1 AND judge_name = ?2"
                      " AND candidate = ?3 AND baseline = ?4 AND template_name = ?5"
                      " AND options = ?6",
    [ST_ADD_SETUP] = "INSERT INTO pairwise_setups(protocol, judge_name, candidate, baseline,"
                     " template_name, options) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_SETUP_HAS_JUDGMENTS] = "SELECT 1 FROM pairwise_judgments WHERE setup_id = ?1 LIMIT 1",
    [ST_RUN_BEGIN] = "INSERT INTO runs(protocol, params, status) VALUES (?1, ?2, ?3) RETURNING id",
    [ST_RUN_LAST_FINISHED] = "SELECT coalesce(" ISO_TO_MS("max(finished_at)") ", 0) FROM runs",
    [ST_RUN_END] = "UPDATE runs SET finished_at = " NOW ", status = ?2, stats = ?3"
                   " WHERE id = ?1",
    /* Dialogues are written only where they change (a rerun that checks every call rewrote
    ** every dialogue row three times a judgment): one stored already is found by its key (an
    ** INSERT that meets the key costs its CHECKs and the conflict: ~40,000 instructions); a
    ** failed one is open again when a run takes it up, a finished one when one of its turns
    ** changes (ST_REOPEN_DIALOGUE). */
    [ST_PUT_DIALOGUE] =
        "INSERT INTO dialogues(key, kind, item_id, answer1, answer2, participants, config, rep)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        " ON CONFLICT(key) DO UPDATE SET status = 'open', final_verdict = NULL"
        " RETURNING id",
    [ST_FIND_DIALOGUE] = "SELECT id, status IN ('open', 'done') FROM dialogues WHERE key = ?1",
    [ST_REOPEN_DIALOGUE] = "UPDATE dialogues SET status = 'open', final_verdict = NULL"
                           " WHERE id = ?1 AND status <> 'open'",
    [ST_PUT_TURN] =
        "INSERT INTO dialogue_turns(dialogue_id, turn, speaker, role, call_id, verdict)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        " ON CONFLICT(dialogue_id, turn) DO UPDATE SET speaker = excluded.speaker,"
        " role = excluded.role, call_id = excluded.call_id, verdict = excluded.verdict"
        " WHERE (speaker, role, call_id, verdict) IS NOT"
        " (excluded.speaker, excluded.role, excluded.call_id, excluded.verdict)",
    [ST_END_DIALOGUE] = "UPDATE dialogues SET final_verdict = ?2, status = ?3 WHERE id = ?1"
                        " AND (final_verdict, status) IS NOT (?2, ?3)",
    [ST_DROP_TURNS] = "DELETE FROM dialogue_turns WHERE dialogue_id = ?1 AND turn > ?2",
    /* Leases, one row per claim (see the leases section): every row with whether it is still
    ** live by its clock (the keys are read only for other owners' rows) */
    [ST_LEASES_ALL] = "SELECT id, owner, host, pid, expires_at > " NOW_UNIX ", keys"
                      " FROM call_leases",
    [ST_LEASE_DROP] = "DELETE FROM call_leases WHERE id = ?1",
    [ST_LEASE_ADD] = "INSERT INTO call_leases(owner, host, pid, expires_at, keys)"
                     " VALUES (?1, ?2, ?3, " NOW_UNIX " + ?4, ?5)",
    [ST_LEASES_OWN] = "SELECT id, keys FROM call_leases WHERE owner = ?1 AND id > ?2"
                      " ORDER BY id",
    [ST_LEASE_END] = "DELETE FROM call_leases WHERE id = ?1 AND owner = ?2",
    [ST_LEASE_RENEW] = "UPDATE call_leases SET expires_at = " NOW_UNIX " + ?2 WHERE owner = ?1",
    [ST_LEASES_RELEASE] = "DELETE FROM call_leases WHERE owner = ?1",
    /* The key guards against a row id that a rollback gave to another call. */
    [ST_COMPACT_CALL] = "UPDATE calls SET request = ?2 WHERE id = ?1 AND key = ?3",
    /* An item or answer as stored, and whether its other columns are the ones given: loading
    ** the same dataset again compares the texts (decompressing is cheaper than compressing)
    ** and skips the upsert when they are the same too. */
    [ST_ITEM_TEXTS] = "SELECT question, reference, source, seq = ?2 AND category IS ?3"
                      " AND language IS ?4 AND grp IS ?5 AND extra = ?6 FROM items WHERE id = ?1",
    [ST_ANSWER_TEXTS] = "SELECT answer, source, extra = ?3 FROM answers"
                        " WHERE item_id = ?1 AND model = ?2",
    /* A pointwise judgment (arb__store_put_pointwise) */
    [ST_PUT_POINTWISE] = POINTWISE_INSERT
                         "(?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?1)"
                         POINTWISE_UPSERT,
};

/* The call stored last, while its request is still TEXT: compacted when its pairwise row
** names the item and answers it contains, else before the next call or the commit. */
typedef struct pending_call {
    long long id; /* 0: none */
    char *key, *model, *request;
    int asks_logprobs; /* as told by the request's builder (arb__call_record.built), else -1 */
} pending_call;

/* Judgments put inside a transaction are inserted PAIRWISE_GROUP rows per statement. The
** CHECK constraints of pairwise with three or more values (options IN (2, 3, 4), the verdict
** letters) make SQLite 3.40 build a temporary b-tree for each of them on every execution of a
** statement, which costs more than the row itself (about 140,000 of the 150,000 instructions
** of a one-row insert, callgrind, 2026-11-27); a statement of many rows builds them once and
** only empties them between rows. The rows wait here, copied, until the group is full or the
** transaction commits (arb__store_commit), and are dropped with a rollback. A partial group
** goes in by statements of a quarter and a sixteenth of a group, the last few rows one by
** one. */
#define PAIRWISE_GROUP 64
#define PAIRWISE_SIZES 3 /* statements of 64, 16 and 4 rows */
#define PAIRWISE_TEXTS 6 /* protocol, judge_name, item_id, candidate, baseline, template_name */

typedef struct pending_pairwise {
    size_t text[PAIRWISE_TEXTS]; /* offsets into arb_store.pending_text; SIZE_MAX: NULL */
    long long setup_id;          /* pairwise_setups.id of its first five texts and options */
    int options, order, rep;
    char verdict[2][2]; /* the position and the model verdict, each a letter and a NUL */
    long long call_id;
} pending_pairwise;

/* Pointwise judgments wait in a group the same way: table pointwise's CHECK constraints
** (kind IN three values, task IN six) cost SQLite two temporary b-trees on every execution,
** ~90,000 of the ~118,000 instructions of a one-row insert (callgrind, 2026-11-28). */
#define POINTWISE_TEXTS 9 /* protocol, judge_name, item_id, model, language, kind,
                             template_name, task, reason */

typedef struct pending_pointwise {
    size_t text[POINTWISE_TEXTS]; /* offsets into arb_store.pointwise_text; SIZE_MAX: NULL */
    int rep, value;
    long long call_id;
} pending_pointwise;

/* What a handle that releases an owner's leases one call at a time (arb__store_release_lease,
** the executor's writer) knows of the owner's lease rows: which row each claimed key is in, and
** how many keys of each row are not released yet. */
typedef struct lease_book {
    char owner[128];  /* arb__lease_owner.id of whose rows; "" none yet */
    arb__keymap keys; /* call key (16 bytes, see lease_key) -> index + 1 in batches */
    struct {
        long long id; /* call_leases.id; 0: ended */
        size_t left;  /* its keys not released yet */
    } *batches;
    size_t n_batches, cap_batches;
    long long seen_id; /* the highest row id read */
} lease_book;

/* Endpoint ids cached by a store: a judge's replicas, a few judges. */
#define ENDPOINTS_CACHED 16
/* Setups of pairwise judgments cached by a store (pairwise_setup): a run's few. */
#define SETUPS_CACHED 16

struct arb_store {
    sqlite3 *db;
    char *path;
    int created;           /* the file did not exist before this handle opened it */
    sqlite3_stmt *stmt[ST__COUNT];
    unsigned char key_bytes[ST__COUNT][ARB__CALL_KEY_BYTES]; /* see bind_stmt_key */
    arb__reqz *reqz;       /* compact requests (store_requests.c) */
    arb__textz *textz;     /* compact texts of the dataset (store_texts.c) */
    int texts_compacted;   /* migration 12 compressed the stored texts in this open */
    int rows_rebuilt;      /* migration 13 rebuilt the tables of an existing store in this open */
    long long compacted;   /* requests migration 11 rewrote in this open */
    pending_call call_pending; /* see pending_call */
    int in_tx;             /* between arb__store_begin and its commit or rollback */
    long long tx_call_id;  /* the call stored last in the open transaction (0: none): a
                              judgment made from it needs no check that it exists */
    sqlite3_stmt *put_pairwise_group[PAIRWISE_SIZES]; /* PAIRWISE_GROUP >> 2k rows, prepared
                                                        ** on first use */
    sqlite3_stmt *find_group; /* see find_claimed; prepared on first use */
    sqlite3_stmt *persona[7]; /* arb__store_put_persona_scores' statements, on first use */
    pending_pairwise pending[PAIRWISE_GROUP];
    size_t n_pending;
    arb__buf pending_text;
    sqlite3_stmt *put_pointwise_group[PAIRWISE_SIZES]; /* as put_pairwise_group */
    pending_pointwise pointwise[PAIRWISE_GROUP];
    size_t n_pointwise;
    arb__buf pointwise_text;
    struct endpoint_cached {
        char *url;
        long long id;
    } endpoints[ENDPOINTS_CACHED]; /* endpoints rows known (see endpoint_id) */
    size_t n_endpoints;
    struct setup_cached {
        char *key; /* protocol, judge, candidate, baseline, template, each ending in NUL,
                      then options (an int's bytes) */
        size_t len;
        long long id;
        int fresh; /* it held no judgment when this handle looked it up (arb__rows_tally) */
    } setups[SETUPS_CACHED]; /* pairwise_setups rows known (see pairwise_setup) */
    size_t n_setups, next_setup; /* next_setup: the slot a new one takes when all are used */
    arb__buf setup_key;
    /* The call this handle inserted last (arb__store_settle_call), as a judgment's digest row
    ** reads it (arb__rows_tally): id 0 when the last call stored was not a new row. */
    struct {
        long long id;
        int ok;
        int keyed;                              /* key holds its 16 bytes */
        unsigned char key[ARB__CALL_KEY_BYTES];
        arb__buf content;                       /* the reply as stored (NUL-terminated) */
        int has_content;                        /* 0: content NULL */
    } settled;
    long long decoded_before_first_row; /* see arb__decode_counts */
    lease_book leases;     /* see lease_book */
    char errmsg[1024];
};

/* The connection, for the other store_*.c files (store_internal.h). */
sqlite3 *arb__store_conn(arb_store *s) { return s->db; }

/* See store_internal.h. */
void arb__store_decode_counts(arb_store *s, arb__decode_counts *c)
{
    arb__reqz_counts(s->reqz, &c->requests, &c->text_reads);
    arb__textz_counts(s->textz, &c->texts, &c->dictionaries);
    c->export_before_first_row = s->decoded_before_first_row;
}

/* Sets the store's error message; returns code. Formats into a scratch buffer first so an
** argument may be the current message itself. */
arb_status arb__store_fail(arb_store *s, arb_status code, const char *fmt, ...)
{
    if (!s) return code;
    char msg[sizeof s->errmsg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(s->errmsg, msg, sizeof msg);
    return code;
}

/* Fails with ARB_DB and SQLite's own explanation, prefixed by what was being done. */
arb_status arb__store_fail_db(arb_store *s, const char *what)
{
    return arb__store_fail(s, ARB_DB, "%s: %s", what, sqlite3_errmsg(s->db));
}

/* Returns the message of the store's last error: "" when there was none, never NULL. Owned by
** the store. */
const char *arb_store_errmsg(const arb_store *store)
{
    if (!store) return "no store (out of memory or not opened)";
    return store->errmsg;
}

/* Runs a statement that returns no rows and resets it. Returns ARB_OK or ARB_DB. */
arb_status arb__store_step_done(arb_store *s, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    arb_status status = ARB_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) status = arb__store_fail_db(s, what);
    sqlite3_reset(st);
    return status;
}

/* Begins a write transaction at once (BEGIN IMMEDIATE), so a busy database is waited for here
** (up to the busy timeout) and not in the middle of the transaction. */
arb_status arb__store_begin(arb_store *s)
{
    arb_status st = arb__store_step_done(s, s->stmt[ST_BEGIN], "cannot begin a transaction");
    s->n_pending = s->n_pointwise = 0; /* rows of a transaction that is gone are not this one's */
    arb__textz_new_transaction(s->textz);
    arb__buf_reset(&s->pending_text);
    arb__buf_reset(&s->pointwise_text);
    s->in_tx = !st;
    s->tx_call_id = 0;
    return st;
}

/* See arb__store_write_totals and arb__store_read_total. */
static atomic_llong commits_total, pages_written_total, pages_read_total;

static arb_status flush_pending(arb_store *s);
static void drop_pending(arb_store *s);
static int refuse_commit_with_pending(void *ud);
static void forget_pending_on_rollback(void *ud);
static void forget_endpoints(arb_store *s);
static void forget_setups(arb_store *s);
static void sql_arb_call_key(sqlite3_context *ctx, int argc, sqlite3_value **argv);
static arb_status flush_pairwise(arb_store *s);
static arb_status flush_pointwise(arb_store *s);

/* Commits, after compacting the request of the call stored last and inserting the judgments
** still waiting in their group (see PAIRWISE_GROUP). On failure the transaction stays open:
** the caller rolls it back. */
arb_status arb__store_commit(arb_store *s)
{
    arb_status st = flush_pending(s);
    if (!st) st = flush_pairwise(s);
    if (!st) st = flush_pointwise(s);
    if (st) return st;
    st = arb__store_step_done(s, s->stmt[ST_COMMIT], "cannot commit");
    if (!st) s->in_tx = 0;
    s->tx_call_id = 0;
    int pages = 0, high = 0, misses = 0;
    sqlite3_db_status(s->db, SQLITE_DBSTATUS_CACHE_WRITE, &pages, &high, 1);
    sqlite3_db_status(s->db, SQLITE_DBSTATUS_CACHE_MISS, &misses, &high, 1);
    atomic_fetch_add(&pages_written_total, pages);
    atomic_fetch_add(&pages_read_total, misses);
    if (!st) atomic_fetch_add(&commits_total, 1);
    return st;
}

/* See internal.h. */
long long arb__store_read_total(void)
{
    return atomic_load(&pages_read_total);
}

/* See internal.h. */
void arb__store_write_totals(long long *commits, long long *pages)
{
    *commits = atomic_load(&commits_total);
    *pages = atomic_load(&pages_written_total);
}

/* Rolls back the open transaction, if any (SQLite may already have rolled it back after an
** error such as a full disk), with the judgments waiting in their group. Keeps the error
** message that led here. */
void arb__store_rollback(arb_store *s)
{
    if (!s) return;
    drop_pending(s);
    arb__reqz_forget(s->reqz); /* skeletons written in the transaction are gone */
    arb__textz_forget(s->textz); /* and so may be the text dictionary */
    s->in_tx = 0;
    s->tx_call_id = 0;
    s->n_pending = s->n_pointwise = 0;
    arb__buf_reset(&s->pending_text);
    arb__buf_reset(&s->pointwise_text);
    if (sqlite3_get_autocommit(s->db)) return;
    sqlite3_step(s->stmt[ST_ROLLBACK]);
    sqlite3_reset(s->stmt[ST_ROLLBACK]);
}

/* Reads one integer PRAGMA; returns 0 and sets *value, or -1 with the store's error set. */
static int pragma_int(arb_store *s, const char *sql, long long *value)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *value = sqlite3_column_int64(st, 0);
    else *value = 0;
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) return 0;
    if (rc == SQLITE_NOTADB)
        arb__store_fail(s, ARB_DB, "%s: not a SQLite database (is it an arbiter store?)",
                        s->path);
    else
        arb__store_fail(s, ARB_DB, "%s: cannot read: %s", s->path, sqlite3_errmsg(s->db));
    return -1;
}

/* Checks what the file is before anything is written to it. Returns ARB_OK when it is empty
** or an arbiter store this build understands; *version gets its user_version. */
static arb_status check_identity(arb_store *s, long long *version)
{
    long long app_id = 0, objects = 0;
    /* One read transaction, so the three reads see one state of the file: another process
    ** may be creating the store at this moment (seen apart, its schema could appear between
    ** the reads, beside a user_version read before its commit). */
    sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
    int bad = pragma_int(s, "PRAGMA user_version", version) ||
              pragma_int(s, "PRAGMA application_id", &app_id) ||
              pragma_int(s, "SELECT count(*) FROM sqlite_schema", &objects);
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    if (bad) return ARB_DB;
    if (*version == 0 && objects == 0) return ARB_OK; /* new or empty: ours to create */
    if (app_id != STORE_APPLICATION_ID)
        return arb__store_fail(s, ARB_DB,
                               "%s: is a SQLite database but not an arbiter store "
                               "(application_id %lld, user_version %lld)",
                               s->path, app_id, *version);
    if (*version > STORE_SCHEMA_VERSION)
        return arb__store_fail(s, ARB_DB,
                               "%s: written by a newer arbiter (schema version %lld; this "
                               "build understands up to %d): upgrade arbiter to open it",
                               s->path, *version, STORE_SCHEMA_VERSION);
    if (*version < 1)
        return arb__store_fail(s, ARB_DB, "%s: arbiter store with invalid schema version %lld",
                               s->path, *version);
    return ARB_OK;
}

/* Migration 11's rewrite of the requests stored as TEXT into compact requests, in batches by
** row id (nothing is updated under a running SELECT). A call with a pairwise row refers to that
** row's question and answers; any other stays TEXT. Runs inside the
** migration's transaction: killed, the store stays as it was, and the next open does it all. */
static arb_status compact_stored_requests(arb_store *s)
{
    static const char sql[] =
        "SELECT c.id, c.key, c.model, c.request, p.item_id, p.candidate, p.baseline"
        "  FROM calls c LEFT JOIN pairwise p"
        "    ON p.id = (SELECT min(x.id) FROM pairwise x WHERE x.call_id = c.id)"
        " WHERE c.id > ?1 AND typeof(c.request) = 'text' AND p.id IS NOT NULL"
        " ORDER BY c.id LIMIT 256";
    enum { BATCH = 256 };
    struct row {
        long long id;
        char *key, *model, *request, *item, *candidate, *baseline;
    } rows[BATCH];
    sqlite3_stmt *q = NULL;
    arb_status st = ARB_OK;
    long long last = 0;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot compact the stored requests");
    sqlite3_stmt *up = NULL;
    if (sqlite3_prepare_v2(s->db, stmt_sql[ST_COMPACT_CALL], -1, &up, NULL) != SQLITE_OK) {
        sqlite3_finalize(q);
        return arb__store_fail_db(s, "cannot compact the stored requests");
    }
    for (;;) {
        size_t n = 0;
        int oom = 0, rc = SQLITE_DONE;
        sqlite3_bind_int64(q, 1, last);
        while (n < BATCH && (rc = sqlite3_step(q)) == SQLITE_ROW) {
            struct row *r = &rows[n++];
            r->id = last = sqlite3_column_int64(q, 0);
            r->key = arb__store_column_text(q, 1, &oom);
            r->model = arb__store_column_text(q, 2, &oom);
            r->request = arb__store_column_text(q, 3, &oom);
            r->item = arb__store_column_text(q, 4, &oom);
            r->candidate = arb__store_column_text(q, 5, &oom);
            r->baseline = arb__store_column_text(q, 6, &oom);
        }
        if (n < BATCH && rc != SQLITE_DONE && !oom)
            st = arb__store_fail_db(s, "cannot compact the stored requests");
        sqlite3_reset(q);
        if (oom) st = arb__store_fail(s, ARB_NOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
            struct row *r = &rows[i];
            if (!st && r->request) {
                arb__request_ref refs[3] = {{r->item, NULL, NULL}, {r->item, r->candidate, NULL},
                                            {r->item, r->baseline, NULL}};
                unsigned char *blob = NULL;
                size_t len = 0;
                int got = arb__reqz_encode(s->reqz, r->model, r->request, -1, refs,
                                           r->item && r->candidate && r->baseline ? 3 : 0,
                                           &blob, &len);
                if (got < 0)
                    st = arb__store_fail(s, ARB_DB, "cannot compact the request of call %lld: %s",
                                         r->id, arb__reqz_errmsg(s->reqz));
                if (got > 0) {
                    sqlite3_bind_int64(up, 1, r->id);
                    sqlite3_bind_blob(up, 2, blob, (int)len, SQLITE_STATIC);
                    arb__store_bind_text(up, 3, r->key);
                    st = arb__store_step_done(s, up, "cannot compact a stored request");
                    s->compacted++;
                }
                free(blob);
            }
            free(r->key);
            free(r->model);
            free(r->request);
            free(r->item);
            free(r->candidate);
            free(r->baseline);
        }
        if (st || n < BATCH) break;
    }
    sqlite3_finalize(q);
    sqlite3_finalize(up);
    return st;
}

/* Migration 12's rewrite of the dataset's texts into compact texts: trains the store's
** dictionary from a sample of its texts (every step-th row, about TEXT_SAMPLE_BYTES in all),
** then compresses every question, reference, answer and source in place, with the retirement
** triggers dropped meanwhile (the texts do not change, only how they are kept). Runs inside the
** migration's transaction. A store whose texts are too few to train a dictionary keeps them
** as TEXT. */
static arb_status compact_stored_texts(arb_store *s)
{
    enum { TEXT_SAMPLE_BYTES = 4 * 1024 * 1024 };
    static const char total_sql[] =
        "SELECT (SELECT total(length(CAST(question AS BLOB)) + ifnull(length(CAST(reference AS"
        " BLOB)), 0)) FROM items) + (SELECT total(length(CAST(answer AS BLOB))) FROM answers)";
    static const char sample_sql[] =
        "SELECT question FROM items WHERE rowid % ?1 = 0 UNION ALL"
        " SELECT reference FROM items WHERE rowid % ?1 = 0 AND reference IS NOT NULL UNION ALL"
        " SELECT source FROM items WHERE rowid % ?1 = 0 AND source IS NOT NULL UNION ALL"
        " SELECT answer FROM answers WHERE rowid % ?1 = 0 UNION ALL"
        " SELECT source FROM answers WHERE rowid % ?1 = 0 AND source IS NOT NULL";
    static const char rewrite_sql[] =
        "DROP TRIGGER items_retire_question; DROP TRIGGER items_retire_deleted;"
        "DROP TRIGGER answers_retire_answer; DROP TRIGGER answers_retire_deleted;"
        "UPDATE items SET question = arb_text_pack(question), reference = arb_text_pack(reference),"
        " source = arb_text_pack(source);"
        "UPDATE answers SET answer = arb_text_pack(answer), source = arb_text_pack(source);"
        RETIRE_TRIGGERS;
    long long total = 0;
    if (pragma_int(s, total_sql, &total)) return ARB_DB;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, sample_sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot compact the stored texts");
    sqlite3_bind_int64(q, 1, total / TEXT_SAMPLE_BYTES + 1);
    char **texts = NULL;
    size_t n = 0, cap = 0;
    int rc, oom = 0;
    arb_status st = ARB_OK;
    while (!oom && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (n == cap) {
            char **grown = realloc(texts, (cap = cap ? 2 * cap : 1024) * sizeof *texts);
            if (!grown) {
                oom = 1;
                break;
            }
            texts = grown;
        }
        texts[n] = arb__store_column_text(q, 0, &oom);
        n++;
    }
    if (oom) st = arb__store_fail(s, ARB_NOMEM, "out of memory");
    else if (rc != SQLITE_DONE) st = arb__store_fail_db(s, "cannot compact the stored texts");
    sqlite3_finalize(q);
    if (!st && arb__textz_train(s->textz, (const char *const *)texts, n))
        st = arb__store_fail(s, ARB_DB, "cannot compact the stored texts: %s",
                             arb__textz_errmsg(s->textz));
    for (size_t i = 0; i < n; i++) free(texts[i]);
    free(texts);
    if (st) return st;
    int have = arb__textz_has_dictionary(s->textz);
    if (have < 0)
        return arb__store_fail(s, ARB_DB, "cannot compact the stored texts: %s",
                               arb__textz_errmsg(s->textz));
    if (!have) return ARB_OK;
    char *err = NULL;
    if (sqlite3_exec(s->db, rewrite_sql, NULL, NULL, &err) != SQLITE_OK) {
        st = arb__store_fail(s, ARB_DB, "cannot compact the stored texts: %s",
                             err ? err : sqlite3_errmsg(s->db));
        sqlite3_free(err);
        return st;
    }
    s->texts_compacted = 1;
    return ARB_OK;
}

#include "store_fresh_schema.inc"

/* See store_internal.h. */
int arb__store_stepwise_schema = 0;

/* Migration 14's rewrite of pairwise's CHECKs on options and the two verdicts: the same
** constraints as comparisons instead of IN lists. For an IN list of three or more values in a
** CHECK, SQLite 3.40 fills a temporary b-tree on every row it writes: 31,000 of the 67,000
** instructions of a judgment's insert (callgrind, 2026-11-27). Every stored row satisfies both
** forms, so the table's definition is edited in place, as SQLite documents for constraint
** changes that leave the stored rows valid (writable_schema, then a new schema_version so
** other connections read the definition again), rather than copying the table. A definition
** that is not the one migration 13 wrote keeps its CHECKs: they are only slower. */
static const char *const pairwise_checks[][2] = {
    {"CHECK (options IN (2, 3, 4))", "CHECK (options = 2 OR options = 3 OR options = 4)"},
    {"CHECK (position_verdict IN ('A','B','C','D','E'))",
     "CHECK (position_verdict = 'A' OR position_verdict = 'B'\n"
     "    OR position_verdict = 'C' OR position_verdict = 'D' OR position_verdict = 'E')"},
    {"CHECK (model_verdict IN ('a','b','c','d','e'))",
     "CHECK (model_verdict = 'a' OR model_verdict = 'b'\n"
     "    OR model_verdict = 'c' OR model_verdict = 'd' OR model_verdict = 'e')"},
};

/* Runs EDIT (which updates sqlite_schema and answers how many definitions it changed) with
** writable_schema on, then, when it changed any, bumps schema_version so every connection reads
** the definitions again. WHAT names the edit in the error. A connection that refuses
** writable_schema (SQLITE_DBCONFIG_DEFENSIVE) keeps the old definitions: they are only slower. */
static arb_status edit_definitions(arb_store *s, int (*edit)(arb_store *s), const char *what)
{
    long long version = 0;
    if (pragma_int(s, "PRAGMA schema_version", &version)) return ARB_DB;
    if (sqlite3_exec(s->db, "PRAGMA writable_schema = ON", NULL, NULL, NULL) != SQLITE_OK)
        return ARB_OK;
    arb_status st = ARB_OK;
    if (edit(s) > 0) {
        char bump[64];
        snprintf(bump, sizeof bump, "PRAGMA schema_version = %lld", version + 1);
        if (sqlite3_exec(s->db, bump, NULL, NULL, NULL) != SQLITE_OK)
            st = arb__store_fail_db(s, what);
    }
    /* RESET: off again, and this connection reads the edited definitions now */
    sqlite3_exec(s->db, "PRAGMA writable_schema = RESET", NULL, NULL, NULL);
    return st;
}

/* Migration 14's edit: all three CHECKs, or none when the definition is not migration 13's. */
static int edit_pairwise_checks(arb_store *s)
{
    static const char sql[] =
        "UPDATE sqlite_schema SET sql = replace(replace(replace(sql, ?1, ?2), ?3, ?4), ?5, ?6)"
        " WHERE type = 'table' AND name = 'pairwise' AND instr(sql, ?1) AND instr(sql, ?3)"
        " AND instr(sql, ?5)";
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &q, NULL);
    for (int i = 0; rc == SQLITE_OK && i < 3; i++) {
        arb__store_bind_text(q, 2 * i + 1, pairwise_checks[i][0]);
        arb__store_bind_text(q, 2 * i + 2, pairwise_checks[i][1]);
    }
    int edited = rc == SQLITE_OK && sqlite3_step(q) == SQLITE_DONE && sqlite3_changes(s->db) == 1;
    sqlite3_finalize(q);
    return edited;
}

static arb_status rewrite_pairwise_checks(arb_store *s)
{
    return edit_definitions(s, edit_pairwise_checks, "cannot rewrite the checks of pairwise");
}

/* Migration 15's edits of two definitions, made in place as migration 14's (the stored rows
** satisfy both forms): items loses its CHECK json_valid(extra) (~2,000 instructions a row;
** the store writes extra from the dataset's parser, valid JSON), and pairwise's comment on
** call_id says what checks it since schema 14 (the store on insert, arb__store_check_call,
** and the trigger on update). A definition that is not the one expected keeps its text. */
static const char *const schema_15_edits[][3] = {
    {"items",
     "  extra       TEXT NOT NULL DEFAULT '{}'     -- fields arbiter does not know\n"
     "              CONSTRAINT extra_is_json CHECK (json_valid(extra)),\n",
     "  extra       TEXT NOT NULL DEFAULT '{}',    -- fields arbiter does not know, as a JSON\n"
     "                                             -- object (the store writes valid JSON)\n"},
    {"pairwise",
     "                                             -- checked by the triggers below, not a\n",
     "                                             -- checked by the store on insert and by\n"
     "                                             -- the trigger below on update, not a\n"},
};

/* Migration 16's edits, in place as migration 14's (the stored rows satisfy both forms):
** pointwise's CHECKs on kind and task stated without IN lists, whose lists made SQLite clear a
** temporary b-tree for each of them on every row (~10,000 of the ~44,000 instructions of a
** grade judgment's row, callgrind, 2026-11-28), and its item_id without the foreign key to
** items, as pairwise_judgments' (a search of items a row; grade stores its dataset first, an
** import the items it names). */
static const char *const schema_16_edits[][3] = {
    {"pointwise", "CHECK (kind IN ('yesno', 'grade', 'grade10'))",
     "CHECK (kind = 'yesno' OR kind = 'grade' OR kind = 'grade10')"},
    {"pointwise", "CHECK (task IN ('qa', 'math', 'translation', 'summary', 'dialogue', 'generic'))",
     "CHECK (task = 'qa' OR task = 'math' OR task = 'translation'\n"
     "      OR task = 'summary' OR task = 'dialogue' OR task = 'generic')"},
    {"pointwise", "  item_id           TEXT NOT NULL REFERENCES items(id),\n",
     "  item_id           TEXT NOT NULL,           -- items.id: the store writes a judgment only\n"
     "                                             -- for an item it stored (not a foreign key)\n"},
};

/* The edits of a migration (table, old text, new text), each made where its old text is
** found. Returns how many definitions changed. */
static int edit_in_place(arb_store *s, const char *const (*edits)[3], size_t n)
{
    static const char sql[] = "UPDATE sqlite_schema SET sql = replace(sql, ?2, ?3)"
                              " WHERE type = 'table' AND name = ?1 AND instr(sql, ?2)";
    sqlite3_stmt *q = NULL;
    int edited = 0, rc = sqlite3_prepare_v2(s->db, sql, -1, &q, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
        for (int k = 0; k < 3; k++) arb__store_bind_text(q, k + 1, edits[i][k]);
        if (sqlite3_step(q) == SQLITE_DONE) edited += sqlite3_changes(s->db);
        sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    return edited;
}

static int edit_schema_15(arb_store *s)
{
    return edit_in_place(s, schema_15_edits, sizeof schema_15_edits / sizeof *schema_15_edits);
}

static int edit_schema_16(arb_store *s)
{
    return edit_in_place(s, schema_16_edits, sizeof schema_16_edits / sizeof *schema_16_edits);
}

static arb_status rewrite_schema_15(arb_store *s)
{
    return edit_definitions(s, edit_schema_15,
                            "cannot rewrite the definitions of items and pairwise");
}

static arb_status rewrite_schema_16(arb_store *s)
{
    return edit_definitions(s, edit_schema_16, "cannot rewrite the checks of pointwise");
}

static arb_status create_schema_tx(arb_store *s);

/* Creates or upgrades the schema with foreign keys off, as SQLite's way of changing a table
** asks (migration 13 rebuilds calls, which other tables refer to; the pragma is a no-op inside
** a transaction, so it is set around it). */
static arb_status create_schema(arb_store *s)
{
    sqlite3_exec(s->db, "PRAGMA foreign_keys = OFF", NULL, NULL, NULL);
    arb_status st = create_schema_tx(s);
    sqlite3_exec(s->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
    return st;
}

/* Creates the schema in one transaction, unless another process did it first. */
static arb_status create_schema_tx(arb_store *s)
{
    char *err = NULL;
    if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot create the schema");
    long long version = 0;
    if (pragma_int(s, "PRAGMA user_version", &version)) goto fail;
    if (version < STORE_SCHEMA_VERSION) {
        int rc = SQLITE_OK;
        if (version == 0) {
            /* a new store: the schema as the migrations leave it (store_fresh_schema.inc),
            ** migrated on from there; or from version 1 when a test asks */
            const char *const *sql = arb__store_stepwise_schema ? schema_sql : fresh_schema_sql;
            for (size_t i = 0; sql[i] && rc == SQLITE_OK; i++)
                rc = sqlite3_exec(s->db, sql[i], NULL, NULL, &err);
            version = arb__store_stepwise_schema ? 1 : FRESH_SCHEMA_VERSION;
        } else if (version < 13) {
            s->rows_rebuilt = 1;
        }
        /* The rewrites of migrations 11, 12, 14, 15 and 16 run right after their SQL, on the
        ** tables as that version has them (migration 13 changes the keys and pairwise after). */
        for (; version < STORE_SCHEMA_VERSION && rc == SQLITE_OK; version++) {
            rc = sqlite3_exec(s->db, migrations[version - 1], NULL, NULL, &err);
            const char *const *more = version + 1 == 13   ? migration_13_more
                                      : version + 1 == 16 ? migration_16_more
                                                          : NULL;
            for (size_t i = 0; more && more[i] && rc == SQLITE_OK; i++)
                rc = sqlite3_exec(s->db, more[i], NULL, NULL, &err);
            if (rc == SQLITE_OK && version + 1 == 11 && compact_stored_requests(s)) goto fail;
            if (rc == SQLITE_OK && version + 1 == 12 && compact_stored_texts(s)) goto fail;
            if (rc == SQLITE_OK && version + 1 == 14 && rewrite_pairwise_checks(s)) goto fail;
            if (rc == SQLITE_OK && version + 1 == 15 && rewrite_schema_15(s)) goto fail;
            if (rc == SQLITE_OK && version + 1 == 16 && rewrite_schema_16(s)) goto fail;
        }
        char pragmas[128];
        snprintf(pragmas, sizeof pragmas, "PRAGMA user_version = %d; PRAGMA application_id = %d;",
                 STORE_SCHEMA_VERSION, STORE_APPLICATION_ID);
        if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, pragmas, NULL, NULL, &err);
        if (rc != SQLITE_OK) {
            arb__store_fail(s, ARB_DB, "%s: cannot create or upgrade the schema: %s", s->path,
                            err ? err : sqlite3_errmsg(s->db));
            sqlite3_free(err);
            goto fail;
        }
    }
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        arb__store_fail_db(s, "cannot create the schema");
        goto fail;
    }
    return ARB_OK;
fail:
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return ARB_DB;
}

/* Returns the path given to arb_store_open (owned by the store). */
const char *arb__store_path(const arb_store *s) { return s->path; }

/* Returns nonzero when the path names an in-memory database, which a second connection would
** not share. */
int arb__store_is_memory(const arb_store *s)
{
    return !strcmp(s->path, ":memory:") || !strncmp(s->path, "file::memory:", 13) ||
           strstr(s->path, "mode=memory") != NULL;
}

/* Opens or creates the store. *out is set whenever the handle could be allocated, so that
** arb_store_errmsg() can explain a failure; the caller closes it either way. */
/* See arbiter.h. SQLITE_CONFIG_MEMSTATUS is refused (SQLITE_MISUSE) once SQLite is initialised,
** which is then reported and changes nothing. */
arb_status arb_store_setup_process(void)
{
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK ? ARB_OK : ARB_INVALID;
}

arb_status arb_store_open(const char *path, arb_store **out)
{
    if (!out) return ARB_INVALID;
    *out = NULL;
    arb_store *s = calloc(1, sizeof *s);
    if (!s) return ARB_NOMEM;
    *out = s;
    arb__buf_init(&s->pending_text, 0);
    arb__buf_init(&s->settled.content, 0);
    arb__buf_init(&s->setup_key, 0);
    s->leases.keys.key_size = ARB__CALL_KEY_BYTES;
    arb__buf_init(&s->pointwise_text, 0);
    if (!path || !*path) return arb__store_fail(s, ARB_INVALID, "no database path given");
    if (!(s->path = arb__strdup(path))) return arb__store_fail(s, ARB_NOMEM, "out of memory");

    /* Whether this open creates the file (arb_store_close_unused removes only such a file). */
    struct stat sb;
    s->created = !arb__store_is_memory(s) && strncmp(path, "file:", 5) != 0 &&
                 stat(path, &sb) != 0 && errno == ENOENT;
    /* NOMUTEX: a store is used by one thread at a time, so SQLite's own locking is waste. */
    int rc = sqlite3_open_v2(path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc != SQLITE_OK) {
        if (!s->db) return arb__store_fail(s, ARB_NOMEM, "%s: out of memory", path);
        return arb__store_fail(s, ARB_DB, "%s: cannot open: %s", path, sqlite3_errmsg(s->db));
    }
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, 10000);

    /* Identify the file with reads only: a file that is not ours is left untouched. */
    long long version = 0;
    arb_status st = check_identity(s, &version);
    if (st) return st;
    if (sqlite3_db_readonly(s->db, "main") == 1)
        return arb__store_fail(s, ARB_DB, "%s: is read-only; the store needs write access",
                               path);

    sqlite3_stmt *jm = NULL;
    rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &jm, NULL);
    /* Switching a new file to WAL needs it alone; when another process is creating the same
    ** store at this moment SQLite answers "locked" at once, without the busy handler (which
    ** could deadlock here), so wait for it as the busy timeout would. */
    for (int waited_ms = 0; rc == SQLITE_OK; waited_ms += 10) {
        rc = sqlite3_step(jm);
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) break;
        if (waited_ms >= 10000) break;
        sqlite3_reset(jm);
        rc = SQLITE_OK;
        struct timespec pause = {0, 10 * 1000000L};
        nanosleep(&pause, NULL);
    }
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(jm);
        return arb__store_fail_db(s, "cannot switch to WAL mode");
    }
    const char *mode = (const char *)sqlite3_column_text(jm, 0);
    /* An in-memory database (":memory:") reports "memory"; it has no crash to survive. */
    int acceptable = mode && (!strcmp(mode, "wal") || !strcmp(mode, "memory"));
    char mode_copy[32];
    snprintf(mode_copy, sizeof mode_copy, "%s", mode ? mode : "?");
    sqlite3_finalize(jm);
    if (!acceptable)
        return arb__store_fail(s, ARB_DB,
                               "%s: cannot use WAL mode (journal mode stays \"%s\"; is the file "
                               "on a network file system?)", path, mode_copy);
    /* temp_store = MEMORY: upserts and foreign-key checks inside a transaction each open a
    ** statement journal; kept in memory they cost about half the time of a file-backed
    ** temporary store (measured here: ~12k vs ~20k calls + judgments/s at 50 per
    ** transaction). */
    if (sqlite3_exec(s->db,
                     "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; "
                     "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -65536; "
                     /* Checkpoint every 64 MiB of WAL rather than 4 MiB: a judging run writes
                     ** tens of MB of requests, and each checkpoint costs an fsync. */
                     "PRAGMA wal_autocheckpoint = 16384; PRAGMA journal_size_limit = 67108864;",
                     NULL, NULL, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot set pragmas");

    if (!(s->reqz = arb__reqz_create(s->db)) || arb__reqz_register(s->reqz) ||
        !(s->textz = arb__textz_create(s->db)) || arb__textz_register(s->textz) ||
        sqlite3_create_function(s->db, "arb_call_key", 1,
                                SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, NULL,
                                sql_arb_call_key, NULL, NULL) != SQLITE_OK)
        return arb__store_fail(s, ARB_NOMEM, "%s: out of memory", path);
    sqlite3_commit_hook(s->db, refuse_commit_with_pending, s);
    sqlite3_rollback_hook(s->db, forget_pending_on_rollback, s);
    /* A migration rewrites whole tables in one statement: its statement journal goes to a
    ** temporary file, not to memory (it held ~0.9 GB migrating a 1 GB store). */
    if (version > 0 && version < STORE_SCHEMA_VERSION)
        sqlite3_exec(s->db, "PRAGMA temp_store = FILE", NULL, NULL, NULL);
    st = version < STORE_SCHEMA_VERSION ? create_schema(s) : ARB_OK;
    sqlite3_exec(s->db, "PRAGMA temp_store = MEMORY", NULL, NULL, NULL);
    if (st) {
        arb__reqz_forget(s->reqz);
        arb__textz_forget(s->textz);
        return st;
    }
    /* Compacting the requests of an old store leaves its pages mostly empty, and rebuilding
    ** its tables (migration 13) leaves the old ones' pages free: give them back to the file
    ** system once (a 1 GB store of 200,000 calls becomes ~0.25 GB). Best effort:
    ** with another process on the store it fails and the file keeps its size. The new file is
    ** built in a temporary file, not in memory (temp_store), so a large store needs no RAM. */
    if (s->compacted > 0 || s->texts_compacted > 0 || s->rows_rebuilt)
        sqlite3_exec(s->db, "PRAGMA temp_store = FILE; VACUUM; PRAGMA temp_store = MEMORY;",
                     NULL, NULL, NULL);

    for (int i = 0; i < ST__COUNT; i++) {
        rc = sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->stmt[i],
                                NULL);
        if (rc != SQLITE_OK)
            return arb__store_fail(s, ARB_DB, "%s: cannot prepare statement %d: %s", path, i,
                                   sqlite3_errmsg(s->db));
    }
    s->errmsg[0] = '\0';
    return ARB_OK;
}

/* Whether another process has the database open. In WAL mode every connection holds a
** shared lock on byte 128 of the -shm file (the DMS lock of SQLite's WAL file format) for as
** long as it is open, and F_GETLK reports the locks of other processes only. Returns 1 when
** another process holds it or when that cannot be told. Closing the descriptor drops this
** process's own locks on the file (POSIX), so it is called only just before removing it. */
static int open_elsewhere(const char *path)
{
    char *shm = arb__sprintf("%s-shm", path);
    if (!shm) return 1;
    int fd = open(shm, O_RDWR | O_CLOEXEC);
    free(shm);
    if (fd < 0) return 1;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 128, .l_len = 1};
    int held = fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type != F_UNLCK;
    close(fd);
    return held;
}

/* Whether every table of the store is empty; checked inside the caller's transaction. */
static int store_is_empty(arb_store *s)
{
    sqlite3_stmt *tables = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT name FROM sqlite_schema WHERE type = 'table'"
                           " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
                           -1, &tables, NULL) != SQLITE_OK)
        return 0;
    int empty = 1, rc = SQLITE_DONE;
    while (empty && (rc = sqlite3_step(tables)) == SQLITE_ROW) {
        char *sql = sqlite3_mprintf("SELECT EXISTS (SELECT 1 FROM \"%w\")",
                                    (const char *)sqlite3_column_text(tables, 0));
        sqlite3_stmt *q = NULL;
        empty = sql && sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) == SQLITE_OK &&
                sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) == 0;
        sqlite3_finalize(q);
        sqlite3_free(sql);
    }
    if (empty && rc != SQLITE_DONE) empty = 0;
    sqlite3_finalize(tables);
    return empty;
}

/* See arbiter.h. The emptiness check holds the write lock, so nothing is written meanwhile;
** the files are removed before the connection closes, so a process that opens the path after
** that creates a new store. */
int arb_store_close_unused(arb_store *store)
{
    if (!store) return 0;
    int removed = 0;
    if (store->created && store->db && sqlite3_get_autocommit(store->db) &&
        sqlite3_exec(store->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK) {
        if (store_is_empty(store) && !open_elsewhere(store->path)) {
            removed = unlink(store->path) == 0;
            static const char *const suffixes[] = {"-wal", "-shm", "-journal"};
            for (size_t i = 0; removed && i < sizeof suffixes / sizeof *suffixes; i++) {
                char *aux = arb__sprintf("%s%s", store->path, suffixes[i]);
                if (aux) unlink(aux);
                free(aux);
            }
        }
        sqlite3_exec(store->db, "ROLLBACK", NULL, NULL, NULL);
    }
    arb_store_close(store);
    return removed;
}

/* Closes the store, rolling back a transaction left open. Accepts NULL. */
void arb_store_close(arb_store *store)
{
    if (!store) return;
    if (store->db) {
        arb__store_rollback(store);
        for (int i = 0; i < ST__COUNT; i++) sqlite3_finalize(store->stmt[i]);
        arb__reqz_destroy(store->reqz);
        arb__textz_destroy(store->textz);
        for (int i = 0; i < PAIRWISE_SIZES; i++) {
            sqlite3_finalize(store->put_pairwise_group[i]);
            sqlite3_finalize(store->put_pointwise_group[i]);
        }
        sqlite3_finalize(store->find_group);
        for (int i = 0; i < 7; i++) sqlite3_finalize(store->persona[i]);
        sqlite3_close(store->db);
    }
    arb__buf_free(&store->pending_text);
    arb__buf_free(&store->settled.content);
    arb__buf_free(&store->pointwise_text);
    forget_endpoints(store);
    forget_setups(store);
    arb__buf_free(&store->setup_key);
    arb__keymap_free(&store->leases.keys);
    free(store->leases.batches);
    free(store->path);
    free(store);
}

/* Binds text or NULL. SQLITE_STATIC: every statement is reset before the caller's strings
** can go away. */
int arb__store_bind_text(sqlite3_stmt *st, int index, const char *text)
{
    if (!text) return sqlite3_bind_null(st, index);
    return sqlite3_bind_text(st, index, text, -1, SQLITE_STATIC);
}

/* The 16 bytes that key spells in 32 lowercase hex digits, into out; 0, or -1 when key is
** not such a text (it is then stored as text: nothing is lost, it only takes more room). */
static int call_key_bytes(const char *key, size_t n, unsigned char out[ARB__CALL_KEY_BYTES])
{
    /* a lowercase hex digit's value + 1; 0 for any other byte (a table: ~5 instructions a
    ** digit where the comparisons took ~16, and every call binds its key four times) */
    static const unsigned char digit[256] = {
        ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7,
        ['7'] = 8, ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14,
        ['e'] = 15, ['f'] = 16};
    if (n != 2 * ARB__CALL_KEY_BYTES) return -1;
    for (size_t i = 0; i < ARB__CALL_KEY_BYTES; i++) {
        unsigned hi = digit[(unsigned char)key[2 * i]], lo = digit[(unsigned char)key[2 * i + 1]];
        if (!hi || !lo) return -1;
        out[i] = (unsigned char)((hi - 1) << 4 | (lo - 1));
    }
    return 0;
}

/* See store_internal.h. The bytes are bound in an allocation of the C library's that SQLite
** frees at the next bind (free as the destructor): SQLITE_TRANSIENT would copy them into one of
** SQLite's own, whose allocator takes its memory mutex twice (~700 instructions a bind against
** ~150). The store's own statements bind without any allocation: bind_stmt_key. */
int arb__store_bind_key(sqlite3_stmt *st, int index, const char *key)
{
    unsigned char bytes[ARB__CALL_KEY_BYTES];
    if (!key) return sqlite3_bind_null(st, index);
    if (call_key_bytes(key, strlen(key), bytes))
        return sqlite3_bind_text(st, index, key, -1, SQLITE_STATIC);
    unsigned char *copy = malloc(sizeof bytes);
    if (!copy) return sqlite3_bind_blob(st, index, bytes, sizeof bytes, SQLITE_TRANSIENT);
    memcpy(copy, bytes, sizeof bytes);
    return sqlite3_bind_blob(st, index, copy, sizeof bytes, free);
}

/* arb__store_bind_key for the store's own statement s->stmt[which]: the key's bytes are kept
** in the store (s->key_bytes[which], one key parameter per statement) as long as the statement
** may read them, so SQLite binds them where they are (SQLITE_TRANSIENT copies them into an
** allocation of its own and frees it at the next bind: ~700 instructions a bind). */
static int bind_stmt_key(arb_store *s, int which, int index, const char *key)
{
    sqlite3_stmt *st = s->stmt[which];
    if (!key) return sqlite3_bind_null(st, index);
    if (call_key_bytes(key, strlen(key), s->key_bytes[which]))
        return sqlite3_bind_text(st, index, key, -1, SQLITE_STATIC);
    return sqlite3_bind_blob(st, index, s->key_bytes[which], ARB__CALL_KEY_BYTES, SQLITE_STATIC);
}

/* See store_internal.h. */
const char *arb__store_column_key(sqlite3_stmt *q, int col, char out[2 * ARB__CALL_KEY_BYTES + 1])
{
    static const char hex[] = "0123456789abcdef";
    if (sqlite3_column_type(q, col) != SQLITE_BLOB)
        return (const char *)sqlite3_column_text(q, col);
    const unsigned char *b = sqlite3_column_blob(q, col);
    int n = sqlite3_column_bytes(q, col);
    if (n != ARB__CALL_KEY_BYTES || !b) return NULL; /* not a key arbiter wrote */
    for (int i = 0; i < n; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[2 * n] = '\0';
    return out;
}

/* SQL arb_call_key(key): the key as stored since schema 13 (migration 13 rewrites the keys
** with it): 16 bytes for 32 hex digits, any other value unchanged. */
static void sql_arb_call_key(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    unsigned char bytes[ARB__CALL_KEY_BYTES];
    const char *key = sqlite3_value_type(argv[0]) == SQLITE_TEXT
                          ? (const char *)sqlite3_value_text(argv[0]) : NULL;
    if (key && !call_key_bytes(key, (size_t)sqlite3_value_bytes(argv[0]), bytes))
        sqlite3_result_blob(ctx, bytes, sizeof bytes, SQLITE_TRANSIENT);
    else
        sqlite3_result_value(ctx, argv[0]);
}

/* See store_internal.h. */
char *arb__store_column_text(sqlite3_stmt *q, int col, int *oom)
{
    const unsigned char *t = sqlite3_column_text(q, col);
    if (!t) return NULL;
    char *copy = arb__strdup((const char *)t);
    if (!copy) *oom = 1;
    return copy;
}

/* The items.extra text of an item: its unknown fields plus the task inputs of pointwise
** judging (METHODS §8: context, source, document, dialog) under their JSON names. They are
** kept there rather than in columns of their own (no migration): only pointwise judging reads
** them, from the dataset it runs on, and the store keeps them so a database says what was
** judged. Returns it->extra_json (borrowed) when the item has no task input, else a new
** string in *owned (caller frees); NULL when out of memory. */
static const char *item_extra(const arb_item *it, char **owned)
{
    const char *extra = it->extra_json ? it->extra_json : "{}";
    *owned = NULL;
    if (!it->context && !it->source_text && !it->document && !it->dialog) return extra;
    json_t *o = json_loads(extra, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    const struct {
        const char *name, *value;
    } task_inputs[] = {{"context", it->context},
                       {"source", it->source_text},
                       {"document", it->document},
                       {"dialog", it->dialog}};
    int bad = !o;
    for (size_t k = 0; !bad && k < sizeof task_inputs / sizeof *task_inputs; k++)
        if (task_inputs[k].value)
            bad = json_object_set_new(o, task_inputs[k].name, json_string(task_inputs[k].value));
    if (!bad) *owned = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return *owned;
}

/* Binds text as a compact text when the store's dictionary shortens it, else as TEXT (NULL for
** NULL). The blob is the codec's buffer of slot (SQLITE_STATIC: a row's compact texts take one
** slot each, and the row is stepped before the slots are used again); a copy (TRANSIENT) was
** ~540 of a text's instructions. */
static arb_status bind_compact_text(arb_store *s, sqlite3_stmt *q, int index, int slot,
                                    const char *text)
{
    const unsigned char *blob = NULL;
    size_t len = 0;
    int got = text ? arb__textz_encode(s->textz, slot, text, strlen(text), &blob, &len) : 0;
    if (got < 0)
        return arb__store_fail(s, ARB_DB, "cannot compress a text: %s",
                               arb__textz_errmsg(s->textz));
    if (got) sqlite3_bind_blob(q, index, blob, (int)len, SQLITE_STATIC);
    else arb__store_bind_text(q, index, text);
    return ARB_OK;
}

/* What stored_row_state finds. */
enum { ROW_FAILED = -1, ROW_ABSENT, ROW_CHANGED, ROW_SAME };

/* Whether the row q finds (stepped to by this function) holds exactly texts[0..n) in its
** columns 0..n-1, compact or not, and its other columns the ones given (column n is nonzero).
** ROW_SAME, ROW_CHANGED, ROW_ABSENT (no row), ROW_FAILED (store's error set). Resets q. */
static int stored_row_state(arb_store *s, sqlite3_stmt *q, const char *const *texts, int n)
{
    int rc = sqlite3_step(q), same = rc == SQLITE_ROW && sqlite3_column_int(q, n);
    int found = rc == SQLITE_ROW;
    for (int i = 0; same && i < n; i++) {
        int type = sqlite3_column_type(q, i);
        if (type == SQLITE_NULL || !texts[i]) {
            same = type == SQLITE_NULL && !texts[i];
        } else if (type == SQLITE_BLOB) {
            size_t len = 0;
            char *text = arb__textz_decode(s->textz, sqlite3_column_blob(q, i),
                                           (size_t)sqlite3_column_bytes(q, i), &len);
            if (!text) {
                arb__store_fail(s, ARB_DB, "cannot read a stored text: %s",
                                arb__textz_errmsg(s->textz));
                same = -1;
                break;
            }
            same = len == strlen(texts[i]) && !memcmp(text, texts[i], len);
            free(text);
        } else {
            same = type == SQLITE_TEXT && !strcmp((const char *)sqlite3_column_text(q, i),
                                                  texts[i]);
        }
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        arb__store_fail_db(s, "cannot read the stored dataset");
        same = -1;
    }
    sqlite3_reset(q);
    return same < 0 ? ROW_FAILED : same ? ROW_SAME : found ? ROW_CHANGED : ROW_ABSENT;
}

/* See internal.h. */
arb_status arb__store_train_texts(arb_store *s, const arb_dataset *items,
                                  const arb_dataset *answers)
{
    int have = arb__textz_has_dictionary(s->textz);
    if (have) return have < 0 ? arb__store_fail(s, ARB_DB, "cannot compress texts: %s",
                                                arb__textz_errmsg(s->textz))
                              : ARB_OK;
    size_t n_items = items ? arb_dataset_item_count(items) : 0;
    size_t n_answers = answers ? arb_dataset_answer_count(answers) : 0;
    const char **texts = malloc((3 * n_items + 2 * n_answers + 1) * sizeof *texts);
    if (!texts) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < n_items; i++) {
        const arb_item *it = arb_dataset_item(items, i);
        texts[n++] = it->question;
        texts[n++] = it->reference;
        texts[n++] = it->source;
    }
    for (size_t i = 0; i < n_answers; i++) {
        const arb_answer *a = arb_dataset_answer(answers, i);
        texts[n++] = a->answer;
        texts[n++] = a->source;
    }
    arb_status st = ARB_OK;
    if (arb__textz_train(s->textz, texts, n))
        st = arb__store_fail(s, ARB_DB, "cannot train the text dictionary: %s",
                             arb__textz_errmsg(s->textz));
    free(texts);
    return st;
}

/* Records the items of ds (borrowed), the i-th at position first_seq + i (items.seq). Runs in
** its own transaction unless the caller already holds one. An item without a question
** (pointwise items of some tasks) is stored with question '' (the column is NOT NULL); its task
** inputs go to extra. */
arb_status arb__store_put_items(arb_store *s, const arb_dataset *ds, size_t first_seq)
{
    if (!ds) return arb__store_fail(s, ARB_INVALID, "put_items: no dataset");
    int own_tx = sqlite3_get_autocommit(s->db);
    arb_status st = ARB_OK;
    if (own_tx && (st = arb__store_begin(s))) return st;
    char what[512];
    /* into a store without items nothing is there to compare with (a first run) */
    long long had_items = 1;
    if (pragma_int(s, "SELECT EXISTS (SELECT 1 FROM items)", &had_items)) {
        st = ARB_DB;
        goto done;
    }
    size_t n = arb_dataset_item_count(ds);
    for (size_t i = 0; i < n; i++) {
        const arb_item *it = arb_dataset_item(ds, i);
        sqlite3_stmt *q;
        char *extra_owned;
        const char *extra = item_extra(it, &extra_owned);
        if (!extra) {
            st = arb__store_fail(s, ARB_NOMEM, "out of memory");
            goto done;
        }
        int state = ROW_ABSENT;
        if (had_items) {
            sqlite3_stmt *same = s->stmt[ST_ITEM_TEXTS];
            arb__store_bind_text(same, 1, it->id);
            sqlite3_bind_int64(same, 2, (sqlite3_int64)(first_seq + i));
            arb__store_bind_text(same, 3, it->category);
            arb__store_bind_text(same, 4, it->language);
            arb__store_bind_text(same, 5, it->group);
            arb__store_bind_text(same, 6, extra);
            const char *item_texts[3] = {it->question ? it->question : "", it->reference,
                                         it->source};
            state = stored_row_state(s, same, item_texts, 3);
        }
        if (state == ROW_SAME || state == ROW_FAILED) {
            free(extra_owned);
            if (state == ROW_FAILED) {
                st = ARB_DB;
                goto done;
            }
            continue; /* stored as it is: nothing to write */
        }
        q = s->stmt[state == ROW_ABSENT ? ST_ADD_ITEM : ST_PUT_ITEM];
        arb__store_bind_text(q, 1, it->id);
        sqlite3_bind_int64(q, 2, (sqlite3_int64)(first_seq + i));
        if ((st = bind_compact_text(s, q, 3, 0, it->question ? it->question : "")) ||
            (st = bind_compact_text(s, q, 4, 1, it->reference))) {
            free(extra_owned);
            goto done;
        }
        arb__store_bind_text(q, 5, it->category);
        arb__store_bind_text(q, 6, it->language);
        arb__store_bind_text(q, 7, it->group);
        arb__store_bind_text(q, 8, extra);
        arb__store_bind_text(q, 9, it->source);
        /* the message is written only on failure: a snprintf per row was 3% of a rerun */
        int rc = sqlite3_step(q);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
            snprintf(what, sizeof what, "%s: cannot store item \"%s\"",
                     it->source ? it->source : "dataset", it->id ? it->id : "");
            st = arb__store_fail_db(s, what);
        }
        sqlite3_reset(q);
        free(extra_owned);
        if (st) goto done;
    }
    if (own_tx) st = arb__store_commit(s);
done:
    if (st && own_tx) arb__store_rollback(s);
    return st;
}

/* Records the answers of ds (borrowed) in its order; their items must be stored. Runs in its
** own transaction unless the caller already holds one. */
arb_status arb__store_put_answers(arb_store *s, const arb_dataset *ds)
{
    if (!ds) return arb__store_fail(s, ARB_INVALID, "put_answers: no dataset");
    int own_tx = sqlite3_get_autocommit(s->db);
    arb_status st = ARB_OK;
    if (own_tx && (st = arb__store_begin(s))) return st;
    char what[512];
    /* into a store without answers nothing is there to compare with (a first run) */
    long long had_answers = 1;
    if (pragma_int(s, "SELECT EXISTS (SELECT 1 FROM answers)", &had_answers)) {
        st = ARB_DB;
        goto done;
    }
    size_t n = arb_dataset_answer_count(ds);
    for (size_t i = 0; i < n; i++) {
        const arb_answer *a = arb_dataset_answer(ds, i);
        int state = ROW_ABSENT;
        if (had_answers) {
            sqlite3_stmt *same = s->stmt[ST_ANSWER_TEXTS];
            arb__store_bind_text(same, 1, a->item_id);
            arb__store_bind_text(same, 2, a->model);
            arb__store_bind_text(same, 3, a->extra_json ? a->extra_json : "{}");
            const char *answer_texts[2] = {a->answer, a->source};
            state = stored_row_state(s, same, answer_texts, 2);
        }
        if (state == ROW_FAILED) {
            st = ARB_DB;
            goto done;
        }
        if (state == ROW_SAME) continue; /* stored as it is: nothing to write */
        sqlite3_stmt *q = s->stmt[state == ROW_ABSENT ? ST_ADD_ANSWER : ST_PUT_ANSWER];
        arb__store_bind_text(q, 1, a->item_id);
        arb__store_bind_text(q, 2, a->model);
        if ((st = bind_compact_text(s, q, 3, 0, a->answer))) goto done;
        arb__store_bind_text(q, 5, a->source);
        arb__store_bind_text(q, 4, a->extra_json ? a->extra_json : "{}");
        int rc = sqlite3_step(q);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
            snprintf(what, sizeof what, "%s: cannot store the answer of \"%s\" to item \"%s\"",
                     a->source ? a->source : "dataset", a->model ? a->model : "",
                     a->item_id ? a->item_id : "");
            st = arb__store_fail_db(s, what);
        }
        sqlite3_reset(q);
        if (st) goto done;
    }
    if (own_tx) st = arb__store_commit(s);
done:
    if (st && own_tx) arb__store_rollback(s);
    return st;
}

/* Answers per block when an indexed dataset is stored (about 10 MB of the benchmark's texts, as
** ARB__DATASET_BLOCK_ITEMS items are). */
#define STORE_ANSWERS_BLOCK 65536

/* arb__store_put_dataset of an indexed dataset (arb_dataset_load_indexed): the same rows in the
** same order (the items in order, then the answers in the order of their file), its texts read
** again a block at a time, so storing it holds one block rather than every text. The caller
** holds the transaction. */
static arb_status put_indexed_dataset(arb_store *s, const arb_dataset *ds)
{
    arb_dataset *block = NULL, *first_answers = NULL;
    char *err = NULL;
    size_t n = arb_dataset_item_count(ds), na = arb_dataset_answer_count(ds);
    /* The text dictionary is trained from the first block of each file, as it would be from the
    ** whole dataset (store_texts.c takes at most 1 MB of samples anyway); the first answers
    ** block is kept until the answers are stored, so no block is read twice. */
    arb_status st = arb__dataset_answers_window(
        ds, 0, na < STORE_ANSWERS_BLOCK ? na : STORE_ANSWERS_BLOCK, &first_answers, &err);
    for (size_t i = 0; i < n && !st; i += ARB__DATASET_BLOCK_ITEMS) {
        size_t k = n - i < ARB__DATASET_BLOCK_ITEMS ? n - i : ARB__DATASET_BLOCK_ITEMS;
        if (!(st = arb__dataset_window(ds, i, k, NULL, 0, &block, &err)) && i == 0)
            st = arb__store_train_texts(s, block, first_answers);
        if (!st) st = arb__store_put_items(s, block, i);
        arb_dataset_destroy(block);
        block = NULL;
    }
    for (size_t i = 0; i < na && !st; i += STORE_ANSWERS_BLOCK) {
        size_t k = na - i < STORE_ANSWERS_BLOCK ? na - i : STORE_ANSWERS_BLOCK;
        if (i == 0) {
            st = arb__store_put_answers(s, first_answers);
            continue;
        }
        if (!(st = arb__dataset_answers_window(ds, i, k, &block, &err)))
            st = arb__store_put_answers(s, block);
        arb_dataset_destroy(block);
        block = NULL;
    }
    arb_dataset_destroy(first_answers);
    if (err) arb__store_fail(s, st, "%s", err);
    free(err);
    return st;
}

/* Records every item and answer of ds (borrowed; whole or indexed) in one transaction (unless
** the caller already holds one): the text dictionary trained from ds if the store has none,
** then arb__store_put_items from position 0, then arb__store_put_answers. */
arb_status arb__store_put_dataset(arb_store *s, const arb_dataset *ds)
{
    if (!ds) return arb__store_fail(s, ARB_INVALID, "put_dataset: no dataset");
    int own_tx = sqlite3_get_autocommit(s->db);
    arb_status st;
    if (own_tx && (st = arb__store_begin(s))) return st;
    if (arb__dataset_is_indexed(ds)) {
        st = put_indexed_dataset(s, ds);
    } else {
        st = arb__store_train_texts(s, ds, ds);
        if (!st) st = arb__store_put_items(s, ds, 0);
        if (!st) st = arb__store_put_answers(s, ds);
    }
    if (own_tx) {
        if (!st) st = arb__store_commit(s);
        if (st) arb__store_rollback(s);
    }
    return st;
}

/* Adds a number to a JSON object unless it is NAN ("not sent"). Returns 0 or -1 (no memory). */
static int set_real_if_defined(json_t *obj, const char *key, double value)
{
    if (isnan(value)) return 0;
    if (!isfinite(value)) return json_object_set_new(obj, key, json_null());
    return json_object_set_new(obj, key, json_real(value));
}

/* Records (upserts by name) the judge: base_url, model and the sampling parameters that are
** sent. The API key, and even the name of its variable, are not stored. */
/* A judge's name keys its rows, so one name must not mix two configurations: when the name
** already has judgments (pairwise, pointwise or persona scores), the model and sampling must be
** the ones they were made with (a
** temperature-1 rerun under the same name would silently replace the temperature-0 rows). */
static arb_status check_judge_unchanged(arb_store *s, const char *name, const char *model,
                                        const char *sampling)
{
    static const char sql[] =
        "SELECT model, sampling FROM judges WHERE name = ?1"
        " AND (EXISTS (SELECT 1 FROM pairwise WHERE judge_name = ?1)"
        " OR EXISTS (SELECT 1 FROM pointwise WHERE protocol = 'pointwise' AND judge_name = ?1)"
        " OR EXISTS (SELECT 1 FROM scores WHERE judge_name = ?1))";
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail(s, ARB_DB, "cannot read the judges: %s", sqlite3_errmsg(s->db));
    arb__store_bind_text(q, 1, name);
    arb_status st = ARB_OK;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        const char *old_model = (const char *)sqlite3_column_text(q, 0);
        const char *old_sampling = (const char *)sqlite3_column_text(q, 1);
        if (strcmp(old_model ? old_model : "", model) || strcmp(old_sampling ? old_sampling : "", sampling))
            st = arb__store_fail(s, ARB_INVALID,
                                 "judge \"%s\" already has judgments made with model %s and "
                                 "sampling %s; this run asks for model %s and sampling %s. Give "
                                 "this configuration its own --judge-name (e.g. %s@t1) so the two "
                                 "are not mixed",
                                 name, old_model ? old_model : "?", old_sampling ? old_sampling : "?",
                                 model, sampling, name);
    } else if (rc != SQLITE_DONE) {
        st = arb__store_fail(s, ARB_DB, "cannot read the judges: %s", sqlite3_errmsg(s->db));
    }
    sqlite3_finalize(q);
    return st;
}

/* The judge's sampling parameters as compact JSON with sorted keys (caller frees), or NULL when
** out of memory. Only what is sent is listed (§2.6). */
static char *sampling_json(const arb_sampling *sp)
{
    json_t *obj = json_object();
    if (!obj) return NULL;
    int bad = 0;
    if (sp->max_tokens > 0) bad |= json_object_set_new(obj, "max_tokens", json_integer(sp->max_tokens));
    bad |= set_real_if_defined(obj, "temperature", sp->temperature);
    bad |= set_real_if_defined(obj, "top_p", sp->top_p);
    bad |= set_real_if_defined(obj, "frequency_penalty", sp->frequency_penalty);
    if (sp->has_seed) bad |= json_object_set_new(obj, "seed", json_integer(sp->seed));
    if (sp->max_completion_tokens > 0)
        bad |= json_object_set_new(obj, "max_completion_tokens",
                                   json_integer(sp->max_completion_tokens));
    if (sp->reasoning_effort)
        bad |= json_object_set_new(obj, "reasoning_effort", json_string(sp->reasoning_effort));
    char *text = bad ? NULL : json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(obj);
    return text;
}

/* Refuses (ARB_INVALID, with a message) a judge whose name already has judgments made with
** another model or other sampling; see check_judge_unchanged. Writes nothing. */
arb_status arb__store_check_judge(arb_store *s, const arb_judge_config *judge)
{
    if (!judge || !judge->model)
        return arb__store_fail(s, ARB_INVALID, "check_judge: the judge has no model");
    char *sampling = sampling_json(&judge->sampling);
    if (!sampling) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    arb_status st = check_judge_unchanged(s, judge->name ? judge->name : judge->model,
                                          judge->model, sampling);
    free(sampling);
    return st;
}

/* Records the judge (upsert by name) after check_judge_unchanged; never the API key, and the
** URL without credentials (arb__url_redact). */
arb_status arb__store_put_judge(arb_store *s, const arb_judge_config *judge)
{
    if (!judge || !judge->model)
        return arb__store_fail(s, ARB_INVALID, "put_judge: the judge has no model");
    char *sampling = sampling_json(&judge->sampling);
    if (!sampling) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    arb_status st = check_judge_unchanged(s, judge->name ? judge->name : judge->model,
                                          judge->model, sampling);
    char *url = arb__url_redact(judge->base_url);
    if (!st && judge->base_url && !url) st = arb__store_fail(s, ARB_NOMEM, "out of memory");
    char *price = NULL;
    if (!st && judge->price.known) {
        json_t *pj = arb__json_price(&judge->price);
        price = pj ? json_dumps(pj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(pj);
        if (!price) st = arb__store_fail(s, ARB_NOMEM, "out of memory");
    }
    if (!st) {
        sqlite3_stmt *q = s->stmt[ST_PUT_JUDGE];
        arb__store_bind_text(q, 1, judge->name ? judge->name : judge->model);
        arb__store_bind_text(q, 2, url);
        arb__store_bind_text(q, 3, judge->model);
        arb__store_bind_text(q, 4, sampling);
        arb__store_bind_text(q, 5, price);
        st = arb__store_step_done(s, q, "cannot store the judge");
    }
    if (!st) st = arb__store_put_judge_families(s, judge);
    free(price);
    free(url);
    free(sampling);
    return st;
}

/* ---- compact requests (store_requests.c) ---------------------------------------------------- */

static void drop_pending(arb_store *s)
{
    pending_call *p = &s->call_pending;
    free(p->key);
    free(p->model);
    free(p->request);
    *p = (pending_call){0};
}

/* Refs of a request: at most this many (a pointwise template that shows the question more
** often keeps the other places in its template, which is then compressed). */
#define CALL_REFS 6

/* The references of a request that contains t's texts, into refs; returns how many. Pairwise:
** the question and two answers (all three given, or all read). Pointwise: the question as
** often as the request shows it, then the answer when it is a stored one. */
static size_t texts_refs(const arb__call_texts *t, arb__request_ref refs[CALL_REFS])
{
    if (t->pointwise) {
        size_t n = 0;
        for (int k = 0; t->question && k < t->questions && n < CALL_REFS - 1; k++)
            refs[n++] = (arb__request_ref){t->item_id, NULL, t->question};
        if (t->first_model && t->first_answer)
            refs[n++] = (arb__request_ref){t->item_id, t->first_model, t->first_answer};
        return n;
    }
    int given = t->question && t->first_answer && t->second_answer;
    refs[0] = (arb__request_ref){t->item_id, NULL, given ? t->question : NULL};
    refs[1] = (arb__request_ref){t->item_id, t->first_model, given ? t->first_answer : NULL};
    refs[2] = (arb__request_ref){t->item_id, t->second_model, given ? t->second_answer : NULL};
    return 3;
}

/* p's request as a compact request referring to refs: *blob (caller frees), or NULL when the
** request is better kept as TEXT. */
static arb_status encode_call(arb_store *s, const pending_call *p, const arb__request_ref *refs,
                              size_t n_refs, unsigned char **blob, size_t *len)
{
    int got = arb__reqz_encode(s->reqz, p->model, p->request, p->asks_logprobs, refs, n_refs,
                               blob, len);
    if (got >= 0) return ARB_OK;
    return arb__store_fail(s, ARB_DB, "cannot compact the request of call %s: %s", p->key,
                           arb__reqz_errmsg(s->reqz));
}

/* Rewrites the pending call's request as a compact request referring to refs, then forgets
** it. A request better kept as TEXT stays as it is. */
static arb_status compact_pending(arb_store *s, const arb__request_ref *refs, size_t n_refs)
{
    pending_call *p = &s->call_pending;
    if (!p->id) return ARB_OK;
    unsigned char *blob = NULL;
    size_t len = 0;
    arb_status st = encode_call(s, p, refs, n_refs, &blob, &len);
    if (!st) {
        sqlite3_stmt *q = s->stmt[ST_COMPACT_CALL];
        sqlite3_bind_int64(q, 1, p->id);
        if (blob) sqlite3_bind_blob(q, 2, blob, (int)len, SQLITE_STATIC);
        else arb__store_bind_text(q, 2, p->request); /* short: kept as TEXT */
        bind_stmt_key(s, ST_COMPACT_CALL, 3, p->key);
        st = arb__store_step_done(s, q, "cannot store a request");
    }
    free(blob);
    drop_pending(s);
    return st;
}

/* The pending call has no pairwise row (pointwise, dialogue turns, imports...): its request is
** written as TEXT. */
static arb_status flush_pending(arb_store *s) { return compact_pending(s, NULL, 0); }

/* The commit hook: a transaction must not commit while a call's request is still pending (its
** row holds a placeholder); arb__store_commit writes it first. Any other commit is turned
** into a rollback (SQLite's rule for a nonzero return), so nothing half-stored survives. */
static int refuse_commit_with_pending(void *ud)
{
    const arb_store *s = ud;
    return s->call_pending.id != 0;
}

/* The rollback hook: whatever rolled the transaction back, its pending call is gone. */
static void forget_pending_on_rollback(void *ud)
{
    arb_store *s = ud;
    drop_pending(s);
    s->settled.id = 0;
    arb__reqz_forget(s->reqz);
    forget_endpoints(s);
    forget_setups(s);
}

/* Makes the call just stored the pending one (copies its strings). */
static arb_status set_pending(arb_store *s, long long id, const arb__call_record *rec)
{
    arb_status st = flush_pending(s);
    if (st || !rec->request_json) return st;
    pending_call *p = &s->call_pending;
    p->key = arb__strdup(rec->key);
    p->model = arb__strdup(rec->model ? rec->model : "");
    p->request = arb__strdup(rec->request_json);
    p->asks_logprobs = rec->built ? rec->asks_logprobs : -1;
    if (!p->key || !p->model || !p->request) {
        drop_pending(s);
        return arb__store_fail(s, ARB_NOMEM, "out of memory");
    }
    p->id = id;
    return ARB_OK;
}

/* Stores the call (see the invariants at the top). *call_id gets the id of the row that now
** holds the key: the new or updated row, or the successful call already there. */
arb_status arb__store_put_call(arb_store *s, const arb__call_record *rec, long long *call_id)
{
    return arb__store_settle_call(s, rec, call_id, NULL, NULL);
}

static void bind_call_rest(sqlite3_stmt *q, const arb__call_record *rec, long long prompt_chars,
                           long long endpoint);

/* Binds rec to the parameters of CALL_INSERT in s->stmt[which]: the request itself, or
** (deferred) an empty placeholder, and its prompt length (-1: NULL). */
static void bind_call(arb_store *s, int which, const arb__call_record *rec, int deferred,
                      long long prompt_chars, long long endpoint)
{
    sqlite3_stmt *q = s->stmt[which];
    bind_stmt_key(s, which, 1, rec->key);
    arb__store_bind_text(q, 2, rec->judge_name);
    arb__store_bind_text(q, 3, rec->model);
    if (deferred) sqlite3_bind_zeroblob(q, 4, 0);
    else arb__store_bind_text(q, 4, rec->request_json);
    bind_call_rest(q, rec, prompt_chars, endpoint);
}

/* Binds rec to CALL_INSERT as bind_call, with the request already compact: blob (NULL: the
** request kept as TEXT). */
static void bind_call_compact(arb_store *s, int which, const arb__call_record *rec,
                              const unsigned char *blob, size_t len, long long prompt_chars,
                              long long endpoint)
{
    sqlite3_stmt *q = s->stmt[which];
    bind_stmt_key(s, which, 1, rec->key);
    arb__store_bind_text(q, 2, rec->judge_name);
    arb__store_bind_text(q, 3, rec->model);
    if (blob) sqlite3_bind_blob(q, 4, blob, (int)len, SQLITE_STATIC);
    else arb__store_bind_text(q, 4, rec->request_json);
    bind_call_rest(q, rec, prompt_chars, endpoint);
}

/* Parameters 5.. of CALL_INSERT; endpoint is the endpoints.id of rec->endpoint (0: NULL). */
static void bind_call_rest(sqlite3_stmt *q, const arb__call_record *rec, long long prompt_chars,
                           long long endpoint)
{
    sqlite3_bind_int(q, 5, rec->rep);
    sqlite3_bind_int(q, 6, rec->ok ? 1 : 0);
    arb__store_bind_text(q, 7, rec->content);
    arb__store_bind_text(q, 8, rec->raw_reply);
    arb__store_bind_text(q, 9, rec->error);
    if (rec->http_status > 0) sqlite3_bind_int64(q, 10, rec->http_status);
    else sqlite3_bind_null(q, 10);
    sqlite3_bind_int(q, 11, rec->attempts);
    if (rec->prompt_tokens >= 0) sqlite3_bind_int64(q, 12, rec->prompt_tokens);
    else sqlite3_bind_null(q, 12);
    if (rec->completion_tokens >= 0) sqlite3_bind_int64(q, 13, rec->completion_tokens);
    else sqlite3_bind_null(q, 13);
    if (isfinite(rec->latency_ms)) sqlite3_bind_double(q, 14, rec->latency_ms);
    else sqlite3_bind_null(q, 14);
    if (rec->reasoning_tokens >= 0) sqlite3_bind_int64(q, 15, rec->reasoning_tokens);
    else sqlite3_bind_null(q, 15);
    if (rec->cached_tokens >= 0) sqlite3_bind_int64(q, 16, rec->cached_tokens);
    else sqlite3_bind_null(q, 16);
    if (isfinite(rec->cost_usd)) sqlite3_bind_double(q, 17, rec->cost_usd);
    else sqlite3_bind_null(q, 17);
    arb__store_bind_text(q, 18, rec->reasoning);
    arb__store_bind_text(q, 19, rec->logprobs);
    if (endpoint > 0) sqlite3_bind_int64(q, 20, endpoint);
    else sqlite3_bind_null(q, 20);
    if (prompt_chars >= 0) sqlite3_bind_int64(q, 21, prompt_chars);
    else sqlite3_bind_null(q, 21);
    sqlite3_bind_int64(q, 22, unix_ms_now());
}

/* The id of url in endpoints (added when new) in *id; 0 for a NULL url. The ids a run uses
** are cached in the store, so a call costs no statement for its endpoint; a rollback forgets
** them (it may have taken a new row away). ARB_OK or ARB_DB. */
static arb_status endpoint_id(arb_store *s, const char *url, long long *id)
{
    *id = 0;
    if (!url) return ARB_OK;
    for (size_t i = 0; i < s->n_endpoints; i++)
        if (!strcmp(s->endpoints[i].url, url)) {
            *id = s->endpoints[i].id;
            return ARB_OK;
        }
    static const char find_sql[] = "SELECT id FROM endpoints WHERE url = ?1";
    static const char add_sql[] = "INSERT INTO endpoints(url) VALUES (?1)";
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, find_sql, -1, &q, NULL);
    if (rc == SQLITE_OK) {
        arb__store_bind_text(q, 1, url);
        rc = sqlite3_step(q);
        if (rc == SQLITE_ROW) *id = sqlite3_column_int64(q, 0);
    }
    sqlite3_finalize(q);
    if (rc == SQLITE_DONE) {
        q = NULL;
        rc = sqlite3_prepare_v2(s->db, add_sql, -1, &q, NULL);
        if (rc == SQLITE_OK) {
            arb__store_bind_text(q, 1, url);
            rc = sqlite3_step(q);
        }
        sqlite3_finalize(q);
        if (rc == SQLITE_DONE) *id = sqlite3_last_insert_rowid(s->db);
    }
    if (!*id)
        return arb__store_fail(s, ARB_DB, "cannot record endpoint %s: %s", url,
                               sqlite3_errmsg(s->db));
    char *copy = s->n_endpoints < ENDPOINTS_CACHED ? arb__strdup(url) : NULL;
    if (copy) s->endpoints[s->n_endpoints++] = (struct endpoint_cached){copy, *id};
    return ARB_OK;
}

/* Empties the cache of endpoint_id. */
static void forget_endpoints(arb_store *s)
{
    for (size_t i = 0; i < s->n_endpoints; i++) free(s->endpoints[i].url);
    s->n_endpoints = 0;
}

/* Remembers the call just inserted as row id, as a judgment's digest row reads it (see
** arb_store.settled). 0, or -1 out of memory. */
static int note_settled(arb_store *s, long long id, const arb__call_record *rec)
{
    s->settled.id = 0;
    s->settled.ok = rec->ok ? 1 : 0;
    s->settled.keyed = !call_key_bytes(rec->key, strlen(rec->key), s->settled.key);
    s->settled.has_content = rec->content != NULL;
    arb__buf_reset(&s->settled.content);
    if (rec->content && arb__buf_puts(&s->settled.content, rec->content)) return -1;
    s->settled.id = id;
    return 0;
}

/* See internal.h. kept and stored_content may be NULL. */
arb_status arb__store_settle_call(arb_store *s, const arb__call_record *rec, long long *call_id,
                                  int *kept, char **stored_content)
{
    if (kept) *kept = 0;
    if (stored_content) *stored_content = NULL;
    s->settled.id = 0;
    if (!rec || !rec->key)
        return arb__store_fail(s, ARB_INVALID, "put_call: the call has no key");
    /* A new key, the common case, is inserted by ST_PUT_NEW_CALL; a key already there (a
    ** failed call retried, or a successful one that stays) goes to ST_PUT_CALL as before. */
    long long prompt_chars = rec->request_json && rec->built ? rec->prompt_chars : -1;
    if (prompt_chars < 0 && arb__reqz_prompt_chars(s->reqz, rec->request_json, &prompt_chars))
        return arb__store_fail(s, ARB_DB, "cannot store call %s: %s", rec->key,
                               arb__reqz_errmsg(s->reqz));
    long long endpoint = 0;
    if (endpoint_id(s, rec->endpoint, &endpoint)) return ARB_DB;
    /* Inside a transaction the row gets an empty placeholder and the request waits in
    ** s->call_pending until it is written compact (before the commit at the latest): writing
    ** it whole, then compact, would leave the pages of calls mostly empty. */
    int deferred = rec->request_json && !sqlite3_get_autocommit(s->db);
    sqlite3_stmt *q = s->stmt[ST_PUT_NEW_CALL];
    unsigned char *blob = NULL;
    size_t blob_len = 0;
    if (deferred && rec->texts) {
        /* Its texts are known: a new call's row is written once, compact (the pending call
        ** before it is written first, so rows are written in the same order). */
        arb_status st = flush_pending(s);
        if (st) return st;
        arb__request_ref refs[CALL_REFS];
        size_t n_refs = texts_refs(rec->texts, refs);
        pending_call p = {0, (char *)rec->key, (char *)(rec->model ? rec->model : ""),
                          (char *)rec->request_json, rec->built ? rec->asks_logprobs : -1};
        if (encode_call(s, &p, refs, n_refs, &blob, &blob_len)) return ARB_DB;
        bind_call_compact(s, ST_PUT_NEW_CALL, rec, blob, blob_len, prompt_chars, endpoint);
    } else {
        bind_call(s, ST_PUT_NEW_CALL, rec, deferred, prompt_chars, endpoint);
    }
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    free(blob);
    if (rc != SQLITE_DONE) {
        arb__store_fail(s, ARB_DB, "cannot store call %s: %s", rec->key, sqlite3_errmsg(s->db));
        return ARB_DB;
    }
    if (sqlite3_changes(s->db) == 1) {
        long long id = sqlite3_last_insert_rowid(s->db);
        if (note_settled(s, id, rec)) return arb__store_fail(s, ARB_NOMEM, "out of memory");
        if (call_id) *call_id = id;
        if (s->in_tx) s->tx_call_id = id;
        return deferred && !rec->texts ? set_pending(s, id, rec) : ARB_OK;
    }
    s->settled.id = 0; /* the key was there: not a new row */
    q = s->stmt[ST_PUT_CALL];
    bind_call(s, ST_PUT_CALL, rec, deferred, prompt_chars, endpoint);
    rc = sqlite3_step(q);
    long long id = 0;
    int have_id = 0;
    if (rc == SQLITE_ROW) {
        id = sqlite3_column_int64(q, 0);
        have_id = 1;
        rc = sqlite3_step(q); /* finish the statement so the write is complete */
    }
    if (rc != SQLITE_DONE) {
        arb__store_fail(s, ARB_DB, "cannot store call %s: %s", rec->key, sqlite3_errmsg(s->db));
        sqlite3_reset(q);
        return ARB_DB;
    }
    sqlite3_reset(q);
    if (have_id && deferred) { /* outside a transaction the request stays TEXT */
        arb_status st = set_pending(s, id, rec);
        arb__request_ref refs[CALL_REFS];
        if (!st && rec->texts) /* a failed call retried: compact now, as a new one would be */
            st = compact_pending(s, refs, texts_refs(rec->texts, refs));
        if (st) return st;
    } else if (!have_id) { /* a successful call holds the key and stays */
        int found = 0;
        arb_status st = arb__store_find_call(s, rec->key, &found, &id, stored_content);
        if (st) return st;
        if (!found)
            return arb__store_fail(s, ARB_DB, "cannot find call %s: vanished", rec->key);
        if (kept) *kept = 1;
    }
    if (call_id) *call_id = id;
    if (s->in_tx) s->tx_call_id = id;
    return ARB_OK;
}

/* Looks up a successful call by key. When found, *call_id and *content (caller frees with
** arb_free; NULL when the reply had no text) are set; otherwise *found = 0. */
arb_status arb__store_find_call(arb_store *s, const char *key, int *found, long long *call_id,
                                char **content)
{
    return arb__store_find_call_spend(s, key, found, call_id, content, NULL);
}

/* Reads a stored call's row from column first of q: id, content, prompt_tokens,
** completion_tokens, cost_usd, into what is not NULL (unknown tokens -1, unknown cost NaN; the
** content a copy). 0, or -1 when the copy ran out of memory. Shared by the one-key lookup and a
** claim's group lookup (find_claimed). */
static int read_stored_call(sqlite3_stmt *q, int first, long long *call_id, char **content,
                            arb__call_spend *spend)
{
    if (call_id) *call_id = sqlite3_column_int64(q, first);
    if (spend) {
        spend->prompt_tokens = sqlite3_column_type(q, first + 2) == SQLITE_NULL
                                   ? -1 : sqlite3_column_int64(q, first + 2);
        spend->completion_tokens = sqlite3_column_type(q, first + 3) == SQLITE_NULL
                                       ? -1 : sqlite3_column_int64(q, first + 3);
        spend->cost_usd = sqlite3_column_type(q, first + 4) == SQLITE_NULL
                              ? NAN : sqlite3_column_double(q, first + 4);
    }
    const unsigned char *text = sqlite3_column_text(q, first + 1);
    if (!content || !text) return 0;
    *content = arb__strndup((const char *)text, (size_t)sqlite3_column_bytes(q, first + 1));
    return *content ? 0 : -1;
}

/* See internal.h. */
arb_status arb__store_find_call_spend(arb_store *s, const char *key, int *found,
                                      long long *call_id, char **content, arb__call_spend *spend)
{
    *found = 0;
    if (content) *content = NULL;
    if (!key) return arb__store_fail(s, ARB_INVALID, "find_call: no key");
    sqlite3_stmt *q = s->stmt[ST_FIND_CALL];
    bind_stmt_key(s, ST_FIND_CALL, 1, key);
    arb_status st = ARB_OK;
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *found = 1;
        if (read_stored_call(q, 0, call_id, content, spend)) {
            *found = 0;
            st = arb__store_fail(s, ARB_NOMEM, "out of memory");
        }
    } else if (rc != SQLITE_DONE) {
        st = arb__store_fail(s, ARB_DB, "cannot look up call %s: %s", key,
                             sqlite3_errmsg(s->db));
    }
    sqlite3_reset(q);
    return st;
}

/* Binds row to the PAIRWISE_COLUMNS parameters after first (1 for the first row: ?1 is the
** statement's judged_at), its setup as setup_id. pv and mv hold the verdicts as strings and
** must outlive the statement's step. */
static void bind_pairwise(sqlite3_stmt *q, int first, long long setup_id,
                          const arb__pairwise_row *row, const char pv[2], const char mv[2])
{
    sqlite3_bind_int64(q, first + 1, setup_id);
    arb__store_bind_text(q, first + 2, row->item_id);
    sqlite3_bind_int(q, first + 3, row->order);
    sqlite3_bind_int(q, first + 4, row->rep);
    arb__store_bind_text(q, first + 5, pv);
    arb__store_bind_text(q, first + 6, mv);
    if (row->call_id > 0) sqlite3_bind_int64(q, first + 7, row->call_id);
    else sqlite3_bind_null(q, first + 7);
}

/* Fails with a message that names the row and says why. */
static arb_status pairwise_refused(arb_store *s, const arb__pairwise_row *row, const char *why)
{
    return arb__store_fail(s, ARB_DB, "cannot store the judgment of item \"%s\" (%s vs %s, "
                           "order %d, rep %d): %s", row->item_id ? row->item_id : "",
                           row->candidate ? row->candidate : "",
                           row->baseline ? row->baseline : "", row->order, row->rep, why);
}

static void forget_setups(arb_store *s)
{
    for (size_t i = 0; i < s->n_setups; i++) free(s->setups[i].key);
    s->n_setups = s->next_setup = 0;
}

/* The id of row's setup in pairwise_setups (protocol, judge, pair, template, options), stored
** when new. Cached: a run writes all its judgments in a few setups. A setup is never deleted;
** one stored in a transaction that rolls back is forgotten (forget_pending_on_rollback). */
static arb_status pairwise_setup(arb_store *s, const arb__pairwise_row *row, long long *id,
                                 int *fresh)
{
    const char *texts[5] = {row->protocol, row->judge_name, row->candidate, row->baseline,
                            row->template_name};
    arb__buf *k = &s->setup_key;
    arb__buf_reset(k);
    int bad = 0;
    for (int i = 0; i < 5; i++)
        bad |= texts[i] ? arb__buf_append(k, texts[i], strlen(texts[i]) + 1)
                        : arb__buf_append(k, "\1", 1); /* NULL: unlike any text */
    /* the mode's bytes as they are: the key lives in this cache only, and formatting it with
    ** printf was ~1,500 instructions a judgment, more than the rest of the look-up */
    bad |= arb__buf_append(k, &row->options, sizeof row->options);
    if (bad) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    for (size_t i = 0; i < s->n_setups; i++)
        if (s->setups[i].len == k->len && !memcmp(s->setups[i].key, k->data, k->len)) {
            *id = s->setups[i].id;
            *fresh = s->setups[i].fresh;
            return ARB_OK;
        }
    sqlite3_stmt *find = s->stmt[ST_FIND_SETUP], *add = s->stmt[ST_ADD_SETUP];
    for (int i = 0; i < 5; i++) {
        arb__store_bind_text(find, i + 1, texts[i]);
        arb__store_bind_text(add, i + 1, texts[i]);
    }
    sqlite3_bind_int(find, 6, row->options);
    sqlite3_bind_int(add, 6, row->options);
    int rc = sqlite3_step(find);
    *id = rc == SQLITE_ROW ? sqlite3_column_int64(find, 0) : 0;
    sqlite3_reset(find);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return pairwise_refused(s, row, sqlite3_errmsg(s->db));
    *fresh = rc == SQLITE_DONE;
    if (rc == SQLITE_DONE) {
        rc = sqlite3_step(add);
        arb_status st =
            rc == SQLITE_DONE ? ARB_OK : pairwise_refused(s, row, sqlite3_errmsg(s->db));
        sqlite3_reset(add);
        if (st) return st;
        *id = sqlite3_last_insert_rowid(s->db);
    } else { /* a setup stored before: whether it holds judgments (once per look-up; an
              ** error reads as "holds some", which only breaks the writer's tally) */
        sqlite3_stmt *q = s->stmt[ST_SETUP_HAS_JUDGMENTS];
        sqlite3_bind_int64(q, 1, *id);
        *fresh = sqlite3_step(q) == SQLITE_DONE;
        sqlite3_reset(q);
    }
    char *key = malloc(k->len);
    if (!key) return ARB_OK; /* not cached: found again next time */
    memcpy(key, k->data, k->len);
    size_t slot = s->n_setups;
    if (slot < SETUPS_CACHED) {
        s->n_setups++;
    } else {
        slot = s->next_setup++ % SETUPS_CACHED;
        free(s->setups[slot].key);
    }
    s->setups[slot] = (struct setup_cached){key, k->len, *id, *fresh};
    return ARB_OK;
}

/* Inserts (or updates) one judgment at once; the message of a refusal names the row. */
static arb_status put_pairwise_now(arb_store *s, const arb__pairwise_row *row, long long setup)
{
    char pv[2] = {row->position_verdict, 0}, mv[2] = {row->model_verdict, 0};
    sqlite3_stmt *q = s->stmt[ST_PUT_PAIRWISE];
    bind_pairwise(q, 1, setup, row, pv, mv);
    sqlite3_bind_int64(q, 1, unix_ms_now());
    int rc = sqlite3_step(q);
    arb_status st = ARB_OK;
    if (rc != SQLITE_DONE) st = pairwise_refused(s, row, sqlite3_errmsg(s->db));
    sqlite3_reset(q);
    return st;
}

/* See store_internal.h. */
arb_status arb__store_check_call(arb_store *s, long long call_id, int *exists)
{
    *exists = 1;
    if (call_id <= 0 || (s->in_tx && call_id == s->tx_call_id)) return ARB_OK;
    sqlite3_stmt *q = s->stmt[ST_CALL_EXISTS];
    sqlite3_bind_int64(q, 1, call_id);
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return arb__store_fail_db(s, "cannot look up a call");
    *exists = rc == SQLITE_ROW;
    return ARB_OK;
}

/* The waiting judgment i as a row (strings borrowed from s->pending_text). */
static arb__pairwise_row pending_row(const arb_store *s, size_t i)
{
    const pending_pairwise *p = &s->pending[i];
    const char *t[PAIRWISE_TEXTS];
    for (int k = 0; k < PAIRWISE_TEXTS; k++)
        t[k] = p->text[k] == SIZE_MAX ? NULL : s->pending_text.data + p->text[k];
    return (arb__pairwise_row){.protocol = t[0], .judge_name = t[1], .item_id = t[2],
                               .candidate = t[3], .baseline = t[4], .template_name = t[5],
                               .options = p->options, .order = p->order, .rep = p->rep,
                               .position_verdict = p->verdict[0][0],
                               .model_verdict = p->verdict[1][0], .call_id = p->call_id};
}

/* The statement in *q that inserts PAIRWISE_GROUP >> 2 * size_index rows of so many columns
** (insert, the rows' parameters, then upsert), prepared on first use; NULL when it cannot be
** prepared (the rows then go in one by one). shared 1: every row ends with ?1, one value for
** all rows (pairwise's judged_at), and the rows' own parameters start at ?2. */
static sqlite3_stmt *group_stmt(arb_store *s, sqlite3_stmt **q, int size_index,
                                const char *insert, int columns, int shared, const char *upsert)
{
    if (*q) return *q;
    int rows = PAIRWISE_GROUP >> 2 * size_index;
    arb__buf sql;
    arb__buf_init(&sql, 0);
    int bad = arb__buf_puts(&sql, insert);
    for (int r = 0; r < rows; r++) {
        bad |= arb__buf_puts(&sql, r ? ", (" : "(");
        for (int c = 1; c <= columns; c++)
            bad |= arb__buf_printf(&sql, c > 1 ? ", ?%d" : "?%d", shared + r * columns + c);
        bad |= arb__buf_puts(&sql, shared ? ", ?1)" : ")"); /* ?1: the rows' shared time */
    }
    bad |= arb__buf_puts(&sql, upsert);
    if (bad || sqlite3_prepare_v3(s->db, sql.data, -1, SQLITE_PREPARE_PERSISTENT, q, NULL) !=
                   SQLITE_OK) {
        sqlite3_finalize(*q);
        *q = NULL;
    }
    arb__buf_free(&sql);
    return *q;
}

/* A table whose rows wait in a group (see PAIRWISE_GROUP): its statements' SQL, and how to
** bind the waiting row i after parameter first, or insert it alone (naming it when refused). */
typedef struct row_group {
    const char *insert, *upsert, *what;
    int columns;
    int shared_time; /* ?1 is the rows' time, bound once (bind_now, see group_stmt), as
                        TIME_MS or TIME_ISO; 0: no shared time */
    void (*bind)(arb_store *s, sqlite3_stmt *q, int first, size_t i);
    arb_status (*put_one)(arb_store *s, size_t i);
} row_group;

/* Inserts the n rows waiting in their group, in the order they were put, by statements of
** PAIRWISE_GROUP, then a quarter and a sixteenth of it (stmts: their slots), the last few one by
** one. When a statement of several rows is refused it has changed nothing, and from there the
** rows go in one by one, so the message names the row that fails and the rows before it are
** written as they would have been. */
static arb_status flush_group(arb_store *s, const row_group *g, sqlite3_stmt **stmts, size_t n)
{
    size_t i = 0;
    arb_status st = ARB_OK;
    while (!st && n - i >= PAIRWISE_GROUP >> 2 * (PAIRWISE_SIZES - 1)) {
        int k = 0;
        while ((size_t)(PAIRWISE_GROUP >> 2 * k) > n - i) k++;
        size_t rows = (size_t)(PAIRWISE_GROUP >> 2 * k);
        int shared = g->shared_time != 0; /* ?1, before the rows' parameters */
        sqlite3_stmt *q = group_stmt(s, &stmts[k], k, g->insert, g->columns, shared,
                                     g->upsert);
        if (!q) break;
        for (size_t r = 0; r < rows; r++)
            g->bind(s, q, shared + (int)r * g->columns, i + r);
        if (g->shared_time) bind_now(q, 1, g->shared_time);
        int rc = sqlite3_step(q);
        sqlite3_reset(q);
        if (rc == SQLITE_DONE) i += rows;
        else if (sqlite3_get_autocommit(s->db)) /* the refusal ended the transaction (a full
                                                ** disk): there is nothing to retry in */
            st = arb__store_fail(s, ARB_DB, "cannot store %s: %s", g->what,
                                 sqlite3_errmsg(s->db));
        else break;
    }
    for (; !st && i < n; i++) st = g->put_one(s, i);
    return st;
}

static void bind_waiting_pairwise(arb_store *s, sqlite3_stmt *q, int first, size_t i)
{
    arb__pairwise_row row = pending_row(s, i);
    bind_pairwise(q, first, s->pending[i].setup_id, &row, s->pending[i].verdict[0],
                  s->pending[i].verdict[1]);
}

static arb_status put_waiting_pairwise(arb_store *s, size_t i)
{
    arb__pairwise_row row = pending_row(s, i);
    return put_pairwise_now(s, &row, s->pending[i].setup_id);
}

static const row_group pairwise_group = {PAIRWISE_INSERT, PAIRWISE_UPSERT, "judgments",
                                         PAIRWISE_COLUMNS, TIME_MS, bind_waiting_pairwise,
                                         put_waiting_pairwise};

/* Inserts the judgments waiting in their group (see PAIRWISE_GROUP). */
static arb_status flush_pairwise(arb_store *s)
{
    arb_status st = flush_group(s, &pairwise_group, s->put_pairwise_group, s->n_pending);
    s->n_pending = 0;
    arb__buf_reset(&s->pending_text);
    return st;
}

/* Adds row to its tally (arb__rows_tally) when the row is known as the plan digest reads it:
** its setup held no judgment before the tally's first row, and its call is the one this handle
** just inserted (its key and reply as stored are in hand). Otherwise the tally breaks. */
static void tally_pairwise(arb_store *s, const arb__pairwise_row *row, long long setup,
                           int fresh, arb__rows_tally *t)
{
    if (t->broken) return;
    /* the first row's setup held no judgment; a later row's is the same (the rows there since
    ** are the tally's: a slice's handle finds the rows of the slices before) */
    if (t->rows ? setup != t->setup_id : !fresh) {
        t->broken = 1;
        return;
    }
    t->setup_id = setup;
    if (row->call_id <= 0 || s->settled.id != row->call_id || !s->settled.keyed ||
        !row->item_id || row->rep < 0) {
        t->broken = 1;
        return;
    }
    int ok = s->settled.ok;
    arb__store_tally_judgment(t, row->item_id, row->rep, row->order, row->position_verdict,
                              row->call_id, ok ? s->settled.key : NULL,
                              ok && s->settled.has_content
                                  ? (s->settled.content.data ? s->settled.content.data : "")
                                  : NULL,
                              s->settled.content.len);
}

/* Stores (or, on the same unique key, updates) one pairwise judgment. */
arb_status arb__store_put_pairwise(arb_store *s, const arb__pairwise_row *row)
{
    return arb__store_put_pairwise_tallied(s, row, NULL);
}

/* See internal.h. */
arb_status arb__store_put_pairwise_tallied(arb_store *s, const arb__pairwise_row *row,
                                           arb__rows_tally *tally)
{
    if (!row) return arb__store_fail(s, ARB_INVALID, "put_pairwise: no row");
    if (!strchr("ABCDE", row->position_verdict) || !row->position_verdict)
        return arb__store_fail(s, ARB_INVALID,
                               "put_pairwise: position verdict must be one of A B C D E, "
                               "got code %d", row->position_verdict);
    if (!strchr("abcde", row->model_verdict) || !row->model_verdict)
        return arb__store_fail(s, ARB_INVALID,
                               "put_pairwise: model verdict must be one of a b c d e, "
                               "got code %d", row->model_verdict);
    /* The call stored just before holds this item's question and both answers: its request
    ** is compacted against them (its row exists; the judgment may wait in its group). */
    arb_status st = ARB_OK;
    if (!st && s->call_pending.id && s->call_pending.id == row->call_id && row->item_id &&
        row->candidate && row->baseline) {
        arb__call_texts t = {row->item_id,
                             row->order ? row->baseline : row->candidate,
                             row->order ? row->candidate : row->baseline,
                             row->question,
                             row->order ? row->baseline_answer : row->candidate_answer,
                             row->order ? row->candidate_answer : row->baseline_answer,
                             0,
                             1};
        arb__request_ref refs[CALL_REFS];
        st = compact_pending(s, refs, texts_refs(&t, refs));
    }
    if (st) return st;
    /* The call must be stored (schema 14 checks it here, not by a trigger on every row). */
    int exists = 1;
    if ((st = arb__store_check_call(s, row->call_id, &exists))) return st;
    if (!exists)
        return pairwise_refused(s, row, "FOREIGN KEY constraint failed: no such call");
    long long setup = 0;
    int fresh = 0;
    if ((st = pairwise_setup(s, row, &setup, &fresh))) return st;
    if (tally) tally_pairwise(s, row, setup, fresh, tally);
    if (!s->in_tx || sqlite3_get_autocommit(s->db)) return put_pairwise_now(s, row, setup);
    pending_pairwise *p = &s->pending[s->n_pending];
    p->setup_id = setup;
    const char *texts[PAIRWISE_TEXTS] = {row->protocol, row->judge_name, row->item_id,
                                         row->candidate, row->baseline, row->template_name};
    const pending_pairwise *prev = s->n_pending ? p - 1 : NULL;
    for (int i = 0; i < PAIRWISE_TEXTS; i++) {
        p->text[i] = SIZE_MAX;
        if (!texts[i]) continue;
        /* a text the judgment before holds too (the setup's, all but the item) is not copied
        ** again: ~65 instructions and its bytes a text, five of six a judgment */
        if (prev && prev->text[i] != SIZE_MAX &&
            !strcmp(s->pending_text.data + prev->text[i], texts[i])) {
            p->text[i] = prev->text[i];
            continue;
        }
        p->text[i] = s->pending_text.len;
        if (arb__buf_append(&s->pending_text, texts[i], strlen(texts[i]) + 1))
            return arb__store_fail(s, ARB_NOMEM, "out of memory");
    }
    p->options = row->options;
    p->order = row->order;
    p->rep = row->rep;
    p->verdict[0][0] = row->position_verdict;
    p->verdict[1][0] = row->model_verdict;
    p->verdict[0][1] = p->verdict[1][1] = '\0';
    p->call_id = row->call_id;
    return ++s->n_pending == PAIRWISE_GROUP ? flush_pairwise(s) : ARB_OK;
}

/* See internal.h. */
arb_status arb__store_put_dialogue(arb_store *s, const arb__dialogue_ref *d, long long *id)
{
    /* the key: every field, each NUL-terminated, then the repetition */
    const char *parts[] = {d->kind, d->participants_json, d->config_json, d->item_id,
                           d->answer1, d->answer2};
    arb__buf b;
    arb__buf_init(&b, 0);
    int bad = 0;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        bad |= arb__buf_append(&b, parts[i], strlen(parts[i]) + 1);
    bad |= arb__buf_printf(&b, "%d", d->rep);
    char key[33];
    if (!bad) arb__hash_hex(b.data, b.len, key);
    arb__buf_free(&b);
    if (bad) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    sqlite3_stmt *q = s->stmt[ST_FIND_DIALOGUE];
    arb__store_bind_text(q, 1, key);
    int rc = sqlite3_step(q), as_it_is = 0;
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(q, 0);
        as_it_is = sqlite3_column_int(q, 1);
    }
    sqlite3_reset(q);
    if (rc == SQLITE_ROW && !as_it_is) { /* failed: open again */
        q = s->stmt[ST_REOPEN_DIALOGUE];
        sqlite3_bind_int64(q, 1, *id);
        rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_ROW : SQLITE_ERROR;
        sqlite3_reset(q);
    }
    if (rc == SQLITE_ROW) return ARB_OK;
    if (rc != SQLITE_DONE)
        return arb__store_fail(s, ARB_DB, "cannot read the %s dialogue on item \"%s\": %s",
                               d->kind, d->item_id, sqlite3_errmsg(s->db));
    q = s->stmt[ST_PUT_DIALOGUE];
    arb__store_bind_text(q, 1, key);
    arb__store_bind_text(q, 2, d->kind);
    arb__store_bind_text(q, 3, d->item_id);
    arb__store_bind_text(q, 4, d->answer1);
    arb__store_bind_text(q, 5, d->answer2);
    arb__store_bind_text(q, 6, d->participants_json);
    arb__store_bind_text(q, 7, d->config_json);
    sqlite3_bind_int(q, 8, d->rep);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) *id = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    if (rc != SQLITE_ROW)
        return arb__store_fail(s, ARB_DB, "cannot store the %s dialogue on item \"%s\": %s",
                               d->kind, d->item_id, sqlite3_errmsg(s->db));
    return ARB_OK;
}

/* See internal.h. */
arb_status arb__store_put_turn(arb_store *s, long long dialogue_id, int turn,
                               const char *speaker, const char *role, long long call_id,
                               const char *verdict)
{
    sqlite3_stmt *q = s->stmt[ST_PUT_TURN];
    sqlite3_bind_int64(q, 1, dialogue_id);
    sqlite3_bind_int(q, 2, turn);
    arb__store_bind_text(q, 3, speaker);
    arb__store_bind_text(q, 4, role);
    if (call_id > 0) sqlite3_bind_int64(q, 5, call_id);
    else sqlite3_bind_null(q, 5);
    arb__store_bind_text(q, 6, verdict);
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    /* a new or changed turn: the dialogue is open until its end is stored again */
    if (rc == SQLITE_DONE && sqlite3_changes(s->db) > 0) {
        q = s->stmt[ST_REOPEN_DIALOGUE];
        sqlite3_bind_int64(q, 1, dialogue_id);
        rc = sqlite3_step(q);
        sqlite3_reset(q);
    }
    if (rc != SQLITE_DONE)
        return arb__store_fail(s, ARB_DB, "cannot store turn %d of dialogue %lld: %s", turn,
                               dialogue_id, sqlite3_errmsg(s->db));
    return ARB_OK;
}

/* See internal.h. */
arb_status arb__store_end_dialogue(arb_store *s, long long dialogue_id, const char *final_verdict,
                                   const char *status, int last_turn)
{
    sqlite3_stmt *q = s->stmt[ST_END_DIALOGUE];
    sqlite3_bind_int64(q, 1, dialogue_id);
    arb__store_bind_text(q, 2, final_verdict);
    arb__store_bind_text(q, 3, status);
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    if (rc == SQLITE_DONE) {
        q = s->stmt[ST_DROP_TURNS];
        sqlite3_bind_int64(q, 1, dialogue_id);
        sqlite3_bind_int(q, 2, last_turn);
        rc = sqlite3_step(q);
        sqlite3_reset(q);
    }
    if (rc != SQLITE_DONE)
        return arb__store_fail(s, ARB_DB, "cannot finish dialogue %lld: %s", dialogue_id,
                               sqlite3_errmsg(s->db));
    return ARB_OK;
}

/* Calls fn for each pairwise row of protocol in the documented order. Prepared per call, not
** cached: it runs once per audit, and fn may itself use the store. Returns ARB_OK also when fn
** stops the walk. */
arb_status arb__store_each_pairwise(arb_store *s, const char *protocol, arb__pairwise_fn fn,
                                    void *ud)
{
    static const char sql[] =
        "SELECT p.protocol, p.judge_name, p.item_id, p.candidate, p.baseline, p.template_name,"
        " p.options, p.ord, p.rep, p.position_verdict, p.model_verdict, p.call_id, i.seq"
        " FROM pairwise p LEFT JOIN items i ON i.id = p.item_id"
        " WHERE p.protocol = ?1"
        " ORDER BY p.judge_name, p.candidate, p.baseline, p.template_name, p.options, i.seq,"
        " p.item_id, p.rep, p.ord";
    if (!protocol || !fn) return arb__store_fail(s, ARB_INVALID, "each_pairwise: bad arguments");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read judgments");
    arb__store_bind_text(q, 1, protocol);
    arb_status st = ARB_OK;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *pv = (const char *)sqlite3_column_text(q, 9);
        const char *mv = (const char *)sqlite3_column_text(q, 10);
        arb__pairwise_row row = {
            .protocol = (const char *)sqlite3_column_text(q, 0),
            .judge_name = (const char *)sqlite3_column_text(q, 1),
            .item_id = (const char *)sqlite3_column_text(q, 2),
            .candidate = (const char *)sqlite3_column_text(q, 3),
            .baseline = (const char *)sqlite3_column_text(q, 4),
            .template_name = (const char *)sqlite3_column_text(q, 5),
            .options = sqlite3_column_int(q, 6),
            .order = sqlite3_column_int(q, 7),
            .rep = sqlite3_column_int(q, 8),
            .position_verdict = pv && *pv ? *pv : 'E',
            .model_verdict = mv && *mv ? *mv : 'e',
            .call_id = sqlite3_column_int64(q, 11),
            .item_seq = sqlite3_column_type(q, 12) == SQLITE_NULL ? -1
                                                                  : sqlite3_column_int64(q, 12),
        };
        if (fn(ud, &row)) break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) st = arb__store_fail_db(s, "cannot read judgments");
    sqlite3_finalize(q);
    return st;
}

/* Lengths in code points come from SQLite's length(), which counts characters of TEXT (METHODS
** §5: code points, not bytes; the store holds valid UTF-8 only). The prompt length sums the
** messages of the call as sent. An item stored with an empty question (an import that gave
** none: the column is NOT NULL) has an unknown question length, not 0; an answer or a prompt
** the store lacks (an import without answers or request) is unknown too. */
static double column_length(sqlite3_stmt *q, int col)
{
    return sqlite3_column_type(q, col) == SQLITE_NULL ? NAN : sqlite3_column_double(q, col);
}

arb_status arb__store_judgments_for_audit(arb_store *s, unsigned protocols,
                                          arb__audit_judgment_fn fn, void *ud)
{
    static const char sql[] =
        "SELECT p.protocol, p.judge_name, p.candidate, p.baseline, p.template_name, p.options,\n"
        "       p.item_id, i.rowid, i.seq, coalesce(i.category, ''), p.rep, p.ord,\n"
        "       p.position_verdict, arb_text_length(nullif(i.question, '')),\n"
        "       arb_text_length(ac.answer), arb_text_length(ab.answer),\n"
        "       (SELECT c.prompt_chars FROM calls c WHERE c.id = p.call_id),\n"
        "       coalesce(i.language, '')\n"
        "  FROM pairwise p JOIN items i ON i.id = p.item_id\n"
        "  LEFT JOIN answers ac ON ac.item_id = p.item_id AND ac.model = p.candidate\n"
        "  LEFT JOIN answers ab ON ab.item_id = p.item_id AND ab.model = p.baseline\n"
        " WHERE (?1 AND p.protocol IN ('sbs', 'soft', 'hard')) OR (?2 AND p.protocol = 'tournament')\n"
        " ORDER BY p.judge_name, p.protocol, p.candidate, p.baseline, p.template_name, p.options,\n"
        "          i.seq, i.rowid, p.rep, p.ord";
    if (!fn) return arb__store_fail(s, ARB_INVALID, "judgments_for_audit: no callback");
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "audit: cannot read judgments");
    sqlite3_bind_int(q, 1, (protocols & ARB_AUDIT_SBS) != 0);
    sqlite3_bind_int(q, 2, (protocols & ARB_AUDIT_TOURNAMENT) != 0);
    arb_status st = ARB_OK;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(q, 12);
        double prompt = column_length(q, 16);
        arb__audit_judgment j = {
            .protocol = (const char *)sqlite3_column_text(q, 0),
            .judge_name = (const char *)sqlite3_column_text(q, 1),
            .candidate = (const char *)sqlite3_column_text(q, 2),
            .baseline = (const char *)sqlite3_column_text(q, 3),
            .template_name = (const char *)sqlite3_column_text(q, 4),
            .options = sqlite3_column_int(q, 5),
            .item_id = (const char *)sqlite3_column_text(q, 6),
            .item_rowid = sqlite3_column_int64(q, 7),
            .item_seq = sqlite3_column_int64(q, 8),
            .category = (const char *)sqlite3_column_text(q, 9),
            .rep = sqlite3_column_int(q, 10),
            .order = sqlite3_column_int(q, 11),
            .position_verdict = v && v[0] >= 'A' && v[0] <= 'D' ? v[0] : 'E',
            .len_question = column_length(q, 13),
            .len_candidate = column_length(q, 14),
            .len_baseline = column_length(q, 15),
            .len_prompt = prompt > 0 ? prompt : NAN, /* total() is 0.0 when nothing was sent */
            .language = (const char *)sqlite3_column_text(q, 17),
        };
        if (!j.protocol || !j.judge_name || !j.candidate || !j.baseline || !j.template_name ||
            !j.item_id || !j.category || !j.language) {
            st = arb__store_fail(s, ARB_NOMEM, "audit: out of memory");
            break;
        }
        if (fn(ud, &j)) break;
    }
    if (st == ARB_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = arb__store_fail_db(s, "audit: cannot read judgments");
    sqlite3_finalize(q);
    return st;
}

/* Replaces a string by its redacted form (arb__url_redact). Returns 1 when it changed, 0 when
** not, -1 when out of memory. */
static int redact_url_string(json_t *member)
{
    char *url = arb__url_redact(json_string_value(member));
    if (!url) return -1;
    int changed = 0;
    if (strcmp(url, json_string_value(member))) changed = json_string_set(member, url) ? -1 : 1;
    free(url);
    return changed;
}

/* Replaces, in v and everything it contains, each string member named "url" or ending in
** "_url", and each string of an array named "endpoints" (a judge's replicas), by its redacted
** form (arb__url_redact). Returns 1 when something changed, 0 when not, -1 when out of memory. */
static int redact_urls(json_t *v)
{
    int changed = 0;
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            int c = redact_urls(e);
            if (c < 0) return -1;
            changed |= c;
        }
        return changed;
    }
    const char *key;
    json_t *member;
    json_object_foreach(v, key, member) {
        size_t n = strlen(key);
        if (json_is_string(member) &&
            (!strcmp(key, "url") || (n >= 4 && !strcmp(key + n - 4, "_url")))) {
            int c = redact_url_string(member);
            if (c < 0) return -1;
            changed |= c;
        } else if (json_is_array(member) && !strcmp(key, "endpoints")) {
            size_t i;
            json_t *e;
            json_array_foreach(member, i, e) {
                int c = json_is_string(e) ? redact_url_string(e) : 0;
                if (c < 0) return -1;
                changed |= c;
            }
        } else {
            int c = redact_urls(member);
            if (c < 0) return -1;
            changed |= c;
        }
    }
    return changed;
}

/* params_json with credentials removed from its URLs (caller frees), or NULL when out of
** memory. Text without such credentials is copied unchanged, byte for byte. */
static char *params_without_credentials(const char *params_json)
{
    json_t *root = json_loads(params_json, 0, NULL);
    if (!root) return arb__strdup(params_json); /* the CHECK refuses it with a clear error */
    int changed = redact_urls(root);
    /* 15 digits, as request bodies (judge.c): a value a user typed prints as typed. */
    char *out = changed > 0   ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER |
                                                 JSON_REAL_PRECISION(15))
                : changed == 0 ? arb__strdup(params_json)
                               : NULL;
    json_decref(root);
    return out;
}

/* Records the start of a run; *run_id gets its id. params_json (borrowed) may be NULL; URLs in
** it are stored without credentials. */
arb_status arb__store_run_begin(arb_store *s, const char *protocol, const char *params_json,
                                long long *run_id)
{
    if (!protocol) return arb__store_fail(s, ARB_INVALID, "run_begin: no protocol");
    char *params = params_without_credentials(params_json ? params_json : "{}");
    if (!params) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    /* Stamps are whole milliseconds: a run begun in the millisecond another finished in would
    ** look as if the two overlapped (arb__store_run_overlapped), and its plan note would be
    ** dropped. The clock leaves that millisecond first. */
    sqlite3_stmt *last = s->stmt[ST_RUN_LAST_FINISHED];
    if (sqlite3_step(last) == SQLITE_ROW) arb__store_wait_clock_past(sqlite3_column_int64(last, 0));
    sqlite3_reset(last);
    sqlite3_stmt *q = s->stmt[ST_RUN_BEGIN];
    arb__store_bind_text(q, 1, protocol);
    arb__store_bind_text(q, 2, params);
    arb__store_bind_text(q, 3, arb__run_status_text(ARB__RUN_RUNNING));
    int rc = sqlite3_step(q);
    long long id = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    if (rc == SQLITE_ROW) rc = sqlite3_step(q);
    arb_status st = ARB_OK;
    if (rc != SQLITE_DONE) st = arb__store_fail_db(s, "cannot record the run");
    sqlite3_reset(q);
    free(params);
    if (!st && run_id) *run_id = id;
    return st;
}

/* Records the end of a run: its status and stats as JSON. */
arb_status arb__store_run_end(arb_store *s, long long run_id, const arb_run_stats *stats,
                              arb__run_status status)
{
    char *stats_json = NULL;
    if (stats) {
        json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                              "planned", (json_int_t)stats->planned,
                              "cached", (json_int_t)stats->cached,
                              "sent", (json_int_t)stats->sent,
                              "ok", (json_int_t)stats->ok,
                              "failed", (json_int_t)stats->failed,
                              "invalid", (json_int_t)stats->invalid,
                              "prompt_tokens", (json_int_t)stats->prompt_tokens,
                              "completion_tokens", (json_int_t)stats->completion_tokens,
                              "est_prompt_tokens", (json_int_t)stats->est_prompt_tokens,
                              "retries", (json_int_t)stats->retries);
        /* cost_usd: of the calls sent whose cost is known, null when none is (never a 0 that
        ** means "unknown"); cost_unknown counts the others. */
        if (o && (arb__json_set(o, "cost_usd", stats->sent > stats->cost_unknown
                                                   ? json_real(stats->cost_usd)
                                                   : json_null()) ||
                  arb__json_set(o, "cost_unknown", json_integer((json_int_t)stats->cost_unknown)) ||
                  arb__json_set(o, "not_sent", json_integer((json_int_t)stats->not_sent)) ||
                  (stats->reasoning_tokens > 0 &&
                   arb__json_set(o, "reasoning_tokens", json_integer(stats->reasoning_tokens))))) {
            json_decref(o);
            o = NULL;
        }
        /* Each judge's endpoints: requests (attempts, retries included), 429s, failures and
        ** cool-downs, as the transport counted them. */
        json_t *eps = o && stats->n_endpoints ? json_array() : NULL;
        for (size_t i = 0; eps && i < stats->n_endpoints; i++) {
            const arb_endpoint_spend *e = &stats->endpoints[i];
            json_t *x = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "judge", e->judge,
                                  "url", e->url, "requests", (json_int_t)e->requests,
                                  "ok", (json_int_t)e->ok, "throttled_429",
                                  (json_int_t)e->throttled, "failed", (json_int_t)e->failed,
                                  "cooldowns", (json_int_t)e->cooldowns);
            if (!x || json_array_append_new(eps, x)) {
                json_decref(eps);
                eps = NULL;
                json_decref(o);
                o = NULL;
            }
        }
        if (eps && arb__json_set(o, "endpoints", eps)) {
            json_decref(o);
            o = NULL;
        }
        if (o && json_object_set_new(o, "seconds", isfinite(stats->seconds)
                                                       ? json_real(stats->seconds)
                                                       : json_null()) == 0)
            stats_json = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(o);
        if (!stats_json) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    }
    sqlite3_stmt *q = s->stmt[ST_RUN_END];
    sqlite3_bind_int64(q, 1, run_id);
    arb__store_bind_text(q, 2, arb__run_status_text(status));
    arb__store_bind_text(q, 3, stats_json);
    arb_status st = arb__store_step_done(s, q, "cannot record the end of the run");
    free(stats_json);
    if (!st && sqlite3_changes(s->db) == 0)
        st = arb__store_fail(s, ARB_NOTFOUND, "run %lld is not in the store", run_id);
    return st;
}

/* ---- leases on judge calls (see internal.h) ----------------------------------------------- */

/* See internal.h. */
void arb__lease_owner_init(arb__lease_owner *o, double seconds)
{
    static atomic_uint counter;
    memset(o, 0, sizeof *o);
    if (gethostname(o->host, sizeof o->host - 1) != 0) snprintf(o->host, sizeof o->host, "?");
    o->pid = (long)getpid();
    o->seconds = seconds;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(o->id, sizeof o->id, "%s:%ld:%lld.%09ld:%u", o->host, o->pid,
             (long long)now.tv_sec, now.tv_nsec, atomic_fetch_add(&counter, 1));
}

/* Whether a lease holder recorded as (host, pid) may still be at work: a process on another
** host cannot be checked (its lease runs until it expires); on this host, kill(pid, 0) tells
** (EPERM: alive, someone else's). */
static int holder_alive(const arb__lease_owner *self, const char *host, long pid)
{
    if (!host || strcmp(host, self->host)) return 1;
    if (pid <= 0) return 0;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* The 16 bytes a call key has in a lease (call_leases.keys): the bytes its 32 hex digits spell,
** as calls.key holds them; a key of another form (tests, old stores) by its 128-bit hash. */
static void lease_key(const char *key, unsigned char out[ARB__CALL_KEY_BYTES])
{
    size_t n = strlen(key);
    if (!call_key_bytes(key, n, out)) return;
    XXH128_hash_t h = XXH3_128bits(key, n);
    memcpy(out, &h.high64, 8);
    memcpy(out + 8, &h.low64, 8);
}

/* A map of lease keys (see lease_key), which hold their keys (ARB__CALL_KEY_BYTES each). */
static uint64_t lease_key_hash(const unsigned char *k)
{
    return XXH3_64bits(k, ARB__CALL_KEY_BYTES);
}

/* The calls that other live owners hold, read at the start of a claim: each key with the
** index + 1 of its holder's pid in pids. Leases of owners that are gone (expired, or their
** process on this host no longer runs) are deleted: their calls are free to claim. */
static arb_status read_held(arb_store *s, const arb__lease_owner *o, arb__keymap *held,
                            long **pids)
{
    sqlite3_stmt *q = s->stmt[ST_LEASES_ALL];
    long long *gone = NULL;
    size_t n_gone = 0, cap_gone = 0, n_pids = 0, cap_pids = 0;
    int rc, oom = 0;
    while (!oom && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *owner = (const char *)sqlite3_column_text(q, 1);
        if (owner && !strcmp(owner, o->id)) continue; /* ours: claimed again, not held */
        long pid = (long)sqlite3_column_int64(q, 3);
        if (!sqlite3_column_int(q, 4) ||
            !holder_alive(o, (const char *)sqlite3_column_text(q, 2), pid)) {
            oom = arb__grow(&gone, &cap_gone, n_gone + 1, sizeof *gone);
            if (!oom) gone[n_gone++] = sqlite3_column_int64(q, 0);
            continue;
        }
        const unsigned char *keys = sqlite3_column_blob(q, 5);
        size_t n = (size_t)sqlite3_column_bytes(q, 5) / ARB__CALL_KEY_BYTES;
        if ((oom = arb__grow(pids, &cap_pids, n_pids + 1, sizeof **pids))) break;
        (*pids)[n_pids++] = pid;
        for (size_t i = 0; i < n && !oom; i++) {
            const unsigned char *k = keys + i * ARB__CALL_KEY_BYTES;
            oom = arb__keymap_put(held, lease_key_hash(k), k, NULL, NULL, n_pids, NULL);
        }
    }
    sqlite3_reset(q);
    arb_status st = oom ? arb__store_fail(s, ARB_NOMEM, "out of memory")
                  : rc != SQLITE_DONE && rc != SQLITE_ROW
                      ? arb__store_fail_db(s, "cannot read the call leases")
                      : ARB_OK;
    for (size_t i = 0; i < n_gone && !st; i++) {
        sqlite3_bind_int64(s->stmt[ST_LEASE_DROP], 1, gone[i]);
        st = arb__store_step_done(s, s->stmt[ST_LEASE_DROP], "cannot take over a call lease");
    }
    free(gone);
    return st;
}

/* A claim looks its keys up among the successful calls FIND_GROUP at a time, in one statement
** that joins the keys (a VALUES list) with calls' key index: one statement a key cost ~4,400
** instructions of which ~2,000 opening and closing it (cursors, allocations), the group ~2,300
** a key (callgrind, 2026-11-28). The keys that are not in a group bind NULL, which matches
** nothing. */
#define FIND_GROUP 64

static sqlite3_stmt *find_group_stmt(arb_store *s)
{
    if (s->find_group) return s->find_group;
    arb__buf sql;
    arb__buf_init(&sql, 0);
    int bad = arb__buf_puts(&sql, "WITH k(n, key) AS (VALUES (0, ?1)");
    for (int i = 1; i < FIND_GROUP; i++) bad |= arb__buf_printf(&sql, ", (%d, ?%d)", i, i + 1);
    bad |= arb__buf_puts(&sql, ") SELECT k.n, c.id, c.content, c.prompt_tokens,"
                               " c.completion_tokens, c.cost_usd FROM k CROSS JOIN calls c"
                               " ON c.key = k.key AND c.ok = 1");
    if (bad || sqlite3_prepare_v3(s->db, sql.data, -1, SQLITE_PREPARE_PERSISTENT, &s->find_group,
                                  NULL) != SQLITE_OK) {
        sqlite3_finalize(s->find_group);
        s->find_group = NULL;
    }
    arb__buf_free(&sql);
    return s->find_group;
}

/* Marks ARB__CLAIM_STORED, with its call id, content and spend, each claim whose key is a stored
** successful call, as arb__store_find_call_spend would one by one (which it falls back to when
** the group's statement cannot be prepared). */
static arb_status find_claimed(arb_store *s, arb__call_claim *c, size_t n)
{
    sqlite3_stmt *q = find_group_stmt(s);
    arb_status st = ARB_OK;
    for (size_t at = 0; at < n && !st; at += FIND_GROUP) {
        size_t rows = n - at < FIND_GROUP ? n - at : FIND_GROUP;
        if (!q) {
            for (size_t i = at; i < at + rows && !st; i++) {
                int found = 0;
                st = arb__store_find_call_spend(s, c[i].key, &found, &c[i].call_id,
                                                &c[i].content, &c[i].spend);
                if (found) c[i].state = ARB__CLAIM_STORED;
            }
            continue;
        }
        unsigned char bytes[FIND_GROUP][ARB__CALL_KEY_BYTES]; /* bound, read by the step */
        for (int i = 0; i < FIND_GROUP; i++) {
            const char *key = (size_t)i < rows ? c[at + (size_t)i].key : NULL;
            if (!key) sqlite3_bind_null(q, i + 1);
            else if (call_key_bytes(key, strlen(key), bytes[i]))
                sqlite3_bind_text(q, i + 1, key, -1, SQLITE_STATIC);
            else sqlite3_bind_blob(q, i + 1, bytes[i], ARB__CALL_KEY_BYTES, SQLITE_STATIC);
        }
        int rc;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            arb__call_claim *x = &c[at + (size_t)sqlite3_column_int(q, 0)];
            x->state = ARB__CLAIM_STORED;
            if (read_stored_call(q, 1, &x->call_id, &x->content, &x->spend)) {
                st = arb__store_fail(s, ARB_NOMEM, "out of memory");
                break;
            }
        }
        if (!st && rc != SQLITE_DONE)
            st = arb__store_fail(s, ARB_DB, "cannot look up calls: %s", sqlite3_errmsg(s->db));
        sqlite3_reset(q);
        sqlite3_clear_bindings(q); /* the keys' bytes are this frame's */
    }
    return st;
}

/* See internal.h. One lease row for the calls claimed, whatever their number: a claim reads the
** leases of the other owners (a few rows while runs share a store, none for a run alone), then
** writes one row. */
arb_status arb__store_claim_calls(arb_store *s, const arb__lease_owner *o, arb__call_claim *c,
                                  size_t n)
{
    for (size_t i = 0; i < n; i++) {
        c[i].content = NULL;
        c[i].call_id = 0;
        c[i].holder_pid = 0;
        c[i].state = ARB__CLAIM_OURS; /* until found stored or held */
    }
    if (!n) return ARB_OK;
    arb_status st = arb__store_begin(s);
    if (st) return st;
    arb__keymap held = {.key_size = ARB__CALL_KEY_BYTES};
    long *pids = NULL;
    unsigned char *keys = malloc(n * ARB__CALL_KEY_BYTES);
    size_t n_keys = 0;
    if (!keys) st = arb__store_fail(s, ARB_NOMEM, "out of memory");
    if (!st) st = read_held(s, o, &held, &pids);
    if (!st) st = find_claimed(s, c, n);
    for (size_t i = 0; i < n && !st; i++) {
        if (c[i].state == ARB__CLAIM_STORED) continue;
        unsigned char *k = keys + n_keys * ARB__CALL_KEY_BYTES;
        lease_key(c[i].key, k);
        size_t holder = arb__keymap_find(&held, lease_key_hash(k), k, NULL, NULL);
        if (holder) {
            c[i].state = ARB__CLAIM_HELD;
            c[i].holder_pid = pids[holder - 1];
        } else {
            c[i].state = ARB__CLAIM_OURS;
            n_keys++;
        }
    }
    if (!st && n_keys) {
        sqlite3_stmt *q = s->stmt[ST_LEASE_ADD];
        arb__store_bind_text(q, 1, o->id);
        arb__store_bind_text(q, 2, o->host);
        sqlite3_bind_int64(q, 3, o->pid);
        sqlite3_bind_double(q, 4, o->seconds);
        sqlite3_bind_blob(q, 5, keys, (int)(n_keys * ARB__CALL_KEY_BYTES), SQLITE_STATIC);
        st = arb__store_step_done(s, q, "cannot claim the calls");
    }
    arb__keymap_free(&held);
    free(pids);
    free(keys);
    if (!st) st = arb__store_commit(s);
    if (st) {
        arb__store_rollback(s);
        for (size_t i = 0; i < n; i++) {
            free(c[i].content);
            c[i].content = NULL;
        }
    }
    return st;
}

/* See internal.h. */
arb_status arb__store_renew_leases(arb_store *s, const arb__lease_owner *o)
{
    sqlite3_stmt *q = s->stmt[ST_LEASE_RENEW];
    arb__store_bind_text(q, 1, o->id);
    sqlite3_bind_double(q, 2, o->seconds);
    return arb__store_step_done(s, q, "cannot renew the call leases");
}

/* Ends lease row id of o when none of its calls is left to store (the book's batch b). */
static arb_status book_settle(arb_store *s, const arb__lease_owner *o, size_t b)
{
    lease_book *bk = &s->leases;
    if (bk->batches[b].left || !bk->batches[b].id) return ARB_OK;
    sqlite3_stmt *q = s->stmt[ST_LEASE_END];
    sqlite3_bind_int64(q, 1, bk->batches[b].id);
    arb__store_bind_text(q, 2, o->id);
    bk->batches[b].id = 0;
    return arb__store_step_done(s, q, "cannot release a call lease");
}

/* Reads o's lease rows that this handle has not seen (ids above the highest seen: the table's
** ids only grow, AUTOINCREMENT) into its book. A key claimed again by a later row counts in
** that row only; an earlier row left with no key is ended once the read is over. */
static arb_status book_load(arb_store *s, const arb__lease_owner *o)
{
    lease_book *bk = &s->leases;
    sqlite3_stmt *q = s->stmt[ST_LEASES_OWN];
    arb__store_bind_text(q, 1, o->id);
    sqlite3_bind_int64(q, 2, bk->seen_id);
    size_t *emptied = NULL, n_emptied = 0, cap_emptied = 0;
    int rc, oom = 0;
    while (!oom && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        long long id = sqlite3_column_int64(q, 0);
        const unsigned char *keys = sqlite3_column_blob(q, 1);
        size_t n = (size_t)sqlite3_column_bytes(q, 1) / ARB__CALL_KEY_BYTES;
        if (id > bk->seen_id) bk->seen_id = id;
        if ((oom = arb__grow(&bk->batches, &bk->cap_batches, bk->n_batches + 1,
                             sizeof *bk->batches)))
            break;
        size_t b = bk->n_batches++;
        bk->batches[b].id = id;
        bk->batches[b].left = 0;
        for (size_t i = 0; i < n && !oom; i++) {
            const unsigned char *k = keys + i * ARB__CALL_KEY_BYTES;
            size_t old = 0;
            if ((oom = arb__keymap_put(&bk->keys, lease_key_hash(k), k, NULL, NULL, b + 1, &old)))
                break;
            bk->batches[b].left++;
            if (old && old != b + 1 && bk->batches[old - 1].id && bk->batches[old - 1].left &&
                !--bk->batches[old - 1].left &&
                !(oom = arb__grow(&emptied, &cap_emptied, n_emptied + 1, sizeof *emptied)))
                emptied[n_emptied++] = old - 1;
        }
        if (!bk->batches[b].left) bk->batches[b].id = 0;
    }
    sqlite3_reset(q);
    arb_status st = oom ? arb__store_fail(s, ARB_NOMEM, "out of memory")
                  : rc != SQLITE_DONE ? arb__store_fail_db(s, "cannot read the call leases")
                                      : ARB_OK;
    for (size_t i = 0; i < n_emptied && !st; i++) st = book_settle(s, o, emptied[i]);
    free(emptied);
    return st;
}

/* See internal.h. The row of the claim that took key loses the key in this handle's book (read
** from the store the first time a key of that row comes); the row ends, in the caller's
** transaction, once every key of it is released. A key this handle finds in no row of o's is
** left alone (another owner's lease). */
arb_status arb__store_release_lease(arb_store *s, const arb__lease_owner *o, const char *key)
{
    lease_book *bk = &s->leases;
    if (strcmp(bk->owner, o->id)) { /* another executor: its own book */
        arb__keymap_free(&bk->keys);
        free(bk->batches);
        memset(bk, 0, sizeof *bk);
        bk->keys.key_size = ARB__CALL_KEY_BYTES;
        snprintf(bk->owner, sizeof bk->owner, "%s", o->id);
    }
    unsigned char k[ARB__CALL_KEY_BYTES];
    lease_key(key, k);
    uint64_t h = lease_key_hash(k);
    size_t b = arb__keymap_remove(&bk->keys, h, k, NULL, NULL);
    if (!b) {
        arb_status st = book_load(s, o);
        if (st) return st;
        if (!(b = arb__keymap_remove(&bk->keys, h, k, NULL, NULL))) return ARB_OK;
    }
    if (!bk->batches[b - 1].id || !bk->batches[b - 1].left) return ARB_OK;
    bk->batches[b - 1].left--;
    return book_settle(s, o, b - 1);
}

/* See internal.h. */
arb_status arb__store_release_leases(arb_store *s, const arb__lease_owner *o)
{
    sqlite3_stmt *q = s->stmt[ST_LEASES_RELEASE];
    arb__store_bind_text(q, 1, o->id);
    return arb__store_step_done(s, q, "cannot release the call leases");
}

/* ---- export ------------------------------------------------------------------------------- */

/* Kinds of export columns. COL_JSON: a JSON column, embedded in JSONL. COL_REQUEST: calls.request
** as stored (TEXT or a compact request, store_requests.c) and COL_DATASET: a dataset text as
** stored (TEXT or a compact text, store_texts.c), both read raw and rebuilt here, after the
** query's ORDER BY: the sorter then holds the compact rows (~0.4 KB a judgment on the benchmark
** set) instead of the rebuilt ones (~4.6 KB, which at 1,000,000 judgments it wrote to temporary
** files and read back: ~4.6 GB). */
enum { COL_TEXT, COL_INT, COL_REAL, COL_JSON, COL_REQUEST, COL_DATASET };

static const struct export_column {
    const char *name;
    int type;
} export_columns[] = {
    {"protocol", COL_TEXT},        {"judge", COL_TEXT},
    {"item", COL_TEXT},            {"candidate", COL_TEXT},
    {"baseline", COL_TEXT},        {"template", COL_TEXT},
    {"options", COL_INT},          {"order", COL_INT},
    {"rep", COL_INT},              {"position_verdict", COL_TEXT},
    {"model_verdict", COL_TEXT},   {"model", COL_TEXT},
    {"content", COL_TEXT},         {"error", COL_TEXT},
    {"prompt_tokens", COL_INT},    {"completion_tokens", COL_INT},
    {"latency_ms", COL_REAL},      {"attempts", COL_INT},
    /* added for issue 15, so `arbiter import judgments` reads an export back faithfully: the
    ** request as sent (prompt lengths), the item and both answers (lengths, categories), the
    ** import source (null: judged by arbiter) and the strength of a win (weak, strong) */
    {"request", COL_REQUEST},      {"question", COL_DATASET},
    {"candidate_answer", COL_DATASET}, {"baseline_answer", COL_DATASET},
    {"category", COL_TEXT},        {"language", COL_TEXT},
    {"source", COL_TEXT},          {"strength", COL_TEXT},
    /* added for issue 16: the rest of the call's usage and what it cost (null: unknown) */
    {"cached_tokens", COL_INT},    {"reasoning_tokens", COL_INT},
    {"cost_usd", COL_REAL},
    /* the judge's thinking, kept apart from content (reasoning models; NULL when none) */
    {"reasoning", COL_TEXT},
    /* the verdict token's distribution (README "Logprobs"; null when none) */
    {"logprobs", COL_JSON},
};
#define N_EXPORT_COLUMNS (sizeof export_columns / sizeof export_columns[0])

/* Where a row of the query has what a compact request of it names (its refs): the item, the
** two models and their texts (COL_DATASET columns). The request is rebuilt from those texts
** as the row has them decompressed, instead of reading and decompressing each again by SQL. */
static const struct export_refs {
    int item, question, models[2], answers[2];
} pairwise_export_refs = {2, 19, {3, 4}, {20, 21}};

/* One column's value in the row being written: text (not NUL-terminated) or NULL. A
** COL_DATASET column keeps its last compact value and its text: the two orders (and the
** repetitions) of an item come one after the other, so each text is decompressed once. */
typedef struct export_value {
    const char *text;
    size_t len;
    int null;
    unsigned char *blob; /* COL_DATASET: the last compact value decompressed, and its text */
    size_t blob_len;
    char *plain;
    size_t plain_len;
} export_value;

/* The state of one export: the row's values and the line being built. */
typedef struct export_writer {
    arb_store *store;
    const struct export_column *cols;
    size_t n_cols;
    const struct export_refs *refs; /* NULL: no COL_REQUEST column */
    export_value *v;
    char (*keys)[40]; /* each column's key as jansson writes it (plain ASCII names): ,"name": */
    char *request; /* the row's rebuilt request (COL_REQUEST) */
    arb__buf line, repaired;
} export_writer;

/* A COL_DATASET value: a compact text decompressed (once for a run of equal values). */
static int dataset_value(export_writer *w, export_value *v, const unsigned char *blob, size_t n)
{
    if (!v->blob || v->blob_len != n || memcmp(v->blob, blob, n)) {
        free(v->blob);
        free(v->plain);
        v->blob = NULL;
        if (!(v->plain = arb__textz_decode(w->store->textz, blob, n, &v->plain_len))) return -1;
        if ((v->blob = malloc(n ? n : 1))) { /* else not kept: decompressed again next row */
            memcpy(v->blob, blob, n);
            v->blob_len = n;
        }
    }
    v->text = v->plain;
    v->len = v->plain_len;
    return 0;
}

/* The row's request rebuilt, given the row's question and answers. 0, -1 on failure. */
static int request_value(export_writer *w, export_value *v, const unsigned char *blob, size_t n)
{
    arb__request_ref given[3];
    size_t n_given = 0;
    const struct export_refs *r = w->refs;
    const export_value *item = r ? &w->v[r->item] : NULL;
    for (int k = 0; r && !item->null && k < 3; k++) {
        const export_value *model = k ? &w->v[r->models[k - 1]] : NULL;
        const export_value *text = &w->v[k ? r->answers[k - 1] : r->question];
        /* a text given must be the exact one: strlen marks those with a NUL byte (read by SQL) */
        if (text->null || (model && model->null) || strlen(text->text) != text->len ||
            strlen(item->text) != item->len || (model && strlen(model->text) != model->len))
            continue;
        given[n_given++] = (arb__request_ref){item->text, model ? model->text : NULL, text->text};
    }
    free(w->request);
    w->request = arb__reqz_decode_given(w->store->reqz, blob, n, given, n_given, &v->len);
    v->text = w->request;
    return w->request ? 0 : -1;
}

/* Fails the export naming the damaged value: its column and the row's judge and item, so the
** row can be found (and judged again) instead of only hearing that something is damaged. */
static arb_status export_damaged(export_writer *w, sqlite3_stmt *q, const char *column,
                                 const char *why)
{
    const char *judge = "?", *item = "?";
    for (size_t c = 0; c < w->n_cols; c++) {
        const char *text = (const char *)sqlite3_column_text(q, (int)c);
        if (!text) continue;
        if (!strcmp(w->cols[c].name, "judge")) judge = text;
        else if (!strcmp(w->cols[c].name, "item")) item = text;
    }
    return arb__store_fail(w->store, ARB_DB, "the stored %s of judge %s, item %s: %s", column,
                           judge, item, why);
}

/* Reads the row's values of the text kinds (the others are read as they are written). 0, or
** the store's failure. */
static arb_status export_read_row(export_writer *w, sqlite3_stmt *q)
{
    /* the texts first: a request is rebuilt from them */
    for (int pass = 0; pass < 2; pass++)
        for (size_t c = 0; c < w->n_cols; c++) {
            int type = w->cols[c].type, col = (int)c;
            if (type == COL_INT || type == COL_REAL || type == COL_JSON) continue;
            if ((type == COL_REQUEST) != (pass == 1)) continue;
            export_value *v = &w->v[c];
            int sql_type = sqlite3_column_type(q, col);
            v->null = sql_type == SQLITE_NULL;
            if (v->null) continue;
            if (sql_type == SQLITE_BLOB && type != COL_TEXT) {
                const unsigned char *blob = sqlite3_column_blob(q, col);
                size_t n = (size_t)sqlite3_column_bytes(q, col);
                int bad = type == COL_DATASET ? dataset_value(w, v, blob, n)
                                              : request_value(w, v, blob, n);
                if (bad)
                    return export_damaged(w, q, w->cols[c].name,
                                          type == COL_DATASET
                                              ? arb__textz_errmsg(w->store->textz)
                                              : arb__reqz_errmsg(w->store->reqz));
                continue;
            }
            const char *text = (const char *)sqlite3_column_text(q, col);
            v->text = text ? text : "";
            v->len = (size_t)sqlite3_column_bytes(q, col);
        }
    return ARB_OK;
}

/* Appends the bytes as a JSON string; invalid UTF-8 (possible in a server's reply) becomes
** U+FFFD so the output stays valid JSON. 0, or -1 when out of memory. */
static int put_text(export_writer *w, const char *p, size_t n)
{
    int got = arb__buf_json_text(&w->line, p, n);
    if (got <= 0) return got;
    size_t bad;
    arb__buf *b = &w->repaired;
    arb__buf_reset(b);
    int fail = 0;
    while (!fail && !arb__utf8_valid(p, n, &bad)) {
        fail |= arb__buf_append(b, p, bad);
        fail |= arb__buf_append(b, "\xEF\xBF\xBD", 3);
        p += bad + 1;
        n -= bad + 1;
    }
    if (!fail) fail |= arb__buf_append(b, p, n);
    return fail ? -1 : arb__buf_json_string(&w->line, b->data ? b->data : "", b->len);
}

/* Appends a jansson value (a real or a JSON column) as jansson's compact dump writes it. */
static int put_json(export_writer *w, json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY) : NULL;
    json_decref(v);
    int fail = !s || arb__buf_puts(&w->line, s);
    free(s);
    return fail ? -1 : 0;
}

/* Appends v in decimal, as jansson's "%lld" writes it. 0 or -1. */
static int put_integer(arb__buf *b, long long v)
{
    char text[24], *p = text + sizeof text;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0) *--p = '-';
    return arb__buf_append(b, p, (size_t)(text + sizeof text - p));
}

/* Appends one CSV field (RFC 4180): quoted when it holds a comma, quote, CR or LF, with quotes
** doubled. 0 or -1. */
static int put_csv(arb__buf *b, const char *p, size_t n)
{
    int quote = 0;
    for (size_t i = 0; i < n && !quote; i++)
        quote = p[i] == ',' || p[i] == '"' || p[i] == '\r' || p[i] == '\n';
    if (!quote) return arb__buf_append(b, p, n);
    int fail = arb__buf_append(b, "\"", 1);
    for (const char *end = p + n; !fail && p < end;) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        size_t run = q ? (size_t)(q - p + 1) : (size_t)(end - p);
        fail = arb__buf_append(b, p, run) || (q && arb__buf_append(b, "\"", 1));
        p += run;
    }
    return fail || arb__buf_append(b, "\"", 1) ? -1 : 0;
}

/* Appends the row's line (JSON or CSV) to w->line. 0 or -1 when out of memory (or a JSON
** column that does not load, as before: reported the same way). */
static int export_format_row(export_writer *w, sqlite3_stmt *q, int csv)
{
    arb__buf *b = &w->line;
    int fail = csv ? 0 : arb__buf_append(b, "{", 1);
    for (size_t c = 0; c < w->n_cols && !fail; c++) {
        int col = (int)c, type = w->cols[c].type;
        const export_value *v = &w->v[c];
        int null = type == COL_INT || type == COL_REAL || type == COL_JSON
                       ? sqlite3_column_type(q, col) == SQLITE_NULL
                       : v->null;
        if (csv) {
            if (c) fail |= arb__buf_append(b, ",", 1);
            if (null) continue;
            if (type == COL_INT || type == COL_REAL || type == COL_JSON) {
                const char *text = (const char *)sqlite3_column_text(q, col);
                fail |= put_csv(b, text ? text : "", (size_t)sqlite3_column_bytes(q, col));
            } else {
                fail |= put_csv(b, v->text, v->len);
            }
            continue;
        }
        if ((fail = arb__buf_append(b, w->keys[c] + !c, strlen(w->keys[c]) - !c))) break;
        if (null) fail = arb__buf_append(b, "null", 4);
        else if (type == COL_INT) fail = put_integer(b, sqlite3_column_int64(q, col));
        else if (type == COL_REAL) fail = put_json(w, json_real(sqlite3_column_double(q, col)));
        else if (type == COL_JSON) /* valid: the column's CHECK says so */
            fail = put_json(w, json_loadb((const char *)sqlite3_column_blob(q, col),
                                          (size_t)sqlite3_column_bytes(q, col), 0, NULL));
        else fail = put_text(w, v->text, v->len);
    }
    return fail || arb__buf_append(b, csv ? "\r\n" : "}\n", 2) ? -1 : 0;
}

#define EXPORT_BLOCK (256 * 1024)

/* Writes the lines built so far. 0, or -1 when the write failed. */
static int export_flush(export_writer *w, FILE *out)
{
    size_t n = w->line.len;
    int fail = n && fwrite(w->line.data, 1, n, out) != n;
    arb__buf_reset(&w->line);
    return fail ? -1 : 0;
}

/* Writes the rows of q (its columns in the order of cols) as JSON lines, or CSV with a header
** line, byte for byte as jansson's compact dump of an object per row wrote them (its string
** escapes, reals and nested JSON). Used by every table export; refs, when not NULL, says
** where a COL_REQUEST's texts are. Returns ARB_OK or the store's failure; q is not
** finalized. */
static arb_status export_rows(arb_store *store, sqlite3_stmt *q, const struct export_column *cols,
                              size_t n_cols, const struct export_refs *refs, int csv, FILE *out)
{
    export_writer w = {.store = store, .cols = cols, .n_cols = n_cols, .refs = refs};
    arb__buf_init(&w.line, 0);
    arb__buf_init(&w.repaired, 0);
    arb_status st = ARB_OK;
    w.v = calloc(n_cols, sizeof *w.v);
    w.keys = calloc(n_cols, sizeof *w.keys);
    if (!w.v || !w.keys) {
        free(w.v);
        free(w.keys);
        return arb__store_fail(store, ARB_NOMEM, "out of memory");
    }
    for (size_t c = 0; c < n_cols && !st; c++)
        if ((size_t)snprintf(w.keys[c], sizeof w.keys[c], ",\"%s\":", cols[c].name) >=
            sizeof w.keys[c]) /* a longer name needs a longer key */
            st = arb__store_fail(store, ARB_INVALID, "export: column \"%s\": name too long",
                                 cols[c].name);
    if (!st && csv) {
        for (size_t c = 0; c < n_cols; c++) fprintf(out, "%s%s", c ? "," : "", cols[c].name);
        fputs("\r\n", out);
    }
    arb__decode_counts before, first;
    arb__store_decode_counts(store, &before);
    store->decoded_before_first_row = 0;
    int rc = SQLITE_DONE, rows = 0;
    while (!st && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (!rows++) {
            arb__store_decode_counts(store, &first);
            store->decoded_before_first_row =
                first.requests - before.requests + first.texts - before.texts;
        }
        if ((st = export_read_row(&w, q))) break;
        if (export_format_row(&w, q, csv)) {
            st = arb__store_fail(store, ARB_NOMEM, "out of memory");
            break;
        }
        /* lines go out in blocks: one write(2) per line of ~4.6 KB cost a fifth of the time */
        if (w.line.len >= EXPORT_BLOCK && export_flush(&w, out)) {
            st = arb__store_fail(store, ARB_IO, "export: write failed");
            break;
        }
    }
    if (!st && rc != SQLITE_DONE) st = arb__store_fail_db(store, "export");
    if (!st && export_flush(&w, out)) st = arb__store_fail(store, ARB_IO, "export: write failed");
    if (!st && (fflush(out) != 0 || ferror(out)))
        st = arb__store_fail(store, ARB_IO, "export: write failed");
    for (size_t c = 0; c < n_cols; c++) {
        free(w.v[c].blob);
        free(w.v[c].plain);
    }
    free(w.v);
    free(w.keys);
    free(w.request);
    arb__buf_free(&w.line);
    arb__buf_free(&w.repaired);
    return st;
}

/* arb_store_export's work, for the format. */
static arb_status export_any(arb_store *store, const char *format, FILE *out)
{
    static const char sql[] =
        "SELECT p.protocol, p.judge_name, p.item_id, p.candidate, p.baseline, p.template_name,"
        " p.options, p.ord, p.rep, p.position_verdict, p.model_verdict, c.model, c.content,"
        " c.error, c.prompt_tokens, c.completion_tokens, c.latency_ms, c.attempts,"
        " c.request, i.question, ac.answer, ab.answer," /* compact: rebuilt after the sort */
        " i.category, i.language,"
        " p.source,"
        " CASE p.strength WHEN 1 THEN 'weak' WHEN 2 THEN 'strong' END,"
        " c.cached_tokens, c.reasoning_tokens, c.cost_usd, c.reasoning, c.logprobs"
        " FROM pairwise p LEFT JOIN calls c ON c.id = p.call_id"
        " LEFT JOIN items i ON i.id = p.item_id"
        " LEFT JOIN answers ac ON ac.item_id = p.item_id AND ac.model = p.candidate"
        " LEFT JOIN answers ab ON ab.item_id = p.item_id AND ab.model = p.baseline"
        " ORDER BY p.protocol, p.judge_name, p.candidate, p.baseline, p.template_name,"
        " p.options, i.seq, p.item_id, p.rep, p.ord";
    if (!store) return ARB_INVALID;
    if (!format || !out)
        return arb__store_fail(store, ARB_INVALID, "export: no format or output given");
    if (!strcmp(format, "transcripts")) return arb__store_export_transcripts(store, out);
    if (!strcmp(format, "pointwise")) return arb__store_export_pointwise(store, out);
    int jsonl = !strcmp(format, "jsonl"), csv = !strcmp(format, "csv");
    if (!jsonl && !csv)
        return arb__store_fail(store, ARB_INVALID,
                               "export: unknown format \"%s\" (accepted: jsonl, csv, "
                               "transcripts, pointwise)", format);
    sqlite3_stmt *q = NULL;
    arb_status st = sqlite3_prepare_v2(store->db, sql, -1, &q, NULL) != SQLITE_OK
                        ? arb__store_fail_db(store, "export")
                        : export_rows(store, q, export_columns, N_EXPORT_COLUMNS, &pairwise_export_refs,
                                      csv, out);
    sqlite3_finalize(q);
    return st;
}

/* Writes every pairwise judgment joined with its call as JSON lines or CSV, every dialogue
** ("transcripts") or every pointwise judgment ("pointwise"). The exports' ORDER BY sorts whole
** rows: with the store's temp_store = MEMORY the sorter would hold them all in memory (when it
** sorted rebuilt texts: 404 MB for a 370 MB export of 80,000 judgments, 868 MB at 200,000 in
** bench-scale; compact rows are ~0.4 KB a judgment, still 400 MB at 1,000,000); with temp files
** it spills past the cache size (142 MB at 200,000 and at 1,000,000 judgments). */
arb_status arb_store_export(arb_store *store, const char *format, FILE *out)
{
    if (!store) return ARB_INVALID;
    int spill = sqlite3_get_autocommit(store->db); /* the pragma is refused inside a transaction */
    if (spill) sqlite3_exec(store->db, "PRAGMA temp_store = FILE", NULL, NULL, NULL);
    arb_status st = export_any(store, format, out);
    if (spill) sqlite3_exec(store->db, "PRAGMA temp_store = MEMORY", NULL, NULL, NULL);
    return st;
}

/* ---- pointwise: write (METHODS §8; arbiter grade) ------------------------------------------ */

/* Binds row to the POINTWISE_COLUMNS parameters after first (1 for the first row: ?1 is the
** statement's judged_at, bind_now). */
static void bind_pointwise(sqlite3_stmt *q, int first, const arb__pointwise_row *row)
{
    arb__store_bind_text(q, first + 1, row->protocol ? row->protocol : "pointwise");
    arb__store_bind_text(q, first + 2, row->judge_name);
    arb__store_bind_text(q, first + 3, row->item_id);
    arb__store_bind_text(q, first + 4, row->model);
    arb__store_bind_text(q, first + 5, row->language ? row->language : "");
    arb__store_bind_text(q, first + 6, row->kind);
    arb__store_bind_text(q, first + 7, row->template_name);
    sqlite3_bind_int(q, first + 8, row->rep);
    if (row->value < 0) sqlite3_bind_null(q, first + 9);
    else sqlite3_bind_int(q, first + 9, row->value);
    if (row->call_id > 0) sqlite3_bind_int64(q, first + 10, row->call_id);
    else sqlite3_bind_null(q, first + 10);
    arb__store_bind_text(q, first + 11, row->task ? row->task : "generic");
    arb__store_bind_text(q, first + 12,
                         row->value < 0 ? (row->reason ? row->reason : "no valid answer") : NULL);
}

/* Inserts (or updates) one pointwise judgment at once; the message of a refusal names it. */
static arb_status put_pointwise_now(arb_store *s, const arb__pointwise_row *row)
{
    sqlite3_stmt *q = s->stmt[ST_PUT_POINTWISE];
    bind_pointwise(q, 1, row);
    bind_now(q, 1, TIME_ISO);
    int rc = sqlite3_step(q);
    arb_status st = ARB_OK;
    if (rc != SQLITE_DONE)
        st = arb__store_fail(s, ARB_DB, "cannot store the pointwise judgment of item \"%s\" by "
                             "%s (model %s, rep %d): %s", row->item_id ? row->item_id : "",
                             row->judge_name ? row->judge_name : "", row->model ? row->model : "",
                             row->rep, sqlite3_errmsg(s->db));
    sqlite3_reset(q);
    return st;
}

/* The waiting pointwise judgment i as a row (strings borrowed from s->pointwise_text). */
static arb__pointwise_row pending_pointwise_row(const arb_store *s, size_t i)
{
    const pending_pointwise *p = &s->pointwise[i];
    const char *t[POINTWISE_TEXTS];
    for (int k = 0; k < POINTWISE_TEXTS; k++)
        t[k] = p->text[k] == SIZE_MAX ? NULL : s->pointwise_text.data + p->text[k];
    return (arb__pointwise_row){.protocol = t[0], .judge_name = t[1], .item_id = t[2],
                                .model = t[3], .language = t[4], .kind = t[5],
                                .template_name = t[6], .task = t[7], .reason = t[8],
                                .rep = p->rep, .value = p->value, .call_id = p->call_id};
}

static void bind_waiting_pointwise(arb_store *s, sqlite3_stmt *q, int first, size_t i)
{
    arb__pointwise_row row = pending_pointwise_row(s, i);
    bind_pointwise(q, first, &row);
}

static arb_status put_waiting_pointwise(arb_store *s, size_t i)
{
    arb__pointwise_row row = pending_pointwise_row(s, i);
    return put_pointwise_now(s, &row);
}

static const row_group pointwise_group = {POINTWISE_INSERT, POINTWISE_UPSERT,
                                          "pointwise judgments", POINTWISE_COLUMNS, TIME_ISO,
                                          bind_waiting_pointwise, put_waiting_pointwise};

/* Inserts the pointwise judgments waiting in their group, as flush_pairwise does. */
static arb_status flush_pointwise(arb_store *s)
{
    arb_status st = flush_group(s, &pointwise_group, s->put_pointwise_group, s->n_pointwise);
    s->n_pointwise = 0;
    arb__buf_reset(&s->pointwise_text);
    return st;
}

/* Upserts one pointwise judgment (see internal.h): a rerun of the same judgment replaces its
** value, reason, task and call. Inside a transaction the row may wait in its group (written
** by the commit at the latest). ARB_OK or ARB_DB with the store's message. */
arb_status arb__store_put_pointwise(arb_store *s, const arb__pointwise_row *row)
{
    if (!s->in_tx || sqlite3_get_autocommit(s->db)) return put_pointwise_now(s, row);
    pending_pointwise *p = &s->pointwise[s->n_pointwise];
    const char *texts[POINTWISE_TEXTS] = {row->protocol,  row->judge_name,    row->item_id,
                                          row->model,     row->language,      row->kind,
                                          row->template_name, row->task,     row->reason};
    for (int i = 0; i < POINTWISE_TEXTS; i++) {
        p->text[i] = SIZE_MAX;
        if (!texts[i]) continue;
        p->text[i] = s->pointwise_text.len;
        if (arb__buf_append(&s->pointwise_text, texts[i], strlen(texts[i]) + 1))
            return arb__store_fail(s, ARB_NOMEM, "out of memory");
    }
    p->rep = row->rep;
    p->value = row->value;
    p->call_id = row->call_id;
    return ++s->n_pointwise == PAIRWISE_GROUP ? flush_pointwise(s) : ARB_OK;
}

/* The columns of arbiter export --format pointwise, in the order of the query below. */
static const struct export_column pointwise_export_columns[] = {
    {"judge", COL_TEXT},          {"item", COL_TEXT},
    {"model", COL_TEXT},          {"language", COL_TEXT},
    {"group", COL_TEXT},          {"kind", COL_TEXT},
    {"task", COL_TEXT},           {"template", COL_TEXT},
    {"rep", COL_INT},             {"value", COL_INT},
    {"reason", COL_TEXT},         {"content", COL_TEXT},
    {"error", COL_TEXT},          {"prompt_tokens", COL_INT},
    {"completion_tokens", COL_INT}, {"latency_ms", COL_REAL},
    {"attempts", COL_INT},          {"reasoning", COL_TEXT},
    {"reasoning_tokens", COL_INT},  {"cached_tokens", COL_INT},
    {"logprobs", COL_JSON},
    /* added 2026-11-28: the request as sent (stored compact since then, so this is the way to
    ** read it back; rebuilt after the ORDER BY, as the side-by-side export's) */
    {"request", COL_REQUEST},
};

/* Writes every pointwise judgment joined with its call and item as JSON lines (see
** internal.h). */
arb_status arb__store_export_pointwise(arb_store *s, FILE *out)
{
    static const char sql[] =
        "SELECT p.judge_name, p.item_id, p.model, p.language, i.grp, p.kind, p.task,"
        " p.template_name, p.rep, p.value, p.reason, c.content, c.error, c.prompt_tokens,"
        " c.completion_tokens, c.latency_ms, c.attempts, c.reasoning, c.reasoning_tokens,"
        " c.cached_tokens, c.logprobs, c.request"
        " FROM pointwise p LEFT JOIN calls c ON c.id = p.call_id"
        " LEFT JOIN items i ON i.id = p.item_id"
        " ORDER BY p.judge_name, p.template_name, p.kind, p.task, i.grp, p.language, i.seq,"
        " p.item_id, p.model, p.rep";
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK) return arb__store_fail_db(s, "export");
    arb_status st = export_rows(s, q, pointwise_export_columns,
                                sizeof pointwise_export_columns / sizeof *pointwise_export_columns,
                                NULL, 0, out);
    sqlite3_finalize(q);
    return st;
}

/* Runs the query sql and hands each row to row(q, ud): 0 goes on, 1 stops (ARB_OK), -1 means a
** text column came back NULL from a NOT NULL (or coalesced) column, i.e. SQLite ran out of
** memory converting it. what names the rows in messages ("pointwise judgments"). ARB_OK, or
** ARB_DB / ARB_NOMEM with the store's message. One walk for every callback reader. */
arb_status arb__store_each_row(arb_store *s, const char *sql, const char *what,
                           int (*row)(sqlite3_stmt *q, void *ud), void *ud)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail(s, ARB_DB, "cannot read %s: %s", what, sqlite3_errmsg(s->db));
    arb_status st = ARB_OK;
    int rc, r = 0;
    while (!r && (rc = sqlite3_step(q)) == SQLITE_ROW) r = row(q, ud);
    if (r < 0) st = arb__store_fail(s, ARB_NOMEM, "%s: out of memory", what);
    else if (!r && rc != SQLITE_DONE)
        st = arb__store_fail(s, ARB_DB, "cannot read %s: %s", what, sqlite3_errmsg(s->db));
    sqlite3_finalize(q);
    return st;
}

/* ---- pointwise: read ---------------------------------------------------------------------- */

/* each_pointwise's callback and its data, for each_row. */
typedef struct pointwise_walk {
    arb__pointwise_fn fn;
    void *ud;
} pointwise_walk;

static int pointwise_row(sqlite3_stmt *q, void *ud)
{
    const pointwise_walk *w = ud;
    arb__pointwise_row r = {
        .protocol = (const char *)sqlite3_column_text(q, 0),
        .judge_name = (const char *)sqlite3_column_text(q, 1),
        .item_id = (const char *)sqlite3_column_text(q, 2),
        .model = (const char *)sqlite3_column_text(q, 3),
        .language = (const char *)sqlite3_column_text(q, 4),
        .kind = (const char *)sqlite3_column_text(q, 5),
        .task = (const char *)sqlite3_column_text(q, 6),
        .template_name = (const char *)sqlite3_column_text(q, 7),
        .rep = sqlite3_column_int(q, 8),
        .value = sqlite3_column_type(q, 9) == SQLITE_NULL ? -1 : sqlite3_column_int(q, 9),
        .reason = (const char *)sqlite3_column_text(q, 10), /* NULL when valid */
        .call_id = sqlite3_column_int64(q, 11),
        .item_language = (const char *)sqlite3_column_text(q, 12),
        .group = (const char *)sqlite3_column_text(q, 13),
        .item_seq = sqlite3_column_int64(q, 14),
    };
    if (!r.protocol || !r.judge_name || !r.item_id || !r.model || !r.language || !r.kind ||
        !r.task || !r.template_name || !r.item_language || !r.group)
        return -1;
    return w->fn(w->ud, &r) ? 1 : 0;
}

/* Calls fn for every pointwise judgment with its item's language, parallel group and benchmark
** order ("" for a missing language or group), ordered by judge, template, kind, task, group,
** item language, item, model, repetition, then evaluation language and protocol (the rest of
** the unique key, so the order is total). A NULL value (E) is passed as value -1. Strings are
** valid only during the call. Returns ARB_OK also when fn stops the walk; ARB_DB or ARB_NOMEM
** with the store's message. */
arb_status arb__store_each_pointwise(arb_store *s, arb__pointwise_fn fn, void *ud)
{
    static const char sql[] =
        "SELECT p.protocol, p.judge_name, p.item_id, p.model, p.language, p.kind, p.task,\n"
        "       p.template_name, p.rep, p.value, p.reason, p.call_id,\n"
        "       coalesce(i.language, ''), coalesce(i.grp, ''), i.seq\n"
        "  FROM pointwise p JOIN items i ON i.id = p.item_id\n"
        " ORDER BY p.judge_name, p.template_name, p.kind, p.task, coalesce(i.grp, ''),\n"
        "          coalesce(i.language, ''), p.item_id, p.model, p.rep, p.language, p.protocol";
    if (!fn) return arb__store_fail(s, ARB_INVALID, "each_pointwise: no callback");
    pointwise_walk w = {fn, ud};
    return arb__store_each_row(s, sql, "pointwise judgments", pointwise_row, &w);
}

/* ---- persona: read ------------------------------------------------------------------------ */

/* each_persona_score's callback and its data, for each_row. */
typedef struct persona_walk {
    arb__persona_score_fn fn;
    void *ud;
} persona_walk;

static int persona_score_row(sqlite3_stmt *q, void *ud)
{
    const persona_walk *w = ud;
    arb__persona_score_row r = {
        .protocol = (const char *)sqlite3_column_text(q, 0),
        .judge_name = (const char *)sqlite3_column_text(q, 1),
        .item_id = (const char *)sqlite3_column_text(q, 2),
        .subject = (const char *)sqlite3_column_text(q, 3),
        .category = (const char *)sqlite3_column_text(q, 4),
        .identity = (const char *)sqlite3_column_text(q, 5),
        .position = sqlite3_column_int(q, 6),
        .round = sqlite3_column_int(q, 7),
        .metric = (const char *)sqlite3_column_text(q, 8),
        .value = sqlite3_column_type(q, 9) == SQLITE_NULL ? NAN : sqlite3_column_double(q, 9),
        .call_id = sqlite3_column_int64(q, 10),
        .rep = sqlite3_column_int(q, 11),
        .base = (const char *)sqlite3_column_text(q, 12),
        .variant = (const char *)sqlite3_column_text(q, 13),
        .reason = (const char *)sqlite3_column_text(q, 14), /* NULL when valid */
    };
    if (!r.protocol || !r.judge_name || !r.item_id || !r.subject || !r.category ||
        !r.identity || !r.metric || !r.base || !r.variant)
        return -1;
    return w->fn(w->ud, &r) ? 1 : 0;
}

/* See internal.h. Scores whose persona is missing read with category and identity "" (the
** analysis leaves them out); rep is that of the call (0 when the call row is missing). */
arb_status arb__store_each_persona_score(arb_store *s, arb__persona_score_fn fn, void *ud)
{
    static const char sql[] =
        "SELECT sc.protocol, sc.judge_name, sc.item_id, sc.subject,\n"
        "       coalesce(p.category, ''), coalesce(p.identity, ''), sc.position, sc.round,\n"
        "       sc.metric, sc.value, sc.call_id, coalesce(c.rep, 0),\n"
        "       coalesce(i.category, ''),\n"
        "       coalesce(CASE WHEN json_type(i.extra, '$.variant') = 'text'\n"
        "                     THEN json_extract(i.extra, '$.variant') END, ''),\n"
        "       sc.reason\n"
        "  FROM scores sc\n"
        "  LEFT JOIN personas p ON p.id = sc.persona_id\n"
        "  LEFT JOIN calls c ON c.id = sc.call_id\n"
        "  LEFT JOIN items i ON i.id = sc.item_id\n"
        " ORDER BY sc.judge_name, sc.protocol, coalesce(p.category, ''), sc.call_id, sc.position,\n"
        "          sc.metric";
    if (!fn) return arb__store_fail(s, ARB_INVALID, "each_persona_score: no callback");
    persona_walk w = {fn, ud};
    return arb__store_each_row(s, sql, "persona scores", persona_score_row, &w);
}

/* ---- persona: write (METHODS §9; arbiter persona run) -------------------------------------- */

/* The statements that store persona scores (arb__store_put_persona_scores, persona_id),
** prepared once per connection on first use: preparing them for every call cost ~800,000
** instructions a call (six to eight prepares against the whole schema; callgrind, 7,200
** calls), 96% of a persona rerun that wrote nothing new. */
enum { P_DROP_SCORES, P_DROP_ATTRIBUTIONS, P_PUT_ATTRIBUTION, P_PUT_SCORE, P_PUT_PERSONA,
       P_GET_PERSONA, P_STORED, P__COUNT };

static sqlite3_stmt *persona_stmt(arb_store *s, int which)
{
    static const char *const sql[P__COUNT] = {
        [P_DROP_SCORES] = "DELETE FROM scores WHERE protocol = ?1 AND judge_name = ?2 AND"
                          " call_id = ?3",
        [P_DROP_ATTRIBUTIONS] = "DELETE FROM persona_attributions WHERE call_id = ?3",
        [P_PUT_ATTRIBUTION] = "INSERT INTO persona_attributions (call_id, position, persona_id,"
                              " item_id, response, label) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        [P_PUT_SCORE] = "INSERT INTO scores (protocol, judge_name, item_id, subject, persona_id,"
                        " position, round, metric, value, call_id, reason)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        [P_PUT_PERSONA] = "INSERT INTO personas (category, identity) VALUES (?1, ?2)"
                          " ON CONFLICT (category, identity) DO NOTHING",
        [P_GET_PERSONA] = "SELECT id FROM personas WHERE category = ?1 AND identity = ?2",
        [P_STORED] = "SELECT s.position, s.round, s.metric, s.value, s.reason, s.item_id,"
                     " s.subject, p.category, p.identity, a.item_id, a.response, a.label"
                     " FROM scores s LEFT JOIN personas p ON p.id = s.persona_id"
                     " LEFT JOIN persona_attributions a ON a.call_id = s.call_id"
                     " AND a.position = s.position AND a.persona_id = s.persona_id"
                     " WHERE s.protocol = ?1 AND s.judge_name = ?2 AND s.call_id = ?3",
    };
    _Static_assert(P__COUNT == sizeof ((arb_store *)0)->persona / sizeof (sqlite3_stmt *),
                   "one slot per statement");
    if (!s->persona[which] &&
        sqlite3_prepare_v3(s->db, sql[which], -1, SQLITE_PREPARE_PERSISTENT, &s->persona[which],
                           NULL) != SQLITE_OK) {
        sqlite3_finalize(s->persona[which]);
        s->persona[which] = NULL;
    }
    return s->persona[which];
}

/* The id of identity in category (table personas), added when new. */
static arb_status persona_id(arb_store *s, const char *category, const char *identity,
                             long long *id)
{
    for (int k = P_PUT_PERSONA; k <= P_GET_PERSONA; k++) {
        sqlite3_stmt *q = persona_stmt(s, k);
        if (!q) return arb__store_fail_db(s, "cannot store an identity");
        arb__store_bind_text(q, 1, category);
        arb__store_bind_text(q, 2, identity);
        int rc = sqlite3_step(q);
        if (k == P_GET_PERSONA && rc == SQLITE_ROW) *id = sqlite3_column_int64(q, 0);
        arb_status st = rc == SQLITE_ROW || rc == SQLITE_DONE
                            ? ARB_OK
                            : arb__store_fail_db(s, "cannot store an identity");
        sqlite3_reset(q);
        if (st) return st;
    }
    return ARB_OK;
}

static int same_text(const unsigned char *stored, const char *text)
{
    return stored ? text && !strcmp((const char *)stored, text) : !text;
}

/* The label persona_attributions gives the response at position pos of a call of protocol. */
static const char *attribution_label(const char *protocol, int pos)
{
    int pair = !strcmp(protocol, "persona2") || !strcmp(protocol, "panel2");
    return !pair ? "response" : pos ? "candidate_2" : "candidate_1";
}

/* 1 when the store holds exactly rows (one call's, all of one protocol and judge) with their
** attributions, as arb__store_put_persona_scores would write them; 0 otherwise or on error (the
** caller then writes them). A rerun gives every call's rows again: rewriting them unchanged
** (a delete and ~55 index seeks a call) was what such a rerun spent its time on. */
static int persona_rows_stored(arb_store *s, const arb__persona_score_row *rows, size_t n)
{
    sqlite3_stmt *q = persona_stmt(s, P_STORED);
    if (!q) return 0;
    arb__store_bind_text(q, 1, rows[0].protocol);
    arb__store_bind_text(q, 2, rows[0].judge_name);
    sqlite3_bind_int64(q, 3, rows[0].call_id);
    size_t matched = 0, stored = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
        stored++;
        int pos = sqlite3_column_int(q, 0), round = sqlite3_column_int(q, 1);
        const unsigned char *metric = sqlite3_column_text(q, 2);
        for (size_t i = 0; i < n; i++) {
            const arb__persona_score_row *r = &rows[i];
            if ((r->position ? 1 : 0) != pos || r->round != round || !same_text(metric, r->metric))
                continue;
            int null = sqlite3_column_type(q, 3) == SQLITE_NULL;
            const char *reason = isnan(r->value) ? (r->reason ? r->reason : "no valid scores")
                                                 : NULL;
            matched += null == isnan(r->value) &&
                       (null || sqlite3_column_double(q, 3) == r->value) &&
                       same_text(sqlite3_column_text(q, 4), reason) &&
                       same_text(sqlite3_column_text(q, 5), r->item_id) &&
                       same_text(sqlite3_column_text(q, 6), r->subject) &&
                       same_text(sqlite3_column_text(q, 7), r->category) &&
                       same_text(sqlite3_column_text(q, 8), r->identity) &&
                       same_text(sqlite3_column_text(q, 9), r->item_id) &&
                       same_text(sqlite3_column_text(q, 10), r->subject) &&
                       same_text(sqlite3_column_text(q, 11), attribution_label(r->protocol, pos));
            break;
        }
    }
    sqlite3_reset(q);
    return stored == n && matched == n;
}

/* Stores the rows of one call (see internal.h): the call's earlier rows of this judge and its
** attributions are replaced, each identity is added to personas when new, each position
** present gets its attribution (label "response" in phase 1, "candidate_1"/"candidate_2" in
** phase 2, as the prompt calls it), each row a score with its reason when E; rows stored
** exactly so already are left as they are. Runs inside the caller's transaction. ARB_OK,
** ARB_INVALID for rows of several calls, or ARB_DB. */
arb_status arb__store_put_persona_scores(arb_store *s, const arb__persona_score_row *rows,
                                         size_t n)
{
    if (!n) return ARB_OK;
    for (size_t i = 1; i < n; i++)
        if (rows[i].call_id != rows[0].call_id || strcmp(rows[i].judge_name, rows[0].judge_name) ||
            strcmp(rows[i].protocol, rows[0].protocol))
            return arb__store_fail(s, ARB_INVALID, "put_persona_scores: rows of several calls");
    if (persona_rows_stored(s, rows, n)) return ARB_OK; /* a rerun's: nothing to write */
    sqlite3_stmt *q[P__COUNT] = {0};
    for (int k = 0; k <= P_PUT_SCORE; k++)
        if (!(q[k] = persona_stmt(s, k))) return arb__store_fail_db(s, "cannot store persona scores");
    arb_status st = ARB_OK;
    arb__store_bind_text(q[P_DROP_SCORES], 1, rows[0].protocol);
    arb__store_bind_text(q[P_DROP_SCORES], 2, rows[0].judge_name);
    sqlite3_bind_int64(q[P_DROP_SCORES], 3, rows[0].call_id);
    sqlite3_bind_int64(q[P_DROP_ATTRIBUTIONS], 3, rows[0].call_id); /* its only parameter */
    for (int k = P_DROP_SCORES; k <= P_DROP_ATTRIBUTIONS && !st; k++)
        st = arb__store_step_done(s, q[k], "cannot store persona scores");
    long long ids[2] = {0, 0};
    for (size_t i = 0; i < n && !st; i++) {
        const arb__persona_score_row *r = &rows[i];
        int pos = r->position ? 1 : 0;
        if (!ids[pos]) {
            if ((st = persona_id(s, r->category, r->identity, &ids[pos]))) break;
            sqlite3_stmt *a = q[P_PUT_ATTRIBUTION];
            sqlite3_bind_int64(a, 1, r->call_id);
            sqlite3_bind_int(a, 2, pos);
            sqlite3_bind_int64(a, 3, ids[pos]);
            arb__store_bind_text(a, 4, r->item_id);
            arb__store_bind_text(a, 5, r->subject);
            arb__store_bind_text(a, 6, attribution_label(r->protocol, pos));
            if ((st = arb__store_step_done(s, a, "cannot store a persona attribution"))) break;
        }
        sqlite3_stmt *w = q[P_PUT_SCORE];
        arb__store_bind_text(w, 1, r->protocol);
        arb__store_bind_text(w, 2, r->judge_name);
        arb__store_bind_text(w, 3, r->item_id);
        arb__store_bind_text(w, 4, r->subject);
        sqlite3_bind_int64(w, 5, ids[pos]);
        sqlite3_bind_int(w, 6, pos);
        sqlite3_bind_int(w, 7, r->round);
        arb__store_bind_text(w, 8, r->metric);
        if (isnan(r->value)) sqlite3_bind_null(w, 9);
        else sqlite3_bind_double(w, 9, r->value);
        sqlite3_bind_int64(w, 10, r->call_id);
        arb__store_bind_text(w, 11, isnan(r->value) ? (r->reason ? r->reason : "no valid scores") : NULL);
        st = arb__store_step_done(s, w, "cannot store a persona score");
    }
    return st;
}

/* ---- persona panel (METHODS §9; arbiter persona run --panel) -------------------------------- */

arb_status arb__store_panel_other_rounds(arb_store *s, const char *label, const char *first_agent,
                                         int rounds, int *found)
{
    static const char sql[] =
        "SELECT 1 FROM scores c\n"
        " WHERE c.protocol IN ('persona1', 'persona2') AND c.judge_name = ?1\n"
        "   AND NOT EXISTS (SELECT 1 FROM scores a\n"
        "                    WHERE a.protocol IN ('persona1', 'persona2', 'panel1', 'panel2')\n"
        "                      AND a.judge_name = ?2 AND a.call_id = c.call_id AND a.round = ?3)\n"
        " LIMIT 1";
    *found = 0;
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return arb__store_fail_db(s, "cannot read panel consensus scores");
    arb__store_bind_text(q, 1, label);
    arb__store_bind_text(q, 2, first_agent);
    sqlite3_bind_int(q, 3, rounds);
    int rc = sqlite3_step(q);
    arb_status st = ARB_OK;
    if (rc == SQLITE_ROW) *found = 1;
    else if (rc != SQLITE_DONE) st = arb__store_fail_db(s, "cannot read panel consensus scores");
    sqlite3_finalize(q);
    return st;
}
