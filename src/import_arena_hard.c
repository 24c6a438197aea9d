/*
** import_arena_hard.c -- Arena-Hard-Auto judgment files as judgments made elsewhere: a
** model_judgment/<judge>/ folder of <model>.jsonl files (or one such file), each line one
** question's two games of the model against the baseline, judged on a 5-level scale.
**
** What Arena-Hard-Auto writes (gen_judgment.py, show_result.py of lmarena/arena-hard-auto):
**   - v2.0: uid, category, judge, model, baseline, games [{score, judgment: {answer, ...},
**     prompt}, ...]; v0.1: question_id, model, judge, games [{user_prompt, judgment (text),
**     score}, ...], the baseline only in the run's configuration.
**   - Game 1 shows the baseline as Assistant A and the model as B; game 2 swaps them.
**   - score is the label the judge put in [[...]] ("A>>B", "A>B", "A=B", "B>A", "B>>A"; the
**     v2.0 reader also knows "A<<B", "A<B", "B=A", "B<<A", "B<A"), null when it found none; a
**     game is null when the judge call failed.
**
** Invariants (README "Import"):
**   - Options 3: A (first shown better), B, C (A=B, a tie); strength 2 for ">>"/"<<", 1 for ">"
**     / "<", 0 for ties and E. A null game or score is E. A label made only of the characters
**     Arena-Hard's regex captures ([AB<>=]) that is none of the ten is also E (the judge wrote
**     no valid verdict); any other score is not an Arena-Hard file and is refused.
**   - Template "arena-hard"; item = uid (v2.0) or question_id (v0.1); category when given.
**   - The baseline is the line's own "baseline"; for lines without one, params->baseline, which
**     is then required. The model is the line's "model", else the file name; the judge the
**     line's "judge", else the name of the folder holding the file.
**   - Folders are read in name order (*.jsonl files only), lines in file order.
**
** Not here: storing (store_import.c), the arena-hard style win rate (rank).
*/
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct arena_hard_import {
    arb__import_set *set;
    const arb_import_params *params;
    const char *file_model;   /* <model> of <model>.jsonl */
    const char *folder_judge; /* the name of the folder holding the file; NULL when unknown */
} arena_hard_import;

/* A 5-level label as a position verdict and strength; 0 when it is none of them. */
static char label_verdict(const char *label, int *strength)
{
    static const struct {
        const char *label;
        char verdict;
        int strength;
    } labels[] = {
        {"A>>B", 'A', 2}, {"A>B", 'A', 1}, {"A=B", 'C', 0}, {"B>A", 'B', 1}, {"B>>A", 'B', 2},
        {"A<<B", 'B', 2}, {"A<B", 'B', 1}, {"B=A", 'C', 0}, {"B<A", 'A', 1}, {"B<<A", 'A', 2},
    };
    for (size_t k = 0; k < sizeof labels / sizeof labels[0]; k++)
        if (!strcmp(label, labels[k].label)) {
            *strength = labels[k].strength;
            return labels[k].verdict;
        }
    return 0;
}

/* Reads one game: its verdict, strength and the judge's text (borrowed from game). */
static arb_status read_game(arb_battles *b, json_t *game, const char *path, size_t line,
                            int index, char *verdict, int *strength, const char **raw)
{
    char field[32];
    *verdict = 'E';
    *strength = 0;
    *raw = NULL;
    if (json_is_null(game)) return ARB_OK; /* the judge call failed */
    if (!json_is_object(game)) {
        snprintf(field, sizeof field, "games[%d]", index);
        return arb__battles_field_fail(b, path, line, field,
                                       "an object {score, judgment} or null", game);
    }
    json_t *judgment = json_object_get(game, "judgment");
    *raw = json_is_object(judgment) ? json_string_value(json_object_get(judgment, "answer"))
                                    : json_string_value(judgment);
    json_t *score = json_object_get(game, "score");
    if (!score || json_is_null(score)) return ARB_OK;
    const char *label = json_string_value(score);
    if (label && strlen(label) == json_string_length(score) && *label) {
        if ((*verdict = label_verdict(label, strength))) return ARB_OK;
        *verdict = 'E';
        if (strspn(label, "AB<>=") == strlen(label)) return ARB_OK; /* captured, but no verdict */
    }
    snprintf(field, sizeof field, "games[%d].score", index);
    return arb__battles_field_fail(b, path, line, field,
                                   "a verdict label \"A>>B\", \"A>B\", \"A=B\", \"B>A\" or "
                                   "\"B>>A\", or null", score);
}

