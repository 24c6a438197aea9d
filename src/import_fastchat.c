/*
** import_fastchat.c -- FastChat llm_judge (MT-Bench) judgment files as judgments made
** elsewhere (METHODS §2-§5 then read them like arbiter's own): pairwise files
** (model_judgment/<judge>_pair.jsonl) become two side-by-side judgments per line, one per game;
** single-answer grading files (<judge>_single.jsonl) become pointwise grades of kind "grade10".
** Also the reader of one pairwise line that the battle importer (import.c) shares, so a line
** means the same battles and the same judgments.
**
** What FastChat writes (fastchat/llm_judge/common.py, play_a_match_pair / play_a_match_single):
**   - pair: question_id, model_1, model_2, g1_winner, g2_winner, judge [model, prompt name],
**     g1_judgment, g2_judgment, turn, tstamp. Game 1 shows model_1 first as "A", game 2 shows
**     model_2 first; both winners are mapped back to model names before they are written, so
**     g2_winner "model_1" means model_1 won game 2 (the answer shown SECOND): position B.
**     "tie" is [[C]]; "error" means the judge's reply held no verdict.
**   - pair lines with m1_score/m2_score were graded by two single-answer calls: one verdict
**     written twice and no shown order, so they give no side-by-side judgment (counted as
**     skipped) but keep the one battle the battle importer gives them.
**   - single: question_id, model, judge, judgment, score (the [[rating]], -1 when none was
**     found), turn.
**
** Invariants:
**   - Options 3 (A, B, C tie): FastChat's pairwise prompts have no "both bad".
**   - Candidate and baseline (README "Import"): the baseline of a pair is params->baseline
**     when it is one of the two models, else model_2 (FastChat's pairwise-baseline mode
**     writes the baseline as model_2; pairwise-all writes the later model of its list there).
**   - Items: "<question_id>" for turn 1, "<question_id>#<turn>" for later turns (as the battle
**     importer names them).
**   - When the file sits in a folder named model_judgment, its parent is taken as FastChat's
**     data/<bench> folder: question.jsonl there gives each item's question text (turns[t-1])
**     and category, model_answer/<model>.jsonl the answers (choices[0].turns[t-1]), so lengths
**     are known. Either may be missing; a malformed one is an error like the judgment file.
**
** Not here: storing (store_import.c), the battles themselves (import.c, battles.c).
*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- one pairwise line, shared with the battle importer --------------------------------------- */

/* The s of a FastChat winner for a game that showed `first` first: "model_1"/"model_2" name
** the model (already mapped back by FastChat), "tie"; 2 for "error"; 3 for anything else. */
static int winner_s(const char *winner, const char *first)
{
    if (!winner) return 3;
    if (!strcmp(winner, "tie")) return 0;
    if (!strcmp(winner, "error")) return 2;
    if (strcmp(winner, "model_1") && strcmp(winner, "model_2")) return 3;
    return !strcmp(winner, first) ? -1 : 1;
}

/* The question_id of a line as text (*qid borrows obj or buf). */
static arb_status read_qid(arb_battles *b, json_t *obj, const char *path, size_t line,
                           char *buf, size_t size, const char **qid)
{
    json_t *v = json_object_get(obj, "question_id");
    if (!(*qid = arb__battles_question_text(v, buf, size)))
        return arb__battles_field_fail(b, path, line, "question_id",
                                       "an integer or a non-empty string", v);
    return ARB_OK;
}

/* Reads question_id and turn into p->question_id / p->turn / p->item. */
static arb_status read_question(arb_battles *b, json_t *obj, const char *path, size_t line,
                                arb__fastchat_line *p)
{
    arb_status st = read_qid(b, obj, path, line, p->qbuf, sizeof p->qbuf, &p->question_id);
    if (st) return st;
    json_t *v = json_object_get(obj, "turn");
    p->turn = 1;
    if (v && !json_is_null(v)) {
        p->turn = json_is_integer(v) ? json_integer_value(v) : 0;
        if (p->turn < 1)
            return arb__battles_field_fail(b, path, line, "turn", "an integer >= 1", v);
    }
    /* the second turn of a question is a comparison of its own: "<question_id>#<turn>" */
    p->item = p->turn == 1 ? arb__strdup(p->question_id)
                           : arb__sprintf("%s#%" JSON_INTEGER_FORMAT, p->question_id, p->turn);
    if (!p->item) return arb__battles_fail(b, ARB_NOMEM, "%s: out of memory", path);
    return ARB_OK;
}