static arb_status judgment_line(void *ud, arb_battles *b, json_t *obj, const char *path,
                                size_t line)
{
    arena_hard_import *im = ud;
    char qbuf[32];
    json_t *v = json_object_get(obj, "uid");
    const char *field = "uid";
    if (!v) {
        v = json_object_get(obj, "question_id");
        field = "question_id";
    }
    const char *item = arb__battles_question_text(v, qbuf, sizeof qbuf);
    if (!item)
        return arb__battles_field_fail(b, path, line, field, "an integer or a non-empty string "
                                       "(uid in v2.0 files, question_id in v0.1)", v);
    const char *model = im->file_model;
    if ((v = json_object_get(obj, "model")) && !json_is_null(v) &&
        !(model = arb__battles_name_text(v)))
        return arb__battles_field_fail(b, path, line, "model", "a non-empty string", v);
    const char *judge = im->folder_judge;
    if ((v = json_object_get(obj, "judge")) && !json_is_null(v) &&
        !(judge = arb__battles_name_text(v)))
        return arb__battles_field_fail(b, path, line, "judge", "a non-empty string", v);
    if (!judge || !*judge)
        return arb__battles_field_fail(b, path, line, "judge", "the judge model's name (or "
                                       "the file inside model_judgment/<judge>/)", v);
    const char *baseline = im->params ? im->params->baseline : NULL;
    if ((v = json_object_get(obj, "baseline")) && !json_is_null(v) &&
        !(baseline = arb__battles_name_text(v)))
        return arb__battles_field_fail(b, path, line, "baseline", "a non-empty string", v);
    if (!baseline)
        return arb__battles_fail(b, ARB_PARSE, "%s:%zu: field \"baseline\": missing: this file "
                                 "does not name the baseline (Arena-Hard v0.1 keeps it in the "
                                 "run's configuration); give it with --baseline MODEL", path,
                                 line);
    if (!strcmp(model, baseline)) {
        char shown[96];
        arb__excerpt(shown, sizeof shown, model, strlen(model));
        return arb__battles_fail(b, ARB_PARSE, "%s:%zu: field \"model\": expected a model other "
                                 "than the baseline, got %s for both (the model is the line's "
                                 "\"model\", else the file name)", path, line, shown);
    }
    const char *category = NULL;
    if ((v = json_object_get(obj, "category")) && !json_is_null(v) &&
        !(category = arb__battles_name_text(v)))
        return arb__battles_field_fail(b, path, line, "category", "a non-empty string", v);
    json_t *games = json_object_get(obj, "games");
    if (json_array_size(games) != 2)
        return arb__battles_field_fail(b, path, line, "games",
                                       "an array of the two games (baseline shown first, then "
                                       "the model)", games);
    char *where = arb__sprintf("%s:%zu", path, line);
    if (!where) return arb__battles_fail(b, ARB_NOMEM, "out of memory");
    arb_status st = ARB_OK;
    for (int g = 0; g < 2 && !st; g++) {
        arb__import_judgment j = {
            .judge = judge,
            .item = item,
            .candidate = model,
            .baseline = baseline,
            .template_name = "arena-hard",
            .options = 3,
            .order = g == 0 ? 1 : 0, /* game 1: the baseline is Assistant A */
            .category = category,
            .where = where,
        };
        st = read_game(b, json_array_get(games, (size_t)g), path, line, g, &j.position_verdict,
                       &j.strength, &j.raw);
        char *why = NULL;
        if (!st) st = arb__import_set_add(im->set, &j, &why);
        if (st == ARB_NOMEM) st = arb__battles_fail(b, ARB_NOMEM, "out of memory");
        else if (st && why) st = arb__battles_fail(b, ARB_PARSE, "%s", why);
        free(why);
    }
    free(where);
    return st;
}