/* Reads "judge": [judge model, prompt name] or a plain string; absent or null leaves "". */
static arb_status read_judge(arb_battles *b, json_t *obj, const char *path, size_t line,
                             arb__fastchat_line *p)
{
    json_t *v = json_object_get(obj, "judge");
    p->judge = "";
    p->prompt = NULL;
    if (json_is_array(v)) { /* [judge model, prompt name]: the model is the judge */
        json_t *model = json_array_get(v, 0);
        if (!(p->judge = arb__battles_name_text(model)))
            return arb__battles_field_fail(b, path, line, "judge",
                                           "an array starting with the judge model's name",
                                           model ? model : v);
        json_t *prompt = json_array_get(v, 1);
        if (prompt && !json_is_null(prompt) && !(p->prompt = arb__battles_name_text(prompt)))
            return arb__battles_field_fail(b, path, line, "judge",
                                           "[judge model, prompt name] with the prompt name a "
                                           "non-empty string", prompt);
    } else if (v && !json_is_null(v)) {
        if (!(p->judge = arb__battles_name_text(v)))
            return arb__battles_field_fail(b, path, line, "judge",
                                           "an array [judge model, prompt name] or a string", v);
    }
    return ARB_OK;
}

/* See internal.h. */
arb_status arb__fastchat_pair_read(arb_battles *b, json_t *obj, const char *path, size_t line,
                                   arb__fastchat_line *p)
{
    memset(p, 0, sizeof *p);
    arb_status st = read_question(b, obj, path, line, p);
    if (st) return st;
    static const char hint[] = "a non-empty string (a pairwise judgment; single-answer grading "
                               "files have \"model\" and \"score\" instead)";
    json_t *v;
    if (!(p->model_1 = arb__battles_name_text(v = json_object_get(obj, "model_1"))))
        return arb__battles_field_fail(b, path, line, "model_1", hint, v);
    if (!(p->model_2 = arb__battles_name_text(v = json_object_get(obj, "model_2"))))
        return arb__battles_field_fail(b, path, line, "model_2", hint, v);
    if (!strcmp(p->model_1, p->model_2))
        return arb__battles_field_fail(b, path, line, "model_2", "a model other than model_1", v);
    if ((st = read_judge(b, obj, path, line, p))) return st;
    static const char winners[] = "\"model_1\", \"model_2\", \"tie\" or \"error\"";
    json_t *g1 = json_object_get(obj, "g1_winner"), *g2 = json_object_get(obj, "g2_winner");
    p->s1 = winner_s(json_string_value(g1), "model_1");
    p->s2 = winner_s(json_string_value(g2), "model_2");
    if (p->s1 == 3) return arb__battles_field_fail(b, path, line, "g1_winner", winners, g1);
    if (p->s2 == 3) return arb__battles_field_fail(b, path, line, "g2_winner", winners, g2);
    p->single = json_object_get(obj, "m1_score") != NULL;
    p->judgment_1 = json_string_value(json_object_get(obj, "g1_judgment"));
    p->judgment_2 = json_string_value(json_object_get(obj, "g2_judgment"));
    return ARB_OK;
}