/* The last component of path (a copy, without trailing slashes), or NULL. */
static char *last_name(const char *path)
{
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/') start--;
    return end > start ? arb__strndup(path + start, end - start) : NULL;
}

/* Reads one <model>.jsonl file; folder_judge names the folder it is in. */
static arb_status read_file(arena_hard_import *im, arb_battles *b, const char *path,
                            const char *name)
{
    size_t len = strlen(name);
    char *model = arb__strndup(name, len - 6); /* without ".jsonl" */
    if (!model) return arb__battles_fail(b, ARB_NOMEM, "out of memory");
    im->file_model = model;
    arb_status st = arb__battles_each_json(b, path, 0, judgment_line, im);
    im->file_model = NULL;
    free(model);
    return st;
}

static int jsonl_name(const char *name)
{
    size_t len = strlen(name);
    return len > 6 && !strcmp(name + len - 6, ".jsonl");
}

/* See internal.h. */
arb_status arb__import_arena_hard(const char *path, const arb_import_params *params,
                                  arb__import_set *set, char **errmsg)
{
    if (!set || !path) {
        arb__set_err(errmsg, "arena-hard: no folder or file given");
        return ARB_INVALID;
    }
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        arb__set_err(errmsg, "%s: cannot open: %s", path, strerror(e));
        return e == ENOENT || e == ENOTDIR ? ARB_NOTFOUND : ARB_IO;
    }
    arb_battles *reader = arb_battles_create(); /* reads the files and carries the message */
    char resolved[PATH_MAX];
    char *judge = NULL, *file = S_ISDIR(sb.st_mode) ? NULL : last_name(path);
    if (reader && realpath(path, resolved)) {
        if (S_ISDIR(sb.st_mode)) {
            judge = last_name(resolved);
        } else {
            char *slash = strrchr(resolved, '/');
            if (slash && slash != resolved) {
                *slash = '\0';
                judge = last_name(resolved);
            }
        }
    }
    arena_hard_import im = {.set = set, .params = params, .folder_judge = judge};
    arb_status st = reader ? ARB_OK : ARB_NOMEM;
    char **names = NULL;
    size_t n = 0, files = 0;
    if (!st && S_ISDIR(sb.st_mode)) {
        st = arb__import_list_folder(reader, path, &names, &n);
        for (size_t k = 0; k < n && !st; k++) {
            if (!jsonl_name(names[k])) continue;
            char *child = arb__sprintf("%s/%s", path, names[k]);
            struct stat cb;
            if (!child) st = arb__battles_fail(reader, ARB_NOMEM, "out of memory");
            else if (stat(child, &cb) == 0 && S_ISREG(cb.st_mode)) {
                files++;
                st = read_file(&im, reader, child, names[k]);
            }
            free(child);
        }
        if (!st && !files)
            st = arb__battles_fail(reader, ARB_NOTFOUND, "%s: no <model>.jsonl files: expected "
                                   "an Arena-Hard-Auto model_judgment/<judge>/ folder", path);
    } else if (!st) {
        const char *name = file ? file : path;
        if (!jsonl_name(name))
            st = arb__battles_fail(reader, ARB_INVALID, "%s: expected a <model>.jsonl file or "
                                   "a model_judgment/<judge>/ folder", path);
        else
            st = read_file(&im, reader, path, name);
    }
    if (st) arb__set_err(errmsg, "%s", reader ? arb_battles_errmsg(reader) : "out of memory");
    arb__import_free_names(names, n);
    free(judge);
    free(file);
    arb_battles_destroy(reader);
    return st;
}