/* See internal.h. */
arb_status arb__fastchat_battles(arb_battles *b, const arb__fastchat_line *p,
                                 const char *reviewer, const char *path, size_t line)
{
    /* game 1 shows model_1 first; game 2 model_2, and g2_winner names the model, so model_2
    ** winning is i better. Pairs graded by single-answer scores (m1_score, m2_score) carry one
    ** verdict written twice and no shown order: one battle, not two. */
    for (int game = 0; game < (p->single ? 1 : 2); game++) {
        int s = game == 0 ? p->s1 : p->s2;
        if (s == 2) { /* "error": no verdict, left out and counted */
            b->skipped++;
            continue;
        }
        arb_battle battle = arb_battle_init();
        battle.question = p->item;
        battle.reviewer = reviewer;
        battle.model_i = game == 0 ? p->model_1 : p->model_2;
        battle.model_j = game == 0 ? p->model_2 : p->model_1;
        battle.s = s;
        arb_status st = arb_battles_add(b, &battle);
        if (st == ARB_INVALID) /* checked when read, so only a surprise; still name the place */
            return arb__battles_fail(b, ARB_PARSE, "%s:%zu: %s", path, line,
                                     arb_battles_errmsg(b));
        if (st) return st;
    }
    return ARB_OK;
}

/* See internal.h. */
void arb__fastchat_line_free(arb__fastchat_line *p)
{
    if (!p) return;
    free(p->item);
    p->item = NULL;
}

/* ---- the data/<bench> folder next to model_judgment ----------------------------------------- */

typedef struct bench_data {
    char *root;        /* data/<bench>, NULL when the file is not in a model_judgment folder */
    json_t *questions; /* question_id text -> question object; NULL without question.jsonl */
    json_t *answers;   /* model -> (question_id text -> turns array), null: no answer file */
} bench_data;

typedef struct fastchat_import {
    arb__import_set *set;
    const arb_import_params *params;
    const char *file_judge; /* "<judge>" of "<judge>_pair.jsonl", NULL when the name has none */
    bench_data data;
    json_t *keep;           /* filled while a question or answer file is read */
    int keep_answers;       /* keep is an answer file's */
    size_t pairs, baseline_named; /* pair lines read; of them, lines naming params->baseline */
} fastchat_import;

/* The parent of path's folder when that folder is named model_judgment (caller frees), or
** NULL. */
static char *bench_root(const char *path)
{
    const char *slash = strrchr(path, '/');
    static const char folder[] = "model_judgment";
    size_t len = sizeof folder - 1;
    if (!slash || (size_t)(slash - path) < len) return NULL;
    const char *name = slash - len;
    if (memcmp(name, folder, len) || (name > path && name[-1] != '/')) return NULL;
    if (name == path) return arb__strdup(".");
    return arb__strndup(path, (size_t)(name - 1 - path) ? (size_t)(name - 1 - path) : 1);
}

static int is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* A line of question.jsonl (kept whole) or of an answer file (its choices[0].turns kept), put
** into im->keep under its question_id. */
static arb_status keep_line(void *ud, arb_battles *b, json_t *obj, const char *path, size_t line)
{
    fastchat_import *im = ud;
    char qbuf[32];
    const char *qid;
    arb_status st = read_qid(b, obj, path, line, qbuf, sizeof qbuf, &qid);
    if (st) return st;
    json_t *kept = obj, *v;
    if (im->keep_answers) {
        v = json_object_get(obj, "choices");
        if (!json_is_array(kept = json_object_get(json_array_get(v, 0), "turns")))
            return arb__battles_field_fail(b, path, line, "choices",
                                           "an array whose first element has \"turns\" (the "
                                           "answer's turns)", v);
    } else if ((v = json_object_get(obj, "turns")) && !json_is_array(v)) {
        return arb__battles_field_fail(b, path, line, "turns", "an array of the user's turns", v);
    } else if ((v = json_object_get(obj, "category")) && !json_is_null(v) &&
               !arb__battles_name_text(v)) {
        return arb__battles_field_fail(b, path, line, "category", "a non-empty string", v);
    }
    if (json_object_set(im->keep, qid, kept))
        return arb__battles_fail(b, ARB_NOMEM, "%s: out of memory", path);
    return ARB_OK;
}

/* Reads a question or answer file into a new map *out (question_id -> what keep_line keeps). */
static arb_status read_keyed(fastchat_import *im, arb_battles *b, const char *path, int answers,
                             json_t **out)
{
    if (!(im->keep = json_object())) return arb__battles_fail(b, ARB_NOMEM, "out of memory");
    im->keep_answers = answers;
    arb_status st = arb__battles_each_json(b, path, 0, keep_line, im);
    if (st) json_decref(im->keep);
    else *out = im->keep;
    im->keep = NULL;
    return st;
}

/* The answer turns of model (loaded from model_answer/<model>.jsonl on first use), or NULL. A
** model name that could leave the folder ("/", a leading ".") has no answers. */
static arb_status model_turns(fastchat_import *im, arb_battles *b, const char *model,
                              json_t **turns)
{
    *turns = NULL;
    if (!im->data.root) return ARB_OK;
    json_t *known = json_object_get(im->data.answers, model);
    if (known) {
        *turns = json_is_object(known) ? known : NULL;
        return ARB_OK;
    }
    json_t *loaded = json_null();
    arb_status st = ARB_OK;
    if (!strchr(model, '/') && model[0] != '.') {
        char *path = arb__sprintf("%s/model_answer/%s.jsonl", im->data.root, model);
        if (!path) return arb__battles_fail(b, ARB_NOMEM, "out of memory");
        if (is_file(path)) st = read_keyed(im, b, path, 1, &loaded);
        free(path);
    }
    if (st) return st;
    if (json_object_set_new(im->data.answers, model, loaded))
        return arb__battles_fail(b, ARB_NOMEM, "out of memory");
    *turns = json_is_object(loaded) ? loaded : NULL;
    return ARB_OK;
}

/* Element turn-1 of an array of strings, or NULL. */
static const char *turn_text(json_t *turns, json_int_t turn)
{
    return json_string_value(json_array_get(turns, (size_t)(turn - 1)));
}

/* Loads question.jsonl of the bench folder when there is one. */
static arb_status load_bench(fastchat_import *im, arb_battles *b, const char *path)
{
    if (!(im->data.root = bench_root(path))) return ARB_OK;
    if (!(im->data.answers = json_object()))
        return arb__battles_fail(b, ARB_NOMEM, "out of memory");
    char *questions = arb__sprintf("%s/question.jsonl", im->data.root);
    if (!questions) return arb__battles_fail(b, ARB_NOMEM, "out of memory");
    arb_status st = ARB_OK;
    if (is_file(questions)) st = read_keyed(im, b, questions, 0, &im->data.questions);
    free(questions);
    return st;
}

/* ---- the judgment lines --------------------------------------------------------------------- */

/* The line's own "category" when it has one (FastChat's do not; other writers' may), else the
** question's in question.jsonl; NULL when neither says. */
static const char *category_of(json_t *obj, json_t *question)
{
    const char *own = arb__battles_name_text(json_object_get(obj, "category"));
    return own ? own : json_string_value(json_object_get(question, "category"));
}

/* The verdict in positions of a game whose s is -1 (shown first better), 0, +1 or 2 (error). */
static char position_verdict(int s)
{
    return s == -1 ? 'A' : s == 1 ? 'B' : s == 0 ? 'C' : 'E';
}

/* Adds a judgment (or a grade) built for path:line; a refusal becomes b's message. */
static arb_status added(arb_battles *b, arb_status st, char *why)
{
    if (st == ARB_NOMEM) {
        free(why);
        return arb__battles_fail(b, ARB_NOMEM, "out of memory");
    }
    if (st) st = arb__battles_fail(b, ARB_PARSE, "%s", why ? why : "import: refused");
    free(why);
    return st;
}

/* The judge of a line: its own, else the file name's; "" when neither says. */
static const char *judge_of(const fastchat_import *im, const char *own)
{
    return *own ? own : im->file_judge ? im->file_judge : "";
}

static arb_status no_judge(arb_battles *b, const char *path, size_t line)
{
    return arb__battles_fail(b, ARB_PARSE, "%s:%zu: field \"judge\": expected [judge model, "
                             "prompt name] (the file name is not <judge>_pair.jsonl or "
                             "<judge>_single.jsonl either), got missing", path, line);
}

static arb_status pair_line(fastchat_import *im, arb_battles *b, json_t *obj, const char *path,
                            size_t line)
{
    arb__fastchat_line p;
    arb_status st = arb__fastchat_pair_read(b, obj, path, line, &p);
    const char *judge = st ? "" : judge_of(im, p.judge);
    if (!st && !*judge) st = no_judge(b, path, line);
    if (!st && p.single) {
        /* graded by two single-answer calls: no shown order, so no side-by-side judgment
        ** (counted as skipped), but the one battle the battle importer gives is kept */
        arb_battles *own = arb__import_set_battles(im->set);
        st = own ? arb__fastchat_battles(own, &p, judge, path, line)
                 : arb__battles_fail(b, ARB_NOMEM, "out of memory");
        if (st && own) st = arb__battles_fail(b, st, "%s", arb_battles_errmsg(own));
        arb__import_set_skip(im->set, 1);
    }
    if (st || p.single) {
        arb__fastchat_line_free(&p);
        return st;
    }
    const char *wanted = im->params ? im->params->baseline : NULL;
    const char *baseline = wanted && !strcmp(wanted, p.model_1) ? p.model_1 : p.model_2;
    im->pairs++;
    if (wanted && (!strcmp(wanted, p.model_1) || !strcmp(wanted, p.model_2)))
        im->baseline_named++;
    const char *candidate = baseline == p.model_1 ? p.model_2 : p.model_1;
    json_t *question = json_object_get(im->data.questions, p.question_id);
    json_t *turns_1 = NULL, *turns_2 = NULL;
    if (!(st = model_turns(im, b, p.model_1, &turns_1)))
        st = model_turns(im, b, p.model_2, &turns_2);
    char *where = st ? NULL : arb__sprintf("%s:%zu", path, line);
    if (!st && !where) st = arb__battles_fail(b, ARB_NOMEM, "out of memory");
    json_t *answer_1 = json_object_get(turns_1, p.question_id);
    json_t *answer_2 = json_object_get(turns_2, p.question_id);
    const char *text_1 = turn_text(answer_1, p.turn), *text_2 = turn_text(answer_2, p.turn);
    for (int game = 0; game < 2 && !st; game++) {
        /* game 1 shows model_1 first, game 2 model_2 first */
        const char *first = game == 0 ? p.model_1 : p.model_2;
        arb__import_judgment j = {
            .judge = judge,
            .item = p.item,
            .candidate = candidate,
            .baseline = baseline,
            .template_name = p.prompt,
            .options = 3,
            .order = first == candidate ? 0 : 1,
            .position_verdict = position_verdict(game == 0 ? p.s1 : p.s2),
            .category = category_of(obj, question),
            .question = turn_text(json_object_get(question, "turns"), p.turn),
            .candidate_answer = candidate == p.model_1 ? text_1 : text_2,
            .baseline_answer = candidate == p.model_1 ? text_2 : text_1,
            .raw = game == 0 ? p.judgment_1 : p.judgment_2,
            .where = where,
        };
        char *why = NULL;
        st = arb__import_set_add(im->set, &j, &why);
        st = added(b, st, why);
    }
    free(where);
    arb__fastchat_line_free(&p);
    return st;
}

static arb_status single_line(fastchat_import *im, arb_battles *b, json_t *obj,
                              const char *path, size_t line)
{
    arb__fastchat_line p;
    memset(&p, 0, sizeof p);
    json_t *v;
    arb_status st = read_question(b, obj, path, line, &p);
    const char *model = NULL;
    if (!st && !(model = arb__battles_name_text(v = json_object_get(obj, "model"))))
        st = arb__battles_field_fail(b, path, line, "model", "a non-empty string", v);
    if (!st) st = read_judge(b, obj, path, line, &p);
    const char *judge = st ? "" : judge_of(im, p.judge);
    if (!st && !*judge) st = no_judge(b, path, line);
    v = json_object_get(obj, "score");
    if (!st && !json_is_number(v))
        st = arb__battles_field_fail(b, path, line, "score",
                                     "a number (the judge's [[rating]], -1 when it gave none)", v);
    if (st) {
        arb__fastchat_line_free(&p);
        return st;
    }
    /* FastChat reads the rating as a number ("[[7.5]]" gives 7.5) and does not check its
    ** range; grade10 holds whole grades 1..10, so anything else is kept as "no valid grade"
    ** with the reason, not rounded into one. */
    double score = json_number_value(v);
    int value = -1;
    char *reason = NULL;
    if (score == -1)
        reason = arb__strdup("FastChat found no [[rating]] in the judgment (score -1)");
    else if (score >= 1 && score <= 10 && score == (double)(int)score)
        value = (int)score;
    else
        reason = arb__sprintf("rating %g is not a whole grade from 1 to 10", score);
    json_t *question = json_object_get(im->data.questions, p.question_id);
    json_t *turns = NULL;
    st = model_turns(im, b, model, &turns);
    char *where = st ? NULL : arb__sprintf("%s:%zu", path, line);
    if (!st && (!where || (value < 0 && !reason)))
        st = arb__battles_fail(b, ARB_NOMEM, "out of memory");
    if (!st) {
        arb__import_score sc = {
            .judge = judge,
            .item = p.item,
            .model = model,
            .kind = "grade10",
            .template_name = p.prompt,
            .value = value,
            .reason = reason,
            .category = category_of(obj, question),
            .question = turn_text(json_object_get(question, "turns"), p.turn),
            .answer = turn_text(json_object_get(turns, p.question_id), p.turn),
            .raw = json_string_value(json_object_get(obj, "judgment")),
            .where = where,
        };
        char *why = NULL;
        st = arb__import_set_add_score(im->set, &sc, &why);
        st = added(b, st, why);
    }
    free(where);
    free(reason);
    arb__fastchat_line_free(&p);
    return st;
}

/* A line of either kind: pairwise lines name model_1, single-answer lines model and score. */
static arb_status judgment_line(void *ud, arb_battles *b, json_t *obj, const char *path,
                                size_t line)
{
    fastchat_import *im = ud;
    if (!json_object_get(obj, "model_1") && json_object_get(obj, "model") &&
        json_object_get(obj, "score"))
        return single_line(im, b, obj, path, line);
    return pair_line(im, b, obj, path, line);
}

/* "<judge>" of ".../<judge>_pair.jsonl" or "_single.jsonl" (caller frees), or NULL. */
static char *judge_from_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    static const char *const tails[] = {"_pair.jsonl", "_single.jsonl"};
    size_t len = strlen(name);
    for (size_t k = 0; k < 2; k++) {
        size_t tail = strlen(tails[k]);
        if (len > tail && !strcmp(name + len - tail, tails[k]))
            return arb__strndup(name, len - tail);
    }
    return NULL;
}

/* See internal.h. */
arb_status arb__import_fastchat(const char *path, const arb_import_params *params,
                                arb__import_set *set, char **errmsg)
{
    if (!set || !path) {
        arb__set_err(errmsg, "fastchat: no file given");
        return ARB_INVALID;
    }
    arb_battles *reader = arb_battles_create(); /* reads the files and carries the message */
    if (!reader) return ARB_NOMEM;
    fastchat_import im = {.set = set, .params = params, .file_judge = NULL};
    char *file_judge = judge_from_name(path);
    im.file_judge = file_judge;
    arb_status st = load_bench(&im, reader, path);
    if (!st) st = arb__battles_each_json(reader, path, 0, judgment_line, &im);
    /* a --baseline that no pair names is a typo, not a wish for the model_2 rule */
    if (!st && im.pairs && params && params->baseline && !im.baseline_named)
        st = arb__battles_fail(reader, ARB_INVALID, "%s: --baseline \"%s\" is neither model_1 "
                               "nor model_2 of any pairwise judgment in the file", path,
                               params->baseline);
    if (st) arb__set_err(errmsg, "%s", arb_battles_errmsg(reader));
    free(file_judge);
    free(im.data.root);
    json_decref(im.data.questions);
    json_decref(im.data.answers);
    arb_battles_destroy(reader);
    return st;
}
